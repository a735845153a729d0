/* Every generated file parses back to the same graph, for every kind and
 * option; seeded kinds are reproducible; generators make what they say. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gossip/topology.h"

static bool same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static void compare_specs(const mm_topo_spec *a, const mm_topo_spec *b, const char *what)
{
    if (a->n != b->n || a->directed != b->directed || a->weights != b->weights ||
        a->schedule != b->schedule || a->seed != b->seed || strcmp(a->kind, b->kind) ||
        a->degree != b->degree || a->fanout != b->fanout || a->group != b->group ||
        a->n_edges != b->n_edges)
        fail_msg("%s: header differs after the round trip", what);
    for (size_t i = 0; i < a->n_edges; i++)
        if (a->edges[i].u != b->edges[i].u || a->edges[i].v != b->edges[i].v ||
            (a->weights == MM_W_EXPLICIT && a->edges[i].w != b->edges[i].w))
            fail_msg("%s: edge %zu differs: %u %u %.17g vs %u %u %.17g", what, i, a->edges[i].u,
                     a->edges[i].v, a->edges[i].w, b->edges[i].u, b->edges[i].v, b->edges[i].w);
    if (!a->self_w != !b->self_w)
        fail_msg("%s: self weights present on one side only", what);
    for (int i = 0; a->self_w && i < a->n; i++)
        if (!same_double(a->self_w[i], b->self_w[i]))
            fail_msg("%s: self %d differs", what, i);
}

static void roundtrip(const char *kind, const mm_gen_opts *o, const char *variant)
{
    char what[128], err[512];
    snprintf(what, sizeof what, "%s -n %d %s", kind, o->n, variant);
    mm_topo_spec s, back;
    if (mm_topo_generate(kind, o, &s, err, sizeof err) < 0)
        fail_msg("%s: gen failed: %s", what, err);
    char *text = mm_topo_format(&s);
    assert_non_null(text);
    if (mm_topo_parse_spec(text, strlen(text), what, &back, err, sizeof err) < 0)
        fail_msg("%s: does not parse back: %s\n%s", what, err, text);
    compare_specs(&s, &back, what);
    mm_topology *a = mm_topo_build(&s, what, err, sizeof err);
    if (!a)
        fail_msg("%s: generated graph refused: %s", what, err);
    mm_topology *b = mm_topo_parse(text, strlen(text), what, err, sizeof err);
    if (!b)
        fail_msg("%s: text refused: %s", what, err);
    assert_int_equal(mm_topo_period(a), mm_topo_period(b));
    assert_int_equal(mm_topo_directed(a), mm_topo_directed(b));
    assert_string_equal(mm_topo_kind(a), kind);
    size_t nn = (size_t)o->n * (size_t)o->n;
    for (uint64_t r = 0; r < 4; r++) {
        double *wa = mm_topo_matrix(a, r), *wb = mm_topo_matrix(b, r);
        if (memcmp(wa, wb, nn * sizeof *wa))
            fail_msg("%s: W(%d) differs after the round trip", what, (int)r);
        free(wa);
        free(wb);
    }
    mm_topo_free(a);
    mm_topo_free(b);
    free(text);
    mm_topo_spec_free(&s);
    mm_topo_spec_free(&back);
}

static void every_kind_round_trips(void **state)
{
    (void)state;
    const int ns[] = {4, 6, 8, 9, 16, 32};
    int done = 0;
    for (int k = 0; mm_topo_kinds[k]; k++) {
        const char *kind = mm_topo_kinds[k];
        for (size_t m = 0; m < sizeof ns / sizeof ns[0]; m++) {
            mm_gen_opts o = {.n = ns[m], .seed = 11};
            if (!strcmp(kind, "regular") && o.n == 4)
                o.degree = 3; /* the default d = 3 is complete here; still fine */
            if (!strcmp(kind, "alt-exp-ring") && (o.n == 6 || o.n == 9))
                continue; /* hosts must be a power of two */
            if (!strcmp(kind, "alt-exp-ring") && o.n >= 16)
                o.group = 4; /* and hosts of several peers */
            if (!strcmp(kind, "base"))
                o.degree = 1 + o.n % 4;
            if (!strcmp(kind, "epidemic"))
                o.fanout = 1 + o.n % 3;
            roundtrip(kind, &o, "");
            bool is_static = strcmp(kind, "one-peer-exp") && strcmp(kind, "random-matching") &&
                             strcmp(kind, "local") && strcmp(kind, "alt-exp-ring") &&
                             strcmp(kind, "base") && strcmp(kind, "epidemic");
            if (is_static) {
                o.write_weights = true;
                roundtrip(kind, &o, "--write-weights");
                o.write_weights = false;
                o.weights_set = true;
                o.weights = MM_W_UNIFORM;
                roundtrip(kind, &o, "--weights uniform");
                if (strcmp(kind, "star") && strcmp(kind, "chain") && strcmp(kind, "er")) {
                    /* regular graphs: uniform weights are symmetric, so they can be written */
                    o.write_weights = true;
                    roundtrip(kind, &o, "--weights uniform --write-weights");
                    o.write_weights = false;
                }
                o.weights_set = false;
            }
            if (!strcmp(kind, "exp")) {
                o.directed = true;
                roundtrip(kind, &o, "--directed");
                o.write_weights = true;
                roundtrip(kind, &o, "--directed --write-weights");
            }
            done++;
        }
    }
    assert_int_equal(done, 14 * 6 - 2);
}

static bool same_edges(const mm_topo_spec *a, const mm_topo_spec *b)
{
    if (a->n_edges != b->n_edges)
        return false;
    for (size_t i = 0; i < a->n_edges; i++)
        if (a->edges[i].u != b->edges[i].u || a->edges[i].v != b->edges[i].v)
            return false;
    return true;
}

static size_t count_edges(const char *kind, mm_gen_opts o, mm_topo_spec *s)
{
    char err[512];
    if (mm_topo_generate(kind, &o, s, err, sizeof err) < 0)
        fail_msg("%s: %s", kind, err);
    return s->n_edges;
}

static void generators_make_what_they_say(void **state)
{
    (void)state;
    mm_topo_spec s;
    int n = 12;
    mm_gen_opts o = {.n = n, .seed = 5};
    assert_int_equal(count_edges("ring", o, &s), 12);
    mm_topo_spec_free(&s);
    assert_int_equal(count_edges("chain", o, &s), 11);
    mm_topo_spec_free(&s);
    assert_int_equal(count_edges("star", o, &s), 11);
    mm_topo_spec_free(&s);
    assert_int_equal(count_edges("complete", o, &s), 66);
    mm_topo_spec_free(&s);
    assert_int_equal(count_edges("torus", o, &s), 24); /* 3 x 4, degree 4 */
    mm_topo_spec_free(&s);
    /* exp, n = 12: offsets +-1, +-2, +-4, and +8 = -4, -8 = +4: 6 neighbours */
    assert_int_equal(count_edges("exp", o, &s), 12 * 6 / 2);
    mm_topo_spec_free(&s);
    o.directed = true;
    assert_int_equal(count_edges("exp", o, &s), 12 * 4);
    for (size_t i = 0; i < s.n_edges; i++) {
        uint32_t d = (s.edges[i].v + 12 - s.edges[i].u) % 12;
        assert_true(d == 1 || d == 2 || d == 4 || d == 8);
    }
    mm_topo_spec_free(&s);
    o.directed = false;
    /* d-regular: every degree d, reproducible from the seed */
    o.degree = 5;
    count_edges("regular", o, &s);
    int deg[12] = {0};
    for (size_t i = 0; i < s.n_edges; i++) {
        deg[s.edges[i].u]++;
        deg[s.edges[i].v]++;
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(deg[i], 5);
    mm_topo_spec again, other;
    count_edges("regular", o, &again);
    o.seed = 6;
    count_edges("regular", o, &other);
    assert_true(same_edges(&s, &again));
    assert_false(same_edges(&s, &other));
    mm_topo_spec_free(&s);
    mm_topo_spec_free(&again);
    mm_topo_spec_free(&other);
    /* Erdos-Renyi: reproducible, and p = 1 is the complete graph */
    o.seed = 5;
    o.p = 0.3;
    size_t e1 = count_edges("er", o, &s);
    size_t e2 = count_edges("er", o, &again);
    assert_int_equal(e1, e2);
    assert_true(same_edges(&s, &again));
    mm_topo_spec_free(&s);
    mm_topo_spec_free(&again);
    o.p = 1;
    assert_int_equal(count_edges("er", o, &s), 66);
    mm_topo_spec_free(&s);
}

static void generator_refusals(void **state)
{
    (void)state;
    struct {
        const char *kind;
        mm_gen_opts o;
        const char *want;
    } bad[] = {
        {"torus", {.n = 7}, "not rows x cols"},
        {"ring", {.n = 2}, "n >= 3"},
        {"regular", {.n = 7, .degree = 3}, "n*d even"},
        {"regular", {.n = 6, .degree = 6}, "d < n"},
        {"hypercube", {.n = 8}, "unknown kind 'hypercube'"},
        {"ring", {.n = 1}, "expected 2.."},
        {"ring", {.n = 8, .directed = true}, "--directed applies to kind exp only"},
        {"star", {.n = 5, .weights_set = true, .weights = MM_W_UNIFORM, .write_weights = true}, "not symmetric"},
        {"alt-exp-ring", {.n = 12}, "power of two of hosts"},
        {"alt-exp-ring", {.n = 8, .group = 3}, "hosts of 'group 3'"},
        {"base", {.n = 8, .degree = 8}, "must be 1..7"},
        {"epidemic", {.n = 4, .fanout = 4}, "must be 1..3"},
        {"ring", {.n = 8, .fanout = 2}, "-s applies to kind epidemic only"},
        {"local", {.n = 8, .write_weights = true}, "a schedule fixes its weights"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mm_topo_spec s;
        char err[512] = "";
        if (mm_topo_generate(bad[i].kind, &bad[i].o, &s, err, sizeof err) == 0)
            fail_msg("case %zu (%s) generated", i, bad[i].kind);
        if (!strstr(err, bad[i].want))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, bad[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kind_round_trips),
        cmocka_unit_test(generators_make_what_they_say),
        cmocka_unit_test(generator_refusals),
    };
    return cmocka_run_group_tests(tests, 0, 0);
}
