/*
 * options.h — the one option parser of the tally command line (perf's parse-options).
 *
 * A verb declares its options in a table: long name, short letter, kind, where the value goes
 * (an offset in the verb's state struct), the value's name and one line of help. cli_parse
 * reads argv against the table and writes the values into the state; it checks every value
 * once, by kind (a count, microseconds, one of a list of words ...), so that a verb never sees
 * a malformed value; it prints --help from the same table, so that help cannot list an option
 * the verb does not take; and on an unknown option it suggests the nearest one.
 *
 * Accepted forms: --name value, --name=value, -o value, -ovalue; "--" ends the options; an
 * option given twice keeps the last value. Errors are one line on stderr,
 * "tally VERB: --top expects a count >= 0, got 'x'", and mean exit status 2.
 */
#ifndef TALLY_CLI_OPTIONS_H
#define TALLY_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* cli_parse's answer when the verb should go on (any other answer is the exit status). */
#define CLI_CONTINUE (-1)
/* The largest count any option takes (--top N): one cap for every verb. */
#define CLI_COUNT_MAX 1000000000

typedef enum cli_kind {
    CLI_FLAG,   /* no value; sets the int field to 1 */
    CLI_STRING, /* any non-empty text; the const char * field points into argv */
    CLI_COUNT,  /* an integer 0..CLI_COUNT_MAX; the int field */
    CLI_MICROS, /* microseconds > 0, fractions allowed; the int64_t field, in nanoseconds */
    CLI_WORD,   /* one of words[] (any case); the int field gets its index */
    CLI_PARSE   /* parse(value, field) == 0, else "expects <expects>" */
} cli_kind;

typedef struct cli_option {
    const char *name; /* long form, without "--" */
    char short_name;  /* -o; 0 = none */
    cli_kind kind;
    size_t off;               /* offsetof(the verb's state, the field the value goes to) */
    const char *arg;          /* the value's name in help ("N", "KEY"); unused for flags */
    const char *help;         /* one line ("\n" starts another, indented under the first) */
    const char *const *words; /* CLI_WORD: the words, NULL-terminated */
    int (*parse)(const char *value, void *field); /* CLI_PARSE: 0 when value is valid */
    const char *expects;                          /* CLI_PARSE: what a valid value is */
} cli_option;

/* The words of --format and --unit, in the order of tl_format and tl_unit. */
extern const char *const cli_format_words[];
extern const char *const cli_unit_words[];

/* Rows of a verb's option table. The verb defines CLI_STATE as its state struct before the
 * table; field_ names the member (a path such as vo.top) that the value goes to. */
#define CLI_OPTION(name_, letter_, kind_, field_, arg_, help_)                                     \
    {                                                                                              \
        .name = name_, .short_name = letter_, .kind = kind_, .off = offsetof(CLI_STATE, field_),   \
        .arg = arg_, .help = help_                                                                 \
    }
#define CLI_WORDS(name_, field_, arg_, words_, help_)                                              \
    {                                                                                              \
        .name = name_, .kind = CLI_WORD, .off = offsetof(CLI_STATE, field_), .arg = arg_,          \
        .help = help_, .words = words_                                                             \
    }
#define CLI_PARSED(name_, field_, arg_, parse_, expects_, help_)                                   \
    {                                                                                              \
        .name = name_, .kind = CLI_PARSE, .off = offsetof(CLI_STATE, field_), .arg = arg_,         \
        .help = help_, .parse = parse_, .expects = expects_                                        \
    }

/* A verb's command line: its options, its operands (the trace files, the program to run) and
 * its help text. */
typedef struct cli_command {
    const char *verb;     /* "report" */
    const char *operands; /* in the usage line: "FILE", "A B", "PROGRAM [ARGS]"; NULL = none.
                             Each word not in brackets is one operand the verb needs */
    const char *what;     /* the operands in words, for errors: "a trace file" */
    size_t operands_off;  /* where they go: a const char *[] in the state, one per word */
    int operands_max;     /* more than the words ("FILE [FILE...]"): up to this many, into an
                             array of operands_max + 1 (NULL after the last); 0 = the words */
    int program_follows;  /* tally run: the first operand ends the options, and a char ** at
                             operands_off gets it with everything after it */
    const char *about;    /* the paragraph under the usage line */
    const cli_option *options;
    size_t noptions;
    void (*more_help)(FILE *f); /* sections after the options (views, sort keys ...), or NULL */
    /* Options that another table owns (tally demo's model options, examples/llama): tried on
     * an argument that is no option of ours, before it is called unknown. Returns 1 when it
     * took argv[*i] (and advanced *i past a value it took), 0 when it is none of its options,
     * -1 on a bad value with one line in msg. */
    int (*other)(void *state, int argc, char **argv, int *i, char *msg, size_t cap);
    const char *other_usage; /* in the usage line: "[model options]" */
    /* Their names (without "--"), NULL-terminated, for "did you mean". */
    const char *const *(*other_names)(void);
} cli_command;

/* The table of the file, in a cli_command initializer: .options and .noptions. */
#define CLI_TABLE .options = options, .noptions = sizeof options / sizeof options[0]

/* Parse argv[1..argc) (argv[0] is the verb) into state. Returns CLI_CONTINUE, or the exit
 * status: 0 after printing --help on stdout, 2 after a usage error (one line on stderr). */
int cli_parse(const cli_command *c, int argc, char **argv, void *state);

/* The help of a verb, generated from its table. */
void cli_help(const cli_command *c, FILE *f);

/* A device named on the command line: N, or N after an accelerator's name as the reports write
 * it ("gpu0", "GPU 0" without the space, "mtia9"; any case). Returns 0 with *out, or -1. */
int cli_device_id(const char *v, int64_t *out);

#endif
