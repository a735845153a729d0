/* Uneven peers in the round (internal to node/, mm__; docs/node.md,
 * "Uneven peers"): the lab's named slow peers (--lab-slow, --lab-stretch),
 * deadlines learnt from arrivals (--deadline learn, the rule in
 * gossip/deadline.h), work that fits the time (--fit-work, the rules in
 * gossip/work.h), and what the round line, the Prometheus endpoint and
 * the report show of them: each round's deadline, wait, work and who set
 * its pace.
 *
 * node/round.c calls these at fixed places, each a line (and only when
 * tr->pace is set, which it is when --deadline learn or --fit-work is
 * given; mm__lab_delay when --lab-slow or --lab-stretch is): without the
 * options a round does exactly what it did before. */
#ifndef MURMUR_PACE_H
#define MURMUR_PACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/metrics.h"
#include "base/text.h"
#include "node/algo.h"
#include "node/exporter.h"
#include "node/mailbox.h"
#include "node/node.h"

typedef struct mm__trainer mm__trainer;
typedef struct mm__pace mm__pace;

/* Whether the configuration asks for the round's pace (tr->pace). */
bool mm__pace_wanted(const mm_node_config *c);
/* The state for a cluster of n_peers, or NULL (out of memory). */
mm__pace *mm__pace_new(const mm_node_config *c, uint32_t n_peers);
void mm__pace_free(mm__pace *p);

/* --lab-slow, --lab-stretch: after a local step that began at
 * step_start, sleep (F - 1) times its time when this peer is slowed by F
 * in this round. */
void mm__lab_delay(mm__trainer *tr, double step_start);

/* The round. round_begin: before its first exchange (a round jumped to
 * by fast-forward counts as left behind). step: one local optimizer step
 * with this round's batch; returns its loss. ready: the H local steps are
 * done. more_steps: whether one more fits before the neighbours' vectors
 * (--fit-work steps). before_mix: scale the round's local progress by H /
 * steps before the mix (s: the snapshot it started from). round_end:
 * after its last exchange, before its line. */
void mm__pace_round_begin(mm__trainer *tr);
float mm__pace_step(mm__trainer *tr);
void mm__pace_ready(mm__trainer *tr);
bool mm__pace_more_steps(mm__trainer *tr);
void mm__pace_before_mix(mm__trainer *tr, const float *s);
void mm__pace_round_end(mm__trainer *tr);

/* The wait (mm__round_wait): wait_begin returns how long to wait from now
 * for exchange e; arrived: in[k]'s vector is taken; moved_on: in[k] has
 * sent a later exchange (we are behind); wait_end: the wait is over (the
 * in-neighbours still IN_WAITING were cut by the deadline). */
double mm__pace_wait_begin(mm__trainer *tr, uint64_t e);
void mm__pace_arrived(mm__trainer *tr, int k, const mm__peer_view *pv);
void mm__pace_moved_on(mm__trainer *tr, int k);
void mm__pace_wait_end(mm__trainer *tr);

/* The metrics lines' keys (start, round, end: docs/metrics.md) and what
 * a scrape shows (node/exporter.h). */
void mm__pace_fields(mm__trainer *tr, mm_metrics *m, mm__line where);
void mm__pace_live(const mm__trainer *tr, mm__live *l);


#endif
