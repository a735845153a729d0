/* The wire format without sockets: CRC32C against published check values
 * and hardware against software, header round trips and every refusal, and
 * the incremental decoder fed in every split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gossip/wire.h"

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
    free(buf);
}

static void header_round_trip(void **s)
{
    uint8_t raw[MM_WIRE_HDR_LEN];
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = 0xDEADBEEF, .round = 1ULL << 50,
                        .payload_len = 8 + 4 * 123, .payload_crc = 0x12345678}, g;
    mm_wire_put_header(raw, &h);
    assert_memory_equal(raw, "MRMR", 4);
    char why[160];
    assert_int_equal(mm_wire_get_header(raw, true, 123, &g, why, sizeof why), MM_WIRE_OK);
    assert_int_equal(g.sender, h.sender);
    assert_true(g.round == h.round);
    assert_true(g.payload_len == h.payload_len);
    assert_int_equal(g.payload_crc, h.payload_crc);
    /* wrong vector length for this connection */
    assert_int_equal(mm_wire_get_header(raw, true, 124, &g, why, sizeof why), MM_WIRE_E_LENGTH);
    /* a vector before the HELLO */
    assert_int_equal(mm_wire_get_header(raw, false, 123, &g, why, sizeof why), MM_WIRE_E_TYPE);
    /* every single-bit flip of the header is caught */
    for (int bit = 0; bit < MM_WIRE_HDR_LEN * 8; bit++) {
        uint8_t bad[MM_WIRE_HDR_LEN];
        memcpy(bad, raw, sizeof bad);
        bad[bit / 8] ^= (uint8_t)(1 << (bit % 8));
        assert_int_not_equal(mm_wire_get_header(bad, true, 123, &g, why, sizeof why), MM_WIRE_OK);
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
    assert_true(mm_wire_all_finite(v, 9000, &bad));
    v[8999] = NAN;
    assert_false(mm_wire_all_finite(v, 9000, &bad));
    assert_int_equal(bad, 8999);
    v[8999] = 1e38f;
    v[5000] = -INFINITY;
    assert_false(mm_wire_all_finite(v, 9000, &bad));
    assert_int_equal(bad, 5000);
}

/* Builds HELLO + VECTOR + PING and feeds them in chunks of `step` bytes. */
static void decode_stream(size_t step)
{
    enum { N = 257 };
    uint8_t stream[3 * MM_WIRE_HDR_LEN + MM_WIRE_HELLO_LEN + 8 + 4 * N];
    size_t len = 0;
    mm_wire_hello hello = {.vec_len = N, .target = 3};
    memset(hello.fingerprint, 0x5A, 32);
    uint8_t hp[MM_WIRE_HELLO_LEN];
    mm_wire_put_hello(hp, &hello);
    mm_wire_header h = {.type = MM_WIRE_HELLO, .sender = 4, .payload_len = sizeof hp,
                        .payload_crc = mm_crc32c(0, hp, sizeof hp)};
    mm_wire_put_header(stream + len, &h);
    len += MM_WIRE_HDR_LEN;
    memcpy(stream + len, hp, sizeof hp);
    len += sizeof hp;
    uint8_t vp[8 + 4 * N];
    double w = 0.25;
    memcpy(vp, &w, 8);
    for (int i = 0; i < N; i++) {
        float f = (float)i * 0.5f;
        memcpy(vp + 8 + 4 * i, &f, 4);
    }
    h = (mm_wire_header){.type = MM_WIRE_VECTOR, .sender = 4, .round = 9,
                         .payload_len = sizeof vp, .payload_crc = mm_crc32c(0, vp, sizeof vp)};
    mm_wire_put_header(stream + len, &h);
    len += MM_WIRE_HDR_LEN;
    memcpy(stream + len, vp, sizeof vp);
    len += sizeof vp;
    h = (mm_wire_header){.type = MM_WIRE_PING, .sender = 4};
    mm_wire_put_header(stream + len, &h);
    len += MM_WIRE_HDR_LEN;

    uint8_t *vbuf = malloc(8 + 4 * N);
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
            rx.hello_done = true;
            rx.vec_len = N;
            rx.vec_buf = vbuf;
        } else if (frames == 2) {
            assert_int_equal(rx.hdr.type, MM_WIRE_VECTOR);
            assert_int_equal(rx.hdr.round, 9);
            assert_memory_equal(rx.payload, vp, sizeof vp);
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
static mm_weight_rule feed_rule; /* the weight rule feed_tls's decoder enforces */
static uint32_t feed_peers;

static mm_rx_event feed_tls(const mm_wire_header *h, const uint8_t *payload, uint8_t *vbuf,
                            uint64_t vec_len, mm_wire_rx *rx)
{
    memset(rx, 0, sizeof *rx);
    rx->weight_rule = feed_rule;
    rx->n_peers = feed_peers;
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
    uint8_t vp[8 + 4 * N], vbuf[8 + 4 * N];
    double w = 0.5;
    memcpy(vp, &w, 8);
    for (int i = 0; i < N; i++) {
        float f = (float)i;
        memcpy(vp + 8 + 4 * i, &f, 4);
    }
    mm_wire_rx rx;
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = 1, .round = 3,
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
    memcpy(vp + 8 + 4 * 7, &nan, 4);
    assert_int_equal(feed_tls(&h, vp, vbuf, N, &rx), MM_RX_ERROR);
    assert_int_equal(rx.err, MM_WIRE_E_VALUES);
    /* the same zero CRC field in plaintext is a checksum error */
    memcpy(vp + 8 + 4 * 7, &(float){7.0f}, 4);
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
    uint8_t vp[8 + 4 * N] = {0}, vbuf[8 + 4 * N];
    mm_wire_rx rx;
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = 1, .round = 3, .payload_len = sizeof vp};
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
    feed_peers = 4;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        feed_rule = cases[i].rule;
        memcpy(vp, &cases[i].w, 8);
        mm_rx_event ev = feed_tls(&h, vp, vbuf, N, &rx);
        assert_int_equal(ev, cases[i].ok ? MM_RX_FRAME : MM_RX_ERROR);
        if (!cases[i].ok) {
            assert_int_equal(rx.err, MM_WIRE_E_WEIGHT);
            assert_non_null(strstr(rx.why, "weight"));
        }
        assert_int_equal(mm_wire_weight_ok(cases[i].rule, cases[i].w, 4, NULL, 0), cases[i].ok);
    }
    /* not finite: a values error under every rule */
    for (int r = MM_WEIGHT_FINITE; r <= MM_WEIGHT_PUSHSUM; r++) {
        feed_rule = (mm_weight_rule)r;
        double w = INFINITY;
        memcpy(vp, &w, 8);
        assert_int_equal(feed_tls(&h, vp, vbuf, N, &rx), MM_RX_ERROR);
        assert_int_equal(rx.err, MM_WIRE_E_VALUES);
    }
    feed_rule = MM_WEIGHT_FINITE;
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
        cmocka_unit_test(tls_no_payload_crc),
        cmocka_unit_test(weight_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
