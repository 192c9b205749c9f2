/*
 * Int8 GEMM evaluation (issue 30): oneDNN's int8 matmul against corpq's own
 * kernel (nn/ops/qgemm.h) and float32 sgemm, on the inference shapes
 * M in {1, 64}, (N, K) in {(256,256), (1024,256), (256,1024), (8000,256)}.
 *
 *   1. exactness: oneDNN u8s8s32 and s8s8s32 matmul, int32 output, no scales,
 *      against the exact integer sum, on extreme inputs (all 255 / -128 / 127)
 *      and random ones (full range, and corpq's range [-127, 127]);
 *   2. speed, one thread: oneDNN (int32 out: no activation quantization, no
 *      epilogue), corpq's qgemm (float in, float out: everything included),
 *      corpq's float32 rowgemm and OpenBLAS cblas_sgemm.
 *
 * Not part of the extension; test/bench/bench_qgemm.sh builds and runs it.
 */
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cpu.h"
#include "nn/ops/qgemm.h"
#include "nn/ops/rowgemm.h"

#define DNN(call) \
	do { dnnl_status_t s_ = (call); \
		if (s_ != dnnl_success) { fprintf(stderr, "%s: status %d\n", #call, (int) s_); exit(1); } \
	} while (0)

static uint64_t rng = 88172645463325252ULL;

static uint32_t
next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t) (rng >> 16);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- oneDNN ------------------------------------------------------------ */

static dnnl_engine_t engine;
static dnnl_stream_t stream;

/* One matmul src[M, K] (u8 or s8) x W^T, W [N, K] s8, -> dst[M, N] s32. */
typedef struct dnn
{
	dnnl_primitive_t mm;
	dnnl_memory_t src,
				wei,
				dst;
	const char *impl;
} dnn;

static dnn
dnn_make(int m, int n, int k, dnnl_data_type_t src_type, const int8_t *w)
{
	dnnl_dims_t sd = {m, k}, wd = {k, n}, dd = {m, n};
	dnnl_memory_desc_t src_md, wei_any, wei_plain, dst_md;
	dnnl_matmul_desc_t desc;
	dnnl_primitive_desc_t pd, rpd;
	dnnl_primitive_t reorder;
	dnnl_memory_t plain;
	dnn			d;

	DNN(dnnl_memory_desc_init_by_tag(&src_md, 2, sd, src_type, dnnl_ab));
	DNN(dnnl_memory_desc_init_by_tag(&wei_any, 2, wd, dnnl_s8, dnnl_format_tag_any));
	/* ba: element (kk, j) at j K + kk, i.e. W [N, K] row-major */
	DNN(dnnl_memory_desc_init_by_tag(&wei_plain, 2, wd, dnnl_s8, dnnl_ba));
	DNN(dnnl_memory_desc_init_by_tag(&dst_md, 2, dd, dnnl_s32, dnnl_ab));
	DNN(dnnl_matmul_desc_init(&desc, &src_md, &wei_any, NULL, &dst_md));
	DNN(dnnl_primitive_desc_create(&pd, &desc, NULL, engine, NULL));
	DNN(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &d.impl));
	DNN(dnnl_primitive_create(&d.mm, pd));
	/* the weights reordered once into the layout the kernel chose (prepacked) */
	DNN(dnnl_memory_create(&d.wei, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
						   engine, DNNL_MEMORY_ALLOCATE));
	DNN(dnnl_memory_create(&plain, &wei_plain, engine, (void *) w));
	DNN(dnnl_reorder_primitive_desc_create(&rpd, &wei_plain, engine,
										   dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
										   engine, NULL));
	DNN(dnnl_primitive_create(&reorder, rpd));
	DNN(dnnl_primitive_execute(reorder, stream, 2,
							   (dnnl_exec_arg_t[]) {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, d.wei}}));
	DNN(dnnl_stream_wait(stream));
	DNN(dnnl_memory_create(&d.src, &src_md, engine, DNNL_MEMORY_NONE));
	DNN(dnnl_memory_create(&d.dst, &dst_md, engine, DNNL_MEMORY_NONE));
	dnnl_primitive_destroy(reorder);
	dnnl_primitive_desc_destroy(rpd);
	dnnl_memory_destroy(plain);
	/* impl points into pd: keep pd alive (leaked: a benchmark) */
	return d;
}

static void
dnn_run(dnn *d, const void *src, int32_t *dst)
{
	DNN(dnnl_memory_set_data_handle(d->src, (void *) src));
	DNN(dnnl_memory_set_data_handle(d->dst, dst));
	DNN(dnnl_primitive_execute(d->mm, stream, 3, (dnnl_exec_arg_t[]) {
		{DNNL_ARG_SRC, d->src}, {DNNL_ARG_WEIGHTS, d->wei}, {DNNL_ARG_DST, d->dst}}));
	DNN(dnnl_stream_wait(stream));
}

static void
dnn_free(dnn *d)
{
	dnnl_primitive_destroy(d->mm);
	dnnl_memory_destroy(d->src);
	dnnl_memory_destroy(d->wei);
	dnnl_memory_destroy(d->dst);
}

/* ---- exactness ---------------------------------------------------------- */

/* Fill v[len] with a constant, or random in [lo, hi] when lo < hi. */
static void
fill(void *v, long len, bool is_unsigned, int lo, int hi)
{
	for (long i = 0; i < len; i++)
	{
		int			x = lo < hi ? lo + (int) (next() % (uint32_t) (hi - lo + 1)) : lo;

		if (is_unsigned)
			((uint8_t *) v)[i] = (uint8_t) x;
		else
			((int8_t *) v)[i] = (int8_t) x;
	}
}

/* Elements of oneDNN's dst that differ from the exact sum; the first one shown. */
static long
mismatches(int m, int n, int k, bool u8, const void *src, const int8_t *w,
		   const int32_t *dst, char *first, size_t size)
{
	long		bad = 0;

	first[0] = '\0';
	for (int r = 0; r < m; r++)
		for (int j = 0; j < n; j++)
		{
			int64_t		s = 0;

			for (int kk = 0; kk < k; kk++)
				s += (int64_t) (u8 ? ((const uint8_t *) src)[(long) r * k + kk] :
								((const int8_t *) src)[(long) r * k + kk]) * w[(long) j * k + kk];
			if (s != dst[(long) r * n + j] && bad++ == 0)
				snprintf(first, size, " (first: exact %lld, oneDNN %d)", (long long) s,
						 dst[(long) r * n + j]);
		}
	return bad;
}

static const struct
{
	const char *name;
	bool		u8;
	int			xlo,
				xhi,
				wlo,
				whi;
}			cases[] = {
	{"u8s8 all 255 x all 127", true, 255, 255, 127, 127},
	{"u8s8 all 255 x all -128", true, 255, 255, -128, -128},
	{"u8s8 random full range", true, 0, 255, -128, 127},
	{"u8s8 7-bit src [0,127]", true, 0, 127, -128, 127},
	{"s8s8 all -128 x all -128", false, -128, -128, -128, -128},
	{"s8s8 all 127 x all 127", false, 127, 127, 127, 127},
	{"s8s8 random full range", false, -128, 127, -128, 127},
	{"s8s8 corpq range [-127,127]", false, -127, 127, -127, 127},
};

#define N_CASES ((int) (sizeof(cases) / sizeof(cases[0])))

static const int shapes[][2] = {{256, 256}, {1024, 256}, {256, 1024}, {8000, 256}};
static const int ms[] = {1, 64};

static void
exactness(void)
{
	printf("== exactness of oneDNN int8 matmul (int32 out) against the exact sum ==\n");
	for (int c = 0; c < N_CASES; c++)
	{
		long		bad = 0,
					total = 0;
		char		first[128] = "",
					f[128];

		for (int mi = 0; mi < 2; mi++)
			for (int s = 0; s < 4; s++)
			{
				int			m = ms[mi],
							n = shapes[s][0],
							k = shapes[s][1];
				void	   *src = malloc((size_t) m * k);
				int8_t	   *w = malloc((size_t) n * k);
				int32_t    *dst = malloc(sizeof(int32_t) * m * n);
				dnn			d;
				long		b;

				fill(src, (long) m * k, cases[c].u8, cases[c].xlo, cases[c].xhi);
				fill(w, (long) n * k, false, cases[c].wlo, cases[c].whi);
				d = dnn_make(m, n, k, cases[c].u8 ? dnnl_u8 : dnnl_s8, w);
				dnn_run(&d, src, dst);
				b = mismatches(m, n, k, cases[c].u8, src, w, dst, f, sizeof(f));
				if (b && !first[0])
					snprintf(first, sizeof(first), " M%d N%d K%d%s", m, n, k, f);
				bad += b;
				total += (long) m * n;
				dnn_free(&d);
				free(src), free(w), free(dst);
			}
		printf("  %-30s %s: %ld of %ld elements differ%s\n", cases[c].name,
			   bad ? "INEXACT" : "exact", bad, total, first);
	}
}

/* ---- speed -------------------------------------------------------------- */

typedef struct timing_ctx
{
	int			m,
				n,
				k;
	dnn		   *d;
	const void *src;
	int32_t    *dst;
	const void *qpacked;
	const float *fpacked,
			   *w,
			   *x;
	float	   *y;
	cq_qgemm_isa qisa;
	cq_rowgemm_isa fisa;
} timing_ctx;

static void
run_dnn(timing_ctx *t)
{
	dnn_run(t->d, t->src, t->dst);
}

static void
run_qgemm(timing_ctx *t)
{
	cq_qgemm_rows_isa(t->qisa, t->qpacked, t->n, t->k, NULL, t->x, t->k, t->y, t->n, t->m);
}

static void
run_rowgemm(timing_ctx *t)
{
	cq_rowgemm_packed_isa(t->fisa, t->fpacked, t->n, t->k, NULL, t->x, t->k, t->y, t->n, t->m);
}

static void
run_sgemm(timing_ctx *t)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t->m, t->n, t->k, 1.0f,
				t->x, t->k, t->w, t->k, 0.0f, t->y, t->n);
}

/* GOP/s (2 M N K operations per call): best of 3 runs of >= 40 ms each. */
static double
gops(void (*fn) (timing_ctx *), timing_ctx *t)
{
	double		best = 0;

	fn(t);
	for (int rep = 0; rep < 3; rep++)
	{
		long		calls = 0;
		double		t0 = now(),
					el;

		do
		{
			fn(t);
			calls++;
		} while ((el = now() - t0) < 0.04);
		if (2.0 * t->m * t->n * t->k * calls / el / 1e9 > best)
			best = 2.0 * t->m * t->n * t->k * calls / el / 1e9;
	}
	return best;
}

static void
speed(void)
{
	const char *impl_u8 = NULL,
			   *impl_s8 = NULL;

	printf("\n== speed, one thread, GOP/s (2 M N K per call) ==\n");
	printf("  qgemm: float in, float out (quantizes x, exact int32, epilogue); "
		   "oneDNN: int8 in, int32 out only\n");
	printf("  %-16s %9s %9s %9s %9s %9s %9s | %8s %8s %8s\n", "M x N x K", "dnnl u8", "dnnl s8",
		   "qgemm", "qg port", "rowgemm", "sgemm", "q/sgemm", "u8/q", "q/rowg");
	for (int mi = 0; mi < 2; mi++)
		for (int s = 0; s < 4; s++)
		{
			int			m = ms[mi],
						n = shapes[s][0],
						k = shapes[s][1];
			float	   *w = malloc(sizeof(float) * n * k),
					   *x = malloc(sizeof(float) * m * k),
					   *y = malloc(sizeof(float) * m * n),
					   *scale = malloc(sizeof(float) * n),
					   *fpacked = malloc(sizeof(float) * cq_rowgemm_packed_floats(n, k));
			int8_t	   *q = malloc((size_t) n * k),
					   *src = malloc((size_t) m * k);
			void	   *qpacked = aligned_alloc(64, (cq_qgemm_packed_bytes(n, k) + 63) / 64 * 64);
			int32_t    *dst = malloc(sizeof(int32_t) * m * n);
			dnn			du8,
						ds8;
			timing_ctx	t = {m, n, k, NULL, src, dst, qpacked, fpacked, w, x, y,
			cq_qgemm_machine(), cq_rowgemm_machine()};
			double		g[6];

			for (long i = 0; i < (long) n * k; i++)
				w[i] = (float) ((int) (next() % 2001) - 1000) / 1000.0f;
			for (long i = 0; i < (long) m * k; i++)
				x[i] = (float) ((int) (next() % 2001) - 1000) / 500.0f;
			cq_qgemm_quantize_weights(w, n, k, 8, q, scale);
			cq_qgemm_pack(q, scale, n, k, 8, qpacked);
			cq_rowgemm_pack(w, k, n, k, fpacked);
			fill(src, (long) m * k, false, -127, 127);
			du8 = dnn_make(m, n, k, dnnl_u8, q);
			ds8 = dnn_make(m, n, k, dnnl_s8, q);
			impl_u8 = du8.impl, impl_s8 = ds8.impl;
			t.d = &du8;
			g[0] = gops(run_dnn, &t);
			t.d = &ds8;
			g[1] = gops(run_dnn, &t);
			g[2] = gops(run_qgemm, &t);
			t.qisa = CQ_QGEMM_PORTABLE;
			g[3] = gops(run_qgemm, &t);
			g[4] = gops(run_rowgemm, &t);
			g[5] = gops(run_sgemm, &t);
			printf("  %4d x %4d x %4d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f | %8.2f %8.2f %8.2f\n",
				   m, n, k, g[0], g[1], g[2], g[3], g[4], g[5], g[2] / g[5], g[0] / g[2], g[2] / g[4]);
			dnn_free(&du8), dnn_free(&ds8);
			free(w), free(x), free(y), free(scale), free(fpacked), free(q), free(src);
			free(qpacked), free(dst);
		}
	printf("  oneDNN implementations: u8s8s32 %s, s8s8s32 %s\n", impl_u8, impl_s8);
}

int
main(void)
{
	char		feats[256];

	cq_cpu_features_format(cq_cpu_detect(), feats, sizeof(feats));
	printf("CPU features: %s\nqgemm variant: %s; rowgemm variant: %s; oneDNN %d.%d.%d\n", feats,
		   cq_qgemm_isa_name(cq_qgemm_machine()), cq_rowgemm_isa_name(cq_rowgemm_machine()),
		   dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch);
	DNN(dnnl_engine_create(&engine, dnnl_cpu, 0));
	DNN(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
	exactness();
	speed();
	return 0;
}
