/* The averaging algorithms, written once (like net/counters.h):
 *
 *   MM_ALGOS(X)   X(NAME, code, name)
 *     NAME   the enumerator MM_ALGO_<NAME>
 *     code   its number in a HELLO (docs/protocol.md 3.1): peers must run
 *            the same one; the enumerator's value
 *     name   --algo's word and the metrics' "algo"
 *
 * What each one does is in docs/node.md; node/algo_*.c implement them
 * (node/algo.h). */
#ifndef MM_NET_ALGO_H
#define MM_NET_ALGO_H

#include <stdint.h>

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

/* An algorithm's variant, the HELLO's byte 50 (docs/protocol.md 3.1): the
 * all-reduce's schedule (node/allreduce.h), 0 for every other algorithm.
 * Peers must run the same algorithm and variant.
 *
 *   MM_AR_SCHEDULES(X)   X(NAME, code, name): MM_AR_<NAME>, its byte, the
 *                        --allreduce-schedule word. allgather is no
 *                        average: the ring all-gather of the compressed
 *                        outer exchange's payloads (node/allgather.h),
 *                        which --outer with --compress runs */
#define MM_AR_SCHEDULES(X)   \
    X(RING, 0, "ring")       \
    X(HALVING, 1, "halving") \
    X(ALLGATHER, 2, "allgather")

/* "ring", "halving" for the all-reduce's; "" for variant 0 of any other
 * algorithm; NULL for a variant that is none of them. */
const char *mm_algo_variant_name(mm_algo a, uint8_t variant);

/* "dpsgd", ...; NULL for a number that is none of them (a HELLO from
 * another build). */
const char *mm_algo_name(mm_algo a);
/* The algorithm called s, or -1. */
int mm_algo_parse(const char *s);

#endif
