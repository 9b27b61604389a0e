/*
 * env_check.c — every TALLY_* setting in one table, with the check of its value.
 *
 * The session's settings are parsed and applied by tally_config_from_env (config.c); the
 * collectors, the clock and the trace-ready handler each read theirs where they are used
 * (src/collect, clock.c, trace_ready.c). A misspelt name is read by no one and silently does
 * nothing, so the names are listed here, once, and `tally run` refuses an unknown one before it
 * starts a program. Adding a setting is adding a line.
 */
#include "record/env_check.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/* Checks of a value: 0 when valid, non-zero when not. */
static int not_01(const char *v)
{
    return strcmp(v, "0") != 0 && strcmp(v, "1") != 0 && *v;
}

static int not_pid(const char *v)
{
    char *end;
    long long pid = strtoll(v, &end, 10);
    return !isdigit((unsigned char)*v) || *end || pid < 1;
}

static int not_program(const char *v)
{
    struct stat st;
    return !(stat(v, &st) == 0 && S_ISREG(st.st_mode) && access(v, X_OK) == 0);
}

/* The CUPTI activity kinds of TALLY_CUPTI_KINDS (src/collect/cupti.c). */
static int not_kinds(const char *v)
{
    static const char *const kinds[] = {"kernel", "memcpy", "memset", "runtime",
                                        "driver", "memory", "sync",   "overhead"};
    for (const char *p = v; *p;) {
        size_t n = strcspn(p, ",");
        int ok = 0;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            ok |= strlen(kinds[i]) == n && !strncmp(p, kinds[i], n);
        if (!ok)
            return -1;
        p += n + (p[n] == ',');
    }
    return 0;
}

static const struct setting {
    const char *name;
    int (*bad)(const char *value); /* NULL: any value (or: tally_config_from_env checks it) */
    const char *expected;
} settings[] = {
    /* the session (config.c, tally_config_from_env checks and applies them) */
    {"TALLY_OUTPUT_DIR", NULL, NULL},
    {"TALLY_NAME", NULL, NULL},
    {"TALLY_WRITE", NULL, NULL},
    {"TALLY_SCHEDULE", NULL, NULL},
    {"TALLY_MEMORY_CAP", NULL, NULL},
    {"TALLY_BUFFER_SIZE", NULL, NULL},
    {"TALLY_TIMER_ONLY", NULL, NULL},
    {"TALLY_QUIET", NULL, NULL},
    {"TALLY_SAMPLES_UNIT", NULL, NULL},
    {"TALLY_FLUSH_MS", NULL, NULL},
    /* the clock and the trace-ready handler */
    {"TALLY_NO_TSC", NULL, NULL},
    {"TALLY_BIN", not_program, "the path of the tally command (an executable file)"},
    /* the collectors (src/collect) */
    {"TALLY_GPU", not_01, "0 or 1"},
    {"TALLY_STEP_RANGE", NULL, NULL},
    {"TALLY_RANK_DIRS", not_01, "0 or 1"},
    {"TALLY_CUPTI_PATH", NULL, NULL},
    {"TALLY_CUPTI_ALL_API", not_01, "0 or 1"},
    {"TALLY_CUPTI_DEBUG", NULL, NULL},
    {"TALLY_CUPTI_KINDS", not_kinds,
     "a comma-separated list of kernel, memcpy, memset, runtime, driver, memory, sync, overhead"},
    {"TALLY_NVTX_OWNER_PID", not_pid, "a process id (set by libtally itself)"},
};
#define NSETTINGS (sizeof settings / sizeof settings[0])

/* Names that are not settings but that tally's own tests put in the environment of programs
 * they run (TALLY_TEST_*): accepted, read by no one. */
static int not_a_setting(const char *name, size_t n)
{
    return n > 11 && !strncmp(name, "TALLY_TEST_", 11);
}

size_t tally__env_count(void)
{
    return NSETTINGS;
}

const char *tally__env_name(size_t i)
{
    return i < NSETTINGS ? settings[i].name : NULL;
}

static int check(const char *name, size_t n, const char *value, char *msg, size_t cap)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        const struct setting *s = &settings[i];
        if (strlen(s->name) != n || strncmp(s->name, name, n) != 0)
            continue;
        if (s->bad && s->bad(value)) {
            snprintf(msg, cap, "%s=\"%s\": expected %s", s->name, value, s->expected);
            return -1;
        }
        return 0;
    }
    if (not_a_setting(name, n))
        return 0;
    char word[128];
    snprintf(word, sizeof word, "%.*s", (int)n, name);
    const char *near = tally__nearest_name(word, &settings[0].name, NSETTINGS, sizeof settings[0]);
    if (near)
        snprintf(msg, cap, "unknown setting %s; did you mean %s?", word, near);
    else
        snprintf(msg, cap, "unknown setting %s (docs/run.md lists the TALLY_* settings)", word);
    return -1;
}

int tally__env_check_one(const char *name, const char *value, char *msg, size_t cap)
{
    return check(name, strlen(name), value, msg, cap);
}

int tally__env_check(char *msg, size_t cap)
{
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || strncmp(*e, "TALLY_", 6) != 0)
            continue;
        if (check(*e, (size_t)(eq - *e), eq + 1, msg, cap) != 0)
            return -1;
    }
    return 0;
}

int tally__edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return 99;
    int d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int x = d[i - 1][j] + 1, y = d[i][j - 1] + 1;
            d[i][j] = c < x ? (c < y ? c : y) : (x < y ? x : y);
        }
    return d[la][lb];
}

const char *tally__nearest_name(const char *word, const char *const *first, size_t n, size_t stride)
{
    const char *best = NULL;
    int bestd = 3; /* suggest within an edit distance of 2 */
    int len = (int)strlen(word);
    for (size_t i = 0; i < n; i++) {
        const char *name = *(const char *const *)((const char *)first + i * stride);
        if (!name)
            continue;
        int d = tally__edit_distance(word, name);
        if (d < bestd && d < len) {
            bestd = d;
            best = name;
        }
    }
    return best;
}
