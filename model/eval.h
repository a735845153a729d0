/* Evaluation on the fixed validation sample, and the trivial predictors a
 * model must beat to have learnt anything. */
#ifndef MURMUR_EVAL_H
#define MURMUR_EVAL_H

#include "model/data.h"
#include "model/model.h"

typedef struct {
    double loss;       /* mean cross-entropy, nats per byte */
    double bpb;        /* bits per byte = loss / ln 2 */
    double acc;        /* next-byte top-1 accuracy */
    long positions;    /* predictions scored */
} mm_eval_result;

/* Runs the model on validation windows 0..n_windows-1 (mm_val_window), B at
 * a time with T bytes of context each (n_windows is rounded up to a multiple
 * of B). tokens is scratch of B*(T+1) bytes. */
void mm_evaluate(mm_model *m, const mm_shard *s, int n_windows, int B, int T, uint8_t *tokens,
                 mm_eval_result *r);

typedef struct {
    int top_byte;      /* the most frequent byte of the training shard */
    double top_acc;    /* accuracy of always predicting it on the validation sample */
    double unigram_bpb;/* bits per byte of the training byte frequencies on it */
} mm_baseline;

/* Scores the same validation positions mm_evaluate scores. */
void mm_baseline_compute(const mm_shard *s, int n_windows, int B, int T, mm_baseline *b);

#endif
