/* gossip/ef.h: error feedback and the average of compressed contributions. */
#include "gossip/ef.h"

#include <stdio.h>
#include <string.h>

/* (gcc: -ffp-contract=off from mk/codec.mk; clang needs the pragma) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

mm_codec_err mm_ef_encode(mm_codec *c, float *e, const float *o, const float *s, size_t n,
                          float beta, float *scratch, uint64_t key, uint8_t *out, size_t cap,
                          size_t *len, char *why, size_t whylen)
{
    if (beta == 1.0f)
        for (size_t k = 0; k < n; k++)
            e[k] = e[k] + (o[k] - s[k]);
    else
        for (size_t k = 0; k < n; k++)
            e[k] = beta * e[k] + (o[k] - s[k]);
    /* Q(e - 0) with a reference that starts at 0: the encoder leaves the
     * decoded payload in it (fp32: e itself), which is then subtracted */
    memset(scratch, 0, n * sizeof *scratch);
    mm_codec_err ce = mm_codec_encode(c, e, scratch, key, out, cap, len, NULL, why, whylen);
    if (ce != MM_CODEC_OK)
        return ce;
    for (size_t k = 0; k < n; k++)
        e[k] = e[k] - scratch[k];
    return MM_CODEC_OK;
}

mm_codec_err mm_ef_combine(const mm_codec *c, const uint8_t *const *p, const size_t *len,
                           int n_peers, const float *o, float *y, char *why, size_t whylen)
{
    if (mm_codec_get_spec(c)->kind == MM_CODEC_FP32 || n_peers < 1) {
        snprintf(why, whylen, n_peers < 1 ? "no contributions to combine"
                                          : "fp32 payloads set a vector instead of adding to it: "
                                            "combine the vectors themselves (the ring)");
        return MM_CODEC_E_INPUT;
    }
    size_t n = (size_t)mm_codec_n(c);
    memset(y, 0, n * sizeof *y);
    for (int j = 0; j < n_peers; j++) {
        mm_codec_err ce = mm_codec_apply_checked(c, p[j], len[j], y, NULL, why, whylen);
        if (ce != MM_CODEC_OK)
            return ce;
    }
    float div = (float)n_peers;
    for (size_t k = 0; k < n; k++)
        y[k] = o[k] - y[k] / div;
    return MM_CODEC_OK;
}
