/* make bench-allreduce: the centralized baseline murmur's gossip is set
 * against. Times Open MPI's MPI_Allreduce (sum of floats, in place) of
 * vectors of several sizes on the ranks mpirun gives it, and writes one CSV
 * row per repetition. Built with mpicc, only for the benchmark (not part of
 * libmurmur or the tests); scripts/bench-allreduce.sh runs it over TCP for
 * 4 and 8 ranks and prints the table.
 *
 *   mpirun -np N bench_allreduce [--sizes MB,MB,...] [--reps R] [--warmup W]
 *                                [--max-seconds S] [--csv FILE] [--impl NAME]
 *                                [--pair P]
 *
 * One repetition: every rank fills its vector with rank+1 (outside the
 * timing), MPI_Barrier, then the timed MPI_Allreduce; its time is the
 * slowest rank's. The sum n(n+1)/2 is exact in float, and every rank checks
 * every element: a wrong result fails the run (exit 1). --max-seconds S
 * bounds a size's timed repetitions: the run stops after the one that takes
 * their total (slowest rank's times) past S, so that a machine too busy for
 * R repetitions in the benchmark's time budget gives fewer, not a hang.
 *
 * CSV columns (long format, so that other implementations, e.g. murmur's
 * own ring all-reduce, add rows of their own under another `impl`):
 *   impl,ranks,vector_mb,bytes,pair,rep,seconds,algbw_gbs,busbw_gbs
 * pair is --pair's number (default 0): the script runs MPI and murmur in
 * turn, A B A B, and takes their ratio pair by pair.
 * algbw = bytes / seconds: bytes of the vector reduced per second, on each
 * rank (NCCL-tests' "algorithm bandwidth"; docs/runtime.md uses the same);
 * busbw = algbw * 2(n-1)/n, what each rank's link carried for a ring. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_sizes(const char *s, int *mb, int max)
{
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) {
        char *end;
        long v = strtol(tok, &end, 10);
        if (*end || v < 1 || v > 4096)
            return -1;
        mb[n++] = (int)v;
    }
    return n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int mb[16] = {1, 4, 16, 64}, nsizes = 4, reps = 5, warmup = 1, pair = 0;
    double max_seconds = 0; /* 0: no bound */
    const char *csv = NULL, *impl = "mpi";
    for (int i = 1; i < argc; i += 2) { /* each option and its value */
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = v != NULL;
        if (ok && !strcmp(argv[i], "--sizes"))
            ok = (nsizes = parse_sizes(v, mb, 16)) > 0;
        else if (ok && !strcmp(argv[i], "--reps"))
            ok = (reps = atoi(v)) >= 1 && reps <= 10000;
        else if (ok && !strcmp(argv[i], "--warmup"))
            ok = (warmup = atoi(v)) >= 0 && warmup <= 1000;
        else if (ok && !strcmp(argv[i], "--max-seconds"))
            ok = (max_seconds = atof(v)) > 0;
        else if (ok && !strcmp(argv[i], "--csv"))
            csv = v;
        else if (ok && !strcmp(argv[i], "--impl"))
            impl = v;
        else if (ok && !strcmp(argv[i], "--pair"))
            ok = (pair = atoi(v)) >= 0 && pair <= 100000;
        else
            ok = 0;
        if (!ok) {
            if (rank == 0)
                fprintf(stderr, "usage: bench_allreduce [--sizes MB,...] [--reps R] [--warmup W] "
                                "[--max-seconds S] [--csv FILE] [--impl NAME] [--pair P]  (bad: %s)\n", argv[i]);
            MPI_Finalize();
            return 2;
        }
    }
    FILE *out = NULL;
    if (rank == 0 && csv) {
        out = fopen(csv, "a");
        if (!out) {
            perror(csv);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int bad = 0;
    for (int s = 0; s < nsizes; s++) {
        size_t bytes = (size_t)mb[s] << 20, len = bytes / sizeof(float);
        float *v = malloc(bytes);
        if (!v) {
            fprintf(stderr, "bench_allreduce: rank %d: no memory for %d MB\n", rank, mb[s]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        float want = (float)n * (float)(n + 1) / 2;
        double timed = 0;
        int stop = 0;
        for (int r = -warmup; r < reps && !stop; r++) {
            for (size_t k = 0; k < len; k++)
                v[k] = (float)(rank + 1);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(MPI_IN_PLACE, v, (int)len, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t = MPI_Wtime() - t0, tmax = 0;
            for (size_t k = 0; k < len; k++)
                if (v[k] != want) {
                    bad++;
                    break;
                }
            MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0 && r >= 0) {
                double alg = (double)bytes / tmax / 1e9, bus = alg * 2.0 * (n - 1) / n;
                printf("%-6s ranks %2d  %4d MB  pair %2d  rep %2d  %8.4f s  algbw %6.3f GB/s  "
                       "busbw %6.3f GB/s\n", impl, n, mb[s], pair, r, tmax, alg, bus);
                fflush(stdout);
                if (out)
                    fprintf(out, "%s,%d,%d,%zu,%d,%d,%.6f,%.6f,%.6f\n", impl, n, mb[s], bytes, pair,
                            r, tmax, alg, bus);
                timed += tmax;
                stop = max_seconds > 0 && timed > max_seconds;
            }
            MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
        }
        free(v);
    }
    int all_bad = 0;
    MPI_Reduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (out)
        fclose(out);
    if (rank == 0 && all_bad)
        fprintf(stderr, "bench_allreduce: %d wrong results\n", all_bad);
    MPI_Bcast(&all_bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
