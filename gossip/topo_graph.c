/* Graph facts over the union of a window of rounds: connectivity and
 * diameter by breadth-first search on sorted arc lists. */
#include "gossip/topo_internal.h"

#include <stdlib.h>
#include <string.h>

void mm_arcs_free(mm_arcs *a)
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
static int static_arcs(const mm_topology *t, mm_arcs *a)
{
    size_t n = (size_t)t->n, m = t->out_off[n];
    a->n = t->n;
    a->arcs = m;
    a->off = malloc((n + 1) * sizeof *a->off);
    a->adj = malloc((m ? m : 1) * sizeof *a->adj);
    if (!a->off || !a->adj) {
        mm_arcs_free(a);
        return -1;
    }
    memcpy(a->off, t->out_off, (n + 1) * sizeof *a->off);
    for (size_t k = 0; k < m; k++)
        a->adj[k] = t->out_nb[k].peer;
    return 0;
}

int mm_arcs_union(const mm_topology *t, uint64_t rounds, mm_arcs *a)
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
    mm_arcs_free(a);
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

int mm_arcs_unreached(const mm_arcs *a, bool *from0)
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

int mm_arcs_diameter(const mm_arcs *a)
{
    int n = a->n, diam = 0, unreached;
    int *dist = malloc((size_t)n * sizeof *dist);
    uint32_t *queue = malloc((size_t)n * sizeof *queue);
    if (!dist || !queue) {
        diam = -1;
        n = 0;
    }
    for (int s = 0; s < n; s++) {
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
