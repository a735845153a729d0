/* What this CPU can do, for the few loops that pick a wider instruction
 * set at run time (base/finite.c, node/allreduce.c; base/crc32c.c has its
 * own test, which also needs VPCLMULQDQ). Asked once per file that uses
 * it: GCC's __builtin_cpu_supports, which on x86-64 also checks that the
 * OS saves the AVX-512 state. Elsewhere: false. */
#ifndef MM_BASE_CPU_H
#define MM_BASE_CPU_H

#include <stdbool.h>

static inline bool mm_cpu_avx512(void)
{
#if defined(__x86_64__)
    static int s; /* 0 unknown, 1 yes, 2 no */
    int v = __atomic_load_n(&s, __ATOMIC_RELAXED);
    if (!v) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") ? 1 : 2;
        __atomic_store_n(&s, v, __ATOMIC_RELAXED);
    }
    return v == 1;
#else
    return false;
#endif
}

#endif
