/* node/algo_outer.h: the outer optimizer as a wrapper of an averaging. */
#include "node/algo_outer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/sha256.h"
#include "gossip/codec.h"
#include "gossip/ef.h"
#include "net/wire.h"
#include "model/outer.h"
#include "node/trainer.h"

struct mm__outer {
    mm_outer_config cfg;
    long total;          /* outer steps in the run: one per round */
    long step;           /* outer steps taken */
    float mu;            /* the momentum of the last outer step */
    size_t P;
    float *o, *m, *d;
    /* The compressed exchange over the all-reduce (gossip/ef.h, docs/outer.md
     * "Over the all-reduce"); codec NULL: the ring's exact average. */
    mm_codec *codec;
    float beta;          /* --outer-ef-decay */
    float *e;            /* the error feedback (checkpointed) */
    float *y;            /* the round's average; the encoder's scratch before it */
    uint8_t *slots;      /* n payloads of slot_bytes: the all-gather's */
    size_t *lens, slot_bytes;
    uint32_t n, id;
    uint64_t seed;       /* randk's keys */
    uint32_t fragments;  /* --outer-fragments F: round r exchanges fragment r mod F */
};

/* Whether the outer exchange is the all-gather of compressed
 * pseudo-gradients: --algo allreduce with a --compress that is not fp32
 * (fp32 is the ring itself). */
bool mm__outer_compressed(const mm_node_config *c)
{
    return c->outer && c->algo == MM_ALGO_ALLREDUCE && c->compress && strcmp(c->compress, "fp32");
}

/* The compressed exchange's state: the codec, e, y, the slots. 0, or the
 * exit status with why. */
static int compressed_new(mm__outer *o, const mm_node_config *c, uint32_t n, uint32_t id,
                          char *err, size_t errlen)
{
    mm_codec_spec spec;
    char why[256];
    if (mm_codec_parse(c->compress, &spec, why, sizeof why) != 0 ||
        !(o->codec = mm_codec_new(&spec, o->P, why, sizeof why))) {
        snprintf(err, errlen, "--compress %s: %s", c->compress, why);
        return MM_EXIT_USAGE;
    }
    o->beta = c->outer_ef_decay;
    o->n = n;
    o->id = id;
    o->seed = c->train.seed;
    o->slot_bytes = mm_codec_max_bytes(o->codec);
    o->e = calloc(o->P, sizeof(float));
    o->y = calloc(o->P, sizeof(float));
    o->slots = malloc((size_t)n * o->slot_bytes);
    o->lens = calloc(n, sizeof *o->lens);
    if (!o->e || !o->y || !o->slots || !o->lens) {
        snprintf(err, errlen, "out of memory for the compressed outer exchange (%u payloads of "
                 "%zu bytes)", n, o->slot_bytes);
        return MM_EXIT_ERROR;
    }
    return 0;
}

/* The bytes the compressed exchange adds to the outer state: e, y and the
 * slots (node/allgather.h). */
static uint64_t compressed_bytes(const mm_node_config *c, size_t P, uint32_t n)
{
    mm_codec_spec spec;
    char why[256];
    if (!mm__outer_compressed(c) || mm_codec_parse(c->compress, &spec, why, sizeof why) != 0)
        return 0;
    return 2 * (uint64_t)P * sizeof(float) + (uint64_t)n * mm_codec_max_len(&spec, P);
}

/* The settings measured to fail on murmur's own workloads (docs/outer.md,
 * "Defaults"): said loudly at start, the run goes on. */
static void warn_settings(const mm_node_config *c)
{
    const mm_outer_config *o = &c->outer_cfg;
    if (c->local_steps == 1)
        mm_warn("--outer with --local-steps 1 takes an outer step after every optimizer "
                "step: on murmur's demo setting (8 peers, genre partition, 200 rounds) every "
                "outer setting measured ended below plain averaging, and momentum 0.9 (constant "
                "or with Pier's schedules) collapsed to predicting a space in 12 of 12 runs "
                "(docs/outer.md, \"Defaults\"); the outer optimizer is for --local-steps H of "
                "8 and more");
    if (o->kind == MM_OUTER_NESTEROV && o->momentum >= 0.7f && o->warmup == 0 &&
        o->decay == MM_OUTER_DECAY_NONE)
        mm_warn("--outer-momentum %g without --outer-momentum-warmup or --outer-momentum-decay: "
                "in murmur's 16-peer study (H = 8) a constant momentum of 0.9 ended above "
                "training alone and 0.7 above 0.5, for DiLoCo and its gossip version, and 0.9 "
                "collapsed at H = 1 (docs/outer.md, \"Defaults\"); the default is 0.5",
                o->momentum);
}

int mm__outer_budget(const mm_node_config *c, size_t P, uint32_t n, char *err, size_t errlen)
{
    if (c->outer_fragments > 1 && (size_t)c->outer_fragments > P) {
        snprintf(err, errlen, "--outer-fragments %d: more fragments than the %zu parameters",
                 c->outer_fragments, P);
        return MM_EXIT_USAGE;
    }
    uint64_t extra = compressed_bytes(c, P, n);
    uint64_t bytes = 3 * (uint64_t)P * sizeof(float) + extra;
    uint64_t budget = (uint64_t)c->outer_memory_mb << 20;
    if (bytes <= budget)
        return 0;
    snprintf(err, errlen, "--outer-memory-mb %ld: the outer optimizer's state (3 vectors "
             "of %zu floats: outer parameters, momentum, local progress%s) takes %.1f MB, "
             "over the budget of %.1f MB", c->outer_memory_mb, P,
             extra ? "; the compressed exchange's error feedback, average and payloads" : "",
             (double)bytes / 1e6, (double)budget / 1e6);
    return MM_EXIT_USAGE;
}

int mm__outer_new(const mm_node_config *c, const float *x, size_t P, uint32_t n, uint32_t id,
                  mm__outer **out, char *err, size_t errlen)
{
    *out = NULL;
    uint64_t bytes = 3 * (uint64_t)P * sizeof(float);
    int status = mm__outer_budget(c, P, n, err, errlen);
    if (status != 0)
        return status;
    mm__outer *o = calloc(1, sizeof *o);
    if (o) {
        o->o = malloc(P * sizeof(float));
        o->m = calloc(P, sizeof(float));
        o->d = calloc(P, sizeof(float));
    }
    if (!o || !o->o || !o->m || !o->d) {
        mm__outer_free(o);
        snprintf(err, errlen, "out of memory for the outer optimizer's state (%.1f MB)",
                 (double)bytes / 1e6);
        return MM_EXIT_ERROR;
    }
    warn_settings(c);
    o->cfg = c->outer_cfg;
    o->total = c->rounds;
    o->P = P;
    o->fragments = c->outer_fragments > 1 ? (uint32_t)c->outer_fragments : 1;
    memcpy(o->o, x, P * sizeof(float));
    if (mm__outer_compressed(c)) {
        status = compressed_new(o, c, n, id, err, errlen);
        if (status != 0) {
            mm__outer_free(o);
            return status;
        }
    }
    *out = o;
    return 0;
}

void mm__outer_free(mm__outer *o)
{
    if (!o)
        return;
    free(o->o);
    free(o->m);
    free(o->d);
    mm_codec_free(o->codec);
    free(o->e);
    free(o->y);
    free(o->slots);
    free(o->lens);
    free(o);
}

void mm__outer_ckpt(mm__outer *o, mm_ckpt_state *st)
{
    st->outer.x = o->o;
    st->outer.m = o->m;
    st->outer.step = o->step;
    st->ef.e = o->e; /* (NULL without the compressed exchange: no block) */
}

int mm__outer_resumed(mm__outer *o, const mm_ckpt_state *st, const char *path, char *err,
                      size_t errlen)
{
    if (!st->outer.has) {
        snprintf(err, errlen, "%s holds no outer optimizer state (written without --outer, or "
                 "by a murmur before checkpoint format 2): resume it without --outer, or start "
                 "afresh", path);
        return -1;
    }
    o->step = (long)st->outer.step;
    if (o->e && !st->ef.has) /* (it was zeroed: the state a fresh run starts from) */
        mm_info("%s holds no error feedback (written without --compress, or by a murmur "
                "before checkpoint format 3): the compressed exchange starts it at 0", path);
    return 0;
}

void mm__outer_label(const mm__outer *o, int local_steps, char *buf, size_t len)
{
    char settings[128];
    mm_outer_describe(&o->cfg, settings, sizeof settings);
    snprintf(buf, len, "%s (%s, H %d)", o->cfg.kind == MM_OUTER_NOLOCO ? "noloco" : "nesterov",
             settings, local_steps);
}

/* Lower-case hex SHA-256 of the outer parameters followed by the outer
 * momentum, as the checkpoint's outer block stores them (docs/formats.md):
 * the start line reports it, so a resume can be checked against the file. */
static void digest(const mm__outer *o, char hex[65])
{
    mm_sha256_ctx c;
    uint8_t d[MM_SHA256_LEN];
    mm_sha256_init(&c);
    mm_sha256_update(&c, o->o, o->P * sizeof(float));
    mm_sha256_update(&c, o->m, o->P * sizeof(float));
    mm_sha256_final(&c, d);
    mm_sha256_hex(d, hex);
}

/* Lower-case hex SHA-256 of the error feedback, as the checkpoint's block
 * stores it (docs/formats.md, version 3). */
static void ef_digest(const mm__outer *o, char hex[65])
{
    uint8_t d[MM_SHA256_LEN];
    mm_sha256(o->e, o->P * sizeof(float), d);
    mm_sha256_hex(d, hex);
}

/* ---- the wrapped entry ------------------------------------------------------ */

static mm__algo entry;          /* made once by mm__algo_outer */
static const mm__algo *inner;

/* gossip: d = x - s (what the local steps added while s travelled; 0 when
 * they ran first), then the inner mix, x = y + d */
static void mix(mm__trainer *tr, const float *s)
{
    mm__outer *o = tr->outer;
    for (size_t i = 0; i < o->P; i++)
        o->d[i] = tr->x[i] - s[i];
    inner->mix(tr, s);
}

/* ---- the compressed exchange over the all-reduce (gossip/ef.h) ----------- */

static uint8_t *slot(const mm__outer *o, uint32_t peer)
{
    return o->slots + (size_t)peer * o->slot_bytes;
}

/* Our payload, Q(beta e + o - s) with its error feedback kept, into our
 * slot; then the all-gather of every peer's on the loop thread. */
static int gather_start(mm__trainer *tr, const float *s)
{
    mm__outer *o = tr->outer;
    size_t len;
    char why[200];
    mm_codec_err ce = mm_ef_encode(o->codec, o->e, o->o, s, o->P, o->beta, o->y,
                                   mm_codec_key(o->seed, o->id, (uint64_t)tr->round),
                                   slot(o, o->id), o->slot_bytes, &len, why, sizeof why);
    if (ce != MM_CODEC_OK) {
        snprintf(tr->round_error, sizeof tr->round_error, "encoding the pseudo-gradient failed: "
                 "%s", why);
        return -1;
    }
    o->lens[o->id] = len;
    mm__mbox_allgather(tr->mb, (uint64_t)tr->round, o->slots, o->lens);
    return 0;
}

/* y = o - the mean of every peer's decoded payload, in peer order (the
 * same floats on every peer), and x = y + (x - s). */
static int gather_finish(mm__trainer *tr, const float *s)
{
    mm__outer *o = tr->outer;
    const uint8_t *p[o->n];
    for (uint32_t j = 0; j < o->n; j++)
        p[j] = slot(o, j);
    char why[200];
    if (mm_ef_combine(o->codec, p, o->lens, (int)o->n, o->o, o->y, why, sizeof why) !=
        MM_CODEC_OK) {
        snprintf(tr->round_error, sizeof tr->round_error, "combining the peers' compressed "
                 "pseudo-gradients failed: %s", why);
        return -1;
    }
    if (s == tr->x)
        memcpy(tr->x, o->y, o->P * sizeof(float));
    else
        for (size_t k = 0; k < o->P; k++)
            tr->x[k] = o->y[k] + (tr->x[k] - s[k]);
    return 0;
}

static int gather_round(mm__trainer *tr)
{
    static const mm__collective gather = {.start = gather_start, .finish = gather_finish};
    return mm__allreduce_round(tr, &gather);
}

/* What the HELLO names: the codec, and the longest payload. */
static void gather_codec(const mm__trainer *tr, uint8_t *kind, uint32_t *block, double *frac,
                         uint64_t *max_body)
{
    const mm__outer *o = tr->outer;
    const mm_codec_spec *spec = mm_codec_get_spec(o->codec);
    *kind = (uint8_t)spec->kind;
    *block = spec->block;
    *frac = spec->frac;
    *max_body = o->slot_bytes;
}

/* ---- fragments (Streaming DiLoCo, --outer-fragments) ---------------------- */

void mm__outer_fragment(const mm__trainer *tr, uint64_t *lo, uint64_t *count)
{
    const mm__outer *o = tr->outer;
    if (!o || o->fragments <= 1) {
        *lo = 0;
        *count = tr->P;
        return;
    }
    mm_wire_fragment(tr->P, o->fragments, (uint32_t)((uint64_t)tr->round % o->fragments), lo,
                     count);
}

/* The round's fragment of x, at the start of buffer b, to the
 * out-neighbours. */
static int fragment_send(mm__trainer *tr, int b, uint64_t e, bool more)
{
    uint64_t lo, count;
    mm__outer_fragment(tr, &lo, &count);
    memcpy(mm__mbox_buf(tr->mb, b), tr->x + lo, count * sizeof(float));
    return mm__gossip_send_part(tr, b, e, more, lo, count);
}

/* d = x - s and the mix, over the round's fragment alone (s: its floats) */
static void fragment_mix(mm__trainer *tr, const float *s)
{
    mm__outer *o = tr->outer;
    uint64_t lo, count;
    mm__outer_fragment(tr, &lo, &count);
    for (uint64_t k = 0; k < count; k++)
        o->d[lo + k] = tr->x[lo + k] - s[k];
    mm__gossip_mix_part(tr, s, lo, count);
}

/* NoLoCo sends s = theta + (1 - beta / gamma) (phi - theta): the one vector
 * whose group mean gives its step (model/outer.h). */
static int noloco_send(mm__trainer *tr, int b, uint64_t e, bool more)
{
    const mm__outer *o = tr->outer;
    mm_outer_noloco_send(mm__mbox_buf(tr->mb, b), tr->x, o->o, o->P, o->cfg.lr, o->cfg.gamma);
    return mm__gossip_send_buf(tr, b, e, more);
}

static void round_end(mm__trainer *tr)
{
    mm__outer *o = tr->outer;
    uint64_t lo, n;
    mm__outer_fragment(tr, &lo, &n);
    if (inner->round) { /* all-reduce: x = y + d with y the round's average */
        const float *y = o->codec ? o->y : mm__allreduce_average(tr);
        for (size_t i = lo; i < lo + n; i++)
            o->d[i] = tr->x[i] - y[i];
    }
    /* a fragment's k-th outer step: every F rounds, out of the run's
     * ceil(rounds / F) (F = 1: the round) */
    long F = (long)o->fragments;
    o->mu = mm_outer_momentum(&o->cfg, o->step / F, (o->total + F - 1) / F);
    if (o->cfg.kind == MM_OUTER_NOLOCO) /* d: what the mix kept of x - s */
        mm_outer_noloco_step(tr->x, o->o, o->m, o->d, o->P, o->mu, o->cfg.gamma);
    else
        mm_outer_step(tr->x + lo, o->o + lo, o->m + lo, o->d + lo, n, o->cfg.lr, o->mu);
    o->step++;
}

static void fields(mm__trainer *tr, mm_metrics *m, mm__line where)
{
    if (inner->fields)
        inner->fields(tr, m, where);
    const mm__outer *o = tr->outer;
    if (where == MM__LINE_ROUND) { /* the momentum of this round's outer step */
        mm_metrics_num(m, "outer_mu", o->mu);
        if (o->fragments > 1) /* ... and the fragment it took it on */
            mm_metrics_int(m, "outer_fragment", (long long)((uint64_t)tr->round % o->fragments));
    } else if (where == MM__LINE_START) {
        char decay[48], hex[65];
        mm_outer_decay_spec(&o->cfg, decay, sizeof decay);
        digest(o, hex);
        mm_metrics_str(m, "outer", o->cfg.kind == MM_OUTER_NOLOCO ? "noloco" : "nesterov");
        if (o->cfg.kind == MM_OUTER_NOLOCO)
            mm_metrics_num(m, "noloco_gamma", o->cfg.gamma);
        mm_metrics_num(m, "outer_lr", o->cfg.lr);
        mm_metrics_num(m, "outer_momentum", o->cfg.momentum);
        mm_metrics_int(m, "outer_momentum_warmup", o->cfg.warmup);
        mm_metrics_str(m, "outer_momentum_decay", decay);
        mm_metrics_int(m, "outer_overlap", tr->cfg->outer_overlap);
        mm_metrics_int(m, "outer_fragments", o->fragments);
        mm_metrics_int(m, "outer_vectors", 3);
        mm_metrics_int(m, "outer_bytes", (long long)(3 * o->P * sizeof(float)));
        mm_metrics_int(m, "outer_step", o->step);
        mm_metrics_str(m, "outer_sha256", hex);
        if (o->codec) {
            char spec[48];
            mm_codec_format(mm_codec_get_spec(o->codec), spec, sizeof spec);
            ef_digest(o, hex);
            mm_metrics_str(m, "outer_compress", spec);
            mm_metrics_num(m, "outer_ef_decay", o->beta);
            mm_metrics_str(m, "outer_ef_sha256", hex);
        }
    }
}

const mm__algo *mm__algo_outer(const mm__algo *in, const mm_node_config *c)
{
    inner = in;
    entry = *in;
    entry.steps_first = !c->outer_overlap;
    /* gossip: keep d = x - s around the inner mix; over CHOCO's copies
     * (--compress) the buffer holds a payload, not s, and the steps run
     * first (cmd_node.c refuses --outer-overlap there): d stays 0 */
    if (!in->round && !c->compress)
        entry.mix = c->outer_fragments > 1 ? fragment_mix : mix;
    if (!in->round && c->outer_fragments > 1)
        entry.send = fragment_send;
    entry.round_end = round_end;
    entry.fields = fields;
    if (c->outer_cfg.kind == MM_OUTER_NOLOCO)
        entry.send = noloco_send;
    if (mm__outer_compressed(c)) { /* the all-gather in the ring's place */
        entry.round = gather_round;
        entry.codec = gather_codec;
    }
    return &entry;
}
