/* One replica of the model being trained: its parameters, optimizer, data
 * shard, sampling stream and batch buffer, and the three things done to it --
 * an optimizer step on a fresh batch, an evaluation on the fixed validation
 * sample, a checkpoint. `murmur train` drives one alone; a peer's training
 * thread (node/round.c) drives one between gossip exchanges. Both go
 * through these functions, so a step means the same in both. */
#ifndef MURMUR_REPLICA_H
#define MURMUR_REPLICA_H

#include <stdbool.h>
#include <stdint.h>

#include "base/rng.h"
#include "model/checkpoint.h"
#include "model/data.h"
#include "model/eval.h"
#include "model/model.h"

/* The settings `murmur train` and `murmur node` share (cli/options.h
 * makes their command-line flags from one table). */
typedef struct {
    mm_model_config model;
    mm_adamw_config adamw;
    int batch;
    uint64_t seed;
    const char *data_dir;
    mm_partition partition;
    int threads;                /* the model's threads (mm_model_set_threads); 0: OpenBLAS's choice */
} mm_replica_config;

/* The defaults: the model of model/, AdamW's defaults, batch 16, seed 1,
 * data/brown, partition iid, threads 0 (OpenBLAS's choice; a command may
 * set its own before building its flag table, cli/options.h). */
void mm_replica_config_default(mm_replica_config *c);

typedef struct {
    mm_replica_config cfg;
    mm_model model;
    mm_adamw opt;
    mm_shard shard;             /* empty when no data was loaded */
    mm_rng rng;                 /* the data sampling stream (checkpointed) */
    uint8_t *tokens;            /* one batch: batch * (ctx + 1) bytes */
} mm_replica;

/* Builds the model (initialised from init_seed), its optimizer state and
 * batch buffer; the sampling stream starts from rng_seed. 0, or -1 with the
 * reason in err (the replica is then freed). */
int mm_replica_init(mm_replica *r, const mm_replica_config *c, uint64_t init_seed,
                    uint64_t rng_seed, char *err, size_t errlen);
/* Loads shard `shard_id` of `n_shards` of the corpus as the config's data
 * directory and partition say (after a resume, when the partition's seed
 * may come from the checkpoint). 0, or -1 with the reason in err. */
int mm_replica_load_shard(mm_replica *r, int shard_id, int n_shards, char *err, size_t errlen);
void mm_replica_free(mm_replica *r);

/* One optimizer step: a batch drawn from the shard, forward, backward,
 * AdamW. Returns the batch's loss; *gnorm (may be NULL) gets the gradient
 * norm before clipping. */
float mm_replica_step(mm_replica *r, float *gnorm);
/* The same on a batch of `batch` sequences (1 .. the configured batch:
 * --fit-work batch): the loss and gradient are the mean over them, so a
 * smaller batch estimates the same gradient, with more variance. */
float mm_replica_step_batch(mm_replica *r, int batch, float *gnorm);

/* The model on `windows` windows of the validation sample. */
void mm_replica_evaluate(mm_replica *r, int windows, mm_eval_result *out);

/* Checkpoint: parameters, optimizer, sampling stream (st.rng is taken from
 * the replica) and st's bookkeeping (step, round, peer, push-sum weight,
 * seed). */
int mm_replica_save(const mm_replica *r, const char *path, mm_ckpt_state st,
                    char *err, size_t errlen);
/* Restores parameters, optimizer (and its schedule) and sampling stream;
 * *st receives the checkpoint's bookkeeping. Nothing changes on failure. */
int mm_replica_load(mm_replica *r, const char *path, mm_ckpt_state *st,
                    char *err, size_t errlen);

#endif
