/* node/replica.h: one replica's step, evaluation and checkpoint. */
#include "node/replica.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

int mm_replica_init(mm_replica *r, const mm_replica_config *c, uint64_t init_seed,
                    uint64_t rng_seed, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->cfg = *c;
    if (mm_model_init(&r->model, &c->model, init_seed, err, errlen) != 0)
        goto fail;
    /* the model's threads (two: a shard of the batch each); 0: as many as
     * OpenBLAS would take */
    mm_model_set_threads(&r->model, c->threads > 0 ? c->threads : openblas_get_num_threads());
    if (mm_adamw_init(&r->opt, &c->adamw, r->model.n_params) != 0) {
        snprintf(err, errlen, "cannot allocate the optimizer state for %zu parameters",
                 r->model.n_params);
        goto fail;
    }
    r->tokens = malloc((size_t)c->batch * (size_t)(c->model.n_ctx + 1));
    if (!r->tokens) {
        snprintf(err, errlen, "out of memory for a batch of %d x %d bytes", c->batch,
                 c->model.n_ctx + 1);
        goto fail;
    }
    mm_rng_seed(&r->rng, rng_seed);
    return 0;
fail:
    mm_replica_free(r);
    return -1;
}

int mm_replica_load_shard(mm_replica *r, int shard_id, int n_shards, char *err, size_t errlen)
{
    return mm_shard_load(&r->shard, r->cfg.data_dir, &r->cfg.partition, shard_id, n_shards, err,
                         errlen);
}

void mm_replica_free(mm_replica *r)
{
    mm_model_free(&r->model);
    mm_adamw_free(&r->opt);
    mm_shard_free(&r->shard);
    free(r->tokens);
    r->tokens = NULL;
}

float mm_replica_step(mm_replica *r, float *gnorm)
{
    return mm_replica_step_batch(r, r->cfg.batch, gnorm);
}

float mm_replica_step_batch(mm_replica *r, int batch, float *gnorm)
{
    int B = batch < 1 || batch > r->cfg.batch ? r->cfg.batch : batch, T = r->cfg.model.n_ctx;
    mm_batch_sample(&r->shard, &r->rng, r->tokens, B, T);
    float loss = mm_model_forward(&r->model, r->tokens, B, T);
    mm_model_backward(&r->model);
    float g = mm_adamw_step(&r->opt, &r->model, r->model.params, r->model.grads);
    if (gnorm)
        *gnorm = g;
    return loss;
}

void mm_replica_evaluate(mm_replica *r, int windows, mm_eval_result *out)
{
    mm_evaluate(&r->model, &r->shard, windows, r->cfg.batch, r->cfg.model.n_ctx, r->tokens, out);
}

int mm_replica_save(const mm_replica *r, const char *path, mm_ckpt_state st, char *err,
                    size_t errlen)
{
    st.rng = r->rng;
    return mm_checkpoint_save(path, &r->model, &r->opt, &st, err, errlen);
}

int mm_replica_load(mm_replica *r, const char *path, mm_ckpt_state *st, char *err,
                    size_t errlen)
{
    mm_ckpt_state s = {0};
    if (st) { /* where the outer state and its error feedback go, if the caller has them */
        s.outer = st->outer;
        s.ef = st->ef;
    }
    if (mm_checkpoint_load(path, &r->model, &r->opt, &s, err, errlen) != 0)
        return -1;
    r->rng = s.rng;
    if (st)
        *st = s;
    return 0;
}

void mm_replica_config_default(mm_replica_config *c)
{
    *c = (mm_replica_config){
        .model = mm_model_config_default(),
        .adamw = mm_adamw_config_default(),
        .batch = 16,
        .seed = 1,
        .data_dir = "data/brown",
        .partition = {.kind = MM_PART_IID},
        .threads = 0,
    };
    c->adamw.lr_min = c->adamw.lr_max / 10;
}
