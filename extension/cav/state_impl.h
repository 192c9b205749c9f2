/*
 * The accumulation state behind the opaque cav_state (cav.h), shared by
 * the files that build, merge and serialise it.
 */
#ifndef CQ_CAV_STATE_IMPL_H
#define CQ_CAV_STATE_IMPL_H

#include "cav/cav.h"
#include "cav/cells.h"
#include "cav/dict.h"

struct cav_state
{
	cav_budget	budget;
	uint32_t	l_max;
	cav_dict	src;			/* source dictionary */
	cav_dict	tgt;			/* target dictionary (every target token seen) */
	cav_dict	res;			/* restricted target set; n == 0: unrestricted */
	cav_cells  *mats;			/* [mats_cap], indexed by target id */
	uint32_t	mats_cap;
	uint64_t	n_pairs;
	uint32_t   *rows;			/* scratch: state rows of one pair's tokens */
	size_t		rows_cap;
	cq_code		failed;			/* sticky error after a partial update */
};

/* Intern a target token, making room for its matrix slot. */
cq_code		cav_state_intern_tgt(cav_state *st, const char *s, size_t len,
								 uint32_t *id, cq_error *err);

/* Check one token's bytes (non-empty, bounded, UTF-8 without NUL). */
cq_code		cav_check_token(const char *s, size_t len, cq_error *err);

/* Mark the state failed after a partial update; returns rc. */
cq_code		cav_state_broken(cav_state *st, cq_code rc);

#endif
