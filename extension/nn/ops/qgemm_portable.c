/*
 * The portable int8 tile (qgemm_tile.h), the reference: plain int32
 * multiply-adds over the packed panel, then the scalar epilogue.
 */
#include "nn/ops/qgemm.h"
#include "nn/ops/qgemm_tile.h"

void
cq_qgemm_tile_portable(const cq_qgemm_tile *t)
{
	for (int r = 0; r < t->mr; r++)
	{
		const int8_t *x = t->xq + r * t->ldxq;
		int32_t		acc[CQ_QGEMM_NB] = {0};

		for (int g = 0; g < t->kg; g++)
		{
			const int8_t *w = t->w + (long) g * CQ_QGEMM_NB * CQ_QGEMM_KG;

			for (int jj = 0; jj < CQ_QGEMM_NB; jj++)
				for (int i = 0; i < CQ_QGEMM_KG; i++)
					acc[jj] += (int32_t) x[g * CQ_QGEMM_KG + i] * w[jj * CQ_QGEMM_KG + i];
		}
		for (int jj = 0; jj < t->nb; jj++)
			t->y[r * t->ldy + jj] = cq_qgemm_out(acc[jj], t->xs[r], t->ws[jj], t->bias, jj);
	}
}
