/* What the peer's two sides share inside node/ (the mm__ prefix: internal,
 * not part of murmur's API). node.c is the process and the loop thread;
 * the training thread, which owns the parameters, is node/trainer.h's
 * files (round.c the round, algo_*.c the algorithms). They meet
 * only in the mailbox (node/mailbox.h). */
#ifndef MURMUR_NODE_INT_H
#define MURMUR_NODE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gossip/topology.h"
#include "node/mailbox.h"
#include "node/node.h"

typedef struct mm__trainer mm__trainer;

/* mm_node_config_check (node/check.c), keeping the topology it loaded
 * (*topo, NULL without c->topology; the caller frees it, also on a
 * refusal). 0, or the exit status with why in err. */
int mm__node_check(const mm_node_config *c, mm_topology **topo, char *err, size_t errlen);

/* Builds this peer's replica (the model and its shard, or a plain vector
 * with --vector-len), resumes it from run_dir/node-K/checkpoint.bin with
 * --resume, and opens its metrics file, into *out. The topology must
 * outlive it. 0; or the exit status (MM_EXIT_USAGE for a configuration
 * refused: --compress, --outer; MM_EXIT_ERROR otherwise) with the reason
 * in err. */
int mm__trainer_new(const mm_node_config *c, uint32_t id, const mm_topology *topo,
                    const char *dir, mm__trainer **out, char *err, size_t errlen);
void mm__trainer_free(mm__trainer *tr);

/* Whether dir, a peer's node-K/, holds a run of that peer already: a
 * metrics line, a checkpoint or a snapshot (docs/metrics.md, "Run
 * directories"); what it holds is said in what. A directory a launcher
 * made (console.log, pid, stop) or that a start which failed before its
 * first metrics line left (node.log, an empty metrics.jsonl) holds none. */
bool mm__trainer_dir_holds_run(const char *dir, char *what, size_t len);

/* What the transport needs to know: the vector's length and fingerprint
 * (docs/protocol.md, HELLO). */
size_t mm__trainer_vec_len(const mm__trainer *tr);
void mm__trainer_fingerprint(const mm__trainer *tr, uint8_t fp[32]);
/* The mailbox's buffer size, and the codec the HELLO names (fp32 and 0s
 * without --compress) with the largest VECTOR body. */
size_t mm__trainer_buf_bytes(const mm__trainer *tr);
/* The most chunks of a send streamed through the mailbox (0: none), and
 * the largest chunk's body in *chunk_bytes. */
int mm__trainer_chunks(const mm__trainer *tr, size_t *chunk_bytes);
void mm__trainer_codec(const mm__trainer *tr, uint8_t *codec, uint32_t *block, double *frac,
                       uint64_t *max_body);

/* The training thread's body: every round until done or stopped, then the
 * end line and the final checkpoint; ends with mm__mbox_finish(mb). Its
 * exit status (0, or 1: parameters lost, final checkpoint failed) is in
 * mm__trainer_status afterwards. */
void mm__trainer_run(mm__trainer *tr, mm__mbox *mb);
int mm__trainer_status(const mm__trainer *tr);
/* --metrics-addr: publish each round's state there (before mm__trainer_run). */
typedef struct mm__exporter mm__exporter;
void mm__trainer_set_exporter(mm__trainer *tr, mm__exporter *e);
/* An elastic run: the membership table the training thread reads
 * (node/elastic.h); before mm__trainer_run. */
struct mm__elastic;
void mm__trainer_set_elastic(mm__trainer *tr, struct mm__elastic *e);
/* Whether the trainer runs elastic (a family topology), and its starting
 * members. */
bool mm__trainer_is_elastic(const mm__trainer *tr);
/* --algo allreduce: the schedule the node resolved (node/allreduce.h), for
 * the round view's partners; before the first round. */
void mm__trainer_set_allreduce(mm__trainer *tr, int schedule);

#endif
