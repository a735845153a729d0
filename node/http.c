/* The read-only HTTP server of node/http.h on GNU libmicrohttpd. MHD parses
 * requests (its parser, not ours: Debian's libmicrohttpd-dev), bounds a
 * request's size by its per-connection memory pool and closes idle
 * connections; this file adds what MHD lacks or does not count: the
 * connection limit (refused in the accept policy, counted), the request
 * deadline (a watchdog thread shuts down the socket of a connection still
 * sending its request: slowloris), GET only, the bearer token, and a
 * counter for every refusal. */
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "node/http.h"

/* One open connection, for the limit and the watchdog. */
typedef struct {
    bool used;
    int fd;
    bool waiting;       /* no request being answered: the deadline runs */
    bool answered;      /* at least one request answered on it */
    bool cut;           /* the watchdog shut it down */
    double t0;          /* when the deadline started */
} slot;

struct mm_http_server {
    mm_http_config cfg;
    char *token;        /* "Bearer TOKEN" or NULL */
    mm_http_route route;
    void *ud;
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    pthread_t watchdog;
    bool watchdog_running;
    unsigned active;    /* connections accepted and not yet closed */
    unsigned n_slots;
    slot *slots;
    mm_http_counts counts;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define COUNT(s, field)                                                                       \
    do {                                                                                      \
        pthread_mutex_lock(&(s)->mu);                                                         \
        (s)->counts.field++;                                                                  \
        pthread_mutex_unlock(&(s)->mu);                                                       \
    } while (0)

/* ---- connections: the limit, the deadline -------------------------------- */

static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
    mm_http_server *s = cls;
    pthread_mutex_lock(&s->mu);
    bool ok = s->active < s->cfg.max_conns && !s->stopping;
    if (ok)
        s->active++;
    else
        s->counts.conn_limit++;
    pthread_mutex_unlock(&s->mu);
    return ok ? MHD_YES : MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code)
{
    mm_http_server *s = cls;
    pthread_mutex_lock(&s->mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        for (unsigned i = 0; i < s->n_slots; i++) {
            if (!s->slots[i].used) {
                s->slots[i] = (slot){.used = true, .fd = ci ? ci->connect_fd : -1,
                                     .waiting = true, .t0 = now_s()};
                *socket_ctx = &s->slots[i];
                break;
            }
        }
    } else {
        slot *sl = *socket_ctx;
        if (sl) {
            if (!sl->answered && !sl->cut)
                s->counts.malformed++;
            sl->used = false;
            *socket_ctx = NULL;
        }
        if (s->active > 0)
            s->active--;
    }
    pthread_mutex_unlock(&s->mu);
}

static slot *conn_slot(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_ctx,
                         enum MHD_RequestTerminationCode toe)
{
    mm_http_server *s = cls;
    pthread_mutex_lock(&s->mu);
    slot *sl = conn_slot(conn);
    if (sl) { /* the next request on this connection has its own deadline */
        sl->waiting = true;
        sl->t0 = now_s();
    }
    pthread_mutex_unlock(&s->mu);
}

/* Shuts down the sockets of connections past the request deadline; MHD
 * then sees the end of the stream and closes them itself. */
static void *watchdog(void *arg)
{
    mm_http_server *s = arg;
    double deadline = s->cfg.request_deadline_ms / 1000.0;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        double t = now_s();
        for (unsigned i = 0; i < s->n_slots; i++) {
            slot *sl = &s->slots[i];
            if (sl->used && sl->waiting && !sl->cut && sl->fd >= 0 && t - sl->t0 > deadline) {
                shutdown(sl->fd, SHUT_RDWR);
                sl->cut = true;
                /* a kept-alive connection that went quiet after answers is
                 * an ordinary close, not a slow client */
                if (!sl->answered)
                    s->counts.slow++;
            }
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- requests -------------------------------------------------------------- */

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned status, const char *text,
                                 bool close_after)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text,
                                                             MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, "Allow", "GET");
    if (close_after)
        MHD_add_response_header(r, "Connection", "close");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static bool authorized(mm_http_server *s, struct MHD_Connection *conn)
{
    if (!s->token)
        return true;
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    size_t n = strlen(s->token);
    return h && strlen(h) == n && CRYPTO_memcmp(h, s->token, n) == 0;
}

static ssize_t stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    mm_http_reply *r = cls;
    ssize_t n = r->stream(r->stream_ctx, buf, max);
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void stream_free(void *cls)
{
    mm_http_reply *r = cls;
    if (r->stream_free)
        r->stream_free(r->stream_ctx);
    free(r);
}

static void add_common_headers(struct MHD_Response *resp, const char *type)
{
    MHD_add_response_header(resp, "Content-Type", type ? type : "text/plain; charset=utf-8");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                            "img-src 'self' data:");
}

static enum MHD_Result queue_reply(mm_http_server *s, struct MHD_Connection *conn,
                                   mm_http_reply *rp)
{
    struct MHD_Response *resp;
    if (rp->stream) {
        mm_http_reply *keep = malloc(sizeof *keep);
        if (!keep) {
            if (rp->stream_free)
                rp->stream_free(rp->stream_ctx);
            return MHD_NO;
        }
        *keep = *rp;
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_cb, keep,
                                                 stream_free);
        if (!resp) {
            stream_free(keep);
            return MHD_NO;
        }
    } else {
        resp = MHD_create_response_from_buffer(rp->len, rp->body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(rp->body);
            return MHD_NO;
        }
    }
    add_common_headers(resp, rp->content_type);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)rp->status, resp);
    MHD_destroy_response(resp);
    if (ret == MHD_YES)
        COUNT(s, requests);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **req_ctx)
{
    mm_http_server *s = cls;
    pthread_mutex_lock(&s->mu);
    slot *sl = conn_slot(conn);
    if (sl) {
        sl->waiting = false;
        sl->answered = true;
    }
    pthread_mutex_unlock(&s->mu);
    if (*req_ctx) { /* a body after all: consumed and ignored, the answer is queued */
        *upload_size = 0;
        return MHD_YES;
    }
    *req_ctx = s;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0) {
        COUNT(s, method);
        return send_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n", true);
    }
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
    if (*upload_size > 0 || (cl && strcmp(cl, "0") != 0) ||
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding")) {
        COUNT(s, body);
        return send_text(conn, MHD_HTTP_BAD_REQUEST, "a GET has no body\n", true);
    }
    if (!authorized(s, conn)) {
        COUNT(s, auth);
        return send_text(conn, MHD_HTTP_UNAUTHORIZED, "bearer token required\n", false);
    }
    mm_http_reply rp = {0};
    mm_http_get_counts(s, &rp.counts);
    s->route(s->ud, url, &rp);
    if (rp.status == 0) {
        free(rp.body);
        COUNT(s, path);
        return send_text(conn, MHD_HTTP_NOT_FOUND, "not found\n", false);
    }
    return queue_reply(s, conn, &rp);
}

/* ---- start, stop ----------------------------------------------------------- */

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n')
        msg[--n] = '\0';
    mm_debug("http: %s", msg);
}

/* HOST:PORT or [V6]:PORT into host and port. */
static int split_addr(const char *addr, char *host, size_t hostlen, char *port, size_t portlen)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || !colon[1] || strlen(colon + 1) >= portlen)
        return -1;
    const char *h = addr;
    size_t hl = (size_t)(colon - addr);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= hostlen)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    strcpy(port, colon + 1);
    for (const char *p = port; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    return 0;
}

bool mm_http_addr_is_loopback(const char *addr)
{
    char host[256], port[16];
    if (split_addr(addr, host, sizeof host, port, sizeof port) != 0)
        return false;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return false;
    bool lo = true;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            const struct sockaddr_in *in = (const void *)a->ai_addr;
            lo = lo && (ntohl(in->sin_addr.s_addr) >> 24) == 127;
        } else if (a->ai_family == AF_INET6) {
            const struct sockaddr_in6 *in6 = (const void *)a->ai_addr;
            lo = lo && IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
        } else {
            lo = false;
        }
    }
    freeaddrinfo(res);
    return lo;
}

static int listen_on(const char *addr, int *family, int *port_out, char *err, size_t errlen)
{
    char host[256], port[16];
    if (split_addr(addr, host, sizeof host, port, sizeof port) != 0) {
        snprintf(err, errlen, "'%s' is not HOST:PORT", addr);
        return -1;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", addr, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 64) != 0) {
            snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
            close(fd);
            fd = -1;
            continue;
        }
        *family = a->ai_family;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return -1;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

static void free_server(mm_http_server *s)
{
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->slots);
    free(s->token);
    free(s);
}

mm_http_server *mm_http_start(const mm_http_config *c, mm_http_route route, void *ud,
                              char *err, size_t errlen)
{
    mm_http_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *c;
    if (!s->cfg.max_conns)
        s->cfg.max_conns = 32;
    if (!s->cfg.idle_timeout_s)
        s->cfg.idle_timeout_s = 10;
    if (!s->cfg.request_deadline_ms)
        s->cfg.request_deadline_ms = 5000;
    if (!s->cfg.max_request_bytes)
        s->cfg.max_request_bytes = 8192;
    s->route = route;
    s->ud = ud;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    /* MHD's own limit, a backstop above ours: connections it accepts
     * before our accept policy has counted them */
    s->n_slots = s->cfg.max_conns + 8;
    s->slots = calloc(s->n_slots, sizeof *s->slots);
    if (c->token) {
        size_t n = strlen(c->token) + 8;
        if ((s->token = malloc(n)))
            snprintf(s->token, n, "Bearer %s", c->token);
    }
    if (!s->slots || (c->token && !s->token)) {
        snprintf(err, errlen, "out of memory");
        free_server(s);
        return NULL;
    }
    int family = AF_INET;
    int fd = listen_on(c->addr, &family, &s->port, err, errlen);
    if (fd < 0) {
        free_server(s);
        return NULL;
    }
    unsigned flags = MHD_USE_ERROR_LOG | MHD_USE_INTERNAL_POLLING_THREAD |
                     (c->streams ? MHD_USE_THREAD_PER_CONNECTION : 0) | MHD_USE_POLL |
                     (family == AF_INET6 ? MHD_USE_IPv6 : 0);
    /* The memory pool holds the request line and headers and the reply's
     * headers: MHD answers 431 or 414 to a request that does not fit. */
    size_t pool = s->cfg.max_request_bytes + 4096;
    s->d = MHD_start_daemon(flags, 0, accept_policy, s, on_request, s,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->n_slots,
                            MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.idle_timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
                            MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, errlen, "cannot start the HTTP server on %s", c->addr);
        close(fd);
        free_server(s);
        return NULL;
    }
    if (pthread_create(&s->watchdog, NULL, watchdog, s) == 0)
        s->watchdog_running = true;
    return s;
}

void mm_http_stop(mm_http_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->watchdog_running)
        pthread_join(s->watchdog, NULL);
    MHD_stop_daemon(s->d);
    free_server(s);
}

void mm_http_get_counts(mm_http_server *s, mm_http_counts *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->counts;
    pthread_mutex_unlock(&s->mu);
}

int mm_http_port(const mm_http_server *s) { return s->port; }

void mm_http_reply_copy(mm_http_reply *r, const char *type, const char *text, size_t len)
{
    r->body = malloc(len ? len : 1);
    if (!r->body) {
        r->status = 500;
        return;
    }
    memcpy(r->body, text, len);
    r->len = len;
    r->status = 200;
    r->content_type = type;
}

char *mm_http_read_token(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char line[258];
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    size_t n = got ? strcspn(line, "\r\n") : 0;
    line[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (line[i] <= ' ' || line[i] > '~')
            n = 0;
    if (n < 16 || n > 255) {
        snprintf(err, errlen, "%s: the token must be one line of 16 to 255 printable ASCII "
                 "characters without spaces", path);
        return NULL;
    }
    return strdup(line);
}

void mm_http_print_counts(mm_http_server *s, FILE *out, const char *who)
{
    mm_http_counts c;
    mm_http_get_counts(s, &c);
    fprintf(out, "%s: %llu requests answered; refused or cut:", who,
            (unsigned long long)c.requests);
#define MM_HTTP_PRINT(name, what) fprintf(out, " " #name " %llu", (unsigned long long)c.name);
    MM_HTTP_COUNTERS(MM_HTTP_PRINT)
#undef MM_HTTP_PRINT
    fprintf(out, "\n");
}
