/* The report's accuracy per label of the validation sample (report.h
 * mm_report_labels): each peer's latest eval line with val_acc_labels, at
 * the latest such round over the peers. */
#include "report/report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char name[32];
    int n;
    double sum, min, max;
} label_acc;

/* The labels in order of first appearance over the peers, each with its
 * peers' accuracies folded in; NULL when out of memory. */
static label_acc *collect(const mm_report *r, int64_t round, int *n_out, int *peers)
{
    int cap = 0, n = 0;
    label_acc *a = NULL;
    *peers = 0;
    for (int i = 0; i < r->n_peers; i++) {
        const mm_rep_peer *p = &r->peers[i];
        if (p->n_labels == 0 || p->label_round != round)
            continue;
        (*peers)++;
        for (int k = 0; k < p->n_labels; k++) {
            int j = 0;
            while (j < n && strcmp(a[j].name, p->labels[k].name))
                j++;
            if (j == n) {
                if (n == cap) {
                    cap = cap ? 2 * cap : 16;
                    label_acc *nw = realloc(a, (size_t)cap * sizeof *nw);
                    if (!nw) {
                        free(a);
                        return NULL;
                    }
                    a = nw;
                }
                a[n] = (label_acc){.min = INFINITY, .max = -INFINITY};
                memcpy(a[n].name, p->labels[k].name, sizeof a[n].name);
                n++;
            }
            double v = p->labels[k].acc;
            a[j].n++;
            a[j].sum += v;
            a[j].min = v < a[j].min ? v : a[j].min;
            a[j].max = v > a[j].max ? v : a[j].max;
        }
    }
    *n_out = n;
    return a ? a : calloc(1, sizeof *a);
}

int mm_report_labels(const mm_report *r, FILE *out, const char *csv_path)
{
    int64_t round = -1;
    for (int i = 0; i < r->n_peers; i++)
        if (r->peers[i].n_labels > 0 && r->peers[i].label_round > round)
            round = r->peers[i].label_round;
    if (round < 0)
        return 0;
    int n = 0, peers = 0;
    label_acc *a = collect(r, round, &n, &peers);
    if (!a)
        return -1;
    FILE *csv = fopen(csv_path, "w");
    if (!csv) {
        free(a);
        return -1;
    }
    fprintf(out, "accuracy per label of the validation sample, round %lld, %d peer%s "
                 "(mean, min, max over the peers):\n",
            (long long)round, peers, peers == 1 ? "" : "s");
    fprintf(csv, "label,round,peers,acc_mean,acc_min,acc_max\n");
    for (int j = 0; j < n; j++) {
        double mean = a[j].sum / a[j].n;
        fprintf(out, "  %-12s %7.4f %7.4f %7.4f%s\n", a[j].name, mean, a[j].min, a[j].max,
                a[j].n < peers ? " (not every peer)" : "");
        mm__report_csv_str(csv, a[j].name);
        fprintf(csv, ",%lld,%d", (long long)round, a[j].n);
        mm__report_csv_num(csv, "%.6f", mean);
        mm__report_csv_num(csv, "%.6f", a[j].min);
        mm__report_csv_num(csv, "%.6f", a[j].max);
        fprintf(csv, "\n");
    }
    free(a);
    return fclose(csv) == 0 ? 1 : -1;
}
