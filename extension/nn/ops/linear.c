#include <string.h>

#include "nn/ops/blas.h"
#include "nn/ops/ops.h"
#include "nn/ops/qgemm.h"
#include "nn/ops/rowgemm.h"

void
cq_linear_rows(const cq_linear *lin, const float *x, int ldx, float *y,
			   int ldy, int rows)
{
	/* Inference: a row-independent kernel over the packed weights. */
	if (lin->qpacked)
	{
		cq_qgemm_rows(lin->qpacked, lin->out, lin->in, lin->b, x, ldx, y, ldy, rows);
		return;
	}
	if (lin->packed)
	{
		cq_rowgemm_packed(lin->packed, lin->out, lin->in, lin->b, x, ldx, y, ldy, rows);
		return;
	}
	/* Training: OpenBLAS; broadcast the bias, accumulate on top (beta = 1). */
	for (int r = 0; r < rows; r++)
	{
		if (lin->b)
			memcpy(y + (long) r * ldy, lin->b, sizeof(float) * lin->out);
		else
			memset(y + (long) r * ldy, 0, sizeof(float) * lin->out);
	}
	cq_sgemm(false, true, rows, lin->out, lin->in, 1.0f, x, ldx, lin->w,
			 lin->in, 1.0f, y, ldy);
}
