/* murmur topo: generate topology files, print their graph and spectral
 * facts, print W. The work lives in gossip/topology.h; this is the CLI. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/sha256.h"
#include "gossip/topology.h"
#include "cli/commands.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: murmur topo gen KIND -n N [options] > FILE\n"
            "       murmur topo gen KIND -n N --family [options] > FILE\n"
            "       murmur topo info FILE [--json] [--no-rho] [--rho-method auto|dense|sparse]\n"
            "                             [--range A..B]\n"
            "       murmur topo matrix FILE [--round R] [--members K]\n\n"
            "kinds:");
    for (int k = 0; mm_topo_kinds[k]; k++)
        fprintf(out, " %s", mm_topo_kinds[k]);
    fprintf(out,
            "\n\ngen options:\n"
            "  -n N              number of peers (required)\n"
            "  --rows R          torus: rows (default: as square as N allows)\n"
            "  -d D              regular: degree (default 3, or 4 when N is odd)\n"
            "  -k K              base: the maximum degree k (default 1)\n"
            "  -s S              epidemic: peers each peer sends to per round\n"
            "                    (default ceil(log2 N))\n"
            "  --group G         alt-exp-ring: peers per host (default 1); N/G must be a\n"
            "                    power of two\n"
            "  -p P              er: edge probability (default 2 ln(N)/N)\n"
            "  --seed S          regular, er, random-matching, epidemic (default 1)\n"
            "  --directed        exp: i -> i+2^k with column-stochastic weights (push-sum)\n"
            "                    instead of the symmetrised graph (D-PSGD)\n"
            "  --weights W       metropolis (default, undirected) or uniform\n"
            "  --write-weights   write the weights as numbers ('weights explicit')\n"
            "  --family          a family file: N starting members, the graph re-formed\n"
            "                    over any number of members (ring, exp, one-peer-exp,\n"
            "                    base, complete, regular, torus)\n\n"
            "info options:\n"
            "  --json            one JSON object instead of the table\n"
            "  --no-rho          graph facts only: no rho, no tenfold (fast)\n"
            "  --rho-method M    auto (default: dense up to %d peers, sparse above),\n"
            "                    dense (LAPACK SVD, O(n^3)) or sparse (Lanczos on the\n"
            "                    sparse W, O(edges) per iteration)\n"
            "  --range A..B      a family file: its facts for A..B members, one line each\n"
            "                    (default N-8..N+8, from 1; N its starting members)\n\n"
            "matrix options:\n"
            "  --round R         the round (default 0)\n"
            "  --members K       a family file: W of the family over K members\n\n"
            "The file format and how rho is computed are described in topologies/README.md.\n",
            MM_RHO_DENSE_MAX);
}

static bool parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int gen(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *kind = argv[1];
    mm_gen_opts o = {.seed = 1};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        bool takes = !strcmp(a, "-n") || !strcmp(a, "--rows") || !strcmp(a, "-d") || !strcmp(a, "-p") ||
                     !strcmp(a, "--seed") || !strcmp(a, "--weights") || !strcmp(a, "-k") ||
                     !strcmp(a, "-s") || !strcmp(a, "--group");
        if (takes && !v) {
            fprintf(stderr, "murmur topo gen: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "-n") || !strcmp(a, "--rows") || !strcmp(a, "-d") || !strcmp(a, "-k") ||
            !strcmp(a, "-s") || !strcmp(a, "--group")) {
            if (!parse_int(v, 1, 1 << 20, &x)) {
                fprintf(stderr, "murmur topo gen: %s: expected a whole number 1..%d, got '%s'\n", a, 1 << 20, v);
                return 2;
            }
            if ((!strcmp(a, "-k") && strcmp(kind, "base")) || (!strcmp(a, "-d") && strcmp(kind, "regular"))) {
                fprintf(stderr, "murmur topo gen: %s applies to kind %s only\n", a,
                        !strcmp(a, "-k") ? "base" : "regular");
                return 2;
            }
            *(!strcmp(a, "-n") ? &o.n : !strcmp(a, "-d") || !strcmp(a, "-k") ? &o.degree
              : !strcmp(a, "-s") ? &o.fanout : !strcmp(a, "--group") ? &o.group : &o.rows) = (int)x;
        } else if (!strcmp(a, "-p")) {
            char *end;
            o.p = strtod(v, &end);
            if (*end || !(o.p > 0 && o.p <= 1)) {
                fprintf(stderr, "murmur topo gen: -p: expected a probability in (0, 1], got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            o.seed = strtoull(v, &end, 10);
            if (!*v || *end || errno || *v == '-') {
                fprintf(stderr, "murmur topo gen: --seed: expected a non-negative integer, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--weights")) {
            o.weights_set = true;
            if (!strcmp(v, "metropolis"))
                o.weights = MM_W_METROPOLIS;
            else if (!strcmp(v, "uniform"))
                o.weights = MM_W_UNIFORM;
            else {
                fprintf(stderr, "murmur topo gen: --weights: expected metropolis or uniform, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--directed")) {
            o.directed = true;
        } else if (!strcmp(a, "--write-weights")) {
            o.write_weights = true;
        } else if (!strcmp(a, "--family")) {
            o.family = true;
        } else {
            fprintf(stderr, "murmur topo gen: unknown option '%s'\n", a);
            return 2;
        }
        if (takes)
            i++;
    }
    if (!o.n) {
        fprintf(stderr, "murmur topo gen: -n N (the number of peers) is required\n");
        return 2;
    }
    mm_topo_spec s;
    char err[512];
    if (mm_topo_generate(kind, &o, &s, err, sizeof err) < 0) {
        fprintf(stderr, "murmur topo %s\n", err);
        return 1;
    }
    /* Refuse to print what we could not read back. */
    mm_topology *t = mm_topo_build(&s, "generated graph", err, sizeof err);
    char *text = t ? mm_topo_format(&s) : NULL;
    mm_topo_free(t);
    mm_topo_spec_free(&s);
    if (!text) {
        fprintf(stderr, "murmur topo gen: %s\n", t ? "out of memory" : err);
        return 1;
    }
    char cmdline[256] = "";
    for (int i = 0; i < argc; i++)
        snprintf(cmdline + strlen(cmdline), sizeof cmdline - strlen(cmdline), " %s", argv[i]);
    printf("# generated by: murmur topo%s\n%s", cmdline, text);
    free(text);
    return fflush(stdout) ? 1 : 0;
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static const char *stochastic_name(const mm_topology *t, const mm_topo_facts *f)
{
    if (mm_topo_schedule(t) == MM_SCHED_EPIDEMIC)
        return "row-stochastic, not column-stochastic: each receiver averages itself and what\n"
               "              it got; the plain mean moves a little each round (E[W] is doubly stochastic)";
    if (f->symmetric && f->doubly)
        return "symmetric, doubly stochastic";
    if (f->doubly)
        return "doubly stochastic, not symmetric";
    if (f->column)
        return "column-stochastic only (needs push-sum)";
    if (f->row)
        return "row-stochastic only (gossip converges to a weighted, not the plain, average)";
    return "neither row- nor column-stochastic";
}

/* A word of `topo info` or `topo matrix` that is none of its options: the
 * FILE, once. 0, or 2 (a usage error, said). */
static int positional(const char *cmd, const char *arg, const char **path)
{
    if (arg[0] == '-' && arg[1]) {
        fprintf(stderr, "murmur topo %s: unknown option '%s'\n", cmd, arg);
        return 2;
    }
    if (*path) {
        fprintf(stderr, "murmur topo %s: one FILE only\n", cmd);
        return 2;
    }
    *path = arg;
    return 0;
}

/* The topology in path, or NULL with the exit status in *rc (2: no FILE
 * given, 1: it does not load) after saying why. */
static mm_topology *load_file(const char *path, int *rc)
{
    if (!path) {
        usage(stderr);
        *rc = 2;
        return NULL;
    }
    char err[512];
    mm_topology *t = mm_topo_load(path, err, sizeof err);
    if (!t) {
        fprintf(stderr, "murmur topo: %s\n", err);
        *rc = 1;
    }
    return t;
}

/* Progress on stderr once a computation has run for a few seconds, then
 * every few seconds: `topo info` on 10,000 peers takes a while. */
typedef struct {
    double start, last;
} progress_state;

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void show_progress(void *ud, const char *what)
{
    progress_state *ps = ud;
    double now = mono_now();
    if (now - ps->start < 3 || now - ps->last < 3)
        return;
    ps->last = now;
    fprintf(stderr, "murmur topo info: [%4.0fs] %s\n", now - ps->start, what);
}

/* rho as text: within 1e-6 of 1, as "1 - 1.316e-07" (six decimals would
 * print 1.000000 while the rounds it implies are in the millions). Closer
 * to 1 than 1e-13 is rounding (the largest ring, 2^20 peers, has
 * 1 - rho = 1.2e-11). */
static void fmt_rho(char *buf, size_t len, double rho)
{
    if (rho < 1 - 1e-13 && 1 - rho < 1e-6)
        snprintf(buf, len, "1 - %.4g", 1 - rho);
    else
        snprintf(buf, len, "%.6f", rho);
}

/* "exact to rounding", or the error estimate and the iterations. */
static void fmt_accuracy(char *buf, size_t len, const mm_rho *r)
{
    if (!strncmp(r->method, "sampled", 7))
        snprintf(buf, len, "%s", r->method);
    else if (!r->iterations)
        snprintf(buf, len, "%s, exact to rounding", r->method);
    else
        snprintf(buf, len, "%s, %d iterations, error %s%.1g%s", r->method, r->iterations,
                 r->converged ? "< " : "about ", r->err > 1e-16 ? r->err : 1e-16,
                 r->converged ? "" : " (iteration cap reached)");
}

/* The object `info --json` prints, but for its closing brace (a family
 * file adds its range first). */
static void info_json(const char *path, const mm_topology *t, const mm_topo_facts *f)
{
    int n = mm_topo_n(t), period = mm_topo_period(t);
    printf("{\"file\": ");
    json_str(path);
    printf(", \"kind\": ");
    json_str(mm_topo_kind(t));
    char hex[65];
    mm_sha256_hex(mm_topo_digest(t), hex);
    printf(", \"digest\": \"%s\"", hex);
    printf(", \"peers\": %d, \"directed\": %s, \"push_sum\": %s, \"time_varying\": %s, \"period\": %d, \"window\": %d,\n",
           n, f->arcs_directed ? "true" : "false", mm_topo_directed(t) ? "true" : "false",
           period == 1 ? "false" : "true", period, f->window);
    printf(" \"edges\": %zu, \"edges_per_round\": %zu, \"degree_min\": %d, \"degree_max\": %d,"
           " \"in_degree_min\": %d, \"in_degree_max\": %d, \"out_degree_min\": %d, \"out_degree_max\": %d,\n",
           f->edges, f->edges_per_round, f->deg_min, f->deg_max, f->in_min, f->in_max, f->out_min, f->out_max);
    printf(" \"diameter\": %d, \"connected\": %s, \"symmetric\": %s, \"doubly_stochastic\": %s,"
           " \"column_stochastic\": %s, \"row_stochastic\": %s,\n",
           f->diameter, f->connected ? "true" : "false", f->symmetric ? "true" : "false",
           f->doubly ? "true" : "false", f->column ? "true" : "false", f->row ? "true" : "false");
    /* A ring all-reduce sends 2(n-1)/n vectors' worth per peer (reduce-scatter
     * and all-gather, each (n-1)/n of the vector). */
    printf(" \"communicates\": %s, \"sends_per_round\": %.10g, \"ring_allreduce_sends\": %.10g,"
           " \"exact_average\": %s,\n", mm_topo_schedule(t) == MM_SCHED_LOCAL ? "false" : "true",
           f->sends, n > 1 ? 2.0 * (n - 1) / n : 0, f->exact_average ? "true" : "false");
    if (!f->has_rho) {
        printf(" \"rho_rounds\": null, \"rho\": null, \"rho_method\": null, \"rounds_tenfold\": null");
        return;
    }
    printf(" \"rho_rounds\": [");
    for (int r = 0; r < f->n_rho_rounds; r++)
        printf("%s%.17g", r ? ", " : "", f->rho_rounds[r]);
    printf("], \"rho\": %.17g, \"one_minus_rho\": %.6g, \"rho_error\": %.3g, \"rho_error_bound\": %.3g,"
           " \"rho_iterations\": %d, \"rho_converged\": %s,\n \"rho_method\": ",
           f->rho, 1 - f->rho, f->rho_all.err, f->rho_all.err_bound, f->rho_all.iterations,
           f->rho_all.converged ? "true" : "false");
    json_str(f->rho_how);
    printf(", \"rho_computed_by\": ");
    json_str(f->rho_all.method);
    if (isinf(f->rounds_tenfold))
        printf(", \"rounds_tenfold\": null");
    else
        printf(", \"rounds_tenfold\": %.0f", f->rounds_tenfold);
}

/* What peers compare in their HELLO (docs/protocol.md 3.1). */
static void print_digest(const mm_topology *t)
{
    char hex[65];
    mm_sha256_hex(mm_topo_digest(t), hex);
    printf("digest        %s\n", hex);
}

/* `schedule local`: nothing to say but that nothing is said. */
static void info_local(const char *path, const mm_topology *t)
{
    printf("file          %s\n", path);
    printf("kind          %s\n", mm_topo_kind(t));
    printf("peers         %d\n", mm_topo_n(t));
    print_digest(t);
    printf("graph         none: no communication, every peer trains alone on its shard (W = I)\n");
    printf("sends         0 vectors per peer per round\n");
    printf("rho           1  = ||I - J||_2: nothing is averaged\n");
    printf("tenfold       never: the consensus distance never shrinks (the no-communication "
           "baseline)\n");
}

static void info_text(const char *path, const mm_topology *t, const mm_topo_facts *f)
{
    if (mm_topo_schedule(t) == MM_SCHED_LOCAL) {
        info_local(path, t);
        return;
    }
    int n = mm_topo_n(t), period = mm_topo_period(t);
    double ring_allreduce = n > 1 ? 2.0 * (n - 1) / n : 0;
    const char *tv = period == 1 ? "static" : period == 0 ? "time-varying (random, never repeats)"
                                                          : "time-varying (periodic)";
    bool sym = !f->arcs_directed;
    const char *links = mm_topo_directed(t) ? (f->doubly ? "directed, W doubly stochastic all the same "
                                                           "(push-sum not required)"
                                                         : "directed, column-stochastic W: needs push-sum")
                        : mm_topo_schedule(t) == MM_SCHED_EPIDEMIC
                            ? "directed links, row-stochastic W: dpsgd, no push-sum"
                        : f->arcs_directed ? "directed links, doubly stochastic W: no push-sum needed"
                                           : "undirected";
    printf("file          %s\n", path);
    printf("kind          %s\n", mm_topo_kind(t));
    printf("peers         %d\n", n);
    print_digest(t);
    printf("graph         %s, %s\n", links, tv);
    if (period > 1)
        printf("period        %d rounds\n", period);
    char over[64] = "";
    if (period == 0)
        snprintf(over, sizeof over, " (union of rounds 0..%d)", f->window - 1);
    else if (period > 1)
        snprintf(over, sizeof over, " (union over one period)");
    if (sym && mm_topo_directed(t)) /* a directed file whose arcs all come in pairs */
        printf("edges         %zu directed (%zu pairs, each both ways)%s\n", 2 * f->edges,
               f->edges, over);
    else
        printf("edges         %zu%s%s\n", f->edges, sym ? "" : " directed", over);
    if (period != 1)
        printf("per round     %zu edges\n", f->edges_per_round);
    if (sym)
        printf("degree        min %d, max %d%s\n", f->deg_min, f->deg_max, over);
    else
        printf("degree        in %d..%d, out %d..%d%s\n", f->in_min, f->in_max, f->out_min, f->out_max, over);
    if (f->connected)
        printf("diameter      %d\nconnected     yes%s\n", f->diameter, mm_topo_directed(t) ? " (strongly)" : "");
    else
        printf("connected     no\n");
    printf("W             %s\n", stochastic_name(t, f));
    printf("sends         %.4g vector%s per peer per round (mean%s); a ring all-reduce: "
           "2(n-1)/n = %.4g\n", f->sends, f->sends == 1 ? "" : "s",
           period == 1 ? "" : " over the rounds above", ring_allreduce);
    if (f->exact_average)
        printf("all-reduce    W = J: the exact average every round, the same result as an "
               "all-reduce (the centralized\n"
               "              reference), for %d vectors sent per peer per round instead of %.4g\n",
               n - 1, ring_allreduce);
    if (!f->has_rho)
        return;
    char num[48], acc[160];
    if (period != 1) {
        printf("rho by round ");
        for (int r = 0; r < f->n_rho_rounds; r++) {
            fmt_rho(num, sizeof num, f->rho_rounds[r]);
            printf(" %s", num);
        }
        printf("%s\n", period == 0 ? " ..." : "");
    }
    fmt_rho(num, sizeof num, f->rho);
    printf("rho           %s  = %s\n", num, f->rho_how);
    fmt_accuracy(acc, sizeof acc, &f->rho_all);
    printf("computed by   %s\n", acc);
    if (isinf(f->rounds_tenfold))
        printf("tenfold       never: rho >= 1, pure gossip does not shrink the consensus distance\n");
    else
        printf("tenfold       %.0f round%s of pure gossip shrink%s the consensus distance tenfold\n",
               f->rounds_tenfold, f->rounds_tenfold == 1 ? "" : "s", f->rounds_tenfold == 1 ? "s" : "");
}

/* ---- a family file: its facts over a range of member counts ---------------- */

#define RANGE_MAX 4096 /* member counts one `info --range` may show */

/* "A..B", 1 <= A <= B <= 2^20, at most RANGE_MAX counts. */
static bool parse_range(const char *v, int *a, int *b)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || strncmp(end, "..", 2) || errno)
        return false;
    const char *w = end + 2;
    long y = strtol(w, &end, 10);
    if (end == w || *end || errno || x < 1 || y < x || y > (1 << 20) || y - x >= RANGE_MAX)
        return false;
    *a = (int)x;
    *b = (int)y;
    return true;
}

/* What the family gives k members: facts (and rho unless no_rho), shape. */
typedef struct {
    int k;
    mm_topo_facts f;
    char shape[96];
} family_row;

static int family_row_get(const mm_topology *family, int k, bool no_rho, enum mm_rho_method m,
                          const mm_topo_progress *p, family_row *row)
{
    char err[512];
    mm_topology *t = mm_topo_instantiate(family, k, err, sizeof err);
    if (!t) {
        fprintf(stderr, "murmur topo info: %s\n", err);
        return -1;
    }
    int rc = mm_topo_graph_facts(t, p, &row->f);
    if (rc == 0 && !no_rho)
        rc = mm_topo_rho_facts(t, m, p, &row->f);
    mm_topo_free(t);
    if (rc < 0) {
        fprintf(stderr, "murmur topo info: %d members: out of memory or LAPACK failure\n", k);
        return -1;
    }
    row->k = k;
    mm_topo_family_shape(family, k, row->shape, sizeof row->shape);
    return 0;
}

static const char *w_short(const mm_topo_facts *f)
{
    return f->doubly ? "doubly" : f->row ? "row" : f->column ? "column" : "none";
}

static void family_head(const char *path, const mm_topology *t, int a, int b)
{
    char fam[128];
    mm_topo_family_describe(t, fam, sizeof fam);
    int n = mm_topo_family_peers(t);
    printf("file          %s\n", path);
    printf("kind          %s\n", mm_topo_kind(t));
    printf("family        %s: re-formed over the members at every change\n", fam);
    printf("peers         %d at the start (ids 0..%d)\n", n, n - 1);
    print_digest(t);
    printf("members       %d..%d below: the family over k members, ranks 0..k-1 = member ids in\n"
           "              ascending order; degree and diameter of the union over one period,\n"
           "              sends = vectors per peer per round, W = doubly or row stochastic,\n"
           "              tenfold = rounds of pure gossip that shrink the consensus distance tenfold\n\n",
           a, b);
    printf("members  degree  sends  diameter  W       rho            tenfold  graph\n");
}

static void family_line(const family_row *r)
{
    const mm_topo_facts *f = &r->f;
    char deg[32], rho[48] = "-", ten[32] = "-";
    if (f->deg_min == f->deg_max)
        snprintf(deg, sizeof deg, "%d", f->deg_max);
    else
        snprintf(deg, sizeof deg, "%d..%d", f->deg_min, f->deg_max);
    if (f->has_rho) {
        fmt_rho(rho, sizeof rho, f->rho);
        if (isinf(f->rounds_tenfold))
            snprintf(ten, sizeof ten, "never");
        else
            snprintf(ten, sizeof ten, "%.0f", f->rounds_tenfold);
    }
    printf("%7d  %6s  %5.4g  %8d  %-6s  %-13s  %7s  %s\n", r->k, deg, f->sends, f->diameter,
           w_short(f), rho, ten, r->shape);
}

static void family_json(const family_row *r, bool first)
{
    const mm_topo_facts *f = &r->f;
    printf("%s\n  {\"members\": %d, \"graph\": ", first ? "" : ",", r->k);
    json_str(r->shape);
    printf(", \"degree_min\": %d, \"degree_max\": %d, \"sends_per_round\": %.10g, "
           "\"diameter\": %d, \"connected\": %s, \"doubly_stochastic\": %s, ",
           f->deg_min, f->deg_max, f->sends, f->diameter, f->connected ? "true" : "false",
           f->doubly ? "true" : "false");
    if (!f->has_rho)
        printf("\"rho\": null, \"rounds_tenfold\": null}");
    else if (isinf(f->rounds_tenfold))
        printf("\"rho\": %.17g, \"rounds_tenfold\": null}", f->rho);
    else
        printf("\"rho\": %.17g, \"rounds_tenfold\": %.0f}", f->rho, f->rounds_tenfold);
}

/* `info` of a family file: the text head and one line per member count,
 * or (json) the usual object for its starting members plus "family" and
 * "range" (launchers read the first lines as for any file). */
static int family_info(const char *path, const mm_topology *t, const mm_topo_facts *at_n,
                       bool json, bool no_rho, enum mm_rho_method m, const mm_topo_progress *p,
                       int a, int b)
{
    if (json) {
        info_json(path, t, at_n);
        char fam[128];
        mm_topo_family_describe(t, fam, sizeof fam);
        printf(",\n \"family\": ");
        json_str(fam);
        printf(", \"family_peers\": %d, \"range\": [", mm_topo_family_peers(t));
    } else {
        family_head(path, t, a, b);
    }
    for (int k = a; k <= b; k++) {
        family_row r;
        if (family_row_get(t, k, no_rho, m, p, &r) < 0)
            return 1;
        if (json)
            family_json(&r, k == a);
        else
            family_line(&r);
    }
    if (json)
        printf("]}\n");
    return 0;
}

static int info(int argc, char **argv)
{
    const char *path = NULL;
    bool json = false, no_rho = false, range_given = false;
    int ra = 0, rb = 0;
    enum mm_rho_method method = MM_RHO_AUTO;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--range")) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            if (!parse_range(v, &ra, &rb)) {
                fprintf(stderr, "murmur topo info: --range: expected A..B, 1 <= A <= B <= %d, at "
                        "most %d counts, got '%s'\n", 1 << 20, RANGE_MAX, v);
                return 2;
            }
            range_given = true;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--no-rho")) {
            no_rho = true;
        } else if (!strcmp(argv[i], "--rho-method")) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            if (!strcmp(v, "auto"))
                method = MM_RHO_AUTO;
            else if (!strcmp(v, "dense"))
                method = MM_RHO_DENSE;
            else if (!strcmp(v, "sparse"))
                method = MM_RHO_SPARSE;
            else {
                fprintf(stderr, "murmur topo info: --rho-method: expected auto, dense or sparse, got '%s'\n", v);
                return 2;
            }
        } else if (positional("info", argv[i], &path)) {
            return 2;
        }
    }
    int rc;
    mm_topology *t = load_file(path, &rc);
    if (!t)
        return rc;
    bool family = mm_topo_family(t);
    if (range_given && !family) {
        fprintf(stderr, "murmur topo info: --range: %s is not a family (it names its peers' "
                "edges or schedule)\n", path);
        mm_topo_free(t);
        return 2;
    }
    if (family && !range_given) { /* around the starting members */
        int n = mm_topo_family_peers(t);
        ra = n > 9 ? n - 8 : 1;
        rb = n + 8 < (1 << 20) ? n + 8 : 1 << 20;
    }
    progress_state ps = {.start = mono_now()};
    mm_topo_progress prog = {.fn = show_progress, .ud = &ps};
    mm_topo_facts f;
    bool facts_at_n = json || !family; /* a family's text shows the range only */
    if (facts_at_n && (mm_topo_graph_facts(t, &prog, &f) < 0 ||
                       (!no_rho && mm_topo_rho_facts(t, method, &prog, &f) < 0))) {
        fprintf(stderr, "murmur topo info: %s: out of memory or LAPACK failure\n", path);
        mm_topo_free(t);
        return 1;
    }
    rc = 0;
    if (family)
        rc = family_info(path, t, &f, json, no_rho, method, &prog, ra, rb);
    else if (json) {
        info_json(path, t, &f);
        printf("}\n");
    } else
        info_text(path, t, &f);
    mm_topo_free(t);
    return fflush(stdout) || rc ? 1 : 0;
}

static int matrix(int argc, char **argv)
{
    const char *path = NULL;
    uint64_t round = 0;
    long members = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--members")) {
            if (i + 1 >= argc || !parse_int(argv[i + 1], 1, 1 << 20, &members)) {
                fprintf(stderr, "murmur topo matrix: --members: expected a whole number 1..%d\n",
                        1 << 20);
                return 2;
            }
            i++;
        } else if (!strcmp(argv[i], "--round")) {
            char *end;
            if (i + 1 >= argc || !*argv[i + 1] || *argv[i + 1] == '-') {
                fprintf(stderr, "murmur topo matrix: --round needs a non-negative integer\n");
                return 2;
            }
            errno = 0;
            round = strtoull(argv[++i], &end, 10);
            if (*end || errno) {
                fprintf(stderr, "murmur topo matrix: --round: expected a non-negative integer, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (positional("matrix", argv[i], &path)) {
            return 2;
        }
    }
    int rc;
    mm_topology *t = load_file(path, &rc);
    if (!t)
        return rc;
    if (members) {
        char err[512];
        bool family = mm_topo_family(t);
        mm_topology *k = family ? mm_topo_instantiate(t, (int)members, err, sizeof err) : NULL;
        mm_topo_free(t);
        if (!k) {
            fprintf(stderr, "murmur topo matrix: --members: %s\n",
                    family ? err : "the file is not a family (it names its peers' edges or schedule)");
            return family ? 1 : 2;
        }
        t = k;
    }
    int n = mm_topo_n(t);
    if (n > 4096) {
        fprintf(stderr, "murmur topo matrix: %d peers make a %d x %d matrix; refusing above 4096\n", n, n, n);
        mm_topo_free(t);
        return 1;
    }
    double *w = mm_topo_matrix(t, round);
    mm_topo_free(t);
    if (!w) {
        fprintf(stderr, "murmur topo matrix: out of memory\n");
        return 1;
    }
    printf("# W for round %" PRIu64 ", %d x %d, row i = the weights peer i applies\n", round, n, n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            printf("%.17g%c", w[(size_t)i * n + j], j + 1 < n ? ' ' : '\n');
    free(w);
    return fflush(stdout) ? 1 : 0;
}

int cmd_topo(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        usage(stdout);
        return 0;
    }
    /* `murmur topo gen --help`, `topo info FILE -h`: the one usage, which
     * covers every subcommand (no file or kind is needed to ask) */
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    if (!strcmp(sub, "gen"))
        return gen(argc - 1, argv + 1);
    if (!strcmp(sub, "info"))
        return info(argc - 1, argv + 1);
    if (!strcmp(sub, "matrix"))
        return matrix(argc - 1, argv + 1);
    fprintf(stderr, "murmur topo: unknown subcommand '%s' (expected gen, info or matrix)\n\n", sub);
    usage(stderr);
    return 2;
}
