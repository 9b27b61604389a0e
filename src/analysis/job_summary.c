/*
 * job_summary.c — the ranks' summaries as JSON, written into a job's JSON report and read back
 * from it: the map/merge path of jobs too big for one machine (job.h).
 *
 * Each node reports its own ranks (`tally report NODE_DIR --format json -o node.json`); the
 * report's first member, "job_summary", holds every rank's summary — its steps, communication
 * and collectives, the same numbers tl_job_load makes from a trace. `tally report node*.json`
 * reads those instead of traces, so the merge costs the size of the summaries (the ranks, their
 * steps and collectives), not of the traces, and gives the tables reading all the traces would.
 *
 *   {"version": 1, "names": ["allreduce", ...],
 *    "ranks": [{"rank": 0, "path": "...", "rank_from": "trace", "aligned": 1, "has_gpu": 1,
 *               "comm": ns, "comp": ns, "exposed": ns, "host_comm": ns, "window": ns,
 *               "steps": [[number, start_ns, dur_ns], ...],
 *               "collectives": [[name index, ordinal, start_ns, dur_ns], ...]}, ...]}
 *
 * The reader takes exactly this shape (members in any order, unknown members skipped) and
 * fails with one line naming the file and the byte offset on anything else.
 */
#include "analysis/job.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- writing ----------------------------------------------------------------------------------
 */

char *tl_job_summary_json(const tl_job *job)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputs("{\"version\": 1, \"names\": [", f);
    for (size_t k = 0; k < job->nnames; k++) {
        fputs(k ? ", " : "", f);
        tl_json_str(f, job->names[k]);
    }
    fputs("],\n    \"ranks\": [", f);
    for (size_t i = 0; i < job->n; i++) {
        const tl_rank *r = &job->ranks[i];
        fprintf(f, "%s{\"rank\": %lld, \"path\": ", i ? ",\n      " : "\n      ",
                (long long)r->rank);
        tl_json_str(f, r->path ? r->path : "");
        fputs(", \"rank_from\": ", f);
        tl_json_str(f, r->rank_from ? r->rank_from : "order");
        fprintf(f,
                ", \"aligned\": %d, \"has_gpu\": %d, \"comm\": %lld, \"comp\": %lld, "
                "\"exposed\": %lld, \"host_comm\": %lld, \"window\": %lld, \"steps\": [",
                r->aligned, r->has_gpu, (long long)r->comm, (long long)r->comp,
                (long long)r->exposed, (long long)r->host_comm, (long long)r->window);
        for (int s = 0; s < r->nsteps; s++)
            fprintf(f, "%s[%lld, %lld, %lld]", s ? ", " : "", (long long)r->step_num[s],
                    (long long)r->step_start[s], (long long)r->step_dur[s]);
        fputs("], \"collectives\": [", f);
        for (size_t c = 0; c < r->ncoll; c++)
            fprintf(f, "%s[%u, %u, %lld, %lld]", c ? ", " : "", r->coll[c].name, r->coll[c].ordinal,
                    (long long)r->coll[c].start, (long long)r->coll[c].dur);
        fputs("]}", f);
    }
    fputs("]}", f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- reading ----------------------------------------------------------------------------------
 */

typedef struct jp {
    const char *s, *p, *end;
    const char *path;
    tl_error *err;
    int failed;
} jp;

static void bad(jp *j, const char *what)
{
    if (!j->failed)
        tl_error_set(j->err, "%s: offset %zu: expected %s (a job summary of tally report)", j->path,
                     (size_t)(j->p - j->s), what);
    j->failed = 1;
    j->p = j->end;
}

static void ws(jp *j)
{
    while (j->p < j->end && isspace((unsigned char)*j->p))
        j->p++;
}

static int eat(jp *j, char c)
{
    ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return 1;
    }
    return 0;
}

static void need(jp *j, char c, const char *what)
{
    if (!eat(j, c))
        bad(j, what);
}

/* A JSON string, unescaped, malloc'd (\uXXXX to UTF-8; a lone surrogate becomes U+FFFD). */
static char *str(jp *j)
{
    ws(j);
    if (j->p >= j->end || *j->p != '"') {
        bad(j, "a string");
        return NULL;
    }
    j->p++;
    size_t cap = 32, n = 0;
    char *o = malloc(cap);
    while (o && j->p < j->end && *j->p != '"') {
        if (n + 4 >= cap) {
            char *no = realloc(o, cap *= 2);
            if (!no) {
                free(o);
                o = NULL;
                break;
            }
            o = no;
        }
        unsigned char c = (unsigned char)*j->p++;
        if (c < 0x20)
            break;
        if (c != '\\') {
            o[n++] = (char)c;
            continue;
        }
        if (j->p >= j->end)
            break;
        char e = *j->p++, u = e == 'b'                            ? '\b'
                              : e == 'f'                          ? '\f'
                              : e == 'n'                          ? '\n'
                              : e == 'r'                          ? '\r'
                              : e == 't'                          ? '\t'
                              : e == '"' || e == '\\' || e == '/' ? e
                                                                  : 0;
        if (u) {
            o[n++] = u;
        } else if (e == 'u' && j->end - j->p >= 4) {
            unsigned v = 0;
            for (int k = 0; k < 4; k++) {
                int h = j->p[k];
                v = v * 16 + (unsigned)(isdigit(h) ? h - '0' : (tolower(h) - 'a' + 10) & 15);
            }
            j->p += 4;
            if (v >= 0xd800 && v < 0xe000)
                v = 0xfffd;
            if (v < 0x80) {
                o[n++] = (char)v;
            } else if (v < 0x800) {
                o[n++] = (char)(0xc0 | v >> 6);
                o[n++] = (char)(0x80 | (v & 63));
            } else {
                o[n++] = (char)(0xe0 | v >> 12);
                o[n++] = (char)(0x80 | ((v >> 6) & 63));
                o[n++] = (char)(0x80 | (v & 63));
            }
        } else {
            break;
        }
    }
    if (!o || j->p >= j->end || *j->p != '"') {
        free(o);
        bad(j, "a string");
        return NULL;
    }
    j->p++;
    o[n] = 0;
    return o;
}

static int64_t num(jp *j)
{
    ws(j);
    char *e;
    errno = 0;
    long long v = j->p < j->end ? strtoll(j->p, &e, 10) : 0;
    if (j->p >= j->end || e == j->p || errno || e > j->end) {
        bad(j, "an integer");
        return 0;
    }
    j->p = e;
    return v;
}

/* Skip any value (a member this reader does not know), nesting at most 64 deep. */
static void skip(jp *j, int depth)
{
    ws(j);
    if (depth > 64 || j->p >= j->end) {
        bad(j, "a value");
        return;
    }
    char c = *j->p;
    if (c == '"') {
        free(str(j));
    } else if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->p++;
        if (eat(j, close))
            return;
        do {
            if (c == '{') {
                free(str(j));
                need(j, ':', "':'");
            }
            skip(j, depth + 1);
        } while (!j->failed && eat(j, ','));
        need(j, close, c == '{' ? "'}'" : "']'");
    } else {
        while (j->p < j->end && (isalnum((unsigned char)*j->p) || strchr("+-.", *j->p)))
            j->p++;
    }
}

/* [a, b, c(, d)] of integers into v[0..k). */
static void tuple(jp *j, int64_t *v, int k)
{
    need(j, '[', "'['");
    for (int i = 0; i < k && !j->failed; i++) {
        if (i)
            need(j, ',', "','");
        v[i] = num(j);
    }
    need(j, ']', "']' after the numbers of a step or collective");
}

/* The ranks' summaries of the job report at path, appended to *slots as ranks whose collective
 * names are indexes into names (all the file's names, in order). */
static int read_rank(jp *j, tl_rank *r, size_t nnames)
{
    need(j, '{', "'{' starting a rank");
    if (eat(j, '}'))
        return j->failed ? -1 : 0;
    do {
        char *k = str(j);
        need(j, ':', "':'");
        if (!k)
            break;
        if (!strcmp(k, "rank")) {
            r->rank = num(j);
        } else if (!strcmp(k, "path")) {
            free(r->path);
            r->path = str(j);
        } else if (!strcmp(k, "rank_from")) {
            char *v = str(j);
            r->rank_from = v && !strcmp(v, "trace")       ? "trace"
                           : v && !strcmp(v, "file name") ? "file name"
                                                          : "order";
            free(v);
        } else if (!strcmp(k, "aligned")) {
            r->aligned = num(j) != 0;
        } else if (!strcmp(k, "has_gpu")) {
            r->has_gpu = num(j) != 0;
        } else if (!strcmp(k, "comm")) {
            r->comm = num(j);
        } else if (!strcmp(k, "comp")) {
            r->comp = num(j);
        } else if (!strcmp(k, "exposed")) {
            r->exposed = num(j);
        } else if (!strcmp(k, "host_comm")) {
            r->host_comm = num(j);
        } else if (!strcmp(k, "window")) {
            r->window = num(j);
        } else if (!strcmp(k, "steps") && !r->nsteps) {
            need(j, '[', "'[' starting the steps");
            size_t cap = 0;
            while (!j->failed && !eat(j, ']')) {
                if (r->nsteps && !eat(j, ',')) {
                    bad(j, "',' or ']' in the steps");
                    break;
                }
                if ((size_t)r->nsteps == cap) {
                    cap = cap ? cap * 2 : 16;
                    int64_t *a = realloc(r->step_num, cap * sizeof *a);
                    int64_t *b = a ? realloc(r->step_start, cap * sizeof *b) : NULL;
                    int64_t *c = b ? realloc(r->step_dur, cap * sizeof *c) : NULL;
                    if (a)
                        r->step_num = a;
                    if (b)
                        r->step_start = b;
                    if (!c) {
                        bad(j, "memory for the steps");
                        break;
                    }
                    r->step_dur = c;
                }
                int64_t v[3];
                tuple(j, v, 3);
                r->step_num[r->nsteps] = v[0];
                r->step_start[r->nsteps] = v[1];
                r->step_dur[r->nsteps++] = v[2];
            }
        } else if (!strcmp(k, "collectives") && !r->ncoll) {
            need(j, '[', "'[' starting the collectives");
            size_t cap = 0;
            while (!j->failed && !eat(j, ']')) {
                if (r->ncoll && !eat(j, ',')) {
                    bad(j, "',' or ']' in the collectives");
                    break;
                }
                if (r->ncoll == cap) {
                    cap = cap ? cap * 2 : 16;
                    tl_coll *c = realloc(r->coll, cap * sizeof *c);
                    if (!c) {
                        bad(j, "memory for the collectives");
                        break;
                    }
                    r->coll = c;
                }
                int64_t v[4];
                tuple(j, v, 4);
                if (!j->failed && (v[0] < 0 || (uint64_t)v[0] >= nnames || v[1] < 0 ||
                                   v[1] > UINT32_MAX || v[3] < 0))
                    bad(j, "a collective's name index within the names, ordinal and duration");
                r->coll[r->ncoll++] =
                    (tl_coll){(uint32_t)v[0], (uint32_t)v[1], v[2], v[3] < 0 ? 0 : v[3]};
            }
        } else {
            skip(j, 0);
        }
        free(k);
    } while (!j->failed && eat(j, ','));
    need(j, '}', "'}' ending a rank");
    for (int s = 0; s < r->nsteps && !j->failed; s++)
        if (r->step_dur[s] < 0)
            bad(j, "steps of positive duration");
    return j->failed ? -1 : 0;
}

int tl_job_is_summary(const char *path)
{
    /* a pipe (`<(zcat t.json.gz)`, a FIFO, /dev/stdin) is read once: bytes taken here would be
     * missing from the trace, and a summary is a file tally wrote */
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char buf[64];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = buf;
    while (isspace((unsigned char)*p))
        p++;
    if (*p++ != '{')
        return 0;
    while (isspace((unsigned char)*p))
        p++;
    return !strncmp(p, "\"job_summary\"", 13);
}

int tl_job_summary_read(const char *path, tl_rank **ranks, size_t *nranks, char ***names,
                        size_t *nnames, tl_error *err)
{
    *ranks = NULL;
    *names = NULL;
    *nranks = *nnames = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        tl_error_setc(err, TL_ERR_IO, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            char *nb = realloc(buf, cap = cap ? cap * 2 : 65536);
            if (!nb) {
                free(buf);
                fclose(f);
                tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", path);
                return -1;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    jp j = {buf, buf, buf + len, path, err, 0};
    size_t cr = 0, cn = 0;
    int have_version = 0;
    need(&j, '{', "'{'");
    char *k = str(&j);
    if (!k || strcmp(k, "job_summary") != 0)
        bad(&j, "\"job_summary\" as the first member");
    free(k);
    need(&j, ':', "':'");
    need(&j, '{', "'{' starting job_summary");
    if (!eat(&j, '}'))
        do {
            k = str(&j);
            need(&j, ':', "':'");
            if (!k)
                break;
            if (!strcmp(k, "version")) {
                if (num(&j) != 1)
                    bad(&j, "version 1");
                have_version = 1;
            } else if (!strcmp(k, "names") && !*nnames) {
                need(&j, '[', "'[' starting the names");
                while (!j.failed && !eat(&j, ']')) {
                    if (*nnames && !eat(&j, ',')) {
                        bad(&j, "',' or ']' in the names");
                        break;
                    }
                    if (*nnames == cn) {
                        char **nv = realloc(*names, (cn = cn ? cn * 2 : 16) * sizeof *nv);
                        if (!nv) {
                            bad(&j, "memory for the names");
                            break;
                        }
                        *names = nv;
                    }
                    char *s = str(&j);
                    if (s)
                        (*names)[(*nnames)++] = s;
                }
            } else if (!strcmp(k, "ranks") && !*nranks) {
                need(&j, '[', "'[' starting the ranks");
                while (!j.failed && !eat(&j, ']')) {
                    if (*nranks && !eat(&j, ',')) {
                        bad(&j, "',' or ']' in the ranks");
                        break;
                    }
                    if (*nranks == cr) {
                        tl_rank *nv = realloc(*ranks, (cr = cr ? cr * 2 : 16) * sizeof *nv);
                        if (!nv) {
                            bad(&j, "memory for the ranks");
                            break;
                        }
                        *ranks = nv;
                    }
                    tl_rank *r = &(*ranks)[(*nranks)++];
                    memset(r, 0, sizeof *r);
                    r->rank = -1;
                    read_rank(&j, r, *nnames);
                }
            } else {
                skip(&j, 0);
            }
            free(k);
        } while (!j.failed && eat(&j, ','));
    need(&j, '}', "'}' ending job_summary");
    if (!j.failed && !have_version)
        bad(&j, "a version");
    for (size_t i = 0; i < *nranks && !j.failed; i++)
        if ((*ranks)[i].rank < 0)
            bad(&j, "a rank number in every rank");
    free(buf);
    if (!j.failed)
        return 0;
    for (size_t i = 0; i < *nranks; i++)
        tl_rank_free(&(*ranks)[i]);
    free(*ranks);
    for (size_t i = 0; i < *nnames; i++)
        free((*names)[i]);
    free(*names);
    *ranks = NULL;
    *names = NULL;
    *nranks = *nnames = 0;
    return -1;
}
