/* The contraction factor rho = ||W - J||_2 (J = 1 1^T / n) the dense way,
 * through LAPACK: exact to rounding, O(n^3) time and O(n^2) memory, so for
 * small n and as the reference the sparse method (gossip/topo_lanczos.c) is
 * tested against. Never for the per-round path. */
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

/* Largest eigenvalue of a symmetric matrix (destroys a); NAN on failure. */
static double sym_max_eig(double *a, int n)
{
    double *w = malloc((size_t)n * sizeof *w), *work = NULL, query, r = NAN;
    int lwork = -1, info = 0;
    if (!w)
        return NAN;
    dsyev_("N", "U", &n, a, &n, w, &query, &lwork, &info);
    if (!info) {
        lwork = (int)query;
        work = malloc((size_t)lwork * sizeof *work);
        if (work) {
            dsyev_("N", "U", &n, a, &n, w, work, &lwork, &info);
            if (!info)
                r = w[n - 1];
        }
    }
    free(w);
    free(work);
    return r;
}

static void sub_j(double *a, int n)
{
    size_t nn = (size_t)n * (size_t)n;
    for (size_t i = 0; i < nn; i++)
        a[i] -= 1.0 / n;
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
double mm_topo_rho_sampled(const mm_topology *t, uint64_t rounds)
{
    if (!mm__topo_random(t) || !rounds)
        return -1;
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

static double rho_round(const mm_topology *t, uint64_t round)
{
    double *w = mm_topo_matrix(t, round);
    if (!w)
        return -1;
    sub_j(w, t->n);
    double r = mm_mat_norm2(w, t->n);
    free(w);
    return r;
}

int mm__rho_dense(const mm_topology *t, bool one_round, uint64_t round, mm_rho *out)
{
    memset(out, 0, sizeof *out);
    out->method = "dense (LAPACK dgesvd)";
    out->converged = true;
    if (one_round || t->period == 1)
        out->rho = rho_round(t, one_round ? round : 0);
    else
        out->rho = rho_product(t);
    return out->rho < 0 ? -1 : 0;
}
