/* Frame headers, HELLO payloads and the incremental frame decoder. Every
 * field is checked before it is used; lengths are exact per type, so a
 * length never decides an allocation. */
#include "net/wire.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/finite.h"

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }
static void putf64(uint8_t *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    put64(p, u);
}
static double getf64(const uint8_t *p)
{
    uint64_t u = get64(p);
    double v;
    memcpy(&v, &u, 8);
    return v;
}

const char *mm_wire_err_name(mm_wire_err e)
{
    switch (e) {
    case MM_WIRE_OK: return "ok";
    case MM_WIRE_E_MAGIC: return "bad magic";
    case MM_WIRE_E_VERSION: return "bad version";
    case MM_WIRE_E_HDR_CRC: return "bad header checksum";
    case MM_WIRE_E_TYPE: return "bad type";
    case MM_WIRE_E_LENGTH: return "bad length";
    case MM_WIRE_E_CHECKSUM: return "bad payload checksum";
    case MM_WIRE_E_VALUES: return "non-finite values";
    case MM_WIRE_E_WEIGHT: return "bad weight";
    case MM_WIRE_E_CODEC: return "bad codec";
    }
    return "?";
}

void mm_wire_put_header(uint8_t out[MM_WIRE_HDR_LEN], const mm_wire_header *h)
{
    put32(out, MM_WIRE_MAGIC);
    put16(out + 4, h->version ? h->version : MM_WIRE_VERSION);
    put16(out + 6, h->type);
    put32(out + 8, h->sender);
    put32(out + 12, h->type == MM_WIRE_VECTOR ? h->view : 0);
    put64(out + 16, h->exchange);
    put64(out + 24, h->payload_len);
    put32(out + 32, h->payload_crc);
    put32(out + 36, mm_crc32c(0, out, 36));
}

void mm_wire_put_hello(uint8_t out[MM_WIRE_HELLO_LEN], const mm_wire_hello *h)
{
    memset(out, 0, MM_WIRE_HELLO_LEN);
    memcpy(out, h->fingerprint, 32);
    put64(out + 32, h->vec_len);
    put32(out + 40, h->target);
    out[48] = h->algo;
    out[49] = h->codec;
    out[50] = h->algo_variant;
    out[51] = h->flags;
    put32(out + 52, h->codec_block);
    putf64(out + 56, h->codec_frac);
    memcpy(out + 64, h->topo_digest, 32);
    memcpy(out + 96, h->topo_name, strnlen(h->topo_name, MM_WIRE_TOPO_NAME));
}

void mm_wire_get_hello(const uint8_t in[MM_WIRE_HELLO_LEN], mm_wire_hello *h)
{
    memcpy(h->fingerprint, in, 32);
    h->vec_len = get64(in + 32);
    h->target = get32(in + 40);
    h->algo = in[48];
    h->codec = in[49];
    h->algo_variant = in[50];
    h->flags = in[51];
    h->codec_block = get32(in + 52);
    h->codec_frac = getf64(in + 56);
    memcpy(h->topo_digest, in + 64, 32);
    /* informational: shown, never compared; what cannot be shown is '?' */
    size_t k = 0;
    for (; k < MM_WIRE_TOPO_NAME && in[96 + k]; k++)
        h->topo_name[k] = in[96 + k] >= 0x20 && in[96 + k] < 0x7f ? (char)in[96 + k] : '?';
    h->topo_name[k] = 0;
}

void mm_wire_put_vec(uint8_t out[MM_WIRE_VEC_HDR], const mm_wire_vec *v)
{
    putf64(out, v->weight);
    out[8] = v->codec;
    out[9] = v->flags;
    put16(out + 10, v->level);
    put32(out + 12, v->copy_crc);
    putf64(out + 16, v->aux);
    put64(out + 24, v->offset);
    put64(out + 32, v->count);
}

void mm_wire_get_vec(const uint8_t in[MM_WIRE_VEC_HDR], mm_wire_vec *v)
{
    v->weight = getf64(in);
    v->codec = in[8];
    v->flags = in[9];
    v->level = get16(in + 10);
    v->copy_crc = get32(in + 12);
    v->aux = getf64(in + 16);
    v->offset = get64(in + 24);
    v->count = get64(in + 32);
}

/* ---- the settings text of a HELLO (docs/protocol.md 3.1) ------------------ */

typedef struct {
    const char *key, *val; /* val NULL: a flag without value */
    size_t klen, vlen;
} setting;

static bool key_char(char ch, bool first)
{
    return (ch >= 'a' && ch <= 'z') || (!first && ((ch >= '0' && ch <= '9') || ch == '-'));
}

/* The setting at *at (before end): 1 and *at past its line, 0 at end, -1
 * with why for a line that breaks the rules. */
static int next_setting(const char **at, const char *end, setting *s, char *why, size_t whylen)
{
    const char *p = *at;
    if (p == end)
        return 0;
    s->key = p;
    while (p < end && key_char(*p, p == s->key))
        p++;
    s->klen = (size_t)(p - s->key);
    if (s->klen == 0 || s->klen > MM_WIRE_SETTING_KEY_MAX) {
        char shown[17];
        size_t k = 0;
        for (; k < 16 && s->key + k < end; k++) /* what it has, printable */
            shown[k] = s->key[k] > 0x20 && s->key[k] < 0x7f ? s->key[k] : '?';
        shown[k] = 0;
        snprintf(why, whylen, "'%s': a key is 1 to %d bytes of a-z 0-9 '-', from a letter",
                 shown, MM_WIRE_SETTING_KEY_MAX);
        return -1;
    }
    s->val = NULL;
    s->vlen = 0;
    if (p < end && *p == '=') {
        s->val = ++p;
        while (p < end && *p > 0x20 && *p < 0x7f)
            p++;
        s->vlen = (size_t)(p - s->val);
        if (s->vlen == 0) {
            snprintf(why, whylen, "'%.*s=' has no value", (int)s->klen, s->key);
            return -1;
        }
    }
    if (p == end || *p != '\n') {
        snprintf(why, whylen, "'%.*s': a setting is KEY or KEY=VALUE (VALUE printable, no "
                 "space) and ends with a line feed", (int)s->klen, s->key);
        return -1;
    }
    *at = p + 1;
    return 1;
}

static int key_cmp(const setting *a, const setting *b)
{
    size_t n = a->klen < b->klen ? a->klen : b->klen;
    int c = memcmp(a->key, b->key, n);
    return c ? c : a->klen < b->klen ? -1 : a->klen > b->klen;
}

int mm_wire_settings_check(const char *text, size_t len, char *why, size_t whylen)
{
    if (len > MM_WIRE_SETTINGS_MAX) {
        snprintf(why, whylen, "%zu bytes, more than %d", len, MM_WIRE_SETTINGS_MAX);
        return -1;
    }
    const char *at = text, *end = text + len;
    setting s, prev = {0};
    int r;
    while ((r = next_setting(&at, end, &s, why, whylen)) > 0) {
        if (prev.key && key_cmp(&prev, &s) >= 0) {
            snprintf(why, whylen, "'%.*s' after '%.*s': keys must strictly increase",
                     (int)s.klen, s.key, (int)prev.klen, prev.key);
            return -1;
        }
        prev = s;
    }
    return r;
}

/* " --key value" (or " --key") onto out at *len, unless it would pass
 * cap; then " ..." once. */
static void put_setting(char *out, size_t *len, size_t cap, bool *cut, const setting *s)
{
    if (*cut)
        return;
    size_t need = 3 + s->klen + (s->val ? 1 + s->vlen : 0);
    if (*len + need + 4 >= cap) {
        *cut = true;
        if (*len + 5 <= cap)
            *len += (size_t)snprintf(out + *len, cap - *len, " ...");
        return;
    }
    *len += (size_t)snprintf(out + *len, cap - *len, " --%.*s", (int)s->klen, s->key);
    if (s->val)
        *len += (size_t)snprintf(out + *len, cap - *len, " %.*s", (int)s->vlen, s->val);
}

/* One side of a difference: its own settings, or "without" the other's. */
typedef struct {
    char text[MM_WIRE_REFUSE_MAX];
    size_t len, without_len;
    char without[MM_WIRE_REFUSE_MAX];
    bool cut, without_cut;
} diff_side;

int mm_wire_settings_diff(const char *a, size_t alen, uint32_t a_id, const char *b, size_t blen,
                          uint32_t b_id, char *out, size_t outlen)
{
    diff_side sa = {0}, sb = {0};
    size_t cap = outlen / 2 > 40 ? outlen / 2 - 20 : 20;
    if (cap > sizeof sa.text)
        cap = sizeof sa.text;
    const char *pa = a, *pb = b, *ea = a + alen, *eb = b + blen;
    setting x, y;
    char why[8];
    int ra = next_setting(&pa, ea, &x, why, sizeof why);
    int rb = next_setting(&pb, eb, &y, why, sizeof why);
    int differ = 0;
    while (ra > 0 || rb > 0) {
        int c = ra <= 0 ? 1 : rb <= 0 ? -1 : key_cmp(&x, &y);
        bool same = c == 0 && x.vlen == y.vlen && (x.val == NULL) == (y.val == NULL) &&
                    memcmp(x.val ? x.val : "", y.val ? y.val : "", x.vlen) == 0;
        if (!same) {
            differ++;
            if (c <= 0) {
                put_setting(sa.text, &sa.len, cap, &sa.cut, &x);
                if (c < 0) /* a key b lacks */
                    put_setting(sb.without, &sb.without_len, cap, &sb.without_cut,
                                &(setting){.key = x.key, .klen = x.klen});
            }
            if (c >= 0) {
                put_setting(sb.text, &sb.len, cap, &sb.cut, &y);
                if (c > 0)
                    put_setting(sa.without, &sa.without_len, cap, &sa.without_cut,
                                &(setting){.key = y.key, .klen = y.klen});
            }
        }
        if (c <= 0)
            ra = next_setting(&pa, ea, &x, why, sizeof why);
        if (c >= 0)
            rb = next_setting(&pb, eb, &y, why, sizeof why);
    }
    if (!differ) {
        if (outlen)
            out[0] = 0;
        return 0;
    }
    snprintf(out, outlen, "peer %u runs%s%s, peer %u runs%s%s", a_id, sa.len ? "" : " without",
             sa.len ? sa.text : sa.without, b_id, sb.len ? "" : " without",
             sb.len ? sb.text : sb.without);
    return differ;
}

mm_wire_err mm_wire_get_header(const uint8_t in[MM_WIRE_HDR_LEN], bool hello_done,
                               uint64_t max_vector, mm_wire_header *h,
                               char *why, size_t whylen)
{
    return mm_wire_get_header_ex(in, hello_done, max_vector, 0, h, why, whylen);
}

mm_wire_err mm_wire_get_header_ex(const uint8_t in[MM_WIRE_HDR_LEN], bool hello_done,
                                  uint64_t max_vector, uint64_t max_members, mm_wire_header *h,
                                  char *why, size_t whylen)
{
    uint32_t magic = get32(in);
    if (magic != MM_WIRE_MAGIC) {
        snprintf(why, whylen, "magic 0x%08x, expected 0x%08x", magic, MM_WIRE_MAGIC);
        return MM_WIRE_E_MAGIC;
    }
    h->version = get16(in + 4);
    if (h->version != MM_WIRE_VERSION) {
        snprintf(why, whylen, "protocol version %u, this peer speaks %u (another murmur "
                 "build: every peer must speak the same version)",
                 (unsigned)h->version, (unsigned)MM_WIRE_VERSION);
        return MM_WIRE_E_VERSION;
    }
    uint32_t hcrc = get32(in + 36), want = mm_crc32c(0, in, 36);
    if (hcrc != want) {
        snprintf(why, whylen, "header crc32c 0x%08x, computed 0x%08x", hcrc, want);
        return MM_WIRE_E_HDR_CRC;
    }
    h->type = get16(in + 6);
    h->sender = get32(in + 8);
    h->exchange = get64(in + 16);
    h->payload_len = get64(in + 24);
    h->payload_crc = get32(in + 32);
    h->view = get32(in + 12);
    /* the view tag: a VECTOR's, in an elastic run; elsewhere reserved */
    if (h->view != 0 && (h->type != MM_WIRE_VECTOR || !max_members)) {
        snprintf(why, whylen, "%s", max_members ? "view tag on a frame that is not a VECTOR"
                                                : "reserved header field is not zero");
        return MM_WIRE_E_TYPE;
    }

    uint64_t min = 0, max = 0;
    bool elastic_type = false;
    switch (h->type) {
    case MM_WIRE_HELLO: min = MM_WIRE_HELLO_LEN; max = MM_WIRE_HELLO_LEN + MM_WIRE_SETTINGS_MAX; break;
    case MM_WIRE_REFUSE: max = MM_WIRE_REFUSE_MAX; break;
    case MM_WIRE_VECTOR: min = MM_WIRE_VEC_HDR + 1; max = max_vector; break;
    case MM_WIRE_PING:
    case MM_WIRE_BYE: break;
    case MM_WIRE_MEMBERS: elastic_type = true; min = 8; max = max_members; break;
    case MM_WIRE_JOIN: elastic_type = true; min = max = MM_WIRE_JOIN_LEN; break;
    case MM_WIRE_STATE_REQ: elastic_type = true; min = max = MM_WIRE_STATE_REQ_LEN; break;
    default:
        snprintf(why, whylen, "unknown message type %u", h->type);
        return MM_WIRE_E_TYPE;
    }
    if (elastic_type && !max_members) {
        snprintf(why, whylen, "message type %u on a connection of a static run (membership "
                 "frames need an elastic topology on both ends)", h->type);
        return MM_WIRE_E_TYPE;
    }
    bool pre = h->type == MM_WIRE_HELLO || h->type == MM_WIRE_REFUSE;
    if ((hello_done && h->type == MM_WIRE_HELLO) || (!hello_done && !pre)) {
        snprintf(why, whylen, "message type %u not allowed %s the HELLO", h->type,
                 hello_done ? "after" : "before");
        return MM_WIRE_E_TYPE;
    }
    if (h->payload_len < min || h->payload_len > max) {
        if (min == max)
            snprintf(why, whylen, "payload length %llu for type %u, expected %llu",
                     (unsigned long long)h->payload_len, h->type, (unsigned long long)max);
        else
            snprintf(why, whylen, "payload length %llu for type %u, expected %llu..%llu",
                     (unsigned long long)h->payload_len, h->type, (unsigned long long)min,
                     (unsigned long long)max);
        return MM_WIRE_E_LENGTH;
    }
    return MM_WIRE_OK;
}

void mm_wire_rx_init(mm_wire_rx *rx)
{
    mm_wire_rx keep = *rx;
    memset(rx, 0, sizeof *rx);
    rx->no_payload_crc = keep.no_payload_crc;
    rx->weight_ok = keep.weight_ok;
    rx->weight_ud = keep.weight_ud;
    rx->vec_len = keep.vec_len;
    rx->max_body = keep.max_body;
    rx->codec = keep.codec;
    rx->allow_chunks = keep.allow_chunks;
    rx->copies = keep.copies;
    rx->fragments = keep.fragments;
    rx->streams = keep.streams;
    rx->max_members = keep.max_members;
    rx->members_buf = keep.members_buf;
    rx->vec_buf = keep.vec_buf;
    rx->body_dst = keep.body_dst;
    rx->body_ud = keep.body_ud;
    rx->hello_done = keep.hello_done;
}

static uint64_t max_body(const mm_wire_rx *rx)
{
    return rx->max_body ? rx->max_body : 4 * rx->vec_len;
}

static uint8_t codec(const mm_wire_rx *rx) { return rx->codec ? rx->codec : MM_WIRE_CODEC_FP32; }

/* Where payload byte rx->got lands: a checked VECTOR's body may live
 * apart from its vector header (body_dst). */
static uint8_t *payload_at(const mm_wire_rx *rx)
{
    if (rx->hdr.type == MM_WIRE_VECTOR && rx->vec_checked)
        return rx->body + (rx->got - MM_WIRE_VEC_HDR);
    return rx->payload + rx->got;
}

bool mm_wire_rx_busy(const mm_wire_rx *rx) { return rx->in_payload || rx->got > 0; }

void mm_wire_rx_detach_body(mm_wire_rx *rx)
{
    if (!rx->in_payload || rx->hdr.type != MM_WIRE_VECTOR || !rx->vec_checked)
        return;
    uint8_t *own = rx->payload + MM_WIRE_VEC_HDR;
    if (rx->body != own) {
        memcpy(own, rx->body, (size_t)(rx->got - MM_WIRE_VEC_HDR));
        rx->body = own;
    }
}

void mm_wire_rx_want(mm_wire_rx *rx, uint8_t **ptr, size_t *len)
{
    if (!rx->in_payload) {
        *ptr = rx->hdr_raw + rx->got;
        *len = MM_WIRE_HDR_LEN - rx->got;
    } else {
        uint64_t left = rx->hdr.payload_len - rx->got;
        *ptr = payload_at(rx);
        /* the vector header alone first when its body may go elsewhere */
        if (rx->hdr.type == MM_WIRE_VECTOR && !rx->vec_checked && rx->body_dst)
            left = MM_WIRE_VEC_HDR - rx->got;
        /* 256 KiB slices: the CRC and NaN check that follow each read
         * find the bytes still in L2. */
        *len = left > MM_RX_SLICE ? MM_RX_SLICE : (size_t)left;
    }
}

static mm_rx_event fail(mm_wire_rx *rx, mm_wire_err e)
{
    rx->err = e;
    return MM_RX_ERROR;
}

/* A stream's chunks (docs/protocol.md 3.2): the first at float 0, each
 * next one where the last ended, all of one exchange, nothing else in
 * between; the stream closes with the chunk that reaches vec_len. A whole
 * vector is a stream of one chunk. */
static mm_rx_event stream_order(mm_wire_rx *rx, const mm_wire_vec *v)
{
    uint64_t e = rx->hdr.exchange;
    if (rx->stream_next ? v->offset != rx->stream_next || e != rx->stream_exchange ||
                              (v->flags & MM_VEC_RESET)
                        : v->offset != 0) {
        if (rx->stream_next)
            snprintf(rx->why, sizeof rx->why, "%s floats %llu..+%llu of exchange %llu inside "
                     "the stream of exchange %llu, which is at float %llu",
                     v->flags & MM_VEC_RESET ? "a RESET of" : "chunk of",
                     (unsigned long long)v->offset, (unsigned long long)v->count,
                     (unsigned long long)e, (unsigned long long)rx->stream_exchange,
                     (unsigned long long)rx->stream_next);
        else
            snprintf(rx->why, sizeof rx->why, "chunk of floats %llu..+%llu of exchange %llu "
                     "starts no stream (a stream starts at float 0)",
                     (unsigned long long)v->offset, (unsigned long long)v->count,
                     (unsigned long long)e);
        return fail(rx, MM_WIRE_E_LENGTH);
    }
    uint64_t end = v->offset + v->count;
    rx->stream_next = end == rx->vec_len ? 0 : end;
    rx->stream_exchange = e;
    return MM_RX_MORE;
}

/* A STATE vector (docs/protocol.md 7.3): an elastic connection's, a whole
 * fp32 vector of weight 1, no other flag, its part in aux. */
static mm_rx_event check_state(mm_wire_rx *rx, const mm_wire_vec *v)
{
    if (!rx->max_members) {
        snprintf(rx->why, sizeof rx->why, "STATE flag on a connection of a static run");
        return fail(rx, MM_WIRE_E_TYPE);
    }
    if (v->flags != MM_VEC_STATE || v->codec != MM_WIRE_CODEC_FP32 || v->weight != 1.0 ||
        v->offset != 0 || v->count != rx->vec_len) {
        snprintf(rx->why, sizeof rx->why, "a STATE vector is a whole fp32 vector of weight 1 "
                 "and no other flag (flags 0x%02x, codec %u, weight %g, floats %llu..+%llu)",
                 v->flags, v->codec, v->weight, (unsigned long long)v->offset,
                 (unsigned long long)v->count);
        return fail(rx, MM_WIRE_E_TYPE);
    }
    if (!(v->aux == MM_STATE_PART_PARAMS || v->aux == MM_STATE_PART_M ||
          v->aux == MM_STATE_PART_V)) {
        snprintf(rx->why, sizeof rx->why, "STATE part %.17g is none of 0, 1, 2", v->aux);
        return fail(rx, MM_WIRE_E_VALUES);
    }
    return MM_RX_MORE;
}

void mm_wire_fragment(uint64_t n, uint32_t F, uint32_t f, uint64_t *lo, uint64_t *count)
{
    uint64_t a = (uint64_t)((unsigned __int128)n * f / F);
    uint64_t b = (uint64_t)((unsigned __int128)n * (f + 1) / F);
    *lo = a;
    *count = b - a;
}

/* With fragments: the frame's floats are fragment e mod F's (the whole of
 * it, or with allow_chunks a part of it). */
static mm_rx_event fragment_rule(mm_wire_rx *rx, const mm_wire_vec *v)
{
    uint32_t f = (uint32_t)(rx->hdr.exchange % rx->fragments);
    uint64_t lo, count;
    mm_wire_fragment(rx->vec_len, rx->fragments, f, &lo, &count);
    bool ok = rx->allow_chunks ? v->offset >= lo && v->offset + v->count <= lo + count
                               : v->offset == lo && v->count == count;
    if (ok)
        return MM_RX_MORE;
    snprintf(rx->why, sizeof rx->why, "floats %llu..+%llu in exchange %llu, whose fragment %u "
             "of %u is floats %llu..+%llu", (unsigned long long)v->offset,
             (unsigned long long)v->count, (unsigned long long)rx->hdr.exchange, f,
             rx->fragments, (unsigned long long)lo, (unsigned long long)count);
    return fail(rx, MM_WIRE_E_LENGTH);
}

/* The vector header of a VECTOR, as soon as its 40 bytes are in. */
static mm_rx_event check_vec(mm_wire_rx *rx)
{
    mm_wire_vec *v = &rx->vec;
    const uint8_t *p = rx->payload;
    mm_wire_get_vec(p, v);
    uint64_t body = rx->hdr.payload_len - MM_WIRE_VEC_HDR;
    rx->vec_checked = true;
    rx->body = rx->payload + MM_WIRE_VEC_HDR;
    if (!isfinite(v->weight)) {
        snprintf(rx->why, sizeof rx->why, "weight is not finite");
        return fail(rx, MM_WIRE_E_VALUES);
    }
    if (rx->weight_ok && !rx->weight_ok(rx->weight_ud, v->weight, rx->why, sizeof rx->why))
        return fail(rx, MM_WIRE_E_WEIGHT);
    v->view = rx->hdr.view;
    if (v->flags & ~MM_VEC_FLAGS) {
        snprintf(rx->why, sizeof rx->why, "unknown vector flags 0x%02x",
                 v->flags & ~MM_VEC_FLAGS);
        return fail(rx, MM_WIRE_E_TYPE);
    }
    if ((v->flags & MM_VEC_STATE) && check_state(rx, v) == MM_RX_ERROR)
        return MM_RX_ERROR;
    bool reset = v->flags & MM_VEC_RESET;
    if (reset && !rx->copies) {
        snprintf(rx->why, sizeof rx->why, "RESET flag on a connection without compressed "
                 "gossip (a public copy needs --compress on both ends)");
        return fail(rx, MM_WIRE_E_TYPE);
    }
    /* A RESET body is the whole copy in fp32 whatever the agreed codec, so
     * that it is exactly 4 * count bytes and checked for NaN/Inf below: a
     * RESET in another codec would make its receiver take 4 * count bytes
     * from a body that is shorter. */
    bool state = v->flags & MM_VEC_STATE;
    if (reset || state ? v->codec != MM_WIRE_CODEC_FP32 : v->codec != codec(rx)) {
        if (reset)
            snprintf(rx->why, sizeof rx->why, "RESET in codec %u: a RESET body is fp32 "
                     "(codec 1)", v->codec);
        else
            snprintf(rx->why, sizeof rx->why, "codec %u, but this connection agreed on "
                     "codec %u%s", v->codec, codec(rx),
                     v->codec == MM_WIRE_CODEC_FP32 ? " (fp32 only with the RESET flag)" : "");
        return fail(rx, MM_WIRE_E_CODEC);
    }
    if (!isfinite(v->aux)) {
        snprintf(rx->why, sizeof rx->why, "aux field is not finite");
        return fail(rx, MM_WIRE_E_VALUES);
    }
    bool whole = v->offset == 0 && v->count == rx->vec_len;
    bool fragmented = rx->fragments > 1;
    bool chunk_ok = rx->allow_chunks || (rx->streams && !reset) || fragmented;
    if (v->count == 0 || v->offset > rx->vec_len || v->count > rx->vec_len - v->offset ||
        (!whole && !chunk_ok)) {
        snprintf(rx->why, sizeof rx->why, "floats %llu..+%llu of a %llu-float vector%s",
                 (unsigned long long)v->offset, (unsigned long long)v->count,
                 (unsigned long long)rx->vec_len,
                 chunk_ok ? "" : reset && rx->streams ? " (a RESET is a whole vector)"
                                                      : " (only whole vectors on this connection)");
        return fail(rx, MM_WIRE_E_LENGTH);
    }
    if (fragmented && fragment_rule(rx, v) == MM_RX_ERROR)
        return MM_RX_ERROR;
    if (rx->streams && stream_order(rx, v) == MM_RX_ERROR)
        return MM_RX_ERROR;
    if (v->codec == MM_WIRE_CODEC_FP32 ? body != 4 * v->count : body > max_body(rx)) {
        snprintf(rx->why, sizeof rx->why, "body of %llu bytes for %llu floats of codec %u",
                 (unsigned long long)body, (unsigned long long)v->count, v->codec);
        return fail(rx, MM_WIRE_E_LENGTH);
    }
    void *dst = rx->body_dst ? rx->body_dst(rx->body_ud, &rx->hdr, v, (size_t)body) : NULL;
    if (dst)
        rx->body = dst;
    return MM_RX_MORE;
}

static mm_rx_event finish_payload(mm_wire_rx *rx)
{
    const mm_wire_header *h = &rx->hdr;
    if (!rx->no_payload_crc && rx->crc != h->payload_crc) {
        snprintf(rx->why, sizeof rx->why, "payload crc32c 0x%08x, computed 0x%08x",
                 h->payload_crc, rx->crc);
        return fail(rx, MM_WIRE_E_CHECKSUM);
    }
    if (h->type == MM_WIRE_HELLO) {
        /* like the header's reserved field: a peer that sets them speaks
         * something we do not know */
        const uint8_t *q = rx->payload;
        if (get32(q + 44) != 0) {
            snprintf(rx->why, sizeof rx->why, "reserved HELLO bytes (44..47) are not 0");
            return fail(rx, MM_WIRE_E_TYPE);
        }
        if (q[51] & ~MM_HELLO_FLAGS) {
            snprintf(rx->why, sizeof rx->why, "unknown HELLO flags 0x%02x (byte 51)",
                     q[51] & ~MM_HELLO_FLAGS);
            return fail(rx, MM_WIRE_E_TYPE);
        }
        char why[120];
        if (mm_wire_settings_check((const char *)q + MM_WIRE_HELLO_LEN,
                                   (size_t)h->payload_len - MM_WIRE_HELLO_LEN, why,
                                   sizeof why) != 0) {
            snprintf(rx->why, sizeof rx->why, "HELLO settings: %s", why);
            return fail(rx, MM_WIRE_E_TYPE);
        }
    }
    if (h->type == MM_WIRE_VECTOR && rx->bad_at != UINT64_MAX) {
        snprintf(rx->why, sizeof rx->why, "value %llu of %llu is NaN or Inf",
                 (unsigned long long)rx->bad_at, (unsigned long long)rx->vec.count);
        return fail(rx, MM_WIRE_E_VALUES);
    }
    rx->in_payload = false;
    rx->got = 0;
    return MM_RX_FRAME;
}

static void crc_bytes(mm_wire_rx *rx, const uint8_t *p, size_t n)
{
    if (!rx->no_payload_crc)
        rx->crc = mm_crc32c(rx->crc, p, n);
}

/* Floats k .. upto-1 of an fp32 body, whole in memory: the NaN/Inf check,
 * and with crc (and a connection that has one) the CRC, in one pass. */
static void take_floats(mm_wire_rx *rx, uint64_t k, uint64_t upto, bool crc)
{
    const float *v = (const float *)rx->body + k;
    size_t m = (size_t)(upto - k);
    bool bad;
    if (crc && !rx->no_payload_crc)
        rx->crc = mm_crc32c_finite(rx->crc, v, m, &bad);
    else
        bad = !mm_all_finite(v, m, NULL);
    uint64_t at;
    if (bad && rx->bad_at == UINT64_MAX && !mm_all_finite(v, m, &at))
        rx->bad_at = k + at;
    rx->checked = upto;
}

/* The n payload bytes just read at p (payload offsets got - n .. got).
 * fp32 values are checked as they arrive, while still in cache, in the
 * CRC's own pass over them; the verdict waits for the checksum (in
 * finish_payload) so that corruption reads as such. A float cut by the
 * end of a read is checked with the read that completes it. */
static void take_payload(mm_wire_rx *rx, const uint8_t *p, size_t n)
{
    if (rx->hdr.type != MM_WIRE_VECTOR || !rx->vec_checked ||
        rx->vec.codec != MM_WIRE_CODEC_FP32 || rx->bad_at != UINT64_MAX) {
        crc_bytes(rx, p, n);
        return;
    }
    uint64_t start = rx->got - n, at = start, k = rx->checked;
    uint64_t upto = (rx->got - MM_WIRE_VEC_HDR) / 4; /* whole floats in so far */
    if (upto > k) {
        uint64_t first = MM_WIRE_VEC_HDR + 4 * k; /* float k's payload offset */
        if (first < at) { /* float k began in the last read */
            crc_bytes(rx, p, (size_t)(first + 4 - at));
            take_floats(rx, k, k + 1, false);
            at = first + 4;
            k++;
        } else { /* the vector header's bytes in this read, if any */
            crc_bytes(rx, p, (size_t)(first - at));
            at = first;
        }
        take_floats(rx, k, upto, true);
        at = MM_WIRE_VEC_HDR + 4 * upto;
    }
    crc_bytes(rx, p + (at - start), (size_t)(rx->got - at));
}

mm_rx_event mm_wire_rx_advance(mm_wire_rx *rx, size_t n)
{
    if (rx->err)
        return MM_RX_ERROR;
    if (rx->in_payload) {
        /* (mm_wire_rx_want keeps a read that ends in the vector header
         * from reaching into a body that body_dst may put elsewhere, so
         * the n bytes are contiguous at p) */
        const uint8_t *p = payload_at(rx);
        rx->got += n;
        if (rx->hdr.type == MM_WIRE_VECTOR && !rx->vec_checked &&
            rx->got >= MM_WIRE_VEC_HDR && check_vec(rx) == MM_RX_ERROR)
            return MM_RX_ERROR;
        take_payload(rx, p, n);
        if (rx->got < rx->hdr.payload_len)
            return MM_RX_MORE;
        return finish_payload(rx);
    }
    rx->got += n;
    if (rx->got < MM_WIRE_HDR_LEN)
        return MM_RX_MORE;
    mm_wire_err e = mm_wire_get_header_ex(rx->hdr_raw, rx->hello_done,
                                          MM_WIRE_VEC_HDR + max_body(rx), rx->max_members,
                                          &rx->hdr, rx->why, sizeof rx->why);
    if (e)
        return fail(rx, e);
    if (rx->no_payload_crc && rx->hdr.payload_crc != 0) {
        snprintf(rx->why, sizeof rx->why, "payload crc32c field 0x%08x on a TLS "
                 "connection, where it must be 0", rx->hdr.payload_crc);
        return fail(rx, MM_WIRE_E_CHECKSUM);
    }
    rx->got = 0;
    rx->crc = 0;
    rx->checked = 0;
    rx->bad_at = UINT64_MAX;
    rx->vec_checked = false;
    if (rx->hdr.type == MM_WIRE_VECTOR) {
        if (!rx->vec_buf) {
            snprintf(rx->why, sizeof rx->why, "no receive buffer for vectors");
            return fail(rx, MM_WIRE_E_TYPE);
        }
        rx->payload = rx->vec_buf;
    } else if (rx->hdr.type == MM_WIRE_MEMBERS) {
        if (!rx->members_buf) {
            snprintf(rx->why, sizeof rx->why, "no receive buffer for membership tables");
            return fail(rx, MM_WIRE_E_TYPE);
        }
        rx->payload = rx->members_buf;
    } else {
        rx->payload = rx->ctrl;
    }
    rx->in_payload = true;
    if (rx->hdr.payload_len == 0)
        return finish_payload(rx);
    return MM_RX_MORE;
}
