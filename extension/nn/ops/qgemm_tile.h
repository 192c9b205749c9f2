/*
 * One register tile of the int8 GEMM (qgemm.h), per ISA:
 *     y[mr, nb] = epilogue(xq[mr, K4] panel^T)
 * over one packed panel of CQ_QGEMM_NB output columns, nb of them valid
 * (y, bias written and read only there).  xq rows are the quantized
 * activations, K4 bytes each, zero past k; for the VNNI variants and the
 * AVX2 tile of 7-bit weights they are biased by 128 (xq ^ 0x80, read as
 * uint8) and comp is subtracted.
 */
#ifndef CQ_NN_QGEMM_TILE_H
#define CQ_NN_QGEMM_TILE_H

#include <math.h>
#include <stdint.h>

typedef struct cq_qgemm_tile
{
	const int8_t *xq;				/* [mr][ldxq], biased for VNNI */
	long		ldxq;
	const float *xs;				/* [mr] activation scales */
	const int8_t *w;				/* panel [kg][NB][4] */
	const float *ws;				/* [NB] weight scales of the panel */
	const int32_t *comp;			/* [NB] 128 sum_k w, VNNI only */
	const float *bias;				/* [nb] or NULL */
	float	   *y;
	long		ldy;
	int			mr,
				nb,
				kg;					/* K4 / 4 */
} cq_qgemm_tile;

/* Rows per tile, at most. */
#define CQ_QGEMM_MR_PORTABLE 4
#define CQ_QGEMM_MR_AVX2 4
#define CQ_QGEMM_MR_AVX2_U8 4
#define CQ_QGEMM_MR_AVXVNNI 6
#define CQ_QGEMM_MR_AVX512VNNI 8

/*
 * The epilogue, the scalar statement of what every vector path computes
 * (qgemm.h): no multiply and add for the compiler to fuse differently.
 */
static inline float
cq_qgemm_out(int32_t acc, float xs, float ws, const float *bias, int j)
{
	return fmaf((float) acc, xs * ws, bias ? bias[j] : 0.0f);
}

void		cq_qgemm_tile_portable(const cq_qgemm_tile *t);
void		cq_qgemm_tile_avx2(const cq_qgemm_tile *t);		/* 8-bit weights */
void		cq_qgemm_tile_avx2_u8(const cq_qgemm_tile *t);	/* 7-bit weights */
void		cq_qgemm_tile_avxvnni(const cq_qgemm_tile *t);
void		cq_qgemm_tile_avx512vnni(const cq_qgemm_tile *t);

/* cq_qgemm_quantize_vec_bits with Q = qmax on AVX2, the same bits (qgemm.c calls it). */
float		cq_qgemm_quantize_avx2(const float *v, int k, float qmax, int8_t *q);

#endif
