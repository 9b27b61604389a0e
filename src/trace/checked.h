/*
 * checked.h — int64 arithmetic that cannot overflow, for times, durations and byte counts that
 * come from files (any 64-bit value can be in a damaged or crafted one).
 *
 * The model keeps every time within +-TL_TIME_MAX ns (146 years either side of the trace's
 * clock zero), and every end (ts + dur) too; the readers clamp what they read into that range.
 * Then an end and the difference of two times always fit in an int64 and the views can
 * subtract times freely. Sums of many durations or sizes can still leave int64: those saturate
 * (tl_add_sat) rather than wrap, so a total is never negative.
 */
#ifndef TALLY_TRACE_CHECKED_H
#define TALLY_TRACE_CHECKED_H

#include <stdint.h>

/* The largest time the model holds, in ns; the smallest is its negation. */
#define TL_TIME_MAX ((INT64_C(1) << 62) - 1)

/* a + b, a - b, a * b, saturated at INT64_MIN / INT64_MAX. */
static inline int64_t tl_add_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t tl_sub_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t tl_mul_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
    return r;
}

/* d truncated to an int64, saturated; NaN is 0. */
static inline int64_t tl_d_to_i64(double d)
{
    if (d != d)
        return 0;
    if (d >= 0x1p63)
        return INT64_MAX;
    if (d <= -0x1p63)
        return INT64_MIN;
    return (int64_t)d;
}

/* A time (ns) into the model's range [-TL_TIME_MAX, TL_TIME_MAX]. */
static inline int64_t tl_clamp_time(int64_t v)
{
    return v > TL_TIME_MAX ? TL_TIME_MAX : v < -TL_TIME_MAX ? -TL_TIME_MAX : v;
}

/* A duration for an event starting at ts (in the model's range): negative is 0, and the end
 * stays within the range. */
static inline int64_t tl_clamp_dur(int64_t ts, int64_t dur)
{
    if (dur <= 0)
        return 0;
    return dur > TL_TIME_MAX - ts ? TL_TIME_MAX - ts : dur;
}

#endif
