/* Consensus control: how many averaging exchanges ("gossip steps") a round
 * gets (docs/node.md, "Consensus control").
 *
 *  - A schedule by round, "0:4,300:1": from round 0 four exchanges per
 *    round, from round 300 one (more averaging early, as Kong et al., ICML
 *    2021, recommend). The same on every peer, so nothing is negotiated.
 *  - A controller that keeps an estimate of the consensus distance
 *    Xi = sqrt((1/n) sum_i ||x_i - xbar||^2) near a target X. Its input is
 *    what a peer sees: the distances to its neighbours measured while
 *    mixing, corrected for the topology (neighbours are closer to each other
 *    than to xbar) and averaged over the graph through a scalar every
 *    vector carries (the `aux` of docs/protocol.md 3.2).
 *
 * Exchanges are numbered round * stride + g on the wire (g = 0 .. G-1),
 * stride the largest G any round may have, so a receiver recovers the round
 * as exchange / stride whatever G each round had.
 *
 * Pure arithmetic on scalars and the topology's spectrum: no I/O, no
 * model, no threads. */
#ifndef MURMUR_CONSENSUS_H
#define MURMUR_CONSENSUS_H

#include <stddef.h>
#include <stdint.h>

/* ---- the schedule ---------------------------------------------------------- */

#define MM_GSCHED_MAX 64 /* entries */

typedef struct {
    int n;
    long from[MM_GSCHED_MAX]; /* strictly increasing; from[0] = 0 */
    int steps[MM_GSCHED_MAX]; /* exchanges per round from that round on */
} mm_gsched;

/* "R:G[,R:G...]": round R (decimal, the first 0, increasing) and from it G
 * exchanges per round (1..max_steps). 0, or -1 with what is wrong in err. */
int mm_gsched_parse(const char *text, int max_steps, mm_gsched *out, char *err, size_t errlen);
/* G of a round (rounds before from[0] cannot happen: from[0] = 0). */
int mm_gsched_steps(const mm_gsched *s, long round);
/* The largest G of the schedule: the exchange numbering's stride. */
int mm_gsched_max(const mm_gsched *s);

/* ---- the estimator ---------------------------------------------------------- */

/* Why neighbour distances underestimate Xi, and by how much.
 *
 * Let Y be the peers' deviations from the mean (rows y_i = x_i - xbar) and
 * W symmetric doubly stochastic. Peer i measures d_ij = ||x_i - x_j|| for
 * its neighbours and q_i = sum_j W_ij d_ij^2. Then exactly
 *
 *   mean_i q_i = (2/n) tr(Y^T (I - W) Y),   Xi^2 = (1/n) tr(Y^T Y),
 *
 * so Xi^2 = mean_i q_i / (2 R) with R the Rayleigh quotient of I - W over
 * the deviations: between 1 - lambda_2 (all disagreement in W's slowest
 * mode: on a ring, neighbours almost agree while far peers do not) and
 * 1 - lambda_n. R depends on how the disagreement spreads over W's
 * eigenvectors. Model: every peer's local steps pull in a persistent
 * direction of its own (non-IID data: the same genres every round), equal
 * in every mode, and each round applies W G times. The steady state puts
 * mode k at lambda_k^(G-1) / (1 - lambda_k^G) times the pull, so
 *
 *   R(G) = sum_k (1 - lambda_k) s_k / sum_k s_k,
 *   s_k  = lambda_k^(2(G-1)) / (1 - lambda_k^G)^2      (k >= 2).
 *
 * (Pulls that are fresh noise every round instead give
 * s_k = lambda_k^(2(G-1)) / (1 - lambda_k^(2G)); docs/node.md compares
 * both with the exact Xi of real runs.)
 *
 * ratio[G-1] = R(G) for G = 1..gmax, from W's eigenvalues lam[0..n)
 * (largest first, lam[0] = 1: mm_topo_spectrum). Eigenvalues within 1e-9
 * of 1 (the average; more than one only for a disconnected W) are left
 * out. 0, or -1 when no eigenvalue is left (n = 1, or W = I). */
int mm_cc_ratios(const double *lam, int n, int gmax, double *ratio);

/* ---- the controller --------------------------------------------------------- */

/* Gains and constants (docs/node.md gives the reasons). */
#define MM_CC_BETA 0.1  /* leak of the gossiped estimate per round */
#define MM_CC_KI 0.2    /* integral gain, exchanges per unit of ln(Xi/X) per round */
#define MM_CC_KP 1.0    /* proportional gain, exchanges per unit of ln(Xi/X) */
#define MM_CC_ERR_MAX 1.0 /* |ln(Xi/X)| is clipped to this */
#define MM_CC_AUX_MAX 1e30 /* the gossiped scalar is kept in [0, this] */

typedef struct {
    double target;        /* X */
    int gmax;             /* most exchanges a round may have */
    const double *ratio;  /* R(G), G = 1..gmax (mm_cc_ratios), owned by the caller */
    double gi;            /* the integral part of gamma */
    double gamma;         /* exchanges per round wanted, in [1, gmax] */
    double a;             /* gossiped estimate of mean_i q_i */
    double q_prev;        /* this peer's q of the last round it measured one */
    double xi;            /* the estimate of Xi the last decision used */
} mm_cc;

void mm_cc_init(mm_cc *c, double target, int gmax, const double *ratio);
/* The estimate of Xi from a (the gossiped mean of q) at gamma exchanges
 * per round: sqrt(a / (2 R(gamma))), R interpolated between whole G. */
double mm_cc_estimate(const mm_cc *c);
/* Round start: updates the estimate and gamma, and returns how many
 * exchanges this peer wants this round: floor(gamma + u) within
 * [1, gmax], with u = frac(round * 0.618...) the same on every peer, so
 * that peers whose gamma agree want the same number and a fractional gamma
 * is met on average. */
int mm_cc_round(mm_cc *c, uint64_t round);
/* After an exchange's mix: a_mixed is self' * a + sum_j W_ij aux_j over
 * the neighbours whose vector came (self' takes the others' weight).
 * first: the round's first exchange, where q (this peer's q_i, NaN when no
 * neighbour came) enters: a = (1 - beta)(a_mixed + q - q_prev) + beta q
 * (tracking the mean of q with no lag, forgetting what dead peers left
 * behind at rate beta); later exchanges only average: a = a_mixed. */
void mm_cc_fold(mm_cc *c, double a_mixed, double q, int first);

#endif
