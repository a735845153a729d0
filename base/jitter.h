/* An added delay per optimizer step: murmur node's --compute-jitter, which
 * sleeps it (node/round.c), and murmur plan's --jitter, which models it
 * (plan/plan.c). docs/node.md, docs/runtime.md. */
#ifndef MURMUR_JITTER_H
#define MURMUR_JITTER_H

#include <stddef.h>

/* none; uniform:A (U(0, A) seconds); longtail:P:S (S seconds with
 * probability P, else 0). */
typedef enum { MM_JITTER_NONE, MM_JITTER_UNIFORM, MM_JITTER_LONGTAIL } mm_jitter_kind;
typedef struct {
    mm_jitter_kind kind;
    double a;    /* uniform: width A; longtail: the slow step's extra S */
    double p;    /* longtail: probability of a slow step */
} mm_jitter;

/* "none", "uniform:A", "longtail:P:S" (seconds; P in [0, 1]). 0 or -1. */
int mm_jitter_parse(const char *s, mm_jitter *out, char *err, size_t errlen);

#endif
