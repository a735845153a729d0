/* node/cc_skip.h: each edge's next round when rounds may be skipped. */
#include "node/cc_skip.h"

#include <stdlib.h>

#include "gossip/consensus.h"

struct mm__skip {
    uint32_t n;
    uint64_t *next; /* [n] by peer id: the round its edge is due */
};

mm__skip *mm__skip_new(uint32_t n_peers)
{
    mm__skip *s = calloc(1, sizeof *s);
    if (!s || !(s->next = calloc(n_peers ? n_peers : 1, sizeof *s->next))) {
        free(s);
        return NULL;
    }
    s->n = n_peers;
    return s;
}

void mm__skip_free(mm__skip *s)
{
    if (!s)
        return;
    free(s->next);
    free(s);
}

bool mm__skip_due(const mm__skip *s, uint32_t peer, long round)
{
    return peer >= s->n || s->next[peer] <= (uint64_t)round;
}

void mm__skip_done(mm__skip *s, uint32_t peer, long round, bool came, uint16_t self,
                   uint16_t its_level)
{
    if (peer >= s->n)
        return;
    s->next[peer] = came ? mm_consensus_edge_next((uint64_t)round, self, its_level)
                         : (uint64_t)round + 1;
}
