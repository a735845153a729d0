/* An all-reduce (average) of a flat float vector over the gossip
 * transport, on one of two fixed schedules, both bandwidth-optimal
 * (every peer sends and receives 2(n-1)/n of the vector), the vector cut
 * into n segments and every segment into chunks, pipelined: a chunk is
 * passed on the moment what it holds has been reduced.
 *
 * Ring (MM_AR_RING, any n): peers in id order form the ring: peer i
 * receives from i-1 and sends to i+1 (mod n). At global step g
 * (0 .. 2n-3) peer i sends segment (i-g) mod n and receives segment
 * (i-g-1) mod n; steps 0 .. n-2 reduce (add our own floats to what arrived
 * and pass the partial sum on; the last of them divides by n), steps
 * n-1 .. 2n-3 gather (copy the average and pass it on). 2(n-1) steps.
 *
 * Halving-doubling (MM_AR_HALVING, n a power of two, Rabenseifner's):
 * reduce-scatter by recursive halving, then all-gather by recursive
 * doubling, 2 log2(n) steps, each a pairwise exchange with one partner
 * (docs/protocol.md 3.2 has the exact schedule). Fewer steps, so less
 * fixed cost per all-reduce: what decides small vectors on many peers.
 *
 * Every chunk is one VECTOR frame whose vector header names its floats
 * (offset, count) and its step (aux); a peer expects each partner's chunks
 * in exactly the order of the schedule and fails the all-reduce on
 * anything else (docs/protocol.md 3.2, docs/node.md "All-reduce").
 *
 * Runs entirely on the transport's loop thread, like the transport: the
 * owner forwards the transport's callbacks here. It knows no model. One
 * all-reduce at a time; synchronous by nature, so a partner that goes
 * down or leaves mid-way fails it (the error names the peer and the step)
 * and nothing is retried. */
#ifndef MURMUR_ALLREDUCE_H
#define MURMUR_ALLREDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/transport.h"

typedef struct mm_allreduce mm_allreduce;

/* The longest failure message, NUL included (mm_allreduce_error: the
 * cause, a partner's refusal text with it, and where the schedule stood). */
#define MM_ALLREDUCE_ERR 1024

/* Floats per chunk when the configuration gives 0: 256 KiB of fp32. */
#define MM_ALLREDUCE_CHUNK_DEFAULT (64u * 1024)

typedef enum { MM_AR_IDLE, MM_AR_RUNNING, MM_AR_DONE, MM_AR_FAILED } mm_ar_state;

/* The schedule (every peer must run the same one: the HELLO carries it
 * as the algorithm's variant, net/algo.h, docs/protocol.md 3.1). */
typedef enum {
#define MM_X(NAME, code, name) MM_AR_##NAME = code,
    MM_AR_SCHEDULES(MM_X)
#undef MM_X
} mm_ar_schedule;
#define MM_AR_AUTO (-1) /* --allreduce-schedule auto: mm_allreduce_schedule_pick */

/* Partners a peer has at most (halving: log2(n); the ring: 2). */
#define MM_AR_MAX_PARTNERS 32

/* "ring", "halving". */
const char *mm_allreduce_schedule_name(mm_ar_schedule s);
/* The schedule called s (or "auto": MM_AR_AUTO); -2 for none. */
int mm_allreduce_schedule_parse(const char *s);
/* True when s can run on n peers (halving: n a power of two). */
bool mm_allreduce_schedule_fits(mm_ar_schedule s, uint32_t n);
/* --allreduce-schedule `requested` (or MM_AR_AUTO) on n peers: 0, or -1
 * with why (the start's refusal and --dry-run's, exit 2). */
int mm_allreduce_schedule_check(int requested, uint32_t n, char *err, size_t errlen);
/* The schedule for `requested` (an mm_ar_schedule, or MM_AR_AUTO) with n
 * peers, one_host when every peer's address names the same host, and len
 * floats. Auto takes halving where it fits (n a power of two above 2) on
 * one host, where every pair of peers is as close as any other, for
 * vectors up to MM_AR_HALVING_MAX_BYTES, where its fewer steps are what
 * counts; the ring otherwise: across hosts its neighbours can be placed
 * close, and on one host it is level at 16 MB and ahead at 64 MB under
 * load (docs/node.md "All-reduce", docs/runtime.md). */
#define MM_AR_HALVING_MAX_BYTES (8u << 20)
mm_ar_schedule mm_allreduce_schedule_pick(int requested, uint32_t n, bool one_host, uint64_t len);
/* Marks in senders[0 .. n-1] the peers that send chunks to self. */
void mm_allreduce_senders(mm_ar_schedule s, uint32_t self, uint32_t n, bool *senders);
/* self's partners, in the order of their first step (ring: left, then
 * right unless it is the left; halving: self ^ n/2, ..., self ^ 1):
 * returns how many (at most MM_AR_MAX_PARTNERS), written to peers. */
int mm_allreduce_peers(mm_ar_schedule s, uint32_t self, uint32_t n, uint32_t *peers);

typedef struct {
    mm_transport *transport; /* its vec_len is the vector's length */
    uint32_t self, n;
    uint64_t len;            /* floats averaged (the transport's vec_len, or a fragment's) */
    uint64_t base;           /* the floats' offset on the wire: an outer fragment's first
                              * (--outer-fragments), 0 for the whole vector */
    uint64_t chunk;          /* floats per chunk; 0: MM_ALLREDUCE_CHUNK_DEFAULT */
    mm_ar_schedule schedule; /* 0: the ring; must fit n (mm_allreduce_schedule_fits) */
    /* Called on the loop thread when an all-reduce ends, done or failed. */
    void (*done)(void *ud, mm_ar_state st, const char *err);
    void *ud;
} mm_allreduce_config;

mm_allreduce *mm_allreduce_new(const mm_allreduce_config *cfg, char *err, size_t errlen);
void mm_allreduce_free(mm_allreduce *a);

/* Starts averaging `in` over the schedule, tagged with round (the frame's round
 * on the wire; every peer must use the same one), into `out` (len floats
 * each). `in` is read until the all-reduce ends and must not change
 * meanwhile; `out` may be `in` (in place: the engine then waits for a
 * segment's own send to finish before overwriting it). Declares the
 * partners wanted (mm_transport_want). done() may be called before this
 * returns (n = 1, or a neighbour already lost). -1 when one is running. */
int mm_allreduce_start(mm_allreduce *a, uint64_t round, const float *in, float *out);

/* The transport's callbacks, forwarded by the owner (on the loop thread).
 * on_vector returns true when it took the vector (it gives the buffer back
 * itself, at once or when it can use it). */
bool mm_allreduce_on_vector(mm_allreduce *a, uint32_t peer, uint64_t round,
                            const mm_wire_vec *meta, const void *body, size_t body_len);
/* The transport's vector_dst: where the body of the chunk from `peer`
 * that meta describes should be read. An all-gather chunk that is due goes
 * straight to its place in out (no copy) once nothing still sends those
 * floats; NULL for anything else (the receive buffer, then on_vector). */
float *mm_allreduce_vector_dst(mm_allreduce *a, uint32_t peer, uint64_t round,
                               const mm_wire_vec *meta);
void mm_allreduce_on_sent(mm_allreduce *a, uint32_t peer, uint64_t round, bool ok);
void mm_allreduce_on_peer(mm_allreduce *a, uint32_t peer, mm_peer_state st);
/* A partner refused (by either side) for a configuration that differs
 * (mm_refusal_is_config: another --allreduce-chunk, model, schedule, ...):
 * the running all-reduce fails at once naming why, or the next one will.
 * Not waited for until --start-timeout: it would never come. */
void mm_allreduce_on_refused(mm_allreduce *a, uint32_t peer, const char *why);

/* Fails the running all-reduce (the owner's timeout): the error is why,
 * followed by where it stood (step, awaited peer). */
void mm_allreduce_abort(mm_allreduce *a, const char *why);

mm_ar_state mm_allreduce_state(const mm_allreduce *a);
/* The last failure's message ("" when none). */
const char *mm_allreduce_error(const mm_allreduce *a);
/* Chunks received and sends completed since creation: moves whenever the
 * all-reduce makes progress. */
uint64_t mm_allreduce_progress(const mm_allreduce *a);
/* Messages (chunk frames) one peer sends per all-reduce: its schedule. */
uint64_t mm_allreduce_messages(const mm_allreduce *a);
/* mm_allreduce_peers of this all-reduce's schedule. */
int mm_allreduce_partners(const mm_allreduce *a, uint32_t *peers);

#endif
