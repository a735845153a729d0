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
        cmocka_unit_test(test_bad_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
