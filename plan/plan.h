/* The runtime model behind `murmur plan`: predicts the time of one round of
 * training (compute, communication left exposed after overlap, waiting on
 * slower neighbours, mixing) for a topology, a vector size, a compute-time
 * distribution, a link profile and an algorithm. Pure: no I/O, no clock;
 * the random compute times come from a seeded generator, so a prediction
 * is a deterministic function of its inputs. The formulas and every
 * assumption are in docs/runtime.md. */
#ifndef MURMUR_PLAN_H
#define MURMUR_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/jitter.h"
#include "gossip/topology.h"

/* Peers in groups ("hosts") of `per`: peer k is in group k / per (block
 * placement, as netns-lab.sh --profile and Slurm's block distribution).
 * Every peer's own link carries at most `intra` bytes/s out and `intra`
 * in; every group's uplink at most `inter` bytes/s out of the group and
 * `inter` into it. 0 means unlimited. groups == 0: no profile given. */
typedef struct {
    int groups, per;
    double intra, inter; /* bytes/s */
    const int *placement; /* optional: group of each peer (n entries, each in
                           * [0, groups)), instead of the blocks of `per` */
} mm_plan_links;

/* "GxP:intra=RATE,inter=RATE" (either key may be left out: unlimited).
 * RATE as tc writes it: NUMBER then bit, kbit, mbit, gbit (bits/s, powers
 * of 1000) or bps, kbps, mbps, gbps (bytes/s). 0, or -1 with err. */
int mm_plan_parse_links(const char *spec, mm_plan_links *out, char *err, size_t errlen);
/* "G0,G1,...": the group of every peer, in peer order, n of them. Sets
 * out[0..n) and returns the number of groups (largest + 1), or -1 with err
 * (a wrong count, a number out of [0, n), a group left empty). */
int mm_plan_parse_placement(const char *s, int n, int *out, char *err, size_t errlen);
/* One RATE in bytes/s; -1 when malformed. */
double mm_plan_parse_rate(const char *s);

typedef enum { MM_PLAN_DPSGD, MM_PLAN_ASYNC, MM_PLAN_ALLREDUCE } mm_plan_algo;
/* "dpsgd", "async", "allreduce"; -1 when none. */
int mm_plan_parse_algo(const char *s);
const char *mm_plan_algo_name(mm_plan_algo a);

typedef struct {
    const mm_topology *topo;  /* who sends to whom in each round (not for allreduce) */
    int n;                    /* peers (= mm_topo_n when topo is given) */
    mm_plan_algo algo;
    int local_steps;          /* H >= 1 optimizer steps per round */
    int gossip_steps;         /* G >= 1 exchanges per round (dpsgd) */
    bool overlap;             /* allreduce: averages the snapshot while computing; with
                               * outer, dpsgd too (else dpsgd always overlaps) */
    bool outer;               /* the node's --outer nesterov: dpsgd exchanges after its
                               * compute unless overlap; the outer step costs 2 more
                               * passes over the vector (docs/outer.md) */
    bool allgather;           /* allreduce: the node's --outer --compress, the ring
                               * all-gather of every peer's payload (vec_floats x
                               * bytes_per_float each) in n - 1 steps, not the ring
                               * all-reduce (node/allgather.h) */
    double vec_floats;        /* P: floats in the vector */
    double bytes_per_float;   /* 4 for float32; a codec's smaller figure */
    double step_s;            /* mean time of one optimizer step */
    double step_sd;           /* its spread: normal, truncated at 0 */
    mm_jitter jitter;    /* plus this added delay per step */
    mm_slowdown slow;         /* named peers slower by a factor, always or for a stretch of
                               * rounds (counted from the first, warm-up included) */
    mm_plan_links links;      /* groups == 0: every peer's link at `loop_bps` */
    double loop_bps;          /* without a profile: each peer's own rate (0: unlimited) */
    double latency_s;         /* added to every message (one way) */
    /* With a profile: the share of a link's rate (as tc shapes it, frames
     * and headers) that carries the vector. 0 or 1: all of it. For TCP over
     * IPv4 and Ethernet with timestamps, MM_PLAN_PAYLOAD_SHARE. Not applied
     * to loop_bps (a measured payload rate). */
    double payload_share;
    /* The share of a link's rate that two or more TCP flows crossing it
     * use together, when they also cross other shaped links (TCP does not
     * share coupled bottlenecks max-min fairly, docs/runtime.md). 0 or 1:
     * all of it. */
    double tcp_share;
    double mix_fps;           /* floats/s of one mixing pass; 0: mixing is free */
    const double *start_s;    /* dpsgd: when each peer starts its first round (n
                               * entries); NULL: at random within one exchange */
    int rounds;               /* simulated rounds (after `warmup` more) */
    int warmup;
    uint64_t seed;
} mm_plan_in;

/* 1448 bytes of TCP payload in a 1514-byte Ethernet frame (MTU 1500, IPv4,
 * TCP with timestamps): what tc's rate carries of a vector. */
#define MM_PLAN_PAYLOAD_SHARE (1448.0 / 1514.0)

/* The snapshot buffers of a murmur peer (node/mailbox.h MM__MBOX_BUFS): a
 * round's snapshot needs one that no send still reads, so a peer whose
 * sends of 3 exchanges are all still on their way waits before its next. */
#define MM_PLAN_SNAPSHOTS 3

/* Defaults: H = G = 1, 4 bytes per float, 400 rounds after 50, seed 1,
 * payload and TCP shares 1 (the ideal fluid links). */
void mm_plan_in_defaults(mm_plan_in *in);

typedef struct {
    double round_s;           /* predicted time per round (steady state) */
    double round_in_step_s;   /* the same if the peers stayed in step (dpsgd: the
                               * max-plus recurrence alone; else = round_s) */
    double compute_s;         /* mean compute per round and peer */
    double comm_exposed_s;    /* transfer time not hidden behind compute */
    double wait_s;            /* waiting for neighbours that started later */
    double mix_s;             /* mixing (and all-reduce reduction) work */
    double exchange_s;        /* slowest message of an exchange, mean over rounds */
    double allreduce_s;       /* allreduce: one all-reduce of the vector (T_AR) */
    double round_slowest_s;   /* async: the slowest peer's round (others do not wait) */
    double fresh;             /* async: share of rounds a neighbour's vector is new */
    double msg_bytes;         /* bytes of one message (dpsgd/async vector; allreduce chunk) */
    double bound_lo_s;        /* no peer waits for a slower one: mix + max(E C, T) */
    double bound_hi_s;        /* everyone waits for the slowest of all, every round */
    int bottleneck;           /* what limits the slowest message, MM_PLAN_RES_* */
} mm_plan_out;

enum { MM_PLAN_RES_NONE, MM_PLAN_RES_EGRESS, MM_PLAN_RES_INGRESS, MM_PLAN_RES_UP_OUT,
       MM_PLAN_RES_UP_IN };
const char *mm_plan_res_name(int r);

/* One message from peer `from` to peer `to`. */
typedef struct {
    uint32_t from, to;
} mm_plan_flow;

/* Time for every flow of a set that starts at once, each of `bytes`
 * bytes: latency + bytes * max over the resources it crosses of
 * (flows through that resource) / (its capacity). Writes t[k] for flows
 * [k], and which resource bound it in res[k] (may be NULL). The
 * resources are each peer's link (out and in) and each group's uplink
 * (out and in). 0, or -1 when out of memory. */
int mm_plan_flow_times(const mm_plan_in *in, const mm_plan_flow *f, size_t nf, double bytes,
                       double *t, int *res);

/* The prediction. 0, or -1 with err (bad input, out of memory). */
int mm_plan_run(const mm_plan_in *in, mm_plan_out *out, char *err, size_t errlen);

#endif
