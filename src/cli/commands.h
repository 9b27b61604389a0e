/*
 * commands.h — the verbs of the tally command line, one file each (cmd_<verb>.c).
 * Each returns the process exit status: 0 on success, 1 on a runtime failure (bad input file),
 * 2 on a usage error. Errors are one line on stderr, starting with "tally <verb>: ".
 */
#ifndef TALLY_CLI_COMMANDS_H
#define TALLY_CLI_COMMANDS_H

int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_gaps(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_run(int argc, char **argv);

/* Directory holding libtally.so for `tally run` (next to the tally binary, or the build dir). */
const char *cli_libtally_path(void);
/* argv[0] of the tally binary as invoked. */
extern const char *cli_argv0;

#endif
