#include "gossip/sketch.h"

#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

uint64_t mm_sketch_hash(uint64_t seed, uint64_t p)
{
    uint64_t z = seed ^ (p * 0x9E3779B97F4A7C15ull);
    return mm_splitmix64(&z);
}

/* Hashing dominates; done in blocks into small arrays so the compiler can
 * vectorise the hash and the signed value, leaving only the scatter-add
 * scalar. */
#define BLOCK 256

void mm_sketch(const float *x, size_t n, uint64_t seed, float *out, int dim)
{
    if (dim < 1)
        return;
    double stackacc[1024];
    double *acc = dim <= 1024 ? stackacc : malloc((size_t)dim * sizeof *acc);
    if (!acc) { /* no memory: still deterministic, just summed in float */
        memset(out, 0, (size_t)dim * sizeof *out);
        for (size_t p = 0; p < n; p++) {
            uint64_t h = mm_sketch_hash(seed, p);
            out[((h >> 32) * (uint64_t)dim) >> 32] += (h & 1) ? -x[p] : x[p];
        }
        return;
    }
    memset(acc, 0, (size_t)dim * sizeof *acc);
    uint32_t bucket[BLOCK];
    double val[BLOCK];
    for (size_t base = 0; base < n; base += BLOCK) {
        size_t m = n - base < BLOCK ? n - base : BLOCK;
        for (size_t k = 0; k < m; k++) {
            uint64_t h = mm_sketch_hash(seed, base + k);
            bucket[k] = (uint32_t)(((h >> 32) * (uint64_t)dim) >> 32);
            double v = x[base + k];
            val[k] = (h & 1) ? -v : v;
        }
        for (size_t k = 0; k < m; k++)
            acc[bucket[k]] += val[k];
    }
    for (int b = 0; b < dim; b++)
        out[b] = (float)acc[b];
    if (acc != stackacc)
        free(acc);
}
