/*
 * now.h — seconds on the monotonic clock, for progress lines and the durations the commands
 * print (not for measurements in traces: the recorder has its own clock).
 */
#ifndef TALLY_TRACE_NOW_H
#define TALLY_TRACE_NOW_H

#include <time.h>

static inline double tl_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
