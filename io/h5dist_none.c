/* A build without MPI has no ranks' writer: heat_h5dist_create does not
 * exist, so no heat_h5dist is ever made and these are never reached with
 * one; they keep output.c and the driver free of #ifdefs. */
#include "h5part.h"

int heat_h5dist_write(heat_h5dist *d, const char *path, const heat_file_meta *m, const void *box,
                      int compress, heat_error *err)
{
    (void)d, (void)m, (void)box, (void)compress;
    return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: this heat was built without MPI",
                          path);
}

int heat_h5dist_agree(heat_h5dist *d, int rc, heat_error *err)
{
    (void)d, (void)err;
    return rc;
}

int heat_h5dist_rank(const heat_h5dist *d)
{
    (void)d;
    return 0;
}

const char *heat_h5dist_method(const heat_h5dist *d)
{
    (void)d;
    return "one process";
}

void heat_h5dist_destroy(heat_h5dist *d)
{
    (void)d;
}
