/*
 * Corpus Analysis Vectors (CAV): accumulation state.
 *
 * CAV(t) (paper 002, Sec. 3.1, Eqs. 4-5) is one sparse integer matrix per
 * target token t.  Rows are the concatenated dictionary (source tokens, then
 * target tokens), columns the distance |p(t, t_i)| in concat(src, tgt).  For
 * every occurrence of t in a pair, every source token and every target token
 * at or before t adds 1 at (its row, its distance to t).
 *
 * Two readings of the paper, settled here:
 *  - p = 0 counts (t itself lands in its own target row, column 0): Eq. 5
 *    sets "M_{r,c} = 1, r = i_{t_i}, c = |p(t, t_i)|, p(t, t_i) >= 0".
 *  - l_max is the number of columns and farther context is dropped, not
 *    clamped: "F(t, seq(t)) returns the matrix M in Z^{(N_src+N_tgt) x
 *    L_max} ... where L_max is the maximum length of the concatenated
 *    sequences"; distances are 0 .. L_max-1 and the paper has no column
 *    for anything farther (it filters longer sequences out instead).
 *
 * The state is caller-owned, holds no globals and allocates through
 * common/mem.h.  Every fallible call returns a cq_code and fills *err
 * (common/error.h): CQ_EINVAL for a bad argument or token, CQ_ENOMEM,
 * CQ_ELIMIT past the caller's byte limit, CQ_EMISMATCH when merging states
 * built with other options, CQ_EFORMAT for bytes failing validation,
 * CQ_ENOTFOUND for a token not in the CAV, CQ_EINTERNAL for a state that
 * failed earlier.
 */
#ifndef CQ_CAV_H
#define CQ_CAV_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Largest l_max (distances are stored in 16 bits). */
#define CAV_MAX_LMAX 65535
/* Longest token accepted, in bytes. */
#define CAV_MAX_TOKEN_BYTES (1 << 20)

typedef struct cav_options
{
	uint32_t	l_max;			/* columns: distances 0 .. l_max-1 are kept */
	/* Optional restricted target set (NULL/0: every target token). */
	const char *const *targets;
	const size_t *target_lens;
	size_t		n_targets;
} cav_options;

typedef struct cav_state cav_state;

/*
 * New empty state.  byte_limit caps cav_state_bytes() (0: no limit); the
 * options are copied.  Token strings must be non-empty valid UTF-8 without
 * NUL bytes.
 */
cq_code		cav_state_new(const cav_options *opt, size_t byte_limit,
						  cav_state **out, cq_error *err);
void		cav_state_free(cav_state *st);

/*
 * Add one pair given as token arrays.  On CQ_ELIMIT/CQ_ENOMEM the state
 * holds part of the pair, so it is marked failed: later calls return
 * CQ_EINTERNAL and only cav_state_free() is meaningful.
 */
cq_code		cav_state_add(cav_state *st,
						  const char *const *src, const size_t *src_lens, size_t n_src,
						  const char *const *tgt, const size_t *tgt_lens, size_t n_tgt,
						  cq_error *err);

/* Add one pair of whitespace-separated texts (ASCII space, \t\n\v\f\r). */
cq_code		cav_state_add_text(cav_state *st, const char *src, size_t src_len,
							   const char *tgt, size_t tgt_len, cq_error *err);

/* Add B's counts into A (dictionaries remapped); B is unchanged. */
cq_code		cav_state_merge(cav_state *a, const cav_state *b, cq_error *err);

/* Bytes the state holds now, and the most it has held. */
size_t		cav_state_bytes(const cav_state *st);
size_t		cav_state_peak_bytes(const cav_state *st);

/* Counters: pairs added, source/target dictionary sizes, stored matrices, nonzeros. */
typedef struct cav_stats
{
	uint64_t	n_pairs;
	uint32_t	n_src;
	uint32_t	n_tgt;
	uint32_t	n_matrices;
	uint64_t	nnz;
} cav_stats;
void		cav_state_stats(const cav_state *st, cav_stats *out);

/*
 * The canonical binary layout (extension/cav/FORMAT.md).  The result is
 * allocated with cq_alloc and has `room` unused bytes in front of the CAV
 * (e.g. VARHDRSZ, so the glue can fill a varlena in place); *len counts the
 * CAV bytes only.
 */
cq_code		cav_serialize(const cav_state *st, size_t room,
						  uint8_t **out, size_t *len, cq_error *err);

/* Validate a buffer and rebuild a state from it (byte_limit as in new). */
cq_code		cav_deserialize(const void *buf, size_t len, size_t byte_limit,
							cav_state **out, cq_error *err);

#endif
