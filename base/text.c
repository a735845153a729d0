/* The growing text buffer of base/text.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/text.h"

void mm_text_double(char *out, size_t len, double v)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, len, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

void mm_text_float(char *out, size_t len, float v)
{
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(out, len, "%.*g", prec, (double)v);
        if (strtof(out, NULL) == v)
            return;
    }
}

void mm_text_put(mm_text *t, const char *fmt, ...)
{
    while (!t->oom) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->cap - t->len;
        int n = t->p ? vsnprintf(t->p + t->len, room, fmt, ap) : -1;
        va_end(ap);
        if (n >= 0 && (size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? 2 * t->cap : 16384;
        while (n >= 0 && cap - t->len <= (size_t)n)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->oom = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
}

void mm_text_json_str(mm_text *t, const char *s)
{
    mm_text_put(t, "\"");
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '"' || *c == '\\')
            mm_text_put(t, "\\%c", *c);
        else if (*c < 0x20)
            mm_text_put(t, "\\u%04x", *c);
        else
            mm_text_put(t, "%c", *c);
    }
    mm_text_put(t, "\"");
}

void mm_text_json_num(mm_text *t, double v)
{
    if (isfinite(v))
        mm_text_put(t, "%.6g", v);
    else
        mm_text_put(t, "null");
}

void mm_text_free(mm_text *t)
{
    free(t->p);
    *t = (mm_text){0};
}
