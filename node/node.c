/* The process side of a peer: set-up, the loop thread (the transport's
 * callbacks, the mailbox's commands, signals, an orderly shutdown) and the
 * training thread's start. Nothing here touches the parameter vector
 * except to hand snapshot buffers to the transport. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/clock.h"
#include "base/log.h"
#include "node/allgather.h"
#include "node/allreduce.h"
#include "net/hosts.h"
#include "node/algo_outer.h"
#include "net/ports.h"
#include "model/blas_env.h"
#include "net/tls.h"
#include "net/wire.h"
#include "gossip/codec.h"
#include "gossip/consensus.h"
#include "gossip/mix.h"
#include "node/algo_choco.h"
#include "node/exporter.h"
#include "node/http.h"
#include "node/node_int.h"
#include "node/elastic.h"
#include "node/pace.h"
#include "node/peers.h"
#include "node/poison.h"

void mm_node_config_defaults(mm_node_config *c)
{
    memset(c, 0, sizeof *c);
    c->id = -1;
    c->base_port = 29500;
    c->run_dir = "runs/default";
    mm_replica_config_default(&c->train);
    c->train.threads = 1; /* many peers share a machine */
    c->algo = MM_ALGO_DPSGD;
    c->allreduce_schedule = -1; /* MM_AR_AUTO */
    c->rounds = 200;
    c->local_steps = 1;
    c->gossip_steps = 1;
    c->max_gossip_steps = 8;
    c->min_gossip_steps = 1;
    c->same_init = true;
    c->round_timeout_ms = 5000;
    c->peer_timeout_ms = 10000;
    c->start_timeout_ms = 30000;
    c->staleness = 8;
    c->deadline_cap = 0.5;
    c->deadline_quantile = 0.9;
    c->choco_memory_mb = MM__CHOCO_MEMORY_MB;
    /* momentum 0.5, not DiLoCo's 0.9, which collapsed training on murmur's
     * own settings (docs/outer.md, "Defaults") */
    c->outer_cfg = (mm_outer_config){.lr = 0.7f, .momentum = 0.5f};
    c->outer_memory_mb = 2048;
    c->outer_ef_decay = 1.0f;
    c->outer_fragments = 1;
    c->eval_every = 20;
    c->eval_windows = 64;
    c->checkpoint_every = 50;
    c->sketch_dim = 1024;
    c->sketch_seed = 0x6d75726d7572ULL; /* "murmur" */
    c->log_every = 10;
    c->round_lines = 50;
    c->max_peers = MM_MAX_PEERS_DEFAULT;
    c->view_delay = MM_VIEW_DELAY_DEFAULT;
    c->suspect_ms = 2000;
}

/* The loop thread's state. */
typedef struct {
    const mm_node_config *cfg;
    uint32_t id, n;
    uv_loop_t loop;
    uv_async_t wake;
    uv_signal_t sigint, sigterm;
    mm_transport *transport;
    mm_allreduce *ar;               /* --algo allreduce: the all-reduce, on this thread */
    mm_allreduce **frag_ar;         /* ... with --outer-fragments F: one per fragment
                                     * (frag_ar[0] is ar), fragment f in rounds f mod F */
    uint32_t n_frag_ar;
    mm_allgather *ag;               /* ... or with --outer --compress, the all-gather */
    mm_allreduce *ar_running;       /* the one started last (an abort goes to it) */
    mm_ar_schedule ar_sched;        /* its schedule, auto resolved (mm_node_run): every
                                     * peer resolves it alike (the same n, addresses and
                                     * vector length); the HELLO checks the result */
    mm__mbox *mb;
    mm__trainer *trainer;
    mm_codec *body_codec;           /* --compress: checks bodies on this thread */
    mm_weight_check weight;         /* what a vector's weight may be: its --algo's rule */
    char settings[MM_WIRE_SETTINGS_MAX + 1]; /* the HELLO's (mm_node_settings) */
    mm_poison *poison;             /* --test-poison (test-only): the tamper hook's */
    mm__exporter *exporter;         /* --metrics-addr, or NULL */
    mm__elastic *el;                /* an elastic run's membership table, or NULL */
    bool elastic;                   /* a family topology (docs/membership.md) */
    uint32_t n_start;               /* ... its starting members; n is then --max-peers */
    int signals;
    uint32_t *want;                 /* [n]: the want list, copied out of the mailbox */
    mm_link_stats *links;           /* [n]: the transport's counters per peer, for the mailbox */
    struct out_stream *streams;     /* [n]: a streamed send to each peer under way */
    mm__cmd cmds[MM__MBOX_QUEUE];
} node;

/* A streamed send (mm__mbox_send_stream) the mailbox let go: its chunks go
 * to the transport as the training thread readies them, each its own
 * frame, all on the connection that was up when it was claimed. One send
 * for the mailbox: sent when every chunk was written, lost otherwise. */
typedef struct out_stream {
    bool on;
    mm__cmd cmd;
    int next;                       /* chunks handed to the transport */
    int inflight;                   /* ... not yet reported sent */
    bool failed;
    bool pumping;                   /* in stream_pump */
    uint64_t ups;                   /* the connection it is bound to */
} out_stream;

/* ---- the mailbox's commands (loop thread) --------------------------------- */

static void try_send(node *nd, const mm__cmd *c);

/* The chunks of peer's stream that are ready go out; once all are out
 * (or one failed) and reported, the mailbox hears of the send. */
static void stream_pump(node *nd, uint32_t peer)
{
    out_stream *s = &nd->streams[peer];
    const mm__cmd *c = &s->cmd;
    mm__chunk ch;
    if (s->pumping)
        return; /* (a chunk's on_sent inside send_vec: TLS seals at once) */
    s->pumping = true;
    while (!s->failed && s->next < c->chunks && mm__mbox_chunk(nd->mb, c->buf, s->next, &ch)) {
        mm_wire_vec meta = c->meta;
        meta.offset = ch.offset;
        meta.count = ch.count;
        meta.copy_crc = ch.crc;
        const uint8_t *body = (const uint8_t *)mm__mbox_buf(nd->mb, c->buf) + ch.off;
        s->next++;
        s->inflight++;
        /* never onto a newer connection: its receiver holds no stream */
        if (mm__mbox_ups(nd->mb, peer) != s->ups ||
            mm_transport_send_vec(nd->transport, peer, c->exchange, &meta, body, ch.len) != 0) {
            s->inflight--; /* (not sent: no on_sent comes) */
            s->failed = true;
        }
    }
    s->pumping = false;
    if (s->inflight || (!s->failed && s->next < c->chunks))
        return;
    s->on = false;
    mm__mbox_sent(nd->mb, peer, !s->failed);
    mm__cmd next; /* a send deferred behind this one (mm__mbox_defer_busy) */
    if (mm__mbox_pending(nd->mb, peer, &next))
        try_send(nd, &next);
}

static void try_send(node *nd, const mm__cmd *c)
{
    const void *buf = mm__mbox_claim(nd->mb, c);
    if (!buf)
        return;
    mm_transport_set_exchange(nd->transport, c->exchange);
    if (c->chunks) {
        nd->streams[c->peer] = (out_stream){.on = true, .cmd = *c,
                                            .ups = mm__mbox_ups(nd->mb, c->peer)};
        stream_pump(nd, c->peer);
        return;
    }
    if (mm_transport_send_vec(nd->transport, c->peer, c->exchange, &c->meta, buf, c->len) != 0)
        mm__mbox_unclaim(nd->mb, c); /* refused after all: keep it for when it is up */
}

/* ---- all-reduce (loop thread) --------------------------------------------- */

static void on_allreduce_done(void *ud, mm_ar_state st, const char *err)
{
    node *nd = ud;
    mm__mbox_allreduce_end(nd->mb, st == MM_AR_DONE, err);
}

/* The training thread lends in and out (docs/node.md, "All-reduce") until
 * mm__mbox_allreduce_end gives them back. */
/* The all-reduce of exchange e: the one of its fragment (net/wire.h). */
static mm_allreduce *ar_of(const node *nd, uint64_t e)
{
    return nd->frag_ar ? nd->frag_ar[e % nd->n_frag_ar] : nd->ar;
}

/* Chunks in and out of every all-reduce: moves whenever one progresses. */
static uint64_t ar_progress(const node *nd)
{
    if (!nd->frag_ar)
        return mm_allreduce_progress(nd->ar);
    uint64_t sum = 0;
    for (uint32_t f = 0; f < nd->n_frag_ar; f++)
        sum += mm_allreduce_progress(nd->frag_ar[f]);
    return sum;
}

static void allreduce_start(node *nd, const mm__cmd *c)
{
    nd->ar_running = ar_of(nd, c->exchange);
    if (mm_allreduce_start(nd->ar_running, c->exchange, c->in, c->out) != 0)
        mm__mbox_allreduce_end(nd->mb, false, "all-reduce failed: started while one was running");
}

static void allgather_start(node *nd, const mm__cmd *c)
{
    if (mm_allgather_start(nd->ag, c->exchange, c->slots, c->lens) != 0)
        mm__mbox_allreduce_end(nd->mb, false, "all-gather failed: started while one was running");
}

static void close_wake(void *ud)
{
    node *nd = ud;
    uv_close((uv_handle_t *)&nd->wake, NULL);
}

static void on_transport_closed(void *ud)
{
    node *nd = ud;
    uv_close((uv_handle_t *)&nd->wake, NULL);
    uv_close((uv_handle_t *)&nd->sigint, NULL);
    uv_close((uv_handle_t *)&nd->sigterm, NULL);
}

static void on_wake(uv_async_t *h)
{
    node *nd = h->data;
    mm_transport_stats st;
    mm_transport_get_stats(nd->transport, &st);
    mm_transport_get_link_stats(nd->transport, nd->links);
    int want_n;
    bool finished;
    int n = mm__mbox_drain(nd->mb, nd->cmds, MM__MBOX_QUEUE, nd->want, &want_n, &finished, &st,
                           nd->links);
    if (want_n >= 0)
        mm_transport_want(nd->transport, nd->want, want_n);
    for (int i = 0; i < n; i++) {
        const mm__cmd *c = &nd->cmds[i];
        if (c->kind == MM__CMD_RELEASE)
            mm_transport_release(nd->transport, c->peer);
        else if (c->kind == MM__CMD_ALLREDUCE)
            allreduce_start(nd, c);
        else if (c->kind == MM__CMD_ALLGATHER)
            allgather_start(nd, c);
        else if (c->kind == MM__CMD_AR_ABORT && nd->ag)
            mm_allgather_abort(nd->ag, c->why);
        else if (c->kind == MM__CMD_AR_ABORT)
            mm_allreduce_abort(nd->ar_running ? nd->ar_running : nd->ar, c->why);
        else
            try_send(nd, c);
    }
    for (uint32_t p = 0; p < nd->n; p++) /* chunks readied since */
        if (nd->streams[p].on)
            stream_pump(nd, p);
    if (nd->el && !finished)
        mm__elastic_flush(nd->el, nd->transport);
    if (finished) {
        mm_info("saying goodbye to neighbours");
        mm_transport_shutdown(nd->transport, on_transport_closed, nd);
    }
}

/* ---- transport callbacks (loop thread) ------------------------------------ */

static void on_vector(void *ud, uint32_t peer, uint64_t exchange, const mm_wire_vec *meta,
                      const void *body, size_t body_len)
{
    node *nd = ud;
    if (nd->ar) {
        mm_allreduce_on_vector(ar_of(nd, exchange), peer, exchange, meta, body, body_len);
        mm__mbox_allreduce_progress(nd->mb, ar_progress(nd));
        return;
    }
    if (nd->ag) {
        mm_allgather_on_vector(nd->ag, peer, exchange, meta, body, body_len);
        mm__mbox_allreduce_progress(nd->mb, mm_allgather_progress(nd->ag));
        return;
    }
    /* a chunk of a stream is staged (read into a staging buffer, or copied
     * there): the transport reads the next one while the training thread
     * applies this one */
    if (mm__mbox_deliver(nd->mb, peer, exchange, meta, body, body_len))
        mm_transport_release(nd->transport, peer);
}

/* An all-gather chunk straight into the result; a stream's chunk straight
 * into a staging buffer. */
static void *vector_dst(void *ud, uint32_t peer, uint64_t exchange, const mm_wire_vec *meta,
                        size_t body_len)
{
    node *nd = ud;
    if (nd->ar)
        return mm_allreduce_vector_dst(ar_of(nd, exchange), peer, exchange, meta);
    if (nd->ag)
        return mm_allgather_vector_dst(nd->ag, peer, exchange, meta, body_len);
    return mm__mbox_stage_dst(nd->mb, peer, body_len);
}

static void on_sent(void *ud, uint32_t peer, uint64_t exchange, bool ok)
{
    node *nd = ud;
    if (nd->ar) {
        mm_allreduce_on_sent(ar_of(nd, exchange), peer, exchange, ok);
        mm__mbox_allreduce_progress(nd->mb, ar_progress(nd));
        return;
    }
    if (nd->ag) {
        mm_allgather_on_sent(nd->ag, peer, exchange, ok);
        mm__mbox_allreduce_progress(nd->mb, mm_allgather_progress(nd->ag));
        return;
    }
    if (!ok)
        mm_debug("send to peer %u did not complete", peer);
    out_stream *s = &nd->streams[peer];
    if (s->on) { /* one of its chunks */
        s->inflight--;
        s->failed |= !ok;
        stream_pump(nd, peer);
        return;
    }
    mm__mbox_sent(nd->mb, peer, ok);
    mm__cmd c; /* a send deferred behind this one (mm__mbox_defer_busy) */
    if (mm__mbox_pending(nd->mb, peer, &c))
        try_send(nd, &c);
}

static void on_peer(void *ud, uint32_t peer, mm_peer_state state)
{
    node *nd = ud;
    static const char *names[] = {"up", "down", "gone (said goodbye or closed an idle link)"};
    mm__peer_state st = state == MM_PEER_UP    ? MM__PEER_UP
                        : state == MM_PEER_BYE ? MM__PEER_GONE
                                               : MM__PEER_DOWN;
    if (mm__mbox_peer_changed(nd->mb, peer, st) != st)
        mm_info("peer %u is %s", peer, names[state]);
    for (uint32_t f = 0; nd->ar && f < (nd->frag_ar ? nd->n_frag_ar : 1); f++)
        mm_allreduce_on_peer(nd->frag_ar ? nd->frag_ar[f] : nd->ar, peer, state);
    if (nd->ag)
        mm_allgather_on_peer(nd->ag, peer, state);
    if (nd->el && state == MM_PEER_UP)
        mm__elastic_on_up(nd->el, nd->transport, peer);
    mm__cmd c;
    if (state == MM_PEER_UP && mm__mbox_pending(nd->mb, peer, &c))
        try_send(nd, &c);
}

static void on_refused(void *ud, const mm_refusal *r)
{
    node *nd = ud;
    mm__mbox_refused(nd->mb, r);
    if (nd->ar && r->peer < nd->n && mm_refusal_is_config(r->code)) {
        mm_allreduce_on_refused(nd->ar, r->peer, r->text);
        mm__mbox_allreduce_progress(nd->mb, mm_allreduce_progress(nd->ar));
    }
    if (nd->el)
        mm__elastic_on_refused(nd->el, r);
}

/* Elastic runs (docs/protocol.md 7): the transport's membership frames. */
static void on_members(void *ud, uint32_t peer, const uint8_t *payload, size_t len)
{
    node *nd = ud;
    mm__elastic_on_members(nd->el, nd->transport, peer, payload, len);
}

static void on_join(void *ud, uint32_t peer, const char *addr, const uint8_t cert[32])
{
    node *nd = ud;
    mm__elastic_on_join(nd->el, nd->transport, peer, addr, cert);
}

static void on_state_req(void *ud, uint32_t peer, uint32_t parts)
{
    node *nd = ud;
    mm__elastic_on_state_req(nd->el, peer, parts);
}

static void on_signal(uv_signal_t *h, int signum)
{
    node *nd = h->data;
    const char *name = signum == SIGINT ? "SIGINT" : "SIGTERM";
    if (nd->el) { /* an elastic peer leaves: its departure is announced first */
        if (++nd->signals > 1) {
            mm_warn("second signal: exiting now");
            _exit(MM_EXIT_SIGNALLED);
        }
        mm_info("%s: leaving the run (announced, effective a few rounds ahead), then exiting",
                name);
        mm__elastic_request_leave(nd->el);
        return;
    }
    if (mm__mbox_signal(nd->mb) > 1) {
        mm_warn("second signal: exiting now");
        _exit(MM_EXIT_SIGNALLED);
    }
    mm_info("%s: finishing this round, writing a checkpoint, then exiting", name);
}

static void *trainer_thread(void *arg)
{
    node *nd = arg;
    mm__trainer_run(nd->trainer, nd->mb);
    return NULL;
}

/* ---- set-up ---------------------------------------------------------------- */

static void log_removed_temp(const char *path)
{
    mm_info("removed %s, left by a writer that died mid-write", path);
}

/* A body in a codec other than fp32 is checked whole, on the loop thread,
 * before the transport lends it (docs/protocol.md section 6), with the
 * codec's own rules: the transport knows no codec. */
static int check_body(void *ud, const mm_wire_vec *meta, const uint8_t *body, size_t len,
                      char *why, size_t whylen)
{
    /* (a chunk of a stream is a payload of its count floats) */
    return mm_codec_check_part(ud, meta->count, body, len, why, whylen) == MM_CODEC_OK ? 0 : -1;
}

static int body_check(node *nd, mm_transport_config *tc, char *err, size_t errlen)
{
    mm_codec_spec spec = {.kind = (mm_codec_kind)tc->codec, .block = tc->codec_block,
                          .frac = tc->codec_frac};
    char cerr[200];
    if (!(nd->body_codec = mm_codec_new(&spec, tc->vec_len, cerr, sizeof cerr))) {
        snprintf(err, errlen, "codec %u: %s", tc->codec, cerr);
        return -1;
    }
    tc->check_body = check_body;
    tc->check_ud = nd->body_codec;
    tc->codec_name = mm_codec_kind_name(spec.kind);
    return 0;
}

/* Whether every peer's address ("host:port") names the same host. */
static bool one_host(char *const *addrs, uint32_t n)
{
    const char *c0 = strrchr(addrs[0], ':');
    size_t h0 = c0 ? (size_t)(c0 - addrs[0]) : strlen(addrs[0]);
    for (uint32_t i = 1; i < n; i++) {
        const char *c = strrchr(addrs[i], ':');
        size_t h = c ? (size_t)(c - addrs[i]) : strlen(addrs[i]);
        if (h != h0 || strncmp(addrs[i], addrs[0], h0) != 0)
            return false;
    }
    return true;
}

/* The peers whose vectors this peer takes, into senders[n]: its
 * in-neighbours over the schedule, or for the all-reduce the partners
 * that send to it. False: any (a schedule that never repeats). */
static bool senders_of(const node *nd, const mm_topology *topo, bool *senders)
{
    if (nd->cfg->algo == MM_ALGO_ALLREDUCE) {
        mm_allreduce_senders(nd->ar_sched, nd->id, nd->n, senders);
        return true;
    }
    return mm_topo_senders(topo, nd->id, senders) >= 0;
}

/* The transport's configuration for this peer. The TLS file names live in
 * tls (which must outlive the transport's creation). */
static int transport_config(node *nd, const mm_topology *topo, char **addrs,
                            mm_tls_files *tls, bool *senders, mm_transport_config *tc,
                            char *err, size_t errlen)
{
    const mm_node_config *c = nd->cfg;
    memset(tc, 0, sizeof *tc);
    /* peers that loaded different topologies refuse each other at the
     * HELLO; the file's own name (not its directory) says which */
    memcpy(tc->topo_digest, mm_topo_digest(topo), sizeof tc->topo_digest);
    tc->settings = nd->settings;
    const char *slash = strrchr(c->topology, '/');
    tc->topo_name = slash ? slash + 1 : c->topology;
    tc->self_id = nd->id;
    tc->n_peers = nd->n;
    tc->elastic = nd->elastic;
    tc->addrs = (const char *const *)addrs;
    tc->listen_addr = mm_peer_listen_addr(c, addrs[nd->id]);
    mm__trainer_fingerprint(nd->trainer, tc->fingerprint);
    tc->vec_len = mm__trainer_vec_len(nd->trainer);
    /* dpsgd and async average with weight 1; only push-sum carries mass */
    /* a vector's weight is checked on its vector header, before its body
     * is read, with the algorithm's rule, which the mixing owns: the
     * transport knows no algorithm */
    nd->weight = (mm_weight_check){c->algo == MM_ALGO_PUSHSUM ? MM_WEIGHT_PUSHSUM : MM_WEIGHT_ONE,
                                   nd->n};
    tc->weight_ok = mm_mix_weight_check;
    tc->weight_ud = &nd->weight;
    tc->algo = (uint8_t)c->algo; /* the table's number is the HELLO's */
    /* the ring's chunks: parts of the vector (docs/protocol.md 3.2), and
     * no more than a chunk in a receive buffer */
    mm__trainer_codec(nd->trainer, &tc->codec, &tc->codec_block, &tc->codec_frac,
                      &tc->max_body);
    if (c->algo == MM_ALGO_ALLREDUCE) {
        tc->algo_variant = (uint8_t)nd->ar_sched;
        /* the all-gather: whole payloads of the codec (max_body its longest);
         * the ring: fp32 chunks, no more than one in a receive buffer */
        uint64_t chunk = c->allreduce_chunk > 0 ? (uint64_t)c->allreduce_chunk
                                                : MM_ALLREDUCE_CHUNK_DEFAULT;
        tc->allow_chunks = nd->ar_sched != MM_AR_ALLGATHER;
        if (nd->ar_sched != MM_AR_ALLGATHER)
            tc->max_body = 4 * (chunk < tc->vec_len ? chunk : tc->vec_len);
    }
    tc->copies = c->compress != NULL && c->algo != MM_ALGO_ALLREDUCE; /* CHOCO's */
    tc->fragments = c->outer && c->outer_fragments > 1 ? (uint32_t)c->outer_fragments : 0;
    /* A dense codec's q may come as a stream of chunks of any size that
     * follows the rules (docs/protocol.md 3.2), whether or not this peer
     * streams its own (it does above MM_CHOCO_CHUNK floats): the sender
     * chooses. (Set only where this peer itself streamed, a conforming
     * peer's 999-float chunks of a 5,000-float q were refused as
     * bad_length every round.) */
    mm_codec_spec spec = {.kind = (mm_codec_kind)tc->codec, .block = tc->codec_block,
                          .frac = tc->codec_frac};
    tc->streams = tc->copies && mm_codec_splits(&spec);
    /* (elastic: any member may become a neighbour) */
    tc->senders = !nd->elastic && senders_of(nd, topo, senders) ? senders : NULL;
    /* async: a neighbour far ahead or behind is a straggler, and what it
     * sends is copied out at once (one copy per neighbour whatever its
     * round): no window (docs/protocol.md, "Rounds") */
    if (c->algo == MM_ALGO_ASYNC)
        tc->round_window = MM_ROUND_WINDOW_NONE;
    /* skipping rounds: an edge exchanges at least every MM_CC_SKIP_MAX + 1
     * rounds, and its ends may be that many rounds apart in between (each
     * runs on while its other edges skip): a window narrower than that
     * refused a neighbour ahead by 63 rounds of 16 exchange numbers, and
     * the two ends of the edge then disagreed on its next round (docs/protocol.md
     * "Rounds") */
    if (c->consensus_target > 0 && c->min_gossip_steps < 1) {
        uint64_t lead = (uint64_t)(MM_CC_SKIP_MAX + 2) * (uint64_t)c->max_gossip_steps;
        if (tc->round_window != MM_ROUND_WINDOW_NONE && tc->round_window < lead)
            tc->round_window = lead;
    }
    if (tc->codec && tc->codec != MM_WIRE_CODEC_FP32 && body_check(nd, tc, err, errlen) != 0)
        return -1;
    tc->plaintext = c->plaintext;
    if (!c->plaintext) {
        if (mm_tls_files_for(c->tls_dir, nd->id, tls) != 0) {
            snprintf(err, errlen, "--tls-dir %s: path too long", c->tls_dir);
            return -1;
        }
        tc->ca_file = tls->ca;
        tc->cert_file = tls->cert;
        tc->key_file = tls->key;
    }
    tc->peer_timeout_ms = (uint32_t)c->peer_timeout_ms;
    tc->max_pending_conns = (uint32_t)c->max_pending;
    tc->heartbeat_ms = (uint32_t)(c->peer_timeout_ms / 4 > 0 ? c->peer_timeout_ms / 4 : 1);
    if (c->test_poison) {
        if (!(nd->poison = mm_poison_new(c->test_poison, tc->codec ? &spec : NULL,
                                          tc->vec_len, nd->n, err, errlen)))
            return -1;
        tc->tamper = mm_poison_tamper;
        tc->tamper_ud = nd->poison;
    }
    return 0;
}

/* Listen ports inside the kernel's ephemeral range work until an outgoing
 * connection happens to hold one at start (docs/launching.md, "Choosing
 * ports"): say so, loudly, but run. With --base-port the whole cluster's
 * range is checked (every peer of it is on this machine). */
static void warn_ephemeral(const mm_node_config *c, char **addrs, uint32_t n, uint32_t id)
{
    int first, last;
    if (!c->hosts_file && !c->bind_host) {
        first = c->base_port;
        last = c->base_port + (int)n - 1;
    } else {
        const char *own = c->bind_host ? c->bind_host : addrs[id];
        const char *colon = strrchr(own, ':');
        first = last = colon ? atoi(colon + 1) : 0;
    }
    char msg[600];
    if (first > 0 && mm_ports_in_ephemeral(first, last, msg, sizeof msg))
        mm_warn("%s", msg);
}

/* An elastic run's addresses, n (--max-peers) of them: the starting
 * members' (--hosts or --base-port), this peer's own (--advertise, else
 * its entry, else 127.0.0.1:--base-port + id), NULL for the others until
 * the table names them. NULL with err. */
static char **elastic_addrs(node *nd, char *err, size_t errlen)
{
    const mm_node_config *c = nd->cfg;
    char **start = mm_peer_addrs(c, nd->n_start, err, errlen);
    char **all = start ? calloc(nd->n, sizeof *all) : NULL;
    if (!all) {
        if (start)
            snprintf(err, errlen, "out of memory");
        mm_hosts_free(start, nd->n_start);
        return NULL;
    }
    for (uint32_t i = 0; i < nd->n_start; i++) {
        all[i] = start[i];
        start[i] = NULL;
    }
    mm_hosts_free(start, nd->n_start);
    char own[96] = "";
    if (c->advertise)
        snprintf(own, sizeof own, "%s", c->advertise);
    else if (nd->id < nd->n_start)
        snprintf(own, sizeof own, "%s", all[nd->id]);
    else if (!c->hosts_file && c->base_port + (long)nd->id <= 65535)
        snprintf(own, sizeof own, "127.0.0.1:%ld", c->base_port + (long)nd->id);
    if (!own[0] || strlen(own) > MM_MEMBER_ADDR_MAX) {
        if (own[0])
            snprintf(err, errlen, "--advertise %s: longer than %d bytes", own,
                     MM_MEMBER_ADDR_MAX);
        else
            snprintf(err, errlen, "peer %u is not in --hosts: give --advertise IP:PORT, where "
                     "the others reach it", nd->id);
        mm_hosts_free(all, nd->n);
        return NULL;
    }
    free(all[nd->id]);
    if (!(all[nd->id] = strdup(own))) {
        snprintf(err, errlen, "out of memory");
        mm_hosts_free(all, nd->n);
        return NULL;
    }
    return all;
}

/* The least free space a peer starts with: its log, metrics and checkpoints
 * would otherwise be lost from the first line (a full disk later is a
 * fault the peer rides out: docs/node.md, "Faults"). */
#define MIN_FREE_BYTES (1024 * 1024)

/* 0, or -1 saying why when the file system of dir has less than
 * MIN_FREE_BYTES free (statvfs: the space a non-root writer may use). */
static int check_free_space(const char *dir)
{
    struct statvfs fs;
    if (statvfs(dir, &fs) != 0)
        return 0; /* cannot tell: the writes will say */
    unsigned long long avail = (unsigned long long)fs.f_bavail * fs.f_frsize;
    if (avail >= MIN_FREE_BYTES)
        return 0;
    fprintf(stderr, "murmur node: %s: No space left on device (%llu KiB free on its file "
                    "system; a peer starts with at least %d KiB for its log, metrics and "
                    "checkpoints): free some space, or give another --run-dir\n", dir,
            avail / 1024, MIN_FREE_BYTES / 1024);
    return -1;
}

/* Checks the configuration (mm__node_check: the topology loaded into
 * *topo), resolves where every peer listens, then opens the run directory
 * and the log. 0, or the exit status after printing why: MM_EXIT_USAGE
 * for a configuration refused, MM_EXIT_ERROR otherwise. */
static int open_peer(node *nd, mm_topology **topo, char ***addrs, char *dir, size_t dirlen,
                     FILE **logf, char *err, size_t errlen)
{
    const mm_node_config *c = nd->cfg;
    int rc = mm__node_check(c, topo, err, errlen);
    if (rc != 0) {
        fprintf(stderr, "murmur node: %s\n", err);
        return rc;
    }
    nd->n = (uint32_t)mm_topo_n(*topo);
    nd->elastic = mm_topo_family(*topo);
    nd->n_start = nd->n;
    if (nd->elastic)
        nd->n = (uint32_t)c->max_peers; /* ids below it: the tables' capacity */
    nd->id = (uint32_t)c->id;
    if (mm_node_settings(c, nd->settings, sizeof nd->settings) < 0) { /* (checked) */
        fprintf(stderr, "murmur node: the HELLO's settings do not fit\n");
        return MM_EXIT_USAGE;
    }
    *addrs = nd->elastic ? elastic_addrs(nd, err, errlen) : mm_peer_addrs(c, nd->n, err, errlen);
    if (!*addrs) {
        fprintf(stderr, "murmur node: %s\n", err);
        return nd->elastic ? MM_EXIT_USAGE : MM_EXIT_ERROR;
    }
    if ((size_t)snprintf(dir, dirlen, "%s/node-%u", c->run_dir, nd->id) >= dirlen) {
        fprintf(stderr, "murmur node: --run-dir %s: path too long\n", c->run_dir);
        return MM_EXIT_ERROR;
    }
    if (mm_mkdir_p(dir, err, errlen) != 0) {
        fprintf(stderr, "murmur node: %s\n", err);
        return MM_EXIT_ERROR;
    }
    if (check_free_space(dir) != 0)
        return MM_EXIT_ERROR;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/node.log", dir);
    *logf = fopen(path, "a");
    /* One process per node-K/: a second peer K in this run directory (a
     * duplicate --id) would write its lines into the first one's log and
     * metrics. The lock lasts as long as the process. */
    if (*logf && flock(fileno(*logf), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        fclose(*logf);
        *logf = NULL;
        fprintf(stderr, "murmur node: %s is in use by another process running peer %u in this "
                        "run directory (is --id %u given twice?)\n", dir, nd->id, nd->id);
        return MM_EXIT_USAGE;
    }
    /* A second run in the directory of a first would append to its metrics
     * and murmur report would merge the two into one table. (A joiner may:
     * a member removed after a crash rejoins in its own node-K/ of the
     * same run, its rounds after its old ones: docs/membership.md.) */
    char held[256];
    if (!c->resume && !c->join && mm__trainer_dir_holds_run(dir, held, sizeof held)) {
        fprintf(stderr, "murmur node: %s holds a run of peer %u already (%s): a new run there "
                        "would be appended to it and murmur report would merge the two. Continue "
                        "that run with --resume, or give this one another --run-dir (or remove "
                        "%s first)\n", dir, nd->id, held, dir);
        return MM_EXIT_USAGE;
    }
    mm_log_set_peer((int)nd->id);
    mm_log_set_file(*logf);
    mm_blas_log_note(); /* the OpenBLAS re-exec, if any: in the peer's log only */
    warn_ephemeral(c, *addrs, nd->n, nd->id);
    /* A peer killed inside mm_write_atomic leaves a temp file (a whole
     * checkpoint's worth of disk): remove those of dead writers, so that
     * repeated crashes do not fill the disk. */
    mm_remove_stale_temps(dir, log_removed_temp);
    snprintf(path, sizeof path, "%s/snap", dir);
    mm_remove_stale_temps(path, log_removed_temp);
    return 0;
}

/* The all-reduce, or with --outer-fragments F one per fragment, each
 * averaging its own floats, which the wire names by their place in the
 * vector (net/wire.h mm_wire_fragment): fragment f runs in rounds f mod F.
 * 0, or -1 with why. */
static int make_allreduce(node *nd, char *err, size_t errlen)
{
    const mm_node_config *c = nd->cfg;
    uint64_t P = mm__trainer_vec_len(nd->trainer);
    uint32_t F = c->outer && c->outer_fragments > 1 ? (uint32_t)c->outer_fragments : 1;
    if (F > 1 && !(nd->frag_ar = calloc(F, sizeof *nd->frag_ar))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (uint32_t f = 0; f < F; f++) {
        uint64_t lo = 0, count = P;
        if (F > 1)
            mm_wire_fragment(P, F, f, &lo, &count);
        mm_allreduce_config ac = {.transport = nd->transport, .self = nd->id, .n = nd->n,
                                  .len = count, .base = lo,
                                  .chunk = (uint64_t)c->allreduce_chunk,
                                  .schedule = nd->ar_sched,
                                  .done = on_allreduce_done, .ud = nd};
        mm_allreduce *a = mm_allreduce_new(&ac, err, errlen);
        if (!a)
            return -1;
        if (f == 0)
            nd->ar = a;
        if (F > 1)
            nd->frag_ar[f] = a;
        nd->n_frag_ar = f + 1;
    }
    return 0;
}

/* --metrics-addr: the Prometheus endpoint on its own threads (exporter.h).
 * one_host: every peer's address has one host part (they share a machine,
 * and a port without '+' is one port for all of them). */
static int start_exporter(node *nd, bool one_host, char *err, size_t errlen)
{
    const mm_node_config *c = nd->cfg;
    char *token = NULL;
    if (c->metrics_token_file && !(token = mm_http_read_token(c->metrics_token_file, err, errlen)))
        return -1;
    /* HOST:P+ is port P + this peer's id: one flag for every peer of a machine */
    char addr[300];
    size_t len = strlen(c->metrics_addr);
    snprintf(addr, sizeof addr, "%s", c->metrics_addr);
    if (len > 1 && len < sizeof addr && addr[len - 1] == '+') {
        addr[len - 1] = '\0';
        char *colon = strrchr(addr, ':');
        long port = colon ? strtol(colon + 1, NULL, 10) : 0;
        if (!colon || port <= 0 || port + nd->id > 65535) {
            snprintf(err, errlen, "--metrics-addr %s: HOST:PORT+ wants a port", c->metrics_addr);
            free(token);
            return -1;
        }
        snprintf(colon + 1, sizeof addr - (size_t)(colon + 1 - addr), "%ld", port + nd->id);
    }
    char why[PATH_MAX + 256];
    nd->exporter = mm__exporter_start(addr, token, nd->n, why, sizeof why);
    free(token);
    if (!nd->exporter) {
        /* (the peers of one machine with one port: all but the first
         * failed here, each with nothing but "address in use") */
        bool shared = len > 0 && c->metrics_addr[len - 1] != '+' && one_host && nd->n > 1;
        snprintf(err, errlen, "--metrics-addr: %s%s%s%s", why,
                 shared ? " (the peers of this run share a host, and each needs a port of its "
                          "own: give --metrics-addr " : "",
                 shared ? c->metrics_addr : "", shared ? "+, which gives peer K port PORT+K)" : "");
        return -1;
    }
    mm__trainer_set_exporter(nd->trainer, nd->exporter);
    return 0;
}

int mm_node_check(const mm_node_config *c)
{
    char err[PATH_MAX + 512] = "", text[MM_WIRE_SETTINGS_MAX + 1];
    mm_topology *topo = NULL;
    int rc = mm__node_check(c, &topo, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "murmur node: %s\n", err);
    } else {
        printf("murmur node: the flags are valid (peer %d of %d, %s)\n", c->id, mm_topo_n(topo),
               c->topology);
        /* what the HELLO carries, one setting per line as on the wire
         * (docs/protocol.md 3.1): every peer of the run must show the same */
        if (mm_node_settings(c, text, sizeof text) >= 0)
            printf("murmur node: settings every peer must share:\n%s", text);
    }
    mm_topo_free(topo);
    return rc;
}

int mm_node_run(const mm_node_config *c)
{
    char err[PATH_MAX + 512] = "", dir[PATH_MAX];
    node *nd = calloc(1, sizeof *nd);
    if (!nd) {
        fprintf(stderr, "murmur node: out of memory\n");
        return MM_EXIT_ERROR;
    }
    nd->cfg = c;
    int status = MM_EXIT_ERROR;
    char **addrs = NULL;
    FILE *logf = NULL;
    mm_topology *topo = NULL;
    bool loop_ready = false;

    int rc = open_peer(nd, &topo, &addrs, dir, sizeof dir, &logf, err, sizeof err);
    if (rc != 0) {
        status = rc;
        goto out;
    }
    rc = mm__trainer_new(c, nd->id, topo, dir, &nd->trainer, err, sizeof err);
    if (rc != 0) {
        mm_error("%s", err);
        status = rc;
        goto out;
    }
    if (c->algo == MM_ALGO_ALLREDUCE) {
        nd->ar_sched = mm__outer_compressed(c)
                           ? MM_AR_ALLGATHER /* the compressed outer exchange */
                           : mm_allreduce_schedule_pick(c->allreduce_schedule, nd->n,
                                                        one_host(addrs, nd->n),
                                                        mm__trainer_vec_len(nd->trainer));
        mm__trainer_set_allreduce(nd->trainer, nd->ar_sched);
    }
    nd->want = calloc(nd->n, sizeof *nd->want);
    nd->links = calloc(nd->n, sizeof *nd->links);
    nd->streams = calloc(nd->n, sizeof *nd->streams);
    if (!nd->want || !nd->links || !nd->streams) {
        mm_error("out of memory");
        goto out;
    }

    if (c->metrics_addr && start_exporter(nd, one_host(addrs, nd->n), err, sizeof err) != 0) {
        mm_error("%s", err);
        goto out;
    }

    /* the loop, the mailbox and the transport */
    uv_loop_init(&nd->loop);
    loop_ready = true;
    uv_async_init(&nd->loop, &nd->wake, on_wake);
    nd->wake.data = nd;
    size_t chunk_bytes;
    int chunks = mm__trainer_chunks(nd->trainer, &chunk_bytes);
    /* --deadline learn, --fit-work (node/pace.h): whole vectors are staged
     * too, so that the transport reads on while one is in use and the round
     * sees when each came and whether a neighbour is rounds ahead */
    if (mm__pace_wanted(c) && mm__trainer_buf_bytes(nd->trainer) > chunk_bytes)
        chunk_bytes = mm__trainer_buf_bytes(nd->trainer);
    nd->mb = mm__mbox_new(nd->n, mm__trainer_buf_bytes(nd->trainer), chunks, chunk_bytes,
                          &nd->wake);
    if (!nd->mb) {
        mm_error("out of memory for %u peers and %zu parameters", nd->n,
                 mm__trainer_vec_len(nd->trainer));
        uv_close((uv_handle_t *)&nd->wake, NULL);
        goto out;
    }
    mm__mbox_defer_busy(nd->mb, c->algo == MM_ALGO_DPSGD || c->algo == MM_ALGO_PUSHSUM);
    if (nd->elastic) {
        nd->el = mm__elastic_new(c, nd->id, nd->n, nd->n_start, addrs, addrs[nd->id], &nd->wake,
                                 err, sizeof err);
        if (!nd->el) {
            mm_error("%s", err);
            uv_close((uv_handle_t *)&nd->wake, NULL);
            goto out;
        }
        mm__trainer_set_elastic(nd->trainer, nd->el);
    }
    mm_transport_config tc;
    mm_tls_files tls;
    mm_transport_callbacks cb = {.on_vector = on_vector, .on_sent = on_sent, .on_peer = on_peer,
                                 .on_refused = on_refused, .ud = nd,
                                 .vector_dst = c->algo == MM_ALGO_ALLREDUCE || chunks > 0
                                                   ? vector_dst : NULL,
                                 .on_members = nd->el ? on_members : NULL,
                                 .on_join = nd->el ? on_join : NULL,
                                 .on_state_req = nd->el ? on_state_req : NULL};
    bool *senders = calloc(nd->n, sizeof *senders);
    if (!senders || transport_config(nd, topo, addrs, &tls, senders, &tc, err, sizeof err) != 0 ||
        !(nd->transport = mm_transport_new(&nd->loop, &tc, &cb, err, sizeof err))) {
        mm_error("%s", senders ? err : "out of memory");
        free(senders);
        uv_close((uv_handle_t *)&nd->wake, NULL);
        goto out;
    }
    free(senders); /* (the transport keeps its copy) */
    if (nd->el) {
        mm__elastic_addresses(nd->el, nd->transport);
        if (c->join && mm_transport_join(nd->transport, c->join, err, sizeof err) != 0) {
            mm_error("--join %s: %s", c->join, err);
            status = MM_EXIT_USAGE;
            mm_transport_shutdown(nd->transport, close_wake, nd);
            uv_run(&nd->loop, UV_RUN_DEFAULT);
            goto out;
        }
    }
    if (nd->ar_sched == MM_AR_ALLGATHER && c->algo == MM_ALGO_ALLREDUCE) {
        mm_allgather_config gc = {.transport = nd->transport, .self = nd->id, .n = nd->n,
                                  .vec_len = mm__trainer_vec_len(nd->trainer),
                                  .codec = tc.codec, .slot_bytes = tc.max_body,
                                  .done = on_allreduce_done, .ud = nd};
        if (!(nd->ag = mm_allgather_new(&gc, err, sizeof err))) {
            mm_error("%s", err);
            mm_transport_shutdown(nd->transport, close_wake, nd);
            uv_run(&nd->loop, UV_RUN_DEFAULT);
            goto out;
        }
    } else if (c->algo == MM_ALGO_ALLREDUCE && make_allreduce(nd, err, sizeof err) != 0) {
        mm_error("%s", err);
        mm_transport_shutdown(nd->transport, close_wake, nd);
        uv_run(&nd->loop, UV_RUN_DEFAULT);
        goto out;
    }
    uv_signal_init(&nd->loop, &nd->sigint);
    uv_signal_init(&nd->loop, &nd->sigterm);
    nd->sigint.data = nd->sigterm.data = nd;
    uv_signal_start(&nd->sigint, on_signal, SIGINT);
    uv_signal_start(&nd->sigterm, on_signal, SIGTERM);

    char algo[128];
    snprintf(algo, sizeof algo, "%s", mm_algo_name(c->algo));
    if (nd->ar) {
        uint32_t partners[MM_AR_MAX_PARTNERS];
        snprintf(algo, sizeof algo, "allreduce (%s schedule, %d partners)",
                 mm_allreduce_schedule_name(nd->ar_sched),
                 mm_allreduce_partners(nd->ar, partners));
    } else if (nd->ag) {
        snprintf(algo, sizeof algo, "allreduce (the all-gather of compressed pseudo-gradients, "
                 "%s)", c->compress);
    }
    mm_info("peer %u of %u: %s, topology %s (%s), %zu parameters, listening on %s%s", nd->id,
            nd->n, algo, c->topology, mm_topo_kind(topo),
            mm__trainer_vec_len(nd->trainer), tc.listen_addr ? tc.listen_addr : addrs[nd->id],
            c->plaintext ? " (PLAINTEXT)" : " (TLS)");

    pthread_t th;
    if (pthread_create(&th, NULL, trainer_thread, nd) != 0) {
        mm_error("cannot start the training thread");
        mm_transport_shutdown(nd->transport, on_transport_closed, nd);
        uv_run(&nd->loop, UV_RUN_DEFAULT);
        goto out;
    }
    uv_run(&nd->loop, UV_RUN_DEFAULT);
    pthread_join(th, NULL);
    status = mm__trainer_status(nd->trainer);

out:
    mm__exporter_stop(nd->exporter);
    for (uint32_t f = 1; nd->frag_ar && f < nd->n_frag_ar; f++) /* (frag_ar[0] is ar) */
        mm_allreduce_free(nd->frag_ar[f]);
    free(nd->frag_ar);
    mm_allreduce_free(nd->ar);
    mm_allgather_free(nd->ag);
    if (nd->transport)
        mm_transport_free(nd->transport);
    if (loop_ready) {
        uv_run(&nd->loop, UV_RUN_NOWAIT);
        uv_loop_close(&nd->loop);
    }
    mm__mbox_free(nd->mb);
    mm__trainer_free(nd->trainer);
    mm__elastic_free(nd->el);
    mm_codec_free(nd->body_codec);
    mm_poison_free(nd->poison);
    mm_topo_free(topo);
    mm_hosts_free(addrs, nd->n);
    free(nd->want);
    free(nd->links);
    free(nd->streams);
    mm_log_set_file(NULL);
    if (logf)
        fclose(logf);
    free(nd);
    return status;
}
