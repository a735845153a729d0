/* Branch-free float helpers that compilers can vectorise (libm's expf and
 * tanhf are scalar calls and dominated the non-BLAS time). Internal to
 * model/. */
#ifndef MURMUR_FASTMATH_H
#define MURMUR_FASTMATH_H

#include <stdint.h>
#include <string.h>

/* exp(x) for x in [-87, 88] only (no checks), relative error about 2e-7:
 * Cephes' range reduction x = n*ln2 + r and degree-6 polynomial. */
static inline float mm_exp_core(float x)
{
    /* round to nearest by the 1.5*2^23 trick: no floorf, no SSE4.1 needed */
    float t = x * 1.44269504088896341f + 12582912.0f;
    float n = t - 12582912.0f;
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* exp(x), clamped to exp(-87) .. exp(88). */
static inline float mm_expf(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    return mm_exp_core(x);
}

/* exp(-2u) for the sigmoid in GELU, the argument clamped to [-40, 40]:
 * sigmoid is then exact to float precision anyway, and nothing downstream
 * becomes denormal. A clamp at +-88 made compilers evaluate x / (1 + e^88)
 * for every lane (then blend), and denormal results cost ~100 cycles each:
 * GELU was 25% of the step. */
static inline float mm_gelu_exp(float u)
{
    float t = -2.0f * u;
    t = t < -40.0f ? -40.0f : t;
    t = t > 40.0f ? 40.0f : t;
    return mm_exp_core(t);
}

#define MM_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define MM_GELU_A 0.044715f

/* The tanh-approximated GELU written as x * sigmoid(2u), u = sqrt(2/pi) *
 * (x + 0.044715 x^3), which equals 0.5 x (1 + tanh u) and avoids the
 * cancellation in 1 + tanh u for negative x. */
static inline float mm_gelu(float x)
{
    float u = MM_GELU_K * (x + MM_GELU_A * x * x * x);
    return x / (1.0f + mm_gelu_exp(u));
}

/* d gelu / dx */
static inline float mm_gelu_grad(float x)
{
    float u = MM_GELU_K * (x + MM_GELU_A * x * x * x);
    float s = 1.0f / (1.0f + mm_gelu_exp(u));
    float du = MM_GELU_K * (1.0f + 3.0f * MM_GELU_A * x * x);
    return s + 2.0f * x * s * (1.0f - s) * du;
}

#endif
