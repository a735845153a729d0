#include "gossip/mix.h"

#include <math.h>

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

int mm_mix_all_finite(const float *x, size_t n)
{
    /* isfinite() per element defeats vectorisation; x*0 is NaN exactly when
     * x is NaN or Inf, and NaN propagates through the sum. */
    float acc = 0.0f;
    for (size_t k = 0; k < n; k++)
        acc += x[k] * 0.0f;
    return acc == 0.0f;
}
