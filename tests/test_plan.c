/* The runtime model (plan/plan.c) against cases computed by hand in
 * docs/runtime.md: message times through shared links, deterministic
 * rounds of D-PSGD and all-reduce, the expected maximum of random compute
 * times, async freshness, and the parsers' refusals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gossip/topology.h"
#include "plan/plan.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

static mm_topology *gen(const char *kind, int n)
{
    mm_gen_opts o = {.n = n, .seed = 1};
    mm_topo_spec s;
    char err[256];
    assert_int_equal(mm_topo_generate(kind, &o, &s, err, sizeof err), 0);
    mm_topology *t = mm_topo_build(&s, kind, err, sizeof err);
    mm_topo_spec_free(&s);
    assert_non_null(t);
    return t;
}

/* The worked example of docs/runtime.md: 4 peers in 2 groups of 2, links
 * 100 MB/s inside a group and 10 MB/s between, a 1 MB vector (250 000
 * floats), 50 ms of compute per step. */
static void example(mm_plan_in *in, const mm_topology *t)
{
    mm_plan_in_defaults(in);
    in->topo = t;
    in->n = 4;
    in->vec_floats = 250000;
    in->step_s = 0.05;
    in->links = (mm_plan_links){.groups = 2, .per = 2, .intra = 1e8, .inter = 1e7};
}

static void test_parse_rate(void **state)
{
    (void)state;
    NEAR(mm_plan_parse_rate("100mbit"), 12.5e6, 1e-6);
    NEAR(mm_plan_parse_rate("1gbit"), 1.25e8, 1e-6);
    NEAR(mm_plan_parse_rate("50mbps"), 5e7, 1e-6);
    NEAR(mm_plan_parse_rate("8bit"), 1, 1e-12);
    NEAR(mm_plan_parse_rate("2.5kbps"), 2500, 1e-9);
    assert_true(mm_plan_parse_rate("100") < 0);
    assert_true(mm_plan_parse_rate("100mb") < 0);
    assert_true(mm_plan_parse_rate("-1mbit") < 0);
    assert_true(mm_plan_parse_rate("0mbit") < 0);
    assert_true(mm_plan_parse_rate("") < 0);
}

static void test_parse_links(void **state)
{
    (void)state;
    mm_plan_links l;
    char err[256];
    assert_int_equal(mm_plan_parse_links("2x4:intra=1gbit,inter=100mbit", &l, err, sizeof err), 0);
    assert_int_equal(l.groups, 2);
    assert_int_equal(l.per, 4);
    NEAR(l.intra, 1.25e8, 1e-6);
    NEAR(l.inter, 1.25e7, 1e-6);
    assert_int_equal(mm_plan_parse_links("3x1:inter=1mbps", &l, err, sizeof err), 0);
    assert_true(l.intra == 0 && l.inter == 1e6);
    const char *bad[] = {"2x4", "2x:intra=1mbit", "x4:intra=1mbit", "2x4:foo=1mbit",
                         "0x4:inter=1mbit", "2x4:inter=fast", "2x4:inter", "2y4:inter=1mbit"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(mm_plan_parse_links(bad[i], &l, err, sizeof err), -1);
        assert_true(strstr(err, "link profile") != NULL);
    }
}

static void test_parse_jitter_algo(void **state)
{
    (void)state;
    mm_jitter j;
    char err[256];
    assert_int_equal(mm_jitter_parse("none", &j, err, sizeof err), 0);
    assert_int_equal(j.kind, MM_JITTER_NONE);
    assert_int_equal(mm_jitter_parse("uniform:0.02", &j, err, sizeof err), 0);
    assert_true(j.kind == MM_JITTER_UNIFORM && j.a == 0.02);
    assert_int_equal(mm_jitter_parse("longtail:0.1:0.5", &j, err, sizeof err), 0);
    assert_true(j.kind == MM_JITTER_LONGTAIL && j.p == 0.1 && j.a == 0.5);
    const char *bad[] = {"uniform", "uniform:-1", "longtail:2:1", "longtail:0.1", "normal:1",
                         "uniform:1x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(mm_jitter_parse(bad[i], &j, err, sizeof err), -1);
    assert_int_equal(mm_plan_parse_algo("dpsgd"), MM_PLAN_DPSGD);
    assert_int_equal(mm_plan_parse_algo("allreduce"), MM_PLAN_ALLREDUCE);
    assert_int_equal(mm_plan_parse_algo("async"), MM_PLAN_ASYNC);
    /* push-sum is timed as dpsgd: the same messages on the same rounds */
    assert_int_equal(mm_plan_parse_algo("pushsum"), MM_PLAN_DPSGD);
    assert_int_equal(mm_plan_parse_algo("gossip"), -1);
}

/* Ring 0-1-2-3-0: every peer sends 1 MB to both neighbours. A peer's link
 * carries 2 messages each way: 2 MB / 100 MB/s = 20 ms. Group 0's uplink
 * carries 1->2 and 0->3 out (and 2->1, 3->0 in): 2 MB / 10 MB/s = 200 ms. */
static void test_flow_times(void **state)
{
    (void)state;
    mm_plan_in in;
    example(&in, NULL);
    mm_plan_flow f[] = {{0, 1}, {0, 3}, {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 2}, {3, 0}};
    double t[8];
    int res[8];
    assert_int_equal(mm_plan_flow_times(&in, f, 8, 1e6, t, res), 0);
    for (int k = 0; k < 8; k++) {
        bool cross = (f[k].from / 2) != (f[k].to / 2);
        NEAR(t[k], cross ? 0.2 : 0.02, 1e-12);
        assert_int_equal(res[k], cross ? MM_PLAN_RES_UP_OUT : MM_PLAN_RES_EGRESS);
    }
    /* latency adds to every message; no profile and no loop rate: latency only */
    in.latency_s = 0.001;
    assert_int_equal(mm_plan_flow_times(&in, f, 8, 1e6, t, NULL), 0);
    NEAR(t[0], 0.021, 1e-12);
    in.links.groups = 0;
    assert_int_equal(mm_plan_flow_times(&in, f, 8, 1e6, t, res), 0);
    NEAR(t[3], 0.001, 1e-12);
    assert_int_equal(res[3], MM_PLAN_RES_NONE);
    /* one group at 50 MB/s per peer link: 2 MB through each = 40 ms */
    in.loop_bps = 5e7;
    in.latency_s = 0;
    assert_int_equal(mm_plan_flow_times(&in, f, 8, 1e6, t, NULL), 0);
    NEAR(t[5], 0.04, 1e-12);
}

/* Deterministic D-PSGD: round = mix + max(C, T). With C = 50 ms and the
 * slowest message 200 ms: 200 ms, of which 150 ms is exposed communication.
 * With C = 300 ms the messages hide entirely. Mixing at 25 Mfloat/s costs
 * 10 ms per pass, 3 passes for a ring peer (own snapshot + 2 neighbours). */
static void test_dpsgd_deterministic(void **state)
{
    (void)state;
    mm_topology *t = gen("ring", 4);
    mm_plan_in in;
    mm_plan_out o;
    char err[256];
    example(&in, t);
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.2, 1e-9);
    NEAR(o.compute_s, 0.05, 1e-9);
    NEAR(o.comm_exposed_s, 0.15, 1e-9);
    NEAR(o.wait_s, 0, 1e-9);
    NEAR(o.exchange_s, 0.2, 1e-9);
    NEAR(o.bound_lo_s, 0.2, 1e-9);
    NEAR(o.bound_hi_s, 0.2, 1e-9);
    assert_int_equal(o.bottleneck, MM_PLAN_RES_UP_OUT);
    in.step_s = 0.3;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.3, 1e-9);
    NEAR(o.comm_exposed_s, 0, 1e-9);
    in.step_s = 0.05;
    in.mix_fps = 2.5e7;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.mix_s, 0.03, 1e-9);
    NEAR(o.round_s, 0.23, 1e-9);
    /* 2 local steps: compute 100 ms, still hidden behind 200 ms */
    in.mix_fps = 0;
    in.local_steps = 2;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.2, 1e-9);
    NEAR(o.compute_s, 0.1, 1e-9);
    /* 2 gossip steps: the second exchange is not overlapped: 200 + 200 ms */
    in.local_steps = 1;
    in.gossip_steps = 2;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.4, 1e-9);
    NEAR(o.comm_exposed_s, 0.35, 1e-9);
    /* a codec at 1 byte per float: messages of 250 KB, 50 ms: compute-bound */
    in.gossip_steps = 1;
    in.bytes_per_float = 1;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.exchange_s, 0.05, 1e-9);
    NEAR(o.round_s, 0.05, 1e-9);
    mm_topo_free(t);
}

/* The outer optimizer (docs/outer.md): dpsgd exchanges after its compute,
 * so the worked example's 50 ms of compute and 200 ms exchange add up
 * (250 ms) where plain D-PSGD hides the compute (200 ms); with --overlap
 * they overlap again. 4 local steps: one exchange per 200 ms of compute,
 * 400 ms a round, 100 ms a step. The outer step's 2 passes count as
 * mixing: 3 + 2 passes of 250 000 floats at 2.5e7 floats/s = 50 ms. */
static void test_outer_steps_first(void **state)
{
    (void)state;
    mm_topology *t = gen("ring", 4);
    mm_plan_in in;
    mm_plan_out o;
    char err[256];
    example(&in, t);
    in.outer = true;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.25, 1e-9);
    NEAR(o.comm_exposed_s, 0.2, 1e-9);
    NEAR(o.bound_lo_s, 0.25, 1e-9);
    in.overlap = true;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.2, 1e-9);
    in.overlap = false;
    in.local_steps = 4;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.4, 1e-9);
    in.local_steps = 1;
    in.mix_fps = 2.5e7;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.mix_s, 0.05, 1e-9);
    NEAR(o.round_s, 0.3, 1e-9);
    mm_topo_free(t);
}

/* One-peer exponential graph on 4: rounds alternate i -> i+1 (one message
 * per uplink each way: 100 ms) and i -> i+2 (all four cross: two per
 * uplink, 200 ms). Mean round 150 ms. */
static void test_onepeer_alternates(void **state)
{
    (void)state;
    mm_topology *t = gen("one-peer-exp", 4);
    mm_plan_in in;
    mm_plan_out o;
    char err[256];
    example(&in, t);
    in.rounds = 400;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.exchange_s, 0.15, 1e-9);
    NEAR(o.round_s, 0.15, 1e-9);
    mm_topo_free(t);
}

/* Ring all-reduce: 2(n-1) = 6 steps of 250 KB; the step is bound by a
 * group uplink carrying one chunk: 25 ms. T_AR = 150 ms. After compute:
 * 50 + 150 = 200 ms; overlapped: max(50, 150) = 150 ms. One peer: nothing
 * to send. */
static void test_allreduce_deterministic(void **state)
{
    (void)state;
    mm_plan_in in;
    mm_plan_out o;
    char err[256];
    example(&in, NULL);
    in.algo = MM_PLAN_ALLREDUCE;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.allreduce_s, 0.15, 1e-9);
    NEAR(o.msg_bytes, 250000, 1e-6);
    NEAR(o.round_s, 0.2, 1e-9);
    NEAR(o.comm_exposed_s, 0.15, 1e-9);
    in.overlap = true;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.15, 1e-9);
    NEAR(o.comm_exposed_s, 0.1, 1e-9);
    in.overlap = false;
    in.links = (mm_plan_links){.groups = 1, .per = 1, .intra = 1e8, .inter = 1e7};
    in.n = 1;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.allreduce_s, 0, 1e-12);
    NEAR(o.round_s, 0.05, 1e-9);
}

/* All-reduce waits for the slowest of all. With free links:
 * uniform jitter U(0, A) on 2 peers: E[max] = 2A/3;
 * long tail (S with probability p) on 8 peers: mu + S (1 - (1-p)^8). */
static void test_allreduce_expected_max(void **state)
{
    (void)state;
    mm_plan_in in;
    mm_plan_out o;
    char err[256];
    mm_plan_in_defaults(&in);
    in.algo = MM_PLAN_ALLREDUCE;
    in.n = 2;
    in.vec_floats = 1000;
    in.rounds = 20000;
    in.jitter = (mm_jitter){MM_JITTER_UNIFORM, 0.03, 0};
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.02, 0.02 * 0.02);
    NEAR(o.compute_s, 0.015, 0.015 * 0.02);
    NEAR(o.wait_s, 0.005, 0.005 * 0.1);
    in.n = 8;
    in.step_s = 0.1;
    in.jitter = (mm_jitter){MM_JITTER_LONGTAIL, 1.0, 0.1};
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    double want = 0.1 + (1 - pow(0.9, 8));
    NEAR(o.round_s, want, want * 0.02);
    NEAR(o.compute_s, 0.2, 0.2 * 0.02);
    NEAR(o.compute_s + o.comm_exposed_s + o.wait_s + o.mix_s, o.round_s, 1e-9);
}

/* Gossip with jitter: neighbours wait for each other but not for everyone:
 * the round lies strictly between "nobody waits" and "all wait for the
 * slowest", and the parts add up. Same seed, same figure; another seed,
 * another (close) figure. */
static void test_dpsgd_jitter_bounds(void **state)
{
    (void)state;
    mm_topology *t = gen("ring", 16);
    mm_plan_in in;
    mm_plan_out o, o2;
    char err[256];
    mm_plan_in_defaults(&in);
    in.topo = t;
    in.n = 16;
    in.vec_floats = 1e5;
    in.loop_bps = 1e9;
    in.step_s = 0.05;
    in.jitter = (mm_jitter){MM_JITTER_LONGTAIL, 0.1, 0.1};
    in.rounds = 3000;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    assert_true(o.round_s > o.bound_lo_s * 1.05);
    assert_true(o.round_s < o.bound_hi_s * 0.95);
    assert_true(o.wait_s > 0);
    NEAR(o.compute_s + o.comm_exposed_s + o.wait_s + o.mix_s, o.round_s, 1e-9);
    assert_int_equal(mm_plan_run(&in, &o2, err, sizeof err), 0);
    assert_true(o.round_s == o2.round_s);
    in.seed = 2;
    assert_int_equal(mm_plan_run(&in, &o2, err, sizeof err), 0);
    assert_true(o.round_s != o2.round_s);
    NEAR(o2.round_s, o.round_s, o.round_s * 0.03);
    mm_topo_free(t);
}

/* Async: nobody waits; round = compute + mixing. A neighbour's vector is
 * new in min(1, tau / T) of the rounds: intra messages (20 ms < 50 ms)
 * always, cross ones (200 ms) in a quarter: (4 x 1 + 4 x 0.25) / 8. */
static void test_async(void **state)
{
    (void)state;
    mm_topology *t = gen("ring", 4);
    mm_plan_in in;
    mm_plan_out o;
    char err[256];
    example(&in, t);
    in.algo = MM_PLAN_ASYNC;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.05, 1e-9);
    NEAR(o.wait_s + o.comm_exposed_s, 0, 1e-12);
    NEAR(o.fresh, 0.625, 1e-9);
    mm_topo_free(t);
}

/* --placement 0,1,0,1 puts ring neighbours in different groups: all 8
 * messages cross, 4 out of each group: 4 MB / 10 MB/s = 400 ms. */
static void test_placement(void **state)
{
    (void)state;
    mm_topology *t = gen("ring", 4);
    mm_plan_in in;
    mm_plan_out o;
    char err[256];
    int place[4];
    assert_int_equal(mm_plan_parse_placement("0,1,0,1", 4, place, err, sizeof err), 2);
    assert_true(place[0] == 0 && place[1] == 1 && place[2] == 0 && place[3] == 1);
    example(&in, t);
    in.links.placement = place;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.exchange_s, 0.4, 1e-9);
    NEAR(o.round_s, 0.4, 1e-9);
    /* the same as blocks: 0,0,1,1 gives the 200 ms of the block placement */
    assert_int_equal(mm_plan_parse_placement("0,0,1,1", 4, place, err, sizeof err), 2);
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.2, 1e-9);
    const char *bad[] = {"0,1,0", "0,1,0,1,0", "0,2,0,2", "0,1,x,1", "0,-1,0,1", "0,1,,1", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(mm_plan_parse_placement(bad[i], 4, place, err, sizeof err), -1);
    mm_topo_free(t);
}

static void test_refusals(void **state)
{
    (void)state;
    mm_topology *t = gen("ring", 4);
    mm_plan_in in;
    mm_plan_out o;
    char err[256];
    example(&in, NULL);
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), -1); /* dpsgd without topology */
    assert_non_null(strstr(err, "topology"));
    example(&in, t);
    in.links.per = 3;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "groups x per"));
    example(&in, t);
    in.n = 5;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), -1);
    example(&in, t);
    in.vec_floats = 0;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), -1);
    example(&in, t);
    in.step_s = -1;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), -1);
    mm_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_rate),
        cmocka_unit_test(test_parse_links),
        cmocka_unit_test(test_parse_jitter_algo),
        cmocka_unit_test(test_flow_times),
        cmocka_unit_test(test_dpsgd_deterministic),
        cmocka_unit_test(test_outer_steps_first),
        cmocka_unit_test(test_onepeer_alternates),
        cmocka_unit_test(test_allreduce_deterministic),
        cmocka_unit_test(test_allreduce_expected_max),
        cmocka_unit_test(test_dpsgd_jitter_bounds),
        cmocka_unit_test(test_async),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
