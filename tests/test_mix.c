/* The averaging arithmetic (gossip/mix.c) against dense references, and
 * small in-process simulations of whole gossip runs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/finite.h"
#include "gossip/mix.h"
#include "base/rng.h"
#include "net/wire.h"

static float *randvec(mm_rng *r, size_t n, double scale, double offset)
{
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)(offset + scale * mm_rng_normal(r));
    return v;
}

static void test_axpy_dist_matches_reference(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 1);
    size_t sizes[] = {1, 7, 1023, 1024, 1025, 100003};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        float *dst = randvec(&r, n, 1, 0), *x = randvec(&r, n, 1, 0), *ref = randvec(&r, n, 1, 0);
        float *expect = malloc(n * sizeof *expect);
        double d2 = 0;
        for (size_t i = 0; i < n; i++) {
            double d = (double)x[i] * 0.5 - (double)ref[i] * 2.0;
            d2 += d * d;
            expect[i] = dst[i] + 0.25f * x[i];
        }
        double got = mm_mix_axpy_dist(dst, 0.25f, x, 0.5f, ref, 2.0f, n);
        assert_true(fabs(got - d2) <= 1e-5 * d2 + 1e-9);
        for (size_t i = 0; i < n; i++)
            assert_float_equal(dst[i], expect[i], 1e-6);
        assert_true(fabs(mm_mix_dist(x, 0.5f, ref, 2.0f, n) - d2) <= 1e-5 * d2 + 1e-9);
        free(dst), free(x), free(ref), free(expect);
    }
}

static void test_all_finite(void **state)
{
    (void)state;
    size_t n = 5000;
    float *v = calloc(n, sizeof *v);
    assert_true(mm_all_finite(v, n, NULL));
    size_t where[] = {0, 17, 4999};
    for (size_t i = 0; i < 3; i++) {
        v[where[i]] = NAN;
        assert_false(mm_all_finite(v, n, NULL));
        v[where[i]] = INFINITY;
        assert_false(mm_all_finite(v, n, NULL));
        v[where[i]] = -INFINITY;
        assert_false(mm_all_finite(v, n, NULL));
        v[where[i]] = 3e38f;
        assert_true(mm_all_finite(v, n, NULL));
        v[where[i]] = 0;
    }
    free(v);
}

/* Dense double reference of mm_mix_round's documented formula. */
static void reference(double *out, const float *z_t, const float *delta, size_t n, double w_old,
                      double self, int n_in, float *const *z_k, const double *W, const double *w_k,
                      int pushsum, double clip, double *w_new_out)
{
    double selfw = self;
    for (int k = 0; k < n_in; k++)
        if (!z_k[k] && !pushsum)
            selfw += W[k];
    double w_new = selfw * w_old;
    for (int k = 0; k < n_in; k++)
        if (z_k[k])
            w_new += W[k] * w_k[k];
    for (size_t i = 0; i < n; i++)
        out[i] = selfw * w_old * z_t[i];
    for (int k = 0; k < n_in; k++) {
        if (!z_k[k])
            continue;
        double d2 = 0;
        for (size_t i = 0; i < n; i++)
            d2 += ((double)z_k[k][i] - z_t[i]) * ((double)z_k[k][i] - z_t[i]);
        double c = clip > 0 && sqrt(d2) > clip ? clip / sqrt(d2) : 1.0;
        for (size_t i = 0; i < n; i++)
            out[i] += W[k] * w_k[k] * (z_t[i] + c * ((double)z_k[k][i] - z_t[i]));
    }
    for (size_t i = 0; i < n; i++)
        out[i] = out[i] / w_new + delta[i];
    *w_new_out = w_new;
}

static void check_round(int pushsum, double clip, int missing)
{
    mm_rng r;
    mm_rng_seed(&r, 42 + (uint64_t)pushsum * 7 + (uint64_t)missing);
    size_t n = 3001;
    int n_in = 3;
    double W[3] = {0.25, 0.2, 0.15}, self = 0.4, w_old = pushsum ? 0.7 : 1.0;
    double w_k[3] = {1, 1, 1};
    if (pushsum)
        w_k[0] = 1.3, w_k[1] = 0.5, w_k[2] = 0.9;
    float *z_t = randvec(&r, n, 1, 0), *delta = randvec(&r, n, 0.01, 0);
    float *z_k[3], *sent[3];
    for (int k = 0; k < n_in; k++) {
        z_k[k] = randvec(&r, n, 1, k == 1 ? 5.0 : 0.0); /* neighbour 1 is far away */
        sent[k] = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            sent[k][i] = (float)(w_k[k] * z_k[k][i]);
    }
    float *gone = NULL; /* the missing neighbour's vector, freed at the end */
    if (missing >= 0)
        gone = z_k[missing], z_k[missing] = NULL;
    float *s = malloc(n * sizeof *s), *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        s[i] = (float)(w_old * z_t[i]);
        x[i] = z_t[i] + delta[i];
    }
    mm_mix_input in[3];
    for (int k = 0; k < n_in; k++)
        in[k] = (mm_mix_input){.x = z_k[k] ? sent[k] : NULL, .weight = W[k], .w = w_k[k]};
    double w_new = mm_mix_round(x, s, n, w_old, self, in, n_in, pushsum, 8, clip);

    double *expect = malloc(n * sizeof *expect), w_expect;
    reference(expect, z_t, delta, n, w_old, self, n_in, z_k, W, w_k, pushsum, clip, &w_expect);
    assert_true(fabs(w_new - (pushsum ? w_expect : 1.0)) < 1e-12);
    double maxerr = 0;
    for (size_t i = 0; i < n; i++)
        maxerr = fmax(maxerr, fabs(x[i] - expect[i]));
    assert_true(maxerr < 2e-5);
    for (int k = 0; k < n_in; k++) {
        if (!z_k[k]) {
            assert_true(isnan(in[k].dist));
            continue;
        }
        double d2 = 0;
        for (size_t i = 0; i < n; i++)
            d2 += ((double)z_k[k][i] - z_t[i]) * ((double)z_k[k][i] - z_t[i]);
        assert_true(fabs(in[k].dist - sqrt(d2)) < 1e-3 * sqrt(d2));
    }
    for (int k = 0; k < n_in; k++)
        free(sent[k]), free(z_k[k]);
    free(gone), free(z_t), free(delta), free(s), free(x), free(expect);
}

static void test_round_dpsgd(void **state) { (void)state; check_round(0, 0, -1); }
static void test_round_missing_goes_to_self(void **state) { (void)state; check_round(0, 0, 2); }
static void test_round_pushsum(void **state) { (void)state; check_round(1, 0, -1); }
static void test_round_pushsum_missing(void **state) { (void)state; check_round(1, 0, 0); }
static void test_round_clip_pull(void **state) { (void)state; check_round(0, 3.0, -1); }

/* n peers on a ring with weights 1/3, all mixing in-process: the mean is
 * preserved and the spread contracts. */
static void test_ring_preserves_mean(void **state)
{
    (void)state;
    enum { N = 6, P = 257 };
    mm_rng r;
    mm_rng_seed(&r, 9);
    float *x[N], *s[N];
    double mean0[P] = {0};
    for (int i = 0; i < N; i++) {
        x[i] = randvec(&r, P, 1, i);
        s[i] = malloc(P * sizeof(float));
        for (int p = 0; p < P; p++)
            mean0[p] += x[i][p] / N;
    }
    for (int round = 0; round < 60; round++) {
        for (int i = 0; i < N; i++)
            memcpy(s[i], x[i], P * sizeof(float));
        for (int i = 0; i < N; i++) {
            mm_mix_input in[2] = {{.x = s[(i + 1) % N], .weight = 1.0 / 3, .w = 1},
                                  {.x = s[(i + N - 1) % N], .weight = 1.0 / 3, .w = 1}};
            mm_mix_round(x[i], s[i], P, 1.0, 1.0 / 3, in, 2, 0, N, 0);
        }
    }
    for (int p = 0; p < P; p++)
        for (int i = 0; i < N; i++)
            assert_true(fabs(x[i][p] - mean0[p]) < 1e-3);
    for (int i = 0; i < N; i++)
        free(x[i]), free(s[i]);
}

/* Push-sum on a directed ring (each peer keeps 1/2, sends 1/2 to the next):
 * the de-biased values reach the true average even though no peer ever
 * hears from more than one other. Weights start unequal on purpose. */
static void test_pushsum_directed_ring(void **state)
{
    (void)state;
    enum { N = 5, P = 33 };
    mm_rng r;
    mm_rng_seed(&r, 3);
    float *z[N], *s[N];
    double w[N], sw[N], mean0[P] = {0};
    for (int i = 0; i < N; i++) {
        z[i] = randvec(&r, P, 1, 2 * i);
        s[i] = malloc(P * sizeof(float));
        w[i] = 1.0;
        for (int p = 0; p < P; p++)
            mean0[p] += z[i][p] / N;
    }
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < N; i++) {
            sw[i] = w[i];
            for (int p = 0; p < P; p++)
                s[i][p] = (float)(w[i] * z[i][p]);
        }
        for (int i = 0; i < N; i++) {
            /* a directed ring with a chord (0 -> 2) makes weights unequal */
            mm_mix_input in[2];
            int n_in = 0;
            int from = (i + N - 1) % N;
            double wf = from == 0 ? 1.0 / 3 : 0.5;
            in[n_in++] = (mm_mix_input){.x = s[from], .weight = wf, .w = sw[from]};
            if (i == 2)
                in[n_in++] = (mm_mix_input){.x = s[0], .weight = 1.0 / 3, .w = sw[0]};
            double self = i == 0 ? 1.0 / 3 : 0.5;
            w[i] = mm_mix_round(z[i], s[i], P, sw[i], self, in, n_in, 1, N, 0);
        }
    }
    double wsum = 0;
    for (int i = 0; i < N; i++)
        wsum += w[i];
    assert_true(fabs(wsum - N) < 1e-6);           /* mass is conserved */
    assert_true(fabs(w[0] - w[3]) > 0.05);        /* and really unequal: de-biasing matters */
    for (int p = 0; p < P; p++)
        for (int i = 0; i < N; i++)
            assert_true(fabs(z[i][p] - mean0[p]) < 1e-3);
    for (int i = 0; i < N; i++)
        free(z[i]), free(s[i]);
}

/* A neighbour's weight outside the rule is refused and the round is, bit
 * for bit, the round without that neighbour (issue 11: w = -2 from one
 * neighbour on a chain drove the divisor to ~0 and stopped honest peers). */
static void bad_weight_is_missing(int pushsum)
{
    enum { P = 517, N = 3 };
    mm_rng r;
    mm_rng_seed(&r, 77 + (uint64_t)pushsum);
    float *z = randvec(&r, P, 1, 0), *s = malloc(P * sizeof(float));
    float *a = randvec(&r, P, 1, 2), *b = randvec(&r, P, 1, -1);
    float *x1 = malloc(P * sizeof(float)), *x2 = malloc(P * sizeof(float));
    double w_old = pushsum ? 0.75 : 1.0, wa = pushsum ? 1.25 : 1.0;
    for (size_t i = 0; i < P; i++)
        s[i] = (float)(w_old * z[i]);
    const double bad_ps[] = {-2, -0.0, 0, 1e-300, 4e-320, 0x1p-31, 3.0000000001, 1e300, INFINITY, NAN};
    const double bad_one[] = {-2, 0, 1e-300, 4e-320, 1e300, 0.9999999999999999, 1.0000000000000002,
                              2, INFINITY, NAN};
    const double *bad = pushsum ? bad_ps : bad_one;
    for (int t = 0; t < 10; t++) {
        /* reference: neighbour b absent */
        memcpy(x1, z, P * sizeof(float));
        mm_mix_input ref[2] = {{.x = a, .weight = 0.25, .w = wa}, {.x = NULL, .weight = 0.25, .w = 1}};
        double w1 = mm_mix_round(x1, s, P, w_old, 0.5, ref, 2, pushsum, N, 0);
        memcpy(x2, z, P * sizeof(float));
        mm_mix_input in[2] = {{.x = a, .weight = 0.25, .w = wa}, {.x = b, .weight = 0.25, .w = bad[t]}};
        double w2 = mm_mix_round(x2, s, P, w_old, 0.5, in, 2, pushsum, N, 0);
        assert_int_equal(in[1].refused, 1);
        assert_int_equal(in[0].refused, 0);
        assert_null(in[1].x);
        assert_true(isnan(in[1].dist));
        assert_true(w1 == w2);
        assert_memory_equal(x1, x2, P * sizeof(float));
        assert_true(mm_all_finite(x2, P, NULL));
    }
    /* the edges of the rule are accepted */
    const double good[] = {pushsum ? MM_PUSHSUM_W_MIN : 1.0, pushsum ? (double)N : 1.0};
    for (int t = 0; t < 2; t++) {
        memcpy(x2, z, P * sizeof(float));
        mm_mix_input in[1] = {{.x = b, .weight = 0.5, .w = good[t]}};
        mm_mix_round(x2, s, P, w_old, 0.5, in, 1, pushsum, N, 0);
        assert_int_equal(in[0].refused, 0);
        assert_non_null(in[0].x);
    }
    free(z), free(s), free(a), free(b), free(x1), free(x2);
}

static void test_bad_weight_dpsgd(void **state) { (void)state; bad_weight_is_missing(0); }
static void test_bad_weight_pushsum(void **state) { (void)state; bad_weight_is_missing(1); }

/* The divisor's bound, and what keeps an honest push-sum peer in range. */
static void test_pushsum_weight_bounds(void **state)
{
    (void)state;
    enum { P = 64 };
    mm_rng r;
    mm_rng_seed(&r, 5);
    float *z = randvec(&r, P, 1, 0), *s = malloc(P * sizeof(float)), *x = malloc(P * sizeof(float));
    float *nb = randvec(&r, P, 1, 3);
    /* isolated (its neighbour missing): the weight decays by W_self per
     * round, then stays at 2^-30; z does not move */
    double w = 1.0;
    memcpy(x, z, P * sizeof(float));
    for (int round = 0; round < 40; round++) {
        for (size_t i = 0; i < P; i++)
            s[i] = (float)(w * x[i]);
        mm_mix_input in[1] = {{.x = NULL, .weight = 0.5, .w = 1}};
        double w_new = mm_mix_round(x, s, P, w, 0.5, in, 1, 1, 4, 0);
        double expect = w * 0.5 < MM_PUSHSUM_W_MIN ? MM_PUSHSUM_W_MIN : w * 0.5;
        assert_true(w_new == expect);
        w = w_new;
    }
    assert_true(w == MM_PUSHSUM_W_MIN);
    for (size_t i = 0; i < P; i++)
        assert_float_equal(x[i], z[i], 1e-5 * fabs(z[i]) + 1e-6);
    /* W_self' = 0 and nothing received: nothing is divided, x and w stay */
    memcpy(x, z, P * sizeof(float));
    for (size_t i = 0; i < P; i++)
        s[i] = (float)(0.5 * x[i]);
    mm_mix_input none[1] = {{.x = NULL, .weight = 1.0, .w = 1}};
    assert_true(mm_mix_round(x, s, P, 0.5, 0.0, none, 1, 1, 4, 0) == 0.5);
    assert_memory_equal(x, z, P * sizeof(float));
    /* W_self' = 0, one neighbour at the smallest weight: w_new = W w_k > 0,
     * and the result is that neighbour's z */
    float *sent = malloc(P * sizeof(float));
    for (size_t i = 0; i < P; i++)
        sent[i] = (float)(MM_PUSHSUM_W_MIN * nb[i]);
    mm_mix_input one[1] = {{.x = sent, .weight = 1.0, .w = MM_PUSHSUM_W_MIN}};
    assert_true(mm_mix_round(x, s, P, 0.5, 0.0, one, 1, 1, 4, 0) == MM_PUSHSUM_W_MIN);
    for (size_t i = 0; i < P; i++)
        assert_float_equal(x[i], nb[i], 1e-5 * fabs(nb[i]) + 1e-6);
    /* mass above the cluster's (neighbours claiming n each) is capped at n */
    memcpy(x, z, P * sizeof(float));
    for (size_t i = 0; i < P; i++) {
        s[i] = (float)(4.0 * x[i]);
        sent[i] = (float)(4.0 * nb[i]);
    }
    mm_mix_input two[2] = {{.x = sent, .weight = 1.0, .w = 4}, {.x = sent, .weight = 1.0, .w = 4}};
    assert_true(mm_mix_round(x, s, P, 4.0, 0.5, two, 2, 1, 4, 0) == 4.0);
    assert_true(mm_all_finite(x, P, NULL));
    free(z), free(s), free(x), free(nb), free(sent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_axpy_dist_matches_reference),
        cmocka_unit_test(test_all_finite),
        cmocka_unit_test(test_round_dpsgd),
        cmocka_unit_test(test_round_missing_goes_to_self),
        cmocka_unit_test(test_round_pushsum),
        cmocka_unit_test(test_round_pushsum_missing),
        cmocka_unit_test(test_round_clip_pull),
        cmocka_unit_test(test_ring_preserves_mean),
        cmocka_unit_test(test_pushsum_directed_ring),
        cmocka_unit_test(test_bad_weight_dpsgd),
        cmocka_unit_test(test_bad_weight_pushsum),
        cmocka_unit_test(test_pushsum_weight_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
