/* Consensus control's arithmetic (gossip/consensus.h) against independent
 * computations: the schedule's parser and lookup; the topology spectrum
 * against the ring's closed form; the correction R(G) against a direct
 * simulation of the model it assumes (persistent pulls, G mixes a round)
 * and against the exact identity on the complete graph; the controller's
 * direction, bounds and dither; the gossiped estimate's tracking; below
 * one exchange a round, the levels, the edges' skips and the whole loop on
 * a simulated ring holding targets up to 13 times its own distance. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/rng.h"
#include "gossip/consensus.h"
#include "gossip/mix.h"
#include "gossip/topology.h"

static mm_topology *gen(const char *kind, int n)
{
    mm_topo_spec s;
    char err[512];
    mm_gen_opts o = {.n = n};
    if (mm_topo_generate(kind, &o, &s, err, sizeof err) < 0)
        fail_msg("gen %s -n %d: %s", kind, n, err);
    mm_topology *t = mm_topo_build(&s, kind, err, sizeof err);
    mm_topo_spec_free(&s);
    if (!t)
        fail_msg("build %s -n %d: %s", kind, n, err);
    return t;
}

static void schedule_parses_and_looks_up(void **state)
{
    (void)state;
    mm_steps_schedule s;
    char err[256];
    assert_int_equal(mm_steps_schedule_parse("0:4,300:1", 1000, &s, err, sizeof err), 0);
    assert_int_equal(s.n, 2);
    assert_int_equal(mm_steps_schedule_steps(&s, 0), 4);
    assert_int_equal(mm_steps_schedule_steps(&s, 299), 4);
    assert_int_equal(mm_steps_schedule_steps(&s, 300), 1);
    assert_int_equal(mm_steps_schedule_steps(&s, 100000), 1);
    assert_int_equal(mm_steps_schedule_max(&s), 4);
    assert_int_equal(mm_steps_schedule_parse("0:2,10:7,20:3", 1000, &s, err, sizeof err), 0);
    assert_int_equal(mm_steps_schedule_steps(&s, 9), 2);
    assert_int_equal(mm_steps_schedule_steps(&s, 10), 7);
    assert_int_equal(mm_steps_schedule_steps(&s, 25), 3);
    assert_int_equal(mm_steps_schedule_max(&s), 7);

    const char *bad[] = {"", "0", "0:", ":4", "1:4", "0:4,0:2", "0:4,300:1,200:2", "0:0",
                         "0:1001", "0:4,", "0:4;1:2", "0:4 ", "-1:4", "0:-4", "0:4,x:2",
                         "0:99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        if (mm_steps_schedule_parse(bad[i], 1000, &s, err, sizeof err) == 0)
            fail_msg("'%s' was accepted", bad[i]);
        assert_true(strlen(err) > 0);
    }
}

static void ring_spectrum_matches_closed_form(void **state)
{
    (void)state;
    int n = 16;
    mm_topology *t = gen("ring", n);
    double lam[16], want[16];
    assert_int_equal(mm_topo_spectrum(t, lam), 0);
    /* Metropolis on a ring: W = 1/3 (I + shift + shift^-1) */
    for (int k = 0; k < n; k++)
        want[k] = 1.0 / 3 + 2.0 / 3 * cos(2 * M_PI * k / n);
    for (int i = 0; i < n; i++) /* sort descending */
        for (int j = i + 1; j < n; j++)
            if (want[j] > want[i]) {
                double x = want[i];
                want[i] = want[j];
                want[j] = x;
            }
    for (int k = 0; k < n; k++)
        assert_true(fabs(lam[k] - want[k]) < 1e-12);
    mm_topo_free(t);
}

/* On the complete graph with W = J every deviation is in one eigenvalue,
 * 0, and q_i = ||x_i - xbar||^2 + Xi^2 exactly: R = 1 for every G. */
static void complete_graph_ratio_is_one(void **state)
{
    (void)state;
    mm_topology *t = gen("complete", 8);
    double lam[8], ratio[4];
    assert_int_equal(mm_topo_spectrum(t, lam), 0);
    assert_int_equal(mm_consensus_ratios(lam, 8, 4, ratio), 0);
    for (int g = 0; g < 4; g++)
        assert_true(fabs(ratio[g] - 1) < 1e-9);
    double one = 1;
    assert_int_equal(mm_consensus_ratios(&one, 1, 4, ratio), -1); /* nothing to disagree on */
    mm_topo_free(t);
}

/* dst = W src for n rows of dim values */
static void apply(const double *W, const double *src, double *dst, int n, int dim)
{
    for (int i = 0; i < n; i++)
        for (int d = 0; d < dim; d++) {
            double s = 0;
            for (int j = 0; j < n; j++)
                s += W[i * n + j] * src[j * dim + d];
            dst[i * dim + d] = s;
        }
}

/* The model R(G) assumes, simulated: every peer pulls in its own fixed
 * direction b_i each round (x += b after the round's first mix) and W is
 * applied G times a round. At the steady state mean_i q_i / (2 Xi^2) must
 * be R(G), with q_i = sum_j W_ij ||x_i - x_j||^2 computed directly. */
static void ratio_matches_its_model(void **state)
{
    (void)state;
    const int n = 12, dim = 300;
    mm_topology *t = gen("ring", n);
    double *W = mm_topo_matrix(t, 0), lam[12], ratio[4];
    assert_int_equal(mm_topo_spectrum(t, lam), 0);
    assert_int_equal(mm_consensus_ratios(lam, n, 4, ratio), 0);
    double *x = calloc((size_t)n * dim, sizeof *x), *y = calloc((size_t)n * dim, sizeof *y);
    double *b = malloc((size_t)n * dim * sizeof *b);
    mm_rng r;
    mm_rng_seed(&r, 7);
    for (int i = 0; i < n * dim; i++)
        b[i] = mm_rng_normal(&r);
    for (int G = 1; G <= 4; G++) {
        memset(x, 0, (size_t)n * dim * sizeof *x);
        for (int round = 0; round < 600; round++) { /* lambda_2^600 < 1e-24 */
            for (int g = 0; g < G; g++) {
                apply(W, x, y, n, dim);
                memcpy(x, y, (size_t)n * dim * sizeof *x);
                if (g == 0)
                    for (int i = 0; i < n * dim; i++)
                        x[i] += b[i];
            }
        }
        double q = 0, xi2 = 0;
        for (int d = 0; d < dim; d++) {
            double mean = 0;
            for (int i = 0; i < n; i++)
                mean += x[i * dim + d] / n;
            for (int i = 0; i < n; i++) {
                xi2 += (x[i * dim + d] - mean) * (x[i * dim + d] - mean) / n;
                for (int j = 0; j < n; j++) {
                    double e = x[i * dim + d] - x[j * dim + d];
                    if (j != i)
                        q += W[i * n + j] * e * e / n;
                }
            }
        }
        double measured = q / (2 * xi2);
        /* b is one draw of a white pull: its modes are equal only on
         * average over the dim directions (sampling error ~ 1/sqrt(dim)) */
        if (fabs(measured / ratio[G - 1] - 1) > 0.1)
            fail_msg("G = %d: simulated R %.4f, formula %.4f", G, measured, ratio[G - 1]);
    }
    free(x);
    free(y);
    free(b);
    free(W);
    mm_topo_free(t);
}

static void controller_moves_the_right_way(void **state)
{
    (void)state;
    double ratio[8];
    for (int g = 0; g < 8; g++)
        ratio[g] = 0.5;
    mm_consensus_ctl c;
    mm_consensus_init(&c, 0.1, 1, 8, ratio);
    /* a holds mean q = 2 R Xi^2: Xi = 0.2, twice the target */
    c.a = 2 * 0.5 * 0.04;
    assert_true(fabs(mm_consensus_estimate(&c) - 0.2) < 1e-12);
    int last = 0;
    for (int r = 0; r < 100; r++)
        last = mm_consensus_round(&c, (uint64_t)r, 1);
    assert_int_equal(last, 8); /* too far apart: the most exchanges */
    assert_true(c.gamma <= 8 && c.gi <= 8);
    c.a = 2 * 0.5 * 0.0025; /* Xi = 0.05, half the target */
    for (int r = 0; r < 100; r++)
        last = mm_consensus_round(&c, (uint64_t)r, 1);
    assert_int_equal(last, 1);
    assert_true(c.gamma >= 1 && c.gi >= 1);
    c.a = 0; /* no estimate yet (identical replicas): fewer */
    assert_int_equal(mm_consensus_round(&c, 0, 1), 1);
}

/* gamma fractional: the dither meets it on average, and two peers with the
 * same gamma want the same number every round. */
static void dither_is_shared_and_unbiased(void **state)
{
    (void)state;
    double ratio[4] = {0.5, 0.5, 0.5, 0.5};
    mm_consensus_ctl a, b;
    mm_consensus_init(&a, 0.1, 1, 4, ratio);
    long sum = 0;
    for (uint64_t r = 0; r < 1000; r++) {
        /* hold gamma at 2.3 exactly: an estimate at the target moves nothing */
        a.gi = b.gi = 2.3;
        a.a = b.a = 2 * 0.5 * 0.01;
        b = a;
        int ga = mm_consensus_round(&a, r, 1), gb = mm_consensus_round(&b, r, 1);
        assert_int_equal(ga, gb);
        assert_true(ga == 2 || ga == 3);
        sum += ga;
    }
    assert_true(fabs(sum / 1000.0 - 2.3) < 0.01);
}

/* Three peers on a triangle (W = J, one exchange a round) tracking
 * changing q: the mean of a follows the mean of q with no lag; once q stops
 * changing, each peer's a is the mean plus beta times its own deviation. */
static void gossiped_estimate_tracks_the_mean(void **state)
{
    (void)state;
    double ratio[1] = {1};
    mm_consensus_ctl c[3];
    for (int i = 0; i < 3; i++)
        mm_consensus_init(&c[i], 1, 1, 1, ratio);
    double q[3];
    for (int r = 0; r < 60; r++) {
        int s = r < 30 ? r : 30;
        q[0] = 1.0 + s;
        q[1] = 2.0 + 0.5 * s;
        q[2] = 6.0;
        double mean_a = (c[0].a + c[1].a + c[2].a) / 3;
        for (int i = 0; i < 3; i++)
            mm_consensus_fold(&c[i], mean_a, q[i], 1);
        double mq = (q[0] + q[1] + q[2]) / 3;
        double m = (c[0].a + c[1].a + c[2].a) / 3;
        if (fabs(m - mq) > 1e-9 * mq)
            fail_msg("round %d: mean of a %.12g, mean of q %.12g", r, m, mq);
    }
    double mq = (q[0] + q[1] + q[2]) / 3;
    for (int i = 0; i < 3; i++)
        assert_true(fabs(c[i].a - mq - MM_CC_BETA * (q[i] - mq)) < 1e-9);
    /* a later exchange only averages; no q (NaN) leaves q_prev alone */
    double before = c[0].q_prev;
    mm_consensus_fold(&c[0], 5.0, NAN, 1);
    assert_true(c[0].a == 5.0 && c[0].q_prev == before);
    mm_consensus_fold(&c[0], -3.0, NAN, 0);
    assert_true(c[0].a == 0); /* kept in [0, MM_CC_AUX_MAX] */
    mm_consensus_fold(&c[0], INFINITY, NAN, 0);
    assert_true(c[0].a == 0); /* not finite: ignored */
}

/* Below one exchange a round (gmin < 1): gamma falls under 1 by factors
 * when the estimate is under the target, down to gmin, and back; the
 * peer's own want stays 1 (the edges decide the skips); with gmin = 1 it
 * never goes under 1; without fresh input gamma stays. */
static void controller_goes_below_one(void **state)
{
    (void)state;
    double ratio[4] = {0.5, 0.5, 0.5, 0.5};
    mm_consensus_ctl c;
    mm_consensus_init(&c, 1.0, 1.0 / 64, 4, ratio);
    c.a = 2 * 0.5 * 0.01; /* Xi = 0.1, a tenth of the target */
    for (int r = 0; r < 200; r++)
        assert_int_equal(mm_consensus_round(&c, (uint64_t)r, 1), 1);
    assert_true(fabs(c.gamma - 1.0 / 64) < 1e-12); /* at the floor */
    assert_true(fabs(c.gi - (1 + log(1.0 / 64))) < 1e-12);
    c.a = 2 * 0.5 * 100.0; /* Xi = 10: too far apart; no fresh input: kept */
    mm_consensus_round(&c, 200, 0);
    assert_true(fabs(c.gamma - 1.0 / 64) < 1e-12);
    /* one step of the law from h = 1 at the clipped error -1: h = 0.8,
     * gamma = exp(0.8 - 1 - 1.0) = e^-1.2 (proportional part included) */
    mm_consensus_init(&c, 1.0, 1.0 / 64, 4, ratio);
    c.a = 2 * 0.5 * 0.01;
    mm_consensus_round(&c, 0, 1);
    assert_true(fabs(c.gi - 0.8) < 1e-12);
    assert_true(fabs(c.gamma - exp(-1.2)) < 1e-12);
    /* too far apart: back above 1, up to gmax */
    c.a = 2 * 0.5 * 100.0;
    int last = 0;
    for (int r = 0; r < 200; r++)
        last = mm_consensus_round(&c, (uint64_t)r, 1);
    assert_int_equal(last, 4);
    /* gmin = 1 (the default): never under 1, however far under the target */
    mm_consensus_init(&c, 1.0, 1, 4, ratio);
    c.a = 2 * 0.5 * 0.01;
    for (int r = 0; r < 300; r++)
        assert_int_equal(mm_consensus_round(&c, (uint64_t)r, 1), 1);
    assert_true(c.gamma == 1 && c.gi == 1);
}

/* Levels round-trip to 1/512; the skip count is what the dither says,
 * round by round, and a fraction gamma of the rounds is left; an edge's
 * next round is the same from both ends. */
static void edges_skip_as_the_dither_says(void **state)
{
    (void)state;
    double ratio[1] = {0.5};
    mm_consensus_ctl c;
    mm_consensus_init(&c, 1.0, 1.0 / 64, 1, ratio);
    for (double h = 1 + log(1.0 / 64); h <= 1; h += 0.01) {
        c.gi = c.out = h;
        assert_true(fabs(mm_consensus_level_value(mm_consensus_level(&c)) - h) <=
                    0.5 / 512 + 1e-12);
    }
    for (double g = 0.05; g < 1; g += 0.15) {
        long exchanges = 0;
        for (uint64_t r = 0; r < 4000;) {
            int k = mm_consensus_skip_rounds(g, r, MM_CC_SKIP_MAX);
            for (int m = 1; m <= k; m++) /* rounds r+1..r+k: under 1 ... */
                assert_true(g + fmod((double)(r + (uint64_t)m) * 0.6180339887498949, 1) < 1);
            r += (uint64_t)k + 1; /* ... round r+k+1 not */
            if (r < 4000)
                assert_true(g + fmod((double)r * 0.6180339887498949, 1) >= 1);
            exchanges++;
        }
        assert_true(fabs(exchanges / 4000.0 - g) < 0.01);
    }
    assert_int_equal(mm_consensus_skip_rounds(1.0, 5, MM_CC_SKIP_MAX), 0);
    int most = 0;
    for (uint64_t r = 0; r < 2000; r++) {
        int k = mm_consensus_skip_rounds(1.0 / 64, r, 10);
        most = k > most ? k : most;
    }
    assert_int_equal(most, 10);
    for (unsigned a = 100; a < 2100; a += 77)
        for (unsigned b = 100; b < 2100; b += 91)
            assert_true(mm_consensus_edge_next(1000, (uint16_t)a, (uint16_t)b) ==
                        mm_consensus_edge_next(1000, (uint16_t)b, (uint16_t)a));
    c.gi = c.out = 1.5; /* gamma >= 1: every round */
    assert_true(mm_consensus_edge_next(7, mm_consensus_level(&c), mm_consensus_level(&c)) == 8);
}

/* How the simulated peers' local steps pull: in a fixed direction of
 * their own every round (the model R(G) assumes), or towards an optimum of
 * their own (a peer left alone converges to it: between rare exchanges
 * the disagreement grows whiter than R(1) assumes, as in real runs). */
typedef enum { PULL_PERSISTENT, PULL_RELAXING } pull_kind;
#define RELAX_RATE 0.004 /* of the distance to the own optimum, a round */

/* A simulated run: n peers on a ring, rounds, and the local steps' size
 * over the rounds: constant; or a cosine learning rate from 1 down to a
 * tenth (decay), after a linear warm-up from 1/warmup to 1 over warmup
 * rounds (warmup 0: none), as the node's --warmup and cosine schedule. */
typedef struct {
    int n, rounds, warmup;
    bool decay;
    pull_kind pull;
} sim_run;

static double sim_step_size(const sim_run *s, int round)
{
    if (round < s->warmup)
        return (round + 1.0) / s->warmup;
    if (!s->decay)
        return 1;
    return 0.1 + 0.45 * (1 + cos(M_PI * (round - s->warmup) / (s->rounds - s->warmup)));
}

/* The whole arithmetic in closed loop on a simulated ring, every peer with
 * its own controller, shape estimate (q and its mix's pull b,
 * gossip/consensus.h mm_consensus_shape_xi2), gossiped scalar and level,
 * and every edge agreeing on its next round from both ends' levels as the
 * node does (docs/node.md); the controller told the step size of each
 * round, as the node tells it the learning rate. Returns the mean exact Xi
 * over the second half; fails unless every round of the second half is
 * within +-25 % of the target, the edges always agreed and the mean moved
 * only as the local steps move it (W symmetric every round).
 * *gossip_rate: the fraction of peer rounds with an exchange. */
static double ring_sim(const sim_run *s, double target, double *gossip_rate)
{
    enum { NMAX = 16, DIM = 40 };
    const int N = s->n, ROUNDS = s->rounds;
    const pull_kind pull = s->pull;
    assert_true(N <= NMAX);
    mm_topology *t = gen("ring", N);
    double *W = mm_topo_matrix(t, 0), lam[NMAX];
    assert_int_equal(mm_topo_spectrum(t, lam), 0);
    static mm_consensus_shape shape;
    assert_int_equal(mm_consensus_shape_init(&shape, lam, N, 1), 0);
    static double x[NMAX][DIM], b[NMAX][DIM], y[NMAX][DIM], mean[DIM];
    mm_rng r;
    mm_rng_seed(&r, 11);
    for (int i = 0; i < N; i++)
        for (int d = 0; d < DIM; d++) {
            /* a pull, or an optimum as far from the others as 250 pulls */
            b[i][d] = (pull == PULL_PERSISTENT ? 0.01 : 2.5) * mm_rng_normal(&r);
            x[i][d] = 0;
        }
    memset(mean, 0, sizeof mean);
    mm_consensus_ctl cc[NMAX];
    static uint64_t next[NMAX][NMAX];
    memset(next, 0, sizeof next);
    int fresh[NMAX];
    uint16_t level[NMAX];
    for (int i = 0; i < N; i++) {
        mm_consensus_init(&cc[i], target > 0 ? target : 1, 1.0 / 64, 1, NULL);
        fresh[i] = 1;
    }
    double lo = INFINITY, hi = 0, sum = 0, est_ratio = 0;
    long live_rounds = 0, n_ratio = 0;
    for (int round = 0; round < ROUNDS; round++) {
        double scale = sim_step_size(s, round);
        double k = scale * RELAX_RATE;
        for (int d = 0; d < DIM; d++) { /* the local steps are linear in x: so is the mean */
            double bm = 0;
            for (int i = 0; i < N; i++)
                bm += b[i][d] / N;
            mean[d] += pull == PULL_PERSISTENT ? scale * bm : k * (bm - mean[d]);
        }
        for (int i = 0; i < N; i++) {
            if (target > 0) {
                mm_consensus_set_step_scale(&cc[i], round < s->warmup ? 1 : scale);
                mm_consensus_round(&cc[i], (uint64_t)round, fresh[i]);
            }
            level[i] = mm_consensus_level(&cc[i]); /* what its vectors of this round carry */
            for (int d = 0; d < DIM; d++)
                x[i][d] += pull == PULL_PERSISTENT ? scale * b[i][d] : k * (b[i][d] - x[i][d]);
        }
        double pre2 = 0;
        for (int d = 0; d < DIM; d++) {
            double m = 0;
            for (int i = 0; i < N; i++)
                m += x[i][d] / N;
            for (int i = 0; i < N; i++)
                pre2 += (x[i][d] - m) * (x[i][d] - m) / N;
        }
        double a_mixed[NMAX], h_mixed[NMAX], xi2_in[NMAX];
        for (int i = 0; i < N; i++) {
            double wq = 0, w_in = 0, w_all = 0, pull2 = 0;
            a_mixed[i] = cc[i].a;
            h_mixed[i] = mm_consensus_level_own(&cc[i]);
            for (int d = 0; d < DIM; d++)
                y[i][d] = x[i][d];
            for (int j = 0; j < N; j++) {
                double w = W[i * N + j];
                if (j == i || w == 0)
                    continue;
                w_all += w;
                if (target > 0 && next[i][j] > (uint64_t)round)
                    continue; /* skipped: its weight stays with self */
                assert_true(next[i][j] == next[j][i]); /* both ends agree */
                double d2 = 0;
                for (int d = 0; d < DIM; d++) {
                    d2 += (x[i][d] - x[j][d]) * (x[i][d] - x[j][d]);
                    y[i][d] += w * (x[j][d] - x[i][d]);
                }
                wq += w * d2;
                w_in += w;
                a_mixed[i] += w * (cc[j].a - cc[i].a);
                h_mixed[i] += w * (mm_consensus_level_value(level[j]) - mm_consensus_level_own(&cc[i]));
            }
            for (int d = 0; d < DIM; d++)
                pull2 += (y[i][d] - x[i][d]) * (y[i][d] - x[i][d]);
            xi2_in[i] = w_in > 0 ? mm_consensus_shape_xi2(&shape, wq * w_all / w_in, pull2 * w_all / w_in)
                                 : NAN;
            fresh[i] = w_in > 0;
            live_rounds += w_in > 0;
        }
        for (int i = 0; i < N; i++)
            if (fresh[i]) {
                mm_consensus_fold(&cc[i], a_mixed[i], xi2_in[i], 1);
                mm_consensus_fold_level(&cc[i], h_mixed[i]);
                if (round >= ROUNDS / 2 && target > 0) {
                    est_ratio += sqrt(cc[i].a / pre2);
                    n_ratio++;
                }
            }
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                if (j != i && W[i * N + j] > 0 && next[i][j] <= (uint64_t)round)
                    next[i][j] = mm_consensus_edge_next((uint64_t)round, level[i], level[j]);
        memcpy(x, y, sizeof x);
        double xi2 = 0, mean_drift = 0;
        for (int d = 0; d < DIM; d++) {
            double m = 0;
            for (int i = 0; i < N; i++)
                m += x[i][d] / N;
            mean_drift += fabs(m - mean[d]);
            for (int i = 0; i < N; i++)
                xi2 += (x[i][d] - m) * (x[i][d] - m) / N;
        }
        assert_true(mean_drift < 1e-9 * (round + 1)); /* W symmetric every round */
        if (round >= ROUNDS / 2) {
            double xi = sqrt(xi2);
            lo = xi < lo ? xi : lo;
            hi = xi > hi ? xi : hi;
            sum += xi;
        }
    }
    *gossip_rate = (double)live_rounds / ((double)N * ROUNDS);
    free(W);
    mm_topo_free(t);
    const char *kind = pull == PULL_PERSISTENT ? "persistent" : "relaxing";
    /* The loop holds its estimate at X; the estimate itself reads this
     * simulation's disagreement at est_ratio of the exact Xi (its 40
     * coordinates and irregular skips are not exactly one of the shape
     * family's: 0.85-0.98 here, where ring-16 runs read 1.00-1.11,
     * docs/node.md), which shape_estimate_reads_the_shape bounds on shapes
     * of its own. So the band is around X / est_ratio, the distance the
     * loop aims at, and the ratio must stay near 1. */
    double ratio = n_ratio ? est_ratio / n_ratio : 1, aim = target / ratio;
    if (getenv("CC_DEBUG"))
        fprintf(stderr, "%d peers, %d rounds, %s%s target %.4g: Xi %.4g .. %.4g, estimate / "
                "exact %.3f, gossip rate %.3f\n", N, ROUNDS, kind, s->decay ? ", decaying" : "",
                target, lo, hi, ratio, *gossip_rate);
    if (target > 0 && (ratio < 0.8 || ratio > 1.1))
        fail_msg("%d peers, %d rounds, %s pulls%s, target %.4g: the estimate reads %.3f of the "
                 "exact Xi", N, ROUNDS, kind, s->decay ? " decaying" : "", target, ratio);
    if (target > 0 && (lo < 0.75 * aim || hi > 1.25 * aim))
        fail_msg("%d peers, %d rounds, %s pulls%s, target %.4g (aim %.4g): exact Xi over the "
                 "second half %.4g .. %.4g", N, ROUNDS, kind, s->decay ? " decaying" : "",
                 target, aim, lo, hi);
    return sum / (ROUNDS / 2);
}

/* Targets from 1.3 to 13 times the plain ring's own distance (without
 * control every round mixes: rate 1): each held, with ever fewer rounds
 * that exchange; for both kinds of pull. */
static void controller_holds_looser_targets(void **state)
{
    (void)state;
    for (pull_kind pull = PULL_PERSISTENT; pull <= PULL_RELAXING; pull++) {
        sim_run s = {.n = 12, .rounds = 1600, .pull = pull};
        double rate, plain = ring_sim(&s, 0, &rate);
        assert_true(rate == 1);
        double prev = 1;
        for (double f = 1.3; f <= 14; f *= 1.8) {
            ring_sim(&s, f * plain, &rate);
            assert_true(rate < prev);
            prev = rate;
        }
        /* and while the pull decays like a cosine learning rate (the plain
         * ring's distance falls up to tenfold): still held */
        s.decay = true;
        ring_sim(&s, 2 * plain, &rate);
        ring_sim(&s, 3.5 * plain, &rate);
    }
}

/* The node's runs: ring-16, 400 rounds, 20 of warm-up, then the cosine
 * down to a tenth; targets from the plain ring's second-half distance to
 * 10x it, held at every round of the second half, for both kinds of pull. */
static void controller_follows_the_learning_rate(void **state)
{
    (void)state;
    for (pull_kind pull = PULL_PERSISTENT; pull <= PULL_RELAXING; pull++) {
        sim_run s = {.n = 16, .rounds = 400, .warmup = 20, .decay = true, .pull = pull};
        double rate, plain = ring_sim(&s, 0, &rate);
        const double fs[] = {2.5, 5, 10, 13};
        for (size_t i = 0; i < sizeof fs / sizeof *fs; i++)
            ring_sim(&s, fs[i] * plain, &rate);
    }
}

/* The shape's estimate against exact disagreements of known shape on
 * ring-16: relaxing pulls from rho = 1 (the persistent pulls of one mix a
 * round) to 0 (white), built mode by mode, the mean over the peers of
 * their own q_i f(b_i / q_i) against the exact Xi^2 (R(1) alone is off by
 * a factor 3 in Xi at the white end); and the mix's pull from
 * mm_mix_pull_norm2's definition by hand. */
static void shape_estimate_reads_the_shape(void **state)
{
    (void)state;
    enum { N = 16 };
    mm_topology *t = gen("ring", N);
    double *W = mm_topo_matrix(t, 0), lam[N];
    assert_int_equal(mm_topo_spectrum(t, lam), 0);
    mm_consensus_shape shape;
    assert_int_equal(mm_consensus_shape_init(&shape, lam, N, 8), 0);
    assert_int_equal(shape.n, 8 + 18);
    for (int i = 1; i < shape.n; i++)
        assert_true(shape.m[i] >= shape.m[i - 1] && shape.f[i] <= shape.f[i - 1] + 1e-12);
    /* the white end: R = sum (1 - lambda_k) / 15 over the modes below 1 =
     * (15 - (16/3 - 1)) / 15 = 32/45 on ring-16 with weights 1/3 */
    assert_true(fabs(shape.f[shape.n - 1] - 45.0 / 64) < 1e-9);
    assert_true(fabs(shape.m[shape.n - 1] - 0.5) < 1e-9);
    /* modes of the ring: cos and sin of 2 pi k i / N, eigenvalue
     * 1/3 + 2/3 cos(2 pi k / N); one coordinate per mode, amplitude sqrt(e_k) */
    const double rhos[] = {1, 0.9, 0.7, 0.4, 0};
    for (int c = 0; c < 5; c++) {
        double y[N][N];
        memset(y, 0, sizeof y);
        for (int k = 1; k < N; k++) {
            double l = 1.0 / 3 + 2.0 / 3 * cos(2 * M_PI * k / N);
            double e = 1 / ((1 - rhos[c] * l) * (1 - rhos[c] * l));
            for (int i = 0; i < N; i++) /* mode k in coordinate k */
                y[i][k] = sqrt(e) * (k <= N / 2 ? cos(2 * M_PI * k * i / N)
                                                : sin(2 * M_PI * k * i / N)) *
                          (k == N / 2 ? 1 : sqrt(2.0)); /* sum_i y_ik^2 = N e_k */
        }
        double xi2 = 0, mq = 0, est = 0;
        for (int i = 0; i < N; i++) {
            double q = 0, p[N] = {0}, b = 0;
            for (int d = 0; d < N; d++)
                xi2 += y[i][d] * y[i][d] / N;
            for (int j = 0; j < N; j++) {
                double w = W[i * N + j];
                if (j == i || w == 0)
                    continue;
                for (int d = 0; d < N; d++) {
                    q += w * (y[j][d] - y[i][d]) * (y[j][d] - y[i][d]);
                    p[d] += w * (y[j][d] - y[i][d]);
                }
            }
            for (int d = 0; d < N; d++)
                b += p[d] * p[d];
            mq += q / N;
            est += mm_consensus_shape_xi2(&shape, q, b) / N;
        }
        if (fabs(sqrt(est / xi2) - 1) > 0.03)
            fail_msg("relaxing shape rho %.1f: estimate of Xi^2 %.5g, exact %.5g (mean q %.5g)",
                     rhos[c], est, xi2, mq);
    }
    /* out of the family's range: clamped; no input */
    assert_true(mm_consensus_shape_xi2(&shape, 1, 0) == shape.f[0]);
    assert_true(mm_consensus_shape_xi2(&shape, 1, 5) == shape.f[shape.n - 1]);
    assert_true(mm_consensus_shape_xi2(&shape, 0, 0) == 0);
    assert_true(isnan(mm_consensus_shape_xi2(&shape, NAN, 1)));
    /* the pull: s = (1, 2), neighbours (3, 2) weight 0.25 and (1, 0) weight 0.5, one missing */
    float s[2] = {1, 2}, x1[2] = {3, 2}, x2[2] = {1, 0};
    mm_mix_input in[3] = {{.x = x1, .weight = 0.25}, {.x = NULL, .weight = 0.25},
                          {.x = x2, .weight = 0.5}};
    /* pull = 0.25 (2, 0) + 0.5 (0, -2) = (0.5, -1): 1.25 */
    assert_true(fabs(mm_mix_pull_norm2(s, in, 3, 2) - 1.25) < 1e-12);
    free(W);
    mm_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(schedule_parses_and_looks_up),
        cmocka_unit_test(ring_spectrum_matches_closed_form),
        cmocka_unit_test(complete_graph_ratio_is_one),
        cmocka_unit_test(ratio_matches_its_model),
        cmocka_unit_test(controller_moves_the_right_way),
        cmocka_unit_test(dither_is_shared_and_unbiased),
        cmocka_unit_test(gossiped_estimate_tracks_the_mean),
        cmocka_unit_test(controller_goes_below_one),
        cmocka_unit_test(edges_skip_as_the_dither_says),
        cmocka_unit_test(controller_holds_looser_targets),
        cmocka_unit_test(controller_follows_the_learning_rate),
        cmocka_unit_test(shape_estimate_reads_the_shape),
    };
    return cmocka_run_group_tests(tests, 0, 0);
}
