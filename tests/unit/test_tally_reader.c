/*
 * test_tally_reader.c — the .tally reader on files built by hand from docs/FORMAT.md (exact
 * timestamps, so exact durations), on files the recorder wrote, and on broken files: cut short
 * at every byte (read up to the last complete record), chunks never written in full (zeros),
 * corrupted (one-line error with the byte offset), unknown chunks (skipped), random damage (no
 * crash); ranges never closed (flagged, counted, warned about); the decoding in parts on several
 * threads against the decoding in order (the same model). Also measures the reader's speed.
 *
 * `test_tally_reader --count FILE` reads FILE and prints its number of events (used by
 * tests/integration/record_kill.sh). `test_tally_reader --write-seeds DIR` writes the hand-built
 * files, whole and cut, as the fuzzer's seed corpus (tests/fuzz/corpus_tally_reader);
 * `--write-ranges FILE N` a file of N push/pop pairs on 4 threads (tests/integration);
 * `--write-launches FILE N` N pairs on one thread and N kernel launches in a collector's thread
 * (docs/PERFORMANCE.md).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "record/format.h"
#include "record_test_util.h"
#include "report/summary.h"
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

typedef struct site_def {
    const char *name;
    unsigned cat;
} site_def;

/* The file header, a META chunk (ns clock, pid 4242, END_NS end_ns unless 0) and the call sites
 * s[i] with ids 0x1000 * (i + 1). */
static void file_start(fb *b, int64_t end_ns, const site_def *s, size_t n)
{
    header(b, 1);
    meta_ns_clock(b, end_ns);
    size_t at = chunk_begin(b, TALLY__CHUNK_STRINGS);
    for (size_t i = 0; i < n; i++)
        string_entry(b, 0x1000 * (i + 1), s[i].name, s[i].cat);
    chunk_end(b, at);
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

/* A STR record and its payload slots. */
static void str_rec(fb *b, unsigned role, unsigned cat, const char *text)
{
    size_t len = strlen(text);
    tally__rec r = {TALLY__REC(TALLY__R_STR, ((uint64_t)role << 48) | ((uint64_t)cat << 40)), len};
    put(b, &r, sizeof r);
    char slots[64] = {0};
    memcpy(slots, text, len);
    put(b, slots, (len + 15) / 16 * 16);
}

/* A DEVICE record and its payload slots: category cat (TALLY__CAT_*) on stream of device 0,
 * [start, end), copy kind and flags for copies, bytes. */
typedef struct dev_ev {
    unsigned cat;
    int64_t stream, start, end, corr;
    const char *name;
    uint8_t copy;
    uint16_t flags;
    int64_t bytes;
} dev_ev;

static void device_ev(fb *b, dev_ev v)
{
    tally__fmt_device d;
    memset(&d, 0, sizeof d);
    d.start = v.start;
    d.end = v.end;
    d.corr = v.corr;
    d.bytes = v.bytes;
    d.stream = v.stream;
    d.cat = v.cat;
    d.copy_kind = v.copy;
    d.flags = v.flags;
    d.name_len = (uint32_t)strlen(v.name);
    size_t body = sizeof d + d.name_len, slots = (body + 15) / 16;
    rec(b, TALLY__R_DEVICE, slots, 0);
    char pl[256] = {0};
    memcpy(pl, &d, sizeof d);
    memcpy(pl + sizeof d, v.name, d.name_len);
    put(b, pl, slots * 16);
}

/* A kernel named name on stream 7 of device 0. */
static void device_rec(fb *b, int64_t start, int64_t end, int64_t corr, const char *name)
{
    device_ev(b, (dev_ev){TALLY__CAT_KERNEL, 7, start, end, corr, name, 0, 0, 0});
}

/* An API record (a call of category cat on thread tid) and its payload slots. */
static void api_call(fb *b, unsigned cat, int64_t start, int64_t end, int64_t corr, int64_t tid,
                     const char *name)
{
    tally__fmt_api a = {start, end, corr, tid, cat, (uint32_t)strlen(name)};
    size_t body = sizeof a + a.name_len, slots = (body + 15) / 16;
    rec(b, TALLY__R_API, slots, 0);
    char pl[256] = {0};
    memcpy(pl, &a, sizeof a);
    memcpy(pl + sizeof a, name, a.name_len);
    put(b, pl, slots * 16);
}

static void api_rec(fb *b, int64_t start, int64_t end, int64_t corr, int64_t tid, const char *name)
{
    api_call(b, TALLY__CAT_RUNTIME, start, end, corr, tid, name);
}

/* A file with known content:
 *   thread 1 (tid 100): step 0 [1000, 9000) samples 32; "outer" [1000, 5000) containing
 *     "inner" [2000, 3000) with args "a=1"; a counter "loss" = 1.5 at 4000; a begin "async" at
 *     6000 (handle slot 1 seq 0) ended on thread 2 at 8000; step 1 [9000, stop 9500)
 *   thread 2 (tid 200), in two runs written in reverse order: "copied" (name in STR) [3000,
 *     7000) split across the runs; end of the async range. */
static fb known_file(void)
{
    static const site_def sites[] = {{"outer", TALLY_FORWARD},
                                     {"inner", TALLY_OPERATOR},
                                     {"loss", TALLY_USER},
                                     {"async", TALLY_COMMUNICATION}};
    fb b = {0};
    file_start(&b, 10000, sites, 4);
    /* thread 2, second run first */
    size_t at = events_begin(&b, 2, 200, 1, 0);
    rec(&b, TALLY__R_POP, 7000, 0);
    rec(&b, TALLY__R_END, 8000, (UINT64_C(1) << 40) | 0);
    chunk_end(&b, at);
    at = events_begin(&b, 1, 100, 0, 0);
    rec(&b, TALLY__R_STEP_BEGIN, 1000, 0);
    rec(&b, TALLY__R_PUSH, 1000, 0x1000);
    str_rec(&b, TALLY__STR_ARG, 0, "a=1");
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
    str_rec(&b, TALLY__STR_NAME, TALLY_BACKWARD, "copied");
    rec(&b, TALLY__R_PUSH, 3000, 0);
    chunk_end(&b, at);
    at = chunk_begin(&b, TALLY__CHUNK_THREADS);
    tally__thread_entry te = {2, 6, 200};
    put(&b, &te, sizeof te);
    put(&b, "loader", 6);
    pad8(&b);
    chunk_end(&b, at);
    at = chunk_begin(&b, TALLY__CHUNK_STATS);
    tally__stats_chunk st = {.records = 11,
                             .dropped = 5,
                             .bad_pops = 1,
                             .bad_ends = 2,
                             .calls_outside = 3,
                             .steps = 1,
                             .buffers = 3};
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
    CHECK((e = find(&t, "loss")) && e->cat == TL_CAT_COUNTER && tl_counter_value(e) == 1.5 &&
          e->ts == 4000);
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

TEST(cut_short_reads_complete_entries)
{
    fb b = known_file();
    /* cut inside the last (stats) chunk: everything before it is read, and its whole fields */
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len - 8, "cut.tally", &err), 0);
    CHECK(find(&t, "outer") != NULL);
    CHECK_EQ_INT(t.dropped, 5);
    CHECK_EQ_INT(t.cut_at, b.len - 16 - sizeof(tally__stats_chunk));
    tl_trace_free(&t);

    /* cut inside the thread names: the whole entries before the cut are read */
    size_t off = 16;
    while (off < b.len) {
        tally__chunk_header h;
        memcpy(&h, b.p + off, sizeof h);
        if (h.type == TALLY__CHUNK_THREADS)
            break;
        off += 16 + h.len;
    }
    tl_trace_init(&t);
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, off + 16 + 16 + 6, "cut.tally", &err), 0);
    const tl_event *cp = find(&t, "copied");
    CHECK(cp && !strcmp(tl_str(&t.strings, t.tracks[cp->track].name), "loader"));
    tl_trace_free(&t);
    tl_trace_init(&t);
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, off + 16 + 16 + 5, "cut.tally", &err), 0);
    cp = find(&t, "copied");
    CHECK(cp && t.tracks[cp->track].name == 0);
    tl_trace_free(&t);

    /* a hole of zeros (a reserved range never written) ends the readable part */
    fb c = {0};
    put(&c, b.p, b.len);
    off = 16;
    size_t events_seen = 0;
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

/* ---- files of a killed program ----------------------------------------------------------- */

static void killed_prologue(fb *b, int64_t end_ns)
{
    static const site_def sites[] = {
        {"a", TALLY_USER},     {"m", TALLY_USER},     {"c", TALLY_USER}, {"b", TALLY_USER},
        {"t1", TALLY_FORWARD}, {"inner", TALLY_USER}, {"x", TALLY_USER}, {"late", TALLY_USER}};
    file_start(b, end_ns, sites, 8);
}

/* What a killed program leaves: no END_NS, no THREADS, no STATS. Thread 1 (tid 100): "t1"
 * [10, 20), "t1" from 30 never popped, mark "m" at 40. Thread 2 (tid 200), the last chunk
 * (*last: its offset), 21 record slots:
 *   0 PUSH a @100 | 1-2 STR "dyn" | 3 PUSH @110 | 4 POP @120 | 5 MARK m @130
 *   6-11 DEVICE "kern" [135, 145) | 12-16 API "cudaLaunchKernel" [131, 133) | 17 VALUE 2.5
 *   18 COUNTER c @150 | 19 BEGIN b @160 | 20 POP @170 (closes a) */
static fb killed_file(size_t *last)
{
    fb b = {0};
    killed_prologue(&b, 0);
    size_t at = events_begin(&b, 1, 100, 0, 0);
    rec(&b, TALLY__R_PUSH, 10, 0x5000);
    rec(&b, TALLY__R_POP, 20, 0);
    rec(&b, TALLY__R_PUSH, 30, 0x5000);
    rec(&b, TALLY__R_MARK, 40, 0x2000);
    chunk_end(&b, at);
    *last = at = events_begin(&b, 2, 200, 0, 0);
    rec(&b, TALLY__R_PUSH, 100, 0x1000);
    str_rec(&b, TALLY__STR_NAME, TALLY_BACKWARD, "dyn");
    rec(&b, TALLY__R_PUSH, 110, 0);
    rec(&b, TALLY__R_POP, 120, 0);
    rec(&b, TALLY__R_MARK, 130, 0x2000);
    device_rec(&b, 135, 145, 9, "kern");
    api_rec(&b, 131, 133, 9, 200, "cudaLaunchKernel");
    double v = 2.5;
    uint64_t bits;
    memcpy(&bits, &v, 8);
    rec(&b, TALLY__R_VALUE, 0, bits);
    rec(&b, TALLY__R_COUNTER, 150, 0x3000);
    rec(&b, TALLY__R_BEGIN, 160, 0x4000);
    rec(&b, TALLY__R_POP, 170, 0);
    chunk_end(&b, at);
    return b;
}

static size_t count_named(const tl_trace *t, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++)
        n += !strcmp(tl_str(&t->strings, t->ev[i].name), name);
    return n;
}

static void append_line(const char *line, void *arg)
{
    char *buf = arg;
    size_t n = strlen(buf);
    snprintf(buf + n, 2048 - n, "%s\n", line);
}

/* One of the lines tl_trace_warnings gives for t contains text. */
static int has_warning(const tl_trace *t, const char *text)
{
    char buf[2048] = "";
    tl_trace_warnings(t, append_line, buf);
    return strstr(buf, text) != NULL;
}

/* Cut at every byte of the last chunk: the complete records before the cut are read, a record
 * whose payload is cut is left out, no cut is an error, and what is still open is counted. */
TEST(cut_at_every_byte_of_the_last_chunk)
{
    size_t last;
    fb b = killed_file(&last);
    const size_t recs = last + sizeof(tally__chunk_header) + sizeof(tally__events_header);
    CHECK_EQ_INT(b.len, recs + 21 * 16);
    for (size_t len = last; len <= b.len; len++) {
        /* K: whole record slots of the last chunk in the file, -1 when its header is cut */
        long k = len >= recs ? (long)((len - recs) / 16) : -1;
        struct {
            const char *name;
            long need; /* slots that must be in the file for the event to be read */
        } ev[] = {{"a", 1},  {"dyn", 4}, {"m", 6}, {"kern", 12}, {"cudaLaunchKernel", 17},
                  {"c", 19}, {"b", 20}};
        size_t want = 3; /* thread 1: t1, t1, m */
        for (size_t i = 0; i < sizeof ev / sizeof *ev; i++)
            want += k >= ev[i].need;
        uint64_t open = 1 + (k >= 1 && k < 21) + (k == 4) + (k >= 20);
        int64_t max_ns = k >= 21   ? 170
                         : k >= 20 ? 160
                         : k >= 19 ? 150
                         : k >= 12 ? 145
                         : k >= 6  ? 130
                         : k >= 5  ? 120
                         : k >= 4  ? 110
                         : k >= 1  ? 100
                                   : 40;
        tl_trace t;
        tl_trace_init(&t);
        tl_error err = {{0}};
        int rc = tl_read_tally_mem(&t, b.p, len, "cut.tally", &err);
        CHECK_EQ_INT(rc, 0);
        if (rc != 0) {
            fprintf(stderr, "  cut at %zu: %s\n", len, err.msg);
            tl_trace_free(&t);
            continue;
        }
        CHECK_EQ_INT(t.nev, want);
        CHECK_EQ_INT(t.open_ranges, open);
        CHECK_EQ_INT(t.cut_at, len > last && len < b.len ? last : 0);
        CHECK_EQ_INT(t.unwritten, 0);
        CHECK_EQ_INT(count_named(&t, "m"), k >= 6 ? 2 : 1);
        for (size_t i = 0; i < t.nev; i++) {
            const tl_event *e = &t.ev[i];
            const char *n = tl_str(&t.strings, e->name);
            int unclosed = (e->flags & TL_EV_UNCLOSED) != 0;
            if (!strcmp(n, "a")) {
                CHECK_EQ_INT(e->dur, k >= 21 ? 70 : max_ns - 100);
                CHECK_EQ_INT(unclosed, k < 21);
            } else if (!strcmp(n, "dyn")) {
                CHECK(e->cat == TL_CAT_BACKWARD && e->ts == 110);
                CHECK_EQ_INT(e->dur, k >= 5 ? 10 : max_ns - 110);
                CHECK_EQ_INT(unclosed, k < 5);
            } else if (!strcmp(n, "kern")) {
                CHECK(e->ts == 135 && e->dur == 10 && e->corr == 9 && e->cat == TL_CAT_KERNEL);
            } else if (!strcmp(n, "cudaLaunchKernel")) {
                CHECK(e->ts == 131 && e->dur == 2 && e->cat == TL_CAT_RUNTIME);
            } else if (!strcmp(n, "c")) {
                CHECK(e->ts == 150 && tl_counter_value(e) == 2.5 && e->cat == TL_CAT_COUNTER);
            } else if (!strcmp(n, "b")) {
                CHECK(e->ts == 160 && unclosed && (e->flags & TL_EV_ASYNC));
                CHECK_EQ_INT(e->dur, max_ns - 160);
            } else if (!strcmp(n, "t1") && e->ts == 30) {
                CHECK(unclosed);
                CHECK_EQ_INT(e->dur, max_ns - 30);
            } else {
                CHECK(!unclosed);
            }
        }
        if (len > last && len < b.len) {
            char want_w[128];
            snprintf(want_w, sizeof want_w, "warning: the file ends inside a chunk at offset %zu",
                     last);
            CHECK(has_warning(&t, want_w));
        }
        tl_trace_free(&t);
    }
    free(b.p);
}

/* Thread 1's first run (seq 0) was never written past its 4th record (*damaged: its offset);
 * thread 2's run and thread 1's next run (seq 1) came after it and are whole:
 *   run A, thread 1: PUSH t1 @1000, PUSH inner @1100, POP @1200, PUSH a @1300, then 4 zero slots
 *   run B, thread 2: PUSH x @1000, POP @2000
 *   run C, thread 1: PUSH late @3000, POP @3100, POP @3200 (pops a range of run A, or not) */
static fb hole_file(size_t *damaged, size_t *run_c)
{
    fb b = {0};
    killed_prologue(&b, 0);
    size_t at = *damaged = events_begin(&b, 1, 100, 0, 0);
    rec(&b, TALLY__R_PUSH, 1000, 0x5000);
    rec(&b, TALLY__R_PUSH, 1100, 0x6000);
    rec(&b, TALLY__R_POP, 1200, 0);
    rec(&b, TALLY__R_PUSH, 1300, 0x1000);
    static const char zeros[64];
    put(&b, zeros, sizeof zeros);
    chunk_end(&b, at);
    at = events_begin(&b, 2, 200, 0, 0);
    rec(&b, TALLY__R_PUSH, 1000, 0x7000);
    rec(&b, TALLY__R_POP, 2000, 0);
    chunk_end(&b, at);
    at = *run_c = events_begin(&b, 1, 100, 1, 0);
    rec(&b, TALLY__R_PUSH, 3000, 0x8000);
    rec(&b, TALLY__R_POP, 3100, 0);
    rec(&b, TALLY__R_POP, 3200, 0);
    chunk_end(&b, at);
    return b;
}

TEST(zeros_end_a_run_and_later_runs_are_read)
{
    size_t damaged, run_c;
    fb b = hole_file(&damaged, &run_c);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "hole.tally", &err), 0);
    CHECK_EQ_INT(t.nev, 5);
    const tl_event *e;
    /* the end of the trace: 3100 (the last pop found no range of run C open: not a time) */
    CHECK((e = find(&t, "t1")) && e->dur == 2100 && (e->flags & TL_EV_UNCLOSED));
    CHECK((e = find(&t, "inner")) && e->dur == 100 && !(e->flags & TL_EV_UNCLOSED));
    CHECK((e = find(&t, "a")) && e->dur == 1800 && (e->flags & TL_EV_UNCLOSED));
    CHECK((e = find(&t, "x")) && e->dur == 1000 && !(e->flags & TL_EV_UNCLOSED));
    CHECK((e = find(&t, "late")) && e->dur == 100 && !(e->flags & TL_EV_UNCLOSED));
    CHECK_EQ_INT(t.open_ranges, 2);
    CHECK_EQ_INT(t.unwritten, 1);
    CHECK_EQ_INT(t.unwritten_at, damaged);
    CHECK_EQ_INT(t.cut_at, 0);
    char want[160];
    snprintf(want, sizeof want,
             "warning: 1 chunks of the file were never written in full (the first at offset %zu;",
             damaged);
    CHECK(has_warning(&t, want));
    CHECK(has_warning(&t, "warning: 2 ranges never closed (still open when recording ended; "
                          "drawn to the end of the trace)"));
    tl_trace_free(&t);

    /* zeros from inside a record's payload: that record is left out too */
    fb c = {0};
    killed_prologue(&c, 0);
    size_t at = events_begin(&c, 1, 100, 0, 0);
    rec(&c, TALLY__R_MARK, 500, 0x2000);
    device_rec(&c, 510, 520, 1, "kern_a");
    device_rec(&c, 530, 540, 2, "kern_b"); /* 6 slots: zeroed from its 3rd on */
    rec(&c, TALLY__R_MARK, 550, 0x2000);
    chunk_end(&c, at);
    memset(c.p + c.len - 16 - 4 * 16, 0, 4 * 16 + 16);
    tl_trace_init(&t);
    CHECK_EQ_INT(tl_read_tally_mem(&t, c.p, c.len, "zeros.tally", &err), 0);
    CHECK_EQ_INT(t.nev, 2);
    CHECK(find(&t, "m") && find(&t, "kern_a") && !find(&t, "kern_b"));
    CHECK_EQ_INT(t.unwritten, 1);
    tl_trace_free(&t);
    free(c.p);

    /* zeros, then data, in a whole run: malformed, an error at the zero record */
    memcpy(b.p + damaged + 16 + 32 + 4 * 16 + 16, b.p + damaged + 16 + 32, 16);
    char msg[600];
    CHECK_EQ_INT(read_err(b.p, b.len, msg, sizeof msg), -1);
    snprintf(want, sizeof want, "f.tally: offset %zu: expected a record type 1..16, found 0",
             damaged + 16 + 32 + 4 * 16);
    CHECK_STR(msg, want);
    free(b.p);
}

/* A chunk reserved by the program and never written at all (its header is zeros): the reader
 * goes on at the next chunk header after the zeros; zeros to the end of the file end it. */
TEST(chunk_never_written_is_skipped)
{
    size_t damaged, run_c;
    fb b = hole_file(&damaged, &run_c);
    tally__chunk_header h;
    memcpy(&h, b.p + damaged, sizeof h);
    memset(b.p + damaged, 0, sizeof h + h.len);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "skip.tally", &err), 0);
    CHECK_EQ_INT(t.nev, 2);
    const tl_event *e;
    CHECK((e = find(&t, "x")) && e->dur == 1000);
    CHECK((e = find(&t, "late")) && e->dur == 100 && !(e->flags & TL_EV_UNCLOSED));
    CHECK_EQ_INT(t.open_ranges, 0);
    CHECK_EQ_INT(t.unwritten, 1);
    CHECK_EQ_INT(t.unwritten_at, damaged);
    tl_trace_free(&t);
    free(b.p);

    /* zeros from run C's header to the end of the file */
    b = hole_file(&damaged, &run_c);
    memset(b.p + run_c, 0, b.len - run_c);
    tl_trace_init(&t);
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "end.tally", &err), 0);
    CHECK_EQ_INT(t.nev, 4); /* t1, inner, a of run A; x */
    CHECK(find(&t, "late") == NULL);
    CHECK_EQ_INT(t.unwritten, 2);
    CHECK_EQ_INT(t.unwritten_at, damaged);
    tl_trace_free(&t);
    free(b.p);
}

/* Ranges never closed: a push never popped, a begin never ended, a thread that exited with a
 * range open (its slot then reused by another thread); the step closed by tally_stop is flagged
 * but is no range. The count is the reader's, or the recorder's when that is larger. */
static fb open_ranges_file(int with_stats)
{
    static const site_def sites[] = {{"p_open", TALLY_USER},
                                     {"b_open", TALLY_COMMUNICATION},
                                     {"closed", TALLY_USER},
                                     {"exited", TALLY_USER},
                                     {"new", TALLY_USER}};
    fb b = {0};
    file_start(&b, 100, sites, 5);
    size_t at = events_begin(&b, 1, 100, 0, 0);
    rec(&b, TALLY__R_STEP_BEGIN, 0, 0);
    rec(&b, TALLY__R_PUSH, 10, 0x1000);
    rec(&b, TALLY__R_BEGIN, 20, 0x2000);
    rec(&b, TALLY__R_PUSH, 30, 0x3000);
    rec(&b, TALLY__R_POP, 40, 0);
    rec(&b, TALLY__R_VALUE, 0, 4);
    rec(&b, TALLY__R_STEP_END, 50, 0);
    rec(&b, TALLY__R_STEP_BEGIN, 60, 1);
    rec(&b, TALLY__R_STEP_STOP, 70, 1);
    chunk_end(&b, at);
    at = events_begin(&b, 2, 200, 0, 0);
    rec(&b, TALLY__R_PUSH, 15, 0x4000);
    chunk_end(&b, at);
    at = events_begin(&b, 2, 201, 1, 0);
    rec(&b, TALLY__R_PUSH, 80, 0x5000);
    rec(&b, TALLY__R_POP, 90, 0);
    rec(&b, TALLY__R_POP, 95, 0); /* no range of this thread open: not "exited"'s */
    chunk_end(&b, at);
    if (with_stats) {
        at = chunk_begin(&b, TALLY__CHUNK_STATS);
        tally__stats_chunk st = {
            .records = 9, .bad_pops = 1, .unclosed = 5, .steps = 1, .buffers = 3};
        put(&b, &st, sizeof st);
        chunk_end(&b, at);
    }
    return b;
}

/* GPU work and ranges across threads, for the flows and begin/end pairing (and the export):
 *   thread 1 (tid 100, "main"): step 0 [1000, 3000) 8 samples; "fwd" [1000, 3000) holding "op"
 *     [1100, 1900) with shapes; begin "async_a" 2000 (ended by thread 2 at 2800); the end of
 *     thread 2's "async_b" at 2600 (before its begin is decoded); "twice" [2100, 2200) ended
 *     again at 2300; counter "loss" 0.25; step 1 [3000, stop 3500)
 *   thread 2 (tid 200, "worker"): begin "async_b" 2500; "dyn_name" [2700, 2750) (STR, backward)
 *   thread 3 (tid 300, the collector): runtime/driver calls on tids 100 and 200 and device work,
 *     by correlation id: 1 one launch, one kernel; 2 one launch, kernels on streams 13 and 7
 *     (stream 7's track comes first: the flow goes there); 3 a runtime call and the driver call
 *     inside it, one kernel (from the runtime call); 4 two runtime calls (tid 200's track comes
 *     first: the THREADS chunk names it before the events are read), one kernel; 5 no device work;
 * 6 no call; 7 a driver call only; 8 a GPU annotation (no flow); 9 two kernels at the same start
 * (the longer first); 10 two kernels alike (the first decoded); plus a copy and a memset with no
 * name (PyTorch's names in the export). */
static fb gpu_file(void)
{
    static const site_def sites[] = {{"fwd", TALLY_FORWARD},  {"op", TALLY_OPERATOR},
                                     {"async_a", TALLY_USER}, {"async_b", TALLY_USER},
                                     {"loss", TALLY_USER},    {"twice", TALLY_USER}};
    fb b = {0};
    file_start(&b, 4000, sites, 6);
    size_t at = events_begin(&b, 1, 100, 0, 0);
    str_rec(&b, TALLY__STR_THREAD, 0, "main");
    rec(&b, TALLY__R_STEP_BEGIN, 1000, 0);
    rec(&b, TALLY__R_PUSH, 1000, 0x1000);
    str_rec(&b, TALLY__STR_ARG, 0, "[[4, 128], [128]]");
    rec(&b, TALLY__R_PUSH, 1100, 0x2000);
    rec(&b, TALLY__R_POP, 1900, 0);
    rec(&b, TALLY__R_BEGIN, 2000, 0x3000);            /* handle 1:0 */
    rec(&b, TALLY__R_END, 2600, (UINT64_C(2) << 40)); /* async_b */
    rec(&b, TALLY__R_BEGIN, 2100, 0x6000);            /* handle 1:1 */
    rec(&b, TALLY__R_END, 2200, (UINT64_C(1) << 40) | 1);
    rec(&b, TALLY__R_END, 2300, (UINT64_C(1) << 40) | 1);
    double v = 0.25;
    uint64_t bits;
    memcpy(&bits, &v, 8);
    rec(&b, TALLY__R_VALUE, 0, bits);
    rec(&b, TALLY__R_COUNTER, 2400, 0x5000);
    rec(&b, TALLY__R_POP, 3000, 0);
    rec(&b, TALLY__R_VALUE, 0, 8);
    rec(&b, TALLY__R_STEP_END, 3000, 0);
    rec(&b, TALLY__R_STEP_BEGIN, 3000, 1);
    rec(&b, TALLY__R_STEP_STOP, 3500, 1);
    chunk_end(&b, at);
    at = events_begin(&b, 3, 300, 0, 0);
    const unsigned K = TALLY__CAT_KERNEL, RT = TALLY__CAT_RUNTIME, DRV = TALLY__CAT_DRIVER;
    api_call(&b, RT, 1200, 1210, 1, 100, "cudaLaunchKernel");
    device_ev(&b, (dev_ev){K, 7, 1300, 1400, 1, "k1", 0, 0, 0});
    api_call(&b, RT, 1220, 1230, 2, 100, "cudaLaunchKernel");
    device_ev(&b, (dev_ev){K, 13, 1500, 1600, 2, "k2a", 0, 0, 0});
    device_ev(&b, (dev_ev){K, 7, 1450, 1550, 2, "k2b", 0, 0, 0});
    api_call(&b, RT, 1240, 1250, 3, 100, "cudaLaunchKernel");
    api_call(&b, DRV, 1242, 1248, 3, 100, "cuLaunchKernel");
    device_ev(&b, (dev_ev){K, 7, 1700, 1800, 3, "k3", 0, 0, 0});
    api_call(&b, RT, 1280, 1290, 4, 200, "cudaLaunchKernel");
    api_call(&b, RT, 1260, 1270, 4, 100, "cudaLaunchKernel");
    device_ev(&b, (dev_ev){K, 7, 1900, 2000, 4, "k4", 0, 0, 0});
    api_call(&b, RT, 1300, 1310, 5, 100, "cudaMalloc");
    device_ev(&b, (dev_ev){K, 7, 2100, 2200, 6, "k6", 0, 0, 0});
    api_call(&b, DRV, 1320, 1330, 7, 100, "cuLaunchKernel");
    device_ev(&b, (dev_ev){K, 13, 2200, 2300, 7, "k7", 0, 0, 0});
    api_call(&b, RT, 1340, 1350, 8, 100, "cudaLaunchKernel");
    device_ev(&b, (dev_ev){TALLY__CAT_GPU_USER, 7, 1340, 2400, 8, "annot", 0, 0, 0});
    device_ev(&b, (dev_ev){TALLY__CAT_MEMCPY, 13, 2400, 2500, 0, "", TALLY__COPY_HTOD,
                           TALLY__DEV_PAGEABLE, 1 << 20});
    device_ev(&b, (dev_ev){TALLY__CAT_MEMSET, 13, 2500, 2510, 0, "", 0, 0, 4096});
    api_call(&b, RT, 1360, 1370, 9, 100, "cudaLaunchKernel");
    device_ev(&b, (dev_ev){K, 7, 2600, 2700, 9, "k9a", 0, 0, 0});
    device_ev(&b, (dev_ev){K, 7, 2600, 2750, 9, "k9b", 0, 0, 0});
    api_call(&b, RT, 1380, 1390, 10, 100, "cudaLaunchKernel");
    device_ev(&b, (dev_ev){K, 7, 2800, 2900, 10, "k10a", 0, 0, 0});
    device_ev(&b, (dev_ev){K, 7, 2800, 2900, 10, "k10b", 0, 0, 0});
    chunk_end(&b, at);
    at = events_begin(&b, 2, 200, 0, 0);
    rec(&b, TALLY__R_BEGIN, 2500, 0x4000); /* handle 2:0 */
    rec(&b, TALLY__R_END, 2800, (UINT64_C(1) << 40));
    str_rec(&b, TALLY__STR_NAME, TALLY_BACKWARD, "dyn_name");
    rec(&b, TALLY__R_PUSH, 2700, 0);
    rec(&b, TALLY__R_POP, 2750, 0);
    chunk_end(&b, at);
    at = chunk_begin(&b, TALLY__CHUNK_THREADS);
    tally__thread_entry te = {2, 6, 200};
    put(&b, &te, sizeof te);
    put(&b, "worker", 6);
    pad8(&b);
    chunk_end(&b, at);
    return b;
}

TEST(gpu_work_links_and_cross_thread_ranges)
{
    fb b = gpu_file();
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "gpu.tally", &err), 0);
    const tl_event *e;
    CHECK((e = find(&t, "async_a")) && e->ts == 2000 && e->dur == 800);
    CHECK((e = find(&t, "async_b")) && e->ts == 2500 && e->dur == 100);
    CHECK((e = find(&t, "twice")) && e->dur == 100);
    CHECK((e = find(&t, "dyn_name")) && e->dur == 50 && e->cat == TL_CAT_BACKWARD);
    CHECK((e = find(&t, "op")) && !strcmp(tl_str(&t.strings, e->args), "[[4, 128], [128]]"));
    CHECK((e = find(&t, "ProfilerStep#1")) && e->dur == 500 && (e->flags & TL_EV_UNCLOSED));
    CHECK_EQ_INT(t.open_ranges, 0);
    /* the flows the export draws: each call with a link, to the device work it names */
    static const struct {
        int64_t corr;
        const char *dev;
        int64_t call_tid;
        uint16_t call_cat;
    } want[] = {{1, "k1", 100, TL_CAT_RUNTIME},   {2, "k2b", 100, TL_CAT_RUNTIME},
                {3, "k3", 100, TL_CAT_RUNTIME},   {4, "k4", 200, TL_CAT_RUNTIME},
                {7, "k7", 100, TL_CAT_DRIVER},    {9, "k9b", 100, TL_CAT_RUNTIME},
                {10, "k10a", 100, TL_CAT_RUNTIME}};
    size_t flows = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const tl_event *c = &t.ev[i];
        if ((c->cat != TL_CAT_RUNTIME && c->cat != TL_CAT_DRIVER) || c->link == TL_NONE)
            continue;
        flows++;
        const char *dev = tl_str(&t.strings, t.ev[c->link].name);
        int ok = 0;
        for (size_t k = 0; k < sizeof want / sizeof *want; k++)
            ok |= want[k].corr == c->corr && !strcmp(want[k].dev, dev) &&
                  want[k].call_tid == t.tracks[c->track].tid && want[k].call_cat == c->cat;
        CHECK(ok);
    }
    CHECK_EQ_INT(flows, 7);
    tl_trace_free(&t);
    free(b.p);
}

/* ---- each track's events laid out together -------------------------------------------------- */

/* What the test knows of each event it writes: its identity (a unique name, or the size of a
 * memory event), its track and order keys, and when the decoder meets it (runs by slot, then
 * seq: the slot in the high bits). */
typedef struct known_ev {
    char name[40];
    int64_t tid, stream; /* stream -1: on thread tid */
    int64_t ts, dur, bytes;
    int step;
    uint64_t seq;
    uint32_t track;
} known_ev;

typedef struct known_set {
    known_ev *ev;
    size_t n, cap;
} known_set;

static known_ev *known_add(known_set *k, const char *name, int64_t tid, int64_t ts, uint64_t seq)
{
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 1024;
        k->ev = realloc(k->ev, k->cap * sizeof *k->ev);
    }
    known_ev *e = &k->ev[k->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->tid = tid;
    e->stream = -1;
    e->ts = ts;
    e->seq = seq;
    return e;
}

static int known_cmp(const void *a, const void *b)
{
    const known_ev *x = a, *y = b;
    if (tl_sorts_before(x->track, x->ts, x->dur, x->step, x->seq, y->track, y->ts, y->dur, y->step,
                        y->seq))
        return -1;
    return tl_sorts_before(y->track, y->ts, y->dur, y->step, y->seq, x->track, x->ts, x->dur,
                           x->step, x->seq);
}

/* One run of a thread, to be written in any order among the others. */
typedef struct run_buf {
    uint32_t slot;
    int64_t tid;
    uint64_t seq;
    fb b;
} run_buf;

typedef struct run_list {
    run_buf *r;
    size_t n;
} run_list;

static void run_add(run_list *l, uint32_t slot, int64_t tid, uint64_t seq, fb *b)
{
    l->r = realloc(l->r, (l->n + 1) * sizeof *l->r);
    l->r[l->n++] = (run_buf){slot, tid, seq, *b};
    memset(b, 0, sizeof *b);
}

/* A host thread's records in runs of about 40: ranges nested at random, one in ties starting
 * with the one before (ties broken by the length, steps first, then the order decoded); marks;
 * allocations (unique sizes) each with a label, which is no event; on slot 100, steps each ended
 * before the next. */
static void host_thread(known_set *k, run_list *l, uint32_t slot, int64_t tid, int ties)
{
    size_t open[64], depth = 0, recs = 0, step_at = 0;
    int64_t t = 1000, step = -1;
    uint64_t seq = (uint64_t)slot << 32, rseq = 0;
    fb cur = {0};
    char nm[40];
    for (int i = 0; i < 1500; i++) {
        int r = rand() % 10;
        if (recs >= 40) {
            run_add(l, slot, tid, rseq++, &cur);
            recs = 0;
        }
        if (r < 4 && depth < 64) {
            snprintf(nm, sizeof nm, "t%lld_%d", (long long)tid, i);
            str_rec(&cur, TALLY__STR_NAME, TALLY_USER, nm);
            rec(&cur, TALLY__R_PUSH, (uint64_t)t, 0);
            known_add(k, nm, tid, t, seq++);
            open[depth++] = k->n - 1;
            recs += 4;
        } else if (r < 8 && depth) {
            rec(&cur, TALLY__R_POP, (uint64_t)t, 0);
            known_ev *e = &k->ev[open[--depth]];
            e->dur = t - e->ts;
            recs++;
        } else if (r == 8 && i % 2) {
            snprintf(nm, sizeof nm, "m%lld_%d", (long long)tid, i);
            str_rec(&cur, TALLY__STR_NAME, TALLY_USER, nm);
            rec(&cur, TALLY__R_MARK, (uint64_t)t, 0);
            known_add(k, nm, tid, t, seq++);
            recs += 4;
        } else if (r == 8) {
            tally__fmt_memory m = {0x1000 + (uint64_t)i, -1, 0, -1, -1};
            int64_t bytes = 10000 * tid + i;
            rec(&cur, TALLY__R_MEMORY_SHORT, (uint64_t)t, (uint64_t)bytes);
            put(&cur, &m, 16);
            m.category = TALLY__MEM_LABEL;
            rec(&cur, TALLY__R_MEMORY_SHORT, (uint64_t)t, 64);
            put(&cur, &m, 16);
            known_add(k, "[memory]", tid, t, seq++)->bytes = bytes;
            recs += 4;
        } else if (r == 9 && tid == 100) {
            if (step >= 0) {
                rec(&cur, TALLY__R_STEP_END, (uint64_t)t, (uint64_t)step);
                k->ev[step_at].dur = t - k->ev[step_at].ts;
            }
            step++;
            rec(&cur, TALLY__R_STEP_BEGIN, (uint64_t)t, (uint64_t)step);
            snprintf(nm, sizeof nm, "ProfilerStep#%lld", (long long)step);
            known_add(k, nm, tid, t, seq++)->step = 1;
            step_at = k->n - 1;
            recs += 2;
        }
        t += rand() % ties ? 1 + rand() % 3 : 0; /* one in ties: events start together */
    }
    while (depth) {
        rec(&cur, TALLY__R_POP, (uint64_t)t, 0);
        known_ev *e = &k->ev[open[--depth]];
        e->dur = t - e->ts;
    }
    if (step >= 0) {
        rec(&cur, TALLY__R_STEP_END, (uint64_t)t, (uint64_t)step);
        k->ev[step_at].dur = t - k->ev[step_at].ts;
    }
    run_add(l, slot, tid, rseq, &cur);
}

/* A collector thread's runs: runtime calls on the host threads at the times of their events in
 * time order (nhost known events, in each thread's order; many as long as the event: ties broken
 * only by the order decoded), some on a thread with no runs of its own (tid 999), and kernels on
 * two streams in time order but a few. */
static void collector_thread(known_set *k, run_list *l, uint32_t slot, int64_t tid, size_t nhost)
{
    uint64_t seq = (uint64_t)slot << 32, rseq = 0;
    fb cur = {0};
    char nm[40];
    int64_t kt[2] = {1000, 1000};
    size_t next = 0;
    for (int i = 0; i < 2000; i++) {
        if (i % 50 == 49)
            run_add(l, slot, tid, rseq++, &cur);
        int r = rand() % 4;
        if (r < 2) {
            next += 1 + (size_t)rand() % 4; /* the host events are in their threads' order */
            const known_ev *h = &k->ev[next % nhost];
            int64_t on = rand() % 8 ? h->tid : 999, dur = rand() % 2 ? h->dur : rand() % 5;
            snprintf(nm, sizeof nm, "api%d", i);
            api_rec(&cur, h->ts, h->ts + dur, i + 1, on, nm);
            known_add(k, nm, on, h->ts, seq++)->dur = dur;
        } else {
            int s = r - 2;
            int64_t ts = rand() % 100 ? kt[s] : kt[s] - rand() % 40, dur = rand() % 4;
            kt[s] += 1 + rand() % 3;
            snprintf(nm, sizeof nm, "k%d", i);
            device_ev(&cur,
                      (dev_ev){TALLY__CAT_KERNEL, s ? 13 : 7, ts, ts + dur, i + 1, nm, 0, 0, 0});
            known_ev *e = known_add(k, nm, -1, ts, seq++);
            e->stream = s ? 13 : 7;
            e->dur = dur;
        }
    }
    run_add(l, slot, tid, rseq, &cur);
}

/* The .tally reader lays each track's events out together (a first pass counts them), so that
 * the finish merges a track's runs in place instead of permuting the array: the model must be
 * the one sorting the events as decoded gives, ties included, with the collector's slot before
 * or after the threads', runs written in any order, at 1 and 3 threads; and no permutation.
 * With events out of place on their track every few events (ties at every third start), the
 * finish permutes, to the same order. */
TEST(tracks_laid_out_together_keep_the_models_order)
{
    for (int variant = 0; variant < 3; variant++) {
        srand(900 + (unsigned)variant);
        known_set k = {0};
        run_list l = {0};
        uint32_t coll = variant == 1 ? 5 : 1, first = variant == 1 ? 1 : 2; /* the collector's
                                                                  slot: before or after theirs */
        for (uint32_t h = 0; h < 4; h++)
            host_thread(&k, &l, first + h, 100 + h, variant == 2 ? 3 : 200);
        collector_thread(&k, &l, coll, 300, k.n);
        fb b = {0};
        file_start(&b, 0, NULL, 0);
        for (size_t i = l.n; i > 1; i--) { /* the runs in a shuffled order */
            size_t j = (size_t)rand() % i;
            run_buf x = l.r[i - 1];
            l.r[i - 1] = l.r[j];
            l.r[j] = x;
        }
        for (size_t i = 0; i < l.n; i++) {
            size_t at = events_begin(&b, l.r[i].slot, l.r[i].tid, l.r[i].seq, 0);
            put(&b, l.r[i].b.p, l.r[i].b.len);
            chunk_end(&b, at);
            free(l.r[i].b.p);
        }
        for (int threads = 1; threads <= 3; threads += 2) {
            tl_trace t;
            tl_trace_init(&t);
            t.read_threads = threads;
            tl_error err = {{0}};
            CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "layout.tally", &err), 0);
            uint32_t ntracks = t.ntracks;
            for (size_t i = 0; i < k.n; i++)
                k.ev[i].track = k.ev[i].stream >= 0
                                    ? tl_trace_track(&t, TL_TRACK_STREAM, 4242, k.ev[i].stream, 0)
                                    : tl_trace_track(&t, TL_TRACK_THREAD, 4242, k.ev[i].tid, -1);
            CHECK_EQ_INT(t.ntracks, ntracks); /* every one was there */
            qsort(k.ev, k.n, sizeof *k.ev, known_cmp);
            CHECK_EQ_INT(t.nev, k.n);
            size_t bad = 0;
            for (size_t i = 0; i < k.n && i < t.nev; i++) {
                const tl_event *e = &t.ev[i];
                bad += strcmp(tl_str(&t.strings, e->name), k.ev[i].name) != 0 ||
                       e->track != k.ev[i].track || e->ts != k.ev[i].ts || e->dur != k.ev[i].dur ||
                       (e->cat == TL_CAT_MEMORY && e->value != k.ev[i].bytes);
            }
            CHECK_EQ_INT(bad, 0);
            if (variant < 2) {
                CHECK_EQ_INT(t.read_stats.permuted, 0);
                CHECK(t.read_stats.merged > 0);
            } else {
                CHECK_EQ_INT(t.read_stats.permuted, t.nev);
            }
            tl_trace_free(&t);
        }
        free(b.p);
        free(k.ev);
        free(l.r);
    }
}

TEST(ranges_never_closed_are_flagged_and_counted)
{
    fb b = open_ranges_file(0);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "open.tally", &err), 0);
    const tl_event *e;
    CHECK((e = find(&t, "p_open")) && e->ts == 10 && e->dur == 90 && (e->flags & TL_EV_UNCLOSED));
    CHECK((e = find(&t, "b_open")) && e->ts == 20 && e->dur == 80 && (e->flags & TL_EV_UNCLOSED) &&
          (e->flags & TL_EV_ASYNC));
    CHECK((e = find(&t, "exited")) && e->ts == 15 && e->dur == 85 && (e->flags & TL_EV_UNCLOSED));
    CHECK((e = find(&t, "closed")) && e->dur == 10 && !(e->flags & TL_EV_UNCLOSED));
    CHECK((e = find(&t, "new")) && e->dur == 10 && !(e->flags & TL_EV_UNCLOSED));
    CHECK((e = find(&t, "ProfilerStep#0")) && e->dur == 50 && !(e->flags & TL_EV_UNCLOSED));
    CHECK((e = find(&t, "ProfilerStep#1")) && e->dur == 10 && (e->flags & TL_EV_UNCLOSED));
    if (e)
        CHECK(e->track != find(&t, "exited")->track && find(&t, "new")->track != e->track);
    CHECK(find(&t, "exited")->track != find(&t, "new")->track); /* tid 200 and 201 */
    CHECK_EQ_INT(t.open_ranges, 3);
    CHECK_EQ_INT(t.unclosed, 0); /* no STATS: the program was killed */
    CHECK(has_warning(&t, "warning: 3 ranges never closed (still open when recording ended; "
                          "drawn to the end of the trace)"));
    CHECK(!has_warning(&t, "the file ends inside"));
    tl_trace_free(&t);
    free(b.p);

    b = open_ranges_file(1);
    tl_trace_init(&t);
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "open.tally", &err), 0);
    CHECK_EQ_INT(t.open_ranges, 3);
    CHECK_EQ_INT(t.unclosed, 5);
    CHECK(has_warning(&t, "warning: 5 ranges never closed"));
    tl_trace_free(&t);
    free(b.p);
}

/* tally's Chrome export marks them "tally_unclosed": 1, and reading the export back flags and
 * counts them again (the step closed by stop aside). */
TEST(ranges_never_closed_survive_export)
{
    fb b = open_ranges_file(0);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "open.tally", &err), 0);
    char *json = NULL;
    size_t jlen = 0;
    FILE *f = open_memstream(&json, &jlen);
    CHECK(f != NULL);
    if (!f) {
        tl_trace_free(&t);
        free(b.p);
        return;
    }
    CHECK_EQ_INT(tl_write_chrome_file(&t, f, &err), 0);
    fclose(f);
    CHECK(strstr(json, "\"tally_unclosed\":1") != NULL);
    tl_trace back;
    tl_trace_init(&back);
    CHECK_EQ_INT(tl_read_json_mem(&back, json, jlen, "open.json", &err), 0);
    CHECK_EQ_INT(back.open_ranges, 3);
    const char *names[] = {"p_open", "b_open", "exited", "ProfilerStep#1"};
    for (size_t i = 0; i < 4; i++) {
        const tl_event *e = find(&back, names[i]);
        CHECK(e && (e->flags & TL_EV_UNCLOSED));
    }
    CHECK(find(&back, "closed") && !(find(&back, "closed")->flags & TL_EV_UNCLOSED));
    CHECK(has_warning(&back, "warning: 3 ranges never closed"));
    tl_trace_free(&back);
    free(json);
    tl_trace_free(&t);
    free(b.p);
}

/* Format 1.1: an argument string written once with a key (VALUE + STR ARG) and named by its key
 * afterwards (ARGREF), from any thread; an ARGREF whose definition is not in the file; the lost
 * records and the per-thread losses of the STATS and LOSSES chunks. */
TEST(keyed_arguments_and_losses)
{
    static const site_def s[] = {{"mm", TALLY_OPERATOR}};
    fb b = {0};
    file_start(&b, 0, s, 1);
    size_t at = events_begin(&b, 1, 4242, 0, 0);
    rec(&b, TALLY__R_VALUE, 0, 0xabc1); /* defines key 0xabc1 */
    str_rec(&b, TALLY__STR_ARG, 0, "[[2, 3], [3, 4]]");
    rec(&b, TALLY__R_PUSH, 100, 0x1000);
    rec(&b, TALLY__R_POP, 200, 0);
    rec(&b, TALLY__R_ARGREF, 0, 0xabc1); /* the same argument again */
    rec(&b, TALLY__R_PUSH, 300, 0x1000);
    rec(&b, TALLY__R_POP, 400, 0);
    rec(&b, TALLY__R_ARGREF, 0, 0x5555); /* a key never defined */
    rec(&b, TALLY__R_PUSH, 500, 0x1000);
    rec(&b, TALLY__R_POP, 600, 0);
    rec(&b, TALLY__R_PUSH, 700, 0x1000); /* no argument at all */
    rec(&b, TALLY__R_POP, 800, 0);
    chunk_end(&b, at);
    at = events_begin(&b, 2, 4243, 0, 0); /* another thread names the first thread's key */
    rec(&b, TALLY__R_ARGREF, 0, 0xabc1);
    rec(&b, TALLY__R_PUSH, 150, 0x1000);
    rec(&b, TALLY__R_POP, 250, 0);
    chunk_end(&b, at);
    at = chunk_begin(&b, TALLY__CHUNK_LOSSES);
    tally__loss_entry l1 = {1, 0, 4242, 10, 0}, l2 = {2, 0, 4243, 0, 30};
    put(&b, &l1, sizeof l1);
    put(&b, &l2, sizeof l2);
    chunk_end(&b, at);
    at = chunk_begin(&b, TALLY__CHUNK_STATS);
    tally__stats_chunk st = {.records = 10, .dropped = 10, .lost = 30, .io_errno = 28};
    put(&b, &st, sizeof st);
    chunk_end(&b, at);

    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "args.tally", &err), 0);
    const char *want[] = {"[[2, 3], [3, 4]]", "[[2, 3], [3, 4]]", "(argument not in the file)", ""};
    int64_t starts[] = {100, 300, 500, 700};
    int seen = 0, other = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const tl_event *e = &t.ev[i];
        if (t.tracks[e->track].tid == 4243) {
            CHECK_STR(tl_str(&t.strings, e->args), "[[2, 3], [3, 4]]");
            other++;
            continue;
        }
        for (int k = 0; k < 4; k++)
            if (e->ts == starts[k]) {
                CHECK_STR(tl_str(&t.strings, e->args), want[k]);
                CHECK_EQ_INT(e->dur, 100);
                seen++;
            }
    }
    CHECK_EQ_INT(seen, 4);
    CHECK_EQ_INT(other, 1);
    CHECK_EQ_INT(t.lost, 30);
    CHECK_EQ_INT(t.io_errno, 28);
    CHECK_EQ_INT(t.nthread_losses, 2);
    if (t.nthread_losses == 2) { /* worst first */
        CHECK_EQ_INT(t.thread_losses[0].tid, 4243);
        CHECK_EQ_INT(t.thread_losses[0].lost, 30);
        CHECK_EQ_INT(t.thread_losses[1].dropped, 10);
    }
    CHECK(has_warning(&t,
                      "30 records lost: the file could not be written (No space left on device)"));
    CHECK(has_warning(&t, "records lost per thread: tid 4243 30, tid 4242 10"));
    tl_trace_free(&t);
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

/* Copy b into c with 1-4 random bits flipped; the length to read: every third time (by i) cut
 * at a random byte, else whole. */
static size_t damaged_copy(unsigned char *c, const fb *b, int i)
{
    memcpy(c, b->p, b->len);
    int flips = 1 + rand() % 4;
    for (int k = 0; k < flips; k++)
        c[rand() % b->len] ^= (unsigned char)(1u << (rand() % 8));
    return (i % 3 == 0) ? (size_t)rand() % b->len : b->len;
}

TEST(random_damage_never_crashes)
{
    fb b = known_file();
    unsigned char *c = malloc(b.len);
    srand(12345);
    int ok = 0, bad = 0;
    for (int i = 0; i < 3000; i++) {
        size_t len = damaged_copy(c, &b, i);
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

/* ---- the decoding in parts: the same model as the decoding in order ------------------------- */

/* Read p[len] at one thread (in order) and at threads (in parts when it has several threads):
 * 0 and 0 or -1 and -1 with the same error; the same events field by field (string ids
 * included: the parts' strings get their ids in the order the decoding in order makes them),
 * strings, tracks, memory table, step samples and counts. *parts: the parts of the second read
 * (0: decoded in order). Returns the number of differences. */
static int same_model(const void *p, size_t len, int threads, size_t *parts)
{
    tl_trace a, b;
    tl_trace_init(&a);
    tl_trace_init(&b);
    a.read_threads = 1;
    b.read_threads = threads;
    tl_error ea = {{0}}, eb = {{0}};
    int ra = tl_read_tally_mem(&a, p, len, "parts.tally", &ea);
    int rb = tl_read_tally_mem(&b, p, len, "parts.tally", &eb);
    int diff = 0;
    *parts = b.read_stats.windows;
    if (ra != rb || (ra != 0 && strcmp(ea.msg, eb.msg) != 0)) {
        fprintf(stderr, "  in order: %d %s; in parts: %d %s\n", ra, ea.msg, rb, eb.msg);
        diff++;
    } else if (ra == 0) {
        diff += a.nev != b.nev || a.strings.count != b.strings.count || a.ntracks != b.ntracks ||
                a.nmem != b.nmem || a.open_ranges != b.open_ranges || a.unwritten != b.unwritten ||
                a.unwritten_at != b.unwritten_at;
        for (size_t i = 0; !diff && i < a.nev; i++)
            diff += memcmp(&a.ev[i], &b.ev[i], sizeof a.ev[i]) != 0;
        for (uint32_t i = 0; !diff && i < a.strings.count; i++)
            diff += strcmp(a.strings.str[i], b.strings.str[i]) != 0;
        for (uint32_t i = 0; !diff && i < a.ntracks; i++)
            diff += a.tracks[i].tid != b.tracks[i].tid || a.tracks[i].name != b.tracks[i].name ||
                    a.tracks[i].kind != b.tracks[i].kind;
        for (size_t i = 0; !diff && i < a.nmem; i++)
            diff += memcmp(&a.mem[i], &b.mem[i], sizeof a.mem[i]) != 0;
        size_t nsteps = 0;
        for (size_t i = 0; i < a.nev; i++)
            nsteps += a.ev[i].cat == TL_CAT_STEP;
        diff += (a.step_samples == NULL) != (b.step_samples == NULL);
        for (size_t i = 0; !diff && a.step_samples && i < nsteps; i++)
            diff += a.step_samples[i] != b.step_samples[i];
    }
    tl_trace_free(&a);
    tl_trace_free(&b);
    return diff;
}

/* A file of four threads and a collector whose parts depend on each other through what is shared
 * in the decoding's order: a BEGIN ended on a later thread and an END met before its BEGIN (and
 * one ended twice); keyed arguments defined on one thread and named on a later one (found) and
 * on an earlier one (not in the file: the decoding in order has not met the definition yet); the
 * same texts on several threads (one string id); new names in STR records, device and API
 * records; thread names; memory records with names; steps with samples; a call site not in the
 * file; a thread's runs with a gap (seq) and one never written in full. */
static fb shared_file(void)
{
    static const site_def sites[] = {{"fwd", TALLY_FORWARD}, {"op", TALLY_OPERATOR}};
    fb b = {0};
    file_start(&b, 0, sites, 2);
    /* thread slot 1: names key 0xb2 before thread 2 defines it (lost), defines 0xa1 */
    size_t at = events_begin(&b, 1, 100, 0, 0);
    str_rec(&b, TALLY__STR_THREAD, 0, "main");
    rec(&b, TALLY__R_STEP_BEGIN, 10, 0);
    rec(&b, TALLY__R_ARGREF, 0, 0xb2);
    rec(&b, TALLY__R_PUSH, 20, 0x1000);
    rec(&b, TALLY__R_VALUE, 0, 0xa1);
    str_rec(&b, TALLY__STR_ARG, 0, "[[1, 2]]");
    rec(&b, TALLY__R_PUSH, 30, 0x2000);
    rec(&b, TALLY__R_POP, 40, 0);
    str_rec(&b, TALLY__STR_NAME, TALLY_BACKWARD, "shared text");
    rec(&b, TALLY__R_PUSH, 50, 0);
    rec(&b, TALLY__R_BEGIN, 55, 0x1000);                /* handle (1, 0): ended on slot 3 */
    rec(&b, TALLY__R_END, 57, (UINT64_C(3) << 40) | 0); /* slot 3's BEGIN, met later */
    rec(&b, TALLY__R_END, 58, (UINT64_C(3) << 40) | 0); /* and again: the first wins */
    rec(&b, TALLY__R_POP, 60, 0);
    rec(&b, TALLY__R_PUSH, 62, 0x9999); /* a call site not in the file */
    rec(&b, TALLY__R_POP, 64, 0);
    rec(&b, TALLY__R_POP, 70, 0);
    rec(&b, TALLY__R_VALUE, 0, 64);
    rec(&b, TALLY__R_STEP_END, 80, 0);
    chunk_end(&b, at);
    at = events_begin(&b, 1, 100, 1, 1); /* its next run */
    rec(&b, TALLY__R_STEP_BEGIN, 80, 1);
    rec(&b, TALLY__R_PUSH, 85, 0x1000);
    tally__fmt_memory m = {0x7000, 1, 0, 512, 1024};
    str_rec(&b, TALLY__STR_NAME, 0, "blocks.0.weight");
    rec(&b, TALLY__R_MEMORY, 86, 256);
    put(&b, &m, sizeof m);
    put(&b, (char[16]){0}, (sizeof m + 15) / 16 * 16 - sizeof m);
    rec(&b, TALLY__R_VALUE, 0, 32);
    rec(&b, TALLY__R_STEP_END, 90, 1);
    chunk_end(&b, at);
    at = events_begin(&b, 1, 100, 3, 1); /* a gap: run 2 is missing; the push stays open */
    rec(&b, TALLY__R_POP, 95, 0);
    rec(&b, TALLY__R_PUSH, 96, 0x2000);
    rec(&b, TALLY__R_POP, 97, 0);
    chunk_end(&b, at);
    /* thread slot 2: defines 0xb2, names 0xa1 (defined before: found) and 0xc3 (never) */
    at = events_begin(&b, 2, 101, 0, 0);
    str_rec(&b, TALLY__STR_THREAD, 0, "worker");
    rec(&b, TALLY__R_ARGREF, 0, 0xa1);
    rec(&b, TALLY__R_PUSH, 21, 0x2000);
    rec(&b, TALLY__R_POP, 22, 0);
    rec(&b, TALLY__R_VALUE, 0, 0xb2);
    str_rec(&b, TALLY__STR_ARG, 0, "[[3]]");
    rec(&b, TALLY__R_MARK, 23, 0x2000);
    rec(&b, TALLY__R_ARGREF, 0, 0xc3);
    rec(&b, TALLY__R_MARK, 24, 0x2000);
    rec(&b, TALLY__R_ARGREF, 0, 0xb2);
    rec(&b, TALLY__R_MARK, 25, 0x2000);
    str_rec(&b, TALLY__STR_NAME, TALLY_BACKWARD, "shared text");
    rec(&b, TALLY__R_PUSH, 26, 0);
    rec(&b, TALLY__R_POP, 27, 0);
    str_rec(&b, TALLY__STR_NAME, 0, "worker only");
    rec(&b, TALLY__R_MARK, 28, 0);
    chunk_end(&b, at);
    /* thread slot 3: the BEGIN slot 1 ended already; ends slot 1's */
    at = events_begin(&b, 3, 102, 0, 0);
    rec(&b, TALLY__R_BEGIN, 52, 0x1000);
    rec(&b, TALLY__R_END, 66, (UINT64_C(1) << 40) | 0);
    rec(&b, TALLY__R_ARGREF, 0, 0xb2); /* defined by slot 2, before: found */
    rec(&b, TALLY__R_PUSH, 67, 0x1000);
    rec(&b, TALLY__R_POP, 68, 0);
    chunk_end(&b, at);
    /* thread slot 4: a run never written in full (zeros from its third record on) */
    at = events_begin(&b, 4, 103, 0, 0);
    rec(&b, TALLY__R_PUSH, 31, 0x1000);
    rec(&b, TALLY__R_POP, 32, 0);
    put(&b, (char[64]){0}, 64);
    chunk_end(&b, at);
    /* the collector (slot 5): runtime calls on threads 100 and 101 and their kernels */
    at = events_begin(&b, 5, 999, 0, 0);
    api_rec(&b, 33, 34, 7, 100, "cudaLaunchKernel");
    device_rec(&b, 35, 45, 7, "gemm_kernel");
    api_rec(&b, 36, 37, 8, 101, "cudaLaunchKernel");
    device_rec(&b, 46, 50, 8, "shared text");
    device_ev(&b, (dev_ev){TALLY__CAT_KERNEL, 9, 51, 52, 0, "other stream", 0, 0, 0});
    chunk_end(&b, at);
    return b;
}

/* A thread of 301 ranges and a collector of twelve runs (written last first) of runtime calls on
 * it, kernels and copies, names new in some runs, the collector's name set in two of them. */
static fb collector_file(void)
{
    static const site_def sites[] = {{"step", TALLY_FORWARD}};
    fb b = {0};
    file_start(&b, 0, sites, 1);
    size_t at = events_begin(&b, 1, 100, 0, 0);
    str_rec(&b, TALLY__STR_THREAD, 0, "main");
    rec(&b, TALLY__R_PUSH, 10, 0x1000);
    for (int k = 0; k < 300; k++) { /* enough records for a part of its own */
        rec(&b, TALLY__R_PUSH, 11 + (uint64_t)k * 16, 0x1000);
        rec(&b, TALLY__R_POP, 19 + (uint64_t)k * 16, 0);
    }
    rec(&b, TALLY__R_POP, 5000, 0);
    chunk_end(&b, at);
    for (int run = 11; run >= 0; run--) {
        at = events_begin(&b, 2, 900, (uint64_t)run, 0);
        if (run == 6 || run == 9)
            str_rec(&b, TALLY__STR_THREAD, 0, run == 6 ? "collector" : "cupti");
        char kname[32];
        snprintf(kname, sizeof kname, "kernel_%d", run % 5);
        for (int k = 0; k < 20; k++) {
            int64_t t0 = 20 + run * 400 + k * 20, corr = run * 100 + k + 1;
            api_rec(&b, t0, t0 + 3, corr, 100, k % 2 ? "cudaMemcpyAsync" : "cudaLaunchKernel");
            if (k % 2)
                device_ev(&b, (dev_ev){TALLY__CAT_MEMCPY, 8, t0 + 4, t0 + 6, corr, "", 1, 0, 1024});
            else
                device_rec(&b, t0 + 4, t0 + 9, corr, kname);
        }
        chunk_end(&b, at);
    }
    return b;
}

TEST(a_collectors_calls_and_kernels_in_parts)
{
    fb b = collector_file();
    for (int threads = 2; threads <= 7; threads++) {
        size_t parts = 0;
        CHECK_EQ_INT(same_model(b.p, b.len, threads, &parts), 0);
        CHECK_EQ_INT(parts, 2); /* a part a recorded thread */
    }
    tl_trace t;
    tl_trace_init(&t);
    t.read_threads = 4;
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "collector.tally", &err), 0);
    size_t calls = 0, kernels = 0, copies = 0, linked = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const tl_event *e = &t.ev[i];
        calls += e->cat == TL_CAT_RUNTIME;
        kernels += e->cat == TL_CAT_KERNEL;
        copies += e->cat == TL_CAT_MEMCPY;
        linked += e->cat == TL_CAT_KERNEL && e->link != TL_NONE && t.ev[e->link].corr == e->corr &&
                  t.ev[e->link].cat == TL_CAT_RUNTIME;
    }
    CHECK_EQ_INT(calls, 240);
    CHECK_EQ_INT(kernels, 120);
    CHECK_EQ_INT(copies, 120);
    CHECK_EQ_INT(linked, 120);
    uint32_t coll = tl_trace_find_track(&t, TL_TRACK_THREAD, 4242, 900, -1);
    CHECK(coll != UINT32_MAX);
    if (coll != UINT32_MAX) /* the name set last in the file's order */
        CHECK_STR(tl_str(&t.strings, t.tracks[coll].name), "cupti");
    tl_trace_free(&t);
    free(b.p);
}

TEST(decoding_in_parts_gives_the_model_of_the_decoding_in_order)
{
    size_t parts = 0;
    fb b = shared_file();
    for (int threads = 2; threads <= 7; threads++) {
        CHECK_EQ_INT(same_model(b.p, b.len, threads, &parts), 0);
        CHECK(parts >= 2); /* it was decoded in parts */
    }
    /* what the decoding in order gives, by construction */
    tl_trace t;
    tl_trace_init(&t);
    t.read_threads = 3;
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.p, b.len, "parts.tally", &err), 0);
    const char *lost = "(argument not in the file)";
    struct {
        int64_t tid, ts, dur;
        const char *name, *args;
    } want[] = {
        {100, 20, 77, "fwd", lost},           /* ends at the gap's first pop: no, stays open */
        {100, 30, 10, "op", "[[1, 2]]"},      /* its own definition */
        {101, 21, 1, "op", "[[1, 2]]"},       /* thread 100's, decoded before */
        {101, 23, 0, "op", "[[3]]"},          /* STR ARG of a definition */
        {101, 24, 0, "op", lost},             /* never defined */
        {101, 25, 0, "op", "[[3]]"},          /* its own, by key */
        {102, 67, 1, "fwd", "[[3]]"},         /* thread 101's */
        {100, 55, 11, "fwd", ""},             /* begun on 100, ended on 102 at 66 */
        {102, 52, 5, "fwd", ""},              /* begun on 102, ended first on 100 at 57 */
        {100, 62, 2, "(unknown)", ""},        /* a call site not in the file */
        {101, 26, 1, "shared text", ""},      /* the same text on two threads */
        {100, 33, 1, "cudaLaunchKernel", ""}, /* the collector's call on thread 100 */
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int found = 0;
        for (size_t i = 0; i < t.nev; i++) {
            const tl_event *e = &t.ev[i];
            if (t.tracks[e->track].kind == TL_TRACK_THREAD &&
                t.tracks[e->track].tid == want[k].tid && e->ts == want[k].ts &&
                !strcmp(tl_str(&t.strings, e->name), want[k].name)) {
                found = 1;
                if (k) /* the first: open to the end of the trace */
                    CHECK_EQ_INT(e->dur, want[k].dur);
                CHECK_STR(tl_str(&t.strings, e->args), want[k].args);
            }
        }
        if (!found)
            fprintf(stderr, "  not found: %s at %lld\n", want[k].name, (long long)want[k].ts);
        CHECK(found);
    }
    CHECK_EQ_INT(tl_intern(&t.strings, "shared text", 11) < t.strings.count, 1);
    int named = 0;
    for (uint32_t i = 0; i < t.ntracks; i++)
        named += !strcmp(tl_str(&t.strings, t.tracks[i].name), "main") ||
                 !strcmp(tl_str(&t.strings, t.tracks[i].name), "worker");
    CHECK_EQ_INT(named, 2);
    CHECK_EQ_INT(t.nmem, 1);
    if (t.nmem == 1)
        CHECK_STR(tl_str(&t.strings, t.mem[0].name), "blocks.0.weight");
    CHECK_EQ_INT(t.unwritten, 1);
    CHECK(t.step_samples != NULL);
    if (t.step_samples) {
        CHECK_EQ_INT(t.step_samples[0], 64);
        CHECK_EQ_INT(t.step_samples[1], 32);
    }
    tl_trace_free(&t);

    /* damaged copies: the same model or the same error either way */
    unsigned char *c = malloc(b.len);
    srand(777);
    int differ = 0, in_parts = 0;
    for (int i = 0; i < 1500; i++) {
        size_t len = damaged_copy(c, &b, i);
        differ += same_model(c, len, 2 + i % 6, &parts) != 0;
        in_parts += parts >= 2;
    }
    CHECK_EQ_INT(differ, 0);
    CHECK(in_parts > 500);
    free(c);
    free(b.p);
}

/* pairs push/pop pairs of one call site on 4 threads, in runs of 2048 pairs (64 KiB). */
static fb ranges_file(int pairs)
{
    static const site_def sites[] = {{"r", TALLY_USER}};
    fb b = {0};
    file_start(&b, 0, sites, 1);
    const int per_run = 2048, runs = (pairs + per_run - 1) / per_run;
    uint64_t ts = 1000;
    for (int r = 0, left = pairs; r < runs; r++) {
        size_t at = events_begin(&b, 1 + r % 4, 10 + r % 4, (uint64_t)(r / 4), 0);
        for (int i = 0; i < per_run && left; i++, left--) {
            rec(&b, TALLY__R_PUSH, ts, 0x1000);
            rec(&b, TALLY__R_POP, ts + 50, 0);
            ts += 100;
        }
        chunk_end(&b, at);
    }
    return b;
}

/* n push/pop pairs on one thread (runs of 2048 pairs) and n kernel launches (a runtime call and
 * its kernel, runs of 1024) in a collector's thread: a GPU program's shape, the collector with
 * most of the records. */
static fb launches_file(int n)
{
    static const site_def sites[] = {{"r", TALLY_USER}};
    fb b = {0};
    file_start(&b, 0, sites, 1);
    for (int r = 0, left = n; left; r++) {
        size_t at = events_begin(&b, 1, 10, (uint64_t)r, 0);
        for (int i = 0; i < 2048 && left; i++, left--) {
            int64_t ts = 1000 + (int64_t)(n - left) * 100;
            rec(&b, TALLY__R_PUSH, (uint64_t)ts, 0x1000);
            rec(&b, TALLY__R_POP, (uint64_t)ts + 50, 0);
        }
        chunk_end(&b, at);
    }
    for (int r = 0, left = n; left; r++) {
        size_t at = events_begin(&b, 2, 99, (uint64_t)r, 0);
        for (int i = 0; i < 1024 && left; i++, left--) {
            int64_t ts = 1000 + (int64_t)(n - left) * 100, corr = n - left + 1;
            api_rec(&b, ts + 10, ts + 20, corr, 10, "cudaLaunchKernel");
            device_rec(&b, ts + 30, ts + 80, corr, "gemm_kernel");
        }
        chunk_end(&b, at);
    }
    return b;
}

TEST(reader_speed)
{
    /* 2 M records: 1 M push/pop pairs on 4 threads in 64 KiB runs */
    const int runs = 2000000 / 4096, per_run = 4096;
    fb b = ranges_file(runs * per_run / 2);
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

/* The seed corpus of fuzz_tally_reader: the hand-built files whole, cut inside their last
 * chunk, and with runs never written in full. */
static int write_file(const char *path, const void *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

static int write_seed(const char *dir, const char *name, const void *p, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name); /* not .tally: .gitignore has *.tally */
    return write_file(path, p, len);
}

static int write_seeds(const char *dir)
{
    int bad = 0;
    size_t last, damaged, run_c;
    fb b = known_file();
    bad |= write_seed(dir, "known", b.p, b.len);
    bad |= write_seed(dir, "known_cut_stats", b.p, b.len - 8);
    free(b.p);
    b = killed_file(&last);
    bad |= write_seed(dir, "killed", b.p, b.len);
    bad |= write_seed(dir, "killed_cut_header", b.p, last + 8);
    bad |= write_seed(dir, "killed_cut_device", b.p, last + 16 + 32 + 9 * 16 + 5);
    bad |= write_seed(dir, "killed_cut_counter", b.p, last + 16 + 32 + 18 * 16 + 3);
    free(b.p);
    b = hole_file(&damaged, &run_c);
    bad |= write_seed(dir, "zero_tail", b.p, b.len);
    memset(b.p + run_c, 0, b.len - run_c);
    bad |= write_seed(dir, "zeros_to_end", b.p, b.len);
    free(b.p);
    b = hole_file(&damaged, &run_c);
    tally__chunk_header h;
    memcpy(&h, b.p + damaged, sizeof h);
    memset(b.p + damaged, 0, sizeof h + h.len);
    bad |= write_seed(dir, "chunk_never_written", b.p, b.len);
    free(b.p);
    b = open_ranges_file(1);
    bad |= write_seed(dir, "open_ranges", b.p, b.len);
    free(b.p);
    b = gpu_file();
    bad |= write_seed(dir, "gpu_flows", b.p, b.len);
    bad |= write_seed(dir, "gpu_flows_cut", b.p, b.len - 300);
    free(b.p);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write-seeds"))
        return write_seeds(argv[2]);
    if (argc == 4 && (!strcmp(argv[1], "--write-ranges") || !strcmp(argv[1], "--write-launches"))) {
        fb b = !strcmp(argv[1], "--write-ranges") ? ranges_file(atoi(argv[3]))
                                                  : launches_file(atoi(argv[3]));
        int bad = write_file(argv[2], b.p, b.len);
        free(b.p);
        return bad;
    }
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
    RUN(cut_short_reads_complete_entries);
    RUN(cut_at_every_byte_of_the_last_chunk);
    RUN(zeros_end_a_run_and_later_runs_are_read);
    RUN(chunk_never_written_is_skipped);
    RUN(gpu_work_links_and_cross_thread_ranges);
    RUN(tracks_laid_out_together_keep_the_models_order);
    RUN(decoding_in_parts_gives_the_model_of_the_decoding_in_order);
    RUN(a_collectors_calls_and_kernels_in_parts);
    RUN(ranges_never_closed_are_flagged_and_counted);
    RUN(ranges_never_closed_survive_export);
    RUN(keyed_arguments_and_losses);
    RUN(unknown_chunks_skipped);
    RUN(random_damage_never_crashes);
    RUN(reader_speed);
    return test_summary();
}
