/* Graph facts over the union of a window of rounds: connectivity and
 * diameter by breadth-first search on sorted arc lists. */
#include "gossip/topo_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mm__arcs_free(mm__arcs *a)
{
    free(a->off);
    free(a->adj);
    a->off = a->adj = NULL;
}

static int cmp_pair(const void *pa, const void *pb)
{
    const uint32_t *x = pa, *y = pb;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Static graphs: the out-lists are already sorted and distinct. */
static int static_arcs(const mm_topology *t, mm__arcs *a)
{
    size_t n = (size_t)t->n, m = t->out_off[n];
    a->n = t->n;
    a->arcs = m;
    a->off = malloc((n + 1) * sizeof *a->off);
    a->adj = malloc((m ? m : 1) * sizeof *a->adj);
    if (!a->off || !a->adj) {
        mm__arcs_free(a);
        return -1;
    }
    memcpy(a->off, t->out_off, (n + 1) * sizeof *a->off);
    for (size_t k = 0; k < m; k++)
        a->adj[k] = t->out_nb[k].peer;
    return 0;
}

int mm__arcs_union(const mm_topology *t, uint64_t rounds, mm__arcs *a)
{
    if (t->schedule == MM_SCHED_NONE) {
        memset(a, 0, sizeof *a);
        return static_arcs(t, a);
    }
    size_t n = (size_t)t->n;
    int md = t->max_degree > 0 ? t->max_degree : 1;
    size_t cap = 1024, len = 0;
    uint32_t *pairs = malloc(cap * 2 * sizeof *pairs);
    mm_neighbour *in = malloc((size_t)md * sizeof *in), *out = malloc((size_t)md * sizeof *out);
    memset(a, 0, sizeof *a);
    a->n = t->n;
    if (!pairs || !in || !out)
        goto fail;
    for (uint64_t r = 0; r < rounds; r++) {
        for (size_t i = 0; i < n; i++) {
            mm_round_view v = {.in = in, .out = out};
            if (mm_topo_round(t, (uint32_t)i, r, &v) < 0)
                goto fail;
            for (int k = 0; k < v.n_out; k++) {
                if (len == cap) {
                    uint32_t *np = realloc(pairs, cap * 4 * sizeof *pairs);
                    if (!np)
                        goto fail;
                    pairs = np;
                    cap *= 2;
                }
                pairs[2 * len] = (uint32_t)i;
                pairs[2 * len + 1] = out[k].peer;
                len++;
            }
        }
        /* Keep memory at O(distinct arcs) for long windows. */
        if (len > 4 * n * (size_t)md + 1024 || r + 1 == rounds) {
            qsort(pairs, len, 2 * sizeof *pairs, cmp_pair);
            size_t w = 0;
            for (size_t k = 0; k < len; k++)
                if (!w || pairs[2 * k] != pairs[2 * (w - 1)] || pairs[2 * k + 1] != pairs[2 * (w - 1) + 1]) {
                    pairs[2 * w] = pairs[2 * k];
                    pairs[2 * w + 1] = pairs[2 * k + 1];
                    w++;
                }
            len = w;
        }
    }
    a->off = calloc(n + 1, sizeof *a->off);
    a->adj = malloc((len ? len : 1) * sizeof *a->adj);
    if (!a->off || !a->adj)
        goto fail;
    for (size_t k = 0; k < len; k++) {
        a->off[pairs[2 * k] + 1]++;
        a->adj[k] = pairs[2 * k + 1];
    }
    for (size_t i = 0; i < n; i++)
        a->off[i + 1] += a->off[i];
    a->arcs = len;
    free(pairs);
    free(in);
    free(out);
    return 0;
fail:
    free(pairs);
    free(in);
    free(out);
    mm__arcs_free(a);
    return -1;
}

/* BFS distances from src along arcs; returns the farthest distance, or -1
 * when some peer is unreached (its id in *unreached). */
static int bfs(const uint32_t *off, const uint32_t *adj, int n, int src, int *dist,
               uint32_t *queue, int *unreached)
{
    for (int i = 0; i < n; i++)
        dist[i] = -1;
    size_t head = 0, tail = 0;
    dist[src] = 0;
    queue[tail++] = (uint32_t)src;
    int far = 0;
    while (head < tail) {
        uint32_t u = queue[head++];
        for (uint32_t k = off[u]; k < off[u + 1]; k++) {
            uint32_t v = adj[k];
            if (dist[v] < 0) {
                dist[v] = dist[u] + 1;
                far = dist[v];
                queue[tail++] = v;
            }
        }
    }
    for (int i = 0; i < n; i++)
        if (dist[i] < 0) {
            *unreached = i;
            return -1;
        }
    return far;
}

int mm__arcs_unreached(const mm__arcs *a, bool *from0)
{
    int n = a->n, bad = -1, bad2 = -1;
    int *dist = malloc((size_t)n * sizeof *dist);
    uint32_t *queue = malloc((size_t)n * sizeof *queue);
    uint32_t *roff = calloc((size_t)n + 1, sizeof *roff);
    uint32_t *radj = malloc((a->arcs ? a->arcs : 1) * sizeof *radj);
    *from0 = true;
    if (!dist || !queue || !roff || !radj) {
        bad = 0;
        goto out;
    }
    if (bfs(a->off, a->adj, n, 0, dist, queue, &bad) >= 0)
        bad = -1;
    /* Reverse arcs: can everyone reach 0? */
    for (int u = 0; u < n; u++)
        for (uint32_t k = a->off[u]; k < a->off[u + 1]; k++)
            roff[a->adj[k] + 1]++;
    for (int i = 0; i < n; i++)
        roff[i + 1] += roff[i];
    for (int u = 0; u < n; u++)
        for (uint32_t k = a->off[u]; k < a->off[u + 1]; k++)
            radj[roff[a->adj[k]]++] = (uint32_t)u;
    for (int i = n; i > 0; i--)
        roff[i] = roff[i - 1];
    roff[0] = 0;
    if (bfs(roff, radj, n, 0, dist, queue, &bad2) >= 0)
        bad2 = -1;
    *from0 = bad >= 0;
    if (bad < 0)
        bad = bad2;
out:
    free(dist);
    free(queue);
    free(roff);
    free(radj);
    return bad;
}

static void diameter_progress(const mm_topo_progress *p, int done, int n)
{
    if (!p || !p->fn)
        return;
    char what[96];
    snprintf(what, sizeof what, "diameter: breadth-first searches from %d of %d peers", done, n);
    p->fn(p->ud, what);
}

/* One search per peer, for graphs of long paths (rings, chains). */
static int diameter_one_by_one(const mm__arcs *a, const mm_topo_progress *p)
{
    int n = a->n, diam = 0, unreached;
    int *dist = malloc((size_t)n * sizeof *dist);
    uint32_t *queue = malloc((size_t)n * sizeof *queue);
    if (!dist || !queue) {
        diam = -1;
        n = 0;
    }
    for (int s = 0; s < n; s++) {
        if (s % 256 == 0 && s)
            diameter_progress(p, s, n);
        int far = bfs(a->off, a->adj, n, s, dist, queue, &unreached);
        if (far < 0) {
            diam = -1;
            break;
        }
        if (far > diam)
            diam = far;
    }
    free(dist);
    free(queue);
    return diam;
}

/* 64 searches at once, one bit each: a level costs one pass over the arcs
 * for all 64, so this wins when the diameter is small (exponential graphs,
 * expanders) and loses when it is long. */
static int diameter_bit_parallel(const mm__arcs *a, const mm_topo_progress *p)
{
    size_t n = (size_t)a->n;
    uint64_t *seen = malloc(n * sizeof *seen), *front = malloc(n * sizeof *front),
             *next = malloc(n * sizeof *next);
    int diam = 0;
    if (!seen || !front || !next)
        diam = -1;
    for (size_t base = 0; base < n && diam >= 0; base += 64) {
        if (base % 1024 == 0 && base)
            diameter_progress(p, (int)base, (int)n);
        size_t cnt = n - base < 64 ? n - base : 64;
        uint64_t full = cnt == 64 ? ~0ULL : (1ULL << cnt) - 1;
        memset(seen, 0, n * sizeof *seen);
        memset(front, 0, n * sizeof *front);
        for (size_t s = 0; s < cnt; s++)
            seen[base + s] = front[base + s] = 1ULL << s;
        int level = 0;
        for (;;) {
            memset(next, 0, n * sizeof *next);
            for (size_t u = 0; u < n; u++)
                if (front[u])
                    for (uint32_t k = a->off[u]; k < a->off[u + 1]; k++)
                        next[a->adj[k]] |= front[u];
            uint64_t any = 0;
            for (size_t v = 0; v < n; v++) {
                front[v] = next[v] & ~seen[v];
                seen[v] |= front[v];
                any |= front[v];
            }
            if (!any)
                break;
            level++;
        }
        for (size_t v = 0; v < n; v++)
            if (seen[v] != full) {
                diam = -1; /* some source does not reach v */
                break;
            }
        if (diam >= 0 && level > diam)
            diam = level;
    }
    free(seen);
    free(front);
    free(next);
    return diam;
}

int mm__arcs_diameter(const mm__arcs *a, const mm_topo_progress *p)
{
    if (a->n <= 1)
        return 0;
    /* The eccentricity e0 of peer 0 bounds every search (at most 2 e0 levels
     * when undirected; a guess when directed): pick the cheaper way. */
    int *dist = malloc((size_t)a->n * sizeof *dist), unreached;
    uint32_t *queue = malloc((size_t)a->n * sizeof *queue);
    int e0 = dist && queue ? bfs(a->off, a->adj, a->n, 0, dist, queue, &unreached) : -1;
    free(dist);
    free(queue);
    if (e0 < 0)
        return -1;
    double one = (double)a->n * ((double)a->n + (double)a->arcs);
    double bits = ((double)a->n / 64 + 1) * (2.0 * e0 + 1) * ((double)a->arcs + 3.0 * a->n);
    return bits < one ? diameter_bit_parallel(a, p) : diameter_one_by_one(a, p);
}
