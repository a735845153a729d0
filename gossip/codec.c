/* Codec specs (parse, canonical form), payload sizes, and the entry points
 * that route each call to the dense (codec_dense.c) or sparse
 * (codec_sparse.c) implementation. */
#include "gossip/codec_internal.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "base/crc32c.h"
#include "base/text.h"

static const struct {
    const char *name;
    mm_codec_kind kind;
} kinds[] = {
    {"fp32", MM_CODEC_FP32}, {"bf16", MM_CODEC_BF16}, {"int8", MM_CODEC_INT8},
    {"topk", MM_CODEC_TOPK}, {"randk", MM_CODEC_RANDK}, {"sign", MM_CODEC_SIGN},
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])
#define KNOWN "fp32, bf16, int8[:BLOCK], sign[:BLOCK], topk:F, randk:F"

const char *mm_codec_kind_name(mm_codec_kind kind)
{
    for (size_t i = 0; i < N_KINDS; i++)
        if (kinds[i].kind == kind)
            return kinds[i].name;
    return "?";
}

static bool is_blocked(mm_codec_kind k) { return k == MM_CODEC_INT8 || k == MM_CODEC_SIGN; }
static bool is_sparse(mm_codec_kind k) { return k == MM_CODEC_TOPK || k == MM_CODEC_RANDK; }

static bool spec_valid(const mm_codec_spec *s)
{
    if (!s)
        return false;
    if (is_blocked(s->kind))
        return s->block >= MM_CODEC_BLOCK_MIN && s->block <= MM_CODEC_BLOCK_MAX &&
               (s->block & (s->block - 1)) == 0;
    if (is_sparse(s->kind))
        return s->frac > 0 && s->frac <= 1;
    return s->kind == MM_CODEC_FP32 || s->kind == MM_CODEC_BF16;
}

int mm_codec_parse(const char *text, mm_codec_spec *spec, char *err, size_t errlen)
{
    if (!text)
        text = "";
    const char *colon = strchr(text, ':');
    size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
    const char *arg = colon ? colon + 1 : NULL;
    mm_codec_spec s = {0};
    size_t i = 0;
    for (; i < N_KINDS; i++)
        if (strlen(kinds[i].name) == name_len && !strncmp(text, kinds[i].name, name_len))
            break;
    if (i == N_KINDS) {
        mm_codec_fail(err, errlen, MM_CODEC_E_INPUT, "unknown codec '%.*s' (known: " KNOWN ")",
                      (int)(name_len > 40 ? 40 : name_len), text);
        return -1;
    }
    s.kind = kinds[i].kind;
    if (s.kind == MM_CODEC_FP32 || s.kind == MM_CODEC_BF16) {
        if (arg) {
            mm_codec_fail(err, errlen, MM_CODEC_E_INPUT, "codec %s takes no parameter (got '%s')",
                          kinds[i].name, text);
            return -1;
        }
    } else if (is_blocked(s.kind)) {
        s.block = s.kind == MM_CODEC_INT8 ? MM_CODEC_INT8_BLOCK : MM_CODEC_SIGN_BLOCK;
        if (arg) {
            char *end;
            errno = 0;
            unsigned long b = strtoul(arg, &end, 10);
            if (end == arg || *end || errno || arg[0] == '-' || arg[0] == '+' ||
                b < MM_CODEC_BLOCK_MIN || b > MM_CODEC_BLOCK_MAX || (b & (b - 1))) {
                mm_codec_fail(err, errlen, MM_CODEC_E_INPUT,
                              "%s block '%s' is not a power of two from %d to %d "
                              "(floats per scale, e.g. %s:%d)", kinds[i].name, arg,
                              MM_CODEC_BLOCK_MIN, MM_CODEC_BLOCK_MAX, kinds[i].name,
                              s.kind == MM_CODEC_INT8 ? MM_CODEC_INT8_BLOCK : MM_CODEC_SIGN_BLOCK);
                return -1;
            }
            s.block = (uint32_t)b;
        }
    } else {
        if (!arg || !*arg) {
            mm_codec_fail(err, errlen, MM_CODEC_E_INPUT,
                          "codec %s needs a fraction: %s:F with 0 < F <= 1, e.g. %s:0.01",
                          kinds[i].name, kinds[i].name, kinds[i].name);
            return -1;
        }
        /* decimal only: no hex floats, inf or nan */
        bool ok = true;
        for (const char *q = arg; *q; q++)
            if (!strchr("0123456789.eE-+", *q))
                ok = false;
        char *end;
        errno = 0;
        double f = ok ? strtod(arg, &end) : 0;
        if (!ok || end == arg || *end || errno || !(f > 0 && f <= 1)) {
            mm_codec_fail(err, errlen, MM_CODEC_E_INPUT,
                          "%s fraction '%s' is not a number in (0, 1] (e.g. %s:0.01 sends 1%% "
                          "of the coordinates)", kinds[i].name, arg, kinds[i].name);
            return -1;
        }
        s.frac = f;
    }
    *spec = s;
    return 0;
}

int mm_codec_format(const mm_codec_spec *spec, char *buf, size_t len)
{
    const char *name = mm_codec_kind_name(spec->kind);
    if (is_blocked(spec->kind))
        return snprintf(buf, len, "%s:%u", name, (unsigned)spec->block);
    if (is_sparse(spec->kind)) {
        char num[40]; /* the shortest decimal that reads back as the same double */
        mm_text_double(num, sizeof num, spec->frac);
        return snprintf(buf, len, "%s:%s", name, num);
    }
    return snprintf(buf, len, "%s", name);
}

bool mm_codec_spec_equal(const mm_codec_spec *a, const mm_codec_spec *b)
{
    if (a->kind != b->kind)
        return false;
    if (is_blocked(a->kind))
        return a->block == b->block;
    if (is_sparse(a->kind))
        return a->frac == b->frac;
    return true;
}

uint64_t mm_codec_k(const mm_codec_spec *spec, uint64_t n)
{
    if (!spec_valid(spec) || n < 1 || n > MM_CODEC_MAX_N)
        return 0;
    if (!is_sparse(spec->kind))
        return n;
    double k = ceil(spec->frac * (double)n);
    if (k < 1)
        return 1;
    return k >= (double)n ? n : (uint64_t)k;
}

static uint64_t n_blocks(const mm_codec_spec *spec, uint64_t n)
{
    return (n + spec->block - 1) / spec->block;
}

static uint64_t payload_len(const mm_codec_spec *spec, uint64_t n, bool max)
{
    uint64_t k = mm_codec_k(spec, n);
    if (!k)
        return 0;
    switch (spec->kind) {
    case MM_CODEC_FP32: return 4 * n;
    case MM_CODEC_BF16: return 2 * n;
    case MM_CODEC_INT8: return 4 * n_blocks(spec, n) + n;
    case MM_CODEC_SIGN: return 4 * n_blocks(spec, n) + (n + 7) / 8;
    case MM_CODEC_RANDK: return 8 + 4 * k;
    case MM_CODEC_TOPK: return 4 * k + (max ? 5 : 1) * k; /* a varint is 1..5 bytes */
    }
    return 0;
}

uint64_t mm_codec_min_len(const mm_codec_spec *spec, uint64_t n) { return payload_len(spec, n, false); }
uint64_t mm_codec_max_len(const mm_codec_spec *spec, uint64_t n) { return payload_len(spec, n, true); }

mm_codec *mm_codec_new(const mm_codec_spec *spec, uint64_t n, char *err, size_t errlen)
{
    if (!spec_valid(spec)) {
        mm_codec_fail(err, errlen, MM_CODEC_E_INPUT, "invalid codec spec");
        return NULL;
    }
    if (n < 1 || n > MM_CODEC_MAX_N) {
        mm_codec_fail(err, errlen, MM_CODEC_E_INPUT, "vector of %llu floats: a codec takes 1 to "
                      "%llu", (unsigned long long)n, (unsigned long long)MM_CODEC_MAX_N);
        return NULL;
    }
    mm_codec *c = calloc(1, sizeof *c);
    if (!c) {
        mm_codec_fail(err, errlen, MM_CODEC_E_INPUT, "out of memory");
        return NULL;
    }
    c->spec = *spec;
    c->n = n;
    c->k = mm_codec_k(spec, n);
    c->nb = is_blocked(spec->kind) ? n_blocks(spec, n) : 0;
    c->min_bytes = (size_t)mm_codec_min_len(spec, n);
    c->max_bytes = (size_t)mm_codec_max_len(spec, n);
    c->ws_bytes = sizeof *c;
    if (is_sparse(spec->kind) && mm__codec_sparse_init(c, err, errlen) != 0) {
        mm_codec_free(c);
        return NULL;
    }
    return c;
}

void mm_codec_free(mm_codec *c)
{
    if (!c)
        return;
    mm__codec_sparse_free(c);
    free(c);
}

const mm_codec_spec *mm_codec_get_spec(const mm_codec *c) { return &c->spec; }
uint64_t mm_codec_n(const mm_codec *c) { return c->n; }
size_t mm_codec_max_bytes(const mm_codec *c) { return c->max_bytes; }
size_t mm_codec_workspace_bytes(const mm_codec *c) { return c->ws_bytes; }

const char *mm_codec_err_name(mm_codec_err e)
{
    switch (e) {
    case MM_CODEC_OK: return "ok";
    case MM_CODEC_E_LENGTH: return "bad payload length";
    case MM_CODEC_E_SCALE: return "bad scale";
    case MM_CODEC_E_VALUE: return "bad value";
    case MM_CODEC_E_INDEX: return "bad index";
    case MM_CODEC_E_PADDING: return "bad padding";
    case MM_CODEC_E_INPUT: return "non-finite input";
    case MM_CODEC_E_SPACE: return "output buffer too small";
    case MM_CODEC_E_OVERFLOW: return "copy overflowed";
    }
    return "?";
}

mm_codec_err mm_codec_encode(mm_codec *c, const float *x, float *ref, uint64_t key,
                             uint8_t *out, size_t cap, size_t *len, uint32_t *ref_crc,
                             char *why, size_t whylen)
{
    *len = 0;
    if (cap < c->max_bytes)
        return mm_codec_fail(why, whylen, MM_CODEC_E_SPACE, "output buffer of %zu bytes, "
                             "the codec needs %zu", cap, c->max_bytes);
    if (!is_sparse(c->spec.kind))
        return mm__codec_dense_encode(c, x, ref, out, len, ref_crc, why, whylen);
    mm_codec_err e = mm__codec_sparse_encode(c, x, ref, key, out, len, why, whylen);
    if (e == MM_CODEC_OK && ref && ref_crc)
        *ref_crc = mm_crc32c(0, ref, c->n * sizeof(float));
    return e;
}

static mm_codec_err check_len(const mm_codec *c, size_t len, char *why, size_t whylen)
{
    if (len < c->min_bytes || len > c->max_bytes) {
        if (c->min_bytes == c->max_bytes)
            return mm_codec_fail(why, whylen, MM_CODEC_E_LENGTH, "%s payload of %zu bytes for "
                                 "%llu floats, expected exactly %zu",
                                 mm_codec_kind_name(c->spec.kind), len,
                                 (unsigned long long)c->n, c->min_bytes);
        return mm_codec_fail(why, whylen, MM_CODEC_E_LENGTH, "%s payload of %zu bytes for "
                             "%llu floats, expected %zu to %zu",
                             mm_codec_kind_name(c->spec.kind), len, (unsigned long long)c->n,
                             c->min_bytes, c->max_bytes);
    }
    return MM_CODEC_OK;
}

mm_codec_err mm_codec_check(const mm_codec *c, const uint8_t *p, size_t len,
                            char *why, size_t whylen)
{
    mm_codec_err e = check_len(c, len, why, whylen);
    if (e)
        return e;
    if (is_sparse(c->spec.kind))
        return mm__codec_sparse_check(c, p, len, why, whylen);
    return mm__codec_dense_check(c, p, len, why, whylen);
}

/* For a payload mm_codec_check passed. */
static mm_codec_err decode_checked(const mm_codec *c, const uint8_t *p, size_t len, float *dst,
                                   int apply, uint32_t *crc, char *why, size_t whylen)
{
    mm_codec_err e;
    if (!is_sparse(c->spec.kind))
        return mm__codec_dense_decode(c, p, dst, apply, crc, why, whylen);
    e = mm__codec_sparse_decode(c, p, len, dst, apply, why, whylen);
    if (e == MM_CODEC_OK && crc)
        *crc = mm_crc32c(0, dst, c->n * sizeof(float));
    return e;
}

/* Everything is checked before anything is written, so a bad payload
 * leaves dst as it was. */
static mm_codec_err decode(const mm_codec *c, const uint8_t *p, size_t len, float *dst,
                           int apply, uint32_t *crc, char *why, size_t whylen)
{
    mm_codec_err e = mm_codec_check(c, p, len, why, whylen);
    return e ? e : decode_checked(c, p, len, dst, apply, crc, why, whylen);
}

mm_codec_err mm_codec_decode(const mm_codec *c, const uint8_t *p, size_t len, float *dst,
                             char *why, size_t whylen)
{
    return decode(c, p, len, dst, 0, NULL, why, whylen);
}

mm_codec_err mm_codec_apply(const mm_codec *c, const uint8_t *p, size_t len, float *copy,
                            uint32_t *copy_crc, char *why, size_t whylen)
{
    return decode(c, p, len, copy, 1, copy_crc, why, whylen);
}

mm_codec_err mm_codec_apply_checked(const mm_codec *c, const uint8_t *p, size_t len,
                                    float *copy, uint32_t *copy_crc, char *why, size_t whylen)
{
    assert(mm_codec_check(c, p, len, why, whylen) == MM_CODEC_OK);
    return decode_checked(c, p, len, copy, 1, copy_crc, why, whylen);
}

/* ---- parts (dense codecs) ------------------------------------------------- */

bool mm_codec_splits(const mm_codec_spec *spec)
{
    return spec_valid(spec) && !is_sparse(spec->kind);
}

uint64_t mm_codec_part_len(const mm_codec_spec *spec, uint64_t count)
{
    return mm_codec_splits(spec) ? payload_len(spec, count, true) : 0;
}

/* The codec of a part of count floats: c with its sizes for count (the
 * dense codecs keep no workspace, so a copy of the struct is all). */
static bool part_codec(const mm_codec *c, uint64_t count, mm_codec *part)
{
    if (is_sparse(c->spec.kind) || count < 1 || count > c->n)
        return false;
    *part = *c;
    part->n = part->k = count;
    part->nb = is_blocked(c->spec.kind) ? n_blocks(&c->spec, count) : 0;
    part->min_bytes = part->max_bytes = (size_t)payload_len(&c->spec, count, true);
    return true;
}

mm_codec_err mm_codec_encode_part(mm_codec *c, const float *x, float *ref, uint64_t off,
                                  uint64_t count, uint8_t *out, size_t cap, size_t *len,
                                  uint32_t *ref_crc, char *why, size_t whylen)
{
    mm_codec part;
    uint64_t B = is_blocked(c->spec.kind) ? c->spec.block : 1;
    *len = 0;
    if (off > c->n || !part_codec(c, count, &part) || count > c->n - off || off % B ||
        (off + count < c->n && count % B))
        return mm_codec_fail(why, whylen, MM_CODEC_E_INPUT, "no part %llu..+%llu of a "
                             "%llu-float %s vector (dense codecs only, on block boundaries)",
                             (unsigned long long)off, (unsigned long long)count,
                             (unsigned long long)c->n, mm_codec_kind_name(c->spec.kind));
    if (cap < part.max_bytes)
        return mm_codec_fail(why, whylen, MM_CODEC_E_SPACE, "output buffer of %zu bytes, "
                             "the part needs %zu", cap, part.max_bytes);
    return mm__codec_dense_encode(&part, x + off, ref ? ref + off : NULL, out, len, ref_crc,
                                  why, whylen);
}

mm_codec_err mm_codec_check_part(const mm_codec *c, uint64_t count, const uint8_t *p,
                                 size_t len, char *why, size_t whylen)
{
    mm_codec part;
    if (count == c->n)
        return mm_codec_check(c, p, len, why, whylen);
    if (!part_codec(c, count, &part))
        return mm_codec_fail(why, whylen, MM_CODEC_E_LENGTH, "a part of %llu floats of a "
                             "%llu-float %s vector", (unsigned long long)count,
                             (unsigned long long)c->n, mm_codec_kind_name(c->spec.kind));
    return mm_codec_check(&part, p, len, why, whylen);
}

mm_codec_err mm_codec_apply_part_checked(const mm_codec *c, uint64_t count, const uint8_t *p,
                                         size_t len, float *copy_part, uint32_t *copy_crc,
                                         char *why, size_t whylen)
{
    mm_codec part;
    if (count == c->n)
        return mm_codec_apply_checked(c, p, len, copy_part, copy_crc, why, whylen);
    bool ok = part_codec(c, count, &part);
    assert(ok);
    if (!ok)
        return MM_CODEC_E_LENGTH;
    return mm_codec_apply_checked(&part, p, len, copy_part, copy_crc, why, whylen);
}

static uint64_t splitmix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t mm_codec_key(uint64_t seed, uint32_t sender, uint64_t exchange)
{
    uint64_t h = splitmix(seed + 0x9E3779B97F4A7C15ULL);
    h = splitmix(h ^ ((uint64_t)sender + 0x9E3779B97F4A7C15ULL));
    return splitmix(h ^ (exchange + 0x9E3779B97F4A7C15ULL));
}
