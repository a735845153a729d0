/* The sweep's three plots through gnuplot: accuracy against consensus
 * distance, against bytes sent per peer and against wall time, one point
 * per setting with error bars over seeds in both directions, one colour
 * per topology. One data file (sweep.dat, a block per topology) and one
 * .gp script per PNG, written beside them so that a user can restyle a
 * figure and rerun `gnuplot NAME.gp` there. */
#include "report/sweep.h"
#include "report/report_int.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"

/* sd for the error bars: 0 with a single seed (gnuplot drops a point whose
 * error is NaN). */
static double bar(const mm_sweep_stat *st)
{
    return st->n >= 2 && isfinite(st->sd) ? st->sd : 0;
}

/* A gnuplot data string: double-quoted, without quotes inside. */
static void dat_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        fputc(*s == '"' ? '\'' : *s, f);
    fputc('"', f);
}

/* The topologies in order of first appearance; returns the count. */
static int topologies(const mm_sweep *s, const char **names)
{
    int n = 0;
    for (int i = 0; i < s->n_settings; i++) {
        int k = 0;
        while (k < n && strcmp(names[k], s->settings[i].topology))
            k++;
        if (k == n)
            names[n++] = s->settings[i].topology;
    }
    return n;
}

/* A setting's label on the plots: its axis values (the name after the
 * topology's), after the sweep's name when the name carries one
 * (SWEEP:TOPOLOGY,..., report --sweep A B ...): "lang-16-late" or
 * "lang-16-late:consensus-target=1". */
static void label_of(const char *name, char *label, size_t len)
{
    const char *axes = strchr(name, ','), *sweep_end = strchr(name, ':');
    if (sweep_end && axes && sweep_end > axes)
        sweep_end = NULL; /* a ':' in an axis value, not a sweep's name */
    if (sweep_end)
        snprintf(label, len, "%.*s%s%s", (int)(sweep_end - name), name, axes ? ":" : "",
                 axes ? axes + 1 : "");
    else
        snprintf(label, len, "%s", axes ? axes + 1 : "");
}

static void dat_label(FILE *f, const char *name)
{
    char label[512];
    label_of(name, label, sizeof label);
    dat_str(f, label);
}

/* Where the labels go. Each is written beside its point (one character to
 * the right), at the first height, from 0.8 line above the point, then as
 * far below, then a line further each way, whose box meets no label placed
 * before it, the points taken from the top of the plot down: two settings
 * at one point (or close) had their labels printed over each other
 * ("outer=none" over "outer=nesterov" read "outer=outer=none"). The plot
 * area in characters of the labels' 8-point font, at 960x620 pixels with
 * the key outside, is an estimate on the large side. */
#define AREA_COLS 110.0
#define AREA_ROWS 38.0

typedef struct {
    double col, row; /* the point, in characters from the plot area's bottom left */
    double len;      /* its label's length */
    double dy;       /* where its label goes: lines above the point (below: negative) */
} spot;

static bool clashes(const spot *a, double dy, const spot *b)
{
    return a->col + 1 < b->col + 1 + b->len && b->col + 1 < a->col + 1 + a->len &&
           fabs(a->row + dy - (b->row + b->dy)) < 1;
}

static void place_labels(spot *sp, int n)
{
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) {
        for (int i = 0; i < n; i++)
            sp[i].dy = 0.8;
        return;
    }
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = 1; i < n; i++) /* by height, the highest first (n is small) */
        for (int j = i; j > 0 && sp[order[j]].row > sp[order[j - 1]].row; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        spot *a = &sp[order[i]];
        a->dy = 0.8;
        for (int k = 0; k < 16; k++) {
            double dy = (k % 2 ? -1 : 1) * (0.8 + k / 2);
            bool free_ = true;
            for (int j = 0; j < i && free_; j++)
                free_ = !clashes(a, dy, &sp[order[j]]);
            if (free_) {
                a->dy = dy;
                break;
            }
        }
    }
    free(order);
}

/* Where x (a setting's value on an axis [lo, hi], log or not) lies, in
 * characters of size cols. */
static double to_chars(double x, double lo, double hi, bool logx, double cols)
{
    if (logx)
        return cols * (log(x) - log(lo)) / (log(hi) - log(lo));
    return cols * (x - lo) / (hi - lo);
}

typedef struct {
    const char *name, *xlabel;
    int xcol, xerr, labelcol; /* columns of sweep.dat */
    bool logx;
    size_t xoff;    /* the x statistic in mm_sweep_setting */
    double xscale;
} plot_spec;

/* The range [lo, hi] of mean ± sd over the settings with a finished run
 * (positive values only on a log axis), with a margin: gnuplot's own
 * autoscale warns about and squeezes a range of one value (one setting, or
 * equal wall times). Returns false when there is no value. */
static bool range(const mm_sweep *s, size_t off, double scale, bool logx, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < s->n_settings; i++) {
        const mm_sweep_setting *g = &s->settings[i];
        const mm_sweep_stat *st = (const mm_sweep_stat *)((const char *)g + off);
        if (g->n_done == 0 || !isfinite(st->mean) || !isfinite(g->acc.mean) ||
            (logx && !(st->mean > 0)))
            continue;
        double m = st->mean * scale, e = bar(st) * scale;
        double a = m - e, b = m + e;
        if (logx && !(a > 0))
            a = m;
        *lo = a < *lo ? a : *lo;
        *hi = b > *hi ? b : *hi;
    }
    if (!(*lo <= *hi))
        return false;
    if (logx) {
        *lo /= 1.6;
        *hi *= 1.6;
    } else {
        double pad = 0.08 * (*hi - *lo);
        if (!(pad > 0))
            pad = *hi != 0 ? 0.1 * fabs(*hi) : 1;
        *lo -= pad;
        *hi += pad;
        /* a quantity that cannot be negative (bytes, seconds, accuracy) keeps 0 as its floor */
        if (*lo < 0 && *lo + pad >= 0)
            *lo = -pad / 2;
    }
    return true;
}

/* The three plots of sweep.dat: consensus, bytes, wall time. */
#define N_PLOTS 3

/* Where each setting's label goes on plot p (of plots[]), in accuracy:
 * label_y[g * N_PLOTS + p], NaN for a setting not on that plot. */
static void label_heights(const mm_sweep *s, const plot_spec *plots, double *label_y)
{
    spot *sp = malloc((size_t)(s->n_settings ? s->n_settings : 1) * sizeof *sp);
    int *of = malloc((size_t)(s->n_settings ? s->n_settings : 1) * sizeof *of);
    for (int i = 0; i < s->n_settings * N_PLOTS; i++)
        label_y[i] = NAN;
    double ylo, yhi;
    if (!sp || !of || !range(s, offsetof(mm_sweep_setting, acc), 1, false, &ylo, &yhi)) {
        free(sp);
        free(of);
        return;
    }
    for (int p = 0; p < N_PLOTS; p++) {
        double xlo, xhi;
        if (!range(s, plots[p].xoff, plots[p].xscale, plots[p].logx, &xlo, &xhi))
            continue;
        int n = 0;
        for (int i = 0; i < s->n_settings; i++) {
            const mm_sweep_setting *g = &s->settings[i];
            const mm_sweep_stat *st = (const mm_sweep_stat *)((const char *)g + plots[p].xoff);
            double x = st->mean * plots[p].xscale;
            if (g->n_done == 0 || !isfinite(x) || !isfinite(g->acc.mean) ||
                (plots[p].logx && !(x > 0)))
                continue;
            char label[512];
            label_of(g->name, label, sizeof label);
            sp[n] = (spot){to_chars(x, xlo, xhi, plots[p].logx, AREA_COLS),
                           to_chars(g->acc.mean, ylo, yhi, false, AREA_ROWS), (double)strlen(label),
                           0};
            of[n++] = i;
        }
        place_labels(sp, n);
        for (int k = 0; k < n; k++)
            label_y[of[k] * N_PLOTS + p] =
                s->settings[of[k]].acc.mean + sp[k].dy * (yhi - ylo) / AREA_ROWS;
    }
    free(sp);
    free(of);
}

static int write_dat(const mm_sweep *s, const char *path, const char **topo, int n_topo,
                     const double *label_y, int *n_xi)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# murmur report --sweep %s: one line per setting with a finished run,\n"
               "# one block per topology (gnuplot 'index K'); sd 0 with one seed\n", s->dir);
    *n_xi = 0;
    for (int t = 0; t < n_topo; t++) {
        fprintf(f, "# topology %s\n# label acc acc_sd consensus_avg consensus_avg_sd "
                   "MB_per_peer MB_sd wall_s wall_sd consensus_final consensus_final_sd seeds "
                   "label_y_consensus label_y_bytes label_y_wall\n", topo[t]);
        for (int i = 0; i < s->n_settings; i++) {
            const mm_sweep_setting *g = &s->settings[i];
            if (strcmp(g->topology, topo[t]) || g->n_done == 0)
                continue;
            dat_label(f, g->name);
            mm__report_dat_num(f, g->acc.mean);
            mm__report_dat_num(f, bar(&g->acc));
            mm__report_dat_num(f, g->xi_avg.mean > 0 ? g->xi_avg.mean : NAN);
            mm__report_dat_num(f, bar(&g->xi_avg));
            mm__report_dat_num(f, g->bytes_peer.mean / 1e6);
            mm__report_dat_num(f, bar(&g->bytes_peer) / 1e6);
            mm__report_dat_num(f, g->wall.mean);
            mm__report_dat_num(f, bar(&g->wall));
            mm__report_dat_num(f, g->xi_final.mean > 0 ? g->xi_final.mean : NAN);
            mm__report_dat_num(f, bar(&g->xi_final));
            fprintf(f, " %d", g->n_done);
            for (int k = 0; k < N_PLOTS; k++)
                mm__report_dat_num(f, label_y[i * N_PLOTS + k]);
            fputc('\n', f);
            *n_xi += g->xi_avg.mean > 0 && isfinite(g->acc.mean);
        }
        fputs("\n\n", f);
    }
    return fclose(f) == 0 ? 0 : -1;
}

static int write_gp(const mm_sweep *s, const char *dir, const plot_spec *p, const char **topo,
                    int n_topo, bool labels)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s.gp", dir, p->name);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    char title[512];
    const char *d = s->dir;
    size_t dl = strlen(d);
    while (dl > 1 && d[dl - 1] == '/')
        dl--;
    const char *b = d + dl;
    while (b > d && b[-1] != '/')
        b--;
    /* how many seeds each point stands for: the reader weighs the bars by it */
    int nlo = 0, nhi = 0;
    for (int i = 0; i < s->n_settings; i++) {
        int n = s->settings[i].n_done;
        if (n > 0 && (nlo == 0 || n < nlo))
            nlo = n;
        nhi = n > nhi ? n : nhi;
    }
    char seeds[48];
    if (nlo == nhi)
        snprintf(seeds, sizeof seeds, "%d seed%s", nlo, nlo == 1 ? "" : "s");
    else
        snprintf(seeds, sizeof seeds, "%d to %d seeds", nlo, nhi);
    snprintf(title, sizeof title, "sweep %.*s: mean ± sd over %s per setting",
             (int)(d + dl - b), b, seeds);
    mm__report_gp_terminal(f, 960, 620);
    fprintf(f, "set output '%s.png'\nset title ", p->name);
    mm__report_gp_title(f, title);
    /* the x label is the program's own text, written as is: it uses
     * enhanced-text markup ({/Symbol X}) */
    fprintf(f, "\nset grid\nset key outside right top title 'topology'\nset xlabel '%s'",
            p->xlabel);
    fprintf(f, "\nset ylabel 'validation accuracy (final, mean over peers)'\n");
    double lo, hi;
    if (range(s, p->xoff, p->xscale, p->logx, &lo, &hi))
        fprintf(f, "set xrange [%.9g:%.9g]\n", lo, hi);
    if (range(s, offsetof(mm_sweep_setting, acc), 1, false, &lo, &hi))
        fprintf(f, "set yrange [%.9g:%.9g]\n", lo, hi);
    if (p->logx)
        fprintf(f, "set logscale x\nset format x '10^{%%L}'\n");
    fprintf(f, "set bars small\nplot ");
    for (int t = 0; t < n_topo; t++) {
        /* a shape per topology too: two settings at the same point both show */
        static const int pt[] = {7, 5, 9, 13, 11, 15};
        fprintf(f, "%s'sweep.dat' index %d using %d:2:%d:3 with xyerrorbars pt %d ps 1.3 lw 1.5 "
                   "lc %d title ",
                t ? ", \\\n     " : "", t, p->xcol, p->xerr, pt[t % 6], t + 1);
        mm__report_gp_title(f, topo[t]);
    }
    if (labels)
        for (int t = 0; t < n_topo; t++)
            fprintf(f, ", \\\n     'sweep.dat' index %d using %d:%d:1 with labels offset 1,0 "
                       "left font ',8' tc lt %d notitle", t, p->xcol, p->labelcol, t + 1);
    fputc('\n', f);
    return fclose(f) == 0 ? 0 : -1;
}

/* Whether setting g is a point of the paired plot. */
static bool paired_point(const mm_sweep_setting *g)
{
    return g->d_acc.n > 0 && g->xi_avg.mean > 0 && isfinite(g->d_acc.mean);
}

/* The paired plot's ranges (x: the averaged consensus distance, log; y:
 * the intervals and 0), set in its script: gnuplot's autoscale warned
 * "empty x range" / "empty y range" on one value (one setting, or every
 * difference 0). False when there is no point. */
static bool paired_ranges(const mm_sweep *s, double *xlo, double *xhi, double *ylo, double *yhi)
{
    *xlo = *ylo = 0; /* (0: the line at 0 is in the plot) */
    *xhi = -INFINITY;
    *yhi = 0;
    double x_min = INFINITY;
    for (int i = 0; i < s->n_settings; i++) {
        const mm_sweep_setting *g = &s->settings[i];
        if (!paired_point(g))
            continue;
        const mm_sweep_paired *d = &g->d_acc;
        double lo = d->n >= 2 ? d->lo : d->mean, hi = d->n >= 2 ? d->hi : d->mean;
        x_min = g->xi_avg.mean < x_min ? g->xi_avg.mean : x_min;
        *xhi = g->xi_avg.mean > *xhi ? g->xi_avg.mean : *xhi;
        *ylo = lo < *ylo ? lo : *ylo;
        *yhi = hi > *yhi ? hi : *yhi;
    }
    if (!(x_min <= *xhi))
        return false;
    *xlo = x_min / 1.6;
    *xhi *= 1.6;
    double pad = 0.08 * (*yhi - *ylo);
    if (!(pad > 0))
        pad = 0.01; /* every difference 0: one accuracy point either side */
    *ylo -= pad;
    *yhi += pad;
    return true;
}

/* sweep_paired.dat: per topology, the settings with a pair: label,
 * averaged consensus distance, d_acc and its 95 % interval (the mean
 * itself at both ends with one pair), pairs, and where its label goes.
 * Returns the points written. */
static int write_paired_dat(const mm_sweep *s, const char *path, const char **topo, int n_topo)
{
    size_t cap = (size_t)(s->n_settings ? s->n_settings : 1);
    double *label_y = malloc(cap * sizeof *label_y), xlo, xhi, ylo, yhi;
    spot *sp = malloc(cap * sizeof *sp);
    int *of = malloc(cap * sizeof *of), n_pts = 0;
    FILE *f = label_y && sp && of ? fopen(path, "w") : NULL;
    if (!f) {
        free(label_y);
        free(sp);
        free(of);
        return -1;
    }
    bool any = paired_ranges(s, &xlo, &xhi, &ylo, &yhi);
    for (int i = 0; i < s->n_settings; i++) {
        const mm_sweep_setting *g = &s->settings[i];
        label_y[i] = NAN;
        if (!any || !paired_point(g))
            continue;
        char label[512];
        label_of(g->name, label, sizeof label);
        sp[n_pts] = (spot){to_chars(g->xi_avg.mean, xlo, xhi, true, AREA_COLS),
                           to_chars(g->d_acc.mean, ylo, yhi, false, AREA_ROWS),
                           (double)strlen(label), 0};
        of[n_pts++] = i;
    }
    place_labels(sp, n_pts);
    for (int k = 0; k < n_pts; k++)
        label_y[of[k]] = s->settings[of[k]].d_acc.mean + sp[k].dy * (yhi - ylo) / AREA_ROWS;
    free(sp);
    free(of);
    fprintf(f, "# murmur report --sweep %s: accuracy paired by seed against %s,\n"
               "# one block per topology; lo = hi = d with one pair\n", s->dir,
            s->settings[s->baseline].name);
    int n = 0;
    for (int t = 0; t < n_topo; t++) {
        fprintf(f, "# topology %s\n# label consensus_avg d_acc d_acc_lo d_acc_hi pairs label_y\n",
                topo[t]);
        for (int i = 0; i < s->n_settings; i++) {
            const mm_sweep_setting *g = &s->settings[i];
            const mm_sweep_paired *d = &g->d_acc;
            if (strcmp(g->topology, topo[t]) || !paired_point(g))
                continue;
            dat_label(f, g->name);
            mm__report_dat_num(f, g->xi_avg.mean);
            mm__report_dat_num(f, d->mean);
            mm__report_dat_num(f, d->n >= 2 ? d->lo : d->mean);
            mm__report_dat_num(f, d->n >= 2 ? d->hi : d->mean);
            fprintf(f, " %d", d->n);
            mm__report_dat_num(f, label_y[i]);
            fputc('\n', f);
            n++;
        }
        fputs("\n\n", f);
    }
    free(label_y);
    return fclose(f) == 0 ? n : -1;
}

static int write_paired_gp(const mm_sweep *s, const char *path, const char **topo, int n_topo,
                           bool labels)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    char title[512];
    snprintf(title, sizeof title, "accuracy paired by seed against %s: mean difference, 95 %% "
             "Student-t interval", s->settings[s->baseline].name);
    mm__report_gp_terminal(f, 960, 620);
    fprintf(f, "set output 'sweep_paired_acc.png'\nset title ");
    mm__report_gp_title(f, title);
    fprintf(f, "\nset grid\nset key outside right top title 'topology'\n"
               "set xlabel 'consensus distance {/Symbol X}, mean over the evaluation rounds (log)'\n"
               "set ylabel 'accuracy - baseline accuracy (same seed)'\n"
               "set logscale x\nset format x '10^{%%L}'\nset xzeroaxis lt -1\nset bars small\n");
    double xlo, xhi, ylo, yhi;
    if (paired_ranges(s, &xlo, &xhi, &ylo, &yhi))
        fprintf(f, "set xrange [%.9g:%.9g]\nset yrange [%.9g:%.9g]\n", xlo, xhi, ylo, yhi);
    fprintf(f, "plot ");
    for (int t = 0; t < n_topo; t++) {
        static const int pt[] = {7, 5, 9, 13, 11, 15};
        fprintf(f, "%s'sweep_paired.dat' index %d using 2:3:4:5 with yerrorbars pt %d ps 1.3 "
                   "lw 1.5 lc %d title ", t ? ", \\\n     " : "", t, pt[t % 6], t + 1);
        mm__report_gp_title(f, topo[t]);
    }
    if (labels)
        for (int t = 0; t < n_topo; t++)
            fprintf(f, ", \\\n     'sweep_paired.dat' index %d using 2:7:1 with labels offset 1,0 "
                       "left font ',8' tc lt %d notitle", t, t + 1);
    fputc('\n', f);
    return fclose(f) == 0 ? 0 : -1;
}

/* The paired plot, with a baseline: 0, 1 gnuplot missing, -1 failure. */
static int paired_plot(const mm_sweep *s, const char *dir, const char **topo, int n_topo, FILE *out)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/sweep_paired.dat", dir);
    int n = write_paired_dat(s, path, topo, n_topo);
    if (n < 0) {
        fprintf(stderr, "murmur report: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (n == 0) {
        fprintf(stderr, "murmur report: no setting has a pair and a consensus distance: no "
                        "sweep_paired_acc.png\n");
        return 0;
    }
    snprintf(path, sizeof path, "%s/sweep_paired_acc.gp", dir);
    if (write_paired_gp(s, path, topo, n_topo, s->n_axes > 0) != 0) {
        fprintf(stderr, "murmur report: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    int g = mm__report_gnuplot(path);
    if (g < 0)
        fprintf(stderr, "murmur report: gnuplot failed on %s\n", path);
    else if (g == 0)
        fprintf(out, "plot: %s/sweep_paired_acc.png\n", dir);
    return g;
}

int mm_sweep_plots(const mm_sweep *s, const char *dir, FILE *out)
{
    char err[PATH_MAX + 64], path[PATH_MAX + 64];
    if (mm_mkdir_p(dir, err, sizeof err) != 0) {
        fprintf(stderr, "murmur report: %s\n", err);
        return -1;
    }
    const char **topo = calloc((size_t)(s->n_settings ? s->n_settings : 1), sizeof *topo);
    if (!topo)
        return -1;
    int n_topo = topologies(s, topo), n_xi = 0, rc = 0;
    const plot_spec plots[N_PLOTS] = {
        {"sweep_acc_consensus",
         "consensus distance {/Symbol X}, mean over the evaluation rounds (log)", 4, 5, 13, true,
         offsetof(mm_sweep_setting, xi_avg), 1},
        {"sweep_acc_bytes", "MB sent per peer (0: no communication)", 6, 7, 14, false,
         offsetof(mm_sweep_setting, bytes_peer), 1e-6},
        {"sweep_acc_wall", "wall time of the run, s (it depends on the load of the machine)", 8, 9,
         15, false, offsetof(mm_sweep_setting, wall), 1},
    };
    double *label_y = malloc((size_t)(s->n_settings ? s->n_settings : 1) * N_PLOTS * sizeof *label_y);
    if (!label_y) {
        free(topo);
        return -1;
    }
    label_heights(s, plots, label_y);
    snprintf(path, sizeof path, "%s/sweep.dat", dir);
    int wrote = write_dat(s, path, topo, n_topo, label_y, &n_xi);
    free(label_y);
    if (wrote != 0) {
        fprintf(stderr, "murmur report: cannot write %s: %s\n", path, strerror(errno));
        free(topo);
        return -1;
    }
    for (size_t i = 0; i < N_PLOTS && rc >= 0; i++) {
        double lo, hi;
        if ((i == 0 && n_xi == 0) ||
            !range(s, plots[i].xoff, plots[i].xscale, plots[i].logx, &lo, &hi)) {
            fprintf(stderr, "murmur report: no setting has both an accuracy and %s: no %s.png\n",
                    i == 0 ? "a consensus distance" : i == 1 ? "bytes sent" : "a wall time",
                    plots[i].name);
            continue;
        }
        if (write_gp(s, dir, &plots[i], topo, n_topo, s->n_axes > 0) != 0) {
            fprintf(stderr, "murmur report: cannot write %s/%s.gp: %s\n", dir, plots[i].name,
                    strerror(errno));
            rc = -1;
            break;
        }
        snprintf(path, sizeof path, "%s/%s.gp", dir, plots[i].name);
        int g = mm__report_gnuplot(path);
        if (g == 1) {
            fprintf(stderr, "murmur report: gnuplot not found; no plots (apt-get install gnuplot-nox)\n");
            rc = 1;
            break;
        }
        if (g < 0) {
            fprintf(stderr, "murmur report: gnuplot failed on %s\n", path);
            rc = -1;
        } else {
            fprintf(out, "plot: %s/%s.png\n", dir, plots[i].name);
        }
    }
    if (rc == 0 && s->baseline >= 0)
        rc = paired_plot(s, dir, topo, n_topo, out);
    free(topo);
    return rc;
}
