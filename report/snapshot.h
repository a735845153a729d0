/* Parameter snapshots, RUN/node-K/snap/rNNNNNNNN.bin: one peer's exact
 * parameter vector at the start of one round (docs/metrics.md gives the
 * byte layout and the timing). They give the report the exact consensus
 * distance and the averaged model. This file owns the format: the node
 * writes with mm_snapshot_write, the report streams with the reader below,
 * tests write with the same writer. */
#ifndef MURMUR_SNAPSHOT_H
#define MURMUR_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#define MM_SNAPSHOT_MAGIC "MMSNAP01"
#define MM_SNAPSHOT_HEADER 32   /* magic, u32 peer, u32 0, u64 round, u64 n */
#define MM_SNAPSHOT_DIGEST 32   /* SHA-256 of everything before it */

/* RUN/node-K/snap/rNNNNNNNN.bin */
void mm_snapshot_path(const char *run_dir, int peer, int64_t round, char *out, size_t len);

/* Writes peer's n floats x at round, atomically (base/fs.h), creating the
 * snap/ directory. 0, or -1 with the reason in err. */
int mm_snapshot_write(const char *run_dir, int peer, int64_t round, const float *x, size_t n,
                      char *err, size_t errlen);

/* Streaming reader: the header is checked at open (magic, peer, round, and
 * that the file size matches n), the values are read in pieces, and the
 * SHA-256 is checked at the end over the same pass. */
typedef struct mm_snapshot_reader mm_snapshot_reader;

mm_snapshot_reader *mm_snapshot_open(const char *run_dir, int peer, int64_t round, char *err,
                                     size_t errlen);
uint64_t mm_snapshot_count(const mm_snapshot_reader *s);   /* n, the floats it holds */
const char *mm_snapshot_file(const mm_snapshot_reader *s); /* its path, for messages */
/* The next m floats. 0, or -1 (short file) with the reason in err. */
int mm_snapshot_read(mm_snapshot_reader *s, float *out, size_t m, char *err, size_t errlen);
/* After all n floats: 0 when the SHA-256 matches, else -1 with err. */
int mm_snapshot_verify(mm_snapshot_reader *s, char *err, size_t errlen);
void mm_snapshot_close(mm_snapshot_reader *s);

#endif
