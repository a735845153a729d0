/* murmur report: turns a run directory (docs/metrics.md) into results.
 *
 * Loading reads every node-K/metrics.jsonl, keeps the records of every
 * (re)start (counters restart at zero with the process, so they are summed
 * over restarts; a round done twice keeps its latest record), and folds the
 * eval sketches of each round into per-round accumulators. Rows are the
 * evaluation rounds (and snapshot rounds) with consensus distance, exact
 * from snapshots when every peer present has a verified one, else
 * estimated from the sketches. */
#ifndef MURMUR_REPORT_H
#define MURMUR_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MM_REP_NBR_IDS 8

typedef struct {
    int64_t round;
    double step, time, loss, lr;
    /* Cumulative since the peer first started (summed over restarts). */
    double bytes_sent, bytes_recv, t_compute, t_comm, t_wait;
    double nbrs, missing;
    double dist_mean; /* mean of the round's neighbour distances, NaN if none */
    /* Consensus control: exchanges this round (1 when the line does not
     * say), those of the rounds the line stands for (a line folding
     * several, --round-lines: exchanges_since; else exchanges), their sum
     * over this peer's rounds up to this one, and the peer's estimate of
     * the consensus distance (NaN without --consensus-target). */
    double exchanges, exchanges_line, exchanges_cum, xi_est;
    /* the first neighbours of nbrs (the peers whose vector it mixed in the
     * round's first exchange), for the graph of who mixed with whom */
    uint8_t n_nbr_ids;
    uint32_t nbr_ids[MM_REP_NBR_IDS];
    /* Uneven peers (--deadline learn, --fit-work; docs/node.md): the round's
     * deadline and wait after its compute, its batch and local steps (NaN
     * when the line has none), and who set its pace (-1: not said). */
    double deadline, waited, batch, steps_done;
    int64_t paced_by;
} mm_rep_round;

/* Elastic runs: a change of membership a peer's `view` line recorded
 * (docs/metrics.md): at round, id joined, left or was removed (what: 1, 2
 * or 3, as member/member.h's mm_change_kind), members from then on. */
typedef struct {
    int64_t round;
    uint32_t id, members;
    uint8_t what;
} mm_rep_change;

typedef struct {
    int64_t round;
    double step, time, val_loss, val_bpb, val_acc, norm;
    bool has_sketch;
} mm_rep_eval;

/* One label's accuracy of an eval line (val_acc_labels, docs/metrics.md). */
typedef struct {
    char name[32];
    double acc;
} mm_rep_label;

typedef struct {
    int id; /* K of node-K */
    bool has_metrics;
    int n_starts, n_ends;
    /* Started again from round 0 with rounds of an earlier start in its
     * metrics: the round it had reached then (-1: never); a start line
     * saying "resume":"fresh" (--resume found no checkpoint); the largest
     * resumed_round of its start lines. */
    int64_t fresh_after;
    bool resumed_fresh;
    int64_t resumed_max;
    /* fresh_after >= 0, or resumed_fresh in a run where another peer
     * resumed from a checkpoint: its rounds do not follow the others' */
    bool fresh_in_resumed;
    bool ended;          /* the last start was followed by an end line */
    char end_reason[16];
    int64_t params;      /* from the last start line, -1 unknown */
    int n_peers, sketch_dim;
    uint64_t sketch_seed;
    char topology[128], algo[32];
    char topology_digest[65]; /* what its HELLO compares ("" in older runs) */
    char compress[48];    /* --compress codec spec, "" without */
    double gamma;         /* its --consensus-step (NaN without) */
    char outer[160];      /* --outer and its settings from the start line, "" without */
    mm_rep_round *rounds; /* sorted by round, one per round */
    size_t n_rounds;
    mm_rep_eval *evals;   /* sorted by round, one per round */
    size_t n_evals;
    size_t bad_lines;
    bool torn_tail;       /* last line had no newline (being written or cut) */
    /* Refusals and isolation (docs/metrics.md: the end and isolated lines) */
    double refused;       /* connections refused, summed over its lives' end lines */
    char top_refusal[24]; /* the end line counter with the most of them, "" if none */
    int n_refused_nbrs;   /* neighbours its last end or isolated line says were refused */
    char refused_code[24]; /* ... the refusal of the first of them */
    int first_refused;    /* ... its id (-1 none) */
    bool isolated_now;    /* running, and an isolated line came after its last mixing round */
    /* Its last end line's account of mixing nobody (NaN when the line has
     * none): rounds with neighbours that mixed none, of how many, the
     * longest stretch alone and the limit the peer judged it by. */
    double rounds_alone, rounds_with_nbrs, longest_alone_s, alone_limit_s;
    /* Elastic runs: its view lines' changes, and its views (round, tag) */
    mm_rep_change *changes;
    size_t n_changes;
    int64_t *view_rounds;
    uint32_t *view_tags;
    size_t n_views;
    double mtime;         /* metrics file modification time (epoch s) */
    /* The exit status a launcher recorded (launch/node-K.exit, written when
     * the process ended) no older than the metrics' last write
     * (has_launch_exit): a peer with one and no end line is dead, not
     * running. */
    bool has_launch_exit;
    int launch_exit;
    /* The accuracy per label of its latest eval line that has them
     * (label_round -1: none has). */
    int64_t label_round;
    mm_rep_label *labels;
    int n_labels;
} mm_rep_peer;

typedef struct {
    int64_t round;
    int n_present;          /* peers with an eval (or snapshot) at this round */
    double xi;              /* consensus distance chosen (exact if possible) */
    const char *method;     /* "exact", "sketch" or "none" */
    double xi_exact, xi_sketch; /* NaN when not available */
    int n_sketch;           /* peers whose sketch went into xi_sketch */
    double acc_mean, acc_min, acc_max;
    double vloss_mean, vloss_min, vloss_max;
    double loss_mean;       /* training loss of the round records */
    double sent_sum, recv_sum, sent_peer; /* cumulative bytes */
    double f_compute, f_comm, f_wait; /* cumulative fractions of wall time */
    double wall;            /* max peer wall time (summed over restarts) */
    double nbr_dist;        /* mean neighbour distance seen while mixing */
    /* Exchanges of this round (mean over the peers' round records), their
     * mean per round from round 0 to this one (the G bytes scale with),
     * and sqrt(mean of the squared xi_est) over the peers that have one:
     * the peers' estimate of Xi (NaN when none has). */
    double exchanges, exchanges_avg, xi_est;
    double norm_mean;       /* mean ||x_i|| from the eval lines (Xi/norm: relative spread) */
    /* Exact rows only (else NaN): ||xbar||, min/max over peers of
     * ||x_i - xbar||, and the averaged model's validation figures when the
     * hook (mm_report_eval_average) is wired. */
    double avg_norm, dev_min, dev_max, avg_val_loss, avg_val_acc;
} mm_rep_row;

typedef struct mm_rep_sketch_acc mm_rep_sketch_acc;

typedef struct {
    char *dir;
    mm_rep_peer *peers;
    int n_peers;            /* node-K directories found */
    int n_expected;         /* max(n_peers, declared n_peers) */
    int64_t params;
    char topology[128], algo[32];
    char compress[48];      /* --compress of its peers ("" plain D-PSGD) */
    double gamma;           /* their --consensus-step, NaN without */
    char outer[160];        /* their outer optimizer: "nesterov (lr 0.7, momentum 0.9, H 8)";
                             * "" none */
    mm_rep_row *rows;
    size_t n_rows;
    size_t warnings;
    /* internal: per-round sketch accumulators */
    mm_rep_sketch_acc *acc;
    size_t n_acc, cap_acc;
} mm_report;

typedef struct {
    bool no_exact;      /* skip snapshots (progress mode) */
    bool quiet_tail;    /* a line without newline is normal (run in progress) */
    FILE *warn;         /* where warnings go; NULL: stderr */
    /* The averaged model: called with the exact average xbar of every round
     * whose snapshots allow it; returns 0 with the model's validation loss
     * and accuracy at xbar (mm_report_eval_model does this with the run's
     * model and data). NULL: the report shows distances only. */
    int (*eval_average)(const float *xbar, size_t n, int64_t round, const char *run_dir,
                        double *val_loss, double *val_acc);
} mm_report_opts;

/* What mm_report_load returns when dir holds no metrics record at all
 * (no node-K/ directory, or none with a record yet): the empty run, which
 * a run that has just started is. */
#define MM_REPORT_EMPTY (-2)

/* Load dir and compute its rows. 0 on success; with a message in err,
 * MM_REPORT_EMPTY for the empty run, -1 when dir is missing or is one
 * peer's directory. */
int mm_report_load(const char *dir, const mm_report_opts *opt, mm_report *r, char *err,
                   size_t errlen);
void mm_report_free(mm_report *r);

/* The averaged model's validation loss and accuracy at xbar: builds the
 * model the run trained (its shape, data and partition from node-0's start
 * line), loads xbar and evaluates it on the peers' validation sample. 0, or
 * -1 when the run has no model (--vector-len) or its data is missing. */
int mm_report_eval_model(const float *xbar, size_t n, int64_t round, const char *run_dir,
                         double *val_loss, double *val_acc);

/* Output. */
void mm_report_print_table(const mm_report *r, FILE *out);
/* Elastic runs: who joined, left or was removed and from which round,
 * whether the peers' views of each round agreed; and for every run, the
 * stretches of rounds in which the peers that mixed were not one connected
 * graph (docs/metrics.md, "The report"). Nothing for a static run whose
 * graph stayed connected. */
void mm_report_print_membership(const mm_report *r, FILE *out);
/* The accuracy per label of the validation sample (docs/metrics.md, "The
 * report"): at the latest round any peer evaluated per label, over the
 * peers whose latest labelled eval is of that round, each label's mean,
 * min and max; printed to out and written to csv_path (label, round,
 * peers, acc_mean, acc_min, acc_max). 0 (nothing printed or written) when
 * no eval line has labels, 1 when written, -1 when csv_path cannot be. */
int mm_report_labels(const mm_report *r, FILE *out, const char *csv_path);
int mm_report_write_csv(const mm_report *r, const char *path);
void mm_report_print_progress(const mm_report *r, double now, double stale_s, FILE *out);
/* Plots into dir (created): consensus.png, accuracy.png,
 * acc_vs_consensus.png, with their .gp scripts and plot.dat beside them.
 * Prints the paths. 0 ok, 1 gnuplot missing (warning), -1 failure. */
int mm_report_plots(const mm_report *r, const char *dir, FILE *out);

/* A refusal's name (an end line counter or a "refusals" code, e.g.
 * "tls_mismatch") in words for the tables: "one side TLS, the other
 * --plaintext". NULL for names it does not know. */
const char *mm_report_refusal_words(const char *name);

/* Several runs side by side: table, CSV and one PNG. */
/* Time to a validation loss: the first evaluation row whose val_loss,
 * mean over the peers, is at most target. Returns its round and puts in
 * *wall its wall time (the slowest peer's time at that round, as the
 * row's `wall`), or returns -1 with *wall NaN when no row reaches it (or
 * target is NaN). */
int64_t mm_report_time_to_loss(const mm_report *r, double target, double *wall);
/* The default target of a comparison: the largest final val_loss of the
 * runs, a loss every run reached (NaN when none has one). */
double mm_report_common_target(mm_report *const *runs, int n);
/* The comparison table and CSV; target: the loss for the time-to-target
 * columns (NaN: none). */
void mm_report_compare_table(mm_report *const *runs, int n, double target, FILE *out);
int mm_report_compare_csv(mm_report *const *runs, int n, double target, const char *path);
int mm_report_compare_plot(mm_report *const *runs, int n, const char *png, FILE *out);

#endif
