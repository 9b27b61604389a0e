/*
 * options.c — the option parser and help printer of every verb (options.h).
 *
 * Everything a verb knows about its options is in its table, so the parsing, the checking of
 * values and the help text are written once, here, and cannot drift apart between verbs.
 */
#include "cli/options.h"
#include "record/env_check.h"
#include "report/table.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const cli_format_words[] = {"text", "csv", "json", NULL};
const char *const cli_unit_words[] = {"auto", "ns", "us", "ms", "s", NULL};
_Static_assert(TL_FMT_TEXT == 0 && TL_FMT_CSV == 1 && TL_FMT_JSON == 2,
               "cli_format_words follow tl_format");
_Static_assert(TL_UNIT_AUTO == 0 && TL_UNIT_NS == 1 && TL_UNIT_US == 2 && TL_UNIT_MS == 3 &&
                   TL_UNIT_S == 4,
               "cli_unit_words follow tl_unit");

#define HELP_NAME "help" /* -h, --help: every verb has it, no table lists it */

static void fail(const cli_command *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(const cli_command *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tally %s: ", c->verb);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* "text, csv or json" */
static void join_words(const char *const *w, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; w[i] && n < cap; i++) {
        const char *sep = i == 0 ? "" : w[i + 1] ? ", " : " or ";
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", sep, w[i]);
    }
}

/* ---- help --------------------------------------------------------------------------------- */

/* The value as usage shows it: "N", or the words "auto|ns|us|ms|s". */
static void value_name(const cli_option *o, char *buf, size_t cap)
{
    buf[0] = 0;
    if (o->kind == CLI_FLAG)
        return;
    if (o->kind != CLI_WORD || !o->words) {
        snprintf(buf, cap, "%s", o->arg ? o->arg : "VALUE");
        return;
    }
    size_t n = 0;
    for (size_t i = 0; o->words[i] && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "|" : "", o->words[i]);
}

/* One word of the usage line, wrapped under the first at 100 columns. */
static void usage_word(FILE *f, int *col, int indent, const char *word)
{
    int n = (int)strlen(word);
    if (*col > indent && *col + 1 + n > 100) {
        fprintf(f, "\n%*s", indent, "");
        *col = indent;
    }
    fprintf(f, " %s", word);
    *col += 1 + n;
}

static void usage_line(const cli_command *c, FILE *f)
{
    int col = fprintf(f, "usage: tally %s", c->verb);
    if (c->operands && !c->program_follows)
        col += fprintf(f, " %s", c->operands);
    int indent = col; /* wrapped lines start under the first option */
    for (size_t i = 0; i < c->noptions; i++) {
        const cli_option *o = &c->options[i];
        char val[128], word[192];
        value_name(o, val, sizeof val);
        if (o->short_name)
            snprintf(word, sizeof word, "[-%c%s%s]", o->short_name, *val ? " " : "", val);
        else
            snprintf(word, sizeof word, "[--%s%s%s]", o->name, *val ? " " : "", val);
        usage_word(f, &col, indent, word);
    }
    if (c->other_usage)
        usage_word(f, &col, indent, c->other_usage);
    if (c->operands && c->program_follows) {
        char word[128];
        snprintf(word, sizeof word, "-- %s", c->operands);
        usage_word(f, &col, indent, word);
    }
    fputc('\n', f);
}

/* "-o, --output OUT" or "    --top N" */
static int left_column(const cli_option *o, char *buf, size_t cap)
{
    const char *arg = o->kind == CLI_FLAG ? "" : o->arg ? o->arg : "VALUE";
    char sh[8] = "    ";
    if (o->short_name)
        snprintf(sh, sizeof sh, "-%c, ", o->short_name);
    return snprintf(buf, cap, "%s--%s%s%s", sh, o->name, *arg ? " " : "", arg);
}

static void option_help(FILE *f, const cli_option *o, int width)
{
    char left[96];
    left_column(o, left, sizeof left);
    fprintf(f, "  %-*s  ", width, left);
    for (const char *p = o->help ? o->help : ""; *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(f, "%.*s\n", (int)n, p);
        p += n;
        if (*p == '\n' && *++p)
            fprintf(f, "  %-*s  ", width, "");
    }
    if (!o->help || !*o->help)
        fputc('\n', f);
}

void cli_help(const cli_command *c, FILE *f)
{
    static const cli_option help = {.name = HELP_NAME, .short_name = 'h', .help = "this help"};
    usage_line(c, f);
    if (c->about)
        fprintf(f, "\n%s\n", c->about);
    int width = 23; /* help from column 27 at least, as examples/llama prints its options */
    char left[96];
    for (size_t i = 0; i < c->noptions; i++) {
        int n = left_column(&c->options[i], left, sizeof left);
        if (n > width)
            width = n;
    }
    fputs("\noptions:\n", f);
    for (size_t i = 0; i < c->noptions; i++)
        option_help(f, &c->options[i], width);
    option_help(f, &help, width);
    if (c->more_help) {
        fputc('\n', f);
        c->more_help(f);
    }
}

/* ---- parsing ------------------------------------------------------------------------------ */

static const cli_option *find_long(const cli_command *c, const char *name, size_t n)
{
    for (size_t i = 0; i < c->noptions; i++)
        if (strlen(c->options[i].name) == n && !strncmp(c->options[i].name, name, n))
            return &c->options[i];
    return NULL;
}

static const cli_option *find_short(const cli_command *c, char letter)
{
    for (size_t i = 0; i < c->noptions; i++)
        if (c->options[i].short_name && c->options[i].short_name == letter)
            return &c->options[i];
    return NULL;
}

/* "unknown option '--sotr'; did you mean '--sort'?" */
static void unknown(const cli_command *c, const char *arg)
{
    char word[128];
    const char *name = arg[1] == '-' ? arg + 2 : arg + 1;
    snprintf(word, sizeof word, "%.*s", (int)strcspn(name, "="), name);
    const char *help = HELP_NAME;
    const char *best =
        tally__nearest_name(word, &c->options[0].name, c->noptions, sizeof c->options[0]);
    const char *const *other = c->other_names ? c->other_names() : NULL;
    size_t nother = 0;
    while (other && other[nother])
        nother++;
    const char *cands[3] = {best,
                            nother ? tally__nearest_name(word, other, nother, sizeof *other) : NULL,
                            tally__nearest_name(word, &help, 1, sizeof help)};
    best = NULL;
    for (int i = 0; i < 3; i++)
        if (cands[i] &&
            (!best || tally__edit_distance(word, cands[i]) < tally__edit_distance(word, best)))
            best = cands[i];
    if (best)
        fail(c, "unknown option '%s'; did you mean '--%s'?", arg, best);
    else
        fail(c, "unknown option '%s'; 'tally %s --help' lists the options", arg, c->verb);
}

/* Check value for o and store it in field. 0, or -1 with the message printed. */
static int store(const cli_command *c, const cli_option *o, const char *value, void *field)
{
    char *end;
    if (!*value) {
        fail(c, "--%s needs a value (%s), got ''", o->name, o->arg ? o->arg : "VALUE");
        return -1;
    }
    switch (o->kind) {
    case CLI_FLAG:
        break;
    case CLI_STRING:
        *(const char **)field = value;
        return 0;
    case CLI_COUNT: {
        errno = 0;
        long long n = strtoll(value, &end, 10);
        if (errno || *end || n < 0) {
            fail(c, "--%s expects a count >= 0, got '%s'", o->name, value);
            return -1;
        }
        if (n > CLI_COUNT_MAX) {
            fail(c, "--%s expects a count >= 0, at most %d, got '%s'", o->name, CLI_COUNT_MAX,
                 value);
            return -1;
        }
        *(int *)field = (int)n;
        return 0;
    }
    case CLI_MICROS: {
        errno = 0;
        double us = strtod(value, &end);
        int64_t ns = 0;
        if (!errno && !*end && !isnan(us) && us > 0 && us <= 1e12)
            ns = (int64_t)llround(us * 1e3);
        if (ns <= 0) {
            fail(c, "--%s expects microseconds > 0, got '%s'", o->name, value);
            return -1;
        }
        *(int64_t *)field = ns;
        return 0;
    }
    case CLI_WORD: {
        for (int i = 0; o->words && o->words[i]; i++)
            if (!strcasecmp(value, o->words[i])) {
                *(int *)field = i;
                return 0;
            }
        char words[256];
        join_words(o->words, words, sizeof words);
        fail(c, "--%s expects %s, got '%s'", o->name, words, value);
        return -1;
    }
    case CLI_PARSE:
        if (o->parse(value, field) == 0)
            return 0;
        fail(c, "--%s expects %s, got '%s'", o->name, o->expects, value);
        return -1;
    }
    return 0;
}

/* An argument that is an option (or "--"), not a value: "-" alone and "-3" are values. */
static int looks_like_option(const char *a)
{
    return a[0] == '-' && a[1] == '-';
}

/* How many operands c takes: the words of c->operands that are not in brackets. */
static int operand_count(const cli_command *c)
{
    int n = 0;
    for (const char *p = c->operands; p && *(p += strspn(p, " "));) {
        n += *p != '[';
        p += strcspn(p, " ");
    }
    return n;
}

int cli_parse(const cli_command *c, int argc, char **argv, void *state)
{
    char *base = state;
    int nops = 0, options_done = 0, want = operand_count(c);
    int cap = c->operands_max > want ? c->operands_max : want;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (options_done || a[0] != '-' || a[1] == 0) {
            if (c->program_follows) {
                *(char ***)(base + c->operands_off) = argv + i;
                nops = argc - i;
                break;
            }
            if (nops >= cap) {
                if (c->what)
                    fail(c, "unexpected argument '%s' (expected %s)", a, c->what);
                else
                    fail(c, "unexpected argument '%s': tally %s takes options only", a, c->verb);
                return 2;
            }
            ((const char **)(base + c->operands_off))[nops++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            options_done = 1;
            continue;
        }
        if (!strcmp(a, "--" HELP_NAME) || !strcmp(a, "-h")) {
            cli_help(c, stdout);
            return 0;
        }
        const cli_option *o;
        const char *value = NULL;
        if (a[1] == '-') {
            size_t n = strcspn(a + 2, "=");
            o = find_long(c, a + 2, n);
            if (a[2 + n] == '=')
                value = a + 3 + n;
        } else {
            o = find_short(c, a[1]);
            if (o && a[2]) {
                if (o->kind == CLI_FLAG)
                    o = NULL; /* -qx: flags are not bundled */
                else
                    value = a + 2;
            }
        }
        if (!o && c->other) {
            char msg[256];
            int r = c->other(state, argc, argv, &i, msg, sizeof msg);
            if (r < 0) {
                fail(c, "%s", msg);
                return 2;
            }
            if (r > 0)
                continue;
        }
        if (!o) {
            unknown(c, a);
            return 2;
        }
        if (o->kind == CLI_FLAG) {
            if (value) {
                fail(c, "--%s takes no value, got '%s'", o->name, value);
                return 2;
            }
            *(int *)(base + o->off) = 1;
            continue;
        }
        if (!value) {
            if (i + 1 >= argc || looks_like_option(argv[i + 1])) {
                fail(c, "--%s needs a value (%s)", o->name, o->arg ? o->arg : "VALUE");
                return 2;
            }
            value = argv[++i];
        }
        if (store(c, o, value, base + o->off) != 0)
            return 2;
    }
    if (nops < want) {
        fail(c, "expected %s%s", c->what, nops ? ", got one" : "");
        return 2;
    }
    return CLI_CONTINUE;
}

int cli_device_id(const char *v, int64_t *out)
{
    static const char *const accel[] = {"gpu", "mtia", "cuda"}; /* (tl_accel_name's names) */
    for (size_t k = 0; k < sizeof accel / sizeof *accel; k++)
        if (!strncasecmp(v, accel[k], strlen(accel[k]))) {
            v += strlen(accel[k]);
            break;
        }
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || n < 0 || n > INT32_MAX || !isdigit((unsigned char)*v))
        return -1;
    *out = n;
    return 0;
}
