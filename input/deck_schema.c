/* The sections of the deck, each checked key by key into the case.
 * docs/DECK.md is the schema that users read. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <libconfig.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deck_internal.h"

/* ------------------------------------------------------------ sections */

#define NAME_MAX_CHARS 200

/* The character rule of a name (its length is checked apart). */
static int name_chars_ok(const char *s)
{
    if (!s[0] || s[0] == '.') return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.') return 0;
    return 1;
}

/* Whether a name is X_ckpt (X not empty): the snapshots of run "X_ckpt",
 * X_ckpt_<step>.vtkhdf, are named exactly as the checkpoints of run "X", and
 * io/outdir.c reads them as such, so such a run could never be restarted.
 * ("_ckpt" alone collides with nothing.) */
static int ckpt_suffix(const char *s)
{
    const size_t n = strlen(s);
    return n > 5 && strcmp(s + n - 5, "_ckpt") == 0;
}

/* Why a name X_ckpt is refused. */
static void ckpt_why(const char *name, char *buf, size_t n)
{
    const int x = (int)strlen(name) - 5;
    snprintf(buf, n,
             "the run's snapshots (%s_<step>.vtkhdf) would have the names of the checkpoints "
             "of a run \"%.*s\", so --restart could not tell the two runs apart",
             name, x, name);
}

static void v_name(vctx *v, const config_setting_t *root, heat_case *c, const char *origin)
{
    const char *name;
    char why[2048];
    if (heat_deck_get_string(v, root, "name", 0, &name) == 1) {
        if (!name_chars_ok(name) || strlen(name) > NAME_MAX_CHARS)
            heat_deck_bad(
                v, MEMBER(root, "name"),
                "expected 1 to %d characters from A-Z a-z 0-9 _ - . (not starting with '.'): "
                "the name is part of every output file name",
                NAME_MAX_CHARS);
        else if (ckpt_suffix(name)) {
            ckpt_why(name, why, sizeof why);
            heat_deck_bad(v, MEMBER(root, "name"),
                          "a name must not end in \"_ckpt\": %s: use another name, e.g. "
                          "\"%.*s-ckpt\"",
                          why, (int)strlen(name) - 5, name);
        } else
            snprintf(c->name, sizeof c->name, "%s", name);
        return;
    }
    /* Default: the deck file's base name without its extension, made safe.
     * Built whole (a base name may be longer than c->name holds) so that a
     * refusal names it as it would be. */
    const char *base = strrchr(origin, '/');
    base = base ? base + 1 : origin;
    char def[HEAT_PATH_MAX];
    snprintf(def, sizeof def, "%s", base);
    char *dot = strrchr(def, '.');
    if (dot && dot != def) *dot = '\0';
    for (char *p = def; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.') *p = '_';
    if (def[0] == '\0')
        snprintf(def, sizeof def, "_");
    else if (def[0] == '.')
        def[0] = '_';
    /* An explicit name is held to the same rules: the default is one too. */
    if (strlen(def) > NAME_MAX_CHARS)
        heat_error_append(v->err, HEAT_EINPUT,
                          "%s: the default name \"%s\", made from the deck file's name, has %zu "
                          "characters, more than the %d a name may have: set name = \"...\"; in "
                          "the deck (1 to %d of A-Z a-z 0-9 _ - .)",
                          origin, def, strlen(def), NAME_MAX_CHARS, NAME_MAX_CHARS);
    else if (ckpt_suffix(def)) {
        ckpt_why(def, why, sizeof why);
        heat_error_append(v->err, HEAT_EINPUT,
                          "%s: the default name \"%s\", made from the deck file's name, ends in "
                          "\"_ckpt\": %s: set a name in the deck that does not end in "
                          "\"_ckpt\", e.g. name = \"%.*s-ckpt\";",
                          origin, def, why, (int)strlen(def) - 5, def);
    } else
        snprintf(c->name, sizeof c->name, "%s", def);
}

static void v_grid(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"points", "length", "origin", NULL};
    const config_setting_t *g =
        heat_deck_get_group(v, root, "grid", 1, "a group with points and length");
    if (!g) return;
    heat_deck_check_keys(v, g, keys, NULL);

    const config_setting_t *p = MEMBER(g, "points");
    if (!p)
        heat_deck_missing(v, g, "points", "[nx, ny, nz], integers >= 3, nz = 1 for a 2D run");
    else if ((!config_setting_is_array(p) && !config_setting_is_list(p)) ||
             config_setting_length(p) != 3)
        heat_deck_bad(v, p, "expected [nx, ny, nz], integers >= 3, nz = 1 for a 2D run");
    else {
        int ok = 1;
        for (unsigned i = 0; i < 3; i++) {
            const config_setting_t *e = config_setting_get_elem(p, i);
            int64_t n;
            if (!heat_deck_as_int64(e, &n)) {
                heat_deck_bad(v, e, "%s", heat_deck_not_integer_text(e));
                ok = 0;
            } else if (n < 3 && !(i == 2 && n == 1)) {
                heat_deck_bad(v, e, "each of nx, ny, nz must be >= 3 (nz = 1 makes a 2D run)");
                ok = 0;
            } else if (n > (INT64_C(1) << 40)) {
                heat_deck_bad(v, e, "at most 2^40 points per axis");
                ok = 0;
            } else
                c->grid.n[i] = n;
        }
        if (ok) {
            double total = (double)c->grid.n[0] * (double)c->grid.n[1] * (double)c->grid.n[2];
            if (total > 0x1p50) heat_deck_bad(v, p, "at most 2^50 points in all");
            c->grid.dims = c->grid.n[2] == 1 ? 2 : 3;
        }
    }

    if (heat_deck_get_triple(v, g, "length", 1, c->grid.length, "[Lx, Ly, Lz], each > 0") == 1)
        for (unsigned i = 0; i < 3; i++)
            if (!(c->grid.length[i] > 0))
                heat_deck_bad(v, config_setting_get_elem(MEMBER(g, "length"), i),
                              "each length must be > 0 (Lz too in a 2D run, where it is unused)");
    heat_deck_get_triple(v, g, "origin", 0, c->grid.origin, "[x0, y0, z0], three numbers");
}

static void v_time(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"end", "max_steps", "dt", "safety", "scheme", NULL};
    c->time.safety = 0.9;
    c->time.scheme = HEAT_SCHEME_EXPLICIT;
    const config_setting_t *g = heat_deck_get_group(v, root, "time", 0, NULL);
    if (!g) return;
    heat_deck_check_keys(v, g, keys, NULL);
    if (heat_deck_get_number(v, g, "end", 0, &c->time.end) == 1) {
        if (c->time.end > 0)
            c->time.has_end = 1;
        else
            heat_deck_bad(v, MEMBER(g, "end"), "the end time must be > 0");
    }
    if (heat_deck_get_int(v, g, "max_steps", 0, &c->time.max_steps) == 1) {
        if (c->time.max_steps >= 1)
            c->time.has_max_steps = 1;
        else
            heat_deck_bad(v, MEMBER(g, "max_steps"), "max_steps must be >= 1");
    }
    if (heat_deck_get_number(v, g, "dt", 0, &c->time.dt) == 1) {
        if (c->time.dt > 0) {
            c->time.has_dt = 1;
            heat_deck_where(v, MEMBER(g, "dt"), c->time.dt_where, sizeof c->time.dt_where);
        } else
            heat_deck_bad(v, MEMBER(g, "dt"),
                          "dt must be > 0 (explicit steps may leave it out: safety * dt_max)");
    }
    if (heat_deck_get_number(v, g, "safety", 0, &c->time.safety) == 1 &&
        !(c->time.safety > 0 && c->time.safety <= 1))
        heat_deck_bad(v, MEMBER(g, "safety"), "safety must be in (0, 1]");
    int i;
    if (heat_deck_get_choice(v, g, "scheme", 0, heat_scheme_names, &i) == 1) {
        c->time.scheme = (heat_scheme)i;
        heat_deck_where(v, MEMBER(g, "scheme"), c->time.scheme_where, sizeof c->time.scheme_where);
    }
}

static void v_steady(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"tolerance", "check_every", "stall_checks", "method", NULL};
    c->steady.check_every = 100;
    c->steady.stall_checks = 100;
    c->steady.method = HEAT_STEADY_EXPLICIT;
    const config_setting_t *g = heat_deck_get_group(v, root, "steady", 0, NULL);
    if (!g) return;
    heat_deck_check_keys(v, g, keys, NULL);
    c->steady.enabled = 1;
    int m;
    if (heat_deck_get_choice(v, g, "method", 0, heat_steady_method_names, &m) == 1)
        c->steady.method = (heat_steady_method)m;
    if (heat_deck_get_number(v, g, "tolerance", 1, &c->steady.tolerance) == 1 &&
        !(c->steady.tolerance > 0))
        heat_deck_bad(v, MEMBER(g, "tolerance"), "the tolerance must be > 0");
    if (heat_deck_get_int(v, g, "stall_checks", 0, &c->steady.stall_checks) == 1 &&
        c->steady.stall_checks < 0)
        heat_deck_bad(
            v, MEMBER(g, "stall_checks"),
            "expected an integer >= 0 (checks without a new low residual before the run stops "
            "as stalled; 0: never)");
    if (heat_deck_get_int(v, g, "check_every", 0, &c->steady.check_every) == 1 &&
        c->steady.check_every < 1)
        heat_deck_bad(v, MEMBER(g, "check_every"), "check_every must be >= 1");
}

static void v_initial(vctx *v, const config_setting_t *root, heat_case *c)
{
    const char *const *types = heat_init_type_names;
    static const char *const k_constant[] = {"type", "value", NULL};
    static const char *const k_gaussian[] = {"type", "center", "width", "amplitude", "base", NULL};
    static const char *const k_sine[] = {"type", "modes", "amplitude", NULL};
    static const char *const k_file[] = {"type", "path", NULL};
    static const char *const k_all[] = {"type", "value", "center", "width", "amplitude",
                                        "base", "modes", "path",   NULL};
    const config_setting_t *g = heat_deck_get_group(
        v, root, "initial", 1, "a group with type = constant, gaussian, sine or file");
    if (!g) return;
    int t;
    if (heat_deck_get_choice(v, g, "type", 1, types, &t) != 1) {
        heat_deck_check_keys(v, g, k_all, NULL);
        return;
    }
    c->initial.type = (heat_init_type)t;
    char ctx[64];
    snprintf(ctx, sizeof ctx, "for type \"%s\"", types[t]);
    switch (c->initial.type) {
    case HEAT_INIT_CONSTANT:
        heat_deck_check_keys(v, g, k_constant, ctx);
        heat_deck_get_number(v, g, "value", 1, &c->initial.value);
        break;
    case HEAT_INIT_GAUSSIAN:
        heat_deck_check_keys(v, g, k_gaussian, ctx);
        heat_deck_get_triple(v, g, "center", 1, c->initial.center, "[x, y, z], three numbers");
        if (heat_deck_get_number(v, g, "width", 1, &c->initial.width) == 1 &&
            !(c->initial.width > 0))
            heat_deck_bad(v, MEMBER(g, "width"), "the width must be > 0");
        heat_deck_get_number(v, g, "amplitude", 1, &c->initial.amplitude);
        heat_deck_get_number(v, g, "base", 0, &c->initial.base);
        break;
    case HEAT_INIT_SINE:
        heat_deck_check_keys(v, g, k_sine, ctx);
        if (heat_deck_get_triple(v, g, "modes", 1, c->initial.modes,
                                 "[kx, ky, kz], three numbers >= 0") == 1)
            for (unsigned i = 0; i < 3; i++)
                if (!(c->initial.modes[i] >= 0))
                    heat_deck_bad(v, config_setting_get_elem(MEMBER(g, "modes"), i),
                                  "each wave number must be >= 0");
        heat_deck_get_number(v, g, "amplitude", 1, &c->initial.amplitude);
        break;
    case HEAT_INIT_FILE: {
        heat_deck_check_keys(v, g, k_file, ctx);
        const char *path;
        if (heat_deck_get_string(v, g, "path", 1, &path) == 1) {
            if (!path[0] || strlen(path) >= HEAT_PATH_MAX)
                heat_deck_bad(v, MEMBER(g, "path"),
                              "expected the path of a snapshot or checkpoint file");
            /* A restart never reads the initial field, and its seed file may
             * have moved since, or be relative to another directory. */
            else if (!v->restart && access(path, R_OK) != 0)
                heat_deck_bad(v, MEMBER(g, "path"), "cannot read the file: %s", strerror(errno));
            else
                snprintf(c->initial.path, sizeof c->initial.path, "%s", path);
        }
        break;
    }
    default:
        break;
    }
}

/* Every number in `s` and below it must be finite. */
static void check_finite(vctx *v, const config_setting_t *s)
{
    if (config_setting_type(s) == CONFIG_TYPE_FLOAT && !isfinite(config_setting_get_float(s)))
        heat_deck_bad(v, s, "expected a finite number");
    for (int i = 0; i < config_setting_length(s); i++)
        check_finite(v, config_setting_get_elem(s, (unsigned)i));
}

/* One face of `g` into *bc: 1 when it has a valid type (its keys then
 * checked too), else 0 (reported, or absent and not required). */
static int v_face(vctx *v, const config_setting_t *g, int f, int required, heat_bc *bc)
{
    const char *const *types = heat_bc_type_names;
    static const char *const k_dirichlet[] = {"type", "value", NULL};
    static const char *const k_neumann[] = {"type", "gradient", NULL};
    static const char *const k_periodic[] = {"type", NULL};
    static const char *const k_convective[] = {"type", "h", "ambient", NULL};
    static const char *const k_flux[] = {"type", "value", NULL};
    static const char *const k_all[] = {"type", "value", "gradient", "h", "ambient", NULL};
    const config_setting_t *fg = heat_deck_get_group(
        v, g, heat_face_names[f], required,
        "type = \"dirichlet\" with value, \"neumann\" with gradient, \"convective\" with h "
        "and ambient, \"flux\" with value, or \"periodic\"");
    if (!fg) return 0;
    int t;
    if (heat_deck_get_choice(v, fg, "type", 1, types, &t) != 1) {
        heat_deck_check_keys(v, fg, k_all, NULL);
        return 0;
    }
    bc->type = (heat_bc_type)t;
    char ctx[64];
    snprintf(ctx, sizeof ctx, "for type \"%s\"", types[t]);
    if (t == HEAT_BC_DIRICHLET) {
        heat_deck_check_keys(v, fg, k_dirichlet, ctx);
        heat_deck_get_number(v, fg, "value", 1, &bc->value);
    } else if (t == HEAT_BC_NEUMANN) {
        heat_deck_check_keys(v, fg, k_neumann, ctx);
        heat_deck_get_number(v, fg, "gradient", 0, &bc->gradient);
    } else if (t == HEAT_BC_CONVECTIVE) {
        heat_deck_check_keys(v, fg, k_convective, ctx);
        if (heat_deck_get_number(v, fg, "h", 1, &bc->h) == 1 && !(bc->h >= 0))
            heat_deck_bad(v, MEMBER(fg, "h"),
                          "the heat transfer coefficient must be >= 0 (W/(m^2 K))");
        heat_deck_get_number(v, fg, "ambient", 1, &bc->ambient);
    } else if (t == HEAT_BC_FLUX) {
        heat_deck_check_keys(v, fg, k_flux, ctx);
        heat_deck_get_number(v, fg, "value", 1, &bc->value);
    } else {
        heat_deck_check_keys(v, fg, k_periodic, ctx);
    }
    return 1;
}

static void v_boundary(vctx *v, const config_setting_t *root, heat_case *c)
{
    const char *const *faces = heat_face_names, *const *types = heat_bc_type_names;
    const config_setting_t *g =
        heat_deck_get_group(v, root, "boundary", 1, "a group with x_lo ... z_hi");
    if (!g) return;
    heat_deck_check_keys(v, g, faces, NULL);
    int nfaces = c->grid.dims == 2 ? 4 : 6;
    int have[HEAT_NFACES] = {0};
    for (int f = 0; f < HEAT_NFACES; f++) {
        if (f < nfaces) {
            have[f] = v_face(v, g, f, 1, &c->bc[f]);
            continue;
        }
        /* 2D: the z faces are ignored; only a number that the canonical text
         * could not write back (Inf, NaN) is refused. */
        const config_setting_t *zf = MEMBER(g, faces[f]);
        if (zf && v->notices)
            fprintf(v->notices, "notice: boundary.%s is ignored: nz = 1 makes a 2D run\n",
                    faces[f]);
        if (zf) check_finite(v, zf);
        c->bc[f].type = HEAT_BC_NEUMANN; /* unused in 2D */
    }
    for (int axis = 0; axis < nfaces / 2; axis++) {
        int lo = 2 * axis, hi = lo + 1;
        if (!have[lo] || !have[hi]) continue;
        int plo = c->bc[lo].type == HEAT_BC_PERIODIC, phi = c->bc[hi].type == HEAT_BC_PERIODIC;
        if (plo != phi) {
            const config_setting_t *p = MEMBER(MEMBER(g, faces[plo ? lo : hi]), "type");
            heat_deck_bad(v, p, "periodic faces come in pairs: boundary.%s is \"%s\"",
                          faces[plo ? hi : lo], types[c->bc[plo ? hi : lo].type]);
        }
    }
}

static void v_output(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {
        "dir",      "every", "checkpoint_every", "keep_checkpoints", "checkpoint_wall",
        "compress", NULL};
    snprintf(c->output.dir, sizeof c->output.dir, "out/%s", c->name);
    c->output.keep_checkpoints = 2;
    const config_setting_t *g = heat_deck_get_group(v, root, "output", 0, NULL);
    if (!g) return;
    heat_deck_check_keys(v, g, keys, NULL);
    const char *dir;
    if (heat_deck_get_string(v, g, "dir", 0, &dir) == 1) {
        if (!dir[0] || strlen(dir) >= HEAT_PATH_MAX - 64)
            heat_deck_bad(v, MEMBER(g, "dir"), "expected a directory path");
        else {
            /* Without its trailing slashes (but "/" itself), so that the
             * paths joined to it and the sibling a refusal suggests come out
             * right. */
            size_t n = strlen(dir);
            while (n > 1 && dir[n - 1] == '/') n--;
            snprintf(c->output.dir, sizeof c->output.dir, "%.*s", (int)n, dir);
        }
    }
    if (heat_deck_get_int(v, g, "every", 0, &c->output.every) == 1 && c->output.every < 0)
        heat_deck_bad(v, MEMBER(g, "every"),
                      "expected an integer >= 0 (0: initial and final snapshots only)");
    if (heat_deck_get_int(v, g, "checkpoint_every", 0, &c->output.checkpoint_every) == 1 &&
        c->output.checkpoint_every < 0)
        heat_deck_bad(v, MEMBER(g, "checkpoint_every"),
                      "expected an integer >= 0 (0: checkpoints only at the end and on signals)");
    if (heat_deck_get_int(v, g, "keep_checkpoints", 0, &c->output.keep_checkpoints) == 1 &&
        (c->output.keep_checkpoints < 1 || c->output.keep_checkpoints > 1000))
        heat_deck_bad(v, MEMBER(g, "keep_checkpoints"), "expected an integer from 1 to 1000");
    if (heat_deck_get_number(v, g, "checkpoint_wall", 0, &c->output.checkpoint_wall) == 1 &&
        !(c->output.checkpoint_wall >= 0))
        heat_deck_bad(v, MEMBER(g, "checkpoint_wall"),
                      "expected a number of seconds >= 0 (0: no checkpoints by wall time)");
    int64_t level;
    if (heat_deck_get_int(v, g, "compress", 0, &level) == 1) {
        if (level < 0 || level > 9)
            heat_deck_bad(
                v, MEMBER(g, "compress"),
                "expected an integer from 0 (off) to 9 (deflate level of the field files)");
        else
            c->output.compress = (int)level;
    }
}

static void v_solver(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"backend",        "precision",          "kernel",
                                       "temporal_block", "implicit_tolerance", NULL};
    c->solver.backend = HEAT_BACKEND_AUTO;
    c->solver.precision = HEAT_DOUBLE;
    c->solver.kernel = HEAT_KERNEL_FUSING; /* the fastest */
    c->solver.temporal_block = 1;
    const config_setting_t *g = heat_deck_get_group(v, root, "solver", 0, NULL);
    if (!g) return;
    heat_deck_check_keys(v, g, keys, NULL);
    int i;
    if (heat_deck_get_choice(v, g, "backend", 0, heat_backend_kind_names, &i) == 1)
        c->solver.backend = i;
    if (heat_deck_get_choice(v, g, "precision", 0, heat_precision_names, &i) == 1)
        c->solver.precision = i;
    if (heat_deck_get_choice(v, g, "kernel", 0, heat_kernel_names, &i) == 1) c->solver.kernel = i;
    double tol;
    if (heat_deck_get_number(v, g, "implicit_tolerance", 0, &tol) == 1) {
        if (!(tol > 0 && tol < 1))
            heat_deck_bad(v, MEMBER(g, "implicit_tolerance"),
                          "expected a number in (0, 1): the relative reduction of the residual "
                          "that ends each implicit step's multigrid solve");
        else
            c->solver.implicit_tolerance = tol;
    }
    /* One message for every bad value, a non-integer included, so it always says what is
     * allowed. */
    const config_setting_t *tb = config_setting_get_member(g, "temporal_block");
    int64_t k;
    if (tb) {
        const char *word =
            config_setting_type(tb) == CONFIG_TYPE_STRING ? config_setting_get_string(tb) : NULL;
        if (word && strcmp(word, "auto") == 0)
            c->solver.temporal_auto = 1;
        else if (word || !heat_deck_as_int64(tb, &k) || k < 1 || k > HEAT_TEMPORAL_BLOCK_MAX)
            heat_deck_bad(v, tb,
                          "expected an integer from 1 to %d (steps fused per pass over GPU memory "
                          "by the %s kernel) or \"auto\" (the fastest measured for the grid "
                          "and precision)",
                          HEAT_TEMPORAL_BLOCK_MAX, heat_kernel_name(HEAT_KERNEL_FUSING));
        else
            c->solver.temporal_block = (int)k;
    }
}

/* A float run holds every temperature as a float: a deck value that sets one
 * (a Dirichlet face's value, a convective face's ambient, the initial
 * field's levels) beyond FLT_MAX would start the field as Inf. Refused as a
 * deck error, here where the key and its line are known, rather than as a
 * field that is "no longer finite" at step 0. */
static void float_range(vctx *v, const config_setting_t *s, double x, const char *what)
{
    if (s && !(fabs(x) <= FLT_MAX))
        heat_deck_bad(v, s,
                      "%s is beyond the range of solver.precision = \"float\" (|value| <= "
                      "%.9g): use a smaller value, or solver.precision = \"double\"",
                      what, (double)FLT_MAX);
}

static void check_float_range(vctx *v, const config_setting_t *root, const heat_case *c)
{
    if (c->solver.precision != HEAT_FLOAT) return;
    const config_setting_t *b = MEMBER(root, "boundary"), *in = MEMBER(root, "initial");
    for (int f = 0; b && f < 2 * c->grid.dims; f++) {
        const config_setting_t *fg = MEMBER(b, heat_face_names[f]);
        if (!fg || !config_setting_is_group(fg)) continue;
        if (c->bc[f].type == HEAT_BC_DIRICHLET)
            float_range(v, MEMBER(fg, "value"), c->bc[f].value, "a Dirichlet face's value");
        else if (c->bc[f].type == HEAT_BC_CONVECTIVE)
            float_range(v, MEMBER(fg, "ambient"), c->bc[f].ambient, "the ambient temperature");
    }
    if (!in || !config_setting_is_group(in)) return;
    switch (c->initial.type) {
    case HEAT_INIT_CONSTANT:
        float_range(v, MEMBER(in, "value"), c->initial.value, "the initial value");
        break;
    case HEAT_INIT_GAUSSIAN:
        /* The field lies between base and base + amplitude, the blob's peak. */
        float_range(v, MEMBER(in, "base"), c->initial.base, "the initial base level");
        if (fabs(c->initial.base) <= FLT_MAX &&
            !(fabs(c->initial.base + c->initial.amplitude) <= FLT_MAX) && MEMBER(in, "amplitude")) {
            char what[128];
            snprintf(what, sizeof what, "the blob's peak base + amplitude = %.9g",
                     c->initial.base + c->initial.amplitude);
            float_range(v, MEMBER(in, "amplitude"), c->initial.base + c->initial.amplitude, what);
        }
        break;
    case HEAT_INIT_SINE:
        float_range(v, MEMBER(in, "amplitude"), c->initial.amplitude, "the amplitude");
        break;
    default:
        break;
    }
}

/* What multigrid cannot combine with: a steady multigrid solve has no time
 * scheme. */
static void check_multigrid(vctx *v, const config_setting_t *root, const heat_case *c)
{
    if (heat_case_steady_multigrid(c) && heat_case_implicit(c))
        heat_deck_bad(v, MEMBER(MEMBER(root, "time"), "scheme"),
                      "steady.method = \"multigrid\" solves the steady state directly, without "
                      "time steps: use time.scheme = \"explicit\" (or leave it out), or "
                      "steady.method = \"explicit\" to march implicit steps to the steady state");
}

void heat_deck_validate(vctx *v, const config_t *cfg, heat_case *c)
{
    static const char *const keys[] = {"name",     "grid",   "material", "materials", "regions",
                                       "sources",  "probes", "time",     "steady",    "initial",
                                       "boundary", "output", "solver",   "parallel",  NULL};
    const config_setting_t *root = config_root_setting(cfg);
    heat_deck_check_keys(v, root, keys, "at the top level");
    v_name(v, root, c, v->origin);
    v_grid(v, root, c);
    heat_deck_v_materials(v, root, c);
    heat_deck_v_regions(v, root, c);
    heat_deck_v_sources(v, root, c);
    heat_deck_v_probes(v, root, c);
    v_time(v, root, c);
    v_steady(v, root, c);
    v_initial(v, root, c);
    v_boundary(v, root, c);
    heat_deck_check_conductivity(v, root, c);
    v_output(v, root, c);
    v_solver(v, root, c);
    check_float_range(v, root, c);
    if (!(c->solver.implicit_tolerance > 0))
        c->solver.implicit_tolerance = heat_case_default_implicit_tolerance(c->solver.precision);
    check_multigrid(v, root, c);
    validate_parallel(v, root, c);
    /* Only when no stop rule is written at all: a bad one is reported already. */
    if (!config_lookup(cfg, "time.end") && !config_lookup(cfg, "time.max_steps") &&
        !config_lookup(cfg, "steady"))
        heat_error_append(v->err, HEAT_EINPUT,
                          "%s: nothing would stop the run: give time.end, time.max_steps or a "
                          "steady = { tolerance = ...; } group",
                          v->origin);
}
