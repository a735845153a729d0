/* rho without dense matrices: the largest singular value of A = W - J (or
 * of the product over a period minus J) as the square root of the largest
 * eigenvalue of B = A^T A, by Lanczos on B applied through the sparse W and
 * W^T, one round at a time. O(n + edges) memory, O(edges + n) time per
 * iteration; the iterations needed grow as 1/sqrt(the relative gap below
 * the top of B's spectrum), e.g. about n for a ring. Also the dispatch
 * between this, dense LAPACK (gossip/topo_spectral.c) and the closed form
 * of random matching. Contracts in gossip/topology.h. */
#include "gossip/topo_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK (libopenblas): eigenvalues of a symmetric tridiagonal matrix by
 * bisection, and eigenvectors by inverse iteration. */
extern void dstebz_(const char *range, const char *order, const int *n, const double *vl,
                    const double *vu, const int *il, const int *iu, const double *abstol,
                    const double *d, const double *e, int *m, int *nsplit, double *w, int *iblock,
                    int *isplit, double *work, int *iwork, int *info);
extern void dstein_(const int *n, const double *d, const double *e, const int *m, const double *w,
                    const int *iblock, const int *isplit, double *z, const int *ldz, double *work,
                    int *iwork, int *ifail, int *info);

/* The error of rho the Lanczos run is asked for. */
#define RHO_TOL 1e-12

/* ---- one round's W in compressed rows ------------------------------------ */

typedef struct {
    size_t n;
    uint32_t *off, *col; /* row i: col[off[i] .. off[i+1]) */
    double *w, *self;
} sp_round;

static void sp_free(sp_round *s)
{
    free(s->off);
    free(s->col);
    free(s->w);
    free(s->self);
    memset(s, 0, sizeof *s);
}

static int sp_build(const mm_topology *t, uint64_t round, sp_round *s)
{
    size_t n = (size_t)t->n, md = (size_t)(t->max_degree > 0 ? t->max_degree : 1), cap = n * 2 + 16;
    memset(s, 0, sizeof *s);
    s->n = n;
    s->off = malloc((n + 1) * sizeof *s->off);
    s->self = malloc(n * sizeof *s->self);
    s->col = malloc(cap * sizeof *s->col);
    s->w = malloc(cap * sizeof *s->w);
    mm_neighbour *in = malloc(md * sizeof *in), *out = malloc(md * sizeof *out);
    if (!s->off || !s->self || !s->col || !s->w || !in || !out)
        goto fail;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        mm_round_view v = {.in = in, .out = out};
        if (mm_topo_round(t, (uint32_t)i, round, &v) < 0)
            goto fail;
        if (len + (size_t)v.n_in > cap) {
            size_t nc = (len + (size_t)v.n_in) * 2;
            uint32_t *c = realloc(s->col, nc * sizeof *c);
            if (c)
                s->col = c;
            double *w = c ? realloc(s->w, nc * sizeof *w) : NULL;
            if (!w)
                goto fail;
            s->w = w;
            cap = nc;
        }
        s->off[i] = (uint32_t)len;
        s->self[i] = v.self_weight;
        for (int k = 0; k < v.n_in; k++) {
            s->col[len] = in[k].peer;
            s->w[len++] = in[k].weight;
        }
    }
    s->off[n] = (uint32_t)len;
    free(in);
    free(out);
    return 0;
fail:
    free(in);
    free(out);
    sp_free(s);
    return -1;
}

/* y = W x, or y = W^T x (x and y distinct). */
static void sp_mul(const sp_round *s, const double *x, double *y, bool transpose)
{
    size_t n = s->n;
    if (!transpose) {
        for (size_t i = 0; i < n; i++) {
            double acc = s->self[i] * x[i];
            for (uint32_t k = s->off[i]; k < s->off[i + 1]; k++)
                acc += s->w[k] * x[s->col[k]];
            y[i] = acc;
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        y[i] = s->self[i] * x[i];
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = s->off[i]; k < s->off[i + 1]; k++)
            y[s->col[k]] += s->w[k] * x[i];
}

/* ---- B = A^T A, A = W(count-1) ... W(first) - J -------------------------- */

typedef struct {
    size_t n;
    int count;
    sp_round *r;
    double *buf[3]; /* two for the chain of rounds, one for A x */
} op_b;

static void op_free(op_b *o)
{
    for (int k = 0; o->r && k < o->count; k++)
        sp_free(&o->r[k]);
    free(o->r);
    for (int k = 0; k < 3; k++)
        free(o->buf[k]);
    memset(o, 0, sizeof *o);
}

static int op_init(op_b *o, const mm_topology *t, uint64_t first, int count)
{
    memset(o, 0, sizeof *o);
    o->n = (size_t)t->n;
    o->count = count;
    o->r = calloc((size_t)count, sizeof *o->r);
    if (!o->r)
        return -1;
    for (int k = 0; k < 3; k++)
        if (!(o->buf[k] = malloc(o->n * sizeof(double))))
            goto fail;
    for (int k = 0; k < count; k++)
        if (sp_build(t, first + (uint64_t)k, &o->r[k]) < 0)
            goto fail;
    return 0;
fail:
    op_free(o);
    return -1;
}

static double mean(const double *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s / (double)n;
}

/* y = A x (or A^T x): the rounds in order (reversed and transposed), then
 * minus J x = mean(x) 1. y must differ from x and from buf[0], buf[1]. */
static void apply_a(op_b *o, const double *x, double *y, bool transpose)
{
    const double *src = x;
    for (int i = 0; i < o->count; i++) {
        int k = transpose ? o->count - 1 - i : i;
        double *dst = i == o->count - 1 ? y : o->buf[i % 2];
        sp_mul(&o->r[k], src, dst, transpose);
        src = dst;
    }
    double m = mean(x, o->n);
    for (size_t i = 0; i < o->n; i++)
        y[i] -= m;
}

static void apply_b(op_b *o, const double *x, double *y)
{
    apply_a(o, x, o->buf[2], false);
    apply_a(o, o->buf[2], y, true);
}

/* ---- the Lanczos iteration ----------------------------------------------- */

/* rho from theta, the eigenvalue of B: B's is sigma^2, rho = sigma^(1/q). */
static double to_rho(double theta, int q)
{
    double sigma = sqrt(theta > 0 ? theta : 0);
    /* A product that is J to rounding (the schedules with exact finite-time
     * consensus) leaves noise only; its q-th root would read as a rate. */
    if (q > 1 && sigma < 1e-12)
        return 0;
    return q == 1 ? sigma : pow(sigma, 1.0 / q);
}

/* How far rho moves when theta moves by e either way. */
static double rho_err(double theta, double e, int q)
{
    double r = to_rho(theta, q), up = to_rho(theta + e, q) - r, down = r - to_rho(theta - e, q);
    return up > down ? up : down;
}

/* Eigenvalues of the symmetric tridiagonal (a, b) below x (Sturm count). */
static int sturm_below(const double *a, const double *b, int k, double x)
{
    int c = 0;
    double d = 1;
    for (int i = 0; i < k; i++) {
        d = a[i] - x - (i ? b[i - 1] * b[i - 1] / d : 0);
        if (d == 0)
            d = -DBL_MIN * 1e10;
        if (d < 0)
            c++;
    }
    return c;
}

typedef struct {
    int k;
    double *w, *z, *work;
    int *iblock, *isplit, *iwork, *ifail;
} tri_ws;

static void tri_free(tri_ws *ws)
{
    free(ws->w);
    free(ws->z);
    free(ws->work);
    free(ws->iblock);
    free(ws->isplit);
    free(ws->iwork);
    free(ws->ifail);
    memset(ws, 0, sizeof *ws);
}

static int tri_reserve(tri_ws *ws, int k)
{
    if (k <= ws->k)
        return 0;
    tri_free(ws);
    int c = k * 2;
    ws->w = malloc((size_t)c * sizeof *ws->w);
    ws->z = malloc((size_t)c * sizeof *ws->z);
    ws->work = malloc((size_t)c * 5 * sizeof *ws->work);
    ws->iblock = malloc((size_t)c * sizeof *ws->iblock);
    ws->isplit = malloc((size_t)c * sizeof *ws->isplit);
    ws->iwork = malloc((size_t)c * 3 * sizeof *ws->iwork);
    ws->ifail = malloc(sizeof *ws->ifail);
    if (!ws->w || !ws->z || !ws->work || !ws->iblock || !ws->isplit || !ws->iwork || !ws->ifail) {
        tri_free(ws);
        return -1;
    }
    ws->k = c;
    return 0;
}

/* The idx-th smallest (1-based) eigenvalue of T_k; with vec, the last
 * component of its unit eigenvector in *last. 0, or -1 (LAPACK failed). */
static int tri_eig(const double *a, const double *b, int k, int idx, tri_ws *ws, double *val, double *last)
{
    int m = 0, nsplit = 0, info = 0, one = 1;
    double abstol = 2 * DBL_MIN, dummy = 0;
    dstebz_("I", "B", &k, &dummy, &dummy, &idx, &idx, &abstol, a, b, &m, &nsplit, ws->w, ws->iblock,
            ws->isplit, ws->work, ws->iwork, &info);
    if (info || m != 1)
        return -1;
    *val = ws->w[0];
    if (!last)
        return 0;
    dstein_(&k, a, b, &one, ws->w, ws->iblock, ws->isplit, ws->z, &k, ws->work, ws->iwork, ws->ifail, &info);
    if (info)
        return -1;
    *last = ws->z[k - 1];
    return 0;
}

/* A pseudo-random start (splitmix64), the same every run. */
static void start_vector(double *v, size_t n)
{
    uint64_t s = 0x6d75726d7572ULL; /* "murmur" */
    double norm = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        v[i] = (double)(z >> 11) / 9007199254740992.0 - 0.5;
        norm += v[i] * v[i];
    }
    norm = sqrt(norm);
    for (size_t i = 0; i < n; i++)
        v[i] /= norm;
}

static void say(const mm_topo_progress *p, const char *label, int k, double theta, double err, int q)
{
    if (!p || !p->fn)
        return;
    char what[160];
    double r = to_rho(theta, q), e = rho_err(theta, err, q);
    if (r < 1 && 1 - r < 1e-6)
        snprintf(what, sizeof what, "%s: Lanczos iteration %d, rho 1 - %.4g (error about %.1g)", label, k,
                 1 - r, e);
    else
        snprintf(what, sizeof what, "%s: Lanczos iteration %d, rho %.9f (error about %.1g)", label, k, r, e);
    p->fn(p->ud, what);
}

/* Lanczos on B (three vectors, no reorthogonalisation: the extreme Ritz
 * value converges all the same, Paige 1980; lost orthogonality only adds
 * copies of converged values, which the gap estimate skips). Stops when the
 * error estimate of rho = theta^(1/(2q)) is below RHO_TOL. The estimate is
 * r^2 / gap (r = beta_k |s_k|, the residual of the top Ritz pair; gap = to
 * the next distinct Ritz value), capped by r itself, the bound on how far
 * some eigenvalue of B lies from theta. */
static int lanczos(op_b *o, int q, const char *label, const mm_topo_progress *p, mm_rho *out)
{
    size_t n = o->n;
    int cap = 1024, rc = -1;
    double *a = malloc((size_t)cap * sizeof *a), *b = malloc((size_t)cap * sizeof *b);
    double *v = malloc(n * sizeof *v), *vp = calloc(n, sizeof *vp), *w = malloc(n * sizeof *w);
    tri_ws ws = {0};
    if (!a || !b || !v || !vp || !w)
        goto out;
    start_vector(v, n);
    double beta_prev = 0, scale = 0, theta = 0, est = INFINITY, bound = INFINITY;
    int next_check = 8, k = 0;
    bool converged = false;
    for (int j = 0; j < MM_RHO_MAX_ITERATIONS; j++) {
        apply_b(o, v, w);
        double al = 0;
        for (size_t i = 0; i < n; i++) {
            w[i] -= beta_prev * vp[i];
            al += w[i] * v[i];
        }
        double c = 0;
        for (size_t i = 0; i < n; i++)
            w[i] -= al * v[i];
        for (size_t i = 0; i < n; i++) /* once more against v: local orthogonality */
            c += w[i] * v[i];
        al += c;
        double be = 0;
        for (size_t i = 0; i < n; i++) {
            w[i] -= c * v[i];
            be += w[i] * w[i];
        }
        be = sqrt(be);
        if (j == cap) {
            cap *= 2;
            double *na = realloc(a, (size_t)cap * sizeof *a);
            if (na)
                a = na;
            double *nb = na ? realloc(b, (size_t)cap * sizeof *b) : NULL;
            if (!nb)
                goto out;
            b = nb;
        }
        a[j] = al;
        b[j] = be;
        k = j + 1;
        if (fabs(al) + be + beta_prev > scale)
            scale = fabs(al) + be + beta_prev;
        /* An invariant subspace: T_k's eigenvalues are B's, exactly. */
        bool breakdown = be <= 1e-14 * (scale > 0 ? scale : 1);
        if (breakdown || k >= next_check || k == MM_RHO_MAX_ITERATIONS) {
            double last = 0;
            if (tri_reserve(&ws, k) < 0 || tri_eig(a, b, k, k, &ws, &theta, &last) < 0)
                goto out;
            double r = be * fabs(last), sep = 10 * r + 1e-14 * scale;
            int above = k - sturm_below(a, b, k, theta - sep);
            double theta2 = -INFINITY;
            if (k - above >= 1 && tri_eig(a, b, k, k - above, &ws, &theta2, NULL) < 0)
                goto out;
            double gap = theta - theta2;
            bound = r;
            est = gap > r ? r * r / gap : r;
            say(p, label, k, theta, est, q);
            if (breakdown || rho_err(theta, est, q) <= RHO_TOL) {
                converged = true;
                break;
            }
            int step = k / 8 > 1000 ? 1000 : k / 8 > 10 ? k / 8 : 10;
            next_check = k + step;
        }
        for (size_t i = 0; i < n; i++) {
            vp[i] = v[i];
            v[i] = w[i] / be;
        }
        beta_prev = be;
    }
    /* Below about 4 ulps the estimate says nothing: rounding in B itself. */
    if (est < 4 * DBL_EPSILON * scale)
        est = 4 * DBL_EPSILON * scale;
    if (bound < est)
        bound = est;
    out->rho = to_rho(theta, q);
    out->err = rho_err(theta, est, q);
    out->err_bound = rho_err(theta, bound, q);
    if (out->err_bound < out->err)
        out->err_bound = out->err;
    out->iterations = k;
    out->converged = converged;
    out->method = "sparse (Lanczos)";
    rc = 0;
out:
    free(a);
    free(b);
    free(v);
    free(vp);
    free(w);
    tri_free(&ws);
    return rc;
}

static int rho_sparse(const mm_topology *t, uint64_t first, int count, const char *label,
                      const mm_topo_progress *p, mm_rho *out)
{
    op_b o;
    if (op_init(&o, t, first, count) < 0)
        return -1;
    int rc = lanczos(&o, count, label, p, out);
    op_free(&o);
    return rc;
}

/* ---- which method --------------------------------------------------------- */

static bool use_dense(const mm_topology *t, enum mm_rho_method m, const mm_topo_progress *p)
{
    bool dense = m == MM_RHO_DENSE || (m == MM_RHO_AUTO && t->n <= MM_RHO_DENSE_MAX);
    if (dense && t->n > 1000 && p && p->fn) {
        char what[128];
        snprintf(what, sizeof what, "rho: dense SVD of a %d x %d matrix: time grows as n^3", t->n, t->n);
        p->fn(p->ud, what);
    }
    return dense;
}

static void exact(mm_rho *out, double rho, const char *method)
{
    memset(out, 0, sizeof *out);
    out->rho = rho;
    out->converged = true;
    out->method = method;
}

int mm_topo_rho_ex(const mm_topology *t, enum mm_rho_method m, const mm_topo_progress *p, mm_rho *out)
{
    if (t->schedule == MM_SCHED_RANDOM_MATCHING) {
        /* Every round a uniform random perfect matching (one peer sits out
         * when n is odd): W = (I + P)/2 with P an involution, so W^T W = W,
         * and E[W] = I/2 + (1/(2(n-1))) (1 1^T - I) for n even (a peer meets
         * each other with probability 1/(n-1)), I/2 + J/2 for n odd. */
        int n = t->n;
        double lam = n < 2 ? 0 : n % 2 ? 0.5 : (n - 2) / (2.0 * (n - 1));
        exact(out, sqrt(lam), "closed form");
        return 0;
    }
    if (t->schedule == MM_SCHED_EPIDEMIC) {
        /* No closed form and no period: the expectation over sampled rounds. */
        memset(out, 0, sizeof *out);
        out->rho = mm_topo_rho_sampled(t, MM_TOPO_SAMPLE_ROUNDS);
        out->converged = true;
        out->method = "sampled (the mean over 1024 drawn rounds, dense): a sample estimate";
        return out->rho < 0 ? -1 : 0;
    }
    if (t->n == 1 || t->schedule == MM_SCHED_LOCAL) {
        exact(out, t->schedule == MM_SCHED_LOCAL && t->n > 1 ? 1 : 0, "closed form");
        return 0;
    }
    if (use_dense(t, m, p))
        return mm__rho_dense(t, false, 0, out);
    int count = t->period > 1 ? t->period : 1;
    return rho_sparse(t, 0, count, count > 1 ? "rho of the period's product" : "rho", p, out);
}

int mm_topo_rho_round_ex(const mm_topology *t, uint64_t round, enum mm_rho_method m,
                         const mm_topo_progress *p, mm_rho *out)
{
    if (t->n == 1) {
        exact(out, 0, "closed form");
        return 0;
    }
    if (use_dense(t, m, p))
        return mm__rho_dense(t, true, round, out);
    char label[48];
    snprintf(label, sizeof label, "rho of round %llu", (unsigned long long)round);
    return rho_sparse(t, round, 1, label, p, out);
}

double mm_topo_rho(const mm_topology *t)
{
    mm_rho r;
    return mm_topo_rho_ex(t, MM_RHO_AUTO, NULL, &r) < 0 ? -1 : r.rho;
}

double mm_topo_rho_round(const mm_topology *t, uint64_t round)
{
    mm_rho r;
    return mm_topo_rho_round_ex(t, round, MM_RHO_AUTO, NULL, &r) < 0 ? -1 : r.rho;
}
