/* The C model against PyTorch on the same weights and input: logits, loss,
 * every gradient tensor, and the losses and gradient norms of the first 10
 * AdamW steps (schedule, clipping and weight decay included). The reference
 * (tests/fixtures/golden_tiny.bin) comes from scripts/make_golden.py, which
 * documents the format: magic "MMGOLD01", config, AdamW settings, tokens,
 * params, logits, loss, grads, step losses, step gradient norms.
 *
 * PyTorch computed in float64, C computes in float32. Tolerances:
 *   logits, gradients: every element |c - r| <= 1e-4 * (|r| + rms(r)),
 *     i.e. 1e-4 relative, with a floor scaled to the tensor so that entries
 *     near zero are judged against the tensor's size, not against zero;
 *   loss: 1e-5 relative;
 *   losses and gradient norms over 10 AdamW steps: 1e-4 relative (the
 *     float32 rounding differences grow a little with each update).
 * Any mismatch fails with a message naming the tensor and the index.
 * Run from the repository root, or set MM_GOLDEN to the fixture's path. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

#ifndef GOLDEN_PATH
#define GOLDEN_PATH "tests/fixtures/golden_tiny.bin"
#endif
#define RTOL 1e-4
#define LOSS_RTOL 1e-5
#define STEP_RTOL 1e-4

typedef struct {
    int32_t L, C, NH, Tctx, B, T, n_steps;
    int64_t n_params;
    float lr_max, lr_min, beta1, beta2, eps, wd, clip;
    int32_t warmup, total;
    uint8_t *tokens;
    float *params, *logits, loss, *grads, *losses, *norms;
} golden;

static int rd(FILE *f, void *p, size_t n)
{
    return fread(p, 1, n, f) == n ? 0 : -1;
}

/* Reads the fixture; the test is x86-64 only, so little-endian fields are
 * read directly. */
static int load(golden *g, const char *path)
{
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "golden: cannot open %s (run from the repository root)\n", path);
        return -1;
    }
    char magic[8];
    int32_t i7[7], i2[2];
    float f7[7];
    int bad = rd(f, magic, 8) || memcmp(magic, "MMGOLD01", 8) != 0 || rd(f, i7, sizeof i7) ||
              rd(f, &g->n_params, 8) || rd(f, f7, sizeof f7) || rd(f, i2, sizeof i2);
    if (!bad) {
        g->L = i7[0]; g->C = i7[1]; g->NH = i7[2]; g->Tctx = i7[3];
        g->B = i7[4]; g->T = i7[5]; g->n_steps = i7[6];
        g->lr_max = f7[0]; g->lr_min = f7[1]; g->beta1 = f7[2]; g->beta2 = f7[3];
        g->eps = f7[4]; g->wd = f7[5]; g->clip = f7[6];
        g->warmup = i2[0]; g->total = i2[1];
        bad = g->B < 1 || g->B > 64 || g->T < 1 || g->T > 64 || g->n_steps < 1 ||
              g->n_steps > 100 || g->n_params < 1 || g->n_params > 1000000;
    }
    if (!bad) {
        size_t nt = (size_t)g->B * (g->T + 1), nl = (size_t)g->B * g->T * MM_VOCAB;
        size_t np = (size_t)g->n_params;
        g->tokens = malloc(nt);
        g->params = malloc(np * 4);
        g->grads = malloc(np * 4);
        g->logits = malloc(nl * 4);
        g->losses = malloc((size_t)g->n_steps * 4);
        g->norms = malloc((size_t)g->n_steps * 4);
        bad = !g->tokens || !g->params || !g->grads || !g->logits || !g->losses || !g->norms ||
              rd(f, g->tokens, nt) || rd(f, g->params, np * 4) || rd(f, g->logits, nl * 4) ||
              rd(f, &g->loss, 4) || rd(f, g->grads, np * 4) ||
              rd(f, g->losses, (size_t)g->n_steps * 4) || rd(f, g->norms, (size_t)g->n_steps * 4);
    }
    fclose(f);
    if (bad)
        fprintf(stderr, "golden: %s is truncated or not a golden file\n", path);
    return bad ? -1 : 0;
}

static void unload(golden *g)
{
    free(g->tokens);
    free(g->params);
    free(g->grads);
    free(g->logits);
    free(g->losses);
    free(g->norms);
}

/* Number of elements outside tolerance; prints the worst one. */
static int compare(const char *name, const float *c, const float *r, size_t n)
{
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (double)r[i] * r[i];
    double rms = sqrt(ss / (double)n);
    int bad = 0;
    size_t worst = 0;
    double worst_ratio = 0;
    for (size_t i = 0; i < n; i++) {
        double tol = RTOL * (fabs((double)r[i]) + rms);
        double err = fabs((double)c[i] - (double)r[i]);
        if (!(err <= tol))
            bad++;
        double ratio = err / tol;
        if (!(ratio <= worst_ratio)) { /* NaN counts as worst */
            worst_ratio = ratio;
            worst = i;
        }
    }
    printf("golden %-9s %6zu values, worst %s[%zu]: C %.8g ref %.8g (%.2f of tolerance)\n",
           name, n, name, worst, (double)c[worst], (double)r[worst], worst_ratio);
    if (bad)
        fprintf(stderr, "golden MISMATCH in %s: %d of %zu values out of tolerance\n", name, bad, n);
    return bad;
}

static int close_rel(double c, double r, double rtol)
{
    return fabs(c - r) <= rtol * fabs(r);
}

static void test_golden(void **state)
{
    (void)state;
    golden g;
    const char *path = getenv("MM_GOLDEN") ? getenv("MM_GOLDEN") : GOLDEN_PATH;
    assert_int_equal(load(&g, path), 0);
    mm_model_config cfg = {.n_layer = g.L, .d_model = g.C, .n_head = g.NH, .n_ctx = g.Tctx};
    mm_model m;
    char err[128];
    assert_int_equal(mm_model_init(&m, &cfg, 1, err, sizeof err), 0);
    assert_int_equal((int64_t)m.n_params, g.n_params);
    memcpy(m.params, g.params, m.n_params * sizeof(float));

    int failures = 0;
    float loss = mm_model_forward(&m, g.tokens, g.B, g.T);
    printf("golden loss C %.8f ref %.8f\n", (double)loss, (double)g.loss);
    if (!close_rel(loss, g.loss, LOSS_RTOL)) {
        fprintf(stderr, "golden MISMATCH in loss: %.8f vs %.8f\n", (double)loss, (double)g.loss);
        failures++;
    }
    failures += compare("logits", mm_model_logits(&m), g.logits, (size_t)g.B * g.T * MM_VOCAB) != 0;
    mm_model_backward(&m);
    for (int i = 0; i < MM_NUM_TENSORS; i++) {
        mm_tensor_info ti = mm_model_tensor(&m, i);
        failures += compare(ti.name, m.grads + ti.offset, g.grads + ti.offset, ti.count) != 0;
    }

    mm_adamw_config oc = {
        .lr_max = g.lr_max, .lr_min = g.lr_min, .warmup_steps = g.warmup,
        .total_steps = g.total, .beta1 = g.beta1, .beta2 = g.beta2, .eps = g.eps,
        .weight_decay = g.wd, .grad_clip = g.clip,
    };
    mm_adamw opt;
    assert_int_equal(mm_adamw_init(&opt, &oc, m.n_params), 0);
    for (int s = 0; s < g.n_steps; s++) {
        float l = mm_model_forward(&m, g.tokens, g.B, g.T);
        mm_model_backward(&m);
        float norm = mm_adamw_step(&opt, &m, m.params, m.grads);
        int ok = close_rel(l, g.losses[s], STEP_RTOL) && close_rel(norm, g.norms[s], STEP_RTOL);
        printf("golden step %d: loss C %.6f ref %.6f, grad norm C %.6f ref %.6f%s\n", s,
               (double)l, (double)g.losses[s], (double)norm, (double)g.norms[s],
               ok ? "" : "  MISMATCH");
        if (!ok) {
            fprintf(stderr, "golden MISMATCH in AdamW step %d (loss or grad norm)\n", s);
            failures++;
        }
    }
    mm_adamw_free(&opt);
    mm_model_free(&m);
    unload(&g);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
