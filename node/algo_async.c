/* Asynchronous gossip (node/algo.h): D-PSGD's snapshot and mix
 * (algo_gossip.c), but an exchange never waits: it mixes the newest copy
 * of each in-neighbour it has, if that copy arrived at most --staleness of
 * this peer's own exchanges ago. A vector is copied out of the mailbox as
 * soon as it is seen, so the connection keeps flowing.
 *
 * A copy's age is counted from its arrival, not from the sender's exchange
 * number (docs/node.md, "async"): a neighbour that is alive and sending is
 * mixed however far its round is from ours. Judged by the sender's number,
 * a peer that got more than --staleness exchanges ahead (a start a moment
 * earlier is thousands of exchanges in pure gossip) mixed nobody, so it did
 * less work a round, ran further ahead and never mixed again (issue 34). */
#include <stdlib.h>
#include <string.h>

#include "node/algo.h"
#include "node/elastic.h"
#include "node/trainer.h"

/* The newest copy of a peer (by peer id; allocated when first seen). */
typedef struct {
    float *vec;
    int64_t exchange;               /* the sender's exchange number; -1: none yet */
    uint64_t arrived;               /* our exchange when it was copied */
    uint32_t view;                  /* its sender's view tag (elastic runs) */
    double weight;
} latest;

static int start(mm__trainer *tr, char *err, size_t errlen)
{
    latest *l = calloc(tr->n, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory for the newest copies of %u peers", tr->n);
        return MM_EXIT_ERROR;
    }
    for (uint32_t p = 0; p < tr->n; p++)
        l[p].exchange = -1;
    tr->algo_state = l;
    return 0;
}

static void end(mm__trainer *tr)
{
    latest *l = tr->algo_state;
    if (l)
        for (uint32_t p = 0; p < tr->n; p++)
            free(l[p].vec);
    free(l);
}

static void gather(mm__trainer *tr, uint64_t e)
{
    latest *all = tr->algo_state;
    for (int k = 0; k < tr->v.n_in; k++) {
        uint32_t p = tr->v.in[k].peer;
        latest *l = &all[p];
        mm__peer_view pv;
        if (tr->elastic)
            mm__view_drop_states(tr, p);
        mm__mbox_peer(tr->mb, p, &pv);
        if (pv.has_vector) {
            if (!l->vec)
                l->vec = malloc(tr->P * sizeof(float));
            if (l->vec) {
                memcpy(l->vec, pv.body, tr->P * sizeof(float));
                l->exchange = (int64_t)pv.exchange;
                l->arrived = e;
                l->view = pv.meta.view;
                l->weight = pv.meta.weight;
            }
            /* copied out at once, so the connection keeps flowing */
            mm__mbox_release(tr->mb, p);
        }
        bool fresh = l->vec && l->exchange >= 0 && e - l->arrived <= (uint64_t)tr->cfg->staleness;
        /* elastic: a copy made under another view than ours of this round
         * is not mixed (docs/membership.md): neither end mixes the other */
        if (fresh && tr->elastic && l->view != tr->view_tag) {
            fresh = false;
            mm__elastic_mismatch(tr->el, p);
        }
        mm__nbr *nb = &tr->nbr[k];
        nb->status = fresh ? IN_READY : IN_MISSING;
        nb->vec = fresh ? l->vec : NULL;
        nb->weight = fresh ? l->weight : 0;
    }
}

const mm__algo mm__algo_async = {
    .id = MM_ALGO_ASYNC,
    .start = start,
    .end = end,
    .send = mm__gossip_send,
    .gather = gather,
    .mix = mm__gossip_mix,
    /* release: none, gather gave every vector back at once */
};
