/* A peer's configuration before it starts (node/check.c, node/settings.c):
 *   - the HELLO's settings text, byte for byte, for the configurations of
 *     docs/protocol.md 3.1's table (the text is the protocol: a change
 *     here is a change of the wire), and that every one keeps the text's
 *     rules;
 *   - mm_node_config_check, the one check of murmur node's start, its
 *     --dry-run and murmur plan: the flags refused where they do not apply
 *     (before, --staleness, --allreduce-chunk, --allreduce-schedule,
 *     --choco-memory-mb and --outer-memory-mb were ignored, and
 *     --gossip-steps with --algo allreduce), and the start's refusals the
 *     dry run used to let through (--consensus-target on a one-peer
 *     exponential graph, --outer-memory-mb below the outer state). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/wire.h"
#include "node/node.h"

static char topo_ring4[64], topo_onepeer8[64];

static mm_node_config base(void)
{
    mm_node_config c;
    mm_node_config_defaults(&c);
    c.id = 0;
    c.topology = topo_ring4;
    c.plaintext = true;
    c.train.adamw.total_steps = c.rounds * c.local_steps;
    return c;
}

static void expect_settings(const mm_node_config *c, const char *want)
{
    char text[MM_WIRE_SETTINGS_MAX + 1], why[200];
    int len = mm_node_settings(c, text, sizeof text);
    assert_int_equal(len, (int)strlen(want));
    assert_string_equal(text, want);
    assert_int_equal(mm_wire_settings_check(text, (size_t)len, why, sizeof why), 0);
}

static void settings_text(void **s)
{
    (void)s;
    mm_node_config c = base();
    expect_settings(&c, "ctx=64\ngossip-steps=1\nheads=4\nlayers=4\nlocal-steps=1\nouter=none\n"
                        "partition=iid\nseed=1\nwidth=128\n");
    /* the demo model of docs/protocol.md 3.1 */
    c.train.model.n_layer = 2;
    c.train.model.d_model = 64;
    assert_int_equal(mm_partition_parse("genre", &c.train.partition, NULL, 0), 0);
    expect_settings(&c, "ctx=64\ngossip-steps=1\nheads=4\nlayers=2\nlocal-steps=1\nouter=none\n"
                        "partition=genre\nseed=1\nwidth=64\n");
    /* DiLoCo with a decay: the schedule's run length, the floats shortest */
    c = base();
    c.algo = MM_ALGO_ALLREDUCE;
    c.outer = true;
    c.outer_cfg.lr = 0.3f;
    c.outer_cfg.warmup = 20;
    c.outer_overlap = true;
    c.rounds = 100;
    char err[200];
    assert_int_equal(mm_outer_parse_decay("cosine:0.75", &c.outer_cfg, err, sizeof err), 0);
    c.local_steps = 4;
    expect_settings(&c, "allreduce-chunk=65536\nctx=64\nheads=4\nlayers=4\nlocal-steps=4\n"
                        "outer=nesterov\nouter-lr=0.3\nouter-momentum=0.5\n"
                        "outer-momentum-decay=cosine:0.75\nouter-momentum-warmup=20\n"
                        "outer-overlap\npartition=iid\nrounds=100\nseed=1\nwidth=128\n");
    /* pure gossip, compressed: no model, no data; the codec's canonical
     * spec and the gamma it resolves to */
    c = base();
    c.no_train = true;
    c.same_init = false;
    c.vector_len = 1000;
    c.compress = "topk:1e-2";
    assert_int_equal(mm_steps_schedule_parse("0:4,300:1", 1000, &c.gossip_schedule, err,
                                             sizeof err), 0);
    expect_settings(&c, "compress=topk:0.01\nconsensus-step=0.02\n"
                        "gossip-steps-schedule=0:4,300:1\nno-train\nouter=none\n");
    /* consensus control; a Dirichlet partition with the seed it draws from */
    c = base();
    c.consensus_target = 0.3;
    c.min_gossip_steps = 0.25;
    c.same_init = false;
    assert_int_equal(mm_partition_parse("dirichlet:0.1", &c.train.partition, err, sizeof err), 0);
    c.train.partition.seed = 7;
    expect_settings(&c, "ctx=64\ndifferent-init\nheads=4\nlayers=4\n"
                        "local-steps=1\nmax-gossip-steps=8\nmin-gossip-steps=0.25\nouter=none\n"
                        "partition=dirichlet:0.1:7\nwidth=128\n");
    /* NoLoCo and fragments; an elastic run's table size and delay when
     * not their defaults; the all-reduce's compressed outer exchange
     * (its error feedback, no CHOCO gamma) */
    c = base();
    c.outer = true;
    c.outer_cfg.kind = MM_OUTER_NOLOCO;
    c.outer_cfg.lr = 0.7f;
    c.outer_cfg.gamma = 0.7f;
    c.outer_cfg.momentum = 0.5f;
    c.max_peers = 64;
    c.view_delay = 4;
    expect_settings(&c, "ctx=64\ngossip-steps=1\nheads=4\nlayers=4\nlocal-steps=1\n"
                        "max-peers=64\nnoloco-gamma=0.7\nouter=noloco\nouter-lr=0.7\n"
                        "outer-momentum=0.5\nouter-momentum-decay=none\nouter-momentum-warmup=0\n"
                        "partition=iid\nseed=1\nview-delay=4\nwidth=128\n");
    c = base();
    c.algo = MM_ALGO_ALLREDUCE;
    c.outer = true;
    c.outer_fragments = 4;
    c.compress = "int8:256";
    c.outer_ef_decay = 0.9f;
    expect_settings(&c, "allreduce-chunk=65536\ncompress=int8:256\nctx=64\nheads=4\nlayers=4\n"
                        "local-steps=1\nouter=nesterov\nouter-ef-decay=0.9\nouter-fragments=4\n"
                        "outer-lr=0.7\nouter-momentum=0.5\nouter-momentum-decay=none\n"
                        "outer-momentum-warmup=0\npartition=iid\nseed=1\nwidth=128\n");
    /* what may differ is not in it */
    mm_node_config d = base();
    d.train.adamw.lr_max = 1e-2f;
    d.train.batch = 3;
    d.train.threads = 2;
    d.round_timeout_ms = 1;
    d.staleness = 3;
    d.clip_pull = 5;
    d.rounds = 7;
    d.eval_every = 1;
    expect_settings(&d, "ctx=64\ngossip-steps=1\nheads=4\nlayers=4\nlocal-steps=1\nouter=none\n"
                        "partition=iid\nseed=1\nwidth=128\n");
    /* too long for the HELLO: refused, not cut (the flags' own bounds keep
     * a text under 2048 bytes: the longest schedule the parser takes is
     * 64 entries of at most 19 + 1 + 4 digits; this one is past them) */
    c = base();
    c.gossip_schedule.n = MM_STEPS_SCHEDULE_MAX;
    for (int i = 0; i < MM_STEPS_SCHEDULE_MAX; i++) {
        c.gossip_schedule.from[i] = i ? 1000000000000000000L + i : 0;
        c.gossip_schedule.steps[i] = 2000000000;
    }
    char text[MM_WIRE_SETTINGS_MAX + 1];
    assert_int_equal(mm_node_settings(&c, text, sizeof text), -1);
    assert_int_equal(mm_node_config_check(&c, err, sizeof err), 2);
    assert_non_null(strstr(err, "do not fit the HELLO"));
}

/* c refused by the check, with why containing want. */
static void refused(const mm_node_config *c, const char *want)
{
    char err[512] = "";
    int rc = mm_node_config_check(c, err, sizeof err);
    if (rc != 2 || !strstr(err, want))
        fail_msg("expected exit 2 and '%s', got %d: '%s'", want, rc, err);
}

static void accepted(const mm_node_config *c)
{
    char err[512] = "";
    int rc = mm_node_config_check(c, err, sizeof err);
    if (rc != 0)
        fail_msg("refused: %s", err);
}

static void flags_that_do_not_apply(void **s)
{
    (void)s;
    mm_node_config c = base();
    accepted(&c);
    c.given.staleness = true;
    refused(&c, "--staleness bounds the age of the copies async mixes: it needs --algo async "
                "(this is --algo dpsgd)");
    c.algo = MM_ALGO_ASYNC;
    accepted(&c);
    c = base();
    c.given.allreduce_chunk = true;
    refused(&c, "--allreduce-chunk shapes the all-reduce: it needs --algo allreduce");
    c.algo = MM_ALGO_ALLREDUCE;
    accepted(&c);
    c = base();
    c.given.allreduce_schedule = true;
    c.algo = MM_ALGO_PUSHSUM;
    refused(&c, "--allreduce-schedule shapes the all-reduce: it needs --algo allreduce (this is "
                "--algo pushsum)");
    c = base();
    c.algo = MM_ALGO_ALLREDUCE;
    c.given.gossip_steps = true;
    refused(&c, "--gossip-steps and --gossip-steps-schedule count gossip exchanges: --algo "
                "allreduce has none");
    c = base();
    c.given.choco_memory_mb = true;
    refused(&c, "--choco-memory-mb bounds --compress's public copies, which is not given");
    c.compress = "int8";
    accepted(&c);
    c = base();
    c.given.outer_memory_mb = true;
    refused(&c, "need --outer nesterov");
    /* the ones refused before, in the same words */
    c = base();
    c.given.outer_lr = true;
    refused(&c, "need --outer nesterov");
    c = base();
    c.vector_len = 10;
    refused(&c, "--vector-len gossips a plain vector: it needs --no-train");
    c = base();
    c.consensus_step = 0.5;
    refused(&c, "--consensus-step is CHOCO's gamma: it needs --compress");
    c = base();
    c.outer = true;
    c.algo = MM_ALGO_ASYNC;
    refused(&c, "--outer nesterov runs over --algo dpsgd or allreduce, not async");
    c.algo = MM_ALGO_DPSGD;
    c.gossip_steps = 3;
    refused(&c, "--outer nesterov runs one exchange a round");
}

/* What the start refused and --dry-run let through: now one check. */
static void start_checks_in_the_check(void **s)
{
    (void)s;
    mm_node_config c = base();
    c.topology = topo_onepeer8;
    c.consensus_target = 0.3;
    refused(&c, "--consensus-target needs a topology whose every round is undirected");
    c = base();
    c.outer = true;
    c.outer_memory_mb = 1;
    refused(&c, "--outer-memory-mb 1: the outer optimizer's state (3 vectors of 834304 floats");
    c = base();
    c.compress = "int8";
    c.choco_memory_mb = 1;
    refused(&c, "over --choco-memory-mb 1");
    c = base();
    c.algo = MM_ALGO_ALLREDUCE;
    c.allreduce_schedule = 1; /* halving */
    c.n_peers = 0;
    c.topology = NULL; /* murmur plan --peers 6: no topology */
    c.n_peers = 6;
    refused(&c, "--allreduce-schedule halving needs a power of two of peers, not 6");
    c.n_peers = 8;
    accepted(&c);
    c = base();
    c.id = 4;
    refused(&c, "peer id 4 is not in 0..3");
    c = base();
    c.n_peers = 5;
    refused(&c, "5 peers given, but");
}

int main(void)
{
    const char *dir = getenv("MURMUR_TOPOLOGIES");
    snprintf(topo_ring4, sizeof topo_ring4, "%s/ring-4.topo", dir ? dir : "topologies");
    snprintf(topo_onepeer8, sizeof topo_onepeer8, "%s/onepeer-exp-8.topo",
             dir ? dir : "topologies");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(settings_text),
        cmocka_unit_test(flags_that_do_not_apply),
        cmocka_unit_test(start_checks_in_the_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
