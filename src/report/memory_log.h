/*
 * memory_log.h — InternLM's memory.log (SimpleMemoryProfiler's format) from a trace's memory
 * (memory_log.c; docs/memory.md).
 */
#ifndef TALLY_REPORT_MEMORY_LOG_H
#define TALLY_REPORT_MEMORY_LOG_H

#include <stdio.h>

#include "analysis/memory.h"

/* Write d's memory.log (by default d is tl_mem_main_device's) to f: a "Memory State" per step end
 * and one at the peak with the
 * "---Layout---" trees. Returns 0, or -1 with err set (out of memory). Write errors are left in
 * ferror(f). */
int tl_memory_log_write(FILE *f, const tl_trace *t, const tl_mem *m, const tl_mem_device *d,
                        tl_error *err);

#endif
