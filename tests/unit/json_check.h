/*
 * json_check.h — a small strict JSON syntax checker for tests, independent of the code under
 * test: json_valid(s) is 1 when s is exactly one JSON value (with surrounding blanks).
 */
#ifndef TALLY_TEST_JSON_CHECK_H
#define TALLY_TEST_JSON_CHECK_H

#include <ctype.h>
#include <string.h>

static inline const char *js_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    return p;
}

static inline const char *js_value(const char *p);

static inline const char *js_string(const char *p)
{
    if (*p != '"')
        return NULL;
    p++;
    while (*p && *p != '"') {
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)p[i]))
                        return NULL;
                p += 4;
            } else if (!strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
        p++;
    }
    return *p == '"' ? p + 1 : NULL;
}

static inline const char *js_number(const char *p)
{
    const char *s = p;
    if (*p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return NULL;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return NULL;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return p > s ? p : NULL;
}

static inline const char *js_value(const char *p)
{
    p = js_ws(p);
    if (*p == '{') {
        p = js_ws(p + 1);
        if (*p == '}')
            return p + 1;
        for (;;) {
            p = js_string(js_ws(p));
            if (!p)
                return NULL;
            p = js_ws(p);
            if (*p != ':')
                return NULL;
            p = js_value(p + 1);
            if (!p)
                return NULL;
            p = js_ws(p);
            if (*p == '}')
                return p + 1;
            if (*p != ',')
                return NULL;
            p++;
        }
    }
    if (*p == '[') {
        p = js_ws(p + 1);
        if (*p == ']')
            return p + 1;
        for (;;) {
            p = js_value(p);
            if (!p)
                return NULL;
            p = js_ws(p);
            if (*p == ']')
                return p + 1;
            if (*p != ',')
                return NULL;
            p++;
        }
    }
    if (*p == '"')
        return js_string(p);
    if (!strncmp(p, "null", 4))
        return p + 4;
    if (!strncmp(p, "true", 4))
        return p + 4;
    if (!strncmp(p, "false", 5))
        return p + 5;
    return js_number(p);
}

static inline int json_valid(const char *s)
{
    const char *p = js_value(s);
    return p && *js_ws(p) == '\0';
}

#endif
