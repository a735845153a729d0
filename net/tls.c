/* OpenSSL for the transport: the TLS 1.3 context (CA, certificate, key,
 * with the key's permissions and its match with the certificate checked),
 * and the peer id a verified certificate names. */
#include "net/tls.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *mm_tls_error(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    if (!e)
        snprintf(buf, len, "no OpenSSL error queued");
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

static int key_perms_ok(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "private key %s: %s", path, strerror(errno));
        return 0;
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        snprintf(err, errlen, "private key %s has mode %03o: group/others may "
                 "access it; run chmod 600 %s", path, (unsigned)(st.st_mode & 0777), path);
        return 0;
    }
    return 1;
}

/* Never prompt on a terminal for a passphrase: a protected key is refused. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1;
}

SSL_CTX *mm_tls_ctx_new(const char *ca_file, const char *cert_file,
                        const char *key_file, char *err, size_t errlen)
{
    char ebuf[256];
    if (!ca_file || !cert_file || !key_file) {
        snprintf(err, errlen, "TLS needs ca_file, cert_file and key_file "
                 "(or plaintext explicitly)");
        return NULL;
    }
    if (!key_perms_ok(key_file, err, errlen))
        return NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    if (!ctx) {
        snprintf(err, errlen, "SSL_CTX_new: %s", mm_tls_error(ebuf, sizeof ebuf));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    /* AES-128-GCM first: with AES-NI it is the fastest AEAD here. */
    SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                                  "TLS_CHACHA20_POLY1305_SHA256");
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
        snprintf(err, errlen, "CA file %s: %s", ca_file, mm_tls_error(ebuf, sizeof ebuf));
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        snprintf(err, errlen, "certificate %s: %s", cert_file, mm_tls_error(ebuf, sizeof ebuf));
        goto fail;
    }
    /* Read the key ourselves: SSL_CTX_use_PrivateKey_file also compares it
     * with the certificate and fails the same way for a key that does not
     * match, which was then reported as unreadable. */
    EVP_PKEY *pkey = NULL;
    BIO *kb = BIO_new_file(key_file, "r");
    if (kb)
        pkey = PEM_read_bio_PrivateKey(kb, NULL, no_passphrase, NULL);
    BIO_free(kb);
    if (!pkey) {
        snprintf(err, errlen, "private key %s could not be loaded (wrong format "
                 "or passphrase-protected)", key_file);
        ERR_clear_error();
        goto fail;
    }
    X509 *cert = SSL_CTX_get0_certificate(ctx);
    if (!cert || X509_check_private_key(cert, pkey) != 1) {
        snprintf(err, errlen, "private key %s does not match certificate %s (they "
                 "belong to different peers or were made at different times: "
                 "scripts/make-certs.sh makes matching pairs)", key_file, cert_file);
        EVP_PKEY_free(pkey);
        ERR_clear_error();
        goto fail;
    }
    int used = SSL_CTX_use_PrivateKey(ctx, pkey);
    EVP_PKEY_free(pkey);
    if (used != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "private key %s: %s", key_file, mm_tls_error(ebuf, sizeof ebuf));
        goto fail;
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

static int parse_name(const char *s, size_t len, uint32_t *id)
{
    static const char pre[] = "murmur-peer-";
    size_t pl = sizeof pre - 1;
    if (len <= pl || len > pl + 10 || memcmp(s, pre, pl) != 0)
        return -1;
    uint64_t v = 0;
    for (size_t i = pl; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > UINT32_MAX)
        return -1;
    *id = (uint32_t)v;
    return 0;
}

int mm_tls_peer_id(SSL *ssl, uint32_t *id, char *why, size_t whylen)
{
    X509 *cert = SSL_get0_peer_certificate(ssl);
    if (!cert) {
        snprintf(why, whylen, "no peer certificate");
        return -1;
    }
    if (SSL_get_verify_result(ssl) != X509_V_OK) {
        snprintf(why, whylen, "certificate not verified: %s",
                 X509_verify_cert_error_string(SSL_get_verify_result(ssl)));
        return -1;
    }
    /* SAN first (the modern place for names), then the CN. */
    int found = 0;
    GENERAL_NAMES *sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans) && !found; i++) {
        GENERAL_NAME *gn = sk_GENERAL_NAME_value(sans, i);
        if (gn->type != GEN_DNS)
            continue;
        const unsigned char *d = ASN1_STRING_get0_data(gn->d.dNSName);
        if (parse_name((const char *)d, (size_t)ASN1_STRING_length(gn->d.dNSName), id) == 0)
            found = 1;
    }
    GENERAL_NAMES_free(sans);
    if (found)
        return 0;
    char cn[128];
    int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName,
                                      cn, sizeof cn);
    if (n > 0 && (size_t)n == strlen(cn) && parse_name(cn, (size_t)n, id) == 0)
        return 0;
    snprintf(why, whylen, "certificate names no murmur-peer-K (CN \"%s\")", n > 0 ? cn : "");
    return -1;
}

int mm_tls_peer_cert_digest(SSL *ssl, uint8_t out[32])
{
    X509 *cert = SSL_get0_peer_certificate(ssl);
    unsigned int len = 0;
    if (!cert || X509_digest(cert, EVP_sha256(), out, &len) != 1 || len != 32)
        return -1;
    return 0;
}

int mm_tls_files_for(const char *dir, uint32_t id, mm_tls_files *out)
{
    int a = snprintf(out->ca, sizeof out->ca, "%s/ca.pem", dir);
    int b = snprintf(out->cert, sizeof out->cert, "%s/node-%u.pem", dir, id);
    int c = snprintf(out->key, sizeof out->key, "%s/node-%u.key", dir, id);
    return a < 0 || b < 0 || c < 0 || (size_t)a >= sizeof out->ca ||
                   (size_t)b >= sizeof out->cert || (size_t)c >= sizeof out->key
               ? -1
               : 0;
}
