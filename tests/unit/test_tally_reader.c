/*
 * test_tally_reader.c — the .tally reader on files built by hand from docs/FORMAT.md (exact
 * timestamps, so exact durations), on files the recorder wrote, and on broken files: cut short
 * (read up to the last complete chunk), corrupted (one-line error with the byte offset),
 * unknown chunks (skipped), random damage (no crash). Also measures the reader's speed.
 *
 * `test_tally_reader --count FILE` reads FILE and prints its number of events (used by
 * tests/integration/record_kill.sh).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "record/format.h"
#include "record_test_stubs.h"
#include "testlib.h"
#include "trace/model.h"
#include <tally.h>

/* ---- a tiny file builder --------------------------------------------------------------------- */

typedef struct fb {
    unsigned char *p;
    size_t len, cap;
} fb;

static void put(fb *b, const void *d, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 1024;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

static void pad8(fb *b)
{
    static const char z[8];
    put(b, z, tally__pad8(b->len) - b->len);
}

static size_t chunk_begin(fb *b, uint32_t type)
{
    tally__chunk_header h = {type, 0, 0};
    size_t at = b->len;
    put(b, &h, sizeof h);
    return at;
}

static void chunk_end(fb *b, size_t at)
{
    tally__chunk_header h;
    memcpy(&h, b->p + at, sizeof h);
    h.len = b->len - at - sizeof h;
    memcpy(b->p + at, &h, sizeof h);
}

static void header(fb *b, uint16_t major)
{
    tally__file_header h;
    memcpy(h.magic, TALLY__MAGIC, 8);
    h.major = major;
    h.minor = 0;
    h.header_size = 16;
    put(b, &h, sizeof h);
}

static void meta_ns_clock(fb *b, int64_t end_ns)
{
    size_t at = chunk_begin(b, TALLY__CHUNK_META);
    tally__meta_clock c = {0, 0, 0, 0, 1e9};
    uint32_t kl[2] = {TALLY__META_CLOCK, sizeof c};
    put(b, kl, 8);
    put(b, &c, sizeof c);
    int64_t pid = 4242;
    uint32_t kp[2] = {TALLY__META_PID, 8};
    put(b, kp, 8);
    put(b, &pid, 8);
    if (end_ns) {
        uint32_t ke[2] = {TALLY__META_END_NS, 8};
        put(b, ke, 8);
        put(b, &end_ns, 8);
    }
    uint32_t ku[2] = {TALLY__META_SAMPLES_UNIT, 6};
    put(b, ku, 8);
    put(b, "tokens", 6);
    pad8(b);
    chunk_end(b, at);
}

static void string_entry(fb *b, uint64_t id, const char *name, uint32_t cat)
{
    tally__string_entry e = {id, 7, cat, (uint32_t)strlen(name), 3, 0, 0};
    put(b, &e, sizeof e);
    put(b, name, strlen(name));
    put(b, "f.c", 3);
    pad8(b);
}

static void rec(fb *b, unsigned type, uint64_t field, uint64_t w1)
{
    tally__rec r = {TALLY__REC(type, field), w1};
    put(b, &r, sizeof r);
}

static size_t events_begin(fb *b, uint32_t slot, int64_t tid, uint64_t seq, uint64_t fbs)
{
    size_t at = chunk_begin(b, TALLY__CHUNK_EVENTS);
    tally__events_header h = {slot, 0, tid, seq, fbs};
    put(b, &h, sizeof h);
    return at;
}

/* A file with known content:
 *   thread 1 (tid 100): step 0 [1000, 9000) samples 32; "outer" [1000, 5000) containing
 *     "inner" [2000, 3000) with args "a=1"; a counter "loss" = 1.5 at 4000; a begin "async" at
 *     6000 (handle slot 1 seq 0) ended on thread 2 at 8000; step 1 [9000, stop 9500)
 *   thread 2 (tid 200), in two runs written in reverse order: "copied" (name in STR) [3000,
 *     7000) split across the runs; end of the async range. */
static fb known_file(void)
{
    fb b = {0};
    header(&b, 1);
    meta_ns_clock(&b, 10000);
    size_t at = chunk_begin(&b, TALLY__CHUNK_STRINGS);
    string_entry(&b, 0x1000, "outer", TALLY_FORWARD);
    string_entry(&b, 0x2000, "inner", TALLY_OPERATOR);
    string_entry(&b, 0x3000, "loss", TALLY_USER);
    string_entry(&b, 0x4000, "async", TALLY_COMMUNICATION);
    chunk_end(&b, at);
    /* thread 2, second run first */
    at = events_begin(&b, 2, 200, 1, 0);
    rec(&b, TALLY__R_POP, 7000, 0);
    rec(&b, TALLY__R_END, 8000, (UINT64_C(1) << 40) | 0);
    chunk_end(&b, at);
    at = events_begin(&b, 1, 100, 0, 0);
    rec(&b, TALLY__R_STEP_BEGIN, 1000, 0);
    rec(&b, TALLY__R_PUSH, 1000, 0x1000);
    tally__rec s = {TALLY__REC(TALLY__R_STR, (uint64_t)TALLY__STR_ARG << 48), 3};
    put(&b, &s, sizeof s);
    char slot[16] = "a=1";
    put(&b, slot, 16);
    rec(&b, TALLY__R_PUSH, 2000, 0x2000);
    rec(&b, TALLY__R_POP, 3000, 0);
    double v = 1.5;
    uint64_t bits;
    memcpy(&bits, &v, 8);
    rec(&b, TALLY__R_VALUE, 0, bits);
    rec(&b, TALLY__R_COUNTER, 4000, 0x3000);
    rec(&b, TALLY__R_POP, 5000, 0);
    rec(&b, TALLY__R_BEGIN, 6000, 0x4000);
    rec(&b, TALLY__R_VALUE, 0, 32);
    rec(&b, TALLY__R_STEP_END, 9000, 0);
    rec(&b, TALLY__R_STEP_BEGIN, 9000, 1);
    rec(&b, TALLY__R_STEP_STOP, 9500, 1);
    chunk_end(&b, at);
    at = events_begin(&b, 2, 200, 0, 0);
    tally__rec n = {TALLY__REC(TALLY__R_STR, ((uint64_t)TALLY__STR_NAME << 48) |
                                                 ((uint64_t)TALLY_BACKWARD << 40)),
                    6};
    put(&b, &n, sizeof n);
    char nm[16] = "copied";
    put(&b, nm, 16);
    rec(&b, TALLY__R_PUSH, 3000, 0);
    chunk_end(&b, at);
    at = chunk_begin(&b, TALLY__CHUNK_THREADS);
    tally__thread_entry te = {2, 6, 200};
    put(&b, &te, sizeof te);
    put(&b, "loader", 6);
    pad8(&b);
    chunk_end(&b, at);
    at = chunk_begin(&b, TALLY__CHUNK_STATS);
    tally__stats_chunk st = {11, 5, 1, 2, 3, 0, 1, 3};
    put(&b, &st, sizeof st);
    chunk_end(&b, at);
    return b;
}

static const tl_event *find(const tl_trace *t, const char *name)
{
    for (size_t i = 0; i < t->nev; i++)
        if (!strcmp(tl_str(&t->strings, t->ev[i].name), name))
            return &t->ev[i];
    return NULL;
}

TEST(hand_built_file_exact)
{
    fb b = known_file();
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "known.tally", &err), 0);
    const tl_event *e;
    CHECK((e = find(&t, "outer")) && e->ts == 1000 && e->dur == 4000 && e->cat == TL_CAT_FORWARD);
    CHECK((e = find(&t, "inner")) && e->ts == 2000 && e->dur == 1000 && e->cat == TL_CAT_OPERATOR &&
          e->depth == 2 && !strcmp(tl_str(&t.strings, e->args), "a=1"));
    CHECK((e = find(&t, "loss")) && e->cat == TL_CAT_COUNTER && e->value == 1500 && e->ts == 4000);
    CHECK((e = find(&t, "async")) && e->ts == 6000 && e->dur == 2000 &&
          e->cat == TL_CAT_COMMUNICATION && (e->flags & TL_EV_ASYNC));
    CHECK((e = find(&t, "copied")) && e->ts == 3000 && e->dur == 4000 && e->cat == TL_CAT_BACKWARD);
    if (e)
        CHECK_STR(tl_str(&t.strings, t.tracks[e->track].name), "loader");
    CHECK((e = find(&t, "ProfilerStep#0")) && e->ts == 1000 && e->dur == 8000 &&
          e->cat == TL_CAT_STEP && e->value == 0);
    CHECK((e = find(&t, "ProfilerStep#1")) && e->ts == 9000 && e->dur == 500 &&
          (e->flags & TL_EV_UNCLOSED));
    CHECK_EQ_INT(t.nsteps_samples, 2);
    if (t.nsteps_samples == 2) {
        CHECK_EQ_INT(t.step_samples[0], 32);
        CHECK_EQ_INT(t.step_samples[1], 0);
    }
    CHECK_STR(tl_str(&t.strings, t.samples_unit), "tokens");
    CHECK_EQ_INT(t.pid, 4242);
    CHECK_EQ_INT(t.dropped, 5);
    CHECK_EQ_INT(t.bad_pops, 1);
    CHECK_EQ_INT(t.bad_ends, 2);
    CHECK_EQ_INT(t.calls_outside, 3);
    tl_trace_free(&t);
    free(b.p);
}

static int read_err(const void *p, size_t len, char *msg, size_t cap)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    int rc = tl_read_tally_mem(&t, p, len, "f.tally", &err);
    snprintf(msg, cap, "%s", err.msg);
    tl_trace_free(&t);
    return rc;
}

TEST(broken_files_name_the_offset)
{
    fb b = known_file();
    char msg[600];
    CHECK_EQ_INT(read_err(b.p, 10, msg, sizeof msg), -1);
    CHECK(strstr(msg, "f.tally: offset 0: expected a 16-byte .tally header") == msg);
    CHECK(!strchr(msg, '\n'));

    CHECK_EQ_INT(read_err(b.p, 16 + 8, msg, sizeof msg), -1); /* inside the first chunk header */
    CHECK(strstr(msg, "f.tally: offset 16: expected a complete chunk") == msg);

    fb c = {0};
    put(&c, b.p, b.len);
    memcpy(c.p, "NOTTALLY", 8);
    CHECK_EQ_INT(read_err(c.p, c.len, msg, sizeof msg), -1);
    CHECK(strstr(msg, "offset 0: expected the magic") != NULL);

    memcpy(c.p, b.p, b.len);
    uint16_t major = 2;
    memcpy(c.p + 8, &major, 2);
    CHECK_EQ_INT(read_err(c.p, c.len, msg, sizeof msg), -1);
    CHECK(strstr(msg, "offset 8: expected format version 1.x, found 2.0") != NULL);

    /* a record type nobody knows, in the first events chunk: the offset of that record */
    memcpy(c.p, b.p, b.len);
    size_t off = 16, rec_off = 0;
    while (off < c.len) {
        tally__chunk_header h;
        memcpy(&h, c.p + off, sizeof h);
        if (h.type == TALLY__CHUNK_EVENTS) {
            rec_off = off + 16 + 32;
            break;
        }
        off += 16 + h.len;
    }
    CHECK(rec_off > 0);
    c.p[rec_off + 7] = 0xee; /* top byte of w0 = the type */
    CHECK_EQ_INT(read_err(c.p, c.len, msg, sizeof msg), -1);
    char want[80];
    snprintf(want, sizeof want, "f.tally: offset %zu: expected a record type", rec_off);
    CHECK(strstr(msg, want) == msg);
    free(c.p);
    free(b.p);
}

TEST(cut_short_reads_complete_chunks)
{
    fb b = known_file();
    /* cut inside the last (stats) chunk: everything before it is read */
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len - 8, "cut.tally", &err), 0);
    CHECK(find(&t, "outer") != NULL);
    CHECK_EQ_INT(t.dropped, 0); /* the stats chunk was lost */
    tl_trace_free(&t);

    /* a hole of zeros (a reserved range never written) ends the readable part */
    fb c = {0};
    put(&c, b.p, b.len);
    size_t off = 16, events_seen = 0;
    while (off < c.len) {
        tally__chunk_header h;
        memcpy(&h, c.p + off, sizeof h);
        if (h.type == TALLY__CHUNK_EVENTS && ++events_seen == 2) {
            memset(c.p + off, 0, c.len - off);
            break;
        }
        off += 16 + h.len;
    }
    tl_trace_init(&t);
    CHECK_EQ_INT(tl_read_tally_mem(&t, c.p, c.len, "hole.tally", &err), 0);
    const tl_event *e = find(&t, "async"); /* its begin is gone with thread 1's run */
    CHECK(e == NULL);
    CHECK(t.nev == 0 || find(&t, "copied") == NULL);
    tl_trace_free(&t);
    free(c.p);
    free(b.p);
}

TEST(unknown_chunks_skipped)
{
    fb b = {0};
    header(&b, 1);
    size_t at = chunk_begin(&b, 999);
    put(&b, "whatever from the future", 24);
    chunk_end(&b, at);
    fb k = known_file();
    put(&b, k.p + 16, k.len - 16);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "future.tally", &err), 0);
    CHECK(find(&t, "outer") != NULL);
    tl_trace_free(&t);
    free(b.p);
    free(k.p);
}

TEST(random_damage_never_crashes)
{
    fb b = known_file();
    unsigned char *c = malloc(b.len);
    srand(12345);
    int ok = 0, bad = 0;
    for (int i = 0; i < 3000; i++) {
        memcpy(c, b.p, b.len);
        int flips = 1 + rand() % 4;
        for (int k = 0; k < flips; k++)
            c[rand() % b.len] ^= (unsigned char)(1u << (rand() % 8));
        size_t len = (i % 3 == 0) ? (size_t)rand() % b.len : b.len;
        tl_trace t;
        tl_trace_init(&t);
        tl_error err = {{0}};
        if (tl_read_tally_mem(&t, c, len, "fuzz.tally", &err) == 0)
            ok++;
        else
            bad += strstr(err.msg, "fuzz.tally: offset ") == err.msg;
        tl_trace_free(&t);
    }
    CHECK(ok + bad == 3000); /* every failure names the offset */
    free(c);
    free(b.p);
}

TEST(reader_speed)
{
    /* 2 M records: 1 M push/pop pairs on 4 threads in 64 KiB runs */
    fb b = {0};
    header(&b, 1);
    meta_ns_clock(&b, 0);
    size_t at = chunk_begin(&b, TALLY__CHUNK_STRINGS);
    string_entry(&b, 0x1000, "r", TALLY_USER);
    chunk_end(&b, at);
    const int per_run = 4096, runs = 2000000 / per_run;
    uint64_t ts = 1000;
    for (int r = 0; r < runs; r++) {
        at = events_begin(&b, 1 + r % 4, 10 + r % 4, (uint64_t)(r / 4), 0);
        for (int i = 0; i < per_run / 2; i++) {
            rec(&b, TALLY__R_PUSH, ts, 0x1000);
            rec(&b, TALLY__R_POP, ts + 50, 0);
            ts += 100;
        }
        chunk_end(&b, at);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "speed.tally", &err), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    double rate = (double)runs * per_run / s;
    fprintf(stderr, "reader: %d records in %.3f s = %.1f M records/s (incl. tl_trace_finish)\n",
            runs * per_run, s, rate / 1e6);
    CHECK_EQ_INT(t.nev, (size_t)runs * per_run / 2);
    tl_trace_free(&t);
    free(b.p);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--count")) {
        tl_trace t;
        tl_trace_init(&t);
        tl_error err = {{0}};
        if (tl_read_tally(&t, argv[2], &err) != 0) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        printf("%zu\n", t.nev);
        tl_trace_free(&t);
        return 0;
    }
    RUN(hand_built_file_exact);
    RUN(broken_files_name_the_offset);
    RUN(cut_short_reads_complete_chunks);
    RUN(unknown_chunks_skipped);
    RUN(random_damage_never_crashes);
    RUN(reader_speed);
    return test_summary();
}
