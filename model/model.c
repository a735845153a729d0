/* The model: config, the layout of the flat parameter buffer, GPT-2 init,
 * and forward/backward as a sequence of kernels (model/kernels.c).
 *
 * A batch is cut into MM_SHARDS shards of whole sequences (fewer when B is
 * smaller), each run through forward and backward on its own, its
 * gradient in a buffer of its own; the gradients are then summed in shard
 * order. With two threads (mm_model_set_threads) the shards run at the
 * same time, each calling BLAS on one thread; with one, one after the
 * other. The arithmetic is the same either way: results depend on B, not
 * on the number of threads. */
#include "model/model.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/kernels.h"
#include "base/rng.h"
#include "base/sha256.h"

/* Activations of one forward pass, kept for backward, plus the gradient
 * scratch of backward: all one allocation, sized for (B, T). */
struct mm_acts {
    float *mem;
    size_t cap;                     /* floats in mem */
    float *encoded;                 /* [B,T,C] */
    float *ln1, *ln1_mean, *ln1_rstd; /* [L,B,T,C], [L,B,T] x2 */
    float *qkv;                     /* [L,B,T,3C] */
    float *atty;                    /* [L,B,T,C] */
    float *att;                     /* [L,B,NH,T,T] */
    float *res2;                    /* [L,B,T,C] residual after attention */
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fch, *fch_gelu;          /* [L,B,T,4C] */
    float *res3;                    /* [L,B,T,C] residual after the MLP */
    float *lnf, *lnf_mean, *lnf_rstd;
    float *logits, *probs;          /* [B,T,V] */
    /* backward scratch */
    float *dres, *dbuf;             /* [B,T,C] */
    float *dqkv;                    /* [B,T,3C] */
    float *dfch;                    /* [B,T,4C] */
    float *datt;                    /* [MM_SHARDS,T,T] */
    float *dlogits;                 /* [B,T,V] */
    float *grads1;                  /* shards 1..: their gradients, [MM_SHARDS-1,n_params] */
    const uint8_t *tokens;          /* of the last forward (caller-owned) */
    float loss;
};

mm_model_config mm_model_config_default(void)
{
    mm_model_config c = {.n_layer = 4, .d_model = 128, .n_head = 4, .n_ctx = 64};
    return c;
}

const char *mm_model_config_check(const mm_model_config *c)
{
    if (c->n_layer < 1 || c->n_layer > 64)
        return "n_layer must be in 1..64";
    if (c->d_model < 1 || c->d_model > 4096)
        return "d_model must be in 1..4096";
    if (c->n_head < 1 || c->n_head > c->d_model)
        return "n_head must be in 1..d_model";
    if (c->d_model % c->n_head != 0)
        return "d_model must be a multiple of n_head";
    if (c->n_ctx < 1 || c->n_ctx > 4096)
        return "n_ctx must be in 1..4096";
    return NULL;
}

/* Sizes of the 16 tensors in layout order. */
static void tensor_sizes(const mm_model_config *cfg, size_t sz[MM_NUM_TENSORS])
{
    size_t L = (size_t)cfg->n_layer, C = (size_t)cfg->d_model, T = (size_t)cfg->n_ctx;
    size_t i = 0;
    sz[i++] = MM_VOCAB * C;   /* wte */
    sz[i++] = T * C;          /* wpe */
    sz[i++] = L * C;          /* ln1w */
    sz[i++] = L * C;          /* ln1b */
    sz[i++] = L * 3 * C * C;  /* qkvw */
    sz[i++] = L * 3 * C;      /* qkvb */
    sz[i++] = L * C * C;      /* attprojw */
    sz[i++] = L * C;          /* attprojb */
    sz[i++] = L * C;          /* ln2w */
    sz[i++] = L * C;          /* ln2b */
    sz[i++] = L * 4 * C * C;  /* fcw */
    sz[i++] = L * 4 * C;      /* fcb */
    sz[i++] = L * C * 4 * C;  /* fcprojw */
    sz[i++] = L * C;          /* fcprojb */
    sz[i++] = C;              /* lnfw */
    sz[i++] = C;              /* lnfb */
}

static const char *const tensor_names[MM_NUM_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb",
};

size_t mm_model_param_count(const mm_model_config *cfg)
{
    size_t sz[MM_NUM_TENSORS], n = 0;
    tensor_sizes(cfg, sz);
    for (int i = 0; i < MM_NUM_TENSORS; i++)
        n += sz[i];
    return n;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void mm_model_fingerprint(const mm_model_config *cfg, uint8_t out[MM_FINGERPRINT_LEN])
{
    /* "murmur-gpt2-v1", then n_layer, d_model, n_head, n_ctx, vocab as
     * int32 LE and the parameter count as uint64 LE. The tag names the
     * architecture and layout: change it when either changes. */
    uint8_t buf[14 + 5 * 4 + 8];
    memcpy(buf, "murmur-gpt2-v1", 14);
    put_le(buf + 14, (uint32_t)cfg->n_layer, 4);
    put_le(buf + 18, (uint32_t)cfg->d_model, 4);
    put_le(buf + 22, (uint32_t)cfg->n_head, 4);
    put_le(buf + 26, (uint32_t)cfg->n_ctx, 4);
    put_le(buf + 30, MM_VOCAB, 4);
    put_le(buf + 34, mm_model_param_count(cfg), 8);
    mm_sha256(buf, sizeof buf, out);
}

static void set_views(mm_tensors *t, float *base, const mm_model_config *cfg)
{
    size_t sz[MM_NUM_TENSORS];
    tensor_sizes(cfg, sz);
    float **ptrs[MM_NUM_TENSORS] = {
        &t->wte, &t->wpe, &t->ln1w, &t->ln1b, &t->qkvw, &t->qkvb, &t->attprojw,
        &t->attprojb, &t->ln2w, &t->ln2b, &t->fcw, &t->fcb, &t->fcprojw,
        &t->fcprojb, &t->lnfw, &t->lnfb,
    };
    for (int i = 0; i < MM_NUM_TENSORS; i++) {
        *ptrs[i] = base;
        base += sz[i];
    }
}

mm_tensor_info mm_model_tensor(const mm_model *m, int i)
{
    mm_tensor_info info = {NULL, 0, 0};
    if (i < 0 || i >= MM_NUM_TENSORS)
        return info;
    size_t sz[MM_NUM_TENSORS], off = 0;
    tensor_sizes(&m->cfg, sz);
    for (int k = 0; k < i; k++)
        off += sz[k];
    info.name = tensor_names[i];
    info.offset = off;
    info.count = sz[i];
    return info;
}

/* 64-byte aligned so that vector loads never split cache lines */
static float *alloc_floats(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, (n ? n : 1) * sizeof(float)) != 0)
        return NULL;
    return p;
}

int mm_model_init(mm_model *m, const mm_model_config *cfg, uint64_t seed,
                  char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    const char *bad = mm_model_config_check(cfg);
    if (bad) {
        snprintf(err, errlen, "model config: %s", bad);
        return -1;
    }
    m->cfg = *cfg;
    m->n_params = mm_model_param_count(cfg);
    m->params = alloc_floats(m->n_params);
    m->grads = alloc_floats(m->n_params);
    if (!m->params || !m->grads) {
        snprintf(err, errlen, "model: out of memory for %zu parameters", m->n_params);
        mm_model_free(m);
        return -1;
    }
    set_views(&m->p, m->params, cfg);
    set_views(&m->g, m->grads, cfg);
    memset(m->grads, 0, m->n_params * sizeof(float));

    /* GPT-2: weights N(0, 0.02), the two projections into the residual
     * stream scaled by 1/sqrt(2L), biases 0, layernorm gains 1. One normal
     * draw per weight, in layout order, so the init is a function of the
     * seed and the config only. */
    mm_rng rng;
    mm_rng_seed(&rng, seed);
    float resid_std = 0.02f / sqrtf(2.0f * (float)cfg->n_layer);
    for (int i = 0; i < MM_NUM_TENSORS; i++) {
        mm_tensor_info ti = mm_model_tensor(m, i);
        float *x = m->params + ti.offset;
        const char *nm = ti.name;
        size_t len = strlen(nm);
        if (strcmp(nm, "ln1w") == 0 || strcmp(nm, "ln2w") == 0 || strcmp(nm, "lnfw") == 0) {
            for (size_t k = 0; k < ti.count; k++)
                x[k] = 1.0f;
        } else if (nm[len - 1] == 'b') {
            memset(x, 0, ti.count * sizeof(float));
        } else {
            float sd = (strcmp(nm, "attprojw") == 0 || strcmp(nm, "fcprojw") == 0)
                           ? resid_std : 0.02f;
            for (size_t k = 0; k < ti.count; k++)
                x[k] = (float)(sd * mm_rng_normal(&rng));
        }
    }
    return 0;
}

static void free_acts(mm_model *m)
{
    if (m->acts) {
        free(m->acts->mem);
        free(m->acts);
        m->acts = NULL;
    }
    m->B = m->T = 0;
}

void mm_model_free(mm_model *m)
{
    free(m->params);
    free(m->grads);
    free_acts(m);
    m->params = m->grads = NULL;
}

#define ACT_PAD 64 /* floats */

/* Lays out the activations for (B, T) in the existing block when it is big
 * enough (so alternating training and evaluation shapes costs nothing),
 * else in a new one. */
static int alloc_acts(mm_model *m, int B, int T)
{
    struct mm_acts *a = m->acts;
    if (!a) {
        a = calloc(1, sizeof *a);
        if (!a)
            return -1;
        m->acts = a;
    }
    float *mem = a->mem;
    size_t cap = a->cap;
    memset(a, 0, sizeof *a);
    a->mem = mem;
    a->cap = cap;
    size_t L = (size_t)m->cfg.n_layer, C = (size_t)m->cfg.d_model;
    size_t NH = (size_t)m->cfg.n_head, N = (size_t)B * (size_t)T, V = MM_VOCAB;
    struct { float **p; size_t n; } plan[] = {
        {&a->encoded, N * C},
        {&a->ln1, L * N * C}, {&a->ln1_mean, L * N}, {&a->ln1_rstd, L * N},
        {&a->qkv, L * N * 3 * C}, {&a->atty, L * N * C},
        {&a->att, L * (size_t)B * NH * (size_t)T * (size_t)T},
        {&a->res2, L * N * C},
        {&a->ln2, L * N * C}, {&a->ln2_mean, L * N}, {&a->ln2_rstd, L * N},
        {&a->fch, L * N * 4 * C}, {&a->fch_gelu, L * N * 4 * C},
        {&a->res3, L * N * C},
        {&a->lnf, N * C}, {&a->lnf_mean, N}, {&a->lnf_rstd, N},
        {&a->logits, N * V}, {&a->probs, N * V},
        {&a->dres, N * C}, {&a->dbuf, N * C}, {&a->dqkv, N * 3 * C},
        {&a->dfch, N * 4 * C}, {&a->datt, MM_SHARDS * (size_t)T * (size_t)T},
        {&a->dlogits, N * V}, {&a->grads1, (MM_SHARDS - 1) * m->n_params},
    };
    size_t n_plan = sizeof plan / sizeof plan[0], total = 0;
    /* Each array starts on a 64-byte boundary, then 256 bytes more: the
     * sizes here are multiples of 4 KiB, and streams at equal offsets modulo
     * 4 KiB (fch and fch_gelu, read and written in one loop) falsely alias
     * in the store buffer. */
    for (size_t i = 0; i < n_plan; i++)
        total += ((plan[i].n + 15) & ~(size_t)15) + ACT_PAD;
    if (total > a->cap) {
        free(a->mem);
        a->cap = 0;
        a->mem = alloc_floats(total);
        if (!a->mem) {
            free_acts(m);
            return -1;
        }
        a->cap = total;
    }
    float *p = a->mem;
    for (size_t i = 0; i < n_plan; i++) {
        *plan[i].p = p;
        p += ((plan[i].n + 15) & ~(size_t)15) + ACT_PAD;
    }
    m->B = B;
    m->T = T;
    return 0;
}

/* Sequences [b0, b0 + Bs) of shard s of a batch of B: the first B % n
 * shards get one more. */
static void shard_range(int B, int n, int s, int *b0, int *Bs)
{
    int q = B / n, r = B % n;
    *Bs = q + (s < r);
    *b0 = s * q + (s < r ? s : r);
}

static int shard_count(int B)
{
    return B < MM_SHARDS ? B : MM_SHARDS;
}

/* Forward of sequences [b0, b0 + Bs) of the batch the activations are
 * sized for; returns their mean loss. Every activation is [.., B, T, ..]
 * per layer, so a shard is the rows from b0 * T on in each. */
static float forward_shard(mm_model *m, int b0, int Bs)
{
    struct mm_acts *a = m->acts;
    const mm_tensors *p = &m->p;
    int B = m->B, T = m->T, L = m->cfg.n_layer, C = m->cfg.d_model, NH = m->cfg.n_head;
    int N = B * T, Ns = Bs * T;
    size_t NC = (size_t)N * C, o = (size_t)b0 * T, att_l = (size_t)B * NH * T * T;
    const uint8_t *tokens = a->tokens + (size_t)b0 * (T + 1);

    mm_encoder_forward(a->encoded + o * C, tokens, p->wte, p->wpe, Bs, T, C);
    for (int l = 0; l < L; l++) {
        const float *res = (l == 0 ? a->encoded : a->res3 + (l - 1) * NC) + o * C;
        float *ln1 = a->ln1 + l * NC + o * C, *qkv = a->qkv + (l * NC + o * C) * 3;
        float *atty = a->atty + l * NC + o * C;
        float *att = a->att + l * att_l + o * NH * T;
        float *res2 = a->res2 + l * NC + o * C, *ln2 = a->ln2 + l * NC + o * C;
        float *res3 = a->res3 + l * NC + o * C;
        float *fch = a->fch + (l * NC + o * C) * 4, *fchg = a->fch_gelu + (l * NC + o * C) * 4;
        size_t lc = (size_t)l * C, ln = (size_t)l * N + o;

        mm_layernorm_forward(ln1, a->ln1_mean + ln, a->ln1_rstd + ln, res, p->ln1w + lc,
                             p->ln1b + lc, Ns, C);
        mm_matmul_forward(qkv, ln1, p->qkvw + lc * 3 * C, p->qkvb + lc * 3, NULL, Ns, C, 3 * C);
        mm_attention_forward(atty, att, qkv, Bs, T, C, NH);
        mm_matmul_forward(res2, atty, p->attprojw + lc * C, p->attprojb + lc, res, Ns, C, C);
        mm_layernorm_forward(ln2, a->ln2_mean + ln, a->ln2_rstd + ln, res2, p->ln2w + lc,
                             p->ln2b + lc, Ns, C);
        mm_matmul_gelu_forward(fch, fchg, ln2, p->fcw + lc * 4 * C, p->fcb + lc * 4, Ns, C, 4 * C);
        mm_matmul_forward(res3, fchg, p->fcprojw + lc * 4 * C, p->fcprojb + lc, res2, Ns, 4 * C,
                          C);
    }
    mm_layernorm_forward(a->lnf + o * C, a->lnf_mean + o, a->lnf_rstd + o,
                         a->res3 + (L - 1) * NC + o * C, p->lnfw, p->lnfb, Ns, C);
    mm_matmul_forward(a->logits + o * MM_VOCAB, a->lnf + o * C, p->wte, NULL, NULL, Ns, C,
                      MM_VOCAB);
    return mm_crossentropy_forward(a->probs + o * MM_VOCAB, a->logits + o * MM_VOCAB, tokens, Bs,
                                   T, MM_VOCAB);
}

/* Backward of sequences [b0, b0 + Bs): their gradient (of the whole
 * batch's mean loss) into gbuf, n_params floats in the parameters' layout
 * that this shard alone writes; datt is its T x T scratch. */
static void backward_shard(mm_model *m, int b0, int Bs, float *gbuf, float *datt)
{
    mm_tensors gv;
    set_views(&gv, gbuf, &m->cfg);
    const mm_tensors *g = &gv;
    struct mm_acts *a = m->acts;
    const mm_tensors *p = &m->p;
    int B = m->B, T = m->T, L = m->cfg.n_layer, C = m->cfg.d_model, NH = m->cfg.n_head;
    int N = B * T, Ns = Bs * T;
    size_t NC = (size_t)N * C, o = (size_t)b0 * T, oc = o * C, att_l = (size_t)B * NH * T * T;
    const uint8_t *tokens = a->tokens + (size_t)b0 * (T + 1);
    float *dres = a->dres + oc, *dbuf = a->dbuf + oc, *dqkv = a->dqkv + 3 * oc;
    float *dfch = a->dfch + 4 * oc, *dlogits = a->dlogits + o * MM_VOCAB;

    memset(gbuf, 0, m->n_params * sizeof(float));
    mm_crossentropy_backward(dlogits, a->probs + o * MM_VOCAB, tokens, Bs, T, MM_VOCAB, (long)N);
    mm_matmul_backward(dbuf, g->wte, NULL, dlogits, a->lnf + oc, p->wte, Ns, C, MM_VOCAB);
    memset(dres, 0, (size_t)Ns * C * sizeof(float));
    mm_layernorm_backward(dres, g->lnfw, g->lnfb, dbuf, a->res3 + (L - 1) * NC + oc, p->lnfw,
                          a->lnf_mean + o, a->lnf_rstd + o, Ns, C);

    for (int l = L - 1; l >= 0; l--) {
        const float *res = (l == 0 ? a->encoded : a->res3 + (l - 1) * NC) + oc;
        const float *ln1 = a->ln1 + l * NC + oc, *qkv = a->qkv + (l * NC + oc) * 3;
        const float *atty = a->atty + l * NC + oc, *att = a->att + l * att_l + o * NH * T;
        const float *res2 = a->res2 + l * NC + oc, *ln2 = a->ln2 + l * NC + oc;
        const float *fch = a->fch + (l * NC + oc) * 4, *fchg = a->fch_gelu + (l * NC + oc) * 4;
        size_t lc = (size_t)l * C, ln = (size_t)l * N + o;

        /* dres is the gradient of res3, which is also that of the MLP output */
        mm_matmul_backward(dfch, g->fcprojw + lc * 4 * C, g->fcprojb + lc, dres, fchg,
                           p->fcprojw + lc * 4 * C, Ns, 4 * C, C);
        mm_gelu_backward(dfch, g->fcb + lc * 4, fch, Ns, 4 * C);
        mm_matmul_backward(dbuf, g->fcw + lc * 4 * C, NULL, dfch, ln2, p->fcw + lc * 4 * C, Ns, C,
                           4 * C);
        mm_layernorm_backward(dres, g->ln2w + lc, g->ln2b + lc, dbuf, res2, p->ln2w + lc,
                              a->ln2_mean + ln, a->ln2_rstd + ln, Ns, C);
        /* dres is now the gradient of res2 (= of the attention output) */
        mm_matmul_backward(dbuf, g->attprojw + lc * C, g->attprojb + lc, dres, atty,
                           p->attprojw + lc * C, Ns, C, C);
        mm_attention_backward(dqkv, datt, dbuf, att, qkv, Bs, T, C, NH);
        mm_matmul_backward(dbuf, g->qkvw + lc * 3 * C, g->qkvb + lc * 3, dqkv, ln1,
                           p->qkvw + lc * 3 * C, Ns, C, 3 * C);
        mm_layernorm_backward(dres, g->ln1w + lc, g->ln1b + lc, dbuf, res, p->ln1w + lc,
                              a->ln1_mean + ln, a->ln1_rstd + ln, Ns, C);
    }
    mm_encoder_backward(g->wte, g->wpe, dres, tokens, Bs, T, C);
}

/* One shard's work, on the calling thread or a helper. */
typedef struct {
    mm_model *m;
    int shard, n_shards;
    int backward;       /* 0: forward (loss set), 1: backward */
    float loss;
} shard_job;

static void run_job(shard_job *j)
{
    mm_model *m = j->m;
    int b0, Bs;
    shard_range(m->B, j->n_shards, j->shard, &b0, &Bs);
    if (!j->backward) {
        j->loss = forward_shard(m, b0, Bs);
        return;
    }
    float *datt = m->acts->datt + (size_t)j->shard * m->T * m->T;
    float *gbuf = j->shard == 0 ? m->grads
                                : m->acts->grads1 + (size_t)(j->shard - 1) * m->n_params;
    backward_shard(m, b0, Bs, gbuf, datt);
}

static void *job_thread(void *arg)
{
    run_job(arg);
    return NULL;
}

/* Every shard of the batch: the last ones on helper threads when the model
 * has threads for them, else all here, in order. */
static void run_shards(mm_model *m, shard_job *jobs, int n)
{
    pthread_t tid[MM_SHARDS];
    int started[MM_SHARDS] = {0};
    int helpers = m->threads > 1 && m->threads <= MM_SHARDS ? m->threads - 1 : 0;
    for (int s = 1; s < n && s <= helpers; s++)
        started[s] = pthread_create(&tid[s], NULL, job_thread, &jobs[s]) == 0;
    run_job(&jobs[0]);
    for (int s = 1; s < n; s++) {
        if (started[s])
            pthread_join(tid[s], NULL);
        else
            run_job(&jobs[s]);
    }
}

void mm_model_set_threads(mm_model *m, int threads)
{
    m->threads = threads < 1 ? 1 : threads;
    /* two shards on two threads: each calls BLAS on its own thread only */
    if (m->threads > 1 && m->threads <= MM_SHARDS)
        openblas_set_num_threads(1);
    else
        openblas_set_num_threads(m->threads);
}

float mm_model_forward(mm_model *m, const uint8_t *tokens, int B, int T)
{
    if (B < 1 || T < 1 || T > m->cfg.n_ctx)
        return NAN;
    if ((!m->acts || m->B != B || m->T != T) && alloc_acts(m, B, T) != 0)
        return NAN;
    assert(m->B == B && m->T == T);
    m->acts->tokens = tokens;
    int n = shard_count(B);
    shard_job jobs[MM_SHARDS];
    for (int s = 0; s < n; s++)
        jobs[s] = (shard_job){.m = m, .shard = s, .n_shards = n, .backward = 0};
    run_shards(m, jobs, n);
    /* the batch's mean: the shards' means weighted by their sequences */
    double total = 0;
    for (int s = 0; s < n; s++) {
        int b0, Bs;
        shard_range(B, n, s, &b0, &Bs);
        total += (double)jobs[s].loss * Bs;
    }
    m->acts->loss = (float)(total / B);
    return m->acts->loss;
}

void mm_model_backward(mm_model *m)
{
    struct mm_acts *a = m->acts;
    if (!a || !a->tokens)
        return;
    /* the activations are those of the last forward, for its B x T */
    assert(m->B >= 1 && m->T >= 1 && m->T <= m->cfg.n_ctx);
    int n = shard_count(m->B);
    shard_job jobs[MM_SHARDS];
    for (int s = 0; s < n; s++)
        jobs[s] = (shard_job){.m = m, .shard = s, .n_shards = n, .backward = 1};
    run_shards(m, jobs, n);
    /* the batch's gradient: shard 0's, plus the others' in order */
    for (int s = 1; s < n; s++) {
        const float *restrict src = a->grads1 + (size_t)(s - 1) * m->n_params;
        float *restrict dst = m->grads;
        for (size_t i = 0; i < m->n_params; i++)
            dst[i] += src[i];
    }
}

const float *mm_model_logits(const mm_model *m)
{
    return m->acts ? m->acts->logits : NULL;
}

long mm_model_correct(const mm_model *m, const uint8_t *tokens)
{
    return mm_model_correct_at(m, tokens, NULL);
}

long mm_model_correct_at(const mm_model *m, const uint8_t *tokens, uint8_t *hit)
{
    if (!m->acts)
        return 0;
    const float *lg = m->acts->logits;
    int B = m->B, T = m->T;
    long correct = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *row = lg + ((size_t)b * T + t) * MM_VOCAB;
            int best = 0;
            for (int j = 1; j < MM_VOCAB; j++)
                if (row[j] > row[best])
                    best = j;
            int right = best == tokens[(size_t)b * (T + 1) + t + 1];
            correct += right;
            if (hit)
                hit[(size_t)b * T + t] = (uint8_t)right;
        }
    return correct;
}
