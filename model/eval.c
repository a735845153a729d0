/* The baselines score exactly the positions the model is scored on, so the
 * two accuracies are comparable number for number. */
#include "model/eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int rounded(int n_windows, int B) { return (n_windows + B - 1) / B * B; }

void mm_eval_tally(const mm_shard *s, int k, int n, int T, const uint8_t *hit,
                   mm_eval_result *r)
{
    if (r->n_labels < 1)
        return;
    size_t off = mm_val_window_offset(s, k, n, T);
    for (int t = 0; t < T; t++) {
        int l = mm_val_label_at(s, off + (size_t)t + 1);
        if (l < 0 || l >= r->n_labels)
            continue;
        r->label_positions[l]++;
        r->label_correct[l] += hit[t];
    }
}

void mm_evaluate(mm_model *m, const mm_shard *s, int n_windows, int B, int T, uint8_t *tokens,
                 mm_eval_result *r)
{
    int n = rounded(n_windows, B);
    double loss = 0;
    long correct = 0;
    memset(r, 0, sizeof *r);
    r->n_labels = s->n_labels <= MM_EVAL_LABELS && s->n_val_files > 0 ? s->n_labels : 0;
    uint8_t *hit = r->n_labels ? malloc((size_t)B * T) : NULL;
    if (!hit)
        r->n_labels = 0; /* out of memory: the totals only */
    for (int k = 0; k < n; k += B) {
        for (int b = 0; b < B; b++)
            mm_val_window(s, k + b, n, tokens + (size_t)b * (T + 1), T);
        loss += mm_model_forward(m, tokens, B, T);
        correct += mm_model_correct_at(m, tokens, hit);
        for (int b = 0; hit && b < B; b++)
            mm_eval_tally(s, k + b, n, T, hit + (size_t)b * T, r);
    }
    free(hit);
    r->positions = (long)n * T;
    r->loss = loss / (n / B);
    r->bpb = r->loss / log(2.0);
    r->acc = (double)correct / (double)r->positions;
}

void mm_baseline_compute(const mm_shard *s, int n_windows, int B, int T, mm_baseline *b)
{
    double count[256] = {0};
    for (size_t i = 0; i < s->train_len; i++)
        count[s->train[i]]++;
    int top = 0;
    for (int c = 1; c < 256; c++)
        if (count[c] > count[top])
            top = c;
    /* Add-one smoothing: a byte never seen in training still gets a finite cost. */
    double total = (double)s->train_len + 256;
    int n = rounded(n_windows, B);
    uint8_t *w = malloc((size_t)T + 1);
    long hits = 0, pos = 0;
    double bits = 0;
    for (int k = 0; w && k < n; k++) {
        mm_val_window(s, k, n, w, T);
        for (int t = 1; t <= T; t++) {
            hits += w[t] == top;
            bits -= log2((count[w[t]] + 1) / total);
            pos++;
        }
    }
    free(w);
    b->top_byte = top;
    b->top_acc = pos ? (double)hits / pos : 0;
    b->unigram_bpb = pos ? bits / pos : 0;
}
