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
 * common/mem.h.  Every fallible call returns a cav_code and fills *err.
 */
#ifndef CQ_CAV_H
#define CQ_CAV_H

#include <stddef.h>
#include <stdint.h>

typedef enum cav_code
{
	CAV_OK = 0,
	CAV_EINVAL,					/* bad argument (options, token bytes) */
	CAV_ENOMEM,					/* the allocator returned NULL */
	CAV_ECAP,					/* the caller's byte limit would be exceeded */
	CAV_EOPTIONS,				/* merging states built with other options */
	CAV_EFORMAT,				/* a serialized buffer failed validation */
	CAV_ENOTFOUND,				/* no such token in the CAV */
	CAV_ESTATE					/* the state failed earlier and is unusable */
} cav_code;

typedef struct cav_error
{
	cav_code	code;
	char		msg[256];
} cav_error;

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
cav_code	cav_state_new(const cav_options *opt, size_t byte_limit,
						  cav_state **out, cav_error *err);
void		cav_state_free(cav_state *st);

/*
 * Add one pair given as token arrays.  On CAV_ECAP/CAV_ENOMEM the state
 * holds part of the pair, so it is marked failed: later calls return
 * CAV_ESTATE and only cav_state_free() is meaningful.
 */
cav_code	cav_state_add(cav_state *st,
						  const char *const *src, const size_t *src_lens, size_t n_src,
						  const char *const *tgt, const size_t *tgt_lens, size_t n_tgt,
						  cav_error *err);

/* Add one pair of whitespace-separated texts (ASCII space, \t\n\v\f\r). */
cav_code	cav_state_add_text(cav_state *st, const char *src, size_t src_len,
							   const char *tgt, size_t tgt_len, cav_error *err);

/* Add B's counts into A (dictionaries remapped); B is unchanged. */
cav_code	cav_state_merge(cav_state *a, const cav_state *b, cav_error *err);

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
cav_code	cav_serialize(const cav_state *st, size_t room,
						  uint8_t **out, size_t *len, cav_error *err);

/* Validate a buffer and rebuild a state from it (byte_limit as in new). */
cav_code	cav_deserialize(const void *buf, size_t len, size_t byte_limit,
							cav_state **out, cav_error *err);

#endif
