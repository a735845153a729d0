/* node/allreduce.h: the ring all-reduce as a state machine driven by the
 * transport's callbacks. Counters, not queues: the schedule is fixed, so
 * the n-th chunk received, the n-th send handed to the transport and the
 * n-th send completed each name one (step, chunk) pair. */
#include "node/allreduce.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

struct mm_allreduce {
    mm_allreduce_config cfg;
    uint32_t left, right;
    int steps;                    /* 2(n-1) */
    uint64_t *seg_off;            /* [n+1]: segment s is floats [seg_off[s], seg_off[s+1]) */
    uint64_t *send_first;         /* [steps+1]: index of step g's first send */
    uint64_t *recv_first;         /* [steps+1]: index of step g's first receive */
    uint64_t m0;                  /* sends of step 0 (ready at once) */

    mm_ar_state st;
    bool have_round;
    uint64_t round;
    const float *in;
    float *out;
    uint64_t recv_done;           /* chunks received and used */
    uint64_t sends_issued;        /* handed to the transport */
    uint64_t sends_completed;     /* on_sent(ok) */
    int recv_step, send_step;     /* steps of the next receive and the next send */
    bool issuing;                 /* inside issue_sends */
    uint64_t progress;

    /* a chunk that arrived before we could use it (kept lent) */
    bool held;
    uint64_t held_round;
    mm_wire_vec held_meta;
    const void *held_body;
    size_t held_len;

    bool ever_up[2];              /* left, right */
    bool lost[2];                 /* went down or left after having been up */
    char lost_why[2][128];
    char err[768];
};

static uint32_t seg_of(const mm_allreduce *a, int64_t s)
{
    int64_t n = a->cfg.n;
    return (uint32_t)(((s % n) + n) % n);
}
static uint64_t chunks_of(const mm_allreduce *a, uint32_t seg)
{
    uint64_t len = a->seg_off[seg + 1] - a->seg_off[seg], c = a->cfg.chunk;
    return (len + c - 1) / c;
}
/* Step g: peer i sends segment i-g and receives segment i-g-1. */
static uint32_t send_seg(const mm_allreduce *a, int g) { return seg_of(a, (int64_t)a->cfg.self - g); }
static uint32_t recv_seg(const mm_allreduce *a, int g) { return seg_of(a, (int64_t)a->cfg.self - g - 1); }

mm_allreduce *mm_allreduce_new(const mm_allreduce_config *cfg, char *err, size_t errlen)
{
    if (cfg->n < 1 || cfg->self >= cfg->n || cfg->len < 1) {
        snprintf(err, errlen, "all-reduce: bad configuration (peer %u of %u, %llu floats)",
                 cfg->self, cfg->n, (unsigned long long)cfg->len);
        return NULL;
    }
    mm_allreduce *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    a->cfg = *cfg;
    if (!a->cfg.chunk)
        a->cfg.chunk = MM_ALLREDUCE_CHUNK_DEFAULT;
    uint32_t n = cfg->n;
    a->left = (cfg->self + n - 1) % n;
    a->right = (cfg->self + 1) % n;
    a->steps = 2 * (int)(n - 1);
    a->seg_off = calloc(n + 1, sizeof *a->seg_off);
    a->send_first = calloc((size_t)a->steps + 1, sizeof *a->send_first);
    a->recv_first = calloc((size_t)a->steps + 1, sizeof *a->recv_first);
    if (!a->seg_off || !a->send_first || !a->recv_first) {
        mm_allreduce_free(a);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (uint32_t s = 0; s <= n; s++) /* as even as integers allow */
        a->seg_off[s] = (uint64_t)((unsigned __int128)cfg->len * s / n);
    for (int g = 0; g < a->steps; g++) {
        a->send_first[g + 1] = a->send_first[g] + chunks_of(a, send_seg(a, g));
        a->recv_first[g + 1] = a->recv_first[g] + chunks_of(a, recv_seg(a, g));
    }
    a->m0 = a->steps ? a->send_first[1] : 0;
    return a;
}

void mm_allreduce_free(mm_allreduce *a)
{
    if (!a)
        return;
    free(a->seg_off);
    free(a->send_first);
    free(a->recv_first);
    free(a);
}

mm_ar_state mm_allreduce_state(const mm_allreduce *a) { return a->st; }
const char *mm_allreduce_error(const mm_allreduce *a) { return a->err; }
uint64_t mm_allreduce_progress(const mm_allreduce *a) { return a->progress; }
uint64_t mm_allreduce_messages(const mm_allreduce *a) { return a->send_first[a->steps]; }

/* "step 3 of 6 (all-gather 1 of 3)" */
static void step_name(const mm_allreduce *a, int g, char *out, size_t len)
{
    int half = (int)a->cfg.n - 1;
    snprintf(out, len, "step %d of %d (%s %d of %d)", g + 1, a->steps,
             g < half ? "reduce-scatter" : "all-gather", g < half ? g + 1 : g - half + 1, half);
}

/* Where the ring stands: what this peer waits for. */
static void where(const mm_allreduce *a, char *out, size_t len)
{
    char s[96];
    if (a->recv_done < a->recv_first[a->steps]) {
        int g = 0;
        while (a->recv_first[g + 1] <= a->recv_done)
            g++;
        step_name(a, g, s, sizeof s);
        snprintf(out, len, "round %llu, %s: waiting for peer %u's chunk %llu of %llu",
                 (unsigned long long)a->round, s, a->left,
                 (unsigned long long)(a->recv_done - a->recv_first[g] + 1),
                 (unsigned long long)(a->recv_first[g + 1] - a->recv_first[g]));
    } else {
        int g = 0;
        while (g + 1 < a->steps && a->send_first[g + 1] <= a->sends_completed)
            g++;
        step_name(a, g, s, sizeof s);
        snprintf(out, len, "round %llu, %s: waiting for peer %u to take our chunks (%llu of %llu sent)",
                 (unsigned long long)a->round, s, a->right,
                 (unsigned long long)a->sends_completed,
                 (unsigned long long)a->send_first[a->steps]);
    }
}

static void release_held(mm_allreduce *a)
{
    if (a->held) {
        a->held = false;
        mm_transport_release(a->cfg.transport, a->left);
    }
}

static void finish(mm_allreduce *a, mm_ar_state st)
{
    a->st = st;
    if (a->cfg.done)
        a->cfg.done(a->cfg.ud, st, a->err);
}

static void fail(mm_allreduce *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(mm_allreduce *a, const char *fmt, ...)
{
    if (a->st != MM_AR_RUNNING)
        return;
    char why[256], pos[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    where(a, pos, sizeof pos);
    snprintf(a->err, sizeof a->err, "all-reduce failed: %s (%s)", why, pos);
    mm_debug("%s", a->err);
    release_held(a);
    /* a chunk being read into out (vector_dst) must not go on landing
     * there once out is the caller's again */
    mm_transport_detach_dst(a->cfg.transport, a->left);
    finish(a, MM_AR_FAILED);
}

void mm_allreduce_abort(mm_allreduce *a, const char *why) { fail(a, "%s", why); }

static void check_done(mm_allreduce *a)
{
    if (a->st == MM_AR_RUNNING && a->recv_done == a->recv_first[a->steps] &&
        a->sends_completed == a->send_first[a->steps])
        finish(a, MM_AR_DONE);
}

/* Hands the transport every send whose chunk is ready: step 0's at once,
 * step g's chunk j once step g-1's chunk j has been received and used. */
static void issue_sends(mm_allreduce *a)
{
    /* Not re-entered: over TLS a send may complete inside
     * mm_transport_send_vec (encrypted at once), and on_sent comes here. */
    if (a->issuing)
        return;
    a->issuing = true;
    uint64_t total = a->send_first[a->steps];
    for (;;) {
        uint64_t ready = a->m0 + a->recv_done;
        if (ready > total)
            ready = total;
        if (a->st != MM_AR_RUNNING || a->sends_issued >= ready)
            break;
        uint64_t q = a->sends_issued;
        while (a->send_first[a->send_step + 1] <= q)
            a->send_step++;
        int g = a->send_step;
        uint32_t seg = send_seg(a, g);
        uint64_t off = a->seg_off[seg] + (q - a->send_first[g]) * a->cfg.chunk;
        uint64_t end = a->seg_off[seg + 1], cnt = end - off < a->cfg.chunk ? end - off : a->cfg.chunk;
        const float *src = (g == 0 ? a->in : a->out) + off;
        mm_wire_vec meta = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .aux = (double)g,
                            .offset = off, .count = cnt};
        a->sends_issued++; /* before: its on_sent may come from inside the call */
        if (mm_transport_send_vec(a->cfg.transport, a->right, a->round, &meta, src, 4 * cnt) != 0) {
            a->sends_issued--; /* not up (yet): tried again when it is */
            break;
        }
    }
    a->issuing = false;
}

/* o[k] = a[k] + b[k], divided by div unless div is 1: element by element,
 * the same IEEE operations as the scalar loop, four at a time with SSE2
 * (GCC at -O2 left the plain loop scalar: 11 % of a peer's CPU in a 16 MB
 * all-reduce). o may be a (in place), not b. */
static void add_chunk(float *o, const float *a, const float *b, uint64_t n, float div)
{
    uint64_t k = 0;
#if defined(__SSE2__)
    __m128 d = _mm_set1_ps(div);
    for (; k + 8 <= n; k += 8) {
        __m128 x = _mm_add_ps(_mm_loadu_ps(a + k), _mm_loadu_ps(b + k));
        __m128 y = _mm_add_ps(_mm_loadu_ps(a + k + 4), _mm_loadu_ps(b + k + 4));
        if (div != 1.0f) {
            x = _mm_div_ps(x, d);
            y = _mm_div_ps(y, d);
        }
        _mm_storeu_ps(o + k, x);
        _mm_storeu_ps(o + k + 4, y);
    }
#endif
    for (; k < n; k++)
        o[k] = div != 1.0f ? (a[k] + b[k]) / div : a[k] + b[k];
}

/* The chunk due next from the left: its step g, its index j within the
 * step, and its floats [off, off + cnt). */
static void due(mm_allreduce *a, int *g, uint64_t *j, uint64_t *off, uint64_t *cnt)
{
    uint64_t r = a->recv_done;
    while (a->recv_first[a->recv_step + 1] <= r)
        a->recv_step++;
    *g = a->recv_step;
    uint32_t seg = recv_seg(a, *g);
    *j = r - a->recv_first[*g];
    *off = a->seg_off[seg] + *j * a->cfg.chunk;
    uint64_t end = a->seg_off[seg + 1];
    *cnt = end - *off < a->cfg.chunk ? end - *off : a->cfg.chunk;
}

/* All-gather step g's chunk j overwrites floats of out that were sent at
 * step g+1-n (from in at step 0 unless in place): true once that send has
 * finished. TCP keeps the order of our sends, so they complete in order. */
static bool may_overwrite(const mm_allreduce *a, int g, uint64_t j)
{
    int sent_at = g + 1 - (int)a->cfg.n;
    bool from_out = sent_at > 0 || a->in == a->out;
    return !from_out || a->sends_completed > a->send_first[sent_at] + j;
}

float *mm_allreduce_vector_dst(mm_allreduce *a, uint32_t peer, uint64_t round,
                               const mm_wire_vec *meta)
{
    if (a->st != MM_AR_RUNNING || a->held || peer != a->left || round != a->round ||
        a->recv_done >= a->recv_first[a->steps])
        return NULL;
    int g;
    uint64_t j, off, cnt;
    due(a, &g, &j, &off, &cnt);
    if (g < (int)a->cfg.n - 1 || meta->offset != off || meta->count != cnt ||
        meta->aux != (double)g || !may_overwrite(a, g, j))
        return NULL; /* an addition, or not what is due: use_held judges it */
    return a->out + off;
}

/* Uses the chunk a->held if its turn has come; true when it was used. */
static bool use_held(mm_allreduce *a)
{
    if (!a->held || a->st != MM_AR_RUNNING || a->held_round != a->round)
        return false;
    int g, half = (int)a->cfg.n - 1;
    uint64_t j, off, cnt;
    due(a, &g, &j, &off, &cnt);
    const mm_wire_vec *m = &a->held_meta;
    if (m->offset != off || m->count != cnt || m->aux != (double)g) {
        char s[96];
        step_name(a, g, s, sizeof s);
        fail(a, "peer %u sent floats %llu..+%llu of step %.0f where %s, floats %llu..+%llu, "
                "was due: is it running with another --allreduce-chunk, or another round?",
             a->left, (unsigned long long)m->offset, (unsigned long long)m->count, m->aux, s,
             (unsigned long long)off, (unsigned long long)cnt);
        return false;
    }
    if (g >= half && !may_overwrite(a, g, j))
        return false; /* wait for on_sent */
    const float *x = a->held_body;
    float *o = a->out + off;
    const float *mine = a->in + off;
    if (g < half - 1)
        add_chunk(o, mine, x, cnt, 1.0f);
    else if (g == half - 1) /* the last addition: the sum becomes the average */
        add_chunk(o, mine, x, cnt, (float)a->cfg.n);
    else if (x != o) /* (else it was read in place: mm_allreduce_vector_dst) */
        memcpy(o, x, 4 * cnt);
    a->recv_done++;
    a->progress++;
    release_held(a);
    issue_sends(a);
    check_done(a);
    return true;
}

int mm_allreduce_start(mm_allreduce *a, uint64_t round, const float *in, float *out)
{
    if (a->st == MM_AR_RUNNING)
        return -1;
    a->st = MM_AR_RUNNING;
    a->err[0] = 0;
    a->have_round = true;
    a->round = round;
    a->in = in;
    a->out = out;
    a->recv_done = a->sends_issued = a->sends_completed = 0;
    a->recv_step = a->send_step = 0;
    mm_transport_set_exchange(a->cfg.transport, round);
    if (a->cfg.n == 1) {
        if (out != in)
            memcpy(out, in, 4 * a->cfg.len);
        finish(a, MM_AR_DONE);
        return 0;
    }
    uint32_t want[2] = {a->left, a->right};
    mm_transport_want(a->cfg.transport, want, a->left == a->right ? 1 : 2);
    for (int s = 0; s < 2; s++)
        if (a->lost[s]) {
            fail(a, "peer %u %s", s ? a->right : a->left, a->lost_why[s]);
            return 0;
        }
    /* a chunk of this round may already be waiting (the left neighbour
     * started first): it was kept lent until now */
    if (a->held && a->held_round != round) {
        fail(a, "peer %u sent a chunk of round %llu, this peer is at round %llu "
                "(resumed from checkpoints of different rounds?)",
             a->left, (unsigned long long)a->held_round, (unsigned long long)round);
        return 0;
    }
    issue_sends(a);
    use_held(a);
    return 0;
}

bool mm_allreduce_on_vector(mm_allreduce *a, uint32_t peer, uint64_t round,
                            const mm_wire_vec *meta, const void *body, size_t body_len)
{
    if (peer != a->left) {
        /* only the left neighbour sends to us */
        mm_transport_release(a->cfg.transport, peer);
        fail(a, "peer %u, not our left neighbour %u, sent a vector", peer, a->left);
        return true;
    }
    a->held = true;
    a->held_round = round;
    a->held_meta = *meta;
    a->held_body = body;
    a->held_len = body_len;
    if (a->st == MM_AR_RUNNING) {
        if (round < a->round) {
            fail(a, "peer %u sent a chunk of round %llu, an earlier round", peer,
                 (unsigned long long)round);
            return true;
        }
        if (round > a->round && a->recv_done < a->recv_first[a->steps]) {
            fail(a, "peer %u sent a chunk of round %llu before finishing this one", peer,
                 (unsigned long long)round);
            return true;
        }
        use_held(a);
    } else if (a->have_round && round <= a->round) {
        release_held(a); /* a round that is over: nothing to do with it */
        mm_debug("all-reduce: peer %u sent a chunk of round %llu after it ended", peer,
                 (unsigned long long)round);
    }
    /* otherwise kept (lent, so the transport reads nothing more from that
     * peer) until the round it belongs to starts */
    return true;
}

void mm_allreduce_on_sent(mm_allreduce *a, uint32_t peer, uint64_t round, bool ok)
{
    if (a->st != MM_AR_RUNNING || peer != a->right || round != a->round)
        return;
    if (!ok) {
        fail(a, "peer %u went down (connection lost) before it took our chunks", peer);
        return;
    }
    a->sends_completed++;
    a->progress++;
    use_held(a);
    check_done(a);
}

void mm_allreduce_on_peer(mm_allreduce *a, uint32_t peer, mm_peer_state st)
{
    if (a->cfg.n == 1 || (peer != a->left && peer != a->right))
        return;
    for (int s = 0; s < 2; s++) {
        uint32_t p = s ? a->right : a->left;
        if (p != peer)
            continue;
        if (st == MM_PEER_UP) {
            a->ever_up[s] = true;
            continue;
        }
        if (!a->ever_up[s])
            continue; /* never up yet: a dial that failed while peers start */
        /* Is it still needed this round? The left one until all its chunks
         * are in; the right one until all ours are handed over (those
         * handed over and lost report on_sent(false)). */
        bool needed = a->st == MM_AR_RUNNING &&
                      (s ? a->sends_issued < a->send_first[a->steps]
                         : a->recv_done < a->recv_first[a->steps]);
        const char *what = st == MM_PEER_BYE ? "left (said goodbye)" : "went down (connection lost)";
        if (needed) {
            fail(a, "peer %u %s", peer, what);
        } else if (!a->lost[s]) {
            a->lost[s] = true;
            snprintf(a->lost_why[s], sizeof a->lost_why[s], "%s after round %llu", what,
                     (unsigned long long)a->round);
        }
    }
    if (st == MM_PEER_UP && peer == a->right)
        issue_sends(a);
}
