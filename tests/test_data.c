/* The data layer on a synthetic corpus the test writes itself: the Brown
 * detagger, the index, the train/validation split, both partitions over
 * several peer counts, shard loading, sampling, and the messages for
 * missing, truncated and corrupted files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/brown.h"
#include "model/data.h"
#include "base/sha256.h"
#include "model/eval.h"
#include "model/textdir.h"
#include "cli/commands.h"
#include "tests/testutil.h"

/* Genres of 23, 12, 7 and 3 files: 20, 10, 6 and 2 training files once
 * files 0, 10, 20 of each go to validation. */
static const struct { const char *genre; int n; } GENRES[] = {
    {"news", 23}, {"fiction", 12}, {"humor", 7}, {"lore", 3},
};
#define N_GENRES 4
#define N_FILES 45

static char dir[256];
static const mm_partition IID = {.kind = MM_PART_IID}, GENRE = {.kind = MM_PART_GENRE};

static void file_text(int i, char *buf, size_t n)
{
    /* Distinct per file, so a shard's content tells which files it holds. */
    snprintf(buf, n, "<<file f%02d>> The quick brown fox %d jumps over the lazy dog.\n\n"
                     "A second paragraph of file %d, long enough for a window.\n", i, i * 7, i);
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void make_corpus(void)
{
    mm_data_file files[N_FILES];
    int k = 0;
    for (int g = 0; g < N_GENRES; g++)
        for (int j = 0; j < GENRES[g].n; j++, k++) {
            char text[256], path[512];
            file_text(k, text, sizeof text);
            memset(&files[k], 0, sizeof files[k]);
            snprintf(files[k].name, sizeof files[k].name, "f%02d", k);
            snprintf(files[k].genre, sizeof files[k].genre, "%s", GENRES[g].genre);
            files[k].bytes = strlen(text);
            mm_sha256(text, strlen(text), files[k].sha256);
            snprintf(path, sizeof path, "%s/f%02d.txt", dir, k);
            write_file(path, text, strlen(text));
        }
    assert_int_equal(k, N_FILES);
    char err[256];
    assert_int_equal(mm_data_index_write(dir, files, N_FILES, "synthetic", err, sizeof err), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/murmur-test-data-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    make_corpus();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_rf(dir);
}

static void test_detag(void **state)
{
    (void)state;
    const char *in =
        "\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ,/, Mr./np Jr./np ./.\n"
        "It/pps ended/vbd (/( at/in 1/2/cd )/) ;/. '/' odd/jj '/' ok/uh ?/.\n"
        "\n\n"
        "Merger/nn-hl proposed/vbn-hl\n"
        "However/wrb ,/, done/vbn !/.\n";
    const char *want = "The jury said \"no evidence\", Mr. Jr. It ended (at 1/2); 'odd' ok?\n\n"
                       "Merger proposed\n\n"
                       "However, done!\n";
    char *out, err[128];
    size_t n;
    assert_int_equal(mm_brown_detag(in, strlen(in), &out, &n, err, sizeof err), 0);
    assert_int_equal(n, strlen(out));
    assert_string_equal(out, want);
    free(out);

    const char *bad = "\tgood/jj\n\tnotag here/rb\n";
    assert_int_equal(mm_brown_detag(bad, strlen(bad), &out, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 2"));
    assert_non_null(strstr(err, "notag"));
    const char bin[] = "a/b \x80/c";
    assert_int_equal(mm_brown_detag(bin, sizeof bin - 1, &out, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "ASCII"));
    assert_int_equal(mm_brown_detag("\n\n", 2, &out, &n, err, sizeof err), -1);
}

/* data-prepare on a small tagged source, then the prepared dir verifies. */
static void test_prepare(void **state)
{
    (void)state;
    char src[512], dst[512], path[600];
    snprintf(src, sizeof src, "%s/src", dir);
    snprintf(dst, sizeof dst, "%s/prepared", dir);
    assert_int_equal(mkdir(src, 0755), 0);
    snprintf(path, sizeof path, "%s/cats.txt", src);
    const char *cats = "ca01 news\nca02 news\ncb01 editorial\n";
    write_file(path, cats, strlen(cats));
    const char *t = "\n\n\tA/at dog/nn ./.\n";
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", src, i == 0 ? "ca01" : i == 1 ? "ca02" : "cb01");
        write_file(path, t, strlen(t));
    }
    char *argv[] = {"data-prepare", src, dst, NULL};
    assert_int_equal(cmd_data_prepare(3, argv), 0);
    char *vargv[] = {"data-verify", dst, NULL};
    assert_int_equal(cmd_data_verify(2, vargv), 0);
    mm_data_index ix;
    char err[256];
    assert_int_equal(mm_data_index_load(&ix, dst, err, sizeof err), 0);
    assert_int_equal(ix.n_files, 3);
    assert_int_equal(ix.n_genres, 2);
    assert_string_equal(ix.files[2].genre, "editorial");
    assert_int_equal(ix.files[0].bytes, strlen("A dog.\n"));
    mm_data_index_free(&ix);

    /* A source file that is missing: the error names it, exit status 1. */
    snprintf(path, sizeof path, "%s/cb01", src);
    assert_int_equal(unlink(path), 0);
    char dst2[520];
    snprintf(dst2, sizeof dst2, "%s2", dst);
    char *argv2[] = {"data-prepare", src, dst2, NULL};
    assert_int_equal(cmd_data_prepare(3, argv2), 1);
}

static void test_split(void **state)
{
    (void)state;
    mm_data_index a, b;
    char err[256];
    assert_int_equal(mm_data_index_load(&a, dir, err, sizeof err), 0);
    assert_int_equal(mm_data_index_load(&b, dir, err, sizeof err), 0);
    assert_int_equal(a.n_files, N_FILES);
    assert_int_equal(a.n_genres, N_GENRES);
    int k = 0;
    for (int g = 0; g < N_GENRES; g++) {
        assert_string_equal(a.genres[g], GENRES[g].genre);
        int val = 0;
        for (int j = 0; j < GENRES[g].n; j++, k++) {
            assert_int_equal(a.files[k].genre_id, g);
            assert_int_equal(a.files[k].val, j % 10 == 0);
            assert_int_equal(a.files[k].val, b.files[k].val);
            val += a.files[k].val;
        }
        assert_int_equal(val, (GENRES[g].n + 9) / 10); /* every genre validates */
    }
    mm_data_index_free(&a);
    mm_data_index_free(&b);
}

/* Disjoint and complete for both partitions and many peer counts. */
static void test_partition(void **state)
{
    (void)state;
    mm_data_index ix;
    char err[256];
    assert_int_equal(mm_data_index_load(&ix, dir, err, sizeof err), 0);
    int owner[N_FILES], again[N_FILES];
    const int peers[] = {1, 2, 3, 4, 5, 7, 11, 38};
    for (int part = 0; part < 2; part++)
        for (size_t pi = 0; pi < sizeof peers / sizeof peers[0]; pi++) {
            int n = peers[pi];
            mm_partition pt = {.kind = (mm_part_kind)part};
            assert_int_equal(mm_data_assign(&ix, &pt, n, owner, err, sizeof err), 0);
            assert_int_equal(mm_data_assign(&ix, &pt, n, again, err, sizeof err), 0);
            assert_memory_equal(owner, again, sizeof owner);
            int count[64] = {0};
            unsigned genres_of[64] = {0};
            for (int i = 0; i < N_FILES; i++) {
                if (ix.files[i].val) {
                    assert_int_equal(owner[i], -1); /* validation is nobody's */
                    continue;
                }
                assert_in_range(owner[i], 0, n - 1); /* every training file owned once */
                count[owner[i]]++;
                genres_of[owner[i]] |= 1u << ix.files[i].genre_id;
            }
            for (int p = 0; p < n; p++)
                assert_true(count[p] > 0);
            if (part == MM_PART_IID) {
                /* balanced, and spread: a genre with >= n training files
                 * reaches every peer */
                int lo = 1 << 30, hi = 0;
                for (int p = 0; p < n; p++) {
                    lo = count[p] < lo ? count[p] : lo;
                    hi = count[p] > hi ? count[p] : hi;
                    for (int g = 0; g < N_GENRES; g++) {
                        int tr = GENRES[g].n - (GENRES[g].n + 9) / 10;
                        if (tr >= n)
                            assert_true(genres_of[p] & (1u << g));
                    }
                }
                assert_true(hi - lo <= 1);
            } else {
                /* whole genres: with n <= genres every genre's files sit
                 * with one peer; with more peers each peer has one genre */
                for (int i = 0; i < N_FILES; i++)
                    for (int j = 0; j < N_FILES; j++)
                        if (n <= N_GENRES && !ix.files[i].val && !ix.files[j].val &&
                            ix.files[i].genre_id == ix.files[j].genre_id)
                            assert_int_equal(owner[i], owner[j]);
                if (n > N_GENRES)
                    for (int p = 0; p < n; p++)
                        assert_int_equal(__builtin_popcount(genres_of[p]), 1);
            }
        }
    /* 38 training files: a 39th peer would have nothing. */
    assert_int_equal(mm_data_assign(&ix, &IID, 39, owner, err, sizeof err), -1);
    assert_non_null(strstr(err, "39 peers"));
    assert_int_equal(mm_data_assign(&ix, &GENRE, 0, owner, err, sizeof err), -1);
    mm_data_index_free(&ix);
}

/* Mean over peers of the total variation between each peer's genre shares
 * (of its bytes) and the corpus's training mix. */
static double mean_tv(const mm_data_index *ix, const int *owner, int n)
{
    double corpus[N_GENRES] = {0}, total = 0, peer[64][N_GENRES] = {{0}}, mine[64] = {0}, sum = 0;
    for (int i = 0; i < ix->n_files; i++) {
        if (ix->files[i].val)
            continue;
        corpus[ix->files[i].genre_id] += (double)ix->files[i].bytes;
        total += (double)ix->files[i].bytes;
        if (owner[i] >= 0) {
            peer[owner[i]][ix->files[i].genre_id] += (double)ix->files[i].bytes;
            mine[owner[i]] += (double)ix->files[i].bytes;
        }
    }
    for (int p = 0; p < n; p++) {
        double tv = 0;
        for (int g = 0; g < N_GENRES; g++)
            tv += fabs(peer[p][g] / mine[p] - corpus[g] / total);
        sum += tv / 2;
    }
    return sum / n;
}

/* Checks what every partition promises and returns how many peers hold
 * more than 80 % of their bytes in one genre. */
static int check_assignment(const mm_data_index *ix, const int *owner, int n)
{
    int count[64] = {0}, dominated = 0;
    double g_bytes[64][N_GENRES] = {{0}}, bytes[64] = {0};
    for (int i = 0; i < ix->n_files; i++) {
        if (ix->files[i].val) {
            assert_int_equal(owner[i], -1);
            continue;
        }
        assert_in_range(owner[i] + 2, 0, n + 1); /* a peer, or -2: nobody */
        if (owner[i] >= 0) {
            count[owner[i]]++;
            g_bytes[owner[i]][ix->files[i].genre_id] += (double)ix->files[i].bytes;
            bytes[owner[i]] += (double)ix->files[i].bytes;
        }
    }
    for (int p = 0; p < n; p++) {
        assert_true(count[p] > 0); /* every peer gets a file */
        double top = 0;
        for (int g = 0; g < N_GENRES; g++)
            top = fmax(top, g_bytes[p][g]);
        dominated += top > 0.8 * bytes[p];
    }
    return dominated;
}

/* dirichlet:ALPHA: a large alpha is as close to the corpus mix as iid (mean
 * total variation within 0.05 of iid's), a small one gives most peers one
 * genre (> 80 % of their bytes), every peer a file, no file twice, and the
 * same seed the same partition. */
static void test_dirichlet(void **state)
{
    (void)state;
    mm_data_index ix;
    char err[256];
    assert_int_equal(mm_data_index_load(&ix, dir, err, sizeof err), 0);
    int owner[N_FILES], again[N_FILES];
    const int peers[] = {2, 4, 7};
    for (size_t pi = 0; pi < sizeof peers / sizeof peers[0]; pi++) {
        int n = peers[pi], dominated = 0, total = 0;
        assert_int_equal(mm_data_assign(&ix, &IID, n, owner, err, sizeof err), 0);
        double tv_iid = mean_tv(&ix, owner, n);
        for (uint64_t seed = 1; seed <= 5; seed++) {
            mm_partition big = {.kind = MM_PART_DIRICHLET, .alpha = 1000, .seed = seed};
            assert_int_equal(mm_data_assign(&ix, &big, n, owner, err, sizeof err), 0);
            check_assignment(&ix, owner, n);
            double tv = mean_tv(&ix, owner, n);
            if (tv > tv_iid + 0.05)
                fail_msg("dirichlet:1000 over %d peers, seed %d: mean TV %.3f, iid %.3f", n, (int)seed, tv,
                         tv_iid);
            mm_partition small = {.kind = MM_PART_DIRICHLET, .alpha = 0.05, .seed = seed};
            assert_int_equal(mm_data_assign(&ix, &small, n, owner, err, sizeof err), 0);
            dominated += check_assignment(&ix, owner, n);
            total += n;
            assert_int_equal(mm_data_assign(&ix, &small, n, again, err, sizeof err), 0);
            assert_memory_equal(owner, again, sizeof owner);
        }
        if (dominated < 0.75 * total)
            fail_msg("dirichlet:0.05 over %d peers: only %d of %d peers dominated by one genre", n,
                     dominated, total);
    }
    /* other seeds, other partitions; as many peers as training files */
    mm_partition a = {.kind = MM_PART_DIRICHLET, .alpha = 1, .seed = 1}, b = a;
    b.seed = 2;
    assert_int_equal(mm_data_assign(&ix, &a, 4, owner, err, sizeof err), 0);
    assert_int_equal(mm_data_assign(&ix, &b, 4, again, err, sizeof err), 0);
    assert_memory_not_equal(owner, again, sizeof owner);
    for (int k = 0; k < 2; k++) {
        mm_partition all = {.kind = MM_PART_DIRICHLET, .alpha = k ? 1000 : 0.05, .seed = 3};
        assert_int_equal(mm_data_assign(&ix, &all, 38, owner, err, sizeof err), 0);
        check_assignment(&ix, owner, 38);
    }
    /* the shards read what was assigned: no file's text in two of them */
    int seen[N_FILES] = {0};
    for (int p = 0; p < 4; p++) {
        mm_shard s;
        assert_int_equal(mm_shard_load(&s, dir, &a, p, 4, err, sizeof err), 0);
        for (int i = 0; i < N_FILES; i++) {
            char mark[32];
            snprintf(mark, sizeof mark, "<<file f%02d>>", i);
            seen[i] += memmem(s.train, s.train_len, mark, strlen(mark)) != NULL;
        }
        mm_shard_free(&s);
    }
    assert_int_equal(mm_data_assign(&ix, &a, 4, owner, err, sizeof err), 0);
    for (int i = 0; i < N_FILES; i++)
        assert_int_equal(seen[i], owner[i] >= 0);
    mm_data_index_free(&ix);
}

/* Strict UTF-8: what is refused, and where. */
static void test_text_utf8(void **state)
{
    (void)state;
    static const struct { const char *s; size_t len; long bad; } cases[] = {
        {"plain ascii\n", 12, -1},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, -1}, /* 2, 3 and 4 bytes */
        {"ab\xc0\xaf", 4, 2},             /* overlong '/' */
        {"ab\xe0\x80\xaf", 5, 2},         /* overlong, 3 bytes */
        {"\xed\xa0\x80", 3, 0},           /* a surrogate */
        {"x\xf4\x90\x80\x80", 5, 1},     /* above U+10FFFF */
        {"x\xe2\x82", 3, 1},               /* cut short */
        {"x\x80", 2, 1},                   /* a lone continuation byte */
        {"xy\xc3(", 4, 2},                 /* a lead byte without its continuation */
        {"a\0b", 3, 1},                    /* NUL: not text */
        {"\xff", 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t at = 12345;
        bool ok = mm_utf8_valid((const uint8_t *)cases[i].s, cases[i].len, &at);
        if (ok != (cases[i].bad < 0) || (!ok && (long)at != cases[i].bad))
            fail_msg("case %zu: valid %d at %zu, expected %ld", i, ok, at, cases[i].bad);
    }
}

/* A text tree: labels from sub-directories, sorted order, mapped names,
 * hidden files skipped; the prepared index splits and partitions by label. */
static void test_text_scan(void **state)
{
    (void)state;
    char root[512], path[700], err[512];
    snprintf(root, sizeof root, "%s/text", dir);
    const char *tree[] = {"text/b/two.txt", "text/b/one.txt", "text/top.txt", "text/a/z",
                          "text/a/deep/x.txt", "text/.hidden", "text/a/.also", "text/other.md"};
    assert_int_equal(mkdir(root, 0755), 0);
    snprintf(path, sizeof path, "%s/text/a", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/text/a/deep", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/text/b", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    for (size_t i = 0; i < sizeof tree / sizeof tree[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, tree[i]);
        write_file(path, "words\n", 6);
    }
    mm_text_file *f;
    int n;
    mm_text_say say = {.out = stderr, .prefix = "test_text_scan: "};
    assert_int_equal(mm_text_scan(root, "misc", &say, &f, &n, err, sizeof err), 0);
    assert_int_equal(say.n, 0);
    static const char *const want[][3] = {
        {"a/deep/x.txt", "a", "a-deep-x"}, {"a/z", "a", "a-z"}, {"b/one.txt", "b", "b-one"},
        {"b/two.txt", "b", "b-two"}, {"other.md", "misc", "other.md"}, {"top.txt", "misc", "top"},
    };
    assert_int_equal(n, 6);
    for (int i = 0; i < n; i++) {
        assert_string_equal(f[i].rel, want[i][0]);
        assert_string_equal(f[i].label, want[i][1]);
        assert_string_equal(f[i].name, want[i][2]);
    }
    mm_text_files_free(f, n);
    char dst[600];
    snprintf(dst, sizeof dst, "%s/text-prepared", dir);
    char *argv[] = {"data-prepare", "--text", "--label", "misc", root, dst, NULL};
    assert_int_equal(cmd_data_prepare(6, argv), 0);
    mm_data_index ix;
    assert_int_equal(mm_data_index_load(&ix, dst, err, sizeof err), 0);
    assert_int_equal(ix.n_files, 6);
    assert_int_equal(ix.n_genres, 3);
    assert_string_equal(ix.genres[2], "misc");
    int owner[6];
    assert_int_equal(mm_data_assign(&ix, &GENRE, 3, owner, err, sizeof err), 0);
    for (int i = 0; i < 6; i++) /* one file of each label validates, one trains */
        assert_int_equal(owner[i] >= 0, i % 2 == 1);
    mm_data_index_free(&ix);
    /* a bad --label is a usage error */
    char *bad[] = {"data-prepare", "--text", "--label", "no/slash", root, dst, NULL};
    assert_int_equal(cmd_data_prepare(6, bad), 2);
}

static void test_shards(void **state)
{
    (void)state;
    char err[256];
    for (int part = 0; part < 2; part++) {
        int n = 3, files = 0;
        int seen[N_FILES] = {0};
        for (int p = 0; p < n; p++) {
            mm_shard s;
            mm_partition pt = {.kind = (mm_part_kind)part};
            assert_int_equal(mm_shard_load(&s, dir, &pt, p, n, err, sizeof err), 0);
            files += s.n_files;
            for (int i = 0; i < N_FILES; i++) {
                char mark[32];
                snprintf(mark, sizeof mark, "<<file f%02d>>", i);
                if (memmem(s.train, s.train_len, mark, strlen(mark)))
                    seen[i]++;
                /* validation files are in every shard's val, in nobody's train */
                if (memmem(s.val, s.val_len, mark, strlen(mark)))
                    assert_int_equal(memmem(s.train, s.train_len, mark, strlen(mark)), NULL);
            }
            assert_true(strlen(s.genres) > 0);
            mm_shard_free(&s);
        }
        assert_int_equal(files, 38);
        int total_seen = 0;
        for (int i = 0; i < N_FILES; i++) {
            assert_true(seen[i] <= 1);
            total_seen += seen[i];
        }
        assert_int_equal(total_seen, 38);
    }
}

/* Ids beyond the starting set (docs/formats.md): member j of a run that
 * started with n peers trains on peer j mod n's shard of n, byte for byte,
 * whatever the partition; the starting peers keep their own shards, the
 * same bytes as before anyone joined. */
static void test_shards_beyond_start(void **state)
{
    (void)state;
    char err[256];
    mm_partition dir3 = {.kind = MM_PART_DIRICHLET, .alpha = 1, .seed = 3};
    const mm_partition *parts[] = {&IID, &GENRE, &dir3};
    const int ns[] = {1, 3, 4};
    const uint32_t joiners[] = {4, 5, 7, 11, 1000003, UINT32_MAX};
    assert_int_equal(mm_shard_of_id(5, 0), -1);
    for (size_t a = 0; a < sizeof parts / sizeof parts[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            int n = ns[b];
            mm_shard start[4];
            for (int p = 0; p < n; p++) {
                assert_int_equal(mm_shard_of_id((uint32_t)p, n), p);
                assert_int_equal(mm_shard_load(&start[p], dir, parts[a], p, n, err, sizeof err), 0);
            }
            for (size_t j = 0; j < sizeof joiners / sizeof joiners[0]; j++) {
                int p = mm_shard_of_id(joiners[j], n);
                assert_int_equal(p, (int)(joiners[j] % (uint32_t)n));
                mm_shard s;
                assert_int_equal(mm_shard_load(&s, dir, parts[a], p, n, err, sizeof err), 0);
                assert_int_equal(s.train_len, start[p].train_len);
                assert_memory_equal(s.train, start[p].train, s.train_len);
                mm_shard_free(&s);
            }
            /* the starting peers' shards once members have joined: the
             * rule gives each its own, the same bytes */
            for (int p = 0; p < n; p++) {
                mm_shard s;
                assert_int_equal(mm_shard_load(&s, dir, parts[a], mm_shard_of_id((uint32_t)p, n),
                                               n, err, sizeof err), 0);
                assert_int_equal(s.train_len, start[p].train_len);
                assert_memory_equal(s.train, start[p].train, s.train_len);
                mm_shard_free(&s);
                mm_shard_free(&start[p]);
            }
        }
}

/* The validation text's labels: every genre of the index, each
 * validation file where its text starts in val and its genre (files 0, 10,
 * 20 of every genre: f00 f10 f20 news, f23 f33 fiction, f35 humor, f42
 * lore), a byte's label by the file it lies in (the joining newline is the
 * file's), and the tally of a window that straddles two files. */
static void test_val_labels(void **state)
{
    (void)state;
    char err[256];
    mm_shard s;
    assert_int_equal(mm_shard_load(&s, dir, &GENRE, 1, 3, err, sizeof err), 0);
    assert_int_equal(s.n_labels, N_GENRES);
    for (int g = 0; g < N_GENRES; g++)
        assert_string_equal(s.labels[g], GENRES[g].genre);
    static const struct { int file, label; } VAL[] = {
        {0, 0}, {10, 0}, {20, 0}, {23, 1}, {33, 1}, {35, 2}, {42, 3},
    };
    assert_int_equal(s.n_val_files, 7);
    for (int f = 0; f < 7; f++) {
        char mark[32];
        snprintf(mark, sizeof mark, "<<file f%02d>>", VAL[f].file);
        const uint8_t *at = memmem(s.val, s.val_len, mark, strlen(mark));
        assert_non_null(at);
        size_t start = (size_t)(at - s.val);
        assert_true(s.val_start[f] == start);
        assert_int_equal(s.val_label[f], VAL[f].label);
        assert_int_equal(mm_val_label_at(&s, start), VAL[f].label);
        if (f > 0) { /* the byte before is the previous file's newline */
            assert_int_equal(s.val[start - 1], '\n');
            assert_int_equal(mm_val_label_at(&s, start - 1), VAL[f - 1].label);
        }
    }
    assert_int_equal(mm_val_label_at(&s, s.val_len + 5), 3); /* a short window's padding */
    /* window k of n = span starts at offset k: 10 bytes before f23, so its
     * 32 predicted bytes (offsets k+1 .. k+32) are 9 of news, 23 of fiction */
    enum { T = 32 };
    int span = (int)(s.val_len - T - 1);
    int k = (int)s.val_start[3] - 10;
    assert_true(mm_val_window_offset(&s, k, span, T) == (size_t)k);
    uint8_t hit[T];
    for (int t = 0; t < T; t++)
        hit[t] = t % 3 == 0; /* hits at t = 0, 3, ..., 30: news t 0..8 (3), fiction 9..31 (8) */
    mm_eval_result r;
    memset(&r, 0, sizeof r);
    r.n_labels = s.n_labels;
    mm_eval_tally(&s, k, span, T, hit, &r);
    assert_int_equal(r.label_positions[0], 9);
    assert_int_equal(r.label_positions[1], 23);
    assert_int_equal(r.label_positions[2] + r.label_positions[3], 0);
    assert_int_equal(r.label_correct[0], 3);
    assert_int_equal(r.label_correct[1], 8);
    r.n_labels = 0; /* no labels: nothing counted */
    mm_eval_tally(&s, k, span, T, hit, &r);
    assert_int_equal(r.label_positions[0], 9);
    mm_shard_free(&s);
}

static void test_sampling(void **state)
{
    (void)state;
    char err[256];
    mm_shard s;
    assert_int_equal(mm_shard_load(&s, dir, &IID, 0, 1, err, sizeof err), 0);
    enum { B = 5, T = 16 };
    uint8_t a[B * (T + 1)], b[B * (T + 1)], c[B * (T + 1)];
    mm_rng r1, r2;
    mm_rng_seed(&r1, 42);
    r2 = r1;
    mm_batch_sample(&s, &r1, a, B, T);
    mm_batch_sample(&s, &r2, b, B, T);
    assert_memory_equal(a, b, sizeof a); /* same rng state, same batch */
    mm_rng saved = r1;                   /* a checkpointed rng resumes the stream */
    mm_batch_sample(&s, &r1, a, B, T);
    mm_batch_sample(&s, &saved, c, B, T);
    assert_memory_equal(a, c, sizeof a);
    assert_memory_not_equal(a, b, sizeof a);
    for (int w = 0; w < B; w++)
        assert_non_null(memmem(s.train, s.train_len, a + w * (T + 1), T + 1));

    uint8_t v1[T + 1], v2[T + 1];
    mm_val_window(&s, 3, 10, v1, T);
    mm_val_window(&s, 3, 10, v2, T);
    assert_memory_equal(v1, v2, sizeof v1);
    assert_non_null(memmem(s.val, s.val_len, v1, T + 1));
    mm_val_window(&s, 9, 10, v2, T);
    assert_memory_not_equal(v1, v2, sizeof v1);
    mm_shard_free(&s);
}

/* Damage one training file and check each peer's view: the owner gets a
 * message naming the file, other peers do not read it and load fine. */
static void damage(const char *how, const char *expect)
{
    mm_data_index ix;
    char err[512], path[600];
    assert_int_equal(mm_data_index_load(&ix, dir, err, sizeof err), 0);
    int owner[N_FILES];
    assert_int_equal(mm_data_assign(&ix, &GENRE, 2, owner, err, sizeof err), 0);
    int victim = 1; /* f01: news, training */
    assert_int_equal(ix.files[victim].val, 0);
    snprintf(path, sizeof path, "%s/%s.txt", dir, ix.files[victim].name);
    char text[256];
    file_text(victim, text, sizeof text);
    if (!strcmp(how, "missing"))
        assert_int_equal(unlink(path), 0);
    else if (!strcmp(how, "truncated"))
        write_file(path, text, strlen(text) - 5);
    else {
        text[10] ^= 0x20;
        write_file(path, text, strlen(text));
    }
    mm_shard s;
    assert_int_equal(mm_shard_load(&s, dir, &GENRE, owner[victim], 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "f01.txt"));
    assert_non_null(strstr(err, expect));
    assert_int_equal(mm_data_verify(dir, err, sizeof err), -1);
    assert_non_null(strstr(err, "f01.txt"));
    assert_int_equal(mm_shard_load(&s, dir, &GENRE, 1 - owner[victim], 2, err, sizeof err), 0);
    mm_shard_free(&s);
    file_text(victim, text, sizeof text);
    write_file(path, text, strlen(text));
    assert_int_equal(mm_data_verify(dir, err, sizeof err), 0);
    mm_data_index_free(&ix);
}

static void test_bad_files(void **state)
{
    (void)state;
    damage("missing", "cannot open");
    damage("truncated", "truncated");
    damage("corrupted", "corrupted");
}

static void test_bad_index(void **state)
{
    (void)state;
    char bad[300], path[400], err[512];
    snprintf(bad, sizeof bad, "%s/bad", dir);
    assert_int_equal(mkdir(bad, 0755), 0);
    mm_data_index ix;
    assert_int_equal(mm_data_index_load(&ix, bad, err, sizeof err), -1);
    assert_non_null(strstr(err, "index.tsv"));
    assert_non_null(strstr(err, "make data"));

    static const struct { const char *text, *expect; } cases[] = {
        {"garbage\n", "not a murmur data index"},
        {"# murmur-data 1\n", "lists no files"},
        {"# murmur-data 1\nf00\tnews\t12\n", "line 2"},
        {"# murmur-data 1\nf00\tnews\tx12\t"
         "0000000000000000000000000000000000000000000000000000000000000000\n", "byte count"},
        {"# murmur-data 1\nf00\tnews\t12\t00zz\n", "line 2"},
        {"# murmur-data 1\n../etc\tnews\t12\t"
         "0000000000000000000000000000000000000000000000000000000000000000\n", "line 2"},
        {"# murmur-data 1\nf00\tnews\t12\t"
         "0000000000000000000000000000000000000000000000000000000000000000\n"
         "f00\tnews\t12\t"
         "0000000000000000000000000000000000000000000000000000000000000000\n", "twice"},
    };
    snprintf(path, sizeof path, "%s/index.tsv", bad);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(path, cases[i].text, strlen(cases[i].text));
        assert_int_equal(mm_data_index_load(&ix, bad, err, sizeof err), -1);
        if (!strstr(err, cases[i].expect))
            fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].expect);
    }
    mm_partition pt;
    assert_int_equal(mm_partition_parse("iid", &pt, err, sizeof err), 0);
    assert_int_equal(pt.kind, MM_PART_IID);
    assert_int_equal(mm_partition_parse("genre", &pt, err, sizeof err), 0);
    assert_int_equal(pt.kind, MM_PART_GENRE);
    assert_int_equal(mm_partition_parse("dirichlet:0.5", &pt, err, sizeof err), 0);
    assert_true(pt.kind == MM_PART_DIRICHLET && pt.alpha == 0.5 && !pt.seed_given);
    assert_string_equal(mm_partition_name(&pt), "dirichlet:0.5");
    assert_int_equal(mm_partition_parse("dirichlet:1e3:7", &pt, err, sizeof err), 0);
    assert_true(pt.alpha == 1000 && pt.seed_given && pt.seed == 7);
    assert_string_equal(mm_partition_name(&pt), "dirichlet:1000:7");
    static const char *const refused[] = {"random", "dirichlet:", "dirichlet:0", "dirichlet:-1",
                                          "dirichlet:x", "dirichlet:nan", "dirichlet:2e6",
                                          "dirichlet:1:", "dirichlet:1:-3", "dirichlet:1:2x",
                                          "dirichlet:1x"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (mm_partition_parse(refused[i], &pt, err, sizeof err) == 0)
            fail_msg("--partition %s accepted", refused[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detag),     cmocka_unit_test(test_prepare),
        cmocka_unit_test(test_split),     cmocka_unit_test(test_partition),
        cmocka_unit_test(test_dirichlet), cmocka_unit_test(test_text_utf8),
        cmocka_unit_test(test_text_scan),
        cmocka_unit_test(test_shards),    cmocka_unit_test(test_sampling),
        cmocka_unit_test(test_shards_beyond_start),
        cmocka_unit_test(test_val_labels),
        cmocka_unit_test(test_bad_files), cmocka_unit_test(test_bad_index),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
