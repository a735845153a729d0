/* Topologies: which peers each peer averages with in round r, and with what
 * weights. Static graphs list their edges; time-varying ones name a schedule
 * (one-peer exponential, random matching, ...) from which every peer computes
 * the same graph for round r with no one coordinating.
 *
 * Mixing convention: x_i(t+1) = sum_j W[i][j] x_j(t). Row i of W holds the
 * weights peer i applies to what it receives ("in" weights); column j holds
 * what peer j's vector contributes to others ("out" weights, the ones push-sum
 * uses: each sender scales its (x, w) by W[i][j] for every receiver i).
 * Undirected graphs use doubly stochastic W; directed ones column-stochastic
 * W (push-sum). The file format is documented in topologies/README.md. */
#ifndef MURMUR_TOPOLOGY_H
#define MURMUR_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mm_topology mm_topology;

/* How W is made from the edges. */
enum mm_weights {
    MM_W_METROPOLIS, /* W_ij = 1/(1+max(d_i,d_j)); undirected only; doubly stochastic */
    MM_W_UNIFORM,    /* undirected: W_ij = 1/(d_i+1) (row-stochastic; doubly
                      * only on regular graphs); directed: each sender splits
                      * its mass evenly, W_ji = 1/(outdeg_i+1) (column-stochastic) */
    MM_W_EXPLICIT,   /* as written in the file */
};

/* Named graphs that list no edges: computed for round r from (n, the
 * schedule's parameters, seed, r) alone (topologies/README.md). */
enum mm_schedule {
    MM_SCHED_NONE,            /* static: the edges listed */
    MM_SCHED_ONE_PEER_EXP,    /* round t: i sends to i+2^k, receives from i-2^k,
                               * k = t mod ceil(log2 n); W = 1/2 self + 1/2 received */
    MM_SCHED_RANDOM_MATCHING, /* round t: a uniform random perfect matching drawn
                               * from (seed, t); partners average 1/2-1/2; with n
                               * odd one peer sits out */
    MM_SCHED_LOCAL,           /* no communication at all: W = I every round (the
                               * baseline of peers training alone) */
    MM_SCHED_ALT_EXP_RING,    /* Decent-DP's alternating exponential ring over hosts
                               * of `group` peers: intra-host average and an average
                               * with host h XOR 2^i, alternating; period 2 log2(hosts) */
    MM_SCHED_BASE,            /* Base-(k+1) graph (Takezawa et al. 2023): degree <= k,
                               * the product over one period is exactly J for any n */
    MM_SCHED_EPIDEMIC,        /* Epidemic Learning, EL-Local (de Vos et al. 2023): each
                               * peer sends to `fanout` random others drawn from
                               * (seed, t); receivers average what came and their own:
                               * W row- but not column-stochastic */
};

/* Families: a file that names a kind of graph instead of its edges
 * (`family ring`) describes a topology for every number of members k >= 1,
 * which mm_topo_instantiate makes over ranks 0..k-1 (topologies/README.md,
 * "Families"; docs/membership.md). Numbered as in the topology digest. */
enum mm_family {
    MM_FAMILY_NONE,         /* edges or a schedule: a file of fixed peers */
    MM_FAMILY_RING,         /* a cycle (k = 2: the edge) */
    MM_FAMILY_EXP,          /* the symmetrised exponential graph, as `topo gen exp` */
    MM_FAMILY_ONE_PEER_EXP, /* schedule one-peer-exp over k */
    MM_FAMILY_BASE,         /* schedule base with degree min(K, k-1) */
    MM_FAMILY_COMPLETE,     /* every pair */
    MM_FAMILY_REGULAR,      /* random D-regular drawn from a seed of (S, k) */
    MM_FAMILY_TORUS,        /* rows x cols as square as k allows (1 x k: the ring) */
};

typedef struct {
    uint32_t u, v;  /* undirected: u-v; directed: u sends to v (W[v][u] = w) */
    double w;       /* explicit weights only, else 0 */
    int line;       /* line in the file it came from (0: generated) */
} mm_edge;

/* What a topology file says, before validation. mm_topo_parse reads text into
 * one, the generators produce one, mm_topo_format writes one back as text and
 * mm_topo_build validates it and makes the per-round structure. */
typedef struct {
    int n;
    bool directed;
    enum mm_weights weights;
    enum mm_schedule schedule;
    enum mm_family family;      /* MM_FAMILY_NONE: edges or a schedule */
    uint64_t seed;              /* random-matching, epidemic; family regular: S */
    int degree;                 /* base: k, the maximum degree (0: not given);
                                 * family base: K; family regular: D */
    int fanout;                 /* epidemic: s, peers each peer sends to (0: not given) */
    int group;                  /* alt-exp-ring: peers per host (0: not given = 1) */
    char kind[32];              /* a label: "ring", "exp", ... ("file" if none) */
    char comment[256];          /* written as a leading comment by mm_topo_format */
    mm_edge *edges;
    size_t n_edges, cap_edges;
    double *self_w;             /* explicit weights: n entries, NAN where not given */
    int *self_line;             /* line of each 'self' statement (0: none) */
} mm_topo_spec;

void mm_topo_spec_free(mm_topo_spec *s);
/* Appends an edge (no checks). 0, or -1 when out of memory. */
int mm_topo_spec_add(mm_topo_spec *s, uint32_t u, uint32_t v, double w, int line);

/* Text -> spec: syntax only ("FILE:LINE: expected ..."). 0 or -1. */
int mm_topo_parse_spec(const char *text, size_t len, const char *name,
                       mm_topo_spec *out, char *err, size_t errlen);
/* Spec -> text in the file format (caller frees). NULL when out of memory. */
char *mm_topo_format(const mm_topo_spec *s);
/* Validates (ids, duplicates, weights, connectivity) and builds. NULL on
 * error with which edge/row/line is wrong in err. name prefixes messages. */
mm_topology *mm_topo_build(const mm_topo_spec *s, const char *name, char *err, size_t errlen);

/* Generators: kind is one of mm_topo_kinds. Seeded ones are reproducible. */
typedef struct {
    int n;
    int rows;                 /* torus: 0 = as square as n allows */
    int degree;               /* regular: d; base: k (0 = 1) */
    int fanout;               /* epidemic: s (0 = ceil(log2 n)) */
    int group;                /* alt-exp-ring: peers per host (0 = 1) */
    double p;                 /* er: edge probability, 0 = 2 ln(n)/n */
    uint64_t seed;
    bool directed;            /* exp: i -> i+2^k (push-sum) instead of symmetrised */
    bool weights_set;         /* else: metropolis (undirected) / uniform (directed) */
    enum mm_weights weights;  /* metropolis or uniform */
    bool write_weights;       /* write the resulting numbers (weights explicit) */
    bool family;              /* write a family file (`family KIND`, n starting
                               * members) instead of the graph on n peers */
} mm_gen_opts;

int mm_topo_generate(const char *kind, const mm_gen_opts *o, mm_topo_spec *out,
                     char *err, size_t errlen);
/* The kinds, NULL-terminated, for help text. */
extern const char *const mm_topo_kinds[];

/* Parse a topology file. NULL on error, with "FILE:LINE: what was expected"
 * (or which row or edge is wrong) in err. Validates connectivity (over one
 * period for schedules), weights, ids and duplicates. */
mm_topology *mm_topo_load(const char *path, char *err, size_t errlen);
/* Same, from text in memory; name is used in messages. */
mm_topology *mm_topo_parse(const char *text, size_t len, const char *name,
                           char *err, size_t errlen);
void mm_topo_free(mm_topology *t);

int mm_topo_n(const mm_topology *t);              /* number of peers */
/* True for 'graph directed' files: W is column-stochastic, use push-sum.
 * The one-peer exponential graph has one-way links but a doubly stochastic
 * W, so it is false there: always send to out[] and receive from in[]. */
bool mm_topo_directed(const mm_topology *t);
int mm_topo_period(const mm_topology *t);         /* 1 for static graphs and local,
                                                   * ceil(log2 n) for one-peer-exp, the
                                                   * schedule's length for alt-exp-ring and
                                                   * base, 0 for random matching and
                                                   * epidemic (never repeat) */
enum mm_schedule mm_topo_schedule(const mm_topology *t);
int mm_topo_max_degree(const mm_topology *t);     /* max in- or out-degree over all rounds */
const char *mm_topo_kind(const mm_topology *t);   /* "ring", "exp", "one-peer-exp", "file", ... */
/* The topology's digest: SHA-256 (32 bytes) of the canonical form of what
 * the file says (peers, graph, weights, edges, schedule, seed, ...; not its
 * comments, kind, edge order or bytes). Peers that loaded different
 * topologies refuse each other at the HELLO (docs/protocol.md 3.1). */
const uint8_t *mm_topo_digest(const mm_topology *t);

/* ---- families (topologies/README.md, "Families") ----------------------------
 * mm_topo_load of a family file gives the family instantiated at the file's
 * `peers N` (so a static run on it is an ordinary run on that graph), which
 * also carries the family: mm_topo_family is true, and mm_topo_instantiate
 * makes it over any other count. */

/* The most edges a family's graph on k members may have: larger ones are
 * refused (complete over more than 2,048 members, exp over more than about
 * 120,000): every peer would send that many vectors per round anyway. */
#define MM_TOPO_FAMILY_MAX_EDGES (1 << 21)

/* True when t came from a family file (directly or by mm_topo_instantiate). */
bool mm_topo_family(const mm_topology *t);
/* The family, MM_FAMILY_NONE for a file of fixed peers. */
enum mm_family mm_topo_family_kind(const mm_topology *t);
/* Its name as the file writes it ("ring", "one-peer-exp", ...; "none"). */
const char *mm_topo_family_name(enum mm_family f);
/* The file's `peers N`: the starting members, ids 0..N-1 (0: not a family). */
int mm_topo_family_peers(const mm_topology *t);
/* The family's topology over k members, ranks 0..k-1 (the caller maps rank
 * i to the i-th smallest member id): an ordinary topology that every
 * mm_topo_* function takes, freed with mm_topo_free, independent of
 * `family` (which may be freed first). It carries the family, its kind
 * label and its digest (the file's, whatever k), so instantiating it again
 * gives what instantiating `family` gives. Every k in 1..MM_TOPO_MAX_PEERS
 * has one (k = 1: a peer alone, W = [1]; the other fallbacks in
 * topologies/README.md, "Families"). Pure: the same (family, k) gives the
 * same graph on every peer. Cost: what `topo gen` of that graph costs plus
 * its validation, O(k log k) for the sparse families, O(k^2) for complete
 * (`make bench-topo-family` measures it). NULL with the reason in err
 * when t is not a family, k is out of range or memory ran out. */
mm_topology *mm_topo_instantiate(const mm_topology *family, int k, char *err, size_t errlen);
/* The family as its file's line says it, with its weights where it takes
 * them: "ring, weights metropolis", "base 2", "regular 3 seed 1, weights
 * uniform" ("none" when t is not a family). */
void mm_topo_family_describe(const mm_topology *t, char *buf, size_t len);
/* What the family is over k members, in a few words for tools and logs:
 * "alone", "ring", "4 x 4 torus", "ring (1 x 7 torus: 7 is prime)",
 * "4-regular (k x D odd), seed 0x...", ... */
void mm_topo_family_shape(const mm_topology *family, int k, char *buf, size_t len);

typedef struct {
    uint32_t peer;
    double weight;
} mm_neighbour;

/* What peer `me` does in round r: receive from in[0..n_in) and weight
 * their vectors by in[k].weight (= W[me][peer]); send to out[0..n_out)
 * (out[k].weight = W[peer][me], which push-sum applies when sending);
 * self_weight = W[me][me]. Arrays must hold mm_topo_max_degree() entries.
 * Static graphs: O(degree) (lists built at load); one-peer-exp: O(1). */
typedef struct {
    double self_weight;
    int n_in, n_out;
    mm_neighbour *in, *out;
} mm_round_view;

/* 0, or -1 if me is out of range. Thread-safe. Random matching and epidemic
 * cost O(n) (epidemic O(n s^2)) for the first call of a round (every peer's
 * draws are made and kept), O(degree) for further calls with the same round;
 * alt-exp-ring and base cost O(degree + log n); never O(n^2). Peers in in[]
 * and out[] are distinct from me and sorted by id; for undirected graphs
 * they are the same peers, but the one-peer exponential graph receives from
 * i-2^k and sends to i+2^k, and in an epidemic round the peers I send to
 * are not those who send to me. A peer that sits a round out (random
 * matching with n odd, local, some base rounds) gets n_in = n_out = 0 and
 * self_weight = 1. */
int mm_topo_round(const mm_topology *t, uint32_t me, uint64_t round, mm_round_view *v);

/* The peers that ever send to `me`: the in-neighbours of every round of
 * the schedule, marked in senders[mm_topo_n] (the others false). Returns
 * their number, or -1 (senders unspecified) when the schedule never
 * repeats (random matching, epidemic: any peer may, eventually) or out of
 * memory. */
int mm_topo_senders(const mm_topology *t, uint32_t me, bool *senders);

/* Dense W for round r, row-major n*n doubles (caller frees). For tools and
 * tests, not for the per-round path. */
double *mm_topo_matrix(const mm_topology *t, uint64_t round);

/* Contraction factor rho: how much one round of pure gossip shrinks the
 * consensus distance at worst. For a static graph rho = || W - J ||_2 with
 * J = (1/n) 1 1^T; for a periodic schedule the same of the product over one
 * period, to the power 1/period; for the random schedules, which have no
 * period, the mean-square rate sqrt(lambda_max(E[W^T (I - J) W])): how fast
 * the distance to the current mean shrinks (for a doubly stochastic W,
 * sqrt(lambda_max(E[W^T W] - J))).
 *
 * Methods (topologies/README.md, "Commands", says the same for users):
 *  - dense: LAPACK dgesvd of the n*n matrix (the product over a period
 *    formed densely). O(n^3) time, O(n^2) memory: exact to rounding, for
 *    small n and as the reference in tests.
 *  - sparse: Lanczos on B = A^T A, A = W - J (or the product minus J),
 *    applied through the sparse W (and W^T) one round at a time, never
 *    formed: O(iterations * (edges + n)) time, O(n + edges) memory. Stops
 *    when the estimated error of rho is below 1e-12 or after
 *    MM_RHO_MAX_ITERATIONS iterations; the error estimate and a guaranteed
 *    bound are returned with it.
 *  - closed form (random matching, whatever the method asked): every round
 *    draws a uniform random perfect matching and W^T W = W, so E[W^T W] - J
 *    has the single eigenvalue (n-2)/(2(n-1)) on 1-perp for n even, 1/2 for
 *    n odd; rho is its square root, exact.
 * AUTO takes dense up to MM_RHO_DENSE_MAX peers, sparse above. */
enum mm_rho_method { MM_RHO_AUTO, MM_RHO_DENSE, MM_RHO_SPARSE };
#define MM_RHO_DENSE_MAX 256
#define MM_RHO_MAX_ITERATIONS 50000

typedef struct {
    double rho;
    double err;        /* estimated |rho - exact rho|; 0: exact to rounding */
    double err_bound;  /* guaranteed bound (Lanczos: from the residual); >= err */
    int iterations;    /* Lanczos iterations, 0 for dense and closed form */
    bool converged;    /* false: the iteration cap came first; err says how far */
    const char *method; /* "dense (LAPACK dgesvd)", "sparse (Lanczos)", "closed form" */
} mm_rho;

/* Progress of long computations, for a command line to show: fn is called
 * every so often (at most every few thousand operations) with what is being
 * done, e.g. "rho: Lanczos iteration 4000, 1 - 1.3e-07 +- 2e-09". NULL: quiet. */
typedef struct {
    void (*fn)(void *ud, const char *what);
    void *ud;
} mm_topo_progress;

/* rho of the topology (all rounds, as above) or of round r alone
 * (|| W(r) - J ||_2). 0, or -1 when out of memory or LAPACK failed. */
int mm_topo_rho_ex(const mm_topology *t, enum mm_rho_method m, const mm_topo_progress *p, mm_rho *out);
int mm_topo_rho_round_ex(const mm_topology *t, uint64_t round, enum mm_rho_method m,
                         const mm_topo_progress *p, mm_rho *out);
/* The same with MM_RHO_AUTO and no progress: rho, or -1 on failure. */
double mm_topo_rho(const mm_topology *t);
double mm_topo_rho_round(const mm_topology *t, uint64_t round);
/* A random schedule's mean-square rate over its rounds 0..rounds-1:
 * sqrt(lambda_max(mean of W^T (I - J) W)), dense (LAPACK dsyev). Epidemic's
 * rho; for random matching the check of its closed form. -1 on failure or a
 * schedule that is not random. */
double mm_topo_rho_sampled(const mm_topology *t, uint64_t rounds);
/* || A ||_2 of an n*n row-major matrix (LAPACK dgesvd); -1 on failure. */
double mm_mat_norm2(const double *a, int n);

/* The eigenvalues of W's symmetric part (W + W^T)/2, largest first, into
 * lam[0..n): of W itself for a static graph; of the mean W over one period
 * for a periodic schedule, over MM_TOPO_SPECTRUM_ROUNDS rounds for the
 * random ones. For a connected doubly stochastic W, lam[0] = 1 (the
 * average) and the others tell how neighbour distances relate to the
 * consensus distance (gossip/consensus.h). Dense O(n^3) work through
 * LAPACK, once: for set-up and tools. 0, or -1 (out of memory, LAPACK). */
#define MM_TOPO_SPECTRUM_ROUNDS 64
int mm_topo_spectrum(const mm_topology *t, double *lam);

/* Facts `murmur topo info` prints. For schedules, graph facts are about the
 * union of one period's edges (random matching: of the first `window`
 * rounds, as many as it took for the union to be connected but at least
 * ceil(log2 n)) and W facts hold for every round of it. */
#define MM_TOPO_SAMPLE_ROUNDS 1024
typedef struct {
    bool arcs_directed;    /* some link u -> v has no v -> u (e.g. one-peer-exp) */
    size_t edges;          /* undirected edges, or arcs when arcs_directed */
    size_t edges_per_round;
    int deg_min, deg_max;  /* undirected degree, or min/max over in and out */
    int in_min, in_max, out_min, out_max;
    int diameter;          /* hops; -1 when not (strongly) connected */
    bool connected;
    bool symmetric, doubly, column, row; /* stochasticity of W, every round */
    int period;            /* 0 for random matching and epidemic (never repeat) */
    int window;            /* rounds whose union the graph facts describe */
    /* Filled by mm_topo_rho_facts only (else has_rho is false): */
    bool has_rho;
    int n_rho_rounds;      /* entries in rho_rounds (<= 64) */
    double rho_rounds[64]; /* per round of the period */
    mm_rho rho_all;        /* rho of the topology, with its method and error */
    double rho;            /* = rho_all.rho */
    const char *rho_how;   /* the quantity rho is, for the reader */
    double rounds_tenfold; /* ceil(ln 10 / -ln rho), in whole periods for a
                            * periodic schedule; INFINITY when rho >= 1 */
    double sends;          /* vectors each peer sends per round, mean over the
                            * window (random schedules: over the sampled rounds) */
    bool exact_average;    /* W = J in every round of a static graph: the exact
                            * average every round, as an all-reduce computes */
} mm_topo_facts;

/* Everything but rho: O(window * edges) plus the diameter's n breadth-first
 * searches, O(n * edges). 0, or -1 when out of memory. */
int mm_topo_graph_facts(const mm_topology *t, const mm_topo_progress *p, mm_topo_facts *f);
/* rho, rho per round, rounds_tenfold (after mm_topo_graph_facts). 0 or -1. */
int mm_topo_rho_facts(const mm_topology *t, enum mm_rho_method m, const mm_topo_progress *p,
                      mm_topo_facts *f);
/* Both, MM_RHO_AUTO, quiet. */
int mm_topo_facts_get(const mm_topology *t, mm_topo_facts *f);

/* Only the stochasticity of W in every round of the window (the facts'
 * row and column), without the graph facts and their n searches: what a
 * peer checks when it starts. O(min(window, 64) * (n + edges)). 0, or -1
 * when out of memory. */
int mm_topo_stochastic(const mm_topology *t, bool *row, bool *column);
/* Whether only push-sum averages correctly on t: W column-stochastic but
 * not row-stochastic (a directed graph whose in-weights do not sum to
 * one), where D-PSGD and async drift to a weighted average. A directed
 * graph whose W is doubly stochastic (every shipped exp-directed-N) is
 * not one. The launchers (scripts/launch-lib.sh) apply the same rule. */
bool mm_topo_needs_pushsum(const mm_topology *t);

#endif
