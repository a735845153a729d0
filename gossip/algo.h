/* The averaging algorithms, written once (like gossip/counters.h):
 *
 *   MM_ALGOS(X)   X(NAME, code, name)
 *     NAME   the enumerator MM_ALGO_<NAME>
 *     code   its number in a HELLO (docs/protocol.md 3.1): peers must run
 *            the same one; the enumerator's value
 *     name   --algo's word and the metrics' "algo"
 *
 * What each one does is in docs/node.md; node/algo_*.c implement them
 * (node/algo.h). */
#ifndef MM_GOSSIP_ALGO_H
#define MM_GOSSIP_ALGO_H

#define MM_ALGOS(X)               \
    X(DPSGD, 1, "dpsgd")          \
    X(ASYNC, 2, "async")          \
    X(PUSHSUM, 3, "pushsum")      \
    X(ALLREDUCE, 4, "allreduce")

typedef enum {
#define MM_X(NAME, code, name) MM_ALGO_##NAME = code,
    MM_ALGOS(MM_X)
#undef MM_X
} mm_algo;

/* "dpsgd", ...; NULL for a number that is none of them (a HELLO from
 * another build). */
const char *mm_algo_name(mm_algo a);
/* The algorithm called s, or -1. */
int mm_algo_parse(const char *s);

#endif
