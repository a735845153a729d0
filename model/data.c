/* One peer's shard: its training files and the shared validation files,
 * each concatenated in index order, and the windows drawn from them. */
#include "model/data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Files are joined with a newline so that the last paragraph of one file and
 * the first of the next are separated by a blank line, as within a file. */
static int load_files(const char *dir, const mm_data_index *ix, const int *owner, int want,
                      uint8_t **out, size_t *outlen, int *count, size_t **starts, int **labels,
                      char *err, size_t errlen)
{
    size_t total = 0;
    int n = 0;
    for (int i = 0; i < ix->n_files; i++)
        if (owner[i] == want) {
            total += ix->files[i].bytes + 1;
            n++;
        }
    uint8_t *buf = malloc(total ? total : 1);
    size_t *st = starts ? malloc((size_t)(n ? n : 1) * sizeof *st) : NULL;
    int *lab = labels ? malloc((size_t)(n ? n : 1) * sizeof *lab) : NULL;
    if (!buf || (starts && !st) || (labels && !lab)) {
        free(buf);
        free(st);
        free(lab);
        snprintf(err, errlen, "out of memory for %zu bytes of text", total);
        return -1;
    }
    size_t off = 0;
    for (int i = 0, f = 0; i < ix->n_files; i++) {
        if (owner[i] != want)
            continue;
        if (mm_data_read_file(dir, &ix->files[i], buf + off, err, errlen) != 0) {
            free(buf);
            free(st);
            free(lab);
            return -1;
        }
        if (st)
            st[f] = off;
        if (lab)
            lab[f] = ix->files[i].genre_id;
        f++;
        off += ix->files[i].bytes;
        buf[off++] = '\n';
    }
    *out = buf;
    *outlen = total;
    *count = n;
    if (starts)
        *starts = st;
    if (labels)
        *labels = lab;
    return 0;
}

int mm_shard_of_id(uint32_t id, int n_start)
{
    return n_start < 1 ? -1 : (int)(id % (uint32_t)n_start);
}

int mm_shard_load(mm_shard *s, const char *data_dir, const mm_partition *part, int peer, int n_peers,
                  char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (n_peers < 1 || peer < 0 || peer >= n_peers) {
        snprintf(err, errlen, "peer %d out of range for %d peers", peer, n_peers);
        return -1;
    }
    mm_data_index ix;
    if (mm_data_index_load(&ix, data_dir, err, errlen) != 0)
        return -1;
    int *owner = malloc((size_t)ix.n_files * sizeof *owner);
    int rc = -1, n_val = 0;
    if (!owner) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (mm_data_assign(&ix, part, n_peers, owner, err, errlen) != 0)
        goto out;
    if (load_files(data_dir, &ix, owner, peer, &s->train, &s->train_len, &s->n_files, NULL,
                   NULL, err, errlen) != 0 ||
        load_files(data_dir, &ix, owner, -1, &s->val, &s->val_len, &n_val, &s->val_start,
                   &s->val_label, err, errlen) != 0)
        goto out;
    s->n_val_files = n_val;
    s->labels = malloc((size_t)(ix.n_genres ? ix.n_genres : 1) * sizeof *s->labels);
    if (!s->labels) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    memcpy(s->labels, ix.genres, (size_t)ix.n_genres * sizeof *s->labels);
    s->n_labels = ix.n_genres;

    size_t gl = 0;
    for (int g = 0; g < ix.n_genres; g++) {
        int mine = 0;
        for (int i = 0; i < ix.n_files; i++)
            if (owner[i] == peer && ix.files[i].genre_id == g)
                mine = 1;
        if (!mine)
            continue;
        int w = snprintf(s->genres + gl, sizeof s->genres - gl, "%s%s", gl ? "," : "",
                         ix.genres[g]);
        if (w < 0 || (size_t)w >= sizeof s->genres - gl) {
            /* Too many to list: say so rather than cut a name in half. */
            snprintf(s->genres, sizeof s->genres, "(%d genres)", ix.n_genres);
            break;
        }
        gl += (size_t)w;
    }
    rc = 0;
out:
    free(owner);
    mm_data_index_free(&ix);
    if (rc != 0)
        mm_shard_free(s);
    return rc;
}

size_t mm_shard_text_bytes(const mm_shard *s)
{
    return s->train_len - (size_t)s->n_files;
}

void mm_shard_free(mm_shard *s)
{
    free(s->train);
    free(s->val);
    free(s->labels);
    free(s->val_start);
    free(s->val_label);
    memset(s, 0, sizeof *s);
}

void mm_batch_sample(const mm_shard *s, mm_rng *rng, uint8_t *tokens, int B, int T)
{
    size_t w = (size_t)T + 1;
    for (int b = 0; b < B; b++) {
        size_t off = s->train_len > w ? (size_t)mm_rng_below(rng, s->train_len - w + 1) : 0;
        size_t n = s->train_len - off < w ? s->train_len - off : w;
        memcpy(tokens + (size_t)b * w, s->train + off, n);
        memset(tokens + (size_t)b * w + n, '\n', w - n);
    }
}

size_t mm_val_window_offset(const mm_shard *s, int k, int n, int T)
{
    size_t w = (size_t)T + 1;
    size_t span = s->val_len > w ? s->val_len - w : 0;
    return n > 0 ? (size_t)((unsigned __int128)span * (unsigned)k / (unsigned)n) : 0;
}

int mm_val_label_at(const mm_shard *s, size_t off)
{
    if (s->n_val_files < 1)
        return -1;
    int lo = 0, hi = s->n_val_files - 1; /* the last file starting at or before off */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (s->val_start[mid] <= off)
            lo = mid;
        else
            hi = mid - 1;
    }
    return s->val_label[lo];
}

void mm_val_window(const mm_shard *s, int k, int n, uint8_t *tokens, int T)
{
    size_t w = (size_t)T + 1;
    size_t off = mm_val_window_offset(s, k, n, T);
    size_t len = s->val_len - off < w ? s->val_len - off : w;
    memcpy(tokens, s->val + off, len);
    memset(tokens + len, '\n', w - len);
}
