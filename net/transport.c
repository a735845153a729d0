/* The transport's peers and timers: who is wanted, who dials (the lower
 * id), reconnect back-off with jitter, heartbeats, silence and frame
 * timeouts, idle closing, and the public API. One periodic timer drives all
 * deadlines, so no per-connection timer handles have to be managed. */
#include "net/transport_int.h"
#include "base/log.h"
#include "net/ports.h"
#include "net/tls.h"

#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t mm_now_ms(mm_transport *t) { return uv_now(t->loop); }

static uint32_t jitter(mm_transport *t, uint32_t ms)
{
    t->rng ^= t->rng << 13;
    t->rng ^= t->rng >> 7;
    t->rng ^= t->rng << 17;
    /* uniform in [ms/2, 3ms/2): peers that failed together retry apart */
    return ms / 2 + (uint32_t)(t->rng % (ms + 1));
}

/* host:port or [v6]:port into out. A name with addresses of both families
 * gives the first of family `prefer` (AF_UNSPEC: the resolver's first):
 * a peer that listens on 0.0.0.0 is reached over IPv4 even where its name
 * resolves to ::1 first (a minimal Debian without /etc/hosts does that for
 * localhost). */
static int parse_addr(const char *s, int prefer, struct sockaddr_storage *out, char *err,
                      size_t errlen)
{
    char host[256], port[16];
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || strlen(colon + 1) == 0 || strlen(colon + 1) >= sizeof port ||
        (size_t)(colon - s) >= sizeof host) {
        snprintf(err, errlen, "address \"%s\" is not host:port", s);
        return -1;
    }
    size_t hl = (size_t)(colon - s);
    if (s[0] == '[' && hl >= 2 && s[hl - 1] == ']') { /* [v6]:port */
        memcpy(host, s + 1, hl - 2);
        host[hl - 2] = 0;
    } else {
        memcpy(host, s, hl);
        host[hl] = 0;
    }
    strcpy(port, colon + 1);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV}, *res = NULL;
    /* Resolved once at creation, before the loop runs, never on the loop. */
    int r = getaddrinfo(host, port, &hints, &res);
    if (r != 0 || !res) {
        snprintf(err, errlen, "address \"%s\": %s", s, gai_strerror(r));
        return -1;
    }
    const struct addrinfo *pick = res;
    for (const struct addrinfo *a = res; prefer != AF_UNSPEC && a; a = a->ai_next)
        if (a->ai_family == prefer) {
            pick = a;
            break;
        }
    memcpy(out, pick->ai_addr, pick->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

static void sockname(const struct sockaddr_storage *ss, char *ip, size_t iplen, int *port)
{
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        uv_ip6_name(a, ip, iplen);
        *port = ntohs(a->sin6_port);
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        uv_ip4_name(a, ip, iplen);
        *port = ntohs(a->sin_port);
    }
}

/* An IPv4 address as an IPv6 listener sees it (::ffff:a.b.c.d) is a.b.c.d. */
static const char *plain_ip(const char *ip)
{
    return strncmp(ip, "::ffff:", 7) == 0 && strchr(ip + 7, '.') ? ip + 7 : ip;
}

/* ---- callbacks from conn.c ---------------------------------------------- */

/* An accepted connection refused before it named anyone: the one lower-id
 * peer (only those dial us) at its source address that is wanted and not
 * up, or -1 when there is none or more than one. */
static int64_t peer_by_address(const mm_transport *t, const conn *c)
{
    int64_t found = -1;
    for (uint32_t i = 0; i < t->cfg.self_id; i++) {
        const peer *p = &t->peers[i];
        if (!p->addr_ok || !p->wanted || p->conn)
            continue;
        char ip[INET6_ADDRSTRLEN];
        int port;
        sockname(&p->addr, ip, sizeof ip, &port);
        if (strcmp(plain_ip(ip), plain_ip(c->ip)) != 0)
            continue;
        if (found >= 0)
            return -1;
        found = i;
    }
    return found;
}

void mm__tr_refusal(mm_transport *t, const conn *c, mm_refusal_code code, bool by_peer,
                    const char *text)
{
    if (t->shutting_down)
        return;
    mm_refusal r = {.code = code, .by_peer = by_peer, .dialled = c->dialer};
    snprintf(r.src, sizeof r.src, "%s", c->src);
    /* whose: the dialled id, the bound id, the certificate's, the claimed */
    int64_t id = c->dialer ? (int64_t)c->expect : c->peer >= 0 ? c->peer
                 : c->cert_id >= 0 ? c->cert_id : c->claimed;
    if (id < 0 || id >= (int64_t)t->cfg.n_peers || id == (int64_t)t->cfg.self_id) {
        id = c->dialer ? -1 : peer_by_address(t, c);
        r.by_address = id >= 0;
    }
    r.peer = id >= 0 ? (uint32_t)id : MM_PEER_UNKNOWN;
    /* The mismatch in this peer's terms, without the address (the log has
     * it): which side runs what is all the reader needs. */
    if (code == MM_REFUSAL_TLS_MISMATCH)
        text = t->ctx ? "TLS mismatch: it speaks plaintext murmur but this peer expects TLS"
                      : "TLS mismatch: it speaks TLS but this peer runs --plaintext";
    snprintf(r.text, sizeof r.text, "%s", text);
    if (id >= 0) {
        t->peers[id].refusal = r;
        t->peers[id].has_refusal = true;
    }
    if (t->cb.on_refused)
        t->cb.on_refused(t->cb.ud, &r);
}

/* Whether the other end of c has closed its side: a FIN (or an error)
 * is in the socket, read or not. A peer that redials has closed the
 * connection its new one replaces, even when we have not read that far
 * (we were not reading it: its vector lent, our process stopped); a
 * second process with its id has not. */
static bool hung_up(conn *c)
{
    uv_os_fd_t fd;
    if (uv_fileno((const uv_handle_t *)&c->tcp, &fd) != 0)
        return true;
    struct pollfd pf = {.fd = fd, .events = POLLIN | POLLRDHUP};
    return poll(&pf, 1, 0) == 1 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

bool mm__tr_id_clash(mm_transport *t, conn *c, uint32_t id)
{
    peer *p = &t->peers[id];
    uint64_t now = mm_now_ms(t);
    if (now < p->clash_until) {
        mm__conn_refuse(c, &t->st.id_clash, "two peers claim id %u (connections from %s and "
                    "%s replaced each other); id %u is refused for %llu s more", id,
                    p->clash_srcs[0], p->clash_srcs[1], id,
                    (unsigned long long)((p->clash_until - now + 999) / 1000));
        return true;
    }
    conn *old = p->conn;
    if (c->dialer || !old || old == c || old->st != C_UP || old->leaving || hung_up(old))
        return false;
    /* A live connection of this peer is about to be replaced: a restart
     * whose old connection we have not seen die does that once; two
     * processes with one id do it again and again, each redialling as
     * soon as the other replaced it. */
    if (now - p->replace_since > MM_ID_CLASH_WINDOW_MS) {
        p->replace_since = now;
        p->replaces = 0;
    }
    if (++p->replaces < MM_ID_CLASH_REPLACES)
        return false;
    snprintf(p->clash_srcs[0], sizeof p->clash_srcs[0], "%s", old->src);
    snprintf(p->clash_srcs[1], sizeof p->clash_srcs[1], "%s", c->src);
    p->clash_until = now + MM_ID_CLASH_HOLD_MS;
    p->replaces = 0;
    mm_warn("two peers claim id %u: connections from %s and %s replaced each other %u "
            "times within %llu ms; refusing id %u for %d s (is a peer started twice "
            "with --id %u?)", id, old->src, c->src, (unsigned)MM_ID_CLASH_REPLACES,
            (unsigned long long)(now - p->replace_since), id, MM_ID_CLASH_HOLD_MS / 1000, id);
    mm__conn_refuse(c, &t->st.id_clash, "two peers claim id %u (connections from %s and %s "
                "replaced each other); id %u is refused for %d s", id, old->src, c->src, id,
                MM_ID_CLASH_HOLD_MS / 1000);
    mm__conn_refuse(old, &t->st.id_clash, "two peers claim id %u (connections from %s and %s "
                "replaced each other); id %u is refused for %d s", id, old->src, c->src, id,
                MM_ID_CLASH_HOLD_MS / 1000);
    return true;
}

void mm__tr_conn_up(mm_transport *t, conn *c)
{
    peer *p = &t->peers[c->peer];
    if (!p->rxbuf) {
        p->rxbuf = malloc(MM_WIRE_VEC_HDR + t->cfg.max_body);
        if (!p->rxbuf) {
            c->peer = -1;
            mm__conn_close(c, false, "out of memory for the receive buffer");
            return;
        }
    }
    if (p->conn && p->conn != c) {
        /* (a restart whose old connection we had not seen die yet) The old
         * side is told why: if it is alive, another process has its id. */
        mm_info("peer %u connected again from %s; dropping its previous connection (%s)",
                p->id, c->src, p->conn->src);
        conn *old = p->conn;
        p->conn = NULL;
        old->peer = -1;
        mm__conn_refuse(old, NULL, "replaced by a newer connection from peer %u (%s)", p->id,
                    c->src);
    }
    char ip[INET6_ADDRSTRLEN];
    snprintf(ip, sizeof ip, "%s", c->ip);
    snprintf(c->from, sizeof c->from, "peer %u (%s)", p->id, ip);
    if (c->dialer)
        p->dialing = NULL;
    p->conn = c;
    p->backoff = t->cfg.backoff_min_ms;
    p->reported_down = false;
    p->last_used = mm_now_ms(t);
    c->rx.hello_done = true;
    c->rx.vec_len = t->cfg.vec_len;
    c->rx.vec_buf = p->rxbuf;
    mm__conn_set_state(c, C_UP);
    c->was_up = true;
    c->t_last_recv = mm_now_ms(t);
    mm_info("connection to %s is up (%s)", c->from,
            c->ssl ? SSL_get_cipher_name(c->ssl) : "PLAINTEXT");
    if (p->lent)
        mm__conn_pause(c);
    if (t->cb.on_peer)
        t->cb.on_peer(t->cb.ud, p->id, MM_PEER_UP);
}

void mm__tr_conn_closed(mm_transport *t, conn *c)
{
    uint64_t now = mm_now_ms(t);
    if (c->peer >= 0) {
        peer *p = &t->peers[c->peer];
        if (p->conn == c) {
            p->conn = NULL;
            t->st.conns_closed++;
            p->reported_down = true;
            p->want_since = now;
            /* A peer we refused for what it sent is redialled ever more
             * slowly (min << strikes, at most backoff_max), not every
             * 100 ms: hammering it gains nothing, and a fast redial can
             * reach it before it has read our REFUSE, so that it counts a
             * replaced live connection towards an id clash. */
            uint32_t wait = t->cfg.backoff_min_ms;
            if (c->was_up && c->we_refused) {
                if (p->strikes < 16)
                    p->strikes++;
                uint64_t w = (uint64_t)t->cfg.backoff_min_ms << p->strikes;
                wait = w > t->cfg.backoff_max_ms ? t->cfg.backoff_max_ms : (uint32_t)w;
            }
            if (c->dialer)
                p->next_dial = now + jitter(t, wait);
            if (!t->shutting_down && t->cb.on_peer)
                t->cb.on_peer(t->cb.ud, p->id, c->got_bye ? MM_PEER_BYE : MM_PEER_DOWN);
        }
    }
    if (c->dialer && c->join) { /* a join session: nobody's dial to retry */
        if (!c->was_up && !t->shutting_down && t->cb.on_peer)
            mm_warn("join session to %s failed", c->src);
    } else if (c->dialer) {
        peer *p = &t->peers[c->expect];
        if (p->dialing == c)
            p->dialing = NULL;
        if (!c->was_up) { /* the dial never came up */
            p->next_dial = now + jitter(t, p->backoff);
            p->backoff = p->backoff * 2 > t->cfg.backoff_max_ms ? t->cfg.backoff_max_ms
                                                                : p->backoff * 2;
            if (!p->reported_down && p->wanted && !t->shutting_down) {
                p->reported_down = true;
                mm_warn("peer %u is unreachable; retrying with back-off", p->id);
                if (t->cb.on_peer)
                    t->cb.on_peer(t->cb.ud, p->id, MM_PEER_DOWN);
            }
        }
    }
}

void mm__tr_members(mm_transport *t, conn *c, const uint8_t *payload, size_t len)
{
    peer *p = &t->peers[c->peer];
    p->last_used = mm_now_ms(t);
    if (t->cb.on_members)
        t->cb.on_members(t->cb.ud, (uint32_t)c->peer, payload, len);
}

void mm__tr_vector(mm_transport *t, conn *c, const mm_wire_header *h, const mm_wire_vec *meta,
               const uint8_t *body, size_t body_len)
{
    if (t->senders && !t->senders[c->peer])
        return mm__conn_refuse(c, &t->st.not_neighbour, "vector from peer %u, which is no "
                               "in-neighbour of peer %u in any round of the topology",
                               (unsigned)c->peer, t->cfg.self_id);
    /* A STATE vector is of the donor's exchange, whatever ours is (a joiner
     * has none yet): no window (docs/protocol.md 7.3). */
    bool state = meta->flags & MM_VEC_STATE;
    uint64_t w = t->cfg.round_window, cur = t->exchange;
    uint64_t lo = cur > w ? cur - w : 0, hi = cur + w < cur ? UINT64_MAX : cur + w;
    if (!state && (h->exchange < lo || h->exchange > hi))
        return mm__conn_refuse(c, &t->st.bad_round, "vector for exchange %llu is outside "
                               "the window [%llu, %llu]", (unsigned long long)h->exchange,
                               (unsigned long long)lo, (unsigned long long)hi);
    /* A body in the negotiated codec is checked whole before anyone may
     * apply it, by the owner's check_body (the transport knows no codec).
     * The wire checked fp32 bodies as they arrived. */
    char why[200];
    if (t->cfg.check_body && meta->codec != MM_WIRE_CODEC_FP32 &&
        t->cfg.check_body(t->cfg.check_ud, meta, body, body_len, why, sizeof why) != 0)
        return mm__conn_refuse(c, &t->st.bad_codec, "%s body from peer %u refused: %s",
                               t->cfg.codec_name ? t->cfg.codec_name : "codec",
                               (unsigned)c->peer, why);
    peer *p = &t->peers[c->peer];
    p->strikes = 0; /* it sends what we accept again */
    p->lent = true;
    p->last_used = mm_now_ms(t);
    mm__conn_pause(c);
    t->st.vectors_recv++;
    p->link.vectors_recv++;
    if (t->cb.on_vector)
        t->cb.on_vector(t->cb.ud, p->id, h->exchange, meta, body, body_len);
}

void mm__tr_handle_closed(mm_transport *t)
{
    t->handles--;
    if (t->shutting_down && t->handles == 0 && t->done)
        t->done(t->done_ud);
}

/* ---- dialling, accepting, the tick -------------------------------------- */

static void on_connect(uv_connect_t *req, int status)
{
    conn *c = req->data;
    if (c->st == C_CLOSING)
        return;
    if (status < 0) {
        char why[120];
        snprintf(why, sizeof why, "connect failed: %s", uv_strerror(status));
        mm__tr_refusal(c->t, c, MM_REFUSAL_UNREACHABLE, false, why);
        mm__conn_close(c, false, why);
        return;
    }
    mm__conn_start(c);
}

static void dial(mm_transport *t, peer *p)
{
    conn *c = mm__conn_new(t);
    if (!c)
        return;
    c->dialer = true;
    c->expect = p->id;
    int port;
    sockname(&p->addr, c->ip, sizeof c->ip, &port);
    snprintf(c->from, sizeof c->from, "peer %u (%s:%d, dialled)", p->id, c->ip, port);
    snprintf(c->src, sizeof c->src, "%s:%d", c->ip, port);
    p->dialing = c;
    t->st.conns_dialed++;
    c->creq.data = c;
    int r = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&p->addr, on_connect);
    if (r) {
        char why[120];
        snprintf(why, sizeof why, "connect failed: %s", uv_strerror(r));
        mm__tr_refusal(t, c, MM_REFUSAL_UNREACHABLE, false, why);
        mm__conn_close(c, false, why);
    }
}

static bool is_dialer_ip(const mm_transport *t, const char *ip)
{
    ip = plain_ip(ip);
    for (uint32_t i = 0; i < t->n_dialer_ips; i++)
        if (strcmp(t->dialer_ips[i], ip) == 0)
            return true;
    return false;
}

uint32_t mm_transport_default_max_pending(uint32_t n_peers)
{
    struct rlimit rl;
    double nofile = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        nofile = rl.rlim_cur == RLIM_INFINITY ? 1048576.0 : (double)rl.rlim_cur;
    double cap = (nofile - 64 - 2.0 * n_peers) / 2;
    return cap < 16 ? 16 : cap > 1024 ? 1024 : (uint32_t)cap;
}

static void on_connection(uv_stream_t *server, int status)
{
    mm_transport *t = server->data;
    if (t->shutting_down)
        return;
    if (status < 0) {
        /* an accept() error libuv passes on (out of descriptors it mostly
         * drops connections without a word: the cap is there so that it
         * does not happen); count it, log at most once a second */
        t->st.pending_refused++;
        uint64_t now = mm_now_ms(t);
        if (now - t->accept_err_logged >= 1000 || !t->accept_err_logged) {
            t->accept_err_logged = now;
            mm_warn("cannot accept a connection: %s (%llu refused so far for the "
                    "pending-connection cap or this)", uv_strerror(status),
                    (unsigned long long)t->st.pending_refused);
        }
        return;
    }
    conn *c = mm__conn_new(t);
    if (!c)
        return;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        mm__conn_close(c, false, "accept failed");
        return;
    }
    struct sockaddr_storage ss;
    int len = sizeof ss, port = 0;
    memset(&ss, 0, sizeof ss);
    uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len);
    sockname(&ss, c->ip, sizeof c->ip, &port);
    snprintf(c->from, sizeof c->from, "%s:%d", c->ip, port);
    snprintf(c->src, sizeof c->src, "%s:%d", c->ip, port);
    t->st.conns_accepted++;
    /* Connections not yet past the HELLO cost memory, a descriptor and a
     * TLS handshake each: cap them per source address, and all those from
     * addresses that are no lower-id peer's together. A peer's address
     * keeps its own per-address quota outside the global cap, so a flood
     * from other addresses never locks a neighbour out. */
    uint32_t pending = 0, pending_others = 0;
    c->from_peer = is_dialer_ip(t, c->ip);
    for (conn *o = t->conns; o; o = o->next) {
        if (o == c || o->dialer || o->st == C_UP || o->st == C_CLOSING)
            continue;
        if (strcmp(o->ip, c->ip) == 0)
            pending++;
        if (!o->from_peer)
            pending_others++;
    }
    if (pending >= t->cfg.max_conns_per_addr) {
        t->st.flood_refused++;
        mm_warn("refused %s: %u unauthenticated connections from %s already (flood)",
                c->from, pending, c->ip);
        mm__conn_close(c, false, "connection flood");
        return;
    }
    if (!c->from_peer && pending_others >= t->cfg.max_pending_conns) {
        t->st.pending_refused++;
        mm_warn("refused %s: %u unauthenticated connections from addresses that are no "
                "peer's already (--max-pending %u)", c->from, pending_others,
                t->cfg.max_pending_conns);
        mm__conn_close(c, false, "pending-connection cap");
        return;
    }
    mm__conn_start(c);
}

static void on_handle_closed(uv_handle_t *h);

static void tick(uv_timer_t *timer)
{
    mm_transport *t = timer->data;
    const mm_transport_config *cfg = &t->cfg;
    uint64_t now = mm_now_ms(t);
    for (conn *c = t->conns, *next; c; c = next) {
        next = c->next;
        if (c->st == C_CLOSING) {
            if (now - c->t_close > MM_CLOSE_GRACE_MS)
                mm__conn_force_close(c);
            continue;
        }
        if (c->leaving) { /* its last frame and BYE could not go out in time */
            if (now - c->t_close > MM_CLOSE_GRACE_MS)
                mm__conn_close(c, false, "goodbye not sent within the grace period");
            continue;
        }
        bool busy = mm_wire_rx_busy(&c->rx);
        /* A big vector on a slow link is not an attack: allow 1 ms per KiB
         * (1 MB/s) on top of frame_timeout_ms once its length is known. */
        uint64_t limit = cfg->frame_timeout_ms +
                         (c->rx.in_payload ? c->rx.hdr.payload_len >> 10 : 0);
        if (busy && !c->paused && now - c->t_frame_start > limit) {
            mm__conn_refuse(c, &t->st.frame_timeouts, "frame started %llu ms ago is still "
                        "incomplete (frame timeout)",
                        (unsigned long long)(now - c->t_frame_start));
            continue;
        }
        if (c->st != C_UP) {
            if (now - c->t_start > cfg->connect_timeout_ms)
                mm__conn_refuse(c, &t->st.peer_timeouts, "no completed handshake after %u ms",
                            cfg->connect_timeout_ms);
            continue;
        }
        if (!c->paused && now - c->t_last_recv > cfg->peer_timeout_ms) {
            mm__conn_refuse(c, &t->st.peer_timeouts, "silent for %llu ms (peer timeout)",
                        (unsigned long long)(now - c->t_last_recv));
            continue;
        }
        peer *p = &t->peers[c->peer];
        if (!p->wanted && now - p->last_used > cfg->idle_ms) {
            mm__conn_goodbye(c, "idle");
            continue;
        }
        if (now - c->t_last_send >= cfg->heartbeat_ms)
            mm__conn_send_ping(c);
    }
    if (t->shutting_down) {
        /* the tick outlives the connections' goodbyes, then goes too */
        if (!t->conns && !uv_is_closing((uv_handle_t *)&t->tick)) {
            uv_timer_stop(&t->tick);
            uv_close((uv_handle_t *)&t->tick, on_handle_closed);
        }
        return;
    }
    for (uint32_t i = 0; i < cfg->n_peers; i++) {
        peer *p = &t->peers[i];
        if (!p->wanted || p->conn)
            continue;
        if (i > cfg->self_id) {
            if (!p->dialing && p->addr_ok && now >= p->next_dial)
                dial(t, p);
        } else if (i < cfg->self_id && !p->reported_down &&
                   now - p->want_since > cfg->connect_timeout_ms) {
            /* It should dial us and has not: tell the caller, keep waiting. */
            p->reported_down = true;
            mm_warn("peer %u has not connected within %u ms", i, cfg->connect_timeout_ms);
            if (t->cb.on_peer)
                t->cb.on_peer(t->cb.ud, i, MM_PEER_DOWN);
        }
    }
}

/* ---- deferred CRCs of large outgoing payloads ---------------------------- */

static void crc_slice(uv_idle_t *h);

void mm__tr_crc_enqueue(mm_transport *t, out_item *it)
{
    it->crc_next = NULL;
    if (t->crc_tail)
        t->crc_tail->crc_next = it;
    else
        t->crc_head = it;
    t->crc_tail = it;
    if (!uv_is_active((uv_handle_t *)&t->crc_idle))
        uv_idle_start(&t->crc_idle, crc_slice);
}

void mm__tr_crc_remove(mm_transport *t, out_item *it)
{
    out_item *prev = NULL;
    for (out_item *x = t->crc_head; x; prev = x, x = x->crc_next)
        if (x == it) {
            if (prev)
                prev->crc_next = x->crc_next;
            else
                t->crc_head = x->crc_next;
            if (t->crc_tail == x)
                t->crc_tail = prev;
            return;
        }
}

/* One slice per loop turn, so sockets and timers are served in between. */
static void crc_slice(uv_idle_t *h)
{
    mm_transport *t = h->data;
    size_t budget = MM_CRC_SLICE;
    while (budget && t->crc_head) {
        out_item *it = t->crc_head;
        size_t n = it->big_len - it->crc_done;
        if (n > budget)
            n = budget;
        it->crc = mm_crc32c(it->crc, it->big + it->crc_done, n);
        it->crc_done += n;
        budget -= n;
        if (it->crc_done == it->big_len) {
            t->crc_head = it->crc_next;
            if (!t->crc_head)
                t->crc_tail = NULL;
            mm__conn_item_ready(it); /* may call back into the caller */
        }
    }
    if (!t->crc_head)
        uv_idle_stop(&t->crc_idle);
}

static void on_handle_closed(uv_handle_t *h)
{
    mm__tr_handle_closed(h->data);
}

/* ---- public API --------------------------------------------------------- */

#define DEFAULT(x, v) do { if (!(x)) (x) = (v); } while (0)

/* Checks a configuration and fills in the defaults of the fields left 0. */
static int config_defaults(mm_transport_config *cfg, char *err, size_t errlen)
{
    if (cfg->n_peers == 0 || cfg->self_id >= cfg->n_peers || !cfg->addrs) {
        snprintf(err, errlen, "self id %u is not among %u peers (or no addresses)",
                 cfg->self_id, cfg->n_peers);
        return -1;
    }
    if (cfg->vec_len == 0 || cfg->vec_len > MM_WIRE_MAX_VEC_LEN) {
        snprintf(err, errlen, "vector length %llu out of range [1, %llu]",
                 (unsigned long long)cfg->vec_len, (unsigned long long)MM_WIRE_MAX_VEC_LEN);
        return -1;
    }
    DEFAULT(cfg->connect_timeout_ms, 5000);
    DEFAULT(cfg->heartbeat_ms, 1000);
    DEFAULT(cfg->peer_timeout_ms, 10000);
    DEFAULT(cfg->idle_ms, 60000);
    DEFAULT(cfg->backoff_min_ms, 100);
    DEFAULT(cfg->backoff_max_ms, 5000);
    DEFAULT(cfg->frame_timeout_ms, 30000);
    DEFAULT(cfg->round_window, 1000);
    DEFAULT(cfg->algo, MM_ALGO_DPSGD);
    DEFAULT(cfg->codec, MM_WIRE_CODEC_FP32);
    DEFAULT(cfg->max_body, 4 * cfg->vec_len);
    if (cfg->elastic)
        DEFAULT(cfg->max_members, 8 + 128 * (uint64_t)cfg->n_peers);
    else
        cfg->max_members = 0;
    /* Every other peer of a cluster launched on one host may dial at once. */
    DEFAULT(cfg->max_conns_per_addr, cfg->n_peers > 16 ? cfg->n_peers : 16);
    DEFAULT(cfg->max_pending_conns, mm_transport_default_max_pending(cfg->n_peers));
    /* A quiet but healthy peer must ping well within the other's timeout. */
    if (cfg->heartbeat_ms > cfg->peer_timeout_ms / 3)
        cfg->heartbeat_ms = cfg->peer_timeout_ms / 3 ? cfg->peer_timeout_ms / 3 : 1;
    if (cfg->backoff_max_ms < cfg->backoff_min_ms)
        cfg->backoff_max_ms = cfg->backoff_min_ms;
    return 0;
}

/* Parses every peer's address (and the listen address, which defaults to
 * our own entry), and remembers the IPs of the peers that dial us. */
static int resolve_addrs(mm_transport *t, const mm_transport_config *cfg,
                         struct sockaddr_storage *listen_ss, char *err, size_t errlen)
{
    /* Told to listen on an address of one family (say 0.0.0.0), we expect
     * the others to listen on that family too: their names resolve to it
     * first. */
    int prefer = AF_UNSPEC;
    if (cfg->listen_addr) {
        if (parse_addr(cfg->listen_addr, AF_UNSPEC, listen_ss, err, errlen) != 0)
            return -1;
        prefer = listen_ss->ss_family;
    }
    for (uint32_t i = 0; i < cfg->n_peers; i++) {
        peer *p = &t->peers[i];
        p->id = i;
        p->backoff = cfg->backoff_min_ms;
        if (i == cfg->self_id && cfg->listen_addr)
            continue;
        if (!cfg->addrs[i] && cfg->elastic && i != cfg->self_id)
            continue; /* not a member yet (mm_transport_set_addr) */
        if (!cfg->addrs[i]) {
            snprintf(err, errlen, "no address for peer %u", i);
            return -1;
        }
        if (parse_addr(cfg->addrs[i], prefer, &p->addr, err, errlen) != 0)
            return -1;
        p->addr_ok = true;
        if (i < cfg->self_id) { /* a peer that dials us: remember its address */
            char ip[INET6_ADDRSTRLEN];
            int port;
            sockname(&p->addr, ip, sizeof ip, &port);
            if (!is_dialer_ip(t, ip))
                snprintf(t->dialer_ips[t->n_dialer_ips++], INET6_ADDRSTRLEN, "%s", plain_ip(ip));
        }
    }
    if (!cfg->listen_addr)
        *listen_ss = t->peers[cfg->self_id].addr;
    return 0;
}

static int start_listening(mm_transport *t, const struct sockaddr_storage *listen_ss, char *err,
                           size_t errlen)
{
    uv_tcp_init(t->loop, &t->listener);
    t->listener.data = t;
    t->handles++;
    int r = uv_tcp_bind(&t->listener, (const struct sockaddr *)listen_ss, 0);
    if (r == 0)
        r = uv_listen((uv_stream_t *)&t->listener, 128, on_connection);
    if (!r)
        return 0;
    char ip[INET6_ADDRSTRLEN];
    int port;
    sockname(listen_ss, ip, sizeof ip, &port);
    snprintf(err, errlen, "cannot listen on %s:%d: %s", ip, port, uv_strerror(r));
    if (r == UV_EADDRINUSE)
        mm_ports_explain_in_use(port, err, errlen);
    /* The handle exists: close it and let the loop finish it. */
    t->shutting_down = true;
    uv_close((uv_handle_t *)&t->listener, NULL);
    t->handles--;
    uv_run(t->loop, UV_RUN_NOWAIT);
    return -1;
}

/* The CRC idle handle and the tick timer, at a quarter of the shortest
 * deadline it serves (between 5 and 250 ms). */
static void start_timers(mm_transport *t)
{
    const mm_transport_config *cfg = &t->cfg;
    uv_idle_init(t->loop, &t->crc_idle);
    t->crc_idle.data = t;
    t->handles++;
    uv_timer_init(t->loop, &t->tick);
    t->tick.data = t;
    t->handles++;
    uint32_t iv = cfg->heartbeat_ms;
    if (cfg->backoff_min_ms < iv) iv = cfg->backoff_min_ms;
    if (cfg->frame_timeout_ms < iv) iv = cfg->frame_timeout_ms;
    if (cfg->connect_timeout_ms < iv) iv = cfg->connect_timeout_ms;
    iv /= 4;
    iv = iv < 5 ? 5 : iv > 250 ? 250 : iv;
    uv_timer_start(&t->tick, tick, iv, iv);
}

mm_transport *mm_transport_new(uv_loop_t *loop, const mm_transport_config *cfg_in,
                               const mm_transport_callbacks *cb, char *err, size_t errlen)
{
    mm_transport_config cfg = *cfg_in;
    /* libuv writes with write(2): a peer that vanished mid-write would kill
     * the process with SIGPIPE. Ignore it unless the program chose a
     * handler of its own. */
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
    if (config_defaults(&cfg, err, errlen) < 0)
        return NULL;

    mm_transport *t = calloc(1, sizeof *t);
    if (t) {
        t->peers = calloc(cfg.n_peers, sizeof *t->peers);
        t->dialer_ips = calloc(cfg.self_id ? cfg.self_id : 1, sizeof *t->dialer_ips);
    }
    if (!t || !t->peers || !t->dialer_ips) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    t->loop = loop;
    t->cb = *cb;
    t->rng = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)cfg.self_id << 32) ^ uv_hrtime();
    struct sockaddr_storage listen_ss;
    if (resolve_addrs(t, &cfg, &listen_ss, err, errlen) < 0)
        goto fail;
    if (cfg.senders) {
        if (!(t->senders = malloc(cfg.n_peers * sizeof *t->senders))) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        memcpy(t->senders, cfg.senders, cfg.n_peers * sizeof *t->senders);
    }
    cfg.senders = NULL; /* (kept in t->senders) */
    t->settings_len = cfg.settings ? strlen(cfg.settings) : 0;
    if (!(t->settings = malloc(t->settings_len + 1))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    memcpy(t->settings, cfg.settings ? cfg.settings : "", t->settings_len + 1);
    char why[160];
    if (mm_wire_settings_check(t->settings, t->settings_len, why, sizeof why) != 0) {
        snprintf(err, errlen, "the HELLO's settings text: %s", why);
        goto fail;
    }
    cfg.settings = NULL; /* (kept in t->settings) */
    cfg.addrs = NULL; /* not kept: the caller's strings may go away */
    cfg.listen_addr = NULL;
    t->cfg = cfg;

    if (cfg.plaintext) {
        mm_warn("*** PLAINTEXT transport: vectors travel UNENCRYPTED and peers are "
                "NOT AUTHENTICATED (cfg.plaintext); use TLS outside a test bench ***");
    } else {
        t->ctx = mm_tls_ctx_new(cfg.ca_file, cfg.cert_file, cfg.key_file, err, errlen);
        if (!t->ctx)
            goto fail;
    }
    t->cfg.ca_file = t->cfg.cert_file = t->cfg.key_file = NULL;

    if (start_listening(t, &listen_ss, err, errlen) < 0)
        goto fail;
    start_timers(t);
    mm_info("transport: peer %u of %u listening, %llu floats per vector, %s, crc32c %s, "
            "at most %u unauthenticated connections from other than peers' addresses "
            "(%u per address)", cfg.self_id, cfg.n_peers, (unsigned long long)cfg.vec_len,
            cfg.plaintext ? "PLAINTEXT" : "TLS 1.3 mutual auth",
            mm_crc32c_is_hw() ? "SSE4.2" : "software", cfg.max_pending_conns,
            cfg.max_conns_per_addr);
    return t;
fail:
    if (t) {
        if (t->ctx)
            SSL_CTX_free(t->ctx);
        free(t->dialer_ips);
        free(t->senders);
        free(t->settings);
        free(t->peers);
    }
    free(t);
    return NULL;
}

void mm_transport_want(mm_transport *t, const uint32_t *peers, int n)
{
    uint64_t now = mm_now_ms(t);
    bool *now_wanted = calloc(t->cfg.n_peers, sizeof *now_wanted);
    if (!now_wanted)
        return;
    for (int i = 0; i < n; i++)
        if (peers[i] < t->cfg.n_peers && peers[i] != t->cfg.self_id)
            now_wanted[peers[i]] = true;
    for (uint32_t i = 0; i < t->cfg.n_peers; i++) {
        peer *p = &t->peers[i];
        if (now_wanted[i] && !p->wanted) {
            p->want_since = now;
            p->reported_down = false;
        }
        if (now_wanted[i] || p->wanted) /* idle time counts from the last want */
            p->last_used = now;
        p->wanted = now_wanted[i];
        if (p->wanted && !p->conn && !p->dialing && i > t->cfg.self_id && p->addr_ok &&
            now >= p->next_dial && !t->shutting_down)
            dial(t, p);
    }
    free(now_wanted);
}

bool mm_transport_is_up(const mm_transport *t, uint32_t peer_id)
{
    return peer_id < t->cfg.n_peers && t->peers[peer_id].conn &&
           t->peers[peer_id].conn->st == C_UP;
}

int mm_transport_send(mm_transport *t, uint32_t peer_id, uint64_t exchange, double weight,
                      const float *vec)
{
    mm_wire_vec meta = {.weight = weight, .codec = MM_WIRE_CODEC_FP32, .count = t->cfg.vec_len};
    return mm_transport_send_vec(t, peer_id, exchange, &meta, vec, 4 * (size_t)t->cfg.vec_len);
}

int mm_transport_send_vec(mm_transport *t, uint32_t peer_id, uint64_t exchange,
                          const mm_wire_vec *meta, const void *body, size_t body_len)
{
    if (!mm_transport_is_up(t, peer_id))
        return -1;
    peer *p = &t->peers[peer_id];
    mm_wire_vec m = *meta;
    uint8_t *owned = NULL;
    const void *out = body;
    if (t->cfg.tamper &&
        t->cfg.tamper(t->cfg.tamper_ud, peer_id, &m, &out, &body_len, &owned) != 0) {
        free(owned);
        return -1;
    }
    uint8_t vh[MM_WIRE_VEC_HDR];
    mm_wire_put_vec(vh, &m);
    mm_wire_header h = {.type = MM_WIRE_VECTOR, .sender = t->cfg.self_id, .exchange = exchange,
                        .payload_len = MM_WIRE_VEC_HDR + body_len,
                        .view = t->cfg.elastic ? m.view : 0};
    p->last_used = mm_now_ms(t);
    return mm__conn_send_frame(p->conn, &h, vh, sizeof vh, out, body_len, true, peer_id, owned);
}

/* ---- elastic runs (docs/protocol.md 7) ------------------------------------ */

/* "ip:port" or "[ip6]:port", numeric only (no resolver on the loop). */
static int parse_numeric(const char *s, struct sockaddr_storage *out, char *err, size_t errlen)
{
    const char *colon = strrchr(s, ':');
    char host[INET6_ADDRSTRLEN + 2];
    char *end;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    size_t hl = colon ? (size_t)(colon - s) : 0;
    if (!colon || colon[1] == 0 || *end || port <= 0 || port > 65535 || hl == 0 ||
        hl >= sizeof host) {
        snprintf(err, errlen, "address \"%s\" is not ip:port", s);
        return -1;
    }
    memcpy(host, s, hl);
    host[hl] = 0;
    memset(out, 0, sizeof *out);
    if (host[0] == '[' && hl >= 2 && host[hl - 1] == ']') {
        host[hl - 1] = 0;
        if (uv_ip6_addr(host + 1, (int)port, (struct sockaddr_in6 *)out) == 0)
            return 0;
    } else if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)out) == 0) {
        return 0;
    }
    snprintf(err, errlen, "address \"%s\" is not a numeric ip:port (a member's address must "
             "be an IP, not a name)", s);
    return -1;
}

int mm_transport_set_addr(mm_transport *t, uint32_t peer_id, const char *addr, char *err,
                          size_t errlen)
{
    if (peer_id >= t->cfg.n_peers || peer_id == t->cfg.self_id) {
        snprintf(err, errlen, "peer %u is not another peer below %u", peer_id, t->cfg.n_peers);
        return -1;
    }
    peer *p = &t->peers[peer_id];
    struct sockaddr_storage ss;
    if (parse_numeric(addr, &ss, err, errlen) != 0)
        return -1;
    p->addr = ss;
    p->addr_ok = true;
    if (peer_id < t->cfg.self_id) { /* it dials us: its unauthenticated conns are a peer's */
        char ip[INET6_ADDRSTRLEN];
        int port;
        sockname(&ss, ip, sizeof ip, &port);
        if (!is_dialer_ip(t, ip) && t->n_dialer_ips < t->cfg.self_id)
            snprintf(t->dialer_ips[t->n_dialer_ips++], INET6_ADDRSTRLEN, "%s", plain_ip(ip));
    }
    return 0;
}

int mm_transport_join(mm_transport *t, const char *addr, char *err, size_t errlen)
{
    if (!t->cfg.elastic) {
        snprintf(err, errlen, "a join session needs an elastic run");
        return -1;
    }
    struct sockaddr_storage ss;
    if (parse_numeric(addr, &ss, err, errlen) != 0)
        return -1;
    conn *c = mm__conn_new(t);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->dialer = true;
    c->join = true;
    c->expect = MM_WIRE_ANY_PEER;
    c->join_addr = ss;
    int port;
    sockname(&ss, c->ip, sizeof c->ip, &port);
    snprintf(c->from, sizeof c->from, "member at %s:%d (join session)", c->ip, port);
    snprintf(c->src, sizeof c->src, "%s:%d", c->ip, port);
    t->st.conns_dialed++;
    c->creq.data = c;
    int r = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&c->join_addr,
                           on_connect);
    if (r) {
        snprintf(err, errlen, "join session to %s: %s", addr, uv_strerror(r));
        mm__conn_close(c, false, err);
        return -1;
    }
    return 0;
}

/* A control frame of this peer's to peer_id, whose payload the frame owns. */
static int send_owned(mm_transport *t, uint32_t peer_id, uint16_t type, const void *payload,
                      size_t len)
{
    if (!t->cfg.elastic || !mm_transport_is_up(t, peer_id))
        return -1;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return -1;
    memcpy(copy, payload, len);
    mm_wire_header h = {.type = type, .sender = t->cfg.self_id, .exchange = t->exchange,
                        .payload_len = len};
    t->peers[peer_id].last_used = mm_now_ms(t);
    return mm__conn_send_frame(t->peers[peer_id].conn, &h, NULL, 0, copy, len, false, peer_id,
                               copy);
}

int mm_transport_send_members(mm_transport *t, uint32_t peer_id, const uint8_t *payload,
                              size_t len)
{
    if (len > t->cfg.max_members)
        return -1;
    return send_owned(t, peer_id, MM_WIRE_MEMBERS, payload, len);
}

int mm_transport_send_join(mm_transport *t, uint32_t peer_id, const char *addr)
{
    size_t len = strlen(addr);
    if (len == 0 || len > MM_WIRE_ADDR_MAX)
        return -1;
    uint8_t q[MM_WIRE_JOIN_LEN] = {0};
    q[4] = (uint8_t)len;
    q[5] = (uint8_t)(len >> 8);
    memcpy(q + 8, addr, len);
    return send_owned(t, peer_id, MM_WIRE_JOIN, q, sizeof q);
}

int mm_transport_send_state_req(mm_transport *t, uint32_t peer_id, uint32_t parts)
{
    uint8_t q[MM_WIRE_STATE_REQ_LEN] = {(uint8_t)parts, (uint8_t)(parts >> 8),
                                        (uint8_t)(parts >> 16), (uint8_t)(parts >> 24)};
    return send_owned(t, peer_id, MM_WIRE_STATE_REQ, q, sizeof q);
}

void mm_transport_refuse_join(mm_transport *t, uint32_t peer_id, const char *why)
{
    if (peer_id < t->cfg.n_peers && t->peers[peer_id].conn)
        mm__conn_refuse(t->peers[peer_id].conn, &t->st.join_refused, "join refused: %s", why);
}

void mm_transport_refuse_flood(mm_transport *t, uint32_t peer_id, const char *why)
{
    if (peer_id < t->cfg.n_peers && t->peers[peer_id].conn)
        mm__conn_refuse(t->peers[peer_id].conn, &t->st.view_flood, "%s", why);
}

void mm_transport_goodbye(mm_transport *t, uint32_t peer_id)
{
    if (peer_id < t->cfg.n_peers && t->peers[peer_id].conn &&
        t->peers[peer_id].conn->st == C_UP)
        mm__conn_goodbye(t->peers[peer_id].conn, "join session done");
}

bool mm_transport_is_join_session(const mm_transport *t, uint32_t peer_id)
{
    return peer_id < t->cfg.n_peers && t->peers[peer_id].conn && t->peers[peer_id].conn->join;
}

void mm_transport_release(mm_transport *t, uint32_t peer_id)
{
    if (peer_id >= t->cfg.n_peers || !t->peers[peer_id].lent)
        return;
    peer *p = &t->peers[peer_id];
    p->lent = false;
    if (p->conn)
        mm__conn_resume(p->conn);
}

void mm_transport_detach_dst(mm_transport *t, uint32_t peer_id)
{
    if (peer_id < t->cfg.n_peers && t->peers[peer_id].conn)
        mm_wire_rx_detach_body(&t->peers[peer_id].conn->rx);
}

void mm_transport_set_exchange(mm_transport *t, uint64_t exchange) { t->exchange = exchange; }

void mm_transport_shutdown(mm_transport *t, void (*done)(void *ud), void *ud)
{
    if (t->shutting_down)
        return;
    t->shutting_down = true;
    t->done = done;
    t->done_ud = ud;
    for (conn *c = t->conns, *next; c; c = next) {
        next = c->next;
        if (c->st == C_UP)
            mm__conn_goodbye(c, "shutting down");
        else
            mm__conn_close(c, false, "shutting down");
    }
    uv_close((uv_handle_t *)&t->listener, on_handle_closed);
    uv_close((uv_handle_t *)&t->crc_idle, on_handle_closed);
    /* The tick stays until the last connection is gone: it bounds the
     * goodbyes (MM_CLOSE_GRACE_MS) and the graceful closes. */
    if (!t->conns) {
        uv_timer_stop(&t->tick);
        uv_close((uv_handle_t *)&t->tick, on_handle_closed);
    }
}

void mm_transport_free(mm_transport *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->cfg.n_peers; i++)
        free(t->peers[i].rxbuf);
    free(t->peers);
    free(t->dialer_ips);
    free(t->senders);
    free(t->settings);
    if (t->ctx)
        SSL_CTX_free(t->ctx);
    free(t);
}

void mm_transport_get_stats(const mm_transport *t, mm_transport_stats *out) { *out = t->st; }

void mm_transport_get_link_stats(const mm_transport *t, mm_link_stats *out)
{
    for (uint32_t i = 0; i < t->cfg.n_peers; i++)
        out[i] = t->peers[i].link;
}

bool mm_transport_peer_refusal(const mm_transport *t, uint32_t peer_id, mm_refusal *out)
{
    if (peer_id >= t->cfg.n_peers || !t->peers[peer_id].has_refusal)
        return false;
    *out = t->peers[peer_id].refusal;
    return true;
}
