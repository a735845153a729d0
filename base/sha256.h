/* SHA-256 through OpenSSL's libcrypto (which picks the SHA-NI or AVX2 code
 * for this CPU). Model fingerprints, checkpoints, prepared corpora and
 * snapshots all need it; keeping one thin interface means no room has to
 * know which library does the hashing. Incremental (init/update/final) for
 * files, one-shot for buffers. */
#ifndef MURMUR_SHA256_H
#define MURMUR_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define MM_SHA256_LEN 32

typedef struct evp_md_ctx_st mm_sha256_md;
typedef struct {
    mm_sha256_md *md;  /* libcrypto's digest context (NULL only if out of memory) */
} mm_sha256_ctx;

/* init allocates libcrypto's context; final frees it. If that allocation
 * fails, final yields an all-zero digest, which matches no real file, so a
 * check fails loudly instead of passing by accident. */
void mm_sha256_init(mm_sha256_ctx *c);
void mm_sha256_update(mm_sha256_ctx *c, const void *data, size_t len);
void mm_sha256_final(mm_sha256_ctx *c, uint8_t out[MM_SHA256_LEN]);

void mm_sha256(const void *data, size_t len, uint8_t out[MM_SHA256_LEN]);

/* Lower-case hex of a digest into out (65 bytes with the NUL). */
void mm_sha256_hex(const uint8_t d[MM_SHA256_LEN], char out[2 * MM_SHA256_LEN + 1]);

#endif
