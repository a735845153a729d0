/* The outer optimizer in the peer's round (docs/outer.md): the state a
 * peer keeps beside its inner parameters x -- outer parameters o, outer
 * momentum m, the round's local progress d -- and the two calls round.c
 * makes around its mix (or all-reduce):
 *
 *   before:  d = x - s   (s the vector this peer sent: x minus what the
 *                         local steps added while it travelled; 0 unless
 *                         --outer-overlap)
 *   mix/all-reduce as without an outer optimizer:  x = y + d
 *   after:   the outer step of model/outer.h on (x, o, m, d), momentum of
 *            outer step k from the schedule, k += 1
 *
 * Training thread only. Internal to node/ (mm__). */
#ifndef MURMUR_OUTER_ROUND_H
#define MURMUR_OUTER_ROUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/checkpoint.h"
#include "node/node.h"

typedef struct mm__outer mm__outer;

/* For a run of c->rounds outer steps on P parameters; o starts as x, m at
 * 0. Refuses (NULL, the reason in err) a state over --outer-memory-mb, or
 * out of memory. */
mm__outer *mm__outer_new(const mm_node_config *c, const float *x, size_t P, char *err,
                         size_t errlen);
void mm__outer_free(mm__outer *o);

/* Whether the local steps run while the vector travels (--outer-overlap),
 * or before it is sent. */
bool mm__outer_overlap(const mm__outer *o);

/* d = x - s, before the mix changes x. */
void mm__outer_before_mix(mm__outer *o, const float *x, const float *s);
/* The outer step on x (which holds the plain algorithm's result). */
void mm__outer_after_mix(mm__outer *o, float *x);

/* The momentum the next outer step will use, and the steps taken. */
float mm__outer_next_momentum(const mm__outer *o);
long mm__outer_steps(const mm__outer *o);
/* Lower-case hex SHA-256 of the outer parameters followed by the outer
 * momentum, as the checkpoint's outer block stores them (docs/formats.md):
 * the start line reports it, so a resume can be checked against the file. */
void mm__outer_digest(const mm__outer *o, char hex[65]);
/* Bytes of the outer state (3 vectors). */
size_t mm__outer_bytes(const mm__outer *o);

/* What a checkpoint writes (pointers into the state), and where a resume
 * reads it to. */
void mm__outer_ckpt(mm__outer *o, mm_ckpt_state *st);
/* After a load into the buffers mm__outer_ckpt named: takes its step
 * count. A checkpoint without outer state is refused (-1, reason in err). */
int mm__outer_resumed(mm__outer *o, const mm_ckpt_state *st, const char *path, char *err,
                      size_t errlen);

#endif
