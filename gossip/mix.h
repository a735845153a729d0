/* The arithmetic of averaging over flat float vectors. Kept apart from the
 * transport and the model so it can be tested on vectors of any size. */
#ifndef MURMUR_MIX_H
#define MURMUR_MIX_H

#include <stddef.h>

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

/* sum_k x[k]^2, in double. */
double mm_mix_norm2(const float *x, size_t n);

/* 1 if every value is finite, else 0. */
int mm_mix_all_finite(const float *x, size_t n);

/* One neighbour's contribution to a round of mixing. */
typedef struct {
    const float *x;   /* what it sent: w_k * z_k (n floats); NULL when missing */
    double weight;    /* W[me][k] */
    double w;         /* its push-sum weight w_k (1 outside push-sum) */
    double dist;      /* out: ||z_k - z_t||, NaN when missing */
} mm_mix_input;

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
 * than clip_pull is pulled in only to that distance. Returns w_new (1.0
 * unless pushsum). */
double mm_mix_round(float *x, const float *s, size_t n, double w_old, double self_weight,
                    mm_mix_input *in, int n_in, int pushsum, double clip_pull);

#endif
