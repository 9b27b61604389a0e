/*
 * memory.h — where the bytes go: the memory table of a trace (t->mem) replayed in time order,
 * per device, into what the memory view, the findings and the InternLM-style log show.
 *
 * Definitions (docs/memory.md has them in full, with where they follow TensorBoard's PyTorch
 * profiler plugin and where they differ):
 *
 *   - Allocated on a device after each record: the allocator's own total when the record carries
 *     it (Kineto's "Total Allocated", tally's PyTorch capture), else the previous level plus the
 *     record's bytes, starting from the blocks alive when recording began (tally's LIVE
 *     records). Reserved likewise from "Total Reserved" (unknown where no record carries it, as
 *     for PyTorch's CPU allocator, which reports 0).
 *   - A device has a timeline when its level is known: its records carry the allocator's totals
 *     or addresses (tally's own). PyTorch traces from before 1.10 carry neither: their bytes
 *     count per operator, but no peak is stated.
 *   - The peak is the highest allocated level (the first record that reaches it); its step is the
 *     step span containing it.
 *   - A block is an allocation with an address, alive until the free of the same address on
 *     the same device. A free of an address with no live block is counted (unmatched); an
 *     allocation at a live address is counted (reused) and ends the old block there.
 *   - The owner of a record in a trace PyTorch wrote is, as TensorBoard attributes it, the
 *     innermost span on the same thread whose interval [start, end) holds its time, among
 *     operators, Python frames, steps, optimizer and data-loading spans; it counts when that span
 *     is an operator (an operator that is its parent's only child and has its name is merged
 *     into it, as TensorBoard and torch do). In tally's own traces, the innermost range of any
 *     kind but a step (tally_alloc sits in the program's ranges). CUPTI's records take the
 *     thread and time of their API call (by correlation id).
 */
#ifndef TALLY_ANALYSIS_MEMORY_H
#define TALLY_ANALYSIS_MEMORY_H

#include "trace/model.h"

#include <stddef.h>
#include <stdint.h>

#define TL_MEM_NEVER INT64_MAX /* free_ts of a block alive at the end of the trace */

typedef struct tl_mem_block {
    int64_t ts, free_ts; /* allocated at; freed at (TL_MEM_NEVER: never, in the trace) */
    int64_t bytes;
    uint64_t addr;
    size_t pos, free_pos; /* records in t->mem; free_pos SIZE_MAX when never freed */
    int32_t device;
    int32_t owner; /* event index of the owning operator or range; TL_NONE */
    int32_t step;  /* index in tl_mem.steps of the step it was allocated in; -1 */
    uint32_t name; /* dotted path (string id); 0 = none */
    uint16_t category;
    uint16_t live_at_start; /* alive when recording began (a LIVE record) */
} tl_mem_block;

typedef struct tl_mem_point {
    int64_t ts, allocated, reserved; /* reserved -1: unknown */
} tl_mem_point;

typedef struct tl_mem_device {
    int32_t device;     /* -1: host */
    int timeline;       /* the level is known (see above): start/end/peak mean something */
    int reserved_known; /* some record carries the allocator's reserved total */
    int64_t alloc_start, alloc_end, res_start, res_end; /* -1 where unknown */
    int64_t peak, peak_ts;         /* highest allocated level and when it was reached */
    size_t peak_pos;               /* the record that reached it (position in t->mem) */
    int32_t peak_step;             /* index in tl_mem.steps; -1 */
    int64_t res_at_peak;           /* reserved when allocated peaked; -1 unknown */
    int64_t peak_res, peak_res_ts; /* highest reserved level; -1 unknown */
    uint64_t allocs, frees;        /* records (LIVE and labels aside) */
    int64_t alloc_bytes, freed_bytes;
    /* At the peak: bytes of blocks alive by category, and the part of the level no block of the
     * trace explains (allocated before recording began, or records without addresses). */
    int64_t at_peak[TL_MEM_CAT_COUNT];
    int64_t at_peak_unknown;
    /* Every record's level, in time order: (time, allocated, reserved). */
    tl_mem_point *series;
    size_t nseries;
    /* Leak: bytes allocated in each step and never freed (per step, nsteps entries), and the
     * verdict (see tl_mem_compute). */
    int64_t *retained;
    int leak;                  /* allocations kept step after step while the level grows */
    int64_t leak_per_step;     /* the median of retained over the steps judged */
    int leak_first, leak_last; /* the steps judged (indexes in steps) */
} tl_mem_device;

typedef struct tl_mem_step {
    int64_t ts, end, number; /* span and number (ProfilerStep#N: N) */
} tl_mem_step;

/* Per operator (or range) name and device: the memory view's per-operator table. Self: records
 * the operator owns; total: its own and those of operators nested in it. */
typedef struct tl_mem_op {
    int32_t device;
    uint32_t name;
    int64_t calls;
    int64_t allocs, self_allocs;
    int64_t alloc_bytes, self_alloc_bytes;
    int64_t freed_bytes, self_freed_bytes;
} tl_mem_op;

typedef struct tl_mem {
    tl_mem_device *dev; /* by device id, host first */
    size_t ndev;
    tl_mem_block *blocks; /* in allocation order */
    size_t nblocks;
    tl_mem_op *ops;
    size_t nops;
    tl_mem_step *steps; /* in time order */
    size_t nsteps;
    int ops_mode;       /* owners are operators (a PyTorch trace), else ranges (tally's) */
    int any_names;      /* some block has a dotted path: there is a layout tree */
    int any_categories; /* some block has a category other than "other" */
    /* Parameters, gradients or optimizer state were labelled and nothing as activations
     * (tally.memory.categorize on PyTorch): blocks without a category were taken as
     * activations (and temporaries), as InternLM counts "what is allocated beyond them". */
    int others_are_activations;
    uint64_t unmatched;   /* frees of an address with no live block */
    uint64_t reused;      /* allocations at a live address */
    uint64_t labels_lost; /* labels of an address with no live block */
    uint64_t unowned;     /* allocations and frees no operator or range owns */
} tl_mem;

/* Bytes of d's blocks alive after record position pos of t->mem, by category, for each of the
 * n ascending positions in pos[] (out: n rows of TL_MEM_CAT_COUNT). 0, or -1 out of memory. */
int tl_mem_alive_at(const tl_mem *m, const tl_mem_device *d, const size_t *pos, size_t n,
                    int64_t (*out)[TL_MEM_CAT_COUNT]);

/* Allocated on d at time x: the level after its last record at or before x (alloc_start before
 * the first). */
int64_t tl_mem_level_at(const tl_mem_device *d, int64_t x);

/* The position in t->mem of the last record at or before time x; SIZE_MAX when none. */
size_t tl_mem_pos_at(const tl_trace *t, int64_t x);

/* The layout tree of the named blocks alive at a device's peak, as InternLM's SimpleMemState
 * builds it from dotted names: a node per path component, children in natural order (layers.2
 * before layers.10), category roots in the order of tl_mem_cat; layer =
 * bytes of blocks named by the node's path, total = its subtree's. Node 0 is the root; with
 * category < 0 its children are one node per category name, above the paths. */
typedef struct tl_mem_node {
    const char *comp; /* the path component (not NUL-terminated: len) */
    size_t len;
    int64_t layer, total;
    size_t first, last, next; /* children, sibling; 0 = none */
    size_t parent;
} tl_mem_node;

typedef struct tl_mem_tree {
    tl_mem_node *n;
    size_t count, cap;
    size_t *index, icap; /* nodes by (parent, component): open addressing, 0 = empty */
} tl_mem_tree;

int tl_mem_tree_build(const tl_trace *t, const tl_mem *m, const tl_mem_device *d, int category,
                      tl_mem_tree *tree);
void tl_mem_tree_free(tl_mem_tree *tree);
/* Append "." and node k's component to path[0..plen) (cap bytes, cut to fit, NUL-terminated);
 * returns the new length. */
size_t tl_mem_tree_path(const tl_mem_tree *tree, size_t k, char *path, size_t plen, size_t cap);

/* Replay t->mem (t finished). Returns 0, or -1 when out of memory (m is then empty). Leaks: with
 * three or more steps, a device leaks when every step but the first and the last keeps bytes
 * it allocated to the end of the trace and its level at the end of those steps never falls and
 * ends higher than it began. */
int tl_mem_compute(const tl_trace *t, tl_mem *m);
void tl_mem_free(tl_mem *m);
/* tl_mem_compute of t, made once and shared by all who ask (the memory view and findings, from
 * the report's threads) until t changes or is freed (tl_trace_memo). NULL when out of memory. */
const tl_mem *tl_mem_of(const tl_trace *t);

/* The device entry for id, or NULL. */
const tl_mem_device *tl_mem_device_of(const tl_mem *m, int32_t device);

/* "CPU" for -1, "GPU0", ... */
void tl_mem_device_name(int32_t device, char *buf, size_t n);

/* Blocks of one device grouped by who allocated them and what they hold: the owner's name, as
 * TensorBoard's memory events table shows it (for an aten::empty* owner, also the operator that
 * called it: "aten::linear (aten::empty)"), and the category. */
typedef struct tl_mem_group {
    uint32_t owner;  /* name of the owning operator or range; 0 = none ("<unknown>") */
    uint32_t caller; /* for an aten::empty* owner, the operator around it; 0 = none */
    uint16_t category;
    int64_t blocks, bytes;
} tl_mem_group;

/* Group the blocks of device that keep(b, arg) accepts; *out (malloc'd) sorted by bytes,
 * largest first. Returns 0, or -1 when out of memory. */
int tl_mem_group_blocks(const tl_trace *t, const tl_mem *m, int32_t device,
                        int (*keep)(const tl_mem_block *b, const void *arg), const void *arg,
                        tl_mem_group **out, size_t *nout);
/* "aten::mm", "aten::linear (aten::empty)", "<unknown>". */
void tl_mem_group_name(const tl_trace *t, const tl_mem_group *g, char *buf, size_t n);

/* The device whose memory matters most: the GPU with the highest peak, else the host; NULL when
 * no device has a peak. */
const tl_mem_device *tl_mem_main_device(const tl_mem *m);

/* A keep function for tl_mem_group_blocks (arg: the tl_mem_device): the blocks a leak keeps,
 * allocated in a judged step of that device and never freed. */
int tl_mem_kept(const tl_mem_block *b, const void *device);

/* Non-zero when block b is alive at the peak of its device (d). */
static inline int tl_mem_alive_at_peak(const tl_mem_block *b, const tl_mem_device *d)
{
    return b->device == d->device && b->pos <= d->peak_pos && b->free_pos > d->peak_pos;
}

#endif
