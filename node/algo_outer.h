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

/* 0 when the outer state of P parameters fits --outer-memory-mb; else
 * MM_EXIT_USAGE with the figures in err (mm__outer_new's refusal, and the
 * check before the start and --dry-run's). */
int mm__outer_budget(const mm_node_config *c, size_t P, char *err, size_t errlen);

/* The state for a run of c->rounds outer steps on P parameters, into
 * *out; o starts as x, m at 0. 0; or, with the reason in err,
 * MM_EXIT_USAGE for a state over --outer-memory-mb, MM_EXIT_ERROR when out
 * of memory. Made before --resume reads the checkpoint into it. */
int mm__outer_new(const mm_node_config *c, const float *x, size_t P, mm__outer **out,
                  char *err, size_t errlen);
void mm__outer_free(mm__outer *o);

/* What a checkpoint writes (pointers into the state), and where a resume
 * reads it to. */
void mm__outer_ckpt(mm__outer *o, mm_ckpt_state *st);
/* After a load into the buffers mm__outer_ckpt named: takes its step
 * count. A checkpoint without outer state is refused (-1, reason in err). */
int mm__outer_resumed(mm__outer *o, const mm_ckpt_state *st, const char *path, char *err,
                      size_t errlen);

#endif
