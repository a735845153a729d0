/* What instantiating a family costs (gossip/topology.h, mm_topo_instantiate):
 * for each family and member counts 8 .. 1024 (up to 2^20 for the sparse
 * ones with BENCH_LARGE=1), the median CPU time (and wall time) of one
 * instantiation,
 * next to the baseline measured in the same run: `murmur topo gen` of the
 * same kind and count and the load of what it makes (mm_topo_generate +
 * mm_topo_build), what a static peer pays once at start. Counts are powers
 * of two, where each family is its generator's graph with no fallback.
 * Prints one line per (family, k) and the load average before and after:
 * the machine may be shared. `make bench-topo-family`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gossip/topology.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU time of this thread: on a shared, loaded machine wall time mostly
 * measures the others. */
static double cpu(void) { return clock_s(CLOCK_THREAD_CPUTIME_ID); }

static void loadavg(const char *when)
{
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            snprintf(buf, sizeof buf, "?\n");
        fclose(f);
    }
    printf("# load average %s: %s", when, buf);
}

typedef struct {
    const char *file; /* the family file */
    const char *kind; /* the generator's kind */
    int degree;       /* -k / -d */
} bench_family;

static const bench_family families[] = {
    {"peers 8\nfamily ring\n", "ring", 0},
    {"peers 8\nfamily exp\n", "exp", 0},
    {"peers 8\nfamily one-peer-exp\n", "one-peer-exp", 0},
    {"peers 8\nfamily base 1\n", "base", 1},
    {"peers 8\nfamily complete\n", "complete", 0},
    {"peers 8\nfamily regular 3 seed 1\n", "regular", 3},
    {"peers 8\nfamily torus\n", "torus", 0},
};

#define REPS_MAX 50
#define REPS_SECONDS 0.5

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median CPU seconds (and wall seconds in *wall) of one call of
 * instantiate (family != NULL) or of generate + build, repeated until
 * REPS_SECONDS or REPS_MAX; -1 on failure. */
static double median_time(const mm_topology *family, const bench_family *b, int k, double *wall)
{
    double t[REPS_MAX], w[REPS_MAX], start = now();
    int reps = 0;
    char err[512];
    while (reps < REPS_MAX && (reps < 3 || now() - start < REPS_SECONDS)) {
        double t0 = cpu(), w0 = now();
        mm_topology *x = NULL;
        if (family) {
            x = mm_topo_instantiate(family, k, err, sizeof err);
        } else {
            mm_gen_opts o = {.n = k, .degree = b->degree, .seed = 1};
            mm_topo_spec s;
            if (mm_topo_generate(b->kind, &o, &s, err, sizeof err) == 0) {
                x = mm_topo_build(&s, b->kind, err, sizeof err);
                mm_topo_spec_free(&s);
            }
        }
        w[reps] = now() - w0;
        t[reps++] = cpu() - t0;
        if (!x) {
            fprintf(stderr, "bench_topo_family: %s at %d: %s\n", b->kind, k, err);
            return -1;
        }
        mm_topo_free(x);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    qsort(w, (size_t)reps, sizeof *w, cmp_double);
    *wall = w[reps / 2];
    return t[reps / 2];
}

int main(void)
{
    bool large = getenv("BENCH_LARGE") && atoi(getenv("BENCH_LARGE"));
    loadavg("at start");
    printf("%-14s %8s %14s %14s %7s %12s %12s\n", "family", "members", "instantiate_ms",
           "gen_build_ms", "ratio", "inst_wall_ms", "gen_wall_ms");
    printf("# _ms: median CPU time of one call; ratio = instantiate / gen_build\n");
    int rc = 0;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        const bench_family *b = &families[i];
        char err[512];
        mm_topology *f = mm_topo_parse(b->file, strlen(b->file), "bench", err, sizeof err);
        if (!f) {
            fprintf(stderr, "bench_topo_family: %s\n", err);
            return 1;
        }
        int top = large && strcmp(b->kind, "complete") ? 1 << 20 : 1024;
        for (int k = 8; k <= top; k *= 2) {
            double wi, wg, ti = median_time(f, b, k, &wi), tg = median_time(NULL, b, k, &wg);
            if (ti < 0 || tg < 0) {
                rc = 1;
                continue;
            }
            printf("%-14s %8d %14.3f %14.3f %7.2f %12.3f %12.3f\n", b->kind, k, ti * 1e3, tg * 1e3,
                   ti / tg, wi * 1e3, wg * 1e3);
            fflush(stdout);
        }
        mm_topo_free(f);
    }
    loadavg("at end");
    return rc;
}
