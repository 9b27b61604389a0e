/*
 * bench_export.c — how fast the Chrome trace writer runs: a synthetic trace with a realistic
 * mix (steps, forward/backward ranges, operators with input shapes, launches, kernels, copies,
 * counters) is written to /tmp as .json and as .json.gz three times each; the figures are MB/s
 * of uncompressed output (median of 3). It also deflates the first 64 MB of the .json with zlib
 * at levels 1, 3 and 6 to show what each level costs and saves. Files are removed at the end.
 *
 *   bench_export [--events N]   (default 2000000)
 */
#include "trace/model.h"

#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t S(tl_trace *t, const char *s)
{
    return tl_intern(&t->strings, s, strlen(s));
}

static void build(tl_trace *t, size_t target)
{
    static const char *ops[] = {"aten::linear", "aten::matmul",  "aten::add",      "aten::mul",
                                "aten::silu",   "aten::softmax", "aten::rms_norm", "aten::copy_"};
    static const char *kernels[] = {
        "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float>",
        "ampere_sgemm_128x64_nn", "void at::native::reduce_kernel<512, 1>"};
    static const char *shapes[] = {"[[8, 512, 4096], [4096, 4096]]", "[[8, 512, 4096], [4096]]",
                                   "[[8, 32, 512, 512]]", "[[8, 512, 11008], [8, 512, 11008]]"};
    tl_trace_init(t);
    t->rank = 0;
    t->world_size = 1;
    tl_device *d = tl_trace_device(t, 0);
    d->name = S(t, "NVIDIA H100 80GB HBM3");
    uint32_t host = tl_trace_track(t, TL_TRACK_THREAD, 4242, 4242, -1);
    uint32_t loader = tl_trace_track(t, TL_TRACK_THREAD, 4242, 4250, -1);
    uint32_t s7 = tl_trace_track(t, TL_TRACK_STREAM, 4242, 7, 0);
    uint32_t s13 = tl_trace_track(t, TL_TRACK_STREAM, 4242, 13, 0);
    uint32_t nops[8], nk[5], nsh[4];
    for (int i = 0; i < 8; i++)
        nops[i] = S(t, ops[i]);
    for (int i = 0; i < 5; i++)
        nk[i] = S(t, kernels[i]);
    for (int i = 0; i < 4; i++)
        nsh[i] = S(t, shapes[i]);
    uint32_t launch = S(t, "cudaLaunchKernel"), mcpy = S(t, "cudaMemcpyAsync");
    uint32_t fwd = S(t, "forward"), bwd = S(t, "backward"), loss = S(t, "loss");
    uint32_t batch = S(t, "dataloader: next batch");
    int64_t ts = 1700000000000000000LL % 1000000000000LL, corr = 1;
    char step[32];
    for (int s = 0; t->nev < target; s++) {
        int64_t step_t0 = ts;
        snprintf(step, sizeof step, "ProfilerStep#%d", s);
        size_t step_ix = t->nev;
        bench_event(t, host, TL_CAT_STEP, S(t, step), ts, 0)->value = s;
        bench_event(t, loader, TL_CAT_DATALOADER, batch, ts + 100, 90000);
        for (int phase = 0; phase < 2; phase++) {
            size_t ph_ix = t->nev;
            int64_t ph0 = ts;
            bench_event(t, host, phase ? TL_CAT_BACKWARD : TL_CAT_FORWARD, phase ? bwd : fwd, ts,
                        0);
            for (int o = 0; o < 500; o++) {
                int k = (o * 7 + s) % 8;
                tl_event *op =
                    bench_event(t, host, TL_CAT_OPERATOR, nops[k], ts + 300, 9871 + o % 13);
                op->args = nsh[o % 4];
                int64_t lt = ts + 1200 + o % 100;
                bench_event(t, host, TL_CAT_RUNTIME, o % 50 ? launch : mcpy, lt, 4123)->corr = corr;
                if (o % 50) {
                    bench_event(t, (o & 1) ? s7 : s13, TL_CAT_KERNEL, nk[o % 5], lt + 20000,
                                15337 + o)
                        ->corr = corr;
                } else {
                    tl_event *c = bench_event(t, s7, TL_CAT_MEMCPY, 0, lt + 20000, 2000);
                    c->corr = corr;
                    c->copy = TL_COPY_HTOD;
                    c->flags = TL_EV_PAGEABLE;
                    c->value = 8 << 20;
                }
                corr++;
                ts += 11000;
            }
            t->ev[ph_ix].dur = ts - ph0;
        }
        bench_event(t, host, TL_CAT_COUNTER, loss, ts, 0)->value = 2000 + s;
        t->ev[step_ix].dur = ts - step_t0 + 100;
        ts += 1000;
    }
    tl_trace_finish(t);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median3(double *v)
{
    qsort(v, 3, sizeof *v, cmp_double);
    return v[1];
}

static long long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

static void deflate_levels(const char *json_path)
{
    FILE *f = fopen(json_path, "rb");
    if (!f)
        return;
    size_t cap = 64u << 20;
    unsigned char *in = malloc(cap);
    size_t n = in ? fread(in, 1, cap, f) : 0;
    fclose(f);
    uLong bound = compressBound((uLong)n);
    unsigned char *out = malloc(bound);
    if (!in || !out) {
        free(in);
        free(out);
        return;
    }
    int levels[] = {1, 3, 6};
    for (int i = 0; i < 3; i++) {
        uLongf olen = bound;
        double t0 = now();
        int rc = compress2(out, &olen, in, (uLong)n, levels[i]);
        double dt = now() - t0;
        if (rc == Z_OK)
            printf("deflate level %d on %.0f MB: %.0f MB/s in, ratio %.1fx\n", levels[i],
                   (double)n / 1e6, (double)n / 1e6 / dt, (double)n / (double)olen);
    }
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    size_t target = 2000000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--events") && i + 1 < argc)
            target = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_export [--events N]\n");
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    tl_trace t;
    double t0 = now();
    build(&t, target);
    fprintf(stderr, "bench_export: built %zu events in %.2f s\n", t.nev, now() - t0);
    char pj[64], pg[64];
    snprintf(pj, sizeof pj, "/tmp/bench_export_%d.json", (int)getpid());
    snprintf(pg, sizeof pg, "/tmp/bench_export_%d.json.gz", (int)getpid());
    tl_error err = {0};
    double tj[3], tg[3];
    for (int r = 0; r < 3; r++) {
        double a = now();
        if (tl_write_chrome(&t, pj, &err) != 0) {
            fprintf(stderr, "bench_export: %s\n", err.msg);
            return 1;
        }
        tj[r] = now() - a;
        a = now();
        if (tl_write_chrome(&t, pg, &err) != 0) {
            fprintf(stderr, "bench_export: %s\n", err.msg);
            return 1;
        }
        tg[r] = now() - a;
    }
    long long js = file_size(pj), gs = file_size(pg);
    double mj = median3(tj), mg = median3(tg);
    printf("events %zu, json %.1f MB, gz %.1f MB (%.1fx)\n", t.nev, (double)js / 1e6,
           (double)gs / 1e6, (double)js / (double)gs);
    printf(".json    : %.3f s median of 3, %.0f MB/s\n", mj, (double)js / 1e6 / mj);
    printf(".json.gz : %.3f s median of 3, %.0f MB/s of uncompressed output\n", mg,
           (double)js / 1e6 / mg);
    deflate_levels(pj);
    unlink(pj);
    unlink(pg);
    tl_trace_free(&t);
    return 0;
}
