/* The compressed outer exchange over the all-reduce (docs/outer.md,
 * "Fewer bytes per outer step"): error feedback on the pseudo-gradient and
 * the average of the peers' compressed contributions, as pure functions
 * over flat float vectors. No state is kept here; the caller owns every
 * vector.
 *
 * DiLoCo's peers share the outer parameters o. Each round peer i sends,
 * instead of its inner parameters s_i, a codec's payload of its
 * pseudo-gradient o - s_i plus what earlier rounds left unsent, its error
 * feedback e_i (SparseLoCo, arXiv 2508.15706; MuLoCo, arXiv 2505.23725):
 *
 *   a   = beta e_i + (o - s_i)          (beta = 1: plain error feedback)
 *   q_i = Q(a)                          the payload every peer receives
 *   e_i = a - decode(q_i)               what is left for the next rounds
 *
 * and every peer, holding every q_j (an all-gather), forms the same
 *
 *   y = o - (sum_j decode(q_j)) / n     (the sum in peer order j = 0..n-1)
 *
 * bit for bit: the outer step then treats y as the round's average, as it
 * does the ring's exact one. Over a window of rounds with beta = 1 the
 * payloads and the final e sum to the pseudo-gradients' sum (up to one
 * rounding per round: tests/test_ef.c): nothing is lost, only delayed.
 *
 * Every value is one binary32 operation, in the order written, never fused
 * (mk/codec.mk builds this file with -ffp-contract=off), so peers built by
 * different compilers agree. fp32's payload sets a copy instead of adding
 * to it (gossip/codec.h): its error feedback is 0 and mm_ef_encode works
 * with it, but it is no compression; mm_ef_combine refuses it. */
#ifndef MURMUR_EF_H
#define MURMUR_EF_H

#include <stddef.h>
#include <stdint.h>

#include "gossip/codec.h"

/* One round's encode: e = beta e + (o - s), then out = Q(e) (cap bytes, at
 * least mm_codec_max_bytes; *len written) and e -= decode(out). scratch:
 * n floats of workspace (overwritten). key: randk's key (mm_codec_key),
 * ignored by the other codecs. Errors as mm_codec_encode: MM_CODEC_E_INPUT
 * when e, o or s holds a NaN or an infinity (e is then partly updated: the
 * run has a broken model anyway), MM_CODEC_E_SPACE. */
mm_codec_err mm_ef_encode(mm_codec *c, float *e, const float *o, const float *s, size_t n,
                          float beta, float *scratch, uint64_t key, uint8_t *out, size_t cap,
                          size_t *len, char *why, size_t whylen);

/* The round's average from the n_peers payloads p[j] (len[j] bytes each,
 * in peer order, each already passed by mm_codec_check for a codec of the
 * same spec and n: the transport checks every body it receives, and our
 * own is our encoder's): y = o - (sum_j decode(p[j])) / n_peers, computed
 * as the sum y = 0 + decode(p[0]) + ... in binary32 (the codec's copy
 * update), then y_k = o_k - y_k / n_peers. MM_CODEC_E_OVERFLOW when the sum
 * overflows (y is then not usable); MM_CODEC_E_INPUT for fp32 (its payload
 * is no difference) or n_peers < 1. */
mm_codec_err mm_ef_combine(const mm_codec *c, const uint8_t *const *p, const size_t *len,
                           int n_peers, const float *o, float *y, char *why, size_t whylen);

#endif
