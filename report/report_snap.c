/* Exact consensus distance from parameter snapshots (report/snapshot.h):
 * all peers' files are streamed side by side in chunks, so memory stays at
 * one averaged vector whatever the number of peers, and each file's
 * SHA-256 is checked on the same pass. */
#include "report/report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/snapshot.h"

#define CHUNK 65536

int mm__report_exact(mm_report *r, const int *ids, int n, int64_t round,
                     const mm_report_opts *opt, mm_rep_row *row)
{
    mm_snapshot_reader **s = calloc((size_t)n, sizeof *s);
    double *dev2 = calloc((size_t)n, sizeof *dev2);
    float *xbar = NULL, *x = malloc((size_t)n * CHUNK * sizeof *x);
    char err[4400];
    uint64_t count = 0;
    int rc = -1;
    if (!s || !dev2 || !x)
        goto out;
    for (int i = 0; i < n; i++) {
        s[i] = mm_snapshot_open(r->dir, ids[i], round, err, sizeof err);
        if (!s[i]) {
            mm__report_warn(r, opt, "%s", err);
            goto out;
        }
        uint64_t nn = mm_snapshot_count(s[i]);
        if (i == 0) {
            count = nn;
        } else if (nn != count) {
            mm__report_warn(r, opt, "%s: %llu parameters, other peers have %llu",
                            mm_snapshot_file(s[i]), (unsigned long long)nn,
                            (unsigned long long)count);
            goto out;
        }
    }
    if (r->params > 0 && (uint64_t)r->params != count)
        mm__report_warn(r, opt, "round %lld: snapshots hold %llu parameters, start lines say %lld",
                        (long long)round, (unsigned long long)count, (long long)r->params);
    xbar = malloc(count * sizeof *xbar); /* for the averaged model; the distances do not need it */

    double norm2 = 0;
    for (uint64_t base = 0; base < count; base += CHUNK) {
        size_t m = count - base < CHUNK ? (size_t)(count - base) : CHUNK;
        for (int i = 0; i < n; i++) {
            if (mm_snapshot_read(s[i], x + (size_t)i * CHUNK, m, err, sizeof err) != 0) {
                mm__report_warn(r, opt, "%s", err);
                goto out;
            }
        }
        for (size_t k = 0; k < m; k++) {
            double mean = 0;
            for (int i = 0; i < n; i++)
                mean += x[(size_t)i * CHUNK + k];
            mean /= n;
            for (int i = 0; i < n; i++) {
                double d = x[(size_t)i * CHUNK + k] - mean;
                dev2[i] += d * d;
            }
            norm2 += mean * mean;
            if (xbar)
                xbar[base + k] = (float)mean;
        }
    }
    for (int i = 0; i < n; i++) {
        if (mm_snapshot_verify(s[i], err, sizeof err) != 0) {
            mm__report_warn(r, opt, "%s", err);
            goto out;
        }
    }
    double sum = 0, mn = INFINITY, mx = 0;
    for (int i = 0; i < n; i++) {
        sum += dev2[i];
        mn = dev2[i] < mn ? dev2[i] : mn;
        mx = dev2[i] > mx ? dev2[i] : mx;
    }
    row->xi_exact = sqrt(sum / n);
    row->dev_min = sqrt(mn);
    row->dev_max = sqrt(mx);
    row->avg_norm = sqrt(norm2);
    if (xbar && opt->eval_average) {
        double l, a;
        if (opt->eval_average(xbar, (size_t)count, round, r->dir, &l, &a) == 0) {
            row->avg_val_loss = l;
            row->avg_val_acc = a;
        }
    }
    rc = 0;
out:
    for (int i = 0; s && i < n; i++)
        mm_snapshot_close(s[i]);
    free(s);
    free(dev2);
    free(x);
    free(xbar);
    return rc;
}
