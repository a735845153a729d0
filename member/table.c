/* The table: its records, the starting members, copies, the view of a
 * round and its tag, what changes when, and the merge of two tables
 * (docs/membership.md). */
#include "base/sha256.h"
#include "member/member_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mm_members *mm_members_new(uint32_t capacity)
{
    if (capacity == 0 || capacity > MM_MEMBERS_CAPACITY_MAX)
        return NULL;
    mm_members *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->capacity = capacity;
    t->ids = calloc(capacity, sizeof *t->ids);
    t->scratch = calloc(capacity, sizeof *t->scratch);
    t->present = calloc(capacity, sizeof *t->present);
    t->rec = calloc(capacity, sizeof *t->rec);
    if (!t->ids || !t->scratch || !t->present || !t->rec) {
        mm_members_free(t);
        return NULL;
    }
    return t;
}

void mm_members_free(mm_members *t)
{
    if (!t)
        return;
    free(t->ids);
    free(t->scratch);
    free(t->present);
    free(t->rec);
    free(t);
}

uint32_t mm_members_capacity(const mm_members *t)
{
    return t->capacity;
}

uint32_t mm_members_count(const mm_members *t)
{
    return t->count;
}

const mm_member *mm_members_at(const mm_members *t, uint32_t i)
{
    return i < t->count ? &t->rec[t->ids[i]] : NULL;
}

const mm_member *mm_members_get(const mm_members *t, uint32_t id)
{
    return id < t->capacity && t->present[id] ? &t->rec[id] : NULL;
}

void mm__members_clear(mm_members *t)
{
    for (uint32_t i = 0; i < t->count; i++)
        t->present[t->ids[i]] = false;
    t->count = 0;
}

void mm__members_put(mm_members *t, const mm_member *m)
{
    uint32_t id = m->id;
    if (!t->present[id]) {
        uint32_t at = t->count;
        while (at > 0 && t->ids[at - 1] > id)
            at--;
        memmove(t->ids + at + 1, t->ids + at, (t->count - at) * sizeof *t->ids);
        t->ids[at] = id;
        t->count++;
        t->present[id] = true;
    }
    t->rec[id] = *m;
}

int mm_members_start(mm_members *t, uint32_t n, const char *const *addrs, char *err,
                     size_t errlen)
{
    if (n == 0 || n > t->capacity) {
        snprintf(err, errlen, "%u starting members: the table holds ids 0..%u (--max-peers %u)",
                 n, t->capacity - 1, t->capacity);
        return -1;
    }
    for (uint32_t id = 0; id < n; id++) {
        char why[160];
        if (mm__member_addr_check(addrs[id], strnlen(addrs[id], MM_MEMBER_ADDR_MAX + 1), why,
                                  sizeof why) != 0) {
            snprintf(err, errlen, "peer %u: %s", id, why);
            return -1;
        }
    }
    mm__members_clear(t);
    for (uint32_t id = 0; id < n; id++) {
        mm_member m;
        mm__member_make(&m, id, 0, 0, addrs[id], strlen(addrs[id]), NULL);
        mm__members_put(t, &m);
    }
    return 0;
}

int mm_members_copy(mm_members *dst, const mm_members *src)
{
    if (dst == src)
        return 0;
    if (src->count && src->ids[src->count - 1] >= dst->capacity)
        return -1;
    mm__members_clear(dst);
    for (uint32_t i = 0; i < src->count; i++) {
        uint32_t id = src->ids[i];
        dst->ids[i] = id;
        dst->present[id] = true;
        dst->rec[id] = src->rec[id];
    }
    dst->count = src->count;
    return 0;
}

bool mm_members_equal(const mm_members *a, const mm_members *b)
{
    if (a->count != b->count)
        return false;
    for (uint32_t i = 0; i < a->count; i++)
        if (a->ids[i] != b->ids[i] || !mm__member_equal(&a->rec[a->ids[i]], &b->rec[b->ids[i]]))
            return false;
    return true;
}

/* ---- the view of a round -------------------------------------------------- */

static bool member_at(const mm_member *m, uint64_t round)
{
    return m->join <= round && round < m->end;
}

/* The tag's bytes go to SHA-256 in pieces of this many members. */
#define TAG_BATCH 64

uint32_t mm_members_view(const mm_members *t, uint64_t round, uint32_t *ids, uint32_t *tag)
{
    static const char magic[] = "murmur-view-v1";
    mm_sha256_ctx sha;
    uint8_t buf[8 * TAG_BATCH];
    size_t used = 0;
    if (tag) {
        mm_sha256_init(&sha);
        mm_sha256_update(&sha, magic, sizeof magic - 1);
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        const mm_member *m = &t->rec[t->ids[i]];
        if (!member_at(m, round))
            continue;
        if (ids)
            ids[n] = m->id;
        n++;
        if (!tag)
            continue;
        mm__le_put(buf + used, m->id, 4);
        mm__le_put(buf + used + 4, m->inc, 4);
        used += 8;
        if (used == sizeof buf) {
            mm_sha256_update(&sha, buf, used);
            used = 0;
        }
    }
    if (tag) {
        uint8_t d[MM_SHA256_LEN];
        mm_sha256_update(&sha, buf, used);
        mm_sha256_final(&sha, d);
        uint32_t v = (uint32_t)mm__le_get(d, 4);
        *tag = v ? v : 1; /* 0 means "static run" on the wire */
    }
    return n;
}

bool mm_members_is_member(const mm_members *t, uint32_t id, uint64_t round)
{
    const mm_member *m = mm_members_get(t, id);
    return m && member_at(m, round);
}

uint64_t mm_members_next_change(const mm_members *t, uint64_t round)
{
    uint64_t next = MM_MEMBER_END_NONE;
    for (uint32_t i = 0; i < t->count; i++) {
        const mm_member *m = &t->rec[t->ids[i]];
        if (m->join > round && m->join < next)
            next = m->join;
        if (m->end > round && m->end < next) /* end none never is below next */
            next = m->end;
    }
    return next;
}

uint32_t mm_members_changes(const mm_members *t, uint64_t round, mm_member_change *out,
                            uint32_t max)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        const mm_member *m = &t->rec[t->ids[i]];
        uint8_t what;
        if (m->join == round)
            what = MM_CHANGE_JOINED;
        else if (m->end == round && m->kind != MM_END_NONE)
            what = m->kind == MM_END_LEFT ? MM_CHANGE_LEFT : MM_CHANGE_REMOVED;
        else
            continue;
        if (n < max)
            out[n] = (mm_member_change){.id = m->id, .inc = m->inc, .what = what};
        n++;
    }
    return n;
}

/* ---- merging -------------------------------------------------------------- */

/* t->ids becomes the ascending union of its ids and src's (through
 * scratch): O(both counts). */
static void union_ids(mm_members *t, const mm_members *src)
{
    uint32_t i = 0, j = 0, n = 0;
    while (i < t->count || j < src->count) {
        uint32_t a = i < t->count ? t->ids[i] : UINT32_MAX;
        uint32_t b = j < src->count ? src->ids[j] : UINT32_MAX;
        uint32_t take = a < b ? a : b;
        t->scratch[n++] = take;
        i += a == take;
        j += b == take;
    }
    uint32_t *old = t->ids;
    t->ids = t->scratch;
    t->scratch = old;
    t->count = n;
}

int mm_members_merge(mm_members *dst, const mm_members *src, uint32_t self,
                     mm_members_merge_stats *st)
{
    mm_members_merge_stats s = {0};
    if (src->count && src->ids[src->count - 1] >= dst->capacity)
        return -1;
    const mm_member *mine = mm_members_get(dst, self);
    uint32_t self_inc = mine ? mine->inc : 0;
    uint64_t self_end = mine ? mine->end : 0;
    for (uint32_t j = 0; j < src->count; j++) {
        uint32_t id = src->ids[j];
        const mm_member *b = &src->rec[id];
        if (!dst->present[id]) {
            dst->rec[id] = *b; /* listed in dst->ids by union_ids below */
            s.added++;
            s.changed++;
            continue;
        }
        bool conflict;
        s.changed += mm__member_merge_into(&dst->rec[id], b, &conflict);
        s.conflicts += conflict;
    }
    if (s.added) {
        union_ids(dst, src);
        for (uint32_t j = 0; j < src->count; j++)
            dst->present[src->ids[j]] = true;
    }
    if (mine) {
        s.self_superseded = mine->inc > self_inc;
        s.self_ended = mine->inc == self_inc && mine->end < self_end;
    }
    if (st)
        *st = s;
    return (int)s.changed;
}
