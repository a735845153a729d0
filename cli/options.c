/* cli/options.h: the flags train and node share, as table entries. */
#include "cli/options.h"

#include <stdint.h>
#include <stdio.h>

static int parse_partition(const char *arg, void *dst, char *err, size_t errlen)
{
    char why[200];
    if (mm_partition_parse(arg, dst, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
}

static const char *show_partition(const void *dst) { return mm_partition_name(dst); }

int mm_replica_opts(mm_replica_config *c, mm_replica_given *g, mm_opt *out)
{
    const double BIG = (double)(1LL << 40);
    const mm_opt t[] = {
        MM_OPT_HEAD("Model (the same on every peer; --resume needs the shape the checkpoint was made with):"),
        MM_OPT(MM_OPT_INT, "layers", "N", &c->model.n_layer, 1, 64, "transformer blocks",
               .given = &g->layers),
        MM_OPT(MM_OPT_INT, "width", "N", &c->model.d_model, 1, 4096, "model width d_model",
               .given = &g->width),
        MM_OPT(MM_OPT_INT, "heads", "N", &c->model.n_head, 1, 256,
               "attention heads, dividing the width", .given = &g->heads),
        MM_OPT(MM_OPT_INT, "ctx", "N", &c->model.n_ctx, 1, 4096, "context length in bytes",
               .given = &g->ctx),
        MM_OPT_HEAD("Optimisation (AdamW, linear warm-up, then cosine decay to --min-lr):"),
        MM_OPT(MM_OPT_INT, "batch", "N", &c->batch, 1, 4096, "sequences per step",
               .given = &g->batch),
        MM_OPT(MM_OPT_FLOAT, "lr", "X", &c->adamw.lr_max, 0, 10, "peak learning rate",
               .given = &g->lr),
        MM_OPT(MM_OPT_FLOAT, "min-lr", "X", &c->adamw.lr_min, 0, 10,
               "final learning rate (default: lr/10)", .given = &g->min_lr),
        MM_OPT(MM_OPT_LONG, "warmup", "N", &c->adamw.warmup_steps, 0, BIG,
               "warm-up steps, at most a tenth of the run unless given", .given = &g->warmup),
        MM_OPT(MM_OPT_FLOAT, "weight-decay", "X", &c->adamw.weight_decay, 0, 10,
               "decoupled weight decay of the matrices", .given = &g->weight_decay),
        MM_OPT(MM_OPT_FLOAT, "clip", "X", &c->adamw.grad_clip, 0, 1e6,
               "clip the gradient norm to X, 0 = off", .given = &g->clip),
        MM_OPT(MM_OPT_INT, "adam-accum", "K", &c->adamw.accum_steps, 0, 1 << 20,
               "Decent-DP's AccumAdamW (docs/outer.md): the Adam moments move every K steps, "
               "from the mean gradient of those K (e.g. K = the number of peers); 0 or 1: "
               "AdamW", .hide_default = true),
        MM_OPT(MM_OPT_U64, "seed", "S", &c->seed, 0, (double)(1ULL << 53),
               "model initialisation and data sampling seed", .given = &g->seed),
        MM_OPT_HEAD("Data:"),
        MM_OPT(MM_OPT_STR, "data", "DIR", &c->data_dir, 0, 0, "prepared corpus (`make data` makes data/brown)",
               .given = &g->data),
        MM_OPT(MM_OPT_CUSTOM, "partition", "P", &c->partition, 0, 0,
               "iid | genre | dirichlet:ALPHA[:SEED]: how training files split across peers (Dirichlet "
               "draws use --seed unless SEED is given; murmur data-info prints the shards)", .parse = parse_partition,
               .show = show_partition),
        MM_OPT(MM_OPT_INT, "threads", "N", &c->threads, 0, 256,
               "OpenBLAS threads, 0 = OpenBLAS's choice"),
    };
    int n = (int)(sizeof t / sizeof t[0]);
    _Static_assert(sizeof t / sizeof t[0] <= MM_REPLICA_OPTS, "raise MM_REPLICA_OPTS");
    for (int i = 0; i < n; i++)
        out[i] = t[i];
    return n;
}

int mm_replica_config_finish(mm_replica_config *c, const mm_replica_given *g, long total_steps,
                             char *err, size_t errlen)
{
    if (!g->min_lr && g->lr)
        c->adamw.lr_min = c->adamw.lr_max / 10;
    if (c->adamw.lr_max == 0) {
        snprintf(err, errlen, "--lr 0 would never move the weights: for gossip without "
                 "training, murmur node --no-train");
        return -1;
    }
    if (c->adamw.lr_min > c->adamw.lr_max) {
        snprintf(err, errlen, "--min-lr %g is above --lr %g", (double)c->adamw.lr_min,
                 (double)c->adamw.lr_max);
        return -1;
    }
    if (c->partition.kind == MM_PART_DIRICHLET && !c->partition.seed_given)
        c->partition.seed = c->seed; /* the same on every peer of the run */
    if (!g->warmup && c->adamw.warmup_steps > total_steps / 10)
        c->adamw.warmup_steps = total_steps / 10;
    /* in the flags' own names (the checks below use the model's) */
    if (c->model.n_head > c->model.d_model) {
        snprintf(err, errlen, "--heads %d is more than --width %d", c->model.n_head,
                 c->model.d_model);
        return -1;
    }
    if (c->model.n_head > 0 && c->model.d_model % c->model.n_head != 0) {
        snprintf(err, errlen, "--width %d is not a multiple of --heads %d (each head takes "
                 "width/heads dimensions)", c->model.d_model, c->model.n_head);
        return -1;
    }
    const char *why = mm_model_config_check(&c->model);
    if (why) {
        snprintf(err, errlen, "model shape: %s", why);
        return -1;
    }
    return 0;
}

int mm_cli_parse_slow(const char *arg, void *dst, char *err, size_t errlen)
{
    return mm_slowdown_parse(arg, false, dst, err, errlen);
}

int mm_cli_parse_stretch(const char *arg, void *dst, char *err, size_t errlen)
{
    return mm_slowdown_parse(arg, true, dst, err, errlen);
}
