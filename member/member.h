/* The membership table of an elastic run (docs/membership.md): one record
 * per peer id that was ever a member, the view of a round and its tag, the
 * merge of two tables (a join-semilattice: commutative, associative,
 * idempotent), the four local changes (join, leave, suspect, refute), and
 * the table's bytes on the wire (docs/protocol.md 7.1).
 *
 * Pure logic: no socket, loop, thread, clock, TLS or BLAS. A round is a
 * number the caller passes; "now" is the caller's current round. One table
 * belongs to one thread; functions that take a const table never write to
 * it, so several threads may read a table that nobody changes meanwhile.
 *
 * Costs: every function is O(records) or better (O(K + records) for a
 * merge of K records, a decode of K), with records <= capacity. Only
 * mm_members_new allocates; the caller passes the arrays (a view's ids, a
 * round's changes). The tag hashes through base/sha256.h (libcrypto). */
#ifndef MURMUR_MEMBER_H
#define MURMUR_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MM_MEMBERS_CAPACITY_MAX 65536u /* the largest --max-peers: 8 MiB on the wire */
#define MM_MEMBER_ADDR_MAX 64          /* bytes of "host:port", without a NUL */
#define MM_MEMBER_CERT_LEN 32          /* SHA-256 of the certificate (DER) */
#define MM_MEMBER_END_NONE UINT64_MAX  /* end: not ending */
#define MM_MEMBER_LEAVE_DELAY_MAX 4    /* a leave takes effect min(D, 4) rounds ahead */
#define MM_MEMBERS_HEAD_LEN 8          /* wire: u32 count, u32 reserved */
#define MM_MEMBERS_RECORD_LEN 128      /* wire: one record */
#define MM_MEMBERS_NO_SELF UINT32_MAX  /* mm_members_merge's self: none */

/* Why a membership ends (the wire's kind byte). At equal ends a removal
 * wins over a leave. */
typedef enum {
    MM_END_NONE = 0,
    MM_END_LEFT = 1,    /* it said so (SIGTERM) */
    MM_END_REMOVED = 2, /* suspected and not refuted */
} mm_end_kind;

typedef struct {
    uint32_t id;
    uint32_t inc;   /* incarnation: +1 at each rejoin or refutation */
    uint64_t join;  /* the first round in which it is a member */
    uint64_t end;   /* the first round in which it no longer is; MM_MEMBER_END_NONE */
    uint8_t kind;   /* mm_end_kind: MM_END_NONE exactly when end is none */
    uint8_t addr_len;                   /* 1..MM_MEMBER_ADDR_MAX */
    char addr[MM_MEMBER_ADDR_MAX + 1];  /* "host:port", zero-padded, NUL-terminated */
    uint8_t cert[MM_MEMBER_CERT_LEN];   /* all 0: unknown or plaintext */
} mm_member;

typedef struct mm_members mm_members;

/* ---- the table --------------------------------------------------------------- */

/* An empty table for ids 0 .. capacity-1 (1..MM_MEMBERS_CAPACITY_MAX; else
 * NULL, as when out of memory). */
mm_members *mm_members_new(uint32_t capacity);
void mm_members_free(mm_members *t);
uint32_t mm_members_capacity(const mm_members *t);
/* Records held (members, past members and members to be). */
uint32_t mm_members_count(const mm_members *t);
/* The i-th record in ascending id order, i < count. */
const mm_member *mm_members_at(const mm_members *t, uint32_t i);
/* The record of id, or NULL when the table has none (or id >= capacity). */
const mm_member *mm_members_get(const mm_members *t, uint32_t id);

/* The starting members: the table becomes records {id, inc 0, join 0, end
 * none, addrs[id], cert 0} for ids 0..n-1, the same on every peer. 0, or
 * -1 with why in err (n is 0 or above the capacity, an address is not
 * printable "host:port" of 1..64 bytes), the table unchanged. */
int mm_members_start(mm_members *t, uint32_t n, const char *const *addrs, char *err,
                     size_t errlen);

/* dst becomes a copy of src. 0, or -1 (dst unchanged) when src holds an id
 * at or above dst's capacity. */
int mm_members_copy(mm_members *dst, const mm_members *src);
/* The same records, field by field (capacities may differ). */
bool mm_members_equal(const mm_members *a, const mm_members *b);

/* ---- the view of a round ---------------------------------------------------- */

/* view(R) = { id : join <= R < end }, ascending, into ids (room for
 * mm_members_count entries; NULL: not wanted), and its tag into *tag (NULL:
 * not wanted): the first four bytes, little-endian, of SHA-256 over
 * "murmur-view-v1" and u32 id, u32 inc of each member in ascending order,
 * 0 taken as 1 (docs/membership.md). Returns the number of members. */
uint32_t mm_members_view(const mm_members *t, uint64_t round, uint32_t *ids, uint32_t *tag);
bool mm_members_is_member(const mm_members *t, uint32_t id, uint64_t round);
/* The first round after `round` whose view differs from view(round) (a
 * record's join or end), or MM_MEMBER_END_NONE when the table schedules
 * none: the node connects to that round's neighbours ahead of it. */
uint64_t mm_members_next_change(const mm_members *t, uint64_t round);

/* What takes effect at a round: an id whose join is that round (joined), or
 * whose end is (left, removed). A record has at most one change a round. */
typedef enum { MM_CHANGE_JOINED = 1, MM_CHANGE_LEFT = 2, MM_CHANGE_REMOVED = 3 } mm_change_kind;
typedef struct {
    uint32_t id;
    uint32_t inc;
    uint8_t what; /* mm_change_kind */
} mm_member_change;
/* The changes of `round`, ascending by id, the first max into out (NULL
 * when max is 0). Returns how many there are (more than max: some were not
 * written). */
uint32_t mm_members_changes(const mm_members *t, uint64_t round, mm_member_change *out,
                            uint32_t max);

/* ---- merging ------------------------------------------------------------------ */

typedef struct {
    uint32_t changed;   /* records of dst that changed, new ones included */
    uint32_t added;     /* of them, ids dst held no record of */
    uint32_t conflicts; /* same id and inc, another addr or cert (view_conflict) */
    /* Of self's record (MM_MEMBERS_NO_SELF: none). superseded: it was
     * replaced by a higher incarnation (self did not make it: a rejoin
     * sponsored for its id, or its own earlier life); ended: at the same
     * incarnation, an end was set or moved earlier (someone suspected it,
     * or wrote a leave for it). What the peer does then: docs/membership.md,
     * "After a merge". */
    bool self_superseded;
    bool self_ended;
} mm_members_merge_stats;

/* dst = dst merged with src, record by record (docs/membership.md): the
 * higher inc wins whole; at the same inc, the earlier join, the earlier end
 * with its kind (removed over left at equal ends), and of two (addr, cert)
 * the lower bytes (a conflict). Returns the number of records that changed
 * (st->changed), or -1 when src holds an id at or above dst's capacity
 * (dst unchanged). st may be NULL. */
int mm_members_merge(mm_members *dst, const mm_members *src, uint32_t self,
                     mm_members_merge_stats *st);

/* ---- local changes, D rounds ahead of the caller's round `now` ------------------ */

typedef enum {
    MM_REFUSED = -1,  /* nothing changed; err says why */
    MM_CHANGED = 0,   /* the table changed: flood it */
    MM_UNCHANGED = 1, /* already so: nothing to send */
} mm_change_result;

/* A sponsor (or the peer itself, rejoining) adds id: {id, inc, join = now +
 * delay, end none, addr, cert (NULL: 0)}, inc 0 for an id without a record,
 * the old inc + 1 for one whose membership has ended (end <= now). Refused:
 * an id still a member or yet to join (end > now), id >= capacity, a bad
 * address, delay 0, an incarnation at its largest value. */
mm_change_result mm_members_join(mm_members *t, uint32_t id, const char *addr,
                                 const uint8_t *cert, uint64_t now, uint64_t delay, char *err,
                                 size_t errlen);
/* self leaves: end = now + min(delay, 4), kind left (at least join + 1: a
 * peer that leaves before its first round is a member for that one round).
 * Unchanged when its end is already there or earlier; refused when self is
 * not a member nor a member to be (no record, end <= now), or delay 0. */
mm_change_result mm_members_leave(mm_members *t, uint32_t self, uint64_t now, uint64_t delay,
                                  char *err, size_t errlen);
/* A member suspects id: end = now + delay, kind removed. Unchanged when its
 * end is already there or earlier; refused when id is not a member at now
 * (no record, join > now) or delay 0. */
mm_change_result mm_members_suspect(mm_members *t, uint32_t id, uint64_t now, uint64_t delay,
                                    char *err, size_t errlen);

typedef enum {
    MM_REFUTE_REFUSED = -1,   /* no record of self, or its inc at its largest: err */
    MM_REFUTED = 0,           /* inc + 1, end none, the same join: no gap */
    MM_REFUTED_LATE = 1,      /* the same, but the end had passed (end <= now): self was
                                 out of the others' views from that round on */
    MM_NOTHING_TO_REFUTE = 2, /* self's record does not end */
} mm_refute_result;
/* self refutes the end someone else gave it (docs/membership.md, "After a
 * merge": a leaving peer does not call it). */
mm_refute_result mm_members_refute(mm_members *t, uint32_t self, uint64_t now, char *err,
                                   size_t errlen);

/* ---- the wire (docs/protocol.md 7.1) ------------------------------------------ */

/* MM_MEMBERS_HEAD_LEN + MM_MEMBERS_RECORD_LEN per record. */
size_t mm_members_encoded_len(const mm_members *t);
/* The MEMBERS payload into out; its length, or 0 when cap is too small. */
size_t mm_members_encode(const mm_members *t, uint8_t *out, size_t cap);
/* A received payload into t (its capacity bounds the ids and the count),
 * every byte checked. 0 (t holds exactly the payload's records), or -1 with
 * what is wrong in err and t unchanged. */
int mm_members_decode(mm_members *t, const uint8_t *p, size_t len, char *err, size_t errlen);

#endif
