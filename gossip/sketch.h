/* Count sketch of a parameter vector: a small, linear, seeded summary from
 * which an offline report estimates distances between vectors it never sees
 * (consensus distance). Every peer must use the same seed and dimension.
 *
 * Coordinate p goes to bucket b(p) with sign s(p), both from one 64-bit hash
 * h = splitmix64(seed ^ (p * 0x9E3779B97F4A7C15)):
 *   b(p) = ((h >> 32) * dim) >> 32      (multiply-shift, no modulo bias worth noting)
 *   s(p) = (h & 1) ? -1 : +1
 *   out[b] = sum over p with b(p) = b of s(p) * x[p]
 * so E||S(u - v)||^2 = ||u - v||^2 and S(mean) = mean(S). Spelled out in
 * docs/metrics.md for implementations in other languages. */
#ifndef MURMUR_SKETCH_H
#define MURMUR_SKETCH_H

#include <stddef.h>
#include <stdint.h>

/* Default sketch dimension; see docs/metrics.md for the measured error. */
#define MM_SKETCH_DIM_DEFAULT 1024

/* out[0..dim) = count sketch of x[0..n). Sums in double, then rounds to
 * float, so sketches of nearly equal vectors differ by their difference and
 * not by summation noise. dim >= 1. O(n). */
void mm_sketch(const float *x, size_t n, uint64_t seed, float *out, int dim);

/* The hash behind it, exposed for tests and other-language checks. */
uint64_t mm_sketch_hash(uint64_t seed, uint64_t p);

#endif
