/* One record's rules: its address, and the merge of two records of one id
 * (docs/membership.md, "Merging two tables"). */
#include "member/member_int.h"

#include <stdio.h>
#include <string.h>

int mm__member_addr_check(const char *addr, size_t len, char *err, size_t errlen)
{
    if (len == 0 || len > MM_MEMBER_ADDR_MAX) {
        snprintf(err, errlen, "address of %zu bytes (1..%d)", len, MM_MEMBER_ADDR_MAX);
        return -1;
    }
    for (size_t i = 0; i < len; i++)
        if (addr[i] < 0x21 || addr[i] > 0x7e) {
            snprintf(err, errlen, "address byte %zu is 0x%02x, not printable ASCII", i,
                     (unsigned)(unsigned char)addr[i]);
            return -1;
        }
    size_t colon = len;
    while (colon > 0 && addr[colon - 1] != ':')
        colon--;
    /* colon: one past the last ':', 0 when there is none */
    size_t digits = len - colon;
    if (colon < 2 || digits == 0 || digits > 5) {
        snprintf(err, errlen, "address \"%.*s\" is not host:port", (int)len, addr);
        return -1;
    }
    unsigned port = 0;
    for (size_t i = colon; i < len; i++) {
        if (addr[i] < '0' || addr[i] > '9') {
            snprintf(err, errlen, "address \"%.*s\": the port is not a decimal number",
                     (int)len, addr);
            return -1;
        }
        port = port * 10 + (unsigned)(addr[i] - '0');
    }
    if (port == 0 || port > 65535) {
        snprintf(err, errlen, "address \"%.*s\": port %u is not 1..65535", (int)len, addr, port);
        return -1;
    }
    return 0;
}

void mm__member_make(mm_member *m, uint32_t id, uint32_t inc, uint64_t join, const char *addr,
                     size_t addr_len, const uint8_t *cert)
{
    memset(m, 0, sizeof *m);
    m->id = id;
    m->inc = inc;
    m->join = join;
    m->end = MM_MEMBER_END_NONE;
    m->kind = MM_END_NONE;
    m->addr_len = (uint8_t)addr_len;
    memcpy(m->addr, addr, addr_len);
    if (cert)
        memcpy(m->cert, cert, MM_MEMBER_CERT_LEN);
}

/* (addr, cert) as the wire's bytes: the address zero-padded to 64, then the
 * digest. */
static int addr_cert_cmp(const mm_member *a, const mm_member *b)
{
    int c = memcmp(a->addr, b->addr, MM_MEMBER_ADDR_MAX);
    return c ? c : memcmp(a->cert, b->cert, MM_MEMBER_CERT_LEN);
}

/* Which end of two equal ones wins: a removal over a leave (an end is
 * never "none" with another kind, so equal ends of kind none are equal). */
static bool end_before(uint64_t end, uint8_t kind, const mm_member *than)
{
    return end < than->end || (end == than->end && kind == MM_END_REMOVED && than->kind != kind);
}

bool mm__member_equal(const mm_member *a, const mm_member *b)
{
    return a->id == b->id && a->inc == b->inc && a->join == b->join && a->end == b->end &&
           a->kind == b->kind && a->addr_len == b->addr_len && addr_cert_cmp(a, b) == 0;
}

bool mm__member_merge_into(mm_member *a, const mm_member *b, bool *conflict)
{
    *conflict = false;
    if (b->inc < a->inc)
        return false;
    if (b->inc > a->inc) { /* the higher incarnation wins whole */
        *a = *b;
        return true;
    }
    bool changed = false;
    if (b->join < a->join) {
        a->join = b->join;
        changed = true;
    }
    if (end_before(b->end, b->kind, a)) {
        a->end = b->end;
        a->kind = b->kind;
        changed = true;
    }
    int c = addr_cert_cmp(a, b);
    if (c != 0) {
        *conflict = true;
        if (c > 0) {
            memcpy(a->addr, b->addr, sizeof a->addr);
            a->addr_len = b->addr_len;
            memcpy(a->cert, b->cert, sizeof a->cert);
            changed = true;
        }
    }
    return changed;
}
