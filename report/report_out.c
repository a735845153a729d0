/* The report's text outputs: the table, the CSV and the progress line. */
#include "report/report_int.h"

#include <math.h>
#include <string.h>

#include "net/counters.h"

void mm__report_cell(FILE *out, int w, const char *s)
{
    int cols = 0;
    for (const char *p = s; *p; p++)
        cols += ((unsigned char)*p & 0xC0) != 0x80;
    fprintf(out, " %*s%s", w - cols > 0 ? w - cols : 0, "", s);
}

const char *mm__report_num(char *buf, size_t len, const char *f, double v)
{
    if (isnan(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, f, v);
    return buf;
}

void mm__report_run_name(const mm_report *r, char *buf, size_t len)
{
    snprintf(buf, len, "%s", r->dir);
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = 0;
    const char *s = strrchr(buf, '/');
    if (s)
        memmove(buf, s + 1, strlen(s + 1) + 1);
}

#define F(f, v) mm__report_num((char[32]){0}, 32, f, v)

const char *mm_report_refusal_words(const char *name)
{
    /* the configuration refusals (net/counters.h) */
    static const struct { const char *name, *words; bool config; } w[] = {
#define MM_X(code, name, config, words) {name, words, config},
        MM_REFUSAL_CODES(MM_X)
#undef MM_X
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (w[i].config && !strcmp(name, w[i].name))
            return w[i].words;
    return NULL;
}

/* The end column: how the peer ended, or that it still runs. */
static const char *end_of(const mm_rep_peer *p)
{
    if (!p->has_metrics)
        return "none";
    if (!p->ended && p->has_launch_exit)
        return p->launch_exit > 128 ? "killed" : "exited"; /* with no end line */
    if (!p->ended)
        return p->isolated_now ? "isolated?" : "running?";
    return p->end_reason[0] ? p->end_reason : "end";
}

/* Whether a peer that ended mixed with nobody for longer than its limit at
 * a stretch (its end line says so; a peer alone the whole run ends
 * `isolated` instead). */
static bool alone_long(const mm_rep_peer *p)
{
    return p->ended && p->longest_alone_s > p->alone_limit_s && p->rounds_alone > 0;
}

/* "peer K: code" (+N more) of the refused neighbours, or why it is alone. */
static void why_of(const mm_rep_peer *p, char *buf, size_t len)
{
    if (p->n_refused_nbrs > 1 && p->first_refused >= 0)
        snprintf(buf, len, "peer %d: %s (+%d more)", p->first_refused, p->refused_code,
                 p->n_refused_nbrs - 1);
    else if (p->n_refused_nbrs > 0 && p->first_refused >= 0)
        snprintf(buf, len, "peer %d: %s", p->first_refused, p->refused_code);
    else if (!p->ended && p->has_launch_exit && p->launch_exit > 128)
        snprintf(buf, len, "no end line: killed by signal %d%s", p->launch_exit - 128,
                 p->launch_exit == 128 + 9 ? " (SIGKILL)" : "");
    else if (!p->ended && p->has_launch_exit)
        snprintf(buf, len, "no end line: exited with status %d", p->launch_exit);
    else if (!strcmp(end_of(p), "isolated") || p->isolated_now)
        snprintf(buf, len, "mixed with no neighbour");
    else if (alone_long(p))
        snprintf(buf, len, "ALONE %.0f of %.0f rounds, longest %.0f s", p->rounds_alone,
                 p->rounds_with_nbrs, p->longest_alone_s);
    else
        snprintf(buf, len, "-");
}

void mm_report_print_table(const mm_report *r, FILE *out)
{
    fprintf(out, "run %s: %d peer%s (%d expected), topology %s, algo %s%s%s, %lld parameters\n",
            r->dir, r->n_peers, r->n_peers == 1 ? "" : "s", r->n_expected,
            r->topology[0] ? r->topology : "?", r->algo[0] ? r->algo : "?",
            r->outer[0] ? ", outer " : "", r->outer, (long long)r->params);
    fprintf(out, "consensus distance Xi = sqrt(1/n sum ||x_i - xbar||^2) over the peers present; "
                 "time split and bytes are cumulative to that round;\nMB/peer: sent by every "
                 "peer that ran (present or not) up to that round, per peer\n\n");
    fprintf(out, "%8s %5s %11s %-6s %7s %7s %7s %8s %8s %8s %8s %10s %5s %5s %5s %9s %5s\n",
            "round", "peers", "consensus", "how", "acc", "acc_min", "acc_max", "val_loss",
            "vl_min", "vl_max", "train", "MB/peer", "comp%", "comm%", "wait%", "wall_s", "G");
    for (size_t i = 0; i < r->n_rows; i++) {
        const mm_rep_row *w = &r->rows[i];
        fprintf(out, "%8lld %2d/%-2d %11s %-6s %7s %7s %7s %8s %8s %8s %8s %10s %5s %5s %5s %9s %5s\n",
                (long long)w->round, w->n_present, r->n_expected, F("%.4e", w->xi), w->method,
                F("%.4f", w->acc_mean), F("%.4f", w->acc_min), F("%.4f", w->acc_max),
                F("%.4f", w->vloss_mean), F("%.4f", w->vloss_min), F("%.4f", w->vloss_max),
                F("%.4f", w->loss_mean), F("%.3f", w->sent_peer / 1e6),
                F("%.1f", 100 * w->f_compute), F("%.1f", 100 * w->f_comm),
                F("%.1f", 100 * w->f_wait), F("%.1f", w->wall), F("%.2f", w->exchanges));
    }
    fprintf(out, "(G: exchanges a round, mean over the peers: --gossip-steps, the schedule's or "
                 "what consensus control agreed)\n");

    bool any_exact = false;
    for (size_t i = 0; i < r->n_rows; i++)
        any_exact |= !isnan(r->rows[i].xi_exact);
    if (any_exact) {
        fprintf(out, "\nexact rounds (snapshots): the averaged model xbar\n");
        bool any_est = false;
        for (size_t i = 0; i < r->n_rows; i++)
            any_est |= !isnan(r->rows[i].xi_est);
        fprintf(out, "%8s %11s %11s %11s %11s %11s %9s %9s %9s%s\n", "round", "Xi", "||xbar||",
                "Xi/||xbar||", "min|x-xbar|", "max|x-xbar|", "sketch%", "avg_loss", "avg_acc",
                any_est ? "     est%" : "");
        for (size_t i = 0; i < r->n_rows; i++) {
            const mm_rep_row *w = &r->rows[i];
            if (isnan(w->xi_exact))
                continue;
            double err = w->xi_exact > 0 ? 100 * (w->xi_sketch / w->xi_exact - 1) : NAN;
            double est = w->xi_exact > 0 ? 100 * (w->xi_est / w->xi_exact - 1) : NAN;
            fprintf(out, "%8lld %11s %11s %11s %11s %11s %9s %9s %9s", (long long)w->round,
                    F("%.4e", w->xi_exact), F("%.4e", w->avg_norm),
                    F("%.3e", w->avg_norm > 0 ? w->xi_exact / w->avg_norm : NAN),
                    F("%.4e", w->dev_min), F("%.4e", w->dev_max), F("%+.2f", err),
                    F("%.4f", w->avg_val_loss), F("%.4f", w->avg_val_acc));
            if (any_est)
                fprintf(out, " %9s", F("%+.2f", est));
            fputc('\n', out);
        }
        fprintf(out, "(sketch%%: error of the sketch estimate against exact; avg_loss/avg_acc: "
                     "the averaged model on the validation sample%s)\n",
                any_est ? "; est%: error of the peers' own estimate (consensus control)" : "");
    }

    fprintf(out, "\n%-8s %6s %8s %6s %-9s %10s %9s %5s %-24s %s\n", "peer", "starts", "rounds",
            "evals", "end", "MB sent", "wall_s", "bad", "refused (commonest)", "why");
    int n_refused = 0, n_isolated = 0, n_alone = 0, n_long = 0;
    char codes[256] = "";
    for (int i = 0; i < r->n_peers; i++) {
        const mm_rep_peer *p = &r->peers[i];
        const mm_rep_round *last = p->n_rounds ? &p->rounds[p->n_rounds - 1] : NULL;
        char rounds[24];
        if (last)
            snprintf(rounds, sizeof rounds, "%lld", (long long)last->round + 1);
        else
            snprintf(rounds, sizeof rounds, "0");
        char name[24], ref[48], why[96];
        snprintf(name, sizeof name, "node-%d", p->id);
        if (p->refused > 0)
            snprintf(ref, sizeof ref, "%.0f %s", p->refused, p->top_refusal);
        else
            snprintf(ref, sizeof ref, "0");
        why_of(p, why, sizeof why);
        const char *end = end_of(p);
        fprintf(out, "%-8s %6d %8s %6zu %-9s %10s %9s %5zu %-24s %s%s\n", name, p->n_starts, rounds,
                p->n_evals, end, F("%.3f", last ? last->bytes_sent / 1e6 : NAN),
                F("%.1f", last ? last->time : NAN), p->bad_lines, ref, why,
                p->torn_tail ? " (torn last line)" : "");
        if (!strcmp(end, "refused")) {
            n_refused++;
            if (p->refused_code[0] && !strstr(codes, p->refused_code) &&
                strlen(codes) + strlen(p->refused_code) + 3 < sizeof codes)
                snprintf(codes + strlen(codes), sizeof codes - strlen(codes), "%s%s",
                         codes[0] ? ", " : "", p->refused_code);
        }
        n_isolated += !strcmp(end, "isolated");
        n_alone += !strcmp(end, "isolated?");
        n_long += alone_long(p) && strcmp(end, "isolated") != 0;
    }
    /* Say what a misconfigured run is in words (docs/node.md, "Isolation
     * and refused neighbours"), once, under the table. */
    if (n_refused) {
        const char *words = codes[0] && !strchr(codes, ',') ? mm_report_refusal_words(codes) : NULL;
        fprintf(out, "\nMISCONFIGURED: %d peer%s could not mix with a neighbour for the whole run: "
                     "refused (%s%s%s); see each peer's ERROR lines in node.log\n",
                n_refused, n_refused == 1 ? "" : "s", codes[0] ? codes : "?",
                words ? ": " : "", words ? words : "");
    }
    int n_fresh = 0;
    for (int i = 0; i < r->n_peers; i++)
        n_fresh += r->peers[i].fresh_in_resumed;
    if (n_fresh) {
        fprintf(out, "\nRESTARTED FRESH: %d peer%s started again from round 0 in a resumed run "
                     "(no checkpoint):", n_fresh, n_fresh == 1 ? "" : "s");
        for (int i = 0; i < r->n_peers; i++)
            if (r->peers[i].fresh_in_resumed)
                fprintf(out, " node-%d", r->peers[i].id);
        fprintf(out, "; the rows mix its rounds with the others' from another point of the "
                     "run (consensus jumps where it rejoins)\n");
    }
    if (n_isolated)
        fprintf(out, "%sISOLATED: %d peer%s mixed with none of %s neighbours for the whole run, "
                     "and none was refused: were they started, at the addresses given?\n",
                n_refused ? "" : "\n", n_isolated, n_isolated == 1 ? "" : "s",
                n_isolated == 1 ? "its" : "their");
    if (n_alone)
        fprintf(out, "%s%d running peer%s mix%s with none of %s neighbours now (isolated?): "
                     "%s node.log says why\n", n_refused || n_isolated ? "" : "\n", n_alone,
                n_alone == 1 ? "" : "s", n_alone == 1 ? "es" : "", n_alone == 1 ? "its" : "their",
                n_alone == 1 ? "its" : "their");
    if (n_long)
        fprintf(out, "%sALONE: %d peer%s mixed with none of %s neighbours for longer than %s "
                     "limit at a stretch (the why column): %s trained alone then, and the "
                     "consensus distance does not measure one training; %s node.log says why\n",
                n_refused || n_isolated || n_alone ? "" : "\n", n_long, n_long == 1 ? "" : "s",
                n_long == 1 ? "its" : "their", n_long == 1 ? "its" : "their",
                n_long == 1 ? "it" : "they", n_long == 1 ? "its" : "their");
    mm__report_print_pace(r, out);
    if (r->warnings)
        fprintf(out, "\n%zu warning%s (above, on stderr)\n", r->warnings,
                r->warnings == 1 ? "" : "s");
}

/* CSV helpers shared by the report's CSVs (report_int.h). */
void mm__report_csv_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void mm__report_csv_num(FILE *f, const char *fm, double v)
{
    fputc(',', f);
    if (!isnan(v))
        fprintf(f, fm, v);
}

int mm_report_write_csv(const mm_report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "round,peers,consensus,method,consensus_exact,consensus_sketch,sketch_peers,"
               "acc_mean,acc_min,acc_max,val_loss_mean,val_loss_min,val_loss_max,train_loss,"
               "bytes_sent_sum,bytes_recv_sum,bytes_sent_per_peer,frac_compute,frac_comm,"
               "frac_wait,wall_s,nbr_dist,norm_mean,avg_norm,dev_min,dev_max,avg_val_loss,"
               "avg_val_acc,exchanges,exchanges_avg,xi_est\n");
    for (size_t i = 0; i < r->n_rows; i++) {
        const mm_rep_row *w = &r->rows[i];
        fprintf(f, "%lld,%d", (long long)w->round, w->n_present);
        mm__report_csv_num(f, "%.9g", w->xi);
        fprintf(f, ",%s", w->method);
        mm__report_csv_num(f, "%.9g", w->xi_exact);
        mm__report_csv_num(f, "%.9g", w->xi_sketch);
        fprintf(f, ",%d", w->n_sketch);
        const double v[] = {w->acc_mean, w->acc_min, w->acc_max, w->vloss_mean, w->vloss_min,
                            w->vloss_max, w->loss_mean};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            mm__report_csv_num(f, "%.9g", v[k]);
        mm__report_csv_num(f, "%.0f", w->sent_sum);
        mm__report_csv_num(f, "%.0f", w->recv_sum);
        mm__report_csv_num(f, "%.1f", w->sent_peer);
        const double u[] = {w->f_compute, w->f_comm, w->f_wait, w->wall, w->nbr_dist,
                            w->norm_mean, w->avg_norm, w->dev_min, w->dev_max,
                            w->avg_val_loss, w->avg_val_acc, w->exchanges,
                            w->exchanges_avg, w->xi_est};
        for (size_t k = 0; k < sizeof u / sizeof u[0]; k++)
            mm__report_csv_num(f, "%.9g", u[k]);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -1;
}

void mm_report_print_progress(const mm_report *r, double now, double stale_s, FILE *out)
{
    int64_t hi = -1, lo = -1;
    bool roundless = false; /* a peer with metrics but no round line yet */
    double loss = 0;
    int n_loss = 0, live = 0, n_ref = 0, n_iso = 0;
    char peers[256], top[24] = "";
    int np = 0;
    for (int i = 0; i < r->n_peers; i++) {
        const mm_rep_peer *p = &r->peers[i];
        if (p->n_rounds) {
            const mm_rep_round *last = &p->rounds[p->n_rounds - 1];
            hi = last->round > hi ? last->round : hi;
            lo = lo < 0 || last->round < lo ? last->round : lo;
            if (!isnan(last->loss)) {
                loss += last->loss;
                n_loss++;
            }
        } else if (p->has_metrics) {
            roundless = true;
        }
        /* . live, x stale (no write for stale_s), E ended, R ended refused,
         * I isolated (ended so, or alone now), D dead (its process ended
         * without an end line, as the launcher recorded), - no metrics */
        const char *end = end_of(p);
        char c = !p->has_metrics                 ? '-'
                 : !strcmp(end, "refused")       ? 'R'
                 : !strcmp(end, "isolated") || p->isolated_now ? 'I'
                 : p->ended                      ? 'E'
                 : p->has_launch_exit           ? 'D'
                 : now - p->mtime > stale_s      ? 'x'
                                                 : '.';
        if (!strcmp(end, "refused") || (p->isolated_now && p->n_refused_nbrs > 0)) {
            n_ref++;
            if (!top[0] && p->refused_code[0])
                snprintf(top, sizeof top, "%s", p->refused_code);
        } else if (!strcmp(end, "isolated") || p->isolated_now) {
            n_iso++;
        }
        live += c == '.';
        if (np < (int)sizeof peers - 4)
            peers[np++] = c;
    }
    peers[np] = 0;
    const mm_rep_row *acc = NULL, *xi = NULL;
    for (size_t i = 0; i < r->n_rows; i++) {
        if (!isnan(r->rows[i].acc_mean))
            acc = &r->rows[i];
        if (!isnan(r->rows[i].xi))
            xi = &r->rows[i];
    }
    if (hi < 0)
        fprintf(out, "round - (none done yet)");
    else if (roundless)
        fprintf(out, "round %lld (slowest: none done yet)", (long long)hi);
    else
        fprintf(out, "round %lld (slowest %lld)", (long long)hi, (long long)lo);
    fprintf(out, " | loss %s", F("%.4f", n_loss ? loss / n_loss : NAN));
    if (acc)
        fprintf(out, " | acc %.4f @%lld (%d peers)", acc->acc_mean, (long long)acc->round,
                acc->n_present);
    else
        fprintf(out, " | acc -");
    if (xi)
        fprintf(out, " | Xi %.3e %s @%lld", xi->xi, xi->method, (long long)xi->round);
    else
        fprintf(out, " | Xi -");
    if (n_ref)
        fprintf(out, " | refused %d (%s)", n_ref, top[0] ? top : "?");
    if (n_iso)
        fprintf(out, " | isolated %d", n_iso);
    fprintf(out, " | live %d/%d [%s]\n", live, r->n_expected, peers);
}
