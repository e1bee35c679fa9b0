/* The backend seam: whatever owns the field on its device (the OpenMP CPU
 * backend, the CUDA backend) behind one interface. The driver sees only these
 * calls; a backend never reads the deck, only the validated, derived case.
 */
#ifndef HEAT_BACKEND_H
#define HEAT_BACKEND_H

#include <stdint.h>
#include <stdio.h>

#include "heat_case.h"
#include "heat_error.h"

typedef struct heat_backend heat_backend;

/* Creates the backend the case asks for (solver.backend): "cpu"; "cuda"
 * (HEAT_ERUNTIME with the reason when this build or machine has no usable
 * GPU); "auto" (CUDA when usable, else the CPU, with a line saying why on
 * `notices` if not NULL). `c` must have been through heat_case_derive() and
 * must outlive the backend. Allocates both time levels of the field; returns
 * HEAT_ERUNTIME naming the bytes needed when memory is short. */
int heat_backend_create(const heat_case *c, FILE *notices, heat_backend **out, heat_error *err);

/* Copies a host field (nx*ny*nz values of the case's precision, x fastest,
 * Dirichlet faces already holding their values) to the backend. */
int heat_backend_upload(heat_backend *b, const void *host_field, heat_error *err);

/* Runs `steps` >= 1 forward Euler steps (boundaries applied in every step,
 * solver.temporal_block steps per pass where the backend fuses steps). When
 * `residual` is not NULL, stores max |u^{n+1} - u^n| / dt of the last step in
 * it (NaN or Inf when the field is no longer finite). */
int heat_backend_advance(heat_backend *b, int64_t steps, double *residual, heat_error *err);

/* Copies the current field to host memory of nx*ny*nz values. */
int heat_backend_download(heat_backend *b, void *host_field, heat_error *err);

/* The same copy, overlapped with the steps that follow: starts copying the
 * current field into `host_field` and returns; the field in host memory is
 * complete once heat_backend_download_wait() returns, and advance() may be
 * called in between. One copy at a time (starting a second waits for the
 * first). The CUDA backend snapshots the field on the device and copies it on
 * a second stream; the CPU backend copies at once. For the overlap the host
 * memory should come from heat_backend_host_alloc(). */
int heat_backend_download_start(heat_backend *b, void *host_field, heat_error *err);
int heat_backend_download_wait(heat_backend *b, heat_error *err);

/* Host memory suited to downloads (page-locked for the CUDA backend, where
 * it can be had; else plain malloc), and its release. NULL when out of
 * memory. */
void *heat_backend_host_alloc(heat_backend *b, size_t bytes);
void heat_backend_host_free(heat_backend *b, void *p);

/* One line describing the backend ("cpu: OpenMP, 8 threads"). */
const char *heat_backend_describe(const heat_backend *b);

/* Frees everything; NULL is a no-op. */
void heat_backend_destroy(heat_backend *b);

/* The backends compiled into this program, for --version: "cpu" or "cpu, cuda". */
const char *heat_backend_builtin(void);

#endif
