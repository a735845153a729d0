/* The outer optimizer (model/outer.c) against an independent reference:
 * tests/fixtures/outer_ref.txt, written by tests/fixtures/outer_ref.py
 * (numpy, float32) from the documented rule, 20 outer steps per momentum
 * schedule on a toy vector. Replays every case and compares the momentum
 * of each step and x, o, m after it. Also: lr 1, mu 0 leaves x bit for bit;
 * the schedules at known steps; the decay parser's errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/outer.h"

#define REF_PATH "tests/fixtures/outer_ref.txt"
#define MAXN 64

static FILE *ref;

/* Reads "tag v1 v2 ... vn" into v; fails the test on anything else. */
static void read_vec(const char *tag, float *v, int n)
{
    char t[32];
    assert_int_equal(fscanf(ref, "%31s", t), 1);
    assert_string_equal(t, tag);
    for (int i = 0; i < n; i++)
        assert_int_equal(fscanf(ref, "%f", &v[i]), 1);
}

/* The largest difference, in units of float epsilon relative to max(1, |ref|). */
static double max_err(const float *got, const float *want, int n)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
        double e = fabs((double)got[i] - (double)want[i]) / scale / 1.1920929e-7;
        if (e > worst)
            worst = e;
    }
    return worst;
}

static int replay_case(const char *name)
{
    float lr, mu;
    long warmup;
    char decay[64];
    int steps, n, delayed;
    assert_int_equal(fscanf(ref, "%f %f %ld %63s %d %d %d", &lr, &mu, &warmup, decay, &steps,
                            &n, &delayed), 7);
    assert_true(n > 0 && n <= MAXN);
    mm_outer_config c = {.lr = lr, .momentum = mu, .warmup = warmup};
    char err[256];
    assert_int_equal(mm_outer_parse_decay(decay, &c, err, sizeof err), 0);
    float o[MAXN], m[MAXN] = {0}, d[MAXN], x[MAXN], want[MAXN];
    read_vec("o0", o, n);
    read_vec("d", d, n);
    double worst = 0;
    for (int k = 0; k < steps; k++) {
        int kk;
        float mu_ref;
        char t[32];
        assert_int_equal(fscanf(ref, "%31s %d %f", t, &kk, &mu_ref), 3);
        assert_string_equal(t, "step");
        assert_int_equal(kk, k);
        float mu_k = mm_outer_momentum(&c, k, steps);
        assert_float_equal(mu_k, mu_ref, 1e-7);
        read_vec("xin", x, n);
        float xin[MAXN];
        memcpy(xin, x, sizeof xin);
        mm_outer_step(x, o, m, delayed ? d : NULL, (size_t)n, lr, mu_k);
        read_vec("x", want, n);
        double e = max_err(x, want, n);
        read_vec("o", want, n);
        double eo = max_err(o, want, n);
        read_vec("m", want, n);
        double em = max_err(m, want, n);
        worst = fmax(worst, fmax(e, fmax(eo, em)));
        if (!strcmp(name, "identity")) /* lr 1, mu 0: the plain algorithm's x, bit for bit */
            assert_memory_equal(x, xin, (size_t)n * sizeof(float));
    }
    printf("  %-24s %d steps, worst difference %.2f float epsilons\n", name, steps, worst);
    /* the same float operations in the same order: equal, or within the
     * rounding of numpy's scalar-times-array promotion */
    assert_true(worst <= 4.0);
    char t[32];
    assert_int_equal(fscanf(ref, "%31s", t), 1);
    assert_string_equal(t, "end");
    return steps;
}

static void test_reference(void **state)
{
    (void)state;
    const char *path = getenv("MM_OUTER_REF") ? getenv("MM_OUTER_REF") : REF_PATH;
    ref = fopen(path, "r");
    assert_non_null(ref);
    char line[256];
    assert_non_null(fgets(line, sizeof line, ref)); /* the comment line */
    int cases = 0;
    char tag[32], name[64];
    while (fscanf(ref, "%31s %63s", tag, name) == 2) {
        assert_string_equal(tag, "case");
        assert_int_equal(replay_case(name), 20);
        cases++;
    }
    fclose(ref);
    assert_int_equal(cases, 5); /* every schedule of the fixture was replayed */
}

static void test_schedules(void **state)
{
    (void)state;
    mm_outer_config c = {.lr = 0.7f, .momentum = 0.9f, .warmup = 4};
    assert_float_equal(mm_outer_momentum(&c, 0, 100), 0.0, 0);
    assert_float_equal(mm_outer_momentum(&c, 2, 100), 0.45, 1e-7);
    assert_float_equal(mm_outer_momentum(&c, 4, 100), 0.9, 1e-7);
    assert_float_equal(mm_outer_momentum(&c, 99, 100), 0.9, 1e-7);
    char err[256];
    assert_int_equal(mm_outer_parse_decay("linear:0.5", &c, err, sizeof err), 0);
    c.warmup = 0;
    assert_float_equal(mm_outer_momentum(&c, 49, 100), 0.9, 1e-7);
    assert_float_equal(mm_outer_momentum(&c, 50, 100), 0.9, 1e-7);  /* r = 0 */
    assert_float_equal(mm_outer_momentum(&c, 75, 100), 0.45, 1e-7); /* r = 1/2 */
    assert_int_equal(mm_outer_parse_decay("cosine:0", &c, err, sizeof err), 0);
    assert_float_equal(mm_outer_momentum(&c, 50, 100), 0.45, 1e-6); /* cos(pi/2) */
    char spec[32];
    mm_outer_decay_spec(&c, spec, sizeof spec);
    assert_string_equal(spec, "cosine:0");
}

static void test_parse_errors(void **state)
{
    (void)state;
    mm_outer_config c = {0};
    char err[256];
    const char *bad[] = {"", "linear", "linear:", "linear:1", "linear:-0.1", "cosine:x",
                         "step:0.5", "linear:0.5x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(mm_outer_parse_decay(bad[i], &c, err, sizeof err), -1);
        assert_true(strlen(err) > 0);
    }
    assert_int_equal(mm_outer_parse_decay("none", &c, err, sizeof err), 0);
    assert_int_equal(c.decay, MM_OUTER_DECAY_NONE);
}

/* NoLoCo (model/outer.h) against tests/fixtures/noloco_ref.txt, written by
 * tests/fixtures/noloco_ref.py in the paper's own form (two vectors, the
 * group means of Delta and of phi, float64): the rounds replayed with
 * murmur's one combined vector (mm_outer_noloco_send), the pair's mean as
 * the mix, and mm_outer_noloco_step, in float32, land within a few float
 * epsilons of it; with alpha 0 and beta = gamma = 1 (plain averaging) x is
 * bit for bit the mix. Replacing the combined vector by theta alone (what
 * the step would need only when beta = gamma) fails the gamma != beta
 * cases by far. */
#define NOLOCO_REF "tests/fixtures/noloco_ref.txt"
enum { NL_PEERS = 4, NL_N = 7 };

static void read_row(const char *tag, int peer, double *v, int n)
{
    char t[32];
    int p;
    assert_int_equal(fscanf(ref, "%31s %d", t, &p), 2);
    assert_string_equal(t, tag);
    assert_int_equal(p, peer);
    for (int i = 0; i < n; i++)
        assert_int_equal(fscanf(ref, "%lf", &v[i]), 1);
}

/* The largest |got - want| relative to max(1, |want|), in float epsilons. */
static double err_eps(const float *got, const double *want, int n)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
        worst = fmax(worst, fabs((double)got[i] - want[i]) / scale / 1.1920929e-7);
    }
    return worst;
}

static double replay_noloco(const char *name, bool theta_only)
{
    float alpha, beta, gamma;
    int peers, rounds, n;
    assert_int_equal(fscanf(ref, "%f %f %f %d %d %d", &alpha, &beta, &gamma, &peers, &rounds,
                            &n), 6);
    assert_int_equal(peers, NL_PEERS);
    assert_int_equal(n, NL_N);
    float o[NL_PEERS][NL_N], m[NL_PEERS][NL_N] = {{0}}, s[NL_PEERS][NL_N], x[NL_PEERS][NL_N];
    double v[NL_N];
    for (int i = 0; i < NL_PEERS; i++) {
        read_row("phi0", i, v, NL_N);
        for (int k = 0; k < NL_N; k++)
            o[i][k] = (float)v[k];
    }
    double worst = 0;
    for (int r = 0; r < rounds; r++) {
        char t[32];
        int rr, partner[NL_PEERS];
        assert_int_equal(fscanf(ref, "%31s %d", t, &rr), 2);
        assert_string_equal(t, "round");
        assert_int_equal(rr, r);
        for (int i = 0; i < NL_PEERS; i++)
            assert_int_equal(fscanf(ref, "%d", &partner[i]), 1);
        float theta[NL_PEERS][NL_N];
        for (int i = 0; i < NL_PEERS; i++) {
            read_row("theta", i, v, NL_N);
            for (int k = 0; k < NL_N; k++)
                theta[i][k] = (float)v[k];
            if (theta_only)
                memcpy(s[i], theta[i], sizeof s[i]);
            else
                mm_outer_noloco_send(s[i], theta[i], o[i], NL_N, beta, gamma);
        }
        for (int i = 0; i < NL_PEERS; i++) { /* the pair's mix, W = (I + P) / 2 */
            for (int k = 0; k < NL_N; k++)
                x[i][k] = 0.5f * s[i][k] + 0.5f * s[partner[i]][k];
            float mixed[NL_N];
            memcpy(mixed, x[i], sizeof mixed);
            mm_outer_noloco_step(x[i], o[i], m[i], NULL, NL_N, alpha, gamma);
            if (alpha == 0 && beta == 1 && gamma == 1) /* plain averaging: the mix itself */
                assert_memory_equal(x[i], mixed, sizeof mixed);
        }
        for (int i = 0; i < NL_PEERS; i++) {
            read_row("phi", i, v, NL_N);
            worst = fmax(worst, err_eps(o[i], v, NL_N));
            read_row("delta", i, v, NL_N);
            worst = fmax(worst, err_eps(m[i], v, NL_N));
        }
    }
    char t[32];
    assert_int_equal(fscanf(ref, "%31s", t), 1);
    assert_string_equal(t, "end");
    printf("  noloco %-18s %d rounds of %d peers%s, worst difference %.1f float epsilons\n",
           name, rounds, NL_PEERS, theta_only ? " (theta sent)" : "", worst);
    return worst;
}

static void test_noloco_reference(void **state)
{
    (void)state;
    for (int pass = 0; pass < 2; pass++) {
        bool theta_only = pass == 1;
        ref = fopen(NOLOCO_REF, "r");
        assert_non_null(ref);
        char line[256], tag[32], name[64];
        assert_non_null(fgets(line, sizeof line, ref));
        int cases = 0;
        while (fscanf(ref, "%31s %63s", tag, name) == 2) {
            assert_string_equal(tag, "noloco");
            double worst = replay_noloco(name, theta_only);
            bool beta_is_gamma = !strcmp(name, "gamma-is-beta") || !strcmp(name, "plain-averaging");
            /* float32 against float64 over 20 rounds with momentum: a few
             * epsilons; sending theta where beta != gamma is far off */
            if (!theta_only || beta_is_gamma)
                assert_true(worst < 64);
            else
                assert_true(worst > 1e4);
            cases++;
        }
        fclose(ref);
        assert_int_equal(cases, 4);
    }
}

/* Momentum 0 and lr < 1 is a convex step towards the average: o moves lr of
 * the way from o to y. */
static void test_no_momentum_is_interpolation(void **state)
{
    (void)state;
    float o[3] = {1, 2, 3}, m[3] = {0}, x[3] = {3, 2, 1};
    mm_outer_step(x, o, m, NULL, 3, 0.25f, 0.0f);
    assert_float_equal(o[0], 1.5, 1e-6);
    assert_float_equal(o[1], 2.0, 1e-6);
    assert_float_equal(o[2], 2.5, 1e-6);
    assert_memory_equal(o, x, sizeof o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_schedules),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_no_momentum_is_interpolation),
        cmocka_unit_test(test_noloco_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
