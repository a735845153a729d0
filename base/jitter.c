/* base/jitter.h: the lab's stragglers: the --compute-jitter / --jitter
 * distribution, the --lab-slow and --lab-stretch peers. */
#include "base/jitter.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int mm_jitter_parse(const char *s, mm_jitter *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char tail;
    if (!strcmp(s, "none"))
        return 0;
    if (sscanf(s, "uniform:%lf%c", &out->a, &tail) == 1 && out->a >= 0 && isfinite(out->a)) {
        out->kind = MM_JITTER_UNIFORM;
        return 0;
    }
    if (sscanf(s, "longtail:%lf:%lf%c", &out->p, &out->a, &tail) == 2 && out->p >= 0 &&
        out->p <= 1 && out->a >= 0 && isfinite(out->a)) {
        out->kind = MM_JITTER_LONGTAIL;
        return 0;
    }
    snprintf(err, errlen, "jitter '%s': expected none, uniform:SECONDS or longtail:P:SECONDS "
                          "(P in [0, 1])", s);
    return -1;
}

/* One "PEER:F" or "PEER:F:FROM:ROUNDS" into *e; 0 or -1. */
static int slowdown_entry(const char *s, bool stretch, mm_slowdown_entry *e)
{
    unsigned long peer;
    double f;
    long from = 0, rounds = 0;
    char tail;
    int got = stretch ? sscanf(s, "%lu:%lf:%ld:%ld%c", &peer, &f, &from, &rounds, &tail)
                      : sscanf(s, "%lu:%lf%c", &peer, &f, &tail);
    if (got != (stretch ? 4 : 2) || peer > UINT32_MAX || !(f >= 1 && f <= 1000) || from < 0 ||
        (stretch && rounds < 1) || strchr(s, '-'))
        return -1;
    *e = (mm_slowdown_entry){.peer = (uint32_t)peer, .factor = f, .from = from,
                             .rounds = stretch ? rounds : 0};
    return 0;
}

int mm_slowdown_parse(const char *spec, bool stretch, mm_slowdown *out, char *err, size_t errlen)
{
    const char *want = stretch ? "PEER:FACTOR:FROM:ROUNDS[,...] (FACTOR in [1, 1000], FROM >= 0, "
                                 "ROUNDS >= 1)"
                               : "PEER:FACTOR[,PEER:FACTOR...] (FACTOR in [1, 1000])";
    char buf[1024];
    if (strlen(spec) >= sizeof buf) {
        snprintf(err, errlen, "'%.40s...' is too long", spec);
        return -1;
    }
    strcpy(buf, spec);
    int n = out->n;
    for (char *item = buf, *comma; item; item = comma ? comma + 1 : NULL) {
        comma = strchr(item, ',');
        if (comma)
            *comma = 0;
        if (n >= MM_SLOWDOWN_MAX) {
            snprintf(err, errlen, "'%s': at most %d entries", spec, MM_SLOWDOWN_MAX);
            return -1;
        }
        if (slowdown_entry(item, stretch, &out->e[n]) != 0) {
            snprintf(err, errlen, "'%s': expected %s", item, want);
            return -1;
        }
        n++;
    }
    out->n = n;
    return 0;
}

double mm_slowdown_factor(const mm_slowdown *s, uint32_t peer, long round)
{
    double f = 1;
    for (int i = 0; i < s->n; i++) {
        const mm_slowdown_entry *e = &s->e[i];
        if (e->peer == peer && (e->rounds == 0 || (round >= e->from && round - e->from < e->rounds)))
            f *= e->factor;
    }
    return f;
}

long mm_slowdown_max_peer(const mm_slowdown *s)
{
    long m = -1;
    for (int i = 0; i < s->n; i++)
        if ((long)s->e[i].peer > m)
            m = s->e[i].peer;
    return m;
}

void mm_slowdown_format(const mm_slowdown *s, bool stretch, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < s->n && used < len; i++) {
        const mm_slowdown_entry *e = &s->e[i];
        if ((e->rounds > 0) != stretch)
            continue;
        int w = stretch ? snprintf(buf + used, len - used, "%s%u:%g:%ld:%ld", used ? "," : "",
                                   e->peer, e->factor, e->from, e->rounds)
                        : snprintf(buf + used, len - used, "%s%u:%g", used ? "," : "", e->peer,
                                   e->factor);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}
