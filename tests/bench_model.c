/* Training throughput of the default model: forward + backward + AdamW
 * step through the same mm_model_* / mm_adamw_* calls as `murmur train`,
 * batch 16, context 64 (overridable). Also measures a 1024^3 sgemm in the
 * same process, so the model's achieved FLOP/s can be read against what
 * the BLAS can do on this machine right now (the machine is shared and
 * noisy: figures are medians).
 *
 *   bench_model [steps] [B] [T]
 * Prints key=value lines (parsed by scripts/bench_model.sh). Threads are
 * OpenBLAS's: set OPENBLAS_NUM_THREADS. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "model/model.h"
#include "base/rng.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of the whole process (every thread): unlike wall time, what
 * the work cost, whatever else shares the cores */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* 1024^3 sgemm: GFLOP/s over the median wall time, and over the median
 * CPU time (all threads' seconds) in *cpu_gflops */
static double sgemm_gflops(double *cpu_gflops)
{
    int n = 1024, reps = 5;
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n);
    float *c = malloc(sizeof(float) * n * n);
    *cpu_gflops = 0;
    if (!a || !b || !c)
        return 0;
    for (long i = 0; i < (long)n * n; i++) {
        a[i] = (float)(i % 7) * 0.1f;
        b[i] = (float)(i % 5) * 0.1f;
    }
    double t[5], tc[5];
    for (int r = 0; r < reps; r++) {
        double t0 = now(), c0 = cpu_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n,
                    0.0f, c, n);
        t[r] = now() - t0;
        tc[r] = cpu_now() - c0;
    }
    free(a);
    free(b);
    free(c);
    double flops = 2.0 * n * n * (double)n;
    *cpu_gflops = flops / median(tc, reps) / 1e9;
    return flops / median(t, reps) / 1e9;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 40;
    int B = argc > 2 ? atoi(argv[2]) : 16;
    int T = argc > 3 ? atoi(argv[3]) : 64;
    if (steps < 3 || steps > 100000 || B < 1 || B > 4096 || T < 1) {
        fprintf(stderr, "usage: bench_model [steps>=3] [B] [T]\n");
        return 2;
    }
    mm_model_config cfg = mm_model_config_default();
    if (T > cfg.n_ctx) {
        fprintf(stderr, "bench_model: T must be <= %d\n", cfg.n_ctx);
        return 2;
    }
    mm_model m;
    char err[256];
    if (mm_model_init(&m, &cfg, 1337, err, sizeof err) != 0) {
        fprintf(stderr, "bench_model: %s\n", err);
        return 1;
    }
    /* OPENBLAS_NUM_THREADS says how many threads the model gets, and the
     * sgemm below (the model's setting may leave OpenBLAS at 1) */
    int threads = openblas_get_num_threads();
    mm_model_set_threads(&m, threads);
    mm_adamw opt;
    mm_adamw_config ocfg = mm_adamw_config_default();
    if (mm_adamw_init(&opt, &ocfg, m.n_params) != 0) {
        fprintf(stderr, "bench_model: out of memory\n");
        return 1;
    }
    /* random bytes: the throughput does not depend on the text */
    size_t ntok = (size_t)B * (T + 1);
    uint8_t *tok = malloc(ntok);
    mm_rng rng;
    mm_rng_seed(&rng, 1);
    for (size_t i = 0; i < ntok; i++)
        tok[i] = (uint8_t)mm_rng_below(&rng, 256);

    double *dt = malloc(sizeof(double) * (size_t)steps);
    double *dc = malloc(sizeof(double) * (size_t)steps);
    double fwd_t = 0, bwd_t = 0, opt_t = 0;
    float loss = 0;
    int warm = 3;
    for (int s = -warm; s < steps; s++) {
        double t0 = now(), c0 = cpu_now();
        loss = mm_model_forward(&m, tok, B, T);
        double t1 = now();
        mm_model_backward(&m);
        double t2 = now();
        mm_adamw_step(&opt, &m, m.params, m.grads);
        double t3 = now(), c3 = cpu_now();
        if (s >= 0) {
            dt[s] = t3 - t0;
            dc[s] = c3 - c0;
            fwd_t += t1 - t0;
            bwd_t += t2 - t1;
            opt_t += t3 - t2;
        }
    }
    double step = median(dt, steps), cpu_step = median(dc, steps);
    double C = cfg.d_model, L = cfg.n_layer, N = (double)B * T, V = MM_VOCAB;
    /* matmul FLOPs as executed (attention computes the full T x T square);
     * backward does two products per forward one */
    double fwd = 2 * N * 12 * C * C * L + 4.0 * B * T * T * C * L + 2 * N * C * V;
    double flops = 3 * fwd;
    openblas_set_num_threads(threads);
    double peak_cpu, peak = sgemm_gflops(&peak_cpu);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const char *core = openblas_get_corename();
    printf("kernel=%s threads=%d B=%d T=%d params=%zu steps=%d\n", core, m.threads, B, T,
           m.n_params, steps);
    printf("step_ms=%.2f fwd_ms=%.2f bwd_ms=%.2f adamw_ms=%.2f loss=%.4f\n", step * 1e3,
           fwd_t / steps * 1e3, bwd_t / steps * 1e3, opt_t / steps * 1e3, (double)loss);
    printf("tokens_per_s=%.0f\n", N / step);
    printf("model_gflops=%.1f sgemm1024_gflops=%.1f\n", flops / step / 1e9, peak);
    /* per CPU second (all threads): steady under load, and at one thread
     * the same ratio as the wall-clock one on a quiet machine */
    printf("cpu_step_ms=%.2f model_cpu_gflops=%.1f sgemm1024_cpu_gflops=%.1f\n", cpu_step * 1e3,
           flops / cpu_step / 1e9, peak_cpu);
    printf("tokens_per_cpu_s=%.0f\n", N / cpu_step);
    printf("peak_rss_mib=%.1f\n", (double)ru.ru_maxrss / 1024.0);
    free(dt);
    free(dc);
    free(tok);
    mm_adamw_free(&opt);
    mm_model_free(&m);
    return 0;
}
