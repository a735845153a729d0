/* The training thread's side of an elastic run (docs/membership.md,
 * docs/node.md "Elastic runs"): the neighbours of a round from the family
 * over that round's members, what happens at the start of each round
 * (the view's metrics line, failure detection, a leave, a membership that
 * ended), the state it serves to joiners, and a joiner's own start. A
 * static run only passes through mm__view_round to its topology. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "node/algo_outer.h"
#include "node/elastic.h"
#include "node/trainer.h"

/* The family over the members of one view: its tag, its members (rank i
 * is ids[i]) and its graph. Two are kept, this round's and the next's, so
 * that a change does not rebuild one at every call. */
typedef struct mm__view_inst {
    uint32_t tag, n;
    uint32_t *ids;
    mm_topology *topo;
    uint64_t used;
} mm__view_inst;

int mm__view_alloc(mm__trainer *tr)
{
    tr->view_ids = calloc(tr->n, sizeof *tr->view_ids);
    tr->inst = calloc(2, sizeof *tr->inst);
    tr->rank_buf = calloc(2 * (size_t)tr->n, sizeof *tr->rank_buf);
    tr->down_since = calloc(tr->n, sizeof *tr->down_since);
    tr->first_wanted = calloc(tr->n, sizeof *tr->first_wanted);
    tr->fresh_ups = calloc(tr->n, sizeof *tr->fresh_ups);
    tr->fresh_until = calloc(tr->n, sizeof *tr->fresh_until);
    tr->nbr_last = malloc(tr->n * sizeof *tr->nbr_last);
    if (!tr->view_ids || !tr->inst || !tr->rank_buf || !tr->down_since || !tr->first_wanted ||
        !tr->fresh_ups || !tr->fresh_until || !tr->nbr_last)
        return -1;
    for (uint32_t p = 0; p < tr->n; p++)
        tr->nbr_last[p] = -1;
    for (int i = 0; i < 2; i++)
        if (!(tr->inst[i].ids = calloc(tr->n, sizeof *tr->inst[i].ids)))
            return -1;
    return 0;
}

void mm__view_free(mm__trainer *tr)
{
    if (tr->inst)
        for (int i = 0; i < 2; i++) {
            free(tr->inst[i].ids);
            mm_topo_free(tr->inst[i].topo);
        }
    free(tr->inst);
    free(tr->view_ids);
    free(tr->rank_buf);
    free(tr->down_since);
    free(tr->first_wanted);
    free(tr->fresh_ups);
    free(tr->fresh_until);
    free(tr->nbr_last);
}

/* The instance for the view of ids[0..n) with tag: kept, or made in the
 * slot used longest ago. NULL when the family cannot be made (logged). */
static mm__view_inst *instance(mm__trainer *tr, const uint32_t *ids, uint32_t n, uint32_t tag)
{
    static uint64_t clock;
    mm__view_inst *a = &tr->inst[0], *b = &tr->inst[1];
    for (mm__view_inst *x = a; x <= b; x++)
        if (x->topo && x->tag == tag && x->n == n && !memcmp(x->ids, ids, n * sizeof *ids)) {
            x->used = ++clock;
            return x;
        }
    mm__view_inst *slot = !a->topo ? a : !b->topo ? b : a->used < b->used ? a : b;
    char err[256];
    mm_topology *t = mm_topo_instantiate(tr->topo, (int)n, err, sizeof err);
    if (!t) {
        mm_error("membership: the family over %u members: %s", n, err);
        return NULL;
    }
    mm_topo_free(slot->topo);
    slot->topo = t;
    slot->tag = tag;
    slot->n = n;
    memcpy(slot->ids, ids, n * sizeof *ids);
    slot->used = ++clock;
    return slot;
}

/* The rank of id among ids[0..n) (ascending), or -1. */
static int rank_of(const uint32_t *ids, uint32_t n, uint32_t id)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ids[lo] == id ? (int)lo : -1;
}

int mm__view_round(mm__trainer *tr, uint64_t round, mm_round_view *v, uint32_t *tag)
{
    if (!tr->elastic) {
        *tag = 0;
        return mm_topo_round(tr->topo, tr->id, round, v);
    }
    uint32_t n = mm__elastic_view(tr->el, round, tr->view_ids, tag);
    v->n_in = v->n_out = 0;
    v->self_weight = 1;
    int r = rank_of(tr->view_ids, n, tr->id);
    if (r < 0 || n < 2)
        return 0; /* not a member this round, or alone: no neighbours */
    mm__view_inst *in = instance(tr, tr->view_ids, n, *tag);
    if (!in)
        return -1;
    mm_round_view rv = {.in = tr->rank_buf, .out = tr->rank_buf + tr->n};
    if (mm_topo_round(in->topo, (uint32_t)r, round, &rv) != 0)
        return -1;
    v->self_weight = rv.self_weight;
    v->n_in = rv.n_in;
    v->n_out = rv.n_out;
    for (int k = 0; k < rv.n_in; k++)
        v->in[k] = (mm_neighbour){.peer = in->ids[rv.in[k].peer], .weight = rv.in[k].weight};
    for (int k = 0; k < rv.n_out; k++)
        v->out[k] = (mm_neighbour){.peer = in->ids[rv.out[k].peer], .weight = rv.out[k].weight};
    return 0;
}

/* ---- the start of a round --------------------------------------------------------- */

/* The view changed at this round: a `view` metrics line and a log line. */
static void view_changed(mm__trainer *tr, uint32_t n, uint32_t tag)
{
    mm_member_change ch[64];
    uint32_t k = mm__elastic_changes(tr->el, (uint64_t)tr->round, ch, 64);
    mm__lines_view(tr, tr->view_ids, n, tag, ch, k < 64 ? k : 64);
    char words[256] = "";
    size_t len = 0;
    for (uint32_t i = 0; i < k && i < 64 && len < sizeof words - 32; i++)
        len += (size_t)snprintf(words + len, sizeof words - len, "%s%u %s", i ? ", " : "",
                                ch[i].id, ch[i].what == MM_CHANGE_JOINED ? "joined"
                                          : ch[i].what == MM_CHANGE_LEFT ? "left" : "removed");
    mm_info("membership: round %ld: %u members (view %08x)%s%s", tr->round, n, tag,
            k ? ": " : "", words);
}

/* A neighbour not up for --suspect-ms (one never up with us: for
 * --start-timeout after it became a neighbour) is suspected. */
static void detect(mm__trainer *tr, const mm_round_view *v)
{
    double now = mm_time_now();
    const mm_node_config *c = tr->cfg;
    for (int k = 0; k < v->n_in + v->n_out; k++) {
        uint32_t p = k < v->n_in ? v->in[k].peer : v->out[k - v->n_in].peer;
        mm__peer_view pv;
        mm__mbox_peer(tr->mb, p, &pv);
        if (pv.state == MM__PEER_UP) {
            tr->down_since[p] = 0;
            continue;
        }
        double *since = pv.ever_up ? &tr->down_since[p] : &tr->first_wanted[p];
        if (*since == 0) {
            *since = now;
            continue;
        }
        /* one never up with us gets --start-timeout while the run starts,
         * --suspect-ms after */
        double limit = pv.ever_up || now >= tr->start_deadline
                           ? c->suspect_ms / 1000.0
                           : fmax(c->suspect_ms, c->start_timeout_ms) / 1000.0;
        if (now - *since >= limit && (pv.ever_up || now >= tr->start_deadline) &&
            mm__elastic_suspect(tr->el, p, (uint64_t)tr->round)) {
            mm_warn("membership: peer %u %s for %.1f s: suspected, its removal takes effect "
                    "at round %ld unless it answers", p, pv.ever_up ? "down" : "never connected",
                    now - *since, tr->round + c->view_delay);
            *since = now; /* (suspected once; again only if it answers and goes) */
        }
    }
}

/* Each round: a neighbour that was none the round before and whose link
 * is not up now is new: waited for until its link comes up once
 * (mm__view_fresh), for at most --suspect-ms after it became one (a link
 * comes up in milliseconds; a longer grace made a peer wait a round
 * time-out per round for a new neighbour that had crashed, and its other
 * neighbours time out on it: an asymmetric mix, found by the churn
 * campaign). A neighbour of the round before whose link broke is not: it
 * is written off as in a static run, and suspected. */
static void mark_fresh(mm__trainer *tr, const mm_round_view *v)
{
    double now = mm_time_now();
    double grace = tr->cfg->suspect_ms / 1000.0;
    for (int k = 0; k < v->n_in + v->n_out; k++) {
        uint32_t p = k < v->n_in ? v->in[k].peer : v->out[k - v->n_in].peer;
        bool was = tr->nbr_last[p] >= 0 && tr->nbr_last[p] >= tr->round - 1;
        tr->nbr_last[p] = tr->round;
        mm__peer_view pv;
        mm__mbox_peer(tr->mb, p, &pv);
        if (was || pv.state == MM__PEER_UP)
            continue;
        tr->fresh_ups[p] = pv.ups;
        tr->fresh_until[p] = now + grace;
    }
}

bool mm__view_fresh(const mm__trainer *tr, uint32_t p, const mm__peer_view *pv)
{
    return tr->elastic && p < tr->n && pv->ups == tr->fresh_ups[p] &&
           mm_time_now() < tr->fresh_until[p];
}

bool mm__view_begin_round(mm__trainer *tr)
{
    if (!tr->elastic)
        return true;
    if (tr->leaving && (uint64_t)tr->round >= tr->leave_end) {
        tr->left = true;
        return false;
    }
    if (mm__elastic_leave_requested(tr->el) && !tr->leaving) {
        uint64_t end;
        if (mm__elastic_leave(tr->el, (uint64_t)tr->round, &end) == 0) {
            tr->leaving = true;
            tr->leave_end = end;
            mm_info("leaving: announced, a member until round %llu (exclusive), then exiting "
                    "(a second signal exits at once)", (unsigned long long)end);
        } else {
            mm__mbox_signal(tr->mb); /* not a member: stop as a static peer does */
        }
    }
    mm_member me;
    if (mm__elastic_self(tr->el, &me) && !tr->leaving && me.end != MM_MEMBER_END_NONE)
        mm__elastic_recover(tr->el, (uint64_t)tr->round);
    uint32_t tag;
    if (mm__view_round(tr, (uint64_t)tr->round, &tr->v, &tag) != 0)
        return true; /* (logged; the run loop reports it) */
    uint32_t n = mm__elastic_view(tr->el, (uint64_t)tr->round, tr->view_ids, &tag);
    if (tag != tr->view_tag || n != tr->view_n) {
        /* the first change of membership ends the start's grace: a
         * neighbour never up with us is a new edge from then on (waited
         * for at most --suspect-ms), not a peer still starting (waited for
         * up to --start-timeout, every round: its other neighbours timed
         * out on us meanwhile) */
        if (tr->view_n != 0)
            tr->start_deadline = fmin(tr->start_deadline, mm_time_now());
        view_changed(tr, n, tag);
    }
    mark_fresh(tr, &tr->v);
    tr->view_tag = tag;
    tr->view_n = n;
    detect(tr, &tr->v);
    mm__view_serve_states(tr);
    return true;
}

/* ---- state for joiners -------------------------------------------------------------- */

/* What part k of our state is (MM_STATE_PART_*): the parameters, or the
 * optimizer's moments (zeros without a model). */
static const float *state_part(mm__trainer *tr, int part)
{
    if (part == MM_STATE_PART_PARAMS)
        return tr->x;
    if (!tr->have_model)
        return NULL;
    return part == MM_STATE_PART_M ? tr->rep.opt.m : tr->rep.opt.v;
}

void mm__view_serve_states(mm__trainer *tr)
{
    uint32_t peer, part;
    /* one part a round: a second send to one peer would replace the first
     * in the mailbox's one slot per peer */
    if (!mm__elastic_state_next(tr->el, &peer, &part))
        return;
    const float *src = state_part(tr, (int)part);
    int b = src ? mm__mbox_acquire(tr->mb) : -1;
    if (b < 0)
        return;
    uint64_t e = (uint64_t)tr->round * tr->stride;
    memcpy(mm__mbox_buf(tr->mb, b), src, tr->P * sizeof(float));
    mm__mbox_publish(tr->mb, b, e);
    mm_wire_vec meta = {.weight = 1, .codec = MM_WIRE_CODEC_FP32, .flags = MM_VEC_STATE,
                        .aux = part, .count = tr->P, .view = tr->view_tag};
    mm__mbox_send(tr->mb, peer, e, b, &meta, tr->P * sizeof(float));
    mm__elastic_count_states(tr->el, 1, 0);
    mm_info("membership: sent our %s to peer %u", part == MM_STATE_PART_PARAMS ? "parameters"
                                                  : part == MM_STATE_PART_M ? "first moments"
                                                                            : "second moments",
            peer);
}

void mm__view_drop_states(mm__trainer *tr, uint32_t peer)
{
    mm__peer_view pv;
    for (int i = 0; i < 8; i++) {
        mm__mbox_peer(tr->mb, peer, &pv);
        if (!pv.has_vector || !(pv.meta.flags & MM_VEC_STATE))
            return;
        mm__mbox_release(tr->mb, peer);
    }
}

/* ---- a joiner ----------------------------------------------------------------------- */

#define MAX_DONORS 3
/* How long a joiner collects donors after the first answered. */
#define DONOR_GRACE 1.5

static void nap(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Waits for self's record from the sponsor: 0 with *join, or an exit status. */
static int await_record(mm__trainer *tr, double deadline, uint64_t *join)
{
    char why[MM_REFUSAL_TEXT];
    mm_member me;
    for (;;) {
        if (mm__elastic_self(tr->el, &me) && me.end == MM_MEMBER_END_NONE) {
            *join = me.join;
            return 0;
        }
        if (mm__elastic_join_refused(tr->el, why, sizeof why)) {
            snprintf(tr->round_error, sizeof tr->round_error, "%s", why);
            mm_error("%s", why);
            return MM_EXIT_JOIN;
        }
        if (mm__trainer_stopping(tr))
            return MM_EXIT_OK;
        if (mm_time_now() >= deadline) {
            uint32_t s;
            snprintf(tr->round_error, sizeof tr->round_error, "join: %s within --start-timeout "
                     "(%d ms)", mm__elastic_sponsor(tr->el, &s) ? "the sponsor sent no table"
                                                                 : "no member answered at --join",
                     tr->cfg->start_timeout_ms);
            mm_error("%s", tr->round_error);
            return MM_EXIT_JOIN;
        }
        nap(0.02);
    }
}

/* The donors: the sponsor, then the joiner's in-neighbours of its first
 * round, at most MAX_DONORS, ascending. */
static uint32_t donors(mm__trainer *tr, uint64_t join, uint32_t *out)
{
    uint32_t n = 0, s, tag;
    if (mm__elastic_sponsor(tr->el, &s))
        out[n++] = s;
    if (mm__view_round(tr, join, &tr->v, &tag) == 0)
        for (int k = 0; k < tr->v.n_in && n < MAX_DONORS; k++)
            if (tr->v.in[k].peer != s)
                out[n++] = tr->v.in[k].peer;
    return n;
}

int mm__view_join(mm__trainer *tr)
{
    const mm_node_config *c = tr->cfg;
    double deadline = mm_time_now() + c->start_timeout_ms / 1000.0;
    uint64_t join = 0;
    int rc = await_record(tr, deadline, &join);
    if (rc != 0 || mm__trainer_stopping(tr))
        return rc;
    uint32_t d[MAX_DONORS];
    uint32_t nd = donors(tr, join, d);
    bool moments = c->join_moments && tr->have_model;
    uint32_t parts = MM_STATE_PARAMS | (moments ? MM_STATE_MOMENTS : 0);
    int want_parts = moments ? 3 : 1;
    mm__mbox_want(tr->mb, d, (int)nd);
    mm__elastic_ask_states(tr->el, d, nd, parts);
    mm_info("membership: a member from round %llu; asking %u donor%s for their state",
            (unsigned long long)join, nd, nd == 1 ? "" : "s");
    /* collect: part k of donor i into sums (in donor order, so that the
     * same answers give the same bits) */
    float *sum[3] = {NULL, NULL, NULL};
    int got[MAX_DONORS] = {0}, complete = 0, held_short = 0;
    /* A donor's vector of the join round or later (it is our neighbour
     * there, and sent it as soon as the round began) is the round's, not
     * state: it stays in the mailbox for that round (released here, the
     * donor mixed ours and moved on while we wrote it off: an asymmetric
     * mix). Its STATE, on the same connection, came before it if at all. */
    bool held[MAX_DONORS] = {false};
    uint64_t first_exchange = join * tr->stride;
    double first = 0;
    for (int k = 0; k < want_parts; k++)
        if (!(sum[k] = calloc(tr->P, sizeof(float)))) {
            rc = MM_EXIT_ERROR;
            goto out;
        }
    while (complete + held_short < (int)nd && mm_time_now() < deadline &&
           !mm__trainer_stopping(tr) && !(complete > 0 && mm_time_now() - first >= DONOR_GRACE)) {
        uint64_t gen = mm__mbox_generation(tr->mb);
        bool any = false;
        for (uint32_t i = 0; i < nd; i++) {
            mm__peer_view pv;
            if (held[i])
                continue;
            mm__mbox_peer(tr->mb, d[i], &pv);
            if (!pv.has_vector)
                continue;
            if (!(pv.meta.flags & MM_VEC_STATE) && pv.exchange >= first_exchange) {
                held[i] = true;
                held_short += got[i] != (1 << want_parts) - 1;
                continue;
            }
            any = true;
            int part = (int)pv.meta.aux;
            if ((pv.meta.flags & MM_VEC_STATE) && part < want_parts && !(got[i] & (1 << part)) &&
                pv.body_len == tr->P * sizeof(float)) {
                const float *src = pv.body;
                for (size_t j = 0; j < tr->P; j++)
                    sum[part][j] += src[j];
                got[i] |= 1 << part;
                if (got[i] == (1 << want_parts) - 1) {
                    complete++;
                    if (complete == 1)
                        first = mm_time_now();
                }
            }
            mm__mbox_release(tr->mb, d[i]);
        }
        if (!any)
            mm__mbox_wait(tr->mb, gen, fmin(deadline, mm_time_now() + 0.1));
    }
    mm__elastic_count_states(tr->el, 0, (uint64_t)complete * (uint64_t)want_parts);
    if (complete == 0) {
        snprintf(tr->round_error, sizeof tr->round_error, "join: none of the %u donors sent its "
                 "state within --start-timeout (%d ms)", nd, c->start_timeout_ms);
        mm_error("%s", tr->round_error);
        rc = MM_EXIT_JOIN;
        goto out;
    }
    /* x = the donors' mean; with --join-moments the moments too (else they
     * stay 0: fresh, docs/node.md "A joiner's state") */
    for (int k = 0; k < want_parts; k++) {
        float *dst = k == 0 ? tr->x : k == 1 ? tr->rep.opt.m : tr->rep.opt.v;
        float inv = 1.0f / (float)complete;
        for (size_t j = 0; j < tr->P; j++)
            dst[j] = sum[k][j] * inv;
    }
    if (tr->outer) { /* the outer optimizer starts over from the donors' mean */
        mm_ckpt_state st = {0};
        mm__outer_ckpt(tr->outer, &st);
        memcpy(st.outer.x, tr->x, tr->P * sizeof(float));
        memset(st.outer.m, 0, tr->P * sizeof(float));
    }
    tr->round = (long)join;
    tr->step = (long)join * c->local_steps;
    if (tr->have_model)
        tr->rep.opt.step = tr->step; /* the learning rate's place in its schedule */
    tr->joined_round = (long)join;
    mm_info("membership: joined: state averaged over %d donor%s%s, starting at round %llu", complete,
            complete == 1 ? "" : "s", moments ? " (parameters and moments)" : " (fresh moments)",
            (unsigned long long)join);
out:
    for (int k = 0; k < 3; k++)
        free(sum[k]);
    return rc;
}
