/* AdamW (model/adamw.c): the learning-rate schedule at known steps, global
 * gradient-norm clipping, weight decay on the 2-D matrices only, and one
 * update computed by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

static mm_model_config tiny(void)
{
    mm_model_config c = {.n_layer = 2, .d_model = 8, .n_head = 2, .n_ctx = 4};
    return c;
}

static void test_schedule(void **state)
{
    (void)state;
    mm_adamw_config c = mm_adamw_config_default();
    c.lr_max = 1e-3f;
    c.lr_min = 1e-4f;
    c.warmup_steps = 10;
    c.total_steps = 110;
    assert_float_equal(mm_adamw_lr(&c, 0), 1e-4, 1e-9);     /* (0+1)/10 of max */
    assert_float_equal(mm_adamw_lr(&c, 4), 5e-4, 1e-9);
    assert_float_equal(mm_adamw_lr(&c, 9), 1e-3, 1e-9);     /* end of warm-up */
    assert_float_equal(mm_adamw_lr(&c, 10), 1e-3, 1e-9);    /* cosine starts at max */
    assert_float_equal(mm_adamw_lr(&c, 60), 5.5e-4, 1e-9);  /* half-way: mean */
    assert_float_equal(mm_adamw_lr(&c, 35), 1e-4 + 0.9e-3 * 0.5 * (1 + cos(M_PI / 4)), 1e-8);
    assert_float_equal(mm_adamw_lr(&c, 110), 1e-4, 1e-9);   /* end: min */
    assert_float_equal(mm_adamw_lr(&c, 500), 1e-4, 1e-9);   /* and it stays there */
    for (long s = 11; s < 110; s++)                          /* monotone decay */
        assert_true(mm_adamw_lr(&c, s) <= mm_adamw_lr(&c, s - 1));
}

static void fill_grads(mm_model *m, float v)
{
    for (size_t i = 0; i < m->n_params; i++)
        m->grads[i] = v;
}

static void test_clipping(void **state)
{
    (void)state;
    mm_model m;
    char err[128];
    mm_model_config mc = tiny();
    assert_int_equal(mm_model_init(&m, &mc, 1, err, sizeof err), 0);
    mm_adamw opt;
    mm_adamw_config c = mm_adamw_config_default();
    c.grad_clip = 1.0f;
    assert_int_equal(mm_adamw_init(&opt, &c, m.n_params), 0);
    fill_grads(&m, 0.5f);
    double want = 0.5 * sqrt((double)m.n_params);
    float norm = mm_adamw_step(&opt, &m, m.params, m.grads);
    assert_float_equal(norm, want, want * 1e-5);
    double after = 0;
    for (size_t i = 0; i < m.n_params; i++)
        after += (double)m.grads[i] * m.grads[i];
    assert_float_equal(sqrt(after), 1.0, 1e-5);  /* clipped in place to grad_clip */

    /* below the threshold, or with clipping off, grads are left alone */
    fill_grads(&m, 1e-4f);
    mm_adamw_step(&opt, &m, m.params, m.grads);
    assert_true(m.grads[0] == 1e-4f && m.grads[m.n_params - 1] == 1e-4f);
    opt.cfg.grad_clip = 0.0f;
    fill_grads(&m, 3.0f);
    norm = mm_adamw_step(&opt, &m, m.params, m.grads);
    assert_true(m.grads[7] == 3.0f);
    assert_float_equal(norm, 3.0 * sqrt((double)m.n_params), 1e-2);
    assert_int_equal(opt.step, 3);
    /* an optimizer sized for another model is refused */
    mm_adamw other;
    assert_int_equal(mm_adamw_init(&other, &c, m.n_params - 1), 0);
    float p0 = m.params[0];
    assert_true(isnan(mm_adamw_step(&other, &m, m.params, m.grads)));
    assert_true(m.params[0] == p0 && other.step == 0);
    mm_adamw_free(&other);
    mm_adamw_free(&opt);
    mm_model_free(&m);
}

static int is_matrix(const char *n)
{
    return !strcmp(n, "wte") || !strcmp(n, "wpe") || !strcmp(n, "qkvw") ||
           !strcmp(n, "attprojw") || !strcmp(n, "fcw") || !strcmp(n, "fcprojw");
}

/* With zero gradients the Adam term is 0, so an update is pure decay:
 * matrices shrink by (1 - lr*wd), every other tensor stays as it was. */
static void test_decay_only_matrices(void **state)
{
    (void)state;
    mm_model m;
    char err[128];
    mm_model_config mc = tiny();
    assert_int_equal(mm_model_init(&m, &mc, 2, err, sizeof err), 0);
    for (size_t i = 0; i < m.n_params; i++)
        m.params[i] = 1.0f + (float)(i % 13) * 0.1f; /* biases non-zero too */
    float before[20000];
    assert_true(m.n_params <= 20000);
    memcpy(before, m.params, m.n_params * sizeof(float));
    mm_adamw opt;
    mm_adamw_config c = mm_adamw_config_default();
    c.warmup_steps = 0;
    c.total_steps = 0; /* constant lr_max */
    c.lr_max = 0.01f;
    c.weight_decay = 0.5f;
    assert_int_equal(mm_adamw_init(&opt, &c, m.n_params), 0);
    fill_grads(&m, 0.0f);
    mm_adamw_step(&opt, &m, m.params, m.grads);
    int n_mat = 0, n_other = 0;
    for (int t = 0; t < MM_NUM_TENSORS; t++) {
        mm_tensor_info ti = mm_model_tensor(&m, t);
        float f = is_matrix(ti.name) ? 1.0f - 0.01f * 0.5f : 1.0f;
        n_mat += is_matrix(ti.name);
        n_other += !is_matrix(ti.name);
        for (size_t k = 0; k < ti.count; k++) {
            size_t i = ti.offset + k;
            if (fabsf(m.params[i] - before[i] * f) > 1e-6f)
                fail_msg("%s[%zu]: %g, expected %g", ti.name, k, m.params[i], before[i] * f);
        }
    }
    assert_int_equal(n_mat, 6);
    assert_int_equal(n_other, 10);
    mm_adamw_free(&opt);
    mm_model_free(&m);
}

/* First step with gradient g: m = (1-b1) g, v = (1-b2) g^2, and after bias
 * correction the update is lr * g / (|g| + eps), plus decay. */
static void test_one_update_by_hand(void **state)
{
    (void)state;
    mm_model m;
    char err[128];
    mm_model_config mc = tiny();
    assert_int_equal(mm_model_init(&m, &mc, 3, err, sizeof err), 0);
    mm_adamw opt;
    mm_adamw_config c = mm_adamw_config_default();
    c.warmup_steps = 4;
    c.total_steps = 100;
    c.lr_max = 0.1f;
    c.grad_clip = 0.0f;
    c.eps = 1e-3f;
    assert_int_equal(mm_adamw_init(&opt, &c, m.n_params), 0);
    for (size_t i = 0; i < m.n_params; i++)
        m.grads[i] = (float)((long)(i % 5) - 2) * 0.01f;
    float p0 = m.params[m.n_params - 1], g0 = m.grads[m.n_params - 1]; /* lnfb: no decay */
    float w0 = m.params[1], gw = m.grads[1];                            /* wte: decayed */
    mm_adamw_step(&opt, &m, m.params, m.grads);
    float lr = 0.1f / 4; /* warm-up step 0 */
    assert_float_equal(m.params[m.n_params - 1], p0 - lr * g0 / (fabsf(g0) + 1e-3f), 1e-6);
    assert_float_equal(m.params[1], w0 - lr * (gw / (fabsf(gw) + 1e-3f) + c.weight_decay * w0),
                       1e-6);
    assert_float_equal(opt.m[1], 0.1f * gw, 1e-9);
    assert_float_equal(opt.v[1], 0.05f * gw * gw, 1e-10);
    mm_adamw_free(&opt);
    mm_model_free(&m);
}

/* Decent-DP's AccumAdamW (mm_adamw_accum_update), one coordinate followed
 * by hand in double for K = 3 over 7 steps: the moments stay put within an
 * accumulation and fold in the mean gradient at its end, the step uses the
 * fresh gradient on the slow moments, and the bias corrections count
 * accumulations, not steps. */
static void test_accum_by_hand(void **state)
{
    (void)state;
    const int K = 3;
    const double b1 = 0.9, b2 = 0.95, eps = 1e-3, lr = 0.05, wd = 0.1;
    const double g[7] = {0.5, -0.25, 1.0, 0.125, 0.75, -0.5, 0.25};
    float p = 1.0f, m = 0, v = 0, acc = 0;
    double P = 1.0, M = 0, V = 0, A = 0;
    for (int t = 1; t <= 7; t++) {
        float gf = (float)g[t - 1];
        mm_adamw_accum_update(&p, &gf, &m, &v, &acc, 1, t, K, (float)lr, (float)b1, (float)b2,
                              (float)eps, (float)wd);
        int k = (t + K - 1) / K;
        A += g[t - 1] / K;
        double mt = b1 * M + (1 - b1) * g[t - 1], vt = b2 * V + (1 - b2) * g[t - 1] * g[t - 1];
        P -= lr * (mt / (1 - pow(b1, k)) / (sqrt(vt / (1 - pow(b2, k))) + eps) + wd * P);
        if (t % K == 0) {
            M = b1 * M + (1 - b1) * A;
            V = b2 * V + (1 - b2) * A * A;
            A = 0;
        }
        assert_float_equal(p, P, 1e-5);
        assert_float_equal(m, M, 1e-6);
        assert_float_equal(v, V, 1e-7);
        assert_float_equal(acc, A, 1e-6);
    }
    assert_true(m != 0 && acc != 0); /* two folds done, one accumulation open */
}

/* With K = 1 AccumAdamW is AdamW: the same parameters after a few steps
 * of the whole model (to float rounding: the two loops group the division
 * by the bias corrections differently). */
static void test_accum_one_is_adamw(void **state)
{
    (void)state;
    mm_model a, b;
    char err[128];
    mm_model_config mc = tiny();
    assert_int_equal(mm_model_init(&a, &mc, 3, err, sizeof err), 0);
    assert_int_equal(mm_model_init(&b, &mc, 3, err, sizeof err), 0);
    mm_adamw oa;
    mm_adamw_config c = mm_adamw_config_default();
    c.warmup_steps = 2;
    c.total_steps = 10;
    assert_int_equal(mm_adamw_init(&oa, &c, a.n_params), 0);
    float *p = malloc(a.n_params * sizeof(float)), *mm = calloc(a.n_params, sizeof(float));
    float *vv = calloc(a.n_params, sizeof(float)), *acc = calloc(a.n_params, sizeof(float));
    assert_true(p && mm && vv && acc);
    memcpy(p, b.params, a.n_params * sizeof(float));
    for (int t = 1; t <= 4; t++) {
        for (size_t i = 0; i < a.n_params; i++)
            a.grads[i] = b.grads[i] = (float)(((long)(i * 7 + t) % 11) - 5) * 0.01f;
        c.grad_clip = 0;
        oa.cfg.grad_clip = 0;
        float lr = mm_adamw_lr(&c, t - 1);
        mm_adamw_step(&oa, &a, a.params, a.grads);
        for (int ti = 0; ti < MM_NUM_TENSORS; ti++) {
            mm_tensor_info info = mm_model_tensor(&b, ti);
            int mat = strcmp(info.name, "wte") == 0 || strcmp(info.name, "wpe") == 0 ||
                      strcmp(info.name, "qkvw") == 0 || strcmp(info.name, "attprojw") == 0 ||
                      strcmp(info.name, "fcw") == 0 || strcmp(info.name, "fcprojw") == 0;
            mm_adamw_accum_update(p + info.offset, b.grads + info.offset, mm + info.offset,
                                  vv + info.offset, acc + info.offset, info.count, t, 1, lr,
                                  c.beta1, c.beta2, c.eps, mat ? c.weight_decay : 0.0f);
        }
    }
    for (size_t i = 0; i < a.n_params; i++)
        assert_float_equal(p[i], a.params[i], 1e-6);
    free(p); free(mm); free(vv); free(acc);
    mm_adamw_free(&oa);
    mm_model_free(&a);
    mm_model_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule),
        cmocka_unit_test(test_clipping),
        cmocka_unit_test(test_decay_only_matrices),
        cmocka_unit_test(test_one_update_by_hand),
        cmocka_unit_test(test_accum_by_hand),
        cmocka_unit_test(test_accum_one_is_adamw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
