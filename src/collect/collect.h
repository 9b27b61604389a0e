/*
 * collect.h — the collectors' interface to the rest of the library (src/collect/).
 *
 * The collectors turn what NVTX and CUPTI hand over into recorder calls (record/recorder.h).
 * Their entry points for the outside world are InitializeInjectionNvtx2 (nvtx.c) and
 * InitializeInjection (inject.c), both exported from libtally.so. What the recorder and the
 * command line call is below. Pure helpers (message parsing, CUPTI record conversion) are
 * declared here too so that unit tests can feed them synthetic input.
 */
#ifndef TALLY_COLLECT_COLLECT_H
#define TALLY_COLLECT_COLLECT_H

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------------------------------
 * Session hooks, called by the recorder.
 */

/* Called from tally_start (any session, injected or not): starts CUPTI when the program asked
 * for GPU activity (TALLY_GPU=1) or when CUDA injected libtally. Idempotent; never fails the
 * session: without CUPTI or a driver it prints one line on stderr and returns. */
void tally__collect_start(void);

/* Called from tally_stop before the last window is written (and at exit): forces CUPTI to hand
 * over every buffer, so that all device work recorded so far reaches the recorder. Cheap and a
 * no-op when CUPTI is not running. */
void tally__collect_stop(void);

/* Start CUPTI now (inject.c and tally__collect_start). Returns 0 when activity collection runs,
 * a negative tally_err code otherwise (message already printed). Idempotent. */
int tally__cupti_start(void);
/* Flush CUPTI's buffers (forced) into the recorder. */
void tally__cupti_flush(void);

/* Non-zero when the program is statically linked (no ELF interpreter): injecting libtally into
 * it cannot work (it would run on a second, uninitialised C library). Says so once on stderr.
 * Uses only open/read, which work even there. */
int tally__program_is_static(void);

/* Number of NVTX copies (linkage units) that initialised libtally as their tool. */
int tally__nvtx_inits(void);

/* ---------------------------------------------------------------------------------------------
 * NVTX message parsing (nvtx_parse.c).
 */

/* A range message as PyTorch's emit_nvtx writes it:
 *   "aten::mm, seq = 3, op_id = 7, sizes = [[2, 3], [3, 4]], input_op_ids = [(0,-1)]"
 * Returns 1 when msg is such a message: *name_len = length of the operator name ("aten::mm"),
 * *shapes / *shapes_len = the sizes list ("[[2, 3], [3, 4]]", or NULL/0 when absent).
 * Returns 0 for any other message. */
int tally__nvtx_parse_op(const char *msg, size_t len, size_t *name_len, const char **shapes,
                         size_t *shapes_len);

/* The tally_category for an NVTX category name ("forward", "Backward", "optimizer",
 * "dataloader", "communication", "operator", case-insensitive); -1 when it names none. */
int tally__nvtx_category_from_name(const char *name);

/* UTF-32 (wchar_t on Linux) to UTF-8, NUL-terminated, truncated on a character boundary to fit
 * cap bytes. Invalid code points become U+FFFD. Returns the length written. */
size_t tally__utf32_to_utf8(const wchar_t *w, char *out, size_t cap);

/* The rank of this process from the launcher's environment: RANK, OMPI_COMM_WORLD_RANK,
 * SLURM_PROCID, PMI_RANK, in that order; -1 when none is set. */
int tally__env_rank(void);

#endif
