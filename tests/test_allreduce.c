/* The all-reduce (node/allreduce.c) over real transports on loopback, on
 * both schedules: the ring with n = 2, 3, 4, 7 and 8 peers, halving-doubling
 * with n = 2, 4 and 8, averaging vectors whose length n does not divide, in
 * many small chunks (so the pipeline and the gather's wait-before-overwrite
 * are exercised), several rounds back to back, out of place and in place,
 * plaintext and TLS. Every peer must end with the same floats, bit for bit,
 * and each must be the exact average to float rounding: within (n + 1)
 * float epsilons of the double-precision mean, scaled by the largest |x|.
 * Also: a vector shorter than n (empty segments); peers that start the next
 * round the moment theirs ended, while others still finish (halving: a
 * partner's chunk of the next round arrives before another partner's of
 * this one); and a partner that leaves mid-way fails the all-reduce on
 * both sides with an error naming it and the step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <float.h>
#include <math.h>

#include "node/allreduce.h"
#include "tests/tnet.h"

static const char *certdir;

typedef struct {
    tn_cluster *cl;
    uint32_t id;
    mm_allreduce *ar;
    int done, failed;
    uint64_t direct;            /* chunk bodies read straight into out */
    char err[512];
} ar_node;

static ar_node nodes[TN_MAX];
static bool copying;            /* no vector_dst: every body through the receive buffer */
static mm_ar_schedule sched;    /* the schedule every peer runs */

static void on_vector(void *ud, uint32_t peer, uint64_t round, const mm_wire_vec *meta,
                      const void *body, size_t len)
{
    ar_node *a = ud;
    mm_allreduce_on_vector(a->ar, peer, round, meta, body, len);
}
static void *vector_dst(void *ud, uint32_t peer, uint64_t round, const mm_wire_vec *meta,
                        size_t body_len)
{
    ar_node *a = ud;
    float *p = mm_allreduce_vector_dst(a->ar, peer, round, meta);
    a->direct += p != NULL;
    return p;
}
static void on_sent(void *ud, uint32_t peer, uint64_t round, bool ok)
{
    ar_node *a = ud;
    mm_allreduce_on_sent(a->ar, peer, round, ok);
}
static void on_peer(void *ud, uint32_t peer, mm_peer_state st)
{
    ar_node *a = ud;
    mm_allreduce_on_peer(a->ar, peer, st);
}
static void on_done(void *ud, mm_ar_state st, const char *err)
{
    ar_node *a = ud;
    if (st == MM_AR_DONE)
        a->done++;
    else {
        a->failed++;
        snprintf(a->err, sizeof a->err, "%s", err);
    }
}

typedef struct { uint32_t n; int want; } count_arg;
static bool all_ended(tn_cluster *cl, void *arg)
{
    count_arg *c = arg;
    for (uint32_t i = 0; i < c->n; i++)
        if (nodes[i].done + nodes[i].failed < c->want)
            return false;
    return true;
}

static void start_cluster(tn_cluster *cl, uint32_t n, uint64_t len, uint64_t chunk, bool tls)
{
    tn_init(cl, n, len);
    for (uint32_t i = 0; i < n; i++) {
        mm_transport_config cfg = tn_config(cl, i, tls ? certdir : NULL);
        cfg.algo = MM_ALGO_ALLREDUCE;
        cfg.allow_chunks = true;
        static tn_weight_rule one = {.rule = MM_WEIGHT_ONE};
        tn_set_weight_rule(&cfg, &one);
        nodes[i] = (ar_node){.cl = cl, .id = i};
        mm_transport_callbacks cb = {.on_vector = on_vector, .on_sent = on_sent, .on_peer = on_peer,
                                     .ud = &nodes[i], .vector_dst = copying ? NULL : vector_dst};
        char err[256] = "";
        cl->node[i].t = mm_transport_new(&cl->loop, &cfg, &cb, err, sizeof err);
        assert_non_null(cl->node[i].t);
        mm_allreduce_config ac = {.transport = cl->node[i].t, .self = i, .n = n, .len = len,
                                  .chunk = chunk, .schedule = sched, .done = on_done,
                                  .ud = &nodes[i]};
        nodes[i].ar = mm_allreduce_new(&ac, err, sizeof err);
        assert_non_null(nodes[i].ar);
    }
}

static void stop_cluster(tn_cluster *cl, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        mm_allreduce_free(nodes[i].ar);
    assert_int_equal(tn_destroy(cl), 0);
}

static void fill(float *v, uint64_t len, uint32_t id, int round)
{
    uint64_t x = 0x9E3779B97F4A7C15ULL * (id + 1) + (uint64_t)round * 0xD1B54A32D192ED03ULL;
    for (uint64_t k = 0; k < len; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* magnitudes from 1e-3 to 1e3, both signs */
        double u = (double)(x >> 11) / 9007199254740992.0;
        v[k] = (float)((u - 0.5) * pow(10.0, (double)(x % 7) - 3.0));
    }
}

/* n peers, `rounds` all-reduces in a row; each checked. */
static void run(uint32_t n, uint64_t len, uint64_t chunk, bool in_place, bool tls, int rounds)
{
    tn_cluster *cl = calloc(1, sizeof *cl);
    start_cluster(cl, n, len, chunk, tls);
    float *in[TN_MAX], *out[TN_MAX];
    double *mean = malloc(8 * len), *amax = malloc(8 * len);
    for (uint32_t i = 0; i < n; i++) {
        in[i] = malloc(4 * len);
        out[i] = in_place ? in[i] : malloc(4 * len);
    }
    for (int r = 0; r < rounds; r++) {
        for (uint64_t k = 0; k < len; k++)
            mean[k] = amax[k] = 0;
        for (uint32_t i = 0; i < n; i++) {
            fill(in[i], len, i, r);
            for (uint64_t k = 0; k < len; k++) {
                mean[k] += in[i][k] / (double)n;
                amax[k] = fmax(amax[k], fabs(in[i][k]));
            }
        }
        /* start in a scrambled order: a peer's left neighbour may be
         * ahead of it (its chunks wait, lent) or behind */
        for (uint32_t s = 0; s < n; s++) {
            uint32_t i = (s * 5 + (uint32_t)r) % n;
            if (n % 5 == 0)
                i = s;
            assert_int_equal(mm_allreduce_start(nodes[i].ar, (uint64_t)r + 1, in[i], out[i]), 0);
            tn_run_for(cl, 1);
        }
        count_arg c = {n, r + 1};
        assert_true(tn_pump(cl, all_ended, &c, 20000));
        for (uint32_t i = 0; i < n; i++) {
            if (nodes[i].failed)
                fail_msg("peer %u: %s", i, nodes[i].err);
            assert_int_equal(nodes[i].done, r + 1);
            assert_int_equal(mm_allreduce_state(nodes[i].ar), MM_AR_DONE);
            assert_memory_equal(out[i], out[0], 4 * len); /* every peer the same floats */
        }
        double worst = 0;
        for (uint64_t k = 0; k < len; k++) {
            double e = fabs((double)out[0][k] - mean[k]) / (amax[k] > 0 ? amax[k] : 1);
            worst = fmax(worst, e);
        }
        if (worst > (n + 1) * (double)FLT_EPSILON)
            fail_msg("n %u: worst relative error %.3g > (n+1) eps", n, worst);
    }
    /* the all-gather's chunks went straight to their place, or none did */
    uint64_t direct = 0;
    for (uint32_t i = 0; i < n; i++)
        direct += nodes[i].direct;
    if (copying)
        assert_int_equal(direct, 0);
    else
        assert_true(direct > 0);
    for (uint32_t i = 0; i < n; i++) {
        free(in[i]);
        if (!in_place)
            free(out[i]);
    }
    free(mean);
    free(amax);
    stop_cluster(cl, n);
    free(cl);
}

/* Peers that start their next all-reduce the moment their own ended (in
 * the pump's predicate), peer 0 a few loop turns late for the first: for a
 * while neighbours are a round apart, and a partner's chunks of the next
 * round arrive while this peer still waits for another partner's. */
#define EAGER_ROUNDS 12
typedef struct {
    uint32_t n;
    int started[TN_MAX];
    int turns;
    float *in[TN_MAX][EAGER_ROUNDS], *out[TN_MAX][EAGER_ROUNDS];
} eager_arg;

static bool eager_step(tn_cluster *cl, void *arg)
{
    eager_arg *e = arg;
    bool all = true;
    e->turns++;
    for (uint32_t i = 0; i < e->n; i++) {
        if (nodes[i].failed)
            return true;
        int r = e->started[i];
        if (r < EAGER_ROUNDS && nodes[i].done == r && (i != 0 || r > 0 || e->turns > 20)) {
            e->started[i]++;
            assert_int_equal(mm_allreduce_start(nodes[i].ar, (uint64_t)r + 1, e->in[i][r],
                                                e->out[i][r]), 0);
        }
        if (nodes[i].done < EAGER_ROUNDS)
            all = false;
    }
    return all;
}

static void run_eager(uint32_t n, uint64_t len, uint64_t chunk)
{
    tn_cluster *cl = calloc(1, sizeof *cl);
    start_cluster(cl, n, len, chunk, false);
    eager_arg *e = calloc(1, sizeof *e);
    e->n = n;
    for (uint32_t i = 0; i < n; i++)
        for (int r = 0; r < EAGER_ROUNDS; r++) {
            e->in[i][r] = malloc(4 * len);
            e->out[i][r] = malloc(4 * len);
            fill(e->in[i][r], len, i, r);
        }
    assert_true(tn_pump(cl, eager_step, e, 30000));
    for (uint32_t i = 0; i < n; i++) {
        if (nodes[i].failed)
            fail_msg("peer %u: %s", i, nodes[i].err);
        assert_int_equal(nodes[i].done, EAGER_ROUNDS);
    }
    for (int r = 0; r < EAGER_ROUNDS; r++) {
        for (uint32_t i = 1; i < n; i++) /* every peer the same floats, every round */
            assert_memory_equal(e->out[i][r], e->out[0][r], 4 * len);
        double worst = 0;
        for (uint64_t k = 0; k < len; k++) {
            double mean = 0, amax = 0;
            for (uint32_t i = 0; i < n; i++) {
                mean += e->in[i][r][k] / (double)n;
                amax = fmax(amax, fabs(e->in[i][r][k]));
            }
            worst = fmax(worst, fabs((double)e->out[0][r][k] - mean) / (amax > 0 ? amax : 1));
        }
        if (worst > (n + 1) * (double)FLT_EPSILON)
            fail_msg("n %u round %d: worst relative error %.3g > (n+1) eps", n, r, worst);
    }
    for (uint32_t i = 0; i < n; i++)
        for (int r = 0; r < EAGER_ROUNDS; r++) {
            free(e->in[i][r]);
            free(e->out[i][r]);
        }
    free(e);
    stop_cluster(cl, n);
    free(cl);
}

static void n2(void **s) { (void)s; run(2, 1001, 37, false, false, 3); }
static void n3(void **s) { (void)s; run(3, 1000, 17, false, false, 3); }
static void n4(void **s) { (void)s; run(4, 4099, 64, false, false, 3); }
static void n7(void **s) { (void)s; run(7, 3001, 29, false, false, 3); }
static void n8(void **s) { (void)s; run(8, 100003, 1024, false, false, 2); }
static void n4_in_place(void **s) { (void)s; run(4, 4099, 13, true, false, 3); }
static void n7_in_place(void **s) { (void)s; run(7, 700, 3, true, false, 2); }
static void n3_tls(void **s) { (void)s; run(3, 20000, 512, false, true, 2); }
static void shorter_than_n(void **s) { (void)s; run(7, 4, 1, false, false, 2); }
static void one_chunk_per_segment(void **s) { (void)s; run(4, 4000, 1 << 20, true, false, 2); }
/* without vector_dst (the copy from the receive buffer) */
static void n4_copying(void **s)
{
    (void)s;
    copying = true;
    run(4, 4099, 64, false, false, 2);
    run(4, 4099, 13, true, false, 2);
    copying = false;
}

static void ring_eager(void **s) { (void)s; run_eager(4, 20011, 512); }

/* The same on the halving-doubling schedule (n a power of two). */
static void halving(void **s)
{
    (void)s;
    sched = MM_AR_HALVING;
    run(2, 1001, 37, false, false, 3);
    run(4, 4099, 64, false, false, 3);
    run(8, 100003, 1024, false, false, 2);
    run(4, 4099, 13, true, false, 3);
    run(8, 700, 3, true, false, 2);
    run(8, 4, 1, false, false, 2); /* shorter than n: empty segments */
    run(4, 4000, 1 << 20, true, false, 2);
    run(4, 20000, 512, false, true, 2); /* TLS */
    copying = true;
    run(8, 4099, 64, false, false, 2);
    run(8, 4099, 13, true, false, 2);
    copying = false;
    sched = MM_AR_RING;
}
static void halving_eager(void **s)
{
    (void)s;
    sched = MM_AR_HALVING;
    run_eager(4, 20011, 512);
    run_eager(8, 100003, 1024);
    sched = MM_AR_RING;
}

/* Two peers that must fail. */
typedef struct { uint32_t a, b; } fail_pair;
static bool both_failed(tn_cluster *cl, void *arg)
{
    fail_pair *f = arg;
    return nodes[f->a].failed && nodes[f->b].failed;
}

/* Peer 2 of 4 connects to its partners (nb2) but never starts, then stops
 * (its transport says goodbye) while the others' all-reduces run on
 * `sched`: pumps until peers f.a and f.b have failed; the caller checks
 * their errors, then leave_end frees it all. */
static tn_cluster *peer_2_leaves(mm_ar_schedule s, const uint32_t nb2[2], fail_pair f,
                                 float **v, int *closed)
{
    uint32_t n = 4;
    uint64_t len = 1 << 20;
    sched = s;
    tn_cluster *cl = calloc(1, sizeof *cl);
    start_cluster(cl, n, len, 4096, false);
    for (uint32_t i = 0; i < n; i++) {
        v[i] = malloc(4 * len);
        fill(v[i], len, i, 0);
    }
    for (uint32_t i = 0; i < n; i++)
        if (i != 2)
            assert_int_equal(mm_allreduce_start(nodes[i].ar, 1, v[i], v[i]), 0);
    mm_transport_want(cl->node[2].t, nb2, 2);
    tn_run_for(cl, 300); /* everyone connected; 0, 1 and 3 send what they can */
    mm_transport_shutdown(cl->node[2].t, tn_closed, closed);
    assert_true(tn_pump(cl, both_failed, &f, 5000));
    return cl;
}

static void leave_end(tn_cluster *cl, float **v, int *closed)
{
    for (int i = 0; i < 100 && !*closed; i++)
        tn_run_for(cl, 10);
    mm_transport_free(cl->node[2].t);
    cl->node[2].t = NULL;
    for (uint32_t i = 0; i < 4; i++)
        free(v[i]);
    stop_cluster(cl, 4);
    free(cl);
    sched = MM_AR_RING;
}

/* Peer 2 of 4 stops mid-way on the ring: its neighbours' all-reduces fail
 * with errors naming it and the step; nothing hangs. */
static void neighbour_leaves(void **s)
{
    (void)s;
    float *v[TN_MAX];
    int closed = 0;
    uint32_t nb2[2] = {1, 3};
    tn_cluster *cl = peer_2_leaves(MM_AR_RING, nb2, (fail_pair){1, 3}, v, &closed);
    /* peer 1 sends to 2 and peer 3 receives from 2: both name it (peer 0
     * waits on 3; in murmur node, 3 leaving on its failure ends it too) */
    assert_int_equal(nodes[1].failed, 1);
    assert_non_null(strstr(nodes[1].err, "peer 2 left"));
    assert_non_null(strstr(nodes[1].err, "step 3 of 6")); /* 0 passed on 3's chunks */
    assert_int_equal(nodes[3].failed, 1);
    assert_non_null(strstr(nodes[3].err, "peer 2 left"));
    assert_non_null(strstr(nodes[3].err, "step 1 of 6 (reduce-scatter 1 of 3): waiting for peer 2's chunk 1 of 64"));
    leave_end(cl, v, &closed);
}

/* The same on halving-doubling: peer 2 is peer 0's partner at the first
 * step and peer 3's at the second; both fail naming it. */
static void halving_partner_leaves(void **s)
{
    (void)s;
    float *v[TN_MAX];
    int closed = 0;
    uint32_t nb2[2] = {0, 3};
    tn_cluster *cl = peer_2_leaves(MM_AR_HALVING, nb2, (fail_pair){0, 3}, v, &closed);
    assert_non_null(strstr(nodes[0].err, "peer 2 left"));
    assert_non_null(strstr(nodes[0].err, "step 1 of 4 (reduce-scatter 1 of 2): waiting for peer 2's chunk 1 of 128"));
    assert_non_null(strstr(nodes[3].err, "peer 2 left"));
    assert_non_null(strstr(nodes[3].err, "step 2 of 4 (reduce-scatter 2 of 2): waiting for peer 2's chunk 1 of 64"));
    assert_int_equal(nodes[1].failed + nodes[1].done, 0); /* 1 waits on 3, which stops in murmur node */
    leave_end(cl, v, &closed);
}

/* A chunk whose step (aux) is not the one due fails the all-reduce with a
 * message that names it as a number of at most 17 digits: an attacker's
 * aux of 1e300 was printed as a 300-digit integer ("%.0f"). And a partner
 * refused for a configuration fails it at once, naming the refusal. */
static void foreign_chunk_named(void **s)
{
    (void)s;
    tn_cluster *cl = calloc(1, sizeof *cl);
    sched = MM_AR_RING;
    start_cluster(cl, 2, 64, 16, false);
    float in[64] = {0}, out[64], body[16] = {0};
    assert_int_equal(mm_allreduce_start(nodes[0].ar, 0, in, out), 0);
    mm_wire_vec m = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .aux = 1e300, .count = 16};
    mm_allreduce_on_vector(nodes[0].ar, 1, 0, &m, body, sizeof body);
    assert_int_equal(nodes[0].failed, 1);
    assert_non_null(strstr(nodes[0].err, "of step 1e+300 where"));
    assert_true(strlen(nodes[0].err) < 300);
    /* the next all-reduce: its partner was refused meanwhile (another
     * --allreduce-chunk), so it fails at its start, naming why */
    mm_allreduce_on_refused(nodes[0].ar, 1, "setting differs: peer 1 runs --allreduce-chunk 8, "
                                            "peer 0 runs --allreduce-chunk 16");
    assert_int_equal(mm_allreduce_start(nodes[0].ar, 1, in, out), 0);
    assert_int_equal(nodes[0].failed, 2);
    assert_non_null(strstr(nodes[0].err, "all-reduce failed: peer 1 was refused: setting "
                                         "differs: peer 1 runs --allreduce-chunk 8"));
    stop_cluster(cl, 2);
    free(cl);
}

/* Creation refuses a schedule that does not fit, with a message. */
static void halving_needs_power_of_two(void **s)
{
    (void)s;
    char err[256] = "";
    mm_allreduce_config ac = {.n = 6, .self = 0, .len = 100, .schedule = MM_AR_HALVING};
    assert_null(mm_allreduce_new(&ac, err, sizeof err));
    assert_non_null(strstr(err, "power of two"));
    assert_true(mm_allreduce_schedule_fits(MM_AR_RING, 6));
    assert_false(mm_allreduce_schedule_fits(MM_AR_HALVING, 6));
    uint64_t most = MM_AR_HALVING_MAX_BYTES / 4; /* floats */
    assert_int_equal(mm_allreduce_schedule_pick(MM_AR_AUTO, 6, true, 100), MM_AR_RING);
    assert_int_equal(mm_allreduce_schedule_pick(MM_AR_AUTO, 8, true, 100), MM_AR_HALVING);
    assert_int_equal(mm_allreduce_schedule_pick(MM_AR_AUTO, 8, true, most), MM_AR_HALVING);
    assert_int_equal(mm_allreduce_schedule_pick(MM_AR_AUTO, 8, true, most + 1), MM_AR_RING);
    assert_int_equal(mm_allreduce_schedule_pick(MM_AR_AUTO, 2, true, 100), MM_AR_RING);
    assert_int_equal(mm_allreduce_schedule_pick(MM_AR_AUTO, 8, false, 100), MM_AR_RING);
    assert_int_equal(mm_allreduce_schedule_pick(MM_AR_HALVING, 8, false, most + 1), MM_AR_HALVING);
    /* who sends to peer 5 of 8: its three partners */
    bool snd[8];
    mm_allreduce_senders(MM_AR_HALVING, 5, 8, snd);
    for (uint32_t p = 0; p < 8; p++)
        assert_int_equal(snd[p], p == 1 || p == 7 || p == 4);
    mm_allreduce_senders(MM_AR_RING, 5, 8, snd);
    for (uint32_t p = 0; p < 8; p++)
        assert_int_equal(snd[p], p == 4);
    uint32_t peers[MM_AR_MAX_PARTNERS];
    assert_int_equal(mm_allreduce_peers(MM_AR_HALVING, 5, 8, peers), 3);
    assert_true(peers[0] == 1 && peers[1] == 7 && peers[2] == 4);
    assert_int_equal(mm_allreduce_peers(MM_AR_RING, 5, 8, peers), 2);
    assert_true(peers[0] == 4 && peers[1] == 6);
    assert_int_equal(mm_allreduce_peers(MM_AR_RING, 1, 2, peers), 1);
    assert_int_equal(mm_allreduce_schedule_parse("halving"), MM_AR_HALVING);
    assert_int_equal(mm_allreduce_schedule_parse("auto"), MM_AR_AUTO);
    assert_int_equal(mm_allreduce_schedule_parse("tree"), -2);
}

int main(void)
{
    mm_log_set_level(getenv("AR_DEBUG") ? MM_LOG_DEBUG : MM_LOG_WARN);
    char dir[] = "/tmp/murmur-test-ar-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    certdir = tn_certs(dir, TN_MAX);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(n2), cmocka_unit_test(n3), cmocka_unit_test(n4),
        cmocka_unit_test(n7), cmocka_unit_test(n8), cmocka_unit_test(n4_in_place),
        cmocka_unit_test(n7_in_place), cmocka_unit_test(n3_tls),
        cmocka_unit_test(shorter_than_n), cmocka_unit_test(one_chunk_per_segment),
        cmocka_unit_test(n4_copying), cmocka_unit_test(ring_eager), cmocka_unit_test(halving),
        cmocka_unit_test(halving_eager), cmocka_unit_test(neighbour_leaves),
        cmocka_unit_test(halving_partner_leaves), cmocka_unit_test(halving_needs_power_of_two),
        cmocka_unit_test(foreign_chunk_named),
    };
    return tn_done(cmocka_run_group_tests(tests, NULL, NULL), dir);
}
