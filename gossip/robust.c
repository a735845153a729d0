/* gossip/robust.h: the radius of self-centred clipping. */
#include "gossip/robust.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

mm_clip mm_clip_make(double fixed, double factor)
{
    return (mm_clip){.fixed = fixed > 0 ? fixed : 0, .factor = fixed > 0 ? 0 : factor};
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* peer's entry in c->last: found, or a new one (the oldest one's place
 * when full); -1 with create 0 when it has none. */
static int last_slot(mm_clip *c, uint32_t peer, int create)
{
    int oldest = 0;
    for (int i = 0; i < c->n_last; i++) {
        if (c->last[i].peer == peer)
            return i;
        if (c->last[i].when < c->last[oldest].when)
            oldest = i;
    }
    if (!create)
        return -1;
    int i = c->n_last < MM_CLIP_PEERS ? c->n_last++ : oldest;
    c->last[i].peer = peer;
    return i;
}

static void record(mm_clip *c, double d)
{
    c->d[c->next] = d;
    c->next = (c->next + 1) % MM_CLIP_WINDOW;
    if (c->held < MM_CLIP_WINDOW)
        c->held++;
}

/* The adaptive radius: record one distance per in-neighbour (a missing
 * one's last), then F times the lower median. */
static double window_radius(mm_clip *c, const double *d, const uint32_t *peer, int n)
{
    c->mixes++;
    for (int k = 0; k < n; k++) {
        if (isfinite(d[k])) {
            record(c, d[k]);
            int i = last_slot(c, peer[k], 1);
            c->last[i].d = d[k];
            c->last[i].when = c->mixes;
        } else if (isnan(d[k])) { /* missing: its last distance, if it had one */
            int i = last_slot(c, peer[k], 0);
            if (i >= 0)
                record(c, c->last[i].d);
        } /* (an infinite distance cannot come from finite vectors: not recorded) */
    }
    if (c->held == 0)
        return INFINITY;
    double sorted[MM_CLIP_WINDOW];
    memcpy(sorted, c->d, (size_t)c->held * sizeof *sorted);
    qsort(sorted, (size_t)c->held, sizeof *sorted, cmp_double);
    return c->factor * sorted[(c->held - 1) / 2];
}

double mm_clip_radius(mm_clip *c, const double *d, const uint32_t *peer, int n)
{
    double tau = c->fixed > 0 ? c->fixed : window_radius(c, d, peer, n);
    for (int k = 0; k < n; k++)
        if (d[k] > tau) /* (false for NaN) */
            c->clipped++;
    if (tau > c->radius_max)
        c->radius_max = tau;
    return tau;
}
