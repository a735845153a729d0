/* The arithmetic of averaging over flat float vectors. Kept apart from the
 * transport and the model so it can be tested on vectors of any size. */
#ifndef MURMUR_MIX_H
#define MURMUR_MIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gossip/robust.h"

/* What the f64 weight a vector travels with may be (docs/protocol.md 3.2):
 * each algorithm's rule, which the mix enforces on what it mixes and the
 * wire on every vector it receives (murmur node installs
 * mm_mix_weight_ok as the transport's check_weight: net/ knows no
 * mixing). The algorithm decides it; a receiver refuses every other
 * value, so that no neighbour can make the mixing divide by zero, by a
 * negative number, or by a value whose reciprocal a float cannot hold. */
typedef enum {
    MM_WEIGHT_FINITE = 0, /* any finite value (tests, benchmarks); murmur node
                           * always sets one below */
    MM_WEIGHT_ONE,        /* dpsgd, async, allreduce: exactly 1.0 */
    MM_WEIGHT_PUSHSUM,    /* pushsum: MM_PUSHSUM_W_MIN <= w <= n_peers */
} mm_weight_rule;

/* The smallest push-sum weight on the wire: 2^-30. Its reciprocal (2^30)
 * and w*z for any normal float z of magnitude above 1e-29 stay normal
 * floats; an honest peer whose weight would decay below it is raised back
 * to it (mm_mix_round). */
#define MM_PUSHSUM_W_MIN 0x1p-30

/* True when w obeys rule; n_peers is the largest push-sum weight (the mass
 * of the whole cluster: push-sum conserves or loses mass, never creates
 * it). On false, why (when not NULL) says what is wrong. */
bool mm_mix_weight_ok(mm_weight_rule rule, double w, uint32_t n_peers, char *why,
                      size_t whylen);

/* A rule with its cluster, and mm_mix_weight_ok in the shape of the
 * transport's weight_ok (ud: an mm_weight_check), to install there. */
typedef struct {
    mm_weight_rule rule;
    uint32_t n_peers;
} mm_weight_check;
bool mm_mix_weight_check(void *ud, double w, char *why, size_t whylen);

/* dst += a * x, and returns sum_k (x[k]*sx - ref[k]*sr)^2: the squared
 * distance between the de-biased neighbour x*sx and our own ref*sr,
 * measured in the same pass over memory as the update. */
double mm_mix_axpy_dist(float *dst, float a, const float *x, float sx,
                        const float *ref, float sr, size_t n);

/* sum_k (x[k]*sx - ref[k]*sr)^2 without updating anything. */
double mm_mix_dist(const float *x, float sx, const float *ref, float sr, size_t n);

/* dst += a * x */
void mm_mix_axpy(float *dst, float a, const float *x, size_t n);

/* dst = a * x */
void mm_mix_scale_copy(float *dst, float a, const float *x, size_t n);

/* x = s + c (x - s): the local progress since s was taken, scaled by c
 * (--fit-work steps: c = H / steps done, FedNova's normalisation; docs/node.md,
 * "Uneven peers"). c == 1 leaves x untouched, so equal work mixes exactly
 * as before. */
void mm_mix_scale_delta(float *x, const float *s, double c, size_t n);

/* sum_k x[k]^2, in double. */
double mm_mix_norm2(const float *x, size_t n);

/* One neighbour's contribution to a round of mixing. */
typedef struct {
    const float *x;   /* what it sent: w_k * z_k (n floats); NULL when missing */
    double weight;    /* W[me][k] */
    double w;         /* its push-sum weight w_k (1 outside push-sum) */
    uint32_t peer;    /* who it is (robust mixing remembers its last distance) */
    double dist;      /* out: ||z_k - z_t||, NaN when missing or refused */
    int refused;      /* out: 1 when w broke the weight rule (treated as missing) */
} mm_mix_input;

/* ||sum_k in[k].weight (in[k].x - s)||^2 over the neighbours present
 * (x not NULL), in double: the squared length of the pull a mix of s with
 * them makes (weights 1, D-PSGD; consensus control's shape, gossip/consensus.h). */
double mm_mix_pull_norm2(const float *s, const mm_mix_input *in, int n_in, size_t n);

/* The update of one round, for every algorithm:
 *
 *   x <- mix(z_t) + (x - z_t),   z_t = s / w_old
 *   mix(z_t) = (W_self' w_old z_t + sum_k W_k x_k) / w_new
 *   w_new    =  W_self' w_old     + sum_k W_k w_k
 *
 * where x holds z_t plus whatever local steps added since s was taken.
 * A missing neighbour's weight goes back to self (W_self' = W_self + W_k),
 * except with push-sum, where its mass is simply not received and the
 * de-biasing by w absorbs the loss. With clip_pull > 0 a neighbour farther
 * than clip_pull is pulled in only to that distance (mm_mix_round_clip
 * below: the same with a fixed radius).
 *
 * Weights (mm_mix_weight_ok's rules, checked again here whatever the
 * transport did): outside push-sum every w_k must be exactly 1; with
 * push-sum it must lie in [MM_PUSHSUM_W_MIN, w_max] (w_max: the number of
 * peers). A neighbour whose w_k breaks the rule is refused (in[k].refused
 * set, in[k].x set to NULL) and treated as missing. w_old must obey the same rule (it is ours).
 *
 * The bound on the divisor: every accepted term W_k w_k is >= 0, so
 *   w_new >= W_self' w_old >= W_self' 2^-30,
 * which no neighbour can lower; when W_self' = 0 and no neighbour was
 * accepted, w_new = 0 and nothing is divided: x and w stay as they are.
 * The mixed z is then a convex combination (coefficients W_self' w_old /
 * w_new and W_k w_k / w_new, all >= 0, summing to 1) of z_t and the z_k.
 *
 * Returns the new weight: 1.0 unless pushsum; with pushsum, w_new clamped
 * to [MM_PUSHSUM_W_MIN, w_max] (x keeps the de-biased z either way). An
 * honest peer that receives nothing keeps only W_self' of its mass per
 * round (its sends to absent neighbours are lost); once that would take it
 * below 2^-30 it stays at 2^-30, creating at most 2^-30 of mass a round,
 * so what it sends always obeys the wire's rule. Above w_max only a
 * neighbour claiming more mass than the cluster has can take it. */
double mm_mix_round(float *x, const float *s, size_t n, double w_old, double self_weight,
                    mm_mix_input *in, int n_in, int pushsum, double w_max, double clip_pull);

/* mm_mix_round with the pulls clipped by clip's rule (gossip/robust.h:
 * every present neighbour's distance ||z_k - z_t|| measured first, then
 * the radius, then the update with each pull scaled by min(1, tau/d));
 * clip NULL or off: no clipping, bit for bit mm_mix_round's update with
 * clip_pull 0. The clipped pulls are counted in clip. */
double mm_mix_round_clip(float *x, const float *s, size_t n, double w_old, double self_weight,
                         mm_mix_input *in, int n_in, int pushsum, double w_max, mm_clip *clip);

#endif
