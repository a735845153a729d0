/* Consensus control and the number of exchanges a round has (docs/node.md,
 * "Consensus control"): --gossip-steps G, the schedule's G for the round,
 * or with --consensus-target as many as this peer wants (the estimator and
 * controller of gossip/consensus.h) and each neighbour agrees to: an edge
 * takes part in another exchange only while both its ends say MORE. The
 * exchange numbering's stride is decided here (exchange g of round r is
 * r * stride + g on the wire). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "node/cc_skip.h"
#include "node/trainer.h"

/* Whether this round's neighbours are one undirected set: in[k] and out[k]
 * the same peer (both lists are sorted by id), so that an edge's two ends
 * can agree on its exchanges. */
bool mm__control_undirected(const mm_round_view *v)
{
    if (v->n_in != v->n_out)
        return false;
    for (int k = 0; k < v->n_in; k++)
        if (v->in[k].peer != v->out[k].peer)
            return false;
    return true;
}

/* The exchange numbering's stride, and with --consensus-target the
 * estimator's correction for this topology and mm__control_check: every round
 * (over a period, or MM_TOPO_SPECTRUM_ROUNDS rounds of a random schedule)
 * is undirected at this peer. 0, or the exit status: MM_EXIT_USAGE for a
 * topology the control cannot run on (a configuration refusal, like the
 * other flag checks), MM_EXIT_ERROR for out of memory. */
int mm__control_check(const mm_node_config *c, const mm_topology *topo, uint32_t id,
                      char *err, size_t errlen)
{
    if (!(c->consensus_target > 0))
        return 0;
    int deg = mm_topo_max_degree(topo);
    mm_neighbour *in = calloc((size_t)(deg > 0 ? deg : 1), sizeof *in);
    mm_neighbour *out = calloc((size_t)(deg > 0 ? deg : 1), sizeof *out);
    if (!in || !out) {
        free(in);
        free(out);
        snprintf(err, errlen, "out of memory");
        return MM_EXIT_ERROR;
    }
    mm_round_view v = {.in = in, .out = out};
    int period = mm_topo_period(topo);
    int rounds = period > 0 ? period : MM_TOPO_SPECTRUM_ROUNDS, status = 0;
    for (int r = 0; r < rounds && !status; r++) {
        if (mm_topo_round(topo, id, (uint64_t)r, &v) != 0 || !mm__control_undirected(&v)) {
            snprintf(err, errlen, "--consensus-target needs a topology whose every round is "
                     "undirected (peer %u receives from other peers than it sends to in round "
                     "%d): neighbours must agree on each exchange", id, r);
            status = MM_EXIT_USAGE;
        }
    }
    free(in);
    free(out);
    return status;
}

int mm__control_start(mm__trainer *tr, char *err, size_t errlen)
{
    const mm_node_config *c = tr->cfg;
    tr->adaptive = c->consensus_target > 0;
    tr->stride = tr->adaptive ? (uint64_t)c->max_gossip_steps
                : c->gossip_schedule.n ? (uint64_t)mm_steps_schedule_max(&c->gossip_schedule)
                : (uint64_t)(c->gossip_steps > 0 ? c->gossip_steps : 1);
    if (!tr->adaptive)
        return 0;
    int status = mm__control_check(c, tr->topo, tr->id, err, errlen);
    if (status != 0)
        return status;
    double *lam = malloc(tr->n * sizeof *lam);
    tr->cc_ratio = malloc((size_t)c->max_gossip_steps * sizeof *tr->cc_ratio);
    int rc = lam && tr->cc_ratio && mm_topo_spectrum(tr->topo, lam) == 0 &&
                     mm_consensus_ratios(lam, (int)tr->n, c->max_gossip_steps, tr->cc_ratio) == 0
                 ? 0 : -1;
    bool skips = c->min_gossip_steps < 1;
    if (rc == 0 && skips)
        rc = mm_consensus_shape_init(&tr->cc_shape, lam, (int)tr->n, c->max_gossip_steps);
    free(lam);
    if (rc != 0) {
        snprintf(err, errlen, "--consensus-target: the topology's spectrum could not be "
                 "computed (out of memory, or a single peer)");
        return MM_EXIT_ERROR;
    }
    /* skipping rounds: the peers gossip their estimate of Xi^2 from the
     * measured shape (mm_consensus_shape_xi2) instead of q */
    mm_consensus_init(&tr->cc, c->consensus_target, c->min_gossip_steps, c->max_gossip_steps,
                      skips ? NULL : tr->cc_ratio);
    if (skips && !(tr->skip = mm__skip_new(tr->n))) {
        snprintf(err, errlen, "--min-gossip-steps: out of memory");
        return MM_EXIT_ERROR;
    }
    mm_info("consensus control: target %g, 1..%d exchanges a round, R(1) = %.4f, R(%d) = %.4f",
            c->consensus_target, c->max_gossip_steps, tr->cc_ratio[0], c->max_gossip_steps,
            tr->cc_ratio[c->max_gossip_steps - 1]);
    return 0;
}

/* This round's learning rate over its peak, the warm-up counted as the
 * peak (gossip/consensus.h mm_consensus_set_step_scale); 1 without a model. */
static double step_scale(const mm__trainer *tr)
{
    const mm_adamw_config *a = &tr->cfg->train.adamw;
    if (!tr->have_model || !(a->lr_max > 0))
        return 1;
    long step = tr->rep.opt.step < a->warmup_steps ? a->warmup_steps : tr->rep.opt.step;
    return mm_adamw_lr(a, step) / a->lr_max;
}

int mm__control_round(mm__trainer *tr)
{
    const mm_node_config *c = tr->cfg;
    int G = c->gossip_schedule.n ? mm_steps_schedule_steps(&c->gossip_schedule, tr->round)
            : c->gossip_steps > 0 ? c->gossip_steps : 1;
    if (tr->adaptive) {
        if (tr->skip)
            mm_consensus_set_step_scale(&tr->cc, step_scale(tr));
        tr->want = mm_consensus_round(&tr->cc, (uint64_t)tr->round, !tr->skip || tr->cc_fresh);
        tr->level = mm_consensus_level(&tr->cc);
        /* (a time-varying graph checked only over a sample of its rounds) */
        G = mm__control_undirected(&tr->v) ? tr->want : 1;
    }
    int due = 0;
    for (int k = 0; k < tr->v.n_in; k++) {
        mm__nbr *nb = &tr->nbr[k];
        nb->on = !tr->skip || mm__skip_due(tr->skip, tr->v.in[k].peer, tr->round);
        nb->exchanges = 0;
        due += nb->on;
        if (!nb->on) { /* what the round line reports when no exchange runs */
            nb->first_status = IN_OFF;
            nb->first_dist = NAN;
        }
    }
    if (tr->skip && !due) {
        tr->cc_fresh = false;
        return 0; /* every edge skips this round: the local steps alone */
    }
    return G;
}

bool mm__control_more(const mm__trainer *tr, int g, int G)
{
    return tr->adaptive && g + 1 < G && !mm__trainer_stopping(tr);
}

/* After the round's first exchange: what the round line reports of it, and
 * the estimator's input: q = sum_j W_ij ||x_i - x_j||^2 over the neighbours
 * that came, scaled up to all of them (NaN when none came); when rounds
 * may be skipped, this peer's estimate of Xi^2 from q and the pull's b
 * (scaled alike, so that b / q is what the neighbours that came show). */
static double first_exchange(mm__trainer *tr)
{
    double wq = 0, w_all = 0, w_in = 0;
    for (int k = 0; k < tr->v.n_in; k++) {
        tr->nbr[k].first_status = tr->nbr[k].status;
        tr->nbr[k].first_dist = tr->nbr[k].dist;
        w_all += tr->v.in[k].weight;
        if (tr->nbr[k].status == IN_READY && isfinite(tr->nbr[k].dist)) {
            wq += tr->v.in[k].weight * tr->nbr[k].dist * tr->nbr[k].dist;
            w_in += tr->v.in[k].weight;
        }
    }
    if (!(w_in > 0))
        return NAN;
    double q = wq * w_all / w_in;
    return tr->skip ? mm_consensus_shape_xi2(&tr->cc_shape, q, tr->cc_pull2 * w_all / w_in) : q;
}

/* Rounds skipped (--min-gossip-steps < 1), after a round's first exchange:
 * the levels averaged like the estimate, and each due edge's next round
 * from both ends' levels (cc_skip.h). */
static void skip_next(mm__trainer *tr)
{
    double h = mm_consensus_level_own(&tr->cc), mixed = h;
    bool came = false;
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->nbr[k].status == IN_READY) {
            mixed += tr->v.in[k].weight * (mm_consensus_level_value(tr->nbr[k].level) - h);
            came = true;
        }
    mm_consensus_fold_level(&tr->cc, mixed);
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->nbr[k].on)
            mm__skip_done(tr->skip, tr->v.in[k].peer, tr->round,
                          tr->nbr[k].status == IN_READY, tr->level, tr->nbr[k].level);
    tr->cc_fresh = came;
}

/* Consensus control after an exchange: average the gossiped estimate like
 * the parameters (a missing neighbour's weight to self), and keep for the
 * next exchange only the edges whose both ends said MORE in this one and
 * whose vector came. Returns the number of edges left. */
static int agree_next(mm__trainer *tr, bool first, double q, bool more)
{
    double a = tr->cc.a, mixed = a;
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->nbr[k].status == IN_READY)
            mixed += tr->v.in[k].weight * (tr->nbr[k].aux - a);
    mm_consensus_fold(&tr->cc, mixed, q, first);
    if (first && tr->skip)
        skip_next(tr);
    int live = 0;
    for (int k = 0; k < tr->v.n_in; k++) {
        tr->nbr[k].on = tr->nbr[k].on && more && tr->nbr[k].status == IN_READY && tr->nbr[k].more;
        live += tr->nbr[k].on;
    }
    return live;
}

/* A neighbour that says MORE to a peer without --consensus-target runs
 * another configuration: say so once (its edge gets one exchange a round). */
static void warn_more(mm__trainer *tr)
{
    for (int k = 0; k < tr->v.n_in && !tr->more_warned; k++)
        if (tr->nbr[k].status == IN_READY && tr->nbr[k].more) {
            mm_warn("peer %u asks for more exchanges (MORE): is it running --consensus-target? "
                    "This peer is not, and does one exchange a round with it", tr->v.in[k].peer);
            tr->more_warned = true;
        }
}


bool mm__control_next(mm__trainer *tr, int g, bool more)
{
    for (int k = 0; k < tr->v.n_in; k++)
        tr->nbr[k].exchanges += tr->nbr[k].on; /* what this end believes the edge had */
    double q = g == 0 ? first_exchange(tr) : NAN;
    if (!tr->adaptive) {
        if (!tr->more_warned)
            warn_more(tr);
        return true;
    }
    return agree_next(tr, g == 0, q, more) > 0;
}

void mm__control_fields(mm__trainer *tr, mm_metrics *m, mm__line where)
{
    const mm_node_config *c = tr->cfg;
    if (where == MM__LINE_START && c->gossip_schedule.n) {
        char sched[MM_STEPS_SCHEDULE_MAX * 32];
        size_t len = 0;
        for (int i = 0; i < c->gossip_schedule.n && len < sizeof sched; i++)
            len += (size_t)snprintf(sched + len, sizeof sched - len, "%s%ld:%d", i ? "," : "",
                                    c->gossip_schedule.from[i], c->gossip_schedule.steps[i]);
        mm_metrics_str(m, "gossip_schedule", sched);
    }
    if (!tr->adaptive)
        return;
    if (where == MM__LINE_START) {
        mm_metrics_num(m, "consensus_target", c->consensus_target);
        mm_metrics_int(m, "max_gossip_steps", c->max_gossip_steps);
        if (tr->skip)
            mm_metrics_num(m, "min_gossip_steps", c->min_gossip_steps);
    } else if (where == MM__LINE_ROUND) {
        if (tr->skip) {
            uint32_t *ids = tr->ids;
            int n = 0;
            for (int k = 0; k < tr->v.n_in; k++)
                if (tr->nbr[k].first_status == IN_OFF)
                    ids[n++] = tr->v.in[k].peer;
            mm_metrics_ids(m, "skipped", ids, n);
        }
        mm_metrics_int(m, "want", tr->want);
        /* after this round's q: the next decision's */
        mm_metrics_num(m, "xi_est", mm_consensus_estimate(&tr->cc));
        mm_metrics_num(m, "gamma", tr->cc.gamma);
        mm_metrics_obj_begin(m, "nbr_exchanges");
        for (int k = 0; k < tr->v.n_in; k++)
            mm_metrics_obj_num(m, tr->v.in[k].peer, tr->nbr[k].exchanges);
        mm_metrics_obj_end(m);
    }
}

void mm__control_describe(const mm__trainer *tr, char *buf, size_t len)
{
    buf[0] = 0;
    if (tr->adaptive)
        snprintf(buf, len, " | exchanges %d (wanted %d, Xi est %.3e)", tr->exchanges, tr->want,
                 mm_consensus_estimate(&tr->cc));
    else if (tr->exchanges > 1)
        snprintf(buf, len, " | exchanges %d", tr->exchanges);
}
