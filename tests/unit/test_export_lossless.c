/* test_export_lossless.c — keep_raw: the JSON reader keeps each element of traceEvents and each
 * top-level member as text (whitespace outside strings dropped, strings untouched), the writer
 * writes exactly those, nothing added; without keep_raw nothing is kept (the reports' loads
 * cost what they did). */
#include "json_check.h"
#include "testlib.h"
#include "trace/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A trace with what the model does not hold: unknown top-level members, metadata, flows with
 * their binding points, a B/E pair whose E has args, a counter with two values, a global
 * instant, an async event, a non-object element, and strings whose blanks and escapes count. */
static const char doc[] =
    "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"rank\": 3, \"pg_config\": [{\"a\": "
    "\"b c\"}]},\n  \"traceEvents\": [\n"
    "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": "
    "\"py  thon\"}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 2,\n"
    "   \"ts\": 10.1234, \"dur\": 5, \"args\": {\"External id\": 7, \"Call stack\": \"a.py(1): "
    "f;\\n\\\"b\\\"\"}},\n"
    "  {\"ph\": \"s\", \"id\": 7, \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\", \"pid\": 1, \"tid\": "
    "2, \"ts\": 10.1234},\n"
    "  {\"ph\": \"f\", \"id\": 7, \"bp\": \"e\", \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\", "
    "\"pid\": 1, \"tid\": 2, \"ts\": 12},\n"
    "  {\"ph\": \"B\", \"name\": \"range\", \"pid\": 1, \"tid\": 2, \"ts\": 20},\n"
    "  {\"ph\": \"E\", \"pid\": 1, \"tid\": 2, \"ts\": 30, \"args\": {\"out\": 1}},\n"
    "  {\"ph\": \"C\", \"name\": \"mem\", \"pid\": 1, \"tid\": 2, \"ts\": 21, \"args\": {\"a\": "
    "1, \"b\": 2.50}},\n"
    "  {\"ph\": \"i\", \"s\": \"g\", \"name\": \"Iteration Start\", \"pid\": \"\", \"tid\": "
    "\"\", \"ts\": 9},\n"
    "  {\"ph\": \"b\", \"id\": \"0x1\", \"cat\": \"async\", \"name\": \"req\", \"pid\": 1, "
    "\"tid\": 2, \"ts\": 22},\n"
    "  42\n"
    "  ],\n  \"traceName\": \"t\",\n  \"baseTimeNanoseconds\": 1700000000000000000\n}\n";

/* The compacted texts the export must hold, one each. */
static const char *const kept[] = {
    "\"schemaVersion\":1",
    "\"distributedInfo\":{\"rank\":3,\"pg_config\":[{\"a\":\"b c\"}]}",
    "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"py  "
    "thon\"}}",
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":2,\"ts\":10.1234,"
    "\"dur\":5,\"args\":{\"External id\":7,\"Call stack\":\"a.py(1): f;\\n\\\"b\\\"\"}}",
    "{\"ph\":\"s\",\"id\":7,\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"pid\":1,\"tid\":2,\"ts\":"
    "10.1234}",
    "{\"ph\":\"f\",\"id\":7,\"bp\":\"e\",\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"pid\":1,"
    "\"tid\":2,\"ts\":12}",
    "{\"ph\":\"B\",\"name\":\"range\",\"pid\":1,\"tid\":2,\"ts\":20}",
    "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":30,\"args\":{\"out\":1}}",
    "{\"ph\":\"C\",\"name\":\"mem\",\"pid\":1,\"tid\":2,\"ts\":21,\"args\":{\"a\":1,\"b\":2.50}}",
    "{\"ph\":\"i\",\"s\":\"g\",\"name\":\"Iteration Start\",\"pid\":\"\",\"tid\":\"\",\"ts\":9}",
    "{\"ph\":\"b\",\"id\":\"0x1\",\"cat\":\"async\",\"name\":\"req\",\"pid\":1,\"tid\":2,\"ts\":"
    "22}",
    "\"traceName\":\"t\"",
    "\"baseTimeNanoseconds\":1700000000000000000",
};

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0, k = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + k, needle))
        n++;
    return n;
}

/* The trace written by the Chrome writer, as a NUL-terminated string (caller frees). */
static char *write_to_string(const tl_trace *t)
{
    FILE *f = tmpfile();
    tl_error err = {{0}};
    CHECK(f && tl_write_chrome_file(t, f, &err) == 0);
    long n = ftell(f);
    char *s = calloc((size_t)n + 1, 1);
    rewind(f);
    CHECK(fread(s, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    return s;
}

TEST(every_element_and_member_is_written_as_read)
{
    tl_trace t;
    tl_trace_init(&t);
    t.keep_raw = 1;
    tl_error err = {{0}};
    CHECK(tl_read_json_mem(&t, doc, sizeof doc - 1, "doc", &err) == 0);
    CHECK(t.raw_kept);
    /* the model still reads what it reads: the op, the closed range, the two counter values */
    CHECK_EQ_INT(t.nev, 4);
    CHECK_EQ_INT(t.rank, 3);
    char *out = write_to_string(&t);
    CHECK(json_valid(out));
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        test_current = kept[i];
        CHECK_EQ_INT(count(out, kept[i]), 1);
    }
    test_current = "every_element_and_member_is_written_as_read";
    /* nothing added: no flows, thread names or closing instant of tally's own */
    CHECK_EQ_INT(count(out, "\"ph\":\"M\""), 1);
    CHECK_EQ_INT(count(out, "ac2g"), 0);
    CHECK_EQ_INT(count(out, "Record Window End"), 0);
    CHECK_EQ_INT(count(out, "\"ph\":\"C\""), 1);
    CHECK(strstr(out, "\n42") != NULL);
    free(out);
    tl_trace_free(&t);
}

TEST(export_reads_back_the_same)
{
    tl_trace a, b;
    tl_trace_init(&a);
    tl_trace_init(&b);
    a.keep_raw = b.keep_raw = 1;
    tl_error err = {{0}};
    CHECK(tl_read_json_mem(&a, doc, sizeof doc - 1, "doc", &err) == 0);
    char *once = write_to_string(&a);
    CHECK(tl_read_json_mem(&b, once, strlen(once), "once", &err) == 0);
    CHECK_EQ_INT(b.nev, a.nev);
    for (size_t i = 0; i < a.nev && i < b.nev; i++) {
        CHECK_EQ_INT(b.ev[i].ts, a.ev[i].ts);
        CHECK_EQ_INT(b.ev[i].dur, a.ev[i].dur);
        CHECK_EQ_INT(b.ev[i].cat, a.ev[i].cat);
        CHECK_EQ_INT(b.ev[i].value, a.ev[i].value);
    }
    char *twice = write_to_string(&b);
    CHECK(strcmp(once, twice) == 0); /* a fixed point: the second export is the first */
    free(once);
    free(twice);
    tl_trace_free(&a);
    tl_trace_free(&b);
}

TEST(without_keep_raw_nothing_is_kept)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK(tl_read_json_mem(&t, doc, sizeof doc - 1, "doc", &err) == 0);
    CHECK(!t.raw_kept);
    CHECK_EQ_INT(t.raw.n, 0);
    CHECK(t.raw.buf == NULL && t.raw_other == NULL && t.raw_members == NULL);
    for (size_t i = 0; i < t.nev; i++)
        CHECK_EQ_INT(t.ev[i].raw, 0);
    char *out = write_to_string(&t); /* the model's own export, as before */
    CHECK(json_valid(out) && strstr(out, "Record Window End"));
    free(out);
    tl_trace_free(&t);
}

TEST(bad_input_is_still_one_error)
{
    static const char bad[] = "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1,, }]}";
    tl_trace t;
    tl_trace_init(&t);
    t.keep_raw = 1;
    tl_error err = {{0}};
    CHECK(tl_read_json_mem(&t, bad, sizeof bad - 1, "bad.json", &err) != 0);
    CHECK(strncmp(err.msg, "bad.json:1:", 11) == 0);
    CHECK(!t.raw_kept);
    tl_trace_free(&t);
}

/* Each event's args object is marked in its kept text (the SQLite export's args column reads
 * it there): the first top-level "args" of the event only, not one inside a string or a nested
 * object, nor a later one; none when args is no object or absent. */
TEST(each_events_args_object_is_marked)
{
    static const char marked[] =
        "[{\"ph\": \"X\", \"name\": \"k \\\"args\\\": {1}\", \"pid\": 1, \"tid\": 1, \"ts\": 1, "
        "\"dur\": 1, \"x\": {\"args\": {\"no\": 1}}, \"args\" : { \"a\" : [1, {\"b\": \"}\"}] } "
        ", \"args\": {\"later\": 1}},\n"
        " {\"ph\": \"X\", \"name\": \"n\", \"pid\": 1, \"tid\": 1, \"ts\": 3, \"dur\": 1, "
        "\"args\": 5},\n"
        " {\"ph\": \"X\", \"name\": \"m\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": 1}]";
    static const char *const want[] = {"{\"a\":[1,{\"b\":\"}\"}]}", NULL, NULL};
    tl_trace t;
    tl_trace_init(&t);
    t.keep_raw = 1;
    tl_error err = {{0}};
    CHECK(tl_read_json_mem(&t, marked, sizeof marked - 1, "marked", &err) == 0);
    CHECK_EQ_INT(t.nev, 3);
    for (size_t i = 0; i < t.nev && i < 3; i++) {
        const char *p = NULL;
        size_t n = 0;
        int m = tl_raw_marked(&t.raw, t.ev[i].raw, &p, &n);
        CHECK_EQ_INT(m, want[i] != NULL);
        if (m == 1 && want[i])
            CHECK(n == strlen(want[i]) && memcmp(p, want[i], n) == 0);
    }
    tl_trace_free(&t);
}

/* The old one-character-at-a-time compaction, the reference for the vectorised one. */
static size_t compact_ref(char *o, const char *s, size_t n)
{
    size_t k = 0;
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            o[k++] = c;
            if (c == '\\' && i + 1 < n)
                o[k++] = s[++i];
            else if (c == '"')
                in_str = 0;
        } else if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
            o[k++] = c;
            in_str = c == '"';
        }
    }
    return k;
}

/* Random texts of blanks, punctuation and strings of every length (escapes anywhere, also at a
 * 16-byte boundary) compact as the reference does, and a part marked between strings is found
 * at the reference's offset. */
TEST(raw_text_compacts_like_the_reference)
{
    static const char pieces[] = " \n\t\r{}[],:0123456789";
    static const char inner[] = "ab \t\"\\/n{}:,xyz";
    unsigned seed = 12345;
    char text[600], ref[600];
    for (int round = 0; round < 3000; round++) {
        size_t n = 0, mark_b = 0, mark_e = 0;
        int marks = 0;
        while (n < 480) {
            seed = seed * 1103515245u + 12345u;
            unsigned r = (seed >> 8) % 100;
            if (r < 10 && marks < 2) { /* a mark boundary: outside strings */
                if (marks++ == 0)
                    mark_b = n;
                else
                    mark_e = n;
            } else if (r < 60) {
                text[n++] = pieces[(seed >> 16) % (sizeof pieces - 1)];
            } else { /* a string */
                text[n++] = '"';
                size_t len = (seed >> 12) % 40;
                for (size_t j = 0; j < len && n < 590; j++) {
                    seed = seed * 1103515245u + 12345u;
                    char c = inner[(seed >> 16) % (sizeof inner - 1)];
                    if (c == '"' || c == '\\') {
                        text[n++] = '\\';
                        text[n++] = c;
                    } else {
                        text[n++] = c;
                    }
                }
                text[n++] = '"';
            }
        }
        if (marks < 2)
            mark_e = n;
        tl_raw r = {0};
        uint32_t id = tl_raw_add(&r, text, n, mark_b, mark_e - mark_b);
        CHECK(id == 1);
        size_t len = 0;
        const char *got = tl_raw_text(&r, id, &len);
        size_t want = compact_ref(ref, text, n);
        CHECK(len == want && memcmp(got, ref, len) == 0);
        const char *p = NULL;
        size_t pn = 0;
        int m = tl_raw_marked(&r, id, &p, &pn);
        size_t before = compact_ref(ref, text, mark_b);
        size_t part = compact_ref(ref, text + mark_b, mark_e - mark_b);
        CHECK_EQ_INT(m, part > 0);
        if (m == 1)
            CHECK(p == got + before && pn == part);
        free(r.buf);
        free(r.end);
        free(r.mark);
    }
}

int main(void)
{
    RUN(every_element_and_member_is_written_as_read);
    RUN(export_reads_back_the_same);
    RUN(without_keep_raw_nothing_is_kept);
    RUN(bad_input_is_still_one_error);
    RUN(each_events_args_object_is_marked);
    RUN(raw_text_compacts_like_the_reference);
    return test_summary();
}
