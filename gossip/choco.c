/* CHOCO-Gossip's round as pure functions (gossip/choco.h). Encoding and
 * copy updates are the codec's (gossip/codec.c); what is here is the
 * consensus step, fused over all neighbours in one pass over x, with the
 * coefficients of mm_mix_round so that fp32 with gamma = 1 is D-PSGD bit
 * for bit. Built with -ffp-contract=off (mk/codec.mk): x += c * y must stay
 * a multiply and an add, as in gossip/mix.c. */
#include "gossip/choco.h"

#include <math.h>

#include "gossip/codec_internal.h"
#include "base/crc32c.h"

/* Floats per block of the consensus step: x's block (16 KB) stays in L1
 * while every copy streams past it once. A multiple of gossip/mix.c's
 * block, though nothing depends on that. */
#define MIX_BLOCK 4096

mm_codec_err mm_choco_encode(mm_codec *c, const float *x, float *x_hat_self, uint64_t key,
                             uint8_t *out, size_t cap, size_t *len, uint32_t *crc,
                             char *why, size_t whylen)
{
    return mm_codec_encode(c, x, x_hat_self, key, out, cap, len, crc, why, whylen);
}

mm_codec_err mm_choco_receive(const mm_codec *c, const uint8_t *q, size_t len, float *x_hat_j,
                              uint32_t *crc, char *why, size_t whylen)
{
    return mm_codec_apply_checked(c, q, len, x_hat_j, crc, why, whylen);
}

mm_codec_err mm_choco_encode_part(mm_codec *c, const float *x, float *x_hat_self, uint64_t off,
                                  uint64_t count, uint8_t *out, size_t cap, size_t *len,
                                  uint32_t *crc, char *why, size_t whylen)
{
    return mm_codec_encode_part(c, x, x_hat_self, off, count, out, cap, len, crc, why, whylen);
}

mm_codec_err mm_choco_receive_part(const mm_codec *c, uint64_t off, uint64_t count,
                                   const uint8_t *q, size_t len, float *x_hat_j, uint32_t *crc,
                                   char *why, size_t whylen)
{
    return mm_codec_apply_part_checked(c, count, q, len, x_hat_j + off, crc, why, whylen);
}

uint32_t mm_choco_crc(const float *copy, size_t n)
{
    return mm_crc32c(0, copy, n * sizeof *copy);
}

MM_CODEC_HOT static void axpy_block(float *restrict x, float a, const float *restrict y,
                                    size_t len)
{
    for (size_t i = 0; i < len; i++)
        x[i] += a * y[i];
}

/* x += a * y, and returns sum (y - s)^2 (16 lanes, then double). */
MM_CODEC_HOT static double axpy_dist_block(float *restrict x, float a, const float *restrict y,
                                           const float *restrict s, size_t len)
{
    float acc[16] = {0};
    size_t i = 0;
    for (; i + 16 <= len; i += 16)
        for (int l = 0; l < 16; l++) {
            float d = y[i + l] - s[i + l];
            acc[l] += d * d;
            x[i + l] += a * y[i + l];
        }
    for (; i < len; i++) {
        float d = y[i] - s[i];
        acc[0] += d * d;
        x[i] += a * y[i];
    }
    double total = 0;
    for (int l = 0; l < 16; l++)
        total += acc[l];
    return total;
}

/* The consensus step with each present copy's pull scaled by clip[k] in
 * [0, 1] (NULL: 1 each, and the distances measured in the same pass). A
 * pull scaled by c moves (1 - c) of its weight onto x_hat_self. */
static int choco_mix(float *x, const float *x_hat_self, size_t n, double self_weight,
                     mm_mix_input *in, int n_in, double gamma, const double *clip)
{
    if (!(gamma > 0 && gamma <= 1))
        return -1;
    /* W' = (1 - gamma) I + gamma W, then mm_mix_round's arithmetic with
     * w = 1 everywhere: with gamma = 1 every double below is computed by
     * the same operations in the same order as there. */
    double self = self_weight;
    if (gamma != 1.0)
        for (int k = 0; k < n_in; k++)
            self += (1.0 - gamma) * in[k].weight;
    for (int k = 0; k < n_in; k++) {
        if (!clip)
            in[k].dist = NAN;
        if (!in[k].x)
            self += gamma * in[k].weight; /* a missing copy's weight goes back to self */
    }
    double w_new = self * 1.0, self_extra = 0;
    for (int k = 0; k < n_in; k++)
        if (in[k].x) {
            w_new += gamma * in[k].weight * 1.0;
            if (clip)
                self_extra += gamma * in[k].weight * (1 - clip[k]);
        }
    if (!(w_new > 1e-30))
        return 0; /* nothing to mix with */
    float coef_self = (float)((self * 1.0 + self_extra) / 1.0 / w_new - 1.0 / 1.0);
    for (int k = 0; k < n_in; k++)
        if (in[k].x && !clip)
            in[k].dist = 0;
    for (size_t base = 0; base < n; base += MIX_BLOCK) {
        size_t len = n - base < MIX_BLOCK ? n - base : MIX_BLOCK;
        axpy_block(x + base, coef_self, x_hat_self + base, len);
        for (int k = 0; k < n_in; k++) {
            if (!in[k].x)
                continue;
            float a = (float)(gamma * in[k].weight / w_new * (clip ? clip[k] : 1.0));
            if (clip)
                axpy_block(x + base, a, in[k].x + base, len);
            else
                in[k].dist += axpy_dist_block(x + base, a, in[k].x + base, x_hat_self + base,
                                              len);
        }
    }
    for (int k = 0; k < n_in; k++)
        if (in[k].x && !clip)
            in[k].dist = sqrt(in[k].dist);
    return 0;
}

int mm_choco_mix(float *x, const float *x_hat_self, size_t n, double self_weight,
                 mm_mix_input *in, int n_in, double gamma)
{
    return choco_mix(x, x_hat_self, n, self_weight, in, n_in, gamma, NULL);
}

int mm_choco_mix_clip(float *x, const float *x_hat_self, size_t n, double self_weight,
                      mm_mix_input *in, int n_in, double gamma, mm_clip *clip)
{
    if (!mm_clip_on(clip))
        return choco_mix(x, x_hat_self, n, self_weight, in, n_in, gamma, NULL);
    double d[n_in > 0 ? n_in : 1], scale[n_in > 0 ? n_in : 1];
    uint32_t who[n_in > 0 ? n_in : 1];
    d[0] = NAN;
    who[0] = 0;
    for (int k = 0; k < n_in; k++) {
        d[k] = in[k].dist = in[k].x ? sqrt(mm_mix_dist(in[k].x, 1.0f, x_hat_self, 1.0f, n)) : NAN;
        who[k] = in[k].peer;
    }
    double tau = mm_clip_radius(clip, d, who, n_in);
    for (int k = 0; k < n_in; k++)
        scale[k] = in[k].x ? mm_clip_scale(d[k], tau) : 1.0;
    return choco_mix(x, x_hat_self, n, self_weight, in, n_in, gamma, scale);
}

double mm_choco_default_gamma(const mm_codec_spec *spec)
{
    /* docs/compression.md, "Consensus against gamma": about half the
     * smallest gamma that diverged on rings of 8, 16 and 32 */
    switch (spec->kind) {
    case MM_CODEC_FP32:
    case MM_CODEC_BF16:
    case MM_CODEC_INT8:
        return 1.0;
    case MM_CODEC_SIGN:
        return spec->block <= 32 ? 1.0 : spec->block <= 64 ? 0.3 : 0.1;
    case MM_CODEC_TOPK:
        return spec->frac >= 0.5 ? 1.0 : 2 * spec->frac;
    case MM_CODEC_RANDK:
        return spec->frac;
    }
    return 1.0;
}

uint64_t mm_choco_state_bytes(const mm_codec *c, int in_degree)
{
    uint64_t deg = in_degree > 0 ? (uint64_t)in_degree : 0;
    return (1 + deg) * mm_codec_n(c) * sizeof(float) +
           (1 + deg) * (uint64_t)mm_codec_max_bytes(c) + mm_codec_workspace_bytes(c);
}
