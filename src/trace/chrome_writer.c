/*
 * chrome_writer.c — the trace model as Chrome trace JSON, the way PyTorch's profiler (Kineto)
 * writes it, so that Perfetto, chrome://tracing, TensorBoard's plugin and HTA open it and
 * PyTorch users find what they expect: ph "X" spans with Kineto's categories, ProfilerStep#N,
 * device work on pid = device and tid = stream, "ac2g" flows from launch to kernel, counters as
 * ph "C", thread and process names as ph "M", and timestamps in microseconds with three
 * decimals (nanosecond precision) relative to baseTimeNanoseconds.
 *
 * Speed: every field is formatted by hand into one large buffer (no printf per field) that is
 * written in blocks with fwrite or gzwrite, so the writer runs at several hundred MB/s.
 *
 * The file is written in pieces (chrome_json.h: the header, an event with its text, one end of a
 * flow, the track names, the end), so that the streaming .tally export (tally_export.c), which
 * has no model, writes every event the way the model's writer below does.
 */
#include "trace/chrome_json.h"
#include "trace/checked.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define OUT_BLOCK (1u << 20)

typedef struct tl_json {
    char *buf;
    size_t n;
    FILE *f;
    gzFile gz;
    const char *path; /* written by tl_json_open (NULL: to a FILE the caller owns) */
    int64_t base;     /* timestamps are written relative to this (ns) */
    int failed;
} jw;

static void jw_flush(jw *w)
{
    if (!w->n || w->failed)
        return;
    if (w->gz) {
        if (gzwrite(w->gz, w->buf, (unsigned)w->n) != (int)w->n)
            w->failed = 1;
    } else if (fwrite(w->buf, 1, w->n, w->f) != w->n) {
        w->failed = 1;
    }
    w->n = 0;
}

/* Make room for n more bytes (n <= OUT_BLOCK / 2). */
static inline char *jw_room(jw *w, size_t n)
{
    if (w->n + n > OUT_BLOCK * 2)
        jw_flush(w);
    return w->buf + w->n;
}

static inline void jw_lit(jw *w, const char *s, size_t len)
{
    if (len > OUT_BLOCK) {
        jw_flush(w);
        if (w->gz)
            w->failed |= gzwrite(w->gz, s, (unsigned)len) != (int)len;
        else
            w->failed |= fwrite(s, 1, len, w->f) != len;
        return;
    }
    memcpy(jw_room(w, len), s, len);
    w->n += len;
}
#define LIT(w, s) jw_lit((w), (s), sizeof(s) - 1)

static inline void jw_u64(jw *w, uint64_t v)
{
    char tmp[24];
    int i = 24;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    jw_lit(w, tmp + i, (size_t)(24 - i));
}

static inline void jw_i64(jw *w, int64_t v)
{
    if (v < 0) {
        LIT(w, "-");
        jw_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        jw_u64(w, (uint64_t)v);
    }
}

/* ns - base (saturated: a model not made by a reader can hold any times) */
static inline int64_t since(int64_t ns, int64_t base)
{
    return tl_sub_sat(ns, base);
}

/* ns as microseconds with three decimals: 1500 -> "1.500". Integer math only. */
static inline void jw_us(jw *w, int64_t ns)
{
    uint64_t v;
    if (ns < 0) {
        LIT(w, "-");
        v = (uint64_t)0 - (uint64_t)ns;
    } else {
        v = (uint64_t)ns;
    }
    jw_u64(w, v / 1000);
    char *p = jw_room(w, 4);
    unsigned r = (unsigned)(v % 1000);
    p[0] = '.';
    p[1] = (char)('0' + r / 100);
    p[2] = (char)('0' + r / 10 % 10);
    p[3] = (char)('0' + r % 10);
    w->n += 4;
}

static void jw_double(jw *w, double d)
{
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.6g", d);
    if (n <= 0 || n >= (int)sizeof tmp || strchr(tmp, 'n') || strchr(tmp, 'i'))
        LIT(w, "0");
    else
        jw_lit(w, tmp, (size_t)n);
}

/* A number that reads back as the same double: the fewest digits (15 to 17) that do; non-finite
 * values, which JSON has no number for, as 0. */
static void jw_double_exact(jw *w, double d)
{
    char tmp[40];
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    if (n <= 0 || n >= (int)sizeof tmp || strchr(tmp, 'n') || strchr(tmp, 'i'))
        LIT(w, "0");
    else
        jw_lit(w, tmp, (size_t)n);
}

/* A JSON string with quotes. Control characters are escaped; bytes that are not valid UTF-8
 * become U+FFFD so that strict parsers accept the file. */
static void jw_str(jw *w, const char *s, size_t len)
{
    LIT(w, "\"");
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len) {
            unsigned char c = (unsigned char)s[j];
            if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80)
                break;
            j++;
        }
        if (j > i)
            jw_lit(w, s + i, j - i);
        if (j == len)
            break;
        unsigned char c = (unsigned char)s[j];
        if (c == '"') {
            LIT(w, "\\\"");
            i = j + 1;
        } else if (c == '\\') {
            LIT(w, "\\\\");
            i = j + 1;
        } else if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            if (c == '\n')
                LIT(w, "\\n");
            else if (c == '\t')
                LIT(w, "\\t");
            else
                jw_lit(w, e, 6);
            i = j + 1;
        } else {
            /* validate one UTF-8 sequence */
            size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
            int ok = n && j + n <= len && c < 0xf5;
            for (size_t k = 1; ok && k < n; k++)
                ok = ((unsigned char)s[j + k] & 0xc0) == 0x80;
            if (ok) {
                jw_lit(w, s + j, n);
                i = j + n;
            } else {
                LIT(w, "\xef\xbf\xbd");
                i = j + 1;
            }
        }
    }
    LIT(w, "\"");
}

static void jw_cstr(jw *w, const char *s)
{
    jw_str(w, s, strlen(s));
}

static void jw_id(jw *w, const tl_trace *t, uint32_t id)
{
    jw_str(w, tl_str(&t->strings, id), t->strings.len[id < t->strings.count ? id : 0]);
}

/* Kineto's category string for a model category. */
static const char *kineto_cat(const tl_event *e)
{
    switch (e->cat) {
    case TL_CAT_OPERATOR:
    case TL_CAT_OPERATOR_INNER:
        return "cpu_op";
    case TL_CAT_PYTHON:
        return "python_function";
    case TL_CAT_RUNTIME:
        return "cuda_runtime";
    case TL_CAT_DRIVER:
        return "cuda_driver";
    case TL_CAT_KERNEL:
        return "kernel";
    case TL_CAT_MEMCPY:
        return "gpu_memcpy";
    case TL_CAT_MEMSET:
        return "gpu_memset";
    case TL_CAT_GPU_USER:
        return "gpu_user_annotation";
    case TL_CAT_SYNC:
        return "cuda_sync";
    case TL_CAT_OVERHEAD:
        return "overhead";
    case TL_CAT_MEMORY:
    case TL_CAT_INSTANT:
        return "cpu_instant_event";
    case TL_CAT_OTHER:
        return "other";
    default:
        return "user_annotation";
    }
}

/* tally's own category for user_annotation spans, so a round trip keeps it. */
static const char *tally_cat_word(int cat)
{
    switch (cat) {
    case TL_CAT_DATALOADER:
        return "dataloader";
    case TL_CAT_FORWARD:
        return "forward";
    case TL_CAT_BACKWARD:
        return "backward";
    case TL_CAT_OPTIMIZER:
        return "optimizer";
    case TL_CAT_COMMUNICATION:
        return "communication";
    default:
        return NULL;
    }
}

/* An args string that is a list of shapes ("[[4, 128], [128]]") goes out as JSON; anything
 * else as a string. */
static int looks_like_shapes(const char *s, size_t len)
{
    if (len < 2 || s[0] != '[' || s[len - 1] != ']')
        return 0;
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '[')
            depth++;
        else if (c == ']') {
            if (--depth < 0)
                return 0;
        } else if (!(c == ',' || c == ' ' || (c >= '0' && c <= '9')))
            return 0;
        if (i && c == ',' && (s[i - 1] == '[' || s[i - 1] == ','))
            return 0;
        if (c == ']' && s[i - 1] == ',')
            return 0;
    }
    return depth == 0;
}

static void write_pid_tid(jw *w, const tl_track *tr)
{
    LIT(w, ",\"pid\":");
    if (tr->kind == TL_TRACK_STREAM)
        jw_i64(w, tr->device);
    else
        jw_i64(w, tr->pid);
    LIT(w, ",\"tid\":");
    jw_i64(w, tr->tid);
}

void tl_json_event(jw *w, const tl_track *tr, const tl_event *e, const char *name, size_t name_len,
                   const char *args, size_t args_len, const tl_json_extra *x)
{
    int64_t base = w->base;
    int cat = e->cat;
    if (cat == TL_CAT_COUNTER) {
        LIT(w, "{\"ph\":\"C\",\"name\":");
        jw_str(w, name, name_len);
        write_pid_tid(w, tr);
        LIT(w, ",\"ts\":");
        jw_us(w, since(e->ts, base));
        LIT(w, ",\"args\":{");
        jw_str(w, name, name_len);
        LIT(w, ":");
        jw_double_exact(w, tl_counter_value(e));
        LIT(w, "}},\n");
        return;
    }
    int instant = (e->flags & TL_EV_INSTANT) || cat == TL_CAT_INSTANT || cat == TL_CAT_MEMORY;
    if (instant)
        LIT(w, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"");
    else
        LIT(w, "{\"ph\":\"X\",\"cat\":\"");
    const char *kc = kineto_cat(e);
    jw_lit(w, kc, strlen(kc));
    LIT(w, "\",\"name\":");
    if ((cat == TL_CAT_MEMCPY || cat == TL_CAT_MEMSET) && !name_len)
        jw_cstr(w, tl_copy_default_name(e));
    else if (cat == TL_CAT_MEMORY && !name_len)
        jw_cstr(w, "[memory]");
    else
        jw_str(w, name, name_len);
    write_pid_tid(w, tr);
    LIT(w, ",\"ts\":");
    jw_us(w, since(e->ts, base));
    if (!instant) {
        LIT(w, ",\"dur\":");
        jw_us(w, e->dur);
    }
    /* args */
    LIT(w, ",\"args\":{");
    int first = 1;
#define SEP()                                                                                      \
    do {                                                                                           \
        if (!first)                                                                                \
            LIT(w, ",");                                                                           \
        first = 0;                                                                                 \
    } while (0)
    if (tr->kind == TL_TRACK_STREAM) {
        SEP();
        LIT(w, "\"device\":");
        jw_i64(w, tr->device);
        LIT(w, ",\"stream\":");
        jw_i64(w, tr->tid);
    }
    if (e->corr) {
        SEP();
        LIT(w, "\"correlation\":");
        jw_i64(w, e->corr);
    }
    if (cat == TL_CAT_MEMCPY || cat == TL_CAT_MEMSET) {
        SEP();
        LIT(w, "\"bytes\":");
        jw_i64(w, e->value);
        LIT(w, ",\"memory bandwidth (GB/s)\":");
        jw_double(w, e->dur > 0 ? (double)e->value / (double)e->dur : 0.0);
    } else if (cat == TL_CAT_MEMORY) {
        SEP();
        LIT(w, "\"Device Type\":");
        jw_i64(w, (e->flags & TL_EV_MEM_DEVICE) ? 1 : 0);
        /* the model keeps no device index for memory events: 0 for device memory, -1 host */
        LIT(w, ",\"Device Id\":");
        jw_i64(w, (e->flags & TL_EV_MEM_DEVICE) ? 0 : -1);
        LIT(w, ",\"Bytes\":");
        jw_i64(w, e->value);
    } else if (cat == TL_CAT_STEP) {
        SEP();
        LIT(w, "\"step\":");
        jw_i64(w, e->value);
    }
    const char *tc = tally_cat_word(cat);
    if (tc) {
        SEP();
        LIT(w, "\"tally category\":");
        jw_cstr(w, tc);
    }
    if (e->flags & TL_EV_UNCLOSED) {
        SEP();
        LIT(w, "\"tally_unclosed\":1");
    }
    if (e->flags & TL_EV_ASYNC) { /* tally_begin/tally_end: not nested in its thread's ranges */
        SEP();
        LIT(w, "\"tally_async\":1");
    }
    if (args_len) {
        SEP();
        if (looks_like_shapes(args, args_len)) {
            LIT(w, "\"Input Dims\":");
            jw_lit(w, args, args_len);
        } else {
            LIT(w, "\"args\":");
            jw_str(w, args, args_len);
        }
    }
    if (x && x->samples >= 0 && cat == TL_CAT_STEP) {
        SEP();
        LIT(w, "\"tally samples\":");
        jw_i64(w, x->samples);
    }
    if (x && x->file) {
        SEP();
        LIT(w, "\"tally file\":");
        jw_str(w, x->file, x->file_len);
        LIT(w, ",\"tally line\":");
        jw_u64(w, x->line);
        LIT(w, ",\"tally function\":");
        jw_str(w, x->func ? x->func : "", x->func ? x->func_len : 0);
    }
#undef SEP
    LIT(w, "}},\n");
}

void tl_json_memory(jw *w, const tl_trace *t, const tl_track *tr, const tl_memev *m)
{
    LIT(w, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\"");
    write_pid_tid(w, tr);
    LIT(w, ",\"ts\":");
    jw_us(w, since(m->ts, w->base));
    LIT(w, ",\"args\":{\"Device Type\":");
    jw_i64(w, m->device >= 0 ? 1 : 0);
    LIT(w, ",\"Device Id\":");
    jw_i64(w, m->device);
    LIT(w, ",\"Addr\":");
    jw_u64(w, m->addr);
    LIT(w, ",\"Bytes\":");
    jw_i64(w, m->bytes);
    if (m->total_allocated >= 0) {
        LIT(w, ",\"Total Allocated\":");
        jw_i64(w, m->total_allocated);
    }
    if (m->total_reserved >= 0) {
        LIT(w, ",\"Total Reserved\":");
        jw_i64(w, m->total_reserved);
    }
    if (m->corr) {
        LIT(w, ",\"correlation\":");
        jw_u64(w, m->corr);
    }
    LIT(w, ",\"tally mem category\":");
    jw_cstr(w, tl_mem_cat_name((tl_mem_cat)m->category));
    if (m->name) {
        LIT(w, ",\"tally mem name\":");
        jw_id(w, t, m->name);
    }
    if (m->flags) {
        LIT(w, ",\"tally mem flags\":");
        jw_u64(w, m->flags);
    }
    LIT(w, "}},\n");
}

void tl_json_flow(jw *w, int finish, const tl_track *tr, int64_t id, int64_t ts)
{
    if (finish)
        LIT(w, "{\"ph\":\"f\",\"id\":");
    else
        LIT(w, "{\"ph\":\"s\",\"id\":");
    jw_i64(w, id);
    write_pid_tid(w, tr);
    LIT(w, ",\"ts\":");
    jw_us(w, since(ts, w->base));
    if (finish)
        LIT(w, ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},\n");
    else
        LIT(w, ",\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n");
}

void tl_json_tracks(jw *w, const tl_trace *t)
{
    /* process names: one per host pid and per device */
    for (uint32_t i = 0; i < t->ntracks; i++) {
        const tl_track *tr = &t->tracks[i];
        int seen = 0;
        for (uint32_t j = 0; j < i && !seen; j++) {
            const tl_track *o = &t->tracks[j];
            seen = o->kind == tr->kind &&
                   (tr->kind == TL_TRACK_STREAM ? o->device == tr->device : o->pid == tr->pid);
        }
        if (!seen) {
            LIT(w, "{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0,\"pid\":");
            if (tr->kind == TL_TRACK_STREAM) {
                jw_i64(w, tr->device);
                LIT(w, ",\"tid\":0,\"args\":{\"name\":\"GPU ");
                jw_i64(w, tr->device);
                LIT(w, "\"}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"ts\":0,\"pid\":");
                jw_i64(w, tr->device);
                LIT(w, ",\"tid\":0,\"args\":{\"sort_index\":");
                jw_i64(w, INT64_C(0x1000000) + tr->device);
                LIT(w, "}},\n");
            } else {
                /* the model keeps no process name; Kineto writes the executable's */
                jw_i64(w, tr->pid);
                LIT(w, ",\"tid\":0,\"args\":{\"name\":\"process ");
                jw_i64(w, tr->pid);
                LIT(w, "\"}},\n");
            }
        }
        LIT(w, "{\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0");
        write_pid_tid(w, tr);
        LIT(w, ",\"args\":{\"name\":");
        char buf[96];
        if (tr->kind == TL_TRACK_STREAM) {
            snprintf(buf, sizeof buf, "stream %lld", (long long)tr->tid);
            jw_cstr(w, buf);
        } else if (tr->name) {
            jw_id(w, t, tr->name);
        } else {
            snprintf(buf, sizeof buf, "thread %lld", (long long)tr->tid);
            jw_cstr(w, buf);
        }
        LIT(w, "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"ts\":0");
        write_pid_tid(w, tr);
        LIT(w, ",\"args\":{\"sort_index\":");
        jw_i64(w, (int64_t)i);
        LIT(w, "}},\n");
    }
}

void tl_json_header(jw *w, const tl_trace *t, int64_t base)
{
    w->base = base;
    LIT(w, "{\n\"schemaVersion\":1,\n\"deviceProperties\":[");
    for (uint32_t i = 0; i < t->ndevices; i++) {
        const tl_device *d = &t->devices[i];
        if (i)
            LIT(w, ",");
        LIT(w, "\n{\"id\":");
        jw_i64(w, d->id);
        LIT(w, ",\"name\":");
        jw_id(w, t, d->name);
        LIT(w, ",\"totalGlobalMem\":");
        jw_i64(w, d->memory);
        LIT(w, ",\"computeMajor\":");
        jw_i64(w, d->cc_major);
        LIT(w, ",\"computeMinor\":");
        jw_i64(w, d->cc_minor);
        LIT(w, ",\"numSms\":");
        jw_i64(w, d->sm_count);
        LIT(w, "}");
    }
    LIT(w, "],\n");
    if (t->rank >= 0) {
        LIT(w, "\"distributedInfo\":{\"rank\":");
        jw_i64(w, t->rank);
        LIT(w, ",\"world_size\":");
        jw_i64(w, t->world_size);
        LIT(w, "},\n");
    }
    LIT(w, "\"displayTimeUnit\":\"ms\",\n\"baseTimeNanoseconds\":");
    jw_i64(w, tl_add_sat(base, t->wall_offset)); /* a file can hold any offset */
    LIT(w, ",\n\"traceEvents\":[\n");
}

/* The name or args string id of the model as text. */
static inline const char *text(const tl_trace *t, uint32_t id, size_t *len)
{
    *len = id < t->strings.count ? t->strings.len[id] : 0;
    return tl_str(&t->strings, id);
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int on_thread(const tl_trace *t, uint32_t track)
{
    return track < t->ntracks && t->tracks[track].kind == TL_TRACK_THREAD;
}

/* Whether the host threads' [memory] events are written from the memory table: each is the
 * same allocation or free as a row of t->mem (every reader adds both), and the row holds more
 * (address, totals, category, name). Only when they pair up, one event per row that is no label
 * or live block: a model made otherwise (by hand, in tests) is written as it is. */
static int memory_from_table(const tl_trace *t)
{
    size_t nev = 0, nrows = 0;
    for (size_t i = 0; i < t->nev; i++)
        nev += tl_is_memory_record_event(t, &t->ev[i]);
    for (size_t i = 0; i < t->nmem; i++)
        nrows += on_thread(t, t->mem[i].track) && !(t->mem[i].flags & (TL_MEM_LABEL | TL_MEM_LIVE));
    return nev == nrows;
}

/* Everything but the end; returns where the trace ends, or INT64_MIN when out of memory. */
static int64_t write_all(jw *w, const tl_trace *t)
{
    int64_t base = 0, t1 = 0;
    tl_trace_span(t, &base, &t1);
    tl_json_header(w, t, base);
    tl_json_tracks(w, t);
    /* the step numbers in order: step_samples[k] is the count of the k-th (tally_reader.c) */
    int64_t *nums = NULL;
    size_t nsteps = 0;
    if (t->nsteps_samples) {
        for (size_t i = 0; i < t->nev; i++)
            nsteps += t->ev[i].cat == TL_CAT_STEP;
        if (nsteps && !(nums = malloc(nsteps * sizeof *nums)))
            return INT64_MIN;
        nsteps = 0;
        for (size_t i = 0; i < t->nev; i++)
            if (t->ev[i].cat == TL_CAT_STEP)
                nums[nsteps++] = t->ev[i].value;
        qsort(nums, nsteps, sizeof *nums, i64_cmp);
    }
    /* the rows of the memory table (the labels and live blocks, which have no event, at least) */
    int from_table = memory_from_table(t);
    for (size_t i = 0; i < t->nmem; i++) {
        const tl_memev *m = &t->mem[i];
        if (on_thread(t, m->track) && (from_table || (m->flags & (TL_MEM_LABEL | TL_MEM_LIVE))))
            tl_json_memory(w, t, &t->tracks[m->track], m);
    }
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (from_table && tl_is_memory_record_event(t, e))
            continue;
        size_t nl, al;
        const char *name = text(t, e->name, &nl), *args = text(t, e->args, &al);
        tl_json_extra x = {-1, NULL, NULL, 0, 0, 0};
        if (e->site && e->site <= t->nsites && t->sites[e->site - 1].file) {
            const struct tl_site *st = &t->sites[e->site - 1];
            x.file = text(t, st->file, &x.file_len);
            x.func = text(t, st->func, &x.func_len);
            x.line = st->line;
        }
        if (nums && e->cat == TL_CAT_STEP) {
            size_t lo = 0, hi = nsteps; /* the first step numbered e->value */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (nums[mid] < e->value)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < t->nsteps_samples)
                x.samples = t->step_samples[lo];
        }
        tl_json_event(w, &t->tracks[e->track], e, name, nl, args, al, &x);
        if ((e->cat == TL_CAT_RUNTIME || e->cat == TL_CAT_DRIVER) && e->link != TL_NONE &&
            (size_t)e->link < t->nev) {
            const tl_event *dev = &t->ev[e->link];
            tl_json_flow(w, 0, &t->tracks[e->track], e->corr, e->ts);
            tl_json_flow(w, 1, &t->tracks[dev->track], e->corr, dev->ts);
        }
    }
    free(nums);
    return t1;
}

jw *tl_json_open(const char *path, FILE *f, tl_error *err)
{
    jw *w = calloc(1, sizeof *w);
    if (w)
        w->buf = malloc(OUT_BLOCK * 2 + OUT_BLOCK / 2);
    if (!w || !w->buf) {
        free(w);
        tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
        return NULL;
    }
    w->f = f;
    w->path = path;
    if (!path)
        return w;
    size_t len = strlen(path);
    if (len > 3 && strcmp(path + len - 3, ".gz") == 0) {
        /* level 3: on bench_export's 2 M-event trace zlib deflates level 1 and 3 at the same
         * speed (~270-390 MB/s in) but level 3 writes 12.5x smaller output against 10.2x;
         * level 6 is 3-4x slower for 14.5x. */
        if ((w->gz = gzopen(path, "wb3")))
            gzbuffer(w->gz, 1u << 18);
    } else {
        w->f = fopen(path, "wb");
    }
    if (!w->gz && !w->f) {
        tl_error_setc(err, TL_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
        free(w->buf);
        free(w);
        return NULL;
    }
    return w;
}

/* Flush and close the file; frees w. */
static int jw_finish(jw *w, tl_error *err)
{
    jw_flush(w);
    int rc = w->failed ? -1 : 0;
    if (!w->path)
        rc |= fflush(w->f) != 0 ? -1 : 0;
    else if (w->gz)
        rc |= gzclose(w->gz) != Z_OK ? -1 : 0;
    else
        rc |= fclose(w->f) != 0 ? -1 : 0;
    if (rc != 0) {
        if (w->path)
            tl_error_setc(err, TL_ERR_IO, "%s: error writing: %s", w->path, strerror(errno));
        else
            tl_error_setc(err, TL_ERR_IO, "error writing the trace: %s", strerror(errno));
    }
    free(w->buf);
    free(w);
    return rc;
}

/* A member "key":v of the "tally" object, after the first. */
static void tally_u64(jw *w, const char *key, uint64_t v)
{
    LIT(w, ",\"");
    jw_lit(w, key, strlen(key));
    LIT(w, "\":");
    jw_u64(w, v);
}

/* The top-level member "tally": what a trace holds beyond its events and devices (the JSON
 * reader reads it back into the model). */
static void write_tally_member(jw *w, const tl_trace *t)
{
    LIT(w, "\"tally\":{\"pid\":");
    jw_i64(w, t->pid);
    if (!t->wall_offset) /* baseTimeNanoseconds is then on the trace's own clock */
        LIT(w, ",\"no_wall_clock\":1");
    if (t->host) {
        LIT(w, ",\"host\":");
        jw_id(w, t, t->host);
    }
    if (t->program) {
        LIT(w, ",\"program\":");
        jw_id(w, t, t->program);
    }
    if (t->samples_unit) {
        LIT(w, ",\"samples_unit\":");
        jw_id(w, t, t->samples_unit);
    }
    tally_u64(w, "dropped", t->dropped);
    tally_u64(w, "lost", t->lost);
    LIT(w, ",\"io_errno\":");
    jw_i64(w, t->io_errno);
    tally_u64(w, "bad_pops", t->bad_pops);
    tally_u64(w, "bad_ends", t->bad_ends);
    tally_u64(w, "calls_outside", t->calls_outside);
    tally_u64(w, "unclosed", t->unclosed);
    tally_u64(w, "mem_unmatched_frees", t->mem_unmatched_frees);
    tally_u64(w, "mem_reused", t->mem_reused);
    tally_u64(w, "mem_bad_sizes", t->mem_bad_sizes);
    tally_u64(w, "cut_at", t->cut_at);
    tally_u64(w, "unwritten", t->unwritten);
    tally_u64(w, "unwritten_at", t->unwritten_at);
    LIT(w, ",\"thread_losses\":[");
    for (uint32_t i = 0; i < t->nthread_losses; i++) {
        if (i)
            LIT(w, ",");
        LIT(w, "{\"tid\":");
        jw_i64(w, t->thread_losses[i].tid);
        tally_u64(w, "dropped", t->thread_losses[i].dropped);
        tally_u64(w, "lost", t->thread_losses[i].lost);
        LIT(w, "}");
    }
    LIT(w, "]},\n");
}

int tl_json_close(jw *w, int64_t t1, const char *trace_name, const tl_trace *t, tl_error *err)
{
    /* the closing event lets every event above end with a comma */
    LIT(w, "{\"ph\":\"i\",\"s\":\"g\",\"name\":\"Record Window End\",\"pid\":\"\",\"tid\":\"\","
           "\"ts\":");
    jw_us(w, since(t1, w->base));
    LIT(w, "}\n],\n");
    if (t)
        write_tally_member(w, t);
    LIT(w, "\"traceName\":");
    jw_cstr(w, trace_name ? trace_name : "");
    LIT(w, "\n}\n");
    return jw_finish(w, err);
}

/* A JSON trace read with keep_raw, as it was read: its top-level members, then every element of
 * traceEvents, the model's events in the model's order (each with its text as read) and the
 * elements that are no event of the model in file order. Nothing is added: no flows, track
 * names or closing instant that the input did not have. Events the reader made without text
 * (none, for a JSON input) are written as the model holds them, first, since they end with a
 * comma. */
static int write_raw(jw *w, const tl_trace *t, tl_error *err)
{
    size_t len;
    LIT(w, "{\n");
    for (uint32_t i = 0; i < t->nraw_members; i++) {
        const char *s = tl_raw_text(&t->raw, t->raw_members[i], &len);
        jw_lit(w, s, len);
        LIT(w, ",\n");
    }
    LIT(w, "\"traceEvents\":[\n");
    w->base = 0; /* the reader keeps a JSON trace's times as they are in the file */
    size_t left = t->nraw_other;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->raw == 0) {
            size_t nl, al;
            const char *name = text(t, e->name, &nl), *args = text(t, e->args, &al);
            tl_json_event(w, &t->tracks[e->track], e, name, nl, args, al, NULL);
        } else if (e->raw != TL_RAW_ELSEWHERE) {
            left++;
        }
    }
    for (size_t i = 0; i < t->nev + t->nraw_other; i++) {
        uint32_t id = i < t->nev ? t->ev[i].raw : t->raw_other[i - t->nev];
        if (id == 0 || id == TL_RAW_ELSEWHERE)
            continue;
        const char *s = tl_raw_text(&t->raw, id, &len);
        jw_lit(w, s, len);
        if (--left)
            LIT(w, ",\n");
    }
    LIT(w, "\n]\n}\n");
    return jw_finish(w, err);
}

/* The model (not read with keep_raw) as tally writes it; closes w. */
static int write_model(jw *w, const tl_trace *t, const char *trace_name, tl_error *err)
{
    int64_t t1 = write_all(w, t);
    if (t1 == INT64_MIN) {
        tl_json_close(w, 0, trace_name, t, err);
        tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
        return -1;
    }
    return tl_json_close(w, t1, trace_name, t, err);
}

int tl_write_chrome_file(const tl_trace *t, FILE *out, tl_error *err)
{
    jw *w = tl_json_open(NULL, out, err);
    if (!w)
        return -1;
    if (t->raw_kept)
        return write_raw(w, t, err);
    return write_model(w, t, t->path, err);
}

int tl_write_chrome(const tl_trace *t, const char *path, tl_error *err)
{
    jw *w = tl_json_open(path, NULL, err);
    if (!w)
        return -1;
    if (t->raw_kept)
        return write_raw(w, t, err);
    return write_model(w, t, path, err);
}
