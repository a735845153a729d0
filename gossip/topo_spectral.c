/* Spectral and stochastic facts about W: the contraction factor
 * rho = ||W - J||_2 (J = 1 1^T / n) through LAPACK, which tells how fast
 * pure gossip shrinks the consensus distance. Dense n*n work: for tools and
 * tests, never for the per-round path. */
#include "gossip/topo_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK in libopenblas (Fortran calling convention). The hidden string
 * length arguments are omitted, as is customary for one-character flags. */
extern void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a,
                    const int *lda, double *s, double *u, const int *ldu, double *vt,
                    const int *ldvt, double *work, const int *lwork, int *info);
extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info);

double mm_mat_norm2(const double *a, int n)
{
    if (n <= 0)
        return 0;
    size_t nn = (size_t)n * (size_t)n;
    double *copy = malloc(nn * sizeof *copy), *s = malloc((size_t)n * sizeof *s);
    double *work = NULL, query, dummy = 0;
    int one = 1, lwork = -1, info = 0;
    double r = -1;
    if (!copy || !s)
        goto out;
    memcpy(copy, a, nn * sizeof *copy);
    /* The transpose has the same singular values, so row-major is fine. */
    dgesvd_("N", "N", &n, &n, copy, &n, s, &dummy, &one, &dummy, &one, &query, &lwork, &info);
    if (info)
        goto out;
    lwork = (int)query;
    work = malloc((size_t)lwork * sizeof *work);
    if (!work)
        goto out;
    dgesvd_("N", "N", &n, &n, copy, &n, s, &dummy, &one, &dummy, &one, work, &lwork, &info);
    if (!info)
        r = s[0];
out:
    free(copy);
    free(s);
    free(work);
    return r;
}

/* All eigenvalues of a symmetric n*n matrix, ascending, into w (destroys
 * a). 0, or -1 (out of memory, LAPACK failure). */
static int sym_eigs(double *a, int n, double *w)
{
    double *work = NULL, query;
    int lwork = -1, info = 0;
    dsyev_("N", "U", &n, a, &n, w, &query, &lwork, &info);
    if (!info) {
        lwork = (int)query;
        work = malloc((size_t)lwork * sizeof *work);
        if (!work)
            return -1;
        dsyev_("N", "U", &n, a, &n, w, work, &lwork, &info);
    }
    free(work);
    return info ? -1 : 0;
}

/* Largest eigenvalue of a symmetric matrix (destroys a); NAN on failure. */
static double sym_max_eig(double *a, int n)
{
    double *w = malloc((size_t)n * sizeof *w), r = NAN;
    if (w && sym_eigs(a, n, w) == 0)
        r = w[n - 1];
    free(w);
    return r;
}

static void sub_j(double *a, int n)
{
    size_t nn = (size_t)n * (size_t)n;
    for (size_t i = 0; i < nn; i++)
        a[i] -= 1.0 / n;
}

double mm_topo_rho_round(const mm_topology *t, uint64_t round)
{
    double *w = mm_topo_matrix(t, round);
    if (!w)
        return -1;
    sub_j(w, t->n);
    double r = mm_mat_norm2(w, t->n);
    free(w);
    return r;
}

typedef struct {
    mm_neighbour *in, *out;
} scratch;

static int scratch_init(const mm_topology *t, scratch *s)
{
    size_t md = (size_t)(t->max_degree > 0 ? t->max_degree : 1);
    s->in = malloc(md * sizeof *s->in);
    s->out = malloc(md * sizeof *s->out);
    return s->in && s->out ? 0 : -1;
}

static void scratch_free(scratch *s)
{
    free(s->in);
    free(s->out);
}

/* dst = W(round) * src, with W applied row by row from the sparse view. */
static int apply_w(const mm_topology *t, uint64_t round, const double *src, double *dst, scratch *sc)
{
    size_t n = (size_t)t->n;
    for (size_t i = 0; i < n; i++) {
        mm_round_view v = {.in = sc->in, .out = sc->out};
        if (mm_topo_round(t, (uint32_t)i, round, &v) < 0)
            return -1;
        double *d = dst + i * n;
        const double *s = src + i * n;
        for (size_t j = 0; j < n; j++)
            d[j] = v.self_weight * s[j];
        for (int k = 0; k < v.n_in; k++) {
            const double *q = src + (size_t)sc->in[k].peer * n;
            double w = sc->in[k].weight;
            for (size_t j = 0; j < n; j++)
                d[j] += w * q[j];
        }
    }
    return 0;
}

static double rho_product(const mm_topology *t)
{
    size_t n = (size_t)t->n;
    double *p = calloc(n * n, sizeof *p), *q = malloc(n * n * sizeof *q), r = -1;
    scratch sc;
    if (scratch_init(t, &sc) < 0 || !p || !q)
        goto out;
    for (size_t i = 0; i < n; i++)
        p[i * n + i] = 1;
    for (int k = 0; k < t->period; k++) {
        if (apply_w(t, (uint64_t)k, p, q, &sc) < 0)
            goto out;
        double *tmp = p;
        p = q;
        q = tmp;
    }
    sub_j(p, t->n);
    r = mm_mat_norm2(p, t->n);
    /* Finite-time exact schedules (one-peer-exp with n a power of two,
     * base, alt-exp-ring) leave rounding only; its period-th root would
     * show as a rate of 1e-4. */
    if (r >= 0 && r < 1e-12)
        r = 0;
    else if (r > 0)
        r = pow(r, 1.0 / t->period);
out:
    scratch_free(&sc);
    free(p);
    free(q);
    return r;
}

/* Mean-square rate of a random schedule: for x with mean 0,
 * E||(I - J) W x||^2 <= lambda ||x||^2 with lambda = lambda_max(M),
 * M = E[W^T (I - J) W] = E[W^T W] - E[c c^T] / n (c = W^T 1, the column
 * sums), the mean over sampled rounds. M 1 = 0, so lambda is the rate on the
 * deviations from the mean. With W doubly stochastic c = 1 and M = E[W^T W] - J. */
static double rho_mean_square(const mm_topology *t, uint64_t rounds)
{
    size_t n = (size_t)t->n;
    double *m = calloc(n * n, sizeof *m), *c = calloc(n, sizeof *c), r = -1;
    size_t md = (size_t)(t->max_degree > 0 ? t->max_degree : 1);
    uint32_t *idx = malloc((md + 1) * sizeof *idx);
    double *wt = malloc((md + 1) * sizeof *wt);
    uint64_t j_rounds = 0;
    scratch sc;
    if (scratch_init(t, &sc) < 0 || !m || !c || !idx || !wt)
        goto out;
    for (uint64_t round = 0; round < rounds; round++) {
        memset(c, 0, n * sizeof *c);
        for (size_t i = 0; i < n; i++) {
            mm_round_view v = {.in = sc.in, .out = sc.out};
            if (mm_topo_round(t, (uint32_t)i, round, &v) < 0)
                goto out;
            int cnt = 0;
            idx[cnt] = (uint32_t)i;
            wt[cnt++] = v.self_weight;
            for (int k = 0; k < v.n_in; k++) {
                idx[cnt] = sc.in[k].peer;
                wt[cnt++] = sc.in[k].weight;
            }
            for (int a = 0; a < cnt; a++) {
                c[idx[a]] += wt[a];
                for (int b = 0; b < cnt; b++)
                    m[(size_t)idx[a] * n + idx[b]] += wt[a] * wt[b];
            }
        }
        bool columns = false;
        for (size_t j = 0; j < n && !columns; j++)
            columns = fabs(c[j] - 1) > 1e-12;
        if (columns) /* not column-stochastic: subtract c c^T / n this round, O(n^2) */
            for (size_t a = 0; a < n; a++)
                for (size_t b = 0; b < n; b++)
                    m[a * n + b] -= c[a] * c[b] / (double)n;
        else
            j_rounds++; /* c = 1: J, subtracted once at the end */
    }
    for (size_t i = 0; i < n * n; i++)
        m[i] = (m[i] - (double)j_rounds / (double)n) / (double)rounds;
    double lam = sym_max_eig(m, t->n);
    if (!isnan(lam))
        r = sqrt(lam > 0 ? lam : 0);
out:
    scratch_free(&sc);
    free(m);
    free(c);
    free(idx);
    free(wt);
    return r;
}

double mm_topo_rho(const mm_topology *t)
{
    if (mm_topo_random(t))
        return rho_mean_square(t, MM_TOPO_SAMPLE_ROUNDS);
    if (t->period > 1)
        return rho_product(t);
    return mm_topo_rho_round(t, 0);
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

int mm_topo_spectrum(const mm_topology *t, double *lam)
{
    size_t n = (size_t)t->n;
    int rounds = mm_topo_random(t) ? MM_TOPO_SPECTRUM_ROUNDS
                 : t->period > 1  ? t->period : 1;
    double *m = calloc(n * n, sizeof *m);
    int rc = -1;
    if (!m)
        return -1;
    for (int r = 0; r < rounds; r++) {
        double *w = mm_topo_matrix(t, (uint64_t)r);
        if (!w)
            goto out;
        /* the symmetric part: the spectrum of a doubly stochastic W's
         * quadratic form x^T W x, which is what neighbour distances see */
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                m[i * n + j] += 0.5 * (w[i * n + j] + w[j * n + i]) / rounds;
        free(w);
    }
    if (sym_eigs(m, t->n, lam) != 0)
        goto out;
    qsort(lam, n, sizeof *lam, cmp_desc);
    rc = 0;
out:
    free(m);
    return rc;
}

static int cmp_nb(const void *a, const void *b)
{
    uint32_t x = ((const mm_neighbour *)a)->peer, y = ((const mm_neighbour *)b)->peer;
    return (x > y) - (x < y);
}

static bool has_arc(const mm_arcs *a, uint32_t u, uint32_t v)
{
    uint32_t lo = a->off[u], hi = a->off[u + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a->adj[mid] == v)
            return true;
        if (a->adj[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* Row/column sums and symmetry of W(round), from the sparse views. */
static int stochastic(const mm_topology *t, uint64_t round, mm_topo_facts *f, scratch *sc)
{
    const double tol = 1e-9;
    for (int i = 0; i < t->n; i++) {
        mm_round_view v = {.in = sc->in, .out = sc->out};
        if (mm_topo_round(t, (uint32_t)i, round, &v) < 0)
            return -1;
        double rs = v.self_weight, cs = v.self_weight;
        for (int k = 0; k < v.n_in; k++)
            rs += sc->in[k].weight;
        for (int k = 0; k < v.n_out; k++)
            cs += sc->out[k].weight;
        f->sends += v.n_out;
        if (fabs(rs - 1) > tol)
            f->row = false;
        if (fabs(cs - 1) > tol)
            f->column = false;
        qsort(sc->in, (size_t)v.n_in, sizeof *sc->in, cmp_nb);
        qsort(sc->out, (size_t)v.n_out, sizeof *sc->out, cmp_nb);
        if (v.n_in != v.n_out)
            f->symmetric = false;
        for (int k = 0; k < v.n_in && k < v.n_out; k++)
            if (sc->in[k].peer != sc->out[k].peer || fabs(sc->in[k].weight - sc->out[k].weight) > tol)
                f->symmetric = false;
    }
    return 0;
}

int mm_topo_facts_get(const mm_topology *t, mm_topo_facts *f)
{
    memset(f, 0, sizeof *f);
    uint64_t window = mm_topo_window(t);
    mm_arcs a, a0;
    if (mm_arcs_union(t, window, &a) < 0)
        return -1;
    if (mm_arcs_union(t, 1, &a0) < 0) {
        mm_arcs_free(&a);
        return -1;
    }
    bool sym = true;
    for (int u = 0; u < t->n && sym; u++)
        for (uint32_t k = a.off[u]; k < a.off[u + 1]; k++)
            if (!has_arc(&a, a.adj[k], (uint32_t)u)) {
                sym = false;
                break;
            }
    f->arcs_directed = !sym;
    f->edges = sym ? a.arcs / 2 : a.arcs;
    f->edges_per_round = sym ? a0.arcs / 2 : a0.arcs;
    int *indeg = calloc((size_t)t->n, sizeof *indeg);
    if (!indeg) {
        mm_arcs_free(&a);
        mm_arcs_free(&a0);
        return -1;
    }
    for (size_t k = 0; k < a.arcs; k++)
        indeg[a.adj[k]]++;
    f->in_min = f->out_min = t->n;
    for (int u = 0; u < t->n; u++) {
        int od = (int)(a.off[u + 1] - a.off[u]);
        if (od < f->out_min) f->out_min = od;
        if (od > f->out_max) f->out_max = od;
        if (indeg[u] < f->in_min) f->in_min = indeg[u];
        if (indeg[u] > f->in_max) f->in_max = indeg[u];
    }
    free(indeg);
    f->deg_min = f->in_min < f->out_min ? f->in_min : f->out_min;
    f->deg_max = f->in_max > f->out_max ? f->in_max : f->out_max;
    bool from0;
    f->connected = mm_arcs_unreached(&a, &from0) < 0;
    f->diameter = f->connected ? mm_arcs_diameter(&a) : -1;
    mm_arcs_free(&a);
    mm_arcs_free(&a0);

    f->symmetric = f->row = f->column = true;
    scratch sc;
    if (scratch_init(t, &sc) < 0) {
        scratch_free(&sc);
        return -1;
    }
    uint64_t check = window < 64 ? window : 64;
    for (uint64_t r = 0; r < check; r++)
        if (stochastic(t, r, f, &sc) < 0) {
            scratch_free(&sc);
            return -1;
        }
    scratch_free(&sc);
    f->sends /= (double)check * t->n;
    f->doubly = f->row && f->column;

    f->period = t->period;
    f->window = (int)window;
    uint64_t shown = mm_topo_random(t) ? 4 : window;
    f->n_rho_rounds = shown < 64 ? (int)shown : 64;
    for (int r = 0; r < f->n_rho_rounds; r++)
        f->rho_rounds[r] = mm_topo_rho_round(t, (uint64_t)r);
    f->rho = mm_topo_rho(t);
    f->rho_how = t->schedule == MM_SCHED_EPIDEMIC
                     ? "mean-square rate sqrt(lambda_max(E[W^T (I-J) W])) over sampled rounds"
                 : mm_topo_random(t)
                     ? "mean-square rate sqrt(lambda_max(E[W^T W] - J)) over sampled rounds"
                 : t->period > 1 ? "||W(period-1)...W(0) - J||_2^(1/period)"
                                 : "||W - J||_2";
    if (f->rho < 0)
        return -1;
    f->exact_average = t->schedule == MM_SCHED_NONE && f->rho < 1e-12;
    /* A periodic schedule promises its rate only over whole periods. */
    int per = t->period > 1 ? t->period : 1;
    if (f->rho >= 1 - 1e-12)
        f->rounds_tenfold = INFINITY;
    else if (f->rho < 1e-12)
        f->rounds_tenfold = per;
    else
        f->rounds_tenfold = per * ceil(log(10.0) / (-log(f->rho) * per) - 1e-9);
    return 0;
}
