/* All-reduce (node/algo.h, docs/node.md "All-reduce"): a round of its
 * own. The loop thread runs it (node/allreduce.c) on buffers this
 * thread lends it for the round, while this thread computes the local
 * steps; then x <- avg(x_t) + (x - x_t). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "node/algo.h"
#include "node/algo_outer.h"
#include "node/allreduce.h"
#include "node/trainer.h"

typedef struct {
    float *out;                     /* while training: the average lands here */
    double seconds;                 /* the loop's time in all-reduces so far */
    mm_ar_schedule schedule;        /* --allreduce-schedule, auto resolved */
    uint32_t partners[MM_AR_MAX_PARTNERS];
    int n_partners;
} allreduce;

static int start(mm__trainer *tr, char *err, size_t errlen)
{
    /* (auto is resolved by the node: mm__allreduce_set_schedule) */
    if (mm_allreduce_schedule_check(tr->cfg->allreduce_schedule, tr->n, err, errlen) != 0)
        return MM_EXIT_USAGE;
    allreduce *ar = calloc(1, sizeof *ar);
    if (ar && mm__trainer_trains(tr) && !(ar->out = malloc(tr->P * sizeof(float)))) {
        free(ar);
        ar = NULL;
    }
    if (!ar) {
        snprintf(err, errlen, "out of memory for the all-reduce's %zu floats", tr->P);
        return MM_EXIT_ERROR;
    }
    tr->algo_state = ar;
    mm__allreduce_set_schedule(tr, MM_AR_RING);
    return 0;
}

void mm__allreduce_set_schedule(mm__trainer *tr, int schedule)
{
    allreduce *ar = tr->algo_state;
    mm_ar_schedule s = (mm_ar_schedule)schedule;
    ar->schedule = s;
    ar->n_partners = tr->n < 2 ? 0 : mm_allreduce_peers(s, tr->id, tr->n, ar->partners);
}

static void end(mm__trainer *tr)
{
    allreduce *ar = tr->algo_state;
    if (ar)
        free(ar->out);
    free(ar);
}


/* The schedule's partners as this round's view, for the round line (nbrs):
 * the ring's two neighbours, or halving's log2(n) partners. */
static void allreduce_view(mm__trainer *tr)
{
    const allreduce *ar = tr->algo_state;
    tr->v.n_in = tr->v.n_out = 0;
    for (int k = 0; k < ar->n_partners; k++)
        tr->v.in[tr->v.n_in++] = (mm_neighbour){.peer = ar->partners[k]};
    for (int k = 0; k < tr->v.n_in; k++) {
        /* first_*: what the round line reports */
        tr->nbr[k].status = tr->nbr[k].first_status = IN_READY;
        tr->nbr[k].dist = tr->nbr[k].first_dist = NAN;
    }
    tr->exchanges = 1; /* one all-reduce a round */
}

/* Waits for the all-reduce to end. It fails on its own when a ring
 * neighbour goes down or leaves; here it is failed when it has made no
 * progress (no chunk in or out) for --round-timeout since the later of
 * its last progress and the end of our compute (while a neighbour has
 * never been up, --start-timeout from the start instead). */
static void allreduce_wait(mm__trainer *tr, double compute_end, mm__ar_view *v)
{
    bool aborted = false;
    double timeout = tr->cfg->round_timeout_ms / 1000.0;
    for (;;) {
        mm__mbox_allreduce_view(tr->mb, v);
        if (v->state != MM__AR_RUNNING)
            return;
        double from = v->last_progress > compute_end ? v->last_progress : compute_end;
        double deadline = from + timeout;
        for (int k = 0; k < tr->v.n_in; k++) {
            mm__peer_view pv;
            mm__mbox_peer(tr->mb, tr->v.in[k].peer, &pv);
            if (!pv.ever_up && tr->start_deadline > deadline)
                deadline = tr->start_deadline;
        }
        if (aborted)
            deadline = mm_time_now() + 1; /* the loop answers at once */
        else if (mm_time_now() >= deadline) {
            char why[96];
            snprintf(why, sizeof why, "no progress for %.1f s (--round-timeout)",
                     mm_time_now() - from);
            mm__mbox_allreduce_abort(tr->mb, why);
            aborted = true;
            continue;
        }
        mm__mbox_allreduce_wait(tr->mb, deadline);
    }
}

/* One round of a collective (docs/node.md, "All-reduce"): how->start
 * hands the snapshot s of x to the loop thread's collective, this thread
 * computes the local steps meanwhile (unless steps_first: round.c ran
 * them), waits, and how->finish makes x of the result. Without training
 * nothing changes x meanwhile, so x itself is the snapshot (no copies).
 * Returns 0, or -2 when the collective failed (tr->round_error says why). */
int mm__allreduce_round(mm__trainer *tr, const mm__collective *how)
{
    allreduce *ar = tr->algo_state;
    double t0 = mm_time_now();
    allreduce_view(tr);
    mm__isolation_round(tr->iso, &tr->v);
    mm__round_phase(tr, PH_SNAPSHOT);
    const float *s = tr->x;
    if (mm__trainer_trains(tr)) {
        int b = mm__mbox_acquire(tr->mb); /* never held: nothing else sends */
        float *snap = mm__mbox_buf(tr->mb, b < 0 ? 0 : b);
        memcpy(snap, tr->x, tr->P * sizeof(float));
        s = snap;
    }
    if (how->start(tr, s) != 0) {
        mm__round_phase(tr, PH_IDLE);
        return -2;
    }
    double t1 = mm_time_now();
    mm__round_phase(tr, PH_COMPUTE);
    if (!tr->algo->steps_first) /* (else round.c ran them before the snapshot) */
        mm__round_compute(tr);
    double t2 = mm_time_now();
    mm__round_phase(tr, PH_WAIT);
    mm__ar_view v;
    allreduce_wait(tr, t2, &v);
    double t3 = mm_time_now();
    mm__round_phase(tr, PH_MIX);
    if (v.state != MM__AR_DONE) {
        snprintf(tr->round_error, sizeof tr->round_error, "%s",
                 v.err[0] ? v.err : "all-reduce failed");
        return -2;
    }
    ar->seconds += v.seconds;
    if (how->finish(tr, s) != 0)
        return -2;
    double t4 = mm_time_now();
    for (int k = 0; k < tr->v.n_in; k++) /* the result holds every peer's vector */
        mm__isolation_mixed(tr->iso, tr->v.in[k].peer, t4);
    tr->t_comm += (t1 - t0) + (t4 - t3);
    tr->t_compute += t2 - t1;
    tr->t_wait += t3 - t2;
    return 0;
}

/* The ring (or halving-doubling) all-reduce of the snapshot into ar->out
 * (in place without training), then x <- avg(x_t) + (x - x_t). */
static int ring_start(mm__trainer *tr, const float *s)
{
    allreduce *ar = tr->algo_state;
    uint64_t lo, n; /* (the outer optimizer's fragment: the whole vector without one) */
    mm__outer_fragment(tr, &lo, &n);
    mm__mbox_allreduce(tr->mb, (uint64_t)tr->round, s + lo, (s == tr->x ? tr->x : ar->out) + lo);
    return 0;
}

static int ring_finish(mm__trainer *tr, const float *s)
{
    allreduce *ar = tr->algo_state;
    uint64_t lo, n;
    mm__outer_fragment(tr, &lo, &n);
    if (s != tr->x) /* x = avg(x_t) + (x - x_t) */
        for (size_t k = lo; k < lo + n; k++)
            tr->x[k] = ar->out[k] + (tr->x[k] - s[k]);
    return 0;
}

static int round_of_its_own(mm__trainer *tr)
{
    static const mm__collective ring = {.start = ring_start, .finish = ring_finish};
    return mm__allreduce_round(tr, &ring);
}

/* ---- metrics, snapshots, checkpoints -------------------------------------- */


const float *mm__allreduce_average(const mm__trainer *tr)
{
    const allreduce *ar = tr->algo_state;
    return ar->out;
}

static void fields(mm__trainer *tr, mm_metrics *m, mm__line where)
{
    const allreduce *ar = tr->algo_state;
    if (where == MM__LINE_START)
        mm_metrics_str(m, "allreduce_schedule", mm_allreduce_schedule_name(ar->schedule));
    if (where == MM__LINE_ROUND_TIMES)
        mm_metrics_num(m, "t_allreduce", ar->seconds);
}

const mm__algo mm__algo_allreduce = {
    .id = MM_ALGO_ALLREDUCE,
    .start = start,
    .end = end,
    .round = round_of_its_own,
    .fields = fields,
};
