/*
 * env_check.h — the TALLY_* settings tally knows, in one list that the library and the command
 * line share (`tally run` checks a program's settings with it before starting the program), and
 * the nearest-name helper behind every "did you mean" (settings, verbs, options).
 */
#ifndef TALLY_RECORD_ENV_CHECK_H
#define TALLY_RECORD_ENV_CHECK_H

#include <stddef.h>

/* Check every TALLY_* variable of the environment: its name must be a setting tally knows, and
 * the value of each setting that tally_config_from_env does not read (the collectors', the
 * clock's, TALLY_BIN) must be valid. The session's settings (TALLY_SCHEDULE,
 * TALLY_MEMORY_CAP, ...) are checked by tally_config_from_env, which applies them; call both.
 * Returns 0, or -1 with one line in msg (no "tally: " prefix, no newline), for example
 * "unknown setting TALLY_SCHEDUEL; did you mean TALLY_SCHEDULE?" or
 * "TALLY_GPU=\"2\": expected 0 or 1". */
int tally__env_check(char *msg, size_t cap);

/* Check one setting: 0 when name is known and value valid for it (always valid for a session
 * setting, see above), else -1 with one line in msg. */
int tally__env_check_one(const char *name, const char *value, char *msg, size_t cap);

/* The number of the known settings, and the name of the i-th (for help and tests). */
size_t tally__env_count(void);
const char *tally__env_name(size_t i);

/* Levenshtein distance between a and b (99 when either is longer than 64 bytes). */
int tally__edit_distance(const char *a, const char *b);

/* The name nearest to word among n names laid out in an array of structs: the first name is at
 * first, the next one stride bytes further (a table's name field: &table[0].name,
 * sizeof table[0]). NULL when none is within an edit distance of 2, or none is closer to word
 * than to nothing (so "--x" suggests no one-letter option). */
const char *tally__nearest_name(const char *word, const char *const *first, size_t n,
                                size_t stride);

#endif
