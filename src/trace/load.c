/*
 * load.c — tl_load: read any trace tally understands, choosing the reader by content rather
 * than by name: a .tally file starts with its magic, anything else is taken for JSON (plain or
 * gzip-compressed; the JSON reader looks at the gzip magic itself).
 */
#include "record/format.h"
#include "trace/model.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(TALLY__COPY_HTOD, TL_COPY_HTOD) && SAME(TALLY__COPY_DTOH, TL_COPY_DTOH) &&
                   SAME(TALLY__COPY_DTOD, TL_COPY_DTOD) && SAME(TALLY__COPY_HTOH, TL_COPY_HTOH) &&
                   SAME(TALLY__COPY_PTOP, TL_COPY_PTOP),
               "format.h copy kinds follow tl_memcpy_kind");
_Static_assert(SAME(TALLY__DEV_INSTANT, TL_EV_INSTANT) &&
                   SAME(TALLY__DEV_SYNC_COPY, TL_EV_SYNC_COPY) &&
                   SAME(TALLY__DEV_PAGEABLE, TL_EV_PAGEABLE) &&
                   SAME(TALLY__DEV_MEM_DEVICE, TL_EV_MEM_DEVICE),
               "format.h device flags follow TL_EV_*");
_Static_assert(SAME(TALLY__CAT_OVERHEAD, TL_CAT_OVERHEAD), "format.h categories follow tl_cat");
#undef SAME

int tl_load(tl_trace *t, const char *path, int progress, tl_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char magic[8] = {0};
    ssize_t n = read(fd, magic, sizeof magic);
    close(fd);
    if (n < 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    if (n == 0) {
        tl_error_set(err, "%s: the file is empty; expected a trace (.tally or JSON)", path);
        return -1;
    }
    t->path = path;
    if (n == (ssize_t)sizeof magic && memcmp(magic, TALLY__MAGIC, sizeof magic) == 0)
        return tl_read_tally(t, path, err);
    return tl_read_json(t, path, progress, err);
}
