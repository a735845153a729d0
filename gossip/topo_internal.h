/* Shared by gossip/topology.c and gossip/topo_*.c only; not an interface. */
#ifndef MURMUR_TOPO_INTERNAL_H
#define MURMUR_TOPO_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include "gossip/topology.h"
#include "base/rng.h"

#define MM_TOPO_MAX_PEERS (1 << 20)

/* What a family file says: enough to instantiate it over any k. */
struct mm__family {
    enum mm_family kind;
    int peers;               /* the file's `peers N`: the starting members */
    int degree;              /* base: K; regular: D */
    uint64_t seed;           /* regular: S */
    enum mm_weights weights; /* ring, exp, complete, regular, torus */
};

struct mm_topology {
    int n;
    bool directed;
    enum mm_weights weights;
    enum mm_schedule schedule;
    uint64_t seed;
    char kind[32];
    int period, max_degree, tau;
    int degree, fanout, group; /* base k, epidemic s, alt-exp-ring peers per host */
    int connect_rounds; /* random schedules: rounds until their union is connected */
    /* static graphs: CSR lists sorted by peer id */
    uint32_t *in_off, *out_off;
    mm_neighbour *in_nb, *out_nb;
    double *self_w;
    /* random matching: round r's partners, computed once per round for all
     * peers (O(n)) and kept, so tools that loop over peers stay O(n) too */
    struct match_cache *mc;
    /* base: the group structure (gossip/topo_base.c) */
    struct base_plan *base;
    /* epidemic: round r's arcs for all peers, drawn once per round (O(n s)) */
    struct epi_cache *ec;
    uint8_t digest[32]; /* of the canonical form (gossip/topo_digest.c) */
    struct mm__family fam; /* kind MM_FAMILY_NONE unless from a family file */
};

struct match_cache {
    pthread_mutex_t lock;
    bool valid;
    uint64_t round;
    uint32_t *partner; /* UINT32_MAX: sits out */
    uint32_t *perm;
};

/* The named schedules of gossip/topo_sched.c and gossip/topo_base.c. Each
 * *_init checks the parameters (message in err, -1) and sets period and
 * max_degree; each *_round fills a view like mm_topo_round. */
int mm__alt_init(mm_topology *t, const char *name, char *err, size_t errlen);
int mm__alt_round(const mm_topology *t, uint32_t me, uint64_t round, mm_round_view *v);
int mm__base_init(mm_topology *t, const char *name, char *err, size_t errlen);
int mm__base_round(const mm_topology *t, uint32_t me, uint64_t round, mm_round_view *v);
void mm__base_free(struct base_plan *b);
int mm__epi_init(mm_topology *t, const char *name, char *err, size_t errlen);
int mm__epi_round(const mm_topology *t, uint32_t me, uint64_t round, mm_round_view *v);
void mm__epi_free(struct epi_cache *c);
/* Round r's generator for the random schedules (random matching, epidemic):
 * xoshiro256** seeded with splitmix64(seed) XOR r * 0xD1B54A32D192ED03. */
void mm__topo_round_rng(uint64_t seed, uint64_t round, mm_rng *rng);
/* True for the schedules drawn at random every round (no period). */
bool mm__topo_random(const mm_topology *t);
int mm_ceil_log2(int n);
/* Sets t->digest from the spec t was built from (gossip/topo_digest.c).
 * 0, or -1 when out of memory. */
int mm__topo_digest(const mm_topo_spec *s, mm_topology *t);

/* The topology a valid spec describes, without its digest (gossip/
 * topology.c): mm_topo_build is this and mm__topo_digest. NULL with the
 * reason in err. */
mm_topology *mm__topo_build_graph(const mm_topo_spec *s, const char *name, char *err,
                                  size_t errlen);
/* A family spec built: instantiated at its `peers N`, carrying the family
 * and its digest (gossip/topo_family.c). */
mm_topology *mm__family_build(const mm_topo_spec *s, const char *name, char *err, size_t errlen);
/* The digest of a family file (gossip/topo_digest.c). */
void mm__family_digest(const struct mm__family *f, uint8_t out[32]);
/* The family a name in a file names (MM_FAMILY_NONE: none). */
enum mm_family mm__family_lookup(const char *name);
/* Whether a family's weights come from a `weights` statement (the static
 * families) or from its schedule (one-peer-exp, base). */
bool mm__family_weighted(enum mm_family f);

/* "name:line: " (or "name: " when line is 0) then the message; returns -1. */
int mm__topo_err(char *err, size_t errlen, const char *name, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Directed arc lists (CSR) of the union of rounds [0, rounds). */
typedef struct {
    int n;
    uint32_t *off;  /* n+1 */
    uint32_t *adj;  /* out-neighbours, sorted, distinct */
    size_t arcs;
} mm__arcs;

int mm__arcs_union(const mm_topology *t, uint64_t rounds, mm__arcs *a);
void mm__arcs_free(mm__arcs *a);
/* Lowest peer that 0 cannot reach (*from0 = true), else lowest that cannot
 * reach 0 (*from0 = false); -1 when strongly connected. */
int mm__arcs_unreached(const mm__arcs *a, bool *from0);
/* Longest shortest path; -1 when not strongly connected or out of memory.
 * A breadth-first search from every peer: one at a time, O(n (n + arcs)),
 * or 64 at a time on bits, O(n/64 * diameter * arcs), whichever the
 * eccentricity of peer 0 says is cheaper. Progress goes to p (may be NULL). */
int mm__arcs_diameter(const mm__arcs *a, const mm_topo_progress *p);
/* Rounds whose union shows the graph: the period, or for random matching
 * the first max(ceil(log2 n), connect_rounds) rounds. */
uint64_t mm__topo_window(const mm_topology *t);

/* rho by dense LAPACK (gossip/topo_spectral.c): of round `round` alone when
 * one_round, else of the whole schedule (static or periodic; not random
 * matching). 0, or -1 when out of memory or LAPACK failed. */
int mm__rho_dense(const mm_topology *t, bool one_round, uint64_t round, mm_rho *out);

#endif
