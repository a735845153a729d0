/* What the report's files share and nobody else needs (the mm__ prefix:
 * internal to report/, not part of murmur's API). */
#ifndef MURMUR_REPORT_INT_H
#define MURMUR_REPORT_INT_H

#include <math.h>
#include <stdbool.h>

#include "report/report.h"

/* Parses one peer's metrics file into p (p->id set by the caller). */
int mm__report_load_peer(mm_report *r, mm_rep_peer *p, const char *path,
                         const mm_report_opts *opt);

/* Exact consensus distance of one round from the snapshot files of peers
 * ids[0..n). 0 on success (row's exact fields set, opt->eval_average
 * called); -1 if a file is missing, malformed or fails its SHA-256 (a
 * warning says which). */
int mm__report_exact(mm_report *r, const int *ids, int n, int64_t round,
                     const mm_report_opts *opt, mm_rep_row *row);

/* A warning line "murmur report: ..." (counted in r->warnings). */
void mm__report_warn(mm_report *r, const mm_report_opts *opt, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Folds one peer's sketch of a round into that round's accumulator. */
void mm__report_add_sketch(mm_report *r, const mm_report_opts *opt, int peer, int64_t round,
                           const double *y, int dim, uint64_t seed);
/* Sketch estimate for a round, NaN if fewer than 2 peers or the peers'
 * sketches disagree on seed or dimension. */
double mm__report_sketch_xi(const mm_report *r, int64_t round, int *n_peers);
/* Builds r->rows from the loaded peers. */
void mm__report_build_rows(mm_report *r, const mm_report_opts *opt);

/* printf of v with format f into buf, or "-" when v is NaN (not available). */
const char *mm__report_num(char *buf, size_t len, const char *f, double v);
/* " " and s right-aligned in w columns (printf pads by bytes; a UTF-8
 * character such as '±' is one column). */
void mm__report_cell(FILE *out, int w, const char *s);
/* The run's name for tables and legends: the last component of its directory. */
void mm__report_run_name(const mm_report *r, char *buf, size_t len);
/* Runs gnuplot on script; 1 if gnuplot is not installed. */
int mm__report_gnuplot(const char *script);
/* gnuplot's terminal lines (pngcairo when built in, else png) of a w x h
 * PNG, and a title as a single-quoted gnuplot string (enhanced-text
 * characters escaped). */
void mm__report_gp_terminal(FILE *f, int w, int h);
void mm__report_gp_title(FILE *f, const char *s);
/* CSV fields: a double-quoted string (quotes doubled); ',' then a number
 * with format fm, or ',' alone when v is NaN (not available). */
void mm__report_csv_str(FILE *f, const char *s);
void mm__report_csv_num(FILE *f, const char *fm, double v);
/* A number for a gnuplot data file: NaN when not finite. */
void mm__report_dat_num(FILE *f, double v);
/* The values a plot's axis shows, for the one case gnuplot's autoscale
 * cannot take: all of them equal (it then warns "empty y range" on the
 * terminal and widens the range itself). MM__GP_AXIS(log): none yet, on a
 * linear or a log axis (which shows positive values only). */
typedef struct {
    double lo, hi;
    bool log;
} mm__gp_axis;
#define MM__GP_AXIS(log_) ((mm__gp_axis){INFINITY, -INFINITY, (log_)})
void mm__gp_axis_add(mm__gp_axis *a, double v);
/* "set NAMErange [v - 1%:v + 1%]" ([-1:1] around 0), what gnuplot would
 * pick, when every value added was one value v; nothing otherwise. */
void mm__gp_axis_fix(FILE *f, const char *name, const mm__gp_axis *a);

/* A run's final figures (report_compare.c): the last evaluation round
 * (round, its mean accuracy and validation loss and the peers present),
 * the last consensus distance with its method ("exact", "sketch", "none"),
 * bytes sent per peer and wall time from each peer's last round record,
 * averaging exchanges per round (mean over the peers of their exchanges
 * over the run divided by its rounds), and the last round any peer
 * recorded. NaN / -1 when absent. */
typedef struct {
    int64_t round, last_round;
    double acc, vloss, xi, sent_peer, wall;
    double exchanges;
    const char *method;
    int peers;
    /* how the peers ended: done, refused, isolated (docs/node.md) */
    int n_done, n_refused, n_isolated;
    double refused; /* refused connections, all peers */
    char top[24];   /* the commonest refusal of the refused peers, else overall */
} mm__rep_finals;
void mm__report_finals(const mm_report *r, mm__rep_finals *f);

/* Uneven peers (report_pace.c): per peer, its rounds' mean deadline, wait,
 * batch and local steps, and how many of its neighbours' rounds it set the
 * pace of; nothing when no round line says (no --deadline learn or
 * --fit-work). */
void mm__report_print_pace(const mm_report *r, FILE *out);

#endif
