/* node/poison.h: a neighbour that sends what an honest murmur never does. */
#include "node/poison.h"

#include "base/crc32c.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mm_poison {
    const char *kind;
    uint64_t n;         /* floats in a vector */
    uint32_t n_peers;
    mm_codec *codec;    /* the agreed codec other than fp32; NULL: fp32 */
    uint8_t codec_id;   /* its wire id */
    uint32_t block;     /* int8: floats per scale */
    /* q-huge: [n_peers] what each receiver's copy of ours holds (NULL until
     * the first RESET to it), and the sign of its next q */
    float **copy;
    bool *negative;
};

static const char *const kinds[] = {"nan", "inf", "huge", "reset-codec", "reset-short",
                                    "reset-long", "reset-huge", "q-huge", "q-cut", "view-flood"};

int mm_poison_kind_ok(const char *kind)
{
    if (!strncmp(kind, "weight=", 7) || !strncmp(kind, "scale=", 6))
        return 1;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kind, kinds[i]))
            return 1;
    return 0;
}

mm_poison *mm_poison_new(const char *kind, const mm_codec_spec *spec, uint64_t vec_len,
                           uint32_t n_peers, char *err, size_t errlen)
{
    if (!mm_poison_kind_ok(kind)) {
        snprintf(err, errlen, "unknown poison kind '%s'", kind);
        return NULL;
    }
    mm_poison *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *p = (mm_poison){.kind = kind, .n = vec_len, .n_peers = n_peers};
    if (spec && spec->kind != MM_CODEC_FP32) {
        p->codec_id = (uint8_t)spec->kind;
        p->block = spec->block;
        if (!(p->codec = mm_codec_new(spec, vec_len, err, errlen))) {
            free(p);
            return NULL;
        }
    }
    if (!strcmp(kind, "q-huge")) {
        if (!spec || spec->kind != MM_CODEC_INT8) {
            snprintf(err, errlen, "--test-poison q-huge needs --compress int8");
            mm_poison_free(p);
            return NULL;
        }
        p->copy = calloc(n_peers, sizeof *p->copy);
        p->negative = calloc(n_peers, sizeof *p->negative);
        if (!p->copy || !p->negative) {
            snprintf(err, errlen, "out of memory");
            mm_poison_free(p);
            return NULL;
        }
    }
    return p;
}

void mm_poison_free(mm_poison *p)
{
    if (!p)
        return;
    for (uint32_t k = 0; p->copy && k < p->n_peers; k++)
        free(p->copy[k]);
    free(p->copy);
    free(p->negative);
    mm_codec_free(p->codec);
    free(p);
}

/* A copy of body (len bytes, room for extra more) the caller frees. */
static uint8_t *copy_of(const void *body, size_t len, size_t extra)
{
    uint8_t *o = malloc(len + extra);
    if (o) {
        memcpy(o, body, len);
        memset(o + len, 0, extra);
    }
    return o;
}

/* A RESET (compressed gossip's fp32 copy) made wrong in the way the kind
 * says: in the agreed codec ("reset-codec", the copy encoded in it: a
 * valid body of that codec), one float short ("reset-short") or one float
 * long ("reset-long"). A q of the agreed codec with "reset-codec" gets the
 * RESET flag as it is. */
static int bad_reset(mm_poison *p, mm_wire_vec *m, const void **body, size_t *len,
                     uint8_t **owned)
{
    bool reset = m->flags & MM_VEC_RESET;
    if (!strcmp(p->kind, "reset-codec")) {
        if (!reset) {
            m->flags |= MM_VEC_RESET;
            return 0;
        }
        if (!p->codec)
            return 0; /* fp32: a RESET in the agreed codec is a good RESET */
        size_t cap = mm_codec_max_bytes(p->codec), n = 0;
        char why[160];
        if (!(*owned = malloc(cap)) ||
            mm_codec_encode(p->codec, *body, NULL, 0, *owned, cap, &n, NULL, why,
                            sizeof why) != MM_CODEC_OK)
            return -1;
        m->codec = p->codec_id;
        *body = *owned;
        *len = n;
    } else if (reset && !strcmp(p->kind, "reset-short")) {
        *len -= 4;
    } else if (reset && !strcmp(p->kind, "reset-long")) {
        if (!(*owned = copy_of(*body, *len, 4)))
            return -1;
        *body = *owned;
        *len += 4;
    }
    return 0;
}

/* "reset-huge": every frame a valid RESET of +1e38, -1e38, ... */
static int huge_reset(mm_poison *p, mm_wire_vec *m, const void **body, size_t *len,
                      uint8_t **owned)
{
    float *o = malloc(p->n * sizeof *o);
    if (!(*owned = (uint8_t *)o))
        return -1;
    for (uint64_t i = 0; i < p->n; i++)
        o[i] = i % 2 ? -1e38f : 1e38f;
    m->flags |= MM_VEC_RESET;
    m->codec = MM_WIRE_CODEC_FP32;
    m->offset = 0;
    m->count = p->n;
    m->copy_crc = mm_crc32c(0, o, p->n * sizeof *o);
    *body = o;
    *len = p->n * sizeof *o;
    return 0;
}

/* "q-huge": the RESETs to a receiver pass (they say what its copy holds);
 * every q becomes int8 of scale 2^120 and codes +127 or -127, applied to
 * that copy for its copy_crc. A q to a receiver that had no RESET yet
 * passes as it is. */
static int huge_q(mm_poison *p, uint32_t to, mm_wire_vec *m, const void **body, size_t *len,
                  uint8_t **owned)
{
    if (to >= p->n_peers)
        return 0;
    float **copy = &p->copy[to];
    if (m->flags & MM_VEC_RESET) {
        if (!*copy && !(*copy = malloc(p->n * sizeof **copy)))
            return -1;
        memcpy(*copy, *body, p->n * sizeof **copy);
        return 0;
    }
    if (!*copy)
        return 0;
    /* (a chunk of a streamed q: its own int8 payload of count floats) */
    uint64_t blocks = (m->count + p->block - 1) / p->block; /* the scales, then the codes */
    size_t bytes = 4 * blocks + m->count;
    uint8_t *o = *owned = malloc(bytes);
    if (!o)
        return -1;
    float scale = 0x1p120f;
    for (uint64_t b = 0; b < blocks; b++)
        memcpy(o + 4 * b, &scale, 4);
    memset(o + 4 * blocks, p->negative[to] ? 0x81 : 0x7f, m->count); /* -127, +127 */
    if (m->offset + m->count == p->n) /* one sign a q, all its chunks */
        p->negative[to] = !p->negative[to];
    char why[160];
    if (mm_codec_check_part(p->codec, m->count, o, bytes, why, sizeof why) != MM_CODEC_OK ||
        mm_codec_apply_part_checked(p->codec, m->count, o, bytes, *copy + m->offset,
                                    &m->copy_crc, why, sizeof why) != MM_CODEC_OK)
        return -1;
    *body = o;
    *len = bytes;
    return 0;
}

int mm_poison_tamper(void *ud, uint32_t to, mm_wire_vec *m, const void **body, size_t *len,
                     uint8_t **owned)
{
    mm_poison *p = ud;
    *owned = NULL;
    if (!strcmp(p->kind, "view-flood"))
        return 0; /* its vectors are honest: it floods membership tables (node/elastic.c) */
    if (!strncmp(p->kind, "weight=", 7)) {
        /* the vector as it is, with a push-sum weight it does not have */
        m->weight = strtod(p->kind + 7, NULL);
        return 0;
    }
    if (!strcmp(p->kind, "reset-huge"))
        return huge_reset(p, m, body, len, owned);
    if (!strncmp(p->kind, "reset-", 6))
        return bad_reset(p, m, body, len, owned);
    if (!strcmp(p->kind, "q-huge"))
        return huge_q(p, to, m, body, len, owned);
    if (!strcmp(p->kind, "q-cut")) {
        /* the last chunk of a stream a byte short (its frame says so) */
        if (!(m->flags & MM_VEC_RESET) && m->offset > 0 && m->offset + m->count == p->n)
            *len -= 1;
        return 0;
    }
    if (m->codec != MM_WIRE_CODEC_FP32)
        return 0;
    float *o = (float *)(*owned = copy_of(*body, *len, 0));
    if (!o)
        return -1;
    if (!strcmp(p->kind, "huge")) {
        /* finite, so the wire lets it through: an absurd norm is for the
         * receiver's --clip-pull to bound, not for the transport */
        for (uint64_t i = 0; i < m->count; i++)
            o[i] = o[i] * MM_POISON_HUGE_SCALE + MM_POISON_HUGE_SCALE;
    } else if (!strncmp(p->kind, "scale=", 6)) {
        /* sign-flipped (-1) or scaled parameters, finite: valid on the wire */
        float f = strtof(p->kind + 6, NULL);
        for (uint64_t i = 0; i < m->count; i++)
            o[i] *= f;
    } else {
        o[m->count / 2] = !strcmp(p->kind, "nan") ? NAN : INFINITY;
    }
    *body = o;
    return 0;
}
