#include "report/jsonl.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t len, pos;
    char *err;
    size_t errlen;
} cursor;

static int fail(cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(cursor *c, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        int k = snprintf(c->err, c->errlen, "at byte %zu: ", c->pos);
        if (k >= 0 && (size_t)k < c->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static void ws(cursor *c)
{
    while (c->pos < c->len && (c->s[c->pos] == ' ' || c->s[c->pos] == '\t' ||
                               c->s[c->pos] == '\r' || c->s[c->pos] == '\n'))
        c->pos++;
}

static int peek(cursor *c)
{
    return c->pos < c->len ? (unsigned char)c->s[c->pos] : -1;
}

static bool lit(cursor *c, const char *w)
{
    size_t n = strlen(w);
    if (c->len - c->pos >= n && !memcmp(c->s + c->pos, w, n)) {
        c->pos += n;
        return true;
    }
    return false;
}

static int hex4(cursor *c, unsigned *u)
{
    *u = 0;
    for (int i = 0; i < 4; i++) {
        int ch = peek(c);
        unsigned d;
        if (ch >= '0' && ch <= '9') d = (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') d = (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') d = (unsigned)(ch - 'A' + 10);
        else return fail(c, "bad \\u escape");
        *u = *u * 16 + d;
        c->pos++;
    }
    return 0;
}

/* Reads a string; *out gets a malloc'd copy unless out is NULL (skipping). */
static int string(cursor *c, char **out)
{
    if (peek(c) != '"')
        return fail(c, "expected a string");
    c->pos++;
    char *buf = NULL;
    size_t n = 0;
    if (out) {
        buf = malloc(c->len - c->pos + 1); /* unescaping never grows it */
        if (!buf)
            return fail(c, "out of memory");
    }
    for (;;) {
        int ch = peek(c);
        if (ch < 0) {
            free(buf);
            return fail(c, "unterminated string");
        }
        c->pos++;
        if (ch == '"')
            break;
        if (ch < 0x20) {
            free(buf);
            return fail(c, "control character in string");
        }
        if (ch != '\\') {
            if (buf) buf[n++] = (char)ch;
            continue;
        }
        int e = peek(c);
        c->pos++;
        char r;
        switch (e) {
        case '"': r = '"'; break;
        case '\\': r = '\\'; break;
        case '/': r = '/'; break;
        case 'b': r = '\b'; break;
        case 'f': r = '\f'; break;
        case 'n': r = '\n'; break;
        case 'r': r = '\r'; break;
        case 't': r = '\t'; break;
        case 'u': {
            unsigned u;
            if (hex4(c, &u)) {
                free(buf);
                return -1;
            }
            if (u >= 0xD800 && u < 0xDC00 && lit(c, "\\u")) {
                unsigned lo;
                if (hex4(c, &lo)) {
                    free(buf);
                    return -1;
                }
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (buf) { /* UTF-8; a \u escape of 6+ bytes never yields more than 4 */
                if (u < 0x80) buf[n++] = (char)u;
                else if (u < 0x800) {
                    buf[n++] = (char)(0xC0 | (u >> 6));
                    buf[n++] = (char)(0x80 | (u & 63));
                } else if (u < 0x10000) {
                    buf[n++] = (char)(0xE0 | (u >> 12));
                    buf[n++] = (char)(0x80 | ((u >> 6) & 63));
                    buf[n++] = (char)(0x80 | (u & 63));
                } else {
                    buf[n++] = (char)(0xF0 | (u >> 18));
                    buf[n++] = (char)(0x80 | ((u >> 12) & 63));
                    buf[n++] = (char)(0x80 | ((u >> 6) & 63));
                    buf[n++] = (char)(0x80 | (u & 63));
                }
            }
            continue;
        }
        default:
            free(buf);
            return fail(c, "bad escape");
        }
        if (buf) buf[n++] = r;
    }
    if (out) {
        buf[n] = 0;
        *out = buf;
    }
    return 0;
}

/* A number per the JSON grammar, or NaN / Infinity / -Infinity / nan / inf. */
static int number(cursor *c, double *v, char **raw)
{
    size_t start = c->pos;
    if (lit(c, "NaN") || lit(c, "nan") || lit(c, "-nan")) {
        *v = NAN;
    } else if (lit(c, "Infinity") || lit(c, "inf")) {
        *v = INFINITY;
    } else if (lit(c, "-Infinity") || lit(c, "-inf")) {
        *v = -INFINITY;
    } else {
        size_t p = c->pos;
        if (p < c->len && c->s[p] == '-') p++;
        size_t digits = p;
        while (p < c->len && c->s[p] >= '0' && c->s[p] <= '9') p++;
        if (p == digits)
            return fail(c, "expected a value");
        if (p - digits > 1 && c->s[digits] == '0')
            return fail(c, "leading zero in a number");
        if (p < c->len && c->s[p] == '.') {
            size_t f = ++p;
            while (p < c->len && c->s[p] >= '0' && c->s[p] <= '9') p++;
            if (p == f)
                return fail(c, "digits expected after '.'");
        }
        if (p < c->len && (c->s[p] == 'e' || c->s[p] == 'E')) {
            p++;
            if (p < c->len && (c->s[p] == '+' || c->s[p] == '-')) p++;
            size_t f = p;
            while (p < c->len && c->s[p] >= '0' && c->s[p] <= '9') p++;
            if (p == f)
                return fail(c, "digits expected in exponent");
        }
        char tmp[64];
        if (p - c->pos >= sizeof tmp)
            return fail(c, "number too long");
        memcpy(tmp, c->s + c->pos, p - c->pos);
        tmp[p - c->pos] = 0;
        errno = 0;
        *v = strtod(tmp, NULL);
        /* Beyond a double: no writer produces it (ours writes null for
         * non-finite values), so the line is damaged. Underflow reads as 0. */
        if (errno == ERANGE && isinf(*v))
            return fail(c, "number out of range");
        c->pos = p;
    }
    if (raw) {
        size_t n = c->pos - start;
        *raw = malloc(n + 1);
        if (!*raw)
            return fail(c, "out of memory");
        memcpy(*raw, c->s + start, n);
        (*raw)[n] = 0;
    }
    return 0;
}

static int skip_value(cursor *c, int depth);

static int skip_container(cursor *c, int depth, char close, bool keyed)
{
    c->pos++;
    ws(c);
    if (peek(c) == close) {
        c->pos++;
        return 0;
    }
    for (;;) {
        ws(c);
        if (keyed) {
            if (string(c, NULL))
                return -1;
            ws(c);
            if (peek(c) != ':')
                return fail(c, "expected ':'");
            c->pos++;
        }
        if (skip_value(c, depth + 1))
            return -1;
        ws(c);
        int ch = peek(c);
        c->pos++;
        if (ch == close)
            return 0;
        if (ch != ',')
            return fail(c, "expected ',' or '%c'", close);
    }
}

static int skip_value(cursor *c, int depth)
{
    if (depth > 32)
        return fail(c, "nested too deeply");
    ws(c);
    int ch = peek(c);
    if (ch == '"')
        return string(c, NULL);
    if (ch == '[')
        return skip_container(c, depth, ']', false);
    if (ch == '{')
        return skip_container(c, depth, '}', true);
    if (lit(c, "true") || lit(c, "false") || lit(c, "null"))
        return 0;
    double v;
    return number(c, &v, NULL);
}

/* A number or null (NaN) inside an array or object; 1 if it is neither. */
static int elem_number(cursor *c, double *v)
{
    ws(c);
    if (lit(c, "null")) {
        *v = NAN;
        return 0;
    }
    int ch = peek(c);
    if (ch == '-' || (ch >= '0' && ch <= '9') || ch == 'N' || ch == 'I' || ch == 'n' || ch == 'i')
        return number(c, v, NULL);
    return 1;
}

static int number_array(cursor *c, mm_json_field *f)
{
    size_t start = c->pos, cap = 16;
    f->arr = malloc(cap * sizeof *f->arr);
    if (!f->arr)
        return fail(c, "out of memory");
    c->pos++;
    ws(c);
    if (peek(c) == ']') {
        c->pos++;
        f->type = MM_J_ARR;
        return 0;
    }
    for (;;) {
        double v;
        int r = elem_number(c, &v);
        if (r < 0)
            return -1;
        if (r > 0)
            break; /* not numbers: skip it whole */
        if (f->n_arr == cap) {
            double *nw = realloc(f->arr, 2 * cap * sizeof *nw);
            if (!nw)
                return fail(c, "out of memory");
            f->arr = nw;
            cap *= 2;
        }
        f->arr[f->n_arr++] = v;
        ws(c);
        int ch = peek(c);
        c->pos++;
        if (ch == ']') {
            f->type = MM_J_ARR;
            return 0;
        }
        if (ch != ',')
            return fail(c, "expected ',' or ']'");
    }
    free(f->arr);
    f->arr = NULL;
    f->n_arr = 0;
    c->pos = start;
    f->type = MM_J_OTHER;
    return skip_value(c, 1);
}

static int number_object(cursor *c, mm_json_field *f)
{
    size_t start = c->pos, cap = 8;
    f->obj = calloc(cap, sizeof *f->obj);
    if (!f->obj)
        return fail(c, "out of memory");
    c->pos++;
    ws(c);
    if (peek(c) == '}') {
        c->pos++;
        f->type = MM_J_OBJ;
        return 0;
    }
    for (;;) {
        ws(c);
        char *key = NULL;
        if (string(c, &key))
            return -1;
        ws(c);
        if (peek(c) != ':') {
            free(key);
            return fail(c, "expected ':'");
        }
        c->pos++;
        double v = NAN;
        char *str = NULL;
        ws(c);
        int r = peek(c) == '"' ? string(c, &str) : elem_number(c, &v);
        if (r != 0) {
            free(key);
            if (r < 0)
                return -1;
            break;
        }
        if (f->n_obj == cap) {
            mm_json_kv *nw = realloc(f->obj, 2 * cap * sizeof *nw);
            if (!nw) {
                free(key);
                free(str);
                return fail(c, "out of memory");
            }
            f->obj = nw;
            cap *= 2;
        }
        f->obj[f->n_obj].key = key;
        f->obj[f->n_obj].str = str;
        f->obj[f->n_obj++].num = v;
        ws(c);
        int ch = peek(c);
        c->pos++;
        if (ch == '}') {
            f->type = MM_J_OBJ;
            return 0;
        }
        if (ch != ',')
            return fail(c, "expected ',' or '}'");
    }
    for (size_t i = 0; i < f->n_obj; i++) {
        free(f->obj[i].key);
        free(f->obj[i].str);
    }
    free(f->obj);
    f->obj = NULL;
    f->n_obj = 0;
    c->pos = start;
    f->type = MM_J_OTHER;
    return skip_value(c, 1);
}

static int value(cursor *c, mm_json_field *f)
{
    ws(c);
    int ch = peek(c);
    if (ch == '"') {
        f->type = MM_J_STR;
        return string(c, &f->str);
    }
    if (ch == '[')
        return number_array(c, f);
    if (ch == '{')
        return number_object(c, f);
    if (lit(c, "true")) {
        f->type = MM_J_BOOL;
        f->num = 1;
        return 0;
    }
    if (lit(c, "false")) {
        f->type = MM_J_BOOL;
        return 0;
    }
    if (lit(c, "null")) {
        f->type = MM_J_NULL;
        f->num = NAN;
        return 0;
    }
    f->type = MM_J_NUM;
    return number(c, &f->num, &f->raw);
}

void mm_json_free(mm_json_obj *o)
{
    for (size_t i = 0; i < o->n; i++) {
        mm_json_field *f = &o->f[i];
        free(f->key);
        free(f->raw);
        free(f->str);
        free(f->arr);
        for (size_t k = 0; k < f->n_obj; k++) {
            free(f->obj[k].key);
            free(f->obj[k].str);
        }
        free(f->obj);
    }
    free(o->f);
    memset(o, 0, sizeof *o);
}

int mm_json_parse(const char *line, size_t len, mm_json_obj *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    cursor c = {line, len, 0, err, errlen};
    ws(&c);
    if (peek(&c) != '{')
        return fail(&c, "expected '{'");
    c.pos++;
    ws(&c);
    if (peek(&c) == '}') {
        c.pos++;
    } else {
        for (;;) {
            if (o->n == o->cap) {
                size_t cap = o->cap ? 2 * o->cap : 16;
                mm_json_field *nw = realloc(o->f, cap * sizeof *nw);
                if (!nw)
                    return fail(&c, "out of memory");
                o->f = nw;
                o->cap = cap;
            }
            mm_json_field *f = &o->f[o->n];
            memset(f, 0, sizeof *f);
            o->n++;
            ws(&c);
            if (string(&c, &f->key))
                return -1;
            ws(&c);
            if (peek(&c) != ':')
                return fail(&c, "expected ':'");
            c.pos++;
            if (value(&c, f))
                return -1;
            ws(&c);
            int ch = peek(&c);
            c.pos++;
            if (ch == '}')
                break;
            if (ch != ',')
                return fail(&c, "expected ',' or '}'");
        }
    }
    ws(&c);
    if (c.pos < c.len)
        return fail(&c, "trailing characters after the object");
    return 0;
}

const mm_json_field *mm_json_get(const mm_json_obj *o, const char *key)
{
    for (size_t i = 0; i < o->n; i++)
        if (!strcmp(o->f[i].key, key))
            return &o->f[i];
    return NULL;
}

bool mm_json_num(const mm_json_obj *o, const char *key, double *v)
{
    const mm_json_field *f = mm_json_get(o, key);
    if (!f || (f->type != MM_J_NUM && f->type != MM_J_NULL))
        return false;
    *v = f->num;
    return true;
}

bool mm_json_u64(const mm_json_obj *o, const char *key, uint64_t *v)
{
    const mm_json_field *f = mm_json_get(o, key);
    if (!f || f->type != MM_J_NUM || !f->raw || f->raw[0] == '-')
        return false;
    if (strpbrk(f->raw, ".eE")) {
        if (!(f->num >= 0 && f->num < 18446744073709551616.0) || f->num != floor(f->num))
            return false;
        *v = (uint64_t)f->num;
        return true;
    }
    errno = 0;
    char *end;
    unsigned long long u = strtoull(f->raw, &end, 10);
    if (errno || *end)
        return false;
    *v = u;
    return true;
}

const char *mm_json_str(const mm_json_obj *o, const char *key)
{
    const mm_json_field *f = mm_json_get(o, key);
    return f && f->type == MM_J_STR ? f->str : NULL;
}
