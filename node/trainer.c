/* The training thread's set-up and teardown (node/trainer.h): the replica
 * (the model and its shard, or a plain vector with --vector-len), --resume,
 * the round's records, the algorithm chosen once (node/algo.h), the metrics
 * file; and what persists of a run: evaluations, snapshots, checkpoints. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sha256.h"
#include "gossip/sketch.h"
#include "net/wire.h"
#include "node/cc_skip.h"
#include "node/algo.h"
#include "node/algo_outer.h"
#include "node/allreduce.h"
#include "node/trainer.h"
#include "report/snapshot.h"

bool mm__trainer_stopping(const mm__trainer *tr) { return mm__mbox_stopping(tr->mb); }

static int load_replica(mm__trainer *tr, char *err, size_t errlen)
{
    const mm_node_config *c = tr->cfg;
    /* Training starts every replica from the same x_0 (as D-PSGD assumes);
     * pure gossip starts them apart, to watch them meet. */
    uint64_t seed = c->same_init ? c->train.seed
                                 : c->train.seed + 0x9e3779b97f4a7c15ULL * (tr->id + 1);
    if (c->vector_len > 0) {
        tr->P = (size_t)c->vector_len;
        tr->x = tr->own_x = malloc(tr->P * sizeof(float));
        if (!tr->x) {
            snprintf(err, errlen, "cannot allocate a vector of %zu floats", tr->P);
            return -1;
        }
        mm_rng r;
        mm_rng_seed(&r, seed);
        for (size_t k = 0; k < tr->P; k++)
            tr->x[k] = (float)mm_rng_normal(&r);
        return 0;
    }
    bool data = !c->no_train || (c->eval_every > 0 && c->train.data_dir);
    /* tr->n is the run's starting peers: an id beyond them trains on the
     * shard of peer id mod n (docs/formats.md, "Ids beyond the starting set") */
    int shard_n = c->no_train ? 1 : tr->elastic ? (int)tr->n_start : (int)tr->n;
    int shard_id = c->no_train ? 0 : mm_shard_of_id(tr->id, shard_n);
    uint64_t rng_seed = c->train.seed ^ (0xa0761d6478bd642fULL * (tr->id + 1));
    if (mm_replica_init(&tr->rep, &c->train, seed, rng_seed, err, errlen) != 0)
        return -1;
    tr->have_model = true;
    if (data && mm_replica_load_shard(&tr->rep, shard_id, shard_n, err, errlen) != 0)
        return -1;
    tr->x = tr->rep.model.params;
    tr->P = tr->rep.model.n_params;
    if (data)
        mm_info("data: %d files (%s), %zu training bytes, %zu validation bytes",
                tr->rep.shard.n_files, tr->rep.shard.genres, mm_shard_text_bytes(&tr->rep.shard),
                tr->rep.shard.val_len);
    return 0;
}

/* The snapshots in dir/snap/ (rNNNNNNNN.bin, report/snapshot.h). */
static int count_snapshots(const char *dir)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/snap", dir);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += de->d_name[0] == 'r' && strlen(de->d_name) == 13 && !strcmp(de->d_name + 9, ".bin");
    closedir(d);
    return n;
}

bool mm__trainer_dir_holds_run(const char *dir, char *what, size_t len)
{
    char path[PATH_MAX + 32];
    struct stat st;
    size_t at = 0;
    what[0] = '\0';
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    if (stat(path, &st) == 0 && st.st_size >= 1000000)
        at += (size_t)snprintf(what, len, "metrics.jsonl of %.1f MB", (double)st.st_size / 1e6);
    else if (stat(path, &st) == 0 && st.st_size > 0)
        at += (size_t)snprintf(what, len, "metrics.jsonl of %lld bytes", (long long)st.st_size);
    snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
    if (at < len && stat(path, &st) == 0)
        at += (size_t)snprintf(what + at, len - at, "%scheckpoint.bin", at ? ", " : "");
    int snaps = count_snapshots(dir);
    if (at < len && snaps > 0)
        at += (size_t)snprintf(what + at, len - at, "%s%d snapshot%s in snap/", at ? ", " : "",
                               snaps, snaps == 1 ? "" : "s");
    return at > 0;
}

static int resume(mm__trainer *tr, char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/checkpoint.bin", tr->dir);
    if (access(path, F_OK) != 0 && errno == ENOENT) { /* the rule of murmur train --resume too */
        char held[256];
        if (mm__trainer_dir_holds_run(tr->dir, held, sizeof held))
            mm_warn("--resume: no checkpoint at %s, but %s holds an earlier run of this peer "
                    "(%s): starting fresh from round 0 while the neighbours may go on from "
                    "theirs; its start line says \"resume\":\"fresh\" and murmur report flags it",
                    path, tr->dir, held);
        else
            mm_info("--resume: no checkpoint at %s, starting fresh", path);
        tr->resumed_fresh = true;
        return 0;
    }
    if (!tr->have_model) {
        snprintf(err, errlen, "--resume needs a model (not --vector-len)");
        return -1;
    }
    mm_ckpt_state st = {0};
    if (tr->outer)
        mm__outer_ckpt(tr->outer, &st); /* where its state goes */
    if (mm_replica_load(&tr->rep, path, &st, err, errlen) != 0 ||
        (tr->outer && mm__outer_resumed(tr->outer, &st, path, err, errlen) != 0))
        return -1;
    if (st.peer_id != (int32_t)tr->id) {
        snprintf(err, errlen, "%s belongs to peer %d, not %u", path, st.peer_id, tr->id);
        return -1;
    }
    tr->step = st.step;
    tr->round = st.round;
    tr->ckpt_round = st.round;
    /* The weight obeys the wire's rule (net/wire.h) or the neighbours
     * would refuse every vector: 1 outside push-sum (a push-sum checkpoint
     * resumed with dpsgd starts from 1), within [2^-30, n] with it. */
    bool ps = tr->cfg->algo == MM_ALGO_PUSHSUM;
    tr->w = ps ? st.pushsum_weight : 1.0;
    if (!mm_mix_weight_ok(ps ? MM_WEIGHT_PUSHSUM : MM_WEIGHT_ONE, tr->w, tr->n, NULL, 0)) {
        snprintf(err, errlen, "%s: push-sum weight %.17g is outside [2^-30, %u]", path, tr->w,
                 tr->n);
        return -1;
    }
    mm_info("resumed from %s: round %ld, step %ld", path, tr->round, tr->step);
    if (tr->round >= tr->cfg->rounds) /* --rounds counts from round 0, not from here */
        mm_warn("--resume: the checkpoint is at round %ld, at or past --rounds %ld: nothing is "
                "left to run; give --rounds above %ld to go on", tr->round, tr->cfg->rounds,
                tr->round);
    return 0;
}


/* Whether local steps change x (otherwise a round only averages). */
bool mm__trainer_trains(const mm__trainer *tr) { return !tr->cfg->no_train && tr->have_model; }

/* The round's records, one per possible in-neighbour, and the views. */
static int alloc_round(mm__trainer *tr)
{
    /* (an elastic run: any member may be a neighbour) */
    int maxdeg = tr->elastic ? (int)tr->n : mm_topo_max_degree(tr->topo);
    if (maxdeg < 2)
        maxdeg = 2;
    if (tr->cfg->algo == MM_ALGO_ALLREDUCE && maxdeg < MM_AR_MAX_PARTNERS)
        maxdeg = MM_AR_MAX_PARTNERS; /* all-reduce: its partners, whatever the graph */
    tr->in_buf = calloc((size_t)maxdeg * 2, sizeof *tr->in_buf);
    tr->out_buf = calloc((size_t)maxdeg * 2, sizeof *tr->out_buf);
    tr->nbr = calloc((size_t)maxdeg, sizeof *tr->nbr);
    tr->mix_in = calloc((size_t)maxdeg, sizeof *tr->mix_in);
    tr->ids = calloc((size_t)maxdeg * 4 + 4, sizeof *tr->ids);
    tr->links = calloc(tr->n, sizeof *tr->links);
    tr->sketch = calloc((size_t)tr->cfg->sketch_dim, sizeof *tr->sketch);
    if (!tr->in_buf || !tr->out_buf || !tr->nbr || !tr->mix_in || !tr->ids || !tr->links ||
        !tr->sketch)
        return -1;
    tr->v.in = tr->in_buf;
    tr->v.out = tr->out_buf;
    tr->next.in = tr->in_buf + maxdeg;
    tr->next.out = tr->out_buf + maxdeg;
    return 0;
}

int mm__trainer_new(const mm_node_config *c, uint32_t id, const mm_topology *topo,
                    const char *dir, mm__trainer **out, char *err, size_t errlen)
{
    *out = NULL;
    mm__trainer *tr = calloc(1, sizeof *tr);
    if (!tr) {
        snprintf(err, errlen, "out of memory");
        return MM_EXIT_ERROR;
    }
    tr->cfg = c;
    tr->clip = mm_clip_make(c->clip_pull, c->robust_clip);
    tr->id = id;
    tr->topo = topo;
    /* a family file: elastic, ids below --max-peers (docs/membership.md) */
    tr->elastic = mm_topo_family(topo);
    tr->n_start = (uint32_t)mm_topo_n(topo);
    tr->n = tr->elastic ? (uint32_t)c->max_peers : tr->n_start;
    tr->leave_end = UINT64_MAX;
    tr->joined_round = -1;
    tr->w = 1.0;
    tr->ckpt_round = -1;
    tr->metrics.fd = -1;
    /* --compute-jitter draws from its own stream per peer: the same delays
     * for the same seed, whatever the timing */
    uint64_t js = c->jitter_seed_given ? c->jitter_seed : c->train.seed ^ 0x6a69747465720000ULL;
    mm_rng_seed(&tr->jitter_rng, js ^ (0x9e3779b97f4a7c15ULL * (id + 1)));
    snprintf(tr->dir, sizeof tr->dir, "%s", dir);
    /* each step: 0, or the exit status with the reason in err */
    int status = load_replica(tr, err, errlen) != 0 ? MM_EXIT_ERROR : 0;
    /* before --resume, which reads its state from the checkpoint */
    if (status == 0 && c->outer)
        status = mm__outer_new(c, tr->x, tr->P, tr->n, id, &tr->outer, err, errlen);
    if (status == 0 && c->resume && resume(tr, err, errlen) != 0)
        status = MM_EXIT_ERROR;
    if (status == 0) {
        tr->algo = mm__algo_pick(c);
        if (tr->algo->start)
            status = tr->algo->start(tr, err, errlen);
    }
    if (status == 0) {
        double limit = mm__isolation_limit(c->start_timeout_ms, c->peer_timeout_ms,
                                           c->round_timeout_ms);
        tr->iso = mm__isolation_new(tr->n, id, limit);
        if (mm__pace_wanted(c))
            tr->pace = mm__pace_new(c, tr->n);
        if (alloc_round(tr) != 0 || !tr->iso || (tr->elastic && mm__view_alloc(tr) != 0) ||
            (mm__pace_wanted(c) && !tr->pace)) {
            snprintf(err, errlen, "out of memory for a round with %d neighbours",
                     mm_topo_max_degree(topo));
            status = MM_EXIT_ERROR;
        }
    }
    if (status == 0)
        status = mm__control_start(tr, err, errlen);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/metrics.jsonl", tr->dir);
    if (status == 0 && mm_metrics_open(&tr->metrics, path, err, errlen) != 0)
        status = MM_EXIT_ERROR;
    if (status != 0) {
        mm__trainer_free(tr);
        return status;
    }
    *out = tr;
    return 0;
}

void mm__trainer_free(mm__trainer *tr)
{
    if (!tr)
        return;
    mm_metrics_close(&tr->metrics);
    if (tr->algo && tr->algo->end)
        tr->algo->end(tr);
    if (tr->have_model)
        mm_replica_free(&tr->rep);
    free(tr->own_x);
    free(tr->in_buf);
    free(tr->out_buf);
    free(tr->nbr);
    free(tr->mix_in);
    free(tr->ids);
    free(tr->links);
    free(tr->sketch);
    free(tr->cc_ratio);
    mm__skip_free(tr->skip);
    mm__isolation_free(tr->iso);
    mm__pace_free(tr->pace);
    mm__outer_free(tr->outer);
    mm__view_free(tr);
    free(tr);
}

size_t mm__trainer_vec_len(const mm__trainer *tr) { return tr->P; }

size_t mm__trainer_buf_bytes(const mm__trainer *tr)
{
    return tr->algo->buf_bytes ? tr->algo->buf_bytes(tr) : 4 * tr->P;
}

int mm__trainer_chunks(const mm__trainer *tr, size_t *chunk_bytes)
{
    *chunk_bytes = 0;
    return tr->algo->chunks ? tr->algo->chunks(tr, chunk_bytes) : 0;
}

void mm__trainer_codec(const mm__trainer *tr, uint8_t *codec, uint32_t *block, double *frac,
                       uint64_t *max_body)
{
    if (tr->algo->codec) {
        tr->algo->codec(tr, codec, block, frac, max_body);
        return;
    }
    *codec = MM_WIRE_CODEC_FP32;
    *block = 0;
    *frac = 0;
    *max_body = 4 * (uint64_t)tr->P;
}

void mm_vector_fingerprint(size_t P, uint8_t out[32])
{
    char desc[64];
    int len = snprintf(desc, sizeof desc, "murmur-vector:%zu", P);
    mm_sha256(desc, (size_t)len, out);
}

void mm__trainer_fingerprint(const mm__trainer *tr, uint8_t fp[32])
{
    if (tr->have_model)
        mm_model_fingerprint(&tr->cfg->train.model, fp);
    else
        mm_vector_fingerprint(tr->P, fp);
}

int mm__trainer_status(const mm__trainer *tr) { return tr->exit_status; }

void mm__trainer_set_exporter(mm__trainer *tr, mm__exporter *e) { tr->exporter = e; }

void mm__trainer_set_elastic(mm__trainer *tr, struct mm__elastic *e) { tr->el = e; }

bool mm__trainer_is_elastic(const mm__trainer *tr) { return tr->elastic; }

void mm__trainer_set_allreduce(mm__trainer *tr, int schedule)
{
    if (tr->algo_state && tr->cfg->algo == MM_ALGO_ALLREDUCE)
        mm__allreduce_set_schedule(tr, schedule);
}

/* ---- what persists: evaluations, snapshots, checkpoints ------------------ */

void mm__trainer_evaluate(mm__trainer *tr)
{
    const mm_node_config *c = tr->cfg;
    double loss = NAN, acc = NAN;
    mm_eval_result r;
    bool evaluated = tr->have_model && tr->rep.shard.val_len > 0;
    if (evaluated) {
        mm_replica_evaluate(&tr->rep, c->eval_windows, &r);
        loss = r.loss;
        acc = r.acc;
    }
    mm_sketch(tr->x, tr->P, c->sketch_seed, tr->sketch, c->sketch_dim);
    mm__lines_eval(tr, evaluated ? &r : NULL);
    if (tr->have_model)
        mm_info("eval round %ld: val loss %.4f, %.3f bits/byte, next-byte accuracy %.2f%%",
                tr->round, loss, loss / log(2.0), 100 * acc);
}

void mm__trainer_snapshot(mm__trainer *tr)
{
    char err[PATH_MAX + 128];
    if (mm_snapshot_write(tr->cfg->run_dir, (int)tr->id, tr->round, tr->x, tr->P, err,
                          sizeof err) != 0)
        mm_error("snapshot: %s", err);
}

int mm__trainer_checkpoint(mm__trainer *tr)
{
    if (!tr->have_model)
        return 0;
    char path[PATH_MAX + 32], err[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/checkpoint.bin", tr->dir);
    mm_ckpt_state st = {
        .step = tr->step, .round = tr->round, .peer_id = (int32_t)tr->id,
        .n_peers = (int32_t)tr->n, .pushsum_weight = tr->w, .seed = tr->cfg->train.seed,
    };
    if (tr->outer)
        mm__outer_ckpt(tr->outer, &st);
    if (mm_replica_save(&tr->rep, path, st, err, sizeof err) != 0) {
        mm_error("checkpoint not written (the previous one is intact): %s", err);
        return -1;
    }
    tr->ckpt_round = tr->round;
    return 0;
}

const char *mm__trainer_kept(const mm__trainer *tr, char *buf, size_t len)
{
    if (!tr->have_model)
        snprintf(buf, len, "no checkpoint (a --vector-len run writes none)");
    else if (tr->ckpt_round < 0)
        snprintf(buf, len, "no checkpoint was written yet (--resume would start it from round 0)");
    else
        snprintf(buf, len, "the last checkpoint (round %ld) is kept", tr->ckpt_round);
    return buf;
}
