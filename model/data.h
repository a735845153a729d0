/* The training text: the Brown corpus, prepared by `make data` (see
 * scripts/fetch-brown.sh and docs/formats.md) into a directory holding the
 * plain text of every file and an index with each file's genre.
 *
 * The train/validation split is by file and deterministic, the same on
 * every peer. The training files are then partitioned across n peers:
 *   iid   - every peer gets its own disjoint share of every genre's files
 *   genre - non-IID: every peer gets whole genres
 * A peer reads only its own shard (and the validation sample). */
#ifndef MURMUR_DATA_H
#define MURMUR_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "model/rng.h"

typedef enum { MM_PART_IID, MM_PART_GENRE } mm_partition;

/* "iid" / "genre" -> partition; -1 if unknown. */
int mm_partition_parse(const char *s);
const char *mm_partition_name(mm_partition p);

typedef struct {
    uint8_t *train;          /* this peer's training bytes (its files, concatenated) */
    size_t train_len;
    uint8_t *val;            /* the shared validation bytes */
    size_t val_len;
    int n_files;             /* files in this peer's shard */
    char genres[256];        /* the genres in this shard, comma-separated */
} mm_shard;

/* Load peer `peer` of `n_peers` from a prepared data directory. Returns 0, or
 * -1 with a message naming the file and what is wrong (missing, truncated,
 * corrupted: the index holds a checksum of every file). */
int mm_shard_load(mm_shard *s, const char *data_dir, mm_partition part,
                  int peer, int n_peers, char *err, size_t errlen);
void mm_shard_free(mm_shard *s);

/* Fill tokens[B*(T+1)] with B random windows of T+1 bytes from the shard's
 * training text, drawn with rng (so a checkpointed rng resumes the stream). */
void mm_batch_sample(const mm_shard *s, mm_rng *rng, uint8_t *tokens, int B, int T);

/* The fixed validation sample: window k (0 <= k < n) of T+1 bytes, the same
 * on every peer and every run. */
void mm_val_window(const mm_shard *s, int k, int n, uint8_t *tokens, int T);

#endif
