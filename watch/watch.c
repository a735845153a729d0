/* murmur watch's JSON (watch/watch.h; the fields in docs/metrics.md,
 * "murmur watch"). A run: murmur report's rows and per-peer records, each
 * peer's state, and the topology's links with their states from the peers'
 * last round lines. A sweep: murmur report --sweep's settings and runs. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/text.h"
#include "gossip/topology.h"
#include "watch/watch.h"
#include "watch/watch_int.h"
#include "report/jsonl.h"
#include "report/report.h"
#include "report/sweep.h"

bool mm_watch_is_sweep(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/sweep.plan", dir);
    return access(path, R_OK) == 0;
}

/* ---- a peer's last round line ---------------------------------------------- */

/* What the links need of a peer's last round line, and of the round line
 * at least LINK_RATE_S before it (or the earliest one read) for the links'
 * bytes per second. */
typedef struct {
    bool have, have_prev;
    int64_t round;
    double *nbrs, *missing;   /* ids */
    size_t n_nbrs, n_missing;
    double time, prev_time;
    mm_json_obj o;            /* owns the arrays; dist and link_bytes_recv are in it */
    mm_json_obj prev;
} last_round;

#define LINK_RATE_S 1.0

/* The round line that starts at line (up to end), parsed into o: 0, or -1
 * when it is not one. */
static int parse_round(const char *line, const char *end, mm_json_obj *o, double *time)
{
    if (!memmem(line, (size_t)(end - line), "\"ev\":\"round\"", 12))
        return -1;
    char err[128];
    if (mm_json_parse(line, (size_t)(end - line), o, err, sizeof err) != 0)
        return -1;
    if (!mm_json_num(o, "time", time)) {
        mm_json_free(o);
        return -1;
    }
    return 0;
}

static void take_last(last_round *lr)
{
    double r;
    const mm_json_field *a = mm_json_get(&lr->o, "nbrs"), *m = mm_json_get(&lr->o, "missing");
    lr->have = mm_json_num(&lr->o, "round", &r);
    lr->round = (int64_t)r;
    if (a && a->type == MM_J_ARR) {
        lr->nbrs = a->arr;
        lr->n_nbrs = a->n_arr;
    }
    if (m && m->type == MM_J_ARR) {
        lr->missing = m->arr;
        lr->n_missing = m->n_arr;
    }
}

/* The last complete line of path with "ev":"round", from its last 256 KiB,
 * and the one LINK_RATE_S before it (or the earliest there). */
static void read_last_round(const char *path, last_round *lr)
{
    memset(lr, 0, sizeof *lr);
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long from = size > 262144 ? size - 262144 : 0;
    fseek(f, from, SEEK_SET);
    size_t cap = (size_t)(size - from);
    char *buf = malloc(cap + 1);
    size_t n = buf ? fread(buf, 1, cap, f) : 0;
    fclose(f);
    if (!buf)
        return;
    buf[n] = '\0';
    /* complete lines only: up to the last newline */
    while (n > 0 && buf[n - 1] != '\n')
        n--;
    char *end = buf + n;
    bool parsed = false;
    while (end > buf) {
        char *line = end - 1; /* the newline of the line before */
        while (line > buf && line[-1] != '\n')
            line--;
        mm_json_obj o;
        double time;
        if (line > buf || from == 0) /* a line cut by the 256 KiB is not read */
            if (parse_round(line, end, &o, &time) == 0) {
                if (!parsed) {
                    lr->o = o;
                    lr->time = time;
                    parsed = true;
                    take_last(lr);
                } else {
                    if (lr->have_prev)
                        mm_json_free(&lr->prev);
                    lr->prev = o;
                    lr->prev_time = time;
                    lr->have_prev = true;
                    if (time <= lr->time - LINK_RATE_S)
                        break;
                }
            }
        end = line;
    }
    if (parsed && !lr->have)
        mm_json_free(&lr->o);
    free(buf);
}

static void free_last_round(last_round *lr)
{
    if (lr->have)
        mm_json_free(&lr->o);
    if (lr->have_prev)
        mm_json_free(&lr->prev);
}

static bool has_id(const double *ids, size_t n, uint32_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == (double)id)
            return true;
    return false;
}

/* A round line's object field (dist, link_bytes_recv, ...) at key id; NaN
 * when absent. */
static double obj_value(const mm_json_obj *o, const char *field, uint32_t id)
{
    const mm_json_field *d = mm_json_get(o, field);
    char key[16];
    snprintf(key, sizeof key, "%u", id);
    if (d && d->type == MM_J_OBJ)
        for (size_t i = 0; i < d->n_obj; i++)
            if (!strcmp(d->obj[i].key, key))
                return d->obj[i].num;
    return NAN;
}

/* ---- peer and link states ---------------------------------------------------- */

bool mm__watch_at_work(const char *state)
{
    return !strcmp(state, "starting") || !strcmp(state, "running") ||
           !strcmp(state, "waiting") || !strcmp(state, "isolated");
}

bool mm__watch_gone(const char *state)
{
    return !strcmp(state, "killed") || !strcmp(state, "dead") || !strcmp(state, "silent");
}

const char *mm__watch_run_status(const char *const *states, const bool *ended, int n,
                                 int expected)
{
    bool all_ended = n >= expected;
    for (int i = 0; i < n; i++) {
        if (!ended[i] && mm__watch_at_work(states[i]))
            return "running";
        all_ended &= ended[i];
    }
    return all_ended ? "finished" : n < expected ? "running" : "stopped";
}

/* What run-local.sh's launch/ says of a peer's process: alive, gone
 * without a recorded status, exited (its status in *status, from
 * launch/node-K.exit, when it is no older than the peer's metrics, whose
 * mtime is given: a peer restarted by hand writes after it), or nothing
 * to ask (another launcher, another host). */
typedef enum { FATE_UNKNOWN, FATE_ALIVE, FATE_GONE, FATE_EXITED } fate;

static fate peer_fate(const char *dir, int id, double metrics_mtime, int *status)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/launch/node-%d.exit", dir, id);
    struct stat st;
    if (stat(path, &st) == 0) {
        if ((double)st.st_mtime + 1 < metrics_mtime)
            return FATE_UNKNOWN; /* the process writing now is not the launcher's */
        FILE *f = fopen(path, "r");
        int got = f ? fscanf(f, "%d", status) : 0;
        if (f)
            fclose(f);
        if (got == 1)
            return FATE_EXITED;
    }
    FILE *f;
    snprintf(path, sizeof path, "%s/launch/node-%d.pid", dir, id);
    if (!(f = fopen(path, "r")))
        return FATE_UNKNOWN;
    long pid = 0;
    int got = fscanf(f, "%ld", &pid);
    fclose(f);
    if (got != 1 || pid <= 1)
        return FATE_UNKNOWN;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH ? FATE_GONE : FATE_ALIVE;
}

/* Why a peer without an end line is no more, for its "end" field: the
 * signal or status its launcher recorded, or that its process is gone. */
static void gone_why(fate fa, int status, char *buf, size_t len)
{
    if (fa == FATE_EXITED && status > 128 && status < 160)
        snprintf(buf, len, "killed by signal %d%s", status - 128,
                 status == 128 + SIGKILL ? " (SIGKILL)" : status == 128 + SIGTERM ? " (SIGTERM)" : "");
    else if (fa == FATE_EXITED)
        snprintf(buf, len, "exited with status %d, no end line", status);
    else
        snprintf(buf, len, "its process is gone, no end line");
}

/* docs/metrics.md, "murmur watch": done, refused, isolated; killed (no end
 * line, and its launcher recorded a signal) or dead (no end line, its
 * process gone otherwise); silent (with no launcher to ask, no line for
 * stale_s: killed or hung, which cannot be told apart); waiting (the last
 * round missed a neighbour, or its recent rounds waited more than they
 * computed, or a live process wrote nothing for stale_s); running. */
static const char *peer_state(const mm_rep_peer *p, const last_round *lr, fate fa, int status,
                              double now, double stale_s)
{
    if (!p->has_metrics)
        return "starting";
    if (p->ended)
        return !strcmp(p->end_reason, "refused")    ? "refused"
               : !strcmp(p->end_reason, "isolated") ? "isolated"
                                                     : "done";
    if (fa == FATE_EXITED)
        return status > 128 && status < 160 ? "killed" : "dead";
    if (fa == FATE_GONE)
        return "dead";
    if (fa == FATE_UNKNOWN && now - p->mtime > stale_s)
        return "silent";
    if (now - p->mtime > stale_s)
        return "waiting";
    if (p->isolated_now)
        return "isolated";
    if (lr->have && lr->n_missing > 0)
        return "waiting";
    if (p->n_rounds >= 2) {
        size_t k = p->n_rounds - 1, j = p->n_rounds > 10 ? p->n_rounds - 10 : 0;
        const mm_rep_round *a = &p->rounds[j], *b = &p->rounds[k];
        if (b->t_wait - a->t_wait > b->t_compute - a->t_compute && b->t_wait - a->t_wait > 0.05)
            return "waiting";
    }
    return "running";
}

/* The link from in-neighbour j to peer i, from i's last round line:
 * missing (either end silent, or j never came), refused, slow (j missed
 * i's last round), up (mixed in it), or idle (no round line yet, or both
 * ended). */
static const char *link_state(const mm_report *r, const char *const *states, const last_round *lri,
                              int i, uint32_t j)
{
    const mm_rep_peer *pi = &r->peers[i];
    if (mm__watch_gone(states[i]) || ((int)j < r->n_peers && mm__watch_gone(states[j])))
        return "missing";
    if (pi->first_refused == (int)j || ((int)j < r->n_peers && r->peers[j].first_refused == i))
        return "refused";
    if (!lri->have)
        return "idle";
    if (has_id(lri->missing, lri->n_missing, j))
        return "slow";
    if (has_id(lri->nbrs, lri->n_nbrs, j))
        return "up";
    return "idle";
}

/* ---- the run's JSON ----------------------------------------------------------- */

static void put_series(mm_text *t, const mm_rep_peer *p, int max_points)
{
    size_t step = p->n_rounds > (size_t)max_points ? (p->n_rounds + max_points - 1) / max_points : 1;
    mm_text_put(t, ",\"rounds\":[");
    for (size_t k = 0; k < p->n_rounds; k += step) {
        /* always the last one too */
        size_t q = k + step >= p->n_rounds ? p->n_rounds - 1 : k;
        const mm_rep_round *x = &p->rounds[q];
        mm_text_put(t, "%s[%lld,", k ? "," : "", (long long)x->round);
        mm_text_json_num(t, x->time);
        mm_text_put(t, ",");
        mm_text_json_num(t, x->loss);
        mm_text_put(t, ",%.0f,", x->bytes_sent);
        mm_text_json_num(t, x->t_compute);
        mm_text_put(t, ",");
        mm_text_json_num(t, x->t_comm);
        mm_text_put(t, ",");
        mm_text_json_num(t, x->t_wait);
        mm_text_put(t, "]");
        if (q != k)
            break;
    }
    mm_text_put(t, "],\"evals\":[");
    for (size_t k = 0; k < p->n_evals; k++) {
        mm_text_put(t, "%s[%lld,", k ? "," : "", (long long)p->evals[k].round);
        mm_text_json_num(t, p->evals[k].val_acc);
        mm_text_put(t, ",");
        mm_text_json_num(t, p->evals[k].val_loss);
        mm_text_put(t, "]");
    }
    mm_text_put(t, "]");
}

static void put_peer(mm_text *t, const mm_rep_peer *p, const char *state, const char *why,
                     double now, const mm_watch_opts *o)
{
    const mm_rep_round *last = p->n_rounds ? &p->rounds[p->n_rounds - 1] : NULL;
    const mm_rep_eval *ev = p->n_evals ? &p->evals[p->n_evals - 1] : NULL;
    mm_text_put(t, "{\"id\":%d,\"state\":", p->id);
    mm_text_json_str(t, state);
    mm_text_put(t, ",\"round\":%lld,\"loss\":", last ? (long long)last->round + 1 : 0LL);
    mm_text_json_num(t, last ? last->loss : NAN);
    mm_text_put(t, ",\"acc\":");
    mm_text_json_num(t, ev ? ev->val_acc : NAN);
    mm_text_put(t, ",\"age\":");
    mm_text_json_num(t, p->has_metrics ? now - p->mtime : NAN);
    mm_text_put(t, ",\"end\":");
    if (p->ended)
        mm_text_json_str(t, p->end_reason);
    else if (why[0])
        mm_text_json_str(t, why);
    else
        mm_text_put(t, "null");
    mm__watch_pace_json(t, last ? last->deadline : NAN, last ? last->waited : NAN,
                  last ? last->batch : NAN, last ? last->steps_done : NAN,
                  last ? (long long)last->paced_by : -1);
    put_series(t, p, o->max_points);
    mm_text_put(t, "}");
}

/* What i received from j (its round line's link_bytes_recv) and per
 * second over the last LINK_RATE_S or more; null before there is any. */
static void put_link_bytes(mm_text *t, const last_round *lr, uint32_t j)
{
    double b1 = lr->have ? obj_value(&lr->o, "link_bytes_recv", j) : NAN;
    double b0 = lr->have_prev ? obj_value(&lr->prev, "link_bytes_recv", j) : NAN;
    if (lr->have_prev && isnan(b0) && !isnan(b1))
        b0 = 0; /* no traffic with j yet then */
    double dt = lr->time - lr->prev_time;
    mm_text_put(t, ",\"bytes\":");
    if (isfinite(b1))
        mm_text_put(t, "%.0f", b1);
    else
        mm_text_put(t, "null");
    mm_text_put(t, ",\"bps\":");
    mm_text_json_num(t, lr->have_prev && dt > 0 ? (b1 - b0) / dt : NAN);
    mm_text_put(t, ",\"time\":");
    mm_text_json_num(t, lr->have ? lr->time : NAN);
}

static void put_links(mm_text *t, const mm_report *r, const mm_topology *topo,
                      const char *const *states, const last_round *lr)
{
    mm_text_put(t, ",\"links\":[");
    bool first = true;
    int n = mm_topo_n(topo);
    int deg = mm_topo_max_degree(topo);
    mm_neighbour *in = calloc((size_t)deg + 1, sizeof *in), *out = calloc((size_t)deg + 1, sizeof *out);
    for (int i = 0; in && out && i < n && i < r->n_peers; i++) {
        mm_round_view v = {.in = in, .out = out};
        uint64_t round = lr[i].have ? (uint64_t)lr[i].round : 0;
        if (mm_topo_round(topo, (uint32_t)i, round, &v) != 0)
            continue;
        for (int k = 0; k < v.n_in; k++) {
            uint32_t j = v.in[k].peer;
            mm_text_put(t, "%s{\"from\":%u,\"to\":%d,\"state\":", first ? "" : ",", j, i);
            mm_text_json_str(t, link_state(r, states, &lr[i], i, j));
            mm_text_put(t, ",\"dist\":");
            mm_text_json_num(t, lr[i].have ? obj_value(&lr[i].o, "dist", j) : NAN);
            put_link_bytes(t, &lr[i], j);
            mm_text_put(t, "}");
            first = false;
        }
    }
    free(in);
    free(out);
    mm_text_put(t, "]");
}

static void put_rows(mm_text *t, const mm_report *r)
{
    mm_text_put(t, ",\"rows\":[");
    for (size_t k = 0; k < r->n_rows; k++) {
        const mm_rep_row *w = &r->rows[k];
        mm_text_put(t, "%s{\"round\":%lld,\"xi\":", k ? "," : "", (long long)w->round);
        mm_text_json_num(t, w->xi);
        mm_text_put(t, ",\"method\":");
        mm_text_json_str(t, w->method);
        const double v[] = {w->acc_mean, w->acc_min, w->acc_max, w->vloss_mean, w->loss_mean,
                            w->f_compute, w->f_comm, w->f_wait, w->sent_sum, w->wall};
        const char *names[] = {"acc", "acc_min", "acc_max", "vloss", "loss", "f_compute",
                               "f_comm", "f_wait", "sent", "wall"};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
            mm_text_put(t, ",\"%s\":", names[i]);
            mm_text_json_num(t, v[i]);
        }
        mm_text_put(t, ",\"present\":%d}", w->n_present);
    }
    mm_text_put(t, "]");
}

char *mm_watch_run_json(const char *dir, const mm_watch_opts *o, double now, size_t *len,
                        char *err, size_t errlen)
{
    mm_report r;
    FILE *devnull = fopen("/dev/null", "w");
    mm_report_opts ro = {.no_exact = o->no_exact, .quiet_tail = true, .warn = devnull};
    int rc = mm_report_load(dir, &ro, &r, err, errlen);
    if (devnull)
        fclose(devnull);
    if (rc != 0)
        return NULL;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/topology.txt", dir);
    char terr[256];
    mm_topology *topo = mm_topo_load(path, terr, sizeof terr);
    if (!topo && r.topology[0]) /* not launched by a script: the start line's file */
        topo = mm_topo_load(r.topology, terr, sizeof terr);
    last_round *lr = calloc((size_t)r.n_peers + 1, sizeof *lr);
    const char **states = calloc((size_t)r.n_peers + 1, sizeof *states);
    char (*why)[96] = calloc((size_t)r.n_peers + 1, sizeof *why);
    bool *ended = calloc((size_t)r.n_peers + 1, sizeof *ended);
    mm_text t = {0};
    if (!lr || !states || !why || !ended) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    double last_write = 0; /* the newest metrics line of the run */
    for (int i = 0; i < r.n_peers; i++) {
        const mm_rep_peer *p = &r.peers[i];
        snprintf(path, sizeof path, "%s/node-%d/metrics.jsonl", dir, p->id);
        read_last_round(path, &lr[i]);
        int status = 0;
        fate fa = peer_fate(dir, p->id, p->has_metrics ? p->mtime : 0, &status);
        states[i] = peer_state(p, &lr[i], fa, status, now, o->stale_s);
        ended[i] = p->ended;
        if (!p->ended && mm__watch_gone(states[i]) && strcmp(states[i], "silent"))
            gone_why(fa, status, why[i], sizeof why[i]);
        if (p->has_metrics && p->mtime > last_write)
            last_write = p->mtime;
    }
    const char *status = mm__watch_run_status(states, ended, r.n_peers, r.n_expected);
    const char *slash = strrchr(dir, '/');
    mm_text_put(&t, "{\"kind\":\"run\",\"name\":");
    mm_text_json_str(&t, slash && slash[1] ? slash + 1 : dir);
    mm_text_put(&t, ",\"n\":%d,\"topology\":", r.n_expected);
    mm_text_json_str(&t, r.topology);
    mm_text_put(&t, ",\"algo\":");
    mm_text_json_str(&t, r.algo);
    mm_text_put(&t, ",\"codec\":");
    mm_text_json_str(&t, r.compress);
    mm_text_put(&t, ",\"stale_s\":");
    mm_text_json_num(&t, o->stale_s);
    mm_text_put(&t, ",\"status\":");
    mm_text_json_str(&t, status);
    mm_text_put(&t, ",\"ended_ago\":");
    mm_text_json_num(&t, strcmp(status, "running") && last_write > 0 ? now - last_write : NAN);
    mm_text_put(&t, ",\"peers\":[");
    for (int i = 0; i < r.n_peers; i++) {
        if (i)
            mm_text_put(&t, ",");
        put_peer(&t, &r.peers[i], states[i], why[i], now, o);
    }
    mm_text_put(&t, "]");
    if (topo)
        put_links(&t, &r, topo, states, lr);
    else
        mm_text_put(&t, ",\"links\":[]");
    put_rows(&t, &r);
    mm_text_put(&t, "}");
out:
    for (int i = 0; lr && i < r.n_peers; i++)
        free_last_round(&lr[i]);
    free(lr);
    free(states);
    free(why);
    free(ended);
    mm_topo_free(topo);
    mm_report_free(&r);
    if (t.oom || !t.p) {
        if (t.oom)
            snprintf(err, errlen, "out of memory");
        mm_text_free(&t);
        return NULL;
    }
    *len = t.len;
    return t.p;
}

/* ---- the sweep's JSON ---------------------------------------------------------- */

/* Whether a process holds a flock(2) lock on path, as /proc/locks lists
 * it ("N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE ..."): read, never
 * tried, so that a sweep starting at that moment never finds its lock
 * taken by the watch. false when it cannot tell. */
static bool lock_held(const char *path)
{
    struct stat st;
    FILE *f = stat(path, &st) == 0 ? fopen("/proc/locks", "r") : NULL;
    if (!f)
        return false;
    char line[256], want[64];
    snprintf(want, sizeof want, " %02x:%02x:%llu ", major(st.st_dev), minor(st.st_dev),
             (unsigned long long)st.st_ino);
    bool held = false;
    while (!held && fgets(line, sizeof line, f))
        held = strstr(line, " FLOCK ") && strstr(line, want);
    fclose(f);
    return held;
}

/* A sweep's status: "running" while its sweep.lock is held (scripts/
 * sweep.sh, or the runs of a sweep that was killed), "finished" when every
 * planned run is done, else "stopped"; how long ago its log last changed
 * when it is not running. */
static const char *sweep_status(const char *dir, const mm_sweep *s, double now, double *ago)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/sweep.lock", dir);
    *ago = NAN;
    if (lock_held(path))
        return "running";
    struct stat st;
    snprintf(path, sizeof path, "%s/sweep.log", dir);
    if (stat(path, &st) == 0)
        *ago = now - ((double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec);
    for (int k = 0; k < s->n_runs; k++)
        if (s->runs[k].status != MM_SWEEP_DONE)
            return "stopped";
    return "finished";
}

static void put_stat(mm_text *t, const char *name, const mm_sweep_stat *s)
{
    mm_text_put(t, ",\"%s\":[", name);
    mm_text_json_num(t, s->mean);
    mm_text_put(t, ",");
    mm_text_json_num(t, s->sd);
    mm_text_put(t, ",%d]", s->n);
}

char *mm_watch_sweep_json(const char *dir, const mm_watch_opts *o, double now, size_t *len,
                          char *err, size_t errlen)
{
    mm_sweep s;
    if (mm_sweep_load(dir, NULL, &s, err, errlen) != 0)
        return NULL;
    mm_text t = {0};
    const char *slash = strrchr(dir, '/');
    mm_text_put(&t, "{\"kind\":\"sweep\",\"name\":");
    mm_text_json_str(&t, slash && slash[1] ? slash + 1 : dir);
    double ago;
    mm_text_put(&t, ",\"status\":");
    mm_text_json_str(&t, sweep_status(dir, &s, now, &ago));
    mm_text_put(&t, ",\"ended_ago\":");
    mm_text_json_num(&t, ago);
    mm_text_put(&t, ",\"axes\":[");
    for (int a = 0; a < s.n_axes; a++) {
        if (a)
            mm_text_put(&t, ",");
        mm_text_json_str(&t, s.axes[a]);
    }
    mm_text_put(&t, "],\"settings\":[");
    for (int k = 0; k < s.n_settings; k++) {
        const mm_sweep_setting *st = &s.settings[k];
        mm_text_put(&t, "%s{\"name\":", k ? "," : "");
        mm_text_json_str(&t, st->name);
        mm_text_put(&t, ",\"topology\":");
        mm_text_json_str(&t, st->topology);
        mm_text_put(&t, ",\"peers\":%d,\"planned\":%d,\"done\":%d", st->peers, st->n_planned,
                    st->n_done);
        put_stat(&t, "acc", &st->acc);
        put_stat(&t, "vloss", &st->vloss);
        put_stat(&t, "xi_final", &st->xi_final);
        put_stat(&t, "xi_avg", &st->xi_avg);
        put_stat(&t, "wall", &st->wall);
        mm_text_put(&t, ",\"xi_method\":");
        mm_text_json_str(&t, st->xi_avg_method);
        mm_text_put(&t, "}");
    }
    mm_text_put(&t, "],\"runs\":[");
    for (int k = 0; k < s.n_runs; k++) {
        const mm_sweep_run *r = &s.runs[k];
        mm_text_put(&t, "%s{\"setting\":%d,\"seed\":%lld,\"run\":", k ? "," : "", r->setting_idx,
                    (long long)r->seed);
        mm_text_json_str(&t, r->run);
        mm_text_put(&t, ",\"status\":");
        mm_text_json_str(&t, mm_sweep_status_name(r->status));
        mm_text_put(&t, ",\"rounds\":%lld,\"acc\":", (long long)r->rounds);
        mm_text_json_num(&t, r->acc);
        mm_text_put(&t, ",\"xi_avg\":");
        mm_text_json_num(&t, r->xi_avg);
        mm_text_put(&t, "}");
    }
    mm_text_put(&t, "]}");
    mm_sweep_free(&s);
    (void)o;
    if (t.oom || !t.p) {
        snprintf(err, errlen, "out of memory");
        mm_text_free(&t);
        return NULL;
    }
    *len = t.len;
    return t.p;
}

void mm__watch_pace_json(mm_text *t, double deadline, double waited, double batch,
                         double steps, long long paced_by)
{
    if (paced_by < 0) {
        mm_text_put(t, ",\"pace\":null");
        return;
    }
    mm_text_put(t, ",\"pace\":{\"deadline\":");
    mm_text_json_num(t, deadline);
    mm_text_put(t, ",\"waited\":");
    mm_text_json_num(t, waited);
    mm_text_put(t, ",\"batch\":");
    mm_text_json_num(t, batch);
    mm_text_put(t, ",\"steps\":");
    mm_text_json_num(t, steps);
    mm_text_put(t, ",\"paced_by\":%lld}", paced_by);
}
