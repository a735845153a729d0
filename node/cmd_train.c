/* murmur train: one replica, no gossip. The reference the gossip runs are
 * compared with, and the quickest way to see that the model learns.
 *
 * A resumed run must reproduce the uninterrupted one exactly, so everything
 * a step depends on is either in the checkpoint (parameters, AdamW state and
 * schedule, data RNG, seed, step) or given again on the command line
 * (--data, --partition, --batch, --threads); the checkpoint's values win and
 * contradicting flags are refused. */
#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gossip/log.h"
#include "model/checkpoint.h"
#include "model/data.h"
#include "model/eval.h"
#include "model/model.h"
#include "node/blas_env.h"
#include "node/commands.h"

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    mm_model_config cfg;
    mm_adamw_config opt;
    int batch, threads, eval_every, eval_windows, log_every, peer, n_peers;
    long steps, checkpoint_every, stop_after;
    double minutes;
    uint64_t seed;
    mm_partition part;
    const char *data, *out;
    bool resume;
    /* which flags the user gave, to refuse ones a checkpoint contradicts */
    bool set_cfg[4], set_lr, set_min_lr, set_warmup, set_wd, set_clip, set_steps, set_seed;
} train_args;

static void usage(FILE *f)
{
    mm_model_config c = mm_model_config_default();
    mm_adamw_config o = mm_adamw_config_default();
    fprintf(f,
"usage: murmur train [OPTIONS]\n"
"Trains one replica of the model on one data shard, alone (no gossip).\n\n"
"model (taken from the checkpoint with --resume):\n"
"  --layers N          transformer blocks (default %d)\n"
"  --width N           model width d_model (default %d)\n"
"  --heads N           attention heads, dividing the width (default %d)\n"
"  --ctx N             context length in bytes (default %d)\n"
"optimisation (AdamW, linear warm-up then cosine decay to --min-lr):\n"
"  --batch N           sequences per step (default 16)\n"
"  --steps N           optimizer steps of the whole run; the schedule's length\n"
"                      (default 2000, or what fits in --minutes)\n"
"  --minutes M         stop after M minutes of this invocation; without --steps\n"
"                      the schedule's length is estimated from the first steps\n"
"  --lr F              peak learning rate (default %g)\n"
"  --min-lr F          final learning rate (default lr/10)\n"
"  --warmup N          warm-up steps (default %ld, at most steps/10)\n"
"  --weight-decay F    decoupled weight decay of the matrices (default %g)\n"
"  --clip F            clip the gradient norm to F, 0 = off (default %g)\n"
"  --seed S            model init and data sampling seed (default 1)\n"
"data:\n"
"  --data DIR          prepared corpus (default data/brown; `make data`)\n"
"  --partition P       iid | genre: how training files split across peers (default iid)\n"
"  --peer K            train peer K's shard (default 0)\n"
"  --n-peers N         number of shards (default 1: all training files)\n"
"running:\n"
"  --threads N         OpenBLAS threads (default: OpenBLAS's choice)\n"
"  --eval-every N      evaluate every N steps, 0 = only at the end (default 200)\n"
"  --eval-windows N    windows in the fixed validation sample (default 256)\n"
"  --log-every N       progress line every N steps (default 10)\n"
"  --out DIR           metrics.jsonl and checkpoint.bin go here (default runs/train)\n"
"  --checkpoint-every N  save a checkpoint every N steps, 0 = only at the end\n"
"                      (default 500); SIGINT/SIGTERM also save and stop\n"
"  --resume            continue from DIR/checkpoint.bin exactly where it stopped\n"
"                      (none there yet: start fresh, saying so)\n"
"  --stop-after N      stop (with a checkpoint) after N steps of this invocation\n"
"  --help              this text\n",
            c.n_layer, c.d_model, c.n_head, c.n_ctx, o.lr_max, o.warmup_steps,
            o.weight_decay, o.grad_clip);
}

static int parse_long(const char *name, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "murmur train: --%s wants an integer in [%ld, %ld], got '%s'\n", name, lo,
                hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_double(const char *name, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "murmur train: --%s wants a number in [%g, %g], got '%s'\n", name, lo, hi,
                s);
        return -1;
    }
    *out = v;
    return 0;
}

enum {
    O_LAYERS = 256, O_WIDTH, O_HEADS, O_CTX, O_BATCH, O_STEPS, O_MINUTES, O_LR, O_MINLR,
    O_WARMUP, O_WD, O_CLIP, O_SEED, O_DATA, O_PART, O_PEER, O_NPEERS, O_THREADS, O_EVAL,
    O_EVALWIN, O_LOGEVERY, O_OUT, O_CKPT, O_RESUME, O_STOPAFTER, O_HELP
};

static int parse_args(int argc, char **argv, train_args *a)
{
    static const struct option opts[] = {
        {"layers", 1, 0, O_LAYERS}, {"width", 1, 0, O_WIDTH}, {"heads", 1, 0, O_HEADS},
        {"ctx", 1, 0, O_CTX}, {"batch", 1, 0, O_BATCH}, {"steps", 1, 0, O_STEPS},
        {"minutes", 1, 0, O_MINUTES}, {"lr", 1, 0, O_LR}, {"min-lr", 1, 0, O_MINLR},
        {"warmup", 1, 0, O_WARMUP}, {"weight-decay", 1, 0, O_WD}, {"clip", 1, 0, O_CLIP},
        {"seed", 1, 0, O_SEED}, {"data", 1, 0, O_DATA}, {"partition", 1, 0, O_PART},
        {"peer", 1, 0, O_PEER}, {"n-peers", 1, 0, O_NPEERS}, {"threads", 1, 0, O_THREADS},
        {"eval-every", 1, 0, O_EVAL}, {"eval-windows", 1, 0, O_EVALWIN},
        {"log-every", 1, 0, O_LOGEVERY}, {"out", 1, 0, O_OUT},
        {"checkpoint-every", 1, 0, O_CKPT}, {"resume", 0, 0, O_RESUME},
        {"stop-after", 1, 0, O_STOPAFTER}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0},
    };
    memset(a, 0, sizeof *a);
    a->cfg = mm_model_config_default();
    a->opt = mm_adamw_config_default();
    a->batch = 16;
    a->steps = 2000;
    a->seed = 1;
    a->data = "data/brown";
    a->out = "runs/train";
    a->n_peers = 1;
    a->eval_every = 200;
    a->eval_windows = 256;
    a->log_every = 10;
    a->checkpoint_every = 500;
    a->part = MM_PART_IID;
    const long BIG = 1L << 40;
    long v;
    double d;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        const char *name = NULL;
        for (int i = 0; opts[i].name; i++)
            if (opts[i].val == c)
                name = opts[i].name;
        int rc = 0;
        switch (c) {
        case O_LAYERS: rc = parse_long(name, optarg, 1, 64, &v); a->cfg.n_layer = (int)v; a->set_cfg[0] = 1; break;
        case O_WIDTH: rc = parse_long(name, optarg, 1, 4096, &v); a->cfg.d_model = (int)v; a->set_cfg[1] = 1; break;
        case O_HEADS: rc = parse_long(name, optarg, 1, 256, &v); a->cfg.n_head = (int)v; a->set_cfg[2] = 1; break;
        case O_CTX: rc = parse_long(name, optarg, 1, 4096, &v); a->cfg.n_ctx = (int)v; a->set_cfg[3] = 1; break;
        case O_BATCH: rc = parse_long(name, optarg, 1, 4096, &v); a->batch = (int)v; break;
        case O_STEPS: rc = parse_long(name, optarg, 1, BIG, &a->steps); a->set_steps = 1; break;
        case O_MINUTES: rc = parse_double(name, optarg, 1e-3, 1e6, &a->minutes); break;
        case O_LR: rc = parse_double(name, optarg, 0, 10, &d); a->opt.lr_max = (float)d; a->set_lr = 1; break;
        case O_MINLR: rc = parse_double(name, optarg, 0, 10, &d); a->opt.lr_min = (float)d; a->set_min_lr = 1; break;
        case O_WARMUP: rc = parse_long(name, optarg, 0, BIG, &v); a->opt.warmup_steps = v; a->set_warmup = 1; break;
        case O_WD: rc = parse_double(name, optarg, 0, 10, &d); a->opt.weight_decay = (float)d; a->set_wd = 1; break;
        case O_CLIP: rc = parse_double(name, optarg, 0, 1e6, &d); a->opt.grad_clip = (float)d; a->set_clip = 1; break;
        case O_SEED: rc = parse_long(name, optarg, 0, BIG, &v); a->seed = (uint64_t)v; a->set_seed = 1; break;
        case O_DATA: a->data = optarg; break;
        case O_PART:
            if (mm_partition_parse(optarg) < 0) {
                fprintf(stderr, "murmur train: --partition is iid or genre, got '%s'\n", optarg);
                rc = -1;
            } else {
                a->part = (mm_partition)mm_partition_parse(optarg);
            }
            break;
        case O_PEER: rc = parse_long(name, optarg, 0, 1 << 20, &v); a->peer = (int)v; break;
        case O_NPEERS: rc = parse_long(name, optarg, 1, 1 << 20, &v); a->n_peers = (int)v; break;
        case O_THREADS: rc = parse_long(name, optarg, 1, 256, &v); a->threads = (int)v; break;
        case O_EVAL: rc = parse_long(name, optarg, 0, BIG, &v); a->eval_every = (int)(v > INT32_MAX ? INT32_MAX : v); break;
        case O_EVALWIN: rc = parse_long(name, optarg, 1, 1 << 20, &v); a->eval_windows = (int)v; break;
        case O_LOGEVERY: rc = parse_long(name, optarg, 1, 1 << 30, &v); a->log_every = (int)v; break;
        case O_OUT: a->out = optarg; break;
        case O_CKPT: rc = parse_long(name, optarg, 0, BIG, &a->checkpoint_every); break;
        case O_RESUME: a->resume = true; break;
        case O_STOPAFTER: rc = parse_long(name, optarg, 1, BIG, &a->stop_after); break;
        case O_HELP: usage(stdout); return 1;
        case ':':
            fprintf(stderr, "murmur train: %s needs a value\n", argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr, "murmur train: unknown option '%s' (see --help)\n", argv[optind - 1]);
            return -1;
        }
        if (rc)
            return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "murmur train: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (a->peer >= a->n_peers) {
        fprintf(stderr, "murmur train: --peer %d must be below --n-peers %d\n", a->peer, a->n_peers);
        return -1;
    }
    if (!a->set_min_lr)
        a->opt.lr_min = a->opt.lr_max / 10;
    if (a->opt.lr_min > a->opt.lr_max) {
        fprintf(stderr, "murmur train: --min-lr is above --lr\n");
        return -1;
    }
    return 0;
}

/* One JSON object per line, one write(2) per line: a crash never leaves
 * half a line behind (docs/metrics.md). */
static void metric(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void metric(int fd, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (fd < 0 || n <= 0 || (size_t)n >= sizeof line - 1)
        return;
    line[n++] = '\n';
    if (write(fd, line, (size_t)n) != n)
        mm_warn("metrics: short write: %s", strerror(errno));
}

/* The checkpoint's values replace the flags; a flag that says otherwise is
 * a mistake worth stopping for. */
static int adopt_checkpoint(train_args *a, const mm_model_config *cfg)
{
    static const char *names[4] = {"layers", "width", "heads", "ctx"};
    const int have[4] = {cfg->n_layer, cfg->d_model, cfg->n_head, cfg->n_ctx};
    const int want[4] = {a->cfg.n_layer, a->cfg.d_model, a->cfg.n_head, a->cfg.n_ctx};
    for (int i = 0; i < 4; i++)
        if (a->set_cfg[i] && have[i] != want[i]) {
            mm_error("--%s %d contradicts the checkpoint (%d); drop the flag to resume",
                     names[i], want[i], have[i]);
            return -1;
        }
    a->cfg = *cfg;
    return 0;
}

static int check_resumed_opt(const train_args *a, const mm_adamw_config *o, uint64_t seed)
{
    struct { bool set; double flag, ckpt; const char *name; } f[] = {
        {a->set_lr, a->opt.lr_max, o->lr_max, "lr"},
        {a->set_min_lr, a->opt.lr_min, o->lr_min, "min-lr"},
        {a->set_warmup, (double)a->opt.warmup_steps, (double)o->warmup_steps, "warmup"},
        {a->set_wd, a->opt.weight_decay, o->weight_decay, "weight-decay"},
        {a->set_clip, a->opt.grad_clip, o->grad_clip, "clip"},
        {a->set_steps, (double)a->steps, (double)o->total_steps, "steps"},
        {a->set_seed, (double)a->seed, (double)seed, "seed"},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].set && (float)f[i].flag != (float)f[i].ckpt) {
            mm_error("--%s %g contradicts the checkpoint (%g); drop the flag to resume",
                     f[i].name, f[i].flag, f[i].ckpt);
            return -1;
        }
    return 0;
}

static int save(const train_args *a, const char *path, const mm_model *m, const mm_adamw *opt,
                const mm_rng *rng, uint64_t seed)
{
    mm_ckpt_state st = {.step = opt->step, .round = 0, .peer_id = a->peer,
                        .n_peers = a->n_peers, .pushsum_weight = 1.0, .rng = *rng,
                        .seed = seed};
    char err[512];
    if (mm_checkpoint_save(path, m, opt, &st, err, sizeof err) != 0) {
        mm_error("checkpoint: %s", err);
        return -1;
    }
    return 0;
}

static void fmt_duration(double s, char *out, size_t n)
{
    if (s < 0 || !isfinite(s))
        snprintf(out, n, "?");
    else if (s < 60)
        snprintf(out, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(out, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(out, n, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

static void evaluate(const train_args *a, mm_model *m, const mm_shard *shard, uint8_t *tokens,
                     int T, long step, const mm_baseline *base, int fd, double t)
{
    mm_eval_result r;
    mm_evaluate(m, shard, a->eval_windows, a->batch, T, tokens, &r);
    mm_info("eval step %ld: val loss %.4f, %.3f bits/byte, next-byte accuracy %.2f%% "
            "(most frequent byte: %.2f%%, unigram: %.3f bits/byte)",
            step, r.loss, r.bpb, 100 * r.acc, 100 * base->top_acc, base->unigram_bpb);
    metric(fd,
           "{\"ev\":\"eval\",\"step\":%ld,\"time\":%.3f,\"val_loss\":%.6f,\"val_bpb\":%.6f,"
           "\"val_acc\":%.6f,\"positions\":%ld,\"baseline_acc\":%.6f,\"baseline_bpb\":%.6f}",
           step, t, r.loss, r.bpb, r.acc, r.positions, base->top_acc, base->unigram_bpb);
}

/* mkdir -p: run directories usually live under a runs/ that may not exist. */
static int mkdir_p(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* The schedule length of a --minutes run before its speed is known. */
#define UNSIZED (1L << 40)

static int train(train_args *a)
{
    char err[512], ckpt[4096], mpath[4096];
    int rc = 1, fd = -1;
    mm_model m = {0};
    mm_adamw opt = {0};
    mm_shard shard = {0};
    uint8_t *tokens = NULL;

    snprintf(ckpt, sizeof ckpt, "%s/checkpoint.bin", a->out);
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", a->out);

    /* The rule murmur node follows too (docs/formats.md, "Exact resume"):
     * no checkpoint yet is a fresh start, said; one that cannot be used is
     * refused. A launcher restarting whatever crashed with --resume then
     * also restarts what crashed before its first checkpoint. */
    if (a->resume && access(ckpt, F_OK) != 0 && errno == ENOENT) {
        mm_info("--resume: no checkpoint at %s, starting fresh", ckpt);
        a->resume = false;
    }
    if (a->resume) {
        mm_model_config cfg;
        if (mm_checkpoint_peek(ckpt, &cfg, err, sizeof err) != 0) {
            mm_error("cannot resume: %s", err);
            return 1;
        }
        if (adopt_checkpoint(a, &cfg) != 0)
            return 2;
    }
    const char *bad = mm_model_config_check(&a->cfg);
    if (bad) {
        mm_error("model config: %s", bad);
        return 2;
    }
    if (a->threads > 0)
        openblas_set_num_threads(a->threads);

    if (mm_shard_load(&shard, a->data, a->part, a->peer, a->n_peers, err, sizeof err) != 0) {
        mm_error("data: %s", err);
        return 1;
    }
    int T = a->cfg.n_ctx, B = a->batch;
    if (shard.train_len < (size_t)T + 1 || shard.val_len < (size_t)T + 1) {
        mm_error("data: shard too small for a context of %d bytes (%zu training, %zu validation "
                 "bytes)", T, shard.train_len, shard.val_len);
        goto out;
    }

    if (!a->resume && !a->set_warmup && a->opt.warmup_steps > a->steps / 10)
        a->opt.warmup_steps = a->steps / 10;
    /* With --minutes alone the schedule's length is unknown until the speed
     * is measured; until then it is "very long" (only warm-up matters). */
    bool estimate_total = !a->resume && a->minutes > 0 && !a->set_steps;
    a->opt.total_steps = estimate_total ? UNSIZED : a->steps;
    if (mm_model_init(&m, &a->cfg, a->seed, err, sizeof err) != 0 ||
        mm_adamw_init(&opt, &a->opt, m.n_params) != 0) {
        mm_error("model: %s", m.params ? "out of memory" : err);
        goto out;
    }
    uint64_t seed = a->seed;
    mm_rng rng;
    /* Peers of one run share the init (seed) but not the batches. */
    mm_rng_seed(&rng, seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(a->peer + 1)));
    if (a->resume) {
        mm_ckpt_state st;
        if (mm_checkpoint_load(ckpt, &m, &opt, &st, err, sizeof err) != 0) {
            mm_error("cannot resume: %s", err);
            goto out;
        }
        if (st.peer_id != a->peer || st.n_peers != a->n_peers) {
            mm_error("cannot resume: the checkpoint is peer %d of %d, asked for peer %d of %d",
                     st.peer_id, st.n_peers, a->peer, a->n_peers);
            goto out;
        }
        if (opt.cfg.total_steps == UNSIZED) {
            /* Stopped before its --minutes schedule was sized: size it now. */
            if (a->set_steps) {
                opt.cfg.total_steps = a->steps;
            } else if (a->minutes > 0) {
                estimate_total = true;
            } else {
                mm_error("cannot resume: the checkpoint's schedule was never sized (the run "
                         "stopped within its first 20 steps); give --steps or --minutes");
                rc = 2;
                goto out;
            }
            a->set_steps = false;
        }
        if (check_resumed_opt(a, &opt.cfg, st.seed) != 0) {
            rc = 2;
            goto out;
        }
        rng = st.rng;
        seed = st.seed;
        mm_info("resumed %s at step %ld of %ld", ckpt, opt.step, opt.cfg.total_steps);
    }

    if (mkdir_p(a->out) != 0) {
        mm_error("%s: cannot create: %s", a->out, strerror(errno));
        goto out;
    }
    fd = open(mpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        mm_error("%s: cannot open: %s", mpath, strerror(errno));
        goto out;
    }
    tokens = malloc((size_t)B * (T + 1));
    if (!tokens) {
        mm_error("out of memory");
        goto out;
    }
    mm_baseline base;
    mm_baseline_compute(&shard, a->eval_windows, B, T, &base);

    mm_info("model: %d layers, width %d, %d heads, context %d: %zu parameters", a->cfg.n_layer,
            a->cfg.d_model, a->cfg.n_head, a->cfg.n_ctx, m.n_params);
    mm_info("data: %s, partition %s, peer %d of %d: %d files (%s), %zu training bytes; "
            "%zu validation bytes", a->data, mm_partition_name(a->part), a->peer, a->n_peers,
            shard.n_files, shard.genres, shard.train_len, shard.val_len);
    char sched[96];
    if (estimate_total)
        snprintf(sched, sizeof sched, "schedule sized after 20 steps to fit %g minutes",
                 a->minutes);
    else if (a->minutes > 0)
        snprintf(sched, sizeof sched, "schedule %ld steps, stopping after %g minutes",
                 opt.cfg.total_steps, a->minutes);
    else
        snprintf(sched, sizeof sched, "schedule %ld steps", opt.cfg.total_steps);
    mm_blas_log_note(); /* the OpenBLAS re-exec, if any: with the start-up lines, not before help */
    mm_info("OpenBLAS kernel %s, %d threads; batch %d x %d bytes, lr %g -> %g, warm-up %ld, %s",
            mm_blas_kernel(), openblas_get_num_threads(), B, T, opt.cfg.lr_max, opt.cfg.lr_min,
            opt.cfg.warmup_steps, sched);
    mm_info("baseline on the validation sample: most frequent byte 0x%02x -> accuracy %.2f%%; "
            "unigram frequencies -> %.3f bits/byte", base.top_byte, 100 * base.top_acc,
            base.unigram_bpb);
    metric(fd,
           "{\"ev\":\"start\",\"peer\":%d,\"n_peers\":%d,\"params\":%zu,\"layers\":%d,"
           "\"width\":%d,\"heads\":%d,\"ctx\":%d,\"batch\":%d,\"partition\":\"%s\","
           "\"seed\":%llu,\"resumed_step\":%ld,\"blas_kernel\":\"%s\",\"time\":0}",
           a->peer, a->n_peers, m.n_params, a->cfg.n_layer, a->cfg.d_model, a->cfg.n_head,
           a->cfg.n_ctx, B, mm_partition_name(a->part), (unsigned long long)seed, opt.step,
           mm_blas_kernel());

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    double t0 = now(), deadline = a->minutes > 0 ? t0 + a->minutes * 60 : 0;
    double t_last = t0, loss_sum = 0;
    long start_step = opt.step, n_sum = 0, evaluated = a->resume ? -1 : opt.step;
    const char *reason = "done";
    if (!a->resume)
        evaluate(a, &m, &shard, tokens, T, opt.step, &base, fd, 0);
    /* Speed and time left count from here: the first evaluation is not a step. */
    double t_steps = now();
    t_last = t_steps;
    while (opt.step < opt.cfg.total_steps) {
        if (stop_signal) {
            reason = "signal";
            break;
        }
        if (deadline && now() >= deadline) {
            reason = "time";
            break;
        }
        if (a->stop_after && opt.step - start_step >= a->stop_after) {
            reason = "stop-after";
            break;
        }
        float lr = mm_adamw_lr(&opt.cfg, opt.step);
        mm_batch_sample(&shard, &rng, tokens, B, T);
        float loss = mm_model_forward(&m, tokens, B, T);
        mm_model_backward(&m);
        float gnorm = mm_adamw_step(&opt, &m, m.params, m.grads);
        if (!isfinite(loss)) {
            mm_error("step %ld: loss is %f; stopping (try a lower --lr)", opt.step, loss);
            reason = "diverged";
            break;
        }
        loss_sum += loss;
        n_sum++;
        long step = opt.step, done = step - start_step;
        if (estimate_total && done == 20) {
            double per = (now() - t_steps) / done, left = deadline - now();
            long total = step + (long)(0.95 * left / per);
            opt.cfg.total_steps = total > step ? total : step + 1;
            if (!a->set_warmup && opt.cfg.warmup_steps > opt.cfg.total_steps / 10)
                opt.cfg.warmup_steps = opt.cfg.total_steps / 10 > step ? opt.cfg.total_steps / 10 : step;
            mm_info("%.1f ms per step: schedule sized to %ld steps", per * 1e3, opt.cfg.total_steps);
            estimate_total = false;
        }
        double t = now();
        metric(fd,
               "{\"ev\":\"step\",\"step\":%ld,\"time\":%.3f,\"loss\":%.9g,\"lr\":%.9g,"
               "\"gnorm\":%.6g}",
               step, t - t0, loss, lr, gnorm);
        if (step % a->log_every == 0 || step == opt.cfg.total_steps) {
            double per = (t - t_steps) / done;
            double left = (opt.cfg.total_steps - step) * per;
            if (deadline && deadline - t < left)
                left = deadline - t;
            char eta[32];
            fmt_duration(estimate_total ? NAN : left, eta, sizeof eta);
            mm_info("step %ld/%ld  loss %.4f  lr %.2e  gnorm %.3f  %.0f tokens/s  %s left", step,
                    opt.cfg.total_steps, loss_sum / n_sum, lr, gnorm,
                    (double)n_sum * B * T / (t - t_last), eta);
            t_last = t;
            loss_sum = 0;
            n_sum = 0;
        }
        if (a->eval_every && step % a->eval_every == 0 && step < opt.cfg.total_steps) {
            evaluate(a, &m, &shard, tokens, T, step, &base, fd, t - t0);
            evaluated = step;
        }
        if (a->checkpoint_every && step % a->checkpoint_every == 0 &&
            save(a, ckpt, &m, &opt, &rng, seed) != 0)
            goto out;
    }
    bool diverged = !strcmp(reason, "diverged");
    if (!diverged) { /* keep the last good checkpoint rather than save NaNs */
        if (evaluated != opt.step)
            evaluate(a, &m, &shard, tokens, T, opt.step, &base, fd, now() - t0);
        if (save(a, ckpt, &m, &opt, &rng, seed) != 0)
            goto out;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double secs = now() - t0;
    mm_info("stopped (%s) at step %ld after %.1f s: checkpoint %s%s; peak RSS %.1f MiB", reason,
            opt.step, secs, ckpt, diverged ? " not updated" : "", ru.ru_maxrss / 1024.0);
    metric(fd, "{\"ev\":\"end\",\"step\":%ld,\"time\":%.3f,\"reason\":\"%s\",\"peak_rss_kib\":%ld}",
           opt.step, secs, reason, (long)ru.ru_maxrss);
    rc = diverged ? 1 : 0;
out:
    if (fd >= 0)
        close(fd);
    free(tokens);
    mm_adamw_free(&opt);
    mm_model_free(&m);
    mm_shard_free(&shard);
    return rc;
}

int cmd_train(int argc, char **argv)
{
    train_args a;
    int r = parse_args(argc, argv, &a);
    if (r != 0)
        return r > 0 ? 0 : 2;
    return train(&a);
}
