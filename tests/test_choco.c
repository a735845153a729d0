/* CHOCO-Gossip's arithmetic (gossip/choco.h): the consensus step against
 * mm_mix_round (bit for bit at gamma = 1) and a double reference; fp32 with
 * gamma = 1 run as CHOCO on a ring equals plain D-PSGD bit for bit; every
 * codec reaches average consensus with error feedback; and without error
 * feedback the biased codecs (top-k, sign) do not. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gossip/choco.h"
#include "gossip/mix.h"
#include "base/rng.h"
#include "tests/choco_sim.h"

static float *randvec(mm_rng *r, size_t n, double scale, double offset)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)(offset + scale * mm_rng_normal(r));
    return v;
}

/* gamma = 1: the same x as mm_mix_round, bit for bit, with any degree,
 * missing neighbours, sizes around the block boundaries. */
static void mix_is_mm_mix_round(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 3);
    size_t sizes[] = {1, 1023, 4096, 4097, 12289};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int n_in = 1; n_in <= 5; n_in++)
            for (int missing = -1; missing < n_in; missing += 2) {
                size_t n = sizes[si];
                float *x = randvec(&r, n, 1, 0), *x2 = malloc(n * sizeof *x2);
                float *s = randvec(&r, n, 1, 0), *y[5];
                memcpy(x2, x, n * sizeof *x);
                mm_mix_input a[5], b[5];
                double self = 1.0;
                for (int k = 0; k < n_in; k++) {
                    y[k] = randvec(&r, n, 1, k);
                    double w = (k + 1) / (double)((n_in + 1) * (n_in + 2)) * 2;
                    self -= w;
                    a[k] = (mm_mix_input){.x = k == missing ? NULL : y[k], .weight = w, .w = 1};
                    b[k] = a[k];
                }
                mm_mix_round(x, s, n, 1.0, self, a, n_in, 0, 1.0, 0);
                assert_int_equal(mm_choco_mix(x2, s, n, self, b, n_in, 1.0), 0);
                assert_memory_equal(x, x2, n * sizeof *x);
                for (int k = 0; k < n_in; k++) {
                    if (k == missing) {
                        assert_true(isnan(b[k].dist));
                        continue;
                    }
                    assert_true(fabs(a[k].dist - b[k].dist) <= 1e-5 * a[k].dist);
                }
                for (int k = 0; k < n_in; k++)
                    free(y[k]);
                free(x), free(x2), free(s);
            }
}

/* gamma < 1 against the formula in double. */
static void mix_gamma_reference(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 4);
    size_t n = 5000;
    double W[3] = {0.2, 0.3, 0.25}, self = 0.25, gamma = 0.3;
    float *x = randvec(&r, n, 1, 0), *s = randvec(&r, n, 1, 0), *y[3];
    double *want = malloc(n * sizeof *want);
    mm_mix_input in[3];
    for (int k = 0; k < 3; k++) {
        y[k] = randvec(&r, n, 1, 0.5 * k);
        in[k] = (mm_mix_input){.x = k == 1 ? NULL : y[k], .weight = W[k]};
    }
    for (size_t i = 0; i < n; i++) {
        double acc = 0;
        for (int k = 0; k < 3; k++)
            if (k != 1) /* missing: its term is dropped */
                acc += W[k] * ((double)y[k][i] - s[i]);
        want[i] = x[i] + gamma * acc;
    }
    assert_int_equal(mm_choco_mix(x, s, n, self, in, 3, gamma), 0);
    for (size_t i = 0; i < n; i++)
        assert_true(fabs(x[i] - want[i]) < 1e-5 * (1 + fabs(want[i])));
    assert_int_equal(mm_choco_mix(x, s, n, self, in, 3, 0.0), -1);
    assert_int_equal(mm_choco_mix(x, s, n, self, in, 3, 1.5), -1);
    assert_int_equal(mm_choco_mix(x, s, n, self, in, 3, NAN), -1);
    for (int k = 0; k < 3; k++)
        free(y[k]);
    free(x), free(s), free(want);
}

/* A ring of 8 trained for 40 rounds (local steps between sending and
 * mixing, a neighbour missing now and then), once with today's D-PSGD
 * (snapshot, mm_mix_round) and once as CHOCO with fp32 and gamma = 1
 * (encode into the own copy, copies updated from the payloads, mm_choco_mix):
 * every parameter is the same float. */
static void fp32_gamma1_is_dpsgd(void **state)
{
    (void)state;
    enum { N = 8, P = 5003, ROUNDS = 40 };
    mm_rng r;
    mm_rng_seed(&r, 21);
    mm_codec_spec spec;
    char err[256];
    assert_int_equal(mm_codec_parse("fp32", &spec, err, sizeof err), 0);
    mm_codec *c = mm_codec_new(&spec, P, err, sizeof err);
    float *a[N], *b[N], *snap[N], *own[N], *cl[N], *cr[N];
    uint8_t *q[N];
    size_t qlen[N];
    for (int i = 0; i < N; i++) {
        a[i] = randvec(&r, P, 1, i);
        b[i] = malloc(P * sizeof(float));
        memcpy(b[i], a[i], P * sizeof(float));
        snap[i] = malloc(P * sizeof(float));
        own[i] = calloc(P, sizeof(float));
        cl[i] = calloc(P, sizeof(float));
        cr[i] = calloc(P, sizeof(float));
        q[i] = malloc(mm_codec_max_bytes(c));
    }
    const double w = 1.0 / 3;
    for (int t = 0; t < ROUNDS; t++) {
        for (int i = 0; i < N; i++) {
            mm_mix_scale_copy(snap[i], 1.0f, a[i], P); /* D-PSGD's snapshot, w = 1 */
            assert_int_equal(mm_choco_encode(c, b[i], own[i], 0, q[i], mm_codec_max_bytes(c),
                                             &qlen[i], NULL, err, sizeof err), MM_CODEC_OK);
        }
        for (int i = 0; i < N; i++) { /* local steps, the same on both sides */
            for (int p = 0; p < P; p++) {
                float g = (float)(0.01 * mm_rng_normal(&r));
                a[i][p] -= g;
                b[i][p] -= g;
            }
        }
        for (int i = 0; i < N; i++) {
            int l = (i + N - 1) % N, rt = (i + 1) % N;
            assert_int_equal(mm_choco_receive(c, q[l], qlen[l], cl[i], NULL, err, sizeof err), 0);
            assert_int_equal(mm_choco_receive(c, q[rt], qlen[rt], cr[i], NULL, err, sizeof err), 0);
            bool drop = (t + i) % 7 == 0; /* the right neighbour timed out */
            mm_mix_input pa[2] = {{.x = snap[l], .weight = w, .w = 1},
                                  {.x = drop ? NULL : snap[rt], .weight = w, .w = 1}};
            mm_mix_input pb[2] = {{.x = cl[i], .weight = w}, {.x = drop ? NULL : cr[i], .weight = w}};
            mm_mix_round(a[i], snap[i], P, 1.0, w, pa, 2, 0, 1.0, 0);
            mm_choco_mix(b[i], own[i], P, w, pb, 2, 1.0);
        }
    }
    for (int i = 0; i < N; i++) {
        assert_memory_equal(a[i], b[i], P * sizeof(float));
        free(a[i]), free(b[i]), free(snap[i]), free(own[i]), free(cl[i]), free(cr[i]), free(q[i]);
    }
    mm_codec_free(c);
}

/* With error feedback every codec brings a ring to the initial average
 * (tolerance: 1e-3 of the initial distance to it), the copies agreeing
 * bit for bit every round, at the gamma docs/compression.md recommends
 * (mm_choco_default_gamma). */
static void every_codec_reaches_consensus(void **state)
{
    (void)state;
    struct { const char *codec; int peers, rounds; } cases[] = {
        {"fp32", 8, 200},      {"bf16", 8, 200},      {"int8", 12, 300},    {"sign", 16, 400},
        {"sign:256", 8, 2000}, {"topk:0.1", 8, 800},  {"randk:0.1", 12, 1500},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mm_codec_spec spec;
        char err[256];
        assert_int_equal(mm_codec_parse(cases[i].codec, &spec, err, sizeof err), 0);
        choco_sim s = {.codec = cases[i].codec, .peers = cases[i].peers, .dim = 1024,
                       .gamma = mm_choco_default_gamma(&spec), .rounds = cases[i].rounds,
                       .feedback = true, .seed = 1 + i, .tol = 1e-3, .stop_at_tol = true};
        if (choco_sim_run(&s, err, sizeof err) != 0)
            fail_msg("%s: %s", cases[i].codec, err);
        print_message("%-10s gamma %.2f ring of %2d: %4d rounds to 1e-3, final %.1e, xi %.1e\n",
                      cases[i].codec, s.gamma, cases[i].peers, s.rounds_to_tol,
                      s.err / s.err0, s.xi / s.err0);
        assert_true(s.copies_agree);
        if (!(s.err <= 1e-3 * s.err0))
            fail_msg("%s did not reach consensus: %g of %g", cases[i].codec, s.err, s.err0);
    }
}

/* Without error feedback, top-k and sign lose the average: after as many
 * rounds as CHOCO needs, at the same gamma and at gamma = 1, they are
 * farther from it than they started. */
static void no_error_feedback_diverges(void **state)
{
    (void)state;
    struct { const char *codec; double gamma; } cases[] = {
        {"topk:0.1", 0.2}, {"topk:0.1", 1.0}, {"sign", 0.5}, {"sign", 1.0},
        {"sign:256", 0.1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        choco_sim s = {.codec = cases[i].codec, .peers = 8, .dim = 1024,
                       .gamma = cases[i].gamma, .rounds = 800, .feedback = false, .seed = 7,
                       .tol = 1e-3};
        char err[256];
        if (choco_sim_run(&s, err, sizeof err) != 0)
            fail_msg("%s: %s", cases[i].codec, err);
        print_message("no feedback: %-9s gamma %.1f: distance to the average %.2f of the "
                      "initial (best %.2f), xi %.1e\n", cases[i].codec, cases[i].gamma,
                      s.err / s.err0, s.best, s.xi / s.err0);
        assert_int_equal(s.rounds_to_tol, -1);
        if (!(s.err > s.err0))
            fail_msg("%s without error feedback came within %g of the average", cases[i].codec,
                     s.err / s.err0);
        /* the same run with error feedback does reach it */
        s.feedback = true;
        s.gamma = cases[i].gamma < 1 || !strcmp(cases[i].codec, "sign") ? cases[i].gamma : 0.2;
        s.rounds = 2000;
        assert_int_equal(choco_sim_run(&s, err, sizeof err), 0);
        assert_true(s.err <= 1e-3 * s.err0);
    }
}

/* The memory a peer needs, and resetting a copy with an fp32 payload. */
static void state_bytes_and_reset(void **state)
{
    (void)state;
    mm_codec_spec spec, f32;
    char err[256];
    uint64_t n = 1000;
    assert_int_equal(mm_codec_parse("int8:256", &spec, err, sizeof err), 0);
    assert_int_equal(mm_codec_parse("fp32", &f32, err, sizeof err), 0);
    mm_codec *c = mm_codec_new(&spec, n, err, sizeof err), *r = mm_codec_new(&f32, n, err, sizeof err);
    /* own copy + 2 copies, 3 payloads of 4*4 + 1000 bytes, the workspace */
    assert_int_equal(mm_choco_state_bytes(c, 2),
                     3 * 4000 + 3 * 1016 + mm_codec_workspace_bytes(c));
    mm_rng g;
    mm_rng_seed(&g, 8);
    float *x = randvec(&g, n, 1, 0), *own = calloc(n, sizeof *own), *copy = calloc(n, sizeof *copy);
    uint8_t *p = malloc(mm_codec_max_bytes(r));
    size_t len;
    uint32_t a, b;
    assert_int_equal(mm_choco_encode(c, x, own, 0, p, mm_codec_max_bytes(r), &len, &a, err,
                                     sizeof err), MM_CODEC_OK);
    copy[5] = 1e6f; /* the receiver's copy diverged */
    assert_int_equal(mm_choco_receive(c, p, len, copy, &b, err, sizeof err), MM_CODEC_OK);
    assert_int_not_equal(a, b);
    /* reset: an fp32 payload of x sets both to x */
    assert_int_equal(mm_choco_encode(r, x, own, 0, p, mm_codec_max_bytes(r), &len, &a, err,
                                     sizeof err), MM_CODEC_OK);
    assert_int_equal(mm_choco_receive(r, p, len, copy, &b, err, sizeof err), MM_CODEC_OK);
    assert_int_equal(a, b);
    assert_memory_equal(own, x, n * sizeof *x);
    assert_memory_equal(copy, x, n * sizeof *x);
    assert_int_equal(mm_choco_crc(copy, n), b);
    free(x), free(own), free(copy), free(p);
    mm_codec_free(c), mm_codec_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mix_is_mm_mix_round),
        cmocka_unit_test(mix_gamma_reference),
        cmocka_unit_test(fp32_gamma1_is_dpsgd),
        cmocka_unit_test(every_codec_reaches_consensus),
        cmocka_unit_test(no_error_feedback_diverges),
        cmocka_unit_test(state_bytes_and_reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
