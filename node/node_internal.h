/* State shared by the loop thread (node/node.c) and the training thread
 * (node/round.c). Everything below `mu` is guarded by it; the training
 * thread sleeps on `cv`, the loop thread is woken through `wake`. */
#ifndef MURMUR_NODE_INTERNAL_H
#define MURMUR_NODE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#include "gossip/topology.h"
#include "gossip/transport.h"
#include "model/checkpoint.h"
#include "node/metrics.h"
#include "node/node.h"

/* Snapshots in flight: this round's, the last round's still going to a fast
 * neighbour, and one pinned by a send to a neighbour that stopped reading
 * (until the transport declares it down). With two, that stuck send made
 * every round wait for its previous sends to finish (measured: async peers
 * waited ~1.4 s of 3 s around a SIGSTOPped neighbour). */
#define NODE_SNAP_BUFS 3
#define NODE_QUEUE_CAP 256

/* CONNECTING: newly wanted and not up yet; worth waiting for. DOWN and GONE
 * were reported by the transport: not worth waiting for. */
typedef enum { PEER_UNKNOWN, PEER_CONNECTING, PEER_UP, PEER_DOWN, PEER_GONE } node_peer_state;

/* A vector lent to us by the transport, waiting for the training thread. */
typedef struct {
    bool present;
    uint64_t exchange;   /* round * gossip_steps + step, as sent */
    double weight;       /* sender's push-sum weight */
    const float *vec;
} inbox_slot;

typedef enum { CMD_SEND, CMD_RELEASE } cmd_kind;

typedef struct {
    cmd_kind kind;
    uint32_t peer;
    uint64_t exchange;
    int buf;
    double weight;
} node_cmd;

typedef struct node {
    const mm_node_config *cfg;
    uint32_t id, n;
    mm_topology *topo;
    char dir[1024];                 /* run_dir/node-K */

    /* the replica */
    mm_model model;
    mm_adamw opt;
    mm_shard shard;
    bool have_model;                /* false for --vector-len pure gossip */
    float *x;                       /* the parameters (model.params or own buffer) */
    size_t P;
    double w;                       /* push-sum weight */
    mm_rng rng;
    long step, round;
    uint8_t *tokens;                /* one batch */

    /* snapshots sent to neighbours; refs counts sends not yet done */
    float *snap[NODE_SNAP_BUFS];

    /* async: the newest copy of each neighbour */
    float **latest;
    int64_t *latest_exchange;
    double *latest_weight;

    mm_metrics metrics;
    mm_transport *transport;
    uv_loop_t loop;
    uv_async_t wake;
    uv_signal_t sigint, sigterm;
    pthread_t trainer;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    inbox_slot *inbox;              /* [n] */
    node_peer_state *peer_state;    /* [n] */
    bool *inflight;                 /* [n]: a send to this peer is not done */
    int *inflight_buf;              /* [n] */
    int refs[NODE_SNAP_BUFS];
    int64_t snap_exchange[NODE_SNAP_BUFS]; /* exchange a buffer holds; -1 while being written */
    node_cmd *pending;              /* [n]: a send refused because the peer was not up */
    bool *has_pending;              /* [n] */
    node_cmd queue[NODE_QUEUE_CAP];
    int q_len;
    uint32_t *want;                 /* [n]: the peers wanted now (want_n of them) */
    uint32_t *want_loop;            /* [n]: the loop thread's copy of it */
    bool *wanted;                   /* [n]: in the last want list */
    bool *ever_up;                  /* [n]: has been up at least once */
    int want_n;
    bool want_dirty;
    bool trainer_done;
    atomic_int stop;                /* signals received */
    int exit_status;
    mm_transport_stats stats;       /* copied by the loop on every wake */
    uint64_t stats_gen;             /* wakes that copied them */

    mm_round_view ff_view;          /* training thread: this round's view, for fast_forward */

    /* counters for metrics (training thread only) */
    double t_compute, t_comm, t_wait;
    uint64_t skipped_sends, stale_dropped;
    uint64_t mix_refused;           /* neighbour vectors the mix refused for their weight */
} node;

/* node.c (loop side, callable from the training thread) */
void node_post(node *nd, const node_cmd *c);
void node_post_send(node *nd, const node_cmd *c);
void node_post_want(node *nd, const uint32_t *peers, int n);
void node_trainer_finished(node *nd);
/* Training thread: wake the loop and wait (at most 1 s) until it has copied
 * the transport's counters into nd->stats, so that they are current. */
void node_refresh_stats(node *nd);
/* With nd->mu held: cancel pending sends that hold snapshot buffer buf. */
void node_drop_pending_on(node *nd, int buf);

/* round.c (the training thread) */
void *node_train_main(void *arg);

double node_now(void);

#endif
