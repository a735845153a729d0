/* A small, fast, seedable PRNG (xoshiro256**, seeded through splitmix64).
 * Its whole state is four words, so checkpoints can store it and a resumed
 * run draws exactly the numbers the uninterrupted run would have drawn. */
#ifndef MURMUR_RNG_H
#define MURMUR_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct { uint64_t s[4]; } mm_rng;

static inline uint64_t mm_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void mm_rng_seed(mm_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = mm_splitmix64(&seed);
}

static inline uint64_t mm_rng_next(mm_rng *r)
{
    uint64_t *s = r->s;
    uint64_t t = s[1] << 17;
    uint64_t res = s[1] * 5;
    res = ((res << 7) | (res >> 57)) * 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return res;
}

/* Uniform in [0, 1) with 53 bits. */
static inline double mm_rng_uniform(mm_rng *r)
{
    return (double)(mm_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n), n > 0 (Lemire's method, unbiased). */
static inline uint64_t mm_rng_below(mm_rng *r, uint64_t n)
{
    uint64_t x = mm_rng_next(r);
    __uint128_t m = (__uint128_t)x * n;
    uint64_t l = (uint64_t)m;
    if (l < n) {
        uint64_t t = -n % n;
        while (l < t) {
            x = mm_rng_next(r);
            m = (__uint128_t)x * n;
            l = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* Standard normal (Box-Muller; one value per call, simple over fast). */
static inline double mm_rng_normal(mm_rng *r)
{
    double u1 = mm_rng_uniform(r), u2 = mm_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
