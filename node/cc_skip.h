/* Consensus control below one exchange a round (--min-gossip-steps < 1):
 * per neighbour, the round its edge exchanges on next, agreed from both
 * ends' levels (gossip/consensus.h mm_consensus_edge_next; docs/node.md,
 * "Skipping rounds"). Edges start due in round 0; a due edge whose
 * neighbour did not come is due again the next round. */
#ifndef MURMUR_NODE_CC_SKIP_H
#define MURMUR_NODE_CC_SKIP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct mm__skip mm__skip;

mm__skip *mm__skip_new(uint32_t n_peers);
void mm__skip_free(mm__skip *s);
/* Whether the edge to peer exchanges in round. */
bool mm__skip_due(const mm__skip *s, uint32_t peer, long round);
/* After round's first exchange on a due edge: came = the neighbour's
 * vector came (and was mixed); self and its_level the two ends' levels. */
void mm__skip_done(mm__skip *s, uint32_t peer, long round, bool came, uint16_t self,
                   uint16_t its_level);

#endif
