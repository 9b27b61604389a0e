/*
 * test_inflate.c — the threaded gzip reader (src/trace/inflate.c): what it reads is byte for byte
 * what was compressed (0 bytes to tens of MB, random and text-like data, every read size from 1
 * byte to more than the ring holds), several members read as gzread reads them, a corrupt or
 * truncated stream is an error with offsets, and closing early returns at once, also on a pipe
 * that never delivers.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "testlib.h"
#include "trace/inflate.h"
#include "trace/model.h"
#include "trace/now.h"

/* n bytes: random (deflate stores them) or JSON-like lines (long matches, ~10x smaller). */
static unsigned char *make_data(size_t n, int text)
{
    unsigned char *d = malloc(n ? n : 1);
    size_t i = 0;
    while (i < n) {
        if (!text) {
            d[i++] = (unsigned char)test_rand();
            continue;
        }
        char line[160];
        int k = snprintf(line, sizeof line,
                         "{\"ph\": \"X\", \"name\": \"op%u\", \"pid\": 1, \"tid\": %u, \"ts\": "
                         "%u.%03u, \"dur\": %u},\n",
                         (unsigned)(test_rand() % 50), (unsigned)(test_rand() % 4),
                         (unsigned)(test_rand() % 100000000), (unsigned)(test_rand() % 1000),
                         (unsigned)(test_rand() % 900));
        for (int j = 0; j < k && i < n; j++)
            d[i++] = (unsigned char)line[j];
    }
    return d;
}

/* One gzip member of data (zlib's gzip wrapper), appended to *out (grown). */
static void gz_append(unsigned char **out, size_t *outn, const void *data, size_t n, int level)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    *out = realloc(*out, *outn + cap);
    z.next_in = (unsigned char *)(uintptr_t)data;
    z.avail_in = (uInt)n;
    z.next_out = *out + *outn;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        abort();
    *outn += cap - z.avail_out;
    deflateEnd(&z);
}

/* n bytes of text-like data (*data, to free) and one gzip member of them (returned, to free). */
static unsigned char *text_gz(size_t n, unsigned char **data, size_t *ngz)
{
    unsigned char *gz = NULL;
    *data = make_data(n, 1);
    *ngz = 0;
    gz_append(&gz, ngz, *data, n, 6);
    return gz;
}

/* A temporary file holding data; returns it open for reading at offset 0. */
static int temp_file(const void *data, size_t n)
{
    char path[] = "/tmp/tally_test_inflate_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    unlink(path);
    if (n && write(fd, data, n) != (ssize_t)n)
        abort();
    lseek(fd, 0, SEEK_SET);
    return fd;
}

/* Everything tl_inflate reads from fd, `step` bytes a call; -1 with err on an error. */
static ssize_t read_all(int fd, size_t step, unsigned char **out, tl_error *err)
{
    tl_inflate *z = tl_inflate_open(fd, "in.gz", err);
    if (!z)
        return -1;
    size_t n = 0, cap = 1 << 16;
    *out = malloc(cap);
    for (;;) {
        if (cap - n < step) {
            cap = cap * 2 > n + step ? cap * 2 : n + step;
            *out = realloc(*out, cap);
        }
        ssize_t got = tl_inflate_read(z, *out + n, step);
        if (got < 0) {
            /* an error is for good */
            CHECK_EQ_INT(tl_inflate_read(z, *out, step), -1);
            tl_inflate_close(z);
            return -1;
        }
        if (got == 0)
            break;
        CHECK(got <= (ssize_t)step);
        n += (size_t)got;
    }
    CHECK_EQ_INT(tl_inflate_read(z, *out, step), 0); /* the end stays the end */
    tl_inflate_close(z);
    return (ssize_t)n;
}

/* What zlib's gzread makes of the same file: the reference for concatenations. */
static size_t gzread_all(int fd, unsigned char **out)
{
    gzFile g = gzdopen(dup(fd), "rb");
    size_t n = 0, cap = 1 << 16;
    *out = malloc(cap);
    int got;
    for (;;) {
        if (cap - n < 65536)
            *out = realloc(*out, cap *= 2);
        if ((got = gzread(g, *out + n, 65536)) <= 0)
            break;
        n += (size_t)got;
    }
    CHECK_EQ_INT(got, 0);
    gzclose(g);
    lseek(fd, 0, SEEK_SET);
    return n;
}

static void check_round_trip(size_t n, int text, int level, const size_t *steps, size_t nsteps)
{
    unsigned char *data = make_data(n, text), *gz = NULL, *got = NULL;
    size_t ngz = 0;
    gz_append(&gz, &ngz, data, n, level);
    int fd = temp_file(gz, ngz);
    for (size_t i = 0; i < nsteps; i++) {
        tl_error err = {{0}};
        ssize_t r = read_all(fd, steps[i], &got, &err);
        if (r != (ssize_t)n)
            fprintf(stderr, "size %zu text %d step %zu: read %zd (%s)\n", n, text, steps[i], r,
                    err.msg);
        CHECK_EQ_INT(r, (ssize_t)n);
        CHECK(r == (ssize_t)n && memcmp(got, data, n) == 0);
        /* a seekable fd is read with pread: its offset stays where it was */
        CHECK_EQ_INT(lseek(fd, 0, SEEK_CUR), 0);
        free(got);
    }
    close(fd);
    free(gz);
    free(data);
}

TEST(small_sizes_read_back_exactly_with_every_read_size)
{
    static const size_t steps[] = {1, 2, 7, 4096, 1 << 20, (1 << 20) + 1, 5 << 20};
    static const size_t sizes[] = {0, 1, 2, 100, 65536, (1 << 20) - 1, 1 << 20, (1 << 20) + 1};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (int text = 0; text < 2; text++)
            check_round_trip(sizes[i], text, 6, steps, sizeof steps / sizeof *steps);
}

TEST(tens_of_megabytes_read_back_exactly)
{
    /* more than the ring (4 x 1 MiB) many times over, random and compressible */
    static const size_t steps[] = {4093, 1 << 20, 3 << 20, 64 << 20};
    check_round_trip((24 << 20) + 12345, 0, 1, steps, sizeof steps / sizeof *steps);
    check_round_trip((40 << 20) + 777, 1, 6, steps, sizeof steps / sizeof *steps);
}

/* `cat a.gz b.gz`: the members one after the other, an empty member included, as gzread has it;
 * bytes after the last member that are no gzip header are ignored, as gzread ignores them. */
TEST(concatenated_members_read_like_gzread)
{
    size_t sizes[] = {3000, 0, (2 << 20) + 5, 1, 70000};
    unsigned char *want = NULL, *gz = NULL, *got = NULL, *ref = NULL;
    size_t nwant = 0, ngz = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *d = make_data(sizes[i], (int)(i & 1) ^ 1);
        gz_append(&gz, &ngz, d, sizes[i], i % 2 ? 1 : 9);
        want = realloc(want, nwant + sizes[i] + 1);
        memcpy(want + nwant, d, sizes[i]);
        nwant += sizes[i];
        free(d);
    }
    static const char *const tails[] = {"", "\0\0\0\0\0\0\0\0", "\x1f", "garbage after it"};
    static const size_t tail_len[] = {0, 8, 1, 16};
    for (size_t t = 0; t < 4; t++) {
        unsigned char *file = malloc(ngz + tail_len[t]);
        memcpy(file, gz, ngz);
        memcpy(file + ngz, tails[t], tail_len[t]);
        int fd = temp_file(file, ngz + tail_len[t]);
        size_t nref = gzread_all(fd, &ref);
        CHECK_EQ_INT(nref, nwant);
        CHECK(memcmp(ref, want, nwant) == 0);
        static const size_t steps[] = {1000, 1 << 20, 8 << 20};
        for (size_t s = 0; s < 3; s++) {
            tl_error err = {{0}};
            ssize_t r = read_all(fd, steps[s], &got, &err);
            CHECK_EQ_INT(r, (ssize_t)nwant);
            CHECK(r == (ssize_t)nwant && memcmp(got, want, nwant) == 0);
            free(got);
        }
        free(ref);
        close(fd);
        free(file);
    }
    free(want);
    free(gz);
}

/* An error's message: one line, the name, what went wrong and the compressed offset. */
static void check_error(const unsigned char *file, size_t n, const char *what)
{
    int fd = temp_file(file, n);
    unsigned char *got = NULL;
    tl_error err = {{0}};
    ssize_t r = read_all(fd, 1 << 20, &got, &err);
    if (r >= 0 || !strstr(err.msg, what))
        fprintf(stderr, "%zu bytes: read %zd, \"%s\", expected an error with \"%s\"\n", n, r,
                err.msg, what);
    CHECK_EQ_INT(r, -1);
    CHECK(strncmp(err.msg, "in.gz: offset ", 14) == 0);
    CHECK(strstr(err.msg, what) != NULL);
    CHECK(strstr(err.msg, "compressed offset ") != NULL);
    CHECK(strchr(err.msg, '\n') == NULL);
    CHECK_EQ_INT(err.code, TL_ERR_INPUT);
    free(got);
    close(fd);
}

TEST(truncated_input_is_an_error_not_a_short_end)
{
    unsigned char *a;
    size_t ngz;
    unsigned char *gz = text_gz(3 << 20, &a, &ngz);
    size_t one = ngz;
    gz_append(&gz, &ngz, a, 100000, 6);
    /* cut inside the header, the data, the trailer; and inside the second member */
    size_t cuts[] = {2, 5, 11, one / 2, one - 8, one - 1, one + 3, one + (ngz - one) / 2, ngz - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++)
        check_error(gz, cuts[i], "gzip stream is truncated");
    free(gz);
    free(a);
}

TEST(corrupt_input_is_an_error_with_offsets)
{
    unsigned char *a;
    size_t ngz;
    unsigned char *gz = text_gz(2 << 20, &a, &ngz), *bad = malloc(ngz);
    /* the data check (CRC-32) and the length in the trailer */
    memcpy(bad, gz, ngz);
    bad[ngz - 6] ^= 0x40;
    check_error(bad, ngz, "incorrect data check");
    memcpy(bad, gz, ngz);
    bad[ngz - 2] ^= 0x01;
    check_error(bad, ngz, "incorrect length check");
    /* damage in the compressed blocks: many tries, each an error and never a crash */
    int errors = 0;
    for (int k = 0; k < 20; k++) {
        memcpy(bad, gz, ngz);
        size_t at = 10 + (size_t)(test_rand() % (ngz / 4));
        for (int j = 0; j < 16; j++)
            bad[at + (size_t)j] = (unsigned char)test_rand();
        int fd = temp_file(bad, ngz);
        unsigned char *got = NULL;
        tl_error err = {{0}};
        ssize_t r = read_all(fd, 1 << 20, &got, &err);
        errors += r < 0 && strstr(err.msg, "gzip data is corrupt (") &&
                  strstr(err.msg, "compressed offset ");
        if (r >= 0)
            fprintf(stderr, "damage at %zu read as %zd bytes\n", at, r);
        free(got);
        close(fd);
    }
    CHECK_EQ_INT(errors, 20);
    /* not gzip at all */
    check_error((const unsigned char *)"this is no gzip data", 20, "gzip data is corrupt");
    free(bad);
    free(gz);
    free(a);
}

struct writer {
    int fd;
    const unsigned char *data;
    size_t n;
};

static void *write_pipe(void *arg)
{
    struct writer *w = arg;
    for (size_t off = 0; off < w->n;) {
        size_t k = w->n - off < 1000 ? w->n - off : 1000; /* small writes: short reads */
        ssize_t got = write(w->fd, w->data + off, k);
        if (got <= 0)
            break; /* the reader left (EPIPE is ignored in main) */
        off += (size_t)got;
    }
    close(w->fd);
    return NULL;
}

/* A pipe, written in small pieces: read through like a file. */
TEST(pipe_input_reads_back_exactly)
{
    unsigned char *a = make_data(5 << 20, 1), *gz = NULL, *got = NULL;
    size_t ngz = 0;
    gz_append(&gz, &ngz, a, 3 << 20, 6);
    gz_append(&gz, &ngz, a + (3 << 20), 2 << 20, 1);
    int p[2];
    CHECK_EQ_INT(pipe(p), 0);
    struct writer w = {p[1], gz, ngz};
    pthread_t th;
    pthread_create(&th, NULL, write_pipe, &w);
    tl_error err = {{0}};
    ssize_t r = read_all(p[0], 100000, &got, &err);
    CHECK_EQ_INT(r, 5 << 20);
    CHECK(r == 5 << 20 && memcmp(got, a, 5 << 20) == 0);
    pthread_join(th, NULL);
    close(p[0]);
    free(got);
    free(gz);
    free(a);
}

/* Closing after a partial read, or with no read, stops the producer at once: on a big file
 * (the ring is full and the producer waits), and on a pipe that delivered part of a member and
 * then nothing more while its writer keeps it open (the producer waits for input). */
TEST(close_after_a_partial_read_returns_promptly)
{
    size_t n = 30 << 20;
    unsigned char *a = make_data(n, 1), *gz = NULL, buf[4096];
    size_t ngz = 0;
    gz_append(&gz, &ngz, a, n, 1);
    int fd = temp_file(gz, ngz);
    for (int reads = 0; reads < 3; reads++) {
        tl_error err = {{0}};
        double t0 = tl_now_s();
        tl_inflate *z = tl_inflate_open(fd, "in.gz", &err);
        CHECK(z != NULL);
        for (int i = 0; i < reads * 1000; i++)
            CHECK_EQ_INT(tl_inflate_read(z, buf, sizeof buf), (ssize_t)sizeof buf);
        if (reads)
            CHECK(memcmp(buf, a + (size_t)(reads * 1000 - 1) * sizeof buf, sizeof buf) == 0);
        tl_inflate_close(z);
        CHECK(tl_now_s() - t0 < 2.0);
    }
    close(fd);

    int p[2];
    CHECK_EQ_INT(pipe(p), 0);
    CHECK_EQ_INT(write(p[1], gz, 50000), 50000); /* part of the member, writer stays open */
    tl_error err = {{0}};
    tl_inflate *z = tl_inflate_open(p[0], "in.gz", &err);
    CHECK(z != NULL);
    CHECK(tl_inflate_read(z, buf, sizeof buf) > 0);
    double t0 = tl_now_s();
    tl_inflate_close(z);
    CHECK(tl_now_s() - t0 < 1.0);
    /* and with no read at all */
    z = tl_inflate_open(p[0], "in.gz", &err);
    CHECK(z != NULL);
    t0 = tl_now_s();
    tl_inflate_close(z);
    CHECK(tl_now_s() - t0 < 1.0);
    tl_inflate_close(NULL);
    close(p[0]);
    close(p[1]);
    free(gz);
    free(a);
}

/* A reader starts where the caller's fd is: a gzip stream after other bytes. */
TEST(reads_from_the_fds_offset)
{
    unsigned char *a = make_data(100000, 1), *file = malloc(7), *got = NULL;
    size_t nfile = 7;
    memcpy(file, "prefix:", 7);
    gz_append(&file, &nfile, a, 100000, 6);
    int fd = temp_file(file, nfile);
    lseek(fd, 7, SEEK_SET);
    tl_error err = {{0}};
    ssize_t r = read_all(fd, 65536, &got, &err);
    CHECK_EQ_INT(r, 100000);
    CHECK(r == 100000 && memcmp(got, a, 100000) == 0);
    CHECK_EQ_INT(lseek(fd, 0, SEEK_CUR), 7);
    free(got);
    close(fd);
    free(file);
    free(a);
}

/* Through the JSON reader: damage in a .json.gz is reported as damaged gzip, also where the
 * damaged deflate data inflates to text the parser fails on before zlib notices. */
TEST(json_reader_reports_damage_not_the_garbage_it_inflates_to)
{
    size_t cap = 40000 * 120, n = 0;
    char *doc = malloc(cap);
    n += (size_t)snprintf(doc, cap, "[\n");
    for (int i = 0; i < 40000; i++)
        n += (size_t)snprintf(doc + n, cap - n,
                              "%s{\"ph\": \"X\", \"name\": \"op%d\", \"pid\": 1, \"tid\": %d, "
                              "\"ts\": %d.%03d, \"dur\": %d}\n",
                              i ? "," : "", i % 97, i % 3, i * 10, i * 37 % 1000, i % 9 + 1);
    n += (size_t)snprintf(doc + n, cap - n, "]\n");
    unsigned char *gz = NULL, *bad;
    size_t ngz = 0;
    gz_append(&gz, &ngz, doc, n, 6);
    bad = malloc(ngz);
    char path[64];
    snprintf(path, sizeof path, "/tmp/tally_test_inflate_%d.json.gz", (int)getpid());
    int gzip_errors = 0;
    for (int k = 0; k <= 20; k++) {
        memcpy(bad, gz, ngz);
        if (k) /* k == 0: undamaged; else damage past the header (its time and OS bytes are
                  no one's check) */
            for (int j = 0; j < 4; j++)
                bad[16 + test_rand() % (ngz - 16)] ^= (unsigned char)(1 + test_rand() % 255);
        FILE *f = fopen(path, "wb");
        fwrite(bad, 1, ngz, f);
        fclose(f);
        tl_trace t;
        tl_trace_init(&t);
        tl_error err = {{0}};
        int rc = tl_read_json(&t, path, 0, &err);
        if (k == 0) {
            CHECK_EQ_INT(rc, 0);
            CHECK_EQ_INT(t.nev, 40000);
        } else if (rc != 0 && strncmp(err.msg, path, strlen(path)) == 0 &&
                   strstr(err.msg, ": gzip ")) {
            gzip_errors++;
        } else {
            fprintf(stderr, "damage %d: rc %d: %s\n", k, rc, err.msg);
        }
        tl_trace_free(&t);
    }
    CHECK_EQ_INT(gzip_errors, 20);
    unlink(path);
    free(bad);
    free(gz);
    free(doc);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    RUN(small_sizes_read_back_exactly_with_every_read_size);
    RUN(tens_of_megabytes_read_back_exactly);
    RUN(concatenated_members_read_like_gzread);
    RUN(truncated_input_is_an_error_not_a_short_end);
    RUN(corrupt_input_is_an_error_with_offsets);
    RUN(pipe_input_reads_back_exactly);
    RUN(close_after_a_partial_read_returns_promptly);
    RUN(reads_from_the_fds_offset);
    RUN(json_reader_reports_damage_not_the_garbage_it_inflates_to);
    return test_summary();
}
