/*
 * The dropout mask kernels behind cq_dropout_apply (dropout.c): the portable
 * one and the AVX2 one give the same bits (integer Philox, then the same
 * float comparison), so which one runs depends only on the CPU.
 */
#ifndef CQ_NN_DROPOUT_KERNEL_H
#define CQ_NN_DROPOUT_KERNEL_H

#include <stdint.h>

#include "common/rng.h"

/* One call's fixed inputs: key, probability, scale and the counter words. */
typedef struct cq_dropout_job
{
	cq_philox_key key;
	float		p;
	float		scale;			/* 1 / (1 - p) */
	uint32_t	row;
	uint32_t	site;
	uint32_t	pass;
} cq_dropout_job;

/* Elements [j0, n) of x, j0 a multiple of 4: element j is word j % 4 of the
 * Philox block with counter (j / 4, row, site, pass). */
void		cq_dropout_portable(const cq_dropout_job *d, float *x, int j0, int n);

/* All n elements on AVX2 (sixteen blocks at a time, the last ones masked);
 * returns n, or 0 where the kernel is not built (not x86-64). */
int			cq_dropout_avx2(const cq_dropout_job *d, float *x, int n);

#endif
