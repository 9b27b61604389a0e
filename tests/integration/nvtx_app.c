/*
 * nvtx_app.c — an "unmodified" program using NVTX v3 (header-only), never linked with tally;
 * nvtx_inject.sh runs it under `tally run` and checks every range. It checks the values NVTX
 * returns (range levels) itself: exit 3 when one is wrong.
 *
 *   nvtx_app [--expect-tool]   without the flag, the levels are not checked (no tool: -2)
 */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

int nvtx_other_work(void);

static int expect_tool;
static int bad;

static void expect_level(int got, int want, const char *what)
{
    if (expect_tool && got != want) {
        fprintf(stderr, "nvtx_app: %s returned %d, expected %d\n", what, got, want);
        bad = 1;
    }
}

static nvtxRangeId_t cross_id;

static void *worker1(void *arg)
{
    (void)arg;
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "worker1");
    expect_level(nvtxRangePushA("worker1: outer"), 0, "worker1 push");
    expect_level(nvtxRangePushA("worker1: inner"), 1, "worker1 nested push");
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangeEnd(cross_id); /* started on main */
    return NULL;
}

static void *worker2(void *arg)
{
    (void)arg;
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "worker2");
    for (int i = 0; i < 3; i++) {
        nvtxRangePushA("worker2: job");
        nvtxRangePop();
    }
    return NULL;
}

static nvtxEventAttributes_t attrs(void)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    return a;
}

int main(int argc, char **argv)
{
    expect_tool = argc > 1 && !strcmp(argv[1], "--expect-tool");
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "main");
    nvtxNameCategoryA(1, "forward");
    nvtxNameCategoryA(2, "io");

    expect_level(nvtxRangePushA("step 0"), 0, "push step 0");
    nvtxMarkA("hello mark");

    nvtxEventAttributes_t a = attrs();
    a.category = 1;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = 0xff00ff00;
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = 42;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "layer1";
    expect_level(nvtxRangePushEx(&a), 1, "pushEx layer1");
    expect_level(nvtxRangePushA("aten::mm, seq = 3, op_id = 7, sizes = [[2, 3], [3, 4]], "
                                "input_op_ids = [(0,-1), (1,0)]"),
                 2, "push aten::mm");
    usleep(20000);
    expect_level(nvtxRangePop(), 2, "pop aten::mm");
    nvtxRangePop();

    a = attrs();
    a.category = 2;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "load";
    nvtxRangePushEx(&a);
    nvtxRangePop();

    nvtxRangePushW(L"wide \u00e9");
    nvtxRangePop();

    nvtxDomainHandle_t dom = nvtxDomainCreateA("my_domain");
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "registered string");
    a = attrs();
    a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    a.payload.dValue = 3.5;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = reg;
    expect_level(nvtxDomainRangePushEx(dom, &a), 0, "domain push (own level)");
    a = attrs();
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "domain mark";
    nvtxDomainMarkEx(dom, &a);
    expect_level(nvtxDomainRangePop(dom), 0, "domain pop");

    cross_id = nvtxRangeStartA("cross-thread range");
    pthread_t t1, t2;
    pthread_create(&t1, NULL, worker1, NULL);
    pthread_join(t1, NULL);
    pthread_create(&t2, NULL, worker2, NULL);
    pthread_join(t2, NULL);

    expect_level(nvtx_other_work(), 1, "libother push");
    expect_level(nvtxRangePop(), 0, "pop step 0");
    printf("nvtx_app done\n");
    return bad ? 3 : 0;
}
