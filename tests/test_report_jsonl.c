/* The metrics line reader: the value kinds the metrics use, exact 64-bit
 * integers, NaN/Infinity, unknown nested values skipped, and malformed or
 * truncated lines refused with a position. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "report/jsonl.h"

static int parse(const char *s, mm_json_obj *o, char *err)
{
    return mm_json_parse(s, strlen(s), o, err, 128);
}

static void test_eval_line(void **state)
{
    (void)state;
    mm_json_obj o;
    char err[128];
    const char *s = "{\"ev\":\"eval\",\"round\":40,\"val_acc\":0.25,\"norm\":1.5e2,"
                    "\"sketch\":[1,-2.5,3e-1,null],\"dist\":{\"1\":0.5,\"7\":2},"
                    "\"ok\":true,\"x\":null}\n";
    assert_int_equal(parse(s, &o, err), 0);
    assert_string_equal(mm_json_str(&o, "ev"), "eval");
    double v;
    assert_true(mm_json_num(&o, "round", &v));
    assert_true(v == 40);
    assert_true(mm_json_num(&o, "norm", &v));
    assert_true(v == 150);
    const mm_json_field *f = mm_json_get(&o, "sketch");
    assert_non_null(f);
    assert_int_equal(f->type, MM_J_ARR);
    assert_int_equal(f->n_arr, 4);
    assert_true(f->arr[1] == -2.5 && fabs(f->arr[2] - 0.3) < 1e-15 && isnan(f->arr[3]));
    f = mm_json_get(&o, "dist");
    assert_int_equal(f->type, MM_J_OBJ);
    assert_int_equal(f->n_obj, 2);
    assert_string_equal(f->obj[1].key, "7");
    assert_true(f->obj[1].num == 2);
    assert_false(mm_json_num(&o, "ev", &v));
    assert_null(mm_json_get(&o, "missing"));
    mm_json_free(&o);
}

static void test_u64_nan_escapes(void **state)
{
    (void)state;
    mm_json_obj o;
    char err[128];
    assert_int_equal(parse("{\"seed\":18446744073709551557,\"l\":NaN,\"m\":-Infinity,"
                           "\"s\":\"a\\\"b\\u00e9\\n\"}", &o, err), 0);
    uint64_t u;
    assert_true(mm_json_u64(&o, "seed", &u));
    assert_true(u == 18446744073709551557ull);
    double v;
    assert_true(mm_json_num(&o, "l", &v) && isnan(v));
    assert_true(mm_json_num(&o, "m", &v) && isinf(v) && v < 0);
    assert_string_equal(mm_json_str(&o, "s"), "a\"b\xc3\xa9\n");
    mm_json_free(&o);
}

static void test_unknown_nested_skipped(void **state)
{
    (void)state;
    mm_json_obj o;
    char err[128];
    assert_int_equal(parse("{\"a\":[[1,2],{\"x\":[]}],\"b\":{\"k\":{\"z\":1}},\"c\":[\"s\"],\"d\":3}",
                           &o, err), 0);
    assert_int_equal(mm_json_get(&o, "a")->type, MM_J_OTHER);
    assert_int_equal(mm_json_get(&o, "b")->type, MM_J_OTHER);
    assert_int_equal(mm_json_get(&o, "c")->type, MM_J_OTHER);
    double v;
    assert_true(mm_json_num(&o, "d", &v) && v == 3);
    mm_json_free(&o);
}

/* An end line's "refusals" and "why" objects map ids to strings, beside
 * the number objects ("mixed"); a mixed object is read as it is. */
static void test_string_objects(void **state)
{
    (void)state;
    mm_json_obj o;
    char err[128];
    assert_int_equal(parse("{\"ev\":\"end\",\"mixed\":{\"1\":12,\"3\":0},"
                           "\"refusals\":{\"3\":\"tls_mismatch\"},"
                           "\"why\":{\"3\":\"TLS mismatch: it says \\\"no\\\"\",\"5\":7}}",
                           &o, err), 0);
    const mm_json_field *m = mm_json_get(&o, "mixed");
    assert_int_equal(m->type, MM_J_OBJ);
    assert_int_equal(m->n_obj, 2);
    assert_null(m->obj[0].str);
    assert_true(m->obj[0].num == 12 && m->obj[1].num == 0);
    const mm_json_field *r = mm_json_get(&o, "refusals");
    assert_int_equal(r->type, MM_J_OBJ);
    assert_int_equal(r->n_obj, 1);
    assert_string_equal(r->obj[0].key, "3");
    assert_string_equal(r->obj[0].str, "tls_mismatch");
    assert_true(isnan(r->obj[0].num));
    const mm_json_field *w = mm_json_get(&o, "why");
    assert_int_equal(w->n_obj, 2);
    assert_string_equal(w->obj[0].str, "TLS mismatch: it says \"no\"");
    assert_null(w->obj[1].str);
    assert_true(w->obj[1].num == 7);
    mm_json_free(&o);
}

static void test_bad_lines_refused(void **state)
{
    (void)state;
    static const char *bad[] = {
        "", "{", "{\"ev\":\"round\",\"round\":4", "{\"ev\":\"rou", "[1,2]",
        "{\"a\":1,}", "{\"a\":01x}", "{\"a\":1} x", "{\"a\":-}", "{\"a\":1.}",
        "{a:1}", "{\"a\":[1,2}", "{\"a\":\"\\q\"}", "{\"a\":tru}",
        /* no writer produces these; a line holding one is damaged */
        "{\"a\":01}", "{\"a\":-00.5}", "{\"a\":1e999}", "{\"a\":[1,-1e400]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mm_json_obj o;
        char err[128] = "";
        if (parse(bad[i], &o, err) != -1)
            fail_msg("accepted: %s", bad[i]);
        assert_non_null(strstr(err, "at byte"));
        mm_json_free(&o);
    }
}

/* The edges of the number grammar that are valid: zero, underflow to 0,
 * the largest double, an exponent with a sign. */
static void test_number_edges_read(void **state)
{
    (void)state;
    mm_json_obj o;
    char err[128];
    assert_int_equal(parse("{\"z\":0,\"m\":-0.5,\"u\":1e-400,\"x\":1.79769313e+308,"
                           "\"e\":2E-3}", &o, err), 0);
    double v;
    assert_true(mm_json_num(&o, "z", &v) && v == 0);
    assert_true(mm_json_num(&o, "m", &v) && v == -0.5);
    assert_true(mm_json_num(&o, "u", &v) && v == 0);
    assert_true(mm_json_num(&o, "x", &v) && isfinite(v) && v > 1.79e308);
    assert_true(mm_json_num(&o, "e", &v) && v == 2e-3);
    mm_json_free(&o);
}

/* Mutated and truncated versions of a real line: each is parsed or refused,
 * never a crash (run under -fsanitize=address to make that mean something). */
static void test_mutations_never_crash(void **state)
{
    (void)state;
    const char *good = "{\"ev\":\"eval\",\"round\":9,\"val_acc\":0.5,\"sketch\":[1e-3,-2,NaN],"
                       "\"dist\":{\"3\":0.25},\"s\":\"x\\u00e9\"}";
    size_t n = strlen(good);
    char buf[256];
    uint64_t st = 12345;
    int parsed = 0, refused = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(buf, good, n + 1);
        size_t len = n;
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        int muts = 1 + (int)((st >> 60) & 3);
        for (int m = 0; m < muts; m++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            size_t pos = (size_t)(st >> 33) % len;
            switch ((st >> 20) & 3) {
            case 0: buf[pos] = (char)(st >> 40); break;          /* any byte */
            case 1: len = pos; buf[len] = 0; break;              /* truncate */
            case 2: buf[pos] = "{}[]\":,\\-.eE0"[(st >> 44) % 15]; break;
            default: memmove(buf + pos, buf + pos + 1, len - pos); len--; break;
            }
            if (len == 0)
                break;
        }
        mm_json_obj o;
        char err[128];
        if (mm_json_parse(buf, len, &o, err, sizeof err) == 0)
            parsed++;
        else
            refused++;
        mm_json_free(&o);
    }
    assert_true(parsed > 0 && refused > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_line),
        cmocka_unit_test(test_u64_nan_escapes),
        cmocka_unit_test(test_unknown_nested_skipped),
        cmocka_unit_test(test_string_objects),
        cmocka_unit_test(test_bad_lines_refused),
        cmocka_unit_test(test_number_edges_read),
        cmocka_unit_test(test_mutations_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
