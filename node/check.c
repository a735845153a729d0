/* A peer's configuration, checked once before anything starts: the one
 * check that murmur node's start, its --dry-run (and so sweep.sh --check)
 * and murmur plan all make, so that none of them accepts what another
 * refuses (docs/node.md, "Checked at start"). Nothing here opens a socket
 * or a file other than the topology, or allocates a model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jitter.h"
#include "gossip/codec.h"
#include "model/model.h"
#include "node/algo_choco.h"
#include "node/algo_outer.h"
#include "node/allreduce.h"
#include "node/node_int.h"
#include "node/trainer.h"

#define FAIL(...) (snprintf(err, errlen, __VA_ARGS__), -1)

/* The three ways to set a round's exchanges exclude each other (and the
 * adaptive one excludes --compress); flags that bound another need it. */
static int check_consensus(const mm_node_config *c, char *err, size_t errlen)
{
    const mm_node_given *g = &c->given;
    if (c->gossip_schedule.n && g->gossip_steps)
        return FAIL("give --gossip-steps or --gossip-steps-schedule, not both");
    if (c->consensus_target > 0 && (g->gossip_steps || c->gossip_schedule.n))
        return FAIL("--consensus-target chooses the gossip steps itself: drop --gossip-steps "
                    "and --gossip-steps-schedule");
    if (c->consensus_target > 0 && c->algo != MM_ALGO_DPSGD)
        return FAIL("--consensus-target needs --algo dpsgd (neighbours agree on every "
                    "exchange)");
    if (g->max_gossip_steps && !(c->consensus_target > 0))
        return FAIL("--max-gossip-steps bounds --consensus-target, which is not given");
    if (g->min_gossip_steps && !(c->consensus_target > 0))
        return FAIL("--min-gossip-steps bounds --consensus-target, which is not given");
    if (c->clip_pull > 0 && c->robust_clip > 0)
        return FAIL("give --clip-pull X (a fixed radius) or --robust-clip F (one from the "
                    "neighbour distances), not both");
    if ((c->clip_pull > 0 || c->robust_clip > 0) && c->algo == MM_ALGO_ALLREDUCE)
        return FAIL("--clip-pull and --robust-clip bound gossip pulls; --algo allreduce "
                    "mixes none");
    if (c->consensus_target > 0 && c->compress)
        return FAIL("--consensus-target and --compress do not combine yet (consensus control "
                    "drops edges for an exchange, which would leave CHOCO's public copies "
                    "behind)");
    return 0;
}

/* A flag of one algorithm given with another is refused, whatever its
 * value, as --outer-lr without --outer is: it would be ignored, and the
 * run would not be the one the command line describes. */
static int check_applies(const mm_node_config *c, char *err, size_t errlen)
{
    const mm_node_given *g = &c->given;
    const char *algo = mm_algo_name(c->algo);
    if (c->algo != MM_ALGO_ALLREDUCE && (g->allreduce_chunk || g->allreduce_schedule))
        return FAIL("%s shapes the all-reduce: it needs --algo allreduce (this is --algo %s)",
                    g->allreduce_chunk ? "--allreduce-chunk" : "--allreduce-schedule", algo);
    if (c->algo != MM_ALGO_ASYNC && g->staleness)
        return FAIL("--staleness bounds the age of the copies async mixes: it needs --algo "
                    "async (this is --algo %s)", algo);
    if (c->algo == MM_ALGO_ALLREDUCE && (g->gossip_steps || c->gossip_schedule.n))
        return FAIL("--gossip-steps and --gossip-steps-schedule count gossip exchanges: "
                    "--algo allreduce has none (a round is one all-reduce)");
    if (g->choco_memory_mb && !c->compress)
        return FAIL("--choco-memory-mb bounds --compress's public copies, which is not given");
    if (c->vector_len > 0 && !c->no_train)
        return FAIL("--vector-len gossips a plain vector: it needs --no-train");
    if (c->consensus_step > 0 && (!c->compress || c->algo == MM_ALGO_ALLREDUCE))
        return FAIL("--consensus-step is CHOCO's gamma: it needs --compress over gossip (not "
                    "--algo allreduce)");
    return 0;
}

/* The outer optimizer's flags: values the table cannot bound, and the
 * combinations it does not run (docs/outer.md). */
static int check_outer(const mm_node_config *c, char *err, size_t errlen)
{
    const mm_node_given *g = &c->given;
    const mm_outer_config *o = &c->outer_cfg;
    bool ar = c->algo == MM_ALGO_ALLREDUCE;
    bool gather = c->outer && ar && c->compress && strcmp(c->compress, "fp32");
    if (!c->outer && (g->outer_lr || g->outer_momentum || g->outer_warmup || g->outer_decay ||
                      g->outer_memory_mb || c->outer_overlap || g->outer_ef_decay ||
                      g->outer_fragments))
        return FAIL("--outer-lr, --outer-momentum, --outer-momentum-warmup, "
                    "--outer-momentum-decay, --outer-ef-decay, --outer-fragments, "
                    "--outer-overlap and --outer-memory-mb need --outer nesterov");
    if (!c->outer && ar && c->compress)
        return FAIL("--compress with --algo allreduce compresses the outer exchange: it needs "
                    "--outer nesterov");
    if (!gather && c->allreduce_schedule == MM_AR_ALLGATHER)
        return FAIL("--allreduce-schedule allgather carries compressed pseudo-gradients: it "
                    "needs --outer nesterov --compress CODEC (not fp32)");
    if (!c->outer)
        return 0;
    if (g->noloco_gamma && o->kind != MM_OUTER_NOLOCO)
        return FAIL("--noloco-gamma is NoLoCo's: it needs --outer noloco");
    if (o->kind == MM_OUTER_NOLOCO && g->noloco_gamma && !(o->gamma > 0))
        return FAIL("--noloco-gamma must be > 0, not %g", o->gamma);
    if (o->kind == MM_OUTER_NOLOCO && c->algo != MM_ALGO_DPSGD)
        return FAIL("--outer noloco averages with gossip partners: it runs over --algo dpsgd, "
                    "not %s (an all-reduce leaves no disagreement for its gamma term)",
                    mm_algo_name(c->algo));
    if (o->kind == MM_OUTER_NOLOCO && (c->compress || c->outer_overlap))
        return FAIL("--outer noloco runs its local steps first and sends one fp32 vector: drop "
                    "--compress and --outer-overlap");
    if (c->outer_fragments > 1 && (o->kind == MM_OUTER_NOLOCO || c->compress))
        return FAIL("--outer-fragments runs with --outer nesterov on fp32 vectors: drop "
                    "--compress (and --outer noloco)");
    if (!(o->lr > 0))
        return FAIL("--outer-lr must be > 0, not %g", o->lr);
    if (!(o->momentum < 1))
        return FAIL("--outer-momentum must be in [0, 1), not %g", o->momentum);
    if (c->algo == MM_ALGO_ASYNC || c->algo == MM_ALGO_PUSHSUM)
        return FAIL("--outer nesterov runs over --algo dpsgd or allreduce, not %s (its outer "
                    "step needs a synchronous average of the round)", mm_algo_name(c->algo));
    if (c->no_train)
        return FAIL("--outer nesterov needs training: drop --no-train");
    if (gather && g->allreduce_schedule && c->allreduce_schedule != MM_AR_ALLGATHER &&
        c->allreduce_schedule != MM_AR_AUTO)
        return FAIL("--compress %s over --algo allreduce all-gathers the compressed "
                    "pseudo-gradients: drop --allreduce-schedule (or give allgather)",
                    c->compress);
    if (g->outer_ef_decay && !gather)
        return FAIL("--outer-ef-decay is the error feedback of --algo allreduce with --compress "
                    "CODEC (not fp32)");
    if (g->outer_ef_decay && !(c->outer_ef_decay > 0))
        return FAIL("--outer-ef-decay must be in (0, 1], not %g", c->outer_ef_decay);
    if (c->compress && !ar && c->outer_overlap)
        return FAIL("--outer nesterov over --compress (CHOCO's public copies) takes the local "
                    "steps first: drop --outer-overlap");
    if (c->consensus_target > 0 || c->gossip_schedule.n || c->gossip_steps > 1)
        return FAIL("--outer nesterov runs one exchange a round: drop --gossip-steps, "
                    "--gossip-steps-schedule and --consensus-target");
    return 0;
}

/* --deadline learn and --fit-work: the algorithms they serve (docs/node.md,
 * "Uneven peers"). */
static int check_uneven(const mm_node_config *c, char *err, size_t errlen)
{
    const char *why = NULL;
    bool waits = c->algo == MM_ALGO_DPSGD || c->algo == MM_ALGO_PUSHSUM;
    if (c->deadline_learn && !waits)
        why = "--deadline learn bounds the wait of --algo dpsgd or pushsum (async never waits; "
              "an all-reduce cannot go on without a peer)";
    else if (c->fit_work && !waits)
        why = "--fit-work needs --algo dpsgd or pushsum (it acts on being left behind, which "
              "only a synchronous round sees)";
    else if (c->fit_work && c->no_train)
        why = "--fit-work fits training to the time: drop --no-train";
    else if ((c->fit_work & MM_FIT_STEPS) &&
             (c->algo != MM_ALGO_DPSGD || c->compress || c->outer || c->consensus_target > 0))
        why = "--fit-work steps needs plain --algo dpsgd (no --compress, --outer or "
              "--consensus-target: its local progress is scaled before the mix)";
    else if (c->fit_min_batch > c->train.batch)
        why = "--fit-min-batch is above --batch";
    else if (c->fit_max_steps && c->fit_max_steps < c->local_steps)
        why = "--fit-max-steps is below --local-steps";
    return why ? FAIL("%s", why) : 0;
}

/* What an elastic run does not run (docs/node.md, "Elastic runs"). */
static int check_elastic(const mm_node_config *c, uint32_t n_start, char *err, size_t errlen)
{
    const char *why = NULL;
    if (c->algo == MM_ALGO_ALLREDUCE)
        why = "--algo allreduce is not elastic: every all-reduce step needs every member, and "
              "one lost member ends it for all; use dpsgd, async or pushsum (with --outer "
              "nesterov for DiLoCo's outer step over gossip)";
    else if (c->compress)
        why = "--compress is not elastic yet: CHOCO's public copies would need a RESET "
              "protocol for every new link";
    else if (c->consensus_target > 0)
        why = "--consensus-target is not elastic: its estimator is built from the spectrum of "
              "one fixed graph";
    else if ((uint32_t)c->max_peers < n_start)
        why = "--max-peers is below the topology's starting members";
    if (why)
        return FAIL("%s (%s is a family file: an elastic run)", why, c->topology);
    if (c->id < 0 || c->id >= c->max_peers)
        return FAIL("peer id %d is not below --max-peers %d", c->id, c->max_peers);
    if ((uint32_t)c->id >= n_start && !c->join)
        return FAIL("peer %d is not one of the %u starting members of %s: a later member "
                    "joins a running run with --join IP:PORT (any member's address)", c->id,
                    n_start, c->topology);
    return 0;
}

/* The topology against the command line: the number of peers, the id, the
 * algorithm for this W; a family file's elastic run (docs/membership.md). */
static int check_topology(const mm_node_config *c, const mm_topology *t, char *err,
                          size_t errlen)
{
    uint32_t n = (uint32_t)mm_topo_n(t);
    if (c->n_peers && (uint32_t)c->n_peers != n)
        return FAIL("%d peers given, but %s has %u", c->n_peers, c->topology, n);
    if (mm_topo_family(t)) {
        if (check_elastic(c, n, err, errlen) != 0)
            return -1;
    } else if (c->join) {
        return FAIL("--join needs an elastic run: %s lists fixed peers and edges, which say "
                    "nothing of a peer that joins; use a family file (`family ring`, murmur "
                    "topo gen ring -n N --family; docs/membership.md)", c->topology);
    } else if (c->max_peers != MM_MAX_PEERS_DEFAULT || c->view_delay != MM_VIEW_DELAY_DEFAULT) {
        return FAIL("%s sizes an elastic run's view: %s lists fixed peers (a family file makes "
                    "a run elastic: docs/membership.md)",
                    c->max_peers != MM_MAX_PEERS_DEFAULT ? "--max-peers" : "--view-delay",
                    c->topology);
    } else if (c->id < 0 || (uint32_t)c->id >= n) {
        return FAIL("peer id %d is not in 0..%u", c->id, n - 1);
    }
    uint32_t ids = mm_topo_family(t) ? (uint32_t)c->max_peers : n;
    if (mm_slowdown_max_peer(&c->lab) >= (long)ids)
        return FAIL("--lab-slow or --lab-stretch names peer %ld, but %s has peers 0..%u",
                    mm_slowdown_max_peer(&c->lab), c->topology, ids - 1);
    /* the launchers' rule and words (scripts/launch-lib.sh, check_topology) */
    if (c->algo != MM_ALGO_PUSHSUM && mm_topo_needs_pushsum(t))
        return FAIL("%s is a directed graph whose W is column-stochastic only: only --algo "
                    "pushsum averages correctly on it (--algo %s would drift to a weighted "
                    "average); add --algo pushsum", c->topology, mm_algo_name(c->algo));
    return 0;
}

/* What needs the topology and the vector's length: the all-reduce's
 * schedule for n peers, consensus control on this graph, the memory
 * budgets of --compress and --outer. 0, or the exit status. */
static int check_run(const mm_node_config *c, const mm_topology *t, uint32_t n, char *err,
                     size_t errlen)
{
    size_t P = c->vector_len > 0 ? (size_t)c->vector_len
                                 : mm_model_param_count(&c->train.model);
    uint32_t id = c->id > 0 ? (uint32_t)c->id : 0;
    if (c->algo == MM_ALGO_ALLREDUCE &&
        mm_allreduce_schedule_check(c->allreduce_schedule, n, err, errlen) != 0)
        return MM_EXIT_USAGE;
    int status = 0;
    if (t && (status = mm__control_check(c, t, id, err, errlen)) != 0)
        return status;
    bool choco = c->compress && c->algo != MM_ALGO_ALLREDUCE; /* (else the outer exchange's) */
    if (t && choco && (status = mm__choco_budget(c, t, id, P, err, errlen)) != 0)
        return status;
    mm_codec_spec spec;
    if (c->compress && !choco && mm_codec_parse(c->compress, &spec, err, errlen) != 0)
        return MM_EXIT_USAGE;
    if (c->outer && (status = mm__outer_budget(c, P, n, err, errlen)) != 0)
        return status;
    char text[MM_WIRE_SETTINGS_MAX + 1];
    if (mm_node_settings(c, text, sizeof text) < 0) {
        snprintf(err, errlen, "the settings every peer must share do not fit the HELLO's %d "
                 "bytes (docs/protocol.md 3.1): a shorter --gossip-steps-schedule?",
                 MM_WIRE_SETTINGS_MAX);
        return MM_EXIT_USAGE;
    }
    return 0;
}

int mm__node_check(const mm_node_config *c, mm_topology **topo, char *err, size_t errlen)
{
    *topo = NULL;
    if (check_applies(c, err, errlen) != 0 || check_consensus(c, err, errlen) != 0 ||
        check_outer(c, err, errlen) != 0 || check_uneven(c, err, errlen) != 0)
        return MM_EXIT_USAGE;
    uint32_t n = (uint32_t)(c->n_peers > 0 ? c->n_peers : 1);
    if (c->topology) {
        if (!(*topo = mm_topo_load(c->topology, err, errlen)))
            return MM_EXIT_USAGE;
        if (check_topology(c, *topo, err, errlen) != 0)
            return MM_EXIT_USAGE;
        n = (uint32_t)mm_topo_n(*topo);
    }
    return check_run(c, *topo, n, err, errlen);
}

int mm_node_config_check(const mm_node_config *c, char *err, size_t errlen)
{
    mm_topology *t;
    int rc = mm__node_check(c, &t, err, errlen);
    mm_topo_free(t);
    return rc;
}
