/* node/outer_round.h: the outer optimizer's state in a peer. */
#include "node/outer_round.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"

struct mm__outer {
    mm_outer_config cfg;
    bool overlap;
    long total;          /* outer steps in the run: one per round */
    long step;           /* outer steps taken */
    size_t P;
    float *o, *m, *d;
};

mm__outer *mm__outer_new(const mm_node_config *c, const float *x, size_t P, char *err,
                         size_t errlen)
{
    uint64_t bytes = 3 * (uint64_t)P * sizeof(float);
    uint64_t budget = (uint64_t)c->outer_memory_mb << 20;
    if (bytes > budget) {
        snprintf(err, errlen, "--outer-memory-mb %ld: the outer optimizer's state (3 vectors "
                 "of %zu floats: outer parameters, momentum, local progress) takes %.1f MB, "
                 "over the budget of %.1f MB", c->outer_memory_mb, P, (double)bytes / 1e6,
                 (double)budget / 1e6);
        return NULL;
    }
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
        return NULL;
    }
    o->cfg = c->outer_cfg;
    o->overlap = c->outer_overlap;
    o->total = c->rounds;
    o->P = P;
    memcpy(o->o, x, P * sizeof(float));
    return o;
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

bool mm__outer_overlap(const mm__outer *o) { return o->overlap; }

void mm__outer_before_mix(mm__outer *o, const float *x, const float *s)
{
    for (size_t i = 0; i < o->P; i++)
        o->d[i] = x[i] - s[i];
}

float mm__outer_next_momentum(const mm__outer *o)
{
    return mm_outer_momentum(&o->cfg, o->step, o->total);
}

void mm__outer_after_mix(mm__outer *o, float *x)
{
    mm_outer_step(x, o->o, o->m, o->d, o->P, o->cfg.lr, mm__outer_next_momentum(o));
    o->step++;
}

long mm__outer_steps(const mm__outer *o) { return o->step; }

void mm__outer_digest(const mm__outer *o, char hex[65])
{
    mm_sha256_ctx c;
    uint8_t d[MM_SHA256_LEN];
    mm_sha256_init(&c);
    mm_sha256_update(&c, o->o, o->P * sizeof(float));
    mm_sha256_update(&c, o->m, o->P * sizeof(float));
    mm_sha256_final(&c, d);
    mm_sha256_hex(d, hex);
}

size_t mm__outer_bytes(const mm__outer *o) { return 3 * o->P * sizeof(float); }

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
