/* The codec rows of make bench-gossip: for each codec, on model-like
 * vectors (tests/modelvec.h) of 1 M and 16 M floats,
 *   - encode and decode speed on one core, in GB/s of float32 input:
 *     plain encode Q(x), CHOCO encode Q(x - ref) with ref updated, decode
 *     into a vector, and apply to a copy (CHOCO receive); the receiver's
 *     copy must end equal to the sender's ref;
 *   - bytes on the wire per float;
 *   - the effective parameter throughput over TLS, in float32-equivalent
 *     GB/s: 4 n bytes per exchange over the time of a CHOCO encode, of the
 *     payload's bytes crossing the real TLS transport (measured here, back
 *     to back, exactly as fp32 is), and of the apply, one after the other;
 *     next to fp32 over TLS (today's exchange: the plain vector, nothing to
 *     encode) measured in the same trials. "overlap" is what the same three
 *     would give if each had a core to itself (a payload streamed in
 *     chunks): 4 n over the slowest of them;
 *   - for int8 (BENCH_STREAM_CODECS), the exchange measured end to end as
 *     the node runs it (pipe_trial below): sequential (one frame, encode,
 *     send, apply one after the other) and streamed (chunks of
 *     mm_choco_chunk(n) floats, or BENCH_CHUNK), next to the same trial's fp32
 *     over TLS.
 * Speeds are the best of the trials. The ratios to fp32 are taken pair by
 * pair: in every trial each codec's exchange (encode, payload, apply) runs
 * right after an fp32 exchange of its own, A B A B, and the table prints
 * the median of those per-trial ratios with their range (the machine is
 * shared: a ratio of two bests measured seconds apart does not hold), and
 * the load average. Asserts nothing about speed. */
#include "tests/bench_codec.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include "gossip/choco.h"
#include "gossip/codec.h"
#include "gossip/mix.h"
#include "net/tls.h"
#include "net/transport.h"
#include "tests/modelvec.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static mm_codec *make(const char *text, uint64_t n)
{
    mm_codec_spec s;
    char err[256];
    if (mm_codec_parse(text, &s, err, sizeof err) != 0) {
        fprintf(stderr, "bench: %s\n", err);
        return NULL;
    }
    mm_codec *c = mm_codec_new(&s, n, err, sizeof err);
    if (!c)
        fprintf(stderr, "bench: %s\n", err);
    return c;
}

/* The payload of one exchange crossing the TLS transport, back to back
 * like fp32's vectors: bytes/s of a carrier of the payload's length (the
 * transport's VECTOR frames carry floats it checks for NaN, so the codec's
 * own bytes cannot ride it until the integration adds a frame for them; the
 * cipher and the socket do not care what the bytes are). */
static double payload_trial(const char *certdir, double bytes, size_t reps, int *failures)
{
    size_t carrier = ((size_t)(bytes + 0.5) + 3) / 4 * 4;
    if (carrier < 4)
        carrier = 4;
    int bad = 0;
    double cpu, rate = bench_transport_run(certdir, false, carrier, reps, &bad, &cpu);
    *failures += bad || !rate;
    return rate;
}

typedef struct {
    double enc, enc_ref, dec, apply; /* seconds, best of */
    double bytes_per_float;
} speeds;

/* One core, no transport: seconds for each operation on n floats, this
 * trial's in *sp (left as it was on failure). */
static void speed_trial(const char *spec, const float *xa, const float *xb, uint64_t n,
                        float *ref, float *copy, uint8_t *buf, speeds *sp, int *failures)
{
    mm_codec *c = make(spec, n);
    if (!c) {
        *failures += 1;
        return;
    }
    char why[256];
    size_t len = 0;
    memset(ref, 0, n * sizeof *ref);
    memset(copy, 0, n * sizeof *copy);
    /* a first CHOCO exchange so that x - ref below is a real difference */
    if (mm_codec_encode(c, xa, ref, 1, buf, mm_codec_max_bytes(c), &len, NULL, why, sizeof why) ||
        mm_codec_apply(c, buf, len, copy, NULL, why, sizeof why)) {
        fprintf(stderr, "bench: %s: %s\n", spec, why);
        *failures += 1;
        mm_codec_free(c);
        return;
    }
    double t0 = now_s();
    int e = mm_codec_encode(c, xb, NULL, 2, buf, mm_codec_max_bytes(c), &len, NULL, why, sizeof why);
    double t1 = now_s();
    e |= mm_codec_decode(c, buf, len, copy, why, sizeof why);
    double t2 = now_s();
    memcpy(copy, ref, n * sizeof *ref);
    double t3 = now_s();
    e |= mm_codec_encode(c, xb, ref, 3, buf, mm_codec_max_bytes(c), &len, NULL, why, sizeof why);
    double t4 = now_s();
    e |= mm_codec_apply(c, buf, len, copy, NULL, why, sizeof why);
    double t5 = now_s();
    if (e || memcmp(ref, copy, n * sizeof *ref)) {
        fprintf(stderr, "bench: %s: %s\n", spec, e ? why : "copy differs from ref");
        *failures += 1;
    }
    sp->enc = t1 - t0;
    sp->dec = t2 - t1;
    sp->enc_ref = t4 - t3;
    sp->apply = t5 - t4;
    sp->bytes_per_float = (double)len / (double)n;
    mm_codec_free(c);
}

static void fold_best(speeds *best, const speeds *t)
{
    best->enc = fmin(best->enc, t->enc);
    best->dec = fmin(best->dec, t->dec);
    best->enc_ref = fmin(best->enc_ref, t->enc_ref);
    best->apply = fmin(best->apply, t->apply);
    best->bytes_per_float = t->bytes_per_float;
}

/* 4n / (encode + payload + apply) and 4n / the slowest of the three, in
 * bytes of float32 per second, for payload bytes/s xfer (0: failed). */
static void exchange_rates(const speeds *sp, uint64_t n, double xfer, double *seq,
                           double *overlap)
{
    double t_x = xfer > 0 ? sp->bytes_per_float * (double)n / xfer : INFINITY;
    *seq = 4.0 * (double)n / (sp->enc_ref + t_x + sp->apply);
    *overlap = 4.0 * (double)n / fmax(sp->enc_ref, fmax(t_x, sp->apply));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorted in place), its range in *lo, *hi. */
static double median_range(double *v, int n, double *lo, double *hi)
{
    if (n < 1) {
        *lo = *hi = 0;
        return 0;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *lo = v[0];
    *hi = v[n - 1];
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void load_avg(char *out, size_t len)
{
    double l[3] = {0, 0, 0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f || fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3)
        snprintf(out, len, "n/a");
    else
        snprintf(out, len, "%.2f %.2f %.2f", l[0], l[1], l[2]);
    if (f)
        fclose(f);
}

/* ---- the exchange as the node runs it: a real pipeline ------------------- */

/* One CHOCO exchange after another from peer 0 to peer 1 over the real TLS
 * transport, each thread doing what the node's does: peer 0's "training
 * thread" encodes q = Q(x - ref) (ref updated) and hands it to its loop,
 * which seals and sends it; peer 1's loop reads and checks it (check_body,
 * as murmur node) and lends it to its "training thread", which applies it
 * to its copy and gives it back. Sequential (chunk = n): one frame, encoded
 * whole, then sent, then applied, as before streaming. Streamed (chunk <
 * n, docs/protocol.md 6.10): chunk k goes to the loop as soon as it is
 * encoded, so chunk k is sealed while k+1 is encoded, and applied while
 * k+1 is on its way. The next exchange starts when the last chunk of this
 * one is applied (the node's round waits for its neighbours). The
 * receiver's copy must end equal to the sender's ref, bit for bit. */
typedef struct pipe_run pipe_run;

/* CPU seconds of the whole process (all four threads of the pipeline). */
static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define PIPE_STAGE 4 /* as MM__MBOX_STAGE (node/mailbox.h) */

typedef struct {
    pipe_run *pr;
    uint32_t id;
    uv_loop_t loop;
    uv_async_t wake, stop;
    mm_transport *t;
    pthread_t th;
    atomic_int up, ready;
    char err[256];
} pipe_side;

struct pipe_run {
    pipe_side s[2];
    char addr[2][40];
    const char *addrs[2];
    const char *certdir;
    mm_codec *codec;                /* the sender's (encodes) */
    mm_codec *rcodec;               /* the receiver's (checks, applies) */
    uint64_t n, chunk;
    int chunks;
    size_t reps;
    const float *x[2];
    float *ref, *copy;
    uint8_t *buf;
    mm_wire_vec *part;              /* [chunks]: each chunk's header (offset, count, crc) */
    size_t *part_off, *part_len;    /* ... and its bytes in buf */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t rep;                     /* the exchange under way */
    int produced;                   /* its chunks encoded */
    int handed;                     /* ... handed to the transport (sender loop) */
    /* receiver: what has come, in order (as the node's mailbox keeps it):
     * chunks copied out of the transport's buffer (at most PIPE_STAGE), and
     * at most one left lent (the transport reads on once it is back) */
    struct {
        mm_wire_vec meta;
        const uint8_t *body;
        size_t len;
        bool staged;
    } in[PIPE_STAGE + 1];
    int in_head, in_n, stage_next, staged;
    uint8_t *stage[PIPE_STAGE];
    size_t stage_bytes;
    bool give_back;                 /* receiver loop: release the lent chunk */
    size_t done_reps;
    double t_start, t_end;          /* the first exchange applied, the last */
    double cpu_start, cpu_end;      /* the process's CPU seconds then */
    atomic_int bad;
};

static int pipe_check(void *ud, const mm_wire_vec *meta, const uint8_t *body, size_t len,
                      char *why, size_t whylen)
{
    return mm_codec_check_part(ud, meta->count, body, len, why, whylen) == MM_CODEC_OK ? 0 : -1;
}

/* With mu held: the staging buffer a chunk of len bytes goes to, or NULL
 * (as node/mailbox.c stage_for). */
static uint8_t *pipe_stage_for(pipe_run *pr, size_t len)
{
    bool lent_waits = pr->in_n > pr->staged;
    bool stage = pr->chunks > 1 && len <= pr->stage_bytes && pr->staged < PIPE_STAGE && !lent_waits;
    return stage ? pr->stage[pr->stage_next] : NULL;
}

/* The receiver's vector_dst: a chunk is read straight into its staging
 * buffer (as node.c vector_dst, mm__mbox_stage_dst). */
static void *pipe_vector_dst(void *ud, uint32_t peer, uint64_t exchange, const mm_wire_vec *meta,
                             size_t len)
{
    pipe_side *s = ud;
    pthread_mutex_lock(&s->pr->mu);
    uint8_t *b = pipe_stage_for(s->pr, len);
    pthread_mutex_unlock(&s->pr->mu);
    return b;
}

static void pipe_on_vector(void *ud, uint32_t peer, uint64_t exchange, const mm_wire_vec *meta,
                           const void *body, size_t len)
{
    pipe_side *s = ud;
    pipe_run *pr = s->pr;
    pthread_mutex_lock(&pr->mu);
    uint8_t *stage = pipe_stage_for(pr, len);
    bool copy = stage != NULL;
    if (copy) {
        if (stage != body) /* (else read straight into it) */
            memcpy(stage, body, len);
        body = pr->stage[pr->stage_next];
        pr->stage_next = (pr->stage_next + 1) % PIPE_STAGE;
        pr->staged++;
    }
    int at = (pr->in_head + pr->in_n++) % (PIPE_STAGE + 1);
    pr->in[at].meta = *meta;
    pr->in[at].body = body;
    pr->in[at].len = len;
    pr->in[at].staged = copy;
    pthread_cond_broadcast(&pr->cv);
    pthread_mutex_unlock(&pr->mu);
    if (copy)
        mm_transport_release(s->t, peer);
}

static void pipe_on_sent(void *ud, uint32_t peer, uint64_t exchange, bool ok)
{
    pipe_side *s = ud;
    if (!ok)
        atomic_fetch_add(&s->pr->bad, 1);
}

static void pipe_on_peer(void *ud, uint32_t peer, mm_peer_state st)
{
    pipe_side *s = ud;
    if (st == MM_PEER_UP)
        atomic_store(&s->up, 1);
}

/* Either loop's wake: the sender hands the chunks encoded since; the
 * receiver gives back the chunk its training thread applied. */
static void pipe_on_wake(uv_async_t *a)
{
    pipe_side *s = a->data;
    pipe_run *pr = s->pr;
    pthread_mutex_lock(&pr->mu);
    if (s->id == 0) {
        while (pr->handed < pr->produced) {
            int k = pr->handed++;
            size_t rep = pr->rep;
            pthread_mutex_unlock(&pr->mu); /* (TLS seals inside send_vec) */
            if (mm_transport_send_vec(s->t, 1, rep, &pr->part[k], pr->buf + pr->part_off[k],
                                      pr->part_len[k]) != 0)
                atomic_fetch_add(&pr->bad, 1);
            pthread_mutex_lock(&pr->mu);
        }
    } else if (pr->give_back) {
        pr->give_back = false;
        pthread_mutex_unlock(&pr->mu);
        mm_transport_release(s->t, 0);
        return;
    }
    pthread_mutex_unlock(&pr->mu);
}

static void pipe_closed(uv_handle_t *h) { (void)h; }

static void pipe_done(void *ud)
{
    pipe_side *s = ud;
    uv_close((uv_handle_t *)&s->wake, pipe_closed);
    uv_close((uv_handle_t *)&s->stop, pipe_closed);
}

static void pipe_on_stop(uv_async_t *a)
{
    pipe_side *s = a->data;
    mm_transport_shutdown(s->t, pipe_done, s);
}

static void *pipe_side_main(void *arg)
{
    pipe_side *s = arg;
    pipe_run *pr = s->pr;
    pthread_setname_np(pthread_self(), s->id ? "pipe-rx-loop" : "pipe-tx-loop"); /* (perf) */
    uv_loop_init(&s->loop);
    uv_async_init(&s->loop, &s->wake, pipe_on_wake);
    uv_async_init(&s->loop, &s->stop, pipe_on_stop);
    s->wake.data = s->stop.data = s;
    const mm_codec_spec *spec = mm_codec_get_spec(pr->codec);
    mm_transport_config cfg = {0};
    mm_tls_files f;
    cfg.self_id = s->id;
    cfg.n_peers = 2;
    cfg.addrs = pr->addrs;
    cfg.vec_len = pr->n;
    cfg.codec = (uint8_t)spec->kind;
    cfg.codec_block = spec->block;
    cfg.codec_frac = spec->frac;
    cfg.max_body = mm_codec_max_bytes(pr->codec);
    cfg.copies = true;
    cfg.streams = pr->chunks > 1;
    cfg.check_body = pipe_check;
    cfg.check_ud = pr->rcodec;
    cfg.round_window = 1 << 20;
    cfg.peer_timeout_ms = 60000;
    mm_tls_files_for(pr->certdir, s->id, &f);
    cfg.ca_file = f.ca;
    cfg.cert_file = f.cert;
    cfg.key_file = f.key;
    mm_transport_callbacks cb = {.on_vector = pipe_on_vector, .on_sent = pipe_on_sent,
                                 .on_peer = pipe_on_peer, .ud = s,
                                 .vector_dst = pr->chunks > 1 ? pipe_vector_dst : NULL};
    s->t = mm_transport_new(&s->loop, &cfg, &cb, s->err, sizeof s->err);
    if (!s->t) {
        uv_close((uv_handle_t *)&s->wake, NULL);
        uv_close((uv_handle_t *)&s->stop, NULL);
        atomic_store(&s->ready, -1);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        uv_loop_close(&s->loop);
        return NULL;
    }
    uint32_t other = 1 - s->id;
    mm_transport_want(s->t, &other, 1);
    atomic_store(&s->ready, 1);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    mm_transport_free(s->t);
    uv_loop_close(&s->loop);
    return NULL;
}

/* Peer 0's training thread: every exchange, q chunk by chunk, each handed
 * to the loop at once; the next exchange once the receiver applied this
 * one. */
static void *pipe_producer(void *arg)
{
    pipe_run *pr = arg;
    char why[256];
    pthread_setname_np(pthread_self(), "pipe-encode");
    for (size_t r = 0; r < pr->reps && !atomic_load(&pr->bad); r++) {
        const float *x = pr->x[r % 2];
        pthread_mutex_lock(&pr->mu);
        pr->rep = r;
        pr->produced = pr->handed = 0;
        pthread_mutex_unlock(&pr->mu);
        size_t at = 0;
        for (int k = 0; k < pr->chunks; k++) {
            uint64_t off = (uint64_t)k * pr->chunk, cnt = pr->n - off < pr->chunk ? pr->n - off
                                                                                : pr->chunk;
            size_t len = 0;
            uint32_t crc = 0;
            if (mm_choco_encode_part(pr->codec, x, pr->ref, off, cnt, pr->buf + at,
                                     mm_codec_max_bytes(pr->codec) + 64 * (size_t)pr->chunks - at,
                                     &len, &crc, why, sizeof why) != MM_CODEC_OK) {
                fprintf(stderr, "bench: %s\n", why);
                atomic_fetch_add(&pr->bad, 1);
                break;
            }
            pthread_mutex_lock(&pr->mu);
            pr->part[k] = (mm_wire_vec){.weight = 1.0,
                                        .codec = (uint8_t)mm_codec_get_spec(pr->codec)->kind,
                                        .copy_crc = crc, .offset = off, .count = cnt};
            pr->part_off[k] = at;
            pr->part_len[k] = len;
            pr->produced = k + 1;
            pthread_mutex_unlock(&pr->mu);
            uv_async_send(&pr->s[0].wake);
            at += (len + 7) & ~(size_t)7;
        }
        pthread_mutex_lock(&pr->mu);
        while (pr->done_reps <= r && !atomic_load(&pr->bad)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&pr->cv, &pr->mu, &ts);
        }
        pthread_mutex_unlock(&pr->mu);
    }
    return NULL;
}

/* Peer 1's training thread: each lent chunk applied to its part of the
 * copy (the loop checked it), its CRC compared, then given back. */
static void *pipe_consumer(void *arg)
{
    pipe_run *pr = arg;
    char why[256];
    pthread_setname_np(pthread_self(), "pipe-apply");
    pthread_mutex_lock(&pr->mu);
    while (pr->done_reps < pr->reps && !atomic_load(&pr->bad)) {
        if (!pr->in_n) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&pr->cv, &pr->mu, &ts);
            continue;
        }
        int at = pr->in_head;
        mm_wire_vec m = pr->in[at].meta;
        const uint8_t *body = pr->in[at].body;
        size_t len = pr->in[at].len;
        bool staged = pr->in[at].staged;
        pthread_mutex_unlock(&pr->mu);
        uint32_t crc = 0;
        if (mm_choco_receive_part(pr->rcodec, m.offset, m.count, body, len, pr->copy, &crc, why,
                                  sizeof why) != MM_CODEC_OK || crc != m.copy_crc)
            atomic_fetch_add(&pr->bad, 1);
        pthread_mutex_lock(&pr->mu);
        pr->in_head = (pr->in_head + 1) % (PIPE_STAGE + 1);
        pr->in_n--;
        if (staged)
            pr->staged--;
        else
            pr->give_back = true;
        if (m.offset + m.count == pr->n) {
            if (++pr->done_reps == 1) { /* (the first exchange warms up: untimed) */
                pr->t_start = now_s();
                pr->cpu_start = process_cpu_s();
            }
            pr->t_end = now_s();
            pr->cpu_end = process_cpu_s();
            pthread_cond_broadcast(&pr->cv);
        }
        pthread_mutex_unlock(&pr->mu);
        if (!staged)
            uv_async_send(&pr->s[1].wake);
        pthread_mutex_lock(&pr->mu);
    }
    pthread_mutex_unlock(&pr->mu);
    return NULL;
}

/* reps exchanges of spec on xa/xb (n floats) in chunks of chunk floats (n:
 * one frame): float32-equivalent bytes/s (4 n per exchange), 0 on failure. */
static double pipe_trial(const char *certdir, const char *spec, const float *xa,
                         const float *xb, uint64_t n, uint64_t chunk, size_t reps, int *failures,
                         double *cores)
{
    pipe_run *pr = calloc(1, sizeof *pr);
    double rate = 0;
    if (!pr)
        return 0;
    pr->certdir = certdir;
    pr->n = n;
    pr->chunk = chunk < n ? chunk : n;
    pr->chunks = (int)((n + pr->chunk - 1) / pr->chunk);
    pr->reps = reps + 1; /* and one to warm up: page faults, the receive buffer */
    pr->x[0] = xb;
    pr->x[1] = xa;
    pr->codec = make(spec, n);
    pr->rcodec = make(spec, n);
    pthread_mutex_init(&pr->mu, NULL);
    pthread_cond_init(&pr->cv, NULL);
    bool ok = pr->codec && pr->rcodec && (chunk >= n || mm_codec_splits(mm_codec_get_spec(pr->codec)));
    if (ok) {
        pr->ref = calloc(n, sizeof *pr->ref);
        pr->copy = calloc(n, sizeof *pr->copy);
        pr->buf = malloc(mm_codec_max_bytes(pr->codec) + 64 * (size_t)pr->chunks);
        pr->part = calloc((size_t)pr->chunks, sizeof *pr->part);
        pr->part_off = calloc((size_t)pr->chunks, sizeof *pr->part_off);
        pr->part_len = calloc((size_t)pr->chunks, sizeof *pr->part_len);
        ok = pr->ref && pr->copy && pr->buf && pr->part && pr->part_off && pr->part_len;
        pr->stage_bytes = (size_t)mm_codec_part_len(mm_codec_get_spec(pr->codec), pr->chunk);
        for (int k = 0; ok && k < PIPE_STAGE; k++)
            ok = (pr->stage[k] = malloc(pr->stage_bytes)) != NULL;
    }
    for (int i = 0; ok && i < 2; i++) {
        snprintf(pr->addr[i], sizeof pr->addr[i], "127.0.0.1:%d", bench_free_port());
        pr->addrs[i] = pr->addr[i];
    }
    for (uint32_t i = 0; ok && i < 2; i++) {
        pr->s[i].pr = pr;
        pr->s[i].id = i;
        pthread_create(&pr->s[i].th, NULL, pipe_side_main, &pr->s[i]);
    }
    for (int i = 0; ok && i < 2; i++)
        while (atomic_load(&pr->s[i].ready) == 0)
            usleep(1000);
    if (ok && (pr->s[0].ready < 0 || pr->s[1].ready < 0)) {
        fprintf(stderr, "bench: %s%s\n", pr->s[0].err, pr->s[1].err);
        atomic_fetch_add(&pr->bad, 1);
    }
    double limit = now_s() + 10;
    while (ok && !atomic_load(&pr->bad) && !(atomic_load(&pr->s[0].up) && atomic_load(&pr->s[1].up)) &&
           now_s() < limit)
        usleep(1000);
    if (ok && !atomic_load(&pr->bad)) {
        pthread_t prod, cons;
        pthread_create(&cons, NULL, pipe_consumer, pr);
        pthread_create(&prod, NULL, pipe_producer, pr);
        pthread_join(prod, NULL);
        pthread_join(cons, NULL);
        if (!atomic_load(&pr->bad) && pr->done_reps == pr->reps &&
            !memcmp(pr->ref, pr->copy, n * sizeof *pr->ref))
            rate = 4.0 * (double)n * (double)reps / (pr->t_end - pr->t_start);
        *cores = (pr->cpu_end - pr->cpu_start) / (pr->t_end - pr->t_start);
    }
    for (int i = 0; ok && i < 2; i++)
        if (pr->s[i].ready > 0)
            uv_async_send(&pr->s[i].stop);
    for (int i = 0; ok && i < 2; i++)
        pthread_join(pr->s[i].th, NULL);
    if (!rate) {
        fprintf(stderr, "bench: %s exchange in chunks of %llu failed\n", spec,
                (unsigned long long)chunk);
        *failures += 1;
    }
    mm_codec_free(pr->codec);
    mm_codec_free(pr->rcodec);
    free(pr->ref), free(pr->copy), free(pr->buf), free(pr->part), free(pr->part_off);
    free(pr->part_len);
    for (int k = 0; k < PIPE_STAGE; k++)
        free(pr->stage[k]);
    pthread_mutex_destroy(&pr->mu);
    pthread_cond_destroy(&pr->cv);
    free(pr);
    return rate;
}

/* The consensus step of a ring peer (two neighbours), as mm_mix_round
 * does it today and as mm_choco_mix does it in one pass: GB/s of x. */
static void mix_speed(uint64_t n, const float *a, const float *b, float *x, double out[2])
{
    mm_mix_input in[2] = {{.x = a, .weight = 1.0 / 3, .w = 1}, {.x = b, .weight = 1.0 / 3, .w = 1}};
    out[0] = out[1] = 0;
    for (int t = 0; t < 3; t++) {
        memcpy(x, a, n * sizeof *x);
        double t0 = now_s();
        mm_mix_round(x, b, n, 1.0, 1.0 / 3, in, 2, 0, 1.0, 0);
        double t1 = now_s();
        mm_choco_mix(x, b, n, 1.0 / 3, in, 2, 1.0);
        double t2 = now_s();
        out[0] = fmax(out[0], 4.0 * (double)n / (t1 - t0));
        out[1] = fmax(out[1], 4.0 * (double)n / (t2 - t1));
    }
}

/* Whether spec is in the comma-separated list (and splits into parts). */
static bool streamed(const char *spec, const char *list)
{
    size_t len = strlen(spec);
    mm_codec_spec s;
    char err[200];
    if (mm_codec_parse(spec, &s, err, sizeof err) != 0 || !mm_codec_splits(&s))
        return false;
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && !strncmp(p, spec, len))
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

int bench_codecs(const char *certdir, const char *codecs, const uint64_t *sizes, int n_sizes,
                 size_t per_case, int trials, FILE *csv)
{
    /* BENCH_STREAM_CODECS: the codecs whose exchange is also measured end to
     * end, sequential and streamed (default int8; "none": none) */
    const char *stream_codecs = getenv("BENCH_STREAM_CODECS");
    if (!stream_codecs)
        stream_codecs = "int8";
    /* BENCH_CHUNK: floats per chunk of the streamed exchange (default the
     * node's, mm_choco_chunk(n)) */
    const char *ck = getenv("BENCH_CHUNK");
    /* BENCH_PIPE_ONLY=seq|stream: only that end-to-end exchange of each
     * codec, nothing else (for perf record / perf stat of one path) */
    const char *pipe_only = getenv("BENCH_PIPE_ONLY");
    uint64_t chunk_set = ck ? strtoull(ck, NULL, 10) : 0;
    char list[512];
    const char *spec[32];
    int n_codecs = 0, failures = 0;
    snprintf(list, sizeof list, "%s", codecs);
    for (char *t = strtok(list, ","); t && n_codecs < 32; t = strtok(NULL, ","))
        spec[n_codecs++] = t;
    if (!n_codecs)
        return 0;
    if (trials > 64)
        trials = 64;
    if (csv)
        fprintf(csv, "floats,codec,bytes_per_float,enc_gbs,enc_ref_gbs,dec_gbs,apply_gbs,"
                     "tls_eff_gbs,fp32_tls_gbs,ratio_vs_fp32_tls,overlap_gbs,overlap_ratio,"
                     "payload_tls_gbs,ratio_min,ratio_max,overlap_ratio_min,overlap_ratio_max,"
                     "pairs,load_before,load_after,node_seq_gbs,node_stream_gbs,node_seq_ratio,"
                     "node_seq_ratio_min,node_seq_ratio_max,node_stream_ratio,"
                     "node_stream_ratio_min,node_stream_ratio_max,node_pairs\n");
    char load0[64];
    load_avg(load0, sizeof load0);
    printf("\ncodecs on model-like vectors, %d trials; load %s. Per-core speed in GB/s of float32\n"
           "input, best of the trials: enc Q(x); enc+ref Q(x - ref) with ref updated (CHOCO send);\n"
           "dec into a vector; apply into a copy (CHOCO receive). Parameters moved over TLS, in\n"
           "float32-equivalent GB/s, best of the trials: eff = 4n / (CHOCO encode + the payload\n"
           "over TLS + apply), fp32 TLS (today's exchange); overlap = 4n over the slowest of the\n"
           "three (each on its own core, a payload streamed in chunks). ratio, overlap: eff / fp32\n"
           "and overlap / fp32 pair by pair (each codec's exchange right after an fp32 one, in\n"
           "every trial), median (min-max) over the trials\n"
           "%-9s %-11s %7s %6s %7s %6s %6s %8s %8s %8s %17s %17s\n", trials, load0, "floats",
           "codec", "B/float", "enc", "enc+ref", "dec", "apply", "TLS eff", "overlap", "fp32 TLS",
           "ratio", "overlap");
    for (int si = 0; si < n_sizes; si++) {
        uint64_t n = sizes[si], chunk = chunk_set > 0 ? chunk_set : mm_choco_chunk(n);
        size_t size = n * 4, reps = per_case / size < 4 ? 4 : per_case / size;
        float *xa = malloc(size), *xb = malloc(size), *ref = malloc(size), *copy = malloc(size);
        uint8_t *buf = malloc(size + 64);
        if (!xa || !xb || !ref || !copy || !buf) {
            fprintf(stderr, "bench: out of memory for %llu floats\n", (unsigned long long)n);
            return failures + 1;
        }
        mv_fill(xa, n, 1, 0);
        mv_fill(xb, n, 2, 1); /* xb = xa + a model-like difference */
        for (uint64_t i = 0; i < n; i++)
            xb[i] += xa[i];
        speeds sp[32];
        double xfer[32] = {0}, fp32 = 0;
        double ratio[32][64], ovl[32][64];
        int pairs[32] = {0};
        /* measured end to end as the node runs it: sequential, streamed */
        double node_seq[32] = {0}, node_str[32] = {0}, r_seq[32][64], r_str[32][64];
        int node_pairs[32] = {0};
        double cores_seq[32] = {0}, cores_str[32] = {0}; /* CPU / wall of the best of each */
        for (int c = 0; c < n_codecs; c++)
            sp[c] = (speeds){1e9, 1e9, 1e9, 1e9, 0};
        for (int t = 0; t < trials; t++) {
            if (pipe_only && !strcmp(pipe_only, "fp32")) {
                int bad = 0;
                double cpu = 0, f = bench_transport_run(certdir, false, size, reps, &bad, &cpu);
                failures += bad;
                printf("%-9llu fp32 over TLS alone: %.2f GB/s, cores busy %.2f, %.2f ns of CPU "
                       "per float\n", (unsigned long long)n, f / 1e9, cpu * f / 1e9,
                       4 * cpu);
                continue;
            }
            for (int c = 0; c < n_codecs && pipe_only; c++) {
                double cores = 0;
                bool seq = !strcmp(pipe_only, "seq");
                double r = pipe_trial(certdir, spec[c], xa, xb, n, seq ? n : chunk, reps,
                                      &failures, &cores);
                printf("%-9llu %-11s %s exchange alone: %.2f GB/s fp32-equivalent, cores busy "
                       "%.2f, %.2f ns of CPU per float\n", (unsigned long long)n, spec[c],
                       seq ? "sequential" : "streamed", r / 1e9, cores,
                       r > 0 ? cores * 4e9 / r : 0.0);
            }
            for (int c = 0; c < n_codecs && !pipe_only; c++) {
                int bad = 0;
                double cpu, seq, over;
                double f = bench_transport_run(certdir, false, size, reps, &bad, &cpu);
                failures += bad;
                fp32 = fmax(fp32, f);
                speeds cur = {0, 0, 0, 0, 0};
                speed_trial(spec[c], xa, xb, n, ref, copy, buf, &cur, &failures);
                if (cur.bytes_per_float <= 0)
                    continue;
                fold_best(&sp[c], &cur);
                double x = payload_trial(certdir, cur.bytes_per_float * (double)n, reps, &failures);
                xfer[c] = fmax(xfer[c], x);
                exchange_rates(&cur, n, x, &seq, &over);
                if (f > 0 && x > 0) {
                    ratio[c][pairs[c]] = seq / f;
                    ovl[c][pairs[c]++] = over / f;
                }
                if (!streamed(spec[c], stream_codecs))
                    continue;
                double csq = 0, cst = 0;
                double sq = pipe_trial(certdir, spec[c], xa, xb, n, n, reps, &failures, &csq);
                double st = pipe_trial(certdir, spec[c], xa, xb, n, chunk, reps, &failures, &cst);
                if (sq > node_seq[c])
                    cores_seq[c] = csq;
                if (st > node_str[c])
                    cores_str[c] = cst;
                node_seq[c] = fmax(node_seq[c], sq);
                node_str[c] = fmax(node_str[c], st);
                if (f > 0 && sq > 0 && st > 0) {
                    r_seq[c][node_pairs[c]] = sq / f;
                    r_str[c][node_pairs[c]++] = st / f;
                }
            }
        }
        if (pipe_only) {
            free(xa), free(xb), free(ref), free(copy), free(buf);
            continue;
        }
        char load1[64];
        load_avg(load1, sizeof load1);
        double nsq[32], nsqlo[32], nsqhi[32], nst[32], nstlo[32], nsthi[32];
        for (int c = 0; c < n_codecs; c++) {
            nsq[c] = median_range(r_seq[c], node_pairs[c], &nsqlo[c], &nsqhi[c]);
            nst[c] = median_range(r_str[c], node_pairs[c], &nstlo[c], &nsthi[c]);
        }
        for (int c = 0; c < n_codecs; c++) {
            double gb = 4.0 * (double)n / 1e9, eff, overlap, rlo, rhi, olo, ohi;
            exchange_rates(&sp[c], n, xfer[c], &eff, &overlap);
            double r = median_range(ratio[c], pairs[c], &rlo, &rhi);
            double o = median_range(ovl[c], pairs[c], &olo, &ohi);
            char rs[32], os[32];
            snprintf(rs, sizeof rs, "%.2fx (%.2f-%.2f)", r, rlo, rhi);
            snprintf(os, sizeof os, "%.2fx (%.2f-%.2f)", o, olo, ohi);
            printf("%-9llu %-11s %7.4f %6.2f %7.2f %6.2f %6.2f %8.2f %8.2f %8.2f %17s %17s\n",
                   (unsigned long long)n, spec[c], sp[c].bytes_per_float, gb / sp[c].enc,
                   gb / sp[c].enc_ref, gb / sp[c].dec, gb / sp[c].apply, eff / 1e9,
                   overlap / 1e9, fp32 / 1e9, rs, os);
            if (csv)
                fprintf(csv, "%llu,%s,%.5f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,"
                             "%.4f,%.4f,%.4f,%.4f,%d,%s,%s,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,"
                             "%.4f,%d\n",
                        (unsigned long long)n, spec[c], sp[c].bytes_per_float, gb / sp[c].enc,
                        gb / sp[c].enc_ref, gb / sp[c].dec, gb / sp[c].apply, eff / 1e9,
                        fp32 / 1e9, r, overlap / 1e9, o, xfer[c] / 1e9, rlo, rhi, olo, ohi,
                        pairs[c], load0, load1, node_seq[c] / 1e9, node_str[c] / 1e9, nsq[c],
                        nsqlo[c], nsqhi[c], nst[c], nstlo[c], nsthi[c], node_pairs[c]);
        }
        for (int c = 0; c < n_codecs; c++)
            if (node_pairs[c])
                printf("%-9llu %-11s measured end to end over TLS, as the node runs it (best, "
                       "GB/s fp32-equivalent): sequential %.2f, streamed in chunks of %llu "
                       "floats %.2f; against fp32 over TLS, pair by pair: sequential %.2fx "
                       "(%.2f-%.2f), streamed %.2fx (%.2f-%.2f), %d pairs; cores busy in the "
                       "best: sequential %.2f, streamed %.2f\n",
                       (unsigned long long)n, spec[c], node_seq[c] / 1e9,
                       (unsigned long long)chunk, node_str[c] / 1e9, nsq[c], nsqlo[c], nsqhi[c], nst[c],
                       nstlo[c], nsthi[c], node_pairs[c], cores_seq[c], cores_str[c]);
        printf("%-9llu load %s after these rows\n", (unsigned long long)n, load1);
        double mix[2];
        mix_speed(n, xa, xb, ref, mix);
        printf("%-9llu consensus step of a ring peer (x and 3 vectors): mm_mix_round %.2f GB/s, "
               "mm_choco_mix (one pass) %.2f GB/s\n", (unsigned long long)n, mix[0] / 1e9,
               mix[1] / 1e9);
        fflush(stdout);
        free(xa), free(xb), free(ref), free(copy), free(buf);
        snprintf(load0, sizeof load0, "%s", load1);
    }
    printf("targets: int8 over TLS >= 2.5x fp32 over TLS; every codec >= 2 GB/s per core\n");
    return failures;
}
