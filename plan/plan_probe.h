/* What `murmur plan --calibrate` measures on this machine: the BLAS's
 * sgemm speed, the time of one training step of a model shape, the speed
 * of one mixing pass, and TCP throughput (over loopback, or to a
 * `murmur plan --link-server` on another host or lab namespace). Each
 * function blocks for about the time it is given; errors come back in err. */
#ifndef MURMUR_PLAN_PROBE_H
#define MURMUR_PLAN_PROBE_H

#include <stddef.h>

#include "model/model.h"

/* GFLOP/s of a 1024^3 cblas_sgemm, median of 5 (after one warm-up). */
double mm_probe_sgemm_gflops(void);

/* Mean and standard deviation of the wall time of `steps` training steps
 * (forward, backward, AdamW) of cfg at batch B, after 2 unmeasured ones,
 * on random bytes. 0, or -1 with err. */
int mm_probe_step(const mm_model_config *cfg, int batch, int steps, double *mean, double *sd,
                  char *err, size_t errlen);

/* Floats per second of one mixing pass (mm_mix_axpy_dist) over a vector
 * of n floats (at most 16 M are used). -1 when out of memory. */
double mm_probe_mix_fps(size_t n);

/* Receiver: listen on HOST:PORT, accept one connection within timeout_s,
 * read until the sender closes, close. *bytes gets what was read. */
int mm_probe_link_serve(const char *hostport, double timeout_s, double *bytes, char *err,
                        size_t errlen);
/* Sender: connect to HOST:PORT (retrying for up to 5 s while refused),
 * write for `seconds`, close the writing side and wait until the receiver
 * has read everything and closed: bytes/s from the first byte to then. */
int mm_probe_link_send(const char *hostport, double seconds, double *bps, char *err,
                       size_t errlen);
/* The two over 127.0.0.1 (a receiving thread here): bytes/s. */
int mm_probe_loopback(double seconds, double *bps, char *err, size_t errlen);

#endif
