/* Test harness for the transport: N transports on one libuv loop in this
 * process, free loopback ports, certificates made by scripts/make-certs.sh,
 * deterministic vectors checked bit for bit, and a bounded pump. Header-only
 * so each tests/test_transport*.c stays its own program. */
#ifndef MURMUR_TNET_H
#define MURMUR_TNET_H

#include "base/log.h"
#include "gossip/mix.h"
#include "net/tls.h"
#include "net/transport.h"
#include "net/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TN_MAX 8

typedef struct tn_cluster tn_cluster;

typedef struct {
    tn_cluster *cl;
    uint32_t id;
    mm_transport *t;
    uint64_t recv_count[TN_MAX];
    uint64_t last_round[TN_MAX];
    double last_weight[TN_MAX];
    uint64_t bad_content;       /* vectors that were not bit-exact */
    uint64_t sent_ok, sent_fail;
    int up[TN_MAX], down[TN_MAX], bye[TN_MAX];
    bool hold;                  /* keep lent buffers (do not release) */
    int refusals[TN_MAX];       /* on_refused per peer ... */
    mm_refusal refusal[TN_MAX]; /* ... and the last one */
    int refusals_unknown;       /* on_refused without a peer */
} tn_node;

struct tn_cluster {
    uv_loop_t loop;
    uv_timer_t wake;
    uint32_t n;
    uint64_t vec_len;
    char addr[TN_MAX][40];
    const char *addrs[TN_MAX];
    tn_node node[TN_MAX];
    float *out[TN_MAX];          /* what node K sends in the current round */
    uint64_t out_round[TN_MAX];
    int closed;
    char certdir[64];
    double weight;               /* nonzero: every vector carries this weight */
};

/* A free loopback port below the kernel's ephemeral range: a port the
 * kernel handed out (bind to 0) may be taken by one of our own outgoing
 * connections before the listener gets to bind it. Never the same port
 * twice in one process: the probe binds and closes, so a port handed out
 * but not listened on yet looks free, and two transports of one cluster
 * could get it (seen: test_transport's tls_8 failed with "cannot listen on
 * 127.0.0.1:28628: address already in use"). */
static inline int tn_free_port(void)
{
    static unsigned seed;
    static int given[4096];
    static int n_given;
    int lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2)
            lo = 32768;
        fclose(f);
    }
    if (!seed)
        seed = (unsigned)getpid() * 2654435761u;
    for (int tries = 0; tries < 200 && lo > 20100; tries++) {
        seed = seed * 1103515245u + 12345u;
        int port = 20000 + (int)((seed >> 8) % (unsigned)(lo - 20000));
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int ok = bind(s, (struct sockaddr *)&a, sizeof a) == 0;
        close(s);
        for (int i = 0; ok && i < n_given; i++)
            ok = given[i] != port;
        if (ok && n_given < (int)(sizeof given / sizeof given[0])) {
            given[n_given++] = port;
            return port;
        }
    }
    return -1;
}

/* Finite floats with every mantissa bit exercised: clearing bit 30 keeps the
 * exponent below all-ones. */
static inline void tn_fill(float *v, uint64_t n, uint32_t sender, uint64_t round)
{
    uint64_t x = 0x9E3779B97F4A7C15ULL * (sender + 1) ^ (round * 0xBF58476D1CE4E5B9ULL) ^ 1;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t b = (uint32_t)x & ~(1U << 30);
        memcpy(&v[i], &b, 4);
    }
}

static inline double tn_weight(uint32_t sender, uint64_t round)
{
    return 1.0 / (double)(sender + 2) + (double)round;
}

/* A weight rule installed as murmur node installs its algorithm's: the
 * mixing's rule (gossip/mix.h) through the transport's weight_ok. Static
 * storage: a transport keeps the pointer. */
typedef mm_weight_check tn_weight_rule;

static inline void tn_set_weight_rule(mm_transport_config *c, const tn_weight_rule *r)
{
    c->weight_ok = mm_mix_weight_check;
    c->weight_ud = (void *)r;
}

/* The weight the cluster's vectors carry: tn_weight, or a fixed one for
 * transports with a weight rule (tn_set_weight_rule). */
static inline double tn_weight_of(const tn_cluster *cl, uint32_t sender, uint64_t round)
{
    return cl->weight != 0 ? cl->weight : tn_weight(sender, round);
}

static void tn_on_vector(void *ud, uint32_t peer, uint64_t round, const mm_wire_vec *meta,
                         const void *vec, size_t len)
{
    tn_node *nd = ud;
    tn_cluster *cl = nd->cl;
    double weight = meta->weight;
    nd->recv_count[peer]++;
    nd->last_round[peer] = round;
    nd->last_weight[peer] = weight;
    float *want = malloc(4 * cl->vec_len);
    tn_fill(want, cl->vec_len, peer, round);
    if (len != 4 * cl->vec_len || meta->codec != MM_WIRE_CODEC_FP32 ||
        meta->count != cl->vec_len || memcmp(want, vec, 4 * cl->vec_len) != 0 ||
        weight != tn_weight_of(cl, peer, round))
        nd->bad_content++;
    free(want);
    if (!nd->hold)
        mm_transport_release(nd->t, peer);
}

static void tn_on_sent(void *ud, uint32_t peer, uint64_t round, bool ok)
{
    tn_node *nd = ud;
    if (ok)
        nd->sent_ok++;
    else
        nd->sent_fail++;
}

static void tn_on_peer(void *ud, uint32_t peer, mm_peer_state st)
{
    tn_node *nd = ud;
    if (st == MM_PEER_UP) nd->up[peer]++;
    if (st == MM_PEER_DOWN) nd->down[peer]++;
    if (st == MM_PEER_BYE) nd->bye[peer]++;
}

static void tn_on_refused(void *ud, const mm_refusal *r)
{
    tn_node *nd = ud;
    if (r->peer == MM_PEER_UNKNOWN) {
        nd->refusals_unknown++;
    } else if (r->peer < TN_MAX) {
        nd->refusals[r->peer]++;
        nd->refusal[r->peer] = *r;
    }
}

static void tn_wake(uv_timer_t *t) { (void)t; }

static inline void tn_init(tn_cluster *cl, uint32_t n, uint64_t vec_len)
{
    memset(cl, 0, sizeof *cl);
    uv_loop_init(&cl->loop);
    uv_timer_init(&cl->loop, &cl->wake);
    uv_timer_start(&cl->wake, tn_wake, 5, 5);
    cl->n = n;
    cl->vec_len = vec_len;
    for (uint32_t i = 0; i < n; i++) {
        snprintf(cl->addr[i], sizeof cl->addr[i], "127.0.0.1:%d", tn_free_port());
        cl->addrs[i] = cl->addr[i];
        cl->node[i].cl = cl;
        cl->node[i].id = i;
    }
}

/* Makes (once per process) DIR with a CA and n peer certificates. */
static inline const char *tn_certs(const char *dir, int n)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sh scripts/make-certs.sh %s %d >/dev/null", dir, n);
    if (system(cmd) != 0)
        return NULL;
    return dir;
}

/* The end of a test program: removes the temporary directory dir and
 * returns the tests' status rc, or 1 when they passed but dir stayed. */
static inline int tn_done(int rc, const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0 && rc == 0)
        rc = 1;
    return rc;
}

static inline mm_transport_config tn_config(tn_cluster *cl, uint32_t id, const char *certdir)
{
    static mm_tls_files files[TN_MAX];
    mm_transport_config cfg = {0};
    cfg.self_id = id;
    cfg.n_peers = cl->n;
    cfg.addrs = cl->addrs;
    memset(cfg.fingerprint, 0xAB, 32);
    cfg.vec_len = cl->vec_len;
    if (!certdir) {
        cfg.plaintext = true;
    } else {
        mm_tls_files_for(certdir, id, &files[id]);
        cfg.ca_file = files[id].ca;
        cfg.cert_file = files[id].cert;
        cfg.key_file = files[id].key;
    }
    cfg.backoff_min_ms = 20;
    cfg.backoff_max_ms = 200;
    /* One frame of 64-256 MB on a loaded 2-core machine under the
     * sanitizers can take longer than the default 10 s to start arriving;
     * these tests are about bit-exact delivery, not liveness. */
    if (cl->vec_len >= (1u << 24))
        cfg.peer_timeout_ms = 60000;
    return cfg;
}

static inline mm_transport *tn_start(tn_cluster *cl, uint32_t id, const mm_transport_config *cfg)
{
    mm_transport_callbacks cb = {.on_vector = tn_on_vector, .on_sent = tn_on_sent,
                                 .on_peer = tn_on_peer, .ud = &cl->node[id],
                                 .on_refused = tn_on_refused};
    char err[256] = "";
    cl->node[id].t = mm_transport_new(&cl->loop, cfg, &cb, err, sizeof err);
    if (!cl->node[id].t)
        fprintf(stderr, "tn_start(%u): %s\n", id, err);
    return cl->node[id].t;
}

/* Runs the loop until cond(arg) or timeout_ms; returns cond's last value. */
static inline bool tn_pump(tn_cluster *cl, bool (*cond)(tn_cluster *, void *), void *arg,
                           uint64_t timeout_ms)
{
    uint64_t end = uv_hrtime() / 1000000 + timeout_ms;
    while (!cond(cl, arg)) {
        if (uv_hrtime() / 1000000 > end)
            return false;
        uv_run(&cl->loop, UV_RUN_ONCE);
    }
    return true;
}

static bool tn_never(tn_cluster *cl, void *arg) { (void)cl; (void)arg; return false; }
static inline void tn_run_for(tn_cluster *cl, uint64_t ms) { tn_pump(cl, tn_never, NULL, ms); }

typedef struct { uint32_t a, b; } tn_pair;

static bool tn_is_up(tn_cluster *cl, void *arg)
{
    tn_pair *p = arg;
    return mm_transport_is_up(cl->node[p->a].t, p->b) && mm_transport_is_up(cl->node[p->b].t, p->a);
}

static inline bool tn_wait_up(tn_cluster *cl, uint32_t a, uint32_t b, uint64_t ms)
{
    tn_pair p = {a, b};
    return tn_pump(cl, tn_is_up, &p, ms);
}

typedef struct { uint32_t to, from; uint64_t count; } tn_recv_arg;

static bool tn_has_recv(tn_cluster *cl, void *arg)
{
    tn_recv_arg *r = arg;
    return cl->node[r->to].recv_count[r->from] >= r->count;
}

typedef struct { uint32_t node; uint64_t count; } tn_sent_arg;

static inline bool tn_has_sent(tn_cluster *cl, void *arg)
{
    tn_sent_arg *a = arg;
    return cl->node[a->node].sent_ok >= a->count;
}

/* Sends node from's vector for round to node to and waits for it. */
static inline bool tn_send_and_wait(tn_cluster *cl, uint32_t from, uint32_t to, uint64_t round,
                                    uint64_t ms)
{
    if (!cl->out[from])
        cl->out[from] = malloc(4 * cl->vec_len);
    tn_fill(cl->out[from], cl->vec_len, from, round);
    tn_recv_arg r = {to, from, cl->node[to].recv_count[from] + 1};
    if (mm_transport_send(cl->node[from].t, to, round, tn_weight_of(cl, from, round), cl->out[from]) != 0)
        return false;
    return tn_pump(cl, tn_has_recv, &r, ms) && cl->node[to].last_round[from] == round;
}

static void tn_closed(void *ud) { (*(int *)ud)++; }

static bool tn_all_closed(tn_cluster *cl, void *arg)
{
    return cl->closed >= *(int *)arg;
}

/* Shuts every transport down, waits for their handles, frees everything. */
static inline int tn_destroy(tn_cluster *cl)
{
    int want = 0;
    for (uint32_t i = 0; i < cl->n; i++)
        if (cl->node[i].t) {
            mm_transport_shutdown(cl->node[i].t, tn_closed, &cl->closed);
            want++;
        }
    tn_pump(cl, tn_all_closed, &want, 5000);
    for (uint32_t i = 0; i < cl->n; i++) {
        mm_transport_free(cl->node[i].t);
        cl->node[i].t = NULL;
        free(cl->out[i]);
        cl->out[i] = NULL;
    }
    uv_close((uv_handle_t *)&cl->wake, NULL);
    for (int i = 0; i < 100 && uv_loop_alive(&cl->loop); i++)
        uv_run(&cl->loop, UV_RUN_NOWAIT);
    /* 0 only when every handle the transports opened was closed. */
    return uv_loop_close(&cl->loop);
}

#endif
