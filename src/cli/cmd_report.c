/* cmd_report.c — placeholder until the verb lands. */
#include "cli/commands.h"

#include <stdio.h>

int cmd_report(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tally report: not built yet\n");
    return 2;
}
