/* Base-(k+1) graphs (Takezawa et al., NeurIPS 2023, "Beyond Exponential
 * Graph"): a time-varying graph of maximum degree k whose W matrices, taken
 * over one period, multiply to exactly J = 1 1^T / n, for any n. Written
 * from the paper's construction and the authors' code (yukiTakezawa/
 * BaseGraph), with its default "inner edges"; the node labelling is ours.
 * topologies/README.md states the rules; every round is computed from
 * (n, k, round) in O(k + log n) per peer, with no state but the plan made
 * at load (the base-(k+1) digits of n and some factor lists).
 *
 * Three layers:
 *  - HH(m), the k-peer hyper-hypercube, for m whose prime factors are all
 *    <= k+1: write m = f_1 f_2 ... f_R (each 2..k+1) and in round t average
 *    in cliques over the t-th mixed-radix digit; after R rounds, J.
 *  - SB(m), the simple Base-(k+1) graph, for any m: split m by its base-(k+1)
 *    digits into groups V_l of a_l (k+1)^p_l peers, average each group by
 *    HH, then fold group j into all later groups in one round each, then
 *    re-average the folded groups block by block.
 *  - Base(n): SB(n), or, when shorter, SB on rows of n_rest peers followed
 *    by HH on columns of n_power peers (n_power = the part of n whose prime
 *    factors are <= k+1). */
#include "gossip/topo_internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_FACT 64   /* factors of m <= 2^20: at most 20 */
#define MAX_GROUPS 64 /* base-(k+1) digits of m <= 2^20: at most 21 */

typedef struct {
    int n_f;
    int f[MAX_FACT]; /* round t averages over digit t, radix f[t] */
} hh_plan;

typedef struct {
    uint32_t m;
    int len;              /* rounds */
    bool smooth;          /* m's primes are all <= k+1 (or m = 1): HH(m) */
    hh_plan whole;
    int L, P1;            /* groups; rounds of the first phase */
    uint32_t a[MAX_GROUPS], p[MAX_GROUPS];
    uint32_t size[MAX_GROUPS], off[MAX_GROUPS + 1], block[MAX_GROUPS];
    hh_plan grp[MAX_GROUPS], blk[MAX_GROUPS];
} sb_plan;

struct base_plan {
    uint32_t k;
    bool rows;            /* SB on rows of n_rest, then HH on columns of n_power */
    uint32_t n_rest, n_power;
    sb_plan sb;           /* SB(n), or SB(n_rest) with rows */
    hh_plan col;          /* HH(n_power) */
};

void mm__base_free(struct base_plan *b) { free(b); }

static int hh_len(const hh_plan *h) { return h->n_f > 0 ? h->n_f : 1; }

/* Factors of m, each 2..k+1, largest divisor first and then in reverse (as
 * the authors' code orders them); false when some prime of m exceeds k+1. */
static bool factorize(uint32_t m, uint32_t k, hh_plan *h)
{
    int found[MAX_FACT], n = 0;
    uint32_t rest = m;
    for (uint32_t f = k + 1; f >= 2 && rest > 1; f--)
        while (rest % f == 0 && n < MAX_FACT) {
            found[n++] = (int)f;
            rest /= f;
        }
    h->n_f = n;
    for (int i = 0; i < n; i++)
        h->f[i] = found[n - 1 - i];
    return rest == 1;
}

static void sb_init(sb_plan *p, uint32_t m, uint32_t k)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->smooth = factorize(m, k, &p->whole);
    if (p->smooth) {
        p->len = hh_len(&p->whole);
        return;
    }
    uint64_t pw = 1;
    uint32_t top = 0;
    while (pw * (k + 1) <= m) {
        pw *= k + 1;
        top++;
    }
    uint32_t rem = m;
    for (int64_t e = top; e >= 0; e--, pw /= k + 1) {
        uint32_t a = (uint32_t)(rem / pw);
        if (!a)
            continue;
        int l = p->L++;
        p->a[l] = a;
        p->p[l] = (uint32_t)e;
        p->block[l] = (uint32_t)pw;
        p->size[l] = a * (uint32_t)pw;
        p->off[l + 1] = p->off[l] + p->size[l];
        rem -= p->size[l];
        factorize(p->size[l], k, &p->grp[l]);
        factorize(p->block[l], k, &p->blk[l]);
        if (hh_len(&p->grp[l]) > p->P1)
            p->P1 = hh_len(&p->grp[l]);
    }
    p->len = p->P1 + (int)p->p[0] + 1;
}

/* Symmetric: what we receive from a peer we also send it, same weight. */
static void add_nb(mm_round_view *v, uint32_t peer, double w)
{
    v->in[v->n_in++] = (mm_neighbour){peer, w};
    v->out[v->n_out++] = (mm_neighbour){peer, w};
}

/* Round r of HH for local peer i of a structure whose local peer x is the
 * global peer base + x * stride. */
static void hh_view(const hh_plan *h, uint64_t r, uint32_t i, uint32_t base, uint32_t stride,
                    mm_round_view *v)
{
    if (!h->n_f)
        return;
    int t = (int)(r % (uint64_t)h->n_f);
    uint32_t s = 1, f = (uint32_t)h->f[t];
    for (int u = 0; u < t; u++)
        s *= (uint32_t)h->f[u];
    uint32_t d = (i / s) % f;
    for (uint32_t e = 0; e < f; e++)
        if (e != d)
            add_nb(v, base + (i - d * s + e * s) * stride, 1.0 / f);
    v->self_weight = 1.0 / f;
}

static void sb_view(const sb_plan *p, uint32_t k, uint64_t m, uint32_t i, uint32_t base,
                    uint32_t stride, mm_round_view *v)
{
    if (p->smooth) {
        hh_view(&p->whole, m, i, base, stride, v);
        return;
    }
    int l = 0;
    while (i >= p->off[l + 1])
        l++;
    if (m < (uint64_t)p->P1) { /* every group averages itself */
        hh_view(&p->grp[l], m, i - p->off[l], base + p->off[l] * stride, stride, v);
        return;
    }
    int j = (int)(m - (uint64_t)p->P1); /* fold group j into the later ones */
    uint32_t later = p->m - p->off[j < p->L ? j + 1 : p->L]; /* peers after group j */
    double beta = j < p->L ? (double)p->size[j] / (double)(p->m - p->off[j]) : 0;
    if (j < l) {
        /* one peer of each of group j's a_j blocks, at our offset t among
         * the later peers (there are fewer of those than a block holds) */
        uint32_t t = i - p->off[j + 1];
        for (uint32_t b = 0; b < p->a[j]; b++)
            add_nb(v, base + (p->off[j] + b * p->block[j] + t) * stride, beta / p->a[j]);
        v->self_weight = 1 - beta;
    } else if (j == l && l != p->L - 1) {
        uint32_t B = p->block[j], q = i - p->off[j], b = q / B, t = q % B;
        if (t < later) {
            add_nb(v, base + (p->off[j + 1] + t) * stride, beta / p->a[j]);
            v->self_weight = 1 - beta / p->a[j];
            return;
        }
        /* Unpaired: cliques of k+1 in order (a last one of size 1 stays
         * alone). They all hold group j's average already; the authors'
         * default keeps these edges, for the mixing they add in training. */
        uint32_t span = B - later, U = p->a[j] * span, u = b * span + (t - later);
        uint32_t c0 = u / (k + 1) * (k + 1), c1 = c0 + k + 1 < U ? c0 + k + 1 : U;
        if (c1 - c0 < 2)
            return;
        for (uint32_t x = c0; x < c1; x++) {
            uint32_t node = p->off[j] + x / span * B + later + x % span;
            if (node != i)
                add_nb(v, base + node * stride, 1.0 / (c1 - c0));
        }
        v->self_weight = 1.0 / (c1 - c0);
    } else {
        /* folded already (or the last group): re-average block by block,
         * counting rounds from the first one after the fold */
        uint64_t cnt = (uint64_t)(l == p->L - 1 ? j - (p->L - 1) : j - l - 1);
        if (p->p[l] == 0) {
            hh_view(&p->grp[l], cnt, i - p->off[l], base + p->off[l] * stride, stride, v);
        } else {
            uint32_t B = p->block[l], q = i - p->off[l];
            hh_view(&p->blk[l], cnt, q % B, base + (p->off[l] + q / B * B) * stride, stride, v);
        }
    }
}

int mm__base_init(mm_topology *t, const char *name, char *err, size_t errlen)
{
    uint32_t n = (uint32_t)t->n;
    if (n < 2 || t->degree < 1 || (uint32_t)t->degree > n - 1)
        return mm__topo_err(err, errlen, name, 0,
                           "base: 'degree %d' (the maximum degree k) must be 1..%u", t->degree,
                           n > 1 ? n - 1 : 1);
    struct base_plan *b = calloc(1, sizeof *b);
    if (!b)
        return mm__topo_err(err, errlen, name, 0, "out of memory");
    t->base = b;
    uint32_t k = (uint32_t)t->degree;
    b->k = k;
    uint32_t rest = n, np = 1;
    for (uint32_t f = 2; f <= k + 1 && rest > 1; f++)
        while (rest % f == 0) {
            rest /= f;
            np *= f;
        }
    b->n_rest = rest;
    b->n_power = np;
    sb_plan whole;
    sb_init(&whole, n, k);
    sb_init(&b->sb, rest, k);
    factorize(np, k, &b->col);
    int len_rows = b->sb.len + hh_len(&b->col);
    if (whole.len < len_rows) {
        b->sb = whole;
        t->period = whole.len;
    } else {
        b->rows = true;
        t->period = len_rows;
    }
    t->max_degree = (int)k;
    return 0;
}

int mm__base_round(const mm_topology *t, uint32_t me, uint64_t round, mm_round_view *v)
{
    const struct base_plan *b = t->base;
    uint64_t r = round % (uint64_t)t->period;
    v->n_in = v->n_out = 0;
    v->self_weight = 1.0;
    if (!b->rows) {
        sb_view(&b->sb, b->k, r, me, 0, 1, v);
        return 0;
    }
    uint32_t row = me / b->n_rest, c = me % b->n_rest;
    if (r < (uint64_t)b->sb.len)
        sb_view(&b->sb, b->k, r, c, row * b->n_rest, 1, v);
    else
        hh_view(&b->col, r - (uint64_t)b->sb.len, row, c, b->n_rest, v);
    return 0;
}
