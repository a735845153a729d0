/* Finiteness of float vectors (base/finite.c). */
#ifndef MURMUR_FINITE_H
#define MURMUR_FINITE_H

#include <stdbool.h>
#include <stdint.h>

/* True when every float is finite; else *bad (when not NULL) is the first
 * NaN or Inf's index. Four floats per instruction with SSE2. */
bool mm_all_finite(const float *v, uint64_t n, uint64_t *bad);

#endif
