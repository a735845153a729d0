/* The algorithm table (internal to node/, mm__): what a round does that
 * depends on --algo and --compress, chosen once at start (mm__algo_pick)
 * and called by the round (node/round.c) and its lines
 * (node/round_lines.c). redis's ConnectionType is the model: one table of
 * functions, no branching on the algorithm elsewhere.
 *
 *   entry              file                 what travels
 *   mm__algo_dpsgd     node/algo_gossip.c   s = x, weight 1
 *   mm__algo_pushsum   node/algo_gossip.c   s = w x and w
 *   mm__algo_async     node/algo_async.c    s = x; mixes the newest copies
 *   mm__algo_choco     node/algo_choco.c    CHOCO's q = Q(x - x_hat) (--compress)
 *   mm__algo_allreduce node/algo_allreduce.c  chunks of the ring (a round of its own)
 *
 * THE CONTRACT. A round of an exchange-shaped algorithm (every entry with
 * round == NULL) is, in node/round.c:
 *
 *   compute, when steps_first            the H local steps before anything
 *                                        is sent (then not after send below)
 *   round_begin(tr)                      [optional]
 *   for each exchange e of the round (consensus_control.c says how many):
 *       b = a mailbox buffer no send still reads
 *       send(tr, b, e, more)             snapshot x into buffer b, publish it,
 *                                        queue its sends (mm__mbox_send);
 *                                        -1: x cannot be sent (NaN/Inf), the
 *                                        run ends with status 1
 *       compute: the H local steps (first exchange only, unless
 *                                        steps_first; x += delta)
 *       gather(tr, e)                    set tr->nbr[k] for every in[k] not
 *                                        IN_OFF: IN_READY with .vec, .weight
 *                                        (and .more, .aux), or IN_MISSING;
 *                                        may wait (mm__round_wait)
 *       mix(tr, s)                       x <- mix(s, the ready vectors) + delta;
 *                                        set nbr[k].dist; a refused one
 *                                        becomes IN_REFUSED
 *       release(tr)                      give back the mailbox buffers still
 *                                        lent (NULL: gather kept none)
 *   round_end(tr)                        [optional]
 *   the round line (fields(tr, m, MM__LINE_ROUND_TIMES / MM__LINE_ROUND))
 *
 * An algorithm with round != NULL (all-reduce) runs the whole round itself
 * (its compute too, unless steps_first: then round.c has run it before
 * round_begin, and the round's own sends take x after the steps) and sets
 * what the round line reports (tr->v, nbr[k].first_status,
 * .first_dist, tr->exchanges); it returns 0, or -2 with tr->round_error set
 * when its failure ends the run (the end line's reason is then the
 * algorithm's name).
 *
 * Its state of its own lives in tr->algo_state: start() makes it (x and P
 * are known, the round not yet), end() frees it. buf_bytes/codec say what
 * the mailbox buffers and the HELLO need (NULL: fp32 vectors of P floats),
 * chunks how many chunks a send streamed through the mailbox may have
 * (mm__mbox_publish_stream; NULL: none, whole frames only).
 * fields() adds its own keys to the metrics lines at the places named by
 * mm__line (NULL: none). fast_forward: a synchronous algorithm may jump to
 * the round its in-neighbours have all moved on to.
 *
 * ADDING ONE is a file node/algo_NAME.c defining `const mm__algo
 * mm__algo_NAME`, a line in MM_ALGOS (net/algo.h) when it has a --algo
 * word and a HELLO code of its own, and a case in mm__algo_pick. An outer
 * optimizer (issue 24: H inner steps, the pseudo-gradient, an outer
 * Nesterov step) is not another averaging: it is an entry made at start as
 * a copy of the averaging it runs over (gossip's or all-reduce's), with
 * steps_first (the H local steps before the first send, unless
 * --outer-overlap), mix (gossip: keep d = x - s around the inner mix),
 * round_end (after the round's averaging x = y + d: the outer step on x,
 * o and the momentum) and fields set, its state beside the inner
 * algorithm's (node/algo_outer.c; docs/architecture.md, "Adding an
 * algorithm"). */
#ifndef MURMUR_ALGO_H
#define MURMUR_ALGO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/metrics.h"
#include "net/algo.h"
#include "node/node.h"

typedef struct mm__trainer mm__trainer;

/* Where fields() is called: the start line (after the exchange settings),
 * the round line after its times, the round line's end, the end line
 * (after the send counters, before the transport's). */
typedef enum { MM__LINE_START, MM__LINE_ROUND_TIMES, MM__LINE_ROUND, MM__LINE_END } mm__line;

struct mm__algo {
    mm_algo id;                     /* its --algo (net/algo.h) */
    int (*start)(mm__trainer *tr, char *err, size_t errlen); /* 0, or an mm_exit_status */
    void (*end)(mm__trainer *tr);
    size_t (*buf_bytes)(const mm__trainer *tr);
    /* a streamed send's chunks, at most, and the largest chunk's body (NULL: 0) */
    int (*chunks)(const mm__trainer *tr, size_t *chunk_bytes);
    void (*codec)(const mm__trainer *tr, uint8_t *codec, uint32_t *block, double *frac,
                  uint64_t *max_body);
    int (*round)(mm__trainer *tr);
    bool fast_forward;
    bool steps_first;               /* the round's local steps before its first send
                                     * (the outer optimizer, node/algo_outer.h) */
    void (*round_begin)(mm__trainer *tr);
    int (*send)(mm__trainer *tr, int b, uint64_t e, bool more);
    void (*gather)(mm__trainer *tr, uint64_t e);
    void (*mix)(mm__trainer *tr, const float *s);
    void (*release)(mm__trainer *tr);
    void (*round_end)(mm__trainer *tr);
    void (*fields)(mm__trainer *tr, mm_metrics *m, mm__line where);
};
typedef struct mm__algo mm__algo;

extern const mm__algo mm__algo_dpsgd, mm__algo_pushsum, mm__algo_async, mm__algo_choco,
    mm__algo_allreduce;

/* The entry for c: --compress picks CHOCO (dpsgd only; choco's start
 * refuses the others), else --algo's. */
const mm__algo *mm__algo_pick(const mm_node_config *c);

/* algo_gossip.c, shared with async: snapshot s = w x into buffer b and
 * send it (fp32) to the out-neighbours consensus control left on; the
 * mix of the ready vectors with gossip/mix.h; giving the lent ones back. */
int mm__gossip_send(mm__trainer *tr, int b, uint64_t e, bool more);
/* ... the send alone, of the vector already written into buffer b; and of
 * floats offset .. offset+count-1 (an outer fragment), written at the
 * start of buffer b */
int mm__gossip_send_buf(mm__trainer *tr, int b, uint64_t e, bool more);
int mm__gossip_send_part(mm__trainer *tr, int b, uint64_t e, bool more, uint64_t offset,
                         uint64_t count);
void mm__gossip_inputs(mm__trainer *tr); /* tr->mix_in from nbr[] */
void mm__gossip_mix(mm__trainer *tr, const float *s);
/* ... of x's floats offset .. offset+count-1, s and the received vectors
 * being those count floats (an outer fragment) */
void mm__gossip_mix_part(mm__trainer *tr, const float *s, uint64_t offset, uint64_t count);
void mm__gossip_release(mm__trainer *tr);

/* algo_allreduce.c, for the outer optimizer: the exact average of the
 * round just ended (training runs only); and a round of the all-reduce's
 * shape with another collective (the compressed outer exchange's
 * all-gather, node/algo_outer.c): start() hands the snapshot s of x to
 * the loop thread (0, or -1 with tr->round_error set), finish() makes x
 * of its result once it ended well (0, or -1 likewise). */
typedef struct {
    int (*start)(mm__trainer *tr, const float *s);
    int (*finish)(mm__trainer *tr, const float *s);
} mm__collective;
int mm__allreduce_round(mm__trainer *tr, const mm__collective *how);
const float *mm__allreduce_average(const mm__trainer *tr);
/* The schedule the node resolved (node/allreduce.h: --allreduce-schedule
 * auto needs the peers' addresses): the partners of the round view. */
void mm__allreduce_set_schedule(mm__trainer *tr, int schedule);

#endif
