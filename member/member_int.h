/* Internals shared by member/'s files: the table's layout, the record's
 * rules (record.c: its address, its merge), and the inserting of a record
 * (table.c) that the local changes (change.c) and the decoder (codec.c)
 * use. */
#ifndef MURMUR_MEMBER_INT_H
#define MURMUR_MEMBER_INT_H

#include "member/member.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Records live at rec[id] (present[id] says whether there is one), and
 * ids lists the present ids ascending, so a walk over the records costs
 * the records held, not the capacity. scratch (capacity entries) is where a
 * merge builds the union of two id lists. */
struct mm_members {
    uint32_t capacity;
    uint32_t count;
    uint32_t *ids;
    uint32_t *scratch;
    bool *present;
    mm_member *rec;
};

/* addr[0..len) is printable ASCII "host:port" of 1..MM_MEMBER_ADDR_MAX
 * bytes, the host not empty, the port decimal 1..65535. 0, or -1 with what
 * is wrong in err. */
int mm__member_addr_check(const char *addr, size_t len, char *err, size_t errlen);
/* A record with every byte defined (padding included, so records compare
 * and copy whole): id, inc, join, end none, addr (checked by the caller),
 * cert (NULL: 0). */
void mm__member_make(mm_member *m, uint32_t id, uint32_t inc, uint64_t join, const char *addr,
                     size_t addr_len, const uint8_t *cert);
/* *a merged with b, of the same id (docs/membership.md, "Merging two
 * tables"). Returns whether *a changed; *conflict says whether both had the
 * same inc and another (addr, cert). */
bool mm__member_merge_into(mm_member *a, const mm_member *b, bool *conflict);
bool mm__member_equal(const mm_member *a, const mm_member *b);

/* Puts m at rec[m->id] (m->id < capacity), inserting the id in order when
 * the table had no record of it (O(count)). */
void mm__members_put(mm_members *t, const mm_member *m);
/* Removes every record (O(count)). */
void mm__members_clear(mm_members *t);

/* Little-endian integers of `bytes` bytes, the wire's and the tag's. */
static inline void mm__le_put(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t mm__le_get(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

#endif
