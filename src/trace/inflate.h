/*
 * inflate.h — a gzip file read through a thread of its own: a producer thread inflates into a
 * small ring of buffers while the caller parses what is already there, so inflating and
 * parsing a .json.gz run on two cores instead of one after the other.
 *
 * It reads what gzread reads: one gzip member or several (a file made by `cat a.gz b.gz`),
 * trailing bytes that are no gzip member ignored. A corrupt stream, and a file that ends inside
 * a member, are errors that say where (compressed and uncompressed offsets), never a short
 * clean end.
 *
 *   tl_inflate *z = tl_inflate_open(fd, "f.json.gz", &err);
 *   while ((n = tl_inflate_read(z, buf, sizeof buf)) > 0) ...   (n < 0: err says why)
 *   tl_inflate_close(z);
 */
#ifndef TALLY_TRACE_INFLATE_H
#define TALLY_TRACE_INFLATE_H

#include <stdint.h>
#include <sys/types.h>

#include "trace/model.h"

typedef struct tl_inflate tl_inflate;

/* Start inflating fd from its current offset (fd stays the caller's: it is not closed, and a
 * seekable one is read with pread, so its offset does not move). name is for messages and must
 * outlive the reader; err receives every error of this reader, also those of tl_inflate_read.
 * Returns NULL with err filled when the thread or memory cannot be had. */
tl_inflate *tl_inflate_open(int fd, const char *name, tl_error *err);

/* Up to n bytes of the inflated stream into buf: waits until some are there, then returns what
 * is ready (so it can return fewer than n before the end). 0 at the end of the stream; -1 on an
 * error (err filled; every later call returns -1 again). */
ssize_t tl_inflate_read(tl_inflate *z, void *buf, size_t n);

/* Read on past up to n more bytes, dropping them: 0 after them or at the end, -1 when the
 * stream turns out corrupt or truncated (err filled, over what it held). For a reader that
 * failed on what came out: damage in deflate data can inflate to garbage for a while before
 * zlib notices, and then the damage, not the garbage, is the error to report. */
int tl_inflate_skip(tl_inflate *z, uint64_t n);

/* Stop the producer, wait for it (promptly, also when the caller stops reading early or the
 * input is a pipe that never delivers) and free everything. NULL is a no-op. */
void tl_inflate_close(tl_inflate *z);

#endif
