/* Two named schedules (topologies/README.md gives the rules exactly):
 *
 *  - alt-exp-ring, Decent-DP's "alternating exponential ring" (Wang et al.,
 *    ICLR 2025): peers sit in hosts of `group`; round pairs alternate an
 *    average inside each host with an average over two hosts 2^i apart, and
 *    half of the host pairs do the two in the other order, so that only half
 *    of the hosts talk across at a time. O(group) per round and peer.
 *  - epidemic, Epidemic Learning's EL-Local (de Vos et al., NeurIPS 2023):
 *    every peer sends to `fanout` others drawn at random from (seed, round);
 *    a receiver averages its own vector and whatever arrived, uniformly.
 *    Every peer draws the whole round once (O(n s^2)) and keeps it. */
#include "gossip/topo_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- alt-exp-ring --------------------------------------------------------- */

int mm__alt_init(mm_topology *t, const char *name, char *err, size_t errlen)
{
    int n = t->n, g = t->group;
    if (g < 1 || n % g)
        return mm__topo_err(err, errlen, name, 0,
                           "alt-exp-ring: %d peers do not split into hosts of 'group %d'", n, g);
    int hosts = n / g;
    if (hosts < 2 || (hosts & (hosts - 1)))
        return mm__topo_err(err, errlen, name, 0,
                           "alt-exp-ring: needs a power of two of hosts, at least 2; %d peers in "
                           "hosts of %d make %d", n, g, hosts);
    t->tau = mm_ceil_log2(hosts);
    t->period = 2 * t->tau;
    t->max_degree = 2 * g - 1;
    return 0;
}

int mm__alt_round(const mm_topology *t, uint32_t me, uint64_t round, mm_round_view *v)
{
    uint32_t g = (uint32_t)t->group, h = me / g;
    uint64_t r = round % (uint64_t)t->period;
    uint32_t i = (uint32_t)(r / 2), phase = (uint32_t)(r % 2);
    /* Pairs (h, h + 2^i) with bit i of h clear, numbered in order of h:
     * Decent-DP counts them over all exponents; there are hosts/2 per
     * exponent, so for 4 hosts or more the parity is that of the pair's
     * number within its exponent. */
    uint32_t lowmask = (1u << i) - 1;
    uint32_t q = ((h >> (i + 1)) << i) | (h & lowmask);
    uint32_t hosts = (uint32_t)t->n / g;
    uint64_t cnt = (uint64_t)i * (hosts / 2) + q;
    bool cross = (cnt % 2 == 0) == (phase == 1);
    v->n_in = v->n_out = 0;
    uint32_t first[2] = {h * g, 0};
    int parts = 1;
    if (cross) {
        first[1] = (h ^ (1u << i)) * g;
        parts = 2;
        if (first[1] < first[0]) {
            uint32_t tmp = first[0];
            first[0] = first[1];
            first[1] = tmp;
        }
    }
    double w = 1.0 / ((double)g * parts);
    for (int p = 0; p < parts; p++)
        for (uint32_t j = first[p]; j < first[p] + g; j++)
            if (j != me) {
                v->in[v->n_in++] = (mm_neighbour){j, w};
                v->out[v->n_out++] = (mm_neighbour){j, w};
            }
    v->self_weight = v->n_in ? w : 1.0;
    return 0;
}

/* ---- epidemic ------------------------------------------------------------- */

struct epi_cache {
    pthread_mutex_t lock;
    bool valid;
    uint64_t round;
    uint32_t *out;      /* n * s targets, each peer's sorted */
    uint32_t *in_off;   /* n + 1 */
    uint32_t *in;       /* n * s senders, grouped by receiver, sorted */
    uint32_t *pos;      /* scratch: n */
};

void mm__epi_free(struct epi_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c->out);
    free(c->in_off);
    free(c->in);
    free(c->pos);
    free(c);
}

int mm__epi_init(mm_topology *t, const char *name, char *err, size_t errlen)
{
    int n = t->n, s = t->fanout;
    if (n < 2 || s < 1 || s > n - 1)
        return mm__topo_err(err, errlen, name, 0,
                           "epidemic: 'fanout %d' must be 1..%d (the other peers)", s, n - 1);
    t->period = 0;
    t->max_degree = n - 1; /* in-degree: anything up to n-1, rarely more than ~2s */
    struct epi_cache *c = calloc(1, sizeof *c);
    size_t ns = (size_t)n * (size_t)s;
    if (c) {
        pthread_mutex_init(&c->lock, NULL);
        c->out = malloc(ns * sizeof *c->out);
        c->in = malloc(ns * sizeof *c->in);
        c->in_off = malloc(((size_t)n + 1) * sizeof *c->in_off);
        c->pos = malloc((size_t)n * sizeof *c->pos);
    }
    t->ec = c;
    if (!c || !c->out || !c->in || !c->in_off || !c->pos)
        return mm__topo_err(err, errlen, name, 0, "out of memory");
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Round r for every peer: sender j = 0, 1, ..., n-1 in turn picks s distinct
 * values of 0..n-2 by Floyd's algorithm (for v = n-1-s .. n-2: t = below(v+1);
 * if t was picked already, take v instead) from one generator per round, and
 * value t names peer t (t < j) or t + 1 (t >= j). */
static void epi_draw(const mm_topology *t, struct epi_cache *c, uint64_t round)
{
    uint32_t n = (uint32_t)t->n, s = (uint32_t)t->fanout, N = n - 1;
    mm_rng rng;
    mm__topo_round_rng(t->seed, round, &rng);
    memset(c->in_off, 0, ((size_t)n + 1) * sizeof *c->in_off);
    for (uint32_t j = 0; j < n; j++) {
        uint32_t *o = c->out + (size_t)j * s;
        uint32_t k = 0;
        for (uint32_t v = N - s; v < N; v++) {
            uint32_t x = (uint32_t)mm_rng_below(&rng, (uint64_t)v + 1);
            for (uint32_t m = 0; m < k; m++)
                if (o[m] == x) {
                    x = v;
                    break;
                }
            o[k++] = x;
        }
        for (uint32_t m = 0; m < s; m++) {
            o[m] += o[m] >= j;
            c->in_off[o[m] + 1]++;
        }
        qsort(o, s, sizeof *o, cmp_u32);
    }
    for (uint32_t i = 0; i < n; i++)
        c->in_off[i + 1] += c->in_off[i];
    memcpy(c->pos, c->in_off, (size_t)n * sizeof *c->pos);
    /* Senders in increasing order land sorted in each receiver's list. */
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t m = 0; m < s; m++)
            c->in[c->pos[c->out[(size_t)j * s + m]]++] = j;
    c->valid = true;
    c->round = round;
}

int mm__epi_round(const mm_topology *t, uint32_t me, uint64_t round, mm_round_view *v)
{
    struct epi_cache *c = t->ec;
    uint32_t s = (uint32_t)t->fanout;
    pthread_mutex_lock(&c->lock);
    if (!c->valid || c->round != round)
        epi_draw(t, c, round);
    uint32_t a = c->in_off[me], b = c->in_off[me + 1];
    double w = 1.0 / (double)(b - a + 1);
    v->n_in = (int)(b - a);
    for (uint32_t k = a; k < b; k++)
        v->in[k - a] = (mm_neighbour){c->in[k], w};
    v->self_weight = w;
    v->n_out = (int)s;
    for (uint32_t m = 0; m < s; m++) {
        uint32_t to = c->out[(size_t)me * s + m];
        /* W[to][me]: what the receiver gives us */
        v->out[m] = (mm_neighbour){to, 1.0 / (double)(c->in_off[to + 1] - c->in_off[to] + 1)};
    }
    pthread_mutex_unlock(&c->lock);
    return 0;
}
