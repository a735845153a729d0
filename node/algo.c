/* The algorithm table's choice, once at start (node/algo.h). */
#include "node/algo.h"

const mm__algo *mm__algo_pick(const mm_node_config *c)
{
    if (c->compress)
        return &mm__algo_choco;
    switch (c->algo) {
    case MM_ALGO_ASYNC: return &mm__algo_async;
    case MM_ALGO_PUSHSUM: return &mm__algo_pushsum;
    case MM_ALGO_ALLREDUCE: return &mm__algo_allreduce;
    case MM_ALGO_DPSGD: break;
    }
    return &mm__algo_dpsgd;
}
