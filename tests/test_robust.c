/* Robust mixing (gossip/robust.h): the radius is the lower median of the
 * window times F, bounded by the largest honest distance while honest
 * neighbours make half the window; a clip that bites nothing changes
 * nothing (bit for bit); off is mm_mix_round / mm_choco_mix bit for bit;
 * one mix moves a peer by at most W tau per attacker, for D-PSGD, push-sum
 * and CHOCO, whatever the attacker sends (huge, sign-flipped, overflowing);
 * a steady push inflates the radius for F > 1, not for F = 1. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/rng.h"
#include "gossip/choco.h"
#include "gossip/mix.h"
#include "gossip/robust.h"

#define N 3001

static float *randvec(mm_rng *r, double scale, double offset)
{
    float *v = malloc(N * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < N; i++)
        v[i] = (float)(offset + scale * mm_rng_normal(r));
    return v;
}

static double dist(const float *a, const float *b)
{
    double s = 0;
    for (size_t i = 0; i < N; i++)
        s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return sqrt(s);
}

static void radius_is_lower_median(void **state)
{
    (void)state;
    mm_clip c = mm_clip_make(0, 2.0);
    assert_true(mm_clip_on(&c));
    const uint32_t p01[2] = {0, 1}, p234[3] = {2, 3, 4}, p5[1] = {5};
    double none[2] = {NAN, NAN};
    assert_true(isinf(mm_clip_radius(&c, none, p01, 2))); /* nothing measured yet */
    c.radius_max = 0;
    double d1[2] = {1.0, 1e30};                      /* one honest, one attacker */
    assert_true(mm_clip_radius(&c, d1, p01, 2) == 2.0); /* lower median of {1, 1e30} */
    assert_int_equal(c.clipped, 1);
    double d2[3] = {3.0, INFINITY, NAN}; /* not finite: not recorded, but clipped; */
    assert_true(mm_clip_radius(&c, d2, p234, 3) == 2 * 3.0); /* {1, 3, 1e30} (4 never measured) */
    assert_int_equal(c.clipped, 2);
    /* the window: 64 values; the oldest go */
    for (int i = 0; i < MM_CLIP_WINDOW; i++) {
        double d[2] = {0.5, 1e20};
        mm_clip_radius(&c, d, p01, 2);
    }
    double d3[1] = {NAN};
    assert_true(mm_clip_radius(&c, d3, p5, 1) == 2 * 0.5); /* half 0.5, half 1e20 */
    assert_true(c.radius_max == 2 * 3.0);
    /* a fixed radius learns nothing */
    mm_clip f = mm_clip_make(0.25, 7);
    double d4[2] = {0.2, 0.3};
    assert_true(mm_clip_radius(&f, d4, p01, 2) == 0.25);
    assert_int_equal(f.held, 0);
    assert_int_equal(f.clipped, 1);
    mm_clip off = mm_clip_make(0, 0);
    assert_false(mm_clip_on(&off));
    assert_false(mm_clip_on(NULL));
    assert_true(mm_clip_scale(INFINITY, 1.0) == 0 && mm_clip_scale(NAN, 1.0) == 0);
    assert_true(mm_clip_scale(INFINITY, INFINITY) == 0); /* even before any radius */
    assert_true(mm_clip_scale(4.0, 1.0) == 0.25 && mm_clip_scale(0.5, 1.0) == 1.0);
}

/* in[0] honest, in[1] the attacker; x = s = own (w = 1). */
static void setup(mm_mix_input in[2], const float *h, const float *a, double wa)
{
    in[0] = (mm_mix_input){.x = h, .weight = 1.0 / 3, .w = 1.0, .peer = 0};
    in[1] = (mm_mix_input){.x = a, .weight = 1.0 / 3, .w = wa, .peer = 1};
}

/* Async: the honest neighbour's copy is missing from most mixes, the
 * attacker's present in all. Its last distance stands for it in each mix,
 * so the window stays half honest and the attacker stays clipped (counting
 * only the present neighbours, the window would fill with the attacker's
 * distances and the radius become its distance). */
static void missing_neighbour_keeps_its_place(void **state)
{
    (void)state;
    mm_clip c = mm_clip_make(0, 1.0);
    const uint32_t who[2] = {7, 3}; /* honest 7, attacker 3 */
    double both[2] = {0.2, 40.0};
    assert_true(mm_clip_radius(&c, both, who, 2) == 0.2);
    for (int mix = 0; mix < 5 * MM_CLIP_WINDOW; mix++) {
        double alone[2] = {NAN, 40.0 + mix};
        assert_true(mm_clip_radius(&c, alone, who, 2) == 0.2);
    }
    assert_int_equal(c.clipped, 1 + 5 * MM_CLIP_WINDOW);
    /* more in-neighbours than it remembers: the one measured longest ago
     * is forgotten, not the others */
    mm_clip m = mm_clip_make(0, 1.0);
    for (uint32_t p = 0; p <= MM_CLIP_PEERS; p++) {
        double d[1] = {1.0 + p};
        mm_clip_radius(&m, d, &p, 1);
    }
    assert_int_equal(m.n_last, MM_CLIP_PEERS);
    for (int i = 0; i < m.n_last; i++)
        assert_true(m.last[i].peer != 0);
}

/* Off: mm_mix_round with clip_pull 0; fixed: mm_mix_round with that
 * clip_pull; a radius above every distance: the unclipped x. Bit for bit. */
static void off_and_idle_are_bit_for_bit(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 11);
    float *own = randvec(&r, 1, 0), *h = randvec(&r, 1, 0.1), *a = randvec(&r, 1, -0.1);
    float *x0 = malloc(N * 4), *x1 = malloc(N * 4);
    mm_mix_input in[2];
    mm_clip cases[] = {mm_clip_make(0, 0), mm_clip_make(0.5, 0), mm_clip_make(0, 1e6)};
    double ref_clip[] = {0, 0.5, 0};
    for (int pushsum = 0; pushsum < 2; pushsum++)
        for (int c = 0; c < 3; c++) {
            memcpy(x0, own, N * 4);
            memcpy(x1, own, N * 4);
            setup(in, h, a, pushsum ? 0.7 : 1.0);
            double w0 = mm_mix_round(x0, own, N, 1.0, 1.0 / 3, in, 2, pushsum, 4, ref_clip[c]);
            setup(in, h, a, pushsum ? 0.7 : 1.0);
            double w1 = mm_mix_round_clip(x1, own, N, 1.0, 1.0 / 3, in, 2, pushsum, 4, &cases[c]);
            assert_true(w0 == w1);
            assert_memory_equal(x0, x1, N * 4);
        }
    /* NULL is off */
    memcpy(x1, own, N * 4);
    setup(in, h, a, 1.0);
    mm_mix_round_clip(x1, own, N, 1.0, 1.0 / 3, in, 2, 0, 4, NULL);
    memcpy(x0, own, N * 4);
    setup(in, h, a, 1.0);
    mm_mix_round(x0, own, N, 1.0, 1.0 / 3, in, 2, 0, 4, 0);
    assert_memory_equal(x0, x1, N * 4);
    free(own), free(h), free(a), free(x0), free(x1);
}

/* (Distances are measured in fp32 blocks: 1e-5 of slack against the
 * double reference.) Many mixes of one peer with an honest neighbour near it and an attacker
 * sending a huge, a sign-flipped or an overflowing vector: every mix moves
 * the peer by at most W_h d_h + W_a tau, tau <= F max honest distance. */
static void one_mix_is_bounded(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 5);
    const double F = 2.0;
    for (int attack = 0; attack < 3; attack++)
        for (int pushsum = 0; pushsum < 2; pushsum++) {
            mm_clip c = mm_clip_make(0, F);
            float *x = randvec(&r, 1, 0), *s = malloc(N * 4), *a = malloc(N * 4);
            double max_h = 0;
            for (int round = 0; round < 100; round++) {
                float *h = randvec(&r, 0.01, 0);
                for (size_t i = 0; i < N; i++)
                    h[i] += x[i];
                double dh = dist(h, x);
                max_h = dh > max_h ? dh : max_h;
                for (size_t i = 0; i < N; i++)
                    a[i] = attack == 0   ? x[i] * 1000 + 1000
                           : attack == 1 ? -x[i]
                                         : (i % 2 ? -3e38f : 3e38f);
                memcpy(s, x, N * 4);
                mm_mix_input in[2];
                setup(in, h, a, 1.0);
                mm_mix_round_clip(x, s, N, 1.0, 1.0 / 3, in, 2, pushsum, 4, &c);
                double moved = dist(x, s);
                assert_true(c.radius_max <= F * max_h * (1 + 1e-5));
                /* (w = 1: push-sum's de-biasing divides by a w_new of 1 too) */
                assert_true(moved <= (dh + c.radius_max) / 3 * (1 + 1e-4) + 1e-6);
                c.radius_max = 0;
                free(h);
            }
            assert_true(c.clipped >= 100); /* the attacker, every mix */
            for (size_t i = 0; i < N; i++)
                assert_true(isfinite(x[i]) && fabsf(x[i]) < 10);
            free(x), free(s), free(a);
        }
}

/* CHOCO: off is mm_choco_mix bit for bit; a clip that bites nothing too;
 * with a huge copy the step is bounded by gamma W tau per attacker. */
static void choco_clip(void **state)
{
    (void)state;
    mm_rng r;
    mm_rng_seed(&r, 9);
    float *self = randvec(&r, 1, 0), *h = randvec(&r, 1, 0.01), *a = randvec(&r, 1, 0.01);
    float *x0 = malloc(N * 4), *x1 = malloc(N * 4);
    mm_clip cases[] = {mm_clip_make(0, 0), mm_clip_make(0, 1e6)};
    for (int c = 0; c < 2; c++) {
        memcpy(x0, self, N * 4);
        memcpy(x1, self, N * 4);
        mm_mix_input in[2];
        setup(in, h, a, 1.0);
        assert_int_equal(mm_choco_mix(x0, self, N, 1.0 / 3, in, 2, 0.5), 0);
        setup(in, h, a, 1.0);
        assert_int_equal(mm_choco_mix_clip(x1, self, N, 1.0 / 3, in, 2, 0.5, &cases[c]), 0);
        assert_memory_equal(x0, x1, N * 4);
    }
    mm_clip c = mm_clip_make(0, 2.0);
    for (size_t i = 0; i < N; i++)
        a[i] = i % 2 ? -1.7e38f : 1.7e38f; /* a q-huge copy */
    for (int round = 0; round < 10; round++) {
        memcpy(x1, self, N * 4);
        mm_mix_input in[2];
        setup(in, h, a, 1.0);
        assert_int_equal(mm_choco_mix_clip(x1, self, N, 1.0 / 3, in, 2, 0.5, &c), 0);
        double moved = dist(x1, self), dh = dist(h, self);
        assert_true(c.radius_max <= 2 * dh * (1 + 1e-5));
        assert_true(moved <= 0.5 * (dh + c.radius_max) / 3 * (1 + 1e-4) + 1e-6);
    }
    assert_int_equal(c.clipped, 10);
    free(self), free(h), free(a), free(x0), free(x1);
}

/* A steady push (docs/node.md, "Recommended: --robust-clip 1"): peer i
 * mixes an honest neighbour h and an attacker that sends the same far
 * point every round; h mixes i; both then take a step towards the common
 * optimum 0 with a little noise (training). Returns how far i ends from 0
 * and the last radius. With F > 1 the radius, F times the honest distance
 * the push itself stretches, grows with it and i is dragged off; with
 * F = 1 the push and the honest pull cancel and i stays near 0. */
static double steady_push(double F, double *tau)
{
    mm_rng r;
    mm_rng_seed(&r, 3);
    float *xi = randvec(&r, 0.001, 0), *xh = randvec(&r, 0.001, 0);
    float *si = malloc(N * 4), *sh = malloc(N * 4), *a = malloc(N * 4);
    for (size_t k = 0; k < N; k++)
        a[k] = 1.0f; /* 55 from 0, always the same way */
    mm_clip ci = mm_clip_make(0, F), ch = mm_clip_make(0, F);
    for (int round = 0; round < 200; round++) {
        memcpy(si, xi, N * 4);
        memcpy(sh, xh, N * 4);
        mm_mix_input in[2];
        setup(in, sh, a, 1.0);
        mm_mix_round_clip(xi, si, N, 1.0, 1.0 / 3, in, 2, 0, 4, &ci);
        in[0] = (mm_mix_input){.x = si, .weight = 1.0 / 3, .w = 1.0};
        mm_mix_round_clip(xh, sh, N, 1.0, 2.0 / 3, in, 1, 0, 4, &ch);
        for (size_t k = 0; k < N; k++) {
            xi[k] += (float)(-0.02 * xi[k] + 0.001 * mm_rng_normal(&r));
            xh[k] += (float)(-0.02 * xh[k] + 0.001 * mm_rng_normal(&r));
        }
        *tau = ci.radius_max;
        ci.radius_max = 0;
    }
    float *zero = calloc(N, sizeof *zero);
    double d = dist(xi, zero);
    free(xi), free(xh), free(si), free(sh), free(a), free(zero);
    return d;
}

static void steady_push_inflates_only_f_above_1(void **state)
{
    (void)state;
    double tau1, tau2, tau15, tau05;
    double d05 = steady_push(0.5, &tau05), d1 = steady_push(1.0, &tau1);
    double d15 = steady_push(1.5, &tau15), d2 = steady_push(2.0, &tau2);
    print_message("steady push: |x_i| %.4g %.4g %.4g %.4g, tau %.4g %.4g %.4g %.4g (F 0.5 1 1.5 2)\n",
                  d05, d1, d15, d2, tau05, tau1, tau15, tau2);
    /* the honest distance tau / F, stretched by the push under F = 2 */
    assert_true(tau2 / 2 > 2 * tau1);
    assert_true(d2 > 4 * d1);
    /* and growing with F: 0.5, 1, 1.5, 2 */
    assert_true(d05 < d1 && d1 < d15 && d15 < d2);
    assert_true(d1 < 0.02 * 55); /* i stays within 2% of the attacker's distance */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(radius_is_lower_median),
        cmocka_unit_test(missing_neighbour_keeps_its_place),
        cmocka_unit_test(off_and_idle_are_bit_for_bit),
        cmocka_unit_test(one_mix_is_bounded),
        cmocka_unit_test(choco_clip),
        cmocka_unit_test(steady_push_inflates_only_f_above_1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
