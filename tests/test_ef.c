/* Error feedback and the average of compressed contributions
 * (gossip/ef.h), on toy vectors:
 *   - over a window of rounds the payloads and the final error feedback sum
 *     to the pseudo-gradients' sum: exactly for top-k on values a float
 *     holds exactly, within one rounding per round for int8 and sign;
 *   - fp32 leaves no error feedback and sends the pseudo-gradient itself;
 *   - beta < 1 decays what is left (SparseLoCo's accumulator), by the rule;
 *   - the combine is y = o - (sum_j decode(p_j)) / n in peer order, bit for
 *     bit what a by-hand loop computes, and refuses fp32. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "gossip/codec.h"
#include "gossip/ef.h"

/* the by-hand replays round as the code does (gcc -std=c11 fuses nothing) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define N 1000
#define ROUNDS 12

static mm_codec *codec(const char *spec)
{
    mm_codec_spec s;
    char err[256];
    assert_int_equal(mm_codec_parse(spec, &s, err, sizeof err), 0);
    mm_codec *c = mm_codec_new(&s, N, err, sizeof err);
    assert_non_null(c);
    return c;
}

/* Pseudo-gradients o - s of a few rounds: o fixed, s = o - delta_t. With
 * dyadic, small values every subtraction here is exact. */
static void round_vectors(mm_rng *r, float *o, float *s, float *delta, bool dyadic)
{
    for (int k = 0; k < N; k++) {
        float d = dyadic ? (float)((int)(mm_rng_uniform(r) * 64) - 32) / 64.0f
                         : (float)mm_rng_normal(r) * 0.01f;
        if (k % 97 == 0)
            d *= 8; /* a few large ones, as a real pseudo-gradient has */
        delta[k] = d;
        s[k] = o[k] - d;
    }
}

/* sum_t decode(q_t) + e_T against sum_t delta_t over ROUNDS rounds;
 * returns the largest difference relative to the largest |sum|. */
static double window(const char *spec, bool dyadic)
{
    mm_codec *c = codec(spec);
    float *o = calloc(N, 4), *s = calloc(N, 4), *delta = calloc(N, 4), *e = calloc(N, 4),
          *scratch = calloc(N, 4), *sent = calloc(N, 4);
    double *want = calloc(N, sizeof(double));
    uint8_t *out = malloc(mm_codec_max_bytes(c));
    mm_rng r;
    mm_rng_seed(&r, 7);
    for (int k = 0; k < N; k++)
        o[k] = dyadic ? (float)(k % 16) / 4.0f : (float)mm_rng_normal(&r);
    for (int t = 0; t < ROUNDS; t++) {
        round_vectors(&r, o, s, delta, dyadic);
        size_t len;
        char why[200];
        assert_int_equal(mm_ef_encode(c, e, o, s, N, 1.0f, scratch, mm_codec_key(1, 0, t), out,
                                      mm_codec_max_bytes(c), &len, why, sizeof why),
                         MM_CODEC_OK);
        /* what a receiver takes: the payload, checked and added */
        assert_int_equal(mm_codec_apply(c, out, len, sent, NULL, why, sizeof why), MM_CODEC_OK);
        for (int k = 0; k < N; k++)
            want[k] += delta[k];
    }
    double worst = 0, scale = 0;
    for (int k = 0; k < N; k++)
        if (fabs(want[k]) > scale)
            scale = fabs(want[k]);
    for (int k = 0; k < N; k++) {
        double d = fabs((double)sent[k] + (double)e[k] - want[k]) / scale;
        if (d > worst)
            worst = d;
    }
    free(o); free(s); free(delta); free(e); free(scratch); free(sent); free(want); free(out);
    mm_codec_free(c);
    return worst;
}

static void topk_window_is_exact(void **state)
{
    (void)state;
    /* values a float holds exactly: every operation exact, the identity too */
    assert_true(window("topk:0.01", true) == 0.0);
    assert_true(window("topk:0.1", true) == 0.0);
    assert_true(window("randk:0.05", true) == 0.0);
}

static void dense_window_within_rounding(void **state)
{
    (void)state;
    /* one rounding of the subtraction e - decode(q) per round, and of the
     * receiver's sum: well under 1e-5 of the largest sum */
    double i8 = window("int8", false), sg = window("sign", false), tk = window("topk:0.01", false);
    printf("window of %d rounds: int8 %.2e, sign %.2e, topk:0.01 %.2e (relative)\n", ROUNDS, i8,
           sg, tk);
    assert_true(i8 < 1e-5);
    assert_true(sg < 1e-5);
    assert_true(tk < 1e-5);
}

/* Without error feedback (e reset to 0 each round) the window loses what
 * top-k left out: the identity above is not trivially true. */
static void without_feedback_mass_is_lost(void **state)
{
    (void)state;
    mm_codec *c = codec("topk:0.01");
    float o[N] = {0}, s[N], delta[N], e[N], scratch[N], sent[N] = {0};
    double want[N] = {0};
    uint8_t *out = malloc(mm_codec_max_bytes(c));
    mm_rng r;
    mm_rng_seed(&r, 3);
    for (int t = 0; t < ROUNDS; t++) {
        round_vectors(&r, o, s, delta, true);
        memset(e, 0, sizeof e);
        size_t len;
        char why[200];
        assert_int_equal(mm_ef_encode(c, e, o, s, N, 1.0f, scratch, 0, out,
                                      mm_codec_max_bytes(c), &len, why, sizeof why),
                         MM_CODEC_OK);
        assert_int_equal(mm_codec_apply(c, out, len, sent, NULL, why, sizeof why), MM_CODEC_OK);
        for (int k = 0; k < N; k++)
            want[k] += delta[k];
    }
    double lost = 0;
    for (int k = 0; k < N; k++)
        lost += fabs(want[k] - sent[k]);
    assert_true(lost > 1.0);
    free(out);
    mm_codec_free(c);
}

static void fp32_leaves_nothing(void **state)
{
    (void)state;
    mm_codec *c = codec("fp32");
    float o[N], s[N], delta[N], e[N] = {0}, scratch[N], got[N];
    uint8_t *out = malloc(mm_codec_max_bytes(c));
    mm_rng r;
    mm_rng_seed(&r, 5);
    for (int k = 0; k < N; k++)
        o[k] = (float)mm_rng_normal(&r);
    round_vectors(&r, o, s, delta, false);
    size_t len;
    char why[200];
    assert_int_equal(mm_ef_encode(c, e, o, s, N, 1.0f, scratch, 0, out, mm_codec_max_bytes(c),
                                  &len, why, sizeof why), MM_CODEC_OK);
    assert_int_equal(mm_codec_decode(c, out, len, got, why, sizeof why), MM_CODEC_OK);
    for (int k = 0; k < N; k++) {
        assert_true(e[k] == 0.0f);
        assert_true(got[k] == o[k] - s[k]); /* the pseudo-gradient, bit for bit */
    }
    free(out);
    mm_codec_free(c);
}

/* beta < 1: e_t = beta e_{t-1} + delta_t - decode(q_t), each term rounded
 * as written: a by-hand replay gives the same floats. */
static void decay_follows_the_rule(void **state)
{
    (void)state;
    mm_codec *c = codec("topk:0.05");
    float o[N] = {0}, s[N], delta[N], e[N] = {0}, hand[N] = {0}, scratch[N], dec[N];
    uint8_t *out = malloc(mm_codec_max_bytes(c));
    mm_rng r;
    mm_rng_seed(&r, 11);
    const float beta = 0.95f;
    for (int t = 0; t < 5; t++) {
        round_vectors(&r, o, s, delta, false);
        size_t len;
        char why[200];
        assert_int_equal(mm_ef_encode(c, e, o, s, N, beta, scratch, 0, out,
                                      mm_codec_max_bytes(c), &len, why, sizeof why),
                         MM_CODEC_OK);
        assert_int_equal(mm_codec_decode(c, out, len, dec, why, sizeof why), MM_CODEC_OK);
        for (int k = 0; k < N; k++) {
            float a = beta * hand[k] + (o[k] - s[k]);
            hand[k] = a - dec[k];
            assert_true(hand[k] == e[k]);
        }
    }
    free(out);
    mm_codec_free(c);
}

static void combine_in_peer_order(void **state)
{
    (void)state;
    mm_codec *c = codec("int8");
    enum { PEERS = 3 };
    uint8_t *buf[PEERS];
    size_t len[PEERS];
    float o[N], dec[PEERS][N], e[N], s[N], delta[N], scratch[N], y[N];
    mm_rng r;
    mm_rng_seed(&r, 13);
    for (int k = 0; k < N; k++)
        o[k] = (float)mm_rng_normal(&r);
    char why[200];
    for (int j = 0; j < PEERS; j++) {
        buf[j] = malloc(mm_codec_max_bytes(c));
        memset(e, 0, sizeof e);
        round_vectors(&r, o, s, delta, false);
        assert_int_equal(mm_ef_encode(c, e, o, s, N, 1.0f, scratch, 0, buf[j],
                                      mm_codec_max_bytes(c), &len[j], why, sizeof why),
                         MM_CODEC_OK);
        assert_int_equal(mm_codec_decode(c, buf[j], len[j], dec[j], why, sizeof why),
                         MM_CODEC_OK);
    }
    assert_int_equal(mm_ef_combine(c, (const uint8_t *const *)buf, len, PEERS, o, y, why,
                                   sizeof why), MM_CODEC_OK);
    for (int k = 0; k < N; k++) {
        float sum = 0.0f;
        for (int j = 0; j < PEERS; j++)
            sum = sum + dec[j][k];
        float want = o[k] - sum / (float)PEERS;
        assert_true(y[k] == want);
    }
    mm_codec *f = codec("fp32");
    assert_int_equal(mm_ef_combine(f, (const uint8_t *const *)buf, len, PEERS, o, y, why,
                                   sizeof why), MM_CODEC_E_INPUT);
    mm_codec_free(f);
    for (int j = 0; j < PEERS; j++)
        free(buf[j]);
    mm_codec_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(topk_window_is_exact),
        cmocka_unit_test(dense_window_within_rounding),
        cmocka_unit_test(without_feedback_mass_is_lost),
        cmocka_unit_test(fp32_leaves_nothing),
        cmocka_unit_test(decay_follows_the_rule),
        cmocka_unit_test(combine_in_peer_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
