/* The newer schedules against their theory: local (W = I, refused unless
 * asked for), Decent-DP's alternating exponential ring (the rule re-derived
 * from Decent-DP's own enumeration; exact average after one period),
 * Base-(k+1) (the product of one period's W is J for every n and k = 1..4,
 * each W doubly stochastic, degree <= k) and Epidemic Learning (the
 * sampled rounds re-drawn by the documented rule; the mean-square
 * contraction against its closed form, which is the paper's beta_s). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gossip/topology.h"
#include "base/rng.h"

static mm_topology *parse(const char *text)
{
    char err[512];
    mm_topology *t = mm_topo_parse(text, strlen(text), "t.topo", err, sizeof err);
    if (!t)
        fail_msg("parse: %s\n%s", err, text);
    return t;
}

static mm_topology *gen(const char *kind, mm_gen_opts o)
{
    mm_topo_spec s;
    char err[512];
    if (mm_topo_generate(kind, &o, &s, err, sizeof err) < 0)
        fail_msg("gen %s -n %d: %s", kind, o.n, err);
    mm_topology *t = mm_topo_build(&s, kind, err, sizeof err);
    mm_topo_spec_free(&s);
    if (!t)
        fail_msg("build %s -n %d: %s", kind, o.n, err);
    return t;
}

static void matmul(const double *a, const double *b, double *c, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += a[(size_t)i * n + k] * b[(size_t)k * n + j];
            c[(size_t)i * n + j] = s;
        }
}

/* max |W(p-1) ... W(0) - J| over the entries, for one period p. */
static double period_gap(const mm_topology *t)
{
    int n = mm_topo_n(t), p = mm_topo_period(t);
    size_t nn = (size_t)n * n;
    double *acc = calloc(nn, sizeof *acc), *tmp = malloc(nn * sizeof *tmp);
    for (int i = 0; i < n; i++)
        acc[(size_t)i * n + i] = 1;
    for (int r = 0; r < p; r++) {
        double *w = mm_topo_matrix(t, (uint64_t)r);
        matmul(w, acc, tmp, n);
        memcpy(acc, tmp, nn * sizeof *acc);
        free(w);
    }
    double gap = 0;
    for (size_t i = 0; i < nn; i++)
        gap = fmax(gap, fabs(acc[i] - 1.0 / n));
    free(acc);
    free(tmp);
    return gap;
}

/* Every entry >= 0, every row and column sums to 1, W symmetric, and the
 * sparse views agree with W and have at most max_deg neighbours. */
static void check_doubly(const mm_topology *t, uint64_t r, int max_deg, const char *what)
{
    int n = mm_topo_n(t);
    double *w = mm_topo_matrix(t, r);
    mm_neighbour *in = malloc((size_t)n * sizeof *in), *out = malloc((size_t)n * sizeof *out);
    for (int i = 0; i < n; i++) {
        double rs = 0, cs = 0;
        for (int j = 0; j < n; j++) {
            double x = w[(size_t)i * n + j];
            if (x < 0 || x != w[(size_t)j * n + i])
                fail_msg("%s round %d: W[%d][%d] = %g, W[%d][%d] = %g", what, (int)r, i, j, x, j, i,
                         w[(size_t)j * n + i]);
            rs += x;
            cs += w[(size_t)j * n + i];
        }
        if (fabs(rs - 1) > 1e-12 || fabs(cs - 1) > 1e-12)
            fail_msg("%s round %d: row %d sums to %.17g, column to %.17g", what, (int)r, i, rs, cs);
        mm_round_view v = {.in = in, .out = out};
        assert_int_equal(mm_topo_round(t, (uint32_t)i, r, &v), 0);
        if (v.n_in > max_deg || v.n_out > max_deg)
            fail_msg("%s round %d: peer %d has %d neighbours, more than %d", what, (int)r, i, v.n_in, max_deg);
    }
    free(w);
    free(in);
    free(out);
}

/* ---- local ---------------------------------------------------------------- */

static void local_is_identity_and_only_on_purpose(void **state)
{
    (void)state;
    mm_topology *t = parse("peers 5\nschedule local\n");
    assert_int_equal(mm_topo_max_degree(t), 0);
    assert_string_equal(mm_topo_kind(t), "local");
    double *w = mm_topo_matrix(t, 7);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            assert_true(w[i * 5 + j] == (i == j));
    free(w);
    mm_topo_facts f;
    assert_int_equal(mm_topo_facts_get(t, &f), 0);
    assert_false(f.connected);
    assert_true(fabs(f.rho - 1) < 1e-12);
    assert_true(isinf(f.rounds_tenfold));
    assert_true(f.sends == 0);
    mm_topo_free(t);
    /* The same graph without the statement is a mistake, said so. */
    char err[256];
    const char *plain = "peers 5\n";
    assert_null(mm_topo_parse(plain, strlen(plain), "t.topo", err, sizeof err));
    assert_non_null(strstr(err, "schedule local"));
    const char *edges = "peers 4\nschedule local\n0 1\n";
    assert_null(mm_topo_parse(edges, strlen(edges), "t.topo", err, sizeof err));
    assert_non_null(strstr(err, "t.topo:3:"));
    /* a disconnected file with edges still says which peer is cut off */
    const char *split = "peers 4\n0 1\n2 3\n";
    assert_null(mm_topo_parse(split, strlen(split), "t.topo", err, sizeof err));
    assert_non_null(strstr(err, "no path from peer 0 to peer 2"));
}

/* ---- alternating exponential ring ---------------------------------------- */

/* Decent-DP's enumeration (decent_dp/topo.py, AlternatingExpRingTopology),
 * re-done here: for each exponent i two iterations; hosts j not yet used
 * pair with j + 2^i, pairs counted in order over all exponents; an even
 * pair averages inside its hosts in iteration 2i and across in 2i+1, an
 * odd pair the other way round. Fills cross[round][host] with the partner
 * host when host talks across that round, -1 when it averages inside. */
static void decent_dp_rule(int hosts, int *cross)
{
    int rounds = 0;
    while ((1 << rounds) < hosts)
        rounds++;
    int cnt = 0, *used = calloc((size_t)hosts, sizeof *used);
    for (int i = 0; i < rounds; i++) {
        memset(used, 0, (size_t)hosts * sizeof *used);
        for (int r = 2 * i; r < 2 * i + 2; r++)
            for (int h = 0; h < hosts; h++)
                cross[r * hosts + h] = -1;
        for (int j = 0; j < hosts; j++) {
            if (used[j])
                continue;
            int t = (j + (1 << i)) % hosts;
            used[j] = used[t] = 1;
            int r = cnt % 2 == 0 ? 2 * i + 1 : 2 * i;
            cross[r * hosts + j] = t;
            cross[r * hosts + t] = j;
            cnt++;
        }
    }
    free(used);
}

static void alt_exp_ring_follows_decent_dp(void **state)
{
    (void)state;
    const int cases[][2] = {{2, 1}, {4, 1}, {8, 1}, {16, 1}, {32, 1}, {8, 2}, {16, 4}, {12, 3}, {64, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int n = cases[c][0], g = cases[c][1], hosts = n / g;
        mm_topology *t = gen("alt-exp-ring", (mm_gen_opts){.n = n, .group = g});
        int period = mm_topo_period(t);
        assert_int_equal(period, 2 * (int)lround(log2(hosts)));
        int *cross = malloc((size_t)period * hosts * sizeof *cross);
        decent_dp_rule(hosts, cross);
        mm_neighbour in[128], out[128];
        for (int r = 0; r < 2 * period; r++) {
            int across = 0;
            for (int p = 0; p < n; p++) {
                mm_round_view v = {.in = in, .out = out};
                assert_int_equal(mm_topo_round(t, (uint32_t)p, (uint64_t)r, &v), 0);
                int partner = cross[(r % period) * hosts + p / g];
                /* inside: the other g-1 peers of my host; across: both hosts */
                int want = partner < 0 ? g - 1 : 2 * g - 1;
                assert_int_equal(v.n_in, want);
                for (int k = 0; k < v.n_in; k++) {
                    int h = (int)in[k].peer / g;
                    assert_true(h == p / g || h == partner);
                    assert_true(fabs(in[k].weight - 1.0 / (want + 1)) < 1e-15);
                }
                across += partner >= 0;
            }
            /* half of the host pairs talk across in each round */
            if (hosts >= 4)
                assert_int_equal(across, n / 2);
        }
        char what[64];
        snprintf(what, sizeof what, "alt-exp-ring n=%d group=%d", n, g);
        for (int r = 0; r < period; r++)
            check_doubly(t, (uint64_t)r, 2 * g - 1, what);
        if (period_gap(t) > 1e-12)
            fail_msg("%s: the period's product is not J (gap %g)", what, period_gap(t));
        free(cross);
        mm_topo_free(t);
    }
    /* hosts must be a power of two */
    mm_topo_spec s;
    char err[256];
    assert_int_equal(mm_topo_generate("alt-exp-ring", &(mm_gen_opts){.n = 12}, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "power of two"));
}

/* ---- Base-(k+1) ------------------------------------------------------------ */

static void base_graph_is_exact_for_any_n(void **state)
{
    (void)state;
    int checked = 0;
    for (int k = 1; k <= 4; k++)
        for (int n = 2; n <= 64 + 3 * k; n++) {
            if (k > n - 1)
                continue;
            mm_topology *t = gen("base", (mm_gen_opts){.n = n, .degree = k});
            char what[64];
            snprintf(what, sizeof what, "base n=%d k=%d", n, k);
            assert_int_equal(mm_topo_max_degree(t), k);
            for (int r = 0; r < mm_topo_period(t); r++)
                check_doubly(t, (uint64_t)r, k, what);
            double gap = period_gap(t);
            if (gap > 1e-12)
                fail_msg("%s: period %d, max |product - J| = %g", what, mm_topo_period(t), gap);
            checked++;
            mm_topo_free(t);
        }
    assert_true(checked > 250);
    /* a few larger and prime n, where one-peer-exp is not exact */
    const int big[][2] = {{97, 1}, {127, 2}, {200, 3}, {251, 4}};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        mm_topology *t = gen("base", (mm_gen_opts){.n = big[i][0], .degree = big[i][1]});
        assert_true(period_gap(t) <= 1e-12);
        mm_topo_free(t);
    }
}

/* Known periods: with n a power of k+1 the graph is the (k+1)-ary
 * hypercube, log_{k+1} n rounds; Base-2 on 6 peers (the paper's Figure 4)
 * needs 4 = 2 rounds inside the group of 4, one fold, one re-average. */
static void base_graph_periods(void **state)
{
    (void)state;
    const int cases[][3] = {{8, 1, 3}, {16, 1, 4}, {27, 2, 3}, {6, 1, 4}, {5, 4, 1}, {64, 3, 3}, {6, 2, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mm_topology *t = gen("base", (mm_gen_opts){.n = cases[i][0], .degree = cases[i][1]});
        if (mm_topo_period(t) != cases[i][2])
            fail_msg("base n=%d k=%d: period %d, expected %d", cases[i][0], cases[i][1],
                     mm_topo_period(t), cases[i][2]);
        mm_topo_free(t);
    }
}

/* ---- Epidemic Learning ----------------------------------------------------- */

/* The documented rule, written again from topologies/README.md. */
static void epidemic_rule(int n, int s, uint64_t seed, uint64_t round, uint32_t *targets)
{
    uint64_t x = seed;
    mm_rng rng;
    mm_rng_seed(&rng, mm_splitmix64(&x) ^ (round * 0xD1B54A32D192ED03ULL));
    for (int j = 0; j < n; j++) {
        uint32_t *o = targets + (size_t)j * s;
        int k = 0;
        for (int v = n - 1 - s; v < n - 1; v++) {
            uint32_t t = (uint32_t)mm_rng_below(&rng, (uint64_t)v + 1);
            for (int m = 0; m < k; m++)
                if (o[m] == t)
                    t = (uint32_t)v;
            o[k++] = t;
        }
        for (int m = 0; m < s; m++)
            o[m] = o[m] < (uint32_t)j ? o[m] : o[m] + 1;
    }
}

static bool in_set(const uint32_t *a, int n, uint32_t x)
{
    for (int i = 0; i < n; i++)
        if (a[i] == x)
            return true;
    return false;
}

static void epidemic_rounds_follow_the_rule(void **state)
{
    (void)state;
    const int cases[][2] = {{2, 1}, {8, 3}, {16, 4}, {33, 7}, {10, 9}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int n = cases[c][0], s = cases[c][1];
        mm_topology *t = gen("epidemic", (mm_gen_opts){.n = n, .fanout = s, .seed = 42});
        uint32_t *tg = malloc((size_t)n * s * sizeof *tg);
        mm_neighbour *in = malloc((size_t)n * sizeof *in), *out = malloc((size_t)n * sizeof *out);
        bool columns_off = false;
        for (uint64_t r = 0; r < 20; r++) {
            epidemic_rule(n, s, 42, r, tg);
            double *w = mm_topo_matrix(t, r);
            for (int i = 0; i < n; i++) {
                mm_round_view v = {.in = in, .out = out};
                assert_int_equal(mm_topo_round(t, (uint32_t)i, r, &v), 0);
                /* I send to exactly my s drawn targets, distinct, never me */
                assert_int_equal(v.n_out, s);
                for (int k = 0; k < s; k++) {
                    assert_true(in_set(tg + (size_t)i * s, s, out[k].peer));
                    assert_int_not_equal(out[k].peer, i);
                    if (k)
                        assert_true(out[k].peer > out[k - 1].peer);
                }
                /* I receive from exactly those who drew me, with 1/(d+1) */
                int d = 0;
                for (int j = 0; j < n; j++)
                    d += in_set(tg + (size_t)j * s, s, (uint32_t)i);
                assert_int_equal(v.n_in, d);
                for (int k = 0; k < v.n_in; k++) {
                    assert_true(in_set(tg + (size_t)in[k].peer * s, s, (uint32_t)i));
                    assert_true(in[k].weight == 1.0 / (d + 1));
                }
                assert_true(v.self_weight == 1.0 / (d + 1));
                double rs = 0, cs = 0;
                for (int j = 0; j < n; j++) {
                    rs += w[(size_t)i * n + j];
                    cs += w[(size_t)j * n + i];
                }
                assert_true(fabs(rs - 1) < 1e-12);      /* row-stochastic */
                columns_off |= fabs(cs - 1) > 1e-9;     /* columns are not */
            }
            free(w);
        }
        if (n > 2 && s < n - 1)
            assert_true(columns_off);
        free(tg);
        free(in);
        free(out);
        mm_topo_free(t);
    }
    /* another seed, other rounds */
    mm_topology *a = gen("epidemic", (mm_gen_opts){.n = 16, .fanout = 2, .seed = 1});
    mm_topology *b = gen("epidemic", (mm_gen_opts){.n = 16, .fanout = 2, .seed = 2});
    double *wa = mm_topo_matrix(a, 5), *wb = mm_topo_matrix(b, 5);
    assert_memory_not_equal(wa, wb, 16 * 16 * sizeof(double));
    free(wa);
    free(wb);
    mm_topo_free(a);
    mm_topo_free(b);
}

/* One round shrinks the distance to the old mean, in expectation, by
 * beta = E[(1 - d/(n-1)) / (1 + d)], d ~ Binomial(n-1, s/(n-1)) the number
 * of senders a peer gets; this equals the paper's
 * beta_s = (1/s)(1 - (1 - s/(n-1))^n) - 1/(n-1). Measured on the actual
 * rounds with random vectors; and the reported rho^2 (distance to the new
 * mean, over 1024 sampled rounds) is at most beta and close to it. */
static void epidemic_contraction_matches_theory(void **state)
{
    (void)state;
    const int cases[][2] = {{8, 1}, {8, 3}, {16, 2}, {32, 5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int n = cases[c][0], s = cases[c][1], N = n - 1;
        double p = (double)s / N, beta = 0;
        for (int d = 0; d <= N; d++) {
            double pd = exp(lgamma(N + 1) - lgamma(d + 1) - lgamma(N - d + 1) + d * log(p) +
                            (N - d) * log1p(-p));
            beta += pd * (1 - (double)d / N) / (1 + d);
        }
        double paper = (1.0 / s) * (1 - pow(1 - p, n)) - 1.0 / N;
        assert_true(fabs(beta - paper) < 1e-12);

        mm_topology *t = gen("epidemic", (mm_gen_opts){.n = n, .fanout = s, .seed = 9});
        mm_rng rng;
        mm_rng_seed(&rng, 77);
        double *x = malloc((size_t)n * sizeof *x), sum = 0, sum2 = 0;
        int trials = 4000;
        for (int k = 0; k < trials; k++) {
            double mean = 0, nx = 0, ny = 0;
            for (int i = 0; i < n; i++)
                mean += (x[i] = mm_rng_normal(&rng)) / n;
            for (int i = 0; i < n; i++) {
                x[i] -= mean;
                nx += x[i] * x[i];
            }
            double *w = mm_topo_matrix(t, (uint64_t)k);
            for (int i = 0; i < n; i++) {
                double y = 0;
                for (int j = 0; j < n; j++)
                    y += w[(size_t)i * n + j] * x[j];
                ny += y * y; /* the old mean is 0 */
            }
            free(w);
            sum += ny / nx;
            sum2 += (ny / nx) * (ny / nx);
        }
        double m = sum / trials, se = sqrt((sum2 / trials - m * m) / trials);
        if (fabs(m - beta) > 4 * se + 1e-3)
            fail_msg("epidemic n=%d s=%d: measured %.5f +- %.5f, theory %.5f", n, s, m, se, beta);
        double rho2 = pow(mm_topo_rho(t), 2);
        if (!(rho2 <= beta * 1.08 && rho2 >= beta * 0.8))
            fail_msg("epidemic n=%d s=%d: rho^2 = %.5f against beta = %.5f", n, s, rho2, beta);
        free(x);
        mm_topo_free(t);
    }
}

static void schedule_file_errors(void **state)
{
    (void)state;
    static const struct { const char *text, *want; } bad[] = {
        {"peers 8\nschedule base\n", "t.topo:2: expected 'degree K'"},
        {"peers 8\nschedule epidemic\nseed 1\n", "t.topo:2: expected 'fanout S'"},
        {"peers 8\nschedule epidemic\nfanout 2\n", "t.topo:2: expected 'seed S' for schedule epidemic"},
        {"peers 8\nschedule local\ndegree 2\n", "t.topo:3: 'degree' is only used by 'schedule base'"},
        {"peers 8\nschedule alt-exp-ring\nfanout 2\n", "t.topo:3: 'fanout' is only used"},
        {"peers 8\nschedule base\ngroup 2\ndegree 1\n", "t.topo:3: 'group' is only used"},
        {"peers 8\nschedule base\ndegree 0\n", "t.topo:3: expected a whole number"},
        {"peers 8\nschedule base\ndegree 8\n", "'degree 8' (the maximum degree k) must be 1..7"},
        {"peers 8\nschedule epidemic\nfanout 8\nseed 1\n", "'fanout 8' must be 1..7"},
        {"peers 12\nschedule alt-exp-ring\n", "needs a power of two of hosts"},
        {"peers 8\nschedule alt-exp-ring\ngroup 3\n", "do not split into hosts of 'group 3'"},
        {"peers 8\nschedule base\ndegree 2\ndegree 2\n", "t.topo:4: 'degree' given twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[512] = "";
        mm_topology *t = mm_topo_parse(bad[i].text, strlen(bad[i].text), "t.topo", err, sizeof err);
        if (t)
            fail_msg("case %zu accepted:\n%s", i, bad[i].text);
        if (!strstr(err, bad[i].want))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, bad[i].want);
    }
}

/* The per-round path stays O(degree): 20000 peers, a round each. Not a
 * timing test: an O(n^2) round would blow the test's run time. */
static void large_schedules(void **state)
{
    (void)state;
    int n = 20000;
    mm_neighbour in[64], out[64];
    mm_topology *t = gen("base", (mm_gen_opts){.n = n, .degree = 3});
    for (uint32_t i = 0; i < (uint32_t)n; i++) {
        mm_round_view v = {.in = in, .out = out};
        assert_int_equal(mm_topo_round(t, i, 4, &v), 0);
        assert_true(v.n_in <= 3);
    }
    mm_topo_free(t);
    t = gen("alt-exp-ring", (mm_gen_opts){.n = 1 << 14, .group = 1});
    for (uint32_t i = 0; i < 1u << 14; i++) {
        mm_round_view v = {.in = in, .out = out};
        assert_int_equal(mm_topo_round(t, i, 7, &v), 0);
    }
    mm_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(local_is_identity_and_only_on_purpose),
        cmocka_unit_test(alt_exp_ring_follows_decent_dp),
        cmocka_unit_test(base_graph_is_exact_for_any_n),
        cmocka_unit_test(base_graph_periods),
        cmocka_unit_test(epidemic_rounds_follow_the_rule),
        cmocka_unit_test(epidemic_contraction_matches_theory),
        cmocka_unit_test(schedule_file_errors),
        cmocka_unit_test(large_schedules),
    };
    return cmocka_run_group_tests(tests, 0, 0);
}
