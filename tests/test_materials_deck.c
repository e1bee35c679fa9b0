/* Tests of the deck's materials (input/deck_materials.c): material with
 * conductivity, density and specific_heat, the materials list, regions and
 * their shapes, sources, probes, convective and flux faces. Every bad value
 * is refused (HEAT_EINPUT: exit status 2 in the program) with a message
 * naming file:line, the key, the value and what is allowed. The numbers
 * derived from them, the painting and heat check: test_materials_check.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "heat_case.h"
#include "materials_helpers.h"
#include "test_util.h"

/* ---- material and materials ------------------------------------------- */

static void test_material_physical(void **state)
{
    (void)state;
    heat_case c;
    load_line(&c, M_MATERIALS,
              "material = { conductivity = 50.0; density = 8000.0; specific_heat = 500.0; };");
    assert_int_equal(c.materials.count, 1);
    assert_string_equal(c.materials.m[0].name, "material");
    assert_true(c.materials.m[0].k == 50.0 && c.materials.m[0].rho == 8000.0 &&
                c.materials.m[0].cp == 500.0);
    assert_true(c.alpha == 50.0 / (8000.0 * 500.0));
    /* One material and no source, convective or flux face: the uniform update. */
    assert_false(c.d.general);
    assert_int_equal(c.d.dt_material, -1);

    load_line(&c, M_MATERIALS,
              "material = { name = \"steel\"; conductivity = 50.0; density = 8000.0; "
              "specific_heat = 500.0; };");
    assert_string_equal(c.materials.m[0].name, "steel");

    /* A diffusivity alone: no material table at all. */
    load_line(&c, M_MATERIALS, "material = { diffusivity = 2.5e-5; };");
    assert_int_equal(c.materials.count, 0);
    assert_false(c.d.general);
}

/* k, rho and c giving alpha set the same limit and update as alpha itself. */
static void test_material_physical_equals_diffusivity(void **state)
{
    (void)state;
    heat_case p, d;
    load_line(&p, M_MATERIALS,
              "material = { conductivity = 2.0; density = 4.0; specific_heat = 2.0; };");
    load_line(&d, M_MATERIALS, "material = { diffusivity = 0.25; };");
    assert_true(p.alpha == 0.25);
    assert_memory_equal(&p.d.dt_max, &d.d.dt_max, sizeof p.d.dt_max);
    assert_memory_equal(&p.d.dt, &d.d.dt, sizeof p.d.dt);
    assert_memory_equal(p.d.r, d.d.r, sizeof p.d.r);
    /* dt_max = 1 / (2 alpha sum 1/h^2) with h = 0.1 on three axes. */
    assert_close(p.d.dt_max, 1.0 / (2 * 0.25 * 300.0), 1e-15);
    /* A list of one material is the same single material. */
    heat_case l;
    load_line(&l, M_MATERIALS,
              "materials = ( { name = \"m\"; conductivity = 2.0; density = 4.0; specific_heat = "
              "2.0; } );");
    assert_false(l.d.general);
    assert_memory_equal(&l.d.dt_max, &d.d.dt_max, sizeof l.d.dt_max);
}

static void test_material_bad_values(void **state)
{
    (void)state;
    static const char *const keys[] = {"conductivity", "density", "specific_heat"};
    static const char *const units[] = {"(W/(m K))", "(kg/m^3)", "(J/(kg K))"};
    for (int i = 0; i < 3; i++) {
        char key[64], unit[64];
        const char *values[] = {"0.0", "-2.0", "\"hot\"", "[1.0]"};
        for (int v = 0; v < 4; v++) {
            char group[256] = "material = { ";
            for (int j = 0; j < 3; j++)
                snprintf(group + strlen(group), sizeof group - strlen(group), "%s = %s; ", keys[j],
                         j == i ? values[v] : "1.0");
            strcat(group, "};");
            snprintf(key, sizeof key, "material.%s = %s", keys[i], values[v]);
            snprintf(unit, sizeof unit, "%s must be > 0", units[i]);
            if (v < 2)
                BAD(mdeck(M_MATERIALS, group, 0), ORIGIN ":2:", key, unit);
            else
                BAD(mdeck(M_MATERIALS, group, 0), ORIGIN ":2:", key, "expected a number",
                    v == 2 ? "a string" : "an array");
        }
    }
    BADN(2, mdeck(M_MATERIALS, "material = { conductivity = 1.0; };", 0),
         ORIGIN ":2:", "missing key material.density", "missing key material.specific_heat");
    BAD(mdeck(M_MATERIALS,
              "material = { diffusivity = 1.0; conductivity = 1.0; density = 1.0; specific_heat "
              "= 1.0; };",
              0),
        ORIGIN ":2: material.diffusivity = 1.0", "either the diffusivity or conductivity",
        "not both");
    BAD(mdeck(M_MATERIALS,
              "material = { conductivity = 1.0; density = 1.0; specific_heat = 1.0; heat = 2; };",
              0),
        "unknown key material.heat", "diffusivity, conductivity, density, specific_heat, name");
    /* The name: a string of 1 to 31 characters, also beside a diffusivity. */
    BAD(mdeck(
            M_MATERIALS,
            "material = { name = \"\"; conductivity = 1.0; density = 1.0; specific_heat = 1.0; };",
            0),
        "material.name = \"\"", "expected 1 to 31 characters");
    BAD(mdeck(M_MATERIALS,
              "material = { name = \"abcdefghijklmnopqrstuvwxyz012345\"; diffusivity = 1.0; };", 0),
        "material.name = \"abcdefghijklmnopqrstuvwxyz012345\"", "expected 1 to 31 characters");
    BAD(mdeck(M_MATERIALS, "material = { name = \"a\\tb\"; diffusivity = 1.0; };", 0),
        "material.name = ", "expected 1 to 31 characters, no control character");
    BAD(mdeck(M_MATERIALS, "material = { name = 7; diffusivity = 1.0; };", 0), "material.name = 7",
        "expected a string");
    heat_case c;
    load_line(&c, M_MATERIALS,
              "material = { name = \"abcdefghijklmnopqrstuvwxyz01234\"; conductivity = 1.0; "
              "density = 1.0; specific_heat = 1.0; };");
    assert_string_equal(c.materials.m[0].name, "abcdefghijklmnopqrstuvwxyz01234");
    /* Neither a diffusivity nor the three properties. */
    BAD(mdeck(M_MATERIALS, "material = { };", 0), "missing key material.diffusivity");
    BAD(mdeck(M_MATERIALS, "", 0), "missing key material", "diffusivity",
        "conductivity, density and specific_heat");
}

static void test_materials_list_bad(void **state)
{
    (void)state;
    const char *m_a = "{ name = \"a\"; conductivity = 1.0; density = 1.0; specific_heat = 1.0; }";
    char text[1024];
    BAD(mdeck(M_MATERIALS, "materials = { a = 1; };", 0), ORIGIN ":2: materials = { ... }",
        "expected a list", "of 1 to 255 materials");
    BAD(mdeck(M_MATERIALS, "materials = ( );", 0), ORIGIN ":2: materials = ()", "1 to 255",
        "an empty list counts as none beside material = { ... }");
    /* ... and only that: no sources' or faces' complaint of a diffusivity
     * that the deck does not give. */
    BAD(mdeck(M_MATERIALS, "materials = ( );", M_SOURCES,
              "sources = ( { power_density = 5.0; box = { min = [0.0, 0.0, 0.0]; max = [1.0, 1.0, "
              "1.0]; }; } );",
              0),
        ORIGIN ":2: materials = ()", "1 to 255");
    BAD(mdeck(M_MATERIALS, "materials = ( 1.0 );", 0), "materials[0] = 1.0", "expected a group");
    snprintf(text, sizeof text,
             "materials = ( %s, { conductivity = 1.0; density = 1.0; "
             "specific_heat = 1.0; } );",
             m_a);
    BAD(mdeck(M_MATERIALS, text, 0), ORIGIN ":2:", "missing key materials[1].name");
    snprintf(text, sizeof text, "materials = ( %s, %s );", m_a, m_a);
    BAD(mdeck(M_MATERIALS, text, 0), "materials[1].name = \"a\"",
        "materials[0] has this name already");
    snprintf(text, sizeof text,
             "materials = ( %s, { name = \"b\"; conductivity = -1.0; density "
             "= 1.0; specific_heat = 1.0; } );",
             m_a);
    BAD(mdeck(M_MATERIALS, text, 0), "materials[1].conductivity = -1.0", "must be > 0");
    snprintf(text, sizeof text,
             "materials = ( %s, { name = \"b\"; diffusivity = 1.0; "
             "conductivity = 1.0; density = 1.0; specific_heat = 1.0; } );",
             m_a);
    BAD(mdeck(M_MATERIALS, text, 0), "unknown key materials[1].diffusivity",
        "name, conductivity, density, specific_heat");
    snprintf(text, sizeof text,
             "materials = ( { name = \"\"; conductivity = 1.0; density = 1.0; "
             "specific_heat = 1.0; } );");
    BAD(mdeck(M_MATERIALS, text, 0), "materials[0].name = \"\"", "expected 1 to 31 characters");
    /* Both forms at once: named at the list. */
    snprintf(text, sizeof text, "material = { diffusivity = 1.0; }; materials = ( %s );", m_a);
    BAD(mdeck(M_MATERIALS, text, 0), ORIGIN ":2: materials",
        "give either material (one) or "
        "materials (a list), not both");
    /* An empty list beside material counts as none (what --set
     * 'materials=()' makes of a deck of materials); alone it is refused
     * above. */
    heat_case one;
    load_line(&one, M_MATERIALS, "material = { diffusivity = 0.5; }; materials = ( );");
    assert_true(one.alpha == 0.5);
    assert_int_equal(one.materials.count, 0);
    load_line(&one, M_MATERIALS,
              "materials = ( ); material = { conductivity = 2.0; density = 1.0; specific_heat = "
              "4.0; };");
    assert_int_equal(one.materials.count, 1);
    assert_true(one.alpha == 0.5);
    /* and so does an empty list of regions, which paints nothing */
    load_line(&one, M_MATERIALS,
              "material = { diffusivity = 0.5; }; materials = ( ); regions = ( );");
    assert_true(one.alpha == 0.5);
    /* 255 materials fit (a node's material is one byte), 256 do not. */
    char *list = repeat(
        "materials = ( ",
        "{ name = \"m%d\"; conductivity = 1.0; density = 1.0; specific_heat = 1.0; }", 255, " );");
    heat_case c;
    load_line(&c, M_MATERIALS, list);
    assert_int_equal(c.materials.count, 255);
    assert_string_equal(c.materials.m[254].name, "m254");
    free(list);
    list = repeat("materials = ( ",
                  "{ name = \"m%d\"; conductivity = 1.0; density = 1.0; specific_heat = 1.0; }",
                  256, " );");
    BAD(mdeck(M_MATERIALS, list, 0), ORIGIN ":2: materials", "of 1 to 255 materials");
    free(list);
}

/* ---- regions ----------------------------------------------------------- */

static void test_regions_need_a_list(void **state)
{
    (void)state;
    const char *r = "regions = ( { material = \"a\"; box = { min = [0.0, 0.0, 0.0]; max = [0.5, "
                    "1.0, 1.0]; }; } );";
    /* a list of groups is named, not printed (one line, however long the list) */
    BAD(mdeck(M_MATERIALS, "material = { diffusivity = 1.0; };", M_REGIONS, r, 0),
        ORIGIN ":3: regions = ( ... 1 entry ... ): regions paint",
        "of two or more: give one instead of material = { ... }");
    BAD(mdeck(M_MATERIALS,
              "material = { conductivity = 1.0; density = 1.0; specific_heat = 1.0; };", M_REGIONS,
              r, 0),
        ORIGIN ":3: regions", "give one instead of material");
    BAD(mdeck(M_MATERIALS,
              "materials = ( { name = \"a\"; conductivity = 1.0; density = 1.0; specific_heat = "
              "1.0; } );",
              M_REGIONS, r, 0),
        ORIGIN ":3: regions = ( ... 1 entry ... )", "which has only one: give two or more");
    char two[512];
    snprintf(two, sizeof two, "regions = ( %.*s, %s", (int)(strlen(r) - 14), r + 12, r + 12);
    BAD(mdeck(M_MATERIALS, "material = { diffusivity = 1.0; };", M_REGIONS, two, 0),
        ORIGIN ":3: regions = ( ... 2 entries ... ): regions paint");
    /* A list that is itself refused: that problem only. */
    BAD(mdeck(M_MATERIALS, "materials = { };", M_REGIONS, r, 0), ORIGIN ":2: materials",
        "expected a list");
    BAD(mdeck(M_REGIONS, "regions = { a = 1; };", 0), ORIGIN ":3: regions = { ... }",
        "expected a list ( { ... }, ... ) of at most 128 regions");
    BAD(mdeck(M_REGIONS, "regions = ( 1 );", 0), "regions[0] = 1", "expected a group");
    char *many = repeat("regions = ( ",
                        "{ material = \"b\"; sphere = { center = [0.5, 0.5, 0.5]; "
                        "radius = 0.1; }; }",
                        128, " );");
    heat_case c;
    load_line(&c, M_REGIONS, many);
    assert_int_equal(c.regions.count, 128);
    free(many);
    many = repeat("regions = ( ",
                  "{ material = \"b\"; sphere = { center = [0.5, 0.5, 0.5]; "
                  "radius = 0.1; }; }",
                  129, " );");
    BAD(mdeck(M_REGIONS, many, 0), ORIGIN ":3: regions", "at most 128 regions");
    free(many);
}

static void test_region_keys(void **state)
{
    (void)state;
    const char *box = "box = { min = [0.0, 0.0, 0.0]; max = [0.5, 1.0, 1.0]; };";
    char text[512];
    snprintf(text, sizeof text, "regions = ( { material = \"c\"; %s } );", box);
    BAD(mdeck(M_REGIONS, text, 0), ORIGIN ":3: regions[0].material = \"c\"",
        "no material of that name (\"a\", \"b\")");
    snprintf(text, sizeof text, "regions = ( { material = 1; %s } );", box);
    BAD(mdeck(M_REGIONS, text, 0), "regions[0].material = 1", "expected a string");
    snprintf(text, sizeof text, "regions = ( { %s } );", box);
    BAD(mdeck(M_REGIONS, text, 0), ORIGIN ":3: missing key regions[0].material", "a string");
    BAD(mdeck(M_REGIONS, "regions = ( { material = \"b\"; } );", 0),
        ORIGIN ":3: regions[0] = { ... }",
        "expected one of box = { min; max; }, sphere = { center; radius; }, cylinder = { axis; "
        "center; radius; min; max; }, file = { path; dataset; }");
    BAD(mdeck(M_REGIONS, "regions = ( { material = \"b\"; box = 1.0; } );", 0),
        "regions[0].box = 1.0", "expected a group");
    snprintf(text, sizeof text,
             "regions = ( { material = \"b\"; %s sphere = { center = [0.5, 0.5, 0.5]; radius = "
             "0.1; }; } );",
             box);
    BAD(mdeck(M_REGIONS, text, 0), ORIGIN ":3: regions[0].sphere = { ... }",
        "has one shape, and box = { ... } is given already");
    snprintf(text, sizeof text, "regions = ( { material = \"b\"; %s colour = \"red\"; } );", box);
    BAD(mdeck(M_REGIONS, text, 0), "unknown key regions[0].colour",
        "allowed in a region: material, box, sphere, cylinder, file");
    /* A region of the second entry is named by its own index. */
    snprintf(text, sizeof text, "regions = ( { material = \"b\"; %s }, { material = \"x\"; %s } );",
             box, box);
    BAD(mdeck(M_REGIONS, text, 0), "regions[1].material = \"x\"");
}

static void test_box(void **state)
{
    (void)state;
    BAD(mdeck(M_REGIONS,
              "regions = ( { material = \"b\"; box = { min = [0.0, 0.6, 0.0]; max = [1.0, 0.5, "
              "1.0]; }; } );",
              0),
        ORIGIN ":3: regions[0].box.max = [1.0, 0.5, 1.0]", "max[1] < min[1]: the box is empty");
    BAD(mdeck(M_REGIONS,
              "regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 1.5]; max = [1.0, 1.0, "
              "2.0]; }; } );",
              0),
        "regions[0].box = { ... }", "the box lies outside the domain along z, [0, 1]");
    BAD(mdeck(M_REGIONS,
              "regions = ( { material = \"b\"; box = { min = [-2.0, 0.0, 0.0]; max = [-1.0, 1.0, "
              "1.0]; }; } );",
              0),
        "the box lies outside the domain along x");
    BAD(mdeck(M_REGIONS,
              "regions = ( { material = \"b\"; box = { min = [0.0, 0.0]; max = [1.0, 1.0, 1.0]; "
              "}; } );",
              0),
        "regions[0].box.min = [0.0, 0.0]", "expected [x, y, z], three numbers");
    BAD(mdeck(M_REGIONS, "regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; }; } );",
              0),
        "missing key regions[0].box.max");
    BAD(mdeck(M_REGIONS,
              "regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; max = [1.0, 1.0, "
              "1.0]; size = 1.0; }; } );",
              0),
        "unknown key regions[0].box.size", "allowed for a box: min, max");
    /* Reaching beyond the domain, or touching it from outside, is fine. */
    heat_case c;
    load_line(&c, M_REGIONS,
              "regions = ( { material = \"b\"; box = { min = [-5.0, -5.0, 1.0]; max = [5.0, 5.0, "
              "9.0]; }; } );");
    assert_int_equal(c.regions.count, 1);
    assert_int_equal(c.regions.r[0].material, 1);
    assert_true(c.regions.r[0].shape.kind == HEAT_SHAPE_BOX && c.regions.r[0].shape.min[2] == 1.0);
}

static void test_sphere(void **state)
{
    (void)state;
    const char *radii[] = {"0.0", "-0.5"};
    for (int i = 0; i < 2; i++) {
        char text[256], key[64];
        snprintf(text, sizeof text,
                 "regions = ( { material = \"b\"; sphere = { center = [0.5, 0.5, 0.5]; radius = "
                 "%s; }; } );",
                 radii[i]);
        snprintf(key, sizeof key, "regions[0].sphere.radius = %s", radii[i]);
        BAD(mdeck(M_REGIONS, text, 0), ORIGIN ":3:", key, "the radius must be > 0");
    }
    BAD(mdeck(M_REGIONS,
              "regions = ( { material = \"b\"; sphere = { center = [0.5, 2.0, 0.5]; radius = 0.5; "
              "}; } );",
              0),
        "regions[0].sphere = { ... }", "the sphere lies outside the domain along y");
    BAD(mdeck(M_REGIONS, "regions = ( { material = \"b\"; sphere = { radius = 0.5; }; } );", 0),
        "missing key regions[0].sphere.center", "three numbers");
    BAD(mdeck(M_REGIONS,
              "regions = ( { material = \"b\"; sphere = { center = [0.5, 0.5, 0.5]; radius = "
              "\"big\"; }; } );",
              0),
        "regions[0].sphere.radius = \"big\"", "expected a number");
}

static void test_cylinder(void **state)
{
    (void)state;
    const char *head = "regions = ( { material = \"b\"; cylinder = { ";
    char text[512];
#define CYL(body)                                                                                  \
    (snprintf(text, sizeof text, "%s%s }; } );", head, body), mdeck(M_REGIONS, text, 0))
    BAD(CYL("axis = \"w\"; center = [0.5, 0.5]; radius = 0.1; min = 0.0; max = 1.0;"),
        ORIGIN ":3: regions[0].cylinder.axis = \"w\"", "expected one of \"x\", \"y\", \"z\"");
    BAD(CYL("center = [0.5, 0.5]; radius = 0.1; min = 0.0; max = 1.0;"),
        "missing key regions[0].cylinder.axis");
    BAD(CYL("axis = \"z\"; center = [0.5, 0.5, 0.5]; radius = 0.1; min = 0.0; max = 1.0;"),
        "regions[0].cylinder.center = [0.5, 0.5, 0.5]",
        "expected the two coordinates across the axis, [a, b]");
    BAD(CYL("axis = \"z\"; radius = 0.1; min = 0.0; max = 1.0;"),
        "missing key regions[0].cylinder.center", "[a, b]");
    BAD(CYL("axis = \"z\"; center = [0.5, 0.5]; radius = -0.1; min = 0.0; max = 1.0;"),
        "regions[0].cylinder.radius = -0.1", "the radius must be > 0");
    BAD(CYL("axis = \"z\"; center = [0.5, 0.5]; radius = 0.1; min = 0.0;"),
        "missing key regions[0].cylinder.max");
    BAD(CYL("axis = \"z\"; center = [0.5, 0.5]; radius = 0.1; min = 0.7; max = 0.2;"),
        "regions[0].cylinder.max = 0.2", "max < min: the cylinder is empty");
    /* Outside along its axis, or across it (each axis named). */
    BAD(CYL("axis = \"z\"; center = [0.5, 0.5]; radius = 0.1; min = 3.0; max = 4.0;"),
        "regions[0].cylinder = { ... }", "the cylinder lies outside the domain along z");
    BADN(2, CYL("axis = \"z\"; center = [5.0, -5.0]; radius = 0.1; min = 0.0; max = 1.0;"),
         "outside the domain along x", "outside the domain along y");
    /* Across axis y the centre is (x, z). */
    BAD(CYL("axis = \"y\"; center = [0.5, 1.3]; radius = 0.2; min = 0.0; max = 1.0;"),
        "the cylinder lies outside the domain along z");
    heat_case c;
    load_line(&c, M_REGIONS,
              "regions = ( { material = \"b\"; cylinder = { axis = \"y\"; center = [0.5, 1.1]; "
              "radius = 0.2; min = 0.0; max = 1.0; }; } );");
    assert_int_equal(c.regions.r[0].shape.kind, HEAT_SHAPE_CYLINDER);
    assert_int_equal(c.regions.r[0].shape.axis, 1);
    /* 2D: a cylinder along z would be the whole depth; x or y only. */
    BAD(mdeck(M_GRID, "grid = { points = [11, 11, 1]; length = [1.0, 1.0, 1.0]; };", M_REGIONS,
              "regions = ( { material = \"b\"; cylinder = { axis = \"z\"; center = [0.5, 0.5]; "
              "radius = 0.1; min = 0.0; max = 1.0; }; } );",
              0),
        "regions[0].cylinder.axis = \"z\"", "a 2D run has no z extent: use axis \"x\" or \"y\"");
#undef CYL
}

static void test_file_region_keys(void **state)
{
    (void)state;
    BAD(mdeck(M_REGIONS, "regions = ( { file = { dataset = \"/m\"; }; } );", 0),
        ORIGIN ":3: missing key regions[0].file.path", "a string");
    BAD(mdeck(M_REGIONS, "regions = ( { file = { path = \"\"; }; } );", 0),
        "regions[0].file = { ... }", "expected a path and an HDF5 dataset name");
    BAD(mdeck(M_REGIONS, "regions = ( { file = { path = \"m.h5\"; dataset = \"\"; }; } );", 0),
        "expected a path and an HDF5 dataset name");
    BAD(mdeck(M_REGIONS, "regions = ( { file = { path = \"m.h5\"; name = \"x\"; }; } );", 0),
        "unknown key regions[0].file.name", "allowed for a material file: path, dataset");
    BAD(mdeck(M_REGIONS, "regions = ( { material = \"a\"; file = { path = \"m.h5\"; }; } );", 0),
        "regions[0].material = \"a\"", "a file region takes its materials from the file");
    /* The dataset defaults to /material; the file is read only when the
     * grid is painted (heat check, a run). */
    heat_case c;
    load_line(&c, M_REGIONS, "regions = ( { file = { path = \"no/such.h5\"; }; } );");
    assert_int_equal(c.regions.nfiles, 1);
    assert_string_equal(c.regions.files[0].path, "no/such.h5");
    assert_string_equal(c.regions.files[0].dataset, "/material");
    assert_int_equal(c.regions.r[0].material, -1);
    /* At most 4 regions read from files. */
    char *five = repeat("regions = ( ", "{ file = { path = \"m%d.h5\"; }; }", 5, " );");
    BAD(mdeck(M_REGIONS, five, 0), "regions[4].file = { ... }",
        "at most 4 regions read from files");
    free(five);
}

/* ---- sources, probes, faces --------------------------------------------- */

static void test_sources(void **state)
{
    (void)state;
    const char *box = "box = { min = [0.0, 0.0, 0.0]; max = [0.5, 1.0, 1.0]; };";
    char text[512];
    snprintf(text, sizeof text, "sources = ( { %s } );", box);
    BAD(mdeck(M_SOURCES, text, 0), ORIGIN ":4: missing key sources[0].power_density", "a number");
    snprintf(text, sizeof text, "sources = ( { power_density = \"hot\"; %s } );", box);
    BAD(mdeck(M_SOURCES, text, 0), "sources[0].power_density = \"hot\"", "expected a number");
    /* No file shape for a source: the allowed shapes are listed without it. */
    const char *msg = BADN(
        2,
        mdeck(M_SOURCES, "sources = ( { power_density = 1.0; file = { path = \"m.h5\"; }; } );", 0),
        "unknown key sources[0].file",
        "allowed in a source: power_density, box, sphere, "
        "cylinder",
        "sources[0] = { ... }: expected one of box");
    assert_lacks(msg, "file = { path; dataset; }");
    snprintf(text, sizeof text,
             "sources = ( { power_density = 1.0; box = { min = [2.0, 0.0, 0.0]; max = [3.0, 1.0, "
             "1.0]; }; } );");
    BAD(mdeck(M_SOURCES, text, 0), "sources[0].box = { ... }", "outside the domain along x");
    BAD(mdeck(M_SOURCES, "sources = { power_density = 1.0; };", 0), ORIGIN ":4: sources = { ... }",
        "at most 64 sources");
    /* A source needs the conductivity, density and specific heat. */
    snprintf(text, sizeof text, "sources = ( { power_density = 1.0; %s } );", box);
    BAD(mdeck(M_MATERIALS, "material = { diffusivity = 1.0; };", M_SOURCES, text, 0),
        ORIGIN ":4: sources = ",
        "heat sources need the material's conductivity, density and "
        "specific_heat");
    /* Any finite power density: a negative one is a sink. */
    snprintf(text, sizeof text,
             "sources = ( { power_density = -250.0; %s }, { power_density = 1e6; sphere = { "
             "center = [0.5, 0.5, 0.5]; radius = 0.2; }; } );",
             box);
    heat_case c;
    load_line(&c, M_SOURCES, text);
    assert_int_equal(c.sources.count, 2);
    assert_true(c.sources.s[0].power == -250.0 && c.sources.s[1].power == 1e6);
    assert_true(c.d.general);
    char *many = repeat("sources = ( ",
                        "{ power_density = %d.0; box = { min = [0.0, 0.0, 0.0]; "
                        "max = [1.0, 1.0, 1.0]; }; }",
                        65, " );");
    BAD(mdeck(M_SOURCES, many, 0), ORIGIN ":4: sources", "at most 64 sources");
    free(many);
}

/* A material whose diffusivity k / (rho c) is no representable number (a
 * density of 1e-320 makes it Inf) is named with its three values, not the
 * deck's material.diffusivity, which it does not have. */
static void test_material_extreme(void **state)
{
    (void)state;
    heat_case c;
    load_ok(mdeck(M_MATERIALS,
                  "materials = ( { name = \"a\"; conductivity = 1.0; density = 1.0; "
                  "specific_heat = 1.0; }, { name = \"b\"; conductivity = 4.0; density = 1e-320; "
                  "specific_heat = 1000.0; } );",
                  0),
            NULL, 0, &c, NULL, NULL);
    heat_error err;
    assert_int_equal(heat_case_derive(&c, &err), HEAT_EINPUT);
    test_expect_in("derive", err.msg, "materials[1] = \"b\": its diffusivity k / (rho c) = 4 / (");
    test_expect_in("derive", err.msg, "= inf with the grid's spacing");
    test_expect_in("derive", err.msg, "keep the conductivity, density and specific heat");
}

static void test_probes(void **state)
{
    (void)state;
    BAD(mdeck(M_PROBES, "probes = ( { at = [0.5, 0.5, 0.5]; } );", 0),
        ORIGIN ":5: missing key probes[0].name");
    const char *names[] = {
        "\"\"",      "\"a,b\"",   "\"a\\\"b\"", "\"abcdefghijklmnopqrstuvwxyz012345\"",
        "\"a\\rb\"", "\"a\\tb\"", "\"a\\nb\""};
    for (int i = 0; i < 7; i++) {
        char text[256], key[128];
        snprintf(text, sizeof text, "probes = ( { name = %s; at = [0.5, 0.5, 0.5]; } );", names[i]);
        snprintf(key, sizeof key, "probes[0].name = %s", names[i]);
        BAD(mdeck(M_PROBES, text, 0), ORIGIN ":5:", key,
            "expected 1 to 31 characters, no comma, quote or control character", "probes.csv");
    }
    BAD(mdeck(M_PROBES,
              "probes = ( { name = \"p\"; at = [0.5, 0.5, 0.5]; }, { name = \"q\"; at = [0.1, 0.5, "
              "0.5]; }, { name = \"p\"; at = [0.2, 0.5, 0.5]; } );",
              0),
        ORIGIN ":5: probes[2].name = \"p\"", "probes[0] has this name already");
    BAD(mdeck(M_PROBES, "probes = ( { name = \"p\"; } );", 0), "missing key probes[0].at");
    BAD(mdeck(M_PROBES, "probes = ( { name = \"p\"; at = [0.5, 0.5]; } );", 0),
        "probes[0].at = [0.5, 0.5]", "expected [x, y, z], three numbers");
    BAD(mdeck(M_PROBES, "probes = ( { name = \"p\"; at = [0.5, 1.5, 0.5]; } );", 0),
        ORIGIN ":5: probes[0].at = [0.5, 1.5, 0.5]",
        "the point lies outside the domain along y, [0, 1]");
    BAD(mdeck(M_PROBES, "probes = ( { name = \"p\"; at = [0.5, 0.5, 0.5]; every = 3; } );", 0),
        "unknown key probes[0].every", "allowed in a probe: name, at");
    char *many = repeat("probes = ( ", "{ name = \"p%d\"; at = [0.5, 0.5, 0.5]; }", 65, " );");
    BAD(mdeck(M_PROBES, many, 0), ORIGIN ":5: probes", "at most 64 probes");
    free(many);
    /* Probes need no materials; in 2D the z coordinate is not used. */
    heat_case c;
    load_ok(mdeck(M_GRID, "grid = { points = [11, 11, 1]; length = [1.0, 1.0, 1.0]; };",
                  M_MATERIALS, "material = { diffusivity = 1.0; };", M_PROBES,
                  "probes = ( { name = \"p\"; at = [0.3, 0.7, 7.0]; } );", 0),
            NULL, 0, &c, NULL, NULL);
    derive_ok(&c);
    assert_int_equal(c.probes.count, 1);
    assert_true(c.probes.p[0].node[0] == 3 && c.probes.p[0].node[1] == 7 &&
                c.probes.p[0].node[2] == 0);
}

static void test_convective_and_flux_faces(void **state)
{
    (void)state;
    BAD(mdeck(M_X_LO, "  x_lo = { type = \"convective\"; h = -1.0; ambient = 20.0; };", 0),
        ORIGIN ":9: boundary.x_lo.h = -1.0", "heat transfer coefficient must be >= 0 (W/(m^2 K))");
    BAD(mdeck(M_X_LO, "  x_lo = { type = \"convective\"; ambient = 20.0; };", 0),
        ORIGIN ":9: missing key boundary.x_lo.h");
    BAD(mdeck(M_X_LO, "  x_lo = { type = \"convective\"; h = 5.0; };", 0),
        "missing key boundary.x_lo.ambient");
    BAD(mdeck(M_X_LO, "  x_lo = { type = \"convective\"; h = 5.0; ambient = \"warm\"; };", 0),
        "boundary.x_lo.ambient = \"warm\"", "expected a number");
    BAD(mdeck(M_Y_HI, "  y_hi = { type = \"flux\"; };", 0), ORIGIN ":12: missing key "
                                                                   "boundary.y_hi.value");
    BAD(mdeck(M_Y_HI, "  y_hi = { type = \"flux\"; gradient = 1.0; value = 1.0; };", 0),
        "unknown key boundary.y_hi.gradient", "allowed for type \"flux\": type, value");
    BAD(mdeck(M_Z_LO, "  z_lo = { type = \"convective\"; h = 1.0; ambient = 0.0; value = 1.0; };",
              0),
        "unknown key boundary.z_lo.value", "allowed for type \"convective\": type, h, ambient");
    BAD(mdeck(M_Z_LO, "  z_lo = { type = \"radiative\"; };", 0),
        "boundary.z_lo.type = \"radiative\"",
        "\"dirichlet\", \"neumann\", \"periodic\", \"convective\", \"flux\"");
    /* Both need the conductivity: one problem per face, at its type. */
    BADN(2,
         mdeck(M_MATERIALS, "material = { diffusivity = 1.0; };", M_X_LO,
               "  x_lo = { type = \"convective\"; h = 5.0; ambient = 20.0; };", M_Z_HI,
               "  z_hi = { type = \"flux\"; value = 100.0; };", 0),
         ORIGIN ":9: boundary.x_lo.type = \"convective\"",
         "a convective face needs the material's conductivity",
         ORIGIN ":14: boundary.z_hi.type = \"flux\"", "a flux face needs");
    heat_case c;
    load_ok(mdeck(M_X_LO, "  x_lo = { type = \"convective\"; h = 0.0; ambient = -4.5; };", M_Z_HI,
                  "  z_hi = { type = \"flux\"; value = -100.0; };", 0),
            NULL, 0, &c, NULL, NULL);
    derive_ok(&c);
    assert_int_equal(c.bc[HEAT_X_LO].type, HEAT_BC_CONVECTIVE);
    assert_true(c.bc[HEAT_X_LO].h == 0.0 && c.bc[HEAT_X_LO].ambient == -4.5);
    assert_int_equal(c.bc[HEAT_Z_HI].type, HEAT_BC_FLUX);
    assert_true(c.bc[HEAT_Z_HI].value == -100.0);
    assert_true(c.d.general);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_material_physical),
        cmocka_unit_test(test_material_physical_equals_diffusivity),
        cmocka_unit_test(test_material_bad_values),
        cmocka_unit_test(test_materials_list_bad),
        cmocka_unit_test(test_regions_need_a_list),
        cmocka_unit_test(test_region_keys),
        cmocka_unit_test(test_box),
        cmocka_unit_test(test_sphere),
        cmocka_unit_test(test_cylinder),
        cmocka_unit_test(test_file_region_keys),
        cmocka_unit_test(test_sources),
        cmocka_unit_test(test_material_extreme),
        cmocka_unit_test(test_probes),
        cmocka_unit_test(test_convective_and_flux_faces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
