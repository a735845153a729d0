/* CRC32C (Castagnoli polynomial, reflected 0x82F63B78), the payload checksum
 * of the wire format. Why CRC32C: x86 has an instruction for it (SSE4.2), so
 * it runs at several GB/s, far cheaper than the transfer; it is a standard
 * (iSCSI, ext4) with implementations in every language for other peers.
 * The hardware path is chosen once at run time (__builtin_cpu_supports). */
#include "base/crc32c.h"

#include <string.h>

#include "base/finite.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <nmmintrin.h>
#include <smmintrin.h>
#endif

static uint32_t table[8][256];
static int table_ready;

static void make_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78U & (0U - (c & 1U)));
        table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (uint32_t i = 0; i < 256; i++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

/* Slice-by-8: portable, about 1 byte per cycle. Little-endian hosts only
 * (the whole wire format assumes it; see docs/protocol.md). */
uint32_t mm_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
        make_tables();
    const uint8_t *p = buf;
    crc = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = table[7][w & 0xFF] ^ table[6][(w >> 8) & 0xFF] ^
              table[5][(w >> 16) & 0xFF] ^ table[4][(w >> 24) & 0xFF] ^
              table[3][(w >> 32) & 0xFF] ^ table[2][(w >> 40) & 0xFF] ^
              table[1][(w >> 48) & 0xFF] ^ table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
    return ~crc;
}

#if defined(__x86_64__)
/* crc32q has a latency of 3 cycles but a throughput of 1 per cycle, so one
 * dependent chain runs at a third of the possible speed. Blocks of 3*STRIDE
 * bytes are done as three independent chains and joined with "shift":
 * the CRC register after STRIDE more zero bytes, a linear map on 32 bits
 * precomputed as 4 byte tables. */
#define STRIDE 4096
static uint32_t shift_tab[4][256];
static int shift_ready;

static uint32_t zeros_sw(uint32_t reg, size_t n) /* raw register, no inversion */
{
    while (n--)
        reg = (reg >> 8) ^ table[0][reg & 0xFF];
    return reg;
}

static void make_shift(void)
{
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
        make_tables();
    uint32_t col[32];
    for (int i = 0; i < 32; i++)
        col[i] = zeros_sw(1U << i, STRIDE);
    for (int k = 0; k < 4; k++)
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t r = 0;
            for (int b = 0; b < 8; b++)
                if (v & (1U << b))
                    r ^= col[8 * k + b];
            shift_tab[k][v] = r;
        }
    __atomic_store_n(&shift_ready, 1, __ATOMIC_RELEASE);
}

static inline uint32_t shift(uint32_t r)
{
    return shift_tab[0][r & 0xFF] ^ shift_tab[1][(r >> 8) & 0xFF] ^
           shift_tab[2][(r >> 16) & 0xFF] ^ shift_tab[3][r >> 24];
}

/* Bit 31 of each 32-bit half of the result is set when that half, a float,
 * is NaN or Inf: |x| + 2^23 reaches 2^31 exactly when the exponent is all
 * ones, and no half carries into the other (|x| + 2^23 < 2^32). */
static inline uint64_t nonfinite2(uint64_t w)
{
    return ((w & 0x7fffffff7fffffffULL) + 0x0080000000800000ULL) & 0x8000000080000000ULL;
}

/* One pass of CRC32C over len bytes; with floats (a compile-time constant
 * in both callers), len is a whole number of floats, and *bad is non-zero
 * when one of them is NaN or Inf: the three chains' bytes also go through
 * SSE registers (two operations per 4 floats beside the crc32q's, which
 * the instruction's one-per-cycle rate leaves room for: 24 against 27 GB/s
 * for the CRC alone, where a separate check pass after it ran at 19, on
 * 256 KiB in L2 here), the rest (under 3 * STRIDE) through nonfinite2. */
/* One float into the CRC and the check (the ends of a floats pass). */
__attribute__((target("sse4.2"), always_inline))
static inline uint64_t crc_float(uint64_t c, const uint8_t **p, size_t *len, uint64_t *nf)
{
    uint32_t w;
    memcpy(&w, *p, 4);
    *nf |= nonfinite2(w);
    *p += 4;
    *len -= 4;
    return _mm_crc32_u32((uint32_t)c, w);
}

__attribute__((target("sse4.2"), always_inline))
static inline uint32_t crc_hw_pass(uint32_t crc, const uint8_t *p, size_t len, bool floats,
                                   uint64_t *bad)
{
    uint64_t c = ~crc & 0xFFFFFFFFU, nf = 0;
    if (floats && len >= 4 && ((uintptr_t)p & 7) == 4) /* to 8-byte words */
        c = crc_float(c, &p, &len, &nf);
    while (!floats && len && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    if (len >= 3 * STRIDE && !__atomic_load_n(&shift_ready, __ATOMIC_ACQUIRE))
        make_shift();
    __m128i top = _mm_setzero_si128(); /* the largest float << 1 (sign gone) seen */
    while (len >= 3 * STRIDE) {
        uint64_t c1 = 0, c2 = 0;
        const uint8_t *q = p;
        for (size_t i = 0; i < STRIDE; i += 16, q += 16) {
            uint64_t a, b, d;
            memcpy(&a, q, 8);
            memcpy(&b, q + STRIDE, 8);
            memcpy(&d, q + 2 * STRIDE, 8);
            c = _mm_crc32_u64(c, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, d);
            memcpy(&a, q + 8, 8);
            memcpy(&b, q + STRIDE + 8, 8);
            memcpy(&d, q + 2 * STRIDE + 8, 8);
            c = _mm_crc32_u64(c, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, d);
            /* the same 16 bytes of each chain again, as 4 floats in an SSE
             * register: a shift and an unsigned max each, two operations
             * where nonfinite2 would take eight integer ones */
            if (floats) {
                __m128i x = _mm_loadu_si128((const __m128i *)q),
                        y = _mm_loadu_si128((const __m128i *)(q + STRIDE)),
                        z = _mm_loadu_si128((const __m128i *)(q + 2 * STRIDE));
                top = _mm_max_epu32(top, _mm_max_epu32(_mm_slli_epi32(x, 1),
                                                       _mm_max_epu32(_mm_slli_epi32(y, 1),
                                                                     _mm_slli_epi32(z, 1))));
            }
        }
        c = shift(shift((uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
        p += 3 * STRIDE;
        len -= 3 * STRIDE;
    }
    while (len >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c = _mm_crc32_u64(c, a);
        if (floats)
            nf |= nonfinite2(a);
        p += 8;
        len -= 8;
    }
    if (floats && len >= 4)
        c = crc_float(c, &p, &len, &nf);
    while (len--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    /* an all-ones exponent shifted left is at least 0xff000000 */
    __m128i hit = _mm_cmpeq_epi32(_mm_max_epu32(top, _mm_set1_epi32((int)0xff000000U)), top);
    *bad = nf | (uint64_t)_mm_movemask_epi8(hit);
    return ~(uint32_t)c;
}

__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const void *buf, size_t len)
{
    uint64_t unused;
    return crc_hw_pass(crc, buf, len, false, &unused);
}

__attribute__((target("sse4.2")))
static uint32_t crc_finite_hw(uint32_t crc, const float *v, size_t n, bool *nonfinite)
{
    uint64_t bad;
    crc = crc_hw_pass(crc, (const uint8_t *)v, 4 * n, true, &bad);
    *nonfinite = bad != 0;
    return crc;
}

/* With VPCLMULQDQ (AVX-512): carry-less multiplication folds 256 bytes a
 * step, 64 bytes per multiply pair, several times crc32q's 8 bytes per
 * cycle; the last 16 bytes and the tail go through crc32q as above.
 *
 * A 128-bit lane holds message bits in order (qword 0 first), so as a
 * polynomial its bit i has degree 127 - i: the lane is H x^64 + L with H
 * its qword 0. Moving it D bits forward (to be added to the data there)
 * is multiplying by x^D mod P; H x^(64+D) and L x^D are each a 64-bit by
 * 32-bit carry-less product. With a constant K kept as bit-reflected(K)
 * << 32, clmul(H, that) has bit k at degree 126 - k of H K, a lane worth
 * x H K; so the constants are x^(D+63) mod P (for H) and x^(D-1) mod P
 * (for L), computed once. The CRC's initial register enters by xor into
 * the first 4 bytes, as crc32q would take it. */
typedef struct {
    uint64_t hi, lo; /* for H (qword 0) and L (qword 1) */
} fold_k;

static fold_k k_2048, k_512, k_384, k_256, k_128;
static int clmul_ready;

static uint64_t xpow_mod_reflected(unsigned e) /* bit-reflected(x^e mod P) << 32 */
{
    uint64_t r = 1; /* normal bit order, degree i at bit i */
    while (e--) {
        r <<= 1;
        if (r >> 32)
            r ^= 0x11EDC6F41ULL;
    }
    uint32_t v = 0;
    for (int i = 0; i < 32; i++)
        if (r >> i & 1)
            v |= 1U << (31 - i);
    return (uint64_t)v << 32;
}

static fold_k fold_for(unsigned d)
{
    return (fold_k){xpow_mod_reflected(d + 63), xpow_mod_reflected(d - 1)};
}

static void make_clmul(void)
{
    k_2048 = fold_for(2048);
    k_512 = fold_for(512);
    k_384 = fold_for(384);
    k_256 = fold_for(256);
    k_128 = fold_for(128);
    __atomic_store_n(&clmul_ready, 1, __ATOMIC_RELEASE);
}

#define CLMUL_TARGET __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))

CLMUL_TARGET static inline __m512i fold512(__m512i x, __m512i k, __m512i next)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), next, 0x96);
}

CLMUL_TARGET static inline __m128i fold128(__m128i x, fold_k k, __m128i next)
{
    __m128i kk = _mm_set_epi64x((long long)k.lo, (long long)k.hi);
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, kk, 0x00),
                                       _mm_clmulepi64_si128(x, kk, 0x11)), next);
}

CLMUL_TARGET static __m512i k512(fold_k k)
{
    return _mm512_set_epi64((long long)k.lo, (long long)k.hi, (long long)k.lo,
                            (long long)k.hi, (long long)k.lo, (long long)k.hi,
                            (long long)k.lo, (long long)k.hi);
}

/* The largest float << 1 (the sign gone) seen in a 64-byte load: an
 * all-ones exponent makes it at least 0xff000000 (as in crc_hw_pass). */
CLMUL_TARGET static inline __m512i top512(__m512i top, __m512i x)
{
    return _mm512_max_epu32(top, _mm512_slli_epi32(x, 1));
}

/* With floats (a compile-time constant in both callers), len is a whole
 * number of floats and *bad is non-zero when one of them is NaN or Inf:
 * every 64-byte load of the fold also goes through one shift and one
 * unsigned max, which the multiplies leave room for. */
CLMUL_TARGET __attribute__((always_inline)) static inline uint32_t
crc_clmul_pass(uint32_t crc, const void *buf, size_t len, bool floats, uint64_t *bad)
{
    const uint8_t *p = buf;
    __m512i top = _mm512_setzero_si512();
    if (!__atomic_load_n(&clmul_ready, __ATOMIC_ACQUIRE))
        make_clmul();
    __m512i x0 = _mm512_loadu_si512(p), x1 = _mm512_loadu_si512(p + 64),
            x2 = _mm512_loadu_si512(p + 128), x3 = _mm512_loadu_si512(p + 192);
    if (floats)
        top = top512(top512(top512(top512(top, x0), x1), x2), x3);
    x0 = _mm512_xor_si512(x0, _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, (long long)(uint32_t)~crc));
    p += 256;
    len -= 256;
    __m512i k = k512(k_2048);
    while (len >= 256) {
        __m512i a = _mm512_loadu_si512(p), b = _mm512_loadu_si512(p + 64),
                c = _mm512_loadu_si512(p + 128), d = _mm512_loadu_si512(p + 192);
        if (floats)
            top = top512(top512(top512(top512(top, a), b), c), d);
        x0 = fold512(x0, k, a);
        x1 = fold512(x1, k, b);
        x2 = fold512(x2, k, c);
        x3 = fold512(x3, k, d);
        p += 256;
        len -= 256;
    }
    k = k512(k_512);
    x1 = fold512(x0, k, x1);
    x2 = fold512(x1, k, x2);
    x3 = fold512(x2, k, x3);
    while (len >= 64) {
        __m512i a = _mm512_loadu_si512(p);
        if (floats)
            top = top512(top, a);
        x3 = fold512(x3, k, a);
        p += 64;
        len -= 64;
    }
    __m128i r = _mm512_extracti32x4_epi32(x3, 3);
    r = fold128(_mm512_extracti32x4_epi32(x3, 0), k_384, r);
    r = fold128(_mm512_extracti32x4_epi32(x3, 1), k_256, r);
    r = fold128(_mm512_extracti32x4_epi32(x3, 2), k_128, r);
    while (len >= 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
        if (floats)
            top = top512(top, _mm512_zextsi128_si512(a)); /* (upper lanes 0) */
        r = fold128(r, k_128, a);
        p += 16;
        len -= 16;
    }
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(r));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(r, 1));
    uint64_t tail = 0;
    crc = crc_hw_pass(~(uint32_t)c, p, len, floats, &tail);
    if (floats)
        *bad = tail | _mm512_cmpge_epu32_mask(top, _mm512_set1_epi32((int)0xff000000U));
    return crc;
}

CLMUL_TARGET static uint32_t crc_clmul(uint32_t crc, const void *buf, size_t len)
{
    if (len < 256)
        return crc_hw(crc, buf, len);
    uint64_t unused;
    return crc_clmul_pass(crc, buf, len, false, &unused);
}

CLMUL_TARGET static uint32_t crc_clmul_finite(uint32_t crc, const float *v, size_t n,
                                              bool *nonfinite)
{
    if (4 * n < 256)
        return crc_finite_hw(crc, v, n, nonfinite);
    uint64_t bad = 0;
    crc = crc_clmul_pass(crc, v, 4 * n, true, &bad);
    *nonfinite = bad != 0;
    return crc;
}
#endif

static int hw_state; /* 0 unknown, 1 yes, 2 no */
static int clmul_state; /* 0 unknown, 1 yes, 2 no */

/* AVX-512 with VPCLMULQDQ (the OS saving the AVX-512 state: the CPU
 * feature test checks XCR0) */
static bool crc32c_has_clmul(void)
{
    int s = __atomic_load_n(&clmul_state, __ATOMIC_RELAXED);
    if (!s) {
#if defined(__x86_64__)
        __builtin_cpu_init();
        s = mm_crc32c_is_hw() && __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("vpclmulqdq") ? 1 : 2;
#else
        s = 2;
#endif
        __atomic_store_n(&clmul_state, s, __ATOMIC_RELAXED);
    }
    return s == 1;
}

bool mm_crc32c_is_hw(void)
{
    int s = __atomic_load_n(&hw_state, __ATOMIC_RELAXED);
    if (!s) {
#if defined(__x86_64__)
        __builtin_cpu_init();
        s = __builtin_cpu_supports("sse4.2") ? 1 : 2;
#else
        s = 2;
#endif
        __atomic_store_n(&hw_state, s, __ATOMIC_RELAXED);
    }
    return s == 1;
}

uint32_t mm_crc32c(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
    if (len >= 256 && crc32c_has_clmul())
        return crc_clmul(crc, buf, len);
    if (mm_crc32c_is_hw())
        return crc_hw(crc, buf, len);
#endif
    return mm_crc32c_sw(crc, buf, len);
}

uint32_t mm_crc32c_finite(uint32_t crc, const float *v, size_t n, bool *nonfinite)
{
#if defined(__x86_64__)
    if (n >= 64 && crc32c_has_clmul())
        return crc_clmul_finite(crc, v, n, nonfinite);
    if (mm_crc32c_is_hw())
        return crc_finite_hw(crc, v, n, nonfinite);
#endif
    *nonfinite = !mm_all_finite(v, n, NULL);
    return mm_crc32c_sw(crc, v, n * sizeof *v);
}
