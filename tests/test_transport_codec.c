/* Codec bodies on a real loopback socket (issue 16, item 4): a peer whose
 * HELLO agreed a codec refuses every VECTOR body that codec does not
 * accept (an index out of range, a varint that is not minimal, a NaN or
 * infinite scale or value, an int8 code of -128, sign padding bits, a
 * truncated payload), counts it as bad_codec, closes the connection, and
 * never lends the body to its owner; a good body of the same codec on the
 * next connection is delivered byte for byte. The attacker poses as peer 0 (the lower id dials)
 * of 2 and writes frames by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <math.h>

#include "tests/tnet.h"
#include "gossip/codec.h"

#define VLEN 1001 /* not a multiple of 8: sign has padding bits */
#define VICTIM 1
#define ATT 0

typedef struct {
    uv_loop_t loop;
    uv_timer_t wake;
    mm_transport *t;
    char addr[2][40];
    const char *addrs[2];
    uint64_t delivered;
    uint8_t last[16384];
    size_t last_len;
    uint8_t last_codec;
    mm_codec *codec;        /* checks the bodies */
} victim;

static void v_on_vector(void *ud, uint32_t peer, uint64_t round, const mm_wire_vec *meta,
                        const void *body, size_t len)
{
    victim *v = ud;
    (void)round;
    v->delivered++;
    v->last_codec = meta->codec;
    v->last_len = len < sizeof v->last ? len : sizeof v->last;
    memcpy(v->last, body, v->last_len);
    mm_transport_release(v->t, peer);
}
static void v_on_sent(void *ud, uint32_t p, uint64_t r, bool ok) { (void)ud; (void)p; (void)r; (void)ok; }
static void v_on_peer(void *ud, uint32_t p, mm_peer_state s) { (void)ud; (void)p; (void)s; }
static void v_wake(uv_timer_t *h) { (void)h; }

static int check_body(void *ud, const uint8_t *body, size_t len, char *why, size_t whylen)
{
    return mm_codec_check(ud, body, len, why, whylen) == MM_CODEC_OK ? 0 : -1;
}

static void victim_start(victim *v, const mm_codec_spec *spec)
{
    memset(v, 0, sizeof *v);
    uv_loop_init(&v->loop);
    uv_timer_init(&v->loop, &v->wake);
    uv_timer_start(&v->wake, v_wake, 5, 5);
    for (int i = 0; i < 2; i++) {
        snprintf(v->addr[i], sizeof v->addr[i], "127.0.0.1:%d", tn_free_port());
        v->addrs[i] = v->addr[i];
    }
    mm_transport_config c = {.self_id = VICTIM, .n_peers = 2, .addrs = v->addrs,
                             .vec_len = VLEN, .plaintext = true, .weight_rule = MM_WEIGHT_ONE,
                             .codec = (uint8_t)spec->kind, .codec_block = spec->block,
                             .codec_frac = spec->frac, .frame_timeout_ms = 500};
    memset(c.fingerprint, 0xAB, 32);
    char cerr[200];
    v->codec = mm_codec_new(spec, VLEN, cerr, sizeof cerr);
    assert_non_null(v->codec);
    c.check_body = check_body; /* as murmur node does: the codec's own rules */
    c.check_ud = v->codec;
    c.codec_name = mm_codec_kind_name(spec->kind);
    uint64_t q = mm_codec_max_len(spec, VLEN);
    c.max_body = q > 4 * VLEN ? q : 4 * VLEN;
    mm_transport_callbacks cb = {.on_vector = v_on_vector, .on_sent = v_on_sent,
                                 .on_peer = v_on_peer, .ud = v};
    char err[256] = "";
    v->t = mm_transport_new(&v->loop, &c, &cb, err, sizeof err);
    if (!v->t)
        fprintf(stderr, "victim: %s\n", err);
    assert_non_null(v->t);
}

static void victim_stop(victim *v)
{
    int closed = 0;
    mm_transport_shutdown(v->t, tn_closed, &closed);
    uint64_t end = uv_hrtime() / 1000000 + 5000;
    while (!closed && uv_hrtime() / 1000000 < end)
        uv_run(&v->loop, UV_RUN_ONCE);
    mm_transport_free(v->t);
    mm_codec_free(v->codec);
    uv_close((uv_handle_t *)&v->wake, NULL);
    for (int i = 0; i < 100 && uv_loop_alive(&v->loop); i++)
        uv_run(&v->loop, UV_RUN_NOWAIT);
    assert_int_equal(uv_loop_close(&v->loop), 0);
}

static int att_connect(victim *v)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)atoi(strrchr(v->addr[VICTIM], ':') + 1))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

static void att_frame(int fd, uint16_t type, uint64_t round, const void *payload, size_t len)
{
    uint8_t hdr[MM_WIRE_HDR_LEN];
    mm_wire_header h = {.type = type, .sender = ATT, .round = round, .payload_len = len,
                        .payload_crc = mm_crc32c(0, payload, len)};
    mm_wire_put_header(hdr, &h);
    assert_int_equal(send(fd, hdr, sizeof hdr, MSG_NOSIGNAL), (ssize_t)sizeof hdr);
    const uint8_t *p = payload;
    while (len) { /* small payloads: the socket buffer takes them */
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) {
            usleep(1000);
            continue;
        }
        assert_true(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

/* HELLO naming spec, then a VECTOR of body in that codec. */
static int att_send(victim *v, const mm_codec_spec *spec, const uint8_t *body, size_t len)
{
    int fd = att_connect(v);
    mm_wire_hello h = {.vec_len = VLEN, .target = VICTIM, .algo = MM_ALGO_DPSGD,
                       .codec = (uint8_t)spec->kind, .codec_block = spec->block,
                       .codec_frac = spec->frac};
    memset(h.fingerprint, 0xAB, 32);
    uint8_t hb[MM_WIRE_HELLO_LEN];
    mm_wire_put_hello(hb, &h);
    att_frame(fd, MM_WIRE_HELLO, 0, hb, sizeof hb);
    uint8_t *p = malloc(MM_WIRE_VEC_HDR + len);
    mm_wire_vec m = {.weight = 1.0, .codec = (uint8_t)spec->kind, .count = VLEN};
    mm_wire_put_vec(p, &m);
    memcpy(p + MM_WIRE_VEC_HDR, body, len);
    att_frame(fd, MM_WIRE_VECTOR, 0, p, MM_WIRE_VEC_HDR + len);
    free(p);
    return fd;
}

static bool closed_by_peer(int fd)
{
    for (;;) {
        uint8_t buf[1024];
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0)
            continue;
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    }
}

/* Sends body; it must be refused (bad_codec + 1, connection closed) and
 * never delivered. */
static void expect_refused(victim *v, const mm_codec_spec *spec, const uint8_t *body,
                           size_t len, const char *what)
{
    char why[200];
    mm_codec *c = mm_codec_new(spec, VLEN, why, sizeof why);
    assert_non_null(c);
    /* the crafted body is really one the codec refuses */
    assert_int_not_equal(mm_codec_check(c, body, len, why, sizeof why), MM_CODEC_OK);
    mm_codec_free(c);
    mm_transport_stats st;
    mm_transport_get_stats(v->t, &st);
    uint64_t before = st.bad_codec, delivered = v->delivered;
    int fd = att_send(v, spec, body, len);
    uint64_t end = uv_hrtime() / 1000000 + 5000;
    bool closed = false;
    while (uv_hrtime() / 1000000 < end) {
        uv_run(&v->loop, UV_RUN_ONCE);
        mm_transport_get_stats(v->t, &st);
        if (st.bad_codec > before && (closed = closed_by_peer(fd)))
            break;
    }
    close(fd);
    if (st.bad_codec != before + 1 || !closed)
        fail_msg("%s: bad_codec %llu -> %llu, closed %d", what, (unsigned long long)before,
                 (unsigned long long)st.bad_codec, closed);
    assert_int_equal(v->delivered, delivered);
}

/* A good body: delivered byte for byte (the peer was not harmed). */
static void expect_delivered(victim *v, const mm_codec_spec *spec, const uint8_t *body,
                             size_t len)
{
    uint64_t want = v->delivered + 1;
    int fd = att_send(v, spec, body, len);
    uint64_t end = uv_hrtime() / 1000000 + 5000;
    while (v->delivered < want && uv_hrtime() / 1000000 < end)
        uv_run(&v->loop, UV_RUN_ONCE);
    close(fd);
    assert_int_equal(v->delivered, want);
    assert_int_equal(v->last_codec, spec->kind);
    assert_int_equal(v->last_len, len);
    assert_memory_equal(v->last, body, len);
}

static void set_f32(uint8_t *p, float f) { memcpy(p, &f, 4); }

static void every_codec(void **s)
{
    (void)s;
    const char *specs[] = {"bf16", "int8", "sign", "topk:0.1", "randk:0.1"};
    float x[VLEN];
    for (int i = 0; i < VLEN; i++)
        x[i] = (float)((i * 7919) % 1000) / 100.0f - 5.0f;
    for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
        mm_codec_spec spec;
        char why[200];
        assert_int_equal(mm_codec_parse(specs[si], &spec, why, sizeof why), 0);
        mm_codec *c = mm_codec_new(&spec, VLEN, why, sizeof why);
        assert_non_null(c);
        size_t cap = mm_codec_max_bytes(c), len = 0;
        uint8_t *good = malloc(cap), *bad = malloc(cap + 16);
        assert_int_equal(mm_codec_encode(c, x, NULL, 42, good, cap, &len, NULL, why, sizeof why),
                         MM_CODEC_OK);
        victim v;
        victim_start(&v, &spec);
        uint64_t m = (VLEN + spec.block - 1) / (spec.block ? spec.block : 1);
        /* every codec: one byte short */
        expect_refused(&v, &spec, good, len - 1, "truncated");
        memcpy(bad, good, len);
        switch (spec.kind) {
        case MM_CODEC_BF16:
            bad[6] = 0x80, bad[7] = 0x7f; /* +inf */
            expect_refused(&v, &spec, bad, len, "bf16 inf");
            bad[7] = 0xff, bad[6] = 0xc0; /* nan */
            expect_refused(&v, &spec, bad, len, "bf16 nan");
            break;
        case MM_CODEC_INT8:
            set_f32(bad + 4, NAN);
            expect_refused(&v, &spec, bad, len, "int8 NaN scale");
            memcpy(bad, good, len);
            set_f32(bad, INFINITY);
            expect_refused(&v, &spec, bad, len, "int8 Inf scale");
            memcpy(bad, good, len);
            set_f32(bad, -1.0f);
            expect_refused(&v, &spec, bad, len, "int8 negative scale");
            memcpy(bad, good, len);
            bad[4 * m + 17] = 0x80; /* code -128 */
            expect_refused(&v, &spec, bad, len, "int8 code -128");
            /* a block count that does not match: one scale too many */
            memcpy(bad, good, 4 * m);
            set_f32(bad + 4 * m, 1.0f);
            memcpy(bad + 4 * m + 4, good + 4 * m, len - 4 * m);
            expect_refused(&v, &spec, bad, len + 4, "int8 extra block");
            break;
        case MM_CODEC_SIGN:
            set_f32(bad + 8, INFINITY);
            expect_refused(&v, &spec, bad, len, "sign Inf scale");
            memcpy(bad, good, len);
            set_f32(bad + 8, NAN);
            expect_refused(&v, &spec, bad, len, "sign NaN scale");
            memcpy(bad, good, len);
            bad[len - 1] |= 0x80; /* an unused bit of the last byte */
            expect_refused(&v, &spec, bad, len, "sign padding");
            expect_refused(&v, &spec, good, len - 4, "sign missing block");
            break;
        case MM_CODEC_TOPK: {
            uint64_t k = mm_codec_k(&spec, VLEN);
            set_f32(bad, NAN);
            expect_refused(&v, &spec, bad, len, "topk NaN value");
            /* indices 0..k-2, then a gap that ends past n */
            size_t o = 4 * k;
            memcpy(bad, good, o);
            for (uint64_t j = 0; j + 1 < k; j++)
                bad[o++] = 0;
            bad[o++] = 0x80 | (VLEN & 0x7f);
            bad[o++] = (uint8_t)(VLEN >> 7);
            expect_refused(&v, &spec, bad, o, "topk index past the end");
            /* a varint that is not minimal (80 00): the only way to write a
             * repeated index would need a negative gap, which has no encoding */
            o = 4 * k;
            for (uint64_t j = 0; j + 1 < k; j++)
                bad[o++] = 0;
            bad[o++] = 0x80;
            bad[o++] = 0x00;
            expect_refused(&v, &spec, bad, o, "topk non-minimal varint");
            /* bytes after the k-th index */
            memcpy(bad, good, len);
            bad[len] = 0;
            expect_refused(&v, &spec, bad, len + 1, "topk trailing byte");
            break;
        }
        case MM_CODEC_RANDK:
            set_f32(bad + 8, NAN);
            expect_refused(&v, &spec, bad, len, "randk NaN value");
            memcpy(bad, good, len);
            set_f32(bad + 12, -INFINITY);
            expect_refused(&v, &spec, bad, len, "randk -Inf value");
            break;
        default:
            break;
        }
        expect_delivered(&v, &spec, good, len);
        victim_stop(&v);
        mm_codec_free(c);
        free(good);
        free(bad);
    }
}

int main(void)
{
    mm_log_set_level(MM_LOG_WARN);
    const struct CMUnitTest tests[] = {cmocka_unit_test(every_codec)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
