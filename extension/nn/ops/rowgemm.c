/*
 * The row-independent GEMM's driver (rowgemm.h): packing, the ISA choice and
 * the loops around the register tiles.
 *
 * Loop order, outermost first: blocks of kc k steps (per variant); blocks of
 * output panels whose kc-slice of B is about L2_BYTES (it stays in L2 while every row of A
 * passes over it: the weights come from memory once per call); chunks of MC
 * rows; panels of CQ_ROWGEMM_NB columns (the panel's kc x NB slice of B is
 * reused from L1 by the chunk's tiles); tiles of the ISA's height.  A tile
 * after the first k-block continues from the partial sums it stored, so each
 * element's chain runs k = 0 .. K-1 in order whatever the blocking.  The
 * sizes were tuned on a Xeon with 48 KB L1 and 2 MB L2 per core (bench_nn.py
 * prints the kernel against sgemm on the forward's shapes).
 */
#include "nn/ops/rowgemm.h"

#include "common/interrupt.h"
#include "common/parallel.h"

#include <stdbool.h>
#include <string.h>

#include "nn/ops/rowgemm_block.h"

#define KC_MAX 512
#define L2_BYTES (1 << 19)
#define MC 48

typedef void (*block_fn) (const cq_rowgemm_block *t);

/*
 * kc: k steps per block.  A tile streams its panel's kc x NB slice of B
 * (kc x 128 bytes) and its rows' kc floats of A: at 256 both fit a 32 KB L1
 * (AVX2 cores: Haswell to Zen 3); AVX-512 cores have 48 KB.
 */
static const struct
{
	block_fn	block;
	int			mr,
				kc;
	const char *name;
}			isa_ops[CQ_ROWGEMM_N_ISA] = {
	[CQ_ROWGEMM_PORTABLE] = {cq_rowgemm_block_portable, CQ_ROWGEMM_MR_PORTABLE, 256, "portable"},
	[CQ_ROWGEMM_AVX2] = {cq_rowgemm_block_avx2, CQ_ROWGEMM_MR_AVX2, 256, "avx2"},
	[CQ_ROWGEMM_AVX512] = {cq_rowgemm_block_avx512, CQ_ROWGEMM_MR_AVX512, 512, "avx512"},
};

cq_rowgemm_isa
cq_rowgemm_isa_for(cq_cpu_features f)
{
#if defined(__x86_64__)
	if (f & CQ_CPU_BIT(CQ_CPU_AVX512F))
		return CQ_ROWGEMM_AVX512;
	if ((f & CQ_CPU_BIT(CQ_CPU_AVX2)) && (f & CQ_CPU_BIT(CQ_CPU_FMA)))
		return CQ_ROWGEMM_AVX2;
#endif
	return CQ_ROWGEMM_PORTABLE;
}

cq_rowgemm_isa
cq_rowgemm_machine(void)
{
	return cq_rowgemm_isa_for(cq_cpu_detect());
}

const char *
cq_rowgemm_isa_name(cq_rowgemm_isa isa)
{
	return isa_ops[isa].name;
}

static int
panels(int n)
{
	return (n + CQ_ROWGEMM_NB - 1) / CQ_ROWGEMM_NB;
}

size_t
cq_rowgemm_packed_floats(int n, int k)
{
	return (size_t) panels(n) * CQ_ROWGEMM_NB * k;
}

void
cq_rowgemm_pack(const float *w, long ldw, int n, int k, float *packed)
{
	for (int p = 0; p < panels(n); p++)
	{
		float	   *dst = packed + (size_t) p * CQ_ROWGEMM_NB * k;

		for (int kk = 0; kk < k; kk++)
			for (int jj = 0; jj < CQ_ROWGEMM_NB; jj++)
			{
				int			j = p * CQ_ROWGEMM_NB + jj;

				dst[(size_t) kk * CQ_ROWGEMM_NB + jj] = j < n ? w[j * ldw + kk] : 0.0f;
			}
	}
}

/* Where B's slice [k0, k0 + kc) x [panel columns] is, and its row stride. */
typedef enum b_form
{
	B_PACKED,						/* panels from cq_rowgemm_pack */
	B_ROWS,							/* B [k, n] row-major: the slice is in place */
	B_TRANSPOSED					/* B^T [n, k] row-major: copy the slice out */
} b_form;

typedef struct product
{
	cq_rowgemm_isa isa;
	const float *a;
	long		lda;
	const float *b;
	long		ldb;
	b_form		form;
	const float *bias;
	float	   *c;
	long		ldc;
	int			rows,
				n,
				k;
} product;

static const float *
b_slice(const product *pr, int p, int k0, int kc, int nb, float *scratch, long *ldb)
{
	switch (pr->form)
	{
		case B_PACKED:
			*ldb = CQ_ROWGEMM_NB;
			return pr->b + ((size_t) p * pr->k + k0) * CQ_ROWGEMM_NB;
		case B_ROWS:
			*ldb = pr->ldb;
			return pr->b + (long) k0 * pr->ldb + p * CQ_ROWGEMM_NB;
		case B_TRANSPOSED:
			for (int kk = 0; kk < kc; kk++)
				for (int jj = 0; jj < nb; jj++)
					scratch[kk * CQ_ROWGEMM_NB + jj] =
						pr->b[(long) (p * CQ_ROWGEMM_NB + jj) * pr->ldb + k0 + kk];
			*ldb = CQ_ROWGEMM_NB;
			return scratch;
	}
	return NULL;
}

/* Panels per column block: the block's K-slice of B, ~L2_BYTES, stays in L2. */
static int
block_panels(int kc)
{
	int			p = L2_BYTES / ((int) sizeof(float) * CQ_ROWGEMM_NB * (kc > 0 ? kc : 1));

	return p > 0 ? p : 1;
}

/*
 * The product restricted to output panels [q0, q1).  poll: a cancel point
 * every MC rows of an L2 block (milliseconds apart); false on a pool thread,
 * which may not poll (common/parallel.h).
 */
static void
run_panels(const product *pr, int q0, int q1, bool poll)
{
	block_fn	block = isa_ops[pr->isa].block;
	int			mr = isa_ops[pr->isa].mr,
				kc_max = isa_ops[pr->isa].kc,
				mc_max = MC / mr * mr;
	float		bt[KC_MAX * CQ_ROWGEMM_NB];

	for (int k0 = 0; k0 < pr->k || (k0 == 0 && pr->k == 0); k0 += kc_max)
	{
		int			kc = pr->k - k0 < kc_max ? pr->k - k0 : kc_max,
					np = block_panels(kc);

		for (int p0 = q0; p0 < q1; p0 += np)
		{
			int			p1 = p0 + np < q1 ? p0 + np : q1;

			for (int m0 = 0; m0 < pr->rows; m0 += mc_max)
			{
				int			mc = pr->rows - m0 < mc_max ? pr->rows - m0 : mc_max;

				if (poll)
					cq_poll();

				for (int p = p0; p < p1; p++)
				{
					int			col = p * CQ_ROWGEMM_NB;
					cq_rowgemm_block t = {
						.lda = pr->lda, .ldc = pr->ldc, .kc = kc, .cont = k0 > 0,
						.nb = pr->n - col < CQ_ROWGEMM_NB ? pr->n - col : CQ_ROWGEMM_NB,
						.bias = pr->bias ? pr->bias + col : NULL,
					};

					t.b = b_slice(pr, p, k0, kc, t.nb, bt, &t.ldb);
					for (int t0 = 0; t0 < mc; t0 += mr)
					{
						t.mr = mc - t0 < mr ? mc - t0 : mr;
						t.a = pr->a + (long) (m0 + t0) * pr->lda + k0;
						t.c = pr->c + (long) (m0 + t0) * pr->ldc + col;
						block(&t);
					}
				}
			}
		}
	}
}

/*
 * Threads (common/parallel.h).  A product of at least PAR_MIN_MACS
 * multiply-adds is split into contiguous ranges of output panels, one per
 * thread (each thread reads its own columns of B: at decoding's few rows the
 * weights' memory traffic is what is shared out), or of rows when B has too
 * few panels.  The rows go in chunks of about PAR_CHUNK_MACS, with a cancel
 * point on the caller between chunks while no part runs.  Which thread
 * computes an element never changes its chain (rowgemm.h), so the bits are
 * those of one thread.
 */
#define PAR_MIN_MACS (1L << 20)
#define PAR_CHUNK_MACS (1L << 27)

typedef struct split
{
	product		pr;				/* one chunk of rows */
	bool		by_rows;
} split;

static void
run_part(void *arg, int part, int nparts)
{
	const split *s = arg;
	int			np = panels(s->pr.n);

	if (!s->by_rows)
	{
		run_panels(&s->pr, (int) ((long) np * part / nparts),
				   (int) ((long) np * (part + 1) / nparts), false);
	}
	else
	{
		product		sub = s->pr;
		int			r0 = (int) ((long) s->pr.rows * part / nparts),
					r1 = (int) ((long) s->pr.rows * (part + 1) / nparts);

		sub.a += (long) r0 * sub.lda;
		sub.c += (long) r0 * sub.ldc;
		sub.rows = r1 - r0;
		run_panels(&sub, 0, np, false);
	}
}

static void
run(const product *pr)
{
	int			threads = cq_parallel_threads(),
				np = panels(pr->n);
	long		row_macs = (long) pr->n * (pr->k > 0 ? pr->k : 1),
				chunk;
	split		s = {*pr, np < 2 * threads};

	if (threads <= 1 || row_macs * pr->rows < PAR_MIN_MACS)
	{
		run_panels(pr, 0, np, true);
		return;
	}
	chunk = PAR_CHUNK_MACS / row_macs > MC ? PAR_CHUNK_MACS / row_macs : MC;
	for (int r0 = 0; r0 < pr->rows; r0 += (int) chunk)
	{
		int			parts;

		s.pr.a = pr->a + (long) r0 * pr->lda;
		s.pr.c = pr->c + (long) r0 * pr->ldc;
		s.pr.rows = pr->rows - r0 < chunk ? pr->rows - r0 : (int) chunk;
		parts = s.by_rows ? (s.pr.rows < threads ? s.pr.rows : threads) : threads;
		cq_poll();
		cq_parallel_run(run_part, &s, parts);
	}
}

void
cq_rowgemm_packed_isa(cq_rowgemm_isa isa, const float *packed, int n, int k,
					  const float *bias, const float *x, long ldx,
					  float *y, long ldy, int rows)
{
	product		pr = {isa, x, ldx, packed, 0, B_PACKED, bias, y, ldy, rows, n, k};

	run(&pr);
}

void
cq_rowgemm_nt_isa(cq_rowgemm_isa isa, const float *a, long lda, const float *b,
				  long ldb, const float *bias, float *c, long ldc,
				  int rows, int n, int k)
{
	product		pr = {isa, a, lda, b, ldb, B_TRANSPOSED, bias, c, ldc, rows, n, k};

	run(&pr);
}

void
cq_rowgemm_nn_isa(cq_rowgemm_isa isa, const float *a, long lda, const float *b,
				  long ldb, const float *bias, float *c, long ldc,
				  int rows, int n, int k)
{
	product		pr = {isa, a, lda, b, ldb, B_ROWS, bias, c, ldc, rows, n, k};

	run(&pr);
}

void
cq_rowgemm_packed(const float *packed, int n, int k, const float *bias,
				  const float *x, long ldx, float *y, long ldy, int rows)
{
	cq_rowgemm_packed_isa(cq_rowgemm_machine(), packed, n, k, bias, x, ldx, y, ldy, rows);
}

void
cq_rowgemm_nt(const float *a, long lda, const float *b, long ldb,
			  const float *bias, float *c, long ldc, int rows, int n, int k)
{
	cq_rowgemm_nt_isa(cq_rowgemm_machine(), a, lda, b, ldb, bias, c, ldc, rows, n, k);
}

void
cq_rowgemm_nn(const float *a, long lda, const float *b, long ldb,
			  const float *bias, float *c, long ldc, int rows, int n, int k)
{
	cq_rowgemm_nn_isa(cq_rowgemm_machine(), a, lda, b, ldb, bias, c, ldc, rows, n, k);
}
