/* A small read-only HTTP server on GNU libmicrohttpd, shared by the peer's
 * metrics endpoint (node/exporter.c) and `murmur watch` (cli/cmd_watch.c).
 * It answers GET of the paths its route function knows and nothing else,
 * and enforces the limits of docs/metrics.md ("Safety of the HTTP
 * servers"): bounded request and header size (MHD's per-connection memory
 * pool), a bounded number of connections (counted when refused), a
 * deadline for a whole request (a client still sending its request after
 * it is cut off: slowloris), an idle timeout, and an optional bearer token.
 * Every refusal is counted by reason (mm_http_counts), and the server never
 * reads a file path out of a URL: routes map names to content. */
#ifndef MURMUR_HTTP_H
#define MURMUR_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Refusals and cuts, by reason; names as the metrics export them. */
#define MM_HTTP_COUNTERS(X)                                                           \
    X(method, "a method other than GET")                                              \
    X(path, "a path the server does not serve (404)")                                 \
    X(auth, "a missing or wrong bearer token (401)")                                  \
    X(body, "a request with a body")                                                  \
    X(conn_limit, "a connection over the server's connection limit, closed at once")  \
    X(slow, "a request not complete within the request deadline, cut off")            \
    X(malformed, "a connection closed before any request on it was answered: a request " \
                 "MHD refused (bad request line, headers too large: 400, 414, 431) or a " \
                 "client that hung up or went idle first")

typedef struct {
    uint64_t requests;      /* answered with 200 */
#define MM_HTTP_FIELD(name, what) uint64_t name;
    MM_HTTP_COUNTERS(MM_HTTP_FIELD)
#undef MM_HTTP_FIELD
} mm_http_counts;

/* What a route answers. Either a whole body (malloc'd; the server frees
 * it) or a stream: stream() is called from the connection's own thread
 * (stream servers run a thread per connection) and may block; it returns
 * the bytes written into buf (at most max), 0 to be called again, or -1 at
 * the end. stream_free(stream_ctx) is called once the connection is done.
 * counts is filled by the server before the route is called. */
typedef struct {
    mm_http_counts counts;  /* in: the server's counters as the request came
                             * (a route may be called before mm_http_start
                             * has returned its server to the caller) */
    int status;
    const char *content_type;
    char *body;
    size_t len;
    ssize_t (*stream)(void *ctx, char *buf, size_t max);
    void *stream_ctx;
    void (*stream_free)(void *ctx);
} mm_http_reply;

/* Fills r for path (the query string is not part of it); leaving
 * r->status 0 means 404. Called from MHD's threads, concurrently. */
typedef void (*mm_http_route)(void *ud, const char *path, mm_http_reply *r);

typedef struct {
    const char *addr;          /* HOST:PORT or [V6]:PORT; HOST may be a name */
    const char *token;         /* NULL: none; else every request must carry
                                * "Authorization: Bearer TOKEN" */
    unsigned max_conns;        /* at once (default 32) */
    unsigned idle_timeout_s;   /* default 10 */
    unsigned request_deadline_ms; /* from connection (or last reply) to a whole request; default 5000 */
    size_t max_request_bytes;  /* request line + headers (default 8192) */
    bool streams;              /* routes may stream (a thread per connection) */
} mm_http_config;

typedef struct mm_http_server mm_http_server;

/* Starts serving on its own threads. NULL with the reason in err. */
mm_http_server *mm_http_start(const mm_http_config *c, mm_http_route route, void *ud,
                              char *err, size_t errlen);
/* Stops: closes every connection (streams see their end) and joins. */
void mm_http_stop(mm_http_server *s);
void mm_http_get_counts(mm_http_server *s, mm_http_counts *out);
/* One line: "WHO: N requests answered; refused or cut: method N path N ...". */
void mm_http_print_counts(mm_http_server *s, FILE *out, const char *who);
/* The port it listens on (useful with port 0). */
int mm_http_port(const mm_http_server *s);
/* Whether addr (HOST:PORT) names a loopback host. */
bool mm_http_addr_is_loopback(const char *addr);

/* The reply helpers routes use: a copy of text (len bytes) with a type. */
void mm_http_reply_copy(mm_http_reply *r, const char *type, const char *text, size_t len);

/* Reads a bearer token from a file (first line, at most 255 bytes,
 * printable ASCII, at least 16 bytes). NULL with the reason in err. */
char *mm_http_read_token(const char *path, char *err, size_t errlen);

#endif
