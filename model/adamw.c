/* AdamW with decoupled weight decay on the 2-D weight matrices only, global
 * gradient-norm clipping, and a linear warm-up followed by a cosine decay. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "model/hot.h"
#include "model/model.h"


mm_adamw_config mm_adamw_config_default(void)
{
    mm_adamw_config c = {
        .lr_max = 1e-3f, .lr_min = 1e-4f, .warmup_steps = 100, .total_steps = 5000,
        .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 1.0f,
    };
    return c;
}

int mm_adamw_init(mm_adamw *opt, const mm_adamw_config *cfg, size_t n)
{
    memset(opt, 0, sizeof *opt);
    opt->cfg = *cfg;
    opt->n = n;
    opt->m = calloc(n ? n : 1, sizeof(float));
    opt->v = calloc(n ? n : 1, sizeof(float));
    if (cfg->accum_steps > 1)
        opt->acc = calloc(n ? n : 1, sizeof(float));
    if (!opt->m || !opt->v || (cfg->accum_steps > 1 && !opt->acc)) {
        mm_adamw_free(opt);
        return -1;
    }
    return 0;
}

void mm_adamw_free(mm_adamw *opt)
{
    free(opt->m);
    free(opt->v);
    free(opt->acc);
    opt->m = opt->v = opt->acc = NULL;
}

float mm_adamw_lr(const mm_adamw_config *c, long step)
{
    if (step < 0)
        step = 0;
    if (step < c->warmup_steps)
        return c->lr_max * (float)(step + 1) / (float)c->warmup_steps;
    long span = c->total_steps - c->warmup_steps;
    if (span <= 0)
        return c->lr_max;
    double ratio = (double)(step - c->warmup_steps) / (double)span;
    if (ratio > 1.0)
        ratio = 1.0;
    double coeff = 0.5 * (1.0 + cos(3.14159265358979323846 * ratio));
    return (float)(c->lr_min + coeff * (c->lr_max - c->lr_min));
}

/* Sum of squares in 16 float lanes per block of 4096, blocks summed in
 * double: vectorisable, and exact enough for 10^8 parameters. */
MM_HOT
static double sumsq(const float *restrict g, size_t n)
{
    double total = 0.0;
    size_t i = 0;
    while (i < n) {
        size_t end = n - i > 4096 ? i + 4096 : n;
        float acc[16] = {0};
        for (; i + 16 <= end; i += 16)
            for (int k = 0; k < 16; k++)
                acc[k] += g[i + k] * g[i + k];
        for (; i < end; i++)
            acc[0] += g[i] * g[i];
        for (int k = 0; k < 16; k++)
            total += acc[k];
    }
    return total;
}

MM_HOT
static void scale_inplace(float *restrict g, size_t n, float s)
{
    for (size_t i = 0; i < n; i++)
        g[i] *= s;
}

MM_HOT
static void update(float *restrict p, const float *restrict g, float *restrict m,
                   float *restrict v, size_t n, float lr, float b1, float b2,
                   float bc1, float bc2, float eps, float wd)
{
    for (size_t i = 0; i < n; i++) {
        float mi = b1 * m[i] + (1.0f - b1) * g[i];
        float vi = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / bc1, vhat = vi / bc2;
        p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * p[i]);
    }
}

void mm_adamw_accum_update(float *p, const float *g, float *m, float *v, float *acc, size_t n,
                           long t, int K, float lr, float b1, float b2, float eps, float wd)
{
    long k = (t + K - 1) / K;
    float bc1 = 1.0f - powf(b1, (float)k), bc2 = 1.0f - powf(b2, (float)k);
    float invK = 1.0f / (float)K;
    bool fold = t % K == 0;
    for (size_t i = 0; i < n; i++) {
        acc[i] += g[i] * invK;
        float mt = b1 * m[i] + (1.0f - b1) * g[i];
        float vt = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        p[i] -= lr * (mt / bc1 / (sqrtf(vt / bc2) + eps) + wd * p[i]);
        if (fold) {
            m[i] = b1 * m[i] + (1.0f - b1) * acc[i];
            v[i] = b2 * v[i] + (1.0f - b2) * acc[i] * acc[i];
            acc[i] = 0.0f;
        }
    }
}

static int is_matrix(const char *name)
{
    static const char *const mats[] = {"wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw"};
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
        if (strcmp(name, mats[i]) == 0)
            return 1;
    return 0;
}

float mm_adamw_step(mm_adamw *opt, const mm_model *mdl, float *params, float *grads)
{
    const mm_adamw_config *c = &opt->cfg;
    bool accum = c->accum_steps > 1;
    if (opt->n != mdl->n_params || !opt->m || !opt->v || (accum && !opt->acc))
        return NAN; /* optimizer built for another model: touch nothing */
    float norm = (float)sqrt(sumsq(grads, opt->n));
    if (c->grad_clip > 0.0f && norm > c->grad_clip)
        scale_inplace(grads, opt->n, c->grad_clip / norm);
    float lr = mm_adamw_lr(c, opt->step);
    long t = opt->step + 1;
    float bc1 = 1.0f - powf(c->beta1, (float)t), bc2 = 1.0f - powf(c->beta2, (float)t);
    for (int i = 0; i < MM_NUM_TENSORS; i++) {
        mm_tensor_info ti = mm_model_tensor(mdl, i);
        float wd = is_matrix(ti.name) ? c->weight_decay : 0.0f;
        if (accum)
            mm_adamw_accum_update(params + ti.offset, grads + ti.offset, opt->m + ti.offset,
                                  opt->v + ti.offset, opt->acc + ti.offset, ti.count, t,
                                  c->accum_steps, lr, c->beta1, c->beta2, c->eps, wd);
        else
            update(params + ti.offset, grads + ti.offset, opt->m + ti.offset,
                   opt->v + ti.offset, ti.count, lr, c->beta1, c->beta2, bc1, bc2, c->eps, wd);
    }
    opt->step++;
    return norm;
}
