/* The all-gather of the compressed outer exchange (docs/outer.md, "Over
 * the all-reduce"; docs/protocol.md 3.2, the all-reduce's variant 2):
 * every peer has one payload (its codec-compressed pseudo-gradient,
 * gossip/ef.h) and ends with every peer's, passed around the ring of
 * peers in id order. Peer i receives only from i-1 and sends only to i+1
 * (mod n); at step g (0 .. n-2) it sends the payload of peer (i-g) mod n
 * (its own at step 0, then the one it received at step g-1) and receives
 * the payload of peer (i-g-1) mod n. Each payload is one VECTOR frame: a
 * whole vector (offset 0, count vec_len) in the agreed codec, aux = g, the
 * frame's exchange the round. n-1 steps of a whole payload: each peer
 * sends and receives (n-1) payloads, against the ring all-reduce's
 * 2(n-1)/n fp32 vectors.
 *
 * Like node/allreduce.h it runs on the transport's loop thread, driven by
 * the transport's callbacks that the owner forwards, knows no model and
 * no codec (the transport checked every body with the owner's
 * check_body before it lends it), and fails on anything out of order (the
 * error names the peer and the step); nothing is retried. */
#ifndef MURMUR_ALLGATHER_H
#define MURMUR_ALLGATHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/transport.h"
#include "node/allreduce.h"

typedef struct mm_allgather mm_allgather;

typedef struct {
    mm_transport *transport;
    uint32_t self, n;
    uint64_t vec_len;        /* floats a payload describes: its frames' count */
    uint8_t codec;           /* the agreed codec, named in every frame */
    size_t slot_bytes;       /* the longest payload: a slot's size */
    /* Called on the loop thread when an all-gather ends, done or failed. */
    void (*done)(void *ud, mm_ar_state st, const char *err);
    void *ud;
} mm_allgather_config;

mm_allgather *mm_allgather_new(const mm_allgather_config *cfg, char *err, size_t errlen);
void mm_allgather_free(mm_allgather *g);

/* Starts gathering for `round` into slots (n slots of slot_bytes bytes,
 * slot j at slots + j * slot_bytes) and lens (n): slot self and lens[self]
 * hold this peer's payload; the others are written as they arrive. Both
 * are the loop's until the all-gather ends. Declares the two ring
 * neighbours wanted. done() may be called before this returns (n = 1, or
 * a neighbour already lost). -1 when one is running. */
int mm_allgather_start(mm_allgather *g, uint64_t round, uint8_t *slots, size_t *lens);
void mm_allgather_abort(mm_allgather *g, const char *why);
uint64_t mm_allgather_progress(const mm_allgather *g);
/* The two ring neighbours (left, right; one when n = 2): how many. */
int mm_allgather_partners(const mm_allgather *g, uint32_t *peers);

/* The transport's callbacks, forwarded by the owner (loop thread), as
 * node/allreduce.h's. vector_dst: the slot a due payload of body_len
 * bytes is read into (no copy), NULL for anything else. */
bool mm_allgather_on_vector(mm_allgather *g, uint32_t peer, uint64_t round,
                            const mm_wire_vec *meta, const void *body, size_t body_len);
void *mm_allgather_vector_dst(mm_allgather *g, uint32_t peer, uint64_t round,
                              const mm_wire_vec *meta, size_t body_len);
void mm_allgather_on_sent(mm_allgather *g, uint32_t peer, uint64_t round, bool ok);
void mm_allgather_on_peer(mm_allgather *g, uint32_t peer, mm_peer_state st);

#endif
