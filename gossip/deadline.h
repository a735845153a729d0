/* Deadlines learnt from arrivals (--deadline learn; docs/node.md, "Uneven
 * peers"). Numbers in, numbers out: no clock of its own, no socket. The
 * round (node/pace.c) tells it when each in-neighbour's vector came,
 * measured from the moment this peer's own compute ended ("ready"), and
 * asks how long to wait after ready.
 *
 * The rule. Per in-neighbour j, the lateness of its last MM_DEADLINE_WINDOW
 * vectors, l = arrival - ready (0 for a vector that was there before ready).
 * A vector that did not come within the wait records the wait itself (it
 * was at least that late: a censored sample). The wait of an exchange is
 *
 *   W = min(cap, max_j E_j)
 *   E_j = (1 + margin) * Q_q(l_j) + slack        (Q_q: the q-quantile of j's window)
 *   E_j = 2 * (j's largest miss) + slack         when Q_q falls on a miss
 *   cap = min(timeout, kappa * C + slack)        (C: this peer's compute per round, EWMA)
 *
 * and a neighbour with fewer than MM_DEADLINE_MIN_SAMPLES samples counts
 * as E_j = cap (nothing learnt yet: wait as long as the bound allows).
 *
 * What each part does:
 *  - stationary arrivals: E_j converges to (1 + margin) times the true
 *    q-quantile (plus slack), so about 1 - q of j's vectors come late only
 *    when the margin does not cover them: fewer with a margin;
 *  - a neighbour that becomes slower: its misses (censored samples, = W)
 *    fill the top of its window; once more than (1 - q) of it are misses
 *    (3 of 24 for q = 0.9), the q-quantile is only known to be above the
 *    last wait, and the wait doubles with every further miss until it
 *    covers the new lateness or reaches the cap (a neighbour 15 times
 *    later than before is waited for again after 3 + 4 exchanges); faster:
 *    the old samples leave the window (within MM_DEADLINE_WINDOW
 *    exchanges);
 *  - a neighbour that arrives late on purpose (every vector just inside
 *    the deadline, to push it up) moves W by at most the margin per
 *    exchange and never above the cap: it holds this peer at most
 *    kappa * C + slack per exchange, so this peer's rounds run at least
 *    1 / (1 + kappa) as fast as its compute alone allows (the fixed
 *    --round-timeout bounded it only by the timeout).
 */
#ifndef MURMUR_DEADLINE_H
#define MURMUR_DEADLINE_H

#include <stdbool.h>
#include <stdint.h>

/* Vectors remembered per neighbour: enough for a 0.9-quantile to be the
 * third largest, short enough to forget a stretch within 24 exchanges. */
#define MM_DEADLINE_WINDOW 24
/* Samples before a neighbour's quantile is trusted. */
#define MM_DEADLINE_MIN_SAMPLES 4
/* How much a wait grows per exchange while more than 1 - q of a
 * neighbour's window are misses. */
#define MM_DEADLINE_GROWTH 2.0
/* Neighbours remembered (beyond: the one heard from longest ago is
 * forgotten). */
#define MM_DEADLINE_PEERS 64

typedef struct {
    double quantile;   /* q in (0, 1]: which arrival to wait for (default 0.9) */
    double margin;     /* relative headroom on top of it (default 0.25) */
    double slack;      /* seconds added to every wait and to the cap (default 0.002) */
    double cap;        /* kappa: the wait is at most kappa times this peer's compute
                        * per round (default 0.5; 0: no cap but the timeout) */
    double timeout;    /* seconds: never more (--round-timeout) */
} mm_deadline_cfg;

/* The defaults above, with the given timeout. */
mm_deadline_cfg mm_deadline_defaults(double timeout);

typedef struct {
    uint32_t peer;
    double late[MM_DEADLINE_WINDOW];
    bool censored[MM_DEADLINE_WINDOW]; /* a miss: the vector came later than this */
    int held, next;
    uint64_t used;     /* when it was last recorded (for eviction) */
} mm_deadline_peer;

typedef struct {
    mm_deadline_cfg cfg;
    mm_deadline_peer p[MM_DEADLINE_PEERS];
    int n;
    uint64_t ticks;
    double compute;    /* EWMA of this peer's compute per round (s); < 0: none yet */
} mm_deadline;

void mm_deadline_init(mm_deadline *d, const mm_deadline_cfg *cfg);
/* This peer's compute of a round (seconds), for the cap. */
void mm_deadline_compute(mm_deadline *d, double seconds);
/* How long to wait after ready for in-neighbours peers[0..n). */
double mm_deadline_wait(const mm_deadline *d, const uint32_t *peers, int n);
/* Peer's vector came late_s after ready (<= 0: before). */
void mm_deadline_arrived(mm_deadline *d, uint32_t peer, double late_s);
/* Peer's vector did not come within waited_s after ready. */
void mm_deadline_missed(mm_deadline *d, uint32_t peer, double waited_s);
/* The expected lateness of peer (the median of its window; -1 when it has
 * fewer than MM_DEADLINE_MIN_SAMPLES): when its vector usually comes. */
double mm_deadline_expected(const mm_deadline *d, uint32_t peer);
/* The cap now (kappa * C + slack, or the timeout when no compute was
 * recorded yet or kappa is 0). */
double mm_deadline_cap(const mm_deadline *d);

#endif
