/* Tests of the input deck (input/deck.h): every rule of the deck contract is
 * checked for its exit code and for what its message names (file:LINE, the
 * key path, the offending value and what is allowed), plus the defaults.
 * Valid decks, missing keys, ranges, enums and boundaries here; unknown keys,
 * syntax errors, --set and the canonical text: test_deck_text.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "deck.h"
#include "heat_case.h"
#include "deck_helpers.h"
#include "test_util.h"

/* ---------------------------------------------------------- valid decks */

static void test_base_deck_fields(void **state)
{
    (void)state;
    heat_case c;
    load_ok(deck(0), NULL, 0, &c, NULL, NULL);
    assert_string_equal(c.name, "plate");
    assert_int_equal(c.grid.n[0], 16);
    assert_int_equal(c.grid.n[1], 12);
    assert_int_equal(c.grid.n[2], 10);
    assert_int_equal(c.grid.dims, 3);
    assert_true(c.grid.length[0] == 1.0 && c.grid.length[1] == 2.0 && c.grid.length[2] == 0.5);
    assert_true(c.grid.origin[0] == 0 && c.grid.origin[1] == 0 && c.grid.origin[2] == 0);
    assert_true(c.alpha == 1.0e-4);
    assert_true(c.time.has_end && c.time.end == 10.0);
    assert_false(c.time.has_max_steps);
    assert_false(c.time.has_dt);
    assert_true(c.time.safety == 0.9);
    assert_false(c.steady.enabled);
    assert_int_equal(c.steady.check_every, 100);
    assert_int_equal(c.initial.type, HEAT_INIT_CONSTANT);
    assert_true(c.initial.value == 20.0);
    assert_int_equal(c.bc[HEAT_X_LO].type, HEAT_BC_DIRICHLET);
    assert_true(c.bc[HEAT_X_LO].value == 100.0);
    assert_int_equal(c.bc[HEAT_X_HI].type, HEAT_BC_NEUMANN);
    assert_true(c.bc[HEAT_X_HI].gradient == 0.5);
    assert_int_equal(c.bc[HEAT_Y_LO].type, HEAT_BC_PERIODIC);
    assert_int_equal(c.bc[HEAT_Y_HI].type, HEAT_BC_PERIODIC);
    assert_int_equal(c.bc[HEAT_Z_LO].type, HEAT_BC_NEUMANN);
    assert_true(c.bc[HEAT_Z_LO].gradient == 0.0); /* default gradient */
    assert_int_equal(c.bc[HEAT_Z_HI].type, HEAT_BC_DIRICHLET);
    assert_true(c.bc[HEAT_Z_HI].value == -3.0);
    assert_string_equal(c.output.dir, "out/plate");
    assert_int_equal(c.output.every, 0);
    assert_int_equal(c.output.checkpoint_every, 0);
    assert_int_equal(c.output.keep_checkpoints, 2);
    assert_int_equal(c.solver.backend, HEAT_BACKEND_AUTO);
    assert_int_equal(c.solver.precision, HEAT_DOUBLE);
    assert_int_equal(c.solver.kernel, HEAT_KERNEL_REGISTER_TILED);
    assert_int_equal(c.solver.temporal_block, 1);
    derive_ok(&c);
    assert_int_equal(c.d.points, 16 * 12 * 10);
}

static void test_full_deck_fields(void **state)
{
    (void)state;
    heat_case c;
    load_ok(deck(L_GRID,
                 "grid = { points = [16, 12, 10]; length = [1.0, 2.0, 0.5]; origin = [-1.0, 0.25, "
                 "3.0]; };",
                 L_TIME, "time = { end = 5.0; max_steps = 1000; dt = 1.0e-3; safety = 0.5; };",
                 L_STEADY, "steady = { tolerance = 1.0e-6; check_every = 25; };", L_OUTPUT,
                 "output = { dir = \"runs/p\"; every = 100; checkpoint_every = 1000; "
                 "keep_checkpoints = 3; };",
                 L_SOLVER,
                 "solver = { backend = \"cpu\"; precision = \"float\"; kernel = \"sliced\"; "
                 "temporal_block = 4; };",
                 0),
            NULL, 0, &c, NULL, NULL);
    assert_true(c.grid.origin[0] == -1.0 && c.grid.origin[1] == 0.25 && c.grid.origin[2] == 3.0);
    assert_true(c.time.has_end && c.time.end == 5.0);
    assert_true(c.time.has_max_steps && c.time.max_steps == 1000);
    assert_true(c.time.has_dt && c.time.dt == 1.0e-3);
    assert_true(c.time.safety == 0.5);
    assert_true(c.steady.enabled && c.steady.tolerance == 1.0e-6);
    assert_int_equal(c.steady.check_every, 25);
    assert_string_equal(c.output.dir, "runs/p");
    assert_int_equal(c.output.every, 100);
    assert_int_equal(c.output.checkpoint_every, 1000);
    assert_int_equal(c.output.keep_checkpoints, 3);
    assert_int_equal(c.solver.backend, HEAT_BACKEND_CPU);
    assert_int_equal(c.solver.precision, HEAT_FLOAT);
    assert_int_equal(c.solver.kernel, HEAT_KERNEL_SLICED);
    assert_int_equal(c.solver.temporal_block, 4);
}

static void test_initial_types_parsed(void **state)
{
    (void)state;
    heat_case c;
    load_ok(deck(L_INITIAL,
                 "initial = { type = \"gaussian\"; center = [0.5, 1.0, 0.25]; width = 0.1; "
                 "amplitude = 80.0; base = 20.0; };",
                 0),
            NULL, 0, &c, NULL, NULL);
    assert_int_equal(c.initial.type, HEAT_INIT_GAUSSIAN);
    assert_true(c.initial.center[0] == 0.5 && c.initial.center[1] == 1.0 &&
                c.initial.center[2] == 0.25);
    assert_true(c.initial.width == 0.1 && c.initial.amplitude == 80.0 && c.initial.base == 20.0);

    load_ok(deck(L_INITIAL,
                 "initial = { type = \"gaussian\"; center = (0.5, 1, 0.25); width = 1; "
                 "amplitude = 2; };",
                 0),
            NULL, 0, &c, NULL, NULL);
    assert_true(c.initial.center[1] == 1.0 && c.initial.base == 0.0); /* base defaults to 0 */

    load_ok(deck(L_INITIAL,
                 "initial = { type = \"sine\"; modes = [1.0, 2.0, 0.0]; amplitude = 3.5; };", 0),
            NULL, 0, &c, NULL, NULL);
    assert_int_equal(c.initial.type, HEAT_INIT_SINE);
    assert_true(c.initial.modes[0] == 1.0 && c.initial.modes[1] == 2.0 &&
                c.initial.modes[2] == 0.0);
    assert_true(c.initial.amplitude == 3.5);
}

static void test_default_deck_loads_and_derives(void **state)
{
    (void)state;
    heat_case c, s;
    heat_error err;
    char *text = NULL;
    memset(&c, 0, sizeof c);
    assert_int_equal(heat_deck_load(NULL, NULL, 0, &c, &text, NULL, &err), HEAT_OK);
    assert_int_equal(err.code, HEAT_OK);
    assert_string_equal(c.name, HEAT_DEFAULT_DECK_NAME);
    assert_int_equal(c.grid.dims, 3);
    assert_true(c.time.has_end);
    assert_int_equal(heat_case_derive(&c, &err), HEAT_OK);
    assert_true(c.d.stop_step > 0);
    assert_true(c.d.dt > 0 && c.d.dt <= c.d.dt_max);
    /* The same as loading the text itself. */
    memset(&s, 0, sizeof s);
    assert_int_equal(heat_deck_load_string(heat_default_deck, HEAT_DEFAULT_DECK_NAME, NULL, 0, &s,
                                           NULL, NULL, &err),
                     HEAT_OK);
    derive_ok(&s);
    assert_case_equal(&c, &s);
    free(text);
    /* Overrides apply to the default deck too. */
    const char *sets[] = {"time.end=1.5"};
    memset(&c, 0, sizeof c);
    assert_int_equal(heat_deck_load(NULL, sets, 1, &c, NULL, NULL, &err), HEAT_OK);
    assert_true(c.time.end == 1.5);
}

static void test_default_name_from_file(void **state)
{
    (void)state;
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s", test_scratch_dir("default_name"));
    heat_case c;
    heat_error err;

    snprintf(path, sizeof path, "%s/slab.cfg", dir);
    test_write_file(path, deck(L_NAME, "", 0));
    memset(&c, 0, sizeof c);
    if (heat_deck_load(path, NULL, 0, &c, NULL, NULL, &err) != HEAT_OK) fail_msg("%s", err.msg);
    assert_string_equal(c.name, "slab");
    assert_string_equal(c.output.dir, "out/slab"); /* the output dir follows the name */

    /* Only the last extension goes. */
    snprintf(path, sizeof path, "%s/my-plate.v2.cfg", dir);
    test_write_file(path, deck(L_NAME, "", 0));
    if (heat_deck_load(path, NULL, 0, &c, NULL, NULL, &err) != HEAT_OK) fail_msg("%s", err.msg);
    assert_string_equal(c.name, "my-plate.v2");

    /* No extension at all. */
    snprintf(path, sizeof path, "%s/plain", dir);
    test_write_file(path, deck(L_NAME, "", 0));
    if (heat_deck_load(path, NULL, 0, &c, NULL, NULL, &err) != HEAT_OK) fail_msg("%s", err.msg);
    assert_string_equal(c.name, "plain");

    /* The origin of an in-memory deck gives the name the same way. */
    assert_int_equal(heat_deck_load_string(deck(L_NAME, "", 0), "some/dir/case.cfg", NULL, 0, &c,
                                           NULL, NULL, &err),
                     HEAT_OK);
    assert_string_equal(c.name, "case");

    /* Made safe as DECK.md says: each byte outside A-Z a-z 0-9 _ - . becomes
     * '_', and a leading '.' too; a leading '.' is no extension. */
    const char *rewritten[][2] = {{"my deck.cfg", "my_deck"},
                                  {".hidden.cfg", "_hidden"},
                                  {".hidden", "_hidden"},
                                  {"d/a#b+c.v2.cfg", "a_b_c.v2"},
                                  {"d\xc3\xab"
                                   "ck.cfg",
                                   "d__ck"}};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(heat_deck_load_string(deck(L_NAME, "", 0), rewritten[i][0], NULL, 0, &c,
                                               NULL, NULL, &err),
                         HEAT_OK);
        assert_string_equal(c.name, rewritten[i][1]);
    }

    /* The default name is held to the rules of a given one, and a refusal
     * names it and says to set `name`: not X_ckpt ... */
    assert_int_equal(heat_deck_load_string(deck(L_NAME, "", 0), "runs/foo_ckpt.cfg", NULL, 0, &c,
                                           NULL, NULL, &err),
                     HEAT_EINPUT);
    assert_has(err.msg, "runs/foo_ckpt.cfg: the default name \"foo_ckpt\", made from the deck "
                        "file's name, ends in \"_ckpt\"");
    assert_has(err.msg, "checkpoints of a run \"foo\"");
    assert_has(err.msg, "set a name in the deck");
    assert_has(err.msg, "name = \"foo-ckpt\";");
    /* ... and at most 200 characters: a longer file name is refused. */
    char base[260], want[600];
    memset(base, 'a', 240);
    snprintf(base + 240, sizeof base - 240, ".cfg");
    snprintf(path, sizeof path, "d/%s", base);
    assert_int_equal(
        heat_deck_load_string(deck(L_NAME, "", 0), path, NULL, 0, &c, NULL, NULL, &err),
        HEAT_EINPUT);
    snprintf(want, sizeof want, "%s: the default name \"%.240s\"", path, base);
    assert_has(err.msg, want);
    assert_has(err.msg, "has 240 characters, more than the 200 a name may have");
    assert_has(err.msg, "set name =");
    memset(base, 'b', 200);
    snprintf(base + 200, sizeof base - 200, ".cfg");
    assert_int_equal(
        heat_deck_load_string(deck(L_NAME, "", 0), base, NULL, 0, &c, NULL, NULL, &err), HEAT_OK);
    assert_int_equal(strlen(c.name), 200);

    /* A given name wins over the file name. */
    snprintf(path, sizeof path, "%s/other.cfg", dir);
    test_write_file(path, deck(0));
    if (heat_deck_load(path, NULL, 0, &c, NULL, NULL, &err) != HEAT_OK) fail_msg("%s", err.msg);
    assert_string_equal(c.name, "plate");
}

static void test_bad_name(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_NAME, "name = \"a b\";", 0), ORIGIN ":1:", "name = \"a b\"", "A-Z a-z 0-9");
    EXPECT_ERR(deck(L_NAME, "name = \".hidden\";", 0), ORIGIN ":1:", "\".hidden\"",
               "not starting with '.'");
    EXPECT_ERR(deck(L_NAME, "name = 5;", 0), ORIGIN ":1:", "name = 5", "expected a string",
               "an integer");
    /* X_ckpt: its snapshots X_ckpt_<step>.vtkhdf are named as run X's
     * checkpoints, and a restart could not tell the runs apart. */
    EXPECT_ERR(deck(L_NAME, "name = \"plate_ckpt\";", 0), ORIGIN ":1:", "name = \"plate_ckpt\"",
               "must not end in \"_ckpt\"", "checkpoints of a run \"plate\"", "\"plate-ckpt\"");
    heat_case c;
    const char *fine[] = {"_ckpt", "plate_ckpt_2", "plate-ckpt", "plate_CKPT"};
    for (int i = 0; i < 4; i++) {
        char line[64];
        snprintf(line, sizeof line, "name = \"%s\";", fine[i]);
        load_ok(deck(L_NAME, line, 0), NULL, 0, &c, NULL, NULL);
        assert_string_equal(c.name, fine[i]);
    }
    /* 1 to 200 characters. */
    char line[256];
    snprintf(line, sizeof line, "name = \"%0200d\";", 0);
    load_ok(deck(L_NAME, line, 0), NULL, 0, &c, NULL, NULL);
    assert_int_equal(strlen(c.name), 200);
    snprintf(line, sizeof line, "name = \"%0201d\";", 0);
    EXPECT_ERR(deck(L_NAME, line, 0), ORIGIN ":1:", "expected 1 to 200 characters");
}

/* ------------------------------------------------------- missing things */

static void test_missing_sections(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_GRID, "", 0), "missing key grid", "points and length");
    EXPECT_ERR(deck(L_MATERIAL, "", 0), "missing key material", "diffusivity");
    EXPECT_ERR(deck(L_INITIAL, "", 0), "missing key initial", "constant, gaussian, sine or file");
    /* Without time and steady, nothing stops the run. */
    EXPECT_ERR(deck(L_TIME, "", 0), ORIGIN ": nothing would stop the run", "time.end",
               "time.max_steps", "steady");
    EXPECT_ERR(deck(L_TIME, "time = { dt = 1.0e-3; safety = 0.5; };", 0), "nothing would stop",
               "time.end", "time.max_steps", "steady");
}

/* The boundary section absent: one line, not six. */
static void test_missing_boundary_section(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_BOUNDARY, "", L_X_LO, "", L_X_HI, "", L_Y_LO, "", L_Y_HI, "", L_Z_LO, "",
                    L_Z_HI, "", L_BOUNDARY_END, "", 0),
               ORIGIN, "missing key boundary", "x_lo");
}

static void test_missing_required_keys(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_GRID, "grid = { length = [1.0, 2.0, 0.5]; };", 0),
               ORIGIN ":2:", "missing key grid.points", ">= 3", "nz = 1");
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 12, 10]; };", 0),
               ORIGIN ":2:", "missing key grid.length", "> 0");
    EXPECT_ERR(deck(L_MATERIAL, "material = { };", 0),
               ORIGIN ":3:", "missing key material.diffusivity", "a number");
    EXPECT_ERR(deck(L_INITIAL, "initial = { value = 20.0; };", 0),
               ORIGIN ":6:", "missing key initial.type",
               "\"constant\", \"gaussian\", \"sine\", \"file\"");
    EXPECT_ERR(deck(L_INITIAL, "initial = { type = \"constant\"; };", 0),
               ORIGIN ":6:", "missing key initial.value");
    EXPECT_ERRS(3, deck(L_INITIAL, "initial = { type = \"gaussian\"; };", 0),
                ORIGIN ":6:", "missing key initial.center", "missing key initial.width",
                "missing key initial.amplitude");
    EXPECT_ERRS(2, deck(L_INITIAL, "initial = { type = \"sine\"; };", 0),
                ORIGIN ":6:", "missing key initial.modes", "missing key initial.amplitude");
    EXPECT_ERR(deck(L_INITIAL, "initial = { type = \"file\"; };", 0),
               ORIGIN ":6:", "missing key initial.path");
    EXPECT_ERR(deck(L_STEADY, "steady = { check_every = 10; };", 0),
               ORIGIN ":5:", "missing key steady.tolerance");
    EXPECT_ERR(deck(L_X_LO, "  x_lo = { value = 1.0; };", 0),
               ORIGIN ":8:", "missing key boundary.x_lo.type",
               "\"dirichlet\", \"neumann\", \"periodic\"");
    EXPECT_ERR(deck(L_X_LO, "  x_lo = { type = \"dirichlet\"; };", 0),
               ORIGIN ":8:", "missing key boundary.x_lo.value");
}

static void test_missing_boundary_faces(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_Z_HI, "", 0), ORIGIN ":7:", "missing key boundary.z_hi", "dirichlet",
               "neumann", "periodic");
    const char *m = EXPECT_ERRS(2, deck(L_X_LO, "", L_Y_HI, "", 0), "missing key boundary.x_lo",
                                "missing key boundary.y_hi");
    assert_lacks(m, "boundary.x_hi");
    EXPECT_ERR(deck(L_X_LO, "  x_lo = 5;", 0), ORIGIN ":8:", "boundary.x_lo = 5",
               "expected a group");
}

/* ------------------------------------------------------------- ranges */

static void test_grid_points(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_GRID, "grid = { points = [2, 12, 10]; length = [1.0, 2.0, 0.5]; };", 0),
               ORIGIN ":2:", "grid.points[0] = 2", ">= 3");
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 0, 10]; length = [1.0, 2.0, 0.5]; };", 0),
               ORIGIN ":2:", "grid.points[1] = 0", ">= 3");
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 12, 2]; length = [1.0, 2.0, 0.5]; };", 0),
               ORIGIN ":2:", "grid.points[2] = 2", ">= 3", "nz = 1");
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 12, -5]; length = [1.0, 2.0, 0.5]; };", 0),
               ORIGIN ":2:", "grid.points[2] = -5", ">= 3");
    /* nx = 1 is not a 1D run. */
    EXPECT_ERR(deck(L_GRID, "grid = { points = [1, 12, 10]; length = [1.0, 2.0, 0.5]; };", 0),
               "grid.points[0] = 1", ">= 3");
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 12]; length = [1.0, 2.0, 0.5]; };", 0),
               ORIGIN ":2:", "grid.points = [16, 12]", "[nx, ny, nz]");
    EXPECT_ERR(deck(L_GRID, "grid = { points = 64; length = [1.0, 2.0, 0.5]; };", 0),
               ORIGIN ":2:", "grid.points = 64", "[nx, ny, nz]");
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 12, 10, 4]; length = [1.0, 2.0, 0.5]; };", 0),
               "grid.points = [16, 12, 10, 4]", "[nx, ny, nz]");
}

static void test_grid_points_types(void **state)
{
    (void)state;
    /* A fraction is not a point count. */
    EXPECT_ERR(
        deck(L_GRID, "grid = { points = [64.5, 64.0, 64.0]; length = [1.0, 2.0, 0.5]; };", 0),
        ORIGIN ":2:", "grid.points[0] = 64.5", "expected an integer");
    EXPECT_ERR(deck(L_GRID, "grid = { points = (64, 64.5, 64); length = [1.0, 2.0, 0.5]; };", 0),
               ORIGIN ":2:", "grid.points[1] = 64.5", "expected an integer");
    EXPECT_ERRS(
        3, deck(L_GRID, "grid = { points = [\"a\", \"b\", \"c\"]; length = [1.0, 2.0, 0.5]; };", 0),
        "grid.points[0] = \"a\"", "expected an integer", "a string");
    /* Integral floats are integers. */
    heat_case c;
    load_ok(deck(L_GRID, "grid = { points = [16.0, 1.2e1, 1e1]; length = [1.0, 2.0, 0.5]; };", 0),
            NULL, 0, &c, NULL, NULL);
    assert_int_equal(c.grid.n[0], 16);
    assert_int_equal(c.grid.n[1], 12);
    assert_int_equal(c.grid.n[2], 10);
}

static void test_grid_2d(void **state)
{
    (void)state;
    heat_case c;
    char *notes = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&notes, &len);
    assert_non_null(f);
    load_ok(deck(L_GRID, "grid = { points = [16, 12, 1]; length = [1.0, 2.0, 0.5]; };", 0), NULL, 0,
            &c, NULL, f);
    fclose(f);
    assert_int_equal(c.grid.dims, 2);
    assert_int_equal(c.grid.n[2], 1);
    derive_ok(&c);
    assert_int_equal(c.d.points, 16 * 12);
    /* The z faces of the base deck are ignored, with a notice each. */
    assert_has(notes, "boundary.z_lo");
    assert_has(notes, "boundary.z_hi");
    assert_has(notes, "ignored");
    assert_has(notes, "nz = 1");
    assert_int_equal(count_lines(notes), 2);
    free(notes);
}

static void test_grid_length_and_origin(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 12, 10]; length = [0.0, 2.0, 0.5]; };", 0),
               ORIGIN ":2:", "grid.length[0] = 0.0", "> 0");
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 12, 10]; length = [1.0, -2.0, 0.5]; };", 0),
               ORIGIN ":2:", "grid.length[1] = -2.0", "> 0");
    /* Lz must be > 0 in 2D too. */
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 12, 1]; length = [1.0, 2.0, 0.0]; };", 0),
               ORIGIN ":2:", "grid.length[2] = 0.0", "> 0");
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 12, 10]; length = [1.0, 2.0]; };", 0),
               ORIGIN ":2:", "grid.length = [1.0, 2.0]", "[Lx, Ly, Lz]");
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 12, 10]; length = 1.0; };", 0),
               ORIGIN ":2:", "grid.length = 1.0", "[Lx, Ly, Lz]");
    EXPECT_ERR(deck(L_GRID,
                    "grid = { points = [16, 12, 10]; length = [1.0, 2.0, 0.5]; origin = [0.0, "
                    "0.0]; };",
                    0),
               ORIGIN ":2:", "grid.origin = [0.0, 0.0]", "three numbers");
    EXPECT_ERR(deck(L_GRID, "grid = { points = [16, 12, 10]; length = (1.0, \"2\", 0.5); };", 0),
               ORIGIN ":2:", "grid.length[1] = \"2\"", "expected a number", "a string");
    EXPECT_ERR(deck(L_GRID, "grid = 5;", 0), ORIGIN ":2:", "grid = 5", "expected a group");
}

static void test_material_ranges(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_MATERIAL, "material = { diffusivity = 0.0; };", 0),
               ORIGIN ":3:", "material.diffusivity = 0.0", "> 0");
    EXPECT_ERR(deck(L_MATERIAL, "material = { diffusivity = -1.0e-4; };", 0),
               ORIGIN ":3:", "material.diffusivity = -0.0001", "> 0");
    EXPECT_ERR(deck(L_MATERIAL, "material = { diffusivity = \"fast\"; };", 0),
               ORIGIN ":3:", "material.diffusivity = \"fast\"", "expected a number", "a string");
    EXPECT_ERR(deck(L_MATERIAL, "material = { diffusivity = [1.0]; };", 0),
               ORIGIN ":3:", "material.diffusivity = [1.0]", "expected a number", "an array");
    heat_case c;
    load_ok(deck(L_MATERIAL, "material = { diffusivity = 2; };", 0), NULL, 0, &c, NULL, NULL);
    assert_true(c.alpha == 2.0); /* an integer is a number */
}

static void test_time_ranges(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_TIME, "time = { end = 0.0; max_steps = 10; };", 0),
               ORIGIN ":4:", "time.end = 0.0", "> 0");
    EXPECT_ERR(deck(L_TIME, "time = { end = -1.0; max_steps = 10; };", 0),
               ORIGIN ":4:", "time.end = -1.0", "> 0");
    EXPECT_ERR(deck(L_TIME, "time = { end = \"10\"; max_steps = 10; };", 0),
               ORIGIN ":4:", "time.end = \"10\"", "expected a number", "a string");
    EXPECT_ERR(deck(L_TIME, "time = { end = 1.0; max_steps = 0; };", 0),
               ORIGIN ":4:", "time.max_steps = 0", ">= 1");
    EXPECT_ERR(deck(L_TIME, "time = { end = 1.0; max_steps = -5; };", 0),
               ORIGIN ":4:", "time.max_steps = -5", ">= 1");
    EXPECT_ERR(deck(L_TIME, "time = { end = 1.0; max_steps = 10.5; };", 0),
               ORIGIN ":4:", "time.max_steps = 10.5", "expected an integer");
    EXPECT_ERR(deck(L_TIME, "time = { end = 1.0; max_steps = \"many\"; };", 0),
               ORIGIN ":4:", "time.max_steps = \"many\"", "expected an integer", "a string");
    EXPECT_ERR(deck(L_TIME, "time = { end = 1.0; dt = 0.0; };", 0), ORIGIN ":4:", "time.dt = 0.0",
               "> 0");
    EXPECT_ERR(deck(L_TIME, "time = { end = 1.0; dt = -1.0e-3; };", 0),
               ORIGIN ":4:", "time.dt = -0.001", "> 0");
    EXPECT_ERR(deck(L_TIME, "time = { end = 1.0; safety = 0.0; };", 0),
               ORIGIN ":4:", "time.safety = 0.0", "(0, 1]");
    EXPECT_ERR(deck(L_TIME, "time = { end = 1.0; safety = 1.5; };", 0),
               ORIGIN ":4:", "time.safety = 1.5", "(0, 1]");
    EXPECT_ERR(deck(L_TIME, "time = { end = 1.0; safety = -0.5; };", 0),
               ORIGIN ":4:", "time.safety = -0.5", "(0, 1]");
    EXPECT_ERRS(2, deck(L_TIME, "time = 10.0;", 0), ORIGIN ":4:", "time = 10.0", "expected a group",
                "nothing would stop");
    /* a number beyond the doubles reads as inf: the message says why */
    EXPECT_ERR(deck(L_TIME, "time = { end = 1e400; };", 0), ORIGIN ":4:", "time.end = inf",
               "expected a finite number (one beyond +-1.8e308 reads as inf)");
}

/* time.end may take at most 9e15 steps: the refusal says the limit and what
 * to change. */
static void test_time_end_step_limit(void **state)
{
    (void)state;
    heat_case c;
    heat_error err;
    load_ok(deck(L_TIME, "time = { end = 1e17; max_steps = 5; };", 0), NULL, 0, &c, NULL, NULL);
    assert_int_equal(heat_case_derive(&c, &err), HEAT_EINPUT);
    assert_has(err.msg, "time.end = 1e+17 needs ");
    assert_has(err.msg, "too many (at most 9e+15 steps may reach time.end)");
    assert_has(err.msg, "use a smaller time.end, or a larger time.dt (explicit steps take at most "
                        "dt_max = ");
    /* Implicit steps take any dt. */
    load_ok(deck(L_TIME, "time = { end = 1e15; dt = 1e-3; scheme = \"backward_euler\"; };", 0),
            NULL, 0, &c, NULL, NULL);
    assert_int_equal(heat_case_derive(&c, &err), HEAT_EINPUT);
    assert_has(err.msg, "too many (at most 9e+15 steps may reach time.end)");
    assert_has(err.msg, "use a larger time.dt or a smaller time.end");
    assert_lacks(err.msg, "dt_max");
    /* Within the limit it derives. */
    load_ok(deck(L_TIME, "time = { end = 1e3; dt = 1e-3; scheme = \"backward_euler\"; };", 0), NULL,
            0, &c, NULL, NULL);
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 1000000);
}

static void test_time_accepted(void **state)
{
    (void)state;
    heat_case c;
    /* An integral float is an integer: max_steps = 1e5. */
    load_ok(deck(L_TIME, "time = { max_steps = 1e5; };", 0), NULL, 0, &c, NULL, NULL);
    assert_true(c.time.has_max_steps);
    assert_int_equal(c.time.max_steps, 100000);
    assert_false(c.time.has_end);
    /* A step count beyond 32 bits. */
    load_ok(deck(L_TIME, "time = { max_steps = 10000000000L; };", 0), NULL, 0, &c, NULL, NULL);
    assert_true(c.time.max_steps == INT64_C(10000000000));
    /* safety = 1 (an integer) is the upper end of (0, 1]. */
    load_ok(deck(L_TIME, "time = { end = 2; safety = 1; };", 0), NULL, 0, &c, NULL, NULL);
    assert_true(c.time.safety == 1.0);
    assert_true(c.time.end == 2.0);
    /* Steady alone stops a run. */
    load_ok(deck(L_TIME, "", L_STEADY, "steady = { tolerance = 1e-3; };", 0), NULL, 0, &c, NULL,
            NULL);
    assert_false(c.time.has_end);
    assert_false(c.time.has_max_steps);
    assert_true(c.steady.enabled && c.steady.tolerance == 1e-3);
    assert_int_equal(c.steady.check_every, 100);
}

static void test_steady_ranges(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_STEADY, "steady = { tolerance = 0.0; };", 0),
               ORIGIN ":5:", "steady.tolerance = 0.0", "> 0");
    EXPECT_ERR(deck(L_STEADY, "steady = { tolerance = -1.0e-6; };", 0),
               ORIGIN ":5:", "steady.tolerance = -1e-06", "> 0");
    EXPECT_ERR(deck(L_STEADY, "steady = { tolerance = 1.0e-6; check_every = 0; };", 0),
               ORIGIN ":5:", "steady.check_every = 0", ">= 1");
    EXPECT_ERR(deck(L_STEADY, "steady = { tolerance = 1.0e-6; check_every = 2.5; };", 0),
               ORIGIN ":5:", "steady.check_every = 2.5", "expected an integer");
    EXPECT_ERR(deck(L_STEADY, "steady = { tolerance = \"tight\"; };", 0),
               ORIGIN ":5:", "steady.tolerance = \"tight\"", "expected a number");
}

static void test_output_ranges(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_OUTPUT, "output = { every = -1; };", 0), ORIGIN ":15:", "output.every = -1",
               ">= 0");
    EXPECT_ERR(deck(L_OUTPUT, "output = { checkpoint_every = -10; };", 0),
               ORIGIN ":15:", "output.checkpoint_every = -10", ">= 0");
    EXPECT_ERR(deck(L_OUTPUT, "output = { keep_checkpoints = 0; };", 0),
               ORIGIN ":15:", "output.keep_checkpoints = 0", "1 to 1000");
    EXPECT_ERR(deck(L_OUTPUT, "output = { keep_checkpoints = 1001; };", 0),
               ORIGIN ":15:", "output.keep_checkpoints = 1001", "1 to 1000");
    EXPECT_ERR(deck(L_OUTPUT, "output = { dir = \"\"; };", 0), ORIGIN ":15:", "output.dir = \"\"",
               "directory");
    EXPECT_ERR(deck(L_OUTPUT, "output = { dir = 3; };", 0), ORIGIN ":15:", "output.dir = 3",
               "expected a string");
    EXPECT_ERR(deck(L_OUTPUT, "output = { every = 1.5; };", 0), ORIGIN ":15:", "output.every = 1.5",
               "expected an integer");
    EXPECT_ERR(deck(L_OUTPUT, "output = { compress = 10; };", 0),
               ORIGIN ":15:", "output.compress = 10", "0 (off) to 9");
    EXPECT_ERR(deck(L_OUTPUT, "output = { compress = -1; };", 0),
               ORIGIN ":15:", "output.compress = -1", "0 (off) to 9");
    EXPECT_ERR(deck(L_OUTPUT, "output = { compress = 1.5; };", 0),
               ORIGIN ":15:", "output.compress = 1.5", "expected an integer");
    EXPECT_ERR(deck(L_OUTPUT, "output = { compress = true; };", 0),
               ORIGIN ":15:", "output.compress = true", "expected an integer");
    EXPECT_ERR(deck(L_OUTPUT, "output = { checkpoint_wall = -5; };", 0),
               ORIGIN ":15:", "output.checkpoint_wall = -5", "seconds >= 0");
    EXPECT_ERR(deck(L_OUTPUT, "output = { checkpoint_wall = \"1h\"; };", 0),
               ORIGIN ":15:", "output.checkpoint_wall = \"1h\"", "expected a number");
    EXPECT_ERR(deck(L_OUTPUT, "output = { checkpoint_wal = 60; };", 0),
               ORIGIN ":15:", "unknown key output.checkpoint_wal", "did you mean checkpoint_wall?");
    heat_case c;
    load_ok(deck(L_OUTPUT,
                 "output = { every = 0; checkpoint_every = 0; keep_checkpoints = 1000; };", 0),
            NULL, 0, &c, NULL, NULL);
    assert_int_equal(c.output.every, 0);
    assert_int_equal(c.output.keep_checkpoints, 1000);
    /* the new keys: off by default, accepted over their range */
    assert_int_equal(c.output.compress, 0);
    assert_true(c.output.checkpoint_wall == 0.0);
    load_ok(deck(L_OUTPUT, "output = { compress = 9; checkpoint_wall = 1800; };", 0), NULL, 0, &c,
            NULL, NULL);
    assert_int_equal(c.output.compress, 9);
    assert_true(c.output.checkpoint_wall == 1800.0);
    load_ok(deck(L_OUTPUT, "output = { compress = 0; checkpoint_wall = 0.25; };", 0), NULL, 0, &c,
            NULL, NULL);
    assert_int_equal(c.output.compress, 0);
    assert_true(c.output.checkpoint_wall == 0.25);
}

/* -------------------------------------------------------------- enums */

static void test_solver_enums(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_SOLVER, "solver = { precision = \"quad\"; };", 0),
               ORIGIN ":16:", "solver.precision = \"quad\"", "\"double\", \"float\"");
    EXPECT_ERR(deck(L_SOLVER, "solver = { backend = \"gpu\"; };", 0),
               ORIGIN ":16:", "solver.backend = \"gpu\"", "\"auto\", \"cpu\", \"cuda\"");
    EXPECT_ERR(deck(L_SOLVER, "solver = { kernel = \"fast\"; };", 0),
               ORIGIN ":16:", "solver.kernel = \"fast\"",
               "\"naive\", \"tiled\", \"sliced\", \"register_tiled\"");
    EXPECT_ERR(deck(L_SOLVER, "solver = { precision = 64; };", 0),
               ORIGIN ":16:", "solver.precision = 64", "expected a string");
    /* Case matters. */
    EXPECT_ERR(deck(L_SOLVER, "solver = { precision = \"Double\"; };", 0),
               ORIGIN ":16:", "solver.precision = \"Double\"", "\"double\", \"float\"");
    heat_case c;
    load_ok(deck(L_SOLVER, "solver = { backend = \"cuda\"; kernel = \"naive\"; };", 0), NULL, 0, &c,
            NULL, NULL);
    assert_int_equal(c.solver.backend, HEAT_BACKEND_CUDA);
    assert_int_equal(c.solver.kernel, HEAT_KERNEL_NAIVE);
    assert_int_equal(c.solver.precision, HEAT_DOUBLE);
    load_ok(deck(L_SOLVER, "solver = { kernel = \"tiled\"; };", 0), NULL, 0, &c, NULL, NULL);
    assert_int_equal(c.solver.kernel, HEAT_KERNEL_TILED);
}

static void test_temporal_block(void **state)
{
    (void)state;
    /* The message names the key, the value and what is allowed, a non-integer included. */
    EXPECT_ERR(deck(L_SOLVER, "solver = { temporal_block = 0; };", 0),
               ORIGIN ":16:", "solver.temporal_block = 0", "expected an integer from 1 to 8",
               "register_tiled");
    EXPECT_ERR(deck(L_SOLVER, "solver = { temporal_block = -2; };", 0),
               ORIGIN ":16:", "solver.temporal_block = -2", "1 to 8");
    EXPECT_ERR(deck(L_SOLVER, "solver = { temporal_block = 9; };", 0),
               ORIGIN ":16:", "solver.temporal_block = 9", "1 to 8");
    EXPECT_ERR(deck(L_SOLVER, "solver = { temporal_block = 2.5; };", 0),
               ORIGIN ":16:", "solver.temporal_block = 2.5", "expected an integer from 1 to 8");
    EXPECT_ERR(deck(L_SOLVER, "solver = { temporal_block = \"4\"; };", 0),
               ORIGIN ":16:", "solver.temporal_block = \"4\"", "1 to 8");
    heat_case c;
    load_ok(deck(L_SOLVER, "solver = { temporal_block = 8; };", 0), NULL, 0, &c, NULL, NULL);
    assert_int_equal(c.solver.temporal_block, 8);
    load_ok(deck(L_SOLVER, "solver = { temporal_block = 1; };", 0), NULL, 0, &c, NULL, NULL);
    assert_int_equal(c.solver.temporal_block, 1);
    /* An integral float is an integer, as for every other integer key. */
    load_ok(deck(L_SOLVER, "solver = { temporal_block = 6.0; };", 0), NULL, 0, &c, NULL, NULL);
    assert_int_equal(c.solver.temporal_block, 6);
}

static void test_initial_type_and_keys(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_INITIAL, "initial = { type = \"random\"; };", 0),
               ORIGIN ":6:", "initial.type = \"random\"",
               "\"constant\", \"gaussian\", \"sine\", \"file\"");
    /* A key of another type is named, with the keys the type allows. */
    EXPECT_ERR(deck(L_INITIAL, "initial = { type = \"constant\"; value = 1.0; width = 0.1; };", 0),
               ORIGIN ":6:", "unknown key initial.width", "for type \"constant\"", "type, value");
    EXPECT_ERR(deck(L_INITIAL,
                    "initial = { type = \"sine\"; modes = [1.0, 1.0, 1.0]; amplitude = 1.0; "
                    "center = [0.0, 0.0, 0.0]; };",
                    0),
               ORIGIN ":6:", "unknown key initial.center", "for type \"sine\"",
               "type, modes, amplitude");
    EXPECT_ERR(deck(L_INITIAL,
                    "initial = { type = \"gaussian\"; center = [0.5, 0.5, 0.5]; width = 0.1; "
                    "amplitude = 1.0; value = 3.0; };",
                    0),
               ORIGIN ":6:", "unknown key initial.value", "for type \"gaussian\"");
    EXPECT_ERR(deck(L_INITIAL,
                    "initial = { type = \"gaussian\"; center = [0.5, 0.5, 0.5]; width = 0.0; "
                    "amplitude = 1.0; };",
                    0),
               ORIGIN ":6:", "initial.width = 0.0", "> 0");
    EXPECT_ERR(deck(L_INITIAL,
                    "initial = { type = \"gaussian\"; center = [0.5, 0.5]; width = 0.1; "
                    "amplitude = 1.0; };",
                    0),
               ORIGIN ":6:", "initial.center = [0.5, 0.5]", "three numbers");
    EXPECT_ERR(deck(L_INITIAL,
                    "initial = { type = \"sine\"; modes = [1.0, -2.0, 0.0]; amplitude = 1.0; };",
                    0),
               ORIGIN ":6:", "initial.modes[1] = -2.0", ">= 0");
    EXPECT_ERR(deck(L_INITIAL, "initial = { type = \"constant\"; value = \"warm\"; };", 0),
               ORIGIN ":6:", "initial.value = \"warm\"", "expected a number");
    EXPECT_ERR(deck(L_INITIAL, "initial = { type = 3; value = 1.0; };", 0),
               ORIGIN ":6:", "initial.type = 3", "expected a string");
}

static void test_initial_file(void **state)
{
    (void)state;
    char dir[4096], path[4200], line[4400];
    snprintf(dir, sizeof dir, "%s", test_scratch_dir("initial_file"));
    snprintf(path, sizeof path, "%s/no_such_snapshot.h5", dir);
    snprintf(line, sizeof line, "initial = { type = \"file\"; path = \"%s\"; };", path);
    EXPECT_ERR(deck(L_INITIAL, line, 0), ORIGIN ":6:", "initial.path", path, "cannot read");
    EXPECT_ERR(deck(L_INITIAL, "initial = { type = \"file\"; path = \"\"; };", 0),
               ORIGIN ":6:", "initial.path = \"\"");
    EXPECT_ERRS(2,
                deck(L_INITIAL, "initial = { type = \"file\"; path = \"x.h5\"; value = 1.0; };", 0),
                "unknown key initial.value", "for type \"file\"", "initial.path = \"x.h5\"");
    /* A readable file is accepted and its path kept. */
    test_write_file(path, "not really a snapshot\n");
    heat_case c;
    load_ok(deck(L_INITIAL, line, 0), NULL, 0, &c, NULL, NULL);
    assert_int_equal(c.initial.type, HEAT_INIT_FILE);
    assert_string_equal(c.initial.path, path);
}

/* ----------------------------------------------------------- boundary */

static void test_boundary_types(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_X_LO, "  x_lo = { type = \"robin\"; value = 1.0; };", 0),
               ORIGIN ":8:", "boundary.x_lo.type = \"robin\"",
               "\"dirichlet\", \"neumann\", \"periodic\"");
    EXPECT_ERR(deck(L_X_LO, "  x_lo = { type = \"dirichlet\"; value = 1.0; gradient = 0.0; };", 0),
               ORIGIN ":8:", "unknown key boundary.x_lo.gradient", "for type \"dirichlet\"");
    EXPECT_ERR(deck(L_X_HI, "  x_hi = { type = \"neumann\"; value = 1.0; };", 0),
               ORIGIN ":9:", "unknown key boundary.x_hi.value", "for type \"neumann\"",
               "type, gradient");
    EXPECT_ERR(deck(L_Y_LO, "  y_lo = { type = \"periodic\"; value = 1.0; };", 0),
               ORIGIN ":10:", "unknown key boundary.y_lo.value", "for type \"periodic\"");
    EXPECT_ERR(deck(L_X_LO, "  x_lo = { type = \"dirichlet\"; value = \"hot\"; };", 0),
               ORIGIN ":8:", "boundary.x_lo.value = \"hot\"", "expected a number");
    EXPECT_ERR(deck(L_X_HI, "  x_hi = { type = \"neumann\"; gradient = [0.0]; };", 0),
               ORIGIN ":9:", "boundary.x_hi.gradient = [0.0]", "expected a number");
}

/* In float precision every deck value that sets a temperature must be a
 * float (|v| <= FLT_MAX), or the field would start as Inf: refused with the
 * key, the value and the range. */
static void test_float_range(void **state)
{
    (void)state;
    const char *fl = "solver = { precision = \"float\"; };";
    const char *range = "beyond the range of solver.precision = \"float\" (|value| <= "
                        "3.40282347e+38): use a smaller value, or solver.precision = \"double\"";
    EXPECT_ERR(deck(L_X_LO, "  x_lo = { type = \"dirichlet\"; value = 1e39; };", L_SOLVER, fl, 0),
               ORIGIN ":8:", "boundary.x_lo.value = 1e+39", range);
    EXPECT_ERR(deck(L_Z_HI, "  z_hi = { type = \"dirichlet\"; value = -1e39; };", L_SOLVER, fl, 0),
               ORIGIN ":13:", "boundary.z_hi.value = -1e+39", range);
    EXPECT_ERR(
        deck(L_INITIAL, "initial = { type = \"constant\"; value = 1e308; };", L_SOLVER, fl, 0),
        ORIGIN ":6:", "initial.value = 1e+308", range);
    EXPECT_ERR(deck(L_INITIAL,
                    "initial = { type = \"sine\"; modes = [1.0, 1.0, 1.0]; amplitude = -4e38; };",
                    L_SOLVER, fl, 0),
               ORIGIN ":6:", "initial.amplitude = -4e+38", range);
    EXPECT_ERR(deck(L_INITIAL,
                    "initial = { type = \"gaussian\"; center = [0.5, 1.0, 0.25]; width = 0.1; "
                    "amplitude = 1.0; base = 1e39; };",
                    L_SOLVER, fl, 0),
               ORIGIN ":6:", "initial.base = 1e+39", range);
    /* The blob's peak, base + amplitude, is a value of the field too. */
    EXPECT_ERR(deck(L_INITIAL,
                    "initial = { type = \"gaussian\"; center = [0.5, 1.0, 0.25]; width = 0.1; "
                    "amplitude = 3e38; base = 3e38; };",
                    L_SOLVER, fl, 0),
               ORIGIN ":6:", "initial.amplitude = 3e+38", "base + amplitude = 6e+38", range);
    EXPECT_ERR(deck(L_MATERIAL,
                    "material = { conductivity = 1.0; density = 1.0; specific_heat = "
                    "1.0; };",
                    L_X_HI, "  x_hi = { type = \"convective\"; h = 1.0; ambient = 1e300; };",
                    L_SOLVER, fl, 0),
               ORIGIN ":9:", "boundary.x_hi.ambient = 1e+300", range);

    /* In range, or in double precision: accepted. */
    heat_case c;
    load_ok(deck(L_X_LO, "  x_lo = { type = \"dirichlet\"; value = 3.4028234663852886e38; };",
                 L_INITIAL, "initial = { type = \"constant\"; value = -3e38; };", L_SOLVER, fl, 0),
            NULL, 0, &c, NULL, NULL);
    load_ok(deck(L_INITIAL,
                 "initial = { type = \"gaussian\"; center = [0.5, 1.0, 0.25]; width = 0.1; "
                 "amplitude = -3e38; base = 3e38; };",
                 L_SOLVER, fl, 0),
            NULL, 0, &c, NULL, NULL);
    load_ok(deck(L_X_LO, "  x_lo = { type = \"dirichlet\"; value = 1e39; };", L_INITIAL,
                 "initial = { type = \"constant\"; value = 1e308; };", 0),
            NULL, 0, &c, NULL, NULL);
    /* Values that are no temperatures (a Neumann gradient) are not held to it. */
    load_ok(deck(L_X_HI, "  x_hi = { type = \"neumann\"; gradient = 1e39; };", L_SOLVER, fl, 0),
            NULL, 0, &c, NULL, NULL);
}

static void test_periodic_pairs(void **state)
{
    (void)state;
    EXPECT_ERR(deck(L_Y_HI, "  y_hi = { type = \"neumann\"; };", 0),
               ORIGIN ":10:", "boundary.y_lo.type = \"periodic\"", "pairs",
               "boundary.y_hi is \"neumann\"");
    EXPECT_ERR(deck(L_X_HI, "  x_hi = { type = \"periodic\"; };", 0),
               ORIGIN ":9:", "boundary.x_hi.type = \"periodic\"", "pairs",
               "boundary.x_lo is \"dirichlet\"");
    EXPECT_ERR(deck(L_Z_LO, "  z_lo = { type = \"periodic\"; };", 0),
               ORIGIN ":12:", "boundary.z_lo.type = \"periodic\"", "pairs",
               "boundary.z_hi is \"dirichlet\"");
    /* Both faces of every axis periodic is fine. */
    heat_case c;
    load_ok(deck(L_X_LO, "  x_lo = { type = \"periodic\"; };", L_X_HI,
                 "  x_hi = { type = \"periodic\"; };", L_Z_LO, "  z_lo = { type = \"periodic\"; };",
                 L_Z_HI, "  z_hi = { type = \"periodic\"; };", 0),
            NULL, 0, &c, NULL, NULL);
    for (int f = 0; f < HEAT_NFACES; f++) assert_int_equal(c.bc[f].type, HEAT_BC_PERIODIC);
}

static void test_2d_z_faces(void **state)
{
    (void)state;
    heat_case c;
    char *notes = NULL;
    size_t len = 0;
    FILE *f = tmpfile();
    assert_non_null(f);
    /* In 2D the z faces are not checked: a lone periodic face, an unknown
     * type, both are ignored (with a notice), not errors. */
    load_ok(deck(L_GRID, "grid = { points = [16, 12, 1]; length = [1.0, 2.0, 0.5]; };", L_Z_LO,
                 "  z_lo = { type = \"periodic\"; };", L_Z_HI, "  z_hi = { type = \"nonsense\"; };",
                 0),
            NULL, 0, &c, NULL, f);
    assert_int_equal(c.grid.dims, 2);
    rewind(f);
    char buf[1024];
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    buf[k] = '\0';
    fclose(f);
    assert_has(buf, "boundary.z_lo is ignored");
    assert_has(buf, "boundary.z_hi is ignored");

    /* No z faces in 2D: no notice. */
    f = open_memstream(&notes, &len);
    assert_non_null(f);
    load_ok(deck(L_GRID, "grid = { points = [16, 12, 1]; length = [1.0, 2.0, 0.5]; };", L_Z_LO, "",
                 L_Z_HI, "", 0),
            NULL, 0, &c, NULL, f);
    fclose(f);
    assert_string_equal(notes, "");
    free(notes);

    /* In 3D the z faces are required and no notice is written. */
    notes = NULL;
    f = open_memstream(&notes, &len);
    load_ok(deck(0), NULL, 0, &c, NULL, f);
    fclose(f);
    assert_string_equal(notes, "");
    free(notes);
    EXPECT_ERRS(2, deck(L_Z_LO, "", L_Z_HI, "", 0), "missing key boundary.z_lo",
                "missing key boundary.z_hi");

    /* A NULL notices stream is allowed. */
    load_ok(deck(L_GRID, "grid = { points = [16, 12, 1]; length = [1.0, 2.0, 0.5]; };", 0), NULL, 0,
            &c, NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base_deck_fields),
        cmocka_unit_test(test_full_deck_fields),
        cmocka_unit_test(test_initial_types_parsed),
        cmocka_unit_test(test_default_deck_loads_and_derives),
        cmocka_unit_test(test_default_name_from_file),
        cmocka_unit_test(test_bad_name),
        cmocka_unit_test(test_missing_sections),
        cmocka_unit_test(test_missing_boundary_section),
        cmocka_unit_test(test_missing_required_keys),
        cmocka_unit_test(test_missing_boundary_faces),
        cmocka_unit_test(test_grid_points),
        cmocka_unit_test(test_grid_points_types),
        cmocka_unit_test(test_grid_2d),
        cmocka_unit_test(test_grid_length_and_origin),
        cmocka_unit_test(test_material_ranges),
        cmocka_unit_test(test_time_ranges),
        cmocka_unit_test(test_time_end_step_limit),
        cmocka_unit_test(test_time_accepted),
        cmocka_unit_test(test_steady_ranges),
        cmocka_unit_test(test_output_ranges),
        cmocka_unit_test(test_solver_enums),
        cmocka_unit_test(test_temporal_block),
        cmocka_unit_test(test_initial_type_and_keys),
        cmocka_unit_test(test_initial_file),
        cmocka_unit_test(test_boundary_types),
        cmocka_unit_test(test_float_range),
        cmocka_unit_test(test_periodic_pairs),
        cmocka_unit_test(test_2d_z_faces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
