/* Uneven peers in the report (docs/node.md, "Uneven peers";
 * docs/metrics.md, the round line's deadline, waited, paced_by, batch,
 * steps_done): per peer what its rounds waited and computed, and who set
 * the pace of its neighbours' rounds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "report/report_int.h"

#define F(f, v) mm__report_num((char[32]){0}, 32, f, v)

typedef struct {
    long rounds;            /* rounds whose line has the pace keys */
    double deadline, waited, batch, steps; /* their sums */
    long own;               /* rounds whose pace its own compute set */
    long set;               /* other peers' rounds whose pace it set */
} pace_sums;

/* Sums p's rounds into s, and counts in by_id[j].set the rounds whose
 * pace another peer j set (n_ids: ids 0 .. n_ids - 1). Whether p has any. */
static bool sum_peer(const mm_rep_peer *p, pace_sums *s, pace_sums *by_id, int n_ids)
{
    for (size_t i = 0; i < p->n_rounds; i++) {
        const mm_rep_round *rd = &p->rounds[i];
        if (rd->paced_by < 0)
            continue;
        s->rounds++;
        s->deadline += isfinite(rd->deadline) ? rd->deadline : 0;
        s->waited += isfinite(rd->waited) ? rd->waited : 0;
        s->batch += isfinite(rd->batch) ? rd->batch : 0;
        s->steps += isfinite(rd->steps_done) ? rd->steps_done : 0;
        if (rd->paced_by == p->id)
            s->own++;
        else if (rd->paced_by < n_ids)
            by_id[rd->paced_by].set++;
    }
    return s->rounds > 0;
}

void mm__report_print_pace(const mm_report *r, FILE *out)
{
    if (r->n_peers <= 0)
        return;
    pace_sums *s = calloc((size_t)r->n_peers, sizeof *s);
    if (!s)
        return;
    /* paced_by names a peer id; the report's peers are indexed by node-K
     * directory, so the ids are looked up through this map */
    int max_id = 0;
    for (int i = 0; i < r->n_peers; i++)
        if (r->peers[i].id > max_id)
            max_id = r->peers[i].id;
    pace_sums *by_id = calloc((size_t)max_id + 1, sizeof *by_id);
    bool any = false;
    if (by_id)
        for (int i = 0; i < r->n_peers; i++)
            any |= sum_peer(&r->peers[i], &s[i], by_id, max_id + 1);
    if (!any) {
        free(s);
        free(by_id);
        return;
    }
    fprintf(out, "\nuneven peers (--deadline learn, --fit-work): per round, means over the peer's "
                 "rounds; own pace: rounds its own compute ended last;\nset the pace of: its "
                 "neighbours' rounds whose wait its vector ended (or the deadline cut)\n");
    fprintf(out, "%-8s %7s %11s %9s %6s %6s %9s %16s\n", "peer", "rounds", "deadline_s",
            "waited_s", "batch", "steps", "own pace", "set the pace of");
    long total = 0, best_n = 0;
    int best = -1;
    for (int i = 0; i < r->n_peers; i++) {
        const pace_sums *p = &s[i];
        int id = r->peers[i].id;
        long set = by_id[id].set;
        total += p->rounds - p->own;
        if (set > best_n) {
            best_n = set;
            best = id;
        }
        if (!p->rounds) {
            fprintf(out, "node-%-3d %7d %11s %9s %6s %6s %9s %16ld\n", id, 0, "-", "-", "-", "-",
                    "-", set);
            continue;
        }
        double k = (double)p->rounds;
        fprintf(out, "node-%-3d %7ld %11s %9s %6s %6s %9ld %16ld\n", id, p->rounds,
                F("%.4f", p->deadline / k), F("%.4f", p->waited / k), F("%.1f", p->batch / k),
                F("%.2f", p->steps / k), p->own, set);
    }
    if (best >= 0 && total > 0)
        fprintf(out, "who set the pace: peer %d, of %ld of the %ld rounds a neighbour's vector "
                     "ended (%.0f %%)\n", best, best_n, total, 100.0 * (double)best_n / (double)total);
    free(s);
    free(by_id);
}
