/* The outer optimizer of DiLoCo-style training (docs/outer.md): numbers
 * in, numbers out, on flat float vectors, with no model, network or peers.
 *
 * A peer keeps outer parameters o and an outer momentum buffer m beside its
 * inner parameters x. After a round's averaging, x holds what the plain
 * algorithm would hold,
 *
 *     x = y + d,
 *
 * y the average (all-reduce) or the gossip mix of the inner parameters the
 * peers sent, d the local progress not in that average (the round's local
 * steps while the vector travelled; 0 when the steps ran before the send).
 * The outer step treats Delta = o - y as the pseudo-gradient:
 *
 *     m <- mu_k m + Delta
 *     o <- o - lr (Delta + mu_k m)          (Nesterov, as PyTorch SGD)
 *     x <- o + d
 *
 * computed as o' = y + (1 - lr) Delta - lr mu_k m, so that lr = 1 and
 * mu = 0 leave x bit for bit what the plain algorithm computed. */
#ifndef MURMUR_OUTER_H
#define MURMUR_OUTER_H

#include <stddef.h>

typedef enum { MM_OUTER_DECAY_NONE, MM_OUTER_DECAY_LINEAR, MM_OUTER_DECAY_COSINE } mm_outer_decay;

/* The outer step: DiLoCo's Nesterov, or NoLoCo's (below). */
typedef enum { MM_OUTER_NESTEROV, MM_OUTER_NOLOCO } mm_outer_kind;

typedef struct {
    mm_outer_kind kind;
    float lr;                /* outer learning rate, > 0 (NoLoCo's beta) */
    float momentum;          /* mu, in [0, 1) */
    long warmup;             /* momentum warm-up: mu_k = mu * k / warmup for k < warmup */
    mm_outer_decay decay;    /* momentum decay over the last part of the run */
    double decay_from;       /* ... from outer step floor(decay_from * total), in [0, 1) */
    float gamma;             /* NoLoCo's gamma, > 0: how hard the outer parameters are
                              * pulled to the group's */
} mm_outer_config;

/* The momentum of outer step k (0-based) of a run of `total` outer steps:
 *   warm-up:  w_k = min(1, k / warmup)             (1 when warmup = 0)
 *   decay:    k0 = floor(decay_from * total), r = (k - k0) / (total - k0) for k >= k0
 *             linear: f_k = 1 - r;  cosine: f_k = (1 + cos(pi r)) / 2;  f_k = 1 before k0
 *   mu_k = mu * w_k * f_k                           (in double, then rounded to float) */
float mm_outer_momentum(const mm_outer_config *c, long k, long total);

/* One outer step on n floats with momentum mu (mm_outer_momentum), in
 * float, in this order per element:
 *   y = x - d;  Delta = o - y;  m = mu m + Delta;
 *   x = x + ((1 - lr) Delta - (lr mu) m);  o = x - d
 * x: in, the plain algorithm's result y + d; out, o' + d. d may be NULL
 * (zero: then o' = x'). */
void mm_outer_step(float *x, float *o, float *m, const float *d, size_t n, float lr, float mu);

/* NoLoCo (Kolehmainen et al., arXiv 2506.10911; docs/outer.md "NoLoCo"):
 * after the local steps each peer averages with a group (one random
 * partner), and its outer parameters phi (o here) and momentum delta (m)
 * follow, with theta = x its inner parameters and Delta = phi - theta,
 *
 *     delta <- alpha delta - beta mean_G(Delta) - gamma (phi - mean_G(phi))
 *     phi   <- phi + delta;  theta <- phi
 *
 * alpha the momentum (mu_k of the schedule), beta the outer lr. It needs
 * the group's mean of Delta and of phi; murmur sends one vector, their
 * combination
 *
 *     s = theta + (1 - beta / gamma) (phi - theta)      (mm_outer_noloco_send)
 *
 * whose group mean y makes the step delta <- alpha delta + gamma (y - phi)
 * (mm_outer_noloco_step): the same in exact arithmetic, for any mixing
 * weights W in place of the group mean. beta = gamma sends theta itself.
 * In float, per element: s = x + k (o - x) with k = 1 - beta / gamma. */
void mm_outer_noloco_send(float *s, const float *x, const float *o, size_t n, float beta,
                          float gamma);

/* NoLoCo's step after the mix, per element, in float, in this order:
 *   y = x - d;  a = y - o;  m = alpha m + gamma a;  x = y + (m - a);  o = x
 * x: in, the mix of the sent vectors s plus d = x - s (the mix keeps what
 * was not sent: gossip/mix.h), so y is the group's mean of s; out, the new
 * phi (NoLoCo runs the local steps first: theta <- phi). o = phi + m in
 * exact arithmetic; written as y + (m - a) so that alpha = 0, gamma = 1
 * leaves x bit for bit the mix. d may be NULL (zero: s was x). */
void mm_outer_noloco_step(float *x, float *o, float *m, const float *d, size_t n, float alpha,
                          float gamma);

/* "none", "linear:F" or "cosine:F" (F in [0, 1)) into c->decay and
 * c->decay_from; 0, or -1 with the reason in err. */
int mm_outer_parse_decay(const char *s, mm_outer_config *c, char *err, size_t errlen);

/* The decay as the parser reads it: "none", "linear:0.5", ... */
void mm_outer_decay_spec(const mm_outer_config *c, char *out, size_t len);

/* The settings in a few words, for people (the report's header, the
 * Prometheus endpoint): "lr 0.7, momentum 0.9, warm-up 10, decay
 * cosine:0.5", the schedules only when on. Returns strlen, as snprintf. */
int mm_outer_describe(const mm_outer_config *c, char *out, size_t len);

#endif
