/* The links as a fluid (plan/plan_fluid.h, docs/runtime.md "Out of step"):
 * flows that start at different moments share the resources they are on
 * max-min fairly, and a vector to a peer that an earlier one is still
 * going to waits behind it. */
#include "plan/plan_fluid.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A flow is through when fewer bytes than this share of it are left (the
 * rounding of rate x time). */
#define THROUGH 1e-9

int mm_fluid_reserve(mm_fluid_flow **a, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    mm_fluid_flow *n = realloc(*a, c * sizeof *n);
    if (!n)
        return -1;
    *a = n;
    *cap = c;
    return 0;
}

int mm_fluid_fair_rates(const mm_fluid_flow *f, size_t nf, const double *cap, size_t ncap,
                        double *rate)
{
    double *left = malloc((ncap ? ncap : 1) * sizeof *left);
    unsigned *grow = malloc((ncap ? ncap : 1) * sizeof *grow); /* growing flows through r */
    bool *fixed = calloc(nf ? nf : 1, sizeof *fixed);
    if (!left || !grow || !fixed) {
        free(left), free(grow), free(fixed);
        return -1;
    }
    memcpy(left, cap, ncap * sizeof *left);
    size_t growing = 0;
    for (size_t k = 0; k < nf; k++) {
        rate[k] = 0;
        fixed[k] = f[k].state != MM_FLUID_MOVING;
        growing += !fixed[k];
    }
    while (growing) {
        memset(grow, 0, ncap * sizeof *grow);
        for (size_t k = 0; k < nf; k++)
            for (int i = 0; !fixed[k] && i < f[k].nres; i++)
                grow[f[k].res[i]]++;
        /* the next resource to fill, at an equal increase of every growing rate */
        double inc = INFINITY;
        for (size_t r = 0; r < ncap; r++)
            if (grow[r] && cap[r] > 0)
                inc = fmin(inc, left[r] / grow[r]);
        if (!isfinite(inc)) { /* what still grows crosses no limited resource */
            for (size_t k = 0; k < nf; k++)
                if (!fixed[k])
                    rate[k] = INFINITY;
            break;
        }
        for (size_t r = 0; r < ncap; r++)
            if (cap[r] > 0)
                left[r] -= inc * grow[r];
        for (size_t k = 0; k < nf; k++) {
            if (fixed[k])
                continue;
            rate[k] += inc;
            for (int i = 0; i < f[k].nres; i++) {
                size_t r = f[k].res[i];
                if (cap[r] > 0 && left[r] <= cap[r] * 1e-12)
                    fixed[k] = true; /* a full resource: its flows stop growing */
            }
            growing -= fixed[k];
        }
    }
    free(left), free(grow), free(fixed);
    return 0;
}

int mm_fluid_init(mm_fluid *fl, const mm_plan_in *in)
{
    memset(fl, 0, sizeof *fl);
    fl->in = in;
    fl->nres = mm_plan_nres(in);
    size_t R = fl->nres ? fl->nres : 1;
    fl->cap = calloc(R, sizeof *fl->cap);
    fl->moving = calloc(R, sizeof *fl->moving);
    fl->same = calloc(R, sizeof *fl->same);
    return fl->cap && fl->moving && fl->same ? 0 : -1;
}

void mm_fluid_free(mm_fluid *fl)
{
    free(fl->f), free(fl->rate), free(fl->cap), free(fl->moving), free(fl->same);
    memset(fl, 0, sizeof *fl);
}

/* Whether a vector from `from` to `to` is moving, or (queued too) still
 * waits to. */
static bool pair_busy(const mm_fluid *fl, uint32_t from, uint32_t to, bool queued_too)
{
    for (size_t k = 0; k < fl->nf; k++) {
        const mm_fluid_flow *a = &fl->f[k];
        if (a->from == from && a->to == to &&
            (a->state == MM_FLUID_MOVING || (queued_too && a->state == MM_FLUID_QUEUED)))
            return true;
    }
    return false;
}

int mm_fluid_send(mm_fluid *fl, uint32_t from, uint32_t to, uint64_t e, double bytes)
{
    if (fl->nf == fl->cap_f) {
        size_t c = fl->cap_f;
        if (mm_fluid_reserve(&fl->f, &c, fl->nf + 1) != 0)
            return -1;
        double *rate = realloc(fl->rate, c * sizeof *rate);
        if (!rate)
            return -1; /* (fl->f grew; cap_f says what rate holds) */
        fl->rate = rate;
        fl->cap_f = c;
    }
    mm_fluid_flow *x = &fl->f[fl->nf];
    *x = (mm_fluid_flow){.from = from, .to = to, .exchange = e, .left = bytes, .bytes = bytes,
                         .state = pair_busy(fl, from, to, true) ? MM_FLUID_QUEUED : MM_FLUID_MOVING};
    x->nres = mm_plan_flow_resources(fl->in, (mm_plan_flow){from, to}, x->res, NULL);
    fl->rate[fl->nf++] = 0;
    return 0;
}

unsigned mm_fluid_snapshots(const mm_fluid *fl, uint32_t from)
{
    unsigned n = 0;
    for (size_t k = 0; k < fl->nf; k++) {
        const mm_fluid_flow *a = &fl->f[k];
        if (a->from != from || a->state == MM_FLUID_DELIVERING)
            continue;
        bool seen = false; /* counted at an earlier flow of the same exchange */
        for (size_t j = 0; j < k && !seen; j++)
            seen = fl->f[j].from == from && fl->f[j].exchange == a->exchange &&
                   fl->f[j].state != MM_FLUID_DELIVERING;
        n += !seen;
    }
    return n;
}

int mm_fluid_queued(const mm_fluid *fl, uint32_t from, uint64_t e)
{
    for (size_t k = 0; k < fl->nf; k++)
        if (fl->f[k].from == from && fl->f[k].exchange == e && fl->f[k].state == MM_FLUID_QUEUED)
            return 1;
    return 0;
}

static int by_exchange(const void *a, const void *b)
{
    uint64_t x = ((const mm_fluid_flow *const *)a)[0]->exchange;
    uint64_t y = ((const mm_fluid_flow *const *)b)[0]->exchange;
    return x < y ? -1 : x > y;
}

/* Per resource: the moving flows through it, and the most of them that
 * carry one exchange. */
static int count_flows(mm_fluid *fl)
{
    memset(fl->moving, 0, fl->nres * sizeof *fl->moving);
    memset(fl->same, 0, fl->nres * sizeof *fl->same);
    const mm_fluid_flow **m = malloc((fl->nf ? fl->nf : 1) * sizeof *m);
    unsigned *here = calloc(fl->nres ? fl->nres : 1, sizeof *here);
    if (!m || !here) {
        free(m), free(here);
        return -1;
    }
    size_t nm = 0;
    for (size_t k = 0; k < fl->nf; k++)
        if (fl->f[k].state == MM_FLUID_MOVING)
            m[nm++] = &fl->f[k];
    qsort(m, nm, sizeof *m, by_exchange);
    for (size_t a = 0; a < nm;) {
        size_t b = a;
        while (b < nm && m[b]->exchange == m[a]->exchange)
            b++;
        for (size_t k = a; k < b; k++) /* one exchange's flows: m[a..b) */
            for (int i = 0; i < m[k]->nres; i++) {
                size_t r = m[k]->res[i];
                fl->moving[r]++;
                if (++here[r] > fl->same[r])
                    fl->same[r] = here[r];
            }
        for (size_t k = a; k < b; k++)
            for (int i = 0; i < m[k]->nres; i++)
                here[m[k]->res[i]] = 0;
        a = b;
    }
    free(m), free(here);
    return 0;
}

int mm_fluid_rates(mm_fluid *fl)
{
    const mm_plan_in *in = fl->in;
    if (count_flows(fl) != 0)
        return -1;
    for (size_t r = 0; r < fl->nres; r++) {
        fl->cap[r] = mm_plan_capacity(in, r);
        /* TCP's share of a shaped link (docs/runtime.md): lost where two
         * flows that started together must both be through */
        if (fl->same[r] >= 2 && in->links.groups && in->tcp_share > 0)
            fl->cap[r] *= in->tcp_share;
    }
    return mm_fluid_fair_rates(fl->f, fl->nf, fl->cap, fl->nres, fl->rate);
}

double mm_fluid_next(const mm_fluid *fl, double now)
{
    double t = INFINITY;
    for (size_t k = 0; k < fl->nf; k++) {
        const mm_fluid_flow *a = &fl->f[k];
        if (a->state == MM_FLUID_DELIVERING)
            t = fmin(t, a->deliver_at);
        else if (a->state == MM_FLUID_MOVING)
            t = fmin(t, fl->rate[k] > 0 ? now + a->left / fl->rate[k] : INFINITY);
    }
    return t;
}

void mm_fluid_advance(mm_fluid *fl, double now, double until, mm_fluid_flow *got, size_t *ngot)
{
    double dt = until - now, lat = fl->in->latency_s;
    *ngot = 0;
    for (size_t k = 0; k < fl->nf; k++) {
        mm_fluid_flow *a = &fl->f[k];
        if (a->state != MM_FLUID_MOVING)
            continue;
        a->left = isinf(fl->rate[k]) ? 0 : a->left - fl->rate[k] * dt;
        if (a->left <= a->bytes * THROUGH) {
            a->state = MM_FLUID_DELIVERING;
            /* through at `until` (the event this advance stops at) */
            a->deliver_at = until + lat;
        }
    }
    size_t w = 0;
    for (size_t k = 0; k < fl->nf; k++) {
        mm_fluid_flow a = fl->f[k];
        if (a.state == MM_FLUID_DELIVERING && a.deliver_at <= until)
            got[(*ngot)++] = a;
        else
            fl->f[w++] = a;
    }
    fl->nf = w;
    /* a vector queued behind one that is through now moves (in the order
     * they were sent: fl->f keeps it) */
    for (size_t k = 0; k < fl->nf; k++)
        if (fl->f[k].state == MM_FLUID_QUEUED && !pair_busy(fl, fl->f[k].from, fl->f[k].to, false))
            fl->f[k].state = MM_FLUID_MOVING;
}
