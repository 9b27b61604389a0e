/*
 * prog_fork.c — a program that forks while recording (fork.sh checks the files).
 *
 *   prog_fork DIR record   the child records ranges of its own and exits normally
 *   prog_fork DIR exec     the child execs /bin/true without a tally call
 *   prog_fork DIR quiet    the child makes no tally call and _exits
 *
 * The session's file name is fixed (TALLY_NAME-like "same"), as in the case where one of the two
 * traces used to be lost. The parent records parent.before, then forks inside parent.open, then
 * parent.after; the child (record) records child.work 5 times and pops parent.open, which it
 * inherited open (a straddler, not an error). Prints the child's pid on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tally.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: prog_fork DIR record|exec|quiet\n");
        return 2;
    }
    tally_config c;
    memset(&c, 0, sizeof c);
    c.output_dir = argv[1];
    c.name = "same";
    c.write = TALLY_WRITE_TALLY;
    c.quiet = 1;
    if (tally_start(&c) != 0)
        return 1;
    TALLY_SCOPE("parent.before", TALLY_USER) {}
    TALLY_PUSH("parent.open", TALLY_USER);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!strcmp(argv[2], "exec")) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        if (!strcmp(argv[2], "quiet"))
            _exit(0);
        for (int i = 0; i < 5; i++)
            TALLY_SCOPE("child.work", TALLY_OPERATOR) {}
        TALLY_POP(); /* parent.open, pushed before the fork */
        tally_step(1);
        exit(0); /* the exit hook closes the child's own file */
    }
    printf("%d\n", (int)pid);
    int st;
    waitpid(pid, &st, 0);
    TALLY_POP(); /* parent.open */
    TALLY_SCOPE("parent.after", TALLY_USER) {}
    tally_stop();
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
