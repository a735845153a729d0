/* Which peers ever send to a peer (gossip/topology.h, mm_topo_senders):
 * the in-neighbours of every round of its schedule. */
#include "gossip/topology.h"

#include <stdlib.h>
#include <string.h>

int mm_topo_senders(const mm_topology *t, uint32_t me, bool *senders)
{
    int n = mm_topo_n(t), period = mm_topo_period(t);
    if (period <= 0)
        return -1; /* random schedules: anyone, eventually */
    int deg = mm_topo_max_degree(t) > 0 ? mm_topo_max_degree(t) : 1;
    mm_neighbour *in = calloc((size_t)deg, sizeof *in), *out = calloc((size_t)deg, sizeof *out);
    int count = 0;
    memset(senders, 0, (size_t)n * sizeof *senders);
    if (!in || !out) {
        count = -1;
        goto done;
    }
    for (int r = 0; r < period; r++) {
        mm_round_view v = {.in = in, .out = out};
        if (mm_topo_round(t, me, (uint64_t)r, &v) != 0) {
            count = -1;
            goto done;
        }
        for (int k = 0; k < v.n_in; k++)
            if (!senders[v.in[k].peer]) {
                senders[v.in[k].peer] = true;
                count++;
            }
    }
done:
    free(in);
    free(out);
    return count;
}
