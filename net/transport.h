/* The gossip transport: authenticated connections between peers that move
 * flat float vectors tagged with an exchange number. It knows no model and
 * averages nothing; it runs entirely on one libuv loop and never blocks it.
 *
 * Connections: one per pair of peers; the peer with the lower id dials, the
 * other accepts, so two peers never race into two connections. A HELLO
 * exchange binds a connection to a peer id, the model fingerprint and the
 * vector length. Dialling is on demand (mm_transport_want), with reconnect
 * back-off and jitter; idle connections close after idle_ms. The wire format
 * is in docs/protocol.md. */
#ifndef MURMUR_TRANSPORT_H
#define MURMUR_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "net/algo.h"
#include "net/counters.h"
#include "net/wire.h"

typedef struct mm_transport mm_transport;

typedef enum {
    MM_PEER_UP,      /* HELLO done both ways: vectors can flow */
    MM_PEER_DOWN,    /* connection lost or refused; the transport retries */
    MM_PEER_BYE,     /* the peer said goodbye (clean shutdown) */
} mm_peer_state;

/* Why a connection to or from a peer failed (on_refused below). The codes
 * that say the two peers are configured differently, so that retrying will
 * not help, are the "configuration" ones (mm_refusal_is_config): a TLS
 * mismatch, a failed TLS handshake (e.g. certificates of another CA), an
 * identity error, two processes with one id, another model, another
 * algorithm or codec, another protocol version, something that is not
 * murmur at the dialled address. Names as the end line's counters
 * (docs/metrics.md); docs/protocol.md, "Refusals", has the rules. */
typedef enum {
#define MM_X(code, name, config, words) MM_REFUSAL_##code,
    MM_REFUSAL_CODES(MM_X) /* net/counters.h: names, which are configuration, words */
#undef MM_X
} mm_refusal_code;

#define MM_PEER_UNKNOWN UINT32_MAX
#define MM_REFUSAL_TEXT (MM_WIRE_REFUSE_MAX + 1) /* a whole REFUSE reason */

/* One refused (or failed) connection. The peer is known when this peer
 * dialled it, or from the HELLO (the TLS certificate's id when there is
 * one, else the id the HELLO claims: over plaintext nothing is
 * authenticated), or from the first header of a plaintext peer's bytes on
 * a TLS connection. An accepted connection refused before any of that
 * (a TLS handshake from a --plaintext peer's point of view) is attributed
 * by its source address when exactly one lower-id peer (the ones that dial
 * us) lives there, is wanted and is not up (by_address); else peer is
 * MM_PEER_UNKNOWN. */
typedef struct {
    uint32_t peer;
    mm_refusal_code code;
    bool by_peer;            /* the reason is the peer's (its REFUSE frame) */
    bool dialled;            /* on a connection this peer dialled */
    bool by_address;         /* peer told by the source address only */
    char src[64];            /* the remote "ip:port" */
    char text[MM_REFUSAL_TEXT]; /* what happened, for people: "TLS mismatch: it speaks ..." */
} mm_refusal;

/* "tls_mismatch", "bad_tls", ... (the comments above); "none" for NONE. */
const char *mm_refusal_name(mm_refusal_code c);
/* Whether the code says the two peers are configured differently. */
bool mm_refusal_is_config(mm_refusal_code c);
/* The code of a REFUSE frame's reason, by its documented prefix
 * (docs/protocol.md, "Refusals"); MM_REFUSAL_OTHER for any other text. */
mm_refusal_code mm_refusal_classify(const char *reason);

typedef struct {
    /* Called when a whole, verified VECTOR from `peer` has arrived: its
     * vector header (weight, codec, flags, ...) and its body, body_len
     * bytes in the connection's receive buffer, lent to the caller (an fp32
     * body is meta->count floats, 8-byte aligned): reading from that peer
     * pauses until mm_transport_release(). */
    void (*on_vector)(void *ud, uint32_t peer, uint64_t exchange, const mm_wire_vec *meta,
                      const void *body, size_t body_len);
    /* Called when a send handed to mm_transport_send() no longer needs its
     * buffer (written to the socket or encrypted, or failed: ok false). */
    void (*on_sent)(void *ud, uint32_t peer, uint64_t exchange, bool ok);
    /* Connection state changes. */
    void (*on_peer)(void *ud, uint32_t peer, mm_peer_state state);
    void *ud;
    /* Optional: a connection to or from a peer was refused, by either
     * side, or a dial failed; r->peer may be MM_PEER_UNKNOWN. Called before
     * the connection closes (its on_peer DOWN, if any, comes after). */
    void (*on_refused)(void *ud, const mm_refusal *r);
    /* Optional: where to read the body of a VECTOR from `peer` (body_len
     * bytes: 4 * meta->count for fp32, a codec's payload otherwise), asked
     * once its vector header has arrived and passed the checks; NULL: the
     * connection's receive buffer. on_vector then gets the body there,
     * checked (CRC, fp32 NaN/Inf as it landed, check_body after); a frame
     * refused after all (a bad CRC, a NaN, a bad body) has written there
     * too, and on_vector is not called. */
    void *(*vector_dst)(void *ud, uint32_t peer, uint64_t exchange, const mm_wire_vec *meta,
                        size_t body_len);
    /* Elastic runs (cfg.elastic; docs/protocol.md 7): a MEMBERS frame from
     * peer (its payload, valid during the call; the owner decodes and
     * checks it); a JOIN on a join session from peer (the address it
     * listens on, printable, and the SHA-256 of its TLS certificate, all
     * zero in plaintext); a STATE_REQ from peer (MM_STATE_* parts). */
    void (*on_members)(void *ud, uint32_t peer, const uint8_t *payload, size_t len);
    void (*on_join)(void *ud, uint32_t peer, const char *addr, const uint8_t cert[32]);
    void (*on_state_req)(void *ud, uint32_t peer, uint32_t parts);
} mm_transport_callbacks;

#define MM_ROUND_WINDOW_NONE UINT64_MAX

typedef struct {
    uint32_t self_id;
    uint32_t n_peers;
    /* "host:port" of every peer, indexed by id (n_peers entries); the
     * transport listens on addrs[self_id] (or listen_addr when set). In an
     * elastic run n_peers is the capacity (--max-peers) and addrs[i] may
     * be NULL: a peer with no address yet, given later by
     * mm_transport_set_addr. */
    const char *const *addrs;
    /* An elastic run (docs/membership.md): join sessions are accepted,
     * membership frames and STATE vectors flow, vectors carry a view tag,
     * and max_members bounds a MEMBERS payload (0: 8 + 128 n_peers). */
    bool elastic;
    uint64_t max_members;
    const char *listen_addr;        /* NULL: addrs[self_id] */
    uint8_t fingerprint[32];        /* of the model; must match the peer's */
    uint64_t vec_len;               /* floats per vector; must match */
    /* What a received vector's weight may be: weight_ok(weight_ud, w, why)
     * says true when w is allowed, else false with why; a vector that
     * breaks it is refused and counted (bad_weight). The transport knows
     * no algorithm's rule: its owner's (murmur node: gossip/mix.h's
     * mm_mix_weight_ok, the rule of its --algo). NULL: any finite weight. */
    bool (*weight_ok)(void *ud, double w, char *why, size_t whylen);
    void *weight_ud;
    /* What both sides must agree on in the HELLO (docs/protocol.md 3.1): the
     * algorithm (0: dpsgd) and the codec of vector bodies (0: fp32, with
     * codec_block and codec_frac its parameters). A peer that disagrees is
     * refused (bad_config). */
    uint8_t algo, codec;            /* mm_algo (net/algo.h) */
    uint8_t algo_variant;           /* the algorithm's variant (net/algo.h); 0 */
    uint32_t codec_block;
    double codec_frac;
    /* The topology's digest (mm_topo_digest; all 0 without a topology) and
     * the name of its file (NULL: none), sent in the HELLO: a peer with
     * another digest is refused (bad_topology), both names in the reason. */
    uint8_t topo_digest[32];
    const char *topo_name;
    /* The settings every peer must share that the fields above do not
     * carry, as the HELLO's settings text (docs/protocol.md 3.1: "KEY=VALUE"
     * lines, keys in order; mm_wire_settings_check), copied; NULL: none. A
     * peer whose text differs is refused (bad_config), the reason naming
     * each key that differs with both values ("setting differs: peer 3
     * runs --gossip-steps 2, peer 0 runs --gossip-steps 1"). The
     * transport knows no key: murmur node writes the text
     * (mm_node_settings). */
    const char *settings;
    /* A body in the negotiated codec other than fp32 is checked whole by
     * check_body(check_ud, meta, ...) before on_vector lends it (a chunk of
     * a stream: a body of meta->count floats) (lengths, scales,
     * values, indices, padding: docs/protocol.md section 6): 0, or -1 with
     * why; a refused body refuses the connection (bad_codec), its reason
     * naming codec_name. The transport knows no codec: its owner checks
     * with the codec's own rules (murmur node: gossip/codec.h). NULL: such
     * bodies go to on_vector unchecked. */
    int (*check_body)(void *ud, const mm_wire_vec *meta, const uint8_t *body, size_t len,
                      char *why, size_t whylen);
    void *check_ud;
    const char *codec_name;
    /* The largest body a VECTOR may carry, in bytes (0: 4 * vec_len, the
     * fp32 vector): the receive buffer is this plus the vector header. */
    uint64_t max_body;
    /* Allow vectors that describe part of the vector (offset, count):
     * all-reduce's chunks. Off: whole vectors only. */
    bool allow_chunks;
    /* The outer optimizer's fragments (net/wire.h mm_wire_fragment): F > 1
     * makes exchange e carry only fragment e mod F; 0 or 1: none. */
    uint32_t fragments;
    /* Compressed gossip (murmur node --compress): RESET frames carry a
     * public copy (docs/protocol.md 6.10). Off: a RESET flag is refused
     * (bad_type). */
    bool copies;
    /* With copies: a q may come as a stream of chunks (docs/protocol.md
     * 3.2; the codec splits, gossip/codec.h mm_codec_splits), each chunk
     * its own frame, lent and released one by one. Off: whole vectors. */
    bool streams;
    /* The peers that may send us vectors (n_peers entries, copied), e.g.
     * the in-neighbours of every round of the topology; NULL: any peer. A
     * VECTOR from another is refused and counted (not_neighbour): the node
     * would never take it, and a vector not taken would hold that peer's
     * connection unread for the whole run. */
    const bool *senders;

    /* TLS 1.3 with mutual authentication, unless plaintext is set. */
    bool plaintext;
    const char *ca_file, *cert_file, *key_file;

    /* Timers, in milliseconds (0: defaults). */
    uint32_t connect_timeout_ms;   /* dial + handshake (default 5000) */
    uint32_t heartbeat_ms;         /* ping when quiet (default 1000) */
    uint32_t peer_timeout_ms;      /* silent this long: down (default 10000) */
    uint32_t idle_ms;              /* unused this long: closed (default 60000) */
    uint32_t backoff_min_ms, backoff_max_ms; /* reconnect (default 100, 5000) */
    uint32_t frame_timeout_ms;     /* a started frame must finish (default 30000, +1 ms per KiB of payload) */

    /* Exchange numbers accepted are within [current - window, current + window];
     * MM_ROUND_WINDOW_NONE: any (murmur node's async). */
    uint64_t round_window;          /* default 1000 */
    uint32_t max_conns_per_addr;    /* unauthenticated conns from one IP (default max(16, n_peers)) */
    /* Unauthenticated conns from all addresses that are not a lower-id
     * peer's (whose addresses keep max_conns_per_addr each outside this
     * cap, so a flood from elsewhere never locks a neighbour out). Default
     * (0): from the file limit, (RLIMIT_NOFILE - 64 - 2 n_peers) / 2 within
     * [16, 1024]; see mm_transport_default_max_pending(). */
    uint32_t max_pending_conns;

    /* Test-only: called on every outgoing vector, so that tests can play
     * a neighbour that sends what an honest murmur never does (node/poison.h,
     * murmur node --test-poison); NULL: vectors go as given. It may change
     * *m, and point *body at a buffer of *len bytes that it allocated and
     * returns in *owned (freed with the frame). -1: out of memory (the send
     * fails). to: the receiving peer. */
    int (*tamper)(void *ud, uint32_t to, mm_wire_vec *m, const void **body, size_t *len,
                  uint8_t **owned);
    void *tamper_ud;
} mm_transport_config;

/* Create and start listening. NULL on error with the reason in err.
 * Addresses are resolved here, once (numeric or getaddrinfo). Sets SIGPIPE
 * to ignored if it was at its default (libuv writes with write(2)). Plain
 * TCP only with cfg->plaintext; otherwise ca/cert/key files are required and
 * a key readable by group/others is refused. */
mm_transport *mm_transport_new(uv_loop_t *loop, const mm_transport_config *cfg,
                               const mm_transport_callbacks *cb,
                               char *err, size_t errlen);

/* Elastic runs: where peer listens from now on ("ip:port" or
 * "[ip6]:port", numeric: names are resolved only at creation, never on the
 * loop). 0, or -1 with why. */
int mm_transport_set_addr(mm_transport *t, uint32_t peer, const char *addr, char *err,
                          size_t errlen);
/* Elastic runs: open a join session to a member at addr (numeric, as
 * above): a HELLO with the join flag, addressed to whichever member answers
 * (docs/protocol.md 7.2). When it is up, on_peer(sponsor, MM_PEER_UP)
 * names the member; the caller then sends its JOIN. 0, or -1 with why. */
int mm_transport_join(mm_transport *t, const char *addr, char *err, size_t errlen);
/* Elastic runs: membership frames to a peer that is up (a join session's
 * too): its table (payload of len bytes, copied), a JOIN with this peer's
 * address, a STATE_REQ. 0, or -1 when the peer is not up. */
int mm_transport_send_members(mm_transport *t, uint32_t peer, const uint8_t *payload, size_t len);
int mm_transport_send_join(mm_transport *t, uint32_t peer, const char *addr);
int mm_transport_send_state_req(mm_transport *t, uint32_t peer, uint32_t parts);
/* Refuses a join session of peer with why (a REFUSE whose reason begins
 * "join refused:"), counted as join_refused. */
void mm_transport_refuse_join(mm_transport *t, uint32_t peer, const char *why);
/* Refuses the connection of a member that floods membership changes (or
 * sends tables it may not), with why, counted as view_flood. */
void mm_transport_refuse_flood(mm_transport *t, uint32_t peer, const char *why);
/* Closes the connection of peer with a goodbye (a join session that has
 * done its job). */
void mm_transport_goodbye(mm_transport *t, uint32_t peer);
/* Whether peer's connection is a join session (its HELLO had the flag). */
bool mm_transport_is_join_session(const mm_transport *t, uint32_t peer);

/* Declare the peers wanted now (e.g. this round's neighbours): connections
 * to them are opened (or kept); others become idle. */
void mm_transport_want(mm_transport *t, const uint32_t *peers, int n);

/* True when the connection to peer is up (HELLO done). */
bool mm_transport_is_up(const mm_transport *t, uint32_t peer);

/* Send a VECTOR to peer, tagged with its exchange number (docs/protocol.md
 * 3.2; the all-reduce's: its round): its vector header and a body
 * of body_len bytes (must stay valid until on_sent). Returns 0, or -1 if
 * the peer is not up (on_sent is then not called). */
int mm_transport_send_vec(mm_transport *t, uint32_t peer, uint64_t exchange,
                          const mm_wire_vec *meta, const void *body, size_t body_len);
/* The common case: the whole vector (vec_len floats, must stay valid until
 * on_sent) in fp32 with a push-sum weight. */
int mm_transport_send(mm_transport *t, uint32_t peer, uint64_t exchange, double weight,
                      const float *vec);

/* Give back the receive buffer lent by on_vector; reading resumes. */
void mm_transport_release(mm_transport *t, uint32_t peer);
/* From now on, the rest of a body from peer that vector_dst placed is read
 * into the transport's own buffer: the owner's buffer is its own again. */
void mm_transport_detach_dst(mm_transport *t, uint32_t peer);

/* The exchange the caller is in, for the window check on incoming frames
 * (round_window: a count of exchanges, its name the flag's). */
void mm_transport_set_exchange(mm_transport *t, uint64_t exchange);

/* Say goodbye to every connected peer, close everything and call done()
 * once all handles are closed; then free with mm_transport_free() (only
 * after done(): the loop still owns the handles until then). */
void mm_transport_shutdown(mm_transport *t, void (*done)(void *ud), void *ud);
void mm_transport_free(mm_transport *t);

/* Two peers with one id (a launch mistake): each new connection of one
 * replaces the other's, which reconnects at once. When a live connection
 * of a peer is replaced MM_ID_CLASH_REPLACES times within
 * MM_ID_CLASH_WINDOW_MS, that id is refused ("two peers claim id K",
 * counted as id_clash) for MM_ID_CLASH_HOLD_MS instead of flapping; then
 * it is accepted again (and refused again if the flapping resumes). */
#define MM_ID_CLASH_REPLACES 3
#define MM_ID_CLASH_WINDOW_MS 10000
#define MM_ID_CLASH_HOLD_MS 30000

/* A goodbye (the frame on its way, then BYE) and then a graceful close are
 * each given this long before the connection is closed regardless; so
 * mm_transport_shutdown() calls done() within about twice this. */
#define MM_CLOSE_GRACE_MS 2000

/* The most ciphertext a TLS connection holds for its socket, whatever the
 * vector size and link speed: 4 MB, plus one 1 MB SSL_write and its record
 * overhead (64 records of 22 bytes). */
#define MM_TLS_QUEUE_MAX (5u * 1024 * 1024 + 4096)

/* Counters, for metrics and tests: one uint64_t per entry of
 * MM_TRANSPORT_COUNTERS (net/counters.h: its metrics key, the line it is
 * written in, what it counts). Refusals are counted by reason. */
typedef struct {
#define MM_X(field, line, explanation) uint64_t field;
    MM_TRANSPORT_COUNTERS(MM_X)
#undef MM_X
} mm_transport_stats;

void mm_transport_get_stats(const mm_transport *t, mm_transport_stats *out);

/* The counters of MM_LINK_COUNTERS (net/counters.h) for one peer: what
 * went over the connections bound to it since the transport started. */
typedef struct {
#define MM_X(field) uint64_t field;
    MM_LINK_COUNTERS(MM_X)
#undef MM_X
} mm_link_stats;

/* Every peer's, out[0 .. n_peers - 1] (out[self_id] all zero). */
void mm_transport_get_link_stats(const mm_transport *t, mm_link_stats *out);

/* The last refusal of a connection to or from peer (as on_refused saw it):
 * true and *out set, or false when there was none. */
bool mm_transport_peer_refusal(const mm_transport *t, uint32_t peer, mm_refusal *out);

/* The default of max_pending_conns for n_peers under this process's file
 * limit: half of what is left of RLIMIT_NOFILE after 64 descriptors for
 * files and the loop and two per peer (its connection and a replacement),
 * at least 16 and at most 1024 (~14 KB each over TLS before the HELLO). */
uint32_t mm_transport_default_max_pending(uint32_t n_peers);

#endif
