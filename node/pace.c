/* Uneven peers in the round (node/pace.h; docs/node.md, "Uneven peers"):
 * the lab's slow peers, deadlines learnt from arrivals, work that fits the
 * time, and the figures of each round's pace. The rules themselves are
 * numbers in, numbers out: gossip/deadline.h, gossip/work.h. */
#include "node/pace.h"

#include <math.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/log.h"
#include "gossip/deadline.h"
#include "gossip/mix.h"
#include "gossip/work.h"
#include "node/trainer.h"

/* The EWMA's weight of a new round's step time. */
#define STEP_GAIN 0.25

struct mm__pace {
    bool learn, fit_batch, fit_steps;
    double timeout;           /* --round-timeout, seconds */
    mm_deadline dl;
    mm_work work;
    uint32_t *peers;          /* [n]: scratch, an exchange's in-neighbours */

    /* this exchange */
    double t_ready;           /* when the round's H local steps ended (or the wait began) */
    bool have_ready;
    bool first;               /* the round's first exchange: learnt from and reported */
    bool scaled;              /* the round's local progress was scaled (--fit-work steps) */
    double wait_s;            /* its wait after t_ready */
    double last_at;           /* the latest arrival after t_ready ... */
    long last_peer;           /* ... from this in-neighbour (-1: none came after ready) */

    /* this round */
    long round;               /* the round begun last (-1: none yet) */
    bool behind;              /* left behind: an in-neighbour moved on, or rounds skipped */
    int steps;                /* local steps taken */
    double t_steps;           /* when its first step began */
    double step_s;            /* EWMA of a local step's time (jitter and lab delays in) */
    double compute_s;         /* the H steps' time */
    double lead;              /* by how long every in-neighbour's next vector came before
                               * its steps ended (NaN: one had not: it sets no pace) */

    /* the round line's (its first exchange) */
    double line_deadline, line_waited, line_lead;
    int line_batch, line_steps, line_cut;
    long line_paced_by;       /* the in-neighbour whose vector ended the wait; own id: none */
    bool line_behind;

    /* so far */
    uint64_t cut_total, behind_total, extra_steps_total;
};

bool mm__pace_wanted(const mm_node_config *c) { return c->deadline_learn || c->fit_work; }

mm__pace *mm__pace_new(const mm_node_config *c, uint32_t n_peers)
{
    mm__pace *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->peers = calloc(n_peers ? n_peers : 1, sizeof *p->peers);
    if (!p->peers) {
        free(p);
        return NULL;
    }
    p->learn = c->deadline_learn;
    p->fit_batch = (c->fit_work & MM_FIT_BATCH) != 0;
    p->fit_steps = (c->fit_work & MM_FIT_STEPS) != 0;
    p->timeout = c->round_timeout_ms / 1000.0;
    mm_deadline_cfg dc = mm_deadline_defaults(p->timeout);
    dc.cap = c->deadline_cap;
    dc.quantile = c->deadline_quantile;
    mm_deadline_init(&p->dl, &dc);
    int B = c->train.batch;
    mm_work_init(&p->work, B, c->fit_min_batch ? c->fit_min_batch : B / 4, c->local_steps,
                 c->fit_max_steps ? c->fit_max_steps : 4 * c->local_steps);
    p->round = -1;
    p->last_peer = -1;
    return p;
}

void mm__pace_free(mm__pace *p)
{
    if (!p)
        return;
    free(p->peers);
    free(p);
}

/* ---- the lab's slow peers ------------------------------------------------ */

void mm__lab_delay(mm__trainer *tr, double step_start)
{
    double f = mm_slowdown_factor(&tr->cfg->lab, tr->id, tr->round);
    if (f > 1)
        mm_sleep((f - 1) * (mm_time_now() - step_start));
}

/* ---- the round ------------------------------------------------------------- */

void mm__pace_round_begin(mm__trainer *tr)
{
    mm__pace *p = tr->pace;
    /* a round jumped to (fast-forward: every in-neighbour was ahead) */
    p->behind = p->round >= 0 && tr->round > p->round + 1;
    p->round = tr->round;
    p->steps = 0;
    p->first = true;
    p->scaled = false;
    p->have_ready = false;
    p->line_deadline = p->line_waited = 0;
    p->lead = NAN;
    p->line_batch = p->work.batch;
    p->line_steps = 0;
    p->line_cut = 0;
    p->line_paced_by = tr->id;
    p->line_behind = false;
}

float mm__pace_step(mm__trainer *tr)
{
    mm__pace *p = tr->pace;
    if (p->steps == 0)
        p->t_steps = mm_time_now();
    /* A step beyond H reuses the learning rate of the round's last one:
     * the schedule follows the rounds, as every other peer's does. */
    bool extra = p->steps >= tr->cfg->local_steps && tr->rep.opt.step > 0;
    long keep = tr->rep.opt.step;
    if (extra)
        tr->rep.opt.step = keep - 1;
    float loss = p->fit_batch ? mm_replica_step_batch(&tr->rep, p->work.batch, NULL)
                              : mm_replica_step(&tr->rep, NULL);
    if (extra) {
        tr->rep.opt.step = keep;
        p->extra_steps_total++;
    }
    p->steps++;
    return loss;
}

/* By how long every in-neighbour's vector of the next round came before
 * now (NaN when one has not come: this peer is not the slowest of its
 * neighbourhood). The mailbox stages vectors (node.c), so a neighbour's
 * next one is seen as it comes, behind this round's. */
static double lead_of(mm__trainer *tr, double now)
{
    uint64_t next = ((uint64_t)tr->round + 1) * tr->stride;
    double lead = INFINITY;
    for (int k = 0; k < tr->v.n_in; k++) {
        mm__peer_view pv;
        mm__mbox_peer(tr->mb, tr->v.in[k].peer, &pv);
        if (!pv.has_vector || pv.newest_exchange < next)
            return NAN;
        lead = fmin(lead, now - pv.newest_at);
    }
    return isfinite(lead) ? lead : NAN;
}

void mm__pace_ready(mm__trainer *tr)
{
    mm__pace *p = tr->pace;
    double now = mm_time_now();
    p->t_ready = now;
    p->have_ready = true;
    p->lead = lead_of(tr, now);
    if (p->steps > 0) {
        p->compute_s = now - p->t_steps;
        double s = p->compute_s / p->steps;
        p->step_s = p->step_s > 0 ? p->step_s + STEP_GAIN * (s - p->step_s) : s;
        mm_deadline_compute(&p->dl, p->compute_s);
    }
}

/* The in-neighbours this exchange waits for, into p->peers. */
static int waited_peers(const mm__trainer *tr)
{
    int n = 0;
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->nbr[k].on)
            tr->pace->peers[n++] = tr->v.in[k].peer;
    return n;
}

bool mm__pace_more_steps(mm__trainer *tr)
{
    mm__pace *p = tr->pace;
    if (!p->fit_steps || !p->have_ready || !p->first)
        return false;
    double now = mm_time_now(), since = now - p->t_ready;
    uint64_t e = (uint64_t)tr->round * tr->stride;
    double remaining = -1;
    for (int k = 0; k < tr->v.n_in; k++) {
        uint32_t peer = tr->v.in[k].peer;
        mm__peer_view pv;
        mm__mbox_peer(tr->mb, peer, &pv);
        if (pv.has_vector && pv.exchange >= e)
            continue; /* here (or it moved on): nothing to wait for */
        double expected = mm_deadline_expected(&p->dl, peer);
        if (expected < 0)
            return false; /* not learnt yet: no guess to fill */
        remaining = fmax(remaining, expected - since);
    }
    if (p->learn) /* never past the deadline */
        remaining = fmin(remaining, mm_deadline_wait(&p->dl, p->peers, waited_peers(tr)) - since);
    return mm_work_more_steps(&p->work, p->steps, remaining, p->step_s);
}

void mm__pace_before_mix(mm__trainer *tr, const float *s)
{
    mm__pace *p = tr->pace;
    if (!p->fit_steps || p->scaled || p->steps == 0)
        return;
    p->scaled = true;
    mm_mix_scale_delta(tr->x, s, mm_work_delta_scale(&p->work, p->steps), tr->P);
}

void mm__pace_round_end(mm__trainer *tr)
{
    mm__pace *p = tr->pace;
    p->line_steps = p->steps;
    p->line_behind = p->behind;
    p->line_lead = p->lead;
    if (p->behind)
        p->behind_total++;
    if (p->fit_batch)
        mm_work_next_batch(&p->work, p->lead, p->compute_s);
}

/* ---- the wait -------------------------------------------------------------- */

double mm__pace_wait_begin(mm__trainer *tr, uint64_t e)
{
    mm__pace *p = tr->pace;
    double now = mm_time_now();
    if (!p->have_ready) /* (no compute before this exchange) */
        p->t_ready = now;
    p->have_ready = false;
    p->wait_s = p->learn ? mm_deadline_wait(&p->dl, p->peers, waited_peers(tr)) : p->timeout;
    p->last_at = p->t_ready;
    p->last_peer = -1;
    double left = p->t_ready + p->wait_s - now;
    return left > 0 ? left : 0;
}

void mm__pace_arrived(mm__trainer *tr, int k, const mm__peer_view *pv)
{
    mm__pace *p = tr->pace;
    /* Its vector of two rounds on is here already: it finished the next
     * round without ours (its deadline cut us), so we are behind. In step,
     * a neighbour is at most one round ahead: it waits for our vector of
     * that round, which we have not sent yet. */
    if (pv->newest_exchange / tr->stride >= pv->exchange / tr->stride + 2)
        p->behind = true;
    double late = pv->delivered_at - p->t_ready;
    if (p->first)
        mm_deadline_arrived(&p->dl, tr->v.in[k].peer, late);
    if (pv->delivered_at > p->last_at) {
        p->last_at = pv->delivered_at;
        p->last_peer = tr->v.in[k].peer;
    }
}

void mm__pace_moved_on(mm__trainer *tr, int k)
{
    tr->pace->behind = true;
}

void mm__pace_wait_end(mm__trainer *tr)
{
    mm__pace *p = tr->pace;
    if (!p->first)
        return;
    double waited = mm_time_now() - p->t_ready;
    int cut = 0;
    for (int k = 0; k < tr->v.n_in; k++) {
        if (tr->nbr[k].status != IN_WAITING)
            continue;
        if (cut++ == 0)
            p->last_peer = tr->v.in[k].peer; /* the wait ended at the deadline: its doing */
        mm_deadline_missed(&p->dl, tr->v.in[k].peer, waited);
        mm_debug("round %ld: peer %u cut after %.4f s (deadline %.4f s); it now needs %.4f s",
                 tr->round, tr->v.in[k].peer, waited, p->wait_s,
                 mm_deadline_wait(&p->dl, &tr->v.in[k].peer, 1));
    }
    p->cut_total += (uint64_t)cut;
    p->line_cut = cut;
    p->line_deadline = p->wait_s;
    p->line_waited = waited > 0 ? waited : 0;
    p->line_paced_by = p->last_peer >= 0 ? p->last_peer : tr->id;
    p->first = false;
}

/* ---- what is shown --------------------------------------------------------- */

void mm__pace_fields(mm__trainer *tr, mm_metrics *m, mm__line where)
{
    mm__pace *p = tr->pace;
    const mm_node_config *c = tr->cfg;
    if (where == MM__LINE_START) {
        mm_metrics_str(m, "deadline", p->learn ? "learn" : "fixed");
        if (p->learn) {
            mm_metrics_num(m, "deadline_cap", c->deadline_cap);
            mm_metrics_num(m, "deadline_quantile", c->deadline_quantile);
        }
        mm_metrics_str(m, "fit_work", p->fit_batch && p->fit_steps ? "batch,steps"
                                      : p->fit_batch ? "batch" : p->fit_steps ? "steps" : "none");
        if (p->fit_batch)
            mm_metrics_int(m, "fit_min_batch", p->work.batch_min);
        if (p->fit_steps)
            mm_metrics_int(m, "fit_max_steps", p->work.steps_max);
    } else if (where == MM__LINE_ROUND) {
        mm_metrics_num(m, "deadline", p->line_deadline);
        mm_metrics_num(m, "waited", p->line_waited);
        mm_metrics_int(m, "paced_by", p->line_paced_by);
        mm_metrics_num(m, "lead", p->line_lead); /* (NaN: null) */
        mm_metrics_int(m, "cut", p->line_cut);
        mm_metrics_int(m, "behind", p->line_behind ? 1 : 0);
        mm_metrics_int(m, "batch", p->line_batch);
        mm_metrics_int(m, "steps_done", p->line_steps);
    } else if (where == MM__LINE_END) {
        mm_metrics_int(m, "deadline_cut", (long long)p->cut_total);
        mm_metrics_int(m, "rounds_behind", (long long)p->behind_total);
        mm_metrics_int(m, "extra_steps", (long long)p->extra_steps_total);
    }
}

void mm__pace_live(const mm__trainer *tr, mm__live *l)
{
    const mm__pace *p = tr->pace;
    l->pace = p != NULL;
    if (!p)
        return;
    l->deadline_s = p->line_deadline;
    l->waited_s = p->line_waited;
    l->paced_by = p->line_paced_by;
    l->batch = p->line_batch;
    l->steps_done = p->line_steps;
    l->cut_total = p->cut_total;
    l->behind_total = p->behind_total;
    l->extra_steps_total = p->extra_steps_total;
}
