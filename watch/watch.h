/* `murmur watch`'s view of a run directory or a sweep directory: one JSON
 * document (docs/metrics.md, "murmur watch", has its fields) that the page
 * (watch/web/) draws. Built from murmur report's own reading of the run
 * (report/report.h, report/sweep.h) plus each peer's last round line (its
 * neighbours, those missing, the distances) for the links. */
#ifndef MURMUR_WATCH_H
#define MURMUR_WATCH_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    double stale_s;     /* a running peer silent this long is "silent" (failed) */
    bool no_exact;      /* do not read snapshots (the sketch estimate only) */
    int max_points;     /* points per series sent to the page (thinned evenly) */
} mm_watch_opts;

/* Whether dir is a sweep (has sweep.plan). */
bool mm_watch_is_sweep(const char *dir);

/* The JSON of dir at unix time now (malloc'd, *len bytes, one line: no
 * newline inside). NULL with the reason in err. */
char *mm_watch_run_json(const char *dir, const mm_watch_opts *o, double now, size_t *len,
                        char *err, size_t errlen);
char *mm_watch_sweep_json(const char *dir, const mm_watch_opts *o, double now, size_t *len,
                          char *err, size_t errlen);

/* murmur watch --hosts FILE --metrics-port PORT[+]: a run's peers through
 * their metrics endpoints, each at its hosts-file line's HOST and PORT
 * (PORT+: PORT + its id), with token (NULL: none) for their
 * --metrics-token-file. mm_watch_hosts_json scrapes every peer (each at
 * most about 3 s: a 1 s connect, 2 s reads) and returns the document, a
 * run's fields (docs/metrics.md, "Peers' endpoints"); the history is kept
 * from the first scrape, now being unix time. */
typedef struct mm_watch_hosts mm_watch_hosts;
mm_watch_hosts *mm_watch_hosts_new(const char *path, const char *metrics_port, const char *token,
                                   double now, char *err, size_t errlen);
char *mm_watch_hosts_json(mm_watch_hosts *h, const mm_watch_opts *o, double now, size_t *len,
                          char *err, size_t errlen);
void mm_watch_hosts_free(mm_watch_hosts *h);

#endif
