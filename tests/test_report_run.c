/* murmur report on a synthetic run directory written here in the formats
 * of docs/metrics.md: 4 peers, 20 rounds, evals at rounds 4, 9, 14, 19,
 * with a restarted peer, a peer missing at one eval, a torn last line, a
 * garbage line, a damaged snapshot and snapshots from only some peers.
 * Every expected figure is computed here from the vectors written. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>


#include "gossip/sketch.h"
#include "report/report.h"
#include "report/snapshot.h"
#include "tests/testutil.h"

#define NP 4
#define P 20000
#define DIM 1024
#define SEED 77

static char run[256];

/* The averaged-model callback (mm_report_opts.eval_average), a stand-in to
 * check what the report hands over: it returns the round as "loss" and
 * xbar[0] as "accuracy". */
static int hook_calls;
static double hook_xbar0;
static int fake_eval_average(const float *xbar, size_t n, int64_t round, const char *run_dir,
                           double *val_loss, double *val_acc)
{
    (void)run_dir;
    hook_calls++;
    if (n != P)
        return -1;
    hook_xbar0 = xbar[0];
    *val_loss = (double)round;
    *val_acc = xbar[0];
    return 0;
}

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Peer i's parameters at round r: a shared base plus a per-peer deviation
 * that shrinks with r (the replicas converge). */
static void params(int i, int64_t r, float *x)
{
    double scale = 0.1 / (1.0 + (double)r);
    for (size_t p = 0; p < P; p++) {
        double base = 0.02 * (double)((int64_t)(mix(p) % 2001) - 1000) / 1000.0;
        double dev = (double)((int64_t)(mix(p * 31 + (uint64_t)i * 7 + (uint64_t)r * 1000003) % 2001) - 1000) / 1000.0;
        x[p] = (float)(base + scale * dev);
    }
}

/* tu_xi over n (at most NP) rows of dim floats stored one after another */
static double xi_of(const float *x, int n, size_t dim)
{
    const float *rows[NP];
    assert_true(n <= NP);
    for (int k = 0; k < n; k++)
        rows[k] = x + (size_t)k * dim;
    return tu_xi(rows, n, dim);
}

static double exact_xi(const int *ids, int n, int64_t r)
{
    float *x = malloc((size_t)n * P * sizeof *x);
    for (int k = 0; k < n; k++)
        params(ids[k], r, x + (size_t)k * P);
    double xi = xi_of(x, n, P);
    free(x);
    return xi;
}

static double sketch_xi(const int *ids, int n, int64_t r)
{
    float *x = malloc(P * sizeof *x), *y = malloc((size_t)n * DIM * sizeof *y);
    for (int k = 0; k < n; k++) {
        params(ids[k], r, x);
        mm_sketch(x, P, SEED, y + (size_t)k * DIM, DIM);
        for (int b = 0; b < DIM; b++) { /* as written in the JSON */
            char buf[32];
            snprintf(buf, sizeof buf, "%.9g", y[(size_t)k * DIM + b]);
            y[(size_t)k * DIM + b] = strtof(buf, NULL);
        }
    }
    double xi = xi_of(y, n, DIM);
    free(x);
    free(y);
    return xi;
}

/* Written with the node's own writer (report/snapshot.h owns the format). */
static void write_snapshot(int i, int64_t r)
{
    float *x = malloc(P * sizeof *x);
    assert_non_null(x);
    params(i, r, x);
    char err[512];
    if (mm_snapshot_write(run, i, r, x, P, err, sizeof err) != 0)
        fail_msg("%s", err);
    free(x);
}

/* Counters of a segment that started at round s0: per round 1000 bytes
 * sent, 2000 received, 0.5 s of which 0.3 compute, 0.05 comm, 0.1 wait. */
static void round_line(FILE *f, int i, int64_t r, int64_t s0)
{
    double k = (double)(r - s0 + 1);
    fprintf(f, "{\"ev\":\"round\",\"round\":%lld,\"step\":%lld,\"time\":%.3f,\"loss\":%.6f,"
               "\"lr\":0.001,\"bytes_sent\":%.0f,\"bytes_recv\":%.0f,\"t_compute\":%.4f,"
               "\"t_comm\":%.4f,\"t_wait\":%.4f,\"nbrs\":2,\"missing\":0,"
               "\"dist\":{\"%d\":0.5,\"%d\":1.5}}\n",
            (long long)r, (long long)r + 1, 0.5 * k, 5.0 - 0.1 * (double)r + 0.01 * i,
            1000 * k, 2000 * k, 0.3 * k, 0.05 * k, 0.1 * k, (i + 1) % NP, (i + NP - 1) % NP);
}

static void eval_line(FILE *f, int i, int64_t r, int64_t s0)
{
    float *x = malloc(P * sizeof *x), y[DIM];
    params(i, r, x);
    mm_sketch(x, P, SEED, y, DIM);
    fprintf(f, "{\"ev\":\"eval\",\"round\":%lld,\"step\":%lld,\"time\":%.3f,\"val_loss\":%.6f,"
               "\"val_bpb\":1.5,\"val_acc\":%.6f,\"norm\":1.0,\"sketch\":[",
            (long long)r, (long long)r + 1, 0.5 * (double)(r - s0 + 1) + 0.01,
            4.0 - 0.1 * (double)r, 0.1 + 0.01 * (double)r + 0.001 * i);
    for (int b = 0; b < DIM; b++)
        fprintf(f, "%s%.9g", b ? "," : "", y[b]);
    fprintf(f, "]}\n");
    free(x);
}

static void start_line(FILE *f, int i, int64_t resumed)
{
    fprintf(f, "{\"ev\":\"start\",\"peer\":%d,\"n_peers\":%d,\"params\":%d,\"algo\":\"dpsgd\","
               "\"topology\":\"ring-4.topo\",\"sketch_dim\":%d,\"sketch_seed\":%d,"
               "\"resumed_round\":%lld,\"time\":0}\n", i, NP, P, DIM, SEED, (long long)resumed);
}

static void make_run(void)
{
    snprintf(run, sizeof run, "/tmp/mm-report-test-XXXXXX");
    assert_non_null(mkdtemp(run));
    for (int i = 0; i < NP; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/node-%d", run, i);
        mkdir(path, 0777);
        snprintf(path, sizeof path, "%s/node-%d/metrics.jsonl", run, i);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        start_line(f, i, 0);
        int64_t s0 = 0;
        for (int64_t r = 0; r < 20; r++) {
            if (i == 2 && r == 13 && s0 == 0) { /* peer 2 crashed after round 12, resumed at 10 */
                fprintf(f, "{\"ev\":\"round\",\"round\":13,\"st"); /* killed mid-line */
                start_line(f, i, 10);
                s0 = 10;
                r = 10;
            }
            round_line(f, i, r, s0);
            if (i == 0 && r == 7)
                fprintf(f, "this is not json\n");
            if (r % 5 == 4 && !(i == 3 && r == 14))
                eval_line(f, i, r, s0);
        }
        fprintf(f, "{\"ev\":\"end\",\"round\":19,\"step\":20,\"time\":%.3f,\"reason\":\"done\"}\n",
                0.5 * (double)(20 - s0) + 0.02);
        if (i == 1)
            fprintf(f, "{\"ev\":\"round\",\"round\":20,\"lo");
        fclose(f);
        write_snapshot(i, 9);
        if (i != 3)
            write_snapshot(i, 14);
        write_snapshot(i, 19);
    }
    write_snapshot(0, 4); /* one peer only: round 4 stays a sketch round */
    /* damage peer 0's round-19 snapshot: round 19 falls back to the sketch */
    char path[512];
    snprintf(path, sizeof path, "%s/node-0/snap/r%08d.bin", run, 19);
    FILE *f = fopen(path, "r+b");
    fseek(f, 32 + 4 * 100, SEEK_SET);
    fputc(0x55, f);
    fclose(f);
}

static void rm_run(void)
{
    if (getenv("MM_KEEP_RUN")) { /* to look at the run with the CLI */
        fprintf(stderr, "kept %s\n", run);
        return;
    }
    assert_int_equal(tu_rm_rf(run), 0);
}

static const mm_rep_row *row_at(const mm_report *r, int64_t round)
{
    for (size_t i = 0; i < r->n_rows; i++)
        if (r->rows[i].round == round)
            return &r->rows[i];
    return NULL;
}

static void close_rel(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want))) {
        fprintf(stderr, "got %.10g want %.10g (rel tol %g)\n", got, want, rel);
        fail();
    }
}

static void test_synthetic_run(void **state)
{
    (void)state;
    make_run();
    mm_report r;
    char err[256];
    FILE *warn = tmpfile();
    mm_report_opts opt = {.warn = warn, .eval_average = fake_eval_average};
    hook_calls = 0;
    assert_int_equal(mm_report_load(run, &opt, &r, err, sizeof err), 0);
    assert_int_equal(r.n_peers, NP);
    assert_int_equal(r.n_expected, NP);
    assert_int_equal(r.params, P);
    assert_string_equal(r.topology, "ring-4.topo");
    assert_int_equal(r.n_rows, 4);

    int all[NP] = {0, 1, 2, 3}, three[3] = {0, 1, 2};
    const mm_rep_row *w = row_at(&r, 4);
    assert_non_null(w);
    assert_string_equal(w->method, "sketch");
    assert_int_equal(w->n_present, NP);
    close_rel(w->xi_sketch, sketch_xi(all, NP, 4), 1e-6);
    close_rel(w->xi, exact_xi(all, NP, 4), 0.10);

    w = row_at(&r, 9);
    assert_string_equal(w->method, "exact");
    double ex9 = exact_xi(all, NP, 9);
    close_rel(w->xi_exact, ex9, 1e-9);
    close_rel(w->xi_sketch, ex9, 0.10);
    assert_true(w->dev_min <= w->xi_exact && w->xi_exact <= w->dev_max);
    assert_true(w->avg_norm > 0);
    assert_true(w->avg_val_loss == 9);

    w = row_at(&r, 14); /* peer 3 missing: exact over the three present */
    assert_int_equal(w->n_present, 3);
    assert_string_equal(w->method, "exact");
    close_rel(w->xi_exact, exact_xi(three, 3, 14), 1e-9);
    assert_int_equal(w->n_sketch, 3);
    close_rel(w->acc_mean, 0.1 + 0.14 + 0.001, 1e-6);
    close_rel(w->acc_min, 0.1 + 0.14, 1e-6);
    close_rel(w->acc_max, 0.1 + 0.14 + 0.002, 1e-6);
    /* MB/peer counts every peer that ran, also one absent from this
     * evaluation, with what it had sent by then (issue 21, defect 6: a
     * mean over the peers present went down when the set changed): peers
     * 0, 1, 3 15 rounds of 1000, peer 2 13 then 5 after resuming at 10 */
    close_rel(w->sent_sum, 3 * 15000.0 + 18000, 1e-12);
    close_rel(w->sent_peer, (3 * 15000.0 + 18000) / 4, 1e-12);
    for (size_t k = 1; k < r.n_rows; k++)
        assert_true(r.rows[k].sent_peer >= r.rows[k - 1].sent_peer);

    w = row_at(&r, 19); /* damaged snapshot: sketch */
    assert_string_equal(w->method, "sketch");
    assert_true(isnan(w->xi_exact));
    close_rel(w->xi_sketch, sketch_xi(all, NP, 19), 1e-6);
    /* bytes: 20 rounds of 1000 for peers 0,1,3; peer 2 ran 13 rounds, then
     * 10 more after resuming at round 10 */
    close_rel(w->sent_sum, 3 * 20000.0 + 13000 + 10000, 1e-12);
    close_rel(w->sent_peer, (3 * 20000.0 + 23000) / 4, 1e-12);
    close_rel(w->f_compute, 0.6, 1e-6);
    close_rel(w->f_comm, 0.1, 1e-6);
    close_rel(w->f_wait, 0.2, 1e-6);
    close_rel(w->wall, 0.5 * 23 + 0.01, 1e-6);
    close_rel(w->nbr_dist, 1.0, 1e-12);
    close_rel(w->norm_mean, 1.0, 1e-12);
    close_rel(w->loss_mean, 5.0 - 1.9 + 0.015, 1e-6);

    /* the hook saw the exact average at rounds 9 and 14 */
    assert_int_equal(hook_calls, 2);
    float x[P];
    double m0 = 0;
    for (int i = 0; i < 3; i++) {
        params(i, 14, x);
        m0 += x[0];
    }
    close_rel(hook_xbar0, m0 / 3, 1e-6);

    const mm_rep_peer *p2 = &r.peers[2];
    assert_int_equal(p2->n_starts, 2);
    assert_int_equal(p2->n_rounds, 20);
    close_rel(p2->rounds[12].bytes_sent, 13000 + 3000, 1e-12); /* the resumed round 12 */
    assert_true(r.peers[1].torn_tail);
    assert_int_equal(r.peers[0].bad_lines, 1);
    assert_true(r.peers[0].ended);
    assert_string_equal(r.peers[0].end_reason, "done");
    assert_true(r.warnings >= 5); /* garbage, torn lines, damaged snapshot, partial snapshots */

    char csv[512];
    snprintf(csv, sizeof csv, "%s/report.csv", run);
    assert_int_equal(mm_report_write_csv(&r, csv), 0);
    FILE *f = fopen(csv, "r");
    char line[4096];
    int lines = 0;
    while (fgets(line, sizeof line, f))
        lines++;
    fclose(f);
    assert_int_equal(lines, 1 + 4);

    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    mm_report_print_table(&r, mem);
    fclose(mem);
    assert_non_null(strstr(buf, "exact"));
    assert_non_null(strstr(buf, "sketch"));
    assert_non_null(strstr(buf, "torn"));
    free(buf);

    mm_report_free(&r);
    fclose(warn);
    rm_run();
}

static void test_empty_run_is_an_error(void **state)
{
    (void)state;
    snprintf(run, sizeof run, "/tmp/mm-report-empty-XXXXXX");
    assert_non_null(mkdtemp(run));
    mm_report r;
    char err[256] = "";
    FILE *warn = tmpfile();
    mm_report_opts opt = {.warn = warn, .eval_average = fake_eval_average};
    assert_int_equal(mm_report_load(run, &opt, &r, err, sizeof err), MM_REPORT_EMPTY);
    assert_non_null(strstr(err, "empty run"));
    char path[512];
    snprintf(path, sizeof path, "%s/node-0", run);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/node-0/metrics.jsonl", run);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"ev\":\"start\",\"pe"); /* only a torn line */
    fclose(f);
    assert_int_equal(mm_report_load(run, &opt, &r, err, sizeof err), MM_REPORT_EMPTY);
    assert_int_equal(mm_report_load("/nonexistent/run", &opt, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
    fclose(warn);
    rm_run();
}

/* run/node-i/metrics.jsonl, its directory made, opened with mode. */
static FILE *peer_metrics(int i, const char *mode)
{
    char path[512];
    snprintf(path, sizeof path, "%s/node-%d", run, i);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/node-%d/metrics.jsonl", run, i);
    FILE *f = fopen(path, mode);
    assert_non_null(f);
    return f;
}

/* A misconfigured run as docs/metrics.md writes it: peer 0 fine, peers 1
 * and 2 refused each other (TLS mismatch), peer 3 isolated; and a running
 * peer that said it was isolated and has not mixed since. The table names
 * each, says the run was misconfigured, and the progress line counts them. */
static void test_refused_and_isolated(void **state)
{
    (void)state;
    snprintf(run, sizeof run, "/tmp/mm-report-refused-XXXXXX");
    assert_non_null(mkdtemp(run));
    static const char *const end[4] = {
        "\"reason\":\"done\",\"refused\":0,\"tls_mismatch\":0,\"mixed\":{\"1\":5}",
        "\"reason\":\"refused\",\"stopped\":\"done\",\"refused\":7,\"tls_mismatch\":6,"
        "\"bad_magic\":1,\"mixed\":{\"0\":5,\"2\":0},\"refusals\":{\"2\":\"tls_mismatch\"},"
        "\"why\":{\"2\":\"TLS mismatch: it speaks TLS but this peer runs --plaintext\"}",
        "\"reason\":\"refused\",\"stopped\":\"signal\",\"refused\":4,\"tls_mismatch\":4,"
        "\"mixed\":{\"1\":0,\"3\":0},\"refusals\":{\"1\":\"tls_mismatch\",\"3\":\"tls_mismatch\"}",
        "\"reason\":\"isolated\",\"stopped\":\"done\",\"refused\":0,\"mixed\":{\"2\":0},"
        "\"why\":{\"2\":\"never connected\"}",
    };
    for (int i = 0; i < 5; i++) {
        FILE *f = peer_metrics(i, "w");
        fprintf(f, "{\"ev\":\"start\",\"peer\":%d,\"n_peers\":5,\"params\":10,\"time\":0}\n", i);
        fprintf(f, "{\"ev\":\"round\",\"peer\":%d,\"round\":0,\"time\":1,\"nbrs\":[]}\n", i);
        if (i == 4) { /* still running: said it is isolated, then a round with nobody */
            fprintf(f, "{\"ev\":\"isolated\",\"peer\":4,\"round\":1,\"time\":2,\"alone_s\":31.0,"
                       "\"mixed\":{\"3\":0},\"refusals\":{\"3\":\"bad_fingerprint\"},"
                       "\"why\":{\"3\":\"model fingerprint differs\"}}\n");
            fprintf(f, "{\"ev\":\"round\",\"peer\":4,\"round\":1,\"time\":3,\"nbrs\":[]}\n");
        } else {
            fprintf(f, "{\"ev\":\"end\",\"peer\":%d,\"round\":1,\"time\":2,%s}\n", i, end[i]);
        }
        fclose(f);
    }
    mm_report r;
    char err[256] = "";
    FILE *warn = tmpfile();
    mm_report_opts opt = {.warn = warn, .no_exact = true};
    assert_int_equal(mm_report_load(run, &opt, &r, err, sizeof err), 0);
    assert_string_equal(r.peers[1].end_reason, "refused");
    assert_true(r.peers[1].refused == 7);
    assert_string_equal(r.peers[1].top_refusal, "tls_mismatch");
    assert_int_equal(r.peers[1].n_refused_nbrs, 1);
    assert_int_equal(r.peers[1].first_refused, 2);
    assert_int_equal(r.peers[2].n_refused_nbrs, 2);
    assert_string_equal(r.peers[3].end_reason, "isolated");
    assert_true(r.peers[4].isolated_now);
    assert_string_equal(r.peers[4].refused_code, "bad_fingerprint");

    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    mm_report_print_table(&r, out);
    fclose(out);
    assert_non_null(strstr(buf, "node-1        1        1      0 refused "));
    assert_non_null(strstr(buf, "7 tls_mismatch"));
    assert_non_null(strstr(buf, "peer 2: tls_mismatch"));
    assert_non_null(strstr(buf, "peer 1: tls_mismatch (+1 more)"));
    assert_non_null(strstr(buf, "isolated "));
    assert_non_null(strstr(buf, "isolated?"));
    assert_non_null(strstr(buf, "MISCONFIGURED: 2 peers"));
    assert_non_null(strstr(buf, "one side runs TLS, the other --plaintext"));
    assert_non_null(strstr(buf, "ISOLATED: 1 peer mixed with none of its neighbours"));
    assert_non_null(strstr(buf, "1 running peer mixes with none of its neighbours now"));
    free(buf);
    buf = NULL;
    out = open_memstream(&buf, &len);
    mm_report_print_progress(&r, 3, 30, out);
    fclose(out);
    /* refused: the two that ended so and the running one alone with a
     * refused neighbour; isolated: the one that ended so */
    assert_non_null(strstr(buf, "| refused 3 (tls_mismatch) | isolated 1 |"));
    assert_non_null(strstr(buf, "[ERRII]"));
    free(buf);
    mm_report_free(&r);
    fclose(warn);
    rm_run();
}

/* The progress line before any round, and while one peer has none yet:
 * no "round -1". */
static void test_progress_before_rounds(void **state)
{
    (void)state;
    snprintf(run, sizeof run, "/tmp/mm-report-progress-XXXXXX");
    assert_non_null(mkdtemp(run));
    for (int i = 0; i < 2; i++) {
        FILE *f = peer_metrics(i, "w");
        fprintf(f, "{\"ev\":\"start\",\"peer\":%d,\"n_peers\":2,\"params\":10,\"time\":0}\n", i);
        fclose(f);
    }
    mm_report r;
    char err[256] = "", *buf = NULL;
    size_t len = 0;
    FILE *warn = tmpfile();
    mm_report_opts opt = {.warn = warn, .no_exact = true};
    assert_int_equal(mm_report_load(run, &opt, &r, err, sizeof err), 0);
    FILE *out = open_memstream(&buf, &len);
    mm_report_print_progress(&r, 1, 30, out);
    fclose(out);
    assert_null(strstr(buf, "-1"));
    assert_non_null(strstr(buf, "round - (none done yet) | loss -"));
    free(buf);
    mm_report_free(&r);
    FILE *f = peer_metrics(1, "a");
    fprintf(f, "{\"ev\":\"round\",\"peer\":1,\"round\":0,\"time\":1,\"loss\":2.5}\n");
    fclose(f);
    assert_int_equal(mm_report_load(run, &opt, &r, err, sizeof err), 0);
    buf = NULL;
    out = open_memstream(&buf, &len);
    mm_report_print_progress(&r, 1, 30, out);
    fclose(out);
    assert_non_null(strstr(buf, "round 0 (slowest: none done yet) | loss 2.5000"));
    free(buf);
    mm_report_free(&r);
    fclose(warn);
    rm_run();
}

/* Uneven peers (docs/metrics.md: deadline, waited, paced_by, batch,
 * steps_done): a ring of 3 over 4 rounds, peer 2 slow: peers 0 and 1 wait
 * for it in rounds 1..3 (paced_by 2), its own compute sets its own pace.
 * The table gives each peer's means and says peer 2 set the pace of 6 of
 * the 6 rounds a neighbour's vector ended; a run without the keys has no
 * such table. */
static void test_pace(void **state)
{
    (void)state;
    snprintf(run, sizeof run, "/tmp/mm-report-pace-XXXXXX");
    assert_non_null(mkdtemp(run));
    for (int i = 0; i < 3; i++) {
        FILE *f = peer_metrics(i, "w");
        fprintf(f, "{\"ev\":\"start\",\"peer\":%d,\"n_peers\":3,\"params\":10,\"time\":0}\n", i);
        for (int r = 0; r < 4; r++) {
            int pb = i == 2 || r == 0 ? i : 2;
            fprintf(f, "{\"ev\":\"round\",\"peer\":%d,\"round\":%d,\"time\":%d,\"nbrs\":[],"
                       "\"deadline\":0.5,\"waited\":%g,\"paced_by\":%d,\"cut\":0,\"behind\":0,"
                       "\"batch\":%d,\"steps_done\":%d}\n", i, r, r + 1, pb == i ? 0.0 : 0.2, pb,
                    i == 2 ? 8 : 16, i == 2 ? 1 : 2);
        }
        fprintf(f, "{\"ev\":\"end\",\"peer\":%d,\"round\":4,\"time\":5,\"reason\":\"done\"}\n", i);
        fclose(f);
    }
    mm_report r;
    char err[256] = "";
    FILE *warn = tmpfile();
    mm_report_opts opt = {.warn = warn, .no_exact = true};
    assert_int_equal(mm_report_load(run, &opt, &r, err, sizeof err), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    mm_report_print_table(&r, out);
    fclose(out);
    assert_non_null(strstr(buf, "uneven peers"));
    /* peer 0: 4 rounds, waited 0.15 on average, batch 16, 2 steps, 1 round of
     * its own pace, set the pace of nobody's */
    assert_non_null(strstr(buf, "node-0         4      0.5000    0.1500   16.0   2.00         1                0"));
    assert_non_null(strstr(buf, "node-2         4      0.5000    0.0000    8.0   1.00         4                6"));
    assert_non_null(strstr(buf, "who set the pace: peer 2, of 6 of the 6 rounds"));
    free(buf);
    mm_report_free(&r);
    rm_run();
    /* the same run without the keys: no table */
    assert_non_null(mkdtemp(strcpy(run, "/tmp/mm-report-pace-XXXXXX")));
    FILE *f = peer_metrics(0, "w");
    fprintf(f, "{\"ev\":\"start\",\"peer\":0,\"n_peers\":1,\"params\":10,\"time\":0}\n");
    fprintf(f, "{\"ev\":\"round\",\"peer\":0,\"round\":0,\"time\":1,\"nbrs\":[]}\n");
    fclose(f);
    assert_int_equal(mm_report_load(run, &opt, &r, err, sizeof err), 0);
    buf = NULL;
    out = open_memstream(&buf, &len);
    mm_report_print_table(&r, out);
    fclose(out);
    assert_null(strstr(buf, "uneven peers"));
    free(buf);
    mm_report_free(&r);
    fclose(warn);
    rm_run();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synthetic_run),
        cmocka_unit_test(test_empty_run_is_an_error),
        cmocka_unit_test(test_refused_and_isolated),
        cmocka_unit_test(test_progress_before_rounds),
        cmocka_unit_test(test_pace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
