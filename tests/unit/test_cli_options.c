/*
 * test_cli_options.c — the one option parser of the command line (src/cli/options.c), on a
 * table made for the test: every accepted form gives the same values, each kind checks its
 * value once with a one-line error, operands are counted, an unknown option gets the nearest
 * one suggested, and --help is generated from the table.
 */
#include "cli/options.h"
#include "record/env_check.h"
#include "testlib.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct state {
    const char *files[2];
    const char *out;
    const char *sort;
    int asc;
    int top;
    int64_t wait_ns;
    int fmt;
    unsigned custom;
};
#define CLI_STATE struct state

static int parse_even(const char *value, void *field)
{
    char *end;
    long v = strtol(value, &end, 10);
    if (*end || v % 2)
        return -1;
    *(unsigned *)field = (unsigned)v;
    return 0;
}

static const cli_option options[] = {
    CLI_OPTION("output", 'o', CLI_STRING, out, "OUT", "write to OUT"),
    CLI_OPTION("sort", 0, CLI_STRING, sort, "KEY", "sort by KEY\nsecond line of help"),
    CLI_OPTION("asc", 0, CLI_FLAG, asc, NULL, "ascending"),
    CLI_OPTION("top", 0, CLI_COUNT, top, "N", "first N rows"),
    CLI_OPTION("wait-us", 0, CLI_MICROS, wait_ns, "X", "a wait in microseconds"),
    CLI_WORDS("format", fmt, "FMT", cli_format_words, "text, csv or json"),
    CLI_PARSED("even", custom, "E", parse_even, "an even number", "an even number"),
};

static const cli_command two_files = {
    .verb = "test",
    .operands = "A B",
    .what = "two files",
    .operands_off = offsetof(struct state, files),
    .about = "A command made for the test.",
    CLI_TABLE,
};

static const cli_command no_operands = {
    .verb = "solo",
    .about = "A command that takes no operand.",
    CLI_TABLE,
};

/* cli_parse on the words of line (split at spaces) with stderr caught: its exit status (or
 * CLI_CONTINUE), the state, and what it printed on stderr. */
static char g_err[1024];
static int parse_as(const cli_command *c, const char *line, struct state *st)
{
    static char buf[512];
    char *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "test %s", line);
    for (char *p = strtok(buf, " "); p && argc < 31; p = strtok(NULL, " "))
        argv[argc++] = p;
    argv[argc] = NULL;
    memset(st, 0, sizeof *st);
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    int rc = cli_parse(c, argc, argv, st);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(g_err, 1, sizeof g_err - 1, tmp);
    g_err[n] = 0;
    fclose(tmp);
    return rc;
}

static int parse(const char *line, struct state *st)
{
    return parse_as(&two_files, line, st);
}

/* Each command line must be a usage error: status 2 and one line on stderr, this one when the
 * table gives it (without its newline). */
static const struct {
    const char *args, *line;
} usage_errors[] = {
    {"a b --top x", "tally test: --top expects a count >= 0, got 'x'"},
    {"a b --top=-1", "tally test: --top expects a count >= 0, got '-1'"},
    {"a b --top 1000000001", NULL},
    {"a b --wait-us 0", "tally test: --wait-us expects microseconds > 0, got '0'"},
    {"a b --wait-us -3", NULL},
    {"a b --wait-us nan", NULL},
    {"a b --format xml", "tally test: --format expects text, csv or json, got 'xml'"},
    {"a b --even 3", "tally test: --even expects an even number, got '3'"},
    {"a b --asc=1", "tally test: --asc takes no value, got '1'"},
    {"a b --sort=", NULL},
    /* a missing value is not taken from the next option */
    {"a b --sort", "tally test: --sort needs a value (KEY)"},
    {"a b --sort --asc", "tally test: --sort needs a value (KEY)"},
    /* operands */
    {"a", "tally test: expected two files, got one"},
    {"a b c", "tally test: unexpected argument 'c' (expected two files)"},
    /* did you mean */
    {"a b --sotr x", "tally test: unknown option '--sotr'; did you mean '--sort'?"},
    {"a b --fromat=csv", "tally test: unknown option '--fromat=csv'; did you mean '--format'?"},
    {"a b --hepl", "tally test: unknown option '--hepl'; did you mean '--help'?"},
    {"a b --bogus", "tally test: unknown option '--bogus'; 'tally test --help' lists the options"},
    {"a b -x", NULL},
};

TEST(usage_errors_are_one_line_and_status_2)
{
    for (size_t i = 0; i < sizeof usage_errors / sizeof usage_errors[0]; i++) {
        struct state st;
        CHECK_EQ_INT(parse(usage_errors[i].args, &st), 2);
        const char *nl = strchr(g_err, '\n'), *want = usage_errors[i].line;
        CHECK(nl && !nl[1]);
        if (nl && want &&
            (strlen(want) != (size_t)(nl - g_err) || strncmp(g_err, want, strlen(want)))) {
            test_failures++;
            fprintf(stderr, "'%s': got %s", usage_errors[i].args, g_err);
        }
    }
}

/* A verb that takes no operand (tally demo) names none it expects ("(null)" before). */
TEST(an_operand_to_a_verb_without_any)
{
    struct state st;
    CHECK_EQ_INT(parse_as(&no_operands, "foo", &st), 2);
    CHECK_STR(g_err, "tally solo: unexpected argument 'foo': tally solo takes options only\n");
    CHECK_EQ_INT(parse_as(&no_operands, "--top 3", &st), CLI_CONTINUE);
}

TEST(forms_of_a_value_are_equivalent)
{
    const char *forms[] = {"a b --top 7 -o x", "a b --top=7 --output=x", "--top 7 a -ox b",
                           "a --output x b --top 7", "-o x --top=7 -- a b"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        struct state st;
        CHECK_EQ_INT(parse(forms[i], &st), CLI_CONTINUE);
        CHECK_EQ_INT(st.top, 7);
        CHECK_STR(st.out, "x");
        CHECK_STR(st.files[0], "a");
        CHECK_STR(st.files[1], "b");
        CHECK_STR(g_err, "");
    }
}

TEST(the_last_of_a_repeated_option_wins)
{
    struct state st;
    CHECK_EQ_INT(parse("a b --top 3 --top 5 --sort x --sort=y", &st), CLI_CONTINUE);
    CHECK_EQ_INT(st.top, 5);
    CHECK_STR(st.sort, "y");
}

TEST(kinds_store_their_values)
{
    struct state st;
    CHECK_EQ_INT(parse("a b --asc --wait-us 1.5 --format JSON --even 4", &st), CLI_CONTINUE);
    CHECK_EQ_INT(st.asc, 1);
    CHECK_EQ_INT(st.wait_ns, 1500);
    CHECK_EQ_INT(st.fmt, 2);
    CHECK_EQ_INT(st.custom, 4);
    CHECK_EQ_INT(parse("a b --top 0 --top 1000000000", &st), CLI_CONTINUE);
    CHECK_EQ_INT(st.top, 1000000000);
}

TEST(dashes_alone_and_negative_numbers_are_values)
{
    struct state st;
    CHECK_EQ_INT(parse("a b -o -", &st), CLI_CONTINUE);
    CHECK_STR(st.out, "-");
    CHECK_EQ_INT(parse("a -- --b", &st), CLI_CONTINUE);
    CHECK_STR(st.files[1], "--b");
}

TEST(help_is_generated_from_the_table)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cli_help(&two_files, f);
    fclose(f);
    const char *usage = "usage: tally test A B [-o OUT] [--sort KEY] [--asc] [--top N]";
    CHECK(strncmp(text, usage, strlen(usage)) == 0);
    CHECK(strstr(text, "[--format text|csv|json]") != NULL);
    /* every option on a line of its own, the help text in one column */
    const char *list = strstr(text, "\noptions:\n");
    CHECK(list != NULL);
    if (!list)
        return;
    int col = -1;
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "--%s", options[i].name);
        const char *at = strstr(list, want);
        CHECK(at != NULL);
        if (!at)
            continue;
        const char *help = strstr(at, options[i].help[0] == 's' ? "sort by" : options[i].help);
        const char *bol = at;
        while (bol > list && bol[-1] != '\n')
            bol--;
        CHECK(help != NULL && strchr(at, '\n') > help);
        if (col < 0 && help)
            col = (int)(help - bol);
        CHECK(help && (int)(help - bol) == col);
    }
    CHECK(strstr(list, "  -h, --help ") != NULL);
    /* a second line of help starts in the same column */
    const char *second = strstr(text, "second line of help");
    CHECK(second && second[-col - 1] == '\n');
    free(text);
}

TEST(nearest_name)
{
    static const struct {
        const char *name;
        int other;
    } t[] = {{"report", 0}, {"ops", 1}, {"gaps", 2}};
    CHECK_STR(tally__nearest_name("reprot", &t[0].name, 3, sizeof t[0]), "report");
    CHECK_STR(tally__nearest_name("gap", &t[0].name, 3, sizeof t[0]), "gaps");
    CHECK(tally__nearest_name("x", &t[0].name, 3, sizeof t[0]) == NULL);
    CHECK(tally__nearest_name("diff", &t[0].name, 3, sizeof t[0]) == NULL);
    CHECK_EQ_INT(tally__edit_distance("TALLY_SCHEDUEL", "TALLY_SCHEDULE"), 2);
}

int main(void)
{
    RUN(forms_of_a_value_are_equivalent);
    RUN(the_last_of_a_repeated_option_wins);
    RUN(kinds_store_their_values);
    RUN(usage_errors_are_one_line_and_status_2);
    RUN(an_operand_to_a_verb_without_any);
    RUN(dashes_alone_and_negative_numbers_are_values);
    RUN(help_is_generated_from_the_table);
    RUN(nearest_name);
    return test_summary();
}
