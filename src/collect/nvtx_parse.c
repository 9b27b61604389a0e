/*
 * nvtx_parse.c — pure helpers of the NVTX collector: PyTorch's emit_nvtx messages, category
 * names, wide strings, and the launcher's rank. No state, no allocation: unit-testable alone.
 *
 * emit_nvtx (torch/csrc/profiler/util.cpp, getNvtxStr) writes one message per operator:
 *   "<op name>, seq = <N>, op_id = <K>[, sizes = [[d0, d1], [], ...]][, input_op_ids = [...]]"
 * The operator name itself may contain ", " only in pathological cases; we take the name to
 * end at the first ", " that is followed by one of the known keys.
 */
#include "collect/collect.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <tally.h>

static const char *const op_keys[] = {"seq = ", "op_id = ", "sizes = ", "input_op_ids = "};

/* Non-zero when s[0..n) starts with one of the emit_nvtx keys. */
static int key_at(const char *s, size_t n, size_t *keylen, int *which)
{
    for (size_t k = 0; k < sizeof op_keys / sizeof op_keys[0]; k++) {
        size_t kl = strlen(op_keys[k]);
        if (n >= kl && memcmp(s, op_keys[k], kl) == 0) {
            *keylen = kl;
            *which = (int)k;
            return 1;
        }
    }
    return 0;
}

/* Length of the balanced bracket group starting at s[0] == '['; 0 when unbalanced. */
static size_t bracket_len(const char *s, size_t n)
{
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '[')
            depth++;
        else if (s[i] == ']' && --depth == 0)
            return i + 1;
    }
    return 0;
}

/* Length of the bracketed list at s[0] == '['. PyTorch writes sizes before input_op_ids and
 * input_op_ids last, so the list normally ends right before ", input_op_ids = [" or at the end
 * of the message: found with memmem (vectorised) rather than a byte loop, which mattered for
 * ops with many inputs (a 1.4 KB message: 850 -> 400 ns a push+pop). Anything else is walked. */
static size_t list_len(const char *s, size_t n, int which)
{
    static const char next[] = ", input_op_ids = [";
    if (which == 2) {
        const char *p = memmem(s, n, next, sizeof next - 1);
        if (p && p > s && p[-1] == ']')
            return (size_t)(p - s);
    }
    if (which == 3 && n >= 2 && s[n - 1] == ']')
        return n;
    return bracket_len(s, n);
}

int tally__nvtx_parse_op(const char *msg, size_t len, size_t *name_len, const char **shapes,
                         size_t *shapes_len)
{
    *shapes = NULL;
    *shapes_len = 0;
    size_t name_end = 0;
    int found = 0;
    /* The name ends at the first ", <key>". */
    for (size_t i = 0; i + 2 <= len; i++) {
        size_t kl;
        int which;
        if (msg[i] == ',' && msg[i + 1] == ' ' && key_at(msg + i + 2, len - i - 2, &kl, &which)) {
            name_end = i;
            found = 1;
            break;
        }
    }
    if (!found || name_end == 0)
        return 0;
    /* Walk the key/value list; every field must be well formed for the message to count as
     * emit_nvtx's (a user range that merely contains ", seq = " stays a user range). */
    size_t i = name_end;
    int saw_seq_or_op = 0;
    while (i < len) {
        if (i + 2 > len || msg[i] != ',' || msg[i + 1] != ' ')
            return 0;
        i += 2;
        size_t kl;
        int which;
        if (!key_at(msg + i, len - i, &kl, &which))
            return 0;
        i += kl;
        if (which <= 1) { /* seq, op_id: an integer, maybe negative */
            size_t s = i;
            if (i < len && msg[i] == '-')
                i++;
            while (i < len && msg[i] >= '0' && msg[i] <= '9')
                i++;
            if (i == s || (i == s + 1 && msg[s] == '-'))
                return 0;
            saw_seq_or_op = 1;
        } else { /* sizes, input_op_ids: a bracketed list */
            if (i >= len || msg[i] != '[')
                return 0;
            size_t b = list_len(msg + i, len - i, which);
            if (!b)
                return 0;
            if (which == 2) {
                *shapes = msg + i;
                *shapes_len = b;
            }
            i += b;
        }
    }
    if (!saw_seq_or_op) {
        *shapes = NULL;
        *shapes_len = 0;
        return 0;
    }
    *name_len = name_end;
    return 1;
}

int tally__nvtx_category_from_name(const char *name)
{
    static const struct {
        const char *name;
        int cat;
    } map[] = {
        {"forward", TALLY_FORWARD},
        {"backward", TALLY_BACKWARD},
        {"optimizer", TALLY_OPTIMIZER},
        {"dataloader", TALLY_DATALOADER},
        {"communication", TALLY_COMMUNICATION},
        {"operator", TALLY_OPERATOR},
    };
    if (!name)
        return -1;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcasecmp(name, map[i].name) == 0)
            return map[i].cat;
    return -1;
}

size_t tally__utf32_to_utf8(const wchar_t *w, char *out, size_t cap)
{
    size_t n = 0;
    if (!cap)
        return 0;
    if (!w) {
        out[0] = 0;
        return 0;
    }
    for (; *w; w++) {
        uint32_t c = (uint32_t)*w;
        char buf[4];
        size_t k;
        if (c >= 0xD800 && c <= 0xDFFF)
            c = 0xFFFD;
        if (c < 0x80) {
            buf[0] = (char)c;
            k = 1;
        } else if (c < 0x800) {
            buf[0] = (char)(0xC0 | (c >> 6));
            buf[1] = (char)(0x80 | (c & 0x3F));
            k = 2;
        } else if (c < 0x10000) {
            buf[0] = (char)(0xE0 | (c >> 12));
            buf[1] = (char)(0x80 | ((c >> 6) & 0x3F));
            buf[2] = (char)(0x80 | (c & 0x3F));
            k = 3;
        } else if (c < 0x110000) {
            buf[0] = (char)(0xF0 | (c >> 18));
            buf[1] = (char)(0x80 | ((c >> 12) & 0x3F));
            buf[2] = (char)(0x80 | ((c >> 6) & 0x3F));
            buf[3] = (char)(0x80 | (c & 0x3F));
            k = 4;
        } else {
            buf[0] = (char)0xEF; /* U+FFFD */
            buf[1] = (char)0xBF;
            buf[2] = (char)0xBD;
            k = 3;
        }
        if (n + k + 1 > cap)
            break;
        memcpy(out + n, buf, k);
        n += k;
    }
    out[n] = 0;
    return n;
}

int tally__env_rank(void)
{
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            char *end;
            long r = strtol(v, &end, 10);
            if (*end == 0 && r >= 0 && r < (1L << 24))
                return (int)r;
        }
    }
    return -1;
}
