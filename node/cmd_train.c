/* Placeholder until this command lands. */
#include <stdio.h>
#include "node/commands.h"

int cmd_train(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "murmur train: not built yet\n");
    return 2;
}
