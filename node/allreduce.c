/* node/allreduce.h: the all-reduce as a state machine driven by the
 * transport's callbacks. Counters, not queues: the schedule is fixed and
 * written out once, at creation, as "pieces" (one segment sent or received
 * at one step, cut into chunks), so the n-th chunk received, the n-th send
 * handed to the transport and each partner's n-th send completed each name
 * one (step, segment, chunk). What a send waits for (the receive that
 * completes its floats) and what a receive waits for (the sends that still
 * read the floats it overwrites) are found once per piece, at creation,
 * not per chunk. */
#include "node/allreduce.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/text.h"

#include "base/cpu.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* Where a send's floats, or an addition's own partial sum, are read. */
enum { SRC_IN, SRC_OUT };
/* What a received chunk does to out. */
enum { OP_ADD, OP_AVG, OP_COPY };

#define MAX_SLOTS MM_AR_MAX_PARTNERS

/* One segment sent or received at one step: chunks [first, first + chunks
 * of the segment) of the sends or of the receives. */
typedef struct {
    int step;
    uint32_t seg;
    uint32_t slot;   /* the partner (index into peers[]) */
    uint8_t src;     /* sends: SRC_IN / SRC_OUT */
    uint8_t op;      /* receives: OP_* */
    uint8_t mine;    /* receives, OP_ADD/OP_AVG: our partial sum, SRC_IN / SRC_OUT */
    uint64_t first;
    /* sends: the receive piece that last wrote these floats (chunk j of
     * this piece waits for chunk j of that one), -1: none.
     * receives: the send pieces that last read these floats from out and
     * from in (chunk j waits for chunk j of each to complete), -1: none. */
    int64_t dep, reader_out, reader_in;
} piece;

/* A partner: the connection's state and the chunk it lent us. */
typedef struct {
    uint32_t peer;
    bool ever_up;
    bool lost;                    /* went down or left after having been up, or refused */
    char lost_why[MM_WIRE_REFUSE_MAX + 64];
    int64_t last_send, last_recv; /* highest send / receive index with it; -1 */
    /* its oldest send not yet completed: piece index and chunk within it */
    size_t done_piece;
    uint64_t done_j;
    /* a chunk that arrived before we could use it (kept lent) */
    bool held;
    uint64_t held_round;
    mm_wire_vec held_meta;
    const void *held_body;
    size_t held_len;
} partner;

struct mm_allreduce {
    mm_allreduce_config cfg;
    int steps;
    uint64_t *seg_off;            /* [n+1]: segment s is floats [seg_off[s], seg_off[s+1]) */
    piece *sp, *rp;               /* send and receive pieces, in schedule order */
    size_t n_sp, n_rp;
    uint64_t total_sends, total_recvs;
    partner peers[MAX_SLOTS];
    int n_slots;
    uint8_t *send_done;           /* [total_sends]: completed (on_sent ok) */

    mm_ar_state st;
    bool have_round;
    uint64_t round;
    const float *in;
    float *out;
    uint64_t recv_done;           /* chunks received and used */
    uint64_t sends_issued;        /* handed to the transport */
    uint64_t sends_completed;     /* on_sent(ok), any partner */
    uint64_t completed_prefix;    /* every send below it has completed */
    size_t recv_piece, send_piece; /* pieces of the next receive and the next send */
    bool issuing;                 /* inside issue_sends */
    bool pumping;                 /* inside pump */
    uint64_t progress;
    char err[MM_ALLREDUCE_ERR];
};

/* ---- the schedules -------------------------------------------------------- */

const char *mm_allreduce_schedule_name(mm_ar_schedule s)
{
    const char *name = mm_algo_variant_name(MM_ALGO_ALLREDUCE, (uint8_t)s);
    return name ? name : "?";
}

int mm_allreduce_schedule_parse(const char *s)
{
    if (!strcmp(s, "auto"))
        return MM_AR_AUTO;
#define MM_X(NAME, code, name) if (!strcmp(s, name)) return MM_AR_##NAME;
    MM_AR_SCHEDULES(MM_X)
#undef MM_X
    return -2;
}

static bool pow2(uint32_t n) { return n && !(n & (n - 1)); }

bool mm_allreduce_schedule_fits(mm_ar_schedule s, uint32_t n)
{
    return s == MM_AR_RING || s == MM_AR_ALLGATHER || (s == MM_AR_HALVING && pow2(n));
}

int mm_allreduce_schedule_check(int requested, uint32_t n, char *err, size_t errlen)
{
    if (requested == MM_AR_AUTO || mm_allreduce_schedule_fits((mm_ar_schedule)requested, n))
        return 0;
    snprintf(err, errlen, "--allreduce-schedule %s needs a power of two of peers, not %u "
             "(ring and auto run on any number)",
             mm_allreduce_schedule_name((mm_ar_schedule)requested), n);
    return -1;
}

mm_ar_schedule mm_allreduce_schedule_pick(int requested, uint32_t n, bool one_host, uint64_t len)
{
    if (requested != MM_AR_AUTO)
        return (mm_ar_schedule)requested;
    return n > 2 && pow2(n) && one_host && len <= MM_AR_HALVING_MAX_BYTES / 4 ? MM_AR_HALVING
                                                                               : MM_AR_RING;
}

static int log2u(uint32_t n)
{
    int m = 0;
    while ((1u << m) < n)
        m++;
    return m;
}

/* What one step does at peer self: the partner it sends to and the
 * segments [s_lo, s_lo + s_cnt) (mod n) it sends, the partner it receives
 * from and the segments it receives, and what it does with them. */
typedef struct {
    uint32_t to, from;
    uint32_t s_lo, s_cnt, r_lo, r_cnt;
    uint8_t src, op, mine;
} step_plan;

static step_plan plan_step(mm_ar_schedule sched, uint32_t self, uint32_t n, int g)
{
    step_plan p = {0};
    if (sched == MM_AR_ALLGATHER) { /* (its partners only: node/allgather.c runs it) */
        p.to = (self + 1) % n;
        p.from = (self + n - 1) % n;
        return p;
    }
    if (sched == MM_AR_RING) {
        int half = (int)n - 1;
        p.to = (self + 1) % n;
        p.from = (self + n - 1) % n;
        p.s_lo = (uint32_t)((((int64_t)self - g) % n + n) % n);
        p.r_lo = (uint32_t)((((int64_t)self - g - 1) % n + n) % n);
        p.s_cnt = p.r_cnt = 1;
        p.src = g == 0 ? SRC_IN : SRC_OUT;
        p.op = g < half - 1 ? OP_ADD : g == half - 1 ? OP_AVG : OP_COPY;
        p.mine = SRC_IN; /* our own floats join the partial sum passing by */
        return p;
    }
    int m = log2u(n);
    if (g < m) { /* reduce-scatter by recursive halving */
        uint32_t mask = n >> (g + 1), lo = self & ~((mask << 1) - 1);
        p.to = p.from = self ^ mask;
        bool upper = self & mask; /* we keep the upper half */
        p.r_lo = upper ? lo + mask : lo;
        p.s_lo = upper ? lo : lo + mask;
        p.s_cnt = p.r_cnt = mask;
        p.src = g == 0 ? SRC_IN : SRC_OUT;
        p.op = g == m - 1 ? OP_AVG : OP_ADD;
        p.mine = g == 0 ? SRC_IN : SRC_OUT; /* our partial sum so far */
    } else { /* all-gather by recursive doubling */
        uint32_t mask = 1u << (g - m);
        p.to = p.from = self ^ mask;
        p.s_lo = self & ~(mask - 1);
        p.r_lo = (self ^ mask) & ~(mask - 1);
        p.s_cnt = p.r_cnt = mask;
        p.src = SRC_OUT;
        p.op = OP_COPY;
    }
    return p;
}

static int steps_of(mm_ar_schedule s, uint32_t n)
{
    return n < 2                  ? 0
           : s == MM_AR_ALLGATHER ? (int)n - 1
           : s == MM_AR_RING      ? 2 * ((int)n - 1)
                                  : 2 * log2u(n);
}

void mm_allreduce_senders(mm_ar_schedule s, uint32_t self, uint32_t n, bool *senders)
{
    memset(senders, 0, n * sizeof *senders);
    for (int g = 0; g < steps_of(s, n); g++)
        senders[plan_step(s, self, n, g).from] = true;
}

int mm_allreduce_peers(mm_ar_schedule s, uint32_t self, uint32_t n, uint32_t *peers)
{
    int k = 0;
    for (int g = 0; g < steps_of(s, n); g++) {
        step_plan p = plan_step(s, self, n, g);
        uint32_t two[2] = {p.from, p.to};
        for (int t = 0; t < 2; t++) {
            bool seen = false;
            for (int i = 0; i < k; i++)
                seen |= peers[i] == two[t];
            if (!seen && k < MM_AR_MAX_PARTNERS)
                peers[k++] = two[t];
        }
    }
    return k;
}

/* ---- creation ------------------------------------------------------------- */

static uint64_t chunks_of(const mm_allreduce *a, uint32_t seg)
{
    uint64_t len = a->seg_off[seg + 1] - a->seg_off[seg], c = a->cfg.chunk;
    return (len + c - 1) / c;
}

static int slot_of(mm_allreduce *a, uint32_t peer, bool add)
{
    for (int s = 0; s < a->n_slots; s++)
        if (a->peers[s].peer == peer)
            return s;
    if (!add || a->n_slots == MAX_SLOTS)
        return -1;
    a->peers[a->n_slots] = (partner){.peer = peer, .last_send = -1, .last_recv = -1};
    return a->n_slots++;
}

/* Writes the schedule out as pieces, and finds each piece's dependencies
 * by walking the steps in order with, per segment, the last receive piece
 * that wrote it and the last send pieces that read it. */
static int build(mm_allreduce *a)
{
    uint32_t n = a->cfg.n;
    size_t n_send = 0, n_recv = 0; /* pieces: 2(n-1) each for either schedule */
    for (int g = 0; g < a->steps; g++) {
        step_plan p = plan_step(a->cfg.schedule, a->cfg.self, n, g);
        n_send += p.s_cnt;
        n_recv += p.r_cnt;
    }
    a->sp = calloc(n_send ? n_send : 1, sizeof *a->sp);
    a->rp = calloc(n_recv ? n_recv : 1, sizeof *a->rp);
    int64_t *last_w = malloc(n * sizeof *last_w), *last_ro = malloc(n * sizeof *last_ro),
            *last_ri = malloc(n * sizeof *last_ri);
    int rc = -1;
    if (!a->sp || !a->rp || !last_w || !last_ro || !last_ri)
        goto out;
    for (uint32_t s = 0; s < n; s++)
        last_w[s] = last_ro[s] = last_ri[s] = -1;
    for (int g = 0; g < a->steps; g++) {
        step_plan p = plan_step(a->cfg.schedule, a->cfg.self, n, g);
        int from = slot_of(a, p.from, true), to = slot_of(a, p.to, true);
        if (to < 0 || from < 0)
            goto out;
        size_t sp0 = a->n_sp;
        for (uint32_t k = 0; k < p.s_cnt; k++) {
            uint32_t seg = (p.s_lo + k) % n;
            piece *q = &a->sp[a->n_sp++];
            *q = (piece){.step = g, .seg = seg, .slot = (uint32_t)to, .src = p.src,
                         .first = a->total_sends, .dep = p.src == SRC_OUT ? last_w[seg] : -1,
                         .reader_out = -1, .reader_in = -1};
            a->total_sends += chunks_of(a, seg);
            if (chunks_of(a, seg))
                a->peers[to].last_send = (int64_t)a->total_sends - 1;
        }
        for (uint32_t k = 0; k < p.r_cnt; k++) {
            uint32_t seg = (p.r_lo + k) % n;
            piece *q = &a->rp[a->n_rp++];
            *q = (piece){.step = g, .seg = seg, .slot = (uint32_t)from, .op = p.op,
                         .mine = p.mine, .first = a->total_recvs, .dep = -1,
                         .reader_out = last_ro[seg], .reader_in = last_ri[seg]};
            a->total_recvs += chunks_of(a, seg);
            if (chunks_of(a, seg))
                a->peers[from].last_recv = (int64_t)a->total_recvs - 1;
        }
        for (size_t k = sp0; k < a->n_sp; k++)
            (a->sp[k].src == SRC_OUT ? last_ro : last_ri)[a->sp[k].seg] = (int64_t)k;
        for (size_t k = a->n_rp - p.r_cnt; k < a->n_rp; k++)
            last_w[a->rp[k].seg] = (int64_t)k;
    }
    a->send_done = calloc(a->total_sends ? a->total_sends : 1, 1);
    rc = a->send_done ? 0 : -1;
out:
    free(last_w);
    free(last_ro);
    free(last_ri);
    return rc;
}

mm_allreduce *mm_allreduce_new(const mm_allreduce_config *cfg, char *err, size_t errlen)
{
    if (cfg->n < 1 || cfg->self >= cfg->n || cfg->len < 1) {
        snprintf(err, errlen, "all-reduce: bad configuration (peer %u of %u, %llu floats)",
                 cfg->self, cfg->n, (unsigned long long)cfg->len);
        return NULL;
    }
    if (cfg->schedule == MM_AR_ALLGATHER) {
        snprintf(err, errlen, "all-reduce: the allgather variant is node/allgather.h's, not an "
                 "all-reduce");
        return NULL;
    }
    if (!mm_allreduce_schedule_fits(cfg->schedule, cfg->n)) {
        snprintf(err, errlen, "all-reduce: the %s schedule needs a power of two of peers, "
                 "not %u (--allreduce-schedule ring runs on any number)",
                 mm_allreduce_schedule_name(cfg->schedule), cfg->n);
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
    a->steps = steps_of(cfg->schedule, n);
    a->seg_off = calloc(n + 1, sizeof *a->seg_off);
    if (!a->seg_off) {
        mm_allreduce_free(a);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (uint32_t s = 0; s <= n; s++) /* as even as integers allow */
        a->seg_off[s] = (uint64_t)((unsigned __int128)cfg->len * s / n);
    if (build(a) != 0) {
        mm_allreduce_free(a);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return a;
}

void mm_allreduce_free(mm_allreduce *a)
{
    if (!a)
        return;
    free(a->seg_off);
    free(a->sp);
    free(a->rp);
    free(a->send_done);
    free(a);
}

mm_ar_state mm_allreduce_state(const mm_allreduce *a) { return a->st; }
const char *mm_allreduce_error(const mm_allreduce *a) { return a->err; }
uint64_t mm_allreduce_progress(const mm_allreduce *a) { return a->progress; }
uint64_t mm_allreduce_messages(const mm_allreduce *a) { return a->total_sends; }

int mm_allreduce_partners(const mm_allreduce *a, uint32_t *peers)
{
    for (int s = 0; s < a->n_slots; s++)
        peers[s] = a->peers[s].peer;
    return a->n_slots;
}

/* ---- where it stands ------------------------------------------------------ */

/* "step 3 of 6 (all-gather 1 of 3)" */
static void step_name(const mm_allreduce *a, int g, char *out, size_t len)
{
    int half = a->steps / 2;
    snprintf(out, len, "step %d of %d (%s %d of %d)", g + 1, a->steps,
             g < half ? "reduce-scatter" : "all-gather", g < half ? g + 1 : g - half + 1, half);
}

/* The piece holding chunk `idx` of pieces p[0 .. np), from `from` on. */
static size_t piece_at(const piece *p, size_t np, size_t from, uint64_t idx)
{
    size_t k = from;
    while (k + 1 < np && p[k + 1].first <= idx)
        k++;
    return k;
}

/* Chunk j of a segment: its floats [*off, *off + *cnt). */
static void chunk_range(const mm_allreduce *a, uint32_t seg, uint64_t j, uint64_t *off,
                        uint64_t *cnt)
{
    *off = a->seg_off[seg] + j * a->cfg.chunk;
    uint64_t end = a->seg_off[seg + 1];
    *cnt = end - *off < a->cfg.chunk ? end - *off : a->cfg.chunk;
}

/* Where it stands: what this peer waits for. */
static void where(const mm_allreduce *a, char *out, size_t len)
{
    char s[96];
    if (a->recv_done < a->total_recvs) {
        const piece *r = &a->rp[piece_at(a->rp, a->n_rp, 0, a->recv_done)];
        /* the chunk's number within its step */
        uint64_t step_first = r->first, step_end = r->first;
        for (size_t k = 0; k < a->n_rp; k++)
            if (a->rp[k].step == r->step) {
                if (a->rp[k].first < step_first)
                    step_first = a->rp[k].first;
                step_end = a->rp[k].first + chunks_of(a, a->rp[k].seg);
            }
        step_name(a, r->step, s, sizeof s);
        snprintf(out, len, "round %llu, %s: waiting for peer %u's chunk %llu of %llu",
                 (unsigned long long)a->round, s, a->peers[r->slot].peer,
                 (unsigned long long)(a->recv_done - step_first + 1),
                 (unsigned long long)(step_end - step_first));
    } else {
        uint64_t q = a->completed_prefix < a->total_sends ? a->completed_prefix : 0;
        const piece *p = &a->sp[piece_at(a->sp, a->n_sp, 0, q)];
        step_name(a, p->step, s, sizeof s);
        snprintf(out, len, "round %llu, %s: waiting for peer %u to take our chunks (%llu of %llu sent)",
                 (unsigned long long)a->round, s, a->peers[p->slot].peer,
                 (unsigned long long)a->sends_completed, (unsigned long long)a->total_sends);
    }
}

/* ---- running -------------------------------------------------------------- */

static void release_held(mm_allreduce *a, partner *p)
{
    if (p->held) {
        p->held = false;
        mm_transport_release(a->cfg.transport, p->peer);
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
    char why[MM_WIRE_REFUSE_MAX + 128], pos[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    where(a, pos, sizeof pos);
    snprintf(a->err, sizeof a->err, "all-reduce failed: %s (%s)", why, pos);
    mm_debug("%s", a->err);
    for (int s = 0; s < a->n_slots; s++) {
        release_held(a, &a->peers[s]);
        /* a chunk being read into out (vector_dst) must not go on landing
         * there once out is the caller's again */
        mm_transport_detach_dst(a->cfg.transport, a->peers[s].peer);
    }
    finish(a, MM_AR_FAILED);
}

void mm_allreduce_abort(mm_allreduce *a, const char *why) { fail(a, "%s", why); }

static void check_done(mm_allreduce *a)
{
    if (a->st == MM_AR_RUNNING && a->recv_done == a->total_recvs &&
        a->sends_completed == a->total_sends)
        finish(a, MM_AR_DONE);
}

/* Hands the transport every send whose chunk is ready, in the schedule's
 * order: a chunk read from in at once, one read from out once the receive
 * that completed its floats has been used. */
static void issue_sends(mm_allreduce *a)
{
    /* Not re-entered: over TLS a send may complete inside
     * mm_transport_send_vec (encrypted at once), and on_sent comes here. */
    if (a->issuing)
        return;
    a->issuing = true;
    while (a->st == MM_AR_RUNNING && a->sends_issued < a->total_sends) {
        uint64_t q = a->sends_issued;
        a->send_piece = piece_at(a->sp, a->n_sp, a->send_piece, q);
        const piece *p = &a->sp[a->send_piece];
        uint64_t j = q - p->first;
        if (p->dep >= 0 && a->recv_done <= a->rp[p->dep].first + j)
            break; /* its floats are not complete yet */
        uint64_t off, cnt;
        chunk_range(a, p->seg, j, &off, &cnt);
        const float *src = (p->src == SRC_IN ? a->in : a->out) + off;
        mm_wire_vec meta = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .aux = (double)p->step,
                            .offset = a->cfg.base + off, .count = cnt};
        a->sends_issued++; /* before: its on_sent may come from inside the call */
        if (mm_transport_send_vec(a->cfg.transport, a->peers[p->slot].peer, a->round, &meta, src,
                                  4 * cnt) != 0) {
            a->sends_issued--; /* not up (yet): tried again when it is */
            break;
        }
    }
    a->issuing = false;
}

#if defined(__x86_64__)
/* add_chunk's first floats, sixteen at a time with AVX-512 (where the CPU
 * has it): the same IEEE operations element by element, so the same bits.
 * Returns how many it did. */
__attribute__((target("avx512f")))
static uint64_t add_chunk_avx512(float *o, const float *a, const float *b, uint64_t n, float div)
{
    uint64_t k = 0;
    __m512 d = _mm512_set1_ps(div);
    for (; k + 32 <= n; k += 32) {
        __m512 x = _mm512_add_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(b + k));
        __m512 y = _mm512_add_ps(_mm512_loadu_ps(a + k + 16), _mm512_loadu_ps(b + k + 16));
        if (div != 1.0f) {
            x = _mm512_div_ps(x, d);
            y = _mm512_div_ps(y, d);
        }
        _mm512_storeu_ps(o + k, x);
        _mm512_storeu_ps(o + k + 16, y);
    }
    return k;
}
#endif

/* o[k] = a[k] + b[k], divided by div unless div is 1: element by element,
 * the same IEEE operations as the scalar loop, 16 at a time with AVX-512
 * or four with SSE2 (GCC at -O2 left the plain loop scalar: 11 % of a
 * peer's CPU in a 16 MB all-reduce). o may be a (in place), not b. */
static void add_chunk(float *o, const float *a, const float *b, uint64_t n, float div)
{
    uint64_t k = 0;
#if defined(__x86_64__)
    if (n >= 32 && mm_cpu_avx512())
        k = add_chunk_avx512(o, a, b, n, div);
#endif
#if defined(__SSE2__)
    __m128 d = _mm_set1_ps(div);
    for (; k + 8 <= n; k += 8) { /* (the rest after AVX-512, or all) */
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

/* The chunk due next: its piece, its index j within the piece and its
 * floats [off, off + cnt). */
static const piece *due(mm_allreduce *a, uint64_t *j, uint64_t *off, uint64_t *cnt)
{
    a->recv_piece = piece_at(a->rp, a->n_rp, a->recv_piece, a->recv_done);
    const piece *r = &a->rp[a->recv_piece];
    *j = a->recv_done - r->first;
    chunk_range(a, r->seg, *j, off, cnt);
    return r;
}

/* Chunk j of receive piece r overwrites floats of out that earlier sends
 * read (from out, or from in when it is out): true once they have all
 * finished. Each partner's sends complete in order, not all of them. */
static bool may_overwrite(const mm_allreduce *a, const piece *r, uint64_t j)
{
    int64_t last = -1;
    if (r->reader_out >= 0)
        last = (int64_t)(a->sp[r->reader_out].first + j);
    if (a->in == a->out && r->reader_in >= 0 && (int64_t)(a->sp[r->reader_in].first + j) > last)
        last = (int64_t)(a->sp[r->reader_in].first + j);
    return last < 0 || a->completed_prefix > (uint64_t)last;
}

float *mm_allreduce_vector_dst(mm_allreduce *a, uint32_t peer, uint64_t round,
                               const mm_wire_vec *meta)
{
    if (a->st != MM_AR_RUNNING || round != a->round || a->recv_done >= a->total_recvs)
        return NULL;
    uint64_t j, off, cnt;
    const piece *r = due(a, &j, &off, &cnt);
    const partner *p = &a->peers[r->slot];
    if (p->peer != peer || p->held || r->op != OP_COPY || meta->offset != a->cfg.base + off ||
        meta->count != cnt || meta->aux != (double)r->step || !may_overwrite(a, r, j))
        return NULL; /* an addition, or not what is due: pump judges it */
    return a->out + off;
}

/* Uses the chunks held, as long as the one due next is among them and may
 * be used; then passes on what became ready. */
static void pump(mm_allreduce *a)
{
    if (a->pumping)
        return;
    a->pumping = true;
    while (a->st == MM_AR_RUNNING && a->recv_done < a->total_recvs) {
        uint64_t j, off, cnt;
        const piece *r = due(a, &j, &off, &cnt);
        partner *p = &a->peers[r->slot];
        if (!p->held || p->held_round != a->round)
            break;
        const mm_wire_vec *m = &p->held_meta;
        if (m->offset != a->cfg.base + off || m->count != cnt || m->aux != (double)r->step) {
            char s[96], step[32];
            step_name(a, r->step, s, sizeof s);
            /* (the sender's number as it is, at most 17 digits: an aux of
             * 1e300 is no 300-digit step) */
            mm_text_double(step, sizeof step, m->aux);
            fail(a, "peer %u sent floats %llu..+%llu of step %s where %s, floats %llu..+%llu, "
                    "was due: is it running with another --allreduce-chunk, or another round?",
                 p->peer, (unsigned long long)m->offset, (unsigned long long)m->count, step, s,
                 (unsigned long long)(a->cfg.base + off), (unsigned long long)cnt);
            break;
        }
        if (!may_overwrite(a, r, j))
            break; /* wait for on_sent */
        const float *x = p->held_body;
        float *o = a->out + off;
        const float *mine = (r->mine == SRC_IN ? a->in : a->out) + off;
        if (r->op == OP_ADD)
            add_chunk(o, mine, x, cnt, 1.0f);
        else if (r->op == OP_AVG) /* the last addition: the sum becomes the average */
            add_chunk(o, mine, x, cnt, (float)a->cfg.n);
        else if (x != o) /* (else it was read in place: mm_allreduce_vector_dst) */
            memcpy(o, x, 4 * cnt);
        a->recv_done++;
        a->progress++;
        release_held(a, p);
        issue_sends(a);
    }
    a->pumping = false;
    check_done(a);
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
    a->recv_done = a->sends_issued = a->sends_completed = a->completed_prefix = 0;
    a->recv_piece = a->send_piece = 0;
    memset(a->send_done, 0, a->total_sends ? a->total_sends : 1);
    for (int s = 0; s < a->n_slots; s++) {
        a->peers[s].done_piece = 0;
        a->peers[s].done_j = 0;
    }
    mm_transport_set_exchange(a->cfg.transport, round);
    if (a->cfg.n == 1) {
        if (out != in)
            memcpy(out, in, 4 * a->cfg.len);
        finish(a, MM_AR_DONE);
        return 0;
    }
    uint32_t want[MAX_SLOTS];
    int nw = mm_allreduce_partners(a, want);
    mm_transport_want(a->cfg.transport, want, nw);
    for (int s = 0; s < a->n_slots; s++)
        if (a->peers[s].lost) {
            fail(a, "peer %u %s", a->peers[s].peer, a->peers[s].lost_why);
            return 0;
        }
    /* chunks of this round may already be waiting (partners that started
     * first): they were kept lent until now */
    for (int s = 0; s < a->n_slots; s++) {
        partner *p = &a->peers[s];
        if (p->held && p->held_round != round) {
            fail(a, "peer %u sent a chunk of round %llu, this peer is at round %llu "
                    "(resumed from checkpoints of different rounds?)",
                 p->peer, (unsigned long long)p->held_round, (unsigned long long)round);
            return 0;
        }
    }
    issue_sends(a);
    pump(a);
    return 0;
}

bool mm_allreduce_on_vector(mm_allreduce *a, uint32_t peer, uint64_t round,
                            const mm_wire_vec *meta, const void *body, size_t body_len)
{
    int s = slot_of(a, peer, false);
    if (s < 0 || a->peers[s].last_recv < 0) {
        /* only the partners this schedule receives from send to us */
        mm_transport_release(a->cfg.transport, peer);
        fail(a, "peer %u, which sends this peer nothing in the %s schedule, sent a vector", peer,
             mm_allreduce_schedule_name(a->cfg.schedule));
        return true;
    }
    partner *p = &a->peers[s];
    p->held = true;
    p->held_round = round;
    p->held_meta = *meta;
    p->held_body = body;
    p->held_len = body_len;
    if (a->st == MM_AR_RUNNING) {
        if (round < a->round) {
            fail(a, "peer %u sent a chunk of round %llu, an earlier round", peer,
                 (unsigned long long)round);
            return true;
        }
        /* A partner may start the next round while we still wait for
         * another's chunks of this one, but not before its own are in. */
        if (round > a->round && (int64_t)a->recv_done <= p->last_recv) {
            fail(a, "peer %u sent a chunk of round %llu before finishing this one", peer,
                 (unsigned long long)round);
            return true;
        }
        pump(a);
    } else if (a->have_round && round <= a->round) {
        release_held(a, p); /* a round that is over: nothing to do with it */
        mm_debug("all-reduce: peer %u sent a chunk of round %llu after it ended", peer,
                 (unsigned long long)round);
    }
    /* otherwise kept (lent, so the transport reads nothing more from that
     * peer) until the round it belongs to starts */
    return true;
}

/* The partner's oldest send not yet completed has completed. */
static bool complete_send(mm_allreduce *a, int s)
{
    partner *p = &a->peers[s];
    while (p->done_piece < a->n_sp &&
           (a->sp[p->done_piece].slot != (uint32_t)s ||
            p->done_j >= chunks_of(a, a->sp[p->done_piece].seg))) {
        p->done_piece++;
        p->done_j = 0;
    }
    if (p->done_piece >= a->n_sp)
        return false;
    uint64_t q = a->sp[p->done_piece].first + p->done_j;
    if (q >= a->sends_issued)
        return false; /* nothing of ours was in flight to it */
    p->done_j++;
    a->send_done[q] = 1;
    while (a->completed_prefix < a->total_sends && a->send_done[a->completed_prefix])
        a->completed_prefix++;
    return true;
}

void mm_allreduce_on_sent(mm_allreduce *a, uint32_t peer, uint64_t round, bool ok)
{
    int s = slot_of(a, peer, false);
    if (a->st != MM_AR_RUNNING || s < 0 || a->peers[s].last_send < 0 || round != a->round)
        return;
    if (!ok) {
        fail(a, "peer %u went down (connection lost) before it took our chunks", peer);
        return;
    }
    if (!complete_send(a, s))
        return;
    a->sends_completed++;
    a->progress++;
    pump(a);
}

void mm_allreduce_on_refused(mm_allreduce *a, uint32_t peer, const char *why)
{
    int s = a->cfg.n == 1 ? -1 : slot_of(a, peer, false);
    if (s < 0)
        return;
    partner *p = &a->peers[s];
    /* configured differently: it will not take part in this all-reduce or
     * the next, whoever retries */
    if (a->st == MM_AR_RUNNING) {
        fail(a, "peer %u was refused: %s", peer, why);
    } else if (!p->lost) {
        p->lost = true;
        snprintf(p->lost_why, sizeof p->lost_why, "was refused: %s", why);
    }
}

void mm_allreduce_on_peer(mm_allreduce *a, uint32_t peer, mm_peer_state st)
{
    int s = a->cfg.n == 1 ? -1 : slot_of(a, peer, false);
    if (s < 0)
        return;
    partner *p = &a->peers[s];
    if (st == MM_PEER_UP) {
        p->ever_up = true;
        issue_sends(a);
        return;
    }
    if (!p->ever_up)
        return; /* never up yet: a dial that failed while peers start */
    /* Is it still needed this round? Until all its chunks are in and all
     * ours to it are handed over (those handed over and lost report
     * on_sent(false)). */
    bool needed = a->st == MM_AR_RUNNING && ((int64_t)a->sends_issued <= p->last_send ||
                                             (int64_t)a->recv_done <= p->last_recv);
    const char *what = st == MM_PEER_BYE ? "left (said goodbye)" : "went down (connection lost)";
    if (needed) {
        fail(a, "peer %u %s", peer, what);
    } else if (!p->lost) {
        p->lost = true;
        snprintf(p->lost_why, sizeof p->lost_why, "%s after round %llu", what,
                 (unsigned long long)a->round);
    }
}
