/* A peer written from docs/protocol.md alone, for the end-to-end tests:
 * not murmur's transport, its own frames on a plain TCP socket, so that a
 * test can send what a conforming outside implementation may send and
 * murmur's own sender never does (a compressed q streamed in chunks of any
 * size, 3.2).
 *
 *   wire_peer HOST:PORT TOPOLOGY VEC_LEN CODEC CHUNK EXCHANGES SETTINGS_FILE
 *
 * It is peer 0 of the topology and dials peer 1 at HOST:PORT (plaintext,
 * --no-train --vector-len VEC_LEN, --algo dpsgd --compress CODEC), with
 * the settings text of SETTINGS_FILE in its HELLO (3.1: what `murmur node
 * --dry-run` prints after "settings every peer must share:"). Then
 * for each exchange e < EXCHANGES, once peer 1's vector of exchange e has
 * arrived (the pace of peer 1's rounds), it sends its own: at e = 0 a
 * RESET (its public copy, 6.10), after that CHOCO's q of a vector that
 * moves a little each exchange, streamed in chunks of CHUNK floats (the
 * last one shorter), each chunk's copy_crc that of its part of the copy.
 * Then BYE.
 *
 * Output: "sent N exchanges in K chunks" and exit 0; a REFUSE from peer 1
 * is printed ("refused: REASON") and exits 1, as does any other failure
 * (a socket error, 30 s without a frame). */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/crc32c.h"
#include "base/fs.h"
#include "gossip/choco.h"
#include "gossip/codec.h"
#include "gossip/topology.h"
#include "net/algo.h"
#include "net/wire.h"
#include "node/node.h"

#define WAIT_MS 30000

static int fd = -1;
static char *settings;
static size_t settings_len;

static void die(const char *what)
{
    fprintf(stderr, "wire_peer: %s\n", what);
    exit(1);
}

static void send_all(const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w <= 0)
            die("send failed (did peer 1 close the connection?)");
        b += w;
        n -= (size_t)w;
    }
}

static void recv_all(void *p, size_t n)
{
    uint8_t *b = p;
    while (n) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, WAIT_MS) <= 0)
            die("no frame from peer 1 for 30 s");
        ssize_t r = recv(fd, b, n, 0);
        if (r <= 0)
            die("peer 1 closed the connection");
        b += r;
        n -= (size_t)r;
    }
}

static void send_frame(uint16_t type, uint64_t exchange, const void *a, size_t alen,
                       const void *b, size_t blen)
{
    uint32_t crc = mm_crc32c(mm_crc32c(0, a, alen), b, blen);
    mm_wire_header h = {.type = type, .sender = 0, .exchange = exchange,
                        .payload_len = alen + blen, .payload_crc = crc};
    uint8_t hdr[MM_WIRE_HDR_LEN];
    mm_wire_put_header(hdr, &h);
    send_all(hdr, sizeof hdr);
    send_all(a, alen);
    send_all(b, blen);
}

/* The next frame from peer 1: its header; a REFUSE ends the program, any
 * other payload is read and dropped. */
static mm_wire_header next_frame(void)
{
    static uint8_t payload[1 << 16];
    uint8_t raw[MM_WIRE_HDR_LEN];
    mm_wire_header h;
    char why[200];
    recv_all(raw, sizeof raw);
    if (mm_wire_get_header(raw, true, UINT64_MAX, &h, why, sizeof why) != MM_WIRE_OK &&
        mm_wire_get_header(raw, false, UINT64_MAX, &h, why, sizeof why) != MM_WIRE_OK) {
        fprintf(stderr, "wire_peer: a bad header from peer 1: %s\n", why);
        exit(1);
    }
    for (uint64_t left = h.payload_len; left;) {
        size_t n = left < sizeof payload ? (size_t)left : sizeof payload;
        recv_all(payload, n);
        left -= n;
        if (h.type == MM_WIRE_REFUSE) {
            printf("refused: %.*s\n", (int)n, (const char *)payload);
            exit(1);
        }
    }
    return h;
}

static void dial(const char *hostport)
{
    char host[64];
    const char *colon = strrchr(hostport, ':');
    if (!colon || (size_t)(colon - hostport) >= sizeof host)
        die("HOST:PORT expected");
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        die("HOST must be an IPv4 address");
    for (int tries = 0; tries < 100; tries++) { /* peer 1 may still be starting */
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return;
        }
        close(fd);
        usleep(100000);
    }
    die("cannot connect to peer 1");
}

static void hello(const mm_topology *topo, const char *topo_path, uint64_t n,
                  const mm_codec_spec *spec)
{
    mm_wire_hello h = {.vec_len = n, .target = 1, .algo = MM_ALGO_DPSGD,
                       .codec = (uint8_t)spec->kind, .codec_block = spec->block,
                       .codec_frac = spec->frac};
    mm_vector_fingerprint((size_t)n, h.fingerprint);
    memcpy(h.topo_digest, mm_topo_digest(topo), 32);
    const char *slash = strrchr(topo_path, '/');
    snprintf(h.topo_name, sizeof h.topo_name, "%s", slash ? slash + 1 : topo_path);
    uint8_t buf[MM_WIRE_HELLO_LEN];
    mm_wire_put_hello(buf, &h);
    send_frame(MM_WIRE_HELLO, 0, buf, sizeof buf, settings, settings_len);
    if (next_frame().type != MM_WIRE_HELLO)
        die("peer 1 answered the HELLO with something else");
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: wire_peer HOST:PORT TOPOLOGY VEC_LEN CODEC CHUNK EXCHANGES "
                        "SETTINGS_FILE\n");
        return 2;
    }
    char err[512];
    uint64_t n = strtoull(argv[3], NULL, 10), chunk = strtoull(argv[5], NULL, 10);
    long exchanges = atol(argv[6]);
    mm_codec_spec spec;
    mm_topology *topo = mm_topo_load(argv[2], err, sizeof err);
    if (!topo)
        die(err);
    if (mm_codec_parse(argv[4], &spec, err, sizeof err) != 0)
        die(err);
    if (n == 0 || chunk == 0 || exchanges < 1)
        die("VEC_LEN, CHUNK and EXCHANGES must be positive");
    if (mm_read_file(argv[7], &settings, &settings_len, MM_WIRE_SETTINGS_MAX, err,
                     sizeof err) != 0)
        die(err);
    mm_codec *codec = mm_codec_new(&spec, n, err, sizeof err);
    if (!codec)
        die(err);
    float *x = malloc(4 * n), *self = malloc(4 * n);
    size_t cap = mm_codec_max_bytes(codec) + 4 * n;
    uint8_t *q = malloc(cap);
    if (!x || !self || !q)
        die("out of memory");
    for (uint64_t i = 0; i < n; i++)
        x[i] = self[i] = (float)sin(0.001 * (double)i);

    dial(argv[1]);
    hello(topo, argv[2], n, &spec);
    long chunks = 0;
    for (long e = 0; e < exchanges; e++) {
        mm_wire_header h;
        do /* peer 1's vector of exchange e: it is in round e */
            h = next_frame();
        while (h.type != MM_WIRE_VECTOR || h.exchange < (uint64_t)e);
        for (uint64_t i = 0; i < n; i++)
            x[i] += 0.01f * (float)cos(0.01 * (double)(i + (uint64_t)e));
        /* step 1 of 6.10 part by part: q of each chunk, the copy's part
         * updated, its CRC */
        for (uint64_t off = 0; off < n; off += chunk) {
            uint64_t cnt = n - off < chunk ? n - off : chunk;
            size_t len;
            uint32_t crc;
            if (mm_choco_encode_part(codec, x, self, off, cnt, q, cap, &len, &crc, err,
                                     sizeof err) != MM_CODEC_OK)
                die(err);
            if (e == 0)
                continue; /* the first exchange goes as a RESET of the copy */
            mm_wire_vec v = {.weight = 1.0, .codec = (uint8_t)spec.kind, .copy_crc = crc,
                             .offset = off, .count = cnt};
            uint8_t vh[MM_WIRE_VEC_HDR];
            mm_wire_put_vec(vh, &v);
            send_frame(MM_WIRE_VECTOR, (uint64_t)e, vh, sizeof vh, q, len);
            chunks++;
        }
        if (e == 0) {
            mm_wire_vec v = {.weight = 1.0, .codec = MM_WIRE_CODEC_FP32, .flags = MM_VEC_RESET,
                             .copy_crc = mm_choco_crc(self, n), .count = n};
            uint8_t vh[MM_WIRE_VEC_HDR];
            mm_wire_put_vec(vh, &v);
            send_frame(MM_WIRE_VECTOR, 0, vh, sizeof vh, self, 4 * n);
        }
    }
    send_frame(MM_WIRE_BYE, (uint64_t)exchanges, NULL, 0, NULL, 0);
    printf("sent %ld exchanges in %ld chunks\n", exchanges, chunks);
    close(fd);
    mm_codec_free(codec);
    mm_topo_free(topo);
    free(x);
    free(self);
    free(q);
    free(settings);
    return 0;
}
