/* The membership table (member/member.h, docs/membership.md): the merge's
 * three laws on random tables and each of its rules on hand-built records;
 * the tag against bytes built here and hashed with base/sha256 and against
 * the fixed examples of docs/membership.md; view(R) at its boundaries, the
 * next change and a round's changes; every local change and its refusals;
 * the races of docs/membership.md as scenarios; the MEMBERS payload's round
 * trip and every refusal of its decoder. tests/test_members_sim.c runs a
 * simulated cluster on the same rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/rng.h"
#include "base/sha256.h"
#include "member/member.h"

#define CAP 16
#define D 10 /* the view delay of the scenarios */

static char errbuf[512];
#define ERR errbuf, sizeof errbuf

/* "10.0.0.ID:26000" (the addresses of the tables below). */
static const char *addr_of(uint32_t id)
{
    static char a[CAP][32];
    snprintf(a[id % CAP], sizeof a[0], "10.0.0.%u:26000", id);
    return a[id % CAP];
}

/* A table of capacity CAP with the starting members 0..n-1. */
static mm_members *started(uint32_t n)
{
    const char *addrs[CAP];
    for (uint32_t i = 0; i < n; i++)
        addrs[i] = addr_of(i);
    mm_members *t = mm_members_new(CAP);
    assert_non_null(t);
    assert_int_equal(mm_members_start(t, n, addrs, ERR), 0);
    return t;
}

static mm_members *clone(const mm_members *t)
{
    mm_members *c = mm_members_new(mm_members_capacity(t));
    assert_non_null(c);
    assert_int_equal(mm_members_copy(c, t), 0);
    return c;
}

/* a merged with b, into a new table. */
static mm_members *merged(const mm_members *a, const mm_members *b)
{
    mm_members *m = clone(a);
    assert_true(mm_members_merge(m, b, MM_MEMBERS_NO_SELF, NULL) >= 0);
    return m;
}

/* Every table below goes through the wire once: what the decoder builds is
 * what the peers will merge. */
static mm_members *wire(const mm_members *t)
{
    size_t len = mm_members_encoded_len(t);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(mm_members_encode(t, buf, len), len);
    mm_members *d = mm_members_new(mm_members_capacity(t));
    assert_non_null(d);
    if (mm_members_decode(d, buf, len, ERR) != 0)
        fail_msg("decode of an encoded table: %s", errbuf);
    free(buf);
    return d;
}

/* ---- the merge's laws on random tables ------------------------------------ */

/* One record's 128 bytes (docs/protocol.md 7.1), written here field by
 * field, not by the encoder under test. */
static void record_bytes(uint8_t *p, uint32_t id, uint32_t inc, uint64_t join, uint64_t end,
                         uint8_t kind, const char *addr, uint8_t cert_byte)
{
    memset(p, 0, MM_MEMBERS_RECORD_LEN);
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(id >> (8 * i));
        p[4 + i] = (uint8_t)(inc >> (8 * i));
    }
    for (int i = 0; i < 8; i++) {
        p[8 + i] = (uint8_t)(join >> (8 * i));
        p[16 + i] = (uint8_t)(end >> (8 * i));
    }
    p[24] = kind;
    p[26] = (uint8_t)strlen(addr);
    memset(p + 32, cert_byte, 32);
    memcpy(p + 64, addr, strlen(addr));
}

/* A random table: each id present with probability 1/2, inc 0..2, join
 * 0..5, end none or 1..4 rounds after join, left or removed, one of two
 * addresses and two certificates (so conflicts happen). Built through the
 * wire's decoder, the only way records other than the local changes' come
 * into a table. */
static mm_members *random_table(mm_rng *r)
{
    uint8_t buf[MM_MEMBERS_HEAD_LEN + CAP * MM_MEMBERS_RECORD_LEN];
    memset(buf, 0, sizeof buf);
    uint32_t k = 0;
    for (uint32_t id = 0; id < CAP; id++) {
        if (mm_rng_below(r, 2))
            continue;
        uint64_t join = mm_rng_below(r, 6), end = UINT64_MAX;
        uint8_t kind = 0;
        if (mm_rng_below(r, 2)) {
            end = join + 1 + mm_rng_below(r, 4);
            kind = (uint8_t)(1 + mm_rng_below(r, 2));
        }
        uint32_t inc = (uint32_t)mm_rng_below(r, 3);
        char a[32];
        snprintf(a, sizeof a, "h%u:%u", id, 1 + (unsigned)mm_rng_below(r, 2));
        record_bytes(buf + MM_MEMBERS_HEAD_LEN + k++ * MM_MEMBERS_RECORD_LEN, id, inc, join, end,
                     kind, a, (uint8_t)mm_rng_below(r, 2));
    }
    buf[0] = (uint8_t)k;
    mm_members *t = mm_members_new(CAP);
    assert_non_null(t);
    if (mm_members_decode(t, buf, MM_MEMBERS_HEAD_LEN + k * MM_MEMBERS_RECORD_LEN, ERR) != 0)
        fail_msg("random table refused: %s", errbuf);
    return t;
}

static void merge_laws_on_random_tables(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 35);
    int conflicts = 0, changed_both = 0;
    for (int trial = 0; trial < 3000; trial++) {
        mm_members *a = random_table(&r), *b = random_table(&r), *c = random_table(&r);
        mm_members *ab = merged(a, b), *ba = merged(b, a);
        assert_true(mm_members_equal(ab, ba)); /* commutative */
        mm_members *ab_c = merged(ab, c), *bc = merged(b, c), *a_bc = merged(a, bc);
        assert_true(mm_members_equal(ab_c, a_bc)); /* associative */
        mm_members *aa = merged(a, a);
        assert_true(mm_members_equal(aa, a)); /* idempotent */
        /* ... and an upper bound that merging again does not move */
        mm_members_merge_stats st;
        assert_int_equal(mm_members_merge(ab, a, MM_MEMBERS_NO_SELF, &st), 0);
        assert_int_equal(mm_members_merge(ab, b, MM_MEMBERS_NO_SELF, &st), 0);
        assert_int_equal(st.changed, 0);
        mm_members *x = clone(a);
        mm_members_merge(x, b, MM_MEMBERS_NO_SELF, &st);
        conflicts += st.conflicts > 0;
        changed_both += st.changed > 0 && !mm_members_equal(x, b);
        assert_true(st.added <= st.changed);
        mm_members *tables[] = {a, b, c, ab, ba, ab_c, bc, a_bc, aa, x};
        for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
            mm_members_free(tables[i]);
    }
    /* the trials reached the rules that matter */
    assert_true(conflicts > 100);
    assert_true(changed_both > 100);
}

/* ---- each merge rule on hand-built records --------------------------------- */

/* One record into t through the wire, as a peer would send it. */
static void put_record(mm_members *t, uint32_t id, uint32_t inc, uint64_t join, uint64_t end,
                       uint8_t kind, const char *addr, uint8_t cert_byte)
{
    mm_members *one = mm_members_new(CAP);
    uint8_t buf[MM_MEMBERS_HEAD_LEN + MM_MEMBERS_RECORD_LEN] = {1};
    record_bytes(buf + MM_MEMBERS_HEAD_LEN, id, inc, join, end, kind, addr, cert_byte);
    if (mm_members_decode(one, buf, sizeof buf, ERR) != 0)
        fail_msg("record refused: %s", errbuf);
    assert_true(mm_members_merge(t, one, MM_MEMBERS_NO_SELF, NULL) >= 0);
    mm_members_free(one);
}

static void merge_rules(void **state)
{
    (void)state;
    const uint64_t NONE = MM_MEMBER_END_NONE;
    mm_members *a = mm_members_new(CAP), *b = mm_members_new(CAP);
    /* 1: the higher inc wins whole, even with a later join and an end */
    put_record(a, 1, 0, 0, NONE, MM_END_NONE, "a:1", 0);
    put_record(b, 1, 1, 7, 9, MM_END_REMOVED, "b:1", 5);
    /* 2: the same inc: min join, min end with its kind */
    put_record(a, 2, 3, 4, 20, MM_END_LEFT, "c:1", 0);
    put_record(b, 2, 3, 2, 12, MM_END_REMOVED, "c:1", 0);
    put_record(a, 3, 0, 1, 8, MM_END_REMOVED, "d:1", 0);
    put_record(b, 3, 0, 3, NONE, MM_END_NONE, "d:1", 0);
    /* equal ends: removed over left, whichever side has it */
    put_record(a, 4, 0, 0, 5, MM_END_LEFT, "e:1", 0);
    put_record(b, 4, 0, 0, 5, MM_END_REMOVED, "e:1", 0);
    put_record(a, 5, 0, 0, 5, MM_END_REMOVED, "f:1", 0);
    put_record(b, 5, 0, 0, 5, MM_END_LEFT, "f:1", 0);
    /* conflicts: lower (addr, cert) bytes win: the address first ... */
    put_record(a, 6, 0, 0, NONE, MM_END_NONE, "g:2", 0);
    put_record(b, 6, 0, 0, NONE, MM_END_NONE, "g:10", 9);
    /* ... then the certificate */
    put_record(a, 7, 0, 0, NONE, MM_END_NONE, "h:1", 3);
    put_record(b, 7, 0, 0, NONE, MM_END_NONE, "h:1", 2);
    /* a shorter address is a prefix padded with 0: lower */
    put_record(a, 8, 0, 0, NONE, MM_END_NONE, "i:12", 0);
    put_record(b, 8, 0, 0, NONE, MM_END_NONE, "i:1", 0);
    /* 3: ids on one side only */
    put_record(a, 10, 0, 0, NONE, MM_END_NONE, "j:1", 0);
    put_record(b, 11, 2, 5, 6, MM_END_LEFT, "k:1", 0);

    mm_members *m = clone(a);
    mm_members_merge_stats st;
    int n = mm_members_merge(m, b, MM_MEMBERS_NO_SELF, &st);
    const mm_member *r = mm_members_get(m, 1);
    assert_true(r->inc == 1 && r->join == 7 && r->end == 9 && r->kind == MM_END_REMOVED);
    assert_string_equal(r->addr, "b:1");
    assert_int_equal(r->cert[0], 5);
    r = mm_members_get(m, 2);
    assert_true(r->inc == 3 && r->join == 2 && r->end == 12 && r->kind == MM_END_REMOVED);
    r = mm_members_get(m, 3);
    assert_true(r->join == 1 && r->end == 8 && r->kind == MM_END_REMOVED);
    assert_int_equal(mm_members_get(m, 4)->kind, MM_END_REMOVED);
    assert_int_equal(mm_members_get(m, 5)->kind, MM_END_REMOVED);
    assert_string_equal(mm_members_get(m, 6)->addr, "g:10"); /* '1' < '2' */
    assert_int_equal(mm_members_get(m, 6)->addr_len, 4);
    assert_int_equal(mm_members_get(m, 6)->cert[0], 9);
    assert_int_equal(mm_members_get(m, 7)->cert[31], 2);
    assert_string_equal(mm_members_get(m, 8)->addr, "i:1");
    assert_non_null(mm_members_get(m, 10));
    r = mm_members_get(m, 11);
    assert_true(r && r->inc == 2 && r->join == 5 && r->end == 6 && r->kind == MM_END_LEFT);
    /* what changed in a: 1, 2 (join, end), 4 (kind), 6, 7, 8, 11 (3 and 5
     * had the earlier join and end already) */
    assert_int_equal(n, 7);
    assert_int_equal(st.changed, 7);
    assert_int_equal(st.added, 1);
    assert_int_equal(st.conflicts, 3); /* 6, 7, 8 */
    assert_int_equal(mm_members_count(m), 10);
    for (uint32_t i = 1; i < mm_members_count(m); i++) /* listed in id order */
        assert_true(mm_members_at(m, i - 1)->id < mm_members_at(m, i)->id);
    /* the other way round: the same table, counted from b's side */
    mm_members *m2 = clone(b);
    mm_members_merge(m2, a, MM_MEMBERS_NO_SELF, &st);
    assert_true(mm_members_equal(m, m2));
    assert_int_equal(st.conflicts, 3);
    assert_int_equal(st.added, 1); /* 10 */
    /* a src with an id beyond dst's capacity: refused, dst unchanged */
    mm_members *small = mm_members_new(8), *before = mm_members_new(8);
    assert_int_equal(mm_members_merge(small, m, MM_MEMBERS_NO_SELF, NULL), -1);
    assert_true(mm_members_equal(small, before));
    assert_int_equal(mm_members_copy(small, m), -1);
    mm_members_free(small);
    mm_members_free(before);
    mm_members_free(a);
    mm_members_free(b);
    mm_members_free(m);
    mm_members_free(m2);
}

static void merge_stats_of_self(void **state)
{
    (void)state;
    mm_members *me = started(4), *other = started(4);
    mm_members_merge_stats st;
    /* someone suspects 2: 2's record ended by someone else */
    assert_int_equal(mm_members_suspect(other, 2, 5, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_merge(me, other, 2, &st), 1);
    assert_true(st.self_ended && !st.self_superseded);
    /* the same again: nothing new */
    mm_members_merge(me, other, 2, &st);
    assert_true(!st.self_ended && st.changed == 0);
    /* an earlier end is "ended" again; a later one changes nothing */
    mm_members *o2 = started(4);
    assert_int_equal(mm_members_suspect(o2, 2, 3, D, ERR), MM_CHANGED);
    mm_members_merge(me, o2, 2, &st);
    assert_true(st.self_ended);
    assert_int_equal(mm_members_get(me, 2)->end, 3 + D);
    /* someone else's record changing is not self's */
    mm_members_merge(other, o2, 0, &st);
    assert_true(st.changed == 1 && !st.self_ended && !st.self_superseded);
    /* a higher incarnation of self made elsewhere: superseded */
    mm_members *o3 = clone(me);
    assert_int_equal(mm_members_refute(o3, 2, 4, ERR), MM_REFUTED);
    mm_members_merge(me, o3, 2, &st);
    assert_true(st.self_superseded && !st.self_ended);
    /* no self: no flags */
    mm_members *o4 = clone(me);
    mm_members_suspect(o4, 2, 6, D, ERR);
    mm_members_merge(me, o4, MM_MEMBERS_NO_SELF, &st);
    assert_true(st.changed == 1 && !st.self_ended && !st.self_superseded);
    mm_members *tables[] = {me, other, o2, o3, o4};
    for (size_t i = 0; i < 5; i++)
        mm_members_free(tables[i]);
}

/* ---- the tag ------------------------------------------------------------------ */

/* The tag recomputed here from docs/membership.md's words. */
static uint32_t tag_by_hand(const uint32_t *ids, const uint32_t *incs, uint32_t n)
{
    uint8_t *bytes = malloc(14 + 8 * (size_t)n);
    assert_non_null(bytes);
    memcpy(bytes, "murmur-view-v1", 14);
    for (uint32_t i = 0; i < n; i++)
        for (int b = 0; b < 4; b++) {
            bytes[14 + 8 * i + b] = (uint8_t)(ids[i] >> (8 * b));
            bytes[14 + 8 * i + 4 + b] = (uint8_t)(incs[i] >> (8 * b));
        }
    uint8_t d[MM_SHA256_LEN];
    mm_sha256(bytes, 14 + 8 * (size_t)n, d);
    free(bytes);
    uint32_t v = d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
    return v ? v : 1;
}

static void tag_recipe_and_examples(void **state)
{
    (void)state;
    /* docs/membership.md's first example: the starting view of 4 peers */
    mm_members *t = started(4);
    uint32_t ids[CAP], tag;
    assert_int_equal(mm_members_view(t, 0, ids, &tag), 4);
    assert_int_equal(tag, 2598045048u); /* 0x9adb0578 */
    uint32_t zero[4] = {0};
    assert_int_equal(tag, tag_by_hand(ids, zero, 4));
    /* its second: 2 removed, 1 refuted (inc 1), 8 joined, at round 1 */
    assert_int_equal(mm_members_suspect(t, 2, 0, 1, ERR), MM_CHANGED);
    assert_int_equal(mm_members_suspect(t, 1, 0, 5, ERR), MM_CHANGED);
    assert_int_equal(mm_members_refute(t, 1, 0, ERR), MM_REFUTED);
    assert_int_equal(mm_members_join(t, 8, addr_of(8), NULL, 0, 1, ERR), MM_CHANGED);
    assert_int_equal(mm_members_view(t, 1, ids, &tag), 4);
    assert_int_equal(tag, 3286130192u); /* 0xc3de5e10 */
    uint32_t want[4] = {0, 1, 3, 8}, incs[4] = {0, 1, 0, 0};
    assert_memory_equal(ids, want, sizeof want);
    assert_int_equal(tag, tag_by_hand(want, incs, 4));
    /* an empty view has a tag too (docs: the magic alone) */
    mm_members *e = mm_members_new(CAP);
    assert_int_equal(mm_members_view(e, 0, NULL, &tag), 0);
    assert_int_equal(tag, 1772566685u);
    mm_members_free(e);
    mm_members_free(t);
}

/* A full table: more members than one of the tag's batches of the hash,
 * random incs, against the hand-built bytes; any member's inc changes it. */
static void tag_of_a_large_view(void **state)
{
    (void)state;
    enum { BIG = 1000 };
    mm_members *t = mm_members_new(BIG);
    static char addrs[BIG][24];
    const char *ap[BIG];
    for (int i = 0; i < BIG; i++) {
        snprintf(addrs[i], sizeof addrs[i], "h:%d", 1 + i);
        ap[i] = addrs[i];
    }
    assert_int_equal(mm_members_start(t, BIG, ap, ERR), 0);
    mm_rng r;
    mm_rng_seed(&r, 7);
    for (int k = 0; k < 200; k++) { /* random refutations: incs up to a few */
        uint32_t id = (uint32_t)mm_rng_below(&r, BIG);
        mm_members_suspect(t, id, 0, 5, ERR);
        assert_true(mm_members_refute(t, id, 0, ERR) == MM_REFUTED);
    }
    static uint32_t ids[BIG], incs[BIG];
    uint32_t tag;
    assert_int_equal(mm_members_view(t, 3, ids, &tag), BIG);
    uint32_t refuted = 0;
    for (int i = 0; i < BIG; i++) {
        incs[i] = mm_members_get(t, ids[i])->inc;
        refuted += incs[i] > 0;
    }
    assert_true(refuted > 100);
    assert_int_equal(tag, tag_by_hand(ids, incs, BIG));
    /* the last member's inc counts */
    uint32_t tag2;
    mm_members_suspect(t, BIG - 1, 3, 5, ERR);
    mm_members_view(t, 3, NULL, &tag2);
    assert_int_equal(tag2, tag); /* an end ahead is not in view(3) yet */
    mm_members_refute(t, BIG - 1, 3, ERR);
    mm_members_view(t, 3, NULL, &tag2);
    assert_true(tag2 != tag);
    mm_members_free(t);
}

/* ---- view(R), the next change, a round's changes ------------------------------ */

static void view_at_boundaries(void **state)
{
    (void)state;
    mm_members *t = started(3);
    /* 5 joins at 5 (now 0 + 5); 1 is removed at 9 (suspected at 4, D 5); 2
     * leaves at 7 (now 3 + min(10, 4)) */
    assert_int_equal(mm_members_join(t, 5, addr_of(5), NULL, 0, 5, ERR), MM_CHANGED);
    assert_int_equal(mm_members_suspect(t, 1, 4, 5, ERR), MM_CHANGED);
    assert_int_equal(mm_members_leave(t, 2, 3, 10, ERR), MM_CHANGED);
    assert_int_equal(mm_members_get(t, 2)->end, 7);
    uint32_t ids[CAP];
    struct {
        uint64_t round;
        uint32_t n, ids[4];
    } want[] = {
        {0, 3, {0, 1, 2}}, {4, 3, {0, 1, 2}}, {5, 4, {0, 1, 2, 5}}, {6, 4, {0, 1, 2, 5}},
        {7, 3, {0, 1, 5}}, {8, 3, {0, 1, 5}}, {9, 2, {0, 5}},       {1000, 2, {0, 5}},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        uint32_t n = mm_members_view(t, want[i].round, ids, NULL);
        assert_int_equal(n, want[i].n);
        assert_memory_equal(ids, want[i].ids, n * sizeof *ids);
        for (uint32_t id = 0; id < CAP; id++) {
            bool in = false;
            for (uint32_t k = 0; k < n; k++)
                in |= ids[k] == id;
            assert_int_equal(mm_members_is_member(t, id, want[i].round), in);
        }
    }
    assert_false(mm_members_is_member(t, 99, 5)); /* beyond the capacity */
    /* the rounds at which the view changes: 5, 7, 9, then none */
    assert_int_equal(mm_members_next_change(t, 0), 5);
    assert_int_equal(mm_members_next_change(t, 4), 5);
    assert_int_equal(mm_members_next_change(t, 5), 7);
    assert_int_equal(mm_members_next_change(t, 7), 9);
    assert_true(mm_members_next_change(t, 9) == MM_MEMBER_END_NONE);
    for (uint64_t r = 0; r < 12; r++) { /* the view is constant between two changes */
        uint32_t a, b;
        uint64_t next = mm_members_next_change(t, r);
        mm_members_view(t, r, NULL, &a);
        for (uint64_t s = r; s < next && s < 20; s++) {
            mm_members_view(t, s, NULL, &b);
            assert_int_equal(a, b);
        }
        if (next < 20) {
            mm_members_view(t, next, NULL, &b);
            assert_true(a != b);
        }
    }
    /* what takes effect when */
    mm_member_change ch[CAP];
    assert_int_equal(mm_members_changes(t, 4, ch, CAP), 0);
    assert_int_equal(mm_members_changes(t, 5, ch, CAP), 1);
    assert_true(ch[0].id == 5 && ch[0].what == MM_CHANGE_JOINED && ch[0].inc == 0);
    assert_int_equal(mm_members_changes(t, 7, ch, CAP), 1);
    assert_true(ch[0].id == 2 && ch[0].what == MM_CHANGE_LEFT);
    assert_int_equal(mm_members_changes(t, 9, ch, CAP), 1);
    assert_true(ch[0].id == 1 && ch[0].what == MM_CHANGE_REMOVED);
    assert_int_equal(mm_members_changes(t, 0, ch, CAP), 3); /* the starting members */
    assert_int_equal(mm_members_changes(t, 0, ch, 2), 3);    /* counted past max */
    assert_true(ch[0].id == 0 && ch[1].id == 1);
    assert_int_equal(mm_members_changes(t, 0, NULL, 0), 3);
    mm_members_free(t);
}

static void start_refusals(void **state)
{
    (void)state;
    mm_members *t = mm_members_new(4);
    const char *ok[5] = {"a:1", "b:2", "c:3", "d:4", "e:5"};
    assert_int_equal(mm_members_start(t, 0, ok, ERR), -1);
    assert_int_equal(mm_members_start(t, 5, ok, ERR), -1);
    assert_non_null(strstr(errbuf, "5 starting members"));
    const char *bad[2] = {"a:1", "nohost"};
    assert_int_equal(mm_members_start(t, 2, bad, ERR), -1);
    assert_non_null(strstr(errbuf, "peer 1"));
    assert_int_equal(mm_members_count(t), 0); /* unchanged */
    assert_int_equal(mm_members_start(t, 4, ok, ERR), 0);
    assert_int_equal(mm_members_count(t), 4);
    /* a second start replaces the table */
    assert_int_equal(mm_members_join(t, 3, "x:1", NULL, 0, 1, ERR), MM_REFUSED);
    assert_int_equal(mm_members_start(t, 2, ok, ERR), 0);
    assert_int_equal(mm_members_count(t), 2);
    assert_null(mm_members_get(t, 3));
    assert_null(mm_members_at(t, 2));
    mm_members_free(t);
    assert_null(mm_members_new(0));
    assert_null(mm_members_new(MM_MEMBERS_CAPACITY_MAX + 1));
}

/* ---- local changes and their refusals ------------------------------------------ */

static void join_and_refusals(void **state)
{
    (void)state;
    mm_members *t = started(4);
    uint8_t cert[32];
    memset(cert, 0xab, sizeof cert);
    /* a new id: inc 0, join now + D */
    assert_int_equal(mm_members_join(t, 9, "joiner.example:26009", cert, 20, D, ERR),
                     MM_CHANGED);
    const mm_member *m = mm_members_get(t, 9);
    assert_true(m->inc == 0 && m->join == 20 + D && m->end == MM_MEMBER_END_NONE);
    assert_true(m->kind == MM_END_NONE && m->cert[31] == 0xab && m->addr_len == 20);
    assert_string_equal(m->addr, "joiner.example:26009");
    /* yet to join: refused (a retry through another sponsor must not move it) */
    assert_int_equal(mm_members_join(t, 9, "joiner.example:26009", cert, 21, D, ERR),
                     MM_REFUSED);
    assert_non_null(strstr(errbuf, "joins at round 30"));
    /* a live member: refused */
    assert_int_equal(mm_members_join(t, 2, addr_of(2), NULL, 20, D, ERR), MM_REFUSED);
    assert_non_null(strstr(errbuf, "does not end"));
    /* removal scheduled but not in effect: refused until its end */
    assert_int_equal(mm_members_suspect(t, 2, 20, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_join(t, 2, addr_of(2), NULL, 29, D, ERR), MM_REFUSED);
    assert_non_null(strstr(errbuf, "ends at round 30"));
    /* ended: the old inc + 1, a new join, another address allowed */
    assert_int_equal(mm_members_join(t, 2, "10.9.9.9:1", NULL, 30, D, ERR), MM_CHANGED);
    m = mm_members_get(t, 2);
    assert_true(m->inc == 1 && m->join == 30 + D && m->end == MM_MEMBER_END_NONE);
    assert_false(mm_members_is_member(t, 2, 30 + D - 1)); /* the gap of a rejoin */
    assert_true(mm_members_is_member(t, 2, 30 + D));
    /* refusals of the arguments, the table unchanged by each */
    mm_members *before = clone(t);
    struct {
        uint32_t id;
        const char *addr;
        uint64_t now, delay;
        const char *says;
    } bad[] = {
        {CAP, "a:1", 0, 1, "ids 0..15"},
        {12, "a:1", 0, 0, "delay 0"},
        {12, "a:1", UINT64_MAX - 5, 5, "largest round"},
        {12, "", 0, 1, "0 bytes"},
        {12, "host", 0, 1, "not host:port"},
        {12, ":80", 0, 1, "not host:port"},
        {12, "host:", 0, 1, "not host:port"},
        {12, "host:0", 0, 1, "port 0"},
        {12, "host:65536", 0, 1, "65536"},
        {12, "host:123456", 0, 1, "not host:port"},
        {12, "host:8x", 0, 1, "not a decimal"},
        {12, "ho st:80", 0, 1, "0x20"},
        {12, "h\xc3\xa9:80", 0, 1, "not printable"},
        {12, NULL, 0, 1, "65 bytes"}, /* below */
    };
    char longest[MM_MEMBER_ADDR_MAX + 2];
    memset(longest, 'a', MM_MEMBER_ADDR_MAX + 1);
    memcpy(longest + MM_MEMBER_ADDR_MAX + 1 - 3, ":80", 4); /* 65 bytes */
    bad[sizeof bad / sizeof *bad - 1].addr = longest;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        errbuf[0] = 0;
        assert_int_equal(mm_members_join(t, bad[i].id, bad[i].addr, NULL, bad[i].now,
                                         bad[i].delay, ERR),
                         MM_REFUSED);
        if (!strstr(errbuf, bad[i].says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, errbuf, bad[i].says);
        assert_true(mm_members_equal(t, before));
    }
    /* the largest address: 64 bytes, and [v6]:port */
    assert_int_equal(mm_members_join(t, 12, longest + 1, NULL, 0, 1, ERR), MM_CHANGED);
    assert_int_equal(mm_members_get(t, 12)->addr_len, 64);
    assert_int_equal(mm_members_join(t, 13, "[::1]:65535", NULL, 0, 1, ERR), MM_CHANGED);
    mm_members_free(before);
    mm_members_free(t);
}

/* A record with inc UINT32_MAX, as a peer could send it: no refutation, no
 * rejoin (docs/membership.md, "Who may change what"). */
static void incarnation_at_its_largest(void **state)
{
    (void)state;
    mm_members *t = mm_members_new(CAP);
    put_record(t, 3, UINT32_MAX, 0, 5, MM_END_REMOVED, "a:1", 0);
    assert_int_equal(mm_members_refute(t, 3, 2, ERR), MM_REFUTE_REFUSED);
    assert_non_null(strstr(errbuf, "every incarnation"));
    assert_int_equal(mm_members_join(t, 3, "a:1", NULL, 6, 1, ERR), MM_REFUSED);
    assert_non_null(strstr(errbuf, "every incarnation"));
    assert_int_equal(mm_members_get(t, 3)->inc, UINT32_MAX);
    mm_members_free(t);
}

static void leave_and_refusals(void **state)
{
    (void)state;
    mm_members *t = started(4);
    /* end = now + min(D, 4), kind left */
    assert_int_equal(mm_members_leave(t, 1, 10, D, ERR), MM_CHANGED);
    const mm_member *m = mm_members_get(t, 1);
    assert_true(m->end == 14 && m->kind == MM_END_LEFT && m->inc == 0);
    /* a delay under 4 is the delay */
    assert_int_equal(mm_members_leave(t, 2, 10, 2, ERR), MM_CHANGED);
    assert_int_equal(mm_members_get(t, 2)->end, 12);
    /* again, later: nothing moves (ends only come earlier) */
    assert_int_equal(mm_members_leave(t, 1, 11, D, ERR), MM_UNCHANGED);
    assert_int_equal(mm_members_get(t, 1)->end, 14);
    /* suspected earlier: the leave changes nothing */
    assert_int_equal(mm_members_suspect(t, 3, 10, 2, ERR), MM_CHANGED);
    assert_int_equal(mm_members_leave(t, 3, 10, D, ERR), MM_UNCHANGED);
    assert_int_equal(mm_members_get(t, 3)->kind, MM_END_REMOVED);
    /* suspected at the same end: the removal stays */
    assert_int_equal(mm_members_suspect(t, 0, 10, 4, ERR), MM_CHANGED);
    assert_int_equal(mm_members_leave(t, 0, 10, D, ERR), MM_UNCHANGED);
    assert_int_equal(mm_members_get(t, 0)->kind, MM_END_REMOVED);
    /* refusals: no record, ended, delay 0 */
    assert_int_equal(mm_members_leave(t, 9, 10, D, ERR), MM_REFUSED);
    assert_non_null(strstr(errbuf, "not a member"));
    assert_int_equal(mm_members_leave(t, 1, 14, D, ERR), MM_REFUSED);
    mm_members *u = started(2);
    assert_int_equal(mm_members_leave(u, 1, 3, 0, ERR), MM_REFUSED);
    assert_non_null(strstr(errbuf, "delay 0"));
    /* a member to be that leaves before its first round keeps that round */
    assert_int_equal(mm_members_join(u, 5, addr_of(5), NULL, 3, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_leave(u, 5, 4, D, ERR), MM_CHANGED);
    m = mm_members_get(u, 5);
    assert_true(m->join == 13 && m->end == 14 && m->kind == MM_END_LEFT);
    mm_members_free(u);
    mm_members_free(t);
}

static void suspect_and_refusals(void **state)
{
    (void)state;
    mm_members *t = started(4);
    assert_int_equal(mm_members_suspect(t, 2, 7, D, ERR), MM_CHANGED);
    const mm_member *m = mm_members_get(t, 2);
    assert_true(m->end == 17 && m->kind == MM_END_REMOVED && m->inc == 0 && m->join == 0);
    /* a second suspicion, later: the earlier end stays */
    assert_int_equal(mm_members_suspect(t, 2, 9, D, ERR), MM_UNCHANGED);
    assert_int_equal(m->end, 17);
    /* an earlier one: moves it */
    mm_members *u = started(4);
    assert_int_equal(mm_members_suspect(u, 2, 5, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_merge(t, u, MM_MEMBERS_NO_SELF, NULL), 1);
    assert_int_equal(m->end, 15);
    /* ended already: nothing to do */
    assert_int_equal(mm_members_suspect(t, 2, 20, D, ERR), MM_UNCHANGED);
    /* a leave at the same end becomes a removal */
    assert_int_equal(mm_members_leave(t, 1, 7, D, ERR), MM_CHANGED); /* end 11, left */
    assert_int_equal(mm_members_suspect(t, 1, 1, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_get(t, 1)->kind, MM_END_REMOVED);
    assert_int_equal(mm_members_get(t, 1)->end, 11);
    /* refusals: no record, a member to be, delay 0 */
    assert_int_equal(mm_members_suspect(t, 9, 7, D, ERR), MM_REFUSED);
    assert_non_null(strstr(errbuf, "no record"));
    assert_int_equal(mm_members_join(t, 9, addr_of(9), NULL, 7, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_suspect(t, 9, 8, D, ERR), MM_REFUSED);
    assert_non_null(strstr(errbuf, "joins at round 17"));
    assert_int_equal(mm_members_suspect(t, 9, 17, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_suspect(t, 3, 7, 0, ERR), MM_REFUSED);
    assert_int_equal(mm_members_get(t, 3)->end, MM_MEMBER_END_NONE);
    mm_members_free(u);
    mm_members_free(t);
}

static void refute_and_its_answers(void **state)
{
    (void)state;
    mm_members *t = started(4);
    assert_int_equal(mm_members_refute(t, 1, 5, ERR), MM_NOTHING_TO_REFUTE);
    assert_int_equal(mm_members_suspect(t, 1, 5, D, ERR), MM_CHANGED);
    /* before the end: inc + 1, no end, the same join: no gap */
    assert_int_equal(mm_members_refute(t, 1, 14, ERR), MM_REFUTED);
    const mm_member *m = mm_members_get(t, 1);
    assert_true(m->inc == 1 && m->join == 0 && m->end == MM_MEMBER_END_NONE &&
                m->kind == MM_END_NONE);
    for (uint64_t r = 0; r < 40; r++)
        assert_true(mm_members_is_member(t, 1, r));
    assert_int_equal(mm_members_refute(t, 1, 14, ERR), MM_NOTHING_TO_REFUTE);
    /* after the end: refuted late (docs/membership.md, "A partition that
     * lasts") */
    assert_int_equal(mm_members_suspect(t, 1, 20, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_refute(t, 1, 30, ERR), MM_REFUTED_LATE);
    assert_true(m->inc == 2 && m->end == MM_MEMBER_END_NONE && m->join == 0);
    /* a leave someone else wrote is refuted the same way */
    mm_members *u = clone(t);
    assert_int_equal(mm_members_leave(u, 1, 30, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_refute(u, 1, 31, ERR), MM_REFUTED);
    /* no record: it must join */
    assert_int_equal(mm_members_refute(t, 7, 30, ERR), MM_REFUTE_REFUSED);
    assert_non_null(strstr(errbuf, "must join"));
    mm_members_free(u);
    mm_members_free(t);
}

/* ---- the races (docs/membership.md, "The races") -------------------------------- */

/* Each peer's table after both have merged the other's, through the wire. */
static void exchange(mm_members *a, mm_members *b)
{
    mm_members *wa = wire(a), *wb = wire(b);
    assert_true(mm_members_merge(a, wb, MM_MEMBERS_NO_SELF, NULL) >= 0);
    assert_true(mm_members_merge(b, wa, MM_MEMBERS_NO_SELF, NULL) >= 0);
    assert_true(mm_members_equal(a, b));
    mm_members_free(wa);
    mm_members_free(wb);
}

static uint32_t tag_at(const mm_members *t, uint64_t round)
{
    uint32_t tag;
    mm_members_view(t, round, NULL, &tag);
    return tag;
}

static void race_two_joins_at_once(void **state)
{
    (void)state;
    mm_members *a = started(4), *b = started(4);
    assert_int_equal(mm_members_join(a, 4, addr_of(4), NULL, 3, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_join(b, 5, addr_of(5), NULL, 4, D, ERR), MM_CHANGED);
    exchange(a, b);
    assert_int_equal(mm_members_get(a, 4)->join, 13);
    assert_int_equal(mm_members_get(a, 5)->join, 14);
    uint32_t ids[CAP];
    assert_int_equal(mm_members_view(a, 13, ids, NULL), 5);
    assert_int_equal(mm_members_view(a, 14, ids, NULL), 6);
    mm_members_free(a);
    mm_members_free(b);
}

static void race_one_joiner_two_sponsors(void **state)
{
    (void)state;
    mm_members *a = started(4), *b = started(4), *c = started(4);
    assert_int_equal(mm_members_join(a, 6, addr_of(6), NULL, 3, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_join(b, 6, addr_of(6), NULL, 5, D, ERR), MM_CHANGED);
    /* c passes round 13 with b's record only: its view differs from a's */
    mm_members *wb = wire(b);
    mm_members_merge(c, wb, MM_MEMBERS_NO_SELF, NULL);
    assert_true(tag_at(a, 13) != tag_at(c, 13));
    mm_members_merge_stats st;
    exchange(a, b);
    mm_members *wa = wire(a);
    mm_members_merge(c, wa, MM_MEMBERS_NO_SELF, &st);
    assert_int_equal(st.conflicts, 0);
    const mm_member *m = mm_members_get(c, 6);
    assert_true(m->inc == 0 && m->join == 13); /* the earlier */
    for (uint64_t r = 13; r < 30; r++)
        assert_int_equal(tag_at(a, r), tag_at(c, r));
    /* a second sponsor that heard another address: one wins, counted */
    mm_members *d = started(4);
    assert_int_equal(mm_members_join(d, 6, "10.0.0.6:1", NULL, 5, D, ERR), MM_CHANGED);
    mm_members_merge(c, d, MM_MEMBERS_NO_SELF, &st);
    assert_int_equal(st.conflicts, 1);
    assert_string_equal(mm_members_get(c, 6)->addr, "10.0.0.6:1");
    mm_members_merge(d, a, MM_MEMBERS_NO_SELF, &st);
    assert_int_equal(st.conflicts, 1);
    assert_string_equal(mm_members_get(d, 6)->addr, "10.0.0.6:1");
    assert_int_equal(mm_members_get(d, 6)->join, 13);
    mm_members *tables[] = {a, b, c, d, wa, wb};
    for (size_t i = 0; i < 6; i++)
        mm_members_free(tables[i]);
}

static void race_join_and_crash(void **state)
{
    (void)state;
    mm_members *a = started(4), *b = started(4);
    assert_int_equal(mm_members_join(a, 7, addr_of(7), NULL, 3, D, ERR), MM_CHANGED);
    assert_int_equal(mm_members_suspect(b, 2, 3, D, ERR), MM_CHANGED);
    exchange(a, b);
    uint32_t ids[CAP];
    uint32_t want[] = {0, 1, 3, 7};
    assert_int_equal(mm_members_view(a, 13, ids, NULL), 4);
    assert_memory_equal(ids, want, sizeof want);
    mm_members_free(a);
    mm_members_free(b);
}

static void race_two_suspecters(void **state)
{
    (void)state;
    mm_members *a = started(5), *b = started(5);
    assert_int_equal(mm_members_suspect(a, 2, 4, D, ERR), MM_CHANGED); /* 1 saw it first */
    assert_int_equal(mm_members_suspect(b, 2, 5, D, ERR), MM_CHANGED); /* 3 a round later */
    exchange(a, b);
    assert_int_equal(mm_members_get(a, 2)->end, 14);
    mm_member_change ch[CAP];
    assert_int_equal(mm_members_changes(a, 14, ch, CAP), 1);
    assert_int_equal(mm_members_changes(a, 15, ch, CAP), 0);
    mm_members_free(a);
    mm_members_free(b);
}

static void race_partition_during_a_change(void **state)
{
    (void)state;
    /* sides {0, 1} and {2, 3}; 0 sponsors 6 at round 3 (join 13); only 1
     * hears of it before the cut */
    mm_members *p[4];
    for (int i = 0; i < 4; i++)
        p[i] = started(4);
    assert_int_equal(mm_members_join(p[0], 6, addr_of(6), NULL, 3, D, ERR), MM_CHANGED);
    exchange(p[0], p[1]);
    /* rounds 13..16 pass cut: the sides' views and tags differ, so the
     * edges across do not mix */
    for (uint64_t r = 13; r < 17; r++) {
        assert_true(tag_at(p[1], r) != tag_at(p[2], r));
        assert_true(mm_members_is_member(p[1], 6, r) && !mm_members_is_member(p[2], 6, r));
    }
    assert_int_equal(tag_at(p[1], 12), tag_at(p[2], 12)); /* before the change: equal */
    /* the cut heals at round 17: anti-entropy, and every round from then on
     * has one view everywhere */
    exchange(p[1], p[2]);
    exchange(p[2], p[3]);
    exchange(p[0], p[3]);
    for (uint64_t r = 17; r < 40; r++)
        for (int i = 1; i < 4; i++)
            assert_int_equal(tag_at(p[0], r), tag_at(p[i], r));
    for (int i = 0; i < 4; i++)
        mm_members_free(p[i]);
}

static void race_suspect_refutes_without_gap(void **state)
{
    (void)state;
    mm_members *a = started(4), *s = started(4);
    assert_int_equal(mm_members_suspect(a, 3, 6, D, ERR), MM_CHANGED);
    mm_members_merge_stats st;
    mm_members *wa = wire(a);
    mm_members_merge(s, wa, 3, &st);
    assert_true(st.self_ended);
    assert_int_equal(mm_members_refute(s, 3, 7, ERR), MM_REFUTED);
    exchange(a, s);
    for (uint64_t r = 0; r < 50; r++)
        assert_true(mm_members_is_member(a, 3, r)); /* no gap */
    mm_member_change ch[CAP];
    for (uint64_t r = 1; r < 50; r++)
        assert_int_equal(mm_members_changes(a, r, ch, CAP), 0); /* nothing takes effect */
    assert_true(mm_members_next_change(a, 0) == MM_MEMBER_END_NONE);
    mm_members_free(a);
    mm_members_free(s);
    mm_members_free(wa);
}

/* A peer that crashed, was removed, and comes back as a new process: it
 * rejoins through a sponsor with inc + 1, refused while its removal has not
 * taken effect; its old process, had it survived with its old table, sees
 * itself superseded. */
static void race_removed_peer_rejoins(void **state)
{
    (void)state;
    mm_members *a = started(4), *old = started(4);
    assert_int_equal(mm_members_suspect(a, 2, 5, D, ERR), MM_CHANGED); /* end 15 */
    assert_int_equal(mm_members_join(a, 2, addr_of(2), NULL, 12, D, ERR), MM_REFUSED);
    assert_int_equal(mm_members_join(a, 2, addr_of(2), NULL, 15, D, ERR), MM_CHANGED);
    const mm_member *m = mm_members_get(a, 2);
    assert_true(m->inc == 1 && m->join == 25 && m->end == MM_MEMBER_END_NONE);
    mm_member_change ch[CAP];
    assert_int_equal(mm_members_changes(a, 15, ch, CAP), 0); /* the record is inc 1 now */
    assert_int_equal(mm_members_changes(a, 25, ch, CAP), 1);
    assert_true(ch[0].id == 2 && ch[0].inc == 1 && ch[0].what == MM_CHANGE_JOINED);
    assert_false(mm_members_is_member(a, 2, 24));
    assert_true(mm_members_is_member(a, 2, 25));
    mm_members_merge_stats st;
    mm_members_merge(old, a, 2, &st);
    assert_true(st.self_superseded && !st.self_ended);
    /* the new incarnation beats the removal everywhere, whatever the order */
    mm_members *b = started(4);
    mm_members_suspect(b, 2, 6, D, ERR);
    exchange(b, a);
    assert_int_equal(mm_members_get(b, 2)->inc, 1);
    assert_true(mm_members_is_member(b, 2, 25));
    mm_members_free(a);
    mm_members_free(b);
    mm_members_free(old);
}

/* After each peer's table has merged from the others (in some order), every
 * peer refutes the ends others gave it, as docs/membership.md's "After a
 * merge" says, and the refutations are flooded. */
static void settle(mm_members **p, int n, uint64_t now)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j) {
                mm_members_merge(p[i], p[j], MM_MEMBERS_NO_SELF, NULL);
                const mm_member *m = mm_members_get(p[i], (uint32_t)i);
                if (m->end != MM_MEMBER_END_NONE)
                    assert_true(mm_members_refute(p[i], (uint32_t)i, now, ERR) >= 0);
            }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            mm_members_merge(p[i], p[j], MM_MEMBERS_NO_SELF, NULL);
}

/* A partition that lasts past the removals: each side removes the other.
 * When they meet, the merged table ends everyone: a rejoin through a member
 * (the design's first rule) would find no member to sponsor it. With late
 * refutation every live peer stays a member. */
static void race_partition_that_lasts(void **state)
{
    (void)state;
    mm_members *p[6];
    for (int i = 0; i < 6; i++)
        p[i] = started(6);
    for (uint32_t i = 0; i < 3; i++)
        for (uint32_t j = 3; j < 6; j++) {
            mm_members_suspect(p[i], j, 5, D, ERR);
            mm_members_suspect(p[j], i, 6, D, ERR);
        }
    for (int i = 1; i < 3; i++) {
        exchange(p[0], p[i]);
        exchange(p[3], p[3 + i]);
    }
    assert_int_equal(mm_members_view(p[0], 20, NULL, NULL), 3);
    assert_int_equal(mm_members_view(p[3], 20, NULL, NULL), 3);
    /* they meet at round 30 */
    mm_members *all = merged(p[0], p[3]);
    assert_int_equal(mm_members_view(all, 30, NULL, NULL), 0); /* nobody is a member */
    settle(p, 6, 30);
    uint32_t ids[CAP];
    for (int i = 0; i < 6; i++) {
        assert_int_equal(mm_members_view(p[i], 30, ids, NULL), 6);
        assert_true(mm_members_equal(p[i], p[0]));
        assert_int_equal(mm_members_get(p[0], (uint32_t)i)->inc, 1);
    }
    for (int i = 0; i < 6; i++)
        mm_members_free(p[i]);
    mm_members_free(all);
}

/* One peer cut off alone suspects its neighbours one by one; the others
 * remove it. Its stale suspicions reach the others after their end: the
 * others refute late and stay; the loner refutes late and is back. */
static void race_loner_with_stale_suspicions(void **state)
{
    (void)state;
    mm_members *p[5];
    for (int i = 0; i < 5; i++)
        p[i] = started(5);
    for (uint32_t j = 1; j < 5; j++) /* the loner, 0, removes everyone */
        mm_members_suspect(p[0], j, 2 * j, D, ERR);
    mm_members_suspect(p[1], 0, 3, D, ERR);
    for (int i = 2; i < 5; i++)
        exchange(p[1], p[i]);
    for (int i = 1; i < 5; i++)
        assert_true(mm_members_is_member(p[i], (uint32_t)i, 30));
    mm_members *after = merged(p[1], p[0]); /* without refutation: all gone at 30 */
    assert_int_equal(mm_members_view(after, 30, NULL, NULL), 0);
    settle(p, 5, 30);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(mm_members_view(p[i], 30, NULL, NULL), 5);
        assert_true(mm_members_equal(p[i], p[4]));
    }
    for (int i = 0; i < 5; i++)
        mm_members_free(p[i]);
    mm_members_free(after);
}

/* ---- the MEMBERS payload --------------------------------------------------------- */

static void codec_round_trip(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 71);
    for (int trial = 0; trial < 500; trial++) {
        mm_members *t = random_table(&r);
        size_t len = mm_members_encoded_len(t);
        assert_int_equal(len, 8 + 128 * (size_t)mm_members_count(t));
        uint8_t buf[MM_MEMBERS_HEAD_LEN + CAP * MM_MEMBERS_RECORD_LEN];
        assert_int_equal(mm_members_encode(t, buf, len - 1), 0);
        assert_int_equal(mm_members_encode(t, buf, sizeof buf), len);
        mm_members *d = started(3); /* decoding replaces what was there */
        assert_int_equal(mm_members_decode(d, buf, len, ERR), 0);
        assert_true(mm_members_equal(t, d));
        uint8_t again[sizeof buf];
        assert_int_equal(mm_members_encode(d, again, sizeof again), len);
        assert_memory_equal(buf, again, len);
        mm_members_free(t);
        mm_members_free(d);
    }
    /* an empty table: the head alone */
    mm_members *e = mm_members_new(4), *d = started(2);
    uint8_t head[8];
    assert_int_equal(mm_members_encode(e, head, sizeof head), 8);
    assert_int_equal(mm_members_decode(d, head, 8, ERR), 0);
    assert_int_equal(mm_members_count(d), 0);
    mm_members_free(e);
    mm_members_free(d);
}

/* The bytes of a fixed example, field by field (docs/protocol.md 7.1). */
static void codec_bytes(void **state)
{
    (void)state;
    mm_members *t = mm_members_new(CAP);
    uint8_t cert[32];
    for (int i = 0; i < 32; i++)
        cert[i] = (uint8_t)i;
    assert_int_equal(mm_members_join(t, 0x0102, "[::1]:9", cert, 0x1122334455667700ULL, 0x11,
                                     ERR),
                     MM_REFUSED); /* id beyond CAP */
    mm_members_free(t);
    t = mm_members_new(1024);
    assert_int_equal(mm_members_join(t, 0x0102, "[::1]:9", cert, 0x1122334455667700ULL, 0x11,
                                     ERR),
                     MM_CHANGED);
    assert_int_equal(mm_members_suspect(t, 0x0102, 0x1122334455667711ULL, 0x22, ERR),
                     MM_CHANGED);
    uint8_t b[8 + 128];
    assert_int_equal(mm_members_encode(t, b, sizeof b), sizeof b);
    static const uint8_t head[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    assert_memory_equal(b, head, 8);
    const uint8_t *r = b + 8;
    static const uint8_t fixed[32] = {
        0x02, 0x01, 0, 0,                               /* id 0x0102 */
        0, 0, 0, 0,                                     /* inc 0 */
        0x11, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* join */
        0x33, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* end */
        2, 0, 7, 0,                                     /* removed, flags, L = 7 */
        0, 0, 0, 0,                                     /* reserved */
    };
    assert_memory_equal(r, fixed, 32);
    assert_memory_equal(r + 32, cert, 32);
    assert_memory_equal(r + 64, "[::1]:9", 7);
    for (int i = 71; i < 128; i++)
        assert_int_equal(r[i], 0);
    mm_members_free(t);
}

/* Every refusal of the decoder, each on one change of a good payload, the
 * table unchanged by each. */
static void codec_refusals(void **state)
{
    (void)state;
    mm_members *t = started(3);
    mm_members_suspect(t, 2, 4, D, ERR);
    uint8_t good[8 + 3 * 128];
    assert_int_equal(mm_members_encode(t, good, sizeof good), sizeof good);
    mm_members *dst = started(1), *before = started(1);
    assert_int_equal(mm_members_decode(dst, good, sizeof good, ERR), 0); /* as is: fine */
    mm_members_free(dst);
    dst = started(1);
    enum { R0 = 8, R1 = 8 + 128, R2 = 8 + 256 };
    struct {
        size_t at;
        int bytes;
        uint64_t value;
        const char *says;
    } bad[] = {
        {0, 4, 4, "says 4 records and holds 3"},
        {0, 4, 2, "says 2 records"},
        {4, 4, 1, "reserved head"},
        {R1 + 0, 4, 0, "id 0 after id 0"},
        {R1 + 0, 4, 2, "id 2 after id 2"}, /* then R2's 2 comes after a 2 */
        {R2 + 0, 4, 1, "id 1 after id 1"},
        {R2 + 0, 4, 16, "id 16: the table holds ids 0..15"},
        {R0 + 24, 1, 3, "kind 3"},
        {R0 + 24, 1, 1, "without an end"},
        {R2 + 16, 8, UINT64_MAX, "kind left or removed without an end"},
        {R2 + 24, 1, 0, "kind none with an end"},
        {R2 + 8, 8, 14, "join 14 is not before end 14"},
        {R0 + 8, 8, UINT64_MAX, "join 18446744073709551615 is not before end"},
        {R1 + 25, 1, 1, "flags 0x01"},
        {R1 + 28, 4, 0x100, "reserved bytes"},
        {R1 + 26, 2, 0, "address of 0 bytes"},
        {R1 + 26, 2, 65, "address of 65 bytes"},
        {R1 + 26, 2, 5, "is not host:port"},        /* "10.0." */
        {R1 + 26, 2, 13, "padding not 0"}, /* "10.0.0.1:2600", then a '0' */
        {R1 + 64, 1, 0x7f, "not printable"},
        {R1 + 64 + 13, 1, ' ', "0x20, not printable"}, /* the port's last digit */
        {R1 + 64 + 15, 1, '0', "padding not 0"},
        {R1 + 127, 1, 1, "padding not 0"},
        {R1 + 64 + 9, 1, 'x', "not a decimal"},
    };
    uint8_t buf[sizeof good];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memcpy(buf, good, sizeof buf);
        for (int k = 0; k < bad[i].bytes; k++)
            buf[bad[i].at + (size_t)k] = (uint8_t)(bad[i].value >> (8 * k));
        errbuf[0] = 0;
        assert_int_equal(mm_members_decode(dst, buf, sizeof buf, ERR), -1);
        if (!strstr(errbuf, bad[i].says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, errbuf, bad[i].says);
        assert_true(mm_members_equal(dst, before));
    }
    /* lengths: short, not 8 + 128 K, a record cut */
    uint8_t longer[sizeof good + 1] = {0};
    memcpy(longer, good, sizeof good);
    size_t lens[] = {0, 7, 9, 8 + 127, sizeof good - 1, sizeof good + 1};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        assert_int_equal(mm_members_decode(dst, longer, lens[i], ERR), -1);
        assert_non_null(strstr(errbuf, "not 8 + 128 per record"));
    }
    /* more records than the capacity */
    mm_members *two = mm_members_new(2);
    assert_int_equal(mm_members_decode(two, good, sizeof good, ERR), -1);
    assert_non_null(strstr(errbuf, "3 records: the table holds 2"));
    mm_members_free(two);
    mm_members_free(dst);
    mm_members_free(before);
    mm_members_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(merge_laws_on_random_tables),
        cmocka_unit_test(merge_rules),
        cmocka_unit_test(merge_stats_of_self),
        cmocka_unit_test(tag_recipe_and_examples),
        cmocka_unit_test(tag_of_a_large_view),
        cmocka_unit_test(view_at_boundaries),
        cmocka_unit_test(start_refusals),
        cmocka_unit_test(join_and_refusals),
        cmocka_unit_test(incarnation_at_its_largest),
        cmocka_unit_test(leave_and_refusals),
        cmocka_unit_test(suspect_and_refusals),
        cmocka_unit_test(refute_and_its_answers),
        cmocka_unit_test(race_two_joins_at_once),
        cmocka_unit_test(race_one_joiner_two_sponsors),
        cmocka_unit_test(race_join_and_crash),
        cmocka_unit_test(race_two_suspecters),
        cmocka_unit_test(race_partition_during_a_change),
        cmocka_unit_test(race_suspect_refutes_without_gap),
        cmocka_unit_test(race_removed_peer_rejoins),
        cmocka_unit_test(race_partition_that_lasts),
        cmocka_unit_test(race_loner_with_stale_suspicions),
        cmocka_unit_test(codec_round_trip),
        cmocka_unit_test(codec_bytes),
        cmocka_unit_test(codec_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
