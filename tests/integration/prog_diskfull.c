/*
 * prog_diskfull.c — a program that records more than its disk (or file-size limit) takes
 * (diskfull.sh runs it with the disk made full, and under `ulimit -f`).
 *
 *   prog_diskfull DIR    records 20 steps of 100000 ranges, stops, says what tally_stop
 *                        returned and that it is still alive, exits 0
 */
#include <stdio.h>
#include <string.h>

#include <tally.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    tally_config c;
    memset(&c, 0, sizeof c);
    c.output_dir = argv[1];
    c.name = "full";
    c.write = TALLY_WRITE_TALLY | TALLY_WRITE_SUMMARY;
    int rc = tally_start(&c);
    if (rc != 0) {
        printf("tally_start: %s\n", tally_err_name(rc));
        return 1;
    }
    for (int s = 0; s < 20; s++) {
        for (int i = 0; i < 100000; i++)
            TALLY_SCOPE("work", TALLY_USER) {}
        tally_step(1);
    }
    rc = tally_stop();
    tally_stats st;
    tally_get_stats(&st);
    printf("tally_stop: %s; lost %llu; the program goes on\n", tally_err_name(rc),
           (unsigned long long)st.lost);
    return 0;
}
