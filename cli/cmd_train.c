/* murmur train: one replica, no gossip. The reference the gossip runs are
 * compared with, and the quickest way to see that the model learns.
 *
 * A resumed run must reproduce the uninterrupted one exactly, so everything
 * a step depends on is either in the checkpoint (parameters, AdamW state and
 * schedule, data RNG, seed, step) or given again on the command line
 * (--data, --partition, --batch, --threads); the checkpoint's values win and
 * contradicting flags are refused. */
#include <limits.h>
#include <math.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/opt.h"
#include "base/peak_rss.h"
#include "model/checkpoint.h"
#include "model/blas_env.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "node/replica.h"

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

typedef struct {
    mm_replica_config rc;
    mm_replica_given given;
    int eval_every, eval_windows, log_every, peer, n_peers;
    long steps, checkpoint_every, stop_after;
    double minutes;
    const char *out;
    bool resume, set_steps;
} train_args;

#define TRAIN_OPTS 48
static const mm_opt *train_table(train_args *a)
{
    static mm_opt t[TRAIN_OPTS];
    const double BIG = (double)(1L << 40);
    const mm_opt run[] = {
        MM_OPT_HEAD("Length:"),
        MM_OPT(MM_OPT_LONG, "steps", "N", &a->steps, 1, BIG,
               "optimizer steps of the whole run, the schedule's length (default 2000, or what "
               "fits in --minutes)",
               .given = &a->set_steps),
        MM_OPT(MM_OPT_DOUBLE, "minutes", "M", &a->minutes, 1e-3, 1e6,
               "stop after M minutes of this invocation; without --steps the schedule's length is "
               "fitted to the speed of the first steps, and shrunk when they slow down",
               .hide_default = true),
        MM_OPT_HEAD("Shard (murmur node derives these from the topology and --id):"),
        MM_OPT(MM_OPT_INT, "peer", "K", &a->peer, 0, 1 << 20, "train peer K's shard"),
        MM_OPT(MM_OPT_INT, "n-peers", "N", &a->n_peers, 1, 1 << 20,
               "number of shards (1: all training files)"),
        MM_OPT_HEAD("Running:"),
        MM_OPT(MM_OPT_INT, "eval-every", "N", &a->eval_every, 0, INT_MAX,
               "evaluate every N steps, 0 = only at the end"),
        MM_OPT(MM_OPT_INT, "eval-windows", "N", &a->eval_windows, 1, 1 << 20,
               "windows in the fixed validation sample"),
        MM_OPT(MM_OPT_INT, "log-every", "N", &a->log_every, 1, 1 << 30,
               "progress line every N steps"),
        MM_OPT(MM_OPT_STR, "out", "DIR", &a->out, 0, 0, "metrics.jsonl and checkpoint.bin go here"),
        MM_OPT(MM_OPT_LONG, "checkpoint-every", "N", &a->checkpoint_every, 0, BIG,
               "save a checkpoint every N steps, 0 = only at the end (SIGINT/SIGTERM also save "
               "and stop)"),
        MM_OPT(MM_OPT_FLAG, "resume", NULL, &a->resume, 0, 0,
               "continue from DIR/checkpoint.bin exactly where it stopped (none there yet: "
               "start fresh, saying so)"),
        MM_OPT(MM_OPT_LONG, "stop-after", "N", &a->stop_after, 1, BIG,
               "stop (with a checkpoint) after N steps of this invocation", .hide_default = true),
    };
    int n = mm_replica_opts(&a->rc, &a->given, t);
    for (size_t i = 0; i < sizeof run / sizeof run[0]; i++)
        t[n++] = run[i];
    t[n] = (mm_opt){.kind = MM_OPT_END};
    return t;
}

static const mm_opt *help_table;

static void usage(FILE *f)
{
    fprintf(f, "usage: murmur train [OPTIONS]\n"
               "Trains one replica of the model on one data shard, alone (no gossip).\n");
    mm_opt_print(f, help_table);
}

/* 0 ok, 1 help printed, -1 usage error (printed). */
static int parse_args(int argc, char **argv, train_args *a)
{
    memset(a, 0, sizeof *a);
    mm_replica_config_default(&a->rc);
    a->steps = 2000;
    a->out = "runs/train";
    a->n_peers = 1;
    a->eval_every = 200;
    a->eval_windows = 256;
    a->log_every = 10;
    a->checkpoint_every = 500;
    help_table = train_table(a);
    int first;
    int r = mm_opt_parse("train", argc, argv, help_table, &first, usage);
    if (r != 0)
        return r;
    if (first < argc) {
        fprintf(stderr, "murmur train: unexpected argument '%s'\n", argv[first]);
        return -1;
    }
    if (a->peer >= a->n_peers) {
        fprintf(stderr, "murmur train: --peer %d must be below --n-peers %d\n", a->peer,
                a->n_peers);
        return -1;
    }
    return 0;
}

/* The checkpoint's values replace the flags; a flag that says otherwise is
 * a mistake worth stopping for. */
static int adopt_checkpoint(train_args *a, const mm_model_config *cfg)
{
    static const char *names[4] = {"layers", "width", "heads", "ctx"};
    const bool set[4] = {a->given.layers, a->given.width, a->given.heads, a->given.ctx};
    const int have[4] = {cfg->n_layer, cfg->d_model, cfg->n_head, cfg->n_ctx};
    const int want[4] = {a->rc.model.n_layer, a->rc.model.d_model, a->rc.model.n_head,
                         a->rc.model.n_ctx};
    for (int i = 0; i < 4; i++)
        if (set[i] && have[i] != want[i]) {
            mm_error("--%s %d contradicts the checkpoint (%d); drop the flag to resume",
                     names[i], want[i], have[i]);
            return -1;
        }
    a->rc.model = *cfg;
    return 0;
}

static int check_resumed_opt(const train_args *a, const mm_adamw_config *o, uint64_t seed)
{
    const mm_adamw_config *f = &a->rc.adamw;
    struct { bool set; double flag, ckpt; const char *name; } c[] = {
        {a->given.lr, f->lr_max, o->lr_max, "lr"},
        {a->given.min_lr, f->lr_min, o->lr_min, "min-lr"},
        {a->given.warmup, (double)f->warmup_steps, (double)o->warmup_steps, "warmup"},
        {a->given.weight_decay, f->weight_decay, o->weight_decay, "weight-decay"},
        {a->given.clip, f->grad_clip, o->grad_clip, "clip"},
        {a->set_steps, (double)a->steps, (double)o->total_steps, "steps"},
        {a->given.seed, (double)a->rc.seed, (double)seed, "seed"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (c[i].set && (float)c[i].flag != (float)c[i].ckpt) {
            mm_error("--%s %g contradicts the checkpoint (%g); drop the flag to resume",
                     c[i].name, c[i].flag, c[i].ckpt);
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

/* The schedule length of a --minutes run before its speed is known. */
#define UNSIZED (1L << 40)

/* One training run in progress. */
typedef struct {
    train_args *a;
    mm_replica rep;
    mm_metrics m;
    mm_baseline base;
    char ckpt[PATH_MAX + 32];
    uint64_t seed;
    bool estimate_total;       /* the --minutes schedule is not sized yet */
    bool refit;                /* ... sized by this invocation: refitted as the speed changes */
    double t0, deadline, next_fit;
} run;

static void evaluate(run *r, double t)
{
    mm_eval_result e;
    mm_replica_evaluate(&r->rep, r->a->eval_windows, &e);
    long step = r->rep.opt.step;
    mm_info("eval step %ld: val loss %.4f, %.3f bits/byte, next-byte accuracy %.2f%% "
            "(most frequent byte: %.2f%%, unigram: %.3f bits/byte)",
            step, e.loss, e.bpb, 100 * e.acc, 100 * r->base.top_acc, r->base.unigram_bpb);
    mm_metrics *m = &r->m;
    mm_metrics_begin(m, "eval");
    mm_metrics_int(m, "step", step);
    mm_metrics_fixed(m, "time", t, 3);
    mm_metrics_fixed(m, "val_loss", e.loss, 6);
    mm_metrics_fixed(m, "val_bpb", e.bpb, 6);
    mm_metrics_fixed(m, "val_acc", e.acc, 6);
    mm_metrics_int(m, "positions", e.positions);
    mm_metrics_fixed(m, "baseline_acc", r->base.top_acc, 6);
    mm_metrics_fixed(m, "baseline_bpb", r->base.unigram_bpb, 6);
    mm_metrics_end(m);
}

static int save(run *r)
{
    mm_ckpt_state st = {.step = r->rep.opt.step, .round = 0, .peer_id = r->a->peer,
                        .n_peers = r->a->n_peers, .pushsum_weight = 1.0, .seed = r->seed};
    char err[PATH_MAX + 256];
    if (mm_replica_save(&r->rep, r->ckpt, st, err, sizeof err) != 0) {
        mm_error("checkpoint: %s", err);
        return -1;
    }
    return 0;
}

static int resume_run(run *r);

/* Model, optimizer and shard, from scratch or from the checkpoint. 0, 1
 * (runtime failure) or 2 (a flag contradicts the checkpoint). */
static int open_run(run *r)
{
    train_args *a = r->a;
    char err[PATH_MAX + 512];
    snprintf(r->ckpt, sizeof r->ckpt, "%s/checkpoint.bin", a->out);
    /* The rule murmur node follows too (docs/formats.md, "Exact resume"):
     * no checkpoint yet is a fresh start, said; one that cannot be used is
     * refused. A launcher restarting whatever crashed with --resume then
     * also restarts what crashed before its first checkpoint. */
    if (a->resume && access(r->ckpt, F_OK) != 0 && errno == ENOENT) {
        mm_info("--resume: no checkpoint at %s, starting fresh", r->ckpt);
        a->resume = false;
    }
    if (a->resume) {
        mm_model_config cfg;
        if (mm_checkpoint_peek(r->ckpt, &cfg, err, sizeof err) != 0) {
            mm_error("cannot resume: %s", err);
            return 1;
        }
        if (adopt_checkpoint(a, &cfg) != 0)
            return 2;
    }
    /* With --minutes alone the schedule's length is unknown until the speed
     * is measured; until then it is "very long" (only warm-up matters). */
    r->estimate_total = !a->resume && a->minutes > 0 && !a->set_steps;
    a->rc.adamw.total_steps = r->estimate_total ? UNSIZED : a->steps;
    if (mm_replica_config_finish(&a->rc, &a->given, a->resume ? UNSIZED : a->steps, err,
                                 sizeof err) != 0) {
        mm_error("%s", err);
        return 2;
    }
    /* Peers of one run share the init (seed) but not the batches. */
    uint64_t rng_seed = a->rc.seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(a->peer + 1));
    if (mm_replica_init(&r->rep, &a->rc, a->rc.seed, rng_seed, err, sizeof err) != 0) {
        mm_error("%s", err);
        return 1;
    }
    r->seed = a->rc.seed;
    int rc = a->resume ? resume_run(r) : 0;
    if (rc != 0)
        return rc;
    /* The shard last: a Dirichlet partition drawn from the run's seed needs
     * the checkpoint's seed when resuming, or a resumed run would read other
     * files. */
    mm_partition *part = &r->rep.cfg.partition;
    if (part->kind == MM_PART_DIRICHLET && !part->seed_given)
        part->seed = r->seed;
    if (mm_replica_load_shard(&r->rep, a->peer, a->n_peers, err, sizeof err) != 0) {
        mm_error("data: %s", err);
        return 1;
    }
    int T = a->rc.model.n_ctx;
    const mm_shard *sh = &r->rep.shard;
    if (sh->train_len < (size_t)T + 1 || sh->val_len < (size_t)T + 1) {
        mm_error("data: shard too small for a context of %d bytes (%zu training, %zu validation "
                 "bytes)", T, sh->train_len, sh->val_len);
        return 1;
    }
    return 0;
}

/* Restores the replica from the checkpoint; 0, 1 or 2 as open_run. */
static int resume_run(run *r)
{
    train_args *a = r->a;
    char err[PATH_MAX + 512];
    mm_ckpt_state st = {0};
    if (mm_replica_load(&r->rep, r->ckpt, &st, err, sizeof err) != 0) {
        mm_error("cannot resume: %s", err);
        return 1;
    }
    if (st.peer_id != a->peer || st.n_peers != a->n_peers) {
        mm_error("cannot resume: the checkpoint is peer %d of %d, asked for peer %d of %d",
                 st.peer_id, st.n_peers, a->peer, a->n_peers);
        return 1;
    }
    mm_adamw_config *oc = &r->rep.opt.cfg;
    if (oc->total_steps == UNSIZED) {
        /* Stopped before its --minutes schedule was sized: size it now. */
        if (a->set_steps) {
            oc->total_steps = a->steps;
        } else if (a->minutes > 0) {
            r->estimate_total = true;
        } else {
            mm_error("cannot resume: the checkpoint's schedule was never sized (the run "
                     "stopped within its first 20 steps); give --steps or --minutes");
            return 2;
        }
        a->set_steps = false;
    }
    if (check_resumed_opt(a, oc, st.seed) != 0)
        return 2;
    r->seed = st.seed;
    mm_info("resumed %s at step %ld of %ld", r->ckpt, r->rep.opt.step, oc->total_steps);
    return 0;
}

static void log_start(run *r)
{
    train_args *a = r->a;
    const mm_adamw_config *oc = &r->rep.opt.cfg;
    const mm_shard *sh = &r->rep.shard;
    const mm_model_config *mc = &a->rc.model;
    mm_info("model: %d layers, width %d, %d heads, context %d: %zu parameters", mc->n_layer,
            mc->d_model, mc->n_head, mc->n_ctx, r->rep.model.n_params);
    mm_info("data: %s, partition %s, peer %d of %d: %d files (%s), %zu training bytes; "
            "%zu validation bytes", a->rc.data_dir, mm_partition_name(&a->rc.partition), a->peer,
            a->n_peers, sh->n_files, sh->genres, mm_shard_text_bytes(sh), sh->val_len);
    char sched[96];
    if (r->estimate_total)
        snprintf(sched, sizeof sched, "schedule sized after 20 steps to fit %g minutes",
                 a->minutes);
    else if (a->minutes > 0)
        snprintf(sched, sizeof sched, "schedule %ld steps, stopping after %g minutes",
                 oc->total_steps, a->minutes);
    else
        snprintf(sched, sizeof sched, "schedule %ld steps", oc->total_steps);
    mm_info("OpenBLAS kernel %s, %d threads; batch %d x %d bytes, lr %g -> %g, warm-up %ld, %s",
            mm_blas_kernel(), r->rep.model.threads, a->rc.batch, mc->n_ctx,
            oc->lr_max, oc->lr_min, oc->warmup_steps, sched);
    mm_info("baseline on the validation sample: most frequent byte 0x%02x -> accuracy %.2f%%; "
            "unigram frequencies -> %.3f bits/byte", r->base.top_byte, 100 * r->base.top_acc,
            r->base.unigram_bpb);
    mm_metrics *m = &r->m;
    mm_metrics_begin(m, "start");
    mm_metrics_int(m, "peer", a->peer);
    mm_metrics_int(m, "n_peers", a->n_peers);
    mm_metrics_int(m, "params", (long long)r->rep.model.n_params);
    mm_metrics_int(m, "layers", mc->n_layer);
    mm_metrics_int(m, "width", mc->d_model);
    mm_metrics_int(m, "heads", mc->n_head);
    mm_metrics_int(m, "ctx", mc->n_ctx);
    mm_metrics_int(m, "batch", a->rc.batch);
    mm_metrics_str(m, "partition", mm_partition_name(&a->rc.partition));
    mm_metrics_int(m, "seed", (long long)r->seed);
    mm_metrics_int(m, "resumed_step", r->rep.opt.step);
    mm_metrics_str(m, "blas_kernel", mm_blas_kernel());
    mm_metrics_int(m, "time", 0);
    mm_metrics_end(m);
}

/* With --minutes alone: after 20 steps, the schedule is sized to what fits
 * at the speed so far (95% of the time left), and then refitted every
 * twentieth of the time budget: when the steps have slowed (a loaded
 * machine), the schedule shrinks, so that its decay still ends before the
 * deadline. It never grows (that would raise the learning rate again). */
static void fit_schedule(run *r, long step, long done, double t_steps)
{
    mm_adamw_config *oc = &r->rep.opt.cfg;
    double now = mm_time_now(), per = (now - t_steps) / done, left = r->deadline - now;
    long total = step + (long)(0.95 * left / per);
    if (total <= step)
        total = step + 1;
    r->next_fit = now + (r->deadline - r->t0) / 20;
    if (!r->estimate_total && total >= oc->total_steps - oc->total_steps / 100)
        return; /* as fast as assumed, or faster: keep it */
    long was = oc->total_steps;
    oc->total_steps = total;
    /* a warm-up still under way (not given) is a tenth of the schedule */
    if (!r->a->given.warmup && step < oc->warmup_steps && oc->warmup_steps > oc->total_steps / 10)
        oc->warmup_steps = oc->total_steps / 10 > step ? oc->total_steps / 10 : step;
    if (r->estimate_total)
        mm_info("%.1f ms per step: schedule sized to %ld steps", per * 1e3, oc->total_steps);
    else
        mm_info("step %ld: the steps have slowed to %.1f ms on average: schedule refitted from "
                "%ld to %ld steps, to end within --minutes %g", step, per * 1e3, was,
                oc->total_steps, r->a->minutes);
    r->estimate_total = false;
    r->refit = true;
}

/* A refit every twentieth of the budget, none in its last twentieth (too
 * few steps are left there to measure, or to change). */
static bool refit_due(const run *r, double t)
{
    return r->refit && t >= r->next_fit && t < r->deadline - (r->deadline - r->t0) / 20;
}

/* The steps; returns why they stopped. */
static const char *train_loop(run *r, long *evaluated)
{
    train_args *a = r->a;
    mm_adamw *opt = &r->rep.opt;
    int B = a->rc.batch, T = a->rc.model.n_ctx;
    long start_step = opt->step, n_sum = 0;
    double loss_sum = 0;
    /* Speed and time left count from here: the first evaluation is not a step. */
    double t_steps = mm_time_now(), t_last = t_steps;
    while (opt->step < opt->cfg.total_steps) {
        if (stop_signal)
            return "signal";
        if (r->deadline && mm_time_now() >= r->deadline)
            return "time";
        if (a->stop_after && opt->step - start_step >= a->stop_after)
            return "stop-after";
        float lr = mm_adamw_lr(&opt->cfg, opt->step), gnorm;
        float loss = mm_replica_step(&r->rep, &gnorm);
        if (!isfinite(loss)) {
            mm_error("step %ld: loss is %f; stopping (try a lower --lr)", opt->step, loss);
            return "diverged";
        }
        loss_sum += loss;
        n_sum++;
        long step = opt->step, done = step - start_step;
        double t = mm_time_now();
        if ((r->estimate_total && done == 20) || refit_due(r, t))
            fit_schedule(r, step, done, t_steps);
        mm_metrics *m = &r->m;
        mm_metrics_begin(m, "step");
        mm_metrics_int(m, "step", step);
        mm_metrics_fixed(m, "time", t - r->t0, 3);
        mm_metrics_num(m, "loss", loss);
        mm_metrics_num(m, "lr", lr);
        mm_metrics_num(m, "gnorm", gnorm);
        mm_metrics_end(m);
        if (step % a->log_every == 0 || step == opt->cfg.total_steps) {
            double per = (t - t_steps) / done;
            double left = (opt->cfg.total_steps - step) * per;
            if (r->deadline && r->deadline - t < left)
                left = r->deadline - t;
            char eta[32];
            fmt_duration(r->estimate_total ? NAN : left, eta, sizeof eta);
            mm_info("step %ld/%ld  loss %.4f  lr %.2e  gnorm %.3f  %.0f tokens/s  %s left", step,
                    opt->cfg.total_steps, loss_sum / n_sum, lr, gnorm,
                    (double)n_sum * B * T / (t - t_last), eta);
            t_last = t;
            loss_sum = 0;
            n_sum = 0;
        }
        if (a->eval_every && step % a->eval_every == 0 && step < opt->cfg.total_steps) {
            evaluate(r, t - r->t0);
            *evaluated = step;
        }
        if (a->checkpoint_every && step % a->checkpoint_every == 0 && save(r) != 0)
            return NULL;
    }
    return "done";
}

static int train(train_args *a)
{
    run r = {.a = a};
    r.m.fd = -1;
    char err[PATH_MAX + 256], mpath[PATH_MAX + 32];
    int rc = open_run(&r);
    if (rc != 0)
        goto out;
    rc = 1;
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", a->out);
    if (mm_mkdir_p(a->out, err, sizeof err) != 0 ||
        mm_metrics_open(&r.m, mpath, err, sizeof err) != 0) {
        mm_error("%s", err);
        goto out;
    }
    mm_baseline_compute(&r.rep.shard, a->eval_windows, a->rc.batch, a->rc.model.n_ctx, &r.base);
    mm_blas_log_note(); /* the OpenBLAS re-exec, if any: with the start-up lines, not before help */
    log_start(&r);

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    r.t0 = mm_time_now();
    r.deadline = a->minutes > 0 ? r.t0 + a->minutes * 60 : 0;
    long evaluated = a->resume ? -1 : r.rep.opt.step;
    if (!a->resume)
        evaluate(&r, 0);
    const char *reason = train_loop(&r, &evaluated);
    if (!reason)
        goto out; /* a checkpoint could not be written */
    bool diverged = !strcmp(reason, "diverged");
    if (!diverged) { /* keep the last good checkpoint rather than save NaNs */
        if (evaluated != r.rep.opt.step)
            evaluate(&r, mm_time_now() - r.t0);
        if (save(&r) != 0)
            goto out;
    }
    long peak_kib = mm_peak_rss_kib();
    double secs = mm_time_now() - r.t0;
    const mm_adamw_config *oc = &r.rep.opt.cfg;
    long short_by = !strcmp(reason, "time") ? oc->total_steps - r.rep.opt.step : 0;
    if (short_by > 0 && short_by >= oc->total_steps / 100)
        mm_warn("--minutes %g ran out at step %ld of the schedule's %ld: %ld steps (%.0f%%) "
                "short, so the learning rate stopped at %.2e, not its final %.2e; give --steps "
                "%ld or fewer, or more --minutes (or --resume with --minutes to finish)",
                a->minutes, r.rep.opt.step, oc->total_steps, short_by,
                100.0 * (double)short_by / (double)oc->total_steps,
                mm_adamw_lr(oc, r.rep.opt.step), mm_adamw_lr(oc, oc->total_steps),
                r.rep.opt.step);
    else if (short_by > 0)
        mm_info("--minutes %g ran out %ld step(s) before the schedule's end (%ld)", a->minutes,
                short_by, oc->total_steps);
    mm_info("stopped (%s) at step %ld after %.1f s: checkpoint %s%s; peak RSS %.1f MiB", reason,
            r.rep.opt.step, secs, r.ckpt, diverged ? " not updated" : "", peak_kib / 1024.0);
    mm_metrics_begin(&r.m, "end");
    mm_metrics_int(&r.m, "step", r.rep.opt.step);
    mm_metrics_fixed(&r.m, "time", secs, 3);
    mm_metrics_str(&r.m, "reason", reason);
    mm_metrics_int(&r.m, "schedule_steps", oc->total_steps);
    mm_metrics_int(&r.m, "peak_rss_kib", peak_kib);
    mm_metrics_end(&r.m);
    rc = diverged ? 1 : 0;
out:
    mm_metrics_close(&r.m);
    mm_replica_free(&r.rep);
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
