/*
 * testlib.h — the smallest test harness that does the job: checks that count instead of abort,
 * a one-line report per failure with file and line, and a non-zero exit when anything failed.
 *
 *   TEST(name) { CHECK(x == 1); CHECK_NEAR(a, b, tol); CHECK_EQ_INT(a, b); CHECK_STR(a, b); }
 *   int main(void) { RUN(name); return test_summary(); }
 */
#ifndef TALLY_TESTLIB_H
#define TALLY_TESTLIB_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern int test_failures;
extern int test_checks;
extern int test_skipped;
extern const char *test_current;

#define TEST(name) static void name(void)
#define RUN(name)                                                                                  \
    do {                                                                                           \
        test_current = #name;                                                                      \
        int before_ = test_failures, skipped_ = test_skipped;                                      \
        name();                                                                                    \
        fprintf(stderr, "%s %s\n",                                                                 \
                test_failures != before_   ? "FAIL"                                                \
                : test_skipped != skipped_ ? "skip"                                                \
                                           : "ok  ",                                               \
                #name);                                                                            \
    } while (0)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        test_checks++;                                                                             \
        if (!(cond)) {                                                                             \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__, __LINE__, test_current,     \
                    #cond);                                                                        \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        test_checks++;                                                                             \
        if (a_ != b_) {                                                                            \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: %s: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__,    \
                    test_current, #a, a_, #b, b_);                                                 \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol);                             \
        test_checks++;                                                                             \
        if (!(a_ - b_ <= t_ && b_ - a_ <= t_)) {                                                   \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: %s: %s = %g, expected %g +- %g\n", __FILE__, __LINE__,         \
                    test_current, #a, a_, b_, t_);                                                 \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        test_checks++;                                                                             \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                                   \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: %s: %s = \"%s\", expected \"%s\"\n", __FILE__, __LINE__,       \
                    test_current, #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)");                     \
        }                                                                                          \
    } while (0)

/* Leave the current test because what it needs is missing (a driver, a library): it counts as
 * skipped, and the program then exits TEST_SKIPPED unless a check failed, so that ctest shows
 * a skip, never a pass. */
#define TEST_SKIP(...)                                                                             \
    do {                                                                                           \
        test_skipped++;                                                                            \
        fprintf(stderr, "skipped: " __VA_ARGS__);                                                  \
        fputc('\n', stderr);                                                                       \
        return;                                                                                    \
    } while (0)

/* Prints "N passed, N failed" and returns the exit status: 1 when a check failed, else
 * TEST_SKIPPED when a test was skipped, else 0. */
int test_summary(void);

/* Exit status a test returns when what it needs is missing; ctest shows it as skipped. */
#define TEST_SKIPPED 77

/* Non-zero when the shared real traces (TALLY_SHARED_DIR/traces) can be read; otherwise says
 * "skipped" on stderr once. */
int test_have_shared_traces(void);

/* Read a whole file (gunzipped when it ends in .gz) into malloc'd memory; NULL on error. */
char *test_read_file(const char *path, size_t *len);

/* A fixed pseudo-random sequence (xorshift64): the same numbers in every run. */
static inline uint64_t test_rand(void)
{
    static uint64_t state = 88172645463325252ull;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

#endif
