/* The model's two threads (mm_model_set_threads): a batch is cut into
 * shards whose gradients are summed in order, so one thread and two give
 * the same loss and the same gradient bit for bit, for an even batch, an
 * odd one (shards of unequal size) and a batch of one (a single shard);
 * and the shards together are the whole batch's gradient (a shard-sized
 * batch run alone, scaled, gives that shard's part). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "model/model.h"

static mm_model_config small(void)
{
    mm_model_config c = {.n_layer = 2, .d_model = 32, .n_head = 4, .n_ctx = 16};
    return c;
}

static uint8_t *tokens(int B, int T, uint64_t seed)
{
    uint8_t *t = malloc((size_t)B * (size_t)(T + 1));
    mm_rng r;
    mm_rng_seed(&r, seed);
    for (int i = 0; i < B * (T + 1); i++)
        t[i] = (uint8_t)mm_rng_below(&r, 256);
    return t;
}

/* loss and gradient of one forward and backward with `threads` */
static float run(int threads, int B, const uint8_t *tok, float *grads)
{
    mm_model m;
    char err[128];
    mm_model_config c = small();
    assert_int_equal(mm_model_init(&m, &c, 7, err, sizeof err), 0);
    mm_model_set_threads(&m, threads);
    float loss = mm_model_forward(&m, tok, B, c.n_ctx);
    mm_model_backward(&m);
    memcpy(grads, m.grads, m.n_params * sizeof(float));
    size_t n = m.n_params;
    mm_model_free(&m);
    assert_true(isfinite(loss));
    assert_true(n > 0);
    return loss;
}

static void same_bits(int B)
{
    mm_model_config c = small();
    size_t n = mm_model_param_count(&c);
    float *g1 = malloc(n * sizeof(float)), *g2 = malloc(n * sizeof(float));
    uint8_t *tok = tokens(B, c.n_ctx, (uint64_t)B);
    float l1 = run(1, B, tok, g1), l2 = run(2, B, tok, g2);
    assert_memory_equal(&l1, &l2, sizeof l1);
    assert_memory_equal(g1, g2, n * sizeof(float));
    /* and not all zero: a gradient that was never written would pass too */
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += fabs(g1[i]);
    assert_true(s > 0);
    free(g1), free(g2), free(tok);
}

static void test_even_batch(void **state) { (void)state; same_bits(6); }
static void test_odd_batch(void **state) { (void)state; same_bits(5); }
static void test_batch_of_one(void **state) { (void)state; same_bits(1); }

/* The batch's gradient is the mean over its positions: a batch of 4 is
 * the batch of its first 2 sequences plus that of its last 2, halved. */
static void test_shards_sum_to_the_batch(void **state)
{
    (void)state;
    mm_model_config c = small();
    size_t n = mm_model_param_count(&c);
    int T = c.n_ctx;
    float *g = malloc(n * sizeof(float)), *ga = malloc(n * sizeof(float));
    float *gb = malloc(n * sizeof(float));
    uint8_t *tok = tokens(4, T, 11);
    float l = run(2, 4, tok, g);
    float la = run(1, 2, tok, ga), lb = run(1, 2, tok + 2 * (T + 1), gb);
    assert_float_equal(l, 0.5f * (la + lb), 1e-5);
    /* Within float rounding of the two terms, not of their sum: where the
     * shards' parts nearly cancel (-0.185 + 0.186), the sum's own size says
     * nothing of the rounding the kernels' other order of additions makes
     * (OpenBLAS's Zen kernel: 2.2e-8 on a sum of 6.6e-4, 1.3e-5 of it). A
     * shard left out or counted twice is off by a term, far beyond this. */
    for (size_t i = 0; i < n; i++) {
        float want = 0.5f * (ga[i] + gb[i]);
        float scale = 0.5f * (fabsf(ga[i]) + fabsf(gb[i]));
        assert_true(fabsf(g[i] - want) <= 1e-5f * (scale + 1e-3f));
    }
    free(g), free(ga), free(gb), free(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_even_batch),
        cmocka_unit_test(test_odd_batch),
        cmocka_unit_test(test_batch_of_one),
        cmocka_unit_test(test_shards_sum_to_the_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
