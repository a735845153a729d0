/* murmur watch --hosts FILE: the page of a run whose peers live on several
 * hosts, from their metrics endpoints (docs/metrics.md, "murmur watch",
 * "Peers' endpoints"). Every refresh scrapes each peer's /metrics (HTTP/1.0,
 * a bounded wait and size), reads the families the page needs out of the
 * text exposition, and keeps each peer's history in memory since the watch
 * started; the document has the run's fields, so the page draws it as a
 * run. */
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <fcntl.h>

#include "base/text.h"
#include "net/hosts.h"
#include "watch/watch.h"
#include "watch/watch_int.h"

#define SCRAPE_MAX (4u << 20)       /* bytes of one answer */
#define CONNECT_MS 1000
#define READ_MS 2000
#define MAX_NBRS 64
#define MAX_POINTS 100000           /* kept per peer; the page gets max_points */

typedef struct {
    uint32_t id;
    bool mixed, refused;
    char link[16];
    double dist, recv_bytes;
} nbr;

/* Rows of `width` numbers, kept in memory (at most MAX_POINTS). */
typedef struct {
    double *v;
    size_t n, cap, width;
} series;

static double *row(const series *s, size_t k) { return s->v + k * s->width; }
static double *last_row(const series *s) { return s->n ? row(s, s->n - 1) : NULL; }

/* A new row at the end, or NULL when full or out of memory. */
static double *add_row(series *s)
{
    if (s->n == s->cap && s->cap < MAX_POINTS) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        double *v = realloc(s->v, cap * s->width * sizeof *v);
        if (v) {
            s->v = v;
            s->cap = cap;
        }
    }
    return s->n < s->cap ? row(s, s->n++) : NULL;
}

/* One scrape's figures. */
typedef struct {
    double round, loss, acc, eval_round, eval_loss, sent, t_compute, t_comm, t_wait, xi;
    double ended, isolated;
    double deadline, waited, batch, steps, paced_by; /* --deadline learn, --fit-work */
    char algo[64], topology[256], codec[64];
    int n_nbrs;
    nbr nb[MAX_NBRS];
} scrape;

typedef struct {
    char host[256], port[16];
    bool ever, up;                  /* answered once; the last scrape answered */
    char error[320];                /* why the last one did not */
    double last_ok;                 /* watch time of the last answer */
    scrape s, prev;                 /* the last answer and the one before */
    double s_time, prev_time;
    bool have_prev;
    series rounds;                  /* [round, time, loss, sent, t_compute, t_comm, t_wait] */
    series evals;                   /* [round, acc, loss] */
} peer;

struct mm_watch_hosts {
    unsigned n;
    peer *p;
    char *token;
    double t0;
    char name[256];
};

/* ---- HTTP/1.0 GET --------------------------------------------------------------- */

static int dial(const char *host, const char *port, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "%.200s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EINPROGRESS) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (poll(&pf, 1, CONNECT_MS) != 1 ||
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0) {
                snprintf(err, errlen, "connect: %s", soerr ? strerror(soerr) : "timed out");
                close(fd);
                fd = -1;
            }
        } else if (errno != 0 && errno != EINPROGRESS) {
            snprintf(err, errlen, "connect: %s", strerror(errno));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd >= 0)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

/* The body of a 200 answer to GET /metrics (malloc'd, NUL-terminated), or
 * NULL with why. */
static char *get_metrics(const peer *p, const char *token, char *err, size_t errlen)
{
    errno = 0;
    int fd = dial(p->host, p->port, err, errlen);
    if (fd < 0)
        return NULL;
    struct timeval tv = {.tv_sec = READ_MS / 1000, .tv_usec = (READ_MS % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char req[1024];
    int rl = snprintf(req, sizeof req, "GET /metrics HTTP/1.0\r\nHost: %s:%s\r\n%s%s%s"
                      "Connection: close\r\n\r\n", p->host, p->port,
                      token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "");
    if (rl <= 0 || (size_t)rl >= sizeof req || send(fd, req, (size_t)rl, MSG_NOSIGNAL) != rl) {
        snprintf(err, errlen, "send: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf)
            break;
        if (len == cap) {
            if (cap >= SCRAPE_MAX) {
                snprintf(err, errlen, "answer larger than %u bytes", SCRAPE_MAX);
                free(buf);
                buf = NULL;
                break;
            }
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t got = recv(fd, buf + len, cap - len, 0);
        if (got == 0)
            break;
        if (got < 0) {
            snprintf(err, errlen, "read: %s", errno == EAGAIN ? "timed out" : strerror(errno));
            free(buf);
            buf = NULL;
            break;
        }
        len += (size_t)got;
    }
    close(fd);
    if (!buf) {
        if (!err[0])
            snprintf(err, errlen, "out of memory");
        return NULL;
    }
    buf[len] = '\0';
    int status = 0;
    char *body = strstr(buf, "\r\n\r\n");
    if (sscanf(buf, "HTTP/1.%*[01] %d", &status) != 1 || !body) {
        snprintf(err, errlen, "not an HTTP answer");
        free(buf);
        return NULL;
    }
    if (status != 200) {
        snprintf(err, errlen, "HTTP %d%s", status, status == 401 ? " (--token-file?)" : "");
        free(buf);
        return NULL;
    }
    body += 4;
    memmove(buf, body, strlen(body) + 1);
    return buf;
}

/* ---- the text exposition -------------------------------------------------------- */

/* A sample's label k ("" when absent), its escapes undone, into out. */
static void label(const char *labels, const char *k, char *out, size_t size)
{
    out[0] = '\0';
    size_t kl = strlen(k);
    for (const char *p = labels; p && *p;) {
        while (*p == ',' || *p == ' ')
            p++;
        const char *eq = strchr(p, '=');
        if (!eq || eq[1] != '"')
            return;
        bool match = (size_t)(eq - p) == kl && !strncmp(p, k, kl);
        size_t o = 0;
        for (p = eq + 2; *p && *p != '"'; p++) {
            char c = *p;
            if (c == '\\' && p[1]) {
                c = p[1] == 'n' ? '\n' : p[1];
                p++;
            }
            if (match && o + 1 < size)
                out[o++] = c;
        }
        if (match) {
            out[o] = '\0';
            return;
        }
        if (*p == '"')
            p++;
    }
}

static nbr *nbr_of(scrape *s, const char *labels)
{
    char v[16];
    label(labels, "neighbour", v, sizeof v);
    char *end;
    unsigned long id = strtoul(v, &end, 10);
    if (!v[0] || *end)
        return NULL;
    for (int k = 0; k < s->n_nbrs; k++)
        if (s->nb[k].id == id)
            return &s->nb[k];
    if (s->n_nbrs == MAX_NBRS)
        return NULL;
    nbr *b = &s->nb[s->n_nbrs++];
    *b = (nbr){.id = (uint32_t)id, .dist = NAN, .recv_bytes = NAN};
    return b;
}

/* One sample: name, labels (between the braces, or NULL), value. */
static void take(scrape *s, const char *name, const char *labels, double v)
{
    static const struct {
        const char *name;
        size_t off;
    } plain[] = {
        {"murmur_round", offsetof(scrape, round)},
        {"murmur_train_loss", offsetof(scrape, loss)},
        {"murmur_eval_accuracy_ratio", offsetof(scrape, acc)},
        {"murmur_eval_round", offsetof(scrape, eval_round)},
        {"murmur_eval_loss", offsetof(scrape, eval_loss)},
        {"murmur_transport_sent_bytes_total", offsetof(scrape, sent)},
        {"murmur_compute_seconds_total", offsetof(scrape, t_compute)},
        {"murmur_mix_seconds_total", offsetof(scrape, t_comm)},
        {"murmur_wait_seconds_total", offsetof(scrape, t_wait)},
        {"murmur_consensus_estimate", offsetof(scrape, xi)},
        {"murmur_ended", offsetof(scrape, ended)},
        {"murmur_isolated", offsetof(scrape, isolated)},
        {"murmur_deadline_seconds", offsetof(scrape, deadline)},
        {"murmur_round_waited_seconds", offsetof(scrape, waited)},
        {"murmur_batch", offsetof(scrape, batch)},
        {"murmur_round_local_steps", offsetof(scrape, steps)},
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (!strcmp(name, plain[i].name)) {
            *(double *)((char *)s + plain[i].off) = v;
            return;
        }
    if (!strcmp(name, "murmur_paced_by") && v == 1) {
        char who[24];
        label(labels, "peer", who, sizeof who);
        s->paced_by = who[0] ? atof(who) : NAN;
        return;
    }
    if (!strcmp(name, "murmur_peer_info")) {
        label(labels, "algo", s->algo, sizeof s->algo);
        label(labels, "topology", s->topology, sizeof s->topology);
        label(labels, "codec", s->codec, sizeof s->codec);
        return;
    }
    if (strncmp(name, "murmur_neighbour_", 17) != 0)
        return;
    nbr *b = nbr_of(s, labels);
    if (!b)
        return;
    const char *f = name + 17;
    if (!strcmp(f, "mixed"))
        b->mixed = v == 1;
    else if (!strcmp(f, "refused"))
        b->refused = v == 1;
    else if (!strcmp(f, "distance"))
        b->dist = v;
    else if (!strcmp(f, "recv_bytes_total"))
        b->recv_bytes = v;
    else if (!strcmp(f, "link") && v == 1)
        label(labels, "state", b->link, sizeof b->link);
}

/* The families of body into s; -1 when it holds no murmur_round (not a
 * murmur peer, or one that has not finished a round's line yet). */
static int parse_exposition(char *body, scrape *s)
{
    *s = (scrape){.loss = NAN, .acc = NAN, .eval_round = NAN, .eval_loss = NAN, .sent = NAN,
                  .t_compute = NAN, .t_comm = NAN, .t_wait = NAN, .xi = NAN, .round = NAN,
                  .deadline = NAN, .waited = NAN, .batch = NAN, .steps = NAN, .paced_by = NAN};
    for (char *line = body, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (line[0] == '#' || !line[0])
            continue;
        char *labels = NULL, *rest;
        char *brace = strchr(line, '{'), *sp = strchr(line, ' ');
        if (brace && (!sp || brace < sp)) {
            char *close = strrchr(brace, '}');
            if (!close)
                continue;
            *brace = *close = '\0';
            labels = brace + 1;
            rest = close + 1;
        } else {
            if (!sp)
                continue;
            *sp = '\0';
            rest = sp + 1;
        }
        char *end;
        double v = strtod(rest, &end);
        if (end == rest)
            continue;
        take(s, line, labels, v);
    }
    return isnan(s->round) ? -1 : 0;
}

/* ---- history -------------------------------------------------------------------- */

static void remember(peer *p, double now)
{
    const scrape *s = &p->s;
    const double *r = last_row(&p->rounds), *e = last_row(&p->evals);
    double *n;
    /* the round line's round: rounds completed - 1 */
    if ((!r || r[0] != s->round - 1) && (n = add_row(&p->rounds)))
        memcpy(n, (double[]){s->round - 1, now, s->loss, s->sent, s->t_compute, s->t_comm,
                             s->t_wait}, 7 * sizeof *n);
    if (!isnan(s->eval_round) && (!e || e[0] != s->eval_round) && (n = add_row(&p->evals)))
        memcpy(n, (double[]){s->eval_round, s->acc, s->eval_loss}, 3 * sizeof *n);
}

static void scrape_peer(mm_watch_hosts *h, peer *p, double now)
{
    char err[320] = "";
    char *body = get_metrics(p, h->token, err, sizeof err);
    scrape s;
    if (body && parse_exposition(body, &s) != 0)
        snprintf(err, sizeof err, "no murmur_round in its answer (not a murmur peer yet?)");
    bool ok = body && !err[0];
    free(body);
    p->up = ok;
    if (!ok) {
        snprintf(p->error, sizeof p->error, "%s", err);
        return;
    }
    p->error[0] = '\0';
    if (p->ever) {
        p->prev = p->s;
        p->prev_time = p->s_time;
        p->have_prev = true;
    }
    p->s = s;
    p->s_time = now;
    p->ever = true;
    p->last_ok = now;
    remember(p, now);
}

/* ---- states and the document ---------------------------------------------------- */

/* As a run directory's (watch.c): done, isolated, silent (no answer after
 * one: killed, hung or unreachable; or none in the watch's first stale_s
 * seconds), starting (no answer yet, within them), waiting (a
 * neighbour missing from its last round, or waiting more than computing
 * between its last two answers), running. */
static const char *peer_state(const peer *p, double t, double stale_s)
{
    if (!p->ever)
        return t > stale_s ? "silent" : "starting";
    if (p->s.ended == 1)
        return "done"; /* its endpoint stops with it */
    if (!p->up)
        return "silent";
    if (p->s.isolated == 1)
        return "isolated";
    for (int k = 0; k < p->s.n_nbrs; k++)
        if (!p->s.nb[k].mixed)
            return "waiting";
    if (p->have_prev) {
        double w = p->s.t_wait - p->prev.t_wait, c = p->s.t_compute - p->prev.t_compute;
        if (w > c && w > 0.05)
            return "waiting";
    }
    return "running";
}

static const char *link_state(const mm_watch_hosts *h, const char *const *states, int i,
                              const nbr *b)
{
    if (mm__watch_gone(states[i]) || (b->id < h->n && mm__watch_gone(states[b->id])))
        return "missing";
    if (b->refused)
        return "refused";
    if (!strcmp(states[i], "done"))
        return "idle";
    return b->mixed ? "up" : "slow";
}

static double prev_recv(const peer *p, uint32_t id)
{
    for (int k = 0; p->have_prev && k < p->prev.n_nbrs; k++)
        if (p->prev.nb[k].id == id)
            return p->prev.nb[k].recv_bytes;
    return NAN;
}

static void put_links(mm_text *t, const mm_watch_hosts *h, const char *const *states)
{
    mm_text_put(t, ",\"links\":[");
    bool first = true;
    for (unsigned i = 0; i < h->n; i++) {
        const peer *p = &h->p[i];
        for (int k = 0; p->ever && k < p->s.n_nbrs; k++) {
            const nbr *b = &p->s.nb[k];
            if (!b->link[0])
                continue; /* only a link counter: a peer it talked to, not an in-neighbour */
            mm_text_put(t, "%s{\"from\":%u,\"to\":%u,\"state\":", first ? "" : ",", b->id, i);
            mm_text_json_str(t, link_state(h, states, (int)i, b));
            mm_text_put(t, ",\"dist\":");
            mm_text_json_num(t, b->dist);
            double b0 = prev_recv(p, b->id), dt = p->s_time - p->prev_time;
            mm_text_put(t, ",\"bytes\":");
            if (isfinite(b->recv_bytes))
                mm_text_put(t, "%.0f", b->recv_bytes);
            else
                mm_text_put(t, "null");
            mm_text_put(t, ",\"bps\":");
            mm_text_json_num(t, p->have_prev && dt > 0 ? (b->recv_bytes - b0) / dt : NAN);
            mm_text_put(t, ",\"time\":");
            mm_text_json_num(t, p->s_time);
            mm_text_put(t, "}");
            first = false;
        }
    }
    mm_text_put(t, "]");
}

/* At most max rows, evenly thinned, the last always; the first number of
 * each (a round) as an integer. */
static void put_series(mm_text *t, const series *s, size_t max)
{
    size_t step = s->n > max ? (s->n + max - 1) / max : 1;
    mm_text_put(t, "[");
    for (size_t k = 0; k < s->n; k += step) {
        size_t q = k + step >= s->n ? s->n - 1 : k;
        const double *r = row(s, q);
        mm_text_put(t, "%s[%.0f", k ? "," : "", r[0]);
        for (size_t f = 1; f < s->width; f++) {
            mm_text_put(t, ",");
            mm_text_json_num(t, r[f]);
        }
        mm_text_put(t, "]");
        if (q != k)
            break;
    }
    mm_text_put(t, "]");
}

static void put_peer(mm_text *t, const peer *p, unsigned id, const char *state, double now,
                     int max_points)
{
    mm_text_put(t, "{\"id\":%u,\"state\":", id);
    mm_text_json_str(t, state);
    mm_text_put(t, ",\"round\":%.0f,\"loss\":", p->ever ? p->s.round : 0);
    mm_text_json_num(t, p->ever ? p->s.loss : NAN);
    mm_text_put(t, ",\"acc\":");
    mm_text_json_num(t, p->ever ? p->s.acc : NAN);
    mm_text_put(t, ",\"age\":");
    mm_text_json_num(t, p->ever ? now - p->last_ok : NAN);
    mm_text_put(t, ",\"end\":");
    if (p->ever && p->s.ended == 1)
        mm_text_json_str(t, "done");
    else if (p->error[0])
        mm_text_json_str(t, p->error);
    else
        mm_text_put(t, "null");
    mm__watch_pace_json(t, p->s.deadline, p->s.waited, p->s.batch, p->s.steps,
                  p->ever && p->s.paced_by >= 0 ? (long long)p->s.paced_by : -1);
    mm_text_put(t, ",\"endpoint\":");
    char ep[300];
    snprintf(ep, sizeof ep, "%s:%s", p->host, p->port);
    mm_text_json_str(t, ep);
    mm_text_put(t, ",\"rounds\":");
    put_series(t, &p->rounds, (size_t)max_points);
    mm_text_put(t, ",\"evals\":");
    put_series(t, &p->evals, SIZE_MAX);
    mm_text_put(t, "}");
}

/* One row for the page's consensus charts: the peers' --consensus-target
 * estimates (their mean; null without them) and their last evaluations'
 * mean accuracy, at the lowest round of the peers that answered. */
static void put_rows(mm_text *t, const mm_watch_hosts *h)
{
    double xi = 0, acc = 0, round = INFINITY;
    int n_xi = 0, n_acc = 0, present = 0;
    for (unsigned i = 0; i < h->n; i++) {
        const scrape *s = &h->p[i].s;
        if (!h->p[i].ever)
            continue;
        present++;
        if (s->round < round)
            round = s->round;
        if (isfinite(s->xi)) {
            xi += s->xi * s->xi;
            n_xi++;
        }
        if (isfinite(s->acc)) {
            acc += s->acc;
            n_acc++;
        }
    }
    mm_text_put(t, ",\"rows\":[");
    if (present) {
        mm_text_put(t, "{\"round\":%.0f,\"xi\":", round);
        mm_text_json_num(t, n_xi ? sqrt(xi / n_xi) : NAN);
        mm_text_put(t, ",\"method\":\"estimate\",\"acc\":");
        mm_text_json_num(t, n_acc ? acc / n_acc : NAN);
        mm_text_put(t, ",\"present\":%d}", present);
    }
    mm_text_put(t, "]");
}

mm_watch_hosts *mm_watch_hosts_new(const char *path, const char *metrics_port, const char *token,
                                   double now, char *err, size_t errlen)
{
    size_t pl = strlen(metrics_port);
    bool plus = pl > 0 && metrics_port[pl - 1] == '+';
    char *end;
    long port = strtol(metrics_port, &end, 10);
    if (end == metrics_port || (*end && !(plus && end == metrics_port + pl - 1)) || port <= 0 ||
        port > 65535) {
        snprintf(err, errlen, "--metrics-port %s: PORT or PORT+ (PORT + peer id) wanted",
                 metrics_port);
        return NULL;
    }
    unsigned n;
    char **addrs = mm_hosts_read(path, 0, &n, err, errlen);
    if (!addrs)
        return NULL;
    if (plus && port + (long)n - 1 > 65535) {
        snprintf(err, errlen, "--metrics-port %s: no room for %u peers", metrics_port, n);
        mm_hosts_free(addrs, n);
        return NULL;
    }
    mm_watch_hosts *h = calloc(1, sizeof *h);
    if (h)
        h->p = calloc(n, sizeof *h->p);
    if (!h || !h->p || (token && !(h->token = strdup(token)))) {
        snprintf(err, errlen, "out of memory");
        mm_watch_hosts_free(h);
        mm_hosts_free(addrs, n);
        return NULL;
    }
    h->n = n;
    h->t0 = now;
    const char *slash = strrchr(path, '/');
    snprintf(h->name, sizeof h->name, "%s", slash ? slash + 1 : path);
    for (unsigned i = 0; i < n; i++) {
        peer *p = &h->p[i];
        const char *colon = strrchr(addrs[i], ':');
        size_t hl = (size_t)(colon - addrs[i]);
        const char *host = addrs[i];
        if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') { /* [v6]:port */
            host++;
            hl -= 2;
        }
        snprintf(p->host, sizeof p->host, "%.*s", (int)hl, host);
        snprintf(p->port, sizeof p->port, "%ld", port + (plus ? (long)i : 0));
        p->rounds.width = 7;
        p->evals.width = 3;
    }
    mm_hosts_free(addrs, n);
    return h;
}

void mm_watch_hosts_free(mm_watch_hosts *h)
{
    if (!h)
        return;
    for (unsigned i = 0; h->p && i < h->n; i++) {
        free(h->p[i].rounds.v);
        free(h->p[i].evals.v);
    }
    free(h->p);
    free(h->token);
    free(h);
}

char *mm_watch_hosts_json(mm_watch_hosts *h, const mm_watch_opts *o, double now, size_t *len,
                          char *err, size_t errlen)
{
    double t = now - h->t0;
    for (unsigned i = 0; i < h->n; i++)
        scrape_peer(h, &h->p[i], t);
    const char **states = calloc(h->n, sizeof *states);
    bool *ended = calloc(h->n, sizeof *ended);
    if (!states || !ended) {
        free(states);
        free(ended);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    const scrape *info = NULL;
    for (unsigned i = 0; i < h->n; i++) {
        states[i] = peer_state(&h->p[i], t, o->stale_s);
        ended[i] = !strcmp(states[i], "done");
        if (!info && h->p[i].ever)
            info = &h->p[i].s;
    }
    mm_text txt = {0};
    mm_text_put(&txt, "{\"kind\":\"run\",\"source\":\"hosts\",\"name\":");
    mm_text_json_str(&txt, h->name);
    mm_text_put(&txt, ",\"n\":%u,\"topology\":", h->n);
    mm_text_json_str(&txt, info ? info->topology : "");
    mm_text_put(&txt, ",\"algo\":");
    mm_text_json_str(&txt, info ? info->algo : "");
    mm_text_put(&txt, ",\"codec\":");
    if (info && info->codec[0] && strcmp(info->codec, "none") != 0)
        mm_text_json_str(&txt, info->codec);
    else
        mm_text_put(&txt, "null");
    mm_text_put(&txt, ",\"stale_s\":");
    mm_text_json_num(&txt, o->stale_s);
    /* (an endpoint that stops answering cannot say how its peer ended:
     * silent; the run ends "stopped" then, or "finished" when all said
     * murmur_ended) */
    mm_text_put(&txt, ",\"status\":");
    mm_text_json_str(&txt, mm__watch_run_status(states, ended, (int)h->n, (int)h->n));
    mm_text_put(&txt, ",\"ended_ago\":null");
    mm_text_put(&txt, ",\"peers\":[");
    for (unsigned i = 0; i < h->n; i++) {
        if (i)
            mm_text_put(&txt, ",");
        put_peer(&txt, &h->p[i], i, states[i], t, o->max_points);
    }
    mm_text_put(&txt, "]");
    put_links(&txt, h, states);
    put_rows(&txt, h);
    mm_text_put(&txt, "}");
    free(states);
    free(ended);
    if (txt.oom) {
        mm_text_free(&txt);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *len = txt.len;
    return txt.p;
}
