/* Deadlines learnt from arrivals: the rule and its bounds are in
 * gossip/deadline.h. */
#include "gossip/deadline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The EWMA's weight of a new round's compute: about the last 8 rounds. */
#define COMPUTE_GAIN 0.125

mm_deadline_cfg mm_deadline_defaults(double timeout)
{
    return (mm_deadline_cfg){.quantile = 0.9, .margin = 0.25, .slack = 0.002, .cap = 0.5,
                             .timeout = timeout};
}

void mm_deadline_init(mm_deadline *d, const mm_deadline_cfg *cfg)
{
    memset(d, 0, sizeof *d);
    d->cfg = *cfg;
    d->compute = -1;
}

void mm_deadline_compute(mm_deadline *d, double seconds)
{
    if (!(seconds >= 0) || !isfinite(seconds))
        return;
    d->compute = d->compute < 0 ? seconds : d->compute + COMPUTE_GAIN * (seconds - d->compute);
}

double mm_deadline_cap(const mm_deadline *d)
{
    if (d->compute < 0 || !(d->cfg.cap > 0))
        return d->cfg.timeout;
    return fmin(d->cfg.timeout, d->cfg.cap * d->compute + d->cfg.slack);
}

static const mm_deadline_peer *find(const mm_deadline *d, uint32_t peer)
{
    for (int i = 0; i < d->n; i++)
        if (d->p[i].peer == peer)
            return &d->p[i];
    return NULL;
}

/* peer's record, made (or taken from the one used longest ago) if need be */
static mm_deadline_peer *slot(mm_deadline *d, uint32_t peer)
{
    mm_deadline_peer *p = (mm_deadline_peer *)find(d, peer);
    if (!p) {
        if (d->n < MM_DEADLINE_PEERS) {
            p = &d->p[d->n++];
        } else {
            p = &d->p[0];
            for (int i = 1; i < d->n; i++)
                if (d->p[i].used < p->used)
                    p = &d->p[i];
        }
        memset(p, 0, sizeof *p);
        p->peer = peer;
    }
    p->used = ++d->ticks;
    return p;
}

static void record(mm_deadline *d, uint32_t peer, double late, bool censored)
{
    if (!(late >= 0))
        late = 0; /* (before ready, or NaN) */
    if (!isfinite(late))
        late = d->cfg.timeout;
    mm_deadline_peer *p = slot(d, peer);
    p->late[p->next] = late;
    p->censored[p->next] = censored;
    p->next = (p->next + 1) % MM_DEADLINE_WINDOW;
    if (p->held < MM_DEADLINE_WINDOW)
        p->held++;
}

void mm_deadline_arrived(mm_deadline *d, uint32_t peer, double late_s)
{
    record(d, peer, late_s, false);
}

void mm_deadline_missed(mm_deadline *d, uint32_t peer, double waited_s)
{
    record(d, peer, waited_s, true);
}

typedef struct {
    double v;
    bool censored;
} sample;

static int cmp_sample(const void *a, const void *b)
{
    const sample *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return (int)x->censored - (int)y->censored; /* a censored value is the larger */
}

/* The nearest-rank q-quantile of p's window (the ceil(q n)-th smallest),
 * and whether it is a censored sample (*censored: then the true quantile
 * is only known to be at least that). */
static double quantile(const mm_deadline_peer *p, double q, bool *censored)
{
    sample v[MM_DEADLINE_WINDOW];
    for (int i = 0; i < p->held; i++)
        v[i] = (sample){p->late[i], p->censored[i]};
    qsort(v, (size_t)p->held, sizeof v[0], cmp_sample);
    int k = (int)ceil(q * p->held) - 1;
    if (k < 0)
        k = 0;
    if (k >= p->held)
        k = p->held - 1;
    if (censored)
        *censored = v[k].censored;
    return v[k].v;
}

/* The largest censored sample of p's window. */
static double largest_censored(const mm_deadline_peer *p)
{
    double m = 0;
    for (int i = 0; i < p->held; i++)
        if (p->censored[i] && p->late[i] > m)
            m = p->late[i];
    return m;
}

/* E_j: what neighbour p needs (gossip/deadline.h). */
static double needs(const mm_deadline *d, const mm_deadline_peer *p)
{
    bool censored;
    double q = quantile(p, d->cfg.quantile, &censored);
    if (censored) /* more than 1 - q of the window missed: double the last wait */
        return MM_DEADLINE_GROWTH * largest_censored(p) + d->cfg.slack;
    return (1 + d->cfg.margin) * q + d->cfg.slack;
}

double mm_deadline_expected(const mm_deadline *d, uint32_t peer)
{
    const mm_deadline_peer *p = find(d, peer);
    if (!p || p->held < MM_DEADLINE_MIN_SAMPLES)
        return -1;
    return quantile(p, 0.5, NULL);
}

double mm_deadline_wait(const mm_deadline *d, const uint32_t *peers, int n)
{
    double cap = mm_deadline_cap(d), w = 0;
    if (n == 0)
        return cap; /* (only our own sends to see off) */
    for (int k = 0; k < n; k++) {
        const mm_deadline_peer *p = find(d, peers[k]);
        if (!p || p->held < MM_DEADLINE_MIN_SAMPLES)
            return cap; /* not learnt yet */
        double e = needs(d, p);
        if (e > w)
            w = e;
    }
    return fmin(w, cap);
}
