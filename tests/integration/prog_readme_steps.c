/*
 * prog_readme_steps.c — the README's "Profile your own program" loop, as written there: 10
 * steps of load / forward / backward / optimizer ranges, each closed by tally_step(batch_size),
 * then tally_stop. Each phase busy-waits a fixed time so that a step lasts about 2 ms. Used by
 * steps_agree.sh: every view must count 10 steps (the span tally_stop closes after the last
 * tally_step is no step) and agree on their average.
 *
 * usage: prog_readme_steps   (settings from TALLY_* variables: TALLY_OUTPUT_DIR, TALLY_NAME)
 */
#include <tally.h>

#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void spin_us(double us)
{
    double a = now_us();
    while (now_us() - a < us) {
    }
}

static void next_batch(void)
{
    spin_us(200);
}
static void forward(void)
{
    spin_us(600);
}
static void backward(void)
{
    spin_us(900);
}
static void step(void)
{
    spin_us(300);
}

int main(void)
{
    const int steps = 10, batch_size = 32;
    if (tally_start(NULL) != 0)
        return 1;
    for (int i = 0; i < steps; i++) {
        TALLY_SCOPE("load", TALLY_DATALOADER)
        {
            next_batch();
        }
        TALLY_SCOPE("forward", TALLY_FORWARD)
        {
            forward();
        }
        TALLY_SCOPE("backward", TALLY_BACKWARD)
        {
            backward();
        }
        TALLY_SCOPE("optimizer", TALLY_OPTIMIZER)
        {
            step();
        }
        tally_step(batch_size);
    }
    return tally_stop() == 0 ? 0 : 1;
}
