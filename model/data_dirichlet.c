/* The Dirichlet partition: heterogeneity you can dial. Each peer's mix of
 * genres is drawn from Dirichlet(alpha * pi), pi the corpus's genre shares
 * of training bytes (Hsu et al. 2019, "Measuring the Effects of Non-Identical
 * Data Distribution for Federated Visual Classification"): a large alpha
 * gives every peer nearly the corpus mix (iid), a small one a single genre
 * per peer. Whole files are then handed out so that each peer's bytes
 * follow its mix; no file goes to two peers, and files no peer's mix asks
 * for stay unused. docs/formats.md states every step, so that another
 * implementation makes the same shards; the only floating point is
 * log/exp/sqrt/cos of IEEE doubles, in the order given there. */
#include "model/data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "dirichle", so the draws are not those of any other use of the seed */
#define DIRICHLET_STREAM 0x6469726963686c65ULL

/* Gamma(b) for b >= 1: Marsaglia and Tsang (2000), without the squeeze
 * (which only skips the logarithm, never changes the answer). */
static double gamma_ge1(mm_rng *rng, double b)
{
    double d = b - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = mm_rng_normal(rng), v = 1.0 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = mm_rng_uniform(rng);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

/* log of a Gamma(a) draw, a > 0, as log Gamma(a+1) + log(U)/a with U in
 * (0, 1]: in logs, because for small a the draw underflows a double. */
static double log_gamma_draw(mm_rng *rng, double a)
{
    double g = gamma_ge1(rng, a + 1.0);
    double u = 1.0 - mm_rng_uniform(rng);
    return log(g) + log(u) / a;
}

int mm_data_assign_dirichlet(const mm_data_index *ix, double alpha, uint64_t seed, int n_peers,
                             int *owner, char *err, size_t errlen)
{
    int G = ix->n_genres, n = n_peers;
    double *q = calloc((size_t)n * (size_t)G, sizeof *q);
    double *got = calloc((size_t)n * (size_t)G, sizeof *got);
    double *gbytes = calloc((size_t)G, sizeof *gbytes), *lg = malloc((size_t)G * sizeof *lg);
    double *bytes = calloc((size_t)n, sizeof *bytes);
    int *files = calloc((size_t)n, sizeof *files), *done = calloc((size_t)n, sizeof *done);
    int *next = malloc((size_t)G * sizeof *next); /* each genre's next unassigned file */
    int rc = -1;
    if (!q || !got || !gbytes || !lg || !bytes || !files || !done || !next) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    double total = 0;
    for (int i = 0; i < ix->n_files; i++)
        if (!ix->files[i].val) {
            gbytes[ix->files[i].genre_id] += (double)ix->files[i].bytes;
            total += (double)ix->files[i].bytes;
        }
    for (int i = 0; i < ix->n_files; i++)
        if (!ix->files[i].val)
            owner[i] = -2;

    /* 1. Each peer's mix q_p ~ Dirichlet(alpha * pi), genres without
     *    training bytes left out (q = 0). */
    mm_rng rng;
    mm_rng_seed(&rng, seed ^ DIRICHLET_STREAM);
    for (int p = 0; p < n; p++) {
        double top = -INFINITY, sum = 0;
        for (int g = 0; g < G; g++) {
            lg[g] = gbytes[g] > 0 ? log_gamma_draw(&rng, alpha * (gbytes[g] / total)) : -INFINITY;
            if (lg[g] > top)
                top = lg[g];
        }
        for (int g = 0; g < G; g++)
            sum += (q[p * G + g] = gbytes[g] > 0 ? exp(lg[g] - top) : 0);
        for (int g = 0; g < G; g++)
            q[p * G + g] /= sum;
    }

    /* 2. Hand out files: the unfinished peer with the fewest bytes (ties:
     *    lowest id) takes the next file of the genre it is furthest below
     *    its target q * T in, T = total / n; only genres whose target is at
     *    least half that file count, and only while it is below target. A
     *    peer without a file takes its largest-target genre regardless; a
     *    peer at T bytes, or with nothing left it wants, is finished. */
    for (int g = 0; g < G; g++) {
        next[g] = 0;
        while (next[g] < ix->n_files &&
               (ix->files[next[g]].val || ix->files[next[g]].genre_id != g))
            next[g]++;
    }
    double T = total / n;
    for (;;) {
        int p = -1;
        for (int k = 0; k < n; k++)
            if (!done[k] && (p < 0 || bytes[k] < bytes[p]))
                p = k;
        if (p < 0)
            break;
        bool any_left = false;
        for (int g = 0; g < G; g++)
            any_left |= next[g] < ix->n_files;
        if (!any_left)
            break;
        if (bytes[p] >= T) {
            done[p] = 1;
            continue;
        }
        int best = -1;
        for (int pass = 0; pass < 2 && best < 0; pass++) {
            if (pass == 1 && files[p] > 0)
                break;
            double best_def = 0;
            for (int g = 0; g < G; g++) {
                if (next[g] >= ix->n_files)
                    continue;
                double target = q[p * G + g] * T, def = target - got[p * G + g];
                bool wanted = pass == 1 ||
                              (def > 0 && target >= 0.5 * (double)ix->files[next[g]].bytes);
                if (wanted && (best < 0 || def > best_def)) {
                    best = g;
                    best_def = def;
                }
            }
        }
        if (best < 0) {
            done[p] = 1;
            continue;
        }
        int i = next[best];
        owner[i] = p;
        got[p * G + best] += (double)ix->files[i].bytes;
        bytes[p] += (double)ix->files[i].bytes;
        files[p]++;
        do
            next[best]++;
        while (next[best] < ix->n_files &&
               (ix->files[next[best]].val || ix->files[next[best]].genre_id != best));
    }
    rc = 0;
out:
    free(q);
    free(got);
    free(gbytes);
    free(lg);
    free(bytes);
    free(files);
    free(done);
    free(next);
    return rc;
}
