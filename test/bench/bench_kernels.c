/*
 * The inference kernels against OpenBLAS sgemm, one thread, on the products
 * of a `small` model's forward (d 256, FFN 1024, V 8000) at batch 1 and
 * batch 64 (31 target positions a pair, as bench_nn.py's pairs):
 *   - the row-independent float32 kernel (nn/ops/rowgemm.h), each variant
 *     this CPU runs, as a ratio to cblas_sgemm on the same product;
 *   - the int8 kernel (nn/ops/qgemm.h), each variant, with 8-bit and 7-bit
 *     weight codes (float in, float out: quantization included).
 * Run it with OPENBLAS_CORETYPE=Haswell to hold the row kernel's AVX2
 * variant against OpenBLAS's AVX2 sgemm on a CPU that has AVX-512 too.
 * Not part of the extension; test/bench/bench_kernels.sh builds and runs it.
 */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cpu.h"
#include "nn/ops/qgemm.h"
#include "nn/ops/rowgemm.h"

static uint64_t rng = 88172645463325252ULL;

static float
uniform(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (float) ((rng >> 40) / (double) (1 << 24)) * 2.0f - 1.0f;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct product
{
	int			m,
				n,
				k;
	const float *w,
			   *x,
			   *bias;
	float	   *y;
	const float *fpacked;
	const void *qpacked;
	int			isa;
} product;

static void
run_sgemm(const product *p)
{
	/* y = x W^T + bias: the bias first, as the layers add it */
	for (int r = 0; r < p->m; r++)
		memcpy(p->y + (long) r * p->n, p->bias, sizeof(float) * p->n);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, p->m, p->n, p->k, 1.0f,
				p->x, p->k, p->w, p->k, 1.0f, p->y, p->n);
}

static void
run_rowgemm(const product *p)
{
	cq_rowgemm_packed_isa((cq_rowgemm_isa) p->isa, p->fpacked, p->n, p->k, p->bias,
						  p->x, p->k, p->y, p->n, p->m);
}

static void
run_qgemm(const product *p)
{
	cq_qgemm_rows_isa((cq_qgemm_isa) p->isa, p->qpacked, p->n, p->k, p->bias,
					  p->x, p->k, p->y, p->n, p->m);
}

/* GFLOP/s (2 m n k a call): the best of 5 runs of at least 50 ms each. */
static double
gflops(void (*fn) (const product *), const product *p)
{
	double		best = 0;

	fn(p);
	for (int rep = 0; rep < 5; rep++)
	{
		long		calls = 0;
		double		t0 = now(),
					el;

		do
		{
			fn(p);
			calls++;
		} while ((el = now() - t0) < 0.05);
		if (2.0 * p->m * p->n * p->k * calls / el / 1e9 > best)
			best = 2.0 * p->m * p->n * p->k * calls / el / 1e9;
	}
	return best;
}

static void *
packed_q(const float *w, int n, int k, int bits)
{
	int8_t	   *q = malloc((size_t) n * k);
	float	   *scale = malloc(sizeof(float) * n);
	void	   *packed = aligned_alloc(64, (cq_qgemm_packed_bytes(n, k) + 63) / 64 * 64);

	cq_qgemm_quantize_weights(w, n, k, bits, q, scale);
	cq_qgemm_pack(q, scale, n, k, bits, packed);
	free(q), free(scale);
	return packed;
}

static void
one_shape(int m, int n, int k, const char *what)
{
	float	   *w = malloc(sizeof(float) * n * k),
			   *x = malloc(sizeof(float) * m * k),
			   *bias = malloc(sizeof(float) * n),
			   *y = malloc(sizeof(float) * m * n),
			   *fpacked = aligned_alloc(64, sizeof(float) * cq_rowgemm_packed_floats(n, k));
	void	   *q8,
			   *q7;
	product		p = {m, n, k, w, x, bias, y, fpacked, NULL, 0};
	double		s;
	cq_cpu_features f = cq_cpu_detect();

	for (long i = 0; i < (long) n * k; i++)
		w[i] = uniform() * 0.1f;
	for (long i = 0; i < (long) m * k; i++)
		x[i] = uniform();
	for (int j = 0; j < n; j++)
		bias[j] = uniform();
	cq_rowgemm_pack(w, k, n, k, fpacked);
	q8 = packed_q(w, n, k, 8);
	q7 = packed_q(w, n, k, 7);
	s = gflops(run_sgemm, &p);
	printf("%-8s %5d x %5d x %5d  sgemm %6.1f |", what, m, n, k, s);
	for (int i = 1; i < CQ_ROWGEMM_N_ISA; i++)
		if (cq_rowgemm_isa_for(f) >= (cq_rowgemm_isa) i)
		{
			p.isa = i;
			printf(" rowgemm %s %.2f", cq_rowgemm_isa_name((cq_rowgemm_isa) i),
				   gflops(run_rowgemm, &p) / s);
		}
	printf(" |");
	for (int i = 1; i < CQ_QGEMM_N_ISA; i++)
		if (cq_qgemm_isa_runs((cq_qgemm_isa) i, f))
		{
			p.isa = i;
			p.qpacked = q8;
			printf(" q8 %s %.2f", cq_qgemm_isa_name((cq_qgemm_isa) i), gflops(run_qgemm, &p) / s);
			if (i == CQ_QGEMM_AVX2)
			{
				p.qpacked = q7;
				printf(" q7 %s %.2f", cq_qgemm_isa_name((cq_qgemm_isa) i), gflops(run_qgemm, &p) / s);
			}
		}
	printf("  (ratios to sgemm)\n");
	fflush(stdout);
	free(w), free(x), free(bias), free(y), free(fpacked), free(q8), free(q7);
}

int
main(int argc, char **argv)
{
	static const struct
	{
		int			n,
					k;
		const char *what;
	}			shapes[] = {
		{768, 256, "qkv"}, {256, 256, "out"}, {1024, 256, "ffn1"}, {256, 1024, "ffn2"},
		{8000, 256, "vocab"}
	};
	static const int rows[] = {31, 1984};	/* batch 1 and 64, 31 positions a pair */
	char		feats[256];

	cq_cpu_features_format(cq_cpu_detect(), feats, sizeof(feats));
	printf("CPU features: %s\nrow kernel: %s, int8 kernel: %s (the machine's); GFLOP/s of "
		   "sgemm, the kernels as ratios to it\n", feats,
		   cq_rowgemm_isa_name(cq_rowgemm_machine()), cq_qgemm_isa_name(cq_qgemm_machine()));
	for (int r = 0; r < 2; r++)
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
			if (argc < 2 || strcmp(argv[1], shapes[s].what) == 0)
				one_shape(rows[r], shapes[s].n, shapes[s].k, shapes[s].what);
	return 0;
}
