/*
 * prog_ranks.c — one rank of a made-up data-parallel job, for job_report.sh: 6 steps of a
 * "forward" range and an "allreduce" (communication) range, each step closed by tally_step.
 * Every phase sleeps a fixed time; the rank named by PROG_SLOW_RANK does everything 1.2x
 * as long (a rank 20 % slower, known by construction). The rank comes from RANK (or the other
 * launchers' variables) as the recorder reads it; settings from TALLY_* variables.
 *
 * usage: RANK=r [PROG_SLOW_RANK=s] [PROG_START_AT=unix_ns] prog_ranks
 */
#include <tally.h>

#include <stdlib.h>
#include <time.h>

/* Sleeps, not busy waits: the ranks run at once on a machine with fewer cores, where a busy
 * wait overshoots by whole time slices. */
static void wait_us(double us)
{
    struct timespec t = {(time_t)(us / 1e6), (long)((us - (double)(time_t)(us / 1e6) * 1e6) * 1e3)};
    while (nanosleep(&t, &t) != 0) {
    }
}

int main(void)
{
    const char *r = getenv("RANK"), *slow = getenv("PROG_SLOW_RANK");
    double f = r && slow && atoi(r) == atoi(slow) ? 1.2 : 1.0;
    /* PROG_START_AT (Unix ns): every rank begins its steps then, as a job's ranks leave their
     * first barrier together, whatever the time their processes took to start */
    const char *at = getenv("PROG_START_AT");
    if (at) {
        long long ns = atoll(at);
        struct timespec t = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &t, NULL) != 0) {
        }
    }
    if (tally_start(NULL) != 0)
        return 1;
    for (int i = 0; i < 6; i++) {
        TALLY_SCOPE("forward", TALLY_FORWARD)
        {
            wait_us(40000 * f);
        }
        TALLY_SCOPE("allreduce", TALLY_COMMUNICATION)
        {
            wait_us(10000 * f);
        }
        tally_step(1);
    }
    return tally_stop() == 0 ? 0 : 1;
}
