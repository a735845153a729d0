/* Hidden subcommands behind `make data`: turning the extracted corpus into
 * plain text with an index (data-prepare), and checking a prepared directory
 * (data-verify). In C because a fresh machine has no python. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "model/brown.h"
#include "model/data.h"
#include "base/sha256.h"
#include "node/commands.h"

#define MAX_SOURCE_BYTES (64u << 20)

static char *read_all(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap + 1);
    for (;;) {
        if (!p)
            break;
        n += fread(p + n, 1, cap - n, f);
        if (n < cap || cap >= MAX_SOURCE_BYTES)
            break;
        cap *= 2;
        char *q = realloc(p, cap + 1);
        if (!q)
            free(p);
        p = q;
    }
    int bad = ferror(f) || (p && n == cap);
    fclose(f);
    if (!p || bad) {
        snprintf(err, errlen, "%s: %s", path, !p ? "out of memory" : "read error or too large");
        free(p);
        return NULL;
    }
    p[n] = '\0';
    *len = n;
    return p;
}

static int prepare(const char *src, const char *dst, const char *note)
{
    char err[512], path[4096];
    snprintf(path, sizeof path, "%s/cats.txt", src);
    size_t len;
    char *cats = read_all(path, &len, err, sizeof err);
    if (!cats) {
        fprintf(stderr, "murmur data-prepare: %s\n", err);
        return 1;
    }
    if (mkdir(dst, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "murmur data-prepare: %s: cannot create: %s\n", dst, strerror(errno));
        free(cats);
        return 1;
    }
    mm_data_file *files = NULL;
    int n = 0, cap = 0, lineno = 0, rc = 1;
    size_t total = 0;
    /* Line by line without strtok, which would skip empty lines and make
     * the line numbers in messages wrong. */
    for (char *line = cats, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        char name[MM_DATA_NAME_MAX], genre[MM_DATA_NAME_MAX], extra;
        if (line[0] == '#' || strspn(line, " \t\r") == strlen(line))
            continue;
        if (sscanf(line, "%31s %31s %c", name, genre, &extra) != 2 || strchr(name, '/') ||
            name[0] == '.') {
            fprintf(stderr, "murmur data-prepare: %s: line %d: expected 'FILE GENRE'\n", path,
                    lineno);
            goto out;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 512;
            mm_data_file *nf = realloc(files, (size_t)cap * sizeof *nf);
            if (!nf) {
                fprintf(stderr, "murmur data-prepare: out of memory\n");
                goto out;
            }
            files = nf;
        }
        mm_data_file *d = &files[n];
        memset(d, 0, sizeof *d);
        snprintf(d->name, sizeof d->name, "%s", name);
        snprintf(d->genre, sizeof d->genre, "%s", genre);

        char in_path[4096], out_path[4096];
        snprintf(in_path, sizeof in_path, "%s/%s", src, name);
        size_t in_len, out_len;
        char *in = read_all(in_path, &in_len, err, sizeof err), *out;
        if (!in) {
            fprintf(stderr, "murmur data-prepare: %s\n", err);
            goto out;
        }
        int bad = mm_brown_detag(in, in_len, &out, &out_len, err, sizeof err);
        free(in);
        if (bad) {
            fprintf(stderr, "murmur data-prepare: %s: %s\n", in_path, err);
            goto out;
        }
        snprintf(out_path, sizeof out_path, "%s/%s.txt", dst, name);
        mm_sha256(out, out_len, d->sha256);
        d->bytes = out_len;
        bad = mm_write_atomic(out_path, out, out_len, err, sizeof err);
        free(out);
        if (bad) {
            fprintf(stderr, "murmur data-prepare: %s\n", err);
            goto out;
        }
        total += out_len;
        n++;
    }
    if (n == 0) {
        fprintf(stderr, "murmur data-prepare: %s lists no files\n", path);
        goto out;
    }
    /* The index goes last: its presence means every text is complete. */
    if (mm_data_index_write(dst, files, n, note, err, sizeof err) != 0) {
        fprintf(stderr, "murmur data-prepare: %s\n", err);
        goto out;
    }
    printf("murmur data-prepare: %d files, %zu bytes of text in %s\n", n, total, dst);
    rc = 0;
out:
    free(files);
    free(cats);
    return rc;
}

int cmd_data_prepare(int argc, char **argv)
{
    const char *note = NULL;
    int i = 1;
    if (i + 1 < argc && !strcmp(argv[i], "--note")) {
        note = argv[i + 1];
        i += 2;
    }
    if (argc - i != 2 || (note && strchr(note, '\n'))) {
        fprintf(stderr, "usage: murmur data-prepare [--note TEXT] SRC DST\n"
                        "  SRC holds cats.txt ('FILE GENRE' per line) and the tagged files;\n"
                        "  DST gets FILE.txt for each and index.tsv (docs/formats.md).\n");
        return 2;
    }
    return prepare(argv[i], argv[i + 1], note);
}

int cmd_data_verify(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: murmur data-verify DIR\n");
        return 2;
    }
    char err[512];
    mm_data_index ix;
    if (mm_data_verify(argv[1], err, sizeof err) != 0 ||
        mm_data_index_load(&ix, argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "murmur data-verify: %s\n", err);
        return 1;
    }
    int n_val = 0;
    size_t bytes = 0;
    for (int k = 0; k < ix.n_files; k++) {
        n_val += ix.files[k].val;
        bytes += ix.files[k].bytes;
    }
    printf("%s: %d files (%d train, %d validation), %d genres, %zu bytes: all verified\n",
           argv[1], ix.n_files, ix.n_files - n_val, n_val, ix.n_genres, bytes);
    mm_data_index_free(&ix);
    return 0;
}
