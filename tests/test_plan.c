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
#include "node/mailbox.h"
#include "plan/plan.h"
#include "plan/plan_fluid.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))
/* D-PSGD's worked examples: exactly x with the peers in step (the max-plus
 * recurrence), and within 0.5 % of it out of step (the fluid links, peers
 * started up to one exchange apart: with compute to absorb it, a drift
 * dies out). */
#define IN_STEP(o, x)                                                                          \
    do {                                                                                       \
        NEAR((o).round_in_step_s, (x), 1e-9);                                                  \
        NEAR((o).round_s, (x), (x) * 0.005);                                                   \
    } while (0)
/* ... and where the links can work while a peer computes or mixes: a drift
 * that the start left does not die out (the schedule is neutral to it), so
 * the out-of-step round lies between what the busiest link must carry per
 * round (lo) and the in-step round x, by how the peers started. */
#define DRIFTS(o, lo, x)                                                                       \
    do {                                                                                       \
        NEAR((o).round_in_step_s, (x), 1e-9);                                                  \
        assert_true((o).round_s >= (lo) * 0.999 && (o).round_s <= (x) * 1.005);                 \
    } while (0)

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
    IN_STEP(o, 0.2);
    NEAR(o.compute_s, 0.05, 1e-3);
    NEAR(o.comm_exposed_s, 0.15, 1e-3);
    NEAR(o.wait_s, 0, 1e-3);
    NEAR(o.exchange_s, 0.2, 1e-9);
    NEAR(o.bound_lo_s, 0.2, 1e-9);
    NEAR(o.bound_hi_s, 0.2, 1e-9);
    assert_int_equal(o.bottleneck, MM_PLAN_RES_UP_OUT);
    in.step_s = 0.3;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    IN_STEP(o, 0.3);
    NEAR(o.comm_exposed_s, 0, 1e-3);
    in.step_s = 0.05;
    in.mix_fps = 2.5e7;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.mix_s, 0.03, 1e-3);
    DRIFTS(o, 0.2, 0.23); /* an uplink carries 2 MB a round at 10 MB/s */
    /* 2 local steps: compute 100 ms, still hidden behind 200 ms */
    in.mix_fps = 0;
    in.local_steps = 2;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    IN_STEP(o, 0.2);
    NEAR(o.compute_s, 0.1, 1e-3);
    /* 2 gossip steps: the second exchange is not overlapped: 200 + 200 ms */
    in.local_steps = 1;
    in.gossip_steps = 2;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    IN_STEP(o, 0.4);
    NEAR(o.comm_exposed_s, 0.35, 1e-3);
    /* a codec at 1 byte per float: messages of 250 KB, 50 ms: compute-bound */
    in.gossip_steps = 1;
    in.bytes_per_float = 1;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.exchange_s, 0.05, 1e-9);
    IN_STEP(o, 0.05);
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
    DRIFTS(o, 0.2, 0.25);
    NEAR(o.bound_lo_s, 0.25, 1e-9);
    in.overlap = true;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    IN_STEP(o, 0.2);
    in.overlap = false;
    in.local_steps = 4;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    DRIFTS(o, 0.2, 0.4);
    in.local_steps = 1;
    in.mix_fps = 2.5e7;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.mix_s, 0.05, 1e-3);
    DRIFTS(o, 0.2, 0.3);
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
    IN_STEP(o, 0.15);
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

/* The compressed outer exchange's all-gather (--allgather): n-1 = 3 steps,
 * each a whole payload; at 1 byte per float the payload of the example's
 * 250000 floats is 250 KB, the ring's chunk: 25 ms a step on the same
 * uplink, T = 75 ms, half the ring's 150 ms ((n - 1) V' against
 * 2 (n - 1) V / n, V' = V / 4, n = 4); after compute 50 + 75 ms. */
static void test_allgather(void **state)
{
    (void)state;
    mm_plan_in in;
    mm_plan_out o;
    char err[256];
    example(&in, NULL);
    in.algo = MM_PLAN_ALLREDUCE;
    in.allgather = true;
    in.bytes_per_float = 1;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.allreduce_s, 0.075, 1e-9);
    NEAR(o.msg_bytes, 250000, 1e-6);
    NEAR(o.round_s, 0.125, 1e-9);
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
    IN_STEP(o, 0.4);
    /* the same as blocks: 0,0,1,1 gives the 200 ms of the block placement */
    assert_int_equal(mm_plan_parse_placement("0,0,1,1", 4, place, err, sizeof err), 2);
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    IN_STEP(o, 0.2);
    const char *bad[] = {"0,1,0", "0,1,0,1,0", "0,2,0,2", "0,1,x,1", "0,-1,0,1", "0,1,,1", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(mm_plan_parse_placement(bad[i], 4, place, err, sizeof err), -1);
    mm_topo_free(t);
}

/* Max-min fair rates, by hand: flow 0 crosses resources a and b, flow 1
 * a alone, flow 2 b and c; a and b carry 1, c 0.25. Filling all three
 * together, c is full first (0.25: flow 2 stops there); then a at 0.5 each
 * for flows 0 and 1 (b then carries 0.75 of its 1). A flow not moving gets
 * nothing; one through unlimited resources only, any rate. */
static void test_fluid_fair_rates(void **state)
{
    (void)state;
    mm_fluid_flow f[4] = {{.state = MM_FLUID_MOVING, .nres = 2, .res = {0, 1}},
                          {.state = MM_FLUID_MOVING, .nres = 1, .res = {0}},
                          {.state = MM_FLUID_MOVING, .nres = 2, .res = {1, 2}},
                          {.state = MM_FLUID_QUEUED, .nres = 1, .res = {0}}};
    double cap[4] = {1, 1, 0.25, 0}, rate[4];
    assert_int_equal(mm_fluid_fair_rates(f, 4, cap, 4, rate), 0);
    NEAR(rate[0], 0.5, 1e-12);
    NEAR(rate[1], 0.5, 1e-12);
    NEAR(rate[2], 0.25, 1e-12);
    NEAR(rate[3], 0, 0);
    f[3] = (mm_fluid_flow){.state = MM_FLUID_MOVING, .nres = 1, .res = {3}};
    assert_int_equal(mm_fluid_fair_rates(f, 4, cap, 4, rate), 0);
    assert_true(isinf(rate[3]));
    NEAR(rate[0], 0.5, 1e-12);
}

/* 3 peers in one group, links of 1 MB/s. Peer 0 sends 1 MB to peer 1 at
 * t = 0 and 1 MB to peer 2 at 0.5: alone, the first is half through at
 * 0.5; the two then share peer 0's link at 0.5 MB/s each, so the first
 * is through at 1.5 and the second, alone again, at 2.0 (sent together,
 * mm_plan_flow_times would give both 2 s; sent apart, each 1 s). A second
 * vector to peer 1 while the first moves waits behind it: queued, and
 * counted as a snapshot still read. */
static void test_fluid_overlap(void **state)
{
    (void)state;
    mm_plan_in in;
    mm_plan_in_defaults(&in);
    in.n = 3;
    in.links = (mm_plan_links){.groups = 1, .per = 3, .intra = 1e6};
    mm_fluid fl;
    mm_fluid_flow got[4];
    size_t ngot;
    assert_int_equal(mm_fluid_init(&fl, &in), 0);
    assert_int_equal(mm_fluid_send(&fl, 0, 1, 0, 1e6), 0);
    assert_int_equal(mm_fluid_rates(&fl), 0);
    NEAR(mm_fluid_next(&fl, 0), 1.0, 1e-9);
    mm_fluid_advance(&fl, 0, 0.5, got, &ngot);
    assert_int_equal(ngot, 0);
    assert_int_equal(mm_fluid_send(&fl, 0, 2, 1, 1e6), 0);
    assert_int_equal(mm_fluid_send(&fl, 0, 1, 1, 1e6), 0); /* behind the first */
    assert_int_equal(mm_fluid_queued(&fl, 0, 1), 1);
    assert_int_equal(mm_fluid_queued(&fl, 0, 0), 0);
    assert_int_equal(mm_fluid_snapshots(&fl, 0), 2);
    assert_int_equal(mm_fluid_rates(&fl), 0);
    double t = mm_fluid_next(&fl, 0.5);
    NEAR(t, 1.5, 1e-9);
    mm_fluid_advance(&fl, 0.5, t, got, &ngot);
    assert_int_equal(ngot, 1);
    assert_true(got[0].to == 1 && got[0].exchange == 0);
    assert_int_equal(mm_fluid_queued(&fl, 0, 1), 0); /* the next to peer 1 moves now */
    assert_int_equal(mm_fluid_rates(&fl), 0);
    /* 0.5 MB left to peer 2 and 1 MB to peer 1, sharing: 0.5 MB/s each */
    t = mm_fluid_next(&fl, 1.5);
    NEAR(t, 2.5, 1e-9);
    mm_fluid_advance(&fl, 1.5, t, got, &ngot);
    assert_int_equal(ngot, 1);
    assert_true(got[0].to == 2);
    mm_fluid_free(&fl);
}

/* Out of step, by hand: one-peer-exp on 4 peers (round 0: i -> i+1, round
 * 1: i -> i+2), one group, links 1 MB/s, 1 MB vectors, no compute; peer 0
 * starts at 0, the others at 0.5. Round 0: every link carries one vector:
 * 0->1 is in at 1.0, the others at 1.5 ... but peer 1, done at 1.0, sends
 * 1->3 while its 1->2 (0.5 MB left) still moves: they share its link, and
 * 1->3 shares 3's with 2->3: 0.5 MB/s each; 3->0 alone, in at 1.5. Peer 0
 * then sends 0->2, which shares 2's link with 1->2: all four at 0.5 MB/s;
 * 1->2 and 2->3 are in at 2.0. From there every vector is alone on its
 * links: 1->3 (0.5 MB left) in at 2.5, 0->2 (0.75) at 2.75, 2->0 and 3->1
 * (sent at 2.0) at 3.0. Round 1 ends at 3.0, 3.0, 2.75, 2.5: rounds of
 * 1.5, 1.25, 1.125, 1.0 s, mean 1.21875. In step every round is 1 s. */
static void test_fluid_drift(void **state)
{
    (void)state;
    mm_topology *t = gen("one-peer-exp", 4);
    mm_plan_in in;
    mm_plan_out o;
    char err[256];
    double start[4] = {0, 0.5, 0.5, 0.5};
    mm_plan_in_defaults(&in);
    in.topo = t;
    in.n = 4;
    in.vec_floats = 250000;
    in.links = (mm_plan_links){.groups = 1, .per = 4, .intra = 1e6};
    in.start_s = start;
    in.rounds = 2;
    in.warmup = 0;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_in_step_s, 1.0, 1e-9);
    NEAR(o.round_s, 1.21875, 1e-9);
    NEAR(o.round_slowest_s, 1.5, 1e-9);
    NEAR(o.compute_s + o.comm_exposed_s + o.wait_s + o.mix_s, o.round_s, 1e-9);
    mm_topo_free(t);
}

/* The same graph on 8 peers without compute, started apart: the in-step
 * schedule (one vector a round through every link: 1 s) is not what
 * happens. A peer that finds its vector there runs on, its next sends share
 * its link with those its slower neighbours wait for, and the rounds settle
 * at about three transfers (each peer's sends to its 3 out-neighbours on
 * its link together; the lab's 8-peer case of docs/runtime.md). The
 * snapshot buffers are those of the node. */
static void test_fluid_onepeer_drifts(void **state)
{
    (void)state;
    assert_int_equal(MM_PLAN_SNAPSHOTS, MM__MBOX_BUFS);
    mm_topology *t = gen("one-peer-exp", 8);
    mm_plan_in in;
    mm_plan_out o;
    char err[256];
    mm_plan_in_defaults(&in);
    in.topo = t;
    in.n = 8;
    in.vec_floats = 250000;
    in.links = (mm_plan_links){.groups = 1, .per = 8, .intra = 1e6};
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_in_step_s, 1.0, 1e-9);
    assert_true(o.round_s > 2.5 && o.round_s < 3.5);
    mm_topo_free(t);
}

/* The lab's stragglers (--slow, --stretch; the node's --lab-slow and
 * --lab-stretch): their specs, and what they do to a ring of 8 with 100 ms
 * steps and free links. One peer twice as slow paces every D-PSGD peer
 * (200 ms rounds; the 7 others wait 100 ms: 7/8 x 100 ms on average) and
 * no async peer but itself; slow for rounds 100..199 of the 450 simulated
 * (50 of warm-up), three times as slow, it costs a quarter of the measured
 * rounds 200 ms more each: 150 ms on average. */
static void test_stragglers(void **state)
{
    (void)state;
    mm_slowdown sd = {0};
    char err[256];
    assert_int_equal(mm_slowdown_parse("3:2", false, &sd, err, sizeof err), 0);
    assert_int_equal(mm_slowdown_parse("5:1.5:10:20,3:3:100:100", true, &sd, err, sizeof err), 0);
    assert_int_equal(sd.n, 3);
    NEAR(mm_slowdown_factor(&sd, 3, 0), 2, 0);
    NEAR(mm_slowdown_factor(&sd, 3, 150), 6, 0); /* both of peer 3's apply */
    NEAR(mm_slowdown_factor(&sd, 5, 29), 1.5, 0);
    NEAR(mm_slowdown_factor(&sd, 5, 30), 1, 0);
    NEAR(mm_slowdown_factor(&sd, 1, 0), 1, 0);
    assert_int_equal(mm_slowdown_max_peer(&sd), 5);
    char buf[128];
    mm_slowdown_format(&sd, true, buf, sizeof buf);
    assert_string_equal(buf, "5:1.5:10:20,3:3:100:100");
    mm_slowdown_format(&sd, false, buf, sizeof buf);
    assert_string_equal(buf, "3:2");
    const char *bad[] = {"3", "3:0.5", "3:2:1:1", "-1:2", "3:x", "3:2,", ",", "3:1001", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mm_slowdown b = {0};
        assert_int_equal(mm_slowdown_parse(bad[i], false, &b, err, sizeof err), -1);
    }
    const char *bad_stretch[] = {"3:2", "3:2:-1:5", "3:2:0:0", "3:2:0:5:1"};
    for (size_t i = 0; i < sizeof bad_stretch / sizeof bad_stretch[0]; i++) {
        mm_slowdown b = {0};
        assert_int_equal(mm_slowdown_parse(bad_stretch[i], true, &b, err, sizeof err), -1);
    }

    mm_topology *t = gen("ring", 8);
    mm_plan_in in;
    mm_plan_out o;
    mm_plan_in_defaults(&in);
    in.topo = t;
    in.n = 8;
    in.vec_floats = 1000;
    in.step_s = 0.1;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.1, 1e-3);
    NEAR(o.wait_s, 0, 1e-3);
    in.slow = (mm_slowdown){0};
    assert_int_equal(mm_slowdown_parse("3:2", false, &in.slow, err, sizeof err), 0);
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.2, 2e-3);
    NEAR(o.compute_s, 0.1125, 1e-3);
    NEAR(o.wait_s, 0.0875, 2e-3);
    in.algo = MM_PLAN_ASYNC;
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.1125, 1e-3);
    NEAR(o.round_slowest_s, 0.2, 1e-3);
    in.algo = MM_PLAN_DPSGD;
    in.slow = (mm_slowdown){0};
    assert_int_equal(mm_slowdown_parse("3:3:100:100", true, &in.slow, err, sizeof err), 0);
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), 0);
    NEAR(o.round_s, 0.15, 3e-3);
    /* a peer the topology does not have */
    assert_int_equal(mm_slowdown_parse("8:2", false, &in.slow, err, sizeof err), 0);
    assert_int_equal(mm_plan_run(&in, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "--slow"));
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
        cmocka_unit_test(test_allgather),
        cmocka_unit_test(test_allreduce_expected_max),
        cmocka_unit_test(test_dpsgd_jitter_bounds),
        cmocka_unit_test(test_async),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_fluid_fair_rates),
        cmocka_unit_test(test_fluid_overlap),
        cmocka_unit_test(test_fluid_drift),
        cmocka_unit_test(test_fluid_onepeer_drifts),
        cmocka_unit_test(test_stragglers),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
