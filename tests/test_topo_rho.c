/* rho the sparse way (Lanczos, gossip/topo_lanczos.c) against the dense
 * LAPACK reference on every shipped topology and on generated ones up to a
 * few hundred peers, and against closed forms where the dense way would
 * take minutes; random matching's closed form against the sampled mean;
 * the diameter against a plain breadth-first search written here. */
#include <dirent.h>
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

#define PI 3.14159265358979323846

static mm_topology *gen_opts(const char *kind, const mm_gen_opts *o)
{
    mm_topo_spec s;
    char err[512];
    if (mm_topo_generate(kind, o, &s, err, sizeof err) < 0)
        fail_msg("gen %s -n %d: %s", kind, o->n, err);
    mm_topology *t = mm_topo_build(&s, kind, err, sizeof err);
    if (!t)
        fail_msg("build %s -n %d: %s", kind, o->n, err);
    mm_topo_spec_free(&s);
    return t;
}

static mm_topology *gen(const char *kind, int n)
{
    mm_gen_opts o = {.n = n, .seed = 3};
    return gen_opts(kind, &o);
}

/* Dense and sparse agree to 1e-9, and the sparse error bound covers the
 * difference; for the whole schedule and each round of its window. */
static void agree(const mm_topology *t, const char *what)
{
    mm_rho d, s;
    assert_int_equal(mm_topo_rho_ex(t, MM_RHO_DENSE, NULL, &d), 0);
    assert_int_equal(mm_topo_rho_ex(t, MM_RHO_SPARSE, NULL, &s), 0);
    double diff = fabs(d.rho - s.rho);
    if (!(diff <= 1e-9) || !(diff <= s.err_bound + 1e-12) || !s.converged)
        fail_msg("%s: dense %.17g, sparse %.17g (%d iterations, error %.3g, bound %.3g, %s)", what, d.rho,
                 s.rho, s.iterations, s.err, s.err_bound, s.converged ? "converged" : "NOT converged");
    int rounds = mm_topo_period(t) > 1 ? mm_topo_period(t) : 1;
    for (int r = 0; r < rounds && r < 16; r++) {
        assert_int_equal(mm_topo_rho_round_ex(t, (uint64_t)r, MM_RHO_DENSE, NULL, &d), 0);
        assert_int_equal(mm_topo_rho_round_ex(t, (uint64_t)r, MM_RHO_SPARSE, NULL, &s), 0);
        if (!(fabs(d.rho - s.rho) <= 1e-9))
            fail_msg("%s round %d: dense %.17g, sparse %.17g", what, r, d.rho, s.rho);
    }
}

static void shipped_files_agree(void **state)
{
    (void)state;
    DIR *dir = opendir("topologies");
    assert_non_null(dir);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(dir))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".topo"))
            continue;
        char path[600], err[512];
        snprintf(path, sizeof path, "topologies/%s", e->d_name);
        mm_topology *t = mm_topo_load(path, err, sizeof err);
        if (!t)
            fail_msg("%s", err);
        agree(t, path);
        mm_topo_free(t);
        files++;
    }
    closedir(dir);
    assert_true(files >= 40);
}

static void uniform(mm_gen_opts *o)
{
    o->weights_set = true;
    o->weights = MM_W_UNIFORM;
}

static void generated_agree(void **state)
{
    (void)state;
    static const char *kinds[] = {"ring", "chain", "star", "complete", "torus", "exp", "one-peer-exp",
                                  "regular", "er"};
    static const int ns[] = {5, 17, 64, 100, 160, 300};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t j = 0; j < sizeof ns / sizeof *ns; j++) {
            int n = ns[j];
            if (!strcmp(kinds[k], "torus") && (n == 5 || n == 17))
                continue; /* prime: no rows x cols */
            if (!strcmp(kinds[k], "complete") && n > 100)
                continue;
            char what[96];
            mm_gen_opts o = {.n = n, .seed = 3};
            mm_topology *t = gen_opts(kinds[k], &o);
            snprintf(what, sizeof what, "%s -n %d", kinds[k], n);
            agree(t, what);
            mm_topo_free(t);
            /* row-stochastic only (irregular graphs, uniform weights) */
            if (!strcmp(kinds[k], "star") || !strcmp(kinds[k], "er") || !strcmp(kinds[k], "chain")) {
                uniform(&o);
                t = gen_opts(kinds[k], &o);
                snprintf(what, sizeof what, "%s -n %d --weights uniform", kinds[k], n);
                agree(t, what);
                mm_topo_free(t);
            }
        }
    /* directed: column-stochastic (push-sum) */
    for (size_t j = 0; j < sizeof ns / sizeof *ns; j++) {
        mm_gen_opts o = {.n = ns[j], .seed = 3, .directed = true};
        mm_topology *t = gen_opts("exp", &o);
        char what[64];
        snprintf(what, sizeof what, "exp --directed -n %d", ns[j]);
        agree(t, what);
        mm_topo_free(t);
    }
    /* a hand-written directed graph that is column-stochastic only */
    const char *txt = "peers 4\ngraph directed\nweights explicit\n0 1 1/2\n1 2 1/2\n2 3 1/2\n3 0 1/2\n0 2 1/4\n";
    char err[256];
    mm_topology *t = mm_topo_parse(txt, strlen(txt), "push4", err, sizeof err);
    assert_non_null(t);
    agree(t, "push4");
    mm_topo_free(t);
}

static void near_closed(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("%s: %.17g, closed form %.17g (tolerance %g)", what, got, want, tol);
}

/* Where the dense way would take minutes: rho against closed forms, to
 * 1e-12, and 1 - rho to 1e-6 of itself. */
static void large_closed_forms(void **state)
{
    (void)state;
    static const int rings[] = {1000, 4000, 10000};
    for (size_t i = 0; i < sizeof rings / sizeof *rings; i++) {
        int n = rings[i];
        mm_topology *t = gen("ring", n);
        mm_rho r;
        assert_int_equal(mm_topo_rho_ex(t, MM_RHO_AUTO, NULL, &r), 0);
        assert_true(r.iterations > 0 && r.converged); /* sparse above MM_RHO_DENSE_MAX */
        double gap = 4.0 / 3.0 * pow(sin(PI / n), 2); /* W = 1/3 (I + S + S^T) */
        near_closed(r.rho, 1 - gap, 1e-12, "ring");
        near_closed((1 - r.rho) / gap, 1, 1e-6, "ring: 1 - rho");
        mm_topo_free(t);
    }
    mm_topology *t = gen("chain", 3000);
    mm_rho r;
    assert_int_equal(mm_topo_rho_ex(t, MM_RHO_AUTO, NULL, &r), 0);
    near_closed(r.rho, 1 - 4.0 / 3.0 * pow(sin(PI / 6000), 2), 1e-12, "chain 3000");
    mm_topo_free(t);
    /* one-peer exponential graph, n a power of two: exact average after one period */
    t = gen("one-peer-exp", 4096);
    assert_int_equal(mm_topo_rho_ex(t, MM_RHO_AUTO, NULL, &r), 0);
    near_closed(r.rho, 0, 1e-9, "one-peer-exp 4096");
    /* its round 0 alone: (I + S)/2, largest singular value off 1 is cos(pi/n) */
    assert_int_equal(mm_topo_rho_round_ex(t, 0, MM_RHO_AUTO, NULL, &r), 0);
    near_closed(r.rho, cos(PI / 4096), 1e-12, "one-peer-exp 4096 round 0");
    mm_topo_free(t);
}

/* The closed form of random matching is what the sampled mean of W^T W
 * tends to: within sampling error for a few thousand rounds. */
static void random_matching_closed_form(void **state)
{
    (void)state;
    static const int ns[] = {2, 3, 8, 9, 16};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        int n = ns[i];
        mm_topology *t = gen("random-matching", n);
        mm_rho r;
        assert_int_equal(mm_topo_rho_ex(t, MM_RHO_SPARSE, NULL, &r), 0);
        double want = sqrt(n % 2 ? 0.5 : (n - 2) / (2.0 * (n - 1)));
        near_closed(r.rho, want, 1e-15, "random matching closed form");
        double sampled = mm_topo_rho_sampled(t, 8192);
        near_closed(sampled, want, 0.03, "random matching sampled over 8192 rounds");
        assert_true(sampled >= want - 1e-12 || n % 2); /* the sample's top eigenvalue overshoots */
        mm_topo_free(t);
    }
}

/* Diameter by one plain BFS per peer over the window's union of arcs. */
static int oracle_diameter(const mm_topology *t, int window)
{
    int n = mm_topo_n(t), md = mm_topo_max_degree(t) + 1;
    char *adj = calloc((size_t)n * n, 1);
    mm_neighbour *in = malloc((size_t)md * sizeof *in), *out = malloc((size_t)md * sizeof *out);
    for (int r = 0; r < window; r++)
        for (int i = 0; i < n; i++) {
            mm_round_view v = {.in = in, .out = out};
            assert_int_equal(mm_topo_round(t, (uint32_t)i, (uint64_t)r, &v), 0);
            for (int k = 0; k < v.n_out; k++)
                adj[(size_t)i * n + out[k].peer] = 1;
        }
    int *dist = malloc((size_t)n * sizeof *dist), *q = malloc((size_t)n * sizeof *q), diam = 0;
    for (int s = 0; s < n && diam >= 0; s++) {
        for (int i = 0; i < n; i++)
            dist[i] = -1;
        int h = 0, tl = 0;
        dist[s] = 0;
        q[tl++] = s;
        while (h < tl) {
            int u = q[h++];
            for (int v = 0; v < n; v++)
                if (adj[(size_t)u * n + v] && dist[v] < 0) {
                    dist[v] = dist[u] + 1;
                    q[tl++] = v;
                }
        }
        for (int i = 0; i < n; i++) {
            if (dist[i] < 0) {
                diam = -1;
                break;
            }
            if (dist[i] > diam)
                diam = dist[i];
        }
    }
    free(adj);
    free(in);
    free(out);
    free(dist);
    free(q);
    return diam;
}

static void diameter_against_bfs(void **state)
{
    (void)state;
    /* rings and chains take the one-search-per-peer way, the rest mostly 64
     * at a time on bits; sizes around 64 and 128 cover partial batches */
    static const char *kinds[] = {"ring", "chain", "star", "exp", "one-peer-exp", "regular", "er",
                                  "random-matching"};
    static const int ns[] = {7, 63, 64, 65, 130, 200};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t j = 0; j < sizeof ns / sizeof *ns; j++) {
            mm_topology *t = gen(kinds[k], ns[j]);
            mm_topo_facts f;
            assert_int_equal(mm_topo_graph_facts(t, NULL, &f), 0);
            int want = oracle_diameter(t, f.window);
            if (f.diameter != want)
                fail_msg("%s -n %d: diameter %d, BFS says %d", kinds[k], ns[j], f.diameter, want);
            mm_topo_free(t);
        }
    for (size_t j = 0; j < sizeof ns / sizeof *ns; j++) {
        mm_gen_opts o = {.n = ns[j], .seed = 3, .directed = true};
        mm_topology *t = gen_opts("exp", &o);
        mm_topo_facts f;
        assert_int_equal(mm_topo_graph_facts(t, NULL, &f), 0);
        assert_int_equal(f.diameter, oracle_diameter(t, 1));
        mm_topo_free(t);
    }
}

static int progress_calls;
static void count_progress(void *ud, const char *what)
{
    (void)ud;
    if (strstr(what, "Lanczos iteration"))
        progress_calls++;
}

/* Progress is reported while the iteration runs; facts without rho leave
 * rho unset. */
static void progress_and_no_rho(void **state)
{
    (void)state;
    mm_topology *t = gen("ring", 2000);
    mm_topo_progress p = {.fn = count_progress};
    mm_rho r;
    progress_calls = 0;
    assert_int_equal(mm_topo_rho_ex(t, MM_RHO_SPARSE, &p, &r), 0);
    assert_true(progress_calls >= 3);
    mm_topo_facts f;
    assert_int_equal(mm_topo_graph_facts(t, NULL, &f), 0);
    assert_false(f.has_rho);
    assert_true(isnan(f.rho));
    assert_int_equal(f.diameter, 1000);
    assert_int_equal(mm_topo_rho_facts(t, MM_RHO_AUTO, NULL, &f), 0);
    assert_true(f.has_rho && f.rho > 0.99999 && f.rho < 1);
    /* tenfold from rho near 1: ln 10 / (1 - rho) to within a round */
    assert_true(fabs(f.rounds_tenfold - log(10.0) / (4.0 / 3.0 * pow(sin(PI / 2000), 2))) <= 1);
    mm_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shipped_files_agree),
        cmocka_unit_test(generated_agree),
        cmocka_unit_test(large_closed_forms),
        cmocka_unit_test(random_matching_closed_form),
        cmocka_unit_test(diameter_against_bfs),
        cmocka_unit_test(progress_and_no_rho),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
