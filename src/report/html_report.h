/*
 * html_report.h — `tally report FILE --html OUT.html`: the report as one self-contained page
 * (docs/html.md).
 *
 * The page is a template (src/report/html/report.html) with the report's JSON — exactly what
 * `tally report --format json` writes, every view's table with typed columns — in a
 * <script type="application/json"> element, beside a timeline of the steps, their phases and
 * each stream's busy time (which no view holds: views hold totals, the timeline needs times),
 * the vendored charting library (third_party/echarts) and a small renderer (report.js,
 * report.css) that builds the page from those tables in the browser. Every asset is compiled
 * into the binary (the embedding step of the top-level CMakeLists.txt), so the page opens from
 * disk with no network.
 */
#ifndef TALLY_REPORT_HTML_REPORT_H
#define TALLY_REPORT_HTML_REPORT_H

#include "report/summary.h"

#include <stdio.h>

/* Write the report of t as an HTML page to f: the views o selects (o->views, o->vo; o->fmt,
 * unit and wide are ignored), computed and written one at a time as tl_report_write does.
 * Returns 0; -1 with err filled on a usage error (nothing written); -2 with err filled when a
 * view fails (the page is left unfinished). Write errors are left in ferror(f). */
int tl_report_write_html(FILE *f, const tl_trace *t, const tl_report_opts *o, tl_error *err);

/* Writes a report's JSON object (one {...} holding "trace" and the tables) to out: 0, or
 * non-zero with err filled (returned as is by tl_html_write). */
typedef int (*tl_html_json_fn)(FILE *out, void *arg, tl_error *err);

/* The page around any report's JSON (a job's, which has no trace of its own): title names it
 * (its last path component is shown), json writes the data, t (NULL: none) gives the timeline.
 * Returns 0, json's non-zero answer, or -2 when out of memory. */
int tl_html_write(FILE *f, const char *title, tl_html_json_fn json, void *arg, const tl_trace *t,
                  tl_error *err);

#endif
