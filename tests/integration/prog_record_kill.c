/*
 * prog_record_kill.c — records without end on two threads until it is killed; used by
 * record_kill.sh to check that a .tally file survives kill -9 (readable up to its last complete
 * buffer) and SIGTERM (flushed by the handler, then the default action).
 *
 *   prog_record_kill DIR   records into DIR/kill.tally, creates DIR/ready once buffers have
 *                          been written, then keeps recording
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tally.h>

static void *spin(void *arg)
{
    (void)arg;
    tally_thread_name("spinner");
    for (unsigned long i = 0;; i++) {
        TALLY_SCOPE("spin", TALLY_OPERATOR)
        {
            TALLY_SCOPE("inner", TALLY_USER) {}
        }
        if (i % 50 == 0)
            usleep(1000); /* a few MB/s of trace: many buffers, a small file */
    }
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: prog_record_kill DIR\n");
        return 2;
    }
    tally_config c;
    memset(&c, 0, sizeof c);
    c.output_dir = argv[1];
    c.name = "kill";
    c.buffer_size = 64 * 1024;
    c.quiet = 1;
    c.write = TALLY_WRITE_TALLY;
    int rc = tally_start(&c);
    if (rc != 0) {
        fprintf(stderr, "prog_record_kill: tally_start: %s\n", tally_strerror(rc));
        return 1;
    }
    pthread_t th;
    pthread_create(&th, NULL, spin, NULL);
    double t0 = now_s();
    int announced = 0;
    for (unsigned long i = 0;; i++) {
        TALLY_SCOPE("main", TALLY_FORWARD) {}
        if (i % 50 == 0)
            usleep(1000);
        if (i % 1000 == 0) {
            tally_step(1);
            if (!announced && now_s() - t0 > 0.3) {
                char path[4096];
                snprintf(path, sizeof path, "%s/ready", argv[1]);
                FILE *f = fopen(path, "w");
                if (f)
                    fclose(f);
                announced = 1;
            }
        }
    }
}
