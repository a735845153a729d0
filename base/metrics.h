/* A JSON-lines writer for metrics.jsonl, the one `murmur node` and `murmur
 * train` both write (fields in docs/metrics.md, docs/formats.md). A line
 * is built in memory and written with one write(2); if the disk cannot take
 * all of it the file is cut back to where the line began, so a reader never
 * sees half a line. */
#ifndef MURMUR_METRICS_H
#define MURMUR_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int fd;
    char *buf;
    size_t len, cap;
    bool first_field;
    bool in_object;
    bool object_first;
    unsigned long lines_lost;  /* lines that could not be written */
    bool losing;               /* the last line could not be written */
} mm_metrics;

int mm_metrics_open(mm_metrics *m, const char *path, char *err, size_t errlen);
void mm_metrics_close(mm_metrics *m);

void mm_metrics_begin(mm_metrics *m, const char *ev);
void mm_metrics_int(mm_metrics *m, const char *key, long long v);
void mm_metrics_num(mm_metrics *m, const char *key, double v);   /* %.9g; NaN/Inf -> null */
/* v with a fixed number of decimals (times, rates); NaN/Inf -> null. */
void mm_metrics_fixed(mm_metrics *m, const char *key, double v, int decimals);
void mm_metrics_str(mm_metrics *m, const char *key, const char *v);
void mm_metrics_ids(mm_metrics *m, const char *key, const uint32_t *v, int n);
void mm_metrics_floats(mm_metrics *m, const char *key, const float *v, int n);
void mm_metrics_obj_begin(mm_metrics *m, const char *key);
void mm_metrics_obj_num(mm_metrics *m, uint32_t key, double v);
void mm_metrics_obj_int(mm_metrics *m, uint32_t key, long long v);
void mm_metrics_obj_str(mm_metrics *m, uint32_t key, const char *v);
/* A member with a name of its own (escaped like a string value). */
void mm_metrics_obj_named_num(mm_metrics *m, const char *key, double v);
void mm_metrics_obj_end(mm_metrics *m);
/* Write the line. 0 on success, -1 (and the file unchanged) on failure. */
int mm_metrics_end(mm_metrics *m);

#endif
