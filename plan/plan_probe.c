/* Measurements for `murmur plan --calibrate` (plan/plan_probe.h). */
#include "plan/plan_probe.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gossip/mix.h"
#include "base/rng.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double mm_probe_sgemm_gflops(void)
{
    enum { N = 1024, REPS = 5 };
    float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N);
    float *c = malloc(sizeof(float) * N * N);
    double t[REPS], g = 0;
    if (a && b && c) {
        for (long i = 0; i < (long)N * N; i++) {
            a[i] = (float)(i % 7) * 0.1f;
            b[i] = (float)(i % 5) * 0.1f;
        }
        for (int r = -1; r < REPS; r++) {
            double t0 = now_s();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N,
                        0.0f, c, N);
            if (r >= 0)
                t[r] = now_s() - t0;
        }
        qsort(t, REPS, sizeof t[0], cmp_double);
        g = 2.0 * N * N * (double)N / t[REPS / 2] / 1e9;
    }
    free(a);
    free(b);
    free(c);
    return g;
}

int mm_probe_step(const mm_model_config *cfg, int batch, int steps, double *mean, double *sd,
                  char *err, size_t errlen)
{
    mm_model m;
    mm_adamw opt;
    mm_adamw_config oc = mm_adamw_config_default();
    if (steps < 2 || batch < 1) {
        snprintf(err, errlen, "calibration needs at least 2 steps and a batch of 1");
        return -1;
    }
    if (mm_model_init(&m, cfg, 1, err, errlen) != 0)
        return -1;
    mm_model_set_threads(&m, openblas_get_num_threads()); /* as the caller set them */
    int T = cfg->n_ctx;
    uint8_t *tok = malloc((size_t)batch * (size_t)(T + 1));
    double *dt = malloc(sizeof *dt * (size_t)steps);
    int rc = -1;
    if (!tok || !dt || mm_adamw_init(&opt, &oc, m.n_params) != 0) {
        snprintf(err, errlen, "out of memory");
        free(tok);
        free(dt);
        mm_model_free(&m);
        return -1;
    }
    mm_rng rng;
    mm_rng_seed(&rng, 1);
    for (size_t i = 0; i < (size_t)batch * (size_t)(T + 1); i++)
        tok[i] = (uint8_t)mm_rng_below(&rng, 256);
    double s = 0, s2 = 0;
    for (int k = -2; k < steps; k++) {
        double t0 = now_s();
        float loss = mm_model_forward(&m, tok, batch, T);
        if (!isfinite(loss)) {
            snprintf(err, errlen, "the model's forward pass failed (out of memory?)");
            goto out;
        }
        mm_model_backward(&m);
        mm_adamw_step(&opt, &m, m.params, m.grads);
        if (k >= 0)
            dt[k] = now_s() - t0;
    }
    for (int k = 0; k < steps; k++)
        s += dt[k];
    *mean = s / steps;
    for (int k = 0; k < steps; k++)
        s2 += (dt[k] - *mean) * (dt[k] - *mean);
    *sd = sqrt(s2 / (steps - 1));
    rc = 0;
out:
    mm_adamw_free(&opt);
    mm_model_free(&m);
    free(tok);
    free(dt);
    return rc;
}

double mm_probe_mix_fps(size_t n)
{
    if (n > (16u << 20))
        n = 16u << 20;
    if (n < 1024)
        n = 1024;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *z = malloc(n * sizeof *z);
    double best = -1;
    if (x && y && z) {
        for (size_t i = 0; i < n; i++)
            x[i] = y[i] = z[i] = (float)(i % 100) * 0.01f;
        volatile double sink = 0;
        for (int r = 0; r < 5; r++) {
            double t0 = now_s();
            sink += mm_mix_axpy_dist(x, 0.5f, y, 1.0f, z, 1.0f, n);
            double fps = (double)n / (now_s() - t0);
            if (r > 0 && fps > best)
                best = fps;
        }
        (void)sink;
    }
    free(x);
    free(y);
    free(z);
    return best;
}

/* ---- TCP throughput ------------------------------------------------------ */

static int resolve(const char *hostport, int passive, struct addrinfo **res, char *err,
                   size_t errlen)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (!colon || colon == hostport || (size_t)(colon - hostport) >= sizeof host || !colon[1]) {
        snprintf(err, errlen, "'%s' is not HOST:PORT", hostport);
        return -1;
    }
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = 0;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    if (passive)
        hints.ai_flags = AI_PASSIVE;
    int r = getaddrinfo(host, colon + 1, &hints, res);
    if (r != 0) {
        snprintf(err, errlen, "%s: %s", hostport, gai_strerror(r));
        return -1;
    }
    return 0;
}

/* A listening socket on hostport; *port gets its port. -1 with err. */
static int listen_on(const char *hostport, int *port, char *err, size_t errlen)
{
    struct addrinfo *ai;
    if (resolve(hostport, 1, &ai, err, errlen) != 0)
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM, 0), one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1) != 0) {
        snprintf(err, errlen, "listen on %s: %s", hostport, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &l);
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                           : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* Accept one connection on lfd within timeout_s, read to EOF, close both. */
static int drain(int lfd, double timeout_s, double *bytes, char *err, size_t errlen)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    int r = poll(&p, 1, (int)(timeout_s * 1000));
    if (r <= 0) {
        snprintf(err, errlen, "no sender connected within %.0f s", timeout_s);
        close(lfd);
        return -1;
    }
    int fd = accept(lfd, NULL, NULL);
    close(lfd);
    if (fd < 0) {
        snprintf(err, errlen, "accept: %s", strerror(errno));
        return -1;
    }
    enum { BUF = 1 << 20 };
    char *buf = malloc(BUF);
    double got = 0;
    ssize_t n;
    /* a sender that stops sending without closing is given up after 30 s */
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (buf && (n = recv(fd, buf, BUF, 0)) > 0)
        got += (double)n;
    free(buf);
    close(fd);
    *bytes = got;
    return 0;
}

int mm_probe_link_serve(const char *hostport, double timeout_s, double *bytes, char *err,
                        size_t errlen)
{
    int port, fd = listen_on(hostport, &port, err, errlen);
    return fd < 0 ? -1 : drain(fd, timeout_s, bytes, err, errlen);
}

int mm_probe_link_send(const char *hostport, double seconds, double *bps, char *err,
                       size_t errlen)
{
    struct addrinfo *ai;
    if (resolve(hostport, 0, &ai, err, errlen) != 0)
        return -1;
    int fd = -1;
    double limit = now_s() + 5;
    for (;;) {
        fd = socket(ai->ai_family, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        int e = errno;
        if (fd >= 0)
            close(fd);
        fd = -1;
        if (e != ECONNREFUSED || now_s() > limit) {
            snprintf(err, errlen, "connect to %s: %s", hostport, strerror(e));
            break;
        }
        usleep(20000);
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return -1;
    enum { BUF = 1 << 20 };
    char *buf = calloc(1, BUF);
    double t0 = now_s(), sent = 0;
    int rc = buf ? 0 : -1;
    while (rc == 0 && now_s() - t0 < seconds) {
        ssize_t n = send(fd, buf, BUF, MSG_NOSIGNAL);
        if (n <= 0) {
            snprintf(err, errlen, "send to %s: %s", hostport, strerror(errno));
            rc = -1;
        } else {
            sent += (double)n;
        }
    }
    if (rc == 0) {
        /* the receiver closes once it has read everything: that is the end */
        shutdown(fd, SHUT_WR);
        struct timeval tv = {30, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        while (recv(fd, buf, BUF, 0) > 0)
            ;
        *bps = sent / (now_s() - t0);
    }
    free(buf);
    close(fd);
    return rc;
}

typedef struct {
    int fd;
    double bytes;
    int rc;
    char err[128];
} loop_rx;

static void *loop_drain(void *arg)
{
    loop_rx *r = arg;
    r->rc = drain(r->fd, 10, &r->bytes, r->err, sizeof r->err);
    return NULL;
}

int mm_probe_loopback(double seconds, double *bps, char *err, size_t errlen)
{
    loop_rx rx = {0};
    int port;
    rx.fd = listen_on("127.0.0.1:0", &port, err, errlen);
    if (rx.fd < 0)
        return -1;
    pthread_t th;
    if (pthread_create(&th, NULL, loop_drain, &rx) != 0) {
        close(rx.fd);
        snprintf(err, errlen, "no thread for the receiver");
        return -1;
    }
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    int rc = mm_probe_link_send(addr, seconds, bps, err, errlen);
    pthread_join(th, NULL);
    if (rc == 0 && rx.rc != 0) {
        snprintf(err, errlen, "%s", rx.err);
        rc = -1;
    }
    return rc;
}
