/* The codec rows of make bench-gossip (tests/bench_codec.c), and the one
 * function of tests/bench_gossip.c they share: the transport loop. */
#ifndef MURMUR_BENCH_CODEC_H
#define MURMUR_BENCH_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* tests/bench_gossip.c: vectors of `size` bytes from peer 0 to peer 1 over
 * the real transport (plaintext or TLS), reps times back to back; bytes/s,
 * or 0 on failure (*bad set). */
double bench_transport_run(const char *certdir, bool plaintext, size_t size, size_t reps,
                           int *bad, double *cpu);

/* tests/bench_gossip.c: a free loopback port. */
int bench_free_port(void);

/* The codec section: per-core speeds, bytes per float, and the effective
 * parameter throughput over TLS against fp32 over TLS measured in the same
 * trials, at each of sizes[] floats. Figures to stdout and to csv (may be
 * NULL). Returns failures. */
int bench_codecs(const char *certdir, const char *codecs, const uint64_t *sizes, int n_sizes,
                 size_t per_case, int trials, FILE *csv);

#endif
