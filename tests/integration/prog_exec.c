/*
 * prog_exec.c — a program that records, then execs itself (exec.sh checks the files).
 *
 *   prog_exec DIR          records first.work 3 times, waits for the writer's flush, execs
 *                          itself as "prog_exec DIR second" without stopping the session
 *   prog_exec DIR second   records second.work 2 times and stops normally
 *
 * Both images have the same pid, so the default name tally-{host}-{pid} is the same: the second
 * must not overwrite the first's file.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tally.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: prog_exec DIR [second]\n");
        return 2;
    }
    int second = argc > 2 && !strcmp(argv[2], "second");
    tally_config c;
    memset(&c, 0, sizeof c);
    c.output_dir = argv[1];
    c.write = TALLY_WRITE_TALLY;
    c.quiet = 1;
    if (tally_start(&c) != 0)
        return 1;
    if (second) {
        for (int i = 0; i < 2; i++)
            TALLY_SCOPE("second.work", TALLY_USER) {}
        return tally_stop() == 0 ? 0 : 1;
    }
    for (int i = 0; i < 3; i++)
        TALLY_SCOPE("first.work", TALLY_USER) {}
    struct timespec t = {0, 300 * 1000000}; /* several flush intervals */
    nanosleep(&t, NULL);
    execl(argv[0], argv[0], argv[1], "second", (char *)NULL);
    perror("prog_exec: exec");
    return 1;
}
