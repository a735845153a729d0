/* report/snapshot.h: the snapshot file format, written and read here only. */
#include "report/snapshot.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/sha256.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "snapshots are little-endian memory images; port the writer and reader first"
#endif


void mm_snapshot_path(const char *run_dir, int peer, int64_t round, char *out, size_t len)
{
    snprintf(out, len, "%s/node-%d/snap/r%08lld.bin", run_dir, peer, (long long)round);
}

int mm_snapshot_write(const char *run_dir, int peer, int64_t round, const float *x, size_t n,
                      char *err, size_t errlen)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/node-%d/snap", run_dir, peer) >= sizeof path) {
        snprintf(err, errlen, "snapshot: run directory path too long");
        return -1;
    }
    if (mm_mkdir_p(path, err, errlen) != 0)
        return -1;
    mm_snapshot_path(run_dir, peer, round, path, sizeof path);
    size_t len = MM_SNAPSHOT_HEADER + n * sizeof(float) + MM_SNAPSHOT_DIGEST;
    unsigned char *buf = malloc(len);
    if (!buf) {
        snprintf(err, errlen, "snapshot %s: out of memory for %zu bytes", path, len);
        return -1;
    }
    uint32_t p = (uint32_t)peer, reserved = 0;
    uint64_t r = (uint64_t)round, count = n;
    memcpy(buf, MM_SNAPSHOT_MAGIC, 8);
    memcpy(buf + 8, &p, 4);
    memcpy(buf + 12, &reserved, 4);
    memcpy(buf + 16, &r, 8);
    memcpy(buf + 24, &count, 8);
    memcpy(buf + MM_SNAPSHOT_HEADER, x, n * sizeof(float));
    mm_sha256(buf, len - MM_SNAPSHOT_DIGEST, buf + len - MM_SNAPSHOT_DIGEST);
    int rc = mm_write_atomic(path, buf, len, err, errlen);
    free(buf);
    return rc;
}

struct mm_snapshot_reader {
    FILE *f;
    mm_sha256_ctx md;
    uint64_t n, done;
    char path[PATH_MAX];
};

static uint32_t le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t le64(const unsigned char *b) { return (uint64_t)le32(b) | (uint64_t)le32(b + 4) << 32; }

mm_snapshot_reader *mm_snapshot_open(const char *run_dir, int peer, int64_t round, char *err,
                                     size_t errlen)
{
    mm_snapshot_reader *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "snapshot: out of memory");
        return NULL;
    }
    mm_snapshot_path(run_dir, peer, round, s->path, sizeof s->path);
    unsigned char h[MM_SNAPSHOT_HEADER];
    struct stat st;
    s->f = fopen(s->path, "rb");
    if (!s->f || fstat(fileno(s->f), &st) != 0) {
        snprintf(err, errlen, "%s: %s", s->path, strerror(errno));
        goto fail;
    }
    if (fread(h, 1, sizeof h, s->f) != sizeof h || memcmp(h, MM_SNAPSHOT_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not a snapshot (bad magic or short header)", s->path);
        goto fail;
    }
    if (le32(h + 8) != (uint32_t)peer || le64(h + 16) != (uint64_t)round || le32(h + 12) != 0) {
        snprintf(err, errlen, "%s: header says peer %u round %llu, expected peer %d round %lld",
                 s->path, le32(h + 8), (unsigned long long)le64(h + 16), peer, (long long)round);
        goto fail;
    }
    s->n = le64(h + 24);
    if (s->n == 0 || s->n > (uint64_t)1 << 40 ||
        (uint64_t)st.st_size != MM_SNAPSHOT_HEADER + 4 * s->n + MM_SNAPSHOT_DIGEST) {
        snprintf(err, errlen, "%s: %llu parameters but the file has %lld bytes", s->path,
                 (unsigned long long)s->n, (long long)st.st_size);
        goto fail;
    }
    mm_sha256_init(&s->md);
    mm_sha256_update(&s->md, h, sizeof h);
    return s;
fail:
    mm_snapshot_close(s);
    return NULL;
}

uint64_t mm_snapshot_count(const mm_snapshot_reader *s) { return s->n; }
const char *mm_snapshot_file(const mm_snapshot_reader *s) { return s->path; }

int mm_snapshot_read(mm_snapshot_reader *s, float *out, size_t m, char *err, size_t errlen)
{
    if (m > s->n - s->done || fread(out, sizeof(float), m, s->f) != m) {
        snprintf(err, errlen, "%s: short read", s->path);
        return -1;
    }
    mm_sha256_update(&s->md, out, m * sizeof(float));
    s->done += m;
    return 0;
}

int mm_snapshot_verify(mm_snapshot_reader *s, char *err, size_t errlen)
{
    unsigned char want[MM_SNAPSHOT_DIGEST], got[MM_SHA256_LEN];
    mm_sha256_final(&s->md, got);
    if (s->done != s->n || fread(want, 1, sizeof want, s->f) != sizeof want ||
        memcmp(want, got, MM_SNAPSHOT_DIGEST) != 0) {
        snprintf(err, errlen, "%s: SHA-256 mismatch (file damaged); not used", s->path);
        return -1;
    }
    return 0;
}

void mm_snapshot_close(mm_snapshot_reader *s)
{
    if (!s)
        return;
    if (s->f)
        fclose(s->f);
    if (s->md.md) {
        unsigned char d[MM_SHA256_LEN];
        mm_sha256_final(&s->md, d); /* frees libcrypto's context */
    }
    free(s);
}
