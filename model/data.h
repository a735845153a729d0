/* The training text: the Brown corpus, prepared by `make data` (see
 * scripts/fetch-brown.sh and docs/formats.md), or a directory of the user's
 * own text (`murmur data-prepare --text`), as a directory holding the plain
 * text of every file and an index with each file's genre (label).
 *
 * The train/validation split is by file and deterministic, the same on
 * every peer. The training files are then partitioned across n peers:
 *   iid             - every peer gets its own disjoint share of every genre
 *   genre           - non-IID: every peer gets whole genres
 *   dirichlet:ALPHA - each peer's mix of genres drawn from Dirichlet(ALPHA
 *                     times the corpus's genre shares), from a seed
 * A peer reads only its own shard (and the validation sample). */
#ifndef MURMUR_DATA_H
#define MURMUR_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"

typedef enum { MM_PART_IID, MM_PART_GENRE, MM_PART_DIRICHLET } mm_part_kind;

/* How training files are split across peers. The zero value is iid. */
typedef struct {
    mm_part_kind kind;
    double alpha;      /* dirichlet: the concentration, > 0 */
    uint64_t seed;     /* dirichlet: seeds the draws */
    bool seed_given;   /* dirichlet:ALPHA:SEED named the seed; otherwise the
                        * command fills seed with its run's --seed */
    char name[48];     /* as parsed, canonical: "iid", "dirichlet:0.1", ... */
} mm_partition;

#define MM_DIRICHLET_ALPHA_MAX 1e6

/* "iid", "genre", "dirichlet:ALPHA" or "dirichlet:ALPHA:SEED" -> *p.
 * 0, or -1 with what is wrong in err. */
int mm_partition_parse(const char *s, mm_partition *p, char *err, size_t errlen);
/* The canonical name: p->name when parsed, else the kind's. */
const char *mm_partition_name(const mm_partition *p);

/* --- the index (docs/formats.md) ------------------------------------------ */

#define MM_DATA_INDEX "index.tsv"
#define MM_DATA_NAME_MAX 32

typedef struct {
    char name[MM_DATA_NAME_MAX];   /* "ca01"; the text is in DIR/ca01.txt */
    char genre[MM_DATA_NAME_MAX];
    size_t bytes;
    uint8_t sha256[32];
    int genre_id;                  /* position of the genre in first-seen order */
    int val;                       /* 1: validation file (the split rule below) */
} mm_data_file;

typedef struct {
    mm_data_file *files;
    int n_files;
    int n_genres;
    char (*genres)[MM_DATA_NAME_MAX]; /* in first-seen order */
} mm_data_index;

/* Parses DIR/index.tsv and applies the split: within each genre, in index
 * order, files 0, 10, 20, ... are validation files, the rest training.
 * Returns 0, or -1 with a message naming the file and line. */
int mm_data_index_load(mm_data_index *ix, const char *data_dir, char *err, size_t errlen);
void mm_data_index_free(mm_data_index *ix);

/* owner[i] for every file i of the index: the peer (0..n_peers-1) whose
 * shard holds training file i, -1 for a validation file, and -2 for a
 * training file nobody gets (dirichlet's leftovers; iid and genre use
 * every file). Deterministic: depends on the index and (part, n_peers)
 * only. Fails when some peer would get no file. */
int mm_data_assign(const mm_data_index *ix, const mm_partition *part, int n_peers, int *owner,
                   char *err, size_t errlen);

/* The Dirichlet partition (model/data_dirichlet.c, docs/formats.md): the
 * training files of the index (train_files[g] per genre) over n_peers. */
int mm_data_assign_dirichlet(const mm_data_index *ix, double alpha, uint64_t seed, int n_peers,
                             int *owner, char *err, size_t errlen);

/* Checks every file of the index (size and SHA-256). */
int mm_data_verify(const char *data_dir, char *err, size_t errlen);

/* Reads DIR/NAME.txt of d into dst (d->bytes bytes), checking its size and
 * SHA-256 against the index entry. */
int mm_data_read_file(const char *data_dir, const mm_data_file *d, uint8_t *dst,
                      char *err, size_t errlen);

/* Writes DIR/index.tsv for files[0..n) (genre_id and val are not stored:
 * they follow from the order), with an optional comment line `note`. */
int mm_data_index_write(const char *data_dir, const mm_data_file *files, int n,
                        const char *note, char *err, size_t errlen);

/* --- one peer's shard ------------------------------------------------------ */

typedef struct {
    uint8_t *train;          /* this peer's training bytes (its files, each followed by '\n') */
    size_t train_len;
    uint8_t *val;            /* the shared validation bytes */
    size_t val_len;
    int n_files;             /* files in this peer's shard */
    char genres[256];        /* the genres in this shard, comma-separated */
    /* The validation text's labels: the index's genres (every one, in
     * first-seen order, whether this peer trains on it or not) and, per
     * validation file in the order val holds them, where it starts in val
     * (its newline belongs to it) and its genre. */
    int n_labels;
    char (*labels)[MM_DATA_NAME_MAX];
    int n_val_files;
    size_t *val_start;       /* increasing, val_start[0] = 0 */
    int *val_label;          /* index into labels */
} mm_shard;

/* The shard member `id` trains on in a run that started with n_start
 * peers (docs/formats.md, "Ids beyond the starting set"): a starting peer
 * (id < n_start) its own, any other id the shard of peer id mod n_start,
 * always under the partition of n_start peers: the peer to pass to
 * mm_shard_load with n_peers = n_start. So the starting peers' shards never
 * change when others join, and a joiner trains on one of theirs. -1 when
 * n_start < 1. */
int mm_shard_of_id(uint32_t id, int n_start);

/* Load peer `peer` of `n_peers` from a prepared data directory. Returns 0, or
 * -1 with a message naming the file and what is wrong (missing, truncated,
 * corrupted: the index holds a checksum of every file). */
int mm_shard_load(mm_shard *s, const char *data_dir, const mm_partition *part,
                  int peer, int n_peers, char *err, size_t errlen);
void mm_shard_free(mm_shard *s);

/* The shard's training text as the index counts it (murmur data-info): its
 * files' own bytes, without the newline the shard adds after each. */
size_t mm_shard_text_bytes(const mm_shard *s);

/* Fill tokens[B*(T+1)] with B random windows of T+1 bytes from the shard's
 * training text, drawn with rng (so a checkpointed rng resumes the stream). */
void mm_batch_sample(const mm_shard *s, mm_rng *rng, uint8_t *tokens, int B, int T);

/* The fixed validation sample: window k (0 <= k < n) of T+1 bytes, the same
 * on every peer and every run. */
void mm_val_window(const mm_shard *s, int k, int n, uint8_t *tokens, int T);
/* Where validation window k of n (of T+1 bytes) starts in val. */
size_t mm_val_window_offset(const mm_shard *s, int k, int n, int T);
/* The label of the validation byte at offset off (the last file's for an
 * offset at or past the end: the padding of a short window); -1 when the
 * shard has no validation files. */
int mm_val_label_at(const mm_shard *s, size_t off);

#endif
