/*
 * One register tile of the row-independent GEMM (rowgemm.h), per ISA:
 *     c[mr, nb] = start + a[mr, kc] b[kc, nb]
 * where start is c itself (cont: continue a chain after a k-block), else
 * bias[0..nb) broadcast to every row, else zero; each element one chain of
 * multiply-adds in k order.  nb <= CQ_ROWGEMM_NB; b is read only in columns
 * 0..nb-1 and c written only there.
 */
#ifndef CQ_NN_ROWGEMM_BLOCK_H
#define CQ_NN_ROWGEMM_BLOCK_H

#include <stdbool.h>

typedef struct cq_rowgemm_block
{
	const float *a;
	long		lda;
	const float *b;
	long		ldb;
	const float *bias;
	bool		cont;
	float	   *c;
	long		ldc;
	int			mr,
				nb,
				kc;
} cq_rowgemm_block;

/* Rows per tile, at most. */
#define CQ_ROWGEMM_MR_PORTABLE 4
#define CQ_ROWGEMM_MR_AVX2 6
#define CQ_ROWGEMM_MR_AVX512 12

/* Rows of B ahead that the tiles prefetch into L1 (harmless past the end). */
#define CQ_ROWGEMM_PREFETCH 16

void		cq_rowgemm_block_portable(const cq_rowgemm_block *t);
void		cq_rowgemm_block_avx2(const cq_rowgemm_block *t);
void		cq_rowgemm_block_avx512(const cq_rowgemm_block *t);

#endif
