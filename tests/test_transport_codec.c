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
    uint8_t last_codec, last_flags;
    mm_codec *codec;        /* checks the bodies */
} victim;

static void v_on_vector(void *ud, uint32_t peer, uint64_t round, const mm_wire_vec *meta,
                        const void *body, size_t len)
{
    victim *v = ud;
    (void)round;
    v->delivered++;
    v->last_codec = meta->codec;
    v->last_flags = meta->flags;
    v->last_len = len < sizeof v->last ? len : sizeof v->last;
    memcpy(v->last, body, v->last_len);
    mm_transport_release(v->t, peer);
}
static void v_on_sent(void *ud, uint32_t p, uint64_t r, bool ok) { (void)ud; (void)p; (void)r; (void)ok; }
static void v_on_peer(void *ud, uint32_t p, mm_peer_state s) { (void)ud; (void)p; (void)s; }
static void v_wake(uv_timer_t *h) { (void)h; }

static int check_body(void *ud, const mm_wire_vec *meta, const uint8_t *body, size_t len,
                      char *why, size_t whylen)
{
    return mm_codec_check_part(ud, meta->count, body, len, why, whylen) == MM_CODEC_OK ? 0 : -1;
}

static bool victim_streams; /* the next victim takes streamed q's (chunks) */
/* the next victim's algorithm, its variant, all-reduce chunks and
 * fragments (the outer exchange's frames); the attacker's HELLO names the
 * same algorithm and variant */
static uint8_t victim_algo = MM_ALGO_DPSGD, victim_variant;
static bool victim_chunks;
static uint32_t victim_fragments;

static void victim_start(victim *v, const mm_codec_spec *spec, bool copies)
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
                             .vec_len = VLEN, .plaintext = true,
                             .codec = (uint8_t)spec->kind, .codec_block = spec->block,
                             .codec_frac = spec->frac, .frame_timeout_ms = 500,
                             .copies = copies, .streams = victim_streams,
                             .algo = victim_algo, .algo_variant = victim_variant,
                             .allow_chunks = victim_chunks, .fragments = victim_fragments};
    memset(c.fingerprint, 0xAB, 32);
    char cerr[200];
    v->codec = mm_codec_new(spec, VLEN, cerr, sizeof cerr);
    assert_non_null(v->codec);
    static tn_weight_rule one = {.rule = MM_WEIGHT_ONE, .n_peers = 2};
    tn_set_weight_rule(&c, &one);
    c.check_body = check_body; /* as murmur node does: the codec's own rules */
    c.check_ud = v->codec;
    c.codec_name = mm_codec_kind_name(spec->kind);
    uint64_t q = mm_codec_max_len(spec, VLEN);
    c.max_body = q > 4 * VLEN || victim_variant == 2 ? q : 4 * VLEN; /* (the all-gather: q) */
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
    mm_wire_header h = {.type = type, .sender = ATT, .exchange = round, .payload_len = len,
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

/* HELLO naming spec, then a VECTOR with vector header m and body. */
static int att_send_vec(victim *v, const mm_codec_spec *spec, const mm_wire_vec *m,
                        const uint8_t *body, size_t len)
{
    int fd = att_connect(v);
    mm_wire_hello h = {.vec_len = VLEN, .target = VICTIM, .algo = victim_algo,
                       .algo_variant = victim_variant,
                       .codec = (uint8_t)spec->kind, .codec_block = spec->block,
                       .codec_frac = spec->frac};
    memset(h.fingerprint, 0xAB, 32);
    uint8_t hb[MM_WIRE_HELLO_LEN];
    mm_wire_put_hello(hb, &h);
    att_frame(fd, MM_WIRE_HELLO, 0, hb, sizeof hb);
    uint8_t *p = malloc(MM_WIRE_VEC_HDR + len);
    mm_wire_put_vec(p, m);
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

static uint64_t counter(const victim *v, size_t field)
{
    mm_transport_stats st;
    mm_transport_get_stats(v->t, &st);
    uint64_t x;
    memcpy(&x, (const char *)&st + field, sizeof x);
    return x;
}

/* Sends the VECTOR m + body; it must be refused (the counter at offset
 * field of mm_transport_stats + 1, the connection closed) and never
 * delivered. */
static void expect_frame_refused(victim *v, const mm_codec_spec *spec, const mm_wire_vec *m,
                                 const uint8_t *body, size_t len, size_t field,
                                 const char *what)
{
    uint64_t before = counter(v, field), delivered = v->delivered;
    int fd = att_send_vec(v, spec, m, body, len);
    uint64_t end = uv_hrtime() / 1000000 + 5000;
    bool closed = false;
    while (uv_hrtime() / 1000000 < end) {
        uv_run(&v->loop, UV_RUN_ONCE);
        if (counter(v, field) > before && (closed = closed_by_peer(fd)))
            break;
        if (v->delivered != delivered)
            break;
    }
    close(fd);
    if (counter(v, field) != before + 1 || !closed || v->delivered != delivered)
        fail_msg("%s: counter %llu -> %llu, closed %d, delivered %llu -> %llu", what,
                 (unsigned long long)before, (unsigned long long)counter(v, field), closed,
                 (unsigned long long)delivered, (unsigned long long)v->delivered);
}

/* A q body its codec refuses: bad_codec. */
static void expect_refused(victim *v, const mm_codec_spec *spec, const uint8_t *body,
                           size_t len, const char *what)
{
    char why[200];
    mm_codec *c = mm_codec_new(spec, VLEN, why, sizeof why);
    assert_non_null(c);
    /* the crafted body is really one the codec refuses */
    assert_int_not_equal(mm_codec_check(c, body, len, why, sizeof why), MM_CODEC_OK);
    mm_codec_free(c);
    mm_wire_vec m = {.weight = 1.0, .codec = (uint8_t)spec->kind, .count = VLEN};
    expect_frame_refused(v, spec, &m, body, len, offsetof(mm_transport_stats, bad_codec), what);
}

/* A good frame: delivered byte for byte (the peer was not harmed). */
static void expect_frame_delivered(victim *v, const mm_codec_spec *spec, const mm_wire_vec *m,
                                   const uint8_t *body, size_t len)
{
    uint64_t want = v->delivered + 1;
    int fd = att_send_vec(v, spec, m, body, len);
    uint64_t end = uv_hrtime() / 1000000 + 5000;
    while (v->delivered < want && uv_hrtime() / 1000000 < end)
        uv_run(&v->loop, UV_RUN_ONCE);
    close(fd);
    assert_int_equal(v->delivered, want);
    assert_int_equal(v->last_codec, m->codec);
    assert_int_equal(v->last_flags, m->flags);
    assert_int_equal(v->last_len, len);
    assert_memory_equal(v->last, body, len);
}

static void expect_delivered(victim *v, const mm_codec_spec *spec, const uint8_t *body,
                             size_t len)
{
    mm_wire_vec m = {.weight = 1.0, .codec = (uint8_t)spec->kind, .count = VLEN};
    expect_frame_delivered(v, spec, &m, body, len);
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
        victim_start(&v, &spec, true);
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

/* RESET frames (docs/protocol.md 3.2, 6.10) under every codec: a RESET
 * body is the whole copy in fp32, exactly 4 n bytes, every value finite.
 * A RESET flagged on a body of the agreed codec (valid as that codec: the
 * receiver used to take 4 n bytes of its buffer as the copy, stale bytes
 * of earlier frames included), one float short or long, with a NaN or an
 * infinity: each refused, counted, the connection closed, nothing
 * delivered. A RESET where no copies are kept (no --compress): bad_type.
 * A good RESET is delivered whole. */
static void resets(void **s)
{
    (void)s;
    const char *specs[] = {"bf16", "int8", "sign", "topk:0.1", "randk:0.1", "fp32"};
    float x[VLEN + 1];
    for (int i = 0; i <= VLEN; i++)
        x[i] = (float)((i * 7919) % 1000) / 100.0f - 5.0f;
    const size_t bad_codec = offsetof(mm_transport_stats, bad_codec),
                 bad_length = offsetof(mm_transport_stats, bad_length),
                 bad_values = offsetof(mm_transport_stats, bad_values),
                 bad_type = offsetof(mm_transport_stats, bad_type);
    for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
        mm_codec_spec spec;
        char why[200];
        assert_int_equal(mm_codec_parse(specs[si], &spec, why, sizeof why), 0);
        mm_codec *c = mm_codec_new(&spec, VLEN, why, sizeof why);
        assert_non_null(c);
        size_t cap = mm_codec_max_bytes(c), len = 0;
        uint8_t *q = malloc(cap);
        assert_int_equal(mm_codec_encode(c, x, NULL, 42, q, cap, &len, NULL, why, sizeof why),
                         MM_CODEC_OK);
        assert_int_equal(mm_codec_check(c, q, len, why, sizeof why), MM_CODEC_OK);
        uint8_t body[4 * (VLEN + 1)];
        memcpy(body, x, sizeof body);
        mm_wire_vec reset = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32,
                             .flags = MM_VEC_RESET, .count = VLEN};
        victim v;
        victim_start(&v, &spec, true);
        if (spec.kind != MM_CODEC_FP32) { /* (with fp32 the codec's body is a good RESET) */
            mm_wire_vec in_codec = reset;
            in_codec.codec = (uint8_t)spec.kind;
            expect_frame_refused(&v, &spec, &in_codec, q, len, bad_codec, "RESET in codec");
        }
        expect_frame_refused(&v, &spec, &reset, body, 4 * VLEN - 4, bad_length,
                             "RESET one float short");
        expect_frame_refused(&v, &spec, &reset, body, 4 * VLEN + 4, bad_length,
                             "RESET one float long");
        set_f32(body + 4 * 17, NAN);
        expect_frame_refused(&v, &spec, &reset, body, 4 * VLEN, bad_values, "RESET with a NaN");
        set_f32(body + 4 * 17, -INFINITY);
        expect_frame_refused(&v, &spec, &reset, body, 4 * VLEN, bad_values, "RESET with -Inf");
        memcpy(body, x, sizeof body);
        expect_frame_delivered(&v, &spec, &reset, body, 4 * VLEN);
        expect_delivered(&v, &spec, q, len); /* and a q after it */
        victim_stop(&v);
        /* the same good RESET where no public copies are kept */
        victim_start(&v, &spec, false);
        expect_frame_refused(&v, &spec, &reset, body, 4 * VLEN, bad_type,
                             "RESET without --compress");
        victim_stop(&v);
        mm_codec_free(c);
        free(q);
    }
}

/* The HELLO's codec fraction is compared bit for bit (docs/protocol.md
 * 3.1): -0.0 on an fp32 cluster, equal to 0 as a number, is refused
 * (bad_config). */
static void fraction_bits(void **s)
{
    (void)s;
    mm_codec_spec fp = {.kind = MM_CODEC_FP32}, neg = fp;
    neg.frac = -0.0;
    victim v;
    victim_start(&v, &fp, false);
    float x[VLEN] = {0};
    mm_wire_vec m = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .count = VLEN};
    expect_frame_refused(&v, &neg, &m, (const uint8_t *)x, sizeof x,
                         offsetof(mm_transport_stats, bad_config), "fraction -0.0");
    expect_frame_delivered(&v, &fp, &m, (const uint8_t *)x, sizeof x);
    victim_stop(&v);
}

/* A streamed q (docs/protocol.md 3.2, 6.10) over a socket: its chunks are
 * delivered one by one, each checked as a payload of its count floats; a
 * stream whose last chunk the codec refuses is cut there (bad_codec, the
 * connection closed) after the first chunk was delivered, which is what
 * the CHOCO receiver must then not mix (e2e/node_choco_reset.sh q-cut); a
 * chunk out of order is refused on its header (bad_length). */
static void stream_cut(void **s)
{
    (void)s;
    mm_codec_spec spec;
    char err[200];
    assert_int_equal(mm_codec_parse("int8", &spec, err, sizeof err), 0);
    enum { FIRST = 512, REST = VLEN - FIRST };
    mm_codec *c1 = mm_codec_new(&spec, FIRST, err, sizeof err),
             *c2 = mm_codec_new(&spec, REST, err, sizeof err);
    float x[VLEN];
    for (int i = 0; i < VLEN; i++)
        x[i] = (float)(i % 13) - 6.0f;
    uint8_t a[2048], b[2048];
    size_t la, lb;
    assert_int_equal(mm_codec_encode(c1, x, NULL, 0, a, sizeof a, &la, NULL, err, sizeof err), 0);
    assert_int_equal(mm_codec_encode(c2, x + FIRST, NULL, 0, b, sizeof b, &lb, NULL, err,
                                     sizeof err), 0);
    b[lb - 1] = 0x80; /* the last chunk's last code -128: the codec refuses it */
    const size_t bad_codec = offsetof(mm_transport_stats, bad_codec),
                 bad_length = offsetof(mm_transport_stats, bad_length);
    for (int order = 0; order < 2; order++) { /* 0: the last chunk bad; 1: out of order */
        victim v;
        victim_streams = true;
        victim_start(&v, &spec, true);
        victim_streams = false;
        size_t field = order ? bad_length : bad_codec;
        uint64_t before = counter(&v, field);
        mm_wire_vec m1 = {.weight = 1, .codec = (uint8_t)spec.kind, .count = FIRST};
        mm_wire_vec m2 = {.weight = 1, .codec = (uint8_t)spec.kind, .offset = FIRST, .count = REST};
        if (order) { /* a gap: floats FIRST .. FIRST+7 never come */
            m2.offset = FIRST + 8;
            m2.count = REST - 8;
        }
        int fd = att_send_vec(&v, &spec, &m1, a, la);
        uint8_t *p = malloc(MM_WIRE_VEC_HDR + lb);
        mm_wire_put_vec(p, &m2);
        memcpy(p + MM_WIRE_VEC_HDR, b, lb);
        att_frame(fd, MM_WIRE_VECTOR, 0, p, MM_WIRE_VEC_HDR + lb);
        free(p);
        uint64_t end = uv_hrtime() / 1000000 + 5000;
        bool closed = false;
        while (uv_hrtime() / 1000000 < end) {
            uv_run(&v.loop, UV_RUN_ONCE);
            if (counter(&v, field) > before && (closed = closed_by_peer(fd)))
                break;
        }
        close(fd);
        if (v.delivered != 1 || v.last_len != la || memcmp(v.last, a, la) ||
            counter(&v, field) != before + 1 || !closed)
            fail_msg("%s: delivered %llu, counter %llu -> %llu, closed %d",
                     order ? "out of order" : "last chunk bad", (unsigned long long)v.delivered,
                     (unsigned long long)before, (unsigned long long)counter(&v, field), closed);
        victim_stop(&v);
    }
    mm_codec_free(c1);
    mm_codec_free(c2);
}

/* The outer exchange's frames (docs/protocol.md 3.2, issue 37): a peer of
 * the all-gather of compressed pseudo-gradients (algo allreduce, variant
 * 2, int8) refuses a payload with a NaN scale or one byte short
 * (bad_codec), a body longer than the codec's longest (bad_length), a
 * chunk instead of the whole vector (bad_length), a RESET or an fp32 body
 * (4 n bytes, longer than any int8 payload: bad_length on the frame
 * header), an fp32 body that fits (bad_codec); a peer of fragmented outer
 * gossip (--outer-
 * fragments 2) refuses the whole vector and the other fragment
 * (bad_length). Each counted, the connection closed, nothing delivered;
 * the right frame is then delivered byte for byte. */
static void outer_frames(void **s)
{
    (void)s;
    mm_codec_spec spec;
    char why[200];
    assert_int_equal(mm_codec_parse("int8", &spec, why, sizeof why), 0);
    mm_codec *c = mm_codec_new(&spec, VLEN, why, sizeof why);
    float x[VLEN];
    for (int i = 0; i < VLEN; i++)
        x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    size_t cap = mm_codec_max_bytes(c), len;
    uint8_t *q = malloc(cap + 64), *bad = malloc(cap + 64);
    assert_int_equal(mm_codec_encode(c, x, NULL, 0, q, cap, &len, NULL, why, sizeof why),
                     MM_CODEC_OK);
    const size_t bad_codec = offsetof(mm_transport_stats, bad_codec),
                 bad_length = offsetof(mm_transport_stats, bad_length),
                 bad_type = offsetof(mm_transport_stats, bad_type);
    victim_algo = MM_ALGO_ALLREDUCE;
    victim_variant = 2;
    victim v;
    victim_start(&v, &spec, false);
    mm_wire_vec m = {.weight = 1.0, .codec = (uint8_t)spec.kind, .count = VLEN};
    memcpy(bad, q, len);
    set_f32(bad + 4, NAN);
    expect_frame_refused(&v, &spec, &m, bad, len, bad_codec, "all-gather: a NaN scale");
    expect_frame_refused(&v, &spec, &m, q, len - 1, bad_codec, "all-gather: a byte short");
    memcpy(bad, q, len);
    memset(bad + len, 0, 64);
    expect_frame_refused(&v, &spec, &m, bad, mm_codec_max_len(&spec, VLEN) + 1, bad_length,
                         "all-gather: longer than any payload");
    mm_wire_vec chunk = m;
    chunk.offset = 256;
    chunk.count = 512;
    expect_frame_refused(&v, &spec, &chunk, q, len, bad_length, "all-gather: a chunk");
    mm_wire_vec reset = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .flags = MM_VEC_RESET,
                         .count = VLEN};
    expect_frame_refused(&v, &spec, &reset, (const uint8_t *)x, 4 * VLEN, bad_length,
                         "all-gather: a RESET");
    mm_wire_vec fp32 = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .count = VLEN};
    expect_frame_refused(&v, &spec, &fp32, (const uint8_t *)x, 4 * VLEN, bad_length,
                         "all-gather: an fp32 body");
    mm_wire_vec small = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .count = 200};
    expect_frame_refused(&v, &spec, &small, (const uint8_t *)x, 4 * 200, bad_codec,
                         "all-gather: fp32 named on an int8 connection");
    mm_wire_vec flagged = m;
    flagged.flags = MM_VEC_RESET;
    expect_frame_refused(&v, &spec, &flagged, q, len, bad_type, "all-gather: the RESET flag");
    expect_frame_delivered(&v, &spec, &m, q, len);
    victim_stop(&v);

    /* fragmented outer gossip: exchange 0 carries fragment 0 of 2 */
    victim_algo = MM_ALGO_DPSGD;
    victim_variant = 0;
    victim_fragments = 2;
    mm_codec_spec fp = {.kind = MM_CODEC_FP32};
    victim_start(&v, &fp, false);
    mm_wire_vec whole = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .count = VLEN};
    expect_frame_refused(&v, &fp, &whole, (const uint8_t *)x, 4 * VLEN, bad_length,
                         "fragments: the whole vector");
    mm_wire_vec other = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .offset = VLEN / 2,
                         .count = VLEN - VLEN / 2};
    expect_frame_refused(&v, &fp, &other, (const uint8_t *)(x + VLEN / 2), 4 * other.count,
                         bad_length, "fragments: fragment 1 in exchange 0");
    mm_wire_vec first = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .count = VLEN / 2};
    expect_frame_delivered(&v, &fp, &first, (const uint8_t *)x, 4 * first.count);
    victim_stop(&v);
    victim_fragments = 0;
    mm_codec_free(c);
    free(q);
    free(bad);
}

int main(void)
{
    mm_log_set_level(MM_LOG_WARN);
    const struct CMUnitTest tests[] = {cmocka_unit_test(every_codec), cmocka_unit_test(resets),
                                       cmocka_unit_test(fraction_bits),
                                       cmocka_unit_test(stream_cut),
                                       cmocka_unit_test(outer_frames)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
