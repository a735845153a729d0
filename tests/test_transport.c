/* Vectors of 1 float to 64 MB arrive bit-exact between 2, 3 and 8 peers on
 * loopback, plaintext and TLS; connections come up by the lower-id-dials
 * rule, are reused across rounds, report DOWN/BYE, and refuse bad config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "net/ports.h"
#include "tests/tnet.h"

static const char *certdir;

static bool linked(uint32_t n, bool ring, uint32_t i, uint32_t j)
{
    if (i == j)
        return false;
    return !ring || (i + 1) % n == j || (j + 1) % n == i;
}

/* Every link's bytes as both ends count them (mm_transport_get_link_stats):
 * what i sent to j is what j received from i, once nothing is in flight. */
static bool links_agree(tn_cluster *cl, void *arg)
{
    uint32_t n = *(const uint32_t *)arg;
    mm_link_stats l[TN_MAX][TN_MAX];
    for (uint32_t i = 0; i < n; i++)
        mm_transport_get_link_stats(cl->node[i].t, l[i]);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++)
            if (l[i][j].bytes_sent != l[j][i].bytes_recv)
                return false;
    return true;
}

/* Per link: the vectors of each neighbour, nothing from others, and the
 * links' bytes adding up to the process's (every connection was bound). */
static void check_links(tn_cluster *cl, uint32_t n, bool ring, int rounds)
{
    assert_true(tn_pump(cl, links_agree, &n, 10000));
    for (uint32_t i = 0; i < n; i++) {
        mm_link_stats l[TN_MAX];
        mm_transport_stats st;
        mm_transport_get_link_stats(cl->node[i].t, l);
        mm_transport_get_stats(cl->node[i].t, &st);
        uint64_t sent = 0, recv = 0;
        for (uint32_t j = 0; j < n; j++) {
            uint64_t want = linked(n, ring, i, j) ? (uint64_t)rounds : 0;
            assert_int_equal(l[j].vectors_sent, want);
            assert_int_equal(l[j].vectors_recv, want);
            if (!want)
                assert_int_equal(l[j].bytes_sent + l[j].bytes_recv, 0);
            sent += l[j].bytes_sent;
            recv += l[j].bytes_recv;
        }
        assert_int_equal(sent, st.bytes_sent);
        assert_int_equal(recv, st.bytes_recv);
    }
}

/* n peers, full mesh or ring; every peer sends one vector per round to each
 * neighbour for `rounds` rounds; all must arrive bit-exact. */
static void run_graph(uint32_t n, uint64_t vec_len, bool tls, int rounds, bool ring)
{
    tn_cluster *cl = calloc(1, sizeof *cl);
    tn_init(cl, n, vec_len);
    for (uint32_t i = 0; i < n; i++) {
        mm_transport_config cfg = tn_config(cl, i, tls ? certdir : NULL);
        assert_non_null(tn_start(cl, i, &cfg));
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t nb[TN_MAX];
        int k = 0;
        for (uint32_t j = 0; j < n; j++)
            if (linked(n, ring, i, j))
                nb[k++] = j;
        mm_transport_want(cl->node[i].t, nb, k);
    }
    uint32_t degree = 0;
    for (uint32_t j = 0; j < n; j++)
        degree += linked(n, ring, 0, j);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++)
            if (linked(n, ring, i, j))
                assert_true(tn_wait_up(cl, i, j, 10000));

    float *bufs[TN_MAX];
    for (uint32_t i = 0; i < n; i++)
        bufs[i] = malloc(4 * vec_len);
    for (int r = 1; r <= rounds; r++) {
        for (uint32_t i = 0; i < n; i++) {
            mm_transport_set_exchange(cl->node[i].t, (uint64_t)r);
            tn_fill(bufs[i], vec_len, i, (uint64_t)r);
        }
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < n; j++)
                if (linked(n, ring, i, j))
                    assert_int_equal(mm_transport_send(cl->node[i].t, j, (uint64_t)r,
                                                       tn_weight(i, (uint64_t)r), bufs[i]), 0);
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < n; j++)
                if (linked(n, ring, i, j)) {
                    tn_recv_arg a = {i, j, (uint64_t)r};
                    assert_true(tn_pump(cl, tn_has_recv, &a, 60000));
                    assert_int_equal(cl->node[i].last_round[j], (uint64_t)r);
                }
        /* the send buffers may be reused only after on_sent */
        uint64_t want_sent = (uint64_t)degree * (uint64_t)r;
        for (uint32_t i = 0; i < n; i++) {
            tn_sent_arg sa = {i, want_sent};
            assert_true(tn_pump(cl, tn_has_sent, &sa, 30000));
        }
    }
    check_links(cl, n, ring, rounds);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(cl->node[i].bad_content, 0);
        assert_int_equal(cl->node[i].sent_fail, 0);
        mm_transport_stats st;
        mm_transport_get_stats(cl->node[i].t, &st);
        assert_int_equal(st.vectors_recv, (uint64_t)degree * (uint64_t)rounds);
        /* one connection per pair, dialled by the lower id */
        uint32_t lower = 0, higher = 0;
        for (uint32_t j = 0; j < n; j++)
            if (linked(n, ring, i, j))
                *(j < i ? &lower : &higher) += 1;
        assert_int_equal(st.conns_dialed, higher);
        assert_int_equal(st.conns_accepted, lower);
        /* TLS ciphertext waiting for the socket stays bounded whatever the
         * vector size: one SSL_write (plus record overhead) past the mark */
        if (tls && 4 * vec_len > MM_TLS_QUEUE_MAX)
            assert_in_range(st.tls_queued_peak, 1, MM_TLS_QUEUE_MAX);
        if (!tls)
            assert_int_equal(st.tls_queued_peak, 0);
        free(bufs[i]);
    }
    assert_int_equal(tn_destroy(cl), 0);
    free(cl);
}

static void mesh(uint32_t n, uint64_t vec_len, bool tls, int rounds)
{
    run_graph(n, vec_len, tls, rounds, false);
}

static void plain_2_sizes(void **s)
{
    mesh(2, 1, false, 2);
    mesh(2, 1000, false, 2);
    mesh(2, 1 << 18, false, 2);             /* 1 MB */
    mesh(2, 1 << 20, false, 2);             /* 4 MB */
    mesh(2, 1 << 24, false, 1);             /* 64 MB */
}

static void tls_2_sizes(void **s)
{
    mesh(2, 1, true, 2);
    mesh(2, 1000, true, 2);
    mesh(2, 1 << 20, true, 2);
    mesh(2, 1 << 24, true, 1);
}

static void plain_3(void **s) { mesh(3, 1 << 18, false, 3); mesh(3, 1, false, 2); }
static void tls_3(void **s) { mesh(3, 1 << 18, true, 3); mesh(3, 1, true, 2); }
static void plain_8(void **s) { mesh(8, 1 << 16, false, 2); mesh(8, 1, false, 1); }
static void tls_8(void **s) { mesh(8, 1 << 16, true, 2); mesh(8, 1, true, 1); }
static void big_3(void **s) { mesh(3, 1 << 24, true, 1); }
/* 64 MB around a ring of 8 (16 transfers of 64 MB, one thread does all) */
static void big_ring_8(void **s) { run_graph(8, 1 << 24, true, 1, true); }
/* "hundreds of MB": 256 MB each way over TLS */
static void huge_2(void **s) { mesh(2, 1 << 26, true, 1); }
static void plain_ring_8(void **s) { run_graph(8, 1 << 22, false, 2, true); }

static bool down_seen(tn_cluster *cl, void *arg)
{
    tn_pair *p = arg;
    return cl->node[p->a].down[p->b] > 0;
}

/* A wanted peer that is not running is reported DOWN (and retried); when it
 * starts, the connection comes up without any further call. */
static void down_then_up(void **s)
{
    tn_cluster cl;
    tn_init(&cl, 2, 100);
    mm_transport_config c0 = tn_config(&cl, 0, certdir);
    assert_non_null(tn_start(&cl, 0, &c0));
    uint32_t want1 = 1, want0 = 0;
    mm_transport_want(cl.node[0].t, &want1, 1);
    tn_pair p = {0, 1};
    assert_true(tn_pump(&cl, down_seen, &p, 5000));
    assert_false(mm_transport_is_up(cl.node[0].t, 1));
    mm_transport_stats st;
    tn_run_for(&cl, 300);
    mm_transport_get_stats(cl.node[0].t, &st);
    assert_true(st.conns_dialed >= 2); /* retried with back-off */
    assert_int_equal(cl.node[0].down[1], 1); /* reported once, not per retry */

    mm_transport_config c1 = tn_config(&cl, 1, certdir);
    assert_non_null(tn_start(&cl, 1, &c1));
    mm_transport_want(cl.node[1].t, &want0, 1);
    assert_true(tn_wait_up(&cl, 0, 1, 5000));
    assert_true(tn_send_and_wait(&cl, 0, 1, 0, 5000));
    assert_true(tn_send_and_wait(&cl, 1, 0, 0, 5000));
    assert_int_equal(cl.node[1].bad_content + cl.node[0].bad_content, 0);

    /* shutting peer 1 down says BYE to peer 0 */
    int one = 1;
    mm_transport_shutdown(cl.node[1].t, tn_closed, &cl.closed);
    assert_true(tn_pump(&cl, tn_all_closed, &one, 5000));
    for (int i = 0; i < 100 && !cl.node[0].bye[1]; i++)
        uv_run(&cl.loop, UV_RUN_ONCE);
    assert_int_equal(cl.node[0].bye[1], 1);
    assert_int_equal(cl.node[0].down[1], 1); /* BYE is not a failure */
    mm_transport_free(cl.node[1].t);
    cl.node[1].t = NULL;
    cl.closed = 0;
    assert_int_equal(tn_destroy(&cl), 0);
}

/* Two TLS peers up with vectors of vec_len floats; a and b (filled for
 * rounds 1 and 2 from peer 1) are peer 1's send buffers. */
static void goodbye_setup(tn_cluster *cl, uint64_t vec_len, float **a, float **b)
{
    tn_init(cl, 2, vec_len);
    for (uint32_t i = 0; i < 2; i++) {
        mm_transport_config c = tn_config(cl, i, certdir);
        assert_non_null(tn_start(cl, i, &c));
    }
    uint32_t w0 = 0, w1 = 1;
    mm_transport_want(cl->node[0].t, &w1, 1);
    mm_transport_want(cl->node[1].t, &w0, 1);
    assert_true(tn_wait_up(cl, 0, 1, 5000));
    *a = malloc(4 * vec_len);
    *b = malloc(4 * vec_len);
    tn_fill(*a, vec_len, 1, 1);
    tn_fill(*b, vec_len, 1, 2);
}

/* Peer 1 shuts down; returns the milliseconds its shutdown took. */
static uint64_t goodbye_shutdown(tn_cluster *cl)
{
    int one = 1;
    uint64_t t0 = uv_hrtime();
    mm_transport_shutdown(cl->node[1].t, tn_closed, &cl->closed);
    assert_true(tn_pump(cl, tn_all_closed, &one, 10000));
    uint64_t ms = (uv_hrtime() - t0) / 1000000;
    mm_transport_free(cl->node[1].t);
    cl->node[1].t = NULL;
    cl->closed = 0;
    return ms;
}

/* Shutting down in the middle of a 64 MB TLS vector: the frame already on
 * its way is finished, the one queued behind it is given back unsent, and
 * the peer hears BYE after the whole vector, not a frame cut in half. */
static void goodbye_finishes_frame(void **s)
{
    tn_cluster cl;
    float *a, *b;
    /* 16 MB, more than the socket buffers hold, so still on its way at the
     * goodbye; 64 MB over TLS missed the 2 s grace at load >= 10. */
    goodbye_setup(&cl, 1 << 22, &a, &b);
    assert_int_equal(mm_transport_send(cl.node[1].t, 0, 1, tn_weight(1, 1), a), 0);
    assert_int_equal(mm_transport_send(cl.node[1].t, 0, 2, tn_weight(1, 2), b), 0);
    goodbye_shutdown(&cl);
    assert_int_equal(cl.node[1].sent_ok, 1);
    assert_int_equal(cl.node[1].sent_fail, 1);
    for (int i = 0; i < 1000 && !cl.node[0].bye[1]; i++)
        uv_run(&cl.loop, UV_RUN_ONCE);
    assert_int_equal(cl.node[0].recv_count[1], 1);
    assert_int_equal(cl.node[0].last_round[1], 1);
    assert_int_equal(cl.node[0].bad_content, 0);
    assert_int_equal(cl.node[0].bye[1], 1);
    free(a);
    free(b);
    assert_int_equal(tn_destroy(&cl), 0);
}

/* A goodbye that cannot be said (the peer stopped reading: it holds a lent
 * buffer) is given up after MM_CLOSE_GRACE_MS, so shutdown stays bounded. */
static void goodbye_bounded(void **s)
{
    tn_cluster cl;
    float *a, *b;
    goodbye_setup(&cl, 1 << 24, &a, &b);
    cl.node[0].hold = true;
    tn_recv_arg first = {0, 1, 1};
    assert_int_equal(mm_transport_send(cl.node[1].t, 0, 1, tn_weight(1, 1), a), 0);
    assert_true(tn_pump(&cl, tn_has_recv, &first, 10000));
    assert_int_equal(mm_transport_send(cl.node[1].t, 0, 2, tn_weight(1, 2), b), 0);
    tn_run_for(&cl, 200); /* round 2 fills the socket buffers and stalls */
    uint64_t ms = goodbye_shutdown(&cl);
    assert_in_range(ms, MM_CLOSE_GRACE_MS - 100, MM_CLOSE_GRACE_MS + 2000);
    assert_int_equal(cl.node[1].sent_fail, 1);
    assert_int_equal(cl.node[0].bye[1], 0);
    mm_transport_release(cl.node[0].t, 1);
    free(a);
    free(b);
    assert_int_equal(tn_destroy(&cl), 0);
}

/* Nothing more is read from a peer being left, even when the application
 * gives back a lent buffer while the goodbye waits for a stalled frame. */
static void goodbye_reads_nothing_more(void **s)
{
    enum { N = 1 << 24 };
    tn_cluster cl;
    float *a, *b, *c = malloc(4 * N), *d = malloc(4 * N);
    goodbye_setup(&cl, N, &a, &b); /* a, b: peer 1's rounds 1 and 2 */
    tn_fill(c, N, 0, 1);
    tn_fill(d, N, 0, 2);
    cl.node[0].hold = cl.node[1].hold = true;
    tn_recv_arg r01 = {1, 0, 1}, r10 = {0, 1, 1};
    assert_int_equal(mm_transport_send(cl.node[0].t, 1, 1, tn_weight(0, 1), c), 0);
    assert_int_equal(mm_transport_send(cl.node[1].t, 0, 1, tn_weight(1, 1), a), 0);
    assert_true(tn_pump(&cl, tn_has_recv, &r01, 10000));
    assert_true(tn_pump(&cl, tn_has_recv, &r10, 10000));
    /* both hold round 1: both rounds 2 stall in the sockets */
    assert_int_equal(mm_transport_send(cl.node[1].t, 0, 2, tn_weight(1, 2), b), 0);
    assert_int_equal(mm_transport_send(cl.node[0].t, 1, 2, tn_weight(0, 2), d), 0);
    tn_run_for(&cl, 200);
    int one = 1;
    mm_transport_shutdown(cl.node[1].t, tn_closed, &cl.closed); /* b half sent */
    mm_transport_release(cl.node[1].t, 0);
    assert_true(tn_pump(&cl, tn_all_closed, &one, 10000));
    assert_int_equal(cl.node[1].recv_count[0], 1);
    mm_transport_free(cl.node[1].t);
    cl.node[1].t = NULL;
    cl.closed = 0;
    mm_transport_release(cl.node[0].t, 1);
    assert_int_equal(tn_destroy(&cl), 0);
    free(a);
    free(b);
    free(c);
    free(d);
}

static bool recv_at_least(tn_cluster *cl, void *arg)
{
    mm_transport_stats st;
    mm_transport_get_stats(cl->node[0].t, &st);
    return st.bytes_recv >= *(uint64_t *)arg;
}

/* A refusal leaves like a goodbye: peer 0 refuses peer 1 (a vector from a
 * round far outside the window) while its own 64 MB vector to peer 1 is on
 * its way; that vector still arrives whole, then REFUSE closes. */
static void refuse_finishes_frame(void **s)
{
    enum { N = 1 << 24 };
    tn_cluster cl;
    float *a, *b, *c = malloc(4 * N);
    goodbye_setup(&cl, N, &a, &b);
    tn_fill(c, N, 0, 1);
    mm_transport_set_exchange(cl.node[0].t, 1);
    mm_transport_set_exchange(cl.node[1].t, 1);
    tn_fill(a, N, 1, 5000);
    assert_int_equal(mm_transport_send(cl.node[1].t, 0, 5000, tn_weight(1, 5000), a), 0);
    /* most of the bad vector in, then peer 0 starts its own */
    uint64_t most = 4ull * N - (4u << 20);
    assert_true(tn_pump(&cl, recv_at_least, &most, 10000));
    assert_int_equal(mm_transport_send(cl.node[0].t, 1, 1, tn_weight(0, 1), c), 0);
    tn_pair p = {1, 0};
    assert_true(tn_pump(&cl, down_seen, &p, 10000));
    mm_transport_stats st;
    mm_transport_get_stats(cl.node[0].t, &st);
    assert_int_equal(st.bad_round, 1);
    assert_int_equal(cl.node[1].recv_count[0], 1);
    assert_int_equal(cl.node[1].bad_content, 0);
    assert_int_equal(cl.node[0].sent_ok, 1);
    free(a);
    free(b);
    free(c);
    assert_int_equal(tn_destroy(&cl), 0);
}

/* A peer that holds the lent buffer stops reading from that peer; the sender
 * keeps bounded memory and the vector arrives after release. */
static void hold_and_release(void **s)
{
    tn_cluster cl;
    tn_init(&cl, 2, 1 << 20);
    for (uint32_t i = 0; i < 2; i++) {
        mm_transport_config c = tn_config(&cl, i, NULL);
        assert_non_null(tn_start(&cl, i, &c));
    }
    uint32_t w0 = 0, w1 = 1;
    mm_transport_want(cl.node[0].t, &w1, 1);
    mm_transport_want(cl.node[1].t, &w0, 1);
    assert_true(tn_wait_up(&cl, 0, 1, 5000));
    cl.node[1].hold = true;
    float *a = malloc(4 << 20), *b = malloc(4 << 20);
    tn_fill(a, 1 << 20, 0, 1);
    tn_fill(b, 1 << 20, 0, 2);
    assert_int_equal(mm_transport_send(cl.node[0].t, 1, 1, tn_weight(0, 1), a), 0);
    assert_int_equal(mm_transport_send(cl.node[0].t, 1, 2, tn_weight(0, 2), b), 0);
    tn_recv_arg first = {1, 0, 1};
    assert_true(tn_pump(&cl, tn_has_recv, &first, 5000));
    tn_run_for(&cl, 300);
    assert_int_equal(cl.node[1].recv_count[0], 1); /* second one waits */
    assert_int_equal(cl.node[1].last_round[0], 1);
    cl.node[1].hold = false;
    mm_transport_release(cl.node[1].t, 0);
    tn_recv_arg r = {1, 0, 2};
    assert_true(tn_pump(&cl, tn_has_recv, &r, 5000));
    assert_int_equal(cl.node[1].last_round[0], 2);
    assert_int_equal(cl.node[1].bad_content, 0);
    assert_true(mm_transport_is_up(cl.node[1].t, 0));
    assert_int_equal(tn_destroy(&cl), 0);
    free(a);
    free(b);
}

/* Many tiny vectors back to back, released inside on_vector: they arrive
 * in order without unbounded recursion (TLS decrypts many per read). */
static void many_small(bool tls)
{
    tn_cluster cl;
    tn_init(&cl, 2, 1);
    for (uint32_t i = 0; i < 2; i++) {
        mm_transport_config c = tn_config(&cl, i, tls ? certdir : NULL);
        assert_non_null(tn_start(&cl, i, &c));
    }
    uint32_t w0 = 0, w1 = 1;
    mm_transport_want(cl.node[0].t, &w1, 1);
    mm_transport_want(cl.node[1].t, &w0, 1);
    assert_true(tn_wait_up(&cl, 0, 1, 5000));
    float v;
    tn_fill(&v, 1, 0, 7);
    for (int i = 0; i < 3000; i++)
        assert_int_equal(mm_transport_send(cl.node[0].t, 1, 7, tn_weight(0, 7), &v), 0);
    tn_recv_arg r = {1, 0, 3000};
    assert_true(tn_pump(&cl, tn_has_recv, &r, 20000));
    assert_int_equal(cl.node[1].bad_content, 0);
    tn_sent_arg sa = {0, 3000};
    assert_true(tn_pump(&cl, tn_has_sent, &sa, 10000));
    assert_int_equal(tn_destroy(&cl), 0);
}

static void many_small_plain(void **s) { many_small(false); }
static void many_small_tls(void **s) { many_small(true); }

/* Not wanted any more: the connection is closed after idle_ms. */
static void idle_close(void **s)
{
    tn_cluster cl;
    tn_init(&cl, 2, 10);
    for (uint32_t i = 0; i < 2; i++) {
        mm_transport_config c = tn_config(&cl, i, NULL);
        c.idle_ms = 200;
        assert_non_null(tn_start(&cl, i, &c));
    }
    uint32_t w0 = 0, w1 = 1;
    mm_transport_want(cl.node[0].t, &w1, 1);
    mm_transport_want(cl.node[1].t, &w0, 1);
    assert_true(tn_wait_up(&cl, 0, 1, 5000));
    mm_transport_want(cl.node[0].t, NULL, 0);
    mm_transport_want(cl.node[1].t, NULL, 0);
    tn_run_for(&cl, 100);
    assert_true(mm_transport_is_up(cl.node[0].t, 1));
    tn_run_for(&cl, 600);
    assert_false(mm_transport_is_up(cl.node[0].t, 1));
    assert_false(mm_transport_is_up(cl.node[1].t, 0));
    assert_int_equal(cl.node[0].down[1] + cl.node[0].bye[1], 1);
    assert_int_equal(tn_destroy(&cl), 0);
}

static void config_errors(void **s)
{
    tn_cluster cl;
    tn_init(&cl, 2, 10);
    mm_transport_callbacks cb = {0};
    char err[256];
    mm_transport_config c = tn_config(&cl, 0, certdir);
    char key[128];
    snprintf(key, sizeof key, "%s/node-0.key", certdir);
    chmod(key, 0644);
    assert_null(mm_transport_new(&cl.loop, &c, &cb, err, sizeof err));
    assert_non_null(strstr(err, "chmod 600"));
    chmod(key, 0600);

    /* a key of another peer: said to not match, not "could not be loaded" */
    char other[128];
    snprintf(other, sizeof other, "%s/node-1.key", certdir);
    c.key_file = other;
    assert_null(mm_transport_new(&cl.loop, &c, &cb, err, sizeof err));
    assert_non_null(strstr(err, "does not match certificate"));
    assert_null(strstr(err, "could not be loaded"));
    /* a file that is no key at all */
    char junk[128];
    snprintf(junk, sizeof junk, "/tmp/murmur-junk-key-%d", (int)getpid());
    FILE *jf = fopen(junk, "w");
    fputs("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n", jf);
    fclose(jf);
    chmod(junk, 0600);
    c.key_file = junk;
    assert_null(mm_transport_new(&cl.loop, &c, &cb, err, sizeof err));
    assert_non_null(strstr(err, "could not be loaded"));
    unlink(junk);

    mm_transport_config d = tn_config(&cl, 0, NULL);
    d.plaintext = false; /* TLS without files: refused, not silently plain */
    assert_null(mm_transport_new(&cl.loop, &d, &cb, err, sizeof err));
    d = tn_config(&cl, 5, NULL);
    assert_null(mm_transport_new(&cl.loop, &d, &cb, err, sizeof err));
    d = tn_config(&cl, 0, NULL);
    d.vec_len = 0;
    assert_null(mm_transport_new(&cl.loop, &d, &cb, err, sizeof err));
    assert_int_equal(tn_destroy(&cl), 0);
}

/* A listen port inside the kernel's ephemeral range, held by an outgoing
 * connection (what happened to 9 of 256 peers started with -p 38000): the
 * error says why and which ports to choose (net/ports.h). */
static void ephemeral_port_in_use(void **s)
{
    int lo, hi;
    if (!mm_ephemeral_range(&lo, &hi))
        skip();
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in la = {.sin_family = AF_INET};
    la.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t ll = sizeof la;
    assert_int_equal(bind(l, (struct sockaddr *)&la, sizeof la), 0);
    assert_int_equal(listen(l, 4), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&la, &ll), 0);
    /* an outgoing connection whose local end is port P, inside the range */
    int c = -1, port = 0;
    unsigned seed = (unsigned)getpid();
    for (int tries = 0; tries < 200 && c < 0; tries++) {
        seed = seed * 1103515245u + 12345u;
        port = lo + (int)((seed >> 8) % (unsigned)(hi - lo + 1));
        c = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in ca = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        ca.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(c, (struct sockaddr *)&ca, sizeof ca) != 0 ||
            connect(c, (struct sockaddr *)&la, sizeof la) != 0) {
            close(c);
            c = -1;
        }
    }
    assert_true(c >= 0);
    tn_cluster cl;
    tn_init(&cl, 2, 10);
    snprintf(cl.addr[0], sizeof cl.addr[0], "127.0.0.1:%d", port);
    mm_transport_config cfg = tn_config(&cl, 0, NULL);
    mm_transport_callbacks cb = {0};
    char err[1024];
    assert_null(mm_transport_new(&cl.loop, &cfg, &cb, err, sizeof err));
    assert_non_null(strstr(err, "address already in use"));
    assert_non_null(strstr(err, "ephemeral port range"));
    assert_non_null(strstr(err, "choose listen ports below"));
    close(c);
    close(l);
    assert_int_equal(tn_destroy(&cl), 0);
}

/* tn_free_port never hands out one port twice in a process: two transports
 * of one cluster must not be given the same port (1500 draws from the
 * ~12,000 ports below the ephemeral range repeat one almost surely when
 * nothing prevents it). Runs last: it uses up part of the harness's list. */
static void free_ports_distinct(void **s)
{
    enum { N = 1500 };
    static int seen[65536];
    for (int i = 0; i < N; i++) {
        int p = tn_free_port();
        assert_true(p > 0 && p < 65536);
        assert_int_equal(seen[p], 0);
        seen[p] = 1;
    }
}

int main(void)
{
    mm_log_set_level(MM_LOG_WARN);
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/murmur-test-certs-%d", (int)getpid());
    certdir = tn_certs(dir, 8);
    if (!certdir) {
        fprintf(stderr, "cannot make certificates with scripts/make-certs.sh\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_errors),
        cmocka_unit_test(plain_2_sizes),
        cmocka_unit_test(tls_2_sizes),
        cmocka_unit_test(plain_3),
        cmocka_unit_test(tls_3),
        cmocka_unit_test(plain_8),
        cmocka_unit_test(tls_8),
        cmocka_unit_test(big_3),
        cmocka_unit_test(big_ring_8),
        cmocka_unit_test(plain_ring_8),
        cmocka_unit_test(huge_2),
        cmocka_unit_test(down_then_up),
        cmocka_unit_test(hold_and_release),
        cmocka_unit_test(goodbye_finishes_frame),
        cmocka_unit_test(goodbye_bounded),
        cmocka_unit_test(goodbye_reads_nothing_more),
        cmocka_unit_test(refuse_finishes_frame),
        cmocka_unit_test(idle_close),
        cmocka_unit_test(many_small_plain),
        cmocka_unit_test(many_small_tls),
        cmocka_unit_test(ephemeral_port_in_use),
        cmocka_unit_test(free_ports_distinct),
    };
    return tn_done(cmocka_run_group_tests(tests, NULL, NULL), dir);
}
