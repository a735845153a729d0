/* Families (topologies/README.md, "Families"): every family over every
 * member count k = 1..64 and a few large ones is connected over its
 * period, has a doubly stochastic W and the documented degree, and equals
 * what `murmur topo gen` makes for that k; a family file loaded as a static
 * topology is the family at its `peers N`. (Their digest: test_topology.c,
 * their refusals and mangled files: test_topology_errors.c.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/rng.h"
#include "gossip/topology.h"

static mm_topology *parse(const char *text)
{
    char err[512];
    mm_topology *t = mm_topo_parse(text, strlen(text), "fam.topo", err, sizeof err);
    if (!t)
        fail_msg("parse '%s': %s", text, err);
    return t;
}

static mm_topology *inst(const mm_topology *f, int k)
{
    char err[512];
    mm_topology *t = mm_topo_instantiate(f, k, err, sizeof err);
    if (!t)
        fail_msg("instantiate %s at %d: %s", mm_topo_kind(f), k, err);
    return t;
}

/* The families under test, each as a file of 8 starting members. */
static const char *const families[] = {
    "peers 8\nfamily ring\n",
    "peers 8\nfamily ring\nweights uniform\n",
    "peers 8\nfamily exp\n",
    "peers 8\nfamily one-peer-exp\n",
    "peers 8\nfamily base 1\n",
    "peers 8\nfamily base 3\n",
    "peers 8\nfamily complete\n",
    "peers 8\nfamily regular 3 seed 1\n",
    "peers 8\nfamily regular 4 seed 9\n",
    "peers 8\nfamily regular 5 seed 2\nweights uniform\n",
    "peers 8\nfamily torus\n",
};
#define N_FAMILIES (sizeof families / sizeof families[0])

/* ---- what every instantiation must be -------------------------------------- */

static int torus_rows(int k)
{
    int r = (int)sqrt((double)k);
    while (r > 1 && k % r)
        r--;
    return r;
}

/* The exponential graph's degree at k: distinct non-zero +-2^j mod k. */
static int exp_degree(int k)
{
    int seen = 0;
    bool *off = calloc((size_t)k, sizeof *off);
    assert_non_null(off);
    for (long h = 1; h < k; h *= 2) {
        off[h % k] = true;
        off[(k - h % k) % k] = true;
    }
    for (int i = 1; i < k; i++)
        seen += off[i];
    free(off);
    return seen;
}

/* regular's degree at k (topologies/README.md): D, or D + 1 when k D is
 * odd; k - 1 (complete) when that is not below k - 1. */
static int regular_degree(int d, int k)
{
    int dk = (long)k * d % 2 ? d + 1 : d;
    return dk >= k - 1 ? k - 1 : dk;
}

/* The documented per-round degree of a peer, or -1 for "at most
 * min(K, k - 1)" (base). */
static int want_degree(enum mm_family f, int param, int k)
{
    if (k == 1)
        return 0;
    switch (f) {
    case MM_FAMILY_RING: return k == 2 ? 1 : 2;
    case MM_FAMILY_EXP: return exp_degree(k);
    case MM_FAMILY_ONE_PEER_EXP: return 1;
    case MM_FAMILY_BASE: return -1;
    case MM_FAMILY_COMPLETE: return k - 1;
    case MM_FAMILY_REGULAR: return regular_degree(param, k);
    case MM_FAMILY_TORUS: {
        int r = torus_rows(k), c = k / r;
        if (r < 2)
            return k == 2 ? 1 : 2; /* the ring */
        return (c >= 3 ? 2 : 1) + (r >= 3 ? 2 : 1);
    }
    case MM_FAMILY_NONE: break;
    }
    return -2;
}

/* Row and column sums of W(r) within 1e-12 of 1 (columns summed from the
 * rows' in-weights, not from the out lists), symmetric where the family
 * is static, every peer's degree as documented, and the arcs of the round
 * merged into the union-find of the period. */
typedef struct {
    uint32_t *parent;
    double *col;
    mm_neighbour *in, *out;
} checker;

static uint32_t find(uint32_t *p, uint32_t x)
{
    while (p[x] != x)
        x = p[x] = p[p[x]];
    return x;
}

static void check_round(const mm_topology *t, enum mm_family f, int param, uint64_t r,
                        checker *c, const char *what)
{
    int k = mm_topo_n(t), want = want_degree(f, param, k);
    int cap = param > 0 && f == MM_FAMILY_BASE ? (param < k - 1 ? param : k - 1) : 0;
    memset(c->col, 0, (size_t)k * sizeof *c->col);
    for (int i = 0; i < k; i++) {
        mm_round_view v = {.in = c->in, .out = c->out};
        assert_int_equal(mm_topo_round(t, (uint32_t)i, r, &v), 0);
        double row = v.self_weight;
        c->col[i] += v.self_weight;
        for (int j = 0; j < v.n_in; j++) {
            row += v.in[j].weight;
            c->col[v.in[j].peer] += v.in[j].weight;
            uint32_t a = find(c->parent, (uint32_t)i), b = find(c->parent, v.in[j].peer);
            c->parent[a] = b;
        }
        if (fabs(row - 1) > 1e-12)
            fail_msg("%s, k = %d, round %llu: row %d sums to %.17g", what, k,
                     (unsigned long long)r, i, row);
        if (want >= 0 && (v.n_in != want || v.n_out != want))
            fail_msg("%s, k = %d: peer %d has %d in, %d out, documented %d", what, k, i, v.n_in,
                     v.n_out, want);
        if (want == -1 && (v.n_in > cap || v.n_out > cap))
            fail_msg("%s, k = %d: peer %d has degree %d > %d", what, k, i, v.n_in, cap);
    }
    for (int i = 0; i < k; i++)
        if (fabs(c->col[i] - 1) > 1e-12)
            fail_msg("%s, k = %d, round %llu: column %d sums to %.17g", what, k,
                     (unsigned long long)r, i, c->col[i]);
}

static void check_instance(const mm_topology *t, enum mm_family f, int param, const char *what)
{
    int k = mm_topo_n(t);
    int md = mm_topo_max_degree(t) > 0 ? mm_topo_max_degree(t) : 1;
    checker c = {malloc((size_t)k * sizeof *c.parent), malloc((size_t)k * sizeof *c.col),
                 malloc((size_t)md * sizeof *c.in), malloc((size_t)md * sizeof *c.out)};
    assert_true(c.parent && c.col && c.in && c.out);
    for (int i = 0; i < k; i++)
        c.parent[i] = (uint32_t)i;
    int period = mm_topo_period(t);
    assert_true(period >= 1);
    for (int r = 0; r < period; r++)
        check_round(t, f, param, (uint64_t)r, &c, what);
    for (int i = 1; i < k; i++)
        if (find(c.parent, (uint32_t)i) != find(c.parent, 0))
            fail_msg("%s, k = %d: peer %d not connected to 0 over one period", what, k, i);
    free(c.parent);
    free(c.col);
    free(c.in);
    free(c.out);
}

static void family_of(const mm_topology *f, enum mm_family *kind, int *param)
{
    *kind = mm_topo_family_kind(f);
    char d[128];
    mm_topo_family_describe(f, d, sizeof d);
    *param = 0;
    if (*kind == MM_FAMILY_BASE || *kind == MM_FAMILY_REGULAR)
        *param = atoi(strchr(d, ' ') + 1);
}

static void each_family_every_small_count(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_FAMILIES; i++) {
        mm_topology *f = parse(families[i]);
        enum mm_family kind;
        int param;
        family_of(f, &kind, &param);
        for (int k = 1; k <= 64; k++) {
            mm_topology *t = inst(f, k);
            assert_int_equal(mm_topo_n(t), k);
            assert_true(mm_topo_family(t));
            assert_int_equal(mm_topo_family_peers(t), 8);
            assert_memory_equal(mm_topo_digest(t), mm_topo_digest(f), 32);
            assert_false(mm_topo_directed(t));
            check_instance(t, kind, param, families[i]);
            mm_topo_free(t);
        }
        mm_topo_free(f);
    }
}

/* A few large counts, primes and powers of two among them. */
static void each_family_large_counts(void **state)
{
    (void)state;
    static const int ks[] = {97, 128, 255, 257, 1000, 1024};
    for (size_t i = 0; i < N_FAMILIES; i++) {
        mm_topology *f = parse(families[i]);
        enum mm_family kind;
        int param;
        family_of(f, &kind, &param);
        for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
            mm_topology *t = inst(f, ks[j]);
            check_instance(t, kind, param, families[i]);
            mm_topo_free(t);
        }
        mm_topo_free(f);
    }
}

/* Dense regular families: where pairing stubs at random gets stuck, the
 * circulant is used; every count still has its graph. */
static void regular_dense_counts(void **state)
{
    (void)state;
    mm_topology *f = parse("peers 62\nfamily regular 60 seed 1\n");
    for (int k = 1; k <= 130; k++) {
        mm_topology *t = inst(f, k);
        check_instance(t, MM_FAMILY_REGULAR, 60, "regular 60");
        mm_topo_free(t);
    }
    mm_topo_free(f);
}

/* ---- the same graph as `murmur topo gen` ------------------------------------- */

static mm_topology *generated(const char *kind, int n, int degree, uint64_t seed, bool uniform)
{
    mm_gen_opts o = {.n = n, .degree = degree, .seed = seed, .weights_set = uniform,
                     .weights = MM_W_UNIFORM};
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

/* The seed of family regular's graph on k members, as documented:
 * splitmix64 one step from S XOR k * 0xD1B54A32D192ED03. */
static uint64_t documented_seed(uint64_t s, int k)
{
    uint64_t x = s ^ ((uint64_t)k * 0xD1B54A32D192ED03ULL);
    return mm_splitmix64(&x);
}

/* W of every round of one period, bit for bit. */
static void same_w(const mm_topology *a, const mm_topology *b, const char *what, int k)
{
    assert_int_equal(mm_topo_n(a), mm_topo_n(b));
    assert_int_equal(mm_topo_period(a), mm_topo_period(b));
    size_t n = (size_t)mm_topo_n(a);
    for (int r = 0; r < mm_topo_period(a); r++) {
        double *wa = mm_topo_matrix(a, (uint64_t)r), *wb = mm_topo_matrix(b, (uint64_t)r);
        assert_true(wa && wb);
        if (memcmp(wa, wb, n * n * sizeof *wa))
            fail_msg("%s at k = %d, round %d: W differs from topo gen's", what, k, r);
        free(wa);
        free(wb);
    }
}

static void equal_to_the_generators(void **state)
{
    (void)state;
    mm_topology *ring = parse("peers 8\nfamily ring\n"), *exp = parse("peers 8\nfamily exp\n"),
                *ope = parse("peers 8\nfamily one-peer-exp\n"),
                *base = parse("peers 8\nfamily base 3\n"),
                *complete = parse("peers 8\nfamily complete\nweights uniform\n"),
                *torus = parse("peers 8\nfamily torus\n"),
                *regular = parse("peers 8\nfamily regular 3 seed 5\n");
    for (int k = 2; k <= 64; k++) {
        struct {
            const mm_topology *family;
            const char *kind;
            int degree;
            uint64_t seed;
            bool uniform;
        } pairs[] = {
            {ring, k == 2 ? "chain" : "ring", 0, 0, false},
            {exp, "exp", 0, 0, false},
            {ope, "one-peer-exp", 0, 0, false},
            {base, "base", k - 1 < 3 ? k - 1 : 3, 0, false},
            {complete, "complete", 0, 0, true},
            {torus, torus_rows(k) >= 2 ? "torus" : k == 2 ? "chain" : "ring", 0, 0, false},
            {regular, "regular", regular_degree(3, k), documented_seed(5, k), false},
        };
        for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
            int d = pairs[i].degree;
            if (pairs[i].family == regular && (d >= k - 1 || 2 * d > k))
                continue; /* complete or the circulant: checked below */
            mm_topology *t = inst(pairs[i].family, k);
            mm_topology *g = generated(pairs[i].kind, k, d, pairs[i].seed, pairs[i].uniform);
            same_w(t, g, pairs[i].kind, k);
            mm_topo_free(t);
            mm_topo_free(g);
        }
    }
    /* regular's small counts are complete */
    for (int k = 2; k <= 5; k++) {
        mm_topology *t = inst(regular, k), *g = generated("complete", k, 0, 0, false);
        same_w(t, g, "regular (complete)", k);
        mm_topo_free(t);
        mm_topo_free(g);
    }
    mm_topo_free(ring);
    mm_topo_free(exp);
    mm_topo_free(ope);
    mm_topo_free(base);
    mm_topo_free(complete);
    mm_topo_free(torus);
    mm_topo_free(regular);
}

/* k = 1: one peer alone, W = [1], whatever the family. */
static void one_member_is_alone(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_FAMILIES; i++) {
        mm_topology *f = parse(families[i]), *t = inst(f, 1);
        mm_neighbour in[1], out[1];
        mm_round_view v = {.in = in, .out = out};
        for (uint64_t r = 0; r < 5; r++) {
            assert_int_equal(mm_topo_round(t, 0, r, &v), 0);
            assert_int_equal(v.n_in, 0);
            assert_int_equal(v.n_out, 0);
            assert_true(v.self_weight == 1.0);
        }
        assert_int_equal(mm_topo_round(t, 1, 0, &v), -1);
        char shape[64];
        mm_topo_family_shape(f, 1, shape, sizeof shape);
        assert_string_equal(shape, "alone");
        mm_topo_free(t);
        mm_topo_free(f);
    }
}

/* ---- a family file as a static topology --------------------------------------- */

/* mm_topo_parse of `peers N` + family is the family at N: the same W, the
 * same facts as `topo gen KIND -n N`, the family's digest; instantiating
 * an instantiation is instantiating the family. */
static void static_load_is_the_family_at_n(void **state)
{
    (void)state;
    mm_topology *f = parse("# eight\npeers 8\nfamily ring\n"), *g = generated("ring", 8, 0, 0, false);
    same_w(f, g, "loaded family ring", 8);
    assert_int_equal(mm_topo_max_degree(f), 2);
    assert_string_equal(mm_topo_kind(f), "ring");
    assert_true(mm_topo_family(f));
    assert_false(mm_topo_family(g));
    assert_int_equal(mm_topo_family_kind(g), MM_FAMILY_NONE);
    assert_int_equal(mm_topo_family_peers(g), 0);
    assert_true(memcmp(mm_topo_digest(f), mm_topo_digest(g), 32) != 0);
    mm_topology *t8 = inst(f, 8), *t5 = inst(f, 5), *t5b = inst(t8, 5);
    same_w(f, t8, "instantiate(8)", 8);
    same_w(t5, t5b, "instantiate(instantiate(8), 5)", 5);
    assert_memory_equal(mm_topo_digest(t5b), mm_topo_digest(f), 32);
    assert_int_equal(mm_topo_family_peers(t5b), 8);
    double rho = mm_topo_rho(f);
    assert_true(fabs(rho - mm_topo_rho(g)) < 1e-15);
    mm_topo_free(t8);
    mm_topo_free(t5);
    mm_topo_free(t5b);
    mm_topo_free(g);
    mm_topo_free(f);
    /* the schedules: one-peer-exp at 8 is onepeer-exp-8 */
    f = parse("peers 8\nfamily one-peer-exp\n");
    g = generated("one-peer-exp", 8, 0, 0, false);
    assert_int_equal(mm_topo_schedule(f), MM_SCHED_ONE_PEER_EXP);
    same_w(f, g, "loaded family one-peer-exp", 8);
    mm_topo_free(g);
    mm_topo_free(f);
}

/* Out of range counts and topologies that are not families: NULL, said. */
static void instantiate_refuses_what_it_cannot(void **state)
{
    (void)state;
    char err[512];
    mm_topology *f = parse("peers 4\nfamily complete\n"), *g = generated("ring", 4, 0, 0, false);
    assert_null(mm_topo_instantiate(f, 0, err, sizeof err));
    assert_non_null(strstr(err, "expected 1.."));
    assert_null(mm_topo_instantiate(f, (1 << 20) + 1, err, sizeof err));
    assert_non_null(strstr(err, "expected 1.."));
    assert_null(mm_topo_instantiate(g, 4, err, sizeof err));
    assert_non_null(strstr(err, "not a family"));
    /* complete over 2049 members: more edges than a family may make */
    assert_null(mm_topo_instantiate(f, 2049, err, sizeof err));
    assert_non_null(strstr(err, "more than the"));
    mm_topo_free(f);
    mm_topo_free(g);
    /* and a file that asks for it is refused at load, not built */
    const char *big = "peers 5000\nfamily complete\n";
    assert_null(mm_topo_parse(big, strlen(big), "big.topo", err, sizeof err));
    assert_non_null(strstr(err, "big.topo: family complete over 5000 members"));
}

/* The format writes a family back so that it reads as the same family. */
static void format_round_trip(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_FAMILIES; i++) {
        mm_topo_spec s;
        char err[512];
        assert_int_equal(mm_topo_parse_spec(families[i], strlen(families[i]), "f", &s, err,
                                            sizeof err), 0);
        char *text = mm_topo_format(&s);
        assert_non_null(text);
        mm_topology *a = parse(families[i]), *b = parse(text);
        assert_memory_equal(mm_topo_digest(a), mm_topo_digest(b), 32);
        mm_topo_free(a);
        mm_topo_free(b);
        free(text);
        mm_topo_spec_free(&s);
    }
}

/* The generator's family files (`topo gen KIND -n N --family`). */
static void generator_writes_families(void **state)
{
    (void)state;
    mm_gen_opts o = {.n = 8, .family = true, .seed = 1, .degree = 3};
    mm_topo_spec s;
    char err[512];
    assert_int_equal(mm_topo_generate("regular", &o, &s, err, sizeof err), 0);
    char *text = mm_topo_format(&s);
    assert_non_null(strstr(text, "\nfamily regular 3 seed 1\n"));
    mm_topo_spec_free(&s);
    free(text);
    o.degree = 0;
    assert_int_equal(mm_topo_generate("star", &o, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "kind star has no family"));
    o.directed = true;
    assert_int_equal(mm_topo_generate("exp", &o, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "--directed does not apply"));
    o = (mm_gen_opts){.n = 8, .family = true, .weights_set = true, .weights = MM_W_UNIFORM};
    assert_int_equal(mm_topo_generate("base", &o, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "fixes its weights"));
    o.degree = 2;
    o.weights_set = false;
    assert_int_equal(mm_topo_generate("regular", &o, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "D >= 3"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_family_every_small_count),
        cmocka_unit_test(each_family_large_counts),
        cmocka_unit_test(regular_dense_counts),
        cmocka_unit_test(equal_to_the_generators),
        cmocka_unit_test(one_member_is_alone),
        cmocka_unit_test(static_load_is_the_family_at_n),
        cmocka_unit_test(instantiate_refuses_what_it_cannot),
        cmocka_unit_test(format_round_trip),
        cmocka_unit_test(generator_writes_families),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
