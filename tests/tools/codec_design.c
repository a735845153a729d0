/* The measurements behind the codec choices of docs/compression.md:
 *   blocks  int8 and sign block sizes 32..4096: error, bytes, speed
 *   index   top-k index streams: LEB128 varint gaps (what the format uses)
 *           against fixed-width alternatives, in bytes per index and decode ns
 *   select  top-k selection: the sampled O(n) select, the exact radix
 *           select, and a full sort, in ms
 * on a model-like parameter vector and a model-like difference of two
 * replicas (tests/modelvec.h), or on real vectors (-v FILE [-w FILE]: a
 * checkpoint, a snapshot or raw float32; with -w the difference).
 *   codec_design [-n FLOATS] [-r REPS] [-v FILE [-w FILE]]   CSV on stdout
 * make codec-design runs it (under the heavy lock: it times things). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gossip/codec.h"
#include "gossip/codec_internal.h"
#include "tests/modelvec.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int reps = 5;

static mm_codec *make(const char *text, uint64_t n)
{
    mm_codec_spec s;
    char err[256];
    if (mm_codec_parse(text, &s, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    mm_codec *c = mm_codec_new(&s, n, err, sizeof err);
    if (!c) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return c;
}

static void blocks(const char *name, const float *v, uint64_t n)
{
    float *q = malloc(n * sizeof *q), *ref = malloc(n * sizeof *ref), *zero = calloc(n, sizeof *zero);
    double norm = 0;
    for (uint64_t i = 0; i < n; i++)
        norm += (double)v[i] * v[i];
    const char *kinds[] = {"int8", "sign"};
    for (int kd = 0; kd < 2; kd++)
        for (unsigned b = 32; b <= 4096; b *= 2) {
            char spec[32];
            snprintf(spec, sizeof spec, "%s:%u", kinds[kd], b);
            mm_codec *c = make(spec, n);
            uint8_t *p = malloc(mm_codec_max_bytes(c));
            size_t len = 0;
            char why[256];
            double te = 1e9, tr = 1e9, ta = 1e9;
            for (int k = 0; k < reps; k++) {
                double t0 = now_s();
                mm_codec_encode(c, v, NULL, 0, p, mm_codec_max_bytes(c), &len, NULL, why, sizeof why);
                double t1 = now_s();
                memcpy(ref, zero, n * sizeof *ref);
                double t2 = now_s();
                mm_codec_encode(c, v, ref, 0, p, mm_codec_max_bytes(c), &len, NULL, why, sizeof why);
                double t3 = now_s();
                memcpy(q, zero, n * sizeof *q);
                double t4 = now_s();
                mm_codec_apply(c, p, len, q, NULL, why, sizeof why);
                double t5 = now_s();
                te = fmin(te, t1 - t0), tr = fmin(tr, t3 - t2), ta = fmin(ta, t5 - t4);
            }
            double e2 = 0;
            for (uint64_t i = 0; i < n; i++)
                e2 += ((double)q[i] - v[i]) * ((double)q[i] - v[i]);
            double gb = 4.0 * (double)n / 1e9;
            printf("blocks,%s,%s,%u,%.4f,%.5f,%.2f,%.2f,%.2f\n", name, kinds[kd], b,
                   (double)len / (double)n, sqrt(e2 / norm), gb / te, gb / tr, gb / ta);
            fflush(stdout);
            free(p);
            mm_codec_free(c);
        }
    free(q), free(ref), free(zero);
}

/* The indices top-k picks, from its payload. */
static uint64_t topk_indices(const uint8_t *p, size_t len, uint64_t k, uint32_t *idx)
{
    const uint8_t *g = p + 4 * k, *end = p + len;
    uint64_t next = 0, j = 0;
    while (g < end && j < k) {
        uint64_t x = 0;
        int sh = 0;
        while (*g & 0x80)
            x |= (uint64_t)(*g++ & 0x7f) << sh, sh += 7;
        x |= (uint64_t)*g++ << sh;
        idx[j++] = (uint32_t)(next + x);
        next += x + 1;
    }
    return j;
}

static int bits_for(uint32_t v) { return v ? 32 - __builtin_clz(v) : 0; }

static volatile uint64_t sink;

static void index_streams(const char *name, const float *v, uint64_t n)
{
    double fracs[] = {0.001, 0.003, 0.01, 0.03, 0.1};
    uint32_t *idx = malloc(n * sizeof *idx), *out = malloc(n * sizeof *out);
    uint8_t *packed = malloc(n * 5 + 1024);
    for (int fi = 0; fi < 5; fi++) {
        char spec[32];
        snprintf(spec, sizeof spec, "topk:%g", fracs[fi]);
        mm_codec *c = make(spec, n);
        uint64_t k = mm_codec_k(mm_codec_get_spec(c), n);
        uint8_t *p = malloc(mm_codec_max_bytes(c));
        size_t len;
        char why[256];
        mm_codec_encode(c, v, NULL, 0, p, mm_codec_max_bytes(c), &len, NULL, why, sizeof why);
        topk_indices(p, len, k, idx);
        double varint = (double)(len - 4 * k) / (double)k;
        /* fixed width per block of 128 gaps: a width byte, then the gaps packed */
        uint64_t bp = 0, eg = 0, u16 = 0;
        uint8_t *w = packed;
        for (uint64_t b = 0; b < k; b += 128) {
            uint64_t e = b + 128 < k ? b + 128 : k;
            int width = 0;
            for (uint64_t j = b; j < e; j++) {
                uint32_t g = idx[j] - (j ? idx[j - 1] + 1 : 0);
                width = bits_for(g) > width ? bits_for(g) : width;
            }
            *w++ = (uint8_t)width;
            uint64_t acc = 0;
            int nb = 0;
            for (uint64_t j = b; j < e; j++) {
                uint32_t g = idx[j] - (j ? idx[j - 1] + 1 : 0);
                acc |= (uint64_t)g << nb;
                nb += width;
                while (nb >= 8)
                    *w++ = (uint8_t)acc, acc >>= 8, nb -= 8;
            }
            if (nb)
                *w++ = (uint8_t)acc;
        }
        bp = (uint64_t)(w - packed);
        for (uint64_t j = 0; j < k; j++) {
            uint32_t g = idx[j] - (j ? idx[j - 1] + 1 : 0) + 1;
            eg += 2 * (uint64_t)(bits_for(g) - 1) + 1;      /* Elias gamma of gap + 1 */
            u16 += idx[j] - (j ? idx[j - 1] + 1 : 0) < 65535 ? 2 : 6; /* u16, escape + u32 */
        }
        /* decode speed: varint stream vs the packed blocks vs absolute u32 */
        double tv = 1e9, tb = 1e9, tu = 1e9;
        for (int r = 0; r < reps; r++) {
            double t0 = now_s();
            sink += topk_indices(p, len, k, out);
            double t1 = now_s();
            const uint8_t *rp = packed;
            uint64_t next = 0, j = 0;
            while (j < k) {
                int width = *rp++;
                uint64_t e = j + 128 < k ? j + 128 : k, acc = 0;
                int have = 0;
                for (; j < e; j++) {
                    while (have < width)
                        acc |= (uint64_t)*rp++ << have, have += 8;
                    uint32_t g = (uint32_t)(acc & ((1ULL << width) - 1));
                    acc >>= width, have -= width;
                    out[j] = (uint32_t)(next + g);
                    next += g + 1;
                }
            }
            double t2 = now_s();
            memcpy(out, idx, k * sizeof *idx); /* u32 absolute: a copy */
            sink += out[k - 1];
            double t3 = now_s();
            tv = fmin(tv, t1 - t0), tb = fmin(tb, t2 - t1), tu = fmin(tu, t3 - t2);
        }
        if (memcmp(out, idx, k * sizeof *idx))
            fprintf(stderr, "index decode mismatch\n");
        printf("index,%s,%g,%llu,%.3f,4.000,%.3f,%.3f,%.3f,%.2f,%.2f,%.2f\n", name, fracs[fi],
               (unsigned long long)k, varint, (double)bp / (double)k, (double)u16 / (double)k,
               (double)eg / 8.0 / (double)k, tv / (double)k * 1e9, tb / (double)k * 1e9,
               tu / (double)k * 1e9);
        fflush(stdout);
        free(p);
        mm_codec_free(c);
    }
    free(idx), free(out), free(packed);
}

static int by_abs_desc(const void *a, const void *b)
{
    float x = fabsf(*(const float *)a), y = fabsf(*(const float *)b);
    return x < y ? 1 : x > y ? -1 : 0;
}

static void selection(const char *name, const float *v, uint64_t n)
{
    double fracs[] = {0.001, 0.01, 0.1};
    float *tmp = malloc(n * sizeof *tmp);
    for (int fi = 0; fi < 3; fi++) {
        char spec[32];
        snprintf(spec, sizeof spec, "topk:%g", fracs[fi]);
        mm_codec *c = make(spec, n);
        uint8_t *p = malloc(mm_codec_max_bytes(c)), *p2 = malloc(mm_codec_max_bytes(c));
        size_t len = 0, len2 = 0;
        char why[256];
        double ts = 1e9, tx = 1e9, tq = 1e9;
        for (int r = 0; r < reps; r++) {
            mm_codec_topk_exact_only(c, false);
            double t0 = now_s();
            mm_codec_encode(c, v, NULL, 0, p, mm_codec_max_bytes(c), &len, NULL, why, sizeof why);
            double t1 = now_s();
            mm_codec_topk_exact_only(c, true);
            mm_codec_encode(c, v, NULL, 0, p2, mm_codec_max_bytes(c), &len2, NULL, why, sizeof why);
            double t2 = now_s();
            ts = fmin(ts, t1 - t0), tx = fmin(tx, t2 - t1);
        }
        if (len != len2 || memcmp(p, p2, len))
            fprintf(stderr, "select: sampled and exact payloads differ\n");
        if (fi == 1) { /* the sort does not depend on F: once */
            double t0 = now_s();
            memcpy(tmp, v, n * sizeof *tmp);
            qsort(tmp, n, sizeof *tmp, by_abs_desc);
            tq = now_s() - t0;
        }
        double gb = 4.0 * (double)n / 1e9;
        printf("select,%s,%g,%llu,%.2f,%.2f,%.2f,%.2f,%.2f\n", name, fracs[fi],
               (unsigned long long)n, ts * 1e3, tx * 1e3, fi == 1 ? tq * 1e3 : NAN, gb / ts,
               gb / tx);
        fflush(stdout);
        free(p), free(p2);
        mm_codec_free(c);
    }
    free(tmp);
}

int main(int argc, char **argv)
{
    uint64_t n = 1u << 20;
    const char *vfile = NULL, *wfile = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n")) n = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "-r")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-v")) vfile = argv[i + 1];
        else if (!strcmp(argv[i], "-w")) wfile = argv[i + 1];
        else { fprintf(stderr, "usage: codec_design [-n FLOATS] [-r REPS] [-v FILE [-w FILE]]\n"); return 2; }
    }
    typedef struct { const char *name; float *v; uint64_t n; } vec;
    vec vecs[2];
    int nv = 0;
    if (vfile) {
        uint64_t m, m2;
        float *a = mv_read(vfile, &m);
        if (!a)
            return 1;
        vecs[nv++] = (vec){"real-params", a, m};
        if (wfile) {
            float *b = mv_read(wfile, &m2);
            if (!b || m2 != m) {
                fprintf(stderr, "codec_design: %s and %s differ in length\n", vfile, wfile);
                return 1;
            }
            for (uint64_t i = 0; i < m; i++)
                b[i] = a[i] - b[i];
            vecs[nv++] = (vec){"real-diff", b, m};
        }
    } else {
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        mv_fill(a, n, 1, 0);
        mv_fill(b, n, 2, 1);
        vecs[nv++] = (vec){"params", a, n};
        vecs[nv++] = (vec){"diff", b, n};
    }
    printf("# blocks,vector,codec,block,bytes_per_float,rel_err,enc_gbs,enc_ref_gbs,apply_gbs\n"
           "# index,vector,frac,k,varint_bytes_per_index,u32_abs,bitpack128,u16_escape,"
           "elias_gamma,varint_ns,bitpack_ns,u32_ns\n"
           "# select,vector,frac,n,sampled_ms,exact_ms,qsort_ms,sampled_gbs,exact_gbs\n");
    for (int i = 0; i < nv; i++) {
        fprintf(stderr, "codec_design: %s, %llu floats\n", vecs[i].name,
                (unsigned long long)vecs[i].n);
        blocks(vecs[i].name, vecs[i].v, vecs[i].n);
        index_streams(vecs[i].name, vecs[i].v, vecs[i].n);
        selection(vecs[i].name, vecs[i].v, vecs[i].n);
        free(vecs[i].v);
    }
    return 0;
}
