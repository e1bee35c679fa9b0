/* What the deck's materials come to: the stability limit of the
 * variable-coefficient update and the refusal of a larger dt, the probes'
 * nearest nodes, the painting of regions and the power of the sources
 * (in-process); and the program itself: heat check's report (each
 * material's nodes, the sources' power in W, the limit and the material that
 * sets it, each probe's node, the regions that paint nothing), bad decks
 * refused with exit status 2 and nothing written, material files that
 * cannot be used (named with their region), probes.csv and history.csv of a
 * run. The deck's rules themselves: test_materials_deck.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_helpers.h"
#undef EXPECT_ERR /* deck_helpers.h's, for deck text, replaces the program's */
#include "heat_case.h"
#include "materials.h"
#include "materials_helpers.h"

#define STDERR_HAS(r, s) test_expect_in("stderr", (r)->err, (s))

/* ---- derived: the stability limit, probe nodes ------------------------- */

/* The limit of the variable-coefficient update from its weights: a node of
 * material a with conductivity k_a, rho c_a, next to faces of conductivity
 * at most K_a (the harmonic mean with any listed material), gets weight
 * dt K_a / (rho c_a h^2) per face, and a convective face's ghost adds beta
 * = 2 h h_c / k_a on that axis; monotone while dt S_a <= 1. */
static double limit_of(double rca, double kmax, const double beta[3], double h)
{
    double sum = 0;
    for (int d = 0; d < 3; d++) sum += (2.0 + beta[d]) / (h * h);
    return rca / (kmax * sum);
}

static void test_dt_limit(void **state)
{
    (void)state;
    heat_case c;
    /* a: k 1, b: k 4; their face 2 * 1 * 4 / 5 = 1.6. Insulated: b's nodes. */
    load_line(&c, M_REGIONS,
              "regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; max = [0.5, 1.0, "
              "1.0]; }; } );");
    const double none[3] = {0, 0, 0};
    assert_true(c.d.general);
    assert_int_equal(c.d.dt_material, 1);
    assert_close(c.d.dt_max, limit_of(1.0, 4.0, none, 0.1), 1e-12 * c.d.dt_max);
    assert_close(c.d.dt_max, 1.0 / 2400.0, 1e-12 * c.d.dt_max);
    assert_true(c.d.dt <= c.d.dt_max && c.d.dt == 0.9 * c.d.dt_max);

    /* A convective face on x (h_c = 10): beta = 2, 0.5 for a, b; b still. */
    load_ok(mdeck(M_X_LO, "  x_lo = { type = \"convective\"; h = 10.0; ambient = 0.0; };", 0), NULL,
            0, &c, NULL, NULL);
    derive_ok(&c);
    const double ba[3] = {2.0, 0, 0}, bb[3] = {0.5, 0, 0};
    const double la = limit_of(1.0, 1.6, ba, 0.1), lb = limit_of(1.0, 4.0, bb, 0.1);
    assert_true(lb < la);
    assert_int_equal(c.d.dt_material, 1);
    assert_close(c.d.dt_max, lb, 1e-12 * lb);

    /* A heavier b (rho c 10) leaves a the most restrictive. Listed, even
     * with no node painted (no region here): every material counts. */
    load_ok(mdeck(M_MATERIALS,
                  "materials = ( { name = \"a\"; conductivity = 1.0; density = 1.0; specific_heat "
                  "= 1.0; }, { name = \"b\"; conductivity = 4.0; density = 10.0; specific_heat = "
                  "1.0; } );",
                  M_X_LO, "  x_lo = { type = \"convective\"; h = 10.0; ambient = 0.0; };", 0),
            NULL, 0, &c, NULL, NULL);
    derive_ok(&c);
    const double lb10 = limit_of(10.0, 4.0, bb, 0.1);
    assert_true(la < lb10);
    assert_int_equal(c.d.dt_material, 0);
    assert_close(c.d.dt_max, la, 1e-12 * la);
}

static void test_dt_above_limit_refused(void **state)
{
    (void)state;
    heat_case c;
    heat_error err;
    const char *regions = "regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; max = "
                          "[0.5, 1.0, 1.0]; }; } );";
    load_ok(mdeck(M_REGIONS, regions, M_TIME, "time = { max_steps = 10; dt = 5e-4; };", 0), NULL, 0,
            &c, NULL, NULL);
    assert_int_equal(heat_case_derive(&c, &err), HEAT_EINPUT);
    char limit[64];
    /* dt_max in full, as derived (1/2400 up to rounding) */
    snprintf(limit, sizeof limit, "dt_max = %.17g", c.d.dt_max);
    assert_true(fabs(c.d.dt_max - 1.0 / 2400.0) <= 1e-14 / 2400.0);
    assert_has(err.msg, ORIGIN ":6: time.dt = 0.0005 is above the stability limit");
    assert_has(err.msg, limit);
    assert_has(err.msg, "material \"b\", the most restrictive");
    assert_has(err.msg, "would sum to 1.2");
    /* At the limit itself it runs with that dt. */
    char at[128];
    snprintf(at, sizeof at, "time = { max_steps = 10; dt = %.17g; };", c.d.dt_max);
    const double dt_max = c.d.dt_max;
    load_ok(mdeck(M_REGIONS, regions, M_TIME, at, 0), NULL, 0, &c, NULL, NULL);
    derive_ok(&c);
    assert_true(c.d.dt == dt_max);
}

static void test_probe_nodes(void **state)
{
    (void)state;
    heat_case c;
    /* The nearest node: round((x - origin) / h) per axis, h = 0.1 here. */
    load_line(&c, M_PROBES,
              "probes = ( { name = \"c\"; at = [0.5, 0.5, 0.5]; }, { name = \"e\"; at = [0.04, "
              "0.96, 0.051]; }, { name = \"f\"; at = [0.149, 0.151, 1.0]; }, { name = \"g\"; at "
              "= [1.0000000000001, 0.0, -0.0000000000001]; } );");
    const int64_t want[4][3] = {{5, 5, 5}, {0, 10, 1}, {1, 2, 10}, {10, 0, 0}};
    for (int i = 0; i < 4; i++)
        for (int a = 0; a < 3; a++)
            if (c.probes.p[i].node[a] != want[i][a])
                fail_msg("probe %s: node[%d] = %lld, expected %lld", c.probes.p[i].name, a,
                         (long long)c.probes.p[i].node[a], (long long)want[i][a]);
    /* With an origin the coordinates shift with it. */
    load_ok(mdeck(M_GRID,
                  "grid = { points = [11, 11, 11]; length = [1.0, 1.0, 1.0]; origin = [-1.0, 2.0, "
                  "0.0]; };",
                  M_PROBES, "probes = ( { name = \"o\"; at = [-0.72, 2.33, 0.0]; } );", 0),
            NULL, 0, &c, NULL, NULL);
    derive_ok(&c);
    assert_true(c.probes.p[0].node[0] == 3 && c.probes.p[0].node[1] == 3);
    /* A periodic axis has n distinct nodes, h = L / n; x = origin + L is node 0 again. */
    load_ok(mdeck(M_Y_LO, "  y_lo = { type = \"periodic\"; };", M_Y_HI,
                  "  y_hi = { type = \"periodic\"; };", M_PROBES,
                  "probes = ( { name = \"w\"; at = [0.5, 1.0, 0.5]; }, { name = \"v\"; at = [0.5, "
                  "0.95, 0.5]; } );",
                  0),
            NULL, 0, &c, NULL, NULL);
    derive_ok(&c);
    assert_int_equal(c.probes.p[0].node[1], 0);  /* 1.0 * 11 = 11: wraps to 0 */
    assert_int_equal(c.probes.p[1].node[1], 10); /* 0.95 * 11 = 10.45 */
}

/* ---- painting (solver/materials.c) ------------------------------------- */

/* Nodes (i, j, k) with i^2 + j^2 + k^2 <= r2 and every |offset| <= 10 and
 * i <= imax: the lattice points of a ball, counted directly. */
static int64_t lattice_ball(int r2, int imax)
{
    int64_t n = 0;
    for (int i = -10; i <= imax; i++)
        for (int j = -10; j <= 10; j++)
            for (int k = -10; k <= 10; k++) n += i * i + j * j + k * k <= r2;
    return n;
}

static void survey(const char *regions, heat_materials_survey *s)
{
    heat_case c;
    heat_error err;
    load_line(&c, M_REGIONS, regions);
    if (heat_materials_survey_grid(&c, s, &err)) fail_msg("survey: %s", err.msg);
    assert_int_equal(s->nodes[0] + s->nodes[1], 11 * 11 * 11);
}

static void test_painting(void **state)
{
    (void)state;
    heat_materials_survey s;
    /* A box takes the nodes on its faces: x = 0 to 0.5 is 6 planes of 121. */
    survey("regions = ( { material = \"b\"; box = { min = [-1.0, -1.0, -1.0]; max = [0.5, 2.0, "
           "2.0]; }; } );",
           &s);
    assert_int_equal(s.nodes[1], 6 * 121);
    assert_true(s.contained[0]);
    /* A sphere of radius 0.2 about a node: the lattice points within 2 steps,
     * those on its surface included. */
    survey("regions = ( { material = \"b\"; sphere = { center = [0.5, 0.5, 0.5]; radius = 0.2; "
           "}; } );",
           &s);
    assert_int_equal(s.nodes[1], lattice_ball(4, 10));
    assert_int_equal(s.nodes[1], 33);
    /* Later regions win: the sphere of a inside b's half takes its nodes
     * with x <= 0.5 back. */
    survey("regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; max = [0.5, 1.0, 1.0]; "
           "}; }, { material = \"a\"; sphere = { center = [0.5, 0.5, 0.5]; radius = 0.2; }; } );",
           &s);
    assert_int_equal(s.nodes[1], 6 * 121 - lattice_ball(4, 0));
    /* The other order: the box paints over the sphere; its other half stays. */
    survey("regions = ( { material = \"a\"; sphere = { center = [0.5, 0.5, 0.5]; radius = 0.2; }; "
           "}, { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; max = [0.5, 1.0, 1.0]; }; } );",
           &s);
    assert_int_equal(s.nodes[1], 6 * 121);
    /* A cylinder along z of radius 0.2: 13 nodes per plane, 11 planes from
     * min 0 to max 1; along x from 0.25 to 0.75 it has 5 planes. */
    survey("regions = ( { material = \"b\"; cylinder = { axis = \"z\"; center = [0.5, 0.5]; "
           "radius = 0.2; min = 0.0; max = 1.0; }; } );",
           &s);
    assert_int_equal(s.nodes[1], 13 * 11);
    survey("regions = ( { material = \"b\"; cylinder = { axis = \"x\"; center = [0.5, 0.5]; "
           "radius = 0.2; min = 0.25; max = 0.75; }; } );",
           &s);
    assert_int_equal(s.nodes[1], 13 * 5);
    /* A box between two planes of nodes contains none: no error, a notice. */
    survey("regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; max = [1.0, 1.0, 1.0]; "
           "}; }, { material = \"a\"; box = { min = [0.42, 0.0, 0.0]; max = [0.48, 1.0, 1.0]; }; } "
           ");",
           &s);
    assert_int_equal(s.nodes[1], 1331);
    assert_true(s.contained[0] && !s.contained[1]);
    char *notes = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&notes, &len);
    heat_case c;
    memset(&c, 0, sizeof c);
    c.regions.count = 2;
    heat_materials_notice_empty(&c, s.contained, f);
    fclose(f);
    assert_has(notes, "notice: regions[1] contains no node of the grid");
    assert_lacks(notes, "regions[0]");
    free(notes);
}

/* The power in W: power density times each painted node's control volume,
 * h per axis, h / 2 on a face that is not periodic (trapezoid weights). */
static void test_source_power(void **state)
{
    (void)state;
    heat_case c;
    heat_error err;
    heat_materials_survey s;
    /* x 0.2..0.6: 5 interior planes (0.5); all of y (1.0); z 0..0.25: nodes
     * 0, 1, 2 (0.05 + 0.1 + 0.1); and a ball of 33 interior nodes. */
    load_line(&c, M_SOURCES,
              "sources = ( { power_density = 1000.0; box = { min = [0.2, -1.0, 0.0]; max = [0.6, "
              "2.0, 0.25]; }; }, { power_density = -40.0; sphere = { center = [0.5, 0.5, 0.5]; "
              "radius = 0.2; }; } );");
    if (heat_materials_survey_grid(&c, &s, &err)) fail_msg("%s", err.msg);
    const double want = 1000.0 * 0.5 * 1.0 * 0.25 - 40.0 * 33 * 1e-3;
    assert_close(s.power, want, 1e-12 * fabs(want));
    /* On a periodic axis every node weighs h = L / n. */
    load_ok(mdeck(M_Y_LO, "  y_lo = { type = \"periodic\"; };", M_Y_HI,
                  "  y_hi = { type = \"periodic\"; };", M_SOURCES,
                  "sources = ( { power_density = 2.0; box = { min = [-1.0, -1.0, -1.0]; max = "
                  "[2.0, 2.0, 2.0]; }; } );",
                  0),
            NULL, 0, &c, NULL, NULL);
    derive_ok(&c);
    if (heat_materials_survey_grid(&c, &s, &err)) fail_msg("%s", err.msg);
    assert_close(s.power, 2.0 * 1.0 * (11 * (1.0 / 11)) * 1.0, 1e-12);
}

/* ---- the program ---------------------------------------------------------- */

/* Writes dir/name with `text`. */
static void write_in(const char *dir, const char *name, const char *text)
{
    char p[4200];
    path_in(p, sizeof p, dir, name);
    test_write_file(p, text);
}

/* Writes `data` (native `type`, `rank` dims) as dataset `name` of the HDF5
 * file `path`, creating the file when it is not there. */
static void put_dataset(const char *path, const char *name, hid_t type, int rank,
                        const hsize_t *dims, const void *data)
{
    hid_t f = H5I_INVALID_HID, sp = H5I_INVALID_HID, ds = H5I_INVALID_HID;
    int ok = 0;
    f = test_exists(path) ? H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT)
                          : H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) goto done;
    if ((sp = H5Screate_simple(rank, dims, NULL)) < 0) goto done;
    if ((ds = H5Dcreate2(f, name, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
    ok = H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0;
done:
    if (ds >= 0) ok &= H5Dclose(ds) >= 0;
    if (sp >= 0) ok &= H5Sclose(sp) >= 0;
    if (f >= 0) ok &= H5Fclose(f) >= 0;
    if (!ok) fail_msg("cannot write %s:%s", path, name);
}

/* The number after `key` on the line of `out` that starts with `line_start`;
 * fails the test when there is none. */
static double number_after(const char *out, const char *line_start, const char *key)
{
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, line_start, strlen(line_start)) != 0) continue;
        const char *eol = strchr(p, '\n'), *k = strstr(p, key);
        if (!k || (eol && k > eol)) break;
        char *end;
        double x = strtod(k + strlen(key), &end);
        if (end != k + strlen(key)) return x;
    }
    fail_msg("no line \"%s...%s<number>\" in:\n%s", line_start, key, out);
    return NAN;
}

/* The nodes heat check gives material `name` (index i). */
static long long material_nodes(const char *out, const char *name, int i)
{
    char start[96];
    snprintf(start, sizeof start, "material        %s (%d): ", name, i);
    return (long long)number_after(out, start, "; ");
}

/* A deck with regions (one of them empty), two sources, two probes and a
 * convective face, as heat check reports it. */
static void test_check_report(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "mat_report");
    write_in(dir, "m.cfg",
             mdeck(M_REGIONS,
                   "regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; max = [0.5, "
                   "1.0, 1.0]; }; }, { material = \"a\"; sphere = { center = [0.5, 0.5, 0.5]; "
                   "radius = 0.2; }; }, { material = \"b\"; box = { min = [0.42, 0.0, 0.0]; max = "
                   "[0.48, 1.0, 1.0]; }; } );",
                   M_SOURCES,
                   "sources = ( { power_density = 1000.0; box = { min = [0.2, -1.0, 0.0]; max = "
                   "[0.6, 2.0, 0.25]; }; }, { power_density = -40.0; sphere = { center = [0.5, "
                   "0.5, 0.5]; radius = 0.2; }; } );",
                   M_PROBES,
                   "probes = ( { name = \"centre\"; at = [0.5, 0.5, 0.5]; }, { name = \"edge\"; "
                   "at = [0.04, 0.96, 0.051]; } );",
                   M_X_LO, "  x_lo = { type = \"convective\"; h = 10.0; ambient = 0.0; };", 0));
    result r;
    heat(&r, dir, "check", "m.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "deck m.cfg: valid");
    /* b: the 6 planes x <= 0.5 less the ball's 23 nodes there (a paints
     * them later); the third region lies between planes of nodes. */
    const long long b = 6 * 121 - 23;
    assert_int_equal(material_nodes(r.out, "b", 1), b);
    assert_int_equal(material_nodes(r.out, "a", 0), 1331 - b);
    EXPECT_OUT(&r, "notice: regions[2] contains no node of the grid");
    EXPECT_NOT_OUT(&r, "regions[0] contains");
    EXPECT_NOT_OUT(&r, "regions[1] contains");
    /* Power density times the control volumes: 1000 W/m^3 on 0.5 x 1 x 0.25
     * (trapezoid weights), -40 W/m^3 on 33 interior nodes of 1e-3 m^3. */
    const double power = 1000.0 * 0.5 * 1.0 * 0.25 - 40.0 * 33 * 1e-3;
    assert_close(number_after(r.out, "sources         2", "injecting "), power, 1e-5 * power);
    /* b sets the limit: k 4 on every face, a convective x face (beta = 2 h
     * h_c / k = 0.5): 1 / (4 (2.5 + 2 + 2) / 0.01). */
    assert_close(number_after(r.out, "dt_max", "dt_max "), 1.0 / 2600.0, 1e-8 / 2600.0);
    EXPECT_OUT(&r, "set by the nodes of material \"b\"");
    EXPECT_OUT(&r, "probe           centre at node (5, 5, 5)\n");
    EXPECT_OUT(&r, "probe           edge at node (0, 10, 1)\n");
    EXPECT_OUT(&r, "boundary x_lo    convective, h 10, ambient 0");
    result_free(&r);
    assert_false(exists_in(dir, "out"));
}

/* 2D: power per metre of depth; probes listed without materials too. */
static void test_check_2d_and_probes(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "mat_2d");
    const char *grid2d = "grid = { points = [11, 11, 1]; length = [1.0, 1.0, 1.0]; };";
    write_in(dir, "p.cfg",
             mdeck(M_GRID, grid2d, M_SOURCES,
                   "sources = ( { power_density = 3.0; box = { min = [0.0, 0.0, 0.0]; max = [1.0, "
                   "0.5, 0.0]; }; } );",
                   0));
    result r;
    heat(&r, dir, "check", "p.cfg", NULL);
    expect_rc(&r, 0);
    /* 3 W/m^3 on the control volumes of nodes y = 0 to 0.5: 1.0 along x
     * (0.05 + 9 x 0.1 + 0.05), 0.55 along y (0.05 + 5 x 0.1: node 5 is
     * inside, a full spacing), depth 1 m. */
    assert_close(number_after(r.out, "sources         1", "injecting "), 3.0 * 0.55, 1e-6);
    EXPECT_OUT(&r, " W per metre of depth");
    result_free(&r);
    write_in(dir, "d.cfg",
             mdeck(M_GRID, grid2d, M_MATERIALS, "material = { diffusivity = 1.0; };", M_PROBES,
                   "probes = ( { name = \"p\"; at = [0.26, 0.74, 9.0]; } );", 0));
    heat(&r, dir, "check", "d.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "probe           p at node (3, 7, 0)\n");
    EXPECT_OUT(&r, "diffusivity     1\n");
    EXPECT_NOT_OUT(&r, "material        ");
    result_free(&r);
}

/* Bad values of several keys: every one reported with its line, exit 2,
 * by check and by run, and nothing written. */
static void test_bad_deck_exit_2(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "mat_bad");
    write_in(dir, "bad.cfg",
             mdeck(M_MATERIALS,
                   "materials = ( { name = \"a\"; conductivity = 1.0; density = 1.0; "
                   "specific_heat = 1.0; }, { name = \"b\"; conductivity = -4.0; density = 1.0; "
                   "specific_heat = 1.0; } );",
                   M_REGIONS,
                   "regions = ( { material = \"c\"; sphere = { center = [0.5, 0.5, 0.5]; radius "
                   "= 0.2; }; } );",
                   M_SOURCES,
                   "sources = ( { power_density = \"hot\"; box = { min = [0.0, 0.0, 0.0]; max = "
                   "[1.0, 1.0, 1.0]; }; } );",
                   M_PROBES, "probes = ( { name = \"p\"; at = [0.5, 0.5, 2.0]; } );", M_X_LO,
                   "  x_lo = { type = \"convective\"; h = -1.0; ambient = 0.0; };", M_OUTPUT,
                   "output = { dir = \"res\"; };", 0));
    const char *cmds[] = {"check", "run"};
    for (int i = 0; i < 2; i++) {
        result r;
        heat(&r, dir, cmds[i], "bad.cfg", NULL);
        expect_rc(&r, 2);
        STDERR_HAS(&r, "invalid deck");
        STDERR_HAS(&r, "bad.cfg:2: materials[1].conductivity = -4.0: the conductivity (W/(m K)) "
                       "must be > 0");
        STDERR_HAS(&r, "bad.cfg:3: regions[0].material = \"c\": no material of that name (\"a\", "
                       "\"b\")");
        STDERR_HAS(&r, "bad.cfg:4: sources[0].power_density = \"hot\": expected a number");
        STDERR_HAS(&r, "bad.cfg:5: probes[0].at = [0.5, 0.5, 2.0]: the point lies outside the "
                       "domain along z");
        STDERR_HAS(&r, "bad.cfg:9: boundary.x_lo.h = -1.0: the heat transfer coefficient must "
                       "be >= 0");
        EXPECT_NOT_OUT(&r, "valid");
        result_free(&r);
        assert_false(exists_in(dir, "res"));
    }
    /* --set is checked the same way. */
    result r;
    heat(&r, dir, "check", "bad.cfg", "--set",
         "materials=({name=\"a\";conductivity=1.0;density=1.0;specific_heat=1.0;},"
         "{name=\"b\";conductivity=4.0;density=1.0;specific_heat=1.0;})",
         "--set", "regions=({material=\"b\";box={min=[0.0,0.0,0.0];max=[1.0,1.0,1.0];};})", "--set",
         "sources=()", "--set", "probes=({name=\"a,b\";at=[0.5,0.5,0.5];})", "--set",
         "boundary.x_lo={type=\"neumann\";}", NULL);
    expect_rc(&r, 2);
    STDERR_HAS(&r, "--set: probes[0].name = \"a,b\": expected 1 to 31 characters, no comma");
    EXPECT_NOT_OUT(&r, "valid");
    result_free(&r);
    /* A diffusivity cannot carry a source or a convective face. */
    write_in(dir, "alpha.cfg",
             mdeck(M_MATERIALS, "material = { diffusivity = 1.0; };", M_SOURCES,
                   "sources = ( { power_density = 1.0; box = { min = [0.0, 0.0, 0.0]; max = [1.0, "
                   "1.0, 1.0]; }; } );",
                   M_X_HI, "  x_hi = { type = \"flux\"; value = 5.0; };", 0));
    heat(&r, dir, "run", "alpha.cfg", NULL);
    expect_rc(&r, 2);
    STDERR_HAS(&r, "alpha.cfg:4: sources = ");
    STDERR_HAS(&r, "heat sources need the material's conductivity, density and specific_heat");
    STDERR_HAS(&r, "alpha.cfg:10: boundary.x_hi.type = \"flux\": a flux face needs the material's "
                   "conductivity");
    result_free(&r);
    assert_false(exists_in(dir, "out"));
}

#define NODES (11 * 11 * 11)

/* The node (i, j, k) of the 11^3 grid in a dataset of shape (nz, ny, nx). */
static int at(int i, int j, int k)
{
    return (k * 11 + j) * 11 + i;
}

/* m.h5 in dir: /material (uint8) and /as_int64 with material 1 where
 * (i + 2 j + 3 k) % 5 == 0, and datasets each wrong in one way. Returns how
 * many nodes /material gives material 1. */
static long long write_material_file(const char *dir)
{
    char h5[4200];
    path_in(h5, sizeof h5, dir, "m.h5");
    static uint8_t u8[NODES], two[NODES];
    static int64_t i64[NODES];
    static int16_t neg[NODES];
    static int32_t flat[11 * 11], wide[11 * 11 * 12];
    static double real[NODES];
    long long ones = 0;
    for (int k = 0; k < 11; k++)
        for (int j = 0; j < 11; j++)
            for (int i = 0; i < 11; i++) {
                const int v = (i + 2 * j + 3 * k) % 5 == 0;
                u8[at(i, j, k)] = (uint8_t)v, i64[at(i, j, k)] = v;
                ones += v;
            }
    memset(two, 0, sizeof two);
    two[at(3, 4, 5)] = 2;
    neg[at(7, 0, 2)] = -1;
    const hsize_t d3[3] = {11, 11, 11}, d2[2] = {11, 11}, dw[3] = {11, 11, 12};
    put_dataset(h5, "/material", H5T_NATIVE_UINT8, 3, d3, u8);
    put_dataset(h5, "/as_int64", H5T_NATIVE_INT64, 3, d3, i64);
    put_dataset(h5, "/two", H5T_NATIVE_UINT8, 3, d3, two);
    put_dataset(h5, "/negative", H5T_NATIVE_INT16, 3, d3, neg);
    put_dataset(h5, "/flat", H5T_NATIVE_INT32, 2, d2, flat);
    put_dataset(h5, "/wide", H5T_NATIVE_INT32, 3, dw, wide);
    put_dataset(h5, "/real", H5T_NATIVE_DOUBLE, 3, d3, real);
    write_in(dir, "text.h5", "not an HDF5 file\n");
    return ones;
}

/* A deck whose second region reads `path` (and `dataset` when not NULL). */
static void write_file_deck(const char *dir, const char *path, const char *dataset)
{
    char regions[512];
    snprintf(regions, sizeof regions,
             "regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; max = [1.0, 1.0, "
             "1.0]; }; }, { file = { path = \"%s\";%s%s%s }; } );",
             path, dataset ? " dataset = \"" : "", dataset ? dataset : "", dataset ? "\";" : "");
    write_in(dir, "f.cfg", mdeck(M_REGIONS, regions, M_OUTPUT, "output = { dir = \"res\"; };", 0));
}

static void test_material_files(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "mat_files");
    const long long ones = write_material_file(dir);
    /* The file paints every node over the first region: its counts. */
    const char *good[] = {NULL, "/as_int64"};
    for (int i = 0; i < 2; i++) {
        write_file_deck(dir, "m.h5", good[i]);
        result r;
        heat(&r, dir, "check", "f.cfg", NULL);
        expect_rc(&r, 0);
        assert_int_equal(material_nodes(r.out, "b", 1), ones);
        assert_int_equal(material_nodes(r.out, "a", 0), NODES - ones);
        result_free(&r);
    }
    /* Each file that cannot be used: its region and file named, exit 2,
     * before the deck is called valid. */
    const char *cases[][3] = {
        {"missing.h5", NULL, "regions[1]: cannot read missing.h5: No such file or directory"},
        {"text.h5", NULL, "regions[1]: cannot read text.h5 as an HDF5 file"},
        {"m.h5", "/none", "regions[1]: m.h5 has no dataset /none"},
        {"m.h5", "/wide",
         "regions[1]: m.h5:/wide has the shape (11, 11, 12), not the grid's (nz, ny, nx) = (11, "
         "11, 11)"},
        {"m.h5", "/flat", "regions[1]: m.h5:/flat has the shape (11, 11), not the grid's"},
        {"m.h5", "/real", "regions[1]: m.h5:/real is not an integer dataset"},
        {"m.h5", "/two",
         "regions[1]: m.h5:/two holds the material index 2 at node (3, 4, 5), but there are 2 "
         "materials (0 to 1)"},
        {"m.h5", "/negative",
         "regions[1]: m.h5:/negative holds the material index -1 at node (7, "
         "0, 2)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_file_deck(dir, cases[i][0], cases[i][1]);
        result r;
        heat(&r, dir, "check", "f.cfg", NULL);
        expect_rc(&r, 2);
        STDERR_HAS(&r, cases[i][2]);
        EXPECT_NOT_OUT(&r, "valid");
        result_free(&r);
    }
    /* A run refuses it before writing anything. */
    result r;
    heat(&r, dir, "run", "f.cfg", NULL);
    expect_rc(&r, 2);
    STDERR_HAS(&r, cases[sizeof cases / sizeof *cases - 1][2]);
    result_free(&r);
    assert_false(exists_in(dir, "res"));
    /* A restart paints the regions anew: a material file changed since the
     * run began is refused, naming the first node whose material moved. */
    write_file_deck(dir, "m.h5", NULL);
    heat(&r, dir, "run", "f.cfg", "--quiet", "--set", "time.max_steps=4", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    char h5[4200], h5b[4200], h5c[4200];
    path_in(h5, sizeof h5, dir, "m.h5");
    path_in(h5b, sizeof h5b, dir, "m_before.h5");
    path_in(h5c, sizeof h5c, dir, "m_changed.h5");
    static uint8_t moved[NODES];
    for (int i = 0; i < NODES; i++) moved[i] = (i % 5) == 0;
    const hsize_t d3[3] = {11, 11, 11};
    put_dataset(h5c, "/material", H5T_NATIVE_UINT8, 3, d3, moved);
    assert_int_equal(rename(h5, h5b), 0);
    assert_int_equal(rename(h5c, h5), 0);
    heat(&r, dir, "run", "f.cfg", "--quiet", "--restart", "latest", "--set", "time.max_steps=8",
         NULL);
    expect_rc(&r, 2);
    STDERR_HAS(&r, "--restart res/f_ckpt_00000004.vtkhdf: the deck's regions give ");
    STDERR_HAS(&r, "nodes another material than the checkpoint's, the first at node (");
    STDERR_HAS(&r, "A material file of the regions changed since the run began?");
    result_free(&r);
    assert_false(exists_in(dir, "res/f_ckpt_00000008.vtkhdf"));
    assert_int_equal(rename(h5b, h5), 0);
    heat(&r, dir, "run", "f.cfg", "--quiet", "--restart", "latest", "--set", "time.max_steps=8",
         NULL);
    expect_rc(&r, 0);
    result_free(&r);
}

/* 2D: a dataset of shape (ny, nx), or (1, ny, nx). */
static void test_material_file_2d(void **state)
{
    (void)state;
    char dir[4096], h5[4200];
    scratch(dir, sizeof dir, "mat_file_2d");
    path_in(h5, sizeof h5, dir, "m.h5");
    int32_t v[121];
    long long ones = 0;
    for (int j = 0; j < 11; j++)
        for (int i = 0; i < 11; i++) ones += v[j * 11 + i] = i <= j;
    const hsize_t d2[2] = {11, 11}, d3[3] = {1, 11, 11}, d10[2] = {10, 11};
    put_dataset(h5, "/plane", H5T_NATIVE_INT32, 2, d2, v);
    put_dataset(h5, "/layer", H5T_NATIVE_INT32, 3, d3, v);
    put_dataset(h5, "/short", H5T_NATIVE_INT32, 2, d10, v);
    const char *sets[] = {"/plane", "/layer"};
    for (int i = 0; i < 2; i++) {
        char regions[256];
        snprintf(regions, sizeof regions,
                 "regions = ( { file = { path = \"m.h5\"; dataset = \"%s\"; }; } );", sets[i]);
        write_in(dir, "f.cfg",
                 mdeck(M_GRID, "grid = { points = [11, 11, 1]; length = [1.0, 1.0, 1.0]; };",
                       M_REGIONS, regions, 0));
        result r;
        heat(&r, dir, "check", "f.cfg", NULL);
        expect_rc(&r, 0);
        assert_int_equal(ones, 66);
        assert_int_equal(material_nodes(r.out, "b", 1), ones);
        result_free(&r);
    }
    write_in(dir, "f.cfg",
             mdeck(M_GRID, "grid = { points = [11, 11, 1]; length = [1.0, 1.0, 1.0]; };", M_REGIONS,
                   "regions = ( { file = { path = \"m.h5\"; dataset = \"/short\"; }; } );", 0));
    result r;
    heat(&r, dir, "check", "f.cfg", NULL);
    expect_rc(&r, 2);
    STDERR_HAS(&r, "regions[0]: m.h5:/short has the shape (10, 11), not the grid's (nz, ny, nx) = "
                   "(1, 11, 11) or (ny, nx) = (11, 11)");
    result_free(&r);
}

static void starts_with(const char *text, const char *head)
{
    if (strncmp(text, head, strlen(head)) != 0)
        fail_msg("expected to start with %s:\n%s", head, text);
}

/* Field `n` (from 0) of a CSV row as a number; NAN when empty. */
static double csv_field(const char *row, int n)
{
    for (int i = 0; i < n; i++) {
        row = strchr(row, ',');
        assert_non_null(row);
        row++;
    }
    if (*row == ',' || *row == '\n' || !*row) return NAN;
    return strtod(row, NULL);
}

/* The line of `csv` whose first field is `step` (or the header for -1). */
static const char *csv_row(const char *csv, long long step)
{
    if (step < 0) return csv;
    for (const char *p = csv; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        char *end;
        if (strtoll(p, &end, 10) == step && end != p && *end == ',') return p;
    }
    fail_msg("no row of step %lld in:\n%s", step, csv);
    return NULL;
}

/* A run: the empty region's notice, probes.csv (the nearest nodes in its
 * header, a row per check step) and history.csv's min, max and mean. */
static void test_run_probes_and_history(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "mat_run");
    write_in(dir, "r.cfg",
             mdeck(M_REGIONS,
                   "regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; max = [0.5, "
                   "1.0, 1.0]; }; }, { material = \"a\"; box = { min = [0.42, 0.0, 0.0]; max = "
                   "[0.48, 1.0, 1.0]; }; } );",
                   M_PROBES,
                   "probes = ( { name = \"hot\"; at = [0.01, 0.52, 0.48]; }, { name = \"mid\"; at "
                   "= [0.5, 0.5, 0.5]; } );",
                   M_TIME, "time = { max_steps = 3; };", M_X_LO,
                   "  x_lo = { type = \"dirichlet\"; value = 100.0; };", M_OUTPUT,
                   "output = { dir = \"res\"; };", M_SOURCES,
                   "sources = ( { power_density = 5.0; box = { min = [0.42, 0.0, 0.0]; max = "
                   "[0.48, 1.0, 1.0]; }; } );",
                   0));
    result r;
    heat(&r, dir, "run", "r.cfg", "--quiet", NULL);
    expect_rc(&r, 0);
    STDERR_HAS(&r, "notice: regions[1] contains no node of the grid");
    STDERR_HAS(&r, "notice: sources[0] contains no node of the grid (it lies between nodes): it "
                   "injects nothing");
    result_free(&r);
    char *probes = read_in(dir, "res/probes.csv"), *hist = read_in(dir, "res/history.csv");
    starts_with(probes, "step,time,hot (node 0 5 5),mid (node 5 5 5)\n");
    /* Rows at check steps only (here the last): the Dirichlet node holds its
     * value; three steps from the face cannot reach node 5, which keeps 20. */
    const char *row = csv_row(probes, 3);
    assert_true(csv_field(row, 2) == 100.0);
    assert_true(csv_field(row, 3) == 20.0);
    assert_true(csv_field(row, 1) == csv_field(csv_row(hist, 3), 1));
    assert_true(strstr(probes, "\n0,") == NULL);
    /* history.csv: step 0 is the initial field with the face set: 121 of
     * 1331 nodes at 100, the rest at 20. */
    starts_with(hist, "step,time,residual,wall_seconds,min,max,mean,reduction,cycles\n");
    row = csv_row(hist, 0);
    assert_true(isnan(csv_field(row, 2)));
    assert_true(csv_field(row, 4) == 20.0 && csv_field(row, 5) == 100.0);
    assert_close(csv_field(row, 6), (1210 * 20.0 + 121 * 100.0) / 1331.0, 1e-7);
    /* Then heat flows in: the mean rises, the extremes stay. */
    row = csv_row(hist, 3);
    assert_true(csv_field(row, 2) > 0);
    assert_true(csv_field(row, 4) == 20.0 && csv_field(row, 5) == 100.0);
    assert_true(csv_field(row, 6) > (1210 * 20.0 + 121 * 100.0) / 1331.0);
    free(probes);
    free(hist);
}

/* A restart keeps the materials, regions and sources: a deck of only a
 * diffusivity (the first material's) cannot continue a run of several
 * materials or with a source. */
static void test_restart_keeps_materials(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "mat_restart");
    const char *out = "output = { dir = \"res\"; };";
    write_in(dir, "m.cfg",
             mdeck(M_REGIONS,
                   "regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; max = [0.5, "
                   "1.0, 1.0]; }; } );",
                   M_OUTPUT, out, 0));
    write_in(dir, "s.cfg",
             mdeck(M_MATERIALS,
                   "material = { conductivity = 1.0; density = 1.0; specific_heat = 1.0; };",
                   M_SOURCES,
                   "sources = ( { power_density = 5.0; sphere = { center = [0.5, 0.5, 0.5]; "
                   "radius = 0.3; }; } );",
                   M_OUTPUT, out, 0));
    write_in(dir, "d.cfg",
             mdeck(M_MATERIALS, "material = { diffusivity = 1.0; };", M_TIME,
                   "time = { max_steps = 20; };", M_OUTPUT, out, 0));
    const char *runs[][2] = {{"m.cfg", "res/m_ckpt_00000010.vtkhdf"},
                             {"s.cfg", "res/s_ckpt_00000010.vtkhdf"}};
    const char *why[] = {"materials: 0 in the deck, 2 in the file",
                         "sources: 0 in the deck, 1 in the file"};
    for (int i = 0; i < 2; i++) {
        result r;
        heat(&r, dir, "run", runs[i][0], "--quiet", "--overwrite", NULL);
        expect_rc(&r, 0);
        result_free(&r);
        /* Into a directory of its own: "res" holds the other run. */
        heat(&r, dir, "run", "d.cfg", "--restart", runs[i][1], "--set", "output.dir=res_d",
             "--quiet", NULL);
        expect_rc(&r, 2);
        STDERR_HAS(&r, "does not match the checkpoint's materials, regions and sources");
        STDERR_HAS(&r, why[i]);
        result_free(&r);
        /* A region or source changed is named, as the deck and the file have it. */
        if (i == 0)
            heat(&r, dir, "run", runs[i][0], "--restart", runs[i][1], "--set",
                 "regions=({material=\"b\";box={min=[0.0,0.0,0.0];max=[0.6,1.0,1.0];};})",
                 "--quiet", NULL);
        else
            heat(&r, dir, "run", runs[i][0], "--restart", runs[i][1], "--set",
                 "sources=({power_density=6.0;sphere={center=[0.5,0.5,0.5];radius=0.3;};})",
                 "--quiet", NULL);
        expect_rc(&r, 2);
        if (i == 0)
            STDERR_HAS(&r, "regions[0]: material \"b\", box min [0, 0, 0] max "
                           "[0.59999999999999998, 1, 1] in the deck, material \"b\", box min [0, "
                           "0, 0] max [0.5, 1, 1] in the file");
        else
            STDERR_HAS(&r, "sources[0]: power density 6 W/m^3, sphere center [0.5, 0.5, 0.5] "
                           "radius 0.29999999999999999 in the deck; 5 W/m^3, sphere center [0.5, "
                           "0.5, 0.5] radius 0.29999999999999999 in the file");
        result_free(&r);
        /* Its own deck continues it. */
        heat(&r, dir, "run", runs[i][0], "--restart", runs[i][1], "--set", "time.max_steps=20",
             "--quiet", NULL);
        expect_rc(&r, 0);
        result_free(&r);
    }
}

/* A restart keeps the run's probes: other probes are refused before
 * anything is written (probes.csv's rows hold the values of its columns'
 * probes); a deck without probes keeps the file's columns and drops the
 * rows of the interrupted run's future, as history.csv does. */
static void test_restart_keeps_probes(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "mat_restart_probes");
    write_in(dir, "p.cfg",
             mdeck(M_PROBES,
                   "probes = ( { name = \"hot\"; at = [0.01, 0.52, 0.48]; }, { name = \"mid\"; at "
                   "= [0.5, 0.5, 0.5]; } );",
                   M_TIME,
                   "time = { max_steps = 6; }; steady = { tolerance = 1e-12; check_every = 2; };",
                   M_OUTPUT, "output = { dir = \"res\"; checkpoint_every = 2; };", M_X_LO,
                   "  x_lo = { type = \"dirichlet\"; value = 100.0; };", 0));
    result r;
    heat(&r, dir, "run", "p.cfg", "--quiet", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    char *before = read_in(dir, "res/probes.csv");
    starts_with(before, "step,time,hot (node 0 5 5),mid (node 5 5 5)\n");
    csv_row(before, 6);
    heat(&r, dir, "run", "p.cfg", "--restart", "res/p_ckpt_00000004.vtkhdf", "--set",
         "probes=({name=\"mid\";at=[0.5,0.5,0.5];})", "--quiet", NULL);
    expect_rc(&r, 2);
    STDERR_HAS(&r,
               "probes differ from the run's: res/probes.csv has the columns \"step,time,hot "
               "(node 0 5 5),mid (node 5 5 5)\", the deck gives \"step,time,mid (node 5 5 5)\"");
    STDERR_HAS(&r, "move res/probes.csv out of output.dir");
    result_free(&r);
    char *same = read_in(dir, "res/probes.csv");
    assert_string_equal(same, before);
    heat(&r, dir, "run", "p.cfg", "--restart", "res/p_ckpt_00000004.vtkhdf", "--set", "probes=()",
         "--set", "time.max_steps=5", "--quiet", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    char *after = read_in(dir, "res/probes.csv");
    starts_with(after, "step,time,hot (node 0 5 5),mid (node 5 5 5)\n");
    assert_string_equal(strchr(csv_row(after, 4), '\n') + 1, "");
    assert_true(strncmp(after, before, strlen(after)) == 0);
    free(before);
    free(same);
    free(after);
}

/* An implicit step whose solve stalls with a zero right-hand side says so
 * (its residual is over its first, and no tolerance would help): a sphere
 * of 1000 times its surroundings' conductivity defeats the V-cycles. */
static void test_implicit_stall_zero_rhs(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "mat_zero_rhs");
    write_in(dir, "s.cfg",
             "grid = { points = [25, 25, 25]; length = [1.0, 1.0, 1.0]; };\n"
             "materials = ( { name = \"a\"; conductivity = 1.0; density = 1.0; specific_heat = "
             "1.0; },\n"
             "  { name = \"b\"; conductivity = 1000.0; density = 1.0; specific_heat = 1.0; } );\n"
             "regions = ( { material = \"b\"; sphere = { center = [0.3, 0.3, 0.3]; radius = "
             "0.17; }; } );\n"
             "time = { scheme = \"backward_euler\"; dt = 0.01; max_steps = 10; };\n"
             "initial = { type = \"constant\"; value = 0.0; };\n"
             "boundary = { x_lo = { type = \"dirichlet\"; value = 0.0; }; x_hi = { type = "
             "\"dirichlet\"; value = 1.0; };\n"
             "  y_lo = { type = \"neumann\"; }; y_hi = { type = \"neumann\"; };\n"
             "  z_lo = { type = \"neumann\"; }; z_hi = { type = \"neumann\"; }; };\n"
             "output = { dir = \"res\"; };\n"
             "solver = { backend = \"cpu\"; implicit_tolerance = 0.99; };\n");
    result r;
    heat(&r, dir, "run", "s.cfg", "--quiet", NULL);
    expect_rc(&r, 3);
    STDERR_HAS(&r, "step 1's multigrid solve stalled: its right-hand side is zero, and the "
                   "residual stopped at");
    STDERR_HAS(&r, "The V-cycles do not converge on this deck");
    assert_null(strstr(r.err, "Use a larger solver.implicit_tolerance"));
    result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dt_limit),
        cmocka_unit_test(test_dt_above_limit_refused),
        cmocka_unit_test(test_probe_nodes),
        cmocka_unit_test(test_painting),
        cmocka_unit_test(test_source_power),
        cmocka_unit_test(test_check_report),
        cmocka_unit_test(test_check_2d_and_probes),
        cmocka_unit_test(test_bad_deck_exit_2),
        cmocka_unit_test(test_material_files),
        cmocka_unit_test(test_material_file_2d),
        cmocka_unit_test(test_run_probes_and_history),
        cmocka_unit_test(test_restart_keeps_materials),
        cmocka_unit_test(test_restart_keeps_probes),
        cmocka_unit_test(test_implicit_stall_zero_rhs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
