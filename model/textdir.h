/* A directory of the user's own UTF-8 text as a corpus (murmur data-prepare
 * --text; docs/formats.md): every regular file under DIR is one text, its
 * label (the analogue of a Brown genre) the name of the first-level
 * sub-directory it sits in, or a default label at the top level. */
#ifndef MURMUR_TEXTDIR_H
#define MURMUR_TEXTDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/data.h"

typedef struct {
    char *rel;                      /* path under DIR, as found */
    char name[MM_DATA_NAME_MAX];    /* its name in the index (mapped, see below) */
    char label[MM_DATA_NAME_MAX];   /* its label in the index (mapped) */
    bool name_mapped, label_mapped; /* the mapping changed a character or cut it short */
} mm_text_file;

/* Where the problems of a text tree are said, one line each, out of one
 * pass: each line is prefix and the problem; n counts them. */
typedef struct {
    FILE *out;
    const char *prefix;
    int n;
} mm_text_say;
void mm_text_problem(mm_text_say *say, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Every regular file under dir (hidden files and directories, whose names
 * start with '.', are skipped), sorted by (label, path) in byte order.
 * Names and labels are mapped to the index's rules ([A-Za-z0-9_.-], at
 * most 31 bytes, not starting with '.'): the path without a final ".txt",
 * with '/' as '-', every other byte outside the set as '_', a leading '.'
 * as '_'; one of more than 31 bytes keeps its first 22 and ends in '-' and
 * 8 hex digits of the SHA-256 of the whole (the path without ".txt", or the
 * directory's name), so long names that begin alike stay apart. Said on
 * say, every one of them, the walk going on: an entry that cannot be used
 * (unreadable, neither a regular file nor a directory, nested more than 32
 * deep, a path too long), two files that map to one name, two directories
 * that map to one label (both paths named). The labels' sizes are the
 * caller's to check once it knows which files it can use
 * (mm_text_label_sizes). 0 (with say->n problems, maybe 0), or -1 with the
 * reason in err when there is nothing to go on with: dir cannot be opened,
 * no files, more than 100000, out of memory. */
int mm_text_scan(const char *dir, const char *default_label, mm_text_say *say,
                 mm_text_file **files, int *n, char *err, size_t errlen);
/* Every label needs 2 usable files (usable[i]; NULL: all are): its 1st,
 * 11th, 21st... validate and the others train. Each label that has fewer is
 * said on say. */
void mm_text_label_sizes(const mm_text_file *files, int n, const bool *usable, mm_text_say *say);
void mm_text_files_free(mm_text_file *files, int n);

/* Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF)
 * without NUL bytes: true, or false with the offset of the first byte of
 * the first bad sequence in *bad_at. */
bool mm_utf8_valid(const uint8_t *p, size_t n, size_t *bad_at);

#endif
