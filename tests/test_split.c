/* The split of a grid over ranks and a rank's part, as plain arithmetic:
 * which split is chosen and what fits (input/heat_split), the boxes and
 * neighbours, the geometry of a part with its ghost layers (kernels/
 * halo_plan: regions, views, messages), and the initial field of a box.
 * The runs themselves are tested under MPI by tests/mpi_check.py. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck.h"
#include "halo_plan.h"
#include "heat_case.h"
#include "heat_split.h"
#include "initial.h"
#include "test_util.h"

static const char deck[] =
    "grid = { points = [23, 17, 13]; length = [1.0, 0.8, 0.5]; };\n"
    "material = { diffusivity = 1.0; };\n"
    "time = { max_steps = 10; };\n"
    "initial = { type = \"gaussian\"; center = [0.4, 0.5, 0.2]; width = 0.15;\n"
    "            amplitude = 3.0; base = 0.5; };\n"
    "boundary = {\n"
    "  x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
    "  x_hi = { type = \"neumann\"; gradient = 0.5; };\n"
    "  y_lo = { type = \"periodic\"; };\n"
    "  y_hi = { type = \"periodic\"; };\n"
    "  z_lo = { type = \"dirichlet\"; value = 2.0; };\n"
    "  z_hi = { type = \"dirichlet\"; value = 0.0; };\n"
    "};\n";

static void load(heat_case *c, const char *points, int depth)
{
    test_sets s = {0};
    if (points) test_sets_add(&s, "grid.points=%s", points);
    test_sets_add(&s, "solver.temporal_block=%d", depth);
    test_load_case(deck, "split", &s, c);
}

static void test_choose(void **state)
{
    (void)state;
    heat_case c;
    int r[3];
    load(&c, "[64, 64, 64]", 1);
    /* y is periodic: its cuts cost a wrap as well. [2, 2, 2] and [2, 1, 4]
     * exchange as many points; the tie goes to fewer cuts of x, then y. */
    assert_int_equal(heat_split_choose(&c, 8, 1, r), 0);
    assert_int_equal(r[0], 2), assert_int_equal(r[1], 1), assert_int_equal(r[2], 4);
    /* 2 ranks: x and z tie; z (fewer x cuts). */
    assert_int_equal(heat_split_choose(&c, 2, 1, r), 0);
    assert_int_equal(r[0], 1), assert_int_equal(r[1], 1), assert_int_equal(r[2], 2);
    /* The smallest face: 23 x 17 x 13 cuts x (17 * 13 points per face). */
    load(&c, NULL, 1);
    assert_int_equal(heat_split_choose(&c, 2, 1, r), 0);
    assert_int_equal(r[0], 2), assert_int_equal(r[1], 1), assert_int_equal(r[2], 1);
    /* 2D: never z. */
    load(&c, "[40, 30, 1]", 1);
    assert_int_equal(heat_split_choose(&c, 6, 1, r), 0);
    assert_int_equal(r[2], 1);
    assert_int_equal(r[0] * r[1], 6);
    /* Nothing fits: 7 ranks on 3 x 3 x 3 points with 3-deep halos. */
    load(&c, "[3, 3, 3]", 3);
    assert_int_equal(heat_split_choose(&c, 7, 3, r), -1);
}

static void test_fits(void **state)
{
    (void)state;
    heat_case c;
    char why[256];
    load(&c, NULL, 1);
    const int ok[3] = {3, 2, 1}, many[3] = {1, 1, 20}, thin[3] = {6, 1, 1}, bad[3] = {0, 1, 1};
    assert_true(heat_split_fits(&c, ok, 1, why, sizeof why));
    assert_false(heat_split_fits(&c, many, 1, why, sizeof why));
    assert_non_null(strstr(why, "20 ranks along z, which has only 13 points"));
    assert_true(heat_split_fits(&c, thin, 3, why, sizeof why)); /* 23 / 6 = 3 */
    assert_false(heat_split_fits(&c, thin, 4, why, sizeof why));
    assert_non_null(strstr(why, "fewer than the 4 halo layers"));
    assert_false(heat_split_fits(&c, bad, 1, why, sizeof why));
    load(&c, "[40, 30, 1]", 1);
    const int z2[3] = {1, 1, 2};
    assert_false(heat_split_fits(&c, z2, 1, why, sizeof why));
    assert_non_null(strstr(why, "pz must be 1"));
}

/* The boxes of every split of up to 12 ranks cover the grid once, each
 * rank's neighbours are the ranks whose boxes touch its faces (across the
 * periodic wrap of y too), and an uncut axis has none. */
static void test_boxes(void **state)
{
    (void)state;
    heat_case c;
    load(&c, NULL, 1);
    for (int n = 1; n <= 12; n++)
        for (int px = 1; px <= n; px++)
            for (int py = 1; py <= n / px; py++) {
                if (n % (px * py)) continue;
                const int r[3] = {px, py, n / px / py};
                char *seen = calloc((size_t)c.d.points, 1);
                for (int rank = 0; rank < n; rank++) {
                    heat_part p;
                    heat_split_part(&c, r, rank, 1, &p);
                    assert_int_equal(p.size, n);
                    for (int64_t k = p.lo[2]; k < p.lo[2] + p.n[2]; k++)
                        for (int64_t j = p.lo[1]; j < p.lo[1] + p.n[1]; j++)
                            for (int64_t i = p.lo[0]; i < p.lo[0] + p.n[0]; i++)
                                seen[(k * c.grid.n[1] + j) * c.grid.n[0] + i]++;
                    for (int a = 0; a < 3; a++) {
                        /* Uneven: sizes differ by at most one. */
                        assert_true(p.n[a] == c.grid.n[a] / r[a] ||
                                    p.n[a] == c.grid.n[a] / r[a] + 1);
                        for (int side = 0; side < 2; side++) {
                            const int peer = p.peer[2 * a + side];
                            if (r[a] == 1) {
                                assert_int_equal(peer, -1);
                                continue;
                            }
                            const int edge = side ? p.coord[a] == r[a] - 1 : p.coord[a] == 0;
                            if (edge && a != 1) {
                                assert_int_equal(peer, -1); /* x and z are not periodic */
                                continue;
                            }
                            assert_true(peer >= 0 && peer < n);
                            heat_part q;
                            heat_split_part(&c, r, peer, 1, &q);
                            const int64_t N = c.grid.n[a];
                            if (side)
                                assert_int_equal(q.lo[a], (p.lo[a] + p.n[a]) % N);
                            else
                                assert_int_equal((q.lo[a] + q.n[a]) % N, p.lo[a]);
                            for (int b = 0; b < 3; b++)
                                if (b != a) assert_int_equal(q.coord[b], p.coord[b]);
                        }
                    }
                }
                for (int64_t i = 0; i < c.d.points; i++) assert_int_equal(seen[i], 1);
                free(seen);
            }
}

/* The part's geometry: the shell and the interior cover the owned box once;
 * every message's boxes lie where they should; the values the plan sends
 * are those heat_split_halo_values counts; views update exactly their
 * region. */
static void check_plan(const heat_case *c, const int r[3], int rank, int depth, int xalign)
{
    heat_part part;
    heat_split_part(c, r, rank, depth, &part);
    heat_halo_plan p;
    heat_halo_plan_init(&p, c, &part, xalign);
    assert_int_equal(p.sy, p.ext[0]);
    /* Rows padded to the alignment; the owned box starting on it where x
     * has ghost layers. */
    assert_int_equal(p.ext[0] % xalign, 0);
    if (part.peer[0] >= 0 || part.peer[1] >= 0) assert_int_equal(p.owned.lo[0] % xalign, 0);
    int64_t cover = heat_halo_box_count(&p.interior);
    for (int i = 0; i < p.nshell; i++) cover += heat_halo_box_count(&p.shell[i]);
    assert_int_equal(cover, heat_halo_box_count(&p.owned));
    size_t total = 0;
    for (int ph = 0; ph < p.nphase; ph++)
        for (int i = 0; i < p.nmsg[ph]; i++) {
            const hmsg *m = &p.msg[ph][i];
            total += m->count;
            assert_int_equal((int64_t)m->count, heat_halo_box_count(&m->recv));
            const int a = m->face / 2;
            for (int b = 0; b < 3; b++) {
                /* Sent: owned layers; received: ghost layers, inside the array. */
                assert_true(m->send.lo[b] >= 0 && m->send.hi[b] <= p.ext[b]);
                assert_true(m->recv.lo[b] >= 0 && m->recv.hi[b] <= p.ext[b]);
                if (b == a) {
                    assert_true(m->send.lo[b] >= p.owned.lo[b] && m->send.hi[b] <= p.owned.hi[b]);
                    assert_true(m->recv.hi[b] <= p.owned.lo[b] || m->recv.lo[b] >= p.owned.hi[b]);
                }
            }
            assert_int_equal(m->peer, part.peer[m->face]);
            /* A message lands in the neighbour's opposite face. */
            assert_int_equal(m->send_tag % 8, m->face ^ 1);
            assert_int_equal(m->recv_tag % 8, m->face);
        }
    assert_int_equal((int64_t)total, heat_split_halo_values(&part));
    /* A view of the owned box: read-only faces where there are neighbours,
     * the deck's condition elsewhere. */
    const hview v = heat_halo_view(&p, &p.owned);
    for (int f = 0; f < 2 * c->grid.dims; f++) {
        if (part.peer[f] >= 0)
            assert_int_equal(v.face[f], HEAT_BC_DIRICHLET);
        else
            assert_int_equal(v.face[f], (int)c->bc[f].type);
    }
    /* Interior pieces tile the interior. */
    hbox piece[HEAT_HALO_MAX_PIECES];
    const int np = heat_halo_pieces(&p, &p.interior, 4, piece);
    int64_t sum = 0;
    for (int i = 0; i < np; i++) sum += heat_halo_box_count(&piece[i]);
    assert_int_equal(sum, heat_halo_box_count(&p.interior));
}

static void test_plan(void **state)
{
    (void)state;
    heat_case c;
    for (int depth = 1; depth <= 3; depth++) {
        load(&c, NULL, depth);
        const int splits[][3] = {{2, 1, 1}, {1, 3, 1}, {1, 1, 2}, {2, 2, 1}, {2, 2, 2}, {3, 2, 2}};
        for (size_t s = 0; s < sizeof splits / sizeof splits[0]; s++) {
            const int n = splits[s][0] * splits[s][1] * splits[s][2];
            for (int rank = 0; rank < n; rank++) {
                check_plan(&c, splits[s], rank, depth, 1);
                check_plan(&c, splits[s], rank, depth, 4);
            }
        }
    }
}

/* Each box of the initial field holds the whole field's values, Dirichlet
 * faces included. */
static void test_initial_box(void **state)
{
    (void)state;
    heat_case c;
    load(&c, NULL, 1);
    double *whole = malloc(sizeof *whole * (size_t)c.d.points);
    heat_error err;
    assert_int_equal(heat_initial_fill(&c, whole, &err), HEAT_OK);
    const int r[3] = {3, 2, 2};
    for (int rank = 0; rank < 12; rank++) {
        heat_part p;
        heat_split_part(&c, r, rank, 1, &p);
        double *box = malloc(sizeof *box * (size_t)(p.n[0] * p.n[1] * p.n[2]));
        assert_int_equal(heat_initial_fill_box(&c, p.lo, p.n, box, NULL, &err), HEAT_OK);
        for (int64_t k = 0; k < p.n[2]; k++)
            for (int64_t j = 0; j < p.n[1]; j++)
                for (int64_t i = 0; i < p.n[0]; i++) {
                    const double a = box[(k * p.n[1] + j) * p.n[0] + i];
                    const double b =
                        whole[((p.lo[2] + k) * c.grid.n[1] + p.lo[1] + j) * c.grid.n[0] + p.lo[0] +
                              i];
                    assert_memory_equal(&a, &b, sizeof a);
                }
        free(box);
    }
    free(whole);
}

/* The deck's parallel group: loads it with `set` and returns the status;
 * a message, if any, in err. */
static int load_parallel(const char *set, heat_case *c, heat_error *err)
{
    const char *sets[1] = {set};
    return heat_deck_load_string(deck, "split.cfg", sets, set ? 1 : 0, c, NULL, NULL, err);
}

static void expect_refused(const char *set, const char *text)
{
    heat_case c;
    heat_error err;
    assert_int_equal(load_parallel(set, &c, &err), HEAT_EINPUT);
    if (!strstr(err.msg, text)) fail_msg("%s: expected '%s' in: %s", set, text, err.msg);
}

static void test_deck_parallel(void **state)
{
    (void)state;
    heat_case c;
    heat_error err;
    /* Absent: the run chooses; auto transport and files. */
    assert_int_equal(load_parallel(NULL, &c, &err), HEAT_OK);
    assert_int_equal(c.parallel.ranks[0], 0);
    assert_int_equal(c.parallel.transport, HEAT_TRANSPORT_AUTO);
    assert_int_equal(c.parallel.io, HEAT_PIO_AUTO);
    assert_int_equal(
        load_parallel("parallel={ranks=[2,3,1]; transport=\"nccl\"; io=\"aggregated\";}", &c, &err),
        HEAT_OK);
    assert_int_equal(c.parallel.ranks[0], 2);
    assert_int_equal(c.parallel.ranks[1], 3);
    assert_int_equal(c.parallel.ranks[2], 1);
    assert_int_equal(c.parallel.transport, HEAT_TRANSPORT_NCCL);
    assert_int_equal(c.parallel.io, HEAT_PIO_AGGREGATED);
    /* Each key and value checked, with what is allowed. */
    expect_refused("parallel.rank=[1,1,1]", "unknown key parallel.rank");
    expect_refused("parallel.ranks=[2,2]", "parallel.ranks = [2, 2]: expected [px, py, pz]");
    expect_refused("parallel.ranks=[2,0,1]", "parallel.ranks[1] = 0: expected an integer from 1");
    expect_refused("parallel.ranks=[1,1,20]", "20 ranks along z, which has only 13 points");
    expect_refused("parallel.transport=\"infiniband\"",
                   "expected one of \"auto\", \"mpi\", \"nccl\"");
    expect_refused("parallel.io=\"fast\"",
                   "expected one of \"auto\", \"collective\", \"aggregated\"");
    {
        const char *sets[2] = {"parallel.ranks=[6,1,1]", "solver.temporal_block=4"};
        assert_int_equal(heat_deck_load_string(deck, "split.cfg", sets, 2, &c, NULL, NULL, &err),
                         HEAT_EINPUT);
        assert_non_null(strstr(err.msg, "fewer than the 4 halo layers"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_choose),      cmocka_unit_test(test_fits),
        cmocka_unit_test(test_boxes),       cmocka_unit_test(test_plan),
        cmocka_unit_test(test_initial_box), cmocka_unit_test(test_deck_parallel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
