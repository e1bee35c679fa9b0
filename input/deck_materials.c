/* The deck's materials: `material` (one: a diffusivity, or conductivity,
 * density and specific heat) or `materials` (a list), the `regions` that
 * paint them onto the nodes, the heat `sources` and the `probes`. The faces
 * that need a conductivity (convective, flux) are checked here too, once
 * the materials are known. docs/DECK.md lists every key. */
#include <libconfig.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "deck_internal.h"

/* A number > 0 (reported otherwise); 1 when it is one. */
static int positive(vctx *v, const config_setting_t *g, const char *key, int required, double *out,
                    const char *what)
{
    if (heat_deck_get_number(v, g, key, required, out) != 1) return 0;
    if (*out > 0) return 1;
    heat_deck_bad(v, MEMBER(g, key), "the %s must be > 0", what);
    return 0;
}

/* conductivity, density, specific_heat of group g into *m. */
static void v_physical(vctx *v, const config_setting_t *g, heat_material *m)
{
    positive(v, g, "conductivity", 1, &m->k, "conductivity (W/(m K))");
    positive(v, g, "density", 1, &m->rho, "density (kg/m^3)");
    positive(v, g, "specific_heat", 1, &m->cp, "specific heat (J/(kg K))");
}

/* Whether a name holds a control character (a tab, a carriage return...),
 * which would break the lines of heat check, heat info and probes.csv. */
static int has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return 1;
    return 0;
}

/* The name of material group g into m (1 to HEAT_MATERIAL_NAME - 1
 * characters); 1 when it is given and fits. */
static int v_material_name(vctx *v, const config_setting_t *g, int required, heat_material *m)
{
    const char *name;
    if (heat_deck_get_string(v, g, "name", required, &name) != 1) return 0;
    if (!name[0] || strlen(name) >= HEAT_MATERIAL_NAME || has_control(name)) {
        heat_deck_bad(v, MEMBER(g, "name"), "expected 1 to %d characters, no control character",
                      HEAT_MATERIAL_NAME - 1);
        return 0;
    }
    snprintf(m->name, sizeof m->name, "%s", name);
    return 1;
}

/* material = { diffusivity = a; } or { conductivity; density; specific_heat; }. */
static void v_single(vctx *v, const config_setting_t *g, heat_case *c)
{
    static const char *const keys[] = {"diffusivity",   "conductivity", "density",
                                       "specific_heat", "name",         NULL};
    heat_deck_check_keys(v, g, keys, NULL);
    const config_setting_t *d = MEMBER(g, "diffusivity");
    int physical = MEMBER(g, "conductivity") || MEMBER(g, "density") || MEMBER(g, "specific_heat");
    if (d && physical) {
        heat_deck_bad(v, d,
                      "give either the diffusivity or conductivity, density and specific_heat, "
                      "not both");
        return;
    }
    if (!physical) {
        heat_material unused; /* a name is checked, and then unused */
        v_material_name(v, g, 0, &unused);
        if (heat_deck_get_number(v, g, "diffusivity", 1, &c->alpha) == 1 && !(c->alpha > 0))
            heat_deck_bad(v, d, "the diffusivity must be > 0");
        return;
    }
    heat_material *m = &c->materials.m[0];
    snprintf(m->name, sizeof m->name, "material");
    v_material_name(v, g, 0, m);
    v_physical(v, g, m);
    c->materials.count = 1;
    c->alpha = m->k / (m->rho * m->cp);
}

/* materials = ( { name; conductivity; density; specific_heat; }, ... ). */
static void v_list(vctx *v, const config_setting_t *l, heat_case *c)
{
    static const char *const keys[] = {"name", "conductivity", "density", "specific_heat", NULL};
    const int n = config_setting_length(l);
    if (!config_setting_is_list(l) || n < 1 || n > HEAT_MATERIALS_MAX) {
        heat_deck_bad(v, l,
                      "expected a list ( { name = ...; conductivity = ...; density = ...; "
                      "specific_heat = ...; }, ... ) of 1 to %d materials%s",
                      HEAT_MATERIALS_MAX,
                      n == 0 ? " (an empty list counts as none beside material = { ... }, "
                               "which then gives the one material)"
                             : "");
        return;
    }
    for (int i = 0; i < n; i++) {
        const config_setting_t *g = config_setting_get_elem(l, (unsigned)i);
        heat_material *m = &c->materials.m[i];
        if (!config_setting_is_group(g)) {
            heat_deck_bad(v, g, "expected a group { name = ...; conductivity = ...; ... }");
            continue;
        }
        heat_deck_check_keys(v, g, keys, NULL);
        if (v_material_name(v, g, 1, m))
            for (int j = 0; j < i; j++)
                if (strcmp(c->materials.m[j].name, m->name) == 0)
                    heat_deck_bad(v, MEMBER(g, "name"), "materials[%d] has this name already", j);
        v_physical(v, g, m);
    }
    c->materials.count = n;
    /* A diffusivity for the messages and files that show one: the first material's. */
    if (c->materials.m[0].rho > 0 && c->materials.m[0].cp > 0)
        c->alpha = c->materials.m[0].k / (c->materials.m[0].rho * c->materials.m[0].cp);
}

/* An empty list: nothing to read (`materials = ()` beside material,
 * `regions = ()`). */
static int empty_list(const config_setting_t *l)
{
    return l && config_setting_is_list(l) && config_setting_length(l) == 0;
}

/* The materials list in force: NULL where there is none, or an empty one
 * beside material, which counts as none (--set 'materials=()' turns a deck
 * of materials into one of a single material). */
static const config_setting_t *materials_list(const config_setting_t *root)
{
    const config_setting_t *many = MEMBER(root, "materials");
    return MEMBER(root, "material") && empty_list(many) ? NULL : many;
}

void heat_deck_v_materials(vctx *v, const config_setting_t *root, heat_case *c)
{
    const config_setting_t *one = MEMBER(root, "material"), *many = materials_list(root);
    if (one && many) {
        heat_deck_bad(v, many, "give either material (one) or materials (a list), not both");
        return;
    }
    if (many) {
        v_list(v, many, c);
        return;
    }
    const config_setting_t *g = heat_deck_get_group(
        v, root, "material", 1,
        "a group with diffusivity, or with conductivity, density and specific_heat");
    if (g) v_single(v, g, c);
}

/* ---- shapes ---------------------------------------------------------------- */

/* The keys that name a shape, in heat_shape_kind order. */
static const char *const shape_names[] = {"box", "sphere", "cylinder", "file"};

/* The first key of g that names a shape, with its kind; NULL when none. */
static const config_setting_t *shape_of(const config_setting_t *g, heat_shape_kind *kind)
{
    for (int i = 0; i < 4; i++) {
        const config_setting_t *s = MEMBER(g, shape_names[i]);
        if (s) {
            *kind = (heat_shape_kind)i;
            return s;
        }
    }
    return NULL;
}

/* Whether [lo, hi] along axis a meets the domain at all. */
static int meets(const heat_case *c, int a, double lo, double hi)
{
    const double o = c->grid.origin[a], L = c->grid.length[a], eps = 1e-9 * L;
    return hi >= o - eps && lo <= o + L + eps;
}

/* `what` (a shape, a point) of setting s misses the domain along axis a. */
static void outside(vctx *v, const config_setting_t *s, const char *what, const heat_case *c, int a)
{
    heat_deck_bad(v, s, "the %s lies outside the domain along %c, [%.9g, %.9g]", what, "xyz"[a],
                  c -> grid.origin[a], c->grid.origin[a] + c->grid.length[a]);
}

static void v_box(vctx *v, const config_setting_t *g, const heat_case *c, heat_shape *s)
{
    static const char *const keys[] = {"min", "max", NULL};
    heat_deck_check_keys(v, g, keys, "for a box");
    if (heat_deck_get_triple(v, g, "min", 1, s->min, "[x, y, z], three numbers") != 1 ||
        heat_deck_get_triple(v, g, "max", 1, s->max, "[x, y, z], three numbers") != 1)
        return;
    for (int a = 0; a < c->grid.dims; a++) {
        if (s->min[a] > s->max[a])
            heat_deck_bad(v, MEMBER(g, "max"), "max[%d] < min[%d]: the box is empty", a, a);
        else if (!meets(c, a, s->min[a], s->max[a]))
            outside(v, g, "box", c, a);
    }
}

static void v_sphere(vctx *v, const config_setting_t *g, const heat_case *c, heat_shape *s)
{
    static const char *const keys[] = {"center", "radius", NULL};
    heat_deck_check_keys(v, g, keys, "for a sphere");
    if (heat_deck_get_triple(v, g, "center", 1, s->center, "[x, y, z], three numbers") != 1 ||
        !positive(v, g, "radius", 1, &s->radius, "radius"))
        return;
    for (int a = 0; a < c->grid.dims; a++)
        if (!meets(c, a, s->center[a] - s->radius, s->center[a] + s->radius))
            outside(v, g, "sphere", c, a);
}

static void v_cylinder(vctx *v, const config_setting_t *g, const heat_case *c, heat_shape *s)
{
    static const char *const keys[] = {"axis", "center", "radius", "min", "max", NULL};
    static const char *const axes[] = {"x", "y", "z", NULL};
    heat_deck_check_keys(v, g, keys, "for a cylinder");
    const config_setting_t *ce = MEMBER(g, "center");
    if (heat_deck_get_choice(v, g, "axis", 1, axes, &s->axis) != 1) return;
    if (!ce || (!config_setting_is_array(ce) && !config_setting_is_list(ce)) ||
        config_setting_length(ce) != 2) {
        if (ce)
            heat_deck_bad(v, ce, "expected the two coordinates across the axis, [a, b]");
        else
            heat_deck_missing(v, g, "center", "the two coordinates across the axis, [a, b]");
        return;
    }
    for (unsigned i = 0; i < 2; i++)
        if (heat_deck_number_of(v, config_setting_get_elem(ce, i), &s->center[i]) != 1) return;
    if (!positive(v, g, "radius", 1, &s->radius, "radius") ||
        heat_deck_get_number(v, g, "min", 1, &s->lo) != 1 ||
        heat_deck_get_number(v, g, "max", 1, &s->hi) != 1)
        return;
    if (s->lo > s->hi) {
        heat_deck_bad(v, MEMBER(g, "max"), "max < min: the cylinder is empty");
        return;
    }
    if (s->axis >= c->grid.dims) {
        heat_deck_bad(v, MEMBER(g, "axis"), "a 2D run has no z extent: use axis \"x\" or \"y\"");
        return;
    }
    /* Along its axis [min, max]; across it the square around the circle
     * (center[0] on the first other axis, center[1] on the second). */
    for (int a = 0, k = 0; a < c->grid.dims; a++) {
        const double lo = a == s->axis ? s->lo : s->center[k] - s->radius;
        const double hi = a == s->axis ? s->hi : s->center[k] + s->radius;
        if (a != s->axis) k++;
        if (!meets(c, a, lo, hi)) outside(v, g, "cylinder", c, a);
    }
}

static void v_file_shape(vctx *v, const config_setting_t *g, heat_case *c, heat_shape *s)
{
    static const char *const keys[] = {"path", "dataset", NULL};
    heat_deck_check_keys(v, g, keys, "for a material file");
    if (c->regions.nfiles == HEAT_FILE_REGIONS_MAX) {
        heat_deck_bad(v, g, "at most %d regions read from files", HEAT_FILE_REGIONS_MAX);
        return;
    }
    const char *path, *ds = "/material";
    if (heat_deck_get_string(v, g, "path", 1, &path) != 1) return;
    heat_deck_get_string(v, g, "dataset", 0, &ds);
    if (!path[0] || strlen(path) >= HEAT_PATH_MAX || !ds[0] || strlen(ds) >= HEAT_NAME_MAX) {
        heat_deck_bad(v, g, "expected a path and an HDF5 dataset name");
        return;
    }
    s->file = c->regions.nfiles++;
    snprintf(c->regions.files[s->file].path, HEAT_PATH_MAX, "%s", path);
    snprintf(c->regions.files[s->file].dataset, HEAT_NAME_MAX, "%s", ds);
}

/* The shape of region or source g; 1 when one was found (checked). */
static int v_shape(vctx *v, const config_setting_t *g, heat_case *c, heat_shape *s, int files)
{
    const config_setting_t *sg = shape_of(g, &s->kind);
    if (!sg || (s->kind == HEAT_SHAPE_FILE && !files)) {
        heat_deck_bad(v, g,
                      "expected one of box = { min; max; }, sphere = { center; radius; }, "
                      "cylinder = { axis; center; radius; min; max; }%s",
                      files ? ", file = { path; dataset; }" : "");
        return 0;
    }
    /* A second shape would be ignored without a word: refuse it. */
    for (int i = (int)s->kind + 1; i < (files ? 4 : 3); i++)
        if (MEMBER(g, shape_names[i])) {
            heat_deck_bad(v, MEMBER(g, shape_names[i]),
                          "a region or source has one shape, and %s = { ... } is given already",
                          shape_names[s->kind]);
            return 0;
        }
    if (!config_setting_is_group(sg)) {
        heat_deck_bad(v, sg, "expected a group { ... }");
        return 0;
    }
    if (s->kind == HEAT_SHAPE_BOX) v_box(v, sg, c, s);
    if (s->kind == HEAT_SHAPE_SPHERE) v_sphere(v, sg, c, s);
    if (s->kind == HEAT_SHAPE_CYLINDER) v_cylinder(v, sg, c, s);
    if (s->kind == HEAT_SHAPE_FILE) v_file_shape(v, sg, c, s);
    return 1;
}

/* A list of groups: its length, or -1 when it is not one (reported). */
static int group_list(vctx *v, const config_setting_t *l, int max, const char *what)
{
    if (!config_setting_is_list(l) || config_setting_length(l) > max) {
        heat_deck_bad(v, l, "expected a list ( { ... }, ... ) of at most %d %s", max, what);
        return -1;
    }
    for (int i = 0; i < config_setting_length(l); i++)
        if (!config_setting_is_group(config_setting_get_elem(l, (unsigned)i))) {
            heat_deck_bad(v, config_setting_get_elem(l, (unsigned)i), "expected a group { ... }");
            return -1;
        }
    return config_setting_length(l);
}

void heat_deck_v_regions(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"material", "box", "sphere", "cylinder", "file", NULL};
    const config_setting_t *l = MEMBER(root, "regions");
    if (!l || empty_list(l)) return; /* nothing to paint */
    const int listed = materials_list(root) != NULL;
    if (listed && c->materials.count == 0) return; /* the list's own problem is reported */
    if (c->materials.count < 2) {
        heat_deck_bad(v, l,
                      listed ? "regions paint the materials of the materials = ( ... ) list, "
                               "which has only one: give two or more"
                             : "regions paint the materials of a materials = ( ... ) list of two "
                               "or more: give one instead of material = { ... }");
        return;
    }
    const int n = group_list(v, l, HEAT_REGIONS_MAX, "regions");
    for (int i = 0; i < n; i++) {
        const config_setting_t *g = config_setting_get_elem(l, (unsigned)i);
        heat_region *r = &c->regions.r[i];
        heat_deck_check_keys(v, g, keys, "in a region");
        if (!v_shape(v, g, c, &r->shape, 1)) continue;
        r->material = -1;
        const char *name;
        int got = heat_deck_get_string(v, g, "material", r->shape.kind != HEAT_SHAPE_FILE, &name);
        if (got == 1 && r->shape.kind == HEAT_SHAPE_FILE)
            heat_deck_bad(v, MEMBER(g, "material"),
                          "a file region takes its materials from the file (an index per node)");
        else if (got == 1) {
            for (int m = 0; m < c->materials.count; m++)
                if (strcmp(c->materials.m[m].name, name) == 0) r->material = m;
            if (r->material < 0) {
                char list[512] = "";
                for (int m = 0; m < c->materials.count && strlen(list) < 400; m++)
                    snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"",
                             m ? ", " : "", c->materials.m[m].name);
                heat_deck_bad(v, MEMBER(g, "material"), "no material of that name (%s)", list);
            }
        }
    }
    if (n > 0) c->regions.count = n;
}

void heat_deck_v_sources(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"power_density", "box", "sphere", "cylinder", NULL};
    const config_setting_t *l = MEMBER(root, "sources");
    if (!l) return;
    const int n = group_list(v, l, HEAT_SOURCES_MAX, "sources");
    for (int i = 0; i < n; i++) {
        const config_setting_t *g = config_setting_get_elem(l, (unsigned)i);
        heat_source *s = &c->sources.s[i];
        heat_deck_check_keys(v, g, keys, "in a source");
        v_shape(v, g, c, &s->shape, 0);
        heat_deck_get_number(v, g, "power_density", 1, &s->power);
    }
    if (n > 0) c->sources.count = n;
}

void heat_deck_v_probes(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"name", "at", NULL};
    const config_setting_t *l = MEMBER(root, "probes");
    if (!l) return;
    const int n = group_list(v, l, HEAT_PROBES_MAX, "probes");
    for (int i = 0; i < n; i++) {
        const config_setting_t *g = config_setting_get_elem(l, (unsigned)i);
        heat_probe *p = &c->probes.p[i];
        heat_deck_check_keys(v, g, keys, "in a probe");
        const char *name;
        if (heat_deck_get_string(v, g, "name", 1, &name) == 1) {
            if (!name[0] || strlen(name) >= HEAT_MATERIAL_NAME || strpbrk(name, ",\"") ||
                has_control(name))
                heat_deck_bad(v, MEMBER(g, "name"),
                              "expected 1 to %d characters, no comma, quote or control character "
                              "such as a newline or tab (it heads a column of probes.csv)",
                              HEAT_MATERIAL_NAME - 1);
            for (int j = 0; j < i; j++)
                if (!strcmp(c->probes.p[j].name, name))
                    heat_deck_bad(v, MEMBER(g, "name"),
                                  "probes[%d] has this name already: each heads its own column "
                                  "of probes.csv, so names must differ",
                                  j);
            snprintf(p->name, sizeof p->name, "%s", name);
        }
        if (heat_deck_get_triple(v, g, "at", 1, p->at, "[x, y, z], three numbers") != 1) continue;
        for (int a = 0; a < c->grid.dims; a++)
            if (!meets(c, a, p->at[a], p->at[a])) outside(v, MEMBER(g, "at"), "point", c, a);
    }
    if (n > 0) c->probes.count = n;
}

/* Faces and sources that need a conductivity, with only a diffusivity. */
void heat_deck_check_conductivity(vctx *v, const config_setting_t *root, const heat_case *c)
{
    /* Only a deck that gives a diffusivity: one whose materials could not
     * be read has had that said already. */
    const config_setting_t *one = MEMBER(root, "material");
    if (c->materials.count > 0 || !one || !MEMBER(one, "diffusivity") || materials_list(root))
        return;
    const config_setting_t *b = MEMBER(root, "boundary");
    for (int f = 0; f < 2 * c->grid.dims; f++) {
        if (c->bc[f].type != HEAT_BC_CONVECTIVE && c->bc[f].type != HEAT_BC_FLUX) continue;
        heat_deck_bad(v, MEMBER(MEMBER(b, heat_face_name(f)), "type"),
                      "a %s face needs the material's conductivity: give material = { "
                      "conductivity; density; specific_heat; } instead of its diffusivity",
                      heat_bc_type_name(c->bc[f].type));
    }
    if (c->sources.count > 0)
        heat_deck_bad(v, MEMBER(root, "sources"),
                      "heat sources need the material's conductivity, density and specific_heat: "
                      "give them in material = { ... } instead of its diffusivity");
}
