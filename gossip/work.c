/* Work that fits the time: the rules and why the mixing stays unbiased
 * are in gossip/work.h. */
#include "gossip/work.h"

void mm_work_init(mm_work *w, int batch, int batch_min, int steps, int steps_max)
{
    if (batch_min < 1)
        batch_min = 1;
    if (batch_min > batch)
        batch_min = batch;
    if (steps_max < steps)
        steps_max = steps;
    *w = (mm_work){.batch_max = batch, .batch_min = batch_min, .batch = batch, .steps = steps,
                   .steps_max = steps_max};
}

int mm_work_next_batch(mm_work *w, double lead_s, double compute_s)
{
    if (compute_s > 0 && lead_s > MM_WORK_PACE_LEAD * compute_s) { /* it sets the pace */
        int b = w->batch * 3 / 4;
        if (b > w->batch - 1)
            b = w->batch - 1;
        w->batch = b < w->batch_min ? w->batch_min : b;
    } else if (!(lead_s >= 0)) { /* a neighbour is not done: it does not */
        int step = w->batch_max / 16 > 1 ? w->batch_max / 16 : 1;
        w->batch = w->batch + step > w->batch_max ? w->batch_max : w->batch + step;
    }
    return w->batch;
}

bool mm_work_more_steps(const mm_work *w, int done, double remaining_s, double step_s)
{
    return done < w->steps_max && step_s > 0 && remaining_s > 0.5 * step_s;
}

double mm_work_delta_scale(const mm_work *w, int tau)
{
    if (tau < 1 || tau == w->steps)
        return 1.0;
    return (double)w->steps / (double)tau;
}
