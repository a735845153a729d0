/* The MEMBERS payload (docs/protocol.md 7.1): an 8-byte head, then one
 * 128-byte record per id, ascending. The decoder trusts no byte: it checks
 * the whole payload before it touches the table. */
#include "member/member_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A record's fields at these offsets. */
enum {
    OFF_ID = 0,
    OFF_INC = 4,
    OFF_JOIN = 8,
    OFF_END = 16,
    OFF_KIND = 24,
    OFF_FLAGS = 25,
    OFF_ADDR_LEN = 26,
    OFF_RESERVED = 28,
    OFF_CERT = 32,
    OFF_ADDR = 64,
};

size_t mm_members_encoded_len(const mm_members *t)
{
    return MM_MEMBERS_HEAD_LEN + (size_t)t->count * MM_MEMBERS_RECORD_LEN;
}

size_t mm_members_encode(const mm_members *t, uint8_t *out, size_t cap)
{
    size_t len = mm_members_encoded_len(t);
    if (cap < len)
        return 0;
    memset(out, 0, len);
    mm__le_put(out, t->count, 4);
    for (uint32_t i = 0; i < t->count; i++) {
        const mm_member *m = &t->rec[t->ids[i]];
        uint8_t *r = out + MM_MEMBERS_HEAD_LEN + (size_t)i * MM_MEMBERS_RECORD_LEN;
        mm__le_put(r + OFF_ID, m->id, 4);
        mm__le_put(r + OFF_INC, m->inc, 4);
        mm__le_put(r + OFF_JOIN, m->join, 8);
        mm__le_put(r + OFF_END, m->end, 8);
        r[OFF_KIND] = m->kind;
        mm__le_put(r + OFF_ADDR_LEN, m->addr_len, 2);
        memcpy(r + OFF_CERT, m->cert, MM_MEMBER_CERT_LEN);
        memcpy(r + OFF_ADDR, m->addr, m->addr_len);
    }
    return len;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* Record r's bytes, the one after id `prev` (UINT64_MAX: the first), for a
 * table of `capacity`: 0, or -1 with what is wrong in err. */
static int check_record(const uint8_t *r, uint64_t prev, uint32_t capacity, char *err,
                        size_t errlen)
{
    uint32_t id = (uint32_t)mm__le_get(r + OFF_ID, 4);
    uint64_t join = mm__le_get(r + OFF_JOIN, 8), end = mm__le_get(r + OFF_END, 8);
    unsigned kind = r[OFF_KIND], len = (unsigned)mm__le_get(r + OFF_ADDR_LEN, 2);
    char why[160];
    if (prev != UINT64_MAX && id <= prev)
        snprintf(err, errlen, "id %u after id %" PRIu64 ": ids must be ascending and distinct",
                 id, prev);
    else if (id >= capacity)
        snprintf(err, errlen, "id %u: the table holds ids 0..%u (--max-peers %u)", id,
                 capacity - 1, capacity);
    else if (kind > MM_END_REMOVED)
        snprintf(err, errlen, "id %u: kind %u is none of 0 none, 1 left, 2 removed", id, kind);
    else if ((kind == MM_END_NONE) != (end == MM_MEMBER_END_NONE))
        snprintf(err, errlen, kind == MM_END_NONE ? "id %u: kind none with an end" :
                                                    "id %u: kind left or removed without an end",
                 id);
    else if (join >= end)
        snprintf(err, errlen, "id %u: join %" PRIu64 " is not before end %" PRIu64, id, join,
                 end);
    else if (r[OFF_FLAGS] != 0)
        snprintf(err, errlen, "id %u: flags 0x%02x, not 0", id, r[OFF_FLAGS]);
    else if (!all_zero(r + OFF_RESERVED, 4))
        snprintf(err, errlen, "id %u: reserved bytes not 0", id);
    else if (mm__member_addr_check((const char *)r + OFF_ADDR, len, why, sizeof why) != 0)
        snprintf(err, errlen, "id %u: %s", id, why);
    else if (!all_zero(r + OFF_ADDR + len, MM_MEMBER_ADDR_MAX - len))
        snprintf(err, errlen, "id %u: address padding not 0", id);
    else
        return 0;
    return -1;
}

static void get_record(const uint8_t *r, mm_member *m)
{
    uint32_t id = (uint32_t)mm__le_get(r + OFF_ID, 4), inc = (uint32_t)mm__le_get(r + OFF_INC, 4);
    size_t len = (size_t)mm__le_get(r + OFF_ADDR_LEN, 2);
    mm__member_make(m, id, inc, mm__le_get(r + OFF_JOIN, 8), (const char *)r + OFF_ADDR, len,
                    r + OFF_CERT);
    m->end = mm__le_get(r + OFF_END, 8);
    m->kind = r[OFF_KIND];
}

int mm_members_decode(mm_members *t, const uint8_t *p, size_t len, char *err, size_t errlen)
{
    if (len < MM_MEMBERS_HEAD_LEN || (len - MM_MEMBERS_HEAD_LEN) % MM_MEMBERS_RECORD_LEN) {
        snprintf(err, errlen, "MEMBERS payload of %zu bytes: not %d + %d per record", len,
                 MM_MEMBERS_HEAD_LEN, MM_MEMBERS_RECORD_LEN);
        return -1;
    }
    uint64_t count = mm__le_get(p, 4);
    if (count != (len - MM_MEMBERS_HEAD_LEN) / MM_MEMBERS_RECORD_LEN) {
        snprintf(err, errlen, "MEMBERS payload says %" PRIu64 " records and holds %zu", count,
                 (len - MM_MEMBERS_HEAD_LEN) / MM_MEMBERS_RECORD_LEN);
        return -1;
    }
    if (count > t->capacity) {
        snprintf(err, errlen, "MEMBERS payload of %" PRIu64 " records: the table holds %u",
                 count, t->capacity);
        return -1;
    }
    if (!all_zero(p + 4, 4)) {
        snprintf(err, errlen, "MEMBERS payload: reserved head bytes not 0");
        return -1;
    }
    const uint8_t *recs = p + MM_MEMBERS_HEAD_LEN;
    uint64_t prev = UINT64_MAX;
    for (uint64_t i = 0; i < count; i++) {
        const uint8_t *r = recs + i * MM_MEMBERS_RECORD_LEN;
        char why[240];
        if (check_record(r, prev, t->capacity, why, sizeof why) != 0) {
            snprintf(err, errlen, "MEMBERS record %" PRIu64 ": %s", i, why);
            return -1;
        }
        prev = mm__le_get(r + OFF_ID, 4);
    }
    mm__members_clear(t);
    for (uint64_t i = 0; i < count; i++) {
        mm_member m;
        get_record(recs + i * MM_MEMBERS_RECORD_LEN, &m);
        mm__members_put(t, &m); /* ascending: appended */
    }
    return 0;
}
