/* cmd_export.c — placeholder until the verb lands. */
#include "cli/commands.h"

#include <stdio.h>

int cmd_export(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tally export: not built yet\n");
    return 2;
}
