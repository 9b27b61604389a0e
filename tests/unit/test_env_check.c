/*
 * test_env_check.c — the one list of TALLY_* settings (src/record/env_check.c): an unknown name
 * is refused with the nearest known one, a bad value of a setting the list checks is refused in
 * one line, the names tally's own tests put in the environment pass, and every TALLY_* name
 * that the library reads or sets (getenv / setenv in src/record and src/collect) is on the
 * list, so that the list cannot fall behind the code.
 */
#include "record/env_check.h"
#include "testlib.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* Run the whole-environment check with only the given TALLY_* variable set. */
static char g_msg[512];
static int check_with(const char *name, const char *value)
{
    /* the environment of the test run may hold TALLY_* variables of its own */
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++)
            if (!strncmp(*e, "TALLY_", 6)) {
                char n[128];
                snprintf(n, sizeof n, "%.*s", (int)strcspn(*e, "="), *e);
                unsetenv(n);
                again = 1;
                break;
            }
    }
    if (name)
        setenv(name, value, 1);
    g_msg[0] = 0;
    int rc = tally__env_check(g_msg, sizeof g_msg);
    if (name)
        unsetenv(name);
    return rc;
}

TEST(an_unknown_name_gets_the_nearest)
{
    CHECK_EQ_INT(check_with("TALLY_SCHEDUEL", "3:5"), -1);
    CHECK_STR(g_msg, "unknown setting TALLY_SCHEDUEL; did you mean TALLY_SCHEDULE?");
    CHECK_EQ_INT(check_with("TALLY_FOO", "1"), -1);
    CHECK(strncmp(g_msg, "unknown setting TALLY_FOO", 25) == 0);
    CHECK(strchr(g_msg, '\n') == NULL);
}

TEST(bad_values_are_refused)
{
    CHECK_EQ_INT(check_with("TALLY_GPU", "2"), -1);
    CHECK_STR(g_msg, "TALLY_GPU=\"2\": expected 0 or 1");
    CHECK_EQ_INT(check_with("TALLY_CUPTI_KINDS", "kernel,bogus"), -1);
    CHECK(strncmp(g_msg, "TALLY_CUPTI_KINDS=\"kernel,bogus\": expected", 41) == 0);
    CHECK_EQ_INT(check_with("TALLY_BIN", "/nonexistent/tally"), -1);
    CHECK_EQ_INT(check_with("TALLY_NVTX_OWNER_PID", "x"), -1);
}

TEST(good_values_pass)
{
    CHECK_EQ_INT(check_with(NULL, NULL), 0);
    CHECK_EQ_INT(check_with("TALLY_GPU", "1"), 0);
    CHECK_EQ_INT(check_with("TALLY_CUPTI_KINDS", "kernel,memcpy,sync"), 0);
    CHECK_EQ_INT(check_with("TALLY_STEP_RANGE", "train_step"), 0);
    /* the session's settings are tally_config_from_env's to check */
    CHECK_EQ_INT(check_with("TALLY_SCHEDULE", "anything"), 0);
    /* what tally's own tests put in the environment */
    CHECK_EQ_INT(check_with("TALLY_TEST_FULL_AFTER", "4000000"), 0);
    /* ... and nothing else: the harness's library path is LIBTALLY, not a TALLY_ name */
    CHECK_EQ_INT(check_with("TALLY_LIB", "/x/libtally.so"), -1);
}

static int known(const char *name)
{
    for (size_t i = 0; i < tally__env_count(); i++)
        if (!strcmp(tally__env_name(i), name))
            return 1;
    return 0;
}

/* Every "TALLY_..." right after getenv( or setenv( in the files matching pattern. */
static int scan(const char *pattern)
{
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0)
        return 0;
    int found = 0;
    static char text[1 << 20];
    for (size_t k = 0; k < g.gl_pathc; k++) {
        FILE *f = fopen(g.gl_pathv[k], "r");
        size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
        if (f)
            fclose(f);
        text[len] = 0;
        for (const char *p = text; (p = strstr(p, "env(\"TALLY_")) != NULL; p++) {
            if (p < text + 3 || (strncmp(p - 3, "get", 3) != 0 && strncmp(p - 3, "set", 3) != 0))
                continue;
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(p + 5, "\""), p + 5);
            found++;
            if (!known(name)) {
                test_failures++;
                fprintf(stderr, "%s: %s is read or set but not in src/record/env_check.c\n",
                        g.gl_pathv[k], name);
            }
        }
    }
    globfree(&g);
    return found;
}

TEST(every_name_the_library_reads_is_listed)
{
    int found = scan(TALLY_SOURCE_DIR "/src/record/*.c") +
                scan(TALLY_SOURCE_DIR "/src/collect/*.c") + scan(TALLY_SOURCE_DIR "/src/cli/*.c");
    CHECK(found >= 15);
}

int main(void)
{
    RUN(an_unknown_name_gets_the_nearest);
    RUN(bad_values_are_refused);
    RUN(good_values_pass);
    RUN(every_name_the_library_reads_is_listed);
    return test_summary();
}
