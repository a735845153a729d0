/* The training thread: one round at a time. A round has one shape for
 * every algorithm that exchanges vectors (the algorithm table of
 * node/algo.h fills in each step):
 *
 *   1. send: copy a snapshot s of our parameters into a mailbox buffer and
 *      hand it to the loop, which sends it to this round's out-neighbours;
 *   2. meanwhile compute H local optimizer steps on x (x becomes x + delta);
 *   3. gather the in-neighbours' vectors of this exchange (waiting, bounded,
 *      in the synchronous algorithms: mm__round_wait);
 *   4. mix: x <- mix(s, neighbours) + delta; release what was lent.
 *
 * A round may have several exchanges (consensus_control.c); all-reduce
 * runs a round of its own (algo_allreduce.c). Here: the round's neighbours,
 * its exchanges, the loop over rounds with evaluations, snapshots and
 * checkpoints. Everything this thread learns about the network comes
 * through the mailbox (node/mailbox.h). */
#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/finite.h"
#include "base/clock.h"
#include "base/log.h"
#include "node/algo.h"
#include "node/elastic.h"
#include "node/trainer.h"

void mm__round_phase(mm__trainer *tr, mm__phase next)
{
    /* snapshot -> compute -> wait -> mix -> (next exchange) snapshot */
    assert((next == PH_SNAPSHOT && (tr->ph == PH_IDLE || tr->ph == PH_MIX)) ||
           (next == PH_COMPUTE && tr->ph == PH_SNAPSHOT) ||
           (next == PH_WAIT && tr->ph == PH_COMPUTE) ||
           (next == PH_MIX && tr->ph == PH_WAIT) || next == PH_IDLE);
    tr->ph = next;
}

/* ---- the round's neighbours ------------------------------------------------- */

static void want_round(mm__trainer *tr, long round)
{
    /* This round's and the next round's neighbours, so that time-varying
     * topologies find their next connections already open. */
    int n = 0;
    for (int k = 0; k < tr->v.n_in; k++) tr->ids[n++] = tr->v.in[k].peer;
    for (int k = 0; k < tr->v.n_out; k++) tr->ids[n++] = tr->v.out[k].peer;
    uint32_t tag;
    if (mm__view_round(tr, (uint64_t)round + 1, &tr->next, &tag) == 0) {
        for (int k = 0; k < tr->next.n_in; k++) tr->ids[n++] = tr->next.in[k].peer;
        for (int k = 0; k < tr->next.n_out; k++) tr->ids[n++] = tr->next.out[k].peer;
    }
    if (tr->elastic) /* the other side of a partition, now and then */
        n += (int)mm__elastic_probes(tr->el, (uint64_t)round, tr->ids + n,
                                     4 * tr->n + 4 - (uint32_t)n); /* (the room of tr->ids) */
    int m = 0; /* dedupe: degrees are small */
    for (int i = 0; i < n; i++) {
        int dup = tr->ids[i] == tr->id;
        for (int j = 0; j < m && !dup; j++)
            dup = tr->ids[j] == tr->ids[i];
        if (!dup)
            tr->ids[m++] = tr->ids[i];
    }
    mm__mbox_want(tr->mb, tr->ids, m);
}

/* Synchronous algorithms (fast_forward): when every in-neighbour of this round has already sent a
 * vector of a later round, they have all moved past us (we were slow, or we
 * restarted from an older checkpoint): jump to the earliest of their rounds
 * instead of mixing with nobody round after round. A later vector from a
 * peer that is not our partner this round proves nothing: in a time-varying
 * graph it may simply be early. Returns the round to run. */
static long fast_forward(mm__trainer *tr, long round)
{
    uint64_t g = tr->stride;
    long target = -1;
    for (int k = 0; k < tr->v.n_in; k++) {
        mm__peer_view pv;
        if (tr->elastic) /* (a late donor's state is no round of its) */
            mm__view_drop_states(tr, tr->v.in[k].peer);
        mm__mbox_peer(tr->mb, tr->v.in[k].peer, &pv);
        long r = pv.has_vector ? (long)(pv.exchange / g) : -1;
        if (r <= round)
            return round;
        if (target < 0 || r < target)
            target = r;
    }
    if (target <= round)
        return round;
    mm_info("neighbours are at round %ld: skipping from round %ld", target, round);
    return target;
}

/* Whether a neighbour is not worth waiting for: reported down or gone
 * (unless it has never been up and peers are still starting). */
static bool written_off(const mm__trainer *tr, uint32_t p, const mm__peer_view *pv)
{
    bool starting = (!pv->ever_up && mm_time_now() < tr->start_deadline) ||
                    mm__view_fresh(tr, p, pv); /* (a new edge of an elastic run) */
    return (pv->state == MM__PEER_GONE || pv->state == MM__PEER_DOWN) && !starting;
}

void mm__round_wait(mm__trainer *tr, uint64_t e, mm__take_fn *take, mm__drop_fn *drop)
{
    /* --deadline learn, --fit-work (node/pace.h): the wait its rule says */
    double deadline = mm_time_now() + (tr->pace ? mm__pace_wait_begin(tr, e)
                                                : tr->cfg->round_timeout_ms / 1000.0);
    /* While peers are starting, wait for those never seen up as long as
     * the start timeout allows. */
    for (int k = 0; k < tr->v.n_in + tr->v.n_out; k++) {
        uint32_t p = k < tr->v.n_in ? tr->v.in[k].peer : tr->v.out[k - tr->v.n_in].peer;
        mm__peer_view pv;
        mm__mbox_peer(tr->mb, p, &pv);
        if (!pv.ever_up && tr->start_deadline > deadline)
            deadline = tr->start_deadline;
    }
    for (;;) {
        uint64_t gen = mm__mbox_generation(tr->mb);
        int waiting = 0;
        bool released = false;
        for (int k = 0; k < tr->v.n_in; k++) {
            if (tr->nbr[k].status != IN_WAITING)
                continue;
            uint32_t p = tr->v.in[k].peer;
            mm__peer_view pv;
            if (tr->elastic)
                mm__view_drop_states(tr, p);
            mm__mbox_peer(tr->mb, p, &pv);
            if (pv.has_vector && pv.exchange == e && tr->elastic &&
                pv.meta.view != tr->view_tag) {
                /* its view of the round differs from ours: neither end
                 * mixes the other (docs/membership.md) */
                mm__mbox_release(tr->mb, p);
                mm__elastic_mismatch(tr->el, p);
                tr->nbr[k].status = IN_MISSING;
                released = true;
            } else if (pv.has_vector && pv.exchange == e) {
                take(tr, k, &pv);
                if (tr->nbr[k].status == IN_WAITING) /* a part (CHOCO's streamed q) */
                    waiting++;
                else if (tr->pace)
                    mm__pace_arrived(tr, k, &pv);
            } else if (pv.has_vector && pv.exchange > e) {
                tr->nbr[k].status = IN_MISSING; /* it has moved on without us */
                if (tr->pace)
                    mm__pace_moved_on(tr, k);
                mm_debug("exchange %llu: peer %u already sent exchange %llu: missing",
                         (unsigned long long)e, p, (unsigned long long)pv.exchange);
            } else if (pv.has_vector) {
                if (drop) /* e.g. CHOCO: a copy must see every q, in order, mixed or not */
                    drop(tr, p, &pv);
                mm__mbox_release(tr->mb, p); /* from a round we gave up on */
                tr->stale_dropped++;
                released = true;
            } else if (written_off(tr, p, &pv)) {
                tr->nbr[k].status = IN_MISSING;
                mm_debug("exchange %llu: peer %u is %s: missing", (unsigned long long)e, p,
                         pv.state == MM__PEER_GONE ? "gone" : "down");
            } else {
                waiting++;
            }
        }
        /* Our own vector must leave too: a send still pending because its
         * peer is not up yet holds the round open (a synchronous round is
         * an exchange), unless that peer was written off. */
        for (int k = 0; k < tr->v.n_out; k++) {
            mm__peer_view pv;
            mm__mbox_peer(tr->mb, tr->v.out[k].peer, &pv);
            if (pv.send_pending && pv.pending_exchange == e &&
                !written_off(tr, tr->v.out[k].peer, &pv))
                waiting++;
        }
        if (released)
            continue; /* look again: the released peer may now send this exchange */
        if (!waiting || mm__trainer_stopping(tr) || mm_time_now() >= deadline)
            break;
        mm__mbox_wait(tr->mb, gen, deadline);
    }
    if (tr->pace)
        mm__pace_wait_end(tr); /* (before those still waiting are written off) */
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->nbr[k].status == IN_WAITING)
            tr->nbr[k].status = IN_MISSING;
}

/* --compute-jitter (testing): a delay drawn from the peer's own seeded
 * stream after every local step, as `murmur plan --jitter` models it:
 * U(0, A), or S with probability P. Slept, not computed: it stands for a
 * slower machine without taking a core from the other peers. */
static void jitter_delay(mm__trainer *tr)
{
    const mm_jitter *j = &tr->cfg->jitter;
    double u = mm_rng_uniform(&tr->jitter_rng), d = 0;
    if (j->kind == MM_JITTER_UNIFORM)
        d = j->a * u;
    else if (j->kind == MM_JITTER_LONGTAIL)
        d = u < j->p ? j->a : 0;
    tr->t_jitter += d;
    if (d > 0)
        mm_sleep(d);
}

/* One local step, and the lab's delays after it (--compute-jitter, and
 * --lab-slow / --lab-stretch: node/pace.h). */
static void local_step(mm__trainer *tr, bool jitter)
{
    bool lab = tr->cfg->lab.n > 0;
    double t0 = lab ? mm_time_now() : 0;
    if (mm__trainer_trains(tr)) {
        /* --fit-work: this round's batch (node/pace.h) */
        float loss = tr->pace ? mm__pace_step(tr) : mm_replica_step(&tr->rep, NULL);
        tr->step++;
        tr->loss_sum += loss;
        tr->loss_n++;
    }
    if (jitter)
        jitter_delay(tr);
    if (lab)
        mm__lab_delay(tr, t0);
}

/* The round's H local steps, all of them even when a signal came: the
 * round is finished (docs/node.md, Faults), so its metrics line always has
 * a loss and a resumed run never finds half a round's steps. With
 * --fit-work steps, more while the neighbours' vectors are not due. */
void mm__round_compute(mm__trainer *tr)
{
    const mm_node_config *c = tr->cfg;
    bool jitter = c->jitter.kind != MM_JITTER_NONE;
    if (!mm__trainer_trains(tr) && !jitter && !c->lab.n)
        return;
    for (int h = 0; h < c->local_steps; h++)
        local_step(tr, jitter);
    if (tr->pace) {
        mm__pace_ready(tr);
        while (mm__pace_more_steps(tr) && !mm__trainer_stopping(tr))
            local_step(tr, jitter);
    }
}

/* One exchange: send, (compute), gather, mix, release, with the neighbours
 * nbr[].on names (all but where consensus control dropped an edge); more
 * sets MORE in what we send. Returns -1 when stopping before anything was
 * sent, or when the parameters cannot be encoded (exit status 1). */
static int exchange(mm__trainer *tr, uint64_t e, bool with_compute, bool more)
{
    const mm__algo *a = tr->algo;
    double t0 = mm_time_now();
    mm__round_phase(tr, PH_SNAPSHOT);
    int b = mm__mbox_acquire(tr->mb);
    if (b < 0) {
        mm__round_phase(tr, PH_IDLE);
        return -1;
    }
    double t1 = mm_time_now();
    float *s = mm__mbox_buf(tr->mb, b);
    if (a->send(tr, b, e, more) != 0) {
        mm__round_phase(tr, PH_IDLE);
        tr->exit_status = MM_EXIT_ERROR;
        return -1;
    }
    double t2 = mm_time_now();
    mm__round_phase(tr, PH_COMPUTE);
    if (with_compute)
        mm__round_compute(tr);
    double t3 = mm_time_now();
    mm__round_phase(tr, PH_WAIT);
    for (int k = 0; k < tr->v.n_in; k++) {
        tr->nbr[k].status = tr->nbr[k].on ? IN_WAITING : IN_OFF;
        tr->nbr[k].more = false;
    }
    a->gather(tr, e);
    double t4 = mm_time_now();
    mm__round_phase(tr, PH_MIX);
    if (tr->pace) /* --fit-work steps: the progress scaled by H / steps */
        mm__pace_before_mix(tr, s);
    a->mix(tr, s);
    if (a->release)
        a->release(tr);
    double t5 = mm_time_now();
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->nbr[k].status == IN_READY)
            mm__isolation_mixed(tr->iso, tr->v.in[k].peer, t5);
    tr->t_wait += (t1 - t0) + (t4 - t3);
    tr->t_comm += (t2 - t1) + (t5 - t4);
    tr->t_compute += t3 - t2;
    return 0;
}

/* The exchanges of a round (consensus_control.c: how many, with whom):
 * -1 when stopping (the round is abandoned), else 0. */
static int exchanges(mm__trainer *tr)
{
    want_round(tr, tr->round);
    mm__isolation_round(tr->iso, &tr->v);
    int G = mm__control_round(tr);
    tr->exchanges = 0;
    if (G == 0) { /* every edge skips this round (consensus control): the local steps alone */
        double t0 = mm_time_now();
        mm__round_compute(tr);
        tr->t_compute += mm_time_now() - t0;
    }
    for (int g = 0; g < G; g++) {
        bool more = mm__control_more(tr, g, G);
        if (exchange(tr, (uint64_t)tr->round * tr->stride + (uint64_t)g,
                     g == 0 && !tr->algo->steps_first, more) != 0)
            return -1;
        tr->exchanges++;
        if (!mm__control_next(tr, g, more))
            break;
    }
    return 0;
}

/* One round: its exchanges (or the algorithm's own round), its metrics
 * line. -1 when stopping (the round is abandoned), 1 when the round was
 * skipped by fast-forward, -2 when the algorithm's round failed (the run
 * ends; round_error says why). */
static int run_round(mm__trainer *tr)
{
    const mm_node_config *c = tr->cfg;
    const mm__algo *a = tr->algo;
    if (a->fast_forward && !tr->skip) { /* skipping, neighbours may be rounds ahead */
        long r = fast_forward(tr, tr->round);
        if (r != tr->round) {
            tr->round = r;
            return 1; /* the new round has other neighbours */
        }
    }
    tr->loss_sum = 0;
    tr->loss_n = 0;
    if (tr->pace)
        mm__pace_round_begin(tr);
    float lr = tr->have_model ? mm_adamw_lr(&c->train.adamw, tr->rep.opt.step) : 0;
    if (a->steps_first) {
        double t0 = mm_time_now();
        mm__round_compute(tr);
        tr->t_compute += mm_time_now() - t0;
    }
    if (a->round_begin)
        a->round_begin(tr);
    int r = a->round ? a->round(tr) : exchanges(tr);
    if (r != 0)
        return r;
    if (a->round_end)
        a->round_end(tr);
    if (tr->pace)
        mm__pace_round_end(tr);
    mm__lines_round(tr, tr->loss_n ? tr->loss_sum / tr->loss_n : NAN, lr);
    return 0;
}

bool mm__eval_due(const mm_node_config *c, long round)
{
    if (c->eval_every <= 0 || round % c->eval_every != 0)
        return false;
    /* the k-th multiple of E, kept when k is a multiple of s, s growing
     * tenfold with every 1000 evaluations' worth of k */
    long k = round / c->eval_every, s = 1;
    while (k / s >= 1000 && s <= LONG_MAX / 10)
        s *= 10;
    return k % s == 0;
}

void mm__trainer_run(mm__trainer *tr, mm__mbox *mb)
{
    const mm_node_config *c = tr->cfg;
    tr->mb = mb;
    tr->t_start = mm_time_now();
    tr->start_deadline = tr->t_start + c->start_timeout_ms / 1000.0;
    mm__isolation_start(tr->iso, tr->t_start);
    if (tr->elastic && c->join) { /* its table, its round, its donors' state */
        int rc = mm__view_join(tr);
        if (rc != 0 || mm__trainer_stopping(tr)) {
            tr->exit_status = rc;
            mm__lines_start(tr);
            mm__lines_end(tr, rc ? "join" : "signal");
            mm__mbox_finish(mb);
            return;
        }
        /* (no start grace after a join: the members are up, and a
         * neighbour that never connects is a new edge's business, waited
         * for at most --suspect-ms: node/view.c) */
        tr->start_deadline = mm_time_now();
    }
    mm__lines_start(tr);
    if (tr->round == 0 && c->eval_every > 0)
        mm__trainer_evaluate(tr);
    if (tr->round == 0 && c->snapshot_every > 0)
        mm__trainer_snapshot(tr);

    bool checkpoint_failed = false, params_lost = false;
    while (tr->round < c->rounds && !mm__trainer_stopping(tr)) {
        if (tr->elastic && !mm__view_begin_round(tr))
            break; /* it left */
        uint32_t tag;
        if (mm__view_round(tr, (uint64_t)tr->round, &tr->v, &tag) != 0) {
            mm_error("topology has no round %ld for peer %u", tr->round, tr->id);
            tr->exit_status = MM_EXIT_ERROR;
            break;
        }
        int r = run_round(tr);
        if (r == -2) {
            /* The algorithm's round failed (all-reduce: a peer that is gone
             * ends the run for everyone). x holds an unaveraged round: no
             * checkpoint of it (the last one is kept), and an exit status
             * that says so, unless this peer was being stopped anyway. */
            char kept[128];
            mm_error("round %ld: %s; stopping, %s", tr->round, tr->round_error,
                     mm__trainer_kept(tr, kept, sizeof kept));
            if (!mm__trainer_stopping(tr))
                tr->exit_status = MM_EXIT_ERROR;
            break;
        }
        if (r < 0)
            break; /* stopping: this round is abandoned */
        if (r > 0)
            continue;
        if (mm__isolation_check(tr->iso, tr->mb, mm_time_now()))
            mm__lines_isolated(tr);
        /* The wire refuses NaN/Inf, but a finite vector of absurd norm
         * mixed in (without --clip-pull) can still overflow the model. Such
         * a replica is lost: stop before a checkpoint overwrites the last
         * good one and before our vectors are refused by every neighbour. */
        uint64_t bad_at;
        if (!mm_all_finite(tr->x, tr->P, &bad_at)) {
            char kept[128];
            mm_error("round %ld: parameter %" PRIu64 " of %zu is NaN or Inf after mixing and the "
                     "update (a neighbour's vector of absurd norm? see --clip-pull); stopping, "
                     "%s", tr->round, bad_at, tr->P, mm__trainer_kept(tr, kept, sizeof kept));
            tr->exit_status = MM_EXIT_ERROR;
            params_lost = true;
            break;
        }
        tr->round++;
        if (mm__eval_due(c, tr->round))
            mm__trainer_evaluate(tr);
        if (c->snapshot_every > 0 && tr->round % c->snapshot_every == 0)
            mm__trainer_snapshot(tr);
        if (c->checkpoint_every > 0 && tr->round % c->checkpoint_every == 0)
            checkpoint_failed = mm__trainer_checkpoint(tr) != 0;
    }
    mm__round_phase(tr, PH_IDLE);

    /* an algorithm's failed round ends with the algorithm's name as reason */
    bool round_failed = tr->round_error[0] != 0;
    if (!params_lost && !round_failed && c->eval_every > 0 && !mm__eval_due(c, tr->round))
        mm__trainer_evaluate(tr);
    if (!params_lost && !round_failed && mm__trainer_checkpoint(tr) != 0)
        checkpoint_failed = true;
    mm__lines_end(tr, params_lost ? "nonfinite" : round_failed ? mm_algo_name(tr->algo->id)
                     : tr->left ? "left" : mm__trainer_stopping(tr) ? "signal" : "done");
    if (checkpoint_failed && !tr->exit_status)
        tr->exit_status = MM_EXIT_ERROR;
    mm__mbox_finish(mb);
}
