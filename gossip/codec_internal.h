/* Internals shared by the codec's files: codec.c (specs, sizes, dispatch),
 * codec_dense.c (fp32, bf16, int8, sign) and codec_sparse.c (topk, randk).
 *
 * Every file that computes a decoded value or a copy update is compiled
 * with floating-point contraction off (mk/codec.mk, and the pragma below
 * for clang), so that no build fuses copy + code * scale into one FMA: the
 * sender and its receivers, built by different compilers or running
 * different clones of a kernel, must round the same way. */
#ifndef MURMUR_CODEC_INTERNAL_H
#define MURMUR_CODEC_INTERNAL_H

#include "gossip/codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "codec payloads are little-endian and copied as host words"
#endif

/* Kernels worth two builds, baseline x86-64 and AVX2, the CPU choosing at
 * load time (as model/hot.h; no -march=native anywhere). */
#if defined(__x86_64__) && defined(__clang__) && !defined(MM_NO_CLONES)
#define MM_CODEC_HOT __attribute__((target_clones("avx2", "default")))
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(MM_NO_CLONES)
#define MM_CODEC_HOT __attribute__((target_clones("avx2", "default")))
#else
#define MM_CODEC_HOT
#endif

/* Floats per chunk of a dense pass: 12 KB, three of CRC32C's 4 KB chains,
 * so a fused checksum of what was just written runs at full speed from L1. */
#define MM_CODEC_CHUNK 3072

/* int8 scales stay at or below 2^120, so 127 * scale is finite. */
#define MM_CODEC_INT8_SCALE_MAX 0x1p120f

struct mm_codec {
    mm_codec_spec spec;
    uint64_t n;        /* floats per vector */
    uint64_t k;        /* coordinates sent (sparse), n (dense) */
    uint64_t nb;       /* blocks (int8, sign), else 0 */
    size_t min_bytes, max_bytes;
    size_t ws_bytes;
    /* top-k workspace, allocated once (codec_sparse.c) */
    uint32_t *cand_idx;
    float *cand_val;
    uint64_t cand_cap;
    float *sample;
    uint32_t sample_n;
    uint32_t *hist;    /* 2048 counters for the radix select */
    bool exact_only;   /* top-k: skip the sample (tests, measurements) */
    bool last_exact;   /* top-k: the last encode took the exact path */
};

/* Top-k without the sampled shortcut: the exact radix select over the whole
 * vector, always. Both paths must give the same payload (tests/test_codec.c);
 * the benchmarks time them against each other. */
static inline void mm_codec_topk_exact_only(mm_codec *c, bool on) { c->exact_only = on; }

/* why-buffer helper: formats the reason, returns e. */
static inline mm_codec_err mm_codec_fail(char *why, size_t whylen, mm_codec_err e,
                                         const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline mm_codec_err mm_codec_fail(char *why, size_t whylen, mm_codec_err e,
                                         const char *fmt, ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return e;
}

static inline uint32_t mm_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float mm_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline float mm_ldf(const uint8_t *p) { float f; memcpy(&f, p, 4); return f; }
static inline void mm_stf(uint8_t *p, float f) { memcpy(p, &f, 4); }
static inline uint64_t mm_ld64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline void mm_st64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Internal to gossip/ (mm__ names: local to the room's object).
 * codec_dense.c: fp32, bf16, int8, sign. apply: 0 decode into dst (=),
 * 1 CHOCO copy update. */
mm_codec_err mm__codec_dense_encode(mm_codec *c, const float *x, float *ref, uint8_t *out,
                                   size_t *len, uint32_t *crc, char *why, size_t whylen);
mm_codec_err mm__codec_dense_check(const mm_codec *c, const uint8_t *p, size_t len,
                                  char *why, size_t whylen);
mm_codec_err mm__codec_dense_decode(const mm_codec *c, const uint8_t *p, float *dst, int apply,
                                   uint32_t *crc, char *why, size_t whylen);

/* codec_sparse.c: topk, randk. */
int mm__codec_sparse_init(mm_codec *c, char *err, size_t errlen);
void mm__codec_sparse_free(mm_codec *c);
mm_codec_err mm__codec_sparse_encode(mm_codec *c, const float *x, float *ref, uint64_t key,
                                    uint8_t *out, size_t *len, char *why, size_t whylen);
mm_codec_err mm__codec_sparse_check(const mm_codec *c, const uint8_t *p, size_t len,
                                   char *why, size_t whylen);
mm_codec_err mm__codec_sparse_decode(const mm_codec *c, const uint8_t *p, size_t len,
                                    float *dst, int apply, char *why, size_t whylen);

#endif
