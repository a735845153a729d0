/* Exact consensus distance from parameter snapshots (docs/metrics.md):
 * all peers' files are streamed side by side in chunks, so memory stays at
 * one averaged vector whatever the number of peers, and each file's
 * SHA-256 is checked on the same pass. */
#include "node/report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#define SNAP_HEADER 32
#define SNAP_DIGEST 32
#define CHUNK 65536

void mm_report_snap_path(const char *dir, int id, int64_t round, char *out, size_t len)
{
    snprintf(out, len, "%s/node-%d/snap/r%08lld.bin", dir, id, (long long)round);
}

static uint32_t le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t le64(const unsigned char *b)
{
    return (uint64_t)le32(b) | (uint64_t)le32(b + 4) << 32;
}

static float le_float(const unsigned char *b)
{
    uint32_t u = le32(b);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

typedef struct {
    FILE *f;
    EVP_MD_CTX *md;
    char path[4096];
    double dev2;
} snap;

static void close_all(snap *s, int n)
{
    for (int i = 0; i < n; i++) {
        if (s[i].f)
            fclose(s[i].f);
        EVP_MD_CTX_free(s[i].md);
    }
    free(s);
}

int mm_report_exact(mm_report *r, const int *ids, int n, int64_t round,
                    const mm_report_opts *opt, mm_rep_row *row)
{
    snap *s = calloc((size_t)n, sizeof *s);
    unsigned char *raw = malloc((size_t)CHUNK * 4);
    float *xbar = NULL, *x = malloc((size_t)n * CHUNK * sizeof *x);
    if (!s || !raw || !x) {
        free(s);
        free(raw);
        free(x);
        return -1;
    }
    uint64_t count = 0;
    int rc = -1;
    for (int i = 0; i < n; i++) {
        mm_report_snap_path(r->dir, ids[i], round, s[i].path, sizeof s[i].path);
        s[i].f = fopen(s[i].path, "rb");
        s[i].md = EVP_MD_CTX_new();
        unsigned char h[SNAP_HEADER];
        struct stat st;
        if (!s[i].f || !s[i].md || fstat(fileno(s[i].f), &st) != 0) {
            mm_report_warn(r, opt, "%s: %s", s[i].path, strerror(errno));
            goto out;
        }
        if (fread(h, 1, sizeof h, s[i].f) != sizeof h || memcmp(h, "MMSNAP01", 8)) {
            mm_report_warn(r, opt, "%s: not a snapshot (bad magic or short header)", s[i].path);
            goto out;
        }
        uint64_t nn = le64(h + 24);
        if (le32(h + 8) != (uint32_t)ids[i] || le64(h + 16) != (uint64_t)round ||
            le32(h + 12) != 0) {
            mm_report_warn(r, opt, "%s: header says peer %u round %llu, expected peer %d round %lld",
                           s[i].path, le32(h + 8), (unsigned long long)le64(h + 16), ids[i],
                           (long long)round);
            goto out;
        }
        if (nn == 0 || nn > (uint64_t)1 << 40 ||
            (uint64_t)st.st_size != SNAP_HEADER + 4 * nn + SNAP_DIGEST) {
            mm_report_warn(r, opt, "%s: %llu parameters but the file has %lld bytes", s[i].path,
                           (unsigned long long)nn, (long long)st.st_size);
            goto out;
        }
        if (i == 0) {
            count = nn;
        } else if (nn != count) {
            mm_report_warn(r, opt, "%s: %llu parameters, other peers have %llu", s[i].path,
                           (unsigned long long)nn, (unsigned long long)count);
            goto out;
        }
        EVP_DigestInit_ex(s[i].md, EVP_sha256(), NULL);
        EVP_DigestUpdate(s[i].md, h, sizeof h);
    }
    if (r->params > 0 && (uint64_t)r->params != count)
        mm_report_warn(r, opt, "round %lld: snapshots hold %llu parameters, start lines say %lld",
                       (long long)round, (unsigned long long)count, (long long)r->params);
    xbar = malloc(count * sizeof *xbar); /* for the hook; the distances do not need it */

    double norm2 = 0;
    for (uint64_t base = 0; base < count; base += CHUNK) {
        size_t m = count - base < CHUNK ? (size_t)(count - base) : CHUNK;
        for (int i = 0; i < n; i++) {
            if (fread(raw, 4, m, s[i].f) != m) {
                mm_report_warn(r, opt, "%s: short read", s[i].path);
                goto out;
            }
            EVP_DigestUpdate(s[i].md, raw, 4 * m);
            for (size_t k = 0; k < m; k++)
                x[(size_t)i * CHUNK + k] = le_float(raw + 4 * k);
        }
        for (size_t k = 0; k < m; k++) {
            double mean = 0;
            for (int i = 0; i < n; i++)
                mean += x[(size_t)i * CHUNK + k];
            mean /= n;
            for (int i = 0; i < n; i++) {
                double d = x[(size_t)i * CHUNK + k] - mean;
                s[i].dev2 += d * d;
            }
            norm2 += mean * mean;
            if (xbar)
                xbar[base + k] = (float)mean;
        }
    }
    for (int i = 0; i < n; i++) {
        unsigned char want[SNAP_DIGEST], got[EVP_MAX_MD_SIZE];
        unsigned glen = 0;
        EVP_DigestFinal_ex(s[i].md, got, &glen);
        if (fread(want, 1, sizeof want, s[i].f) != sizeof want || glen != SNAP_DIGEST ||
            memcmp(want, got, SNAP_DIGEST)) {
            mm_report_warn(r, opt, "%s: SHA-256 mismatch (file damaged); not used", s[i].path);
            goto out;
        }
    }
    double sum = 0, mn = INFINITY, mx = 0;
    for (int i = 0; i < n; i++) {
        sum += s[i].dev2;
        mn = s[i].dev2 < mn ? s[i].dev2 : mn;
        mx = s[i].dev2 > mx ? s[i].dev2 : mx;
    }
    row->xi_exact = sqrt(sum / n);
    row->dev_min = sqrt(mn);
    row->dev_max = sqrt(mx);
    row->avg_norm = sqrt(norm2);
    if (xbar) {
        double l, a;
        if (mm_report_eval_average(xbar, (size_t)count, round, r->dir, &l, &a) == 0) {
            row->avg_val_loss = l;
            row->avg_val_acc = a;
        }
    }
    rc = 0;
out:
    close_all(s, n);
    free(raw);
    free(x);
    free(xbar);
    return rc;
}
