/* The settings every peer of a run must share that the HELLO's fixed
 * fields (model fingerprint, vector length, algorithm, codec, topology) do
 * not carry, as the HELLO's settings text (docs/protocol.md 3.1,
 * "Settings"). Which flags, when, and in what form is the protocol: the
 * table there is this file, line for line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "gossip/choco.h"
#include "gossip/codec.h"
#include "net/wire.h"
#include "node/allreduce.h"
#include "node/node.h"

#define MAX_SETTINGS 32

typedef struct {
    const char *key;
    char val[MM_WIRE_SETTINGS_MAX]; /* "" for a flag without value */
} entry;

typedef struct {
    entry e[MAX_SETTINGS];
    int n;
} settings;

static char *add(settings *s, const char *key)
{
    entry *e = &s->e[s->n++];
    e->key = key;
    e->val[0] = 0;
    return e->val;
}

static void add_int(settings *s, const char *key, long long v)
{
    snprintf(add(s, key), sizeof s->e[0].val, "%lld", v);
}

static void add_double(settings *s, const char *key, double v)
{
    mm_text_double(add(s, key), sizeof s->e[0].val, v);
}

static void add_float(settings *s, const char *key, float v)
{
    mm_text_float(add(s, key), sizeof s->e[0].val, v);
}

static void add_str(settings *s, const char *key, const char *v)
{
    snprintf(add(s, key), sizeof s->e[0].val, "%s", v);
}

/* "R:G,R:G,...": the parser's form, decimal without leading zeros. */
static void add_schedule(settings *s, const mm_steps_schedule *sc)
{
    char *v = add(s, "gossip-steps-schedule");
    size_t len = 0, cap = sizeof s->e[0].val;
    for (int i = 0; i < sc->n && len < cap; i++)
        len += (size_t)snprintf(v + len, cap - len, "%s%ld:%d", i ? "," : "", sc->from[i],
                                sc->steps[i]);
}

/* iid, genre, or dirichlet:ALPHA:SEED with the seed it draws from (the
 * run's --seed unless the partition names one). */
static void add_partition(settings *s, const mm_partition *p)
{
    char *v = add(s, "partition");
    if (p->kind == MM_PART_DIRICHLET) {
        char alpha[32];
        mm_text_double(alpha, sizeof alpha, p->alpha);
        snprintf(v, sizeof s->e[0].val, "dirichlet:%s:%llu", alpha,
                 (unsigned long long)p->seed);
    } else {
        snprintf(v, sizeof s->e[0].val, "%s", p->kind == MM_PART_GENRE ? "genre" : "iid");
    }
}

static void add_outer(settings *s, const mm_node_config *c)
{
    const mm_outer_config *o = &c->outer_cfg;
    add_str(s, "outer", !c->outer ? "none" : o->kind == MM_OUTER_NOLOCO ? "noloco" : "nesterov");
    if (!c->outer)
        return;
    if (o->kind == MM_OUTER_NOLOCO)
        add_float(s, "noloco-gamma", o->gamma);
    if (c->outer_fragments > 1)
        add_int(s, "outer-fragments", c->outer_fragments);
    if (c->algo == MM_ALGO_ALLREDUCE && c->compress && strcmp(c->compress, "fp32"))
        add_float(s, "outer-ef-decay", c->outer_ef_decay);
    add_float(s, "outer-lr", o->lr);
    add_float(s, "outer-momentum", o->momentum);
    add_int(s, "outer-momentum-warmup", o->warmup);
    char *v = add(s, "outer-momentum-decay");
    if (o->decay == MM_OUTER_DECAY_NONE) {
        snprintf(v, sizeof s->e[0].val, "none");
    } else {
        char from[32];
        mm_text_double(from, sizeof from, o->decay_from);
        snprintf(v, sizeof s->e[0].val, "%s:%s",
                 o->decay == MM_OUTER_DECAY_LINEAR ? "linear" : "cosine", from);
        /* the decay spans the run: its length is part of the schedule */
        add_int(s, "rounds", c->rounds);
    }
    if (c->outer_overlap)
        add(s, "outer-overlap");
}

/* The exchanges of a round: one, a fixed number, a schedule of them, or
 * consensus control's choice (docs/node.md, "Consensus control"): its
 * bounds, which make the exchange numbering's stride and say whether edges
 * skip rounds, not its target, a peer's own wish (an edge runs the smaller
 * of its two ends' wishes: "The agreement rule"). */
static void add_exchanges(settings *s, const mm_node_config *c)
{
    if (c->algo == MM_ALGO_ALLREDUCE)
        return;
    if (c->consensus_target > 0) {
        add_int(s, "max-gossip-steps", c->max_gossip_steps);
        add_double(s, "min-gossip-steps", c->min_gossip_steps);
    } else if (c->gossip_schedule.n) {
        add_schedule(s, &c->gossip_schedule);
    } else {
        add_int(s, "gossip-steps", c->gossip_steps);
    }
}

static int compress_settings(settings *s, const mm_node_config *c)
{
    mm_codec_spec spec;
    char why[200];
    if (mm_codec_parse(c->compress, &spec, why, sizeof why) != 0)
        return -1;
    mm_codec_format(&spec, add(s, "compress"), sizeof s->e[0].val);
    if (c->algo != MM_ALGO_ALLREDUCE) /* CHOCO's gamma (the all-reduce's outer has none) */
        add_double(s, "consensus-step",
                   c->consensus_step > 0 ? c->consensus_step : mm_choco_default_gamma(&spec));
    return 0;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->key, ((const entry *)b)->key);
}

int mm_node_settings(const mm_node_config *c, char *out, size_t len)
{
    settings *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    bool trains = !c->no_train;
    if (c->vector_len <= 0) { /* a model: its shape (the fingerprint's flags) */
        add_int(s, "layers", c->train.model.n_layer);
        add_int(s, "width", c->train.model.d_model);
        add_int(s, "heads", c->train.model.n_head);
        add_int(s, "ctx", c->train.model.n_ctx);
    }
    if (trains) {
        add_int(s, "local-steps", c->local_steps);
        add_partition(s, &c->train.partition);
        if (c->same_init)
            add_int(s, "seed", (long long)c->train.seed);
        else
            add(s, "different-init");
    } else {
        add(s, "no-train");
    }
    add_exchanges(s, c);
    if (c->algo == MM_ALGO_ALLREDUCE)
        add_int(s, "allreduce-chunk",
                c->allreduce_chunk > 0 ? c->allreduce_chunk : MM_ALLREDUCE_CHUNK_DEFAULT);
    if (c->compress && compress_settings(s, c) != 0) {
        free(s);
        return -1;
    }
    add_outer(s, c);
    /* an elastic run's (docs/membership.md): the tables' size and the
     * rounds a change waits; both keep their defaults in a static run */
    if (c->max_peers != MM_MAX_PEERS_DEFAULT)
        add_int(s, "max-peers", c->max_peers);
    if (c->view_delay != MM_VIEW_DELAY_DEFAULT)
        add_int(s, "view-delay", c->view_delay);
    qsort(s->e, (size_t)s->n, sizeof s->e[0], by_key);
    size_t at = 0;
    for (int i = 0; i < s->n; i++) /* (past len: counted, not written) */
        at += (size_t)snprintf(at < len ? out + at : NULL, at < len ? len - at : 0, "%s%s%s\n",
                               s->e[i].key, s->e[i].val[0] ? "=" : "", s->e[i].val);
    free(s);
    return at < len && at <= MM_WIRE_SETTINGS_MAX ? (int)at : -1;
}
