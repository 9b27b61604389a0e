/*
 * load.c — tl_load: read any trace tally understands, choosing the reader by content rather
 * than by name: a .tally file starts with its magic, anything else is taken for JSON (plain or
 * gzip-compressed; the JSON reader looks at the gzip magic itself).
 */
#include "record/format.h"
#include "trace/model.h"
#include "trace/now.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* Copy what is left of fd (a pipe) into an unlinked temporary file; returns it at offset 0,
 * or -1 with err filled. */
static int spool(int fd, const char *name, tl_error *err)
{
    const char *dir = getenv("TMPDIR");
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s/tally-input-XXXXXX", dir && *dir ? dir : "/tmp") >=
        (int)sizeof tmp) {
        tl_error_setc(err, TL_ERR_IO, "%s: TMPDIR is too long", name);
        return -1;
    }
    int out = mkostemp(tmp, O_CLOEXEC);
    if (out < 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: cannot make a temporary copy in %s: %s", name,
                      dir && *dir ? dir : "/tmp", strerror(errno));
        return -1;
    }
    unlink(tmp);
    /* its own buffer: a job's ranks are read by several threads at once (`<(zcat a) <(zcat b)`) */
    enum { SPOOL_BUF = 1 << 16 };
    char *buf = malloc(SPOOL_BUF);
    if (!buf) {
        tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", name);
        close(out);
        return -1;
    }
    int rc = 0;
    while (rc == 0) {
        ssize_t n = read(fd, buf, SPOOL_BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            tl_error_setc(err, TL_ERR_IO, "%s: cannot read: %s", name, strerror(errno));
            rc = -1;
        }
        if (n <= 0)
            break;
        for (ssize_t w = 0; w < n;) {
            ssize_t k = write(out, buf + w, (size_t)(n - w));
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                tl_error_setc(err, TL_ERR_IO, "%s: cannot make a temporary copy: %s", name,
                              strerror(errno));
                rc = -1;
                break;
            }
            w += k;
        }
    }
    free(buf);
    if (rc != 0) {
        close(out);
        return -1;
    }
    return out;
}

int tl_load(tl_trace *t, const char *path, int progress, tl_error *err)
{
    double t0 = tl_now_s();
    int is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "<stdin>" : path;
    int fd = is_stdin ? fcntl(0, F_DUPFD_CLOEXEC, 3) : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: cannot open: %s", name, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: cannot read: %s", name, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) { /* stdin, a pipe, <(...): the readers read their input twice */
        int copy = spool(fd, name, err);
        close(fd);
        if (copy < 0)
            return -1;
        fd = copy;
    }
    char magic[8] = {0};
    ssize_t n = pread(fd, magic, sizeof magic, 0);
    if (n <= 0) {
        if (n < 0)
            tl_error_setc(err, TL_ERR_IO, "%s: cannot read: %s", name, strerror(errno));
        else
            tl_error_set(err, "%s: the file is empty; expected a trace (.tally or JSON)", name);
        close(fd);
        return -1;
    }
    t->path = name;
    int rc;
    size_t nl = strlen(name);
    if (n == (ssize_t)sizeof magic && memcmp(magic, TALLY__MAGIC, sizeof magic) == 0) {
        rc = tl_read_tally_fd(t, fd, name, err);
    } else if (nl > 6 && !strcmp(name + nl - 6, ".tally") &&
               (!magic[0] || !strchr("{[ \t\r\n", magic[0])) &&
               (unsigned char)magic[0] != 0xef && /* (a byte order mark) */
               !(magic[0] == 0x1f && (unsigned char)magic[1] == 0x8b)) {
        /* named .tally, and neither JSON nor gzip: a damaged .tally, said as such */
        tl_error_set(err,
                     "%s: offset 0: expected the .tally magic \"%s\", found other bytes: not a "
                     ".tally file (or its start is damaged)",
                     name, TALLY__MAGIC);
        rc = -1;
    } else {
        size_t nev = t->nev, nmem = t->nmem;
        rc = tl_read_json_fd(t, fd, name, progress, err);
        if (rc == 0 && t->nev == nev && t->nmem == nmem) {
            tl_error_set(err,
                         "%s: no trace events: expected a traceEvents array (or a bare array) "
                         "with events tally reads (X, B/E, i, C)",
                         name);
            rc = -1;
        }
    }
    close(fd);
    if (rc == 0 && getenv("TALLY_READ_STATS")) /* with the views' times (summary.c) */
        fprintf(stderr, "tally: loaded in %.3f s\n", tl_now_s() - t0);
    return rc;
}
