/* Placeholder until this command lands. */
#include <stdio.h>
#include "node/commands.h"

int cmd_report(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "murmur report: not built yet\n");
    return 2;
}
