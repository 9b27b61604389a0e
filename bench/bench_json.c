/*
 * bench_json.c — how fast tally reads a PyTorch profiler (Kineto) JSON trace and prints its
 * default report, and how much memory that takes.
 *
 *   bench_json gen OUT.json [--mb N] [--seed S]
 *       Write a realistic Kineto trace of about N MB (default 1024): a Llama-style decoder
 *       (32 layers, bf16; fewer below ~18 MB) trained with gradient accumulation and DDP on
 *       8 GPUs, profiled with record_shapes, profile_memory and with_stack. The file has
 *       Kineto's shape and field order: the object form with schemaVersion, deviceProperties,
 *       distributedInfo, then traceEvents (first the host events grouped by thread —
 *       python_function, cpu_op, user_annotation, [memory] instants, fwdbwd flows — then
 *       runtime calls, kernels, copies, memsets, gpu_user_annotation and ac2g flows in launch
 *       order, then the M metadata and the "PyTorch Profiler" span), then traceName,
 *       displayTimeUnit and baseTimeNanoseconds last, as Kineto writes them. Timestamps are
 *       fractional microseconds ("ts": 1234.567). Deterministic for a given seed and size (only
 *       traceName, the file's name, differs between two outputs). Prints the number of events
 *       of each kind and how many of them the reader should keep as model events.
 *
 *   bench_json read FILE [--repeat K] [--expect N] [--threads T] [--no-progress] [--oneline]
 *       Time tl_load (what `tally report FILE` calls; it includes tl_trace_finish) and the
 *       default report (tl_report_write, all views, text) written to /dev/null, both with
 *       --threads T (default 1; 0 = the cores).
 *       Prints the file size (uncompressed size for .gz), seconds for load and for report,
 *       MB/s of the whole, events loaded (by category), peak RSS (ru_maxrss) and its ratio to
 *       the JSON's size. With --repeat K > 1 the times are medians over K runs; peak RSS is the
 *       one after the first run. --expect N: exit 1 unless N events were loaded.
 *
 *       --threads T sets tl_trace.read_threads (0: all cores); --oneline prints only
 *       "read WALL USER SYS EVENTS BYTES" (for scale).
 *
 *   bench_json scale [--dir D] [--sizes 10,100,1024,2048] [--threads 1,2,0] [--repeat K]
 *                    [--no-python] [--python-max-gb G]
 *       How the cost grows with the size: for each size N, D/kineto_<N>mb.json (written by gen
 *       when absent, kept for the next run), each thread count run as `bench_json read` in a
 *       fresh child (so that each case's peak RSS is its own, from wait4), then Python's
 *       json.load of the same file, timed here. K rounds, each running every case once (sizes
 *       small first), and medians over the rounds: MB/s, CPU ms per MB (user + sys around load
 *       and report, in the child), its change from the smallest size, and peak RSS over the
 *       file's size. Python is skipped for a size where the largest RSS ratio it showed on a
 *       smaller one says it would need more than G GB (default 12). Prints the load average
 *       before and after.
 *
 * gen prints a progress line on stderr when it runs for more than a second; read passes
 * progress = 1 to tl_load as `tally report` does, so the reader's own progress line shows
 * (--no-progress turns it off).
 */
#include "report/summary.h"
#include "trace/model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "bench_json: out of memory\n");
        exit(1);
    }
    return q;
}

/* =============================================================================================
 * Output: a big buffer, raw write(2), a progress line.
 */

typedef struct wr {
    int fd; /* -1: count bytes only */
    char *buf;
    size_t n, cap;
    uint64_t total;  /* bytes flushed */
    uint64_t target; /* for the progress line; 0 = no progress line */
    double t0, tlast;
    int shown;
    const char *what;
} wr;

#define WR_CAP   (8u << 20)
#define WR_SLACK (64u << 10) /* the most one event can take */

static void wr_flush(wr *w)
{
    if (w->fd >= 0) {
        size_t off = 0;
        while (off < w->n) {
            ssize_t k = write(w->fd, w->buf + off, w->n - off);
            if (k < 0) {
                if (errno == EINTR)
                    continue;
                fprintf(stderr, "bench_json: write error: %s\n", strerror(errno));
                exit(1);
            }
            off += (size_t)k;
        }
    }
    w->total += w->n;
    w->n = 0;
    if (w->target) {
        double t = now_s();
        if (t - w->t0 >= 1.0 && t - w->tlast >= 0.5) {
            w->tlast = t;
            w->shown = 1;
            fprintf(stderr, "\r%s: %.0f of ~%.0f MB (%.0f MB/s)   ", w->what,
                    (double)w->total / 1e6, (double)w->target / 1e6,
                    (double)w->total / 1e6 / (t - w->t0));
            fflush(stderr);
        }
    }
}

/* A pointer with room for one event; give the end back with wr_done. */
static inline char *wr_at(wr *w)
{
    if (w->cap - w->n < WR_SLACK)
        wr_flush(w);
    return w->buf + w->n;
}

static inline void wr_done(wr *w, char *p)
{
    w->n = (size_t)(p - w->buf);
}

static inline char *put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}
#define PUTL(p, lit) put((p), (lit), sizeof(lit) - 1)

static inline char *put_s(char *p, const char *s)
{
    return put(p, s, strlen(s));
}

static inline char *put_u(char *p, uint64_t v)
{
    char tmp[24];
    int i = 24;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return put(p, tmp + i, (size_t)(24 - i));
}

static inline char *put_i(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u(p, (uint64_t)0 - (uint64_t)v);
    }
    return put_u(p, (uint64_t)v);
}

/* ns as Kineto writes microseconds: "1234567.891" */
static inline char *put_us(char *p, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    p = put_u(p, (uint64_t)(ns / 1000));
    int f = (int)(ns % 1000);
    p[0] = '.';
    p[1] = (char)('0' + f / 100);
    p[2] = (char)('0' + f / 10 % 10);
    p[3] = (char)('0' + f % 10);
    return p + 4;
}

static char *put_fmt(char *p, const char *fmt, double v)
{
    return p + snprintf(p, 40, fmt, v);
}

/* =============================================================================================
 * Model of the profiled program.
 */

#define PID          3712045
#define TID_MAIN     3712045
#define TID_AUTOGRAD 3712310
#define TID_PIN      3712298
#define NTHR         3
enum { T_MAIN, T_AUTOGRAD, T_PIN };
static const int64_t thr_tid[NTHR] = {TID_MAIN, TID_AUTOGRAD, TID_PIN};
static const char *const thr_name[NTHR] = {"pt_main_thread", "pt_autograd_0", "python3"};

#define NSTREAM 2
enum { ST_COMPUTE, ST_NCCL };
static const int stream_id[NSTREAM] = {7, 20};

#define NLAYERS 32 /* decoder layers; fewer for traces smaller than one step */
static int nlayers = NLAYERS;
#define WORLD   8
#define BASE_NS 1735689600000000000LL /* baseTimeNanoseconds */
#define T0_NS   4458676388068751LL    /* first timestamp, ns (Kineto's ts are relative) */

/* What a record is; the first group is written with the host threads, the second after them. */
enum kind {
    E_PY,    /* python_function */
    E_OP,    /* cpu_op */
    E_USER,  /* user_annotation */
    E_MEM,   /* [memory] instant */
    E_FB_S,  /* fwdbwd flow start (forward op) */
    E_FB_F,  /* fwdbwd flow end (backward node) */
    E_RT,    /* cuda_runtime */
    E_KER,   /* kernel */
    E_CPY,   /* gpu_memcpy */
    E_SET,   /* gpu_memset */
    E_GUSER, /* gpu_user_annotation */
    E_AC_S,  /* ac2g flow start on the host */
    E_AC_FD, /* ac2g flow end on the device */
    E_AC_FH, /* ac2g flow end on the host (runtime calls with no device work) */
    E_NKIND
};
static const char *const kind_name[E_NKIND] = {
    "python_function", "cpu_op",       "user_annotation",     "[memory]",
    "fwdbwd s",        "fwdbwd f",     "cuda_runtime",        "kernel",
    "gpu_memcpy",      "gpu_memset",   "gpu_user_annotation", "ac2g s",
    "ac2g f (device)", "ac2g f (host)"};

enum { F_SEQ = 1, F_FWD1 = 2, F_COMMS = 4 };

typedef struct rec {
    int64_t ts, dur; /* ns */
    const char *name;
    int64_t id;   /* External id; Python id (py); flow id (fwdbwd) */
    int64_t id2;  /* correlation; Python parent id (py, -1 = null); Sequence number (op) */
    int64_t v[4]; /* op/user: record function id; mem: bytes, addr, allocated, reserved;
                     copies: bytes; nccl kernel: elements */
    int32_t aux;  /* op: signature (-1 none); kernel: kernel index; runtime: cbid */
    uint8_t kind, thr, stream, flags;
} rec;

/* ---- kernels ------------------------------------------------------------------------------ */

typedef struct kdesc {
    const char *name;
    int regs, smem;
    int grid[3], block[3];
} kdesc;

enum {
    K_GEMM,
    K_GEMM_MLP,
    K_GEMM_LM,
    K_GEMM_DGRAD,
    K_GEMM_WGRAD,
    K_MUL,
    K_ADD,
    K_POW,
    K_MEAN,
    K_RSQRT,
    K_COPY,
    K_SILU,
    K_NEG,
    K_CAT,
    K_FLASH_FWD,
    K_FLASH_BWD_DOT,
    K_FLASH_BWD,
    K_FLASH_BWD_CVT,
    K_INDEX,
    K_EMB_BWD,
    K_LSM,
    K_NLL,
    K_LSM_BWD,
    K_NLL_BWD,
    K_FILL,
    K_SUM,
    K_DIV,
    K_SILU_BWD,
    K_ADD_ACC,
    K_MTA_ADD,
    K_MTA_LERP,
    K_MTA_MUL,
    K_MTA_ADDCMUL,
    K_MTA_SQRT,
    K_MTA_DIV,
    K_MTA_ADDCDIV,
    K_NCCL,
    K_COUNT
};

static const kdesc kernels[K_COUNT] = {
    [K_GEMM] = {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
                "execute_segment_k_off_kernel__5x_cublas",
                168,
                213008,
                {32, 32, 1},
                {384, 1, 1}},
    [K_GEMM_MLP] = {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_"
                    "warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
                    168,
                    213008,
                    {86, 16, 1},
                    {384, 1, 1}},
    [K_GEMM_LM] =
        {"void "
         "cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8>("
         "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8::Params)",
         230,
         98304,
         {250, 16, 1},
         {256, 1, 1}},
    [K_GEMM_DGRAD] = {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_"
                      "warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
                      168,
                      213008,
                      {16, 32, 1},
                      {384, 1, 1}},
    [K_GEMM_WGRAD] = {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_"
                      "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                      168,
                      213008,
                      {32, 32, 1},
                      {384, 1, 1}},
    [K_MUL] = {"void at::native::vectorized_elementwise_kernel<4, "
               "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
               "at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> "
               ">(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
               "at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)",
               28,
               0,
               {16384, 1, 1},
               {128, 1, 1}},
    [K_ADD] = {"void at::native::vectorized_elementwise_kernel<4, "
               "at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, "
               "at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
               26,
               0,
               {16384, 1, 1},
               {128, 1, 1}},
    [K_POW] =
        {"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
         "namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, "
         "float)::{lambda(float)#2}, at::detail::Array<char*, 2> >(int, at::native::(anonymous "
         "namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, "
         "float)::{lambda(float)#2}, at::detail::Array<char*, 2>)",
         24,
         0,
         {32768, 1, 1},
         {128, 1, 1}},
    [K_MEAN] = {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
                "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> "
                ">(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
                "unsigned int, float, 4>)",
                32,
                16,
                {4096, 1, 1},
                {32, 16, 1}},
    [K_RSQRT] =
        {"void at::native::vectorized_elementwise_kernel<4, "
         "at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() "
         "const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> "
         ">(int, "
         "at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() "
         "const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
         22,
         0,
         {8, 1, 1},
         {128, 1, 1}},
    [K_COPY] =
        {"void "
         "at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::"
         "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
         "const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, "
         "unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
         "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, "
         "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
         "const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, "
         "TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
         "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
         30,
         0,
         {32768, 1, 1},
         {128, 1, 1}},
    [K_SILU] = {"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
                "namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
                "const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
                "at::detail::Array<char*, 2> >(int, at::native::(anonymous "
                "namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
                "const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
                "at::detail::Array<char*, 2>)",
                26,
                0,
                {44032, 1, 1},
                {128, 1, 1}},
    [K_NEG] = {"void at::native::vectorized_elementwise_kernel<4, "
               "at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() "
               "const::{lambda()#8}::operator()() const::{lambda(c10::BFloat16)#1}, "
               "at::detail::Array<char*, 2> >(int, "
               "at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() "
               "const::{lambda()#8}::operator()() const::{lambda(c10::BFloat16)#1}, "
               "at::detail::Array<char*, 2>)",
               20,
               0,
               {8192, 1, 1},
               {128, 1, 1}},
    [K_CAT] = {"void at::native::(anonymous "
               "namespace)::CatArrayBatchedCopy_aligned16_contig<at::native::(anonymous "
               "namespace)::OpaqueType<2u>, unsigned int, 4, 128, 1>(at::native::(anonymous "
               "namespace)::OpaqueType<2u>*, at::native::(anonymous "
               "namespace)::CatArrInputTensorMetadata<at::native::(anonymous "
               "namespace)::OpaqueType<2u>, unsigned int, 128, 1>, at::native::(anonymous "
               "namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)",
               32,
               0,
               {4096, 2, 1},
               {128, 1, 1}},
    [K_FLASH_FWD] =
        {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 128, "
         "64, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<128, 128, "
         "64, 4, cutlass::bfloat16_t> >, false, true, false, false, false, true, false, "
         "false>(pytorch_flash::Flash_fwd_params)",
         255,
         49152,
         {16, 2, 32},
         {128, 1, 1}},
    [K_FLASH_BWD_DOT] = {"void pytorch_flash::flash_bwd_dot_do_o_kernel<true, "
                         "pytorch_flash::Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, "
                         "false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<128, 64, "
                         "128, 8, cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params)",
                         40,
                         0,
                         {32, 2, 32},
                         {256, 1, 1}},
    [K_FLASH_BWD] =
        {"void "
         "pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_"
         "kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, "
         "pytorch_flash::Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, true, "
         "false, false, false, false, false>(pytorch_flash::Flash_bwd_params)",
         255,
         147456,
         {16, 2, 32},
         {256, 1, 1}},
    [K_FLASH_BWD_CVT] = {"void "
                         "pytorch_flash::flash_bwd_convert_dq_kernel<pytorch_flash::Flash_bwd_"
                         "kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, "
                         "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<128, 64, 128, 8, "
                         "cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params, int)",
                         56,
                         32768,
                         {32, 2, 32},
                         {256, 1, 1}},
    [K_INDEX] = {"void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, "
                 "long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, "
                 "unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, "
                 "at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, "
                 "unsigned int, long)",
                 32,
                 0,
                 {2048, 1, 1},
                 {128, 1, 1}},
    [K_EMB_BWD] =
        {"void at::native::(anonymous namespace)::embedding_backward_feature_kernel<c10::BFloat16, "
         "float, long>(long const*, c10::BFloat16 const*, c10::BFloat16*, int, long, int, int)",
         40,
         4352,
         {128, 1, 1},
         {32, 32, 1}},
    [K_LSM] = {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, "
               "float, float, at::native::(anonymous "
               "namespace)::LogSoftMaxForwardEpilogue>(float*, c10::BFloat16 const*, int)",
               38,
               64,
               {4096, 1, 1},
               {1024, 1, 1}},
    [K_NLL] = {"void at::native::(anonymous "
               "namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, "
               "float*, float const*, long const*, float const*, bool, long, long, long, long)",
               32,
               0,
               {1, 1, 1},
               {32, 1, 1}},
    [K_LSM_BWD] = {"void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, "
                   "float, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, "
                   "float const*, float const*, long)",
                   36,
                   64,
                   {4096, 1, 1},
                   {1024, 1, 1}},
    [K_NLL_BWD] = {"void at::native::(anonymous "
                   "namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float "
                   "const*, long const*, float const*, float const*, bool, int, int, long, long)",
                   28,
                   0,
                   {1, 1, 1},
                   {1024, 1, 1}},
    [K_FILL] = {"void at::native::vectorized_elementwise_kernel<4, "
                "at::native::FillFunctor<c10::BFloat16>, at::detail::Array<char*, 1> >(int, "
                "at::native::FillFunctor<c10::BFloat16>, at::detail::Array<char*, 1>)",
                16,
                0,
                {16384, 1, 1},
                {128, 1, 1}},
    [K_SUM] = {"void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, "
               "at::native::func_wrapper_t<float, at::native::sum_functor<c10::BFloat16, float, "
               "c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
               "unsigned int, c10::BFloat16, 4> >(at::native::ReduceOp<c10::BFloat16, "
               "at::native::func_wrapper_t<float, at::native::sum_functor<c10::BFloat16, float, "
               "c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
               "unsigned int, c10::BFloat16, 4>)",
               40,
               16,
               {32, 64, 1},
               {32, 4, 1}},
    [K_DIV] = {"void at::native::vectorized_elementwise_kernel<4, at::native::BUnaryFunctor<float, "
               "float, float, at::native::binary_internal::DivFunctor<float> >, "
               "at::detail::Array<char*, 2> >(int, at::native::BUnaryFunctor<float, float, float, "
               "at::native::binary_internal::DivFunctor<float> >, at::detail::Array<char*, 2>)",
               20,
               0,
               {8, 1, 1},
               {128, 1, 1}},
    [K_SILU_BWD] = {"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
                    "namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::"
                    "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, "
                    "c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::(anonymous "
                    "namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::"
                    "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, "
                    "c10::BFloat16)#1}, at::detail::Array<char*, 3>)",
                    30,
                    0,
                    {44032, 1, 1},
                    {128, 1, 1}},
    [K_ADD_ACC] = {"void at::native::vectorized_elementwise_kernel<4, "
                   "at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, "
                   "at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
                   26,
                   0,
                   {32768, 1, 1},
                   {128, 1, 1}},
    [K_MTA_ADD] =
        {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
         "namespace)::TensorListScalarListMetadata<float, 1>, at::native::(anonymous "
         "namespace)::BinaryOpScalarListFunctor<float, 1, 1, 0>, std::plus<float> "
         ">(at::native::(anonymous namespace)::TensorListScalarListMetadata<float, 1>, "
         "at::native::(anonymous namespace)::BinaryOpScalarListFunctor<float, 1, 1, 0>, "
         "std::plus<float>)",
         30,
         0,
         {320, 1, 1},
         {512, 1, 1}},
    [K_MTA_LERP] =
        {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
         "namespace)::TensorListMetadata<2>, at::native::(anonymous "
         "namespace)::PointwiseOpScalarFunctor<c10::BFloat16, 2, 2, 0>, "
         "at::native::LerpFunctor<float>, float>(at::native::(anonymous "
         "namespace)::TensorListMetadata<2>, at::native::(anonymous "
         "namespace)::PointwiseOpScalarFunctor<c10::BFloat16, 2, 2, 0>, "
         "at::native::LerpFunctor<float>, float)",
         38,
         0,
         {320, 1, 1},
         {512, 1, 1}},
    [K_MTA_MUL] =
        {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
         "namespace)::TensorListMetadata<1>, at::native::(anonymous "
         "namespace)::BinaryOpScalarFunctor<c10::BFloat16, 1, 1, 0>, std::multiplies<float>, "
         "float>(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous "
         "namespace)::BinaryOpScalarFunctor<c10::BFloat16, 1, 1, 0>, std::multiplies<float>, "
         "float)",
         28,
         0,
         {320, 1, 1},
         {512, 1, 1}},
    [K_MTA_ADDCMUL] =
        {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
         "namespace)::TensorListMetadata<3>, at::native::(anonymous "
         "namespace)::PointwiseOpScalarFunctor<c10::BFloat16, 3, 3, 0>, std::multiplies<float>, "
         "c10::Scalar>(at::native::(anonymous namespace)::TensorListMetadata<3>, "
         "at::native::(anonymous namespace)::PointwiseOpScalarFunctor<c10::BFloat16, 3, 3, 0>, "
         "std::multiplies<float>, c10::Scalar)",
         40,
         0,
         {320, 1, 1},
         {512, 1, 1}},
    [K_MTA_SQRT] =
        {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
         "namespace)::TensorListMetadata<2>, at::native::(anonymous "
         "namespace)::UnaryOpFunctor<c10::BFloat16, 2, 1, 1>, at::native::Sqrt<float> "
         ">(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous "
         "namespace)::UnaryOpFunctor<c10::BFloat16, 2, 1, 1>, at::native::Sqrt<float>)",
         30,
         0,
         {320, 1, 1},
         {512, 1, 1}},
    [K_MTA_DIV] =
        {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
         "namespace)::TensorListScalarListMetadata<float, 1>, at::native::(anonymous "
         "namespace)::BinaryOpScalarListFunctor<c10::BFloat16, 1, 1, 0>, std::divides<float> "
         ">(at::native::(anonymous namespace)::TensorListScalarListMetadata<float, 1>, "
         "at::native::(anonymous namespace)::BinaryOpScalarListFunctor<c10::BFloat16, 1, 1, 0>, "
         "std::divides<float>)",
         30,
         0,
         {320, 1, 1},
         {512, 1, 1}},
    [K_MTA_ADDCDIV] =
        {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
         "namespace)::TensorListScalarListMetadata<float, 3>, at::native::(anonymous "
         "namespace)::PointwiseOpScalarListFunctor<c10::BFloat16, 3, 3, 0>, std::divides<float> "
         ">(at::native::(anonymous namespace)::TensorListScalarListMetadata<float, 3>, "
         "at::native::(anonymous namespace)::PointwiseOpScalarListFunctor<c10::BFloat16, 3, 3, 0>, "
         "std::divides<float>)",
         48,
         0,
         {320, 1, 1},
         {512, 1, 1}},
    [K_NCCL] = {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                96,
                87568,
                {24, 1, 1},
                {640, 1, 1}},
};

/* ---- operator signatures (record_shapes): Concrete Inputs, Input type, Strides, Dims ------ */

/* A spec is '|'-separated items: "b:2,2048,4096" a bf16 tensor (f float, l long, B bool;
 * a 'T' after the letter: transposed view of the last two dims), "b:" a 0-dim tensor,
 * "s:VALUE" a Scalar, "L:[1, 2]" a ScalarList, "X" a TensorList, "n" nothing. */
typedef struct sigent {
    const char *spec;
    char *text; /* "Concrete Inputs": [...], "Input type": [...], ... "Input Dims": [...] */
    size_t len;
} sigent;

static sigent sigs[512];
static int nsigs;

static char *cat_str(char *dst, const char *s)
{
    size_t n = strlen(s);
    memcpy(dst, s, n);
    return dst + n;
}

static int sig_build(const char *spec)
{
    char conc[1024], type[1024], strides[1024], dims[1024];
    char *pc = conc, *pt = type, *ps = strides, *pd = dims;
    pc = cat_str(pc, "\"Concrete Inputs\": [");
    pt = cat_str(pt, "\"Input type\": [");
    ps = cat_str(ps, "\"Input Strides\": [");
    pd = cat_str(pd, "\"Input Dims\": [");
    const char *p = spec;
    int first = 1;
    while (*p) {
        const char *end = strchr(p, '|');
        if (!end)
            end = p + strlen(p);
        char item[256];
        size_t n = (size_t)(end - p);
        if (n >= sizeof item)
            n = sizeof item - 1;
        memcpy(item, p, n);
        item[n] = 0;
        if (!first) {
            pc = cat_str(pc, ", ");
            pt = cat_str(pt, ", ");
            ps = cat_str(ps, ", ");
            pd = cat_str(pd, ", ");
        }
        first = 0;
        if (item[0] == 'n') {
            pc = cat_str(pc, "\"\"");
            pt = cat_str(pt, "\"\"");
            ps = cat_str(ps, "[]");
            pd = cat_str(pd, "[]");
        } else if (item[0] == 's' || item[0] == 'L') {
            pc += sprintf(pc, "\"%s\"", item + 2);
            pt = cat_str(pt, item[0] == 's' ? "\"Scalar\"" : "\"ScalarList\"");
            ps = cat_str(ps, "[]");
            pd = cat_str(pd, "[]");
        } else if (item[0] == 'X') {
            pc = cat_str(pc, "\"\"");
            pt = cat_str(pt, "\"TensorList\"");
            ps = cat_str(ps, "[]");
            pd = cat_str(pd, "[]");
        } else {
            const char *tn = item[0] == 'f'   ? "float"
                             : item[0] == 'l' ? "long int"
                             : item[0] == 'B' ? "bool"
                                              : "c10::BFloat16";
            int tr = item[1] == 'T';
            const char *q = strchr(item, ':') + 1;
            long d[8];
            int nd = 0;
            while (*q && nd < 8) {
                d[nd++] = strtol(q, (char **)&q, 10);
                if (*q == ',')
                    q++;
            }
            long st[8];
            if (tr && nd >= 2) {
                long t = d[nd - 1];
                d[nd - 1] = d[nd - 2];
                d[nd - 2] = t;
            }
            long acc = 1;
            for (int i = nd - 1; i >= 0; i--) {
                st[i] = acc;
                acc *= d[i];
            }
            if (tr && nd >= 2) {
                long t = d[nd - 1];
                d[nd - 1] = d[nd - 2];
                d[nd - 2] = t;
                t = st[nd - 1];
                st[nd - 1] = st[nd - 2];
                st[nd - 2] = t;
            }
            pc = cat_str(pc, "\"\"");
            pt += sprintf(pt, "\"%s\"", tn);
            *ps++ = '[';
            *pd++ = '[';
            for (int i = 0; i < nd; i++) {
                ps += sprintf(ps, i ? ", %ld" : "%ld", st[i]);
                pd += sprintf(pd, i ? ", %ld" : "%ld", d[i]);
            }
            *ps++ = ']';
            *pd++ = ']';
        }
        p = *end ? end + 1 : end;
    }
    *pc++ = ']';
    *pt++ = ']';
    *ps++ = ']';
    *pd++ = ']';
    *pc = *pt = *ps = *pd = 0;
    if (nsigs == (int)(sizeof sigs / sizeof sigs[0])) {
        fprintf(stderr, "bench_json: too many signatures\n");
        exit(1);
    }
    sigent *s = &sigs[nsigs];
    size_t len = strlen(conc) + strlen(type) + strlen(strides) + strlen(dims) + 6;
    s->text = xrealloc(NULL, len + 1);
    snprintf(s->text, len + 1, "%s, %s, %s, %s", conc, type, strides, dims);
    s->len = strlen(s->text);
    s->spec = spec;
    return nsigs++;
}

/* Signature id of a spec (string literals: looked up by address, built once). */
static int SIG(const char *spec)
{
    static const char *keys[1024];
    static int vals[1024];
    size_t h = ((uintptr_t)spec >> 3) & 1023;
    while (keys[h]) {
        if (keys[h] == spec)
            return vals[h];
        h = (h + 1) & 1023;
    }
    keys[h] = spec;
    vals[h] = sig_build(spec);
    return vals[h];
}

/* Common shapes: 2 sequences of 2048 tokens, hidden 4096, MLP 11008, 32 heads of 128. */
#define X3 "b:2,2048,4096"
#define X2 "b:4096,4096"
#define XF "f:2,2048,4096"
#define XH "b:2,32,2048,128"
#define XM "b:2,2048,11008"

/* ---- backward node types recorded on the forward tape ------------------------------------ */

enum bwd {
    B_ADDMM,
    B_T,
    B_VIEW,
    B_UNSAFE_VIEW,
    B_TRANSPOSE,
    B_MUL,
    B_MUL_W,
    B_ADD,
    B_POW,
    B_MEAN,
    B_RSQRT,
    B_TOCOPY,
    B_SILU,
    B_NEG,
    B_SLICE,
    B_CAT,
    B_FLASH,
    B_CLONE,
    B_EMB,
    B_LSM,
    B_NLL,
    B_COUNT
};
static const char *const bwd_node[B_COUNT] = {"AddmmBackward0",
                                              "TBackward0",
                                              "ViewBackward0",
                                              "UnsafeViewBackward0",
                                              "TransposeBackward0",
                                              "MulBackward0",
                                              "MulBackward0",
                                              "AddBackward0",
                                              "PowBackward0",
                                              "MeanBackward1",
                                              "RsqrtBackward0",
                                              "ToCopyBackward0",
                                              "SiluBackward0",
                                              "NegBackward0",
                                              "SliceBackward0",
                                              "CatBackward0",
                                              "ScaledDotProductFlashAttentionBackward0",
                                              "CloneBackward0",
                                              "EmbeddingBackward0",
                                              "LogSoftmaxBackward0",
                                              "NllLossBackward0"};
static char *bwd_eval[B_COUNT]; /* "autograd::engine::evaluate_function: X" */

typedef struct tape {
    uint8_t type;
    int8_t layer; /* -1: not in a decoder layer */
    int64_t seq, flow;
} tape;

/* ---- strings made at start-up ------------------------------------------------------------ */

static char *mod_layer[NLAYERS], *mod_attn[NLAYERS], *mod_mlp[NLAYERS], *mod_norm[2 * NLAYERS + 1];
static char *mod_linear[7 * NLAYERS + 1];
#define NADDR 64
enum { PM_TO, PM_POW, PM_MEAN, PM_VIEW, PM_TRANSPOSE, PM_RESHAPE, PM_ITEM, PM_CONTIG, PM_COUNT };
static const char *const pm_name[PM_COUNT] = {"to",        "pow",     "mean", "view",
                                              "transpose", "reshape", "item", "contiguous"};
static char *py_method[PM_COUNT][NADDR]; /* "<built-in method to of Tensor object at 0x...>" */
static char *step_name[4096];
static char *host_thread_label[NTHR];

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xrealloc(NULL, n), s, n);
}

static void init_strings(void)
{
    char b[256];
    for (int l = 0; l < NLAYERS; l++) {
        snprintf(b, sizeof b, "nn.Module: LlamaDecoderLayer_%d", l);
        mod_layer[l] = xstrdup(b);
        snprintf(b, sizeof b, "nn.Module: LlamaAttention_%d", l);
        mod_attn[l] = xstrdup(b);
        snprintf(b, sizeof b, "nn.Module: LlamaMLP_%d", l);
        mod_mlp[l] = xstrdup(b);
    }
    for (int i = 0; i < 2 * NLAYERS + 1; i++) {
        snprintf(b, sizeof b, "nn.Module: LlamaRMSNorm_%d", i);
        mod_norm[i] = xstrdup(b);
    }
    for (int i = 0; i < 7 * NLAYERS + 1; i++) {
        snprintf(b, sizeof b, "nn.Module: Linear_%d", i);
        mod_linear[i] = xstrdup(b);
    }
    uint64_t x = 0x7f3a2c000000ull;
    for (int m = 0; m < PM_COUNT; m++)
        for (int a = 0; a < NADDR; a++) {
            x += 0x30 * (uint64_t)(1 + (a * 7 + m * 13) % 97);
            snprintf(b, sizeof b, "<built-in method %s of Tensor object at 0x%llx>", pm_name[m],
                     (unsigned long long)x);
            py_method[m][a] = xstrdup(b);
        }
    for (int i = 0; i < B_COUNT; i++) {
        snprintf(b, sizeof b, "autograd::engine::evaluate_function: %s", bwd_node[i]);
        bwd_eval[i] = xstrdup(b);
    }
    for (int i = 0; i < NTHR; i++) {
        snprintf(b, sizeof b, "thread %lld (%s)", (long long)thr_tid[i], thr_name[i]);
        host_thread_label[i] = xstrdup(b);
    }
}

static const char *step_label(int n)
{
    n &= 4095;
    if (!step_name[n]) {
        char b[32];
        snprintf(b, sizeof b, "ProfilerStep#%d", n);
        step_name[n] = xstrdup(b);
    }
    return step_name[n];
}

/* ---- the simulation ---------------------------------------------------------------------- */

typedef struct sim {
    uint64_t rng;
    int64_t now[NTHR];
    int64_t sfree[NSTREAM];
    int64_t ext, rfid, corr, seq, pyid, fbflow;
    int64_t mem_alloc, mem_reserved, next_addr;
    int64_t step_first_kernel, trace_end;
    /* records of the current step */
    rec *r;
    size_t n, cap;
    /* open spans per thread: record indices */
    int32_t stk[NTHR][128];
    int depth[NTHR];
    /* forward tape for the backward pass */
    tape *tp;
    size_t ntp, cap_tp;
    int cur_layer;
    /* live allocations (FIFO) */
    int64_t live_bytes[64], live_addr[64];
    int live_head, live_n;
} sim;

static inline uint64_t rnd(sim *s)
{
    /* xorshift64* */
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return s->rng * 0x2545F4914F6CDD1Dull;
}

/* uniform in [lo, hi] */
static inline int64_t uni(sim *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd(s) % (uint64_t)(hi - lo + 1));
}

/* v with +-pct % of jitter */
static inline int64_t jit(sim *s, int64_t v, int pct)
{
    int64_t d = v * pct / 100;
    return d > 0 ? v - d + uni(s, 0, 2 * d) : v;
}

static void sim_init(sim *s, uint64_t seed)
{
    rec *r = s->r;
    size_t cap = s->cap;
    tape *tp = s->tp;
    size_t cap_tp = s->cap_tp;
    memset(s, 0, sizeof *s);
    s->r = r;
    s->cap = cap;
    s->tp = tp;
    s->cap_tp = cap_tp;
    s->rng = seed * 0x9E3779B97F4A7C15ull + 0x1234567;
    for (int i = 0; i < 4; i++)
        rnd(s);
    for (int i = 0; i < NTHR; i++)
        s->now[i] = T0_NS + 150000 + i * 1000;
    s->sfree[0] = s->sfree[1] = T0_NS;
    s->ext = 1;
    s->rfid = 1;
    s->corr = 1040;
    s->pyid = 1;
    s->mem_alloc = 14789341184LL; /* weights and optimizer state already resident */
    s->mem_reserved = 17179869184LL;
    s->next_addr = 0x7f3100000000LL;
    s->cur_layer = -1;
}

static rec *push(sim *s, int kind, int thr, int64_t ts)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 65536;
        s->r = xrealloc(s->r, s->cap * sizeof *s->r);
    }
    rec *r = &s->r[s->n++];
    memset(r, 0, sizeof *r);
    r->kind = (uint8_t)kind;
    r->thr = (uint8_t)thr;
    r->ts = ts;
    r->aux = -1;
    return r;
}

static inline void cpu(sim *s, int thr, int64_t lo, int64_t hi)
{
    s->now[thr] += uni(s, lo, hi);
}

/* The innermost open cpu_op / user_annotation of a thread: its External id. */
static int64_t cur_ext(sim *s, int thr)
{
    for (int d = s->depth[thr] - 1; d >= 0; d--) {
        const rec *r = &s->r[s->stk[thr][d]];
        if (r->kind == E_OP || r->kind == E_USER)
            return r->id;
    }
    return 0;
}

static int32_t open_(sim *s, int kind, int thr, const char *name, int sig)
{
    cpu(s, thr, 250, 1800);
    int32_t idx = (int32_t)s->n;
    rec *r = push(s, kind, thr, s->now[thr]);
    r->name = name;
    r->aux = sig;
    if (kind == E_PY) {
        r->id = ++s->pyid;
        r->id2 = -1;
        for (int d = s->depth[thr] - 1; d >= 0; d--)
            if (s->r[s->stk[thr][d]].kind == E_PY) {
                r->id2 = s->r[s->stk[thr][d]].id;
                break;
            }
    } else {
        r->id = ++s->ext;
        r->v[0] = ++s->rfid;
    }
    if (s->depth[thr] < 128)
        s->stk[thr][s->depth[thr]++] = idx;
    return idx;
}

static void close_(sim *s, int32_t idx)
{
    rec *r = &s->r[idx];
    int thr = r->thr;
    cpu(s, thr, 150, 1200);
    r->dur = s->now[thr] - r->ts;
    if (s->depth[thr] > 0)
        s->depth[thr]--;
    if (s->now[thr] > s->trace_end)
        s->trace_end = s->now[thr];
}

static int32_t py(sim *s, int thr, const char *name)
{
    return open_(s, E_PY, thr, name, -1);
}

static int32_t op(sim *s, int thr, const char *name, const char *spec)
{
    return open_(s, E_OP, thr, name, spec ? SIG(spec) : -1);
}

/* Give the op a sequence number and a backward node on the tape; emit its fwdbwd flow. */
static void seq(sim *s, int32_t idx, int type)
{
    rec *r = &s->r[idx];
    r->flags |= F_SEQ;
    r->id2 = ++s->seq;
    rec *f = push(s, E_FB_S, r->thr, r->ts);
    f->id = ++s->fbflow;
    if (s->ntp == s->cap_tp) {
        s->cap_tp = s->cap_tp ? s->cap_tp * 2 : 4096;
        s->tp = xrealloc(s->tp, s->cap_tp * sizeof *s->tp);
    }
    tape *t = &s->tp[s->ntp++];
    t->type = (uint8_t)type;
    t->layer = (int8_t)s->cur_layer;
    t->seq = s->r[idx].id2;
    t->flow = s->fbflow;
}

/* A composite op that shows the sequence number its first autograd child will take. */
static void seq_peek(sim *s, int32_t idx)
{
    s->r[idx].flags |= F_SEQ;
    s->r[idx].id2 = s->seq + 1;
}

static void mem_free_oldest(sim *s, int thr)
{
    if (!s->live_n)
        return;
    int i = s->live_head;
    s->live_head = (s->live_head + 1) & 63;
    s->live_n--;
    s->mem_alloc -= s->live_bytes[i];
    rec *m = push(s, E_MEM, thr, s->now[thr]);
    m->v[0] = -s->live_bytes[i];
    m->v[1] = s->live_addr[i];
    m->v[2] = s->mem_alloc;
    m->v[3] = s->mem_reserved;
}

static void rt_call(sim *s, int thr, const char *name, int cbid, int64_t lo, int64_t hi);

/* A [memory] allocation event (host: pinned host memory). The CUDA caching allocator often asks
 * whether the stream is being captured first: a runtime call with no device work. */
static void mem_alloc(sim *s, int thr, int64_t bytes, int host)
{
    cpu(s, thr, 100, 400);
    if (!host && rnd(s) % 8 < 7)
        rt_call(s, thr, "cudaStreamIsCapturing", 317, 700, 2200);
    bytes = (bytes + 511) & ~511LL;
    int64_t addr = s->next_addr;
    s->next_addr += bytes;
    if (s->next_addr > 0x7f3100000000LL + (64LL << 30))
        s->next_addr = 0x7f3100000000LL;
    rec *m = push(s, E_MEM, thr, s->now[thr]);
    m->v[0] = bytes;
    m->v[1] = addr;
    m->stream = (uint8_t)host; /* Device Type 0 = CPU */
    if (host) {
        m->v[2] = bytes;
        m->v[3] = 0;
        return;
    }
    s->mem_alloc += bytes;
    if (s->mem_alloc > s->mem_reserved)
        s->mem_reserved = (s->mem_alloc + (2LL << 20)) & ~((2LL << 20) - 1);
    m->v[2] = s->mem_alloc;
    m->v[3] = s->mem_reserved;
    if (s->live_n == 48)
        mem_free_oldest(s, thr);
    int i = (s->live_head + s->live_n) & 63;
    s->live_bytes[i] = bytes;
    s->live_addr[i] = addr;
    s->live_n++;
}

/* The CUDA launch queue holds ~1000 launches: a launch far ahead of the GPU blocks. */
#define QUEUE_NS 20000000LL

/* cudaLaunchKernel from the current op of thr; the kernel runs on stream st. */
static void launch(sim *s, int thr, int k, int st, int64_t gpu_ns, int64_t nelems)
{
    cpu(s, thr, 300, 1500);
    int64_t ext = cur_ext(s, thr);
    int64_t corr = ++s->corr;
    int64_t t = s->now[thr];
    rec *rt = push(s, E_RT, thr, t);
    rt->name = k == K_NCCL ? "cudaLaunchKernelExC" : "cudaLaunchKernel";
    rt->aux = k == K_NCCL ? 430 : 211;
    rt->id = ext;
    rt->id2 = corr;
    rec *fs = push(s, E_AC_S, thr, t);
    fs->id2 = corr;
    int64_t d = uni(s, 2500, 7500);
    int64_t start = t + d - uni(s, 0, 1500);
    if (start < s->sfree[st] + 900)
        start = s->sfree[st] + uni(s, 900, 2600);
    if (start - (t + d) > QUEUE_NS)
        d = start - QUEUE_NS - t + uni(s, 1000, 4000);
    s->r[s->n - 2].dur = d;
    s->now[thr] = t + d;
    int64_t kd = jit(s, gpu_ns, 6);
    if (kd < 1200)
        kd = 1200 + uni(s, 0, 800);
    rec *kr = push(s, E_KER, thr, start);
    kr->dur = kd;
    kr->aux = k;
    kr->stream = (uint8_t)st;
    kr->id = ext;
    kr->id2 = corr;
    kr->v[0] = nelems;
    rec *fd = push(s, E_AC_FD, thr, start);
    fd->id2 = corr;
    fd->stream = (uint8_t)st;
    s->sfree[st] = start + kd;
    if (s->step_first_kernel < 0 && st == ST_COMPUTE)
        s->step_first_kernel = start;
    if (s->sfree[st] > s->trace_end)
        s->trace_end = s->sfree[st];
}

/* A runtime call with no device work of its own. */
static void rt_call(sim *s, int thr, const char *name, int cbid, int64_t lo, int64_t hi)
{
    cpu(s, thr, 200, 900);
    rec *rt = push(s, E_RT, thr, s->now[thr]);
    rt->name = name;
    rt->aux = cbid;
    rt->id = cur_ext(s, thr);
    rt->id2 = ++s->corr;
    int64_t d = uni(s, lo, hi);
    rt->dur = d;
    push(s, E_AC_FH, thr, s->now[thr])->id2 = s->corr;
    s->now[thr] += d;
}

/* cudaMemcpyAsync / cudaMemsetAsync and their device side on the compute stream. */
static void copy(sim *s, int thr, int is_set, const char *dname, int64_t bytes, int64_t gbps)
{
    cpu(s, thr, 300, 1500);
    int64_t ext = cur_ext(s, thr), corr = ++s->corr, t = s->now[thr];
    rec *rt = push(s, E_RT, thr, t);
    rt->name = is_set ? "cudaMemsetAsync" : "cudaMemcpyAsync";
    rt->aux = is_set ? 51 : 41;
    rt->id = ext;
    rt->id2 = corr;
    push(s, E_AC_S, thr, t)->id2 = corr;
    int64_t d = uni(s, 3000, 9000);
    s->r[s->n - 2].dur = d;
    s->now[thr] = t + d;
    int64_t start = t + d - uni(s, 0, 2000);
    if (start < s->sfree[ST_COMPUTE] + 900)
        start = s->sfree[ST_COMPUTE] + uni(s, 900, 2000);
    int64_t kd = 1300 + bytes / gbps + uni(s, 0, 600);
    rec *c = push(s, is_set ? E_SET : E_CPY, thr, start);
    c->name = dname;
    c->dur = kd;
    c->stream = ST_COMPUTE;
    c->id = ext;
    c->id2 = corr;
    c->v[0] = bytes;
    rec *fd = push(s, E_AC_FD, thr, start);
    fd->id2 = corr;
    fd->stream = ST_COMPUTE;
    s->sfree[ST_COMPUTE] = start + kd;
}

/* Elements of a [2, 2048, 4096] activation and its bf16 / fp32 bytes. */
#define ACT   16777216LL
#define ACT_B (ACT * 2)
/* GPU times, ns, for a [2, 2048, 4096] bf16 elementwise op and the main GEMMs (H100). */
#define EW_NS       34000
#define GEMM_NS     205000
#define GEMM_MLP_NS 540000

/* An op with one kernel and one output allocation. */
static void leaf(sim *s, int thr, const char *name, const char *spec, int btype, int k,
                 int64_t gpu_ns, int64_t out_bytes)
{
    int32_t o = op(s, thr, name, spec);
    if (btype >= 0)
        seq(s, o, btype);
    cpu(s, thr, 1500, 5000);
    if (out_bytes)
        mem_alloc(s, thr, out_bytes, 0);
    launch(s, thr, k, ST_COMPUTE, gpu_ns, 0);
    close_(s, o);
}

/* An op without device work (views, metadata). */
static void view(sim *s, int thr, const char *name, const char *spec, int btype)
{
    int32_t o = op(s, thr, name, spec);
    if (btype >= 0)
        seq(s, o, btype);
    cpu(s, thr, 600, 2500);
    close_(s, o);
}

/* An allocating op without device work (aten::empty and friends). */
static void alloc_op(sim *s, int thr, const char *name, const char *spec, int64_t bytes)
{
    int32_t o = op(s, thr, name, spec);
    cpu(s, thr, 800, 2500);
    mem_alloc(s, thr, bytes, 0);
    close_(s, o);
}

/* aten::transpose > aten::as_strided */
static void transpose(sim *s, int thr, const char *spec, const char *as_spec, int btype)
{
    int32_t o = op(s, thr, "aten::transpose", spec);
    if (btype >= 0)
        seq(s, o, btype);
    cpu(s, thr, 800, 2000);
    view(s, thr, "aten::as_strided", as_spec, -1);
    close_(s, o);
}

/* aten::to > aten::_to_copy > aten::empty_strided + aten::copy_ */
static void to_copy(sim *s, int thr, const char *spec, int64_t bytes)
{
    int32_t o = op(s, thr, "aten::to", spec);
    seq_peek(s, o);
    int32_t c = op(s, thr, "aten::_to_copy", spec);
    seq(s, c, B_TOCOPY);
    int32_t e = op(s, thr, "aten::empty_strided",
                   "L:[2, 2048, 4096]|L:[8388608, 4096, 1]|s:6|s:0|L:cuda:0|B:");
    mem_alloc(s, thr, bytes, 0);
    close_(s, e);
    int32_t cp = op(s, thr, "aten::copy_", XF "|" X3 "|s:False");
    cpu(s, thr, 2000, 4000);
    launch(s, thr, K_COPY, ST_COMPUTE, EW_NS * 3 / 2, 0);
    close_(s, cp);
    close_(s, c);
    close_(s, o);
}

/* Small Python calls that with_stack records inside every module call. */
static void pynoise(sim *s, int n)
{
    static const char *const names[] = {
        "torch/nn/modules/module.py(1928): __getattr__",
        "<built-in function isinstance>",
        "torch/nn/modules/module.py(1928): __getattr__",
        "<built-in method size of Tensor object at 0x7f3a2c4d1e50>",
        "<built-in function len>",
        "torch/_jit_internal.py(1263): is_scripting",
        "<built-in method _get_tracing_state of PyCapsule object at 0x7f3b9a1d0c90>",
        "torch/nn/modules/module.py(1928): __getattr__",
    };
    for (int i = 0; i < n; i++) {
        int32_t p = py(s, T_MAIN, names[rnd(s) % (sizeof names / sizeof names[0])]);
        cpu(s, T_MAIN, 300, 1500);
        close_(s, p);
    }
}

static int32_t module(sim *s, const char *inst, const char *fwd, int32_t *f2, int32_t *f3,
                      int32_t *f4)
{
    int32_t a = py(s, T_MAIN, "torch/nn/modules/module.py(1773): _wrapped_call_impl");
    *f2 = py(s, T_MAIN, "torch/nn/modules/module.py(1784): _call_impl");
    pynoise(s, 2);
    *f3 = py(s, T_MAIN, inst);
    *f4 = py(s, T_MAIN, fwd);
    pynoise(s, 4);
    return a;
}

static void module_end(sim *s, int32_t a, int32_t b, int32_t c, int32_t d)
{
    close_(s, d);
    close_(s, c);
    close_(s, b);
    close_(s, a);
}

static const char *pymethod(sim *s, int m)
{
    return py_method[m][rnd(s) % NADDR];
}

static void linear(sim *s, int idx, int out, int in, int k, int64_t gpu_ns)
{
    /* linear, t, addmm, as_strided, transpose */
    static const char *const specs[4][5] = {
        {X3 "|" X2 "|b:4096", "b:4096,4096", "b:4096|" X2 "|bT:4096,4096|s:1|s:1",
         "b:4096,4096|L:[4096, 4096]|L:[1, 4096]|n", "b:4096,4096|s:0|s:1"},
        {X3 "|b:11008,4096|b:11008", "b:11008,4096", "b:11008|" X2 "|bT:4096,11008|s:1|s:1",
         "b:11008,4096|L:[4096, 11008]|L:[1, 4096]|n", "b:11008,4096|s:0|s:1"},
        {XM "|b:4096,11008|b:4096", "b:4096,11008", "b:4096|b:4096,11008|bT:11008,4096|s:1|s:1",
         "b:4096,11008|L:[11008, 4096]|L:[1, 11008]|n", "b:4096,11008|s:0|s:1"},
        {X3 "|b:32000,4096|b:32000", "b:32000,4096", "b:32000|" X2 "|bT:4096,32000|s:1|s:1",
         "b:32000,4096|L:[4096, 32000]|L:[1, 4096]|n", "b:32000,4096|s:0|s:1"},
    };
    int v = k == K_GEMM_LM ? 3 : out == 4096 && in == 4096 ? 0 : out == 11008 ? 1 : 2;
    int32_t a, b, c, d;
    a = module(s, mod_linear[idx], "torch/nn/modules/linear.py(125): forward", &b, &c, &d);
    int32_t p = py(s, T_MAIN, "<built-in function linear>");
    int32_t l = op(s, T_MAIN, "aten::linear", specs[v][0]);
    seq_peek(s, l);
    int32_t t = op(s, T_MAIN, "aten::t", specs[v][1]);
    seq(s, t, B_T);
    cpu(s, T_MAIN, 500, 1500);
    transpose(s, T_MAIN, specs[v][4], specs[v][3], -1);
    close_(s, t);
    view(s, T_MAIN, "aten::view", X3 "|L:[4096, 4096]", -1);
    int32_t m = op(s, T_MAIN, "aten::addmm", specs[v][2]);
    seq(s, m, B_ADDMM);
    cpu(s, T_MAIN, 4000, 9000);
    mem_alloc(s, T_MAIN, 4096LL * out * 2, 0);
    launch(s, T_MAIN, k, ST_COMPUTE, gpu_ns, 0);
    close_(s, m);
    view(s, T_MAIN, "aten::view", "b:4096,4096|L:[2, 2048, 4096]", -1);
    close_(s, l);
    close_(s, p);
    module_end(s, a, b, c, d);
}

static void rmsnorm(sim *s, int idx)
{
    int32_t a, b, c, d;
    a = module(s, mod_norm[idx], "model.py(66): forward", &b, &c, &d);
    int32_t p = py(s, T_MAIN, pymethod(s, PM_TO));
    to_copy(s, T_MAIN, X3 "|s:6|s:False|s:False|n", ACT * 4);
    close_(s, p);
    p = py(s, T_MAIN, pymethod(s, PM_POW));
    leaf(s, T_MAIN, "aten::pow", XF "|s:2", B_POW, K_POW, EW_NS * 2, ACT * 4);
    close_(s, p);
    p = py(s, T_MAIN, pymethod(s, PM_MEAN));
    leaf(s, T_MAIN, "aten::mean", XF "|L:[-1]|s:True|n", B_MEAN, K_MEAN, EW_NS * 3 / 2, 16384);
    close_(s, p);
    leaf(s, T_MAIN, "aten::add", "f:2,2048,1|s:1e-05|s:1", B_ADD, K_ADD, 2500, 16384);
    p = py(s, T_MAIN, "<built-in method rsqrt of type object at 0x7f3b9e2c1f40>");
    leaf(s, T_MAIN, "aten::rsqrt", "f:2,2048,1", B_RSQRT, K_RSQRT, 2400, 16384);
    close_(s, p);
    leaf(s, T_MAIN, "aten::mul", XF "|f:2,2048,1", B_MUL, K_MUL, EW_NS * 2, ACT * 4);
    p = py(s, T_MAIN, pymethod(s, PM_TO));
    to_copy(s, T_MAIN, XF "|s:15|s:False|s:False|n", ACT_B);
    close_(s, p);
    leaf(s, T_MAIN, "aten::mul", "b:4096|" X3, B_MUL_W, K_MUL, EW_NS, ACT_B);
    module_end(s, a, b, c, d);
}

static void rotary(sim *s)
{
    int32_t r = py(s, T_MAIN, "model.py(131): apply_rotary_pos_emb");
    for (int qk = 0; qk < 2; qk++) {
        leaf(s, T_MAIN, "aten::mul", XH "|b:1,1,2048,128", B_MUL, K_MUL, EW_NS, ACT_B);
        int32_t h = py(s, T_MAIN, "model.py(122): rotate_half");
        int32_t sl = op(s, T_MAIN, "aten::slice", XH "|s:3|s:0|s:64|s:1");
        seq(s, sl, B_SLICE);
        view(s, T_MAIN, "aten::as_strided", XH "|L:[2, 32, 2048, 64]|L:[8388608, 128, 4096, 1]|n",
             -1);
        close_(s, sl);
        sl = op(s, T_MAIN, "aten::slice", XH "|s:3|s:64|s:9223372036854775807|s:1");
        seq(s, sl, B_SLICE);
        view(s, T_MAIN, "aten::as_strided", XH "|L:[2, 32, 2048, 64]|L:[8388608, 128, 4096, 1]|n",
             -1);
        close_(s, sl);
        leaf(s, T_MAIN, "aten::neg", "b:2,32,2048,64", B_NEG, K_NEG, EW_NS / 2, ACT);
        int32_t c = py(s, T_MAIN, "<built-in method cat of type object at 0x7f3b9e2c1f40>");
        leaf(s, T_MAIN, "aten::cat", "X|s:-1", B_CAT, K_CAT, EW_NS, ACT_B);
        close_(s, c);
        close_(s, h);
        leaf(s, T_MAIN, "aten::mul", XH "|b:1,1,2048,128", B_MUL, K_MUL, EW_NS, ACT_B);
        leaf(s, T_MAIN, "aten::add", XH "|" XH "|s:1", B_ADD, K_ADD, EW_NS, ACT_B);
    }
    close_(s, r);
}

static void attention(sim *s, int l)
{
    int32_t a, b, c, d;
    a = module(s, mod_attn[l], "model.py(178): forward", &b, &c, &d);
    for (int i = 0; i < 3; i++)
        linear(s, 7 * l + i, 4096, 4096, K_GEMM, GEMM_NS);
    for (int i = 0; i < 3; i++) {
        int32_t p = py(s, T_MAIN, pymethod(s, PM_VIEW));
        view(s, T_MAIN, "aten::view", X3 "|L:[2, 2048, -1, 128]", B_VIEW);
        close_(s, p);
        p = py(s, T_MAIN, pymethod(s, PM_TRANSPOSE));
        transpose(s, T_MAIN, "b:2,2048,32,128|s:1|s:2",
                  "b:2,2048,32,128|L:[2, 32, 2048, 128]|L:[8388608, 128, 4096, 1]|n", B_TRANSPOSE);
        close_(s, p);
    }
    rotary(s);
    int32_t p = py(s, T_MAIN, "<built-in function scaled_dot_product_attention>");
    int32_t o = op(s, T_MAIN, "aten::scaled_dot_product_attention",
                   XH "|" XH "|" XH "|n|s:0.0|s:True|n|s:False");
    seq_peek(s, o);
    int32_t f = op(s, T_MAIN, "aten::_scaled_dot_product_flash_attention",
                   XH "|" XH "|" XH "|s:0.0|s:True|s:False|n");
    seq(s, f, B_FLASH);
    for (int i = 0; i < 3; i++)
        transpose(s, T_MAIN, XH "|s:1|s:2", XH "|L:[2, 2048, 32, 128]|L:[8388608, 4096, 128, 1]|n",
                  -1);
    int32_t fa = op(s, T_MAIN, "aten::_flash_attention_forward",
                    "b:2,2048,32,128|b:2,2048,32,128|b:2,2048,32,128|n|n|s:2048|s:2048|s:0.0|s:"
                    "True|s:False|n|n|n");
    alloc_op(s, T_MAIN, "aten::empty", "L:[2, 2048, 32, 128]|s:15|s:0|L:cuda:0|n|n", ACT_B);
    alloc_op(s, T_MAIN, "aten::empty", "L:[2, 32, 2048]|s:6|s:0|L:cuda:0|n|n", 2 * 32 * 2048 * 4);
    launch(s, T_MAIN, K_FLASH_FWD, ST_COMPUTE, 165000, 0);
    close_(s, fa);
    transpose(s, T_MAIN, "b:2,2048,32,128|s:1|s:2",
              "b:2,2048,32,128|L:[2, 32, 2048, 128]|L:[8388608, 128, 4096, 1]|n", -1);
    close_(s, f);
    close_(s, o);
    close_(s, p);
    p = py(s, T_MAIN, pymethod(s, PM_TRANSPOSE));
    transpose(s, T_MAIN, XH "|s:1|s:2", XH "|L:[2, 2048, 32, 128]|L:[8388608, 128, 4096, 1]|n",
              B_TRANSPOSE);
    close_(s, p);
    p = py(s, T_MAIN, pymethod(s, PM_RESHAPE));
    int32_t rs = op(s, T_MAIN, "aten::reshape", "b:2,2048,32,128|L:[2, 2048, -1]");
    int32_t cl = op(s, T_MAIN, "aten::clone", "b:2,2048,32,128|s:0");
    seq(s, cl, B_CLONE);
    int32_t el = op(s, T_MAIN, "aten::empty_like", "b:2,2048,32,128|n|n|n|n|s:0");
    alloc_op(s, T_MAIN, "aten::empty", "L:[2, 2048, 32, 128]|s:15|s:0|L:cuda:0|s:False|s:0", ACT_B);
    close_(s, el);
    int32_t cp = op(s, T_MAIN, "aten::copy_", "b:2,2048,32,128|b:2,2048,32,128|s:False");
    launch(s, T_MAIN, K_COPY, ST_COMPUTE, EW_NS, 0);
    close_(s, cp);
    close_(s, cl);
    view(s, T_MAIN, "aten::_unsafe_view", "b:2,2048,32,128|L:[2, 2048, 4096]", B_UNSAFE_VIEW);
    close_(s, rs);
    close_(s, p);
    linear(s, 7 * l + 3, 4096, 4096, K_GEMM, GEMM_NS);
    module_end(s, a, b, c, d);
}

static void mlp(sim *s, int l)
{
    int32_t a, b, c, d;
    a = module(s, mod_mlp[l], "model.py(97): forward", &b, &c, &d);
    linear(s, 7 * l + 4, 11008, 4096, K_GEMM_MLP, GEMM_MLP_NS);
    int32_t p = py(s, T_MAIN, "torch/nn/functional.py(2380): silu");
    int32_t q = py(s, T_MAIN, "<built-in function silu>");
    leaf(s, T_MAIN, "aten::silu", XM, B_SILU, K_SILU, EW_NS * 2, ACT_B * 11008 / 4096);
    close_(s, q);
    close_(s, p);
    linear(s, 7 * l + 5, 11008, 4096, K_GEMM_MLP, GEMM_MLP_NS);
    leaf(s, T_MAIN, "aten::mul", XM "|" XM, B_MUL, K_MUL, EW_NS * 3, ACT_B * 11008 / 4096);
    linear(s, 7 * l + 6, 4096, 11008, K_GEMM_MLP, GEMM_MLP_NS);
    module_end(s, a, b, c, d);
}

static void decoder_layer(sim *s, int l)
{
    s->cur_layer = l;
    int32_t a, b, c, d;
    a = module(s, mod_layer[l], "model.py(271): forward", &b, &c, &d);
    rmsnorm(s, 2 * l);
    attention(s, l);
    leaf(s, T_MAIN, "aten::add", X3 "|" X3 "|s:1", B_ADD, K_ADD, EW_NS, ACT_B);
    rmsnorm(s, 2 * l + 1);
    mlp(s, l);
    leaf(s, T_MAIN, "aten::add", X3 "|" X3 "|s:1", B_ADD, K_ADD, EW_NS, ACT_B);
    module_end(s, a, b, c, d);
    s->cur_layer = -1;
}

static void data_loading(sim *s)
{
    /* the pin-memory thread pins the next batch while the main thread waits for it */
    if (s->now[T_PIN] < s->now[T_MAIN] - 3000000)
        s->now[T_PIN] = s->now[T_MAIN] - uni(s, 1000000, 3000000);
    int32_t a = py(s, T_PIN, "torch/utils/data/_utils/pin_memory.py(55): _pin_memory_loop");
    int32_t b = py(s, T_PIN, "torch/utils/data/_utils/pin_memory.py(31): do_one_step");
    int32_t g = py(s, T_PIN, "<method 'get' of 'multiprocessing.queues.Queue' objects>");
    cpu(s, T_PIN, 20000, 90000);
    close_(s, g);
    int32_t c = py(s, T_PIN, "torch/utils/data/_utils/pin_memory.py(69): pin_memory");
    for (int i = 0; i < 2; i++) {
        int32_t d = py(s, T_PIN, "torch/utils/data/_utils/pin_memory.py(69): pin_memory");
        int32_t e = py(s, T_PIN, "<method 'pin_memory' of 'torch._C.TensorBase' objects>");
        int32_t o = op(s, T_PIN, "aten::pin_memory", "l:2,2048|n");
        view(s, T_PIN, "aten::is_pinned", "l:2,2048|n", -1);
        int32_t pp = op(s, T_PIN, "aten::_pin_memory", "l:2,2048|n");
        view(s, T_PIN, "aten::empty", "L:[2, 2048]|s:4|s:0|L:cpu|s:True|n", -1);
        mem_alloc(s, T_PIN, 32768, 1);
        int32_t cp = op(s, T_PIN, "aten::copy_", "l:2,2048|l:2,2048|s:False");
        cpu(s, T_PIN, 8000, 20000);
        close_(s, cp);
        close_(s, pp);
        close_(s, o);
        close_(s, e);
        close_(s, d);
    }
    close_(s, c);
    close_(s, b);
    close_(s, a);

    int32_t u = open_(s, E_USER, T_MAIN,
                      "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", -1);
    int32_t p1 = py(s, T_MAIN, "torch/utils/data/dataloader.py(733): __next__");
    int32_t p2 = py(s, T_MAIN, "torch/utils/data/dataloader.py(1480): _next_data");
    int32_t p3 = py(s, T_MAIN, "torch/utils/data/dataloader.py(1442): _get_data");
    int32_t p4 = py(s, T_MAIN, "torch/utils/data/dataloader.py(1296): _try_get_data");
    int32_t p5 = py(s, T_MAIN, "queue.py(180): get");
    if (s->now[T_MAIN] < s->now[T_PIN])
        s->now[T_MAIN] = s->now[T_PIN] + uni(s, 5000, 20000);
    close_(s, p5);
    close_(s, p4);
    close_(s, p3);
    close_(s, p2);
    close_(s, p1);
    close_(s, u);
    for (int i = 0; i < 2; i++) {
        int32_t p = py(s, T_MAIN, pymethod(s, PM_TO));
        int32_t o = op(s, T_MAIN, "aten::to", "l:2,2048|n|n|n|s:True|s:False|n");
        int32_t c2 = op(s, T_MAIN, "aten::_to_copy", "l:2,2048|n|n|L:cuda:0|n|s:True|n");
        int32_t e = op(s, T_MAIN, "aten::empty_strided",
                       "L:[2, 2048]|L:[2048, 1]|s:4|s:0|L:cuda:0|s:False");
        mem_alloc(s, T_MAIN, 32768, 0);
        close_(s, e);
        int32_t cp = op(s, T_MAIN, "aten::copy_", "l:2,2048|l:2,2048|s:True");
        copy(s, T_MAIN, 0, "Memcpy HtoD (Pinned -> Device)", 32768, 20);
        close_(s, cp);
        close_(s, c2);
        close_(s, o);
        close_(s, p);
    }
}

static void forward(sim *s)
{
    int32_t a, b, c, d;
    a = module(s, "nn.Module: LlamaForCausalLM_0", "model.py(318): forward", &b, &c, &d);
    int32_t e1, e2, e3, e4;
    e1 = module(s, "nn.Module: Embedding_0", "torch/nn/modules/sparse.py(190): forward", &e2, &e3,
                &e4);
    int32_t f = py(s, T_MAIN, "torch/nn/functional.py(2542): embedding");
    int32_t g = py(s, T_MAIN, "<built-in method embedding of type object at 0x7f3b9e2c1f40>");
    int32_t o = op(s, T_MAIN, "aten::embedding", "b:32000,4096|l:2,2048|s:-1|s:False|s:False");
    seq(s, o, B_EMB);
    int32_t r = op(s, T_MAIN, "aten::reshape", "l:2,2048|L:[-1]");
    view(s, T_MAIN, "aten::view", "l:2,2048|L:[-1]", -1);
    close_(s, r);
    leaf(s, T_MAIN, "aten::index_select", "b:32000,4096|s:0|l:4096", -1, K_INDEX, 21000, ACT_B);
    view(s, T_MAIN, "aten::view", "b:4096,4096|L:[2, 2048, 4096]", -1);
    close_(s, o);
    close_(s, g);
    close_(s, f);
    module_end(s, e1, e2, e3, e4);
    for (int l = 0; l < nlayers; l++)
        decoder_layer(s, l);
    rmsnorm(s, 2 * NLAYERS);
    linear(s, 7 * NLAYERS, 32000, 4096, K_GEMM_LM, 1480000);
    int32_t ce = py(s, T_MAIN, "torch/nn/functional.py(3479): cross_entropy");
    int32_t cb =
        py(s, T_MAIN, "<built-in method cross_entropy_loss of PyCapsule object at 0x7f3b9a1d0e70>");
    int32_t cl =
        op(s, T_MAIN, "aten::cross_entropy_loss", "b:4096,32000|l:4096|n|s:1|s:-100|s:0.0");
    seq_peek(s, cl);
    int32_t ls = op(s, T_MAIN, "aten::log_softmax", "b:4096,32000|s:1|n");
    int32_t ls2 = op(s, T_MAIN, "aten::_log_softmax", "b:4096,32000|s:1|s:False");
    seq(s, ls2, B_LSM);
    mem_alloc(s, T_MAIN, 4096LL * 32000 * 2, 0);
    launch(s, T_MAIN, K_LSM, ST_COMPUTE, 260000, 0);
    close_(s, ls2);
    close_(s, ls);
    int32_t nl = op(s, T_MAIN, "aten::nll_loss_nd", "b:4096,32000|l:4096|n|s:1|s:-100");
    int32_t nl2 = op(s, T_MAIN, "aten::nll_loss", "b:4096,32000|l:4096|n|s:1|s:-100");
    int32_t nl3 = op(s, T_MAIN, "aten::nll_loss_forward", "b:4096,32000|l:4096|n|s:1|s:-100");
    seq(s, nl3, B_NLL);
    mem_alloc(s, T_MAIN, 512, 0);
    launch(s, T_MAIN, K_NLL, ST_COMPUTE, 9000, 0);
    close_(s, nl3);
    close_(s, nl2);
    close_(s, nl);
    close_(s, cl);
    close_(s, cb);
    close_(s, ce);
    module_end(s, a, b, c, d);
}

/* ---- backward ------------------------------------------------------------------------------ */

static void accumulate_grad(sim *s, int first, int64_t bytes)
{
    const int A = T_AUTOGRAD;
    int32_t e = open_(s, E_OP, A,
                      "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", -1);
    int32_t g = op(s, A, "torch::autograd::AccumulateGrad", NULL);
    if (first) {
        int32_t d = op(s, A, "aten::detach", "b:4096,4096");
        view(s, A, "detach", "b:4096,4096", -1);
        close_(s, d);
    } else {
        leaf(s, A, "aten::add_", "b:4096,4096|b:4096,4096|s:1", -1, K_ADD_ACC, bytes / 1500, 0);
    }
    close_(s, g);
    close_(s, e);
}

static void allreduce(sim *s, int64_t nelems)
{
    const int A = T_AUTOGRAD;
    int32_t c = op(s, A, "record_param_comms", NULL);
    s->r[c].flags |= F_COMMS;
    s->r[c].v[1] = nelems;
    for (int i = 0; i < 7; i++) {
        int32_t cp = op(s, A, "aten::copy_", "b:4096,4096|b:4096,4096|s:False");
        rt_call(s, A, "cudaStreamIsCapturing", 317, 700, 2000);
        rt_call(s, A, "cudaStreamGetPriority", 236, 500, 1500);
        rt_call(s, A, "cudaDeviceGetStreamPriorityRange", 205, 500, 1500);
        copy(s, A, 0, "Memcpy DtoD (Device -> Device)", nelems * 2 / 7, 1300);
        close_(s, cp);
    }
    int32_t u = open_(s, E_USER, A, "nccl:all_reduce", -1);
    int32_t a = op(s, A, "c10d::allreduce_", "X|n|n|n|s:False|s:-1");
    rt_call(s, A, "cudaEventRecord", 135, 1500, 4000);
    rt_call(s, A, "cudaStreamWaitEvent", 147, 1200, 3500);
    if (s->sfree[ST_NCCL] < s->sfree[ST_COMPUTE])
        s->sfree[ST_NCCL] = s->sfree[ST_COMPUTE];
    launch(s, A, K_NCCL, ST_NCCL, nelems * 2 * 2 * (WORLD - 1) / WORLD / 180, nelems);
    int64_t kts = s->r[s->n - 2].ts, kdur = s->r[s->n - 2].dur; /* the kernel's record */
    rt_call(s, A, "cudaEventRecord", 135, 1500, 4000);
    close_(s, a);
    close_(s, u);
    close_(s, c);
    /* Kineto's GPU-side span of the annotation */
    rec *g = push(s, E_GUSER, A, kts);
    g->dur = kdur;
    g->stream = ST_NCCL;
    g->id = s->r[u].id;
    g->name = "nccl:all_reduce";
}

static void backward_node(sim *s, const tape *t, int first_micro)
{
    const int A = T_AUTOGRAD;
    int32_t e = open_(s, E_OP, A, bwd_eval[t->type], -1);
    s->r[e].flags |= F_SEQ | F_FWD1;
    s->r[e].id2 = t->seq;
    int32_t n = open_(s, E_OP, A, bwd_node[t->type], SIG(X3));
    s->r[n].flags |= F_SEQ | F_FWD1;
    s->r[n].id2 = t->seq;
    rec *f = push(s, E_FB_F, A, s->r[n].ts);
    f->id = t->flow;
    cpu(s, A, 1000, 3000);
    switch (t->type) {
    case B_ADDMM: {
        int32_t o = op(s, A, "aten::t", "b:4096,4096");
        transpose(s, A, "b:4096,4096|s:0|s:1", "b:4096,4096|L:[4096, 4096]|L:[1, 4096]|n", -1);
        close_(s, o);
        o = op(s, A, "aten::mm", "b:4096,4096|b:4096,4096");
        mem_alloc(s, A, 4096LL * 4096 * 2, 0);
        launch(s, A, K_GEMM_DGRAD, ST_COMPUTE, GEMM_NS + 30000, 0);
        close_(s, o);
        o = op(s, A, "aten::t", "b:4096,4096");
        transpose(s, A, "b:4096,4096|s:0|s:1", "b:4096,4096|L:[4096, 4096]|L:[1, 4096]|n", -1);
        close_(s, o);
        o = op(s, A, "aten::mm", "bT:4096,4096|b:4096,4096");
        mem_alloc(s, A, 4096LL * 4096 * 2, 0);
        launch(s, A, K_GEMM_WGRAD, ST_COMPUTE, GEMM_NS + 50000, 0);
        close_(s, o);
        o = op(s, A, "aten::t", "b:4096,4096");
        transpose(s, A, "b:4096,4096|s:0|s:1", "b:4096,4096|L:[4096, 4096]|L:[1, 4096]|n", -1);
        close_(s, o);
        leaf(s, A, "aten::sum", "b:4096,4096|L:[0]|s:True|n", -1, K_SUM, 24000, 8192);
        view(s, A, "aten::view", "b:1,4096|L:[4096]", -1);
        break;
    }
    case B_T:
    case B_TRANSPOSE:
        transpose(s, A, "b:4096,4096|s:0|s:1", "b:4096,4096|L:[4096, 4096]|L:[1, 4096]|n", -1);
        break;
    case B_VIEW:
    case B_UNSAFE_VIEW:
        view(s, A, "aten::view", X3 "|L:[4096, 4096]", -1);
        break;
    case B_MUL:
    case B_MUL_W:
        leaf(s, A, "aten::mul", X3 "|" X3, -1, K_MUL, EW_NS, ACT_B);
        leaf(s, A, "aten::mul", X3 "|" X3, -1, K_MUL, EW_NS, ACT_B);
        if (t->type == B_MUL_W)
            leaf(s, A, "aten::sum", X3 "|L:[0, 1]|s:True|n", -1, K_SUM, 30000, 8192);
        break;
    case B_ADD:
        break;
    case B_POW:
        leaf(s, A, "aten::pow", XF "|s:1", -1, K_POW, EW_NS * 2, ACT * 4);
        leaf(s, A, "aten::mul", XF "|s:2", -1, K_MUL, EW_NS * 2, ACT * 4);
        leaf(s, A, "aten::mul", XF "|" XF, -1, K_MUL, EW_NS * 2, ACT * 4);
        break;
    case B_MEAN:
        view(s, A, "aten::expand", "f:2,2048,1|L:[2, 2048, 4096]|s:False", -1);
        leaf(s, A, "aten::div", XF "|s:4096", -1, K_DIV, EW_NS * 2, ACT * 4);
        break;
    case B_RSQRT:
        leaf(s, A, "aten::pow", "f:2,2048,1|s:3", -1, K_POW, 2500, 16384);
        leaf(s, A, "aten::mul", "f:2,2048,1|s:-0.5", -1, K_MUL, 2500, 16384);
        leaf(s, A, "aten::mul", "f:2,2048,1|f:2,2048,1", -1, K_MUL, 2500, 16384);
        break;
    case B_TOCOPY: {
        int32_t o = op(s, A, "aten::to", XF "|s:15|s:0|L:cuda:0|s:False|s:False|s:False|n");
        int32_t c = op(s, A, "aten::_to_copy", XF "|s:15|s:0|L:cuda:0|n|s:False|n");
        alloc_op(s, A, "aten::empty_strided",
                 "L:[2, 2048, 4096]|L:[8388608, 4096, 1]|s:15|s:0|L:cuda:0|s:False", ACT_B);
        int32_t cp = op(s, A, "aten::copy_", X3 "|" XF "|s:False");
        launch(s, A, K_COPY, ST_COMPUTE, EW_NS * 3 / 2, 0);
        close_(s, cp);
        close_(s, c);
        close_(s, o);
        break;
    }
    case B_SILU:
        leaf(s, A, "aten::silu_backward", XM "|" XM, -1, K_SILU_BWD, EW_NS * 3,
             ACT_B * 11008 / 4096);
        break;
    case B_NEG:
        leaf(s, A, "aten::neg", "b:2,32,2048,64", -1, K_NEG, EW_NS / 2, ACT);
        break;
    case B_SLICE: {
        int32_t o = op(s, A, "aten::slice_backward",
                       "b:2,32,2048,64|L:[2, 32, 2048, 128]|s:3|s:0|s:64|s:1");
        int32_t z = op(s, A, "aten::zeros", "L:[2, 32, 2048, 128]|s:15|n|L:cuda:0|s:False");
        alloc_op(s, A, "aten::empty", "L:[2, 32, 2048, 128]|s:15|n|L:cuda:0|s:False|n", ACT_B);
        int32_t zz = op(s, A, "aten::zero_", XH);
        leaf(s, A, "aten::fill_", XH "|s:0", -1, K_FILL, EW_NS / 2, 0);
        close_(s, zz);
        close_(s, z);
        view(s, A, "aten::slice", XH "|s:3|s:0|s:64|s:1", -1);
        leaf(s, A, "aten::copy_", "b:2,32,2048,64|b:2,32,2048,64|s:False", -1, K_COPY, EW_NS / 2,
             0);
        close_(s, o);
        break;
    }
    case B_CAT:
        for (int i = 0; i < 2; i++) {
            int32_t o = op(s, A, "aten::narrow", XH "|s:-1|s:0|s:64");
            int32_t sl = op(s, A, "aten::slice", XH "|s:3|s:0|s:64|s:1");
            view(s, A, "aten::as_strided", XH "|L:[2, 32, 2048, 64]|L:[8388608, 128, 4096, 1]|n",
                 -1);
            close_(s, sl);
            close_(s, o);
        }
        break;
    case B_FLASH: {
        int32_t o = op(s, A, "aten::_scaled_dot_product_flash_attention_backward",
                       XH "|" XH "|" XH "|" XH "|" XH
                          "|f:2,32,2048|n|n|s:2048|s:2048|s:0.0|s:True|l:|l:|n");
        int32_t fb = op(s, A, "aten::_flash_attention_backward",
                        "b:2,2048,32,128|b:2,2048,32,128|b:2,2048,32,128|b:2,2048,32,128|b:2,2048,"
                        "32,128|f:2,32,2048|n|n|s:2048|s:2048|s:0.0|s:True|l:|l:|n");
        for (int i = 0; i < 3; i++) {
            alloc_op(s, A, "aten::empty_like", "b:2,2048,32,128|n|n|n|n|n", ACT_B);
        }
        alloc_op(s, A, "aten::empty", "L:[2, 32, 2048]|s:6|s:0|L:cuda:0|n|n", 2 * 32 * 2048 * 4);
        int32_t z = op(s, A, "aten::zeros", "L:[2, 2048, 32, 128]|s:6|n|L:cuda:0|n");
        alloc_op(s, A, "aten::empty", "L:[2, 2048, 32, 128]|s:6|n|L:cuda:0|n|n", ACT * 4);
        int32_t zz = op(s, A, "aten::zero_", "f:2,2048,32,128");
        copy(s, A, 1, "Memset (Device)", ACT * 4, 2800);
        close_(s, zz);
        close_(s, z);
        launch(s, A, K_FLASH_BWD_DOT, ST_COMPUTE, 28000, 0);
        rt_call(s, A, "cudaFuncSetAttribute", 239, 800, 2500);
        launch(s, A, K_FLASH_BWD, ST_COMPUTE, 410000, 0);
        launch(s, A, K_FLASH_BWD_CVT, ST_COMPUTE, 26000, 0);
        close_(s, fb);
        close_(s, o);
        break;
    }
    case B_CLONE:
        break;
    case B_EMB: {
        int32_t o =
            op(s, A, "aten::embedding_backward", X3 "|l:2,2048|s:32000|s:-1|s:False|s:False");
        int32_t d = op(s, A, "aten::embedding_dense_backward", X3 "|l:2,2048|s:32000|s:-1|s:False");
        int32_t z = op(s, A, "aten::zeros", "L:[32000, 4096]|s:15|n|L:cuda:0|s:False");
        alloc_op(s, A, "aten::empty", "L:[32000, 4096]|s:15|n|L:cuda:0|s:False|n",
                 32000LL * 4096 * 2);
        int32_t zz = op(s, A, "aten::zero_", "b:32000,4096");
        copy(s, A, 1, "Memset (Device)", 32000LL * 4096 * 2, 2800);
        close_(s, zz);
        close_(s, z);
        launch(s, A, K_EMB_BWD, ST_COMPUTE, 95000, 0);
        close_(s, d);
        close_(s, o);
        break;
    }
    case B_LSM:
        leaf(s, A, "aten::_log_softmax_backward_data", "f:4096,32000|f:4096,32000|s:1|s:15", -1,
             K_LSM_BWD, 380000, 4096LL * 32000 * 2);
        break;
    case B_NLL: {
        int32_t o = op(s, A, "aten::nll_loss_backward", "f:|f:4096,32000|l:4096|n|s:1|s:-100|f:");
        int32_t z = op(s, A, "aten::zeros", "L:[4096, 32000]|s:6|n|L:cuda:0|s:False");
        mem_alloc(s, A, 4096LL * 32000 * 4, 0);
        int32_t zz = op(s, A, "aten::zero_", "f:4096,32000");
        copy(s, A, 1, "Memset (Device)", 4096LL * 32000 * 4, 2800);
        close_(s, zz);
        close_(s, z);
        launch(s, A, K_NLL_BWD, ST_COMPUTE, 14000, 0);
        close_(s, o);
        break;
    }
    }
    close_(s, n);
    mem_free_oldest(s, A);
    close_(s, e);
    /* gradients of parameters */
    if (t->type == B_ADDMM) {
        accumulate_grad(s, first_micro, 4096LL * 4096 * 2);
        accumulate_grad(s, first_micro, 8192);
    } else if (t->type == B_MUL_W || t->type == B_EMB) {
        accumulate_grad(s, first_micro, t->type == B_EMB ? 32000LL * 4096 * 2 : 8192);
    }
}

static void backward(sim *s, int first_micro, int last_micro)
{
    int32_t a = py(s, T_MAIN, "torch/_tensor.py(648): backward");
    int32_t b = py(s, T_MAIN, "torch/autograd/__init__.py(353): backward");
    int32_t c = py(s, T_MAIN, "torch/autograd/graph.py(824): _engine_run_backward");
    int32_t o = op(s, T_MAIN, "aten::ones_like", "f:|n|n|n|n|s:1");
    int32_t el = op(s, T_MAIN, "aten::empty_like", "f:|n|n|n|n|s:1");
    alloc_op(s, T_MAIN, "aten::empty_strided", "L:[]|L:[]|s:6|s:0|L:cuda:0|s:False", 512);
    close_(s, el);
    leaf(s, T_MAIN, "aten::fill_", "f:|s:1", -1, K_FILL, 1500, 0);
    close_(s, o);
    if (s->now[T_AUTOGRAD] < s->now[T_MAIN])
        s->now[T_AUTOGRAD] = s->now[T_MAIN] + uni(s, 8000, 25000);
    int layer = -1;
    int64_t bucket = 0;
    for (size_t i = s->ntp; i-- > 0;) {
        const tape *t = &s->tp[i];
        if (last_micro && t->layer != layer && layer >= 0) {
            allreduce(s, bucket);
            bucket = 0;
        }
        layer = t->layer;
        if (t->type == B_ADDMM)
            bucket += t->layer >= 0 ? 4096LL * 4096 * 7 / 3 : 32000LL * 4096 / 2;
        backward_node(s, t, first_micro);
    }
    if (last_micro)
        allreduce(s, bucket + 32000LL * 4096);
    s->ntp = 0;
    if (s->now[T_MAIN] < s->now[T_AUTOGRAD])
        s->now[T_MAIN] = s->now[T_AUTOGRAD] + uni(s, 5000, 30000);
    close_(s, c);
    close_(s, b);
    close_(s, a);
}

static void optimizer(sim *s)
{
#define FE_PY(m) "<built-in method " m " of type object at 0x7f3b9e2c1f40>"
    static const struct {
        const char *py, *name, *spec;
        int k;
    } fe[] = {
        {FE_PY("_foreach_add_"), "aten::_foreach_add_", "X|s:1", K_MTA_ADD},
        {FE_PY("_foreach_mul_"), "aten::_foreach_mul_", "X|s:0.99995", K_MTA_MUL},
        {FE_PY("_foreach_lerp_"), "aten::_foreach_lerp_", "X|X|s:0.1", K_MTA_LERP},
        {FE_PY("_foreach_mul_"), "aten::_foreach_mul_", "X|s:0.999", K_MTA_MUL},
        {FE_PY("_foreach_addcmul_"), "aten::_foreach_addcmul_", "X|X|X|s:0.001", K_MTA_ADDCMUL},
        {FE_PY("_foreach_sqrt"), "aten::_foreach_sqrt", "X", K_MTA_SQRT},
        {FE_PY("_foreach_div_"), "aten::_foreach_div_", "X|X", K_MTA_DIV},
        {FE_PY("_foreach_add_"), "aten::_foreach_add_", "X|s:1e-08", K_MTA_ADD},
        {FE_PY("_foreach_addcdiv_"), "aten::_foreach_addcdiv_", "X|X|X|X", K_MTA_ADDCDIV},
    };
#undef FE_PY
    int32_t w = py(s, T_MAIN, "torch/optim/optimizer.py(487): wrapper");
    int32_t u = open_(s, E_USER, T_MAIN, "Optimizer.step#AdamW.step", -1);
    int64_t gpu_t0 = -1;
    int32_t st = py(s, T_MAIN, "torch/optim/adamw.py(218): step");
    int32_t aw = py(s, T_MAIN, "torch/optim/adamw.py(745): adamw");
    int32_t mt = py(s, T_MAIN, "torch/optim/adamw.py(531): _multi_tensor_adamw");
    int32_t gr = py(s, T_MAIN, "torch/optim/optimizer.py(94): _group_tensors_by_device_and_dtype");
    cpu(s, T_MAIN, 200000, 400000);
    close_(s, gr);
    for (size_t i = 0; i < sizeof fe / sizeof fe[0]; i++) {
        int32_t p = py(s, T_MAIN, fe[i].py);
        int32_t o = op(s, T_MAIN, fe[i].name, fe[i].spec);
        rt_call(s, T_MAIN, "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 247, 600,
                1500);
        for (int k = 0; k < 48; k++) {
            launch(s, T_MAIN, fe[i].k, ST_COMPUTE, 210000, 0);
            if (gpu_t0 < 0)
                gpu_t0 = s->r[s->n - 2].ts;
        }
        close_(s, o);
        close_(s, p);
    }
    close_(s, mt);
    close_(s, aw);
    close_(s, st);
    close_(s, u);
    close_(s, w);
    rec *g = push(s, E_GUSER, T_MAIN, gpu_t0);
    g->name = "Optimizer.step#AdamW.step";
    g->dur = s->sfree[ST_COMPUTE] - gpu_t0;
    g->stream = ST_COMPUTE;
    g->id = s->r[u].id;

    int32_t z = py(s, T_MAIN, "torch/optim/optimizer.py(955): zero_grad");
    int32_t zu = open_(s, E_USER, T_MAIN, "Optimizer.zero_grad#AdamW.zero_grad", -1);
    cpu(s, T_MAIN, 300000, 900000);
    close_(s, zu);
    close_(s, z);
}

static void loss_item(sim *s)
{
    int32_t p = py(s, T_MAIN, pymethod(s, PM_ITEM));
    int32_t o = op(s, T_MAIN, "aten::item", "f:");
    int32_t d = op(s, T_MAIN, "aten::_local_scalar_dense", "f:");
    copy(s, T_MAIN, 0, "Memcpy DtoH (Device -> Pageable)", 4, 1);
    cpu(s, T_MAIN, 300, 900);
    rec *rt = push(s, E_RT, T_MAIN, s->now[T_MAIN]);
    rt->name = "cudaStreamSynchronize";
    rt->aux = 131;
    rt->id = s->r[d].id;
    rt->id2 = ++s->corr;
    int64_t end =
        s->sfree[ST_COMPUTE] > s->sfree[ST_NCCL] ? s->sfree[ST_COMPUTE] : s->sfree[ST_NCCL];
    int64_t wait = end - s->now[T_MAIN];
    int64_t sd = (wait > 0 ? wait : 0) + uni(s, 3000, 9000);
    rt->dur = sd;
    push(s, E_AC_FH, T_MAIN, s->now[T_MAIN])->id2 = s->corr;
    s->now[T_MAIN] += sd;
    close_(s, d);
    close_(s, o);
    close_(s, p);
}

/* One ProfilerStep with nmicro micro-batches; records land in s->r. */
static void sim_step(sim *s, int step_no, int nmicro)
{
    s->n = 0;
    s->step_first_kernel = -1;
    int32_t ps = open_(s, E_USER, T_MAIN, step_label(step_no), -1);
    int32_t ts = py(s, T_MAIN, "train.py(212): train_step");
    for (int m = 0; m < nmicro; m++) {
        int32_t fb = py(s, T_MAIN, "train.py(188): forward_backward");
        data_loading(s);
        forward(s);
        backward(s, m == 0, m == nmicro - 1);
        close_(s, fb);
    }
    optimizer(s);
    loss_item(s);
    close_(s, ts);
    close_(s, ps);
    if (s->step_first_kernel >= 0) {
        rec *g = push(s, E_GUSER, T_MAIN, s->step_first_kernel);
        g->name = s->r[ps].name;
        g->dur = s->sfree[ST_COMPUTE] - s->step_first_kernel;
        g->stream = ST_COMPUTE;
        g->id = s->r[ps].id;
    }
    s->now[T_MAIN] += uni(s, 20000, 80000);
}

/* =============================================================================================
 * Writing the records as Kineto does.
 */

static inline int pass_of(const rec *r)
{
    return r->kind <= E_FB_F ? r->thr : NTHR;
}

typedef struct gen {
    wr w;
    int64_t ev_idx; /* Kineto's "Ev Idx": position among host events */
    uint64_t nev;   /* elements of traceEvents written */
    uint64_t by_kind[E_NKIND];
    uint64_t model_events; /* what tally's reader keeps */
} gen;

static char *sep(gen *g, char *p)
{
    if (g->nev++)
        p = PUTL(p, ",\n");
    return p;
}

static char *head_x(char *p, const char *cat, const char *name, int64_t pid, int64_t tid,
                    int64_t ts, int64_t dur)
{
    p = PUTL(p, "  {\n    \"ph\": \"X\", \"cat\": \"");
    p = put_s(p, cat);
    p = PUTL(p, "\", \"name\": \"");
    p = put_s(p, name);
    p = PUTL(p, "\", \"pid\": ");
    p = put_i(p, pid);
    p = PUTL(p, ", \"tid\": ");
    p = put_i(p, tid);
    p = PUTL(p, ",\n    \"ts\": ");
    p = put_us(p, ts);
    p = PUTL(p, ", \"dur\": ");
    p = put_us(p, dur);
    return PUTL(p, ",\n    \"args\": {\n      ");
}

static char *flow(char *p, char ph, int64_t id, int64_t pid, int64_t tid, int64_t ts,
                  const char *cat, int bp)
{
    p = PUTL(p, "  {\n    \"ph\": \"");
    *p++ = ph;
    p = PUTL(p, "\", \"id\": ");
    p = put_i(p, id);
    p = PUTL(p, ", \"pid\": ");
    p = put_i(p, pid);
    p = PUTL(p, ", \"tid\": ");
    p = put_i(p, tid);
    p = PUTL(p, ", \"ts\": ");
    p = put_us(p, ts);
    p = PUTL(p, ",\n    \"cat\": \"");
    p = put_s(p, cat);
    p = PUTL(p, "\", \"name\": \"");
    p = put_s(p, cat);
    p = bp ? PUTL(p, "\", \"bp\": \"e\"\n  }") : PUTL(p, "\"\n  }");
    return p;
}

static const char *const pg_ranks = "[0, 1, 2, 3, 4, 5, 6, 7]";

static void write_rec(gen *g, const rec *r)
{
    char *p = wr_at(&g->w);
    p = sep(g, p);
    int64_t tid = thr_tid[r->thr];
    g->by_kind[r->kind]++;
    switch (r->kind) {
    case E_PY:
        p = head_x(p, "python_function", r->name, PID, tid, r->ts, r->dur);
        p = PUTL(p, "\"Python parent id\": ");
        p = r->id2 < 0 ? PUTL(p, "null") : put_i(p, r->id2);
        p = PUTL(p, ", \"Python id\": ");
        p = put_i(p, r->id);
        p = PUTL(p, ", \"Ev Idx\": ");
        p = put_i(p, g->ev_idx++);
        break;
    case E_OP:
    case E_USER:
        p = head_x(p, r->kind == E_OP ? "cpu_op" : "user_annotation", r->name, PID, tid, r->ts,
                   r->dur);
        p = PUTL(p, "\"External id\": ");
        p = put_i(p, r->id);
        if (r->flags & F_SEQ) {
            p = PUTL(p, ",\"Sequence number\": ");
            p = put_i(p, r->id2);
            p = PUTL(p, ", \"Fwd thread id\": ");
            *p++ = (r->flags & F_FWD1) ? '1' : '0';
            p = PUTL(p, ", \"Record function id\": ");
        } else {
            p = PUTL(p, ",\"Record function id\": ");
        }
        p = put_i(p, r->v[0]);
        if (r->flags & F_COMMS) {
            p = PUTL(
                p,
                ", \"Process Group Name\": \"0\", \"Global rank stride\": 1, \"Out msg nelems\": ");
            p = put_i(p, r->v[1]);
            p = PUTL(p, ", \"Process Group Ranks\": \"");
            p = put_s(p, pg_ranks);
            p = PUTL(p, "\", \"Group size\": 8, \"Global rank start\": 0, \"Ev Idx\": ");
            p = put_i(p, g->ev_idx++);
            p = PUTL(p, ", \"In msg nelems\": ");
            p = put_i(p, r->v[1]);
            p = PUTL(p, ", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"dtype\": "
                        "\"BFloat16\", \"Process Group Description\": \"default_pg\", \"Collective "
                        "name\": \"allreduce\"");
            break;
        }
        if (r->aux >= 0) {
            p = PUTL(p, ", ");
            p = put(p, sigs[r->aux].text, sigs[r->aux].len);
        }
        p = PUTL(p, ", \"Ev Idx\": ");
        p = put_i(p, g->ev_idx++);
        break;
    case E_MEM:
        p = PUTL(p, "  {\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", "
                    "\"name\": \"[memory]\",\n    \"pid\": ");
        p = put_i(p, PID);
        p = PUTL(p, ", \"tid\": ");
        p = put_i(p, tid);
        p = PUTL(p, ",\n    \"ts\": ");
        p = put_us(p, r->ts);
        p = PUTL(p, ",\n    \"args\": {\n      \"Ev Idx\": ");
        p = put_i(p, g->ev_idx++);
        p = r->stream ? PUTL(p, ", \"Device Type\": 0, \"Device Id\": -1, \"Addr\": ")
                      : PUTL(p, ", \"Device Type\": 1, \"Device Id\": 0, \"Addr\": ");
        p = put_i(p, r->v[1]);
        p = PUTL(p, ", \"Bytes\": ");
        p = put_i(p, r->v[0]);
        p = PUTL(p, ", \"Total Allocated\": ");
        p = put_i(p, r->v[2]);
        p = PUTL(p, ", \"Total Reserved\": ");
        p = put_i(p, r->v[3]);
        break;
    case E_FB_S:
    case E_FB_F:
        p = flow(p, r->kind == E_FB_S ? 's' : 'f', r->id, PID, tid, r->ts, "fwdbwd",
                 r->kind == E_FB_F);
        wr_done(&g->w, p);
        return;
    case E_AC_S:
        p = flow(p, 's', r->id2, PID, tid, r->ts, "ac2g", 0);
        wr_done(&g->w, p);
        return;
    case E_AC_FH:
        p = flow(p, 'f', r->id2, PID, tid, r->ts, "ac2g", 1);
        wr_done(&g->w, p);
        return;
    case E_AC_FD:
        p = flow(p, 'f', r->id2, 0, stream_id[r->stream], r->ts, "ac2g", 1);
        wr_done(&g->w, p);
        return;
    case E_RT:
        p = head_x(p, "cuda_runtime", r->name, PID, tid, r->ts, r->dur);
        p = PUTL(p, "\"External id\": ");
        p = put_i(p, r->id);
        p = PUTL(p, ",      \"cbid\": ");
        p = put_i(p, r->aux);
        p = PUTL(p, ", \"correlation\": ");
        p = put_i(p, r->id2);
        break;
    case E_KER: {
        const kdesc *k = &kernels[r->aux];
        p = head_x(p, "kernel", k->name, 0, stream_id[r->stream], r->ts, r->dur);
        p = PUTL(p, "\"External id\": ");
        p = put_i(p, r->id);
        p = PUTL(p, ",      \"queued\": 0, \"device\": 0, \"context\": 1,      \"stream\": ");
        p = put_i(p, stream_id[r->stream]);
        p = PUTL(p, ", \"correlation\": ");
        p = put_i(p, r->id2);
        p = PUTL(p, ",      \"registers per thread\": ");
        p = put_i(p, k->regs);
        p = PUTL(p, ",      \"shared memory\": ");
        p = put_i(p, k->smem);
        long blocks = (long)k->grid[0] * k->grid[1] * k->grid[2];
        long threads = (long)k->block[0] * k->block[1] * k->block[2];
        double bps = (double)blocks / 132.0, wps = bps * (double)((threads + 31) / 32);
        p = PUTL(p, ",      \"blocks per SM\": ");
        p = put_fmt(p, "%f", bps);
        p = PUTL(p, ",      \"warps per SM\": ");
        p = put_fmt(p, "%f", wps);
        p = PUTL(p, ",      \"grid\": [");
        p = put_i(p, k->grid[0]);
        p = PUTL(p, ", ");
        p = put_i(p, k->grid[1]);
        p = PUTL(p, ", ");
        p = put_i(p, k->grid[2]);
        p = PUTL(p, "],      \"block\": [");
        p = put_i(p, k->block[0]);
        p = PUTL(p, ", ");
        p = put_i(p, k->block[1]);
        p = PUTL(p, ", ");
        p = put_i(p, k->block[2]);
        p = PUTL(p, "],      \"est. achieved occupancy %\": ");
        int occ = (int)(wps / 64.0 * 100.0);
        p = put_i(p, occ > 100 ? 100 : occ);
        if (r->aux == K_NCCL) {
            p = PUTL(p, ", \"Collective name\": \"allreduce\", \"In msg nelems\": ");
            p = put_i(p, r->v[0]);
            p = PUTL(p, ", \"Out msg nelems\": ");
            p = put_i(p, r->v[0]);
            p = PUTL(p, ", \"Group size\": 8, \"dtype\": \"BFloat16\", \"In split size\": \"[]\", "
                        "\"Out split size\": \"[]\", \"Process Group Name\": \"0\", \"Process "
                        "Group Description\": \"default_pg\", \"Process Group Ranks\": \"");
            p = put_s(p, pg_ranks);
            p = PUTL(p, "\"");
        }
        break;
    }
    case E_CPY:
    case E_SET:
        p = head_x(p, r->kind == E_CPY ? "gpu_memcpy" : "gpu_memset", r->name, 0,
                   stream_id[r->stream], r->ts, r->dur);
        p = PUTL(p, "\"External id\": ");
        p = put_i(p, r->id);
        p = PUTL(p, ",      \"device\": 0, \"context\": 1,      \"stream\": ");
        p = put_i(p, stream_id[r->stream]);
        p = PUTL(p, ", \"correlation\": ");
        p = put_i(p, r->id2);
        p = PUTL(p, ",      \"bytes\": ");
        p = put_i(p, r->v[0]);
        p = PUTL(p, ", \"memory bandwidth (GB/s)\": ");
        p = put_fmt(p, "%.16g", (double)r->v[0] / (double)(r->dur > 0 ? r->dur : 1));
        break;
    case E_GUSER:
        p = head_x(p, "gpu_user_annotation", r->name, 0, stream_id[r->stream], r->ts, r->dur);
        p = PUTL(p, "\"External id\": ");
        p = put_i(p, r->id);
        break;
    }
    p = PUTL(p, "\n    }\n  }");
    wr_done(&g->w, p);
    if (r->kind != E_FB_S && r->kind != E_FB_F && r->kind < E_AC_S)
        g->model_events++;
}

static void write_header(gen *g)
{
    char *p = wr_at(&g->w);
    p = PUTL(p, "\n{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n");
    for (int d = 0; d < WORLD; d++) {
        p = PUTL(p, "    {\n      \"id\": ");
        p = put_i(p, d);
        p = PUTL(
            p,
            ", \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 84929216512,\n"
            "      \"computeMajor\": 9, \"computeMinor\": 0,\n"
            "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
            "      \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, \"warpSize\": 32,\n"
            "      \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": 233472,\n"
            "      \"numSms\": 132, \"sharedMemPerBlockOptin\": 232448\n    }");
        p = d + 1 < WORLD ? PUTL(p, ",\n") : PUTL(p, "\n");
    }
    p = PUTL(
        p,
        "  ],\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8, "
        "\"pg_count\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", "
        "\"backend_config\": \"cuda:nccl\", \"pg_size\": 8, \"ranks\": [0, 1, 2, 3, 4, 5, 6, 7]}], "
        "\"nccl_version\": \"2.21.5\"},\n"
        "  \"record_shapes\": 1,\n  \"profile_memory\": 1,\n  \"with_stack\": 1,\n"
        "  \"trace_id\": \"5B1E3C0F9A7D4E2BA1C8F06D3E9B7A21\",\n"
        "  \"traceEvents\": [\n");
    wr_done(&g->w, p);
}

static char *meta(char *p, const char *name, int64_t ts, int64_t pid, int64_t tid, const char *key,
                  const char *sval, int64_t ival)
{
    p = PUTL(p, "  {\n    \"name\": \"");
    p = put_s(p, name);
    p = PUTL(p, "\", \"ph\": \"M\", \"ts\": ");
    p = put_us(p, ts);
    p = PUTL(p, ", \"pid\": ");
    p = put_i(p, pid);
    p = PUTL(p, ", \"tid\": ");
    p = put_i(p, tid);
    p = PUTL(p, ",\n    \"args\": {\n      \"");
    p = put_s(p, key);
    p = PUTL(p, "\": ");
    if (sval) {
        *p++ = '"';
        p = put_s(p, sval);
        *p++ = '"';
    } else {
        p = put_i(p, ival);
    }
    return PUTL(p, "\n    }\n  }");
}

static void write_footer(gen *g, const char *path, int64_t t_end)
{
    int64_t t0 = T0_NS + 100000;
    char *p;
#define META(name, pid, tid, key, sval, ival)                                                      \
    do {                                                                                           \
        p = wr_at(&g->w);                                                                          \
        p = sep(g, p);                                                                             \
        p = meta(p, name, t0, pid, tid, key, sval, ival);                                          \
        wr_done(&g->w, p);                                                                         \
    } while (0)
    META("process_name", PID, 0, "name", "python3.11", 0);
    META("process_labels", PID, 0, "labels", "CPU", 0);
    META("process_sort_index", PID, 0, "sort_index", NULL, PID);
    char b[64];
    for (int d = 0; d < WORLD; d++) {
        META("process_name", d, 0, "name", "python3.11", 0);
        snprintf(b, sizeof b, "GPU %d", d);
        META("process_labels", d, 0, "labels", b, 0);
        META("process_sort_index", d, 0, "sort_index", NULL, 16777216 + d);
    }
    for (int st = 0; st < NSTREAM; st++) {
        snprintf(b, sizeof b, "stream %d ", stream_id[st]);
        META("thread_name", 0, stream_id[st], "name", b, 0);
        META("thread_sort_index", 0, stream_id[st], "sort_index", NULL, stream_id[st]);
    }
    for (int i = 0; i < NTHR; i++) {
        META("thread_name", PID, thr_tid[i], "name", host_thread_label[i], 0);
        META("thread_sort_index", PID, thr_tid[i], "sort_index", NULL, thr_tid[i]);
    }
#undef META
    p = wr_at(&g->w);
    p = sep(g, p);
    p = PUTL(p, "  {\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
    p = put_us(p, T0_NS);
    p = PUTL(p, ", \"dur\": ");
    p = put_us(p, t_end - T0_NS);
    p = PUTL(p, ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": "
                "\"PyTorch Profiler (0)\",\n    \"args\": {\n      \"Op count\": 0\n    }\n  },\n");
    p = PUTL(p, "  {\n    \"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": ");
    p = put_us(p, T0_NS);
    p = PUTL(p, ",\n    \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {\n      \"sort_index\": "
                "536870912\n    }\n  },\n");
    p = PUTL(p, "  {\n    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": "
                "\"g\",\n    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": ");
    p = put_us(p, T0_NS);
    p = PUTL(p, "\n  },\n  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n  "
                "  \"pid\": \"\", \"tid\": \"\", \"ts\": ");
    p = put_us(p, t_end + 1000);
    p = PUTL(p, "\n  }\n  ],\n  \"traceName\": \"");
    const char *base = strrchr(path, '/');
    p = put_s(p, base ? base + 1 : path);
    p = PUTL(p, "\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
    p = put_i(p, BASE_NS);
    p = PUTL(p, "\n}\n");
    g->nev += 3; /* the three elements written after the Trace span */
    wr_done(&g->w, p);
}

/* Simulate every step once per pass (the simulation is deterministic) and write the records of
 * that pass: host threads one after the other, then the runtime/device side. */
static int64_t write_events(gen *g, uint64_t seed, int nsteps, int nmicro, int first_step, sim *s)
{
    int64_t end = 0;
    for (int pass = 0; pass <= NTHR; pass++) {
        sim_init(s, seed);
        for (int st = 0; st < nsteps; st++) {
            sim_step(s, first_step + st, nmicro);
            for (size_t i = 0; i < s->n; i++)
                if (pass_of(&s->r[i]) == pass)
                    write_rec(g, &s->r[i]);
        }
        if (s->trace_end > end)
            end = s->trace_end;
    }
    return end;
}

static int cmd_gen(int argc, char **argv)
{
    const char *out = NULL;
    double mb = 1024;
    uint64_t seed = 42;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--mb") && i + 1 < argc)
            mb = atof(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (argv[i][0] != '-' && !out)
            out = argv[i];
        else {
            fprintf(stderr, "usage: bench_json gen OUT.json [--mb N] [--seed S]\n");
            return 2;
        }
    }
    if (!out || mb <= 0) {
        fprintf(stderr, "usage: bench_json gen OUT.json [--mb N] [--seed S]\n");
        return 2;
    }
    init_strings();
    uint64_t target = (uint64_t)(mb * 1e6);

    /* Size one step of one and of two micro-batches (counting only) to choose the shape. */
    sim s;
    memset(&s, 0, sizeof s);
    gen g;
    memset(&g, 0, sizeof g);
    g.w.fd = -1;
    g.w.cap = WR_CAP;
    g.w.buf = xrealloc(NULL, WR_CAP);
    write_events(&g, seed, 1, 1, 10, &s);
    wr_flush(&g.w);
    double one = (double)g.w.total;
    g.w.total = 0;
    if ((double)target < one) {
        /* smaller than one step of the full model: fewer layers */
        nlayers = (int)(NLAYERS * (double)target / one);
        if (nlayers < 1)
            nlayers = 1;
        write_events(&g, seed, 1, 1, 10, &s);
        wr_flush(&g.w);
        one = (double)g.w.total;
        g.w.total = 0;
    }
    write_events(&g, seed, 1, 2, 10, &s);
    wr_flush(&g.w);
    double per_micro = (double)g.w.total - one, fixed = one - per_micro;
    int nsteps = 5, nmicro;
    double m = ((double)target / nsteps - fixed) / per_micro;
    if (m < 1) {
        nmicro = 1;
        nsteps = (int)((double)target / one + 0.5);
        if (nsteps < 1)
            nsteps = 1;
    } else {
        if (m > 32) {
            nsteps = (int)((double)target / (32 * per_micro + fixed) + 0.999);
            m = ((double)target / nsteps - fixed) / per_micro;
        }
        nmicro = (int)(m + 0.5);
    }

    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "bench_json: cannot write %s: %s\n", out, strerror(errno));
        return 1;
    }
    free(g.w.buf);
    memset(&g, 0, sizeof g);
    g.w.fd = fd;
    g.w.cap = WR_CAP;
    g.w.buf = xrealloc(NULL, WR_CAP);
    g.w.target = target;
    g.w.what = "bench_json gen";
    g.w.t0 = g.w.tlast = now_s();
    double t0 = now_s();
    write_header(&g);
    int64_t end = write_events(&g, seed, nsteps, nmicro, 10, &s);
    write_footer(&g, out, end);
    wr_flush(&g.w);
    if (close(fd) != 0) {
        fprintf(stderr, "bench_json: error writing %s: %s\n", out, strerror(errno));
        return 1;
    }
    double dt = now_s() - t0;
    if (g.w.shown)
        fprintf(stderr, "\r%-70s\r", "");
    printf("wrote %s: %.1f MB in %.2f s (%.0f MB/s); %d steps x %d micro-batches, %d layers\n", out,
           (double)g.w.total / 1e6, dt, (double)g.w.total / 1e6 / dt, nsteps, nmicro, nlayers);
    uint64_t flows = 0;
    for (int k = 0; k < E_NKIND; k++)
        if (k == E_FB_S || k == E_FB_F || k >= E_AC_S)
            flows += g.by_kind[k];
    printf("traceEvents: %llu elements, %.0f bytes each on average\n", (unsigned long long)g.nev,
           (double)g.w.total / (double)g.nev);
    for (int k = 0; k < E_NKIND; k++)
        printf("  %-20s %10llu  %5.1f%%\n", kind_name[k], (unsigned long long)g.by_kind[k],
               100.0 * (double)g.by_kind[k] / (double)g.nev);
    printf("  %-20s %10llu\n", "metadata/trace",
           (unsigned long long)(g.nev - g.model_events - flows));
    printf("model events expected (X and [memory] i; not flows, M, Trace, global i): %llu\n",
           (unsigned long long)g.model_events);
    free(g.w.buf);
    free(s.r);
    free(s.tp);
    return 0;
}

/* =============================================================================================
 * read
 */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Uncompressed size of a gzip file (0 on error). */
static uint64_t gz_size(const char *path)
{
    gzFile z = gzopen(path, "rb");
    if (!z)
        return 0;
    gzbuffer(z, 1u << 18);
    static char buf[1 << 20];
    uint64_t n = 0;
    int k;
    while ((k = gzread(z, buf, sizeof buf)) > 0)
        n += (uint64_t)k;
    gzclose(z);
    return k < 0 ? 0 : n;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

#define READ_USAGE                                                                                 \
    "usage: bench_json read FILE [--repeat K] [--expect N] [--threads T] [--no-progress]\n"        \
    "                           [--oneline]\n"

static int cmd_read(int argc, char **argv)
{
    const char *file = NULL;
    int repeat = 1, progress = 1, threads = 1, oneline = 0;
    long long expect = -1;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--expect") && i + 1 < argc)
            expect = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--no-progress"))
            progress = 0;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--oneline"))
            oneline = 1;
        else if (argv[i][0] != '-' && !file)
            file = argv[i];
        else {
            fputs(READ_USAGE, stderr);
            return 2;
        }
    }
    if (!file || repeat < 1 || repeat > 1000 || threads < 0) {
        fputs(READ_USAGE, stderr);
        return 2;
    }
    struct stat st;
    if (stat(file, &st) != 0) {
        fprintf(stderr, "bench_json: %s: %s\n", file, strerror(errno));
        return 1;
    }
    uint64_t disk = (uint64_t)st.st_size, json = disk;
    int gz = 0;
    {
        unsigned char m[2] = {0, 0};
        FILE *f = fopen(file, "rb");
        if (f) {
            gz = fread(m, 1, 2, f) == 2 && m[0] == 0x1f && m[1] == 0x8b;
            fclose(f);
        }
        if (gz)
            json = gz_size(file);
    }

    double *tl = xrealloc(NULL, sizeof(double) * (size_t)repeat);
    double *tr = xrealloc(NULL, sizeof(double) * (size_t)repeat);
    double *tt = xrealloc(NULL, sizeof(double) * (size_t)repeat);
    long peak_kb = 0;
    double cpu_user = 0, cpu_sys = 0;
    size_t nev = 0;
    uint64_t by_cat[TL_CAT_COUNT] = {0};
    int status = 0;
    for (int rep = 0; rep < repeat; rep++) {
        struct rusage ru0, ru1;
        getrusage(RUSAGE_SELF, &ru0);
        tl_report_opts ro;
        memset(&ro, 0, sizeof ro);
        ro.fmt = TL_FMT_TEXT;
        ro.unit = TL_UNIT_AUTO;
        ro.header = 1;
        ro.threads = threads; /* the views computed ahead in as many threads as the parse */
        tl_error err = {{0}};
        double a = now_s();
        if (tl_report_check_views(ro.views, &err) != 0) {
            fprintf(stderr, "bench_json: %s\n", err.msg);
            return 1;
        }
        tl_trace t;
        tl_trace_init(&t);
        t.read_threads = threads;
        tl_malloc_for_one_trace(); /* as the tally command reads, then computes its views */
        if (tl_load(&t, file, progress, &err) != 0) {
            fprintf(stderr, "bench_json: %s\n", err.msg);
            tl_trace_free(&t);
            return 1;
        }
        if (!t.finished && tl_trace_finish(&t) != 0) {
            fprintf(stderr, "bench_json: %s: out of memory\n", file);
            tl_trace_free(&t);
            return 1;
        }
        tl_malloc_for_views(&t);
        double b = now_s();
        FILE *out = fopen("/dev/null", "w");
        if (!out) {
            fprintf(stderr, "bench_json: cannot open /dev/null\n");
            return 1;
        }
        int rc = tl_report_write(out, &t, &ro, &err);
        int bad = ferror(out);
        fclose(out);
        double c = now_s();
        if (rc != 0 || bad) {
            fprintf(stderr, "bench_json: report: %s\n", rc ? err.msg : "write error");
            status = 1;
        }
        tl[rep] = b - a;
        tr[rep] = c - b;
        tt[rep] = c - a;
        if (rep == 0) {
            getrusage(RUSAGE_SELF, &ru1);
            peak_kb = ru1.ru_maxrss;
            cpu_user = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
            cpu_sys = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
            nev = t.nev;
            for (size_t i = 0; i < t.nev; i++)
                if (t.ev[i].cat < TL_CAT_COUNT)
                    by_cat[t.ev[i].cat]++;
        }
        if (repeat > 1)
            fprintf(stderr, "bench_json: run %d/%d: load %.3f s, report %.3f s\n", rep + 1, repeat,
                    tl[rep], tr[rep]);
        tl_trace_free(&t);
    }
    double ml = median(tl, repeat), mr = median(tr, repeat), mt = median(tt, repeat);
    double peak = (double)peak_kb * 1024.0;
    if (oneline) { /* for scale, which runs read in a child per case and parses this */
        printf("read %.6f %.6f %.6f %zu %.0f\n", mt, cpu_user, cpu_sys, nev, (double)json);
        free(tl);
        free(tr);
        free(tt);
        return status;
    }
    printf("file     %s\n", file);
    if (gz)
        printf("size     %.1f MB of JSON (%.1f MB gzip on disk, %.1fx)\n", (double)json / 1e6,
               (double)disk / 1e6, (double)json / (double)disk);
    else
        printf("size     %.1f MB of JSON\n", (double)json / 1e6);
    printf("load     %.3f s  (tl_load incl. tl_trace_finish)%s\n", ml,
           repeat > 1 ? "  median" : "");
    printf("report   %.3f s  (default report, all views, text, to /dev/null)\n", mr);
    printf("total    %.3f s  -> %.0f MB/s of JSON (load alone %.0f MB/s); %d run%s\n", mt,
           (double)json / 1e6 / mt, (double)json / 1e6 / ml, repeat,
           repeat > 1 ? "s, medians" : "");
    printf("cpu      first run: user %.2f s, sys %.2f s\n", cpu_user, cpu_sys);
    printf("events   %zu loaded", nev);
    if (expect >= 0) {
        printf(" (expected %lld: %s)", expect, (long long)nev == expect ? "ok" : "MISMATCH");
        if ((long long)nev != expect)
            status = 1;
    }
    printf("\n        ");
    for (int c = 0; c < TL_CAT_COUNT; c++)
        if (by_cat[c])
            printf(" %s=%llu", tl_cat_name((tl_cat)c), (unsigned long long)by_cat[c]);
    printf("\npeak RSS %.1f MB = %.2fx the JSON's size (ru_maxrss after the first run)\n",
           peak / 1e6, peak / (double)json);
    free(tl);
    free(tr);
    free(tt);
    return status;
}

/* =============================================================================================
 * scale
 */

#define SCALE_USAGE                                                                                \
    "usage: bench_json scale [--dir D] [--sizes 10,100,1024,2048] [--threads 1,2,0] [--repeat "    \
    "K]\n"                                                                                         \
    "                        [--no-python] [--python-max-gb G]\n"

#define SCALE_MAX 16 /* sizes, thread counts */

static const char *const python = "/usr/bin/python3";

/* Parse "a,b,c" into v (at most SCALE_MAX values >= lo); returns how many, or -1. */
static int parse_list(const char *s, int *v, int lo)
{
    int n = 0;
    while (*s) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || x < lo || x > 1 << 20 || n == SCALE_MAX || (*end && *end != ','))
            return -1;
        v[n++] = (int)x;
        s = *end ? end + 1 : end;
    }
    return n ? n : -1;
}

static void print_loadavg(const char *when)
{
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            strcpy(buf, "?");
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
    printf("load average %s: %s\n", when, buf);
}

/* One run of a program in a child: its wall time as the parent sees it, its CPU time and peak
 * RSS from wait4 (the child's own, so that no case's peak hides another's), and the first line
 * it printed (into line, when not NULL). Returns 0, or -1 when it could not run or failed. */
typedef struct child_run {
    double wall, cpu, rss; /* s, s, bytes */
} child_run;

static int run_child(char *const argv[], char *line, size_t cap, child_run *r)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    char buf[4096];
    ssize_t k;
    while ((k = read(fd[0], buf, sizeof buf)) > 0 || (k < 0 && errno == EINTR))
        for (ssize_t i = 0; i < k; i++)
            if (line && n + 1 < cap)
                line[n++] = buf[i];
    close(fd[0]);
    if (line && cap)
        line[n] = 0;
    int st;
    struct rusage ru;
    while (wait4(pid, &st, 0, &ru) < 0)
        if (errno != EINTR)
            return -1;
    r->wall = now_s() - t0;
    r->cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
    r->rss = (double)ru.ru_maxrss * 1024.0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Read the file through once, so that every case reads it from the page cache. */
static void warm_cache(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    static char buf[1 << 20];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    close(fd);
}

static int cmd_scale(int argc, char **argv)
{
    const char *dir = "bench-data";
    int sizes[SCALE_MAX] = {10, 100, 1024, 2048}, nsizes = 4;
    int threads[SCALE_MAX] = {1, 2, 0}, nthreads = 3;
    int repeat = 3, py = 1;
    double py_max = 12e9;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            nsizes = parse_list(argv[++i], sizes, 1);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            nthreads = parse_list(argv[++i], threads, 0);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-python"))
            py = 0;
        else if (!strcmp(argv[i], "--python-max-gb") && i + 1 < argc)
            py_max = atof(argv[++i]) * 1e9;
        else
            nsizes = -1;
    }
    if (nsizes < 0 || nthreads < 0 || repeat < 1 || repeat > 100) {
        fputs(SCALE_USAGE, stderr);
        return 2;
    }
    if (py && access(python, X_OK) != 0) {
        printf("%s not found: no Python figures\n", python);
        py = 0;
    }
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        fprintf(stderr, "bench_json: cannot find its own program\n");
        return 1;
    }
    self[sl] = 0;
    mkdir(dir, 0755);
    char path[SCALE_MAX][4096];
    double bytes[SCALE_MAX];
    for (int s = 0; s < nsizes; s++) {
        snprintf(path[s], sizeof path[s], "%s/kineto_%dmb.json", dir, sizes[s]);
        struct stat st;
        if (stat(path[s], &st) != 0) {
            char mb[32];
            snprintf(mb, sizeof mb, "%d", sizes[s]);
            char *gen_argv[] = {self, "gen", path[s], "--mb", mb, NULL};
            child_run r;
            printf("generating %s ...\n", path[s]);
            fflush(stdout);
            if (run_child(gen_argv, NULL, 0, &r) != 0 || stat(path[s], &st) != 0) {
                fprintf(stderr, "bench_json: could not write %s\n", path[s]);
                return 1;
            }
        }
        bytes[s] = (double)st.st_size;
        warm_cache(path[s]);
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    print_loadavg("before");
    printf("%d rounds; in each, every size (small first) and thread count once, then Python\n",
           repeat);
    fflush(stdout);

    /* [size][thread or nthreads for Python][round] */
    static double wall[SCALE_MAX][SCALE_MAX + 1][100], cpu[SCALE_MAX][SCALE_MAX + 1][100],
        rss[SCALE_MAX][SCALE_MAX + 1][100];
    int py_skip[SCALE_MAX] = {0};
    double py_ratio = 0; /* the largest peak-RSS / file ratio Python showed so far */
    int status = 0;
    for (int rep = 0; rep < repeat; rep++)
        for (int s = 0; s < nsizes; s++) {
            for (int k = 0; k < nthreads; k++) {
                char th[16], line[256];
                snprintf(th, sizeof th, "%d", threads[k]);
                char *read_argv[] = {self, "read",          path[s],     "--threads",
                                     th,   "--no-progress", "--oneline", NULL};
                child_run r;
                double t, u, sy;
                if (run_child(read_argv, line, sizeof line, &r) != 0 ||
                    sscanf(line, "read %lf %lf %lf", &t, &u, &sy) != 3) {
                    fprintf(stderr, "bench_json: read %s failed\n", path[s]);
                    return 1;
                }
                /* the child's own clock and CPU time around load and report: not its start
                 * (exec, the dynamic linker) nor its exit */
                wall[s][k][rep] = t;
                cpu[s][k][rep] = u + sy;
                rss[s][k][rep] = r.rss;
            }
            if (!py)
                continue;
            /* Python holds the whole document as objects, several times the file: estimated
             * from the smaller sizes it read, skipped where that would not fit */
            if (rep == 0 && (py_ratio ? py_ratio * bytes[s] : 0) > py_max)
                py_skip[s] = 1;
            if (py_skip[s])
                continue;
            char *py_argv[] = {(char *)python, "-c",
                               "import json,sys; json.load(open(sys.argv[1]))", path[s], NULL};
            child_run r;
            if (run_child(py_argv, NULL, 0, &r) != 0) {
                printf("python3 json.load of %s failed\n", path[s]);
                py_skip[s] = 1;
                status = 1;
                continue;
            }
            wall[s][nthreads][rep] = r.wall;
            cpu[s][nthreads][rep] = r.cpu;
            rss[s][nthreads][rep] = r.rss;
            if (r.rss / bytes[s] > py_ratio)
                py_ratio = r.rss / bytes[s];
        }
    print_loadavg("after");

    printf(
        "\ntally: bench_json read (tl_load + default report to /dev/null) in a fresh process per "
        "case, medians of %d\n",
        repeat);
    printf("threads: as requested (read_threads; 0 = all cores, %ld here)\n", ncpu);
    printf("%10s %8s %9s %11s %9s %9s %9s\n", "size MB", "threads", "MB/s", "CPU ms/MB", "vs first",
           "RSS/file", "speed-up");
    double first[SCALE_MAX] = {0}, lo[SCALE_MAX], hi[SCALE_MAX];
    for (int s = 0; s < nsizes; s++)
        for (int k = 0; k < nthreads; k++) {
            double w = median(wall[s][k], repeat), c = median(cpu[s][k], repeat),
                   m = median(rss[s][k], repeat), mb = bytes[s] / 1e6;
            char th[32];
            if (threads[k])
                snprintf(th, sizeof th, "%d", threads[k]);
            else
                snprintf(th, sizeof th, "all %ld", ncpu);
            double per = c * 1e3 / mb;
            if (s == 0)
                first[k] = lo[k] = hi[k] = per;
            lo[k] = per < lo[k] ? per : lo[k];
            hi[k] = per > hi[k] ? per : hi[k];
            /* wall time of the first thread count listed (1 when asked first) over this one's */
            printf("%10.1f %8s %9.0f %11.3f %8.1f%% %9.3f %8.2fx\n", mb, th, mb / w, per,
                   100.0 * (per / first[k] - 1), m / bytes[s], median(wall[s][0], repeat) / w);
        }
    for (int k = 0; k < nthreads; k++) {
        char th[32];
        if (threads[k])
            snprintf(th, sizeof th, "%d thread%s", threads[k], threads[k] == 1 ? "" : "s");
        else
            snprintf(th, sizeof th, "all %ld threads", ncpu);
        printf("CPU ms/MB over the sizes, %s: min %.3f, max %.3f, max/min %.2f\n", th, lo[k], hi[k],
               lo[k] > 0 ? hi[k] / lo[k] : 0.0);
    }
    if (py) {
        printf("\nPython: %s -c 'import json,sys; json.load(open(sys.argv[1]))', medians of %d "
               "(its start, ~20 ms, included)\n",
               python, repeat);
        printf("%10s %9s %11s %9s\n", "size MB", "MB/s", "CPU ms/MB", "RSS/file");
        for (int s = 0; s < nsizes; s++) {
            double mb = bytes[s] / 1e6;
            if (py_skip[s]) {
                printf("%10.1f   skipped: would need ~%.0f GB (%.1fx the file), over %.0f GB\n", mb,
                       py_ratio * bytes[s] / 1e9, py_ratio, py_max / 1e9);
                continue;
            }
            printf("%10.1f %9.0f %11.3f %9.3f\n", mb, mb / median(wall[s][nthreads], repeat),
                   median(cpu[s][nthreads], repeat) * 1e3 / mb,
                   median(rss[s][nthreads], repeat) / bytes[s]);
        }
    }
    return status;
}

int main(int argc, char **argv)
{
    tl_malloc_for_one_trace(); /* as the tally command does */
    if (argc >= 2 && !strcmp(argv[1], "gen"))
        return cmd_gen(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "read"))
        return cmd_read(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "scale"))
        return cmd_scale(argc, argv);
    fprintf(stderr, "usage: bench_json gen OUT.json [--mb N] [--seed S]\n%s%s", READ_USAGE,
            SCALE_USAGE);
    return argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? 0 : 2;
}
