/* Topologies: validation of a spec and the per-round view peers ask for.
 * Static graphs are turned into sorted in/out lists once, at load, so a
 * round costs O(degree); schedules are computed from (n, seed, round). */
#include "gossip/topo_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

/* Tolerance on "sums to 1": files written by hand hold decimals like 0.333. */
#define SUM_TOL 1e-6

int mm__topo_err(char *err, size_t errlen, const char *name, int line, const char *fmt, ...)
{
    if (!err || !errlen)
        return -1;
    int k = line > 0 ? snprintf(err, errlen, "%s:%d: ", name, line)
                     : snprintf(err, errlen, "%s: ", name);
    if (k < 0 || (size_t)k >= errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

void mm_topo_spec_free(mm_topo_spec *s)
{
    free(s->edges);
    free(s->self_w);
    free(s->self_line);
    s->edges = NULL;
    s->self_w = NULL;
    s->self_line = NULL;
    s->n_edges = s->cap_edges = 0;
}

int mm_topo_spec_add(mm_topo_spec *s, uint32_t u, uint32_t v, double w, int line)
{
    if (s->n_edges == s->cap_edges) {
        size_t cap = s->cap_edges ? 2 * s->cap_edges : 64;
        mm_edge *e = realloc(s->edges, cap * sizeof *e);
        if (!e)
            return -1;
        s->edges = e;
        s->cap_edges = cap;
    }
    s->edges[s->n_edges++] = (mm_edge){u, v, w, line};
    return 0;
}

/* ---- accessors ----------------------------------------------------------- */

int mm_topo_n(const mm_topology *t) { return t->n; }
bool mm_topo_directed(const mm_topology *t) { return t->directed; }
int mm_topo_period(const mm_topology *t) { return t->period; }
int mm_topo_max_degree(const mm_topology *t) { return t->max_degree; }
const char *mm_topo_kind(const mm_topology *t) { return t->kind; }
enum mm_schedule mm_topo_schedule(const mm_topology *t) { return t->schedule; }

bool mm__topo_random(const mm_topology *t)
{
    return t->schedule == MM_SCHED_RANDOM_MATCHING || t->schedule == MM_SCHED_EPIDEMIC;
}

int mm_ceil_log2(int n)
{
    int k = 0;
    while ((1L << k) < n)
        k++;
    return k;
}

void mm__topo_round_rng(uint64_t seed, uint64_t round, mm_rng *rng)
{
    uint64_t x = seed;
    mm_rng_seed(rng, mm_splitmix64(&x) ^ (round * 0xD1B54A32D192ED03ULL));
}

void mm_topo_free(mm_topology *t)
{
    if (!t)
        return;
    free(t->in_off);
    free(t->out_off);
    free(t->in_nb);
    free(t->out_nb);
    free(t->self_w);
    if (t->mc) {
        pthread_mutex_destroy(&t->mc->lock);
        free(t->mc->partner);
        free(t->mc->perm);
        free(t->mc);
    }
    mm__base_free(t->base);
    mm__epi_free(t->ec);
    free(t);
}

/* ---- per-round view -------------------------------------------------------- */

/* Round r's matching: xoshiro256** seeded from splitmix64(seed) ^ r*K, a
 * Fisher-Yates shuffle of 0..n-1, then positions (0,1), (2,3), ... are
 * partners. Documented in topologies/README.md so other code can agree. */
static void draw_matching(const mm_topology *t, uint64_t round, uint32_t *a, uint32_t *partner)
{
    uint32_t n = (uint32_t)t->n;
    mm_rng rng;
    mm__topo_round_rng(t->seed, round, &rng);
    for (uint32_t i = 0; i < n; i++)
        a[i] = i;
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = (uint32_t)mm_rng_below(&rng, (uint64_t)i + 1);
        uint32_t tmp = a[i];
        a[i] = a[j];
        a[j] = tmp;
    }
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        partner[a[i]] = a[i + 1];
        partner[a[i + 1]] = a[i];
    }
    if (n % 2)
        partner[a[n - 1]] = UINT32_MAX;
}

static uint32_t matching_partner(const mm_topology *t, uint32_t me, uint64_t round)
{
    struct match_cache *mc = t->mc;
    pthread_mutex_lock(&mc->lock);
    if (!mc->valid || mc->round != round) {
        draw_matching(t, round, mc->perm, mc->partner);
        mc->valid = true;
        mc->round = round;
    }
    uint32_t p = mc->partner[me];
    pthread_mutex_unlock(&mc->lock);
    return p;
}

int mm_topo_round(const mm_topology *t, uint32_t me, uint64_t round, mm_round_view *v)
{
    if (me >= (uint32_t)t->n)
        return -1;
    uint32_t n = (uint32_t)t->n;
    switch (t->schedule) {
    case MM_SCHED_NONE: {
        uint32_t a = t->in_off[me], b = t->in_off[me + 1];
        v->n_in = (int)(b - a);
        memcpy(v->in, t->in_nb + a, (b - a) * sizeof *v->in);
        a = t->out_off[me];
        b = t->out_off[me + 1];
        v->n_out = (int)(b - a);
        memcpy(v->out, t->out_nb + a, (b - a) * sizeof *v->out);
        v->self_weight = t->self_w[me];
        return 0;
    }
    case MM_SCHED_ONE_PEER_EXP: {
        if (n == 1) {
            v->n_in = v->n_out = 0;
            v->self_weight = 1.0;
            return 0;
        }
        uint32_t s = 1u << (round % (uint64_t)t->tau);
        v->n_in = v->n_out = 1;
        v->in[0] = (mm_neighbour){(me + n - s) % n, 0.5};
        v->out[0] = (mm_neighbour){(me + s) % n, 0.5};
        v->self_weight = 0.5;
        return 0;
    }
    case MM_SCHED_RANDOM_MATCHING: {
        uint32_t p = matching_partner(t, me, round);
        if (p == UINT32_MAX) {
            v->n_in = v->n_out = 0;
            v->self_weight = 1.0;
            return 0;
        }
        v->n_in = v->n_out = 1;
        v->in[0] = v->out[0] = (mm_neighbour){p, 0.5};
        v->self_weight = 0.5;
        return 0;
    }
    case MM_SCHED_LOCAL:
        v->n_in = v->n_out = 0;
        v->self_weight = 1.0;
        return 0;
    case MM_SCHED_ALT_EXP_RING:
        return mm__alt_round(t, me, round, v);
    case MM_SCHED_BASE:
        return mm__base_round(t, me, round, v);
    case MM_SCHED_EPIDEMIC:
        return mm__epi_round(t, me, round, v);
    }
    return -1;
}

double *mm_topo_matrix(const mm_topology *t, uint64_t round)
{
    size_t n = (size_t)t->n;
    double *w = calloc(n * n, sizeof *w);
    int md = t->max_degree > 0 ? t->max_degree : 1;
    mm_neighbour *in = malloc((size_t)md * sizeof *in), *out = malloc((size_t)md * sizeof *out);
    if (!w || !in || !out)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        mm_round_view v = {.in = in, .out = out};
        if (mm_topo_round(t, (uint32_t)i, round, &v) < 0)
            goto fail;
        w[i * n + i] = v.self_weight;
        for (int k = 0; k < v.n_in; k++)
            w[i * n + in[k].peer] += in[k].weight;
    }
    free(in);
    free(out);
    return w;
fail:
    free(w);
    free(in);
    free(out);
    return NULL;
}

/* ---- building a static graph ------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_nb(const void *a, const void *b)
{
    return cmp_u32(&((const mm_neighbour *)a)->peer, &((const mm_neighbour *)b)->peer);
}

/* Edges as (low, high) for undirected graphs, so u-v and v-u compare equal;
 * ties by line, so the first occurrence is reported as the original. */
typedef struct {
    uint32_t a, b;
    int line;
    size_t idx;
} edge_key;

static int cmp_edge_key(const void *pa, const void *pb)
{
    const edge_key *x = pa, *y = pb;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    if (x->b != y->b)
        return x->b < y->b ? -1 : 1;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static const char *sep(bool directed) { return directed ? "->" : "-"; }

static int check_edges(const mm_topo_spec *s, const char *name, char *err, size_t errlen)
{
    uint32_t n = (uint32_t)s->n;
    for (size_t i = 0; i < s->n_edges; i++) {
        const mm_edge *e = &s->edges[i];
        uint32_t bad = e->u >= n ? e->u : e->v;
        if (e->u >= n || e->v >= n)
            return mm__topo_err(err, errlen, name, e->line,
                               "edge %u%s%u: peer %u out of range (peers are 0..%u)",
                               e->u, sep(s->directed), e->v, bad, n - 1);
        if (e->u == e->v)
            return mm__topo_err(err, errlen, name, e->line,
                               "edge %u%s%u: a peer cannot be its own neighbour "
                               "(write 'self %u WEIGHT' for a self weight)",
                               e->u, sep(s->directed), e->v, e->u);
        if (s->weights == MM_W_EXPLICIT && !(e->w > 0 && isfinite(e->w)))
            return mm__topo_err(err, errlen, name, e->line,
                               "edge %u%s%u: weight %g %s", e->u, sep(s->directed), e->v, e->w,
                               e->w < 0 ? "is negative" : "must be positive (drop the edge instead)");
    }
    if (s->n_edges < 2)
        return 0;
    edge_key *keys = malloc(s->n_edges * sizeof *keys);
    if (!keys)
        return mm__topo_err(err, errlen, name, 0, "out of memory");
    for (size_t i = 0; i < s->n_edges; i++) {
        const mm_edge *e = &s->edges[i];
        bool swap = !s->directed && e->u > e->v;
        keys[i] = (edge_key){swap ? e->v : e->u, swap ? e->u : e->v, e->line, i};
    }
    qsort(keys, s->n_edges, sizeof *keys, cmp_edge_key);
    int rc = 0;
    for (size_t i = 1; i < s->n_edges && !rc; i++) {
        if (keys[i - 1].a == keys[i].a && keys[i - 1].b == keys[i].b) {
            const mm_edge *first = &s->edges[keys[i - 1].idx], *dup = &s->edges[keys[i].idx];
            char where[48] = "";
            if (first->line > 0)
                snprintf(where, sizeof where, " (first on line %d)", first->line);
            rc = mm__topo_err(err, errlen, name, dup->line, "edge %u%s%u: duplicate edge%s",
                             dup->u, sep(s->directed), dup->v, where);
        }
    }
    free(keys);
    return rc;
}

/* Arc u -> v carrying weight W[v][u]; undirected edges give two arcs. */
typedef struct {
    uint32_t from, to;
    double w;
} arc;

/* The weighted arcs of the edge list (two per undirected edge), from the
 * degrees and the weight rule. arcs holds 2 * n_edges (undirected) or
 * n_edges entries; outdeg and indeg are zeroed n-arrays. */
static void weigh_arcs(const mm_topo_spec *s, arc *arcs, int *outdeg, int *indeg)
{
    for (size_t i = 0; i < s->n_edges; i++) {
        const mm_edge *e = &s->edges[i];
        outdeg[e->u]++;
        indeg[e->v]++;
        if (!s->directed) {
            outdeg[e->v]++;
            indeg[e->u]++;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < s->n_edges; i++) {
        const mm_edge *e = &s->edges[i];
        double wuv = 0, wvu = 0; /* W[v][u] (v receives u), W[u][v] */
        switch (s->weights) {
        case MM_W_METROPOLIS:
            wuv = wvu = 1.0 / (1 + (outdeg[e->u] > outdeg[e->v] ? outdeg[e->u] : outdeg[e->v]));
            break;
        case MM_W_UNIFORM:
            if (s->directed) {
                wuv = 1.0 / (outdeg[e->u] + 1);
            } else {
                wuv = 1.0 / (indeg[e->v] + 1);
                wvu = 1.0 / (indeg[e->u] + 1);
            }
            break;
        case MM_W_EXPLICIT:
            wuv = wvu = e->w;
            break;
        }
        arcs[k++] = (arc){e->u, e->v, wuv};
        if (!s->directed)
            arcs[k++] = (arc){e->v, e->u, wvu};
    }
}

/* Self weights: the rest of each row (undirected: rows are what a peer
 * computes with) or column (directed: what a sender keeps); a given self
 * weight must make its row or column sum to 1. sum[i] is that row's or
 * column's sum of arc weights. */
static int self_weights(const mm_topo_spec *s, const double *sum, double *self_w, const char *name,
                        char *err, size_t errlen)
{
    const char *what = s->directed ? "column" : "row";
    const char *sum_of = s->directed ? "its out-edge weights" : "its edge weights";
    for (size_t i = 0; i < (size_t)s->n; i++) {
        bool given = s->weights == MM_W_EXPLICIT && s->self_w && !isnan(s->self_w[i]);
        if (given) {
            double sw = s->self_w[i];
            int line = s->self_line ? s->self_line[i] : 0;
            if (sw < 0 || !isfinite(sw))
                return mm__topo_err(err, errlen, name, line, "self %zu: weight %g is negative", i, sw);
            if (fabs(sw + sum[i] - 1) > SUM_TOL)
                return mm__topo_err(err, errlen, name, line,
                                    "%s %zu of W: self weight %g + %s %g = %.9g, must sum to 1",
                                    what, i, sw, sum_of, sum[i], sw + sum[i]);
            self_w[i] = sw;
        } else {
            if (sum[i] > 1 + SUM_TOL)
                return mm__topo_err(err, errlen, name, 0,
                                    "%s %zu of W: %s sum to %.9g > 1, leaving no room for a "
                                    "self weight (must sum to 1)", what, i, sum_of, sum[i]);
            self_w[i] = sum[i] > 1 ? 0 : 1 - sum[i];
        }
    }
    return 0;
}

/* The in- and out-neighbour lists (CSR: offsets, then neighbours sorted by
 * id) and the largest degree. The offsets arrays are zeroed n + 1. */
static void build_csr(mm_topology *t, size_t n, const arc *arcs, size_t na)
{
    for (size_t i = 0; i < na; i++) {
        t->in_off[arcs[i].to + 1]++;
        t->out_off[arcs[i].from + 1]++;
    }
    for (size_t i = 0; i < n; i++) {
        t->in_off[i + 1] += t->in_off[i];
        t->out_off[i + 1] += t->out_off[i];
    }
    for (size_t i = 0; i < na; i++) {
        t->in_nb[t->in_off[arcs[i].to]++] = (mm_neighbour){arcs[i].from, arcs[i].w};
        t->out_nb[t->out_off[arcs[i].from]++] = (mm_neighbour){arcs[i].to, arcs[i].w};
    }
    for (size_t i = n; i > 0; i--) {
        t->in_off[i] = t->in_off[i - 1];
        t->out_off[i] = t->out_off[i - 1];
    }
    t->in_off[0] = t->out_off[0] = 0;
    t->max_degree = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t a = t->in_off[i], b = t->in_off[i + 1];
        qsort(t->in_nb + a, b - a, sizeof *t->in_nb, cmp_nb);
        if ((int)(b - a) > t->max_degree)
            t->max_degree = (int)(b - a);
        a = t->out_off[i];
        b = t->out_off[i + 1];
        qsort(t->out_nb + a, b - a, sizeof *t->out_nb, cmp_nb);
        if ((int)(b - a) > t->max_degree)
            t->max_degree = (int)(b - a);
    }
}

static mm_topology *build_static(const mm_topo_spec *s, mm_topology *t, const char *name,
                                 char *err, size_t errlen)
{
    size_t n = (size_t)s->n;
    size_t na = s->directed ? s->n_edges : 2 * s->n_edges;
    int *outdeg = calloc(n, sizeof *outdeg), *indeg = calloc(n, sizeof *indeg);
    arc *arcs = malloc((na ? na : 1) * sizeof *arcs);
    double *sum = calloc(n, sizeof *sum);
    t->in_off = calloc(n + 1, sizeof *t->in_off);
    t->out_off = calloc(n + 1, sizeof *t->out_off);
    t->in_nb = malloc((na ? na : 1) * sizeof *t->in_nb);
    t->out_nb = malloc((na ? na : 1) * sizeof *t->out_nb);
    t->self_w = calloc(n, sizeof *t->self_w);
    int rc = 0;
    if (!outdeg || !indeg || !arcs || !sum || !t->in_off || !t->out_off || !t->in_nb ||
        !t->out_nb || !t->self_w) {
        rc = mm__topo_err(err, errlen, name, 0, "out of memory");
    } else {
        weigh_arcs(s, arcs, outdeg, indeg);
        for (size_t i = 0; i < na; i++) /* rows (undirected) or columns (directed) */
            sum[s->directed ? arcs[i].from : arcs[i].to] += arcs[i].w;
        rc = self_weights(s, sum, t->self_w, name, err, errlen);
        if (rc == 0)
            build_csr(t, n, arcs, na);
    }
    free(outdeg);
    free(indeg);
    free(arcs);
    free(sum);
    if (rc < 0) {
        mm_topo_free(t);
        return NULL;
    }
    return t;
}

uint64_t mm__topo_window(const mm_topology *t)
{
    if (mm__topo_random(t)) {
        int lg = mm_ceil_log2(t->n);
        return (uint64_t)(t->connect_rounds > lg ? t->connect_rounds : lg);
    }
    return t->period > 0 ? (uint64_t)t->period : 1;
}

static uint32_t uf_find(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* Random matchings join up within O(log n) rounds almost surely; merge
 * rounds' pairs with union-find until one component remains or the sample
 * window ends. Lowest peer apart from 0 then, -1 if connected, -2 no memory. */
static int matching_unreached(mm_topology *t)
{
    uint32_t n = (uint32_t)t->n;
    uint32_t *parent = malloc(n * sizeof *parent), *perm = malloc(n * sizeof *perm),
             *partner = malloc(n * sizeof *partner);
    int bad = -2;
    if (!parent || !perm || !partner)
        goto out;
    for (uint32_t i = 0; i < n; i++)
        parent[i] = i;
    uint32_t components = n;
    uint64_t r = 0;
    for (; r < MM_TOPO_SAMPLE_ROUNDS && components > 1; r++) {
        draw_matching(t, r, perm, partner);
        for (uint32_t i = 0; i < n; i++) {
            if (partner[i] == UINT32_MAX)
                continue;
            uint32_t a = uf_find(parent, i), b = uf_find(parent, partner[i]);
            if (a != b) {
                parent[a] = b;
                components--;
            }
        }
    }
    t->connect_rounds = (int)r;
    bad = -1;
    for (uint32_t i = 1; i < n && bad < 0; i++)
        if (uf_find(parent, i) != uf_find(parent, 0))
            bad = (int)i;
out:
    free(parent);
    free(perm);
    free(partner);
    return bad;
}

/* Epidemic rounds are directed: the union of the first w rounds must let
 * every peer reach every other. The smallest such w (searched 1, 2, ...,
 * 64, then doubling to MM_TOPO_SAMPLE_ROUNDS) becomes connect_rounds. */
static int epidemic_unreached(mm_topology *t, bool *from0)
{
    int bad = -1;
    for (uint64_t w = 1; w <= MM_TOPO_SAMPLE_ROUNDS; w = w < 64 ? w + 1 : 2 * w) {
        mm__arcs a;
        if (mm__arcs_union(t, w, &a) < 0)
            return -2;
        bad = mm__arcs_unreached(&a, from0);
        mm__arcs_free(&a);
        t->connect_rounds = (int)w;
        if (bad < 0)
            break;
    }
    return bad;
}

/* Period, degree and per-round state of a named schedule. */
static int build_schedule(mm_topology *t, const char *name, char *err, size_t errlen)
{
    int n = t->n;
    t->max_degree = n > 1 ? 1 : 0;
    switch (t->schedule) {
    case MM_SCHED_ONE_PEER_EXP:
        t->tau = mm_ceil_log2(n);
        t->period = t->tau > 0 ? t->tau : 1;
        return 0;
    case MM_SCHED_RANDOM_MATCHING:
        t->period = 0;
        t->mc = calloc(1, sizeof *t->mc);
        if (t->mc) {
            pthread_mutex_init(&t->mc->lock, NULL);
            t->mc->partner = malloc((size_t)n * sizeof *t->mc->partner);
            t->mc->perm = malloc((size_t)n * sizeof *t->mc->perm);
        }
        if (!t->mc || !t->mc->partner || !t->mc->perm)
            return mm__topo_err(err, errlen, name, 0, "out of memory");
        return 0;
    case MM_SCHED_LOCAL:
        t->max_degree = 0;
        return 0;
    case MM_SCHED_ALT_EXP_RING:
        return mm__alt_init(t, name, err, errlen);
    case MM_SCHED_BASE:
        return mm__base_init(t, name, err, errlen);
    case MM_SCHED_EPIDEMIC:
        return mm__epi_init(t, name, err, errlen);
    case MM_SCHED_NONE:
        break;
    }
    return mm__topo_err(err, errlen, name, 0, "unknown schedule");
}

mm_topology *mm__topo_build_graph(const mm_topo_spec *s, const char *name, char *err,
                                  size_t errlen)
{
    if (s->n < 1 || s->n > MM_TOPO_MAX_PEERS) {
        mm__topo_err(err, errlen, name, 0, "peers %d: expected 1..%d", s->n, MM_TOPO_MAX_PEERS);
        return NULL;
    }
    mm_topology *t = calloc(1, sizeof *t);
    if (!t) {
        mm__topo_err(err, errlen, name, 0, "out of memory");
        return NULL;
    }
    t->n = s->n;
    t->directed = s->directed;
    t->weights = s->weights;
    t->schedule = s->schedule;
    t->seed = s->seed;
    snprintf(t->kind, sizeof t->kind, "%s", s->kind[0] ? s->kind : "file");
    t->period = 1;
    t->degree = s->degree;
    t->fanout = s->fanout;
    t->group = s->group > 0 ? s->group : 1;
    if (s->schedule != MM_SCHED_NONE) {
        if (s->n_edges) {
            mm__topo_err(err, errlen, name, s->edges[0].line,
                        "a file that names a schedule cannot also list edges");
            mm_topo_free(t);
            return NULL;
        }
        t->directed = false; /* no schedule needs push-sum */
        if (build_schedule(t, name, err, errlen) < 0) {
            mm_topo_free(t);
            return NULL;
        }
    } else {
        if (s->weights == MM_W_METROPOLIS && s->directed) {
            mm__topo_err(err, errlen, name, 0,
                        "weights metropolis need an undirected graph; a directed one "
                        "takes 'weights uniform' (column-stochastic, for push-sum) or explicit");
            mm_topo_free(t);
            return NULL;
        }
        if (check_edges(s, name, err, errlen) < 0) {
            mm_topo_free(t);
            return NULL;
        }
        if (!build_static(s, t, name, err, errlen))
            return NULL;
    }
    if (t->schedule == MM_SCHED_LOCAL)
        return t; /* no communication on purpose: nothing to connect */
    int bad;
    bool from0 = true;
    if (t->schedule == MM_SCHED_RANDOM_MATCHING) {
        bad = matching_unreached(t);
    } else if (t->schedule == MM_SCHED_EPIDEMIC) {
        bad = epidemic_unreached(t, &from0);
    } else {
        mm__arcs a;
        if (mm__arcs_union(t, mm__topo_window(t), &a) < 0) {
            mm__topo_err(err, errlen, name, 0, "out of memory");
            mm_topo_free(t);
            return NULL;
        }
        bad = mm__arcs_unreached(&a, &from0);
        mm__arcs_free(&a);
    }
    if (bad == -2) {
        mm__topo_err(err, errlen, name, 0, "out of memory");
        mm_topo_free(t);
        return NULL;
    }
    if (bad >= 0) {
        const char *over = t->schedule == MM_SCHED_NONE ? ""
                           : mm__topo_random(t) ? " over the first 1024 rounds"
                                               : " over one period";
        if (t->schedule == MM_SCHED_NONE && !s->n_edges)
            mm__topo_err(err, errlen, name, 0,
                        "no edges: the peers would never communicate (for that baseline "
                        "on purpose, write 'schedule local')");
        else if (t->directed || t->schedule == MM_SCHED_EPIDEMIC)
            mm__topo_err(err, errlen, name, 0,
                        "not strongly connected%s: peer %d %s peer 0 along directed edges",
                        over, bad, from0 ? "cannot be reached from" : "cannot reach");
        else
            mm__topo_err(err, errlen, name, 0,
                        "not connected%s: no path from peer 0 to peer %d", over, bad);
        mm_topo_free(t);
        return NULL;
    }
    return t;
}

mm_topology *mm_topo_build(const mm_topo_spec *s, const char *name, char *err, size_t errlen)
{
    if (s->family != MM_FAMILY_NONE)
        return mm__family_build(s, name, err, errlen);
    mm_topology *t = mm__topo_build_graph(s, name, err, errlen);
    if (t && mm__topo_digest(s, t) < 0) {
        mm__topo_err(err, errlen, name, 0, "out of memory");
        mm_topo_free(t);
        return NULL;
    }
    return t;
}

mm_topology *mm_topo_parse(const char *text, size_t len, const char *name,
                           char *err, size_t errlen)
{
    mm_topo_spec s;
    if (mm_topo_parse_spec(text, len, name, &s, err, errlen) < 0)
        return NULL;
    mm_topology *t = mm_topo_build(&s, name, err, errlen);
    mm_topo_spec_free(&s);
    return t;
}

mm_topology *mm_topo_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        mm__topo_err(err, errlen, path, 0, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len < cap)
            break;
        if (cap >= (size_t)256 << 20) {
            free(buf);
            fclose(f);
            mm__topo_err(err, errlen, path, 0, "larger than 256 MiB; not a topology file?");
            return NULL;
        }
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int rd_err = ferror(f);
    fclose(f);
    if (!buf || rd_err) {
        free(buf);
        mm__topo_err(err, errlen, path, 0, rd_err ? "read error" : "out of memory");
        return NULL;
    }
    mm_topology *t = mm_topo_parse(buf, len, path, err, errlen);
    free(buf);
    return t;
}
