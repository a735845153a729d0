/* The training thread: one round of gossip training at a time.
 *
 *   1. copy a snapshot s = w * x of our parameters and hand it to the loop,
 *      which sends it to this round's out-neighbours;
 *   2. meanwhile compute H local optimizer steps on x (x becomes x + delta);
 *   3. wait (bounded) for the in-neighbours' vectors of this round;
 *   4. x <- mix(s, neighbours) + delta, in one pass per neighbour.
 *
 * With push-sum, x holds the de-biased model z and w the push-sum weight;
 * what travels is w*z and w. With dpsgd and async, w stays 1. docs/node.md
 * derives the update. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gossip/log.h"
#include "gossip/mix.h"
#include "gossip/sketch.h"
#include "gossip/wire.h"
#include "model/eval.h"
#include "model/sha256.h"
#include "node/node_internal.h"
#include "node/peak_rss.h"

/* IN_REFUSED: it arrived (its buffer must go back) but the mix refused its
 * weight, so it counts as missing. */
enum { IN_WAITING, IN_READY, IN_MISSING, IN_REFUSED };

typedef struct {
    mm_round_view v, next;  /* this round's neighbours, and the next round's */
    mm_neighbour *in_buf, *out_buf;
    mm_mix_input *mix_in;
    int *status;
    const float **vec;     /* the vector to mix for in[k] */
    double *wk;            /* its push-sum weight */
    double *dist;          /* ||z_k - z_t|| */
    uint32_t *ids;         /* scratch */
    float *sketch;
    double loss_sum;
    int loss_n;
    bool started;          /* the first exchange is over: stop waiting for peers to appear */
    double start_deadline;
} trainer;

static bool stopping(node *nd) { return atomic_load(&nd->stop) > 0; }

static void timespec_at(double t_mono, struct timespec *ts)
{
    /* pthread_cond_timedwait uses CLOCK_REALTIME by default: convert. */
    struct timespec now_real;
    clock_gettime(CLOCK_REALTIME, &now_real);
    double wait = t_mono - node_now();
    if (wait < 0)
        wait = 0;
    double t = (double)now_real.tv_sec + (double)now_real.tv_nsec * 1e-9 + wait;
    ts->tv_sec = (time_t)t;
    ts->tv_nsec = (long)((t - (double)ts->tv_sec) * 1e9);
}

/* A snapshot buffer that no send still reads. Bounded: a send to a peer
 * that stops reading fails when the transport declares it down. */
static int acquire_snapshot(node *nd)
{
    pthread_mutex_lock(&nd->mu);
    for (;;) {
        for (int b = 0; b < NODE_SNAP_BUFS; b++) {
            if (nd->refs[b] == 0) {
                nd->snap_exchange[b] = -1; /* being written: the loop must not send it */
                pthread_mutex_unlock(&nd->mu);
                return b;
            }
        }
        if (stopping(nd)) {
            pthread_mutex_unlock(&nd->mu);
            return -1;
        }
        /* Sends still waiting for a peer to come up are for exchanges we
         * have left behind: their buffers are needed more now. */
        bool freed = false;
        for (int b = 0; b < NODE_SNAP_BUFS; b++) {
            node_drop_pending_on(nd, b);
            freed = freed || nd->refs[b] == 0;
        }
        if (freed)
            continue;
        struct timespec ts;
        timespec_at(node_now() + 0.5, &ts);
        pthread_cond_timedwait(&nd->cv, &nd->mu, &ts);
    }
}

static void want_round(node *nd, trainer *tr, long round)
{
    /* This round's and the next round's neighbours, so that time-varying
     * topologies find their next connections already open. */
    int n = 0;
    for (int k = 0; k < tr->v.n_in; k++) tr->ids[n++] = tr->v.in[k].peer;
    for (int k = 0; k < tr->v.n_out; k++) tr->ids[n++] = tr->v.out[k].peer;
    if (mm_topo_round(nd->topo, nd->id, (uint64_t)round + 1, &tr->next) == 0) {
        for (int k = 0; k < tr->next.n_in; k++) tr->ids[n++] = tr->next.in[k].peer;
        for (int k = 0; k < tr->next.n_out; k++) tr->ids[n++] = tr->next.out[k].peer;
    }
    int m = 0; /* dedupe: degrees are small */
    for (int i = 0; i < n; i++) {
        int dup = tr->ids[i] == nd->id;
        for (int j = 0; j < m && !dup; j++)
            dup = tr->ids[j] == tr->ids[i];
        if (!dup)
            tr->ids[m++] = tr->ids[i];
    }
    node_post_want(nd, tr->ids, m);
}

/* dpsgd/pushsum: when every in-neighbour of this round has already sent a
 * vector of a later round, they have all moved past us (we were slow, or we
 * restarted from an older checkpoint): jump to the earliest of their rounds
 * instead of mixing with nobody round after round. A later vector from a
 * peer that is not our partner this round proves nothing: in a time-varying
 * graph it may simply be early. Returns the round to run. */
static long fast_forward(node *nd, long round)
{
    uint64_t g = (uint64_t)nd->cfg->gossip_steps;
    long target = -1;
    pthread_mutex_lock(&nd->mu);
    for (int k = 0; k < nd->ff_view.n_in; k++) {
        inbox_slot *s = &nd->inbox[nd->ff_view.in[k].peer];
        long r = s->present ? (long)(s->exchange / g) : -1;
        if (r <= round) {
            target = -1;
            break;
        }
        if (target < 0 || r < target)
            target = r;
    }
    pthread_mutex_unlock(&nd->mu);
    if (target <= round)
        return round;
    mm_info("neighbours are at round %ld: skipping from round %ld", target, round);
    return target;
}

static void post_release(node *nd, uint32_t peer)
{
    node_cmd c = {.kind = CMD_RELEASE, .peer = peer};
    node_post(nd, &c);
}

/* Wait for the in-neighbours' vectors of exchange e (synchronous modes). */
static void wait_sync(node *nd, trainer *tr, uint64_t e)
{
    const mm_node_config *c = nd->cfg;
    double deadline = node_now() + c->round_timeout_ms / 1000.0;
    /* While peers are starting, wait for those never seen up as long as
     * the start timeout allows. */
    pthread_mutex_lock(&nd->mu);
    for (int k = 0; k < tr->v.n_in + tr->v.n_out; k++) {
        uint32_t p = k < tr->v.n_in ? tr->v.in[k].peer : tr->v.out[k - tr->v.n_in].peer;
        if (!nd->ever_up[p] && tr->start_deadline > deadline)
            deadline = tr->start_deadline;
    }
    pthread_mutex_unlock(&nd->mu);
    uint32_t *stale = tr->ids; /* scratch: no round has more than max_degree stale */

    pthread_mutex_lock(&nd->mu);
    for (;;) {
        int waiting = 0, n_stale = 0;
        for (int k = 0; k < tr->v.n_in; k++) {
            if (tr->status[k] != IN_WAITING)
                continue;
            uint32_t p = tr->v.in[k].peer;
            inbox_slot *s = &nd->inbox[p];
            if (s->present && s->exchange == e) {
                tr->status[k] = IN_READY;
                tr->vec[k] = s->vec;
                tr->wk[k] = s->weight;
                continue;
            }
            if (s->present && s->exchange > e) {
                tr->status[k] = IN_MISSING; /* it has moved on without us */
                mm_debug("exchange %llu: peer %u already sent exchange %llu: missing",
                         (unsigned long long)e, p, (unsigned long long)s->exchange);
                continue;
            }
            if (s->present) {
                s->present = false;         /* from a round we gave up on */
                stale[n_stale++] = p;
                nd->stale_dropped++;
            }
            /* Reported down or gone: not worth waiting for, unless it has
             * never been up and peers are still starting. */
            node_peer_state st = nd->peer_state[p];
            bool starting = !nd->ever_up[p] && node_now() < tr->start_deadline;
            if ((st == PEER_GONE || st == PEER_DOWN) && !starting) {
                tr->status[k] = IN_MISSING;
                mm_debug("exchange %llu: peer %u is %s: missing", (unsigned long long)e, p,
                         st == PEER_GONE ? "gone" : "down");
                continue;
            }
            waiting++;
        }
        /* Our own vector must leave too: a send still pending because its
         * peer is not up yet holds the round open (a synchronous round is
         * an exchange), unless that peer was reported down or gone. */
        for (int k = 0; k < tr->v.n_out; k++) {
            uint32_t p = tr->v.out[k].peer;
            if (!nd->has_pending[p] || nd->pending[p].exchange != e)
                continue;
            node_peer_state st = nd->peer_state[p];
            bool starting = !nd->ever_up[p] && node_now() < tr->start_deadline;
            if ((st != PEER_GONE && st != PEER_DOWN) || starting)
                waiting++;
        }
        if (n_stale) {
            pthread_mutex_unlock(&nd->mu);
            for (int i = 0; i < n_stale; i++)
                post_release(nd, stale[i]);
            pthread_mutex_lock(&nd->mu);
            continue;
        }
        if (!waiting || stopping(nd) || node_now() >= deadline)
            break;
        struct timespec ts;
        timespec_at(deadline, &ts);
        pthread_cond_timedwait(&nd->cv, &nd->mu, &ts);
    }
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->status[k] == IN_WAITING)
            tr->status[k] = IN_MISSING;
    pthread_mutex_unlock(&nd->mu);
}

/* async: take the newest copy of each in-neighbour, never wait. */
static void gather_async(node *nd, trainer *tr, uint64_t e)
{
    uint32_t *taken = tr->ids;
    int n_taken = 0;
    pthread_mutex_lock(&nd->mu);
    for (int k = 0; k < tr->v.n_in; k++) {
        uint32_t p = tr->v.in[k].peer;
        inbox_slot *s = &nd->inbox[p];
        if (s->present) {
            if (!nd->latest[p])
                nd->latest[p] = malloc(nd->P * sizeof(float));
            if (nd->latest[p]) {
                memcpy(nd->latest[p], s->vec, nd->P * sizeof(float));
                nd->latest_exchange[p] = (int64_t)s->exchange;
                nd->latest_weight[p] = s->weight;
            }
            s->present = false;
            taken[n_taken++] = p;
        }
        bool fresh = nd->latest[p] && nd->latest_exchange[p] >= 0 &&
                     (int64_t)e - nd->latest_exchange[p] <= nd->cfg->staleness;
        tr->status[k] = fresh ? IN_READY : IN_MISSING;
        tr->vec[k] = fresh ? nd->latest[p] : NULL;
        tr->wk[k] = fresh ? nd->latest_weight[p] : 0;
    }
    pthread_mutex_unlock(&nd->mu);
    for (int i = 0; i < n_taken; i++)
        post_release(nd, taken[i]);
}

static void mix(node *nd, trainer *tr, const float *s)
{
    for (int k = 0; k < tr->v.n_in; k++) {
        bool ready = tr->status[k] == IN_READY;
        tr->mix_in[k] = (mm_mix_input){.x = ready ? tr->vec[k] : NULL,
                                       .weight = tr->v.in[k].weight,
                                       .w = ready ? tr->wk[k] : 1.0};
    }
    nd->w = mm_mix_round(nd->x, s, nd->P, nd->w, tr->v.self_weight, tr->mix_in, tr->v.n_in,
                         nd->cfg->algo == MM_ALGO_PUSHSUM, (double)nd->n, nd->cfg->clip_pull);
    for (int k = 0; k < tr->v.n_in; k++) {
        tr->dist[k] = tr->mix_in[k].dist;
        if (tr->mix_in[k].refused) { /* the transport's rule let it through: count it */
            tr->status[k] = IN_REFUSED;
            nd->mix_refused++;
            mm_warn("round %ld: peer %u's weight %.17g breaks the %s rule: not mixed",
                    nd->round, tr->v.in[k].peer, tr->wk[k], mm_algo_name(nd->cfg->algo));
        }
    }
}

static void release_used(node *nd, trainer *tr)
{
    if (nd->cfg->algo == MM_ALGO_ASYNC)
        return; /* async copied what it used and released it already */
    uint32_t *rel = tr->ids;
    int n = 0;
    pthread_mutex_lock(&nd->mu);
    for (int k = 0; k < tr->v.n_in; k++) {
        if (tr->status[k] != IN_READY && tr->status[k] != IN_REFUSED)
            continue;
        nd->inbox[tr->v.in[k].peer].present = false;
        rel[n++] = tr->v.in[k].peer;
    }
    pthread_mutex_unlock(&nd->mu);
    for (int i = 0; i < n; i++)
        post_release(nd, rel[i]);
}

static void compute(node *nd, trainer *tr)
{
    const mm_node_config *c = nd->cfg;
    if (c->no_train || !nd->have_model)
        return;
    int T = c->model.n_ctx;
    for (int h = 0; h < c->local_steps && !stopping(nd); h++) {
        mm_batch_sample(&nd->shard, &nd->rng, nd->tokens, c->batch, T);
        float loss = mm_model_forward(&nd->model, nd->tokens, c->batch, T);
        mm_model_backward(&nd->model);
        mm_adamw_step(&nd->opt, &nd->model, nd->model.params, nd->model.grads);
        nd->step++;
        tr->loss_sum += loss;
        tr->loss_n++;
    }
}

/* One exchange: snapshot, send, (compute), wait, mix. Returns -1 when
 * stopping before anything was sent. */
static int exchange(node *nd, trainer *tr, uint64_t e, bool with_compute)
{
    const mm_node_config *c = nd->cfg;
    double t0 = node_now();
    int b = acquire_snapshot(nd);
    if (b < 0)
        return -1;
    double t1 = node_now();
    float *s = nd->snap[b];
    mm_mix_scale_copy(s, (float)nd->w, nd->x, nd->P);
    pthread_mutex_lock(&nd->mu);
    nd->snap_exchange[b] = (int64_t)e;
    pthread_mutex_unlock(&nd->mu);
    for (int k = 0; k < tr->v.n_out; k++) {
        node_cmd cmd = {.kind = CMD_SEND, .peer = tr->v.out[k].peer, .exchange = e, .buf = b,
                        .weight = nd->w};
        node_post_send(nd, &cmd);
    }
    double t2 = node_now();
    if (with_compute)
        compute(nd, tr);
    double t3 = node_now();
    for (int k = 0; k < tr->v.n_in; k++)
        tr->status[k] = IN_WAITING;
    if (c->algo == MM_ALGO_ASYNC)
        gather_async(nd, tr, e);
    else
        wait_sync(nd, tr, e);
    double t4 = node_now();
    mix(nd, tr, s);
    release_used(nd, tr);
    double t5 = node_now();
    tr->started = true;
    nd->t_wait += (t1 - t0) + (t4 - t3);
    nd->t_comm += (t2 - t1) + (t5 - t4);
    nd->t_compute += t3 - t2;
    return 0;
}

/* Every metrics line begins alike: what it is, whose, when. */
static void metrics_head(node *nd, const char *ev, double t_start)
{
    mm_metrics_begin(&nd->metrics, ev);
    mm_metrics_int(&nd->metrics, "peer", nd->id);
    mm_metrics_int(&nd->metrics, "round", nd->round);
    mm_metrics_int(&nd->metrics, "step", nd->step);
    mm_metrics_num(&nd->metrics, "time", node_now() - t_start);
}

static void evaluate(node *nd, trainer *tr, double t_start)
{
    const mm_node_config *c = nd->cfg;
    double loss = NAN, acc = NAN;
    if (nd->have_model && nd->shard.val_len > 0) {
        mm_eval_result r;
        mm_evaluate(&nd->model, &nd->shard, c->eval_windows, c->batch, c->model.n_ctx, nd->tokens, &r);
        loss = r.loss;
        acc = r.acc;
    }
    mm_sketch(nd->x, nd->P, c->sketch_seed, tr->sketch, c->sketch_dim);
    mm_metrics *m = &nd->metrics;
    metrics_head(nd, "eval", t_start);
    mm_metrics_num(m, "val_loss", loss);
    mm_metrics_num(m, "val_bpb", loss / log(2.0));
    mm_metrics_num(m, "val_acc", acc);
    mm_metrics_num(m, "norm", sqrt(mm_mix_norm2(nd->x, nd->P)));
    mm_metrics_floats(m, "sketch", tr->sketch, c->sketch_dim);
    mm_metrics_end(m);
    if (nd->have_model)
        mm_info("eval round %ld: val loss %.4f, %.3f bits/byte, next-byte accuracy %.2f%%",
                nd->round, loss, loss / log(2.0), 100 * acc);
}

static void write_snapshot(node *nd)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/snap", nd->dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/snap/r%08ld.bin", nd->dir, nd->round);
    size_t len = 32 + nd->P * sizeof(float) + 32;
    uint8_t *buf = malloc(len);
    if (!buf) {
        mm_error("snapshot: out of memory");
        return;
    }
    uint32_t peer = nd->id, reserved = 0;
    uint64_t round = (uint64_t)nd->round, n = nd->P;
    memcpy(buf, "MMSNAP01", 8);
    memcpy(buf + 8, &peer, 4);
    memcpy(buf + 12, &reserved, 4);
    memcpy(buf + 16, &round, 8);
    memcpy(buf + 24, &n, 8);
    memcpy(buf + 32, nd->x, nd->P * sizeof(float));
    mm_sha256(buf, len - 32, buf + len - 32);
    char err[256];
    if (mm_write_atomic(path, buf, len, err, sizeof err) != 0)
        mm_error("snapshot: %s", err);
    free(buf);
}

static int save_checkpoint(node *nd)
{
    if (!nd->have_model)
        return 0;
    char path[1200], err[512];
    snprintf(path, sizeof path, "%s/checkpoint.bin", nd->dir);
    mm_ckpt_state st = {
        .step = nd->step, .round = nd->round, .peer_id = (int32_t)nd->id,
        .n_peers = (int32_t)nd->n, .pushsum_weight = nd->w, .rng = nd->rng, .seed = nd->cfg->seed,
    };
    if (mm_checkpoint_save(path, &nd->model, &nd->opt, &st, err, sizeof err) != 0) {
        mm_error("checkpoint not written (the previous one is intact): %s", err);
        return -1;
    }
    return 0;
}

static void log_round(node *nd, trainer *tr, double t_start, double loss, float lr)
{
    mm_transport_stats st;
    pthread_mutex_lock(&nd->mu);
    st = nd->stats;
    pthread_mutex_unlock(&nd->mu);

    int present = 0, missing = 0;
    uint32_t *ids = tr->ids;
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->status[k] == IN_READY)
            ids[present++] = tr->v.in[k].peer;
    uint32_t *miss = ids + present;
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->status[k] != IN_READY)
            miss[missing++] = tr->v.in[k].peer;

    mm_metrics *m = &nd->metrics;
    metrics_head(nd, "round", t_start);
    mm_metrics_num(m, "loss", loss);
    mm_metrics_num(m, "lr", lr);
    mm_metrics_int(m, "bytes_sent", (long long)st.bytes_sent);
    mm_metrics_int(m, "bytes_recv", (long long)st.bytes_recv);
    mm_metrics_num(m, "t_compute", nd->t_compute);
    mm_metrics_num(m, "t_comm", nd->t_comm);
    mm_metrics_num(m, "t_wait", nd->t_wait);
    mm_metrics_ids(m, "nbrs", ids, present);
    mm_metrics_ids(m, "missing", miss, missing);
    mm_metrics_obj_begin(m, "dist");
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->status[k] == IN_READY && isfinite(tr->dist[k]))
            mm_metrics_obj_num(m, tr->v.in[k].peer, tr->dist[k]);
    mm_metrics_obj_end(m);
    if (nd->cfg->algo == MM_ALGO_PUSHSUM)
        mm_metrics_num(m, "w", nd->w);
    mm_metrics_end(m);

    if (nd->cfg->log_every > 0 && (nd->round % nd->cfg->log_every == 0 || missing))
        mm_info("round %ld step %ld loss %.4f | neighbours %d/%d%s | compute %.1fs comm %.1fs wait %.1fs",
                nd->round, nd->step, loss, present, tr->v.n_in, missing ? " (some missing)" : "",
                nd->t_compute, nd->t_comm, nd->t_wait);
}

/* What the transport refused, by reason (docs/protocol.md, "Refusals"), so
 * that a test or an operator can compare it with what was sent. */
static void write_refusals(node *nd, mm_metrics *m)
{
    node_refresh_stats(nd);
    mm_transport_stats st;
    pthread_mutex_lock(&nd->mu);
    st = nd->stats;
    pthread_mutex_unlock(&nd->mu);
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

static void write_start(node *nd)
{
    const mm_node_config *c = nd->cfg;
    mm_metrics *m = &nd->metrics;
    mm_metrics_begin(m, "start");
    mm_metrics_int(m, "peer", nd->id);
    mm_metrics_int(m, "n_peers", nd->n);
    mm_metrics_int(m, "params", (long long)nd->P);
    mm_metrics_str(m, "algo", mm_algo_name(c->algo));
    mm_metrics_str(m, "topology", c->topology);
    mm_metrics_int(m, "sketch_dim", c->sketch_dim);
    mm_metrics_int(m, "sketch_seed", (long long)c->sketch_seed);
    mm_metrics_int(m, "resumed_round", nd->round);
    mm_metrics_int(m, "local_steps", c->local_steps);
    mm_metrics_int(m, "gossip_steps", c->gossip_steps);
    if (nd->have_model) {
        /* what it takes to evaluate a snapshot offline (murmur report) */
        mm_metrics_int(m, "layers", c->model.n_layer);
        mm_metrics_int(m, "width", c->model.d_model);
        mm_metrics_int(m, "heads", c->model.n_head);
        mm_metrics_int(m, "ctx", c->model.n_ctx);
        mm_metrics_int(m, "batch", c->batch);
        mm_metrics_int(m, "eval_windows", c->eval_windows);
        if (c->data_dir) /* (pure gossip without a corpus: nothing to evaluate with) */
            mm_metrics_str(m, "data", c->data_dir);
        mm_metrics_str(m, "partition", mm_partition_name(c->partition));
    }
    mm_metrics_num(m, "time", 0);
    mm_metrics_end(m);
}

void *node_train_main(void *arg)
{
    node *nd = arg;
    const mm_node_config *c = nd->cfg;
    trainer tr = {0};
    int maxdeg = mm_topo_max_degree(nd->topo);
    if (maxdeg < 1)
        maxdeg = 1;
    tr.in_buf = calloc((size_t)maxdeg * 2, sizeof *tr.in_buf);
    tr.out_buf = calloc((size_t)maxdeg * 2, sizeof *tr.out_buf);
    tr.mix_in = calloc((size_t)maxdeg, sizeof *tr.mix_in);
    tr.status = calloc((size_t)maxdeg, sizeof *tr.status);
    tr.vec = calloc((size_t)maxdeg, sizeof *tr.vec);
    tr.wk = calloc((size_t)maxdeg, sizeof *tr.wk);
    tr.dist = calloc((size_t)maxdeg, sizeof *tr.dist);
    tr.ids = calloc((size_t)maxdeg * 4 + 4, sizeof *tr.ids);
    tr.sketch = calloc((size_t)c->sketch_dim, sizeof *tr.sketch);
    if (c->algo == MM_ALGO_ASYNC) {
        nd->latest = calloc(nd->n, sizeof *nd->latest);
        nd->latest_exchange = calloc(nd->n, sizeof *nd->latest_exchange);
        nd->latest_weight = calloc(nd->n, sizeof *nd->latest_weight);
        for (uint32_t p = 0; nd->latest_exchange && p < nd->n; p++)
            nd->latest_exchange[p] = -1;
    }
    if (!tr.in_buf || !tr.out_buf || !tr.mix_in || !tr.status || !tr.vec || !tr.wk || !tr.dist || !tr.ids ||
        !tr.sketch || (c->algo == MM_ALGO_ASYNC && (!nd->latest || !nd->latest_exchange || !nd->latest_weight))) {
        mm_error("out of memory");
        nd->exit_status = 1;
        node_trainer_finished(nd);
        return NULL;
    }
    tr.v.in = tr.in_buf;
    tr.v.out = tr.out_buf;
    tr.next.in = tr.in_buf + maxdeg;
    tr.next.out = tr.out_buf + maxdeg;

    double t_start = node_now();
    tr.start_deadline = t_start + c->start_timeout_ms / 1000.0;
    write_start(nd);
    if (nd->round == 0 && c->eval_every > 0)
        evaluate(nd, &tr, t_start);
    if (nd->round == 0 && c->snapshot_every > 0)
        write_snapshot(nd);

    int G = c->gossip_steps > 0 ? c->gossip_steps : 1;
    bool checkpoint_failed = false, params_lost = false;
    while (nd->round < c->rounds && !stopping(nd)) {
        if (mm_topo_round(nd->topo, nd->id, (uint64_t)nd->round, &tr.v) != 0) {
            mm_error("topology has no round %ld for peer %u", nd->round, nd->id);
            nd->exit_status = 1;
            break;
        }
        if (c->algo != MM_ALGO_ASYNC) {
            nd->ff_view = tr.v;
            long r = fast_forward(nd, nd->round);
            if (r != nd->round) {
                nd->round = r;
                continue; /* the new round has other neighbours */
            }
        }
        want_round(nd, &tr, nd->round);
        tr.loss_sum = 0;
        tr.loss_n = 0;
        float lr = nd->have_model ? mm_adamw_lr(&c->adamw, nd->opt.step) : 0;
        int done = 0;
        for (int g = 0; g < G; g++) {
            if (exchange(nd, &tr, (uint64_t)nd->round * (uint64_t)G + (uint64_t)g, g == 0) != 0)
                break;
            done++;
        }
        if (done < G)
            break; /* stopping: this round is abandoned */
        double loss = tr.loss_n ? tr.loss_sum / tr.loss_n : NAN;
        log_round(nd, &tr, t_start, loss, lr);
        /* The wire refuses NaN/Inf, but a finite vector of absurd norm
         * mixed in (without --clip-pull) can still overflow the model. Such
         * a replica is lost: stop before a checkpoint overwrites the last
         * good one and before our vectors are refused by every neighbour. */
        uint64_t bad_at;
        if (!mm_wire_all_finite(nd->x, nd->P, &bad_at)) {
            mm_error("round %ld: parameter %" PRIu64 " of %zu is NaN or Inf after mixing and the "
                     "update (a neighbour's vector of absurd norm? see --clip-pull); stopping, "
                     "the last checkpoint is kept", nd->round, bad_at, (size_t)nd->P);
            nd->exit_status = 1;
            params_lost = true;
            break;
        }
        nd->round++;
        if (c->eval_every > 0 && nd->round % c->eval_every == 0)
            evaluate(nd, &tr, t_start);
        if (c->snapshot_every > 0 && nd->round % c->snapshot_every == 0)
            write_snapshot(nd);
        if (c->checkpoint_every > 0 && nd->round % c->checkpoint_every == 0)
            checkpoint_failed = save_checkpoint(nd) != 0;
    }

    if (!params_lost && c->eval_every > 0 && nd->round % c->eval_every != 0)
        evaluate(nd, &tr, t_start);
    if (!params_lost && save_checkpoint(nd) != 0)
        checkpoint_failed = true;
    long peak_kib = mm_peak_rss_kib();
    mm_metrics *m = &nd->metrics;
    metrics_head(nd, "end", t_start);
    mm_metrics_str(m, "reason", params_lost ? "nonfinite" : stopping(nd) ? "signal" : "done");
    mm_metrics_int(m, "max_rss_kb", peak_kib);
    mm_metrics_int(m, "skipped_sends", (long long)nd->skipped_sends);
    mm_metrics_int(m, "stale_dropped", (long long)nd->stale_dropped);
    mm_metrics_int(m, "mix_refused", (long long)nd->mix_refused);
    write_refusals(nd, m);
    mm_metrics_end(m);
    mm_info("done: round %ld, step %ld, %.1fs (compute %.1fs, comm %.1fs, wait %.1fs), peak RSS %ld MiB",
            nd->round, nd->step, node_now() - t_start, nd->t_compute, nd->t_comm, nd->t_wait,
            peak_kib / 1024);
    if (checkpoint_failed && !nd->exit_status)
        nd->exit_status = 1;

    free(tr.in_buf);
    free(tr.out_buf);
    free(tr.mix_in);
    free(tr.status);
    free(tr.vec);
    free(tr.wk);
    free(tr.dist);
    free(tr.ids);
    free(tr.sketch);
    node_trainer_finished(nd);
    return NULL;
}
