/* Several runs side by side (same training, different topologies): the
 * final figures of each, as a table and a CSV. */
#include "report/report_int.h"

#include <math.h>
#include <string.h>

typedef struct {
    int64_t round, last_round;
    double acc, vloss, xi, sent_peer, wall;
    const char *method;
    int peers;
} final_figs;

static void finals(const mm_report *r, final_figs *f)
{
    memset(f, 0, sizeof *f);
    f->round = f->last_round = -1;
    f->acc = f->vloss = f->xi = f->sent_peer = f->wall = NAN;
    f->method = "none";
    for (size_t i = 0; i < r->n_rows; i++) {
        const mm_rep_row *w = &r->rows[i];
        if (!isnan(w->acc_mean)) {
            f->acc = w->acc_mean;
            f->vloss = w->vloss_mean;
            f->round = w->round;
            f->peers = w->n_present;
        }
        if (!isnan(w->xi)) {
            f->xi = w->xi;
            f->method = w->method;
        }
    }
    double sent = 0;
    int n = 0;
    for (int i = 0; i < r->n_peers; i++) {
        const mm_rep_peer *p = &r->peers[i];
        if (!p->n_rounds)
            continue;
        const mm_rep_round *last = &p->rounds[p->n_rounds - 1];
        sent += last->bytes_sent;
        n++;
        if (!(f->wall >= last->time))
            f->wall = last->time;
        if (last->round > f->last_round)
            f->last_round = last->round;
    }
    f->sent_peer = n ? sent / n : NAN;
}

#define N(f, v) mm__report_num((char[32]){0}, 32, f, v)

int64_t mm_report_time_to_loss(const mm_report *r, double target, double *wall)
{
    *wall = NAN;
    if (isnan(target))
        return -1;
    for (size_t i = 0; i < r->n_rows; i++) {
        const mm_rep_row *w = &r->rows[i];
        if (!isnan(w->vloss_mean) && w->vloss_mean <= target) {
            *wall = w->wall;
            return w->round;
        }
    }
    return -1;
}

double mm_report_common_target(mm_report *const *runs, int n)
{
    double t = NAN;
    for (int k = 0; k < n; k++) {
        final_figs f;
        finals(runs[k], &f);
        if (!isnan(f.vloss) && !(t >= f.vloss))
            t = f.vloss;
    }
    return t;
}

/* The name and topology columns are as wide as their longest entry (at
 * least the header's), so long topology paths do not push the figures out
 * of line. */
void mm_report_compare_table(mm_report *const *runs, int n, double target, FILE *out)
{
    int wname = 20, wtopo = 22;
    for (int k = 0; k < n; k++) {
        char name[256];
        mm__report_run_name(runs[k], name, sizeof name);
        int ln = (int)strlen(name), lt = runs[k]->topology[0] ? (int)strlen(runs[k]->topology) : 1;
        if (ln > wname)
            wname = ln;
        if (lt > wtopo)
            wtopo = lt;
    }
    fprintf(out, "%-*s %-*s %5s %7s %8s %8s %11s %-6s %10s %9s %9s %9s\n", wname, "run", wtopo,
            "topology", "peers", "rounds", "acc", "val_loss", "consensus", "how", "MB/peer",
            "wall_s", "r_target", "t_target");
    for (int k = 0; k < n; k++) {
        final_figs f;
        finals(runs[k], &f);
        char name[256], rt[24] = "-";
        mm__report_run_name(runs[k], name, sizeof name);
        double tt;
        int64_t r = mm_report_time_to_loss(runs[k], target, &tt);
        if (r >= 0)
            snprintf(rt, sizeof rt, "%lld", (long long)r);
        fprintf(out, "%-*s %-*s %5d %7lld %8s %8s %11s %-6s %10s %9s %9s %9s\n", wname, name, wtopo,
                runs[k]->topology[0] ? runs[k]->topology : "?", runs[k]->n_peers,
                (long long)(f.last_round + 1), N("%.4f", f.acc), N("%.4f", f.vloss),
                N("%.4e", f.xi), f.method, N("%.3f", f.sent_peer / 1e6), N("%.1f", f.wall), rt,
                N("%.1f", tt));
    }
    fprintf(out, "(final = the last evaluation round of each run; MB/peer = bytes sent per peer;\n"
                 " r_target, t_target = the first evaluation round, and its wall time in s, at which\n"
                 " the mean val_loss over the peers was <= %s; - when never)\n",
            N("%.4f", target));
}

static void csv_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, const char *fm, double v)
{
    fputc(',', f);
    if (!isnan(v))
        fprintf(f, fm, v);
}

int mm_report_compare_csv(mm_report *const *runs, int n, double target, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "run,dir,topology,peers,rounds,eval_round,final_acc,final_val_loss,"
               "final_consensus,consensus_method,bytes_sent_per_peer,wall_s,"
               "target_loss,round_to_target,time_to_target_s\n");
    for (int k = 0; k < n; k++) {
        final_figs fi;
        finals(runs[k], &fi);
        char name[256];
        mm__report_run_name(runs[k], name, sizeof name);
        csv_str(f, name);
        fputc(',', f);
        csv_str(f, runs[k]->dir);
        fputc(',', f);
        csv_str(f, runs[k]->topology);
        fprintf(f, ",%d,%lld,%lld", runs[k]->n_peers, (long long)(fi.last_round + 1),
                (long long)fi.round);
        csv_num(f, "%.9g", fi.acc);
        csv_num(f, "%.9g", fi.vloss);
        csv_num(f, "%.9g", fi.xi);
        fprintf(f, ",%s", fi.method);
        csv_num(f, "%.1f", fi.sent_peer);
        csv_num(f, "%.3f", fi.wall);
        double tt;
        int64_t rt = mm_report_time_to_loss(runs[k], target, &tt);
        csv_num(f, "%.9g", target);
        if (rt >= 0)
            fprintf(f, ",%lld", (long long)rt);
        else
            fputc(',', f);
        csv_num(f, "%.3f", tt);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -1;
}
