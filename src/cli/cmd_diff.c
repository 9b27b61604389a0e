/* cmd_diff.c — placeholder until the verb lands. */
#include "cli/commands.h"

#include <stdio.h>

int cmd_diff(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tally diff: not built yet\n");
    return 2;
}
