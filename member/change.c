/* The four local changes (docs/membership.md, "Changes, and the round they
 * take effect"). leave and suspect lower an end through the merge's own
 * rule, so a local change moves a record exactly as receiving it would:
 * it can only go up the lattice. */
#include "member/member_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The round `delay` rounds after now, or -1 with why in err when delay is
 * 0 (a change takes effect in a later round: the caller has computed the
 * view of its own already) or the sum reaches "none". */
static int ahead(uint64_t now, uint64_t delay, uint64_t *at, char *err, size_t errlen)
{
    if (delay == 0) {
        snprintf(err, errlen, "a change takes effect at least one round ahead (delay 0)");
        return -1;
    }
    if (delay >= MM_MEMBER_END_NONE - now) {
        snprintf(err, errlen, "round %" PRIu64 " + %" PRIu64 " is past the largest round", now,
                 delay);
        return -1;
    }
    *at = now + delay;
    return 0;
}

/* Why a record still counts as a member at now: "it joins at round 30",
 * "it is a member since round 0 and does not end", "its membership ends at
 * round 42". */
static void describe_live(const mm_member *m, uint64_t now, char *out, size_t len)
{
    if (m->join > now)
        snprintf(out, len, "it joins at round %" PRIu64, m->join);
    else if (m->end == MM_MEMBER_END_NONE)
        snprintf(out, len, "it is a member since round %" PRIu64 " and does not end", m->join);
    else
        snprintf(out, len, "its membership ends at round %" PRIu64, m->end);
}

mm_change_result mm_members_join(mm_members *t, uint32_t id, const char *addr,
                                 const uint8_t *cert, uint64_t now, uint64_t delay, char *err,
                                 size_t errlen)
{
    uint64_t join;
    if (ahead(now, delay, &join, err, errlen) != 0)
        return MM_REFUSED;
    if (id >= t->capacity) {
        snprintf(err, errlen, "peer %u: the table holds ids 0..%u (--max-peers %u)", id,
                 t->capacity - 1, t->capacity);
        return MM_REFUSED;
    }
    char why[160];
    size_t len = strnlen(addr, MM_MEMBER_ADDR_MAX + 1);
    if (mm__member_addr_check(addr, len, why, sizeof why) != 0) {
        snprintf(err, errlen, "peer %u: %s", id, why);
        return MM_REFUSED;
    }
    const mm_member *old = mm_members_get(t, id);
    uint32_t inc = 0;
    if (old) {
        if (old->end > now) {
            describe_live(old, now, why, sizeof why);
            snprintf(err, errlen, "peer %u is still a member at round %" PRIu64
                     " (%s; incarnation %u)", id, now, why, old->inc);
            return MM_REFUSED;
        }
        if (old->inc == UINT32_MAX) {
            snprintf(err, errlen, "peer %u has used every incarnation", id);
            return MM_REFUSED;
        }
        inc = old->inc + 1;
    }
    mm_member m;
    mm__member_make(&m, id, inc, join, addr, len, cert);
    mm__members_put(t, &m);
    return MM_CHANGED;
}

/* Lowers id's end to `end` of `kind` by the merge's rule. */
static mm_change_result lower_end(mm_members *t, uint32_t id, uint64_t end, uint8_t kind)
{
    mm_member c = t->rec[id];
    c.end = end;
    c.kind = kind;
    bool conflict;
    return mm__member_merge_into(&t->rec[id], &c, &conflict) ? MM_CHANGED : MM_UNCHANGED;
}

mm_change_result mm_members_leave(mm_members *t, uint32_t self, uint64_t now, uint64_t delay,
                                  char *err, size_t errlen)
{
    const mm_member *m = mm_members_get(t, self);
    if (!m || m->end <= now) {
        snprintf(err, errlen, "peer %u is not a member at round %" PRIu64 ": nothing to leave",
                 self, now);
        return MM_REFUSED;
    }
    uint64_t end;
    uint64_t d = delay < MM_MEMBER_LEAVE_DELAY_MAX ? delay : MM_MEMBER_LEAVE_DELAY_MAX;
    if (ahead(now, d, &end, err, errlen) != 0)
        return MM_REFUSED;
    if (end <= m->join) { /* leaving before its first round: it keeps that one */
        if (m->join == MM_MEMBER_END_NONE - 1) {
            snprintf(err, errlen, "peer %u joins at the largest round", self);
            return MM_REFUSED;
        }
        end = m->join + 1;
    }
    return lower_end(t, self, end, MM_END_LEFT);
}

mm_change_result mm_members_suspect(mm_members *t, uint32_t id, uint64_t now, uint64_t delay,
                                    char *err, size_t errlen)
{
    uint64_t end;
    if (ahead(now, delay, &end, err, errlen) != 0)
        return MM_REFUSED;
    const mm_member *m = mm_members_get(t, id);
    if (!m || m->join > now) {
        if (m)
            snprintf(err, errlen, "peer %u is not a member at round %" PRIu64
                     " (it joins at round %" PRIu64 ")", id, now, m->join);
        else
            snprintf(err, errlen, "peer %u has no record", id);
        return MM_REFUSED;
    }
    return lower_end(t, id, end, MM_END_REMOVED);
}

mm_refute_result mm_members_refute(mm_members *t, uint32_t self, uint64_t now, char *err,
                                   size_t errlen)
{
    const mm_member *m = mm_members_get(t, self);
    if (!m) {
        snprintf(err, errlen, "peer %u has no record: it must join", self);
        return MM_REFUTE_REFUSED;
    }
    if (m->end == MM_MEMBER_END_NONE)
        return MM_NOTHING_TO_REFUTE;
    if (m->inc == UINT32_MAX) {
        snprintf(err, errlen, "peer %u has used every incarnation", self);
        return MM_REFUTE_REFUSED;
    }
    bool late = m->end <= now;
    mm_member r = *m;
    r.inc++;
    r.end = MM_MEMBER_END_NONE;
    r.kind = MM_END_NONE;
    mm__members_put(t, &r);
    return late ? MM_REFUTED_LATE : MM_REFUTED;
}
