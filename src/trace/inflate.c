/*
 * inflate.c — gzip inflated by a producer thread into a ring of buffers (see inflate.h).
 *
 * The ring: SLOTS buffers of SLOT_SIZE bytes. The producer fills slot tail % SLOTS without the
 * lock and then publishes it (tail++) under the lock; the consumer copies out of the slots in
 * [head, tail) without the lock and then gives the ones it emptied back (head++). A slot is only
 * ever touched by the side that owns it, so the lock guards nothing but the counters and the
 * flags, and is held for a few instructions per megabyte.
 *
 * Stopping: tl_inflate_close sets stop and wakes the producer wherever it waits: on a full ring
 * (the condition variable), or, for input that can block (a pipe), in poll() on the input and a
 * pipe of our own that close writes to. A regular file is read with pread, which does not
 * block indefinitely, so between two slots (a few ms of work) the producer sees stop and leaves.
 */
#include "trace/inflate.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* 4 x 1 MiB: enough for the producer to run ahead through the consumer's slower stretches,
 * small enough to stay out of the way (the JSON reader's own buffer is 4 MiB). */
#define SLOTS     4
#define SLOT_SIZE (1u << 20)
#define IN_SIZE   (1u << 18) /* compressed bytes read at a time, as gzbuffer(1 << 18) did */

/* What filling a slot ended with. FILL_STALL: a pipe has nothing to read now, and the slot is
 * handed over as it is before waiting for more (the consumer may need just those bytes). */
enum { FILL_FULL = 0, FILL_END = 1, FILL_STALL = 2, FILL_ERROR = -1, FILL_STOPPED = -2 };

struct tl_inflate {
    /* set at open, then read-only */
    int fd;
    int seekable; /* read with pread at base + in_off, else with read after poll */
    off_t base;   /* where fd was at open */
    int wake[2];  /* not seekable: close writes to wake[1] to end a poll; else -1 */
    const char *name;
    tl_error *err; /* the caller's: written by the consumer only */
    pthread_t thread;

    pthread_mutex_t lock;
    pthread_cond_t filled;  /* producer -> consumer: a slot was published, or done */
    pthread_cond_t emptied; /* consumer -> producer: a slot was given back, or stop */
    /* under lock */
    unsigned head, tail; /* slots taken / published so far; tail - head of them are ready */
    int done;            /* the producer published its last slot: FILL_END or FILL_ERROR */
    _Atomic int stop;    /* also read by the producer outside the lock, around its reads */

    unsigned char *slot[SLOTS];
    size_t slot_len[SLOTS]; /* bytes in a published slot */
    size_t rpos;            /* consumer: bytes already taken from slot head % SLOTS */
    int failed;             /* consumer: the error was reported, report it again */

    /* producer only (the consumer reads perr once done is FILL_ERROR) */
    z_stream zs;
    unsigned char *in;
    int in_eof;
    int between;        /* a member ended: is another one next? */
    uint64_t in_off;    /* compressed bytes read from fd so far */
    uint64_t out_total; /* uncompressed bytes in the slots published so far */
    tl_error perr;
};

/* Compressed bytes inflate has consumed: the offset of a problem in the file. */
static unsigned long long in_pos(const tl_inflate *z)
{
    return (unsigned long long)(z->in_off - z->zs.avail_in);
}

/* Whether a read of fd would return at once (data, the end, or an error). */
static int readable_now(int fd)
{
    struct pollfd pf = {fd, POLLIN, 0};
    return poll(&pf, 1, 0) != 0;
}

/* Read more compressed input after the avail_in bytes not consumed yet (moved to the front).
 * Sets in_eof at the end of the file. Returns 0, FILL_STALL, FILL_ERROR or FILL_STOPPED. */
static int more_input(tl_inflate *z)
{
    z_stream *zs = &z->zs;
    if (!z->seekable && zs->avail_out < SLOT_SIZE && !readable_now(z->fd))
        return FILL_STALL;
    if (zs->avail_in)
        memmove(z->in, zs->next_in, zs->avail_in);
    zs->next_in = z->in;
    unsigned char *to = z->in + zs->avail_in;
    size_t want = IN_SIZE - zs->avail_in;
    ssize_t got;
    for (;;) {
        if (atomic_load_explicit(&z->stop, memory_order_relaxed))
            return FILL_STOPPED;
        if (z->seekable) {
            got = pread(z->fd, to, want, z->base + (off_t)z->in_off);
        } else {
            /* a pipe can stay silent forever: wait for it or for close, never in read alone */
            struct pollfd pf[2] = {{z->fd, POLLIN, 0}, {z->wake[0], POLLIN, 0}};
            if (poll(pf, 2, -1) < 0) {
                if (errno == EINTR)
                    continue;
                got = -1;
            } else if (pf[1].revents) {
                return FILL_STOPPED;
            } else {
                got = read(z->fd, to, want);
            }
        }
        if (got >= 0)
            break;
        if (errno == EINTR || errno == EAGAIN)
            continue;
        tl_error_setc(&z->perr, TL_ERR_IO, "%s: read error: %s", z->name, strerror(errno));
        return FILL_ERROR;
    }
    if (got == 0)
        z->in_eof = 1;
    z->in_off += (uint64_t)got;
    zs->avail_in += (uInt)got;
    return 0;
}

/* After a member's end: another member follows when the next two bytes are the gzip magic;
 * anything else (nothing, zeros a tape padded with, other data) ends the stream, as gzread
 * has it. Returns FILL_END, 0 (a member starts), FILL_ERROR or FILL_STOPPED. */
static int next_member(tl_inflate *z)
{
    z_stream *zs = &z->zs;
    while (zs->avail_in < 2 && !z->in_eof) {
        int rc = more_input(z);
        if (rc)
            return rc;
    }
    if (zs->avail_in < 2 || zs->next_in[0] != 0x1f || zs->next_in[1] != 0x8b)
        return FILL_END;
    z->between = 0;
    inflateReset(zs);
    return 0;
}

/* Inflate into slot s until it is full, the stream ends, or (a pipe) the input stalls. slot_len[s]
 * is set in any case: what came out before an error or the end is data too. */
static int fill(tl_inflate *z, unsigned s)
{
    z_stream *zs = &z->zs;
    zs->next_out = z->slot[s];
    zs->avail_out = SLOT_SIZE;
    int rc = FILL_FULL;
    while (zs->avail_out) {
        if (z->between) {
            if ((rc = next_member(z)) != 0)
                break;
        }
        if (zs->avail_in == 0 && !z->in_eof && (rc = more_input(z)) != 0)
            break;
        int zr = inflate(zs, Z_NO_FLUSH);
        if (zr == Z_STREAM_END) {
            z->between = 1;
            continue;
        }
        if (zr == Z_OK)
            continue;
        /* The end of the file inside a member: zlib wants input that will never come. (Not
         * when the file was empty: gzread reads that as an empty stream.) */
        if (zr == Z_BUF_ERROR && zs->avail_in == 0 && z->in_eof) {
            if (z->in_off == 0) {
                rc = FILL_END;
                break;
            }
            tl_error_set(&z->perr,
                         "%s: offset %llu: gzip stream is truncated (the file ends inside a gzip "
                         "member, at compressed offset %llu)",
                         z->name, (unsigned long long)(z->out_total + SLOT_SIZE - zs->avail_out),
                         in_pos(z));
        } else if (zr == Z_MEM_ERROR) {
            tl_error_setc(&z->perr, TL_ERR_NOMEM, "%s: out of memory", z->name);
        } else {
            const char *why = zr == Z_NEED_DICT ? "it needs a preset dictionary"
                              : zs->msg         ? zs->msg
                                                : zError(zr);
            tl_error_set(&z->perr,
                         "%s: offset %llu: gzip data is corrupt (%s at compressed offset %llu)",
                         z->name, (unsigned long long)(z->out_total + SLOT_SIZE - zs->avail_out),
                         why, in_pos(z));
        }
        rc = FILL_ERROR;
        break;
    }
    z->slot_len[s] = SLOT_SIZE - zs->avail_out;
    z->out_total += z->slot_len[s];
    return rc;
}

static void *producer(void *arg)
{
    tl_inflate *z = arg;
    pthread_mutex_lock(&z->lock);
    for (;;) {
        while (z->tail - z->head == SLOTS && !z->stop)
            pthread_cond_wait(&z->emptied, &z->lock);
        if (z->stop)
            break;
        unsigned s = z->tail % SLOTS;
        pthread_mutex_unlock(&z->lock);
        int rc = fill(z, s);
        pthread_mutex_lock(&z->lock);
        if (rc == FILL_STOPPED)
            break;
        if (z->slot_len[s])
            z->tail++;
        int last = rc == FILL_END || rc == FILL_ERROR;
        if (last)
            z->done = rc;
        pthread_cond_signal(&z->filled);
        if (last)
            break;
    }
    pthread_mutex_unlock(&z->lock);
    return NULL;
}

static void free_parts(tl_inflate *z)
{
    for (int i = 0; i < SLOTS; i++)
        free(z->slot[i]);
    free(z->in);
    for (int i = 0; i < 2; i++)
        if (z->wake[i] >= 0)
            close(z->wake[i]);
    inflateEnd(&z->zs);
    free(z);
}

tl_inflate *tl_inflate_open(int fd, const char *name, tl_error *err)
{
    tl_inflate *z = calloc(1, sizeof *z);
    if (!z) {
        tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", name);
        return NULL;
    }
    z->fd = fd;
    z->name = name;
    z->err = err;
    z->wake[0] = z->wake[1] = -1;
    off_t at = lseek(fd, 0, SEEK_CUR);
    z->seekable = at >= 0;
    int ok = inflateInit2(&z->zs, 15 + 32) == Z_OK; /* gzip (or zlib) header, detected */
    z->in = malloc(IN_SIZE);
    ok = ok && z->in;
    for (int i = 0; i < SLOTS; i++)
        ok = ok && (z->slot[i] = malloc(SLOT_SIZE)) != NULL;
    if (!ok) {
        free_parts(z);
        tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", name);
        return NULL;
    }
    if (!z->seekable && pipe(z->wake) != 0) {
        z->wake[0] = z->wake[1] = -1;
        free_parts(z);
        tl_error_setc(err, TL_ERR_IO, "%s: cannot make a pipe: %s", name, strerror(errno));
        return NULL;
    }
    z->base = z->seekable ? at : 0; /* pread from there: the fd's own offset never moves */
    pthread_mutex_init(&z->lock, NULL);
    pthread_cond_init(&z->filled, NULL);
    pthread_cond_init(&z->emptied, NULL);
    /* the thread takes no signals: they are the program's (SIGINT ends the main thread's read) */
    int rc = tl_thread_start(&z->thread, producer, z);
    if (rc != 0) {
        pthread_mutex_destroy(&z->lock);
        pthread_cond_destroy(&z->filled);
        pthread_cond_destroy(&z->emptied);
        free_parts(z);
        tl_error_setc(err, TL_ERR_NOMEM, "%s: cannot start the gzip thread: %s", name,
                      strerror(rc));
        return NULL;
    }
    return z;
}

/* tl_inflate_read, and tl_inflate_skip with buf NULL (the bytes are dropped, not copied). */
static ssize_t take(tl_inflate *z, void *buf, size_t n)
{
    if (z->failed)
        return -1;
    pthread_mutex_lock(&z->lock);
    while (z->head == z->tail && !z->done)
        pthread_cond_wait(&z->filled, &z->lock);
    unsigned head = z->head, ready = z->tail - z->head;
    int done = z->done;
    pthread_mutex_unlock(&z->lock);
    if (ready == 0) {
        if (done == FILL_END)
            return 0;
        /* the producer wrote perr before it set done, under the lock taken above */
        *z->err = z->perr;
        z->failed = 1;
        return -1;
    }
    /* the ready slots are the consumer's until given back: copy without the lock */
    char *out = buf;
    size_t got = 0;
    unsigned emptied = 0;
    while (emptied < ready && got < n) {
        unsigned s = (head + emptied) % SLOTS;
        size_t k = z->slot_len[s] - z->rpos;
        if (k > n - got)
            k = n - got;
        if (out)
            memcpy(out + got, z->slot[s] + z->rpos, k);
        got += k;
        z->rpos += k;
        if (z->rpos == z->slot_len[s]) {
            z->rpos = 0;
            emptied++;
        }
    }
    if (emptied) {
        pthread_mutex_lock(&z->lock);
        z->head += emptied;
        pthread_cond_signal(&z->emptied);
        pthread_mutex_unlock(&z->lock);
    }
    return (ssize_t)got;
}

ssize_t tl_inflate_read(tl_inflate *z, void *buf, size_t n)
{
    return take(z, buf, n);
}

int tl_inflate_skip(tl_inflate *z, uint64_t n)
{
    while (n) {
        ssize_t got = take(z, NULL, n < SIZE_MAX ? (size_t)n : SIZE_MAX);
        if (got <= 0)
            return (int)got;
        n -= (uint64_t)got;
    }
    return 0;
}

void tl_inflate_close(tl_inflate *z)
{
    if (!z)
        return;
    pthread_mutex_lock(&z->lock);
    z->stop = 1;
    pthread_cond_signal(&z->emptied);
    pthread_mutex_unlock(&z->lock);
    if (z->wake[1] >= 0) {
        ssize_t w;
        do
            w = write(z->wake[1], "", 1);
        while (w < 0 && errno == EINTR);
    }
    pthread_join(z->thread, NULL);
    pthread_mutex_destroy(&z->lock);
    pthread_cond_destroy(&z->filled);
    pthread_cond_destroy(&z->emptied);
    free_parts(z);
}
