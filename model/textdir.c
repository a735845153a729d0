/* Reading a directory of the user's own text (model/textdir.h): the files,
 * their labels, their names in the index, and a strict UTF-8 check. The
 * order is sorted, not the file system's, so every machine prepares the
 * same index from the same tree. */
#include "model/textdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/sha256.h"

#define MAX_TEXT_FILES 100000
#define MAX_DEPTH 32

bool mm_utf8_valid(const uint8_t *p, size_t n, size_t *bad_at)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        size_t len;
        uint32_t cp, min;
        if (c == 0) {
            *bad_at = i;
            return false;
        }
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xe0) == 0xc0) {
            len = 2, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            *bad_at = i;
            return false;
        }
        if (i + len > n) {
            *bad_at = i;
            return false;
        }
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80) {
                *bad_at = i;
                return false;
            }
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            *bad_at = i;
            return false;
        }
        i += len;
    }
    return true;
}

/* A name too long for the index keeps its first MM_TEXT_KEEP bytes and
 * ends in '-' and 8 hex digits of the SHA-256 of the whole original (the
 * path, or the directory's name): two long names that begin alike stay
 * apart, and each one's mapping depends on itself only. */
#define MM_TEXT_HASH_HEX 8
#define MM_TEXT_KEEP (MM_DATA_NAME_MAX - 1 - 1 - MM_TEXT_HASH_HEX)

/* The index's rules: [A-Za-z0-9_.-], at most 31 bytes, no leading '.'. */
static bool map_name(const char *in, size_t len, char out[MM_DATA_NAME_MAX])
{
    bool cut = len >= MM_DATA_NAME_MAX, changed = cut;
    size_t n = cut ? MM_TEXT_KEEP : len;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || (c == '.' && i > 0);
        out[i] = c == '/' ? '-' : ok ? c : '_';
        changed |= !ok && c != '/';
    }
    if (cut) {
        uint8_t d[MM_SHA256_LEN];
        char hex[2 * MM_SHA256_LEN + 1];
        mm_sha256(in, len, d);
        mm_sha256_hex(d, hex);
        out[n++] = '-';
        memcpy(out + n, hex, MM_TEXT_HASH_HEX);
        n += MM_TEXT_HASH_HEX;
    }
    out[n] = '\0';
    return changed;
}

typedef struct {
    mm_text_file *v;
    int n, cap;
    mm_text_say *say; /* where a problem of one entry is said */
} list;

void mm_text_problem(mm_text_say *say, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(say->prefix, say->out);
    vfprintf(say->out, fmt, ap);
    fputc('\n', say->out);
    va_end(ap);
    say->n++;
}

static int add(list *l, const char *rel, char *err, size_t errlen)
{
    if (l->n >= MAX_TEXT_FILES) {
        snprintf(err, errlen, "more than %d files", MAX_TEXT_FILES);
        return -1;
    }
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 256;
        mm_text_file *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        l->v = v;
        l->cap = cap;
    }
    mm_text_file *f = &l->v[l->n];
    memset(f, 0, sizeof *f);
    if (!(f->rel = strdup(rel))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    l->n++;
    return 0;
}

/* Every regular file under root/rel into l. An entry that cannot be used
 * (unreadable, neither a file nor a directory, nested too deep, a path too
 * long) is said and the walk goes on; -1 with err only when the walk
 * cannot go on at all (out of memory, too many files). */
static int walk(const char *root, const char *rel, int depth, list *l, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
    if (depth > MAX_DEPTH) {
        mm_text_problem(l->say, "%s: directories nested more than %d deep (a symbolic link "
                        "loop?)", path, MAX_DEPTH);
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) {
        if (depth == 0) { /* the tree itself */
            snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
            return -1;
        }
        mm_text_problem(l->say, "%s: cannot open: %s", path, strerror(errno));
        return 0;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue; /* ., .., and hidden files */
        char sub[4096], full[4096];
        struct stat st;
        if ((size_t)snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >= sizeof sub ||
            (size_t)snprintf(full, sizeof full, "%s/%s", root, sub) >= sizeof full)
            mm_text_problem(l->say, "%s/%s: path too long", path, e->d_name);
        else if (stat(full, &st) != 0)
            mm_text_problem(l->say, "%s: %s", full, strerror(errno));
        else if (S_ISDIR(st.st_mode))
            rc = walk(root, sub, depth + 1, l, err, errlen);
        else if (S_ISREG(st.st_mode))
            rc = add(l, sub, err, errlen);
        else
            mm_text_problem(l->say, "%s: neither a regular file nor a directory", full);
    }
    closedir(d);
    return rc;
}

static int cmp_file(const void *a, const void *b)
{
    const mm_text_file *x = a, *y = b;
    int c = strcmp(x->label, y->label);
    return c ? c : strcmp(x->rel, y->rel);
}

static int cmp_name(const void *a, const void *b)
{
    const mm_text_file *const *x = a, *const *y = b;
    int c = strcmp((*x)->name, (*y)->name);
    return c ? c : strcmp((*x)->rel, (*y)->rel);
}

/* The directory part of rel that gives its label: up to the first '/'. */
static size_t label_len(const char *rel)
{
    const char *slash = strchr(rel, '/');
    return slash ? (size_t)(slash - rel) : 0;
}

/* Two directories may not map to one label: each such pair said. */
static void label_clashes(const list *l, const char *default_label)
{
    for (int i = 1; i < l->n; i++) {
        const mm_text_file *a = &l->v[i - 1], *b = &l->v[i];
        size_t la = label_len(a->rel), lb = label_len(b->rel);
        if (!strcmp(a->label, b->label) && (la != lb || strncmp(a->rel, b->rel, la)))
            mm_text_problem(l->say, "'%.*s' and '%.*s' both become label '%s'; rename one",
                            la ? (int)la : (int)strlen(default_label), la ? a->rel : default_label,
                            lb ? (int)lb : (int)strlen(default_label), lb ? b->rel : default_label,
                            a->label);
    }
}

/* Nor two files to one name: each such pair said. -1 out of memory. */
static int name_clashes(const list *l)
{
    mm_text_file **by_name = malloc((size_t)l->n * sizeof *by_name);
    if (!by_name)
        return -1;
    for (int i = 0; i < l->n; i++)
        by_name[i] = &l->v[i];
    qsort(by_name, (size_t)l->n, sizeof *by_name, cmp_name);
    for (int i = 1; i < l->n; i++)
        if (!strcmp(by_name[i - 1]->name, by_name[i]->name))
            mm_text_problem(l->say, "'%s' and '%s' both become name '%s' in the index (at most "
                            "%d bytes of [A-Za-z0-9_.-]); rename one", by_name[i - 1]->rel,
                            by_name[i]->rel, by_name[i]->name, MM_DATA_NAME_MAX - 1);
    free(by_name);
    return 0;
}

int mm_text_scan(const char *dir, const char *default_label, mm_text_say *say,
                 mm_text_file **files, int *n, char *err, size_t errlen)
{
    list l = {.say = say};
    *files = NULL;
    *n = 0;
    if (walk(dir, "", 0, &l, err, errlen) != 0)
        goto fail;
    if (l.n == 0) {
        snprintf(err, errlen, "%s: no files (hidden ones, starting with '.', are skipped)", dir);
        goto fail;
    }
    for (int i = 0; i < l.n; i++) {
        mm_text_file *f = &l.v[i];
        size_t ll = label_len(f->rel);
        if (ll)
            f->label_mapped = map_name(f->rel, ll, f->label);
        else
            f->label_mapped = map_name(default_label, strlen(default_label), f->label);
        size_t len = strlen(f->rel);
        if (len > 4 && !strcmp(f->rel + len - 4, ".txt"))
            len -= 4;
        f->name_mapped = map_name(f->rel, len, f->name);
    }
    qsort(l.v, (size_t)l.n, sizeof *l.v, cmp_file);
    label_clashes(&l, default_label);
    if (name_clashes(&l) != 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    *files = l.v;
    *n = l.n;
    return 0;
fail:
    mm_text_files_free(l.v, l.n);
    return -1;
}

void mm_text_label_sizes(const mm_text_file *f, int n, const bool *usable, mm_text_say *say)
{
    for (int i = 0, j; i < n; i = j) {
        int ok = 0, first_ok = -1;
        for (j = i; j < n && !strcmp(f[j].label, f[i].label); j++)
            if (!usable || usable[j]) {
                ok++;
                if (first_ok < 0)
                    first_ok = j;
            }
        if (ok >= 2)
            continue;
        if (j - i < 2)
            mm_text_problem(say, "label '%s' has only 1 file (%s): every label needs at least 2, "
                            "its 1st, 11th, 21st... validate and the others train", f[i].label,
                            f[i].rel);
        else if (ok == 1)
            mm_text_problem(say, "label '%s' has only 1 usable file (%s; %d other%s refused "
                            "above): every label needs at least 2", f[i].label, f[first_ok].rel,
                            j - i - 1, j - i - 1 == 1 ? "" : "s");
        else
            mm_text_problem(say, "label '%s' has no usable file (all %d refused above): every "
                            "label needs at least 2", f[i].label, j - i);
    }
}

void mm_text_files_free(mm_text_file *files, int n)
{
    for (int i = 0; i < n && files; i++)
        free(files[i].rel);
    free(files);
}
