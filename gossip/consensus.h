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

#define MM_STEPS_SCHEDULE_MAX 64 /* entries */

typedef struct {
    int n;
    long from[MM_STEPS_SCHEDULE_MAX]; /* strictly increasing; from[0] = 0 */
    int steps[MM_STEPS_SCHEDULE_MAX]; /* exchanges per round from that round on */
} mm_steps_schedule;

/* "R:G[,R:G...]": round R (decimal, the first 0, increasing) and from it G
 * exchanges per round (1..max_steps). 0, or -1 with what is wrong in err. */
int mm_steps_schedule_parse(const char *text, int max_steps, mm_steps_schedule *out,
                             char *err, size_t errlen);
/* G of a round (rounds before from[0] cannot happen: from[0] = 0). */
int mm_steps_schedule_steps(const mm_steps_schedule *s, long round);
/* The largest G of the schedule: the exchange numbering's stride. */
int mm_steps_schedule_max(const mm_steps_schedule *s);

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
int mm_consensus_ratios(const double *lam, int n, int gmax, double *ratio);

/* The disagreement's shape, measured (rounds skipped, gmin < 1).
 *
 * R above is a model, and it fails when edges exchange rarely: between two
 * exchanges every peer drifts towards its own data for 1/gamma rounds, and
 * the disagreement an exchange sees is whiter (more of it in W's fast
 * modes, R larger) than one mix a round leaves; with R(1) the estimate read
 * 1.4-2 times the exact Xi on ring-16 at 1/15 of an exchange a round. A
 * peer can measure the shape: besides q_i it holds its mix's pull
 * p_i = sum_j W_ij (x_j - x_i), and with b_i = ||p_i||^2 exactly
 *
 *   mean_i b_i = (1/n) tr(Y^T (I - W)^2 Y),
 *
 * so m = mean b / mean q = sum_k (1 - lambda_k)^2 e_k / (2 sum_k (1 -
 * lambda_k) e_k) (e_k the disagreement in mode k) grows from 0 (all of it
 * in the slowest modes) to 1/2 (white, on a ring) and tells R: Xi^2 = q
 * f(m), f = 1/(2R). f is taken from one family of shapes, ordered by m:
 * the persistent pulls' steady state of G mixes a round (the s_k of R(G)
 * above, G = gmax .. 1, the smoothest), then pulls that relax towards each
 * peer's own optimum between two mixes (s_k = 1 / (1 - rho lambda_k)^2,
 * rho from 1, the same as G = 1, down to 0, white), linear in m between
 * its points. Each peer applies f to its own q_i and b_i (measured on the
 * snapshots of ring-16 runs, the mean of the peers' q_i f(b_i / q_i) is
 * within a few per cent of mean(q) f(mean b / mean q)), so one scalar is
 * still all that is gossiped.
 *
 * The estimate is of the disagreement an exchange sees, the top of the
 * sawtooth between two exchanges (the mix takes Xi^2 down by exactly
 * mean q - mean b). Aiming at the sawtooth's middle instead (Xi^2 less
 * (q - b)/2) was tried: on ring-16 it held X = 12 20 % over the target,
 * and the simulated ring's peaks went past +25 % (docs/node.md). */
#define MM_CC_SHAPES 96 /* at most 64 persistent shapes and the relaxing ones */

typedef struct {
    int n;
    double m[MM_CC_SHAPES]; /* increasing */
    double f[MM_CC_SHAPES]; /* Xi^2 / q at that m: 1 / (2 R) */
} mm_consensus_shape;

/* The family from W's eigenvalues lam[0..n) (mm_topo_spectrum), gmax
 * (1..64) the most exchanges a round. 0, or -1 when no eigenvalue is left
 * below 1 (n = 1, or W = I). */
int mm_consensus_shape_init(mm_consensus_shape *s, const double *lam, int n, int gmax);
/* One peer's estimate of Xi^2 from its q and b: q f(b / q), m clamped to
 * the family's range; 0 for q <= 0, NaN when q or b is not finite. */
double mm_consensus_shape_xi2(const mm_consensus_shape *s, double q, double b);

/* ---- the controller --------------------------------------------------------- */

/* Gains and constants (docs/node.md gives the reasons). */
#define MM_CC_BETA 0.1  /* leak of the gossiped estimate per round */
#define MM_CC_KI 0.2    /* integral gain, exchanges per unit of ln(Xi/X) per round */
#define MM_CC_KI_MAX 1.0 /* the most one update integrates after rounds without input
                          * (only below one exchange a round: with gmin = 1 every
                          * round is fresh); 0.5 before the feed-forward */
#define MM_CC_KP_SKIP 2.0 /* proportional gain in the level (gmin < 1): the edges
                           * skip by the level, so the P part must be in it */
#define MM_CC_BETA_SKIP 0.5 /* gmin < 1: weight of a fresh estimate in the leaky
                             * average that replaces the tracking term */
#define MM_CC_KP 1.0    /* proportional gain, exchanges per unit of ln(Xi/X) */
#define MM_CC_ERR_MAX 1.0 /* |ln(Xi/X)| is clipped to this */
#define MM_CC_AUX_MAX 1e30 /* the gossiped scalar is kept in [0, this] */
#define MM_CC_SKIP_MAX 63  /* most rounds an edge skips in a row (gamma < 1) */

typedef struct {
    double target;        /* X */
    int gmax;             /* most exchanges a round may have */
    double gmin;          /* fewest exchanges a round on average: 1, or in
                           * [1/(MM_CC_SKIP_MAX+1), 1) when rounds may be skipped */
    const double *ratio;  /* R(G), G = 1..gmax (mm_consensus_ratios), owned by the caller;
                           * NULL: a already estimates Xi^2 (mm_consensus_shape_xi2's inputs) */
    double gi;            /* the integral state h: gamma_I = T(h) (below) */
    double gamma;         /* exchanges per round wanted, in [s gmin, gmax] (s the step scale) */
    double a;             /* gossiped estimate of mean_i q_i (of mean_i Xi^2 estimates
                           * without ratio) */
    double q_prev;        /* this peer's q of the last round it measured one */
    double xi;            /* the estimate of Xi the last decision used */
    int idle;             /* rounds since the last fresh input */
    double out;           /* h and the proportional part: what the level carries */
    double step_scale;    /* this round's local steps against the largest (the learning
                           * rate over its peak): 1 unless set; used when gmin < 1 */
} mm_consensus_ctl;

/* gmin = 1: the controller only adds exchanges (1..gmax a round), as
 * before rounds could be skipped; gmin < 1 lets it skip rounds too.
 * ratio NULL: the peers gossip their mm_consensus_shape_xi2 (the node does
 * so when rounds may be skipped) and the estimate is sqrt(a). */
void mm_consensus_init(mm_consensus_ctl *c, double target, double gmin, int gmax,
                       const double *ratio);
/* The estimate of Xi: sqrt(a) without ratio; else from a (the gossiped mean of q) at gamma exchanges
 * per round: sqrt(a / (2 R(gamma))), R interpolated between whole G; R(1)
 * below one exchange a round: with one mix every P rounds, the model's
 * pulls pile up P times between mixes in every mode alike, so the shape of
 * the disagreement seen at an exchange, and R, is that of G = 1. */
double mm_consensus_estimate(const mm_consensus_ctl *c);
/* Round start: updates the estimate and gamma, and returns how many
 * exchanges this peer wants this round: floor(gamma + u) within
 * [1, gmax] (which rounds an edge skips when gamma < 1 is the edges'
 * business: mm_consensus_edge_next), with u = frac(round * 0.618...) the
 * same on every peer, so that peers whose gamma agree want the same number
 * and a fractional gamma is met on average. fresh: whether the estimate
 * has new input since the last call (an exchange was mixed); without it
 * gamma is kept (no integral wind-up
 * over rounds that learnt nothing) and only the dither moves; the next
 * fresh round integrates the error over the rounds since the last one
 * (gain KI per round, at most KI_MAX at once: the error an exchange sees
 * stood for every round of the gap, and a gap of 1/gamma rounds would
 * otherwise slow the loop by as much). With fresh every round (gmin = 1)
 * this is KI a round, as before.
 *
 * The PI law works on h: gamma = T(h), T(h) = h for h >= 1 (exchanges
 * added one by one, as with gmin = 1) and exp(h - 1) below (rounds skipped
 * by factors: the distance a skip lets grow is about proportional to the
 * rounds between mixes, so ln gamma is what moves ln Xi linearly). T is
 * continuous with slope 1 at h = 1; h is kept in [1 + ln gmin, gmax]. */
int mm_consensus_round(mm_consensus_ctl *c, uint64_t round, int fresh);
/* Feed-forward of the learning rate (gmin < 1 only; ignored with gmin = 1,
 * whose runs stay as they were). s in (0, 1]: how large this round's local
 * steps are against the largest of the run, the learning rate over its
 * peak (1 during warm-up: the edges' skips decided at a round hold for up
 * to 64 rounds, and the rate climbs 20-fold in a warm-up of 20); set it
 * before mm_consensus_round. The drift the steps put between the replicas
 * in a round is proportional to s, and the distance an edge lets grow
 * between two exchanges to the rounds between them, so Xi goes with
 * s / gamma: gamma = s T(h) holds a distance that the integral h alone
 * would have to chase as the rate falls. With one integral update per
 * exchange (1/gamma rounds apart) and W's slowest mode relaxing over
 * 1/(1 - lambda_2) exchanges, the loop is too slow to chase it: on ring-16
 * at X = 12 (gamma ~ 0.1) the exact Xi fell from 16 to 9 over the second
 * half of a cosine schedule (docs/node.md). With gamma proportional to s
 * the drift between two exchanges stays the same as the rate falls, and
 * h is left only what the rate does not explain. The level (below)
 * carries s T(h), what the edges skip by. */
void mm_consensus_set_step_scale(mm_consensus_ctl *c, double s);
/* ---- skipping rounds (gmin < 1) ----
 *
 * Below one exchange a round an edge exchanges only in some rounds, and
 * its two ends must agree on which. Every vector of a round's first
 * exchange carries the sender's *level*, its integral state h in fixed
 * point (the SKIP field, docs/protocol.md 3.2); both ends of an edge
 * then hold both levels and compute the edge's next round from them
 * alike (mm_consensus_edge_next). The levels are also averaged over the graph
 * like the parameters (mm_consensus_fold_level): integral states that each
 * integrate their own peer's error drift apart on a ring (each peer's
 * estimate keeps a tenth of its own q, and errors of opposite sign push
 * neighbours to opposite bounds, an edge between two peers at the floor
 * then going unmixed for 63 rounds); averaged, they integrate the mean
 * error and stay together. */

/* This peer's level value: l = T^-1(s T(h)) (h itself when s = 1), the
 * integral with the step scale folded in; the level sent is
 * round((l + 4) * 512) in [0, 65535] (a level under 1/512 of a rate
 * e^-5 = 0.0067 exchanges a round reads as that: an edge exchanges at
 * least every 64 rounds anyway). */
double mm_consensus_level_own(const mm_consensus_ctl *c);
uint16_t mm_consensus_level(const mm_consensus_ctl *c);
/* A level's value: level / 512 - 4. */
double mm_consensus_level_value(uint16_t level);
/* After a round's first exchange (gmin < 1): l_mixed = l + sum_j W_ij
 * (l_j - l) over the neighbours whose vector came (l this peer's
 * mm_consensus_level_own, l_j their levels' values); h is set to what
 * gives it at this round's step scale, h = T^-1(T(l_mixed) / s), kept in
 * [1 + ln gmin, gmax]. */
void mm_consensus_fold_level(mm_consensus_ctl *c, double l_mixed);
/* How many rounds after `round` the dither skips at gamma: r' = round+1,
 * round+2, ... while gamma + u_r' < 1, at most kmax; 0 when gamma >= 1. */
int mm_consensus_skip_rounds(double gamma, uint64_t round, int kmax);
/* The round an edge exchanges on next after exchanging in `round`, its
 * ends having announced levels l_self and l_peer: with gamma_e = T of the
 * mean of both levels' h, round + 1 + mm_consensus_skip_rounds(gamma_e, round,
 * MM_CC_SKIP_MAX); the same at both ends (the mean of the same two
 * doubles). */
uint64_t mm_consensus_edge_next(uint64_t round, uint16_t l_self, uint16_t l_peer);
/* After an exchange's mix: a_mixed is self' * a + sum_j W_ij aux_j over
 * the neighbours whose vector came (self' takes the others' weight).
 * first: the round's first exchange, where q (this peer's q_i, NaN when no
 * neighbour came) enters: a = (1 - beta)(a_mixed + q - q_prev) + beta q
 * (tracking the mean of q with no lag, forgetting what dead peers left
 * behind at rate beta); later exchanges only average: a = a_mixed. */
void mm_consensus_fold(mm_consensus_ctl *c, double a_mixed, double q, int first);

#endif
