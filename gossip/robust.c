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

/* The adaptive radius: record d[0..n), then F times the lower median. */
static double window_radius(mm_clip *c, const double *d, int n)
{
    for (int k = 0; k < n; k++) {
        if (!isfinite(d[k]))
            continue; /* missing (an infinite distance cannot come from finite vectors) */
        c->d[c->next] = d[k];
        c->next = (c->next + 1) % MM_CLIP_WINDOW;
        if (c->held < MM_CLIP_WINDOW)
            c->held++;
    }
    if (c->held == 0)
        return INFINITY;
    double sorted[MM_CLIP_WINDOW];
    memcpy(sorted, c->d, (size_t)c->held * sizeof *sorted);
    qsort(sorted, (size_t)c->held, sizeof *sorted, cmp_double);
    return c->factor * sorted[(c->held - 1) / 2];
}

double mm_clip_radius(mm_clip *c, const double *d, int n)
{
    double tau = c->fixed > 0 ? c->fixed : window_radius(c, d, n);
    for (int k = 0; k < n; k++)
        if (d[k] > tau) /* (false for NaN) */
            c->clipped++;
    if (tau > c->radius_max)
        c->radius_max = tau;
    return tau;
}
