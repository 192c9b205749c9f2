/*
 * The row-independent GEMM (nn/ops/rowgemm.h): its definition (one chain per
 * element), accuracy against float64, and the row-independence property,
 * for every variant this CPU can run.
 */
#include "unit.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/cpu.h"
#include "common/parallel.h"
#include "nn/ops/blas.h"
#include "nn/ops/rowgemm.h"

static uint64_t lcg_state = 12345;

static float
uniform(void)
{
	lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (float) ((lcg_state >> 40) / (double) (1 << 24)) * 2.0f - 1.0f;
}

static float *
random_floats(long n)
{
	float	   *x = malloc(sizeof(float) * (n > 0 ? n : 1));

	for (long i = 0; i < n; i++)
		x[i] = uniform();
	return x;
}

/* The variants this CPU executes. */
static int
runnable(cq_rowgemm_isa *out)
{
	cq_rowgemm_isa best = cq_rowgemm_machine();
	int			n = 0;

	for (int i = 0; i < CQ_ROWGEMM_N_ISA; i++)
		if ((cq_rowgemm_isa) i <= best)
			out[n++] = (cq_rowgemm_isa) i;
	return n;
}

/* Shapes: tails in every dimension, k over the cache block (512), K = 0. */
static const int shapes[][3] = {	/* rows, n, k */
	{1, 1, 1}, {3, 7, 5}, {13, 33, 17}, {25, 64, 64}, {31, 45, 256},
	{12, 96, 1100}, {50, 17, 3}, {4, 31, 0}, {2, 250, 600},
};

#define N_SHAPES ((int) (sizeof(shapes) / sizeof(shapes[0])))

/*
 * The definition, written out: start from the bias, then one multiply-add per
 * k in order; fused (fmaf, exactly rounded) for the FMA variants, rounded
 * twice for the portable one.
 */
static float
chain(cq_rowgemm_isa isa, const float *a, const float *w, float bias, int k)
{
	float		acc = bias;

	for (int kk = 0; kk < k; kk++)
		acc = isa == CQ_ROWGEMM_PORTABLE ? acc + a[kk] * w[kk] : fmaf(a[kk], w[kk], acc);
	return acc;
}

TEST(rowgemm_is_one_chain_per_element)
{
	cq_rowgemm_isa isas[CQ_ROWGEMM_N_ISA];
	int			n_isa = runnable(isas);

	for (int s = 0; s < N_SHAPES; s++)
	{
		int			rows = shapes[s][0],
					n = shapes[s][1],
					k = shapes[s][2];
		float	   *x = random_floats((long) rows * k),
				   *w = random_floats((long) n * k),
				   *bias = random_floats(n),
				   *packed = malloc(sizeof(float) * (cq_rowgemm_packed_floats(n, k) + 1)),
				   *y = malloc(sizeof(float) * rows * n);

		cq_rowgemm_pack(w, k, n, k, packed);
		for (int i = 0; i < n_isa; i++)
		{
			long		bad = 0;

			cq_rowgemm_packed_isa(isas[i], packed, n, k, bias, x, k, y, n, rows);
			for (int r = 0; r < rows; r++)
				for (int j = 0; j < n; j++)
					bad += y[r * n + j] != chain(isas[i], x + (long) r * k, w + (long) j * k, bias[j], k);
			if (bad)
				unit_fail(__FILE__, __LINE__, "%s, %dx%dx%d: %ld elements are not the chain",
						  cq_rowgemm_isa_name(isas[i]), rows, n, k, bad);
		}
		free(x), free(w), free(bias), free(packed), free(y);
	}
}

/*
 * Against float64 (cq_sgemm_reference): a recursive sum of K products and the
 * bias rounds at most K + 1 times, so |y - exact| <= gamma_{K+1} (|b| +
 * sum |x w|) with gamma_n = n u / (1 - n u), u = 2^-24; the float64
 * reference itself is off by far less (2^-53 per step, then one rounding to
 * float32: half an ulp of |y|, also allowed).
 */
TEST(rowgemm_within_float32_bound_of_float64)
{
	cq_rowgemm_isa isas[CQ_ROWGEMM_N_ISA];
	int			n_isa = runnable(isas);
	const double u = ldexp(1.0, -24);

	for (int s = 0; s < N_SHAPES; s++)
	{
		int			rows = shapes[s][0],
					n = shapes[s][1],
					k = shapes[s][2];
		float	   *x = random_floats((long) rows * k),
				   *w = random_floats((long) n * k),
				   *packed = malloc(sizeof(float) * (cq_rowgemm_packed_floats(n, k) + 1)),
				   *y = malloc(sizeof(float) * rows * n),
				   *ref = malloc(sizeof(float) * rows * n);
		double		gamma = (k + 1) * u / (1 - (k + 1) * u);

		cq_rowgemm_pack(w, k, n, k, packed);
		cq_sgemm_reference(false, true, rows, n, k, 1.0f, x, k, w, k, 0.0f, ref, n);
		for (int i = 0; i < n_isa; i++)
		{
			cq_rowgemm_packed_isa(isas[i], packed, n, k, NULL, x, k, y, n, rows);
			for (int r = 0; r < rows; r++)
				for (int j = 0; j < n; j++)
				{
					double		mag = 0.0;

					for (int kk = 0; kk < k; kk++)
						mag += fabs((double) x[(long) r * k + kk] * w[(long) j * k + kk]);
					if (!(fabs((double) y[r * n + j] - ref[r * n + j]) <=
						  gamma * mag + u * fabs(ref[r * n + j])))
					{
						unit_fail(__FILE__, __LINE__, "%s %dx%dx%d [%d,%d]: %.9g vs %.9g",
								  cq_rowgemm_isa_name(isas[i]), rows, n, k, r, j,
								  y[r * n + j], ref[r * n + j]);
						r = rows;
						break;
					}
				}
		}
		free(x), free(w), free(packed), free(y), free(ref);
	}
}

/*
 * The property scoring relies on: a row computed alone, in other tiles and
 * positions, with other rows around it, with other strides, gives the same
 * bits.
 */
TEST(rowgemm_rows_are_independent)
{
	enum
	{
		N = 70, K = 530, ROWS = 40, LD = K + 3
	};
	float	   *w = random_floats((long) N * K),
			   *bias = random_floats(N),
			   *target = random_floats(K),
			   *packed = malloc(sizeof(float) * cq_rowgemm_packed_floats(N, K)),
			   *x = malloc(sizeof(float) * ROWS * LD),
			   *y = malloc(sizeof(float) * ROWS * (N + 5)),
			   alone[N];
	cq_rowgemm_isa isa = cq_rowgemm_machine();

	cq_rowgemm_pack(w, K, N, K, packed);
	cq_rowgemm_packed(packed, N, K, bias, target, K, alone, N, 1);
	for (int rows = 1; rows <= ROWS; rows += 3)
		for (int pos = 0; pos < rows; pos += 5)
		{
			for (long i = 0; i < (long) rows * LD; i++)
				x[i] = uniform();
			memcpy(x + (long) pos * LD, target, sizeof(float) * K);
			cq_rowgemm_packed_isa(isa, packed, N, K, bias, x, LD, y, N + 5, rows);
			if (memcmp(y + (long) pos * (N + 5), alone, sizeof(alone)) != 0)
				unit_fail(__FILE__, __LINE__, "row at %d of %d differs from the row alone", pos, rows);
		}
	free(w), free(bias), free(target), free(packed), free(x), free(y);
}

/* Packed, transposed (B^T given) and plain (B given) forms agree bitwise. */
TEST(rowgemm_forms_agree)
{
	enum
	{
		R = 9, N = 41, K = 600
	};
	float	   *a = random_floats(R * K),
			   *w = random_floats(N * K),	/* [N, K] */
			   *wt = malloc(sizeof(float) * K * N),	/* [K, N] */
			   *packed = malloc(sizeof(float) * cq_rowgemm_packed_floats(N, K)),
			   y1[R * N],
			   y2[R * N],
			   y3[R * N];

	for (int j = 0; j < N; j++)
		for (int kk = 0; kk < K; kk++)
			wt[kk * N + j] = w[j * K + kk];
	cq_rowgemm_pack(w, K, N, K, packed);
	cq_rowgemm_packed(packed, N, K, NULL, a, K, y1, N, R);
	cq_rowgemm_nt(a, K, w, K, NULL, y2, N, R, N, K);
	cq_rowgemm_nn(a, K, wt, N, NULL, y3, N, R, N, K);
	CHECK(memcmp(y1, y2, sizeof(y1)) == 0);
	CHECK(memcmp(y1, y3, sizeof(y1)) == 0);
	free(a), free(w), free(wt), free(packed);
}

/* Columns beyond n and rows beyond rows are never written. */
TEST(rowgemm_writes_only_its_block)
{
	enum
	{
		R = 5, N = 19, K = 7, LDY = 40
	};
	float	   *a = random_floats(R * K),
			   *w = random_floats(N * K),
			   *packed = malloc(sizeof(float) * cq_rowgemm_packed_floats(N, K)),
			   y[(R + 1) * LDY];
	cq_rowgemm_isa isas[CQ_ROWGEMM_N_ISA];
	int			n_isa = runnable(isas);

	cq_rowgemm_pack(w, K, N, K, packed);
	for (int i = 0; i < n_isa; i++)
	{
		for (int j = 0; j < (R + 1) * LDY; j++)
			y[j] = -12345.0f;
		cq_rowgemm_packed_isa(isas[i], packed, N, K, NULL, a, K, y, LDY, R);
		for (int r = 0; r <= R; r++)
			for (int j = r < R ? N : 0; j < LDY; j++)
				CHECK(y[r * LDY + j] == -12345.0f);
	}
	free(a), free(w), free(packed);
}

/* The FMA variants give the same bits as each other (one rounding per step). */
TEST(rowgemm_fma_variants_agree)
{
	enum
	{
		R = 29, N = 77, K = 700
	};
	float	   *a = random_floats(R * K),
			   *w = random_floats(N * K),
			   *bias = random_floats(N),
			   *packed = malloc(sizeof(float) * cq_rowgemm_packed_floats(N, K)),
			   y1[R * N],
			   y2[R * N];

	if (cq_rowgemm_machine() < CQ_ROWGEMM_AVX512)
	{
		printf("     (no AVX-512 here: avx512 = avx2 not checked)\n");
		free(a), free(w), free(bias), free(packed);
		return;
	}
	cq_rowgemm_pack(w, K, N, K, packed);
	cq_rowgemm_packed_isa(CQ_ROWGEMM_AVX2, packed, N, K, bias, a, K, y1, N, R);
	cq_rowgemm_packed_isa(CQ_ROWGEMM_AVX512, packed, N, K, bias, a, K, y2, N, R);
	CHECK(memcmp(y1, y2, sizeof(y1)) == 0);
	free(a), free(w), free(bias), free(packed);
}

/*
 * Threads (common/parallel.h): 1, 2 and 3 threads give the same bits, for
 * the column split (many panels), the row split (few panels), products of
 * several row chunks, and every form of B; strided output columns beyond n
 * stay untouched.  The shapes are above the kernel's threading threshold.
 */
TEST(rowgemm_threads_same_bits)
{
	static const int tshapes[][3] = {	/* rows, n, k */
		{160, 1000, 512}, {7, 2048, 512}, {4000, 40, 600}, {300, 33, 1100},
	};
	cq_rowgemm_isa isas[CQ_ROWGEMM_N_ISA];
	int			n_isa = runnable(isas),
				saved = cq_parallel_threads();

	for (int s = 0; s < (int) (sizeof(tshapes) / sizeof(tshapes[0])); s++)
	{
		int			R = tshapes[s][0],
					N = tshapes[s][1],
					K = tshapes[s][2],
					ldy = N + 3;
		float	   *a = random_floats((long) R * K),
				   *w = random_floats((long) N * K),
				   *bias = random_floats(N),
				   *packed = malloc(sizeof(float) * cq_rowgemm_packed_floats(N, K)),
				   *y[3][3];

		cq_rowgemm_pack(w, K, N, K, packed);
		for (int i = 0; i < n_isa; i++)
		{
			for (int t = 0; t < 3; t++)
			{
				cq_parallel_set_threads(t + 1);
				for (int f = 0; f < 3; f++)
				{
					y[t][f] = malloc(sizeof(float) * (size_t) R * ldy);
					for (long j = 0; j < (long) R * ldy; j++)
						y[t][f][j] = -12345.0f;
				}
				cq_rowgemm_packed_isa(isas[i], packed, N, K, bias, a, K, y[t][0], ldy, R);
				cq_rowgemm_nt_isa(isas[i], a, K, w, K, bias, y[t][1], ldy, R, N, K);
				cq_rowgemm_nn_isa(isas[i], a, K, packed, CQ_ROWGEMM_NB, bias, y[t][2], ldy,
								  R, N < CQ_ROWGEMM_NB ? N : CQ_ROWGEMM_NB, K);
			}
			for (int t = 1; t < 3; t++)
				for (int f = 0; f < 3; f++)
					CHECK(memcmp(y[0][f], y[t][f], sizeof(float) * (size_t) R * ldy) == 0);
			for (long r = 0; r < R; r++)
				for (int j = N; j < ldy; j++)
					CHECK(y[2][0][r * ldy + j] == -12345.0f);
			for (int t = 0; t < 3; t++)
				for (int f = 0; f < 3; f++)
					free(y[t][f]);
		}
		free(a), free(w), free(bias), free(packed);
	}
	cq_parallel_set_threads(saved);
}
