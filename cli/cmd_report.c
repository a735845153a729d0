/* murmur report: a run directory's metrics -> table, CSV and plots; also
 * the one-line progress view the launcher polls, and the comparison of
 * several runs, and the aggregation of a sweep. The work is in report/. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "cli/commands.h"
#include "report/report.h"
#include "report/sweep.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: murmur report RUN_DIR [--csv FILE] [--plots DIR] [--no-plots] [--target-loss L]\n"
            "       murmur report --progress RUN_DIR [--stale SEC]\n"
            "       murmur report --compare RUN_DIR... [--csv FILE] [--plot FILE.png] [--no-plots]\n"
            "                     [--target-loss L]\n"
            "       murmur report --sweep SWEEP_DIR... [--baseline SETTING] [--csv FILE] [--plots DIR]\n"
            "                     [--no-plots]\n\n"
            "Merges the peers' node-K/metrics.jsonl of a run (docs/metrics.md). For each\n"
            "evaluation round: consensus distance (exact from snapshots when every peer\n"
            "present has one, else estimated from the eval sketches), validation accuracy\n"
            "and loss across peers, bytes sent, and the compute/comm/wait split.\n\n"
            "  --csv FILE      where the CSV goes (default RUN_DIR/report.csv;\n"
            "                  with --compare: compare.csv)\n"
            "  --plots DIR     where the PNGs and their gnuplot scripts go (default RUN_DIR/plots)\n"
            "  --no-plots      no gnuplot\n"
            "  --progress      one status line for a run in progress: round, mean loss,\n"
            "                  accuracy, consensus estimate, peer liveness\n"
            "                  (. live, x no metrics written for --stale SEC (default 30),\n"
            "                  E ended, - no metrics yet)\n"
            "  --compare       several runs: final accuracy, consensus distance, bytes per\n"
            "                  peer and wall time per run, and one PNG (default compare.png)\n"
            "                  overlaying consensus distance and accuracy vs round\n"
            "  --target-loss L time to target: the first evaluation round at which the\n"
            "                  mean validation loss over the peers is <= L, and its wall\n"
            "                  time (the slowest peer's); with --compare a column of the\n"
            "                  table and of the CSV, by default for the largest final\n"
            "                  val_loss of the runs compared (a loss every run reached)\n"
            "  --sweep         a sweep of scripts/sweep.sh (docs/sweep.md): per setting, mean,\n"
            "                  sd and number of seeds of final accuracy, validation loss,\n"
            "                  consensus distance (final and mean over the run), bytes per\n"
            "                  peer and wall time; runs that did not finish are listed and\n"
            "                  left out. CSV (default SWEEP_DIR/sweep.csv, and every run in\n"
            "                  sweep-runs.csv beside it) and three plots (default\n"
            "                  SWEEP_DIR/plots): accuracy against consensus distance,\n"
            "                  bytes sent per peer and wall time\n"
            "  --baseline S    with --sweep: every setting paired seed by seed against\n"
            "                  setting S (default: the spec's baseline line, if any): mean\n"
            "                  and sd of the differences over the seeds both finished, a 95 %%\n"
            "                  Student-t interval, the signs; a table, CSV columns and a plot.\n"
            "                  Several SWEEP_DIRs: their settings side by side (a name met\n"
            "                  twice becomes SWEEP:NAME), paired across them; --csv and\n"
            "                  --plots (or --no-plots) are then required\n\n"
            "Exit status: 0 ok, 1 no metrics (--sweep: no finished run) or an output\n"
            "failed, 2 usage.\n");
}

static double now_s(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

static int progress(const char *dir, double stale)
{
    FILE *devnull = fopen("/dev/null", "w");
    mm_report_opts opt = {.no_exact = true, .quiet_tail = true, .warn = devnull};
    mm_report r;
    char err[512];
    int rc = 0;
    int loaded = mm_report_load(dir, &opt, &r, err, sizeof err);
    if (loaded != 0) {
        bool none_yet = loaded == MM_REPORT_EMPTY;
        printf("%s\n", none_yet ? "waiting for the first metrics" : err);
        rc = none_yet ? 0 : 1;
    } else {
        mm_report_print_progress(&r, now_s(), stale, stdout);
        mm_report_free(&r);
    }
    if (devnull)
        fclose(devnull);
    fflush(stdout);
    return rc;
}

static int compare(char **dirs, int n, const char *csv, const char *png, bool plots,
                   double target)
{
    mm_report **runs = calloc((size_t)n, sizeof *runs);
    int loaded = 0, rc = 0;
    if (!runs)
        return 1;
    for (int i = 0; i < n; i++) {
        mm_report *r = malloc(sizeof *r);
        char err[512];
        mm_report_opts opt = {.eval_average = mm_report_eval_model};
        if (!r || mm_report_load(dirs[i], &opt, r, err, sizeof err) != 0) {
            fprintf(stderr, "murmur report: %s; left out of the comparison\n", r ? err : "out of memory");
            free(r);
            rc = 1;
            continue;
        }
        runs[loaded++] = r;
    }
    if (loaded == 0) {
        fprintf(stderr, "murmur report: no run to compare\n");
        free(runs);
        return 1;
    }
    printf("\n");
    if (isnan(target))
        target = mm_report_common_target(runs, loaded);
    mm_report_compare_table(runs, loaded, target, stdout);
    if (mm_report_compare_csv(runs, loaded, target, csv) != 0) {
        fprintf(stderr, "murmur report: cannot write %s: %s\n", csv, strerror(errno));
        rc = 1;
    } else {
        printf("csv: %s\n", csv);
    }
    if (plots && mm_report_compare_plot(runs, loaded, png, stdout) < 0)
        rc = 1;
    for (int i = 0; i < loaded; i++) {
        mm_report_free(runs[i]);
        free(runs[i]);
    }
    free(runs);
    return rc;
}

/* The path of name inside dir, or of name beside the file csv. */
static void beside(char *buf, size_t len, const char *dir, const char *csv, const char *name)
{
    if (!csv) {
        snprintf(buf, len, "%s/%s", dir, name);
        return;
    }
    const char *slash = strrchr(csv, '/');
    if (slash)
        snprintf(buf, len, "%.*s/%s", (int)(slash - csv), csv, name);
    else
        snprintf(buf, len, "%s", name);
}

static int sweep(char *const *dirs, int n_dirs, const char *baseline, const char *csv,
                 const char *plots_dir, bool plots)
{
    mm_sweep s;
    char err[1024];
    const char *dir = dirs[0];
    if (n_dirs > 1 && (!csv || (plots && !plots_dir))) {
        fprintf(stderr, "murmur report: several sweeps: say where their CSV (--csv FILE) and "
                        "plots (--plots DIR, or --no-plots) go\n");
        return 2;
    }
    if (mm_sweep_load_many(dirs, n_dirs, NULL, &s, err, sizeof err) != 0) {
        fprintf(stderr, "murmur report: %s\n", err);
        return 1;
    }
    if (baseline && mm_sweep_set_baseline(&s, baseline, err, sizeof err) != 0) {
        fprintf(stderr, "murmur report: %s\n", err);
        mm_sweep_free(&s);
        return 2;
    }
    int rc = 0, done = 0;
    for (int i = 0; i < s.n_settings; i++)
        done += s.settings[i].n_done;
    printf("\n");
    mm_sweep_print_table(&s, stdout);
    mm_sweep_print_paired(&s, stdout);
    printf("\n");
    char path[4096], runs_csv[4096];
    if (!csv) {
        snprintf(path, sizeof path, "%s/sweep.csv", dir);
        csv = path;
        beside(runs_csv, sizeof runs_csv, dir, NULL, "sweep-runs.csv");
    } else {
        beside(runs_csv, sizeof runs_csv, dir, csv, "sweep-runs.csv");
    }
    if (mm_sweep_write_csv(&s, csv) != 0 || mm_sweep_write_runs_csv(&s, runs_csv) != 0) {
        fprintf(stderr, "murmur report: cannot write %s or %s: %s\n", csv, runs_csv,
                strerror(errno));
        rc = 1;
    } else {
        printf("csv: %s (settings), %s (runs)\n", csv, runs_csv);
    }
    if (plots && done > 0) {
        char pd[4096];
        if (!plots_dir) {
            snprintf(pd, sizeof pd, "%s/plots", dir);
            plots_dir = pd;
        }
        if (mm_sweep_plots(&s, plots_dir, stdout) < 0)
            rc = 1;
    }
    if (done == 0) {
        fprintf(stderr, "murmur report: no run of %s has finished: nothing to average\n", s.dir);
        rc = 1;
    }
    mm_sweep_free(&s);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    const char *csv = NULL, *plots_dir = NULL, *png = NULL, *baseline = NULL;
    bool plots = true, prog = false, cmp = false, swp = false;
    double stale = 30, target = NAN;
    char **dirs = calloc((size_t)argc, sizeof *dirs);
    int n_dirs = 0;
    if (!dirs)
        return 1;
    int rc = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            rc = 0;
            goto out;
        } else if (!strcmp(a, "--csv") && has_val) {
            csv = argv[++i];
        } else if (!strcmp(a, "--plots") && has_val) {
            plots_dir = argv[++i];
        } else if (!strcmp(a, "--baseline") && has_val) {
            baseline = argv[++i];
        } else if (!strcmp(a, "--plot") && has_val) {
            png = argv[++i];
        } else if (!strcmp(a, "--no-plots")) {
            plots = false;
        } else if (!strcmp(a, "--progress")) {
            prog = true;
        } else if (!strcmp(a, "--compare")) {
            cmp = true;
        } else if (!strcmp(a, "--target-loss") && has_val) {
            char *end;
            target = strtod(argv[++i], &end);
            if (*end || !(target > 0) || !isfinite(target)) {
                fprintf(stderr, "murmur report: --target-loss wants a positive validation loss\n");
                goto out;
            }
        } else if (!strcmp(a, "--sweep")) {
            swp = true;
        } else if (!strcmp(a, "--stale") && has_val) {
            char *end;
            stale = strtod(argv[++i], &end);
            if (*end || !(stale > 0)) {
                fprintf(stderr, "murmur report: --stale wants a positive number of seconds\n");
                goto out;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "murmur report: unknown option or missing value: %s\n\n", a);
            usage(stderr);
            goto out;
        } else {
            dirs[n_dirs++] = argv[i];
        }
    }
    if (n_dirs == 0 || (!cmp && !swp && n_dirs > 1) || (prog + cmp + swp > 1)) {
        fprintf(stderr, "murmur report: %s\n\n",
                n_dirs == 0 ? "which run? give RUN_DIR" :
                prog + cmp + swp > 1 ? "--progress, --compare and --sweep do not mix"
                            : "one RUN_DIR (several only with --compare or --sweep)");
        usage(stderr);
        goto out;
    }
    if (baseline && !swp) {
        fprintf(stderr, "murmur report: --baseline goes with --sweep\n\n");
        usage(stderr);
        goto out;
    }
    if (prog) {
        rc = progress(dirs[0], stale);
        goto out;
    }
    if (swp) {
        rc = sweep(dirs, n_dirs, baseline, csv, plots_dir, plots);
        goto out;
    }
    if (cmp) {
        rc = compare(dirs, n_dirs, csv ? csv : "compare.csv", png ? png : "compare.png", plots,
                     target);
        goto out;
    }

    mm_report r;
    char err[512];
    mm_report_opts opt = {.eval_average = mm_report_eval_model};
    if (mm_report_load(dirs[0], &opt, &r, err, sizeof err) != 0) {
        fprintf(stderr, "murmur report: %s\n", err);
        rc = 1;
        goto out;
    }
    rc = 0;
    mm_report_print_table(&r, stdout);
    mm_report_print_membership(&r, stdout);
    printf("\n");
    if (!isnan(target)) {
        double tt;
        int64_t rt = mm_report_time_to_loss(&r, target, &tt);
        if (rt >= 0)
            printf("time to val_loss <= %.4f (mean over peers): %.1f s, at round %lld\n", target,
                   tt, (long long)rt);
        else
            printf("time to val_loss <= %.4f (mean over peers): not reached\n", target);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/labels.csv", dirs[0]);
    int labels = mm_report_labels(&r, stdout, path);
    if (labels < 0) {
        fprintf(stderr, "murmur report: cannot write %s: %s\n", path, strerror(errno));
        rc = 1;
    } else if (labels > 0) {
        printf("labels: %s\n\n", path);
    }
    if (!csv) {
        snprintf(path, sizeof path, "%s/report.csv", dirs[0]);
        csv = path;
    }
    if (mm_report_write_csv(&r, csv) != 0) {
        fprintf(stderr, "murmur report: cannot write %s: %s\n", csv, strerror(errno));
        rc = 1;
    } else {
        printf("csv: %s\n", csv);
    }
    if (plots) {
        char pd[4096];
        if (!plots_dir) {
            snprintf(pd, sizeof pd, "%s/plots", dirs[0]);
            plots_dir = pd;
        }
        if (mm_report_plots(&r, plots_dir, stdout) < 0)
            rc = 1;
    }
    mm_report_free(&r);
out:
    free(dirs);
    return rc;
}
