/* node/allgather.h: the ring all-gather of the compressed outer exchange,
 * as a state machine driven by the transport's callbacks. The schedule is
 * a line of n-1 steps; three counters say where it stands: payloads
 * received (and used), sends handed to the transport, sends completed. */
#include "node/allgather.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

/* A ring neighbour: its connection's state and the frame it lent us. */
typedef struct {
    uint32_t peer;
    bool ever_up;
    bool lost;                 /* went down or left after having been up */
    char lost_why[128];
    bool held;                 /* a frame that arrived before we could use it (kept lent) */
    uint64_t held_round;
    mm_wire_vec held_meta;
    const void *held_body;
    size_t held_len;
} neighbour;

struct mm_allgather {
    mm_allgather_config cfg;
    uint32_t steps;            /* n - 1 */
    neighbour left, right;     /* left sends to us, we send to right (one peer when n = 2) */

    mm_ar_state st;
    bool have_round;
    uint64_t round;
    uint8_t *slots;
    size_t *lens;
    uint32_t recv_done;        /* payloads received and used (steps 0 .. recv_done-1) */
    uint32_t sends_issued;     /* handed to the transport */
    uint32_t sends_completed;
    bool issuing, pumping;
    uint64_t progress;
    char err[768];
};

mm_allgather *mm_allgather_new(const mm_allgather_config *cfg, char *err, size_t errlen)
{
    if (cfg->n < 1 || cfg->self >= cfg->n || cfg->vec_len < 1 || cfg->slot_bytes < 1) {
        snprintf(err, errlen, "all-gather: bad configuration (peer %u of %u, %llu floats, "
                 "%zu-byte payloads)", cfg->self, cfg->n, (unsigned long long)cfg->vec_len,
                 cfg->slot_bytes);
        return NULL;
    }
    mm_allgather *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->cfg = *cfg;
    g->steps = cfg->n - 1;
    g->left.peer = (cfg->self + cfg->n - 1) % cfg->n;
    g->right.peer = (cfg->self + 1) % cfg->n;
    return g;
}

void mm_allgather_free(mm_allgather *g) { free(g); }

uint64_t mm_allgather_progress(const mm_allgather *g) { return g->progress; }

int mm_allgather_partners(const mm_allgather *g, uint32_t *peers)
{
    if (g->cfg.n < 2)
        return 0;
    peers[0] = g->left.peer;
    if (g->right.peer == g->left.peer)
        return 1;
    peers[1] = g->right.peer;
    return 2;
}

/* The peer whose payload is received at step s (sent at step s + 1). */
static uint32_t origin_of(const mm_allgather *g, uint32_t s)
{
    return (g->cfg.self + g->cfg.n - (s + 1) % g->cfg.n) % g->cfg.n;
}

static uint8_t *slot(const mm_allgather *g, uint32_t peer)
{
    return g->slots + (size_t)peer * g->cfg.slot_bytes;
}

/* ---- where it stands ------------------------------------------------------ */

static void where(const mm_allgather *g, char *out, size_t len)
{
    if (g->recv_done < g->steps)
        snprintf(out, len, "round %llu, step %u of %u: waiting for peer %u's payload of peer %u",
                 (unsigned long long)g->round, g->recv_done + 1, g->steps, g->left.peer,
                 origin_of(g, g->recv_done));
    else
        snprintf(out, len, "round %llu: waiting for peer %u to take our payloads (%u of %u "
                 "sent)", (unsigned long long)g->round, g->right.peer, g->sends_completed,
                 g->steps);
}

static void release_held(mm_allgather *g, neighbour *p)
{
    if (p->held) {
        p->held = false;
        mm_transport_release(g->cfg.transport, p->peer);
    }
}

static void finish(mm_allgather *g, mm_ar_state st)
{
    g->st = st;
    if (g->cfg.done)
        g->cfg.done(g->cfg.ud, st, g->err);
}

static void fail(mm_allgather *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(mm_allgather *g, const char *fmt, ...)
{
    if (g->st != MM_AR_RUNNING)
        return;
    char why[320], pos[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    where(g, pos, sizeof pos);
    snprintf(g->err, sizeof g->err, "all-gather failed: %s (%s)", why, pos);
    mm_debug("%s", g->err);
    release_held(g, &g->left);
    /* a payload being read into a slot (vector_dst) must not go on
     * landing there once the slots are the caller's again */
    mm_transport_detach_dst(g->cfg.transport, g->left.peer);
    finish(g, MM_AR_FAILED);
}

void mm_allgather_abort(mm_allgather *g, const char *why) { fail(g, "%s", why); }

static void check_done(mm_allgather *g)
{
    if (g->st == MM_AR_RUNNING && g->recv_done == g->steps && g->sends_completed == g->steps)
        finish(g, MM_AR_DONE);
}

/* Hands the transport every send whose payload is here: step 0's (our
 * own) at once, step s's once step s-1's has been received. */
static void issue_sends(mm_allgather *g)
{
    if (g->issuing) /* (over TLS on_sent may come from inside the send) */
        return;
    g->issuing = true;
    while (g->st == MM_AR_RUNNING && g->sends_issued < g->steps &&
           g->sends_issued <= g->recv_done) {
        uint32_t s = g->sends_issued;
        uint32_t who = s == 0 ? g->cfg.self : origin_of(g, s - 1);
        mm_wire_vec meta = {.weight = 1.0, .codec = g->cfg.codec, .aux = (double)s,
                            .offset = 0, .count = g->cfg.vec_len};
        g->sends_issued++; /* before: its on_sent may come from inside the call */
        if (mm_transport_send_vec(g->cfg.transport, g->right.peer, g->round, &meta,
                                  slot(g, who), g->lens[who]) != 0) {
            g->sends_issued--; /* not up (yet): tried again when it is */
            break;
        }
    }
    g->issuing = false;
}

/* Whether meta is the frame due next: the whole vector, step recv_done,
 * a body a slot holds. */
static bool is_due(const mm_allgather *g, const mm_wire_vec *m, size_t body_len)
{
    return m->offset == 0 && m->count == g->cfg.vec_len && m->aux == (double)g->recv_done &&
           m->codec == g->cfg.codec && m->flags == 0 && body_len <= g->cfg.slot_bytes;
}

void *mm_allgather_vector_dst(mm_allgather *g, uint32_t peer, uint64_t round,
                              const mm_wire_vec *meta, size_t body_len)
{
    if (g->st != MM_AR_RUNNING || round != g->round || peer != g->left.peer || g->left.held ||
        g->recv_done >= g->steps || !is_due(g, meta, body_len))
        return NULL; /* pump judges it */
    return slot(g, origin_of(g, g->recv_done));
}

/* Uses the frame held, if it is the one due; then passes on what became
 * ready. */
static void pump(mm_allgather *g)
{
    if (g->pumping)
        return;
    g->pumping = true;
    neighbour *p = &g->left;
    while (g->st == MM_AR_RUNNING && g->recv_done < g->steps && p->held &&
           p->held_round == g->round) {
        const mm_wire_vec *m = &p->held_meta;
        if (!is_due(g, m, p->held_len)) {
            fail(g, "peer %u sent floats %llu..+%llu of step %.0f (%zu bytes, codec %u, flags "
                    "%u) where the whole payload of step %u (codec %u, at most %zu bytes) was "
                    "due: is it running another round, codec or number of peers?", p->peer,
                 (unsigned long long)m->offset, (unsigned long long)m->count, m->aux,
                 p->held_len, m->codec, m->flags, g->recv_done, g->cfg.codec, g->cfg.slot_bytes);
            break;
        }
        uint32_t who = origin_of(g, g->recv_done);
        uint8_t *dst = slot(g, who);
        if (p->held_body != dst) /* (else read in place: mm_allgather_vector_dst) */
            memcpy(dst, p->held_body, p->held_len);
        g->lens[who] = p->held_len;
        g->recv_done++;
        g->progress++;
        release_held(g, p);
        issue_sends(g);
    }
    g->pumping = false;
    check_done(g);
}

int mm_allgather_start(mm_allgather *g, uint64_t round, uint8_t *slots, size_t *lens)
{
    if (g->st == MM_AR_RUNNING)
        return -1;
    g->st = MM_AR_RUNNING;
    g->err[0] = 0;
    g->have_round = true;
    g->round = round;
    g->slots = slots;
    g->lens = lens;
    g->recv_done = g->sends_issued = g->sends_completed = 0;
    mm_transport_set_exchange(g->cfg.transport, round);
    if (g->cfg.n == 1) {
        finish(g, MM_AR_DONE);
        return 0;
    }
    uint32_t want[2];
    mm_transport_want(g->cfg.transport, want, mm_allgather_partners(g, want));
    neighbour *both[2] = {&g->left, &g->right};
    for (int k = 0; k < 2; k++)
        if (both[k]->lost) {
            fail(g, "peer %u %s", both[k]->peer, both[k]->lost_why);
            return 0;
        }
    /* a payload of this round may already be waiting (the left neighbour
     * started first): it was kept lent until now */
    if (g->left.held && g->left.held_round != round) {
        fail(g, "peer %u sent a payload of round %llu, this peer is at round %llu (resumed from "
                "checkpoints of different rounds?)", g->left.peer,
             (unsigned long long)g->left.held_round, (unsigned long long)round);
        return 0;
    }
    issue_sends(g);
    pump(g);
    return 0;
}

bool mm_allgather_on_vector(mm_allgather *g, uint32_t peer, uint64_t round,
                            const mm_wire_vec *meta, const void *body, size_t body_len)
{
    if (peer != g->left.peer || g->cfg.n < 2) {
        /* only the left neighbour sends to us */
        mm_transport_release(g->cfg.transport, peer);
        fail(g, "peer %u, which sends this peer nothing in the all-gather, sent a vector", peer);
        return true;
    }
    neighbour *p = &g->left;
    p->held = true;
    p->held_round = round;
    p->held_meta = *meta;
    p->held_body = body;
    p->held_len = body_len;
    if (g->st == MM_AR_RUNNING) {
        if (round < g->round) {
            fail(g, "peer %u sent a payload of round %llu, an earlier round", peer,
                 (unsigned long long)round);
            return true;
        }
        if (round > g->round && g->recv_done < g->steps) {
            fail(g, "peer %u sent a payload of round %llu before finishing this one", peer,
                 (unsigned long long)round);
            return true;
        }
        pump(g);
    } else if (g->have_round && round <= g->round) {
        release_held(g, p); /* a round that is over: nothing to do with it */
        mm_debug("all-gather: peer %u sent a payload of round %llu after it ended", peer,
                 (unsigned long long)round);
    }
    /* otherwise kept (lent: the transport reads nothing more from that
     * peer) until the round it belongs to starts */
    return true;
}

void mm_allgather_on_sent(mm_allgather *g, uint32_t peer, uint64_t round, bool ok)
{
    if (g->st != MM_AR_RUNNING || peer != g->right.peer || round != g->round ||
        g->sends_completed >= g->sends_issued)
        return;
    if (!ok) {
        fail(g, "peer %u went down (connection lost) before it took our payloads", peer);
        return;
    }
    g->sends_completed++;
    g->progress++;
    check_done(g);
}

void mm_allgather_on_peer(mm_allgather *g, uint32_t peer, mm_peer_state st)
{
    if (g->cfg.n < 2 || (peer != g->left.peer && peer != g->right.peer))
        return;
    neighbour *both[2] = {&g->left, &g->right};
    for (int k = 0; k < 2; k++) {
        neighbour *p = both[k];
        if (p->peer != peer)
            continue;
        if (st == MM_PEER_UP) {
            p->ever_up = true;
            continue;
        }
        if (!p->ever_up)
            continue; /* a dial that failed while peers start */
        /* still needed this round: its payloads to come, or ours to hand it */
        bool needed = g->st == MM_AR_RUNNING &&
                      ((p == &g->left && g->recv_done < g->steps) ||
                       (p == &g->right && g->sends_issued < g->steps));
        const char *what = st == MM_PEER_BYE ? "left (said goodbye)"
                                             : "went down (connection lost)";
        if (needed) {
            fail(g, "peer %u %s", peer, what);
            return;
        }
        if (!p->lost) {
            p->lost = true;
            snprintf(p->lost_why, sizeof p->lost_why, "%s after round %llu", what,
                     (unsigned long long)g->round);
        }
    }
    if (st == MM_PEER_UP)
        issue_sends(g);
}
