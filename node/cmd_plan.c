/* murmur plan: predict the time per round of a run before spending a
 * cluster's hours on it (node/plan.h, docs/runtime.md), and measure on this
 * machine what the prediction needs (--calibrate, --link-server/--link-to). */
#include <cblas.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gossip/log.h"
#include "gossip/topology.h"
#include "model/model.h"
#include "node/blas_env.h"
#include "node/commands.h"
#include "node/plan.h"
#include "node/plan_probe.h"

static void usage(FILE *f)
{
    fprintf(f,
"usage: murmur plan (--topology FILE | --peers N) (--vector-len N | MODEL SHAPE)\n"
"                   (--step-time S | --calibrate) [options]\n"
"       murmur plan --calibrate [MODEL SHAPE] [--link-to HOST:PORT]\n"
"       murmur plan --link-server HOST:PORT [--timeout S]\n"
"       murmur plan --link-to HOST:PORT [--seconds S]\n"
"Predicts the time of one round (compute, communication left exposed after\n"
"overlap, waiting on slower neighbours, mixing). Formulas: docs/runtime.md.\n\n"
"run:\n"
"  --topology FILE       who talks to whom (gossip); its peer count is N\n"
"  --peers N             peer count for --algo allreduce without a topology\n"
"  --algo A              dpsgd (default), async or allreduce (ring, reduce-scatter\n"
"                        then all-gather, peers in id order)\n"
"  --local-steps H       optimizer steps per round (default 1)\n"
"  --gossip-steps G      dpsgd: averaging exchanges per round (default 1)\n"
"  --overlap             allreduce: average the snapshot while computing (as\n"
"                        dpsgd does); default: compute, then all-reduce\n"
"vector:\n"
"  --vector-len N        floats in the vector (pure gossip, or any model)\n"
"  --layers L --width W --heads H --ctx T   or murmur's model of that shape\n"
"                        (defaults as murmur node's)\n"
"  --bytes-per-float B   on the wire (default 4; a codec's figure)\n"
"compute (per optimizer step):\n"
"  --step-time S         mean seconds (murmur train/node logs it; or --calibrate)\n"
"  --step-sd S           its spread (normal, truncated at 0)\n"
"  --jitter J            added delay: none, uniform:A (U(0,A) s), longtail:P:S\n"
"                        (S seconds with probability P)\n"
"  --batch B             calibration batch (default 16, as murmur node)\n"
"  --threads N           calibration OpenBLAS threads (default 1, as murmur node)\n"
"  --cores K             the peers share K cores (all on one machine, as in the\n"
"                        lab): step time and spread x max(1, N/K)\n"
"links:\n"
"  --links GxP:intra=RATE,inter=RATE   G groups (hosts) of P peers, peer k in\n"
"                        group k/P; each peer's link at intra each way, each\n"
"                        group's uplink at inter each way (RATE: 1gbit, 100mbit,\n"
"                        50mbps, ... as scripts/netns-lab.sh --profile)\n"
"  --placement LIST      with --links: the group of every peer, in peer order\n"
"                        (e.g. 0,1,0,1), instead of blocks of P; G is then\n"
"                        the number of groups named, P is ignored\n"
"  --loop-rate RATE      without --links: each peer's own link (default: measured\n"
"                        by --calibrate, else unlimited)\n"
"  --latency S           one-way seconds added to every message (default 0)\n"
"  --mix-rate F          floats/s of one mixing pass (default: --calibrate's, else free)\n"
"output:\n"
"  --json                one JSON object instead of the table\n"
"  --rounds R            simulated rounds (default 400, after 50 unmeasured)\n"
"  --seed S              of the simulated compute times (default 1)\n"
"measuring:\n"
"  --calibrate           measure sgemm, the step time of the model shape, the\n"
"                        mixing speed and loopback TCP (or --link-to) here\n"
"  --link-server H:P     receive one --link-to sender, then exit (--timeout S, 30)\n"
"  --link-to H:P         send to a --link-server for --seconds S (default 2),\n"
"                        print bytes/s; with --calibrate: use it as the link rate\n");
}

enum {
    O_TOPO = 256, O_PEERS, O_ALGO, O_LOCAL, O_GOSSIP, O_OVERLAP, O_VEC, O_LAYERS, O_WIDTH,
    O_HEADS, O_CTX, O_BPF, O_STEP, O_STEPSD, O_JITTER, O_BATCH, O_THREADS, O_LINKS, O_LOOP,
    O_LAT, O_MIX, O_CORES, O_PLACE, O_JSON, O_ROUNDS, O_SEED, O_CALIB, O_SERVER, O_TO, O_SECONDS, O_TIMEOUT,
    O_HELP
};

typedef struct {
    const char *topo, *links, *jitter, *server, *link_to, *placement;
    int peers, batch, threads, cores;
    bool json, calibrate, have_vec, have_shape, have_step, have_sd, have_mix, have_loop;
    double vec, seconds, timeout;
    mm_model_config cfg;
    mm_plan_in in;
} plan_args;

static int num(const char *name, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "murmur plan: --%s wants a number in [%g, %g], got '%s'\n", name, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse(int argc, char **argv, plan_args *a)
{
    static const struct option opts[] = {
        {"topology", 1, 0, O_TOPO}, {"peers", 1, 0, O_PEERS}, {"algo", 1, 0, O_ALGO},
        {"local-steps", 1, 0, O_LOCAL}, {"gossip-steps", 1, 0, O_GOSSIP},
        {"overlap", 0, 0, O_OVERLAP}, {"vector-len", 1, 0, O_VEC}, {"layers", 1, 0, O_LAYERS},
        {"width", 1, 0, O_WIDTH}, {"heads", 1, 0, O_HEADS}, {"ctx", 1, 0, O_CTX},
        {"bytes-per-float", 1, 0, O_BPF}, {"step-time", 1, 0, O_STEP},
        {"step-sd", 1, 0, O_STEPSD}, {"jitter", 1, 0, O_JITTER}, {"batch", 1, 0, O_BATCH},
        {"threads", 1, 0, O_THREADS}, {"links", 1, 0, O_LINKS}, {"loop-rate", 1, 0, O_LOOP},
        {"latency", 1, 0, O_LAT}, {"mix-rate", 1, 0, O_MIX}, {"cores", 1, 0, O_CORES}, {"placement", 1, 0, O_PLACE}, {"json", 0, 0, O_JSON},
        {"rounds", 1, 0, O_ROUNDS}, {"seed", 1, 0, O_SEED}, {"calibrate", 0, 0, O_CALIB},
        {"link-server", 1, 0, O_SERVER}, {"link-to", 1, 0, O_TO}, {"seconds", 1, 0, O_SECONDS},
        {"timeout", 1, 0, O_TIMEOUT}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0},
    };
    memset(a, 0, sizeof *a);
    mm_plan_in_defaults(&a->in);
    a->cfg = mm_model_config_default();
    a->batch = 16;
    a->threads = 1;
    a->seconds = 2;
    a->timeout = 30;
    int c;
    double v;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        const char *name = NULL;
        for (int i = 0; opts[i].name; i++)
            if (opts[i].val == c)
                name = opts[i].name;
        int rc = 0;
        switch (c) {
        case O_TOPO: a->topo = optarg; break;
        case O_PEERS: rc = num(name, optarg, 1, 1 << 20, &v); a->peers = (int)v; break;
        case O_ALGO:
            if (mm_plan_parse_algo(optarg) < 0) {
                fprintf(stderr, "murmur plan: --algo is dpsgd, async or allreduce, got '%s'\n", optarg);
                rc = -1;
            } else {
                a->in.algo = (mm_plan_algo)mm_plan_parse_algo(optarg);
            }
            break;
        case O_LOCAL: rc = num(name, optarg, 1, 1e6, &v); a->in.local_steps = (int)v; break;
        case O_GOSSIP: rc = num(name, optarg, 1, 1000, &v); a->in.gossip_steps = (int)v; break;
        case O_OVERLAP: a->in.overlap = true; break;
        case O_VEC: rc = num(name, optarg, 1, 1e12, &a->vec); a->have_vec = true; break;
        case O_LAYERS: rc = num(name, optarg, 1, 64, &v); a->cfg.n_layer = (int)v; a->have_shape = true; break;
        case O_WIDTH: rc = num(name, optarg, 1, 4096, &v); a->cfg.d_model = (int)v; a->have_shape = true; break;
        case O_HEADS: rc = num(name, optarg, 1, 256, &v); a->cfg.n_head = (int)v; a->have_shape = true; break;
        case O_CTX: rc = num(name, optarg, 1, 4096, &v); a->cfg.n_ctx = (int)v; a->have_shape = true; break;
        case O_BPF: rc = num(name, optarg, 1e-6, 64, &a->in.bytes_per_float); break;
        case O_STEP: rc = num(name, optarg, 0, 1e6, &a->in.step_s); a->have_step = true; break;
        case O_STEPSD: rc = num(name, optarg, 0, 1e6, &a->in.step_sd); a->have_sd = true; break;
        case O_JITTER: a->jitter = optarg; break;
        case O_BATCH: rc = num(name, optarg, 1, 4096, &v); a->batch = (int)v; break;
        case O_THREADS: rc = num(name, optarg, 1, 256, &v); a->threads = (int)v; break;
        case O_LINKS: a->links = optarg; break;
        case O_LOOP:
            a->in.loop_bps = mm_plan_parse_rate(optarg);
            a->have_loop = true;
            if (a->in.loop_bps < 0) {
                fprintf(stderr, "murmur plan: --loop-rate: '%s' is not a rate (e.g. 10gbit, 500mbps)\n", optarg);
                rc = -1;
            }
            break;
        case O_LAT: rc = num(name, optarg, 0, 1e3, &a->in.latency_s); break;
        case O_MIX: rc = num(name, optarg, 1, 1e15, &a->in.mix_fps); a->have_mix = true; break;
        case O_PLACE: a->placement = optarg; break;
        case O_CORES: rc = num(name, optarg, 1, 1 << 20, &v); a->cores = (int)v; break;
        case O_JSON: a->json = true; break;
        case O_ROUNDS: rc = num(name, optarg, 1, 1e6, &v); a->in.rounds = (int)v; break;
        case O_SEED: rc = num(name, optarg, 0, 9e15, &v); a->in.seed = (uint64_t)v; break;
        case O_CALIB: a->calibrate = true; break;
        case O_SERVER: a->server = optarg; break;
        case O_TO: a->link_to = optarg; break;
        case O_SECONDS: rc = num(name, optarg, 0.1, 600, &a->seconds); break;
        case O_TIMEOUT: rc = num(name, optarg, 0.1, 3600, &a->timeout); break;
        case O_HELP: usage(stdout); return 1;
        case ':': fprintf(stderr, "murmur plan: %s needs a value\n", argv[optind - 1]); return -1;
        default: fprintf(stderr, "murmur plan: unknown option '%s'\n", argv[optind - 1]); return -1;
        }
        if (rc)
            return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "murmur plan: unexpected argument '%s'\n", argv[optind]);
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
    if (in->algo == MM_PLAN_ALLREDUCE)
        printf(", %s", in->overlap ? "overlapped with compute" : "after compute");
    printf("\nvector       %.0f floats x %g bytes = %.3f MB; message %.3f MB\n", in->vec_floats,
           in->bytes_per_float, in->vec_floats * in->bytes_per_float / 1e6, o->msg_bytes / 1e6);
    if (in->links.placement)
        printf("links        %d groups (--placement): intra %.2f MB/s, inter %.2f MB/s (0 = unlimited)",
               in->links.groups, in->links.intra / 1e6, in->links.inter / 1e6);
    else if (in->links.groups)
        printf("links        %dx%d: intra %.2f MB/s, inter %.2f MB/s (0 = unlimited)",
               in->links.groups, in->links.per, in->links.intra / 1e6, in->links.inter / 1e6);
    else
        printf("links        one group: each peer's link %.2f MB/s (0 = unlimited)", in->loop_bps / 1e6);
    printf("; latency %g ms\n", in->latency_s * 1e3);
    printf("compute      step %.3f ms (sd %.3f ms)%s, jitter %s\n", in->step_s * 1e3,
           in->step_sd * 1e3, a->cores && in->n > a->cores ? " sharing the cores" : "",
           a->jitter ? a->jitter : "none");
    if (in->algo == MM_PLAN_ALLREDUCE)
        printf("all-reduce   %.4f s per all-reduce (2(n-1) steps), bound by the %s\n",
               o->allreduce_s, mm_plan_res_name(o->bottleneck));
    else
        printf("exchange     slowest message %.4f s, bound by the %s\n", o->exchange_s,
               mm_plan_res_name(o->bottleneck));
    printf("round        %.4f s = compute %.4f + exposed communication %.4f + waiting %.4f"
           " + mixing %.4f\n", o->round_s, o->compute_s, o->comm_exposed_s, o->wait_s, o->mix_s);
    if (in->algo == MM_PLAN_ASYNC)
        printf("             slowest peer %.4f s per round; a neighbour's vector is new in %.0f%% of rounds\n",
               o->round_slowest_s, 100 * o->fresh);
    else
        printf("bounds       %.4f s if nobody waited for a slower peer, %.4f s if all waited for the slowest\n",
               o->bound_lo_s, o->bound_hi_s);
}

static void print_json(const plan_args *a, const mm_plan_in *in, const mm_plan_out *o,
                       const calib *k, const char *topo_kind)
{
    printf("{\"algo\":\"%s\",\"peers\":%d,\"topology\":\"%s\",\"local_steps\":%d,"
           "\"gossip_steps\":%d,\"overlap\":%s,\"vec_floats\":%.0f,\"bytes_per_float\":%g,"
           "\"msg_bytes\":%.0f,\"groups\":%d,\"per\":%d,\"intra_bps\":%.6g,\"inter_bps\":%.6g,"
           "\"loop_bps\":%.6g,\"latency_s\":%.6g,\"step_s\":%.6g,\"step_sd\":%.6g,"
           "\"jitter\":\"%s\",\"mix_fps\":%.6g,\"round_s\":%.6g,\"compute_s\":%.6g,"
           "\"comm_exposed_s\":%.6g,\"wait_s\":%.6g,\"mix_s\":%.6g,\"exchange_s\":%.6g,"
           "\"allreduce_s\":%.6g,\"round_slowest_s\":%.6g,\"fresh\":%.4g,\"bound_lo_s\":%.6g,"
           "\"bound_hi_s\":%.6g,\"bottleneck\":\"%s\",\"cores\":%d,\"rounds\":%d,\"seed\":%llu",
           mm_plan_algo_name(in->algo), in->n, topo_kind, in->local_steps, in->gossip_steps,
           in->overlap ? "true" : "false", in->vec_floats, in->bytes_per_float, o->msg_bytes,
           in->links.groups, in->links.per, in->links.intra, in->links.inter, in->loop_bps,
           in->latency_s, in->step_s, in->step_sd, a->jitter ? a->jitter : "none", in->mix_fps,
           o->round_s, o->compute_s, o->comm_exposed_s, o->wait_s, o->mix_s, o->exchange_s,
           o->allreduce_s, o->round_slowest_s, o->fresh, o->bound_lo_s, o->bound_hi_s,
           mm_plan_res_name(o->bottleneck), a->cores, in->rounds, (unsigned long long)in->seed);
    if (a->placement)
        printf(",\"placement\":\"%s\"", a->placement);
    if (k->done)
        printf(",");
    print_calib(a, k, true);
    printf("}\n");
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
    if (a.jitter && mm_plan_parse_jitter(a.jitter, &a.in.jitter, err, sizeof err) != 0) {
        fprintf(stderr, "murmur plan: --%s\n", err);
        return 2;
    }
    if (a.links && mm_plan_parse_links(a.links, &a.in.links, err, sizeof err) != 0) {
        fprintf(stderr, "murmur plan: --links: %s\n", err);
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
    }
    mm_plan_in *in = &a.in;
    in->topo = t;
    in->n = t ? mm_topo_n(t) : a.peers;
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
    if (k.done) {
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
        const char *kind = t ? mm_topo_kind(t) : "ring all-reduce";
        if (a.json)
            print_json(&a, in, &o, &k, kind);
        else
            print_table(&a, in, &o, &k, kind);
    }
    mm_topo_free(t);
    free(place);
    return rc ? 1 : 0;
}
