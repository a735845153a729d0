/* Checkpoints: a bit-exact round trip of parameters, AdamW state and the
 * run state; refusal, with a message saying why, of a corrupted byte
 * anywhere, truncation, bad magic or version, another config; and a failed
 * load leaves the model, optimizer and state exactly as they were. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/sha256.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "tests/testutil.h"

static char dir[256], path[400];

static mm_model_config tiny(void)
{
    mm_model_config c = {.n_layer = 2, .d_model = 16, .n_head = 2, .n_ctx = 8};
    return c;
}

/* A model and optimizer with non-trivial state: a few real updates. */
static void trained(mm_model *m, mm_adamw *o, const mm_model_config *cfg, uint64_t seed)
{
    char err[256];
    assert_int_equal(mm_model_init(m, cfg, seed, err, sizeof err), 0);
    mm_adamw_config oc = mm_adamw_config_default();
    oc.total_steps = 100;
    oc.warmup_steps = 2;
    assert_int_equal(mm_adamw_init(o, &oc, m->n_params), 0);
    uint8_t tok[2 * 9];
    mm_rng r;
    mm_rng_seed(&r, seed);
    for (int s = 0; s < 3; s++) {
        for (size_t i = 0; i < sizeof tok; i++)
            tok[i] = (uint8_t)('a' + mm_rng_below(&r, 26));
        mm_model_forward(m, tok, 2, 8);
        mm_model_backward(m);
        mm_adamw_step(o, m, m->params, m->grads);
    }
}

static mm_ckpt_state some_state(void)
{
    mm_ckpt_state st = {.step = 3, .round = 17, .peer_id = 5, .n_peers = 8,
                        .pushsum_weight = 0.3125, .seed = 0xfeedbeefcafeULL};
    mm_rng_seed(&st.rng, 99);
    mm_rng_next(&st.rng);
    return st;
}

static void save_default(void)
{
    mm_model m;
    mm_adamw o;
    mm_model_config cfg = tiny();
    trained(&m, &o, &cfg, 1);
    mm_ckpt_state st = some_state();
    char err[256];
    assert_int_equal(mm_checkpoint_save(path, &m, &o, &st, err, sizeof err), 0);
    mm_adamw_free(&o);
    mm_model_free(&m);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/murmur-test-ckpt-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_rf(dir);
}

static void test_round_trip(void **state)
{
    (void)state;
    mm_model a, b;
    mm_adamw oa, ob;
    mm_model_config cfg = tiny();
    trained(&a, &oa, &cfg, 1);
    trained(&b, &ob, &cfg, 2); /* different everything */
    ob.cfg.lr_max = 0.5f;
    mm_ckpt_state st = some_state(), got;
    memset(&got, 0, sizeof got);
    char err[256];
    assert_int_equal(mm_checkpoint_save(path, &a, &oa, &st, err, sizeof err), 0);

    mm_model_config peek;
    assert_int_equal(mm_checkpoint_peek(path, &peek, err, sizeof err), 0);
    assert_memory_equal(&peek, &cfg, sizeof cfg);

    assert_memory_not_equal(a.params, b.params, a.n_params * sizeof(float));
    assert_int_equal(mm_checkpoint_load(path, &b, &ob, &got, err, sizeof err), 0);
    assert_memory_equal(a.params, b.params, a.n_params * sizeof(float));
    assert_memory_equal(oa.m, ob.m, a.n_params * sizeof(float));
    assert_memory_equal(oa.v, ob.v, a.n_params * sizeof(float));
    assert_int_equal(oa.step, ob.step);
    assert_memory_equal(&oa.cfg, &ob.cfg, sizeof oa.cfg);
    assert_int_equal(got.step, st.step);
    assert_int_equal(got.round, st.round);
    assert_int_equal(got.peer_id, st.peer_id);
    assert_int_equal(got.n_peers, st.n_peers);
    assert_true(got.pushsum_weight == st.pushsum_weight);
    assert_memory_equal(&got.rng, &st.rng, sizeof st.rng);
    assert_int_equal(got.seed, st.seed);

    /* parameters only (opt NULL) from a checkpoint with optimizer state */
    mm_model c;
    assert_int_equal(mm_model_init(&c, &cfg, 3, err, sizeof err), 0);
    assert_int_equal(mm_checkpoint_load(path, &c, NULL, NULL, err, sizeof err), 0);
    assert_memory_equal(a.params, c.params, a.n_params * sizeof(float));

    /* a checkpoint without optimizer state cannot resume training */
    assert_int_equal(mm_checkpoint_save(path, &a, NULL, &st, err, sizeof err), 0);
    assert_int_equal(mm_checkpoint_load(path, &c, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(mm_checkpoint_load(path, &b, &ob, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "no optimizer state"));

    mm_model_free(&c);
    mm_adamw_free(&oa);
    mm_adamw_free(&ob);
    mm_model_free(&a);
    mm_model_free(&b);
}

static uint8_t *slurp(size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(*n);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, *n, f), *n);
    fclose(f);
    return p;
}

static void spit(const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* Loads into a model/optimizer/state full of other values, expects failure
 * with `expect` in the message, and checks nothing was touched. */
static void refused(const mm_model_config *cfg, const char *expect)
{
    mm_model m;
    mm_adamw o;
    trained(&m, &o, cfg, 7);
    size_t n = m.n_params * sizeof(float);
    float *p0 = malloc(n), *m0 = malloc(n), *v0 = malloc(n);
    assert_true(p0 && m0 && v0);
    memcpy(p0, m.params, n);
    memcpy(m0, o.m, n);
    memcpy(v0, o.v, n);
    mm_adamw o0 = o;
    mm_ckpt_state st, st0;
    memset(&st, 0xab, sizeof st);
    st0 = st;

    char err[512] = "";
    assert_int_equal(mm_checkpoint_load(path, &m, &o, &st, err, sizeof err), -1);
    if (!strstr(err, expect))
        fail_msg("message '%s' lacks '%s'", err, expect);
    assert_non_null(strstr(err, path)); /* names the file */
    assert_memory_equal(p0, m.params, n);
    assert_memory_equal(m0, o.m, n);
    assert_memory_equal(v0, o.v, n);
    assert_memory_equal(&o0.cfg, &o.cfg, sizeof o.cfg);
    assert_int_equal(o0.step, o.step);
    assert_memory_equal(&st0, &st, sizeof st);
    free(p0);
    free(m0);
    free(v0);
    mm_adamw_free(&o);
    mm_model_free(&m);
}

static void test_corrupted(void **state)
{
    (void)state;
    mm_model_config cfg = tiny();
    save_default();
    size_t n;
    uint8_t *good = slurp(&n);
    /* Every flipped byte outside magic/version/size fields must be caught;
     * sample positions across header, params, m, v and the digest. */
    size_t where[] = {12 + 3, 40, 72, 100, 150, 199, 200, 201, n / 2, n - 40, n - 33, n - 1};
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
        uint8_t *bad = malloc(n);
        memcpy(bad, good, n);
        bad[where[i]] ^= 0x10;
        spit(bad, n);
        free(bad);
        refused(&cfg, "");
    }
    /* The usual case must say "checksum". */
    uint8_t *bad = malloc(n);
    memcpy(bad, good, n);
    bad[n / 2] ^= 1;
    spit(bad, n);
    refused(&cfg, "checksum mismatch");

    memcpy(bad, good, n);
    bad[0] = 'X';
    spit(bad, n);
    refused(&cfg, "bad magic");

    memcpy(bad, good, n);
    bad[8] = 9; /* version */
    spit(bad, n);
    refused(&cfg, "version 9");
    free(bad);

    spit(good, n - 1);
    refused(&cfg, "truncated");
    spit(good, 150);
    refused(&cfg, "truncated");
    spit(good, 3);
    refused(&cfg, "truncated");
    uint8_t *longer = calloc(1, n + 4);
    memcpy(longer, good, n);
    spit(longer, n + 4);
    refused(&cfg, "trailing bytes");
    free(longer);

    spit(good, n);
    mm_model m;
    char err[256];
    assert_int_equal(mm_model_init(&m, &cfg, 1, err, sizeof err), 0);
    assert_int_equal(mm_checkpoint_load(path, &m, NULL, NULL, err, sizeof err), 0);
    mm_model_free(&m);
    free(good);

    unlink(path);
    refused(&cfg, "cannot open");
}

static void test_config_mismatch(void **state)
{
    (void)state;
    save_default();
    /* same parameter count, other head split: only the config can tell */
    mm_model_config heads = tiny();
    heads.n_head = 4;
    refused(&heads, "model config differs");
    mm_model_config wide = tiny();
    wide.d_model = 32;
    refused(&wide, "parameters");
    mm_model_config deep = tiny();
    deep.n_layer = 3;
    refused(&deep, "parameters");
}

static void test_atomic(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(mm_write_atomic(path, "first", 5, err, sizeof err), 0);
    assert_int_equal(mm_write_atomic(path, "second!", 7, err, sizeof err), 0);
    size_t n;
    uint8_t *p = slurp(&n);
    assert_int_equal(n, 7);
    assert_memory_equal(p, "second!", 7);
    free(p);
    /* no temporary file left next to it */
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int entries = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            entries++;
    closedir(d);
    assert_int_equal(entries, 1);

    char missing[512];
    snprintf(missing, sizeof missing, "%s/no/such/dir/x.bin", dir);
    assert_int_equal(mm_write_atomic(missing, "x", 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "no/such/dir"));
}

static uint32_t file_version(void)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t h[12];
    assert_int_equal(fread(h, 1, sizeof h, f), sizeof h);
    fclose(f);
    uint32_t v;
    memcpy(&v, h + 8, 4);
    return v;
}

/* Format version 2: the outer optimizer's block (outer parameters,
 * momentum, step) round-trips; a version-1 file (no block) still loads,
 * says it has none, and leaves the caller's buffers alone; a plain
 * checkpoint is still written as version 1. */
static void test_outer_block(void **state)
{
    (void)state;
    mm_model a, b;
    mm_adamw oa, ob;
    mm_model_config cfg = tiny();
    trained(&a, &oa, &cfg, 1);
    trained(&b, &ob, &cfg, 2);
    size_t n = a.n_params;
    float *ox = malloc(n * sizeof(float)), *om = malloc(n * sizeof(float));
    float *gx = calloc(n, sizeof(float)), *gm = calloc(n, sizeof(float));
    assert_true(ox && om && gx && gm);
    for (size_t i = 0; i < n; i++) {
        ox[i] = (float)i * 0.5f - 3.0f;
        om[i] = -(float)i * 0.25f;
    }
    char err[256];
    mm_ckpt_state st = some_state();
    assert_int_equal(mm_checkpoint_save(path, &a, &oa, &st, err, sizeof err), 0);
    assert_int_equal(file_version(), 1); /* nothing new: the old format, unchanged */
    mm_ckpt_state got = {0};
    got.outer.x = gx;
    got.outer.m = gm;
    assert_int_equal(mm_checkpoint_load(path, &b, &ob, &got, err, sizeof err), 0);
    assert_int_equal(got.outer.has, 0);
    for (size_t i = 0; i < n; i++)
        assert_true(gx[i] == 0 && gm[i] == 0);

    st.outer.x = ox;
    st.outer.m = om;
    st.outer.step = 41;
    assert_int_equal(mm_checkpoint_save(path, &a, &oa, &st, err, sizeof err), 0);
    assert_int_equal(file_version(), 2);
    memset(&got, 0, sizeof got);
    got.outer.x = gx;
    got.outer.m = gm;
    assert_int_equal(mm_checkpoint_load(path, &b, &ob, &got, err, sizeof err), 0);
    assert_int_equal(got.outer.has, 1);
    assert_int_equal(got.outer.step, 41);
    assert_memory_equal(gx, ox, n * sizeof(float));
    assert_memory_equal(gm, om, n * sizeof(float));
    assert_memory_equal(a.params, b.params, n * sizeof(float));
    assert_int_equal(got.round, st.round);
    /* a reader without outer buffers still loads the model */
    assert_int_equal(mm_checkpoint_load(path, &b, NULL, NULL, err, sizeof err), 0);
    free(ox); free(om); free(gx); free(gm);
    mm_adamw_free(&oa); mm_adamw_free(&ob);
    mm_model_free(&a); mm_model_free(&b);
}

/* AccumAdamW's accumulator is saved and restored with the optimizer; a
 * checkpoint of one accumulation length is refused by a run of another
 * (or by plain AdamW), naming the flag. */
static void test_accum_block(void **state)
{
    (void)state;
    mm_model a, b;
    mm_model_config cfg = tiny();
    char err[256];
    assert_int_equal(mm_model_init(&a, &cfg, 1, err, sizeof err), 0);
    assert_int_equal(mm_model_init(&b, &cfg, 2, err, sizeof err), 0);
    mm_adamw_config oc = mm_adamw_config_default();
    oc.accum_steps = 4;
    mm_adamw oa, ob, plain;
    assert_int_equal(mm_adamw_init(&oa, &oc, a.n_params), 0);
    assert_int_equal(mm_adamw_init(&ob, &oc, a.n_params), 0);
    for (size_t i = 0; i < a.n_params; i++)
        oa.acc[i] = (float)i + 0.125f;
    oa.step = 6;
    mm_ckpt_state st = some_state();
    assert_int_equal(mm_checkpoint_save(path, &a, &oa, &st, err, sizeof err), 0);
    assert_int_equal(file_version(), 2);
    assert_int_equal(mm_checkpoint_load(path, &b, &ob, NULL, err, sizeof err), 0);
    assert_memory_equal(oa.acc, ob.acc, a.n_params * sizeof(float));
    assert_int_equal(ob.step, 6);
    mm_adamw_config pc = mm_adamw_config_default();
    assert_int_equal(mm_adamw_init(&plain, &pc, a.n_params), 0);
    assert_int_equal(mm_checkpoint_load(path, &b, &plain, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "--adam-accum 4"));
    /* and the other way round: a plain checkpoint into an accumulating run */
    assert_int_equal(mm_checkpoint_save(path, &a, &plain, &st, err, sizeof err), 0);
    assert_int_equal(mm_checkpoint_load(path, &b, &ob, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "--adam-accum 0"));
    mm_adamw_free(&oa); mm_adamw_free(&ob); mm_adamw_free(&plain);
    mm_model_free(&a); mm_model_free(&b);
}

/* Format version 3: the compressed outer exchange's error feedback
 * round-trips beside the outer block and the accumulator; a file without
 * it (version 2) says so and leaves the caller's buffer alone; a version
 * this murmur does not know, or the error-feedback flag on a version-2
 * file, is refused naming the version. */
static void test_ef_block(void **state)
{
    (void)state;
    mm_model a, b;
    mm_adamw oa, ob;
    mm_model_config cfg = tiny();
    trained(&a, &oa, &cfg, 1);
    trained(&b, &ob, &cfg, 2);
    size_t n = a.n_params;
    float *ox = calloc(n, sizeof(float)), *om = calloc(n, sizeof(float));
    float *e = malloc(n * sizeof(float)), *got_e = calloc(n, sizeof(float));
    float *gx = calloc(n, sizeof(float)), *gm = calloc(n, sizeof(float));
    assert_true(ox && om && e && got_e && gx && gm);
    for (size_t i = 0; i < n; i++)
        e[i] = (float)i * -0.001f + 0.5f;
    char err[256];
    mm_ckpt_state st = some_state();
    st.outer.x = ox;
    st.outer.m = om;
    st.outer.step = 7;
    assert_int_equal(mm_checkpoint_save(path, &a, &oa, &st, err, sizeof err), 0);
    assert_int_equal(file_version(), 2);
    mm_ckpt_state got = {0};
    got.outer.x = gx;
    got.outer.m = gm;
    got.ef.e = got_e;
    assert_int_equal(mm_checkpoint_load(path, &b, &ob, &got, err, sizeof err), 0);
    assert_int_equal(got.ef.has, 0);
    for (size_t i = 0; i < n; i++)
        assert_true(got_e[i] == 0);

    st.ef.e = e;
    assert_int_equal(mm_checkpoint_save(path, &a, &oa, &st, err, sizeof err), 0);
    assert_int_equal(file_version(), 3);
    assert_int_equal(mm_checkpoint_load(path, &b, &ob, &got, err, sizeof err), 0);
    assert_int_equal(got.ef.has, 1);
    assert_int_equal(got.outer.step, 7);
    assert_memory_equal(got_e, e, n * sizeof(float));
    /* a reader without buffers for it still loads the model */
    assert_int_equal(mm_checkpoint_load(path, &b, NULL, NULL, err, sizeof err), 0);

    /* a version from the future, and the flag on a version that has no
     * such block: refused, naming what is wrong (the checksum is kept
     * right, so the version is what is judged) */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    uint8_t *buf = malloc((size_t)size);
    fseek(f, 0, SEEK_SET);
    assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
    uint32_t v = 4;
    memcpy(buf + 8, &v, 4);
    mm_sha256(buf, (size_t)size - 32, buf + size - 32);
    fseek(f, 0, SEEK_SET);
    assert_int_equal(fwrite(buf, 1, (size_t)size, f), (size_t)size);
    fflush(f);
    assert_int_equal(mm_checkpoint_load(path, &b, &ob, &got, err, sizeof err), -1);
    assert_non_null(strstr(err, "format version 4, this murmur reads versions 1 to 3"));
    v = 2;
    memcpy(buf + 8, &v, 4);
    mm_sha256(buf, (size_t)size - 32, buf + size - 32);
    fseek(f, 0, SEEK_SET);
    assert_int_equal(fwrite(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    assert_int_equal(mm_checkpoint_load(path, &b, &ob, &got, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown flags 0xb for format version 2"));
    free(buf);
    free(ox); free(om); free(e); free(got_e); free(gx); free(gm);
    mm_adamw_free(&oa); mm_adamw_free(&ob);
    mm_model_free(&a); mm_model_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_outer_block),
        cmocka_unit_test(test_accum_block),
        cmocka_unit_test(test_ef_block),
        cmocka_unit_test(test_corrupted),
        cmocka_unit_test(test_config_mismatch),
        cmocka_unit_test(test_atomic),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
