/* libFuzzer target for every codec decoder (gossip/codec.h), and the
 * encoders on arbitrary floats.
 * Input: byte 0 = codec (index into specs[] below), bytes 1-2 = n - 1
 * (little-endian, modulo 2048), byte 3 = options (bit 0: fit the payload
 * to a length the codec accepts, so mutations reach the checks behind the
 * length; bit 1: treat the rest as floats and encode them instead), the
 * rest = the payload. Must hold, or abort():
 *   - no read or write outside the buffers (ASan);
 *   - check, decode and apply agree on the verdict;
 *   - a refused payload leaves the destination untouched;
 *   - an accepted one decodes to finite values, and apply gives a finite
 *     copy or says MM_CODEC_E_OVERFLOW;
 *   - an encoded vector decodes, and the sender's ref equals the
 *     receiver's copy bit for bit.
 * Built with -DFUZZ_SEEDGEN it writes a seed corpus (real payloads). */
#include "gossip/codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *specs[] = {
    "fp32",      "bf16",      "int8:8",     "int8:32",    "int8:256", "sign:8",
    "sign:32",   "sign:256",  "topk:0.01",  "topk:0.1",   "topk:0.5", "topk:1",
    "randk:0.05", "randk:0.5", "randk:1",
};
#define N_SPECS (sizeof specs / sizeof specs[0])
#define MAX_N 2048

static mm_codec *codecs[N_SPECS][MAX_N + 1];

static mm_codec *get(unsigned which, uint64_t n)
{
    if (!codecs[which][n]) {
        mm_codec_spec s;
        char err[256];
        if (mm_codec_parse(specs[which], &s, err, sizeof err) != 0)
            abort();
        codecs[which][n] = mm_codec_new(&s, n, err, sizeof err);
        if (!codecs[which][n])
            abort();
    }
    return codecs[which][n];
}

static int all_finite(const float *v, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

static void run_encoder(mm_codec *c, const uint8_t *data, size_t size)
{
    uint64_t n = mm_codec_n(c);
    float *x = calloc(n, sizeof *x), *ref = calloc(n, sizeof *ref), *copy = calloc(n, sizeof *copy);
    uint8_t *out = malloc(mm_codec_max_bytes(c));
    memcpy(x, data, size < n * sizeof *x ? size : n * sizeof *x);
    size_t len;
    char why[256];
    mm_codec_err e = mm_codec_encode(c, x, NULL, 7, out, mm_codec_max_bytes(c), &len, NULL, why,
                                     sizeof why);
    if (e == MM_CODEC_OK && mm_codec_decode(c, out, len, copy, why, sizeof why) != MM_CODEC_OK)
        abort(); /* what we encode, we accept */
    if (e != MM_CODEC_OK && e != MM_CODEC_E_INPUT)
        abort();
    memset(copy, 0, n * sizeof *copy);
    for (int round = 0; round < 2; round++) {
        uint32_t c1, c2;
        e = mm_codec_encode(c, x, ref, (uint64_t)round, out, mm_codec_max_bytes(c), &len, &c1,
                            why, sizeof why);
        if (e == MM_CODEC_E_INPUT || e == MM_CODEC_E_OVERFLOW)
            break; /* NaN/Inf in x, or magnitudes near FLT_MAX */
        if (e != MM_CODEC_OK || len > mm_codec_max_bytes(c))
            abort();
        if (mm_codec_apply(c, out, len, copy, &c2, why, sizeof why) != MM_CODEC_OK)
            abort(); /* what we encode, we accept */
        if (c1 != c2 || memcmp(ref, copy, n * sizeof *ref))
            abort(); /* the copies must agree bit for bit */
        if (!all_finite(ref, n))
            abort();
    }
    free(x), free(ref), free(copy), free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    unsigned which = data[0] % N_SPECS;
    uint64_t n = 1 + ((uint64_t)data[1] | (uint64_t)data[2] << 8) % MAX_N;
    uint8_t opt = data[3];
    data += 4;
    size -= 4;
    mm_codec *c = get(which, n);
    if (opt & 2) {
        run_encoder(c, data, size);
        return 0;
    }
    size_t len = size;
    if (opt & 1) { /* a length the codec accepts: its minimum plus what the input adds */
        const mm_codec_spec *s = mm_codec_get_spec(c);
        uint64_t lo = mm_codec_min_len(s, n), hi = mm_codec_max_len(s, n);
        len = (size_t)(lo + (hi > lo ? size % (hi - lo + 1) : 0));
    }
    uint8_t *p = calloc(len ? len : 1, 1); /* exactly len bytes: ASan sees any overread */
    memcpy(p, data, size < len ? size : len);
    float *dst = malloc(n * sizeof *dst), *before = malloc(n * sizeof *before);
    for (uint64_t i = 0; i < n; i++)
        dst[i] = before[i] = (float)i - 7.5f;
    char why[256];
    mm_codec_err e_check = mm_codec_check(c, p, len, why, sizeof why);
    mm_codec_err e_apply = mm_codec_apply(c, p, len, dst, NULL, why, sizeof why);
    if (e_check != MM_CODEC_OK) {
        if (e_apply != e_check || memcmp(dst, before, n * sizeof *dst))
            abort(); /* refused: untouched, for the same reason */
    } else if (e_apply == MM_CODEC_OK) {
        if (!all_finite(dst, n))
            abort();
    } else if (e_apply != MM_CODEC_E_OVERFLOW) {
        abort();
    }
    mm_codec_err e_dec = mm_codec_decode(c, p, len, dst, why, sizeof why);
    if (e_dec != e_check || (e_dec == MM_CODEC_OK && !all_finite(dst, n)))
        abort();
    free(p), free(dst), free(before);
    return 0;
}

#ifdef FUZZ_SEEDGEN
/* One seed per codec and a few sizes: a real payload of a model-like vector. */
int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    uint64_t sizes[] = {1, 9, 100, 1000};
    int made = 0;
    for (unsigned w = 0; w < N_SPECS; w++)
        for (int si = 0; si < 4; si++) {
            uint64_t n = sizes[si];
            mm_codec *c = get(w, n);
            float *x = malloc(n * sizeof *x);
            for (uint64_t i = 0; i < n; i++)
                x[i] = (float)(sin((double)i * 1.7) * pow(10, -(double)(i % 5)));
            uint8_t *buf = malloc(4 + mm_codec_max_bytes(c));
            size_t len;
            char why[256];
            if (mm_codec_encode(c, x, NULL, 12345, buf + 4, mm_codec_max_bytes(c), &len, NULL,
                                why, sizeof why) != MM_CODEC_OK)
                return 1;
            buf[0] = (uint8_t)w;
            buf[1] = (uint8_t)((n - 1) & 0xff);
            buf[2] = (uint8_t)((n - 1) >> 8);
            buf[3] = (uint8_t)(made % 2); /* half with the length fitting on */
            char path[512];
            snprintf(path, sizeof path, "%s/codec-%s-%llu", argv[1], specs[w],
                     (unsigned long long)n);
            for (char *q = path + strlen(argv[1]); *q; q++)
                if (*q == ':')
                    *q = '_';
            FILE *f = fopen(path, "wb");
            if (!f || fwrite(buf, 1, 4 + len, f) != 4 + len)
                return 1;
            fclose(f);
            free(x), free(buf);
            made++;
        }
    return 0;
}
#endif
