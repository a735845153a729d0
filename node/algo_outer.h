/* The outer optimizer (docs/outer.md) in the peer: not an averaging of its
 * own but a wrapper of one (node/algo.h, docs/architecture.md "Adding an
 * algorithm"). The state a peer keeps beside its inner parameters x --
 * outer parameters o, outer momentum m, the round's local progress d, the
 * outer step count -- lives in tr->outer, beside tr->algo_state, and the
 * wrapped entry does, around the inner algorithm's round:
 *
 *   steps_first        the round's H local steps run before its first send
 *                      (DiLoCo), unless --outer-overlap
 *   mix (gossip)       d = x - s, then the inner mix: x = y + d
 *   round_end          (all-reduce: d = x - the round's average y) the outer
 *                      step of model/outer.h on (x, o, m, d), momentum of
 *                      outer step k from the schedule, k += 1
 *   fields             the outer keys of the start and round lines
 *
 * Training thread only. Internal to node/ (mm__). */
#ifndef MURMUR_ALGO_OUTER_H
#define MURMUR_ALGO_OUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/checkpoint.h"
#include "node/algo.h"
#include "node/node.h"

typedef struct mm__outer mm__outer;

/* The entry for --outer over `inner` (gossip's or all-reduce's): a copy
 * with steps_first, mix, round_end and fields set. Made once, at start. */
const mm__algo *mm__algo_outer(const mm__algo *inner, const mm_node_config *c);

/* 0 when the outer state of P parameters (with the compressed exchange's
 * for n peers) fits --outer-memory-mb and --outer-fragments fits P; else
 * MM_EXIT_USAGE with the figures in err (mm__outer_new's refusal, and the
 * check before the start and --dry-run's). */
int mm__outer_budget(const mm_node_config *c, size_t P, uint32_t n, char *err, size_t errlen);

/* The state for a run of c->rounds outer steps on P parameters of peer id
 * of n, into *out; o starts as x, m (and the compressed exchange's error
 * feedback) at 0. 0; or, with the reason in err,
 * MM_EXIT_USAGE for a state over --outer-memory-mb, MM_EXIT_ERROR when out
 * of memory. Made before --resume reads the checkpoint into it. */
int mm__outer_new(const mm_node_config *c, const float *x, size_t P, uint32_t n, uint32_t id,
                  mm__outer **out, char *err, size_t errlen);

/* Whether c's outer exchange is the all-gather of compressed
 * pseudo-gradients with error feedback (--algo allreduce --compress CODEC,
 * CODEC not fp32; docs/outer.md "Over the all-reduce"). */
bool mm__outer_compressed(const mm_node_config *c);

void mm__outer_free(mm__outer *o);

/* This round's floats of the outer exchange, [*lo, *lo + *count): fragment
 * round mod F with --outer-fragments F (net/wire.h mm_wire_fragment), the
 * whole vector otherwise (also without --outer). */
void mm__outer_fragment(const mm__trainer *tr, uint64_t *lo, uint64_t *count);

/* The outer optimizer and its settings for people (the Prometheus
 * endpoint's murmur_peer_info): "nesterov (lr 0.7, momentum 0.9, H 8)". */
void mm__outer_label(const mm__outer *o, int local_steps, char *buf, size_t len);

/* What a checkpoint writes (pointers into the state), and where a resume
 * reads it to. */
void mm__outer_ckpt(mm__outer *o, mm_ckpt_state *st);
/* After a load into the buffers mm__outer_ckpt named: takes its step
 * count. A checkpoint without outer state is refused (-1, reason in err). */
int mm__outer_resumed(mm__outer *o, const mm_ckpt_state *st, const char *path, char *err,
                      size_t errlen);

#endif
