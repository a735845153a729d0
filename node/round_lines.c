/* The training thread's metrics lines (docs/metrics.md): start, round,
 * eval, isolated, end. The algorithm (node/algo.h) and consensus control
 * add their own keys at fixed places (mm__line). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/peak_rss.h"
#include "base/sha256.h"
#include "node/algo.h"
#include "node/algo_choco.h"
#include "node/elastic.h"
#include "node/algo_outer.h"
#include "model/blas_env.h"
#include "node/trainer.h"

static void algo_fields(mm__trainer *tr, mm__line where)
{
    if (tr->algo->fields)
        tr->algo->fields(tr, &tr->metrics, where);
}

/* --clip-pull, --robust-clip (gossip/robust.h): the round line's largest
 * radius of the round's mixes and the pulls clipped so far, the end line's
 * total. Nothing without them (honest lines stay as they were). */
static void clip_fields(mm__trainer *tr, mm__line where)
{
    mm_clip *c = &tr->clip;
    if (!mm_clip_on(c) || (where != MM__LINE_ROUND && where != MM__LINE_END))
        return;
    if (where == MM__LINE_ROUND) {
        mm_metrics_num(&tr->metrics, "clip_radius", c->radius_max); /* (INFINITY: null) */
        tr->live.clip_radius = c->radius_max; /* what a scrape shows of this line */
        c->radius_max = 0;
    }
    mm_metrics_int(&tr->metrics, "pulls_clipped", (long long)c->clipped);
}

/* --deadline learn, --fit-work (node/pace.h): their keys, last in the
 * start, round and end lines; nothing without them. */
static void pace_fields(mm__trainer *tr, mm__line where)
{
    if (tr->pace)
        mm__pace_fields(tr, &tr->metrics, where);
}

/* Every metrics line begins alike: what it is, whose, when. */
static void metrics_head(mm__trainer *tr, const char *ev)
{
    mm_metrics_begin(&tr->metrics, ev);
    mm_metrics_int(&tr->metrics, "peer", tr->id);
    mm_metrics_int(&tr->metrics, "round", tr->round);
    mm_metrics_int(&tr->metrics, "step", tr->step);
    mm_metrics_num(&tr->metrics, "time", mm_time_now() - tr->t_start);
}

/* --metrics-addr: the state a scrape shows, published with each round line
 * and the end line (node/exporter.h): the same figures as the line; st
 * and links NULL keep the last round's counters. */
static void publish_live(mm__trainer *tr, double loss, double lr, const mm_transport_stats *st,
                         const mm_link_stats *links, bool ended)
{
    if (!tr->exporter)
        return;
    const mm_node_config *c = tr->cfg;
    mm__live *l = &tr->live;
    bool choco = tr->algo == &mm__algo_choco;
    l->peer = tr->id;
    l->n_peers = tr->elastic ? tr->view_n : tr->n;
    l->elastic = tr->elastic;
    l->algo = mm_algo_name(c->algo);
    l->topology = c->topology;
    l->codec = choco                     ? mm__choco_spec(tr->algo_state)
               : mm__outer_compressed(c) ? c->compress /* the all-gather's payloads */
                                         : NULL;
    l->outer[0] = 0;
    if (tr->outer)
        mm__outer_label(tr->outer, c->local_steps, l->outer, sizeof l->outer);
    l->round = tr->round + (ended ? 0 : 1);
    l->steps = tr->step;
    l->exchanges = tr->exchanges;
    if (!ended) {
        l->loss = loss;
        l->lr = lr;
    }
    l->t_compute = tr->t_compute;
    l->t_comm = tr->t_comm;
    l->t_wait = tr->t_wait;
    l->have_xi = tr->adaptive;
    l->xi_est = tr->adaptive ? mm_consensus_estimate(&tr->cc) : NAN;
    l->n_nbrs = tr->v.n_in < MM__LIVE_MAX_NBRS ? tr->v.n_in : MM__LIVE_MAX_NBRS;
    for (int k = 0; k < l->n_nbrs; k++) {
        mm__live_nbr *nb = &l->nbr[k];
        mm__peer_view pv;
        mm__refusals rf;
        nb->id = tr->v.in[k].peer;
        nb->present = tr->nbr[k].first_status == IN_READY;
        nb->dist = nb->present ? tr->nbr[k].first_dist : NAN;
        mm__mbox_peer(tr->mb, nb->id, &pv);
        nb->link = (mm__link_state)pv.state;
        mm__mbox_refusals(tr->mb, nb->id, &rf);
        nb->refused = rf.config;
    }
    if (st) /* the round line's copy: a scrape's bytes match its line */
        l->st = *st;
    l->stale_dropped = tr->stale_dropped;
    l->mix_refused = tr->mix_refused;
    l->skipped_sends = mm__mbox_skipped_sends(tr->mb);
    l->deferred_sends = mm__mbox_deferred_sends(tr->mb);
    l->alone_s = mm__isolation_alone(tr->iso, mm_time_now());
    l->isolated = l->alone_s > mm__isolation_limit(c->start_timeout_ms, c->peer_timeout_ms,
                                                   c->round_timeout_ms);
    l->choco = choco;
    if (choco)
        mm__choco_get_stats(tr->algo_state, &l->cs);
    l->clip = mm_clip_on(&tr->clip);
    l->pulls_clipped = tr->clip.clipped; /* (l->clip_radius: clip_fields) */
    l->ended = ended;
    mm__pace_live(tr, l);
    mm__exporter_publish(tr->exporter, l, links);
}

/* The accuracy per label of the validation text, when it has two labels
 * or more: {"name": accuracy, ...} over the labels with a scored position. */
static void eval_labels(mm__trainer *tr, const mm_eval_result *r)
{
    if (!r || r->n_labels < 2)
        return;
    mm_metrics *m = &tr->metrics;
    mm_metrics_obj_begin(m, "val_acc_labels");
    for (int l = 0; l < r->n_labels; l++)
        if (r->label_positions[l] > 0)
            mm_metrics_obj_named_num(m, tr->rep.shard.labels[l],
                                     (double)r->label_correct[l] / r->label_positions[l]);
    mm_metrics_obj_end(m);
}

/* The console's progress line: every --log-every rounds, and a round
 * with a neighbour missing, at most once a second for those (an async peer
 * with a neighbour gone misses it in thousands of rounds a second). */
static void log_round(mm__trainer *tr, double loss, int present, int missing)
{
    if (tr->cfg->log_every <= 0)
        return;
    if (tr->round % tr->cfg->log_every != 0) {
        double now = mm_time_now();
        if (!missing || now < tr->log_missing_at + 1.0)
            return;
        tr->log_missing_at = now;
    }
    char cc[96];
    mm__control_describe(tr, cc, sizeof cc);
    mm_info("round %ld step %ld loss %.4f | neighbours %d/%d%s%s | compute %.1fs comm %.1fs wait %.1fs",
            tr->round, tr->step, loss, present, tr->v.n_in, missing ? " (some missing)" : "", cc,
            tr->t_compute, tr->t_comm, tr->t_wait);
}

void mm__lines_eval(mm__trainer *tr, const mm_eval_result *r)
{
    const mm_node_config *c = tr->cfg;
    mm_metrics *m = &tr->metrics;
    double loss = r ? r->loss : NAN, acc = r ? r->acc : NAN;
    metrics_head(tr, "eval");
    mm_metrics_num(m, "val_loss", loss);
    mm_metrics_num(m, "val_bpb", loss / log(2.0));
    mm_metrics_num(m, "val_acc", acc);
    eval_labels(tr, r);
    mm_metrics_num(m, "norm", sqrt(mm_mix_norm2(tr->x, tr->P)));
    mm_metrics_floats(m, "sketch", tr->sketch, c->sketch_dim);
    mm_metrics_end(m);
    tr->live.have_eval = true;
    tr->live.eval_round = tr->round;
    tr->live.val_loss = loss;
    tr->live.val_acc = acc;
}

/* The transport's counters per peer (net/counters.h, MM_LINK_COUNTERS):
 * one object link_FIELD each, peer id -> count, of the peers with any
 * traffic. */
static void link_fields(mm__trainer *tr, mm_metrics *m)
{
#define MM_X(field)                                                  \
    mm_metrics_obj_begin(m, "link_" #field);                         \
    for (uint32_t j = 0; j < tr->n; j++)                             \
        if (tr->links[j].bytes_sent || tr->links[j].bytes_recv)      \
            mm_metrics_obj_int(m, j, (long long)tr->links[j].field); \
    mm_metrics_obj_end(m);
    MM_LINK_COUNTERS(MM_X)
#undef MM_X
}

/* --round-lines (docs/metrics.md, "How many round lines"): a budget of
 * MM_ROUND_LINE_BURST lines, refilled at R a second. A round whose line the
 * budget cannot pay is folded into the next line written, unless a line
 * must be there: the run's last round, a stop, and the round before an
 * evaluation or a snapshot (the report reads its counters there).
 * So a training run, whose rounds take longer than 1/R, writes every line,
 * and pure gossip at thousands of rounds a second writes R lines a second,
 * not gigabytes. */
static bool line_due(mm__trainer *tr, double now)
{
    const mm_node_config *c = tr->cfg;
    if (c->round_lines <= 0)
        return true;
    if (tr->line_filled == 0) { /* the first round line */
        tr->line_tokens = MM_ROUND_LINE_BURST;
        tr->line_filled = now;
    }
    tr->line_tokens += (now - tr->line_filled) * c->round_lines;
    if (tr->line_tokens > MM_ROUND_LINE_BURST)
        tr->line_tokens = MM_ROUND_LINE_BURST;
    tr->line_filled = now;
    long next = tr->round + 1;
    bool must = next >= c->rounds || mm__trainer_stopping(tr) || mm__eval_due(c, next) ||
                (c->snapshot_every > 0 && next % c->snapshot_every == 0);
    if (tr->line_tokens < 1 && !must)
        return false;
    tr->line_tokens = tr->line_tokens >= 1 ? tr->line_tokens - 1 : 0;
    return true;
}

void mm__lines_round(mm__trainer *tr, double loss, float lr)
{
    /* the rounds this line stands for: those folded into it, and its own */
    tr->line_rounds++;
    tr->line_exchanges += tr->exchanges;
    if (!isnan(loss)) {
        tr->line_loss_sum += loss;
        tr->line_loss_n++;
    }
    bool write = line_due(tr, mm_time_now());

    mm_transport_stats st;
    mm__mbox_stats(tr->mb, &st, tr->links, false);

    /* neighbours and distances of the round's first exchange, the one
     * every neighbour takes part in, between the states the round starts
     * from (what the snapshots hold) */
    int present = 0, missing = 0;
    uint32_t *ids = tr->ids;
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->nbr[k].first_status == IN_READY)
            ids[present++] = tr->v.in[k].peer;
    uint32_t *miss = ids + present;
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->nbr[k].first_status != IN_READY && tr->nbr[k].first_status != IN_OFF)
            miss[missing++] = tr->v.in[k].peer; /* (OFF: skipped, as both ends agreed) */

    if (!write) {
        publish_live(tr, loss, lr, &st, tr->links, false);
        log_round(tr, loss, present, missing);
        return;
    }
    mm_metrics *m = &tr->metrics;
    metrics_head(tr, "round");
    if (tr->line_rounds > 1) { /* folded rounds: their mean loss, their exchanges */
        mm_metrics_int(m, "rounds", tr->line_rounds);
        loss = tr->line_loss_n ? tr->line_loss_sum / (double)tr->line_loss_n : NAN;
    }
    mm_metrics_num(m, "loss", loss);
    mm_metrics_num(m, "lr", lr);
#define MM_X(field, line, explanation) \
    if (line == MM_CTR_ROUND)          \
        mm_metrics_int(m, #field, (long long)st.field);
    MM_TRANSPORT_COUNTERS(MM_X)
#undef MM_X
    mm_metrics_num(m, "t_compute", tr->t_compute);
    mm_metrics_num(m, "t_comm", tr->t_comm);
    mm_metrics_num(m, "t_wait", tr->t_wait);
    if (tr->cfg->jitter.kind != MM_JITTER_NONE)
        mm_metrics_num(m, "t_jitter", tr->t_jitter);
    algo_fields(tr, MM__LINE_ROUND_TIMES);
    mm_metrics_ids(m, "nbrs", ids, present);
    mm_metrics_ids(m, "missing", miss, missing);
    mm_metrics_obj_begin(m, "dist");
    for (int k = 0; k < tr->v.n_in; k++)
        if (tr->nbr[k].first_status == IN_READY && isfinite(tr->nbr[k].first_dist))
            mm_metrics_obj_num(m, tr->v.in[k].peer, tr->nbr[k].first_dist);
    mm_metrics_obj_end(m);
    mm_metrics_int(m, "exchanges", tr->exchanges);
    if (tr->line_rounds > 1)
        mm_metrics_int(m, "exchanges_since", tr->line_exchanges);
    link_fields(tr, m);
    mm__control_fields(tr, m, MM__LINE_ROUND);
    algo_fields(tr, MM__LINE_ROUND);
    clip_fields(tr, MM__LINE_ROUND);
    pace_fields(tr, MM__LINE_ROUND);
    mm_metrics_end(m);
    tr->line_rounds = 0;
    tr->line_exchanges = 0;
    tr->line_loss_sum = 0;
    tr->line_loss_n = 0;
    publish_live(tr, loss, lr, &st, tr->links, false);
    log_round(tr, loss, present, missing);
}

/* What the transport refused, by reason (docs/protocol.md, "Refusals"), so
 * that a test or an operator can compare it with what was sent: the end
 * line's counters of net/counters.h, then their sum, then the refusals. */
static void write_refusals(mm__trainer *tr, mm_metrics *m)
{
    mm_transport_stats st;
    mm__mbox_stats(tr->mb, &st, NULL, true);
    uint64_t total = 0;
#define MM_X(field, line, explanation) \
    if (line == MM_CTR_REFUSED)        \
        total += st.field;             \
    else if (line == MM_CTR_END)       \
        mm_metrics_int(m, #field, (long long)st.field);
    MM_TRANSPORT_COUNTERS(MM_X)
#undef MM_X
    mm_metrics_int(m, "refused", (long long)total);
#define MM_X(field, line, explanation) \
    if (line == MM_CTR_REFUSED)        \
        mm_metrics_int(m, #field, (long long)st.field);
    MM_TRANSPORT_COUNTERS(MM_X)
#undef MM_X
}

void mm__lines_start(mm__trainer *tr)
{
    const mm_node_config *c = tr->cfg;
    mm_metrics *m = &tr->metrics;
    mm_metrics_begin(m, "start");
    mm_metrics_int(m, "peer", tr->id);
    mm_metrics_int(m, "n_peers", tr->elastic ? tr->n_start : tr->n); /* (elastic: starting) */
    mm_metrics_int(m, "params", (long long)tr->P);
    mm_metrics_str(m, "algo", mm_algo_name(c->algo));
    mm_metrics_str(m, "topology", c->topology);
    char digest[2 * MM_SHA256_LEN + 1];
    mm_sha256_hex(mm_topo_digest(tr->topo), digest);
    mm_metrics_str(m, "topology_digest", digest);
    /* the float results depend on it (docs/metrics.md) */
    mm_metrics_str(m, "blas_kernel", mm_blas_kernel());
    mm_metrics_int(m, "sketch_dim", c->sketch_dim);
    mm_metrics_int(m, "sketch_seed", (long long)c->sketch_seed);
    mm_metrics_int(m, "resumed_round", tr->round);
    if (c->resume) /* a peer that started fresh in a resumed run: murmur report flags it */
        mm_metrics_str(m, "resume", tr->resumed_fresh ? "fresh" : "checkpoint");
    mm_metrics_int(m, "local_steps", c->local_steps);
    if (c->train.adamw.accum_steps > 1) /* --adam-accum: Decent-DP's AccumAdamW */
        mm_metrics_int(m, "adam_accum", c->train.adamw.accum_steps);
    mm_metrics_int(m, "gossip_steps", c->gossip_steps);
    mm_metrics_int(m, "exchange_stride", (long long)tr->stride);
    mm__control_fields(tr, m, MM__LINE_START);
    algo_fields(tr, MM__LINE_START);
    if (tr->elastic) { /* docs/membership.md */
        mm_metrics_str(m, "family", mm_topo_family_name(mm_topo_family_kind(tr->topo)));
        mm_metrics_int(m, "start_peers", tr->n_start);
        mm_metrics_int(m, "max_peers", tr->n);
        mm_metrics_int(m, "view_delay", c->view_delay);
        mm_metrics_int(m, "suspect_ms", c->suspect_ms);
        if (tr->joined_round >= 0)
            mm_metrics_int(m, "joined_round", tr->joined_round);
    }
    pace_fields(tr, MM__LINE_START);
    if (tr->have_model) {
        /* what it takes to evaluate a snapshot offline (murmur report) */
        mm_metrics_int(m, "layers", c->train.model.n_layer);
        mm_metrics_int(m, "width", c->train.model.d_model);
        mm_metrics_int(m, "heads", c->train.model.n_head);
        mm_metrics_int(m, "ctx", c->train.model.n_ctx);
        mm_metrics_int(m, "batch", c->train.batch);
        mm_metrics_int(m, "eval_windows", c->eval_windows);
        if (c->train.data_dir) /* (pure gossip without a corpus: nothing to evaluate with) */
            mm_metrics_str(m, "data", c->train.data_dir);
        mm_metrics_str(m, "partition", mm_partition_name(&c->train.partition));
    }
    mm_metrics_num(m, "time", 0);
    mm_metrics_end(m);
}

void mm__lines_view(mm__trainer *tr, const uint32_t *ids, uint32_t n, uint32_t tag,
                    const mm_member_change *ch, uint32_t n_ch)
{
    mm_metrics *m = &tr->metrics;
    metrics_head(tr, "view");
    mm_metrics_int(m, "members_n", n);
    mm_metrics_ids(m, "members", ids, (int)n);
    char hex[16];
    snprintf(hex, sizeof hex, "%08x", tag);
    mm_metrics_str(m, "tag", hex);
    static const char *const what[] = {"", "joined", "left", "removed"};
    for (int w = MM_CHANGE_JOINED; w <= MM_CHANGE_REMOVED; w++) {
        uint32_t list[64];
        int k = 0;
        for (uint32_t i = 0; i < n_ch && k < 64; i++)
            if (ch[i].what == w)
                list[k++] = ch[i].id;
        mm_metrics_ids(m, what[w], list, k);
    }
    mm_metrics_end(m);
    tr->live.view_n = n;
    tr->live.view_changes++;
}

/* Mixed with none of its neighbours for too long (isolation.h): the
 * warning is logged; this line says the same in the metrics. */
void mm__lines_isolated(mm__trainer *tr)
{
    mm_metrics *m = &tr->metrics;
    metrics_head(tr, "isolated");
    double now = mm_time_now();
    mm__isolation_fields(tr->iso, tr->mb, m, MM__VERDICT_OK, mm__isolation_alone(tr->iso, now),
                         now);
    mm_metrics_end(m);
}

/* reason: why it stopped (done, signal, nonfinite, or the algorithm's name
 * when its round failed: allreduce). A peer that stopped
 * on its own or on a signal but could not mix (isolation.h) ends `refused`
 * or `isolated` instead, with status 3 or 4 unless an error already set 1. */
void mm__lines_end(mm__trainer *tr, const char *reason)
{
    long peak_kib = mm_peak_rss_kib();
    mm_metrics *m = &tr->metrics;
    double now = mm_time_now();
    /* nonfinite and allreduce are errors of their own: no verdict over
     * them, but for a round that failed because a neighbour was refused
     * for a configuration that differs (an all-reduce partner with another
     * --allreduce-chunk): that is the run's verdict, refused (status 3) */
    bool judged = !strcmp(reason, "done") || !strcmp(reason, "signal") || !strcmp(reason, "left");
    bool failed = tr->round_error[0] != 0;
    mm__isolation_verdict v = judged || failed ? mm__isolation_verdict_at(tr->iso, tr->mb, now)
                                               : MM__VERDICT_OK;
    if (failed && v != MM__VERDICT_REFUSED)
        v = MM__VERDICT_OK;
    if (failed && v == MM__VERDICT_REFUSED)
        tr->exit_status = MM_EXIT_REFUSED;
    metrics_head(tr, "end");
    if (v != MM__VERDICT_OK) {
        mm_metrics_str(m, "reason", v == MM__VERDICT_REFUSED ? "refused" : "isolated");
        mm_metrics_str(m, "stopped", reason);
    } else {
        mm_metrics_str(m, "reason", reason);
    }
    if (tr->round_error[0])
        mm_metrics_str(m, "error", tr->round_error);
    mm_metrics_int(m, "max_rss_kb", peak_kib);
    struct timespec cpu;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0) /* every thread's */
        mm_metrics_num(m, "cpu_s", (double)cpu.tv_sec + 1e-9 * (double)cpu.tv_nsec);
    mm_metrics_int(m, "skipped_sends", (long long)mm__mbox_skipped_sends(tr->mb));
    mm_metrics_int(m, "deferred_sends", (long long)mm__mbox_deferred_sends(tr->mb));
    mm_metrics_int(m, "stale_dropped", (long long)tr->stale_dropped);
    mm_metrics_int(m, "mix_refused", (long long)tr->mix_refused);
    algo_fields(tr, MM__LINE_END);
    clip_fields(tr, MM__LINE_END);
    if (tr->el)
        mm__elastic_fields(tr->el, m);
    pace_fields(tr, MM__LINE_END);
    write_refusals(tr, m);
    mm__isolation_fields(tr->iso, tr->mb, m, v, -1, now);
    mm_metrics_end(m);
    publish_live(tr, NAN, NAN, NULL, NULL, true);
    mm__isolation_log_verdict(tr->iso, tr->mb, v, now);
    if (v != MM__VERDICT_OK && !tr->exit_status)
        tr->exit_status = v == MM__VERDICT_REFUSED ? MM_EXIT_REFUSED : MM_EXIT_ISOLATED;
    mm_info("done: round %ld, step %ld, %.1fs (compute %.1fs, comm %.1fs, wait %.1fs), peak RSS %ld MiB",
            tr->round, tr->step, mm_time_now() - tr->t_start, tr->t_compute, tr->t_comm, tr->t_wait,
            peak_kib / 1024);
}

