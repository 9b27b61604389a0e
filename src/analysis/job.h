/*
 * job.h — a training job read as one: the traces of its ranks (a folder tree or a list of
 * files), each loaded in its own thread and reduced to a summary, then compared.
 *
 * A rank's summary is what the job views need and nothing more: its steps (number, start on
 * the job's clock, duration), its communication against computation (tl_comm, the distributed
 * view's definitions), and the start and duration of each of its collectives. The trace itself
 * is freed as soon as its summary is made, so a job of N ranks holds N summaries and at most
 * one trace per thread.
 *
 * The job's clock: a trace that knows its offset to Unix time (Kineto's baseTimeNanoseconds,
 * tally's wall-clock offset: tl_trace.wall_offset) is moved onto it; a trace that does not
 * (older Kineto writes Unix-epoch microseconds already) is taken as it is.
 *
 * Which rank a trace is: the rank it says (distributedInfo, a .tally file recorded under RANK),
 * else a number after "rank" in its file or folder name ("rank-3", "rank3_dp0_tp0_pp0"), else
 * its place in the sorted list of files. Two traces of one rank are an error.
 */
#ifndef TALLY_ANALYSIS_JOB_H
#define TALLY_ANALYSIS_JOB_H

#include "report/table.h"
#include "trace/model.h"

#include <stddef.h>
#include <stdint.h>

/* One collective as one rank ran it: the n-th (ordinal) call of that name on that rank. */
typedef struct tl_coll {
    uint32_t name; /* index into the job's collective names (tl_job.names) */
    uint32_t ordinal;
    int64_t start, dur; /* ns, job clock */
} tl_coll;

typedef struct tl_rank {
    int64_t rank;
    char *path;
    const char *rank_from; /* "trace", "file name", "order" */
    int aligned;           /* its clock was moved to Unix time (wall_offset known) */
    int nsteps;
    int64_t *step_num, *step_start, *step_dur; /* job clock, ns */
    int64_t comm, comp, exposed, host_comm, window;
    int has_gpu;
    tl_coll *coll;
    size_t ncoll;
} tl_rank;

typedef struct tl_job {
    tl_rank *ranks; /* sorted by rank */
    size_t n;
    char **names; /* collective names */
    size_t nnames;
    int threads; /* threads that read the ranks */
} tl_job;

/* The trace files named by args (files, or folders searched recursively for *.json,
 * *.json.gz and *.tally), sorted; *out is malloc'd, its strings too (tl_job_paths_free).
 * 0, or -1 with err set (a missing path, no trace in a folder). */
int tl_job_paths(const char *const *args, int nargs, char ***out, size_t *n, tl_error *err);
void tl_job_paths_free(char **paths, size_t n);

/* Read every path with up to `threads` threads (<= 0: tl_default_threads) and summarise each
 * rank. progress: a line on stderr as ranks are read. 0, or -1 with err set (a file that does
 * not load names itself; two traces of one rank). */
int tl_job_load(tl_job *job, char *const *paths, size_t n, int threads, int progress,
                tl_error *err);
void tl_job_free(tl_job *job);

/* The job's tables, in this order (a chain, tl_table_free frees it):
 *   ranks        per rank: steps, mean and max step, communication, computation, exposed
 *                communication, steps in which it was the slowest
 *   rank_steps   per rank and step: the step time and how far it is from the step's median
 *   stragglers   per step: the median over ranks, the slowest rank and its margin
 *   collectives  per collective (name and ordinal, matched across ranks): the spread of its
 *                start over ranks (skew), the first and the last rank to arrive
 *   job_findings what to look at first
 * top > 0 keeps that many rows of rank_steps, stragglers and collectives (text: the CLI
 * passes 20). NULL with err set when out of memory. */
tl_table *tl_job_views(const tl_job *job, int top, tl_error *err);

/* Free what a rank holds (its path, steps, collectives). */
void tl_rank_free(tl_rank *r);

/* ---- map and merge (job_summary.c) ----
 * A job's JSON report starts with a member "job_summary": every rank's summary, from which
 * `tally report node0.json node1.json ...` makes the job's tables without the traces. */

/* The summaries of job as JSON text (malloc'd; NULL when out of memory). */
char *tl_job_summary_json(const tl_job *job);
/* 1 when path is a JSON job report (its first member is "job_summary"). */
int tl_job_is_summary(const char *path);
/* Read the summaries of such a report: *ranks (their collectives' names index *names). 0, or
 * -1 with err set ("FILE: offset N: expected ..."). */
int tl_job_summary_read(const char *path, tl_rank **ranks, size_t *nranks, char ***names,
                        size_t *nnames, tl_error *err);

/* The rank of trace t read from path: the one it carries, else the one its path gives, else -1
 * (the caller numbers those after the others, in file order); *from says which ("trace",
 * "file name", "order"). */
int64_t tl_job_trace_rank(const tl_trace *t, const char *path, const char **from);

/* Number the ranks nothing names (-1): after the largest named one, in their order. */
void tl_job_number_ranks(int64_t *rank, size_t n);

/* The rank a file name gives ("rank3", "rank-3", "rank_3" in its last two path components, any
 * case), or -1. */
int64_t tl_rank_from_path(const char *path);

#endif
