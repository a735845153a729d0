/* node/algo_choco.h: CHOCO-SGD in the peer's round, and the rules that
 * keep every public copy equal to its owner's (or out of the mix until a
 * RESET makes it so). The arithmetic is gossip/choco.c's. */
#include "node/algo_choco.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "gossip/choco.h"
#include "gossip/codec.h"
#include "net/wire.h"
#include "node/algo.h"
#include "node/trainer.h"

#define ALIGN8(x) (((x) + 7) & ~(size_t)7)

_Static_assert(MM_CHOCO_CHUNK % MM_CODEC_BLOCK_MAX == 0, "a chunk is whole blocks");

/* What CHOCO keeps of one peer. */
typedef struct {
    /* as an out-neighbour: what it holds of x_hat_i */
    bool synced;            /* it was sent x_hat_i as of encode sent_seq ... */
    uint64_t sent_seq, sent_exchange, sent_lost; /* ... in that exchange, with
                                                  * that many losses before */
    bool sent_reset;        /* ... as a RESET */
    uint64_t chain;         /* the connection (ups) on which it holds x_hat_i as of
                             * the frame before that one; 0: none */

    /* as an in-neighbour: our copy of its x_hat */
    float *copy;            /* allocated at its first RESET */
    bool valid;
    uint64_t copy_ups;      /* the connection (mailbox ups) the copy belongs to */
    uint64_t rx_next;       /* a streamed q: floats of it applied so far (0: none open) */
    bool rx_skip;           /* ... the rest of it is not applied (ignored or diverged) */
} choco_peer;

struct mm__choco {
    uint32_t id, n;
    size_t P;
    mm_codec_spec spec;
    char spec_text[48];
    mm_codec *codec;
    double gamma;
    uint64_t seed;
    size_t q_cap, reset_off, buf_bytes;
    uint64_t chunk;         /* floats per chunk of a streamed q (mm_choco_chunk) */
    int chunks;             /* a q streamed in this many chunks; 0: whole */
    int in_peers;
    uint64_t bytes;

    float *self;            /* x_hat_i */
    uint64_t seq;           /* encodes so far (x_hat_i moved seq times) */

    choco_peer *peer;       /* [n] */

    mm__choco_stats st;
};

/* In-neighbours over the topology's schedule: one copy each. */
static int count_in_peers(const mm_topology *topo, uint32_t id, uint32_t n)
{
    bool *senders = calloc(n, sizeof *senders);
    int count = senders ? mm_topo_senders(topo, id, senders) : -1;
    free(senders);
    return count >= 0 ? count : (int)n - 1; /* random schedules: anyone, eventually */
}

int mm__choco_check(const mm_node_config *c, mm_codec_spec *spec, double *gamma, char *err,
                    size_t errlen)
{
    char why[256];
    if (mm_codec_parse(c->compress, spec, why, sizeof why) != 0) {
        snprintf(err, errlen, "--compress %s: %s", c->compress, why);
        return MM_EXIT_USAGE;
    }
    if (c->algo != MM_ALGO_DPSGD) {
        snprintf(err, errlen, "--compress runs CHOCO-SGD, defined for --algo dpsgd only "
                              "(not %s)", mm_algo_name(c->algo));
        return MM_EXIT_USAGE;
    }
    *gamma = c->consensus_step > 0 ? c->consensus_step : mm_choco_default_gamma(spec);
    if (!(*gamma > 0 && *gamma <= 1)) {
        snprintf(err, errlen, "--consensus-step %g is outside (0, 1]", *gamma);
        return MM_EXIT_USAGE;
    }
    return 0;
}

/* What the state of --compress on P parameters takes at peer id (spec,
 * gamma: mm__choco_check's): the codec (made here), the chunks of a
 * streamed q, the buffers and every byte of it, refused over
 * --choco-memory-mb. The start and mm__choco_budget (the check before it,
 * and --dry-run's) both size it here. 0, or the exit status with why. */
static int choco_size(mm__choco *ch, const mm_node_config *c, const mm_codec_spec *spec,
                      double gamma, const mm_topology *topo, uint32_t id, size_t P, char *err,
                      size_t errlen)
{
    char why[256];
    ch->id = id;
    ch->n = (uint32_t)mm_topo_n(topo);
    ch->P = P;
    ch->spec = *spec;
    mm_codec_format(spec, ch->spec_text, sizeof ch->spec_text);
    ch->gamma = gamma;
    ch->seed = c->train.seed;
    ch->codec = mm_codec_new(spec, P, why, sizeof why);
    if (!ch->codec) {
        snprintf(err, errlen, "--compress %s: %s", c->compress, why);
        return MM_EXIT_USAGE;
    }
    /* A dense codec streams a vector longer than a chunk: chunk k's body
     * at the sum of the earlier ones, each 8-aligned. */
    ch->q_cap = mm_codec_max_bytes(ch->codec);
    ch->chunk = mm_choco_chunk(P);
    if (mm_codec_splits(spec) && P > MM_CHOCO_CHUNK) {
        ch->chunks = (int)((P + ch->chunk - 1) / ch->chunk);
        ch->q_cap = (size_t)(ch->chunks - 1) * ALIGN8(mm_codec_part_len(spec, ch->chunk)) +
                    ALIGN8(mm_codec_part_len(spec, P - (uint64_t)(ch->chunks - 1) * ch->chunk));
    }
    ch->reset_off = ALIGN8(ch->q_cap);
    ch->buf_bytes = ch->reset_off + 4 * P;
    ch->in_peers = count_in_peers(topo, id, ch->n);
    /* One copy per in-neighbour and our own, the part of the mailbox's
     * three buffers beyond the plain vector, the codec's workspace, and
     * with a streamed q the inbox's staging copies. */
    ch->bytes = (uint64_t)(1 + ch->in_peers) * 4 * P + 3 * (uint64_t)ch->reset_off +
                mm_codec_workspace_bytes(ch->codec);
    if (ch->chunks) /* the chunks each in-neighbour's inbox may hold as copies */
        ch->bytes += (uint64_t)ch->in_peers * MM__MBOX_STAGE * mm_codec_part_len(spec, ch->chunk);
    uint64_t budget = (uint64_t)c->choco_memory_mb << 20;
    if (ch->bytes > budget) {
        snprintf(err, errlen, "--compress %s needs %.1f MiB for its public copies (%d "
                 "in-neighbours + its own, %zu parameters each) and buffers, over "
                 "--choco-memory-mb %ld: raise it, or use a topology with fewer in-neighbours",
                 ch->spec_text, (double)ch->bytes / 1048576, ch->in_peers, P,
                 (long)c->choco_memory_mb);
        return MM_EXIT_USAGE;
    }
    return 0;
}

/* mm__choco_check, then a state sized by choco_size (no copies yet) into
 * *out. 0, or the exit status with why (nothing left allocated). */
static int choco_sized(const mm_node_config *c, const mm_topology *topo, uint32_t id, size_t P,
                       mm__choco **out, char *err, size_t errlen)
{
    mm_codec_spec spec;
    double gamma;
    *out = NULL;
    int status = mm__choco_check(c, &spec, &gamma, err, errlen);
    if (status != 0)
        return status;
    mm__choco *ch = calloc(1, sizeof *ch);
    if (!ch) {
        snprintf(err, errlen, "out of memory");
        return MM_EXIT_ERROR;
    }
    if ((status = choco_size(ch, c, &spec, gamma, topo, id, P, err, errlen)) != 0) {
        mm__choco_free(ch);
        return status;
    }
    *out = ch;
    return 0;
}

int mm__choco_budget(const mm_node_config *c, const mm_topology *topo, uint32_t id, size_t P,
                     char *err, size_t errlen)
{
    mm__choco *ch;
    int status = choco_sized(c, topo, id, P, &ch, err, errlen);
    mm__choco_free(ch);
    return status;
}

int mm__choco_new(const mm_node_config *c, const mm_topology *topo, uint32_t id,
                  const float *x, size_t P, mm__choco **out, char *err, size_t errlen)
{
    mm__choco *ch;
    *out = NULL;
    int status = choco_sized(c, topo, id, P, &ch, err, errlen);
    if (status != 0)
        return status;
    ch->self = malloc(4 * P);
    ch->peer = calloc(ch->n, sizeof *ch->peer);
    if (!ch->self || !ch->peer) {
        snprintf(err, errlen, "out of memory for the public copies");
        mm__choco_free(ch);
        return MM_EXIT_ERROR;
    }
    /* x_hat_i starts at x, not 0: a peer that resumes mid-run must not
     * pull its neighbours towards 0 (its first RESET carries x_hat_i). */
    memcpy(ch->self, x, 4 * P);
    *out = ch;
    return 0;
}

void mm__choco_free(mm__choco *ch)
{
    if (!ch)
        return;
    mm_codec_free(ch->codec);
    free(ch->self);
    for (uint32_t p = 0; ch->peer && p < ch->n; p++)
        free(ch->peer[p].copy);
    free(ch->peer);
    free(ch);
}

size_t mm__choco_buf_bytes(const mm__choco *ch) { return ch->buf_bytes; }
int mm__choco_chunks(const mm__choco *ch, size_t *chunk_bytes)
{
    *chunk_bytes = ch->chunks ? (size_t)mm_codec_part_len(&ch->spec, ch->chunk) : 0;
    return ch->chunks;
}
double mm__choco_gamma(const mm__choco *ch) { return ch->gamma; }
const char *mm__choco_spec(const mm__choco *ch) { return ch->spec_text; }
uint64_t mm__choco_bytes(const mm__choco *ch) { return ch->bytes; }
int mm__choco_in_peers(const mm__choco *ch) { return ch->in_peers; }

void mm__choco_wire(const mm__choco *ch, uint8_t *codec, uint32_t *block, double *frac,
                    uint64_t *max_body)
{
    *codec = (uint8_t)ch->spec.kind;
    *block = ch->spec.block;
    *frac = ch->spec.frac;
    uint64_t q = mm_codec_max_len(&ch->spec, ch->P);
    *max_body = q > 4 * (uint64_t)ch->P ? q : 4 * (uint64_t)ch->P; /* a RESET is fp32 */
}

/* Whether out-neighbour p holds x_hat_i as it is now, before this
 * exchange's encode (called before it): the previous encode's frame reached the connection that is up
 * now, nothing sent to p was lost since, and that frame was a RESET or
 * extended a copy p held on that same connection. "Reached" is where the
 * mailbox wrote it, not where it was queued: a frame queued while p was
 * connecting is the first on the new connection (the old rule, the
 * connection at queueing time, sent every link two RESETs at start). A
 * frame still pending (p not up, or the loop not there yet) would be
 * replaced by this one, and lost. Updates p's chain to the connection on
 * which p holds the copy as of that frame. */
static bool holds_copy(mm__choco *ch, uint32_t p, const mm__peer_view *pv)
{
    choco_peer *q = &ch->peer[p];
    uint64_t on = 0;
    if (q->synced && pv->written_exchange == q->sent_exchange && q->sent_lost == pv->lost)
        on = q->sent_reset || q->chain == pv->written_ups ? pv->written_ups : 0;
    q->chain = on;
    return on != 0 && on == pv->ups && q->sent_seq == ch->seq && !pv->send_pending;
}

/* q in the chunks of the stream, each readied in the mailbox as soon as
 * it is written, so that the loop seals and sends chunk k while chunk k+1
 * is encoded; with reset, x_hat_i's part of each chunk also goes to the
 * RESET body. */
static mm_codec_err encode_stream(mm__choco *ch, mm__mbox *mb, int b, const float *x,
                                  bool reset, char *why, size_t whylen)
{
    uint8_t *buf = mm__mbox_buf(mb, b);
    size_t at = 0;
    for (int k = 0; k < ch->chunks; k++) {
        mm__chunk c = {.offset = (uint64_t)k * ch->chunk, .off = at};
        c.count = ch->P - c.offset < ch->chunk ? ch->P - c.offset : ch->chunk;
        mm_codec_err ce = mm_choco_encode_part(ch->codec, x, ch->self, c.offset, c.count,
                                               buf + at, ch->q_cap - at, &c.len, &c.crc, why,
                                               whylen);
        if (ce != MM_CODEC_OK)
            return ce;
        if (reset)
            memcpy(buf + ch->reset_off + 4 * c.offset, ch->self + c.offset, 4 * c.count);
        mm__mbox_chunk_ready(mb, b, &c);
        at += ALIGN8(c.len);
    }
    return MM_CODEC_OK;
}

int mm__choco_send(mm__choco *ch, mm__mbox *mb, int b, uint64_t e, const float *x,
                   const mm_round_view *v, char *err, size_t errlen)
{
    uint8_t *buf = mm__mbox_buf(mb, b);
    size_t len = 0;
    uint32_t crc = 0;
    char why[200];
    /* Who holds x_hat_i as it is before this exchange's encode, decided
     * first: a holder's q goes out chunk by chunk while it is encoded. */
    bool holds[v->n_out > 0 ? v->n_out : 1], any_reset = false;
    for (int k = 0; k < v->n_out; k++) {
        mm__peer_view pv;
        mm__mbox_peer(mb, v->out[k].peer, &pv);
        holds[k] = holds_copy(ch, v->out[k].peer, &pv);
        any_reset |= !holds[k];
    }
    mm_wire_vec meta = {.weight = 1.0, .codec = (uint8_t)ch->spec.kind, .count = ch->P};
    mm_codec_err ce;
    if (ch->chunks) {
        mm__mbox_publish_stream(mb, b, e, ch->chunks);
        for (int k = 0; k < v->n_out; k++)
            if (holds[k])
                mm__mbox_send_stream(mb, v->out[k].peer, e, b, &meta);
        ce = encode_stream(ch, mb, b, x, any_reset, why, sizeof why);
        if (ce == MM_CODEC_OK && any_reset)
            crc = mm_choco_crc(ch->self, ch->P);
    } else {
        uint64_t key = mm_codec_key(ch->seed, ch->id, ch->seq);
        ce = mm_choco_encode(ch->codec, x, ch->self, key, buf, ch->q_cap, &len, &crc, why,
                             sizeof why);
        if (ce == MM_CODEC_OK) {
            if (any_reset)
                memcpy(buf + ch->reset_off, ch->self, 4 * ch->P);
            mm__mbox_publish(mb, b, e);
            meta.copy_crc = crc;
            for (int k = 0; k < v->n_out; k++)
                if (holds[k])
                    mm__mbox_send(mb, v->out[k].peer, e, b, &meta, len);
        }
    }
    if (ce != MM_CODEC_OK) {
        snprintf(err, errlen, "exchange %" PRIu64 ": encoding the parameters failed: %s", e,
                 why);
        return -1;
    }
    ch->seq++;
    mm_wire_vec reset = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .flags = MM_VEC_RESET,
                         .copy_crc = crc, .count = ch->P};
    for (int k = 0; k < v->n_out; k++) {
        uint32_t p = v->out[k].peer;
        if (!holds[k]) {
            mm__mbox_send_at(mb, p, e, b, ch->reset_off, &reset, 4 * ch->P);
            ch->st.resets_sent++;
            mm_debug("exchange %" PRIu64 ": RESET to peer %u", e, p);
        }
        choco_peer *q = &ch->peer[p];
        q->synced = true;
        q->sent_seq = ch->seq;
        q->sent_exchange = e;
        q->sent_reset = !holds[k];
        /* (a send dropped from now on shows as a new loss) */
        mm__peer_view pv;
        mm__mbox_peer(mb, p, &pv);
        q->sent_lost = pv.lost;
    }
    return 0;
}

/* A RESET from peer p: the copy is its body if the copy_crc agrees. */
static mm__take take_reset(mm__choco *ch, uint32_t p, const mm__peer_view *pv)
{
    choco_peer *q = &ch->peer[p];
    q->rx_next = 0;
    q->rx_skip = false;
    if (pv->meta.codec != MM_WIRE_CODEC_FP32 || pv->body_len != 4 * ch->P) {
        /* (the wire refuses these: never read past the body received) */
        mm_error("peer %u's RESET is %zu bytes of codec %u, not %zu of fp32: ignored", p,
                 pv->body_len, pv->meta.codec, 4 * ch->P);
        q->valid = false;
        return MM__TAKE_NO;
    }
    if (!q->copy && !(q->copy = malloc(4 * ch->P))) {
        mm_error("out of memory for peer %u's public copy", p);
        return MM__TAKE_NO;
    }
    memcpy(q->copy, pv->body, 4 * ch->P); /* (the wire checked: fp32, finite) */
    uint32_t crc = mm_choco_crc(q->copy, ch->P);
    ch->st.resets_recv++;
    q->copy_ups = pv->vector_ups;
    q->valid = crc == pv->meta.copy_crc;
    if (!q->valid) {
        ch->st.diverged++;
        mm_warn("peer %u's RESET has copy CRC %08x, its header says %08x: not mixed", p, crc,
                pv->meta.copy_crc);
    }
    return q->valid ? MM__TAKE_READY : MM__TAKE_NO;
}

mm__take mm__choco_take(mm__choco *ch, uint32_t p, const mm__peer_view *pv)
{
    char why[200];
    uint32_t crc = 0;
    choco_peer *q = &ch->peer[p];
    const mm_wire_vec *m = &pv->meta;
    if (m->offset != q->rx_next) {
        /* (the wire keeps a connection's chunks in order, so this is a
         * stream cut short by its connection's end: half applied) */
        q->valid = false;
        q->rx_skip = m->offset != 0;
    }
    if (m->flags & MM_VEC_RESET)
        return take_reset(ch, p, pv);
    if (m->offset == 0)
        q->rx_skip = false;
    uint64_t end = m->offset + m->count;
    q->rx_next = end == ch->P ? 0 : end;
    if (q->rx_skip)
        return MM__TAKE_NO; /* the rest of a q already ignored or diverged */
    if (!q->valid || q->copy_ups != pv->vector_ups) {
        /* a q for a copy we do not hold (start, a new connection, a
         * divergence): the sender will RESET it, as it does after any
         * change of connection */
        q->valid = false;
        q->rx_skip = q->rx_next != 0;
        ch->st.ignored++;
        return MM__TAKE_NO;
    }
    mm_codec_err ce = mm_choco_receive_part(ch->codec, m->offset, m->count, pv->body,
                                            pv->body_len, q->copy, &crc, why, sizeof why);
    if (ce != MM_CODEC_OK || crc != m->copy_crc) {
        q->valid = false;
        q->rx_skip = q->rx_next != 0;
        ch->st.diverged++;
        if (ce != MM_CODEC_OK)
            mm_warn("peer %u's payload could not be applied (%s): its copy is out of the mix "
                    "until its next RESET", p, why);
        else
            mm_warn("peer %u's public copy diverged (CRC %08x of floats %" PRIu64 "..+%" PRIu64
                    ", its header says %08x): out of the mix until its next RESET", p, crc,
                    m->offset, m->count, m->copy_crc);
        return MM__TAKE_NO;
    }
    return q->rx_next ? MM__TAKE_PART : MM__TAKE_READY;
}

const float *mm__choco_copy(const mm__choco *ch, uint32_t p)
{
    return ch->peer[p].valid && !ch->peer[p].rx_next ? ch->peer[p].copy : NULL;
}

void mm__choco_mix(mm__choco *ch, float *x, double self_weight, mm_mix_input *in, int n_in,
                   mm_clip *clip)
{
    mm_choco_mix_clip(x, ch->self, ch->P, self_weight, in, n_in, ch->gamma, clip);
}

void mm__choco_get_stats(const mm__choco *ch, mm__choco_stats *out) { *out = ch->st; }

/* ---- the algorithm table's entry (node/algo.h) ----------------------------- */

static int start(mm__trainer *tr, char *err, size_t errlen)
{
    mm__choco *ch;
    int status = mm__choco_new(tr->cfg, tr->topo, tr->id, tr->x, tr->P, &ch, err, errlen);
    tr->algo_state = ch;
    return status;
}

static void end(mm__trainer *tr) { mm__choco_free(tr->algo_state); }

static size_t buf_bytes(const mm__trainer *tr) { return mm__choco_buf_bytes(tr->algo_state); }

static int chunks(const mm__trainer *tr, size_t *chunk_bytes)
{
    return mm__choco_chunks(tr->algo_state, chunk_bytes);
}

static void codec(const mm__trainer *tr, uint8_t *kind, uint32_t *block, double *frac,
                  uint64_t *max_body)
{
    mm__choco_wire(tr->algo_state, kind, block, frac, max_body);
}

/* CHOCO's q (or a RESET); --compress is refused with --consensus-target,
 * so more is always false. */
static int send_q(mm__trainer *tr, int b, uint64_t e, bool more)
{
    char err[300];
    if (mm__choco_send(tr->algo_state, tr->mb, b, e, tr->x, &tr->v, err, sizeof err) == 0)
        return 0;
    mm_error("%s", err);
    return -1;
}

/* in[k]'s q of this exchange: applied to its copy; mixed only when the
 * copy is valid. */
static void take(mm__trainer *tr, int k, const mm__peer_view *pv)
{
    uint32_t p = tr->v.in[k].peer;
    mm__nbr *nb = &tr->nbr[k];
    mm__take t = mm__choco_take(tr->algo_state, p, pv);
    if (t == MM__TAKE_READY) {
        nb->status = IN_READY; /* (its last frame is given back after the mix) */
        nb->vec = mm__choco_copy(tr->algo_state, p);
        nb->weight = 1.0;
    } else {
        nb->status = t == MM__TAKE_PART ? IN_WAITING : IN_MISSING; /* part: the rest comes */
        mm__mbox_release(tr->mb, p);
    }
}

/* An older q: a copy must see every q, in order, mixed or not. */
static void drop(mm__trainer *tr, uint32_t peer, const mm__peer_view *pv)
{
    mm__choco_take(tr->algo_state, peer, pv);
}

static void gather(mm__trainer *tr, uint64_t e) { mm__round_wait(tr, e, take, drop); }

static void mix(mm__trainer *tr, const float *s)
{
    mm__gossip_inputs(tr);
    mm__choco_mix(tr->algo_state, tr->x, tr->v.self_weight, tr->mix_in, tr->v.n_in, &tr->clip);
    for (int k = 0; k < tr->v.n_in; k++)
        tr->nbr[k].dist = tr->mix_in[k].dist;
}

static void fields(mm__trainer *tr, mm_metrics *m, mm__line where)
{
    const mm__choco *ch = tr->algo_state;
    if (where == MM__LINE_START) {
        mm_metrics_str(m, "compress", mm__choco_spec(ch));
        mm_metrics_num(m, "consensus_step", mm__choco_gamma(ch));
        mm_metrics_int(m, "choco_bytes", (long long)mm__choco_bytes(ch));
        mm_metrics_int(m, "choco_in_peers", mm__choco_in_peers(ch));
    } else if (where == MM__LINE_END) {
        mm__choco_stats cs;
        mm__choco_get_stats(ch, &cs);
        mm_metrics_int(m, "resets_sent", (long long)cs.resets_sent);
        mm_metrics_int(m, "resets_recv", (long long)cs.resets_recv);
        mm_metrics_int(m, "copies_ignored", (long long)cs.ignored);
        mm_metrics_int(m, "copies_diverged", (long long)cs.diverged);
    }
}

const mm__algo mm__algo_choco = {
    .id = MM_ALGO_DPSGD, /* CHOCO runs over D-PSGD's HELLO: the codec tells them apart */
    .start = start,
    .end = end,
    .buf_bytes = buf_bytes,
    .chunks = chunks,
    .codec = codec,
    .fast_forward = true,
    .send = send_q,
    .gather = gather,
    .mix = mix,
    .release = mm__gossip_release,
    .fields = fields,
};
