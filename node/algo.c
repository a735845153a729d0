/* The algorithm table's choice, once at start (node/algo.h). */
#include "node/algo.h"
#include "node/algo_outer.h"

static const mm__algo *averaging(const mm_node_config *c)
{
    if (c->compress && c->algo != MM_ALGO_ALLREDUCE) /* (all-reduce: node/algo_outer.c) */
        return &mm__algo_choco;
    switch (c->algo) {
    case MM_ALGO_ASYNC: return &mm__algo_async;
    case MM_ALGO_PUSHSUM: return &mm__algo_pushsum;
    case MM_ALGO_ALLREDUCE: return &mm__algo_allreduce;
    case MM_ALGO_DPSGD: break;
    }
    return &mm__algo_dpsgd;
}

/* --outer wraps the averaging (cmd_node.c allows it over dpsgd and
 * allreduce only). */
const mm__algo *mm__algo_pick(const mm_node_config *c)
{
    const mm__algo *a = averaging(c);
    return c->outer ? mm__algo_outer(a, c) : a;
}
