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
    MM_EXIT_JOIN = 5,         /* elastic: the join was refused, or no member answered */
    MM_EXIT_SIGNALLED = 130,  /* a second SIGINT/SIGTERM: exited at once */
} mm_exit_status;

/* Which of the flags that apply only with an algorithm or another flag the
 * command line gave (values alone cannot tell a default given on
 * purpose): mm_node_config_check refuses them where they do not apply. */
typedef struct {
    bool gossip_steps, max_gossip_steps, min_gossip_steps, staleness;
    bool allreduce_chunk, allreduce_schedule, choco_memory_mb;
    bool outer, outer_lr, outer_momentum, outer_warmup, outer_decay, outer_memory_mb;
    bool outer_ef_decay, outer_fragments, noloco_gamma;
} mm_node_given;

/* --fit-work's knobs (gossip/work.h). */
enum { MM_FIT_BATCH = 1, MM_FIT_STEPS = 2 };

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
    int staleness;                 /* async: a copy is mixed while it arrived at most this
                                    * many of our exchanges ago */
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

    /* uneven peers (docs/node.md, "Uneven peers"; node/pace.h) */
    bool deadline_learn;           /* --deadline learn: the wait from arrivals (gossip/deadline.h) */
    double deadline_cap;           /* ... at most this times our compute per round (0: none) */
    double deadline_quantile;      /* ... for this quantile of a neighbour's lateness */
    int fit_work;                  /* MM_FIT_BATCH | MM_FIT_STEPS (gossip/work.h), 0 off */
    int fit_min_batch;             /* batch: the smallest (0: batch / 4) */
    int fit_max_steps;             /* steps: the most a round (0: 4 x local_steps) */

    /* testing: a seeded random delay added to every local step, and named
     * peers made slower (base/jitter.h) */
    mm_jitter jitter;
    uint64_t jitter_seed;
    bool jitter_seed_given;
    mm_slowdown lab;               /* --lab-slow, --lab-stretch */

    /* metrics and checkpoints */
    int eval_every, eval_windows;
    int snapshot_every;
    int checkpoint_every;
    int sketch_dim;
    uint64_t sketch_seed;
    bool resume;
    int log_every;
    /* round lines a second at most, once the first MM_ROUND_LINE_BURST are
     * written (0: every round; docs/metrics.md, "How many round lines") */
    double round_lines;
    const char *metrics_addr;      /* HOST:PORT of the Prometheus endpoint, or NULL (off) */
    const char *metrics_token_file; /* its bearer token, or NULL */

    const char *test_poison;       /* test-only: a kind of node/poison.h */

    /* elastic membership (docs/membership.md): a family topology file */
    const char *join;              /* IP:PORT of a member to join through, or NULL */
    const char *advertise;         /* where the others reach us, or NULL (hosts, base port) */
    int max_peers;                 /* ids below this */
    int view_delay;                /* D: changes take effect D rounds ahead */
    int suspect_ms;                /* a neighbour down this long is suspected */
    bool join_moments;             /* a joiner takes its donors' optimizer moments */

    mm_node_given given;           /* flags given on the command line */
} mm_node_config;

/* An elastic run's defaults: --max-peers, --view-delay. */
#define MM_MAX_PEERS_DEFAULT 256
#define MM_VIEW_DELAY_DEFAULT 10

/* Round lines a peer writes at once before --round-lines' rate applies. */
#define MM_ROUND_LINE_BURST 1000

void mm_node_config_defaults(mm_node_config *c);

/* Runs the peer to completion. Returns the process exit status
 * (mm_exit_status). */
int mm_node_run(const mm_node_config *cfg);

/* Every check of a configuration that needs no socket, file (but the
 * topology's) or model: the flags' combinations and the flags given where
 * they do not apply, the topology against the number of peers, the id and
 * the algorithm, the all-reduce's schedule, consensus control on this
 * graph, the memory budgets of --compress and --outer for this model, the
 * HELLO's settings. mm_node_run makes it first and --dry-run makes
 * nothing else, so that neither accepts what the other refuses; murmur
 * plan makes it too (without a topology: cfg->topology NULL, then
 * cfg->n_peers peers). 0, or the exit status (MM_EXIT_USAGE: refused;
 * MM_EXIT_ERROR: out of memory) with why in err. */
int mm_node_config_check(const mm_node_config *cfg, char *err, size_t errlen);

/* murmur node --dry-run: mm_node_config_check, then "the flags are valid"
 * and the HELLO's settings on stdout (0), or why on stderr (the exit
 * status). */
int mm_node_check(const mm_node_config *cfg);

/* The settings every peer of the run must share that the HELLO's fixed
 * fields do not carry (docs/protocol.md 3.1, "Settings": the gossip steps,
 * the outer optimizer, the partition, ...), as the HELLO's settings text:
 * "KEY=VALUE\n" or "KEY\n" lines, KEY a flag's name, in key order. cfg is
 * the finished configuration (defaults resolved as at start). Returns the
 * text's length, or -1 when it needs more than len bytes or more than
 * MM_WIRE_SETTINGS_MAX (net/wire.h). */
int mm_node_settings(const mm_node_config *cfg, char *out, size_t len);

/* The HELLO fingerprint of a --vector-len run (no model): SHA-256 of the
 * ASCII text "murmur-vector:" followed by P in decimal (docs/protocol.md
 * 3.1). A model run uses mm_model_fingerprint(). */
void mm_vector_fingerprint(size_t P, uint8_t out[32]);

#endif
