/* Command-line options from one table: each entry says its name, where the
 * value goes, its limits and its help line, so parsing, the error messages
 * and --help all come from the same place and cannot disagree. Commands that
 * share settings (murmur train and murmur node share the model, optimizer
 * and data flags: cli/options.h) share table entries, hence names, limits,
 * defaults and help text.
 *
 * Errors name the flag: "murmur node: --id wants an integer in
 * 0..2147483647, not '-1'". */
#ifndef MURMUR_OPT_H
#define MURMUR_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
    MM_OPT_END = 0,  /* terminates a table */
    MM_OPT_SECTION,  /* not an option: a heading in --help ("Model and training:") */
    MM_OPT_FLAG,     /* bool: set to true */
    MM_OPT_INT,      /* int within [lo, hi] */
    MM_OPT_LONG,     /* long within [lo, hi] */
    MM_OPT_U64,      /* uint64_t within [lo, hi] (hi up to 2^53 is exact) */
    MM_OPT_DOUBLE,   /* double within [lo, hi] */
    MM_OPT_FLOAT,    /* float within [lo, hi] */
    MM_OPT_STR,      /* const char *: the argument itself */
    MM_OPT_CUSTOM,   /* parse(arg, dst, err, errlen) decides */
} mm_opt_kind;

typedef struct mm_opt {
    mm_opt_kind kind;
    const char *name;      /* long name without "--"; the heading for a SECTION */
    const char *meta;      /* argument in --help: "N", "X", "FILE"; NULL for flags */
    void *dst;             /* where the value goes (type given by kind) */
    double lo, hi;         /* inclusive limits for numbers */
    const char *help;      /* one line; "(default ...)" is added from *dst unless
                            * the help already says "default" or shows_default is
                            * false */
    bool *given;           /* optional: set when the flag is on the command line */
    int (*parse)(const char *arg, void *dst, char *err, size_t errlen); /* CUSTOM */
    const char *(*show)(const void *dst); /* CUSTOM: the default for --help, or NULL */
    bool hide_default;     /* do not print a default for this entry */
    char short_name;       /* also -c, or 0 */
} mm_opt;

/* Table entries, with the fields not named left zero:
 *   MM_OPT_HEAD("Gossip:")
 *   MM_OPT(MM_OPT_INT, "layers", "N", &c->n_layer, 1, 64, "transformer blocks",
 *          .given = &g->layers)
 * ends with {MM_OPT_END}. */
#define MM_OPT_HEAD(title) {.kind = MM_OPT_SECTION, .name = (title)}
#define MM_OPT(k, nm, mt, p, l, h, ...)                                                 \
    {.kind = (k), .name = (nm), .meta = (mt), .dst = (p), .lo = (l), .hi = (h), .help = __VA_ARGS__}

/* Parses argv[1..] (argv[0] is the command name, e.g. "node") against the
 * table. -h and --help print usage through help() and return 1. Returns 0
 * when every argument was an option (positional arguments are left from
 * *first_arg on, argument order permuting as getopt_long does), 1 for help,
 * and -1 after printing "murmur CMD: what is wrong" and a hint to stderr. */
int mm_opt_parse(const char *cmd, int argc, char **argv, const mm_opt *table,
                 int *first_arg, void (*help)(FILE *out));

/* Prints the table's entries as aligned help lines, SECTION headings
 * included, with each entry's current value as its default. */
void mm_opt_print(FILE *out, const mm_opt *table);

/* Number parsing with limits, for the few parsers outside a table. 0 on
 * success; -1 with "wants an integer in LO..HI, not 'ARG'" (or "a number")
 * in err. */
int mm_parse_long(const char *s, long lo, long hi, long *out, char *err, size_t errlen);
int mm_parse_u64(const char *s, unsigned long long lo, unsigned long long hi,
                 unsigned long long *out, char *err, size_t errlen);
int mm_parse_double(const char *s, double lo, double hi, double *out, char *err, size_t errlen);

#endif
