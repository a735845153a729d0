/* The codec rows of make bench-gossip (tests/bench_codec.c), and the one
 * function of tests/bench_gossip.c they share: the transport loop. */
#ifndef MURMUR_BENCH_CODEC_H
#define MURMUR_BENCH_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A codec riding the transport benchmark: before vector r leaves, the
 * sender encodes x (CHOCO form, into a slot of a small ring of payload
 * buffers); when it arrives, the receiver applies that payload to its copy.
 * What travels is a carrier of the payload's size (the transport refuses
 * NaN-looking floats in a VECTOR frame, and codec frames are the
 * integration's), so the transport does the work of moving exactly the
 * payload's bytes while encode and decode run on the two loop threads as
 * they would in a node. */
typedef struct bench_codec_run bench_codec_run;

void bcr_before_send(bench_codec_run *r, uint64_t round); /* sender's loop thread */
void bcr_on_receive(bench_codec_run *r, uint64_t round);  /* receiver's loop thread */

/* tests/bench_gossip.c: vectors of `size` bytes from peer 0 to peer 1,
 * reps times; bytes/s, or 0 on failure (*bad set). With cr, the codec's
 * hooks run around every vector. */
double bench_transport_run(const char *certdir, bool plaintext, size_t size, size_t reps,
                           int *bad, double *cpu, bench_codec_run *cr);

/* The codec section: per-core speeds, bytes per float, and the effective
 * parameter throughput over TLS against fp32 over TLS measured in the same
 * trials, at each of sizes[] floats. Figures to stdout and to csv (may be
 * NULL). Returns failures. */
int bench_codecs(const char *certdir, const char *codecs, const uint64_t *sizes, int n_sizes,
                 size_t per_case, int trials, FILE *csv);

#endif
