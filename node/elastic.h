/* Elastic membership in the peer (docs/membership.md): the membership table
 * (member/member.h) shared by the peer's two threads, and what each does
 * with it. The loop thread receives tables, joins and state requests from
 * the transport and floods changes; the training thread reads the view of
 * each round, suspects silent neighbours, leaves, and answers state
 * requests with STATE vectors. The table and everything here are guarded
 * by one mutex inside; the loop is woken with the peer's async handle.
 * Internal to node/ (the mm__ prefix). */
#ifndef MURMUR_ELASTIC_H
#define MURMUR_ELASTIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/metrics.h"
#include "member/member.h"
#include "net/transport.h"
#include "node/node.h"

typedef struct mm__elastic mm__elastic;

/* What the end line and the metrics endpoint show (docs/metrics.md). */
typedef struct {
    uint64_t tables_recv;      /* MEMBERS frames taken */
    uint64_t tables_sent;
    uint64_t records_changed;  /* records a merge changed */
    uint64_t view_conflicts;   /* same id and incarnation, another address or certificate */
    uint64_t joins_sponsored;  /* joiners this peer added */
    uint64_t joins_refused;    /* ... and refused (id a live member's, bad address) */
    uint64_t tables_refused;   /* tables from outside the membership, floods, bad bytes */
    uint64_t suspected;        /* removals this peer scheduled */
    uint64_t refuted;          /* suspicions of itself it refuted */
    uint64_t view_mismatch;    /* neighbours' vectors not mixed: their view of the round differs */
    uint64_t states_sent, states_recv;
} mm__elastic_stats;

/* The table of an elastic run for peer self: capacity ids (--max-peers),
 * the starting members 0..n_start-1 at addrs (a joiner starts empty and
 * takes its sponsor's table). wake: the loop's async handle. NULL with
 * err. */
mm__elastic *mm__elastic_new(const mm_node_config *c, uint32_t self, uint32_t capacity,
                             uint32_t n_start, char *const *addrs, const char *own_addr,
                             uv_async_t *wake, char *err, size_t errlen);
void mm__elastic_free(mm__elastic *e);

/* ---- loop thread (node.c) ---- */

/* Sets the transport's address of every member known so far (at start,
 * and after each merge). */
void mm__elastic_addresses(mm__elastic *e, mm_transport *t);
void mm__elastic_on_members(mm__elastic *e, mm_transport *t, uint32_t peer, const uint8_t *p,
                            size_t len);
void mm__elastic_on_join(mm__elastic *e, mm_transport *t, uint32_t peer, const char *addr,
                         const uint8_t cert[32]);
void mm__elastic_on_state_req(mm__elastic *e, uint32_t peer, uint32_t parts);
/* A refusal the transport saw: a joiner's refused join is remembered. */
void mm__elastic_on_refused(mm__elastic *e, const mm_refusal *r);
/* A connection came up: the whole table goes to it (anti-entropy); a
 * joiner's join session sends its JOIN. */
void mm__elastic_on_up(mm__elastic *e, mm_transport *t, uint32_t peer);
/* On every wake: floods a changed table, sends the tables the training
 * thread asked for, and a joiner's state requests. */
void mm__elastic_flush(mm__elastic *e, mm_transport *t);

/* ---- training thread ---- */

/* view(round): the members into ids (room for the capacity), its tag into
 * *tag; records the round as the peer's current one (a sponsor's "now").
 * Returns the number of members. */
uint32_t mm__elastic_view(mm__elastic *e, uint64_t round, uint32_t *ids, uint32_t *tag);
uint32_t mm__elastic_changes(mm__elastic *e, uint64_t round, mm_member_change *out, uint32_t max);
/* The first round after round whose view differs (MM_MEMBER_END_NONE: none). */
uint64_t mm__elastic_next_change(mm__elastic *e, uint64_t round);
/* A neighbour's vector carried another tag than ours: the two views of the
 * round differ. Counted; our table goes to it (at most once a second). */
void mm__elastic_mismatch(mm__elastic *e, uint32_t peer);
/* Schedules peer's removal (docs/membership.md, "Failure detection"):
 * true when the table changed (it is flooded). */
bool mm__elastic_suspect(mm__elastic *e, uint32_t peer, uint64_t round);
/* This peer leaves: its end round into *end. 0, or -1 (not a member). */
int mm__elastic_leave(mm__elastic *e, uint64_t round, uint64_t *end);
/* Self's record (false: none yet: a joiner before its sponsor's table). */
bool mm__elastic_self(mm__elastic *e, mm_member *out);
/* Self's membership was ended by someone else (a suspicion, passed or
 * not): refute it (docs/membership.md, "After a merge"). The loop does it
 * as a table arrives; the training thread calls it at each round too. */
void mm__elastic_recover(mm__elastic *e, uint64_t round);
/* Peers the table marks as removed (not left): a quarter of the time (25
 * rounds of every 100) they are wanted, so that the two sides of a
 * partition that outlasted D meet again and merge (docs/membership.md,
 * "After a merge"). Their ids into ids (at most max); returns how many. */
uint32_t mm__elastic_probes(mm__elastic *e, uint64_t round, uint32_t *ids, uint32_t max);
/* One part of our state a peer asked for (MM_STATE_PART_*), taken off
 * the list: false when none is wanted. */
bool mm__elastic_state_next(mm__elastic *e, uint32_t *peer, uint32_t *part);
/* A signal asked this peer to leave (loop thread: request; training
 * thread: see). */
void mm__elastic_request_leave(mm__elastic *e);
bool mm__elastic_leave_requested(mm__elastic *e);
/* A joiner asks these members for their state (sent when each is up). */
void mm__elastic_ask_states(mm__elastic *e, const uint32_t *peers, uint32_t n, uint32_t parts);
/* The peer it joined through (false: none answered yet). */
bool mm__elastic_sponsor(mm__elastic *e, uint32_t *sponsor);
/* The join was refused (its reason in buf); false while it was not. */
bool mm__elastic_join_refused(mm__elastic *e, char *buf, size_t len);
void mm__elastic_count_states(mm__elastic *e, uint64_t sent, uint64_t recv);
void mm__elastic_get_stats(mm__elastic *e, mm__elastic_stats *out);
/* The end line's keys (docs/metrics.md). */
void mm__elastic_fields(mm__elastic *e, mm_metrics *m);

#endif
