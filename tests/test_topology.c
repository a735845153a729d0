/* Topologies: spectral facts against closed forms, the per-round views
 * against the dense W, and the schedules' defining properties. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/sha256.h"
#include "gossip/topology.h"

/* This CMocka has no assert_double_equal. */
#define assert_near(a, b, tol) near_((a), (b), (tol), #a, __LINE__)
static void near_(double a, double b, double tol, const char *what, int line)
{
    if (!(fabs(a - b) <= tol))
        fail_msg("line %d: %s = %.17g, expected %.17g (tolerance %g)", line, what, a, b, tol);
}

static mm_topology *gen(const char *kind, int n, void (*tweak)(mm_gen_opts *))
{
    mm_gen_opts o = {.n = n, .seed = 7};
    if (tweak)
        tweak(&o);
    mm_topo_spec s;
    char err[512];
    if (mm_topo_generate(kind, &o, &s, err, sizeof err) < 0)
        fail_msg("gen %s -n %d: %s", kind, n, err);
    mm_topology *t = mm_topo_build(&s, kind, err, sizeof err);
    if (!t)
        fail_msg("build %s -n %d: %s", kind, n, err);
    mm_topo_spec_free(&s);
    return t;
}

static mm_topology *parse(const char *text)
{
    char err[512];
    mm_topology *t = mm_topo_parse(text, strlen(text), "test.topo", err, sizeof err);
    if (!t)
        fail_msg("parse: %s", err);
    return t;
}

static void uniform_w(mm_gen_opts *o)
{
    o->weights_set = true;
    o->weights = MM_W_UNIFORM;
}

static void directed(mm_gen_opts *o) { o->directed = true; }

static void ring_rho_closed_form(void **state)
{
    (void)state;
    const int ns[] = {4, 5, 8, 13, 16, 32, 50};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int n = ns[k];
        const double pi = 3.14159265358979323846;
        double want = (1 + 2 * cos(2 * pi / n)) / 3;
        /* On a ring Metropolis-Hastings and uniform both give 1/3. */
        mm_topology *a = gen("ring", n, NULL), *b = gen("ring", n, uniform_w);
        assert_near(mm_topo_rho(a), want, 1e-12);
        assert_near(mm_topo_rho(b), want, 1e-12);
        mm_topo_free(a);
        mm_topo_free(b);
    }
    /* A hand-written ring with explicit fractions says the same. */
    mm_topology *t = parse("peers 6\nweights explicit\n0 1 1/3\n1 2 1/3\n2 3 1/3\n3 4 1/3\n4 5 1/3\n5 0 1/3\n");
    assert_near(mm_topo_rho(t), (1 + 2 * cos(2 * 3.14159265358979323846 / 6)) / 3, 1e-12);
    mm_topo_free(t);
}

static void complete_uniform_rho_zero(void **state)
{
    (void)state;
    for (int n = 2; n <= 12; n += 5) {
        mm_topology *t = gen("complete", n, uniform_w);
        assert_true(mm_topo_rho(t) < 1e-12);
        double *w = mm_topo_matrix(t, 0);
        for (int i = 0; i < n * n; i++)
            assert_near(w[i], 1.0 / n, 1e-15);
        free(w);
        mm_topo_free(t);
    }
    /* and a ring is not complete: rho clearly above 0 */
    mm_topology *t = gen("ring", 6, uniform_w);
    assert_true(mm_topo_rho(t) > 0.3);
    mm_topo_free(t);
}

static void matmul(const double *a, const double *b, double *c, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }
}

/* max |W(tau-1) ... W(0) - J| over the entries */
static double one_peer_product_gap(int n)
{
    mm_topology *t = gen("one-peer-exp", n, NULL);
    int tau = mm_topo_period(t);
    assert_int_equal(tau, (int)ceil(log2(n)));
    double *p = calloc((size_t)n * n, sizeof *p), *q = malloc((size_t)n * n * sizeof *q);
    for (int i = 0; i < n; i++)
        p[i * n + i] = 1;
    for (int r = 0; r < tau; r++) {
        double *w = mm_topo_matrix(t, (uint64_t)r);
        matmul(w, p, q, n);
        memcpy(p, q, (size_t)n * n * sizeof *p);
        free(w);
    }
    double gap = 0;
    for (int i = 0; i < n * n; i++)
        gap = fmax(gap, fabs(p[i] - 1.0 / n));
    free(p);
    free(q);
    mm_topo_free(t);
    return gap;
}

static void one_peer_exp_product_is_average(void **state)
{
    (void)state;
    for (int n = 2; n <= 64; n *= 2) {
        assert_true(one_peer_product_gap(n) == 0.0); /* exact: halves only */
        mm_topology *t = gen("one-peer-exp", n, NULL);
        assert_true(mm_topo_rho(t) < 1e-12);
        mm_topo_free(t);
    }
    const int others[] = {3, 5, 6, 12, 24};
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++) {
        assert_true(one_peer_product_gap(others[k]) > 1e-3);
        mm_topology *t = gen("one-peer-exp", others[k], NULL);
        double rho = mm_topo_rho(t);
        assert_true(rho > 1e-3 && rho < 1);
        mm_topo_free(t);
    }
}

static void one_peer_exp_directions(void **state)
{
    (void)state;
    int n = 16;
    mm_topology *t = gen("one-peer-exp", n, NULL);
    assert_false(mm_topo_directed(t)); /* doubly stochastic: no push-sum needed */
    assert_int_equal(mm_topo_max_degree(t), 1);
    mm_neighbour in[1], out[1];
    for (uint64_t r = 0; r < 9; r++) {
        uint32_t s = 1u << (r % 4);
        for (uint32_t i = 0; i < (uint32_t)n; i++) {
            mm_round_view v = {.in = in, .out = out};
            assert_int_equal(mm_topo_round(t, i, r, &v), 0);
            assert_int_equal(v.n_in, 1);
            assert_int_equal(v.n_out, 1);
            assert_int_equal(in[0].peer, (i + n - s) % n);
            assert_int_equal(out[0].peer, (i + s) % n);
            assert_near(v.self_weight + in[0].weight, 1.0, 0);
        }
    }
    mm_topo_free(t);
}

/* The views must be exactly the rows (in) and columns (out) of W. */
/* Epidemic Learning's W is row- but not column-stochastic (a receiver
 * averages what came); every other kind keeps the total mass. */
static void check_views(mm_topology *t, uint64_t round)
{
    int n = mm_topo_n(t), md = mm_topo_max_degree(t);
    double *w = mm_topo_matrix(t, round);
    assert_non_null(w);
    mm_neighbour *in = malloc((size_t)(md + 1) * sizeof *in), *out = malloc((size_t)(md + 1) * sizeof *out);
    double *col = calloc((size_t)n, sizeof *col);
    for (int i = 0; i < n; i++) {
        mm_round_view v = {.in = in, .out = out};
        assert_int_equal(mm_topo_round(t, (uint32_t)i, round, &v), 0);
        assert_true(v.n_in <= md && v.n_out <= md);
        assert_near(v.self_weight, w[i * n + i], 0);
        int nz_row = 0, nz_col = 0;
        for (int j = 0; j < n; j++)
            if (j != i) {
                nz_row += w[i * n + j] != 0;
                nz_col += w[j * n + i] != 0;
            }
        assert_int_equal(v.n_in, nz_row);
        assert_int_equal(v.n_out, nz_col);
        for (int k = 0; k < v.n_in; k++) {
            assert_int_not_equal(in[k].peer, i);
            assert_near(in[k].weight, w[i * n + in[k].peer], 0);
        }
        for (int k = 0; k < v.n_out; k++) {
            assert_int_not_equal(out[k].peer, i);
            assert_near(out[k].weight, w[out[k].peer * n + i], 0);
        }
        for (int j = 0; j < n; j++)
            col[j] += w[i * n + j];
    }
    for (int j = 0; j < n && strcmp(mm_topo_kind(t), "epidemic"); j++)
        assert_near(col[j], 1.0, 1e-12);
    free(col);
    free(in);
    free(out);
    free(w);
}

static void views_match_matrix_every_kind(void **state)
{
    (void)state;
    const int ns[] = {4, 8, 9, 16};
    for (int k = 0; mm_topo_kinds[k]; k++)
        for (size_t m = 0; m < sizeof ns / sizeof ns[0]; m++) {
            const char *kind = mm_topo_kinds[k];
            int n = ns[m];
            if ((!strcmp(kind, "torus") && n == 9) || (!strcmp(kind, "regular") && n == 4) ||
                (!strcmp(kind, "alt-exp-ring") && n == 9))
                continue;
            mm_topology *t = gen(kind, n, NULL);
            for (uint64_t r = 0; r < 5; r++)
                check_views(t, r);
            mm_topo_free(t);
        }
    mm_topology *t = gen("exp", 6, directed);
    check_views(t, 0);
    mm_topo_free(t);
}

static void metropolis_doubly_stochastic_uniform_row(void **state)
{
    (void)state;
    mm_topology *t = gen("star", 6, NULL);
    mm_topo_facts f;
    assert_int_equal(mm_topo_facts_get(t, &f), 0);
    assert_true(f.symmetric && f.doubly);
    mm_topo_free(t);
    /* uniform 1/(deg+1) on an irregular graph: rows sum to 1, columns not */
    t = gen("star", 6, uniform_w);
    assert_int_equal(mm_topo_facts_get(t, &f), 0);
    assert_true(f.row);
    assert_false(f.column);
    assert_false(f.symmetric);
    mm_topo_free(t);
}

static void directed_exp_is_column_stochastic(void **state)
{
    (void)state;
    mm_topo_facts f;
    /* a directed cycle with one chord: in-degrees differ, rows do not sum to 1 */
    mm_topology *t = parse("peers 3\ngraph directed\n0 1\n1 2\n2 0\n0 2\n");
    assert_true(mm_topo_directed(t));
    assert_int_equal(mm_topo_facts_get(t, &f), 0);
    assert_true(f.column);
    assert_false(f.row);
    assert_true(f.connected);
    mm_topo_free(t);
    /* the directed exponential graph is regular: doubly stochastic, not symmetric */
    t = gen("exp", 6, directed);
    assert_true(mm_topo_directed(t));
    assert_int_equal(mm_topo_facts_get(t, &f), 0);
    assert_true(f.column && f.row);
    assert_false(f.symmetric);
    assert_true(f.connected);
    /* peer 0 sends to 1, 2, 4 and keeps 1/4 */
    mm_neighbour in[8], out[8];
    mm_round_view v = {.in = in, .out = out};
    assert_int_equal(mm_topo_round(t, 0, 0, &v), 0);
    assert_int_equal(v.n_out, 3);
    assert_int_equal(out[0].peer, 1);
    assert_int_equal(out[1].peer, 2);
    assert_int_equal(out[2].peer, 4);
    assert_near(v.self_weight, 0.25, 0);
    assert_near(out[2].weight, 0.25, 0);
    /* receives from 5 (5+1), 4 (4+2), 2 (2+4) */
    assert_int_equal(v.n_in, 3);
    assert_int_equal(in[0].peer, 2);
    assert_int_equal(in[1].peer, 4);
    assert_int_equal(in[2].peer, 5);
    mm_topo_free(t);
}

static void random_matching_properties(void **state)
{
    (void)state;
    const int ns[] = {2, 7, 8, 33};
    for (size_t m = 0; m < sizeof ns / sizeof ns[0]; m++) {
        int n = ns[m];
        mm_topology *t = gen("random-matching", n, NULL), *t2 = gen("random-matching", n, NULL);
        mm_neighbour in[1], out[1];
        int changed = 0;
        uint32_t *prev = calloc((size_t)n, sizeof *prev);
        for (uint64_t r = 0; r < 40; r++) {
            int alone = 0;
            for (uint32_t i = 0; i < (uint32_t)n; i++) {
                mm_round_view v = {.in = in, .out = out}, v2 = {.in = in, .out = out};
                assert_int_equal(mm_topo_round(t, i, r, &v), 0);
                if (v.n_in == 0) {
                    alone++;
                    assert_near(v.self_weight, 1, 0);
                    continue;
                }
                uint32_t p = in[0].peer;
                assert_int_equal(out[0].peer, p);
                assert_near(v.self_weight, 0.5, 0);
                /* partner's partner is me; a second copy agrees (no state) */
                assert_int_equal(mm_topo_round(t2, p, r, &v2), 0);
                assert_int_equal(v2.n_in, 1);
                assert_int_equal(in[0].peer, i);
                if (r && prev[i] != p)
                    changed++;
                prev[i] = p;
            }
            assert_int_equal(alone, n % 2);
        }
        if (n > 2)
            assert_true(changed > 0);
        free(prev);
        /* The mean-square rate against E[W] computed by hand: with n even a
         * peer meets each other peer with probability 1/(n-1). */
        double diag = n % 2 ? (1 + (n - 1) / 2.0) / n : 0.5;
        double off = n % 2 ? 1.0 / (2 * n) : 1.0 / (2 * (n - 1));
        double want = sqrt(diag - off);
        assert_near(mm_topo_rho(t), want, 0.05);
        mm_topo_free(t);
        mm_topo_free(t2);
    }
    /* different seeds, different matchings */
    const char *a = "peers 16\nschedule random-matching\nseed 1\n", *b = "peers 16\nschedule random-matching\nseed 2\n";
    mm_topology *ta = parse(a), *tb = parse(b);
    double *wa = mm_topo_matrix(ta, 3), *wb = mm_topo_matrix(tb, 3);
    assert_memory_not_equal(wa, wb, 16 * 16 * sizeof(double));
    free(wa);
    free(wb);
    mm_topo_free(ta);
    mm_topo_free(tb);
}

static void facts_of_small_graphs(void **state)
{
    (void)state;
    mm_topo_facts f;
    mm_topology *t = gen("ring", 8, NULL);
    assert_int_equal(mm_topo_facts_get(t, &f), 0);
    assert_int_equal(f.edges, 8);
    assert_int_equal(f.deg_min, 2);
    assert_int_equal(f.deg_max, 2);
    assert_int_equal(f.diameter, 4);
    assert_true(f.connected && f.symmetric && f.doubly);
    /* rho = 0.8047...: ln 10 / -ln rho = 10.59 -> 11 rounds */
    assert_true(f.rounds_tenfold == 11);
    mm_topo_free(t);
    t = gen("chain", 5, NULL);
    assert_int_equal(mm_topo_facts_get(t, &f), 0);
    assert_int_equal(f.diameter, 4);
    assert_int_equal(f.deg_min, 1);
    mm_topo_free(t);
    t = gen("torus", 16, NULL);
    assert_int_equal(mm_topo_facts_get(t, &f), 0);
    assert_int_equal(f.edges, 32);
    assert_int_equal(f.deg_max, 4);
    assert_int_equal(f.diameter, 4);
    mm_topo_free(t);
    t = gen("exp", 16, NULL);
    assert_int_equal(mm_topo_facts_get(t, &f), 0);
    assert_int_equal(f.deg_min, 7); /* +-1, +-2, +-4, 8 */
    assert_int_equal(f.diameter, 2);
    mm_topo_free(t);
    t = gen("one-peer-exp", 8, NULL);
    assert_int_equal(mm_topo_facts_get(t, &f), 0);
    assert_int_equal(f.period, 3);
    assert_true(f.doubly);
    assert_false(f.symmetric);
    assert_int_equal(f.n_rho_rounds, 3);
    assert_true(f.rho < 1e-12);
    assert_true(f.rounds_tenfold == 3); /* exact average after one whole period */
    mm_topo_free(t);
}

/* Thousands of peers: loading and one round must not be quadratic. Not a
 * timing test: the run-time limit catches an n^2 per round for n = 100000. */
/* The topology digest (docs/protocol.md 3.1): the examples documented
 * there, the same for a file saying the same thing in other words, and
 * another one for every change in what the topology does. */
static void digest_hex(const char *text, char hex[65])
{
    mm_topology *t = parse(text);
    mm_sha256_hex(mm_topo_digest(t), hex);
    mm_topo_free(t);
}

/* Each of texts[0..n) has a digest of its own, unlike first (named
 * first_name) and every text before it; their hex into seen[1..n]. */
static void digests_all_differ(const char *first, const char *first_name,
                               const char *const *texts, size_t n, char (*seen)[65])
{
    memcpy(seen[0], first, 65);
    for (size_t i = 0; i < n; i++) {
        digest_hex(texts[i], seen[i + 1]);
        for (size_t j = 0; j <= i; j++)
            if (!strcmp(seen[i + 1], seen[j]))
                fail_msg("'%s' has the digest of %s", texts[i], j ? texts[j - 1] : first_name);
    }
}

static void digest_canonical(void **state)
{
    (void)state;
    static const char ring4[] = "peers 4\nkind ring\ngraph undirected\nweights metropolis\n"
                                "0 1\n1 2\n2 3\n3 0\n";
    char a[65], b[65];
    digest_hex(ring4, a);
    assert_string_equal(a, "ee96c8c61672d04a36f9f2b99c28d15ce39bd0016ba4e726e09db91f179330d2");
    digest_hex("peers 8\nschedule random-matching\nseed 1\n", b);
    assert_string_equal(b, "5deec148becee9645ebe329f7111f21cb0c51334dd8fc246671990857e365a1e");
    /* the same topology in other words: comments, kind, defaults left out,
     * reversed and reordered edges, CRLF */
    static const char *const same[] = {
        "# a comment\npeers 4\n3 0 # the last first\n1 0\n2 1\n3 2\n",
        "peers 4\r\nkind my-own\r\n0 1\r\n\r\n1 2\r\n2 3\r\n0 3\r\n",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        digest_hex(same[i], b);
        assert_string_equal(a, b);
    }
    /* what the topology does: each differs from ring-4 and from the others */
    static const char *const other[] = {
        "peers 4\n0 1\n1 2\n2 3\n",                                    /* an edge fewer */
        "peers 4\nweights uniform\n0 1\n1 2\n2 3\n3 0\n",             /* weights */
        "peers 4\ngraph directed\n0 1\n1 2\n2 3\n3 0\n",              /* graph */
        "peers 4\nweights explicit\n0 1 1/3\n1 2 1/3\n2 3 1/3\n3 0 1/3\n",
        "peers 4\nweights explicit\n0 1 1/3\n1 2 1/3\n2 3 1/3\n3 0 1/3\nself 0 1/3\n",
        "peers 4\nweights explicit\n0 1 0.25\n1 2 0.25\n2 3 0.25\n3 0 0.25\n",
        "peers 5\n0 1\n1 2\n2 3\n3 4\n4 0\n",                         /* peers */
        "peers 4\nschedule one-peer-exp\n",                             /* schedule */
        "peers 4\nschedule random-matching\nseed 1\n",
        "peers 4\nschedule random-matching\nseed 2\n",                 /* seed */
        "peers 4\nschedule epidemic\nseed 1\nfanout 1\n",
        "peers 4\nschedule epidemic\nseed 1\nfanout 2\n",             /* fanout */
        "peers 4\nschedule base\ndegree 1\n",
        "peers 4\nschedule base\ndegree 2\n",                          /* degree */
        "peers 4\nschedule alt-exp-ring\n",
        "peers 4\nschedule alt-exp-ring\ngroup 2\n",                   /* group */
        "peers 4\nschedule local\n",
    };
    enum { N_OTHER = sizeof other / sizeof other[0] };
    char seen[N_OTHER + 1][65];
    digests_all_differ(a, "ring-4", other, N_OTHER, seen);
    /* 'group 1' is the default */
    digest_hex("peers 4\nschedule alt-exp-ring\ngroup 1\n", b);
    assert_string_equal(b, seen[15]);
}

/* A family file's digest (docs/protocol.md 3.1): the documented example,
 * the same through comments, kind, CRLF, a byte-order mark and defaults,
 * another for every field of a family, and none a static file's. */
static void digest_of_families(void **state)
{
    (void)state;
    char a[65], b[65];
    digest_hex("peers 8\nkind ring\nfamily ring\nweights metropolis\n", a);
    assert_string_equal(a, "51a7f4d2c133acb97493aaf412189c279ab5ea83b97772ec7a0d460ad13a4c2c");
    static const char *const same[] = {
        "# comment\npeers 8\nfamily ring # re-formed\n",
        "\xEF\xBB\xBF" "family ring\r\n\r\npeers 8\r\nkind my-label\r\n",
        "peers 8\nfamily ring\ngraph undirected\n",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        digest_hex(same[i], b);
        assert_string_equal(a, b);
    }
    static const char *const other[] = {
        "peers 8\n0 1\n1 2\n2 3\n3 4\n4 5\n5 6\n6 7\n7 0\n",       /* its graph, as edges */
        "peers 9\nfamily ring\n",                                     /* peers */
        "peers 8\nfamily ring\nweights uniform\n",                   /* weights */
        "peers 8\nfamily exp\n",                                      /* the family */
        "peers 8\nfamily one-peer-exp\n",
        "peers 8\nfamily base 1\n",
        "peers 8\nfamily base 2\n",                                   /* K */
        "peers 8\nfamily complete\n",
        "peers 8\nfamily regular 3 seed 1\n",
        "peers 8\nfamily regular 4 seed 1\n",                         /* D */
        "peers 8\nfamily regular 3 seed 2\n",                         /* S */
        "peers 8\nfamily regular 3 seed 1\nweights uniform\n",
        "peers 8\nfamily torus\n",
        "peers 8\nschedule one-peer-exp\n",                           /* its schedule */
        "peers 8\nschedule base\ndegree 1\n",
    };
    enum { N_OTHER = sizeof other / sizeof other[0] };
    char seen[N_OTHER + 1][65];
    digests_all_differ(a, "family ring", other, N_OTHER, seen);
}

static void large_static_and_matching(void **state)
{
    (void)state;
    int n = 100000;
    mm_topology *t = gen("exp", n, NULL);
    mm_neighbour in[64], out[64];
    assert_true(mm_topo_max_degree(t) <= 64);
    for (uint32_t i = 0; i < (uint32_t)n; i += 997) {
        mm_round_view v = {.in = in, .out = out};
        assert_int_equal(mm_topo_round(t, i, 5, &v), 0);
        assert_int_equal(v.n_in, 34); /* +-2^k, k = 0..16, all distinct mod 100000 */
    }
    mm_topo_free(t);
    t = gen("random-matching", n, NULL);
    for (uint64_t r = 0; r < 10; r++)
        for (uint32_t i = 0; i < (uint32_t)n; i++) {
            mm_round_view v = {.in = in, .out = out};
            assert_int_equal(mm_topo_round(t, i, r, &v), 0);
        }
    mm_round_view v = {.in = in, .out = out};
    assert_int_equal(mm_topo_round(t, (uint32_t)n, 0, &v), -1);
    mm_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ring_rho_closed_form),
        cmocka_unit_test(complete_uniform_rho_zero),
        cmocka_unit_test(one_peer_exp_product_is_average),
        cmocka_unit_test(one_peer_exp_directions),
        cmocka_unit_test(views_match_matrix_every_kind),
        cmocka_unit_test(metropolis_doubly_stochastic_uniform_row),
        cmocka_unit_test(directed_exp_is_column_stochastic),
        cmocka_unit_test(random_matching_properties),
        cmocka_unit_test(facts_of_small_graphs),
        cmocka_unit_test(large_static_and_matching),
        cmocka_unit_test(digest_canonical),
        cmocka_unit_test(digest_of_families),
    };
    return cmocka_run_group_tests(tests, 0, 0);
}
