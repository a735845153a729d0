/* An in-process simulation of compressed gossip on a ring (no network),
 * shared by tests/test_choco.c and the gamma sweep (tests/tools/
 * choco_sweep.c). Every peer starts from a common model-like vector plus
 * its own deviation; a round is either CHOCO-Gossip (gossip/choco.h: error
 * feedback through the public copies, each neighbour's copy held
 * separately and checked against its owner's CRC) or the naive scheme
 * without error feedback (each peer sends Q(x_i) and mixes the decoded
 * vectors directly: x_i += gamma sum_j W_ij (Q(x_j) - x_i)). The distance
 * reported is to the initial average, which CHOCO preserves: reaching a
 * consensus somewhere else does not count. Header only. */
#ifndef MURMUR_CHOCO_SIM_H
#define MURMUR_CHOCO_SIM_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gossip/choco.h"
#include "gossip/codec.h"
#include "base/rng.h"
#include "tests/testutil.h"

typedef struct {
    /* in */
    const char *codec;   /* spec string */
    int peers;           /* ring size, 3 or more */
    uint64_t dim;        /* floats per peer */
    double gamma;
    int rounds;
    bool feedback;       /* CHOCO (true) or the naive scheme (false) */
    uint64_t seed;
    double tol;          /* rounds_to_tol: first round with err <= tol * err0 */
    bool stop_at_tol;    /* end the run there */
    /* out */
    double err0, err;    /* sqrt(1/n sum_i ||x_i - xbar_0||^2), before and after */
    double xi;           /* consensus distance at the end */
    double best;         /* smallest err / err0 seen */
    int rounds_to_tol;   /* -1: never */
    bool copies_agree;   /* every receiver's copy CRC matched its owner's, every round */
    size_t bytes;        /* payload bytes one peer sent per round */
} choco_sim;

static inline double cs_err(float *const *x, int n, uint64_t dim, const double *mean0)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        for (uint64_t p = 0; p < dim; p++) {
            double d = x[i][p] - mean0[p];
            s += d * d;
        }
    return sqrt(s / n);
}

/* 0, or -1 with err filled (a codec refused something it should not). */
static inline int choco_sim_run(choco_sim *s, char *err, size_t errlen)
{
    int n = s->peers;
    uint64_t dim = s->dim;
    mm_codec_spec spec;
    if (mm_codec_parse(s->codec, &spec, err, errlen) != 0)
        return -1;
    mm_codec *c = mm_codec_new(&spec, dim, err, errlen);
    if (!c)
        return -1;
    size_t cap = mm_codec_max_bytes(c);
    float **x = calloc((size_t)n, sizeof *x), **own = calloc((size_t)n, sizeof *own);
    float **left = calloc((size_t)n, sizeof *left), **right = calloc((size_t)n, sizeof *right);
    float **dec = calloc((size_t)n, sizeof *dec);
    uint8_t **q = calloc((size_t)n, sizeof *q);
    size_t *qlen = calloc((size_t)n, sizeof *qlen);
    uint32_t *crc = calloc((size_t)n, sizeof *crc);
    double *mean0 = calloc(dim, sizeof *mean0);
    float *base = malloc(dim * sizeof *base);
    mm_rng r;
    mm_rng_seed(&r, s->seed);
    double scale = 1;
    for (uint64_t p = 0; p < dim; p++) { /* per-"tensor" scales, as a model has */
        if (p % 256 == 0)
            scale = pow(10, -2 * mm_rng_uniform(&r));
        base[p] = (float)(scale * mm_rng_normal(&r));
    }
    for (int i = 0; i < n; i++) {
        x[i] = malloc(dim * sizeof(float));
        own[i] = calloc(dim, sizeof(float));
        left[i] = calloc(dim, sizeof(float));
        right[i] = calloc(dim, sizeof(float));
        dec[i] = malloc(dim * sizeof(float));
        q[i] = malloc(cap);
        for (uint64_t p = 0; p < dim; p++) {
            x[i][p] = base[p] + (float)(0.1 * fabs(base[p]) * mm_rng_normal(&r) +
                                        0.01 * mm_rng_normal(&r));
            mean0[p] += x[i][p] / n;
        }
    }
    s->err0 = cs_err(x, n, dim, mean0);
    s->best = 1;
    s->rounds_to_tol = -1;
    s->copies_agree = true;
    s->bytes = 0;
    int rc = 0;
    const double w = 1.0 / 3;
    for (int t = 0; t < s->rounds && rc == 0; t++) {
        for (int i = 0; i < n && rc == 0; i++) {
            uint64_t key = mm_codec_key(s->seed, (uint32_t)i, (uint64_t)t);
            mm_codec_err e = s->feedback
                ? mm_choco_encode(c, x[i], own[i], key, q[i], cap, &qlen[i], &crc[i], err, errlen)
                : mm_codec_encode(c, x[i], NULL, key, q[i], cap, &qlen[i], NULL, err, errlen);
            if (!e && !s->feedback)
                e = mm_codec_decode(c, q[i], qlen[i], dec[i], err, errlen);
            rc = e ? -1 : 0;
            s->bytes = qlen[i];
        }
        for (int i = 0; i < n && rc == 0; i++) {
            int l = (i + n - 1) % n, rt = (i + 1) % n;
            if (s->feedback) {
                uint32_t cl = 0, cr = 0;
                if (mm_choco_receive(c, q[l], qlen[l], left[i], &cl, err, errlen) ||
                    mm_choco_receive(c, q[rt], qlen[rt], right[i], &cr, err, errlen))
                    rc = -1;
                if (cl != crc[l] || cr != crc[rt])
                    s->copies_agree = false;
                mm_mix_input in[2] = {{.x = left[i], .weight = w}, {.x = right[i], .weight = w}};
                mm_choco_mix(x[i], own[i], dim, w, in, 2, s->gamma);
            }
        }
        if (!s->feedback) /* everyone mixes what the others sent this round */
            for (int i = 0; i < n && rc == 0; i++) {
                memcpy(own[i], x[i], dim * sizeof(float)); /* the exact self */
                mm_mix_input in[2] = {{.x = dec[(i + n - 1) % n], .weight = w},
                                      {.x = dec[(i + 1) % n], .weight = w}};
                mm_choco_mix(x[i], own[i], dim, w, in, 2, s->gamma);
            }
        double e = cs_err(x, n, dim, mean0) / s->err0;
        if (e < s->best)
            s->best = e;
        if (s->rounds_to_tol < 0 && e <= s->tol) {
            s->rounds_to_tol = t + 1;
            if (s->stop_at_tol)
                break;
        }
        if (!(e < 1e6)) /* diverged beyond hope: stop early */
            break;
    }
    s->err = cs_err(x, n, dim, mean0);
    s->xi = tu_xi((const float *const *)x, n, dim);
    for (int i = 0; i < n; i++)
        free(x[i]), free(own[i]), free(left[i]), free(right[i]), free(dec[i]), free(q[i]);
    free(x), free(own), free(left), free(right), free(dec), free(q), free(qlen), free(crc);
    free(mean0), free(base);
    mm_codec_free(c);
    return rc;
}

#endif
