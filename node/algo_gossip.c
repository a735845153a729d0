/* D-PSGD and push-sum (node/algo.h): the snapshot s = w x travels whole in
 * fp32 with its weight w (1 for D-PSGD), each exchange waits (bounded) for
 * every in-neighbour's vector of the same exchange, and the mix reads the
 * lent buffers in place:
 *
 *   x <- mix(z_t) + (x - z_t),   z_t = s / w  (gossip/mix.h)
 *
 * With push-sum, x holds the de-biased model z and w the push-sum weight;
 * docs/node.md derives the update. async (algo_async.c) sends and mixes
 * the same way. */
#include <stdio.h>

#include "base/log.h"
#include "gossip/mix.h"
#include "net/wire.h"
#include "node/algo.h"
#include "node/trainer.h"

int mm__gossip_send(mm__trainer *tr, int b, uint64_t e, bool more)
{
    float *s = mm__mbox_buf(tr->mb, b);
    mm_mix_scale_copy(s, (float)tr->w, tr->x, tr->P);
    return mm__gossip_send_buf(tr, b, e, more);
}

int mm__gossip_send_buf(mm__trainer *tr, int b, uint64_t e, bool more)
{
    return mm__gossip_send_part(tr, b, e, more, 0, tr->P);
}

int mm__gossip_send_part(mm__trainer *tr, int b, uint64_t e, bool more, uint64_t offset,
                         uint64_t count)
{
    mm__mbox_publish(tr->mb, b, e);
    mm_wire_vec meta = {.weight = tr->w, .codec = MM_WIRE_CODEC_FP32, .offset = offset,
                        .count = count,
                        .flags = more ? MM_VEC_MORE : 0, .aux = tr->adaptive ? tr->cc.a : 0,
                        .level = tr->skip ? tr->level : 0, .view = tr->view_tag};
    for (int k = 0; k < tr->v.n_out; k++)
        if (!tr->adaptive || tr->nbr[k].on) /* adaptive: out[k] is in[k] (mm__control_undirected) */
            mm__mbox_send(tr->mb, tr->v.out[k].peer, e, b, &meta, count * sizeof(float));
    return 0;
}

/* in[k]'s vector of this exchange: the whole fp32 vector (the wire checked
 * its length), mixed from the mailbox's buffer. */
static void take(mm__trainer *tr, int k, const mm__peer_view *pv)
{
    mm__nbr *nb = &tr->nbr[k];
    nb->status = IN_READY;
    nb->vec = pv->body;
    nb->weight = pv->meta.weight;
    nb->more = (pv->meta.flags & MM_VEC_MORE) != 0;
    nb->aux = pv->meta.aux;
    nb->level = pv->meta.level;
}

static void gather(mm__trainer *tr, uint64_t e) { mm__round_wait(tr, e, take, NULL); }

void mm__gossip_inputs(mm__trainer *tr)
{
    for (int k = 0; k < tr->v.n_in; k++) {
        const mm__nbr *nb = &tr->nbr[k];
        bool ready = nb->status == IN_READY;
        tr->mix_in[k] = (mm_mix_input){.x = ready ? nb->vec : NULL,
                                      .weight = tr->v.in[k].weight,
                                      .w = ready ? nb->weight : 1.0,
                                      .peer = tr->v.in[k].peer};
    }
}

void mm__gossip_mix(mm__trainer *tr, const float *s) { mm__gossip_mix_part(tr, s, 0, tr->P); }

void mm__gossip_mix_part(mm__trainer *tr, const float *s, uint64_t offset, uint64_t count)
{
    mm__gossip_inputs(tr);
    tr->w = mm_mix_round_clip(tr->x + offset, s, count, tr->w, tr->v.self_weight, tr->mix_in,
                              tr->v.n_in, tr->algo->id == MM_ALGO_PUSHSUM, (double)tr->n,
                              &tr->clip);
    if (tr->skip && tr->exchanges == 0) /* the shape's input (consensus_control.c) */
        tr->cc_pull2 = mm_mix_pull_norm2(s, tr->mix_in, tr->v.n_in, count);
    for (int k = 0; k < tr->v.n_in; k++) {
        tr->nbr[k].dist = tr->mix_in[k].dist;
        if (tr->mix_in[k].refused) { /* the transport's rule let it through: count it */
            tr->nbr[k].status = IN_REFUSED;
            tr->mix_refused++;
            mm_warn("round %ld: peer %u's weight %.17g breaks the %s rule: not mixed", tr->round,
                    tr->v.in[k].peer, tr->nbr[k].weight, mm_algo_name(tr->algo->id));
        }
    }
}

void mm__gossip_release(mm__trainer *tr)
{
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->nbr[k].status == IN_READY || tr->nbr[k].status == IN_REFUSED)
            mm__mbox_release(tr->mb, tr->v.in[k].peer);
}

static void pushsum_fields(mm__trainer *tr, mm_metrics *m, mm__line where)
{
    if (where == MM__LINE_ROUND)
        mm_metrics_num(m, "w", tr->w);
}

const mm__algo mm__algo_dpsgd = {
    .id = MM_ALGO_DPSGD,
    .fast_forward = true,
    .send = mm__gossip_send,
    .gather = gather,
    .mix = mm__gossip_mix,
    .release = mm__gossip_release,
};

const mm__algo mm__algo_pushsum = {
    .id = MM_ALGO_PUSHSUM,
    .fast_forward = true,
    .send = mm__gossip_send,
    .gather = gather,
    .mix = mm__gossip_mix,
    .release = mm__gossip_release,
    .fields = pushsum_fields,
};
