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

/* Parse a topology file. NULL on error, with "FILE:LINE: what was expected"
 * (or which row or edge is wrong) in err. Validates connectivity (over one
 * period for schedules), weights, ids and duplicates. */
mm_topology *mm_topo_load(const char *path, char *err, size_t errlen);
/* Same, from text in memory; name is used in messages. */
mm_topology *mm_topo_parse(const char *text, size_t len, const char *name,
                           char *err, size_t errlen);
void mm_topo_free(mm_topology *t);

int mm_topo_n(const mm_topology *t);              /* number of peers */
bool mm_topo_directed(const mm_topology *t);      /* needs push-sum */
int mm_topo_period(const mm_topology *t);         /* 1 for static graphs */
int mm_topo_max_degree(const mm_topology *t);     /* max in- or out-degree over all rounds */
const char *mm_topo_kind(const mm_topology *t);   /* "ring", "exp", "one-peer-exp", "file", ... */

typedef struct {
    uint32_t peer;
    double weight;
} mm_neighbour;

/* What peer `me` does in round r: receive from in[0..n_in) and weight
 * their vectors by in[k].weight (= W[me][peer]); send to out[0..n_out)
 * (out[k].weight = W[peer][me], which push-sum applies when sending);
 * self_weight = W[me][me]. Arrays must hold mm_topo_max_degree() entries.
 * O(degree) for static graphs and schedules; never O(n^2). */
typedef struct {
    double self_weight;
    int n_in, n_out;
    mm_neighbour *in, *out;
} mm_round_view;

int mm_topo_round(const mm_topology *t, uint32_t me, uint64_t round, mm_round_view *v);

/* Dense W for round r, row-major n*n doubles (caller frees). For tools and
 * tests, not for the per-round path. */
double *mm_topo_matrix(const mm_topology *t, uint64_t round);

/* Contraction factor rho = || W - (1/n) 1 1^T ||_2 (for a schedule: of the
 * product over one period, to the power 1/period), through LAPACK. */
double mm_topo_rho(const mm_topology *t);

#endif
