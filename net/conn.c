/* One connection: reads parsed incrementally by the wire decoder, writes
 * queued in order with back-pressure, TLS through a BIO (conn_bio.c) driven
 * by uv_read and uv_write, and the HELLO exchange. Every refusal is logged
 * with where it came from, counted, and closes only this connection. */
#include "net/transport_int.h"
#include "base/log.h"
#include "net/tls.h"

#include <openssl/err.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void tls_drain(conn *c);
static void tls_pump(conn *c);
static void plain_pump(conn *c);
static void goodbye_sent(conn *c);
static int tls_flush(conn *c);

static uv_stream_t *stream(conn *c) { return (uv_stream_t *)&c->tcp; }

conn *mm__conn_new(mm_transport *t)
{
    conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->t = t;
    c->peer = -1;
    c->cert_id = -1;
    c->claimed = -1;
    c->st = C_CONNECTING;
    c->t_start = c->t_last_recv = c->t_last_send = mm_now_ms(t);
    uv_tcp_init(t->loop, &c->tcp);
    c->tcp.data = c;
    t->handles++;
    c->next = t->conns;
    t->conns = c;
    snprintf(c->from, sizeof c->from, "?");
    return c;
}

static void on_closed(uv_handle_t *h)
{
    conn *c = h->data;
    mm_transport *t = c->t;
    for (conn **pp = &t->conns; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    if (c->ssl)
        SSL_free(c->ssl); /* frees the BIO */
    mm__conn_chunks_free(c);
    free(c->netbuf);
    free(c->members_buf);
    free(c);
    mm__tr_handle_closed(t);
}

void mm__conn_force_close(conn *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, on_closed);
}

/* A graceful close lingers: after our FIN, whatever the peer still sends is
 * read and thrown away until it closes too (EOF or an error), or the tick
 * closes it after MM_CLOSE_GRACE_MS. Closing a socket with unread bytes in
 * it makes the kernel answer with a RST and drop what we sent that the
 * peer has not received yet: on a slow link the last frames, already
 * reported sent (an all-reduce's last chunks; docs/protocol.md 4). */
static void linger_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    static _Thread_local char sink[16384]; /* read to be dropped */
    buf->base = sink;
    buf->len = sizeof sink;
}

static void linger_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    if (nread < 0 && !uv_is_closing((uv_handle_t *)s))
        uv_close((uv_handle_t *)s, on_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    conn *c = req->data;
    if (uv_is_closing((uv_handle_t *)&c->tcp))
        return;
    if (status == 0 && uv_read_start(stream(c), linger_alloc, linger_read) == 0)
        return;
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

/* Where c's bytes are counted per peer: its peer's, or until it is bound
 * to one its own (an accepted HELLO moves them to the peer). */
static mm_link_stats *link_of(conn *c)
{
    return c->peer >= 0 ? &c->t->peers[c->peer].link : &c->unbound;
}

static void count_sent(conn *c, uint64_t n)
{
    c->t->st.bytes_sent += n;
    link_of(c)->bytes_sent += n;
}

static void free_item(out_item *it)
{
    free(it->owned);
    free(it);
}

static void item_done(conn *c, out_item *it, bool ok)
{
    mm_transport *t = c->t;
    if (it->is_vec) {
        if (ok) {
            t->st.vectors_sent++;
            t->peers[it->peer].link.vectors_sent++;
        }
        if (t->cb.on_sent)
            t->cb.on_sent(t->cb.ud, it->peer, it->exchange, ok);
    }
    free_item(it);
}

void mm__conn_close(conn *c, bool graceful, const char *why)
{
    if (c->st == C_CLOSING)
        return;
    mm_transport *t = c->t;
    mm__conn_set_state(c, C_CLOSING);
    c->t_close = mm_now_ms(t);
    mm_info("closing connection %s: %s", c->from, why);
    if (c->reading) {
        uv_read_stop(stream(c));
        c->reading = false;
    }
    /* Frames not yet handed to the socket will never be: give the caller's
     * buffers back now. */
    while (c->q_head) {
        out_item *it = c->q_head;
        c->q_head = it->next;
        if (!it->ready)
            mm__tr_crc_remove(t, it);
        item_done(c, it, false);
    }
    c->q_tail = NULL;
    mm__tr_conn_closed(t, c);
    if (uv_is_closing((uv_handle_t *)&c->tcp))
        return;
    if (graceful && c->ssl && SSL_is_init_finished(c->ssl)) {
        SSL_shutdown(c->ssl); /* close_notify, flushed before the FIN */
        ERR_clear_error();
        tls_flush(c);
    }
    c->sreq.data = c;
    if (graceful && uv_shutdown(&c->sreq, stream(c), on_shutdown) == 0)
        return;
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void conn_leave(conn *c, uint16_t type, const char *msg, const char *why);

/* The refusal code of a counter of mm_transport_stats. */
static mm_refusal_code code_of(const mm_transport *t, const uint64_t *counter)
{
    const mm_transport_stats *s = &t->st;
    if (counter == &s->tls_mismatch) return MM_REFUSAL_TLS_MISMATCH;
    if (counter == &s->bad_tls) return MM_REFUSAL_TLS;
    if (counter == &s->bad_identity) return MM_REFUSAL_IDENTITY;
    if (counter == &s->id_clash) return MM_REFUSAL_ID_CLASH;
    if (counter == &s->bad_fingerprint) return MM_REFUSAL_FINGERPRINT;
    if (counter == &s->bad_config) return MM_REFUSAL_CONFIG;
    if (counter == &s->bad_topology) return MM_REFUSAL_TOPOLOGY;
    if (counter == &s->bad_version) return MM_REFUSAL_VERSION;
    if (counter == &s->bad_magic) return MM_REFUSAL_NOT_MURMUR;
    return MM_REFUSAL_OTHER;
}

void mm__conn_refuse(conn *c, uint64_t *counter, const char *fmt, ...)
{
    if (c->st == C_CLOSING)
        return;
    char msg[MM_WIRE_REFUSE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mm_warn("refused %s: %s", c->from, msg);
    c->we_refused = true;
    if (counter)
        (*counter)++;
    mm__tr_refusal(c->t, c, code_of(c->t, counter), false, msg);
    /* REFUSE only once the byte stream is usable (TLS done); it is a
     * courtesy to an honest but misconfigured peer. */
    if (c->st >= C_HELLO && !c->leaving)
        conn_leave(c, MM_WIRE_REFUSE, msg, msg);
    else
        mm__conn_close(c, true, msg);
}

/* ---- writes --------------------------------------------------------------- */

static void plain_write_cb(uv_write_t *req, int status)
{
    out_item *it = req->data;
    conn *c = it->c;
    c->writes_pending--;
    if (status == 0)
        count_sent(c, it->head_len + it->big_len);
    item_done(c, it, status == 0);
    if (status < 0 && status != UV_ECANCELED)
        mm__conn_close(c, false, uv_strerror(status));
}

int mm__conn_send_frame(conn *c, const mm_wire_header *h, const void *small, size_t small_len,
                    const uint8_t *big, size_t big_len, bool is_vec, uint32_t peer_id,
                    uint8_t *owned)
{
    if (c->st == C_CLOSING || c->leaving || small_len > MM_WIRE_REFUSE_MAX + 8) {
        free(owned);
        return -1;
    }
    out_item *it = calloc(1, sizeof *it);
    if (!it) {
        free(owned);
        return -1;
    }
    it->c = c;
    it->hdr = *h;
    if (small_len)
        memcpy(it->head + MM_WIRE_HDR_LEN, small, small_len);
    it->head_len = MM_WIRE_HDR_LEN + small_len;
    it->big = big;
    it->big_len = big_len;
    it->exchange = h->exchange;
    it->peer = peer_id;
    it->is_vec = is_vec;
    it->owned = owned;
    c->t_last_send = mm_now_ms(c->t);
    if (c->q_tail)
        c->q_tail->next = it;
    else
        c->q_head = it;
    c->q_tail = it;
    /* Under TLS the AEAD authenticates the payload: no CRC (field 0). */
    if (!c->ssl) {
        it->crc = mm_crc32c(0, it->head + MM_WIRE_HDR_LEN, small_len);
        if (big_len >= MM_CRC_INLINE) {
            mm__tr_crc_enqueue(c->t, it);
            return 0;
        }
        it->crc = mm_crc32c(it->crc, big, big_len);
    }
    mm__conn_item_ready(it);
    return 0;
}

void mm__conn_item_ready(out_item *it)
{
    it->hdr.payload_crc = it->crc;
    mm_wire_put_header(it->head, &it->hdr);
    it->ready = true;
    conn *c = it->c;
    if (c->ssl)
        tls_pump(c);
    else
        plain_pump(c);
}

/* Plaintext: ready frames go to libuv as they are, the vector straight from
 * the caller's buffer (no copy); libuv keeps the unwritten rest. */
static void plain_pump(conn *c)
{
    while (c->q_head && c->q_head->ready && c->st != C_CLOSING) {
        out_item *it = c->q_head;
        c->q_head = it->next;
        if (!c->q_head)
            c->q_tail = NULL;
        uv_buf_t b[2] = {uv_buf_init((char *)it->head, (unsigned)it->head_len),
                         uv_buf_init((char *)it->big, 0)};
        /* uv_buf_t.len is size_t on unix: set it directly for huge vectors. */
        b[1].len = it->big_len;
        it->req.data = it;
        int r = uv_write(&it->req, stream(c), b, it->big_len ? 2 : 1, plain_write_cb);
        if (r) {
            item_done(c, it, false);
            mm__conn_close(c, false, uv_strerror(r));
            return;
        }
        c->writes_pending++;
    }
    goodbye_sent(c);
}

static int send_ctrl(conn *c, uint16_t type, const void *payload, size_t len)
{
    mm_wire_header h = {.type = type, .sender = c->t->cfg.self_id, .exchange = c->t->exchange,
                        .payload_len = len};
    return mm__conn_send_frame(c, &h, payload, len, NULL, 0, false, 0, NULL);
}

int mm__conn_send_ping(conn *c) { return send_ctrl(c, MM_WIRE_PING, NULL, 0); }
/* The last frame of a leave has gone to the socket (or libuv): close. */
static void goodbye_sent(conn *c)
{
    if (c->leaving && !c->q_head && c->st != C_CLOSING)
        mm__conn_close(c, true, c->leave_why);
}

/* Leaves with a last control frame, BYE or REFUSE (msg: its text): frames
 * not yet started are dropped (their buffers go back to the caller), a
 * frame already on its way is finished, then the last frame, then a
 * graceful close. The tick closes it anyway after MM_CLOSE_GRACE_MS. */
static void conn_leave(conn *c, uint16_t type, const char *msg, const char *why)
{
    if (c->st == C_CLOSING || c->leaving)
        return;
    /* A TLS frame partly encrypted must be finished, or the stream would
     * end inside it; plaintext frames in the queue have not started (the
     * ready ones are already libuv's). */
    out_item **pp = &c->q_head;
    if (*pp && c->ssl && (*pp)->off > 0)
        pp = &(*pp)->next;
    while (*pp) {
        out_item *it = *pp;
        *pp = it->next;
        if (!it->ready)
            mm__tr_crc_remove(c->t, it);
        item_done(c, it, false);
    }
    c->q_tail = c->q_head;
    mm__conn_pause(c); /* nothing more is read from a peer we leave */
    if (send_ctrl(c, type, msg, msg ? strlen(msg) : 0) != 0) {
        mm__conn_close(c, false, why);
        return;
    }
    /* From here on nothing else is queued (mm__conn_send_frame refuses). */
    c->leaving = true;
    snprintf(c->leave_why, sizeof c->leave_why, "%s", why);
    c->t_close = mm_now_ms(c->t);
    goodbye_sent(c); /* the last frame may already be out */
}

void mm__conn_goodbye(conn *c, const char *why) { conn_leave(c, MM_WIRE_BYE, NULL, why); }

static void send_hello(conn *c, uint32_t target)
{
    const mm_transport_config *cfg = &c->t->cfg;
    mm_wire_hello hello = {.vec_len = cfg->vec_len, .target = target, .algo = cfg->algo,
                           .algo_variant = cfg->algo_variant, .codec = cfg->codec, .codec_block = cfg->codec_block,
                           .codec_frac = cfg->codec_frac,
                           .flags = c->join && c->dialer ? MM_HELLO_JOIN : 0};
    memcpy(hello.fingerprint, cfg->fingerprint, 32);
    memcpy(hello.topo_digest, cfg->topo_digest, 32);
    snprintf(hello.topo_name, sizeof hello.topo_name, "%s", cfg->topo_name ? cfg->topo_name : "");
    uint8_t buf[MM_WIRE_HELLO_LEN];
    mm_wire_put_hello(buf, &hello);
    /* the settings text follows the 128 fixed bytes (docs/protocol.md 3.1) */
    mm_wire_header h = {.type = MM_WIRE_HELLO, .sender = cfg->self_id,
                        .exchange = c->t->exchange,
                        .payload_len = sizeof buf + c->t->settings_len};
    mm__conn_send_frame(c, &h, buf, sizeof buf, (const uint8_t *)c->t->settings,
                        c->t->settings_len, false, 0, NULL);
}

static void tls_write_cb(uv_write_t *req, int status)
{
    tls_chunk *ch = req->data;
    conn *c = ch->c;
    c->writes_pending--;
    c->w_inflight -= ch->len;
    mm__conn_chunk_put(c, ch);
    if (status < 0) {
        if (status != UV_ECANCELED)
            mm__conn_close(c, false, uv_strerror(status));
        return;
    }
    tls_pump(c);
}

/* Hands the records OpenSSL wrote (conn_bio.c) to libuv. */
static int tls_flush(conn *c)
{
    if (c->w_cur && c->w_cur->len) {
        if (c->w_ready_tail)
            c->w_ready_tail->next = c->w_cur;
        else
            c->w_ready = c->w_cur;
        c->w_ready_tail = c->w_cur;
        c->w_cur = NULL;
    }
    while (c->w_ready) {
        tls_chunk *ch = c->w_ready;
        c->w_ready = ch->next;
        if (!c->w_ready)
            c->w_ready_tail = NULL;
        ch->next = NULL;
        ch->req.data = ch;
        uv_buf_t b = uv_buf_init((char *)ch->data, (unsigned)ch->len);
        if (uv_write(&ch->req, stream(c), &b, 1, tls_write_cb) != 0) {
            free(ch);
            return -1;
        }
        c->writes_pending++;
        c->w_inflight += ch->len;
        if (c->w_inflight > c->t->st.tls_queued_peak)
            c->t->st.tls_queued_peak = c->w_inflight;
        count_sent(c, ch->len);
    }
    return 0;
}

/* Encrypts queued frames while less than the high-water mark of ciphertext
 * is in libuv's hands, so memory stays bounded whatever the vector size and
 * link speed; the write callback calls this again as chunks come back.
 * Counted from uv_write to its callback, not with libuv's write queue size:
 * a write that completes at once leaves that queue, but its chunk comes
 * back only when the callback runs, a loop phase later. */
static void tls_pump(conn *c)
{
    if (c->pumping || c->st < C_HELLO || c->st == C_CLOSING)
        return;
    c->pumping = true;
    while (c->q_head && c->q_head->ready && c->st != C_CLOSING &&
           c->w_inflight < MM_WRITE_HIGH_WATER) {
        out_item *it = c->q_head;
        size_t total = it->head_len + it->big_len, n;
        const uint8_t *p;
        if (it->off < it->head_len) {
            p = it->head + it->off;
            n = it->head_len - it->off;
        } else {
            p = it->big + (it->off - it->head_len);
            n = total - it->off;
            if (n > MM_TLS_WRITE_CHUNK)
                n = MM_TLS_WRITE_CHUNK;
        }
        ERR_clear_error();
        int w = SSL_write(c->ssl, p, (int)n);
        if (w <= 0) {
            char eb[200];
            c->pumping = false;
            mm__conn_close(c, false, mm_tls_error(eb, sizeof eb));
            return;
        }
        it->off += (size_t)w;
        /* A frame's header goes out with the first records of its body, in
         * one write: a header of its own would be a write, a TCP segment
         * and a wake of the receiver for ~100 bytes, every chunk of a
         * stream. */
        if (it->off == it->head_len && it->big_len)
            continue;
        if (tls_flush(c) != 0) {
            c->pumping = false;
            mm__conn_close(c, false, "out of memory or write error");
            return;
        }
        if (it->off == total) {
            c->q_head = it->next;
            if (!c->q_head)
                c->q_tail = NULL;
            item_done(c, it, true);
        }
    }
    c->pumping = false;
    goodbye_sent(c);
}

/* ---- reads ---------------------------------------------------------------- */

/* "pushsum", "allreduce (halving schedule)", "algorithm 77" */
static void algo_words(uint8_t algo, uint8_t variant, char *out, size_t len)
{
    const char *name = mm_algo_name((mm_algo)algo);
    const char *v = name ? mm_algo_variant_name((mm_algo)algo, variant) : "";
    if (!name)
        snprintf(out, len, "algorithm %u", algo);
    else if (!v)
        snprintf(out, len, "%s (variant %u)", name, variant);
    else if (*v)
        snprintf(out, len, "%s (%s schedule)", name, v);
    else
        snprintf(out, len, "%s", name);
}

/* The n bytes of d in lower-case hex. */
static void hex(const uint8_t *d, int n, char *out)
{
    for (int i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* "topology differs: peer 0 loaded complete-4.topo (digest 06aa4d95a316...
 * [64 hex digits]), peer 1 loaded ring-4.topo (digest ee96c8c6...)": the
 * names say which files, the whole digests that they say different things
 * (a prefix could be the same for two digests). */
static void refuse_topology(conn *c, uint32_t id, const mm_wire_hello *hello)
{
    const mm_transport_config *cfg = &c->t->cfg;
    char a[65], b[65];
    hex(hello->topo_digest, 32, a);
    hex(cfg->topo_digest, 32, b);
    const char *mine = cfg->topo_name && cfg->topo_name[0] ? cfg->topo_name : "no topology";
    const char *theirs = hello->topo_name[0] ? hello->topo_name : "no topology";
    mm__conn_refuse(c, &c->t->st.bad_topology, "topology differs: peer %u loaded %s (digest "
                    "%s), peer %u loaded %s (digest %s): every peer must load the same "
                    "topology (peers, edges, weights, schedule, seed)", id, theirs, a,
                    cfg->self_id, mine, b);
}

/* The settings in which the HELLO's text differs from ours (docs/protocol.md
 * 3.1), as "peer A runs --k v, peer B runs --k w"; 0 when they are equal. */
static int settings_differ(const conn *c, const mm_wire_header *h, uint32_t id, char *out,
                           size_t outlen)
{
    const mm_transport *t = c->t;
    return mm_wire_settings_diff((const char *)c->rx.payload + MM_WIRE_HELLO_LEN,
                                 (size_t)h->payload_len - MM_WIRE_HELLO_LEN, id, t->settings,
                                 t->settings_len, t->cfg.self_id, out, outlen);
}

static void hello_received(conn *c, const mm_wire_header *h)
{
    mm_transport *t = c->t;
    const mm_transport_config *cfg = &t->cfg;
    mm_wire_hello hello;
    mm_wire_get_hello(c->rx.payload, &hello);
    uint32_t id = h->sender;
    if (id < cfg->n_peers && id != cfg->self_id)
        c->claimed = id; /* whose a refusal below is (mm__tr_refusal) */
    if (id >= cfg->n_peers || id == cfg->self_id)
        return mm__conn_refuse(c, &t->st.bad_identity, cfg->elastic ? "HELLO claims id %u, "
                           "not another peer id below this elastic cluster's --max-peers %u"
                           : "HELLO claims id %u, not another peer of this %u-peer cluster",
                           id, cfg->n_peers);
    if (c->cert_id >= 0 && (int64_t)id != c->cert_id)
        return mm__conn_refuse(c, &t->st.bad_identity, "HELLO claims to be peer %u but "
                           "the TLS certificate names peer %lld", id, (long long)c->cert_id);
    bool join = hello.flags & MM_HELLO_JOIN;
    if (join && c->dialer)
        return mm__conn_refuse(c, &t->st.bad_config, "peer %u answered a join session as a "
                           "joiner", id);
    if (join && !cfg->elastic)
        return mm__conn_refuse(c, &t->st.join_refused, "join refused: peer %u opened a join "
                           "session, but peer %u runs a static topology (a family topology "
                           "file makes a run elastic: docs/membership.md)", id, cfg->self_id);
    if (c->dialer && id != c->expect && !c->join)
        return mm__conn_refuse(c, &t->st.bad_identity, "dialled peer %u but peer %u "
                           "answered", c->expect, id);
    if (!c->dialer && !join && id > cfg->self_id)
        return mm__conn_refuse(c, &t->st.bad_identity, "peer %u dialled peer %u, but the "
                           "lower id dials", id, cfg->self_id);
    if (hello.target != cfg->self_id && !(join && hello.target == MM_WIRE_ANY_PEER))
        return mm__conn_refuse(c, &t->st.bad_identity, "HELLO from peer %u is addressed to "
                           "peer %u, this is peer %u", id, hello.target, cfg->self_id);
    /* A joiner claiming the id of a member connected here: two processes
     * would have one id (the member's certificate's, docs/membership.md
     * "Who may change what"). */
    if (join && t->peers[id].conn && t->peers[id].conn != c && t->peers[id].conn->st == C_UP &&
        !t->peers[id].conn->join)
        return mm__conn_refuse(c, &t->st.join_refused, "join refused: peer %u is a member "
                           "connected here (from %s); a joiner needs an id of its own", id,
                           t->peers[id].conn->src);
    c->join |= join;
    /* the settings that differ name the flags behind another model or
     * codec: the fingerprint and the codec's numbers only say that */
    char diff[MM_WIRE_REFUSE_MAX];
    if (memcmp(hello.fingerprint, cfg->fingerprint, 32) != 0) {
        char a[17], b[17];
        hex(hello.fingerprint, 8, a);
        hex(cfg->fingerprint, 8, b);
        if (settings_differ(c, h, id, diff, 300))
            return mm__conn_refuse(c, &t->st.bad_fingerprint, "model fingerprint differs: %s "
                                   "(fingerprints %s..., %s...)", diff, a, b);
        return mm__conn_refuse(c, &t->st.bad_fingerprint, "model fingerprint differs: "
                           "peer %u has %s..., peer %u has %s... (different model "
                           "config or size)", id, a, cfg->self_id, b);
    }
    if (hello.vec_len != cfg->vec_len)
        return mm__conn_refuse(c, &t->st.bad_fingerprint, "vector length differs: peer %u "
                           "has %llu floats, peer %u has %llu", id,
                           (unsigned long long)hello.vec_len, cfg->self_id,
                           (unsigned long long)cfg->vec_len);
    if (hello.algo != cfg->algo || hello.algo_variant != cfg->algo_variant) {
        char theirs[64], ours[64];
        algo_words(hello.algo, hello.algo_variant, theirs, sizeof theirs);
        algo_words(cfg->algo, cfg->algo_variant, ours, sizeof ours);
        return mm__conn_refuse(c, &t->st.bad_config, "algorithm differs: peer %u runs %s, peer "
                           "%u runs %s", id, theirs, cfg->self_id, ours);
    }
    /* (the fraction bit for bit: -0.0 is not 0) */
    if (hello.codec != cfg->codec || hello.codec_block != cfg->codec_block ||
        memcmp(&hello.codec_frac, &cfg->codec_frac, sizeof hello.codec_frac) != 0) {
        if (settings_differ(c, h, id, diff, 400))
            return mm__conn_refuse(c, &t->st.bad_config, "codec differs: %s", diff);
        return mm__conn_refuse(c, &t->st.bad_config, "codec differs: peer %u sends codec %u "
                           "(block %u, fraction %.17g), peer %u codec %u (block %u, fraction "
                           "%.17g)", id, hello.codec, hello.codec_block, hello.codec_frac,
                           cfg->self_id, cfg->codec, cfg->codec_block, cfg->codec_frac);
    }
    if (memcmp(hello.topo_digest, cfg->topo_digest, 32) != 0)
        return refuse_topology(c, id, &hello);
    int n_diff = settings_differ(c, h, id, diff, sizeof diff - 40);
    if (n_diff)
        return mm__conn_refuse(c, &t->st.bad_config, "%s: %s",
                               n_diff > 1 ? "settings differ" : "setting differs", diff);
    if (mm__tr_id_clash(t, c, id))
        return;
    if (!c->dialer)
        send_hello(c, id);
    c->peer = id;
    mm_link_stats *l = &t->peers[id].link;
#define MM_X(field) l->field += c->unbound.field;
    MM_LINK_COUNTERS(MM_X)
#undef MM_X
    c->unbound = (mm_link_stats){0};
    mm__tr_conn_up(t, c);
}

/* A JOIN (docs/protocol.md 7.2): only on a join session this peer
 * accepted, its payload checked to the byte. */
static void join_received(conn *c)
{
    mm_transport *t = c->t;
    const uint8_t *q = c->rx.ctrl;
    if (!c->join || c->dialer)
        return mm__conn_refuse(c, &t->st.bad_type, "JOIN outside a join session");
    uint32_t flags = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                     (uint32_t)q[3] << 24;
    size_t len = (size_t)q[4] | (size_t)q[5] << 8;
    bool zero = flags == 0 && q[6] == 0 && q[7] == 0;
    for (size_t i = 8 + len; zero && i < MM_WIRE_JOIN_LEN; i++)
        zero = q[i] == 0;
    if (!zero || len == 0 || len > MM_WIRE_ADDR_MAX)
        return mm__conn_refuse(c, &t->st.bad_length, "JOIN payload malformed (address "
                               "length %zu, reserved bytes not 0, or bytes after the "
                               "address)", len);
    char addr[MM_WIRE_ADDR_MAX + 1];
    for (size_t i = 0; i < len; i++) {
        if (q[8 + i] < 0x21 || q[8 + i] > 0x7e)
            return mm__conn_refuse(c, &t->st.bad_length, "JOIN address byte %zu is not "
                                   "printable ASCII", i);
        addr[i] = (char)q[8 + i];
    }
    addr[len] = 0;
    static const uint8_t none[32];
    if (t->cb.on_join)
        t->cb.on_join(t->cb.ud, (uint32_t)c->peer, addr, c->has_cert ? c->cert : none);
}

/* A STATE_REQ (docs/protocol.md 7.3): parts within the defined bits. */
static void state_req_received(conn *c)
{
    mm_transport *t = c->t;
    const uint8_t *q = c->rx.ctrl;
    uint32_t parts = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                     (uint32_t)q[3] << 24;
    bool zero = !q[4] && !q[5] && !q[6] && !q[7];
    if (!zero || !parts || (parts & ~(MM_STATE_PARAMS | MM_STATE_MOMENTS)))
        return mm__conn_refuse(c, &t->st.bad_type, "STATE_REQ parts 0x%x (or reserved "
                               "bytes not 0)", parts);
    if (t->cb.on_state_req)
        t->cb.on_state_req(t->cb.ud, (uint32_t)c->peer, parts);
}

static void frame_received(conn *c)
{
    mm_transport *t = c->t;
    const mm_wire_header *h = &c->rx.hdr;
    if (c->peer >= 0 && (int64_t)h->sender != c->peer)
        return mm__conn_refuse(c, &t->st.bad_identity, "frame claims sender %u on the "
                           "connection of peer %lld", h->sender, (long long)c->peer);
    switch (h->type) {
    case MM_WIRE_HELLO:
        hello_received(c, h);
        break;
    case MM_WIRE_REFUSE: {
        size_t n = (size_t)h->payload_len;
        char msg[MM_WIRE_REFUSE_MAX + 1];
        for (size_t i = 0; i < n; i++) /* printable only: it goes to a log */
            msg[i] = (c->rx.ctrl[i] >= 32 && c->rx.ctrl[i] < 127) ? (char)c->rx.ctrl[i] : '?';
        msg[n] = 0;
        mm_warn("%s refused us: %s", c->from, msg);
        mm__tr_refusal(t, c, mm_refusal_classify(msg), true, msg);
        /* Reasons that concern this peer's own identity (protocol.md,
         * "Refusals"): say what they mean here, and count the clash and
         * the topology that differs, which concern both sides alike. */
        if (!strncmp(msg, "two peers claim id", 18)) {
            t->st.id_clash++;
        } else if (!strncmp(msg, "topology differs", 16)) {
            t->st.bad_topology++; /* both sides count it (protocol.md 3.1) */
        } else if (!strncmp(msg, "TLS mismatch:", 13)) {
            t->st.tls_mismatch++;
            mm_warn("TLS mismatch: peer at %s speaks TLS but this peer runs --plaintext",
                    c->src);
        } else if (!strncmp(msg, "replaced by a newer connection", 30)) {
            mm_warn("%s replaced our connection with a newer one claiming our id %u, which "
                    "this peer did not open: is another peer running with --id %u?",
                    c->from, t->cfg.self_id, t->cfg.self_id);
        }
        mm__conn_close(c, false, "refused by the peer");
        break;
    }
    case MM_WIRE_PING:
        break;
    case MM_WIRE_BYE:
        c->got_bye = true;
        mm__conn_close(c, false, "the peer said goodbye");
        break;
    case MM_WIRE_VECTOR:
        mm__tr_vector(t, c, h, &c->rx.vec, c->rx.body,
                  (size_t)(h->payload_len - MM_WIRE_VEC_HDR));
        break;
    case MM_WIRE_MEMBERS:
        mm__tr_members(t, c, c->rx.payload, (size_t)h->payload_len);
        break;
    case MM_WIRE_JOIN:
        join_received(c);
        break;
    case MM_WIRE_STATE_REQ:
        state_req_received(c);
        break;
    }
}

static uint64_t *err_counter(mm_transport_stats *s, mm_wire_err e)
{
    switch (e) {
    case MM_WIRE_E_MAGIC: return &s->bad_magic;
    case MM_WIRE_E_VERSION: return &s->bad_version;
    case MM_WIRE_E_HDR_CRC: return &s->bad_checksum;
    case MM_WIRE_E_TYPE: return &s->bad_type;
    case MM_WIRE_E_LENGTH: return &s->bad_length;
    case MM_WIRE_E_CHECKSUM: return &s->bad_checksum;
    case MM_WIRE_E_VALUES: return &s->bad_values;
    case MM_WIRE_E_WEIGHT: return &s->bad_weight;
    case MM_WIRE_E_CODEC: return &s->bad_codec;
    case MM_WIRE_OK: break;
    }
    return NULL;
}

/* A TLS record header: content type 20..23 (change_cipher_spec, alert,
 * handshake, application_data), then version major 3, minor 0..4. */
static bool looks_like_tls(const uint8_t *p)
{
    return p[0] >= 0x14 && p[0] <= 0x17 && p[1] == 0x03 && p[2] <= 0x04;
}

/* n new bytes sit where mm_wire_rx_want() pointed. */
static void rx_bytes(conn *c, size_t n, bool was_busy)
{
    if (!was_busy)
        c->t_frame_start = mm_now_ms(c->t);
    mm_rx_event ev = mm_wire_rx_advance(&c->rx, n);
    if (ev == MM_RX_FRAME)
        frame_received(c);
    else if (ev == MM_RX_ERROR && c->rx.err == MM_WIRE_E_MAGIC && !c->ssl &&
             !c->rx.hello_done && looks_like_tls(c->rx.hdr_raw))
        /* not just any bad magic: the two sides disagree about TLS */
        mm__conn_refuse(c, &c->t->st.tls_mismatch, "TLS mismatch: peer at %s speaks TLS but this "
                    "peer runs --plaintext", c->src);
    else if (ev == MM_RX_ERROR)
        mm__conn_refuse(c, err_counter(&c->t->st, c->rx.err), "%s: %s",
                    mm_wire_err_name(c->rx.err), c->rx.why);
}

static void raw_write_cb(uv_write_t *req, int status)
{
    (void)status;
    free(req->data);
}

/* A TLS connection whose peer speaks plaintext murmur: the reason goes out
 * as a plaintext REFUSE frame beside OpenSSL, so the peer can read it. */
static void send_plain_refuse(conn *c, const char *msg)
{
    struct raw { uv_write_t req; uint8_t buf[MM_WIRE_HDR_LEN + MM_WIRE_REFUSE_MAX]; } *r;
    size_t len = strlen(msg);
    if (len > MM_WIRE_REFUSE_MAX)
        len = MM_WIRE_REFUSE_MAX;
    if (!(r = malloc(sizeof *r)))
        return;
    mm_wire_header h = {.type = MM_WIRE_REFUSE, .sender = c->t->cfg.self_id,
                        .exchange = c->t->exchange, .payload_len = len,
                        .payload_crc = mm_crc32c(0, msg, len)};
    mm_wire_put_header(r->buf, &h);
    memcpy(r->buf + MM_WIRE_HDR_LEN, msg, len);
    r->req.data = r;
    uv_buf_t b = uv_buf_init((char *)r->buf, (unsigned)(MM_WIRE_HDR_LEN + len));
    if (uv_write(&r->req, stream(c), &b, 1, raw_write_cb) != 0)
        free(r);
}

/* TLS, before any byte reached OpenSSL: "MRMR" where a TLS record belongs
 * means the peer runs --plaintext. Returns true when c was refused. */
static bool tls_sniff_plain(conn *c)
{
    const uint8_t *p = c->netbuf + c->in_off;
    static const uint8_t magic[4] = {'M', 'R', 'M', 'R'};
    if (c->in_len >= 4 && memcmp(p, magic, 4) == 0) {
        char msg[MM_WIRE_REFUSE_MAX], said[MM_WIRE_REFUSE_MAX + 16] = "";
        snprintf(msg, sizeof msg, "TLS mismatch: peer at %s speaks plaintext murmur (MRMR) "
                 "but this peer expects TLS", c->src);
        /* a plaintext acceptor has usually refused us already: say what it said */
        mm_wire_header h;
        char why[160];
        bool hdr = c->in_len >= MM_WIRE_HDR_LEN &&
                   mm_wire_get_header(p, false, 0, &h, why, sizeof why) == MM_WIRE_OK;
        /* a plaintext dialler's HELLO names it (unauthenticated, as
         * everything over plaintext) */
        if (hdr && !c->dialer && h.type == MM_WIRE_HELLO && h.sender < c->t->cfg.n_peers &&
            h.sender != c->t->cfg.self_id)
            c->claimed = h.sender;
        if (hdr && h.type == MM_WIRE_REFUSE && h.payload_len <= c->in_len - MM_WIRE_HDR_LEN) {
            size_t k = (size_t)h.payload_len, o = 0;
            o += (size_t)snprintf(said, sizeof said, " (it said: ");
            for (size_t i = 0; i < k && o + 3 < sizeof said; i++) {
                uint8_t ch = p[MM_WIRE_HDR_LEN + i];
                said[o++] = ch >= 32 && ch < 127 ? (char)ch : '?';
            }
            said[o++] = ')';
            said[o] = 0;
        }
        c->t->st.tls_mismatch++;
        mm_warn("refused %s: %s%s", c->from, msg, said);
        mm__tr_refusal(c->t, c, MM_REFUSAL_TLS_MISMATCH, said[0] != 0, msg);
        if (!c->dialer)
            send_plain_refuse(c, msg);
        mm__conn_close(c, true, msg);
        return true;
    }
    if (c->in_len >= 4 || memcmp(p, magic, c->in_len) != 0)
        c->sniffed = true; /* not ours: OpenSSL judges it */
    return false;
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    conn *c = h->data;
    if (c->ssl) {
        /* keep what OpenSSL has not taken yet (only after a pause) */
        if (c->in_len && c->in_off)
            memmove(c->netbuf, c->netbuf + c->in_off, c->in_len);
        c->in_off = 0;
        buf->base = (char *)c->netbuf + c->in_len;
        buf->len = MM_TLS_READ_BUF - c->in_len;
        return;
    }
    /* Plaintext reads land exactly where the decoder wants them: headers in
     * the header buffer, a vector straight into its receive buffer. */
    uint8_t *p;
    size_t len;
    mm_wire_rx_want(&c->rx, &p, &len);
    buf->base = (char *)p;
    buf->len = len;
}

static void tls_handshake(conn *c)
{
    mm_transport *t = c->t;
    /* OpenSSL's error queue is per thread and shared by every connection:
     * a stale entry would make SSL_get_error() blame this one. */
    ERR_clear_error();
    int r = SSL_do_handshake(c->ssl);
    tls_flush(c);
    if (r != 1) {
        int e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            return;
        char eb[256];
        long vr = SSL_get_verify_result(c->ssl);
        if (vr != X509_V_OK) {
            ERR_clear_error();
            mm__conn_refuse(c, &t->st.bad_tls, "TLS handshake failed: certificate "
                        "rejected: %s", X509_verify_cert_error_string(vr));
        }
        else
            mm__conn_refuse(c, &t->st.bad_tls, "TLS handshake failed: %s",
                        mm_tls_error(eb, sizeof eb));
        return;
    }
    uint32_t id;
    char why[200];
    if (mm_tls_peer_id(c->ssl, &id, why, sizeof why) != 0) {
        mm__conn_set_state(c, C_HELLO); /* let the refusal through the TLS channel */
        return mm__conn_refuse(c, &t->st.bad_identity, "%s", why);
    }
    c->cert_id = id;
    c->has_cert = mm_tls_peer_cert_digest(c->ssl, c->cert) == 0;
    mm__conn_set_state(c, C_HELLO);
    if (c->dialer) {
        /* (a join session dials whichever member listens there) */
        if (id != c->expect && c->expect != MM_WIRE_ANY_PEER)
            return mm__conn_refuse(c, &t->st.bad_identity, "dialled peer %u but its "
                               "certificate names peer %u", c->expect, id);
        send_hello(c, c->expect);
    }
}

static void tls_drain(conn *c)
{
    if (c->draining)
        return; /* the outer drain goes on (e.g. a release in on_vector) */
    c->draining = true;
    if (c->st == C_TLS)
        tls_handshake(c);
    while (c->st >= C_HELLO && c->st != C_CLOSING && !c->paused) {
        uint8_t *p;
        size_t len;
        mm_wire_rx_want(&c->rx, &p, &len);
        if (len > (1U << 30))
            len = 1U << 30;
        bool busy = mm_wire_rx_busy(&c->rx);
        ERR_clear_error();
        int n = SSL_read(c->ssl, p, (int)len);
        if (n <= 0) {
            int e = SSL_get_error(c->ssl, n);
            if (e == SSL_ERROR_WANT_READ)
                break;
            if (e == SSL_ERROR_ZERO_RETURN) {
                mm__conn_close(c, false, "the peer closed TLS");
            } else {
                char eb[256];
                mm__conn_refuse(c, &c->t->st.bad_tls, "TLS error: %s",
                            mm_tls_error(eb, sizeof eb));
            }
            break;
        }
        rx_bytes(c, (size_t)n, busy);
    }
    c->draining = false;
    if (c->st != C_CLOSING)
        tls_flush(c);
    tls_pump(c);
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    conn *c = s->data;
    if (nread == 0 || c->st == C_CLOSING)
        return;
    if (nread < 0) {
        if (c->rx.got || c->rx.in_payload)
            mm_warn("connection %s ended in the middle of a frame", c->from);
        mm__conn_close(c, false, nread == UV_EOF ? "closed by the peer" : uv_strerror((int)nread));
        return;
    }
    mm_transport *t = c->t;
    t->st.bytes_recv += (uint64_t)nread;
    link_of(c)->bytes_recv += (uint64_t)nread;
    c->t_last_recv = mm_now_ms(t);
    if (!c->ssl) {
        /* busy is judged before these bytes were counted */
        bool busy = c->rx.in_payload || c->rx.got > 0;
        rx_bytes(c, (size_t)nread, busy);
        return;
    }
    c->in_len += (size_t)nread; /* bytes at netbuf + in_off, see alloc_cb */
    if (c->st == C_TLS && !c->sniffed && (tls_sniff_plain(c) || !c->sniffed))
        return; /* refused, or fewer than 4 bytes that may still be "MRMR" */
    tls_drain(c);
}

static void start_reading(conn *c)
{
    if (c->reading || c->paused || c->st == C_CLOSING)
        return;
    if (uv_read_start(stream(c), alloc_cb, read_cb) == 0)
        c->reading = true;
}

void mm__conn_pause(conn *c)
{
    c->paused = true;
    if (c->reading) {
        uv_read_stop(stream(c));
        c->reading = false;
    }
}

void mm__conn_resume(conn *c)
{
    if (!c->paused || c->leaving) /* a peer being left stays unread */
        return;
    c->paused = false;
    c->t_last_recv = mm_now_ms(c->t);
    if (c->st == C_CLOSING)
        return;
    start_reading(c);
    /* Records OpenSSL already holds would otherwise wait for more socket
     * data; drain them now (inside a drain, the outer loop goes on). */
    if (c->ssl)
        tls_drain(c);
}

/* The owner's say where a body goes (vector_dst), once the peer is up. */
static void *body_dst(void *ud, const mm_wire_header *h, const mm_wire_vec *v, size_t body_len)
{
    conn *c = ud;
    mm_transport *t = c->t;
    if (c->st != C_UP || c->peer < 0)
        return NULL;
    return t->cb.vector_dst(t->cb.ud, (uint32_t)c->peer, h->exchange, v, body_len);
}

void mm__conn_start(conn *c)
{
    mm_transport *t = c->t;
    uv_tcp_nodelay(&c->tcp, 1);
    c->rx.body_dst = t->cb.vector_dst ? body_dst : NULL;
    c->rx.body_ud = c;
    c->rx.weight_ok = t->cfg.weight_ok;
    c->rx.weight_ud = t->cfg.weight_ud;
    c->rx.codec = t->cfg.codec;
    c->rx.max_body = t->cfg.max_body;
    c->rx.allow_chunks = t->cfg.allow_chunks;
    c->rx.fragments = t->cfg.fragments;
    c->rx.copies = t->cfg.copies;
    c->rx.streams = t->cfg.copies && t->cfg.streams;
    if (t->cfg.elastic) {
        c->members_buf = malloc(t->cfg.max_members);
        if (!c->members_buf) {
            mm__conn_close(c, false, "out of memory for a membership table");
            return;
        }
        c->rx.max_members = t->cfg.max_members;
        c->rx.members_buf = c->members_buf;
    }
    mm_wire_rx_init(&c->rx);
    if (!t->ctx) {
        mm__conn_set_state(c, C_HELLO);
        if (c->dialer)
            send_hello(c, c->expect);
        start_reading(c);
        return;
    }
    c->netbuf = malloc(MM_TLS_READ_BUF);
    c->ssl = SSL_new(t->ctx);
    BIO *bio = c->ssl ? mm__conn_bio_new(c) : NULL;
    if (!c->netbuf || !bio) {
        mm__conn_close(c, false, "out of memory for TLS");
        return;
    }
    SSL_set_bio(c->ssl, bio, bio); /* one BIO both ways: one reference */
    c->rx.no_payload_crc = true;
    mm__conn_set_state(c, C_TLS);
    if (c->dialer)
        SSL_set_connect_state(c->ssl);
    else
        SSL_set_accept_state(c->ssl);
    start_reading(c);
    if (c->dialer)
        tls_handshake(c);
}
