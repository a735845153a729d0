/* One row per evaluation (or snapshot) round, merged across peers. */
#include "report/report_int.h"
#include "report/snapshot.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const mm_rep_eval *eval_at(const mm_rep_peer *p, int64_t round)
{
    size_t lo = 0, hi = p->n_evals;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->evals[mid].round < round)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n_evals && p->evals[lo].round == round ? &p->evals[lo] : NULL;
}

/* The latest round record at or before round. */
static const mm_rep_round *round_upto(const mm_rep_peer *p, int64_t round)
{
    size_t lo = 0, hi = p->n_rounds;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->rounds[mid].round <= round)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 ? &p->rounds[lo - 1] : NULL;
}

/* Bytes sent and received up to round, summed over every peer that ran
 * (a peer absent from this evaluation, stopped or not yet back, counts
 * with what it had sent by then), and the sent bytes per such peer: the
 * set never changes from row to row, and each peer's counters only grow
 * (summed over its restarts), so MB/peer never decreases. */
static void sent_upto(const mm_report *r, int64_t round, mm_rep_row *row)
{
    int n = 0;
    for (int i = 0; i < r->n_peers; i++) {
        const mm_rep_peer *p = &r->peers[i];
        if (!p->n_rounds)
            continue;
        n++;
        const mm_rep_round *rd = round_upto(p, round);
        if (rd) {
            row->sent_sum += rd->bytes_sent;
            row->recv_sum += rd->bytes_recv;
        }
    }
    row->sent_peer = n ? row->sent_sum / n : NAN;
}

typedef struct {
    int64_t *v;
    size_t n, cap;
} i64vec;

static void push(i64vec *a, int64_t x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        int64_t *nw = realloc(a->v, cap * sizeof *nw);
        if (!nw)
            return;
        a->v = nw;
        a->cap = cap;
    }
    a->v[a->n++] = x;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static bool file_exists(const char *path)
{
    return access(path, R_OK) == 0;
}

/* Rounds with a snapshot file of peer p, from its snap/ directory. */
static void snap_rounds(const char *dir, int id, i64vec *out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/node-%d/snap", dir, id);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        size_t len = strlen(n);
        if (n[0] != 'r' || len < 6 || strcmp(n + len - 4, ".bin"))
            continue;
        int64_t v = 0;
        bool ok = true;
        for (size_t i = 1; i < len - 4 && ok; i++) {
            ok = n[i] >= '0' && n[i] <= '9' && v < (int64_t)1e15;
            v = v * 10 + (n[i] - '0');
        }
        if (ok)
            push(out, v);
    }
    closedir(d);
}

static void minmeanmax(const double *v, int n, double *mn, double *mean, double *mx)
{
    *mn = *mean = *mx = NAN;
    if (n == 0)
        return;
    double s = 0, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        s += v[i];
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    *mn = isnan(s) ? NAN : lo;
    *mx = isnan(s) ? NAN : hi;
    *mean = s / n;
}

void mm__report_build_rows(mm_report *r, const mm_report_opts *opt)
{
    i64vec rounds = {0};
    for (int i = 0; i < r->n_peers; i++) {
        const mm_rep_peer *p = &r->peers[i];
        for (size_t k = 0; k < p->n_evals; k++)
            push(&rounds, p->evals[k].round);
        if (!(opt && opt->no_exact))
            snap_rounds(r->dir, p->id, &rounds);
    }
    if (rounds.n) /* (qsort of NULL is undefined even for 0 elements) */
        qsort(rounds.v, rounds.n, sizeof *rounds.v, cmp_i64);
    size_t nu = 0;
    for (size_t i = 0; i < rounds.n; i++)
        if (nu == 0 || rounds.v[nu - 1] != rounds.v[i])
            rounds.v[nu++] = rounds.v[i];
    r->rows = calloc(nu ? nu : 1, sizeof *r->rows);
    int *ids = malloc((size_t)(r->n_peers ? r->n_peers : 1) * sizeof *ids);
    double *acc = malloc((size_t)(r->n_peers ? r->n_peers : 1) * sizeof *acc);
    double *vl = malloc((size_t)(r->n_peers ? r->n_peers : 1) * sizeof *vl);
    if (!r->rows || !ids || !acc || !vl)
        goto out;
    for (size_t ri = 0; ri < nu; ri++) {
        int64_t round = rounds.v[ri];
        mm_rep_row *row = &r->rows[r->n_rows++];
        row->round = round;
        row->xi_exact = row->xi_sketch = row->xi = NAN;
        row->avg_norm = row->dev_min = row->dev_max = row->avg_val_loss = row->avg_val_acc = NAN;
        int n = 0, n_acc = 0, n_vl = 0, n_snap = 0, n_loss = 0, n_dist = 0, n_ctr = 0;
        double loss = 0, dist = 0, t = 0, tc = 0, tm = 0, tw = 0, norm = 0;
        int n_norm = 0, n_ex = 0, n_est = 0;
        double ex = 0, ex_avg = 0, est2 = 0;
        row->wall = NAN;
        for (int i = 0; i < r->n_peers; i++) {
            const mm_rep_peer *p = &r->peers[i];
            const mm_rep_eval *e = eval_at(p, round);
            char path[4096];
            bool snapped = false;
            if (!(opt && opt->no_exact)) {
                mm_snapshot_path(r->dir, p->id, round, path, sizeof path);
                snapped = file_exists(path);
            }
            if (!e && !snapped)
                continue;
            ids[n++] = p->id;
            n_snap += snapped;
            if (e) {
                if (!isnan(e->val_acc))
                    acc[n_acc++] = e->val_acc;
                if (!isnan(e->val_loss))
                    vl[n_vl++] = e->val_loss;
                if (!isnan(e->norm)) {
                    norm += e->norm;
                    n_norm++;
                }
                if (!(row->wall >= e->time))
                    row->wall = e->time;
            }
            const mm_rep_round *rd = round_upto(p, round);
            if (rd) {
                t += rd->time;
                tc += rd->t_compute;
                tm += rd->t_comm;
                tw += rd->t_wait;
                n_ctr++;
                if (!(row->wall >= rd->time))
                    row->wall = rd->time;
                if (rd->round == round && !isnan(rd->loss)) {
                    loss += rd->loss;
                    n_loss++;
                }
                if (rd->round == round) {
                    ex += rd->exchanges;
                    n_ex++;
                    if (isfinite(rd->xi_est)) {
                        est2 += rd->xi_est * rd->xi_est;
                        n_est++;
                    }
                }
                /* rounds 0..rd->round, one record each (a peer that
                 * skipped rounds to catch up ran no exchanges in them) */
                ex_avg += rd->exchanges_cum / (double)(rd->round + 1);
                if (rd->round == round && !isnan(rd->dist_mean)) {
                    dist += rd->dist_mean;
                    n_dist++;
                }
            }
        }
        row->n_present = n;
        minmeanmax(acc, n_acc, &row->acc_min, &row->acc_mean, &row->acc_max);
        minmeanmax(vl, n_vl, &row->vloss_min, &row->vloss_mean, &row->vloss_max);
        row->loss_mean = n_loss ? loss / n_loss : NAN;
        row->nbr_dist = n_dist ? dist / n_dist : NAN;
        row->exchanges = n_ex ? ex / n_ex : NAN;
        row->exchanges_avg = n_ctr ? ex_avg / n_ctr : NAN;
        row->xi_est = n_est ? sqrt(est2 / n_est) : NAN;
        row->norm_mean = n_norm ? norm / n_norm : NAN;
        sent_upto(r, round, row);
        row->f_compute = t > 0 ? tc / t : NAN;
        row->f_comm = t > 0 ? tm / t : NAN;
        row->f_wait = t > 0 ? tw / t : NAN;
        row->xi_sketch = mm__report_sketch_xi(r, round, &row->n_sketch);
        if (n >= 2 && n_snap == n)
            mm__report_exact(r, ids, n, round, opt, row);
        else if (n_snap > 0)
            mm__report_warn(r, opt, "round %lld: snapshots from %d of the %d peers present; "
                           "using the sketch estimate", (long long)round, n_snap, n);
        if (!isnan(row->xi_exact)) {
            row->xi = row->xi_exact;
            row->method = "exact";
        } else if (!isnan(row->xi_sketch)) {
            row->xi = row->xi_sketch;
            row->method = "sketch";
        } else {
            row->method = "none";
        }
    }
out:
    free(rounds.v);
    free(ids);
    free(acc);
    free(vl);
}
