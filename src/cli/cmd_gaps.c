/* cmd_gaps.c — placeholder until the verb lands. */
#include "cli/commands.h"

#include <stdio.h>

int cmd_gaps(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tally gaps: not built yet\n");
    return 2;
}
