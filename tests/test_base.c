/* The base room's helpers every other room leans on: whole-file reads at
 * their exact size limit, mkdir -p, atomic writes and the clean-up of the
 * temp files a killed writer leaves, number parsing with limits, and option
 * tables whose errors name the flag. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/opt.h"

static char dir[64];

static int make_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/mm-test-base-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_bytes(const char *path, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        fputc('a' + (int)(i % 26), f);
    assert_int_equal(fclose(f), 0);
}

/* A file of exactly the limit is read whole; one byte more is refused,
 * for limits below, at and above the first buffer's 64 KiB, powers of two
 * or not. */
static void test_read_file_limits(void **state)
{
    (void)state;
    static const size_t limits[] = {0, 1, 1000, 65535, 65536, 65537, 100000, 131072, 300001};
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/f", dir);
    for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++) {
        size_t lim = limits[k];
        for (size_t n = lim > 0 ? lim - 1 : 0; n <= lim + 1; n++) {
            write_bytes(path, n);
            char *p = NULL;
            size_t len = 99;
            err[0] = '\0';
            int rc = mm_read_file(path, &p, &len, lim, err, sizeof err);
            if (n <= lim) {
                assert_int_equal(rc, 0);
                assert_int_equal(len, n);
                assert_int_equal(p[n], '\0');
                if (n)
                    assert_int_equal(p[n - 1], 'a' + (int)((n - 1) % 26));
                free(p);
            } else {
                assert_int_equal(rc, -1);
                assert_non_null(strstr(err, "larger than"));
            }
        }
    }
    char *p;
    size_t len;
    snprintf(path, sizeof path, "%s/missing", dir);
    assert_int_equal(mm_read_file(path, &p, &len, 10, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
}

static void test_mkdir_p(void **state)
{
    (void)state;
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/a/b//c/", dir);
    assert_int_equal(mm_mkdir_p(path, err, sizeof err), 0);
    assert_int_equal(mm_mkdir_p(path, err, sizeof err), 0); /* exists: fine */
    struct stat st;
    snprintf(path, sizeof path, "%s/a/b/c", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0755);

    /* a file in the way is an error naming the path */
    snprintf(path, sizeof path, "%s/file", dir);
    write_bytes(path, 3);
    snprintf(path, sizeof path, "%s/file/sub", dir);
    assert_int_equal(mm_mkdir_p(path, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot create"));

    /* longer than PATH_MAX: refused, never cut */
    size_t n = 5000;
    char *lng = malloc(n + 1);
    memset(lng, 'x', n);
    lng[0] = '/';
    lng[n] = '\0';
    assert_int_equal(mm_mkdir_p(lng, err, sizeof err), -1);
    free(lng);
}

static int removed_count;
static void on_removed(const char *path)
{
    (void)path;
    removed_count++;
}

static void test_write_atomic_and_stale_temps(void **state)
{
    (void)state;
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    assert_int_equal(mm_write_atomic(path, "hello", 5, err, sizeof err), 0);
    assert_int_equal(mm_write_atomic(path, "bye", 3, err, sizeof err), 0);
    char *p;
    size_t len;
    assert_int_equal(mm_read_file(path, &p, &len, 100, err, sizeof err), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(p, "bye", 3);
    free(p);

    /* a temp file of a dead writer goes, one of a live writer stays */
    char dead[160], live[160];
    snprintf(dead, sizeof dead, "%s.tmp.%d", path, 0x7ffffff0);
    snprintf(live, sizeof live, "%s.tmp.%d", path, (int)getpid());
    write_bytes(dead, 10);
    write_bytes(live, 10);
    removed_count = 0;
    assert_int_equal(mm_remove_stale_temps(dir, on_removed), 1);
    assert_int_equal(removed_count, 1);
    assert_int_equal(access(dead, F_OK), -1);
    assert_int_equal(access(live, F_OK), 0);
    unlink(live);

    /* a directory that does not exist: the write fails with a reason */
    snprintf(path, sizeof path, "%s/no/such/dir/x", dir);
    assert_int_equal(mm_write_atomic(path, "x", 1, err, sizeof err), -1);
    assert_true(strlen(err) > 0);
}

static void test_parse_numbers(void **state)
{
    (void)state;
    char err[128];
    long v;
    assert_int_equal(mm_parse_long("42", 1, 100, &v, err, sizeof err), 0);
    assert_int_equal(v, 42);
    assert_int_equal(mm_parse_long("101", 1, 100, &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "1..100"));
    assert_int_equal(mm_parse_long("4x", 1, 100, &v, err, sizeof err), -1);
    assert_int_equal(mm_parse_long("", 1, 100, &v, err, sizeof err), -1);
    assert_int_equal(mm_parse_long("99999999999999999999", 0, 100, &v, err, sizeof err), -1);
    double d;
    assert_int_equal(mm_parse_double("1e-3", 0, 1, &d, err, sizeof err), 0);
    assert_true(d == 1e-3);
    assert_int_equal(mm_parse_double("nan", 0, 1, &d, err, sizeof err), -1);
    assert_int_equal(mm_parse_double("2", 0, 1, &d, err, sizeof err), -1);
}

/* Runs mm_opt_parse with stderr captured; returns its result and the
 * message in msg. */
static int parse_capture(const mm_opt *table, int argc, char **argv, char *msg, size_t len)
{
    char path[128];
    snprintf(path, sizeof path, "%s/stderr", dir);
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(path, "w+");
    assert_non_null(f);
    dup2(fileno(f), 2);
    int first = 0;
    int rc = mm_opt_parse("node", argc, argv, table, &first, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t n = fread(msg, 1, len - 1, f);
    msg[n] = '\0';
    fclose(f);
    return rc;
}

static void test_option_errors_name_the_flag(void **state)
{
    (void)state;
    int id = 0, width = 64;
    double lr = 1e-3;
    const mm_opt table[] = {
        MM_OPT(MM_OPT_INT, "id", "K", &id, 0, 2147483647, "this peer's id"),
        MM_OPT(MM_OPT_INT, "width", "N", &width, 8, 4096, "model width"),
        MM_OPT(MM_OPT_DOUBLE, "lr", "X", &lr, 0, 10, "learning rate"),
        {.kind = MM_OPT_END},
    };
    char msg[512];
    char *a1[] = {"node", "--id", "-1", NULL};
    assert_int_equal(parse_capture(table, 3, a1, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--id"));
    assert_non_null(strstr(msg, "'-1'"));
    char *a2[] = {"node", "--width", "100000", NULL};
    assert_int_equal(parse_capture(table, 3, a2, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--width"));
    assert_non_null(strstr(msg, "8..4096"));
    char *a3[] = {"node", "--lr=abc", NULL};
    assert_int_equal(parse_capture(table, 2, a3, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--lr"));
    char *a4[] = {"node", "--nope", NULL};
    assert_int_equal(parse_capture(table, 2, a4, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--nope"));
    char *a5[] = {"node", "--width", "128", "--id=3", "--lr", "0.5", NULL};
    assert_int_equal(parse_capture(table, 6, a5, msg, sizeof msg), 0);
    assert_int_equal(width, 128);
    assert_int_equal(id, 3);
    assert_true(lr == 0.5);
}

/* One write per log line (issue 21, defect 5): under mpirun the peers'
 * stderr share one pipe, and a line written in pieces interleaved with
 * another peer's. stderr is made a datagram socket here, so every write()
 * arrives as one message: each message must be one whole line. */
static void test_log_line_is_one_write(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(sv[0], STDERR_FILENO) >= 0);
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    mm_log_set_peer(3);
    mm_info("data: %d files, %s", 12, "genre");
    mm_warn("a long line: %s", big); /* longer than the formatting buffer */
    mm_log_set_peer(-1);
    mm_error("no peer id");
    dup2(saved, STDERR_FILENO);
    close(saved);
    const char *want[] = {"[peer 3] info: data: 12 files, genre\n", "[peer 3] WARN: a long line: xxx",
                          " ERROR: no peer id\n"};
    for (int i = 0; i < 3; i++) {
        char msg[4096];
        ssize_t k = recv(sv[1], msg, sizeof msg - 1, MSG_DONTWAIT);
        assert_true(k > 0);
        msg[k] = 0;
        assert_non_null(strstr(msg, want[i]));
        assert_int_equal(msg[k - 1], '\n');
        assert_ptr_equal(strchr(msg, '\n'), msg + k - 1); /* one line, whole */
        if (i == 1)
            assert_int_equal(strspn(strstr(msg, "xxx"), "x"), sizeof big - 1);
    }
    char extra;
    assert_true(recv(sv[1], &extra, 1, MSG_DONTWAIT) < 0); /* nothing more */
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_file_limits),
        cmocka_unit_test(test_mkdir_p),
        cmocka_unit_test(test_write_atomic_and_stale_temps),
        cmocka_unit_test(test_parse_numbers),
        cmocka_unit_test(test_option_errors_name_the_flag),
        cmocka_unit_test(test_log_line_is_one_write),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
