/*
 * Adaptive average pooling of one CAV matrix, done sparsely.  PyTorch's bin
 * i of out over an input of size H is [floor(i*H/out), ceil((i+1)*H/out));
 * inverting those bounds, input index r lies in bins
 * floor(r*out/H) .. ceil((r+1)*out/H) - 1, so each nonzero is added to just
 * the bins covering it and the dense (n_src+n_tgt) x l_max matrix is never
 * built.
 */
#include "cav/view_impl.h"

#include <string.h>

static inline uint64_t
bin_start(uint64_t i, uint64_t in, uint64_t out)
{
	return i * in / out;
}

static inline uint64_t
bin_end(uint64_t i, uint64_t in, uint64_t out)
{
	return ((i + 1) * in + out - 1) / out;
}

/* Bins [*lo, *hi] of out covering input index r of in. */
static inline void
covering(uint64_t r, uint64_t in, uint64_t out, uint32_t *lo, uint32_t *hi)
{
	uint64_t	h = ((r + 1) * out + in - 1) / in - 1;

	*lo = (uint32_t) (r * out / in);
	*hi = (uint32_t) (h < out - 1 ? h : out - 1);
}

cq_code
cav_view_pool(const cav_view *v, uint32_t idx, uint32_t out_h, uint32_t out_w,
			  double *out, cq_error *err)
{
	uint64_t	in_h = (uint64_t) v->n_src + v->n_tgt,
				in_w = v->l_max;
	cav_entry_iter it;
	cav_entry	e;

	if (idx >= v->n_mat)
		return cq_fail(err, CQ_EINVAL, "token index %u out of range", idx);
	if (out_h < 1 || out_w < 1)
		return cq_fail(err, CQ_EINVAL, "pooled shape must be at least 1 x 1");
	if ((uint64_t) out_h * out_w > ((uint64_t) 1 << 32))
		return cq_fail(err, CQ_EINVAL, "pooled shape %u x %u too large", out_h, out_w);
	memset(out, 0, (size_t) out_h * out_w * sizeof(double));
	cav_entry_iter_init(v, idx, &it);
	while (cav_entry_iter_next(&it, &e))
	{
		uint32_t	r0,
					r1,
					c0,
					c1;

		covering(e.row, in_h, out_h, &r0, &r1);
		covering(e.dist, in_w, out_w, &c0, &c1);
		for (uint32_t i = r0; i <= r1; i++)
			for (uint32_t j = c0; j <= c1; j++)
				out[(size_t) i * out_w + j] += (double) e.count;
	}
	for (uint32_t i = 0; i < out_h; i++)
	{
		uint64_t	rows = bin_end(i, in_h, out_h) - bin_start(i, in_h, out_h);

		for (uint32_t j = 0; j < out_w; j++)
			out[(size_t) i * out_w + j] /=
				(double) (rows * (bin_end(j, in_w, out_w) - bin_start(j, in_w, out_w)));
	}
	return CQ_OK;
}
