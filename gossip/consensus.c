/* Consensus control (gossip/consensus.h): the schedule of gossip steps,
 * the correction that turns neighbour distances into an estimate of the
 * consensus distance, and the controller that picks a round's exchanges. */
#include "gossip/consensus.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- the schedule ---------------------------------------------------------- */

static int parse_long(const char **p, long lo, long hi, long *out)
{
    const char *s = *p;
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || v < lo || v > hi)
        return -1;
    *p = end;
    *out = v;
    return 0;
}

int mm_steps_schedule_parse(const char *text, int max_steps, mm_steps_schedule *out,
                             char *err, size_t errlen)
{
    const char *p = text;
    out->n = 0;
    for (;;) {
        long from, steps;
        if (out->n == MM_STEPS_SCHEDULE_MAX) {
            snprintf(err, errlen, "at most %d entries", MM_STEPS_SCHEDULE_MAX);
            return -1;
        }
        if (parse_long(&p, 0, 1L << 40, &from) != 0 || *p++ != ':' ||
            parse_long(&p, 1, max_steps, &steps) != 0 || (*p && *p != ',')) {
            snprintf(err, errlen, "'%s': expected ROUND:STEPS[,ROUND:STEPS...] with STEPS in "
                     "1..%d", text, max_steps);
            return -1;
        }
        if (out->n == 0 && from != 0) {
            snprintf(err, errlen, "'%s': the first entry must be for round 0", text);
            return -1;
        }
        if (out->n > 0 && from <= out->from[out->n - 1]) {
            snprintf(err, errlen, "'%s': rounds must increase (%ld after %ld)", text, from,
                     out->from[out->n - 1]);
            return -1;
        }
        out->from[out->n] = from;
        out->steps[out->n] = (int)steps;
        out->n++;
        if (!*p)
            return 0;
        p++; /* ',' */
    }
}

int mm_steps_schedule_steps(const mm_steps_schedule *s, long round)
{
    int g = s->n ? s->steps[0] : 1;
    for (int i = 1; i < s->n && s->from[i] <= round; i++)
        g = s->steps[i];
    return g;
}

int mm_steps_schedule_max(const mm_steps_schedule *s)
{
    int m = 1;
    for (int i = 0; i < s->n; i++)
        m = s->steps[i] > m ? s->steps[i] : m;
    return m;
}

/* ---- the estimator ---------------------------------------------------------- */

int mm_consensus_ratios(const double *lam, int n, int gmax, double *ratio)
{
    int used = 0;
    for (int k = 0; k < n; k++)
        used += lam[k] < 1 - 1e-9;
    if (!used)
        return -1;
    for (int G = 1; G <= gmax; G++) {
        double num = 0, den = 0;
        for (int k = 0; k < n; k++) {
            double l = lam[k];
            if (l >= 1 - 1e-9)
                continue;
            double lg = pow(l, G), d = 1 - lg;
            if (fabs(d) < 1e-12) /* lambda = -1 and G even: a mode W never damps */
                d = 1e-12;
            double s = pow(l * l, G - 1) / (d * d);
            num += (1 - l) * s;
            den += s;
        }
        ratio[G - 1] = den > 0 ? num / den : 1;
    }
    return 0;
}

/* Xi^2 / q = 1/(2R) and m = b / q of a shape s_k over the modes below 1 */
static void shape_point(const double *lam, int n, double (*s)(double l, double arg),
                        double arg, double *m, double *f)
{
    double e = 0, e1 = 0, e2 = 0;
    for (int k = 0; k < n; k++) {
        double l = lam[k];
        if (l >= 1 - 1e-9)
            continue;
        double w = s(l, arg);
        e += w;
        e1 += (1 - l) * w;
        e2 += (1 - l) * (1 - l) * w;
    }
    *f = e1 > 0 ? e / (2 * e1) : 0.5;
    *m = e1 > 0 ? e2 / (2 * e1) : 0;
}

/* the persistent pulls' steady state with G mixes a round (mm_consensus_ratios) */
static double shape_persistent(double l, double G)
{
    double d = 1 - pow(l, G);
    if (fabs(d) < 1e-12)
        d = 1e-12;
    return pow(l * l, G - 1) / (d * d);
}

/* pulls relaxing towards each peer's own optimum between mixes */
static double shape_relaxing(double l, double rho)
{
    double d = 1 - rho * l;
    return 1 / (d * d);
}

int mm_consensus_shape_init(mm_consensus_shape *s, const double *lam, int n, int gmax)
{
    static const double rho[] = {0.995, 0.99, 0.98, 0.97, 0.95, 0.92, 0.9, 0.85, 0.8, 0.75,
                                 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0};
    int used = 0;
    for (int k = 0; k < n; k++)
        used += lam[k] < 1 - 1e-9;
    if (!used || gmax < 1 || gmax > 64)
        return -1;
    s->n = 0;
    for (int G = gmax; G >= 1; G--, s->n++)
        shape_point(lam, n, shape_persistent, G, &s->m[s->n], &s->f[s->n]);
    for (size_t i = 0; i < sizeof rho / sizeof *rho; i++, s->n++)
        shape_point(lam, n, shape_relaxing, rho[i], &s->m[s->n], &s->f[s->n]);
    /* in order of m (on a ring it already is; insertion sort for any W) */
    for (int i = 1; i < s->n; i++)
        for (int j = i; j > 0 && s->m[j - 1] > s->m[j]; j--) {
            double tm = s->m[j], tf = s->f[j];
            s->m[j] = s->m[j - 1];
            s->f[j] = s->f[j - 1];
            s->m[j - 1] = tm;
            s->f[j - 1] = tf;
        }
    return 0;
}

double mm_consensus_shape_xi2(const mm_consensus_shape *s, double q, double b)
{
    if (!isfinite(q) || !isfinite(b))
        return NAN;
    if (q <= 0)
        return 0;
    double m = b / q, f;
    int i = 0;
    while (i < s->n && s->m[i] < m)
        i++;
    if (i == 0)
        f = s->f[0];
    else if (i == s->n)
        f = s->f[s->n - 1];
    else {
        double dm = s->m[i] - s->m[i - 1];
        double t = dm > 0 ? (m - s->m[i - 1]) / dm : 1;
        f = s->f[i - 1] + t * (s->f[i] - s->f[i - 1]);
    }
    return q * f;
}

/* ---- the controller --------------------------------------------------------- */

void mm_consensus_init(mm_consensus_ctl *c, double target, double gmin, int gmax,
                       const double *ratio)
{
    double lo = 1.0 / (MM_CC_SKIP_MAX + 1);
    gmin = gmin < lo ? lo : gmin > 1 ? 1 : gmin;
    *c = (mm_consensus_ctl){.target = target, .gmax = gmax, .gmin = gmin, .ratio = ratio, .gi = 1,
                 .gamma = 1, .a = 0, .q_prev = 0, .xi = 0, .step_scale = 1, .out = 1};
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

double mm_consensus_estimate(const mm_consensus_ctl *c)
{
    if (!c->ratio)
        return c->a > 0 ? sqrt(c->a) : 0;
    double g = clampd(c->gamma, 1, c->gmax);
    int lo = (int)floor(g);
    int hi = lo < c->gmax ? lo + 1 : lo;
    double f = g - lo;
    double r = (1 - f) * c->ratio[lo - 1] + f * c->ratio[hi - 1];
    return r > 0 && c->a > 0 ? sqrt(c->a / (2 * r)) : 0;
}

/* gamma of h: h itself from 1 up, exp(h - 1) below (see mm_consensus_round) */
static double gamma_of(double h) { return h >= 1 ? h : exp(h - 1); }
/* and back */
static double h_of(double gamma) { return gamma >= 1 ? gamma : 1 + log(gamma); }

/* the step scale the law uses: the caller's below one exchange a round,
 * else 1 (runs without skipping are what they were) */
static double scale_of(const mm_consensus_ctl *c) { return c->gmin < 1 ? c->step_scale : 1; }

void mm_consensus_set_step_scale(mm_consensus_ctl *c, double s)
{
    c->step_scale = isfinite(s) && s > 0 ? (s < 1 ? s : 1) : 1;
}

/* the golden-ratio sequence: the same u on every peer each round, and
 * evenly spread over [0, 1) across rounds */
static double dither(uint64_t round) { return fmod((double)round * 0.6180339887498949, 1.0); }

int mm_consensus_round(mm_consensus_ctl *c, uint64_t round, int fresh)
{
    if (fresh) {
        c->xi = mm_consensus_estimate(c);
        /* ln(Xi/X), clipped: an estimate of 0 (the start, when every
         * replica is the same) asks for fewer exchanges without driving
         * gamma far. */
        double err = c->xi > 0 ? clampd(log(c->xi / c->target), -MM_CC_ERR_MAX, MM_CC_ERR_MAX)
                               : -MM_CC_ERR_MAX;
        double hmin = 1 + log(c->gmin); /* 1 when gmin = 1: the range before skipping */
        double ki = MM_CC_KI * (c->idle + 1);
        c->gi = clampd(c->gi + (ki < MM_CC_KI_MAX ? ki : MM_CC_KI_MAX) * err, hmin, c->gmax);
        c->idle = 0;
        c->gamma = scale_of(c) * gamma_of(clampd(c->gi + MM_CC_KP * err, hmin, c->gmax));
        /* what the level carries: below one exchange a round the edges
         * skip by it, so the proportional part must be in it */
        c->out = c->gmin < 1 ? clampd(c->gi + MM_CC_KP_SKIP * err, hmin, c->gmax) : c->gi;
    }
    else
        c->idle++;
    int g = (int)floor(c->gamma + dither(round));
    return g < 1 ? 1 : g > c->gmax ? c->gmax : g;
}

/* ---- skipping rounds -------------------------------------------------------- */

#define LEVEL_OFFSET 4.0   /* h + 4 >= 0.84 for every h >= 1 + ln(1/64) */
#define LEVEL_SCALE 512.0  /* 1/512 of a unit of h: gamma to 0.2 % */

double mm_consensus_level_own(const mm_consensus_ctl *c)
{
    double s = scale_of(c);
    return s == 1 ? c->out : h_of(s * gamma_of(c->out));
}

uint16_t mm_consensus_level(const mm_consensus_ctl *c)
{
    double v = floor((mm_consensus_level_own(c) + LEVEL_OFFSET) * LEVEL_SCALE + 0.5);
    return (uint16_t)clampd(v, 0, 65535);
}

double mm_consensus_level_value(uint16_t level) { return level / LEVEL_SCALE - LEVEL_OFFSET; }

void mm_consensus_fold_level(mm_consensus_ctl *c, double l_mixed)
{
    if (!isfinite(l_mixed))
        return;
    double s = scale_of(c), h = s == 1 ? l_mixed : h_of(gamma_of(l_mixed) / s);
    double p = c->out - c->gi;
    c->gi = clampd(h - p, 1 + log(c->gmin), c->gmax);
    c->out = clampd(c->gi + p, 1 + log(c->gmin), c->gmax);
}

int mm_consensus_skip_rounds(double gamma, uint64_t round, int kmax)
{
    int k = 0;
    while (gamma < 1 && k < kmax && gamma + dither(round + 1 + (uint64_t)k) < 1)
        k++;
    return k;
}

uint64_t mm_consensus_edge_next(uint64_t round, uint16_t l_self, uint16_t l_peer)
{
    /* the mean of the two decoded levels: the same double at both ends */
    double h = 0.5 * (mm_consensus_level_value(l_self) + mm_consensus_level_value(l_peer));
    return round + 1 + (uint64_t)mm_consensus_skip_rounds(gamma_of(h), round, MM_CC_SKIP_MAX);
}

void mm_consensus_fold(mm_consensus_ctl *c, double a_mixed, double q, int first)
{
    double a = a_mixed;
    if (first && isfinite(q) && c->gmin < 1) {
        /* rounds skipped: a leaky average, without the tracking term (below) */
        a = (1 - MM_CC_BETA_SKIP) * a_mixed + MM_CC_BETA_SKIP * q;
        c->q_prev = q;
    } else if (first && isfinite(q)) {
        a = (1 - MM_CC_BETA) * (a_mixed + q - c->q_prev) + MM_CC_BETA * q;
        c->q_prev = q;
    }
    c->a = isfinite(a) ? clampd(a, 0, MM_CC_AUX_MAX) : c->a;
}
