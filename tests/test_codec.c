/* The codecs (gossip/codec.h): spec parsing, payload sizes, each codec's
 * error bound against a reference, payloads built byte by byte from
 * docs/protocol.md decoded as the document says, the CHOCO rule (the
 * sender's ref and a receiver's copy stay bit-identical), and every bad
 * payload refused with its reason and the copy left untouched. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gossip/codec.h"
#include "gossip/codec_internal.h"
#include "net/wire.h"
#include "base/rng.h"

static const char *all_specs[] = {"fp32", "bf16", "int8", "int8:32", "int8:4096", "sign",
                                  "sign:8", "sign:256", "topk:0.01", "topk:0.5", "topk:1", "randk:0.01",
                                  "randk:0.3", "randk:1"};
#define N_SPECS (sizeof all_specs / sizeof all_specs[0])

static mm_codec *make(const char *text, uint64_t n)
{
    mm_codec_spec s;
    char err[256];
    if (mm_codec_parse(text, &s, err, sizeof err) != 0)
        fail_msg("parse %s: %s", text, err);
    mm_codec *c = mm_codec_new(&s, n, err, sizeof err);
    if (!c)
        fail_msg("new %s: %s", text, err);
    return c;
}

/* model-like: per 1000-float "tensor" scales from 1e-3 to 1, a few outliers */
static void fill(mm_rng *r, float *x, uint64_t n, double scale)
{
    double s = scale;
    for (uint64_t i = 0; i < n; i++) {
        if (i % 1000 == 0)
            s = scale * pow(10, -3 * mm_rng_uniform(r));
        double v = s * mm_rng_normal(r);
        if (mm_rng_uniform(r) < 0.001)
            v *= 20;
        x[i] = (float)v;
    }
}

static uint8_t *encode(mm_codec *c, const float *x, float *ref, uint64_t key, size_t *len)
{
    uint8_t *out = malloc(mm_codec_max_bytes(c) + 1);
    char why[256];
    mm_codec_err e = mm_codec_encode(c, x, ref, key, out, mm_codec_max_bytes(c), len, NULL,
                                     why, sizeof why);
    if (e != MM_CODEC_OK)
        fail_msg("encode: %s", why);
    return out;
}

/* ---- specs -------------------------------------------------------------- */

static void parse_and_format(void **state)
{
    (void)state;
    struct { const char *in, *canon; } ok[] = {
        {"fp32", "fp32"}, {"bf16", "bf16"}, {"int8", "int8:256"}, {"int8:32", "int8:32"},
        {"sign", "sign:32"}, {"sign:256", "sign:256"}, {"sign:8", "sign:8"}, {"topk:0.01", "topk:0.01"},
        {"topk:1e-2", "topk:0.01"}, {"randk:.25", "randk:0.25"}, {"topk:1", "topk:1"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        mm_codec_spec s, t;
        char err[256], buf[64];
        assert_int_equal(mm_codec_parse(ok[i].in, &s, err, sizeof err), 0);
        mm_codec_format(&s, buf, sizeof buf);
        assert_string_equal(buf, ok[i].canon);
        assert_int_equal(mm_codec_parse(buf, &t, err, sizeof err), 0);
        assert_true(mm_codec_spec_equal(&s, &t));
    }
    struct { const char *in, *says; } bad[] = {
        {"", "unknown codec"}, {"fp16", "unknown codec 'fp16'"}, {"fp32:1", "takes no parameter"},
        {"topk", "needs a fraction"}, {"topk:", "needs a fraction"}, {"topk:0", "not a number in (0, 1]"},
        {"topk:1.5", "(0, 1]"}, {"topk:-0.1", "(0, 1]"}, {"topk:nan", "not a number"},
        {"topk:inf", "not a number"}, {"topk:0x1p-3", "not a number"}, {"randk:0.1x", "not a number"},
        {"int8:100", "power of two"}, {"int8:4", "power of two"}, {"int8:131072", "power of two"},
        {"sign:", "power of two"}, {"int8:-8", "power of two"}, {"int8:32x", "power of two"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mm_codec_spec s;
        char err[256] = "";
        assert_int_equal(mm_codec_parse(bad[i].in, &s, err, sizeof err), -1);
        if (!strstr(err, bad[i].says))
            fail_msg("'%s': error '%s' does not say '%s'", bad[i].in, err, bad[i].says);
    }
}

static void sizes(void **state)
{
    (void)state;
    mm_codec_spec s;
    char err[128];
    uint64_t n = 1000;
    mm_codec_parse("fp32", &s, err, sizeof err);
    assert_int_equal(mm_codec_max_len(&s, n), 4000);
    mm_codec_parse("bf16", &s, err, sizeof err);
    assert_int_equal(mm_codec_max_len(&s, n), 2000);
    mm_codec_parse("int8:256", &s, err, sizeof err);
    assert_int_equal(mm_codec_max_len(&s, n), 4 * 4 + 1000);
    mm_codec_parse("sign:256", &s, err, sizeof err);
    assert_int_equal(mm_codec_max_len(&s, n), 4 * 4 + 125);
    assert_int_equal(mm_codec_max_len(&s, 1001), 4 * 4 + 126);
    mm_codec_parse("topk:0.01", &s, err, sizeof err);
    assert_int_equal(mm_codec_k(&s, n), 10);
    assert_int_equal(mm_codec_k(&s, 1001), 11); /* ceil */
    assert_int_equal(mm_codec_k(&s, 5), 1);     /* at least one */
    assert_int_equal(mm_codec_min_len(&s, n), 50);
    assert_int_equal(mm_codec_max_len(&s, n), 90);
    mm_codec_parse("randk:0.01", &s, err, sizeof err);
    assert_int_equal(mm_codec_max_len(&s, n), 8 + 40);
    assert_int_equal(mm_codec_max_len(&s, 0), 0);
    assert_int_equal(mm_codec_max_len(&s, MM_CODEC_MAX_N + 1), 0);
    assert_null(mm_codec_new(&s, 0, err, sizeof err));
}

/* ---- each codec against its definition ------------------------------------ */

static int by_abs_desc(const void *a, const void *b)
{
    float x = fabsf(*(const float *)a), y = fabsf(*(const float *)b);
    return x < y ? 1 : x > y ? -1 : 0;
}

static void check_bound(const char *spec, const float *x, const float *q, uint64_t n)
{
    mm_codec *c = make(spec, n);
    const mm_codec_spec *s = mm_codec_get_spec(c);
    uint64_t k = mm_codec_k(s, n);
    switch (s->kind) {
    case MM_CODEC_FP32:
        assert_memory_equal(x, q, n * sizeof *x);
        break;
    case MM_CODEC_BF16:
        for (uint64_t i = 0; i < n; i++)
            if (!(fabsf(q[i] - x[i]) <= fabsf(x[i]) * 0x1p-8f))
                fail_msg("bf16 %llu: %g -> %g", (unsigned long long)i, x[i], q[i]);
        break;
    case MM_CODEC_INT8:
    case MM_CODEC_SIGN:
        for (uint64_t b = 0; b * s->block < n; b++) {
            uint64_t lo = b * s->block, hi = lo + s->block < n ? lo + s->block : n;
            double mx = 0, sum = 0;
            for (uint64_t i = lo; i < hi; i++)
                mx = fmax(mx, fabs(x[i])), sum += fabs(x[i]);
            for (uint64_t i = lo; i < hi; i++) {
                if (s->kind == MM_CODEC_INT8) {
                    if (!(fabs(q[i] - x[i]) <= mx / 127 * 0.5001 + 1e-30))
                        fail_msg("int8 %llu: %g -> %g (max %g)", (unsigned long long)i, x[i], q[i], mx);
                } else {
                    double mean = sum / (double)(hi - lo);
                    assert_true(fabs(fabs(q[i]) - mean) <= 1e-5 * mean);
                    assert_true(signbit(q[i]) == signbit(x[i]) || mean == 0);
                }
            }
        }
        break;
    case MM_CODEC_TOPK: {
        /* exactly k sent, exact values, none smaller than any left out */
        uint64_t sent = 0;
        float min_sent = INFINITY, max_left = 0;
        for (uint64_t i = 0; i < n; i++) {
            if (q[i] != 0) {
                assert_true(q[i] == x[i]);
                sent++;
                min_sent = fminf(min_sent, fabsf(x[i]));
            } else {
                max_left = fmaxf(max_left, fabsf(x[i]));
            }
        }
        float *sorted = malloc(n * sizeof *sorted);
        memcpy(sorted, x, n * sizeof *x);
        qsort(sorted, n, sizeof *sorted, by_abs_desc);
        assert_true(sent == k || fabsf(sorted[k - 1]) == 0); /* a sent 0 reads as unsent */
        assert_true(min_sent >= max_left || sent < k);
        assert_true(fabsf(sorted[k - 1]) <= min_sent || sent < k);
        free(sorted);
        break;
    }
    case MM_CODEC_RANDK:
        break; /* checked with its key in randk_indices */
    }
    mm_codec_free(c);
}

static void round_trips(void **state)
{
    (void)state;
    uint64_t sizes_[] = {1, 7, 8, 9, 255, 256, 257, 3077, 20011, 70001};
    mm_rng r;
    mm_rng_seed(&r, 5);
    for (size_t si = 0; si < sizeof sizes_ / sizeof sizes_[0]; si++) {
        uint64_t n = sizes_[si];
        float *x = malloc(n * sizeof *x), *q = malloc(n * sizeof *q);
        fill(&r, x, n, 1.0);
        for (size_t s = 0; s < N_SPECS; s++) {
            mm_codec *c = make(all_specs[s], n);
            size_t len;
            uint8_t *p = encode(c, x, NULL, 42, &len);
            char why[256];
            assert_true(len >= mm_codec_min_len(mm_codec_get_spec(c), n));
            assert_true(len <= mm_codec_max_len(mm_codec_get_spec(c), n));
            if (mm_codec_decode(c, p, len, q, why, sizeof why) != MM_CODEC_OK)
                fail_msg("%s n=%llu: %s", all_specs[s], (unsigned long long)n, why);
            check_bound(all_specs[s], x, q, n);
            free(p);
            mm_codec_free(c);
        }
        free(x), free(q);
    }
}

/* top-k's sampled path (n >= 2^20) and its exact path with ties */
static void topk_selection(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 11);
    uint64_t n = 1u << 20;
    float *x = malloc(n * sizeof *x), *q = malloc(n * sizeof *q);
    fill(&r, x, n, 1.0);
    const char *specs[] = {"topk:0.001", "topk:0.01", "topk:0.2"};
    for (int s = 0; s < 3; s++) {
        mm_codec *c = make(specs[s], n);
        size_t len;
        char why[256];
        uint8_t *p = encode(c, x, NULL, 0, &len);
        assert_int_equal(mm_codec_decode(c, p, len, q, why, sizeof why), MM_CODEC_OK);
        check_bound(specs[s], x, q, n);
        free(p);
        mm_codec_free(c);
    }
    /* the sampled path and the exact radix select choose the same, with a
     * ref too (what CHOCO encodes) */
    float *ref = malloc(n * sizeof *ref), *ref2 = malloc(n * sizeof *ref2);
    fill(&r, ref, n, 0.5);
    for (int s = 0; s < 3; s++) {
        mm_codec *c = make(specs[s], n);
        uint8_t *p1 = malloc(mm_codec_max_bytes(c)), *p2 = malloc(mm_codec_max_bytes(c));
        size_t l1, l2;
        uint32_t c1, c2;
        char why[256];
        memcpy(ref2, ref, n * sizeof *ref);
        assert_int_equal(mm_codec_encode(c, x, ref, 0, p1, mm_codec_max_bytes(c), &l1, &c1, why,
                                         sizeof why), MM_CODEC_OK);
        assert_false(c->last_exact); /* the sample did its job */
        mm_codec_topk_exact_only(c, true);
        assert_int_equal(mm_codec_encode(c, x, ref2, 0, p2, mm_codec_max_bytes(c), &l2, &c2, why,
                                         sizeof why), MM_CODEC_OK);
        assert_int_equal(l1, l2);
        assert_memory_equal(p1, p2, l1);
        assert_int_equal(c1, c2);
        free(p1), free(p2);
        mm_codec_free(c);
    }
    free(ref), free(ref2);
    /* all |x| equal: the sample cannot separate them; ties go to the lowest
     * indices */
    for (uint64_t i = 0; i < n; i++)
        x[i] = (i % 3) ? 0.5f : -0.5f;
    mm_codec *c = make("topk:0.01", n);
    size_t len;
    char why[256];
    uint8_t *p = encode(c, x, NULL, 0, &len);
    assert_true(c->last_exact); /* the sample could not separate them */
    assert_int_equal(mm_codec_decode(c, p, len, q, why, sizeof why), MM_CODEC_OK);
    uint64_t k = mm_codec_k(mm_codec_get_spec(c), n);
    for (uint64_t i = 0; i < n; i++)
        assert_true(q[i] == (i < k ? x[i] : 0.0f));
    assert_int_equal(len, 4 * k + k); /* gaps of 0: one byte each */
    free(p);
    mm_codec_free(c);
    free(x), free(q);
}

static void randk_indices(void **state)
{
    (void)state;
    uint64_t n = 10007;
    float *x = malloc(n * sizeof *x), *q = malloc(n * sizeof *q);
    for (uint64_t i = 0; i < n; i++)
        x[i] = (float)i + 1;
    mm_codec *c = make("randk:0.05", n);
    uint64_t k = mm_codec_k(mm_codec_get_spec(c), n), key = mm_codec_key(1, 2, 3);
    size_t len;
    char why[256];
    uint8_t *p = encode(c, x, NULL, key, &len);
    assert_int_equal(mm_codec_decode(c, p, len, q, why, sizeof why), MM_CODEC_OK);
    uint64_t sent = 0, prev = 0;
    for (uint64_t s = 0; s < k; s++) {
        uint64_t i = mm_codec_randk_index(key, s, k, n);
        assert_true(i >= s * n / k && i < (s + 1) * n / k); /* its stratum */
        assert_true(s == 0 || i > prev);
        assert_true(q[i] == x[i]);
        prev = i;
    }
    for (uint64_t i = 0; i < n; i++)
        sent += q[i] != 0;
    assert_int_equal(sent, k);
    /* another key, other coordinates */
    uint64_t same = 0, key2 = mm_codec_key(1, 2, 4);
    for (uint64_t s = 0; s < k; s++)
        same += mm_codec_randk_index(key, s, k, n) == mm_codec_randk_index(key2, s, k, n);
    assert_true(same < k / 2);
    free(p), free(x), free(q);
    mm_codec_free(c);
}

/* ---- payloads written from docs/protocol.md, byte by byte ----------------- */

static void put_f32(uint8_t *p, float f) { memcpy(p, &f, 4); } /* host is little-endian */

static void documented_layouts(void **state)
{
    (void)state;
    char why[256];
    float q[10];
    /* bf16: u16 per float, the upper half of the binary32 */
    {
        mm_codec *c = make("bf16", 3);
        uint8_t p[6] = {0x80, 0x3f, 0x00, 0xc0, 0x49, 0x40}; /* 1.0, -2.0, 3.140625 */
        assert_int_equal(mm_codec_decode(c, p, 6, q, why, sizeof why), MM_CODEC_OK);
        assert_true(q[0] == 1.0f && q[1] == -2.0f && q[2] == 3.140625f);
        mm_codec_free(c);
    }
    /* int8:8 on 10 floats: 2 scales, then 10 codes */
    {
        mm_codec *c = make("int8:8", 10);
        uint8_t p[8 + 10];
        put_f32(p, 0.5f);
        put_f32(p + 4, 0.25f);
        int8_t codes[10] = {1, -1, 127, -127, 0, 2, 3, 4, 8, -4};
        memcpy(p + 8, codes, 10);
        assert_int_equal(mm_codec_decode(c, p, sizeof p, q, why, sizeof why), MM_CODEC_OK);
        for (int i = 0; i < 10; i++)
            assert_true(q[i] == (float)codes[i] * (i < 8 ? 0.5f : 0.25f));
        mm_codec_free(c);
    }
    /* sign:8 on 10 floats: 2 scales, then 2 bytes of bits, LSB first */
    {
        mm_codec *c = make("sign:8", 10);
        uint8_t p[8 + 2];
        put_f32(p, 0.5f);
        put_f32(p + 4, 2.0f);
        p[8] = 0x05;  /* coordinates 0 and 2 negative */
        p[9] = 0x02;  /* coordinate 9 negative; bits 2..7 unused, zero */
        assert_int_equal(mm_codec_decode(c, p, sizeof p, q, why, sizeof why), MM_CODEC_OK);
        float want[10] = {-0.5f, 0.5f, -0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 2.0f, -2.0f};
        assert_memory_equal(q, want, sizeof want);
        mm_codec_free(c);
    }
    /* topk:0.3 on 10 floats: k = 3; values, then LEB128 gaps (index - previous - 1) */
    {
        mm_codec *c = make("topk:0.3", 10);
        uint8_t p[12 + 3];
        put_f32(p, 1.5f);
        put_f32(p + 4, -2.0f);
        put_f32(p + 8, 4.0f);
        p[12] = 1;   /* index 1 */
        p[13] = 3;   /* index 5 */
        p[14] = 3;   /* index 9 */
        assert_int_equal(mm_codec_decode(c, p, sizeof p, q, why, sizeof why), MM_CODEC_OK);
        float want[10] = {0, 1.5f, 0, 0, 0, -2.0f, 0, 0, 0, 4.0f};
        assert_memory_equal(q, want, sizeof want);
        mm_codec_free(c);
    }
    /* a two-byte gap: 300 = 0xAC 0x02 */
    {
        mm_codec *c = make("topk:0.001", 1000);
        uint8_t p[4 + 2];
        put_f32(p, 7.0f);
        p[4] = 0xAC;
        p[5] = 0x02;
        float *big = calloc(1000, sizeof *big);
        assert_int_equal(mm_codec_decode(c, p, sizeof p, big, why, sizeof why), MM_CODEC_OK);
        assert_true(big[300] == 7.0f);
        free(big);
        mm_codec_free(c);
    }
    /* randk:0.2 on 10 floats: key, then k = 2 values at the key's indices */
    {
        mm_codec *c = make("randk:0.2", 10);
        uint8_t p[8 + 8];
        uint64_t key = 0x0123456789abcdefULL;
        memcpy(p, &key, 8);
        put_f32(p + 8, 3.0f);
        put_f32(p + 12, -1.0f);
        assert_int_equal(mm_codec_decode(c, p, sizeof p, q, why, sizeof why), MM_CODEC_OK);
        /* splitmix64 outputs for this key, computed independently */
        uint64_t z0 = key + 0x9E3779B97F4A7C15ULL, z1 = key + 2 * 0x9E3779B97F4A7C15ULL;
        uint64_t zs[2] = {z0, z1};
        for (int s = 0; s < 2; s++) {
            uint64_t z = zs[s];
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
            z ^= z >> 31;
            uint64_t lo = (uint64_t)s * 10 / 2, size = (uint64_t)(s + 1) * 10 / 2 - lo;
            uint64_t i = lo + (((z >> 32) * size) >> 32);
            assert_true(q[i] == (s ? -1.0f : 3.0f));
        }
        mm_codec_free(c);
    }
}

/* ---- CHOCO: the sender's ref and a receiver's copy stay identical ---------- */

static void ref_equals_copy(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 77);
    uint64_t n = 10007;
    float *x = malloc(n * sizeof *x), *ref = calloc(n, sizeof *ref), *copy = calloc(n, sizeof *copy);
    float *copy2 = calloc(n, sizeof *copy2); /* the peer's way: check, then apply_checked */
    for (size_t s = 0; s < N_SPECS; s++) {
        mm_codec *c = make(all_specs[s], n);
        memset(ref, 0, n * sizeof *ref);
        memset(copy, 0, n * sizeof *copy);
        memset(copy2, 0, n * sizeof *copy2);
        uint8_t *p = malloc(mm_codec_max_bytes(c));
        double start = 0, end = 0;
        fill(&r, x, n, 1.0);
        for (uint64_t i = 0; i < n; i++)
            start += (double)x[i] * x[i]; /* ||x - ref||^2 with ref = 0 */
        for (int round = 0; round < 100; round++) {
            for (uint64_t i = 0; i < n; i++) /* a target that moves a little */
                x[i] += (float)(0.001 * mm_rng_normal(&r));
            size_t len;
            uint32_t crc_ref = 1, crc_copy = 2;
            char why[256];
            assert_int_equal(mm_codec_encode(c, x, ref, mm_codec_key(9, 1, (uint64_t)round), p,
                                             mm_codec_max_bytes(c), &len, &crc_ref, why,
                                             sizeof why), MM_CODEC_OK);
            assert_int_equal(mm_codec_apply(c, p, len, copy, &crc_copy, why, sizeof why),
                             MM_CODEC_OK);
            assert_memory_equal(ref, copy, n * sizeof *ref);
            assert_int_equal(crc_ref, crc_copy);
            uint32_t crc_copy2 = 3;
            assert_int_equal(mm_codec_check(c, p, len, why, sizeof why), MM_CODEC_OK);
            assert_int_equal(mm_codec_apply_checked(c, p, len, copy2, &crc_copy2, why,
                                                    sizeof why), MM_CODEC_OK);
            assert_memory_equal(ref, copy2, n * sizeof *ref);
            assert_int_equal(crc_ref, crc_copy2);
            assert_int_equal(crc_ref, mm_crc32c(0, ref, n * sizeof *ref));
            double d2 = 0;
            for (uint64_t i = 0; i < n; i++)
                d2 += ((double)x[i] - ref[i]) * ((double)x[i] - ref[i]);
            end = d2;
        }
        /* error feedback: ref tracks x, so the residual is below the first */
        if (!(end < 0.9 * start))
            fail_msg("%s: residual %g of %g after 100 rounds", all_specs[s], end, start);
        free(p);
        mm_codec_free(c);
    }
    free(x), free(ref), free(copy), free(copy2);
}

/* A vector encoded in parts (a streamed q, docs/protocol.md 6.10) gives
 * exactly the floats of the whole encode: the ref after every round, and
 * a copy that applies the parts equals it, with the per-part CRCs of the
 * ref; each part checks on its own, and one a byte short does not; the
 * sparse codecs and parts off a block boundary are refused. */
static void parts_equal_whole(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 78);
    uint64_t n = 10007, chunk = 4096; /* parts of 4096, 4096 and 1815 floats */
    float *x = malloc(n * sizeof *x), *ref = calloc(n, sizeof *ref),
          *ref2 = calloc(n, sizeof *ref2), *copy = calloc(n, sizeof *copy);
    static const char *dense[] = {"fp32", "bf16", "int8", "int8:32", "int8:4096", "sign",
                                  "sign:8", "sign:256"};
    char why[256];
    for (size_t s = 0; s < sizeof dense / sizeof dense[0]; s++) {
        mm_codec *c = make(dense[s], n);
        assert_true(mm_codec_splits(mm_codec_get_spec(c)));
        memset(ref, 0, n * sizeof *ref);
        memset(ref2, 0, n * sizeof *ref2);
        memset(copy, 0, n * sizeof *copy);
        uint8_t *whole = malloc(mm_codec_max_bytes(c)), *part = malloc(mm_codec_max_bytes(c));
        fill(&r, x, n, 1.0);
        for (int round = 0; round < 5; round++) {
            for (uint64_t i = 0; i < n; i++)
                x[i] += (float)(0.01 * mm_rng_normal(&r));
            size_t len;
            assert_int_equal(mm_codec_encode(c, x, ref, 0, whole, mm_codec_max_bytes(c), &len,
                                             NULL, why, sizeof why), MM_CODEC_OK);
            for (uint64_t off = 0; off < n; off += chunk) {
                uint64_t cnt = n - off < chunk ? n - off : chunk;
                size_t plen;
                uint32_t crc = 0, crc2 = 1;
                assert_int_equal(mm_codec_encode_part(c, x, ref2, off, cnt, part,
                                                      mm_codec_part_len(mm_codec_get_spec(c), cnt),
                                                      &plen, &crc, why, sizeof why), MM_CODEC_OK);
                assert_int_equal(plen, mm_codec_part_len(mm_codec_get_spec(c), cnt));
                assert_int_equal(crc, mm_crc32c(0, ref2 + off, cnt * sizeof *ref2));
                assert_int_equal(mm_codec_check_part(c, cnt, part, plen, why, sizeof why),
                                 MM_CODEC_OK);
                assert_int_equal(mm_codec_apply_part_checked(c, cnt, part, plen, copy + off,
                                                             &crc2, why, sizeof why), MM_CODEC_OK);
                assert_int_equal(crc, crc2);
                assert_int_not_equal(mm_codec_check_part(c, cnt, part, plen - 1, why, sizeof why),
                                     MM_CODEC_OK);
            }
            assert_memory_equal(ref, ref2, n * sizeof *ref);
            assert_memory_equal(ref, copy, n * sizeof *ref);
        }
        /* off a block boundary, or past the end: refused, nothing written */
        size_t plen = 99;
        uint64_t B = mm_codec_get_spec(c)->block;
        if (B > 1) {
            assert_int_equal(mm_codec_encode_part(c, x, ref2, B / 2, B, part, mm_codec_max_bytes(c),
                                                  &plen, NULL, why, sizeof why), MM_CODEC_E_INPUT);
            assert_int_equal(plen, 0);
        }
        assert_int_equal(mm_codec_encode_part(c, x, ref2, n - 8, 16, part, mm_codec_max_bytes(c),
                                              &plen, NULL, why, sizeof why), MM_CODEC_E_INPUT);
        assert_memory_equal(ref, ref2, n * sizeof *ref);
        free(whole), free(part);
        mm_codec_free(c);
    }
    mm_codec *t = make("topk:0.01", n);
    size_t plen;
    assert_false(mm_codec_splits(mm_codec_get_spec(t)));
    assert_int_equal(mm_codec_encode_part(t, x, ref, 0, 4096, (uint8_t *)copy, 4 * n, &plen,
                                          NULL, why, sizeof why), MM_CODEC_E_INPUT);
    assert_int_equal(mm_codec_check_part(t, 4096, (const uint8_t *)copy, 100, why, sizeof why),
                     MM_CODEC_E_LENGTH);
    mm_codec_free(t);
    free(x), free(ref), free(ref2), free(copy);
}

/* ---- untrusted payloads ---------------------------------------------------- */

static void expect_refused(mm_codec *c, const uint8_t *p, size_t len, mm_codec_err want,
                           const char *says)
{
    uint64_t n = mm_codec_n(c);
    float *copy = malloc(n * sizeof *copy), *before = malloc(n * sizeof *before);
    for (uint64_t i = 0; i < n; i++)
        copy[i] = before[i] = (float)i * 0.25f;
    char why[256] = "";
    mm_codec_err e = mm_codec_apply(c, p, len, copy, NULL, why, sizeof why);
    if ((int)want == -1 && e != MM_CODEC_OK) /* any refusal will do */
        want = e;
    if (e != want || !strstr(why, says))
        fail_msg("%s: got %s (%s), expected %s saying '%s'",
                 mm_codec_kind_name(mm_codec_get_spec(c)->kind), mm_codec_err_name(e), why,
                 mm_codec_err_name(want), says);
    assert_memory_equal(copy, before, n * sizeof *copy); /* untouched */
    assert_int_equal(mm_codec_check(c, p, len, why, sizeof why), want);
    assert_int_equal(mm_codec_decode(c, p, len, copy, why, sizeof why), want);
    assert_memory_equal(copy, before, n * sizeof *copy);
    free(copy), free(before);
}

static void bad_lengths(void **state)
{
    (void)state;
    uint64_t n = 100;
    float x[100];
    for (int i = 0; i < 100; i++)
        x[i] = (float)(i - 50);
    for (size_t s = 0; s < N_SPECS; s++) {
        mm_codec *c = make(all_specs[s], n);
        size_t len;
        uint8_t *p = encode(c, x, NULL, 3, &len);
        /* one byte short, one byte long, empty */
        /* top-k: a short index stream or a short payload, depending on k */
        expect_refused(c, p, len - 1, mm_codec_get_spec(c)->kind == MM_CODEC_TOPK
                                          ? (mm_codec_err)-1 : MM_CODEC_E_LENGTH, "");
        p = realloc(p, len + 1);
        p[len] = 0;
        expect_refused(c, p, len + 1, MM_CODEC_E_LENGTH, "");
        expect_refused(c, p, 0, MM_CODEC_E_LENGTH, "payload of 0 bytes");
        free(p);
        mm_codec_free(c);
    }
}

static void bad_values(void **state)
{
    (void)state;
    uint64_t n = 20;
    float x[20];
    for (int i = 0; i < 20; i++)
        x[i] = (float)(i - 10) * 0.1f;
    size_t len;
    uint8_t *p;
    mm_codec *c;

    c = make("fp32", n);
    p = encode(c, x, NULL, 0, &len);
    put_f32(p + 4 * 7, NAN);
    expect_refused(c, p, len, MM_CODEC_E_VALUE, "value 7 of 20 is NaN or infinite");
    put_f32(p + 4 * 7, -INFINITY);
    expect_refused(c, p, len, MM_CODEC_E_VALUE, "value 7");
    free(p), mm_codec_free(c);

    c = make("bf16", n);
    p = encode(c, x, NULL, 0, &len);
    p[2 * 3] = 0x80, p[2 * 3 + 1] = 0x7f; /* +Inf */
    expect_refused(c, p, len, MM_CODEC_E_VALUE, "bf16 value 3 of 20");
    p[2 * 3] = 0xc1, p[2 * 3 + 1] = 0xff; /* a NaN */
    expect_refused(c, p, len, MM_CODEC_E_VALUE, "bf16 value 3");
    free(p), mm_codec_free(c);

    c = make("int8:8", n); /* 3 blocks */
    p = encode(c, x, NULL, 0, &len);
    float scales[] = {NAN, INFINITY, -1.0f, -0.0f, 0x1p121f};
    for (int i = 0; i < 5; i++) {
        uint8_t save[4];
        memcpy(save, p + 4, 4);
        put_f32(p + 4, scales[i]);
        expect_refused(c, p, len, MM_CODEC_E_SCALE, "scale of block 1 of 3");
        memcpy(p + 4, save, 4);
    }
    p[12 + 5] = 0x80;
    expect_refused(c, p, len, MM_CODEC_E_VALUE, "int8 code 5 of 20 is -128");
    free(p), mm_codec_free(c);

    c = make("sign:8", n); /* 3 blocks, 3 bytes of bits, 4 unused bits */
    p = encode(c, x, NULL, 0, &len);
    put_f32(p + 8, -INFINITY);
    expect_refused(c, p, len, MM_CODEC_E_SCALE, "scale of block 2 of 3");
    put_f32(p + 8, 1.0f);
    p[len - 1] |= 0x10;
    expect_refused(c, p, len, MM_CODEC_E_PADDING, "unused bits");
    free(p), mm_codec_free(c);

    c = make("randk:0.25", n); /* k = 5 */
    p = encode(c, x, NULL, 99, &len);
    put_f32(p + 8 + 4 * 4, NAN);
    expect_refused(c, p, len, MM_CODEC_E_VALUE, "randk value 4 of 5");
    free(p), mm_codec_free(c);
}

static void bad_indices(void **state)
{
    (void)state;
    mm_codec *c = make("topk:0.3", 10); /* k = 3: 12 bytes of values, then gaps */
    uint8_t p[32];
    for (int i = 0; i < 3; i++)
        put_f32(p + 4 * i, 1.0f + (float)i);
    struct { uint8_t gaps[8]; size_t n; mm_codec_err e; const char *says; } cases[] = {
        {{0, 0, 8}, 3, MM_CODEC_E_INDEX, "index 2 of 3 is 10, past the last coordinate 9"},
        {{10, 0, 0}, 3, MM_CODEC_E_INDEX, "index 0 of 3 is 10"},
        {{0x80, 0x00, 0, 0}, 4, MM_CODEC_E_INDEX, "malformed varint"},        /* not minimal */
        {{0, 0, 0x81}, 3, MM_CODEC_E_INDEX, "index 2 of 3: varint cut short"},
        {{0, 0}, 2, MM_CODEC_E_LENGTH, "expected 15 to 27"},                 /* too short */
        {{0, 0, 0, 0}, 4, MM_CODEC_E_LENGTH, "1 bytes after the last"},
        {{0xff, 0xff, 0xff, 0xff, 0x1f, 0, 0}, 7, MM_CODEC_E_INDEX, "malformed"}, /* >= 2^32 */
        {{0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0}, 7, MM_CODEC_E_INDEX, "past the last"},
        {{0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0}, 8, MM_CODEC_E_INDEX, "malformed"}, /* 6 bytes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(p + 12, cases[i].gaps, cases[i].n);
        expect_refused(c, p, 12 + cases[i].n, cases[i].e, cases[i].says);
    }
    put_f32(p + 4, INFINITY);
    memcpy(p + 12, (uint8_t[]){0, 0, 0}, 3);
    expect_refused(c, p, 15, MM_CODEC_E_VALUE, "topk value 1 of 3");
    mm_codec_free(c);
}

static void encoder_errors(void **state)
{
    (void)state;
    uint64_t n = 50;
    float x[50], ref[50] = {0};
    for (int i = 0; i < 50; i++)
        x[i] = (float)i;
    for (size_t s = 0; s < N_SPECS; s++) {
        mm_codec *c = make(all_specs[s], n);
        uint8_t *p = malloc(mm_codec_max_bytes(c));
        size_t len;
        char why[256] = "";
        assert_int_equal(mm_codec_encode(c, x, NULL, 0, p, mm_codec_max_bytes(c) - 1, &len,
                                         NULL, why, sizeof why), MM_CODEC_E_SPACE);
        float keep = x[0];
        x[0] = NAN;
        if (mm_codec_get_spec(c)->kind != MM_CODEC_RANDK) /* randk may not sample it */
            assert_int_equal(mm_codec_encode(c, x, ref, 0, p, mm_codec_max_bytes(c), &len,
                                             NULL, why, sizeof why), MM_CODEC_E_INPUT);
        x[0] = keep;
        free(p);
        mm_codec_free(c);
    }
}

/* int8's AVX-512 kernels (where the CPU has them) and the portable loops
 * give the same payload, ref, copy and CRCs bit for bit, whole and in
 * parts, on lengths that end inside a 16-float step, on all-zero and
 * tiny blocks, and report the same overflow; on a CPU without AVX-512
 * both runs take the portable loops. */
static void int8_kernels_agree(void **state)
{
    (void)state;
    static const char *specs[] = {"int8", "int8:8", "int8:32", "int8:4096"};
    static const uint64_t lens[] = {1, 15, 16, 17, 63, 65, 255, 257, 1000, 10007};
    mm_rng r;
    mm_rng_seed(&r, 2025);
    char why[256];
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++)
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            uint64_t n = lens[l];
            mm_codec *c = make(specs[s], n);
            size_t cap = mm_codec_max_bytes(c);
            float *x = malloc(n * sizeof *x), *ref[2], *copy[2];
            uint8_t *p[2];
            for (int k = 0; k < 2; k++) {
                ref[k] = calloc(n, sizeof *ref[k]);
                copy[k] = calloc(n, sizeof *copy[k]);
                p[k] = malloc(cap);
            }
            fill(&r, x, n, 1.0);
            for (int round = 0; round < 12; round++) {
                for (uint64_t i = 0; i < n; i++)
                    x[i] += (float)(0.01 * mm_rng_normal(&r));
                if (round == 3) /* x = ref: all-zero differences */
                    memcpy(x, ref[0], n * sizeof *x);
                if (round == 5) /* differences so small that 127 / max overflows */
                    for (uint64_t i = 0; i < n; i++)
                        x[i] = ref[0][i] + (i % 2 ? 1e-44f : 0);
                size_t len[2];
                uint32_t crc[2], ccrc[2];
                for (int k = 0; k < 2; k++) {
                    mm_codec_use_portable(k == 0);
                    assert_int_equal(mm_codec_encode(c, x, ref[k], 0, p[k], cap, &len[k], &crc[k],
                                                     why, sizeof why), MM_CODEC_OK);
                    assert_int_equal(mm_codec_apply(c, p[k], len[k], copy[k], &ccrc[k], why,
                                                    sizeof why), MM_CODEC_OK);
                }
                assert_int_equal(len[0], len[1]);
                assert_memory_equal(p[0], p[1], len[0]);
                assert_memory_equal(ref[0], ref[1], n * sizeof *ref[0]);
                assert_memory_equal(copy[0], copy[1], n * sizeof *copy[0]);
                assert_memory_equal(ref[0], copy[0], n * sizeof *ref[0]);
                assert_int_equal(crc[0], crc[1]);
                assert_int_equal(ccrc[0], ccrc[1]);
                /* decoding into a vector (no copy) agrees too */
                for (int k = 0; k < 2; k++) {
                    mm_codec_use_portable(k == 0);
                    assert_int_equal(mm_codec_decode(c, p[0], len[0], copy[k], why, sizeof why),
                                     MM_CODEC_OK);
                }
                assert_memory_equal(copy[0], copy[1], n * sizeof *copy[0]);
                memcpy(copy[0], ref[0], n * sizeof *ref[0]);
                memcpy(copy[1], ref[0], n * sizeof *ref[0]);
            }
            /* a copy driven to infinity: both report it at the same block */
            for (uint64_t i = 0; i < n; i++)
                x[i] = ref[0][i] + (i == n - 1 ? 1e38f : 0);
            size_t len;
            mm_codec_use_portable(true);
            assert_int_equal(mm_codec_encode(c, x, NULL, 0, p[0], cap, &len, NULL, why,
                                             sizeof why), MM_CODEC_OK);
            char why2[256];
            for (int k = 0; k < 2; k++) {
                mm_codec_use_portable(k == 0);
                for (uint64_t i = 0; i < n; i++)
                    copy[k][i] = 3e38f;
                assert_int_equal(mm_codec_apply(c, p[0], len, copy[k], NULL, k ? why2 : why,
                                                sizeof why), MM_CODEC_E_OVERFLOW);
            }
            assert_string_equal(why, why2);
            mm_codec_use_portable(false);
            for (int k = 0; k < 2; k++)
                free(ref[k]), free(copy[k]), free(p[k]);
            free(x);
            mm_codec_free(c);
        }
}

/* A finite payload that would drive a copy to infinity is reported. */
static void copy_overflow(void **state)
{
    (void)state;
    uint64_t n = 16;
    float x[16], copy[16];
    for (int i = 0; i < 16; i++)
        x[i] = 1e38f;
    const char *specs[] = {"fp32", "bf16", "int8:8", "sign:8", "topk:1", "randk:1"};
    for (int s = 0; s < 6; s++) {
        mm_codec *c = make(specs[s], n);
        size_t len;
        uint8_t *p = encode(c, x, NULL, 0, &len);
        for (int i = 0; i < 16; i++)
            copy[i] = 3e38f;
        char why[256];
        mm_codec_err e = mm_codec_apply(c, p, len, copy, NULL, why, sizeof why);
        /* fp32 replaces the copy: nothing to overflow */
        assert_int_equal(e, s == 0 ? MM_CODEC_OK : MM_CODEC_E_OVERFLOW);
        free(p);
        mm_codec_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_and_format),
        cmocka_unit_test(sizes),
        cmocka_unit_test(round_trips),
        cmocka_unit_test(topk_selection),
        cmocka_unit_test(randk_indices),
        cmocka_unit_test(documented_layouts),
        cmocka_unit_test(ref_equals_copy),
        cmocka_unit_test(parts_equal_whole),
        cmocka_unit_test(bad_lengths),
        cmocka_unit_test(bad_values),
        cmocka_unit_test(bad_indices),
        cmocka_unit_test(encoder_errors),
        cmocka_unit_test(copy_overflow),
        cmocka_unit_test(int8_kernels_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
