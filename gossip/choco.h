/* CHOCO-Gossip (Koloskova, Stich, Jaggi, ICML 2019) as pure functions over
 * flat float vectors: the arithmetic of one compressed gossip round, for
 * the node to call. No state is kept here; the caller owns every vector.
 *
 * Each peer i holds its parameters x and public copies x_hat: one of
 * itself (x_hat_i) and one of each in-neighbour j (x_hat_j, as i last
 * reconstructed it). Every out-neighbour of i holds a copy of x_hat_i that
 * is bit-identical to i's own, as long as it applied every q i sent. One
 * round of peer i:
 *
 *   1. q_i = Q(x - x_hat_i); x_hat_i += decode(q_i)     mm_choco_encode
 *      send q_i to every out-neighbour (the same bytes to all)
 *   2. for each in-neighbour j, on q_j:
 *      x_hat_j += decode(q_j)                          mm_choco_receive
 *   3. x <- x + gamma * sum_j W_ij (x_hat_j - x_hat_i)  mm_choco_mix
 *
 * With local SGD steps (CHOCO-SGD) x moves between rounds as usual; step 1
 * may run on a snapshot taken before the steps (murmur's overlapped round)
 * and step 3 on x after them: step 3 reads only the copies.
 *
 * Steps 1 and 2 return CRC32C of the copy they updated: the sender's CRC of
 * x_hat_i after step 1 equals every receiver's CRC of its copy after step 2,
 * so a later wire format can carry it and detect a copy that diverged (a
 * lost q, a restart). A copy that is not known to match must not be mixed:
 * pass it as missing (its weight goes back to self) until it is reset.
 *
 * fp32 is the exact codec: its q is x itself and a copy is set to it, so
 * with gamma = 1 a round is D-PSGD, and mm_choco_mix gives bit for bit the
 * x of mm_mix_round (gossip/mix.h) on the same inputs: x_hat_i plays the
 * snapshot s, the copies the received vectors (tests/test_choco.c).
 *
 * Resetting a copy that diverged needs no other function: an fp32 payload
 * (a codec made with the fp32 spec and the same n) sets a copy to the
 * sender's x exactly; the sender encodes it with its own copy as ref, so
 * both ends then hold x_hat_i = x bit for bit.
 *
 * Memory: (1 + in-degree) copies of n floats, plus payload buffers of
 * mm_codec_max_bytes and the codec's workspace: mm_choco_state_bytes().
 * Nothing here allocates. */
#ifndef MURMUR_CHOCO_H
#define MURMUR_CHOCO_H

#include <stddef.h>
#include <stdint.h>

#include "gossip/codec.h"
#include "gossip/mix.h"

/* Step 1: out = Q(x - x_hat_self), and x_hat_self updated to what every
 * receiver of out will hold; *crc (may be NULL) is CRC32C of x_hat_self
 * afterwards. key: randk's key for this exchange (mm_codec_key). Errors as
 * mm_codec_encode (on MM_CODEC_E_INPUT x has a NaN/Inf: a broken model). */
mm_codec_err mm_choco_encode(mm_codec *c, const float *x, float *x_hat_self, uint64_t key,
                             uint8_t *out, size_t cap, size_t *len, uint32_t *crc,
                             char *why, size_t whylen);

/* Step 2: x_hat_j += decode(q_j) for a payload from an untrusted peer
 * that mm_codec_check has passed (the peer's transport checks every body
 * before lending it: check_body); *crc (may be NULL) is CRC32C of x_hat_j
 * afterwards. mm_codec_apply_checked: only MM_CODEC_E_OVERFLOW comes
 * back (x_hat_j diverged). */
mm_codec_err mm_choco_receive(const mm_codec *c, const uint8_t *q, size_t len, float *x_hat_j,
                              uint32_t *crc, char *why, size_t whylen);

/* Floats per chunk of a q that murmur node streams (a dense codec, a
 * vector longer than this; docs/protocol.md 6.10): a multiple of every
 * block size, so the chunks encode to the floats of a whole encode; 128 K
 * floats is 130 KB of int8, so a vector of 1 M floats goes in 8 chunks
 * (docs/compression.md, "Streaming"). */
#define MM_CHOCO_CHUNK ((uint64_t)1 << 17)

/* The chunk for a vector of n floats: MM_CHOCO_CHUNK, or for a vector of
 * more than 32 of them the multiple of it that makes 32 to 63 chunks
 * (fewer frames and wakes a q: 16 M floats in 32 chunks of 512 K). */
static inline uint64_t mm_choco_chunk(uint64_t n)
{
    uint64_t k = n / (32 * MM_CHOCO_CHUNK);
    return MM_CHOCO_CHUNK * (k ? k : 1);
}

/* Steps 1 and 2 for a part of the vector, floats off .. off+count-1 (a
 * payload streamed in chunks; a dense codec, gossip/codec.h "Parts"):
 * the part of q, with x_hat_self's part updated and *crc the CRC32C of
 * that part afterwards; and a received part added to x_hat_j's part,
 * *crc likewise. Encoding every part of a vector in turn gives exactly
 * the floats mm_choco_encode gives. */
mm_codec_err mm_choco_encode_part(mm_codec *c, const float *x, float *x_hat_self, uint64_t off,
                                  uint64_t count, uint8_t *out, size_t cap, size_t *len,
                                  uint32_t *crc, char *why, size_t whylen);
mm_codec_err mm_choco_receive_part(const mm_codec *c, uint64_t off, uint64_t count,
                                   const uint8_t *q, size_t len, float *x_hat_j, uint32_t *crc,
                                   char *why, size_t whylen);

/* Step 3, the consensus step, in one pass over x (the copies are read
 * once each, x read and written once, in blocks that stay in L1):
 *
 *   x <- x + gamma * sum_j W_ij (x_hat_j - x_hat_self) / r,   r = W_ii + sum_j W_ij
 *
 * in[k].x is x_hat_j (NULL: missing this round, its weight goes back to
 * self, as in mm_mix_round), in[k].weight is W_ij, in[k].w is ignored, and
 * in[k].dist receives ||x_hat_j - x_hat_self|| (NaN when missing). Rows
 * summing to 1 (r = 1) are the usual case; r only guards rounding.
 * Exactly the coefficients of mm_mix_round with W' = (1 - gamma) I +
 * gamma W (no push-sum, no clip): for gamma = 1 the same floats in the same
 * order, so x is bit-identical to mm_mix_round's. The distances come from
 * a faster sum than mm_mix_round's and may differ in the last bits.
 * Returns 0; -1 (x untouched) unless 0 < gamma <= 1. */
int mm_choco_mix(float *x, const float *x_hat_self, size_t n, double self_weight,
                 mm_mix_input *in, int n_in, double gamma);

/* Step 3 with every pull x_hat_j - x_hat_i clipped by clip's rule
 * (gossip/robust.h): in[k].dist = ||x_hat_j - x_hat_i|| measured first,
 * then the radius tau, then x_hat_j enters as if it stood at
 * x_hat_i + min(1, tau / dist) (x_hat_j - x_hat_i), the weight it loses
 * going to x_hat_i. So one neighbour moves x by at most gamma W_ij tau in
 * a mix, whatever its copy holds. clip NULL or off: mm_choco_mix, bit for
 * bit. Returns as mm_choco_mix. */
int mm_choco_mix_clip(float *x, const float *x_hat_self, size_t n, double self_weight,
                      mm_mix_input *in, int n_in, double gamma, mm_clip *clip);

/* CRC32C of a copy's bytes (n floats, little-endian): what steps 1 and 2
 * return, for checking a copy at any other time. */
uint32_t mm_choco_crc(const float *copy, size_t n);

/* The gamma docs/compression.md recommends for a codec, from the ring
 * simulation there (1 for fp32). */
double mm_choco_default_gamma(const mm_codec_spec *spec);

/* Bytes a peer with this codec and in_degree in-neighbours needs beyond
 * its parameters: its own copy and one per in-neighbour (4 n each), a
 * send buffer and a receive buffer per in-neighbour (mm_codec_max_bytes
 * each), and the codec's workspace. For a memory budget. */
uint64_t mm_choco_state_bytes(const mm_codec *c, int in_degree);

#endif
