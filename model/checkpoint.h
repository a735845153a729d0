/* Checkpoints: parameters, optimizer state, step, RNG and data position,
 * behind a header with a magic number, a version, the model config and
 * fingerprint, and a SHA-256 of everything. Written atomically (temp file,
 * fsync, rename, fsync of the directory); verified on load. The file format
 * is in docs/formats.md. */
#ifndef MURMUR_CHECKPOINT_H
#define MURMUR_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "base/rng.h"

typedef struct {
    int64_t step;        /* optimizer updates applied */
    int64_t round;       /* gossip rounds completed (0 for `murmur train`) */
    int32_t peer_id, n_peers;
    double pushsum_weight; /* push-sum weight w (1.0 outside push-sum) */
    mm_rng rng;          /* data sampling stream */
    uint64_t seed;       /* the run's seed */
    /* The outer optimizer's state (docs/outer.md), format version 2. On
     * save: written when x is not NULL. On load: copied into x and m (n
     * floats each) when the file has it and x is not NULL; has says
     * whether the file had it. */
    struct {
        float *x, *m;    /* outer parameters, outer momentum */
        int64_t step;    /* outer steps taken */
        int has;
    } outer;
    /* The compressed outer exchange's error feedback (gossip/ef.h), format
     * version 3. On save: written when e is not NULL. On load: copied into
     * e (n floats) when the file has it and e is not NULL; has says
     * whether the file had it. */
    struct {
        float *e;
        int has;
    } ef;
} mm_ckpt_state;

/* Write model params, optimizer state (with Decent-DP's accumulator when
 * opt->cfg.accum_steps > 1) and st to path atomically: format version 1,
 * version 2 when it holds an outer state or an accumulator, version 3 when
 * it holds an error feedback. */
int mm_checkpoint_save(const char *path, const mm_model *m, const mm_adamw *opt,
                       const mm_ckpt_state *st, char *err, size_t errlen);

/* Read the config stored in a checkpoint (to build the model before load). */
int mm_checkpoint_peek(const char *path, mm_model_config *cfg, char *err, size_t errlen);

/* Verify and load into an initialised model (same config) and optimizer
 * (opt may be NULL to skip the optimizer state; when given, its config -
 * learning-rate schedule, betas, decay, clip - is restored too, so that a
 * resumed run follows the same schedule; st may be NULL). Refuses, with a clear
 * message, a bad magic, version, checksum, truncated file, or a config that
 * differs from m's. Nothing is changed on failure. */
int mm_checkpoint_load(const char *path, mm_model *m, mm_adamw *opt,
                       mm_ckpt_state *st, char *err, size_t errlen);

#endif
