/* murmur report --sweep on a sweep directory written here by hand (the
 * formats of docs/sweep.md and docs/metrics.md): two settings of 2 peers,
 *   ring-2,lr=1e-3:  seeds 1, 2, 3 finished; 4 failed (its wild figures
 *                    must not count); 5 marked done although a peer ended
 *                    on a signal (must not count either)
 *   local-2,lr=1e-3: seeds 1, 2 finished (0 bytes sent); 3 never run (no
 *                    directory); 4 interrupted.
 * Every expected mean and standard deviation is worked out by hand in the
 * comments from the numbers written. */
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

#include "report/sweep.h"
#include "tests/testutil.h"

static char top[256];

static void put(const char *rel, const char *fmt, ...)
{
    char path[1024], cmd[1200];
    snprintf(path, sizeof path, "%s/%s", top, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

/* A whole file as a string (the caller frees it). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

/* One peer's metrics: 11 rounds (0..10), evals at 0, 5, 10 whose 2-float
 * sketches are [0,0] for peer 0 and [2 d_r, 0] for peer 1, so that the
 * sketch estimate of the consensus distance at round r is exactly d_r
 * (ybar = [d_r, 0]; sqrt((d_r^2 + d_r^2) / 2)). Peer k's accuracy at the
 * last eval is acc - 0.01 (k = 0) or acc + 0.01 (k = 1): the mean is acc.
 * It sends sent_per_round bytes a round (cumulative), its last round
 * record is at time wall (peer 0) or wall - 1 (peer 1). */
static void peer(const char *run, int k, const double d[3], double acc, double vloss,
                 double sent_per_round, double wall, const char *end)
{
    char rel[512];
    snprintf(rel, sizeof rel, "%s/node-%d/metrics.jsonl", run, k);
    put(rel, "{\"ev\":\"start\",\"peer\":%d,\"n_peers\":2,\"params\":2,\"algo\":\"dpsgd\","
             "\"topology\":\"t.topo\",\"sketch_dim\":2,\"sketch_seed\":5,\"resumed_round\":0,"
             "\"time\":0}\n", k);
    for (int r = 0; r <= 10; r++) {
        double t = r == 10 ? wall - k : r;
        put(rel, "{\"ev\":\"round\",\"round\":%d,\"step\":%d,\"time\":%g,\"loss\":3,\"lr\":0.001,"
                 "\"bytes_sent\":%g,\"bytes_recv\":0,\"t_compute\":0.1,\"t_comm\":0,\"t_wait\":0,"
                 "\"nbrs\":1,\"missing\":0,\"dist\":{}}\n",
            r, r, t, sent_per_round * (r + 1), t);
        if (r % 5 == 0) {
            double a = r == 10 ? acc + (k ? 0.01 : -0.01) : 0.1;
            double l = r == 10 ? vloss : 5;
            put(rel, "{\"ev\":\"eval\",\"round\":%d,\"step\":%d,\"time\":%g,\"val_loss\":%.17g,"
                     "\"val_bpb\":1,\"val_acc\":%.17g,\"norm\":1,\"sketch\":[%.17g,0]}\n",
                r, r, t, l, a, k ? 2 * d[r / 5] : 0.0);
        }
    }
    if (end)
        put(rel, "{\"ev\":\"end\",\"peer\":%d,\"round\":11,\"step\":11,\"time\":%g,"
                 "\"reason\":\"%s\"}\n", k, wall, end);
}

static void run(const char *rel, const double d[3], double acc, double vloss, double sent,
                double wall, const char *end1, const char *marker, const char *text)
{
    peer(rel, 0, d, acc, vloss, sent, wall, "done");
    peer(rel, 1, d, acc, vloss, sent, wall, end1);
    if (marker) {
        char m[512];
        snprintf(m, sizeof m, "%s/%s", rel, marker);
        put(m, "%s\n", text);
    }
}

static void make_sweep(void)
{
    snprintf(top, sizeof top, "/tmp/mm-test-sweep-%d", (int)getpid());
    tu_rm_rf(top);
    put("sweep.plan", "# murmur sweep plan 1\n"
                      "index\tsetting\tseed\trun\ttopology\tpeers\tlr\tflags\n");
    const char *A = "ring-2,lr=1e-3", *B = "local-2,lr=1e-3";
    int idx = 0;
    for (int s = 1; s <= 5; s++)
        put("sweep.plan", "%d\t%s\t%d\t%s/s%d\ttopologies/ring-2.topo\t2\t1e-3\t--lr 1e-3 --seed %d\n",
            idx++, A, s, A, s, s);
    for (int s = 1; s <= 4; s++)
        put("sweep.plan", "%d\t%s\t%d\t%s/s%d\tx/local-2.topo\t2\t1e-3\t--lr 1e-3 --seed %d\n",
            idx++, B, s, B, s, s);
    /* ring: Xi at rounds 0, 5, 10 = (0, 0.3 s, 0.3 s + 0.3): seed 1 (0, .3, .6), seed 2
     * (0, .6, .9), seed 3 (0, .9, 1.2). Finals .6 .9 1.2: mean .9, sd .3. Averages
     * .3 .5 .7: mean .5, sd .2. Accuracy .30 .34 .32: mean .32, sd .02. Loss 2.0 2.2
     * 2.4: mean 2.2, sd .2. Bytes per peer (11 rounds): 100, 200, 300 a round ->
     * 1100, 2200, 3300: mean 2200, sd 1100. Wall 10 12 14: mean 12, sd 2. */
    for (int s = 1; s <= 3; s++) {
        double d[3] = {0, 0.3 * s, 0.3 * s + 0.3};
        char rel[300];
        snprintf(rel, sizeof rel, "%s/s%d", A, s);
        double acc[] = {0.30, 0.34, 0.32};
        run(rel, d, acc[s - 1], 2.0 + 0.2 * (s - 1), 100.0 * s, 10 + 2 * (s - 1), "done",
            "sweep.done", "finished 2026-01-01T00:00:00Z wall 12\nflags --lr 1e-3");
    }
    double wild[3] = {0, 50, 99};
    /* seed 4 failed: a peer exited non-zero although every metrics file ends
     * 'done' (a peer isolated all run does that): only the marker tells, and
     * its wild figures must not count */
    run("ring-2,lr=1e-3/s4", wild, 0.99, 0.01, 1e9, 1e6, "done", "sweep.failed",
        "failed: run-local.sh exit 1");
    /* seed 5: marked done, but peer 1 ended on a signal */
    run("ring-2,lr=1e-3/s5", wild, 0.99, 0.01, 1e9, 1e6, "signal", "sweep.done", "finished");
    /* local: Xi finals 2 and 4 (mean 3, sd sqrt 2), 0 bytes, accuracy .2 and .3
     * (mean .25, sd sqrt(.005) = .0707107), wall 20 both (sd 0). */
    for (int s = 1; s <= 2; s++) {
        double d[3] = {0, 1.0 * s, 2.0 * s};
        char rel[300];
        snprintf(rel, sizeof rel, "%s/s%d", B, s);
        run(rel, d, 0.1 + 0.1 * s, 3.0, 0, 20, "done", "sweep.done", "finished");
    }
    /* seed 3: no directory at all; seed 4: interrupted by Ctrl-C */
    run("local-2,lr=1e-3/s4", wild, 0.99, 0.01, 0, 1e6, "signal", "sweep.interrupted",
        "interrupted after 5s (run-local.sh exit 130)");
}

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-9 * (1 + fabs((double)(b))))

static void test_aggregate(void **state)
{
    (void)state;
    make_sweep();
    mm_sweep s;
    char err[512];
    assert_int_equal(mm_sweep_load(top, NULL, &s, err, sizeof err), 0);
    assert_int_equal(s.n_axes, 1);
    assert_string_equal(s.axes[0], "lr");
    assert_int_equal(s.n_settings, 2);
    assert_int_equal(s.n_runs, 9);

    const mm_sweep_setting *a = &s.settings[0], *b = &s.settings[1];
    assert_string_equal(a->name, "ring-2,lr=1e-3");
    assert_string_equal(a->topology, "ring-2");
    assert_string_equal(a->axis_values[0], "1e-3");
    assert_int_equal(a->n_planned, 5);
    assert_int_equal(a->n_done, 3);
    assert_int_equal(a->acc.n, 3);
    NEAR(a->acc.mean, 0.32);
    NEAR(a->acc.sd, 0.02);
    NEAR(a->vloss.mean, 2.2);
    NEAR(a->vloss.sd, 0.2);
    NEAR(a->xi_final.mean, 0.9);
    NEAR(a->xi_final.sd, 0.3);
    NEAR(a->xi_avg.mean, 0.5);
    NEAR(a->xi_avg.sd, 0.2);
    /* rms of (0, .3s, .3s+.3): s=1 sqrt(.45/3), s=2 sqrt(1.17/3), s=3 sqrt(2.25/3) */
    NEAR(a->xi_rms.mean, (sqrt(0.15) + sqrt(0.39) + sqrt(0.75)) / 3);
    assert_string_equal(a->xi_method, "sketch");
    NEAR(a->bytes_peer.mean, 2200);
    NEAR(a->bytes_peer.sd, 1100);
    NEAR(a->wall.mean, 12);
    NEAR(a->wall.sd, 2);

    assert_string_equal(b->topology, "local-2");
    assert_int_equal(b->n_planned, 4);
    assert_int_equal(b->n_done, 2);
    NEAR(b->acc.mean, 0.25);
    NEAR(b->acc.sd, sqrt(0.005));
    NEAR(b->xi_final.mean, 3);
    NEAR(b->xi_final.sd, sqrt(2));
    NEAR(b->bytes_peer.mean, 0);
    NEAR(b->bytes_peer.sd, 0);
    NEAR(b->wall.sd, 0);

    /* the runs left out, each with its reason */
    mm_sweep_status want[] = {MM_SWEEP_DONE, MM_SWEEP_DONE, MM_SWEEP_DONE, MM_SWEEP_FAILED,
                              MM_SWEEP_INVALID, MM_SWEEP_DONE, MM_SWEEP_DONE, MM_SWEEP_MISSING,
                              MM_SWEEP_INTERRUPTED};
    for (int i = 0; i < 9; i++)
        assert_int_equal(s.runs[i].status, want[i]);
    assert_non_null(strstr(s.runs[3].why, "run-local.sh exit 1"));
    assert_non_null(strstr(s.runs[4].why, "peer 1 ended 'signal'"));
    assert_non_null(strstr(s.runs[8].why, "interrupted"));

    /* the table says what was left out; the CSVs carry the figures */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    mm_sweep_print_table(&s, m);
    fclose(m);
    assert_non_null(strstr(buf, "0.3200±0.0200"));
    assert_non_null(strstr(buf, "3/5"));
    assert_non_null(strstr(buf, "left out (4 runs, not averaged)"));
    assert_non_null(strstr(buf, "missing"));
    free(buf);

    char csv[512], runs_csv[512], line[2048];
    snprintf(csv, sizeof csv, "%s/sweep.csv", top);
    snprintf(runs_csv, sizeof runs_csv, "%s/sweep-runs.csv", top);
    assert_int_equal(mm_sweep_write_csv(&s, csv), 0);
    assert_int_equal(mm_sweep_write_runs_csv(&s, runs_csv), 0);
    FILE *f = fopen(csv, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, "setting,topology,topology_file,peers,\"lr\",seeds_planned"));
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, "\"ring-2,lr=1e-3\",\"ring-2\",\"topologies/ring-2.topo\",2,"
                                 "\"1e-3\",5,3,\"1 2 3\",0.32,0.02,"));
    assert_non_null(strstr(line, "\"4:failed 5:invalid\""));
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, ",0,0,20,0,\"3:missing 4:interrupted\""));
    fclose(f);
    f = fopen(runs_csv, "r");
    assert_non_null(f);
    int n_lines = 0;
    while (fgets(line, sizeof line, f)) {
        n_lines++;
        if (strstr(line, "\"ring-2,lr=1e-3/s4\""))
            assert_non_null(strstr(line, ",failed,\"failed: run-local.sh exit 1\""));
    }
    fclose(f);
    assert_int_equal(n_lines, 10);
    mm_sweep_free(&s);
    tu_rm_rf(top);
}

static void test_stat(void **state)
{
    (void)state;
    mm_sweep_stat st;
    double v[] = {1, NAN, 3, INFINITY};
    mm_sweep_stat_of(v, 4, &st); /* the finite values only: 1 and 3 */
    assert_int_equal(st.n, 2);
    NEAR(st.mean, 2);
    NEAR(st.sd, sqrt(2));
    mm_sweep_stat_of(v, 1, &st);
    assert_int_equal(st.n, 1);
    NEAR(st.mean, 1);
    assert_true(isnan(st.sd));
    mm_sweep_stat_of(v + 1, 1, &st);
    assert_int_equal(st.n, 0);
    assert_true(isnan(st.mean));
}

/* Paired differences by hand: d = 1, 2, 3, 4 (the pair with a NaN is left
 * out): mean 2.5, sd sqrt(((1.5)^2 + (.5)^2) * 2 / 3) = sqrt(5/3) = 1.2909944,
 * t(0.975, 3) = 3.182446, half-width 3.182446 * 1.2909944 / 2 = 2.0542601:
 * the interval [0.4457399, 4.5542601]. */
static void test_paired_of(void **state)
{
    (void)state;
    double a[] = {2, 4, NAN, 3, 9, 5}, b[] = {1, 2, 7, 0, 5, 1};
    mm_sweep_paired p;
    mm_sweep_paired_of(a, b, 6, &p); /* d = 1, 2, -, 3, 4, 4 */
    assert_int_equal(p.n, 5);
    double a2[] = {2, 4, NAN, 3, 9}, b2[] = {1, 2, 7, 0, 5};
    mm_sweep_paired_of(a2, b2, 5, &p); /* d = 1, 2, 3, 4 */
    assert_int_equal(p.n, 4);
    assert_int_equal(p.n_pos, 4);
    assert_int_equal(p.n_neg, 0);
    NEAR(p.mean, 2.5);
    NEAR(p.sd, sqrt(5.0 / 3));
    assert_true(fabs(p.lo - (2.5 - 3.182446 * sqrt(5.0 / 3) / 2)) < 1e-9);
    assert_true(fabs(p.hi - 4.5542601) < 1e-6);
    /* signs: d = -1, 0, +2; one pair: no sd, no interval; none: all NaN */
    double c[] = {0, 5, 6}, e[] = {1, 5, 4};
    mm_sweep_paired_of(c, e, 3, &p);
    assert_int_equal(p.n_pos, 1);
    assert_int_equal(p.n_neg, 1);
    NEAR(p.mean, 1.0 / 3);
    mm_sweep_paired_of(c, e, 1, &p);
    assert_int_equal(p.n, 1);
    NEAR(p.mean, -1);
    assert_true(isnan(p.sd) && isnan(p.lo) && isnan(p.hi));
    mm_sweep_paired_of(c, e, 0, &p);
    assert_int_equal(p.n, 0);
    assert_true(isnan(p.mean));
}

/* t(0.975, df) against the t distribution's quantiles (6 decimals). */
static void test_t975(void **state)
{
    (void)state;
    assert_true(fabs(mm_t975(1) - 12.706205) < 1e-6);
    assert_true(fabs(mm_t975(2) - 4.302653) < 1e-6);
    assert_true(fabs(mm_t975(4) - 2.776445) < 1e-6);
    assert_true(fabs(mm_t975(30) - 2.042272) < 1e-6);
    assert_true(fabs(mm_t975(31) - 2.039513) < 1e-6); /* the expansion from here on */
    assert_true(fabs(mm_t975(100) - 1.983972) < 1e-6);
    assert_true(fabs(mm_t975(1000) - 1.962339) < 1e-6);
    assert_true(isnan(mm_t975(0)));
}

/* make_sweep's two settings and a third, exp-2, against the baseline ring-2
 * named in the plan:
 *   ring-2:  seeds 1 2 3 finished (acc .30 .34 .32, loss 2.0 2.2 2.4),
 *            4 failed, 5 invalid;
 *   exp-2:   seeds 1 3 4 finished (acc .40 .33 .50, loss 1.5 2.6 9), 2 never
 *            run (no directory), 5 failed;
 *   local-2: seeds 1 2 finished (acc .2 .3, loss 3 3).
 * exp-2 pairs on seeds 1 and 3 only: 2 is missing in exp-2, 4 failed in
 * the baseline (exp-2's finished seed 4 must not pair with it), 5 did not
 * finish in either. d_acc = .10, .01: mean .055, sd .045 sqrt 2 =
 * .0636396, half-width t(0.975, 1) sd / sqrt 2 = 12.706205 * .045 =
 * .5717792; d_loss = -.5, +.2: mean -.15, sd .35 sqrt 2, half-width
 * 12.706205 * .35 = 4.4471718, signs 1 and 1.
 * local-2 pairs on 1 and 2 (3 missing): d_acc = -.10, -.04, mean -.07,
 * sd .03 sqrt 2, half-width 12.706205 * .03 = .3811862, both negative. */
static void test_paired_sweep(void **state)
{
    (void)state;
    make_sweep();
    /* the baseline line goes after the first comment, as sweep.sh writes it */
    char path[512], cmd[1200];
    snprintf(path, sizeof path, "%s/sweep.plan", top);
    snprintf(cmd, sizeof cmd, "sed -i '1a # baseline ring-2,lr=1e-3' '%s'", path);
    assert_int_equal(system(cmd), 0);
    const char *C = "exp-2,lr=1e-3";
    for (int sd = 1; sd <= 5; sd++)
        put("sweep.plan", "%d\t%s\t%d\t%s/s%d\tx/exp-2.topo\t2\t1e-3\t--lr 1e-3 --seed %d\n",
            8 + sd, C, sd, C, sd, sd);
    double d[3] = {0, 0.1, 0.2}, acc[] = {0.40, 0, 0.33, 0.50}, loss[] = {1.5, 0, 2.6, 9};
    for (int sd = 1; sd <= 4; sd++) {
        if (sd == 2)
            continue;
        char rel[300];
        snprintf(rel, sizeof rel, "%s/s%d", C, sd);
        run(rel, d, acc[sd - 1], loss[sd - 1], 50, 10, "done", "sweep.done", "finished");
    }
    run("exp-2,lr=1e-3/s5", d, 0.9, 0.1, 50, 10, "done", "sweep.failed", "failed: run-local.sh exit 1");

    mm_sweep s;
    char err[512];
    assert_int_equal(mm_sweep_load(top, NULL, &s, err, sizeof err), 0);
    assert_int_equal(s.n_settings, 3);
    assert_int_equal(s.baseline, 0);
    const mm_sweep_setting *ring = &s.settings[0], *local = &s.settings[1], *exp = &s.settings[2];
    assert_string_equal(exp->name, C);
    assert_int_equal(exp->n_done, 3);
    int64_t seeds[32];
    assert_int_equal(mm_sweep_paired_seeds(&s, 2, seeds), 2);
    assert_true(seeds[0] == 1 && seeds[1] == 3);
    assert_int_equal(exp->n_paired, 2);
    assert_int_equal(exp->d_acc.n, 2);
    NEAR(exp->d_acc.mean, 0.055);
    NEAR(exp->d_acc.sd, 0.045 * sqrt(2));
    NEAR(exp->d_acc.lo, 0.055 - 12.706205 * 0.045);
    NEAR(exp->d_acc.hi, 0.055 + 12.706205 * 0.045);
    assert_int_equal(exp->d_acc.n_pos, 2);
    assert_int_equal(exp->d_acc.n_neg, 0);
    NEAR(exp->d_vloss.mean, -0.15);
    NEAR(exp->d_vloss.sd, 0.35 * sqrt(2));
    NEAR(exp->d_vloss.hi, -0.15 + 12.706205 * 0.35);
    assert_int_equal(exp->d_vloss.n_pos, 1);
    assert_int_equal(exp->d_vloss.n_neg, 1);
    /* local against ring: seeds 1 and 2 */
    assert_int_equal(local->n_paired, 2);
    NEAR(local->d_acc.mean, -0.07);
    NEAR(local->d_acc.lo, -0.07 - 12.706205 * 0.03);
    assert_int_equal(local->d_acc.n_neg, 2);
    /* the baseline against itself: its 3 finished seeds, all d = 0 */
    assert_int_equal(ring->n_paired, 3);
    NEAR(ring->d_acc.mean, 0);
    assert_int_equal(ring->d_acc.n_pos + ring->d_acc.n_neg, 0);

    /* the table and the CSV */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    mm_sweep_print_paired(&s, m);
    fclose(m);
    assert_non_null(strstr(buf, "paired against ring-2,lr=1e-3"));
    assert_non_null(strstr(buf, "+0.0550±0.0636"));
    assert_non_null(strstr(buf, "[-0.5168, +0.6268]"));
    assert_non_null(strstr(buf, "Student's t"));
    free(buf);
    char csv[512], line[4096];
    snprintf(csv, sizeof csv, "%s/sweep.csv", top);
    assert_int_equal(mm_sweep_write_csv(&s, csv), 0);
    FILE *f = fopen(csv, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, ",left_out,baseline,paired_n,paired_seeds,d_acc_mean,d_acc_sd,"
                                 "d_acc_lo,d_acc_hi,d_acc_pos,d_acc_neg,d_val_loss_mean"));
    for (int i = 0; i < 3; i++)
        assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, ",\"ring-2,lr=1e-3\",2,\"1 3\",0.055,0.0636396103,"));
    assert_non_null(strstr(line, ",2,0,-0.15,"));
    fclose(f);

    /* another baseline replaces it; an unknown one is refused */
    assert_int_equal(mm_sweep_set_baseline(&s, "local-2,lr=1e-3", err, sizeof err), 0);
    assert_int_equal(ring->n_paired, 2);
    NEAR(ring->d_acc.mean, 0.07);
    assert_int_equal(exp->n_paired, 1); /* seed 1: local's 3 is missing, its 4 interrupted */
    NEAR(exp->d_acc.mean, 0.2);
    assert_true(isnan(exp->d_acc.lo));
    assert_int_equal(mm_sweep_set_baseline(&s, "nope", err, sizeof err), -1);
    assert_non_null(strstr(err, "'nope' is not a setting"));
    mm_sweep_free(&s);

    /* a plan whose baseline names no setting is refused */
    snprintf(cmd, sizeof cmd, "sed -i 's/^# baseline .*/# baseline gone-2/' '%s'", path);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(mm_sweep_load(top, NULL, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "'gone-2'"));
    tu_rm_rf(top);
}

/* Two sweeps as one: make_sweep's (baseline ring-2 in its plan) and a
 * second without axes holding exp-2 (seeds 1 and 3 finished: acc .40 .33,
 * as in test_paired_sweep) and a setting named like one of the first's.
 * exp-2 pairs with the first sweep's ring on seeds 1 and 3: d_acc mean
 * .055, half-width 12.706205 * .045. */
static void test_many_sweeps(void **state)
{
    (void)state;
    make_sweep();
    char a[256], b[256], path[600], cmd[1200];
    snprintf(a, sizeof a, "%s", top);
    snprintf(path, sizeof path, "%s/sweep.plan", a);
    snprintf(cmd, sizeof cmd, "sed -i '1a # baseline ring-2,lr=1e-3' '%s'", path);
    assert_int_equal(system(cmd), 0);
    snprintf(b, sizeof b, "/tmp/mm-test-sweep-b-%d", (int)getpid());
    tu_rm_rf(b);
    snprintf(top, sizeof top, "%s", b);
    put("sweep.plan", "# murmur sweep plan 1\nindex\tsetting\tseed\trun\ttopology\tpeers\tflags\n"
                      "0\texp-2\t1\texp-2/s1\tx/exp-2.topo\t2\t--seed 1\n"
                      "1\texp-2\t3\texp-2/s3\tx/exp-2.topo\t2\t--seed 3\n"
                      "2\tring-2,lr=1e-3\t1\tring-2,lr=1e-3/s1\tx/ring-2.topo\t2\t--seed 1\n");
    double d[3] = {0, 0.1, 0.2};
    run("exp-2/s1", d, 0.40, 1.5, 50, 10, "done", "sweep.done", "finished");
    run("exp-2/s3", d, 0.33, 2.6, 50, 10, "done", "sweep.done", "finished");
    run("ring-2,lr=1e-3/s1", d, 0.5, 1.0, 50, 10, "done", "sweep.done", "finished");
    char *dirs[] = {a, b};
    mm_sweep s;
    char err[512];
    assert_int_equal(mm_sweep_load_many(dirs, 2, NULL, &s, err, sizeof err), 0);
    assert_int_equal(s.n_settings, 4);
    assert_int_equal(s.n_runs, 12);
    assert_int_equal(s.n_axes, 1);
    assert_int_equal(s.baseline, 0);
    const mm_sweep_setting *exp = &s.settings[2], *dup = &s.settings[3];
    assert_string_equal(exp->name, "exp-2");
    assert_string_equal(exp->axis_values[0], "");
    char want[300];
    snprintf(want, sizeof want, "%s:ring-2,lr=1e-3", strrchr(b, '/') + 1);
    assert_string_equal(dup->name, want);
    assert_int_equal(exp->n_paired, 2);
    NEAR(exp->d_acc.mean, 0.055);
    NEAR(exp->d_acc.hi, 0.055 + 12.706205 * 0.045);
    assert_int_equal(dup->n_paired, 1);
    NEAR(dup->d_acc.mean, 0.2);
    assert_non_null(strstr(s.runs[9].run, b)); /* exp-2/s1 under the second sweep */
    assert_non_null(strstr(s.dir, " + "));
    /* on the plots, a setting named with its sweep is labelled with it */
    char plots[600], dat[700];
    snprintf(plots, sizeof plots, "%s/plots", a);
    assert_true(mm_sweep_plots(&s, plots, stdout) >= 0);
    snprintf(dat, sizeof dat, "%s/sweep_paired.dat", plots);
    char *text = slurp(dat);
    snprintf(want, sizeof want, "\"%s:lr=1e-3\" ", strrchr(b, '/') + 1);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "\"\" ")); /* exp-2: no axis, no sweep name */
    free(text);
    mm_sweep_free(&s);
    /* a directory that is not a sweep: refused, naming it */
    char *bad[] = {a, "/nonexistent-sweep"};
    assert_int_equal(mm_sweep_load_many(bad, 2, NULL, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent-sweep"));
    tu_rm_rf(a);
    tu_rm_rf(b);
}

static void test_bad_plan(void **state)
{
    (void)state;
    snprintf(top, sizeof top, "/tmp/mm-test-sweep-bad-%d", (int)getpid());
    tu_rm_rf(top);
    mm_sweep s;
    char err[512];
    assert_int_equal(mm_sweep_load(top, NULL, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "sweep.plan"));
    put("sweep.plan", "index\tsetting\tseed\trun\ttopology\tpeers\tflags\n"
                      "0\tring\t1\tring/s1\tt.topo\t2\t--seed 1\n"
                      "1\tring\tx\tring/s2\tt.topo\t2\t--seed 2\n");
    assert_int_equal(mm_sweep_load(top, NULL, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "sweep.plan:3:"));
    tu_rm_rf(top);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aggregate),
        cmocka_unit_test(test_stat),
        cmocka_unit_test(test_paired_of),
        cmocka_unit_test(test_t975),
        cmocka_unit_test(test_paired_sweep),
        cmocka_unit_test(test_many_sweeps),
        cmocka_unit_test(test_bad_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
