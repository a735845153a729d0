/* Every way a topology file can be wrong gets refused with a message that
 * names the file, the line (or row/edge) and what was expected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gossip/topology.h"

typedef struct {
    const char *what;
    const char *text;
    const char *want[3]; /* substrings the message must contain */
} bad_case;

static const bad_case cases[] = {
    {"empty file", "# nothing\n\n", {"bad.topo: ", "expected 'peers N'"}},
    {"peers not a number", "peers eight\n", {"bad.topo:1: ", "number of peers", "'eight'"}},
    {"peers zero", "peers 0\n0 1\n", {"bad.topo:1: ", "number of peers"}},
    {"peers twice", "peers 4\npeers 5\n", {"bad.topo:2: ", "'peers' given twice", "line 1"}},
    {"unknown statement", "peers 3\nnodes 3\n", {"bad.topo:2: ", "expected a statement", "'nodes'"}},
    {"edge before peers", "0 1\npeers 2\n", {"bad.topo:1: ", "'peers N' before the first edge"}},
    {"edge with one id", "peers 3\n0\n", {"bad.topo:2: ", "two peer ids"}},
    {"second id not a number", "peers 3\n0 x\n", {"bad.topo:2: ", "second peer id", "'x'"}},
    {"bad weight token", "peers 2\nweights explicit\n0 1 half\n", {"bad.topo:3: ", "expected a weight", "'half'"}},
    {"trailing words", "peers 3\n0 1 0.5 extra\n", {"bad.topo:2: ", "end of the line", "'extra'"}},
    {"peer out of range", "peers 3\n0 1\n1 2\n2 3\n", {"bad.topo:4: ", "edge 2-3", "peer 3 out of range (peers are 0..2)"}},
    {"duplicate edge", "peers 3\n0 1\n1 2\n0 1\n", {"bad.topo:4: ", "edge 0-1: duplicate", "first on line 2"}},
    {"duplicate reversed", "peers 3\n0 1\n1 2\n# again\n2 1\n", {"bad.topo:5: ", "edge 2-1: duplicate", "first on line 3"}},
    {"directed duplicate", "peers 2\ngraph directed\n0 1\n1 0\n0 1\n", {"bad.topo:5: ", "edge 0->1: duplicate", "line 3"}},
    {"self loop", "peers 3\n0 1\n1 1\n1 2\n", {"bad.topo:3: ", "edge 1-1", "own neighbour"}},
    {"negative weight", "peers 2\nweights explicit\n0 1 -0.5\n", {"bad.topo:3: ", "edge 0-1", "negative"}},
    {"zero weight", "peers 2\nweights explicit\n0 1 0\n", {"bad.topo:3: ", "edge 0-1", "must be positive"}},
    {"row over 1", "peers 3\nweights explicit\n0 1 0.6\n0 2 0.6\n1 2 0.2\n",
     {"bad.topo: ", "row 0 of W", "1.2"}},
    {"row not 1 with self", "peers 2\nweights explicit\nself 0 0.5\nself 1 0.4\n0 1 0.5\n",
     {"bad.topo:4: ", "row 1 of W", "must sum to 1"}},
    {"negative self", "peers 2\nweights explicit\nself 0 -0.5\n0 1 0.5\n", {"bad.topo:3: ", "self 0", "negative"}},
    {"column over 1", "peers 3\ngraph directed\nweights explicit\n0 1 0.7\n0 2 0.7\n1 2 1/2\n2 0 1/2\n",
     {"bad.topo: ", "column 0 of W", "out-edge weights"}},
    {"self given twice", "peers 2\nweights explicit\nself 0 0.5\nself 0 0.5\n0 1 0.5\n", {"bad.topo:4: ", "self 0 given twice", "line 3"}},
    {"self out of range", "peers 2\nweights explicit\nself 2 0.5\n", {"bad.topo:3: ", "peer 2 out of range"}},
    {"weight without explicit", "peers 2\n0 1 0.5\n", {"bad.topo:2: ", "has a weight", "weights explicit"}},
    {"explicit without weight", "peers 3\nweights explicit\n0 1 0.5\n1 2\n", {"bad.topo:4: ", "expected a weight after '1 2'"}},
    {"self without explicit", "peers 2\nself 0 0.5\n0 1\n", {"bad.topo:2: ", "'self' needs 'weights explicit'"}},
    {"metropolis directed", "peers 2\ngraph directed\nweights metropolis\n0 1\n1 0\n", {"bad.topo: ", "metropolis", "undirected"}},
    {"bad graph word", "peers 2\ngraph sideways\n", {"bad.topo:2: ", "'graph undirected' or 'graph directed'", "'sideways'"}},
    {"bad weights word", "peers 2\nweights heavy\n", {"bad.topo:2: ", "metropolis, uniform or explicit", "'heavy'"}},
    {"not connected", "peers 5\n0 1\n1 2\n3 4\n", {"bad.topo: ", "not connected", "peer 3"}},
    {"isolated peer", "peers 3\n0 1\n", {"bad.topo: ", "not connected", "peer 2"}},
    {"not strongly connected", "peers 3\ngraph directed\n0 1\n1 2\n", {"bad.topo: ", "not strongly connected", "peer 1 cannot reach peer 0"}},
    {"one-way star", "peers 3\ngraph directed\n1 0\n2 0\n", {"bad.topo: ", "peer 1 cannot be reached from peer 0"}},
    {"unknown schedule", "peers 4\nschedule spiral\n", {"bad.topo:2: ", "one-peer-exp, random-matching, local, alt-exp-ring, base or epidemic", "'spiral'"}},
    {"schedule with edges", "peers 4\nschedule one-peer-exp\n0 1\n", {"bad.topo:3: ", "names a schedule (line 2)", "cannot also list edges"}},
    {"schedule with weights", "peers 4\nweights uniform\nschedule one-peer-exp\n", {"bad.topo:2: ", "schedule (line 3)", "drop this line"}},
    {"matching without seed", "peers 4\nschedule random-matching\n", {"bad.topo:2: ", "expected 'seed S'"}},
    {"seed without matching", "peers 4\nseed 3\n0 1\n1 2\n2 3\n", {"bad.topo:2: ", "'seed' is only used by"}},
    {"seed not a number", "peers 4\nschedule random-matching\nseed -1\n", {"bad.topo:3: ", "expected a seed", "'-1'"}},
    {"statement missing value", "peers\n", {"bad.topo:1: ", "expected 'peers' followed by one value"}},
    {"binary junk", "peers 2\n0 1\n\x01\x02\n", {"bad.topo:3: ", "expected text", "0x01"}},
    /* families (topologies/README.md, "Families") */
    {"family with edges", "peers 4\nfamily ring\n0 1\n", {"bad.topo:3: ", "names a family (line 2)", "cannot also list edges"}},
    {"edges then family", "peers 4\n0 1\nfamily ring\n", {"bad.topo:2: ", "names a family (line 3)"}},
    {"family and schedule", "peers 4\nfamily ring\nschedule local\n", {"bad.topo:3: ", "family (line 2) or a schedule (line 3)"}},
    {"unknown family", "peers 4\nfamily star\n", {"bad.topo:2: ", "expected a family", "'star'"}},
    {"family without kind", "peers 4\nfamily\n", {"bad.topo:2: ", "expected a family"}},
    {"family twice", "peers 4\nfamily ring\nfamily exp\n", {"bad.topo:3: ", "'family' given twice", "line 2"}},
    {"family base without K", "peers 4\nfamily base\n", {"bad.topo:2: ", "'family base K'"}},
    {"family base K zero", "peers 4\nfamily base 0\n", {"bad.topo:2: ", "'family base K'"}},
    {"family regular without seed", "peers 4\nfamily regular 3\n", {"bad.topo:2: ", "'family regular D seed S'"}},
    {"family regular D 2", "peers 4\nfamily regular 2 seed 1\n", {"bad.topo:2: ", "3.."}},
    {"family regular bad word", "peers 4\nfamily regular 3 salt 1\n", {"bad.topo:2: ", "'family regular D seed S'"}},
    {"family trailing word", "peers 4\nfamily ring 3\n", {"bad.topo:2: ", "end of the line after 'family ring'", "'3'"}},
    {"family directed", "peers 4\nfamily ring\ngraph directed\n", {"bad.topo:3: ", "a family is undirected"}},
    {"family explicit weights", "peers 4\nfamily ring\nweights explicit\n", {"bad.topo:3: ", "not explicit"}},
    {"family schedule weights", "peers 4\nfamily one-peer-exp\nweights uniform\n", {"bad.topo:3: ", "family one-peer-exp (line 2) fixes its weights"}},
    {"family parameter apart", "peers 4\nfamily base 2\ndegree 2\n", {"bad.topo:3: ", "parameters on its own line (line 2)"}},
    {"family self", "peers 4\nfamily ring\nself 0 1\n", {"bad.topo:3: ", "'self' cannot be given"}},
    {"family without peers", "family ring\n", {"bad.topo: ", "expected 'peers N'"}},
};

static void each_bad_input_is_refused_with_where_and_what(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_case *c = &cases[i];
        char err[512] = "";
        mm_topology *t = mm_topo_parse(c->text, strlen(c->text), "bad.topo", err, sizeof err);
        if (t) {
            mm_topo_free(t);
            fail_msg("case '%s' was accepted", c->what);
        }
        for (int k = 0; k < 3 && c->want[k]; k++)
            if (!strstr(err, c->want[k]))
                fail_msg("case '%s': message \"%s\" lacks \"%s\"", c->what, err, c->want[k]);
        /* a message starting with the file name, never empty */
        assert_true(strncmp(err, "bad.topo:", 9) == 0);
    }
}

/* The same text accepted once it is fixed: the cases fail for the reason
 * they test, not for some other one. */
static void fixed_versions_are_accepted(void **state)
{
    (void)state;
    const char *good[] = {
        "peers 3\n0 1\n1 2\n",
        "peers 3\n0 1\n1 2\n2 0\n",
        "peers 2\ngraph directed\n0 1\n1 0\n",
        "peers 2\nweights explicit\n0 1 0.5\n",
        "peers 2\nweights explicit\nself 0 0.5\nself 1 0.5\n0 1 1/2\n",
        "peers 3\nweights explicit\n0 1 0.4\n0 2 0.4\n1 2 0.2\n",
        "peers 3\ngraph directed\nweights explicit\n0 1 0.5\n0 2 0.5\n1 2 1/2\n2 0 1/2\n",
        "peers 4\nschedule one-peer-exp\n",
        "peers 4\nschedule random-matching\nseed 3\n",
        "peers 1\n",
        "  peers   3 # with a comment\n\t0 1\r\n1 2   # tabs, CRLF\n",
        "peers 4\nfamily ring\n",
        "family exp\npeers 4\n",
        "peers 4\nfamily base 1\n",
        "peers 4\nfamily regular 3 seed 1\n",
        "peers 4\nfamily ring\ngraph undirected\nweights uniform\n",
        "peers 4\nfamily one-peer-exp\n",
        "peers 1\nfamily torus\n",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char err[512] = "";
        mm_topology *t = mm_topo_parse(good[i], strlen(good[i]), "good.topo", err, sizeof err);
        if (!t)
            fail_msg("good case %zu refused: %s", i, err);
        mm_topo_free(t);
    }
}

static void load_names_the_path(void **state)
{
    (void)state;
    char err[512];
    assert_null(mm_topo_load("/nonexistent/dir/x.topo", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/dir/x.topo"));
    assert_non_null(strstr(err, "cannot open"));

    char path[] = "/tmp/murmur-topo-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "peers 4\n0 1\n1 2\n2 3\n3 7\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_null(mm_topo_load(path, err, sizeof err));
    char want[64];
    snprintf(want, sizeof want, "%s:5: ", path);
    unlink(path);
    if (!strstr(err, want))
        fail_msg("message \"%s\" lacks \"%s\"", err, want);
    assert_non_null(strstr(err, "peer 7 out of range"));
}

/* Messages are cut, never overflowed, when the buffer is small. */
static void small_error_buffer(void **state)
{
    (void)state;
    char err[12];
    memset(err, 'x', sizeof err);
    const char *text = "peers 3\n0 1\n";
    assert_null(mm_topo_parse(text, strlen(text), "a-long-file-name.topo", err, sizeof err));
    assert_true(memchr(err, 0, sizeof err) != NULL);
}

/* What an accepted mangled file must give: W of round 0 and, for a
 * family, its topology over 5 members and that W. */
static void usable(const mm_topology *t)
{
    double *w = mm_topo_matrix(t, 0);
    assert_non_null(w);
    free(w);
    if (!mm_topo_family(t))
        return;
    char err[256];
    mm_topology *k = mm_topo_instantiate(t, 5, err, sizeof err);
    if (!k)
        fail_msg("an accepted family is refused at 5 members: %s", err);
    w = mm_topo_matrix(k, 0);
    assert_non_null(w);
    free(w);
    mm_topo_free(k);
}

/* 5000 mangled versions of base (1 to 4 bytes replaced by one of
 * alphabet's or deleted): each refused with a message or accepted and
 * usable, never a crash (run under the sanitizers with SANITIZE=...). */
static void mangle(const char *base, const char *alphabet, size_t alen, uint64_t x)
{
    size_t len = strlen(base);
    char *buf = malloc(len + 8);
    int refused = 0, accepted = 0;
    for (int iter = 0; iter < 5000; iter++) {
        memcpy(buf, base, len);
        size_t l = len;
        int edits = 1 + iter % 4;
        for (int k = 0; k < edits; k++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t at = (size_t)(x >> 33) % l;
            char c = alphabet[(x >> 20) % alen];
            if ((x >> 10) % 3 == 0 && l > 1) { /* delete */
                memmove(buf + at, buf + at + 1, l - at - 1);
                l--;
            } else {
                buf[at] = c;
            }
        }
        char err[256] = "";
        mm_topology *t = mm_topo_parse(buf, l, "m.topo", err, sizeof err);
        if (t) {
            accepted++;
            usable(t);
            mm_topo_free(t);
        } else {
            refused++;
            assert_true(strncmp(err, "m.topo:", 7) == 0);
        }
    }
    free(buf);
    assert_true(refused > 0 && accepted > 0);
}

static void mangled_inputs_never_crash(void **state)
{
    (void)state;
    const char alphabet[] = "0123456789 -/#\n.peirsxglfd\t\r\x00\xff";
    mangle("# a ring\npeers 5\nkind ring\ngraph undirected\nweights explicit\n"
           "self 0 1/3\n0 1 1/3\n1 2 1/3\n2 3 1/3\n3 4 1/3\n4 0 1/3\n",
           alphabet, sizeof alphabet - 1, 12345);
}

/* The same for a family file (topologies/README.md, "Families"). */
static void mangled_families_never_crash(void **state)
{
    (void)state;
    const char alphabet[] = "0123456789 #\nabefgilmnoprstuyx\t\r";
    mangle("# elastic\npeers 6\nkind t\nfamily regular 3 seed 7\nweights uniform\n", alphabet,
           sizeof alphabet - 1, 777);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_bad_input_is_refused_with_where_and_what),
        cmocka_unit_test(fixed_versions_are_accepted),
        cmocka_unit_test(load_names_the_path),
        cmocka_unit_test(small_error_buffer),
        cmocka_unit_test(mangled_inputs_never_crash),
        cmocka_unit_test(mangled_families_never_crash),
    };
    return cmocka_run_group_tests(tests, 0, 0);
}
