/* The count sketch: its hash is splitmix64 (checked against the published
 * first output), it is linear, and the consensus distance the report
 * estimates from eight peers' sketches is within 10 % of the exact one at
 * the default dimension. Prints the error-vs-dimension table that
 * docs/metrics.md quotes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "gossip/sketch.h"
#include "tests/testutil.h"

#define NPEERS 8
#define P 800000

static uint64_t rng_state = 42;
static double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((rng_state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double gauss(void)
{
    return sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand());
}

static void test_hash_is_splitmix64(void **state)
{
    (void)state;
    /* splitmix64 from state 0: first output 0xE220A8397B1DCDAF. */
    assert_true(mm_sketch_hash(0, 0) == 0xE220A8397B1DCDAFull);
    assert_true(mm_sketch_hash(1, 0) != mm_sketch_hash(0, 0));
    assert_true(mm_sketch_hash(0, 1) != mm_sketch_hash(0, 0));
}

static void test_dim1_is_signed_sum(void **state)
{
    (void)state;
    float x[1000], out[1];
    double want = 0;
    for (int p = 0; p < 1000; p++) {
        x[p] = (float)(p % 7) - 3.0f;
        want += (mm_sketch_hash(9, p) & 1) ? -x[p] : x[p];
    }
    mm_sketch(x, 1000, 9, out, 1);
    assert_float_equal(out[0], want, 1e-3);
}

static void test_linear_and_seeded(void **state)
{
    (void)state;
    enum { N = 50000, D = 256 };
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *m = malloc(N * sizeof *m);
    float sa[D], sb[D], sm[D], s2[D];
    for (int p = 0; p < N; p++) {
        a[p] = (float)gauss();
        b[p] = (float)gauss();
        m[p] = 0.5f * (a[p] + b[p]);
    }
    mm_sketch(a, N, 7, sa, D);
    mm_sketch(b, N, 7, sb, D);
    mm_sketch(m, N, 7, sm, D);
    for (int k = 0; k < D; k++)
        assert_float_equal(sm[k], 0.5f * (sa[k] + sb[k]), 1e-3);
    mm_sketch(a, N, 8, s2, D);
    int differ = 0;
    for (int k = 0; k < D; k++)
        differ += s2[k] != sa[k];
    assert_true(differ > D / 2);
    /* The sketch preserves the norm on average: ||S a||^2 ~ ||a||^2 = N. */
    double n2 = 0;
    for (int k = 0; k < D; k++)
        n2 += (double)sa[k] * sa[k];
    assert_true(fabs(n2 / N - 1.0) < 0.3);
    free(a); free(b); free(m);
}

/* Exact consensus distance sqrt(1/n sum ||x_i - xbar||^2), in double. */
static double exact_xi(float **x) { return tu_xi((const float *const *)x, NPEERS, P); }

/* The report's estimator, on sketches printed and read back with %.9g as
 * the node writes them. */
static double sketch_xi(float **x, uint64_t seed, int dim)
{
    float *y = malloc((size_t)NPEERS * dim * sizeof *y);
    for (int i = 0; i < NPEERS; i++) {
        mm_sketch(x[i], P, seed, y + (size_t)i * dim, dim);
        for (int k = 0; k < dim; k++) {
            char buf[32];
            snprintf(buf, sizeof buf, "%.9g", y[(size_t)i * dim + k]);
            y[(size_t)i * dim + k] = strtof(buf, NULL);
        }
    }
    const float *rows[NPEERS];
    for (int i = 0; i < NPEERS; i++)
        rows[i] = y + (size_t)i * dim;
    double xi = tu_xi(rows, NPEERS, (size_t)dim);
    free(y);
    return xi;
}

enum { ISO, RANK1, SPARSE, NCASES };
static const char *case_name[NCASES] = {"isotropic", "rank-1", "sparse-1%"};

/* Peers share a base vector (scale 0.05, like trained weights) and differ
 * by a known spread: independent Gaussian noise of a different size per
 * peer (isotropic), one common direction with per-peer coefficients
 * (rank-1: the sketch's worst case, one difference vector), or noise on
 * 1 % of the coordinates only (sparse). */
static void make_peers(float **x, int kind)
{
    float *u = malloc(P * sizeof *u);
    for (size_t p = 0; p < P; p++)
        u[p] = (float)gauss();
    for (int i = 0; i < NPEERS; i++) {
        double sigma = 1e-3 * (1 + i);
        double c = 1e-3 * (i - 3.5);
        for (size_t p = 0; p < P; p++) {
            double base = 0.05 * sin(0.001 * (double)p) + 0.01 * u[p];
            double d = 0;
            if (kind == ISO)
                d = sigma * gauss();
            else if (kind == RANK1)
                d = c * u[p];
            else if (p % 100 == 17)
                d = 10 * sigma * gauss();
            x[i][p] = (float)(base + d);
        }
    }
    free(u);
}

static void test_estimate_within_10_percent(void **state)
{
    (void)state;
    static const int dims[] = {64, 128, 256, 512, 1024, 2048};
    enum { NDIM = sizeof dims / sizeof dims[0], TRIALS = 8 };
    float *x[NPEERS];
    for (int i = 0; i < NPEERS; i++)
        x[i] = malloc(P * sizeof(float));
    double worst_default = 0;
    printf("sketch estimate vs exact consensus distance, n=%d peers, P=%d, %d sketch seeds\n",
           NPEERS, P, TRIALS);
    printf("%-10s %6s %12s %12s %12s\n", "spread", "dim", "mean|err|%", "max|err|%", "exact");
    for (int kind = 0; kind < NCASES; kind++) {
        make_peers(x, kind);
        double ex = exact_xi(x);
        assert_true(ex > 0);
        for (int d = 0; d < NDIM; d++) {
            double sum = 0, mx = 0;
            for (int t = 0; t < TRIALS; t++) {
                double est = sketch_xi(x, 0x5EED0000ull + 977 * t, dims[d]);
                double err = fabs(est / ex - 1);
                sum += err;
                mx = err > mx ? err : mx;
            }
            printf("%-10s %6d %12.2f %12.2f %12.4g\n", case_name[kind], dims[d],
                   100 * sum / TRIALS, 100 * mx, ex);
            if (dims[d] == MM_SKETCH_DIM_DEFAULT && mx > worst_default)
                worst_default = mx;
        }
    }
    printf("worst error at the default dim %d: %.2f %%\n", MM_SKETCH_DIM_DEFAULT,
           100 * worst_default);
    assert_true(worst_default < 0.10);
    for (int i = 0; i < NPEERS; i++)
        free(x[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_is_splitmix64),
        cmocka_unit_test(test_dim1_is_signed_sum),
        cmocka_unit_test(test_linear_and_seeded),
        cmocka_unit_test(test_estimate_within_10_percent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
