/* murmur watch's JSON (node/watch.h; the fields in docs/metrics.md,
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
#include <unistd.h>

#include "base/text.h"
#include "gossip/topology.h"
#include "node/pace.h"
#include "node/watch.h"
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

/* Whether run-local.sh's launch/node-K.pid names a process gone (1), alive
 * (0), or there is none to ask (-1: another launcher, another host). */
static int peer_gone(const char *dir, int id)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/launch/node-%d.pid", dir, id);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long pid = 0;
    int got = fscanf(f, "%ld", &pid);
    fclose(f);
    if (got != 1 || pid <= 1)
        return -1;
    snprintf(path, sizeof path, "%s/launch/node-%d.exit", dir, id);
    if (access(path, F_OK) == 0)
        return 1;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH ? 1 : 0;
}

/* docs/metrics.md, "murmur watch": done, refused, isolated, silent (its
 * process is gone without an end line, or, with no pid to ask, no line for
 * stale_s: killed or hung), waiting (the last round missed a neighbour,
 * or its recent rounds waited more than they computed), running. */
static const char *peer_state(const mm_rep_peer *p, const last_round *lr, int gone,
                              double now, double stale_s)
{
    if (!p->has_metrics)
        return "starting";
    if (p->ended)
        return !strcmp(p->end_reason, "refused")    ? "refused"
               : !strcmp(p->end_reason, "isolated") ? "isolated"
                                                     : "done";
    /* a live process that writes nothing waits (for its neighbours, at
     * start); a dead one, or one silent with no pid to ask, failed */
    if (gone == 1 || (gone < 0 && now - p->mtime > stale_s))
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
    if (!strcmp(states[i], "silent") || ((int)j < r->n_peers && !strcmp(states[j], "silent")))
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

static void put_peer(mm_text *t, const mm_rep_peer *p, const char *state, double now,
                     const mm_watch_opts *o)
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
    else
        mm_text_put(t, "null");
    mm__pace_json(t, last ? last->deadline : NAN, last ? last->waited : NAN,
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
    mm_text t = {0};
    if (!lr || !states) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int i = 0; i < r.n_peers; i++) {
        snprintf(path, sizeof path, "%s/node-%d/metrics.jsonl", dir, r.peers[i].id);
        read_last_round(path, &lr[i]);
        states[i] = peer_state(&r.peers[i], &lr[i], peer_gone(dir, r.peers[i].id), now,
                               o->stale_s);
    }
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
    mm_text_put(&t, ",\"peers\":[");
    for (int i = 0; i < r.n_peers; i++) {
        if (i)
            mm_text_put(&t, ",");
        put_peer(&t, &r.peers[i], states[i], now, o);
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
    (void)now;
    if (t.oom || !t.p) {
        snprintf(err, errlen, "out of memory");
        mm_text_free(&t);
        return NULL;
    }
    *len = t.len;
    return t.p;
}
