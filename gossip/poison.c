/* Test-only: what cfg.test_poison (murmur node --test-poison) does to an
 * outgoing vector, so that tests can play a neighbour that sends what an
 * honest murmur never does. Off unless the configuration names a kind. */
#include "gossip/transport_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* A RESET (compressed gossip's fp32 copy) made wrong in the way kind says:
 * in the agreed codec ("reset-codec", the copy encoded in it: a valid body
 * of that codec), one float short ("reset-short") or one float long
 * ("reset-long"). A q of the agreed codec with "reset-codec" gets the
 * RESET flag as it is. */
static int bad_reset(mm_transport *t, const char *kind, mm_wire_vec *m, const void **body,
                     size_t *len, uint8_t **owned)
{
    bool reset = m->flags & MM_VEC_RESET;
    if (!strcmp(kind, "reset-codec")) {
        if (!reset) {
            m->flags |= MM_VEC_RESET;
            return 0;
        }
        if (!t->codec)
            return 0; /* fp32: a RESET in the agreed codec is a good RESET */
        size_t cap = mm_codec_max_bytes(t->codec), n = 0;
        char why[160];
        if (!(*owned = malloc(cap)) ||
            mm_codec_encode(t->codec, *body, NULL, 0, *owned, cap, &n, NULL, why,
                            sizeof why) != MM_CODEC_OK)
            return -1;
        m->codec = t->cfg.codec;
        *body = *owned;
        *len = n;
    } else if (reset && !strcmp(kind, "reset-short")) {
        *len -= 4;
    } else if (reset && !strcmp(kind, "reset-long")) {
        if (!(*owned = copy_of(*body, *len, 4)))
            return -1;
        *body = *owned;
        *len += 4;
    }
    return 0;
}

int mm__tr_poison(mm_transport *t, mm_wire_vec *m, const void **body, size_t *len,
                  uint8_t **owned)
{
    const char *poison = t->cfg.test_poison;
    *owned = NULL;
    if (!poison)
        return 0;
    if (!strncmp(poison, "weight=", 7)) {
        /* the vector as it is, with a push-sum weight it does not have */
        m->weight = strtod(poison + 7, NULL);
        return 0;
    }
    if (!strncmp(poison, "reset-", 6))
        return bad_reset(t, poison, m, body, len, owned);
    if (m->codec != MM_WIRE_CODEC_FP32)
        return 0;
    float *o = (float *)(*owned = copy_of(*body, *len, 0));
    if (!o)
        return -1;
    if (!strcmp(poison, "huge")) {
        /* finite, so the wire lets it through: an absurd norm is for the
         * receiver's --clip-pull to bound, not for the transport */
        for (uint64_t i = 0; i < m->count; i++)
            o[i] = o[i] * MM_POISON_HUGE_SCALE + MM_POISON_HUGE_SCALE;
    } else {
        o[m->count / 2] = !strcmp(poison, "nan") ? NAN : INFINITY;
    }
    *body = o;
    return 0;
}
