/*
 * job.c — a job of several ranks (job.h): find the traces, read them in threads, summarise
 * each rank, compare the ranks.
 */
#include "analysis/job.h"
#include "analysis/insight.h"
#include "analysis/steps.h"
#include "trace/checked.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- which files, which rank ---------------------------------------------------------------- */

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

static int is_trace_name(const char *name)
{
    return name[0] != '.' && (has_suffix(name, ".json") || has_suffix(name, ".json.gz") ||
                              has_suffix(name, ".tally"));
}

typedef struct pathvec {
    char **v;
    size_t n, cap;
} pathvec;

static int push_path(pathvec *p, const char *s)
{
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 16;
        char **nv = realloc(p->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        p->v = nv;
        p->cap = nc;
    }
    if (!(p->v[p->n] = strdup(s)))
        return -1;
    p->n++;
    return 0;
}

/* Folders are walked with opendir, not nftw: nftw keeps its caller's state in globals. */
static int walk(pathvec *p, const char *dir, int depth, tl_error *err)
{
    if (depth > 32)
        return 0; /* a loop of links, or a tree no job writes */
    DIR *d = opendir(dir);
    if (!d) {
        tl_error_setc(err, TL_ERR_IO, "%s: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *full = NULL;
        size_t dl = strlen(dir); /* "traces/" names its files "traces/x", as "traces" does */
        if (asprintf(&full, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", de->d_name) < 0) {
            rc = -1;
            tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
            break;
        }
        struct stat st;
        if (stat(full, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                rc = walk(p, full, depth + 1, err);
            else if (S_ISREG(st.st_mode) && is_trace_name(de->d_name) && push_path(p, full) != 0) {
                tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
                rc = -1;
            }
        }
        free(full);
    }
    closedir(d);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int tl_job_paths(const char *const *args, int nargs, char ***out, size_t *n, tl_error *err)
{
    pathvec p = {0};
    *out = NULL;
    *n = 0;
    for (int i = 0; i < nargs; i++) {
        struct stat st;
        if (stat(args[i], &st) != 0) {
            tl_error_setc(err, TL_ERR_IO, "%s: %s", args[i], strerror(errno));
            goto fail;
        }
        if (S_ISDIR(st.st_mode)) {
            size_t before = p.n;
            if (walk(&p, args[i], 0, err) != 0)
                goto fail;
            if (p.n == before) {
                tl_error_setc(err, TL_ERR_INPUT,
                              "%s: no trace in this folder (looked for *.json, *.json.gz, *.tally)",
                              args[i]);
                goto fail;
            }
            qsort(p.v + before, p.n - before, sizeof *p.v, cmp_str);
        } else if (push_path(&p, args[i]) != 0) {
            tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    /* one file twice would be two ranks of one trace */
    for (size_t i = 0; i < p.n; i++)
        for (size_t j = i + 1; j < p.n && p.n <= 4096; j++)
            if (!strcmp(p.v[i], p.v[j])) {
                tl_error_setc(err, TL_ERR_USAGE, "%s is given twice", p.v[i]);
                goto fail;
            }
    *out = p.v;
    *n = p.n;
    return 0;
fail:
    tl_job_paths_free(p.v, p.n);
    return -1;
}

void tl_job_paths_free(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

/* "rank" followed by an optional '-' or '_' and digits, in s[0, len), any case. */
static int64_t rank_in(const char *s, size_t len)
{
    for (size_t i = 0; i + 4 < len; i++) {
        if (strncasecmp(s + i, "rank", 4) != 0)
            continue;
        size_t j = i + 4;
        if (j < len && (s[j] == '-' || s[j] == '_'))
            j++;
        if (j >= len || !isdigit((unsigned char)s[j]))
            continue;
        int64_t r = 0;
        while (j < len && isdigit((unsigned char)s[j]) && r < 100000000)
            r = r * 10 + (s[j++] - '0');
        return r;
    }
    return -1;
}

int64_t tl_rank_from_path(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int64_t r = rank_in(base, strlen(base));
    if (r >= 0 || base == path)
        return r;
    /* the folder it is in: InternLM's rank{}_dp{}_tp{}_pp{} */
    const char *end = base - 1, *dir = end;
    while (dir > path && dir[-1] != '/')
        dir--;
    return rank_in(dir, (size_t)(end - dir));
}

void tl_job_number_ranks(int64_t *rank, size_t n)
{
    int64_t next = 0;
    for (size_t i = 0; i < n; i++)
        if (rank[i] >= next)
            next = tl_add_sat(rank[i], 1);
    for (size_t i = 0; i < n; i++)
        if (rank[i] < 0)
            rank[i] = next++;
}

int64_t tl_job_trace_rank(const tl_trace *t, const char *path, const char **from)
{
    int64_t r = t->rank >= 0 ? t->rank : tl_rank_from_path(path);
    *from = t->rank >= 0 ? "trace" : r >= 0 ? "file name" : "order";
    return r;
}

/* ---- one rank's summary --------------------------------------------------------------------- */

static int is_host_collective(const tl_trace *t, const tl_event *e)
{
    if (tl_cat_is_device((tl_cat)e->cat) || (e->flags & TL_EV_INSTANT))
        return 0;
    return e->cat == TL_CAT_COMMUNICATION || tl_is_host_comm_name(tl_str(&t->strings, e->name));
}

typedef struct coll_ev {
    int64_t ts, dur;
    uint32_t name; /* the trace's string id */
    uint32_t idx;
} coll_ev;

static int coll_ev_cmp(const void *a, const void *b)
{
    const coll_ev *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The collectives of t in start order with their ordinal per name: the GPU's communication
 * kernels, or the host's communication ranges when the trace has no such kernel. Names are
 * interned in names (the rank's own table; the job remaps them). */
static int collectives(const tl_trace *t, int64_t shift, tl_rank *r, tl_strtab *names)
{
    size_t n = 0, cap = 0;
    coll_ev *v = NULL;
    for (int pass = 0; pass < 2 && n == 0; pass++) {
        for (size_t i = 0; i < t->nev; i++) {
            const tl_event *e = &t->ev[i];
            int yes = pass == 0 ? e->cat == TL_CAT_KERNEL &&
                                      tl_is_comm_kernel_name(tl_str(&t->strings, e->name))
                                : is_host_collective(t, e);
            if (!yes)
                continue;
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 64;
                coll_ev *nv = realloc(v, nc * sizeof *nv);
                if (!nv) {
                    free(v);
                    return -1;
                }
                v = nv;
                cap = nc;
            }
            v[n++] = (coll_ev){e->ts, e->dur, e->name, (uint32_t)i};
        }
    }
    if (n > 1)
        qsort(v, n, sizeof *v, coll_ev_cmp);
    r->coll = n ? malloc(n * sizeof *r->coll) : NULL;
    uint32_t *count = calloc(t->strings.count ? t->strings.count : 1, sizeof *count);
    if ((n && !r->coll) || !count) {
        free(v);
        free(count);
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        const char *nm = tl_str(&t->strings, v[k].name);
        uint32_t id = tl_intern(names, nm, strlen(nm));
        r->coll[k] = (tl_coll){id, count[v[k].name]++, tl_add_sat(v[k].ts, shift), v[k].dur};
    }
    r->ncoll = n;
    free(v);
    free(count);
    return 0;
}

static int summarise(const tl_trace *t, tl_rank *r, tl_strtab *names)
{
    int64_t shift = t->wall_offset;
    r->aligned = shift != 0;
    tl_steps st;
    if (tl_steps_load(t, &st) != 0)
        return -1;
    r->nsteps = st.pseudo ? 0 : st.n;
    if (r->nsteps) {
        r->step_num = malloc((size_t)r->nsteps * sizeof *r->step_num);
        r->step_start = malloc((size_t)r->nsteps * sizeof *r->step_start);
        r->step_dur = malloc((size_t)r->nsteps * sizeof *r->step_dur);
        if (!r->step_num || !r->step_start || !r->step_dur) {
            tl_steps_free(&st);
            return -1;
        }
        for (int i = 0; i < st.n; i++) {
            r->step_num[i] = st.v[i].number;
            r->step_start[i] = tl_add_sat(st.v[i].s, shift);
            r->step_dur[i] = st.v[i].e - st.v[i].s;
        }
    }
    tl_steps_free(&st);
    tl_comm c;
    if (tl_comm_compute(t, &c) != 0)
        return -1;
    r->comm = c.comm;
    r->comp = c.comp;
    r->exposed = c.exposed;
    r->host_comm = c.host_comm;
    r->window = c.window.total;
    r->has_gpu = c.ncomm + c.ncomp > 0;
    return collectives(t, shift, r, names);
}

/* ---- reading the ranks in threads ----------------------------------------------------------- */

typedef struct slot {
    tl_rank r;
    tl_strtab names; /* its collectives' names */
    tl_error err;
    int failed;
} slot;

typedef struct pool {
    char *const *paths;
    size_t n, next, done;
    slot *slots;
    int progress;
    int parse_threads; /* threads each rank's trace is parsed with: the cores ranks leave */
    pthread_mutex_t mu;
} pool;

static void read_one(pool *p, size_t i)
{
    slot *s = &p->slots[i];
    tl_trace t;
    tl_trace_init(&t);
    t.read_threads = p->parse_threads;
    tl_strtab_init(&s->names);
    if (tl_load(&t, p->paths[i], 0, &s->err) != 0) {
        s->failed = 1;
    } else if ((!t.finished && tl_trace_finish(&t) != 0) || summarise(&t, &s->r, &s->names)) {
        tl_error_setc(&s->err, TL_ERR_NOMEM, "%s: out of memory", p->paths[i]);
        s->failed = 1;
    }
    s->r.path = strdup(p->paths[i]);
    s->r.rank = tl_job_trace_rank(&t, p->paths[i], &s->r.rank_from); /* -1: by order, later */
    tl_trace_free(&t);
}

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next < p->n ? p->next++ : p->n;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n)
            return NULL;
        read_one(p, i);
        pthread_mutex_lock(&p->mu);
        p->done++;
        if (p->progress)
            fprintf(stderr, "\rtally: read %zu of %zu ranks", p->done, p->n);
        pthread_mutex_unlock(&p->mu);
    }
}

void tl_rank_free(tl_rank *r)
{
    free(r->path);
    free(r->step_num);
    free(r->step_start);
    free(r->step_dur);
    free(r->coll);
    memset(r, 0, sizeof *r);
}

static int rank_cmp(const void *a, const void *b)
{
    const tl_rank *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int tl_job_load(tl_job *job, char *const *paths, size_t n, int threads, int progress, tl_error *err)
{
    memset(job, 0, sizeof *job);
    if (n == 0) {
        tl_error_setc(err, TL_ERR_USAGE, "no trace to read");
        return -1;
    }
    if (threads <= 0)
        threads = tl_default_threads();
    /* Job reports (the map step's output) give their ranks' summaries: read here, at once;
     * traces are read by the pool into the first slots. */
    char **traces = calloc(n, sizeof *traces);
    size_t ntr = 0, nslots = 0, cap = n;
    slot *slots = calloc(cap, sizeof *slots);
    int rc = 0;
    if (!traces || !slots) {
        free(traces);
        free(slots);
        tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
        return -1;
    }
    /* a trace or a job report: looked at once (it opens the file) */
    char *is_sum = calloc(n, 1);
    for (size_t i = 0; is_sum && i < n; i++)
        if (!(is_sum[i] = (char)tl_job_is_summary(paths[i])))
            traces[ntr++] = paths[i];
    if (!is_sum) {
        tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
        rc = -1;
    }
    nslots = ntr;
    for (size_t i = 0; i < n && rc == 0; i++) {
        tl_rank *rk;
        char **nm;
        size_t nr, nn;
        if (!is_sum[i])
            continue;
        if (tl_job_summary_read(paths[i], &rk, &nr, &nm, &nn, err) != 0) {
            rc = -1;
            break;
        }
        if (nslots + nr > cap) {
            slot *ns = realloc(slots, (cap = nslots + nr + cap) * sizeof *ns);
            if (!ns) {
                tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
                rc = -1;
            } else {
                slots = ns;
            }
        }
        for (size_t k = 0; k < nr; k++) {
            if (rc != 0) {
                tl_rank_free(&rk[k]);
                continue;
            }
            slot *sl = &slots[nslots++];
            memset(sl, 0, sizeof *sl);
            tl_strtab_init(&sl->names);
            sl->r = rk[k];
            for (size_t c = 0; c < sl->r.ncoll; c++) {
                const char *x = nm[sl->r.coll[c].name];
                sl->r.coll[c].name = tl_intern(&sl->names, x, strlen(x));
            }
        }
        free(rk);
        for (size_t k = 0; k < nn; k++)
            free(nm[k]);
        free(nm);
    }
    free(is_sum);
    if (rc != 0) {
        for (size_t i = ntr; i < nslots; i++) {
            tl_rank_free(&slots[i].r);
            tl_strtab_free(&slots[i].names);
        }
        free(slots);
        free(traces);
        return -1;
    }
    /* fewer ranks than threads: the threads left parse each rank's trace in parallel */
    int parse = ntr && (size_t)threads > ntr ? threads / (int)ntr : 1;
    if ((size_t)threads > ntr)
        threads = ntr ? (int)ntr : 1;
    pool p = {.paths = traces,
              .n = ntr,
              .slots = slots,
              .progress = progress && isatty(2),
              .parse_threads = parse};
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    if (!th) {
        for (size_t i = ntr; i < nslots; i++) {
            tl_rank_free(&slots[i].r);
            tl_strtab_free(&slots[i].names);
        }
        free(slots);
        free(traces);
        tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
        return -1;
    }
    pthread_mutex_init(&p.mu, NULL);
    int started = 0;
    for (; started < threads; started++)
        if (tl_thread_start(&th[started], worker, &p) != 0) /* signals blocked */
            break;
    if (started == 0)
        worker(&p); /* no thread could start: read them here */
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&p.mu);
    free(th);
    if (p.progress && ntr)
        fputc('\n', stderr);
    job->threads = started ? started : 1;
    free(traces);
    n = nslots; /* from here on: every rank, read or summarised */

    for (size_t i = 0; i < n && rc == 0; i++)
        if (p.slots[i].failed) {
            *err = p.slots[i].err;
            rc = -1;
        }
    int64_t *rk = malloc(n * sizeof *rk);
    for (size_t i = 0; rk && i < n; i++)
        rk[i] = p.slots[i].r.rank;
    if (rk)
        tl_job_number_ranks(rk, n);
    for (size_t i = 0; rk && i < n; i++)
        p.slots[i].r.rank = rk[i];
    if (!rk && rc == 0) {
        tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
        rc = -1;
    }
    free(rk);
    /* one table of collective names for the job */
    tl_strtab all;
    tl_strtab_init(&all);
    for (size_t i = 0; i < n && rc == 0; i++)
        for (size_t k = 0; k < p.slots[i].r.ncoll; k++) {
            tl_coll *c = &p.slots[i].r.coll[k];
            const char *nm = tl_str(&p.slots[i].names, c->name);
            c->name = tl_intern(&all, nm, strlen(nm));
        }
    job->ranks = calloc(n, sizeof *job->ranks);
    if (!job->ranks && rc == 0) {
        tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
        rc = -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (job->ranks)
            job->ranks[i] = p.slots[i].r;
        else
            tl_rank_free(&p.slots[i].r);
        tl_strtab_free(&p.slots[i].names);
    }
    free(p.slots);
    job->n = job->ranks ? n : 0;
    if (job->n > 1)
        qsort(job->ranks, job->n, sizeof *job->ranks, rank_cmp);
    for (size_t i = 1; i < job->n && rc == 0; i++)
        if (job->ranks[i].rank == job->ranks[i - 1].rank) {
            tl_error_setc(err, TL_ERR_INPUT,
                          "two traces of rank %lld: %s and %s (pass the files of one window)",
                          (long long)job->ranks[i].rank, job->ranks[i - 1].path,
                          job->ranks[i].path);
            rc = -1;
        }
    job->nnames = all.count;
    job->names = calloc(all.count ? all.count : 1, sizeof *job->names);
    for (uint32_t k = 0; job->names && k < all.count; k++)
        job->names[k] = strdup(tl_str(&all, k));
    tl_strtab_free(&all);
    if (!job->names && rc == 0) {
        tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
        rc = -1;
    }
    if (rc != 0)
        tl_job_free(job);
    return rc;
}

void tl_job_free(tl_job *job)
{
    for (size_t i = 0; i < job->n; i++)
        tl_rank_free(&job->ranks[i]);
    free(job->ranks);
    for (size_t k = 0; job->names && k < job->nnames; k++)
        free(job->names[k]);
    free(job->names);
    memset(job, 0, sizeof *job);
}

/* ---- the job's tables ----------------------------------------------------------------------- */

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The median of v[0, n) (sorts v): the lower middle of an even count, a value some rank had. */
static int64_t median(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, i64_cmp);
    return n ? v[(n - 1) / 2] : 0;
}

/* One step number across ranks. */
typedef struct step_row {
    int64_t number, median;
    int nranks;
    int64_t slow_rank, slow, fast_rank, fast;
} step_row;

/* One (rank, step) pair. */
typedef struct rank_step {
    int64_t number, rank, dur;
} rank_step;

static int rank_step_cmp(const void *a, const void *b)
{
    const rank_step *x = a, *y = b;
    if (x->number != y->number)
        return x->number < y->number ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* One collective occurrence, for matching across ranks by (name, ordinal). */
typedef struct coll_at {
    uint32_t name, ordinal;
    int64_t rank, start, dur;
} coll_at;

static int coll_at_cmp(const void *a, const void *b)
{
    const coll_at *x = a, *y = b;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    if (x->ordinal != y->ordinal)
        return x->ordinal < y->ordinal ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

typedef struct coll_row {
    uint32_t name, ordinal;
    int nranks;
    int64_t skew, first_rank, last_rank, dur_min, dur_max;
} coll_row;

static int coll_row_cmp(const void *a, const void *b)
{
    const coll_row *x = a, *y = b;
    if (x->skew != y->skew)
        return x->skew > y->skew ? -1 : 1;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    return (x->ordinal > y->ordinal) - (x->ordinal < y->ordinal);
}

static double pct_over(int64_t v, int64_t base)
{
    return base > 0 ? 100.0 * (double)tl_sub_sat(v, base) / (double)base : 0.0;
}

enum { RK_RANK, RK_FILE, RK_STEPS, RK_AVG, RK_MAX, RK_COMP, RK_COMM, RK_EXPOSED, RK_SLOWEST, RK_N };
static const tl_col rank_cols[RK_N] = {
    [RK_RANK] = {"Rank", "rank", TL_COL_INT, 0},
    [RK_FILE] = {"File", "file", TL_COL_STR, 1},
    [RK_STEPS] = {"Steps", "steps", TL_COL_INT, 0},
    [RK_AVG] = {"Step avg", "step_avg_us", TL_COL_TIME, 0},
    [RK_MAX] = {"Step max", "step_max_us", TL_COL_TIME, 0},
    [RK_COMP] = {"Computation", "computation_us", TL_COL_TIME, 0},
    [RK_COMM] = {"Communication", "communication_us", TL_COL_TIME, 0},
    [RK_EXPOSED] = {"Exposed comm", "exposed_comm_us", TL_COL_TIME, 0},
    [RK_SLOWEST] = {"Slowest in", "slowest_steps", TL_COL_INT, 0},
};

enum { RS_RANK, RS_STEP, RS_TIME, RS_VS, RS_N };
static const tl_col rs_cols[RS_N] = {
    [RS_RANK] = {"Rank", "rank", TL_COL_INT, 0},
    [RS_STEP] = {"Step", "step", TL_COL_INT, 0},
    [RS_TIME] = {"Step time", "step_us", TL_COL_TIME, 0},
    [RS_VS] = {"vs median", "vs_median_pct", TL_COL_PCT, 0},
};

enum { ST_STEP, ST_RANKS, ST_MEDIAN, ST_FAST_R, ST_FAST, ST_SLOW_R, ST_SLOW, ST_OVER, ST_N };
static const tl_col st_cols[ST_N] = {
    [ST_STEP] = {"Step", "step", TL_COL_INT, 0},
    [ST_RANKS] = {"Ranks", "ranks", TL_COL_INT, 0},
    [ST_MEDIAN] = {"Median", "median_us", TL_COL_TIME, 0},
    [ST_FAST_R] = {"Fastest rank", "fastest_rank", TL_COL_INT, 0},
    [ST_FAST] = {"Fastest", "fastest_us", TL_COL_TIME, 0},
    [ST_SLOW_R] = {"Slowest rank", "slowest_rank", TL_COL_INT, 0},
    [ST_SLOW] = {"Slowest", "slowest_us", TL_COL_TIME, 0},
    [ST_OVER] = {"Over median", "over_median_pct", TL_COL_PCT, 0},
};

enum { CO_NAME, CO_CALL, CO_RANKS, CO_SKEW, CO_FIRST, CO_LAST, CO_DMIN, CO_DMAX, CO_N };
static const tl_col co_cols[CO_N] = {
    [CO_NAME] = {"Collective", "name", TL_COL_STR, 1},
    [CO_CALL] = {"Call", "call", TL_COL_INT, 0},
    [CO_RANKS] = {"Ranks", "ranks", TL_COL_INT, 0},
    [CO_SKEW] = {"Start skew", "start_skew_us", TL_COL_TIME, 0},
    [CO_FIRST] = {"First rank", "first_rank", TL_COL_INT, 0},
    [CO_LAST] = {"Last rank", "last_rank", TL_COL_INT, 0},
    [CO_DMIN] = {"Dur min", "dur_min_us", TL_COL_TIME, 0},
    [CO_DMAX] = {"Dur max", "dur_max_us", TL_COL_TIME, 0},
};

enum { JF_RANK, JF_FINDING, JF_STAKE, JF_EVIDENCE, JF_N };
static const tl_col jf_cols[JF_N] = {
    [JF_RANK] = {"#", "rank", TL_COL_INT, 0},
    [JF_FINDING] = {"Finding", "finding", TL_COL_STR, 1},
    [JF_STAKE] = {"Time at stake", "at_stake_us", TL_COL_TIME, 0},
    [JF_EVIDENCE] = {"Evidence", "evidence", TL_COL_STR, 1},
};

/* A rank is called the straggler when its steps are this much over the median, on average
 * over the steps in which it was the slowest. */
#define STRAGGLER_PCT 5.0

/* The index of rank in job->ranks (sorted by rank, ranks unique). */
static size_t rank_index(const tl_job *job, int64_t rank)
{
    size_t lo = 0, hi = job->n;
    while (lo + 1 < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (job->ranks[mid].rank <= rank)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

tl_table *tl_job_views(const tl_job *job, int top, tl_error *err)
{
    tl_table *ranks = tl_table_new("Ranks", "ranks", rank_cols, RK_N);
    tl_table *rs = tl_table_new("Step Time per Rank", "rank_steps", rs_cols, RS_N);
    tl_table *st = tl_table_new("Stragglers", "stragglers", st_cols, ST_N);
    tl_table *co = tl_table_new("Collectives across Ranks", "collectives", co_cols, CO_N);
    tl_table *jf = tl_table_new("Job Findings", "job_findings", jf_cols, JF_N);
    size_t npairs = 0, ncoll = 0;
    for (size_t i = 0; i < job->n; i++) {
        npairs += (size_t)job->ranks[i].nsteps;
        ncoll += job->ranks[i].ncoll;
    }
    rank_step *pairs = malloc((npairs ? npairs : 1) * sizeof *pairs);
    int64_t *durs = malloc((npairs ? npairs : 1) * sizeof *durs); /* a rank may repeat a number */
    step_row *steps = malloc((npairs ? npairs : 1) * sizeof *steps);
    coll_at *cat = malloc((ncoll ? ncoll : 1) * sizeof *cat);
    coll_row *crow = malloc((ncoll ? ncoll : 1) * sizeof *crow);
    int64_t *slowest = calloc(job->n ? job->n : 1, sizeof *slowest);
    int64_t *excess = calloc(job->n ? job->n : 1, sizeof *excess);
    int64_t *last_at = calloc(job->n ? job->n : 1, sizeof *last_at);
    if (!ranks || !rs || !st || !co || !jf || !pairs || !durs || !steps || !cat || !crow ||
        !slowest || !excess || !last_at)
        goto oom;
    ranks->next = rs;
    rs->next = st;
    st->next = co;
    co->next = jf;

    /* steps: by number across ranks */
    size_t k = 0;
    for (size_t i = 0; i < job->n; i++)
        for (int s = 0; s < job->ranks[i].nsteps; s++)
            pairs[k++] = (rank_step){job->ranks[i].step_num[s], job->ranks[i].rank,
                                     job->ranks[i].step_dur[s]};
    if (npairs > 1)
        qsort(pairs, npairs, sizeof *pairs, rank_step_cmp);
    size_t nsteps = 0;
    for (size_t a = 0; a < npairs;) {
        size_t b = a;
        while (b < npairs && pairs[b].number == pairs[a].number)
            b++;
        step_row *r = &steps[nsteps++];
        r->number = pairs[a].number;
        r->nranks = (int)(b - a);
        r->slow = INT64_MIN;
        r->fast = INT64_MAX;
        for (size_t j = a; j < b; j++) {
            durs[j - a] = pairs[j].dur;
            if (pairs[j].dur > r->slow)
                r->slow = pairs[j].dur, r->slow_rank = pairs[j].rank;
            if (pairs[j].dur < r->fast)
                r->fast = pairs[j].dur, r->fast_rank = pairs[j].rank;
        }
        r->median = median(durs, b - a);
        if (r->nranks > 1) {
            size_t ri = rank_index(job, r->slow_rank);
            slowest[ri]++;
            excess[ri] = tl_add_sat(excess[ri], tl_sub_sat(r->slow, r->median));
        }
        a = b;
    }

    /* ranks */
    if (tl_table_reserve(ranks, (int)job->n) != 0)
        goto oom;
    for (size_t i = 0; i < job->n; i++) {
        const tl_rank *r = &job->ranks[i];
        int row = tl_table_add_row(ranks);
        tl_table_int(ranks, row, RK_RANK, r->rank);
        tl_table_str(ranks, row, RK_FILE, r->path);
        tl_table_int(ranks, row, RK_STEPS, r->nsteps);
        if (r->nsteps) {
            int64_t sum = 0, mx = 0;
            for (int s = 0; s < r->nsteps; s++) {
                sum = tl_add_sat(sum, r->step_dur[s]);
                mx = r->step_dur[s] > mx ? r->step_dur[s] : mx;
            }
            tl_table_time(ranks, row, RK_AVG, sum / r->nsteps);
            tl_table_time(ranks, row, RK_MAX, mx);
        }
        if (r->has_gpu) {
            tl_table_time(ranks, row, RK_COMP, r->comp);
            tl_table_time(ranks, row, RK_COMM, r->comm);
            tl_table_time(ranks, row, RK_EXPOSED, r->exposed);
        }
        tl_table_int(ranks, row, RK_SLOWEST, slowest[i]);
    }
    tl_table_note(ranks,
                  "Computation and communication: GPU kernel time in the rank's steps, as the "
                  "distributed view counts it; exposed = communication with no computation "
                  "under it.");
    int unaligned = 0;
    for (size_t i = 0; i < job->n; i++)
        unaligned += !job->ranks[i].aligned;
    if (unaligned && unaligned < (int)job->n)
        tl_table_note(ranks,
                      "%d of %zu traces carry no offset to Unix time: their own clock is taken "
                      "as the job's, so collective skews across them may be off.",
                      unaligned, job->n);

    /* rank_steps, in rank order */
    for (size_t i = 0; i < job->n; i++) {
        const tl_rank *r = &job->ranks[i];
        for (int s = 0; s < r->nsteps; s++) {
            /* steps[] is sorted by number: binary search */
            size_t lo = 0, hi = nsteps;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (steps[mid].number < r->step_num[s])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            int64_t med = lo < nsteps ? steps[lo].median : 0;
            int row = tl_table_add_row(rs);
            if (row < 0)
                goto oom;
            tl_table_int(rs, row, RS_RANK, r->rank);
            tl_table_int(rs, row, RS_STEP, r->step_num[s]);
            tl_table_time(rs, row, RS_TIME, r->step_dur[s]);
            tl_table_pct(rs, row, RS_VS, pct_over(r->step_dur[s], med));
        }
    }
    if (top > 0 && rs->nrows > top) {
        tl_table_note(rs, "%d of %d rows; --format csv or json lists them all.", top, rs->nrows);
        tl_table_truncate(rs, top);
    }

    /* stragglers: the steps most over their median first */
    for (size_t q = 0; q < nsteps; q++) {
        const step_row *r = &steps[q];
        if (r->nranks < 2)
            continue;
        int row = tl_table_add_row(st);
        if (row < 0)
            goto oom;
        tl_table_int(st, row, ST_STEP, r->number);
        tl_table_int(st, row, ST_RANKS, r->nranks);
        tl_table_time(st, row, ST_MEDIAN, r->median);
        tl_table_int(st, row, ST_FAST_R, r->fast_rank);
        tl_table_time(st, row, ST_FAST, r->fast);
        tl_table_int(st, row, ST_SLOW_R, r->slow_rank);
        tl_table_time(st, row, ST_SLOW, r->slow);
        tl_table_pct(st, row, ST_OVER, pct_over(r->slow, r->median));
    }
    if (st->nrows == 0)
        tl_table_note(st, "No step that two ranks share (steps are matched by number).");
    tl_table_sort(st, ST_OVER, 1, 0);
    if (top > 0 && st->nrows > top)
        tl_table_truncate(st, top);

    /* collectives: matched by name and ordinal */
    k = 0;
    for (size_t i = 0; i < job->n; i++)
        for (size_t c = 0; c < job->ranks[i].ncoll; c++) {
            const tl_coll *x = &job->ranks[i].coll[c];
            cat[k++] = (coll_at){x->name, x->ordinal, job->ranks[i].rank, x->start, x->dur};
        }
    if (ncoll > 1)
        qsort(cat, ncoll, sizeof *cat, coll_at_cmp);
    size_t nrow = 0;
    for (size_t a = 0; a < ncoll;) {
        size_t b = a;
        while (b < ncoll && cat[b].name == cat[a].name && cat[b].ordinal == cat[a].ordinal)
            b++;
        if (b - a >= 2) {
            coll_row *r = &crow[nrow++];
            *r = (coll_row){cat[a].name, cat[a].ordinal, (int)(b - a), 0,
                            cat[a].rank, cat[a].rank,    cat[a].dur,   cat[a].dur};
            int64_t lo = cat[a].start, hi = cat[a].start;
            for (size_t j = a + 1; j < b; j++) {
                if (cat[j].start < lo)
                    lo = cat[j].start, r->first_rank = cat[j].rank;
                if (cat[j].start > hi)
                    hi = cat[j].start, r->last_rank = cat[j].rank;
                r->dur_min = cat[j].dur < r->dur_min ? cat[j].dur : r->dur_min;
                r->dur_max = cat[j].dur > r->dur_max ? cat[j].dur : r->dur_max;
            }
            r->skew = tl_sub_sat(hi, lo);
            last_at[rank_index(job, r->last_rank)]++;
        }
        a = b;
    }
    if (nrow > 1)
        qsort(crow, nrow, sizeof *crow, coll_row_cmp);
    for (size_t q = 0; q < nrow && (top <= 0 || q < (size_t)top); q++) {
        const coll_row *r = &crow[q];
        int row = tl_table_add_row(co);
        if (row < 0)
            goto oom;
        tl_table_str_ref(co, row, CO_NAME, job->names[r->name]);
        tl_table_int(co, row, CO_CALL, (int64_t)r->ordinal + 1);
        tl_table_int(co, row, CO_RANKS, r->nranks);
        tl_table_time(co, row, CO_SKEW, r->skew);
        tl_table_int(co, row, CO_FIRST, r->first_rank);
        tl_table_int(co, row, CO_LAST, r->last_rank);
        tl_table_time(co, row, CO_DMIN, r->dur_min);
        tl_table_time(co, row, CO_DMAX, r->dur_max);
    }
    if (nrow == 0)
        tl_table_note(co, "No collective that two ranks share (NCCL/RCCL kernels, or host "
                          "communication ranges, matched by name and call number).");
    else if (top > 0 && nrow > (size_t)top)
        tl_table_note(co, "%d of %zu collectives, largest skew first.", top, nrow);
    tl_table_note(co, "Start skew: the latest rank's start minus the earliest's, on the job's "
                      "clock; the other ranks wait that long for the last one.");

    /* findings */
    tl_table *fd = jf;
    size_t worst = 0;
    for (size_t i = 1; i < job->n; i++)
        if (slowest[i] > slowest[worst] ||
            (slowest[i] == slowest[worst] && excess[i] > excess[worst]))
            worst = i;
    int nf = 0;
    int nshared = 0;
    for (size_t q = 0; q < nsteps; q++)
        nshared += steps[q].nranks > 1;
    if (job->n > 1 && slowest[worst] > 0) {
        /* its mean margin over the median in the steps it was slowest */
        int64_t over_sum = 0, med_sum = 0;
        for (size_t q = 0; q < nsteps; q++)
            if (steps[q].nranks > 1 && steps[q].slow_rank == job->ranks[worst].rank) {
                over_sum = tl_add_sat(over_sum, tl_sub_sat(steps[q].slow, steps[q].median));
                med_sum = tl_add_sat(med_sum, steps[q].median);
            }
        double pct = med_sum > 0 ? 100.0 * (double)over_sum / (double)med_sum : 0;
        if (pct >= STRAGGLER_PCT) {
            int row = tl_table_add_row(fd);
            tl_table_int(fd, row, JF_RANK, ++nf);
            tl_table_strf(fd, row, JF_FINDING,
                          "rank %lld is the straggler: %.1f%% over the median step",
                          (long long)job->ranks[worst].rank, pct);
            tl_table_time(fd, row, JF_STAKE, over_sum);
            tl_table_strf(fd, row, JF_EVIDENCE,
                          "slowest in %lld of %d steps; the other ranks wait for it",
                          (long long)slowest[worst], nshared);
        }
    }
    if (nrow > 0) {
        const coll_row *r = &crow[0];
        size_t li = rank_index(job, r->last_rank);
        int64_t med_step = 0;
        for (size_t q = 0; q < nsteps; q++)
            med_step = steps[q].median > med_step ? steps[q].median : med_step;
        if (med_step == 0 || r->skew >= med_step / 100) { /* >= 1% of a step */
            int row = tl_table_add_row(fd);
            tl_table_int(fd, row, JF_RANK, ++nf);
            tl_table_strf(fd, row, JF_FINDING, "ranks wait for rank %lld at %s (call %u)",
                          (long long)r->last_rank, job->names[r->name], r->ordinal + 1);
            tl_table_time(fd, row, JF_STAKE, r->skew);
            tl_table_strf(fd, row, JF_EVIDENCE, "it arrives last at %lld of %zu collectives",
                          (long long)last_at[li], nrow);
        }
    }
    if (nf == 0)
        tl_table_note(fd,
                      "No straggler: no rank is %.0f%% over the median step, and no "
                      "collective waits 1%% of a step for a rank.",
                      STRAGGLER_PCT);
    tl_table *result = ranks;
    goto out;
oom:
    tl_error_setc(err, TL_ERR_NOMEM, "job: out of memory");
    result = NULL;
    if (ranks && ranks->next) { /* chained: one free frees them all */
        tl_table_free(ranks);
    } else {
        tl_table_free(ranks);
        tl_table_free(rs);
        tl_table_free(st);
        tl_table_free(co);
        tl_table_free(jf);
    }
out:
    free(pairs);
    free(durs);
    free(steps);
    free(cat);
    free(crow);
    free(slowest);
    free(excess);
    free(last_at);
    return result;
}
