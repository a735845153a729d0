/* CRC32C (Castagnoli): SSE4.2 when the CPU has it (from 256 bytes on,
 * folded with VPCLMULQDQ where the CPU has AVX-512), else slice-by-8 tables.
 * The wire's frame checksums (net/wire.h) and the codecs' copy checksums
 * (gossip/codec.h) are both this one. */
#ifndef MURMUR_CRC32C_H
#define MURMUR_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint32_t mm_crc32c(uint32_t crc, const void *buf, size_t len);
bool mm_crc32c_is_hw(void);
uint32_t mm_crc32c_sw(uint32_t crc, const void *buf, size_t len);
/* mm_crc32c over the 4n bytes of n floats, and in the same pass whether
 * any of them is NaN or Inf (*nonfinite): the wire's receive path, which
 * needs both for every fp32 body (net/wire.c). */
uint32_t mm_crc32c_finite(uint32_t crc, const float *v, size_t n, bool *nonfinite);

#endif
