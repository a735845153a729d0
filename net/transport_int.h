/* Internals shared by the transport's files (transport.c: peers, timers,
 * API; conn.c: one connection's reads, writes, TLS and HELLO). */
#ifndef MURMUR_TRANSPORT_INT_H
#define MURMUR_TRANSPORT_INT_H

#include <assert.h>

#include "net/transport.h"
#include "net/wire.h"

#include <openssl/ssl.h>
#include <sys/socket.h>

#define MM_TLS_READ_BUF (256 * 1024)
#define MM_TLS_WRITE_CHUNK (1024 * 1024)     /* plaintext bytes per SSL_write */
#define MM_WRITE_HIGH_WATER (4 * 1024 * 1024) /* encrypted bytes queued in libuv */
_Static_assert(MM_WRITE_HIGH_WATER + MM_TLS_WRITE_CHUNK + 64 * 22 + 1024 <= MM_TLS_QUEUE_MAX,
               "MM_TLS_QUEUE_MAX must cover the high-water mark and one SSL_write");

typedef struct conn conn;

/* One queued outgoing frame: header and a small payload inline, a large
 * payload (a caller's vector) by reference. */
typedef struct out_item {
    struct out_item *next;
    conn *c;
    uv_write_t req;
    uint8_t head[MM_WIRE_HDR_LEN + MM_WIRE_REFUSE_MAX + 8];
    size_t head_len;
    const uint8_t *big;
    size_t big_len;
    size_t off;              /* TLS: bytes already encrypted */
    uint64_t exchange;
    uint32_t peer;
    bool is_vec;
    uint8_t *owned;          /* the tamper hook's body, freed with the item */
    /* A large payload's CRC is computed a slice per loop iteration
     * (transport.c) so a vector of hundreds of MB never stalls the loop;
     * the frame waits in its connection's queue until ready. */
    mm_wire_header hdr;
    bool ready;
    uint32_t crc;
    size_t crc_done;
    struct out_item *crc_next;
} out_item;

#define MM_CRC_INLINE (1024 * 1024)      /* payloads below: CRC at once */
#define MM_CRC_SLICE (4 * 1024 * 1024)   /* bytes checksummed per loop turn */

/* Encrypted bytes on their way to the socket: OpenSSL writes records
 * straight into these (conn_bio.c), libuv writes them out, and they go back
 * to a small per-connection pool. */
#define MM_CHUNK_CAP (256 * 1024)
/* Enough for the high-water mark plus one SSL_write's worth of records. */
#define MM_CHUNK_POOL ((MM_WRITE_HIGH_WATER + MM_TLS_WRITE_CHUNK) / MM_CHUNK_CAP + 2)
typedef struct tls_chunk {
    uv_write_t req;
    conn *c;
    struct tls_chunk *next;
    size_t len;
    uint8_t data[MM_CHUNK_CAP];
} tls_chunk;

/* A connection's life: CONNECTING -> [TLS ->] HELLO -> UP, and from any
 * state to CLOSING, once. mm__conn_set_state asserts it (debug builds). */
typedef enum { C_CONNECTING, C_TLS, C_HELLO, C_UP, C_CLOSING } conn_state;

struct conn {
    uv_tcp_t tcp;
    mm_transport *t;
    conn *next;
    bool dialer;
    uint32_t expect;         /* dialer: the id dialled */
    int64_t peer;            /* bound id after HELLO, else -1 */
    int64_t cert_id;         /* id named by the TLS certificate, else -1 */
    int64_t claimed;         /* id a HELLO (or a plaintext header on TLS) claimed, else -1 */
    conn_state st;
    bool reading, paused, got_bye, was_up, we_refused;
    bool leaving;            /* goodbye under way: BYE queued, close when sent */
    bool sniffed;            /* TLS: the first bytes were looked at (not plaintext murmur) */
    bool from_peer;          /* accepted from the address of a lower-id peer */
    bool join;               /* a join session (docs/protocol.md 7.2): dialled with
                              * mm_transport_join, or accepted with the HELLO flag */
    bool has_cert;           /* TLS: cert holds the SHA-256 of the peer's certificate */
    uint8_t cert[32];
    struct sockaddr_storage join_addr; /* dialler of a join session: where */
    uint8_t *members_buf;    /* elastic: a MEMBERS payload lands here */
    char leave_why[MM_WIRE_REFUSE_MAX];
    char from[80];
    char ip[INET6_ADDRSTRLEN];
    char src[INET6_ADDRSTRLEN + 8]; /* the remote "ip:port" */
    uint64_t t_start, t_last_recv, t_last_send, t_frame_start, t_close;
    mm_wire_rx rx;
    SSL *ssl;
    uint8_t *netbuf;         /* TLS: bytes read from the socket ... */
    size_t in_off, in_len;   /* ... not yet taken by OpenSSL */
    tls_chunk *w_cur, *w_ready, *w_ready_tail, *pool;
    int pool_n;
    size_t w_inflight;       /* ciphertext bytes from uv_write to callback */
    out_item *q_head, *q_tail;
    bool pumping, draining;
    int writes_pending;
    uv_connect_t creq;
    uv_shutdown_t sreq;
    mm_link_stats unbound;   /* counted while peer < 0: the peer's once it is bound */
};

static inline void mm__conn_set_state(conn *c, conn_state next)
{
    assert(next != C_CLOSING || c->st != C_CLOSING);
    assert(next != C_TLS || c->st == C_CONNECTING);
    assert(next != C_HELLO || c->st == C_CONNECTING || c->st == C_TLS);
    assert(next != C_UP || c->st == C_HELLO);
    assert(next != C_CONNECTING);
    c->st = next;
}

typedef struct {
    uint32_t id;
    conn *conn;              /* the connection that is up, or NULL */
    conn *dialing;           /* our dial in progress */
    bool wanted, lent, reported_down;
    uint64_t want_since, next_dial, last_used;
    uint32_t backoff;
    /* Up connections of this peer we refused for what it sent (a weight,
     * a value, a body) since it last delivered a vector: each doubles the
     * wait before we dial it again (transport.c, mm__tr_conn_closed). */
    uint32_t strikes;
    uint8_t *rxbuf;          /* 8 + 4*vec_len bytes, allocated once */
    /* Two peers claiming this id (transport.c, mm__tr_id_clash): replacements
     * of a live connection since replace_since, and until when the id is
     * refused once they came too often. */
    uint64_t replace_since, clash_until;
    uint32_t replaces;
    char clash_srcs[2][INET6_ADDRSTRLEN + 8];
    struct sockaddr_storage addr;
    bool addr_ok;
    bool has_refusal;
    mm_refusal refusal;      /* the last one (mm_transport_peer_refusal) */
    mm_link_stats link;      /* mm_transport_get_link_stats */
} peer;

struct mm_transport {
    uv_loop_t *loop;
    mm_transport_config cfg;
    mm_transport_callbacks cb;
    SSL_CTX *ctx;
    uv_tcp_t listener;
    uv_timer_t tick;
    uv_idle_t crc_idle;
    out_item *crc_head, *crc_tail;
    peer *peers;
    conn *conns;
    uint64_t exchange;       /* the caller's, for the window (mm_transport_set_exchange) */
    mm_transport_stats st;
    int handles;             /* open uv handles, for shutdown */
    bool shutting_down;
    void (*done)(void *);
    void *done_ud;
    uint64_t rng;
    /* The addresses lower-id peers dial us from (as configured), and how
     * many; their unauthenticated connections are outside the global cap. */
    char (*dialer_ips)[INET6_ADDRSTRLEN];
    uint32_t n_dialer_ips;
    uint64_t accept_err_logged;  /* when a failed accept() was last logged */
    /* [n_peers]: the peers whose vectors we take (cfg.senders); NULL: any */
    bool *senders;
    char *settings;              /* cfg.settings, copied ("" for none) */
    size_t settings_len;
};

uint64_t mm_now_ms(mm_transport *t);

/* conn.c */
conn *mm__conn_new(mm_transport *t);
void mm__conn_start(conn *c);           /* after connect/accept */
void mm__conn_close(conn *c, bool graceful, const char *why);
void mm__conn_refuse(conn *c, uint64_t *counter, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Queues one frame; h->payload_len must describe small+big (the CRC is
 * computed here). Takes ownership of owned. -1 when the connection cannot
 * send. */
int mm__conn_send_frame(conn *c, const mm_wire_header *h, const void *small, size_t small_len,
                    const uint8_t *big, size_t big_len, bool is_vec, uint32_t peer_id,
                    uint8_t *owned);
int mm__conn_send_ping(conn *c);
/* Says goodbye: frames not yet started are dropped (their buffers go back
 * to the caller), a frame already on its way is finished, then BYE, then a
 * graceful close. The tick closes it anyway after MM_CLOSE_GRACE_MS.
 * mm__conn_refuse() leaves the same way, with REFUSE instead of BYE. */
void mm__conn_goodbye(conn *c, const char *why);
void mm__conn_force_close(conn *c);      /* a graceful close that took too long */
void mm__conn_item_ready(out_item *it);  /* its deferred CRC is done */
void mm__conn_pause(conn *c);
void mm__conn_resume(conn *c);

/* conn_bio.c: the BIO between OpenSSL and libuv (no memory BIO copies) */
BIO *mm__conn_bio_new(conn *c);
tls_chunk *mm__conn_chunk_get(conn *c);
void mm__conn_chunk_put(conn *c, tls_chunk *ch);
void mm__conn_chunks_free(conn *c);

/* transport.c, called by conn.c */
/* Before accepting a HELLO that claims id: true (and c refused) when two
 * peers claim that id. */
bool mm__tr_id_clash(mm_transport *t, conn *c, uint32_t id);
void mm__tr_conn_up(mm_transport *t, conn *c);
void mm__tr_conn_closed(mm_transport *t, conn *c);
void mm__tr_vector(mm_transport *t, conn *c, const mm_wire_header *h, const mm_wire_vec *meta,
               const uint8_t *body, size_t body_len);
void mm__tr_members(mm_transport *t, conn *c, const uint8_t *payload, size_t len);
void mm__tr_handle_closed(mm_transport *t);
void mm__tr_crc_enqueue(mm_transport *t, out_item *it);
void mm__tr_crc_remove(mm_transport *t, out_item *it);
/* A connection was refused (by_peer: the peer's REFUSE said why) or its
 * dial failed: find whose it is (mm_refusal in transport.h says how),
 * remember it for that peer and tell the caller (on_refused). */
void mm__tr_refusal(mm_transport *t, const conn *c, mm_refusal_code code, bool by_peer,
                    const char *text);

#endif
