/* The topology digest: SHA-256 of a canonical form of what a topology file
 * says (peers, graph, weights, edges, schedule and its parameters), not of
 * its bytes, so comments, blank lines, `kind`, the order of the edges and
 * `V U` for `U V` do not change it. Peers compare it in the HELLO: two
 * peers that loaded different topologies are refused (docs/protocol.md 3.1,
 * "The topology digest", which defines these bytes for other
 * implementations). */
#include "gossip/topo_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"

#define DIGEST_TAG "murmur-topology-v1"

typedef struct {
    uint32_t u, v;
    double w;
} canon_edge;

static int cmp_canon(const void *pa, const void *pb)
{
    const canon_edge *a = pa, *b = pb;
    if (a->u != b->u)
        return a->u < b->u ? -1 : 1;
    return a->v < b->v ? -1 : a->v > b->v;
}

static void put_u8(mm_sha256_ctx *c, uint8_t v) { mm_sha256_update(c, &v, 1); }

static void put_u32(mm_sha256_ctx *c, uint32_t v)
{
    uint8_t b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    mm_sha256_update(c, b, 4);
}

static void put_u64(mm_sha256_ctx *c, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    mm_sha256_update(c, b, 8);
}

static void put_f64(mm_sha256_ctx *c, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    put_u64(c, v);
}

/* The schedule's number in the digest (docs/protocol.md): fixed here, not
 * taken from the enum, so that reordering the enum cannot change it. */
static uint8_t schedule_code(enum mm_schedule s)
{
    switch (s) {
    case MM_SCHED_NONE: return 0;
    case MM_SCHED_ONE_PEER_EXP: return 1;
    case MM_SCHED_RANDOM_MATCHING: return 2;
    case MM_SCHED_LOCAL: return 3;
    case MM_SCHED_ALT_EXP_RING: return 4;
    case MM_SCHED_BASE: return 5;
    case MM_SCHED_EPIDEMIC: return 6;
    }
    return 255;
}

static uint8_t weights_code(enum mm_weights w)
{
    switch (w) {
    case MM_W_METROPOLIS: return 1;
    case MM_W_UNIFORM: return 2;
    case MM_W_EXPLICIT: return 3;
    }
    return 255;
}

/* The edges in canonical order: (u, v) ascending, an undirected edge with
 * u < v, the weight only when the file gives it. NULL when out of memory
 * (an empty list is a valid non-NULL pointer). */
static canon_edge *canonical_edges(const mm_topo_spec *s)
{
    canon_edge *e = malloc((s->n_edges ? s->n_edges : 1) * sizeof *e);
    if (!e)
        return NULL;
    bool explicit_w = s->weights == MM_W_EXPLICIT;
    for (size_t i = 0; i < s->n_edges; i++) {
        uint32_t u = s->edges[i].u, v = s->edges[i].v;
        if (!s->directed && u > v) {
            uint32_t x = u;
            u = v;
            v = x;
        }
        e[i] = (canon_edge){u, v, explicit_w ? s->edges[i].w : 0.0};
    }
    qsort(e, s->n_edges, sizeof *e, cmp_canon);
    return e;
}

/* The family's number in the digest (docs/protocol.md 3.1): the byte
 * after the schedule's, 0 in every file of fixed peers, so their digests
 * are what they were before families existed. */
static uint8_t family_code(enum mm_family f)
{
    switch (f) {
    case MM_FAMILY_NONE: return 0;
    case MM_FAMILY_RING: return 1;
    case MM_FAMILY_EXP: return 2;
    case MM_FAMILY_ONE_PEER_EXP: return 3;
    case MM_FAMILY_BASE: return 4;
    case MM_FAMILY_COMPLETE: return 5;
    case MM_FAMILY_REGULAR: return 6;
    case MM_FAMILY_TORUS: return 7;
    }
    return 255;
}

/* A family file: the same layout with the family's byte and parameters,
 * no edges, no self weights. */
void mm__family_digest(const struct mm__family *f, uint8_t out[32])
{
    mm_sha256_ctx c;
    mm_sha256_init(&c);
    mm_sha256_update(&c, DIGEST_TAG, strlen(DIGEST_TAG));
    put_u32(&c, (uint32_t)f->peers);
    put_u8(&c, 0); /* directed: every family is undirected */
    put_u8(&c, mm__family_weighted(f->kind) ? weights_code(f->weights) : 0);
    put_u8(&c, schedule_code(MM_SCHED_NONE));
    put_u8(&c, family_code(f->kind));
    put_u64(&c, f->kind == MM_FAMILY_REGULAR ? f->seed : 0);
    bool has_degree = f->kind == MM_FAMILY_BASE || f->kind == MM_FAMILY_REGULAR;
    put_u32(&c, has_degree ? (uint32_t)f->degree : 0);
    put_u32(&c, 0); /* fanout */
    put_u32(&c, 0); /* group */
    put_u64(&c, 0); /* edges */
    put_u32(&c, 0); /* self weights */
    mm_sha256_final(&c, out);
}

int mm__topo_digest(const mm_topo_spec *s, mm_topology *t)
{
    bool is_static = t->schedule == MM_SCHED_NONE;
    canon_edge *e = NULL;
    if (is_static && !(e = canonical_edges(s)))
        return -1;
    mm_sha256_ctx c;
    mm_sha256_init(&c);
    mm_sha256_update(&c, DIGEST_TAG, strlen(DIGEST_TAG));
    put_u32(&c, (uint32_t)t->n);
    put_u8(&c, is_static && t->directed);
    put_u8(&c, is_static ? weights_code(t->weights) : 0);
    put_u8(&c, schedule_code(t->schedule));
    put_u8(&c, family_code(MM_FAMILY_NONE));
    put_u64(&c, mm__topo_random(t) ? t->seed : 0);
    put_u32(&c, t->schedule == MM_SCHED_BASE ? (uint32_t)t->degree : 0);
    put_u32(&c, t->schedule == MM_SCHED_EPIDEMIC ? (uint32_t)t->fanout : 0);
    put_u32(&c, t->schedule == MM_SCHED_ALT_EXP_RING ? (uint32_t)t->group : 0);
    size_t n_edges = is_static ? s->n_edges : 0;
    put_u64(&c, n_edges);
    for (size_t i = 0; i < n_edges; i++) {
        put_u32(&c, e[i].u);
        put_u32(&c, e[i].v);
        put_f64(&c, e[i].w);
    }
    free(e);
    uint32_t n_self = 0;
    bool selfs = is_static && s->weights == MM_W_EXPLICIT && s->self_w;
    for (int i = 0; selfs && i < s->n; i++)
        n_self += s->self_w[i] == s->self_w[i]; /* given: not NaN */
    put_u32(&c, n_self);
    for (int i = 0; selfs && i < s->n; i++)
        if (s->self_w[i] == s->self_w[i]) {
            put_u32(&c, (uint32_t)i);
            put_f64(&c, s->self_w[i]);
        }
    mm_sha256_final(&c, t->digest);
    return 0;
}

const uint8_t *mm_topo_digest(const mm_topology *t) { return t->digest; }
