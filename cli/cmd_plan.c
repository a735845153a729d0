/* murmur plan: predict the time per round of a run before spending a
 * cluster's hours on it (plan/plan.h, docs/runtime.md), and measure on this
 * machine what the prediction needs (--calibrate, --link-server/--link-to). */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/opt.h"
#include "gossip/topology.h"
#include "model/model.h"
#include "model/blas_env.h"
#include "cli/commands.h"
#include "node/node.h"
#include "cli/options.h"
#include "plan/plan.h"
#include "plan/plan_probe.h"

typedef struct {
    const char *topo, *links, *jitter, *server, *link_to, *placement;
    const char *algo;   /* --algo's word: pushsum is timed as dpsgd, checked as itself */
    int peers, batch, threads, cores;
    bool json, calibrate, have_vec, have_shape, have_step, have_sd, have_mix, have_loop;
    bool have_gossip_steps;
    int fragments;
    double vec, seconds, timeout;
    mm_model_config cfg;
    mm_plan_in in;
} plan_args;

static int parse_algo(const char *arg, void *dst, char *err, size_t errlen)
{
    if (mm_plan_parse_algo(arg) < 0) {
        snprintf(err, errlen, "is dpsgd, pushsum, async or allreduce, not '%s'", arg);
        return -1;
    }
    *(const char **)dst = arg;
    return 0;
}

static const char *show_algo(const void *dst) { return *(const char *const *)dst; }

static int parse_rate(const char *arg, void *dst, char *err, size_t errlen)
{
    double r = mm_plan_parse_rate(arg);
    if (r < 0) {
        snprintf(err, errlen, "'%s' is not a rate (e.g. 10gbit, 500mbps)", arg);
        return -1;
    }
    *(double *)dst = r;
    return 0;
}

static const mm_opt *help_table;

static void usage(FILE *f)
{
    fprintf(f,
"usage: murmur plan (--topology FILE | --peers N) (--vector-len N | MODEL SHAPE)\n"
"                   (--step-time S | --calibrate) [options]\n"
"       murmur plan --calibrate [MODEL SHAPE] [--link-to HOST:PORT]\n"
"       murmur plan --link-server HOST:PORT [--timeout S]\n"
"       murmur plan --link-to HOST:PORT [--seconds S]\n"
"Predicts the time of one round (compute, communication left exposed after\n"
"overlap, waiting on slower neighbours, mixing). Formulas: docs/runtime.md.\n");
    mm_opt_print(f, help_table);
}

/* 0 ok, 1 help printed, -1 usage error (printed). */
static int parse(int argc, char **argv, plan_args *a)
{
    memset(a, 0, sizeof *a);
    mm_plan_in_defaults(&a->in);
    a->in.payload_share = MM_PLAN_PAYLOAD_SHARE; /* used with --links only */
    a->cfg = mm_model_config_default();
    a->algo = "dpsgd";
    a->batch = 16;
    a->threads = 1;
    a->seconds = 2;
    a->timeout = 30;
    const mm_opt t[] = {
        MM_OPT_HEAD("Run:"),
        MM_OPT(MM_OPT_STR, "topology", "FILE", &a->topo, 0, 0,
               "who talks to whom (gossip); its peer count is N"),
        MM_OPT(MM_OPT_INT, "peers", "N", &a->peers, 1, 1 << 20,
               "peer count for --algo allreduce without a topology", .hide_default = true),
        MM_OPT(MM_OPT_CUSTOM, "algo", "A", &a->algo, 0, 0,
               "dpsgd, async or allreduce (ring, reduce-scatter then all-gather, peers in id "
               "order)", .parse = parse_algo, .show = show_algo),
        MM_OPT(MM_OPT_INT, "local-steps", "H", &a->in.local_steps, 1, 1e6,
               "optimizer steps per round"),
        MM_OPT(MM_OPT_INT, "gossip-steps", "G", &a->in.gossip_steps, 1, 1000,
               "dpsgd: averaging exchanges per round", .given = &a->have_gossip_steps),
        MM_OPT(MM_OPT_FLAG, "overlap", NULL, &a->in.overlap, 0, 0,
               "allreduce: average the snapshot while computing (as dpsgd does); default: "
               "compute, then all-reduce. With --outer: the node's --outer-overlap"),
        MM_OPT(MM_OPT_FLAG, "outer", NULL, &a->in.outer, 0, 0,
               "the node's --outer nesterov (docs/outer.md): one exchange every H = "
               "--local-steps steps, after them (dpsgd too) unless --overlap, and the outer "
               "step's 2 more passes over the vector"),
        MM_OPT(MM_OPT_FLAG, "allgather", NULL, &a->in.allgather, 0, 0,
               "allreduce with --outer: the node's --compress, the ring all-gather of every "
               "peer's compressed payload (n - 1 steps of the whole payload; give the codec's "
               "--bytes-per-float) instead of the ring all-reduce"),
        MM_OPT(MM_OPT_INT, "fragments", "F", &a->fragments, 1, 1 << 20,
               "with --outer: the node's --outer-fragments F, a round exchanging 1/F of the "
               "vector"),
        MM_OPT_HEAD("Vector:"),
        MM_OPT(MM_OPT_DOUBLE, "vector-len", "N", &a->vec, 1, 1e12,
               "floats in the vector (pure gossip, or any model)", .given = &a->have_vec,
               .hide_default = true),
        MM_OPT(MM_OPT_INT, "layers", "N", &a->cfg.n_layer, 1, 64,
               "or murmur's model of this shape", .given = &a->have_shape),
        MM_OPT(MM_OPT_INT, "width", "N", &a->cfg.d_model, 1, 4096, "its width",
               .given = &a->have_shape),
        MM_OPT(MM_OPT_INT, "heads", "N", &a->cfg.n_head, 1, 256, "its heads",
               .given = &a->have_shape),
        MM_OPT(MM_OPT_INT, "ctx", "N", &a->cfg.n_ctx, 1, 4096, "its context",
               .given = &a->have_shape),
        MM_OPT(MM_OPT_DOUBLE, "bytes-per-float", "B", &a->in.bytes_per_float, 1e-6, 64,
               "on the wire (a codec's figure)"),
        MM_OPT_HEAD("Compute (per optimizer step):"),
        MM_OPT(MM_OPT_DOUBLE, "step-time", "S", &a->in.step_s, 0, 1e6,
               "mean seconds (murmur train/node logs it; or --calibrate)",
               .given = &a->have_step, .hide_default = true),
        MM_OPT(MM_OPT_DOUBLE, "step-sd", "S", &a->in.step_sd, 0, 1e6,
               "its spread (normal, truncated at 0)", .given = &a->have_sd),
        MM_OPT(MM_OPT_STR, "jitter", "J", &a->jitter, 0, 0,
               "added delay: none, uniform:A (U(0,A) s), longtail:P:S (S seconds with "
               "probability P)", .hide_default = true),
        MM_OPT(MM_OPT_CUSTOM, "slow", "PEER:F[,...]", &a->in.slow, 0, 0,
               "peer PEER's steps take F times as long (F >= 1: a slower machine; the node's "
               "--lab-slow)", .parse = mm_cli_parse_slow, .hide_default = true),
        MM_OPT(MM_OPT_CUSTOM, "stretch", "PEER:F:FROM:ROUNDS[,...]", &a->in.slow, 0, 0,
               "the same for ROUNDS simulated rounds from round FROM (warm-up included: a "
               "transient straggler; the node's --lab-stretch)", .parse = mm_cli_parse_stretch,
               .hide_default = true),
        MM_OPT(MM_OPT_INT, "batch", "B", &a->batch, 1, 4096,
               "calibration batch (as murmur node)"),
        MM_OPT(MM_OPT_INT, "threads", "N", &a->threads, 1, 256,
               "calibration OpenBLAS threads (as murmur node)"),
        MM_OPT(MM_OPT_INT, "cores", "K", &a->cores, 1, 1 << 20,
               "the peers share K cores (all on one machine, as in the lab): step time and "
               "spread x max(1, N/K)", .hide_default = true),
        MM_OPT_HEAD("Links:"),
        MM_OPT(MM_OPT_STR, "links", "GxP:intra=RATE,inter=RATE", &a->links, 0, 0,
               "G groups (hosts) of P peers, peer k in group k/P; each peer's link at intra "
               "each way, each group's uplink at inter each way (RATE: 1gbit, 100mbit, 50mbps, "
               "... as scripts/netns-lab.sh --profile)"),
        MM_OPT(MM_OPT_STR, "placement", "LIST", &a->placement, 0, 0,
               "with --links: the group of every peer, in peer order (e.g. 0,1,0,1), instead "
               "of blocks of P; G is then the number of groups named, P is ignored"),
        MM_OPT(MM_OPT_CUSTOM, "loop-rate", "RATE", &a->in.loop_bps, 0, 0,
               "without --links: each peer's own link (default: measured by --calibrate, "
               "else unlimited)", .given = &a->have_loop, .parse = parse_rate),
        MM_OPT(MM_OPT_DOUBLE, "payload-share", "F", &a->in.payload_share, 0.01, 1,
               "with --links: the share of a shaped rate that carries the vector (default "
               "1448/1514 = 0.956: TCP/IPv4 headers in Ethernet frames, as tc counts them)",
               .hide_default = true),
        MM_OPT(MM_OPT_DOUBLE, "tcp-share", "F", &a->in.tcp_share, 0.01, 1,
               "with --links: the share of a shaped link that 2 or more TCP flows use "
               "together (default 1; this lab's tbf links: see docs/runtime.md)",
               .hide_default = true),
        MM_OPT(MM_OPT_DOUBLE, "latency", "S", &a->in.latency_s, 0, 1e3,
               "one-way seconds added to every message"),
        MM_OPT(MM_OPT_DOUBLE, "mix-rate", "F", &a->in.mix_fps, 1, 1e15,
               "floats/s of one mixing pass (default: --calibrate's, else free)",
               .given = &a->have_mix, .hide_default = true),
        MM_OPT_HEAD("Output:"),
        MM_OPT(MM_OPT_FLAG, "json", NULL, &a->json, 0, 0, "one JSON object instead of the table"),
        MM_OPT(MM_OPT_INT, "rounds", "R", &a->in.rounds, 1, 1e6,
               "simulated rounds (after 50 unmeasured)"),
        MM_OPT(MM_OPT_U64, "seed", "S", &a->in.seed, 0, 9e15, "of the simulated compute times"),
        MM_OPT_HEAD("Measuring:"),
        MM_OPT(MM_OPT_FLAG, "calibrate", NULL, &a->calibrate, 0, 0,
               "measure sgemm, the step time of the model shape, the mixing speed and "
               "loopback TCP (or --link-to) here"),
        MM_OPT(MM_OPT_STR, "link-server", "H:P", &a->server, 0, 0,
               "receive one --link-to sender, then exit (within --timeout)"),
        MM_OPT(MM_OPT_STR, "link-to", "H:P", &a->link_to, 0, 0,
               "send to a --link-server for --seconds, print bytes/s; with --calibrate: use "
               "it as the link rate"),
        MM_OPT(MM_OPT_DOUBLE, "seconds", "S", &a->seconds, 0.1, 600, "how long --link-to sends"),
        MM_OPT(MM_OPT_DOUBLE, "timeout", "S", &a->timeout, 0.1, 3600,
               "how long --link-server waits"),
        {.kind = MM_OPT_END},
    };
    help_table = t;
    int first;
    int r = mm_opt_parse("plan", argc, argv, t, &first, usage);
    if (r != 0)
        return r;
    a->in.algo = (mm_plan_algo)mm_plan_parse_algo(a->algo);
    if (first < argc) {
        fprintf(stderr, "murmur plan: unexpected argument '%s'\n", argv[first]);
        return -1;
    }
    return 0;
}

typedef struct {
    bool done;
    double sgemm_gflops, step_s, step_sd, mix_fps, link_bps;
    const char *link_how;
} calib;

static int calibrate(plan_args *a, calib *k)
{
    char err[256];
    openblas_set_num_threads(a->threads);
    fprintf(stderr, "plan: calibrating (OpenBLAS %s, %d thread%s)...\n", mm_blas_kernel(),
            a->threads, a->threads > 1 ? "s" : "");
    k->sgemm_gflops = mm_probe_sgemm_gflops();
    if (!a->have_vec || a->have_shape) {
        const char *bad = mm_model_config_check(&a->cfg);
        if (bad) {
            fprintf(stderr, "murmur plan: %s\n", bad);
            return -1;
        }
        if (mm_probe_step(&a->cfg, a->batch, 8, &k->step_s, &k->step_sd, err, sizeof err) != 0) {
            fprintf(stderr, "murmur plan: calibration: %s\n", err);
            return -1;
        }
    }
    double n = a->have_vec ? a->vec : (double)mm_model_param_count(&a->cfg);
    k->mix_fps = mm_probe_mix_fps((size_t)n);
    int rc = a->link_to ? mm_probe_link_send(a->link_to, a->seconds, &k->link_bps, err, sizeof err)
                        : mm_probe_loopback(a->seconds, &k->link_bps, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "murmur plan: calibration: %s\n", err);
        return -1;
    }
    k->link_how = a->link_to ? a->link_to : "loopback";
    k->done = true;
    return 0;
}

static void print_calib(const plan_args *a, const calib *k, bool json)
{
    if (!k->done)
        return;
    if (json) {
        printf("\"calibration\":{\"sgemm_gflops\":%.4g,\"step_s\":%.6g,\"step_sd\":%.6g,"
               "\"batch\":%d,\"threads\":%d,\"mix_fps\":%.6g,\"link_bps\":%.6g,\"link\":\"%s\"}",
               k->sgemm_gflops, k->step_s, k->step_sd, a->batch, a->threads, k->mix_fps,
               k->link_bps, k->link_how);
        return;
    }
    printf("calibration  sgemm %.1f GFLOP/s", k->sgemm_gflops);
    if (k->step_s > 0)
        printf("; step %.2f ms (sd %.2f ms, batch %d)", k->step_s * 1e3, k->step_sd * 1e3, a->batch);
    printf("; mixing %.0f Mfloat/s; TCP %s %.1f MB/s\n", k->mix_fps / 1e6, k->link_how,
           k->link_bps / 1e6);
}

static void print_table(const plan_args *a, const mm_plan_in *in, const mm_plan_out *o,
                        const calib *k, const char *topo_kind)
{
    print_calib(a, k, false);
    printf("plan         %s, %d peers (%s), %d local step%s", mm_plan_algo_name(in->algo), in->n,
           topo_kind, in->local_steps, in->local_steps > 1 ? "s" : "");
    if (in->algo == MM_PLAN_DPSGD && in->gossip_steps > 1)
        printf(", %d gossip steps", in->gossip_steps);
    if (in->outer)
        printf(", outer Nesterov step");
    if (in->allgather)
        printf(", all-gather of compressed payloads");
    if (a->fragments > 1)
        printf(", fragment 1/%d a round", a->fragments);
    if (in->algo == MM_PLAN_ALLREDUCE || (in->outer && in->algo == MM_PLAN_DPSGD))
        printf(", %s", in->overlap ? "overlapped with compute" : "after compute");
    printf("\nvector       %.0f floats x %g bytes = %.3f MB; message %.3f MB\n", in->vec_floats,
           in->bytes_per_float, in->vec_floats * in->bytes_per_float / 1e6, o->msg_bytes / 1e6);
    if (in->links.placement)
        printf("links        %d groups (--placement): intra %.2f MB/s, inter %.2f MB/s (0 = unlimited)",
               in->links.groups, in->links.intra / 1e6, in->links.inter / 1e6);
    else if (in->links.groups)
        printf("links        %dx%d: intra %.2f MB/s, inter %.2f MB/s (0 = unlimited)",
               in->links.groups, in->links.per, in->links.intra / 1e6, in->links.inter / 1e6);
    else if (in->loop_bps > 0)
        printf("links        one group: each peer's link %.2f MB/s", in->loop_bps / 1e6);
    else
        printf("links        unlimited (no --links, --loop-rate or --calibrate)");
    if (in->links.groups)
        printf("; payload %.3f of the rate, TCP flows sharing a link %.3f of it",
               in->payload_share, in->tcp_share > 0 ? in->tcp_share : 1);
    printf("; latency %g ms\n", in->latency_s * 1e3);
    printf("compute      step %.3f ms (sd %.3f ms)%s, jitter %s\n", in->step_s * 1e3,
           in->step_sd * 1e3, a->cores && in->n > a->cores ? " sharing the cores" : "",
           a->jitter ? a->jitter : "none");
    if (in->slow.n) {
        char slow[512], stretch[512];
        mm_slowdown_format(&in->slow, false, slow, sizeof slow);
        mm_slowdown_format(&in->slow, true, stretch, sizeof stretch);
        printf("stragglers   slow %s, stretch %s (PEER:F[:FROM:ROUNDS])\n", slow[0] ? slow : "none",
               stretch[0] ? stretch : "none");
    }
    if (in->algo == MM_PLAN_ALLREDUCE)
        printf("all-reduce   %.4f s per all-reduce (2(n-1) steps), bound by %s%s\n",
               o->allreduce_s, o->bottleneck ? "the " : "",
               o->bottleneck ? mm_plan_res_name(o->bottleneck)
                             : "nothing: unlimited links (latency only)");
    else
        printf("exchange     slowest message %.4f s, bound by %s%s\n", o->exchange_s,
               o->bottleneck ? "the " : "", o->bottleneck ? mm_plan_res_name(o->bottleneck)
                                                        : "nothing: unlimited links (latency only)");
    printf("round        %.4f s = compute %.4f + exposed communication %.4f + waiting %.4f"
           " + mixing %.4f\n", o->round_s, o->compute_s, o->comm_exposed_s, o->wait_s, o->mix_s);
    char per_round[48]; /* what the prediction's round holds */
    int G = in->algo == MM_PLAN_DPSGD ? in->gossip_steps : 1;
    if (in->algo == MM_PLAN_ALLREDUCE)
        snprintf(per_round, sizeof per_round, "one all-reduce per round");
    else if (G > 1)
        snprintf(per_round, sizeof per_round, "%d exchanges per round", G);
    else
        snprintf(per_round, sizeof per_round, "one exchange per round");
    printf("per step     %.4f s (a round is %d optimizer step%s; %s)\n",
           o->round_s / in->local_steps, in->local_steps, in->local_steps > 1 ? "s" : "",
           per_round);
    if (in->algo == MM_PLAN_ASYNC)
        printf("             slowest peer %.4f s per round; a neighbour's vector is new in %.0f%% of rounds\n",
               o->round_slowest_s, 100 * o->fresh);
    else
        printf("bounds       %.4f s if nobody waited for a slower peer, %.4f s if all waited for the slowest\n",
               o->bound_lo_s, o->bound_hi_s);
    if (in->algo == MM_PLAN_DPSGD)
        printf("in step      %.4f s if the peers stayed in step (%.2fx: %s)\n", o->round_in_step_s,
               o->round_in_step_s > 0 ? o->round_s / o->round_in_step_s : 1,
               o->round_s > o->round_in_step_s * 1.01
                   ? "they drift apart, and what a peer ahead sends shares the links"
                   : "they do");
}

static void print_json(const plan_args *a, const mm_plan_in *in, const mm_plan_out *o,
                       const calib *k, const char *topo_kind)
{
    printf("{\"algo\":\"%s\",\"peers\":%d,\"topology\":\"%s\",\"local_steps\":%d,"
           "\"gossip_steps\":%d,\"overlap\":%s,\"vec_floats\":%.0f,\"bytes_per_float\":%g,"
           "\"msg_bytes\":%.0f,\"groups\":%d,\"per\":%d,\"intra_bps\":%.6g,\"inter_bps\":%.6g,"
           "\"loop_bps\":%.6g,\"latency_s\":%.6g,\"step_s\":%.6g,\"step_sd\":%.6g,"
           "\"jitter\":\"%s\",\"mix_fps\":%.6g,\"round_s\":%.6g,\"compute_s\":%.6g,"
           "\"comm_exposed_s\":%.6g,\"wait_s\":%.6g,\"mix_s\":%.6g,\"round_in_step_s\":%.6g,"
           "\"exchange_s\":%.6g,\"allreduce_s\":%.6g,\"round_slowest_s\":%.6g,\"fresh\":%.4g,\"bound_lo_s\":%.6g,"
           "\"bound_hi_s\":%.6g,\"bottleneck\":\"%s\",\"cores\":%d,\"rounds\":%d,\"seed\":%llu,"
           "\"outer\":%s,\"allgather\":%s,\"fragments\":%d,\"step_round_s\":%.6g",
           mm_plan_algo_name(in->algo), in->n, topo_kind, in->local_steps, in->gossip_steps,
           in->overlap ? "true" : "false", in->vec_floats, in->bytes_per_float, o->msg_bytes,
           in->links.groups, in->links.per, in->links.intra, in->links.inter, in->loop_bps,
           in->latency_s, in->step_s, in->step_sd, a->jitter ? a->jitter : "none", in->mix_fps,
           o->round_s, o->compute_s, o->comm_exposed_s, o->wait_s, o->mix_s, o->round_in_step_s,
           o->exchange_s,
           o->allreduce_s, o->round_slowest_s, o->fresh, o->bound_lo_s, o->bound_hi_s,
           mm_plan_res_name(o->bottleneck), a->cores, in->rounds, (unsigned long long)in->seed,
           in->outer ? "true" : "false", in->allgather ? "true" : "false",
           a->fragments > 1 ? a->fragments : 1, o->round_s / in->local_steps);
    if (a->placement)
        printf(",\"placement\":\"%s\"", a->placement);
    if (in->slow.n) {
        char slow[512], stretch[512];
        mm_slowdown_format(&in->slow, false, slow, sizeof slow);
        mm_slowdown_format(&in->slow, true, stretch, sizeof stretch);
        printf(",\"slow\":\"%s\",\"stretch\":\"%s\"", slow, stretch);
    }
    printf(",\"payload_share\":%.6g,\"tcp_share\":%.6g", in->links.groups ? in->payload_share : 1,
           in->tcp_share > 0 ? in->tcp_share : 1);
    if (k->done)
        printf(",");
    print_calib(a, k, true);
    printf("}\n");
}

/* Whether murmur node would refuse the run predicted: the node's own check
 * (mm_node_config_check) of the flags plan shares with it (--algo,
 * --local-steps, --gossip-steps, --outer and --overlap, the topology or
 * --peers), so that plan never predicts what the node refuses. The model's
 * shape is plan's (or the default with --vector-len: the budgets are the
 * node's business, not a prediction's). */
static bool node_refuses(const plan_args *a, char *err, size_t errlen)
{
    mm_node_config c;
    mm_node_config_defaults(&c);
    c.id = 0;
    c.topology = a->topo;
    c.n_peers = a->topo ? 0 : a->peers;
    c.algo = (mm_algo)mm_algo_parse(a->algo);
    c.train.model = a->cfg;
    c.local_steps = a->in.local_steps;
    c.gossip_steps = a->in.gossip_steps;
    c.given.gossip_steps = a->have_gossip_steps;
    c.outer = a->in.outer;
    c.outer_overlap = a->in.outer && a->in.overlap;
    c.train.adamw.total_steps = c.rounds * c.local_steps;
    return mm_node_config_check(&c, err, errlen) != 0;
}

int cmd_plan(int argc, char **argv)
{
    plan_args a;
    int p = parse(argc, argv, &a);
    if (p)
        return p > 0 ? 0 : 2;
    mm_log_set_level(MM_LOG_ERROR);
    char err[512];
    if (a.server) {
        double bytes = 0;
        if (mm_probe_link_serve(a.server, a.timeout, &bytes, err, sizeof err) != 0) {
            fprintf(stderr, "murmur plan: %s\n", err);
            return 1;
        }
        fprintf(stderr, "plan: received %.0f bytes\n", bytes);
        return 0;
    }
    bool predict = a.topo || a.peers;
    if (a.link_to && !a.calibrate && !predict) {
        double bps;
        if (mm_probe_link_send(a.link_to, a.seconds, &bps, err, sizeof err) != 0) {
            fprintf(stderr, "murmur plan: %s\n", err);
            return 1;
        }
        if (a.json)
            printf("{\"link\":\"%s\",\"seconds\":%g,\"bps\":%.6g}\n", a.link_to, a.seconds, bps);
        else
            printf("%s: %.2f MB/s (%.1f Mbit/s) over %g s\n", a.link_to, bps / 1e6, bps * 8 / 1e6,
                   a.seconds);
        return 0;
    }
    if (!predict && !a.calibrate) {
        usage(stderr);
        return 2;
    }
    if (predict && a.have_vec && a.have_shape) {
        fprintf(stderr, "murmur plan: give --vector-len or a model shape, not both\n");
        return 2;
    }
    if (a.jitter && mm_jitter_parse(a.jitter, &a.in.jitter, err, sizeof err) != 0) {
        fprintf(stderr, "murmur plan: --%s\n", err);
        return 2;
    }
    if (a.links && mm_plan_parse_links(a.links, &a.in.links, err, sizeof err) != 0) {
        fprintf(stderr, "murmur plan: --links: %s\n", err);
        return 2;
    }
    if (predict && !a.topo && a.in.algo != MM_PLAN_ALLREDUCE) {
        fprintf(stderr, "murmur plan: --algo %s needs --topology FILE (--peers N alone is for "
                        "--algo allreduce)\n", mm_plan_algo_name(a.in.algo));
        return 2;
    }
    if (predict && !a.topo && a.links && !a.placement &&
        a.in.links.groups * a.in.links.per != a.peers) {
        fprintf(stderr, "murmur plan: --links %s is %d x %d = %d peers, --peers says %d\n", a.links,
                a.in.links.groups, a.in.links.per, a.in.links.groups * a.in.links.per, a.peers);
        return 2;
    }
    if (predict && !a.have_step && !a.calibrate) {
        fprintf(stderr, "murmur plan: give --step-time S (0 for pure gossip) or --calibrate\n");
        return 2;
    }
    const char *bad = a.have_vec ? NULL : mm_model_config_check(&a.cfg);
    if (bad) {
        fprintf(stderr, "murmur plan: %s\n", bad);
        return 2;
    }

    calib k = {0};
    if (a.calibrate && calibrate(&a, &k) != 0)
        return 1;
    if (!predict) { /* calibration only */
        if (a.json)
            printf("{");
        print_calib(&a, &k, a.json);
        if (a.json)
            printf("}\n");
        return 0;
    }
    mm_topology *t = NULL;
    if (a.topo) {
        t = mm_topo_load(a.topo, err, sizeof err);
        if (!t) {
            fprintf(stderr, "murmur plan: %s\n", err);
            return 1;
        }
        if (a.peers && a.peers != mm_topo_n(t)) {
            fprintf(stderr, "murmur plan: --peers %d but %s has %d peers\n", a.peers, a.topo, mm_topo_n(t));
            mm_topo_free(t);
            return 2;
        }
        int np = mm_topo_n(t);
        if (a.links && !a.placement && a.in.links.groups * a.in.links.per != np) {
            fprintf(stderr, "murmur plan: --links %s is %d x %d = %d peers, %s has %d (or place "
                            "them: --placement)\n", a.links, a.in.links.groups, a.in.links.per,
                    a.in.links.groups * a.in.links.per, a.topo, np);
            mm_topo_free(t);
            return 2;
        }
    }
    /* (after plan's own reading of the topology: a file that does not
     * load is plan's error, exit 1, as before) */
    if (node_refuses(&a, err, sizeof err)) {
        fprintf(stderr, "murmur plan: %s (murmur node would refuse this run)\n", err);
        mm_topo_free(t);
        return 2;
    }
    if (a.in.gossip_steps > 1 && a.in.algo == MM_PLAN_ASYNC)
        fprintf(stderr, "murmur plan: warning: --gossip-steps %d with --algo async is not modelled: "
                        "the prediction is for one exchange a round\n", a.in.gossip_steps);
    mm_plan_in *in = &a.in;
    in->topo = t;
    in->n = t ? mm_topo_n(t) : a.peers;
    if (mm_slowdown_max_peer(&in->slow) >= in->n) {
        fprintf(stderr, "murmur plan: --slow or --stretch names peer %ld, but there are peers "
                        "0..%d\n", mm_slowdown_max_peer(&in->slow), in->n - 1);
        mm_topo_free(t);
        return 2;
    }
    int *place = NULL;
    if (a.placement) {
        int g = -1;
        place = a.links ? malloc(sizeof *place * (size_t)in->n) : NULL;
        if (place)
            g = mm_plan_parse_placement(a.placement, in->n, place, err, sizeof err);
        else
            snprintf(err, sizeof err, a.links ? "out of memory" : "--placement goes with --links");
        if (g < 0) {
            fprintf(stderr, "murmur plan: %s\n", err);
            free(place);
            mm_topo_free(t);
            return 2;
        }
        in->links.groups = g;
        in->links.placement = place;
    }
    in->vec_floats = a.have_vec ? a.vec : (double)mm_model_param_count(&a.cfg);
    if (a.fragments > 1) /* a round exchanges, mixes and steps one fragment */
        in->vec_floats /= a.fragments;
    if (k.done) {
        if (a.have_step)
            fprintf(stderr, "murmur plan: warning: --step-time %g s replaces the step time "
                            "--calibrate measured (%.6f s)\n", in->step_s, k.step_s);
        if (!a.have_step)
            in->step_s = k.step_s;
        if (!a.have_sd && !a.have_step)
            in->step_sd = k.step_sd;
        if (!a.have_mix)
            in->mix_fps = k.mix_fps;
        if (!a.have_loop && !a.links)
            in->loop_bps = k.link_bps;
    }
    if (a.cores && in->n > a.cores) {
        /* fair share of the cores: each step takes N/K times as long */
        in->step_s *= (double)in->n / a.cores;
        in->step_sd *= (double)in->n / a.cores;
    }
    mm_plan_out o;
    int rc = mm_plan_run(in, &o, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "murmur %s\n", err);
    } else {
        const char *kind = t ? mm_topo_kind(t) : in->allgather ? "ring all-gather" : "ring all-reduce";
        if (a.json)
            print_json(&a, in, &o, &k, kind);
        else
            print_table(&a, in, &o, &k, kind);
    }
    mm_topo_free(t);
    free(place);
    return rc ? 1 : 0;
}
