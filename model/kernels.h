/* The layers of the transformer, forward and backward side by side, one
 * plain function each (as in llm.c's train_gpt2.c). Internal to model/.
 * Shapes: N rows (= B*T positions), C channels; row-major throughout.
 * Backward functions ADD into parameter gradients (model.c zeroes them once
 * per step) and into dinp where the input feeds a residual stream; they
 * overwrite the other activation gradients. */
#ifndef MURMUR_KERNELS_H
#define MURMUR_KERNELS_H

#include <stdint.h>

/* out[b,t,:] = wte[tok[b,t],:] + wpe[t,:]; tokens have row stride T+1. */
void mm_encoder_forward(float *out, const uint8_t *tokens, const float *wte,
                        const float *wpe, int B, int T, int C);
void mm_encoder_backward(float *dwte, float *dwpe, const float *dout,
                         const uint8_t *tokens, int B, int T, int C);

void mm_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                          const float *w, const float *b, int N, int C);
void mm_layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
                           const float *inp, const float *w, const float *mean,
                           const float *rstd, int N, int C);

/* out = inp @ w^T + bias (bias may be NULL); w is [OC, C]. With res non-NULL,
 * out = res + inp @ w^T + bias: the residual add is fused, so the projection
 * itself is never stored. */
void mm_matmul_forward(float *out, const float *inp, const float *w, const float *bias,
                       const float *res, int N, int C, int OC);
/* dinp = dout @ w (overwritten); dw += dout^T @ inp; dbias += colsum(dout). */
void mm_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout,
                        const float *inp, const float *w, int N, int C, int OC);

/* pre = inp @ w^T + bias, out = gelu(pre) (tanh approximation). */
void mm_matmul_gelu_forward(float *pre, float *out, const float *inp, const float *w,
                            const float *bias, int N, int C, int OC);
/* d [N, OC] in place: dgelu -> dpre; and dbias += colsum(dpre), fused
 * here to save a pass over d (the fc bias gradient). */
void mm_gelu_backward(float *d, float *dbias, const float *pre, int N, int OC);

/* qkv [B,T,3C] -> out [B,T,C]; att [B,NH,T,T] keeps the causal softmax
 * probabilities (zero above the diagonal) for backward. */
void mm_attention_forward(float *out, float *att, const float *qkv,
                          int B, int T, int C, int NH);
/* dqkv overwritten; scratch holds T*T floats. */
void mm_attention_backward(float *dqkv, float *scratch, const float *dout,
                           const float *att, const float *qkv, int B, int T, int C, int NH);

/* probs = softmax(logits) per row; returns the mean cross-entropy against
 * the next byte (tokens with row stride T+1). */
float mm_crossentropy_forward(float *probs, const float *logits, const uint8_t *tokens,
                              int B, int T, int V);
/* dlogits = (probs - onehot(target)) / n_mean, n_mean the number of
 * positions the loss is a mean over (B*T, or more when these B rows are a
 * shard of a larger batch). */
void mm_crossentropy_backward(float *dlogits, const float *probs, const uint8_t *tokens,
                              int B, int T, int V, long n_mean);

#endif
