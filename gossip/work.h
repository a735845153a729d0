/* Work that fits the time (--fit-work; docs/node.md, "Uneven peers").
 * Numbers in, numbers out: the round (node/pace.c) says what happened,
 * this decides how much local work the next round (or the next step)
 * gets. Two knobs, each with what the mixing must do to stay unbiased:
 *
 *  batch  a peer that sets its neighbours' pace takes smaller batches, one
 *         that does not takes larger ones again, up to the configured
 *         batch. It sets the pace when, as its local steps end, every
 *         in-neighbour's vector of the *next* round is already here: they
 *         all finished this round before it did. (In step, a neighbour's
 *         next vector comes about when this peer's compute ends; one that
 *         waits for a slower peer sends it right after that peer's vector
 *         of the round came, which is sent as that peer's round begins,
 *         so a peer slower than all its neighbours sees their next
 *         vectors about its whole compute ahead.) With L the least of
 *         those leads and C its compute of the round:
 *
 *           L > 1/4 C (it sets the pace):       b <- max(b_min, min(b - 1, floor(3 b / 4)))
 *           a next vector not here (it does not): b <- min(B, b + max(1, B / 16))
 *           otherwise:                           b unchanged
 *
 *         (AntDT's ADJUST_BS, decided by each peer from what it sees, and
 *         without wire changes: the mailbox stages received vectors, so
 *         it sees when each came.) A peer equal to its neighbours sets
 *         the pace only by noise, and by less than a quarter of its
 *         compute in most rounds; it keeps its batch.
 *         The mixing needs nothing: the loss is the mean over the batch,
 *         so a smaller batch's gradient estimates the same gradient of the
 *         peer's own objective f_i (only its variance grows, by B / b), and
 *         the mix keeps W: every f_i keeps weight 1/n in the average.
 *         (Weighting a neighbour by its samples, as a data-parallel
 *         all-reduce must, would give a fast peer's data more weight:
 *         biased as soon as the peers' data differ.)
 *
 *  steps  a peer whose neighbours' vectors are expected more than half a
 *         local step from now takes one more step (it ends at most half a
 *         step after they come), up to steps_max steps a round, and its
 *         local progress is normalised before the mix (FedNova: Wang et
 *         al., "Tackling the objective inconsistency problem in
 *         heterogeneous federated optimization", 2020):
 *
 *           x <- mix(s) + (H / tau) (x - s)        (tau: steps done, H: --local-steps)
 *
 *         Why: tau steps move a peer by about -eta tau grad f_i, so
 *         without the factor the average moves by -eta/n sum_i tau_i grad
 *         f_i: the run minimises sum_i tau_i f_i, the fast peers' data
 *         weighted by their speed (the objective inconsistency FedNova
 *         measures). With it every peer moves by -eta H (the mean of its
 *         tau step directions), as with equal work; the extra steps buy a
 *         less noisy direction, not more weight. tau = H gives factor 1:
 *         today's mix bit for bit (gossip/mix.h mm_mix_scale_delta).
 */
#ifndef MURMUR_WORK_H
#define MURMUR_WORK_H

#include <stdbool.h>

typedef struct {
    int batch_max;     /* B: the configured batch */
    int batch_min;     /* the smallest a pace-setting peer goes */
    int batch;         /* this round's */
    int steps;         /* H: --local-steps */
    int steps_max;     /* most local steps a round with the steps knob */
} mm_work;

/* The lead, as a share of a round's compute, above which a peer sets the
 * pace and takes a smaller batch. */
#define MM_WORK_PACE_LEAD 0.25

void mm_work_init(mm_work *w, int batch, int batch_min, int steps, int steps_max);
/* After a round: by how long every in-neighbour's next vector came before
 * this peer's compute ended (lead_s; negative or NaN when one was not here
 * yet: it does not set the pace), and its compute. Returns the next
 * round's batch. */
int mm_work_next_batch(mm_work *w, double lead_s, double compute_s);
/* Whether another local step fits, with done steps taken: one more when
 * the neighbours' vectors are expected more than half a step's time from
 * now (remaining_s; negative when none is expected) and done < steps_max. */
bool mm_work_more_steps(const mm_work *w, int done, double remaining_s, double step_s);
/* The factor on a round's local progress after tau steps: H / tau (1 when
 * tau = H, or when tau < 1: nothing to scale). */
double mm_work_delta_scale(const mm_work *w, int tau);

#endif
