/* The facts `murmur topo info` prints: degrees, connectivity and diameter
 * of the union of a window of rounds, the stochasticity of W in every round
 * of it, and rho (gossip/topo_spectral.c dense, gossip/topo_lanczos.c
 * sparse) with the number of rounds that shrink the consensus distance
 * tenfold. */
#include "gossip/topo_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_nb(const void *a, const void *b)
{
    uint32_t x = ((const mm_neighbour *)a)->peer, y = ((const mm_neighbour *)b)->peer;
    return (x > y) - (x < y);
}

static bool has_arc(const mm__arcs *a, uint32_t u, uint32_t v)
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
static int stochastic(const mm_topology *t, uint64_t round, mm_topo_facts *f, mm_neighbour *in,
                      mm_neighbour *out)
{
    const double tol = 1e-9;
    for (int i = 0; i < t->n; i++) {
        mm_round_view v = {.in = in, .out = out};
        if (mm_topo_round(t, (uint32_t)i, round, &v) < 0)
            return -1;
        double rs = v.self_weight, cs = v.self_weight;
        for (int k = 0; k < v.n_in; k++)
            rs += in[k].weight;
        for (int k = 0; k < v.n_out; k++)
            cs += out[k].weight;
        f->sends += v.n_out;
        if (fabs(rs - 1) > tol)
            f->row = false;
        if (fabs(cs - 1) > tol)
            f->column = false;
        qsort(in, (size_t)v.n_in, sizeof *in, cmp_nb);
        qsort(out, (size_t)v.n_out, sizeof *out, cmp_nb);
        if (v.n_in != v.n_out)
            f->symmetric = false;
        for (int k = 0; k < v.n_in && k < v.n_out; k++)
            if (in[k].peer != out[k].peer || fabs(in[k].weight - out[k].weight) > tol)
                f->symmetric = false;
    }
    return 0;
}

/* Degrees, edge counts and symmetry of the arcs of the window (a) and of
 * round 0 (a0). -1 when out of memory. */
static int degrees(const mm_topology *t, const mm__arcs *a, const mm__arcs *a0, mm_topo_facts *f)
{
    bool sym = true;
    for (int u = 0; u < t->n && sym; u++)
        for (uint32_t k = a->off[u]; k < a->off[u + 1]; k++)
            if (!has_arc(a, a->adj[k], (uint32_t)u)) {
                sym = false;
                break;
            }
    f->arcs_directed = !sym;
    f->edges = sym ? a->arcs / 2 : a->arcs;
    f->edges_per_round = sym ? a0->arcs / 2 : a0->arcs;
    int *indeg = calloc((size_t)t->n, sizeof *indeg);
    if (!indeg)
        return -1;
    for (size_t k = 0; k < a->arcs; k++)
        indeg[a->adj[k]]++;
    f->in_min = f->out_min = t->n;
    for (int u = 0; u < t->n; u++) {
        int od = (int)(a->off[u + 1] - a->off[u]);
        if (od < f->out_min) f->out_min = od;
        if (od > f->out_max) f->out_max = od;
        if (indeg[u] < f->in_min) f->in_min = indeg[u];
        if (indeg[u] > f->in_max) f->in_max = indeg[u];
    }
    free(indeg);
    f->deg_min = f->in_min < f->out_min ? f->in_min : f->out_min;
    f->deg_max = f->in_max > f->out_max ? f->in_max : f->out_max;
    return 0;
}

int mm_topo_graph_facts(const mm_topology *t, const mm_topo_progress *p, mm_topo_facts *f)
{
    memset(f, 0, sizeof *f);
    f->rho = NAN;
    f->rounds_tenfold = NAN;
    uint64_t window = mm__topo_window(t);
    mm__arcs a, a0;
    if (mm__arcs_union(t, window, &a) < 0)
        return -1;
    if (mm__arcs_union(t, 1, &a0) < 0) {
        mm__arcs_free(&a);
        return -1;
    }
    int rc = degrees(t, &a, &a0, f);
    bool from0;
    if (rc == 0) {
        f->connected = mm__arcs_unreached(&a, &from0) < 0;
        f->diameter = f->connected ? mm__arcs_diameter(&a, p) : -1;
        if (f->connected && f->diameter < 0)
            rc = -1;
    }
    mm__arcs_free(&a);
    mm__arcs_free(&a0);
    if (rc < 0)
        return -1;

    f->symmetric = f->row = f->column = true;
    size_t md = (size_t)(t->max_degree > 0 ? t->max_degree : 1);
    mm_neighbour *in = malloc(md * sizeof *in), *out = malloc(md * sizeof *out);
    uint64_t check = window < 64 ? window : 64;
    for (uint64_t r = 0; r < check && in && out && rc == 0; r++)
        rc = stochastic(t, r, f, in, out);
    if (!in || !out)
        rc = -1;
    free(in);
    free(out);
    f->sends /= (double)check * t->n;
    f->doubly = f->row && f->column;
    f->period = t->period;
    f->window = (int)window;
    return rc;
}

int mm_topo_stochastic(const mm_topology *t, bool *row, bool *column)
{
    mm_topo_facts f;
    memset(&f, 0, sizeof f);
    f.symmetric = f.row = f.column = true;
    size_t md = (size_t)(t->max_degree > 0 ? t->max_degree : 1);
    mm_neighbour *in = malloc(md * sizeof *in), *out = malloc(md * sizeof *out);
    uint64_t window = mm__topo_window(t), check = window < 64 ? window : 64;
    int rc = in && out ? 0 : -1;
    for (uint64_t r = 0; r < check && rc == 0; r++)
        rc = stochastic(t, r, &f, in, out);
    free(in);
    free(out);
    *row = f.row;
    *column = f.column;
    return rc;
}

bool mm_topo_needs_pushsum(const mm_topology *t)
{
    bool row, column;
    return mm_topo_stochastic(t, &row, &column) == 0 && column && !row;
}

int mm_topo_rho_facts(const mm_topology *t, enum mm_rho_method m, const mm_topo_progress *p,
                      mm_topo_facts *f)
{
    if (mm_topo_rho_ex(t, m, p, &f->rho_all) < 0)
        return -1;
    /* Per round: a static graph's one round is rho itself. */
    uint64_t shown = mm__topo_random(t) ? 4 : (uint64_t)f->window;
    f->n_rho_rounds = shown < 64 ? (int)shown : 64;
    for (int r = 0; r < f->n_rho_rounds; r++) {
        mm_rho one = f->rho_all;
        if (t->period != 1 && mm_topo_rho_round_ex(t, (uint64_t)r, m, p, &one) < 0)
            return -1;
        f->rho_rounds[r] = one.rho;
    }
    f->rho = f->rho_all.rho;
    f->rho_how = t->schedule == MM_SCHED_EPIDEMIC
                     ? "mean-square rate sqrt(lambda_max(E[W^T (I-J) W]))"
                 : mm__topo_random(t) ? "mean-square rate sqrt(lambda_max(E[W^T W] - J))"
                 : t->period > 1     ? "||W(period-1)...W(0) - J||_2^(1/period)"
                                     : "||W - J||_2";
    f->has_rho = true;
    f->exact_average = t->schedule == MM_SCHED_NONE && f->rho < 1e-12;
    /* A periodic schedule promises its rate only over whole periods. */
    int per = t->period > 1 ? t->period : 1;
    if (f->rho >= 1 - 1e-13)
        f->rounds_tenfold = INFINITY;
    else if (f->rho < 1e-12)
        f->rounds_tenfold = per;
    else /* log1p: rho within 1e-6 of 1 keeps its digits */
        f->rounds_tenfold = per * ceil(log(10.0) / (-log1p(f->rho - 1) * per) - 1e-9);
    return 0;
}

int mm_topo_facts_get(const mm_topology *t, mm_topo_facts *f)
{
    if (mm_topo_graph_facts(t, NULL, f) < 0)
        return -1;
    return mm_topo_rho_facts(t, MM_RHO_AUTO, NULL, f);
}
