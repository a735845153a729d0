/* The hand-written backward against central finite differences of the
 * forward, on a tiny model, for every parameter tensor; determinism of the
 * init; the fingerprint's dependence on every config field.
 *
 * The forward runs in float, so the finite difference is noisy: the step
 * h = 1e-2 (parameters are O(0.1..1)) keeps the rounding noise of the loss
 * (~1e-7 relative) far below the difference, and the truncation error of
 * the central difference is O(h^2). A coordinate passes when
 *     |numeric - analytic| <= 2e-2 * |analytic| + 1e-4.
 * A wrong factor, sign, transposition or missing term gives errors of the
 * order of the gradient itself (seen: scaling the GELU derivative's second
 * term by 0.95 or layernorm backward's projection term by 0.9 fails dozens
 * of coordinates); the passing model's worst relative error is ~4e-3. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/model.h"
#include "base/rng.h"

#define GC_B 2
#define GC_T 8
#define GC_H 1e-2
#define GC_RTOL 2e-2
#define GC_ATOL 1e-4
#define GC_SAMPLES 6 /* coordinates per tensor: the largest gradients + random */

static mm_model_config tiny(void)
{
    mm_model_config c = {.n_layer = 2, .d_model = 16, .n_head = 2, .n_ctx = GC_T};
    return c;
}

/* Random weights everywhere (biases and gains too): with zero biases and
 * unit gains some wrong gradients would still come out right. */
static void randomise(mm_model *m, uint64_t seed)
{
    mm_rng r;
    mm_rng_seed(&r, seed);
    for (int i = 0; i < MM_NUM_TENSORS; i++) {
        mm_tensor_info ti = mm_model_tensor(m, i);
        int gain = strcmp(ti.name, "ln1w") == 0 || strcmp(ti.name, "ln2w") == 0 ||
                   strcmp(ti.name, "lnfw") == 0;
        for (size_t k = 0; k < ti.count; k++)
            m->params[ti.offset + k] = (float)((gain ? 1.0 : 0.0) + 0.3 * mm_rng_normal(&r));
    }
}

static void make_tokens(uint8_t *tok, int n, uint64_t seed)
{
    mm_rng r;
    mm_rng_seed(&r, seed);
    for (int i = 0; i < n; i++)
        tok[i] = (uint8_t)mm_rng_below(&r, 256);
}

static void test_gradients_every_tensor(void **state)
{
    (void)state;
    mm_model m;
    char err[128];
    mm_model_config c = tiny();
    assert_int_equal(mm_model_init(&m, &c, 7, err, sizeof err), 0);
    randomise(&m, 11);
    uint8_t tok[GC_B * (GC_T + 1)];
    make_tokens(tok, (int)sizeof tok, 5);

    float loss = mm_model_forward(&m, tok, GC_B, GC_T);
    assert_true(isfinite(loss));
    mm_model_backward(&m);

    int failures = 0;
    double worst_rel = 0.0;
    mm_rng pick;
    mm_rng_seed(&pick, 3);
    for (int i = 0; i < MM_NUM_TENSORS; i++) {
        mm_tensor_info ti = mm_model_tensor(&m, i);
        size_t idx[GC_SAMPLES];
        /* the two largest |grad| first: where a bug shows most clearly */
        size_t best = 0, second = ti.count > 1 ? 1 : 0;
        for (size_t k = 0; k < ti.count; k++) {
            float gk = fabsf(m.grads[ti.offset + k]);
            if (gk > fabsf(m.grads[ti.offset + best])) {
                second = best;
                best = k;
            } else if (k != best && gk > fabsf(m.grads[ti.offset + second])) {
                second = k;
            }
        }
        idx[0] = best;
        idx[1] = second;
        for (int s = 2; s < GC_SAMPLES; s++)
            idx[s] = (size_t)mm_rng_below(&pick, ti.count);
        double tensor_max = 0.0;
        for (int s = 0; s < GC_SAMPLES; s++) {
            size_t k = ti.offset + idx[s];
            float analytic = m.grads[k];
            float saved = m.params[k];
            m.params[k] = (float)(saved + GC_H);
            double lp = mm_model_forward(&m, tok, GC_B, GC_T);
            m.params[k] = (float)(saved - GC_H);
            double lm = mm_model_forward(&m, tok, GC_B, GC_T);
            m.params[k] = saved;
            /* the actual perturbation, after rounding to float */
            double step = (double)(float)(saved + GC_H) - (double)(float)(saved - GC_H);
            double numeric = (lp - lm) / step;
            double diff = fabs(numeric - analytic);
            double rel = diff / (fabs(analytic) + 1e-12);
            if (fabs(analytic) > 1e-3 && rel > worst_rel)
                worst_rel = rel;
            if (diff > tensor_max)
                tensor_max = diff;
            if (diff > GC_RTOL * fabs(analytic) + GC_ATOL) {
                fprintf(stderr, "gradcheck FAIL %s[%zu]: analytic %.6g numeric %.6g\n",
                        ti.name, idx[s], analytic, numeric);
                failures++;
            }
        }
        printf("gradcheck %-9s max |num-ana| %.2e (|g|max %.2e)\n", ti.name, tensor_max,
               (double)fabsf(m.grads[ti.offset + best]));
    }
    printf("gradcheck worst relative error (|g| > 1e-3): %.2e\n", worst_rel);
    mm_model_free(&m);
    assert_int_equal(failures, 0);
}

static void test_init_deterministic(void **state)
{
    (void)state;
    mm_model a, b, d;
    char err[128];
    mm_model_config c = tiny();
    assert_int_equal(mm_model_init(&a, &c, 42, err, sizeof err), 0);
    assert_int_equal(mm_model_init(&b, &c, 42, err, sizeof err), 0);
    assert_int_equal(mm_model_init(&d, &c, 43, err, sizeof err), 0);
    assert_int_equal(a.n_params, mm_model_param_count(&c));
    assert_memory_equal(a.params, b.params, a.n_params * sizeof(float));
    assert_memory_not_equal(a.params, d.params, a.n_params * sizeof(float));
    /* GPT-2 scheme: gains 1, biases 0, weights spread about 0.02 */
    mm_tensor_info ln = mm_model_tensor(&a, 2), qb = mm_model_tensor(&a, 5);
    mm_tensor_info wte = mm_model_tensor(&a, 0), proj = mm_model_tensor(&a, 12);
    assert_string_equal(ln.name, "ln1w");
    assert_true(a.params[ln.offset] == 1.0f && a.params[ln.offset + ln.count - 1] == 1.0f);
    assert_true(a.params[qb.offset] == 0.0f);
    double s2 = 0, p2 = 0;
    for (size_t k = 0; k < wte.count; k++)
        s2 += (double)a.params[wte.offset + k] * a.params[wte.offset + k];
    for (size_t k = 0; k < proj.count; k++)
        p2 += (double)a.params[proj.offset + k] * a.params[proj.offset + k];
    double sd = sqrt(s2 / wte.count), psd = sqrt(p2 / proj.count);
    assert_true(sd > 0.018 && sd < 0.022);
    assert_true(psd > 0.018 / 2 && psd < 0.022 / 2); /* 1/sqrt(2L) = 1/2 */
    mm_model_free(&a);
    mm_model_free(&b);
    mm_model_free(&d);
}

static void test_layout_is_contiguous(void **state)
{
    (void)state;
    mm_model m;
    char err[128];
    mm_model_config c = mm_model_config_default();
    assert_int_equal(mm_model_init(&m, &c, 1, err, sizeof err), 0);
    size_t off = 0;
    for (int i = 0; i < MM_NUM_TENSORS; i++) {
        mm_tensor_info ti = mm_model_tensor(&m, i);
        assert_int_equal(ti.offset, off);
        off += ti.count;
    }
    assert_int_equal(off, m.n_params);
    assert_ptr_equal(m.p.lnfb + c.d_model, m.params + m.n_params);
    assert_ptr_equal(m.g.qkvw, m.grads + mm_model_tensor(&m, 4).offset);
    assert_null(mm_model_tensor(&m, MM_NUM_TENSORS).name);
    mm_model_free(&m);
}

static void test_fingerprint_fields(void **state)
{
    (void)state;
    mm_model_config base = mm_model_config_default();
    uint8_t f0[MM_FINGERPRINT_LEN], f1[MM_FINGERPRINT_LEN];
    mm_model_fingerprint(&base, f0);
    mm_model_fingerprint(&base, f1);
    assert_memory_equal(f0, f1, sizeof f0);
    for (int field = 0; field < 4; field++) {
        mm_model_config c = base;
        int *v = field == 0 ? &c.n_layer : field == 1 ? &c.d_model : field == 2 ? &c.n_head : &c.n_ctx;
        *v *= 2;
        mm_model_fingerprint(&c, f1);
        assert_memory_not_equal(f0, f1, sizeof f0);
    }
}

static void test_config_check(void **state)
{
    (void)state;
    mm_model_config c = mm_model_config_default();
    assert_null(mm_model_config_check(&c));
    c.n_head = 3; /* 128 % 3 != 0 */
    assert_non_null(mm_model_config_check(&c));
    c = mm_model_config_default();
    c.n_layer = 0;
    assert_non_null(mm_model_config_check(&c));
    mm_model m;
    char err[128] = "";
    assert_int_equal(mm_model_init(&m, &c, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "n_layer"));
    c = mm_model_config_default();
    assert_int_equal(mm_model_param_count(&c), 834304);
}

/* mm_model_correct reads the target of position t at tokens[b*(T+1)+t+1]:
 * targets made equal to the argmax at chosen positions count exactly those. */
static void test_correct_counts_argmax_hits(void **state)
{
    (void)state;
    mm_model m;
    char err[128];
    mm_model_config c = tiny();
    assert_int_equal(mm_model_init(&m, &c, 9, err, sizeof err), 0);
    randomise(&m, 4);
    uint8_t tok[GC_B * (GC_T + 1)], tgt[GC_B * (GC_T + 1)];
    make_tokens(tok, (int)sizeof tok, 8);
    assert_true(isfinite(mm_model_forward(&m, tok, GC_B, GC_T)));
    const float *lg = mm_model_logits(&m);
    assert_non_null(lg);
    long want = 0;
    for (int b = 0; b < GC_B; b++) {
        tgt[b * (GC_T + 1)] = 0;
        for (int t = 0; t < GC_T; t++) {
            const float *row = lg + ((size_t)b * GC_T + t) * MM_VOCAB;
            int best = 0;
            for (int j = 1; j < MM_VOCAB; j++)
                best = row[j] > row[best] ? j : best;
            int hit = (b * GC_T + t) % 3 == 0;
            want += hit;
            tgt[b * (GC_T + 1) + t + 1] = (uint8_t)(hit ? best : (best + 1) % 256);
        }
    }
    assert_int_equal(mm_model_correct(&m, tgt), want);
    mm_model_free(&m);
}

/* Switching shapes (training and evaluation batches) reuses or regrows the
 * activations without changing results. */
static void test_shape_changes(void **state)
{
    (void)state;
    mm_model m;
    char err[128];
    mm_model_config c = tiny();
    assert_int_equal(mm_model_init(&m, &c, 9, err, sizeof err), 0);
    uint8_t tok[4 * (GC_T + 1)];
    make_tokens(tok, (int)sizeof tok, 2);
    float a = mm_model_forward(&m, tok, 2, GC_T);
    float small = mm_model_forward(&m, tok, 1, 3);
    float big = mm_model_forward(&m, tok, 4, GC_T);
    float again = mm_model_forward(&m, tok, 2, GC_T);
    assert_true(isfinite(small) && isfinite(big));
    assert_true(a == again);
    assert_true(isnan(mm_model_forward(&m, tok, 1, GC_T + 1))); /* T > n_ctx */
    assert_true(isnan(mm_model_forward(&m, tok, 0, GC_T)));
    mm_model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients_every_tensor),
        cmocka_unit_test(test_init_deterministic),
        cmocka_unit_test(test_layout_is_contiguous),
        cmocka_unit_test(test_fingerprint_fields),
        cmocka_unit_test(test_config_check),
        cmocka_unit_test(test_correct_counts_argmax_hits),
        cmocka_unit_test(test_shape_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
