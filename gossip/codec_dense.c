/* The dense codecs: fp32, bf16, int8 (blockwise) and sign (1 bit + a
 * block scale). Every coordinate is sent, so encoding and decoding are one
 * pass over memory in chunks of MM_CODEC_CHUNK floats: a chunk is encoded
 * (or decoded), the sender's ref (or the receiver's copy) updated, and its
 * CRC32C taken while it is still in L1.
 *
 * What a decoded value is, is fixed by docs/protocol.md and must not
 * depend on the compiler: int8 is (float)code * scale in binary32, sign is
 * +-scale, bf16 is the upper half of a binary32; a copy update is one
 * binary32 addition. How the encoder chooses codes (the rounding below) is
 * ours and may change without breaking a peer. */
#include "base/finite.h"
#include "gossip/codec_internal.h"

#include <float.h>
#include <math.h>

#include "base/crc32c.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define ABS_MASK 0x7fffffffU
#define MAX_FINITE 0x7f7fffffU /* |x| bits above this: NaN or Inf */

/* ---- fp32 --------------------------------------------------------------- */

/* A count of non-finite words among len little-endian binary32 values at
 * p (any alignment): the or of "exponent all ones". */
MM_CODEC_HOT static uint32_t any_nonfinite32(const uint8_t *restrict p, size_t len)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < len; i++) {
        uint32_t u;
        memcpy(&u, p + 4 * i, 4);
        bad |= (u & ABS_MASK) > MAX_FINITE;
    }
    return bad;
}

static size_t first_nonfinite32(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        uint32_t u;
        memcpy(&u, p + 4 * i, 4);
        if ((u & ABS_MASK) > MAX_FINITE)
            return i;
    }
    return len;
}

/* ---- bf16 --------------------------------------------------------------- */

/* binary32 bits -> bfloat16, round to nearest even; a finite value that
 * would round to infinity saturates to the largest finite bf16 (0x7f7f),
 * so a finite vector stays finite. */
static inline uint32_t bf16_round(uint32_t u)
{
    uint32_t b = (u + 0x7fffU + ((u >> 16) & 1U)) >> 16;
    return b - ((b & 0x7fffU) == 0x7f80U);
}

MM_CODEC_HOT static uint32_t bf16_enc(const float *restrict x, float *restrict r,
                                      uint8_t *restrict out, size_t len)
{
    uint32_t bad = 0;
    if (r) {
        for (size_t i = 0; i < len; i++) {
            uint32_t u = mm_f2u(x[i] - r[i]);
            bad |= (u & ABS_MASK) > MAX_FINITE;
            uint16_t b = (uint16_t)bf16_round(u);
            memcpy(out + 2 * i, &b, 2);
            float v = r[i] + mm_u2f((uint32_t)b << 16);
            bad |= (mm_f2u(v) & ABS_MASK) > MAX_FINITE;
            r[i] = v;
        }
    } else {
        for (size_t i = 0; i < len; i++) {
            uint32_t u = mm_f2u(x[i]);
            bad |= (u & ABS_MASK) > MAX_FINITE;
            uint16_t b = (uint16_t)bf16_round(u);
            memcpy(out + 2 * i, &b, 2);
        }
    }
    return bad;
}

MM_CODEC_HOT static uint32_t bf16_bad(const uint8_t *restrict p, size_t len)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < len; i++) {
        uint16_t b;
        memcpy(&b, p + 2 * i, 2);
        bad |= (b & 0x7f80U) == 0x7f80U;
    }
    return bad;
}

MM_CODEC_HOT static uint32_t bf16_dec(const uint8_t *restrict p, float *restrict dst, size_t len,
                                      int apply)
{
    uint32_t bad = 0;
    if (apply) {
        for (size_t i = 0; i < len; i++) {
            uint16_t b;
            memcpy(&b, p + 2 * i, 2);
            float v = dst[i] + mm_u2f((uint32_t)b << 16);
            bad |= (mm_f2u(v) & ABS_MASK) > MAX_FINITE;
            dst[i] = v;
        }
    } else {
        for (size_t i = 0; i < len; i++) {
            uint16_t b;
            memcpy(&b, p + 2 * i, 2);
            dst[i] = mm_u2f((uint32_t)b << 16);
        }
    }
    return bad;
}

/* ---- int8 --------------------------------------------------------------- */

/* The largest |d| of a block, as bits (an integer max vectorises where a
 * float max with NaN rules would not); above MAX_FINITE: a NaN or Inf. */
MM_CODEC_HOT static uint32_t maxabs_bits(const float *restrict x, const float *restrict r,
                                         size_t len)
{
    uint32_t m = 0;
    if (r) {
        for (size_t i = 0; i < len; i++) {
            uint32_t u = mm_f2u(x[i] - r[i]) & ABS_MASK;
            m = u > m ? u : m;
        }
    } else {
        for (size_t i = 0; i < len; i++) {
            uint32_t u = mm_f2u(x[i]) & ABS_MASK;
            m = u > m ? u : m;
        }
    }
    return m;
}

/* Codes round(d * inv) to nearest even (adding and subtracting 1.5 * 2^23
 * does it for |t| < 2^22), clamped to +-127; ref += code * scale. Returns
 * non-zero when an updated ref value overflowed. */
MM_CODEC_HOT static uint32_t int8_enc(const float *restrict x, float *restrict r, size_t len,
                                      float inv, float scale, int8_t *restrict q)
{
    const float magic = 0x1.8p23f;
    uint32_t bad = 0;
    if (r) {
        for (size_t i = 0; i < len; i++) {
            float t = (x[i] - r[i]) * inv;
            int c = (int)((t + magic) - magic);
            c = c > 127 ? 127 : c;
            c = c < -127 ? -127 : c;
            q[i] = (int8_t)c;
            float v = r[i] + (float)c * scale;
            bad |= (mm_f2u(v) & ABS_MASK) > MAX_FINITE;
            r[i] = v;
        }
    } else {
        for (size_t i = 0; i < len; i++) {
            int c = (int)((x[i] * inv + magic) - magic);
            c = c > 127 ? 127 : c;
            c = c < -127 ? -127 : c;
            q[i] = (int8_t)c;
        }
    }
    return bad;
}

MM_CODEC_HOT static uint32_t int8_dec(const int8_t *restrict q, float scale, float *restrict dst,
                                      size_t len, int apply)
{
    uint32_t bad = 0;
    if (apply) {
        for (size_t i = 0; i < len; i++) {
            float v = dst[i] + (float)q[i] * scale;
            bad |= (mm_f2u(v) & ABS_MASK) > MAX_FINITE;
            dst[i] = v;
        }
    } else {
        for (size_t i = 0; i < len; i++)
            dst[i] = (float)q[i] * scale;
    }
    return bad;
}

/* A code -128 among len codes: libc's memchr (vectorised; a byte loop
 * with a wider accumulator vectorised at a quarter of its speed). */
static uint32_t has_minus128(const uint8_t *q, size_t len)
{
    return len && memchr(q, 0x80, len) != NULL;
}

/* ---- int8 with AVX-512 ---------------------------------------------------
 *
 * The CHOCO kernels (encode with ref, apply) by hand for AVX-512 CPUs, 16
 * floats a step, chosen at run time: the same binary32 operations in the
 * same order as the portable loops above (x - r, * inv, + and - magic,
 * truncation, clamp; r + code * scale, no fused multiply-add), so every
 * code and every updated float is bit for bit theirs (tests/test_codec.c
 * compares the two). The compiler's own AVX2 clone of those loops spent
 * about 2 cycles a float (narrowing to int8 with packs and permutes,
 * spills, the overflow test as compares and blends); here the narrowing is
 * one vpmovsdb and the test one compare into a mask. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(MM_NO_CLONES)
#define INT8_AVX512 1
#include <immintrin.h>
#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

static int int8_avx512_state; /* 0 unknown, 1 yes, 2 no */

static bool int8_avx512(void)
{
    int s = __atomic_load_n(&int8_avx512_state, __ATOMIC_RELAXED);
    if (!s) {
        __builtin_cpu_init();
        s = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vl") ? 1 : 2;
        __atomic_store_n(&int8_avx512_state, s, __ATOMIC_RELAXED);
    }
    return s == 1;
}

void mm_codec_use_portable(bool on)
{
    __atomic_store_n(&int8_avx512_state, on ? 2 : 0, __ATOMIC_RELAXED);
}

AVX512_TARGET static inline __mmask16 tail_mask(size_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1U << left) - 1);
}

/* maxabs_bits with ref */
AVX512_TARGET static uint32_t maxabs_bits512(const float *restrict x, const float *restrict r,
                                             size_t len)
{
    const __m512i abs = _mm512_set1_epi32((int)ABS_MASK);
    __m512i m[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
    size_t i = 0;
    for (; i + 64 <= len; i += 64)
        for (int j = 0; j < 4; j++) {
            __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16 * j),
                                     _mm512_loadu_ps(r + i + 16 * j));
            m[j] = _mm512_max_epu32(m[j], _mm512_and_si512(_mm512_castps_si512(d), abs));
        }
    for (; i < len; i += 16) {
        __mmask16 k = tail_mask(len - i);
        __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, r + i));
        m[0] = _mm512_max_epu32(m[0], _mm512_and_si512(_mm512_castps_si512(d), abs));
    }
    __m512i a = _mm512_max_epu32(_mm512_max_epu32(m[0], m[1]), _mm512_max_epu32(m[2], m[3]));
    return (uint32_t)_mm512_reduce_max_epu32(a);
}

/* int8_enc with ref; nonzero when an updated ref value overflowed. One
 * step of 16 floats, masked (k) at the end of a block. */
#define INT8_ENC_STEP(i, k)                                                                 \
    do {                                                                                    \
        __m512 rv = _mm512_maskz_loadu_ps(k, r + (i));                                      \
        __m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + (i)), rv), vinv); \
        __m512 u = _mm512_sub_ps(_mm512_add_ps(t, magic), magic);                           \
        __m512i c = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvttps_epi32(u), hi), lo);     \
        _mm512_mask_cvtepi32_storeu_epi8(q + (i), k, c);                                    \
        __m512 v = _mm512_add_ps(rv, _mm512_mul_ps(_mm512_cvtepi32_ps(c), vscale));         \
        bad = _mm512_or_si512(bad, _mm512_maskz_mov_epi32(                                  \
                                       _mm512_mask_cmpgt_epu32_mask(                        \
                                           k, _mm512_and_si512(_mm512_castps_si512(v), abs), \
                                           fin),                                            \
                                       hi));                                                \
        _mm512_mask_storeu_ps(r + (i), k, v);                                               \
    } while (0)

AVX512_TARGET static uint32_t int8_enc512(const float *restrict x, float *restrict r, size_t len,
                                          float inv, float scale, int8_t *restrict q)
{
    const __m512 vinv = _mm512_set1_ps(inv), vscale = _mm512_set1_ps(scale);
    const __m512 magic = _mm512_set1_ps(0x1.8p23f);
    const __m512i hi = _mm512_set1_epi32(127), lo = _mm512_set1_epi32(-127);
    const __m512i abs = _mm512_set1_epi32((int)ABS_MASK), fin = _mm512_set1_epi32((int)MAX_FINITE);
    const __mmask16 all = 0xffff;
    __m512i bad = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 64 <= len; i += 64) {
        INT8_ENC_STEP(i, all);
        INT8_ENC_STEP(i + 16, all);
        INT8_ENC_STEP(i + 32, all);
        INT8_ENC_STEP(i + 48, all);
    }
    for (; i < len; i += 16)
        INT8_ENC_STEP(i, tail_mask(len - i));
    return _mm512_test_epi32_mask(bad, bad);
}
#undef INT8_ENC_STEP

/* int8_dec: dst = code * scale, or (apply) dst += code * scale */
AVX512_TARGET static uint32_t int8_dec512(const int8_t *restrict q, float scale,
                                          float *restrict dst, size_t len, int apply)
{
    const __m512 vscale = _mm512_set1_ps(scale);
    const __m512i abs = _mm512_set1_epi32((int)ABS_MASK), fin = _mm512_set1_epi32((int)MAX_FINITE);
    __mmask16 bad = 0;
    for (size_t i = 0; i < len; i += 16) {
        __mmask16 k = tail_mask(len - i);
        __m512i c = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, q + i));
        __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(c), vscale);
        if (apply) {
            v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, dst + i), v);
            bad |= _mm512_mask_cmpgt_epu32_mask(k, _mm512_and_si512(_mm512_castps_si512(v), abs),
                                                fin);
        }
        _mm512_mask_storeu_ps(dst + i, k, v);
    }
    return bad;
}
#else
#define INT8_AVX512 0
void mm_codec_use_portable(bool on) { (void)on; }
#endif

/* ---- sign --------------------------------------------------------------- */

/* Sum of |d| over a block. Inline (blocks can be as small as 8 floats, so
 * a call through the clone dispatcher per block would cost more than the
 * block), SSE2 in eight lanes; the order of the sum is the encoder's
 * business, the receiver uses the scale it is sent. */
static inline float sumabs(const float *restrict x, const float *restrict r, size_t len)
{
    size_t i = 0;
    float s = 0;
#if defined(__SSE2__)
    __m128 a0 = _mm_setzero_ps(), a1 = _mm_setzero_ps(),
           am = _mm_castsi128_ps(_mm_set1_epi32((int)ABS_MASK));
    for (; i + 8 <= len; i += 8) {
        __m128 u = _mm_loadu_ps(x + i), v = _mm_loadu_ps(x + i + 4);
        if (r) {
            u = _mm_sub_ps(u, _mm_loadu_ps(r + i));
            v = _mm_sub_ps(v, _mm_loadu_ps(r + i + 4));
        }
        a0 = _mm_add_ps(a0, _mm_and_ps(u, am));
        a1 = _mm_add_ps(a1, _mm_and_ps(v, am));
    }
    float l[4];
    _mm_storeu_ps(l, _mm_add_ps(a0, a1));
    s = (l[0] + l[1]) + (l[2] + l[3]);
#endif
    for (; i < len; i++)
        s += fabsf(r ? x[i] - r[i] : x[i]);
    return s;
}

/* Sign bits of d, coordinate j of the block in bit j % 8 of byte j / 8
 * (LSB first); ref += (bit ? -scale : scale). len a multiple of 8 but for
 * a vector's last block, whose last byte keeps its unused bits 0. */
static inline uint32_t sign_enc(const float *restrict x, float *restrict r, size_t len,
                                float scale, uint8_t *restrict bits)
{
    size_t i = 0;
    uint32_t bad = 0, su = mm_f2u(scale);
#if defined(__SSE2__)
    __m128 vs = _mm_set1_ps(scale), sgn = _mm_set1_ps(-0.0f);
    __m128i lim = _mm_set1_epi32((int)MAX_FINITE), acc = _mm_setzero_si128(),
            absm = _mm_set1_epi32((int)ABS_MASK);
    for (; i + 8 <= len; i += 8) {
        __m128 a = _mm_loadu_ps(x + i), b = _mm_loadu_ps(x + i + 4);
        if (r) {
            __m128 ra = _mm_loadu_ps(r + i), rb = _mm_loadu_ps(r + i + 4);
            a = _mm_sub_ps(a, ra);
            b = _mm_sub_ps(b, rb);
            __m128 va = _mm_add_ps(ra, _mm_or_ps(vs, _mm_and_ps(a, sgn)));
            __m128 vb = _mm_add_ps(rb, _mm_or_ps(vs, _mm_and_ps(b, sgn)));
            acc = _mm_or_si128(acc, _mm_cmpgt_epi32(_mm_and_si128(_mm_castps_si128(va), absm), lim));
            acc = _mm_or_si128(acc, _mm_cmpgt_epi32(_mm_and_si128(_mm_castps_si128(vb), absm), lim));
            _mm_storeu_ps(r + i, va);
            _mm_storeu_ps(r + i + 4, vb);
        }
        bits[i / 8] = (uint8_t)(_mm_movemask_ps(a) | _mm_movemask_ps(b) << 4);
    }
    bad = (uint32_t)_mm_movemask_epi8(acc);
#endif
    for (; i < len; i += 8) {
        unsigned byte = 0;
        for (size_t j = i; j < i + 8 && j < len; j++) {
            uint32_t neg = mm_f2u(r ? x[j] - r[j] : x[j]) >> 31;
            byte |= neg << (j - i);
            if (r) {
                float v = r[j] + mm_u2f(su | neg << 31);
                bad |= (mm_f2u(v) & ABS_MASK) > MAX_FINITE;
                r[j] = v;
            }
        }
        bits[i / 8] = (uint8_t)byte;
    }
    return bad;
}

static inline uint32_t sign_dec(const uint8_t *restrict bits, float scale, float *restrict dst,
                                size_t len, int apply)
{
    size_t i = 0;
    uint32_t bad = 0, su = mm_f2u(scale);
#if defined(__SSE2__)
    __m128i vs = _mm_set1_epi32((int)su), lo = _mm_set_epi32(8, 4, 2, 1),
            hi = _mm_set_epi32(128, 64, 32, 16), sbit = _mm_set1_epi32((int)0x80000000U),
            lim = _mm_set1_epi32((int)MAX_FINITE), acc = _mm_setzero_si128(),
            absm = _mm_set1_epi32((int)ABS_MASK);
    for (; i + 8 <= len; i += 8) {
        __m128i b = _mm_set1_epi32(bits[i / 8]);
        /* lane j: all ones when bit j is set, then its sign bit alone */
        __m128i ma = _mm_and_si128(_mm_cmpeq_epi32(_mm_and_si128(b, lo), lo), sbit);
        __m128i mb = _mm_and_si128(_mm_cmpeq_epi32(_mm_and_si128(b, hi), hi), sbit);
        __m128 va = _mm_castsi128_ps(_mm_or_si128(vs, ma));
        __m128 vb = _mm_castsi128_ps(_mm_or_si128(vs, mb));
        if (apply) {
            va = _mm_add_ps(_mm_loadu_ps(dst + i), va);
            vb = _mm_add_ps(_mm_loadu_ps(dst + i + 4), vb);
            acc = _mm_or_si128(acc, _mm_cmpgt_epi32(_mm_and_si128(_mm_castps_si128(va), absm), lim));
            acc = _mm_or_si128(acc, _mm_cmpgt_epi32(_mm_and_si128(_mm_castps_si128(vb), absm), lim));
        }
        _mm_storeu_ps(dst + i, va);
        _mm_storeu_ps(dst + i + 4, vb);
    }
    bad = (uint32_t)_mm_movemask_epi8(acc);
#endif
    for (; i < len; i++) {
        float v = mm_u2f(su | (uint32_t)((bits[i / 8] >> (i % 8)) & 1U) << 31);
        if (apply) {
            v = dst[i] + v;
            bad |= (mm_f2u(v) & ABS_MASK) > MAX_FINITE;
        }
        dst[i] = v;
    }
    return bad;
}

/* ---- the passes ----------------------------------------------------------- */

/* Blocks per chunk: as many as fill MM_CODEC_CHUNK floats, at least one. */
static uint64_t blocks_per_chunk(const mm_codec *c)
{
    uint64_t b = MM_CODEC_CHUNK / c->spec.block;
    return b ? b : 1;
}

static mm_codec_err bad_input(char *why, size_t whylen, const float *x, const float *ref,
                              uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        float d = ref ? x[i] - ref[i] : x[i];
        if (!isfinite(d))
            return mm_codec_fail(why, whylen, MM_CODEC_E_INPUT, "%s %llu is %s",
                                 ref ? "x - ref at" : "x at", (unsigned long long)i,
                                 isfinite(x[i]) ? "infinite (magnitudes too large)"
                                                : "NaN or infinite");
    }
    return mm_codec_fail(why, whylen, MM_CODEC_E_INPUT, "magnitudes too large to encode "
                         "near index %llu", (unsigned long long)from);
}

static mm_codec_err overflow(char *why, size_t whylen, uint64_t at)
{
    return mm_codec_fail(why, whylen, MM_CODEC_E_OVERFLOW, "copy value near index %llu became "
                         "infinite", (unsigned long long)at);
}

/* A kernel saw a non-finite value: in the input (x - ref), or else in an
 * updated ref. */
static mm_codec_err enc_fault(char *why, size_t whylen, const float *x, const float *ref,
                              uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++)
        if (!isfinite(ref ? x[i] - ref[i] : x[i]))
            return bad_input(why, whylen, x, ref, i, i + 1);
    return overflow(why, whylen, from);
}

static mm_codec_err blocked_encode(mm_codec *c, const float *x, float *ref, uint8_t *out,
                                   uint32_t *crc, char *why, size_t whylen)
{
    uint64_t n = c->n, B = c->spec.block, per = blocks_per_chunk(c);
    uint8_t *scales = out, *codes = out + 4 * c->nb;
    bool is_int8 = c->spec.kind == MM_CODEC_INT8;
#if INT8_AVX512
    bool fast = is_int8 && int8_avx512();
#endif
    uint32_t h = 0;
    for (uint64_t b0 = 0; b0 < c->nb; b0 += per) {
        uint64_t start = b0 * B, end = (b0 + per) * B < n ? (b0 + per) * B : n;
        for (uint64_t b = b0; b < b0 + per && b * B < n; b++) {
            uint64_t lo = b * B, len = lo + B < n ? B : n - lo;
            const float *xb = x + lo;
            float *rb = ref ? ref + lo : NULL;
            float scale;
            uint32_t bad;
            if (is_int8) {
#if INT8_AVX512
                uint32_t m = rb && fast ? maxabs_bits512(xb, rb, len) : maxabs_bits(xb, rb, len);
#else
                uint32_t m = maxabs_bits(xb, rb, len);
#endif
                if (m > MAX_FINITE)
                    return bad_input(why, whylen, x, ref, lo, lo + len);
                float mx = mm_u2f(m), inv = 127.0f / mx;
                scale = mx / 127.0f;
                if (scale > MM_CODEC_INT8_SCALE_MAX)
                    return bad_input(why, whylen, x, ref, lo, lo + len);
                if (!(inv <= FLT_MAX)) /* 0, or so small that 127/max overflows */
                    inv = scale = 0;
#if INT8_AVX512
                if (rb && fast)
                    bad = int8_enc512(xb, rb, len, inv, scale, (int8_t *)(codes + lo));
                else
#endif
                    bad = int8_enc(xb, rb, len, inv, scale, (int8_t *)(codes + lo));
            } else {
                scale = sumabs(xb, rb, len) / (float)len;
                if (!(scale <= FLT_MAX)) { /* the float sum overflowed, or a NaN/Inf */
                    double sum = 0;
                    for (uint64_t i = 0; i < len; i++)
                        sum += fabs((double)xb[i] - (rb ? (double)rb[i] : 0.0));
                    scale = (float)(sum / (double)len);
                    if (!(scale <= FLT_MAX))
                        return bad_input(why, whylen, x, ref, lo, lo + len);
                }
                bad = sign_enc(xb, rb, len, scale, codes + lo / 8);
            }
            mm_stf(scales + 4 * b, scale);
            if (bad)
                return overflow(why, whylen, lo);
        }
        if (ref && crc)
            h = mm_crc32c(h, ref + start, (end - start) * sizeof(float));
    }
    if (crc)
        *crc = h;
    return MM_CODEC_OK;
}

mm_codec_err mm__codec_dense_encode(mm_codec *c, const float *x, float *ref, uint8_t *out,
                                   size_t *len, uint32_t *crc, char *why, size_t whylen)
{
    uint64_t n = c->n;
    uint32_t h = 0;
    switch (c->spec.kind) {
    case MM_CODEC_FP32: {
        uint64_t bad;
        if (!mm_all_finite(x, n, &bad))
            return bad_input(why, whylen, x, NULL, bad, bad + 1);
        for (uint64_t i = 0; i < n; i += MM_CODEC_CHUNK) {
            uint64_t m = n - i < MM_CODEC_CHUNK ? n - i : MM_CODEC_CHUNK;
            memcpy(out + 4 * i, x + i, m * sizeof(float));
            if (ref) {
                memcpy(ref + i, x + i, m * sizeof(float));
                if (crc)
                    h = mm_crc32c(h, ref + i, m * sizeof(float));
            }
        }
        break;
    }
    case MM_CODEC_BF16:
        for (uint64_t i = 0; i < n; i += MM_CODEC_CHUNK) {
            uint64_t m = n - i < MM_CODEC_CHUNK ? n - i : MM_CODEC_CHUNK;
            if (bf16_enc(x + i, ref ? ref + i : NULL, out + 2 * i, m))
                return enc_fault(why, whylen, x, ref, i, i + m);
            if (ref && crc)
                h = mm_crc32c(h, ref + i, m * sizeof(float));
        }
        break;
    case MM_CODEC_INT8:
    case MM_CODEC_SIGN: {
        mm_codec_err e = blocked_encode(c, x, ref, out, crc, why, whylen);
        if (e)
            return e;
        *len = c->max_bytes;
        return MM_CODEC_OK;
    }
    default:
        return mm_codec_fail(why, whylen, MM_CODEC_E_INPUT, "not a dense codec");
    }
    if (crc)
        *crc = h;
    *len = c->max_bytes;
    return MM_CODEC_OK;
}

/* Scales: finite, sign bit clear (no -0), and for int8 at most 2^120. */
static mm_codec_err check_scales(const mm_codec *c, const uint8_t *p, char *why, size_t whylen)
{
    float max = c->spec.kind == MM_CODEC_INT8 ? MM_CODEC_INT8_SCALE_MAX : FLT_MAX;
    for (uint64_t b = 0; b < c->nb; b++) {
        float s = mm_ldf(p + 4 * b);
        if (!(s >= 0 && s <= max) || (mm_f2u(s) >> 31))
            return mm_codec_fail(why, whylen, MM_CODEC_E_SCALE, "scale of block %llu of %llu "
                                 "is %g (must be finite, >= 0%s)", (unsigned long long)b,
                                 (unsigned long long)c->nb, (double)s,
                                 c->spec.kind == MM_CODEC_INT8 ? " and <= 2^120" : "");
    }
    return MM_CODEC_OK;
}

mm_codec_err mm__codec_dense_check(const mm_codec *c, const uint8_t *p, size_t len,
                                  char *why, size_t whylen)
{
    uint64_t n = c->n;
    switch (c->spec.kind) {
    case MM_CODEC_FP32:
        if (any_nonfinite32(p, n))
            return mm_codec_fail(why, whylen, MM_CODEC_E_VALUE, "value %llu of %llu is NaN or "
                                 "infinite", (unsigned long long)first_nonfinite32(p, n),
                                 (unsigned long long)n);
        return MM_CODEC_OK;
    case MM_CODEC_BF16:
        if (bf16_bad(p, n)) {
            uint64_t i = 0;
            for (; i < n; i++) {
                uint16_t b;
                memcpy(&b, p + 2 * i, 2);
                if ((b & 0x7f80U) == 0x7f80U)
                    break;
            }
            return mm_codec_fail(why, whylen, MM_CODEC_E_VALUE, "bf16 value %llu of %llu is "
                                 "NaN or infinite", (unsigned long long)i, (unsigned long long)n);
        }
        return MM_CODEC_OK;
    case MM_CODEC_INT8: {
        mm_codec_err e = check_scales(c, p, why, whylen);
        if (e)
            return e;
        const uint8_t *q = p + 4 * c->nb;
        if (has_minus128(q, n)) {
            uint64_t i = 0;
            while (q[i] != 0x80)
                i++;
            return mm_codec_fail(why, whylen, MM_CODEC_E_VALUE, "int8 code %llu of %llu is "
                                 "-128 (codes are -127..127)", (unsigned long long)i,
                                 (unsigned long long)n);
        }
        return MM_CODEC_OK;
    }
    case MM_CODEC_SIGN: {
        mm_codec_err e = check_scales(c, p, why, whylen);
        if (e)
            return e;
        unsigned used = (unsigned)(n % 8);
        if (used && (p[len - 1] >> used))
            return mm_codec_fail(why, whylen, MM_CODEC_E_PADDING, "the %u unused bits of the "
                                 "last sign byte are 0x%02x, not 0", 8 - used,
                                 (unsigned)(p[len - 1] >> used));
        return MM_CODEC_OK;
    }
    default:
        return mm_codec_fail(why, whylen, MM_CODEC_E_INPUT, "not a dense codec");
    }
}

mm_codec_err mm__codec_dense_decode(const mm_codec *c, const uint8_t *p, float *dst, int apply,
                                   uint32_t *crc, char *why, size_t whylen)
{
    uint64_t n = c->n;
    uint32_t h = 0;
    bool want_crc = apply && crc;
    if (c->spec.kind == MM_CODEC_FP32 || c->spec.kind == MM_CODEC_BF16) {
        for (uint64_t i = 0; i < n; i += MM_CODEC_CHUNK) {
            uint64_t m = n - i < MM_CODEC_CHUNK ? n - i : MM_CODEC_CHUNK;
            if (c->spec.kind == MM_CODEC_FP32)
                memcpy(dst + i, p + 4 * i, m * sizeof(float)); /* checked finite */
            else if (bf16_dec(p + 2 * i, dst + i, m, apply))
                return overflow(why, whylen, i);
            if (want_crc)
                h = mm_crc32c(h, dst + i, m * sizeof(float));
        }
    } else {
        uint64_t B = c->spec.block, per = blocks_per_chunk(c);
        const uint8_t *codes = p + 4 * c->nb;
#if INT8_AVX512
        bool fast = c->spec.kind == MM_CODEC_INT8 && int8_avx512();
#endif
        for (uint64_t b0 = 0; b0 < c->nb; b0 += per) {
            uint64_t start = b0 * B, end = (b0 + per) * B < n ? (b0 + per) * B : n;
            for (uint64_t b = b0; b < b0 + per && b * B < n; b++) {
                uint64_t lo = b * B, len = lo + B < n ? B : n - lo;
                float scale = mm_ldf(p + 4 * b);
                uint32_t bad;
#if INT8_AVX512
                if (fast)
                    bad = int8_dec512((const int8_t *)(codes + lo), scale, dst + lo, len, apply);
                else
#endif
                    bad = c->spec.kind == MM_CODEC_INT8
                              ? int8_dec((const int8_t *)(codes + lo), scale, dst + lo, len, apply)
                              : sign_dec(codes + lo / 8, scale, dst + lo, len, apply);
                if (bad)
                    return overflow(why, whylen, lo);
            }
            if (want_crc)
                h = mm_crc32c(h, dst + start, (end - start) * sizeof(float));
        }
    }
    if (want_crc)
        *crc = h;
    return MM_CODEC_OK;
}
