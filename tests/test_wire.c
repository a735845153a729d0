/* The wire format without sockets: CRC32C against published check values
 * and hardware against software, header round trips and every refusal, and
 * the incremental decoder fed in every split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/finite.h"
#include "base/text.h"
#include "gossip/mix.h"
#include "net/algo.h"
#include "net/wire.h"

static void crc_known_values(void **s)
{
    /* RFC 3720 B.4 and the common "123456789" check value */
    assert_int_equal(mm_crc32c(0, "123456789", 9), 0xE3069283U);
    assert_int_equal(mm_crc32c_sw(0, "123456789", 9), 0xE3069283U);
    uint8_t z[32] = {0}, o[32];
    memset(o, 0xFF, 32);
    assert_int_equal(mm_crc32c(0, z, 32), 0x8A9136AAU);
    assert_int_equal(mm_crc32c(0, o, 32), 0x62A8AB43U);
    uint8_t inc[32];
    for (int i = 0; i < 32; i++)
        inc[i] = (uint8_t)i;
    assert_int_equal(mm_crc32c_sw(0, inc, 32), 0x46DD794EU);
}

static void crc_hw_matches_sw(void **s)
{
    uint8_t *buf = malloc(70000);
    srand(7);
    for (int i = 0; i < 70000; i++)
        buf[i] = (uint8_t)rand();
    for (int k = 0; k < 300; k++) {
        size_t off = (size_t)rand() % 64, len = (size_t)rand() % 69000;
        assert_int_equal(mm_crc32c(0, buf + off, len), mm_crc32c_sw(0, buf + off, len));
        /* incremental == one shot */
        size_t cut = len ? (size_t)rand() % len : 0;
        assert_int_equal(mm_crc32c(mm_crc32c(0, buf + off, cut), buf + off + cut, len - cut),
                         mm_crc32c_sw(0, buf + off, len));
    }
    /* every length across the folding path's steps (256, 64 and 16 bytes,
     * the crc32q tail), any alignment, any initial CRC */
    for (size_t len = 0; len < 1100; len++)
        for (size_t off = 0; off < 3; off++) {
            uint32_t c0 = (uint32_t)rand();
            assert_int_equal(mm_crc32c(c0, buf + off, len), mm_crc32c_sw(c0, buf + off, len));
        }
    free(buf);
}

static void header_round_trip(void **s)
{
    uint8_t raw[MM_WIRE_HDR_LEN];
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = 0xDEADBEEF, .exchange = 1ULL << 50,
                        .payload_len = MM_WIRE_VEC_HDR + 4 * 123, .payload_crc = 0x12345678}, g;
    mm_wire_put_header(raw, &h);
    assert_memory_equal(raw, "MRMR", 4);
    char why[160];
    uint64_t max = MM_WIRE_VEC_HDR + 4 * 123;
    assert_int_equal(mm_wire_get_header(raw, true, max, &g, why, sizeof why), MM_WIRE_OK);
    assert_int_equal(g.sender, h.sender);
    assert_true(g.exchange == h.exchange);
    assert_true(g.payload_len == h.payload_len);
    assert_int_equal(g.payload_crc, h.payload_crc);
    /* longer than this connection's largest vector */
    assert_int_equal(mm_wire_get_header(raw, true, max - 1, &g, why, sizeof why), MM_WIRE_E_LENGTH);
    /* a vector before the HELLO */
    assert_int_equal(mm_wire_get_header(raw, false, max, &g, why, sizeof why), MM_WIRE_E_TYPE);
    /* every single-bit flip of the header is caught */
    for (int bit = 0; bit < MM_WIRE_HDR_LEN * 8; bit++) {
        uint8_t bad[MM_WIRE_HDR_LEN];
        memcpy(bad, raw, sizeof bad);
        bad[bit / 8] ^= (uint8_t)(1 << (bit % 8));
        assert_int_not_equal(mm_wire_get_header(bad, true, max, &g, why, sizeof why), MM_WIRE_OK);
    }
}

static void header_refusals(void **s)
{
    uint8_t raw[MM_WIRE_HDR_LEN];
    mm_wire_header g;
    char why[160];
    mm_wire_header h = {.version = 7, .type = MM_WIRE_PING};
    mm_wire_put_header(raw, &h);
    assert_int_equal(mm_wire_get_header(raw, true, 1, &g, why, sizeof why), MM_WIRE_E_VERSION);
    assert_non_null(strstr(why, "version 7"));
    h = (mm_wire_header){.type = 9};
    mm_wire_put_header(raw, &h);
    assert_int_equal(mm_wire_get_header(raw, true, 1, &g, why, sizeof why), MM_WIRE_E_TYPE);
    h = (mm_wire_header){.type = MM_WIRE_HELLO, .payload_len = 47};
    mm_wire_put_header(raw, &h);
    assert_int_equal(mm_wire_get_header(raw, false, 1, &g, why, sizeof why), MM_WIRE_E_LENGTH);
    h = (mm_wire_header){.type = MM_WIRE_HELLO, .payload_len = MM_WIRE_HELLO_LEN};
    mm_wire_put_header(raw, &h);
    assert_int_equal(mm_wire_get_header(raw, false, 1, &g, why, sizeof why), MM_WIRE_OK);
    assert_int_equal(mm_wire_get_header(raw, true, 1, &g, why, sizeof why), MM_WIRE_E_TYPE);
    /* a HELLO carries 0 .. MM_WIRE_SETTINGS_MAX bytes of settings after its 128 */
    h = (mm_wire_header){.type = MM_WIRE_HELLO,
                         .payload_len = MM_WIRE_HELLO_LEN + MM_WIRE_SETTINGS_MAX};
    mm_wire_put_header(raw, &h);
    assert_int_equal(mm_wire_get_header(raw, false, 1, &g, why, sizeof why), MM_WIRE_OK);
    h.payload_len++;
    mm_wire_put_header(raw, &h);
    assert_int_equal(mm_wire_get_header(raw, false, 1, &g, why, sizeof why), MM_WIRE_E_LENGTH);
    /* a peer of version 5 (the HELLO before the settings): refused by name */
    h = (mm_wire_header){.version = 5, .type = MM_WIRE_HELLO, .payload_len = MM_WIRE_HELLO_LEN};
    mm_wire_put_header(raw, &h);
    assert_int_equal(mm_wire_get_header(raw, false, 1, &g, why, sizeof why), MM_WIRE_E_VERSION);
    assert_non_null(strstr(why, "protocol version 5, this peer speaks 6"));
    h = (mm_wire_header){.type = MM_WIRE_REFUSE, .payload_len = MM_WIRE_REFUSE_MAX + 1};
    mm_wire_put_header(raw, &h);
    assert_int_equal(mm_wire_get_header(raw, false, 1, &g, why, sizeof why), MM_WIRE_E_LENGTH);
    h = (mm_wire_header){.type = MM_WIRE_PING, .payload_len = 1};
    mm_wire_put_header(raw, &h);
    assert_int_equal(mm_wire_get_header(raw, true, 1, &g, why, sizeof why), MM_WIRE_E_LENGTH);
    memset(raw, 0, sizeof raw);
    assert_int_equal(mm_wire_get_header(raw, true, 1, &g, why, sizeof why), MM_WIRE_E_MAGIC);
}

static void finite_check(void **s)
{
    float v[9000];
    for (int i = 0; i < 9000; i++)
        v[i] = (float)i - 4500.0f;
    uint64_t bad = 0;
    assert_true(mm_all_finite(v, 9000, &bad));
    v[8999] = NAN;
    assert_false(mm_all_finite(v, 9000, &bad));
    assert_int_equal(bad, 8999);
    v[8999] = 1e38f;
    v[5000] = -INFINITY;
    assert_false(mm_all_finite(v, 9000, &bad));
    assert_int_equal(bad, 5000);
}

/* A VECTOR payload: the vector header of a whole fp32 vector of n floats
 * with weight w, then the floats f(i). */
static void vec_payload(uint8_t *out, size_t n, double w, float (*f)(size_t))
{
    mm_wire_vec m = {.weight = w, .codec = MM_WIRE_CODEC_FP32, .count = n};
    mm_wire_put_vec(out, &m);
    for (size_t i = 0; i < n; i++) {
        float v = f ? f(i) : 0.0f;
        memcpy(out + MM_WIRE_VEC_HDR + 4 * i, &v, 4);
    }
}

static float half_i(size_t i) { return (float)i * 0.5f; }
static float ident(size_t i) { return (float)i; }

/* Builds HELLO + VECTOR + PING and feeds them in chunks of `step` bytes. */
static void decode_stream(size_t step)
{
    enum { N = 257 };
    uint8_t stream[3 * MM_WIRE_HDR_LEN + MM_WIRE_HELLO_LEN + MM_WIRE_VEC_HDR + 4 * N];
    size_t len = 0;
    mm_wire_hello hello = {.vec_len = N, .target = 3, .algo = MM_ALGO_PUSHSUM,
                           .codec = 4, .codec_frac = 0.01};
    memset(hello.fingerprint, 0x5A, 32);
    uint8_t hp[MM_WIRE_HELLO_LEN];
    mm_wire_put_hello(hp, &hello);
    mm_wire_header h = {.type = MM_WIRE_HELLO, .sender = 4, .payload_len = sizeof hp,
                        .payload_crc = mm_crc32c(0, hp, sizeof hp)};
    mm_wire_put_header(stream + len, &h);
    len += MM_WIRE_HDR_LEN;
    memcpy(stream + len, hp, sizeof hp);
    len += sizeof hp;
    uint8_t vp[MM_WIRE_VEC_HDR + 4 * N];
    vec_payload(vp, N, 0.25, half_i);
    h = (mm_wire_header){.type = MM_WIRE_VECTOR, .sender = 4, .exchange = 9,
                         .payload_len = sizeof vp, .payload_crc = mm_crc32c(0, vp, sizeof vp)};
    mm_wire_put_header(stream + len, &h);
    len += MM_WIRE_HDR_LEN;
    memcpy(stream + len, vp, sizeof vp);
    len += sizeof vp;
    h = (mm_wire_header){.type = MM_WIRE_PING, .sender = 4};
    mm_wire_put_header(stream + len, &h);
    len += MM_WIRE_HDR_LEN;

    uint8_t *vbuf = malloc(MM_WIRE_VEC_HDR + 4 * N);
    mm_wire_rx rx = {0};
    mm_wire_rx_init(&rx);
    int frames = 0;
    size_t pos = 0;
    while (pos < len) {
        uint8_t *p;
        size_t want;
        mm_wire_rx_want(&rx, &p, &want);
        assert_true(want > 0);
        size_t n = want < step ? want : step;
        if (n > len - pos)
            n = len - pos;
        memcpy(p, stream + pos, n);
        pos += n;
        mm_rx_event ev = mm_wire_rx_advance(&rx, n);
        assert_int_not_equal(ev, MM_RX_ERROR);
        if (ev != MM_RX_FRAME)
            continue;
        frames++;
        if (frames == 1) {
            assert_int_equal(rx.hdr.type, MM_WIRE_HELLO);
            mm_wire_hello g;
            mm_wire_get_hello(rx.payload, &g);
            assert_int_equal(g.vec_len, N);
            assert_int_equal(g.target, 3);
            assert_int_equal(g.algo, MM_ALGO_PUSHSUM);
            assert_int_equal(g.codec, 4);
            assert_true(g.codec_frac == 0.01);
            rx.hello_done = true;
            rx.vec_len = N;
            rx.vec_buf = vbuf;
        } else if (frames == 2) {
            assert_int_equal(rx.hdr.type, MM_WIRE_VECTOR);
            assert_int_equal(rx.hdr.exchange, 9);
            assert_memory_equal(rx.payload, vp, sizeof vp);
            assert_true(rx.vec.weight == 0.25);
            assert_int_equal(rx.vec.count, N);
        } else {
            assert_int_equal(rx.hdr.type, MM_WIRE_PING);
        }
    }
    assert_int_equal(frames, 3);
    assert_false(mm_wire_rx_busy(&rx));

    /* the same stream with one payload bit flipped: refused as a checksum */
    stream[2 * MM_WIRE_HDR_LEN + MM_WIRE_HELLO_LEN + 100] ^= 4;
    mm_wire_rx_init(&rx);
    rx.hello_done = false;
    rx.vec_buf = NULL;
    pos = 0;
    mm_rx_event ev = MM_RX_MORE;
    while (pos < len && ev != MM_RX_ERROR) {
        uint8_t *p;
        size_t want;
        mm_wire_rx_want(&rx, &p, &want);
        size_t n = want < step ? want : step;
        memcpy(p, stream + pos, n);
        pos += n;
        ev = mm_wire_rx_advance(&rx, n);
        if (ev == MM_RX_FRAME && rx.hdr.type == MM_WIRE_HELLO) {
            rx.hello_done = true;
            rx.vec_len = N;
            rx.vec_buf = vbuf;
        }
    }
    assert_int_equal(ev, MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_CHECKSUM);
    free(vbuf);
}

/* Feeds one header (+ payload) to a fresh decoder in TLS mode; returns the
 * last event. */
/* the weight rule feed_tls's decoder enforces, installed as murmur node
 * installs its algorithm's (the mixing's rule, through weight_ok) */
static mm_weight_check feed_rule;

static mm_rx_event feed_tls(const mm_wire_header *h, const uint8_t *payload, uint8_t *vbuf,
                            uint64_t vec_len, mm_wire_rx *rx)
{
    memset(rx, 0, sizeof *rx);
    rx->weight_ok = mm_mix_weight_check;
    rx->weight_ud = &feed_rule;
    rx->hello_done = true;
    rx->vec_len = vec_len;
    rx->vec_buf = vbuf;
    rx->no_payload_crc = true;
    mm_wire_rx_init(rx);
    assert_true(rx->no_payload_crc); /* kept across init, like hello_done */
    uint8_t raw[MM_WIRE_HDR_LEN];
    mm_wire_put_header(raw, h);
    uint8_t *p;
    size_t want;
    mm_wire_rx_want(rx, &p, &want);
    assert_int_equal(want, MM_WIRE_HDR_LEN);
    memcpy(p, raw, want);
    mm_rx_event ev = mm_wire_rx_advance(rx, want);
    if (ev != MM_RX_MORE)
        return ev;
    mm_wire_rx_want(rx, &p, &want);
    memcpy(p, payload, want);
    return mm_wire_rx_advance(rx, want);
}

/* On a TLS connection the payload CRC is not used (the AEAD authenticates
 * every byte): the field must be 0, and the payload is not checksummed;
 * NaN/Inf are still refused. */
static void tls_no_payload_crc(void **s)
{
    enum { N = 100 };
    uint8_t vp[MM_WIRE_VEC_HDR + 4 * N], vbuf[MM_WIRE_VEC_HDR + 4 * N];
    vec_payload(vp, N, 1.0, ident);
    mm_wire_rx rx;
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = 1, .exchange = 3,
                        .payload_len = sizeof vp};
    assert_int_equal(feed_tls(&h, vp, vbuf, N, &rx), MM_RX_FRAME);
    assert_memory_equal(vbuf, vp, sizeof vp);
    /* a CRC where 0 belongs: refused before any payload byte is read */
    h.payload_crc = mm_crc32c(0, vp, sizeof vp);
    assert_int_equal(feed_tls(&h, vp, vbuf, N, &rx), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_CHECKSUM);
    assert_non_null(strstr(rx.why, "must be 0"));
    /* NaN still refused */
    h.payload_crc = 0;
    float nan = NAN;
    memcpy(vp + MM_WIRE_VEC_HDR + 4 * 7, &nan, 4);
    assert_int_equal(feed_tls(&h, vp, vbuf, N, &rx), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_VALUES);
    /* the same zero CRC field in plaintext is a checksum error */
    memcpy(vp + MM_WIRE_VEC_HDR + 4 * 7, &(float){7.0f}, 4);
    memset(&rx, 0, sizeof rx);
    rx.hello_done = true;
    rx.vec_len = N;
    rx.vec_buf = vbuf;
    mm_wire_rx_init(&rx);
    uint8_t raw[MM_WIRE_HDR_LEN], *p;
    size_t want;
    mm_wire_put_header(raw, &h);
    mm_wire_rx_want(&rx, &p, &want);
    memcpy(p, raw, want);
    assert_int_equal(mm_wire_rx_advance(&rx, want), MM_RX_MORE);
    mm_wire_rx_want(&rx, &p, &want);
    memcpy(p, vp, want);
    assert_int_equal(mm_wire_rx_advance(&rx, want), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_CHECKSUM);
}

/* The weight of a VECTOR per rule (docs/protocol.md 3.2): dpsgd/async
 * exactly 1, pushsum within [2^-30, n]; anything else is refused as
 * MM_WIRE_E_WEIGHT (NaN/Inf stay MM_WIRE_E_VALUES). */
static void weight_rules(void **s)
{
    enum { N = 10 };
    uint8_t vp[MM_WIRE_VEC_HDR + 4 * N] = {0}, vbuf[MM_WIRE_VEC_HDR + 4 * N];
    vec_payload(vp, N, 1.0, NULL);
    mm_wire_rx rx;
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = 1, .exchange = 3,
                        .payload_len = sizeof vp};
    static const struct { mm_weight_rule rule; double w; int ok; } cases[] = {
        {MM_WEIGHT_ONE, 1.0, 1}, {MM_WEIGHT_ONE, -2, 0}, {MM_WEIGHT_ONE, 0, 0},
        {MM_WEIGHT_ONE, 1e-300, 0}, {MM_WEIGHT_ONE, 1e300, 0}, {MM_WEIGHT_ONE, 4e-320, 0},
        {MM_WEIGHT_ONE, 1.0000000000000002, 0}, {MM_WEIGHT_ONE, 0.5, 0},
        {MM_WEIGHT_PUSHSUM, 1.0, 1}, {MM_WEIGHT_PUSHSUM, 0x1p-30, 1}, {MM_WEIGHT_PUSHSUM, 4.0, 1},
        {MM_WEIGHT_PUSHSUM, 0.37, 1}, {MM_WEIGHT_PUSHSUM, -2, 0}, {MM_WEIGHT_PUSHSUM, 0, 0},
        {MM_WEIGHT_PUSHSUM, -0.0, 0}, {MM_WEIGHT_PUSHSUM, 1e-300, 0},
        {MM_WEIGHT_PUSHSUM, 4e-320, 0}, {MM_WEIGHT_PUSHSUM, 0x1p-31, 0},
        {MM_WEIGHT_PUSHSUM, 4.000000000000001, 0}, {MM_WEIGHT_PUSHSUM, 1e300, 0},
        {MM_WEIGHT_FINITE, -2, 1}, {MM_WEIGHT_FINITE, 1e300, 1}, {MM_WEIGHT_FINITE, 4e-320, 1},
    };
    feed_rule.n_peers = 4;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        feed_rule.rule = cases[i].rule;
        memcpy(vp, &cases[i].w, 8);
        mm_rx_event ev = feed_tls(&h, vp, vbuf, N, &rx);
        assert_int_equal(ev, cases[i].ok ? MM_RX_FRAME : MM_RX_ERROR);
        if (!cases[i].ok) {
            assert_int_equal(rx.err, MM_WIRE_E_WEIGHT);
            assert_non_null(strstr(rx.why, "weight"));
        }
        assert_int_equal(mm_mix_weight_ok(cases[i].rule, cases[i].w, 4, NULL, 0), cases[i].ok);
    }
    /* not finite: a values error under every rule */
    for (int r = MM_WEIGHT_FINITE; r <= MM_WEIGHT_PUSHSUM; r++) {
        feed_rule.rule = (mm_weight_rule)r;
        double w = INFINITY;
        memcpy(vp, &w, 8);
        assert_int_equal(feed_tls(&h, vp, vbuf, N, &rx), MM_RX_ERROR);
        assert_int_equal(rx.err, MM_WIRE_E_VALUES);
    }
    feed_rule.rule = MM_WEIGHT_FINITE;
}

/* A VECTOR's vector header (docs/protocol.md 3.2) is checked the moment it
 * arrives: each field that breaks a rule is refused under its own reason,
 * before the body is read. */
typedef struct {
    uint8_t codec;
    bool chunks;
    uint64_t max_body;
    bool copies;
} vec_conn;


static mm_rx_event feed_vec(const vec_conn *vc, const mm_wire_vec *m, uint64_t body_len,
                            mm_wire_rx *rx)
{
    enum { N = 64 };
    static uint8_t payload[MM_WIRE_VEC_HDR + 4096], vbuf[MM_WIRE_VEC_HDR + 4096];
    memset(payload, 0, sizeof payload);
    mm_wire_put_vec(payload, m);
    memset(rx, 0, sizeof *rx);
    rx->hello_done = true;
    rx->no_payload_crc = true;
    rx->vec_len = N;
    rx->vec_buf = vbuf;
    rx->codec = vc->codec;
    rx->allow_chunks = vc->chunks;
    rx->max_body = vc->max_body;
    rx->copies = vc->copies;
    mm_wire_rx_init(rx);
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = 1,
                        .payload_len = MM_WIRE_VEC_HDR + body_len};
    uint8_t raw[MM_WIRE_HDR_LEN], *p;
    size_t want;
    mm_wire_put_header(raw, &h);
    mm_wire_rx_want(rx, &p, &want);
    memcpy(p, raw, want);
    mm_rx_event ev = mm_wire_rx_advance(rx, want);
    /* the payload a piece at a time: the header must be judged alone */
    size_t pos = 0;
    while (ev == MM_RX_MORE && pos < MM_WIRE_VEC_HDR + body_len) {
        mm_wire_rx_want(rx, &p, &want);
        size_t n = want < 7 ? want : 7;
        memcpy(p, payload + pos, n);
        pos += n;
        ev = mm_wire_rx_advance(rx, n);
        if (ev == MM_RX_ERROR)
            assert_true(pos <= MM_WIRE_VEC_HDR + 6); /* refused on its header */
    }
    return ev;
}

/* body_dst: a body (fp32, or a codec's: 64 bytes here either way) goes
 * where the owner says, asked once the vector header alone has arrived,
 * and is still checked there (CRC; an fp32 body's NaN/Inf). */
static float dst_buf[16];
static int dst_asked;
static void *to_dst(void *ud, const mm_wire_header *h, const mm_wire_vec *v, size_t body_len)
{
    dst_asked++;
    assert_int_equal(h->type, MM_WIRE_VECTOR);
    assert_int_equal(v->count, 16);
    assert_int_equal(body_len, 64);
    return ud ? dst_buf : NULL;
}

/* detach: after that many payload bytes (0: never), mm_wire_rx_detach_body:
 * the rest lands in the receive buffer, and dst_buf stays as it was. */
static mm_rx_event feed_to_dst(bool redirect, float poison, bool bad_crc, size_t detach,
                               mm_wire_rx *rx, uint8_t codec)
{
    static uint8_t vbuf[MM_WIRE_VEC_HDR + 64];
    uint8_t payload[MM_WIRE_VEC_HDR + 64];
    const mm_wire_vec m = {.weight = 1, .codec = codec, .count = 16};
    mm_wire_put_vec(payload, &m);
    float f[16];
    for (int k = 0; k < 16; k++)
        f[k] = (float)k * 0.25f - 1.0f;
    f[9] = poison;
    memcpy(payload + MM_WIRE_VEC_HDR, f, sizeof f);
    memset(vbuf, 0, sizeof vbuf);
    memset(dst_buf, 0, sizeof dst_buf);
    dst_asked = 0;
    memset(rx, 0, sizeof *rx);
    rx->hello_done = true;
    rx->vec_len = 16;
    rx->vec_buf = vbuf;
    rx->body_dst = to_dst;
    rx->body_ud = redirect ? dst_buf : NULL;
    if (codec != MM_WIRE_CODEC_FP32) {
        rx->codec = codec;
        rx->max_body = 64;
    }
    mm_wire_rx_init(rx);
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = 1, .payload_len = sizeof payload,
                        .payload_crc = mm_crc32c(0, payload, sizeof payload) ^ (bad_crc ? 1 : 0)};
    uint8_t raw[MM_WIRE_HDR_LEN], *p;
    size_t want, pos = 0;
    float dst_then[16];
    mm_wire_put_header(raw, &h);
    mm_wire_rx_want(rx, &p, &want);
    memcpy(p, raw, want);
    mm_rx_event ev = mm_wire_rx_advance(rx, want);
    while (ev == MM_RX_MORE) {
        mm_wire_rx_want(rx, &p, &want);
        if (pos < MM_WIRE_VEC_HDR) /* the vector header is read on its own */
            assert_int_equal(want, MM_WIRE_VEC_HDR - pos);
        size_t n = want < 24 ? want : 24;
        memcpy(p, payload + pos, n);
        pos += n;
        ev = mm_wire_rx_advance(rx, n);
        if (detach && pos == detach) {
            mm_wire_rx_detach_body(rx);
            memcpy(dst_then, dst_buf, sizeof dst_buf);
        }
    }
    assert_int_equal(dst_asked, 1);
    if (detach) { /* dst_buf untouched since; the frame whole in vbuf */
        assert_memory_equal(dst_buf, dst_then, sizeof dst_buf);
        if (ev == MM_RX_FRAME) {
            assert_ptr_equal(rx->body, vbuf + MM_WIRE_VEC_HDR);
            assert_memory_equal(vbuf + MM_WIRE_VEC_HDR, f, sizeof f);
        }
        return ev;
    }
    if (ev == MM_RX_FRAME) {
        const uint8_t *where = redirect ? (const uint8_t *)dst_buf : vbuf + MM_WIRE_VEC_HDR;
        assert_ptr_equal(rx->body, where);
        assert_memory_equal(where, f, sizeof f);
        if (redirect) /* nothing of the body in the receive buffer */
            for (size_t k = MM_WIRE_VEC_HDR; k < sizeof vbuf; k++)
                assert_int_equal(vbuf[k], 0);
    }
    return ev;
}

static void body_to_dst(void **s)
{
    (void)s;
    mm_wire_rx rx;
    const uint8_t fp32 = MM_WIRE_CODEC_FP32, int8 = 3;
    assert_int_equal(feed_to_dst(true, 2.0f, false, 0, &rx, fp32), MM_RX_FRAME);
    assert_int_equal(feed_to_dst(false, 2.0f, false, 0, &rx, fp32), MM_RX_FRAME);
    assert_int_equal(feed_to_dst(true, NAN, false, 0, &rx, fp32), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_VALUES);
    assert_int_equal(feed_to_dst(true, 2.0f, true, 0, &rx, fp32), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_CHECKSUM);
    /* taken back mid-body (the first 24 bytes, 6 floats, in dst_buf): the
     * rest goes to the receive buffer, the frame is whole and still checked
     * there (the NaN is float 9, after the cut) */
    assert_int_equal(feed_to_dst(true, 2.0f, false, MM_WIRE_VEC_HDR + 24, &rx, fp32), MM_RX_FRAME);
    assert_int_equal(feed_to_dst(true, NAN, false, MM_WIRE_VEC_HDR + 24, &rx, fp32), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_VALUES);
    assert_int_equal(feed_to_dst(true, 2.0f, true, MM_WIRE_VEC_HDR + 24, &rx, fp32), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_CHECKSUM);
    /* a codec's body goes there too (a streamed q's chunk into a staging
     * buffer); its bytes are the owner's check_body's to judge */
    assert_int_equal(feed_to_dst(true, NAN, false, 0, &rx, int8), MM_RX_FRAME);
    assert_int_equal(feed_to_dst(false, 2.0f, false, 0, &rx, int8), MM_RX_FRAME);
    assert_int_equal(feed_to_dst(true, 2.0f, true, 0, &rx, int8), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_CHECKSUM);
}

static void vector_header_rules(void **s)
{
    enum { N = 64 };
    const vec_conn fp = {0}, topk = {.codec = 4, .max_body = 200},
                   chunky = {.chunks = true};
    const mm_wire_vec whole = {.weight = 1, .codec = MM_WIRE_CODEC_FP32, .count = N};
    mm_wire_rx rx;
    mm_wire_vec m;
    static const struct { const char *what; int field; uint64_t val; mm_wire_err e; } bad[] = {
        {"codec", 1, 2, MM_WIRE_E_CODEC},
        {"unknown flag", 2, 0x80, MM_WIRE_E_TYPE},
        {"count 0", 3, 0, MM_WIRE_E_LENGTH},
        {"count past the end", 3, N + 1, MM_WIRE_E_LENGTH},
        {"a chunk where whole vectors go", 4, 8, MM_WIRE_E_LENGTH},
    };
    assert_int_equal(feed_vec(&fp, &whole, 4 * N, &rx), MM_RX_FRAME);
    assert_int_equal(rx.vec.count, N);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m = whole;
        switch (bad[i].field) {
        case 1: m.codec = (uint8_t)bad[i].val; break;
        case 2: m.flags = (uint8_t)bad[i].val; break;
        case 3: m.count = bad[i].val; break;
        case 4: m.offset = bad[i].val; m.count = N - bad[i].val; break;
        }
        uint64_t body = m.count && m.count <= N ? 4 * m.count : 4 * N;
        assert_int_equal(feed_vec(&fp, &m, body, &rx), MM_RX_ERROR);
        if (rx.err != bad[i].e)
            fail_msg("%s: error %s (%s), expected %s", bad[i].what, mm_wire_err_name(rx.err),
                     rx.why, mm_wire_err_name(bad[i].e));
    }
    /* bytes 10..11 carry consensus control's level, any value, round-trip */
    m = whole;
    m.level = 0xBEEF;
    assert_int_equal(feed_vec(&fp, &m, 4 * N, &rx), MM_RX_FRAME);
    assert_int_equal(rx.vec.level, 0xBEEF);
    /* aux must be finite */
    m = whole;
    m.aux = NAN;
    assert_int_equal(feed_vec(&fp, &m, 4 * N, &rx), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_VALUES);
    /* fp32: the body is exactly 4 bytes a float */
    assert_int_equal(feed_vec(&fp, &whole, 4 * N - 4, &rx), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_LENGTH);
    /* a chunk where chunks are allowed, and its exact length */
    m = whole;
    m.offset = 16;
    m.count = 32;
    assert_int_equal(feed_vec(&chunky, &m, 4 * 32, &rx), MM_RX_FRAME);
    m.count = 49; /* 16 + 49 > 64 */
    assert_int_equal(feed_vec(&chunky, &m, 4 * 49, &rx), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_LENGTH);
    /* another codec: its own, up to the connection's largest body; fp32
     * only as a RESET (a whole public copy), and never as a chunk */
    m = whole;
    m.codec = 4;
    assert_int_equal(feed_vec(&topk, &m, 150, &rx), MM_RX_FRAME);
    assert_int_equal(feed_vec(&topk, &m, 201, &rx), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_LENGTH);
    const vec_conn topk_big = {.codec = 4, .max_body = 4 * N, .copies = true};
    m.codec = MM_WIRE_CODEC_FP32;
    assert_int_equal(feed_vec(&topk_big, &m, 4 * N, &rx), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_CODEC);
    m.flags = MM_VEC_RESET;
    assert_int_equal(feed_vec(&topk_big, &m, 4 * N, &rx), MM_RX_FRAME);
    assert_true(rx.vec.flags & MM_VEC_RESET);
    /* a RESET is fp32 and exactly 4 n bytes, whatever the agreed codec: in
     * the agreed codec (a body shorter than the copy it claims to be) it is
     * refused on its header */
    m.codec = 4;
    assert_int_equal(feed_vec(&topk_big, &m, 150, &rx), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_CODEC);
    m.codec = MM_WIRE_CODEC_FP32;
    assert_int_equal(feed_vec(&topk_big, &m, 4 * N - 4, &rx), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_LENGTH);
    /* and only where public copies are kept (--compress) */
    const vec_conn fp_copies = {.copies = true};
    assert_int_equal(feed_vec(&fp_copies, &m, 4 * N, &rx), MM_RX_FRAME);
    assert_int_equal(feed_vec(&fp, &m, 4 * N, &rx), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_TYPE);
}

/* One frame more on a decoder that goes on (feed_vec starts afresh). */
static mm_rx_event feed_more(mm_wire_rx *rx, uint64_t exchange, const mm_wire_vec *m,
                             uint64_t body_len)
{
    static uint8_t payload[MM_WIRE_VEC_HDR + 4096];
    memset(payload, 0, sizeof payload);
    mm_wire_put_vec(payload, m);
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = 1, .exchange = exchange,
                        .payload_len = MM_WIRE_VEC_HDR + body_len};
    uint8_t raw[MM_WIRE_HDR_LEN], *p;
    size_t want;
    mm_wire_put_header(raw, &h);
    mm_wire_rx_want(rx, &p, &want);
    memcpy(p, raw, want);
    mm_rx_event ev = mm_wire_rx_advance(rx, want);
    size_t pos = 0;
    while (ev == MM_RX_MORE && pos < MM_WIRE_VEC_HDR + body_len) {
        mm_wire_rx_want(rx, &p, &want);
        memcpy(p, payload + pos, want);
        pos += want;
        ev = mm_wire_rx_advance(rx, want);
    }
    return ev;
}

/* The outer optimizer's fragments (docs/protocol.md 3.2, "Fragments"):
 * exchange e carries fragment e mod F, floats floor(f n / F) ..
 * floor((f+1) n / F) - 1; gossip sends it whole, the all-reduce in chunks
 * inside it; anything else (the whole vector, the fragment of another
 * exchange, a chunk across its end) is refused as bad_length. */
static void fragment_rules(void **s)
{
    (void)s;
    enum { N = 10 };
    static uint8_t vbuf[MM_WIRE_VEC_HDR + 4 * N];
    uint64_t lo, count;
    mm_wire_fragment(N, 3, 0, &lo, &count);
    assert_true(lo == 0 && count == 3);
    mm_wire_fragment(N, 3, 1, &lo, &count);
    assert_true(lo == 3 && count == 3);
    mm_wire_fragment(N, 3, 2, &lo, &count);
    assert_true(lo == 6 && count == 4);
    mm_wire_rx rx;
    for (int chunks = 0; chunks < 2; chunks++) {
        static const struct { uint64_t exchange, offset, count; bool ok; } cases[] = {
            {4, 3, 3, true},   /* 4 mod 3 = 1: floats 3..5 */
            {5, 6, 4, true},
            {3, 0, 3, true},
            {4, 0, N, false},  /* the whole vector */
            {4, 0, 3, false},  /* fragment 0 in an exchange of fragment 1 */
            {4, 3, 4, false},  /* across its end */
            {4, 4, 2, true},   /* a chunk inside it: the all-reduce's only */
            {4, 2, 2, false},  /* across its start */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            memset(&rx, 0, sizeof rx);
            rx.hello_done = rx.no_payload_crc = true;
            rx.vec_len = N;
            rx.vec_buf = vbuf;
            rx.fragments = 3;
            rx.allow_chunks = chunks;
            mm_wire_rx_init(&rx);
            mm_wire_vec m = {.weight = 1, .codec = MM_WIRE_CODEC_FP32, .offset = cases[i].offset,
                             .count = cases[i].count};
            bool want = cases[i].ok && (chunks || (cases[i].offset != 4 && cases[i].count != 2));
            mm_rx_event ev = feed_more(&rx, cases[i].exchange, &m, 4 * cases[i].count);
            if (want ? ev != MM_RX_FRAME : ev != MM_RX_ERROR || rx.err != MM_WIRE_E_LENGTH)
                fail_msg("fragments, %s: exchange %llu floats %llu..+%llu: event %d (%s)",
                         chunks ? "chunks" : "gossip", (unsigned long long)cases[i].exchange,
                         (unsigned long long)cases[i].offset, (unsigned long long)cases[i].count,
                         ev, rx.why);
        }
    }
}

/* Compressed gossip's streamed q (docs/protocol.md 3.2, "Streams"): chunks
 * of one exchange from float 0 to the end, in order; a chunk out of order,
 * of another exchange, a RESET or a whole vector inside a stream, a stream
 * that does not start at 0, and a chunked RESET are refused as bad_length;
 * a connection without streams takes whole vectors only. */
static void stream_rules(void **s)
{
    enum { N = 64 };
    static uint8_t vbuf[MM_WIRE_VEC_HDR + 4096];
    mm_wire_rx rx;
    const mm_wire_vec q = {.weight = 1, .codec = 3};
    /* a connection: int8 (codec 3) with streams; bodies up to 256 bytes */
#define OPEN(streams_on)                                                                   \
    do {                                                                                   \
        memset(&rx, 0, sizeof rx);                                                         \
        rx.hello_done = rx.no_payload_crc = rx.copies = true;                              \
        rx.streams = (streams_on);                                                         \
        rx.vec_len = N;                                                                    \
        rx.vec_buf = vbuf;                                                                 \
        rx.codec = 3;                                                                      \
        rx.max_body = 4 * N;                                                               \
        mm_wire_rx_init(&rx);                                                              \
    } while (0)
    mm_wire_vec m = q;
    OPEN(true);
    for (int round = 0; round < 2; round++) /* two streams of 3 chunks, then a whole q */
        for (uint64_t off = 0; off < N; off += 24) {
            m.offset = off;
            m.count = off + 24 < N ? 24 : N - off;
            assert_int_equal(feed_more(&rx, 7 + (uint64_t)round, &m, 20), MM_RX_FRAME);
            assert_int_equal(rx.stream_next, off + 24 < N ? off + 24 : 0);
        }
    m.offset = 0;
    m.count = N;
    assert_int_equal(feed_more(&rx, 9, &m, 80), MM_RX_FRAME);
    static const struct { const char *what; uint64_t exchange, offset, count; uint8_t flags; } bad[] = {
        {"a chunk skipped", 5, 48, 16, 0},
        {"a chunk again", 5, 0, 24, 0},
        {"another exchange inside the stream", 6, 24, 24, 0},
        {"a RESET inside the stream", 5, 0, N, MM_VEC_RESET},
        {"a whole q inside the stream", 5, 0, N, 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        OPEN(true);
        m = q;
        m.count = 24;
        assert_int_equal(feed_more(&rx, 5, &m, 20), MM_RX_FRAME);
        m.offset = bad[i].offset;
        m.count = bad[i].count;
        m.flags = bad[i].flags;
        if (m.flags & MM_VEC_RESET)
            m.codec = MM_WIRE_CODEC_FP32;
        mm_rx_event ev = feed_more(&rx, bad[i].exchange, &m, m.flags ? 4 * N : 20);
        if (ev != MM_RX_ERROR || rx.err != MM_WIRE_E_LENGTH)
            fail_msg("%s: event %d, error %s (%s)", bad[i].what, ev, mm_wire_err_name(rx.err),
                     rx.why);
    }
    /* a stream starts at float 0; a RESET is never a chunk; no streams:
     * whole vectors only */
    OPEN(true);
    m = q;
    m.offset = 24;
    m.count = 24;
    assert_int_equal(feed_more(&rx, 5, &m, 20), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_LENGTH);
    OPEN(true);
    m = q;
    m.codec = MM_WIRE_CODEC_FP32;
    m.flags = MM_VEC_RESET;
    m.count = 24;
    assert_int_equal(feed_more(&rx, 5, &m, 4 * 24), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_LENGTH);
    OPEN(false);
    m = q;
    m.count = 24;
    assert_int_equal(feed_more(&rx, 5, &m, 20), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_LENGTH);
#undef OPEN
}

/* HELLO v3: every field round-trips; its reserved bytes must be 0. */
/* A HELLO of 128 bytes and settings text through a fresh decoder: the
 * event, and the error when there is one. */
static mm_rx_event feed_hello(const uint8_t fixed[MM_WIRE_HELLO_LEN], const char *settings,
                              size_t len, mm_wire_rx *rx)
{
    static uint8_t q[MM_WIRE_HELLO_LEN + MM_WIRE_SETTINGS_MAX];
    memcpy(q, fixed, MM_WIRE_HELLO_LEN);
    memcpy(q + MM_WIRE_HELLO_LEN, settings, len);
    uint8_t ctrl[MM_WIRE_HDR_LEN];
    memset(rx, 0, sizeof *rx);
    mm_wire_rx_init(rx);
    mm_wire_header hd = {.type = MM_WIRE_HELLO, .payload_len = MM_WIRE_HELLO_LEN + len,
                         .payload_crc = mm_crc32c(0, q, MM_WIRE_HELLO_LEN + len)};
    mm_wire_put_header(ctrl, &hd);
    uint8_t *w;
    size_t want;
    mm_wire_rx_want(rx, &w, &want);
    memcpy(w, ctrl, want);
    assert_int_equal(mm_wire_rx_advance(rx, want), MM_RX_MORE);
    mm_wire_rx_want(rx, &w, &want);
    assert_int_equal(want, MM_WIRE_HELLO_LEN + len);
    memcpy(w, q, want);
    return mm_wire_rx_advance(rx, want);
}

/* The settings text of a HELLO (docs/protocol.md 3.1): its rules, a HELLO
 * that breaks them refused (bad_type) and one that keeps them taken, and
 * the difference of two texts named flag by flag with both values. */
static void hello_settings(void **s)
{
    static const char *const good[] = {
        "", "a\n", "gossip-steps=2\n", "allreduce-chunk=65536\nctx=64\nno-train\n",
        "k=v=w\n", "outer-momentum-decay=cosine:0.5\nz9-=~!\n",
        "abcdefghijklmnopqrstuvwxyz012345=1\n", /* a key of 32 bytes */
    };
    static const char *const bad[] = {
        "a", "gossip-steps=2", "=2\n", "A=1\n", "9a=1\n", "-a=1\n", "a=\n", "a b=1\n",
        "a=1 2\n", "a=1\n\n", "b=1\na=1\n", "a=1\na=2\n", "a\r\n", "a=\x7f\n",
        "a=\xc3\xa9\n", "abcdefghijklmnopqrstuvwxyz0123456=1\n", /* 33 bytes */
    };
    char why[200];
    uint8_t fixed[MM_WIRE_HELLO_LEN] = {0};
    mm_wire_rx rx;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_int_equal(mm_wire_settings_check(good[i], strlen(good[i]), why, sizeof why), 0);
        assert_int_equal(feed_hello(fixed, good[i], strlen(good[i]), &rx), MM_RX_FRAME);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(mm_wire_settings_check(bad[i], strlen(bad[i]), why, sizeof why), -1);
        assert_int_equal(feed_hello(fixed, bad[i], strlen(bad[i]), &rx), MM_RX_ERROR);
        assert_int_equal(rx.err, MM_WIRE_E_TYPE);
        assert_non_null(strstr(rx.why, "HELLO settings: "));
    }
    /* a NUL inside is no end of text */
    assert_int_equal(mm_wire_settings_check("a=1\n\0b\n", 6, why, sizeof why), -1);
    /* the longest text, to the byte */
    static char big[MM_WIRE_SETTINGS_MAX + 1];
    memset(big, 'x', sizeof big);
    memcpy(big, "a=", 2);
    big[MM_WIRE_SETTINGS_MAX - 1] = '\n';
    assert_int_equal(mm_wire_settings_check(big, MM_WIRE_SETTINGS_MAX, why, sizeof why), 0);
    assert_int_equal(feed_hello(fixed, big, MM_WIRE_SETTINGS_MAX, &rx), MM_RX_FRAME);
    big[MM_WIRE_SETTINGS_MAX - 1] = 'x';
    big[MM_WIRE_SETTINGS_MAX] = '\n';
    assert_int_equal(mm_wire_settings_check(big, MM_WIRE_SETTINGS_MAX + 1, why, sizeof why), -1);

    static const struct { const char *a, *b, *diff; int n; } diffs[] = {
        {"gossip-steps=2\n", "gossip-steps=2\n", "", 0},
        {"", "", "", 0},
        {"gossip-steps=2\n", "gossip-steps=1\n",
         "peer 3 runs --gossip-steps 2, peer 0 runs --gossip-steps 1", 1},
        {"a=1\nb=2\nc=3\n", "a=1\nb=9\nc=3\n", "peer 3 runs --b 2, peer 0 runs --b 9", 1},
        /* a key one side lacks: left out there, "without" when that side has none */
        {"outer=nesterov\nouter-lr=0.3\n", "outer=none\n",
         "peer 3 runs --outer nesterov --outer-lr 0.3, peer 0 runs --outer none", 2},
        {"outer-overlap\n", "", "peer 3 runs --outer-overlap, peer 0 runs without --outer-overlap",
         1},
        {"", "a=1\nb\n", "peer 3 runs without --a --b, peer 0 runs --a 1 --b", 2},
        {"a=1\n", "b=1\n", "peer 3 runs --a 1, peer 0 runs --b 1", 2},
        /* a flag against a value of the same key */
        {"a\n", "a=1\n", "peer 3 runs --a, peer 0 runs --a 1", 1},
    };
    for (size_t i = 0; i < sizeof diffs / sizeof diffs[0]; i++) {
        char out[MM_WIRE_REFUSE_MAX];
        int n = mm_wire_settings_diff(diffs[i].a, strlen(diffs[i].a), 3, diffs[i].b,
                                      strlen(diffs[i].b), 0, out, sizeof out);
        assert_int_equal(n, diffs[i].n);
        assert_string_equal(out, diffs[i].diff);
    }
    /* many differences: each side cut at a setting, within the room given */
    mm_text ta = {0}, tb = {0};
    for (int i = 0; i < 100; i++) {
        mm_text_put(&ta, "k%03d=%d\n", i, i);
        mm_text_put(&tb, "k%03d=%d\n", i, i + 1);
    }
    char out[300];
    int n = mm_wire_settings_diff(ta.p, ta.len, 1, tb.p, tb.len, 2, out, sizeof out);
    assert_int_equal(n, 100);
    assert_true(strlen(out) < sizeof out - 1);
    assert_non_null(strstr(out, "peer 1 runs --k000 0 --k001 1"));
    assert_non_null(strstr(out, " ..., peer 2 runs --k000 1"));
    assert_non_null(strstr(out + strlen(out) - 4, " ..."));
    mm_text_free(&ta);
    mm_text_free(&tb);
}

static void hello_fields(void **s)
{
    mm_wire_hello h = {.vec_len = 1234567, .target = 9, .algo = MM_ALGO_ALLREDUCE,
                       .algo_variant = 1, .codec = 3, .codec_block = 256, .codec_frac = 0}, g;
    memset(h.fingerprint, 0xA5, 32);
    uint8_t p[MM_WIRE_HELLO_LEN];
    mm_wire_put_hello(p, &h);
    mm_wire_get_hello(p, &g);
    assert_memory_equal(g.fingerprint, h.fingerprint, 32);
    assert_true(g.vec_len == h.vec_len);
    assert_int_equal(g.target, 9);
    assert_int_equal(g.algo, MM_ALGO_ALLREDUCE);
    assert_int_equal(g.algo_variant, 1);
    assert_int_equal(p[50], 1);
    assert_int_equal(g.codec, 3);
    assert_int_equal(g.codec_block, 256);
    for (int off = 44; off < 52; off++) {
        if (off >= 48 && off < 51)
            continue; /* algo, codec, algo variant */
        uint8_t q[MM_WIRE_HELLO_LEN], ctrl[MM_WIRE_HDR_LEN];
        memcpy(q, p, sizeof q);
        q[off] = off == 51 ? 0x02 : 1; /* (byte 51's bit 0 is the JOIN flag, section 7.2) */
        mm_wire_rx rx = {0};
        mm_wire_rx_init(&rx);
        mm_wire_header hd = {.type = MM_WIRE_HELLO, .payload_len = sizeof q,
                             .payload_crc = mm_crc32c(0, q, sizeof q)};
        mm_wire_put_header(ctrl, &hd);
        uint8_t *w;
        size_t want;
        mm_wire_rx_want(&rx, &w, &want);
        memcpy(w, ctrl, want);
        assert_int_equal(mm_wire_rx_advance(&rx, want), MM_RX_MORE);
        mm_wire_rx_want(&rx, &w, &want);
        memcpy(w, q, want);
        assert_int_equal(mm_wire_rx_advance(&rx, want), MM_RX_ERROR);
        assert_int_equal(rx.err, MM_WIRE_E_TYPE);
    }
    assert_string_equal(mm_algo_name(MM_ALGO_PUSHSUM), "pushsum");
    assert_null(mm_algo_name((mm_algo)77));
    assert_string_equal(mm_algo_variant_name(MM_ALGO_ALLREDUCE, 1), "halving");
    assert_string_equal(mm_algo_variant_name(MM_ALGO_ALLREDUCE, 0), "ring");
    assert_string_equal(mm_algo_variant_name(MM_ALGO_ALLREDUCE, 2), "allgather");
    assert_null(mm_algo_variant_name(MM_ALGO_ALLREDUCE, 3));
    assert_string_equal(mm_algo_variant_name(MM_ALGO_DPSGD, 0), "");
    assert_null(mm_algo_variant_name(MM_ALGO_DPSGD, 1));
}

/* The receive path's one pass: CRC32C and the NaN/Inf check together, the
 * same CRC as mm_crc32c and the same verdict as mm_all_finite, at every
 * offset of every one of the CRC's three interleaved chains. */
static void crc_finite_matches(void **s)
{
    size_t cap = 20000;
    float *buf = malloc((cap + 2) * sizeof *buf);
    srand(11);
    for (int k = 0; k < 400; k++) {
        size_t n = (size_t)rand() % cap, at = (size_t)rand() % 2;
        float *v = buf + at;
        for (size_t i = 0; i < n; i++)
            v[i] = (float)(rand() % 2000001 - 1000000) * 1e-3f;
        int plant = n ? rand() % 4 : 0; /* 0: none, 1: NaN, 2: +Inf, 3: -Inf */
        if (plant) {
            size_t j = k % 8 == 0 ? 0 : k % 8 == 1 ? n - 1 : (size_t)rand() % n;
            v[j] = plant == 1 ? NAN : plant == 2 ? INFINITY : -INFINITY;
        }
        if (k % 5 == 0 && n) /* the largest finite magnitudes are finite */
            v[(size_t)rand() % n] = k % 10 ? FLT_MAX : -FLT_MAX;
        bool nonfinite = !plant;
        uint32_t c0 = (uint32_t)rand();
        assert_int_equal(mm_crc32c_finite(c0, v, n, &nonfinite), mm_crc32c(c0, v, 4 * n));
        assert_int_equal(nonfinite, !mm_all_finite(v, n, NULL));
        assert_int_equal(nonfinite, plant != 0);
        /* a byte-misaligned start (the wire never makes one, but it is correct) */
        float w[64];
        size_t m = n < 64 ? n : 64;
        memcpy(w, v, 4 * m);
        uint8_t *u = (uint8_t *)buf + 1;
        memcpy(u, w, 4 * m);
        assert_int_equal(mm_crc32c_finite(c0, (const float *)(const void *)u, m, &nonfinite),
                         mm_crc32c(c0, u, 4 * m));
        assert_int_equal(nonfinite, !mm_all_finite(w, m, NULL));
    }
    free(buf);
}

/* A NaN or Inf anywhere in an fp32 body, the body fed in reads of any
 * length (so that floats are cut between reads, and the vector header's
 * last bytes share a read with the first floats): refused as
 * MM_WIRE_E_VALUES naming the first bad value; with a bit flipped elsewhere
 * too, refused as a checksum (the verdict waits for the CRC). */
static void values_checked_any_split(void **s)
{
    enum { N = 37 };
    uint8_t vp[MM_WIRE_VEC_HDR + 4 * N], vbuf[MM_WIRE_VEC_HDR + 4 * N];
    const size_t bad_at[] = {0, 1, 2, 17, 35, 36};
    for (size_t b = 0; b < sizeof bad_at / sizeof *bad_at; b++)
        for (size_t step = 1; step <= 13; step++)
            for (int flip = 0; flip < 2; flip++) {
                vec_payload(vp, N, 1.0, half_i);
                float x = b % 2 ? -INFINITY : NAN;
                memcpy(vp + MM_WIRE_VEC_HDR + 4 * bad_at[b], &x, 4);
                mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = 1, .exchange = 1,
                                    .payload_len = sizeof vp,
                                    .payload_crc = mm_crc32c(0, vp, sizeof vp)};
                if (flip) /* a value after the bad one, or before when it is last */
                    vp[MM_WIRE_VEC_HDR + 4 * (bad_at[b] == N - 1 ? 0 : N - 1)] ^= 1;
                uint8_t raw[MM_WIRE_HDR_LEN];
                mm_wire_put_header(raw, &h);
                mm_wire_rx rx = {0};
                rx.hello_done = true;
                rx.vec_len = N;
                rx.vec_buf = vbuf;
                mm_wire_rx_init(&rx);
                mm_rx_event ev = MM_RX_MORE;
                size_t pos = 0, len = MM_WIRE_HDR_LEN + sizeof vp;
                while (pos < len && ev == MM_RX_MORE) {
                    uint8_t *p;
                    size_t want;
                    mm_wire_rx_want(&rx, &p, &want);
                    size_t n = want < step ? want : step;
                    for (size_t i = 0; i < n; i++, pos++)
                        p[i] = pos < MM_WIRE_HDR_LEN ? raw[pos] : vp[pos - MM_WIRE_HDR_LEN];
                    ev = mm_wire_rx_advance(&rx, n);
                }
                assert_int_equal(ev, MM_RX_ERROR);
                assert_int_equal(pos, len); /* refused only once the whole frame is in */
                assert_int_equal(rx.err, flip ? MM_WIRE_E_CHECKSUM : MM_WIRE_E_VALUES);
                if (!flip) {
                    char want_why[64];
                    snprintf(want_why, sizeof want_why, "value %zu of %d ", bad_at[b], N);
                    assert_non_null(strstr(rx.why, want_why));
                }
            }
}

static void decoder_any_split(void **s)
{
    for (size_t step = 1; step < 64; step++)
        decode_stream(step);
    decode_stream(1000);
    decode_stream(100000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc_known_values),
        cmocka_unit_test(crc_hw_matches_sw),
        cmocka_unit_test(header_round_trip),
        cmocka_unit_test(header_refusals),
        cmocka_unit_test(finite_check),
        cmocka_unit_test(decoder_any_split),
        cmocka_unit_test(crc_finite_matches),
        cmocka_unit_test(values_checked_any_split),
        cmocka_unit_test(tls_no_payload_crc),
        cmocka_unit_test(weight_rules),
        cmocka_unit_test(vector_header_rules),
        cmocka_unit_test(stream_rules),
        cmocka_unit_test(fragment_rules),
        cmocka_unit_test(body_to_dst),
        cmocka_unit_test(hello_fields),
        cmocka_unit_test(hello_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
