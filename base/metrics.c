#include "base/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"

int mm_metrics_open(mm_metrics *m, const char *path, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (m->fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    m->cap = 4096;
    m->buf = malloc(m->cap);
    if (!m->buf) {
        close(m->fd);
        m->fd = -1;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void mm_metrics_close(mm_metrics *m)
{
    if (m->fd >= 0)
        close(m->fd);
    m->fd = -1;
    free(m->buf);
    m->buf = NULL;
}

static void put(mm_metrics *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(mm_metrics *m, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(m->buf + m->len, m->cap - m->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < m->cap - m->len) {
            m->len += (size_t)n;
            return;
        }
        size_t cap = m->cap * 2 + (size_t)n;
        char *b = realloc(m->buf, cap);
        if (!b)
            return; /* the line will be short but still well-formed up to here */
        m->buf = b;
        m->cap = cap;
    }
}

static void key(mm_metrics *m, const char *k)
{
    put(m, "%s\"%s\":", m->first_field ? "" : ",", k);
    m->first_field = false;
}

static void number(mm_metrics *m, double v)
{
    if (isfinite(v))
        put(m, "%.9g", v);
    else
        put(m, "null");
}

void mm_metrics_begin(mm_metrics *m, const char *ev)
{
    m->len = 0;
    m->first_field = true;
    put(m, "{");
    mm_metrics_str(m, "ev", ev);
}

void mm_metrics_int(mm_metrics *m, const char *k, long long v)
{
    key(m, k);
    put(m, "%lld", v);
}

void mm_metrics_num(mm_metrics *m, const char *k, double v)
{
    key(m, k);
    number(m, v);
}

void mm_metrics_fixed(mm_metrics *m, const char *k, double v, int decimals)
{
    key(m, k);
    if (isfinite(v))
        put(m, "%.*f", decimals, v);
    else
        put(m, "null");
}

/* v as a JSON string literal. */
static void string(mm_metrics *m, const char *v)
{
    put(m, "\"");
    for (const char *p = v; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\')
            put(m, "\\%c", c);
        else if (c < 0x20)
            put(m, "\\u%04x", c);
        else
            put(m, "%c", c);
    }
    put(m, "\"");
}

void mm_metrics_str(mm_metrics *m, const char *k, const char *v)
{
    key(m, k);
    string(m, v);
}

void mm_metrics_ids(mm_metrics *m, const char *k, const uint32_t *v, int n)
{
    key(m, k);
    put(m, "[");
    for (int i = 0; i < n; i++)
        put(m, "%s%u", i ? "," : "", v[i]);
    put(m, "]");
}

void mm_metrics_floats(mm_metrics *m, const char *k, const float *v, int n)
{
    key(m, k);
    put(m, "[");
    for (int i = 0; i < n; i++) {
        if (i)
            put(m, ",");
        number(m, v[i]);
    }
    put(m, "]");
}

void mm_metrics_obj_begin(mm_metrics *m, const char *k)
{
    key(m, k);
    put(m, "{");
    m->object_first = true;
}

void mm_metrics_obj_num(mm_metrics *m, uint32_t k, double v)
{
    put(m, "%s\"%u\":", m->object_first ? "" : ",", k);
    m->object_first = false;
    number(m, v);
}

void mm_metrics_obj_int(mm_metrics *m, uint32_t k, long long v)
{
    put(m, "%s\"%u\":%lld", m->object_first ? "" : ",", k, v);
    m->object_first = false;
}

void mm_metrics_obj_str(mm_metrics *m, uint32_t k, const char *v)
{
    put(m, "%s\"%u\":", m->object_first ? "" : ",", k);
    m->object_first = false;
    string(m, v);
}

void mm_metrics_obj_named_num(mm_metrics *m, const char *k, double v)
{
    if (!m->object_first)
        put(m, ",");
    m->object_first = false;
    string(m, k);
    put(m, ":");
    number(m, v);
}

void mm_metrics_obj_end(mm_metrics *m) { put(m, "}"); }

int mm_metrics_end(mm_metrics *m)
{
    put(m, "}\n");
    if (m->fd < 0)
        return -1;
    struct stat st;
    off_t before = fstat(m->fd, &st) == 0 ? st.st_size : -1;
    ssize_t w = write(m->fd, m->buf, m->len);
    if (w == (ssize_t)m->len) {
        /* Say when a loss ends, so that every episode (a disk full twice)
         * is visible in the log and the gap can be found in the file. */
        if (m->losing)
            mm_info("metrics: writing again (%lu lines lost so far)", m->lines_lost);
        m->losing = false;
        return 0;
    }
    int e = w < 0 ? errno : ENOSPC;
    /* Never leave half a line behind: cut back to where it began. */
    if (w > 0 && before >= 0 && ftruncate(m->fd, before) != 0)
        mm_error("metrics: could not cut back a partial line: %s", strerror(errno));
    m->lines_lost++;
    if (!m->losing)
        mm_error("metrics: cannot write a line (%s); metrics are being lost", strerror(e));
    m->losing = true;
    return -1;
}
