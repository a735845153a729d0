/* Compressed gossip in the peer's round: CHOCO-SGD (gossip/choco.h) with
 * the public copies kept in agreement across timeouts, restarts and
 * time-varying graphs (docs/compression.md, "Copies in a running cluster";
 * the frames in docs/protocol.md 3.2). Training thread only; it talks to
 * the network through the mailbox like the rest of the round (node/round.c);
 * its entry in the algorithm table is mm__algo_choco (node/algo.h).
 *
 * Sender: every exchange encodes q = Q(x - x_hat_i) once (x_hat_i moves)
 * and sends it to each out-neighbour that holds x_hat_i as it was before
 * this q; any other out-neighbour gets a RESET (x_hat_i after this q, fp32).
 * A dense codec's q of more than one chunk is streamed: each chunk goes to
 * the loop (which seals and sends it) as soon as it is encoded.
 * An out-neighbour holds it when it got the previous q or RESET on the
 * connection that is up now and no send to it was dropped or failed since.
 *
 * Receiver: a copy of in-neighbour j is valid from a RESET of j until j's
 * connection changes; a q is applied to a valid copy of the same
 * connection, in arrival order (also a q of an exchange already given up
 * on), and its copy_crc compared; a q for a copy that is not valid is
 * ignored (counted) until the RESET comes. A streamed q is applied chunk
 * by chunk as they come. Only a valid copy whose q (every chunk of it) or
 * RESET of this exchange was applied is mixed; the others count as
 * missing, as does one whose stream was cut short (until its RESET).
 *
 * Internal to node/ (mm__). */
#ifndef MURMUR_ALGO_CHOCO_H
#define MURMUR_ALGO_CHOCO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gossip/codec.h"
#include "gossip/mix.h"
#include "gossip/topology.h"
#include "node/mailbox.h"
#include "node/node.h"

typedef struct mm__choco mm__choco;

/* The default budget for --choco-memory-mb. */
#define MM__CHOCO_MEMORY_MB 2048

/* The part of mm__choco_new's checks that needs no model: the codec spec
 * parses (into *spec), the algorithm is dpsgd, the gamma (*gamma:
 * --consensus-step or the codec's default) in (0, 1]. 0, or MM_EXIT_USAGE
 * with the reason in err. */
int mm__choco_check(const mm_node_config *c, mm_codec_spec *spec, double *gamma, char *err,
                    size_t errlen);

/* mm__choco_check, then what the state of peer id of topo on P parameters
 * would take against --choco-memory-mb, allocating none of it (the codec
 * only, for its workspace's size): the check before the start and
 * --dry-run's, with mm__choco_new's own words. 0, or the exit status with
 * why in err. */
int mm__choco_budget(const mm_node_config *c, const mm_topology *topo, uint32_t id, size_t P,
                     char *err, size_t errlen);

/* For peer id of topo with P parameters x (x_hat_i starts as x), into
 * *out. 0; or, with the reason in err, MM_EXIT_USAGE for what
 * mm__choco_check refuses and a state over c->choco_memory_mb,
 * MM_EXIT_ERROR when out of memory. */
int mm__choco_new(const mm_node_config *c, const mm_topology *topo, uint32_t id,
                  const float *x, size_t P, mm__choco **out, char *err, size_t errlen);
void mm__choco_free(mm__choco *ch);

/* Bytes of a mailbox buffer: a payload (whole or its chunks, each
 * 8-aligned), then (8-aligned) a RESET body. */
size_t mm__choco_buf_bytes(const mm__choco *ch);
/* The chunks a q is streamed in (a dense codec and a vector longer than
 * a chunk), or 0: whole frames; *chunk_bytes the largest chunk's body. */
int mm__choco_chunks(const mm__choco *ch, size_t *chunk_bytes);
/* The wire's view of the codec (HELLO fields, the largest body). */
void mm__choco_wire(const mm__choco *ch, uint8_t *codec, uint32_t *block, double *frac,
                    uint64_t *max_body);
double mm__choco_gamma(const mm__choco *ch);
const char *mm__choco_spec(const mm__choco *ch);
/* What the state takes (the copies, the extra buffer bytes, the codec's
 * workspace) and how many copies of in-neighbours it may hold. */
uint64_t mm__choco_bytes(const mm__choco *ch);
int mm__choco_in_peers(const mm__choco *ch);

/* Exchange e: encode x into mailbox buffer b (acquired, not published) and
 * send it to v's out-neighbours, as q or RESET. 0, or -1 (err) when x has
 * a NaN or an infinity. */
int mm__choco_send(mm__choco *ch, mm__mbox *mb, int b, uint64_t e, const float *x,
                   const mm_round_view *v, char *err, size_t errlen);

/* A vector from peer pv came out of the mailbox (the caller releases it):
 * applied to its copy (a chunk of a streamed q: to its part of the copy).
 * READY when the copy is valid afterwards and this frame completed it (a
 * RESET, a whole q or a stream's last chunk; the caller decides by
 * pv->exchange whether it is this exchange's), PART when it was a chunk
 * applied and more of its stream is to come, NO otherwise (the copy not
 * valid, or the rest of a stream that was ignored or diverged). */
typedef enum { MM__TAKE_NO, MM__TAKE_PART, MM__TAKE_READY } mm__take;
mm__take mm__choco_take(mm__choco *ch, uint32_t peer, const mm__peer_view *pv);
/* peer's copy, for the mix (NULL when not valid). */
const float *mm__choco_copy(const mm__choco *ch, uint32_t peer);

/* The consensus step, x += gamma sum_j W_ij (x_hat_j - x_hat_i), in[k].x
 * the copies (NULL: missing); with clip on (--clip-pull, --robust-clip)
 * each pull x_hat_j - x_hat_i clipped by its rule (gossip/robust.h). */
void mm__choco_mix(mm__choco *ch, float *x, double self_weight, mm_mix_input *in, int n_in,
                   mm_clip *clip);

typedef struct {
    uint64_t resets_sent, resets_recv;
    uint64_t ignored;     /* q for a copy not valid (waiting for a RESET) */
    uint64_t diverged;    /* copy_crc differed after applying a q (or a RESET) */
} mm__choco_stats;
void mm__choco_get_stats(const mm__choco *ch, mm__choco_stats *out);

#endif
