/* libFuzzer target over a whole VECTOR frame as a compressed-gossip
 * receiver meets it: the connection's codec, the vector header's codec,
 * flags, offset and count, the payload length and the body, all chosen by
 * the input together (fuzz_wire.c mutates a byte stream, fuzz_codec.c a
 * body alone: neither combines a header field with a body of another
 * codec). The frame goes through the wire decoder (net/wire.c) set up
 * as the transport sets up a connection (max_body = max(4 n, the codec's
 * largest body), public copies on or off), then through what the
 * transport and the CHOCO receiver do with it: mm_codec_check on a body in
 * the agreed codec, then a RESET replaces a copy of n floats and a q is
 * applied to it (mm_codec_apply). Must hold, or abort():
 *   - no read or write outside the buffers (ASan; the body a receiver
 *     sees is copied into a buffer of exactly its length, so reading past
 *     it is caught);
 *   - a delivered RESET is fp32, a whole vector, exactly 4 n bytes, every
 *     value finite, and only where copies are kept;
 *   - a delivered q is in the agreed codec, and its body is no longer than
 *     max_body; a delivered part of a vector is a chunk that starts a
 *     stream (offset 0: the decoder is fresh), and only where streams are
 *     on (copies kept, a codec that splits), or, on a connection with the
 *     outer optimizer's fragments, exactly the fragment its exchange
 *     names (mm_wire_fragment);
 *   - a q (or a chunk) the codec accepts leaves a finite copy finite or
 *     says overflow.
 * Input: byte 0 = the connection's codec (index into specs[]), byte 1 =
 * options (bit 0: copies kept; bit 1: fit the payload length to the count;
 * bit 2: the vector header's codec is the agreed one, bit 3: fp32 instead;
 * bit 4: streams, where the codec splits and copies are kept; bit 5:
 * fragments, F = 2 + bits 6-7, the frame's exchange 1),
 * byte 2 = flags, bytes 3-4 = n - 1 (mod 512), bytes 5-6 = count, bytes
 * 7-8 = offset, bytes 9-10 = body length (mod max_body + 16), the rest =
 * the body (cycled to its length). Built with -DFUZZ_SEEDGEN it writes a
 * seed corpus (good q's and RESETs of every codec, and the RESET-in-codec
 * frame of issue 27). */
#include "base/finite.h"
#include "gossip/codec.h"
#include "gossip/mix.h"
#include "net/wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *specs[] = {"fp32", "bf16", "int8:8", "int8", "sign:8", "sign",
                              "topk:0.1", "topk:1", "randk:0.25"};
#define N_SPECS (sizeof specs / sizeof specs[0])
#define MAX_N 512
#define IN_HDR 11

static mm_codec *codec_for(unsigned which, uint64_t n)
{
    static mm_codec *cache[N_SPECS][MAX_N + 1];
    if (!cache[which][n]) {
        mm_codec_spec s;
        char err[256];
        if (mm_codec_parse(specs[which], &s, err, sizeof err) != 0 ||
            !(cache[which][n] = mm_codec_new(&s, n, err, sizeof err)))
            abort();
    }
    return cache[which][n];
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* Feeds a frame to rx in pieces of 13 bytes; the last event. */
static mm_rx_event feed(mm_wire_rx *rx, const uint8_t *frame, size_t len)
{
    mm_rx_event ev = MM_RX_MORE;
    size_t pos = 0;
    while (pos < len && ev == MM_RX_MORE) {
        uint8_t *p;
        size_t want;
        mm_wire_rx_want(rx, &p, &want);
        if (want == 0)
            abort();
        size_t n = want < 13 ? want : 13;
        if (n > len - pos)
            n = len - pos;
        memcpy(p, frame + pos, n);
        pos += n;
        ev = mm_wire_rx_advance(rx, n);
    }
    return ev;
}

/* What a receiver does with a delivered frame; aborts on a broken rule. */
static void receive(const mm_wire_rx *rx, mm_codec *c, const uint8_t *b, size_t len)
{
    const mm_wire_vec *v = &rx->vec;
    uint64_t n = rx->vec_len;
    uint8_t *body = malloc(len ? len : 1); /* exactly the body: ASan sees any overread */
    memcpy(body, b, len);
    float *copy = calloc(n, sizeof *copy);
    char why[200];
    if (v->flags & MM_VEC_RESET) {
        if (!rx->copies || v->codec != MM_WIRE_CODEC_FP32 || v->offset != 0 ||
            v->count != n || len != 4 * n || !mm_all_finite((const float *)body, n, NULL))
            abort();
        memcpy(copy, body, 4 * n);
    } else {
        if (v->codec != rx->codec || len > rx->max_body)
            abort();
        uint64_t lo = 0, count = n;
        if (rx->fragments > 1)
            mm_wire_fragment(n, rx->fragments, (uint32_t)(rx->hdr.exchange % rx->fragments), &lo,
                             &count);
        if (rx->fragments > 1 ? v->offset != lo || v->count != count
                              : v->count != n && (!rx->streams || v->offset != 0))
            abort(); /* a part only as a stream's first chunk, or the exchange's fragment */
        if (v->codec != MM_WIRE_CODEC_FP32 &&
            mm_codec_check_part(c, v->count, body, len, why, sizeof why) == MM_CODEC_OK) {
            mm_codec_err e = mm_codec_apply_part_checked(c, v->count, body, len,
                                                         copy + v->offset, NULL, why, sizeof why);
            if (e != MM_CODEC_OK && e != MM_CODEC_E_OVERFLOW)
                abort(); /* check accepted what apply refuses */
            for (uint64_t i = 0; e == MM_CODEC_OK && i < n; i++)
                if (!isfinite(copy[i]))
                    abort();
        }
    }
    free(copy);
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < IN_HDR)
        return 0;
    unsigned which = data[0] % N_SPECS;
    uint8_t opt = data[1];
    uint64_t n = get16(data + 3) % MAX_N + 1;
    mm_codec *c = codec_for(which, n);
    mm_codec_spec s;
    char err[256];
    mm_codec_parse(specs[which], &s, err, sizeof err);
    uint8_t agreed = (uint8_t)s.kind;
    uint64_t q = mm_codec_max_len(&s, n), max_body = q > 4 * n ? q : 4 * n;

    mm_wire_vec v = {.weight = 1.0, .codec = (opt & 4) ? agreed : (opt & 8) ? 1 : data[2] >> 4,
                     .flags = data[2] & 0x0f, .count = get16(data + 5),
                     .offset = get16(data + 7)};
    if (v.count == 0 || v.count > n) /* mostly whole vectors */
        v.count = n;
    uint64_t body_len = get16(data + 9) % (max_body + 16);
    if (opt & 2)
        body_len = v.codec == MM_WIRE_CODEC_FP32 ? 4 * v.count
                   : v.count == n                ? mm_codec_max_bytes(c)
                                                 : mm_codec_part_len(&s, v.count);
    size_t plen = MM_WIRE_VEC_HDR + (size_t)body_len;
    uint8_t *frame = malloc(MM_WIRE_HDR_LEN + plen);
    uint8_t *payload = frame + MM_WIRE_HDR_LEN;
    mm_wire_put_vec(payload, &v);
    const uint8_t *src = data + IN_HDR;
    size_t src_len = size - IN_HDR;
    for (size_t i = 0; i < body_len; i++)
        payload[MM_WIRE_VEC_HDR + i] = src_len ? src[i % src_len] : 0;
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = 0, .exchange = 1, .payload_len = plen,
                        .payload_crc = mm_crc32c(0, payload, plen)};
    mm_wire_put_header(frame, &h);

    static uint8_t *vbuf;
    static size_t vbuf_len;
    if (vbuf_len < MM_WIRE_VEC_HDR + max_body) {
        free(vbuf);
        vbuf_len = MM_WIRE_VEC_HDR + max_body;
        vbuf = malloc(vbuf_len);
    }
    memset(vbuf, 0x7f, vbuf_len); /* stale bytes: NaN-like, as left by earlier frames */
    mm_wire_rx rx;
    memset(&rx, 0, sizeof rx);
    rx.hello_done = true;
    static mm_weight_check one = {MM_WEIGHT_ONE, 2}; /* dpsgd's, as murmur node installs it */
    rx.weight_ok = mm_mix_weight_check;
    rx.weight_ud = &one;
    rx.vec_len = n;
    rx.max_body = max_body;
    rx.codec = agreed;
    rx.copies = opt & 1;
    rx.streams = (opt & 16) && rx.copies && mm_codec_splits(&s); /* as the transport sets it */
    rx.fragments = opt & 32 ? 2 + (opt >> 6) : 0;
    rx.vec_buf = vbuf;
    mm_wire_rx_init(&rx);
    if (feed(&rx, frame, MM_WIRE_HDR_LEN + plen) == MM_RX_FRAME) {
        if (rx.hdr.payload_len != plen)
            abort();
        receive(&rx, c, rx.payload + MM_WIRE_VEC_HDR, (size_t)body_len);
    }
    free(frame);
    return 0;
}

#ifdef FUZZ_SEEDGEN
/* One input: the connection's codec, options, flags and what the frame's
 * body is made of (x encoded, or x itself for fp32). */
static int seed(const char *dir, int k, unsigned which, uint8_t opt, uint8_t flags_codec,
                uint64_t n, bool encode, uint64_t count)
{
    /* count (not 0): the first chunk of a stream, count floats of n */
    mm_codec *c = codec_for(which, count ? count : n);
    float x[MAX_N];
    for (uint64_t i = 0; i < n; i++)
        x[i] = (float)((i * 37) % 101) / 10.0f - 5.0f;
    static uint8_t in[IN_HDR + 8 * MAX_N];
    size_t len = 0;
    if (encode) {
        char why[200];
        if (mm_codec_encode(c, x, NULL, 9, in + IN_HDR, mm_codec_max_bytes(c), &len, NULL, why,
                            sizeof why) != MM_CODEC_OK)
            return -1;
    } else {
        len = 4 * n;
        memcpy(in + IN_HDR, x, len);
    }
    in[0] = (uint8_t)which;
    in[1] = opt;
    in[2] = flags_codec;
    in[3] = (uint8_t)(n - 1);
    in[4] = (uint8_t)((n - 1) >> 8);
    in[5] = (uint8_t)count;
    in[6] = (uint8_t)(count >> 8);
    in[7] = in[8] = 0;
    in[9] = (uint8_t)len;
    in[10] = (uint8_t)(len >> 8);
    char path[512];
    snprintf(path, sizeof path, "%s/seed-%d", dir, k);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(in, 1, IN_HDR + len, f) != IN_HDR + len)
        return -1;
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    int k = 0;
    for (unsigned w = 0; w < N_SPECS; w++) {
        uint64_t n = 100 + 37 * w;
        /* a good q (the agreed codec), a good RESET (fp32, copies kept),
         * and a RESET in the agreed codec */
        if (seed(argv[1], k++, w, 1 | 4, 0, n, true, 0) ||
            seed(argv[1], k++, w, 1 | 8, 1, n, false, 0) ||
            seed(argv[1], k++, w, 1 | 4, 1, n, true, 0))
            return 1;
        /* and the first chunk of a streamed q (dense codecs) */
        mm_codec_spec sp;
        char err[200];
        if (mm_codec_parse(specs[w], &sp, err, sizeof err) == 0 && mm_codec_splits(&sp) &&
            seed(argv[1], k++, w, 1 | 4 | 16, 0, n, true, 64))
            return 1;
    }
    return 0;
}
#endif
