/* Painting materials and sources: see materials.h. */
#include "materials.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "h5file.h"

/* The grid index of box index i on axis a: wrapped on a periodic axis,
 * clamped on others. */
static int64_t grid_index(const heat_case *c, int a, int64_t i)
{
    const int64_t n = c->grid.n[a];
    if (c->bc[2 * a].type == HEAT_BC_PERIODIC) return ((i % n) + n) % n;
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

static double coord(const heat_case *c, int a, int64_t i)
{
    return c->grid.origin[a] + (double)i * c->d.h[a];
}

/* Whether the node at x (grid index g for file shapes' planes) lies in the
 * geometric shape s; within 1e-9 of the spacing. */
static int inside(const heat_case *c, const heat_shape *s, const double x[3])
{
    const int dims = c->grid.dims;
    double eps[3];
    for (int a = 0; a < 3; a++) eps[a] = 1e-9 * c->d.h[a];
    switch (s->kind) {
    case HEAT_SHAPE_BOX:
        for (int a = 0; a < dims; a++)
            if (x[a] < s->min[a] - eps[a] || x[a] > s->max[a] + eps[a]) return 0;
        return 1;
    case HEAT_SHAPE_SPHERE: {
        double r2 = 0, e = 0;
        for (int a = 0; a < dims; a++) {
            const double d = x[a] - s->center[a];
            r2 += d * d;
            e = fmax(e, eps[a]);
        }
        return r2 <= (s->radius + e) * (s->radius + e);
    }
    case HEAT_SHAPE_CYLINDER: {
        const int ax = s->axis;
        if (x[ax] < s->lo - eps[ax] || x[ax] > s->hi + eps[ax]) return 0;
        double r2 = 0, e = 0;
        for (int k = 0, a = 0; a < 3; a++) {
            if (a == ax) continue;
            if (a < dims) {
                const double d = x[a] - s->center[k];
                r2 += d * d;
                e = fmax(e, eps[a]);
            }
            k++;
        }
        return r2 <= (s->radius + e) * (s->radius + e);
    }
    default:
        return 0;
    }
}

/* The grid indices along each axis that a shape may contain: its extent
 * widened by a node on each side (inside decides), the whole axis for a
 * file or an axis the shape does not bound. Painting tests only the shapes
 * whose span holds a node: large grids with many small shapes no longer
 * cost nodes times shapes evaluations of inside. */
typedef struct span {
    int64_t lo[3], hi[3];
} span;

static void index_range(const heat_case *c, int a, double lo, double hi, span *sp)
{
    const double n = (double)c->grid.n[a];
    double l = floor((lo - c->grid.origin[a]) / c->d.h[a]) - 1.0;
    double h = ceil((hi - c->grid.origin[a]) / c->d.h[a]) + 1.0;
    /* NaN or beyond the axis: clamped (a NaN bound keeps the whole axis) */
    l = l >= 0 ? (l <= n ? l : n) : 0;
    h = h <= n ? (h >= -1 ? h : -1) : n;
    sp->lo[a] = (int64_t)l;
    sp->hi[a] = (int64_t)h;
}

static void shape_span(const heat_case *c, const heat_shape *s, span *sp)
{
    for (int a = 0; a < 3; a++) sp->lo[a] = 0, sp->hi[a] = c->grid.n[a];
    for (int a = 0; a < c->grid.dims; a++) {
        switch (s->kind) {
        case HEAT_SHAPE_BOX:
            index_range(c, a, s->min[a], s->max[a], sp);
            break;
        case HEAT_SHAPE_SPHERE:
            index_range(c, a, s->center[a] - s->radius, s->center[a] + s->radius, sp);
            break;
        case HEAT_SHAPE_CYLINDER: {
            if (a == s->axis) {
                index_range(c, a, s->lo, s->hi, sp);
                break;
            }
            const int k = a < s->axis ? a : a - 1; /* center's coordinate across the axis */
            index_range(c, a, s->center[k] - s->radius, s->center[k] + s->radius, sp);
            break;
        }
        default:
            break;
        }
    }
}

static int spans(const span *sp, int a, int64_t g)
{
    return g >= sp->lo[a] && g <= sp->hi[a];
}

/* The class of (material, power): found or added. */
static int class_of(heat_classes *t, int material, double power, heat_error *err)
{
    for (int i = 0; i < t->count; i++)
        if (t->material[i] == material && t->power[i] == power) return i;
    if (t->count == HEAT_CLASSES_MAX)
        return -heat_error_set(err, HEAT_EINPUT,
                               "the regions and sources make more than %d combinations of "
                               "material and source power: use fewer overlapping sources",
                               HEAT_CLASSES_MAX);
    t->material[t->count] = (uint8_t)material;
    t->power[t->count] = power;
    return t->count++;
}

/* The file regions' index planes, read per grid plane. */
typedef struct files {
    heat_intfile *f[HEAT_FILE_REGIONS_MAX];
    int64_t *plane[HEAT_FILE_REGIONS_MAX];
    int64_t at[HEAT_FILE_REGIONS_MAX]; /* the grid plane held, or -1 */
} files;

static void files_close(const heat_case *c, files *fs)
{
    for (int i = 0; i < c->regions.nfiles; i++) {
        heat_intfile_close(fs->f[i]);
        free(fs->plane[i]);
    }
}

/* The region index of the first region that reads file i. */
static int file_region(const heat_case *c, int i)
{
    for (int r = 0; r < c->regions.count; r++)
        if (c->regions.r[r].shape.kind == HEAT_SHAPE_FILE && c->regions.r[r].shape.file == i)
            return r;
    return -1;
}

static int files_open(const heat_case *c, files *fs, heat_error *err)
{
    memset(fs, 0, sizeof *fs);
    const size_t plane = (size_t)(c->grid.n[0] * c->grid.n[1]);
    for (int i = 0; i < c->regions.nfiles; i++) {
        fs->at[i] = -1;
        int rc = heat_intfile_open(c->regions.files[i].path, c->regions.files[i].dataset, c->grid.n,
                                   &fs->f[i], err);
        if (!rc && !(fs->plane[i] = malloc(plane * sizeof(int64_t))))
            rc = heat_error_set(err, HEAT_ERUNTIME, "out of memory for a material file's plane");
        if (rc) {
            heat_error_prefix(err, "regions[%d]: ", file_region(c, i));
            files_close(c, fs);
            return rc;
        }
    }
    return HEAT_OK;
}

/* The shapes whose span holds a row of the grid (its y and z indices): the
 * regions' in their order (ids into regions), the sources'. */
typedef struct active {
    span rs[HEAT_REGIONS_MAX], ss[HEAT_SOURCES_MAX];
    int reg[HEAT_REGIONS_MAX], src[HEAT_SOURCES_MAX];
    int nreg, nsrc;
} active;

static void active_row(const heat_case *c, active *t, int64_t gy, int64_t gz)
{
    t->nreg = t->nsrc = 0;
    for (int r = 0; r < c->regions.count; r++)
        if (spans(&t->rs[r], 1, gy) && spans(&t->rs[r], 2, gz)) t->reg[t->nreg++] = r;
    for (int i = 0; i < c->sources.count; i++)
        if (spans(&t->ss[i], 1, gy) && spans(&t->ss[i], 2, gz)) t->src[t->nsrc++] = i;
}

/* The material of grid node g (coordinates x) after every region of the
 * row's active ones. */
static int material_at(const heat_case *c, files *fs, const active *t, const int64_t g[3],
                       const double x[3], int *contained, heat_error *err)
{
    int m = 0;
    for (int q = 0; q < t->nreg; q++) {
        const int r = t->reg[q];
        if (!spans(&t->rs[r], 0, g[0])) continue;
        const heat_region *reg = &c->regions.r[r];
        if (reg->shape.kind != HEAT_SHAPE_FILE) {
            if (!inside(c, &reg->shape, x)) continue;
            m = reg->material;
        } else {
            const int i = reg->shape.file;
            if (fs->at[i] != g[2]) {
                if (heat_intfile_plane(fs->f[i], g[2], fs->plane[i], err)) {
                    heat_error_prefix(err, "regions[%d]: %s: ", r, c->regions.files[i].path);
                    return -1;
                }
                fs->at[i] = g[2];
            }
            const int64_t v = fs->plane[i][g[1] * c->grid.n[0] + g[0]];
            if (v < 0 || v >= c->materials.count) {
                heat_error_set(err, HEAT_EINPUT,
                               "regions[%d]: %s:%s holds the material index %lld at node (%lld, "
                               "%lld, %lld), but there are %d materials (0 to %d)",
                               r, c->regions.files[i].path, c->regions.files[i].dataset,
                               (long long)v, (long long)g[0], (long long)g[1], (long long)g[2],
                               c->materials.count, c->materials.count - 1);
                return -1;
            }
            m = (int)v;
        }
        if (contained) contained[r] = 1;
    }
    return m;
}

static double power_at(const heat_case *c, const active *t, const int64_t g[3], const double x[3],
                       int *contained)
{
    double q = 0;
    for (int p = 0; p < t->nsrc; p++) {
        const int i = t->src[p];
        if (spans(&t->ss[i], 0, g[0]) && inside(c, &c->sources.s[i].shape, x)) {
            q += c->sources.s[i].power;
            if (contained) contained[HEAT_SOURCE_SLOT(i)] = 1;
        }
    }
    return q;
}

int heat_materials_paint(const heat_case *c, const int64_t lo[3], const int64_t n[3], uint8_t *cls,
                         heat_classes *t, int *contained, heat_error *err)
{
    files fs;
    active *t_act = malloc(sizeof *t_act);
    if (!t_act) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    for (int r = 0; r < c->regions.count; r++) shape_span(c, &c->regions.r[r].shape, &t_act->rs[r]);
    for (int i = 0; i < c->sources.count; i++) shape_span(c, &c->sources.s[i].shape, &t_act->ss[i]);
    int rc = files_open(c, &fs, err);
    if (rc) {
        free(t_act);
        return rc;
    }
    int last_m = -1, last_cls = 0;
    double last_q = 0;
    for (int64_t k = 0; k < n[2] && !rc; k++)
        for (int64_t j = 0; j < n[1] && !rc; j++) {
            const int64_t gy = grid_index(c, 1, lo[1] + j), gz = grid_index(c, 2, lo[2] + k);
            active_row(c, t_act, gy, gz);
            for (int64_t i = 0; i < n[0] && !rc; i++) {
                const int64_t g[3] = {grid_index(c, 0, lo[0] + i), gy, gz};
                const double x[3] = {coord(c, 0, g[0]), coord(c, 1, g[1]), coord(c, 2, g[2])};
                const int m = material_at(c, &fs, t_act, g, x, contained, err);
                const double q = power_at(c, t_act, g, x, contained);
                if (m < 0) {
                    rc = err->code;
                    break;
                }
                if (m != last_m || q != last_q) {
                    last_cls = class_of(t, m, q, err);
                    if (last_cls < 0) {
                        rc = -last_cls;
                        break;
                    }
                    last_m = m, last_q = q;
                }
                cls[(k * n[1] + j) * n[0] + i] = (uint8_t)last_cls;
            }
        }
    files_close(c, &fs);
    free(t_act);
    return rc;
}

double heat_node_weight(const heat_case *c, int a, int64_t i)
{
    if (a >= c->grid.dims) return 1.0;
    const int edge = (i == 0 || i == c->grid.n[a] - 1) && c->bc[2 * a].type != HEAT_BC_PERIODIC;
    return edge ? 0.5 * c->d.h[a] : c->d.h[a];
}

int heat_materials_survey_grid(const heat_case *c, heat_materials_survey *s, heat_error *err)
{
    memset(s, 0, sizeof *s);
    const int64_t n[3] = {c->grid.n[0], c->grid.n[1], 1};
    uint8_t *plane = malloc((size_t)(n[0] * n[1]));
    if (!plane)
        return heat_error_set(err, HEAT_ERUNTIME,
                              "out of memory for a plane of the material classes (%lld x %lld "
                              "nodes, %.3g GB), to survey the grid's materials",
                              (long long)n[0], (long long)n[1], 1e-9 * (double)(n[0] * n[1]));
    heat_classes t = {0};
    int rc = HEAT_OK;
    for (int64_t k = 0; k < c->grid.n[2] && !rc; k++) {
        const int64_t lo[3] = {0, 0, k};
        if ((rc = heat_materials_paint(c, lo, n, plane, &t, s->contained, err))) break;
        const double wz = heat_node_weight(c, 2, k);
        for (int64_t j = 0; j < n[1]; j++) {
            const double wyz = wz * heat_node_weight(c, 1, j);
            for (int64_t i = 0; i < n[0]; i++) {
                const uint8_t cl = plane[j * n[0] + i];
                s->nodes[t.material[cl]]++;
                s->power += t.power[cl] * wyz * heat_node_weight(c, 0, i);
            }
        }
    }
    free(plane);
    return rc;
}

void heat_materials_notice_empty(const heat_case *c, const int *contained, FILE *notices)
{
    if (!notices) return;
    for (int r = 0; r < c->regions.count; r++)
        if (!contained[r])
            fprintf(notices,
                    "notice: regions[%d] contains no node of the grid (it lies between nodes): "
                    "it paints nothing\n",
                    r);
    for (int i = 0; i < c->sources.count; i++)
        if (!contained[HEAT_SOURCE_SLOT(i)])
            fprintf(notices,
                    "notice: sources[%d] contains no node of the grid (it lies between nodes): "
                    "it injects nothing\n",
                    i);
}
