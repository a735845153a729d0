/* murmur watch DIR: a live page of a run or a sweep (docs/metrics.md,
 * "murmur watch"). A refresher re-reads DIR every --interval seconds into
 * one JSON document (watch/watch.c); the page (watch/web/) gets it pushed as
 * Server-Sent Events on /events. Every asset is served from memory, read at
 * start: the page's three files and Debian's Chart.js. Nothing a client
 * sends can reach the run: the server only reads, and only the names of its
 * route table. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/opt.h"
#include "cli/commands.h"
#include "node/http.h"
#include "watch/watch.h"

#define CHART_JS "/usr/share/javascript/chart.js/chart.min.js"

typedef struct {
    const char *path, *file, *type;
    char *body;
    size_t len;
} asset;

static asset assets[] = {
    {"/", "index.html", "text/html; charset=utf-8", NULL, 0},
    {"/watch.js", "watch.js", "text/javascript; charset=utf-8", NULL, 0},
    {"/watch.css", "watch.css", "text/css; charset=utf-8", NULL, 0},
    {"/chart.js", CHART_JS, "text/javascript; charset=utf-8", NULL, 0},
};
#define N_ASSETS (sizeof assets / sizeof assets[0])

typedef struct {
    const char *dir;
    bool sweep;
    mm_watch_hosts *hosts;  /* --hosts: the peers' endpoints instead of dir */
    mm_watch_opts opts;
    double interval;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *json;             /* the current document */
    size_t json_len;
    uint64_t gen;           /* bumps with every new document */
    char error[512];        /* the last refresh's error, "" if none */
    bool stopping;
} watch;

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

static double now_s(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* ---- the document ------------------------------------------------------------ */

static void refresh(watch *w)
{
    char err[512] = "";
    size_t len = 0;
    char *j = w->hosts  ? mm_watch_hosts_json(w->hosts, &w->opts, now_s(), &len, err, sizeof err)
              : w->sweep ? mm_watch_sweep_json(w->dir, &w->opts, now_s(), &len, err, sizeof err)
                         : mm_watch_run_json(w->dir, &w->opts, now_s(), &len, err, sizeof err);
    pthread_mutex_lock(&w->mu);
    if (j) {
        free(w->json);
        w->json = j;
        w->json_len = len;
        w->error[0] = '\0';
    } else {
        snprintf(w->error, sizeof w->error, "%s", err);
    }
    w->gen++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* The document or, before there is one, {"kind":"wait","error":...}. */
static char *current(watch *w, size_t *len, uint64_t *gen)
{
    char *out;
    if (w->json) {
        out = malloc(w->json_len + 1);
        if (out) {
            memcpy(out, w->json, w->json_len);
            out[w->json_len] = '\0';
        }
        *len = w->json_len;
    } else {
        char msg[700];
        /* error texts are ours (paths and reasons); quotes and backslashes dropped */
        char clean[512];
        size_t k = 0;
        for (const char *p = w->error; *p && k + 1 < sizeof clean; p++)
            if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
                clean[k++] = *p;
        clean[k] = '\0';
        snprintf(msg, sizeof msg, "{\"kind\":\"wait\",\"error\":\"%s\"}", clean);
        out = strdup(msg);
        *len = strlen(msg);
    }
    *gen = w->gen;
    return out;
}

/* ---- /events: one Server-Sent Events stream per client -------------------------- */

typedef struct {
    watch *w;
    uint64_t gen;           /* of the last document sent (0: none yet) */
    char *msg;              /* the event being written */
    size_t len, off;
} stream;

/* Waits (at most 2 s) for a document newer than the last sent, and frames
 * it as an event; a comment line keeps an idle stream alive. */
static void next_event(stream *s)
{
    watch *w = s->w;
    pthread_mutex_lock(&w->mu);
    if (w->gen == s->gen && !w->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 2;
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    free(s->msg);
    s->msg = NULL;
    s->off = s->len = 0;
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        return;
    }
    if (w->gen == s->gen) {
        pthread_mutex_unlock(&w->mu);
        s->msg = strdup(": idle\n\n");
        s->len = s->msg ? strlen(s->msg) : 0;
        return;
    }
    size_t len;
    char *doc = current(w, &len, &s->gen);
    pthread_mutex_unlock(&w->mu);
    if (!doc)
        return;
    const char *head = "event: state\ndata: ";
    size_t hl = strlen(head);
    s->msg = malloc(hl + len + 3);
    if (s->msg) {
        memcpy(s->msg, head, hl);
        memcpy(s->msg + hl, doc, len);
        memcpy(s->msg + hl + len, "\n\n", 3);
        s->len = hl + len + 2;
    }
    free(doc);
}

static ssize_t stream_read(void *ctx, char *buf, size_t max)
{
    stream *s = ctx;
    if (s->off >= s->len)
        next_event(s);
    if (!s->msg)
        return -1; /* stopping, or out of memory: the stream ends */
    size_t n = s->len - s->off < max ? s->len - s->off : max;
    memcpy(buf, s->msg + s->off, n);
    s->off += n;
    return (ssize_t)n;
}

static void stream_free(void *ctx)
{
    stream *s = ctx;
    free(s->msg);
    free(s);
}

/* ---- routes ------------------------------------------------------------------ */

static void route(void *ud, const char *path, mm_http_reply *r)
{
    watch *w = ud;
    for (size_t i = 0; i < N_ASSETS; i++)
        if (!strcmp(path, assets[i].path)) {
            mm_http_reply_copy(r, assets[i].type, assets[i].body, assets[i].len);
            return;
        }
    if (!strcmp(path, "/state.json")) {
        pthread_mutex_lock(&w->mu);
        size_t len;
        uint64_t gen;
        char *doc = current(w, &len, &gen);
        pthread_mutex_unlock(&w->mu);
        if (doc) {
            r->status = 200;
            r->content_type = "application/json";
            r->body = doc;
            r->len = len;
        }
        return;
    }
    if (!strcmp(path, "/events")) {
        stream *s = calloc(1, sizeof *s);
        if (!s)
            return;
        s->w = w;
        r->status = 200;
        r->content_type = "text/event-stream";
        r->stream = stream_read;
        r->stream_ctx = s;
        r->stream_free = stream_free;
    }
}

/* ---- set-up ------------------------------------------------------------------- */

/* The page's files: --assets DIR, else watch/web beside the murmur program. */
static int load_assets(const char *dir, char *err, size_t errlen)
{
    char base[PATH_MAX] = "";
    if (dir) {
        snprintf(base, sizeof base, "%s", dir);
    } else {
        ssize_t n = readlink("/proc/self/exe", base, sizeof base - 16);
        if (n <= 0) {
            snprintf(err, errlen, "cannot find the page's files: give --assets DIR");
            return -1;
        }
        base[n] = '\0';
        char *slash = strrchr(base, '/');
        snprintf(slash ? slash : base, sizeof base - (size_t)(slash ? slash - base : 0),
                 "/watch/web");
    }
    for (size_t i = 0; i < N_ASSETS; i++) {
        char path[PATH_MAX + 64];
        if (assets[i].file[0] == '/')
            snprintf(path, sizeof path, "%s", assets[i].file);
        else
            snprintf(path, sizeof path, "%s/%s", base, assets[i].file);
        char why[PATH_MAX + 128];
        if (mm_read_file(path, &assets[i].body, &assets[i].len, 4u << 20, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s%s", why,
                     assets[i].file[0] == '/' ? " (Debian's libjs-chart.js: make deps installs it)"
                                              : " (--assets DIR names where the page's files are)");
            return -1;
        }
    }
    return 0;
}

/* --hosts: the endpoints of the hosts file's peers, and their token. */
static int open_hosts(watch *w, const char *port, const char *token_file)
{
    char err[PATH_MAX + 256];
    char *token = NULL;
    if (token_file && !(token = mm_http_read_token(token_file, err, sizeof err))) {
        fprintf(stderr, "murmur watch: --metrics-token-file %s\n", err);
        return -1;
    }
    w->hosts = mm_watch_hosts_new(w->dir, port, token, now_s(), err, sizeof err);
    free(token);
    if (!w->hosts) {
        fprintf(stderr, "murmur watch: --hosts %s\n", err);
        return -1;
    }
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: murmur watch DIR [--addr HOST:PORT] [--interval SEC] [--stale SEC]\n"
            "                        [--no-exact] [--token-file FILE] [--once]\n"
            "       murmur watch --hosts FILE --metrics-port PORT[+] [--metrics-token-file FILE]\n"
            "                        [--addr HOST:PORT] [--interval SEC] [--token-file FILE] [--once]\n\n"
            "Serves a live page of a run directory or a sweep directory (with sweep.plan):\n"
            "loss, accuracy and consensus distance against round, accuracy against\n"
            "consensus distance, bytes per second, the time split, and the topology with\n"
            "each peer's and link's state; for a sweep, accuracy against consensus distance\n"
            "with error bars and the grid's progress. With --hosts, the same page of a run's\n"
            "peers from their --metrics-addr endpoints (PORT+: PORT + the peer's id), on\n"
            "the hosts of a hosts file as run-hosts.sh takes, scraped every --interval.\n"
            "Open http://HOST:PORT/ in a browser:\n"
            "updates are pushed (Server-Sent Events); the page needs no internet.\n"
            "docs/metrics.md, \"murmur watch\".\n\n");
}

int cmd_watch(int argc, char **argv)
{
    const char *addr = "127.0.0.1:8090", *token_file = NULL, *assets_dir = NULL;
    const char *hosts_file = NULL, *metrics_port = NULL, *metrics_token_file = NULL;
    double interval = 1, stale = 5;
    bool no_exact = false, once = false;
    int max_points = 400;
    mm_opt table[] = {
        MM_OPT(MM_OPT_STR, "addr", "HOST:PORT", &addr, 0, 0,
               "where the page is served (a non-loopback host wants --token-file)"),
        MM_OPT(MM_OPT_DOUBLE, "interval", "SEC", &interval, 0.1, 3600,
               "re-read DIR and push an update this often"),
        MM_OPT(MM_OPT_DOUBLE, "stale", "SEC", &stale, 0.5, 1e6,
               "a running peer that wrote nothing for this long is shown silent (failed)"),
        MM_OPT(MM_OPT_FLAG, "no-exact", NULL, &no_exact, 0, 0,
               "do not read snapshots: the consensus distance from the sketches only"),
        MM_OPT(MM_OPT_INT, "max-points", "N", &max_points, 10, 100000,
               "points per peer series sent to the page"),
        MM_OPT(MM_OPT_STR, "token-file", "FILE", &token_file, 0, 0,
               "ask for 'Authorization: Bearer TOKEN', TOKEN the file's first line",
               .hide_default = true),
        MM_OPT(MM_OPT_STR, "assets", "DIR", &assets_dir, 0, 0,
               "the page's files (default: watch/web beside the murmur program)",
               .hide_default = true),
        MM_OPT(MM_OPT_STR, "hosts", "FILE", &hosts_file, 0, 0,
               "watch the peers of a hosts file through their metrics endpoints, not DIR",
               .hide_default = true),
        MM_OPT(MM_OPT_STR, "metrics-port", "PORT[+]", &metrics_port, 0, 0,
               "with --hosts: where each peer's endpoint listens on its host (PORT+: PORT + id)",
               .hide_default = true),
        MM_OPT(MM_OPT_STR, "metrics-token-file", "FILE", &metrics_token_file, 0, 0,
               "with --hosts: the endpoints' bearer token (their --metrics-token-file)",
               .hide_default = true),
        MM_OPT(MM_OPT_FLAG, "once", NULL, &once, 0, 0,
               "print the page's JSON document once and exit (no server)"),
        {.kind = MM_OPT_END},
    };
    int first = 0;
    int rc = mm_opt_parse("watch", argc, argv, table, &first, usage);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    if (argc - first != (hosts_file ? 0 : 1)) {
        fprintf(stderr, hosts_file ? "murmur watch: --hosts watches endpoints: no directory too\n"
                                   : "murmur watch: give one run or sweep directory\n");
        return 2;
    }
    if (!hosts_file != !metrics_port || (metrics_token_file && !hosts_file)) {
        fprintf(stderr, "murmur watch: --hosts and --metrics-port go together (and "
                        "--metrics-token-file with them)\n");
        return 2;
    }
    watch w = {.dir = hosts_file ? hosts_file : argv[first], .interval = interval,
               .opts = {.stale_s = stale, .no_exact = no_exact, .max_points = max_points}};
    if (hosts_file && open_hosts(&w, metrics_port, metrics_token_file) != 0)
        return 2;
    w.sweep = !hosts_file && mm_watch_is_sweep(w.dir);
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    if (once) {
        refresh(&w);
        if (!w.json) {
            fprintf(stderr, "murmur watch: %s\n", w.error);
            mm_watch_hosts_free(w.hosts);
            return 1;
        }
        printf("%s\n", w.json);
        free(w.json);
        mm_watch_hosts_free(w.hosts);
        return 0;
    }
    char err[PATH_MAX + 256];
    if (load_assets(assets_dir, err, sizeof err) != 0) {
        fprintf(stderr, "murmur watch: %s\n", err);
        mm_watch_hosts_free(w.hosts);
        return 1;
    }
    char *token = NULL;
    if (token_file && !(token = mm_http_read_token(token_file, err, sizeof err))) {
        fprintf(stderr, "murmur watch: --token-file %s\n", err);
        mm_watch_hosts_free(w.hosts);
        return 2;
    }
    refresh(&w);
    mm_http_config hc = {.addr = addr, .token = token, .max_conns = 32, .streams = true};
    mm_http_server *srv = mm_http_start(&hc, route, &w, err, sizeof err);
    free(token);
    if (!srv) {
        fprintf(stderr, "murmur watch: --addr: %s\n", err);
        mm_watch_hosts_free(w.hosts);
        return 1;
    }
    if (!mm_http_addr_is_loopback(addr) && !token_file)
        fprintf(stderr, "murmur watch: warning: %s is not a loopback address and has no "
                        "--token-file: anyone who can reach it sees the run\n", addr);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    fprintf(stderr, "murmur watch: %s %s at http://%s/ (Ctrl-C stops)\n",
            w.sweep ? "sweep" : "run", w.dir, addr);
    while (!stop_signal) {
        struct timespec ts = {.tv_sec = (time_t)interval,
                              .tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop_signal)
            ;
        if (!stop_signal)
            refresh(&w);
    }
    pthread_mutex_lock(&w.mu);
    w.stopping = true;
    pthread_cond_broadcast(&w.cv);
    pthread_mutex_unlock(&w.mu);
    mm_http_print_counts(srv, stderr, "murmur watch");
    mm_http_stop(srv);
    free(w.json);
    mm_watch_hosts_free(w.hosts);
    for (size_t i = 0; i < N_ASSETS; i++)
        free(assets[i].body);
    return 0;
}
