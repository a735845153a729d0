/* Bad input on a real loopback socket: each attack is refused with a log
 * line, a counter and a closed connection, and the victim keeps serving its
 * honest neighbour (whose vector is checked bit for bit after the attack).
 * Cluster: honest peer 0, victim peer 2; the attacker poses as peer 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <math.h>
#include <openssl/ssl.h>
#include <pthread.h>

#include "node/poison.h"
#include "tests/tnet.h"

#define VLEN 1000
#define HONEST 0
#define ATT_ID 1
#define VICTIM 2

static char certdir[80], otherdir[80], selfdir[80];

typedef struct {
    tn_cluster cl;
    uint64_t round;
    int fds[64];
    int nfds;
    uint8_t got[4096];     /* what the victim sent the attacker */
    size_t ngot;
} fixture;

/* The weight rule of the honest transports, and the weight their vectors
 * carry (0: the harness's tn_weight, which only MM_WEIGHT_FINITE allows). */
static tn_weight_rule fixture_rule = {.n_peers = 3};
static double fixture_weight;

static fixture *setup_cluster(bool tls, void (*tweak)(mm_transport_config *))
{
    fixture *f = calloc(1, sizeof *f);
    tn_init(&f->cl, 3, VLEN);
    f->cl.weight = fixture_weight;
    for (uint32_t i = 0; i < 3; i += 2) {
        mm_transport_config c = tn_config(&f->cl, i, tls ? certdir : NULL);
        c.frame_timeout_ms = 300;
        c.connect_timeout_ms = 1500;
        c.max_conns_per_addr = 8;
        tn_set_weight_rule(&c, &fixture_rule);
        if (tweak)
            tweak(&c);
        assert_non_null(tn_start(&f->cl, i, &c));
    }
    uint32_t vw[2] = {HONEST, ATT_ID}, hw = VICTIM;
    mm_transport_want(f->cl.node[VICTIM].t, vw, 2);
    mm_transport_want(f->cl.node[HONEST].t, &hw, 1);
    assert_true(tn_wait_up(&f->cl, HONEST, VICTIM, 5000));
    assert_true(tn_send_and_wait(&f->cl, HONEST, VICTIM, f->round, 5000));
    return f;
}

static void teardown_cluster(fixture *f)
{
    for (int i = 0; i < f->nfds; i++)
        close(f->fds[i]);
    assert_int_equal(f->cl.node[VICTIM].bad_content, 0);
    assert_int_equal(tn_destroy(&f->cl), 0);
    free(f);
}

static int victim_port(fixture *f)
{
    return atoi(strrchr(f->cl.addr[VICTIM], ':') + 1);
}

static int att_connect(fixture *f)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)victim_port(f))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    f->fds[f->nfds++] = fd;
    return fd;
}

static void att_write(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    int waits = 0;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN && waits++ < 5000) {
            usleep(1000);
            continue;
        }
        assert_true(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

static void att_frame(int fd, uint16_t type, uint32_t sender, uint64_t round,
                      const void *payload, size_t len)
{
    uint8_t hdr[MM_WIRE_HDR_LEN];
    mm_wire_header h = {.type = type, .sender = sender, .exchange = round, .payload_len = len,
                        .payload_crc = mm_crc32c(0, payload, len)};
    mm_wire_put_header(hdr, &h);
    att_write(fd, hdr, sizeof hdr);
    if (len)
        att_write(fd, payload, len);
}

static void att_hello(int fd, uint32_t sender, uint8_t fp, uint64_t vec_len)
{
    mm_wire_hello h = {.vec_len = vec_len, .target = VICTIM, .algo = MM_ALGO_DPSGD,
                       .codec = MM_WIRE_CODEC_FP32};
    memset(h.fingerprint, fp, 32);
    uint8_t buf[MM_WIRE_HELLO_LEN];
    mm_wire_put_hello(buf, &h);
    att_frame(fd, MM_WIRE_HELLO, sender, 0, buf, sizeof buf);
}

/* A vector payload: the vector header (weight 1.0, fp32, the whole
 * vector), then VLEN floats, one of them replaced. The weight is its first
 * 8 bytes, so a test can overwrite it in place. */
static uint8_t *att_vector(float bad)
{
    uint8_t *p = calloc(1, MM_WIRE_VEC_HDR + 4 * VLEN);
    mm_wire_vec m = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .count = VLEN};
    mm_wire_put_vec(p, &m);
    float *v = (float *)(p + MM_WIRE_VEC_HDR);
    for (int i = 0; i < VLEN; i++)
        v[i] = (float)i;
    v[VLEN / 3] = bad;
    return p;
}

typedef struct { fixture *f; int fd; size_t off; uint64_t before; } watch;

static uint64_t stat_at(fixture *f, size_t off)
{
    mm_transport_stats st;
    mm_transport_get_stats(f->cl.node[VICTIM].t, &st);
    uint64_t v;
    memcpy(&v, (uint8_t *)&st + off, 8);
    return v;
}

/* True once the counter moved and the victim closed the attacker's socket. */
static bool refused(tn_cluster *cl, void *arg)
{
    watch *w = arg;
    fixture *f = w->f;
    bool closed = false;
    for (;;) {
        uint8_t buf[4096];
        ssize_t n = recv(w->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            size_t k = (size_t)n < sizeof f->got - f->ngot ? (size_t)n : sizeof f->got - f->ngot;
            memcpy(f->got + f->ngot, buf, k);
            f->ngot += k;
            continue;
        }
        closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
        break;
    }
    return closed && stat_at(f, w->off) > w->before;
}

/* The attack on fd was refused and counted; the honest peer still gets
 * through, bit-exact. */
static void expect_refused(fixture *f, int fd, size_t off, uint64_t before)
{
    watch w = {f, fd, off, before};
    assert_true(tn_pump(&f->cl, refused, &w, 5000));
    f->round++;
    mm_transport_set_exchange(f->cl.node[VICTIM].t, f->round);
    assert_true(tn_send_and_wait(&f->cl, HONEST, VICTIM, f->round, 5000));
    assert_true(tn_send_and_wait(&f->cl, VICTIM, HONEST, f->round, 5000));
    assert_int_equal(f->cl.node[VICTIM].bad_content, 0);
    assert_true(mm_transport_is_up(f->cl.node[VICTIM].t, HONEST));
}

/* True when the victim's REFUSE frame to the attacker contains text. */
static bool refusal_says(fixture *f, const char *text)
{
    if (f->ngot < MM_WIRE_HDR_LEN * 2)
        return false;
    for (size_t off = 0; off + MM_WIRE_HDR_LEN <= f->ngot;) {
        mm_wire_header h;
        char why[160];
        if (mm_wire_get_header(f->got + off, false, 0, &h, why, sizeof why) != MM_WIRE_OK &&
            mm_wire_get_header(f->got + off, true, MM_WIRE_VEC_HDR + 4 * VLEN, &h, why,
                           sizeof why) != MM_WIRE_OK)
            return false;
        size_t end = off + MM_WIRE_HDR_LEN + (size_t)h.payload_len;
        if (end > f->ngot)
            return false;
        if (h.type == MM_WIRE_REFUSE) {
            char msg[MM_WIRE_REFUSE_MAX + 1];
            memcpy(msg, f->got + off + MM_WIRE_HDR_LEN, (size_t)h.payload_len);
            msg[h.payload_len] = 0;
            return strstr(msg, text) != NULL;
        }
        off = end;
    }
    return false;
}

#define OFF(field) offsetof(mm_transport_stats, field)
#define ATTACK(field, body) do { \
        fixture *f = setup_cluster(false, NULL); \
        uint64_t before = stat_at(f, OFF(field)); \
        int fd = att_connect(f); \
        body; \
        expect_refused(f, fd, OFF(field), before); \
        teardown_cluster(f); \
    } while (0)

static void garbage(void **s)
{
    static const char g[] = "GET / HTTP/1.1\r\nHost: murmur\r\nAccept: */*\r\n\r\n";
    ATTACK(bad_magic, att_write(fd, g, sizeof g - 1));
}

static void wrong_magic(void **s)
{
    uint8_t hdr[MM_WIRE_HDR_LEN];
    mm_wire_header h = {.type = MM_WIRE_HELLO, .sender = ATT_ID, .payload_len = MM_WIRE_HELLO_LEN};
    mm_wire_put_header(hdr, &h);
    hdr[0] ^= 0x20;
    ATTACK(bad_magic, att_write(fd, hdr, sizeof hdr));
}

static void wrong_version(void **s)
{
    uint8_t hdr[MM_WIRE_HDR_LEN];
    mm_wire_header h = {.version = 9, .type = MM_WIRE_HELLO, .sender = ATT_ID,
                        .payload_len = MM_WIRE_HELLO_LEN};
    mm_wire_put_header(hdr, &h);
    ATTACK(bad_version, att_write(fd, hdr, sizeof hdr));
    /* a peer of the version before (5: a HELLO of exactly 128 bytes, no
     * settings), as an older murmur sends it: refused, the REFUSE saying
     * which versions and why */
    mm_wire_hello hello = {.vec_len = VLEN, .target = VICTIM, .algo = MM_ALGO_DPSGD,
                           .codec = MM_WIRE_CODEC_FP32};
    memset(hello.fingerprint, 0xAB, 32);
    uint8_t frame[MM_WIRE_HDR_LEN + MM_WIRE_HELLO_LEN];
    mm_wire_put_hello(frame + MM_WIRE_HDR_LEN, &hello);
    h = (mm_wire_header){.version = 5, .type = MM_WIRE_HELLO, .sender = ATT_ID,
                         .payload_len = MM_WIRE_HELLO_LEN,
                         .payload_crc = mm_crc32c(0, frame + MM_WIRE_HDR_LEN, MM_WIRE_HELLO_LEN)};
    mm_wire_put_header(frame, &h);
    fixture *f = setup_cluster(false, NULL);
    uint64_t before = stat_at(f, OFF(bad_version));
    int fd = att_connect(f);
    att_write(fd, frame, sizeof frame);
    expect_refused(f, fd, OFF(bad_version), before);
    assert_true(refusal_says(f, "bad version: protocol version 5, this peer speaks 6 (another "
                                "murmur build: every peer must speak the same version)"));
    teardown_cluster(f);
}

static void unknown_type(void **s)
{
    ATTACK(bad_type, att_frame(fd, 77, ATT_ID, 0, "x", 1));
}

static void vector_before_hello(void **s)
{
    uint8_t *v = att_vector(1.0f);
    ATTACK(bad_type, att_frame(fd, MM_WIRE_VECTOR, ATT_ID, 0, v, MM_WIRE_VEC_HDR + 4 * VLEN));
    free(v);
}

static void huge_length(void **s)
{
    /* Only a header: the victim must refuse without waiting for (or
     * allocating) 1 TiB. */
    uint8_t hdr[MM_WIRE_HDR_LEN];
    mm_wire_header h = {.type = MM_WIRE_HELLO, .sender = ATT_ID, .payload_len = 1ULL << 40};
    mm_wire_put_header(hdr, &h);
    ATTACK(bad_length, att_write(fd, hdr, sizeof hdr));
    /* after the HELLO, a vector longer than the agreed vector length */
    mm_wire_header v = {.type = MM_WIRE_VECTOR, .sender = ATT_ID, .payload_len = MM_WIRE_VEC_HDR + 4 * VLEN + 4};
    mm_wire_put_header(hdr, &v);
    ATTACK(bad_length, { att_hello(fd, ATT_ID, 0xAB, VLEN); att_write(fd, hdr, sizeof hdr); });
}

static void short_frame_then_silence(void **s)
{
    uint8_t hdr[MM_WIRE_HDR_LEN];
    mm_wire_header h = {.type = MM_WIRE_HELLO, .sender = ATT_ID, .payload_len = MM_WIRE_HELLO_LEN};
    mm_wire_put_header(hdr, &h);
    ATTACK(frame_timeouts, att_write(fd, hdr, 17));
    /* a whole header, then half the payload */
    ATTACK(frame_timeouts, { att_write(fd, hdr, sizeof hdr); att_write(fd, "0123456789", 10); });
}

static void bad_checksum(void **s)
{
    uint8_t *v = att_vector(2.0f);
    uint8_t hdr[MM_WIRE_HDR_LEN];
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = ATT_ID, .payload_len = MM_WIRE_VEC_HDR + 4 * VLEN,
                        .payload_crc = mm_crc32c(0, v, MM_WIRE_VEC_HDR + 4 * VLEN) ^ 1};
    mm_wire_put_header(hdr, &h);
    ATTACK(bad_checksum, {
        att_hello(fd, ATT_ID, 0xAB, VLEN);
        att_write(fd, hdr, sizeof hdr);
        att_write(fd, v, MM_WIRE_VEC_HDR + 4 * VLEN);
    });
    /* a header whose own checksum is wrong */
    mm_wire_put_header(hdr, &h);
    hdr[20] ^= 1;
    ATTACK(bad_checksum, att_write(fd, hdr, sizeof hdr));
    free(v);
}

static void wrong_fingerprint(void **s)
{
    ATTACK(bad_fingerprint, att_hello(fd, ATT_ID, 0xCD, VLEN));
    fixture *f = setup_cluster(false, NULL);
    uint64_t before = stat_at(f, OFF(bad_fingerprint));
    int fd = att_connect(f);
    att_hello(fd, ATT_ID, 0xAB, VLEN + 1);
    expect_refused(f, fd, OFF(bad_fingerprint), before);
    assert_true(refusal_says(f, "vector length differs"));
    teardown_cluster(f);

    f = setup_cluster(false, NULL);
    before = stat_at(f, OFF(bad_fingerprint));
    fd = att_connect(f);
    att_hello(fd, ATT_ID, 0xCD, VLEN);
    expect_refused(f, fd, OFF(bad_fingerprint), before);
    assert_true(refusal_says(f, "fingerprint differs"));
    teardown_cluster(f);
}

static void round_outside_window(void **s)
{
    uint8_t *v = att_vector(3.0f);
    ATTACK(bad_round, {
        att_hello(fd, ATT_ID, 0xAB, VLEN);
        att_frame(fd, MM_WIRE_VECTOR, ATT_ID, 5000000, v, MM_WIRE_VEC_HDR + 4 * VLEN);
    });
    free(v);
}

static void nan_and_inf(void **s)
{
    uint8_t *v = att_vector(NAN);
    ATTACK(bad_values, {
        att_hello(fd, ATT_ID, 0xAB, VLEN);
        att_frame(fd, MM_WIRE_VECTOR, ATT_ID, 0, v, MM_WIRE_VEC_HDR + 4 * VLEN);
    });
    free(v);
    v = att_vector(-INFINITY);
    ATTACK(bad_values, {
        att_hello(fd, ATT_ID, 0xAB, VLEN);
        att_frame(fd, MM_WIRE_VECTOR, ATT_ID, 0, v, MM_WIRE_VEC_HDR + 4 * VLEN);
    });
    double w = NAN;
    memcpy(v, &w, 8);
    ((float *)(v + MM_WIRE_VEC_HDR))[VLEN / 3] = 1.0f;
    ATTACK(bad_values, {
        att_hello(fd, ATT_ID, 0xAB, VLEN);
        att_frame(fd, MM_WIRE_VECTOR, ATT_ID, 0, v, MM_WIRE_VEC_HDR + 4 * VLEN);
    });
    free(v);
}

/* A VECTOR whose weight breaks the receiver's rule (issue 11: a finite
 * negative weight stopped honest dpsgd peers) is refused, counted as
 * bad_weight with a reason naming the weight, and the honest peer goes on;
 * for dpsgd/async (exactly 1) and pushsum ([2^-30, n], n = 3 here). The
 * edges of each rule get through. */
static void bad_weights(void **s)
{
    const double bad[] = {-2, 0, 1e-300, 1e300, 4e-320};
    const mm_weight_rule rules[] = {MM_WEIGHT_ONE, MM_WEIGHT_PUSHSUM};
    uint8_t *v = att_vector(5.0f);
    for (int r = 0; r < 2; r++) {
        fixture_rule.rule = rules[r];
        fixture_weight = rules[r] == MM_WEIGHT_ONE ? 1.0 : 0.75;
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            memcpy(v, &bad[b], 8);
            fixture *f = setup_cluster(false, NULL);
            uint64_t before = stat_at(f, OFF(bad_weight));
            int fd = att_connect(f);
            att_hello(fd, ATT_ID, 0xAB, VLEN);
            att_frame(fd, MM_WIRE_VECTOR, ATT_ID, 0, v, MM_WIRE_VEC_HDR + 4 * VLEN);
            expect_refused(f, fd, OFF(bad_weight), before);
            assert_true(refusal_says(f, "weight"));
            assert_int_equal(f->cl.node[VICTIM].recv_count[ATT_ID], 0);
            teardown_cluster(f);
        }
        const double good[] = {rules[r] == MM_WEIGHT_ONE ? 1.0 : MM_PUSHSUM_W_MIN,
                               rules[r] == MM_WEIGHT_ONE ? 1.0 : 3.0};
        for (int g = 0; g < 2; g++) {
            memcpy(v, &good[g], 8);
            fixture *f = setup_cluster(false, NULL);
            int fd = att_connect(f);
            att_hello(fd, ATT_ID, 0xAB, VLEN);
            att_frame(fd, MM_WIRE_VECTOR, ATT_ID, 0, v, MM_WIRE_VEC_HDR + 4 * VLEN);
            tn_recv_arg a = {VICTIM, ATT_ID, 1};
            assert_true(tn_pump(&f->cl, tn_has_recv, &a, 5000));
            assert_true(f->cl.node[VICTIM].last_weight[ATT_ID] == good[g]);
            f->cl.node[VICTIM].bad_content = 0; /* not the harness's pattern */
            assert_int_equal(stat_at(f, OFF(bad_weight)), 0);
            teardown_cluster(f);
        }
    }
    fixture_rule.rule = MM_WEIGHT_FINITE;
    fixture_weight = 0;
    free(v);
}

/* HELLO bytes 44..47 are reserved and must be 0, like the frame header's
 * reserved field: refused and counted under bad_type. */
static void hello_reserved(void **s)
{
    mm_wire_hello h = {.vec_len = VLEN, .target = VICTIM, .algo = MM_ALGO_DPSGD,
                       .codec = MM_WIRE_CODEC_FP32};
    memset(h.fingerprint, 0xAB, 32);
    uint8_t buf[MM_WIRE_HELLO_LEN];
    mm_wire_put_hello(buf, &h);
    buf[46] = 1;
    fixture *f = setup_cluster(false, NULL);
    uint64_t before = stat_at(f, OFF(bad_type));
    int fd = att_connect(f);
    att_frame(fd, MM_WIRE_HELLO, ATT_ID, 0, buf, sizeof buf);
    expect_refused(f, fd, OFF(bad_type), before);
    assert_true(refusal_says(f, "reserved HELLO bytes"));
    assert_int_equal(f->cl.node[VICTIM].up[ATT_ID], 0);
    teardown_cluster(f);
}

/* A HELLO naming another algorithm, codec or codec parameter: refused with
 * both values named, counted under bad_config (docs/protocol.md 3.1). */
static void hello_config_mismatch(void **s)
{
    static const struct {
        uint8_t algo, variant, codec;
        uint32_t block;
        double frac;
        const char *says;
    } c[] = {
        {MM_ALGO_PUSHSUM, 0, MM_WIRE_CODEC_FP32, 0, 0, "algorithm differs: peer 1 runs pushsum"},
        /* the same algorithm in another variant (the all-reduce's schedule) */
        {MM_ALGO_DPSGD, 1, MM_WIRE_CODEC_FP32, 0, 0,
         "algorithm differs: peer 1 runs dpsgd (variant 1), peer 2 runs dpsgd"},
        {MM_ALGO_ALLREDUCE, 1, MM_WIRE_CODEC_FP32, 0, 0,
         "algorithm differs: peer 1 runs allreduce (halving schedule), peer 2 runs dpsgd"},
        {MM_ALGO_DPSGD, 0, 3, 256, 0, "codec differs"},
        {MM_ALGO_DPSGD, 0, MM_WIRE_CODEC_FP32, 0, 0.5, "codec differs"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        mm_wire_hello h = {.vec_len = VLEN, .target = VICTIM, .algo = c[i].algo,
                           .algo_variant = c[i].variant, .codec = c[i].codec, .codec_block = c[i].block,
                           .codec_frac = c[i].frac};
        memset(h.fingerprint, 0xAB, 32);
        uint8_t buf[MM_WIRE_HELLO_LEN];
        mm_wire_put_hello(buf, &h);
        fixture *f = setup_cluster(false, NULL);
        uint64_t before = stat_at(f, OFF(bad_config));
        int fd = att_connect(f);
        att_frame(fd, MM_WIRE_HELLO, ATT_ID, 0, buf, sizeof buf);
        expect_refused(f, fd, OFF(bad_config), before);
        assert_true(refusal_says(f, c[i].says));
        assert_int_equal(f->cl.node[VICTIM].up[ATT_ID], 0);
        teardown_cluster(f);
    }
}

static void claims_other_id_plain(void **s)
{
    /* its own id, and an id that must be dialled rather than dial */
    ATTACK(bad_identity, att_hello(fd, VICTIM, 0xAB, VLEN));
    ATTACK(bad_identity, att_hello(fd, 7, 0xAB, VLEN));
}

static void flood(void **s)
{
    fixture *f = setup_cluster(false, NULL);
    for (int i = 0; i < 40; i++)
        att_connect(f);
    watch w = {f, f->fds[39], OFF(flood_refused), 0};
    assert_true(tn_pump(&f->cl, refused, &w, 5000));
    uint64_t n = stat_at(f, OFF(flood_refused));
    assert_true(n >= 40 - 8);
    f->round++;
    assert_true(tn_send_and_wait(&f->cl, HONEST, VICTIM, f->round, 5000));
    assert_true(tn_send_and_wait(&f->cl, VICTIM, HONEST, f->round, 5000));
    /* the silent ones that were let in are closed by the handshake timeout */
    watch w0 = {f, f->fds[0], OFF(peer_timeouts), 0};
    assert_true(tn_pump(&f->cl, refused, &w0, 5000));
    teardown_cluster(f);
}

/* A connection to the victim from loopback address 127.0.0.X (bound before
 * connecting), that then says nothing; -1 when it could not be opened. */
static int connect_from(fixture *f, int x)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in src = {.sin_family = AF_INET};
    src.sin_addr.s_addr = htonl(0x7F000000u | (uint32_t)x);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)victim_port(f))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0 ||
        connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    f->fds[f->nfds++] = fd;
    return fd;
}

static bool peer_closed(int fd)
{
    uint8_t b[64];
    ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

typedef struct { fixture *f; uint64_t n; } pending_arg;

static bool pending_counted(tn_cluster *cl, void *arg)
{
    pending_arg *a = arg;
    return stat_at(a->f, OFF(pending_refused)) >= a->n;
}

/* The global cap on unauthenticated connections (issue 11): 12 silent
 * connections from 127.0.0.2..4 (4 each, under the per-address cap) meet a
 * cap of 6: 6 are refused and counted as pending_refused, 6 held (the
 * handshake timeout is long here). Meanwhile the honest peer 0, whose
 * configured address is 127.0.0.1, still connects at once: its address
 * keeps its own quota outside the cap. */
static void cap_pending(mm_transport_config *c)
{
    c->max_pending_conns = 6;
    c->max_conns_per_addr = 4;
    c->connect_timeout_ms = 20000;
}

static void pending_cap_keeps_room_for_peers(void **s)
{
    fixture *f = calloc(1, sizeof *f);
    tn_init(&f->cl, 3, VLEN);
    mm_transport_config c = tn_config(&f->cl, VICTIM, NULL);
    cap_pending(&c);
    assert_non_null(tn_start(&f->cl, VICTIM, &c));
    uint32_t w = HONEST;
    mm_transport_want(f->cl.node[VICTIM].t, &w, 1);
    for (int x = 2; x <= 4; x++)
        for (int i = 0; i < 4; i++)
            assert_true(connect_from(f, x) >= 0);
    pending_arg pa = {f, 6};
    assert_true(tn_pump(&f->cl, pending_counted, &pa, 5000));
    tn_run_for(&f->cl, 100);
    assert_int_equal(stat_at(f, OFF(pending_refused)), 6);
    assert_int_equal(stat_at(f, OFF(flood_refused)), 0);
    int closed = 0;
    for (int i = 0; i < f->nfds; i++)
        closed += peer_closed(f->fds[i]);
    assert_int_equal(closed, 6);
    /* the cap is full: a 13th from another address is refused too ... */
    assert_true(connect_from(f, 5) >= 0);
    pa.n = 7;
    assert_true(tn_pump(&f->cl, pending_counted, &pa, 5000));
    /* ... but the honest neighbour comes up, long before the held ones
     * time out */
    mm_transport_config h = tn_config(&f->cl, HONEST, NULL);
    assert_non_null(tn_start(&f->cl, HONEST, &h));
    uint32_t v = VICTIM;
    mm_transport_want(f->cl.node[HONEST].t, &v, 1);
    assert_true(tn_wait_up(&f->cl, HONEST, VICTIM, 3000));
    assert_true(tn_send_and_wait(&f->cl, HONEST, VICTIM, 0, 3000));
    closed = 0;
    for (int i = 0; i < 12; i++)
        closed += peer_closed(f->fds[i]);
    assert_int_equal(closed, 6); /* the held ones are still held */
    teardown_cluster(f);
}

static void short_peer_timeout(mm_transport_config *c) { c->peer_timeout_ms = 400; }

/* A peer that completes the HELLO and then says nothing, not even PING:
 * closed after peer_timeout_ms and reported DOWN; the honest one (which
 * pings) stays up through the same period. */
static void silent_peer(void **s)
{
    fixture *f = setup_cluster(false, short_peer_timeout);
    uint64_t before = stat_at(f, OFF(peer_timeouts));
    int fd = att_connect(f);
    att_hello(fd, ATT_ID, 0xAB, VLEN);
    watch w = {f, fd, OFF(peer_timeouts), before};
    assert_true(tn_pump(&f->cl, refused, &w, 5000));
    assert_int_equal(f->cl.node[VICTIM].up[ATT_ID], 1);
    assert_true(f->cl.node[VICTIM].down[ATT_ID] >= 1);
    assert_true(mm_transport_is_up(f->cl.node[VICTIM].t, HONEST));
    f->round++;
    assert_true(tn_send_and_wait(&f->cl, HONEST, VICTIM, f->round, 5000));
    teardown_cluster(f);
}

static void node_like_heartbeat(mm_transport_config *c)
{
    c->peer_timeout_ms = 2000;
    c->heartbeat_ms = 500; /* what murmur node sets: a quarter of the timeout */
}

/* The heartbeat as docs/protocol.md states it: after the HELLO, a quiet
 * peer gets a PING every heartbeat_ms, not earlier, and not later than a
 * tick (plus scheduling) after it. */
static void heartbeat_interval(void **s)
{
    fixture *f = setup_cluster(false, node_like_heartbeat);
    int fd = att_connect(f);
    att_hello(fd, ATT_ID, 0xAB, VLEN);
    uint8_t buf[4096];
    size_t have = 0;
    int pings = 0;
    uint64_t t0 = 0, last = 0, min_gap = UINT64_MAX, max_gap = 0;
    uint64_t end = uv_hrtime() / 1000000 + 1800;
    while (uv_hrtime() / 1000000 < end) {
        uv_run(&f->cl.loop, UV_RUN_NOWAIT);
        ssize_t n = recv(fd, buf + have, sizeof buf - have, MSG_DONTWAIT);
        if (n > 0)
            have += (size_t)n;
        while (have >= MM_WIRE_HDR_LEN) {
            mm_wire_header h;
            char why[160];
            assert_int_equal(mm_wire_get_header(buf, t0 != 0, VLEN, &h, why, sizeof why), MM_WIRE_OK);
            size_t len = MM_WIRE_HDR_LEN + (size_t)h.payload_len;
            if (have < len)
                break;
            uint64_t now = uv_hrtime() / 1000000;
            if (h.type == MM_WIRE_HELLO) {
                t0 = last = now;
            } else if (h.type == MM_WIRE_PING) {
                pings++;
                min_gap = now - last < min_gap ? now - last : min_gap;
                max_gap = now - last > max_gap ? now - last : max_gap;
                last = now;
            }
            memmove(buf, buf + len, have - len);
            have -= len;
        }
        usleep(2000);
    }
    assert_true(t0 != 0);
    /* at about 500, 1000, 1500 ms; never before the heartbeat, and well
     * before twice it (the least timeout docs/protocol.md allows), with
     * room for a loaded machine */
    assert_true(pings >= 2 && pings <= 3);
    assert_true(min_gap >= 490);
    assert_true(max_gap <= 900);
    teardown_cluster(f);
}

static bool up_twice(tn_cluster *cl, void *arg)
{
    (void)arg;
    return cl->node[VICTIM].up[ATT_ID] >= 2;
}

/* Peer 1 "restarts": a second connection completing the HELLO as peer 1
 * replaces the first (closed), and vectors flow on the new one. */
static void reconnect_replaces(void **s)
{
    fixture *f = setup_cluster(false, NULL);
    int fd1 = att_connect(f);
    att_hello(fd1, ATT_ID, 0xAB, VLEN);
    int fd2 = att_connect(f);
    att_hello(fd2, ATT_ID, 0xAB, VLEN);
    assert_true(tn_pump(&f->cl, up_twice, NULL, 5000));
    /* the first socket is closed by the victim, with the reason */
    watch w = {f, fd1, OFF(conns_accepted), 0};
    assert_true(tn_pump(&f->cl, refused, &w, 5000));
    assert_true(refusal_says(f, "replaced by a newer connection"));
    assert_true(mm_transport_is_up(f->cl.node[VICTIM].t, ATT_ID));
    uint8_t *v = att_vector(4.0f);
    att_frame(fd2, MM_WIRE_VECTOR, ATT_ID, 0, v, MM_WIRE_VEC_HDR + 4 * VLEN);
    free(v);
    tn_recv_arg r = {VICTIM, ATT_ID, 1};
    assert_true(tn_pump(&f->cl, tn_has_recv, &r, 5000));
    /* (its content is not the harness's pattern: do not count it as bad) */
    f->cl.node[VICTIM].bad_content = 0;
    f->round++;
    assert_true(tn_send_and_wait(&f->cl, HONEST, VICTIM, f->round, 5000));
    teardown_cluster(f);
}

/* Log lines go to f as well as stderr; log_says(f, text) looks for text in
 * what was written since. */
static FILE *log_capture(void)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    mm_log_set_file(f);
    return f;
}

static bool log_says(FILE *f, const char *text)
{
    fflush(f);
    rewind(f);
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, text) != NULL;
    fseek(f, 0, SEEK_END);
    return found;
}

typedef struct { uint32_t victim; uint64_t n; } clash_arg;

static bool clash_counted(tn_cluster *cl, void *arg)
{
    clash_arg *a = arg;
    mm_transport_stats st;
    mm_transport_get_stats(cl->node[a->victim].t, &st);
    return st.id_clash >= a->n;
}

/* Two peers started with the same id on different ports (issue 12): both
 * dial peer 1, each new connection replacing the other's. Peer 1 must not
 * flap ("connected again" dozens of times) but refuse the id with a reason
 * naming the clash, counted as id_clash, on its side and on the dialling
 * side; while refused, it is down (so nothing of either is mixed). */
static void two_peers_one_id(void **s)
{
    FILE *log = log_capture();
    tn_cluster cl;
    tn_init(&cl, 3, VLEN);
    for (uint32_t i = 0; i < 3; i++) {
        mm_transport_config c = tn_config(&cl, i, NULL);
        if (i == 2) { /* slot 2 is a second "peer 0", listening elsewhere */
            c.self_id = 0;
            c.listen_addr = cl.addr[2];
        }
        assert_non_null(tn_start(&cl, i, &c));
    }
    uint32_t one = 1, zero = 0;
    mm_transport_want(cl.node[0].t, &one, 1);
    mm_transport_want(cl.node[2].t, &one, 1);
    mm_transport_want(cl.node[1].t, &zero, 1);
    clash_arg a = {1, 1};
    assert_true(tn_pump(&cl, clash_counted, &a, 5000));
    /* detected after MM_ID_CLASH_REPLACES replacements, not dozens */
    assert_true(cl.node[1].up[0] <= MM_ID_CLASH_REPLACES + 1);
    assert_true(log_says(log, "two peers claim id 0"));
    assert_true(log_says(log, "is a peer started twice with --id 0?"));
    /* the refused side knows why */
    mm_transport_stats s0, s2;
    tn_run_for(&cl, 300);
    mm_transport_get_stats(cl.node[0].t, &s0);
    mm_transport_get_stats(cl.node[2].t, &s2);
    assert_true(s0.id_clash + s2.id_clash >= 1);
    assert_true(log_says(log, "refused us: two peers claim id 0"));
    /* while the id is refused: no more flapping, nobody up as peer 0 */
    int ups = cl.node[1].up[0];
    tn_run_for(&cl, 1500);
    assert_int_equal(cl.node[1].up[0], ups);
    assert_false(mm_transport_is_up(cl.node[1].t, 0));
    /* each side was told whose connection it was and why (on_refused and
     * mm_transport_peer_refusal): peer 1 of peer 0, the two peers 0 of
     * peer 1, which they dialled */
    mm_refusal r;
    assert_true(mm_transport_peer_refusal(cl.node[1].t, 0, &r));
    assert_int_equal(r.code, MM_REFUSAL_ID_CLASH);
    assert_int_equal(cl.node[1].refusal[0].code, MM_REFUSAL_ID_CLASH);
    assert_true(cl.node[0].refusal[1].code == MM_REFUSAL_ID_CLASH ||
                cl.node[2].refusal[1].code == MM_REFUSAL_ID_CLASH);
    for (uint32_t i = 0; i < 3; i += 2)
        if (cl.node[i].refusal[1].code == MM_REFUSAL_ID_CLASH) {
            assert_true(cl.node[i].refusal[1].dialled && cl.node[i].refusal[1].by_peer);
            assert_non_null(strstr(cl.node[i].refusal[1].text, "two peers claim id 0"));
        }
    assert_true(mm_refusal_is_config(MM_REFUSAL_ID_CLASH));
    mm_log_set_file(NULL);
    fclose(log);
    assert_int_equal(tn_destroy(&cl), 0);
}

static bool victim_ups(tn_cluster *cl, void *arg)
{
    return cl->node[VICTIM].up[ATT_ID] >= *(int *)arg;
}

/* The victim takes vectors from its honest neighbour only (cfg.senders:
 * its in-neighbours over the topology), the honest peer from the victim. */
static const bool not_attacker[3] = {[HONEST] = true, [VICTIM] = true};
static void senders_honest(mm_transport_config *c) { c->senders = not_attacker; }

/* A valid VECTOR from a member of the cluster that is no in-neighbour
 * (issue 27, fault 3): refused, counted as not_neighbour, the connection
 * closed, never lent to the owner (which would never take it, and the
 * connection would stay unread for the whole run); its HELLO is accepted
 * (it is a peer of the cluster), and the honest neighbour still gets
 * through. With every peer allowed (senders NULL, as before) the same
 * vector is delivered. */
static void vector_from_non_neighbour(void **s)
{
    (void)s;
    uint8_t *v = att_vector(1.0f);
    fixture *f = setup_cluster(false, senders_honest);
    uint64_t before = stat_at(f, OFF(not_neighbour)), got = f->cl.node[VICTIM].recv_count[ATT_ID];
    int fd = att_connect(f);
    att_hello(fd, ATT_ID, 0xAB, VLEN);
    att_frame(fd, MM_WIRE_VECTOR, ATT_ID, f->round, v, MM_WIRE_VEC_HDR + 4 * VLEN);
    expect_refused(f, fd, OFF(not_neighbour), before);
    assert_true(refusal_says(f, "no in-neighbour of peer 2"));
    assert_int_equal(f->cl.node[VICTIM].recv_count[ATT_ID], got);
    teardown_cluster(f);
    f = setup_cluster(false, NULL);
    fd = att_connect(f);
    att_hello(fd, ATT_ID, 0xAB, VLEN);
    att_frame(fd, MM_WIRE_VECTOR, ATT_ID, f->round, v, MM_WIRE_VEC_HDR + 4 * VLEN);
    int one = 1;
    assert_true(tn_pump(&f->cl, victim_ups, &one, 5000));
    tn_run_for(&f->cl, 200);
    assert_int_equal(f->cl.node[VICTIM].recv_count[ATT_ID], 1);
    assert_int_equal(stat_at(f, OFF(not_neighbour)), 0);
    f->cl.node[VICTIM].bad_content = 0; /* (its vector is not the harness's pattern) */
    teardown_cluster(f);
    free(v);
}


/* One peer that redials (issue 27, fault 5): it closed its side of each
 * connection (FIN) before dialling again, but the victim, holding that
 * peer's last vector (not reading: a busy or SIGSTOPped node), has not
 * read the FIN, so each new HELLO replaces a connection that still looks
 * up. That is the same process, not two with one id: never an id clash,
 * however often within MM_ID_CLASH_WINDOW_MS (two live processes still
 * are: two_peers_one_id). */
static void redial_is_not_a_clash(void **s)
{
    (void)s;
    fixture *f = setup_cluster(false, NULL);
    f->cl.node[VICTIM].hold = true;
    uint8_t *v = att_vector(1.0f);
    for (int k = 1; k <= MM_ID_CLASH_REPLACES + 2; k++) {
        int fd = att_connect(f);
        att_hello(fd, ATT_ID, 0xAB, VLEN);
        att_frame(fd, MM_WIRE_VECTOR, ATT_ID, f->round, v, MM_WIRE_VEC_HDR + 4 * VLEN);
        assert_true(tn_pump(&f->cl, victim_ups, &k, 5000));
        tn_run_for(&f->cl, 50);
        shutdown(fd, SHUT_WR); /* this process is done with it: FIN */
        tn_run_for(&f->cl, 20);
    }
    tn_run_for(&f->cl, 200);
    mm_transport_stats st;
    mm_transport_get_stats(f->cl.node[VICTIM].t, &st);
    assert_int_equal(st.id_clash, 0);
    assert_true(mm_transport_is_up(f->cl.node[VICTIM].t, ATT_ID));
    f->cl.node[VICTIM].hold = false;
    mm_transport_release(f->cl.node[VICTIM].t, ATT_ID);
    free(v);
    f->cl.node[VICTIM].bad_content = 0; /* (its vectors are not the harness's pattern) */
    teardown_cluster(f);
}

typedef struct { uint64_t a, b; } two_counts;

static bool both_mismatch(tn_cluster *cl, void *arg)
{
    two_counts *c = arg;
    mm_transport_stats s0, s1;
    mm_transport_get_stats(cl->node[0].t, &s0);
    mm_transport_get_stats(cl->node[1].t, &s1);
    return s0.tls_mismatch >= c->a && s1.tls_mismatch >= c->b;
}

/* A --plaintext peer and a TLS peer (issue 12): each side names the
 * mismatch in its own terms and counts it as tls_mismatch (not as bad
 * magic or a TLS error), whichever of the two dials. */
static void tls_plaintext_mismatch(void **s)
{
    for (int tls_dials = 1; tls_dials >= 0; tls_dials--) {
        FILE *log = log_capture();
        tn_cluster cl;
        tn_init(&cl, 2, VLEN);
        for (uint32_t i = 0; i < 2; i++) { /* peer 0 dials */
            bool tls = (i == 0) == (tls_dials == 1);
            mm_transport_config c = tn_config(&cl, i, tls ? certdir : NULL);
            assert_non_null(tn_start(&cl, i, &c));
        }
        uint32_t one = 1, zero = 0;
        mm_transport_want(cl.node[0].t, &one, 1);
        mm_transport_want(cl.node[1].t, &zero, 1);
        two_counts want = {1, 1};
        assert_true(tn_pump(&cl, both_mismatch, &want, 5000));
        assert_true(log_says(log, "speaks TLS but this peer runs --plaintext"));
        assert_true(log_says(log, "speaks plaintext murmur (MRMR) but this peer expects TLS"));
        if (tls_dials) /* the TLS dialler also shows what the plaintext side said */
            assert_true(log_says(log, "(it said: TLS mismatch: peer at 127.0.0.1:"));
        mm_transport_stats st[2];
        for (int i = 0; i < 2; i++) {
            mm_transport_get_stats(cl.node[i].t, &st[i]);
            assert_int_equal(st[i].bad_magic + st[i].bad_tls, 0);
            assert_int_equal(cl.node[i].up[1 - i], 0);
        }
        /* Both sides know whose connection it was (peer 0 dialled; peer 1
         * from the plaintext HELLO's header, or from the address: the
         * only lower-id peer there), and say it in their own terms. */
        for (int i = 0; i < 2; i++) {
            bool tls = (i == 0) == (tls_dials == 1);
            const mm_refusal *r = &cl.node[i].refusal[1 - i];
            assert_true(cl.node[i].refusals[1 - i] >= 1);
            assert_int_equal(r->code, MM_REFUSAL_TLS_MISMATCH);
            assert_int_equal(r->peer, (uint32_t)(1 - i));
            assert_string_equal(r->text, tls ? "TLS mismatch: it speaks plaintext murmur but "
                                               "this peer expects TLS"
                                             : "TLS mismatch: it speaks TLS but this peer runs "
                                               "--plaintext");
            /* a TLS handshake has no id: only the address told peer 1 */
            assert_int_equal(r->by_address, i == 1 && !tls);
            mm_refusal q;
            assert_true(mm_transport_peer_refusal(cl.node[i].t, (uint32_t)(1 - i), &q));
            assert_int_equal(q.code, MM_REFUSAL_TLS_MISMATCH);
            assert_int_equal(cl.node[i].refusals_unknown, 0);
        }
        mm_log_set_file(NULL);
        fclose(log);
        assert_int_equal(tn_destroy(&cl), 0);
    }
}

typedef struct { uint32_t a, b; } refused_pair;

static bool both_refused(tn_cluster *cl, void *arg)
{
    refused_pair *p = arg;
    return cl->node[p->a].refusals[p->b] > 0 && cl->node[p->b].refusals[p->a] > 0;
}

/* Two real peers configured differently (another model, vector length,
 * algorithm, topology, settings): both sides are told whose connection was
 * refused and why, the acceptor from the HELLO, the dialler from the
 * REFUSE frame; the settings texts (docs/protocol.md 3.1) name the flags
 * that differ with both values, also where the fingerprint or the codec
 * is what differs. Peer 1 (the acceptor) refuses, peer 0 is told. */
static void config_refusals_named(void **s)
{
    static const struct {
        mm_refusal_code code;
        const char *text, *settings0, *settings1;
    } cases[] = {
        {MM_REFUSAL_FINGERPRINT, "model fingerprint differs", NULL, NULL},
        {MM_REFUSAL_FINGERPRINT, "vector length differs", NULL, NULL},
        {MM_REFUSAL_CONFIG, "algorithm differs", NULL, NULL},
        /* another topology: both files named, the whole digests (their
         * first 8 bytes are the same here), counted on both sides */
        {MM_REFUSAL_TOPOLOGY, "topology differs: peer 0 loaded complete-2.topo (digest "
                              "0000000000000000000000000000000000000000000000000000000000000000), "
                              "peer 1 loaded ring-2.topo (digest "
                              "0000000000000000000000000000000000000000000000000000000000000001)",
         NULL, NULL},
        {MM_REFUSAL_CONFIG, "setting differs: peer 0 runs --gossip-steps 1, peer 1 runs "
                            "--gossip-steps 2", "gossip-steps=1\n", "gossip-steps=2\n"},
        {MM_REFUSAL_CONFIG, "settings differ: peer 0 runs --gossip-steps 1, peer 1 runs "
                            "--gossip-steps 2 --outer-overlap", "gossip-steps=1\nlayers=2\n",
         "gossip-steps=2\nlayers=2\nouter-overlap\n"},
        {MM_REFUSAL_CONFIG, "setting differs: peer 0 runs --no-train, peer 1 runs without "
                            "--no-train", "no-train\n", ""},
        /* another model (k == 0 flips the fingerprint): the flags named */
        {MM_REFUSAL_FINGERPRINT, "model fingerprint differs: peer 0 runs --heads 2, peer 1 "
                                 "runs --heads 4 (fingerprints ", "heads=2\n", "heads=4\n"},
        /* another codec (k == 8 sets peer 1's): the flags named */
        {MM_REFUSAL_CONFIG, "codec differs: peer 0 runs without --compress, peer 1 runs "
                            "--compress int8:256", "", "compress=int8:256\n"},
    };
    for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        FILE *log = log_capture();
        tn_cluster cl;
        tn_init(&cl, 2, VLEN);
        for (uint32_t i = 0; i < 2; i++) {
            mm_transport_config c = tn_config(&cl, i, NULL);
            if (i == 1 && (k == 0 || k == 7)) c.fingerprint[3] ^= 1;
            if (i == 1 && k == 1) c.vec_len = VLEN + 1;
            if (i == 1 && k == 2) c.algo = MM_ALGO_ASYNC;
            if (k == 3) {
                c.topo_digest[31] = (uint8_t)i;
                c.topo_name = i ? "ring-2.topo" : "complete-2.topo";
            }
            if (i == 1 && k == 8) {
                c.codec = 3; /* int8:256, as gossip/codec.h numbers it */
                c.codec_block = 256;
            }
            c.settings = i ? cases[k].settings1 : cases[k].settings0;
            assert_non_null(tn_start(&cl, i, &c));
        }
        uint32_t one = 1, zero = 0;
        mm_transport_want(cl.node[0].t, &one, 1);
        mm_transport_want(cl.node[1].t, &zero, 1);
        refused_pair p = {0, 1};
        assert_true(tn_pump(&cl, both_refused, &p, 5000));
        for (int i = 0; i < 2; i++) {
            const mm_refusal *r = &cl.node[i].refusal[1 - i];
            assert_int_equal(r->peer, (uint32_t)(1 - i));
            assert_int_equal(r->code, cases[k].code);
            assert_true(mm_refusal_is_config(r->code));
            assert_non_null(strstr(r->text, cases[k].text));
            assert_int_equal(r->dialled, i == 0);
            assert_int_equal(r->by_peer, i == 0); /* the acceptor refused, the dialler was told */
            assert_int_equal(cl.node[i].up[1 - i], 0);
            mm_transport_stats st;
            mm_transport_get_stats(cl.node[i].t, &st);
            assert_int_equal(st.bad_topology > 0, k == 3);
            /* bad_config: counted by the side that refused */
            assert_int_equal(st.bad_config > 0, i == 1 && cases[k].code == MM_REFUSAL_CONFIG);
        }
        mm_log_set_file(NULL);
        fclose(log);
        assert_int_equal(tn_destroy(&cl), 0);
    }
    /* a dial to where nothing listens: unreachable, not a configuration */
    FILE *log = log_capture();
    tn_cluster cl;
    tn_init(&cl, 2, VLEN);
    mm_transport_config c = tn_config(&cl, 0, NULL);
    assert_non_null(tn_start(&cl, 0, &c));
    uint32_t one = 1;
    mm_transport_want(cl.node[0].t, &one, 1);
    uint64_t end = uv_hrtime() / 1000000 + 3000;
    while (!cl.node[0].refusals[1] && uv_hrtime() / 1000000 < end)
        uv_run(&cl.loop, UV_RUN_ONCE);
    assert_int_equal(cl.node[0].refusal[1].code, MM_REFUSAL_UNREACHABLE);
    assert_false(mm_refusal_is_config(MM_REFUSAL_UNREACHABLE));
    assert_non_null(strstr(cl.node[0].refusal[1].text, "connect failed"));
    mm_log_set_file(NULL);
    fclose(log);
    assert_int_equal(tn_destroy(&cl), 0);
    /* the documented REFUSE prefixes (docs/protocol.md, "Refusals") */
    assert_int_equal(mm_refusal_classify("TLS mismatch: x"), MM_REFUSAL_TLS_MISMATCH);
    assert_int_equal(mm_refusal_classify("two peers claim id 3 (...)"), MM_REFUSAL_ID_CLASH);
    assert_int_equal(mm_refusal_classify("codec differs: ..."), MM_REFUSAL_CONFIG);
    assert_int_equal(mm_refusal_classify("topology differs: ..."), MM_REFUSAL_TOPOLOGY);
    assert_int_equal(mm_refusal_classify("peer 3 dialled peer 1, but the lower id dials"),
                     MM_REFUSAL_IDENTITY);
    assert_int_equal(mm_refusal_classify("certificate names no murmur-peer-K (CN \"x\")"),
                     MM_REFUSAL_IDENTITY);
    assert_int_equal(mm_refusal_classify("bad version: 2"), MM_REFUSAL_VERSION);
    assert_int_equal(mm_refusal_classify("replaced by a newer connection from peer 2"),
                     MM_REFUSAL_OTHER);
    assert_int_equal(mm_refusal_classify("silent for 10000 ms (peer timeout)"), MM_REFUSAL_OTHER);
    assert_string_equal(mm_refusal_name(MM_REFUSAL_TLS_MISMATCH), "tls_mismatch");
    assert_string_equal(mm_refusal_name(MM_REFUSAL_FINGERPRINT), "bad_fingerprint");
}

/* A real transport that poisons its vectors (the tamper hook with
 * node/poison.h, as murmur node --test-poison installs it). */
static void poison_with(mm_transport_config *c, const char *kind, mm_poison **p)
{
    char err[200];
    assert_non_null(*p = mm_poison_new(kind, NULL, c->vec_len, c->n_peers, err, sizeof err));
    c->tamper = mm_poison_tamper;
    c->tamper_ud = *p;
}

static void poisoned_peer(void **s)
{
    /* ("huge" is finite: the wire accepts it, see test_transport's poison) */
    const char *kinds[] = {"nan", "inf"};
    size_t offs[] = {OFF(bad_values), OFF(bad_values)};
    for (int k = 0; k < 2; k++) {
        fixture *f = setup_cluster(false, NULL);
        mm_transport_config c = tn_config(&f->cl, ATT_ID, NULL);
        mm_poison *p;
        poison_with(&c, kinds[k], &p);
        assert_non_null(tn_start(&f->cl, ATT_ID, &c));
        uint32_t w = VICTIM;
        mm_transport_want(f->cl.node[ATT_ID].t, &w, 1);
        assert_true(tn_wait_up(&f->cl, ATT_ID, VICTIM, 5000));
        uint64_t before = stat_at(f, offs[k]);
        float *v = calloc(VLEN, 4);
        assert_int_equal(mm_transport_send(f->cl.node[ATT_ID].t, VICTIM, 0, 1.0, v), 0);
        uint64_t end = uv_hrtime() / 1000000 + 5000;
        while (stat_at(f, offs[k]) == before && uv_hrtime() / 1000000 < end)
            uv_run(&f->cl.loop, UV_RUN_ONCE);
        assert_true(stat_at(f, offs[k]) > before);
        assert_int_equal(f->cl.node[VICTIM].recv_count[ATT_ID], 0);
        f->round++;
        assert_true(tn_send_and_wait(&f->cl, HONEST, VICTIM, f->round, 5000));
        /* let the closing finish before the buffer goes */
        tn_run_for(&f->cl, 50);
        teardown_cluster(f);
        mm_poison_free(p);
        free(v);
    }
}

/* "huge" poison is finite: the transport delivers it (bounding its pull is
 * the mixing's job, --clip-pull) and counts nothing as refused. */
static void poisoned_huge_is_delivered(void **s)
{
    fixture *f = setup_cluster(false, NULL);
    mm_transport_config c = tn_config(&f->cl, ATT_ID, NULL);
    mm_poison *p;
    poison_with(&c, "huge", &p);
    assert_non_null(tn_start(&f->cl, ATT_ID, &c));
    uint32_t w = VICTIM;
    mm_transport_want(f->cl.node[ATT_ID].t, &w, 1);
    assert_true(tn_wait_up(&f->cl, ATT_ID, VICTIM, 5000));
    uint64_t bad_before = stat_at(f, OFF(bad_values)) + stat_at(f, OFF(bad_length));
    float *v = calloc(VLEN, 4);
    assert_int_equal(mm_transport_send(f->cl.node[ATT_ID].t, VICTIM, 0, 1.0, v), 0);
    tn_recv_arg r = {VICTIM, ATT_ID, 1};
    assert_true(tn_pump(&f->cl, tn_has_recv, &r, 5000));
    /* zeros became (0 + 1) * scale: not the harness pattern */
    assert_int_equal(f->cl.node[VICTIM].bad_content, 1);
    f->cl.node[VICTIM].bad_content = 0;
    assert_int_equal(stat_at(f, OFF(bad_values)) + stat_at(f, OFF(bad_length)), bad_before);
    tn_run_for(&f->cl, 50);
    teardown_cluster(f);
    mm_poison_free(p);
    free(v);
}

/* ---- TLS ---------------------------------------------------------------- */

static void set_cert(mm_transport_config *c) { (void)c; }

/* A transport with a valid certificate for peer 0 that claims to be peer 1. */
static void tls_claims_other_id(void **s)
{
    fixture *f = setup_cluster(true, set_cert);
    mm_transport_config c = tn_config(&f->cl, ATT_ID, certdir);
    static char cert[128], key[128];
    snprintf(cert, sizeof cert, "%s/node-0.pem", certdir);
    snprintf(key, sizeof key, "%s/node-0.key", certdir);
    c.cert_file = cert;
    c.key_file = key;
    assert_non_null(tn_start(&f->cl, ATT_ID, &c));
    uint64_t before = stat_at(f, OFF(bad_identity));
    uint32_t w = VICTIM;
    mm_transport_want(f->cl.node[ATT_ID].t, &w, 1);
    uint64_t end = uv_hrtime() / 1000000 + 5000;
    while (stat_at(f, OFF(bad_identity)) == before && uv_hrtime() / 1000000 < end)
        uv_run(&f->cl.loop, UV_RUN_ONCE);
    assert_true(stat_at(f, OFF(bad_identity)) > before);
    assert_false(mm_transport_is_up(f->cl.node[VICTIM].t, ATT_ID));
    assert_int_equal(f->cl.node[VICTIM].up[ATT_ID], 0);
    f->round++;
    assert_true(tn_send_and_wait(&f->cl, HONEST, VICTIM, f->round, 5000));
    teardown_cluster(f);
}

typedef struct {
    int port;
    const char *cert, *key;
    volatile int done;
    int handshake_ok;   /* the client's view; TLS 1.3 servers verify later */
    int got_data;       /* the victim sent application data */
    bool garbage;       /* send garbage instead of a HELLO */
    bool crc;           /* a payload CRC where TLS wants 0 (wire v1's rule) */
} tls_att;

static void *tls_attack(void *arg)
{
    tls_att *a = arg;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    if (a->cert) {
        SSL_CTX_use_certificate_file(ctx, a->cert, SSL_FILETYPE_PEM);
        SSL_CTX_use_PrivateKey_file(ctx, a->key, SSL_FILETYPE_PEM);
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)a->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        SSL *ssl = SSL_new(ctx);
        SSL_set_fd(ssl, fd);
        a->handshake_ok = SSL_connect(ssl) == 1;
        if (a->handshake_ok) {
            uint8_t hello[MM_WIRE_HDR_LEN + MM_WIRE_HELLO_LEN];
            mm_wire_hello h = {.vec_len = VLEN, .target = VICTIM, .algo = MM_ALGO_DPSGD,
                               .codec = MM_WIRE_CODEC_FP32};
            memset(h.fingerprint, 0xAB, 32);
            mm_wire_put_hello(hello + MM_WIRE_HDR_LEN, &h);
            /* under TLS the payload CRC field is 0 (docs/protocol.md) */
            mm_wire_header hd = {.type = MM_WIRE_HELLO, .sender = ATT_ID,
                                 .payload_len = MM_WIRE_HELLO_LEN};
            if (a->crc)
                hd.payload_crc = mm_crc32c(0, hello + MM_WIRE_HDR_LEN, MM_WIRE_HELLO_LEN);
            mm_wire_put_header(hello, &hd);
            if (a->garbage)
                memset(hello, 'G', sizeof hello);
            SSL_write(ssl, hello, sizeof hello);
            uint8_t buf[256];
            a->got_data = SSL_read(ssl, buf, sizeof buf) > 0;
        }
        SSL_free(ssl);
    }
    close(fd);
    SSL_CTX_free(ctx);
    a->done = 1;
    return NULL;
}

static void tls_bad_client(const char *cert, const char *key)
{
    fixture *f = setup_cluster(true, NULL);
    uint64_t before = stat_at(f, OFF(bad_tls));
    tls_att a = {.port = victim_port(f), .cert = cert, .key = key};
    pthread_t th;
    pthread_create(&th, NULL, tls_attack, &a);
    uint64_t end = uv_hrtime() / 1000000 + 8000;
    while ((!a.done || stat_at(f, OFF(bad_tls)) == before) && uv_hrtime() / 1000000 < end)
        uv_run(&f->cl.loop, UV_RUN_ONCE);
    pthread_join(th, NULL);
    assert_true(stat_at(f, OFF(bad_tls)) > before);
    assert_int_equal(a.got_data, 0);
    assert_int_equal(f->cl.node[VICTIM].up[ATT_ID], 0);
    f->round++;
    assert_true(tn_send_and_wait(&f->cl, HONEST, VICTIM, f->round, 5000));
    assert_true(tn_send_and_wait(&f->cl, VICTIM, HONEST, f->round, 5000));
    teardown_cluster(f);
}

static void tls_no_cert(void **s) { tls_bad_client(NULL, NULL); }

static void tls_self_signed(void **s)
{
    char c[128], k[128];
    snprintf(c, sizeof c, "%s/self.pem", selfdir);
    snprintf(k, sizeof k, "%s/self.key", selfdir);
    tls_bad_client(c, k);
}

static void tls_other_ca(void **s)
{
    char c[128], k[128];
    snprintf(c, sizeof c, "%s/node-1.pem", otherdir);
    snprintf(k, sizeof k, "%s/node-1.key", otherdir);
    tls_bad_client(c, k);
}

/* Control: the same client with a good certificate does get a HELLO back,
 * so the refusals above are not an artefact of the test client. */
static void tls_good_client_control(void **s)
{
    fixture *f = setup_cluster(true, NULL);
    char c[128], k[128];
    snprintf(c, sizeof c, "%s/node-1.pem", certdir);
    snprintf(k, sizeof k, "%s/node-1.key", certdir);
    tls_att a = {.port = victim_port(f), .cert = c, .key = k};
    pthread_t th;
    pthread_create(&th, NULL, tls_attack, &a);
    uint64_t end = uv_hrtime() / 1000000 + 8000;
    while (!a.done && uv_hrtime() / 1000000 < end)
        uv_run(&f->cl.loop, UV_RUN_ONCE);
    pthread_join(th, NULL);
    assert_true(a.handshake_ok);
    assert_true(a.got_data);
    assert_int_equal(f->cl.node[VICTIM].up[ATT_ID], 1);
    teardown_cluster(f);
}

/* A frame refused inside an authenticated TLS channel: counted under
 * `counter`, the client not brought up, honest traffic unaffected. */
static void tls_bad_frame(bool garbage, bool crc, size_t counter)
{
    fixture *f = setup_cluster(true, NULL);
    char c[128], k[128];
    snprintf(c, sizeof c, "%s/node-1.pem", certdir);
    snprintf(k, sizeof k, "%s/node-1.key", certdir);
    uint64_t before = stat_at(f, counter);
    tls_att a = {.port = victim_port(f), .cert = c, .key = k, .garbage = garbage, .crc = crc};
    pthread_t th;
    pthread_create(&th, NULL, tls_attack, &a);
    uint64_t end = uv_hrtime() / 1000000 + 8000;
    while ((!a.done || stat_at(f, counter) == before) && uv_hrtime() / 1000000 < end)
        uv_run(&f->cl.loop, UV_RUN_ONCE);
    pthread_join(th, NULL);
    assert_true(stat_at(f, counter) > before);
    assert_int_equal(f->cl.node[VICTIM].up[ATT_ID], 0);
    f->round++;
    assert_true(tn_send_and_wait(&f->cl, HONEST, VICTIM, f->round, 5000));
    teardown_cluster(f);
}

/* Garbage inside an authenticated TLS channel is refused like in plain. */
static void tls_garbage_after_handshake(void **s) { tls_bad_frame(true, false, OFF(bad_magic)); }

/* A payload CRC on a TLS connection (protocol version 1's rule; version 2
 * leaves it to the AEAD): refused as a checksum error. */
static void tls_payload_crc_refused(void **s) { tls_bad_frame(false, true, OFF(bad_checksum)); }

int main(void)
{
    mm_log_set_level(MM_LOG_WARN);
    int pid = (int)getpid();
    snprintf(certdir, sizeof certdir, "/tmp/murmur-bad-certs-%d", pid);
    snprintf(otherdir, sizeof otherdir, "/tmp/murmur-bad-other-%d", pid);
    snprintf(selfdir, sizeof selfdir, "/tmp/murmur-bad-self-%d", pid);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s && openssl req -x509 -newkey ec -pkeyopt "
             "ec_paramgen_curve:P-256 -nodes -keyout %s/self.key -out %s/self.pem "
             "-subj /CN=murmur-peer-1 -days 2 2>/dev/null", selfdir, selfdir, selfdir);
    if (!tn_certs(certdir, 3) || !tn_certs(otherdir, 3) || system(cmd) != 0) {
        fprintf(stderr, "cannot make certificates\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(garbage),
        cmocka_unit_test(wrong_magic),
        cmocka_unit_test(wrong_version),
        cmocka_unit_test(unknown_type),
        cmocka_unit_test(vector_before_hello),
        cmocka_unit_test(huge_length),
        cmocka_unit_test(poisoned_huge_is_delivered),
        cmocka_unit_test(short_frame_then_silence),
        cmocka_unit_test(bad_checksum),
        cmocka_unit_test(wrong_fingerprint),
        cmocka_unit_test(config_refusals_named),
        cmocka_unit_test(round_outside_window),
        cmocka_unit_test(nan_and_inf),
        cmocka_unit_test(bad_weights),
        cmocka_unit_test(hello_reserved),
        cmocka_unit_test(hello_config_mismatch),
        cmocka_unit_test(claims_other_id_plain),
        cmocka_unit_test(flood),
        cmocka_unit_test(pending_cap_keeps_room_for_peers),
        cmocka_unit_test(silent_peer),
        cmocka_unit_test(heartbeat_interval),
        cmocka_unit_test(reconnect_replaces),
        cmocka_unit_test(two_peers_one_id),
        cmocka_unit_test(redial_is_not_a_clash),
        cmocka_unit_test(vector_from_non_neighbour),
        cmocka_unit_test(poisoned_peer),
        cmocka_unit_test(tls_claims_other_id),
        cmocka_unit_test(tls_no_cert),
        cmocka_unit_test(tls_self_signed),
        cmocka_unit_test(tls_other_ca),
        cmocka_unit_test(tls_good_client_control),
        cmocka_unit_test(tls_garbage_after_handshake),
        cmocka_unit_test(tls_payload_crc_refused),
        cmocka_unit_test(tls_plaintext_mismatch),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s %s", certdir, otherdir, selfdir);
    if (system(cmd) != 0 && rc == 0)
        rc = 1;
    return rc;
}
