/* Test-only: a neighbour that sends what an honest murmur never does
 * (murmur node --test-poison KIND), as the transport's tamper hook
 * (mm_transport_config.tamper, net/transport.h): every outgoing vector is
 * made wrong the way KIND says, before the transport frames it. It lives
 * here, not in net/, because some kinds need the agreed codec.
 *
 * Kinds:
 *   nan, inf       one float of an fp32 body becomes NaN / +Inf (the
 *                  receiver refuses the frame, bad_values)
 *   huge           every float x of an fp32 body becomes
 *                  (x + 1) * MM_POISON_HUGE_SCALE: finite, so delivered
 *   scale=X        every float of an fp32 body times X (strtod): -1 flips
 *                  the sign of the parameters; finite, so delivered
 *   weight=X       the vector as it is, with push-sum weight X (strtod)
 *   reset-codec    (--compress) a RESET in the agreed codec, and every q
 *                  flagged RESET: a valid body of that codec (bad_codec)
 *   reset-short    (--compress) every RESET a float short (bad_length)
 *   reset-long     (--compress) every RESET a float long (bad_length)
 *   reset-huge     (--compress) every frame a valid RESET of the floats
 *                  +1e38, -1e38 in turn, its copy_crc theirs: mixed, unless
 *                  the receiver clips
 *   q-cut          (--compress, a streamed q) the last chunk of every
 *                  streamed q a byte short: refused at its end (bad_codec,
 *                  or bad_length for fp32), after the chunks before it were
 *                  applied
 *   q-huge         (--compress int8) every q valid int8 of the largest
 *                  reach, every scale 2^120 and every code +127 (then -127
 *                  in the next q to that receiver, so its copy stays
 *                  finite), copy_crc what the receiver's copy becomes
 *                  (followed from the RESETs sent to it): mixed, unless
 *                  the receiver clips */
#ifndef MURMUR_NODE_POISON_H
#define MURMUR_NODE_POISON_H

#include <stddef.h>
#include <stdint.h>

#include "gossip/codec.h"
#include "net/wire.h"

#define MM_POISON_HUGE_SCALE 1000.0f

typedef struct mm_poison mm_poison;

/* Whether kind is one of the kinds above (for the option's parser). */
int mm_poison_kind_ok(const char *kind);

/* A poisoner of vectors of vec_len floats sent in the codec spec (NULL:
 * fp32) to n_peers peers. NULL with the reason in err: an unknown kind, a
 * codec that does not build, out of memory. */
mm_poison *mm_poison_new(const char *kind, const mm_codec_spec *spec, uint64_t vec_len,
                           uint32_t n_peers, char *err, size_t errlen);
void mm_poison_free(mm_poison *p);

/* The transport's tamper hook (ud: an mm_poison). */
int mm_poison_tamper(void *ud, uint32_t to, mm_wire_vec *m, const void **body, size_t *len,
                      uint8_t **owned);

#endif
