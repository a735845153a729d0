/* The corpus subcommands: turning the extracted Brown corpus (behind `make
 * data`), or a directory of the user's own UTF-8 text (--text), into plain
 * text with an index (data-prepare), and checking a prepared directory
 * (data-verify). In C because a fresh machine has no python. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "model/brown.h"
#include "model/data.h"
#include "base/sha256.h"
#include "model/textdir.h"
#include "cli/commands.h"

#define MAX_SOURCE_BYTES ((size_t)64 << 20)
#define MAX_TEXT_BYTES ((size_t)256 << 20)

/* A whole input file, at most limit bytes (base/fs.c), or NULL with the
 * reason in err. */
static char *read_all(const char *path, size_t *len, size_t limit, char *err, size_t errlen)
{
    char *p;
    return mm_read_file(path, &p, len, limit, err, errlen) == 0 ? p : NULL;
}

static int prepare(const char *src, const char *dst, const char *note)
{
    char err[512], path[4096];
    snprintf(path, sizeof path, "%s/cats.txt", src);
    size_t len;
    char *cats = read_all(path, &len, MAX_SOURCE_BYTES, err, sizeof err);
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
        char *in = read_all(in_path, &in_len, MAX_SOURCE_BYTES, err, sizeof err), *out;
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

/* DST inside DIR would be read back as text by the next run. */
static bool inside(const char *dir, const char *dst)
{
    char a[PATH_MAX], b[PATH_MAX];
    if (!realpath(dir, a) || !realpath(dst, b))
        return false;
    size_t n = strlen(a);
    return !strcmp(a, b) || (!strncmp(a, b, n) && (b[n] == '/' || !strcmp(a, "/")));
}

/* Whether a text file can be a text of the corpus; if not, says why. */
static bool text_ok(const char *path, const char *text, size_t len, mm_text_say *say)
{
    size_t bad;
    if (len == 0) {
        mm_text_problem(say, "%s: empty file (every text needs at least one byte; remove it)",
                        path);
        return false;
    }
    if (!mm_utf8_valid((const uint8_t *)text, len, &bad)) {
        mm_text_problem(say, "%s: byte %zu: %s (0x%02x)", path, bad,
                        text[bad] ? "not valid UTF-8" : "a NUL byte, not text",
                        (unsigned char)text[bad]);
        return false;
    }
    return true;
}

static int prepare_text(const char *dir, const char *dst, const char *label, const char *note)
{
    char err[1024], note_buf[600];
    mm_text_file *tf;
    int n;
    /* Every problem is said and the checks go on, so that one run names
     * all there are to fix; the index is then not written. */
    mm_text_say say = {.out = stderr, .prefix = "murmur data-prepare: "};
    if (mm_text_scan(dir, label, &say, &tf, &n, err, sizeof err) != 0) {
        fprintf(stderr, "murmur data-prepare: %s\n", err);
        return 1;
    }
    mm_data_file *files = calloc((size_t)n, sizeof *files);
    bool *usable = calloc((size_t)n, sizeof *usable);
    int rc = 1, labels = 0;
    size_t total = 0;
    if (!files || !usable) {
        fprintf(stderr, "murmur data-prepare: out of memory\n");
        goto out;
    }
    bool made_dst = mkdir(dst, 0755) == 0;
    if (!made_dst && errno != EEXIST) {
        fprintf(stderr, "murmur data-prepare: %s: cannot create: %s\n", dst, strerror(errno));
        goto out;
    }
    if (inside(dir, dst)) {
        fprintf(stderr, "murmur data-prepare: %s is inside %s: the next run would read it as text; "
                        "put it elsewhere\n", dst, dir);
        goto out;
    }
    int refused = 0;
    for (int i = 0; i < n; i++) {
        char in_path[4200], out_path[4200];
        snprintf(in_path, sizeof in_path, "%s/%s", dir, tf[i].rel);
        size_t len;
        char *text = read_all(in_path, &len, MAX_TEXT_BYTES, err, sizeof err);
        if (!text)
            mm_text_problem(&say, "%s", err);
        if (!text || !text_ok(in_path, text, len, &say)) {
            free(text);
            refused++;
            continue;
        }
        usable[i] = true;
        if (say.n) { /* no index will be written: only check the rest */
            free(text);
            continue;
        }
        mm_data_file *d = &files[i];
        memcpy(d->name, tf[i].name, sizeof d->name);
        memcpy(d->genre, tf[i].label, sizeof d->genre);
        d->bytes = len;
        mm_sha256(text, len, d->sha256);
        snprintf(out_path, sizeof out_path, "%s/%s.txt", dst, d->name);
        int bad_write = mm_write_atomic(out_path, text, len, err, sizeof err);
        free(text);
        if (bad_write) {
            fprintf(stderr, "murmur data-prepare: %s\n", err);
            goto out;
        }
        if (tf[i].name_mapped)
            printf("murmur data-prepare: %s is '%s' in the index\n", tf[i].rel, d->name);
        if (tf[i].label_mapped && (i == 0 || strcmp(tf[i].label, tf[i - 1].label)))
            printf("murmur data-prepare: the files of '%.*s' have label '%s'\n",
                   (int)strcspn(tf[i].rel, "/"), tf[i].rel, tf[i].label);
        labels += i == 0 || strcmp(tf[i].label, tf[i - 1].label);
        total += len;
    }
    mm_text_label_sizes(tf, n, usable, &say);
    if (say.n) {
        fprintf(stderr, "murmur data-prepare: %d problem%s (each named above; %d of %d files "
                        "refused): fix them, then run again (no index written to %s)\n", say.n,
                say.n == 1 ? "" : "s", refused, n, dst);
        if (made_dst)
            rmdir(dst); /* (only when nothing was written into it) */
        goto out;
    }
    if (!note) {
        snprintf(note_buf, sizeof note_buf, "source text %.500s", dir);
        for (char *c = note_buf; *c; c++)
            if (*c == '\n' || *c == '\r' || *c == '\t')
                *c = ' ';
        note = note_buf;
    }
    /* The index goes last: its presence means every text is complete. */
    if (mm_data_index_write(dst, files, n, note, err, sizeof err) != 0) {
        fprintf(stderr, "murmur data-prepare: %s\n", err);
        goto out;
    }
    printf("murmur data-prepare: %d files, %d label%s, %zu bytes of text in %s\n", n, labels,
           labels == 1 ? "" : "s", total, dst);
    rc = 0;
out:
    free(files);
    free(usable);
    mm_text_files_free(tf, n);
    return rc;
}

static void prepare_usage(FILE *out)
{
    fprintf(out,
            "usage: murmur data-prepare [--note TEXT] SRC DST\n"
            "       murmur data-prepare --text [--label NAME] [--note TEXT] DIR DST\n"
            "  SRC holds cats.txt ('FILE GENRE' per line) and the tagged Brown files.\n"
            "  With --text, DIR holds UTF-8 text files: a file in a sub-directory gets the\n"
            "  sub-directory's name as its label (the analogue of a genre), one at the top\n"
            "  level gets NAME (default 'text'); every label needs at least 2 files.\n"
            "  DST gets FILE.txt for each and index.tsv (docs/formats.md).\n");
}

int cmd_data_prepare(int argc, char **argv)
{
    const char *note = NULL, *label = "text";
    bool text = false;
    int i = 1;
    while (i < argc && argv[i][0] == '-') {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            prepare_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--text")) {
            text = true;
            i++;
        } else if (i + 1 < argc && (!strcmp(argv[i], "--note") || !strcmp(argv[i], "--label"))) {
            *(!strcmp(argv[i], "--note") ? &note : &label) = argv[i + 1];
            i += 2;
        } else {
            fprintf(stderr, "murmur data-prepare: unknown option or missing value: '%s'\n", argv[i]);
            prepare_usage(stderr);
            return 2;
        }
    }
    if (argc - i != 2 || (note && strchr(note, '\n'))) {
        prepare_usage(stderr);
        return 2;
    }
    if (text && (!*label || strlen(label) >= MM_DATA_NAME_MAX || strspn(label,
                 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != strlen(label) ||
                 label[0] == '.')) {
        fprintf(stderr, "murmur data-prepare: --label '%s': expected 1..%d bytes of [A-Za-z0-9_.-], "
                        "not starting with '.'\n", label, MM_DATA_NAME_MAX - 1);
        return 2;
    }
    return text ? prepare_text(argv[i], argv[i + 1], label, note) : prepare(argv[i], argv[i + 1], note);
}

int cmd_data_verify(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: murmur data-verify DIR\n"
               "  checks a prepared corpus: index.tsv, every file's size and SHA-256\n");
        return 0;
    }
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
