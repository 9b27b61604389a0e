/* cmd_ops.c — placeholder until the verb lands. */
#include "cli/commands.h"

#include <stdio.h>

int cmd_ops(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tally ops: not built yet\n");
    return 2;
}
