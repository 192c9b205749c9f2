/* The norm object (norm.h): absent norms, and each kind's kernels. */
#include "nn/layers/norm.h"

#include <string.h>

#include "nn/ops/norm_kernels.h"

/* The kernels of each kind, indexed by cq_norm_kind. */
static const struct
{
	void		(*forward) (const cq_norm *n, const float *x, float *y, int rows);
	void		(*forward_keep) (const cq_norm *n, const float *x, float *y, int rows,
								 const cq_norm_stats *st);
	void		(*backward) (const cq_norm *n, cq_norm *g, const float *x,
							 const cq_norm_stats *st, const float *dy, float *dx, int rows);
}			kinds[] = {
	[CQ_NORM_LAYER] = {cq_layer_norm_forward, cq_layer_norm_forward_keep, cq_layer_norm_backward},
	[CQ_NORM_RMS] = {cq_rms_norm_forward, cq_rms_norm_forward_keep, cq_rms_norm_backward},
};

void
cq_norm_forward(const cq_norm *n, const float *x, float *y, long rows, long ld)
{
	if (!n->w)
	{
		for (long r = 0; x != y && r < rows; r++)
			memcpy(y + r * ld, x + r * ld, sizeof(float) * n->d);
		return;
	}
	for (long r = 0; r < rows; r++)
		kinds[n->kind].forward(n, x + r * ld, y + r * ld, 1);
}

void
cq_norm_forward_keep(const cq_norm *n, const float *x, float *y, long rows,
					 const cq_norm_stats *st)
{
	if (!n->w)
	{
		if (x != y)
			memcpy(y, x, sizeof(float) * rows * n->d);
		return;
	}
	kinds[n->kind].forward_keep(n, x, y, (int) rows, st);
}

void
cq_norm_backward(const cq_norm *n, cq_norm *g, const float *x, const cq_norm_stats *st,
				 const float *dy, float *dx, long rows)
{
	if (!n->w)
	{
		for (long i = 0; i < rows * n->d; i++)
			dx[i] += dy[i];
		return;
	}
	kinds[n->kind].backward(n, g, x, st, dy, dx, (int) rows);
}
