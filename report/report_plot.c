/* Plots through gnuplot. Each plot is a small .gp script written next to
 * its PNG (with the data it reads), so a user can restyle a figure and
 * rerun `gnuplot NAME.gp` in that directory. */
#include "report/report_int.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"

/* pngcairo when built in (nicer), else gnuplot's plain png. */
static const char TERMINAL[] =
    "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
    "    set terminal pngcairo size %d,%d enhanced font ',10'\n"
    "} else {\n"
    "    set terminal png size %d,%d\n"
    "}\n";

static bool on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    char buf[4096];
    for (const char *p = path; *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, n ? p : ".", prog);
        if (access(buf, X_OK) == 0)
            return true;
        p += n + (e ? 1 : 0);
        if (!e)
            break;
    }
    return false;
}

/* Runs gnuplot in the script's directory so the script's relative paths
 * work there and for the user later. */
int mm__report_gnuplot(const char *script)
{
    if (!on_path("gnuplot"))
        return 1;
    char dir[4096], base[4096];
    snprintf(dir, sizeof dir, "%s", script);
    snprintf(base, sizeof base, "%s", script);
    char *d = dirname(dir), *b = basename(base);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (chdir(d) != 0)
            _exit(127);
        execlp("gnuplot", "gnuplot", b, (char *)NULL);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

void mm__report_dat_num(FILE *f, double v)
{
    if (isnan(v) || isinf(v))
        fputs(" NaN", f);
    else
        fprintf(f, " %.9g", v);
}

void mm__gp_axis_add(mm__gp_axis *a, double v)
{
    if (!isfinite(v) || (a->log && !(v > 0)))
        return;
    a->lo = v < a->lo ? v : a->lo;
    a->hi = v > a->hi ? v : a->hi;
}

void mm__gp_axis_fix(FILE *f, const char *name, const mm__gp_axis *a)
{
    if (a->lo != a->hi)
        return; /* none (the caller says so), or a range gnuplot can take */
    double v = a->lo, pad = v != 0 ? 0.01 * fabs(v) : 1;
    fprintf(f, "set %srange [%.9g:%.9g]\n", name, v - pad, v + pad);
}

static FILE *open_in(const char *dir, const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    return fopen(path, "w");
}

void mm__report_gp_terminal(FILE *f, int w, int h)
{
    fprintf(f, TERMINAL, w, h, w, h);
}

/* Escape a title for a single-quoted gnuplot string. */
void mm__report_gp_title(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        if (*s == '_' || *s == '^' || *s == '@' || *s == '&' || *s == '{' || *s == '}')
            fputc(0x5c, f); /* enhanced text: a literal _ ^ @ & { } */
        fputc(*s, f);
    }
    fputc('\'', f);
}

/* A run's plots are titled with what it is: its directory's name, or for a
 * sweep's run (SETTING/sSEED) "SETTING, seed SEED", then its peers,
 * topology file and algorithm: "ring-8,lr=3e-3, seed 1: 8 peers, ring-8.topo,
 * dpsgd" (a bare "s1" told nothing). */
static void plot_title(const mm_report *r, char *buf, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", r->dir);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = 0;
    char *last = strrchr(path, '/');
    const char *name = last ? last + 1 : path;
    size_t used;
    if (last && name[0] == 's' && name[1] && strspn(name + 1, "0123456789") == strlen(name + 1)) {
        *last = 0;
        const char *setting = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        used = (size_t)snprintf(buf, len, "%s, seed %s", setting, name + 1);
    } else {
        used = (size_t)snprintf(buf, len, "%s", name);
    }
    if (used >= len)
        return;
    const char *topo = strrchr(r->topology, '/') ? strrchr(r->topology, '/') + 1 : r->topology;
    /* an outer run says so: "allreduce + outer nesterov (lr 0.7, ...)" */
    snprintf(buf + used, len - used, ": %d peers%s%s%s%s%s%s", r->n_peers, topo[0] ? ", " : "",
             topo, r->algo[0] ? ", " : "", r->algo, r->outer[0] ? " + outer " : "", r->outer);
}

static int plot(const char *dir, const char *name, FILE *out, int *made)
{
    char path[4096], png[4096];
    snprintf(path, sizeof path, "%s/%s.gp", dir, name);
    snprintf(png, sizeof png, "%s/%s.png", dir, name);
    int rc = mm__report_gnuplot(path);
    if (rc == 0) {
        fprintf(out, "plot: %s\n", png);
        (*made)++;
    } else if (rc < 0) {
        fprintf(stderr, "murmur report: gnuplot failed on %s\n", path);
    }
    return rc;
}

int mm_report_plots(const mm_report *r, const char *dir, FILE *out)
{
    if (!on_path("gnuplot")) {
        fprintf(stderr, "murmur report: gnuplot not found; no plots (apt-get install gnuplot-nox)\n");
        return 1;
    }
    char err[PATH_MAX + 64];
    if (mm_mkdir_p(dir, err, sizeof err) != 0) {
        fprintf(stderr, "murmur report: %s\n", err);
        return -1;
    }
    char path[4096];
    FILE *f = open_in(dir, "plot.dat", path, sizeof path);
    if (!f)
        return -1;
    fprintf(f, "# round xi xi_exact xi_sketch acc_mean acc_min acc_max val_loss train_loss\n");
    int n_xi = 0, n_ex = 0, n_sk = 0, n_acc = 0, n_both = 0;
    /* what each plot's axes show: rounds (of Xi, of accuracy), Xi (exact
     * and sketch; of the accuracy points), accuracy, validation loss */
    mm__gp_axis r_xi = MM__GP_AXIS(false), r_acc = MM__GP_AXIS(false);
    mm__gp_axis xi = MM__GP_AXIS(true), xi_acc = MM__GP_AXIS(true);
    mm__gp_axis acc = MM__GP_AXIS(false), acc_xi = MM__GP_AXIS(false);
    mm__gp_axis vloss = MM__GP_AXIS(false);
    for (size_t i = 0; i < r->n_rows; i++) {
        const mm_rep_row *w = &r->rows[i];
        fprintf(f, "%lld", (long long)w->round);
        mm__report_dat_num(f, w->xi);
        mm__report_dat_num(f, w->xi_exact);
        mm__report_dat_num(f, w->xi_sketch);
        mm__report_dat_num(f, w->acc_mean);
        mm__report_dat_num(f, w->acc_min);
        mm__report_dat_num(f, w->acc_max);
        mm__report_dat_num(f, w->vloss_mean);
        mm__report_dat_num(f, w->loss_mean);
        fputc('\n', f);
        n_xi += w->xi > 0;
        n_ex += w->xi_exact > 0;
        n_sk += w->xi_sketch > 0;
        n_acc += !isnan(w->acc_mean);
        n_both += w->xi > 0 && !isnan(w->acc_mean);
        if (w->xi_exact > 0 || w->xi_sketch > 0)
            mm__gp_axis_add(&r_xi, (double)w->round);
        mm__gp_axis_add(&xi, w->xi_exact);
        mm__gp_axis_add(&xi, w->xi_sketch);
        if (!isnan(w->acc_mean)) {
            mm__gp_axis_add(&r_acc, (double)w->round);
            mm__gp_axis_add(&acc, w->acc_min);
            mm__gp_axis_add(&acc, w->acc_max);
            mm__gp_axis_add(&acc, w->acc_mean);
        }
        mm__gp_axis_add(&vloss, w->vloss_mean);
        if (w->xi > 0 && !isnan(w->acc_mean)) {
            mm__gp_axis_add(&xi_acc, w->xi);
            mm__gp_axis_add(&acc_xi, w->acc_mean);
        }
    }
    fclose(f);
    char run[400];
    plot_title(r, run, sizeof run);
    int made = 0, failed = 0;

    if (n_xi) {
        f = open_in(dir, "consensus.gp", path, sizeof path);
        if (!f)
            return -1;
        mm__report_gp_terminal(f, 900, 560);
        fprintf(f, "set output 'consensus.png'\nset title ");
        mm__report_gp_title(f, run);
        fprintf(f, "\nset logscale y\nset format y '10^{%%L}'\nset grid\nset key top right\n"
                   "set xlabel 'round'\nset ylabel 'consensus distance {/Symbol X}'\n");
        mm__gp_axis_fix(f, "x", &r_xi);
        mm__gp_axis_fix(f, "y", &xi);
        fprintf(f, "plot ");
        const char *sep = "";
        if (n_ex) {
            fprintf(f, "'plot.dat' using 1:($3>0?$3:NaN) with linespoints pt 7 ps 0.6 lw 2 "
                       "title 'exact (snapshots)'");
            sep = ", \\\n     ";
        }
        if (n_sk)
            fprintf(f, "%s'plot.dat' using 1:($4>0?$4:NaN) with linespoints pt 6 ps 0.6 "
                       "title 'sketch estimate'", sep);
        fputc('\n', f);
        fclose(f);
        failed += plot(dir, "consensus", out, &made) < 0;
    } else {
        fprintf(stderr, "murmur report: no positive consensus distance: no consensus plot\n");
    }
    if (n_acc) {
        f = open_in(dir, "accuracy.gp", path, sizeof path);
        if (!f)
            return -1;
        mm__report_gp_terminal(f, 900, 560);
        fprintf(f, "set output 'accuracy.png'\nset title ");
        mm__report_gp_title(f, run);
        /* the key above the plot: below it, gnuplot set it over the x label */
        fprintf(f, "\nset grid\nset key outside top center horizontal\nset xlabel 'round'\n"
                   "set ylabel 'validation accuracy'\nset y2label 'loss'\nset y2tics\nset ytics nomirror\n");
        mm__gp_axis_fix(f, "x", &r_acc);
        mm__gp_axis_fix(f, "y", &acc);
        mm__gp_axis_fix(f, "y2", &vloss);
        fprintf(f, "plot 'plot.dat' using 1:6:7 with filledcurves fs transparent solid 0.25 "
                   "lc rgb '#4060c0' title 'accuracy min..max over peers', \\\n"
                   "     '' using 1:5 with linespoints pt 7 ps 0.6 lw 2 lc rgb '#2040a0' "
                   "title 'accuracy (mean)', \\\n"
                   "     '' using 1:8 axes x1y2 with lines dt 2 lc rgb '#c04020' "
                   "title 'validation loss (mean)'\n");
        fclose(f);
        failed += plot(dir, "accuracy", out, &made) < 0;
    }
    if (n_both) {
        f = open_in(dir, "acc_vs_consensus.gp", path, sizeof path);
        if (!f)
            return -1;
        mm__report_gp_terminal(f, 900, 560);
        fprintf(f, "set output 'acc_vs_consensus.png'\nset title ");
        mm__report_gp_title(f, run);
        fprintf(f, "\nset logscale x\nset format x '10^{%%L}'\nset grid\n"
                   "set xlabel 'consensus distance {/Symbol X}'\nset ylabel 'validation accuracy (mean)'\n"
                   "set cblabel 'round'\nunset key\n");
        mm__gp_axis_fix(f, "x", &xi_acc);
        mm__gp_axis_fix(f, "y", &acc_xi);
        mm__gp_axis_fix(f, "cb", &r_acc);
        fprintf(f, "plot 'plot.dat' using ($2>0?$2:NaN):5:1 with linespoints pt 7 ps 0.8 "
                   "lc palette\n");
        fclose(f);
        failed += plot(dir, "acc_vs_consensus", out, &made) < 0;
    }
    return failed ? -1 : 0;
}

/* A comparison's gnuplot script: the terminal, and the PNG (named without
 * its directory: gnuplot runs in the script's). NULL if it cannot be made. */
static FILE *gp_begin(const char *gp, const char *png, int w, int h)
{
    FILE *f = fopen(gp, "w");
    if (!f)
        return NULL;
    char pngbase[4200];
    snprintf(pngbase, sizeof pngbase, "%s", png);
    mm__report_gp_terminal(f, w, h);
    fprintf(f, "set output '%s'\n", basename(pngbase));
    return f;
}

/* Runs a comparison's gnuplot script and says where its PNG went. */
static int gp_run(const char *gp, const char *png, FILE *out)
{
    int rc = mm__report_gnuplot(gp);
    if (rc == 0)
        fprintf(out, "plot: %s\n", png);
    else if (rc < 0)
        fprintf(stderr, "murmur report: gnuplot failed on %s\n", gp);
    return rc;
}

/* The group of a run for the bytes plot: its name without a trailing
 * "-sSEED", so that the seeds of one setting share a colour. */
static int run_group(mm_report *const *runs, int k, char (*names)[256])
{
    mm__report_run_name(runs[k], names[k], sizeof names[k]);
    char *s = strrchr(names[k], '-');
    if (s && s[1] == 's' && s[2] && strspn(s + 2, "0123456789") == strlen(s + 2))
        *s = 0;
    for (int j = 0; j < k; j++)
        if (!strcmp(names[j], names[k]))
            return run_group(runs, j, names);
    int g = 0;
    for (int j = 0; j < k; j++) {
        bool first = true;
        for (int i = 0; i < j; i++)
            first &= strcmp(names[i], names[j]) != 0;
        g += first;
    }
    return g;
}

/* STEM-bytes.png: mean validation accuracy against megabytes sent per peer
 * (log scale), one colour per setting (the seeds of a setting, runs named
 * NAME-sSEED, share it): what compression buys (docs/compression.md). */
static int compare_bytes_plot(mm_report *const *runs, int n, const char *stem, FILE *out)
{
    char dat[4200], gp[4200], png[4200];
    snprintf(dat, sizeof dat, "%s-bytes.dat", stem);
    snprintf(gp, sizeof gp, "%s-bytes.gp", stem);
    snprintf(png, sizeof png, "%s-bytes.png", stem);
    FILE *f = fopen(dat, "w");
    if (!f)
        return -1;
    int points = 0;
    mm__gp_axis mb = MM__GP_AXIS(true), acc = MM__GP_AXIS(false);
    for (int k = 0; k < n; k++) {
        fprintf(f, "# run %d: %s\n# MB_sent_per_peer acc_mean round\n", k, runs[k]->dir);
        for (size_t i = 0; i < runs[k]->n_rows; i++) {
            const mm_rep_row *w = &runs[k]->rows[i];
            if (isnan(w->acc_mean) || !(w->sent_peer > 0) || w->round == 0)
                continue; /* (round 0: nothing exchanged yet, the HELLOs' bytes only) */
            mm__report_dat_num(f, w->sent_peer / 1e6);
            mm__report_dat_num(f, w->acc_mean);
            fprintf(f, " %lld\n", (long long)w->round);
            mm__gp_axis_add(&mb, w->sent_peer / 1e6);
            mm__gp_axis_add(&acc, w->acc_mean);
            points++;
        }
        fputs("\n\n", f);
    }
    fclose(f);
    if (!points)
        return 0; /* pure gossip: no accuracy to set against the bytes */
    f = gp_begin(gp, png, 900, 600);
    if (!f)
        return -1;
    char datbase[4200];
    snprintf(datbase, sizeof datbase, "%s", dat);
    fprintf(f, "set title 'accuracy against bytes sent (one colour per setting)'\n"
               "set grid\nset key outside right\nset logscale x\nset format x '%%g'\n"
               "set xlabel 'MB sent per peer (cumulative)'\nset ylabel 'validation accuracy (mean)'\n");
    mm__gp_axis_fix(f, "x", &mb);
    mm__gp_axis_fix(f, "y", &acc);
    fprintf(f, "plot ");
    char (*names)[256] = calloc((size_t)n, sizeof *names);
    if (!names) {
        fclose(f);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        int g = run_group(runs, k, names);
        int seed = 0; /* dash the second seed of a setting, and so on */
        for (int j = 0; j < k; j++)
            seed += !strcmp(names[j], names[k]);
        char name[256];
        mm__report_run_name(runs[k], name, sizeof name);
        fprintf(f, "%s'%s' index %d using 1:2 with linespoints pt %d ps 0.6 lw 2 dt %d lc %d title ",
                k ? ", \\\n     " : "", basename(datbase), k, 7 + seed % 3, 1 + seed % 4, g + 1);
        mm__report_gp_title(f, name);
    }
    free(names);
    fputc('\n', f);
    fclose(f);
    return gp_run(gp, png, out);
}

int mm_report_compare_plot(mm_report *const *runs, int n, const char *png, FILE *out)
{
    if (!on_path("gnuplot")) {
        fprintf(stderr, "murmur report: gnuplot not found; no plot (apt-get install gnuplot-nox)\n");
        return 1;
    }
    char stem[4096], dat[4200], gp[4200];
    snprintf(stem, sizeof stem, "%s", png);
    size_t sl = strlen(stem);
    if (sl > 4 && !strcmp(stem + sl - 4, ".png"))
        stem[sl - 4] = 0;
    snprintf(dat, sizeof dat, "%s.dat", stem);
    snprintf(gp, sizeof gp, "%s.gp", stem);
    FILE *f = fopen(dat, "w");
    if (!f)
        return -1;
    int n_xi = 0, n_acc = 0;
    /* each panel's axes: rounds and Xi, rounds and accuracy */
    mm__gp_axis r_xi = MM__GP_AXIS(false), xi = MM__GP_AXIS(true);
    mm__gp_axis r_acc = MM__GP_AXIS(false), acc = MM__GP_AXIS(false);
    for (int k = 0; k < n; k++) {
        fprintf(f, "# run %d: %s\n# round xi acc_mean\n", k, runs[k]->dir);
        for (size_t i = 0; i < runs[k]->n_rows; i++) {
            const mm_rep_row *w = &runs[k]->rows[i];
            fprintf(f, "%lld", (long long)w->round);
            mm__report_dat_num(f, w->xi);
            mm__report_dat_num(f, w->acc_mean);
            fputc('\n', f);
            n_xi += w->xi > 0;
            n_acc += !isnan(w->acc_mean);
            if (w->xi > 0) {
                mm__gp_axis_add(&r_xi, (double)w->round);
                mm__gp_axis_add(&xi, w->xi);
            }
            if (!isnan(w->acc_mean)) {
                mm__gp_axis_add(&r_acc, (double)w->round);
                mm__gp_axis_add(&acc, w->acc_mean);
            }
        }
        fputs("\n\n", f); /* gnuplot data blocks: 'index k' */
    }
    fclose(f);
    f = gp_begin(gp, png, 900, 900);
    if (!f)
        return -1;
    char datbase[4200];
    snprintf(datbase, sizeof datbase, "%s", dat);
    fprintf(f, "set multiplot layout 2,1 title 'consensus distance and accuracy by run'\n"
               "set grid\nset key outside right\nset xlabel 'round'\n");
    const char *db = basename(datbase);
    for (int panel = 0; panel < 2; panel++) {
        if (panel == 0) {
            fprintf(f, "set logscale y\nset format y '10^{%%L}'\nset ylabel 'consensus distance'\n");
            if (!n_xi) {
                fprintf(f, "set yrange [1e-3:1]\nset label 1 'no consensus distance' at graph 0.4,0.5\n");
            }
            mm__gp_axis_fix(f, "x", &r_xi);
            mm__gp_axis_fix(f, "y", &xi);
        } else {
            fprintf(f, "unset logscale y\nunset label 1\nset autoscale xy\nset format y '%%g'\n"
                       "set ylabel 'validation accuracy (mean)'\n");
            if (!n_acc)
                fprintf(f, "set yrange [0:1]\nset label 1 'no accuracy' at graph 0.4,0.5\n");
            mm__gp_axis_fix(f, "x", &r_acc);
            mm__gp_axis_fix(f, "y", &acc);
        }
        fprintf(f, "plot ");
        for (int k = 0; k < n; k++) {
            char name[256];
            mm__report_run_name(runs[k], name, sizeof name);
            fprintf(f, "%s'%s' index %d using 1:%s with linespoints pt 7 ps 0.5 lw 2 lc %d title ",
                    k ? ", \\\n     " : "", db, k,
                    panel == 0 ? "($2>0?$2:NaN)" : "3", k + 1);
            mm__report_gp_title(f, name);
        }
        fputc('\n', f);
    }
    fprintf(f, "unset multiplot\n");
    fclose(f);
    int rc = gp_run(gp, png, out);
    int rb = compare_bytes_plot(runs, n, stem, out);
    return rc < 0 || rb < 0 ? -1 : rc;
}
