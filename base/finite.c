/* Whether a float vector holds only finite values: the wire's check of
 * every fp32 body (net/wire.c), the codecs' of what they decode, the
 * round's of the parameters after mixing. */
#include "base/finite.h"

#include "base/cpu.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* |x| as bits > 0x7f7fffff means an all-ones exponent: NaN or Inf. With
 * the sign masked off, a signed compare is exact, so plain SSE2 (every
 * x86-64) does four floats per instruction; the scalar loop is the rest. */
static bool any_nonfinite(const uint32_t *u, uint64_t n)
{
    uint64_t k = 0;
    uint32_t any = 0;
#if defined(__SSE2__)
    __m128i acc = _mm_setzero_si128(), lim = _mm_set1_epi32(0x7f7fffff),
            mask = _mm_set1_epi32(0x7fffffff);
    for (; k + 16 <= n; k += 16) {
        __m128i a = _mm_and_si128(_mm_loadu_si128((const __m128i *)(u + k)), mask);
        __m128i b = _mm_and_si128(_mm_loadu_si128((const __m128i *)(u + k + 4)), mask);
        __m128i c = _mm_and_si128(_mm_loadu_si128((const __m128i *)(u + k + 8)), mask);
        __m128i d = _mm_and_si128(_mm_loadu_si128((const __m128i *)(u + k + 12)), mask);
        acc = _mm_or_si128(acc, _mm_or_si128(_mm_or_si128(_mm_cmpgt_epi32(a, lim),
                                                          _mm_cmpgt_epi32(b, lim)),
                                             _mm_or_si128(_mm_cmpgt_epi32(c, lim),
                                                          _mm_cmpgt_epi32(d, lim))));
    }
    any = (uint32_t)_mm_movemask_epi8(acc);
#endif
    for (; k < n; k++)
        any |= (uint32_t)((u[k] & 0x7fffffffU) > 0x7f7fffffU);
    return any != 0;
}

#if defined(__x86_64__)
/* The same with AVX-512 where the CPU has it (chosen once at run time):
 * sixteen floats per instruction, twice the SSE2 loop's rate on vectors
 * in L2 here; the SSE2 loop takes the rest. */
__attribute__((target("avx512f")))
static bool any_nonfinite_avx512(const uint32_t *u, uint64_t n)
{
    uint64_t k = 0;
    __m512i top = _mm512_setzero_si512();
    for (; k + 64 <= n; k += 64) {
        __m512i a = _mm512_loadu_si512(u + k), b = _mm512_loadu_si512(u + k + 16),
                c = _mm512_loadu_si512(u + k + 32), d = _mm512_loadu_si512(u + k + 48);
        /* (x << 1) drops the sign; an all-ones exponent is >= 0xff000000 */
        top = _mm512_max_epu32(top, _mm512_max_epu32(
                                        _mm512_max_epu32(_mm512_slli_epi32(a, 1), _mm512_slli_epi32(b, 1)),
                                        _mm512_max_epu32(_mm512_slli_epi32(c, 1), _mm512_slli_epi32(d, 1))));
    }
    if (_mm512_cmpge_epu32_mask(top, _mm512_set1_epi32((int)0xff000000U)))
        return true;
    return any_nonfinite(u + k, n - k);
}
#endif

bool mm_all_finite(const float *v, uint64_t n, uint64_t *bad)
{
    const uint32_t *u = (const uint32_t *)v;
#if defined(__x86_64__)
    bool any = n >= 64 && mm_cpu_avx512() ? any_nonfinite_avx512(u, n) : any_nonfinite(u, n);
#else
    bool any = any_nonfinite(u, n);
#endif
    if (!any)
        return true;
    for (uint64_t k = 0; k < n; k++)
        if ((u[k] & 0x7f800000U) == 0x7f800000U) {
            if (bad) *bad = k;
            return false;
        }
    return true;
}
