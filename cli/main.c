/* murmur: a peer node for decentralized (gossip) training.
 * This file only dispatches to the subcommands in cli/cmd_*.c. */
#include <stdio.h>
#include <string.h>

#include "model/blas_env.h"
#include "cli/commands.h"
#include "cli/version.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    int heavy_blas; /* worth re-executing for the right OpenBLAS kernel */
} commands[] = {
    {"train", cmd_train, "train one replica alone (no gossip)", 1},
    {"generate", cmd_generate, "sample text from a checkpoint", 1},
    {"node", cmd_node, "run one peer: train and gossip with its neighbours", 1},
    {"topo", cmd_topo, "generate topology files and print their spectral facts", 0},
    {"report", cmd_report, "merge a run's metrics: consensus distance vs accuracy", 0},
    {"data-prepare", cmd_data_prepare, "prepare a corpus: Brown, or your own text (--text)", 0},
    {"data-info", cmd_data_info, "print how a partition splits the corpus across peers", 0},
    {"watch", cmd_watch, "a live page of a run or a sweep, in your browser", 0},
    {"plan", cmd_plan, "predict the time per round of a run (and calibrate it here)", 1},
    /* Hidden (no summary): used by scripts/fetch-brown.sh and the tests. */
    {"data-verify", cmd_data_verify, NULL, 0},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: murmur [--help] [--version] COMMAND [ARGS]\n\n"
                 "murmur trains replicas of a small transformer on many peers that\n"
                 "average their parameters with their neighbours over TCP (gossip).\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].summary)
            fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'murmur COMMAND --help' describes each command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("murmur %s\n", MURMUR_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (!strcmp(argv[1], commands[i].name)) {
            if (commands[i].heavy_blas)
                mm_blas_fix_kernel(argc, argv);
            return commands[i].run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "murmur: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
