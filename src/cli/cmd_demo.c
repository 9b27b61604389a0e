/* cmd_demo.c — placeholder until the verb lands. */
#include "cli/commands.h"

#include <stdio.h>

int cmd_demo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tally demo: not built yet\n");
    return 2;
}
