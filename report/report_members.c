/* The report's membership section (docs/metrics.md, "The report"): an
 * elastic run's joins, departures and removals and the rounds they took
 * effect, whether the peers' views of a round agreed, and for any run the
 * stretches of rounds in which the peers that mixed were not one connected
 * graph (a ring that lost two peers is two chains: two trainings). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

/* Rounds per window of the connectivity check: a time-varying topology
 * (one-peer exponential, random matching) connects its peers over a few
 * rounds, not in every one. */
#define WINDOW 16
#define MAX_GROUPS_SHOWN 4

static const char *what_word(uint8_t w)
{
    return w == 1 ? "joined" : w == 2 ? "left" : "removed";
}

static int cmp_change(const void *a, const void *b)
{
    const mm_rep_change *x = a, *y = b;
    if (x->round != y->round)
        return x->round < y->round ? -1 : 1;
    if (x->what != y->what)
        return x->what - y->what;
    return (x->id > y->id) - (x->id < y->id);
}

/* Every peer's changes after round 0, sorted, equal ones once; in *disagree
 * the changes two peers recorded at different rounds. */
static mm_rep_change *all_changes(const mm_report *r, size_t *n, size_t *disagree)
{
    size_t total = 0;
    for (int i = 0; i < r->n_peers; i++)
        total += r->peers[i].n_changes;
    mm_rep_change *c = malloc((total ? total : 1) * sizeof *c);
    *n = *disagree = 0;
    if (!c)
        return NULL;
    for (int i = 0; i < r->n_peers; i++)
        for (size_t k = 0; k < r->peers[i].n_changes; k++)
            if (r->peers[i].changes[k].round > 0)
                c[(*n)++] = r->peers[i].changes[k];
    qsort(c, *n, sizeof *c, cmp_change);
    size_t m = 0;
    for (size_t k = 0; k < *n; k++) {
        if (m && !cmp_change(&c[m - 1], &c[k]))
            continue;
        /* the same change of one id at another round: the peers disagreed */
        for (size_t j = 0; j < m; j++)
            if (c[j].id == c[k].id && c[j].what == c[k].what)
                (*disagree)++;
        c[m++] = c[k];
    }
    *n = m;
    return c;
}

/* A peer's tag at round (its latest view line at or before), 0 if none. */
static uint32_t tag_at(const mm_rep_peer *p, int64_t round)
{
    uint32_t tag = 0;
    for (size_t i = 0; i < p->n_views && p->view_rounds[i] <= round; i++)
        tag = p->view_tags[i];
    return tag;
}

static bool alive_at(const mm_rep_peer *p, int64_t round)
{
    return p->n_rounds && p->rounds[0].round <= round && p->rounds[p->n_rounds - 1].round >= round;
}

/* Rounds of change at which the live peers' views differed. */
static size_t view_disagreements(const mm_report *r, const mm_rep_change *c, size_t n,
                                 int64_t *first)
{
    size_t bad = 0;
    *first = -1;
    for (size_t k = 0; k < n; k++) {
        if (k && c[k].round == c[k - 1].round)
            continue;
        uint32_t seen = 0;
        bool differ = false;
        for (int i = 0; i < r->n_peers && !differ; i++) {
            const mm_rep_peer *p = &r->peers[i];
            if (!p->n_views || !alive_at(p, c[k].round))
                continue;
            uint32_t t = tag_at(p, c[k].round);
            differ = seen && t != seen;
            seen = t;
        }
        if (differ) {
            bad++;
            if (*first < 0)
                *first = c[k].round;
        }
    }
    return bad;
}

/* ---- connectivity ------------------------------------------------------------- */

static int find(int *up, int a)
{
    while (up[a] != a)
        a = up[a] = up[up[a]];
    return a;
}

/* The peer index of id, or -1. */
static int index_of(const mm_report *r, uint32_t id)
{
    for (int i = 0; i < r->n_peers; i++)
        if ((uint32_t)r->peers[i].id == id)
            return i;
    return -1;
}

/* The groups (components) of the peers that wrote a round line in rounds
 * [a, b), joined by who mixed whom: into up (union-find over peer
 * indices); returns their number, present[i] whether peer i had a line. */
static int groups(const mm_report *r, int64_t a, int64_t b, int *up, bool *present)
{
    for (int i = 0; i < r->n_peers; i++) {
        up[i] = i;
        present[i] = false;
    }
    for (int i = 0; i < r->n_peers; i++) {
        const mm_rep_peer *p = &r->peers[i];
        for (size_t k = 0; k < p->n_rounds; k++) {
            const mm_rep_round *rd = &p->rounds[k];
            if (rd->round < a || rd->round >= b)
                continue;
            present[i] = true;
            for (int j = 0; j < rd->n_nbr_ids; j++) {
                int q = index_of(r, rd->nbr_ids[j]);
                if (q >= 0)
                    up[find(up, i)] = find(up, q);
            }
        }
    }
    int n = 0;
    for (int i = 0; i < r->n_peers; i++)
        n += present[i] && find(up, i) == i;
    return n;
}

/* "{3,4,5} {0,1,7}": the groups of the window, at most a few. */
static void group_words(const mm_report *r, int *up, const bool *present, char *buf, size_t len)
{
    size_t used = 0;
    int shown = 0;
    buf[0] = 0;
    for (int root = 0; root < r->n_peers && shown < MAX_GROUPS_SHOWN; root++) {
        if (!present[root] || find(up, root) != root)
            continue;
        used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s{", shown ? " " : "");
        bool first = true;
        for (int i = 0; i < r->n_peers; i++)
            if (present[i] && find(up, i) == root) {
                used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%d",
                                         first ? "" : ",", r->peers[i].id);
                first = false;
            }
        used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "}");
        shown++;
    }
}

/* Whether any peer ever mixed anyone (a local-N run never does: no graph). */
static bool ever_mixed(const mm_report *r)
{
    for (int i = 0; i < r->n_peers; i++)
        for (size_t k = 0; k < r->peers[i].n_rounds; k++)
            if (r->peers[i].rounds[k].n_nbr_ids)
                return true;
    return false;
}

static void print_disconnected(const mm_report *r, FILE *out)
{
    if (r->n_peers < 2 || !ever_mixed(r))
        return;
    int64_t last = 0;
    for (int i = 0; i < r->n_peers; i++)
        if (r->peers[i].n_rounds && r->peers[i].rounds[r->peers[i].n_rounds - 1].round > last)
            last = r->peers[i].rounds[r->peers[i].n_rounds - 1].round;
    int *up = malloc((size_t)r->n_peers * sizeof *up);
    bool *present = malloc((size_t)r->n_peers * sizeof *present);
    if (!up || !present) {
        free(up);
        free(present);
        return;
    }
    int64_t from = -1, rounds = 0;
    int stretches = 0, worst = 0;
    char words[256] = "";
    for (int64_t a = 0; a <= last; a += WINDOW) {
        int g = groups(r, a, a + WINDOW, up, present);
        bool split = g > 1;
        if (split) {
            rounds += (a + WINDOW > last + 1 ? last + 1 : a + WINDOW) - a;
            if (from < 0) {
                from = a;
                stretches++;
                if (stretches == 1)
                    group_words(r, up, present, words, sizeof words);
            }
            if (g > worst)
                worst = g;
        }
        if ((!split || a + WINDOW > last) && from >= 0) {
            int64_t to = split ? last : a - 1;
            fprintf(out, "%sDISCONNECTED: rounds %lld-%lld: the peers that mixed formed %d "
                         "separate groups%s%s\n", stretches == 1 ? "\n" : "", (long long)from,
                    (long long)to, worst, stretches == 1 ? ": " : "", stretches == 1 ? words : "");
            from = -1;
            worst = 0;
        }
    }
    if (stretches)
        fprintf(out, "(%lld rounds in %d stretch%s, windows of %d rounds: in them the run was "
                     "several trainings, and the consensus distance over all its peers measures "
                     "their drift apart)\n", (long long)rounds, stretches,
                stretches == 1 ? "" : "es", WINDOW);
    free(up);
    free(present);
}

void mm_report_print_membership(const mm_report *r, FILE *out)
{
    bool elastic = false;
    for (int i = 0; i < r->n_peers && !elastic; i++)
        elastic = r->peers[i].n_views > 0;
    if (elastic) {
        size_t n, disagree;
        mm_rep_change *c = all_changes(r, &n, &disagree);
        if (!c)
            return;
        size_t counts[4] = {0};
        for (size_t k = 0; k < n; k++) { /* (one change at two rounds counts once) */
            bool again = false;
            for (size_t j = 0; j < k && !again; j++)
                again = c[j].id == c[k].id && c[j].what == c[k].what;
            counts[c[k].what] += !again;
        }
        fprintf(out, "\nmembership (elastic run): %zu joined, %zu left, %zu removed\n",
                counts[1], counts[2], counts[3]);
        for (size_t k = 0; k < n; k++)
            fprintf(out, "  %s %u at round %lld (%u members from then on)\n",
                    what_word(c[k].what), c[k].id, (long long)c[k].round, c[k].members);
        int64_t first;
        size_t bad = view_disagreements(r, c, n, &first);
        if (disagree || bad)
            fprintf(out, "VIEWS DIFFERED: %zu change%s recorded at different rounds by different "
                         "peers, %zu round%s of change with the live peers' views differing "
                         "(the first: round %lld); edges between two views did not mix then\n",
                    disagree, disagree == 1 ? "" : "s", bad, bad == 1 ? "" : "s",
                    (long long)first);
        free(c);
    }
    print_disconnected(r, out);
}
