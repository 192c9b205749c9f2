/*
 * ANTAP forward and backward (pass.h).  Shapes per token in the comments;
 * a batch of n tokens stacks them (rows n*H, n*S).
 */
#include <math.h>
#include <string.h>

#include "antap/pass.h"
#include "common/mem.h"
#include "nn/layers/norm.h"
#include "nn/ops/backward_ops.h"
#include "nn/ops/blas.h"
#include "nn/ops/ops.h"

struct cq_antap_pass
{
	cq_antap_config cfg;
	int			max_batch;
	int			n;				/* tokens of the last forward */
	int			dims[CQ_ANTAP_MAX_PRED + 1];
	int			n_pred;
	void	   *raw;
	/* forward, kept for backward */
	float	   *a;				/* [H, W] GELU(x) */
	float	   *b;				/* [H, S] emb_cols(a) */
	float	   *bt;				/* [S, H] b transposed */
	float	   *c;				/* [S, H] GELU(bt) */
	float	   *e;				/* [S, D] emb_rows(c) */
	float	   *h;				/* [S, D] LN(e) */
	cq_norm_stats stats;		/* [S] LN's mean and rstd */
	float	   *qkv;			/* [S, 3D] */
	float	   *probs;			/* [heads, S, S] */
	float	   *ctx;			/* [S, D] heads concatenated */
	float	   *y;				/* [S, D] e + attn_out(ctx) */
	float	   *f1;				/* [S, F] fc1(y) */
	float	   *r;				/* [S, F] ReLU(f1) */
	float	   *z;				/* [S, D] fc2(r) */
	float	   *u[CQ_ANTAP_MAX_PRED];	/* [dims[i+1]] pred[i]'s output */
	float	   *g[CQ_ANTAP_MAX_PRED];	/* [dims[i+1]] GELU(u[i]), hidden layers */
	/* backward scratch */
	float	   *dpa,
			   *dpb;			/* [max dims] */
	float	   *dz,
			   *dr,
			   *dy,
			   *de,
			   *dctx,
			   *dqkv,
			   *dh,
			   *dc,
			   *db;
	float	   *dp;				/* [S, S] */
};

/* Float counts of each buffer for n tokens, in carving order. */
typedef struct sizes
{
	long		v[64];
	int			k;
} sizes;

static long
aligned(long n)
{
	return (n + 15) / 16 * 16;
}

static void
plan(const cq_antap_config *c, int n, const int *dims, int n_pred, sizes *s)
{
	long		H = c->pool_rows,
				W = c->pool_cols,
				S = c->seq_len,
				D = c->d_model,
				F = c->ffn_dim,
				maxd = 0;
	long		fwd[] = {n * H * W, n * H * S, n * S * H, n * S * H, n * S * D, n * S * D,
		n * S, n * S, 3 * n * S * D, (long) n * c->heads * S * S, n * S * D, n * S * D,
	n * S * F, n * S * F, n * S * D};

	s->k = 0;
	for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
		s->v[s->k++] = fwd[i];
	for (int i = 0; i < n_pred; i++)
	{
		s->v[s->k++] = (long) n * dims[i + 1];
		s->v[s->k++] = (long) n * dims[i + 1];
	}
	for (int i = 0; i <= n_pred; i++)
		maxd = dims[i] > maxd ? dims[i] : maxd;
	s->v[s->k++] = n * maxd;
	s->v[s->k++] = n * maxd;
	{
		long		bwd[] = {n * S * D, n * S * F, n * S * D, n * S * D, n * S * D, 3 * n * S * D,
		n * S * D, n * S * H, n * H * S, S * S};

		for (size_t i = 0; i < sizeof(bwd) / sizeof(bwd[0]); i++)
			s->v[s->k++] = bwd[i];
	}
}

size_t
cq_antap_pass_bytes(const cq_antap_config *cfg, int max_batch)
{
	int			dims[CQ_ANTAP_MAX_PRED + 1],
				n_pred = cq_antap_pred_dims(cfg, dims);
	sizes		s;
	size_t		total = 0;

	plan(cfg, max_batch, dims, n_pred, &s);
	for (int i = 0; i < s.k; i++)
		total += aligned(s.v[i]) * sizeof(float);
	return total + 64;
}

cq_code
cq_antap_pass_new(const cq_antap_config *cfg, int max_batch, cq_antap_pass **out,
				  cq_error *err)
{
	cq_antap_pass *p;
	sizes		s;
	float	   *base;
	float	  **fixed[15];
	int			k = 0;
	cq_code		rc;

	*out = NULL;
	if ((rc = cq_antap_config_validate(cfg, err)) != CQ_OK)
		return rc;
	if (max_batch < 1)
		return cq_fail(err, CQ_EINVAL, "batch size must be at least 1");
	if (!(p = cq_alloc0(sizeof(*p))))
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	p->cfg = *cfg;
	p->max_batch = max_batch;
	p->n_pred = cq_antap_pred_dims(cfg, p->dims);
	if (!(p->raw = cq_alloc(cq_antap_pass_bytes(cfg, max_batch))))
	{
		cq_free(p);
		return cq_fail(err, CQ_ENOMEM, "out of memory for the ANTAP pass of %d tokens (%zu bytes)",
					   max_batch, cq_antap_pass_bytes(cfg, max_batch));
	}
	plan(cfg, max_batch, p->dims, p->n_pred, &s);
	base = (float *) (((uintptr_t) p->raw + 63) & ~(uintptr_t) 63);
#define TAKE(ptr) do { (ptr) = base; base += aligned(s.v[k++]); } while (0)
	fixed[0] = &p->a;
	fixed[1] = &p->b;
	fixed[2] = &p->bt;
	fixed[3] = &p->c;
	fixed[4] = &p->e;
	fixed[5] = &p->h;
	fixed[6] = &p->stats.mean;
	fixed[7] = &p->stats.rstd;
	fixed[8] = &p->qkv;
	fixed[9] = &p->probs;
	fixed[10] = &p->ctx;
	fixed[11] = &p->y;
	fixed[12] = &p->f1;
	fixed[13] = &p->r;
	fixed[14] = &p->z;
	for (int i = 0; i < 15; i++)
		TAKE(*fixed[i]);
	for (int i = 0; i < p->n_pred; i++)
	{
		TAKE(p->u[i]);
		TAKE(p->g[i]);
	}
	TAKE(p->dpa);
	TAKE(p->dpb);
	TAKE(p->dz);
	TAKE(p->dr);
	TAKE(p->dy);
	TAKE(p->de);
	TAKE(p->dctx);
	TAKE(p->dqkv);
	TAKE(p->dh);
	TAKE(p->dc);
	TAKE(p->db);
	TAKE(p->dp);
#undef TAKE
	*out = p;
	return CQ_OK;
}

void
cq_antap_pass_free(cq_antap_pass *p)
{
	if (!p)
		return;
	cq_free(p->raw);
	cq_free(p);
}

int
cq_antap_pass_max_batch(const cq_antap_pass *p)
{
	return p->max_batch;
}

/* dst[k][j][i] = src[k][i][j] for n blocks of rows x cols. */
static void
transpose_blocks(const float *src, float *dst, int n, int rows, int cols)
{
	for (int k = 0; k < n; k++)
	{
		const float *s = src + (long) k * rows * cols;
		float	   *d = dst + (long) k * rows * cols;

		for (int i = 0; i < rows; i++)
			for (int j = 0; j < cols; j++)
				d[(long) j * rows + i] = s[(long) i * cols + j];
	}
}

/* Multi-head self-attention of each token's S positions, saving the weights. */
static void
attention_fwd(const cq_antap_config *c, cq_antap_pass *p)
{
	int			S = c->seq_len,
				D = c->d_model,
				dh = D / c->heads;

	for (int b = 0; b < p->n; b++)
		for (int hd = 0; hd < c->heads; hd++)
		{
			const float *q = p->qkv + (long) b * S * 3 * D + hd * dh;
			cq_attention_args a = {
				.q = q, .k = q + D, .v = q + 2 * D, .ldq = 3 * D, .ldk = 3 * D, .ldv = 3 * D,
				.out = p->ctx + (long) b * S * D + hd * dh, .ldo = D,
				.lq = S, .lk = S, .heads = 1, .dh = dh, .causal = false,
				.scores = p->probs + ((long) b * c->heads + hd) * S * S
			};

			cq_attention(&a);
		}
}

/* From dctx: dq, dk, dv into dqkv (overwritten), by nn's attention backward. */
static void
attention_bwd(const cq_antap_config *c, cq_antap_pass *p)
{
	int			S = c->seq_len,
				D = c->d_model;

	for (int b = 0; b < p->n; b++)
	{
		long		row = (long) b * S;
		const float *q = p->qkv + row * 3 * D;
		float	   *dq = p->dqkv + row * 3 * D;
		cq_attention_args a = {
			.q = q, .k = q + D, .v = q + 2 * D, .ldq = 3 * D, .ldk = 3 * D, .ldv = 3 * D,
			.lq = S, .lk = S, .heads = c->heads, .dh = D / c->heads,
		};
		cq_attention_grads g = {
			.dout = p->dctx + row * D, .ldo = D, .dq = dq, .dk = dq + D, .dv = dq + 2 * D,
			.lddq = 3 * D, .lddk = 3 * D, .lddv = 3 * D, .dp = p->dp,
		};

		cq_attention_backward(&a, p->probs + (long) b * c->heads * S * S, &g);
	}
}

void
cq_antap_forward(const cq_antap_model *m, cq_antap_pass *p, const float *x, int n, float *out)
{
	const cq_antap_config *c = &m->cfg;
	long		H = c->pool_rows,
				W = c->pool_cols,
				S = c->seq_len,
				D = c->d_model,
				F = c->ffn_dim;
	const float *in;

	p->n = n;
	/* downscale (Eq. 6): GELU of the pooled input, then both embeddings */
	memcpy(p->a, x, sizeof(float) * n * H * W);
	cq_gelu_erf(p->a, n * H * W);
	cq_linear_rows(&m->emb_cols, p->a, (int) W, p->b, (int) S, (int) (n * H));
	transpose_blocks(p->b, p->bt, n, (int) H, (int) S);
	memcpy(p->c, p->bt, sizeof(float) * n * S * H);
	cq_gelu_erf(p->c, n * S * H);
	cq_linear_rows(&m->emb_rows, p->c, (int) H, p->e, (int) D, (int) (n * S));
	/* attention (Eq. 7): y = e + MHA(LN(e)), then the FFN without residual */
	cq_norm_forward_keep(&m->attn_ln, p->e, p->h, n * S, &p->stats);
	cq_linear_rows(&m->qkv, p->h, (int) D, p->qkv, (int) (3 * D), (int) (n * S));
	attention_fwd(c, p);
	cq_linear_rows(&m->attn_out, p->ctx, (int) D, p->y, (int) D, (int) (n * S));
	for (long i = 0; i < n * S * D; i++)
		p->y[i] += p->e[i];
	cq_linear_rows(&m->fc1, p->y, (int) D, p->f1, (int) F, (int) (n * S));
	memcpy(p->r, p->f1, sizeof(float) * n * S * F);
	cq_relu(p->r, n * S * F);
	cq_linear_rows(&m->fc2, p->r, (int) F, p->z, (int) D, (int) (n * S));
	/* prediction (Eq. 8): the flattened [S, D] block of each token, shrunk to 1 */
	in = p->z;
	for (int i = 0; i < p->n_pred; i++)
	{
		cq_linear_rows(&m->pred[i], in, p->dims[i], p->u[i], p->dims[i + 1], n);
		if (i + 1 < p->n_pred)
		{
			memcpy(p->g[i], p->u[i], sizeof(float) * n * p->dims[i + 1]);
			cq_gelu_erf(p->g[i], (long) n * p->dims[i + 1]);
			in = p->g[i];
		}
	}
	memcpy(out, p->u[p->n_pred - 1], sizeof(float) * n);
}

void
cq_antap_backward(const cq_antap_model *m, cq_antap_pass *p, const float *dout,
				  cq_antap_model *grad)
{
	const cq_antap_config *c = &m->cfg;
	long		n = p->n,
				H = c->pool_rows,
				W = c->pool_cols,
				S = c->seq_len,
				D = c->d_model,
				F = c->ffn_dim;
	float	   *du = p->dpa,
			   *dx = p->dpb;

	/* prediction module, last layer first; its input's gradient lands in dx */
	memcpy(du, dout, sizeof(float) * n);
	for (int i = p->n_pred - 1; i >= 0; i--)
	{
		const float *in = i == 0 ? p->z : p->g[i - 1];
		float	   *t;

		cq_linear_backward(&m->pred[i], &grad->pred[i], in, p->dims[i], du, p->dims[i + 1],
						   i == 0 ? p->dz : dx, p->dims[i], 0.0f, n);
		if (i == 0)
			break;
		cq_gelu_erf_backward(p->u[i - 1], dx, n * p->dims[i]);
		t = du;
		du = dx;
		dx = t;
	}
	/* FFN */
	cq_linear_backward(&m->fc2, &grad->fc2, p->r, (int) F, p->dz, (int) D, p->dr, (int) F,
					   0.0f, n * S);
	cq_relu_backward(p->f1, p->dr, n * S * F);
	cq_linear_backward(&m->fc1, &grad->fc1, p->y, (int) D, p->dr, (int) F, p->dy, (int) D,
					   0.0f, n * S);
	/* residual attention block: de = dy + LN'(...) */
	memcpy(p->de, p->dy, sizeof(float) * n * S * D);
	cq_linear_backward(&m->attn_out, &grad->attn_out, p->ctx, (int) D, p->dy, (int) D,
					   p->dctx, (int) D, 0.0f, n * S);
	attention_bwd(c, p);
	cq_linear_backward(&m->qkv, &grad->qkv, p->h, (int) D, p->dqkv, (int) (3 * D), p->dh,
					   (int) D, 0.0f, n * S);
	cq_norm_backward(&m->attn_ln, &grad->attn_ln, p->e, &p->stats, p->dh, p->de, n * S);
	/* embeddings */
	cq_linear_backward(&m->emb_rows, &grad->emb_rows, p->c, (int) H, p->de, (int) D, p->dc,
					   (int) H, 0.0f, n * S);
	cq_gelu_erf_backward(p->bt, p->dc, n * S * H);
	transpose_blocks(p->dc, p->db, (int) n, (int) S, (int) H);
	cq_linear_backward(&m->emb_cols, &grad->emb_cols, p->a, (int) W, p->db, (int) S, NULL, 0,
					   0.0f, n * H);
}
