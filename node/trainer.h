/* The training thread's state, shared by the files that make it (internal
 * to node/, mm__):
 *
 *   trainer.c           set-up, resume, snapshots, checkpoints, teardown
 *   round.c             the round: neighbours, exchanges, waiting, the loop
 *   consensus_control.c how many exchanges a round has (--gossip-steps, a
 *                       schedule, --consensus-target) and what edges agree
 *   round_lines.c       the metrics lines (start, round, eval, isolated, end)
 *   algo_*.c            the algorithms, behind the table of node/algo.h
 *
 * Only the training thread touches it; what it learns of the network comes
 * through the mailbox (node/mailbox.h). */
#ifndef MURMUR_TRAINER_H
#define MURMUR_TRAINER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/metrics.h"
#include "base/rng.h"
#include "gossip/consensus.h"
#include "gossip/mix.h"
#include "gossip/topology.h"
#include "node/algo.h"
#include "node/exporter.h"
#include "node/isolation.h"
#include "node/mailbox.h"
#include "node/node_int.h"
#include "node/pace.h"
#include "node/replica.h"
#include "member/member.h"

/* What became of in-neighbour k's vector in an exchange. IN_REFUSED: it
 * arrived (its buffer must go back) but the mix refused its weight, so it
 * counts as missing. IN_OFF: consensus control left this neighbour out of
 * the exchange (both ends agreed): not waited for, its weight goes to self,
 * and it is not missing. */
enum { IN_WAITING, IN_READY, IN_MISSING, IN_REFUSED, IN_OFF };

/* The phases of one exchange, in order; asserted in debug builds. */
typedef enum { PH_IDLE, PH_SNAPSHOT, PH_COMPUTE, PH_WAIT, PH_MIX } mm__phase;

/* In-neighbour k of this round (v.in[k]): one record each. */
typedef struct {
    /* this exchange */
    int status;                     /* IN_* */
    const float *vec;               /* the vector to mix (lent by the mailbox, or a copy) */
    double weight;                  /* its push-sum weight */
    double dist;                    /* ||z_k - z_self|| as the mix measured it */
    bool more;                      /* its vector said MORE (consensus control) */
    double aux;                     /* ... and carried this estimate */
    uint16_t level;                 /* ... and this level (skipping rounds) */
    /* this round */
    bool on;                        /* takes part in this exchange (consensus control) */
    int exchanges;                  /* exchanges that included it (sent to, waited for) */
    int first_status;               /* the round's first exchange, for the round line */
    double first_dist;
} mm__nbr;

typedef struct mm__trainer {
    const mm_node_config *cfg;
    const mm__algo *algo;           /* chosen once, from cfg->algo and --compress */
    void *algo_state;               /* the algorithm's own (its start() sets it) */
    struct mm__outer *outer;        /* --outer: the outer optimizer's state (algo_outer.h) */
    uint32_t id, n;
    const mm_topology *topo;
    char dir[PATH_MAX];             /* run_dir/node-K */
    mm__mbox *mb;                   /* set by mm__trainer_run */

    /* the replica, or a plain vector with --vector-len */
    mm_replica rep;
    bool have_model;
    float *x;                       /* the parameters (rep.model.params or own_x) */
    float *own_x;
    size_t P;
    double w;                       /* push-sum weight (1 for the others) */
    long step, round;
    /* the round of the checkpoint on disk that this process wrote or
     * resumed from; -1 while there is none (what a failure says is kept) */
    long ckpt_round;
    /* --resume found no checkpoint: this peer started from round 0 (the
     * start line says so, docs/metrics.md) */
    bool resumed_fresh;
    mm_metrics metrics;

    /* this round */
    mm_round_view v, next;          /* this round's neighbours, and the next round's */
    mm_neighbour *in_buf, *out_buf;
    mm__nbr *nbr;                   /* nbr[k]: v.in[k] */
    mm_mix_input *mix_in;           /* the mix's input, nbr[k] as gossip/mix.h wants it */
    uint32_t *ids;                  /* scratch */
    mm_link_stats *links;           /* [n]: the transport's counters per peer, of the last line */
    float *sketch;
    double loss_sum;
    int loss_n;
    /* round lines (--round-lines): the budget of lines, when it was last
     * filled, and the rounds (and their losses) since the last line */
    double line_tokens, line_filled;
    long line_rounds, line_exchanges;
    double log_missing_at;          /* the last progress line for a missing neighbour */
    double line_loss_sum;
    long line_loss_n;
    mm__phase ph;

    /* consensus control (docs/node.md): exchange g of round r is
     * r * stride + g on the wire */
    uint64_t stride;
    bool adaptive;                  /* --consensus-target */
    mm_consensus_ctl cc;
    double *cc_ratio;               /* R(G), G = 1..max_gossip_steps */
    int exchanges, want;            /* this round: exchanges run; adaptive: asked for */
    bool more_warned;
    /* --min-gossip-steps < 1: edges skip rounds (node/cc_skip.h) */
    struct mm__skip *skip;        /* NULL: every edge every round */
    uint16_t level;                 /* this round's level (mm_consensus_level), in its vectors */
    bool cc_fresh;                  /* the last round's first exchange mixed someone */
    mm_consensus_shape cc_shape;    /* Xi^2 from q and the pull's b (gossip/consensus.h) */
    double cc_pull2;                /* b: the squared pull of this round's first mix */

    double t_start, start_deadline;
    double t_compute, t_comm, t_wait;
    double t_jitter;                /* --compute-jitter: delay drawn so far (seconds) */
    mm_rng jitter_rng;
    char round_error[MM_ALLREDUCE_ERR]; /* why an algorithm's round ended the run, "" if none did */
    uint64_t stale_dropped;
    uint64_t mix_refused;           /* neighbour vectors the mix refused for their weight */
    mm_clip clip;                   /* --clip-pull, --robust-clip (gossip/robust.h); both
                                     * 0: off, the mix untouched */
    mm__isolation *iso;                   /* who was mixed, isolation, the verdict (isolation.h) */
    struct mm__pace *pace;          /* --deadline learn, --fit-work (node/pace.h); NULL: off */
    mm__exporter *exporter;         /* --metrics-addr: what a scrape shows (exporter.h) */
    /* An elastic run (a family topology, docs/membership.md; node/view.c):
     * the table, this round's members and their tag, the family instantiated
     * over the members of the last two views asked for (this round's and
     * the next's), and what failure detection and a leave keep. */
    struct mm__elastic *el;         /* NULL: a static run */
    bool elastic;
    uint32_t n_start;               /* the family's starting members (ids 0..n_start-1) */
    uint32_t view_n, view_tag;      /* this round's view: members, tag */
    uint32_t *view_ids;             /* [n] */
    struct mm__view_inst *inst;     /* [2]: the family over a view's members */
    mm_neighbour *rank_buf;         /* [2 n]: a round in rank space */
    double *down_since;             /* [n]: when a neighbour was first seen not up (0: up) */
    double *first_wanted;           /* [n]: when it was first a neighbour while never up */
    /* A neighbour new in this view (not one the round before) whose link
     * is not up when the view begins (a new edge, a joiner's donors): it
     * is waited for like a starting peer, until its link has come up once
     * since (ups past fresh_ups) or fresh_until. Else a joiner wrote off
     * its new neighbours at its first round while they mixed its vector. */
    uint64_t *fresh_ups;            /* [n] */
    double *fresh_until;            /* [n] */
    long *nbr_last;                 /* [n]: the last round p was a neighbour (-1: never) */
    uint64_t leave_end;             /* this peer leaves: the round it is out (UINT64_MAX) */
    bool leaving, left;
    long joined_round;              /* a joiner: the round it joined at (-1: a starting member) */
    mm__live live;                  /* ... built by round_lines.c */
    int exit_status;
} mm__trainer;

/* Whether local steps change x (otherwise a round only averages). */
bool mm__trainer_trains(const mm__trainer *tr);
bool mm__trainer_stopping(const mm__trainer *tr);
void mm__trainer_evaluate(mm__trainer *tr);
void mm__trainer_snapshot(mm__trainer *tr);
int mm__trainer_checkpoint(mm__trainer *tr);
/* What a peer that stops on an error leaves to --resume, for its error
 * line: "the checkpoint of round R is kept", or that it has none yet. */
const char *mm__trainer_kept(const mm__trainer *tr, char *buf, size_t len);

/* view.c: the neighbours of round r (the topology's, or in an elastic run
 * the family's over view(r)'s members); *tag the view's tag (0 static).
 * 0, or -1 when the topology has no such round. */
int mm__view_round(mm__trainer *tr, uint64_t round, mm_round_view *v, uint32_t *tag);
/* Elastic runs, at the start of each round: the view lines, failure
 * detection, leaving, a peer that finds its membership ended; false when
 * the peer must stop (it left). */
bool mm__view_begin_round(mm__trainer *tr);
/* Whether neighbour p's link is new in this view and has not come up yet
 * (an elastic run): waited for, not written off (node/round.c). */
bool mm__view_fresh(const mm__trainer *tr, uint32_t p, const mm__peer_view *pv);
/* Elastic runs: answers state requests (STATE vectors of our parameters). */
void mm__view_serve_states(mm__trainer *tr);
/* An elastic joiner: its table, its join round, its donors' state. 0, or
 * the exit status. */
int mm__view_join(mm__trainer *tr);
/* Gives back the STATE vectors waiting from peer (a donor's, late). */
void mm__view_drop_states(mm__trainer *tr, uint32_t peer);
int mm__view_alloc(mm__trainer *tr);
void mm__view_free(mm__trainer *tr);

/* round.c */
void mm__round_phase(mm__trainer *tr, mm__phase next);
/* Whether round is evaluated: a multiple of --eval-every E, thinned on long
 * runs so that a run writes about 1000 evaluations per decade of rounds:
 * every E rounds up to round 1000 E, then every 10 E up to 10000 E, every
 * 100 E up to 100000 E, ... (docs/metrics.md). The same on every peer. */
bool mm__eval_due(const mm_node_config *c, long round);
/* The round's H local steps (and --compute-jitter's delays). */
void mm__round_compute(mm__trainer *tr);
/* Waits (bounded) for in-neighbours' vectors of exchange e (synchronous
 * algorithms): take(tr, k, pv) decides about in[k]'s vector of exchange e
 * (sets nbr[k]: IN_READY with its vector, or IN_MISSING after releasing
 * it); drop(tr, peer, pv), when not NULL, sees an older vector before the
 * mailbox takes it back. */
typedef void mm__take_fn(mm__trainer *tr, int k, const mm__peer_view *pv);
typedef void mm__drop_fn(mm__trainer *tr, uint32_t peer, const mm__peer_view *pv);
void mm__round_wait(mm__trainer *tr, uint64_t e, mm__take_fn *take, mm__drop_fn *drop);

/* consensus_control.c */
int mm__control_start(mm__trainer *tr, char *err, size_t errlen);
/* With --consensus-target: whether every round of topo (over a period, or
 * MM_TOPO_SPECTRUM_ROUNDS rounds of a random schedule) is undirected at
 * peer id, so that an edge's two ends can agree on each exchange. 0, or
 * MM_EXIT_USAGE with why (mm__control_start's refusal, and the check
 * before the start and --dry-run's); MM_EXIT_ERROR out of memory. */
int mm__control_check(const mm_node_config *c, const mm_topology *topo, uint32_t id,
                      char *err, size_t errlen);
/* This round's number of exchanges G (and the edges on[] that take part);
 * 0 when every edge skips the round (--min-gossip-steps < 1). */
int mm__control_round(mm__trainer *tr);
/* After exchange g, which asked for another one when more: whether to run
 * another. */
bool mm__control_next(mm__trainer *tr, int g, bool more);
/* Whether exchange g (of G) asks for another one (MORE). */
bool mm__control_more(const mm__trainer *tr, int g, int G);
/* Whether this round's neighbours are one undirected set. */
bool mm__control_undirected(const mm_round_view *v);
/* Its keys in the metrics lines; the round's console words (" | exchanges 3"). */
void mm__control_fields(mm__trainer *tr, mm_metrics *m, mm__line where);
void mm__control_describe(const mm__trainer *tr, char *buf, size_t len);

/* round_lines.c */
void mm__lines_start(mm__trainer *tr);
void mm__lines_round(mm__trainer *tr, double loss, float lr);
/* r: the evaluation (NULL without a model: loss and accuracy null). */
void mm__lines_eval(mm__trainer *tr, const mm_eval_result *r);
void mm__lines_isolated(mm__trainer *tr);
/* Elastic runs: the view of this round changed (members, tag, what took
 * effect). */
struct mm_member_change;
void mm__lines_view(mm__trainer *tr, const uint32_t *ids, uint32_t n, uint32_t tag,
                    const mm_member_change *ch, uint32_t n_ch);
void mm__lines_end(mm__trainer *tr, const char *reason);

#endif
