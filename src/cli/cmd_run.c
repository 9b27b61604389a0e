/* cmd_run.c — placeholder until the verb lands. */
#include "cli/commands.h"

#include <stdio.h>

int cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tally run: not built yet\n");
    return 2;
}
