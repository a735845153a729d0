/* Families (topologies/README.md, "Families"): a file that names a kind of
 * graph (`family ring`) instead of its edges describes one topology for
 * every number of members k. Each k is made by the generator of
 * `murmur topo gen` for that kind and k (so a family at k is exactly the
 * static file `topo gen KIND -n k` writes), with a documented fallback
 * where the kind has no graph on k peers: a torus of a prime count is the
 * 1 x k torus, the ring; a D-regular graph needs k > D + 1 and k D even;
 * one peer is alone. The instantiation is a pure function of (family, k):
 * every peer that holds the same members computes the same graph. */
#include "gossip/topo_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

/* In enum mm_family order. */
static const char *const family_names[] = {"none",     "ring",    "exp",  "one-peer-exp",
                                           "base",     "complete", "regular", "torus"};
#define N_FAMILIES ((int)(sizeof family_names / sizeof family_names[0]))

const char *mm_topo_family_name(enum mm_family f)
{
    return (int)f >= 0 && (int)f < N_FAMILIES ? family_names[f] : "none";
}

enum mm_family mm__family_lookup(const char *name)
{
    for (int i = 1; i < N_FAMILIES; i++)
        if (!strcmp(name, family_names[i]))
            return (enum mm_family)i;
    return MM_FAMILY_NONE;
}

bool mm__family_weighted(enum mm_family f)
{
    return f != MM_FAMILY_NONE && f != MM_FAMILY_ONE_PEER_EXP && f != MM_FAMILY_BASE;
}

bool mm_topo_family(const mm_topology *t) { return t->fam.kind != MM_FAMILY_NONE; }
enum mm_family mm_topo_family_kind(const mm_topology *t) { return t->fam.kind; }
int mm_topo_family_peers(const mm_topology *t) { return t->fam.peers; }

/* The seed of family regular's graph on k members: one splitmix64 step
 * from S XOR k * 0xD1B54A32D192ED03 (topologies/README.md), so each count
 * has its own graph and a count that comes back gets the same one. */
static uint64_t regular_seed(uint64_t s, int k)
{
    uint64_t x = s ^ ((uint64_t)k * 0xD1B54A32D192ED03ULL);
    return mm_splitmix64(&x);
}

/* The torus's rows for k peers, as `topo gen torus` picks them: the
 * largest divisor of k not above sqrt(k); 1 when k is prime. */
static int torus_rows(int k)
{
    int rows = (int)sqrt((double)k);
    while (rows > 1 && k % rows)
        rows--;
    return rows;
}

/* How the family makes k members' graph: the generator kind and its
 * options (kind NULL: one peer alone; HARARY: the circulant below), and
 * the degree a regular family uses at k. */
#define HARARY "harary"

typedef struct {
    const char *kind;
    mm_gen_opts o;
} family_plan;

static int regular_degree(const struct mm__family *f, int k)
{
    return (long)k * f->degree % 2 ? f->degree + 1 : f->degree;
}

static void plan_for(const struct mm__family *f, int k, family_plan *p)
{
    p->o = (mm_gen_opts){.n = k, .weights_set = mm__family_weighted(f->kind),
                         .weights = f->weights};
    p->kind = NULL;
    if (k == 1)
        return;
    switch (f->kind) {
    case MM_FAMILY_RING:
        p->kind = k == 2 ? "chain" : "ring";
        return;
    case MM_FAMILY_EXP:
        p->kind = "exp";
        return;
    case MM_FAMILY_ONE_PEER_EXP:
        p->kind = "one-peer-exp";
        return;
    case MM_FAMILY_BASE:
        p->kind = "base";
        p->o.degree = f->degree < k - 1 ? f->degree : k - 1;
        return;
    case MM_FAMILY_COMPLETE:
        p->kind = "complete";
        return;
    case MM_FAMILY_REGULAR: {
        int d = regular_degree(f, k);
        p->o.degree = d;
        if (d >= k - 1) /* only the complete graph has degree k - 1 */
            p->kind = "complete";
        else if (2 * d > k) /* dense: random pairings rarely finish */
            p->kind = HARARY;
        else {
            p->kind = "regular";
            p->o.seed = regular_seed(f->seed, k);
        }
        return;
    }
    case MM_FAMILY_TORUS:
        p->kind = torus_rows(k) >= 2 ? "torus" : k == 2 ? "chain" : "ring";
        return;
    case MM_FAMILY_NONE:
        break;
    }
}

/* The Harary graph H(d, k): i linked to i +- 1 .. i +- d/2 and, d odd
 * (k even then), to i + k/2. d-regular and connected (it holds the
 * ring) for any d < k with k d even: the dense regular family's graph,
 * where pairing stubs at random gets stuck (60-regular on 62 peers:
 * 1000 attempts fail). */
static int harary_edges(mm_topo_spec *s, int k, int d)
{
    uint32_t uk = (uint32_t)k;
    for (uint32_t i = 0; i < uk; i++)
        for (uint32_t j = 1; j <= (uint32_t)d / 2; j++)
            if (mm_topo_spec_add(s, i, (i + j) % uk, NAN, 0) < 0)
                return -1;
    for (uint32_t i = 0; d % 2 && i < uk / 2; i++)
        if (mm_topo_spec_add(s, i, i + uk / 2, NAN, 0) < 0)
            return -1;
    return 0;
}

/* Edges a plan's graph stores (the schedules store none). */
static double plan_edges(const family_plan *p, int k)
{
    if (!p->kind || !strcmp(p->kind, "one-peer-exp") || !strcmp(p->kind, "base"))
        return 0;
    if (!strcmp(p->kind, "complete"))
        return (double)k * (k - 1) / 2;
    if (!strcmp(p->kind, "exp"))
        return (double)k * mm_ceil_log2(k);
    if (!strcmp(p->kind, "regular") || !strcmp(p->kind, HARARY))
        return (double)k * p->o.degree / 2;
    return 2.0 * k; /* ring, chain, torus */
}

/* The spec of the family's graph on k members. 0, or -1 with err. */
static int family_spec(const struct mm__family *f, int k, mm_topo_spec *s, char *err,
                       size_t errlen)
{
    family_plan p;
    plan_for(f, k, &p);
    double edges = plan_edges(&p, k);
    if (edges > MM_TOPO_FAMILY_MAX_EDGES) {
        snprintf(err, errlen, "about %.0f edges, more than the %d a family may make", edges,
                 MM_TOPO_FAMILY_MAX_EDGES);
        return -1;
    }
    if (p.kind && strcmp(p.kind, HARARY))
        return mm_topo_generate(p.kind, &p.o, s, err, errlen);
    memset(s, 0, sizeof *s); /* alone: one peer, no edges, W = [1] */
    s->n = k;
    s->weights = f->weights;
    if (p.kind && harary_edges(s, k, p.o.degree) < 0) {
        mm_topo_spec_free(s);
        return mm__topo_err(err, errlen, "gen", 0, "out of memory");
    }
    return 0;
}

static mm_topology *instantiate(const struct mm__family *f, const char *label, int k,
                                const char *name, char *err, size_t errlen)
{
    if (k < 1 || k > MM_TOPO_MAX_PEERS) {
        mm__topo_err(err, errlen, name, 0, "family %s over %d members: expected 1..%d",
                     mm_topo_family_name(f->kind), k, MM_TOPO_MAX_PEERS);
        return NULL;
    }
    mm_topo_spec s;
    char why[256] = "";
    mm_topology *t = NULL;
    if (family_spec(f, k, &s, why, sizeof why) == 0) {
        t = mm__topo_build_graph(&s, name, why, sizeof why);
        mm_topo_spec_free(&s);
    }
    if (!t) {
        mm__topo_err(err, errlen, name, 0, "family %s over %d members: %s",
                     mm_topo_family_name(f->kind), k, why);
        return NULL;
    }
    t->fam = *f;
    snprintf(t->kind, sizeof t->kind, "%s", label);
    mm__family_digest(f, t->digest);
    return t;
}

mm_topology *mm__family_build(const mm_topo_spec *s, const char *name, char *err, size_t errlen)
{
    struct mm__family f = {.kind = s->family, .peers = s->n, .degree = s->degree,
                           .seed = s->seed, .weights = s->weights};
    return instantiate(&f, s->kind[0] ? s->kind : mm_topo_family_name(s->family), s->n, name,
                       err, errlen);
}

mm_topology *mm_topo_instantiate(const mm_topology *family, int k, char *err, size_t errlen)
{
    if (!mm_topo_family(family)) {
        mm__topo_err(err, errlen, "instantiate", 0,
                     "the topology is not a family (its file lists edges or a schedule)");
        return NULL;
    }
    return instantiate(&family->fam, family->kind, k, "instantiate", err, errlen);
}

void mm_topo_family_describe(const mm_topology *t, char *buf, size_t len)
{
    const struct mm__family *f = &t->fam;
    char params[64] = "";
    if (f->kind == MM_FAMILY_BASE)
        snprintf(params, sizeof params, " %d", f->degree);
    else if (f->kind == MM_FAMILY_REGULAR)
        snprintf(params, sizeof params, " %d seed %" PRIu64, f->degree, f->seed);
    snprintf(buf, len, "%s%s%s%s", mm_topo_family_name(f->kind), params,
             mm__family_weighted(f->kind) ? ", weights " : "",
             !mm__family_weighted(f->kind) ? ""
             : f->weights == MM_W_UNIFORM  ? "uniform"
                                           : "metropolis");
}

void mm_topo_family_shape(const mm_topology *family, int k, char *buf, size_t len)
{
    const struct mm__family *f = &family->fam;
    family_plan p;
    if (!mm_topo_family(family) || k < 1 || k > MM_TOPO_MAX_PEERS) {
        snprintf(buf, len, "none");
        return;
    }
    plan_for(f, k, &p);
    if (!p.kind)
        snprintf(buf, len, "alone");
    else if (!strcmp(p.kind, "chain"))
        snprintf(buf, len, "edge");
    else if (f->kind == MM_FAMILY_TORUS && !strcmp(p.kind, "torus"))
        snprintf(buf, len, "%d x %d torus", torus_rows(k), k / torus_rows(k));
    else if (f->kind == MM_FAMILY_TORUS)
        snprintf(buf, len, "ring (%d is prime: the 1 x %d torus)", k, k);
    else if (f->kind == MM_FAMILY_BASE)
        snprintf(buf, len, "base, degree %d%s", p.o.degree,
                 p.o.degree < f->degree ? " (members - 1)" : "");
    else if (f->kind == MM_FAMILY_ONE_PEER_EXP)
        snprintf(buf, len, "one-peer-exp, period %d", mm_ceil_log2(k));
    else if (f->kind == MM_FAMILY_REGULAR && !strcmp(p.kind, "complete"))
        snprintf(buf, len, "complete (members - 1 <= %d)", regular_degree(f, k));
    else if (!strcmp(p.kind, HARARY))
        snprintf(buf, len, "%d-regular circulant%s (2 x %d > members)", p.o.degree,
                 p.o.degree != f->degree ? " (members x D odd)" : "", p.o.degree);
    else if (f->kind == MM_FAMILY_REGULAR)
        snprintf(buf, len, "%d-regular%s, seed %" PRIu64, p.o.degree,
                 p.o.degree != f->degree ? " (members x D odd)" : "", p.o.seed);
    else
        snprintf(buf, len, "%s", p.kind);
}
