/* Generators for `murmur topo gen`: each kind fills a spec; seeded random
 * kinds draw from base/rng.h so the same options give the same file. */
#include "gossip/topo_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

const char *const mm_topo_kinds[] = {"ring", "torus", "exp", "one-peer-exp", "regular", "er",
                                     "random-matching", "complete", "star", "chain", "local",
                                     "alt-exp-ring", "base", "epidemic", NULL};

static int add(mm_topo_spec *s, uint32_t u, uint32_t v)
{
    return mm_topo_spec_add(s, u, v, NAN, 0);
}

/* Undirected edge u-v unless it is a self-loop or already there (small
 * graphs such as a 2 x 2 torus fold onto themselves). Linear scan of the
 * edges at u is fine: generators make sparse graphs of modest size, and
 * the dense ones (complete) never call this. */
static int add_once(mm_topo_spec *s, uint32_t u, uint32_t v, uint32_t **adj, int *deg, int maxdeg)
{
    if (u == v)
        return 0;
    for (int k = 0; k < deg[u]; k++)
        if (adj[u][k] == v)
            return 0;
    if (deg[u] >= maxdeg || deg[v] >= maxdeg)
        return -1;
    adj[u][deg[u]++] = v;
    adj[v][deg[v]++] = u;
    return add(s, u, v);
}

typedef struct {
    uint32_t **adj;
    uint32_t *store;
    int *deg;
} adjset;

static int adjset_init(adjset *a, int n, int maxdeg)
{
    a->adj = malloc((size_t)n * sizeof *a->adj);
    a->store = malloc((size_t)n * (size_t)maxdeg * sizeof *a->store);
    a->deg = calloc((size_t)n, sizeof *a->deg);
    if (!a->adj || !a->store || !a->deg)
        return -1;
    for (int i = 0; i < n; i++)
        a->adj[i] = a->store + (size_t)i * (size_t)maxdeg;
    return 0;
}

static void adjset_free(adjset *a)
{
    free(a->adj);
    free(a->store);
    free(a->deg);
}

static bool connected_spec(const mm_topo_spec *s)
{
    mm_topo_spec c = *s;
    c.weights = MM_W_UNIFORM;
    mm_topology *t = mm__topo_build_graph(&c, "gen", NULL, 0);
    mm_topo_free(t);
    return t != NULL;
}

/* Random d-regular graph: pair up d "stubs" per peer at random, refusing
 * self-loops and repeated edges, and start over when stuck or when the
 * result is not connected. */
static int gen_regular(mm_topo_spec *s, int n, int d, uint64_t seed, char *err, size_t errlen)
{
    if (d < 2 || d >= n || ((long)n * d) % 2)
        return mm__topo_err(err, errlen, "gen regular", 0,
                           "need 2 <= d < n and n*d even (got n=%d, d=%d)", n, d);
    size_t m = (size_t)n * (size_t)d;
    uint32_t *stubs = malloc(m * sizeof *stubs);
    adjset a = {0};
    int rc = -1;
    if (!stubs || adjset_init(&a, n, d) < 0) {
        mm__topo_err(err, errlen, "gen regular", 0, "out of memory");
        goto out;
    }
    mm_rng rng;
    mm_rng_seed(&rng, seed);
    for (int attempt = 0; attempt < 1000; attempt++) {
        s->n_edges = 0;
        memset(a.deg, 0, (size_t)n * sizeof *a.deg);
        for (size_t i = 0; i < m; i++)
            stubs[i] = (uint32_t)(i / (size_t)d);
        size_t left = m;
        bool stuck = false;
        while (left && !stuck) {
            stuck = true;
            for (int tries = 0; tries < 100; tries++) {
                size_t i = (size_t)mm_rng_below(&rng, left), j = (size_t)mm_rng_below(&rng, left);
                uint32_t u = stubs[i], v = stubs[j];
                if (i == j || u == v)
                    continue;
                bool dup = false;
                for (int k = 0; k < a.deg[u]; k++)
                    dup |= a.adj[u][k] == v;
                if (dup)
                    continue;
                if (add_once(s, u, v, a.adj, a.deg, d) < 0)
                    goto oom;
                /* remove stubs i and j (larger index first) */
                size_t hi = i > j ? i : j, lo = i > j ? j : i;
                stubs[hi] = stubs[--left];
                stubs[lo] = stubs[--left];
                stuck = false;
                break;
            }
        }
        if (!stuck && connected_spec(s)) {
            rc = 0;
            goto out;
        }
    }
    mm__topo_err(err, errlen, "gen regular", 0, "no connected %d-regular graph on %d peers found "
                "in 1000 attempts; try another seed or d", d, n);
    goto out;
oom:
    mm__topo_err(err, errlen, "gen regular", 0, "out of memory");
out:
    free(stubs);
    adjset_free(&a);
    return rc;
}

static int gen_er(mm_topo_spec *s, int n, double p, uint64_t seed, char *err, size_t errlen)
{
    if (p <= 0)
        p = fmin(1.0, 2.0 * log((double)n) / n);
    if (!(p > 0 && p <= 1))
        return mm__topo_err(err, errlen, "gen er", 0, "need 0 < p <= 1 (got %g)", p);
    mm_rng rng;
    mm_rng_seed(&rng, seed);
    for (int attempt = 0; attempt < 1000; attempt++) {
        s->n_edges = 0;
        for (int u = 0; u < n; u++)
            for (int v = u + 1; v < n; v++)
                if (mm_rng_uniform(&rng) < p && add(s, (uint32_t)u, (uint32_t)v) < 0)
                    return mm__topo_err(err, errlen, "gen er", 0, "out of memory");
        if (connected_spec(s))
            return 0;
    }
    return mm__topo_err(err, errlen, "gen er", 0, "no connected G(%d, %g) in 1000 draws; raise -p", n, p);
}

/* W[me][from], read from me's view of round 0. */
static double in_weight(const mm_topology *t, uint32_t me, uint32_t from, mm_neighbour *in,
                        mm_neighbour *out)
{
    mm_round_view v = {.in = in, .out = out};
    mm_topo_round(t, me, 0, &v);
    for (int k = 0; k < v.n_in; k++)
        if (in[k].peer == from)
            return in[k].weight;
    return NAN;
}

/* Turns a rule-weighted spec into one with the numbers written out. */
static int write_weights(mm_topo_spec *s, char *err, size_t errlen)
{
    mm_topology *t = mm_topo_build(s, "gen", err, errlen);
    if (!t)
        return -1;
    int md = mm_topo_max_degree(t);
    mm_neighbour *in = malloc((size_t)(md + 1) * sizeof *in), *out = malloc((size_t)(md + 1) * sizeof *out);
    s->self_w = malloc((size_t)s->n * sizeof *s->self_w);
    s->self_line = calloc((size_t)s->n, sizeof *s->self_line);
    int rc = -1;
    if (!in || !out || !s->self_w || !s->self_line) {
        mm__topo_err(err, errlen, "gen", 0, "out of memory");
        goto out;
    }
    for (int i = 0; i < s->n; i++) {
        mm_round_view v = {.in = in, .out = out};
        mm_topo_round(t, (uint32_t)i, 0, &v);
        s->self_w[i] = v.self_weight;
    }
    /* Edge u-v / u->v carries W[v][u]; undirected, it must equal W[u][v]. */
    for (size_t e = 0; e < s->n_edges; e++) {
        double wvu = in_weight(t, s->edges[e].v, s->edges[e].u, in, out);
        if (!s->directed && in_weight(t, s->edges[e].u, s->edges[e].v, in, out) != wvu)
            goto asym;
        s->edges[e].w = wvu;
    }
    s->weights = MM_W_EXPLICIT;
    rc = 0;
    goto out;
asym:
    mm__topo_err(err, errlen, "gen", 0, "uniform weights on this irregular undirected graph are "
                "not symmetric, so one number per edge cannot hold them; use metropolis");
out:
    free(in);
    free(out);
    mm_topo_free(t);
    return rc;
}

/* Torus: rows x cols, each peer linked to its right and lower neighbour
 * (wrapping); a 2-wide side would add an edge twice, hence add_once. */
static int gen_torus(mm_topo_spec *s, const mm_gen_opts *o, char *extra, size_t extralen,
                     char *err, size_t errlen)
{
    int n = s->n, rows = o->rows;
    if (rows <= 0)
        for (rows = (int)sqrt((double)n); rows > 1 && n % rows; rows--)
            ;
    if (rows < 2 || n % rows || n / rows < 2)
        return mm__topo_err(err, errlen, "gen torus", 0, "n = %d is not rows x cols with both >= 2%s",
                            n, o->rows ? " for the --rows given" : " (prime n?)");
    int cols = n / rows, rc = 0;
    snprintf(extra, extralen, ", %d x %d", rows, cols);
    adjset a;
    if (adjset_init(&a, n, 4) < 0) {
        adjset_free(&a);
        return mm__topo_err(err, errlen, "gen torus", 0, "out of memory");
    }
    for (int r = 0; r < rows && !rc; r++)
        for (int c = 0; c < cols && !rc; c++) {
            uint32_t i = (uint32_t)(r * cols + c);
            rc = add_once(s, i, (uint32_t)(r * cols + (c + 1) % cols), a.adj, a.deg, 4);
            if (!rc)
                rc = add_once(s, i, (uint32_t)(((r + 1) % rows) * cols + c), a.adj, a.deg, 4);
        }
    adjset_free(&a);
    return rc < 0 ? mm__topo_err(err, errlen, "gen", 0, "out of memory") : 0;
}

/* Exponential graph: i -> i + 2^k (mod n); undirected, an edge met from
 * both ends (n a power of two) is added once. */
static int gen_exp(mm_topo_spec *s, bool directed, char *err, size_t errlen)
{
    uint32_t un = (uint32_t)s->n;
    int rc = 0;
    if (directed) {
        for (uint32_t i = 0; i < un && !rc; i++)
            for (uint64_t h = 1; h < un && !rc; h <<= 1)
                rc = add(s, i, (uint32_t)((i + h) % un));
    } else {
        int maxdeg = 2 * 21;
        adjset a;
        if (adjset_init(&a, s->n, maxdeg) < 0) {
            adjset_free(&a);
            return mm__topo_err(err, errlen, "gen exp", 0, "out of memory");
        }
        for (uint32_t i = 0; i < un && !rc; i++)
            for (uint64_t h = 1; h < un && !rc; h <<= 1)
                rc = add_once(s, i, (uint32_t)((i + h) % un), a.adj, a.deg, maxdeg);
        adjset_free(&a);
    }
    return rc < 0 ? mm__topo_err(err, errlen, "gen", 0, "out of memory") : 0;
}

/* The kinds written out as an edge list. 0 done, 1 not such a kind, -1
 * with the reason in err. extra gets the kind's parameters for the
 * comment (", 4 x 4", ", d = 3, seed 1"). */
static int gen_static(const char *kind, const mm_gen_opts *o, mm_topo_spec *s, char *extra,
                      size_t extralen, char *err, size_t errlen)
{
    int n = s->n, rc = 0;
    uint32_t un = (uint32_t)n;
    if (!strcmp(kind, "ring")) {
        if (n < 3)
            return mm__topo_err(err, errlen, "gen ring", 0, "a ring needs n >= 3 (n = 2 is a chain)");
        for (uint32_t i = 0; i < un && !rc; i++)
            rc = add(s, i, (i + 1) % un);
    } else if (!strcmp(kind, "chain")) {
        for (uint32_t i = 0; i + 1 < un && !rc; i++)
            rc = add(s, i, i + 1);
    } else if (!strcmp(kind, "star")) {
        for (uint32_t i = 1; i < un && !rc; i++)
            rc = add(s, 0, i);
    } else if (!strcmp(kind, "complete")) {
        for (uint32_t i = 0; i < un && !rc; i++)
            for (uint32_t j = i + 1; j < un && !rc; j++)
                rc = add(s, i, j);
    } else if (!strcmp(kind, "torus")) {
        return gen_torus(s, o, extra, extralen, err, errlen);
    } else if (!strcmp(kind, "exp")) {
        return gen_exp(s, o->directed, err, errlen);
    } else if (!strcmp(kind, "regular")) {
        int d = o->degree ? o->degree : 3 + (n * 3) % 2; /* d = 3 needs n even */
        if (!o->degree && d >= n)
            d = n - 1;
        snprintf(extra, extralen, ", d = %d, seed %" PRIu64, d, o->seed);
        return gen_regular(s, n, d, o->seed, err, errlen) < 0 ? -1 : 0;
    } else if (!strcmp(kind, "er")) {
        double p = o->p > 0 ? o->p : fmin(1.0, 2.0 * log((double)n) / n);
        snprintf(extra, extralen, ", p = %.4g, seed %" PRIu64, p, o->seed);
        return gen_er(s, n, p, o->seed, err, errlen) < 0 ? -1 : 0;
    } else {
        return 1;
    }
    return rc < 0 ? mm__topo_err(err, errlen, "gen", 0, "out of memory") : 0;
}

/* The time-varying kinds: only the schedule and its parameters. 0 done,
 * 1 not such a kind. */
static int gen_schedule(const char *kind, const mm_gen_opts *o, mm_topo_spec *s)
{
    int n = s->n;
    if (!strcmp(kind, "one-peer-exp")) {
        s->schedule = MM_SCHED_ONE_PEER_EXP;
    } else if (!strcmp(kind, "random-matching")) {
        s->schedule = MM_SCHED_RANDOM_MATCHING;
        s->seed = o->seed;
    } else if (!strcmp(kind, "local")) {
        s->schedule = MM_SCHED_LOCAL;
    } else if (!strcmp(kind, "alt-exp-ring")) {
        s->schedule = MM_SCHED_ALT_EXP_RING;
        s->group = o->group > 1 ? o->group : 0;
    } else if (!strcmp(kind, "base")) {
        s->schedule = MM_SCHED_BASE;
        s->degree = o->degree > 0 ? o->degree : 1;
    } else if (!strcmp(kind, "epidemic")) {
        s->schedule = MM_SCHED_EPIDEMIC;
        s->fanout = o->fanout;
        if (!o->fanout) /* the exponential graph's fan-out */
            s->fanout = mm_ceil_log2(n) < n - 1 ? mm_ceil_log2(n) : n - 1;
        s->seed = o->seed;
    } else {
        return 1;
    }
    return 0;
}

/* Options given for a kind they do not apply to, and a schedule's
 * parameters, checked now so that the message names the option. */
static int check_gen_options(const mm_gen_opts *o, const mm_topo_spec *s, char *err, size_t errlen)
{
    if ((o->group && s->schedule != MM_SCHED_ALT_EXP_RING) ||
        (o->fanout && s->schedule != MM_SCHED_EPIDEMIC))
        return mm__topo_err(err, errlen, "gen", 0, "%s applies to kind %s only",
                            o->group ? "--group" : "-s", o->group ? "alt-exp-ring" : "epidemic");
    if (s->schedule != MM_SCHED_NONE && (o->weights_set || o->write_weights))
        return mm__topo_err(err, errlen, "gen", 0, "%s: a schedule fixes its weights",
                            o->write_weights ? "--write-weights" : "--weights");
    if (s->schedule != MM_SCHED_NONE && s->schedule != MM_SCHED_ONE_PEER_EXP &&
        s->schedule != MM_SCHED_RANDOM_MATCHING) {
        char why[256];
        mm_topology *t = mm_topo_build(s, "gen", why, sizeof why);
        if (!t)
            return mm__topo_err(err, errlen, "gen", 0, "%s", why + strlen("gen: "));
        mm_topo_free(t);
    }
    return 0;
}

/* The comment at the top of the written file: what the graph is, in words. */
static void describe(const char *kind, mm_topo_spec *s, const char *extra)
{
    int n = s->n;
    char *c = s->comment;
    size_t len = sizeof s->comment;
    switch (s->schedule) {
    case MM_SCHED_LOCAL:
        snprintf(c, len,
                 "%s, %d peers: no communication at all, every peer trains alone (W = I);\n"
                 "the baseline against which gossip is measured", kind, n);
        break;
    case MM_SCHED_ALT_EXP_RING: {
        int g = s->group > 1 ? s->group : 1;
        snprintf(c, len,
                 "%s, %d peers in %d hosts of %d: Decent-DP's alternating exponential ring;\n"
                 "rounds 2i, 2i+1 average inside each host and across hosts h, h XOR 2^i,\n"
                 "half of the host pairs in each order; exact average after %d rounds",
                 kind, n, n / g, g, 2 * mm_ceil_log2(n / g));
        break;
    }
    case MM_SCHED_BASE:
        snprintf(c, len,
                 "%s, %d peers: Base-(k+1) graph with k = %d (Takezawa et al. 2023):\n"
                 "at most k neighbours per round, exact average after every period", kind, n, s->degree);
        break;
    case MM_SCHED_EPIDEMIC:
        snprintf(c, len,
                 "%s, %d peers: Epidemic Learning (EL-Local): every round each peer sends to s = %d\n"
                 "others drawn from (seed, round); receivers average their own vector and what came",
                 kind, n, s->fanout);
        break;
    case MM_SCHED_ONE_PEER_EXP:
        snprintf(c, len,
                 "%s, %d peers: round t, peer i sends to i+2^k and receives from i-2^k (mod n),\n"
                 "k = t mod ceil(log2 n); W = 1/2 self + 1/2 received: doubly stochastic, not symmetric",
                 kind, n);
        break;
    case MM_SCHED_RANDOM_MATCHING:
        snprintf(c, len,
                 "%s, %d peers: a random perfect matching every round, drawn from (seed, round);\n"
                 "partners average 1/2-1/2%s", kind, n, n % 2 ? "; n is odd, so one peer sits out each round" : "");
        break;
    default: {
        const char *wname = s->weights == MM_W_METROPOLIS ? "Metropolis-Hastings weights"
                            : s->directed ? "uniform column-stochastic weights (push-sum)"
                                          : "uniform weights 1/(degree+1)";
        snprintf(c, len, "%s, %d peers%s, %s graph, %s", kind, n, extra,
                 s->directed ? "directed" : "undirected", wname);
    }
    }
}

/* `topo gen KIND -n N --family`: the family file of N starting members
 * (no graph is drawn here: mm_topo_build instantiates it). */
static int gen_family(const char *kind, const mm_gen_opts *o, mm_topo_spec *s, char *err,
                      size_t errlen)
{
    enum mm_family f = mm__family_lookup(kind);
    if (f == MM_FAMILY_NONE)
        return mm__topo_err(err, errlen, "gen", 0, "--family: kind %s has no family (families: "
                            "ring, exp, one-peer-exp, base, complete, regular, torus)", kind);
    const char *stray = o->directed ? "--directed" : o->rows ? "--rows" : o->fanout ? "-s"
                        : o->group ? "--group" : o->p > 0 ? "-p"
                        : o->write_weights ? "--write-weights" : NULL;
    if (stray)
        return mm__topo_err(err, errlen, "gen", 0, "--family: %s does not apply (a family makes "
                            "its graph for every number of members)", stray);
    if (o->weights_set && !mm__family_weighted(f))
        return mm__topo_err(err, errlen, "gen", 0, "--weights: family %s fixes its weights", kind);
    if (o->n < 1 || o->n > MM_TOPO_MAX_PEERS)
        return mm__topo_err(err, errlen, "gen", 0, "-n N: expected 1..%d starting members, got %d",
                            MM_TOPO_MAX_PEERS, o->n);
    s->n = o->n;
    s->family = f;
    s->weights = o->weights_set ? o->weights : MM_W_METROPOLIS;
    if (f == MM_FAMILY_BASE)
        s->degree = o->degree > 0 ? o->degree : 1;
    if (f == MM_FAMILY_REGULAR) {
        s->degree = o->degree > 0 ? o->degree : 3;
        s->seed = o->seed;
        if (s->degree < 3)
            return mm__topo_err(err, errlen, "gen", 0, "-d %d: family regular needs D >= 3 (for "
                                "degree 2 take family ring)", s->degree);
    }
    snprintf(s->kind, sizeof s->kind, "%s", kind);
    snprintf(s->comment, sizeof s->comment,
             "%s family, %d starting members (ids 0..%d): the graph is re-formed over the\n"
             "members at every change, ids in ascending order as ranks 0..k-1\n"
             "(topologies/README.md, \"Families\"; `murmur topo info` shows each k)",
             kind, s->n, s->n - 1);
    return 0;
}

int mm_topo_generate(const char *kind, const mm_gen_opts *o, mm_topo_spec *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (o->family)
        return gen_family(kind, o, s, err, errlen);
    int n = o->n;
    if (n < 2 || n > MM_TOPO_MAX_PEERS)
        return mm__topo_err(err, errlen, "gen", 0, "-n N: expected 2..%d peers, got %d", MM_TOPO_MAX_PEERS, n);
    s->n = n;
    s->directed = o->directed;
    s->weights = o->weights_set ? o->weights : o->directed ? MM_W_UNIFORM : MM_W_METROPOLIS;
    snprintf(s->kind, sizeof s->kind, "%s", kind);
    if (o->directed && strcmp(kind, "exp"))
        return mm__topo_err(err, errlen, "gen", 0, "--directed applies to kind exp only");
    char extra[96] = "";
    int rc = gen_static(kind, o, s, extra, sizeof extra, err, errlen);
    if (rc == 1 && gen_schedule(kind, o, s) == 1) {
        char list[256] = "";
        for (int k = 0; mm_topo_kinds[k]; k++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", mm_topo_kinds[k]);
        return mm__topo_err(err, errlen, "gen", 0, "unknown kind '%s' (expected one of: %s)", kind, list);
    }
    if (rc < 0 || check_gen_options(o, s, err, errlen) < 0)
        goto fail;
    describe(kind, s, extra);
    if (s->schedule == MM_SCHED_NONE && o->write_weights && write_weights(s, err, errlen) < 0)
        goto fail;
    return 0;
fail:
    mm_topo_spec_free(s);
    return -1;
}
