/* Placeholder until this command lands. */
#include <stdio.h>
#include "node/commands.h"

int cmd_topo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "murmur topo: not built yet\n");
    return 2;
}
