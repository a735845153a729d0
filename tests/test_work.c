/* Work that fits the time (gossip/work.h) and its mixing: equal work
 * mixes exactly as before (bit for bit); the normalised local progress
 * keeps decentralized SGD on the peers' mean objective when peers take
 * different numbers of steps, where the raw progress drifts to the
 * step-weighted one (FedNova's objective inconsistency); the batch rule
 * shrinks a peer that sets its neighbours' pace by more than a quarter of
 * its compute, and grows it back when it does not. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/rng.h"
#include "gossip/mix.h"
#include "gossip/work.h"

#define P 1001

static void equal_work_is_todays_mix(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 3);
    float *s = malloc(P * sizeof *s), *x0 = malloc(P * sizeof *x0), *x1 = malloc(P * sizeof *x1);
    float *n1 = malloc(P * sizeof *n1), *n2 = malloc(P * sizeof *n2);
    assert_true(s && x0 && x1 && n1 && n2);
    for (int k = 0; k < P; k++) {
        s[k] = (float)mm_rng_normal(&r);
        /* after local steps: near s, or anywhere (where s + (x - s) is not
         * x in floats: the identity must not compute it) */
        x0[k] = k % 2 ? s[k] + 0.01f * (float)mm_rng_normal(&r) : (float)(1e3 * mm_rng_normal(&r));
        n1[k] = (float)mm_rng_normal(&r);
        n2[k] = (float)mm_rng_normal(&r);
    }
    mm_work w;
    mm_work_init(&w, 16, 4, 3, 12);
    for (int missing = 0; missing < 2; missing++) {
        memcpy(x1, x0, P * sizeof *x1);
        float *xa = malloc(P * sizeof *xa);
        assert_non_null(xa);
        memcpy(xa, x0, P * sizeof *xa);
        mm_mix_input in[2] = {{.x = n1, .weight = 1 / 3.0, .w = 1, .peer = 1},
                              {.x = missing ? NULL : n2, .weight = 1 / 3.0, .w = 1, .peer = 2}};
        mm_mix_input in2[2];
        memcpy(in2, in, sizeof in);
        /* today's mix */
        mm_mix_round(xa, s, P, 1, 1 / 3.0, in, 2, 0, 4, 0);
        /* the work-weighted one with tau = H */
        assert_true(mm_work_delta_scale(&w, 3) == 1.0);
        mm_mix_scale_delta(x1, s, mm_work_delta_scale(&w, 3), P);
        mm_mix_round(x1, s, P, 1, 1 / 3.0, in2, 2, 0, 4, 0);
        assert_memory_equal(xa, x1, P * sizeof *x1);
        free(xa);
    }
    /* tau != H scales the progress: x = s + (H / tau) (x - s) */
    memcpy(x1, x0, P * sizeof *x1);
    mm_mix_scale_delta(x1, s, mm_work_delta_scale(&w, 6), P);
    for (int k = 0; k < P; k++)
        assert_true(fabsf(x1[k] - (s[k] + 0.5f * (x0[k] - s[k]))) <= 1e-6f * (1 + fabsf(x0[k])));
    assert_true(mm_work_delta_scale(&w, 0) == 1.0);
    free(s), free(x0), free(x1), free(n1), free(n2);
}

/* Decentralized SGD on a ring of 4, f_i(x) = |x - a_i|^2 / 2 per peer (D
 * dims), peer i taking tau[i] gradient steps a round while its snapshot
 * travels (D-PSGD's overlap: x <- mix(s) + progress); returns how far the
 * peers' mean ends from the mean of the a_i, and from their tau-weighted
 * mean. */
#define D 8
static void ring_sgd(bool normalise, double *to_mean, double *to_weighted)
{
    enum { N = 4, ROUNDS = 3000 };
    const int tau[N] = {1, 1, 1, 4};
    const float eta = 0.01f;
    float a[N][D], x[N][D], s[N][D];
    mm_rng r;
    mm_rng_seed(&r, 5);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < D; k++) {
            a[i][k] = (float)(4 * mm_rng_normal(&r));
            x[i][k] = 0;
        }
    mm_work w;
    mm_work_init(&w, 16, 4, 1, 8);
    for (int t = 0; t < ROUNDS; t++) {
        memcpy(s, x, sizeof s);
        for (int i = 0; i < N; i++)
            for (int h = 0; h < tau[i]; h++)
                for (int k = 0; k < D; k++)
                    x[i][k] -= eta * (x[i][k] - a[i][k]);
        float nx[N][D];
        for (int i = 0; i < N; i++) {
            memcpy(nx[i], x[i], sizeof nx[i]);
            if (normalise)
                mm_mix_scale_delta(nx[i], s[i], mm_work_delta_scale(&w, tau[i]), D);
            mm_mix_input in[2] = {{.x = s[(i + 1) % N], .weight = 1 / 3.0, .w = 1, .peer = 1},
                                  {.x = s[(i + N - 1) % N], .weight = 1 / 3.0, .w = 1, .peer = 2}};
            mm_mix_round(nx[i], s[i], D, 1, 1 / 3.0, in, 2, 0, N, 0);
        }
        memcpy(x, nx, sizeof x);
    }
    double dm = 0, dw = 0;
    for (int k = 0; k < D; k++) {
        double xbar = 0, abar = 0, aw = 0, tsum = 0;
        for (int i = 0; i < N; i++) {
            xbar += x[i][k] / N;
            abar += a[i][k] / N;
            aw += tau[i] * a[i][k];
            tsum += tau[i];
        }
        aw /= tsum;
        dm += (xbar - abar) * (xbar - abar);
        dw += (xbar - aw) * (xbar - aw);
    }
    *to_mean = sqrt(dm);
    *to_weighted = sqrt(dw);
}

static void normalised_progress_is_unbiased(void **state)
{
    (void)state;
    double raw_mean, raw_w, norm_mean, norm_w;
    ring_sgd(false, &raw_mean, &raw_w);
    ring_sgd(true, &norm_mean, &norm_w);
    print_message("peers' mean: raw progress %.4f from the mean objective's optimum (%.4f from "
                  "the step-weighted one); normalised %.4f (%.4f)\n", raw_mean, raw_w, norm_mean,
                  norm_w);
    /* the raw run settles near the tau-weighted optimum, far from the mean */
    assert_true(raw_mean > 2.0);
    assert_true(raw_w < 0.25 * raw_mean);
    /* the normalised one at the mean (eta's O(eta) bias only) */
    assert_true(norm_mean < 0.05 * raw_mean);
}

static void batch_rule(void **state)
{
    (void)state;
    mm_work w;
    mm_work_init(&w, 16, 4, 1, 4);
    /* sets the pace (every next vector here half its compute before):
     * 16 12 9 6 4 4 */
    const int want[] = {12, 9, 6, 4, 4};
    for (int i = 0; i < 5; i++)
        assert_int_equal(mm_work_next_batch(&w, 0.5, 1.0), want[i]);
    /* ahead of its neighbours by less than a quarter of its compute:
     * unchanged */
    assert_int_equal(mm_work_next_batch(&w, 0.2, 1.0), 4);
    assert_int_equal(mm_work_next_batch(&w, 0.0, 1.0), 4);
    /* a neighbour's next vector not here (NaN or negative): + B/16 a
     * round, up to B */
    for (int i = 0; i < 11; i++)
        assert_int_equal(mm_work_next_batch(&w, i % 2 ? NAN : -1, 1.0), 5 + i < 16 ? 5 + i : 16);
    assert_int_equal(mm_work_next_batch(&w, NAN, 1.0), 16);
    /* a batch of 2 still shrinks by one */
    mm_work_init(&w, 2, 1, 1, 1);
    assert_int_equal(mm_work_next_batch(&w, 1.0, 1.0), 1);
    assert_int_equal(mm_work_next_batch(&w, 1.0, 1.0), 1);
    /* more steps: only while one fits and below the bound */
    mm_work_init(&w, 16, 4, 2, 5);
    assert_true(mm_work_more_steps(&w, 2, 0.3, 0.1));
    assert_true(mm_work_more_steps(&w, 2, 0.06, 0.1));
    assert_false(mm_work_more_steps(&w, 2, 0.04, 0.1));
    assert_false(mm_work_more_steps(&w, 5, 0.3, 0.1));
    assert_false(mm_work_more_steps(&w, 2, -1, 0.1));
    assert_true(mm_work_delta_scale(&w, 4) == 0.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(equal_work_is_todays_mix),
        cmocka_unit_test(normalised_progress_is_unbiased),
        cmocka_unit_test(batch_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
