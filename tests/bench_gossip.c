/* make bench-gossip: vectors of 1, 4 and 64 MB from peer 0 to peer 1, each
 * peer on its own libuv loop in its own thread, plaintext and TLS, next to a
 * raw TCP baseline measured in the same run (two threads copying with
 * blocking send/recv over loopback). Also measures the checksum (CRC32C)
 * so its cost can be set against the transfer, and the codecs: per-core
 * speed, bytes per float, parameters per second over TLS against fp32
 * (tests/bench_codec.c). Prints figures and ratios; it asserts nothing
 * about speed.
 *   bench_gossip CERTDIR [MB_PER_TRIAL [CSV]]   (default 256 MB per trial)
 * Environment: BENCH_TRIALS (best of, default 3), BENCH_SIZE_MB (one size),
 * BENCH_ONLY=plain|tls|codecs (one part, for profiling), BENCH_VERBOSE,
 * BENCH_CODECS (list, or none), BENCH_CODEC_FLOATS (vector lengths). */
#include "base/log.h"
#include "net/tls.h"
#include "net/transport.h"
#include "net/wire.h"
#include "tests/bench_codec.h"

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds used by the whole process so far: on a machine whose cores
 * are shared, CPU per byte is steadier than wall-clock throughput. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

int bench_free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(s, (struct sockaddr *)&a, sizeof a);
    socklen_t l = sizeof a;
    getsockname(s, (struct sockaddr *)&a, &l);
    close(s);
    return ntohs(a.sin_port);
}

/* A connected pair of loopback TCP sockets: fds[0] dialled, fds[1]
 * accepted. 0, or -1 with nothing left open. */
static int loopback_pair(int fds[2])
{
    int ls = socket(AF_INET, SOCK_STREAM, 0), cs = socket(AF_INET, SOCK_STREAM, 0), as = -1;
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    if (ls >= 0 && cs >= 0 && bind(ls, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(ls, (struct sockaddr *)&a, &l) == 0 && listen(ls, 1) == 0 &&
        connect(cs, (struct sockaddr *)&a, sizeof a) == 0)
        as = accept(ls, NULL, NULL);
    if (ls >= 0)
        close(ls);
    if (as < 0) {
        if (cs >= 0)
            close(cs);
        return -1;
    }
    fds[0] = cs;
    fds[1] = as;
    return 0;
}

/* ---- raw TCP baseline ---------------------------------------------------- */

typedef struct {
    int fd;
    size_t size, reps;
    uint8_t *buf;
    double cpu;              /* this thread's CPU seconds */
} raw_side;

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *raw_recv(void *arg)
{
    raw_side *r = arg;
    double c0 = thread_cpu_s();
    size_t total = r->size * r->reps, got = 0;
    while (got < total) {
        size_t want = r->size - got % r->size;
        ssize_t n = recv(r->fd, r->buf + got % r->size, want, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    r->cpu = thread_cpu_s() - c0;
    return NULL;
}

/* The raw copy loop; *cpu is CPU ns per byte for both sides, side[0] and
 * side[1] that of the sending and the receiving thread alone. */
static double raw_run(size_t size, size_t reps, double *cpu, double side[2])
{
    int fds[2];
    if (loopback_pair(fds) != 0)
        return 0;
    int cs = fds[0], as = fds[1];
    raw_side rs = {as, size, reps, malloc(size), 0};
    uint8_t *src = malloc(size);
    memset(src, 0x5A, size);
    pthread_t th;
    double t0 = now_s(), c0 = cpu_s(), s0 = thread_cpu_s();
    pthread_create(&th, NULL, raw_recv, &rs);
    for (size_t k = 0, off = 0; k < reps; k++, off = 0)
        while (off < size) {
            ssize_t n = send(cs, src + off, size - off, 0);
            if (n <= 0) {
                shutdown(cs, SHUT_RDWR); /* the receiver sees EOF, not a hang */
                k = reps;
                break;
            }
            off += (size_t)n;
        }
    double send_cpu = thread_cpu_s() - s0;
    pthread_join(th, NULL);
    double dt = now_s() - t0, bytes = (double)size * (double)reps;
    *cpu = (cpu_s() - c0) / bytes * 1e9;
    side[0] = send_cpu / bytes * 1e9;
    side[1] = rs.cpu / bytes * 1e9;
    close(cs);
    close(as);
    free(src);
    free(rs.buf);
    return (double)size * (double)reps / dt;
}

/* ---- TLS ceiling: blocking OpenSSL over the same loopback ---------------- */

/* What OpenSSL alone can do here: two threads, blocking sockets, SSL_write
 * of whole vectors and SSL_read into one buffer, the same certificates and
 * cipher suite as the transport. No framing, no event loop, no checks: the
 * best a TLS transport on this machine could hope for. */
typedef struct {
    SSL *ssl;
    size_t size, reps;
    uint8_t *buf;
    int ok;
} tls_side;

static void *tls_recv(void *arg)
{
    tls_side *r = arg;
    if (SSL_accept(r->ssl) != 1)
        return NULL;
    size_t total = r->size * r->reps, got = 0;
    while (got < total) {
        size_t want = r->size - got % r->size;
        int n = SSL_read(r->ssl, r->buf + got % r->size, want > INT_MAX ? INT_MAX : (int)want);
        if (n <= 0)
            return NULL;
        got += (size_t)n;
    }
    r->ok = 1;
    return NULL;
}

static SSL_CTX *bench_ctx(const char *certdir, int id)
{
    char err[256];
    mm_tls_files f;
    mm_tls_files_for(certdir, (uint32_t)id, &f);
    SSL_CTX *ctx = mm_tls_ctx_new(f.ca, f.cert, f.key, err, sizeof err);
    if (!ctx)
        fprintf(stderr, "bench: %s\n", err);
    return ctx;
}

static double tls_loop_run(const char *certdir, size_t size, size_t reps)
{
    double rate = 0;
    SSL_CTX *cctx = bench_ctx(certdir, 0), *sctx = bench_ctx(certdir, 1);
    int fds[2] = {-1, -1};
    tls_side rs = {NULL, size, reps, malloc(size), 0};
    uint8_t *src = malloc(size);
    SSL *c = NULL;
    if (!cctx || !sctx || !rs.buf || !src || loopback_pair(fds) != 0)
        goto out;
    rs.ssl = SSL_new(sctx);
    c = SSL_new(cctx);
    SSL_set_fd(rs.ssl, fds[1]);
    SSL_set_fd(c, fds[0]);
    memset(src, 0x5A, size);
    pthread_t th;
    pthread_create(&th, NULL, tls_recv, &rs);
    if (SSL_connect(c) != 1) {
        shutdown(fds[0], SHUT_RDWR);
        pthread_join(th, NULL);
        goto out;
    }
    double t0 = now_s();
    for (size_t k = 0, off = 0; k < reps; k++, off = 0)
        while (off < size) {
            size_t n = size - off > (1u << 30) ? 1u << 30 : size - off;
            int w = SSL_write(c, src + off, (int)n);
            if (w <= 0) {
                shutdown(fds[0], SHUT_RDWR); /* the receiver sees EOF, not a hang */
                k = reps;
                break;
            }
            off += (size_t)w;
        }
    pthread_join(th, NULL);
    double dt = now_s() - t0;
    if (rs.ok)
        rate = (double)size * (double)reps / dt;
out:
    SSL_free(c);
    SSL_free(rs.ssl);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(src);
    free(rs.buf);
    return rate;
}

/* ---- the cipher alone ---------------------------------------------------- */

/* AES-128-GCM (the suite the transport negotiates) sealing and opening a
 * vector in memory, in 16 KB records as TLS 1.3 does, on one core: bytes/s
 * for seal ([0]) and open ([1]). */
static void cipher_speed(size_t size, size_t reps, double out[2])
{
    enum { REC = 16384 };
    unsigned char key[16] = {1}, iv[12] = {2}, tag[16];
    uint8_t *a = malloc(size), *b = malloc(size);
    EVP_CIPHER_CTX *e = EVP_CIPHER_CTX_new();
    out[0] = out[1] = 0;
    if (!a || !b || !e)
        goto out;
    memset(a, 0x5A, size);
    for (int dir = 0; dir < 2; dir++) {
        double t0 = now_s();
        for (size_t r = 0; r < reps; r++)
            for (size_t o = 0; o < size; o += REC) {
                int n = (int)(size - o < REC ? size - o : REC), len;
                if (dir == 0) {
                    EVP_EncryptInit_ex(e, EVP_aes_128_gcm(), NULL, key, iv);
                    EVP_EncryptUpdate(e, b + o, &len, a + o, n);
                    EVP_EncryptFinal_ex(e, b + o + len, &len);
                    EVP_CIPHER_CTX_ctrl(e, EVP_CTRL_GCM_GET_TAG, 16, tag);
                } else { /* the tag check is a 16-byte compare: left out */
                    EVP_DecryptInit_ex(e, EVP_aes_128_gcm(), NULL, key, iv);
                    EVP_DecryptUpdate(e, a + o, &len, b + o, n);
                }
            }
        out[dir] = (double)size * (double)reps / (now_s() - t0);
    }
out:
    EVP_CIPHER_CTX_free(e);
    free(a);
    free(b);
}

/* ---- the transport, one loop per peer ----------------------------------- */

typedef struct bench bench;

typedef struct {
    bench *b;
    uint32_t id;
    uv_loop_t loop;
    uv_async_t go, stop;
    mm_transport *t;
    pthread_t th;
    atomic_int up, ready, finished;
    char err[256];
} side;

struct bench {
    side s[2];
    char addr[2][40];
    const char *addrs[2];
    const char *certdir;
    bool plaintext;
    uint64_t vec_len;
    size_t reps, next, in_flight;
    float *bufs[2];
    atomic_size_t received;
    atomic_int bad;
    double t_end;
};

static void on_vector(void *ud, uint32_t peer, uint64_t round, const mm_wire_vec *meta,
                      const void *body, size_t len)
{
    side *s = ud;
    bench *b = s->b;
    const float *v = body;
    (void)meta;
    (void)len;
    /* spot check: first and last float of the vector that was sent */
    const float *src = b->bufs[round % 2];
    if (v[0] != src[0] || v[b->vec_len - 1] != src[b->vec_len - 1])
        atomic_fetch_add(&b->bad, 1);
    mm_transport_release(s->t, peer);
    if (atomic_fetch_add(&b->received, 1) + 1 == b->reps)
        b->t_end = now_s();
}

static void send_next(side *s)
{
    bench *b = s->b;
    while (b->next < b->reps && b->in_flight < 2) {
        if (mm_transport_send(s->t, 1, b->next, 1.0, b->bufs[b->next % 2]) != 0) {
            atomic_fetch_add(&b->bad, 1);
            b->next = b->reps;
            return;
        }
        b->next++;
        b->in_flight++;
    }
}

static void on_sent(void *ud, uint32_t peer, uint64_t round, bool ok)
{
    side *s = ud;
    s->b->in_flight--;
    if (!ok)
        atomic_fetch_add(&s->b->bad, 1);
    send_next(s);
}

static void on_peer(void *ud, uint32_t peer, mm_peer_state st)
{
    side *s = ud;
    if (st == MM_PEER_UP)
        atomic_store(&s->up, 1);
}

static void on_go(uv_async_t *a) { send_next(a->data); }

static void closed_async(uv_handle_t *h) { (void)h; }

static void on_done(void *ud)
{
    side *s = ud;
    uv_close((uv_handle_t *)&s->go, closed_async);
    uv_close((uv_handle_t *)&s->stop, closed_async);
}

static void on_stop(uv_async_t *a)
{
    side *s = a->data;
    mm_transport_shutdown(s->t, on_done, s);
}

static void *side_main(void *arg)
{
    side *s = arg;
    bench *b = s->b;
    uv_loop_init(&s->loop);
    uv_async_init(&s->loop, &s->go, on_go);
    uv_async_init(&s->loop, &s->stop, on_stop);
    s->go.data = s->stop.data = s;
    mm_transport_config cfg = {0};
    mm_tls_files f;
    cfg.self_id = s->id;
    cfg.n_peers = 2;
    cfg.addrs = b->addrs;
    cfg.vec_len = b->vec_len;
    cfg.plaintext = b->plaintext;
    cfg.round_window = 1 << 20;
    cfg.peer_timeout_ms = 60000;
    mm_tls_files_for(b->certdir, s->id, &f);
    cfg.ca_file = f.ca;
    cfg.cert_file = f.cert;
    cfg.key_file = f.key;
    mm_transport_callbacks cb = {.on_vector = on_vector, .on_sent = on_sent, .on_peer = on_peer,
                                 .ud = s};
    s->t = mm_transport_new(&s->loop, &cfg, &cb, s->err, sizeof s->err);
    if (!s->t) {
        uv_close((uv_handle_t *)&s->go, NULL);
        uv_close((uv_handle_t *)&s->stop, NULL);
        atomic_store(&s->ready, -1);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        uv_loop_close(&s->loop);
        return NULL;
    }
    uint32_t other = 1 - s->id;
    mm_transport_want(s->t, &other, 1);
    atomic_store(&s->ready, 1);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    mm_transport_free(s->t);
    uv_loop_close(&s->loop);
    atomic_store(&s->finished, 1);
    return NULL;
}

double bench_transport_run(const char *certdir, bool plaintext, size_t size, size_t reps,
                           int *bad, double *cpu)
{
    bench *b = calloc(1, sizeof *b);
    b->certdir = certdir;
    b->plaintext = plaintext;
    b->vec_len = size / 4;
    b->reps = reps;
    for (int i = 0; i < 2; i++) {
        snprintf(b->addr[i], sizeof b->addr[i], "127.0.0.1:%d", bench_free_port());
        b->addrs[i] = b->addr[i];
        b->bufs[i] = malloc(size);
        for (size_t k = 0; k < b->vec_len; k++)
            b->bufs[i][k] = (float)(k % 1000) * 0.001f + (float)i;
    }
    for (uint32_t i = 0; i < 2; i++) {
        b->s[i].b = b;
        b->s[i].id = i;
        pthread_create(&b->s[i].th, NULL, side_main, &b->s[i]);
    }
    double rate = 0;
    for (int i = 0; i < 2; i++)
        while (atomic_load(&b->s[i].ready) == 0)
            usleep(1000);
    if (b->s[0].ready < 0 || b->s[1].ready < 0) {
        fprintf(stderr, "bench: %s%s\n", b->s[0].err, b->s[1].err);
        *bad = 1;
        goto out;
    }
    double limit = now_s() + 10;
    while (!(atomic_load(&b->s[0].up) && atomic_load(&b->s[1].up)) && now_s() < limit)
        usleep(1000);
    double t0 = now_s(), c0 = cpu_s();
    uv_async_send(&b->s[0].go);
    limit = t0 + 600;
    while (atomic_load(&b->received) < reps && now_s() < limit && !atomic_load(&b->bad))
        usleep(200);
    if (atomic_load(&b->received) == reps)
        rate = (double)size * (double)reps / (b->t_end - t0);
    *cpu = (cpu_s() - c0) / ((double)size * (double)reps) * 1e9;
    *bad = atomic_load(&b->bad);
out:
    for (int i = 0; i < 2; i++)
        if (b->s[i].ready > 0)
            uv_async_send(&b->s[i].stop);
    for (int i = 0; i < 2; i++)
        pthread_join(b->s[i].th, NULL);
    free(b->bufs[0]);
    free(b->bufs[1]);
    free(b);
    return rate;
}

static void crc_speed(void)
{
    size_t n = 64u << 20;
    uint8_t *buf = malloc(n);
    memset(buf, 0x3C, n);
    volatile uint32_t sink = 0;
    double t0 = now_s();
    for (int i = 0; i < 4; i++)
        sink ^= mm_crc32c(0, buf, n);
    double hw = 4.0 * (double)n / (now_s() - t0);
    t0 = now_s();
    sink ^= mm_crc32c_sw(0, buf, n);
    double sw = (double)n / (now_s() - t0);
    (void)sink;
    printf("checksum CRC32C over 64 MB: %s %.2f GB/s, portable slice-by-8 %.2f GB/s\n",
           mm_crc32c_is_hw() ? "SSE4.2" : "(no SSE4.2; same code)", hw / 1e9, sw / 1e9);
    free(buf);
}

static double max2(double a, double b) { return a > b ? a : b; }
static double min2(double a, double b) { return a < b ? a : b; }

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CERTDIR [MB_PER_CASE [CSV]]\n", argv[0]);
        return 2;
    }
    mm_log_set_level(getenv("BENCH_VERBOSE") ? MM_LOG_INFO : MM_LOG_ERROR);
    char probe[512];
    snprintf(probe, sizeof probe, "%s/node-1.key", argv[1]);
    if (access(probe, R_OK) != 0) {
        fprintf(stderr, "bench_gossip: no certificates in %s (make them with "
                        "scripts/make-certs.sh %s 2)\n", argv[1], argv[1]);
        return 2;
    }
    size_t per_case = (argc > 2 ? (size_t)atoi(argv[2]) : 256) << 20;
    FILE *csv = argc > 3 ? fopen(argv[3], "w") : NULL;
    if (argc > 3 && !csv) {
        perror(argv[3]);
        return 2;
    }
    if (csv)
        fprintf(csv, "vector_mb,raw_gbs,plain_gbs,tls_gbs,openssl_loop_gbs,seal_gbs,open_gbs,"
                     "tls_bound_gbs,cpu_raw_ns_per_byte,cpu_plain_ns_per_byte,"
                     "cpu_tls_ns_per_byte\n");
    crc_speed();
    size_t sizes[] = {1u << 20, 4u << 20, 64u << 20};
    /* BENCH_TRIALS=N: best of N trials (default 3; more on a noisy machine) */
    const char *tr = getenv("BENCH_TRIALS");
    int trials = tr && atoi(tr) > 0 ? atoi(tr) : 3;
    /* BENCH_SIZE_MB=N: one vector size only (for profiling) */
    const char *one = getenv("BENCH_SIZE_MB");
    int n_sizes = 3;
    if (one && atoi(one) > 0) {
        sizes[0] = (size_t)atoi(one) << 20;
        n_sizes = 1;
    }
    /* BENCH_ONLY=plain|tls: profile one transport alone (raw still runs for
     * the ratios; the others, the OpenSSL loop and the bound print 0);
     * BENCH_ONLY=codecs: the codec section alone */
    const char *only = getenv("BENCH_ONLY");
    bool do_plain = !only || !strcmp(only, "plain"), do_tls = !only || !strcmp(only, "tls");
    if (only && !strcmp(only, "codecs"))
        n_sizes = 0;
    printf("\nthroughput in GB/s, one direction, peer 0 -> peer 1, best of %d trials\n"
           "  raw:   two threads copying with blocking send/recv (the baseline)\n"
           "  ossl:  two threads, blocking SSL_write/SSL_read, same certificates and suite\n"
           "  bound: the most TLS could reach here: each side's raw CPU per byte plus the\n"
           "         cipher's, AES-128-GCM in 16 KB records on one core (seal/open GB/s)\n"
           "  cpu:   CPU ns per byte moved, both sides\n"
           "%-7s %5s %6s %6s %6s %6s %6s %11s %6s %9s %9s %10s %14s\n", trials, "vector",
           "reps", "raw", "plain", "TLS", "ossl", "bound", "seal/open", "", "plain/raw",
           "TLS/raw", "TLS/bound", "cpu raw/pl/TLS");
    int failures = 0;
    for (int i = 0; i < n_sizes; i++) {
        size_t size = sizes[i], reps = per_case / size < 4 ? 4 : per_case / size;
        /* Best of `trials` for each kind, interleaved, so a burst of load from
         * other processes hurts one trial rather than one kind. */
        double raw = 0, plain = 0, tls = 0, ossl = 0, bound = 0, seal = 0, open = 0;
        double c_raw = 9e9, c_plain = 9e9, c_tls = 9e9;
        for (int trial = 0; trial < trials; trial++) {
            int bad = 0;
            double c, sides[2] = {0, 0}, ciph[2];
            raw = max2(raw, raw_run(size, reps, &c, sides));
            c_raw = min2(c_raw, c);
            if (do_plain) {
                plain = max2(plain, bench_transport_run(argv[1], true, size, reps, &bad, &c));
                c_plain = min2(c_plain, c);
                failures += bad;
            }
            if (do_tls) {
                tls = max2(tls, bench_transport_run(argv[1], false, size, reps, &bad, &c));
                c_tls = min2(c_tls, c);
                failures += bad;
                if (only)
                    continue;
                ossl = max2(ossl, tls_loop_run(argv[1], size, reps));
                /* Sender: encrypt, then what the raw sender spent per byte;
                 * receiver likewise; and both within this machine's 2 cores. */
                cipher_speed(size, reps < 16 ? reps : 16, ciph);
                seal = max2(seal, ciph[0]);
                open = max2(open, ciph[1]);
                double ns_seal = 1e9 / ciph[0], ns_open = 1e9 / ciph[1];
                double b = min2(1e9 / (ns_seal + sides[0]), 1e9 / (ns_open + sides[1]));
                b = min2(b, 2e9 / (ns_seal + ns_open + sides[0] + sides[1]));
                bound = max2(bound, b);
            }
        }
        printf("%3zu MB  %5zu %6.2f %6.2f %6.2f %6.2f %6.2f %5.2f/%-5.2f %6s %8.0f%% %8.0f%% "
               "%9.0f%%  %4.2f/%4.2f/%4.2f%s\n",
               size >> 20, reps, raw / 1e9, plain / 1e9, tls / 1e9, ossl / 1e9, bound / 1e9,
               seal / 1e9, open / 1e9, "", 100 * plain / raw, 100 * tls / raw,
               bound > 0 ? 100 * tls / bound : 0, c_raw, do_plain ? c_plain : 0,
               do_tls ? c_tls : 0, failures ? "  (ERRORS)" : "");
        if (csv)
            fprintf(csv, "%zu,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n", size >> 20,
                    raw / 1e9, plain / 1e9, tls / 1e9, ossl / 1e9, seal / 1e9, open / 1e9,
                    bound / 1e9, c_raw, do_plain ? c_plain : 0, do_tls ? c_tls : 0);
        fflush(stdout);
    }
    if (n_sizes)
        printf("\ntargets: plaintext >= 70%% of raw, TLS >= 50%% of raw "
               "(one direction, loopback, this machine's cores shared with everything else)\n");
    if (csv) {
        fclose(csv);
        printf("figures written to %s\n", argv[3]);
    }

    /* The codecs (tests/bench_codec.c). BENCH_CODECS=list (or "none"),
     * BENCH_CODEC_FLOATS=list of vector lengths in floats. Their CSV goes
     * next to the transport's: X.csv -> X-codecs.csv. */
    const char *codecs = getenv("BENCH_CODECS");
    if (!codecs)
        codecs = "fp32,bf16,int8,sign:32,sign:256,topk:0.01,topk:0.001,randk:0.01";
    if (!strcmp(codecs, "none") || (only && strcmp(only, "codecs")))
        return failures ? 1 : 0;
    uint64_t floats[8] = {1u << 20, 16u << 20};
    int n_floats = 2;
    const char *fl = getenv("BENCH_CODEC_FLOATS");
    if (fl && *fl) {
        char tmp[256];
        snprintf(tmp, sizeof tmp, "%s", fl);
        n_floats = 0;
        for (char *t = strtok(tmp, ","); t && n_floats < 8; t = strtok(NULL, ","))
            if (strtoull(t, NULL, 10) > 0)
                floats[n_floats++] = strtoull(t, NULL, 10);
    }
    FILE *ccsv = NULL;
    char cpath[1024];
    if (argc > 3) {
        size_t l = strlen(argv[3]);
        if (l > 4 && !strcmp(argv[3] + l - 4, ".csv"))
            snprintf(cpath, sizeof cpath, "%.*s-codecs.csv", (int)(l - 4), argv[3]);
        else
            snprintf(cpath, sizeof cpath, "%s-codecs", argv[3]);
        if (!(ccsv = fopen(cpath, "w"))) {
            perror(cpath);
            return 2;
        }
    }
    failures += bench_codecs(argv[1], codecs, floats, n_floats, per_case, trials, ccsv);
    if (ccsv) {
        fclose(ccsv);
        printf("figures written to %s\n", cpath);
    }
    return failures ? 1 : 0;
}
