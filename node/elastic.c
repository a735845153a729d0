/* node/elastic.h: the membership table shared by the peer's two threads.
 * The rules are member/'s (docs/membership.md); here is who calls them
 * when, what goes on the wire, and the limits a member's table must keep
 * to. */
#include "node/elastic.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"

/* What one connection may change in our table (docs/membership.md, "Who
 * may change what"): a budget of FLOOD_BURST changed records, refilled at
 * FLOOD_RATE a second. A table that would change more than is left is
 * refused whole, unmerged, and its connection with it (view_flood): a
 * partition that heals changes many records at once, churn a few a
 * second; a flood is neither. */
#define FLOOD_BURST 256.0
#define FLOOD_RATE 16.0
/* --test-poison view-flood (test-only): fake joins a table carries */
#define FLOOD_FAKES 8
/* A table goes to a neighbour whose tag differs at most this often (s). */
#define SYNC_EVERY 1.0

struct mm__elastic {
    pthread_mutex_t mu;
    const mm_node_config *cfg;
    uint32_t self, cap;
    uv_async_t *wake;
    char own_addr[MM_MEMBER_ADDR_MAX + 1];
    mm_members *table, *scratch;        /* scratch: a received table (loop thread) */
    uint8_t *enc;                       /* an encoded table (loop thread) */
    size_t enc_cap;
    uint64_t round;                     /* the training thread's, a sponsor's "now" */
    bool dirty;                         /* the table changed: flood it */
    bool *addr_known;                   /* [cap] the transport has its address */
    bool *want_sync;                    /* [cap] send it our table */
    double *sync_at;                    /* [cap] when we last did for a tag mismatch */
    double *rate_t0;                    /* [cap] when its budget was last refilled */
    double *budget;                     /* [cap] records it may still change */
    mm_members *trial;                  /* a merge tried before it is made (loop thread) */
    bool flood_test;                    /* --test-poison view-flood */
    uint32_t fakes;
    uint32_t *state_parts;              /* [cap] parts of our state it asked for */
    uint32_t *ask_parts;                /* [cap] parts a joiner asks it for */
    bool *moments_sent;                 /* [cap] m went out, v is next */
    bool *sponsored;                    /* [cap] its join session's JOIN was accepted */
    bool leave_req, leaving;
    /* a joiner */
    bool joining, have_sponsor, join_refused;
    uint32_t sponsor;
    char refused_why[MM_REFUSAL_TEXT];
    mm__elastic_stats st;
};

static void lock(mm__elastic *e) { pthread_mutex_lock(&e->mu); }
static void unlock(mm__elastic *e) { pthread_mutex_unlock(&e->mu); }
static void wake(mm__elastic *e) { uv_async_send(e->wake); }

mm__elastic *mm__elastic_new(const mm_node_config *c, uint32_t self, uint32_t capacity,
                             uint32_t n_start, char *const *addrs, const char *own_addr,
                             uv_async_t *wake_handle, char *err, size_t errlen)
{
    mm__elastic *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&e->mu, NULL);
    e->cfg = c;
    e->self = self;
    e->cap = capacity;
    e->wake = wake_handle;
    e->joining = c->join != NULL;
    snprintf(e->own_addr, sizeof e->own_addr, "%s", own_addr);
    e->table = mm_members_new(capacity);
    e->scratch = mm_members_new(capacity);
    e->enc_cap = MM_MEMBERS_HEAD_LEN + (size_t)MM_MEMBERS_RECORD_LEN * capacity;
    e->enc = malloc(e->enc_cap);
    e->addr_known = calloc(capacity, sizeof *e->addr_known);
    e->want_sync = calloc(capacity, sizeof *e->want_sync);
    e->sync_at = calloc(capacity, sizeof *e->sync_at);
    e->rate_t0 = calloc(capacity, sizeof *e->rate_t0);
    e->budget = calloc(capacity, sizeof *e->budget);
    e->trial = mm_members_new(capacity);
    e->flood_test = c->test_poison && !strcmp(c->test_poison, "view-flood");
    e->state_parts = calloc(capacity, sizeof *e->state_parts);
    e->ask_parts = calloc(capacity, sizeof *e->ask_parts);
    e->moments_sent = calloc(capacity, sizeof *e->moments_sent);
    e->sponsored = calloc(capacity, sizeof *e->sponsored);
    if (!e->moments_sent || !e->sponsored || !e->table || !e->scratch || !e->enc || !e->addr_known || !e->want_sync ||
        !e->sync_at || !e->rate_t0 || !e->budget || !e->trial || !e->state_parts || !e->ask_parts) {
        snprintf(err, errlen, "out of memory for a membership table of %u ids", capacity);
        mm__elastic_free(e);
        return NULL;
    }
    /* A joiner starts from nothing: its table (its own record above all)
     * is its sponsor's; one that took the starting members from its flags
     * would count itself a member already if its id is one of theirs. */
    if (!e->joining &&
        mm_members_start(e->table, n_start, (const char *const *)addrs, err, errlen) != 0) {
        mm__elastic_free(e);
        return NULL;
    }
    return e;
}

void mm__elastic_free(mm__elastic *e)
{
    if (!e)
        return;
    mm_members_free(e->table);
    mm_members_free(e->scratch);
    free(e->enc);
    free(e->addr_known);
    free(e->want_sync);
    free(e->sync_at);
    free(e->rate_t0);
    free(e->budget);
    mm_members_free(e->trial);
    free(e->state_parts);
    free(e->ask_parts);
    free(e->moments_sent);
    free(e->sponsored);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

/* ---- loop thread ---------------------------------------------------------------- */

/* (locked) The transport learns where each member listens. */
static void addresses(mm__elastic *e, mm_transport *t)
{
    uint32_t n = mm_members_count(e->table);
    for (uint32_t i = 0; i < n; i++) {
        const mm_member *m = mm_members_at(e->table, i);
        if (m->id == e->self || e->addr_known[m->id])
            continue;
        char err[200];
        if (mm_transport_set_addr(t, m->id, m->addr, err, sizeof err) == 0)
            e->addr_known[m->id] = true;
        else
            mm_warn("member %u: %s", m->id, err);
    }
}

void mm__elastic_addresses(mm__elastic *e, mm_transport *t)
{
    lock(e);
    addresses(e, t);
    unlock(e);
}

/* (locked) Whether a table from peer is taken: a member's (any record:
 * member, member to be, or past; a past one's table still carries news of
 * others), or the sponsor's of a joiner. */
static bool may_send_table(const mm__elastic *e, uint32_t peer)
{
    return mm_members_get(e->table, peer) != NULL || (e->joining && e->have_sponsor &&
                                                      peer == e->sponsor);
}

/* (locked) A merge ended self's membership (someone suspected it, or wrote
 * a leave it did not make): a live peer refutes it, even when that end has
 * passed (docs/membership.md, "After a merge": inc + 1, the same join, so
 * it is a member again at once; a rejoin through a sponsor could find none
 * after a partition that outlasted D). */
static void refute(mm__elastic *e)
{
    const mm_member *m = mm_members_get(e->table, e->self);
    if (!m || m->kind == MM_END_NONE || e->leaving)
        return;
    uint64_t end = m->end;
    char err[200];
    mm_refute_result r = mm_members_refute(e->table, e->self, e->round, err, sizeof err);
    if (r == MM_REFUTED || r == MM_REFUTED_LATE) {
        e->st.refuted++;
        e->dirty = true;
        mm_warn("membership: this peer was %s (from round %llu): refuted, it is a member",
                r == MM_REFUTED ? "suspected" : "removed", (unsigned long long)end);
    } else if (r == MM_REFUTE_REFUSED) {
        mm_error("membership: cannot refute the end of this peer's membership: %s", err);
    }
}

void mm__elastic_on_members(mm__elastic *e, mm_transport *t, uint32_t peer, const uint8_t *p,
                            size_t len)
{
    char err[256];
    lock(e);
    e->st.tables_recv++;
    if (!may_send_table(e, peer)) {
        e->st.tables_refused++;
        unlock(e);
        mm_warn("membership: a table from peer %u, which is no member: ignored", peer);
        return;
    }
    if (mm_members_decode(e->scratch, p, len, err, sizeof err) != 0) {
        e->st.tables_refused++;
        unlock(e);
        mm_warn("membership: a table from peer %u refused: %s", peer, err);
        return;
    }
    /* the merge is tried on a copy first: a flood is refused before any
     * of it reaches our table */
    mm_members_merge_stats ms;
    if (mm_members_copy(e->trial, e->table) != 0 ||
        mm_members_merge(e->trial, e->scratch, e->self, &ms) < 0) {
        e->st.tables_refused++;
        unlock(e);
        mm_warn("membership: a table from peer %u holds ids beyond --max-peers %u", peer,
                e->cap);
        return;
    }
    double now = mm_time_now();
    if (e->rate_t0[peer] == 0)
        e->budget[peer] = FLOOD_BURST;
    else
        e->budget[peer] += (now - e->rate_t0[peer]) * FLOOD_RATE;
    if (e->budget[peer] > FLOOD_BURST)
        e->budget[peer] = FLOOD_BURST;
    e->rate_t0[peer] = now;
    if (ms.changed > e->budget[peer]) {
        e->st.tables_refused++;
        unlock(e);
        mm_warn("membership: peer %u's table would change %u records, more than it may now "
                "(view flood): refused", peer, ms.changed);
        mm_transport_refuse_flood(t, peer, "view flood: more membership changes than a member "
                                  "may make (docs/membership.md)");
        return;
    }
    e->budget[peer] -= ms.changed;
    mm_members *merged = e->trial; /* the tried merge becomes the table */
    e->trial = e->table;
    e->table = merged;
    e->st.records_changed += ms.changed;
    e->st.view_conflicts += ms.conflicts;
    if (ms.changed) {
        e->dirty = true;
        addresses(e, t);
    }
    if (ms.self_ended)
        refute(e);
    if (ms.self_superseded)
        mm_error("membership: another process took this peer's id %u (a higher incarnation "
                 "from peer %u's table)", e->self, peer);
    unlock(e);
    if (ms.changed)
        wake(e);
}

void mm__elastic_on_join(mm__elastic *e, mm_transport *t, uint32_t peer, const char *addr,
                         const uint8_t cert[32])
{
    char err[200];
    lock(e);
    uint64_t now = e->round;
    mm_change_result r = mm_members_join(e->table, peer, addr, cert, now,
                                         (uint64_t)e->cfg->view_delay, err, sizeof err);
    const mm_member *m = mm_members_get(e->table, peer);
    uint64_t join = m ? m->join : 0;
    if (r == MM_REFUSED)
        e->st.joins_refused++;
    else {
        e->st.joins_sponsored++;
        e->sponsored[peer] = true;
        e->dirty = true;
        addresses(e, t);
    }
    unlock(e);
    if (r == MM_REFUSED) {
        mm_warn("membership: refused the join of peer %u at %s: %s", peer, addr, err);
        mm_transport_refuse_join(t, peer, err);
        return;
    }
    mm_info("membership: sponsoring peer %u (%s): a member from round %llu", peer, addr,
            (unsigned long long)join);
    wake(e);
}

void mm__elastic_on_state_req(mm__elastic *e, uint32_t peer, uint32_t parts)
{
    lock(e);
    e->state_parts[peer] |= parts;
    unlock(e);
}

void mm__elastic_on_refused(mm__elastic *e, const mm_refusal *r)
{
    if (r->code != MM_REFUSAL_JOIN || !r->by_peer)
        return;
    lock(e);
    if (e->joining && !mm_members_get(e->table, e->self)) {
        e->join_refused = true;
        snprintf(e->refused_why, sizeof e->refused_why, "%s", r->text);
    }
    unlock(e);
}

void mm__elastic_on_up(mm__elastic *e, mm_transport *t, uint32_t peer)
{
    lock(e);
    e->want_sync[peer] = true;
    bool send_join = e->joining && !e->have_sponsor && mm_transport_is_join_session(t, peer);
    if (send_join) {
        e->have_sponsor = true;
        e->sponsor = peer;
    }
    unlock(e);
    if (send_join) {
        mm_info("membership: joining through peer %u, listening at %s", peer, e->own_addr);
        mm_transport_send_join(t, peer, e->own_addr);
    }
    wake(e);
}

/* (locked) Our table to peer. */
static void send_table(mm__elastic *e, mm_transport *t, uint32_t peer, size_t len)
{
    if (mm_transport_send_members(t, peer, e->enc, len) == 0)
        e->st.tables_sent++;
}

/* (locked; test-only, --test-poison view-flood) A member gone bad: to
 * every connection, a table with FLOOD_FAKES more joins of ids nobody
 * certified, far ahead (they never take effect in a test's run). */
static void flood(mm__elastic *e, mm_transport *t)
{
    if (mm_members_copy(e->trial, e->table) != 0)
        return;
    char err[200];
    /* each table moves every fake join earlier: FLOOD_FAKES new records a
     * table, then as many changed ones, for ever */
    e->fakes++;
    uint64_t delay = 1000000000ULL - 1000ULL * e->fakes;
    for (uint32_t k = 0; k < FLOOD_FAKES * e->fakes && k < e->cap / 2; k++)
        mm_members_join(e->trial, e->cap - 1 - k, "127.0.0.1:9", NULL, e->round, delay, err,
                        sizeof err);
    size_t len = mm_members_encode(e->trial, e->enc, e->enc_cap);
    for (uint32_t p = 0; p < e->cap && len; p++)
        if (mm_transport_is_up(t, p))
            mm_transport_send_members(t, p, e->enc, len);
}

void mm__elastic_flush(mm__elastic *e, mm_transport *t)
{
    lock(e);
    /* a joiner sends nothing of its table before it is in it: what it has
     * is its sponsor's, and a non-member's table is not taken anyway */
    bool member = mm_members_get(e->table, e->self) != NULL;
    size_t len = member ? mm_members_encode(e->table, e->enc, e->enc_cap) : 0;
    for (uint32_t p = 0; p < e->cap && len; p++) {
        /* only to peers with a record: a joiner's session gets the table
         * once its join was accepted (before, the table would tell it of
         * another peer with its id, or of none) */
        bool known = mm_members_get(e->table, p) != NULL &&
                     (!mm_transport_is_join_session(t, p) || e->sponsored[p]);
        if ((e->dirty || e->want_sync[p]) && known && mm_transport_is_up(t, p))
            send_table(e, t, p, len);
        if (known && mm_transport_is_up(t, p))
            e->want_sync[p] = false;
    }
    if (len)
        e->dirty = false;
    if (e->flood_test && member)
        flood(e, t);
    for (uint32_t p = 0; p < e->cap; p++)
        if (e->ask_parts[p] && mm_transport_is_up(t, p) &&
            mm_transport_send_state_req(t, p, e->ask_parts[p]) == 0)
            e->ask_parts[p] = 0;
    unlock(e);
}

/* ---- training thread ------------------------------------------------------------ */

uint32_t mm__elastic_view(mm__elastic *e, uint64_t round, uint32_t *ids, uint32_t *tag)
{
    lock(e);
    e->round = round;
    uint32_t n = mm_members_view(e->table, round, ids, tag);
    unlock(e);
    return n;
}

uint32_t mm__elastic_changes(mm__elastic *e, uint64_t round, mm_member_change *out, uint32_t max)
{
    lock(e);
    uint32_t n = mm_members_changes(e->table, round, out, max);
    unlock(e);
    return n;
}

uint64_t mm__elastic_next_change(mm__elastic *e, uint64_t round)
{
    lock(e);
    uint64_t r = mm_members_next_change(e->table, round);
    unlock(e);
    return r;
}

uint32_t mm__elastic_probes(mm__elastic *e, uint64_t round, uint32_t *ids, uint32_t max)
{
    if ((round / 25) % 4 != 0)
        return 0;
    uint32_t k = 0;
    lock(e);
    uint32_t n = mm_members_count(e->table);
    for (uint32_t i = 0; i < n && k < max; i++) {
        const mm_member *m = mm_members_at(e->table, i);
        if (m->id != e->self && m->kind == MM_END_REMOVED && m->end <= round)
            ids[k++] = m->id;
    }
    unlock(e);
    return k;
}

void mm__elastic_mismatch(mm__elastic *e, uint32_t peer)
{
    double now = mm_time_now();
    bool sync = false;
    lock(e);
    e->st.view_mismatch++;
    if (peer < e->cap && now - e->sync_at[peer] >= SYNC_EVERY) {
        e->sync_at[peer] = now;
        e->want_sync[peer] = sync = true;
    }
    unlock(e);
    if (sync)
        wake(e);
}

bool mm__elastic_suspect(mm__elastic *e, uint32_t peer, uint64_t round)
{
    char err[200];
    lock(e);
    mm_change_result r = mm_members_suspect(e->table, peer, round, (uint64_t)e->cfg->view_delay,
                                            err, sizeof err);
    if (r == MM_CHANGED) {
        e->st.suspected++;
        e->dirty = true;
    }
    unlock(e);
    if (r == MM_CHANGED)
        wake(e);
    return r == MM_CHANGED;
}

int mm__elastic_leave(mm__elastic *e, uint64_t round, uint64_t *end)
{
    char err[200];
    lock(e);
    mm_change_result r = mm_members_leave(e->table, e->self, round,
                                          (uint64_t)e->cfg->view_delay, err, sizeof err);
    const mm_member *m = mm_members_get(e->table, e->self);
    if (m)
        *end = m->end;
    if (r == MM_CHANGED)
        e->dirty = true;
    if (r != MM_REFUSED)
        e->leaving = true;
    unlock(e);
    if (r == MM_REFUSED) {
        mm_warn("membership: cannot leave: %s", err);
        return -1;
    }
    wake(e);
    return 0;
}

bool mm__elastic_self(mm__elastic *e, mm_member *out)
{
    lock(e);
    const mm_member *m = mm_members_get(e->table, e->self);
    if (m)
        *out = *m;
    unlock(e);
    return m != NULL;
}

void mm__elastic_recover(mm__elastic *e, uint64_t round)
{
    lock(e);
    e->round = round;
    bool was = e->dirty;
    refute(e);
    bool now = e->dirty && !was;
    unlock(e);
    if (now)
        wake(e);
}

bool mm__elastic_state_next(mm__elastic *e, uint32_t *peer, uint32_t *part)
{
    bool found = false;
    lock(e);
    for (uint32_t p = 0; p < e->cap && !found; p++) {
        uint32_t w = e->state_parts[p];
        if (!w)
            continue;
        found = true;
        *peer = p;
        if (w & MM_STATE_PARAMS) {
            *part = MM_STATE_PART_PARAMS;
            e->state_parts[p] &= ~MM_STATE_PARAMS;
        } else { /* the moments: m, then v */
            *part = e->moments_sent[p] ? MM_STATE_PART_V : MM_STATE_PART_M;
            e->moments_sent[p] = !e->moments_sent[p];
            if (!e->moments_sent[p])
                e->state_parts[p] &= ~MM_STATE_MOMENTS;
        }
    }
    unlock(e);
    return found;
}

void mm__elastic_request_leave(mm__elastic *e)
{
    lock(e);
    e->leave_req = true;
    unlock(e);
}

bool mm__elastic_leave_requested(mm__elastic *e)
{
    lock(e);
    bool r = e->leave_req;
    unlock(e);
    return r;
}

void mm__elastic_ask_states(mm__elastic *e, const uint32_t *peers, uint32_t n, uint32_t parts)
{
    lock(e);
    for (uint32_t i = 0; i < n; i++)
        if (peers[i] < e->cap && peers[i] != e->self)
            e->ask_parts[peers[i]] |= parts;
    unlock(e);
    wake(e);
}

bool mm__elastic_sponsor(mm__elastic *e, uint32_t *sponsor)
{
    lock(e);
    bool have = e->have_sponsor;
    *sponsor = e->sponsor;
    unlock(e);
    return have;
}

bool mm__elastic_join_refused(mm__elastic *e, char *buf, size_t len)
{
    lock(e);
    bool r = e->join_refused;
    snprintf(buf, len, "%s", e->refused_why);
    unlock(e);
    return r;
}

void mm__elastic_count_states(mm__elastic *e, uint64_t sent, uint64_t recv)
{
    lock(e);
    e->st.states_sent += sent;
    e->st.states_recv += recv;
    unlock(e);
}

void mm__elastic_get_stats(mm__elastic *e, mm__elastic_stats *out)
{
    lock(e);
    *out = e->st;
    unlock(e);
}

void mm__elastic_fields(mm__elastic *e, mm_metrics *m)
{
    mm__elastic_stats s;
    mm__elastic_get_stats(e, &s);
#define F(name) mm_metrics_int(m, #name, (long long)s.name)
    F(tables_recv);
    F(tables_sent);
    F(records_changed);
    F(view_conflicts);
    F(joins_sponsored);
    F(joins_refused);
    F(tables_refused);
    F(suspected);
    F(refuted);
    F(view_mismatch);
    F(states_sent);
    F(states_recv);
#undef F
}
