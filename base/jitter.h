/* The lab's stragglers: an added delay per optimizer step. murmur node's
 * --compute-jitter (a random delay), --lab-slow and --lab-stretch (named
 * peers made slower by a factor, always or for a stretch of rounds), which
 * it sleeps (node/round.c, node/lab.c), and murmur plan's --jitter,
 * --slow and --stretch, which model them (plan/plan.c). docs/node.md
 * ("Uneven peers"), docs/runtime.md. */
#ifndef MURMUR_JITTER_H
#define MURMUR_JITTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Named peers made slower: peer `peer`'s every optimizer step takes
 * `factor` times as long (the peer sleeps factor - 1 times the step's own
 * time after it), in every round (rounds 0) or in rounds from .. from +
 * rounds - 1 only. AntDT's kinds of straggler (a slower machine, a
 * stretch of contention) as one flag each; --compute-jitter is the third
 * (random, step by step). */
#define MM_SLOWDOWN_MAX 64
typedef struct {
    uint32_t peer;
    double factor;   /* >= 1 */
    long from;       /* first round of a stretch */
    long rounds;     /* its length; 0: every round */
} mm_slowdown_entry;
typedef struct {
    int n;
    mm_slowdown_entry e[MM_SLOWDOWN_MAX];
} mm_slowdown;

/* Appends the entries of spec to *out: with stretch false "PEER:F[,PEER:F
 * ...]" (--lab-slow), with stretch true "PEER:F:FROM:ROUNDS[,...]"
 * (--lab-stretch); F in [1, 1000], FROM >= 0, ROUNDS >= 1. 0, or -1 with
 * err (*out then holds what came before). */
int mm_slowdown_parse(const char *spec, bool stretch, mm_slowdown *out, char *err,
                      size_t errlen);
/* The product of the factors of peer's entries that apply in round (1
 * when none does). */
double mm_slowdown_factor(const mm_slowdown *s, uint32_t peer, long round);
/* The largest peer id named, or -1 when none: a peer must refuse a
 * topology without it. */
long mm_slowdown_max_peer(const mm_slowdown *s);
/* The --lab-slow entries (stretch false: "3:2,5:1.5") or the --lab-stretch
 * ones (true: "3:3:50:20") back as a spec, for the start line; "" when
 * none. */
void mm_slowdown_format(const mm_slowdown *s, bool stretch, char *buf, size_t len);

#endif
