/* The codec rows of make bench-gossip: for each codec, on model-like
 * vectors (tests/modelvec.h) of 1 M and 16 M floats,
 *   - encode and decode speed on one core, in GB/s of float32 input:
 *     plain encode Q(x), CHOCO encode Q(x - ref) with ref updated, decode
 *     into a vector, and apply to a copy (CHOCO receive); the receiver's
 *     copy must end equal to the sender's ref;
 *   - bytes on the wire per float;
 *   - the effective parameter throughput over TLS, in float32-equivalent
 *     GB/s: 4 n bytes per exchange over the time of a CHOCO encode, of the
 *     payload's bytes crossing the real TLS transport (measured here, back
 *     to back, exactly as fp32 is), and of the apply, one after the other;
 *     next to fp32 over TLS (today's exchange: the plain vector, nothing to
 *     encode) measured in the same trials. "overlap" is what the same three
 *     would give if each had a core to itself (a payload streamed in
 *     chunks): 4 n over the slowest of them.
 * Speeds are the best of the trials. The ratios to fp32 are taken pair by
 * pair: in every trial each codec's exchange (encode, payload, apply) runs
 * right after an fp32 exchange of its own, A B A B, and the table prints
 * the median of those per-trial ratios with their range (the machine is
 * shared: a ratio of two bests measured seconds apart does not hold), and
 * the load average. Asserts nothing about speed. */
#include "tests/bench_codec.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gossip/choco.h"
#include "gossip/codec.h"
#include "gossip/mix.h"
#include "tests/modelvec.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static mm_codec *make(const char *text, uint64_t n)
{
    mm_codec_spec s;
    char err[256];
    if (mm_codec_parse(text, &s, err, sizeof err) != 0) {
        fprintf(stderr, "bench: %s\n", err);
        return NULL;
    }
    mm_codec *c = mm_codec_new(&s, n, err, sizeof err);
    if (!c)
        fprintf(stderr, "bench: %s\n", err);
    return c;
}

/* The payload of one exchange crossing the TLS transport, back to back
 * like fp32's vectors: bytes/s of a carrier of the payload's length (the
 * transport's VECTOR frames carry floats it checks for NaN, so the codec's
 * own bytes cannot ride it until the integration adds a frame for them; the
 * cipher and the socket do not care what the bytes are). */
static double payload_trial(const char *certdir, double bytes, size_t reps, int *failures)
{
    size_t carrier = ((size_t)(bytes + 0.5) + 3) / 4 * 4;
    if (carrier < 4)
        carrier = 4;
    int bad = 0;
    double cpu, rate = bench_transport_run(certdir, false, carrier, reps, &bad, &cpu);
    *failures += bad || !rate;
    return rate;
}

typedef struct {
    double enc, enc_ref, dec, apply; /* seconds, best of */
    double bytes_per_float;
} speeds;

/* One core, no transport: seconds for each operation on n floats, this
 * trial's in *sp (left as it was on failure). */
static void speed_trial(const char *spec, const float *xa, const float *xb, uint64_t n,
                        float *ref, float *copy, uint8_t *buf, speeds *sp, int *failures)
{
    mm_codec *c = make(spec, n);
    if (!c) {
        *failures += 1;
        return;
    }
    char why[256];
    size_t len = 0;
    memset(ref, 0, n * sizeof *ref);
    memset(copy, 0, n * sizeof *copy);
    /* a first CHOCO exchange so that x - ref below is a real difference */
    if (mm_codec_encode(c, xa, ref, 1, buf, mm_codec_max_bytes(c), &len, NULL, why, sizeof why) ||
        mm_codec_apply(c, buf, len, copy, NULL, why, sizeof why)) {
        fprintf(stderr, "bench: %s: %s\n", spec, why);
        *failures += 1;
        mm_codec_free(c);
        return;
    }
    double t0 = now_s();
    int e = mm_codec_encode(c, xb, NULL, 2, buf, mm_codec_max_bytes(c), &len, NULL, why, sizeof why);
    double t1 = now_s();
    e |= mm_codec_decode(c, buf, len, copy, why, sizeof why);
    double t2 = now_s();
    memcpy(copy, ref, n * sizeof *ref);
    double t3 = now_s();
    e |= mm_codec_encode(c, xb, ref, 3, buf, mm_codec_max_bytes(c), &len, NULL, why, sizeof why);
    double t4 = now_s();
    e |= mm_codec_apply(c, buf, len, copy, NULL, why, sizeof why);
    double t5 = now_s();
    if (e || memcmp(ref, copy, n * sizeof *ref)) {
        fprintf(stderr, "bench: %s: %s\n", spec, e ? why : "copy differs from ref");
        *failures += 1;
    }
    sp->enc = t1 - t0;
    sp->dec = t2 - t1;
    sp->enc_ref = t4 - t3;
    sp->apply = t5 - t4;
    sp->bytes_per_float = (double)len / (double)n;
    mm_codec_free(c);
}

static void fold_best(speeds *best, const speeds *t)
{
    best->enc = fmin(best->enc, t->enc);
    best->dec = fmin(best->dec, t->dec);
    best->enc_ref = fmin(best->enc_ref, t->enc_ref);
    best->apply = fmin(best->apply, t->apply);
    best->bytes_per_float = t->bytes_per_float;
}

/* 4n / (encode + payload + apply) and 4n / the slowest of the three, in
 * bytes of float32 per second, for payload bytes/s xfer (0: failed). */
static void exchange_rates(const speeds *sp, uint64_t n, double xfer, double *seq,
                           double *overlap)
{
    double t_x = xfer > 0 ? sp->bytes_per_float * (double)n / xfer : INFINITY;
    *seq = 4.0 * (double)n / (sp->enc_ref + t_x + sp->apply);
    *overlap = 4.0 * (double)n / fmax(sp->enc_ref, fmax(t_x, sp->apply));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorted in place), its range in *lo, *hi. */
static double median_range(double *v, int n, double *lo, double *hi)
{
    if (n < 1) {
        *lo = *hi = 0;
        return 0;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *lo = v[0];
    *hi = v[n - 1];
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void load_avg(char *out, size_t len)
{
    double l[3] = {0, 0, 0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f || fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3)
        snprintf(out, len, "n/a");
    else
        snprintf(out, len, "%.2f %.2f %.2f", l[0], l[1], l[2]);
    if (f)
        fclose(f);
}

/* The consensus step of a ring peer (two neighbours), as mm_mix_round
 * does it today and as mm_choco_mix does it in one pass: GB/s of x. */
static void mix_speed(uint64_t n, const float *a, const float *b, float *x, double out[2])
{
    mm_mix_input in[2] = {{.x = a, .weight = 1.0 / 3, .w = 1}, {.x = b, .weight = 1.0 / 3, .w = 1}};
    out[0] = out[1] = 0;
    for (int t = 0; t < 3; t++) {
        memcpy(x, a, n * sizeof *x);
        double t0 = now_s();
        mm_mix_round(x, b, n, 1.0, 1.0 / 3, in, 2, 0, 1.0, 0);
        double t1 = now_s();
        mm_choco_mix(x, b, n, 1.0 / 3, in, 2, 1.0);
        double t2 = now_s();
        out[0] = fmax(out[0], 4.0 * (double)n / (t1 - t0));
        out[1] = fmax(out[1], 4.0 * (double)n / (t2 - t1));
    }
}

int bench_codecs(const char *certdir, const char *codecs, const uint64_t *sizes, int n_sizes,
                 size_t per_case, int trials, FILE *csv)
{
    char list[512];
    const char *spec[32];
    int n_codecs = 0, failures = 0;
    snprintf(list, sizeof list, "%s", codecs);
    for (char *t = strtok(list, ","); t && n_codecs < 32; t = strtok(NULL, ","))
        spec[n_codecs++] = t;
    if (!n_codecs)
        return 0;
    if (trials > 64)
        trials = 64;
    if (csv)
        fprintf(csv, "floats,codec,bytes_per_float,enc_gbs,enc_ref_gbs,dec_gbs,apply_gbs,"
                     "tls_eff_gbs,fp32_tls_gbs,ratio_vs_fp32_tls,overlap_gbs,overlap_ratio,"
                     "payload_tls_gbs,ratio_min,ratio_max,overlap_ratio_min,overlap_ratio_max,"
                     "pairs,load_before,load_after\n");
    char load0[64];
    load_avg(load0, sizeof load0);
    printf("\ncodecs on model-like vectors, %d trials; load %s. Per-core speed in GB/s of float32\n"
           "input, best of the trials: enc Q(x); enc+ref Q(x - ref) with ref updated (CHOCO send);\n"
           "dec into a vector; apply into a copy (CHOCO receive). Parameters moved over TLS, in\n"
           "float32-equivalent GB/s, best of the trials: eff = 4n / (CHOCO encode + the payload\n"
           "over TLS + apply), fp32 TLS (today's exchange); overlap = 4n over the slowest of the\n"
           "three (each on its own core, a payload streamed in chunks). ratio, overlap: eff / fp32\n"
           "and overlap / fp32 pair by pair (each codec's exchange right after an fp32 one, in\n"
           "every trial), median (min-max) over the trials\n"
           "%-9s %-11s %7s %6s %7s %6s %6s %8s %8s %8s %17s %17s\n", trials, load0, "floats",
           "codec", "B/float", "enc", "enc+ref", "dec", "apply", "TLS eff", "overlap", "fp32 TLS",
           "ratio", "overlap");
    for (int si = 0; si < n_sizes; si++) {
        uint64_t n = sizes[si];
        size_t size = n * 4, reps = per_case / size < 4 ? 4 : per_case / size;
        float *xa = malloc(size), *xb = malloc(size), *ref = malloc(size), *copy = malloc(size);
        uint8_t *buf = malloc(size + 64);
        if (!xa || !xb || !ref || !copy || !buf) {
            fprintf(stderr, "bench: out of memory for %llu floats\n", (unsigned long long)n);
            return failures + 1;
        }
        mv_fill(xa, n, 1, 0);
        mv_fill(xb, n, 2, 1); /* xb = xa + a model-like difference */
        for (uint64_t i = 0; i < n; i++)
            xb[i] += xa[i];
        speeds sp[32];
        double xfer[32] = {0}, fp32 = 0;
        double ratio[32][64], ovl[32][64];
        int pairs[32] = {0};
        for (int c = 0; c < n_codecs; c++)
            sp[c] = (speeds){1e9, 1e9, 1e9, 1e9, 0};
        for (int t = 0; t < trials; t++) {
            for (int c = 0; c < n_codecs; c++) {
                int bad = 0;
                double cpu, seq, over;
                double f = bench_transport_run(certdir, false, size, reps, &bad, &cpu);
                failures += bad;
                fp32 = fmax(fp32, f);
                speeds cur = {0, 0, 0, 0, 0};
                speed_trial(spec[c], xa, xb, n, ref, copy, buf, &cur, &failures);
                if (cur.bytes_per_float <= 0)
                    continue;
                fold_best(&sp[c], &cur);
                double x = payload_trial(certdir, cur.bytes_per_float * (double)n, reps, &failures);
                xfer[c] = fmax(xfer[c], x);
                exchange_rates(&cur, n, x, &seq, &over);
                if (f > 0 && x > 0) {
                    ratio[c][pairs[c]] = seq / f;
                    ovl[c][pairs[c]++] = over / f;
                }
            }
        }
        char load1[64];
        load_avg(load1, sizeof load1);
        for (int c = 0; c < n_codecs; c++) {
            double gb = 4.0 * (double)n / 1e9, eff, overlap, rlo, rhi, olo, ohi;
            exchange_rates(&sp[c], n, xfer[c], &eff, &overlap);
            double r = median_range(ratio[c], pairs[c], &rlo, &rhi);
            double o = median_range(ovl[c], pairs[c], &olo, &ohi);
            char rs[32], os[32];
            snprintf(rs, sizeof rs, "%.2fx (%.2f-%.2f)", r, rlo, rhi);
            snprintf(os, sizeof os, "%.2fx (%.2f-%.2f)", o, olo, ohi);
            printf("%-9llu %-11s %7.4f %6.2f %7.2f %6.2f %6.2f %8.2f %8.2f %8.2f %17s %17s\n",
                   (unsigned long long)n, spec[c], sp[c].bytes_per_float, gb / sp[c].enc,
                   gb / sp[c].enc_ref, gb / sp[c].dec, gb / sp[c].apply, eff / 1e9,
                   overlap / 1e9, fp32 / 1e9, rs, os);
            if (csv)
                fprintf(csv, "%llu,%s,%.5f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,"
                             "%.4f,%.4f,%.4f,%.4f,%d,%s,%s\n",
                        (unsigned long long)n, spec[c], sp[c].bytes_per_float, gb / sp[c].enc,
                        gb / sp[c].enc_ref, gb / sp[c].dec, gb / sp[c].apply, eff / 1e9,
                        fp32 / 1e9, r, overlap / 1e9, o, xfer[c] / 1e9, rlo, rhi, olo, ohi,
                        pairs[c], load0, load1);
        }
        printf("%-9llu load %s after these rows\n", (unsigned long long)n, load1);
        double mix[2];
        mix_speed(n, xa, xb, ref, mix);
        printf("%-9llu consensus step of a ring peer (x and 3 vectors): mm_mix_round %.2f GB/s, "
               "mm_choco_mix (one pass) %.2f GB/s\n", (unsigned long long)n, mix[0] / 1e9,
               mix[1] / 1e9);
        fflush(stdout);
        free(xa), free(xb), free(ref), free(copy), free(buf);
        snprintf(load0, sizeof load0, "%s", load1);
    }
    printf("targets: int8 over TLS >= 2.5x fp32 over TLS; every codec >= 2 GB/s per core\n");
    return failures;
}
