/* Model-like vectors for the codec benchmarks and measurements (header
 * only): the flat parameters of a GPT-2-style model (embeddings, then per
 * layer: layer norms, attention, MLP, with their biases; each tensor its
 * own scale; a few heavy-tailed outliers), and a difference between two
 * replicas of it (what CHOCO compresses: per-tensor scaled, heavier tails).
 * Or a real vector read from a murmur checkpoint, snapshot, or raw float32
 * file. Deterministic for a seed. */
#ifndef MURMUR_MODELVEC_H
#define MURMUR_MODELVEC_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

static inline void mv_fill(float *x, uint64_t n, uint64_t seed, int diff)
{
    const int d = 256;
    /* floats as multiples of d (or d*d), init scale, centre (layer norm gains) */
    static const struct { int sq; double mul, scale, center; } layer[] = {
        {0, 1, 0.05, 1.0}, {0, 1, 0.01, 0}, /* ln_1 gain, bias */
        {1, 3, 0.02, 0}, {0, 3, 0.005, 0},  /* attention qkv */
        {1, 1, 0.007, 0}, {0, 1, 0.005, 0}, /* attention projection */
        {0, 1, 0.05, 1.0}, {0, 1, 0.01, 0}, /* ln_2 */
        {1, 4, 0.02, 0}, {0, 4, 0.005, 0},  /* mlp fc */
        {1, 4, 0.007, 0}, {0, 1, 0.005, 0}, /* mlp projection */
    };
    const int n_layer = (int)(sizeof layer / sizeof layer[0]);
    mm_rng r;
    mm_rng_seed(&r, seed);
    uint64_t i = 0;
    /* embeddings first: 256 bytes x d */
    uint64_t emb = 256 * (uint64_t)d;
    for (; i < n && i < emb; i++)
        x[i] = (float)(0.02 * (diff ? 0.05 : 1) * mm_rng_normal(&r));
    for (int t = 0; i < n; t = (t + 1) % n_layer) {
        uint64_t len = (uint64_t)(layer[t].mul * (layer[t].sq ? (double)d * d : d));
        /* tensors differ in scale by up to 3x around their init scale */
        double s = layer[t].scale * pow(3, 2 * mm_rng_uniform(&r) - 1);
        for (uint64_t j = 0; j < len && i < n; j++, i++) {
            double v = mm_rng_normal(&r);
            double u = mm_rng_uniform(&r);
            if (u < (diff ? 0.02 : 0.005)) /* outliers: 3x to 30x */
                v *= 3 * pow(10, mm_rng_uniform(&r));
            x[i] = (float)(diff ? 0.05 * s * v : layer[t].center + s * v);
        }
    }
}

/* A vector from a file: checkpoint.bin (MMCKPT01: P at 64, floats at 200),
 * a snapshot (MMSNAP01: n at 24, floats at 32) or raw float32. *n its
 * length; NULL on error (message on stderr). */
static inline float *mv_read(const char *path, uint64_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    uint8_t h[200];
    size_t got = fread(h, 1, sizeof h, f);
    uint64_t off = 0, count = 0;
    if (got >= 200 && !memcmp(h, "MMCKPT01", 8)) {
        memcpy(&count, h + 64, 8);
        off = 200;
    } else if (got >= 32 && !memcmp(h, "MMSNAP01", 8)) {
        memcpy(&count, h + 24, 8);
        off = 32;
    } else {
        fseek(f, 0, SEEK_END);
        count = (uint64_t)ftell(f) / 4;
    }
    float *x = count && count < (1ULL << 31) ? malloc(count * sizeof *x) : NULL;
    if (!x || fseek(f, (long)off, SEEK_SET) || fread(x, sizeof *x, count, f) != count) {
        fprintf(stderr, "%s: cannot read %llu floats\n", path, (unsigned long long)count);
        free(x);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *n = count;
    return x;
}

#endif
