/* The sparse codecs: topk:F (the k = ceil(F n) largest |d|, values and
 * delta-coded indices) and randk:F (k coordinates chosen by a key the
 * payload carries; no indices sent).
 *
 * Top-k selection is O(n) without a sort: the threshold is estimated from
 * a sample of n/16 (at most 65536) |d| values, one pass over the vector keeps the
 * coordinates above a safe margin below it (typically 1.1 to 1.4 k of
 * them, in index order), and the exact k-th largest among those is found
 * by a radix select on their bits. When the sample misleads (many equal
 * values) or the vector is small (under 65536 floats), an exact radix
 * select over the whole vector takes three more passes instead. Ties at the threshold go to the lowest indices, so
 * the choice is deterministic. docs/compression.md has the measurements. */
#include "gossip/codec_internal.h"

#include <math.h>
#include <stdlib.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define ABS_MASK 0x7fffffffU
#define MAX_FINITE 0x7f7fffffU
#define SAMPLE_MAX 65536 /* |d| values sampled to place the threshold */
#define SAMPLE_MIN 4096  /* below 16 times this (65536 floats): exact select only */
#define HIST 2048 /* counters of the radix select's widest digit */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* randk: stratum s of k covers [floor(s n / k), floor((s+1) n / k)); its
 * coordinate is picked by output s of splitmix64 seeded with key. */
uint64_t mm_codec_randk_index(uint64_t key, uint64_t s, uint64_t k, uint64_t n)
{
    uint64_t lo = s * n / k, hi = (s + 1) * n / k;
    uint64_t z = mix64(key + (s + 1) * 0x9E3779B97F4A7C15ULL);
    return lo + (((z >> 32) * (hi - lo)) >> 32);
}

/* ---- workspace -------------------------------------------------------- */

/* Sample size and the rank in it that sets the candidate threshold: the
 * expected rank of the true k-th largest plus four standard deviations
 * and a little, so the candidates cover the top k unless the sample is
 * very unlucky (then the exact path runs; the result is the same). */
static uint32_t sample_size(uint64_t n)
{
    uint64_t m = n / 16;
    return m >= SAMPLE_MAX ? SAMPLE_MAX : m >= SAMPLE_MIN ? (uint32_t)m : 0;
}

static uint64_t sample_rank(const mm_codec *c)
{
    double r = (double)c->k * c->sample_n / (double)c->n;
    return (uint64_t)(r + 4 * sqrt(r) + 8);
}

int mm__codec_sparse_init(mm_codec *c, char *err, size_t errlen)
{
    if (c->spec.kind != MM_CODEC_TOPK)
        return 0;
    c->sample_n = sample_size(c->n);
    if (c->sample_n) {
        double r = (double)sample_rank(c);
        double cap = (r + 4 * sqrt(r) + 8) * (double)c->n / c->sample_n;
        c->cand_cap = cap >= (double)c->n ? c->n : (uint64_t)cap;
    }
    c->cand_idx = malloc((c->cand_cap ? c->cand_cap : 1) * sizeof *c->cand_idx);
    c->cand_val = malloc((c->cand_cap ? c->cand_cap : 1) * sizeof *c->cand_val);
    c->sample = malloc((c->sample_n ? c->sample_n : 1) * sizeof *c->sample);
    c->hist = malloc(HIST * sizeof *c->hist);
    if (!c->cand_idx || !c->cand_val || !c->sample || !c->hist) {
        mm_codec_fail(err, errlen, MM_CODEC_E_INPUT, "out of memory for the top-k workspace");
        return -1;
    }
    c->ws_bytes += c->cand_cap * (sizeof *c->cand_idx + sizeof *c->cand_val) +
                   c->sample_n * sizeof *c->sample + HIST * sizeof *c->hist;
    return 0;
}

void mm__codec_sparse_free(mm_codec *c)
{
    free(c->cand_idx);
    free(c->cand_val);
    free(c->sample);
    free(c->hist);
}

/* ---- selection ---------------------------------------------------------- */

static inline uint32_t absbits(const float *x, const float *r, uint64_t i)
{
    return mm_f2u(r ? x[i] - r[i] : x[i]) & ABS_MASK;
}

/* The k-th largest |d| (1 <= k <= cnt) of d = x - r (r may be NULL) over
 * [0, cnt): *t its bits, *n_gt how many are strictly larger. A radix
 * select on the 31 bits of |d| in digits of 11, 11 and 9 bits (2048
 * counters, 8 KB, cleared in no time even for a tiny vector): three
 * passes, each counting the next digit among the values that share the
 * digits found so far. O(cnt), whatever the values. */
static void radix_kth(uint32_t *hist, const float *x, const float *r, uint64_t cnt, uint64_t k,
                      uint32_t *t, uint64_t *n_gt)
{
    static const int shift[3] = {20, 9, 0}, width[3] = {11, 11, 9};
    uint32_t prefix = 0, mask = 0;
    uint64_t above = 0;
    for (int level = 0; level < 3; level++) {
        uint32_t buckets = 1U << width[level], dm = buckets - 1;
        memset(hist, 0, buckets * sizeof *hist);
        int sh = shift[level];
        if (r) {
            for (uint64_t i = 0; i < cnt; i++) {
                uint32_t u = mm_f2u(x[i] - r[i]) & ABS_MASK;
                if ((u & mask) == prefix)
                    hist[(u >> sh) & dm]++;
            }
        } else {
            for (uint64_t i = 0; i < cnt; i++) {
                uint32_t u = mm_f2u(x[i]) & ABS_MASK;
                if ((u & mask) == prefix)
                    hist[(u >> sh) & dm]++;
            }
        }
        uint32_t d = dm;
        while (above + hist[d] < k)
            above += hist[d--];
        prefix |= d << shift[level];
        mask |= dm << shift[level];
    }
    *t = prefix;
    *n_gt = above;
}

/* The coordinates with |d| >= lo, in index order, into the candidate
 * arrays (as many as fit; the return value counts them all). *bad is set
 * when some d is NaN or infinite. */
static uint64_t filter(mm_codec *c, const float *restrict x, const float *restrict r,
                       uint32_t lo, uint32_t *bad)
{
    uint64_t n = c->n, cap = c->cand_cap, cnt = 0, i = 0;
    uint32_t *restrict idx = c->cand_idx;
    float *restrict val = c->cand_val;
    uint32_t nf = 0;
#if defined(__SSE2__)
    /* Four at a time; the rare lane above the threshold goes to the scalar
     * append. |bits| compare as signed integers (all below 2^31). */
    __m128i vlo = _mm_set1_epi32((int)lo - 1), lim = _mm_set1_epi32((int)MAX_FINITE),
            am = _mm_set1_epi32((int)ABS_MASK), acc = _mm_setzero_si128();
    for (; i + 8 <= n; i += 8) {
        __m128 a = _mm_loadu_ps(x + i), b = _mm_loadu_ps(x + i + 4);
        if (r) {
            a = _mm_sub_ps(a, _mm_loadu_ps(r + i));
            b = _mm_sub_ps(b, _mm_loadu_ps(r + i + 4));
        }
        __m128i ua = _mm_and_si128(_mm_castps_si128(a), am),
                ub = _mm_and_si128(_mm_castps_si128(b), am);
        acc = _mm_or_si128(acc, _mm_or_si128(_mm_cmpgt_epi32(ua, lim), _mm_cmpgt_epi32(ub, lim)));
        int m = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(ua, vlo))) |
                _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(ub, vlo))) << 4;
        while (m) {
            int j = __builtin_ctz((unsigned)m);
            m &= m - 1;
            if (cnt < cap) {
                idx[cnt] = (uint32_t)(i + (uint64_t)j);
                val[cnt] = r ? x[i + j] - r[i + j] : x[i + j];
            }
            cnt++;
        }
    }
    nf = (uint32_t)_mm_movemask_epi8(acc);
#endif
    for (; i < n; i++) {
        uint32_t u = absbits(x, r, i);
        nf |= u > MAX_FINITE;
        if (u >= lo) {
            if (cnt < cap) {
                idx[cnt] = (uint32_t)i;
                val[cnt] = r ? x[i] - r[i] : x[i];
            }
            cnt++;
        }
    }
    *bad = nf;
    return cnt;
}

/* ---- top-k payload -------------------------------------------------------- */

typedef struct {
    uint8_t *vals, *gaps;   /* the two regions of the payload */
    uint64_t j, prev1;      /* entries written; previous index + 1 */
    float *ref;
    uint32_t overflow;
} emitter;

static inline void emit(emitter *e, uint64_t i, float v)
{
    mm_stf(e->vals + 4 * e->j++, v);
    uint64_t g = i - e->prev1; /* indices strictly increase: gap >= 0 */
    e->prev1 = i + 1;
    while (g >= 0x80) {
        *e->gaps++ = (uint8_t)(g | 0x80);
        g >>= 7;
    }
    *e->gaps++ = (uint8_t)g;
    if (e->ref) {
        float u = e->ref[i] + v;
        e->overflow |= (mm_f2u(u) & ABS_MASK) > MAX_FINITE;
        e->ref[i] = u;
    }
}

static mm_codec_err nonfinite_input(const mm_codec *c, const float *x, const float *r,
                                    char *why, size_t whylen)
{
    uint64_t i = 0;
    while (i < c->n && absbits(x, r, i) <= MAX_FINITE)
        i++;
    return mm_codec_fail(why, whylen, MM_CODEC_E_INPUT, "%s %llu is NaN or infinite",
                         r ? "x - ref at" : "x at", (unsigned long long)i);
}

static mm_codec_err topk_encode(mm_codec *c, const float *x, float *ref, uint8_t *out,
                                size_t *len, char *why, size_t whylen)
{
    uint64_t n = c->n, k = c->k, cnt = 0;
    uint32_t t = 0, bad = 0;
    uint64_t n_gt = 0;
    bool exact = true;
    if (c->sample_n && !c->exact_only) {
        /* jittered strided sample: one coordinate per stride, at a fixed
         * pseudo-random offset (the same every call) */
        uint64_t stride = n / c->sample_n;
        for (uint32_t s = 0; s < c->sample_n; s++) {
            uint64_t off = ((mix64(s + 1) >> 32) * stride) >> 32;
            c->sample[s] = mm_u2f(absbits(x, ref, s * stride + off));
        }
        uint64_t rank = sample_rank(c);
        uint32_t lo = 0;
        if (rank <= c->sample_n) {
            uint64_t gt;
            radix_kth(c->hist, c->sample, NULL, c->sample_n, rank, &lo, &gt);
        }
        cnt = filter(c, x, ref, lo, &bad);
        if (bad)
            return nonfinite_input(c, x, ref, why, whylen);
        if (cnt >= k && cnt <= c->cand_cap) {
            radix_kth(c->hist, c->cand_val, NULL, cnt, k, &t, &n_gt);
            exact = false;
        }
    }
    if (exact) {
        for (uint64_t i = 0; i < n; i++)
            bad |= absbits(x, ref, i) > MAX_FINITE;
        if (bad)
            return nonfinite_input(c, x, ref, why, whylen);
        radix_kth(c->hist, x, ref, n, k, &t, &n_gt);
    }
    c->last_exact = exact;
    uint64_t eq_left = k - n_gt; /* ties at t: the first ones by index */
    emitter e = {out, out + 4 * k, 0, 0, ref, 0};
    if (!exact) {
        for (uint64_t j = 0; j < cnt; j++) {
            uint32_t u = mm_f2u(c->cand_val[j]) & ABS_MASK;
            if (u > t || (u == t && eq_left && eq_left--))
                emit(&e, c->cand_idx[j], c->cand_val[j]);
        }
    } else {
        for (uint64_t i = 0; i < n; i++) {
            uint32_t u = absbits(x, ref, i);
            if (u > t || (u == t && eq_left && eq_left--))
                emit(&e, i, ref ? x[i] - ref[i] : x[i]);
        }
    }
    *len = (size_t)(e.gaps - out);
    if (e.overflow)
        return mm_codec_fail(why, whylen, MM_CODEC_E_OVERFLOW, "a ref value became infinite");
    return MM_CODEC_OK;
}

/* Reads one LEB128 varint of at most 5 bytes, minimal (no trailing zero
 * byte), below 2^32. Returns bytes used; 0 when malformed, VARINT_SHORT
 * when the payload ends inside it. */
#define VARINT_SHORT ((size_t)-1)
static size_t get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (size_t b = 0; b < 5; b++) {
        if (p + b >= end)
            return VARINT_SHORT;
        x |= (uint64_t)(p[b] & 0x7f) << (7 * b);
        if (!(p[b] & 0x80)) {
            if ((b > 0 && p[b] == 0) || x >> 32)
                return 0;
            *v = x;
            return b + 1;
        }
    }
    return 0;
}

static mm_codec_err values_finite(const mm_codec *c, const uint8_t *p, uint64_t k,
                                  char *why, size_t whylen)
{
    for (uint64_t j = 0; j < k; j++) {
        uint32_t u;
        memcpy(&u, p + 4 * j, 4);
        if ((u & ABS_MASK) > MAX_FINITE)
            return mm_codec_fail(why, whylen, MM_CODEC_E_VALUE, "%s value %llu of %llu is NaN "
                                 "or infinite", mm_codec_kind_name(c->spec.kind),
                                 (unsigned long long)j, (unsigned long long)k);
    }
    return MM_CODEC_OK;
}

static mm_codec_err topk_check(const mm_codec *c, const uint8_t *p, size_t len,
                               char *why, size_t whylen)
{
    uint64_t k = c->k;
    mm_codec_err e = values_finite(c, p, k, why, whylen);
    if (e)
        return e;
    const uint8_t *g = p + 4 * k, *end = p + len;
    uint64_t next = 0; /* smallest index the next entry may have */
    for (uint64_t j = 0; j < k; j++) {
        uint64_t gap;
        size_t used = get_varint(g, end, &gap);
        if (!used || used == VARINT_SHORT)
            return mm_codec_fail(why, whylen, MM_CODEC_E_INDEX, "index %llu of %llu: %s at "
                                 "byte %zu", (unsigned long long)j, (unsigned long long)k,
                                 used ? "varint cut short by the end of the payload"
                                      : "malformed varint (over 5 bytes, not minimal, or "
                                        ">= 2^32)", (size_t)(g - p));
        if (gap >= c->n - next)
            return mm_codec_fail(why, whylen, MM_CODEC_E_INDEX, "index %llu of %llu is %llu, "
                                 "past the last coordinate %llu", (unsigned long long)j,
                                 (unsigned long long)k, (unsigned long long)(next + gap),
                                 (unsigned long long)(c->n - 1));
        next += gap + 1;
        g += used;
    }
    if (g != end)
        return mm_codec_fail(why, whylen, MM_CODEC_E_LENGTH, "%zu bytes after the last of %llu "
                             "indices", (size_t)(end - g), (unsigned long long)k);
    return MM_CODEC_OK;
}

/* ---- entry points ---------------------------------------------------------- */

mm_codec_err mm__codec_sparse_encode(mm_codec *c, const float *x, float *ref, uint64_t key,
                                    uint8_t *out, size_t *len, char *why, size_t whylen)
{
    if (c->spec.kind == MM_CODEC_TOPK)
        return topk_encode(c, x, ref, out, len, why, whylen);
    uint64_t k = c->k, n = c->n;
    uint32_t bad = 0, over = 0;
    mm_st64(out, key);
    for (uint64_t s = 0; s < k; s++) {
        uint64_t i = mm_codec_randk_index(key, s, k, n);
        float v = ref ? x[i] - ref[i] : x[i];
        bad |= (mm_f2u(v) & ABS_MASK) > MAX_FINITE;
        mm_stf(out + 8 + 4 * s, v);
        if (ref) {
            float u = ref[i] + v;
            over |= (mm_f2u(u) & ABS_MASK) > MAX_FINITE;
            ref[i] = u;
        }
    }
    if (bad)
        return mm_codec_fail(why, whylen, MM_CODEC_E_INPUT, "a sampled value is NaN or infinite");
    if (over)
        return mm_codec_fail(why, whylen, MM_CODEC_E_OVERFLOW, "a ref value became infinite");
    *len = (size_t)(8 + 4 * k);
    return MM_CODEC_OK;
}

mm_codec_err mm__codec_sparse_check(const mm_codec *c, const uint8_t *p, size_t len,
                                   char *why, size_t whylen)
{
    if (c->spec.kind == MM_CODEC_TOPK)
        return topk_check(c, p, len, why, whylen);
    return values_finite(c, p + 8, c->k, why, whylen); /* the key may be anything */
}

mm_codec_err mm__codec_sparse_decode(const mm_codec *c, const uint8_t *p, size_t len,
                                    float *dst, int apply, char *why, size_t whylen)
{
    uint64_t k = c->k, n = c->n;
    uint32_t over = 0;
    if (!apply)
        memset(dst, 0, n * sizeof *dst);
    if (c->spec.kind == MM_CODEC_TOPK) {
        const uint8_t *g = p + 4 * k, *end = p + len;
        uint64_t next = 0;
        for (uint64_t j = 0; j < k; j++) {
            uint64_t gap = 0;
            g += get_varint(g, end, &gap); /* checked before */
            uint64_t i = next + gap;
            next = i + 1;
            float v = mm_ldf(p + 4 * j);
            v = apply ? dst[i] + v : v;
            over |= (mm_f2u(v) & ABS_MASK) > MAX_FINITE;
            dst[i] = v;
        }
    } else {
        uint64_t key = mm_ld64(p);
        for (uint64_t s = 0; s < k; s++) {
            uint64_t i = mm_codec_randk_index(key, s, k, n);
            float v = mm_ldf(p + 8 + 4 * s);
            v = apply ? dst[i] + v : v;
            over |= (mm_f2u(v) & ABS_MASK) > MAX_FINITE;
            dst[i] = v;
        }
    }
    if (over)
        return mm_codec_fail(why, whylen, MM_CODEC_E_OVERFLOW, "a copy value became infinite");
    return MM_CODEC_OK;
}
