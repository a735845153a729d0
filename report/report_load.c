/* Reading a run directory's metrics into mm_report (see report.h). */
#include "report/report_int.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "net/counters.h"
#include "report/jsonl.h"

void mm__report_warn(mm_report *r, const mm_report_opts *opt, const char *fmt, ...)
{
    FILE *w = opt && opt->warn ? opt->warn : stderr;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(w, "murmur report: warning: %s\n", msg);
    r->warnings++;
}

/* Per-round sketch accumulator: a Welford mean and sum of squared
 * deviations per coordinate, so the estimate needs no peer's sketch kept
 * and does not cancel catastrophically when replicas are close. */
struct mm_rep_sketch_acc {
    int64_t round;
    int n, dim;
    uint64_t seed;
    bool bad;
    double *mean, *m2;
};

static mm_rep_sketch_acc *find_acc(const mm_report *r, int64_t round, size_t *pos)
{
    size_t lo = 0, hi = r->n_acc;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->acc[mid].round < round)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (pos)
        *pos = lo;
    return lo < r->n_acc && r->acc[lo].round == round ? &r->acc[lo] : NULL;
}

void mm__report_add_sketch(mm_report *r, const mm_report_opts *opt, int peer, int64_t round,
                          const double *y, int dim, uint64_t seed)
{
    size_t pos;
    mm_rep_sketch_acc *a = find_acc(r, round, &pos);
    if (!a) {
        if (r->n_acc == r->cap_acc) {
            size_t cap = r->cap_acc ? 2 * r->cap_acc : 64;
            mm_rep_sketch_acc *nw = realloc(r->acc, cap * sizeof *nw);
            if (!nw)
                return;
            r->acc = nw;
            r->cap_acc = cap;
        }
        memmove(r->acc + pos + 1, r->acc + pos, (r->n_acc - pos) * sizeof *r->acc);
        r->n_acc++;
        a = &r->acc[pos];
        memset(a, 0, sizeof *a);
        a->round = round;
        a->dim = dim;
        a->seed = seed;
        a->mean = calloc((size_t)dim, sizeof *a->mean);
        a->m2 = calloc((size_t)dim, sizeof *a->m2);
        if (!a->mean || !a->m2)
            a->bad = true;
    }
    if (a->bad)
        return;
    if (a->dim != dim || a->seed != seed) {
        mm__report_warn(r, opt, "round %lld: node-%d's sketch (dim %d, seed %llu) differs from "
                       "the other peers' (dim %d, seed %llu); no estimate for this round",
                       (long long)round, peer, dim, (unsigned long long)seed, a->dim,
                       (unsigned long long)a->seed);
        a->bad = true;
        return;
    }
    a->n++;
    for (int k = 0; k < dim; k++) {
        double d = y[k] - a->mean[k];
        a->mean[k] += d / a->n;
        a->m2[k] += d * (y[k] - a->mean[k]);
    }
}

double mm__report_sketch_xi(const mm_report *r, int64_t round, int *n_peers)
{
    const mm_rep_sketch_acc *a = find_acc(r, round, NULL);
    *n_peers = a ? a->n : 0;
    if (!a || a->bad || a->n < 2)
        return NAN;
    double s = 0;
    for (int k = 0; k < a->dim; k++)
        s += a->m2[k];
    return sqrt(s / a->n);
}

/* An eval's sketch, kept until the file is read so a round repeated after a
 * restart contributes only its latest sketch. */
typedef struct {
    int64_t round;
    size_t seq;
    double *y;
    int dim;
    uint64_t seed;
} pending_sketch;

static int cmp_pending(const void *a, const void *b)
{
    const pending_sketch *x = a, *y = b;
    if (x->round != y->round)
        return x->round < y->round ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Records arrive in file order; qsort is not stable, so each array is
 * sorted through an index of (round, position) and the last record of a
 * round wins. */
typedef struct {
    int64_t round;
    size_t idx;
} order_key;

static int cmp_key(const void *a, const void *b)
{
    const order_key *x = a, *y = b;
    if (x->round != y->round)
        return x->round < y->round ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static size_t dedupe(void *base, size_t n, size_t size, int64_t (*round_of)(const void *))
{
    if (n == 0)
        return 0;
    order_key *k = malloc(n * sizeof *k);
    char *tmp = malloc(n * size);
    if (!k || !tmp) {
        free(k);
        free(tmp);
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        k[i].round = round_of((char *)base + i * size);
        k[i].idx = i;
    }
    qsort(k, n, sizeof *k, cmp_key);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && k[i + 1].round == k[i].round)
            continue; /* a later record of the same round follows */
        memcpy(tmp + m * size, (char *)base + k[i].idx * size, size);
        m++;
    }
    memcpy(base, tmp, m * size);
    free(k);
    free(tmp);
    return m;
}

static int64_t round_of_round(const void *p) { return ((const mm_rep_round *)p)->round; }
static int64_t round_of_eval(const void *p) { return ((const mm_rep_eval *)p)->round; }

static double num_or(const mm_json_obj *o, const char *key, double dflt)
{
    double v;
    return mm_json_num(o, key, &v) ? v : dflt;
}

static bool get_round(const mm_json_obj *o, int64_t *round)
{
    double v;
    if (!mm_json_num(o, "round", &v) || !(v >= 0) || v > 9e15 || v != floor(v))
        return false;
    *round = (int64_t)v;
    return true;
}

static void copy_str(char *dst, size_t len, const char *src)
{
    if (src)
        snprintf(dst, len, "%s", src);
}

/* What run-local.sh recorded when peer p's process ended
 * (DIR/launch/node-K.exit: its exit status), or -1: no record, or one
 * older than the peer's metrics (it was started again since). */
static int launch_exit(const char *dir, const mm_rep_peer *p)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/launch/node-%d.exit", dir, p->id);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    struct stat st;
    int status = -1;
    if (fstat(fileno(f), &st) != 0 || fscanf(f, "%d", &status) != 1 || status < 0)
        status = -1;
    fclose(f);
    double t = (double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec;
    return status >= 0 && t >= p->mtime ? status : -1;
}

/* The transport's counters of an end line (docs/metrics.md; the table in
 * net/counters.h): the refusals among them are summed over a peer's
 * lives to name the commonest. */
static const struct { const char *name; int line; } counters[] = {
#define MM_X(field, line, explanation) {#field, line},
    MM_TRANSPORT_COUNTERS(MM_X)
#undef MM_X
};
#define N_COUNTERS (sizeof counters / sizeof counters[0])

/* An end or isolated line's "refusals" object: neighbour id -> refusal. */
static void read_refusals(mm_rep_peer *p, const mm_json_obj *o)
{
    const mm_json_field *f = mm_json_get(o, "refusals");
    p->n_refused_nbrs = 0;
    p->refused_code[0] = 0;
    p->first_refused = -1;
    if (!f || f->type != MM_J_OBJ)
        return;
    for (size_t i = 0; i < f->n_obj; i++) {
        if (!f->obj[i].str)
            continue;
        if (p->n_refused_nbrs++ == 0) {
            copy_str(p->refused_code, sizeof p->refused_code, f->obj[i].str);
            p->first_refused = atoi(f->obj[i].key);
        }
    }
}

/* One metrics file being read: where the records go, the counters'
 * offsets across restarts, and the sketches waiting to be merged. */
typedef struct {
    mm_report *r;
    mm_rep_peer *p;
    const char *path;
    const mm_report_opts *opt;
    size_t lineno, cap_r, cap_e, n_pend, cap_pend, seq;
    pending_sketch *pend;
    /* Counter values at the end of the previous segments (summed) and the
     * latest of the current segment: sent, recv, compute, comm, wait, time. */
    double off[6], last[6];
    double refusal_sum[N_COUNTERS]; /* by counters[], the refusals only */
} loader;

/* Parses one line into o. 1 when there is a record to use, 0 when the line
 * was ignored (said why, o freed). A peer killed in the middle of a line
 * and restarted appends its next line to the fragment: that line is kept. */
static int parse_line(loader *L, char *line, ssize_t len, mm_json_obj *o)
{
    char err[160];
    if (mm_json_parse(line, (size_t)len, o, err, sizeof err) == 0)
        return 1;
    mm_json_free(o);
    const char *again = strstr(line + 1, "{\"ev\":");
    if (again && mm_json_parse(again, (size_t)(line + len - again), o, err, sizeof err) == 0) {
        mm__report_warn(L->r, L->opt, "%s:%zu: an incomplete record (%zu bytes) precedes this "
                        "line; the fragment is ignored", L->path, L->lineno, (size_t)(again - line));
        return 1;
    }
    mm_json_free(o);
    if (line[len - 1] != '\n') {
        L->p->torn_tail = true;
        if (!L->opt || !L->opt->quiet_tail)
            mm__report_warn(L->r, L->opt, "%s:%zu: last line is incomplete (%zd bytes, no "
                            "newline); ignored", L->path, L->lineno, len);
    } else {
        L->p->bad_lines++;
        mm__report_warn(L->r, L->opt, "%s:%zu: not a JSON object (%s); line ignored", L->path,
                        L->lineno, err);
    }
    return 0;
}

/* An outer run's start line says so (docs/outer.md): its optimizer and
 * settings in the words of model/outer.h's mm_outer_describe, "" for a
 * run without --outer. */
static void outer_of(const mm_json_obj *o, char *out, size_t len)
{
    const char *kind = mm_json_str(o, "outer");
    out[0] = 0;
    if (!kind || !strcmp(kind, "none"))
        return;
    double lr = NAN, mu = NAN, warmup = 0, h = NAN;
    mm_json_num(o, "outer_lr", &lr);
    mm_json_num(o, "outer_momentum", &mu);
    mm_json_num(o, "outer_momentum_warmup", &warmup);
    mm_json_num(o, "local_steps", &h);
    const char *decay = mm_json_str(o, "outer_momentum_decay");
    char extra[128] = "";
    size_t n = 0;
    double gamma;
    if (mm_json_num(o, "noloco_gamma", &gamma))
        n += (size_t)snprintf(extra + n, sizeof extra - n, ", gamma %g", gamma);
    if (warmup > 0)
        n += (size_t)snprintf(extra + n, sizeof extra - n, ", warm-up %g", warmup);
    if (decay && strcmp(decay, "none") && n < sizeof extra)
        snprintf(extra + n, sizeof extra - n, ", decay %.40s", decay);
    snprintf(out, len, "%.24s (lr %g, momentum %g%s, H %g)", kind, lr, mu, extra, h);
}

/* A start line: a new process (a restart adds its counters to the old). */
static void on_start(loader *L, const mm_json_obj *o)
{
    mm_rep_peer *p = L->p;
    for (int i = 0; i < 6; i++) { /* the process restarted its counters */
        L->off[i] += L->last[i];
        L->last[i] = 0;
    }
    p->n_starts++;
    p->ended = false;
    p->end_reason[0] = 0;
    p->isolated_now = false;
    p->n_refused_nbrs = 0;
    p->refused_code[0] = 0;
    p->first_refused = -1;
    double v;
    uint64_t u;
    if (mm_json_num(o, "resumed_round", &v) && v >= 0) {
        int64_t reached = -1; /* the rounds its earlier starts ran */
        for (size_t i = 0; i < p->n_rounds; i++)
            if (p->rounds[i].round + 1 > reached)
                reached = p->rounds[i].round + 1;
        if (v == 0 && reached > 0 && reached > p->fresh_after)
            p->fresh_after = reached;
        if ((int64_t)v > p->resumed_max)
            p->resumed_max = (int64_t)v;
    }
    const char *how = mm_json_str(o, "resume");
    if (how && !strcmp(how, "fresh"))
        p->resumed_fresh = true;
    if (mm_json_num(o, "peer", &v) && v != p->id)
        mm__report_warn(L->r, L->opt, "%s:%zu: start line says peer %g but the directory is node-%d",
                        L->path, L->lineno, v, p->id);
    if (mm_json_u64(o, "params", &u))
        p->params = (int64_t)u;
    if (mm_json_num(o, "n_peers", &v) && v >= 1 && v < 1e6)
        p->n_peers = (int)v;
    if (mm_json_num(o, "sketch_dim", &v) && v >= 0 && v < 1e8)
        p->sketch_dim = (int)v;
    if (mm_json_u64(o, "sketch_seed", &u))
        p->sketch_seed = u;
    copy_str(p->topology, sizeof p->topology, mm_json_str(o, "topology"));
    copy_str(p->topology_digest, sizeof p->topology_digest, mm_json_str(o, "topology_digest"));
    copy_str(p->algo, sizeof p->algo, mm_json_str(o, "algo"));
    copy_str(p->compress, sizeof p->compress, mm_json_str(o, "compress"));
    if (!mm_json_num(o, "consensus_step", &p->gamma))
        p->gamma = NAN;
    outer_of(o, p->outer, sizeof p->outer);
}

/* A round line. -1 when out of memory (reading stops there). */
static int on_round(loader *L, const mm_json_obj *o)
{
    mm_rep_peer *p = L->p;
    mm_rep_round rd = {0};
    if (!get_round(o, &rd.round)) {
        p->bad_lines++;
        mm__report_warn(L->r, L->opt, "%s:%zu: round line without a valid \"round\"; ignored",
                        L->path, L->lineno);
        return 0;
    }
    static const char *ctr[5] = {"bytes_sent", "bytes_recv", "t_compute", "t_comm", "t_wait"};
    double *dst[5] = {&rd.bytes_sent, &rd.bytes_recv, &rd.t_compute, &rd.t_comm, &rd.t_wait};
    for (int i = 0; i < 5; i++) {
        double v = num_or(o, ctr[i], NAN);
        if (isfinite(v))
            L->last[i] = v;
        *dst[i] = L->off[i] + L->last[i];
    }
    double t = num_or(o, "time", NAN);
    if (isfinite(t))
        L->last[5] = t;
    rd.time = L->off[5] + L->last[5];
    rd.step = num_or(o, "step", NAN);
    rd.loss = num_or(o, "loss", NAN);
    rd.lr = num_or(o, "lr", NAN);
    rd.exchanges = num_or(o, "exchanges", 1); /* older lines: one a round */
    rd.exchanges_line = num_or(o, "exchanges_since", rd.exchanges);
    rd.xi_est = num_or(o, "xi_est", NAN);
    rd.deadline = num_or(o, "deadline", NAN);
    rd.waited = num_or(o, "waited", NAN);
    rd.batch = num_or(o, "batch", NAN);
    rd.steps_done = num_or(o, "steps_done", NAN);
    double pb = num_or(o, "paced_by", NAN);
    rd.paced_by = isfinite(pb) && pb >= 0 && pb < 1e9 ? (int64_t)pb : -1;
    rd.nbrs = num_or(o, "nbrs", NAN);
    rd.missing = num_or(o, "missing", NAN);
    const mm_json_field *nb = mm_json_get(o, "nbrs");
    if (nb && nb->type == MM_J_ARR && nb->n_arr > 0)
        p->isolated_now = false; /* it mixes again */
    if (nb && nb->type == MM_J_ARR)
        for (size_t i = 0; i < nb->n_arr && rd.n_nbr_ids < MM_REP_NBR_IDS; i++)
            if (nb->arr[i] >= 0 && nb->arr[i] < 4294967296.0)
                rd.nbr_ids[rd.n_nbr_ids++] = (uint32_t)nb->arr[i];
    rd.dist_mean = NAN;
    const mm_json_field *d = mm_json_get(o, "dist");
    if (d && d->type == MM_J_OBJ && d->n_obj) {
        double sum = 0;
        for (size_t i = 0; i < d->n_obj; i++)
            sum += d->obj[i].num;
        rd.dist_mean = sum / (double)d->n_obj;
    }
    if (p->n_rounds == L->cap_r) {
        L->cap_r = L->cap_r ? 2 * L->cap_r : 256;
        mm_rep_round *nw = realloc(p->rounds, L->cap_r * sizeof *nw);
        if (!nw)
            return -1;
        p->rounds = nw;
    }
    p->rounds[p->n_rounds++] = rd;
    return 0;
}

/* An eval line's val_acc_labels (label -> accuracy), kept when its round is
 * the peer's latest with them. -1 when out of memory. */
static int read_labels(mm_rep_peer *p, const mm_json_obj *o, int64_t round)
{
    const mm_json_field *f = mm_json_get(o, "val_acc_labels");
    if (!f || f->type != MM_J_OBJ || f->n_obj == 0 || round < p->label_round)
        return 0;
    mm_rep_label *l = malloc(f->n_obj * sizeof *l);
    if (!l)
        return -1;
    int n = 0;
    for (size_t i = 0; i < f->n_obj; i++)
        if (!f->obj[i].str && isfinite(f->obj[i].num)) {
            copy_str(l[n].name, sizeof l[n].name, f->obj[i].key);
            l[n++].acc = f->obj[i].num;
        }
    free(p->labels);
    p->labels = l;
    p->n_labels = n;
    p->label_round = round;
    return 0;
}

/* An eval line; its sketch waits in pend (ownership moves there) until the
 * file is read, so that a round evaluated twice counts once. -1 when out
 * of memory. */
static int on_eval(loader *L, const mm_json_obj *o)
{
    mm_rep_peer *p = L->p;
    mm_rep_eval e = {0};
    if (!get_round(o, &e.round)) {
        p->bad_lines++;
        mm__report_warn(L->r, L->opt, "%s:%zu: eval line without a valid \"round\"; ignored",
                        L->path, L->lineno);
        return 0;
    }
    double t = num_or(o, "time", NAN);
    if (isfinite(t) && t > L->last[5])
        L->last[5] = t;
    e.time = L->off[5] + (isfinite(t) ? t : L->last[5]);
    e.step = num_or(o, "step", NAN);
    e.val_loss = num_or(o, "val_loss", NAN);
    e.val_bpb = num_or(o, "val_bpb", NAN);
    e.val_acc = num_or(o, "val_acc", NAN);
    e.norm = num_or(o, "norm", NAN);
    if (read_labels(p, o, e.round) != 0)
        return -1;
    const mm_json_field *sk = mm_json_get(o, "sketch");
    if (sk && sk->type == MM_J_ARR && sk->n_arr > 0) {
        if (p->sketch_dim && (size_t)p->sketch_dim != sk->n_arr)
            mm__report_warn(L->r, L->opt, "%s:%zu: sketch has %zu values, start line said %d",
                            L->path, L->lineno, sk->n_arr, p->sketch_dim);
        if (L->n_pend == L->cap_pend) {
            L->cap_pend = L->cap_pend ? 2 * L->cap_pend : 64;
            pending_sketch *nw = realloc(L->pend, L->cap_pend * sizeof *nw);
            if (!nw)
                return -1;
            L->pend = nw;
        }
        L->pend[L->n_pend++] = (pending_sketch){e.round, L->seq++, sk->arr, (int)sk->n_arr,
                                                p->sketch_seed};
        ((mm_json_field *)sk)->arr = NULL; /* ownership moves to pend */
        e.has_sketch = true;
    }
    if (p->n_evals == L->cap_e) {
        L->cap_e = L->cap_e ? 2 * L->cap_e : 64;
        mm_rep_eval *nw = realloc(p->evals, L->cap_e * sizeof *nw);
        if (!nw)
            return -1;
        p->evals = nw;
    }
    p->evals[p->n_evals++] = e;
    return 0;
}

/* An elastic run's view line (docs/metrics.md): its round and tag, and
 * each id it names as joined, left or removed. -1 when out of memory. */
static int on_view(loader *L, const mm_json_obj *o)
{
    mm_rep_peer *p = L->p;
    int64_t round;
    if (!get_round(o, &round)) {
        p->bad_lines++;
        return 0;
    }
    double n = num_or(o, "members_n", NAN);
    const char *tag = mm_json_str(o, "tag");
    int64_t *vr = realloc(p->view_rounds, (p->n_views + 1) * sizeof *vr);
    uint32_t *vt = vr ? realloc(p->view_tags, (p->n_views + 1) * sizeof *vt) : NULL;
    if (vr)
        p->view_rounds = vr;
    if (!vt)
        return -1;
    p->view_tags = vt;
    vr[p->n_views] = round;
    vt[p->n_views++] = tag ? (uint32_t)strtoul(tag, NULL, 16) : 0;
    static const char *const what[] = {NULL, "joined", "left", "removed"};
    for (uint8_t w = 1; w <= 3; w++) {
        const mm_json_field *f = mm_json_get(o, what[w]);
        if (!f || f->type != MM_J_ARR)
            continue;
        for (size_t i = 0; i < f->n_arr; i++) {
            if (!(f->arr[i] >= 0 && f->arr[i] < 4294967296.0))
                continue;
            mm_rep_change *c = realloc(p->changes, (p->n_changes + 1) * sizeof *c);
            if (!c)
                return -1;
            p->changes = c;
            c[p->n_changes++] = (mm_rep_change){.round = round, .id = (uint32_t)f->arr[i],
                                                .what = w,
                                                .members = isfinite(n) ? (uint32_t)n : 0};
        }
    }
    return 0;
}

/* An end line: how the process ended and what it refused. */
static void on_end(loader *L, const mm_json_obj *o)
{
    mm_rep_peer *p = L->p;
    p->n_ends++;
    p->ended = true;
    p->isolated_now = false;
    copy_str(p->end_reason, sizeof p->end_reason, mm_json_str(o, "reason"));
    read_refusals(p, o);
    p->rounds_alone = num_or(o, "rounds_alone", NAN);
    p->rounds_with_nbrs = num_or(o, "rounds_with_nbrs", NAN);
    p->longest_alone_s = num_or(o, "longest_alone_s", NAN);
    p->alone_limit_s = num_or(o, "alone_limit_s", NAN);
    for (size_t i = 0; i < N_COUNTERS; i++) {
        if (counters[i].line != MM_CTR_REFUSED)
            continue;
        double v = num_or(o, counters[i].name, 0);
        if (isfinite(v) && v > 0)
            L->refusal_sum[i] += v;
    }
    double v = num_or(o, "refused", 0);
    if (isfinite(v) && v > 0)
        p->refused += v;
    double t = num_or(o, "time", NAN);
    if (isfinite(t) && t > L->last[5])
        L->last[5] = t;
}

/* After the last line: the commonest refusal, one record per round (the
 * last written wins), and each round's sketch merged into the report. */
static void finish(loader *L)
{
    mm_rep_peer *p = L->p;
    size_t top = N_COUNTERS; /* the first of the largest */
    for (size_t i = 0; i < N_COUNTERS; i++)
        if (counters[i].line == MM_CTR_REFUSED &&
            (top == N_COUNTERS || L->refusal_sum[i] > L->refusal_sum[top]))
            top = i;
    if (top < N_COUNTERS && L->refusal_sum[top] > 0)
        copy_str(p->top_refusal, sizeof p->top_refusal, counters[top].name);
    p->n_rounds = dedupe(p->rounds, p->n_rounds, sizeof *p->rounds, round_of_round);
    double ex = 0;
    for (size_t i = 0; i < p->n_rounds; i++)
        p->rounds[i].exchanges_cum = ex += p->rounds[i].exchanges_line;
    p->n_evals = dedupe(p->evals, p->n_evals, sizeof *p->evals, round_of_eval);
    if (L->n_pend) /* (qsort wants an array, even of none: UBSan) */
        qsort(L->pend, L->n_pend, sizeof *L->pend, cmp_pending);
    for (size_t i = 0; i < L->n_pend; i++) {
        if (i + 1 < L->n_pend && L->pend[i + 1].round == L->pend[i].round)
            continue;
        mm__report_add_sketch(L->r, L->opt, p->id, L->pend[i].round, L->pend[i].y,
                              L->pend[i].dim, L->pend[i].seed);
    }
    for (size_t i = 0; i < L->n_pend; i++)
        free(L->pend[i].y);
    free(L->pend);
}

int mm__report_load_peer(mm_report *r, mm_rep_peer *p, const char *path, const mm_report_opts *opt)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    struct stat st;
    if (fstat(fileno(f), &st) == 0)
        p->mtime = (double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec;
    p->has_metrics = true;
    p->params = -1;
    p->rounds_alone = p->rounds_with_nbrs = p->longest_alone_s = p->alone_limit_s = NAN;
    p->fresh_after = -1;
    p->first_refused = -1;
    p->label_round = -1;

    loader L = {.r = r, .p = p, .path = path, .opt = opt};
    char *line = NULL;
    size_t linecap = 0;
    ssize_t len;
    while ((len = getline(&line, &linecap, f)) > 0) {
        L.lineno++;
        mm_json_obj o;
        if (!parse_line(&L, line, len, &o))
            continue;
        const char *ev = mm_json_str(&o, "ev");
        int rc = 0;
        if (!ev) {
            p->bad_lines++;
            mm__report_warn(r, opt, "%s:%zu: no \"ev\" field; line ignored", path, L.lineno);
        } else if (!strcmp(ev, "start")) {
            on_start(&L, &o);
        } else if (!strcmp(ev, "round")) {
            rc = on_round(&L, &o);
        } else if (!strcmp(ev, "eval")) {
            rc = on_eval(&L, &o);
        } else if (!strcmp(ev, "isolated")) {
            p->isolated_now = true;
            read_refusals(p, &o);
        } else if (!strcmp(ev, "end")) {
            on_end(&L, &o);
        } else if (!strcmp(ev, "view")) {
            rc = on_view(&L, &o);
        } /* other events: newer writers; not ours to judge */
        mm_json_free(&o);
        if (rc < 0) /* out of memory: keep what was read */
            break;
    }
    free(line);
    fclose(f);
    finish(&L);
    return 0;
}

/* Peers that started again from round 0 in a resumed run (no checkpoint):
 * their rounds are not the others' (consensus jumps where they rejoin), and
 * the report must say so rather than merge them silently. A peer whose own
 * metrics go back to round 0, or whose --resume found no checkpoint while
 * another peer resumed from one. A run started with --resume from the
 * first (a launcher's, no checkpoint anywhere) is none of these. */
static void flag_fresh_starts(mm_report *r, const mm_report_opts *opt)
{
    int64_t resumed = 0; /* the latest round any peer resumed from */
    for (int i = 0; i < r->n_peers; i++)
        if (r->peers[i].resumed_max > resumed)
            resumed = r->peers[i].resumed_max;
    for (int i = 0; i < r->n_peers; i++) {
        mm_rep_peer *p = &r->peers[i];
        if (p->fresh_after > 0) {
            p->fresh_in_resumed = true;
            mm__report_warn(r, opt, "node-%d started again from round 0 (no checkpoint) after "
                            "its rounds 0..%lld: its metrics hold two runs, the later one's "
                            "rounds replace the earlier's", p->id, (long long)p->fresh_after - 1);
        } else if (p->resumed_fresh && resumed > 0) {
            p->fresh_in_resumed = true;
            mm__report_warn(r, opt, "node-%d started fresh from round 0 (--resume found no "
                            "checkpoint) while another peer resumed from round %lld: its rounds "
                            "do not follow the others'", p->id, (long long)resumed);
        }
    }
}

static int cmp_peer(const void *a, const void *b)
{
    const mm_rep_peer *x = a, *y = b;
    return x->id - y->id;
}

/* "node-K" with K a decimal number. */
static int peer_dir_id(const char *name)
{
    if (strncmp(name, "node-", 5) || !name[5])
        return -1;
    long k = 0;
    for (const char *s = name + 5; *s; s++) {
        if (*s < '0' || *s > '9' || k > 1000000)
            return -1;
        k = k * 10 + (*s - '0');
    }
    return (int)k;
}

int mm_report_load(const char *dir, const mm_report_opts *opt, mm_report *r, char *err,
                   size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->params = -1;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "cannot open run directory %s: %s", dir, strerror(errno));
        return -1;
    }
    r->dir = strdup(dir);
    int cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int id = peer_dir_id(de->d_name);
        if (id < 0)
            continue;
        if (r->n_peers == cap) {
            cap = cap ? 2 * cap : 16;
            mm_rep_peer *nw = realloc(r->peers, (size_t)cap * sizeof *nw);
            if (!nw)
                break;
            r->peers = nw;
        }
        memset(&r->peers[r->n_peers], 0, sizeof r->peers[0]);
        r->peers[r->n_peers++].id = id;
    }
    closedir(d);
    if (r->n_peers)
        qsort(r->peers, (size_t)r->n_peers, sizeof *r->peers, cmp_peer);

    size_t records = 0;
    const mm_rep_peer *first = NULL; /* the first peer with a start line */
    for (int i = 0; i < r->n_peers; i++) {
        mm_rep_peer *p = &r->peers[i];
        char path[4096];
        snprintf(path, sizeof path, "%s/node-%d/metrics.jsonl", dir, p->id);
        if (mm__report_load_peer(r, p, path, opt) != 0) {
            mm__report_warn(r, opt, "node-%d: no metrics (%s: %s)", p->id, path, strerror(errno));
            continue;
        }
        p->launch_exit = launch_exit(dir, p);
        p->has_launch_exit = p->launch_exit >= 0;
        records += p->n_rounds + p->n_evals + (size_t)p->n_starts;
        if (p->n_peers > r->n_expected)
            r->n_expected = p->n_peers;
        if (p->n_starts && r->params < 0) {
            r->params = p->params;
            first = p;
            copy_str(r->topology, sizeof r->topology, p->topology);
            copy_str(r->algo, sizeof r->algo, p->algo);
            copy_str(r->compress, sizeof r->compress, p->compress);
            copy_str(r->outer, sizeof r->outer, p->outer);
            r->gamma = p->gamma;
        } else if (p->n_starts && p->params != r->params) {
            mm__report_warn(r, opt, "node-%d has %lld parameters, node-%d %lld", p->id,
                           (long long)p->params, r->peers[0].id, (long long)r->params);
        }
        if (p->n_starts && first != p && strcmp(p->topology_digest, first->topology_digest))
            mm__report_warn(r, opt, "node-%d loaded topology %s, node-%d %s: the peers disagree "
                            "(their HELLOs refuse each other: bad_topology)", p->id, p->topology,
                            first->id, first->topology);
    }
    if (records == 0) {
        char own[4096];
        snprintf(own, sizeof own, "%s/metrics.jsonl", dir);
        bool one_peer = r->n_peers == 0 && access(own, F_OK) == 0;
        if (one_peer)
            snprintf(err, errlen, "%s is one peer's directory (it holds metrics.jsonl), not a "
                     "run: point murmur report at the directory above it, which holds the "
                     "node-K/ directories", dir);
        else
            snprintf(err, errlen, "%s: empty run: no node-K/metrics.jsonl with any record "
                     "(%d node directories)", dir, r->n_peers);
        mm_report_free(r);
        return one_peer ? -1 : MM_REPORT_EMPTY;
    }
    if (r->n_peers > r->n_expected)
        r->n_expected = r->n_peers;
    flag_fresh_starts(r, opt);
    mm__report_build_rows(r, opt);
    return 0;
}

void mm_report_free(mm_report *r)
{
    for (int i = 0; i < r->n_peers; i++) {
        free(r->peers[i].rounds);
        free(r->peers[i].evals);
        free(r->peers[i].labels);
        free(r->peers[i].changes);
        free(r->peers[i].view_rounds);
        free(r->peers[i].view_tags);
    }
    for (size_t i = 0; i < r->n_acc; i++) {
        free(r->acc[i].mean);
        free(r->acc[i].m2);
    }
    free(r->acc);
    free(r->peers);
    free(r->rows);
    free(r->dir);
    memset(r, 0, sizeof *r);
}
