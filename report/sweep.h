/* murmur report --sweep: a sweep directory (scripts/sweep.sh,
 * docs/sweep.md) -> per setting, mean, standard deviation and number of
 * seeds of each run's final figures; the runs that did not finish are
 * listed and left out, never averaged.
 *
 * The sweep directory holds sweep.plan (every planned run: its setting,
 * seed, run directory, topology, peers and axis values) and the run
 * directories. A run counts only when its directory has the marker
 * sweep.done (written by the sweep once every peer exited 0 and its report
 * succeeded) AND every one of its planned peers has metrics whose last
 * start was followed by an end line with reason "done". */
#ifndef MURMUR_REPORT_SWEEP_H
#define MURMUR_REPORT_SWEEP_H

#include <stdint.h>
#include <stdio.h>

/* Mean and sample standard deviation (n - 1 in the denominator) of the n
 * finite values given; sd is NaN when n < 2, both NaN when n == 0. */
typedef struct {
    double mean, sd;
    int n;
} mm_sweep_stat;
void mm_sweep_stat_of(const double *v, int count, mm_sweep_stat *st);

/* The paired difference of a figure between two settings over the seeds
 * both finished (docs/sweep.md, "Paired comparisons"): d_s = a_s - b_s for
 * the pairs whose two values are finite; n of them; their mean and sample
 * standard deviation (n - 1); the 95 % Student-t interval
 * mean -+ t(0.975, n - 1) sd / sqrt(n) (lo, hi: NaN when n < 2); and how
 * many d_s are > 0 (n_pos) and < 0 (n_neg). All NaN and 0 when n == 0. */
typedef struct {
    int n, n_pos, n_neg;
    double mean, sd, lo, hi;
} mm_sweep_paired;
void mm_sweep_paired_of(const double *a, const double *b, int count, mm_sweep_paired *p);
/* t(0.975, df), the quantile of Student's t with df degrees of freedom
 * that a two-sided 95 % interval uses (12.706 for df 1, 2.776 for 4,
 * 1.960 as df grows): a table to df 30, the Cornish-Fisher expansion
 * beyond (error under 1e-6). NaN for df < 1. */
double mm_t975(int df);

typedef enum {
    MM_SWEEP_DONE,        /* finished: averaged */
    MM_SWEEP_MISSING,     /* planned, no directory: not run (yet) */
    MM_SWEEP_FAILED,      /* sweep.failed: a peer exited non-zero, or its report failed */
    MM_SWEEP_INTERRUPTED, /* sweep.interrupted: stopped by Ctrl-C */
    MM_SWEEP_UNFINISHED,  /* a directory without a marker: running, or the sweep was killed */
    MM_SWEEP_INVALID,     /* sweep.done, but its metrics say otherwise (a peer did not end 'done') */
} mm_sweep_status;

/* "done", "missing", "failed", "interrupted", "unfinished", "invalid". */
const char *mm_sweep_status_name(mm_sweep_status s);

typedef struct {
    int index;
    char setting[256];
    int64_t seed;
    char run[640];      /* relative to the sweep directory: SETTING/sSEED (merged
                         * sweeps: the sweep's directory, then that) */
    int setting_idx;    /* into mm_sweep.settings */
    mm_sweep_status status;
    char why[256];      /* for a run left out: the reason */
    /* A finished run's figures (NaN when absent): final = the last
     * evaluation round (accuracy, validation loss) and the last round with
     * a consensus distance (xi_final, exact or sketch as xi_method says);
     * xi_avg and xi_rms: the mean of Xi_t and the square root of the mean
     * of Xi_t^2 over the report's rows (every evaluation and snapshot
     * round, round 0 included), each Xi_t exact where every peer present
     * has a snapshot of that round, else the sketch estimate; bytes sent
     * per peer and wall time at the last round record. */
    double acc, vloss, xi_final, xi_avg, xi_rms, bytes_peer, wall;
    const char *xi_method;     /* of xi_final: "exact", "sketch", "none" */
    const char *xi_avg_method; /* of the rows averaged: "exact", "sketch", "mixed", "none" */
    int n_xi;                  /* rows averaged */
    int64_t rounds;            /* rounds done (the last round record + 1) */
} mm_sweep_run;

typedef struct {
    char name[256];
    char topology[256];      /* the topology's name (file name without .topo) */
    char topology_file[512];
    int peers;
    char **axis_values;      /* n_axes values, in the plan's axis order */
    int n_planned, n_done;
    mm_sweep_stat acc, vloss, xi_final, xi_avg, xi_rms, bytes_peer, wall;
    char xi_method[8];       /* of the finished runs' xi_final: exact, sketch, mixed, none */
    char xi_avg_method[8];
    /* Against the sweep's baseline (when it has one): the seeds both
     * finished, and the paired differences of accuracy and validation
     * loss over them (setting minus baseline). */
    int n_paired;
    mm_sweep_paired d_acc, d_vloss;
} mm_sweep_setting;

typedef struct {
    char *dir;
    int n_axes;
    char **axes;             /* axis flag names without the dashes ("lr") */
    mm_sweep_run *runs;
    int n_runs;
    mm_sweep_setting *settings;
    int n_settings;          /* in the plan's order of first appearance */
    int baseline;            /* the setting the others are paired against, -1: none */
} mm_sweep;

/* Reads dir/sweep.plan and every planned run. 0, or -1 with a message in
 * err (no plan, a malformed plan line: file and line named). A run that
 * cannot be read is not an error: it is left out with its reason. Warnings
 * of the runs' reports go to warn (NULL: discarded). */
int mm_sweep_load(const char *dir, FILE *warn, mm_sweep *s, char *err, size_t errlen);
void mm_sweep_free(mm_sweep *s);
/* Several sweeps as one (mm_sweep_load of each): every setting of each,
 * in order, side by side, so that they can be paired by seed across
 * sweeps (the baseline in one, the settings in others). A setting whose
 * name an earlier sweep already has is named "SWEEP:NAME" (SWEEP the last
 * component of its directory); the axes are the union of the sweeps'
 * (a setting without one has ""); s->dir is the directories joined by
 * " + "; the baseline is the first sweep's that has one. n == 1 is
 * mm_sweep_load. 0, or -1 with err. */
int mm_sweep_load_many(char *const *dirs, int n, FILE *warn, mm_sweep *s, char *err,
                       size_t errlen);

/* Pairs every setting against the baseline setting named (by seed; a run
 * counts only when it finished, in both settings): fills each setting's
 * n_paired, d_acc and d_vloss. The plan's "# baseline NAME" line (written
 * by scripts/sweep.sh from the spec's baseline key) makes mm_sweep_load
 * call it; a later call replaces the baseline. 0, or -1 with err when no
 * setting has that name. */
int mm_sweep_set_baseline(mm_sweep *s, const char *name, char *err, size_t errlen);
/* The seeds setting si and the baseline both finished, in plan order, into
 * seeds[0..] (room for every run); returns how many. */
int mm_sweep_paired_seeds(const mm_sweep *s, int si, int64_t *seeds);

/* The table (one line per setting, then the runs left out), the CSV of the
 * settings, the CSV of every planned run (docs/sweep.md has the columns). */
void mm_sweep_print_table(const mm_sweep *s, FILE *out);
int mm_sweep_write_csv(const mm_sweep *s, const char *path);
int mm_sweep_write_runs_csv(const mm_sweep *s, const char *path);

/* The paired table (one line per setting against the baseline), after
 * mm_sweep_print_table; nothing without a baseline. */
void mm_sweep_print_paired(const mm_sweep *s, FILE *out);

/* Into dir (created): sweep_acc_consensus.png, sweep_acc_bytes.png,
 * sweep_acc_wall.png with their .gp scripts and sweep.dat, and with a
 * baseline sweep_paired_acc.png (the paired accuracy difference and its
 * 95 % interval against the averaged consensus distance) with
 * sweep_paired.dat. Prints the paths. 0 ok, 1 gnuplot missing (warning),
 * -1 failure. */
int mm_sweep_plots(const mm_sweep *s, const char *dir, FILE *out);

#endif
