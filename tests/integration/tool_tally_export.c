/*
 * tool_tally_export.c — a .tally file to Chrome trace JSON through the trace model
 * (tl_read_tally + tl_write_chrome), the way `tally export` did before it streamed .tally files,
 * so that tests/integration/export_stream.sh can compare the two (`tally export` now streams).
 *
 *   tool_tally_export IN.tally OUT.json[.gz]
 */
#include <stdio.h>

#include "trace/model.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tool_tally_export IN.tally OUT.json[.gz]\n");
        return 2;
    }
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    int rc = tl_read_tally(&t, argv[1], &err) != 0 || tl_write_chrome(&t, argv[2], &err) != 0;
    if (rc)
        fprintf(stderr, "tool_tally_export: %s\n", err.msg);
    tl_trace_free(&t);
    return rc;
}
