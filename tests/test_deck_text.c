/* Tests of the input deck's text (input/deck.h): unknown keys, syntax
 * errors and their file:line, --set overrides and their messages, and the
 * canonical text round trip. The rest of the deck contract: test_deck.c. */
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

/* One problem from the base deck with the overrides in the array `sets`. */
#define EXPECT_SET_ERR(sets, ...)                                                                  \
    expect_err(deck(0), (sets), (int)(sizeof(sets) / sizeof *(sets)), 1, NEEDLES(__VA_ARGS__))

/* Loads `text` with the overrides, reloads its canonical text (no overrides,
 * origin `reorigin`) and asserts the two derived cases are identical. */
static void assert_round_trip(const char *text, const char *const *sets, int nsets,
                              const char *reorigin, heat_case *first)
{
    char *canon = NULL;
    load_ok(text, sets, nsets, first, &canon, NULL);
    assert_non_null(canon);
    derive_ok(first);
    heat_case again;
    heat_error err;
    memset(&again, 0, sizeof again);
    int rc = heat_deck_load_string(canon, reorigin, NULL, 0, &again, NULL, NULL, &err);
    if (rc != HEAT_OK) fail_msg("canonical text does not load (%s):\n%s", err.msg, canon);
    derive_ok(&again);
    assert_case_equal(first, &again);
    /* The canonical text is a fixed point. */
    char *canon2 = NULL;
    load_ok(canon, NULL, 0, &again, &canon2, NULL);
    assert_string_equal(canon, canon2);
    free(canon);
    free(canon2);
}

/* -------------------------------------------------------- unknown keys */

static void test_unknown_keys(void **state)
{
    (void)state;
    const char *m;
    m = EXPECT_ERR(deck(L_STEADY, "gird = { points = [3, 3, 3]; };", 0),
                   ORIGIN ":5:", "unknown key gird", "did you mean grid?", "name, grid, material");
    (void)m;
    EXPECT_ERR(deck(L_TIME, "time = { end = 1.0; ned = 2.0; };", 0),
               ORIGIN ":4:", "unknown key time.ned", "end, max_steps, dt, safety",
               "did you mean end?");
    EXPECT_ERR(deck(L_GRID,
                    "grid = { points = [16, 12, 10]; length = [1.0, 2.0, 0.5]; orign = [0.0, 0.0, "
                    "0.0]; };",
                    0),
               ORIGIN ":2:", "unknown key grid.orign", "did you mean origin?");
    EXPECT_ERR(deck(L_MATERIAL, "material = { diffusivity = 1.0; viscosity = 2.0; };", 0),
               ORIGIN ":3:", "unknown key material.viscosity", "diffusivity");
    EXPECT_ERR(deck(L_OUTPUT, "output = { evry = 10; };", 0),
               ORIGIN ":15:", "unknown key output.evry", "did you mean every?");
    EXPECT_ERR(deck(L_SOLVER, "solver = { precison = \"float\"; };", 0),
               ORIGIN ":16:", "unknown key solver.precison", "did you mean precision?");
    EXPECT_ERR(deck(L_STEADY, "steady = { tolerance = 1.0; check = 5; };", 0),
               ORIGIN ":5:", "unknown key steady.check");
    EXPECT_ERR(deck(L_BOUNDARY_END, "  x_low = { type = \"periodic\"; }; };", 0),
               ORIGIN ":14:", "unknown key boundary.x_low", "did you mean x_lo?");
    /* Far from every key: no suggestion. */
    m = EXPECT_ERR(deck(L_STEADY, "zzzzzzzz = 1;", 0), ORIGIN ":5:", "unknown key zzzzzzzz");
    assert_lacks(m, "did you mean");
}

static void test_several_errors_together(void **state)
{
    (void)state;
    const char *m = EXPECT_ERRS(
        5,
        deck(L_GRID, "grid = { points = [2, 12, 10]; length = [1.0, 2.0, 0.5]; };", L_MATERIAL,
             "material = { diffusivity = -1.0; };", L_TIME, "time = { end = 1.0; ned = 2.0; };",
             L_Y_HI, "  y_hi = { type = \"neumann\"; };", L_SOLVER,
             "solver = { precision = \"quad\"; };", 0),
        ORIGIN ":2: grid.points[0] = 2", ORIGIN ":3: material.diffusivity = -1.0",
        ORIGIN ":4: unknown key time.ned", ORIGIN ":10: boundary.y_lo.type",
        ORIGIN ":16: solver.precision = \"quad\"");
    (void)m;
}

static void test_syntax_errors(void **state)
{
    (void)state;
    /* In memory: origin:line: message, what it likely means, and the line
     * itself (libconfig names neither key nor value). */
    EXPECT_ERRS(2, deck(L_MATERIAL, "material = { diffusivity = = 1.0e-4; };", 0),
                ORIGIN ":3: syntax error (on this line or just before it",
                "\n    material = { diffusivity = = 1.0e-4; };");
    /* at the end of the text: no line to show */
    EXPECT_ERR(deck(L_INITIAL, "initial = { type = \"constant\"; value = 20.0; ", 0), ORIGIN ":");
    /* libconfig arrays hold one type. */
    EXPECT_ERRS(2,
                deck(L_GRID, "grid = { points = [16, 12.0, 10]; length = [1.0, 2.0, 0.5]; };", 0),
                ORIGIN ":2: mismatched element type in array (an array's elements are all of one "
                       "type: write 1.0, not 1,",
                "\n    grid = { points = [16, 12.0, 10]; length = [1.0, 2.0, 0.5]; };");
    /* a key given twice: the line names it */
    EXPECT_ERRS(2, deck(L_TIME, "time = { max_steps = 20; max_steps = 30; };", 0),
                ORIGIN ":4: duplicate setting name (a key given twice in one group",
                "\n    time = { max_steps = 20; max_steps = 30; };");
    /* From a file: path:line: message. */
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s", test_scratch_dir("syntax"));
    snprintf(path, sizeof path, "%s/broken.cfg", dir);
    test_write_file(path, deck(L_TIME, "time = { end = ; };", 0));
    heat_case c;
    heat_error err;
    assert_int_equal(heat_deck_load(path, NULL, 0, &c, NULL, NULL, &err), HEAT_EINPUT);
    assert_int_equal(err.code, HEAT_EINPUT);
    char want[4300];
    snprintf(want, sizeof want, "%s:4: ", path);
    assert_has(err.msg, want);
    /* An @include of a file that is not there: the directive's line and the
     * file (libconfig names neither); one in a comment is no directive. */
    snprintf(path, sizeof path, "%s/includes.cfg", dir);
    test_write_file(path, deck(L_TIME, "time = { end = 1.0; };\n  @include \"nowhere.cfg\"", 0));
    assert_int_equal(heat_deck_load(path, NULL, 0, &c, NULL, NULL, &err), HEAT_EINPUT);
    snprintf(want, sizeof want, "%s:5: @include \"nowhere.cfg\": ", path);
    assert_has(err.msg, want);
    assert_has(err.msg, "/nowhere.cfg: cannot open the deck: No such file or directory");
    test_write_file(path, deck(L_TIME, "time = { end = 1.0; }; # @include \"nowhere.cfg\"", 0));
    assert_int_equal(heat_deck_load(path, NULL, 0, &c, NULL, NULL, &err), HEAT_OK);
    /* A missing deck file. */
    snprintf(path, sizeof path, "%s/absent.cfg", dir);
    assert_int_equal(heat_deck_load(path, NULL, 0, &c, NULL, NULL, &err), HEAT_EINPUT);
    assert_has(err.msg, path);
    assert_has(err.msg, "cannot open");
}

static void test_file_errors_name_file_and_line(void **state)
{
    (void)state;
    char dir[4096], path[4200], want[4400];
    snprintf(dir, sizeof dir, "%s", test_scratch_dir("file_lines"));
    snprintf(path, sizeof path, "%s/plate.cfg", dir);
    test_write_file(path,
                    deck(L_GRID, "grid = { points = [16, 12, 2]; length = [1.0, 2.0, 0.5]; };",
                         L_SOLVER, "solver = { kernal = \"tiled\"; };", 0));
    heat_case c;
    heat_error err;
    assert_int_equal(heat_deck_load(path, NULL, 0, &c, NULL, NULL, &err), HEAT_EINPUT);
    assert_int_equal(err.code, HEAT_EINPUT);
    snprintf(want, sizeof want, "%s:2: grid.points[2] = 2", path);
    assert_has(err.msg, want);
    snprintf(want, sizeof want, "%s:16: unknown key solver.kernal", path);
    assert_has(err.msg, want);
    assert_has(err.msg, "did you mean kernel?");
    assert_int_equal(count_lines(err.msg), 2);
}

/* ------------------------------------------------------------- --set */

static void test_set_values(void **state)
{
    (void)state;
    heat_case c;
    const char *quoted[] = {"solver.precision=\"float\""};
    load_ok(deck(0), quoted, 1, &c, NULL, NULL);
    assert_int_equal(c.solver.precision, HEAT_FLOAT);
    const char *bare[] = {"solver.precision=float"};
    load_ok(deck(0), bare, 1, &c, NULL, NULL);
    assert_int_equal(c.solver.precision, HEAT_FLOAT);

    const char *array[] = {"grid.points=[128,128,1]"};
    load_ok(deck(0), array, 1, &c, NULL, NULL);
    assert_int_equal(c.grid.n[0], 128);
    assert_int_equal(c.grid.n[1], 128);
    assert_int_equal(c.grid.n[2], 1);
    assert_int_equal(c.grid.dims, 2);

    /* A missing group is created. */
    const char *create[] = {"steady.tolerance=1e-3"};
    load_ok(deck(0), create, 1, &c, NULL, NULL);
    assert_true(c.steady.enabled);
    assert_true(c.steady.tolerance == 1e-3);
    const char *create2[] = {"output.every=7", "solver.temporal_block=3"};
    load_ok(deck(0), create2, 2, &c, NULL, NULL);
    assert_int_equal(c.output.every, 7);
    assert_int_equal(c.solver.temporal_block, 3);

    /* In order: the last one wins; spaces around '=' are allowed. */
    const char *order[] = {"time.end=1.0", "time.end = 2.5", "material.diffusivity=3"};
    load_ok(deck(0), order, 3, &c, NULL, NULL);
    assert_true(c.time.end == 2.5);
    assert_true(c.alpha == 3.0);

    /* Strings and names. */
    const char *strs[] = {"output.dir=\"runs/a b\"", "name=trial-2"};
    load_ok(deck(0), strs, 2, &c, NULL, NULL);
    assert_string_equal(c.output.dir, "runs/a b");
    assert_string_equal(c.name, "trial-2");
    /* A bare word is a string, a path included. */
    const char *bare_dir[] = {"output.dir=runs/p2"};
    load_ok(deck(0), bare_dir, 1, &c, NULL, NULL);
    assert_string_equal(c.output.dir, "runs/p2");
    /* Trailing slashes go, but "/" stays a directory. */
    const char *slashes[][2] = {{"output.dir=runs/p2/", "runs/p2"},
                                {"output.dir=\"runs/p2//\"", "runs/p2"},
                                {"output.dir=/", "/"},
                                {"output.dir=\"//\"", "/"}};
    for (int i = 0; i < 4; i++) {
        load_ok(deck(0), slashes[i], 1, &c, NULL, NULL);
        assert_string_equal(c.output.dir, slashes[i][1]);
    }

    /* A whole group. */
    const char *group[] = {"boundary.x_lo={ type = \"neumann\"; gradient = 2.0; }"};
    load_ok(deck(0), group, 1, &c, NULL, NULL);
    assert_int_equal(c.bc[HEAT_X_LO].type, HEAT_BC_NEUMANN);
    assert_true(c.bc[HEAT_X_LO].gradient == 2.0);

    /* max_steps = 1e5 through --set as well; a steady-only run. */
    const char *steps[] = {"time.max_steps=1e5"};
    load_ok(deck(L_TIME, "", 0), steps, 1, &c, NULL, NULL);
    assert_int_equal(c.time.max_steps, 100000);
}

/* An element of a list or array: name[i] (as the messages write it) or
 * name.[i] (libconfig's paths), at any depth. */
static void test_set_elements(void **state)
{
    (void)state;
    heat_case c;
    const char *pts[] = {"grid.points[2]=32", "grid.points.[0]=20", "grid.length[1]=2"};
    load_ok(deck(0), pts, 3, &c, NULL, NULL);
    assert_int_equal(c.grid.n[0], 20);
    assert_int_equal(c.grid.n[2], 32);
    assert_true(c.grid.length[1] == 2.0);

    static const char mats[] =
        "materials = ( { name = \"a\"; conductivity = 1.0; density = 1.0; specific_heat = 1.0; },"
        " { name = \"b\"; conductivity = 2.0; density = 3.0; specific_heat = 4.0; } );";
    const char *one[] = {"materials[1].conductivity=5.0", "materials.[0].name=c"};
    load_ok(deck(L_MATERIAL, mats, 0), one, 2, &c, NULL, NULL);
    assert_int_equal(c.materials.count, 2);
    assert_true(c.materials.m[1].k == 5.0);
    assert_true(c.materials.m[1].rho == 3.0);
    assert_string_equal(c.materials.m[0].name, "c");
    /* A whole element group: its keys replaced, not merged. */
    const char *whole[] = {"materials[0]={name=\"d\"; conductivity=7.0; density=1.0; "
                           "specific_heat=1.0;}"};
    load_ok(deck(L_MATERIAL, mats, 0), whole, 1, &c, NULL, NULL);
    assert_string_equal(c.materials.m[0].name, "d");
    assert_true(c.materials.m[0].k == 7.0);
    assert_true(c.materials.m[1].k == 2.0);

    /* Problems: an element that is not there, a part that is no list, a
     * value of another kind, an index that is no index, a list the deck
     * lacks; the deck's checks of a changed element say --set. */
    const char *range[] = {"grid.points[3]=4"};
    EXPECT_SET_ERR(range, "--set grid.points[3]: grid.points has 3 elements, [0] to [2]");
    const char *mrange[] = {"materials[2].density=1"};
    expect_err(deck(L_MATERIAL, mats, 0), mrange, 1, 1,
               NEEDLES("--set materials[2].density: materials has 2 elements, [0] to [1]"));
    const char *group[] = {"grid[0]=4"};
    EXPECT_SET_ERR(group, "--set grid[0]: grid is a group, not a list or an array");
    const char *scalar[] = {"grid.points[1][0]=4"};
    EXPECT_SET_ERR(scalar, "grid.points[1] is an integer, not a list or an array");
    /* Numbers into integers' places are judged as the whole array would be
     * (the array widened), large integers kept. */
    const char *frac[] = {"grid.points[0]=64.5"};
    EXPECT_SET_ERR(frac, "--set: grid.points[0] = 64.5: expected an integer");
    const char *big[] = {"grid.points[0]=5000000000000"};
    EXPECT_SET_ERR(big, "--set: grid.points[0] = 5000000000000", "at most 2^40");
    const char *whole_num[] = {"grid.points[1]=24.0"};
    load_ok(deck(0), whole_num, 1, &c, NULL, NULL);
    assert_int_equal(c.grid.n[1], 24);
    const char *kind[] = {"grid.points[0]=\"wide\""};
    EXPECT_SET_ERR(kind, "grid.points[0] is an integer and the value is a string",
                   "give the whole array");
    const char *first[] = {"[0]=1"};
    EXPECT_SET_ERR(first, "--set [0]: a key starts with a name (name[i]), not an element");
    const char *kind2[] = {"materials[0]=5"};
    expect_err(deck(L_MATERIAL, mats, 0), kind2, 1, 1,
               NEEDLES("materials[0] is a group and the value is an integer", "whole list"));
    const char *badidx[] = {"grid.points[-1]=4", "grid.points[x]=4", "grid.points[1]x=4"};
    expect_err(deck(0), badidx, 3, 3,
               NEEDLES("'points[-1]' is not a valid key name or element",
                       "'points[x]' is not a valid", "'points[1]x' is not a valid"));
    const char *nolist[] = {"sources[0].power=1"};
    EXPECT_SET_ERR(nolist, "--set sources[0].power: the deck has no sources to take an element "
                           "of: give the whole list (--set sources=(...))");
    const char *checked[] = {"grid.points[1]=2"};
    const char *m = EXPECT_SET_ERR(checked, "--set: grid.points[1] = 2", ">= 3");
    assert_lacks(m, ORIGIN ":");
}

static void test_set_syntax_errors(void **state)
{
    (void)state;
    const char *no_eq[] = {"time.end2.0"};
    EXPECT_SET_ERR(no_eq, "--set time.end2.0", "key=value");
    const char *empty[] = {"time.end="};
    EXPECT_SET_ERR(empty, "--set time.end=", "empty");
    const char *empty_key[] = {"=3"};
    EXPECT_SET_ERR(empty_key, "--set =3", "empty");
    const char *not_group[] = {"name.first=x"};
    EXPECT_SET_ERR(not_group, "--set name.first: name is a string, not a group");
    const char *scalar_parent[] = {"material.diffusivity.x=1"};
    EXPECT_SET_ERR(scalar_parent,
                   "--set material.diffusivity.x: material.diffusivity is a number, not a group");
    const char *bad_key[] = {"time.9=1"};
    EXPECT_SET_ERR(bad_key, "--set time.9", "'9'", "not a valid key");
    /* An empty part of a key (a dot at either end, or two in a row) is an
     * error, not merged away: time..end is not time.end. */
    const char *doubled[] = {"time..end=3"};
    EXPECT_SET_ERR(doubled, "--set time..end=3: the key time..end has an empty part",
                   "--set time.end=2.0");
    const char *leading[] = {".time.end=3"};
    EXPECT_SET_ERR(leading, "--set .time.end=3: the key .time.end has an empty part");
    const char *trailing[] = {"time.end.=3"};
    EXPECT_SET_ERR(trailing, "--set time.end.=3: the key time.end. has an empty part");
    const char *dot[] = {".=3"};
    EXPECT_SET_ERR(dot, "--set .=3: the key . has an empty part");
    /* A value that opens a string, array, list or group, or ends with ';',
     * is libconfig syntax: when it does not parse it is an error naming the
     * key, the value and the problem, not a string. */
    const char *open_quote[] = {"output.dir=\"runs/p2"};
    EXPECT_SET_ERR(open_quote, "--set output.dir=\"runs/p2: cannot read the value", "\"string\"");
    const char *open_array[] = {"output.dir=[1,2"};
    EXPECT_SET_ERR(open_array, "--set output.dir=[1,2: cannot read the value");
    const char *mixed[] = {"grid.points=[16,16.0,16]"};
    const char *mm = EXPECT_SET_ERR(mixed, "--set grid.points=[16,16.0,16]", "mismatched element",
                                    "[array] of one type");
    assert_lacks(mm, "\"[16,16.0,16]\"");
    const char *open_list[] = {"grid.points=(16,"};
    EXPECT_SET_ERR(open_list, "--set grid.points=(16,: cannot read the value");
    const char *open_group[] = {"steady={tolerance=1e-3"};
    EXPECT_SET_ERR(open_group, "--set steady={tolerance=1e-3: cannot read the value");
    const char *semicolon[] = {"time.end=2.0;"};
    EXPECT_SET_ERR(semicolon, "--set time.end=2.0;", "ends with ';'", "--set time.end=2.0");
    const char *word_semicolon[] = {"name=trial ;"};
    EXPECT_SET_ERR(word_semicolon, "--set name=trial ;", "ends with ';'", "--set name=trial");
    /* Several bad overrides are reported together. */
    const char *two[] = {"time.end", "solver="};
    expect_err(deck(0), two, 2, 2, NEEDLES("--set time.end:", "--set solver=:"));
}

static void test_set_validation_errors(void **state)
{
    (void)state;
    const char *neg[] = {"material.diffusivity=-1"};
    const char *m = EXPECT_SET_ERR(neg, "--set: material.diffusivity = -1", "> 0");
    assert_lacks(m, ORIGIN ":3");
    const char *prec[] = {"solver.precision=quad"};
    EXPECT_SET_ERR(prec, "--set: solver.precision = \"quad\"", "\"double\", \"float\"");
    const char *pts[] = {"grid.points=[128,2,1]"};
    EXPECT_SET_ERR(pts, "--set: grid.points[1] = 2", ">= 3");
    const char *pts_frac[] = {"grid.points=[64.5,64.0,64.0]"};
    EXPECT_SET_ERR(pts_frac, "--set: grid.points[0] = 64.5", "expected an integer");
    const char *typo[] = {"time.ned=3"};
    EXPECT_SET_ERR(typo, "--set: unknown key time.ned", "did you mean end?");
    const char *newgroup[] = {"steady.check_every=5"};
    EXPECT_SET_ERR(newgroup, "--set: missing key steady.tolerance");
    const char *safety[] = {"time.safety=1.5"};
    EXPECT_SET_ERR(safety, "--set: time.safety = 1.5", "(0, 1]");
    const char *tb[] = {"solver.temporal_block=0"};
    EXPECT_SET_ERR(tb, "--set: solver.temporal_block = 0", "1 to 8");
    const char *tb9[] = {"solver.temporal_block=9"};
    EXPECT_SET_ERR(tb9, "--set: solver.temporal_block = 9", "1 to 8");
    const char *tbw[] = {"solver.temporal_block=\"fast\""};
    EXPECT_SET_ERR(tbw, "--set: solver.temporal_block = \"fast\"", "1 to 8", "\"auto\"");
    const char *grp[] = {"grid=5"};
    EXPECT_SET_ERR(grp, "--set: grid = 5", "expected a group");
    /* A --set error and a deck error: both located. */
    const char *both[] = {"time.dt=-1"};
    expect_err(deck(L_MATERIAL, "material = { diffusivity = 0; };", 0), both, 1, 2,
               NEEDLES(ORIGIN ":3: material.diffusivity = 0", "--set: time.dt = -1"));
}

/* solver.temporal_block = "auto": the measured table per dimension and
 * precision, less where the streaming axis (or a rank's share of it) is too
 * short for a deep pass, 1 wherever nothing fuses, always a depth the
 * kernels serve. */
static int auto_depth2(const char *points, const char *precision, const char *extra,
                       const char *extra2)
{
    test_sets s = {0};
    test_sets_add(&s, "grid.points=%s", points);
    test_sets_add(&s, "solver.precision=\"%s\"", precision);
    test_sets_add(&s, "solver.temporal_block=\"auto\"");
    if (extra) test_sets_add(&s, "%s", extra);
    if (extra2) test_sets_add(&s, "%s", extra2);
    heat_case c;
    test_load_case(heat_default_deck, "auto", &s, &c);
    assert_true(c.solver.temporal_auto);
    assert_int_equal(heat_case_auto_depth(&c), c.solver.temporal_block);
    return c.solver.temporal_block;
}

static int auto_depth(const char *points, const char *precision, const char *extra)
{
    return auto_depth2(points, precision, extra, NULL);
}

static void test_temporal_auto(void **state)
{
    (void)state;
    assert_int_equal(auto_depth("[512, 512, 512]", "float", NULL), 4);
    assert_int_equal(auto_depth("[512, 512, 512]", "double", NULL), 4);
    /* 3D planes under 256 x 256 points (or a rank's part of one): 3. */
    assert_int_equal(auto_depth("[128, 128, 128]", "float", NULL), 3);
    assert_int_equal(auto_depth("[255, 256, 64]", "double", NULL), 3);
    assert_int_equal(auto_depth("[256, 256, 64]", "double", NULL), 4);
    assert_int_equal(auto_depth("[512, 512, 512]", "float", "parallel.ranks=[2, 2, 1]"), 4);
    assert_int_equal(auto_depth("[512, 512, 512]", "float", "parallel.ranks=[2, 4, 1]"), 3);
    assert_int_equal(auto_depth("[8192, 8192, 1]", "float", NULL), 8);
    assert_int_equal(auto_depth("[8192, 8192, 1]", "double", NULL), 4);
    /* Thin along the streaming axis: at least 8 k points there. */
    assert_int_equal(auto_depth("[512, 512, 20]", "double", NULL), 2);
    assert_int_equal(auto_depth("[8192, 9, 1]", "float", NULL), 1);
    assert_int_equal(auto_depth("[64, 64, 64]", "double", "parallel.ranks=[1, 1, 4]"), 2);
    /* Nothing fuses. */
    assert_int_equal(auto_depth("[512, 512, 512]", "float", "solver.backend=\"cpu\""), 1);
    assert_int_equal(auto_depth("[512, 512, 512]", "float", "solver.kernel=\"sliced\""), 1);
    assert_int_equal(auto_depth2("[512, 512, 512]", "float",
                                 "material={conductivity=1.0; density=1.0; specific_heat=1.0;}",
                                 "boundary.x_lo={type=\"convective\"; h=10.0; ambient=0.0;}"),
                     1);
    /* A general deck in 2D fuses 4 steps (the fastest measured), thin grids fewer. */
    for (int p = 0; p < 2; p++) {
        const char *prec = p ? "float" : "double";
        assert_int_equal(auto_depth2("[8192, 8192, 1]", prec,
                                     "material={conductivity=1.0; density=1.0; specific_heat=1.0;}",
                                     "boundary.x_lo={type=\"flux\"; value=1.0;}"),
                         4);
        assert_int_equal(auto_depth2("[8192, 20, 1]", prec,
                                     "material={conductivity=1.0; density=1.0; specific_heat=1.0;}",
                                     "boundary.x_lo={type=\"flux\"; value=1.0;}"),
                         2);
    }
    for (int n = 3; n < 100; n += 7) {
        char pts[64];
        snprintf(pts, sizeof pts, "[%d, %d, %d]", n, n, n);
        const int k3 = auto_depth(pts, "float", NULL);
        snprintf(pts, sizeof pts, "[%d, %d, 1]", n, n);
        const int k2 = auto_depth(pts, "double", NULL);
        assert_true(k3 >= 1 && k3 <= HEAT_TEMPORAL_BLOCK_MAX);
        assert_true(k2 >= 1 && k2 <= HEAT_TEMPORAL_BLOCK_MAX);
    }
}

/* --------------------------------------------------- canonical text */

static void test_canonical_round_trip(void **state)
{
    (void)state;
    heat_case c;
    assert_round_trip(deck(0), NULL, 0, ORIGIN, &c);
    assert_round_trip(heat_default_deck, NULL, 0, HEAT_DEFAULT_DECK_NAME, &c);
    assert_round_trip(
        deck(L_GRID,
             "grid = { points = [16, 12, 10]; length = [1.0, 2.0, 0.5]; origin = (-1.5, 2, 1e-3); "
             "};",
             L_TIME, "time = { end = 5.0; max_steps = 10000000000L; dt = 1.0e-3; safety = 0.5; };",
             L_STEADY, "steady = { tolerance = 1.0e-6; check_every = 25; };", L_INITIAL,
             "initial = { type = \"sine\"; modes = [1.0, 2.0, 0.0]; amplitude = 3.5; };", L_OUTPUT,
             "output = { dir = \"runs/\\\"q\\\"\"; every = 100; checkpoint_every = 1000; "
             "keep_checkpoints = 3; checkpoint_wall = 600.5; compress = 4; };",
             L_SOLVER,
             "solver = { backend = \"cpu\"; precision = \"float\"; kernel = \"sliced\"; "
             "temporal_block = 4; };",
             0),
        NULL, 0, ORIGIN, &c);
    assert_string_equal(c.output.dir, "runs/\"q\"");
    assert_true(c.time.max_steps == INT64_C(10000000000));
}

static void test_canonical_keeps_doubles_exact(void **state)
{
    (void)state;
    heat_case c;
    assert_round_trip(
        deck(L_GRID,
             "grid = { points = [16, 12, 10]; length = [0.30000000000000004, 0.1, "
             "0.7]; origin = [-0.0, 1e300, 0.7]; };",
             L_MATERIAL, "material = { diffusivity = 1.2345678901234567e-4; };", L_TIME,
             "time = { end = 3.3333333333333335; safety = 0.123456789012345678; };", L_INITIAL,
             "initial = { type = \"gaussian\"; center = [0.1, 0.2, 0.3]; width = "
             "1.2345678901234567e-140; amplitude = 1e5; base = 100.0; };",
             L_X_LO, "  x_lo = { type = \"dirichlet\"; value = 0.1; };", 0),
        NULL, 0, ORIGIN, &c);
    assert_true(c.alpha == 1.2345678901234567e-4);
    assert_true(c.grid.length[0] == 0.30000000000000004);
    assert_true(c.grid.origin[1] == 1e300);
    assert_true(c.time.end == 3.3333333333333335);
    assert_true(c.time.safety == 0.123456789012345678);
    assert_true(c.initial.width == 1.2345678901234567e-140);
    assert_true(c.bc[HEAT_X_LO].value == 0.1);
}

static void test_canonical_round_trip_with_sets(void **state)
{
    (void)state;
    heat_case c;
    const char *sets[] = {"solver.precision=float",
                          "solver.kernel=\"tiled\"",
                          "grid.points=[32,24,1]",
                          "steady.tolerance=1e-3",
                          "time.max_steps=1e5",
                          "material.diffusivity=2.5e-5",
                          "time.dt=0.1",
                          "boundary.x_hi={ type = \"dirichlet\"; value = 0.30000000000000004; }"};
    assert_round_trip(deck(0), sets, (int)(sizeof sets / sizeof *sets), ORIGIN, &c);
    assert_int_equal(c.solver.precision, HEAT_FLOAT);
    assert_int_equal(c.solver.kernel, HEAT_KERNEL_TILED);
    assert_int_equal(c.grid.n[0], 32);
    assert_int_equal(c.grid.dims, 2);
    assert_true(c.steady.enabled && c.steady.tolerance == 1e-3);
    assert_int_equal(c.time.max_steps, 100000);
    assert_true(c.alpha == 2.5e-5);
    assert_true(c.time.has_dt && c.time.dt == 0.1);
    assert_int_equal(c.bc[HEAT_X_HI].type, HEAT_BC_DIRICHLET);
    assert_true(c.bc[HEAT_X_HI].value == 0.30000000000000004);
    /* The canonical text carries the overrides: loaded with no --set, it
     * differs from the plain deck. */
    char *canon = NULL;
    heat_case plain, again;
    load_ok(deck(0), sets, (int)(sizeof sets / sizeof *sets), &again, &canon, NULL);
    load_ok(deck(0), NULL, 0, &plain, NULL, NULL);
    assert_int_equal(plain.solver.precision, HEAT_DOUBLE);
    assert_has(canon, "float");
    free(canon);
}

/* A deck without a name, from a file: the canonical text is loaded again
 * under another origin (a checkpoint) and must give the same case, name
 * and output directory included. */
static void test_canonical_keeps_default_name(void **state)
{
    (void)state;
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s", test_scratch_dir("canonical_name"));
    snprintf(path, sizeof path, "%s/slab.cfg", dir);
    test_write_file(path, deck(L_NAME, "", 0));
    heat_case c, again;
    heat_error err;
    char *canon = NULL;
    memset(&c, 0, sizeof c);
    if (heat_deck_load(path, NULL, 0, &c, &canon, NULL, &err) != HEAT_OK) fail_msg("%s", err.msg);
    derive_ok(&c);
    assert_string_equal(c.name, "slab");
    memset(&again, 0, sizeof again);
    if (heat_deck_load_string(canon, "checkpoint", NULL, 0, &again, NULL, NULL, &err) != HEAT_OK)
        fail_msg("%s\n%s", err.msg, canon);
    derive_ok(&again);
    assert_case_equal(&c, &again);
    free(canon);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_several_errors_together),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_file_errors_name_file_and_line),
        cmocka_unit_test(test_set_values),
        cmocka_unit_test(test_set_elements),
        cmocka_unit_test(test_set_syntax_errors),
        cmocka_unit_test(test_set_validation_errors),
        cmocka_unit_test(test_temporal_auto),
        cmocka_unit_test(test_canonical_round_trip),
        cmocka_unit_test(test_canonical_keeps_doubles_exact),
        cmocka_unit_test(test_canonical_round_trip_with_sets),
        cmocka_unit_test(test_canonical_keeps_default_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
