/* node/mailbox.h: the state the two threads share, and nothing else, under
 * one mutex. Every change bumps a generation counter and broadcasts the
 * condition variable, so the training thread can look, decide, and sleep
 * until something it has not seen yet happens. */
#include "node/mailbox.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

/* A vector lent to us by the transport (or copied out of its buffer),
 * waiting for the training thread. */
typedef struct {
    bool present;
    uint64_t exchange;   /* round * gossip_steps + step, as sent */
    mm_wire_vec meta;    /* its vector header */
    const void *body;
    size_t body_len;
    uint64_t ups;        /* the peer's ups when it was delivered */
    double at;           /* when it was delivered (mm_time_now) */
    bool staged;         /* body is a staging copy: the transport has its buffer back */
} inbox_slot;

/* A peer's inbox: the vectors in arrival order, at most MM__MBOX_STAGE of
 * them staged copies and one lent by the transport (which reads nothing
 * more from that peer until it is given back). */
#define INBOX (MM__MBOX_STAGE + 1)

/* What the mailbox keeps of one peer. */
typedef struct {
    inbox_slot inbox[INBOX];        /* a ring: ... */
    int in_head, in_n;              /* ... its first and how many */
    uint8_t *stage[MM__MBOX_STAGE]; /* staging copies (allocated at the first), used ... */
    int stage_next, staged;         /* ... in turn: the next, and how many hold one */
    mm__peer_state state;
    bool ever_up;
    bool wanted;                    /* in want[] */
    uint64_t ups;                   /* times the peer came up */
    uint64_t lost;                  /* sends to it dropped or failed */
    uint64_t written_exchange;      /* the last send handed to the transport ... */
    uint64_t written_ups;           /* ... on the connection of these ups */
    bool inflight;                  /* a send to this peer is in the transport ... */
    int inflight_buf;               /* ... reading this buffer */
    bool has_pending;               /* a send waiting for the peer to be up: */
    mm__cmd pending;
    mm__refusals *refusals;         /* allocated at its first refusal */
} mbox_peer;

struct mm__mbox {
    uint32_t n;
    size_t buf_bytes;
    uv_async_t *wake;
    atomic_int signals;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t gen;                   /* bumped on every change */

    mbox_peer *peer;                /* [n] */
    mm__refusals *refusals_unknown; /* refusals of a peer not in the topology */

    void *buf[MM__MBOX_BUFS];       /* snapshot buffers (8-byte aligned) */
    int refs[MM__MBOX_BUFS];        /* sends (pending or in flight) still reading it */
    int64_t buf_exchange[MM__MBOX_BUFS]; /* exchange it holds; -1 while being written */
    int max_chunks;                 /* a streamed send's chunks, at most */
    size_t stage_bytes;             /* the largest body a staging copy takes (0: none) */
    mm__chunk *chunks[MM__MBOX_BUFS]; /* [max_chunks]: a buffer's stream, ... */
    int chunks_ready[MM__MBOX_BUFS];  /* ... the chunks written so far ... */
    int chunks_n[MM__MBOX_BUFS];      /* ... of this many (0: not a stream) */
    uint64_t skipped;
    bool defer_busy;                /* keep a send to a busy peer pending (synchronous rounds) */
    uint64_t deferred;              /* sends that waited for the previous one to a peer */

    mm__cmd queue[MM__MBOX_QUEUE];
    int q_len;
    uint32_t *want;                 /* [n]: the peers wanted now, a list */
    int want_n;
    bool want_dirty;
    bool finished;

    mm__ar_view ar;                 /* --algo allreduce */
    double ar_started;
    uint64_t ar_progress;

    mm_transport_stats stats;       /* copied by the loop on every wake */
    mm_link_stats *links;           /* [n]: the same, per peer (the transport's array) */
    uint64_t stats_gen;             /* wakes that copied them */
};

/* With mb->mu held: something changed. */
static void changed(mm__mbox *mb)
{
    mb->gen++;
    pthread_cond_broadcast(&mb->cv);
}

mm__mbox *mm__mbox_new(uint32_t n, size_t buf_bytes, int max_chunks, size_t stage_bytes,
                       uv_async_t *wake)
{
    mm__mbox *mb = calloc(1, sizeof *mb);
    if (!mb)
        return NULL;
    mb->n = n;
    mb->buf_bytes = buf_bytes;
    mb->wake = wake;
    pthread_mutex_init(&mb->mu, NULL);
    pthread_cond_init(&mb->cv, NULL);
    mb->peer = calloc(n, sizeof *mb->peer);
    mb->want = calloc(n, sizeof *mb->want);
    mb->links = calloc(n, sizeof *mb->links);
    bool ok = mb->peer && mb->want && mb->links;
    for (uint32_t p = 0; mb->peer && p < n; p++)
        mb->peer[p].written_exchange = UINT64_MAX;
    mb->max_chunks = max_chunks;
    mb->stage_bytes = stage_bytes;
    for (int b = 0; b < MM__MBOX_BUFS; b++) {
        mb->buf_exchange[b] = -1;
        ok = (mb->buf[b] = malloc(buf_bytes)) != NULL && ok;
        if (max_chunks > 0)
            ok = (mb->chunks[b] = malloc((size_t)max_chunks * sizeof(mm__chunk))) != NULL && ok;
    }
    if (!ok) {
        mm__mbox_free(mb);
        return NULL;
    }
    return mb;
}

void mm__mbox_free(mm__mbox *mb)
{
    if (!mb)
        return;
    for (int b = 0; b < MM__MBOX_BUFS; b++) {
        free(mb->buf[b]);
        free(mb->chunks[b]);
    }
    for (uint32_t p = 0; mb->peer && p < mb->n; p++) {
        free(mb->peer[p].refusals);
        for (int k = 0; k < MM__MBOX_STAGE; k++)
            free(mb->peer[p].stage[k]);
    }
    free(mb->refusals_unknown);
    free(mb->peer);
    free(mb->want);
    free(mb->links);
    pthread_cond_destroy(&mb->cv);
    pthread_mutex_destroy(&mb->mu);
    free(mb);
}

/* ---- training thread ------------------------------------------------------ */

/* With mu held: a pending send is dropped and its buffer reference goes. */
static void drop_pending(mm__mbox *mb, uint32_t peer)
{
    mbox_peer *q = &mb->peer[peer];
    if (q->has_pending) {
        q->has_pending = false;
        q->lost++;
        assert(mb->refs[q->pending.buf] > 0);
        mb->refs[q->pending.buf]--;
        changed(mb);
    }
}

/* With mu held: queue a command for the loop, waiting for room. */
static void post(mm__mbox *mb, const mm__cmd *c)
{
    while (mb->q_len == MM__MBOX_QUEUE)
        pthread_cond_wait(&mb->cv, &mb->mu);
    mb->queue[mb->q_len++] = *c;
}

void mm__mbox_want(mm__mbox *mb, const uint32_t *peers, int n)
{
    pthread_mutex_lock(&mb->mu);
    /* A peer wanted now but not in the last list, and not up, is about to be
     * dialled (or to dial us): wait for it rather than count it missing. */
    for (int i = 0; i < n; i++) {
        mbox_peer *q = &mb->peer[peers[i]];
        if (!q->wanted && q->state != MM__PEER_UP)
            q->state = MM__PEER_CONNECTING;
    }
    /* wanted[] becomes membership of the new list: O(degree), no allocation */
    for (int i = 0; i < mb->want_n; i++)
        mb->peer[mb->want[i]].wanted = false;
    for (int i = 0; i < n; i++)
        mb->peer[peers[i]].wanted = true;
    memcpy(mb->want, peers, (size_t)n * sizeof *peers);
    mb->want_n = n;
    mb->want_dirty = true;
    changed(mb);
    pthread_mutex_unlock(&mb->mu);
    uv_async_send(mb->wake);
}

int mm__mbox_acquire(mm__mbox *mb)
{
    pthread_mutex_lock(&mb->mu);
    for (;;) {
        for (int b = 0; b < MM__MBOX_BUFS; b++) {
            if (mb->refs[b] == 0) {
                mb->buf_exchange[b] = -1; /* being written: the loop must not send it */
                pthread_mutex_unlock(&mb->mu);
                return b;
            }
        }
        if (atomic_load(&mb->signals) > 0) {
            pthread_mutex_unlock(&mb->mu);
            return -1;
        }
        /* Sends still waiting for a peer to come up are for exchanges we
         * have left behind: their buffers are needed more now. */
        bool freed = false;
        for (uint32_t p = 0; p < mb->n; p++)
            if (mb->peer[p].has_pending) {
                drop_pending(mb, p);
                freed = true;
            }
        if (freed)
            continue;
        /* Every buffer is read by a send in flight: the transport gives it
         * back when the send completes or the connection dies. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 500 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&mb->cv, &mb->mu, &ts);
    }
}

void *mm__mbox_buf(mm__mbox *mb, int b)
{
    assert(b >= 0 && b < MM__MBOX_BUFS);
    return mb->buf[b];
}

void mm__mbox_publish(mm__mbox *mb, int b, uint64_t exchange)
{
    mm__mbox_publish_stream(mb, b, exchange, 0);
}

void mm__mbox_publish_stream(mm__mbox *mb, int b, uint64_t exchange, int n_chunks)
{
    pthread_mutex_lock(&mb->mu);
    assert(mb->buf_exchange[b] == -1 && mb->refs[b] == 0);
    assert(n_chunks >= 0 && n_chunks <= mb->max_chunks);
    mb->buf_exchange[b] = (int64_t)exchange;
    mb->chunks_n[b] = n_chunks;
    mb->chunks_ready[b] = 0;
    pthread_mutex_unlock(&mb->mu);
}

void mm__mbox_chunk_ready(mm__mbox *mb, int b, const mm__chunk *ch)
{
    pthread_mutex_lock(&mb->mu);
    assert(mb->chunks_ready[b] < mb->chunks_n[b]);
    assert(ch->off % 8 == 0 && ch->off <= mb->buf_bytes && ch->len <= mb->buf_bytes - ch->off);
    mb->chunks[b][mb->chunks_ready[b]++] = *ch;
    pthread_mutex_unlock(&mb->mu);
    uv_async_send(mb->wake); /* (coalesced by libuv: one wake for several chunks) */
}

/* Registers a send (pending) and queues it for the loop. */
static void send_cmd(mm__mbox *mb, const mm__cmd *c)
{
    uint32_t peer = c->peer;
    pthread_mutex_lock(&mb->mu);
    assert(mb->buf_exchange[c->buf] == (int64_t)c->exchange);
    /* Registered here, on the training thread, so that the round's wait
     * sees the send at once, before the loop has even read the queue. */
    drop_pending(mb, peer);
    mb->peer[peer].pending = *c;
    mb->peer[peer].has_pending = true;
    mb->refs[c->buf]++;
    post(mb, c);
    changed(mb);
    pthread_mutex_unlock(&mb->mu);
    uv_async_send(mb->wake);
}

void mm__mbox_send(mm__mbox *mb, uint32_t peer, uint64_t exchange, int b,
                   const mm_wire_vec *meta, size_t len)
{
    mm__mbox_send_at(mb, peer, exchange, b, 0, meta, len);
}

void mm__mbox_send_at(mm__mbox *mb, uint32_t peer, uint64_t exchange, int b, size_t off,
                      const mm_wire_vec *meta, size_t len)
{
    assert(off % 8 == 0 && off <= mb->buf_bytes && len <= mb->buf_bytes - off);
    mm__cmd c = {.kind = MM__CMD_SEND, .peer = peer, .exchange = exchange, .buf = b,
                 .meta = *meta, .off = off, .len = len};
    send_cmd(mb, &c);
}

void mm__mbox_send_stream(mm__mbox *mb, uint32_t peer, uint64_t exchange, int b,
                          const mm_wire_vec *meta)
{
    assert(mb->chunks_n[b] > 0); /* (written by this thread only) */
    mm__cmd c = {.kind = MM__CMD_SEND, .peer = peer, .exchange = exchange, .buf = b,
                 .meta = *meta, .chunks = mb->chunks_n[b]};
    send_cmd(mb, &c);
}

void mm__mbox_release(mm__mbox *mb, uint32_t peer)
{
    mm__cmd c = {.kind = MM__CMD_RELEASE, .peer = peer};
    pthread_mutex_lock(&mb->mu);
    mbox_peer *q = &mb->peer[peer];
    assert(q->in_n > 0);
    inbox_slot *head = &q->inbox[q->in_head];
    bool lent = !head->staged; /* (a staged copy's buffer is the transport's again) */
    if (head->staged)
        q->staged--;
    head->present = false;
    q->in_head = (q->in_head + 1) % INBOX;
    q->in_n--;
    if (lent)
        post(mb, &c);
    changed(mb);
    pthread_mutex_unlock(&mb->mu);
    if (lent)
        uv_async_send(mb->wake);
}

void mm__mbox_peer(mm__mbox *mb, uint32_t peer, mm__peer_view *v)
{
    pthread_mutex_lock(&mb->mu);
    const mbox_peer *q = &mb->peer[peer];
    const inbox_slot *s = &q->inbox[q->in_head]; /* the first to come */
    const inbox_slot *last = &q->inbox[(q->in_head + (q->in_n ? q->in_n - 1 : 0)) % INBOX];
    *v = (mm__peer_view){
        .state = q->state,
        .ever_up = q->ever_up,
        .has_vector = s->present,
        .exchange = s->exchange,
        .meta = s->meta,
        .body = s->present ? s->body : NULL,
        .body_len = s->present ? s->body_len : 0,
        .send_pending = q->has_pending,
        .pending_exchange = q->pending.exchange,
        .ups = q->ups,
        .lost = q->lost,
        .vector_ups = s->ups,
        .delivered_at = s->at,
        .queued = q->in_n,
        .newest_exchange = q->in_n ? last->exchange : 0,
        .newest_at = q->in_n ? last->at : 0,
        .written_exchange = q->written_exchange,
        .written_ups = q->written_ups,
    };
    pthread_mutex_unlock(&mb->mu);
}

/* One counter of the mailbox, read under its mutex. */
static uint64_t read_locked(mm__mbox *mb, const uint64_t *field)
{
    pthread_mutex_lock(&mb->mu);
    uint64_t v = *field;
    pthread_mutex_unlock(&mb->mu);
    return v;
}

uint64_t mm__mbox_generation(mm__mbox *mb) { return read_locked(mb, &mb->gen); }

/* pthread_cond_timedwait counts in CLOCK_REALTIME: a mm_time_now()
 * deadline converted. */
static struct timespec realtime_of(double deadline)
{
    struct timespec now_real, ts;
    clock_gettime(CLOCK_REALTIME, &now_real);
    double wait = deadline - mm_time_now();
    if (wait < 0)
        wait = 0;
    double t = (double)now_real.tv_sec + (double)now_real.tv_nsec * 1e-9 + wait;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    return ts;
}

void mm__mbox_wait(mm__mbox *mb, uint64_t gen, double deadline)
{
    struct timespec ts = realtime_of(deadline);
    pthread_mutex_lock(&mb->mu);
    while (mb->gen == gen && atomic_load(&mb->signals) == 0)
        if (pthread_cond_timedwait(&mb->cv, &mb->mu, &ts) != 0)
            break;
    pthread_mutex_unlock(&mb->mu);
}

bool mm__mbox_stopping(mm__mbox *mb) { return atomic_load(&mb->signals) > 0; }

void mm__mbox_stats(mm__mbox *mb, mm_transport_stats *out, mm_link_stats *links, bool fresh)
{
    if (fresh) {
        uint64_t sg = read_locked(mb, &mb->stats_gen);
        uv_async_send(mb->wake);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts); /* the condition variable's clock */
        ts.tv_sec += 1;
        pthread_mutex_lock(&mb->mu);
        while (mb->stats_gen == sg)
            if (pthread_cond_timedwait(&mb->cv, &mb->mu, &ts) != 0)
                break; /* the loop is gone or stuck: keep the last copy */
        pthread_mutex_unlock(&mb->mu);
    }
    pthread_mutex_lock(&mb->mu);
    *out = mb->stats;
    if (links)
        memcpy(links, mb->links, mb->n * sizeof *links);
    pthread_mutex_unlock(&mb->mu);
}

void mm__mbox_defer_busy(mm__mbox *mb, bool on)
{
    pthread_mutex_lock(&mb->mu);
    mb->defer_busy = on;
    pthread_mutex_unlock(&mb->mu);
}

uint64_t mm__mbox_deferred_sends(mm__mbox *mb) { return read_locked(mb, &mb->deferred); }

/* Where a peer's refusals are kept: its record's, or the one of every
 * peer the topology does not know. */
static mm__refusals **refusals_of(mm__mbox *mb, uint32_t peer)
{
    return peer < mb->n ? &mb->peer[peer].refusals : &mb->refusals_unknown;
}

void mm__mbox_refusals(mm__mbox *mb, uint32_t peer, mm__refusals *out)
{
    pthread_mutex_lock(&mb->mu);
    const mm__refusals *f = *refusals_of(mb, peer);
    if (f)
        *out = *f;
    else
        memset(out, 0, sizeof *out);
    pthread_mutex_unlock(&mb->mu);
}

uint64_t mm__mbox_skipped_sends(mm__mbox *mb) { return read_locked(mb, &mb->skipped); }

void mm__mbox_finish(mm__mbox *mb)
{
    pthread_mutex_lock(&mb->mu);
    mb->finished = true;
    pthread_mutex_unlock(&mb->mu);
    uv_async_send(mb->wake);
}

/* Either collective: its command, with the one state they share. */
static void collective(mm__mbox *mb, const mm__cmd *cmd)
{
    mm__cmd c = *cmd;
    pthread_mutex_lock(&mb->mu);
    assert(mb->ar.state != MM__AR_RUNNING);
    mb->ar.state = MM__AR_RUNNING;
    mb->ar.err[0] = 0;
    mb->ar_started = mb->ar.last_progress = mm_time_now();
    post(mb, &c);
    changed(mb);
    pthread_mutex_unlock(&mb->mu);
    uv_async_send(mb->wake);
}

void mm__mbox_allreduce(mm__mbox *mb, uint64_t exchange, const float *in, float *out)
{
    collective(mb, &(mm__cmd){.kind = MM__CMD_ALLREDUCE, .exchange = exchange, .in = in,
                              .out = out});
}

void mm__mbox_allgather(mm__mbox *mb, uint64_t exchange, uint8_t *slots, size_t *lens)
{
    collective(mb, &(mm__cmd){.kind = MM__CMD_ALLGATHER, .exchange = exchange, .slots = slots,
                              .lens = lens});
}

void mm__mbox_allreduce_abort(mm__mbox *mb, const char *why)
{
    mm__cmd c = {.kind = MM__CMD_AR_ABORT};
    snprintf(c.why, sizeof c.why, "%s", why);
    pthread_mutex_lock(&mb->mu);
    post(mb, &c);
    pthread_mutex_unlock(&mb->mu);
    uv_async_send(mb->wake);
}

void mm__mbox_allreduce_view(mm__mbox *mb, mm__ar_view *out)
{
    pthread_mutex_lock(&mb->mu);
    *out = mb->ar;
    pthread_mutex_unlock(&mb->mu);
}

void mm__mbox_allreduce_wait(mm__mbox *mb, double deadline)
{
    struct timespec ts = realtime_of(deadline);
    pthread_mutex_lock(&mb->mu);
    while (mb->ar.state == MM__AR_RUNNING)
        if (pthread_cond_timedwait(&mb->cv, &mb->mu, &ts) != 0)
            break;
    pthread_mutex_unlock(&mb->mu);
}

/* ---- loop thread ---------------------------------------------------------- */

void mm__mbox_allreduce_progress(mm__mbox *mb, uint64_t progress)
{
    pthread_mutex_lock(&mb->mu);
    if (progress != mb->ar_progress) {
        mb->ar_progress = progress;
        mb->ar.last_progress = mm_time_now();
    }
    pthread_mutex_unlock(&mb->mu);
}

void mm__mbox_allreduce_end(mm__mbox *mb, bool ok, const char *err)
{
    pthread_mutex_lock(&mb->mu);
    if (mb->ar.state == MM__AR_RUNNING) {
        mb->ar.state = ok ? MM__AR_DONE : MM__AR_FAILED;
        mb->ar.seconds = mm_time_now() - mb->ar_started;
        snprintf(mb->ar.err, sizeof mb->ar.err, "%s", ok ? "" : err);
        changed(mb);
    }
    pthread_mutex_unlock(&mb->mu);
}

/* With mu held: a staging buffer for a body of len bytes from peer q, or
 * NULL (staging off, the body too large, all in use, or out of memory). */
static uint8_t *stage_for(mm__mbox *mb, mbox_peer *q, size_t len)
{
    if (len > mb->stage_bytes || q->staged == MM__MBOX_STAGE || q->in_n == INBOX)
        return NULL;
    for (int k = 0; k < INBOX - 1; k++) /* (a lent vector in the ring is the last) */
        if (q->in_n > k && !q->inbox[(q->in_head + k) % INBOX].staged)
            return NULL;
    uint8_t **b = &q->stage[q->stage_next];
    if (!*b)
        *b = malloc(mb->stage_bytes);
    return *b;
}

void *mm__mbox_stage_dst(mm__mbox *mb, uint32_t peer, size_t body_len)
{
    pthread_mutex_lock(&mb->mu);
    uint8_t *b = stage_for(mb, &mb->peer[peer], body_len);
    pthread_mutex_unlock(&mb->mu);
    return b;
}

bool mm__mbox_deliver(mm__mbox *mb, uint32_t peer, uint64_t exchange, const mm_wire_vec *meta,
                      const void *body, size_t body_len)
{
    pthread_mutex_lock(&mb->mu);
    mbox_peer *q = &mb->peer[peer];
    assert(q->in_n < INBOX);
    uint8_t *copy = stage_for(mb, q, body_len);
    if (copy) {
        if (copy != body) /* (else read straight into it: mm__mbox_stage_dst) */
            memcpy(copy, body, body_len);
        body = copy;
        q->stage_next = (q->stage_next + 1) % MM__MBOX_STAGE;
        q->staged++;
    }
    q->inbox[(q->in_head + q->in_n++) % INBOX] =
        (inbox_slot){.present = true, .exchange = exchange, .meta = *meta, .body = body,
                     .body_len = body_len, .ups = q->ups, .at = mm_time_now(),
                     .staged = copy != NULL};
    changed(mb);
    pthread_mutex_unlock(&mb->mu);
    return copy != NULL;
}

void mm__mbox_sent(mm__mbox *mb, uint32_t peer, bool ok)
{
    pthread_mutex_lock(&mb->mu);
    mbox_peer *q = &mb->peer[peer];
    if (!ok)
        q->lost++;
    if (q->inflight) {
        q->inflight = false;
        assert(mb->refs[q->inflight_buf] > 0);
        mb->refs[q->inflight_buf]--;
    }
    changed(mb);
    pthread_mutex_unlock(&mb->mu);
}

mm__peer_state mm__mbox_peer_changed(mm__mbox *mb, uint32_t peer, mm__peer_state st)
{
    pthread_mutex_lock(&mb->mu);
    mbox_peer *q = &mb->peer[peer];
    mm__peer_state old = q->state;
    q->state = st;
    if (st == MM__PEER_UP) {
        q->ever_up = true;
        q->ups++; /* every new connection, also one that replaced a live one */
    }
    changed(mb);
    pthread_mutex_unlock(&mb->mu);
    return old;
}

void mm__mbox_refused(mm__mbox *mb, const mm_refusal *r)
{
    pthread_mutex_lock(&mb->mu);
    /* (per peer only once refused: a record is a few hundred bytes, and a
     * peer may have thousands of peers it never hears from) */
    mm__refusals **slot = refusals_of(mb, r->peer);
    if (!*slot)
        *slot = calloc(1, sizeof **slot);
    mm__refusals *f = *slot;
    if (f) {
        f->count++;
        f->last = *r;
        if (mm_refusal_is_config(r->code)) {
            f->config = true;
            f->config_count++;
            f->last_config = *r;
        }
        if (r->code == MM_REFUSAL_ID_CLASH)
            f->id_clash = true;
    }
    /* A peer refused for a configuration that differs will not come up
     * by retrying: not worth waiting for (a peer that should dial us is
     * otherwise reported down only after the transport's connect timeout).
     * Faults (a failed dial, a timeout) are the transport's to report. */
    mbox_peer *q = r->peer < mb->n ? &mb->peer[r->peer] : NULL;
    if (q && mm_refusal_is_config(r->code) &&
        (q->state == MM__PEER_CONNECTING || q->state == MM__PEER_UNKNOWN)) {
        q->state = MM__PEER_DOWN;
        changed(mb);
    }
    pthread_mutex_unlock(&mb->mu);
}

int mm__mbox_signal(mm__mbox *mb)
{
    int n = atomic_fetch_add(&mb->signals, 1) + 1;
    pthread_mutex_lock(&mb->mu);
    changed(mb);
    pthread_mutex_unlock(&mb->mu);
    return n;
}

int mm__mbox_drain(mm__mbox *mb, mm__cmd *cmds, int cap, uint32_t *want, int *want_n,
                   bool *finished, const mm_transport_stats *stats,
                   const mm_link_stats *links)
{
    pthread_mutex_lock(&mb->mu);
    int n = mb->q_len < cap ? mb->q_len : cap;
    memcpy(cmds, mb->queue, (size_t)n * sizeof *cmds);
    memmove(mb->queue, mb->queue + n, (size_t)(mb->q_len - n) * sizeof *cmds);
    mb->q_len -= n;
    *want_n = -1;
    if (mb->want_dirty) {
        *want_n = mb->want_n;
        memcpy(want, mb->want, (size_t)mb->want_n * sizeof *want);
        mb->want_dirty = false;
    }
    *finished = mb->finished;
    mb->finished = false; /* reported once */
    mb->stats = *stats;
    memcpy(mb->links, links, mb->n * sizeof *links);
    mb->stats_gen++;
    changed(mb); /* the queue has room again; the counters are new */
    pthread_mutex_unlock(&mb->mu);
    return n;
}

const void *mm__mbox_claim(mm__mbox *mb, const mm__cmd *c)
{
    pthread_mutex_lock(&mb->mu);
    /* mm__mbox_send registered it as pending; anything else is obsolete
     * (a newer exchange replaced it, or it was already handled). */
    mbox_peer *q = &mb->peer[c->peer];
    const mm__cmd *p = &q->pending;
    if (!q->has_pending || p->exchange != c->exchange || p->buf != c->buf) {
        pthread_mutex_unlock(&mb->mu);
        return NULL;
    }
    bool current = mb->buf_exchange[c->buf] == (int64_t)c->exchange;
    bool busy = q->inflight;
    if (current && busy && mb->defer_busy) {
        /* synchronous rounds: the neighbour waits for this very vector, so
         * it goes out the moment the previous one is through
         * (mm__mbox_sent), instead of being skipped */
        mb->deferred++;
        pthread_mutex_unlock(&mb->mu);
        return NULL;
    }
    if (!current || busy) {
        drop_pending(mb, c->peer); /* (counted lost) */
        if (busy)
            mb->skipped++;
        pthread_mutex_unlock(&mb->mu);
        return NULL;
    }
    if (q->state != MM__PEER_UP) {
        pthread_mutex_unlock(&mb->mu); /* stays pending until the peer is up */
        return NULL;
    }
    q->has_pending = false; /* its buffer reference passes to the send */
    q->inflight = true;
    q->inflight_buf = c->buf;
    q->written_exchange = c->exchange;
    q->written_ups = q->ups;
    changed(mb);
    const void *buf = (const char *)mb->buf[c->buf] + c->off;
    pthread_mutex_unlock(&mb->mu);
    return buf;
}

void mm__mbox_unclaim(mm__mbox *mb, const mm__cmd *c)
{
    pthread_mutex_lock(&mb->mu);
    mbox_peer *q = &mb->peer[c->peer];
    assert(q->inflight && q->inflight_buf == c->buf);
    q->inflight = false;
    q->written_exchange = UINT64_MAX; /* (not written after all) */
    q->pending = *c;
    q->has_pending = true;
    changed(mb);
    pthread_mutex_unlock(&mb->mu);
}

bool mm__mbox_chunk(mm__mbox *mb, int b, int k, mm__chunk *out)
{
    pthread_mutex_lock(&mb->mu);
    assert(mb->refs[b] > 0 && k < mb->chunks_n[b]);
    bool ready = k < mb->chunks_ready[b];
    if (ready)
        *out = mb->chunks[b][k];
    pthread_mutex_unlock(&mb->mu);
    return ready;
}

uint64_t mm__mbox_ups(mm__mbox *mb, uint32_t peer) { return read_locked(mb, &mb->peer[peer].ups); }

bool mm__mbox_pending(mm__mbox *mb, uint32_t peer, mm__cmd *out)
{
    pthread_mutex_lock(&mb->mu);
    bool has = mb->peer[peer].has_pending;
    if (has)
        *out = mb->peer[peer].pending;
    pthread_mutex_unlock(&mb->mu);
    return has;
}
