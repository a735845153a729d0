/* The runtime model of `murmur plan` (plan/plan.h, docs/runtime.md): link
 * profiles, message times from shared bottlenecks, and a simulation of the
 * round recurrences (max-plus: a peer's next round starts when its compute,
 * its sends and its neighbours' vectors are all done) with seeded random
 * compute times. */
#include "plan/plan.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "plan/plan_fluid.h"

double mm_plan_parse_rate(const char *s)
{
    static const struct {
        const char *unit;
        double bytes;
    } units[] = {{"bit", 1.0 / 8}, {"kbit", 1e3 / 8}, {"mbit", 1e6 / 8}, {"gbit", 1e9 / 8},
                 {"bps", 1},       {"kbps", 1e3},     {"mbps", 1e6},     {"gbps", 1e9}};
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || !(v > 0) || !isfinite(v))
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit))
            return v * units[i].bytes;
    return -1;
}

int mm_plan_parse_links(const char *spec, mm_plan_links *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char buf[256];
    if (!spec || strlen(spec) >= sizeof buf) {
        snprintf(err, errlen, "link profile missing or too long");
        return -1;
    }
    strcpy(buf, spec);
    char *colon = strchr(buf, ':');
    int g = 0, p = 0, used = 0;
    if (!colon && sscanf(buf, "%dx%d%n", &g, &p, &used) == 2 && !buf[used]) {
        snprintf(err, errlen, "link profile '%s': the groups need their rates, e.g. "
                 "%s:intra=10gbit,inter=1gbit", spec, spec);
        return -1;
    }
    if (!colon || sscanf(buf, "%dx%d%n", &g, &p, &used) != 2 || buf + used != colon || g < 1 ||
        p < 1 || g > 1 << 20 || p > 1 << 20) {
        snprintf(err, errlen, "link profile '%s': expected GxP:intra=RATE,inter=RATE", spec);
        return -1;
    }
    out->groups = g;
    out->per = p;
    for (char *kv = strtok(colon + 1, ","); kv; kv = strtok(NULL, ",")) {
        char *eq = strchr(kv, '=');
        double r = eq ? mm_plan_parse_rate(eq + 1) : -1;
        if (eq && r < 0 && isdigit((unsigned char)eq[1]) && strtod(eq + 1, NULL) == 0) {
            snprintf(err, errlen, "link profile '%s': '%s': a rate must be above 0 (leave %.*s= "
                     "out for an unlimited link)", spec, kv, (int)(eq - kv), kv);
            return -1;
        }
        if (!eq || r < 0) {
            snprintf(err, errlen, "link profile '%s': '%s' is not KEY=RATE (e.g. inter=100mbit)", spec, kv);
            return -1;
        }
        *eq = 0;
        if (!strcmp(kv, "intra"))
            out->intra = r;
        else if (!strcmp(kv, "inter"))
            out->inter = r;
        else {
            snprintf(err, errlen, "link profile '%s': unknown key '%s' (intra, inter)", spec, kv);
            return -1;
        }
    }
    return 0;
}

int mm_plan_parse_placement(const char *s, int n, int *out, char *err, size_t errlen)
{
    int k = 0, groups = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long g = strtol(p, &end, 10);
        if (end == p || errno || g < 0 || g >= n || k >= n || (*end && *end != ',')) {
            snprintf(err, errlen, "placement '%s': expected %d group numbers 0..%d separated by commas",
                     s, n, n - 1);
            return -1;
        }
        out[k++] = (int)g;
        if (g + 1 > groups)
            groups = (int)g + 1;
        p = *end ? end + 1 : end;
    }
    if (k != n) {
        snprintf(err, errlen, "placement '%s': %d groups given for %d peers", s, k, n);
        return -1;
    }
    for (int g = 0; g < groups; g++) {
        int used = 0;
        for (int i = 0; i < n; i++)
            used |= out[i] == g;
        if (!used) {
            snprintf(err, errlen, "placement '%s': group %d has no peer", s, g);
            return -1;
        }
    }
    return groups;
}

int mm_plan_parse_algo(const char *s)
{
    /* push-sum sends what D-PSGD sends (one f64 more per message) on the
     * same rounds: it is timed as dpsgd */
    if (!strcmp(s, "dpsgd") || !strcmp(s, "pushsum"))
        return MM_PLAN_DPSGD;
    if (!strcmp(s, "async"))
        return MM_PLAN_ASYNC;
    if (!strcmp(s, "allreduce"))
        return MM_PLAN_ALLREDUCE;
    return -1;
}

const char *mm_plan_algo_name(mm_plan_algo a)
{
    return a == MM_PLAN_ASYNC ? "async" : a == MM_PLAN_ALLREDUCE ? "allreduce" : "dpsgd";
}

const char *mm_plan_res_name(int r)
{
    static const char *names[] = {"none (latency only)", "sender's link", "receiver's link",
                                  "uplink out of the sender's group",
                                  "uplink into the receiver's group"};
    return r >= 0 && r <= MM_PLAN_RES_UP_IN ? names[r] : "?";
}

void mm_plan_in_defaults(mm_plan_in *in)
{
    memset(in, 0, sizeof *in);
    in->algo = MM_PLAN_DPSGD;
    in->local_steps = 1;
    in->gossip_steps = 1;
    in->bytes_per_float = 4;
    in->rounds = 400;
    in->warmup = 50;
    in->seed = 1;
}

/* ---- message times ------------------------------------------------------ */

size_t mm_plan_nres(const mm_plan_in *in)
{
    return 2 * (size_t)in->n + 2 * (size_t)in->links.groups;
}

double mm_plan_capacity(const mm_plan_in *in, size_t r)
{
    size_t n = (size_t)in->n;
    double ps = in->payload_share > 0 ? in->payload_share : 1;
    if (r < 2 * n)
        return in->links.groups ? in->links.intra * ps : in->loop_bps;
    return in->links.inter * ps;
}

static int group_of(const mm_plan_in *in, uint32_t peer)
{
    if (!in->links.groups)
        return 0;
    return in->links.placement ? in->links.placement[peer] : (int)(peer / (uint32_t)in->links.per);
}

int mm_plan_flow_resources(const mm_plan_in *in, mm_plan_flow f, size_t r[4], int kind[4])
{
    size_t n = (size_t)in->n, G = (size_t)in->links.groups;
    int k = 0, dummy[4];
    if (!kind)
        kind = dummy;
    r[k] = f.from, kind[k++] = MM_PLAN_RES_EGRESS;
    r[k] = n + f.to, kind[k++] = MM_PLAN_RES_INGRESS;
    int gf = group_of(in, f.from), gt = group_of(in, f.to);
    if (G && gf != gt) {
        r[k] = 2 * n + (size_t)gf, kind[k++] = MM_PLAN_RES_UP_OUT;
        r[k] = 2 * n + G + (size_t)gt, kind[k++] = MM_PLAN_RES_UP_IN;
    }
    return k;
}

int mm_plan_flow_times(const mm_plan_in *in, const mm_plan_flow *f, size_t nf, double bytes,
                       double *t, int *res)
{
    size_t nres = mm_plan_nres(in);
    unsigned *count = calloc(nres ? nres : 1, sizeof *count);
    if (!count)
        return -1;
    size_t r[4];
    int kind[4];
    for (size_t k = 0; k < nf; k++) {
        int m = mm_plan_flow_resources(in, f[k], r, kind);
        for (int i = 0; i < m; i++)
            count[r[i]]++;
    }
    for (size_t k = 0; k < nf; k++) {
        int m = mm_plan_flow_resources(in, f[k], r, kind), best = MM_PLAN_RES_NONE;
        double worst = 0;
        for (int i = 0; i < m; i++) {
            double cap = mm_plan_capacity(in, r[i]);
            if (count[r[i]] >= 2 && in->links.groups && in->tcp_share > 0)
                cap *= in->tcp_share; /* flows sharing a shaped link */
            if (cap > 0 && count[r[i]] / cap > worst) {
                worst = count[r[i]] / cap;
                best = kind[i];
            }
        }
        t[k] = in->latency_s + bytes * worst;
        if (res)
            res[k] = best;
    }
    free(count);
    return 0;
}

/* ---- compute times ------------------------------------------------------ */

static double draw_step(const mm_plan_in *in, mm_rng *rng)
{
    double t = in->step_s;
    if (in->step_sd > 0) {
        t += in->step_sd * mm_rng_normal(rng);
        if (t < 0)
            t = 0;
    }
    if (in->jitter.kind == MM_JITTER_UNIFORM)
        t += in->jitter.a * mm_rng_uniform(rng);
    else if (in->jitter.kind == MM_JITTER_LONGTAIL && mm_rng_uniform(rng) < in->jitter.p)
        t += in->jitter.a;
    return t;
}

/* Peer i's compute in round r: its H steps, times its --slow and
 * --stretch factor (drawn first, so that a plan without them draws what it
 * always drew). */
static double draw_round(const mm_plan_in *in, mm_rng *rng, int i, uint64_t r)
{
    double c = 0;
    for (int h = 0; h < in->local_steps; h++)
        c += draw_step(in, rng);
    return in->slow.n ? c * mm_slowdown_factor(&in->slow, (uint32_t)i, (long)r) : c;
}

/* ---- the simulation ----------------------------------------------------- */

typedef struct {
    double *s, *s0, *c, *ready, *arrive, *tsend, *tsent, *tin, *t, *next;
    int *nin, *res;
    mm_plan_flow *flows;
    size_t cap_flows;
} sim_buf;

static void sim_free(sim_buf *b)
{
    free(b->s), free(b->s0), free(b->c), free(b->ready), free(b->arrive), free(b->tsend);
    free(b->tsent);
    free(b->tin), free(b->next), free(b->t), free(b->nin), free(b->res), free(b->flows);
}

static int sim_alloc(sim_buf *b, int n, size_t max_flows)
{
    memset(b, 0, sizeof *b);
    size_t N = (size_t)n, F = max_flows ? max_flows : 1;
    b->s = calloc(N, sizeof *b->s), b->s0 = calloc(N, sizeof *b->s0);
    b->c = calloc(N, sizeof *b->c), b->ready = calloc(N, sizeof *b->ready);
    b->arrive = calloc(N, sizeof *b->arrive), b->tsend = calloc(N, sizeof *b->tsend);
    b->tsent = calloc(N, sizeof *b->tsent);
    b->tin = calloc(N, sizeof *b->tin), b->next = calloc(N, sizeof *b->next);
    b->nin = calloc(N, sizeof *b->nin);
    b->t = calloc(F, sizeof *b->t), b->res = calloc(F, sizeof *b->res);
    b->flows = calloc(F, sizeof *b->flows);
    b->cap_flows = F;
    return b->s && b->s0 && b->c && b->ready && b->arrive && b->tsend && b->tsent && b->tin && b->next && b->nin && b->t &&
                   b->res && b->flows
               ? 0
               : -1;
}

/* Round r's messages (every peer to its out-neighbours) into b->flows. */
static int round_flows(const mm_plan_in *in, sim_buf *b, uint64_t r, mm_neighbour *nb_in,
                       mm_neighbour *nb_out, size_t *nf)
{
    *nf = 0;
    for (int i = 0; i < in->n; i++) {
        mm_round_view v = {.in = nb_in, .out = nb_out};
        if (mm_topo_round(in->topo, (uint32_t)i, r, &v) != 0)
            return -1;
        b->nin[i] = v.n_in;
        for (int k = 0; k < v.n_out && *nf < b->cap_flows; k++)
            b->flows[(*nf)++] = (mm_plan_flow){(uint32_t)i, v.out[k].peer};
    }
    return 0;
}

/* Round r's messages, all started together (peers in step): their times
 * into b->t, every peer's slowest send and receive into b->tsend, b->tin,
 * the slowest of all into *tmax and what bounds it into *bottleneck. */
static int round_times(const mm_plan_in *in, sim_buf *b, uint64_t r, mm_neighbour *nb_in,
                       mm_neighbour *nb_out, size_t *nf, double *tmax, int *bottleneck)
{
    double V = in->vec_floats * in->bytes_per_float;
    if (round_flows(in, b, r, nb_in, nb_out, nf) != 0 ||
        mm_plan_flow_times(in, b->flows, *nf, V, b->t, b->res) != 0)
        return -1;
    *tmax = 0;
    *bottleneck = MM_PLAN_RES_NONE;
    for (int i = 0; i < in->n; i++)
        b->tsend[i] = b->tin[i] = 0;
    for (size_t k = 0; k < *nf; k++) {
        uint32_t a = b->flows[k].from, z = b->flows[k].to;
        b->tsend[a] = fmax(b->tsend[a], b->t[k]);
        b->tin[z] = fmax(b->tin[z], b->t[k]);
        if (b->t[k] > *tmax) {
            *tmax = b->t[k];
            *bottleneck = b->res[k];
        }
    }
    return 0;
}

static double mix_time(const mm_plan_in *in, int passes)
{
    return in->mix_fps > 0 ? (double)passes * in->vec_floats / in->mix_fps : 0;
}

/* Books one peer's round part: ready (compute done), done (everything it
 * waits for is there), commit (what its own messages alone would need). */
static void book(mm_plan_out *o, double c, double ready, double done, double commit, double mix)
{
    double waited = done - ready, exposed = commit - ready;
    if (exposed < 0)
        exposed = 0;
    if (exposed > waited)
        exposed = waited;
    o->compute_s += c;
    o->comm_exposed_s += exposed;
    o->wait_s += waited - exposed;
    o->mix_s += mix;
}

/* The steady-state round: each peer's mean over the measured rounds, and
 * the mean and the slowest of those. */
static void round_rates(const mm_plan_in *in, const sim_buf *b, mm_plan_out *o)
{
    double slow = 0, sum = 0;
    for (int i = 0; i < in->n; i++) {
        double d = (b->s[i] - b->s0[i]) / in->rounds;
        sum += d;
        slow = fmax(slow, d);
    }
    o->round_s = sum / in->n;
    o->round_slowest_s = slow;
}

static int run_gossip(const mm_plan_in *in, mm_plan_out *o, sim_buf *b, mm_rng *rng,
                      mm_neighbour *nb_in, mm_neighbour *nb_out)
{
    int n = in->n, R = in->rounds + in->warmup, G = in->algo == MM_PLAN_DPSGD ? in->gossip_steps : 1;
    bool steps_first = in->outer && !in->overlap && in->algo == MM_PLAN_DPSGD;
    double V = in->vec_floats * in->bytes_per_float, emax_c = 0, ec = 0, tmax_sum = 0;
    for (int r = 0; r < R; r++) {
        size_t nf;
        double tmax;
        int bottleneck;
        if (round_times(in, b, (uint64_t)r, nb_in, nb_out, &nf, &tmax, &bottleneck) != 0)
            return -1;
        if (r == 0)
            o->bottleneck = bottleneck;
        double cmax = 0, csum = 0;
        for (int i = 0; i < n; i++) {
            b->c[i] = draw_round(in, rng, i, (uint64_t)r);
            cmax = fmax(cmax, b->c[i]);
            csum += b->c[i];
        }
        bool count = r >= in->warmup;
        if (r == in->warmup)
            memcpy(b->s0, b->s, sizeof *b->s * (size_t)n);
        if (count) {
            emax_c += cmax;
            ec += csum / n;
            tmax_sum += tmax;
        }
        if (in->algo == MM_PLAN_ASYNC) {
            /* nobody waits: a peer's round is its compute and its mixing */
            for (int i = 0; i < n; i++) {
                double mix = mix_time(in, b->nin[i] + 1);
                if (count)
                    book(o, b->c[i], 0, 0, 0, mix);
                b->s[i] += b->c[i] + mix;
            }
            continue;
        }
        for (int g = 0; g < G; g++) {
            for (int i = 0; i < n; i++) {
                double c = g == 0 ? b->c[i] : 0;
                b->ready[i] = b->s[i] + c;
                /* sends leave at the round's start, or after the compute
                 * (the outer optimizer's steps first) */
                b->tsent[i] = steps_first ? b->ready[i] : b->s[i];
                b->arrive[i] = b->tsent[i] + b->tsend[i]; /* its own sends must be out */
            }
            for (size_t k = 0; k < nf; k++) {
                uint32_t a = b->flows[k].from, z = b->flows[k].to;
                b->arrive[z] = fmax(b->arrive[z], b->tsent[a] + b->t[k]);
            }
            for (int i = 0; i < n; i++) {
                double done = fmax(b->ready[i], b->arrive[i]);
                double mix = mix_time(in, b->nin[i] + 1 + (in->outer ? 2 : 0));
                if (count)
                    book(o, g == 0 ? b->c[i] : 0, b->ready[i], done,
                         b->tsent[i] + fmax(b->tsend[i], b->tin[i]), mix);
                /* the next exchange (or round) starts when this one is mixed */
                b->next[i] = done + mix;
            }
            memcpy(b->s, b->next, sizeof *b->s * (size_t)n);
        }
    }
    double Rn = (double)in->rounds, T = tmax_sum / Rn;
    o->exchange_s = T;
    round_rates(in, b, o);
    double mix_mean = o->mix_s / (Rn * n) / G;
    o->bound_lo_s = (steps_first ? ec / Rn + T : fmax(ec / Rn, T)) + mix_mean + (G - 1) * (T + mix_mean);
    o->bound_hi_s = (steps_first ? emax_c / Rn + T : fmax(emax_c / Rn, T)) + mix_mean +
                    (G - 1) * (T + mix_mean);
    if (in->algo == MM_PLAN_ASYNC) {
        /* a neighbour's vector is new in a round when it arrived since the
         * last: one send in flight per neighbour, one per sender's round */
        double tau = o->round_s, fresh = 0;
        size_t nf;
        if (round_flows(in, b, 0, nb_in, nb_out, &nf) != 0 ||
            mm_plan_flow_times(in, b->flows, nf, V, b->t, NULL) != 0)
            return -1;
        for (size_t k = 0; k < nf; k++)
            fresh += tau > 0 ? fmin(1.0, tau / fmax(tau, b->t[k])) : 1.0;
        o->fresh = nf ? fresh / (double)nf : 1;
        o->bound_lo_s = o->bound_hi_s = o->round_s;
    }
    return 0;
}

/* ---- out of step: D-PSGD rounds over fluid links ------------------------ */

/* What one peer is doing. */
typedef struct {
    uint64_t r;          /* its round */
    int g;               /* its exchange in the round (gossip steps) */
    double s;            /* when the exchange started (its last mixing done) */
    double c;            /* the round's compute */
    double ready;        /* compute done */
    double sent_at;      /* its sends leave: at s, or at ready (steps first) */
    bool snap;           /* its snapshot is taken (it had a free buffer) */
    bool sent;           /* ... and its sends have left */
    bool finished;       /* all the rounds done */
    double tout, tin;    /* its slowest send and receive with the peers in step */
    mm_round_view v;     /* the round's neighbours */
    mm_fluid_flow *box;  /* vectors arrived and not yet mixed */
    size_t nbox, capbox;
} fpeer;

typedef struct {
    const mm_plan_in *in;
    sim_buf *b;
    mm_rng *rng;
    fpeer *p;
    mm_neighbour *nb;    /* every peer's in- then out-neighbours, 2 x deg each */
    int deg;
    mm_fluid fl;
    mm_fluid_flow *got;
    size_t capgot;
    mm_plan_out *o;
    bool steps_first;
    int G;
} fsim;

static uint64_t exchange_of(const fsim *x, const fpeer *p)
{
    return p->r * (uint64_t)x->G + (uint64_t)p->g;
}

/* An exchange begins at p->s; its snapshot waits for a free buffer. */
static void begin_exchange(const fsim *x, fpeer *p)
{
    p->ready = p->s + (p->g == 0 ? p->c : 0);
    p->sent_at = x->steps_first && p->g == 0 ? p->ready : p->s;
    p->snap = p->sent = false;
}

/* The snapshot at t, if a buffer is free: the compute starts from it (the
 * node snapshots, then computes), unless the steps come first. */
static bool take_snapshot(fsim *x, int i, double t)
{
    fpeer *p = &x->p[i];
    if (mm_fluid_snapshots(&x->fl, (uint32_t)i) >= MM_PLAN_SNAPSHOTS)
        return false;
    if (!x->steps_first || p->g > 0) {
        p->ready += t - p->s;
        p->sent_at = t;
    }
    p->snap = true;
    return true;
}

/* Peer i begins round p->r at p->s: its neighbours, its compute, and its
 * messages' times if all peers were in step (for the breakdown). */
static int begin_round(fsim *x, int i)
{
    fpeer *p = &x->p[i];
    p->v = (mm_round_view){.in = x->nb + (size_t)i * 2 * (size_t)x->deg,
                           .out = x->nb + ((size_t)i * 2 + 1) * (size_t)x->deg};
    if (mm_topo_round(x->in->topo, (uint32_t)i, p->r, &p->v) != 0)
        return -1;
    size_t nf;
    double tmax;
    int res;
    mm_neighbour *tin = x->nb + (size_t)x->in->n * 2 * (size_t)x->deg; /* scratch */
    if (round_times(x->in, x->b, p->r, tin, tin + x->deg, &nf, &tmax, &res) != 0)
        return -1;
    p->tout = x->b->tsend[i];
    p->tin = x->b->tin[i];
    p->g = 0;
    p->c = draw_round(x->in, x->rng, i, p->r);
    begin_exchange(x, p);
    return 0;
}

static int send_all(fsim *x, int i)
{
    fpeer *p = &x->p[i];
    double V = x->in->vec_floats * x->in->bytes_per_float;
    for (int k = 0; k < p->v.n_out; k++)
        if (mm_fluid_send(&x->fl, (uint32_t)i, p->v.out[k].peer, exchange_of(x, p), V) != 0)
            return -1;
    p->sent = true;
    return 0;
}

/* Its exchange is done at t: compute done, its sends under way, a vector of
 * this exchange (or a later one: that neighbour moved on) from every
 * in-neighbour. */
static bool exchange_done(const fsim *x, int i, double t)
{
    const fpeer *p = &x->p[i];
    uint64_t e = exchange_of(x, p);
    if (!p->sent || t < p->ready || mm_fluid_queued(&x->fl, (uint32_t)i, e))
        return false;
    for (int k = 0; k < p->v.n_in; k++) {
        bool there = false;
        for (size_t m = 0; m < p->nbox && !there; m++)
            there = p->box[m].from == p->v.in[k].peer && p->box[m].exchange >= e;
        if (!there)
            return false;
    }
    return true;
}

/* Mixes at t and moves on to the next exchange or round. */
static int finish_exchange(fsim *x, int i, double t)
{
    const mm_plan_in *in = x->in;
    fpeer *p = &x->p[i];
    uint64_t e = exchange_of(x, p);
    double mix = mix_time(in, p->v.n_in + 1 + (in->outer ? 2 : 0));
    if (p->r >= (uint64_t)in->warmup)
        /* (from the exchange's start: a wait for a free buffer is waiting) */
        book(x->o, p->g == 0 ? p->c : 0, p->s + (p->g == 0 ? p->c : 0), t,
             p->sent_at + fmax(p->tout, p->tin), mix);
    size_t w = 0; /* what this exchange used, or came too late for it, is released */
    for (size_t m = 0; m < p->nbox; m++)
        if (p->box[m].exchange > e)
            p->box[w++] = p->box[m];
    p->nbox = w;
    p->s = t + mix;
    if (++p->g < x->G) { /* the next exchange: pure averaging, nothing to compute */
        begin_exchange(x, p);
        return 0;
    }
    p->r++;
    if (p->r == (uint64_t)in->warmup)
        x->b->s0[i] = p->s;
    if (p->r == (uint64_t)(in->warmup + in->rounds)) {
        x->b->s[i] = p->s;
        p->finished = true;
        return 0;
    }
    return begin_round(x, i);
}

static int deliver(fsim *x, const mm_fluid_flow *f)
{
    fpeer *p = &x->p[f->to];
    if (mm_fluid_reserve(&p->box, &p->capbox, p->nbox + 1) != 0)
        return -1;
    p->box[p->nbox++] = *f;
    return 0;
}

/* Everything that happens at t: sends that are due, exchanges that are
 * done (and so sends of the next one, which may be done at once). Returns
 * the peers still running, or -1. */
static int settle(fsim *x, double t)
{
    int running;
    bool moved;
    do {
        moved = false;
        running = 0;
        for (int i = 0; i < x->in->n; i++) {
            fpeer *p = &x->p[i];
            if (p->finished)
                continue;
            running++;
            if (!p->snap && t >= p->sent_at && take_snapshot(x, i, t))
                moved = true;
            if (p->snap && !p->sent && t >= p->sent_at) {
                if (send_all(x, i) != 0)
                    return -1;
                moved = true;
            }
            if (exchange_done(x, i, t)) {
                if (finish_exchange(x, i, t) != 0)
                    return -1;
                moved = true;
            }
        }
    } while (moved);
    return running;
}

/* The next moment anything happens after t. */
static double next_event(const fsim *x, double t)
{
    double tn = mm_fluid_next(&x->fl, t);
    for (int i = 0; i < x->in->n; i++) {
        const fpeer *p = &x->p[i];
        if (p->finished)
            continue;
        if (!p->sent && p->sent_at > t) /* (one waiting for a buffer wakes with a flow) */
            tn = fmin(tn, p->sent_at);
        else if (p->sent && p->ready > t)
            tn = fmin(tn, p->ready);
    }
    return tn;
}

/* D-PSGD with the links as a fluid: every peer starts its first round at
 * a random moment in [0, spread), and from then on as murmur's round does
 * (docs/node.md): its sends leave and do not hold the round (only one
 * deferred behind an earlier send to the same peer does), it waits for its
 * compute and its in-neighbours' vectors, mixes, and starts the next. The
 * vectors share the links with whatever else is on them at that moment. */
static int run_fluid(const mm_plan_in *in, mm_plan_out *o, sim_buf *b, mm_rng *rng,
                     double spread)
{
    int n = in->n, deg = mm_topo_max_degree(in->topo);
    fsim x = {.in = in, .b = b, .rng = rng, .o = o, .deg = deg > 0 ? deg : 1,
              .G = in->gossip_steps,
              .steps_first = in->outer && !in->overlap};
    x.p = calloc((size_t)n, sizeof *x.p);
    x.nb = calloc(((size_t)n + 1) * 2 * (size_t)x.deg, sizeof *x.nb);
    int rc = x.p && x.nb && mm_fluid_init(&x.fl, in) == 0 ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++) {
        x.p[i].s = in->start_s ? in->start_s[i] : spread * mm_rng_uniform(rng);
        if (in->warmup == 0)
            b->s0[i] = x.p[i].s;
        rc = begin_round(&x, i);
    }
    double t = 0;
    while (rc == 0) {
        int running = settle(&x, t);
        if (running <= 0) {
            rc = running;
            break;
        }
        if (mm_fluid_rates(&x.fl) != 0) {
            rc = -1;
            break;
        }
        double tn = next_event(&x, t);
        /* (nothing left to happen with peers still running cannot be) */
        if (!isfinite(tn) || mm_fluid_reserve(&x.got, &x.capgot, x.fl.nf) != 0) {
            rc = -1;
            break;
        }
        size_t ngot;
        mm_fluid_advance(&x.fl, t, tn, x.got, &ngot);
        for (size_t k = 0; rc == 0 && k < ngot; k++)
            rc = deliver(&x, &x.got[k]);
        t = tn;
    }
    if (rc == 0)
        round_rates(in, b, o);
    for (int i = 0; x.p && i < n; i++)
        free(x.p[i].box);
    free(x.p), free(x.nb), free(x.got);
    mm_fluid_free(&x.fl);
    return rc;
}

/* One ring all-reduce of the vector: reduce-scatter then all-gather, 2(n-1)
 * steps, each moving V/n bytes from every peer to the next in id order; or
 * (allgather) n - 1 steps each moving a whole payload of V bytes. */
static double allreduce_time(const mm_plan_in *in, sim_buf *b, int *bottleneck)
{
    int n = in->n;
    if (n < 2)
        return 0;
    double V = in->vec_floats * in->bytes_per_float, step = 0;
    double chunk = in->allgather ? V : V / n;
    for (int i = 0; i < n; i++)
        b->flows[i] = (mm_plan_flow){(uint32_t)i, (uint32_t)((i + 1) % n)};
    if (mm_plan_flow_times(in, b->flows, (size_t)n, chunk, b->t, b->res) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (b->t[i] > step) {
            step = b->t[i];
            *bottleneck = b->res[i];
        }
    return (in->allgather ? 1.0 : 2.0) * (n - 1) * step;
}

static int run_allreduce(const mm_plan_in *in, mm_plan_out *o, sim_buf *b, mm_rng *rng)
{
    int n = in->n, R = in->rounds + in->warmup;
    double T = allreduce_time(in, b, &o->bottleneck), emax = 0, ec = 0;
    if (T < 0)
        return -1;
    /* reduce n-1 chunks of P/n (about one pass) and write the average (one more) */
    double mix = mix_time(in, in->outer ? 4 : 2); /* (the outer step: 2 more passes) */
    o->allreduce_s = o->exchange_s = T;
    o->msg_bytes = in->vec_floats * in->bytes_per_float / (in->allgather ? 1 : n);
    for (int r = 0; r < R; r++) {
        double smax = 0, rmax = 0, cmax = 0, csum = 0;
        bool count = r >= in->warmup;
        if (r == in->warmup)
            memcpy(b->s0, b->s, sizeof *b->s * (size_t)n);
        for (int i = 0; i < n; i++) {
            b->c[i] = draw_round(in, rng, i, (uint64_t)r);
            b->ready[i] = b->s[i] + b->c[i];
            smax = fmax(smax, b->s[i]);
            rmax = fmax(rmax, b->ready[i]);
            cmax = fmax(cmax, b->c[i]);
            csum += b->c[i];
        }
        if (count) {
            emax += cmax;
            ec += csum / n;
        }
        /* the ring passes through everyone: it cannot finish before the
         * last peer has started it (with overlap: started its round; without:
         * finished its compute) */
        double end = (in->overlap ? smax : rmax) + T;
        for (int i = 0; i < n; i++) {
            double done = fmax(b->ready[i], end);
            double commit = (in->overlap ? b->s[i] : b->ready[i]) + T;
            if (count)
                book(o, b->c[i], b->ready[i], done, commit, mix);
            b->s[i] = done + mix;
        }
    }
    double Rn = (double)in->rounds;
    round_rates(in, b, o);
    if (in->overlap) {
        o->bound_lo_s = fmax(ec / Rn, T) + mix;
        o->bound_hi_s = fmax(emax / Rn, T) + mix;
    } else {
        o->bound_lo_s = ec / Rn + T + mix;
        o->bound_hi_s = emax / Rn + T + mix;
    }
    return 0;
}

/* The parts were summed over peers and rounds: per round and peer (they
 * add up to round_s). */
static void per_round_means(const mm_plan_in *in, mm_plan_out *o)
{
    double k = (double)in->rounds * in->n;
    o->compute_s /= k;
    o->comm_exposed_s /= k;
    o->wait_s /= k;
    o->mix_s /= k;
}

int mm_plan_run(const mm_plan_in *in, mm_plan_out *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *bad = NULL;
    if (in->n < 1)
        bad = "no peers";
    else if (in->algo != MM_PLAN_ALLREDUCE && !in->topo)
        bad = "gossip needs a topology";
    else if (in->topo && mm_topo_n(in->topo) != in->n)
        bad = "the peer count differs from the topology's";
    else if (!(in->vec_floats > 0) || !(in->bytes_per_float > 0))
        bad = "the vector and its bytes per float must be positive";
    else if (!(in->step_s >= 0) || !(in->step_sd >= 0) || !(in->latency_s >= 0) ||
             !(in->mix_fps >= 0) || !(in->loop_bps >= 0))
        bad = "times and rates must not be negative";
    else if (in->local_steps < 1 || in->gossip_steps < 1)
        bad = "local and gossip steps must be at least 1";
    else if (in->rounds < 1 || in->warmup < 0)
        bad = "the simulation needs at least one round";
    else if (in->links.groups && !in->links.placement &&
             (long)in->links.groups * in->links.per != in->n)
        bad = "the link profile's groups x per differs from the peer count";
    if (!bad && mm_slowdown_max_peer(&in->slow) >= in->n)
        bad = "--slow or --stretch names a peer the topology does not have";
    for (int i = 0; !bad && in->links.placement && i < in->n; i++)
        if (in->links.placement[i] < 0 || in->links.placement[i] >= in->links.groups)
            bad = "a peer is placed in a group the profile does not have";
    if (bad) {
        snprintf(err, errlen, "plan: %s", bad);
        return -1;
    }
    int deg = in->topo ? mm_topo_max_degree(in->topo) : 1;
    size_t max_flows = (size_t)in->n * (size_t)(deg > 1 ? deg : 1);
    sim_buf b;
    mm_neighbour *nb_in = calloc((size_t)(deg > 0 ? deg : 1), sizeof *nb_in);
    mm_neighbour *nb_out = calloc((size_t)(deg > 0 ? deg : 1), sizeof *nb_out);
    int rc = sim_alloc(&b, in->n, max_flows) == 0 && nb_in && nb_out ? 0 : -1;
    mm_rng rng;
    mm_rng_seed(&rng, in->seed);
    if (rc == 0) {
        out->msg_bytes = in->vec_floats * in->bytes_per_float;
        rc = in->algo == MM_PLAN_ALLREDUCE ? run_allreduce(in, out, &b, &rng)
                                           : run_gossip(in, out, &b, &rng, nb_in, nb_out);
    }
    if (rc == 0) {
        per_round_means(in, out);
        out->round_in_step_s = out->round_s;
    }
    if (rc == 0 && in->algo == MM_PLAN_DPSGD) {
        /* the prediction: the same rounds with the peers free to drift out
         * of step, started up to one exchange apart */
        mm_plan_out f = {0};
        mm_rng_seed(&rng, in->seed);
        rc = run_fluid(in, &f, &b, &rng, out->exchange_s);
        if (rc == 0) {
            per_round_means(in, &f);
            out->round_s = f.round_s;
            out->round_slowest_s = f.round_slowest_s;
            out->compute_s = f.compute_s;
            out->comm_exposed_s = f.comm_exposed_s;
            out->wait_s = f.wait_s;
            out->mix_s = f.mix_s;
        }
    }
    if (rc != 0)
        snprintf(err, errlen, "plan: out of memory");
    sim_free(&b);
    free(nb_in);
    free(nb_out);
    return rc;
}
