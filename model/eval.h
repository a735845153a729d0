/* Evaluation on the fixed validation sample, and the trivial predictors a
 * model must beat to have learnt anything. */
#ifndef MURMUR_EVAL_H
#define MURMUR_EVAL_H

#include "model/data.h"
#include "model/model.h"

#define MM_EVAL_LABELS 64 /* labels counted one by one; more: none are */

typedef struct {
    double loss;       /* mean cross-entropy, nats per byte */
    double bpb;        /* bits per byte = loss / ln 2 */
    double acc;        /* next-byte top-1 accuracy */
    long positions;    /* predictions scored */
    /* Per label of the validation text (mm_shard's labels), when the shard
     * has 1..MM_EVAL_LABELS of them (else n_labels = 0): the positions whose
     * target byte lies in a file of that label, and how many were right. */
    int n_labels;
    long label_positions[MM_EVAL_LABELS];
    long label_correct[MM_EVAL_LABELS];
} mm_eval_result;

/* Runs the model on validation windows 0..n_windows-1 (mm_val_window), B at
 * a time with T bytes of context each (n_windows is rounded up to a multiple
 * of B), and counts its hits per label. tokens is scratch of B*(T+1) bytes. */
void mm_evaluate(mm_model *m, const mm_shard *s, int n_windows, int B, int T, uint8_t *tokens,
                 mm_eval_result *r);

typedef struct {
    int top_byte;      /* the most frequent byte of the training shard */
    double top_acc;    /* accuracy of always predicting it on the validation sample */
    double unigram_bpb;/* bits per byte of the training byte frequencies on it */
} mm_baseline;

/* Adds the hits hit[0..T) of validation window k of n (1 where the
 * prediction of byte t+1 of the window was right) to r's counts per label:
 * each position counts for the label of its target byte (mm_val_label_at
 * of the window's offset + t + 1). Nothing when r->n_labels is 0. */
void mm_eval_tally(const mm_shard *s, int k, int n, int T, const uint8_t *hit,
                   mm_eval_result *r);

/* Scores the same validation positions mm_evaluate scores. */
void mm_baseline_compute(const mm_shard *s, int n_windows, int B, int T, mm_baseline *b);

#endif
