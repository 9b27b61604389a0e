/*
 * pool.h — the workload's persistent thread pool.
 *
 * pool_run(p, fn, ctx, ntasks) runs fn(ctx, task, thread) for task = 0 .. ntasks-1 on the pool's
 * threads and the calling thread, and returns when all are done. Tasks are handed out through
 * one atomic counter, so a worker that wakes late simply gets fewer of them. Workers sleep on a
 * condition variable between runs (this machine has 2 cores: spinning would steal them).
 * One caller at a time.
 */
#ifndef TALLY_LLAMA_POOL_H
#define TALLY_LLAMA_POOL_H

typedef void (*pool_fn)(void *ctx, int task, int thread);

typedef struct pool pool;

/* nthreads counts the caller: nthreads - 1 threads are started. NULL when out of resources. */
pool *pool_create(int nthreads);
void pool_destroy(pool *p);
int pool_threads(const pool *p);
void pool_run(pool *p, pool_fn fn, void *ctx, int ntasks);
/* Each worker names itself in the trace (TALLY_THREAD_NAME) at its next wake-up. */
void pool_rename(pool *p);

#endif
