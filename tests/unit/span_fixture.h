/*
 * span_fixture.h — an event of a hand-built trace, times in ns as the model holds them (the
 * view tests' views_fixture.h takes milliseconds).
 */
#ifndef TALLY_TEST_SPAN_FIXTURE_H
#define TALLY_TEST_SPAN_FIXTURE_H

#include "trace/model.h"

#include <string.h>

static inline tl_event *fx_span(tl_trace *t, uint32_t track, int cat, const char *name, int64_t ts,
                                int64_t dur)
{
    tl_event *e = tl_trace_add(t);
    e->track = track;
    e->cat = (uint16_t)cat;
    e->name = tl_intern(&t->strings, name, strlen(name));
    e->ts = ts;
    e->dur = dur;
    return e;
}

#endif
