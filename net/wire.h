/* The gossip wire format (docs/protocol.md): fixed 40-byte frame headers,
 * HELLO payloads, CRC32C, and an incremental frame decoder. Pure functions,
 * no I/O, so the decoder can be fuzzed on its own (tests/fuzz_wire.c). */
#ifndef MURMUR_WIRE_H
#define MURMUR_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/crc32c.h"
#include "net/algo.h"

#define MM_WIRE_MAGIC 0x524D524DU /* bytes "MRMR" on the wire (little-endian) */
#define MM_WIRE_VERSION 6
#define MM_WIRE_HDR_LEN 40
/* A HELLO's payload: 128 fixed bytes (mm_wire_hello), then the sender's
 * settings text, 0 .. MM_WIRE_SETTINGS_MAX bytes (docs/protocol.md 3.1). */
#define MM_WIRE_HELLO_LEN 128
#define MM_WIRE_SETTINGS_MAX 2048
/* A settings key (a murmur node flag's name without "--") is at most this
 * many bytes. */
#define MM_WIRE_SETTING_KEY_MAX 32
/* The topology's name in a HELLO: at most this many bytes, 0-padded. */
#define MM_WIRE_TOPO_NAME 32
/* A VECTOR payload starts with this many bytes of vector header (weight,
 * codec, flags, ...; mm_wire_vec), then the body. */
#define MM_WIRE_VEC_HDR 40
#define MM_WIRE_REFUSE_MAX 512
/* Floats per vector a HELLO may announce: 2^31 floats = 8 GiB. */
#define MM_WIRE_MAX_VEC_LEN (1ULL << 31)
#define MM_RX_SLICE (256u * 1024)

enum mm_wire_type {
    MM_WIRE_HELLO = 1,
    MM_WIRE_VECTOR = 2,
    MM_WIRE_PING = 3,
    MM_WIRE_BYE = 4,
    MM_WIRE_REFUSE = 5,
    /* elastic runs only (docs/protocol.md 7): */
    MM_WIRE_MEMBERS = 6,     /* the sender's membership table (member/member.h's bytes) */
    MM_WIRE_JOIN = 7,        /* a joiner asks its sponsor to make it a member */
    MM_WIRE_STATE_REQ = 8,   /* a joiner asks a member for its state (STATE vectors) */
};

/* A JOIN payload: u32 flags (0), u16 address length L (1..MM_WIRE_ADDR_MAX),
 * u16 reserved (0), the address (L printable bytes, "ip:port"), zeros. */
#define MM_WIRE_ADDR_MAX 64
#define MM_WIRE_JOIN_LEN (8 + MM_WIRE_ADDR_MAX)
/* A STATE_REQ payload: u32 parts (bit 0 parameters, bit 1 the optimizer's
 * moments), u32 reserved (0). */
#define MM_WIRE_STATE_REQ_LEN 8
#define MM_STATE_PARAMS 0x1u
#define MM_STATE_MOMENTS 0x2u
/* The id a join session's HELLO addresses: whichever member answers. */
#define MM_WIRE_ANY_PEER UINT32_MAX

typedef struct {
    uint16_t version, type;
    uint32_t sender;
    /* A VECTOR of an elastic run: the sender's view tag for the exchange's
     * round (docs/membership.md); 0 on every other frame and in static
     * runs (header bytes 12..15, which version 5 reserved). */
    uint32_t view;
    uint64_t exchange;       /* a VECTOR's exchange number (docs/protocol.md 3.2) */
    uint64_t payload_len;
    uint32_t payload_crc;
} mm_wire_header;


/* The codec of VECTOR bodies: the numbers of gossip/codec.h's kinds.
 * fp32 is the plain little-endian binary32 vector. */
#define MM_WIRE_CODEC_FP32 1
#define MM_WIRE_CODEC_MAX 6

typedef struct {
    uint8_t fingerprint[32];
    uint64_t vec_len;
    uint32_t target;    /* the id the sender believes it talks to */
    uint8_t algo;       /* mm_algo (net/algo.h): peers must run the same one */
    uint8_t algo_variant; /* its variant (net/algo.h): the all-reduce's schedule; else 0 */
    uint8_t codec;      /* MM_WIRE_CODEC_FP32, ... */
    uint32_t codec_block;  /* int8, sign: floats per scale; else 0 */
    double codec_frac;     /* topk, randk: the fraction sent; else 0 */
    uint8_t topo_digest[32]; /* the topology's canonical digest (gossip/topology.h) */
    char topo_name[MM_WIRE_TOPO_NAME + 1]; /* the file it came from, for messages only */
    uint8_t flags;      /* MM_HELLO_* (byte 51) */
} mm_wire_hello;

/* HELLO flags (byte 51). */
#define MM_HELLO_JOIN 0x01u  /* a join session: the sender is not (yet) a member */
#define MM_HELLO_FLAGS 0x01u

/* The settings text of a HELLO (docs/protocol.md 3.1): lines "KEY=VALUE\n"
 * or "KEY\n", KEY 1..MM_WIRE_SETTING_KEY_MAX bytes of a-z 0-9 '-' starting
 * with a letter, VALUE 1 or more bytes of 0x21..0x7e, keys in strictly
 * increasing byte order, at most MM_WIRE_SETTINGS_MAX bytes in all. 0, or
 * -1 with what is wrong in why. The transport knows no key: two peers must
 * send the same text byte for byte, and a difference is named by key. */
int mm_wire_settings_check(const char *text, size_t len, char *why, size_t whylen);
/* The settings in which two valid texts differ, for a refusal: writes
 * "peer A runs --k v --f, peer B runs --k w" (a key the other lacks is
 * left out of that side, "without --k" when a side has none of them; a
 * flag without value as "--f"; each side cut at a setting and " ..." past
 * half of outlen), and returns how many keys differ (0: the texts are
 * equal, out ""). */
int mm_wire_settings_diff(const char *a, size_t alen, uint32_t a_id, const char *b, size_t blen,
                          uint32_t b_id, char *out, size_t outlen);

/* VECTOR flags (docs/protocol.md 3.2). */
#define MM_VEC_RESET 0x01u  /* the body is the sender's whole public copy, in fp32 */
#define MM_VEC_MORE 0x02u   /* consensus control: the sender does another exchange */
#define MM_VEC_STATE 0x04u  /* elastic runs: a member's state for a joiner (aux: the part) */
#define MM_VEC_FLAGS 0x07u  /* every flag defined; others must be 0 */
/* A STATE vector's part (its aux): the parameters, the optimizer's moments. */
#define MM_STATE_PART_PARAMS 0
#define MM_STATE_PART_M 1
#define MM_STATE_PART_V 2

/* The vector header: what travels with a vector's body. */
typedef struct {
    double weight;      /* push-sum weight (its rule: the owner's weight_ok) */
    uint8_t codec;      /* the body's encoding (the negotiated codec; fp32 with RESET) */
    uint8_t flags;      /* MM_VEC_* */
    uint16_t level;     /* consensus control skipping rounds: the sender's level
                         * (mm_consensus_level, in the round's first exchange); 0 otherwise */
    uint32_t copy_crc;  /* compressed gossip: CRC32C of the sender's public copy
                         * after this frame; 0 otherwise */
    double aux;         /* consensus control: the sender's estimate; 0 otherwise */
    uint64_t offset;    /* first float the body describes (0 for a whole vector) */
    uint64_t count;     /* floats it describes (vec_len for a whole vector) */
    /* Not in the vector header's 40 bytes but in its frame's header
     * (mm_wire_header.view): the sender's view tag, 0 outside elastic runs. */
    uint32_t view;
} mm_wire_vec;

/* Why a frame was refused; each maps to one counter in mm_transport_stats. */
typedef enum {
    MM_WIRE_OK = 0,
    MM_WIRE_E_MAGIC,
    MM_WIRE_E_VERSION,
    MM_WIRE_E_HDR_CRC,
    MM_WIRE_E_TYPE,
    MM_WIRE_E_LENGTH,
    MM_WIRE_E_CHECKSUM,
    MM_WIRE_E_VALUES,
    MM_WIRE_E_WEIGHT,
    MM_WIRE_E_CODEC,
} mm_wire_err;

const char *mm_wire_err_name(mm_wire_err e);

/* CRC32C: base/crc32c.h (mm_crc32c). */

void mm_wire_put_header(uint8_t out[MM_WIRE_HDR_LEN], const mm_wire_header *h);
void mm_wire_put_hello(uint8_t out[MM_WIRE_HELLO_LEN], const mm_wire_hello *h);
void mm_wire_get_hello(const uint8_t in[MM_WIRE_HELLO_LEN], mm_wire_hello *h);
void mm_wire_put_vec(uint8_t out[MM_WIRE_VEC_HDR], const mm_wire_vec *v);
void mm_wire_get_vec(const uint8_t in[MM_WIRE_VEC_HDR], mm_wire_vec *v);

/* Checks a received header against what this connection accepts: magic,
 * version, header CRC, reserved field 0, type (only HELLO/REFUSE before
 * the HELLO), and the payload length: exact for PING and BYE, 128 to
 * 128 + MM_WIRE_SETTINGS_MAX for HELLO, at most 512 for REFUSE, and for VECTOR between MM_WIRE_VEC_HDR + 1 and
 * max_vector (the vector header then fixes the exact length, checked when
 * it arrives); so no length ever decides an allocation. The decoder below
 * also refuses HELLO reserved bytes that are not 0 and a settings text
 * that breaks its rules (MM_WIRE_E_TYPE, as the header's reserved field),
 * and checks every VECTOR's vector header (mm_wire_rx). */
mm_wire_err mm_wire_get_header(const uint8_t in[MM_WIRE_HDR_LEN], bool hello_done,
                               uint64_t max_vector, mm_wire_header *h,
                               char *why, size_t whylen);
/* The same on a connection of an elastic run (max_members > 0: the largest
 * MEMBERS payload it takes): the frame types of docs/protocol.md 7 are
 * allowed after the HELLO (MEMBERS up to max_members bytes, JOIN and
 * STATE_REQ of their exact lengths), and a VECTOR may carry a view tag.
 * With max_members 0 it is mm_wire_get_header. */
mm_wire_err mm_wire_get_header_ex(const uint8_t in[MM_WIRE_HDR_LEN], bool hello_done,
                                  uint64_t max_vector, uint64_t max_members, mm_wire_header *h,
                                  char *why, size_t whylen);


/* Incremental decoder. The owner asks where the next bytes go (want), puts
 * up to that many there, and reports how many (advance). Payloads of HELLO,
 * REFUSE land in ctrl; a VECTOR payload lands in vec_buf (MM_WIRE_VEC_HDR +
 * max_body bytes, owned by the caller and set once the HELLO is done).
 *
 * A VECTOR's vector header is checked the moment it has arrived, before its
 * body is read: the weight (finite, and the owner's rule, weight_ok:
 * MM_WIRE_E_WEIGHT), the codec (the negotiated one; fp32, and only fp32,
 * with RESET: MM_WIRE_E_CODEC), the flags and reserved bits
 * (MM_WIRE_E_TYPE; RESET only where copies is set), aux
 * finite (MM_WIRE_E_VALUES), offset and count within the vector (whole
 * vectors only unless allow_chunks, or streams for a q: MM_WIRE_E_LENGTH;
 * a stream's chunks in order, below; with fragments, only floats of the
 * fragment the exchange names: MM_WIRE_E_LENGTH), and the body's
 * length (exactly 4 * count for fp32; at most max_body for other codecs,
 * whose body the owner checks with the codec: MM_WIRE_E_LENGTH). An fp32
 * body is checked for NaN and Inf as it arrives (MM_WIRE_E_VALUES). */
typedef enum { MM_RX_MORE, MM_RX_FRAME, MM_RX_ERROR } mm_rx_event;

/* Fragment f of F of a vector of n floats: floats [*lo, *lo + *count),
 * lo = floor(f n / F) (in 128-bit integers), the next fragment's lo its
 * end. The rule both ends compute (docs/protocol.md 3.2). */
void mm_wire_fragment(uint64_t n, uint32_t F, uint32_t f, uint64_t *lo, uint64_t *count);

typedef struct {
    bool hello_done;
    /* A TLS connection: the AEAD already authenticates every byte, so the
     * payload CRC is neither computed nor checked; its field must be 0. */
    bool no_payload_crc;
    /* What a VECTOR may be (all kept by mm_wire_rx_init). The weight's
     * rule is the owner's (the algorithm's, which the mixing owns:
     * gossip/mix.h), checked through weight_ok(weight_ud, w, why): true
     * when w is allowed; NULL: any finite weight. */
    bool (*weight_ok)(void *ud, double w, char *why, size_t whylen);
    void *weight_ud;
    uint64_t vec_len;
    uint64_t max_body;     /* bytes; 0: 4 * vec_len (fp32) */
    uint8_t codec;         /* the negotiated codec; 0: fp32 */
    bool allow_chunks;     /* offset/count may describe part of the vector */
    bool copies;           /* compressed gossip: RESET frames may come (public copies) */
    /* An elastic run's connection (docs/protocol.md 7): MEMBERS payloads of
     * at most max_members bytes land in members_buf (the owner's, kept by
     * init), STATE vectors may come, and VECTOR frames carry a view tag.
     * 0: a static run's connection, which refuses all three. */
    uint64_t max_members;
    uint8_t *members_buf;
    /* The outer optimizer's fragments (docs/protocol.md 3.2, --outer-fragments
     * F > 1): exchange e carries fragment f = e mod F, floats
     * mm_wire_fragment(vec_len, F, f): a vector whole over it (gossip), or
     * chunks inside it (allow_chunks: the all-reduce's); 0 or 1: none. */
    uint32_t fragments;
    /* Compressed gossip with a codec that splits: a q may come as a stream
     * of chunks (docs/protocol.md 3.2), consecutive frames of one exchange
     * whose parts follow each other from float 0 to vec_len; a chunk out
     * of that order, or any other frame while a stream is open, is
     * MM_WIRE_E_LENGTH. */
    bool streams;
    uint64_t stream_next;      /* floats of the open stream so far; 0: none open */
    uint64_t stream_exchange;  /* ... its exchange */
    uint8_t *vec_buf;
    /* Optional: where a VECTOR's body (body_len bytes, any codec) goes
     * instead of vec_buf, asked once its vector header has arrived and
     * passed the checks (it is then read on its own, before the body);
     * NULL keeps vec_buf. The body is still checked (CRC, an fp32 body's
     * NaN/Inf) as it lands there. Kept by init. */
    void *(*body_dst)(void *ud, const mm_wire_header *h, const mm_wire_vec *v, size_t body_len);
    void *body_ud;

    uint8_t hdr_raw[MM_WIRE_HDR_LEN];
    /* a HELLO (with its settings) or a REFUSE */
    uint8_t ctrl[MM_WIRE_HELLO_LEN + MM_WIRE_SETTINGS_MAX + 1];
    size_t got;            /* bytes of the current part (header or payload) */
    bool in_payload;
    uint32_t crc;
    uint64_t checked;      /* vector floats already checked for NaN/Inf */
    uint64_t bad_at;       /* first non-finite float, or UINT64_MAX */
    mm_wire_header hdr;    /* valid while in_payload and after FRAME */
    mm_wire_vec vec;       /* a VECTOR's header, valid once its first 40 bytes are in */
    bool vec_checked;
    uint8_t *payload;      /* where the current payload lands */
    uint8_t *body;         /* a checked VECTOR's body: payload + MM_WIRE_VEC_HDR, or body_dst's */
    mm_wire_err err;
    char why[160];
} mm_wire_rx;

void mm_wire_rx_init(mm_wire_rx *rx);
/* Where the next bytes go and how many at most (never 0). */
void mm_wire_rx_want(mm_wire_rx *rx, uint8_t **ptr, size_t *len);
/* n bytes were written at the want() pointer. On FRAME, rx->hdr and
 * rx->payload (a VECTOR's body: rx->body) describe the whole frame until
 * the next advance(). */
mm_rx_event mm_wire_rx_advance(mm_wire_rx *rx, size_t n);
/* True in the middle of a frame (for the frame timeout). */
bool mm_wire_rx_busy(const mm_wire_rx *rx);
/* A body being read where body_dst said goes on in the decoder's own
 * vec_buf from now on (the bytes so far copied there), so that the owner
 * may take back its buffer mid-frame (an all-reduce that failed). */
void mm_wire_rx_detach_body(mm_wire_rx *rx);

#endif
