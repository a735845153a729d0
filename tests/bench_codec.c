/* The codec rows of make bench-gossip: for each codec, on model-like
 * vectors (tests/modelvec.h) of 1 M and 16 M floats,
 *   - encode and decode speed on one core, in GB/s of float32 input:
 *     plain encode Q(x), CHOCO encode Q(x - ref) with ref updated, decode
 *     into a vector, and apply to a copy (CHOCO receive);
 *   - bytes on the wire per float;
 *   - the effective parameter throughput over TLS: n floats per exchange
 *     moved by the real transport as the codec's payload, with the CHOCO
 *     encode on the sender's loop thread and the apply on the receiver's,
 *     in float32-equivalent GB/s (4 n bytes per exchange over the wall
 *     time), next to fp32 over TLS measured in the same trials (the plain
 *     transport with the plain vector: today's exchange). Vectors go back
 *     to back, so the sender encodes the next while the last is in
 *     flight; "seq" is one exchange with nothing overlapped: CHOCO encode,
 *     the payload alone over TLS, apply, one after the other.
 * Best of the trials, interleaved. Asserts nothing about speed; fails when
 * a receiver's copy does not end equal to the sender's ref. */
#include "tests/bench_codec.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gossip/choco.h"
#include "gossip/codec.h"
#include "gossip/mix.h"
#include "tests/modelvec.h"

#define SLOTS 4

struct bench_codec_run {
    mm_codec *enc, *dec;
    uint64_t n;
    const float *xa, *xb;   /* x alternates between the two: x - ref stays a real difference */
    float *ref, *copy;
    uint8_t *slot[SLOTS];
    size_t len[SLOTS];
    atomic_uint_fast64_t encoded, decoded;
    atomic_int bad;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bcr_before_send(bench_codec_run *r, uint64_t round)
{
    /* the slot must have been applied by the receiver (a few vectors may
     * be in flight in the transport) */
    while (round >= atomic_load_explicit(&r->decoded, memory_order_acquire) + SLOTS &&
           !atomic_load(&r->bad))
        usleep(20);
    char why[256];
    int s = (int)(round % SLOTS);
    if (mm_codec_encode(r->enc, round % 2 ? r->xb : r->xa, r->ref, round, r->slot[s],
                        mm_codec_max_bytes(r->enc), &r->len[s], NULL, why, sizeof why)) {
        fprintf(stderr, "bench: encode: %s\n", why);
        atomic_fetch_add(&r->bad, 1);
    }
    atomic_store_explicit(&r->encoded, round + 1, memory_order_release);
}

void bcr_on_receive(bench_codec_run *r, uint64_t round)
{
    char why[256];
    int s = (int)(round % SLOTS);
    if (atomic_load_explicit(&r->encoded, memory_order_acquire) <= round ||
        mm_codec_apply(r->dec, r->slot[s], r->len[s], r->copy, NULL, why, sizeof why)) {
        fprintf(stderr, "bench: apply: %s\n", why);
        atomic_fetch_add(&r->bad, 1);
    }
    atomic_store_explicit(&r->decoded, round + 1, memory_order_release);
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

/* One trial of the transport with the codec riding it: bytes of float32
 * parameters per second, 0 on failure. *xfer: bytes/s of the payload alone
 * over the same transport (no codec work), for the sequential figure. */
static double tls_trial(const char *certdir, const char *spec, const float *xa, const float *xb,
                        uint64_t n, size_t reps, double bytes_per_float, int *failures,
                        double *xfer)
{
    bench_codec_run r = {0};
    r.enc = make(spec, n);
    r.dec = make(spec, n);
    r.n = n;
    r.xa = xa;
    r.xb = xb;
    r.ref = calloc(n, sizeof(float));
    r.copy = calloc(n, sizeof(float));
    double rate = 0;
    if (!r.enc || !r.dec || !r.ref || !r.copy)
        goto out;
    for (int s = 0; s < SLOTS; s++)
        if (!(r.slot[s] = malloc(mm_codec_max_bytes(r.enc))))
            goto out;
    /* the carrier: the payload's length (top-k's varies a little from one
     * exchange to the next: the one measured), in whole floats */
    size_t carrier = ((size_t)(bytes_per_float * (double)n + 0.5) + 3) / 4 * 4;
    if (carrier < 4)
        carrier = 4;
    int bad = 0;
    double cpu, bytes_s = bench_transport_run(certdir, false, carrier, reps, &bad, &cpu, &r);
    *xfer = bench_transport_run(certdir, false, carrier, reps, &bad, &cpu, NULL);
    if (bad || atomic_load(&r.bad) || !bytes_s) {
        *failures += 1;
        goto out;
    }
    if (memcmp(r.ref, r.copy, n * sizeof(float))) {
        fprintf(stderr, "bench: %s: the receiver's copy differs from the sender's ref\n", spec);
        *failures += 1;
        goto out;
    }
    rate = bytes_s / (double)carrier * 4.0 * (double)n; /* exchanges/s times 4n */
out:
    for (int s = 0; s < SLOTS; s++)
        free(r.slot[s]);
    free(r.ref), free(r.copy);
    mm_codec_free(r.enc), mm_codec_free(r.dec);
    return rate;
}

typedef struct {
    double enc, enc_ref, dec, apply; /* seconds, best of */
    double bytes_per_float;
} speeds;

/* One core, no transport: seconds for each operation on n floats. */
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
    sp->enc = fmin(sp->enc, t1 - t0);
    sp->dec = fmin(sp->dec, t2 - t1);
    sp->enc_ref = fmin(sp->enc_ref, t4 - t3);
    sp->apply = fmin(sp->apply, t5 - t4);
    sp->bytes_per_float = (double)len / (double)n;
    mm_codec_free(c);
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
        mm_mix_round(x, b, n, 1.0, 1.0 / 3, in, 2, 0, 0);
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
    if (csv)
        fprintf(csv, "floats,codec,bytes_per_float,enc_gbs,enc_ref_gbs,dec_gbs,apply_gbs,"
                     "tls_eff_gbs,fp32_tls_gbs,ratio_vs_fp32_tls,seq_eff_gbs,seq_ratio\n");
    printf("\ncodecs on model-like vectors, best of %d trials: per-core speed in GB/s of float32\n"
           "input (enc: Q(x); enc+ref: Q(x - ref), ref updated (CHOCO send); dec: into a vector;\n"
           "apply: into a copy (CHOCO receive)), bytes per float, and parameters moved over TLS in\n"
           "float32-equivalent GB/s (CHOCO encode on the sender's loop thread, apply on the\n"
           "receiver's, vectors back to back: TLS eff) against fp32 over TLS (today's\n"
           "exchange) in the same trials; seq: one exchange alone, nothing overlapped: CHOCO\n"
           "encode + the payload over TLS + apply\n"
           "%-9s %-11s %7s %6s %7s %6s %6s %8s %8s %8s %7s %7s\n", trials, "floats", "codec",
           "B/float", "enc", "enc+ref", "dec", "apply", "TLS eff", "seq eff", "fp32 TLS",
           "ratio", "seq");
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
        double eff[32] = {0}, xfer[32] = {0}, fp32 = 0;
        for (int c = 0; c < n_codecs; c++)
            sp[c] = (speeds){1e9, 1e9, 1e9, 1e9, 0};
        for (int t = 0; t < trials; t++) {
            int bad = 0;
            double cpu;
            fp32 = fmax(fp32, bench_transport_run(certdir, false, size, reps, &bad, &cpu, NULL));
            failures += bad;
            for (int c = 0; c < n_codecs; c++) {
                speed_trial(spec[c], xa, xb, n, ref, copy, buf, &sp[c], &failures);
                double x = 0;
                eff[c] = fmax(eff[c], tls_trial(certdir, spec[c], xa, xb, n, reps,
                                                sp[c].bytes_per_float, &failures, &x));
                xfer[c] = fmax(xfer[c], x);
            }
        }
        for (int c = 0; c < n_codecs; c++) {
            double gb = 4.0 * (double)n / 1e9;
            /* one exchange with nothing overlapped: encode, send, apply */
            double t_x = xfer[c] > 0 ? sp[c].bytes_per_float * (double)n / xfer[c] : INFINITY;
            /* (xfer is bytes/s of the carrier: the payload rounded up to whole floats) */
            double seq = 4.0 * (double)n / (sp[c].enc_ref + t_x + sp[c].apply);
            printf("%-9llu %-11s %7.4f %6.2f %7.2f %6.2f %6.2f %8.2f %8.2f %8.2f %6.2fx %6.2fx\n",
                   (unsigned long long)n, spec[c], sp[c].bytes_per_float, gb / sp[c].enc,
                   gb / sp[c].enc_ref, gb / sp[c].dec, gb / sp[c].apply, eff[c] / 1e9,
                   seq / 1e9, fp32 / 1e9, fp32 > 0 ? eff[c] / fp32 : 0,
                   fp32 > 0 ? seq / fp32 : 0);
            if (csv)
                fprintf(csv, "%llu,%s,%.5f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n",
                        (unsigned long long)n, spec[c], sp[c].bytes_per_float, gb / sp[c].enc,
                        gb / sp[c].enc_ref, gb / sp[c].dec, gb / sp[c].apply, eff[c] / 1e9,
                        fp32 / 1e9, fp32 > 0 ? eff[c] / fp32 : 0, seq / 1e9,
                        fp32 > 0 ? seq / fp32 : 0);
        }
        double mix[2];
        mix_speed(n, xa, xb, ref, mix);
        printf("%-9llu consensus step of a ring peer (x and 3 vectors): mm_mix_round %.2f GB/s, "
               "mm_choco_mix (one pass) %.2f GB/s\n", (unsigned long long)n, mix[0] / 1e9,
               mix[1] / 1e9);
        fflush(stdout);
        free(xa), free(xb), free(ref), free(copy), free(buf);
    }
    printf("targets: int8 over TLS >= 2.5x fp32 over TLS; every codec >= 2 GB/s per core\n");
    return failures;
}
