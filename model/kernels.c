/* Forward and backward of each layer. Matrix products go to cblas_sgemm;
 * the loops in between are written so that compilers vectorise them
 * (contiguous inner loops, restrict, sums in fixed lanes); the hot ones are
 * multiversioned (model/hot.h). */
#include "model/kernels.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "model/fastmath.h"
#include "model/hot.h"


/* Sums in LANES independent accumulators: vectorisable without
 * -ffast-math, in an order fixed by the source. */
#define LANES 16

static inline float sum_lanes(const float *restrict x, int n)
{
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++)
            acc[k] += x[i + k];
    float s = 0.0f;
    for (int k = 0; k < LANES; k++)
        s += acc[k];
    for (; i < n; i++)
        s += x[i];
    return s;
}

static inline float max_lanes(const float *restrict x, int n)
{
    float acc[LANES];
    int i = 0;
    float m = x[0];
    for (int k = 0; k < LANES; k++)
        acc[k] = m;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++)
            acc[k] = x[i + k] > acc[k] ? x[i + k] : acc[k];
    for (int k = 0; k < LANES; k++)
        m = acc[k] > m ? acc[k] : m;
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

/* --- embeddings ----------------------------------------------------------- */

void mm_encoder_forward(float *restrict out, const uint8_t *tokens, const float *restrict wte,
                        const float *restrict wpe, int B, int T, int C)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = out + ((long)b * T + t) * C;
            const float *e = wte + (long)tokens[(long)b * (T + 1) + t] * C;
            const float *p = wpe + (long)t * C;
            for (int i = 0; i < C; i++)
                o[i] = e[i] + p[i];
        }
}

void mm_encoder_backward(float *restrict dwte, float *restrict dwpe, const float *restrict dout,
                         const uint8_t *tokens, int B, int T, int C)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((long)b * T + t) * C;
            float *de = dwte + (long)tokens[(long)b * (T + 1) + t] * C;
            float *dp = dwpe + (long)t * C;
            for (int i = 0; i < C; i++) {
                de[i] += d[i];
                dp[i] += d[i];
            }
        }
}

/* --- layernorm ------------------------------------------------------------- */

MM_HOT
static void layernorm_forward_impl(float *restrict out, float *restrict mean, float *restrict rstd,
                                   const float *restrict inp, const float *restrict w,
                                   const float *restrict b, int N, int C)
{
    for (int r = 0; r < N; r++) {
        const float *x = inp + (long)r * C;
        float *o = out + (long)r * C;
        float m = sum_lanes(x, C) / (float)C;
        /* centred second pass: exact enough in float without Welford */
        for (int i = 0; i < C; i++)
            o[i] = (x[i] - m) * (x[i] - m);
        float s = 1.0f / sqrtf(sum_lanes(o, C) / (float)C + 1e-5f);
        for (int i = 0; i < C; i++)
            o[i] = (x[i] - m) * s * w[i] + b[i];
        mean[r] = m;
        rstd[r] = s;
    }
}

MM_HOT
static void layernorm_backward_impl(float *restrict dinp, float *restrict dw, float *restrict db,
                                    const float *restrict dout, const float *restrict inp,
                                    const float *restrict w, const float *restrict mean,
                                    const float *restrict rstd, int N, int C)
{
    float tmp[2 * 4096]; /* C <= 4096, checked by the config */
    float *dnorm = tmp, *prod = tmp + C;
    for (int r = 0; r < N; r++) {
        const float *d = dout + (long)r * C, *x = inp + (long)r * C;
        float *di = dinp + (long)r * C;
        float m = mean[r], s = rstd[r];
        for (int i = 0; i < C; i++) {
            float n = (x[i] - m) * s;
            dnorm[i] = w[i] * d[i];
            prod[i] = dnorm[i] * n;
            dw[i] += d[i] * n;
            db[i] += d[i];
        }
        float dmean = sum_lanes(dnorm, C) / (float)C;
        float dnm = sum_lanes(prod, C) / (float)C;
        for (int i = 0; i < C; i++) {
            float n = (x[i] - m) * s;
            di[i] += s * (dnorm[i] - dmean - n * dnm);
        }
    }
}

/* --- linear layers --------------------------------------------------------- */

MM_HOT
static void fill_rows(float *restrict out, const float *restrict bias,
                      const float *restrict res, int N, int OC)
{
    for (int r = 0; r < N; r++) {
        float *o = out + (long)r * OC;
        if (res) {
            const float *x = res + (long)r * OC;
            if (bias)
                for (int j = 0; j < OC; j++)
                    o[j] = x[j] + bias[j];
            else
                memcpy(o, x, sizeof(float) * (size_t)OC);
        } else {
            memcpy(o, bias, sizeof(float) * (size_t)OC);
        }
    }
}

void mm_matmul_forward(float *out, const float *inp, const float *w, const float *bias,
                       const float *res, int N, int C, int OC)
{
    assert(N > 0 && C > 0 && OC > 0);
    float beta = 0.0f;
    if (bias || res) {
        fill_rows(out, bias, res, N, OC);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C,
                1.0f, inp, C, w, C, beta, out, OC);
}

MM_HOT
static void colsum_add(float *restrict db, const float *restrict d, int N, int OC)
{
    for (int r = 0; r < N; r++) {
        const float *x = d + (long)r * OC;
        for (int j = 0; j < OC; j++)
            db[j] += x[j];
    }
}

void mm_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout,
                        const float *inp, const float *w, int N, int C, int OC)
{
    assert(N > 0 && C > 0 && OC > 0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC,
                1.0f, dout, OC, w, C, 0.0f, dinp, C);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N,
                1.0f, dout, OC, inp, C, 1.0f, dw, C);
    if (dbias)
        colsum_add(dbias, dout, N, OC);
}

MM_HOT
static void bias_gelu(float *restrict pre, float *restrict out, const float *restrict bias,
                      int N, int OC)
{
    for (int r = 0; r < N; r++) {
        float *p = pre + (long)r * OC, *o = out + (long)r * OC;
        for (int j = 0; j < OC; j++) {
            float x = p[j] + bias[j];
            p[j] = x;
            o[j] = mm_gelu(x);
        }
    }
}

void mm_matmul_gelu_forward(float *pre, float *out, const float *inp, const float *w,
                            const float *bias, int N, int C, int OC)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C,
                1.0f, inp, C, w, C, 0.0f, pre, OC);
    bias_gelu(pre, out, bias, N, OC);
}

MM_HOT
static void gelu_backward_impl(float *restrict d, float *restrict dbias,
                               const float *restrict pre, int N, int OC)
{
    for (int r = 0; r < N; r++) {
        float *dr = d + (long)r * OC;
        const float *x = pre + (long)r * OC;
        for (int j = 0; j < OC; j++) {
            float v = dr[j] * mm_gelu_grad(x[j]);
            dr[j] = v;
            dbias[j] += v;
        }
    }
}

/* --- attention ------------------------------------------------------------- */

/* Row t of a causal score matrix: softmax over columns 0..t, zeros after.
 * Each row is processed up to the next multiple of LANES past t with the
 * mask as a select, so every loop runs in whole vectors (variable-length
 * rows left half of the work in scalar tails) and the masked rest of the
 * row costs only a store of zeros. */
MM_HOT
static void causal_softmax(float *restrict s, int T)
{
    for (int t = 0; t < T; t++) {
        float *row = s + (long)t * T;
        int n = (t + LANES) / LANES * LANES;
        n = n < T ? n : T;
        for (int j = 0; j < n; j++)
            row[j] = j <= t ? row[j] : -1e30f;
        float m = max_lanes(row, n);
        for (int j = 0; j < n; j++) {
            float e = mm_expf(row[j] - m);
            row[j] = j <= t ? e : 0.0f;
        }
        float inv = 1.0f / sum_lanes(row, n);
        for (int j = 0; j < n; j++)
            row[j] *= inv;
        for (int j = n; j < T; j++)
            row[j] = 0.0f;
    }
}

void mm_attention_forward(float *out, float *att, const float *qkv,
                          int B, int T, int C, int NH)
{
    assert(NH > 0 && C % NH == 0 && B > 0 && T > 0); /* whole heads */
    int hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *q = qkv + (long)b * T * C3 + h * hs;
            const float *k = q + C, *v = q + 2 * C;
            float *s = att + ((long)b * NH + h) * T * T;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs,
                        scale, q, C3, k, C3, 0.0f, s, T);
            causal_softmax(s, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T,
                        1.0f, s, T, v, C3, 0.0f, out + (long)b * T * C + h * hs, C);
        }
}

/* dS = P * (dP - rowsum(P * dP)). P is zero above the diagonal, so rows
 * cut at the next multiple of LANES past t (as in causal_softmax) give the
 * causal result with no mask; the rest of each row is zeroed. */
MM_HOT
static void softmax_backward(float *restrict dp, const float *restrict p, int T)
{
    float tmp[4096];
    for (int t = 0; t < T; t++) {
        float *d = dp + (long)t * T;
        const float *pr = p + (long)t * T;
        int n = (t + LANES) / LANES * LANES;
        n = n < T ? n : T;
        for (int j = 0; j < n; j++)
            tmp[j] = pr[j] * d[j];
        float dot = sum_lanes(tmp, n);
        for (int j = 0; j < n; j++)
            d[j] = pr[j] * (d[j] - dot);
        for (int j = n; j < T; j++)
            d[j] = 0.0f;
    }
}

void mm_attention_backward(float *dqkv, float *scratch, const float *dout,
                           const float *att, const float *qkv, int B, int T, int C, int NH)
{
    assert(NH > 0 && C % NH == 0 && B > 0 && T > 0); /* whole heads */
    int hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *q = qkv + (long)b * T * C3 + h * hs;
            const float *k = q + C, *v = q + 2 * C;
            float *dq = dqkv + (long)b * T * C3 + h * hs;
            float *dk = dq + C, *dv = dq + 2 * C;
            const float *p = att + ((long)b * NH + h) * T * T;
            const float *dy = dout + (long)b * T * C + h * hs;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs,
                        1.0f, dy, C, v, C3, 0.0f, scratch, T);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T,
                        1.0f, p, T, dy, C, 0.0f, dv, C3);
            softmax_backward(scratch, p, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T,
                        scale, scratch, T, k, C3, 0.0f, dq, C3);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T,
                        scale, scratch, T, q, C3, 0.0f, dk, C3);
        }
}

/* --- loss ------------------------------------------------------------------ */

MM_HOT
static float crossentropy_forward_impl(float *restrict probs, const float *restrict logits,
                                       const uint8_t *tokens, int B, int T, int V)
{
    double total = 0.0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *l = logits + ((long)b * T + t) * V;
            float *p = probs + ((long)b * T + t) * V;
            float m = max_lanes(l, V);
            for (int j = 0; j < V; j++)
                p[j] = mm_expf(l[j] - m);
            float sum = sum_lanes(p, V), inv = 1.0f / sum;
            for (int j = 0; j < V; j++)
                p[j] *= inv;
            int target = tokens[(long)b * (T + 1) + t + 1];
            total += (double)logf(sum) + (double)m - (double)l[target];
        }
    return (float)(total / ((double)B * T));
}

MM_HOT
static void crossentropy_backward_impl(float *restrict dlogits, const float *restrict probs,
                                       const uint8_t *tokens, int B, int T, int V, long n_mean)
{
    float inv = 1.0f / (float)n_mean;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            long row = ((long)b * T + t) * V;
            for (int j = 0; j < V; j++)
                dlogits[row + j] = probs[row + j] * inv;
            dlogits[row + tokens[(long)b * (T + 1) + t + 1]] -= inv;
        }
}

/* Exported entry points. The clones are static because clang 14 does not
 * export the plain name of a target_clones function to other files. */

void mm_layernorm_forward(float *out, float *mean, float *rstd,
                          const float *inp, const float *w,
                          const float *b, int N, int C)
{
    layernorm_forward_impl(out, mean, rstd, inp, w, b, N, C);
}

void mm_layernorm_backward(float *dinp, float *dw, float *db,
                           const float *dout, const float *inp,
                           const float *w, const float *mean,
                           const float *rstd, int N, int C)
{
    layernorm_backward_impl(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}

void mm_gelu_backward(float *d, float *dbias, const float *pre, int N, int OC)
{
    gelu_backward_impl(d, dbias, pre, N, OC);
}

float mm_crossentropy_forward(float *probs, const float *logits,
                              const uint8_t *tokens, int B, int T, int V)
{
    return crossentropy_forward_impl(probs, logits, tokens, B, T, V);
}

void mm_crossentropy_backward(float *dlogits, const float *probs,
                              const uint8_t *tokens, int B, int T, int V, long n_mean)
{
    crossentropy_backward_impl(dlogits, probs, tokens, B, T, V, n_mean);
}
