/* murmur data-info: how a partition splits a prepared corpus across n
 * peers, before anything is trained: per peer its files, bytes and the
 * share of each genre, the files nobody gets, and how far the peers' mixes
 * are from the corpus's (total variation), next to iid's. Reads the index
 * only, never the texts. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/data.h"
#include "node/commands.h"
#include "node/node.h"

static void usage(FILE *out)
{
    mm_node_config d;
    mm_node_config_defaults(&d);
    fprintf(out,
            "usage: murmur data-info -n N [--partition P] [--seed S] [--data DIR]\n\n"
            "Prints, for each of N peers, the files, bytes and genre mix (%% of its bytes)\n"
            "that --partition P gives it: iid, genre or dirichlet:ALPHA[:SEED] (default\n"
            "iid). --seed is the run's seed, which dirichlet draws from unless P names its\n"
            "own (default %llu, murmur node's; murmur train's is 1). --data: the prepared\n"
            "corpus (default %s). docs/formats.md describes the partitions.\n",
            (unsigned long long)d.seed, d.data_dir);
}

/* bytes[p * G + g]: peer p's training bytes of genre g; -1 on error. */
static int tally(const mm_data_index *ix, const mm_partition *part, int n, double *bytes,
                 int *files, int *unused_files, double *unused_bytes, char *err, size_t errlen)
{
    int G = ix->n_genres;
    int *owner = malloc((size_t)ix->n_files * sizeof *owner);
    if (!owner) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (mm_data_assign(ix, part, n, owner, err, errlen) != 0) {
        free(owner);
        return -1;
    }
    memset(bytes, 0, (size_t)n * G * sizeof *bytes);
    memset(files, 0, (size_t)n * sizeof *files);
    *unused_files = 0;
    *unused_bytes = 0;
    for (int i = 0; i < ix->n_files; i++) {
        if (owner[i] >= 0) {
            bytes[owner[i] * G + ix->files[i].genre_id] += (double)ix->files[i].bytes;
            files[owner[i]]++;
        } else if (owner[i] == -2) {
            (*unused_files)++;
            *unused_bytes += (double)ix->files[i].bytes;
        }
    }
    free(owner);
    return 0;
}

/* Mean over peers of the total variation between a peer's genre shares and
 * the corpus's: 0 when every peer has the corpus's mix, near 1 when each
 * holds genres the corpus has little of. */
static double mean_tv(const double *bytes, const double *corpus, int n, int G)
{
    double total = 0, sum = 0;
    for (int g = 0; g < G; g++)
        total += corpus[g];
    for (int p = 0; p < n; p++) {
        double mine = 0, tv = 0;
        for (int g = 0; g < G; g++)
            mine += bytes[p * G + g];
        for (int g = 0; g < G && mine > 0; g++)
            tv += fabs(bytes[p * G + g] / mine - corpus[g] / total);
        sum += tv / 2;
    }
    return sum / n;
}

int cmd_data_info(int argc, char **argv)
{
    mm_node_config d;
    mm_node_config_defaults(&d);
    const char *data = d.data_dir;
    uint64_t seed = d.seed;
    long n = 0;
    char err[512];
    mm_partition part = {.kind = MM_PART_IID};
    for (int i = 1; i < argc; i += 2) { /* every option takes a value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "murmur data-info: %s\n", a[0] == '-' ? "option needs a value" : "unexpected argument");
            usage(stderr);
            return 2;
        }
        char *end;
        errno = 0;
        if (!strcmp(a, "-n")) {
            n = strtol(v, &end, 10);
            if (*end || !*v || errno || n < 1 || n > 1 << 20) {
                fprintf(stderr, "murmur data-info: -n: expected a number of peers 1..%d, got '%s'\n", 1 << 20, v);
                return 2;
            }
        } else if (!strcmp(a, "--seed")) {
            seed = strtoull(v, &end, 10);
            if (*end || !*v || errno || *v == '-') {
                fprintf(stderr, "murmur data-info: --seed: expected a non-negative integer, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--partition")) {
            if (mm_partition_parse(v, &part, err, sizeof err) != 0) {
                fprintf(stderr, "murmur data-info: --partition: %s\n", err);
                return 2;
            }
        } else if (!strcmp(a, "--data")) {
            data = v;
        } else {
            fprintf(stderr, "murmur data-info: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!n) {
        fprintf(stderr, "murmur data-info: -n N (the number of peers) is required\n");
        return 2;
    }
    if (part.kind == MM_PART_DIRICHLET && !part.seed_given)
        part.seed = seed;

    mm_data_index ix;
    if (mm_data_index_load(&ix, data, err, sizeof err) != 0) {
        fprintf(stderr, "murmur data-info: %s\n", err);
        return 1;
    }
    int G = ix.n_genres, rc = 1, n_train = 0, unused = 0, unused_iid = 0;
    double *bytes = malloc((size_t)n * G * sizeof *bytes), *iid = malloc((size_t)n * G * sizeof *iid);
    double *corpus = calloc((size_t)G, sizeof *corpus), total = 0, ub = 0, ub_iid = 0;
    int *files = malloc((size_t)n * sizeof *files);
    if (!bytes || !iid || !corpus || !files) {
        fprintf(stderr, "murmur data-info: out of memory\n");
        goto out;
    }
    for (int i = 0; i < ix.n_files; i++)
        if (!ix.files[i].val) {
            corpus[ix.files[i].genre_id] += (double)ix.files[i].bytes;
            total += (double)ix.files[i].bytes;
            n_train++;
        }
    mm_partition iid_part = {.kind = MM_PART_IID};
    if (tally(&ix, &iid_part, (int)n, iid, files, &unused_iid, &ub_iid, err, sizeof err) != 0 ||
        tally(&ix, &part, (int)n, bytes, files, &unused, &ub, err, sizeof err) != 0) {
        fprintf(stderr, "murmur data-info: %s\n", err);
        goto out;
    }
    printf("data       %s: %d files (%d training), %d genres, %.0f training bytes\n", data, ix.n_files,
           n_train, G, total);
    printf("partition  %s", mm_partition_name(&part));
    if (part.kind == MM_PART_DIRICHLET)
        printf(", seed %llu%s", (unsigned long long)part.seed,
               part.seed_given ? " (named in the partition)" : " (the run's --seed)");
    printf(", %ld peers; %% of each peer's bytes by genre:\n\n", n);
    printf("%4s %5s %7s", "peer", "files", "kB");
    for (int g = 0; g < G; g++)
        printf(" %5.5s", ix.genres[g]);
    printf("  top\n");
    int dominated = 0;
    for (int p = 0; p < n; p++) {
        double mine = 0, top = 0;
        int tg = 0;
        for (int g = 0; g < G; g++) {
            mine += bytes[p * G + g];
            if (bytes[p * G + g] > top) {
                top = bytes[p * G + g];
                tg = g;
            }
        }
        printf("%4d %5d %7.0f", p, files[p], mine / 1000);
        for (int g = 0; g < G; g++) {
            double pc = 100 * bytes[p * G + g] / mine;
            if (bytes[p * G + g] > 0)
                printf(" %5.0f", pc);
            else
                printf(" %5s", ".");
        }
        printf("  %.0f%% %s\n", 100 * top / mine, ix.genres[tg]);
        dominated += top > 0.8 * mine;
    }
    printf("%4s %5d %7.0f", "all", n_train, total / 1000);
    for (int g = 0; g < G; g++)
        printf(" %5.0f", 100 * corpus[g] / total);
    printf("  (the corpus's mix)\n\n");
    printf("unused     %d training files, %.0f kB (%.1f%% of the training bytes)%s\n", unused, ub / 1000,
           100 * ub / total, unused ? ": no peer's mix asked for them" : "");
    printf("dominated  %d of %ld peers have more than 80%% of their bytes in one genre\n", dominated, n);
    printf("mix        mean total variation from the corpus's genre mix %.3f (iid: %.3f)\n",
           mean_tv(bytes, corpus, (int)n, G), mean_tv(iid, corpus, (int)n, G));
    rc = fflush(stdout) ? 1 : 0;
out:
    free(bytes);
    free(iid);
    free(corpus);
    free(files);
    mm_data_index_free(&ix);
    return rc;
}
