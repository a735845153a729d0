/* MM_HOT marks a non-BLAS loop worth compiling twice: for x86-64-v3 (AVX2,
 * FMA) and for baseline x86-64, the CPU choosing at load time (ifunc). The
 * default build must run on any x86-64, so no -march=native.
 * GCC 12 dispatches "arch=x86-64-v3" on the CPU's features; clang 14
 * treats arch= as an exact CPU model (never matching a newer one), so it
 * gets the AVX2 clone, without FMA. Internal to model/. */
#ifndef MURMUR_HOT_H
#define MURMUR_HOT_H

#if defined(__x86_64__) && defined(__clang__) && !defined(MM_NO_CLONES)
#define MM_HOT __attribute__((target_clones("avx2", "default")))
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(MM_NO_CLONES)
#define MM_HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MM_HOT
#endif

#endif
