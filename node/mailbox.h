/* The mailbox between a peer's two threads. The training thread owns the
 * parameters; the loop thread owns the connections. Nothing else crosses
 * between them: the mutex and the condition variable live inside, the
 * loop is woken with uv_async_send, the training thread sleeps in
 * mm__mbox_wait. (libuv's own rule for threads, and the one docs/node.md
 * and docs/architecture.md describe.)
 *
 * What it carries:
 *   training -> loop: the peers wanted now; sends of a snapshot buffer to a
 *     peer; received vectors given back; "I am finished".
 *   loop -> training: received vectors (lent by the transport until given
 *     back), peer states, sends that are done, the transport's counters,
 *     signals.
 * The snapshot buffers are the mailbox's: the training thread writes one
 * (acquire, fill, publish), the loop sends it, and a buffer is reused only
 * when no send still reads it.
 *
 * Internal to node/ (the mm__ prefix): not part of murmur's API. */
#ifndef MURMUR_MAILBOX_H
#define MURMUR_MAILBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "net/transport.h"
#include "node/allreduce.h"

/* Snapshots in flight: this round's, the last round's still going to a fast
 * neighbour, and one pinned by a send to a neighbour that stopped reading
 * (until the transport declares it down). With two, that stuck send made
 * every round wait for its previous sends to finish (measured: async peers
 * waited ~1.4 s of 3 s around a SIGSTOPped neighbour). */
#define MM__MBOX_BUFS 3

/* CONNECTING: newly wanted and not up yet; worth waiting for. DOWN and GONE
 * were reported by the transport: not worth waiting for. */
typedef enum {
    MM__PEER_UNKNOWN, MM__PEER_CONNECTING, MM__PEER_UP, MM__PEER_DOWN, MM__PEER_GONE
} mm__peer_state;

/* What the training thread sees of one peer, copied under the lock. */
typedef struct {
    mm__peer_state state;
    bool ever_up;            /* has been up at least once */
    bool has_vector;         /* a received vector waits to be used or given back */
    uint64_t exchange;       /* ... of this exchange (round * gossip_steps + step) */
    mm_wire_vec meta;        /* ... its vector header (weight, codec, flags, ...) */
    const void *body;        /* ... its body, body_len bytes (valid until mm__mbox_release) */
    size_t body_len;
    double delivered_at;     /* ... when the transport handed it over (mm_time_now) */
    int queued;              /* vectors in its inbox (more than one: staged copies) */
    uint64_t newest_exchange; /* ... the exchange of the last of them, */
    double newest_at;        /* ... and when it was handed over */
    bool send_pending;       /* our send to it waits for it to come up */
    uint64_t pending_exchange;
    /* For compressed gossip (node/algo_choco.c), which must know whether
     * every frame since a RESET reached the peer: */
    uint64_t ups;            /* times its connection came up (a new connection) */
    uint64_t lost;           /* sends to it dropped or failed (never written whole) */
    uint64_t vector_ups;     /* ups when the waiting vector was delivered */
    /* The last send handed to the transport (written to a connection that
     * was up): its exchange (UINT64_MAX: none yet, or handed back) and the
     * ups of that connection. A send pending while the peer connects goes
     * out on the new connection: this says which. */
    uint64_t written_exchange, written_ups;
} mm__peer_view;

/* What the transport said about a peer's refused connections and failed
 * dials (on_refused), as the training thread sees it. */
typedef struct {
    uint64_t count;          /* refusals and failed dials */
    mm_refusal last;         /* the last of them */
    bool config;             /* one said the two are configured differently */
    uint64_t config_count;   /* ... how many */
    mm_refusal last_config;  /* ... the last of those (mm_refusal_is_config) */
    bool id_clash;           /* two processes claimed one id, on either side */
} mm__refusals;

typedef enum {
    MM__CMD_SEND, MM__CMD_RELEASE, MM__CMD_ALLREDUCE, MM__CMD_ALLGATHER, MM__CMD_AR_ABORT
} mm__cmd_kind;

typedef struct {
    mm__cmd_kind kind;
    uint32_t peer;
    uint64_t exchange;
    int buf;
    mm_wire_vec meta;        /* SEND: the vector header */
    size_t off, len;         /* SEND: the bytes of the buffer to send */
    int chunks;              /* SEND: 0, or the buffer's stream of this many chunks
                              * (mm__mbox_chunk) instead of off, len */
    const float *in;         /* ALLREDUCE: the vector to average ... */
    float *out;              /* ... and where the average goes (may be in) */
    uint8_t *slots;          /* ALLGATHER: the peers' payloads (node/allgather.h) ... */
    size_t *lens;            /* ... and their lengths */
    char why[96];            /* AR_ABORT: the reason */
} mm__cmd;

/* --algo allreduce: what the training thread sees of the ring. */
typedef enum { MM__AR_IDLE, MM__AR_RUNNING, MM__AR_DONE, MM__AR_FAILED } mm__ar_state;
typedef struct {
    mm__ar_state state;
    double last_progress;    /* mm_time_now() of the last chunk in or out (or the start) */
    double seconds;          /* the last all-reduce, start to end, on the loop thread */
    char err[MM_ALLREDUCE_ERR]; /* FAILED: why, naming the peer and the step */
} mm__ar_view;

/* One chunk of a streamed send (compressed gossip, docs/protocol.md 6.10):
 * floats offset .. offset+count-1 of the vector, whose body is bytes
 * off .. off+len-1 of the buffer, and the copy_crc of its frame. */
typedef struct {
    uint64_t offset, count;
    size_t off, len;
    uint32_t crc;
} mm__chunk;

typedef struct mm__mbox mm__mbox;

/* Received bodies of at most stage_bytes a peer's inbox may hold as
 * copies (the transport's buffer given back at once, so that it reads the
 * next chunk of a stream while the training thread applies this one). */
#define MM__MBOX_STAGE 4

/* n_peers peers, snapshot buffers of buf_bytes bytes (at least the fp32
 * vector, 4 * vec_len; a codec's encoded vector must fit), each with room
 * for max_chunks chunks of a streamed send (0: none); received bodies of
 * at most stage_bytes copied out of the transport's buffer (0: none,
 * every vector stays lent); wake is the loop's async handle (initialised
 * by the caller). NULL when out of memory. */
mm__mbox *mm__mbox_new(uint32_t n_peers, size_t buf_bytes, int max_chunks, size_t stage_bytes,
                       uv_async_t *wake);
void mm__mbox_free(mm__mbox *mb);

/* ---- training thread ---- */

/* The peers wanted now (this round's and the next round's neighbours). A
 * peer newly wanted and not up is marked CONNECTING: worth waiting for. */
void mm__mbox_want(mm__mbox *mb, const uint32_t *peers, int n);
/* A snapshot buffer no send still reads, to fill (-1 when stopping). While
 * it is being filled the loop will not send it. */
int mm__mbox_acquire(mm__mbox *mb);
void *mm__mbox_buf(mm__mbox *mb, int b);
/* The buffer now holds exchange e's snapshot: sends of it may go out. */
void mm__mbox_publish(mm__mbox *mb, int b, uint64_t exchange);
/* The buffer will hold exchange e's payload as a stream of n_chunks chunks
 * (at most max_chunks), written one after the other while the first ones
 * go out: streamed sends of it (mm__mbox_send_stream) may be queued now,
 * and each chunk goes out once mm__mbox_chunk_ready has said it is there.
 * Other sends of the buffer (mm__mbox_send_at) only of bytes already
 * written. */
void mm__mbox_publish_stream(mm__mbox *mb, int b, uint64_t exchange, int n_chunks);
/* Chunk k of buffer b (k: the chunks readied so far) is written: its
 * bytes may be sent. Wakes the loop. */
void mm__mbox_chunk_ready(mm__mbox *mb, int b, const mm__chunk *ch);
/* Send buffer b's stream to peer, chunk by chunk as they are ready, with
 * the vector header meta (offset, count and copy_crc: each chunk's). One
 * send, as mm__mbox_send: pending, in flight, sent or lost as a whole. */
void mm__mbox_send_stream(mm__mbox *mb, uint32_t peer, uint64_t exchange, int b,
                          const mm_wire_vec *meta);
/* Send the first len bytes of buffer b to peer, for exchange e, with the
 * vector header meta. It is pending until the peer is up; one send per
 * peer is in flight at a time (a peer that has not taken the last one is
 * skipped, not queued). */
void mm__mbox_send(mm__mbox *mb, uint32_t peer, uint64_t exchange, int b,
                   const mm_wire_vec *meta, size_t len);
/* The same for bytes off .. off+len-1 of buffer b (off a multiple of 8):
 * compressed gossip puts a payload and a RESET body in one buffer. */
void mm__mbox_send_at(mm__mbox *mb, uint32_t peer, uint64_t exchange, int b, size_t off,
                      const mm_wire_vec *meta, size_t len);
/* Done with peer's first received vector: a lent one goes back to the
 * transport (reading resumes), a copy is dropped. */
void mm__mbox_release(mm__mbox *mb, uint32_t peer);
void mm__mbox_peer(mm__mbox *mb, uint32_t peer, mm__peer_view *out);
/* A counter that moves whenever anything in the mailbox changes. */
uint64_t mm__mbox_generation(mm__mbox *mb);
/* Sleeps until the generation moves past gen or until deadline (a
 * node_now() time). */
void mm__mbox_wait(mm__mbox *mb, uint64_t gen, double deadline);
bool mm__mbox_stopping(mm__mbox *mb);
/* The transport's counters as the loop last copied them, and (links not
 * NULL: room for n_peers) its counters per peer of the same copy; with
 * fresh, first asks the loop for a new copy and waits for it (at most a
 * second). */
void mm__mbox_stats(mm__mbox *mb, mm_transport_stats *out, mm_link_stats *links, bool fresh);
/* The refusals of connections to or from peer (all zero when none);
 * peer MM_PEER_UNKNOWN: of those whose peer the transport could not tell. */
void mm__mbox_refusals(mm__mbox *mb, uint32_t peer, mm__refusals *out);
/* Sends skipped because the peer had not taken the previous one. */
uint64_t mm__mbox_skipped_sends(mm__mbox *mb);
/* Synchronous rounds (dpsgd, pushsum): a send to a peer whose previous
 * send is still in flight stays pending and goes out when that one is
 * through, instead of being skipped (the neighbour waits for exactly this
 * vector; skipping it made the neighbour wait for the next one to learn we
 * had moved on). Off (async): skipped, the next round sends a fresher one.
 * Either way one send per peer is in flight and one pending at most. */
void mm__mbox_defer_busy(mm__mbox *mb, bool on);
/* Sends that waited for the previous send to their peer (defer_busy). */
uint64_t mm__mbox_deferred_sends(mm__mbox *mb);
/* The training thread is done: the loop says goodbye and closes. */
void mm__mbox_finish(mm__mbox *mb);

/* --algo allreduce. Starts averaging `in` into `out` (len floats; out may
 * be in) for exchange e on the loop thread: both are the loop's until the
 * all-reduce ends (DONE or FAILED): the training thread must neither
 * write `in` nor touch `out` meanwhile. */
void mm__mbox_allreduce(mm__mbox *mb, uint64_t exchange, const float *in, float *out);
/* The compressed outer exchange's all-gather (node/allgather.h), in the
 * all-reduce's place and with its state (mm__mbox_allreduce_view, _wait,
 * _abort): slots and lens, with this peer's payload in its own slot, are
 * the loop's until it ends. */
void mm__mbox_allgather(mm__mbox *mb, uint64_t exchange, uint8_t *slots, size_t *lens);
/* Asks the loop to fail the running all-reduce (a timeout): it ends
 * FAILED with why and where the ring stood. */
void mm__mbox_allreduce_abort(mm__mbox *mb, const char *why);
void mm__mbox_allreduce_view(mm__mbox *mb, mm__ar_view *out);
/* Sleeps until the all-reduce is no longer RUNNING or until deadline (a
 * mm_time_now() time). Signals do not cut it short: the round is
 * finished, as docs/node.md says, or fails. */
void mm__mbox_allreduce_wait(mm__mbox *mb, double deadline);

/* ---- loop thread ---- */

/* Transport callbacks, forwarded. A vector delivered goes to the end of
 * the peer's inbox (mm__mbox_peer shows the first); true when its body
 * was copied (at most stage_bytes, while fewer than MM__MBOX_STAGE copies
 * wait and no lent vector does): the caller gives the transport its
 * buffer back at once (mm_transport_release). */
bool mm__mbox_deliver(mm__mbox *mb, uint32_t peer, uint64_t exchange, const mm_wire_vec *meta,
                      const void *body, size_t body_len);
/* The transport's vector_dst: the staging buffer the next body of
 * body_len bytes from peer would be copied into, so that the transport
 * reads it there (mm__mbox_deliver then copies nothing); NULL when it
 * would not be staged. Taken only by that delivery: a frame refused after
 * all leaves it free for the next. */
void *mm__mbox_stage_dst(mm__mbox *mb, uint32_t peer, size_t body_len);
/* ok false: the send failed (counted in the peer's lost). */
void mm__mbox_sent(mm__mbox *mb, uint32_t peer, bool ok);
/* Returns the state it had before. */
mm__peer_state mm__mbox_peer_changed(mm__mbox *mb, uint32_t peer, mm__peer_state st);
/* The all-reduce moved (progress: its counter); no one is woken, the
 * training thread reads it when its deadline comes. */
void mm__mbox_allreduce_progress(mm__mbox *mb, uint64_t progress);
/* It ended; err says why when !ok. Wakes the training thread. */
void mm__mbox_allreduce_end(mm__mbox *mb, bool ok, const char *err);
/* A connection was refused or a dial failed (the transport's on_refused):
 * kept for the training thread, which looks when it judges whether it is
 * isolated. A known peer not up yet that was refused for a configuration
 * that differs becomes DOWN (not worth waiting for, once peers have had
 * --start-timeout to start). */
void mm__mbox_refused(mm__mbox *mb, const mm_refusal *r);
/* A signal arrived; returns how many have (1 for the first). */
int mm__mbox_signal(mm__mbox *mb);

/* On wake: takes the queued commands (up to cap), the want list when it
 * changed (*want_n = -1 otherwise; want has room for n_peers), whether the
 * training thread finished, and stores the transport's counters (links:
 * n_peers of them, mm_transport_get_link_stats). Returns the number of
 * commands. */
int mm__mbox_drain(mm__mbox *mb, mm__cmd *cmds, int cap, uint32_t *want, int *want_n,
                   bool *finished, const mm_transport_stats *stats,
                   const mm_link_stats *links);
/* For a SEND command: whether it should go out now. Returns its buffer
 * (now in flight) or NULL: obsolete (a newer send replaced it, or its
 * buffer was rewritten), skipped (the previous send to that peer is still
 * in flight), or the peer is not up yet (it stays pending). */
const void *mm__mbox_claim(mm__mbox *mb, const mm__cmd *c);
/* The transport refused a claimed send after all: pending again. */
void mm__mbox_unclaim(mm__mbox *mb, const mm__cmd *c);
/* The send pending for peer, if any (tried when it comes up). */
bool mm__mbox_pending(mm__mbox *mb, uint32_t peer, mm__cmd *out);
/* Chunk k of buffer b when it is ready (true, *out), else false. Only for
 * a buffer a claimed stream still reads. */
bool mm__mbox_chunk(mm__mbox *mb, int b, int k, mm__chunk *out);
/* The peer's ups (connections that came up) now. */
uint64_t mm__mbox_ups(mm__mbox *mb, uint32_t peer);

/* Commands the queue holds before the training thread waits for room. */
#define MM__MBOX_QUEUE 256

#endif
