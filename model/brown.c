/* In the distributed files a block of lines separated by blank lines is a
 * paragraph, each line one sentence, and a paragraph's first line starts with
 * a tab. Headlines (every tag ending in -hl) sit in the same block as the
 * paragraph after them, so they are split off, or they would run into it. */
#include "model/brown.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *p;
    size_t len, cap;
    bool oom;
} buf;

static void put(buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

typedef struct {
    buf out;
    bool in_para;     /* a paragraph has text and no newline yet */
    bool space;       /* the next word needs a space before it */
    bool squote_open; /* single quotes alternate open/close within a paragraph */
} writer;

static void end_para(writer *w)
{
    if (w->in_para)
        put(&w->out, "\n\n", 2);
    w->in_para = false;
    w->space = false;
    w->squote_open = false;
}

static bool is_closer(const char *s, size_t n)
{
    static const char *const closers[] = {",", ".", ";", ":", "?", "!", ")", "]", "''"};
    for (size_t i = 0; i < sizeof closers / sizeof closers[0]; i++)
        if (strlen(closers[i]) == n && !memcmp(s, closers[i], n))
            return true;
    return false;
}

static void word(writer *w, const char *s, size_t n)
{
    bool opener = false, closer = false;
    if (n == 2 && !memcmp(s, "``", 2)) {
        s = "\"";
        n = 1;
        opener = true;
    } else if (n == 2 && !memcmp(s, "''", 2)) {
        s = "\"";
        n = 1;
        closer = true;
    } else if (n == 1 && s[0] == '\'') {
        if (w->squote_open)
            closer = true;
        else
            opener = true;
        w->squote_open = !w->squote_open;
    } else if (n == 1 && (s[0] == '(' || s[0] == '[')) {
        opener = true;
    } else {
        closer = is_closer(s, n);
    }
    /* "Jr./np ./." would print "Jr.." */
    if (closer && n == 1 && s[0] == '.' && w->out.len && w->out.p[w->out.len - 1] == '.' &&
        w->in_para)
        return;
    if (w->in_para && w->space && !closer)
        put(&w->out, " ", 1);
    put(&w->out, s, n);
    w->in_para = true;
    w->space = !opener;
}

/* A token is "word/TAG"; the word may itself hold '/' (1/2/cd). */
static int split_token(const char *t, size_t n, size_t *wlen)
{
    const char *slash = NULL;
    for (size_t i = 0; i < n; i++)
        if (t[i] == '/')
            slash = t + i;
    if (!slash || slash == t || slash == t + n - 1)
        return -1;
    *wlen = (size_t)(slash - t);
    return 0;
}

static bool tag_is_headline(const char *tag, size_t n)
{
    for (size_t i = 0; i + 3 <= n; i++)
        if (!memcmp(tag + i, "-hl", 3))
            return true;
    return false;
}

/* Checks every token of the line and says whether it is a headline. */
static int scan_line(const char *l, size_t n, bool *headline, int lineno,
                     char *err, size_t errlen)
{
    bool all_hl = true, any = false;
    size_t i = 0;
    while (i < n) {
        while (i < n && (l[i] == ' ' || l[i] == '\t'))
            i++;
        size_t s = i;
        while (i < n && l[i] != ' ' && l[i] != '\t')
            i++;
        if (i == s)
            break;
        size_t wl;
        if (split_token(l + s, i - s, &wl) != 0) {
            snprintf(err, errlen, "line %d: token '%.*s' is not word/TAG", lineno,
                     (int)(i - s > 40 ? 40 : i - s), l + s);
            return -1;
        }
        any = true;
        if (!tag_is_headline(l + s + wl + 1, i - s - wl - 1))
            all_hl = false;
    }
    *headline = any && all_hl;
    return 0;
}

int mm_brown_detag(const char *in, size_t n, char **out, size_t *outlen,
                   char *err, size_t errlen)
{
    writer w = {0};
    int lineno = 0;
    bool prev_headline = false;
    for (size_t i = 0; i < n; i++)
        if (in[i] == '\0' || (unsigned char)in[i] >= 0x80) {
            snprintf(err, errlen, "byte %zu: not ASCII text (0x%02x)", i, (unsigned char)in[i]);
            return -1;
        }

    size_t pos = 0;
    while (pos < n) {
        const char *l = in + pos;
        const char *nl = memchr(l, '\n', n - pos);
        size_t len = nl ? (size_t)(nl - l) : n - pos;
        pos += len + (nl ? 1 : 0);
        lineno++;
        if (len && l[len - 1] == '\r')
            len--;

        size_t k = 0;
        while (k < len && (l[k] == ' ' || l[k] == '\t'))
            k++;
        if (k == len) { /* blank line: paragraph break */
            end_para(&w);
            prev_headline = false;
            continue;
        }
        bool headline;
        if (scan_line(l, len, &headline, lineno, err, errlen) != 0) {
            free(w.out.p);
            return -1;
        }
        if (headline || prev_headline || l[0] == '\t')
            end_para(&w);
        prev_headline = headline;

        size_t i = 0;
        while (i < len) {
            while (i < len && (l[i] == ' ' || l[i] == '\t'))
                i++;
            size_t s = i;
            while (i < len && l[i] != ' ' && l[i] != '\t')
                i++;
            if (i == s)
                break;
            size_t wl = 0;
            split_token(l + s, i - s, &wl); /* checked by scan_line */
            word(&w, l + s, wl);
        }
    }
    end_para(&w);
    /* Paragraphs end in "\n\n"; the file ends in one newline. */
    if (w.out.len >= 2)
        w.out.len--;
    put(&w.out, "", 0);
    if (w.out.oom) {
        free(w.out.p);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (w.out.len == 0) {
        free(w.out.p);
        snprintf(err, errlen, "no text in file");
        return -1;
    }
    w.out.p[w.out.len] = '\0';
    *out = w.out.p;
    *outlen = w.out.len;
    return 0;
}
