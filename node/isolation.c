/* node/isolation.h: per neighbour whether it was mixed and why not, the
 * isolation warning, and the verdict a peer ends with. */
#include "node/isolation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "node/node.h"

enum { ROLE_IN = 1, ROLE_OUT = 2 };

/* At most this many neighbours named in a log line block or a metrics
 * object (a random matching's in-neighbours are, in time, everyone). */
#define MAX_NAMED 16
#define MAX_FIELDS 256

/* What isolation keeps of one peer. */
typedef struct {
    uint8_t role;           /* ROLE_IN | ROLE_OUT, ever */
    uint64_t mixed;         /* exchanges that mixed its vector */
} iso_peer;

struct mm__isolation {
    uint32_t n, self;
    double limit, repeat;
    double t0;
    iso_peer *peer;         /* [n] */
    uint32_t *list;         /* neighbours in order of appearance */
    uint32_t n_list;
    double alone_since;     /* the start, or the last mix */
    bool in_since;          /* a round with in-neighbours since then */
    double longest;         /* the longest stretch alone that ended in a mix (s) */
    /* rounds with in-neighbours, and those of them that mixed none; the
     * current round's state until the next one begins */
    uint64_t rounds_in, rounds_alone;
    bool round_in, round_mixed;
    bool warned;            /* a warning since the last mix */
    double next_warn;
};

double mm__isolation_limit(int start_ms, int peer_ms, int round_ms)
{
    double a = start_ms / 1000.0, b = (peer_ms + (double)round_ms) / 1000.0;
    return a > b ? a : b;
}

mm__isolation *mm__isolation_new(uint32_t n, uint32_t self, double limit_s)
{
    mm__isolation *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = n;
    s->self = self;
    s->limit = limit_s;
    s->repeat = limit_s > 10 ? limit_s : 10;
    s->peer = calloc(n, sizeof *s->peer);
    s->list = calloc(n, sizeof *s->list);
    if (!s->peer || !s->list) {
        mm__isolation_free(s);
        return NULL;
    }
    return s;
}

void mm__isolation_free(mm__isolation *s)
{
    if (!s)
        return;
    free(s->peer);
    free(s->list);
    free(s);
}

void mm__isolation_start(mm__isolation *s, double now)
{
    s->t0 = s->alone_since = now;
}

static void add(mm__isolation *s, uint32_t p, uint8_t role)
{
    if (p >= s->n || p == s->self)
        return;
    if (!s->peer[p].role)
        s->list[s->n_list++] = p;
    s->peer[p].role |= role;
}

/* The round that ends: counted alone when it had in-neighbours and mixed
 * none of them. */
static void close_round(mm__isolation *s)
{
    if (s->round_in) {
        s->rounds_in++;
        s->rounds_alone += !s->round_mixed;
    }
    s->round_in = s->round_mixed = false;
}

void mm__isolation_round(mm__isolation *s, const mm_round_view *v)
{
    close_round(s);
    s->round_in = v->n_in > 0;
    for (int k = 0; k < v->n_in; k++)
        add(s, v->in[k].peer, ROLE_IN);
    for (int k = 0; k < v->n_out; k++)
        add(s, v->out[k].peer, ROLE_OUT);
    if (v->n_in > 0)
        s->in_since = true;
}

double mm__isolation_alone(const mm__isolation *s, double now) { return now - s->alone_since; }

/* The longest stretch alone, the current one included when a round with
 * in-neighbours has passed since the last mix. */
static double longest_alone(const mm__isolation *s, double now)
{
    double cur = s->in_since ? now - s->alone_since : 0;
    return cur > s->longest ? cur : s->longest;
}

void mm__isolation_mixed(mm__isolation *s, uint32_t peer, double now)
{
    if (peer >= s->n)
        return;
    s->peer[peer].mixed++;
    s->round_mixed = true;
    if (now - s->alone_since > s->longest)
        s->longest = now - s->alone_since;
    if (s->warned)
        mm_info("isolated no more: mixed with peer %u after %.0f s alone", peer,
                now - s->alone_since);
    s->warned = false;
    s->alone_since = now;
    s->in_since = false;
}

/* A neighbour counts as refused when a connection with it was refused for
 * a configuration that differs and it was never up (had the HELLO agreed,
 * the configurations matched), or when two processes claimed one id
 * (mixing "peer K" then meant mixing whichever answered). */
static bool refused(const mm__peer_view *pv, const mm__refusals *rf)
{
    return rf->id_clash || (rf->config && !pv->ever_up);
}

/* Why peer p did not mix, in words; *is_refused as refused(); *clash when
 * two processes claimed one id. */
static void describe_ex(mm__mbox *mb, uint32_t p, char *buf, size_t len, bool *is_refused,
                        bool *clash)
{
    mm__peer_view pv;
    mm__refusals rf;
    mm__mbox_peer(mb, p, &pv);
    mm__mbox_refusals(mb, p, &rf);
    *is_refused = refused(&pv, &rf);
    *clash = rf.id_clash;
    if (*is_refused)
        snprintf(buf, len, "%s%s", rf.last_config.text,
                 rf.last_config.by_address ? " (told by its address)" : "");
    else if (pv.state == MM__PEER_UP)
        snprintf(buf, len, "connected, but no vector of it arrived in time");
    else if (pv.ever_up)
        snprintf(buf, len, "down (it was up before)%s%s", rf.count ? "; last: " : "",
                 rf.count ? rf.last.text : "");
    else
        snprintf(buf, len, "never connected%s%s", rf.count ? ": " : "",
                 rf.count ? rf.last.text : "");
}

static void describe(mm__mbox *mb, uint32_t p, char *buf, size_t len, bool *is_refused)
{
    bool clash;
    describe_ex(mb, p, buf, len, is_refused, &clash);
}

/* The refusals of connections whose peer is unknown, when they say the
 * configurations differ: text into buf, or false. */
static bool unknown_refusals(mm__mbox *mb, char *buf, size_t len, uint64_t *count)
{
    mm__refusals rf;
    mm__mbox_refusals(mb, MM_PEER_UNKNOWN, &rf);
    *count = rf.config_count;
    if (!rf.config)
        return false;
    snprintf(buf, len, "%llu connection%s from peers it cannot name refused: %s (last from %s)",
             (unsigned long long)rf.config_count, rf.config_count == 1 ? "" : "s",
             rf.last_config.text, rf.last_config.src);
    return true;
}

bool mm__isolation_check(mm__isolation *s, mm__mbox *mb, double now)
{
    double alone = now - s->alone_since;
    if (!s->in_since || alone < s->limit || now < s->next_warn)
        return false;
    int n_in = 0;
    for (uint32_t i = 0; i < s->n_list; i++)
        n_in += (s->peer[s->list[i]].role & ROLE_IN) != 0;
    bool started = s->alone_since == s->t0;
    mm_warn("isolated for %.0f s: mixed with none of its %d neighbour%s %s (the limit, "
            "max(--start-timeout, --peer-timeout + --round-timeout), is %.0f s); it trains "
            "alone. Each neighbour:", alone, n_in, n_in == 1 ? "" : "s",
            started ? "since it started" : "since it last mixed", s->limit);
    int named = 0;
    for (uint32_t i = 0; i < s->n_list; i++) {
        uint32_t p = s->list[i];
        if (!(s->peer[p].role & ROLE_IN))
            continue;
        if (named++ == MAX_NAMED) {
            mm_warn("isolated: ... and %d more", n_in - MAX_NAMED);
            break;
        }
        char why[MM_REFUSAL_TEXT + 64];
        bool r;
        describe(mb, p, why, sizeof why, &r);
        mm_warn("isolated: peer %u: %s", p, why);
    }
    char why[MM_REFUSAL_TEXT + 160];
    uint64_t cnt;
    if (unknown_refusals(mb, why, sizeof why, &cnt))
        mm_warn("isolated: %s", why);
    s->warned = true;
    s->next_warn = now + s->repeat;
    return true;
}

/* Neighbours refused (refused()), and whether every in-neighbour went
 * unmixed for a whole run longer than the limit. */
static int judge(mm__isolation *s, mm__mbox *mb, double now, bool *alone_all)
{
    int n_refused = 0;
    bool any_in = false, any_mixed = false;
    for (uint32_t i = 0; i < s->n_list; i++) {
        uint32_t p = s->list[i];
        char why[MM_REFUSAL_TEXT + 64];
        bool r;
        describe(mb, p, why, sizeof why, &r);
        n_refused += r;
        if (s->peer[p].role & ROLE_IN) {
            any_in = true;
            any_mixed |= s->peer[p].mixed > 0;
        }
    }
    *alone_all = any_in && !any_mixed && now - s->t0 >= s->limit;
    return n_refused;
}

mm__isolation_verdict mm__isolation_verdict_at(mm__isolation *s, mm__mbox *mb, double now)
{
    bool alone_all;
    if (judge(s, mb, now, &alone_all) > 0)
        return MM__VERDICT_REFUSED;
    char why[MM_REFUSAL_TEXT + 160];
    uint64_t cnt;
    /* alone all run, and what came in was refused without a name: a
     * --plaintext peer dialled only by TLS peers sees nothing else */
    if (alone_all && unknown_refusals(mb, why, sizeof why, &cnt))
        return MM__VERDICT_REFUSED;
    return alone_all ? MM__VERDICT_ISOLATED : MM__VERDICT_OK;
}

void mm__isolation_log_verdict(mm__isolation *s, mm__mbox *mb, mm__isolation_verdict v, double now)
{
    if (v == MM__VERDICT_OK) {
        close_round(s);
        double longest = longest_alone(s, now);
        if (longest > s->limit)
            mm_warn("alone: this peer mixed with none of its neighbours for %.0f s at a stretch "
                    "(the limit is %.0f s), and in %llu of its %llu rounds with neighbours: it "
                    "trained alone then (the `isolated` lines and warnings above say why)",
                    longest, s->limit, (unsigned long long)s->rounds_alone,
                    (unsigned long long)s->rounds_in);
        return;
    }
    const char *tag = v == MM__VERDICT_REFUSED ? "refused" : "isolated";
    int n_in = 0, n_refused = 0, named = 0;
    bool any_clash = false;
    for (uint32_t i = 0; i < s->n_list; i++) {
        uint32_t p = s->list[i];
        n_in += (s->peer[p].role & ROLE_IN) != 0;
        char why[MM_REFUSAL_TEXT + 64];
        bool r, clash;
        describe_ex(mb, p, why, sizeof why, &r, &clash);
        n_refused += r;
        any_clash |= clash;
        /* refused: the refused ones; isolated: every in-neighbour */
        if (v == MM__VERDICT_REFUSED ? !r : !(s->peer[p].role & ROLE_IN))
            continue;
        if (named++ < MAX_NAMED)
            mm_error("%s: peer %u: %s", tag, p, why);
    }
    char why[MM_REFUSAL_TEXT + 160];
    uint64_t cnt;
    if (unknown_refusals(mb, why, sizeof why, &cnt) && (v == MM__VERDICT_ISOLATED || !n_refused))
        mm_error("%s: %s", tag, why);
    if (v == MM__VERDICT_REFUSED)
        mm_error("refused: misconfigured: %s %d of its %u neighbours for the whole run, "
                 "%s (above); exit status %d",
                 any_clash ? "this peer could not tell whom it mixed with as"
                           : "this peer could not mix with",
                 n_refused ? n_refused : (int)s->n_list, s->n_list,
                 any_clash ? "because two processes claimed one id"
                           : "refused because the two are configured differently",
                 MM_EXIT_REFUSED);
    else
        mm_error("isolated: for the whole run (%.0f s) this peer mixed with none of its %d "
                 "neighbours, and none was refused: were they started, and do --base-port or "
                 "--hosts say where they listen?; exit status %d", now - s->t0, n_in,
                 MM_EXIT_ISOLATED);
}

/* A neighbour in the fields of a line: who, and (when the line says
 * why) whether it was refused and why it did not mix. */
typedef struct {
    uint32_t id;
    bool refused;
    char why[MM_REFUSAL_TEXT + 64];
} named_peer;

static int cmp_id(const void *a, const void *b)
{
    uint32_t x = ((const named_peer *)a)->id, y = ((const named_peer *)b)->id;
    return (x > y) - (x < y);
}

void mm__isolation_fields(mm__isolation *s, mm__mbox *mb, mm_metrics *m,
                          mm__isolation_verdict v, double alone_s, double now_s)
{
    named_peer *nb = calloc(s->n_list ? s->n_list : 1, sizeof *nb);
    if (!nb)
        return;
    for (uint32_t i = 0; i < s->n_list; i++)
        nb[i].id = s->list[i];
    qsort(nb, s->n_list, sizeof *nb, cmp_id);
    if (alone_s >= 0) {
        mm_metrics_fixed(m, "alone_s", alone_s, 1);
    } else { /* the end line: how long and how often it mixed with nobody */
        close_round(s);
        mm_metrics_int(m, "rounds_alone", (long long)s->rounds_alone);
        mm_metrics_int(m, "rounds_with_nbrs", (long long)s->rounds_in);
        mm_metrics_fixed(m, "longest_alone_s", longest_alone(s, now_s), 1);
        mm_metrics_fixed(m, "alone_limit_s", s->limit, 1);
    }
    int k = 0;
    mm_metrics_obj_begin(m, "mixed");
    for (uint32_t i = 0; i < s->n_list && k < MAX_FIELDS; i++)
        if (s->peer[nb[i].id].role & ROLE_IN) {
            mm_metrics_obj_num(m, nb[i].id, (double)s->peer[nb[i].id].mixed);
            k++;
        }
    mm_metrics_obj_end(m);
    if (v == MM__VERDICT_OK && alone_s < 0) {
        free(nb);
        return;
    }
    /* refusals: code per refused neighbour; why: words per neighbour that
     * did not mix (refused ones, or every in-neighbour when alone) */
    for (uint32_t i = 0; i < s->n_list; i++)
        describe(mb, nb[i].id, nb[i].why, sizeof nb[i].why, &nb[i].refused);
    k = 0;
    mm_metrics_obj_begin(m, "refusals");
    for (uint32_t i = 0; i < s->n_list && k < MAX_FIELDS; i++)
        if (nb[i].refused) {
            mm__refusals rf;
            mm__mbox_refusals(mb, nb[i].id, &rf);
            mm_metrics_obj_str(m, nb[i].id, mm_refusal_name(rf.last_config.code));
            k++;
        }
    mm_metrics_obj_end(m);
    k = 0;
    mm_metrics_obj_begin(m, "why");
    for (uint32_t i = 0; i < s->n_list && k < MAX_FIELDS; i++)
        if (nb[i].refused || (v != MM__VERDICT_REFUSED && (s->peer[nb[i].id].role & ROLE_IN))) {
            mm_metrics_obj_str(m, nb[i].id, nb[i].why);
            k++;
        }
    mm_metrics_obj_end(m);
    free(nb);
    char text[MM_REFUSAL_TEXT + 160];
    uint64_t cnt;
    if (unknown_refusals(mb, text, sizeof text, &cnt)) {
        mm_metrics_int(m, "refused_unknown", (long long)cnt);
        mm_metrics_str(m, "refused_unknown_why", text);
    }
}
