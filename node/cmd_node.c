/* murmur node: run one peer. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gossip/log.h"
#include "node/commands.h"
#include "node/node.h"
#include "node/peers.h"

static void usage(FILE *out)
{
    mm_node_config d;
    mm_node_config_defaults(&d);
    fprintf(out,
"usage: murmur node --topology FILE [--id K] [options]\n"
"\n"
"Runs one peer: trains a replica of the model on its own shard of the data and\n"
"averages its parameters with its neighbours in the topology every round.\n"
"\n"
"Who and where:\n"
"  --id K               this peer's id, 0..N-1 (default: from OMPI_COMM_WORLD_RANK,\n"
"                       PMI_RANK or SLURM_PROCID)\n"
"  --n-peers N          check that the topology has N peers (default: from the\n"
"                       launcher's environment when it gives a size)\n"
"  --topology FILE      topology file (topologies/README.md)\n"
"  --hosts FILE         where peers live: 'K HOST:PORT' (or 'HOST:PORT' in id order)\n"
"  --base-port P        without --hosts: peer K listens on 127.0.0.1:P+K (default %d)\n"
"  --listen HOST:PORT   listen here instead of on our own entry (e.g. 0.0.0.0:PORT)\n"
"  --run-dir DIR        write to DIR/node-K/ (default %s)\n"
"  --tls-dir DIR        ca.pem, node-K.pem, node-K.key (scripts/make-certs.sh)\n"
"  --plaintext          no TLS: plain TCP (only on networks you trust)\n"
"\n"
"Model and training (as murmur train):\n"
"  --layers N --width N --heads N --ctx N   model shape (default %d, %d, %d, %d)\n"
"  --batch N            sequences per step (default %d)\n"
"  --lr X               peak learning rate (default %g)\n"
"  --lr-min X           final learning rate (default %g)\n"
"  --warmup N           warm-up steps (default %ld)\n"
"  --weight-decay X     AdamW weight decay (default %g)\n"
"  --clip X             gradient-norm clip, 0 off (default %g)\n"
"  --seed N             run seed (default %llu)\n"
"  --data DIR           prepared corpus (default %s; make data)\n"
"  --partition P        iid | genre (default iid)\n"
"  --threads N          OpenBLAS threads (default %d)\n"
"\n"
"Gossip:\n"
"  --algo A             dpsgd | async | pushsum (default dpsgd)\n"
"  --rounds N           rounds to run (default %ld)\n"
"  --local-steps H      optimizer steps between averagings (default 1)\n"
"  --gossip-steps G     averaging iterations per round (default 1)\n"
"  --no-train           pure gossip: no training, replicas start apart\n"
"  --vector-len N       with --no-train: gossip a plain vector of N floats, no model\n"
"  --different-init     start replicas from different initialisations\n"
"  --round-timeout MS   longest wait for a neighbour in a round (default %d)\n"
"  --peer-timeout MS    silent this long: the neighbour is down (default %d)\n"
"  --start-timeout MS   at start, wait this long for neighbours to appear (default %d)\n"
"  --staleness R        async: oldest neighbour copy still mixed, in rounds (default %d)\n"
"  --clip-pull X        bound each neighbour's pull: ||x_j - x_i|| clipped to X (0 off)\n"
"\n"
"Metrics and checkpoints (docs/metrics.md):\n"
"  --eval-every E       evaluate and sketch every E rounds (default %d, 0 off)\n"
"  --eval-windows N     validation windows per evaluation (default %d)\n"
"  --snapshot-every S   write exact parameter snapshots every S rounds (0 off)\n"
"  --checkpoint-every C checkpoint every C rounds (default %d)\n"
"  --sketch-dim D       count-sketch size (default %d)\n"
"  --resume             continue from DIR/node-K/checkpoint.bin (none there yet:\n"
"                       start fresh, saying so)\n"
"  --log-every N        progress line every N rounds (default %d)\n"
"  --verbose            debug logging\n"
"\n"
"Testing only:\n"
"  --test-poison KIND   send corrupted vectors: nan | inf | huge\n",
            d.base_port, d.run_dir, d.model.n_layer, d.model.d_model, d.model.n_head,
            d.model.n_ctx, d.batch, d.adamw.lr_max, d.adamw.lr_min, d.adamw.warmup_steps,
            d.adamw.weight_decay, d.adamw.grad_clip, (unsigned long long)d.seed, d.data_dir,
            d.threads, d.rounds, d.round_timeout_ms, d.peer_timeout_ms, d.start_timeout_ms,
            d.staleness, d.eval_every, d.eval_windows, d.checkpoint_every, d.sketch_dim,
            d.log_every);
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "murmur node: %s wants an integer in %ld..%ld, not '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_double(const char *opt, const char *s, double lo, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !(v >= lo)) {
        fprintf(stderr, "murmur node: %s wants a number >= %g, not '%s'\n", opt, lo, s);
        return -1;
    }
    *out = v;
    return 0;
}

enum {
    O_ID = 256, O_NPEERS, O_TOPO, O_HOSTS, O_BASEPORT, O_LISTEN, O_RUNDIR, O_TLSDIR, O_PLAIN,
    O_LAYERS, O_WIDTH, O_HEADS, O_CTX, O_BATCH, O_LR, O_LRMIN, O_WARMUP, O_WD, O_CLIP, O_SEED,
    O_DATA, O_PART, O_THREADS, O_ALGO, O_ROUNDS, O_LOCAL, O_GOSSIP, O_NOTRAIN, O_VECLEN,
    O_DIFFINIT, O_RTIMEOUT, O_PTIMEOUT, O_STIMEOUT, O_STALE, O_CLIPPULL, O_EVAL, O_EVALWIN,
    O_SNAP, O_CKPT, O_SKETCH, O_RESUME, O_LOGEVERY, O_VERBOSE, O_POISON, O_HELP,
};

int cmd_node(int argc, char **argv)
{
    static const struct option opts[] = {
        {"id", required_argument, 0, O_ID},
        {"n-peers", required_argument, 0, O_NPEERS},
        {"topology", required_argument, 0, O_TOPO},
        {"hosts", required_argument, 0, O_HOSTS},
        {"base-port", required_argument, 0, O_BASEPORT},
        {"listen", required_argument, 0, O_LISTEN},
        {"run-dir", required_argument, 0, O_RUNDIR},
        {"tls-dir", required_argument, 0, O_TLSDIR},
        {"plaintext", no_argument, 0, O_PLAIN},
        {"layers", required_argument, 0, O_LAYERS},
        {"width", required_argument, 0, O_WIDTH},
        {"heads", required_argument, 0, O_HEADS},
        {"ctx", required_argument, 0, O_CTX},
        {"batch", required_argument, 0, O_BATCH},
        {"lr", required_argument, 0, O_LR},
        {"lr-min", required_argument, 0, O_LRMIN},
        {"warmup", required_argument, 0, O_WARMUP},
        {"weight-decay", required_argument, 0, O_WD},
        {"clip", required_argument, 0, O_CLIP},
        {"seed", required_argument, 0, O_SEED},
        {"data", required_argument, 0, O_DATA},
        {"partition", required_argument, 0, O_PART},
        {"threads", required_argument, 0, O_THREADS},
        {"algo", required_argument, 0, O_ALGO},
        {"rounds", required_argument, 0, O_ROUNDS},
        {"local-steps", required_argument, 0, O_LOCAL},
        {"gossip-steps", required_argument, 0, O_GOSSIP},
        {"no-train", no_argument, 0, O_NOTRAIN},
        {"vector-len", required_argument, 0, O_VECLEN},
        {"different-init", no_argument, 0, O_DIFFINIT},
        {"round-timeout", required_argument, 0, O_RTIMEOUT},
        {"peer-timeout", required_argument, 0, O_PTIMEOUT},
        {"start-timeout", required_argument, 0, O_STIMEOUT},
        {"staleness", required_argument, 0, O_STALE},
        {"clip-pull", required_argument, 0, O_CLIPPULL},
        {"eval-every", required_argument, 0, O_EVAL},
        {"eval-windows", required_argument, 0, O_EVALWIN},
        {"snapshot-every", required_argument, 0, O_SNAP},
        {"checkpoint-every", required_argument, 0, O_CKPT},
        {"sketch-dim", required_argument, 0, O_SKETCH},
        {"resume", no_argument, 0, O_RESUME},
        {"log-every", required_argument, 0, O_LOGEVERY},
        {"verbose", no_argument, 0, O_VERBOSE},
        {"test-poison", required_argument, 0, O_POISON},
        {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    mm_node_config c;
    mm_node_config_defaults(&c);
    bool lr_given = false, warmup_given = false;
    long v;
    double d;
    int opt, bad = 0;
    optind = 1;
    while (!bad && (opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        const char *name = optind > 1 ? argv[optind - 1] : "?";
        switch (opt) {
        case O_ID: bad = parse_long(name, optarg, 0, INT_MAX, &v); c.id = (int)v; break;
        case O_NPEERS: bad = parse_long(name, optarg, 1, INT_MAX, &v); c.n_peers = (int)v; break;
        case O_TOPO: c.topology = optarg; break;
        case O_HOSTS: c.hosts_file = optarg; break;
        case O_BASEPORT: bad = parse_long(name, optarg, 1, 65535, &v); c.base_port = (int)v; break;
        case O_LISTEN: c.bind_host = optarg; break;
        case O_RUNDIR: c.run_dir = optarg; break;
        case O_TLSDIR: c.tls_dir = optarg; break;
        case O_PLAIN: c.plaintext = true; break;
        case O_LAYERS: bad = parse_long(name, optarg, 1, 64, &v); c.model.n_layer = (int)v; break;
        case O_WIDTH: bad = parse_long(name, optarg, 1, 8192, &v); c.model.d_model = (int)v; break;
        case O_HEADS: bad = parse_long(name, optarg, 1, 256, &v); c.model.n_head = (int)v; break;
        case O_CTX: bad = parse_long(name, optarg, 1, 4096, &v); c.model.n_ctx = (int)v; break;
        case O_BATCH: bad = parse_long(name, optarg, 1, 4096, &v); c.batch = (int)v; break;
        case O_LR: bad = parse_double(name, optarg, 0, &d); c.adamw.lr_max = (float)d; lr_given = true; break;
        case O_LRMIN: bad = parse_double(name, optarg, 0, &d); c.adamw.lr_min = (float)d; break;
        case O_WARMUP: bad = parse_long(name, optarg, 0, LONG_MAX, &v); c.adamw.warmup_steps = v; warmup_given = true; break;
        case O_WD: bad = parse_double(name, optarg, 0, &d); c.adamw.weight_decay = (float)d; break;
        case O_CLIP: bad = parse_double(name, optarg, 0, &d); c.adamw.grad_clip = (float)d; break;
        case O_SEED: bad = parse_long(name, optarg, 0, LONG_MAX, &v); c.seed = (uint64_t)v; break;
        case O_DATA: c.data_dir = optarg; break;
        case O_PART:
            if ((v = mm_partition_parse(optarg)) < 0) {
                fprintf(stderr, "murmur node: --partition is iid or genre, not '%s'\n", optarg);
                bad = 1;
            }
            c.partition = (mm_partition)v;
            break;
        case O_THREADS: bad = parse_long(name, optarg, 1, 256, &v); c.threads = (int)v; break;
        case O_ALGO:
            if ((v = mm_algo_parse(optarg)) < 0) {
                fprintf(stderr, "murmur node: --algo is dpsgd, async or pushsum, not '%s'\n", optarg);
                bad = 1;
            }
            c.algo = (mm_algo)v;
            break;
        case O_ROUNDS: bad = parse_long(name, optarg, 0, LONG_MAX / 1024, &v); c.rounds = v; break;
        case O_LOCAL: bad = parse_long(name, optarg, 1, 100000, &v); c.local_steps = (int)v; break;
        case O_GOSSIP: bad = parse_long(name, optarg, 1, 1000, &v); c.gossip_steps = (int)v; break;
        case O_NOTRAIN: c.no_train = true; break;
        case O_VECLEN: bad = parse_long(name, optarg, 1, 1L << 34, &v); c.vector_len = v; break;
        case O_DIFFINIT: c.same_init = false; break;
        case O_RTIMEOUT: bad = parse_long(name, optarg, 1, 86400000, &v); c.round_timeout_ms = (int)v; break;
        case O_PTIMEOUT: bad = parse_long(name, optarg, 100, 86400000, &v); c.peer_timeout_ms = (int)v; break;
        case O_STIMEOUT: bad = parse_long(name, optarg, 0, 86400000, &v); c.start_timeout_ms = (int)v; break;
        case O_STALE: bad = parse_long(name, optarg, 0, 1000000, &v); c.staleness = (int)v; break;
        case O_CLIPPULL: bad = parse_double(name, optarg, 0, &d); c.clip_pull = d; break;
        case O_EVAL: bad = parse_long(name, optarg, 0, INT_MAX, &v); c.eval_every = (int)v; break;
        case O_EVALWIN: bad = parse_long(name, optarg, 1, 1000000, &v); c.eval_windows = (int)v; break;
        case O_SNAP: bad = parse_long(name, optarg, 0, INT_MAX, &v); c.snapshot_every = (int)v; break;
        case O_CKPT: bad = parse_long(name, optarg, 0, INT_MAX, &v); c.checkpoint_every = (int)v; break;
        case O_SKETCH: bad = parse_long(name, optarg, 1, 1 << 20, &v); c.sketch_dim = (int)v; break;
        case O_RESUME: c.resume = true; break;
        case O_LOGEVERY: bad = parse_long(name, optarg, 0, INT_MAX, &v); c.log_every = (int)v; break;
        case O_VERBOSE: mm_log_set_level(MM_LOG_DEBUG); break;
        case O_POISON:
            if (strcmp(optarg, "nan") && strcmp(optarg, "inf") && strcmp(optarg, "huge")) {
                fprintf(stderr, "murmur node: --test-poison is nan, inf or huge\n");
                bad = 1;
            }
            c.test_poison = optarg;
            break;
        case O_HELP: case 'h': usage(stdout); return 0;
        default: bad = 1; break;
        }
    }
    if (bad) {
        fprintf(stderr, "Try 'murmur node --help'.\n");
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "murmur node: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!c.topology) {
        fprintf(stderr, "murmur node: --topology FILE is required\n");
        return 2;
    }
    if (c.id < 0) {
        int rank, size;
        const char *var = mm_peer_env_rank(&rank, &size);
        if (!var) {
            fprintf(stderr, "murmur node: --id K is required (or a launcher's rank in "
                            "OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID)\n");
            return 2;
        }
        c.id = rank;
        if (!c.n_peers && size > 0)
            c.n_peers = size;
    }
    if (!c.plaintext && !c.tls_dir) {
        fprintf(stderr, "murmur node: give --tls-dir DIR (scripts/make-certs.sh makes one), "
                        "or --plaintext to run without TLS\n");
        return 2;
    }
    if (c.vector_len > 0 && !c.no_train) {
        fprintf(stderr, "murmur node: --vector-len gossips a plain vector: it needs --no-train\n");
        return 2;
    }
    if (c.no_train)
        c.same_init = false;
    const char *why = mm_model_config_check(&c.model);
    if (why) {
        fprintf(stderr, "murmur node: %s\n", why);
        return 2;
    }
    /* The cosine schedule spans the whole run unless told otherwise. */
    c.adamw.total_steps = c.rounds * c.local_steps;
    if (!warmup_given && c.adamw.warmup_steps > c.adamw.total_steps / 10)
        c.adamw.warmup_steps = c.adamw.total_steps / 10;
    (void)lr_given;
    return mm_node_run(&c);
}
