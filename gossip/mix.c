/* The arithmetic of averaging: blocked loops over flat float vectors, and
 * one round's update with its weight rules (gossip/mix.h). */
#include "gossip/mix.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* These loops run over the whole parameter vector several times a round.
 * Blocked accumulation in float (a block of 1024 fits the vector unit's
 * reach) with a double total keeps the distance accurate for millions of
 * terms while letting the compiler vectorise the inner loop. */
#define MIX_BLOCK 1024

double mm_mix_axpy_dist(float *restrict dst, float a, const float *restrict x, float sx,
                        const float *restrict ref, float sr, size_t n)
{
    double total = 0.0;
    for (size_t base = 0; base < n; base += MIX_BLOCK) {
        size_t end = base + MIX_BLOCK < n ? base + MIX_BLOCK : n;
        float acc = 0.0f;
        for (size_t k = base; k < end; k++) {
            float d = x[k] * sx - ref[k] * sr;
            acc += d * d;
            dst[k] += a * x[k];
        }
        total += acc;
    }
    return total;
}

double mm_mix_dist(const float *restrict x, float sx, const float *restrict ref, float sr,
                   size_t n)
{
    double total = 0.0;
    for (size_t base = 0; base < n; base += MIX_BLOCK) {
        size_t end = base + MIX_BLOCK < n ? base + MIX_BLOCK : n;
        float acc = 0.0f;
        for (size_t k = base; k < end; k++) {
            float d = x[k] * sx - ref[k] * sr;
            acc += d * d;
        }
        total += acc;
    }
    return total;
}

void mm_mix_axpy(float *restrict dst, float a, const float *restrict x, size_t n)
{
    for (size_t k = 0; k < n; k++)
        dst[k] += a * x[k];
}

void mm_mix_scale_copy(float *restrict dst, float a, const float *restrict x, size_t n)
{
    for (size_t k = 0; k < n; k++)
        dst[k] = a * x[k];
}

void mm_mix_scale_delta(float *restrict x, const float *restrict s, double c, size_t n)
{
    if (c == 1.0)
        return; /* equal work: the mix is today's, bit for bit */
    float cf = (float)c;
    for (size_t k = 0; k < n; k++)
        x[k] = s[k] + cf * (x[k] - s[k]);
}

double mm_mix_norm2(const float *x, size_t n)
{
    double total = 0.0;
    for (size_t base = 0; base < n; base += MIX_BLOCK) {
        size_t end = base + MIX_BLOCK < n ? base + MIX_BLOCK : n;
        float acc = 0.0f;
        for (size_t k = base; k < end; k++)
            acc += x[k] * x[k];
        total += acc;
    }
    return total;
}

double mm_mix_pull_norm2(const float *s, const mm_mix_input *in, int n_in, size_t n)
{
    double sum = 0;
    for (size_t e = 0; e < n; e++) {
        double p = 0;
        for (int k = 0; k < n_in; k++)
            if (in[k].x)
                p += in[k].weight * ((double)in[k].x[e] - (double)s[e]);
        sum += p * p;
    }
    return sum;
}

double mm_mix_round_clip(float *x, const float *s, size_t n, double w_old, double self_weight,
                         mm_mix_input *in, int n_in, int pushsum, double w_max, mm_clip *clip)
{
    if (!mm_clip_on(clip))
        clip = NULL;
    mm_weight_rule rule = pushsum ? MM_WEIGHT_PUSHSUM : MM_WEIGHT_ONE;
    uint32_t n_peers = w_max >= 1 && w_max < 4294967296.0 ? (uint32_t)w_max : 1;
    double self = self_weight;
    for (int k = 0; k < n_in; k++) {
        in[k].dist = NAN;
        /* A weight outside the rule could make w_new zero or negative (a
         * denominator one neighbour drives to 0 stopped honest peers) or
         * its reciprocal overflow a float: such a neighbour is missing. */
        in[k].refused = in[k].x && !mm_mix_weight_ok(rule, in[k].w, n_peers, NULL, 0);
        if (in[k].refused)
            in[k].x = NULL;
        if (!in[k].x && !pushsum)
            self += in[k].weight; /* its weight goes back to self */
    }
    float inv_old = (float)(1.0 / w_old);

    /* With a bound on the pull every distance is needed before the update,
     * since the bound changes the coefficients: clipping z_k to
     * z_t + c (z_k - z_t) moves (1 - c) of its weight onto z_t. The radius
     * may depend on this mix's distances (gossip/robust.h). */
    double w_new = self * w_old, self_extra = 0, tau = 0;
    for (int k = 0; k < n_in; k++) {
        if (!in[k].x)
            continue;
        w_new += in[k].weight * in[k].w;
        if (clip)
            in[k].dist = sqrt(mm_mix_dist(in[k].x, (float)(1.0 / in[k].w), s, inv_old, n));
    }
    if (clip) {
        double d[n_in > 0 ? n_in : 1];
        uint32_t who[n_in > 0 ? n_in : 1];
        d[0] = NAN;
        who[0] = 0;
        for (int k = 0; k < n_in; k++) {
            d[k] = in[k].dist;
            who[k] = in[k].peer;
        }
        tau = mm_clip_radius(clip, d, who, n_in);
        for (int k = 0; k < n_in; k++)
            if (in[k].x)
                self_extra += in[k].weight * (1 - mm_clip_scale(in[k].dist, tau)) * in[k].w;
    }
    if (!(w_new > 0))
        return w_old; /* W_self' = 0 and nothing accepted: keep what we have */

    double coef_self = (self * w_old + self_extra) / w_old / w_new - 1.0 / w_old;
    mm_mix_axpy(x, (float)coef_self, s, n);
    for (int k = 0; k < n_in; k++) {
        if (!in[k].x)
            continue;
        double c = in[k].weight / w_new;
        if (clip) {
            c *= mm_clip_scale(in[k].dist, tau);
            mm_mix_axpy(x, (float)c, in[k].x, n);
        } else {
            in[k].dist = sqrt(mm_mix_axpy_dist(x, (float)c, in[k].x, (float)(1.0 / in[k].w),
                                               s, inv_old, n));
        }
    }
    if (!pushsum)
        return 1.0;
    /* x holds z whatever w is: only the weight is brought back in range. */
    return w_new < MM_PUSHSUM_W_MIN ? MM_PUSHSUM_W_MIN : w_new > w_max ? w_max : w_new;
}

double mm_mix_round(float *x, const float *s, size_t n, double w_old, double self_weight,
                    mm_mix_input *in, int n_in, int pushsum, double w_max, double clip_pull)
{
    mm_clip c = mm_clip_make(clip_pull, 0);
    return mm_mix_round_clip(x, s, n, w_old, self_weight, in, n_in, pushsum, w_max, &c);
}

bool mm_mix_weight_check(void *ud, double w, char *why, size_t whylen)
{
    const mm_weight_check *c = ud;
    return mm_mix_weight_ok(c->rule, w, c->n_peers, why, whylen);
}

bool mm_mix_weight_ok(mm_weight_rule rule, double w, uint32_t n_peers, char *why, size_t whylen)
{
    bool ok;
    switch (rule) {
    case MM_WEIGHT_ONE: ok = w == 1.0; break;
    case MM_WEIGHT_PUSHSUM: ok = w >= MM_PUSHSUM_W_MIN && w <= (double)n_peers; break;
    default: ok = isfinite(w); break;
    }
    if (!ok && why) {
        if (rule == MM_WEIGHT_ONE)
            snprintf(why, whylen, "weight %.17g, but this peer runs dpsgd or async, where "
                     "the weight is exactly 1 (is the sender running --algo pushsum?)", w);
        else if (rule == MM_WEIGHT_PUSHSUM)
            snprintf(why, whylen, "push-sum weight %.17g is outside [2^-30, %u] (finite, "
                     "positive, at most the number of peers)", w, n_peers);
        else
            snprintf(why, whylen, "weight is not finite");
    }
    return ok;
}
