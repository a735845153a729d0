/* The outer optimizer's arithmetic (model/outer.h, docs/outer.md). */
#include "model/outer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

float mm_outer_momentum(const mm_outer_config *c, long k, long total)
{
    double w = 1.0, f = 1.0;
    if (k < 0)
        k = 0;
    if (c->warmup > 0 && k < c->warmup)
        w = (double)k / (double)c->warmup;
    if (c->decay != MM_OUTER_DECAY_NONE && total > 0) {
        long k0 = (long)floor(c->decay_from * (double)total);
        if (k >= k0 && total > k0) {
            double r = (double)(k - k0) / (double)(total - k0);
            if (r > 1.0)
                r = 1.0;
            f = c->decay == MM_OUTER_DECAY_LINEAR ? 1.0 - r
                                                  : 0.5 * (1.0 + cos(3.14159265358979323846 * r));
        }
    }
    return (float)((double)c->momentum * w * f);
}

void mm_outer_step(float *x, float *o, float *m, const float *d, size_t n, float lr, float mu)
{
    float a = 1.0f - lr, b = lr * mu;
    for (size_t i = 0; i < n; i++) {
        float di = d ? d[i] : 0.0f;
        float y = x[i] - di;
        float delta = o[i] - y;
        float mi = mu * m[i] + delta;
        m[i] = mi;
        float xi = x[i] + (a * delta - b * mi);
        x[i] = xi;
        o[i] = xi - di;
    }
}

void mm_outer_noloco_send(float *s, const float *x, const float *o, size_t n, float beta,
                          float gamma)
{
    float k = 1.0f - beta / gamma;
    for (size_t i = 0; i < n; i++)
        s[i] = x[i] + k * (o[i] - x[i]);
}

void mm_outer_noloco_step(float *x, float *o, float *m, const float *d, size_t n, float alpha,
                          float gamma)
{
    for (size_t i = 0; i < n; i++) {
        float di = d ? d[i] : 0.0f;
        float y = x[i] - di;
        float a = y - o[i];
        float mi = alpha * m[i] + gamma * a;
        m[i] = mi;
        float xi = y + (mi - a);
        x[i] = xi;
        o[i] = xi;
    }
}

int mm_outer_parse_decay(const char *s, mm_outer_config *c, char *err, size_t errlen)
{
    if (!strcmp(s, "none")) {
        c->decay = MM_OUTER_DECAY_NONE;
        c->decay_from = 0;
        return 0;
    }
    mm_outer_decay kind;
    const char *rest;
    if (!strncmp(s, "linear:", 7)) {
        kind = MM_OUTER_DECAY_LINEAR;
        rest = s + 7;
    } else if (!strncmp(s, "cosine:", 7)) {
        kind = MM_OUTER_DECAY_COSINE;
        rest = s + 7;
    } else {
        snprintf(err, errlen, "is none, linear:F or cosine:F (F in [0, 1): the fraction of the "
                 "run's outer steps after which the momentum decays to 0), not '%s'", s);
        return -1;
    }
    char *end;
    double f = strtod(rest, &end);
    if (end == rest || *end || !(f >= 0 && f < 1)) {
        snprintf(err, errlen, "'%s': F must be a number in [0, 1) (the fraction of the run "
                 "before the decay starts)", s);
        return -1;
    }
    c->decay = kind;
    c->decay_from = f;
    return 0;
}

void mm_outer_decay_spec(const mm_outer_config *c, char *out, size_t len)
{
    if (c->decay == MM_OUTER_DECAY_NONE)
        snprintf(out, len, "none");
    else
        snprintf(out, len, "%s:%g", c->decay == MM_OUTER_DECAY_LINEAR ? "linear" : "cosine",
                 c->decay_from);
}

int mm_outer_describe(const mm_outer_config *c, char *out, size_t len)
{
    char decay[48] = "";
    if (c->decay != MM_OUTER_DECAY_NONE) {
        char spec[40];
        mm_outer_decay_spec(c, spec, sizeof spec);
        snprintf(decay, sizeof decay, ", decay %s", spec);
    }
    char warmup[40] = "";
    if (c->warmup > 0)
        snprintf(warmup, sizeof warmup, ", warm-up %ld", c->warmup);
    char gamma[40] = "";
    if (c->kind == MM_OUTER_NOLOCO)
        snprintf(gamma, sizeof gamma, ", gamma %g", c->gamma);
    return snprintf(out, len, "lr %g, momentum %g%s%s%s", c->lr, c->momentum, gamma, warmup,
                    decay);
}
