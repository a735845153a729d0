/* SHA-256 (FIPS 180-4). model/ may use libc and OpenBLAS only, yet model
 * fingerprints and checkpoints need a cryptographic hash, hence this small
 * one. Incremental (init/update/final) for files, one-shot for buffers. */
#ifndef MURMUR_SHA256_H
#define MURMUR_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define MM_SHA256_LEN 32

typedef struct {
    uint32_t h[8];
    uint64_t len;      /* bytes hashed so far */
    uint8_t buf[64];
    size_t nbuf;       /* bytes waiting in buf */
} mm_sha256_ctx;

void mm_sha256_init(mm_sha256_ctx *c);
void mm_sha256_update(mm_sha256_ctx *c, const void *data, size_t len);
void mm_sha256_final(mm_sha256_ctx *c, uint8_t out[MM_SHA256_LEN]);

void mm_sha256(const void *data, size_t len, uint8_t out[MM_SHA256_LEN]);

/* Lower-case hex of a digest into out (65 bytes with the NUL). */
void mm_sha256_hex(const uint8_t d[MM_SHA256_LEN], char out[2 * MM_SHA256_LEN + 1]);

#endif
