/*
 * schedule.h — the recorder's config helpers (config.c), exposed for the unit tests.
 */
#ifndef TALLY_RECORD_SCHEDULE_H
#define TALLY_RECORD_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include <tally.h>

/* Per-step states, as torch's ProfilerAction / Paddle's ProfilerState. */
enum {
    TALLY__ST_CLOSED = 0,           /* torch NONE */
    TALLY__ST_READY = 1,            /* torch WARMUP: armed, nothing recorded */
    TALLY__ST_RECORD = 2,           /* recorded */
    TALLY__ST_RECORD_AND_RETURN = 3 /* recorded, and the window ends with this step */
};

/* The state of step (>= 0) under cfg's schedule (all zero: always RECORD). */
int tally__sched_state(const tally_config *cfg, int64_t step);
/* Non-zero when the schedule fields make sense (no negatives; active > 0 when any is set). */
int tally__sched_valid(const tally_config *cfg);

/* Parsers behind tally_config_from_env; 0 or -1. */
int tally__parse_size(const char *s, size_t *out);
int tally__parse_write(const char *s, unsigned *out);
int tally__parse_schedule(const char *s, tally_config *cfg);

/* Expand {host} {pid} {rank} {time} in pattern into out; returns 0 or -1 (too long). */
int tally__expand_name(const char *pattern, char *out, size_t cap);

#endif
