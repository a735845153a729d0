/* The data index: parsing, writing, verifying, the train/validation split
 * and the partition of training files across peers. Every peer computes the
 * same split and partition from the same index, so no coordination is
 * needed: only the index must be the same everywhere. */
#include "model/data.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/sha256.h"

#define INDEX_MAGIC "# murmur-data 1"
#define MAX_FILES 100000
#define MAX_FILE_BYTES ((size_t)1 << 30)

int mm_partition_parse(const char *s, mm_partition *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (!strcmp(s, "iid") || !strcmp(s, "genre")) {
        p->kind = !strcmp(s, "iid") ? MM_PART_IID : MM_PART_GENRE;
        snprintf(p->name, sizeof p->name, "%s", s);
        return 0;
    }
    if (strncmp(s, "dirichlet:", 10) != 0) {
        snprintf(err, errlen, "expected iid, genre or dirichlet:ALPHA[:SEED], got '%s'", s);
        return -1;
    }
    const char *a = s + 10;
    char *end;
    errno = 0;
    double alpha = strtod(a, &end);
    if (end == a || errno || !(alpha > 0 && alpha <= MM_DIRICHLET_ALPHA_MAX) ||
        (*end && *end != ':') || isspace((unsigned char)*a)) {
        snprintf(err, errlen, "dirichlet:ALPHA: expected a number 0 < ALPHA <= %g, got '%.*s'",
                 MM_DIRICHLET_ALPHA_MAX, (int)strcspn(a, ":"), a);
        return -1;
    }
    p->kind = MM_PART_DIRICHLET;
    p->alpha = alpha;
    if (*end == ':') {
        const char *q = end + 1;
        errno = 0;
        unsigned long long v = strtoull(q, &end, 10);
        if (!isdigit((unsigned char)*q) || *end || errno) {
            snprintf(err, errlen, "dirichlet:ALPHA:SEED: expected a seed 0..2^64-1, got '%s'", q);
            return -1;
        }
        p->seed = v;
        p->seed_given = true;
        snprintf(p->name, sizeof p->name, "dirichlet:%g:%llu", alpha, v);
    } else {
        snprintf(p->name, sizeof p->name, "dirichlet:%g", alpha);
    }
    return 0;
}

const char *mm_partition_name(const mm_partition *p)
{
    if (p->name[0])
        return p->name;
    return p->kind == MM_PART_GENRE ? "genre" : p->kind == MM_PART_DIRICHLET ? "dirichlet" : "iid";
}

void mm_data_index_free(mm_data_index *ix)
{
    free(ix->files);
    free(ix->genres);
    memset(ix, 0, sizeof *ix);
}

static int valid_name(const char *s, size_t n)
{
    if (n == 0 || n >= MM_DATA_NAME_MAX || s[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
            return 0;
    return 1;
}

static int hex_digest(const char *s, size_t n, uint8_t out[32])
{
    if (n != 64)
        return -1;
    for (int i = 0; i < 32; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = s[2 * i + k];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= (unsigned)(c - 'a' + 10);
            else
                return -1;
        }
        out[i] = (uint8_t)v;
    }
    return 0;
}

/* Splits s at tabs into at most max fields; returns the count. */
static int fields(char *s, char **f, size_t *fl, int max)
{
    int n = 0;
    for (;;) {
        char *t = strchr(s, '\t');
        if (n == max)
            return max + 1;
        f[n] = s;
        fl[n] = t ? (size_t)(t - s) : strlen(s);
        n++;
        if (!t)
            return n;
        s = t + 1;
    }
}

/* Whether path is, or ends in, /suffix (or is suffix). */
static bool ends_in(const char *path, const char *suffix)
{
    size_t n = strlen(path), k = strlen(suffix);
    while (n > 1 && path[n - 1] == '/')
        n--; /* "data/brown/" */
    return n >= k && !strncmp(path + n - k, suffix, k) && (n == k || path[n - k - 1] == '/');
}

/* How to (re)make the prepared corpus in dir, for an error message: the
 * make target of the two the Makefile prepares, data-prepare for any
 * other (the user's own text, or Brown's files prepared elsewhere). */
static const char *remedy(const char *dir, char *buf, size_t len)
{
    if (ends_in(dir, "data/brown"))
        return "`make data` prepares it";
    if (ends_in(dir, "data/lang"))
        return "`make data-lang` prepares it";
    snprintf(buf, len, "prepare it with `murmur data-prepare --text YOUR_TEXT_DIR %s` (your own "
             "text, docs/formats.md) or `murmur data-prepare BROWN_DIR %s`; `make data` "
             "prepares data/brown", dir, dir);
    return buf;
}

int mm_data_index_load(mm_data_index *ix, const char *dir, char *err, size_t errlen)
{
    memset(ix, 0, sizeof *ix);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, MM_DATA_INDEX);
    char *text;
    size_t len;
    if (mm_read_file(path, &text, &len, 64u << 20, err, errlen) != 0) {
        char how[2 * 4096 + 200];
        if (errno == ENOENT)
            snprintf(err + strlen(err), errlen - strlen(err), " (no prepared corpus there: %s)",
                     remedy(dir, how, sizeof how));
        return -1;
    }
    if (strncmp(text, INDEX_MAGIC "\n", strlen(INDEX_MAGIC) + 1) != 0) {
        snprintf(err, errlen, "%s: not a murmur data index (first line must be '%s')", path,
                 INDEX_MAGIC);
        free(text);
        return -1;
    }
    if (memchr(text, '\0', len)) {
        snprintf(err, errlen, "%s: holds a NUL byte (corrupted)", path);
        free(text);
        return -1;
    }
    size_t cap = 0;
    int lineno = 0, rc = -1;
    /* Line by line without strtok, which would skip empty lines and make
     * the line numbers in messages wrong. */
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *f[4];
        size_t fl[4];
        mm_data_file d = {0};
        if (fields(line, f, fl, 4) != 4 || !valid_name(f[0], fl[0]) || !valid_name(f[1], fl[1]) ||
            hex_digest(f[3], fl[3], d.sha256) != 0) {
            snprintf(err, errlen, "%s: line %d: expected NAME<TAB>GENRE<TAB>BYTES<TAB>SHA256",
                     path, lineno);
            goto out;
        }
        char *end;
        errno = 0;
        unsigned long long b = strtoull(f[2], &end, 10);
        if (end != f[2] + fl[2] || fl[2] == 0 || errno || b == 0 || b > MAX_FILE_BYTES ||
            f[2][0] == '-') {
            snprintf(err, errlen, "%s: line %d: bad byte count '%.*s'", path, lineno,
                     (int)(fl[2] > 20 ? 20 : fl[2]), f[2]);
            goto out;
        }
        d.bytes = (size_t)b;
        memcpy(d.name, f[0], fl[0]);
        memcpy(d.genre, f[1], fl[1]);
        for (int i = 0; i < ix->n_files; i++)
            if (!strcmp(ix->files[i].name, d.name)) {
                snprintf(err, errlen, "%s: line %d: file %s listed twice", path, lineno, d.name);
                goto out;
            }
        d.genre_id = -1;
        for (int g = 0; g < ix->n_genres; g++)
            if (!strcmp(ix->genres[g], d.genre))
                d.genre_id = g;
        if (ix->n_files >= MAX_FILES) {
            snprintf(err, errlen, "%s: more than %d files", path, MAX_FILES);
            goto out;
        }
        if ((size_t)ix->n_files == cap) {
            cap = cap ? 2 * cap : 512;
            mm_data_file *nf = realloc(ix->files, cap * sizeof *nf);
            char(*ng)[MM_DATA_NAME_MAX] = realloc(ix->genres, cap * sizeof *ng);
            if (nf)
                ix->files = nf;
            if (ng)
                ix->genres = ng;
            if (!nf || !ng) {
                snprintf(err, errlen, "%s: out of memory", path);
                goto out;
            }
        }
        if (d.genre_id < 0) {
            d.genre_id = ix->n_genres;
            memcpy(ix->genres[ix->n_genres++], d.genre, sizeof d.genre);
        }
        ix->files[ix->n_files++] = d;
    }
    if (ix->n_files == 0) {
        snprintf(err, errlen, "%s: lists no files", path);
        goto out;
    }
    /* The split: the 1st, 11th, 21st ... file of every genre validates, so
     * every genre, even one with a handful of files, is in the validation set. */
    for (int g = 0; g < ix->n_genres; g++) {
        int k = 0;
        for (int i = 0; i < ix->n_files; i++)
            if (ix->files[i].genre_id == g)
                ix->files[i].val = (k++ % 10 == 0);
    }
    rc = 0;
out:
    free(text);
    if (rc != 0)
        mm_data_index_free(ix);
    return rc;
}

static int assign_iid(const mm_data_index *ix, int n_peers, int *owner)
{
    int base = 0;
    for (int g = 0; g < ix->n_genres; g++) {
        int j = 0;
        for (int i = 0; i < ix->n_files; i++)
            if (ix->files[i].genre_id == g && !ix->files[i].val)
                owner[i] = (base + j++) % n_peers;
        base += j;
    }
    return 0;
}

/* Whole genres per peer. With at most as many peers as genres, genres go
 * largest first to the peer with the fewest bytes so far. With more peers
 * than genres, every genre gets a group of peers sized by its number of
 * training files (D'Hondt: the next peer goes to the genre with the most
 * files per peer), and the genre's files are dealt round-robin within its
 * group; every peer still sees one genre only. */
static int assign_genre(const mm_data_index *ix, int n_peers, int *owner, int *train_files,
                        char *err, size_t errlen)
{
    int G = ix->n_genres;
    size_t *gbytes = calloc((size_t)G, sizeof *gbytes);
    int *gpeers = calloc((size_t)G, sizeof *gpeers);
    int *gbase = calloc((size_t)G, sizeof *gbase);
    size_t *pbytes = calloc((size_t)n_peers, sizeof *pbytes);
    int *gpeer = calloc((size_t)G, sizeof *gpeer);
    int rc = -1;
    if (!gbytes || !gpeers || !gbase || !pbytes || !gpeer) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int i = 0; i < ix->n_files; i++)
        if (!ix->files[i].val)
            gbytes[ix->files[i].genre_id] += ix->files[i].bytes;

    if (n_peers <= G) {
        int *done = gpeers; /* unused otherwise in this branch */
        for (int r = 0; r < G; r++) {
            int best = -1;
            for (int g = 0; g < G; g++)
                if (!done[g] && (best < 0 || gbytes[g] > gbytes[best]))
                    best = g;
            int p = 0;
            for (int q = 1; q < n_peers; q++)
                if (pbytes[q] < pbytes[p])
                    p = q;
            done[best] = 1;
            gpeer[best] = p;
            pbytes[p] += gbytes[best];
        }
        for (int i = 0; i < ix->n_files; i++)
            if (!ix->files[i].val)
                owner[i] = gpeer[ix->files[i].genre_id];
    } else {
        for (int g = 0; g < G; g++) {
            if (train_files[g] == 0) {
                snprintf(err, errlen, "genre %s has no training file", ix->genres[g]);
                goto out;
            }
            gpeers[g] = 1;
        }
        for (int extra = n_peers - G; extra > 0; extra--) {
            int best = -1;
            for (int g = 0; g < G; g++) {
                if (gpeers[g] >= train_files[g])
                    continue;
                /* files/peers largest: compare a/b > c/d as a*d > c*b */
                if (best < 0 || (long)train_files[g] * gpeers[best] >
                                    (long)train_files[best] * gpeers[g])
                    best = g;
            }
            if (best < 0) {
                snprintf(err, errlen, "more peers (%d) than training files", n_peers);
                goto out;
            }
            gpeers[best]++;
        }
        for (int g = 1; g < G; g++)
            gbase[g] = gbase[g - 1] + gpeers[g - 1];
        for (int g = 0; g < G; g++) {
            int j = 0;
            for (int i = 0; i < ix->n_files; i++)
                if (ix->files[i].genre_id == g && !ix->files[i].val)
                    owner[i] = gbase[g] + j++ % gpeers[g];
        }
    }
    rc = 0;
out:
    free(gbytes);
    free(gpeers);
    free(gbase);
    free(pbytes);
    free(gpeer);
    return rc;
}

int mm_data_assign(const mm_data_index *ix, const mm_partition *part, int n_peers, int *owner,
                   char *err, size_t errlen)
{
    if (n_peers < 1) {
        snprintf(err, errlen, "n_peers must be at least 1 (got %d)", n_peers);
        return -1;
    }
    int *train_files = calloc((size_t)ix->n_genres + 1, sizeof *train_files);
    int *per_peer = calloc((size_t)n_peers, sizeof *per_peer);
    int rc = -1, n_train = 0;
    if (!train_files || !per_peer) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int i = 0; i < ix->n_files; i++) {
        owner[i] = -1;
        if (!ix->files[i].val) {
            train_files[ix->files[i].genre_id]++;
            n_train++;
        }
    }
    if (n_peers > n_train) {
        snprintf(err, errlen, "%d peers but only %d training files: every peer needs one",
                 n_peers, n_train);
        goto out;
    }
    if (part->kind == MM_PART_GENRE) {
        if (assign_genre(ix, n_peers, owner, train_files, err, errlen) != 0)
            goto out;
    } else if (part->kind == MM_PART_DIRICHLET) {
        if (mm_data_assign_dirichlet(ix, part->alpha, part->seed, n_peers, owner, err, errlen) != 0)
            goto out;
    } else {
        assign_iid(ix, n_peers, owner);
    }
    for (int i = 0; i < ix->n_files; i++)
        if (owner[i] >= 0)
            per_peer[owner[i]]++;
    for (int p = 0; p < n_peers; p++)
        if (per_peer[p] == 0) {
            snprintf(err, errlen, "partition %s over %d peers leaves peer %d without files",
                     mm_partition_name(part), n_peers, p);
            goto out;
        }
    rc = 0;
out:
    free(train_files);
    free(per_peer);
    return rc;
}

int mm_data_read_file(const char *dir, const mm_data_file *d, uint8_t *dst, char *err,
                      size_t errlen)
{
    char path[4096], how[2 * 4096 + 200];
    snprintf(path, sizeof path, "%s/%s.txt", dir, d->name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s (%s again)", path, strerror(errno),
                 remedy(dir, how, sizeof how));
        return -1;
    }
    size_t got = fread(dst, 1, d->bytes, f);
    int extra = got == d->bytes ? fgetc(f) : EOF;
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: read error", path);
        return -1;
    }
    if (got != d->bytes || extra != EOF) {
        snprintf(err, errlen, "%s: %s: the index says %zu bytes (%s again)", path,
                 got < d->bytes ? "truncated" : "longer than expected", d->bytes,
                 remedy(dir, how, sizeof how));
        return -1;
    }
    uint8_t h[32];
    mm_sha256(dst, d->bytes, h);
    if (memcmp(h, d->sha256, 32) != 0) {
        snprintf(err, errlen, "%s: corrupted: its SHA-256 differs from the index (%s again)",
                 path, remedy(dir, how, sizeof how));
        return -1;
    }
    return 0;
}

int mm_data_verify(const char *dir, char *err, size_t errlen)
{
    mm_data_index ix;
    if (mm_data_index_load(&ix, dir, err, errlen) != 0)
        return -1;
    size_t max = 0;
    for (int i = 0; i < ix.n_files; i++)
        if (ix.files[i].bytes > max)
            max = ix.files[i].bytes;
    uint8_t *buf = malloc(max);
    int rc = buf ? 0 : -1;
    if (!buf)
        snprintf(err, errlen, "out of memory");
    for (int i = 0; rc == 0 && i < ix.n_files; i++)
        rc = mm_data_read_file(dir, &ix.files[i], buf, err, errlen);
    free(buf);
    mm_data_index_free(&ix);
    return rc;
}

int mm_data_index_write(const char *dir, const mm_data_file *files, int n, const char *note,
                        char *err, size_t errlen)
{
    size_t cap = 256 + (size_t)n * (2 * MM_DATA_NAME_MAX + 100) + (note ? strlen(note) : 0);
    char *s = malloc(cap);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t len = (size_t)snprintf(s, cap, "%s\n", INDEX_MAGIC);
    if (note)
        len += (size_t)snprintf(s + len, cap - len, "# %s\n", note);
    len += (size_t)snprintf(s + len, cap - len, "# name\tgenre\tbytes\tsha256\n");
    for (int i = 0; i < n; i++) {
        char hex[65];
        mm_sha256_hex(files[i].sha256, hex);
        len += (size_t)snprintf(s + len, cap - len, "%s\t%s\t%zu\t%s\n", files[i].name,
                                files[i].genre, files[i].bytes, hex);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, MM_DATA_INDEX);
    int rc = mm_write_atomic(path, s, len, err, errlen);
    free(s);
    return rc;
}
