/* The deck's `parallel` group: how a run under MPI splits the grid, moves
 * halos and writes its files. Every key is optional; without the group the
 * run chooses. docs/DECK.md lists the keys. */
#include <libconfig.h>
#include <stdint.h>
#include <stdio.h>

#include "deck_internal.h"
#include "heat_split.h"

/* parallel.ranks = [px, py, pz]: integers >= 1 that fit the grid. Whether
 * their product is the number of processes is known only when the run
 * starts (solver/decomp.c). */
static void v_ranks(vctx *v, const config_setting_t *g, heat_case *c)
{
    const config_setting_t *r = MEMBER(g, "ranks");
    const char *what = "[px, py, pz]: ranks per axis, integers >= 1 whose product is the number "
                       "of processes (pz = 1 in 2D)";
    if (!r) return;
    if ((!config_setting_is_array(r) && !config_setting_is_list(r)) ||
        config_setting_length(r) != 3) {
        heat_deck_bad(v, r, "expected %s", what);
        return;
    }
    int ranks[3], ok = 1;
    for (unsigned i = 0; i < 3; i++) {
        const config_setting_t *e = config_setting_get_elem(r, i);
        int64_t n;
        if (!heat_deck_as_int64(e, &n) || n < 1 || n > (1 << 24)) {
            heat_deck_bad(v, e, "expected an integer from 1 to %d (ranks along %c)", 1 << 24,
                          "xyz"[i]);
            ok = 0;
        } else
            ranks[i] = (int)n;
    }
    if (!ok || c->grid.dims == 0) return; /* the grid is reported already */
    char why[256];
    if (!heat_split_fits(c, ranks, heat_split_depth(c), why, sizeof why)) {
        heat_deck_bad(v, r, "%s", why);
        return;
    }
    for (int i = 0; i < 3; i++) c->parallel.ranks[i] = ranks[i];
}

void validate_parallel(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"ranks", "transport", "io", NULL};
    c->parallel.transport = HEAT_TRANSPORT_AUTO;
    c->parallel.io = HEAT_PIO_AUTO;
    const config_setting_t *g = heat_deck_get_group(v, root, "parallel", 0, NULL);
    if (!g) return;
    heat_deck_check_keys(v, g, keys, NULL);
    v_ranks(v, g, c);
    int i;
    if (heat_deck_get_choice(v, g, "transport", 0, heat_transport_names, &i) == 1)
        c->parallel.transport = (heat_transport)i;
    if (heat_deck_get_choice(v, g, "io", 0, heat_pio_names, &i) == 1) c->parallel.io = (heat_pio)i;
}
