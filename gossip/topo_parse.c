/* The topology file format (topologies/README.md): reading it into a spec
 * and writing a spec back. Syntax only; mm_topo_build judges the graph. */
#include "gossip/topo_internal.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOK 6

static const char *weights_names[] = {"metropolis", "uniform", "explicit"};
/* In enum mm_schedule order. */
static const char *schedule_names[] = {"none", "one-peer-exp", "random-matching", "local",
                                       "alt-exp-ring", "base", "epidemic"};
#define N_SCHEDULES ((int)(sizeof schedule_names / sizeof schedule_names[0]))

static bool parse_u64(const char *s, uint64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno)
        return false;
    *out = v;
    return true;
}

/* A decimal number or a fraction "a/b" (so "1/3" can be written by hand). */
static bool parse_weight(const char *s, double *out)
{
    char *end;
    errno = 0;
    double a = strtod(s, &end);
    if (end == s || errno)
        return false;
    if (*end == '/') {
        const char *d = end + 1;
        double b = strtod(d, &end);
        if (end == d || b == 0)
            return false;
        a /= b;
    }
    if (*end || !isfinite(a))
        return false;
    *out = a;
    return true;
}

static int lookup(const char *word, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (!strcmp(word, names[i]))
            return i;
    return -1;
}

/* The parse in progress: where each statement was first seen (0: not
 * yet), for "given twice" and for the checks that need the whole file. */
typedef struct {
    const char *name;
    mm_topo_spec *s;
    char *err;
    size_t errlen;
    int line;
    int peers, graph, weights, sched, seed, kind, self, degree, fanout, group, family;
} parse_state;

#define PERR(ps, ln, ...) mm__topo_err((ps)->err, (ps)->errlen, (ps)->name, (ln), __VA_ARGS__)

/* One line without its comment into buf, split into tok[]; -1 on a line
 * too long, a byte that is not text, or too many words. */
static int tokenize(parse_state *ps, const char *src, size_t ll, char *buf, size_t cap,
                    char **tok, int *nt)
{
    const char *hash = memchr(src, '#', ll);
    if (hash)
        ll = (size_t)(hash - src);
    if (ll >= cap)
        return PERR(ps, ps->line, "line longer than %zu characters", cap - 1);
    memcpy(buf, src, ll);
    buf[ll] = 0;
    for (size_t i = 0; i < ll; i++)
        if (buf[i] == 0 || (!isprint((unsigned char)buf[i]) && !isspace((unsigned char)buf[i])))
            return PERR(ps, ps->line, "expected text, found byte 0x%02x", (unsigned char)buf[i]);
    *nt = 0;
    char *save = NULL;
    for (char *p = strtok_r(buf, " \t\r\v\f", &save); p; p = strtok_r(NULL, " \t\r\v\f", &save)) {
        if (*nt == MAX_TOK)
            return PERR(ps, ps->line, "too many words on one line");
        tok[(*nt)++] = p;
    }
    return 0;
}

/* U V [WEIGHT] */
static int parse_edge(parse_state *ps, char **tok, int nt)
{
    uint64_t u, v;
    double w = NAN;
    int ln = ps->line;
    if (!ps->peers)
        return PERR(ps, ln, "expected 'peers N' before the first edge");
    if (nt < 2)
        return PERR(ps, ln, "expected an edge 'U V' (two peer ids), got only '%s'", tok[0]);
    if (!parse_u64(tok[0], &u) || u > UINT32_MAX)
        return PERR(ps, ln, "expected a peer id, got '%s'", tok[0]);
    if (!parse_u64(tok[1], &v) || v > UINT32_MAX)
        return PERR(ps, ln, "expected a second peer id after '%s', got '%s'", tok[0], tok[1]);
    if (nt >= 3 && !parse_weight(tok[2], &w))
        return PERR(ps, ln, "expected a weight (number or fraction a/b) after '%s %s', got '%s'",
                    tok[0], tok[1], tok[2]);
    if (nt > 3)
        return PERR(ps, ln, "expected the end of the line after the edge, got '%s'", tok[3]);
    if (mm_topo_spec_add(ps->s, (uint32_t)u, (uint32_t)v, w, ln) < 0)
        return PERR(ps, ln, "out of memory");
    return 0;
}

/* self U W */
static int parse_self(parse_state *ps, char **tok)
{
    mm_topo_spec *s = ps->s;
    uint64_t u;
    double w;
    int ln = ps->line;
    if (!ps->peers)
        return PERR(ps, ln, "expected 'peers N' before 'self'");
    if (!parse_u64(tok[1], &u))
        return PERR(ps, ln, "expected a peer id after 'self', got '%s'", tok[1]);
    if (!parse_weight(tok[2], &w))
        return PERR(ps, ln, "expected a weight after 'self %s', got '%s'", tok[1], tok[2]);
    if (u >= (uint64_t)s->n)
        return PERR(ps, ln, "self %s: peer %s out of range (peers are 0..%d)", tok[1], tok[1],
                    s->n - 1);
    if (!s->self_w) {
        s->self_w = malloc((size_t)s->n * sizeof *s->self_w);
        s->self_line = calloc((size_t)s->n, sizeof *s->self_line);
        if (!s->self_w || !s->self_line)
            return PERR(ps, ln, "out of memory");
        for (int i = 0; i < s->n; i++)
            s->self_w[i] = NAN;
    }
    if (s->self_line[u])
        return PERR(ps, ln, "self %s given twice (first on line %d)", tok[1], s->self_line[u]);
    s->self_w[u] = w;
    s->self_line[u] = ln;
    if (!ps->self)
        ps->self = ln;
    return 0;
}

#define FAMILY_LIST "ring, exp, one-peer-exp, base K, complete, regular D seed S or torus"

/* family KIND [PARAMETERS]: base K, regular D seed S, the others none. */
static int parse_family(parse_state *ps, char **tok, int nt)
{
    mm_topo_spec *s = ps->s;
    int ln = ps->line;
    if (ps->family)
        return PERR(ps, ln, "'family' given twice (first on line %d)", ps->family);
    ps->family = ln;
    enum mm_family f = nt >= 2 ? mm__family_lookup(tok[1]) : MM_FAMILY_NONE;
    if (f == MM_FAMILY_NONE)
        return PERR(ps, ln, "expected a family after 'family' (" FAMILY_LIST "), got '%s'",
                    nt >= 2 ? tok[1] : "");
    s->family = f;
    uint64_t v;
    if (f == MM_FAMILY_BASE) {
        if (nt != 3 || !parse_u64(tok[2], &v) || v < 1 || v > MM_TOPO_MAX_PEERS)
            return PERR(ps, ln, "expected 'family base K' (K, the maximum degree per round, "
                        "1..%d)", MM_TOPO_MAX_PEERS);
        s->degree = (int)v;
    } else if (f == MM_FAMILY_REGULAR) {
        if (nt != 5 || strcmp(tok[3], "seed") || !parse_u64(tok[2], &v) || v < 3 ||
            v > MM_TOPO_MAX_PEERS || !parse_u64(tok[4], &s->seed))
            return PERR(ps, ln, "expected 'family regular D seed S' (the degree D, 3..%d, and "
                        "a seed S, 0..2^64-1)", MM_TOPO_MAX_PEERS);
        s->degree = (int)v;
    } else if (nt > 2) {
        return PERR(ps, ln, "expected the end of the line after 'family %s', got '%s'", tok[1],
                    tok[2]);
    }
    return 0;
}

/* The line a statement was first seen on, for the statements that may be
 * given once. */
static int *seen_at(parse_state *ps, const char *kw)
{
    static const char *const once[] = {"peers", "graph", "weights", "schedule", "seed", "kind",
                                       "degree", "fanout", "group"};
    int *at[] = {&ps->peers, &ps->graph, &ps->weights, &ps->sched, &ps->seed, &ps->kind,
                 &ps->degree, &ps->fanout, &ps->group};
    for (size_t i = 0; i < sizeof once / sizeof once[0]; i++)
        if (!strcmp(kw, once[i]))
            return at[i];
    return NULL;
}

/* KEYWORD VALUE (or self U W) */
static int parse_statement(parse_state *ps, char **tok, int nt)
{
    mm_topo_spec *s = ps->s;
    const char *kw = tok[0], *val = tok[1];
    int ln = ps->line;
    if (!strcmp(kw, "family"))
        return parse_family(ps, tok, nt);
    int *seen = seen_at(ps, kw);
    if (!seen && strcmp(kw, "self"))
        return PERR(ps, ln, "expected a statement (peers, kind, graph, weights, schedule, seed, "
                    "degree, fanout, group, self, family) or an edge 'U V [WEIGHT]', got '%s'", kw);
    int want = seen ? 2 : 3;
    if (nt != want)
        return PERR(ps, ln, "expected '%s' followed by %s", kw,
                    want == 3 ? "a peer id and a weight" : "one value");
    if (!seen)
        return parse_self(ps, tok);
    if (*seen)
        return PERR(ps, ln, "'%s' given twice (first on line %d)", kw, *seen);
    *seen = ln;
    uint64_t v;
    if (!strcmp(kw, "peers")) {
        if (!parse_u64(val, &v) || v < 1 || v > MM_TOPO_MAX_PEERS)
            return PERR(ps, ln, "expected the number of peers (1..%d) after 'peers', got '%s'",
                        MM_TOPO_MAX_PEERS, val);
        s->n = (int)v;
    } else if (!strcmp(kw, "kind")) {
        if (strlen(val) >= sizeof s->kind)
            return PERR(ps, ln, "expected a kind name of at most %zu characters",
                        sizeof s->kind - 1);
        strcpy(s->kind, val);
    } else if (!strcmp(kw, "graph")) {
        if (strcmp(val, "directed") && strcmp(val, "undirected"))
            return PERR(ps, ln, "expected 'graph undirected' or 'graph directed', got '%s'", val);
        s->directed = !strcmp(val, "directed");
    } else if (!strcmp(kw, "weights")) {
        int k = lookup(val, weights_names, 3);
        if (k < 0)
            return PERR(ps, ln, "expected weights metropolis, uniform or explicit, got '%s'", val);
        s->weights = (enum mm_weights)k;
    } else if (!strcmp(kw, "schedule")) {
        int k = lookup(val, schedule_names, N_SCHEDULES);
        if (k <= 0)
            return PERR(ps, ln, "expected schedule one-peer-exp, random-matching, local, "
                        "alt-exp-ring, base or epidemic, got '%s'", val);
        s->schedule = (enum mm_schedule)k;
    } else if (!strcmp(kw, "seed")) {
        if (!parse_u64(val, &s->seed))
            return PERR(ps, ln, "expected a seed (0..2^64-1) after 'seed', got '%s'", val);
    } else { /* degree, fanout, group */
        if (!parse_u64(val, &v) || v < 1 || v > MM_TOPO_MAX_PEERS)
            return PERR(ps, ln, "expected a whole number 1..%d after '%s', got '%s'",
                        MM_TOPO_MAX_PEERS, kw, val);
        *(!strcmp(kw, "degree") ? &s->degree : !strcmp(kw, "fanout") ? &s->fanout : &s->group) =
            (int)v;
    }
    return 0;
}

/* A family: no edges, no schedule, undirected, weights only for the
 * families that take them and never explicit, its parameters on its line. */
static int check_family(parse_state *ps)
{
    mm_topo_spec *s = ps->s;
    const char *name = mm_topo_family_name(s->family);
    if (s->n_edges)
        return PERR(ps, s->edges[0].line, "this file names a family (line %d), which makes its "
                    "edges for every number of members; it cannot also list edges", ps->family);
    if (ps->sched)
        return PERR(ps, ps->sched > ps->family ? ps->sched : ps->family,
                    "a file names a family (line %d) or a schedule (line %d), not both",
                    ps->family, ps->sched);
    if (ps->graph && s->directed)
        return PERR(ps, ps->graph, "a family is undirected (drop 'graph directed')");
    int param = ps->seed ? ps->seed : ps->degree ? ps->degree : ps->fanout ? ps->fanout : ps->group;
    if (param)
        return PERR(ps, param, "a family takes its parameters on its own line (line %d): "
                    "'family base K', 'family regular D seed S'", ps->family);
    if (ps->weights && !mm__family_weighted(s->family))
        return PERR(ps, ps->weights, "family %s (line %d) fixes its weights; drop this line", name,
                    ps->family);
    if (ps->weights && s->weights == MM_W_EXPLICIT)
        return PERR(ps, ps->weights, "a family computes its weights for every number of members: "
                    "'weights metropolis' or 'weights uniform', not explicit");
    if (ps->self)
        return PERR(ps, ps->self, "a family computes its weights; 'self' cannot be given");
    return 0;
}

/* What needs the whole file: a schedule's parameters, and that edges and
 * weights agree with the weights statement. */
static int check_spec(parse_state *ps)
{
    mm_topo_spec *s = ps->s;
    if (!ps->peers)
        return PERR(ps, 0, "expected 'peers N' (the number of peers); none found");
    if (ps->family)
        return check_family(ps);
    bool explicit_w = s->weights == MM_W_EXPLICIT;
    bool random = s->schedule == MM_SCHED_RANDOM_MATCHING || s->schedule == MM_SCHED_EPIDEMIC;
    if (ps->sched) {
        if (s->n_edges)
            return PERR(ps, s->edges[0].line,
                        "this file names a schedule (line %d); it cannot also list edges", ps->sched);
        if (ps->weights || ps->self || ps->graph)
            return PERR(ps, ps->weights ? ps->weights : ps->graph ? ps->graph : ps->self,
                        "a schedule (line %d) fixes its graph and weights; drop this line",
                        ps->sched);
        if (random && !ps->seed)
            return PERR(ps, ps->sched, "expected 'seed S' for schedule %s (every peer must draw "
                        "the same graphs)", schedule_names[s->schedule]);
        if (s->schedule == MM_SCHED_BASE && !ps->degree)
            return PERR(ps, ps->sched, "expected 'degree K' (the maximum degree k) for schedule base");
        if (s->schedule == MM_SCHED_EPIDEMIC && !ps->fanout)
            return PERR(ps, ps->sched, "expected 'fanout S' (peers each peer sends to per round) "
                        "for schedule epidemic");
    }
    if (ps->seed && !random)
        return PERR(ps, ps->seed, "'seed' is only used by 'schedule random-matching' and "
                    "'schedule epidemic'");
    if (ps->degree && s->schedule != MM_SCHED_BASE)
        return PERR(ps, ps->degree, "'degree' is only used by 'schedule base'");
    if (ps->fanout && s->schedule != MM_SCHED_EPIDEMIC)
        return PERR(ps, ps->fanout, "'fanout' is only used by 'schedule epidemic'");
    if (ps->group && s->schedule != MM_SCHED_ALT_EXP_RING)
        return PERR(ps, ps->group, "'group' is only used by 'schedule alt-exp-ring'");
    if (ps->self && !explicit_w)
        return PERR(ps, ps->self, "'self' needs 'weights explicit'");
    if (!ps->weights && s->directed)
        s->weights = MM_W_UNIFORM; /* the push-sum default */
    for (size_t i = 0; i < s->n_edges; i++) {
        const mm_edge *e = &s->edges[i];
        if (explicit_w && isnan(e->w))
            return PERR(ps, e->line, "expected a weight after '%u %u' (weights explicit)", e->u, e->v);
        if (!explicit_w && !isnan(e->w))
            return PERR(ps, e->line, "edge %u %u has a weight but 'weights %s' computes them; "
                        "write 'weights explicit'", e->u, e->v, weights_names[s->weights]);
    }
    return 0;
}

int mm_topo_parse_spec(const char *text, size_t len, const char *name,
                       mm_topo_spec *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->weights = MM_W_METROPOLIS;
    parse_state ps = {.name = name, .s = s, .err = err, .errlen = errlen};
    char buf[512];
    size_t start = 0;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        start = 3; /* a UTF-8 byte-order mark, as Windows editors write: not text */
    for (size_t pos = start; pos < len;) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        ps.line++;
        char *tok[MAX_TOK + 1];
        int nt = 0;
        int rc = tokenize(&ps, text + pos, end - pos, buf, sizeof buf, tok, &nt);
        pos = end + 1;
        if (rc == 0 && nt)
            rc = isdigit((unsigned char)tok[0][0]) ? parse_edge(&ps, tok, nt)
                                                   : parse_statement(&ps, tok, nt);
        if (rc < 0)
            goto fail;
    }
    if (check_spec(&ps) < 0)
        goto fail;
    if (!s->kind[0])
        strcpy(s->kind, s->family   ? mm_topo_family_name(s->family)
                        : s->schedule ? schedule_names[s->schedule]
                                      : "file");
    return 0;
fail:
    mm_topo_spec_free(s);
    return -1;
}

/* A growable string. */
typedef struct {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = true;
            return;
        }
        if ((size_t)k < b->cap - b->len) {
            b->len += (size_t)k;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)k + 64;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
}

char *mm_topo_format(const mm_topo_spec *s)
{
    sbuf b = {malloc(4096), 0, 4096, false};
    if (!b.p)
        return NULL;
    b.p[0] = 0;
    if (s->comment[0]) {
        const char *c = s->comment;
        while (*c) {
            const char *nl = strchr(c, '\n');
            int l = nl ? (int)(nl - c) : (int)strlen(c);
            sb_printf(&b, "# %.*s\n", l, c);
            c += l + (nl ? 1 : 0);
        }
    }
    sb_printf(&b, "peers %d\n", s->n);
    if (s->kind[0])
        sb_printf(&b, "kind %s\n", s->kind);
    if (s->family != MM_FAMILY_NONE) {
        sb_printf(&b, "family %s", mm_topo_family_name(s->family));
        if (s->family == MM_FAMILY_BASE)
            sb_printf(&b, " %d", s->degree);
        if (s->family == MM_FAMILY_REGULAR)
            sb_printf(&b, " %d seed %" PRIu64, s->degree, s->seed);
        sb_printf(&b, "\n");
        if (mm__family_weighted(s->family))
            sb_printf(&b, "weights %s\n", weights_names[s->weights]);
    } else if (s->schedule != MM_SCHED_NONE) {
        sb_printf(&b, "schedule %s\n", schedule_names[s->schedule]);
        if (s->schedule == MM_SCHED_BASE)
            sb_printf(&b, "degree %d\n", s->degree);
        if (s->schedule == MM_SCHED_ALT_EXP_RING && s->group > 1)
            sb_printf(&b, "group %d\n", s->group);
        if (s->schedule == MM_SCHED_EPIDEMIC)
            sb_printf(&b, "fanout %d\n", s->fanout);
        if (s->schedule == MM_SCHED_RANDOM_MATCHING || s->schedule == MM_SCHED_EPIDEMIC)
            sb_printf(&b, "seed %" PRIu64 "\n", s->seed);
    } else {
        bool ex = s->weights == MM_W_EXPLICIT;
        sb_printf(&b, "graph %s\n", s->directed ? "directed" : "undirected");
        sb_printf(&b, "weights %s\n", weights_names[s->weights]);
        if (ex && s->self_w) {
            sb_printf(&b, "# self weights: self PEER W[PEER][PEER]\n");
            for (int i = 0; i < s->n; i++)
                if (!isnan(s->self_w[i]))
                    sb_printf(&b, "self %d %.17g\n", i, s->self_w[i]);
        }
        sb_printf(&b, "# %zu edges: %s%s\n", s->n_edges,
                  s->directed ? "U V = U sends to V" : "U V = U and V average together",
                  ex ? (s->directed ? ", weight W[V][U]" : ", weight W[U][V] = W[V][U]") : "");
        for (size_t i = 0; i < s->n_edges; i++) {
            if (ex)
                sb_printf(&b, "%u %u %.17g\n", s->edges[i].u, s->edges[i].v, s->edges[i].w);
            else
                sb_printf(&b, "%u %u\n", s->edges[i].u, s->edges[i].v);
        }
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
