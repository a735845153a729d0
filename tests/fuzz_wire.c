/* libFuzzer target for the frame decoder (net/wire.c).
 * Input: byte 0 = options (bit 0: repair checksums so mutations reach the
 * checks behind them; bit 1: a TLS connection, where the payload CRC field
 * is 0 and not computed; bits 2..7: how the stream is split into reads),
 * byte 1 = the weight rule (value mod 3: any finite, exactly 1, push-sum)
 * and, in bits 2..7, the number of peers minus 1 (push-sum's largest
 * weight), the rest = bytes as they would arrive on a socket. After a
 * HELLO the connection takes the codec and algorithm it names (all-reduce
 * allows chunks), as a transport that accepted it would. The decoder must
 * never read or write outside its buffers, never ask for 0 bytes, must stop
 * at the first error, and must never deliver a HELLO with non-zero reserved
 * bytes or a settings text that breaks its rules (checked here again with
 * a reading of the rules of its own, docs/protocol.md 3.1, and diffed
 * against a fixed text as a refusal would be), nor a VECTOR whose vector
 * header breaks a rule (weight, codec,
 * flags, aux, offset and count, the fp32 body's length) or
 * whose fp32 body holds NaN/Inf. Built with -DFUZZ_SEEDGEN it writes a seed
 * corpus. */
#include "base/finite.h"
#include "gossip/mix.h"
#include "net/algo.h"
#include "net/wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_MAX_VEC 4096

/* Rewrites header and payload CRCs in place, frame by frame, as far as the
 * lengths allow (payload CRCs as 0 on TLS). */
static void repair(uint8_t *s, size_t len, bool tls)
{
    size_t off = 0;
    while (off + MM_WIRE_HDR_LEN <= len) {
        uint8_t *h = s + off;
        uint64_t plen = 0;
        for (int i = 7; i >= 0; i--)
            plen = plen << 8 | h[24 + i];
        size_t body = off + MM_WIRE_HDR_LEN;
        if (plen <= len - body) {
            uint32_t c = tls ? 0 : mm_crc32c(0, s + body, (size_t)plen);
            for (int i = 0; i < 4; i++)
                h[32 + i] = (uint8_t)(c >> (8 * i));
        }
        uint32_t hc = mm_crc32c(0, h, 36);
        for (int i = 0; i < 4; i++)
            h[36 + i] = (uint8_t)(hc >> (8 * i));
        if (plen > len - body)
            break;
        off = body + (size_t)plen;
    }
}

/* docs/protocol.md 3.1's settings rules, read apart from net/wire.c's
 * reading: lines KEY[=VALUE], KEY 1..32 of a-z 0-9 '-' from a letter,
 * VALUE 1 or more bytes 0x21..0x7e, keys strictly increasing. */
static bool settings_ok(const uint8_t *t, size_t len)
{
    const uint8_t *prev = NULL;
    size_t prev_len = 0, i = 0;
    while (i < len) {
        size_t k = i;
        while (i < len && ((t[i] >= 'a' && t[i] <= 'z') ||
                           (i > k && ((t[i] >= '0' && t[i] <= '9') || t[i] == '-'))))
            i++;
        size_t klen = i - k;
        if (klen == 0 || klen > 32)
            return false;
        if (i < len && t[i] == '=') {
            size_t v = ++i;
            while (i < len && t[i] > 0x20 && t[i] < 0x7f)
                i++;
            if (i == v)
                return false;
        }
        if (i == len || t[i] != '\n')
            return false;
        i++;
        if (prev) {
            size_t m = prev_len < klen ? prev_len : klen;
            int c = memcmp(prev, t + k, m);
            if (c > 0 || (c == 0 && prev_len >= klen))
                return false;
        }
        prev = t + k;
        prev_len = klen;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t opt = data[0];
    /* the weight rule as murmur node installs it (the mixing's, through
     * the decoder's weight_ok) */
    mm_weight_check rule = {(mm_weight_rule)(data[1] % 3), (uint32_t)(data[1] >> 2) + 1};
    size_t len = size - 2;
    uint8_t *s = malloc(len ? len : 1);
    memcpy(s, data + 2, len);
    bool tls = opt & 2;
    if (opt & 1)
        repair(s, len, tls);
    size_t step = (size_t)((opt >> 2) & 0x1f) + 1;
    /* bit 7: a connection of an elastic run (docs/protocol.md 7) */
    bool elastic = opt & 0x80;
    static uint8_t mbuf[8 + 128 * 4];

    static uint8_t vbuf[MM_WIRE_VEC_HDR + 4 * FZ_MAX_VEC];
    mm_wire_rx rx;
    memset(&rx, 0, sizeof rx);
    rx.no_payload_crc = tls;
    rx.weight_ok = mm_mix_weight_check;
    rx.weight_ud = &rule;
    if (elastic) {
        rx.max_members = sizeof mbuf;
        rx.members_buf = mbuf;
    }
    mm_wire_rx_init(&rx);
    size_t pos = 0;
    while (pos < len) {
        uint8_t *p;
        size_t want;
        mm_wire_rx_want(&rx, &p, &want);
        if (want == 0)
            abort();
        size_t n = want < step ? want : step;
        if (n > len - pos)
            n = len - pos;
        memcpy(p, s + pos, n);
        pos += n;
        mm_rx_event ev = mm_wire_rx_advance(&rx, n);
        if (ev == MM_RX_ERROR) {
            if (rx.err == MM_WIRE_OK || mm_wire_rx_advance(&rx, 0) != MM_RX_ERROR)
                abort(); /* errors are final */
            break;
        }
        if (ev == MM_RX_FRAME && rx.hdr.type == MM_WIRE_HELLO) {
            const uint8_t *q = rx.payload;
            if (q[44] | q[45] | q[46] | q[47] | (q[51] & ~MM_HELLO_FLAGS))
                abort(); /* reserved bytes must be 0 (50 is the algo variant, 51 flags) */
            size_t slen = (size_t)rx.hdr.payload_len - MM_WIRE_HELLO_LEN;
            if (slen > MM_WIRE_SETTINGS_MAX || !settings_ok(q + MM_WIRE_HELLO_LEN, slen))
                abort(); /* a settings text that breaks the rules */
            char diff[MM_WIRE_REFUSE_MAX];
            static const char ours[] = "gossip-steps=1\nlocal-steps=2\nouter=none\n";
            mm_wire_settings_diff((const char *)q + MM_WIRE_HELLO_LEN, slen, 1, ours,
                                  sizeof ours - 1, 2, diff, sizeof diff);
            if (strlen(diff) >= sizeof diff)
                abort();
            /* what the transport does after a HELLO it accepts */
            mm_wire_hello h;
            mm_wire_get_hello(rx.payload, &h);
            if (h.vec_len == 0 || h.vec_len > FZ_MAX_VEC || h.codec == 0 ||
                h.codec > MM_WIRE_CODEC_MAX)
                break;
            rx.hello_done = true;
            rx.vec_len = h.vec_len;
            rx.vec_buf = vbuf;
            rx.codec = h.codec;
            rx.allow_chunks = h.algo == MM_ALGO_ALLREDUCE;
        }
        if (ev == MM_RX_FRAME && rx.hdr.type == MM_WIRE_VECTOR) {
            const mm_wire_vec *v = &rx.vec;
            uint64_t body = rx.hdr.payload_len - MM_WIRE_VEC_HDR;
            bool reset = v->flags & MM_VEC_RESET;
            if (!mm_mix_weight_ok(rule.rule, v->weight, rule.n_peers, NULL, 0) ||
                (v->flags & ~MM_VEC_FLAGS) || !isfinite(v->aux))
                abort(); /* a weight the rule forbids, unknown bits, aux not finite */
            bool state = v->flags & MM_VEC_STATE;
            if (v->codec != rx.codec && !((reset || state) && v->codec == MM_WIRE_CODEC_FP32))
                abort(); /* another codec */
            if (state && (!elastic || v->flags != MM_VEC_STATE || v->weight != 1.0 ||
                          v->offset != 0 || v->count != rx.vec_len ||
                          !(v->aux == 0 || v->aux == 1 || v->aux == 2)))
                abort(); /* a STATE vector outside an elastic run, or not whole and plain */
            if (rx.hdr.view != 0 && !elastic)
                abort(); /* a view tag on a static run's connection */
            if (v->count == 0 || v->offset > rx.vec_len || v->count > rx.vec_len - v->offset ||
                (!rx.allow_chunks && (v->offset != 0 || v->count != rx.vec_len)))
                abort(); /* outside the vector, or a chunk where none may go */
            if (v->codec == MM_WIRE_CODEC_FP32 &&
                (body != 4 * v->count ||
                 !mm_all_finite((const float *)(rx.payload + MM_WIRE_VEC_HDR), v->count,
                                     NULL)))
                abort(); /* an fp32 body of another length, or NaN/Inf */
            if (body > 4 * rx.vec_len)
                abort(); /* longer than the receive buffer */
        }
        if (ev == MM_RX_FRAME && rx.hdr.type >= MM_WIRE_MEMBERS) {
            if (!elastic || !rx.hello_done)
                abort(); /* membership frames: elastic runs only, after the HELLO */
            if ((rx.hdr.type == MM_WIRE_MEMBERS && rx.hdr.payload_len > sizeof mbuf) ||
                (rx.hdr.type == MM_WIRE_JOIN && rx.hdr.payload_len != MM_WIRE_JOIN_LEN) ||
                (rx.hdr.type == MM_WIRE_STATE_REQ && rx.hdr.payload_len != MM_WIRE_STATE_REQ_LEN))
                abort(); /* their lengths are checked before a byte is read */
        }
        if (ev == MM_RX_FRAME && rx.hdr.view != 0 && rx.hdr.type != MM_WIRE_VECTOR)
            abort(); /* a view tag is a VECTOR's */
        if (ev == MM_RX_FRAME && tls && rx.hdr.payload_crc != 0)
            abort(); /* TLS: a CRC where 0 belongs is refused */
    }
    free(s);
    return 0;
}

#ifdef FUZZ_SEEDGEN
static size_t frame(uint8_t *out, uint16_t type, uint64_t round, const void *p, size_t n,
                    bool tls)
{
    mm_wire_header h = {.type = type, .sender = 1, .exchange = round, .payload_len = n,
                        .payload_crc = tls ? 0 : mm_crc32c(0, p, n)};
    mm_wire_put_header(out, &h);
    if (n) /* p is NULL for empty payloads */
        memcpy(out + MM_WIRE_HDR_LEN, p, n);
    return MM_WIRE_HDR_LEN + n;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    static uint8_t buf[2 + 4 * (MM_WIRE_HDR_LEN + MM_WIRE_VEC_HDR + 4 * 16) + 600 + 200];
    for (int k = 0; k < 8; k++) {
        size_t n = 0;
        bool tls = k >= 4; /* seeds 4..7: the same streams on TLS */
        buf[n++] = (uint8_t)(((k % 4) * 37 & ~2) | (tls ? 2 : 0));
        buf[n++] = (uint8_t)(k % 3 | 3 << 2); /* rules in turn, 4 peers */
        /* seed 1 (and 5): all-reduce, whose vectors may be chunks */
        mm_wire_hello h = {.vec_len = 16, .target = 2, .codec = MM_WIRE_CODEC_FP32,
                           .algo = k % 4 == 1 ? MM_ALGO_ALLREDUCE : MM_ALGO_DPSGD};
        memset(h.fingerprint, 7, 32);
        /* with a settings text, as murmur node's (seeds 0, 2: none) */
        static const char settings[] = "gossip-steps=2\nlocal-steps=1\nno-train\nouter=none\n";
        size_t slen = k % 2 ? sizeof settings - 1 : 0;
        uint8_t hp[MM_WIRE_HELLO_LEN + sizeof settings];
        mm_wire_put_hello(hp, &h);
        memcpy(hp + MM_WIRE_HELLO_LEN, settings, slen);
        if (k % 4 == 3) {
            n += frame(buf + n, MM_WIRE_REFUSE, 0, "fingerprint differs", 19, tls);
        } else {
            n += frame(buf + n, MM_WIRE_HELLO, 0, hp, MM_WIRE_HELLO_LEN + slen, tls);
            uint8_t v[MM_WIRE_VEC_HDR + 4 * 16] = {0};
            /* weight 1, what every rule allows; a chunk of floats 4..11 for all-reduce */
            mm_wire_vec m = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .count = 16};
            if (k % 4 == 1) {
                m.offset = 4;
                m.count = 8;
            }
            mm_wire_put_vec(v, &m);
            for (int i = 0; i < 16; i++) {
                float f = (float)i;
                memcpy(v + MM_WIRE_VEC_HDR + 4 * i, &f, 4);
            }
            n += frame(buf + n, MM_WIRE_VECTOR, 3, v, MM_WIRE_VEC_HDR + 4 * m.count, tls);
            n += frame(buf + n, MM_WIRE_PING, 4, NULL, 0, tls);
            if (k % 4 == 2)
                n += frame(buf + n, MM_WIRE_BYE, 4, NULL, 0, tls);
        }
        char path[512];
        snprintf(path, sizeof path, "%s/seed-%d", argv[1], k);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(buf, 1, n, f) != n)
            return 1;
        fclose(f);
    }
    return 0;
}
#endif
