/*
 * json_reader.c — Chrome trace JSON in every form people have (PyTorch/Kineto old and new,
 * PyTorch's exporter without Kineto, Paddle, plain Chrome traces, tally's own export), read in
 * one streaming pass into the trace model.
 *
 * No document tree is built. The file is read in blocks into a sliding buffer; the parser
 * consumes one unit at a time (a top-level member, or one element of traceEvents) and, when a
 * unit runs past the end of the buffer, jumps back to the unit's start, refills and tries again.
 * Units are small (an event is a few hundred bytes), so a multi-gigabyte trace needs a few MB of
 * buffer plus the model itself. Each event's fields land in a small struct and the event is
 * added to the model only once it is complete, so a retried unit leaves nothing behind.
 *
 * Errors name the file, line and column, and what was expected: "f.json:12:7: expected ':'".
 * Lines are not counted while reading (that was 3% of the time): on an error, the part of the
 * input already dropped from the buffer is read again to count them.
 */
#include "trace/checked.h"
#include "trace/now.h"
#include "trace/grow_array.h"
#include "trace/inflate.h"
#include "trace/model.h"
#include "trace/u64map.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* What one read() brings: small enough that the text is still in the core's L2 cache when the
 * lexer reaches it and that a small file does not pay for fresh pages it hardly uses (10 MB
 * trace, one thread: -13 % CPU against 4 MB blocks; 1 GB: -3.6 %). An element longer than half
 * of it grows the buffer. A file is read, not mapped: the lexer walking the page cache's pages
 * through a mapping (4 KB pages, a fault every 16 of them) took 0.5-0.7 s of CPU a GB on a VM
 * where read() and the walk of the copy took 0.13 s (docs/PERFORMANCE.md, "Read, not mapped"). */
#define BLOCK (256u << 10)

enum { JR_NEED_MORE = 1, JR_ERROR = 2 };

/* The reader's text (a one-pass read's block, a parallel read's window) is mapped apart from
 * the heap: the 256 KB block from malloc sat among the read's small blocks, and the views'
 * arrays, placed above it, lost huge pages (1 GB trace, one thread: 3 k more page faults, the
 * memory view 0.15 -> 0.28 s, breakdown 0.09 -> 0.15 s). n: the bytes, its NUL included. */
static char *text_alloc(size_t n)
{
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    tl_advise_huge(m, n); /* a window, walked once a window: no TLB miss every 4 KB */
    return m;
}

static void text_free(char *p, size_t n)
{
    if (p)
        munmap(p, n);
}

/* p (had bytes) moved to a text of n bytes, its first had bytes kept; NULL (p kept) when there
 * is no memory. */
static char *text_grow(char *p, size_t had, size_t n)
{
    char *q = text_alloc(n);
    if (q) {
        memcpy(q, p, had);
        text_free(p, had);
    }
    return q;
}

/* How run() reads: the whole input; as the driver of a parallel read (it stops at each element
 * of traceEvents for the parts to take over); as one part of a window (a thread of the parallel
 * parse, below); or one element again, a flow, at the end (read_flows_again). */
enum { JR_WHOLE = 0, JR_DRIVER, JR_PART, JR_AGAIN };

/* What run() returns besides 0 (done) and -1 (error). */
enum {
    RUN_ELEMENT = 1,    /* driver: at the start of an element of traceEvents; again: past one */
    RUN_STOP = 2,       /* part: at the first element that starts at or past its limit */
    RUN_INCOMPLETE = 3, /* part: the window ends inside the unit at mark */
    RUN_ARRAY_END = 4   /* part: past the ']' that ends traceEvents */
};

/* A piece of the input (or of scratch). 16 bytes, so that functions return it in registers: a
 * bigger struct goes back through memory, and reading it back stalls on store forwarding. */
typedef struct jstr {
    const char *p;
    uint32_t len;
    uint32_t esc; /* contains backslash escapes */
} jstr;

/* Longest string or token: no event is anywhere near it. */
#define JSTR_MAX UINT32_MAX

typedef struct flow {
    int64_t id;
    int64_t ts;
    int64_t pid, tid; /* resolved to a track when the flows are used */
    uint8_t start;    /* 's' (1) or 'f'/'t' (0) */
    uint8_t bp_e;     /* binds to the enclosing slice */
} flow;

/* An E event whose B a part did not see (it is in an earlier part), for the merge. */
typedef struct pending_end {
    uint32_t track;
    int64_t ts;
} pending_end;

typedef struct jr {
    /* input */
    int fd;
    tl_inflate *gz; /* gzip input, inflated in a thread of its own */
    char *buf;
    size_t cap, len, pos, mark;
    int eof;
    uint64_t consumed; /* bytes dropped from the front of buf so far */
    /* Where an error is, is worked out when there is one, by reading the input again up to it.
     * Only input that cannot be read again (a pipe) counts lines as it goes: */
    int count_lines;
    uint64_t lines_consumed; /* newlines in the bytes dropped */
    uint64_t col_base;       /* bytes since the last newline, at the front of buf */
    const char *name;
    int progress;
    double t_start, t_last;
    int shown;           /* the length of the progress line on stderr, 0 when none is */
    uint64_t total_size; /* 0 when unknown (gzip) */

    tl_trace *t;
    tl_error *err;
    jmp_buf jb;
    int in_mem;

    /* what kind of file this is */
    int paddle;
    int saw_cat;
    int saw_cpu_functions;

    /* B/E stacks, one per track */
    int32_t **stacks;
    uint32_t *stack_n, *stack_cap;
    uint32_t nstacks;

    flow *flows;
    size_t nflows, cap_flows;
    /* A plain file or memory keeps its flows as the file offsets of their elements (8 bytes, not
     * the 40 of a flow): most traces turn out not to need them (flows_needed), and those that
     * do have them read again at the end (read_flows_again). elem_start: where the element
     * being parsed starts in buf. */
    int flows_at;
    /* a runtime call or device work without a correlation id was met: the trace will need its
     * flows (flows_needed), so those after it are kept whole, not read again at the end (one
     * pass and the driver at once, the parts from the next window they begin; read_flows_again
     * puts the flows read again first, so they stay in file order) */
    int uncorrelated;
    uint64_t *flow_at;
    size_t nflow_at, cap_flow_at;
    size_t elem_start;

    /* tracks that hold an event (metadata and skipped events create tracks too) */
    uint8_t *used;
    uint32_t cap_used;

    /* scratch for unescaped strings */
    char *scratch;
    size_t scratch_n, scratch_cap;

    /* keep_raw: where the current event's args object is, for the SQLite export's args column
     * (args_e 0: none; only the first "args" member counts) */
    size_t args_b, args_e;
    int args_seen;

    /* where run() is: a state of the parser (TOP_*, ARR_*), and whether traceEvents is the
     * whole input (a bare array) */
    int state, bare;
    /* JR_WHOLE, JR_DRIVER (one: parse one element before stopping at the next) or JR_PART
     * (limit: stop at the first element that starts at or past it) */
    int mode, one;
    size_t limit;
    /* A part keeps what only the merge can settle: E events of earlier parts' B; events whose
     * category depends on an earlier "CPU functions" pid; thread names, in order. */
    pending_end *pend;
    size_t npend, cap_pend;
    uint32_t *undecided;
    size_t nundecided, cap_undecided;
    uint32_t (*names)[2];
    size_t nnames, cap_names;
    int unsafe; /* see cannot_carry */

    /* tally's export: the trace had no wall clock (baseTimeNanoseconds is no Unix time) */
    int no_wall_clock;
    /* tally's export: (step, samples) of each step with "tally samples" */
    int64_t (*samples)[2];
    size_t nsamples, cap_samples;
} jr;

/* ---- errors and positions ---------------------------------------------------------------- */

/* Newlines in the first r->consumed bytes of the input, and the bytes after the last of them,
 * read again from the file. Returns 0, or -1 when they cannot be read again. */
static int count_consumed(jr *r, uint64_t *lines, uint64_t *since)
{
    char tmp[16384];
    uint64_t off = 0, nl = 0, after = 0;
    /* gzip: inflated again from the start by zlib's own reader, on an fd of its own (the
     * inflating thread reads with pread, so moving the shared offset disturbs nothing) */
    gzFile gz = NULL;
    if (r->gz) {
        int fd2 = dup(r->fd);
        if (fd2 < 0 || lseek(fd2, 0, SEEK_SET) != 0 || !(gz = gzdopen(fd2, "rb"))) {
            if (fd2 >= 0)
                close(fd2);
            return -1;
        }
    }
    while (off < r->consumed) {
        size_t want = r->consumed - off < sizeof tmp ? (size_t)(r->consumed - off) : sizeof tmp;
        ssize_t got = gz ? gzread(gz, tmp, (unsigned)want) : pread(r->fd, tmp, want, (off_t)off);
        if (got <= 0) {
            if (gz)
                gzclose(gz);
            return -1;
        }
        for (ssize_t i = 0; i < got; i++) {
            if (tmp[i] == '\n') {
                nl++;
                after = 0;
            } else {
                after++;
            }
        }
        off += (uint64_t)got;
    }
    if (gz)
        gzclose(gz);
    *lines = nl;
    *since = after;
    return 0;
}

static void where(jr *r, size_t pos, uint64_t *line, uint64_t *col)
{
    uint64_t lines = r->lines_consumed, since = r->col_base;
    if (!r->count_lines && r->consumed && count_consumed(r, &lines, &since) != 0) {
        lines = 0;
        since = r->consumed;
    }
    uint64_t l = lines + 1;
    size_t last_nl = (size_t)-1;
    for (size_t i = 0; i < pos && i < r->len; i++)
        if (r->buf[i] == '\n') {
            l++;
            last_nl = i;
        }
    *line = l;
    *col = last_nl == (size_t)-1 ? since + pos + 1 : pos - last_nl;
}

static void describe(jr *r, size_t pos, char *out, size_t n)
{
    if (pos >= r->len) {
        snprintf(out, n, "end of input");
        return;
    }
    unsigned char c = (unsigned char)r->buf[pos];
    if (c >= 0x20 && c < 0x7f)
        snprintf(out, n, "'%c'", c);
    else
        snprintf(out, n, "byte 0x%02x", c);
}

__attribute__((noreturn)) static void fail(jr *r, const char *expected)
{
    if (r->mode == JR_PART) /* the driver reads the unit again and says where */
        longjmp(r->jb, JR_ERROR);
    /* a plain file now shorter than when it was opened: another program cut it (its text ended
     * early) */
    struct stat st;
    if (!r->gz && !r->count_lines && r->total_size && fstat(r->fd, &st) == 0 &&
        (uint64_t)st.st_size < r->total_size) {
        tl_error_set(r->err, "%s: " TL_CUT_SHORT_TEXT, r->name);
        longjmp(r->jb, JR_ERROR);
    }
    uint64_t line, col;
    where(r, r->pos, &line, &col);
    char found[32];
    describe(r, r->pos, found, sizeof found);
    tl_error_set(r->err, "%s:%llu:%llu: expected %s, found %s", r->name, (unsigned long long)line,
                 (unsigned long long)col, expected, found);
    longjmp(r->jb, JR_ERROR);
}

__attribute__((noreturn)) static void need_more(jr *r, const char *expected)
{
    if (r->eof) {
        r->pos = r->len; /* what was missing: the input ended first */
        fail(r, expected);
    }
    longjmp(r->jb, JR_NEED_MORE);
}

/* ---- input ------------------------------------------------------------------------------- */

static void show_progress(jr *r, int final)
{
    if (!r->progress)
        return;
    double t = tl_now_s();
    if (final) { /* the line cleared, however long the file's name made it */
        if (r->shown > 0)
            fprintf(stderr, "\r%*s\r", r->shown, "");
        r->shown = 0;
        return;
    }
    if (t - r->t_start < 1.0 || t - r->t_last < 0.5)
        return;
    r->t_last = t;
    double mb = (double)(r->consumed + r->len) / 1e6;
    int n = r->total_size ? fprintf(stderr, "\rreading %s: %.0f of %.0f MB (%.0f MB/s)", r->name,
                                    mb, (double)r->total_size / 1e6, mb / (t - r->t_start))
                          : fprintf(stderr, "\rreading %s: %.0f MB (%.0f MB/s)", r->name, mb,
                                    mb / (t - r->t_start));
    if (n - 1 > r->shown) /* (the \r) */
        r->shown = n - 1;
    fflush(stderr);
}

/* Drop everything before r->mark, then read more. Returns 0, or -1 at end of input. */
static int refill(jr *r)
{
    if (r->eof)
        return -1;
    /* account for the bytes we drop */
    size_t drop = r->mark;
    if (drop) {
        if (r->count_lines) {
            const char *p = r->buf, *end = r->buf + drop;
            const char *last = NULL;
            for (;;) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                if (!nl)
                    break;
                r->lines_consumed++;
                last = nl;
                p = nl + 1;
            }
            r->col_base = last ? (uint64_t)(end - last - 1) : r->col_base + drop;
        }
        memmove(r->buf, r->buf + drop, r->len - drop);
        r->len -= drop;
        r->pos -= drop;
        r->consumed += drop;
        r->mark = 0;
        r->buf[r->len] = 0; /* the lexer's NUL (peek), also when nothing more comes */
    }
    if (r->cap - r->len < BLOCK / 2) {
        size_t nc = r->cap * 2;
        char *nb = text_grow(r->buf, r->cap + 1, nc + 1);
        if (!nb) {
            tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
            longjmp(r->jb, JR_ERROR);
        }
        r->buf = nb;
        r->cap = nc;
    }
    size_t want = r->cap - r->len;
    ssize_t got;
    if (r->gz) {
        /* the inflating thread fills r->err: what went wrong and at which offsets; a stream cut
         * short is an error there, never a clean end */
        got = tl_inflate_read(r->gz, r->buf + r->len, want);
        if (got < 0)
            longjmp(r->jb, JR_ERROR);
    } else {
        do
            got = read(r->fd, r->buf + r->len, want);
        while (got < 0 && errno == EINTR);
        if (got < 0) {
            tl_error_setc(r->err, TL_ERR_IO, "%s: read error: %s", r->name, strerror(errno));
            longjmp(r->jb, JR_ERROR);
        }
    }
    if (got == 0) {
        r->eof = 1;
        return -1;
    }
    r->len += (size_t)got;
    r->buf[r->len] = 0;
    show_progress(r, 0);
    return 0;
}

/* ---- lexing ------------------------------------------------------------------------------ */

static const unsigned char is_ws[256] = {[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1};

/* The first byte at or after b[i] that is not whitespace, or len: 16 bytes at a time where
 * SSE2 is there (a Kineto file's indentation: a newline and 4 to 8 spaces). */
static inline size_t skip_ws(const char *b, size_t i, size_t len)
{
#ifdef __SSE2__
    while (i + 16 <= len) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
        __m128i sp = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')),
                                  _mm_cmpeq_epi8(v, _mm_set1_epi8('\n')));
        __m128i tr = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
                                  _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(sp, tr)) ^ 0xFFFFu;
        if (m)
            return i + (size_t)__builtin_ctz(m);
        i += 16;
    }
#endif
    while (i < len && is_ws[(unsigned char)b[i]])
        i++;
    return i;
}

static inline char peek(jr *r, const char *expected)
{
    const char *b = r->buf;
    size_t i = r->pos, len = r->len;
    /* most tokens follow no whitespace or one space (", " and ": "). The text always has a NUL
     * at b[len] (every reader puts one there), so neither test reads past it and a NUL, not a
     * token, sends the end of the text the long way: peek is a fifth of a read's instructions,
     * the bounds' compares were a quarter of that */
    if ((unsigned char)b[i] > ' ')
        return b[i];
    if (b[i] == ' ' && (unsigned char)b[i + 1] > ' ') {
        r->pos = i + 1;
        return b[i + 1];
    }
    i = skip_ws(b, i, len);
    r->pos = i;
    if (i >= len)
        need_more(r, expected);
    return b[i];
}

/* After a member or an element: ',' (1: another follows) or the closing bracket (0), both
 * consumed; anything else fails with expected ("',' or '}' in args"). */
static inline int another(jr *r, char close, const char *expected)
{
    char c = peek(r, close == '}' ? "',' or '}'" : "',' or ']'");
    if (c != ',' && c != close)
        fail(r, expected);
    r->pos++;
    return c == ',';
}

static inline void expect(jr *r, char c, const char *what)
{
    if (peek(r, what) != c)
        fail(r, what);
    r->pos++;
}

/* The closing quote of a string whose contents start at b[i], or len when it is not in
 * b[0, len): one pass for the quote and backslashes alike, 16 bytes at a time where SSE2 is
 * there (every x86-64). *esc is set when the string has escapes. */
static inline size_t string_end(const char *b, size_t i, size_t len, int *esc)
{
    for (;;) {
#ifdef __SSE2__
        const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
        while (i + 16 <= len) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
            unsigned m = (unsigned)_mm_movemask_epi8(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
            if (m) {
                i += (size_t)__builtin_ctz(m);
                goto found;
            }
            i += 16;
        }
#endif
        while (i < len && b[i] != '"' && b[i] != '\\')
            i++;
        if (i >= len)
            return len;
#ifdef __SSE2__
    found:
#endif
        if (b[i] == '"')
            return i;
        *esc = 1; /* a backslash: it and the character it escapes are skipped */
        i += 2;
    }
}

static inline int is_hex(char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* Every escape of s is one JSON allows, also in strings the reader skips (few strings have
 * escapes: this runs only for those). */
static void check_escapes(jr *r, jstr s)
{
    for (uint32_t i = 0; i < s.len; i++) {
        if (s.p[i] != '\\')
            continue;
        size_t at = ++i; /* the escape's letter */
        char e = s.p[i];
        int ok = e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                 e == 'r' || e == 't';
        if (e == 'u') {
            ok = i + 4 < s.len && is_hex(s.p[i + 1]) && is_hex(s.p[i + 2]) && is_hex(s.p[i + 3]) &&
                 is_hex(s.p[i + 4]);
            i += 4;
        }
        if (!ok) {
            r->pos = (size_t)(s.p - r->buf) + at;
            fail(r, "a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
        }
    }
}

/* A string whose opening quote is at r->pos, the general way (escapes, long strings, the
 * buffer's end). */
__attribute__((noinline)) static jstr lex_string_long(jr *r)
{
    jstr s = {0};
    int esc = 0;
    size_t e = string_end(r->buf, r->pos + 1, r->len, &esc);
    if (e >= r->len)
        need_more(r, "'\"' closing the string");
    if (e - r->pos - 1 > JSTR_MAX)
        fail(r, "a string shorter than 4 GB");
    s.p = r->buf + r->pos + 1;
    s.len = (uint32_t)(e - r->pos - 1);
    s.esc = (uint32_t)esc;
    r->pos = e + 1;
    if (esc)
        check_escapes(r, s);
    return s;
}

/* A string; r->pos at the opening quote (after blanks). Inlined: most strings (keys, phases,
 * categories) end within 16 bytes without a backslash, one compare of 16 bytes; the call was a
 * fifth of the work for those. */
static inline jstr lex_string(jr *r)
{
    if (peek(r, "a string") != '"')
        fail(r, "a string");
#ifdef __SSE2__
    if (r->pos + 17 <= r->len) {
        const char *p = r->buf + r->pos + 1;
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned q = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
        unsigned b = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
        if (q && !(b & (q ^ (q - 1)))) { /* no backslash up to the first quote */
            unsigned n = (unsigned)__builtin_ctz(q);
            jstr s = {p, n, 0};
            r->pos += n + 2;
            return s;
        }
    }
#endif
    return lex_string_long(r);
}

static void scratch_put(jr *r, const char *p, size_t n)
{
    if (r->scratch_n + n + 1 > r->scratch_cap) {
        size_t nc = (r->scratch_n + n + 1) * 2;
        char *ns = realloc(r->scratch, nc);
        if (!ns) {
            tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
            longjmp(r->jb, JR_ERROR);
        }
        r->scratch = ns;
        r->scratch_cap = nc;
    }
    if (n)
        memcpy(r->scratch + r->scratch_n, p, n);
    r->scratch_n += n;
}

static void put_utf8(jr *r, uint32_t cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xc0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | cp >> 12);
        b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        b[0] = (char)(0xf0 | cp >> 18);
        b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        b[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        b[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    scratch_put(r, b, n);
}

/* Decode escapes of s into scratch; returns the decoded string (valid until scratch reset). */
static jstr unescape(jr *r, jstr s)
{
    if (!s.esc)
        return s;
    size_t start = r->scratch_n;
    for (size_t i = 0; i < s.len; i++) {
        char c = s.p[i];
        if (c != '\\') {
            scratch_put(r, &c, 1);
            continue;
        }
        char e = ++i < s.len ? s.p[i] : 0;
        switch (e) {
        case '"':
        case '\\':
        case '/':
            scratch_put(r, &e, 1);
            break;
        case 'b':
            scratch_put(r, "\b", 1);
            break;
        case 'f':
            scratch_put(r, "\f", 1);
            break;
        case 'n':
            scratch_put(r, "\n", 1);
            break;
        case 'r':
            scratch_put(r, "\r", 1);
            break;
        case 't':
            scratch_put(r, "\t", 1);
            break;
        case 'u': {
            uint32_t cp = 0;
            int ok = i + 4 < s.len;
            for (int k = 1; ok && k <= 4; k++) {
                char h = s.p[i + k];
                cp = cp * 16 + (uint32_t)(h >= '0' && h <= '9'   ? h - '0'
                                          : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                          : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                                 : (ok = 0));
            }
            if (!ok) {
                r->pos = (size_t)(s.p - r->buf) + i;
                fail(r, "four hex digits after \\u");
            }
            i += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < s.len && s.p[i + 1] == '\\' &&
                s.p[i + 2] == 'u') {
                uint32_t lo = (uint32_t)strtoul(
                    (char[5]){s.p[i + 3], s.p[i + 4], s.p[i + 5], s.p[i + 6], 0}, NULL, 16);
                if (lo >= 0xdc00 && lo < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    i += 6;
                }
            }
            if (cp >= 0xd800 && cp < 0xe000)
                cp = 0xfffd;
            put_utf8(r, cp);
            break;
        }
        default:
            r->pos = (size_t)(s.p - r->buf) + i;
            fail(r, "a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
        }
    }
    jstr out = {r->scratch + start, (uint32_t)(r->scratch_n - start), 0}; /* <= s.len */
    return out;
}

/* Append s, unescaped, to scratch (not through unescape's result: the append may move it). */
static void scratch_put_js(jr *r, jstr s)
{
    if (s.esc)
        unescape(r, s); /* decodes onto the end of scratch */
    else
        scratch_put(r, s.p, s.len);
}

static inline int jstr_eq(jstr s, const char *lit, size_t n)
{
    return s.len == n && (n == 0 || memcmp(s.p, lit, n) == 0);
}
#define EQ(s, lit) jstr_eq((s), (lit), sizeof(lit) - 1)

static const unsigned char is_delim[256] = {
    [','] = 1, ['}'] = 1, [']'] = 1, [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1, [':'] = 1};

/* The extent of a number or literal token at r->pos. */
static jstr lex_token(jr *r, const char *expected)
{
    peek(r, expected);
    size_t i = r->pos;
    while (i < r->len && !is_delim[(unsigned char)r->buf[i]])
        i++;
    if (i >= r->len)
        need_more(r, expected);
    if (i == r->pos || i - r->pos > JSTR_MAX)
        fail(r, expected);
    jstr s = {r->buf + r->pos, (uint32_t)(i - r->pos), 0};
    r->pos = i;
    return s;
}

static int valid_number(jstr s)
{
    size_t i = 0;
    if (i < s.len && s.p[i] == '-')
        i++;
    size_t d = i;
    while (i < s.len && s.p[i] >= '0' && s.p[i] <= '9')
        i++;
    if (i == d)
        return 0;
    if (i < s.len && s.p[i] == '.') {
        size_t f = ++i;
        while (i < s.len && s.p[i] >= '0' && s.p[i] <= '9')
            i++;
        if (i == f)
            return 0;
    }
    if (i < s.len && (s.p[i] == 'e' || s.p[i] == 'E')) {
        i++;
        if (i < s.len && (s.p[i] == '+' || s.p[i] == '-'))
            i++;
        size_t e = i;
        while (i < s.len && s.p[i] >= '0' && s.p[i] <= '9')
            i++;
        if (i == e)
            return 0;
    }
    return i == s.len;
}

/* The number token s through strtod (exponents, or too many digits for an int64). */
static double token_double(jstr s)
{
    char tmp[64];
    size_t n = s.len < 63 ? s.len : 63;
    memcpy(tmp, s.p, n);
    tmp[n] = 0;
    return strtod(tmp, NULL);
}

static inline int is_digit(char c)
{
    return (unsigned char)(c - '0') < 10;
}

/* The first i' >= i with b[i'] not an ASCII digit (or len): 8 bytes at a time while 8 are in
 * [i, len) (a byte minus '0' is a digit when it is below 10: adding 0x76 leaves its high bit
 * clear), then one at a time. */
static inline size_t skip_digits(const char *b, size_t i, size_t len)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (i + 8 <= len) {
        uint64_t x;
        memcpy(&x, b + i, 8);
        x ^= UINT64_C(0x3030303030303030);
        uint64_t bad = ((x + UINT64_C(0x7676767676767676)) | x) & UINT64_C(0x8080808080808080);
        if (bad) /* the lowest flagged byte is the first non-digit: a carry only goes up */
            return i + ((size_t)__builtin_ctzll(bad) >> 3);
        i += 8;
    }
#endif
    while (i < len && is_digit(b[i]))
        i++;
    return i;
}

/* The decimals of a number of microseconds from p[i] (past the '.') as ns: the first three
 * exactly, the fourth rounding half up, the rest dropped; the index past them. */
static inline size_t frac_ns(const char *p, size_t i, size_t len, int64_t *ns)
{
    size_t e = skip_digits(p, i, len), nd = e - i;
    int64_t f = 0;
    if (nd >= 3)
        f = (p[i] - '0') * 100 + (p[i + 1] - '0') * 10 + (p[i + 2] - '0') +
            (nd > 3 && p[i + 3] >= '5'); /* round half up at the 4th digit */
    else if (nd == 2)
        f = (p[i] - '0') * 100 + (p[i + 1] - '0') * 10;
    else if (nd == 1)
        f = (p[i] - '0') * 100;
    *ns = f;
    return e;
}

/* A number in microseconds -> int64 ns, exactly for plain decimals (no double rounding),
 * clamped to +-TL_TIME_MAX. */
static int64_t us_to_ns(jstr s)
{
    size_t i = 0;
    int neg = 0, big = 0;
    if (s.p[0] == '-') {
        neg = 1;
        i++;
    }
    int64_t ip = 0;
    while (i < s.len && s.p[i] >= '0' && s.p[i] <= '9') {
        if (ip > TL_TIME_MAX / 10000)
            big = 1;
        else
            ip = ip * 10 + (s.p[i] - '0');
        i++;
    }
    int64_t frac = 0;
    if (i < s.len && s.p[i] == '.')
        i = frac_ns(s.p, i + 1, s.len, &frac);
    if (i < s.len || big) { /* exponent, or too large: fall back to double */
        double d = token_double(s) * 1000.0;
        return tl_clamp_time(tl_d_to_i64(d < 0 ? d - 0.5 : d + 0.5));
    }
    int64_t v = ip * 1000 + frac;
    return tl_clamp_time(neg ? -v : v);
}

/* A number -> int64, truncated and saturating. */
static int64_t to_int(jstr s)
{
    size_t i = 0;
    int neg = 0, big = 0;
    if (s.len && s.p[0] == '-') {
        neg = 1;
        i++;
    }
    int64_t v = 0;
    while (i < s.len && s.p[i] >= '0' && s.p[i] <= '9') {
        if (v > (INT64_MAX - 9) / 10)
            big = 1;
        else
            v = v * 10 + (s.p[i] - '0');
        i++;
    }
    if (i < s.len || big)
        return tl_d_to_i64(token_double(s));
    return neg ? -v : v;
}

/* The number token at r->pos as lex_token and valid_number take it, in one pass: its extent up
 * to the next delimiter, and in *ok whether it is a valid number. r->pos is left at its start. */
static jstr scan_number(jr *r, const char *expected, int *ok)
{
    peek(r, expected);
    const char *b = r->buf;
    size_t len = r->len, st = r->pos, i = st;
    if (i < len && b[i] == '-')
        i++;
    size_t d = i;
    i = skip_digits(b, i, len);
    int good = i > d;
    if (good && i < len && b[i] == '.') {
        size_t f = ++i;
        i = skip_digits(b, i, len);
        good = i > f;
    }
    if (good && i < len && (b[i] == 'e' || b[i] == 'E')) {
        i++;
        if (i < len && (b[i] == '+' || b[i] == '-'))
            i++;
        size_t e = i;
        while (i < len && is_digit(b[i]))
            i++;
        good = i > e;
    }
    if (i >= len || !is_delim[(unsigned char)b[i]]) { /* more of the token: not a number */
        good = 0;
        while (i < len && !is_delim[(unsigned char)b[i]])
            i++;
        if (i >= len)
            need_more(r, expected);
    }
    if (i - st > JSTR_MAX)
        fail(r, expected);
    *ok = good;
    jstr t = {b + st, (uint32_t)(i - st), 0};
    return t;
}

/* Skip a string, number, true, false or null, checking it. */
static void skip_scalar(jr *r, char c)
{
    if (c == '"') {
        lex_string(r);
        return;
    }
    if (c == '-' || is_digit(c)) {
        /* a plain integer (ids, sizes, strides: most numbers a read skips) in one step */
        size_t d = r->pos + (c == '-'), e = skip_digits(r->buf, d, r->len);
        if (e > d && e < r->len && is_delim[(unsigned char)r->buf[e]]) {
            r->pos = e;
            return;
        }
        int ok;
        jstr t = scan_number(r, "a value", &ok);
        if (!ok) /* reported at the start of the bad token */
            fail(r, "a value (string, number, object, array, true, false or null)");
        r->pos += t.len;
        return;
    }
    jstr t = lex_token(r, "a value");
    if (!(EQ(t, "true") || EQ(t, "false") || EQ(t, "null"))) {
        r->pos -= t.len;
        fail(r, "a value (string, number, object, array, true, false or null)");
    }
}

/* The array at r->pos ('[') skipped in one loop when it has the shape of a Kineto operator's
 * "Input Dims", "Input Strides", "Input type" or "Concrete Inputs": elements that are plain
 * integers, strings without a backslash, or arrays of those, spaces between tokens. 1 with
 * r->pos past its ']'; 0 with r->pos unchanged for anything else (other numbers, escapes,
 * objects, deeper arrays, other whitespace, the buffer's end, and every error): skip_value then
 * takes it from its start the general way, which decides the same for what this one accepts.
 * The text has a NUL at b[len], which stops every scan below. */
static inline int skip_flat_array(jr *r)
{
    const char *b = r->buf;
    size_t len = r->len, i = r->pos + 1;
    unsigned depth = 1;
    int open = 1; /* just past a '[': a ']' may follow */
    for (;;) {
        while (b[i] == ' ')
            i++;
        char c = b[i];
        if (is_digit(c) || c == '-') {
            size_t d = i + (c == '-');
            i = skip_digits(b, d, len);
            if (i == d)
                return 0;
        } else if (c == '"') {
            int esc = 0;
            i = string_end(b, i + 1, len, &esc);
            if (i >= len || esc) /* escapes are checked the general way */
                return 0;
            i++;
        } else if (c == '[' && depth == 1) {
            depth = 2;
            open = 1;
            i++;
            continue;
        } else if (c == ']' && open) {
            i++;
            goto closed;
        } else {
            return 0;
        }
        /* after a value: ',' and the next, or the closing bracket */
        for (;;) {
            while (b[i] == ' ')
                i++;
            if (b[i] == ',') {
                i++;
                open = 0;
                break;
            }
            if (b[i] != ']')
                return 0;
            i++;
        closed:
            if (--depth == 0) {
                if (i > len)
                    return 0;
                r->pos = i;
                return 1;
            }
        }
    }
}

/* Deepest nesting of objects and arrays a skipped value may have. */
#define SKIP_DEPTH 4096

/* Skip one value of any type, checking that it is JSON: what the reader does not use is still
 * part of the document, and a document that is not JSON is an error wherever the fault is.
 * What is open is a stack of bits (1: an object), so that nesting costs no C stack. */
static void skip_value(jr *r)
{
    if (peek(r, "a value") == '[' && skip_flat_array(r))
        return;
    uint64_t obj[SKIP_DEPTH / 64];
    size_t depth = 0;
    for (;;) {
        char c = peek(r, "a value");
        if (c != '{' && c != '[') {
            skip_scalar(r, c);
        } else {
            if (depth == SKIP_DEPTH)
                fail(r, "objects and arrays nested less than 4096 deep");
            r->pos++;
            uint64_t bit = UINT64_C(1) << (depth % 64);
            obj[depth / 64] = c == '{' ? obj[depth / 64] | bit : obj[depth / 64] & ~bit;
            depth++;
            char d = peek(r, c == '{' ? "a key or '}'" : "a value or ']'");
            if (d != (c == '{' ? '}' : ']')) {
                if (c == '{') {
                    lex_string(r);
                    expect(r, ':', "':' after a key");
                }
                continue; /* to the first member's value */
            }
            r->pos++;
            depth--;
        }
        /* after a value: close what ends here, or go on to the next member */
        for (;;) {
            if (!depth)
                return;
            int is_obj = (obj[(depth - 1) / 64] >> ((depth - 1) % 64)) & 1;
            char d = peek(r, is_obj ? "',' or '}'" : "',' or ']'");
            if (d == ',') {
                r->pos++;
                if (is_obj) {
                    lex_string(r);
                    expect(r, ':', "':' after a key");
                }
                break;
            }
            if (d != (is_obj ? '}' : ']'))
                fail(r, is_obj ? "',' or '}' in an object" : "',' or ']' in an array");
            r->pos++;
            depth--;
        }
    }
}

/* A number token (validated). */
static jstr lex_number(jr *r, const char *what)
{
    int ok;
    jstr t = scan_number(r, what, &ok);
    if (!ok)
        fail(r, what);
    r->pos += t.len;
    return t;
}

/* The value of the 8 ASCII digits of x (as loaded from memory: its first byte the most
 * significant digit; eight_digits loads them from p): pairs, then quads,
 * then the two halves, each step one multiplication over every lane of the word (a lane never
 * carries into the next: 10 * 9 + 9, 100 * 99 + 99 and 10000 * 9999 + 9999 fit it). */
static inline uint64_t eight_digits_of(uint64_t x)
{
    x -= UINT64_C(0x3030303030303030);                             /* byte k: digit k */
    x = (x * 10 + (x >> 8)) & UINT64_C(0x00ff00ff00ff00ff);        /* 16-bit lanes: pairs */
    x = (x * 100 + (x >> 16)) & UINT64_C(0x0000ffff0000ffff);      /* 32-bit lanes: quads */
    return (x * 10000 + (x >> 32)) & UINT64_C(0x00000000ffffffff); /* the eight */
}

static inline uint64_t eight_digits(const char *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return eight_digits_of(x);
}

/* The value of the n digits at p (n <= 19: it fits); room: the bytes that may be read from p
 * (at least n). With 8 bytes of room, the first n % 8 digits are one word too: shifted to its
 * end, '0's before them. */
static inline uint64_t digits_value(const char *p, size_t n, size_t room)
{
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    size_t h = n % 8;
    if (h >= 4 && room >= 8) { /* (fewer: the loop below is as quick) */
        uint64_t x;
        memcpy(&x, p, 8);
        x = x << (8 * (8 - h)) | UINT64_C(0x3030303030303030) >> (8 * h);
        v = eight_digits_of(x);
        p += h;
        n -= h;
    }
    for (; n >= 8; p += 8, n -= 8)
        v = v * 100000000 + eight_digits(p);
#else
    (void)room;
#endif
    for (; n; n--)
        v = v * 10 + (uint64_t)(*p++ - '0');
    return v;
}

/* The integer digits of the number at r->pos (after blanks; r->pos is left at its start): the
 * index past them, their value in *u (UINT64_MAX when there are none or more than 19: a
 * uint64 holds 19) and whether a '-' comes first. */
static inline size_t int_digits(jr *r, const char *what, uint64_t *u, int *neg)
{
    peek(r, what);
    const char *b = r->buf;
    size_t d = r->pos + (b[r->pos] == '-');
    size_t e = skip_digits(b, d, r->len);
    *u = e > d && e - d <= 19 ? digits_value(b + d, e - d, r->len - d) : UINT64_MAX;
    *neg = d > r->pos;
    return e;
}

/* The number at r->pos as an int64, as to_int(lex_number(r, what)) gives it, in one pass where
 * it is a plain integer of at most 19 digits followed by a delimiter and to_int would not
 * saturate (it does once the digits before the last pass (INT64_MAX - 9) / 10: they only grow);
 * anything else (a fraction, an exponent, more digits, not a number, the buffer's end) goes the
 * two-pass way, which reports errors and asks for more input as it always did. */
static int64_t lex_int(jr *r, const char *what)
{
    uint64_t u;
    int neg;
    size_t e = int_digits(r, what, &u, &neg);
    if (u / 10 <= (uint64_t)(INT64_MAX - 9) / 10 && e < r->len &&
        is_delim[(unsigned char)r->buf[e]]) {
        r->pos = e;
        return neg ? -(int64_t)u : (int64_t)u;
    }
    return to_int(lex_number(r, what));
}

/* The number at r->pos in microseconds as ns, as us_to_ns(lex_number(r, what)) gives it, in one
 * pass where it is a plain decimal followed by a delimiter whose integer digits us_to_ns takes
 * exactly (at most 19, those before the last at most TL_TIME_MAX / 10000: epoch microseconds
 * have 16); the same decimals kept, the 4th rounding half up. Anything else goes the two-pass
 * way, as lex_int. */
static int64_t lex_us_ns(jr *r, const char *what)
{
    uint64_t u;
    int neg;
    size_t i = int_digits(r, what, &u, &neg);
    const char *b = r->buf;
    size_t len = r->len;
    int ok = u / 10 <= (uint64_t)TL_TIME_MAX / 10000;
    int64_t ip = ok ? (int64_t)u : 0;
    int64_t frac = 0;
    if (ok && i < len && b[i] == '.') {
        size_t f = i + 1;
        i = frac_ns(b, f, len, &frac);
        ok = i > f;
    }
    if (!ok || i >= len || !is_delim[(unsigned char)b[i]])
        return us_to_ns(lex_number(r, what));
    int64_t v = ip * 1000 + frac;
    r->pos = i;
    return tl_clamp_time(neg ? -v : v);
}

/* ---- events ------------------------------------------------------------------------------ */

/* An id that may be a number or a string ("stream 7", "123(Python)", "Spans"). */
typedef struct idval {
    int set;
    int numeric; /* a number, or a string with a number in it */
    int64_t v;
    jstr s;
} idval;

/* Into *out rather than returned: a 32-byte struct comes back through memory. */
static void lex_id(jr *r, idval *out)
{
    idval id = {0};
    id.set = 1;
    if (peek(r, "a number or a string") == '"') {
        id.s = lex_string(r);
        /* first run of digits in the string */
        size_t i = 0;
        while (i < id.s.len && !(id.s.p[i] >= '0' && id.s.p[i] <= '9'))
            i++;
        if (i < id.s.len) {
            int neg = i > 0 && id.s.p[i - 1] == '-';
            int64_t v = 0;
            for (; i < id.s.len && id.s.p[i] >= '0' && id.s.p[i] <= '9'; i++)
                v = v > (INT64_MAX - 9) / 10 ? INT64_MAX : v * 10 + (id.s.p[i] - '0');
            id.v = neg ? -v : v;
            id.numeric = 1;
        }
    } else if (peek(r, "a number or a string") == '-' || is_digit(r->buf[r->pos])) {
        id.v = lex_int(r, "a number or a string");
        id.numeric = 1;
    } else {
        jstr t = lex_token(r, "a number or a string");
        if (EQ(t, "null")) {
            id.set = 0;
            *out = id;
            return;
        }
        if (!valid_number(t)) {
            r->pos -= t.len;
            fail(r, "a number or a string");
        }
        id.v = to_int(t);
        id.numeric = 1;
    }
    *out = id;
}

enum { MEM_ADDR = 1, MEM_ALLOCATED = 2, MEM_RESERVED = 4, MEM_DEVICE_ID = 8 };

/* An address: a number, or a string of one ("0x7f12..." or decimal, as Paddle writes it). */
static uint64_t lex_addr(jr *r)
{
    if (peek(r, "an address") != '"')
        return (uint64_t)lex_int(r, "an address");
    jstr v = lex_string(r);
    uint64_t a = 0;
    size_t i = 0;
    if (v.len > 2 && v.p[0] == '0' && (v.p[1] == 'x' || v.p[1] == 'X')) {
        for (i = 2; i < v.len; i++) {
            char ch = v.p[i];
            int d = ch >= '0' && ch <= '9'   ? ch - '0'
                    : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                    : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                             : -1;
            if (d < 0)
                break;
            a = a << 4 | (uint64_t)d;
        }
    } else {
        for (; i < v.len && v.p[i] >= '0' && v.p[i] <= '9'; i++)
            a = a * 10 + (uint64_t)(v.p[i] - '0');
    }
    return a;
}

typedef struct raw_event {
    /* Cleared for every event (a few million times: the rest is not): */
    char ph;
    char scope;
    int bp_e;
    int have_ts, have_dur;
    int have_device, have_stream, have_dev_type;
    int have_input_dims, have_arg_name, have_place, have_tcat;
    int unclosed; /* args "tally_unclosed" of tally's own export: a range never closed */
    int async;    /* args "tally_async": a tally_begin/tally_end range (not nested) */
    int nc;       /* counter values in ckey/cval */
    unsigned mem; /* MEM_* bits: which memory arguments were given */
    /* tally's export: a step's "tally samples", a memory row's "tally mem category", "tally
     * mem name" and "tally mem flags" (TL_MEM_*) */
    int have_samples, have_mcat, have_mname;
    unsigned mflags;
    jstr name, cat;
    int64_t ts, corr, bytes;
    /* Read only where .set, a have_ flag or nc says they were given: */
    idval pid, tid, id;
    int64_t dur;
    int64_t dev_type, device, stream; /* args */
    jstr input_dims, arg_name, place;
    jstr tcat; /* "tally category" of tally's own export: the phase of a user range */
    jstr mcat, mname;
    int64_t samples;
    /* [memory] events: Kineto's Addr, Total Allocated, Total Reserved, Device Id; Paddle's
     * addr, current_allocated, current_reserved (read where ev->mem says) */
    uint64_t addr;
    int64_t total_allocated, total_reserved, device_id;
    jstr ckey[8];
    double cval[8];
} raw_event;

static void parse_args(jr *r, raw_event *ev)
{
    expect(r, '{', "'{' starting args");
    if (peek(r, "'}' or a key") == '}') {
        r->pos++;
        return;
    }
    for (;;) {
        jstr k = lex_string(r);
        expect(r, ':', "':' after a key");
        char c = peek(r, "a value");
        int handled = 0;
        if (c != '"' && c != '{' && c != '[') {
            switch (k.len) {
            case 11:
                if (EQ(k, "correlation")) {
                    ev->corr = lex_int(r, "a number");
                    handled = 1;
                } else if (EQ(k, "Device Type")) {
                    ev->dev_type = lex_int(r, "a number");
                    ev->have_dev_type = 1;
                    handled = 1;
                } else if (EQ(k, "tally_async")) {
                    ev->async = lex_int(r, "a number") != 0;
                    handled = 1;
                }
                break;
            case 14:
                if (EQ(k, "correlation id")) {
                    ev->corr = lex_int(r, "a number");
                    handled = 1;
                } else if (EQ(k, "increase_bytes")) {
                    ev->bytes = lex_int(r, "a number");
                    handled = 1;
                } else if (EQ(k, "Total Reserved")) {
                    ev->total_reserved = lex_int(r, "a number");
                    ev->mem |= MEM_RESERVED;
                    handled = 1;
                } else if (EQ(k, "tally_unclosed") || EQ(k, "tally unclosed")) {
                    ev->unclosed = lex_int(r, "a number") != 0;
                    handled = 1;
                }
                break;
            case 5:
                if (EQ(k, "bytes") || EQ(k, "Bytes")) {
                    ev->bytes = lex_int(r, "a number");
                    handled = 1;
                }
                break;
            case 4:
                if (EQ(k, "Addr") || EQ(k, "addr")) {
                    ev->addr = lex_addr(r);
                    ev->mem |= MEM_ADDR;
                    handled = 1;
                }
                break;
            case 9:
                if (EQ(k, "Device Id")) {
                    ev->device_id = lex_int(r, "a number");
                    ev->mem |= MEM_DEVICE_ID;
                    handled = 1;
                }
                break;
            case 15:
                if (EQ(k, "Total Allocated")) {
                    ev->total_allocated = lex_int(r, "a number");
                    ev->mem |= MEM_ALLOCATED;
                    handled = 1;
                } else if (EQ(k, "tally mem flags")) {
                    ev->mflags = (unsigned)lex_int(r, "a number") &
                                 (TL_MEM_LABEL | TL_MEM_LIVE | TL_MEM_UNMATCHED | TL_MEM_REUSED |
                                  TL_MEM_RESERVE);
                    handled = 1;
                }
                break;
            case 13:
                if (EQ(k, "tally samples")) {
                    ev->samples = lex_int(r, "a number");
                    ev->have_samples = 1;
                    handled = 1;
                }
                break;
            case 17:
                if (EQ(k, "current_allocated")) {
                    ev->total_allocated = lex_int(r, "a number");
                    ev->mem |= MEM_ALLOCATED;
                    handled = 1;
                }
                break;
            case 16:
                if (EQ(k, "current_reserved")) {
                    ev->total_reserved = lex_int(r, "a number");
                    ev->mem |= MEM_RESERVED;
                    handled = 1;
                }
                break;
            case 6:
                if (EQ(k, "device")) {
                    ev->device = lex_int(r, "a number");
                    ev->have_device = 1;
                    handled = 1;
                } else if (EQ(k, "stream")) {
                    ev->stream = lex_int(r, "a number");
                    ev->have_stream = 1;
                    handled = 1;
                }
                break;
            }
            /* counter values; "ph" may come after "args" (json.dumps(sort_keys=True)): keep
             * the numbers until ph is known, they are used only for 'C' */
            if (!handled && (ev->ph == 'C' || !ev->ph) && ev->nc < 8 && c != 't' && c != 'f' &&
                c != 'n') {
                ev->ckey[ev->nc] = k;
                ev->cval[ev->nc] = token_double(lex_number(r, "a number"));
                ev->nc++;
                handled = 1;
            }
        } else if (c == '"') {
            if (EQ(k, "name")) {
                ev->arg_name = lex_string(r);
                ev->have_arg_name = 1;
                handled = 1;
            } else if (k.len == 4 && (EQ(k, "addr") || EQ(k, "Addr"))) {
                ev->addr = lex_addr(r);
                ev->mem |= MEM_ADDR;
                handled = 1;
            } else if (EQ(k, "place")) {
                ev->place = lex_string(r);
                ev->have_place = 1;
                handled = 1;
            } else if (EQ(k, "tally category")) {
                ev->tcat = lex_string(r);
                ev->have_tcat = 1;
                handled = 1;
            } else if (EQ(k, "tally mem category")) {
                ev->mcat = lex_string(r);
                ev->have_mcat = 1;
                handled = 1;
            } else if (EQ(k, "tally mem name")) {
                ev->mname = lex_string(r);
                ev->have_mname = 1;
                handled = 1;
            }
        } else if (c == '[' && EQ(k, "Input Dims")) {
            size_t s = r->pos;
            skip_value(r);
            ev->input_dims.p = r->buf + s;
            if (r->pos - s > JSTR_MAX) {
                r->pos = s;
                fail(r, "Input Dims shorter than 4 GB");
            }
            ev->input_dims.len = (uint32_t)(r->pos - s);
            ev->have_input_dims = 1;
            handled = 1;
        }
        if (!handled)
            skip_value(r);
        if (!another(r, '}', "',' or '}' in args"))
            return;
    }
}

static void parse_event_fields(jr *r, raw_event *ev)
{
    expect(r, '{', "'{' starting an event");
    if (peek(r, "'}' or a key") == '}') {
        r->pos++;
        return;
    }
    for (;;) {
        jstr k = lex_string(r);
        expect(r, ':', "':' after a key");
        int handled = 1;
        switch (k.len) {
        case 2:
            if (EQ(k, "ph")) {
                jstr v = lex_string(r);
                ev->ph = v.len ? v.p[0] : 0;
            } else if (EQ(k, "ts")) {
                ev->ts = lex_us_ns(r, "a number (ts)");
                ev->have_ts = 1;
            } else if (EQ(k, "id")) {
                lex_id(r, &ev->id);
            } else if (EQ(k, "bp")) {
                jstr v = lex_string(r);
                ev->bp_e = v.len == 1 && v.p[0] == 'e';
            } else
                handled = 0;
            break;
        case 3:
            if (EQ(k, "cat")) {
                if (peek(r, "a string") == '"')
                    ev->cat = lex_string(r);
                else
                    skip_value(r);
            } else if (EQ(k, "pid")) {
                lex_id(r, &ev->pid);
            } else if (EQ(k, "tid")) {
                lex_id(r, &ev->tid);
            } else if (EQ(k, "dur")) {
                ev->dur = lex_us_ns(r, "a number (dur)");
                ev->have_dur = 1;
            } else
                handled = 0;
            break;
        case 4:
            if (EQ(k, "name")) {
                if (peek(r, "a string") == '"')
                    ev->name = lex_string(r);
                else
                    skip_value(r);
            } else if (EQ(k, "args")) {
                int first = !r->args_seen;
                r->args_seen = 1;
                if (peek(r, "an object") == '{') {
                    size_t b = r->pos;
                    parse_args(r, ev);
                    if (first) {
                        r->args_b = b;
                        r->args_e = r->pos;
                    }
                } else {
                    skip_value(r);
                }
            } else
                handled = 0;
            break;
        case 1:
            if (EQ(k, "s")) {
                if (peek(r, "a string") == '"') {
                    jstr v = lex_string(r);
                    ev->scope = v.len ? v.p[0] : 0;
                } else
                    skip_value(r);
            } else
                handled = 0;
            break;
        default:
            handled = 0;
        }
        if (!handled)
            skip_value(r);
        if (!another(r, '}', "',' or '}' after an event field"))
            return;
    }
}

/* Map a cat string (any producer's spelling) to the model's category; -1 = skip the event. */
static int map_cat(jr *r, jstr c)
{
    switch (c.len) {
    case 0:
        return TL_CAT_OTHER;
    case 6:
        if (EQ(c, "cpu_op"))
            return TL_CAT_OPERATOR;
        if (EQ(c, "Kernel") || EQ(c, "kernel"))
            return TL_CAT_KERNEL;
        if (EQ(c, "Memcpy"))
            return TL_CAT_MEMCPY;
        if (EQ(c, "Memset"))
            return TL_CAT_MEMSET;
        break;
    case 7:
        if (EQ(c, "Forward") || EQ(c, "forward"))
            return TL_CAT_FORWARD;
        if (EQ(c, "Runtime"))
            return TL_CAT_RUNTIME;
        break;
    case 8:
        if (EQ(c, "Operator"))
            return TL_CAT_OPERATOR;
        if (EQ(c, "Backward"))
            return TL_CAT_BACKWARD;
        if (EQ(c, "PythonOp"))
            return TL_CAT_PYTHON;
        if (EQ(c, "overhead"))
            return TL_CAT_OVERHEAD;
        if (EQ(c, "Allocate"))
            return TL_CAT_MEMORY;
        break;
    case 5:
        if (EQ(c, "Trace"))
            return -1;
        if (EQ(c, "async"))
            return TL_CAT_OTHER;
        break;
    case 4:
        if (EQ(c, "Free"))
            return TL_CAT_MEMORY;
        break;
    case 9:
        if (EQ(c, "cuda_sync"))
            return TL_CAT_SYNC;
        break;
    case 10:
        if (EQ(c, "gpu_memcpy"))
            return TL_CAT_MEMCPY;
        if (EQ(c, "gpu_memset"))
            return TL_CAT_MEMSET;
        if (EQ(c, "Dataloader"))
            return TL_CAT_DATALOADER;
        if (EQ(c, "xpu_driver"))
            return TL_CAT_DRIVER;
        break;
    case 11:
        if (EQ(c, "CudaRuntime"))
            return TL_CAT_RUNTIME;
        if (EQ(c, "cuda_driver"))
            return TL_CAT_DRIVER;
        if (EQ(c, "ProfileStep"))
            return TL_CAT_STEP;
        if (EQ(c, "UserDefined"))
            return TL_CAT_USER;
        if (EQ(c, "xpu_runtime"))
            return TL_CAT_RUNTIME;
        break;
    case 12:
        if (EQ(c, "cuda_runtime"))
            return TL_CAT_RUNTIME;
        if (EQ(c, "mtia_runtime")) {
            r->t->accel = "MTIA";
            return TL_CAT_RUNTIME;
        }
        if (EQ(c, "Optimization"))
            return TL_CAT_OPTIMIZER;
        break;
    case 13:
        if (EQ(c, "Communication"))
            return TL_CAT_COMMUNICATION;
        if (EQ(c, "OperatorInner"))
            return TL_CAT_OPERATOR_INNER;
        break;
    case 15:
        if (EQ(c, "user_annotation"))
            return TL_CAT_USER;
        if (EQ(c, "python_function"))
            return TL_CAT_PYTHON;
        if (EQ(c, "mtia_ccp_events")) {
            r->t->accel = "MTIA";
            return TL_CAT_KERNEL;
        }
        break;
    case 17:
        if (EQ(c, "PythonUserDefined"))
            return TL_CAT_USER;
        if (EQ(c, "cpu_instant_event"))
            return TL_CAT_INSTANT;
        break;
    case 16:
        if (EQ(c, "ReservedAllocate"))
            return TL_CAT_MEMORY;
        break;
    case 12 + 7:
        if (EQ(c, "gpu_user_annotation"))
            return TL_CAT_GPU_USER;
        if (EQ(c, "privateuse1_runtime"))
            return TL_CAT_RUNTIME;
        break;
    }
    if (EQ(c, "ReservedFree"))
        return TL_CAT_MEMORY;
    (void)r;
    return TL_CAT_OTHER;
}

static uint32_t intern_js(jr *r, jstr s)
{
    if (!s.len)
        return 0; /* "" (s.p may be NULL: a field that was absent) */
    jstr u = unescape(r, s);
    return tl_intern(&r->t->strings, u.p, u.len);
}

/* Paddle appends the duration to names: "matmul[12.345 us]". */
static jstr strip_paddle_suffix(jstr s)
{
    if (s.len < 5 || s.p[s.len - 1] != ']')
        return s;
    size_t i = s.len - 1;
    while (i > 0 && s.p[i] != '[')
        i--;
    if (s.p[i] != '[' || i == 0)
        return s;
    const char *u = s.p + s.len - 3;
    if (!(memcmp(u, "us]", 3) == 0 || memcmp(u, "ms]", 3) == 0 || memcmp(u, "ns]", 3) == 0 ||
          memcmp(u - 0, " s]", 3) == 0))
        return s;
    if (!(s.p[i + 1] >= '0' && s.p[i + 1] <= '9'))
        return s;
    s.len = (uint32_t)i;
    return s;
}

/* A part meets what only a pass in file order reads right: the driver reads the rest of the
 * file in one pass (hostile input only; see is_part_sid and merge_ids). */
__attribute__((noreturn)) static void cannot_carry(jr *r)
{
    r->unsafe = 1;
    longjmp(r->jb, JR_ERROR);
}

/* A part's stand-in for the id of a name: PART_SID + its string id in the part, made the
 * trace's own (-id - 1) by the merge. */
#define PART_SID  INT64_MIN
#define PART_SIDS (INT64_C(1) << 32)
static inline int is_part_sid(int64_t v)
{
    return v < PART_SID + PART_SIDS;
}

static int64_t id_value(jr *r, idval id)
{
    if (!id.set)
        return 0;
    if (id.numeric) {
        if (r->mode == JR_PART && is_part_sid(id.v))
            cannot_carry(r); /* a number a part's stand-in for a name could equal */
        return id.v;
    }
    /* a name without a number ("Spans"): a stable negative id */
    uint32_t sid = intern_js(r, id.s);
    return r->mode == JR_PART ? PART_SID + sid : -(int64_t)sid - 1;
}

/* Append the item of `size` bytes at item to the array whose address is parr (a T **) of *n
 * items (capacity *cap); out of memory ends the read. */
static void push_item(jr *r, void *parr, size_t *n, size_t *cap, size_t size, const void *item)
{
    if (tl_grow_array(parr, cap, *n + 1, size) != 0) {
        tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
        longjmp(r->jb, JR_ERROR);
    }
    char *a; /* *parr, read as tl_grow_array reads it: parr is a T ** of any T */
    memcpy(&a, parr, sizeof a);
    memcpy(a + *n * size, item, size);
    ++*n;
}

static void push_stack(jr *r, uint32_t track, int32_t idx)
{
    if (track >= r->nstacks) {
        uint32_t n = track + 16;
        r->stacks = realloc(r->stacks, n * sizeof *r->stacks);
        r->stack_n = realloc(r->stack_n, n * sizeof *r->stack_n);
        r->stack_cap = realloc(r->stack_cap, n * sizeof *r->stack_cap);
        if (!r->stacks || !r->stack_n || !r->stack_cap) {
            tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
            longjmp(r->jb, JR_ERROR);
        }
        for (uint32_t i = r->nstacks; i < n; i++) {
            r->stacks[i] = NULL;
            r->stack_n[i] = r->stack_cap[i] = 0;
        }
        r->nstacks = n;
    }
    if (r->stack_n[track] == r->stack_cap[track]) {
        uint32_t nc = r->stack_cap[track] ? r->stack_cap[track] * 2 : 16;
        int32_t *ns = realloc(r->stacks[track], nc * sizeof *ns);
        if (!ns) {
            tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
            longjmp(r->jb, JR_ERROR);
        }
        r->stacks[track] = ns;
        r->stack_cap[track] = nc;
    }
    r->stacks[track][r->stack_n[track]++] = idx;
}

static tl_event *add_event(jr *r)
{
    tl_event *e = tl_trace_add(r->t);
    if (!e) {
        tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
        longjmp(r->jb, JR_ERROR);
    }
    return e;
}

static void mark_used(jr *r, uint32_t track)
{
    if (track >= r->cap_used) {
        uint32_t nc = track + 64;
        uint8_t *nu = realloc(r->used, nc);
        if (!nu) {
            tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
            longjmp(r->jb, JR_ERROR);
        }
        memset(nu + r->cap_used, 0, nc - r->cap_used);
        r->used = nu;
        r->cap_used = nc;
    }
    r->used[track] = 1;
}

/* What tally's export names a memory category ("parameter": tl_mem_cat_name). */
static uint16_t mem_cat_from_word(jstr w)
{
    for (int c = 0; c < TL_MEM_CAT_COUNT; c++) {
        const char *n = tl_mem_cat_name((tl_mem_cat)c);
        if (jstr_eq(w, n, strlen(n)))
            return (uint16_t)c;
    }
    return TL_MEM_OTHER;
}

/* A [memory] event into the trace's memory table as well (e: its event, already filled; a row
 * without an event, tally's label or live block, gives a stand-in with ts, track and flags). */
static void add_memev(jr *r, const raw_event *ev, const tl_event *e)
{
    tl_memev *m = tl_trace_add_mem(r->t);
    if (!m) {
        tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
        longjmp(r->jb, JR_ERROR);
    }
    m->ts = e->ts;
    m->corr = (uint32_t)ev->corr;
    m->bytes = ev->bytes;
    m->addr = (ev->mem & MEM_ADDR) ? ev->addr : 0;
    m->total_allocated = (ev->mem & MEM_ALLOCATED) ? ev->total_allocated : -1;
    m->total_reserved = (ev->mem & MEM_RESERVED) ? ev->total_reserved : -1;
    m->device = -1;
    if (e->flags & TL_EV_MEM_DEVICE) {
        m->device = 0;
        if (ev->mem & MEM_DEVICE_ID) {
            m->device = (int32_t)ev->device_id;
        } else if (ev->have_place) { /* Paddle: "Place(gpu:1)" */
            const char *p = memchr(ev->place.p, ':', ev->place.len);
            int32_t d = 0;
            for (p = p ? p + 1 : NULL;
                 p && p < ev->place.p + ev->place.len && *p >= '0' && *p <= '9' && d < 1000000; p++)
                d = d * 10 + (*p - '0');
            m->device = d;
        }
    }
    m->category = ev->have_mcat ? mem_cat_from_word(ev->mcat) : TL_MEM_OTHER;
    if (ev->have_mname)
        m->name = intern_js(r, ev->mname);
    m->flags = (uint16_t)ev->mflags;
    if (ev->cat.len > 8 && !memcmp(ev->cat.p, "Reserved", 8)) /* Paddle's ReservedAllocate/Free */
        m->flags |= TL_MEM_RESERVE;
    m->track = e->track;
    if (m->addr)
        r->t->mem_addr_known = 1;
    if (m->total_allocated >= 0)
        r->t->mem_totals_known = 1;
}

static void copy_kind(tl_event *e, jstr name)
{
    const char *p = name.p;
    size_t n = name.len;
    for (size_t i = 0; i + 4 <= n; i++) {
        if (p[i + 1] != 't' && p[i] != 'P')
            continue;
        if (!memcmp(p + i, "HtoD", 4))
            e->copy = TL_COPY_HTOD;
        else if (!memcmp(p + i, "DtoH", 4))
            e->copy = TL_COPY_DTOH;
        else if (!memcmp(p + i, "DtoD", 4))
            e->copy = TL_COPY_DTOD;
        else if (!memcmp(p + i, "HtoH", 4))
            e->copy = TL_COPY_HTOH;
        else if (!memcmp(p + i, "PtoP", 4) || (i + 4 <= n && !memcmp(p + i, "Peer", 4)))
            e->copy = TL_COPY_PTOP;
        else
            continue;
        break;
    }
    for (size_t i = 0; i + 8 <= n; i++)
        if (p[i] == 'P' && !memcmp(p + i, "Pageable", 8)) {
            e->flags |= TL_EV_PAGEABLE;
            break;
        }
}

static void add_flow(jr *r, const raw_event *ev)
{
    /* the ids first: a part may stop at one (id_value), and then nothing is added */
    int64_t id = id_value(r, ev->id), pid = id_value(r, ev->pid), tid = id_value(r, ev->tid);
    if (r->flows_at) {
        uint64_t at = r->consumed + r->elem_start;
        push_item(r, &r->flow_at, &r->nflow_at, &r->cap_flow_at, sizeof at, &at);
        return;
    }
    if (r->nflows == r->cap_flows) {
        size_t nc = r->cap_flows ? r->cap_flows * 2 : 1024;
        flow *nf = tl_big_realloc(r->flows, nc * sizeof *nf);
        if (!nf) {
            tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
            longjmp(r->jb, JR_ERROR);
        }
        r->flows = nf;
        r->cap_flows = nc;
    }
    flow *f = &r->flows[r->nflows++];
    f->id = id;
    f->ts = ev->ts;
    f->pid = pid;
    f->tid = tid;
    f->start = ev->ph == 's';
    f->bp_e = (uint8_t)ev->bp_e;
}

/* The category named by tally's "tally category" arg (chrome_writer.c writes these words). */
static int phase_from_word(jstr w, int cat)
{
    static const struct {
        const char *word;
        int cat;
    } map[] = {{"dataloader", TL_CAT_DATALOADER},
               {"forward", TL_CAT_FORWARD},
               {"backward", TL_CAT_BACKWARD},
               {"optimizer", TL_CAT_OPTIMIZER},
               {"communication", TL_CAT_COMMUNICATION}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (jstr_eq(w, map[i].word, strlen(map[i].word)))
            return map[i].cat;
    return cat;
}

/* A step's sample count from tally's export, for finish. */
static void add_samples(jr *r, int64_t step, int64_t samples)
{
    push_item(r, &r->samples, &r->nsamples, &r->cap_samples, sizeof *r->samples,
              (int64_t[2]){step, samples});
}

/* A runtime call or device work without a correlation id: only a flow can link it, so a trace
 * with one needs its flows (flows_needed) */
static int needs_flow(const tl_event *e)
{
    return !e->corr && (e->cat == TL_CAT_RUNTIME || e->cat == TL_CAT_KERNEL ||
                        e->cat == TL_CAT_MEMCPY || e->cat == TL_CAT_MEMSET);
}

/* s starts with the literal lit and goes on (a constant-size memcmp: this runs per event) */
#define HAS_PREFIX(s, lit) ((s).len > sizeof(lit) - 1 && memcmp((s).p, lit, sizeof(lit) - 1) == 0)

static void commit_event(jr *r, raw_event *ev)
{
    tl_trace *t = r->t;
    char ph = ev->ph;
    if (!ph || (r->mode == JR_AGAIN && ph != 's' && ph != 'f' && ph != 't'))
        return; /* read again, only a flow is taken */
    if (ev->cat.len)
        r->saw_cat = 1;
    if (ph == 'M') {
        if (EQ(ev->name, "thread_name") && ev->have_arg_name && ev->tid.set) {
            uint32_t tr =
                tl_trace_track(t, TL_TRACK_THREAD, id_value(r, ev->pid), id_value(r, ev->tid), -1);
            t->tracks[tr].name = intern_js(r, ev->arg_name);
            if (r->mode == JR_PART) /* "" too: it unnames the thread */
                push_item(r, &r->names, &r->nnames, &r->cap_names, sizeof *r->names,
                          (uint32_t[2]){tr, t->tracks[tr].name});
        }
        return;
    }
    int cat = map_cat(r, ev->cat);
    if (cat < 0)
        return;
    jstr name = ev->name;
    if (r->paddle)
        name = strip_paddle_suffix(name);
    if (ev->pid.set && !ev->pid.numeric && EQ(ev->pid.s, "CPU functions"))
        r->saw_cpu_functions = 1;
    /* names that decide the category whatever cat says (Kineto of 2021 files the steps under
     * "Operator") */
    if (cat == TL_CAT_USER || cat == TL_CAT_OTHER || cat == TL_CAT_STEP || cat == TL_CAT_OPERATOR) {
        if (HAS_PREFIX(name, "ProfilerStep#") || HAS_PREFIX(name, "ProfileStep#"))
            cat = TL_CAT_STEP;
        /* PyTorch's own ranges for the phases the Model view shows */
        else if (HAS_PREFIX(name, "enumerate(DataLoader)#"))
            cat = TL_CAT_DATALOADER;
        else if (HAS_PREFIX(name, "Optimizer.step#") || HAS_PREFIX(name, "Optimizer.zero_grad#"))
            cat = TL_CAT_OPTIMIZER;
    }
    if (ev->have_tcat && cat == TL_CAT_USER) /* tally's export keeps its phases this way */
        cat = phase_from_word(ev->tcat, cat);
    if ((ph == 'i' || ph == 'I' || ph == 'n') && EQ(name, "[memory]"))
        cat = TL_CAT_MEMORY;
    /* a part does not know whether an earlier part saw "CPU functions": the merge decides */
    int undecided = 0;
    if (cat == TL_CAT_OTHER && !ev->cat.len && (ph == 'X' || ph == 'B')) {
        cat = r->saw_cpu_functions ? TL_CAT_OPERATOR : TL_CAT_USER;
        undecided = r->mode == JR_PART && !r->saw_cpu_functions;
    }

    if (ph == 's' || ph == 'f' || ph == 't') {
        if (ev->id.set && ev->have_ts)
            add_flow(r, ev);
        return;
    }
    int device = tl_cat_is_device((tl_cat)cat);
    int64_t pid = id_value(r, ev->pid), tid = id_value(r, ev->tid);
    uint32_t track;
    if (device) {
        if (!ev->have_device && r->mode == JR_PART && is_part_sid(pid))
            cannot_carry(r); /* a device numbered by the id of its pid's name */
        int32_t dev = ev->have_device ? (int32_t)ev->device : (int32_t)pid;
        int64_t stream = ev->have_stream ? ev->stream : tid;
        if (r->mode == JR_PART && ev->have_stream && is_part_sid(stream))
            cannot_carry(r); /* a stream number a part's stand-in for a name could equal */
        track = tl_trace_track(t, TL_TRACK_STREAM, pid, stream, dev);
    } else {
        track = tl_trace_track(t, TL_TRACK_THREAD, pid, tid, -1);
    }

    switch (ph) {
    case 'E':
        if (track < r->nstacks && r->stack_n[track]) {
            int32_t idx = r->stacks[track][--r->stack_n[track]];
            tl_event *b = &t->ev[idx];
            b->dur = ev->ts - b->ts;
            if (b->dur < 0)
                b->dur = 0;
        } else if (r->mode == JR_PART) { /* its B may be in an earlier part */
            push_item(r, &r->pend, &r->npend, &r->cap_pend, sizeof *r->pend,
                      &(pending_end){track, ev->ts});
        } else {
            t->unmatched_ends++;
        }
        return;
    case 'X':
    case 'B':
    case 'i':
    case 'I':
    case 'n':
    case 'C':
        break;
    default:
        return; /* async b/e, object events, samples: not modelled */
    }
    if (!ev->have_ts)
        return;
    if ((ph == 'i' || ph == 'I') && ev->scope == 'g')
        return; /* global markers such as "Record Window End" */

    if (ph == 'C') {
        if (ev->nc)
            mark_used(r, track);
        for (int k = 0; k < ev->nc; k++) {
            tl_event *e = add_event(r);
            e->ts = ev->ts;
            e->cat = TL_CAT_COUNTER;
            e->track = track;
            e->flags = TL_EV_INSTANT;
            if (ev->nc == 1 || jstr_eq(ev->ckey[k], name.p, name.len)) {
                e->name = intern_js(r, name);
            } else {
                size_t n0 = r->scratch_n;
                scratch_put_js(r, name);
                scratch_put(r, " ", 1);
                scratch_put_js(r, ev->ckey[k]);
                e->name = tl_intern(&t->strings, r->scratch + n0, r->scratch_n - n0);
            }
            tl_counter_set(e, ev->cval[k]);
        }
        return;
    }

    mark_used(r, track);
    if (cat == TL_CAT_MEMORY && (ev->mflags & (TL_MEM_LABEL | TL_MEM_LIVE))) {
        /* tally's label or block live at the start: a row of the memory table, no event */
        tl_event stand_in;
        memset(&stand_in, 0, sizeof stand_in);
        stand_in.ts = ev->ts;
        stand_in.track = track;
        if (ev->have_dev_type && ev->dev_type != 0)
            stand_in.flags = TL_EV_MEM_DEVICE;
        add_memev(r, ev, &stand_in);
        return;
    }
    if (undecided)
        push_item(r, &r->undecided, &r->nundecided, &r->cap_undecided, sizeof *r->undecided,
                  &(uint32_t){(uint32_t)t->nev});
    tl_event *e = add_event(r);
    e->ts = ev->ts;
    e->dur = ph == 'X' && ev->have_dur ? tl_clamp_dur(e->ts, ev->dur) : 0;
    t->negative_durs += ph == 'X' && ev->have_dur && ev->dur < 0;
    t->clamped_times += e->ts == TL_TIME_MAX || e->ts == -TL_TIME_MAX ||
                        (ph == 'X' && ev->have_dur && ev->dur > 0 && e->dur != ev->dur);
    e->cat = (uint16_t)cat;
    e->track = track;
    e->corr = ev->corr;
    if (r->flows_at && needs_flow(e)) {
        r->uncorrelated = 1;
        if (r->mode != JR_PART)
            r->flows_at = 0;
    }
    e->name = intern_js(r, name);
    if (ph != 'X' && ph != 'B')
        e->flags |= TL_EV_INSTANT;
    if (ev->have_input_dims)
        e->args = tl_intern(&t->strings, ev->input_dims.p, ev->input_dims.len);
    switch (cat) {
    case TL_CAT_STEP: {
        size_t h = 0;
        while (h < name.len && name.p[h] != '#')
            h++;
        int64_t n = 0;
        for (h++; h < name.len && name.p[h] >= '0' && name.p[h] <= '9'; h++)
            n = n > (INT64_MAX - 9) / 10 ? INT64_MAX : n * 10 + (name.p[h] - '0');
        e->value = n;
        if (ev->have_samples)
            add_samples(r, n, ev->samples);
        break;
    }
    case TL_CAT_MEMCPY:
        e->value = ev->bytes;
        copy_kind(e, name);
        if (name.len >= 4 && memmem(name.p, name.len, "Sync", 4))
            e->flags |= TL_EV_SYNC_COPY;
        break;
    case TL_CAT_MEMSET:
        e->value = ev->bytes;
        break;
    case TL_CAT_MEMORY:
        e->value = ev->bytes;
        e->flags |= TL_EV_INSTANT;
        e->dur = 0;
        if ((ev->have_dev_type && ev->dev_type != 0) ||
            (ev->have_place && (memmem(ev->place.p, ev->place.len, "gpu", 3) ||
                                memmem(ev->place.p, ev->place.len, "GPU", 3))))
            e->flags |= TL_EV_MEM_DEVICE;
        add_memev(r, ev, e);
        break;
    }
    if (ev->unclosed && ph == 'X') {
        e->flags |= TL_EV_UNCLOSED;
        t->open_ranges += cat != TL_CAT_STEP; /* the step closed by tally_stop is no range */
    }
    if (ev->async && ph == 'X' && !tl_cat_is_device(cat))
        e->flags |= TL_EV_ASYNC;
    if (ph == 'B')
        push_stack(r, track, (int32_t)(t->nev - 1));
}

/* ---- top level --------------------------------------------------------------------------- */

static void parse_device_props(jr *r)
{
    expect(r, '[', "'[' starting deviceProperties");
    if (peek(r, "']' or an object") == ']') {
        r->pos++;
        return;
    }
    for (;;) {
        expect(r, '{', "'{' starting a device");
        int64_t id = -1, mem = 0, sms = 0, ma = 0, mi = 0;
        jstr name = {0};
        if (peek(r, "'}' or a key") != '}') {
            for (;;) {
                jstr k = lex_string(r);
                expect(r, ':', "':' after a key");
                char c = peek(r, "a value");
                if (c != '"' && c != '{' && c != '[' && c != 't' && c != 'f' && c != 'n') {
                    int64_t v = lex_int(r, "a number");
                    if (EQ(k, "id"))
                        id = v;
                    else if (EQ(k, "totalGlobalMem"))
                        mem = v;
                    else if (EQ(k, "numSms") || EQ(k, "smCount"))
                        sms = v;
                    else if (EQ(k, "computeMajor"))
                        ma = v;
                    else if (EQ(k, "computeMinor"))
                        mi = v;
                } else if (c == '"' && EQ(k, "name")) {
                    name = lex_string(r);
                } else {
                    skip_value(r);
                }
                if (!another(r, '}', "',' or '}' in a device"))
                    break;
            }
        } else {
            r->pos++;
        }
        if (id >= 0) {
            tl_device *d = tl_trace_device(r->t, (int32_t)id);
            if (d) {
                d->name = intern_js(r, name);
                d->memory = mem;
                d->sm_count = (int32_t)sms;
                d->cc_major = (int32_t)ma;
                d->cc_minor = (int32_t)mi;
            }
        }
        if (!another(r, ']', "',' or ']' in deviceProperties"))
            return;
    }
}

/* One {"tid":N,"dropped":N,"lost":N} of the "tally" member's thread_losses. */
static void parse_thread_loss(jr *r, struct tl_thread_loss *l)
{
    expect(r, '{', "'{' starting a thread's losses");
    if (peek(r, "'}' or a key") == '}') {
        r->pos++;
        return;
    }
    for (;;) {
        jstr k = lex_string(r);
        expect(r, ':', "':' after a key");
        char c = peek(r, "a value");
        if (c != '"' && c != '{' && c != '[' && c != 't' && c != 'f' && c != 'n') {
            int64_t v = lex_int(r, "a number");
            if (EQ(k, "tid"))
                l->tid = v;
            else if (EQ(k, "dropped"))
                l->dropped = (uint64_t)v;
            else if (EQ(k, "lost"))
                l->lost = (uint64_t)v;
        } else {
            skip_value(r);
        }
        if (!another(r, '}', "',' or '}' in a thread's losses"))
            return;
    }
}

static void parse_thread_losses(jr *r)
{
    tl_trace *t = r->t;
    expect(r, '[', "'[' starting thread_losses");
    if (peek(r, "']' or an object") == ']') {
        r->pos++;
        return;
    }
    for (;;) {
        struct tl_thread_loss l = {0, 0, 0};
        parse_thread_loss(r, &l);
        struct tl_thread_loss *nl =
            realloc(t->thread_losses, (t->nthread_losses + 1) * sizeof *t->thread_losses);
        if (!nl) {
            tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
            longjmp(r->jb, JR_ERROR);
        }
        t->thread_losses = nl;
        t->thread_losses[t->nthread_losses++] = l;
        if (!another(r, ']', "',' or ']' in thread_losses"))
            return;
    }
}

/* The top-level member "tally" of tally's export (chrome_writer.c): what a .tally file holds
 * beyond its events. */
static void parse_tally_member(jr *r)
{
    static const struct {
        const char *key;
        size_t off;
    } counts[] = {
        {"dropped", offsetof(tl_trace, dropped)},
        {"lost", offsetof(tl_trace, lost)},
        {"bad_pops", offsetof(tl_trace, bad_pops)},
        {"bad_ends", offsetof(tl_trace, bad_ends)},
        {"calls_outside", offsetof(tl_trace, calls_outside)},
        {"unclosed", offsetof(tl_trace, unclosed)},
        {"mem_unmatched_frees", offsetof(tl_trace, mem_unmatched_frees)},
        {"mem_reused", offsetof(tl_trace, mem_reused)},
        {"mem_bad_sizes", offsetof(tl_trace, mem_bad_sizes)},
        {"cut_at", offsetof(tl_trace, cut_at)},
        {"unwritten", offsetof(tl_trace, unwritten)},
        {"unwritten_at", offsetof(tl_trace, unwritten_at)},
    };
    tl_trace *t = r->t;
    /* the trace is tally's own, exported: the views treat it as they treat the .tally file
     * (memory owners are innermost ranges, a memory timeline without the allocator's totals) */
    t->source = TL_SRC_TALLY;
    expect(r, '{', "'{' starting tally");
    if (peek(r, "'}' or a key") == '}') {
        r->pos++;
        return;
    }
    for (;;) {
        jstr k = lex_string(r);
        expect(r, ':', "':' after a key");
        char c = peek(r, "a value");
        if (c == '"') {
            jstr v = lex_string(r);
            if (EQ(k, "host"))
                t->host = intern_js(r, v);
            else if (EQ(k, "program"))
                t->program = intern_js(r, v);
            else if (EQ(k, "samples_unit"))
                t->samples_unit = intern_js(r, v);
        } else if (c == '[' && EQ(k, "thread_losses")) {
            parse_thread_losses(r);
        } else if (c != '{' && c != '[' && c != 't' && c != 'f' && c != 'n') {
            int64_t v = lex_int(r, "a number");
            if (EQ(k, "pid"))
                t->pid = v;
            else if (EQ(k, "no_wall_clock"))
                r->no_wall_clock = v != 0;
            else if (EQ(k, "io_errno"))
                t->io_errno = (int32_t)v;
            for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
                if (jstr_eq(k, counts[i].key, strlen(counts[i].key)))
                    *(uint64_t *)((char *)t + counts[i].off) = (uint64_t)v;
        } else {
            skip_value(r);
        }
        if (!another(r, '}', "',' or '}' in tally"))
            return;
    }
}

static void parse_dist_info(jr *r)
{
    expect(r, '{', "'{' starting distributedInfo");
    if (peek(r, "'}' or a key") == '}') {
        r->pos++;
        return;
    }
    for (;;) {
        jstr k = lex_string(r);
        expect(r, ':', "':' after a key");
        char c = peek(r, "a value");
        if ((EQ(k, "rank") || EQ(k, "world_size")) && c != '"' && c != '{' && c != '[') {
            int64_t v = lex_int(r, "a number");
            if (EQ(k, "rank"))
                r->t->rank = (int32_t)v;
            else
                r->t->world_size = (int32_t)v;
        } else if ((EQ(k, "backend") || EQ(k, "nccl_version")) && c == '"') {
            jstr v = unescape(r, lex_string(r));
            char *to = EQ(k, "backend") ? r->t->backend : r->t->nccl_version;
            size_t cap = EQ(k, "backend") ? sizeof r->t->backend : sizeof r->t->nccl_version;
            size_t n = v.len < cap - 1 ? v.len : cap - 1;
            memcpy(to, v.p, n);
            to[n] = 0;
        } else {
            skip_value(r);
        }
        if (!another(r, '}', "',' or '}' in distributedInfo"))
            return;
    }
}

/* ---- raw text (keep_raw) ---------------------------------------------------------------- */

/* Keep buf[start, r->pos) as text, with the args object at buf[args_b, args_e) marked (args_e
 * 0: none); returns its id. */
static uint32_t keep_text(jr *r, size_t start, size_t args_b, size_t args_e)
{
    size_t mb = 0, mn = 0;
    if (args_e > args_b && args_b >= start && args_e <= r->pos) {
        mb = args_b - start;
        mn = args_e - args_b;
    }
    uint32_t id = tl_raw_add(&r->t->raw, r->buf + start, r->pos - start, mb, mn);
    if (!id) {
        tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory keeping the events' text", r->name);
        longjmp(r->jb, JR_ERROR);
    }
    return id;
}

static void push_id(jr *r, uint32_t **ids, size_t *n, size_t *cap, uint32_t id)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 1024;
        uint32_t *ni = tl_big_realloc(*ids, nc * sizeof *ni);
        if (!ni) {
            tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
            longjmp(r->jb, JR_ERROR);
        }
        *ids = ni;
        *cap = nc;
    }
    (*ids)[(*n)++] = id;
}

/* The element of traceEvents at buf[start, r->pos), which added the events from nev0 on: its
 * text goes with the first of them, or to raw_other when it is no event of the model. */
static void keep_element(jr *r, size_t start, size_t nev0)
{
    tl_trace *t = r->t;
    uint32_t id = keep_text(r, start, r->args_b, r->args_e);
    if (t->nev > nev0) {
        t->ev[nev0].raw = id;
        for (size_t i = nev0 + 1; i < t->nev; i++)
            t->ev[i].raw = TL_RAW_ELSEWHERE;
    } else {
        push_id(r, &t->raw_other, &t->nraw_other, &t->cap_raw_other, id);
    }
}

/* A top-level member ("key": value) at buf[start, r->pos). */
static void keep_member(jr *r, size_t start)
{
    tl_trace *t = r->t;
    size_t n = t->nraw_members, cap = t->cap_raw_members;
    push_id(r, &t->raw_members, &n, &cap, keep_text(r, start, 0, 0));
    t->nraw_members = (uint32_t)n;
    t->cap_raw_members = (uint32_t)cap;
}

enum {
    TOP_BEGIN,
    TOP_KEY,   /* object form: a key or '}' */
    TOP_AFTER, /* object form: ',' or '}' */
    ARR_FIRST, /* traceEvents: a value or ']' */
    ARR_VALUE, /* traceEvents: a value */
    ARR_AFTER, /* traceEvents: ',' or ']' */
    TOP_DONE
};

static int run(jr *r)
{
    /* the state lives in r, not in locals: it must survive the longjmp back here. The jump
     * comes back to the loop's head, set once a call (set for each unit, setjmp was 1 % of a
     * read's instructions) */
    r->mark = r->pos;
    int rc = setjmp(r->jb);
    for (;;) {
        if (rc == JR_NEED_MORE) {
            r->pos = r->mark;
            if (r->mode == JR_PART) /* the rest of the unit is in the next window */
                return RUN_INCOMPLETE;
            if (refill(r) != 0) {
                /* refill sets eof; the retry will fail with a proper message */
            }
        } else if (rc == JR_ERROR) {
            return -1;
        }
        rc = 0;
        r->mark = r->pos;
        r->scratch_n = 0;
        switch (r->state) {
        case TOP_BEGIN: {
            /* a UTF-8 byte order mark (Windows editors and PowerShell write one) */
            if (r->consumed + r->pos == 0 && r->len >= 3 && !memcmp(r->buf, "\xEF\xBB\xBF", 3))
                r->pos = 3;
            char c = peek(r, "'{' or '['");
            r->pos++;
            if (c == '{') {
                r->state = TOP_KEY;
            } else if (c == '[') {
                r->bare = 1;
                r->state = ARR_FIRST;
            } else {
                r->pos--;
                fail(r, "'{' or '[' at the start of a trace");
            }
            break;
        }
        case TOP_KEY: {
            if (peek(r, "a key or '}'") == '}') {
                r->pos++;
                r->state = TOP_DONE;
                break;
            }
            size_t kstart = r->pos;
            jstr k = lex_string(r);
            expect(r, ':', "':' after a key");
            if (EQ(k, "traceEvents")) {
                expect(r, '[', "'[' starting traceEvents");
                r->state = ARR_FIRST;
                break;
            }
            char c = peek(r, "a value");
            if (EQ(k, "schemaVersion") && c == '"') {
                r->paddle = 1;
                r->t->source = TL_SRC_PADDLE;
                lex_string(r);
            } else if (EQ(k, "deviceProperties") && c == '[') {
                parse_device_props(r);
            } else if (EQ(k, "distributedInfo") && c == '{') {
                parse_dist_info(r);
            } else if (EQ(k, "tally") && c == '{') {
                parse_tally_member(r);
            } else if (EQ(k, "baseTimeNanoseconds") && c != '"' && c != '{' && c != '[') {
                r->t->wall_offset = lex_int(r, "a number");
            } else {
                skip_value(r);
            }
            if (r->t->keep_raw)
                keep_member(r, kstart);
            r->state = TOP_AFTER;
            break;
        }
        case TOP_AFTER: {
            r->state = another(r, '}', "',' or '}' between top-level members") ? TOP_KEY : TOP_DONE;
            break;
        }
        case ARR_FIRST:
        case ARR_VALUE: {
            char c = peek(r, "an event");
            if (c == ']' && r->state == ARR_FIRST) {
                r->pos++;
                r->state = r->bare ? TOP_DONE : TOP_AFTER;
                break;
            }
            if (r->mode == JR_DRIVER && !r->one)
                return RUN_ELEMENT;
            if (r->mode == JR_PART && r->pos >= r->limit)
                return RUN_STOP;
            size_t start = r->pos, nev0 = r->t->nev;
            r->elem_start = start;
            r->args_b = r->args_e = 0;
            r->args_seen = 0;
            if (c == '{') {
                raw_event ev;
                memset(&ev, 0, offsetof(raw_event, pid));
                ev.pid.set = ev.tid.set = ev.id.set = 0;
                parse_event_fields(r, &ev);
                commit_event(r, &ev);
            } else {
                skip_value(r);
            }
            if (r->mode == JR_AGAIN)
                return RUN_ELEMENT;
            if (r->t->keep_raw)
                keep_element(r, start, nev0);
            r->state = ARR_AFTER;
            r->one = 0;
            break;
        }
        case ARR_AFTER: {
            int more = another(r, ']', "',' or ']' between events");
            r->state = more ? ARR_VALUE : r->bare ? TOP_DONE : TOP_AFTER;
            if (!more && r->mode == JR_PART)
                return RUN_ARRAY_END;
            break;
        }
        case TOP_DONE: {
            /* only whitespace may follow */
            r->pos = skip_ws(r->buf, r->pos, r->len);
            if (r->pos < r->len)
                fail(r, "end of input after the trace");
            if (!r->eof && r->mode != JR_PART) {
                r->mark = r->pos;
                if (refill(r) == 0)
                    continue;
            }
            return 0;
        }
        }
    }
}

/* Flows are the only link in some traces (old Kineto "async", Paddle "launch"): give both ends
 * the flow id as their correlation id when they have none. Needs the model sorted by track and
 * time (after tl_trace_finish). */

/* The first of a track's events [beg, end) with ts > the given ts (end when none), searched from
 * hint, where the last search on the track ended: flows come in file order, mostly in time
 * order on each track, so the answer is mostly at or near the hint (a gallop, then a binary
 * search in what it brackets: O(log distance), so out-of-order flows cost what a binary search
 * of the track costs). */
static size_t first_after(const tl_event *ev, size_t beg, size_t end, size_t hint, int64_t ts)
{
    size_t lo, hi;
    if (hint < beg || hint > end)
        hint = beg;
    if (hint < end && ev[hint].ts <= ts) { /* the answer is past hint */
        lo = hint + 1;
        size_t step = 1;
        for (;;) {
            size_t probe = step <= end - lo ? lo + step - 1 : end;
            if (probe == end || ev[probe].ts > ts) {
                hi = probe;
                break;
            }
            lo = probe + 1;
            step *= 2;
        }
    } else { /* the answer is at or before hint */
        hi = hint;
        size_t step = 1;
        for (;;) {
            if (hi == beg) {
                lo = beg;
                break;
            }
            size_t probe = step <= hi - beg ? hi - step : beg;
            if (ev[probe].ts <= ts) {
                lo = probe + 1;
                break;
            }
            hi = probe;
            step *= 2;
        }
    }
    while (lo < hi) { /* ev[lo - 1].ts <= ts (or lo == beg), ev[hi].ts > ts (or hi == end) */
        size_t mid = lo + (hi - lo) / 2;
        if (ev[mid].ts <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The event a flow at ts on the track of events [beg, end) binds to: the innermost span that
 * encloses ts (enclosing), else the slice starting at ts or the next one; TL_NONE when none.
 * *hint: where the last search on the track ended, moved to where this one did. */
static int32_t find_slice(const tl_trace *t, size_t beg, size_t end, size_t *hint, int64_t ts,
                          int enclosing)
{
    size_t lo = first_after(t->ev, beg, end, *hint, ts);
    *hint = lo;
    if (enclosing) {
        /* the innermost enclosing span: scan back a little */
        for (size_t k = lo, n = 0; k > beg && n < 64; k--, n++) {
            const tl_event *e = &t->ev[k - 1];
            if (e->ts <= ts && ts <= e->ts + e->dur && !(e->flags & TL_EV_INSTANT) &&
                e->cat != TL_CAT_COUNTER)
                return (int32_t)(k - 1);
        }
        return TL_NONE;
    }
    /* the slice starting at ts, or the next one */
    if (lo > beg && t->ev[lo - 1].ts == ts)
        return (int32_t)(lo - 1);
    if (lo < end)
        return (int32_t)lo;
    return TL_NONE;
}

/* Flows are only needed when runtime calls or device work lack correlation ids. */
static int flows_needed(const tl_trace *t)
{
    for (size_t i = 0; i < t->nev; i++)
        if (needs_flow(&t->ev[i]))
            return 1;
    return 0;
}

/* A flow names its track by (pid, tid) on a host thread and by (device, stream) on a device;
 * the first track of a key wins. Found in a hash of the tracks by that key (a binary search of
 * the sorted keys per flow was a fifth of a million flows' linking, a scan of the tracks per
 * flow made a million flows over 50k threads take a minute). */
static int64_t flow_key_a(const tl_track *tr)
{
    return tr->kind == TL_TRACK_THREAD ? tr->pid : tr->device;
}

static size_t flow_key_hash(uint32_t kind, int64_t a, int64_t b)
{
    return tl_u64map_mix((uint64_t)a * 0x9e3779b97f4a7c15ull ^
                         ((uint64_t)b * 0xc2b2ae3d27d4eb4full + kind));
}

/* The slot of flow key (kind, a, b) in slots (mask + 1 of them: track + 1, 0 empty), probed
 * from slot i (its hash): the one holding the key's track, or the empty one where it would go. */
static size_t flow_slot(const tl_trace *t, const uint32_t *slots, size_t mask, size_t i,
                        uint32_t kind, int64_t a, int64_t b)
{
    for (;; i = (i + 1) & mask) {
        uint32_t v = slots[i];
        const tl_track *tr = v ? &t->tracks[v - 1] : NULL;
        if (!v || (tr->kind == kind && flow_key_a(tr) == a && tr->tid == b))
            return i;
    }
}

/* Link by the flows again (first, nagain of them: they come first in the file), then by those
 * kept whole (r->flows). */
static int resolve_flows(jr *r, const flow *again, size_t nagain)
{
    tl_trace *t = r->t;
    if (!r->nflows && !nagain)
        return 0;
    size_t nslots = 64;
    while (nslots < (size_t)t->ntracks * 2)
        nslots *= 2;
    uint32_t *slots = calloc(nslots, sizeof *slots);
    size_t *first = calloc((size_t)t->ntracks + 1, sizeof *first); /* each track's first event */
    size_t *hint = malloc((t->ntracks ? t->ntracks : 1) * sizeof *hint); /* see first_after */
    if (!slots || !first || !hint) {
        free(slots);
        free(first);
        free(hint);
        return -1;
    }
    for (size_t i = 0; i < t->nev; i++) /* events are in track order */
        first[t->ev[i].track + 1] = i + 1;
    for (uint32_t k = 0; k < t->ntracks; k++)
        if (first[k + 1] < first[k])
            first[k + 1] = first[k]; /* a track without events */
    size_t mask = nslots - 1;
    for (uint32_t k = 0; k < t->ntracks; k++) {
        const tl_track *tr = &t->tracks[k];
        hint[k] = first[k];
        size_t i =
            flow_slot(t, slots, mask, flow_key_hash(tr->kind, flow_key_a(tr), tr->tid) & mask,
                      tr->kind, flow_key_a(tr), tr->tid);
        if (!slots[i]) /* else an earlier track has the key */
            slots[i] = k + 1;
    }
    /* Each flow's track first, then its event: with 50k tracks each step is a cache miss (a
     * hash slot, a track, the track's events), so what the flows a few ahead will read is
     * prefetched (2M flows: 0.25-0.42 s of linking, most of it waiting on memory). */
    size_t nf = nagain + r->nflows, changed = 0;
    uint32_t *trk = malloc((nf ? nf : 1) * sizeof *trk);
    if (!trk) {
        free(slots);
        free(first);
        free(hint);
        return -1;
    }
#define FLOW_AT(i)   ((i) < nagain ? &again[i] : &r->flows[(i)-nagain])
#define FLOW_KIND(f) ((f)->start ? TL_TRACK_THREAD : TL_TRACK_STREAM)
    /* hashed[j % RING]: flow j's home slot, hashed AHEAD flows before its turn */
    enum { AHEAD = 16, RING = 2 * AHEAD };
    size_t hashed[RING];
    for (size_t i = 0; i < nf + AHEAD; i++) {
        if (i < nf) {
            const flow *g = FLOW_AT(i);
            hashed[i % RING] = flow_key_hash(FLOW_KIND(g), g->pid, g->tid) & mask;
            __builtin_prefetch(&slots[hashed[i % RING]]);
        }
        if (i >= AHEAD / 2 && i - AHEAD / 2 < nf) {
            uint32_t v = slots[hashed[(i - AHEAD / 2) % RING]];
            if (v)
                __builtin_prefetch(&t->tracks[v - 1]);
        }
        if (i < AHEAD)
            continue;
        size_t j = i - AHEAD;
        const flow *f = FLOW_AT(j);
        /* a flow starts on a host thread and ends on a device stream (pid = device) */
        size_t at = flow_slot(t, slots, mask, hashed[j % RING], FLOW_KIND(f), f->pid, f->tid);
        trk[j] = slots[at] ? slots[at] - 1 : UINT32_MAX;
    }
    for (size_t i = 0; i < nf; i++) {
        if (i + AHEAD < nf && trk[i + AHEAD] != UINT32_MAX)
            __builtin_prefetch(&t->ev[hint[trk[i + AHEAD]]]);
        const flow *f = FLOW_AT(i);
        uint32_t track = trk[i];
        if (track == UINT32_MAX)
            continue;
        int32_t k =
            find_slice(t, first[track], first[track + 1], &hint[track], f->ts, f->start || f->bp_e);
        if (k == TL_NONE)
            continue;
        tl_event *e = &t->ev[k];
        if (!e->corr && f->id > 0) {
            e->corr = f->id;
            changed++;
        }
    }
#undef FLOW_AT
#undef FLOW_KIND
    free(trk);
    free(slots);
    free(first);
    free(hint);
    if (changed)
        return tl_trace_relink(t);
    return 0;
}

static void jr_free(jr *r)
{
    for (uint32_t i = 0; i < r->nstacks; i++)
        free(r->stacks[i]);
    free(r->stacks);
    free(r->stack_n);
    free(r->stack_cap);
    free(r->flows);
    free(r->flow_at);
    free(r->used);
    free(r->scratch);
    free(r->samples);
    if (!r->in_mem)
        text_free(r->buf, r->cap + 1);
}

/* Close B events never ended, at the trace's last timestamp. */
static void close_open_ranges(jr *r)
{
    tl_trace *t = r->t;
    int64_t t0, t1;
    int any = 0;
    for (uint32_t k = 0; k < r->nstacks; k++)
        any |= r->stack_n[k] != 0;
    if (!any)
        return;
    tl_trace_span(t, &t0, &t1);
    for (uint32_t k = 0; k < r->nstacks; k++)
        while (r->stack_n[k]) {
            tl_event *e = &t->ev[r->stacks[k][--r->stack_n[k]]];
            e->dur = t1 > e->ts ? t1 - e->ts : 0;
            e->flags |= TL_EV_UNCLOSED;
            t->open_ranges++;
        }
}

static int jr_seek(jr *d, uint64_t off);

/* The flows of a trace that needs them, kept as their elements' offsets: each element parsed
 * again, in the order they were met, into *again (*nagain of them: the same flows one pass
 * keeps, their ids interned then). Those kept whole (uncorrelated) came after them in the file
 * and stay in r->flows, to be linked by after them. An offset inside the buffer is read there;
 * any other is read from the file. 0, or -1 with r->err set. */
static int read_flows_again(jr *r, flow **again, size_t *nagain)
{
    uint64_t *at = r->flow_at;
    size_t n = r->nflow_at;
    r->flow_at = NULL;
    r->nflow_at = r->cap_flow_at = 0;
    r->flows_at = 0;
    flow *kept = r->flows;
    size_t nkept = r->nflows, cap_kept = r->cap_flows;
    r->flows = NULL;
    r->nflows = r->cap_flows = 0;
    int mode = r->mode, progress = r->progress, rc = 0;
    r->mode = JR_AGAIN;
    r->progress = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (at[i] >= r->consumed && at[i] < r->consumed + r->len)
            r->pos = (size_t)(at[i] - r->consumed);
        else if (r->in_mem || jr_seek(r, at[i]) != 0)
            rc = -1;
        r->state = ARR_VALUE;
        if (rc == 0 && run(r) != RUN_ELEMENT)
            rc = -1;
    }
    if (rc != 0 && !r->err->code)
        tl_error_setc(r->err, TL_ERR_IO, "%s: the file changed while it was read", r->name);
    free(at);
    *again = r->flows;
    *nagain = r->nflows;
    r->flows = kept;
    r->nflows = nkept;
    r->cap_flows = cap_kept;
    r->mode = mode;
    r->progress = progress;
    return rc;
}

static int finish(jr *r)
{
    tl_trace *t = r->t;
    t->read_stats.flows = r->nflows + r->nflow_at;
    t->read_stats.flow_bytes =
        r->cap_flows * sizeof *r->flows + r->cap_flow_at * sizeof *r->flow_at;
    if (!t->read_stats.threads)
        t->read_stats.threads = 1;
    close_open_ranges(r);
    if (r->no_wall_clock)
        t->wall_offset = 0;
    /* the steps' sample counts of tally's export, as the .tally reader gives them */
    if (r->nsamples && tl_trace_step_samples(t, r->samples, r->nsamples) != 0) {
        tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
        return -1;
    }
    /* Only tracks something ran on: Kineto names GPU streams as threads too ("stream 7"), and
     * global instants ("Iteration Start") have a process of their own. */
    if (tl_trace_keep_tracks(t, r->used, r->cap_used) != 0) {
        tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory", r->name);
        return -1;
    }
    if (t->source == TL_SRC_UNKNOWN)
        t->source = r->saw_cpu_functions ? TL_SRC_TORCH_LEGACY
                    : r->saw_cat         ? TL_SRC_KINETO
                                         : TL_SRC_CHROME;
    /* Flows not needed (a Kineto trace has ~1 for every 2 events) go as soon as that is known. */
    if ((r->nflows || r->nflow_at) && !flows_needed(t)) {
        free(r->flows);
        r->flows = NULL;
        r->nflows = r->cap_flows = 0;
        free(r->flow_at);
        r->flow_at = NULL;
        r->nflow_at = r->cap_flow_at = 0;
    }
    if (tl_trace_finish(t) != 0) {
        tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory while ordering events", r->name);
        return -1;
    }
    double t0 = tl_now_s();
    flow *again = NULL;
    size_t nagain = 0;
    t->read_stats.flows_again = r->nflow_at;
    if (r->nflow_at && read_flows_again(r, &again, &nagain) != 0) {
        free(again);
        return -1;
    }
    double t1 = tl_now_s();
    int rc = resolve_flows(r, again, nagain);
    free(again);
    if (rc != 0) {
        tl_error_setc(r->err, TL_ERR_NOMEM, "%s: out of memory while linking flows", r->name);
        return -1;
    }
    if ((r->nflows || nagain) && getenv("TALLY_READ_STATS"))
        fprintf(stderr,
                "tally: flows: %zu, %zu read again (%.3f s), %.3f s linking events by them\n",
                r->nflows + nagain, nagain, t1 - t0, tl_now_s() - t1);
    return 0;
}

/* ---- parallel parse -----------------------------------------------------------------------
 * A plain file is read in windows of threads × part bytes. The driver (the jr of the whole
 * read) parses the top-level members up to the first element of traceEvents; then each window
 * is cut into parts at likely element starts ('{' after '}' and ',', which is how elements
 * follow each other) and each part is parsed by a thread of its own into a trace of its own.
 * Only the first part's start is known to be an element's. Every later part's start is checked
 * by the part before it, which must stop exactly there: at the first element it would start at
 * or past its limit. A part whose start was wrong is dropped with all after it, and the next
 * window starts where the last good part stopped: a bad guess costs time, never the result.
 *
 * The good parts are merged into the trace in file order: their strings and tracks interned in
 * the order each part first saw them (the order one pass gives), their events appended with
 * the ids made the trace's, and what a part cannot settle alone settled in order: E events
 * whose B is in an earlier part, categories that depend on an earlier "CPU functions" pid,
 * thread names. A part that meets bad input, an id it cannot carry, or the end of the window
 * stops at the start of that unit; when the first part of a window cannot get past it, the
 * driver parses that one unit itself (so an error's message is the one a single pass gives, and
 * an element longer than a window is read), then goes on in windows. What follows traceEvents
 * is the driver's too. The model is the same for any number of threads. */

enum { W_MORE, W_STUCK, W_END, W_ONE_PASS, W_FAIL };

typedef struct part {
    jr r;
    tl_trace t;
    tl_error err;
    int rc;
    uint32_t *smap, *tmap; /* the part's string and track ids -> the trace's */
    size_t cap_smap, cap_tmap;
} part;

enum { MERGED = 0, MERGE_FAILED = -1, MERGE_ONE_PASS = 1 };

typedef struct pread {
    part *parts;
    int n;       /* parts a window, in each of the two sets */
    int workers; /* threads that parse them (the driver's among them once it has merged) */
    char *buf;   /* the window */
    size_t cap;
    uint64_t windows, dropped, driver_units, one_pass; /* see tl_trace.read_stats */
    uint64_t file_size;
    double t_parse, t_merge; /* seconds in the parts and in the merges (TALLY_READ_STATS) */
    /* the parts' event pages go back after each copy: for a file under 64 MB, where they are
     * a share of what the read holds (a 35 MB trace peaked at 0.31x its size keeping them,
     * 0.30x giving them back); a bigger file keeps them for the next window (1 GB at -j 2: 38 k
     * page faults, each a zeroed page, of 145 k; a 92 MB file read 14 % faster at -j 2 and 16
     * keeping them, at the same peak: the views' peak is the higher) */
    int give_back;
    uint32_t *seen; /* per track of the trace: the merge that last mapped a track to it */
    size_t cap_seen;
    uint32_t merges;
    tl_pool *pool; /* the threads of the parts and copies, kept from window to window */
} pread_t;

/* The first likely element start at or after from: a '{' whose previous non-blank characters
 * are ',' and, before it, '}'. 0 when there is none in [from, len). */
static size_t find_cut(const char *b, size_t from, size_t len)
{
    for (size_t i = from; i < len;) {
        const char *q = memchr(b + i, '{', len - i);
        if (!q)
            return 0;
        size_t k = (size_t)(q - b), j = k;
        while (j > from && is_ws[(unsigned char)b[j - 1]])
            j--;
        if (j > from && b[j - 1] == ',') {
            j--;
            while (j > from && is_ws[(unsigned char)b[j - 1]])
                j--;
            if (j > from && b[j - 1] == '}')
                return k;
        }
        i = k + 1;
    }
    return 0;
}

/* Set part p up to parse buf[start, len) of the window at file offset off, from state, up to
 * limit; what it kept from the last window is emptied, its memory kept. */
static void part_begin(part *p, const jr *d, char *buf, size_t len, uint64_t off, size_t start,
                       int state, size_t limit)
{
    jr *r = &p->r;
    tl_trace_clear(&p->t);
    memset(&p->err, 0, sizeof p->err);
    r->t = &p->t;
    r->err = &p->err;
    r->name = d->name;
    r->fd = d->fd;
    r->buf = buf;
    r->len = r->cap = len;
    r->pos = r->mark = start;
    r->consumed = off;
    /* a unit the window ends inside is the next window's (RUN_INCOMPLETE), unless the file ends
     * there too: then it is bad input, which the driver reads again to say where */
    r->eof = off + len >= d->total_size;
    r->in_mem = 1; /* the window is the driver's */
    r->paddle = d->paddle;
    r->bare = d->bare;
    r->state = state;
    r->mode = JR_PART;
    r->limit = limit;
    r->one = 0;
    for (uint32_t k = 0; k < r->nstacks; k++)
        r->stack_n[k] = 0;
    if (r->used)
        memset(r->used, 0, r->cap_used);
    r->nflows = r->nflow_at = r->nsamples = r->npend = r->nundecided = r->nnames = 0;
    r->flows_at = d->flows_at;
    r->uncorrelated = 0;
    r->saw_cat = r->saw_cpu_functions = 0;
    r->unsafe = 0;
    r->scratch_n = 0;
}

static void *part_main(void *arg)
{
    part *p = arg;
    p->rc = run(&p->r);
    return NULL;
}

/* A part's id (a pid, tid or flow id) as the trace's. */
static int64_t part_id(const part *p, int64_t v)
{
    return is_part_sid(v) ? -(int64_t)p->smap[v - PART_SID] - 1 : v;
}

__attribute__((noreturn)) static void out_of_memory(jr *d)
{
    tl_error_setc(d->err, TL_ERR_NOMEM, "%s: out of memory", d->name);
    longjmp(d->jb, JR_ERROR);
}

/* The first step of merging part p (see above): its strings and tracks made the trace's, in
 * the order the part first saw them. Returns MERGED; MERGE_FAILED with d->err set; or
 * MERGE_ONE_PASS, nothing else done, when two of the part's tracks are one track of the trace: a
 * number and a name's id that are equal (tid -1 and tid "", say) share a track only in file
 * order, B and E included, so the driver reads on in one pass. The strings and tracks interned
 * by then are the ones that pass interns first anyway. */
static int merge_ids(jr *d, pread_t *P, part *p)
{
    tl_trace *mt = d->t, *pt = &p->t;
    jr *r = &p->r;
    if (setjmp(d->jb))
        return MERGE_FAILED;
    if (tl_grow_array(&p->smap, &p->cap_smap, pt->strings.count, sizeof *p->smap) != 0 ||
        tl_grow_array(&p->tmap, &p->cap_tmap, pt->ntracks + 1, sizeof *p->tmap) != 0)
        out_of_memory(d);
    p->smap[0] = 0;
    /* hashed AHEAD strings ahead and their slots fetched meanwhile: a part of many new names
     * (1M distinct names: the merge was most of the read) waits on one miss at a time else */
    enum { AHEAD = 8 };
    const tl_strtab *ps = &pt->strings;
    uint64_t h[AHEAD];
    for (uint32_t j = 1; j < ps->count && j <= AHEAD; j++) {
        h[j % AHEAD] = tl_hash_bytes(ps->str[j], ps->len[j]);
        tl_strtab_prefetch(&mt->strings, h[j % AHEAD]);
    }
    for (uint32_t i = 1; i < ps->count; i++) {
        uint64_t hi = h[i % AHEAD];
        if (i + AHEAD < ps->count) {
            h[i % AHEAD] = tl_hash_bytes(ps->str[i + AHEAD], ps->len[i + AHEAD]);
            tl_strtab_prefetch(&mt->strings, h[i % AHEAD]);
        }
        if (!(p->smap[i] = tl_intern_hashed(&mt->strings, ps->str[i], ps->len[i], hi)))
            out_of_memory(d);
    }
    for (uint32_t i = 0; i < pt->ntracks; i++) {
        const tl_track *tr = &pt->tracks[i];
        p->tmap[i] = tl_trace_track(mt, (tl_track_kind)tr->kind, part_id(p, tr->pid),
                                    part_id(p, tr->tid), tr->device);
    }
    size_t had = P->cap_seen;
    if (tl_grow_array(&P->seen, &P->cap_seen, mt->ntracks, sizeof *P->seen) != 0)
        out_of_memory(d);
    if (P->cap_seen > had)
        memset(P->seen + had, 0, (P->cap_seen - had) * sizeof *P->seen);
    ++P->merges;
    for (uint32_t i = 0; i < pt->ntracks; i++) {
        if (P->seen[p->tmap[i]] == P->merges)
            return MERGE_ONE_PASS;
        P->seen[p->tmap[i]] = P->merges;
    }
    for (size_t i = 0; i < r->nnames; i++)
        mt->tracks[p->tmap[r->names[i][0]]].name = p->smap[r->names[i][1]];
    for (uint32_t i = 0; i < pt->ntracks && i < r->cap_used; i++)
        if (r->used[i])
            mark_used(d, p->tmap[i]);
    return MERGED;
}

/* The second step, for all the good parts of a window at once, each in a thread: the part's
 * events copied to mt->ev + base with the trace's ids (the copy and the first touch of the
 * trace's event pages were most of a merge). */
typedef struct part_copy {
    const part *p;
    tl_event *to;
    int give_back; /* the part's event pages go back once copied (pread_t.give_back) */
} part_copy;

/* Events of a window copied by a thread a part from this many on (a 1 GB Kineto trace's windows
 * hold ~10 k at -j 2; the tests' windows of 64-byte parts hold a few, and started ~40 % of their
 * 100 k threads for them). */
#define COPY_APART_MIN 4096

static void *copy_events(void *arg)
{
    const part_copy *c = arg;
    const part *p = c->p;
    size_t n = p->t.nev;
    if (n)
        memcpy(c->to, p->t.ev, n * sizeof *c->to);
    for (size_t i = 0; i < n; i++) {
        tl_event *e = &c->to[i];
        e->name = p->smap[e->name];
        e->args = p->smap[e->args];
        e->track = p->tmap[e->track];
    }
    /* copied: the part's pages go back until its next window (two sets of parts of 16 threads
     * each held their most of any window: 5 MB of a 92 MB file's read) */
    if (c->give_back)
        tl_discard_pages((char *)p->t.ev, n * sizeof *p->t.ev);
    return NULL;
}

/* The last step, in file order, once the part's events are at base: what depends on the parts
 * before it. Returns MERGED, or MERGE_FAILED with d->err set. */
static int merge_rest(jr *d, part *p, size_t base)
{
    tl_trace *mt = d->t, *pt = &p->t;
    jr *r = &p->r;
    if (setjmp(d->jb))
        return MERGE_FAILED;
    if (d->saw_cpu_functions)
        for (size_t i = 0; i < r->nundecided; i++)
            if (r->undecided[i] < pt->nev)
                mt->ev[base + r->undecided[i]].cat = TL_CAT_OPERATOR;
    d->saw_cpu_functions |= r->saw_cpu_functions;
    d->saw_cat |= r->saw_cat;

    for (size_t i = 0; i < pt->nmem; i++) {
        tl_memev *m = tl_trace_add_mem(mt);
        if (!m)
            out_of_memory(d);
        *m = pt->mem[i];
        m->name = p->smap[m->name];
        m->track = p->tmap[m->track];
    }
    if (r->nflows) {
        if (tl_grow_array(&d->flows, &d->cap_flows, d->nflows + r->nflows, sizeof *d->flows) != 0)
            out_of_memory(d);
        for (size_t i = 0; i < r->nflows; i++) {
            flow f = r->flows[i];
            f.id = part_id(p, f.id);
            f.pid = part_id(p, f.pid);
            f.tid = part_id(p, f.tid);
            d->flows[d->nflows++] = f;
        }
    }
    if (r->uncorrelated) /* the windows begun from now on keep their flows whole */
        d->flows_at = 0;
    if (r->nflow_at) {
        if (tl_grow_array(&d->flow_at, &d->cap_flow_at, d->nflow_at + r->nflow_at,
                          sizeof *d->flow_at) != 0)
            out_of_memory(d);
        memcpy(d->flow_at + d->nflow_at, r->flow_at, r->nflow_at * sizeof *d->flow_at);
        d->nflow_at += r->nflow_at;
    }
    for (size_t i = 0; i < r->nsamples; i++)
        add_samples(d, r->samples[i][0], r->samples[i][1]);
    /* E events of earlier B (a part's E found its own stack empty), then the part's B still
     * open, bottom first */
    for (size_t i = 0; i < r->npend; i++) {
        uint32_t gt = p->tmap[r->pend[i].track];
        if (gt < d->nstacks && d->stack_n[gt]) {
            tl_event *b = &mt->ev[d->stacks[gt][--d->stack_n[gt]]];
            b->dur = r->pend[i].ts - b->ts;
            if (b->dur < 0)
                b->dur = 0;
        } else {
            mt->unmatched_ends++;
        }
    }
    for (uint32_t k = 0; k < r->nstacks && k < pt->ntracks; k++)
        for (uint32_t i = 0; i < r->stack_n[k]; i++)
            push_stack(d, p->tmap[k], (int32_t)(base + (size_t)r->stacks[k][i]));
    mt->open_ranges += pt->open_ranges;
    mt->unmatched_ends += pt->unmatched_ends;
    mt->negative_durs += pt->negative_durs;
    mt->clamped_times += pt->clamped_times;
    if (pt->accel)
        mt->accel = pt->accel;
    mt->mem_addr_known |= pt->mem_addr_known;
    mt->mem_totals_known |= pt->mem_totals_known;
    return MERGED;
}

/* A window of the file: read into P->buf, the NUL the lexer stops at after it, in slices that
 * the threads take in turn. Not mapped: the parts walking the page cache's pages through a
 * mapping took 0.5-0.7 s of CPU a GB on this VM (4 KB pages, a fault every 16), where read()'s
 * copy and the walk of the copy took 0.13 s; the copy in the driver's thread alone, as it once
 * was, was a fifth of a parallel read's time (docs/PERFORMANCE.md, "Read, not mapped"). One
 * buffer does for the window parsed and the one parsed ahead: the parts hold what they read as
 * their own, so a window's text is done with before the next is read (read_windows). */
typedef struct window {
    char *text;
    size_t len;
} window;

/* Slices of a window: 1 MB at least, so that a thread's turn is worth its handing over. */
#define SLICE_MIN ((size_t)1 << 20)

typedef struct slice {
    int fd;
    char *to;
    uint64_t off;
    size_t want, got;
    int err; /* errno of a read that failed, else 0 */
} slice;

static void *read_slice(void *arg)
{
    slice *s = arg;
    while (s->got < s->want) {
        ssize_t n = pread(s->fd, s->to + s->got, s->want - s->got, (off_t)(s->off + s->got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            s->err = n < 0 ? errno : 0;
            break;
        }
        s->got += (size_t)n;
    }
    return NULL;
}

/* Read the window at off into P->buf: 0, or -1 with d->err set (no memory, a read error, or a
 * file shorter than when it was opened: another program cut it). */
static int window_open(jr *d, pread_t *P, uint64_t off, window *w)
{
    memset(w, 0, sizeof *w);
    size_t want = off + P->cap < P->file_size ? P->cap : (size_t)(P->file_size - off);
    if (!P->buf && !(P->buf = text_alloc(P->cap + 1))) {
        tl_error_setc(d->err, TL_ERR_NOMEM, "%s: out of memory", d->name);
        return -1;
    }
    slice sl[64];
    int k = want / SLICE_MIN < (size_t)P->n ? (int)(want / SLICE_MIN) : P->n;
    if (k < 1)
        k = 1;
    for (int j = 0; j < k; j++) {
        size_t a = (size_t)((uint64_t)want * (uint64_t)j / (uint64_t)k);
        size_t b = (size_t)((uint64_t)want * (uint64_t)(j + 1) / (uint64_t)k);
        sl[j] = (slice){d->fd, P->buf + a, off + a, b - a, 0, 0};
    }
    if (k > 1)
        tl_share_each(P->pool, read_slice, sl, sizeof *sl, k, P->workers);
    else
        read_slice(&sl[0]);
    for (int j = 0; j < k; j++) {
        if (sl[j].err) {
            tl_error_setc(d->err, TL_ERR_IO, "%s: read error: %s", d->name, strerror(sl[j].err));
            return -1;
        }
        if (sl[j].got < sl[j].want) {
            tl_error_set(d->err, "%s: " TL_CUT_SHORT_TEXT, d->name);
            return -1;
        }
    }
    w->text = P->buf;
    w->len = want;
    w->text[w->len] = 0;
    return 0;
}

static void window_close(window *w)
{
    memset(w, 0, sizeof *w);
}

/* Cut window w (at file offset off, from state) into parts at likely element starts and set
 * parts up to parse them: how many (cut[j]: where part j starts). */
static int window_begin(jr *d, pread_t *P, part *parts, const window *w, uint64_t off, int state,
                        size_t *cut)
{
    P->windows++;
    int k = 1;
    cut[0] = 0;
    for (int j = 1; j < P->n; j++) {
        size_t g = (size_t)((uint64_t)w->len * (uint64_t)j / (uint64_t)P->n);
        size_t c = g > cut[k - 1] ? find_cut(w->text, g, w->len) : 0;
        if (c > cut[k - 1])
            cut[k++] = c;
    }
    for (int j = 0; j < k; j++) {
        part_begin(&parts[j], d, w->text, w->len, off, cut[j], j ? ARR_VALUE : state,
                   j + 1 < k ? cut[j + 1] : SIZE_MAX);
    }
    return k;
}

/* Read the window at off, cut it and parse its parts, taken in turn by the workers and the
 * caller: how many parts, or -1 with d->err. */
static int window_parse(jr *d, pread_t *P, part *parts, window *w, uint64_t off, int state,
                        size_t *cut)
{
    if (window_open(d, P, off, w) != 0)
        return -1;
    int k = window_begin(d, P, parts, w, off, state, cut);
    double t0 = tl_now_s();
    tl_share_each(P->pool, part_main, parts, sizeof *parts, k, P->workers);
    P->t_parse += tl_now_s() - t0;
    return k;
}

/* Which of the k parsed parts of a window (at off, from state) are good (*g: the first *g) and
 * where the next window starts (*noff, *nstate), from how the parts stopped: W_MORE, W_STUCK
 * (the driver parses the unit at *noff itself), W_END (traceEvents ended; the rest is the
 * driver's) or W_ONE_PASS (the driver reads on in one pass from *noff); W_FAIL out of memory. */
static int window_decide(jr *d, pread_t *P, part *parts, const size_t *cut, int k, uint64_t off,
                         int state, int *g, uint64_t *noff, int *nstate)
{
    int w = W_STUCK;
    *g = k;
    *noff = off;
    *nstate = state;
    for (int j = 0; j < k; j++) {
        part *p = &parts[j];
        jr *r = &p->r;
        if (p->err.code == TL_ERR_NOMEM) {
            *d->err = p->err;
            return W_FAIL;
        }
        *g = j + 1;
        if (r->unsafe) { /* not even its prefix: the driver reads on from its start */
            *g = j;
            w = W_ONE_PASS;
            *noff = j ? off + cut[j] : off;
            *nstate = j ? ARR_VALUE : state;
            break;
        }
        if (p->rc == RUN_STOP && j + 1 < k && r->pos == cut[j + 1])
            continue; /* the next part started where an element starts */
        switch (p->rc) {
        case RUN_STOP:
            w = W_MORE;
            *noff = off + r->pos;
            *nstate = ARR_VALUE;
            break;
        case RUN_INCOMPLETE:
            if (j == 0 && r->mark == 0)
                break; /* not one unit in the window: W_STUCK where it started */
            w = W_MORE;
            *noff = off + r->mark;
            *nstate = r->state;
            break;
        case RUN_ARRAY_END:
            w = W_END;
            *noff = off + r->pos;
            *nstate = r->state;
            break;
        default: /* bad input: the driver parses that unit */
            *noff = off + r->mark;
            *nstate = r->state;
            break;
        }
        break;
    }
    P->dropped += (uint64_t)(k - *g);
    return w;
}

/* Merge the g good parts of a window (at off, from state; w, *noff, *nstate as window_decide
 * said): their strings and tracks made the trace's in order, their events copied in threads,
 * and the rest settled in order. Returns w, or W_ONE_PASS (with *noff, *nstate moved back) when
 * a part's tracks cannot be merged, or W_FAIL with d->err set. */
static int window_merge(jr *d, pread_t *P, part *parts, const size_t *cut, int g, uint64_t off,
                        int state, int w, uint64_t *noff, int *nstate)
{
    for (int j = 0; j < g; j++) {
        int m = merge_ids(d, P, &parts[j]);
        if (m == MERGE_FAILED)
            return W_FAIL;
        if (m == MERGE_ONE_PASS) {
            P->dropped += (uint64_t)(g - j);
            g = j;
            w = W_ONE_PASS;
            *noff = j ? off + cut[j] : off;
            *nstate = j ? ARR_VALUE : state;
            break;
        }
    }
    tl_trace *mt = d->t;
    size_t base[64], total = mt->nev;
    for (int j = 0; j < g; j++) {
        base[j] = total;
        total += parts[j].t.nev;
    }
    if (total > mt->cap_ev &&
        tl_trace_reserve(mt, total > mt->cap_ev + mt->cap_ev / 2 ? total
                                                                 : mt->cap_ev + mt->cap_ev / 2)) {
        tl_error_setc(d->err, TL_ERR_NOMEM, "%s: out of memory", d->name);
        return W_FAIL;
    }
    part_copy pc[64];
    for (int j = 0; j < g; j++)
        pc[j] = (part_copy){&parts[j], mt->ev + base[j], P->give_back};
    if (total - mt->nev >= COPY_APART_MIN) {
        tl_share_each(P->pool, copy_events, pc, sizeof *pc, g, P->workers);
    } else { /* a few events: a thread each would cost more than the copy */
        for (int j = 0; j < g; j++)
            copy_events(&pc[j]);
    }
    mt->nev = total;
    for (int j = 0; j < g; j++)
        if (merge_rest(d, &parts[j], base[j]) != MERGED)
            return W_FAIL;
    return w;
}

/* Windows from *off (from *state) until one does not end where the next starts: W_STUCK,
 * W_END, W_ONE_PASS (*off, *state where the driver goes on) or W_FAIL (d->err says why). While
 * a window is merged, the next one, whose start its parts' stops already say, is parsed by the
 * other set of parts (P->parts + P->n): a merge is partly one thread (1 GB, 2 threads: 0.14 s of
 * a 1.5 s load), so the parse no longer waits for it. A merge that changes its mind (two of a
 * part's tracks are one) discards the window parsed ahead. */
static int read_windows(jr *d, pread_t *P, uint64_t *off, int *state)
{
    part *cur = P->parts, *nxt = P->parts + P->n;
    window wc, wn;
    size_t cut_c[65], cut_n[65];
    d->consumed = *off;
    d->len = 0;
    show_progress(d, 0);
    int kc = window_parse(d, P, cur, &wc, *off, *state, cut_c), w;
    if (kc < 0)
        return W_FAIL;
    for (;;) {
        int g, nstate;
        uint64_t noff;
        w = window_decide(d, P, cur, cut_c, kc, *off, *state, &g, &noff, &nstate);
        /* the parts hold what they read as their own (interned strings, numbers): the text
         * is done with, and the next is read into the same buffer */
        window_close(&wc);
        /* the next window's parts taken by the workers while this one is merged */
        tl_share pr;
        int kn = 0;
        if (w == W_MORE) {
            if (window_open(d, P, noff, &wn) != 0)
                return W_FAIL;
            kn = window_begin(d, P, nxt, &wn, noff, nstate, cut_n);
            /* every worker on them meanwhile, and the driver once it has merged */
            tl_share_start(&pr, P->pool, part_main, nxt, sizeof *nxt, kn, P->workers + 1);
        }
        double t1 = tl_now_s();
        if (w != W_FAIL)
            w = window_merge(d, P, cur, cut_c, g, *off, *state, w, &noff, &nstate);
        double t2 = tl_now_s();
        P->t_merge += t2 - t1;
        if (kn) {
            tl_share_wait(&pr);
            P->t_parse += tl_now_s() - t2;
            if (w != W_MORE) /* the merge found a part it could not take: not the next start */
                window_close(&wn);
        }
        if (w == W_FAIL)
            return W_FAIL;
        *off = noff;
        *state = nstate;
        if (w != W_MORE)
            return w;
        d->consumed = *off;
        d->len = 0;
        show_progress(d, 0);
        /* parsed already: on to its merge */
        part *sw = cur;
        cur = nxt;
        nxt = sw;
        wc = wn;
        memcpy(cut_c, cut_n, sizeof cut_c);
        kc = kn;
    }
}

/* Go on reading from file offset off, with an empty buffer. */
static int jr_seek(jr *d, uint64_t off)
{
    if (lseek(d->fd, (off_t)off, SEEK_SET) < 0) {
        tl_error_setc(d->err, TL_ERR_IO, "%s: cannot seek: %s", d->name, strerror(errno));
        return -1;
    }
    d->consumed = off;
    d->len = d->pos = d->mark = 0;
    d->eof = 0;
    d->buf[0] = 0;
    return 0;
}

static void parts_free(pread_t *P)
{
    for (int j = 0; j < P->n * 2 && P->parts; j++) {
        part *p = &P->parts[j];
        jr_free(&p->r);
        free(p->r.pend);
        free(p->r.undecided);
        free(p->r.names);
        tl_trace_free(&p->t);
        free(p->smap);
        free(p->tmap);
    }
    tl_pool_free(P->pool);
    free(P->parts);
    free(P->seen);
    text_free(P->buf, P->cap + 1);
}

static long long part_asked(void);

/* The whole read of a plain file, in windows of n parts of part_bytes, parsed by workers
 * threads. */
static int run_parallel(jr *d, int n, int workers, size_t part_bytes)
{
    d->mode = JR_DRIVER;
    int rc = run(d);
    if (rc != RUN_ELEMENT)
        return rc;
    pread_t P = {0};
    P.file_size = d->total_size;
    /* parts the tests ask for (TALLY_READ_PART) keep theirs: the tests' small files read so
     * cover both ways */
    P.give_back = P.file_size < ((uint64_t)64 << 20) && !part_asked();
    P.n = n;
    P.workers = workers;
    P.cap = (size_t)n * part_bytes;
    P.parts = calloc((size_t)n * 2, sizeof *P.parts); /* two sets: see read_windows */
    if (!P.parts) {                                   /* on in one pass */
        d->mode = JR_WHOLE;
        return run(d);
    }
    P.pool = tl_pool_new(); /* NULL: a thread an item */
    /* The driver's buffer (a whole block, read for the members before traceEvents) is read
     * again only for an element longer than a window: its pages go back until then. */
    tl_discard_pages(d->buf, d->cap + 1);
    for (int j = 0; j < n * 2; j++)
        tl_trace_init(&P.parts[j].t);
    while (rc == RUN_ELEMENT) {
        uint64_t off = d->consumed + d->pos;
        int state = ARR_VALUE, w = read_windows(d, &P, &off, &state);
        if (w == W_FAIL || jr_seek(d, off) != 0) {
            rc = -1;
            break;
        }
        d->state = state;
        d->mode = w == W_STUCK ? JR_DRIVER : JR_WHOLE;
        d->one = w == W_STUCK;
        P.driver_units += w == W_STUCK;
        P.one_pass += w == W_ONE_PASS;
        rc = run(d);
    }
    d->t->read_stats.threads = workers;
    d->t->read_stats.windows = P.windows;
    d->t->read_stats.dropped = P.dropped;
    d->t->read_stats.driver_units = P.driver_units;
    d->t->read_stats.one_pass = P.one_pass;
    d->t->read_stats.parse_s = P.t_parse;
    d->t->read_stats.merge_s = P.t_merge;
    if (getenv("TALLY_READ_STATS")) {
        show_progress(d, 1);
        fprintf(stderr,
                "tally: %s: %d threads, %d parts a window, %llu windows, %llu parts dropped, "
                "%llu units read by the driver, %s, %.3f s parsing, %.3f s merging\n",
                d->name, workers, n, (unsigned long long)P.windows, (unsigned long long)P.dropped,
                (unsigned long long)P.driver_units,
                P.one_pass ? "then one pass" : "in parallel to the end", P.t_parse, P.t_merge);
    }
    parts_free(&P);
    return rc;
}

/* The threads a read uses: the trace's (tl_trace_threads), at most 64. */
static int read_threads(const tl_trace *t)
{
    int k = tl_trace_threads(t);
    return k > 64 ? 64 : k;
}

/* Bytes of a part, for a window of n parts (part_count): 2 MB; less for a small file, so that
 * every part has some, and so that a window (n × part) is at most a 32nd of the file or 1 MB;
 * 512 KB at least. A window is read whole before it is parsed, so its size is what the read holds
 * beside the model: 8 MB parts read a 92 MB file no faster and held 0.53x the file at peak with
 * 2 threads (0.38x with 2 MB; one thread 0.29x); at 16 threads 2 MB parts held 0.69x, 512 KB
 * 0.39x, for 8 % more time on 2 cores (256 KB: 0.34x, 28 % more: a window more is a handing
 * over more; docs/PERFORMANCE.md). From 1 GB on, up to 16 parts a window are of 2 MB (2
 * threads: 16 parts). A file under 2 MB is one part (read in one thread). TALLY_READ_PART sets
 * the part (tests cut small traces in many parts). */
/* TALLY_READ_PART: the part's bytes the tests ask for, or 0. */
static long long part_asked(void)
{
    const char *e = getenv("TALLY_READ_PART");
    long long v = e && *e ? strtoll(e, NULL, 10) : 0;
    return v > 0 ? v : 0;
}

#define PART_MIN ((size_t)512 << 10)

/* The most a window holds: a 32nd of the file, or 1 MB (4 MB held a 31 MB trace's read at 0.33x
 * with 2 threads and 0.35x with 16, 1 MB at 0.31x, in the same time; a 92 MB file's in the same
 * time and memory). */
static uint64_t window_most(uint64_t file)
{
    return file / 32 > (1u << 20) ? file / 32 : (1u << 20);
}

static size_t part_size(uint64_t file, int n)
{
    long long v = part_asked();
    if (v > 0)
        return v < 64 ? 64 : (size_t)v;
    if (file < (2u << 20))
        return (size_t)file + 1;
    uint64_t per = file / (uint64_t)n / 2, by_window = window_most(file) / (uint64_t)n;
    if (by_window < per)
        per = by_window;
    return per >= (2u << 20) ? (2u << 20) : per < PART_MIN ? PART_MIN : (size_t)per;
}

/* The parts a window is cut into for this many threads: eight a thread (at most 64), which the
 * threads take in turn (tl_share), the driver among them once it has merged the window before:
 * with a part a thread, the threads waited on the slowest part of every window and on the
 * merge that shared their cores (2 cores were 1.45 busy while a 1 GB trace was read, 1.85 with
 * eight parts a thread; the load took 1.8 -> 1.2 s; docs/PERFORMANCE.md, "Parts shared out").
 * Within a window of at most a 32nd of the file or 1 MB, and so that the window and the two
 * sets of parts held beside the model do not grow with the thread count: each part 512 KB at
 * least, and 1 MB at least where there are more parts than threads (a 92 MB file, whose window
 * is 2.9 MB, in five parts of 575 KB took 10 % longer than in two; 16 threads read a 92 MB file
 * with 8 MB windows and held 0.33x it, 8 threads 0.28x, in the same time on 2 cores). Parts the
 * tests ask for (TALLY_READ_PART) keep eight a thread. */
#define PARTS_A_THREAD  8
#define PART_SHARED_MIN ((size_t)1 << 20)

static int part_count(uint64_t file, int threads)
{
    int n = threads > 64 / PARTS_A_THREAD ? 64 : threads * PARTS_A_THREAD;
    if (part_asked())
        return n;
    uint64_t most = window_most(file) / PART_SHARED_MIN;
    if (most < (uint64_t)threads) /* a part a thread, of 512 KB at least */
        most = (uint64_t)threads < window_most(file) / PART_MIN ? (uint64_t)threads
                                                                : window_most(file) / PART_MIN;
    return (uint64_t)n > most ? (int)most : n;
}

int tl_read_json_mem(tl_trace *t, const char *data, size_t len, const char *name, tl_error *err)
{
    jr r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.err = err;
    r.name = name ? name : "<memory>";
    r.in_mem = 1;
    r.eof = 1;
    /* the lexer relies on a NUL after the data; copy when the caller's buffer has none */
    char *copy = malloc(len + 1);
    if (!copy) {
        tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", r.name);
        return -1;
    }
    memcpy(copy, data, len);
    copy[len] = 0;
    r.buf = copy;
    r.len = len;
    r.cap = len;
    r.flows_at = !t->keep_raw;
    tl_trace_reserve(t, t->nev + len / 128);
    int rc = run(&r);
    if (rc == 0)
        rc = finish(&r);
    if (rc == 0 && t->keep_raw)
        t->raw_kept = 1;
    jr_free(&r);
    free(copy);
    return rc;
}

int tl_read_json(tl_trace *t, const char *path, int progress, tl_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    int rc = tl_read_json_fd(t, fd, path, progress, err);
    close(fd);
    return rc;
}

int tl_read_json_fd(tl_trace *t, int fd, const char *path, int progress, tl_error *err)
{
    jr r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.err = err;
    r.name = path;
    r.progress = progress;
    r.t_start = r.t_last = tl_now_s();
    r.fd = fd;
    unsigned char magic[2] = {0, 0};
    ssize_t m = pread(r.fd, magic, 2, 0);
    off_t size = lseek(r.fd, 0, SEEK_END);
    r.count_lines = lseek(r.fd, 0, SEEK_SET) != 0; /* a pipe: no reading it again on error */
    uint64_t json_size = size > 0 ? (uint64_t)size : 0;
    if (m == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        /* gzip ends with the uncompressed size mod 2^32; traces compress 10-30x */
        unsigned char isize[4];
        if (size >= 18 && pread(r.fd, isize, 4, size - 4) == 4) {
            uint64_t u = (uint64_t)isize[0] | (uint64_t)isize[1] << 8 | (uint64_t)isize[2] << 16 |
                         (uint64_t)isize[3] << 24;
            json_size = u >= json_size ? u : json_size * 32;
        }
        r.gz = tl_inflate_open(r.fd, path, err);
        if (!r.gz)
            return -1;
    } else if (size > 0) {
        r.total_size = (uint64_t)size;
    }
    /* Room for the events up front (see tl_trace_reserve): Kineto writes 250-600 bytes an
     * event; 128 leaves a margin for denser producers. */
    tl_trace_reserve(t, t->nev + json_size / 128);
    r.cap = BLOCK;
    r.buf = text_alloc(r.cap + 1);
    if (!r.buf) {
        tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", path);
        tl_inflate_close(r.gz);
        return -1;
    }
    r.buf[0] = 0;
    t->path = path;
    /* a file read again by offset: not a pipe, not gzip; export keeps the text in one pass */
    r.flows_at = !r.gz && !r.count_lines && !t->keep_raw;
    /* a plain file big enough for two parts is read in parallel (keep_raw: in one pass, its
     * texts are kept in file order as they are read) */
    int workers = r.gz || t->keep_raw ? 1 : read_threads(t);
    int parts = part_count(r.total_size, workers);
    if (workers > parts)
        workers = parts;
    size_t part = part_size(r.total_size, parts);
    int parallel = workers > 1 && r.total_size >= 2 * (uint64_t)part;
    int rc = parallel ? run_parallel(&r, parts, workers, part) : run(&r);
    /* Damaged gzip inflates to garbage for a while before zlib notices: when the parser fails
     * first, the damage a little further on is the error to report. */
    if (rc != 0 && r.gz)
        tl_inflate_skip(r.gz, 16u << 20);
    show_progress(&r, 1);
    if (rc == 0)
        rc = finish(&r);
    if (rc == 0 && t->keep_raw)
        t->raw_kept = 1;
    tl_inflate_close(r.gz);
    jr_free(&r);
    return rc;
}
