/* A hostile client for the fault campaign (tests/campaign/05_hostile_input.sh):
 * not a peer, it opens TCP connections to one peer and sends what no honest
 * peer sends. Every attack uses its own connection, because the first bad
 * frame closes a connection; the client then waits (bounded) for the peer to
 * close it and counts what the peer should have counted, per reason, so the
 * test can compare with the peer's refusal counters (its `end` metrics line).
 *
 *   hostile_client HOST PORT TARGET_ID MODE COUNT [SEED]
 *
 * MODE
 *   malformed  COUNT connections, cycling through the kinds below (plaintext peer)
 *   half       COUNT connections at once, each with half a frame header, then silence
 *   flood      COUNT connections at once that send nothing
 *   tls        COUNT connections to a TLS peer, one after another: random bytes
 *   tlshalf    COUNT connections at once to a TLS peer: a truncated TLS record
 *              (a ClientHello header and a few bytes of its body), then silence
 *
 * Output: one line per counter the peer should have incremented,
 * "expect NAME N", then "closed N of M" (connections the peer closed) and
 * "seconds S". Exit 1 when a connection could not be opened or the peer
 * did not close one in time (a peer that keeps a hostile connection open is
 * a failure too). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/algo.h"
#include "net/wire.h"

enum { C_MAGIC, C_VERSION, C_TYPE, C_LENGTH, C_CHECKSUM, C_FINGERPRINT, C_IDENTITY, C_TLS,
       C_TLS_MISMATCH, C_PEER_TIMEOUT, C_FLOOD_OR_TIMEOUT, C_N };
static const char *counter_name[C_N] = {
    "bad_magic", "bad_version", "bad_type", "bad_length", "bad_checksum", "bad_fingerprint",
    "bad_identity", "bad_tls", "tls_mismatch", "peer_timeouts", "flood_or_timeout",
};
static unsigned long expect[C_N];

static struct sockaddr_in peer_addr;
static uint32_t target;
static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&peer_addr, sizeof peer_addr) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Waits until the peer closes fd (EOF or reset), reading and dropping what
 * it says first (a REFUSE frame). 0 when closed within ms. */
static int wait_closed(int fd, int ms)
{
    double end = now_s() + ms / 1000.0;
    uint8_t buf[4096];
    for (;;) {
        int left = (int)((end - now_s()) * 1000);
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            return 0;
    }
}

static void header(uint8_t out[MM_WIRE_HDR_LEN], uint16_t type, uint32_t sender,
                   const uint8_t *payload, uint64_t len)
{
    mm_wire_header h = {.version = MM_WIRE_VERSION, .type = type, .sender = sender,
                        .exchange = 0, .payload_len = len,
                        .payload_crc = payload && len ? mm_crc32c(0, payload, len) : 0};
    mm_wire_put_header(out, &h);
}

static void fix_hdr_crc(uint8_t out[MM_WIRE_HDR_LEN])
{
    uint32_t c = mm_crc32c(0, out, 36);
    memcpy(out + 36, &c, 4); /* little-endian hosts only, like the tests */
}

/* One malformed message of kind k into buf; returns its length and the
 * counter the peer must increment. */
static size_t malformed(int k, uint8_t *buf, int *counter)
{
    uint8_t pl[MM_WIRE_HELLO_LEN];
    mm_wire_hello hello = {.vec_len = 1000, .target = target, .algo = MM_ALGO_DPSGD,
                           .codec = MM_WIRE_CODEC_FP32};
    for (int i = 0; i < 32; i++)
        hello.fingerprint[i] = (uint8_t)next_rand();
    mm_wire_put_hello(pl, &hello);
    uint32_t lower = target > 0 ? 0 : 1; /* a sender the peer would accept */
    switch (k) {
    case 0: { /* random bytes, at least a header's worth */
        size_t n = MM_WIRE_HDR_LEN + next_rand() % 2000;
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)next_rand();
        buf[0] = 'X'; /* random bytes are bad magic but for 1 in 2^32 */
        *counter = C_MAGIC;
        return n;
    }
    case 1: /* a TLS ClientHello record header and the start of its body: to a
             * plaintext peer, a TLS client (named as such, not bad magic) */
        memcpy(buf, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
        for (int i = 11; i < 64; i++)
            buf[i] = (uint8_t)next_rand();
        *counter = C_TLS_MISMATCH;
        return 64;
    case 2: /* bad magic, good everything else */
        header(buf, MM_WIRE_HELLO, lower, pl, sizeof pl);
        buf[0] ^= 0x20;
        fix_hdr_crc(buf);
        *counter = C_MAGIC;
        return MM_WIRE_HDR_LEN;
    case 3:
        header(buf, MM_WIRE_HELLO, lower, pl, sizeof pl);
        buf[4] = 7;
        fix_hdr_crc(buf);
        *counter = C_VERSION;
        return MM_WIRE_HDR_LEN;
    case 4: /* header CRC wrong */
        header(buf, MM_WIRE_HELLO, lower, pl, sizeof pl);
        buf[37] ^= 1;
        *counter = C_CHECKSUM;
        return MM_WIRE_HDR_LEN;
    case 5: /* a VECTOR before the HELLO */
        header(buf, MM_WIRE_VECTOR, lower, NULL, MM_WIRE_VEC_HDR + 4000);
        *counter = C_TYPE;
        return MM_WIRE_HDR_LEN;
    case 6: /* unknown type */
        header(buf, 99, lower, NULL, 0);
        *counter = C_TYPE;
        return MM_WIRE_HDR_LEN;
    case 7: /* HELLO with a wrong length */
        header(buf, MM_WIRE_HELLO, lower, pl, sizeof pl - 1);
        memcpy(buf + MM_WIRE_HDR_LEN, pl, sizeof pl - 1);
        *counter = C_LENGTH;
        return MM_WIRE_HDR_LEN + sizeof pl - 1;
    case 8: /* HELLO whose payload does not match its CRC */
        header(buf, MM_WIRE_HELLO, lower, pl, sizeof pl);
        memcpy(buf + MM_WIRE_HDR_LEN, pl, sizeof pl);
        buf[MM_WIRE_HDR_LEN + 3] ^= 0x40;
        *counter = C_CHECKSUM;
        return MM_WIRE_HDR_LEN + sizeof pl;
    case 9: /* a well-formed HELLO with another model's fingerprint */
        header(buf, MM_WIRE_HELLO, lower, pl, sizeof pl);
        memcpy(buf + MM_WIRE_HDR_LEN, pl, sizeof pl);
        *counter = target > 0 ? C_FINGERPRINT : C_IDENTITY;
        return MM_WIRE_HDR_LEN + sizeof pl;
    default: /* a HELLO claiming the peer's own id */
        header(buf, MM_WIRE_HELLO, target, pl, sizeof pl);
        memcpy(buf + MM_WIRE_HDR_LEN, pl, sizeof pl);
        *counter = C_IDENTITY;
        return MM_WIRE_HDR_LEN + sizeof pl;
    }
}
#define N_MALFORMED 11

/* Opens n connections at once, sends each the len bytes of msg (maybe
 * none), then waits up to hold_ms for the peer to close every one. Returns
 * how many it closed, -1 when a connection could not be opened. */
static int many_at_once(int n, int hold_ms, const uint8_t *msg, size_t len)
{
    int *fds = calloc((size_t)n, sizeof *fds);
    if (!fds)
        return -1;
    for (int i = 0; i < n; i++) {
        fds[i] = dial();
        if (fds[i] < 0) {
            fprintf(stderr, "hostile_client: connection %d: %s\n", i, strerror(errno));
            return -1;
        }
        if (len)
            send_all(fds[i], msg, len);
    }
    int closed = 0;
    double end = now_s() + hold_ms / 1000.0;
    for (int i = 0; i < n; i++) {
        int left = (int)((end - now_s()) * 1000);
        if (wait_closed(fds[i], left > 0 ? left : 1) == 0)
            closed++;
        close(fds[i]);
    }
    free(fds);
    return closed;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: hostile_client HOST PORT TARGET_ID malformed|half|flood|tls|tlshalf COUNT [SEED]\n");
        return 2;
    }
    memset(&peer_addr, 0, sizeof peer_addr);
    peer_addr.sin_family = AF_INET;
    peer_addr.sin_port = htons((uint16_t)atoi(argv[2]));
    if (inet_pton(AF_INET, argv[1], &peer_addr.sin_addr) != 1) {
        fprintf(stderr, "hostile_client: %s: not an IPv4 address\n", argv[1]);
        return 2;
    }
    target = (uint32_t)strtoul(argv[3], NULL, 10);
    const char *mode = argv[4];
    long count = strtol(argv[5], NULL, 10);
    if (argc > 6)
        rng ^= strtoull(argv[6], NULL, 10) * 0xBF58476D1CE4E5B9ULL;
    if (count <= 0 || count > 1000000) {
        fprintf(stderr, "hostile_client: COUNT must be 1..1000000\n");
        return 2;
    }
    static uint8_t buf[MM_WIRE_HDR_LEN + 4096];
    double t0 = now_s();
    long closed = 0;
    if (!strcmp(mode, "malformed") || !strcmp(mode, "tls")) {
        int tls = mode[0] == 't';
        for (long i = 0; i < count; i++) {
            int fd = dial();
            if (fd < 0) {
                fprintf(stderr, "hostile_client: connection %ld: %s\n", i, strerror(errno));
                return 1;
            }
            int counter;
            size_t n;
            if (tls) { /* random bytes: not a TLS record */
                n = 100 + next_rand() % 1000;
                for (size_t j = 0; j < n; j++)
                    buf[j] = (uint8_t)next_rand();
                buf[0] = 0xEE; /* no valid record type */
                counter = C_TLS;
            } else {
                n = malformed((int)(i % N_MALFORMED), buf, &counter);
            }
            if (send_all(fd, buf, n) == 0 || errno == ECONNRESET || errno == EPIPE)
                expect[counter]++;
            if (wait_closed(fd, 3000) == 0)
                closed++;
            close(fd);
        }
    } else if (!strcmp(mode, "half") || !strcmp(mode, "tlshalf")) {
        /* half a frame header, or a TLS record header announcing 512 bytes
         * and 24 of them: then silence until the peer gives up */
        size_t n = MM_WIRE_HDR_LEN / 2;
        if (mode[0] == 't') {
            memcpy(buf, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
            for (int j = 11; j < 35; j++)
                buf[j] = (uint8_t)next_rand();
            n = 35;
        } else {
            header(buf, MM_WIRE_HELLO, 0, NULL, MM_WIRE_HELLO_LEN);
        }
        closed = many_at_once((int)count, 15000, buf, n);
        expect[C_PEER_TIMEOUT] = (unsigned long)count;
    } else if (!strcmp(mode, "flood")) {
        closed = many_at_once((int)count, 15000, NULL, 0);
        expect[C_FLOOD_OR_TIMEOUT] = (unsigned long)count;
    } else {
        fprintf(stderr, "hostile_client: unknown mode %s\n", mode);
        return 2;
    }
    if (closed < 0)
        return 1;
    for (int c = 0; c < C_N; c++)
        if (expect[c])
            printf("expect %s %lu\n", counter_name[c], expect[c]);
    printf("closed %ld of %ld\n", closed, count);
    printf("seconds %.2f\n", now_s() - t0);
    return closed == count ? 0 : 1;
}
