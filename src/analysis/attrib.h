/*
 * attrib.h — which host span launched which device work (private to the GPU views).
 *
 * A kernel, copy or memset is linked by tl_trace_finish to the runtime call that launched it
 * (event.link, by correlation id). Its "owner" is the innermost host span that encloses that
 * runtime call on the same thread and whose category the caller accepts: the innermost
 * operator for the Operator view, the innermost op or annotation for the ops table (PyTorch
 * attributes a kernel to the op whose External id it carries, which is the innermost
 * RecordFunction open at launch). Python frames and runtime/driver calls never own work.
 *
 * The views add device time up this way as sums, not unions: work on overlapping streams counts
 * twice, as in Paddle's Operator view and PyTorch's table.
 */
#ifndef TALLY_ANALYSIS_ATTRIB_H
#define TALLY_ANALYSIS_ATTRIB_H

#include "trace/model.h"

#include <stdint.h>

/* Categories that own device work in the ops table: every host span but python frames,
 * runtime/driver calls, overhead, instants, counters and memory events. */
#define TL_OWNER_ANY_SPAN                                                                          \
    (TL_CATBIT(TL_CAT_USER) | TL_CATBIT(TL_CAT_DATALOADER) | TL_CATBIT(TL_CAT_FORWARD) |           \
     TL_CATBIT(TL_CAT_BACKWARD) | TL_CATBIT(TL_CAT_OPTIMIZER) | TL_CATBIT(TL_CAT_COMMUNICATION) |  \
     TL_CATBIT(TL_CAT_OPERATOR) | TL_CATBIT(TL_CAT_STEP) | TL_CATBIT(TL_CAT_OPERATOR_INNER) |      \
     TL_CATBIT(TL_CAT_OTHER))

/* Non-zero for device work that counts as GPU time (TL_DEVICE_WORK). */
static inline int tl_is_device_work(const tl_event *e)
{
    return tl_cat_is_device_work(e->cat);
}

/* The owner of device event i (see above) among host spans whose category bit is in mask;
 * TL_NONE when the work is not linked to a runtime call or no accepted span encloses it. */
int32_t tl_launch_owner(const tl_trace *t, size_t i, uint32_t mask);

/* ---- a small hash map from a 64-bit key to a row index (grouping rows by name etc.) ---- */

typedef struct tl_keymap {
    uint64_t *keys;
    int32_t *vals; /* -1 = empty slot */
    size_t nslots, n;
} tl_keymap;

/* The value stored for key, or -1. */
int32_t tl_keymap_get(const tl_keymap *m, uint64_t key);
/* Store val for key (replacing); 0, or -1 when out of memory. */
int tl_keymap_put(tl_keymap *m, uint64_t key, int32_t val);
void tl_keymap_free(tl_keymap *m);

/* Mix two 32-bit ids into one key. */
static inline uint64_t tl_key2(uint32_t a, uint32_t b)
{
    return ((uint64_t)a << 32) | b;
}

#endif
