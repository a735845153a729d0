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

#endif
