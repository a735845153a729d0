/* A large run directory for `murmur report` without training: writes
 * OUT/node-K/metrics.jsonl for N peers through the peers' own metrics
 * writer (node/metrics.h), field by field in the order node/round.c writes
 * them, with eval sketches of 1024 floats whose spread shrinks like a
 * converging run. Deterministic. Used by `make bench-report`.
 *
 *   gen_run OUT N_PEERS ROUNDS EVAL_EVERY [--degree D] [--faults]
 *
 * --degree D: neighbours per peer (K±1, K±2, ...; default 2, a ring).
 * --faults: damage peers 1..7 the ways files get damaged, one per peer, so
 * the report has to warn and go on:
 *   node-1  torn last line (an eval line cut inside the sketch, no newline)
 *   node-2  a line cut inside the sketch, then a newline, the file goes on
 *   node-3  a non-JSON line ("Segmentation fault (core dumped)")
 *   node-4  numbers beyond a double ("loss":1e999; "round":1e400)
 *   node-5  a key twice ("round", the second one wrong)
 *   node-6  bytes that are not UTF-8 in a string (the end line's reason)
 *   node-7  killed in the middle of a line and restarted: the fragment and
 *           the new start line on one line, rounds from an older
 *           checkpoint written again
 * Prints the megabytes written. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/metrics.h"

#define DIM 1024
#define PARAMS 823552 /* 4 layers of width 128 */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double unif(uint64_t *s) { return (double)(splitmix(s) >> 11) * 0x1p-53; }

static double gauss(uint64_t *s)
{
    double u = unif(s) + 1e-300, v = unif(s);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static long arg_long(const char *s, const char *what, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "gen_run: %s must be an integer in [%ld, %ld], not '%s'\n", what, lo, hi, s);
        exit(2);
    }
    return v;
}

/* Writes raw bytes where a crash or a foreign writer would put them. */
static void raw(mm_metrics *m, const char *s, size_t n)
{
    if (write(m->fd, s, n) != (ssize_t)n) {
        perror("gen_run: write");
        exit(1);
    }
}

/* Writes the line being built only up to byte n, as a process killed in
 * the middle of write(2) would (the writer itself never does). */
static void torn(mm_metrics *m, size_t n)
{
    raw(m, m->buf, n);
    m->len = 0;
}

/* Writes the line being built with the first number after `at` (or `at`
 * itself when it is a number) replaced by `with`: a value no writer makes. */
static void damage_number(mm_metrics *m, const char *at, const char *with)
{
    char line[8192];
    int n = snprintf(line, sizeof line, "%.*s}\n", (int)m->len, m->buf);
    char *p = n > 0 && (size_t)n < sizeof line ? strstr(line, at) : NULL;
    if (!p) {
        fprintf(stderr, "gen_run: internal: no '%s' in the line\n", at);
        exit(1);
    }
    size_t skip = strcspn(p + strlen(at), ",}") + strlen(at);
    char out[8192];
    snprintf(out, sizeof out, "%.*s%s%s", (int)(p - line), line, with, p + skip);
    raw(m, out, strlen(out));
    m->len = 0;
}

typedef struct {
    int k, n, degree;
    const float *base; /* the common model's sketch */
    float *dev;        /* this peer's direction of spread */
    uint64_t rng;
    double t, tc, tm, tw, sent, recv;
} peer;

static void start_line(mm_metrics *m, const peer *p, long resumed)
{
    char topo[64];
    snprintf(topo, sizeof topo, "topologies/gen-%d-d%d.topo", p->n, p->degree);
    mm_metrics_begin(m, "start");
    mm_metrics_int(m, "peer", p->k);
    mm_metrics_int(m, "n_peers", p->n);
    mm_metrics_int(m, "params", PARAMS);
    mm_metrics_str(m, "algo", "dpsgd");
    mm_metrics_str(m, "topology", topo);
    mm_metrics_int(m, "sketch_dim", DIM);
    mm_metrics_int(m, "sketch_seed", 0x6d75726d7572LL);
    mm_metrics_int(m, "resumed_round", resumed);
    mm_metrics_int(m, "local_steps", 1);
    mm_metrics_int(m, "gossip_steps", 1);
    mm_metrics_int(m, "layers", 4);
    mm_metrics_int(m, "width", 128);
    mm_metrics_int(m, "heads", 4);
    mm_metrics_int(m, "ctx", 64);
    mm_metrics_int(m, "batch", 16);
    mm_metrics_int(m, "eval_windows", 64);
    mm_metrics_str(m, "data", "data/brown");
    mm_metrics_str(m, "partition", "iid");
    mm_metrics_num(m, "time", 0);
}

static void head(mm_metrics *m, const peer *p, const char *ev, long round, long step)
{
    mm_metrics_begin(m, ev);
    mm_metrics_int(m, "peer", p->k);
    mm_metrics_int(m, "round", round);
    mm_metrics_int(m, "step", step);
    mm_metrics_num(m, "time", p->t);
}

/* The eval line of round r at progress prog in [0, 1]; returns the length
 * of the line up to the middle of its sketch. */
static size_t eval_line(mm_metrics *m, peer *p, long r, double prog)
{
    static float y[DIM];
    double spread = 0.05 * exp(-4 * prog) + 0.002;
    double vl = 2.1 + 3.4 * exp(-5 * prog) + 0.01 * gauss(&p->rng);
    for (int i = 0; i < DIM; i++)
        y[i] = p->base[i] * (float)(1 + 0.3 * prog) + (float)spread * p->dev[i] +
               (float)(0.001 * gauss(&p->rng));
    head(m, p, "eval", r, r);
    mm_metrics_num(m, "val_loss", (float)vl);
    mm_metrics_num(m, "val_bpb", (float)(vl / log(2.0)));
    mm_metrics_num(m, "val_acc", (float)(0.62 - 0.45 * exp(-5 * prog)));
    mm_metrics_num(m, "norm", (float)(40 + 3 * prog));
    size_t before = m->len;
    mm_metrics_floats(m, "sketch", y, DIM);
    return before + (m->len - before) / 2;
}

static void round_line(mm_metrics *m, peer *p, long r, double prog, double loss)
{
    const double vec_bytes = PARAMS * 4.0 + 40;
    double dc = 0.12 + 0.01 * unif(&p->rng), dm = 0.004 + 0.001 * unif(&p->rng),
           dw = 0.03 * unif(&p->rng);
    p->t += dc + dm + dw + 0.002;
    p->tc += dc;
    p->tm += dm;
    p->tw += dw;
    p->sent += p->degree * vec_bytes;
    p->recv += p->degree * vec_bytes;
    double lr = r < 100 ? 1e-3 * (double)(r + 1) / 100
                        : 1e-3 * (0.1 + 0.45 * (1 + cos(3.14159265358979 * prog)));
    uint32_t ids[64];
    int d = p->degree < 64 ? p->degree : 64;
    for (int j = 0; j < d; j++) {
        int hop = j / 2 + 1;
        ids[j] = (uint32_t)((j & 1) ? (p->k + hop) % p->n : (p->k - hop + p->n) % p->n);
    }
    head(m, p, "round", r, r + 1);
    mm_metrics_num(m, "loss", (float)loss);
    mm_metrics_num(m, "lr", (float)lr);
    mm_metrics_int(m, "bytes_sent", (long long)p->sent);
    mm_metrics_int(m, "bytes_recv", (long long)p->recv);
    mm_metrics_num(m, "t_compute", p->tc);
    mm_metrics_num(m, "t_comm", p->tm);
    mm_metrics_num(m, "t_wait", p->tw);
    mm_metrics_ids(m, "nbrs", ids, d);
    mm_metrics_ids(m, "missing", NULL, 0);
    mm_metrics_obj_begin(m, "dist");
    double spread = (0.05 * exp(-4 * prog) + 0.002) * 30;
    for (int j = 0; j < d; j++)
        mm_metrics_obj_num(m, ids[j], (float)(spread * (1 + 0.2 * gauss(&p->rng))));
    mm_metrics_obj_end(m);
}

static void end_line(mm_metrics *m, const peer *p, long rounds, const char *reason)
{
    static const char *zero[] = {"tls_queued_peak", "refused", "bad_magic", "bad_version",
                                 "bad_type", "bad_length", "bad_checksum", "bad_fingerprint",
                                 "bad_round", "bad_values", "bad_identity", "bad_tls",
                                 "frame_timeouts", "peer_timeouts", "flood_refused"};
    head(m, p, "end", rounds, rounds);
    mm_metrics_str(m, "reason", reason);
    mm_metrics_int(m, "max_rss_kb", 61440);
    mm_metrics_int(m, "skipped_sends", 0);
    mm_metrics_int(m, "stale_dropped", 0);
    mm_metrics_int(m, "conns_accepted", p->degree / 2);
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
        mm_metrics_int(m, zero[i], 0);
}

static void end(mm_metrics *m)
{
    if (mm_metrics_end(m) != 0)
        exit(1); /* the writer said why */
}

/* One peer's file; fault is 0 or the damage of node-fault (top comment). */
static void write_peer(mm_metrics *m, peer *p, long rounds, long every, int fault)
{
    static const char crash[] = "Segmentation fault (core dumped)\n";
    long restart_at = fault == 7 ? rounds / 2 : -1;
    start_line(m, p, 0);
    end(m);
    for (long r = 0; r <= rounds; r++) {
        if (r == restart_at) {
            round_line(m, p, r, 0.5, 3.0);
            torn(m, m->len / 3);
            r -= 3 * every; /* resumed from an older checkpoint, counters from 0 */
            p->t = p->tc = p->tm = p->tw = p->sent = p->recv = 0;
            start_line(m, p, r);
            end(m);
            restart_at = -1;
        }
        double prog = (double)r / (double)rounds;
        if (r % every == 0 || r == rounds) {
            size_t mid = eval_line(m, p, r, prog);
            if (fault == 1 && r == rounds) {
                torn(m, mid);
                return; /* nothing after a torn last line */
            }
            if (fault == 2 && r == 3 * every) {
                torn(m, mid);
                raw(m, "\n", 1);
            } else {
                end(m);
            }
        }
        if (r == rounds)
            break;
        if (fault == 3 && r == rounds / 3)
            raw(m, crash, sizeof crash - 1);
        double loss = 2.0 + 3.5 * exp(-5 * prog) + 0.05 * gauss(&p->rng);
        if (fault == 4 && r == rounds / 4)
            loss = 12345.5; /* a marker, replaced below */
        round_line(m, p, r, prog, loss);
        if (fault == 5 && r == rounds / 5)
            mm_metrics_int(m, "round", r + 1000000); /* the writer does not check */
        if (fault == 4 && (r == rounds / 4 || r == rounds / 4 + 1)) {
            damage_number(m, r == rounds / 4 ? "12345.5" : "\"round\":",
                          r == rounds / 4 ? "1e999" : "\"round\":1e400");
            continue;
        }
        end(m);
    }
    end_line(m, p, rounds, fault == 6 ? "do\xffne" : "done");
    end(m);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: gen_run OUT N_PEERS ROUNDS EVAL_EVERY [--degree D] [--faults]\n");
        return 2;
    }
    const char *out = argv[1];
    int n = (int)arg_long(argv[2], "N_PEERS", 2, 100000);
    long rounds = arg_long(argv[3], "ROUNDS", 1, 100000000);
    long every = arg_long(argv[4], "EVAL_EVERY", 1, 100000000);
    int degree = 2, faults = 0;
    for (int i = 5; i < argc; i++) {
        if (!strcmp(argv[i], "--degree") && i + 1 < argc)
            degree = (int)arg_long(argv[++i], "--degree", 1, 64);
        else if (!strcmp(argv[i], "--faults"))
            faults = 1;
        else {
            fprintf(stderr, "gen_run: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (degree >= n) {
        fprintf(stderr, "gen_run: --degree %d needs more than %d peers\n", degree, degree);
        return 2;
    }
    if (faults && (n < 8 || rounds < 8 * every)) {
        fprintf(stderr, "gen_run: --faults needs 8 peers and 8 eval periods\n");
        return 2;
    }
    if (mkdir(out, 0755) && errno != EEXIST) {
        fprintf(stderr, "gen_run: %s: %s\n", out, strerror(errno));
        return 1;
    }
    static float base[DIM], dev[DIM];
    uint64_t g = 42;
    for (int i = 0; i < DIM; i++)
        base[i] = (float)(0.4 * gauss(&g));
    double total = 0;
    for (int k = 0; k < n; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/node-%d", out, k);
        if (mkdir(path, 0755) && errno != EEXIST) {
            fprintf(stderr, "gen_run: %s: %s\n", path, strerror(errno));
            return 1;
        }
        snprintf(path, sizeof path, "%s/node-%d/metrics.jsonl", out, k);
        if (unlink(path) && errno != ENOENT) {
            fprintf(stderr, "gen_run: %s: %s\n", path, strerror(errno));
            return 1;
        }
        mm_metrics m;
        char err[256];
        if (mm_metrics_open(&m, path, err, sizeof err)) {
            fprintf(stderr, "gen_run: %s\n", err);
            return 1;
        }
        peer p = {.k = k, .n = n, .degree = degree, .base = base, .dev = dev,
                  .rng = 1000 + (uint64_t)k};
        for (int i = 0; i < DIM; i++)
            dev[i] = (float)gauss(&p.rng);
        write_peer(&m, &p, rounds, every, faults && k >= 1 && k <= 7 ? k : 0);
        struct stat st;
        if (fstat(m.fd, &st) == 0)
            total += (double)st.st_size;
        mm_metrics_close(&m);
    }
    printf("%s: %d peers, %ld rounds, eval every %ld, degree %d%s: %.1f MB\n", out, n, rounds,
           every, degree, faults ? ", damaged lines" : "", total / 1e6);
    return 0;
}
