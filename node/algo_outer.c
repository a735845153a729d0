/* node/algo_outer.h: the outer optimizer as a wrapper of an averaging. */
#include "node/algo_outer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "model/outer.h"
#include "node/trainer.h"

struct mm__outer {
    mm_outer_config cfg;
    long total;          /* outer steps in the run: one per round */
    long step;           /* outer steps taken */
    float mu;            /* the momentum of the last outer step */
    size_t P;
    float *o, *m, *d;
};

int mm__outer_budget(const mm_node_config *c, size_t P, char *err, size_t errlen)
{
    uint64_t bytes = 3 * (uint64_t)P * sizeof(float);
    uint64_t budget = (uint64_t)c->outer_memory_mb << 20;
    if (bytes <= budget)
        return 0;
    snprintf(err, errlen, "--outer-memory-mb %ld: the outer optimizer's state (3 vectors "
             "of %zu floats: outer parameters, momentum, local progress) takes %.1f MB, "
             "over the budget of %.1f MB", c->outer_memory_mb, P, (double)bytes / 1e6,
             (double)budget / 1e6);
    return MM_EXIT_USAGE;
}

int mm__outer_new(const mm_node_config *c, const float *x, size_t P, mm__outer **out,
                  char *err, size_t errlen)
{
    *out = NULL;
    uint64_t bytes = 3 * (uint64_t)P * sizeof(float);
    int status = mm__outer_budget(c, P, err, errlen);
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
    o->cfg = c->outer_cfg;
    o->total = c->rounds;
    o->P = P;
    memcpy(o->o, x, P * sizeof(float));
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
    free(o);
}

void mm__outer_ckpt(mm__outer *o, mm_ckpt_state *st)
{
    st->outer.x = o->o;
    st->outer.m = o->m;
    st->outer.step = o->step;
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
    return 0;
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

static void round_end(mm__trainer *tr)
{
    mm__outer *o = tr->outer;
    if (inner->round) { /* all-reduce: x = y + d with y the round's exact average */
        const float *y = mm__allreduce_average(tr);
        for (size_t i = 0; i < o->P; i++)
            o->d[i] = tr->x[i] - y[i];
    }
    o->mu = mm_outer_momentum(&o->cfg, o->step, o->total);
    mm_outer_step(tr->x, o->o, o->m, o->d, o->P, o->cfg.lr, o->mu);
    o->step++;
}

static void fields(mm__trainer *tr, mm_metrics *m, mm__line where)
{
    if (inner->fields)
        inner->fields(tr, m, where);
    const mm__outer *o = tr->outer;
    if (where == MM__LINE_ROUND) { /* the momentum of this round's outer step */
        mm_metrics_num(m, "outer_mu", o->mu);
    } else if (where == MM__LINE_START) {
        char decay[48], hex[65];
        mm_outer_decay_spec(&o->cfg, decay, sizeof decay);
        digest(o, hex);
        mm_metrics_str(m, "outer", "nesterov");
        mm_metrics_num(m, "outer_lr", o->cfg.lr);
        mm_metrics_num(m, "outer_momentum", o->cfg.momentum);
        mm_metrics_int(m, "outer_momentum_warmup", o->cfg.warmup);
        mm_metrics_str(m, "outer_momentum_decay", decay);
        mm_metrics_int(m, "outer_overlap", tr->cfg->outer_overlap);
        mm_metrics_int(m, "outer_vectors", 3);
        mm_metrics_int(m, "outer_bytes", (long long)(3 * o->P * sizeof(float)));
        mm_metrics_int(m, "outer_step", o->step);
        mm_metrics_str(m, "outer_sha256", hex);
    }
}

const mm__algo *mm__algo_outer(const mm__algo *in, const mm_node_config *c)
{
    inner = in;
    entry = *in;
    entry.steps_first = !c->outer_overlap;
    if (!in->round)
        entry.mix = mix;
    entry.round_end = round_end;
    entry.fields = fields;
    return &entry;
}
