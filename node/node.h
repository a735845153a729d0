/* One peer: a training thread that owns the parameters and a libuv loop
 * that owns the connections, tied together by a mailbox (node/mailbox.h).
 * The round is described in docs/node.md, the structure in
 * docs/architecture.md. */
#ifndef MURMUR_NODE_H
#define MURMUR_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/jitter.h"
#include "gossip/consensus.h"
#include "model/outer.h"
#include "net/algo.h"
#include "node/replica.h"

/* The exit status of murmur node (docs/node.md, "Exit status"): what a
 * failed step of the start returns, and what a run ends with. */
typedef enum {
    MM_EXIT_OK = 0,           /* all rounds done, or stopped by a signal */
    MM_EXIT_ERROR = 1,        /* an error: nonfinite parameters, a file, a port, memory */
    MM_EXIT_USAGE = 2,        /* usage, or a configuration refused at start */
    MM_EXIT_REFUSED = 3,      /* a neighbour refused for a configuration that differs */
    MM_EXIT_ISOLATED = 4,     /* mixed with none of its neighbours, none refused */
    MM_EXIT_SIGNALLED = 130,  /* a second SIGINT/SIGTERM: exited at once */
} mm_exit_status;

typedef struct {
    /* who and where */
    int id, n_peers;               /* n_peers 0: from the topology */
    const char *topology;
    const char *hosts_file;        /* "K host:port" lines, or NULL */
    const char *bind_host;         /* listen on this host (default: own address) */
    int base_port;                 /* localhost: peer K at 127.0.0.1:base_port+K */
    const char *run_dir;           /* peer writes to run_dir/node-K */
    const char *tls_dir;           /* ca.pem, node-K.pem, node-K.key */
    bool plaintext;
    int max_pending;               /* unauthenticated connections (0: from the file limit) */

    /* model, optimizer and data: the same flags as murmur train (data_dir
     * NULL: no corpus, --no-train without --data) */
    mm_replica_config train;

    /* gossip */
    mm_algo algo;
    long rounds;
    int local_steps, gossip_steps;
    /* consensus control (docs/node.md): a schedule of gossip steps by round
     * (n = 0: none; then gossip_steps), or, with consensus_target > 0,
     * between 1 and max_gossip_steps exchanges a round as peers agree */
    mm_steps_schedule gossip_schedule;
    double consensus_target;
    int max_gossip_steps;
    double min_gossip_steps;       /* fewest exchanges a round on average: 1, or < 1 to skip rounds */
    bool no_train;
    long vector_len;               /* >0: pure gossip on a plain vector, no model */
    bool same_init;                /* all peers start from the same x_0 */
    int round_timeout_ms, peer_timeout_ms, start_timeout_ms;
    int staleness;                 /* async: oldest copy (in rounds) still mixed */
    double clip_pull;              /* >0: bound ||x_j - x_i|| per neighbour */
    double robust_clip;            /* >0: clip each pull to this times the lower median
                                    * of recent neighbour distances (gossip/robust.h) */
    /* compressed gossip, CHOCO-SGD (docs/compression.md): NULL plain D-PSGD */
    const char *compress;          /* codec spec: fp32, bf16, int8[:B], sign[:B], topk:F, randk:F */
    double consensus_step;         /* gamma; 0: the codec's default */
    long choco_memory_mb;          /* refuse public copies and buffers above this */
    long allreduce_chunk;          /* allreduce: floats per chunk (0: the default) */
    int allreduce_schedule;        /* allreduce: mm_ar_schedule, or MM_AR_AUTO (-1, the
                                    * default): node/allreduce.h */
    /* the outer optimizer (docs/outer.md): outer false, none */
    bool outer;                    /* --outer nesterov */
    mm_outer_config outer_cfg;
    bool outer_overlap;            /* the local steps overlap the exchange of the last ones */
    float outer_ef_decay;          /* beta of the compressed exchange's error feedback, (0, 1] */
    int outer_fragments;           /* F: round r exchanges fragment r mod F (Streaming DiLoCo) */
    long outer_memory_mb;          /* refuse the outer state above this */

    /* testing: a seeded random delay added to every local step */
    mm_jitter jitter;
    uint64_t jitter_seed;
    bool jitter_seed_given;

    /* metrics and checkpoints */
    int eval_every, eval_windows;
    int snapshot_every;
    int checkpoint_every;
    int sketch_dim;
    uint64_t sketch_seed;
    bool resume;
    int log_every;
    const char *metrics_addr;      /* HOST:PORT of the Prometheus endpoint, or NULL (off) */
    const char *metrics_token_file; /* its bearer token, or NULL */

    const char *test_poison;       /* test-only: a kind of node/poison.h */
} mm_node_config;

void mm_node_config_defaults(mm_node_config *c);

/* Runs the peer to completion. Returns the process exit status
 * (mm_exit_status). */
int mm_node_run(const mm_node_config *cfg);

/* murmur node --dry-run: the checks of mm_node_run's start that need no
 * model, socket or file (the topology, the number of peers, the id, the
 * algorithm for this W, --compress's configuration). 0 with one line on
 * stdout, or MM_EXIT_USAGE after printing why on stderr. */
int mm_node_check(const mm_node_config *cfg);

/* The HELLO fingerprint of a --vector-len run (no model): SHA-256 of the
 * ASCII text "murmur-vector:" followed by P in decimal (docs/protocol.md
 * 3.1). A model run uses mm_model_fingerprint(). */
void mm_vector_fingerprint(size_t P, uint8_t out[32]);

#endif
