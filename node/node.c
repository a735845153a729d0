/* The loop side of a peer: set-up, the transport's callbacks, the mailbox
 * from the training thread, signals and an orderly shutdown. Nothing here
 * does arithmetic on the parameter vector. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <dirent.h>

#include "gossip/log.h"
#include "gossip/tls.h"
#include "model/sha256.h"
#include "node/blas_env.h"
#include "node/node_internal.h"
#include "node/peers.h"

double node_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *mm_algo_name(mm_algo a)
{
    switch (a) {
    case MM_ALGO_ASYNC: return "async";
    case MM_ALGO_PUSHSUM: return "pushsum";
    default: return "dpsgd";
    }
}

int mm_algo_parse(const char *s)
{
    if (!strcmp(s, "dpsgd")) return MM_ALGO_DPSGD;
    if (!strcmp(s, "async")) return MM_ALGO_ASYNC;
    if (!strcmp(s, "pushsum")) return MM_ALGO_PUSHSUM;
    return -1;
}

void mm_node_config_defaults(mm_node_config *c)
{
    memset(c, 0, sizeof *c);
    c->id = -1;
    c->base_port = 29500;
    c->run_dir = "runs/default";
    c->model = mm_model_config_default();
    c->adamw = mm_adamw_config_default();
    c->batch = 16;
    c->seed = 1337;
    c->data_dir = "data/brown";
    c->partition = MM_PART_IID;
    c->threads = 1;
    c->algo = MM_ALGO_DPSGD;
    c->rounds = 200;
    c->local_steps = 1;
    c->gossip_steps = 1;
    c->same_init = true;
    c->round_timeout_ms = 5000;
    c->peer_timeout_ms = 10000;
    c->start_timeout_ms = 30000;
    c->staleness = 8;
    c->eval_every = 20;
    c->eval_windows = 64;
    c->checkpoint_every = 50;
    c->sketch_dim = 1024;
    c->sketch_seed = 0x6d75726d7572ULL; /* "murmur" */
    c->log_every = 10;
}

/* --- mailbox: training thread -> loop --------------------------------- */

/* Sends. The training thread registers each send as pending (holding a
 * reference on its snapshot buffer); the loop then makes it when the peer
 * is up, or keeps it pending until the peer comes up, unless a newer send
 * replaces it or the training thread needs the buffer back first. One send
 * is in flight per peer: a peer that has not taken the last one yet is slow
 * and is skipped, not queued. */
static void drop_pending_locked(node *nd, uint32_t peer)
{
    if (nd->has_pending[peer]) {
        nd->has_pending[peer] = false;
        nd->refs[nd->pending[peer].buf]--;
        pthread_cond_broadcast(&nd->cv);
    }
}


void node_drop_pending_on(node *nd, int buf)
{
    /* called with nd->mu held, by the training thread needing buf back */
    for (uint32_t p = 0; p < nd->n; p++)
        if (nd->has_pending[p] && nd->pending[p].buf == buf)
            drop_pending_locked(nd, p);
}

void node_post_send(node *nd, const node_cmd *c)
{
    /* Registered here, on the training thread, so that the round's wait
     * sees the send at once, before the loop has even read the queue. */
    pthread_mutex_lock(&nd->mu);
    drop_pending_locked(nd, c->peer);
    nd->pending[c->peer] = *c;
    nd->has_pending[c->peer] = true;
    nd->refs[c->buf]++;
    pthread_mutex_unlock(&nd->mu);
    node_post(nd, c);
}

void node_post(node *nd, const node_cmd *c)
{
    pthread_mutex_lock(&nd->mu);
    while (nd->q_len == NODE_QUEUE_CAP)
        pthread_cond_wait(&nd->cv, &nd->mu);
    nd->queue[nd->q_len++] = *c;
    pthread_mutex_unlock(&nd->mu);
    uv_async_send(&nd->wake);
}

void node_post_want(node *nd, const uint32_t *peers, int n)
{
    pthread_mutex_lock(&nd->mu);
    /* A peer wanted now but not in the last list, and not up, is about to be
     * dialled (or to dial us): wait for it rather than count it missing. */
    for (int i = 0; i < n; i++)
        if (!nd->wanted[peers[i]] && nd->peer_state[peers[i]] != PEER_UP)
            nd->peer_state[peers[i]] = PEER_CONNECTING;
    /* wanted[] becomes membership of the new list: O(degree), no allocation */
    for (int i = 0; i < nd->want_n; i++)
        nd->wanted[nd->want[i]] = false;
    for (int i = 0; i < n; i++)
        nd->wanted[peers[i]] = true;
    memcpy(nd->want, peers, (size_t)n * sizeof *peers);
    nd->want_n = n;
    nd->want_dirty = true;
    pthread_mutex_unlock(&nd->mu);
    uv_async_send(&nd->wake);
}

void node_refresh_stats(node *nd)
{
    pthread_mutex_lock(&nd->mu);
    uint64_t gen = nd->stats_gen;
    pthread_mutex_unlock(&nd->mu);
    uv_async_send(&nd->wake);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* the condition variable's clock */
    ts.tv_sec += 1;
    pthread_mutex_lock(&nd->mu);
    while (nd->stats_gen == gen)
        if (pthread_cond_timedwait(&nd->cv, &nd->mu, &ts) != 0)
            break; /* the loop is gone or stuck: keep the last copy */
    pthread_mutex_unlock(&nd->mu);
}

void node_trainer_finished(node *nd)
{
    pthread_mutex_lock(&nd->mu);
    nd->trainer_done = true;
    pthread_mutex_unlock(&nd->mu);
    uv_async_send(&nd->wake);
}

static void on_transport_closed(void *ud)
{
    node *nd = ud;
    uv_close((uv_handle_t *)&nd->wake, NULL);
    uv_close((uv_handle_t *)&nd->sigint, NULL);
    uv_close((uv_handle_t *)&nd->sigterm, NULL);
}

static void try_send(node *nd, const node_cmd *c)
{
    pthread_mutex_lock(&nd->mu);
    /* node_post_send registered it as pending; anything else is obsolete
     * (a newer exchange replaced it, or it was already handled). */
    if (!nd->has_pending[c->peer] || nd->pending[c->peer].exchange != c->exchange ||
        nd->pending[c->peer].buf != c->buf) {
        pthread_mutex_unlock(&nd->mu);
        return;
    }
    bool current = nd->snap_exchange[c->buf] == (int64_t)c->exchange;
    bool busy = nd->inflight[c->peer];
    if (!current || busy) {
        drop_pending_locked(nd, c->peer);
        if (busy)
            nd->skipped_sends++;
        pthread_mutex_unlock(&nd->mu);
        return;
    }
    if (nd->peer_state[c->peer] != PEER_UP) {
        pthread_mutex_unlock(&nd->mu); /* stays pending until the peer is up */
        return;
    }
    nd->has_pending[c->peer] = false; /* its buffer reference passes to the send */
    nd->inflight[c->peer] = true;
    nd->inflight_buf[c->peer] = c->buf;
    pthread_mutex_unlock(&nd->mu);

    mm_transport_set_round(nd->transport, c->exchange);
    if (mm_transport_send(nd->transport, c->peer, c->exchange, c->weight, nd->snap[c->buf]) == 0)
        return;
    pthread_mutex_lock(&nd->mu); /* refused after all: keep it for when it is up */
    nd->inflight[c->peer] = false;
    nd->pending[c->peer] = *c;
    nd->has_pending[c->peer] = true;
    pthread_mutex_unlock(&nd->mu);
}

static void on_wake(uv_async_t *h)
{
    node *nd = h->data;
    node_cmd cmds[NODE_QUEUE_CAP];
    uint32_t *want = nd->want_loop; /* the loop's own copy: no lock held while dialling */
    int n_cmds, want_n = -1;
    bool done;

    pthread_mutex_lock(&nd->mu);
    n_cmds = nd->q_len;
    memcpy(cmds, nd->queue, (size_t)n_cmds * sizeof cmds[0]);
    nd->q_len = 0;
    if (nd->want_dirty) {
        want_n = nd->want_n;
        memcpy(want, nd->want, (size_t)want_n * sizeof want[0]);
        nd->want_dirty = false;
    }
    done = nd->trainer_done;
    mm_transport_get_stats(nd->transport, &nd->stats);
    nd->stats_gen++;
    pthread_cond_broadcast(&nd->cv); /* the queue has room again */
    pthread_mutex_unlock(&nd->mu);

    if (want_n >= 0)
        mm_transport_want(nd->transport, want, want_n);

    for (int i = 0; i < n_cmds; i++) {
        node_cmd *c = &cmds[i];
        if (c->kind == CMD_RELEASE) {
            mm_transport_release(nd->transport, c->peer);
            continue;
        }
        try_send(nd, c);
    }

    if (done) {
        done = false;
        pthread_mutex_lock(&nd->mu);
        nd->trainer_done = false; /* shut down once */
        pthread_mutex_unlock(&nd->mu);
        mm_info("saying goodbye to neighbours");
        mm_transport_shutdown(nd->transport, on_transport_closed, nd);
    }
}

/* --- transport callbacks (loop thread) -------------------------------- */

static void on_vector(void *ud, uint32_t peer, uint64_t exchange, double weight,
                      const float *vec)
{
    node *nd = ud;
    pthread_mutex_lock(&nd->mu);
    inbox_slot *s = &nd->inbox[peer];
    s->present = true;
    s->exchange = exchange;
    s->weight = weight;
    s->vec = vec;
    pthread_cond_broadcast(&nd->cv);
    pthread_mutex_unlock(&nd->mu);
}

static void on_sent(void *ud, uint32_t peer, uint64_t exchange, bool ok)
{
    node *nd = ud;
    (void)exchange;
    pthread_mutex_lock(&nd->mu);
    if (nd->inflight[peer]) {
        nd->inflight[peer] = false;
        nd->refs[nd->inflight_buf[peer]]--;
    }
    pthread_cond_broadcast(&nd->cv);
    pthread_mutex_unlock(&nd->mu);
    if (!ok)
        mm_debug("send to peer %u did not complete", peer);
}

static void on_peer(void *ud, uint32_t peer, mm_peer_state state)
{
    node *nd = ud;
    static const char *names[] = {"up", "down", "gone (said goodbye or closed an idle link)"};
    pthread_mutex_lock(&nd->mu);
    node_peer_state old = nd->peer_state[peer];
    nd->peer_state[peer] = state == MM_PEER_UP ? PEER_UP : state == MM_PEER_BYE ? PEER_GONE : PEER_DOWN;
    if (state == MM_PEER_UP)
        nd->ever_up[peer] = true;
    pthread_cond_broadcast(&nd->cv);
    pthread_mutex_unlock(&nd->mu);
    if (old != nd->peer_state[peer])
        mm_info("peer %u is %s", peer, names[state]);
    if (state == MM_PEER_UP) {
        pthread_mutex_lock(&nd->mu);
        bool pend = nd->has_pending[peer];
        node_cmd c = nd->pending[peer];
        pthread_mutex_unlock(&nd->mu);
        if (pend)
            try_send(nd, &c);
    }
}

static void on_signal(uv_signal_t *h, int signum)
{
    node *nd = h->data;
    if (atomic_fetch_add(&nd->stop, 1) > 0) {
        mm_warn("second signal: exiting now");
        _exit(130);
    }
    mm_info("%s: finishing this round, writing a checkpoint, then exiting",
            signum == SIGINT ? "SIGINT" : "SIGTERM");
    pthread_mutex_lock(&nd->mu);
    pthread_cond_broadcast(&nd->cv);
    pthread_mutex_unlock(&nd->mu);
}

/* --- set-up ----------------------------------------------------------- */

static int mkdir_p(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int setup_replica(node *nd, char *err, size_t errlen)
{
    const mm_node_config *c = nd->cfg;
    /* Training starts every replica from the same x_0 (as D-PSGD assumes);
     * pure gossip starts them apart, to watch them meet. */
    uint64_t seed = c->same_init ? c->seed : c->seed + 0x9e3779b97f4a7c15ULL * (nd->id + 1);

    if (c->vector_len > 0) {
        nd->P = (size_t)c->vector_len;
        nd->x = malloc(nd->P * sizeof(float));
        if (!nd->x) {
            snprintf(err, errlen, "cannot allocate a vector of %zu floats", nd->P);
            return -1;
        }
        mm_rng r;
        mm_rng_seed(&r, seed);
        for (size_t k = 0; k < nd->P; k++)
            nd->x[k] = (float)mm_rng_normal(&r);
        return 0;
    }
    if (mm_model_init(&nd->model, &c->model, seed, err, errlen) != 0)
        return -1;
    nd->have_model = true;
    nd->x = nd->model.params;
    nd->P = nd->model.n_params;
    if (mm_adamw_init(&nd->opt, &c->adamw, nd->P) != 0) {
        snprintf(err, errlen, "cannot allocate the optimizer state");
        return -1;
    }
    if (!c->no_train || c->eval_every > 0) {
        int shard_n = c->no_train ? 1 : (int)nd->n, shard_id = c->no_train ? 0 : (int)nd->id;
        if (mm_shard_load(&nd->shard, c->data_dir, c->partition, shard_id, shard_n, err, errlen) != 0)
            return -1;
        mm_info("data: %d files (%s), %zu training bytes, %zu validation bytes",
                nd->shard.n_files, nd->shard.genres, nd->shard.train_len, nd->shard.val_len);
    }
    nd->tokens = malloc((size_t)c->batch * (size_t)(c->model.n_ctx + 1));
    if (!nd->tokens) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static void fingerprint(const node *nd, uint8_t fp[32])
{
    if (nd->have_model) {
        mm_model_fingerprint(&nd->cfg->model, fp);
    } else {
        char desc[64];
        int len = snprintf(desc, sizeof desc, "murmur-vector:%zu", nd->P);
        mm_sha256(desc, (size_t)len, fp);
    }
}

/* mm_write_atomic writes NAME.tmp.PID and renames it; a peer killed mid-write
 * leaves that temp file behind (a whole checkpoint's worth of disk). Remove
 * those whose writer is gone, so repeated crashes do not fill the disk. A
 * temp file of a live process (another murmur on the same dir) is left. */
static void sweep_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *t = strstr(e->d_name, ".tmp.");
        if (!t || !t[5])
            continue;
        char *end;
        long pid = strtol(t + 5, &end, 10);
        if (*end || pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) == 0)
            mm_info("removed %s, left by a writer that died mid-write", path);
    }
    closedir(d);
}

static int try_resume(node *nd, char *err, size_t errlen)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/checkpoint.bin", nd->dir);
    if (access(path, F_OK) != 0 && errno == ENOENT) { /* the rule of murmur train --resume too */
        mm_info("--resume: no checkpoint at %s, starting fresh", path);
        return 0;
    }
    if (!nd->have_model) {
        snprintf(err, errlen, "--resume needs a model (not --vector-len)");
        return -1;
    }
    mm_ckpt_state st;
    if (mm_checkpoint_load(path, &nd->model, &nd->opt, &st, err, errlen) != 0)
        return -1;
    if (st.peer_id != (int32_t)nd->id) {
        snprintf(err, errlen, "%s belongs to peer %d, not %u", path, st.peer_id, nd->id);
        return -1;
    }
    nd->step = st.step;
    nd->round = st.round;
    nd->w = st.pushsum_weight;
    nd->rng = st.rng;
    mm_info("resumed from %s: round %ld, step %ld", path, nd->round, nd->step);
    return 0;
}

int mm_node_run(const mm_node_config *c)
{
    char err[1400] = "";
    node *nd = calloc(1, sizeof *nd);
    if (!nd) {
        fprintf(stderr, "murmur node: out of memory\n");
        return 1;
    }
    nd->cfg = c;
    nd->w = 1.0;
    nd->metrics.fd = -1;
    int status = 1;
    char **addrs = NULL;
    FILE *logf = NULL;
    bool loop_ready = false;

    nd->topo = mm_topo_load(c->topology, err, sizeof err);
    if (!nd->topo) {
        fprintf(stderr, "murmur node: %s\n", err);
        goto out;
    }
    nd->n = (uint32_t)mm_topo_n(nd->topo);
    if (c->n_peers && (uint32_t)c->n_peers != nd->n) {
        fprintf(stderr, "murmur node: %d peers given, but %s has %u\n", c->n_peers, c->topology, nd->n);
        goto out;
    }
    if (c->id < 0 || (uint32_t)c->id >= nd->n) {
        fprintf(stderr, "murmur node: peer id %d is not in 0..%u\n", c->id, nd->n - 1);
        goto out;
    }
    nd->id = (uint32_t)c->id;
    if (mm_topo_directed(nd->topo) && c->algo != MM_ALGO_PUSHSUM)
        fprintf(stderr, "murmur node: warning: %s is directed; only --algo pushsum averages "
                        "correctly on it\n", c->topology);

    addrs = mm_peer_addrs(c, nd->n, err, sizeof err);
    if (!addrs) {
        fprintf(stderr, "murmur node: %s\n", err);
        goto out;
    }

    snprintf(nd->dir, sizeof nd->dir, "%s/node-%u", c->run_dir, nd->id);
    if (mkdir_p(nd->dir) != 0) {
        fprintf(stderr, "murmur node: cannot create %s: %s\n", nd->dir, strerror(errno));
        goto out;
    }
    char path[1100];
    snprintf(path, sizeof path, "%s/node.log", nd->dir);
    logf = fopen(path, "a");
    mm_log_set_peer((int)nd->id);
    mm_log_set_file(logf);
    mm_blas_log_note(); /* the OpenBLAS re-exec, if any: in the peer's log only */
    openblas_set_num_threads(c->threads);
    sweep_stale_temps(nd->dir);
    snprintf(path, sizeof path, "%s/snap", nd->dir);
    sweep_stale_temps(path);

    mm_rng_seed(&nd->rng, c->seed ^ (0xa0761d6478bd642fULL * (nd->id + 1)));
    if (setup_replica(nd, err, sizeof err) != 0 || (c->resume && try_resume(nd, err, sizeof err) != 0)) {
        mm_error("%s", err);
        goto out;
    }

    snprintf(path, sizeof path, "%s/metrics.jsonl", nd->dir);
    if (mm_metrics_open(&nd->metrics, path, err, sizeof err) != 0) {
        mm_error("%s", err);
        goto out;
    }

    /* shared state */
    pthread_mutex_init(&nd->mu, NULL);
    pthread_cond_init(&nd->cv, NULL);
    nd->inbox = calloc(nd->n, sizeof *nd->inbox);
    nd->peer_state = calloc(nd->n, sizeof *nd->peer_state);
    nd->inflight = calloc(nd->n, sizeof *nd->inflight);
    nd->inflight_buf = calloc(nd->n, sizeof *nd->inflight_buf);
    nd->want = calloc(nd->n, sizeof *nd->want);
    nd->want_loop = calloc(nd->n, sizeof *nd->want_loop);
    nd->wanted = calloc(nd->n, sizeof *nd->wanted);
    nd->ever_up = calloc(nd->n, sizeof *nd->ever_up);
    nd->pending = calloc(nd->n, sizeof *nd->pending);
    nd->has_pending = calloc(nd->n, sizeof *nd->has_pending);
    for (int b = 0; b < NODE_SNAP_BUFS; b++)
        nd->snap_exchange[b] = -1;
    bool snaps_ok = true;
    for (int b = 0; b < NODE_SNAP_BUFS; b++)
        snaps_ok = (nd->snap[b] = malloc(nd->P * sizeof(float))) != NULL && snaps_ok;
    if (!nd->inbox || !nd->peer_state || !nd->inflight || !nd->inflight_buf || !nd->want || !nd->want_loop || !nd->wanted || !nd->ever_up || !nd->pending || !nd->has_pending ||
        !snaps_ok) {
        mm_error("out of memory for %u peers and %zu parameters", nd->n, nd->P);
        goto out;
    }

    /* the loop and the transport */
    uv_loop_init(&nd->loop);
    loop_ready = true;
    mm_transport_config tc = {0};
    tc.self_id = nd->id;
    tc.n_peers = nd->n;
    tc.addrs = (const char *const *)addrs;
    tc.listen_addr = mm_peer_listen_addr(c, addrs[nd->id]);
    fingerprint(nd, tc.fingerprint);
    tc.vec_len = nd->P;
    tc.plaintext = c->plaintext;
    mm_tls_files tls;
    if (!c->plaintext) {
        if (mm_tls_files_for(c->tls_dir, nd->id, &tls) != 0) {
            mm_error("--tls-dir %s: path too long", c->tls_dir);
            goto out;
        }
        tc.ca_file = tls.ca;
        tc.cert_file = tls.cert;
        tc.key_file = tls.key;
    }
    tc.peer_timeout_ms = (uint32_t)c->peer_timeout_ms;
    tc.heartbeat_ms = (uint32_t)(c->peer_timeout_ms / 4 > 0 ? c->peer_timeout_ms / 4 : 1);
    tc.test_poison = c->test_poison;
    mm_transport_callbacks cb = {on_vector, on_sent, on_peer, nd};
    nd->transport = mm_transport_new(&nd->loop, &tc, &cb, err, sizeof err);
    if (!nd->transport) {
        mm_error("%s", err);
        goto out;
    }
    uv_async_init(&nd->loop, &nd->wake, on_wake);
    nd->wake.data = nd;
    uv_signal_init(&nd->loop, &nd->sigint);
    uv_signal_init(&nd->loop, &nd->sigterm);
    nd->sigint.data = nd->sigterm.data = nd;
    uv_signal_start(&nd->sigint, on_signal, SIGINT);
    uv_signal_start(&nd->sigterm, on_signal, SIGTERM);

    mm_info("peer %u of %u: %s, topology %s (%s), %zu parameters, listening on %s%s",
            nd->id, nd->n, mm_algo_name(c->algo), c->topology, mm_topo_kind(nd->topo), nd->P,
            tc.listen_addr ? tc.listen_addr : addrs[nd->id], c->plaintext ? " (PLAINTEXT)" : " (TLS)");

    if (pthread_create(&nd->trainer, NULL, node_train_main, nd) != 0) {
        mm_error("cannot start the training thread");
        goto out;
    }
    uv_run(&nd->loop, UV_RUN_DEFAULT);
    pthread_join(nd->trainer, NULL);
    status = nd->exit_status;

out:
    if (nd->transport)
        mm_transport_free(nd->transport);
    if (loop_ready) {
        uv_run(&nd->loop, UV_RUN_NOWAIT);
        uv_loop_close(&nd->loop);
    }
    mm_metrics_close(&nd->metrics);
    if (nd->have_model) {
        mm_model_free(&nd->model);
        mm_adamw_free(&nd->opt);
    } else {
        free(nd->x);
    }
    mm_shard_free(&nd->shard);
    mm_topo_free(nd->topo);
    mm_peer_addrs_free(addrs, nd->n);
    for (int b = 0; b < NODE_SNAP_BUFS; b++)
        free(nd->snap[b]);
    if (nd->latest)
        for (uint32_t j = 0; j < nd->n; j++)
            free(nd->latest[j]);
    free(nd->latest);
    free(nd->latest_exchange);
    free(nd->latest_weight);
    free(nd->inbox);
    free(nd->peer_state);
    free(nd->inflight);
    free(nd->inflight_buf);
    free(nd->want);
    free(nd->want_loop);
    free(nd->wanted);
    free(nd->ever_up);
    free(nd->pending);
    free(nd->has_pending);
    free(nd->tokens);
    mm_log_set_file(NULL);
    if (logf)
        fclose(logf);
    free(nd);
    return status;
}
