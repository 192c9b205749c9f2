#include <string.h>

#include "nn/blas.h"
#include "nn/ops.h"

void
cq_linear_rows(const cq_linear *lin, const float *x, int ldx, float *y,
			   int ldy, int rows)
{
	/* Broadcast the bias, then accumulate the product on top (beta = 1). */
	for (int r = 0; r < rows; r++)
		memcpy(y + (long) r * ldy, lin->b, sizeof(float) * lin->out);
	cq_sgemm(false, true, rows, lin->out, lin->in, 1.0f, x, ldx, lin->w,
			 lin->in, 1.0f, y, ldy);
}
