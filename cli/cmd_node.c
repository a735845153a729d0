/* murmur node: run one peer. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/opt.h"
#include "cli/commands.h"
#include "node/node.h"
#include "cli/options.h"
#include "node/peers.h"
#include "node/poison.h"

static int parse_algo(const char *arg, void *dst, char *err, size_t errlen)
{
    int a = mm_algo_parse(arg);
    if (a < 0) { /* "is dpsgd, async, pushsum or allreduce, not 'x'" */
        static const char *const names[] = {
#define MM_X(NAME, code, name) name,
            MM_ALGOS(MM_X)
#undef MM_X
        };
        size_t n = sizeof names / sizeof names[0], len = 0;
        len += (size_t)snprintf(err, errlen, "is");
        for (size_t i = 0; i < n && len < errlen; i++)
            len += (size_t)snprintf(err + len, errlen - len, "%s %s",
                                    i == 0 ? "" : i + 1 < n ? "," : " or", names[i]);
        if (len < errlen)
            snprintf(err + len, errlen - len, ", not '%s'", arg);
        return -1;
    }
    *(mm_algo *)dst = (mm_algo)a;
    return 0;
}

static int parse_schedule(const char *arg, void *dst, char *err, size_t errlen)
{
    return mm_steps_schedule_parse(arg, 1000, dst, err, errlen);
}

/* A flag of two words: *dst is whether arg is `yes` (the other is `no`). */
static int parse_two(const char *arg, bool *dst, const char *yes, const char *no, char *err,
                     size_t errlen)
{
    if (strcmp(arg, yes) && strcmp(arg, no)) {
        snprintf(err, errlen, "is %s or %s, not '%s'", yes, no, arg);
        return -1;
    }
    *dst = !strcmp(arg, yes);
    return 0;
}

/* --outer: dst is the node's configuration (outer, outer_cfg.kind) */
static int parse_outer(const char *arg, void *dst, char *err, size_t errlen)
{
    mm_node_config *c = dst;
    if (strcmp(arg, "nesterov") && strcmp(arg, "noloco") && strcmp(arg, "none")) {
        snprintf(err, errlen, "is nesterov, noloco or none, not '%s'", arg);
        return -1;
    }
    c->outer = strcmp(arg, "none") != 0;
    c->outer_cfg.kind = !strcmp(arg, "noloco") ? MM_OUTER_NOLOCO : MM_OUTER_NESTEROV;
    return 0;
}

static const char *show_outer(const void *dst)
{
    const mm_node_config *c = dst;
    return !c->outer ? "none" : c->outer_cfg.kind == MM_OUTER_NOLOCO ? "noloco" : "nesterov";
}

static int parse_outer_decay(const char *arg, void *dst, char *err, size_t errlen)
{
    return mm_outer_parse_decay(arg, dst, err, errlen);
}

static const char *show_algo(const void *dst) { return mm_algo_name(*(const mm_algo *)dst); }

/* --allreduce-schedule: auto (-1) or one of net/algo.h's schedules */
enum {
    AR_AUTO = -1,
#define MM_X(NAME, code, name) AR_##NAME = code,
    MM_AR_SCHEDULES(MM_X)
#undef MM_X
};
static int parse_ar_schedule(const char *arg, void *dst, char *err, size_t errlen)
{
    int s = !strcmp(arg, "auto") ? -1 : -2;
#define MM_X(NAME, code, name) if (!strcmp(arg, name)) s = code;
    MM_AR_SCHEDULES(MM_X)
#undef MM_X
    if (s == -2) {
        snprintf(err, errlen, "is auto, ring, halving or allgather, not '%s'", arg);
        return -1;
    }
    *(int *)dst = s;
    return 0;
}
static const char *show_ar_schedule(const void *dst)
{
    int s = *(const int *)dst;
    const char *name = s < 0 ? "auto" : mm_algo_variant_name(MM_ALGO_ALLREDUCE, (uint8_t)s);
    return name ? name : "?";
}

static int parse_jitter(const char *arg, void *dst, char *err, size_t errlen)
{
    char why[200];
    if (mm_jitter_parse(arg, dst, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
}

static int parse_poison(const char *arg, void *dst, char *err, size_t errlen)
{
    if (!mm_poison_kind_ok(arg)) {
        snprintf(err, errlen, "is nan, inf, huge, scale=X, weight=X, reset-codec, reset-short, "
                 "reset-long, reset-huge, q-huge or q-cut, not '%s'", arg);
        return -1;
    }
    *(const char **)dst = arg;
    return 0;
}

static int parse_deadline(const char *arg, void *dst, char *err, size_t errlen)
{
    return parse_two(arg, dst, "learn", "fixed", err, errlen);
}

static const char *show_deadline(const void *dst) { return *(const bool *)dst ? "learn" : "fixed"; }

static int parse_fit_work(const char *arg, void *dst, char *err, size_t errlen)
{
    static const struct {
        const char *word;
        int bits;
    } words[] = {{"none", 0}, {"batch", MM_FIT_BATCH}, {"steps", MM_FIT_STEPS},
                 {"batch,steps", MM_FIT_BATCH | MM_FIT_STEPS},
                 {"steps,batch", MM_FIT_BATCH | MM_FIT_STEPS}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(arg, words[i].word)) {
            *(int *)dst = words[i].bits;
            return 0;
        }
    snprintf(err, errlen, "is none, batch, steps or batch,steps, not '%s'", arg);
    return -1;
}

static const char *show_fit_work(const void *dst)
{
    int bits = *(const int *)dst;
    return bits == (MM_FIT_BATCH | MM_FIT_STEPS) ? "batch,steps" : bits == MM_FIT_BATCH ? "batch"
           : bits == MM_FIT_STEPS ? "steps" : "none";
}

/* --different-init and --verbose set something other than a bool field
 * (which flags were given: c->given). */
typedef struct {
    bool different_init, verbose;
    bool dry_run;
} node_flags;

#define NODE_OPTS 112
static const mm_opt *node_table(mm_node_config *c, mm_replica_given *g, node_flags *f)
{
    mm_node_given *given = &c->given;
    static mm_opt t[NODE_OPTS];
    const double MS = 86400000, BIG = (double)(LONG_MAX / 1024);
    const mm_opt who[] = {
        MM_OPT_HEAD("Who and where:"),
        MM_OPT(MM_OPT_INT, "id", "K", &c->id, 0, INT_MAX,
               "this peer's id, 0..N-1 (default: from OMPI_COMM_WORLD_RANK, PMI_RANK or "
               "SLURM_PROCID)"),
        MM_OPT(MM_OPT_INT, "n-peers", "N", &c->n_peers, 1, INT_MAX,
               "check that the topology has N peers (default: from the launcher's environment)"),
        MM_OPT(MM_OPT_STR, "topology", "FILE", &c->topology, 0, 0,
               "topology file (topologies/README.md)"),
        MM_OPT(MM_OPT_STR, "hosts", "FILE", &c->hosts_file, 0, 0,
               "where peers live: 'K HOST:PORT' (or 'HOST:PORT' in id order)"),
        MM_OPT(MM_OPT_INT, "base-port", "P", &c->base_port, 1, 65535,
               "without --hosts: peer K listens on 127.0.0.1:P+K"),
        MM_OPT(MM_OPT_STR, "listen", "HOST:PORT", &c->bind_host, 0, 0,
               "listen here instead of on our own entry (e.g. 0.0.0.0:PORT)"),
        MM_OPT(MM_OPT_STR, "run-dir", "DIR", &c->run_dir, 0, 0, "write to DIR/node-K/"),
        MM_OPT(MM_OPT_STR, "tls-dir", "DIR", &c->tls_dir, 0, 0,
               "ca.pem, node-K.pem, node-K.key (scripts/make-certs.sh)"),
        MM_OPT(MM_OPT_FLAG, "plaintext", NULL, &c->plaintext, 0, 0,
               "no TLS: plain TCP (only on networks you trust)"),
        MM_OPT(MM_OPT_INT, "max-pending", "N", &c->max_pending, 1, 1000000,
               "connections still in their handshake from addresses that are no peer's "
               "(default (RLIMIT_NOFILE - 64 - 2 x peers) / 2, within 16..1024); each lower-id "
               "peer's address keeps its own quota outside this cap", .hide_default = true),
        MM_OPT_HEAD("Elastic membership (a family topology file; docs/membership.md):"),
        MM_OPT(MM_OPT_STR, "join", "IP:PORT", &c->join, 0, 0,
               "join a running elastic run through the member listening there (any member)",
               .hide_default = true),
        MM_OPT(MM_OPT_STR, "advertise", "IP:PORT", &c->advertise, 0, 0,
               "where the other members reach this peer (default: its --hosts entry, or "
               "127.0.0.1:--base-port+K)", .hide_default = true),
        MM_OPT(MM_OPT_INT, "max-peers", "M", &c->max_peers, 2, 65536,
               "elastic: member ids are below M (memory and the MEMBERS frame grow with M)"),
        MM_OPT(MM_OPT_INT, "view-delay", "D", &c->view_delay, 1, 1000000,
               "elastic: a join, leave or removal takes effect D rounds after it is made"),
        MM_OPT(MM_OPT_INT, "suspect-ms", "MS", &c->suspect_ms, 1, MS,
               "elastic: a neighbour down this long is suspected (its removal scheduled)"),
        MM_OPT(MM_OPT_FLAG, "join-moments", NULL, &c->join_moments, 0, 0,
               "elastic joiner: take the donors' optimizer moments too (default: fresh "
               "moments)"),
    };
    const mm_opt gossip[] = {
        MM_OPT_HEAD("Gossip:"),
        MM_OPT(MM_OPT_CUSTOM, "algo", "A", &c->algo, 0, 0,
               "dpsgd | async | pushsum | allreduce (an all-reduce: "
               "the topology gives only the number of peers)",
               .parse = parse_algo, .show = show_algo),
        MM_OPT(MM_OPT_LONG, "allreduce-chunk", "N", &c->allreduce_chunk, 1, (double)(1L << 30),
               "allreduce: floats per chunk (default 65536, 256 KiB); the same on every peer",
               .hide_default = true, .given = &given->allreduce_chunk),
        MM_OPT(MM_OPT_CUSTOM, "allreduce-schedule", "S", &c->allreduce_schedule, 0, 0,
               "allreduce: ring (peers in id order, 2(n-1) steps) | halving (halving-doubling, "
               "2 log2(n) steps, n a power of two) | auto (halving for vectors up to 8 MiB on a "
               "power of two of peers above 2 whose addresses have one host part; else ring); "
               "| allgather (the ring all-gather of compressed pseudo-gradients, which "
               "--outer with --compress runs); the same on every peer",
               .parse = parse_ar_schedule, .show = show_ar_schedule,
               .given = &given->allreduce_schedule),
        MM_OPT(MM_OPT_LONG, "rounds", "N", &c->rounds, 0, BIG, "rounds to run"),
        MM_OPT(MM_OPT_INT, "local-steps", "H", &c->local_steps, 1, 100000,
               "optimizer steps between averagings"),
        MM_OPT(MM_OPT_INT, "gossip-steps", "G", &c->gossip_steps, 1, 1000,
               "averaging iterations per round", .given = &given->gossip_steps),
        MM_OPT(MM_OPT_CUSTOM, "gossip-steps-schedule", "R:G,...", &c->gossip_schedule, 0, 0,
               "G averaging iterations per round from round R on, e.g. 0:4,300:1 "
               "(instead of --gossip-steps)", .parse = parse_schedule, .hide_default = true),
        MM_OPT(MM_OPT_DOUBLE, "consensus-target", "X", &c->consensus_target, 0, 1e30,
               "dpsgd: hold the consensus distance near X with 1..--max-gossip-steps "
               "exchanges a round, agreed with each neighbour (0 off)", .hide_default = true),
        MM_OPT(MM_OPT_INT, "max-gossip-steps", "G", &c->max_gossip_steps, 1, 64,
               "with --consensus-target: most exchanges a round",
               .given = &given->max_gossip_steps),
        MM_OPT(MM_OPT_DOUBLE, "min-gossip-steps", "F", &c->min_gossip_steps, 1.0 / 64, 1,
               "with --consensus-target: fewest exchanges a round on average; below 1 an "
               "edge skips rounds as its two ends agree (1/64 .. 1, default 1: never)",
               .given = &given->min_gossip_steps, .hide_default = true),
        MM_OPT(MM_OPT_FLAG, "no-train", NULL, &c->no_train, 0, 0,
               "pure gossip: no training, replicas start apart"),
        MM_OPT(MM_OPT_LONG, "vector-len", "N", &c->vector_len, 1, (double)(1L << 34),
               "with --no-train: gossip a plain vector of N floats, no model",
               .hide_default = true),
        MM_OPT(MM_OPT_FLAG, "different-init", NULL, &f->different_init, 0, 0,
               "start replicas from different initialisations"),
        MM_OPT(MM_OPT_INT, "round-timeout", "MS", &c->round_timeout_ms, 1, MS,
               "longest wait for a neighbour in a round"),
        MM_OPT(MM_OPT_INT, "peer-timeout", "MS", &c->peer_timeout_ms, 100, MS,
               "silent this long: the neighbour is down"),
        MM_OPT(MM_OPT_INT, "start-timeout", "MS", &c->start_timeout_ms, 0, MS,
               "at start, wait this long for neighbours to appear"),
        MM_OPT(MM_OPT_INT, "staleness", "R", &c->staleness, 0, 1000000,
               "async: mix a neighbour's newest copy while it arrived at most R of this peer's "
               "exchanges ago (its sender's round does not matter)",
               .given = &given->staleness),
        MM_OPT(MM_OPT_DOUBLE, "clip-pull", "X", &c->clip_pull, 0, INFINITY,
               "bound each neighbour's pull: ||x_j - x_i|| clipped to X (0 off)",
               .hide_default = true),
        MM_OPT(MM_OPT_DOUBLE, "robust-clip", "F", &c->robust_clip, 0, 1e6,
               "robust mixing: clip each neighbour's pull to F times the lower median of "
               "this peer's last 16 neighbour distances (docs/node.md; 0 off)",
               .hide_default = true),
        MM_OPT_HEAD("Uneven peers (docs/node.md, \"Uneven peers\"):"),
        MM_OPT(MM_OPT_CUSTOM, "deadline", "D", &c->deadline_learn, 0, 0,
               "fixed: wait --round-timeout for a neighbour's vector; learn: as long as its "
               "past arrivals say (--deadline-quantile, x1.25), at most --deadline-cap times "
               "this peer's compute per round (a peer's own choice: may differ per peer)",
               .parse = parse_deadline, .show = show_deadline),
        MM_OPT(MM_OPT_DOUBLE, "deadline-cap", "K", &c->deadline_cap, 0, 1000,
               "--deadline learn: wait at most K times this peer's compute per round (0: only "
               "--round-timeout)"),
        MM_OPT(MM_OPT_DOUBLE, "deadline-quantile", "Q", &c->deadline_quantile, 0.01, 1,
               "--deadline learn: wait for this quantile of a neighbour's last 24 arrivals"),
        MM_OPT(MM_OPT_CUSTOM, "fit-work", "W", &c->fit_work, 0, 0,
               "none | batch (setting its neighbours' pace: smaller batches, down to "
               "--fit-min-batch; else back up) | steps (dpsgd: more local steps while the "
               "neighbours' vectors are expected later, up to --fit-max-steps, the progress "
               "scaled by H/steps) | "
               "batch,steps", .parse = parse_fit_work, .show = show_fit_work),
        MM_OPT(MM_OPT_INT, "fit-min-batch", "B", &c->fit_min_batch, 1, 1 << 20,
               "--fit-work batch: the smallest batch (default batch/4)", .hide_default = true),
        MM_OPT(MM_OPT_INT, "fit-max-steps", "N", &c->fit_max_steps, 1, 1000000,
               "--fit-work steps: the most local steps a round (default 4 x --local-steps)",
               .hide_default = true),
        MM_OPT_HEAD("Compressed gossip, CHOCO-SGD (docs/compression.md):"),
        MM_OPT(MM_OPT_STR, "compress", "CODEC", &c->compress, 0, 0,
               "send CHOCO's compressed differences: fp32 | bf16 | int8[:B] | sign[:B] | "
               "topk:F | randk:F (every peer the same; default off: plain D-PSGD); with "
               "--outer and --algo allreduce: the outer exchange's pseudo-gradients, with "
               "error feedback, all-gathered (docs/outer.md)", .hide_default = true),
        MM_OPT(MM_OPT_DOUBLE, "consensus-step", "GAMMA", &c->consensus_step, 0, 1,
               "CHOCO's gamma in (0, 1]; default per codec: 1 for fp32, bf16, int8, sign; "
               "2F for topk:F, F for randk:F", .hide_default = true),
        MM_OPT(MM_OPT_LONG, "choco-memory-mb", "MB", &c->choco_memory_mb, 1, 1L << 30,
               "refuse to start when the public copies (one vector per in-neighbour and "
               "one's own) and buffers would take more", .given = &given->choco_memory_mb),
        MM_OPT_HEAD("Outer optimizer, DiLoCo (docs/outer.md):"),
        MM_OPT(MM_OPT_CUSTOM, "outer", "O", c, 0, 0,
               "nesterov: every round, after --local-steps H inner steps, an outer Nesterov "
               "step on the pseudo-gradient (outer params - the average of the peers' inner "
               "params); with --algo allreduce this is DiLoCo, with dpsgd its gossip version; "
               "noloco: NoLoCo's step over gossip (--outer-lr is its beta, --outer-momentum "
               "its alpha, --noloco-gamma its gamma; a one-peer or random-matching topology "
               "pairs the peers as it does); none (default): plain averaging",
               .parse = parse_outer, .show = show_outer, .given = &given->outer),
        MM_OPT(MM_OPT_FLOAT, "noloco-gamma", "G", &c->outer_cfg.gamma, 0, 100,
               "--outer noloco: how hard the outer parameters are pulled to the group's, > 0 "
               "(default: the outer lr; then the peers send their inner parameters as they do "
               "with nesterov)", .given = &given->noloco_gamma, .hide_default = true),
        MM_OPT(MM_OPT_FLOAT, "outer-lr", "LR", &c->outer_cfg.lr, 0, 100,
               "outer learning rate, > 0 (1 with momentum 0: plain averaging)",
               .given = &given->outer_lr),
        MM_OPT(MM_OPT_FLOAT, "outer-momentum", "MU", &c->outer_cfg.momentum, 0, 1,
               "outer Nesterov momentum, in [0, 1)", .given = &given->outer_momentum),
        MM_OPT(MM_OPT_LONG, "outer-momentum-warmup", "N", &c->outer_cfg.warmup, 0, BIG,
               "Pier's momentum warm-up: mu_k = MU k / N for the first N outer steps",
               .given = &given->outer_warmup),
        MM_OPT(MM_OPT_CUSTOM, "outer-momentum-decay", "D", &c->outer_cfg, 0, 0,
               "Pier's momentum decay: none | linear:F | cosine:F (from outer step F x rounds "
               "on, the momentum falls to 0 at the end of the run)", .parse = parse_outer_decay,
               .hide_default = true, .given = &given->outer_decay),
        MM_OPT(MM_OPT_FLOAT, "outer-ef-decay", "B", &c->outer_ef_decay, 0, 1,
               "--algo allreduce with --compress: the error feedback e <- B e + (pseudo-"
               "gradient) before each compression, in (0, 1]; 1 plain error feedback, below 1 "
               "SparseLoCo's decaying accumulator (docs/outer.md)", .given = &given->outer_ef_decay),
        MM_OPT(MM_OPT_INT, "outer-fragments", "F", &c->outer_fragments, 1, 1 << 20,
               "Streaming DiLoCo: the parameters in F fragments, round r exchanging (and "
               "taking the outer step on) fragment r mod F alone, so each fragment is "
               "synchronised every F rounds and a round sends 1/F of the vector "
               "(docs/outer.md)", .given = &given->outer_fragments),
        MM_OPT(MM_OPT_FLAG, "outer-overlap", NULL, &c->outer_overlap, 0, 0,
               "overlap a round's local steps with the exchange (the pseudo-gradient is then "
               "one round old, as D-PSGD's gradient is); default: steps first, then exchange"),
        MM_OPT(MM_OPT_LONG, "outer-memory-mb", "MB", &c->outer_memory_mb, 1, 1L << 30,
               "refuse to start when the outer state (3 vectors: outer params, momentum, "
               "local progress) would take more", .given = &given->outer_memory_mb),
        MM_OPT_HEAD("Metrics and checkpoints (docs/metrics.md):"),
        MM_OPT(MM_OPT_INT, "eval-every", "E", &c->eval_every, 0, INT_MAX,
               "evaluate and sketch every E rounds, 0 = off"),
        MM_OPT(MM_OPT_INT, "eval-windows", "N", &c->eval_windows, 1, 1000000,
               "validation windows per evaluation"),
        MM_OPT(MM_OPT_INT, "snapshot-every", "S", &c->snapshot_every, 0, INT_MAX,
               "write exact parameter snapshots every S rounds, 0 = off"),
        MM_OPT(MM_OPT_INT, "checkpoint-every", "C", &c->checkpoint_every, 0, INT_MAX,
               "checkpoint every C rounds"),
        MM_OPT(MM_OPT_INT, "sketch-dim", "D", &c->sketch_dim, 1, 1 << 20, "count-sketch size"),
        MM_OPT(MM_OPT_FLAG, "resume", NULL, &c->resume, 0, 0,
               "continue from DIR/node-K/checkpoint.bin (none there yet: start fresh, saying "
               "so)"),
        MM_OPT(MM_OPT_INT, "log-every", "N", &c->log_every, 0, INT_MAX,
               "progress line every N rounds"),
        MM_OPT(MM_OPT_DOUBLE, "round-lines", "R", &c->round_lines, 0, 1e9,
               "metrics: a round line every round until 1000 are written, then at most R a "
               "second, each later line standing for the rounds since the one before "
               "(docs/metrics.md); 0: a line every round"),
        MM_OPT(MM_OPT_STR, "metrics-addr", "HOST:PORT", &c->metrics_addr, 0, 0,
               "serve Prometheus metrics at http://HOST:PORT/metrics (off by default; "
               "127.0.0.1:PORT for this machine only; PORT+ adds the peer's id)", .hide_default = true),
        MM_OPT(MM_OPT_STR, "metrics-token-file", "FILE", &c->metrics_token_file, 0, 0,
               "the endpoint asks for 'Authorization: Bearer TOKEN', TOKEN the file's first "
               "line", .hide_default = true),
        MM_OPT(MM_OPT_FLAG, "verbose", NULL, &f->verbose, 0, 0, "debug logging"),
        MM_OPT(MM_OPT_FLAG, "dry-run", NULL, &f->dry_run, 0, 0,
               "check every flag and the topology as at start (the same check), print the "
               "settings every peer must share, then exit: 0 it would start, 2 and why it would "
               "not (no socket, file or training; scripts/sweep.sh --check)"),
        MM_OPT_HEAD("Testing only:"),
        MM_OPT(MM_OPT_CUSTOM, "compute-jitter", "J", &c->jitter, 0, 0,
               "add a random delay after every local step (slept, to study stragglers): none, "
               "uniform:A (U(0, A) seconds) or longtail:P:S (S seconds with probability P), "
               "as murmur plan --jitter; drawn from --jitter-seed", .parse = parse_jitter,
               .hide_default = true),
        MM_OPT(MM_OPT_U64, "jitter-seed", "S", &c->jitter_seed, 0, 9007199254740992.0,
               "seed of the --compute-jitter delays (default: from --seed), each peer its own "
               "stream", .given = &c->jitter_seed_given, .hide_default = true),
        MM_OPT(MM_OPT_CUSTOM, "lab-slow", "PEER:F[,...]", &c->lab, 0, 0,
               "peer PEER's every local step takes F times as long (it sleeps F-1 times the "
               "step's time after it: a slower machine); ignored by the other peers, so every "
               "peer may be given the same flag; as murmur plan --slow",
               .parse = mm_cli_parse_slow, .hide_default = true),
        MM_OPT(MM_OPT_CUSTOM, "lab-stretch", "PEER:F:FROM:ROUNDS[,...]", &c->lab, 0, 0,
               "the same for ROUNDS rounds from round FROM only (a transient straggler); as "
               "murmur plan --stretch", .parse = mm_cli_parse_stretch, .hide_default = true),
        MM_OPT(MM_OPT_CUSTOM, "test-poison", "KIND", &c->test_poison, 0, 0,
               "send corrupted vectors: nan | inf | huge, or weight=X (the true vector with "
               "push-sum weight X), scale=X (every float times X), or with --compress "
               "reset-codec | reset-short | reset-long (RESETs in the agreed codec, a float "
               "short, a float long) | reset-huge (valid RESETs of +-1e38) | q-huge (int8 q's "
               "of scale 2^120, valid CRCs) | q-cut (the last chunk of a streamed q a byte "
               "short); node/poison.h",
               .parse = parse_poison,
               .hide_default = true),
    };
    int n = 0;
    for (size_t i = 0; i < sizeof who / sizeof who[0]; i++)
        t[n++] = who[i];
    n += mm_replica_opts(&c->train, g, t + n);
    for (size_t i = 0; i < sizeof gossip / sizeof gossip[0]; i++)
        t[n++] = gossip[i];
    t[n] = (mm_opt){.kind = MM_OPT_END};
    return t;
}

static const mm_opt *help_table;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: murmur node --topology FILE [--id K] [options]\n"
            "\n"
            "Runs one peer: trains a replica of the model on its own shard of the data and\n"
            "averages its parameters with its neighbours in the topology every round.\n"
            "The model, optimisation and data flags are those of murmur train.\n");
    mm_opt_print(out, help_table);
    fprintf(out,
            "\nExit status (docs/node.md): 0 done or stopped by a signal; 1 an error; 2 usage\n"
            "or a configuration refused at start (e.g. a column-stochastic-only W without\n"
            "--algo pushsum); 3 refused: a neighbour was refused for the whole run because\n"
            "the two are configured differently (TLS or --plaintext, model, --algo,\n"
            "a setting every peer must share such as --gossip-steps or --outer-lr,\n"
            "certificates, one --id twice); 4 isolated: mixed with none of its neighbours\n"
            "for the whole run, none refused; 130 a second signal.\n"
            "\n"
            "Flags of one algorithm are refused with another (--staleness without\n"
            "--algo async, --allreduce-chunk without --algo allreduce, ...). Every peer\n"
            "must run the settings --dry-run prints (docs/protocol.md 3.1); what may differ\n"
            "per peer (threads, --lr, --batch, timeouts, ...): docs/protocol.md 3.1 too.\n");
}

int cmd_node(int argc, char **argv)
{
    mm_node_config c;
    mm_node_config_defaults(&c);
    mm_replica_given given = {0};
    node_flags f = {0};
    help_table = node_table(&c, &given, &f);
    int first;
    int r = mm_opt_parse("node", argc, argv, help_table, &first, usage);
    if (r != 0)
        return r > 0 ? MM_EXIT_OK : MM_EXIT_USAGE;
    if (first < argc) {
        fprintf(stderr, "murmur node: unexpected argument '%s'\n", argv[first]);
        return MM_EXIT_USAGE;
    }
    if (f.verbose)
        mm_log_set_level(MM_LOG_DEBUG);
    if (f.different_init)
        c.same_init = false;
    if (!c.topology) {
        fprintf(stderr, "murmur node: --topology FILE is required\n");
        return MM_EXIT_USAGE;
    }
    if (c.id < 0) {
        int rank, size;
        const char *var = mm_peer_env_rank(&rank, &size);
        if (!var) {
            fprintf(stderr, "murmur node: --id K is required (or a launcher's rank in "
                            "OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID)\n");
            return MM_EXIT_USAGE;
        }
        c.id = rank;
        if (!c.n_peers && size > 0)
            c.n_peers = size;
    }
    if (!c.plaintext && !c.tls_dir) {
        fprintf(stderr, "murmur node: give --tls-dir DIR (scripts/make-certs.sh makes one), "
                        "or --plaintext to run without TLS\n");
        return MM_EXIT_USAGE;
    }
    if (c.no_train)
        c.same_init = false;
    if (c.outer_cfg.kind == MM_OUTER_NOLOCO && !c.given.noloco_gamma)
        c.outer_cfg.gamma = c.outer_cfg.lr; /* the default: theta itself travels */
    /* Pure gossip needs no corpus (docs/launching.md): it is read only when
     * given, to report the validation loss of the gossiped models. */
    if (c.no_train && !given.data)
        c.train.data_dir = NULL;
    /* The cosine schedule spans the whole run unless told otherwise. */
    c.train.adamw.total_steps = c.rounds * c.local_steps;
    char err[256];
    if (mm_replica_config_finish(&c.train, &given, c.train.adamw.total_steps, err,
                                 sizeof err) != 0) {
        fprintf(stderr, "murmur node: %s\n", err);
        return MM_EXIT_USAGE;
    }
    /* the flags' combinations, the topology, the budgets: mm_node_config_check,
     * the same for the start and --dry-run */
    return f.dry_run ? mm_node_check(&c) : mm_node_run(&c);
}
