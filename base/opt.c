/* base/opt.h: command-line options from one table, on top of getopt_long. */
#include "base/opt.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OPT_BASE 256 /* getopt_long codes: OPT_BASE + index into the table */

int mm_parse_long(const char *s, long lo, long hi, long *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        snprintf(err, errlen, "wants an integer in %ld..%ld, not '%s'", lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int mm_parse_u64(const char *s, unsigned long long lo, unsigned long long hi,
                 unsigned long long *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    /* strtoull accepts "-1" as ULLONG_MAX: refuse a sign outright. */
    const char *p = s;
    while (*p == ' ' || *p == '\t')
        p++;
    unsigned long long v = *p == '-' ? 0 : strtoull(s, &end, 10);
    if (*p == '-' || errno || end == s || *end || v < lo || v > hi) {
        snprintf(err, errlen, "wants an integer in %llu..%llu, not '%s'", lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int mm_parse_double(const char *s, double lo, double hi, double *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        if (isinf(hi))
            snprintf(err, errlen, "wants a number >= %g, not '%s'", lo, s);
        else
            snprintf(err, errlen, "wants a number in %g..%g, not '%s'", lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static bool is_option(const mm_opt *o) { return o->kind != MM_OPT_SECTION; }

static int set_value(const mm_opt *o, const char *arg, char *err, size_t errlen)
{
    long l;
    unsigned long long u;
    double d;
    switch (o->kind) {
    case MM_OPT_FLAG:
        *(bool *)o->dst = true;
        return 0;
    case MM_OPT_INT:
    case MM_OPT_LONG:
        if (mm_parse_long(arg, (long)o->lo, (long)o->hi, &l, err, errlen) != 0)
            return -1;
        if (o->kind == MM_OPT_INT)
            *(int *)o->dst = (int)l;
        else
            *(long *)o->dst = l;
        return 0;
    case MM_OPT_U64:
        if (mm_parse_u64(arg, (unsigned long long)o->lo, (unsigned long long)o->hi, &u, err,
                         errlen) != 0)
            return -1;
        *(uint64_t *)o->dst = (uint64_t)u;
        return 0;
    case MM_OPT_DOUBLE:
    case MM_OPT_FLOAT:
        if (mm_parse_double(arg, o->lo, o->hi, &d, err, errlen) != 0)
            return -1;
        if (o->kind == MM_OPT_FLOAT)
            *(float *)o->dst = (float)d;
        else
            *(double *)o->dst = d;
        return 0;
    case MM_OPT_STR:
        *(const char **)o->dst = arg;
        return 0;
    case MM_OPT_CUSTOM:
        return o->parse(arg, o->dst, err, errlen);
    case MM_OPT_END:
    case MM_OPT_SECTION:
        break;
    }
    snprintf(err, errlen, "is not an option");
    return -1;
}

/* A flag given twice: the last one counts, as getopt has it, and that is
 * said once, with both values (`--lr 1e-3 --lr 2e-3` is a typo more often
 * than a choice). *seen is the value it had ("" for a flag), NULL before. */
static void warn_repeated(const char *cmd, const mm_opt *o, const char **seen, const char *arg)
{
    static const char said[] = "(said)";
    const char *now = arg ? arg : "";
    if (!*seen) {
        *seen = now;
        return;
    }
    if (*seen == said)
        return;
    if (o->kind == MM_OPT_FLAG)
        fprintf(stderr, "murmur %s: warning: --%s given twice\n", cmd, o->name);
    else
        fprintf(stderr, "murmur %s: warning: --%s given twice ('%s', then '%s'): the last "
                "one counts\n", cmd, o->name, *seen, now);
    *seen = said;
}

int mm_opt_parse(const char *cmd, int argc, char **argv, const mm_opt *table, int *first_arg,
                 void (*help)(FILE *out))
{
    size_t n = 0;
    while (table[n].kind != MM_OPT_END)
        n++;
    struct option *lo = calloc(n + 2, sizeof *lo);
    if (!lo) {
        fprintf(stderr, "murmur %s: out of memory\n", cmd);
        return -1;
    }
    size_t k = 0;
    char shorts[128] = ":h";
    size_t ns = 2;
    for (size_t i = 0; i < n; i++) {
        if (!is_option(&table[i]))
            continue;
        bool flag = table[i].kind == MM_OPT_FLAG;
        lo[k++] = (struct option){table[i].name, flag ? no_argument : required_argument, NULL,
                                  OPT_BASE + (int)i};
        if (table[i].short_name && ns + 3 < sizeof shorts) {
            shorts[ns++] = table[i].short_name;
            if (!flag)
                shorts[ns++] = ':';
            shorts[ns] = '\0';
        }
    }
    lo[k++] = (struct option){"help", no_argument, NULL, 'h'};

    /* the value each entry was given last (a repeated flag is said once) */
    const char **seen = calloc(n + 1, sizeof *seen);
    if (!seen) {
        free(lo);
        fprintf(stderr, "murmur %s: out of memory\n", cmd);
        return -1;
    }
    int rc = 0, c;
    opterr = 0;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        if (c > 0 && c < OPT_BASE && c != 'h' && c != ':' && c != '?') {
            for (size_t i = 0; i < n; i++) /* a short name: its entry */
                if (is_option(&table[i]) && table[i].short_name == c)
                    c = OPT_BASE + (int)i;
        }
        if (c == 'h') {
            if (help)
                help(stdout);
            rc = 1;
        } else if (c == ':') {
            const char *name = "?";
            for (size_t i = 0; i < n; i++)
                if (optopt == OPT_BASE + (int)i || (optopt && table[i].short_name == optopt))
                    name = table[i].name;
            fprintf(stderr, "murmur %s: --%s needs a value\n", cmd, name);
            rc = -1;
        } else if (c == '?') {
            fprintf(stderr, "murmur %s: unknown option '%s'\n", cmd, argv[optind - 1]);
            rc = -1;
        } else {
            const mm_opt *o = &table[c - OPT_BASE];
            warn_repeated(cmd, o, &seen[c - OPT_BASE], optarg);
            char why[256], sn[8] = "";
            if (o->short_name)
                snprintf(sn, sizeof sn, "-%c/", o->short_name);
            if (set_value(o, optarg, why, sizeof why) != 0) {
                fprintf(stderr, "murmur %s: %s--%s %s\n", cmd, sn, o->name, why);
                rc = -1;
            } else if (o->given) {
                *o->given = true;
            }
        }
    }
    free(lo);
    free(seen);
    if (rc < 0)
        fprintf(stderr, "Try 'murmur %s --help'.\n", cmd);
    if (first_arg)
        *first_arg = optind;
    return rc;
}

/* The current value of an entry, as --help shows its default; "" for none. */
static void show_default(const mm_opt *o, char *buf, size_t len)
{
    buf[0] = '\0';
    if (o->hide_default || (o->help && strstr(o->help, "default")))
        return;
    switch (o->kind) {
    case MM_OPT_INT: snprintf(buf, len, "%d", *(const int *)o->dst); break;
    case MM_OPT_LONG: snprintf(buf, len, "%ld", *(const long *)o->dst); break;
    case MM_OPT_U64: snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)o->dst); break;
    case MM_OPT_DOUBLE: snprintf(buf, len, "%g", *(const double *)o->dst); break;
    case MM_OPT_FLOAT: snprintf(buf, len, "%g", (double)*(const float *)o->dst); break;
    case MM_OPT_STR:
        if (*(const char *const *)o->dst)
            snprintf(buf, len, "%s", *(const char *const *)o->dst);
        break;
    case MM_OPT_CUSTOM:
        if (o->show && o->show(o->dst))
            snprintf(buf, len, "%s", o->show(o->dst));
        break;
    case MM_OPT_END: case MM_OPT_SECTION: case MM_OPT_FLAG: break;
    }
}

/* text from the current column (indent) on, wrapped at width, continuation
 * lines indented to the same column. */
static void print_wrapped(FILE *out, const char *text, int indent, int width)
{
    int col = indent;
    const char *p = text;
    while (*p) {
        const char *w = p;
        while (*w && *w != ' ')
            w++;
        int len = (int)(w - p);
        if (col > indent && col + 1 + len > width) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", len, p);
        col += len;
        p = *w ? w + 1 : w;
    }
    fputc('\n', out);
}

void mm_opt_print(FILE *out, const mm_opt *table)
{
    enum { COL = 24 };
    for (const mm_opt *o = table; o->kind != MM_OPT_END; o++) {
        if (o->kind == MM_OPT_SECTION) {
            fprintf(out, "\n%s\n", o->name);
            continue;
        }
        char lhs[96], def[160];
        int w = o->short_name
                    ? snprintf(lhs, sizeof lhs, "  -%c, --%s%s%s", o->short_name, o->name,
                               o->meta ? " " : "", o->meta ? o->meta : "")
                    : snprintf(lhs, sizeof lhs, "  --%s%s%s", o->name, o->meta ? " " : "",
                               o->meta ? o->meta : "");
        show_default(o, def, sizeof def);
        if (w >= COL - 1)
            fprintf(out, "%s\n%*s", lhs, COL, "");
        else
            fprintf(out, "%-*s", COL, lhs);
        char text[512];
        snprintf(text, sizeof text, "%s%s%s%s", o->help ? o->help : "", def[0] ? " (default " : "",
                 def, def[0] ? ")" : "");
        print_wrapped(out, text, COL, 79);
    }
}
