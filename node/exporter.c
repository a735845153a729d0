/* The peer's Prometheus endpoint (node/exporter.h; every metric is listed
 * in docs/metrics.md, "Prometheus endpoint"). Text exposition format 0.0.4:
 * for each family a HELP and a TYPE line, then its samples. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/text.h"
#include "node/exporter.h"
#include "node/http.h"
#include "net/counters.h"

struct mm__exporter {
    mm_http_server *http;    /* not read by route: a request can come before start
                              * returns (it gets the server's counts in its reply) */
    pthread_mutex_t mu;
    mm__live live;
    bool have_live;
    double updated;          /* unix time of the last publish */
    uint32_t n_peers;
    int64_t last_round;      /* the round of the last publish counted */
    uint64_t *mixed, *missing; /* [n_peers]: rounds a neighbour was / was not mixed */
    uint64_t *paced;         /* [n_peers]: rounds whose pace each peer set (node/pace.h) */
    mm_link_stats *links;    /* [n_peers]: the transport's counters per peer */
};

/* A label value: backslash, double quote and newline escaped. */
static void put_label(mm_text *t, const char *v)
{
    for (; v && *v; v++) {
        if (*v == '\\' || *v == '"')
            mm_text_put(t, "\\%c", *v);
        else if (*v == '\n')
            mm_text_put(t, "\\n");
        else
            mm_text_put(t, "%c", *v);
    }
}

static void family(mm_text *t, const char *name, const char *type, const char *help)
{
    mm_text_put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_num(mm_text *t, double v)
{
    if (isnan(v))
        mm_text_put(t, "NaN\n");
    else if (isinf(v))
        mm_text_put(t, v > 0 ? "+Inf\n" : "-Inf\n");
    else
        mm_text_put(t, "%.17g\n", v);
}

static void sample(mm_text *t, const char *name, double v)
{
    mm_text_put(t, "%s ", name);
    put_num(t, v);
}

static void one(mm_text *t, const char *name, const char *type, const char *help, double v)
{
    family(t, name, type, help);
    sample(t, name, v);
}

/* ---- the families ------------------------------------------------------------ */

static void put_training(mm_text *t, const mm__live *l)
{
    family(t, "murmur_peer_info", "gauge", "This peer: its id, the number of peers, the "
           "algorithm, the topology file, the codec and the outer optimizer with its "
           "settings (always 1).");
    mm_text_put(t, "murmur_peer_info{peer=\"%u\",n_peers=\"%u\",algo=\"", l->peer, l->n_peers);
    put_label(t, l->algo);
    mm_text_put(t, "\",topology=\"");
    put_label(t, l->topology);
    mm_text_put(t, "\",codec=\"");
    put_label(t, l->codec ? l->codec : "none");
    mm_text_put(t, "\",outer=\"");
    put_label(t, l->outer[0] ? l->outer : "none");
    mm_text_put(t, "\"} 1\n");
    one(t, "murmur_round", "gauge", "Gossip rounds completed.", (double)l->round);
    if (l->elastic) {
        one(t, "murmur_view_members", "gauge",
            "Elastic runs: members in this peer's view of the last round.", (double)l->view_n);
        one(t, "murmur_view_changes_total", "counter",
            "Elastic runs: rounds whose view differed from the round before.",
            (double)l->view_changes);
    }
    one(t, "murmur_optimizer_steps_total", "counter", "Optimizer steps applied.",
        (double)l->steps);
    one(t, "murmur_exchanges", "gauge", "Averaging exchanges in the last round.",
        (double)l->exchanges);
    one(t, "murmur_train_loss", "gauge",
        "Training loss of the last round's batches (nats per byte).", l->loss);
    one(t, "murmur_learning_rate", "gauge", "Learning rate of the last round.", l->lr);
    if (l->have_eval) {
        one(t, "murmur_eval_round", "gauge", "Round of the last evaluation.",
            (double)l->eval_round);
        one(t, "murmur_eval_loss", "gauge", "Validation loss of the last evaluation (nats).",
            l->val_loss);
        one(t, "murmur_eval_accuracy_ratio", "gauge",
            "Next-byte accuracy of the last evaluation (0 to 1).", l->val_acc);
    }
    if (l->have_xi)
        one(t, "murmur_consensus_estimate", "gauge",
            "--consensus-target: this peer's estimate of the consensus distance Xi.",
            l->xi_est);
    one(t, "murmur_compute_seconds_total", "counter",
        "Seconds in forward, backward and the optimizer.", l->t_compute);
    one(t, "murmur_wait_seconds_total", "counter",
        "Seconds the training thread waited for neighbours' vectors.", l->t_wait);
    one(t, "murmur_mix_seconds_total", "counter", "Seconds in the averaging arithmetic.",
        l->t_comm);
    one(t, "murmur_isolated", "gauge",
        "1 while the peer has mixed with none of its in-neighbours for too long.",
        l->isolated ? 1 : 0);
    one(t, "murmur_alone_seconds", "gauge",
        "Seconds since the peer started or last mixed with any neighbour.", l->alone_s);
    one(t, "murmur_ended", "gauge", "1 once the peer has written its end line.",
        l->ended ? 1 : 0);
    one(t, "murmur_stale_dropped_total", "counter",
        "Received vectors of rounds already given up on, released unmixed.",
        (double)l->stale_dropped);
    one(t, "murmur_mix_refused_total", "counter", "Vectors the mixing refused for their weight.",
        (double)l->mix_refused);
    one(t, "murmur_sends_skipped_total", "counter",
        "Sends skipped because the neighbour had not taken the previous one.",
        (double)l->skipped_sends);
    one(t, "murmur_sends_deferred_total", "counter",
        "Sends that waited for the previous send to the same neighbour.",
        (double)l->deferred_sends);
}

static const char *link_name(mm__link_state s)
{
    static const char *names[] = {"unknown", "connecting", "up", "down", "gone"};
    return names[s];
}

/* A per-neighbour count of rounds, for every peer ever a neighbour. */
static void rounds_family(const mm__exporter *e, mm_text *t, const char *name, const char *help,
                          const uint64_t *count)
{
    family(t, name, "counter", help);
    for (uint32_t j = 0; j < e->n_peers; j++)
        if (e->mixed[j] || e->missing[j])
            mm_text_put(t, "%s{neighbour=\"%u\"} %llu\n", name, j, (unsigned long long)count[j]);
}

static void put_neighbours(const mm__exporter *e, mm_text *t, const mm__live *l)
{
    family(t, "murmur_neighbour_distance", "gauge",
           "||x_i - x_j|| to each in-neighbour mixed in the last round's first exchange.");
    for (int k = 0; k < l->n_nbrs; k++)
        if (l->nbr[k].present && isfinite(l->nbr[k].dist)) {
            mm_text_put(t, "murmur_neighbour_distance{neighbour=\"%u\"} ", l->nbr[k].id);
            put_num(t, l->nbr[k].dist);
        }
    family(t, "murmur_neighbour_mixed", "gauge",
           "1 when the in-neighbour's vector was mixed in the last round's first exchange.");
    for (int k = 0; k < l->n_nbrs; k++)
        mm_text_put(t, "murmur_neighbour_mixed{neighbour=\"%u\"} %d\n", l->nbr[k].id,
            l->nbr[k].present ? 1 : 0);
    family(t, "murmur_neighbour_link", "gauge", "The link to each in-neighbour of the last "
           "round: 1 for its state (connecting, up, down, gone, unknown), else absent.");
    for (int k = 0; k < l->n_nbrs; k++)
        mm_text_put(t, "murmur_neighbour_link{neighbour=\"%u\",state=\"%s\"} 1\n", l->nbr[k].id,
            link_name(l->nbr[k].link));
    family(t, "murmur_neighbour_refused", "gauge",
           "1 when the in-neighbour was refused for a configuration that differs.");
    for (int k = 0; k < l->n_nbrs; k++)
        mm_text_put(t, "murmur_neighbour_refused{neighbour=\"%u\"} %d\n", l->nbr[k].id,
            l->nbr[k].refused ? 1 : 0);
    rounds_family(e, t, "murmur_neighbour_mixed_rounds_total",
                  "Rounds in which the neighbour's vector was mixed (first exchange).", e->mixed);
    rounds_family(e, t, "murmur_neighbour_missing_rounds_total",
                  "Rounds in which the neighbour was expected and missing (timed out, down, "
                  "ahead).", e->missing);
}

/* The transport's counters, from their one table (net/counters.h): the
 * refusals as murmur_transport_refused_total{reason="FIELD"}, the others as
 * murmur_transport_FIELD_total, with two naming rules for units: bytes_X is
 * murmur_transport_X_bytes_total, and a _peak (bytes) is a gauge,
 * murmur_transport_FIELD_bytes. */
static const char *counter_name(char *name, size_t size, const char *prefix, const char *field)
{
    size_t n = strlen(field);
    if (!strncmp(field, "bytes_", 6)) {
        snprintf(name, size, "%s_%s_bytes_total", prefix, field + 6);
    } else if (n > 5 && !strcmp(field + n - 5, "_peak")) {
        snprintf(name, size, "%s_%s_bytes", prefix, field);
        return "gauge";
    } else {
        snprintf(name, size, "%s_%s_total", prefix, field);
    }
    return "counter";
}

static void put_counter(mm_text *t, const char *field, const char *help, uint64_t v)
{
    char name[128];
    const char *type = counter_name(name, sizeof name, "murmur_transport", field);
    char h[300];
    snprintf(h, sizeof h, "The transport's %s: %s.", field, help);
    one(t, name, type, h, (double)v);
}

/* The transport's counters per peer (net/counters.h, MM_LINK_COUNTERS) as
 * murmur_neighbour_..._total{neighbour="J"}, named by the rule above, for
 * every peer with traffic. */
static void put_links(const mm__exporter *e, mm_text *t)
{
    char name[128], help[300];
#define MM_X(field)                                                                          \
    counter_name(name, sizeof name, "murmur_neighbour", #field);                             \
    snprintf(help, sizeof help, "The transport's " #field " to or from each peer (the "      \
             "connections bound to it, HELLO included).");                                    \
    family(t, name, "counter", help);                                                        \
    for (uint32_t j = 0; j < e->n_peers; j++)                                                \
        if (e->links[j].bytes_sent || e->links[j].bytes_recv)                                \
            mm_text_put(t, "%s{neighbour=\"%u\"} %llu\n", name, j,                            \
                        (unsigned long long)e->links[j].field);
    MM_LINK_COUNTERS(MM_X)
#undef MM_X
}

static void put_transport(mm_text *t, const mm__live *l)
{
    const mm_transport_stats *s = &l->st;
#define MM_X(field, line, explanation)                                                       \
    if (line != MM_CTR_REFUSED)                                                               \
        put_counter(t, #field, explanation, s->field);
    MM_TRANSPORT_COUNTERS(MM_X)
#undef MM_X
    family(t, "murmur_transport_refused_total", "counter",
           "Connections and frames the transport refused, by reason (net/counters.h; "
           "docs/protocol.md, Refusals).");
#define MM_X(field, line, explanation)                                                       \
    if (line == MM_CTR_REFUSED)                                                               \
        mm_text_put(t, "murmur_transport_refused_total{reason=\"" #field "\"} %llu\n",          \
                    (unsigned long long)s->field);
    MM_TRANSPORT_COUNTERS(MM_X)
#undef MM_X
}

static void put_choco(mm_text *t, const mm__live *l)
{
    if (!l->choco)
        return;
    one(t, "murmur_choco_resets_sent_total", "counter", "CHOCO: RESET frames sent.",
        (double)l->cs.resets_sent);
    one(t, "murmur_choco_resets_received_total", "counter", "CHOCO: RESET frames received.",
        (double)l->cs.resets_recv);
    one(t, "murmur_choco_copies_ignored_total", "counter",
        "CHOCO: compressed frames ignored while their copy waited for a RESET.",
        (double)l->cs.ignored);
    one(t, "murmur_choco_copies_diverged_total", "counter",
        "CHOCO: public copies whose CRC differed from the sender's (0 between correct peers).",
        (double)l->cs.diverged);
}

static void put_clip(mm_text *t, const mm__live *l)
{
    if (!l->clip)
        return;
    one(t, "murmur_clip_radius", "gauge",
        "Robust mixing: the largest clipping radius of the last round's mixes "
        "(+Inf before any neighbour distance was measured).",
        l->clip_radius);
    one(t, "murmur_pulls_clipped_total", "counter",
        "Robust mixing: neighbour pulls beyond their radius (clipped to it, or dropped whole "
        "when not finite).",
        (double)l->pulls_clipped);
}

/* --deadline learn, --fit-work (node/pace.h): the last round's wait, work
 * and who set its pace, and the rounds each peer set so far. */
static void put_pace(const mm__exporter *e, mm_text *t, const mm__live *l)
{
    if (!l->pace)
        return;
    one(t, "murmur_deadline_seconds", "gauge",
        "The last round's bound on the wait for neighbours' vectors after this peer's compute "
        "(--deadline learn: learnt from arrivals; fixed: --round-timeout).", l->deadline_s);
    one(t, "murmur_round_waited_seconds", "gauge",
        "What the last round waited for neighbours' vectors after this peer's compute.",
        l->waited_s);
    one(t, "murmur_batch", "gauge", "The last round's batch (--fit-work batch).",
        (double)l->batch);
    one(t, "murmur_round_local_steps", "gauge",
        "Local optimizer steps of the last round (--fit-work steps).", (double)l->steps_done);
    family(t, "murmur_paced_by", "gauge", "Who set the last round's pace: 1 for the "
           "in-neighbour whose vector ended the wait (this peer's own id: its compute did).");
    mm_text_put(t, "murmur_paced_by{peer=\"%lld\"} 1\n", (long long)l->paced_by);
    family(t, "murmur_paced_rounds_total", "counter",
           "Rounds whose pace each peer set (this peer's own id: its compute ended last).");
    for (uint32_t j = 0; j < e->n_peers; j++)
        if (e->paced[j])
            mm_text_put(t, "murmur_paced_rounds_total{peer=\"%u\"} %llu\n", j,
                        (unsigned long long)e->paced[j]);
    one(t, "murmur_deadline_cut_total", "counter",
        "Neighbour vectors that missed their round's deadline.", (double)l->cut_total);
    one(t, "murmur_rounds_behind_total", "counter",
        "Rounds in which this peer was left behind (a neighbour had moved on, or rounds were "
        "skipped to catch up).", (double)l->behind_total);
    one(t, "murmur_extra_steps_total", "counter",
        "Local steps beyond --local-steps (--fit-work steps).", (double)l->extra_steps_total);
}

static void put_http(mm_text *t, const mm_http_counts *counts)
{
    mm_http_counts c = *counts;
    one(t, "murmur_http_requests_total", "counter",
        "Requests this endpoint answered with 200.", (double)c.requests);
    family(t, "murmur_http_refused_total", "counter",
           "Requests and connections this endpoint refused or cut off, by reason.");
#define MM__EXP_HTTP(name, what)                                                             \
    mm_text_put(t, "murmur_http_refused_total{reason=\"" #name "\"} %llu\n", (unsigned long long)c.name);
    MM_HTTP_COUNTERS(MM__EXP_HTTP)
#undef MM__EXP_HTTP
}

static void route(void *ud, const char *path, mm_http_reply *r)
{
    mm__exporter *e = ud;
    if (strcmp(path, "/metrics") != 0)
        return;
    mm_text t = {0};
    pthread_mutex_lock(&e->mu);
    bool have = e->have_live;
    mm__live l = e->live;
    double updated = e->updated;
    mm_text nb = {0};
    if (have) {
        put_neighbours(e, &nb, &l);
        put_links(e, &nb);
        put_pace(e, &nb, &l);
    }
    pthread_mutex_unlock(&e->mu);
    if (have) {
        put_training(&t, &l);
        mm_text_put(&t, "%.*s", (int)nb.len, nb.p ? nb.p : "");
        put_transport(&t, &l);
        put_choco(&t, &l);
        put_clip(&t, &l);
        one(&t, "murmur_last_update_timestamp_seconds", "gauge",
            "Unix time the training thread last published its state.", updated);
    }
    free(nb.p);
    put_http(&t, &r->counts); /* (not e->http: a scrape can come before it is set) */
    if (t.oom) {
        free(t.p);
        r->status = 500;
        mm_http_reply_copy(r, "text/plain", "out of memory\n", 14);
        r->status = 500;
        return;
    }
    r->status = 200;
    r->content_type = "text/plain; version=0.0.4; charset=utf-8";
    r->body = t.p;
    r->len = t.len;
}

static void exporter_free(mm__exporter *e)
{
    if (!e)
        return;
    free(e->mixed);
    free(e->missing);
    free(e->paced);
    free(e->links);
    free(e);
}

mm__exporter *mm__exporter_start(const char *addr, const char *token, uint32_t n_peers,
                                 char *err, size_t errlen)
{
    mm__exporter *e = calloc(1, sizeof *e);
    if (e) {
        e->mixed = calloc(n_peers ? n_peers : 1, sizeof *e->mixed);
        e->missing = calloc(n_peers ? n_peers : 1, sizeof *e->missing);
        e->paced = calloc(n_peers ? n_peers : 1, sizeof *e->paced);
        e->links = calloc(n_peers ? n_peers : 1, sizeof *e->links);
    }
    if (!e || !e->mixed || !e->missing || !e->paced || !e->links) {
        snprintf(err, errlen, "out of memory");
        exporter_free(e);
        return NULL;
    }
    e->n_peers = n_peers;
    e->last_round = -1;
    pthread_mutex_init(&e->mu, NULL);
    mm_http_config hc = {.addr = addr, .token = token, .max_conns = 16};
    mm_http_server *http = mm_http_start(&hc, route, e, err, errlen);
    e->http = http;
    if (!http) {
        pthread_mutex_destroy(&e->mu);
        exporter_free(e);
        return NULL;
    }
    if (!mm_http_addr_is_loopback(addr) && !token)
        mm_warn("--metrics-addr %s is not a loopback address and has no --metrics-token-file: "
                "anyone who can reach it reads this peer's metrics", addr);
    mm_info("metrics endpoint: http://%s/metrics", addr);
    return e;
}

void mm__exporter_stop(mm__exporter *e)
{
    if (!e)
        return;
    mm_http_stop(e->http);
    pthread_mutex_destroy(&e->mu);
    exporter_free(e);
}

void mm__exporter_publish(mm__exporter *e, const mm__live *l, const mm_link_stats *links)
{
    if (!e)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pthread_mutex_lock(&e->mu);
    e->live = *l;
    if (links)
        memcpy(e->links, links, e->n_peers * sizeof *links);
    e->have_live = true;
    e->updated = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (l->round != e->last_round && !l->ended) {
        e->last_round = l->round;
        for (int k = 0; k < l->n_nbrs; k++)
            if (l->nbr[k].id < e->n_peers)
                (l->nbr[k].present ? e->mixed : e->missing)[l->nbr[k].id]++;
        if (l->pace && l->paced_by >= 0 && (uint64_t)l->paced_by < e->n_peers)
            e->paced[l->paced_by]++;
    }
    pthread_mutex_unlock(&e->mu);
}
