/* The training thread: one round of gossip training at a time.
 *
 *   1. copy a snapshot s = w * x of our parameters into a mailbox buffer and
 *      hand it to the loop, which sends it to this round's out-neighbours;
 *   2. meanwhile compute H local optimizer steps on x (x becomes x + delta);
 *   3. wait (bounded) for the in-neighbours' vectors of this round;
 *   4. x <- mix(s, neighbours) + delta, in one pass per neighbour.
 *
 * With push-sum, x holds the de-biased model z and w the push-sum weight;
 * what travels is w*z and w. With dpsgd and async, w stays 1. docs/node.md
 * derives the update. Everything this thread learns about the network comes
 * through the mailbox (node/mailbox.h). */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/peak_rss.h"
#include "base/rng.h"
#include "base/sha256.h"
#include "gossip/consensus.h"
#include "gossip/mix.h"
#include "gossip/sketch.h"
#include "gossip/wire.h"
#include "node/blas_env.h"
#include "node/choco_round.h"
#include "node/isolation.h"
#include "node/node_int.h"
#include "node/replica.h"
#include "report/snapshot.h"

/* IN_REFUSED: it arrived (its buffer must go back) but the mix refused its
 * weight, so it counts as missing. IN_OFF: consensus control left this
 * neighbour out of the exchange (both ends agreed): not waited for, its
 * weight goes to self, and it is not missing. */
enum { IN_WAITING, IN_READY, IN_MISSING, IN_REFUSED, IN_OFF };

/* The phases of one exchange, in order; asserted in debug builds. */
typedef enum { PH_IDLE, PH_SNAPSHOT, PH_COMPUTE, PH_WAIT, PH_MIX } phase;

struct mm__trainer {
    const mm_node_config *cfg;
    uint32_t id, n;
    const mm_topology *topo;
    char dir[PATH_MAX];             /* run_dir/node-K */
    mm__mbox *mb;                   /* set by mm__trainer_run */

    /* the replica, or a plain vector with --vector-len */
    mm_replica rep;
    bool have_model;
    float *x;                       /* the parameters (rep.model.params or own_x) */
    float *own_x;
    size_t P;
    double w;                       /* push-sum weight */
    long step, round;
    mm_metrics metrics;

    /* async: the newest copy of each in-neighbour */
    float **latest;
    int64_t *latest_exchange;
    double *latest_weight;

    /* this round */
    mm_round_view v, next;          /* this round's neighbours, and the next round's */
    mm_neighbour *in_buf, *out_buf;
    mm_mix_input *mix_in;
    int *status;
    const float **vec;              /* the vector to mix for in[k] */
    double *wk;                     /* its push-sum weight */
    double *dist;                   /* ||z_k - z_t|| */
    uint32_t *ids;                  /* scratch */
    float *sketch;
    double loss_sum;
    int loss_n;
    phase ph;

    /* consensus control (docs/node.md): exchange e of round r, step g, is
     * r * stride + g on the wire */
    uint64_t stride;
    bool adaptive;                  /* --consensus-target */
    mm_cc cc;
    double *cc_ratio;               /* R(G), G = 1..max_gossip_steps */
    bool *on;                       /* in[k] (= out[k]) takes part in this exchange */
    bool *more;                     /* in[k]'s vector of this exchange said MORE */
    double *aux;                    /* ... and carried this aux */
    int *status0;                   /* the round's first exchange: status, distance */
    double *dist0;
    int *n_ex;                      /* exchanges that included in[k] (sent to, waited for) */
    int exchanges, want;            /* this round: exchanges run; adaptive: asked for */
    bool more_warned;

    double t_start, start_deadline;
    double t_compute, t_comm, t_wait;
    double t_jitter;                /* --compute-jitter: delay drawn so far (seconds) */
    mm_rng jitter_rng;
    double t_allreduce;             /* allreduce: the loop's time in all-reduces so far */
    float *ar_out;                  /* allreduce while training: the average lands here */
    char ar_error[768];             /* allreduce: why the run ended, "" if it did not fail */
    uint64_t stale_dropped;
    uint64_t mix_refused;           /* neighbour vectors the mix refused for their weight */
    mm__iso *iso;                   /* who was mixed, isolation, the verdict (isolation.h) */
    mm__choco *choco;               /* --compress: CHOCO-SGD's public copies (choco_round.h) */
    int exit_status;
};

static void set_phase(mm__trainer *t, phase next)
{
    /* snapshot -> compute -> wait -> mix -> (next exchange) snapshot */
    assert((next == PH_SNAPSHOT && (t->ph == PH_IDLE || t->ph == PH_MIX)) ||
           (next == PH_COMPUTE && t->ph == PH_SNAPSHOT) ||
           (next == PH_WAIT && t->ph == PH_COMPUTE) ||
           (next == PH_MIX && t->ph == PH_WAIT) || next == PH_IDLE);
    t->ph = next;
}

static bool stopping(const mm__trainer *t) { return mm__mbox_stopping(t->mb); }

/* ---- set-up ---------------------------------------------------------------- */

static int load_replica(mm__trainer *t, char *err, size_t errlen)
{
    const mm_node_config *c = t->cfg;
    /* Training starts every replica from the same x_0 (as D-PSGD assumes);
     * pure gossip starts them apart, to watch them meet. */
    uint64_t seed = c->same_init ? c->train.seed
                                 : c->train.seed + 0x9e3779b97f4a7c15ULL * (t->id + 1);
    if (c->vector_len > 0) {
        t->P = (size_t)c->vector_len;
        t->x = t->own_x = malloc(t->P * sizeof(float));
        if (!t->x) {
            snprintf(err, errlen, "cannot allocate a vector of %zu floats", t->P);
            return -1;
        }
        mm_rng r;
        mm_rng_seed(&r, seed);
        for (size_t k = 0; k < t->P; k++)
            t->x[k] = (float)mm_rng_normal(&r);
        return 0;
    }
    bool data = !c->no_train || (c->eval_every > 0 && c->train.data_dir);
    int shard_n = c->no_train ? 1 : (int)t->n, shard_id = c->no_train ? 0 : (int)t->id;
    uint64_t rng_seed = c->train.seed ^ (0xa0761d6478bd642fULL * (t->id + 1));
    if (mm_replica_init(&t->rep, &c->train, seed, rng_seed, err, errlen) != 0)
        return -1;
    t->have_model = true;
    if (data && mm_replica_load_shard(&t->rep, shard_id, shard_n, err, errlen) != 0)
        return -1;
    t->x = t->rep.model.params;
    t->P = t->rep.model.n_params;
    if (data)
        mm_info("data: %d files (%s), %zu training bytes, %zu validation bytes",
                t->rep.shard.n_files, t->rep.shard.genres, t->rep.shard.train_len,
                t->rep.shard.val_len);
    return 0;
}

static int resume(mm__trainer *t, char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/checkpoint.bin", t->dir);
    if (access(path, F_OK) != 0 && errno == ENOENT) { /* the rule of murmur train --resume too */
        mm_info("--resume: no checkpoint at %s, starting fresh", path);
        return 0;
    }
    if (!t->have_model) {
        snprintf(err, errlen, "--resume needs a model (not --vector-len)");
        return -1;
    }
    mm_ckpt_state st;
    if (mm_replica_load(&t->rep, path, &st, err, errlen) != 0)
        return -1;
    if (st.peer_id != (int32_t)t->id) {
        snprintf(err, errlen, "%s belongs to peer %d, not %u", path, st.peer_id, t->id);
        return -1;
    }
    t->step = st.step;
    t->round = st.round;
    /* The weight obeys the wire's rule (gossip/wire.h) or the neighbours
     * would refuse every vector: 1 outside push-sum (a push-sum checkpoint
     * resumed with dpsgd starts from 1), within [2^-30, n] with it. */
    bool ps = t->cfg->algo == MM_ALGO_PUSHSUM;
    t->w = ps ? st.pushsum_weight : 1.0;
    if (!mm_wire_weight_ok(ps ? MM_WEIGHT_PUSHSUM : MM_WEIGHT_ONE, t->w, t->n, NULL, 0)) {
        snprintf(err, errlen, "%s: push-sum weight %.17g is outside [2^-30, %u]", path, t->w, t->n);
        return -1;
    }
    mm_info("resumed from %s: round %ld, step %ld", path, t->round, t->step);
    if (t->round >= t->cfg->rounds) /* --rounds counts from round 0, not from here */
        mm_warn("--resume: the checkpoint is at round %ld, at or past --rounds %ld: nothing is "
                "left to run; give --rounds above %ld to go on", t->round, t->cfg->rounds, t->round);
    return 0;
}

/* Whether local steps change x (otherwise a round only averages). */
static bool trains(const mm__trainer *t) { return !t->cfg->no_train && t->have_model; }

static int alloc_round(mm__trainer *t)
{
    int maxdeg = mm_topo_max_degree(t->topo);
    if (maxdeg < 2)
        maxdeg = 2; /* all-reduce: its two ring neighbours, whatever the graph */
    t->in_buf = calloc((size_t)maxdeg * 2, sizeof *t->in_buf);
    t->out_buf = calloc((size_t)maxdeg * 2, sizeof *t->out_buf);
    t->mix_in = calloc((size_t)maxdeg, sizeof *t->mix_in);
    t->status = calloc((size_t)maxdeg, sizeof *t->status);
    t->vec = calloc((size_t)maxdeg, sizeof *t->vec);
    t->wk = calloc((size_t)maxdeg, sizeof *t->wk);
    t->dist = calloc((size_t)maxdeg, sizeof *t->dist);
    t->ids = calloc((size_t)maxdeg * 4 + 4, sizeof *t->ids);
    t->sketch = calloc((size_t)t->cfg->sketch_dim, sizeof *t->sketch);
    t->on = calloc((size_t)maxdeg, sizeof *t->on);
    t->more = calloc((size_t)maxdeg, sizeof *t->more);
    t->aux = calloc((size_t)maxdeg, sizeof *t->aux);
    t->status0 = calloc((size_t)maxdeg, sizeof *t->status0);
    t->dist0 = calloc((size_t)maxdeg, sizeof *t->dist0);
    t->n_ex = calloc((size_t)maxdeg, sizeof *t->n_ex);
    if (!t->in_buf || !t->out_buf || !t->mix_in || !t->status || !t->vec || !t->wk ||
        !t->dist || !t->ids || !t->sketch || !t->on || !t->more || !t->aux || !t->status0 ||
        !t->dist0 || !t->n_ex)
        return -1;
    if (t->cfg->algo == MM_ALGO_ASYNC) {
        t->latest = calloc(t->n, sizeof *t->latest);
        t->latest_exchange = calloc(t->n, sizeof *t->latest_exchange);
        t->latest_weight = calloc(t->n, sizeof *t->latest_weight);
        if (!t->latest || !t->latest_exchange || !t->latest_weight)
            return -1;
        for (uint32_t p = 0; p < t->n; p++)
            t->latest_exchange[p] = -1;
    }
    if (t->cfg->algo == MM_ALGO_ALLREDUCE && trains(t) &&
        !(t->ar_out = malloc(t->P * sizeof(float))))
        return -1;
    t->v.in = t->in_buf;
    t->v.out = t->out_buf;
    t->next.in = t->in_buf + maxdeg;
    t->next.out = t->out_buf + maxdeg;
    return 0;
}

/* Whether this round's neighbours are one undirected set: in[k] and out[k]
 * the same peer (both lists are sorted by id), so that an edge's two ends
 * can agree on its exchanges. */
static bool undirected_view(const mm_round_view *v)
{
    if (v->n_in != v->n_out)
        return false;
    for (int k = 0; k < v->n_in; k++)
        if (v->in[k].peer != v->out[k].peer)
            return false;
    return true;
}

/* The exchange numbering's stride, and with --consensus-target the
 * estimator's correction for this topology and a check that every round
 * (over a period, or MM_TOPO_SPECTRUM_ROUNDS rounds of a random schedule)
 * is undirected at this peer. */
static int consensus_init(mm__trainer *t, char *err, size_t errlen)
{
    const mm_node_config *c = t->cfg;
    t->adaptive = c->consensus_target > 0;
    t->stride = t->adaptive ? (uint64_t)c->max_gossip_steps
                : c->gossip_schedule.n ? (uint64_t)mm_gsched_max(&c->gossip_schedule)
                : (uint64_t)(c->gossip_steps > 0 ? c->gossip_steps : 1);
    if (!t->adaptive)
        return 0;
    int period = mm_topo_period(t->topo);
    int rounds = period > 0 ? period : MM_TOPO_SPECTRUM_ROUNDS;
    for (int r = 0; r < rounds; r++) {
        if (mm_topo_round(t->topo, t->id, (uint64_t)r, &t->v) != 0 || !undirected_view(&t->v)) {
            snprintf(err, errlen, "--consensus-target needs a topology whose every round is "
                     "undirected (peer %u receives from other peers than it sends to in round "
                     "%d): neighbours must agree on each exchange", t->id, r);
            return -1;
        }
    }
    double *lam = malloc(t->n * sizeof *lam);
    t->cc_ratio = malloc((size_t)c->max_gossip_steps * sizeof *t->cc_ratio);
    int rc = lam && t->cc_ratio && mm_topo_spectrum(t->topo, lam) == 0 &&
                     mm_cc_ratios(lam, (int)t->n, c->max_gossip_steps, t->cc_ratio) == 0
                 ? 0 : -1;
    free(lam);
    if (rc != 0) {
        snprintf(err, errlen, "--consensus-target: the topology's spectrum could not be "
                 "computed (out of memory, or a single peer)");
        return -1;
    }
    mm_cc_init(&t->cc, c->consensus_target, c->max_gossip_steps, t->cc_ratio);
    mm_info("consensus control: target %g, 1..%d exchanges a round, R(1) = %.4f, R(%d) = %.4f",
            c->consensus_target, c->max_gossip_steps, t->cc_ratio[0], c->max_gossip_steps,
            t->cc_ratio[c->max_gossip_steps - 1]);
    return 0;
}

mm__trainer *mm__trainer_new(const mm_node_config *c, uint32_t id, const mm_topology *topo,
                             const char *dir, char *err, size_t errlen)
{
    mm__trainer *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->cfg = c;
    t->id = id;
    t->n = (uint32_t)mm_topo_n(topo);
    t->topo = topo;
    t->w = 1.0;
    t->metrics.fd = -1;
    /* --compute-jitter draws from its own stream per peer: the same delays
     * for the same seed, whatever the timing */
    uint64_t js = c->jitter_seed_given ? c->jitter_seed : c->train.seed ^ 0x6a69747465720000ULL;
    mm_rng_seed(&t->jitter_rng, js ^ (0x9e3779b97f4a7c15ULL * (id + 1)));
    snprintf(t->dir, sizeof t->dir, "%s", dir);
    if (load_replica(t, err, errlen) != 0 || (c->resume && resume(t, err, errlen) != 0))
        goto fail;
    if (c->compress && !(t->choco = mm__choco_new(c, topo, id, t->x, t->P, err, errlen)))
        goto fail;
    t->iso = mm__iso_new(t->n, id, mm__iso_limit(c->start_timeout_ms, c->peer_timeout_ms,
                                                  c->round_timeout_ms));
    if (alloc_round(t) != 0 || !t->iso) {
        snprintf(err, errlen, "out of memory for a round with %d neighbours",
                 mm_topo_max_degree(topo));
        goto fail;
    }
    if (consensus_init(t, err, errlen) != 0)
        goto fail;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/metrics.jsonl", t->dir);
    if (mm_metrics_open(&t->metrics, path, err, errlen) != 0)
        goto fail;
    return t;
fail:
    mm__trainer_free(t);
    return NULL;
}

void mm__trainer_free(mm__trainer *t)
{
    if (!t)
        return;
    mm_metrics_close(&t->metrics);
    if (t->have_model)
        mm_replica_free(&t->rep);
    free(t->own_x);
    if (t->latest)
        for (uint32_t j = 0; j < t->n; j++)
            free(t->latest[j]);
    free(t->latest);
    free(t->latest_exchange);
    free(t->latest_weight);
    free(t->in_buf);
    free(t->out_buf);
    free(t->mix_in);
    free(t->status);
    free(t->vec);
    free(t->wk);
    free(t->dist);
    free(t->ids);
    free(t->sketch);
    free(t->on);
    free(t->more);
    free(t->aux);
    free(t->status0);
    free(t->dist0);
    free(t->n_ex);
    free(t->cc_ratio);
    free(t->ar_out);
    mm__iso_free(t->iso);
    mm__choco_free(t->choco);
    free(t);
}

size_t mm__trainer_vec_len(const mm__trainer *t) { return t->P; }

size_t mm__trainer_buf_bytes(const mm__trainer *t)
{
    return t->choco ? mm__choco_buf_bytes(t->choco) : 4 * t->P;
}

void mm__trainer_codec(const mm__trainer *t, uint8_t *codec, uint32_t *block, double *frac,
                       uint64_t *max_body)
{
    if (t->choco) {
        mm__choco_wire(t->choco, codec, block, frac, max_body);
        return;
    }
    *codec = MM_WIRE_CODEC_FP32;
    *block = 0;
    *frac = 0;
    *max_body = 4 * (uint64_t)t->P;
}

void mm_vector_fingerprint(size_t P, uint8_t out[32])
{
    char desc[64];
    int len = snprintf(desc, sizeof desc, "murmur-vector:%zu", P);
    mm_sha256(desc, (size_t)len, out);
}

void mm__trainer_fingerprint(const mm__trainer *t, uint8_t fp[32])
{
    if (t->have_model)
        mm_model_fingerprint(&t->cfg->train.model, fp);
    else
        mm_vector_fingerprint(t->P, fp);
}

int mm__trainer_status(const mm__trainer *t) { return t->exit_status; }

/* ---- one round ------------------------------------------------------------- */

static void want_round(mm__trainer *t, long round)
{
    /* This round's and the next round's neighbours, so that time-varying
     * topologies find their next connections already open. */
    int n = 0;
    for (int k = 0; k < t->v.n_in; k++) t->ids[n++] = t->v.in[k].peer;
    for (int k = 0; k < t->v.n_out; k++) t->ids[n++] = t->v.out[k].peer;
    if (mm_topo_round(t->topo, t->id, (uint64_t)round + 1, &t->next) == 0) {
        for (int k = 0; k < t->next.n_in; k++) t->ids[n++] = t->next.in[k].peer;
        for (int k = 0; k < t->next.n_out; k++) t->ids[n++] = t->next.out[k].peer;
    }
    int m = 0; /* dedupe: degrees are small */
    for (int i = 0; i < n; i++) {
        int dup = t->ids[i] == t->id;
        for (int j = 0; j < m && !dup; j++)
            dup = t->ids[j] == t->ids[i];
        if (!dup)
            t->ids[m++] = t->ids[i];
    }
    mm__mbox_want(t->mb, t->ids, m);
}

/* dpsgd/pushsum: when every in-neighbour of this round has already sent a
 * vector of a later round, they have all moved past us (we were slow, or we
 * restarted from an older checkpoint): jump to the earliest of their rounds
 * instead of mixing with nobody round after round. A later vector from a
 * peer that is not our partner this round proves nothing: in a time-varying
 * graph it may simply be early. Returns the round to run. */
static long fast_forward(mm__trainer *t, long round)
{
    uint64_t g = t->stride;
    long target = -1;
    for (int k = 0; k < t->v.n_in; k++) {
        mm__peer_view pv;
        mm__mbox_peer(t->mb, t->v.in[k].peer, &pv);
        long r = pv.has_vector ? (long)(pv.exchange / g) : -1;
        if (r <= round)
            return round;
        if (target < 0 || r < target)
            target = r;
    }
    if (target <= round)
        return round;
    mm_info("neighbours are at round %ld: skipping from round %ld", target, round);
    return target;
}

/* Whether a neighbour is not worth waiting for: reported down or gone
 * (unless it has never been up and peers are still starting). */
static bool written_off(const mm__trainer *t, const mm__peer_view *pv)
{
    bool starting = !pv->ever_up && mm_time_now() < t->start_deadline;
    return (pv->state == MM__PEER_GONE || pv->state == MM__PEER_DOWN) && !starting;
}

/* Wait for the in-neighbours' vectors of exchange e (synchronous modes). */
static void wait_sync(mm__trainer *t, uint64_t e)
{
    double deadline = mm_time_now() + t->cfg->round_timeout_ms / 1000.0;
    /* While peers are starting, wait for those never seen up as long as
     * the start timeout allows. */
    for (int k = 0; k < t->v.n_in + t->v.n_out; k++) {
        uint32_t p = k < t->v.n_in ? t->v.in[k].peer : t->v.out[k - t->v.n_in].peer;
        mm__peer_view pv;
        mm__mbox_peer(t->mb, p, &pv);
        if (!pv.ever_up && t->start_deadline > deadline)
            deadline = t->start_deadline;
    }
    for (;;) {
        uint64_t gen = mm__mbox_generation(t->mb);
        int waiting = 0;
        bool released = false;
        for (int k = 0; k < t->v.n_in; k++) {
            if (t->status[k] != IN_WAITING)
                continue;
            uint32_t p = t->v.in[k].peer;
            mm__peer_view pv;
            mm__mbox_peer(t->mb, p, &pv);
            if (pv.has_vector && pv.exchange == e && t->choco) {
                /* applied to its copy; mixed only when the copy is valid */
                if (mm__choco_take(t->choco, p, &pv)) {
                    t->status[k] = IN_READY;
                    t->vec[k] = mm__choco_copy(t->choco, p);
                    t->wk[k] = 1.0;
                } else {
                    t->status[k] = IN_MISSING;
                    mm__mbox_release(t->mb, p);
                }
            } else if (pv.has_vector && pv.exchange == e) {
                t->status[k] = IN_READY;
                t->vec[k] = pv.body; /* fp32: the whole vector (the wire checked its length) */
                t->wk[k] = pv.meta.weight;
                t->more[k] = (pv.meta.flags & MM_VEC_MORE) != 0;
                t->aux[k] = pv.meta.aux;
            } else if (pv.has_vector && pv.exchange > e) {
                t->status[k] = IN_MISSING; /* it has moved on without us */
                mm_debug("exchange %llu: peer %u already sent exchange %llu: missing",
                         (unsigned long long)e, p, (unsigned long long)pv.exchange);
            } else if (pv.has_vector) {
                if (t->choco) /* a copy must see every q, in order, mixed or not */
                    mm__choco_take(t->choco, p, &pv);
                mm__mbox_release(t->mb, p); /* from a round we gave up on */
                t->stale_dropped++;
                released = true;
            } else if (written_off(t, &pv)) {
                t->status[k] = IN_MISSING;
                mm_debug("exchange %llu: peer %u is %s: missing", (unsigned long long)e, p,
                         pv.state == MM__PEER_GONE ? "gone" : "down");
            } else {
                waiting++;
            }
        }
        /* Our own vector must leave too: a send still pending because its
         * peer is not up yet holds the round open (a synchronous round is
         * an exchange), unless that peer was written off. */
        for (int k = 0; k < t->v.n_out; k++) {
            mm__peer_view pv;
            mm__mbox_peer(t->mb, t->v.out[k].peer, &pv);
            if (pv.send_pending && pv.pending_exchange == e && !written_off(t, &pv))
                waiting++;
        }
        if (released)
            continue; /* look again: the released peer may now send this exchange */
        if (!waiting || stopping(t) || mm_time_now() >= deadline)
            break;
        mm__mbox_wait(t->mb, gen, deadline);
    }
    for (int k = 0; k < t->v.n_in; k++)
        if (t->status[k] == IN_WAITING)
            t->status[k] = IN_MISSING;
}

/* async: take the newest copy of each in-neighbour, never wait. */
static void gather_async(mm__trainer *t, uint64_t e)
{
    for (int k = 0; k < t->v.n_in; k++) {
        uint32_t p = t->v.in[k].peer;
        mm__peer_view pv;
        mm__mbox_peer(t->mb, p, &pv);
        if (pv.has_vector) {
            if (!t->latest[p])
                t->latest[p] = malloc(t->P * sizeof(float));
            if (t->latest[p]) {
                memcpy(t->latest[p], pv.body, t->P * sizeof(float));
                t->latest_exchange[p] = (int64_t)pv.exchange;
                t->latest_weight[p] = pv.meta.weight;
            }
            /* copied out at once, so the connection keeps flowing */
            mm__mbox_release(t->mb, p);
        }
        bool fresh = t->latest[p] && t->latest_exchange[p] >= 0 &&
                     (int64_t)e - t->latest_exchange[p] <= t->cfg->staleness;
        t->status[k] = fresh ? IN_READY : IN_MISSING;
        t->vec[k] = fresh ? t->latest[p] : NULL;
        t->wk[k] = fresh ? t->latest_weight[p] : 0;
    }
}

static void mix(mm__trainer *t, const float *s)
{
    for (int k = 0; k < t->v.n_in; k++) {
        bool ready = t->status[k] == IN_READY;
        t->mix_in[k] = (mm_mix_input){.x = ready ? t->vec[k] : NULL,
                                      .weight = t->v.in[k].weight,
                                      .w = ready ? t->wk[k] : 1.0};
    }
    if (t->choco) {
        mm__choco_mix(t->choco, t->x, t->v.self_weight, t->mix_in, t->v.n_in);
        for (int k = 0; k < t->v.n_in; k++)
            t->dist[k] = t->mix_in[k].dist;
        return;
    }
    t->w = mm_mix_round(t->x, s, t->P, t->w, t->v.self_weight, t->mix_in, t->v.n_in,
                        t->cfg->algo == MM_ALGO_PUSHSUM, (double)t->n, t->cfg->clip_pull);
    for (int k = 0; k < t->v.n_in; k++) {
        t->dist[k] = t->mix_in[k].dist;
        if (t->mix_in[k].refused) { /* the transport's rule let it through: count it */
            t->status[k] = IN_REFUSED;
            t->mix_refused++;
            mm_warn("round %ld: peer %u's weight %.17g breaks the %s rule: not mixed", t->round,
                    t->v.in[k].peer, t->wk[k], mm_algo_name(t->cfg->algo));
        }
    }
}

static void release_used(mm__trainer *t)
{
    if (t->cfg->algo == MM_ALGO_ASYNC)
        return; /* async copied what it used and released it already */
    for (int k = 0; k < t->v.n_in; k++)
        if (t->status[k] == IN_READY || t->status[k] == IN_REFUSED)
            mm__mbox_release(t->mb, t->v.in[k].peer);
}

/* --compute-jitter (testing): a delay drawn from the peer's own seeded
 * stream after every local step, as `murmur plan --jitter` models it:
 * U(0, A), or S with probability P. Slept, not computed: it stands for a
 * slower machine without taking a core from the other peers. */
static void jitter_delay(mm__trainer *t)
{
    const mm_plan_jitter *j = &t->cfg->jitter;
    double u = mm_rng_uniform(&t->jitter_rng), d = 0;
    if (j->kind == MM_JITTER_UNIFORM)
        d = j->a * u;
    else if (j->kind == MM_JITTER_LONGTAIL)
        d = u < j->p ? j->a : 0;
    t->t_jitter += d;
    if (d <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double end = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + d;
    ts.tv_sec = (time_t)end;
    ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ; /* sleep on to the same end */
}

/* The round's H local steps, all of them even when a signal came: the
 * round is finished (docs/node.md, Faults), so its metrics line always has
 * a loss and a resumed run never finds half a round's steps. */
static void compute(mm__trainer *t)
{
    const mm_node_config *c = t->cfg;
    bool jitter = c->jitter.kind != MM_JITTER_NONE;
    if (!trains(t) && !jitter)
        return;
    for (int h = 0; h < c->local_steps; h++) {
        if (trains(t)) {
            float loss = mm_replica_step(&t->rep, NULL);
            t->step++;
            t->loss_sum += loss;
            t->loss_n++;
        }
        if (jitter)
            jitter_delay(t);
    }
}

/* Snapshot s = w x into buffer b and send it to this round's
 * out-neighbours (with consensus control, those on[] names; more sets MORE
 * in the vector header); or, with --compress, CHOCO's q (or a RESET). 0,
 * or -1 when the parameters cannot be encoded (NaN/Inf). */
static int send_snapshot(mm__trainer *t, int b, uint64_t e, bool more)
{
    if (t->choco) { /* (--compress is refused with --consensus-target) */
        char err[300];
        if (mm__choco_send(t->choco, t->mb, b, e, t->x, &t->v, err, sizeof err) == 0)
            return 0;
        mm_error("%s", err);
        return -1;
    }
    float *s = mm__mbox_buf(t->mb, b);
    mm_mix_scale_copy(s, (float)t->w, t->x, t->P);
    mm__mbox_publish(t->mb, b, e);
    mm_wire_vec meta = {.weight = t->w, .codec = MM_WIRE_CODEC_FP32, .count = t->P,
                        .flags = more ? MM_VEC_MORE : 0, .aux = t->adaptive ? t->cc.a : 0};
    for (int k = 0; k < t->v.n_out; k++)
        if (!t->adaptive || t->on[k]) /* adaptive: out[k] is in[k] (undirected_view) */
            mm__mbox_send(t->mb, t->v.out[k].peer, e, b, &meta, t->P * sizeof(float));
    return 0;
}

/* One exchange: snapshot, send, (compute), wait, mix, with the neighbours
 * on[] names (all but where consensus control dropped an edge); more sets
 * MORE in what we send. Returns -1 when stopping before anything was sent,
 * or when the parameters cannot be encoded (exit status 1). */
static int exchange(mm__trainer *t, uint64_t e, bool with_compute, bool more)
{
    double t0 = mm_time_now();
    set_phase(t, PH_SNAPSHOT);
    int b = mm__mbox_acquire(t->mb);
    if (b < 0) {
        set_phase(t, PH_IDLE);
        return -1;
    }
    double t1 = mm_time_now();
    float *s = mm__mbox_buf(t->mb, b);
    if (send_snapshot(t, b, e, more) != 0) {
        set_phase(t, PH_IDLE);
        t->exit_status = 1;
        return -1;
    }
    double t2 = mm_time_now();
    set_phase(t, PH_COMPUTE);
    if (with_compute)
        compute(t);
    double t3 = mm_time_now();
    set_phase(t, PH_WAIT);
    for (int k = 0; k < t->v.n_in; k++) {
        t->status[k] = t->on[k] ? IN_WAITING : IN_OFF;
        t->more[k] = false;
    }
    if (t->cfg->algo == MM_ALGO_ASYNC)
        gather_async(t, e);
    else
        wait_sync(t, e);
    double t4 = mm_time_now();
    set_phase(t, PH_MIX);
    mix(t, s);
    release_used(t);
    double t5 = mm_time_now();
    for (int k = 0; k < t->v.n_in; k++)
        if (t->status[k] == IN_READY)
            mm__iso_mixed(t->iso, t->v.in[k].peer, t5);
    t->t_wait += (t1 - t0) + (t4 - t3);
    t->t_comm += (t2 - t1) + (t5 - t4);
    t->t_compute += t3 - t2;
    return 0;
}

/* ---- all-reduce ------------------------------------------------------------ */

/* The ring's neighbours as this round's view, for the round line (nbrs). */
static void allreduce_view(mm__trainer *t)
{
    t->v.n_in = t->v.n_out = 0;
    if (t->n < 2)
        return;
    uint32_t left = (t->id + t->n - 1) % t->n, right = (t->id + 1) % t->n;
    t->v.in[t->v.n_in++] = (mm_neighbour){.peer = left};
    if (right != left)
        t->v.in[t->v.n_in++] = (mm_neighbour){.peer = right};
    for (int k = 0; k < t->v.n_in; k++) {
        t->status[k] = t->status0[k] = IN_READY; /* status0, dist0: what the round line reports */
        t->dist[k] = t->dist0[k] = NAN;
    }
    t->exchanges = 1; /* one all-reduce a round */
}

/* Waits for the all-reduce to end. It fails on its own when a ring
 * neighbour goes down or leaves; here it is failed when it has made no
 * progress (no chunk in or out) for --round-timeout since the later of
 * its last progress and the end of our compute (while a neighbour has
 * never been up, --start-timeout from the start instead). */
static void allreduce_wait(mm__trainer *t, double compute_end, mm__ar_view *v)
{
    bool aborted = false;
    double timeout = t->cfg->round_timeout_ms / 1000.0;
    for (;;) {
        mm__mbox_allreduce_view(t->mb, v);
        if (v->state != MM__AR_RUNNING)
            return;
        double from = v->last_progress > compute_end ? v->last_progress : compute_end;
        double deadline = from + timeout;
        for (int k = 0; k < t->v.n_in; k++) {
            mm__peer_view pv;
            mm__mbox_peer(t->mb, t->v.in[k].peer, &pv);
            if (!pv.ever_up && t->start_deadline > deadline)
                deadline = t->start_deadline;
        }
        if (aborted)
            deadline = mm_time_now() + 1; /* the loop answers at once */
        else if (mm_time_now() >= deadline) {
            char why[96];
            snprintf(why, sizeof why, "no progress for %.1f s (--round-timeout)",
                     mm_time_now() - from);
            mm__mbox_allreduce_abort(t->mb, why);
            aborted = true;
            continue;
        }
        mm__mbox_allreduce_wait(t->mb, deadline);
    }
}

/* One round of --algo allreduce (docs/node.md, "All-reduce"): the ring
 * averages x_t on the loop thread while this thread computes the local
 * steps, then x <- avg(x_t) + (x - x_t). Without training nothing changes
 * x meanwhile, so x itself is averaged in place (no copies). Returns 0, or
 * -2 when the all-reduce failed (t->ar_error says why). */
static int allreduce_round(mm__trainer *t)
{
    double t0 = mm_time_now();
    allreduce_view(t);
    mm__iso_round(t->iso, &t->v);
    set_phase(t, PH_SNAPSHOT);
    const float *s = t->x;
    float *out = t->x;
    if (trains(t)) {
        int b = mm__mbox_acquire(t->mb); /* never held: nothing else sends */
        float *snap = mm__mbox_buf(t->mb, b < 0 ? 0 : b);
        memcpy(snap, t->x, t->P * sizeof(float));
        s = snap;
        out = t->ar_out;
    }
    mm__mbox_allreduce(t->mb, (uint64_t)t->round, s, out);
    double t1 = mm_time_now();
    set_phase(t, PH_COMPUTE);
    compute(t);
    double t2 = mm_time_now();
    set_phase(t, PH_WAIT);
    mm__ar_view v;
    allreduce_wait(t, t2, &v);
    double t3 = mm_time_now();
    set_phase(t, PH_MIX);
    if (v.state != MM__AR_DONE) {
        snprintf(t->ar_error, sizeof t->ar_error, "%s", v.err[0] ? v.err : "all-reduce failed");
        return -2;
    }
    t->t_allreduce += v.seconds;
    if (out != t->x) /* x = avg(x_t) + (x - x_t) */
        for (size_t k = 0; k < t->P; k++)
            t->x[k] = out[k] + (t->x[k] - s[k]);
    double t4 = mm_time_now();
    for (int k = 0; k < t->v.n_in; k++) /* the average holds every peer's vector */
        mm__iso_mixed(t->iso, t->v.in[k].peer, t4);
    t->t_comm += (t1 - t0) + (t4 - t3);
    t->t_compute += t2 - t1;
    t->t_wait += t3 - t2;
    return 0;
}

/* ---- metrics, snapshots, checkpoints -------------------------------------- */

/* Every metrics line begins alike: what it is, whose, when. */
static void metrics_head(mm__trainer *t, const char *ev)
{
    mm_metrics_begin(&t->metrics, ev);
    mm_metrics_int(&t->metrics, "peer", t->id);
    mm_metrics_int(&t->metrics, "round", t->round);
    mm_metrics_int(&t->metrics, "step", t->step);
    mm_metrics_num(&t->metrics, "time", mm_time_now() - t->t_start);
}

static void evaluate(mm__trainer *t)
{
    const mm_node_config *c = t->cfg;
    double loss = NAN, acc = NAN;
    if (t->have_model && t->rep.shard.val_len > 0) {
        mm_eval_result r;
        mm_replica_evaluate(&t->rep, c->eval_windows, &r);
        loss = r.loss;
        acc = r.acc;
    }
    mm_sketch(t->x, t->P, c->sketch_seed, t->sketch, c->sketch_dim);
    mm_metrics *m = &t->metrics;
    metrics_head(t, "eval");
    mm_metrics_num(m, "val_loss", loss);
    mm_metrics_num(m, "val_bpb", loss / log(2.0));
    mm_metrics_num(m, "val_acc", acc);
    mm_metrics_num(m, "norm", sqrt(mm_mix_norm2(t->x, t->P)));
    mm_metrics_floats(m, "sketch", t->sketch, c->sketch_dim);
    mm_metrics_end(m);
    if (t->have_model)
        mm_info("eval round %ld: val loss %.4f, %.3f bits/byte, next-byte accuracy %.2f%%",
                t->round, loss, loss / log(2.0), 100 * acc);
}

static void write_snapshot(mm__trainer *t)
{
    char err[PATH_MAX + 128];
    if (mm_snapshot_write(t->cfg->run_dir, (int)t->id, t->round, t->x, t->P, err,
                          sizeof err) != 0)
        mm_error("snapshot: %s", err);
}

static int save_checkpoint(mm__trainer *t)
{
    if (!t->have_model)
        return 0;
    char path[PATH_MAX + 32], err[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/checkpoint.bin", t->dir);
    mm_ckpt_state st = {
        .step = t->step, .round = t->round, .peer_id = (int32_t)t->id,
        .n_peers = (int32_t)t->n, .pushsum_weight = t->w, .seed = t->cfg->train.seed,
    };
    if (mm_replica_save(&t->rep, path, st, err, sizeof err) != 0) {
        mm_error("checkpoint not written (the previous one is intact): %s", err);
        return -1;
    }
    return 0;
}

static void log_round(mm__trainer *t, double loss, float lr)
{
    mm_transport_stats st;
    mm__mbox_stats(t->mb, &st, false);

    /* neighbours and distances of the round's first exchange, the one
     * every neighbour takes part in, between the states the round starts
     * from (what the snapshots hold) */
    int present = 0, missing = 0;
    uint32_t *ids = t->ids;
    for (int k = 0; k < t->v.n_in; k++)
        if (t->status0[k] == IN_READY)
            ids[present++] = t->v.in[k].peer;
    uint32_t *miss = ids + present;
    for (int k = 0; k < t->v.n_in; k++)
        if (t->status0[k] != IN_READY)
            miss[missing++] = t->v.in[k].peer;

    mm_metrics *m = &t->metrics;
    metrics_head(t, "round");
    mm_metrics_num(m, "loss", loss);
    mm_metrics_num(m, "lr", lr);
    mm_metrics_int(m, "bytes_sent", (long long)st.bytes_sent);
    mm_metrics_int(m, "bytes_recv", (long long)st.bytes_recv);
    mm_metrics_num(m, "t_compute", t->t_compute);
    mm_metrics_num(m, "t_comm", t->t_comm);
    mm_metrics_num(m, "t_wait", t->t_wait);
    if (t->cfg->jitter.kind != MM_JITTER_NONE)
        mm_metrics_num(m, "t_jitter", t->t_jitter);
    if (t->cfg->algo == MM_ALGO_ALLREDUCE)
        mm_metrics_num(m, "t_allreduce", t->t_allreduce);
    mm_metrics_ids(m, "nbrs", ids, present);
    mm_metrics_ids(m, "missing", miss, missing);
    mm_metrics_obj_begin(m, "dist");
    for (int k = 0; k < t->v.n_in; k++)
        if (t->status0[k] == IN_READY && isfinite(t->dist0[k]))
            mm_metrics_obj_num(m, t->v.in[k].peer, t->dist0[k]);
    mm_metrics_obj_end(m);
    mm_metrics_int(m, "exchanges", t->exchanges);
    if (t->adaptive) {
        mm_metrics_int(m, "want", t->want);
        mm_metrics_num(m, "xi_est", mm_cc_estimate(&t->cc)); /* after this round's q: the next decision's */
        mm_metrics_num(m, "gamma", t->cc.gamma);
        mm_metrics_obj_begin(m, "nbr_exchanges");
        for (int k = 0; k < t->v.n_in; k++)
            mm_metrics_obj_num(m, t->v.in[k].peer, t->n_ex[k]);
        mm_metrics_obj_end(m);
    }
    if (t->cfg->algo == MM_ALGO_PUSHSUM)
        mm_metrics_num(m, "w", t->w);
    mm_metrics_end(m);

    char cc[96] = "";
    if (t->adaptive)
        snprintf(cc, sizeof cc, " | exchanges %d (wanted %d, Xi est %.3e)", t->exchanges,
                 t->want, mm_cc_estimate(&t->cc));
    else if (t->exchanges > 1)
        snprintf(cc, sizeof cc, " | exchanges %d", t->exchanges);
    if (t->cfg->log_every > 0 && (t->round % t->cfg->log_every == 0 || missing))
        mm_info("round %ld step %ld loss %.4f | neighbours %d/%d%s%s | compute %.1fs comm %.1fs wait %.1fs",
                t->round, t->step, loss, present, t->v.n_in, missing ? " (some missing)" : "",
                cc, t->t_compute, t->t_comm, t->t_wait);
}

/* What the transport refused, by reason (docs/protocol.md, "Refusals"), so
 * that a test or an operator can compare it with what was sent. */
static void write_refusals(mm__trainer *t, mm_metrics *m)
{
    mm_transport_stats st;
    mm__mbox_stats(t->mb, &st, true);
    const struct { const char *name; uint64_t v; } f[] = {
        {"bad_magic", st.bad_magic}, {"bad_version", st.bad_version},
        {"bad_type", st.bad_type}, {"bad_length", st.bad_length},
        {"bad_checksum", st.bad_checksum}, {"bad_fingerprint", st.bad_fingerprint},
        {"bad_round", st.bad_round}, {"bad_values", st.bad_values},
        {"bad_weight", st.bad_weight},
        {"bad_identity", st.bad_identity}, {"bad_tls", st.bad_tls},
        {"frame_timeouts", st.frame_timeouts}, {"peer_timeouts", st.peer_timeouts},
        {"flood_refused", st.flood_refused}, {"id_clash", st.id_clash},
        {"tls_mismatch", st.tls_mismatch}, {"pending_refused", st.pending_refused},
        {"bad_codec", st.bad_codec}, {"bad_config", st.bad_config},
        {"bad_topology", st.bad_topology},
    };
    uint64_t total = 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        total += f[i].v;
    mm_metrics_int(m, "conns_accepted", (long long)st.conns_accepted);
    mm_metrics_int(m, "tls_queued_peak", (long long)st.tls_queued_peak);
    mm_metrics_int(m, "refused", (long long)total);
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        mm_metrics_int(m, f[i].name, (long long)f[i].v);
}

static void write_start(mm__trainer *t)
{
    const mm_node_config *c = t->cfg;
    mm_metrics *m = &t->metrics;
    mm_metrics_begin(m, "start");
    mm_metrics_int(m, "peer", t->id);
    mm_metrics_int(m, "n_peers", t->n);
    mm_metrics_int(m, "params", (long long)t->P);
    mm_metrics_str(m, "algo", mm_algo_name(c->algo));
    mm_metrics_str(m, "topology", c->topology);
    char digest[2 * MM_SHA256_LEN + 1];
    mm_sha256_hex(mm_topo_digest(t->topo), digest);
    mm_metrics_str(m, "topology_digest", digest);
    /* the float results depend on it (docs/metrics.md) */
    mm_metrics_str(m, "blas_kernel", mm_blas_kernel());
    mm_metrics_int(m, "sketch_dim", c->sketch_dim);
    mm_metrics_int(m, "sketch_seed", (long long)c->sketch_seed);
    mm_metrics_int(m, "resumed_round", t->round);
    mm_metrics_int(m, "local_steps", c->local_steps);
    mm_metrics_int(m, "gossip_steps", c->gossip_steps);
    mm_metrics_int(m, "exchange_stride", (long long)t->stride);
    if (c->gossip_schedule.n) {
        char sched[MM_GSCHED_MAX * 32];
        size_t len = 0;
        for (int i = 0; i < c->gossip_schedule.n && len < sizeof sched; i++)
            len += (size_t)snprintf(sched + len, sizeof sched - len, "%s%ld:%d", i ? "," : "",
                                    c->gossip_schedule.from[i], c->gossip_schedule.steps[i]);
        mm_metrics_str(m, "gossip_schedule", sched);
    }
    if (t->adaptive) {
        mm_metrics_num(m, "consensus_target", c->consensus_target);
        mm_metrics_int(m, "max_gossip_steps", c->max_gossip_steps);
    }
    if (t->choco) {
        mm_metrics_str(m, "compress", mm__choco_spec(t->choco));
        mm_metrics_num(m, "consensus_step", mm__choco_gamma(t->choco));
        mm_metrics_int(m, "choco_bytes", (long long)mm__choco_bytes(t->choco));
        mm_metrics_int(m, "choco_in_peers", mm__choco_in_peers(t->choco));
    }
    if (t->have_model) {
        /* what it takes to evaluate a snapshot offline (murmur report) */
        mm_metrics_int(m, "layers", c->train.model.n_layer);
        mm_metrics_int(m, "width", c->train.model.d_model);
        mm_metrics_int(m, "heads", c->train.model.n_head);
        mm_metrics_int(m, "ctx", c->train.model.n_ctx);
        mm_metrics_int(m, "batch", c->train.batch);
        mm_metrics_int(m, "eval_windows", c->eval_windows);
        if (c->train.data_dir) /* (pure gossip without a corpus: nothing to evaluate with) */
            mm_metrics_str(m, "data", c->train.data_dir);
        mm_metrics_str(m, "partition", mm_partition_name(&c->train.partition));
    }
    mm_metrics_num(m, "time", 0);
    mm_metrics_end(m);
}

/* Mixed with none of its neighbours for too long (isolation.h): the
 * warning is logged; this line says the same in the metrics. */
static void write_isolated(mm__trainer *t)
{
    mm_metrics *m = &t->metrics;
    metrics_head(t, "isolated");
    mm__iso_fields(t->iso, t->mb, m, MM__ISO_OK, mm__iso_alone(t->iso, mm_time_now()));
    mm_metrics_end(m);
}

/* reason: why it stopped (done, signal, nonfinite, allreduce). A peer that stopped
 * on its own or on a signal but could not mix (isolation.h) ends `refused`
 * or `isolated` instead, with status 3 or 4 unless an error already set 1. */
static void write_end(mm__trainer *t, const char *reason)
{
    long peak_kib = mm_peak_rss_kib();
    mm_metrics *m = &t->metrics;
    double now = mm_time_now();
    /* nonfinite and allreduce are errors of their own: no verdict over them */
    bool judged = !strcmp(reason, "done") || !strcmp(reason, "signal");
    mm__iso_verdict v = judged ? mm__iso_verdict_at(t->iso, t->mb, now) : MM__ISO_OK;
    metrics_head(t, "end");
    if (v != MM__ISO_OK) {
        mm_metrics_str(m, "reason", v == MM__ISO_REFUSED ? "refused" : "isolated");
        mm_metrics_str(m, "stopped", reason);
    } else {
        mm_metrics_str(m, "reason", reason);
    }
    if (t->ar_error[0])
        mm_metrics_str(m, "error", t->ar_error);
    mm_metrics_int(m, "max_rss_kb", peak_kib);
    mm_metrics_int(m, "skipped_sends", (long long)mm__mbox_skipped_sends(t->mb));
    mm_metrics_int(m, "deferred_sends", (long long)mm__mbox_deferred_sends(t->mb));
    mm_metrics_int(m, "stale_dropped", (long long)t->stale_dropped);
    mm_metrics_int(m, "mix_refused", (long long)t->mix_refused);
    if (t->choco) {
        mm__choco_stats cs;
        mm__choco_get_stats(t->choco, &cs);
        mm_metrics_int(m, "resets_sent", (long long)cs.resets_sent);
        mm_metrics_int(m, "resets_recv", (long long)cs.resets_recv);
        mm_metrics_int(m, "copies_ignored", (long long)cs.ignored);
        mm_metrics_int(m, "copies_diverged", (long long)cs.diverged);
    }
    write_refusals(t, m);
    mm__iso_fields(t->iso, t->mb, m, v, -1);
    mm_metrics_end(m);
    mm__iso_log_verdict(t->iso, t->mb, v, now);
    if (v != MM__ISO_OK && !t->exit_status)
        t->exit_status = v == MM__ISO_REFUSED ? MM__EXIT_REFUSED : MM__EXIT_ISOLATED;
    mm_info("done: round %ld, step %ld, %.1fs (compute %.1fs, comm %.1fs, wait %.1fs), peak RSS %ld MiB",
            t->round, t->step, mm_time_now() - t->t_start, t->t_compute, t->t_comm, t->t_wait,
            peak_kib / 1024);
}

/* ---- the thread ------------------------------------------------------------ */

/* After the round's first exchange: what the round line reports of it, and
 * q = sum_j W_ij ||x_i - x_j||^2 over the neighbours that came, scaled up to
 * all of them (NaN when none came): the estimator's input. */
static double first_exchange(mm__trainer *t)
{
    double wq = 0, w_all = 0, w_in = 0;
    for (int k = 0; k < t->v.n_in; k++) {
        t->status0[k] = t->status[k];
        t->dist0[k] = t->dist[k];
        w_all += t->v.in[k].weight;
        if (t->status[k] == IN_READY && isfinite(t->dist[k])) {
            wq += t->v.in[k].weight * t->dist[k] * t->dist[k];
            w_in += t->v.in[k].weight;
        }
    }
    return w_in > 0 ? wq * w_all / w_in : NAN;
}

/* Consensus control after an exchange: average the gossiped estimate like
 * the parameters (a missing neighbour's weight to self), and keep for the
 * next exchange only the edges whose both ends said MORE in this one and
 * whose vector came. Returns the number of edges left. */
static int agree_next(mm__trainer *t, bool first, double q, bool more)
{
    double a = t->cc.a, mixed = a;
    for (int k = 0; k < t->v.n_in; k++)
        if (t->status[k] == IN_READY)
            mixed += t->v.in[k].weight * (t->aux[k] - a);
    mm_cc_fold(&t->cc, mixed, q, first);
    int live = 0;
    for (int k = 0; k < t->v.n_in; k++) {
        t->on[k] = t->on[k] && more && t->status[k] == IN_READY && t->more[k];
        live += t->on[k];
    }
    return live;
}

/* A neighbour that says MORE to a peer without --consensus-target runs
 * another configuration: say so once (its edge gets one exchange a round). */
static void warn_more(mm__trainer *t)
{
    for (int k = 0; k < t->v.n_in && !t->more_warned; k++)
        if (t->status[k] == IN_READY && t->more[k]) {
            mm_warn("peer %u asks for more exchanges (MORE): is it running --consensus-target? "
                    "This peer is not, and does one exchange a round with it", t->v.in[k].peer);
            t->more_warned = true;
        }
}

/* One round: neighbours, its exchanges, its metrics line. -1 when stopping
 * (the round is abandoned), 1 when the round was skipped by fast-forward.
 * Exchanges: --gossip-steps G, or the schedule's G for this round, or with
 * --consensus-target as many as this peer wants and each neighbour agrees
 * to (docs/node.md, "Consensus control"). -2 when an all-reduce failed (the
 * run ends). */
static int run_round(mm__trainer *t)
{
    const mm_node_config *c = t->cfg;
    if (c->algo == MM_ALGO_ALLREDUCE) {
        t->loss_sum = 0;
        t->loss_n = 0;
        float lr = t->have_model ? mm_adamw_lr(&c->train.adamw, t->rep.opt.step) : 0;
        int r = allreduce_round(t);
        if (r == 0)
            log_round(t, t->loss_n ? t->loss_sum / t->loss_n : NAN, lr);
        return r;
    }
    if (c->algo != MM_ALGO_ASYNC) {
        long r = fast_forward(t, t->round);
        if (r != t->round) {
            t->round = r;
            return 1; /* the new round has other neighbours */
        }
    }
    want_round(t, t->round);
    mm__iso_round(t->iso, &t->v);
    t->loss_sum = 0;
    t->loss_n = 0;
    float lr = t->have_model ? mm_adamw_lr(&c->train.adamw, t->rep.opt.step) : 0;
    int G = c->gossip_schedule.n ? mm_gsched_steps(&c->gossip_schedule, t->round)
            : c->gossip_steps > 0 ? c->gossip_steps : 1;
    if (t->adaptive) {
        t->want = mm_cc_round(&t->cc, (uint64_t)t->round);
        /* (a time-varying graph checked only over a sample of its rounds) */
        G = undirected_view(&t->v) ? t->want : 1;
    }
    for (int k = 0; k < t->v.n_in; k++) {
        t->on[k] = true;
        t->n_ex[k] = 0;
    }
    t->exchanges = 0;
    for (int g = 0; g < G; g++) {
        bool more = t->adaptive && g + 1 < G && !stopping(t);
        if (exchange(t, (uint64_t)t->round * t->stride + (uint64_t)g, g == 0, more) != 0)
            return -1;
        t->exchanges++;
        for (int k = 0; k < t->v.n_in; k++)
            t->n_ex[k] += t->on[k]; /* what this end believes the edge had */
        double q = g == 0 ? first_exchange(t) : NAN;
        if (!t->adaptive) {
            if (!t->more_warned)
                warn_more(t);
        } else if (agree_next(t, g == 0, q, more) == 0) {
            break;
        }
    }
    log_round(t, t->loss_n ? t->loss_sum / t->loss_n : NAN, lr);
    return 0;
}

void mm__trainer_run(mm__trainer *t, mm__mbox *mb)
{
    const mm_node_config *c = t->cfg;
    t->mb = mb;
    t->t_start = mm_time_now();
    t->start_deadline = t->t_start + c->start_timeout_ms / 1000.0;
    mm__iso_start(t->iso, t->t_start);
    write_start(t);
    if (t->round == 0 && c->eval_every > 0)
        evaluate(t);
    if (t->round == 0 && c->snapshot_every > 0)
        write_snapshot(t);

    bool checkpoint_failed = false, params_lost = false;
    while (t->round < c->rounds && !stopping(t)) {
        if (mm_topo_round(t->topo, t->id, (uint64_t)t->round, &t->v) != 0) {
            mm_error("topology has no round %ld for peer %u", t->round, t->id);
            t->exit_status = 1;
            break;
        }
        int r = run_round(t);
        if (r == -2) {
            /* Synchronous: a peer that is gone ends the run for everyone.
             * x holds an unaveraged round: no checkpoint of it (the last
             * one is kept), and an exit status that says so, unless this
             * peer was being stopped anyway. */
            mm_error("round %ld: %s; stopping, the last checkpoint is kept", t->round,
                     t->ar_error);
            if (!stopping(t))
                t->exit_status = 1;
            break;
        }
        if (r < 0)
            break; /* stopping: this round is abandoned */
        if (r > 0)
            continue;
        if (mm__iso_check(t->iso, t->mb, mm_time_now()))
            write_isolated(t);
        /* The wire refuses NaN/Inf, but a finite vector of absurd norm
         * mixed in (without --clip-pull) can still overflow the model. Such
         * a replica is lost: stop before a checkpoint overwrites the last
         * good one and before our vectors are refused by every neighbour. */
        uint64_t bad_at;
        if (!mm_wire_all_finite(t->x, t->P, &bad_at)) {
            mm_error("round %ld: parameter %" PRIu64 " of %zu is NaN or Inf after mixing and the "
                     "update (a neighbour's vector of absurd norm? see --clip-pull); stopping, "
                     "the last checkpoint is kept", t->round, bad_at, t->P);
            t->exit_status = 1;
            params_lost = true;
            break;
        }
        t->round++;
        if (c->eval_every > 0 && t->round % c->eval_every == 0)
            evaluate(t);
        if (c->snapshot_every > 0 && t->round % c->snapshot_every == 0)
            write_snapshot(t);
        if (c->checkpoint_every > 0 && t->round % c->checkpoint_every == 0)
            checkpoint_failed = save_checkpoint(t) != 0;
    }
    set_phase(t, PH_IDLE);

    bool ar_failed = t->ar_error[0] != 0;
    if (!params_lost && !ar_failed && c->eval_every > 0 && t->round % c->eval_every != 0)
        evaluate(t);
    if (!params_lost && !ar_failed && save_checkpoint(t) != 0)
        checkpoint_failed = true;
    write_end(t, params_lost ? "nonfinite" : ar_failed ? "allreduce" : stopping(t) ? "signal" : "done");
    if (checkpoint_failed && !t->exit_status)
        t->exit_status = 1;
    mm__mbox_finish(mb);
}
