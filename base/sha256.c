/* SHA-256 through libcrypto's EVP interface (base/sha256.h). */
#include "base/sha256.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

void mm_sha256_init(mm_sha256_ctx *c)
{
    c->md = EVP_MD_CTX_new();
    if (c->md && EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(c->md);
        c->md = NULL;
    }
}

void mm_sha256_update(mm_sha256_ctx *c, const void *data, size_t len)
{
    if (c->md && len)
        EVP_DigestUpdate(c->md, data, len);
}

void mm_sha256_final(mm_sha256_ctx *c, uint8_t out[MM_SHA256_LEN])
{
    unsigned n = 0;
    if (!c->md || EVP_DigestFinal_ex(c->md, out, &n) != 1 || n != MM_SHA256_LEN)
        memset(out, 0, MM_SHA256_LEN);
    EVP_MD_CTX_free(c->md);
    c->md = NULL;
}

void mm_sha256(const void *data, size_t len, uint8_t out[MM_SHA256_LEN])
{
    unsigned n = 0;
    if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1 || n != MM_SHA256_LEN)
        memset(out, 0, MM_SHA256_LEN);
}

void mm_sha256_hex(const uint8_t d[MM_SHA256_LEN], char out[2 * MM_SHA256_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < MM_SHA256_LEN; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[2 * MM_SHA256_LEN] = '\0';
}
