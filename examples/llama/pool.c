/*
 * pool.c — a persistent thread pool with one generation counter (see pool.h).
 *
 * pool_run publishes (fn, ctx, ntasks), bumps the generation (release) and wakes sleepers;
 * every participant then takes task indices from an atomic counter until none is left, and the
 * last worker to finish tells the caller. Workers that wake after the tasks are gone just wait
 * for the next generation, so a slow wake-up costs nothing but that thread's share.
 *
 * Waiting spins for a short while (SPIN_NS) before sleeping on a condition variable, as OpenMP
 * runtimes do: the gaps between two products of a layer are tens to hundreds of microseconds,
 * and waking a sleeping thread on a VM costs about that much again (and varies a lot), which
 * would make every step's time depend on the scheduler. Longer gaps (the dataloader, the
 * cross-entropy) end in a sleep, so an idle pool burns no CPU.
 */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tally.h>

#define SPIN_NS 200000 /* how long a waiter spins before it sleeps */

typedef struct worker {
    pool *p;
    int index; /* 1 .. n-1; the caller is 0 */
    pthread_t th;
    char name[32];
    unsigned named_epoch; /* rename epoch this thread last named itself in */
} worker;

struct pool {
    int n;
    worker *w;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_ulong gen; /* bumped by every run (release: fn, ctx, ntasks are published) */
    atomic_int busy;  /* workers still inside the current run */
    atomic_int next;  /* next task index to hand out */
    atomic_int stop;
    atomic_uint rename_epoch;
    pool_fn fn;
    void *ctx;
    int ntasks;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void take_tasks(pool *p, pool_fn fn, void *ctx, int ntasks, int thread)
{
    for (;;) {
        int t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (t >= ntasks)
            break;
        fn(ctx, t, thread);
    }
}

/* Wait until gen differs from seen (or stop); returns the new generation. */
static unsigned long wait_gen(pool *p, unsigned long seen)
{
    unsigned long g;
    int64_t t0 = 0;
    for (int i = 0;; i++) {
        g = atomic_load_explicit(&p->gen, memory_order_acquire);
        if (g != seen || atomic_load_explicit(&p->stop, memory_order_relaxed))
            return g;
        if ((i & 63) == 0) {
            int64_t t = now_ns();
            if (!t0)
                t0 = t;
            else if (t - t0 > SPIN_NS)
                break;
        }
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen &&
           !atomic_load_explicit(&p->stop, memory_order_relaxed))
        pthread_cond_wait(&p->wake, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return g;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pool *p = w->p;
    unsigned long seen = 0;
    for (;;) {
        seen = wait_gen(p, seen);
        if (atomic_load_explicit(&p->stop, memory_order_relaxed))
            break;
        unsigned epoch = atomic_load_explicit(&p->rename_epoch, memory_order_relaxed);
        if (epoch != w->named_epoch) {
            w->named_epoch = epoch;
            TALLY_THREAD_NAME(w->name);
        }
        take_tasks(p, p->fn, p->ctx, p->ntasks, w->index);
        if (atomic_fetch_sub_explicit(&p->busy, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu); /* the caller may be asleep on done */
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

pool *pool_create(int nthreads)
{
    if (nthreads < 1)
        nthreads = 1;
    pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = nthreads;
    p->w = calloc((size_t)nthreads, sizeof *p->w);
    if (!p->w) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->busy, 0);
    atomic_init(&p->next, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->rename_epoch, 1);
    for (int i = 1; i < nthreads; i++) {
        worker *w = &p->w[i];
        w->p = p;
        w->index = i;
        snprintf(w->name, sizeof w->name, "llama-worker-%d", i);
        if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
            p->n = i; /* run with the threads that did start */
            break;
        }
    }
    return p;
}

void pool_destroy(pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->w[i].th, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->w);
    free(p);
}

int pool_threads(const pool *p)
{
    return p->n;
}

void pool_rename(pool *p)
{
    atomic_fetch_add_explicit(&p->rename_epoch, 1, memory_order_relaxed);
}

void pool_run(pool *p, pool_fn fn, void *ctx, int ntasks)
{
    if (ntasks <= 0)
        return;
    if (p->n == 1 || ntasks == 1) {
        for (int t = 0; t < ntasks; t++)
            fn(ctx, t, 0);
        return;
    }
    /* every worker finished the previous run (busy reached 0), so nobody reads these now */
    p->fn = fn;
    p->ctx = ctx;
    p->ntasks = ntasks;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->busy, p->n - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_mutex_lock(&p->mu); /* wake the workers that went to sleep */
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    take_tasks(p, fn, ctx, ntasks, 0);

    int64_t t0 = now_ns();
    for (int i = 0; atomic_load_explicit(&p->busy, memory_order_acquire) > 0; i++) {
        if ((i & 63) == 0 && now_ns() - t0 > SPIN_NS) {
            pthread_mutex_lock(&p->mu);
            while (atomic_load_explicit(&p->busy, memory_order_acquire) > 0)
                pthread_cond_wait(&p->done, &p->mu);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        cpu_relax();
    }
}
