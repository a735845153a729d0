/* A growing text buffer for documents built in memory (the Prometheus
 * exposition, murmur watch's JSON). Out of memory is sticky: the text stops
 * growing and oom says so; the caller checks once at the end. */
#ifndef MURMUR_TEXT_H
#define MURMUR_TEXT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *p;        /* NUL-terminated once anything was put */
    size_t len, cap;
    bool oom;
} mm_text;

void mm_text_put(mm_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string, quotes included (control bytes as \u00XX). */
void mm_text_json_str(mm_text *t, const char *s);
/* v as a JSON number, null when NaN or infinite. */
void mm_text_json_num(mm_text *t, double v);
void mm_text_free(mm_text *t);

/* The shortest decimal ("%.*g", the fewest digits) that reads back
 * (strtod, strtof) as exactly v: a canonical text of a number, the same
 * for the same bits whoever writes it (0.1, 1e-05, 0.30000000000000004). */
void mm_text_double(char *out, size_t len, double v);
void mm_text_float(char *out, size_t len, float v);

#endif
