/* Several runs side by side (same training, different topologies): the
 * final figures of each, as a table and a CSV. */
#include "report/report_int.h"

#include <math.h>
#include <string.h>

/* The final figures of a run: the last evaluation round's accuracy and
 * loss, the last consensus distance (and how it was measured), bytes sent
 * per peer and wall time from each peer's last round record, and how the
 * peers ended (done, refused, isolated). Shared with
 * the sweep's aggregation (report_sweep.c). */
void mm__report_finals(const mm_report *r, mm__rep_finals *f)
{
    memset(f, 0, sizeof *f);
    f->round = f->last_round = -1;
    f->acc = f->vloss = f->xi = f->sent_peer = f->wall = f->exchanges = NAN;
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
    double sent = 0, ex = 0;
    int n = 0;
    for (int i = 0; i < r->n_peers; i++) {
        const mm_rep_peer *p = &r->peers[i];
        f->n_done += p->ended && !strcmp(p->end_reason, "done");
        f->n_refused += p->ended && !strcmp(p->end_reason, "refused");
        f->n_isolated += p->ended && !strcmp(p->end_reason, "isolated");
        f->refused += p->refused;
        if (p->ended && !strcmp(p->end_reason, "refused") && p->refused_code[0] && !f->top[0])
            snprintf(f->top, sizeof f->top, "%s", p->refused_code);
        if (!p->n_rounds)
            continue;
        const mm_rep_round *last = &p->rounds[p->n_rounds - 1];
        sent += last->bytes_sent;
        ex += last->exchanges_cum / (double)(last->round + 1);
        n++;
        if (!(f->wall >= last->time))
            f->wall = last->time;
        if (last->round > f->last_round)
            f->last_round = last->round;
    }
    f->sent_peer = n ? sent / n : NAN;
    f->exchanges = n ? ex / n : NAN;
    /* without a refused peer, the commonest refusal of any peer */
    double most = 0;
    for (int i = 0; i < r->n_peers && !f->top[0] && f->refused > 0; i++)
        if (r->peers[i].refused > most && r->peers[i].top_refusal[0]) {
            most = r->peers[i].refused;
            snprintf(f->top, sizeof f->top, "%s", r->peers[i].top_refusal);
        }
}

/* The end column: the count of the worst way peers ended (refused, then
 * isolated, then anything but done), else "N done". */
static void end_text(const mm_report *r, const mm__rep_finals *f, char *buf, size_t len)
{
    int other = r->n_peers - f->n_done - f->n_refused - f->n_isolated;
    if (f->n_refused)
        snprintf(buf, len, "%d refused", f->n_refused);
    else if (f->n_isolated)
        snprintf(buf, len, "%d isolated", f->n_isolated);
    else if (other)
        snprintf(buf, len, "%d not done", other);
    else
        snprintf(buf, len, "%d done", f->n_done);
}

#define N(f, v) mm__report_num((char[32]){0}, 32, f, v)

/* The codec column: "-" for plain D-PSGD, else "CODEC g=GAMMA". */
static void codec_text(const mm_report *r, char *buf, size_t len)
{
    if (!r->compress[0])
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%s g=%g", r->compress, r->gamma);
}

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
        mm__rep_finals f;
        mm__report_finals(runs[k], &f);
        if (!isnan(f.vloss) && !(t >= f.vloss))
            t = f.vloss;
    }
    return t;
}

/* The refused column: "0", or the count and the commonest reason. */
static void refused_text(const mm__rep_finals *f, char *buf, size_t len)
{
    if (f->refused > 0)
        snprintf(buf, len, "%.0f %s", f->refused, f->top);
    else
        snprintf(buf, len, "0");
}

/* The name, topology and refused columns are as wide as their longest
 * entry (at least the header's), so long topology paths do not push the
 * figures out of line and every line of the table is as long. */
void mm_report_compare_table(mm_report *const *runs, int n, double target, FILE *out)
{
    int wname = 20, wtopo = 22, wref = 7;
    for (int k = 0; k < n; k++) {
        char name[256], ref[48];
        mm__rep_finals f;
        mm__report_finals(runs[k], &f);
        mm__report_run_name(runs[k], name, sizeof name);
        refused_text(&f, ref, sizeof ref);
        int ln = (int)strlen(name), lt = runs[k]->topology[0] ? (int)strlen(runs[k]->topology) : 1;
        if (ln > wname)
            wname = ln;
        if (lt > wtopo)
            wtopo = lt;
        if ((int)strlen(ref) > wref)
            wref = (int)strlen(ref);
    }
    bool any_codec = false;
    int wcodec = 5;
    for (int k = 0; k < n; k++) {
        char c[80];
        codec_text(runs[k], c, sizeof c);
        any_codec |= runs[k]->compress[0] != 0;
        if ((int)strlen(c) > wcodec)
            wcodec = (int)strlen(c);
    }
    char codec_head[96] = "";
    if (any_codec)
        snprintf(codec_head, sizeof codec_head, "  %-*s", wcodec, "codec");
    fprintf(out, "%-*s %-*s %5s %7s%s %8s %8s %11s %-6s %10s %9s %6s %9s %9s  %-11s %-*s\n",
            wname, "run", wtopo, "topology", "peers", "rounds", codec_head, "acc", "val_loss",
            "consensus", "how", "MB/peer", "wall_s", "G", "r_target", "t_target", "end", wref,
            "refused");
    bool bad = false;
    for (int k = 0; k < n; k++) {
        mm__rep_finals f;
        mm__report_finals(runs[k], &f);
        char name[256], end[32], ref[48], rt[24] = "-";
        mm__report_run_name(runs[k], name, sizeof name);
        end_text(runs[k], &f, end, sizeof end);
        refused_text(&f, ref, sizeof ref);
        bad |= f.n_refused || f.n_isolated;
        char codec[96] = "";
        if (any_codec) {
            char c[80];
            codec_text(runs[k], c, sizeof c);
            snprintf(codec, sizeof codec, "  %-*s", wcodec, c);
        }
        double tt;
        int64_t r = mm_report_time_to_loss(runs[k], target, &tt);
        if (r >= 0)
            snprintf(rt, sizeof rt, "%lld", (long long)r);
        fprintf(out, "%-*s %-*s %5d %7lld%s %8s %8s %11s %-6s %10s %9s %6s %9s %9s  %-11s %-*s\n",
                wname, name, wtopo, runs[k]->topology[0] ? runs[k]->topology : "?",
                runs[k]->n_peers, (long long)(f.last_round + 1), codec, N("%.4f", f.acc),
                N("%.4f", f.vloss), N("%.4e", f.xi), f.method, N("%.3f", f.sent_peer / 1e6),
                N("%.1f", f.wall), N("%.2f", f.exchanges), rt, N("%.1f", tt), end, wref, ref);
    }
    fprintf(out, "(final = the last evaluation round of each run; MB/peer = bytes sent per peer; "
                 "G = averaging exchanges per round, mean over the run; end = how its peers ended; "
                 "refused = connections refused, commonest reason%s)\n",
            any_codec ? "; codec = --compress and its --consensus-step, - plain D-PSGD" : "");
    fprintf(out, "(r_target, t_target = the first evaluation round, and its wall time in s, at "
                 "which the mean val_loss over the peers was <= %s; - when never)\n",
            N("%.4f", target));
    if (bad)
        fprintf(out, "A run with refused or isolated peers did not gossip as configured: its "
                     "figures are not a comparison of topologies (murmur report RUN_DIR says why)\n");
}

int mm_report_compare_csv(mm_report *const *runs, int n, double target, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "run,dir,topology,peers,rounds,eval_round,final_acc,final_val_loss,"
               "final_consensus,consensus_method,bytes_sent_per_peer,wall_s,exchanges_per_round,"
               "peers_done,peers_refused,peers_isolated,refused,top_refusal,compress,"
               "consensus_step,target_loss,round_to_target,time_to_target_s\n");
    for (int k = 0; k < n; k++) {
        mm__rep_finals fi;
        mm__report_finals(runs[k], &fi);
        char name[256];
        mm__report_run_name(runs[k], name, sizeof name);
        mm__report_csv_str(f, name);
        fputc(',', f);
        mm__report_csv_str(f, runs[k]->dir);
        fputc(',', f);
        mm__report_csv_str(f, runs[k]->topology);
        fprintf(f, ",%d,%lld,%lld", runs[k]->n_peers, (long long)(fi.last_round + 1),
                (long long)fi.round);
        mm__report_csv_num(f, "%.9g", fi.acc);
        mm__report_csv_num(f, "%.9g", fi.vloss);
        mm__report_csv_num(f, "%.9g", fi.xi);
        fprintf(f, ",%s", fi.method);
        mm__report_csv_num(f, "%.1f", fi.sent_peer);
        mm__report_csv_num(f, "%.3f", fi.wall);
        mm__report_csv_num(f, "%.4f", fi.exchanges);
        fprintf(f, ",%d,%d,%d,%.0f,%s", fi.n_done, fi.n_refused, fi.n_isolated, fi.refused,
                fi.top);
        fputc(',', f);
        mm__report_csv_str(f, runs[k]->compress);
        mm__report_csv_num(f, "%.9g", runs[k]->compress[0] ? runs[k]->gamma : NAN);
        double tt;
        int64_t rt = mm_report_time_to_loss(runs[k], target, &tt);
        mm__report_csv_num(f, "%.9g", target);
        if (rt >= 0)
            fprintf(f, ",%lld", (long long)rt);
        else
            fputc(',', f);
        mm__report_csv_num(f, "%.3f", tt);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -1;
}
