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
#include "base/opt.h"
#include "cli/commands.h"
#include "cli/options.h"

static const mm_opt *help_table;

static void usage(FILE *out)
{
    fprintf(out, "usage: murmur data-info -n N [--partition P] [--seed S] [--data DIR] [--peer J]\n\n"
                 "Prints, for each of N peers, the files, bytes and genre mix (%% of its bytes)\n"
                 "that a partition gives it, before anything is trained (docs/formats.md).\n"
                 "--peer J: only what member J gets; an id J >= N (a peer that joined an\n"
                 "elastic run) trains on the shard of peer J mod N.\n");
    mm_opt_print(out, help_table);
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

/* A peer's largest genre in its bytes b[0..G), with its total (*mine)
 * and that genre's bytes (*top). */
static int top_genre(const double *b, int G, double *mine, double *top)
{
    int tg = 0;
    *mine = *top = 0;
    for (int g = 0; g < G; g++) {
        *mine += b[g];
        if (b[g] > *top) {
            *top = b[g];
            tg = g;
        }
    }
    return tg;
}

/* More than 80 % of the peer's bytes in one genre. */
static bool dominated_by_one(const double *b, int G)
{
    double mine, top;
    top_genre(b, G, &mine, &top);
    return top > 0.8 * mine;
}

/* One row of the table: label (the peer, or the member asked about) and
 * peer p's files, kB, genre shares and its largest genre. */
static void print_row(long label, int p, const double *bytes, const int *files,
                      const mm_data_index *ix, const int *width)
{
    int G = ix->n_genres;
    double mine, top;
    int tg = top_genre(&bytes[p * G], G, &mine, &top);
    printf("%4ld %5d %7.0f", label, files[p], mine / 1000);
    for (int g = 0; g < G; g++) {
        if (bytes[p * G + g] > 0)
            printf(" %*.0f", width[g], 100 * bytes[p * G + g] / mine);
        else
            printf(" %*s", width[g], ".");
    }
    printf("  %.0f%% %s\n", 100 * top / mine, ix->genres[tg]);
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

/* The table's widest line with every genre's column as wide as its name
 * (at least 5): wider than this, the columns take 5 characters of each
 * name and the cut ones are listed under the table. */
#define TABLE_MAX_WIDTH 100

/* Each genre's column width into width[]; true when a name was cut. */
static bool column_widths(const mm_data_index *ix, int *width)
{
    int line = 4 + 1 + 5 + 1 + 7 + 2 + 4 + 1 + MM_DATA_NAME_MAX; /* peer files kB, top */
    for (int g = 0; g < ix->n_genres; g++) {
        int len = (int)strlen(ix->genres[g]);
        width[g] = len > 5 ? len : 5;
        line += 1 + width[g];
    }
    bool cut = false;
    for (int g = 0; g < ix->n_genres && line > TABLE_MAX_WIDTH; g++) {
        cut |= width[g] > 5;
        width[g] = 5;
    }
    return cut;
}

int cmd_data_info(int argc, char **argv)
{
    /* --partition, --seed and --data as murmur train and node take them */
    mm_replica_config cfg;
    mm_replica_config_default(&cfg);
    mm_replica_given given = {0};
    mm_opt shared[MM_REPLICA_OPTS], table[8];
    int ns = mm_replica_opts(&cfg, &given, shared), k = 0;
    long n = 0, member = -1;
    table[k++] = (mm_opt)MM_OPT(MM_OPT_LONG, "peers", "N", &n, 1, 1 << 20,
                                "the number of peers (required)", .short_name = 'n',
                                .hide_default = true);
    table[k++] = (mm_opt)MM_OPT(MM_OPT_LONG, "peer", "J", &member, 0, UINT32_MAX,
                                "only what member J gets (J >= N: peer J mod N's shard)",
                                .hide_default = true);
    for (int i = 0; i < ns; i++)
        if (shared[i].kind != MM_OPT_SECTION &&
            (!strcmp(shared[i].name, "partition") || !strcmp(shared[i].name, "seed") ||
             !strcmp(shared[i].name, "data")))
            table[k++] = shared[i];
    table[k] = (mm_opt){.kind = MM_OPT_END};
    help_table = table;
    int first;
    int r = mm_opt_parse("data-info", argc, argv, table, &first, usage);
    if (r != 0)
        return r > 0 ? 0 : 2;
    if (first < argc) {
        fprintf(stderr, "murmur data-info: unexpected argument '%s'\n", argv[first]);
        return 2;
    }
    if (!n) {
        fprintf(stderr, "murmur data-info: -n N (the number of peers) is required\n");
        return 2;
    }
    char err[512];
    mm_partition part = cfg.partition;
    const char *data = cfg.data_dir;
    if (part.kind == MM_PART_DIRICHLET && !part.seed_given)
        part.seed = cfg.seed;

    mm_data_index ix;
    if (mm_data_index_load(&ix, data, err, sizeof err) != 0) {
        fprintf(stderr, "murmur data-info: %s\n", err);
        return 1;
    }
    int G = ix.n_genres, rc = 1, n_train = 0, unused = 0, unused_iid = 0;
    double *bytes = malloc((size_t)n * G * sizeof *bytes), *iid = malloc((size_t)n * G * sizeof *iid);
    double *corpus = calloc((size_t)G, sizeof *corpus), total = 0, ub = 0, ub_iid = 0;
    int *files = malloc((size_t)n * sizeof *files);
    int *width = malloc((size_t)G * sizeof *width);
    if (!bytes || !iid || !corpus || !files || !width) {
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
    printf(", %ld peers; %% of each peer's bytes by genre:\n", n);
    if (member >= n)
        printf("member     %ld is not a starting peer (0..%ld): it trains on the shard of peer "
               "%ld mod %ld = %d\n", member, n - 1, member, n, mm_shard_of_id((uint32_t)member, (int)n));
    bool cut = column_widths(&ix, width);
    printf("\n%4s %5s %7s", "peer", "files", "kB");
    for (int g = 0; g < G; g++)
        printf(" %*.*s", width[g], width[g], ix.genres[g]);
    printf("  top\n");
    int dominated = 0;
    for (int p = 0; p < n; p++) {
        if (member < 0)
            print_row(p, p, bytes, files, &ix, width);
        else if (p == mm_shard_of_id((uint32_t)member, (int)n))
            print_row(member, p, bytes, files, &ix, width);
        dominated += dominated_by_one(&bytes[p * G], G);
    }
    printf("%4s %5d %7.0f", "all", n_train, total / 1000);
    for (int g = 0; g < G; g++)
        printf(" %*.0f", width[g], 100 * corpus[g] / total);
    printf("  (the corpus's mix)\n");
    if (cut) { /* the names the columns cut short */
        printf("columns   ");
        for (int g = 0, listed = 0; g < G; g++)
            if ((int)strlen(ix.genres[g]) > width[g])
                printf("%s %.*s = %s", listed++ ? "," : "", width[g], ix.genres[g], ix.genres[g]);
        printf("\n");
    }
    printf("\n");
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
    free(width);
    mm_data_index_free(&ix);
    return rc;
}
