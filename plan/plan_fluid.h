/* The links of `murmur plan` as a fluid (docs/runtime.md, "Out of step"):
 * every vector on its way is a flow that crosses up to four resources (its
 * sender's link out, its receiver's link in, and the uplinks out of and
 * into their groups when they differ) and moves at the max-min fair rate
 * of the flows on those resources at that moment. Unlike
 * mm_plan_flow_times, which times the messages of one exchange started
 * together, this follows flows that start at different moments and
 * overlap: what a peer that ran ahead sends shares its link with what a
 * slower peer is still waiting for. Pure: no I/O, no clock. */
#ifndef MURMUR_PLAN_FLUID_H
#define MURMUR_PLAN_FLUID_H

#include <stddef.h>
#include <stdint.h>

#include "plan/plan.h"

typedef enum {
    MM_FLUID_QUEUED,     /* behind an earlier vector to the same peer (deferred) */
    MM_FLUID_MOVING,     /* its bytes are crossing the links */
    MM_FLUID_DELIVERING, /* through; arrives after the latency */
} mm_fluid_state;

typedef struct {
    uint32_t from, to;
    uint64_t exchange;   /* the sender's exchange it carries */
    double left;         /* bytes still to move */
    double bytes;        /* its size */
    double deliver_at;   /* DELIVERING: when it arrives */
    mm_fluid_state state;
    int nres;
    size_t res[4];       /* the resources it crosses (plan.c's layout) */
} mm_fluid_flow;

/* The resources of plan.c's message model, shared with it: [0, n) the
 * peers' links out, [n, 2n) in, then each group's uplink out, then in. */
size_t mm_plan_nres(const mm_plan_in *in);
/* Resource r's capacity in bytes/s as shaped (payload share applied; 0:
 * unlimited). */
double mm_plan_capacity(const mm_plan_in *in, size_t r);
/* The (up to 4) resources a message crosses, with their MM_PLAN_RES_*
 * kinds (kind may be NULL). Returns how many. */
int mm_plan_flow_resources(const mm_plan_in *in, mm_plan_flow f, size_t r[4], int kind[4]);

/* Room for `need` flows in *a (capacity *cap, doubled as needed). 0, or -1
 * when out of memory (*a unchanged). */
int mm_fluid_reserve(mm_fluid_flow **a, size_t *cap, size_t need);

/* Max-min fair rates by progressive filling: the rates of all the moving
 * flows grow together until a resource is full; the flows through a full
 * resource keep their rate, the others grow on. cap[r] in bytes/s (0:
 * unlimited); a moving flow that crosses no limited resource gets
 * INFINITY; a flow that is not moving gets 0. Writes rate[0..nf). 0, or -1
 * when out of memory. */
int mm_fluid_fair_rates(const mm_fluid_flow *f, size_t nf, const double *cap, size_t ncap,
                        double *rate);

typedef struct {
    const mm_plan_in *in;
    mm_fluid_flow *f;
    size_t nf, cap_f;
    double *rate;        /* per flow, from the last mm_fluid_rates */
    double *cap;         /* per resource: its capacity now */
    unsigned *moving;    /* per resource: moving flows through it */
    unsigned *same;      /* per resource: the most moving flows of one exchange */
    size_t nres;
} mm_fluid;

/* The resources of in's profile (or loop rate). 0, or -1 when out of memory. */
int mm_fluid_init(mm_fluid *fl, const mm_plan_in *in);
void mm_fluid_free(mm_fluid *fl);

/* A vector of `bytes` from `from` to `to` for exchange `e`, sent now. It
 * waits behind a vector to the same peer that is still moving (the node
 * defers it: one send per neighbour at a time, docs/node.md). 0, or -1
 * when out of memory. */
int mm_fluid_send(mm_fluid *fl, uint32_t from, uint32_t to, uint64_t e, double bytes);

/* How many of `from`'s exchanges still have a vector moving or queued:
 * the snapshot buffers its sends still read. */
unsigned mm_fluid_snapshots(const mm_fluid *fl, uint32_t from);

/* Whether a send of `from`'s exchange `e` still waits behind another. */
int mm_fluid_queued(const mm_fluid *fl, uint32_t from, uint64_t e);

/* Every resource's capacity as the moving flows find it (the payload share,
 * and the TCP share where two or more flows of one exchange cross it), and
 * every moving flow's max-min fair rate. 0, or -1 when out of memory. */
int mm_fluid_rates(mm_fluid *fl);

/* When the next flow, at the rates of the last mm_fluid_rates, is through
 * or arrives, from `now` (INFINITY: none is on its way). */
double mm_fluid_next(const mm_fluid *fl, double now);

/* Moves every flow from `now` to `until` at the last rates. The flows that
 * have arrived by `until` leave the fluid: their (from, to, exchange) are
 * written to got[0..*ngot) (room for fl->nf); a vector queued behind one
 * that is through starts moving. */
void mm_fluid_advance(mm_fluid *fl, double now, double until, mm_fluid_flow *got, size_t *ngot);

#endif
