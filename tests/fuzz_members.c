/* libFuzzer target for the MEMBERS payload's decoder and the merge
 * (member/, docs/protocol.md 7.1).
 * Input: byte 0 = the table's capacity minus 1 (1..256), bytes 1..2 = the
 * length of the first payload (little-endian), then two payloads, a and b.
 * For each: the decoder must never read outside the payload, must leave the
 * table as it was when it refuses, and what it accepts must obey every rule
 * (ids ascending below the capacity, kind none exactly when end is none,
 * join before end, a printable host:port) and encode back to exactly the
 * bytes it came from; view(R) must agree with is_member and the next change
 * must be later than R. When both decode: the merge is commutative,
 * idempotent and an upper bound of both, and local changes on the result
 * only move it up (merging the old table into the new changes nothing).
 * Built with -DFUZZ_SEEDGEN it writes a seed corpus. */
#include "member/member.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[512];

static void check_view(const mm_members *t, uint64_t round)
{
    uint32_t ids[256], tag;
    uint32_t n = mm_members_view(t, round, ids, &tag);
    if (tag == 0 || n > mm_members_count(t))
        abort();
    uint32_t k = 0;
    for (uint32_t id = 0; id < mm_members_capacity(t); id++) {
        bool in = k < n && ids[k] == id;
        if (in != mm_members_is_member(t, id, round))
            abort(); /* the view and is_member disagree */
        k += in;
    }
    if (k != n)
        abort(); /* ids not ascending, or beyond the capacity */
    if (mm_members_next_change(t, round) <= round)
        abort();
}

/* Decodes p into a table of `cap` that held the starting members first;
 * NULL when refused (after checking the table did not move). */
static mm_members *decode(uint32_t cap, const uint8_t *p, size_t len)
{
    mm_members *t = mm_members_new(cap), *before = mm_members_new(cap);
    static const char *addrs[1] = {"start:1"};
    mm_members_start(t, 1, addrs, err, sizeof err);
    mm_members_copy(before, t);
    if (mm_members_decode(t, p, len, err, sizeof err) != 0) {
        if (!mm_members_equal(t, before) || err[0] == 0)
            abort(); /* a refusal moved the table, or did not say why */
        mm_members_free(t);
        mm_members_free(before);
        return NULL;
    }
    mm_members_free(before);
    uint8_t *again = malloc(len ? len : 1);
    if (mm_members_encode(t, again, len) != len || memcmp(again, p, len) != 0)
        abort(); /* not the bytes it came from */
    free(again);
    for (uint32_t i = 0; i < mm_members_count(t); i++) {
        const mm_member *m = mm_members_at(t, i);
        if (m->id >= cap || (i && m->id <= mm_members_at(t, i - 1)->id) ||
            (m->kind == MM_END_NONE) != (m->end == MM_MEMBER_END_NONE) ||
            m->kind > MM_END_REMOVED || m->join >= m->end || m->addr_len == 0 ||
            m->addr_len > MM_MEMBER_ADDR_MAX || strlen(m->addr) != m->addr_len ||
            !strchr(m->addr, ':'))
            abort();
        if (i >= 16)
            continue; /* the views at the first records' boundaries are enough */
        check_view(t, m->join);
        check_view(t, m->join - (m->join > 0));
        if (m->end != MM_MEMBER_END_NONE)
            check_view(t, m->end);
    }
    check_view(t, 0);
    return t;
}

static mm_members *merged(const mm_members *a, const mm_members *b)
{
    mm_members *m = mm_members_new(mm_members_capacity(a));
    mm_members_copy(m, a);
    if (mm_members_merge(m, b, MM_MEMBERS_NO_SELF, NULL) < 0)
        abort(); /* both decoded at the same capacity */
    return m;
}

/* Every local change leaves the table above where it was. */
static void local_changes_go_up(const mm_members *t, uint8_t knob)
{
    if (mm_members_count(t) == 0)
        return;
    const mm_member *m = mm_members_at(t, knob % mm_members_count(t));
    uint64_t now = (knob & 0x40) && m->end != MM_MEMBER_END_NONE ? m->end : m->join;
    now += knob >> 7;
    mm_members *c = mm_members_new(mm_members_capacity(t));
    mm_members_copy(c, t);
    switch (knob >> 4 & 3) {
    case 0:
        mm_members_join(c, m->id, m->addr, m->cert, now, 1 + (knob & 15), err, sizeof err);
        break;
    case 1:
        mm_members_leave(c, m->id, now, knob & 15, err, sizeof err);
        break;
    case 2:
        mm_members_suspect(c, m->id, now, knob & 15, err, sizeof err);
        break;
    default:
        mm_members_refute(c, m->id, now, err, sizeof err);
        break;
    }
    if (mm_members_merge(c, t, MM_MEMBERS_NO_SELF, NULL) != 0)
        abort(); /* the old table was not below the new one */
    mm_members_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    uint32_t cap = 1u + data[0];
    size_t la = (size_t)data[1] | (size_t)data[2] << 8;
    const uint8_t *p = data + 3;
    size_t rest = size - 3;
    if (la > rest)
        la = rest;
    mm_members *a = decode(cap, p, la), *b = decode(cap, p + la, rest - la);
    if (a && b) {
        mm_members *ab = merged(a, b), *ba = merged(b, a);
        if (!mm_members_equal(ab, ba))
            abort(); /* not commutative */
        mm_members *again = merged(ab, a), *twice = merged(ab, b);
        if (!mm_members_equal(again, ab) || !mm_members_equal(twice, ab))
            abort(); /* not an upper bound, or not idempotent */
        local_changes_go_up(ab, data[0] ^ data[1]);
        mm_members_free(ab);
        mm_members_free(ba);
        mm_members_free(again);
        mm_members_free(twice);
    }
    mm_members_free(a);
    mm_members_free(b);
    return 0;
}

#ifdef FUZZ_SEEDGEN
/* Seeds: pairs of tables that share ids, as two peers' would. */
int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    static const char *addrs[4] = {"10.0.0.1:26000", "10.0.0.2:26000", "[::1]:26002",
                                   "host.example:9"};
    for (int k = 0; k < 4; k++) {
        mm_members *a = mm_members_new(16), *b = mm_members_new(16);
        mm_members_start(a, 4, addrs, err, sizeof err);
        mm_members_start(b, 4, addrs, err, sizeof err);
        mm_members_suspect(a, (uint32_t)k, 3, 10, err, sizeof err);
        mm_members_join(b, 5 + (uint32_t)k, addrs[k], NULL, 4, 10, err, sizeof err);
        if (k & 1)
            mm_members_refute(a, (uint32_t)k, 5, err, sizeof err);
        if (k & 2)
            mm_members_leave(b, 1, 6, 10, err, sizeof err);
        static uint8_t buf[3 + 2 * (8 + 16 * 128)];
        size_t la = mm_members_encode(a, buf + 3, sizeof buf - 3);
        size_t lb = mm_members_encode(b, buf + 3 + la, sizeof buf - 3 - la);
        buf[0] = 15;
        buf[1] = (uint8_t)la;
        buf[2] = (uint8_t)(la >> 8);
        char path[512];
        snprintf(path, sizeof path, "%s/seed-%d", argv[1], k);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(buf, 1, 3 + la + lb, f) != 3 + la + lb)
            return 1;
        fclose(f);
        mm_members_free(a);
        mm_members_free(b);
    }
    return 0;
}
#endif
