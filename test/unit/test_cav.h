/* Helpers shared by the CAV unit tests: a seeded random corpus and dense views. */
#ifndef CQ_TEST_CAV_H
#define CQ_TEST_CAV_H

#include "cav/cav.h"
#include "cav/cav_view.h"

#include <stdint.h>

#define TCAV_MAX_LEN 24

typedef struct tcav_pair
{
	int			ns,
				nt;
	char		src[TCAV_MAX_LEN][16];
	char		tgt[TCAV_MAX_LEN][16];
} tcav_pair;

/* n pairs over small Zipf-like vocabularies (some tokens multi-byte UTF-8). */
tcav_pair  *tcav_corpus(int n, uint64_t seed, int vocab);
uint64_t	tcav_rand(uint64_t *s);

/* Add pairs [from, to) to st. */
cq_code		tcav_add(cav_state *st, const tcav_pair *p, int from, int to);

/* A new state over pairs [from, to); aborts the test on error. */
cav_state  *tcav_build(const tcav_pair *p, int from, int to, uint32_t l_max,
					   const char *const *targets, size_t n_targets);

/* Serialize; the caller frees with cq_free. */
uint8_t    *tcav_bytes(const cav_state *st, size_t *len);

/* Dense (n_src+n_tgt) x l_max matrix of token idx (int64, caller frees). */
int64_t    *tcav_dense(const cav_view *v, uint32_t idx);

/* Row of a token string in the view's concatenated dictionary, or -1. */
long		tcav_row(const cav_view *v, int side, const char *s);

#endif
