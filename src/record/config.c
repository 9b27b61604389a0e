/*
 * config.c — versions, error names, the TALLY_* environment variables and the schedule.
 *
 * The environment wins over the config struct so that a program's settings change without
 * recompiling. A malformed value gets one line on stderr naming the variable and what was
 * expected, and tally_start fails with TALLY_ECONFIG.
 *
 * The schedule follows torch.profiler / Paddle (reference/report-semantics.md §1.2, §4.1):
 *   step < skip_first: closed; s = step - skip_first; period = wait + warmup + active;
 *   past `repeat` cycles: closed; m = s % period: m < wait closed, < wait + warmup ready
 *   (armed, not recorded), < period - 1 record, == period - 1 record-and-return (the window
 *   ends with this step).
 */
#include "record/internal.h"
#include "record/schedule.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TALLY_API unsigned tally_version(void)
{
    return TALLY_VERSION_HEX;
}

#define STR2(x) #x
#define STR(x)  STR2(x)

TALLY_API const char *tally_version_string(void)
{
    return STR(TALLY_VERSION_MAJOR) "." STR(TALLY_VERSION_MINOR) "." STR(TALLY_VERSION_PATCH);
}

TALLY_API const char *tally_strerror(int code)
{
    switch (code) {
    case 0:
        return "success";
#define XX(name, value, text)                                                                      \
    case value:                                                                                    \
        return text;
        TALLY_ERRNO_MAP(XX)
#undef XX
    default:
        return "unknown error";
    }
}

TALLY_API const char *tally_err_name(int code)
{
    switch (code) {
    case 0:
        return "TALLY_OK";
#define XX(name, value, text)                                                                      \
    case value:                                                                                    \
        return "TALLY_" #name;
        TALLY_ERRNO_MAP(XX)
#undef XX
    default:
        return "TALLY_EUNKNOWN";
    }
}

/* ---- schedule -------------------------------------------------------------------------------- */

int tally__sched_valid(const tally_config *c)
{
    if (c->skip_first < 0 || c->wait < 0 || c->warmup < 0 || c->active < 0 || c->repeat < 0)
        return 0;
    if (c->active == 0 && (c->skip_first || c->wait || c->warmup || c->repeat))
        return 0;
    return 1;
}

int tally__sched_state(const tally_config *c, int64_t step)
{
    if (c->active <= 0)
        return TALLY__ST_RECORD; /* no schedule: record everything, the window never ends */
    if (step < c->skip_first)
        return TALLY__ST_CLOSED;
    int64_t s = step - c->skip_first;
    int64_t period = (int64_t)c->wait + c->warmup + c->active;
    if (c->repeat > 0 && s / period >= c->repeat)
        return TALLY__ST_CLOSED;
    int64_t m = s % period;
    if (m < c->wait)
        return TALLY__ST_CLOSED;
    if (m < c->wait + c->warmup)
        return TALLY__ST_READY;
    if (m < period - 1)
        return TALLY__ST_RECORD;
    return TALLY__ST_RECORD_AND_RETURN;
}

TALLY_API void tally_schedule_range(tally_config *cfg, int start, int end)
{
    if (!cfg)
        return;
    if (start < 0)
        start = 0;
    cfg->skip_first = 0;
    cfg->repeat = 1;
    if (end <= start) { /* invalid: tally_start refuses it */
        cfg->wait = cfg->warmup = 0;
        cfg->active = -1;
        return;
    }
    if (start >= 1) {
        cfg->wait = start - 1;
        cfg->warmup = 1;
        cfg->active = end - start;
    } else {
        cfg->wait = 0;
        cfg->warmup = 0;
        cfg->active = end;
    }
}

/* ---- parsing helpers ------------------------------------------------------------------------- */

static int bad(const char *var, const char *val, const char *expected)
{
    fprintf(stderr, "tally: %s=\"%s\": expected %s\n", var, val, expected);
    return TALLY_ECONFIG;
}

/* "123", "64k", "256M", "1G" (binary units). */
int tally__parse_size(const char *s, size_t *out)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || s[0] == '-')
        return -1;
    unsigned long long mul = 1;
    switch (*end) {
    case 0:
        break;
    case 'k':
    case 'K':
        mul = 1ull << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mul = 1ull << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mul = 1ull << 30;
        end++;
        break;
    default:
        return -1;
    }
    if (*end == 'i' || *end == 'B') /* "Mi", "MB", "MiB" */
        end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
    if (*end)
        return -1;
    if (v > (~0ull) / mul)
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
        *out = 1;
    else if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") ||
             !strcasecmp(s, "off") || !*s)
        *out = 0;
    else
        return -1;
    return 0;
}

static int parse_int(const char *s, size_t n, int *out)
{
    if (n == 0 || n > 10)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > 1000000000L)
        return -1;
    *out = (int)v;
    return 0;
}

/* "tally,json.gz,summary" */
int tally__parse_write(const char *s, unsigned *out)
{
    unsigned w = TALLY_WRITE_TALLY;
    const char *p = s;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 5 && !strncmp(p, "tally", 5))
            w |= TALLY_WRITE_TALLY;
        else if (n == 4 && !strncmp(p, "json", 4))
            w |= TALLY_WRITE_JSON;
        else if (n == 7 && !strncmp(p, "json.gz", 7))
            w |= TALLY_WRITE_JSON_GZ;
        else if (n == 7 && !strncmp(p, "summary", 7))
            w |= TALLY_WRITE_SUMMARY;
        else if (n == 4 && !strncmp(p, "none", 4))
            ;
        else
            return -1;
        p += n;
        if (*p == ',')
            p++;
    }
    *out = w;
    return 0;
}

/* "skip_first=1,wait=1,warmup=1,active=3,repeat=2" (closed/ready/record too) or "3:10". */
int tally__parse_schedule(const char *s, tally_config *c)
{
    const char *colon = strchr(s, ':');
    if (colon) {
        int a, b;
        if (parse_int(s, (size_t)(colon - s), &a) || parse_int(colon + 1, strlen(colon + 1), &b) ||
            b <= a)
            return -1;
        tally_schedule_range(c, a, b);
        return 0;
    }
    tally_config t = *c;
    t.skip_first = t.wait = t.warmup = t.active = t.repeat = 0;
    const char *p = s;
    if (!*p)
        return -1;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (!eq)
            return -1;
        size_t kn = (size_t)(eq - p);
        int v;
        if (parse_int(eq + 1, n - kn - 1, &v))
            return -1;
#define KEY(k) (kn == sizeof(k) - 1 && !strncmp(p, k, kn))
        if (KEY("skip_first"))
            t.skip_first = v;
        else if (KEY("wait") || KEY("closed"))
            t.wait = v;
        else if (KEY("warmup") || KEY("ready"))
            t.warmup = v;
        else if (KEY("active") || KEY("record"))
            t.active = v;
        else if (KEY("repeat"))
            t.repeat = v;
        else
            return -1;
#undef KEY
        p += n;
        if (*p == ',')
            p++;
    }
    if (!tally__sched_valid(&t) || t.active == 0)
        return -1;
    *c = t;
    return 0;
}

TALLY_API int tally_config_from_env(tally_config *cfg)
{
    if (!cfg)
        return TALLY_EINVAL;
    const char *v;
    if (!cfg->output_dir)
        cfg->output_dir = ".";
    if (!cfg->name)
        cfg->name = "tally-{host}-{pid}";
    if (!cfg->write)
        cfg->write = TALLY_WRITE_TALLY | TALLY_WRITE_SUMMARY;
    if (!cfg->memory_cap)
        cfg->memory_cap = (size_t)256 << 20;
    if (!cfg->buffer_size)
        cfg->buffer_size = (size_t)1 << 20;
    if (!cfg->samples_unit)
        cfg->samples_unit = "samples";
    if (!cfg->flush_ms)
        cfg->flush_ms = 50;
    if (cfg->flush_ms < 1 || cfg->flush_ms > 60000)
        return TALLY_EINVAL;

    if ((v = getenv("TALLY_OUTPUT_DIR")) && *v)
        cfg->output_dir = v;
    if ((v = getenv("TALLY_NAME")) && *v) {
        if (strchr(v, '/'))
            return bad("TALLY_NAME", v, "a file name pattern without '/'");
        cfg->name = v;
    }
    if ((v = getenv("TALLY_WRITE"))) {
        unsigned w;
        if (tally__parse_write(v, &w))
            return bad("TALLY_WRITE", v, "a comma-separated list of tally, json, json.gz, summary");
        cfg->write = w;
    }
    if ((v = getenv("TALLY_SCHEDULE")) && *v) {
        if (tally__parse_schedule(v, cfg))
            return bad("TALLY_SCHEDULE", v,
                       "skip_first=N,wait=N,warmup=N,active=N,repeat=N (active > 0) or START:END");
    }
    if ((v = getenv("TALLY_MEMORY_CAP"))) {
        size_t n;
        if (tally__parse_size(v, &n) || n < 4096)
            return bad("TALLY_MEMORY_CAP", v, "a size of at least 4k, like 256M (k, M, G)");
        cfg->memory_cap = n;
    }
    if ((v = getenv("TALLY_BUFFER_SIZE"))) {
        size_t n;
        if (tally__parse_size(v, &n) || n < 4096 || n > ((size_t)1 << 30))
            return bad("TALLY_BUFFER_SIZE", v, "a size between 4k and 1G, like 1M");
        cfg->buffer_size = n;
    }
    if ((v = getenv("TALLY_TIMER_ONLY"))) {
        if (parse_bool(v, &cfg->timer_only))
            return bad("TALLY_TIMER_ONLY", v, "0 or 1");
    }
    if ((v = getenv("TALLY_QUIET"))) {
        if (parse_bool(v, &cfg->quiet))
            return bad("TALLY_QUIET", v, "0 or 1");
    }
    if ((v = getenv("TALLY_FLUSH_MS"))) {
        int ms;
        if (parse_int(v, strlen(v), &ms) || ms < 1 || ms > 60000)
            return bad("TALLY_FLUSH_MS", v, "milliseconds between 1 and 60000, like 50");
        cfg->flush_ms = ms;
    }
    if ((v = getenv("TALLY_SAMPLES_UNIT"))) {
        if (!*v || strlen(v) >= 60)
            return bad("TALLY_SAMPLES_UNIT", v, "a unit name like samples or tokens");
        cfg->samples_unit = v;
    }
    return 0;
}
