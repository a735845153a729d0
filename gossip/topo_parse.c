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

int mm_topo_parse_spec(const char *text, size_t len, const char *name,
                       mm_topo_spec *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->weights = MM_W_METROPOLIS;
    int line_peers = 0, line_graph = 0, line_weights = 0, line_sched = 0, line_seed = 0,
        line_kind = 0, line_self = 0, line_degree = 0, line_fanout = 0, line_group = 0;
    char buf[512];
    size_t pos = 0;
    int line = 0;
    while (pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        line++;
        size_t ll = end - pos;
        const char *src = text + pos;
        pos = end + 1;
        const char *hash = memchr(src, '#', ll);
        if (hash)
            ll = (size_t)(hash - src);
        if (ll >= sizeof buf) {
            mm__topo_err(err, errlen, name, line, "line longer than %zu characters", sizeof buf - 1);
            goto fail;
        }
        memcpy(buf, src, ll);
        buf[ll] = 0;
        for (size_t i = 0; i < ll; i++)
            if (buf[i] == 0 || (!isprint((unsigned char)buf[i]) && !isspace((unsigned char)buf[i]))) {
                mm__topo_err(err, errlen, name, line, "expected text, found byte 0x%02x",
                            (unsigned char)buf[i]);
                goto fail;
            }
        char *tok[MAX_TOK + 1];
        int nt = 0;
        char *save = NULL;
        for (char *p = strtok_r(buf, " \t\r\v\f", &save); p; p = strtok_r(NULL, " \t\r\v\f", &save)) {
            if (nt == MAX_TOK) {
                mm__topo_err(err, errlen, name, line, "too many words on one line");
                goto fail;
            }
            tok[nt++] = p;
        }
        if (!nt)
            continue;
        const char *kw = tok[0];
        if (isdigit((unsigned char)kw[0])) { /* an edge: U V [WEIGHT] */
            uint64_t u, v;
            double w = NAN;
            if (!line_peers) {
                mm__topo_err(err, errlen, name, line, "expected 'peers N' before the first edge");
                goto fail;
            }
            if (nt < 2) {
                mm__topo_err(err, errlen, name, line, "expected an edge 'U V' (two peer ids), got only '%s'", kw);
                goto fail;
            }
            if (!parse_u64(tok[0], &u) || u > UINT32_MAX) {
                mm__topo_err(err, errlen, name, line, "expected a peer id, got '%s'", tok[0]);
                goto fail;
            }
            if (!parse_u64(tok[1], &v) || v > UINT32_MAX) {
                mm__topo_err(err, errlen, name, line, "expected a second peer id after '%s', got '%s'", tok[0], tok[1]);
                goto fail;
            }
            if (nt >= 3 && !parse_weight(tok[2], &w)) {
                mm__topo_err(err, errlen, name, line, "expected a weight (number or fraction a/b) after '%s %s', got '%s'",
                            tok[0], tok[1], tok[2]);
                goto fail;
            }
            if (nt > 3) {
                mm__topo_err(err, errlen, name, line, "expected the end of the line after the edge, got '%s'", tok[3]);
                goto fail;
            }
            if (mm_topo_spec_add(s, (uint32_t)u, (uint32_t)v, w, line) < 0) {
                mm__topo_err(err, errlen, name, line, "out of memory");
                goto fail;
            }
            continue;
        }
        int want = !strcmp(kw, "self") ? 3 : 2;
        if (strcmp(kw, "peers") && strcmp(kw, "kind") && strcmp(kw, "graph") && strcmp(kw, "weights") &&
            strcmp(kw, "schedule") && strcmp(kw, "seed") && strcmp(kw, "self") && strcmp(kw, "degree") &&
            strcmp(kw, "fanout") && strcmp(kw, "group")) {
            mm__topo_err(err, errlen, name, line,
                        "expected a statement (peers, kind, graph, weights, schedule, seed, degree, "
                        "fanout, group, self) or an edge 'U V [WEIGHT]', got '%s'", kw);
            goto fail;
        }
        if (nt != want) {
            mm__topo_err(err, errlen, name, line, "expected '%s' followed by %s", kw,
                        want == 3 ? "a peer id and a weight" : "one value");
            goto fail;
        }
        const char *val = tok[1];
        int *seen = !strcmp(kw, "peers") ? &line_peers : !strcmp(kw, "graph") ? &line_graph
                    : !strcmp(kw, "weights") ? &line_weights : !strcmp(kw, "schedule") ? &line_sched
                    : !strcmp(kw, "seed") ? &line_seed : !strcmp(kw, "kind") ? &line_kind
                    : !strcmp(kw, "degree") ? &line_degree : !strcmp(kw, "fanout") ? &line_fanout
                    : !strcmp(kw, "group") ? &line_group : NULL;
        if (seen && *seen) {
            mm__topo_err(err, errlen, name, line, "'%s' given twice (first on line %d)", kw, *seen);
            goto fail;
        }
        if (seen)
            *seen = line;
        if (!strcmp(kw, "peers")) {
            uint64_t n;
            if (!parse_u64(val, &n) || n < 1 || n > MM_TOPO_MAX_PEERS) {
                mm__topo_err(err, errlen, name, line, "expected the number of peers (1..%d) after 'peers', got '%s'",
                            MM_TOPO_MAX_PEERS, val);
                goto fail;
            }
            s->n = (int)n;
        } else if (!strcmp(kw, "kind")) {
            if (strlen(val) >= sizeof s->kind) {
                mm__topo_err(err, errlen, name, line, "expected a kind name of at most %zu characters",
                            sizeof s->kind - 1);
                goto fail;
            }
            strcpy(s->kind, val);
        } else if (!strcmp(kw, "graph")) {
            if (strcmp(val, "directed") && strcmp(val, "undirected")) {
                mm__topo_err(err, errlen, name, line, "expected 'graph undirected' or 'graph directed', got '%s'", val);
                goto fail;
            }
            s->directed = !strcmp(val, "directed");
        } else if (!strcmp(kw, "weights")) {
            int k = lookup(val, weights_names, 3);
            if (k < 0) {
                mm__topo_err(err, errlen, name, line, "expected weights metropolis, uniform or explicit, got '%s'", val);
                goto fail;
            }
            s->weights = (enum mm_weights)k;
        } else if (!strcmp(kw, "schedule")) {
            int k = lookup(val, schedule_names, N_SCHEDULES);
            if (k <= 0) {
                mm__topo_err(err, errlen, name, line, "expected schedule one-peer-exp, random-matching, "
                            "local, alt-exp-ring, base or epidemic, got '%s'", val);
                goto fail;
            }
            s->schedule = (enum mm_schedule)k;
        } else if (!strcmp(kw, "degree") || !strcmp(kw, "fanout") || !strcmp(kw, "group")) {
            uint64_t v;
            if (!parse_u64(val, &v) || v < 1 || v > MM_TOPO_MAX_PEERS) {
                mm__topo_err(err, errlen, name, line, "expected a whole number 1..%d after '%s', got '%s'",
                            MM_TOPO_MAX_PEERS, kw, val);
                goto fail;
            }
            *(!strcmp(kw, "degree") ? &s->degree : !strcmp(kw, "fanout") ? &s->fanout : &s->group) = (int)v;
        } else if (!strcmp(kw, "seed")) {
            if (!parse_u64(val, &s->seed)) {
                mm__topo_err(err, errlen, name, line, "expected a seed (0..2^64-1) after 'seed', got '%s'", val);
                goto fail;
            }
        } else { /* self U W */
            uint64_t u;
            double w;
            if (!line_peers) {
                mm__topo_err(err, errlen, name, line, "expected 'peers N' before 'self'");
                goto fail;
            }
            if (!parse_u64(tok[1], &u)) {
                mm__topo_err(err, errlen, name, line, "expected a peer id after 'self', got '%s'", tok[1]);
                goto fail;
            }
            if (!parse_weight(tok[2], &w)) {
                mm__topo_err(err, errlen, name, line, "expected a weight after 'self %s', got '%s'", tok[1], tok[2]);
                goto fail;
            }
            if (u >= (uint64_t)s->n) {
                mm__topo_err(err, errlen, name, line, "self %s: peer %s out of range (peers are 0..%d)",
                            tok[1], tok[1], s->n - 1);
                goto fail;
            }
            if (!s->self_w) {
                s->self_w = malloc((size_t)s->n * sizeof *s->self_w);
                s->self_line = calloc((size_t)s->n, sizeof *s->self_line);
                if (!s->self_w || !s->self_line) {
                    mm__topo_err(err, errlen, name, line, "out of memory");
                    goto fail;
                }
                for (int i = 0; i < s->n; i++)
                    s->self_w[i] = NAN;
            }
            if (s->self_line[u]) {
                mm__topo_err(err, errlen, name, line, "self %s given twice (first on line %d)", tok[1],
                            s->self_line[u]);
                goto fail;
            }
            s->self_w[u] = w;
            s->self_line[u] = line;
            if (!line_self)
                line_self = line;
        }
    }
    if (!line_peers) {
        mm__topo_err(err, errlen, name, 0, "expected 'peers N' (the number of peers); none found");
        goto fail;
    }
    bool explicit_w = s->weights == MM_W_EXPLICIT;
    if (line_sched) {
        if (s->n_edges) {
            mm__topo_err(err, errlen, name, s->edges[0].line,
                        "this file names a schedule (line %d); it cannot also list edges", line_sched);
            goto fail;
        }
        if (line_weights || line_self || line_graph) {
            int l = line_weights ? line_weights : line_graph ? line_graph : line_self;
            mm__topo_err(err, errlen, name, l, "a schedule (line %d) fixes its graph and weights; "
                        "drop this line", line_sched);
            goto fail;
        }
        bool random = s->schedule == MM_SCHED_RANDOM_MATCHING || s->schedule == MM_SCHED_EPIDEMIC;
        if (random && !line_seed) {
            mm__topo_err(err, errlen, name, line_sched,
                        "expected 'seed S' for schedule %s (every peer must draw the same graphs)",
                        schedule_names[s->schedule]);
            goto fail;
        }
        if (s->schedule == MM_SCHED_BASE && !line_degree) {
            mm__topo_err(err, errlen, name, line_sched,
                        "expected 'degree K' (the maximum degree k) for schedule base");
            goto fail;
        }
        if (s->schedule == MM_SCHED_EPIDEMIC && !line_fanout) {
            mm__topo_err(err, errlen, name, line_sched,
                        "expected 'fanout S' (peers each peer sends to per round) for schedule epidemic");
            goto fail;
        }
    }
    if (line_seed && s->schedule != MM_SCHED_RANDOM_MATCHING && s->schedule != MM_SCHED_EPIDEMIC) {
        mm__topo_err(err, errlen, name, line_seed,
                    "'seed' is only used by 'schedule random-matching' and 'schedule epidemic'");
        goto fail;
    }
    if (line_degree && s->schedule != MM_SCHED_BASE) {
        mm__topo_err(err, errlen, name, line_degree, "'degree' is only used by 'schedule base'");
        goto fail;
    }
    if (line_fanout && s->schedule != MM_SCHED_EPIDEMIC) {
        mm__topo_err(err, errlen, name, line_fanout, "'fanout' is only used by 'schedule epidemic'");
        goto fail;
    }
    if (line_group && s->schedule != MM_SCHED_ALT_EXP_RING) {
        mm__topo_err(err, errlen, name, line_group, "'group' is only used by 'schedule alt-exp-ring'");
        goto fail;
    }
    if (line_self && !explicit_w) {
        mm__topo_err(err, errlen, name, line_self, "'self' needs 'weights explicit'");
        goto fail;
    }
    if (!line_weights && s->directed)
        s->weights = MM_W_UNIFORM; /* the push-sum default */
    for (size_t i = 0; i < s->n_edges; i++) {
        const mm_edge *e = &s->edges[i];
        if (explicit_w && isnan(e->w)) {
            mm__topo_err(err, errlen, name, e->line, "expected a weight after '%u %u' (weights explicit)", e->u, e->v);
            goto fail;
        }
        if (!explicit_w && !isnan(e->w)) {
            mm__topo_err(err, errlen, name, e->line, "edge %u %u has a weight but 'weights %s' computes them; "
                        "write 'weights explicit'", e->u, e->v, weights_names[s->weights]);
            goto fail;
        }
    }
    if (!s->kind[0])
        strcpy(s->kind, s->schedule ? schedule_names[s->schedule] : "file");
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
    if (s->schedule != MM_SCHED_NONE) {
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
