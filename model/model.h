/* A GPT-2-style byte-level transformer with every parameter in one flat
 * float buffer. Gossip averages that buffer and nothing else, so the model
 * owns no parameter memory outside it: every tensor is a view into it.
 *
 * Forward and backward are written out by hand; every matrix product goes
 * through cblas_sgemm. */
#ifndef MURMUR_MODEL_H
#define MURMUR_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define MM_VOCAB 256 /* byte-level */

typedef struct {
    int n_layer;
    int d_model;
    int n_head;
    int n_ctx;   /* context length (also the size of the position table) */
} mm_model_config;

/* 4 layers, width 128, 4 heads, context 64: about 0.8M parameters. */
mm_model_config mm_model_config_default(void);

/* NULL when valid, else a static message saying what is wrong. */
const char *mm_model_config_check(const mm_model_config *cfg);

/* Number of floats in the parameter vector for this config. */
size_t mm_model_param_count(const mm_model_config *cfg);

/* SHA-256 over a canonical encoding of the config and the parameter count:
 * two peers may average only when their fingerprints are equal. Encoding:
 * "murmur-gpt2-v1", then n_layer, d_model, n_head, n_ctx, MM_VOCAB as int32
 * little-endian, then the parameter count as uint64 little-endian. SHA-256
 * itself is base/sha256.h (mm_sha256, incremental mm_sha256_init/update/
 * final), for checkpoints too. */
#define MM_FINGERPRINT_LEN 32
void mm_model_fingerprint(const mm_model_config *cfg, uint8_t out[MM_FINGERPRINT_LEN]);

/* Views into the flat buffer, in the order they are laid out in it. */
typedef struct {
    float *wte;        /* [V, C] token embedding, tied to the LM head */
    float *wpe;        /* [T, C] position embedding */
    /* per layer, each [L, ...] */
    float *ln1w, *ln1b;          /* [L, C] */
    float *qkvw, *qkvb;          /* [L, 3C, C], [L, 3C] */
    float *attprojw, *attprojb;  /* [L, C, C], [L, C] */
    float *ln2w, *ln2b;          /* [L, C] */
    float *fcw, *fcb;            /* [L, 4C, C], [L, 4C] */
    float *fcprojw, *fcprojb;    /* [L, C, 4C], [L, C] */
    float *lnfw, *lnfb;          /* [C] */
} mm_tensors;

#define MM_NUM_TENSORS 16

typedef struct mm_model {
    mm_model_config cfg;
    size_t n_params;
    float *params;       /* the flat parameter vector x (n_params floats) */
    float *grads;        /* dL/dx, same layout (n_params floats) */
    mm_tensors p, g;     /* views into params and grads */
    struct mm_acts *acts; /* activations for the current (B, T), private */
    int B, T;            /* shape the activations are sized for */
    int threads;         /* threads forward and backward use (mm_model_set_threads) */
} mm_model;

/* A batch is cut into this many shards of whole sequences (fewer when B is
 * smaller), whose gradients are summed in order: the arithmetic depends on
 * B only, never on the number of threads. */
#define MM_SHARDS 2

/* Allocates params and grads and initialises the parameters
 * deterministically from seed (GPT-2 scheme). Returns 0, or -1 with a
 * message in err. */
int mm_model_init(mm_model *m, const mm_model_config *cfg, uint64_t seed,
                  char *err, size_t errlen);
void mm_model_free(mm_model *m);

/* Threads for forward and backward (default 1). With 2 the two shards of
 * a batch run at the same time, each calling OpenBLAS on one thread (this
 * sets OpenBLAS's thread count, process-wide, to 1); with more, the shards
 * run one after the other and OpenBLAS gets all the threads. */
void mm_model_set_threads(mm_model *m, int threads);

/* Name, offset and size of tensor i (0 <= i < MM_NUM_TENSORS), for tests,
 * checkpoints and tools. */
typedef struct { const char *name; size_t offset, count; } mm_tensor_info;
mm_tensor_info mm_model_tensor(const mm_model *m, int i);

/* Forward pass over B sequences of T+1 bytes each (tokens[b*(T+1) + t]):
 * inputs are bytes 0..T-1, targets 1..T. Returns the mean cross-entropy
 * (natural log). T <= cfg.n_ctx. Activations are (re)allocated on a shape
 * change only (about 42 MB for B=16, T=64 and the default config); NAN on
 * a bad shape or when that allocation fails. The model keeps a pointer to
 * tokens: they must stay unchanged until mm_model_backward. */
float mm_model_forward(mm_model *m, const uint8_t *tokens, int B, int T);

/* Backward pass for the last forward: overwrites m->grads (no need to
 * zero them). */
void mm_model_backward(mm_model *m);

/* Logits of the last forward, [B, T, V] (NULL before the first). */
const float *mm_model_logits(const mm_model *m);

/* Number of positions in the last forward whose top-1 prediction equals the
 * target byte (tokens as passed to that forward); out of B*T. */
long mm_model_correct(const mm_model *m, const uint8_t *tokens);
/* The same, and hit[b*T + t] = 1 where position t of row b was right, else
 * 0 (hit may be NULL). */
long mm_model_correct_at(const mm_model *m, const uint8_t *tokens, uint8_t *hit);

/* --- AdamW ------------------------------------------------------------- */

typedef struct {
    float lr_max, lr_min;     /* peak and final learning rate */
    long warmup_steps, total_steps; /* linear warm-up, then cosine to lr_min */
    float beta1, beta2, eps, weight_decay;
    float grad_clip;          /* clip the global gradient norm to this; 0: off */
    int accum_steps;          /* > 1: Decent-DP's AccumAdamW (docs/outer.md): the moments
                               * move every accum_steps steps, from the mean gradient of
                               * those steps; 0 or 1: AdamW */
} mm_adamw_config;

/* lr 1e-3 -> 1e-4, warm-up 100, total 5000, betas 0.9/0.95, eps 1e-8,
 * weight decay 0.1, clip 1.0. */
mm_adamw_config mm_adamw_config_default(void);

typedef struct {
    mm_adamw_config cfg;
    size_t n;
    float *m, *v;  /* first and second moments, n floats each */
    float *acc;    /* accum_steps > 1: the mean gradient so far of this accumulation */
    long step;     /* number of updates applied */
} mm_adamw;

int mm_adamw_init(mm_adamw *opt, const mm_adamw_config *cfg, size_t n);
void mm_adamw_free(mm_adamw *opt);

/* Learning rate for update number step (0-based): lr_max*(step+1)/warmup
 * during warm-up, then lr_min + (lr_max-lr_min)*(1+cos(pi*r))/2 with r =
 * (step-warmup)/(total-warmup) clamped to [0,1] (lr_max if total<=warmup). */
float mm_adamw_lr(const mm_adamw_config *cfg, long step);

/* One AdamW update of params from grads (clipping grads in place when
 * configured), at the learning rate of update number opt->step, which it
 * then increments. Weight decay applies to the 2-D weight matrices only (as
 * in GPT-2 and llm.c), which is why it needs the model's layout. Returns the
 * gradient norm before clipping (NAN, changing nothing, when opt was not
 * initialised for m->n_params floats). */
float mm_adamw_step(mm_adamw *opt, const mm_model *m, float *params, float *grads);

/* AccumAdamW's update of n floats at update number t (1-based) of
 * accumulations of K = accum_steps > 1 (Wang et al., ICLR 2025, Decent-DP's
 * optim.py; docs/outer.md):
 *   acc += g / K
 *   m~ = b1 m + (1 - b1) g,  v~ = b2 v + (1 - b2) g^2     (not stored)
 *   k = ceil(t / K),  p -= lr (m~ / (1 - b1^k) / (sqrt(v~ / (1 - b2^k)) + eps) + wd p)
 *   when t % K == 0:  m = b1 m + (1 - b1) acc,  v = b2 v + (1 - b2) acc^2,  acc = 0
 * Exposed for tests; mm_adamw_step calls it per tensor. */
void mm_adamw_accum_update(float *p, const float *g, float *m, float *v, float *acc, size_t n,
                           long t, int K, float lr, float b1, float b2, float eps, float wd);

#endif
