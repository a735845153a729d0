/* OpenSSL setup for the transport: one TLS 1.3 context with mutual
 * authentication against the cluster CA, and the peer id named by a
 * certificate (CN=murmur-peer-K or a SAN DNS name murmur-peer-K). */
#ifndef MURMUR_TLS_H
#define MURMUR_TLS_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

/* NULL on error with the reason in err. Refuses a key file that group or
 * others can read; never prints key material. */
SSL_CTX *mm_tls_ctx_new(const char *ca_file, const char *cert_file,
                        const char *key_file, char *err, size_t errlen);

/* The peer id named by the verified certificate of ssl; -1 with why. */
int mm_tls_peer_id(SSL *ssl, uint32_t *id, char *why, size_t whylen);
/* SHA-256 of the peer's certificate (DER) into out: 0, or -1 when it has
 * none (elastic runs record it in the member's record, docs/membership.md). */
int mm_tls_peer_cert_digest(SSL *ssl, uint8_t out[32]);

/* The files scripts/make-certs.sh makes for peer `id` in `dir`:
 * dir/ca.pem, dir/node-ID.pem, dir/node-ID.key. */
typedef struct {
    char ca[1024], cert[1024], key[1024];
} mm_tls_files;

/* 0, or -1 when dir is too long for the paths. */
int mm_tls_files_for(const char *dir, uint32_t id, mm_tls_files *out);

/* The last OpenSSL error as text (for log lines), clearing the queue. */
const char *mm_tls_error(char *buf, size_t len);

#endif
