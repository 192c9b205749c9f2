/*
 * The int8 GEMM's driver (qgemm.h): quantization, packing, the ISA choice
 * and the loops around the register tiles.
 *
 * Loop order, outermost first: chunks of rows whose quantized activations
 * fit a 64 KB stack buffer (quantized once per call, they stay in L2);
 * panels of CQ_QGEMM_NB columns (a panel, K4 x 16 bytes, is reused from L1
 * by every tile of the chunk; the weights stream from memory once per
 * chunk); tiles of the ISA's height.  Integer sums are exact and the
 * epilogue is elementwise, so the blocking never changes a result.
 */
#include "nn/ops/qgemm.h"

#include "common/interrupt.h"
#include "common/parallel.h"

#include <math.h>
#include <string.h>

#include "nn/ops/qgemm_tile.h"

#define XQ_BYTES (1 << 16)
#define CHUNK_MAX 256

typedef void (*tile_fn) (const cq_qgemm_tile *t);

/* A variant's tile for one code width of the weights. */
typedef struct tile_kind
{
	tile_fn		tile;
	int			mr;
	bool		biased;				/* activations as xq + 128 (unsigned operand) */
} tile_kind;

static const struct
{
	tile_kind	w8,					/* 8-bit weights */
				w7;					/* 7-bit weights */
	const char *name;
}			isa_ops[CQ_QGEMM_N_ISA] = {
	[CQ_QGEMM_PORTABLE] = {{cq_qgemm_tile_portable, CQ_QGEMM_MR_PORTABLE, false},
	{cq_qgemm_tile_portable, CQ_QGEMM_MR_PORTABLE, false}, "portable"},
	[CQ_QGEMM_AVX2] = {{cq_qgemm_tile_avx2, CQ_QGEMM_MR_AVX2, false},
	{cq_qgemm_tile_avx2_u8, CQ_QGEMM_MR_AVX2_U8, true}, "avx2"},
	[CQ_QGEMM_AVXVNNI] = {{cq_qgemm_tile_avxvnni, CQ_QGEMM_MR_AVXVNNI, true},
	{cq_qgemm_tile_avxvnni, CQ_QGEMM_MR_AVXVNNI, true}, "avxvnni"},
	[CQ_QGEMM_AVX512VNNI] = {{cq_qgemm_tile_avx512vnni, CQ_QGEMM_MR_AVX512VNNI, true},
	{cq_qgemm_tile_avx512vnni, CQ_QGEMM_MR_AVX512VNNI, true}, "avx512vnni"},
};

#define F(x) CQ_CPU_BIT(CQ_CPU_##x)

bool
cq_qgemm_isa_runs(cq_qgemm_isa isa, cq_cpu_features f)
{
	cq_cpu_features needs = 0;

	switch (isa)
	{
		case CQ_QGEMM_PORTABLE:
			return true;
		case CQ_QGEMM_AVX2:
			needs = F(AVX2) | F(FMA);
			break;
		case CQ_QGEMM_AVXVNNI:
			needs = F(AVX2) | F(FMA) | F(AVXVNNI);
			break;
		case CQ_QGEMM_AVX512VNNI:
			needs = F(AVX512F) | F(AVX512VNNI);
			break;
	}
#if defined(__x86_64__)
	return (f & needs) == needs;
#else
	return false;
#endif
}

cq_qgemm_isa
cq_qgemm_isa_for(cq_cpu_features f)
{
	for (int i = CQ_QGEMM_N_ISA - 1; i > 0; i--)
		if (cq_qgemm_isa_runs((cq_qgemm_isa) i, f))
			return (cq_qgemm_isa) i;
	return CQ_QGEMM_PORTABLE;
}

cq_qgemm_isa
cq_qgemm_machine(void)
{
	return cq_qgemm_isa_for(cq_cpu_detect());
}

const char *
cq_qgemm_isa_name(cq_qgemm_isa isa)
{
	return isa_ops[isa].name;
}

/* ---- quantization ---------------------------------------------------- */

/* Q = 2^(bits - 1) - 1: 127 or 63 (any other width is treated as 8 bits). */
static float
code_max(int bits)
{
	return bits == 7 ? 63.0f : 127.0f;
}

/* Whether this CPU runs the AVX2 quantization (the same bits as below). */
static bool
quantize_avx2(void)
{
	static int	avx2 = -1;

	if (avx2 < 0)
		avx2 = cq_qgemm_isa_runs(CQ_QGEMM_AVX2, cq_cpu_detect());
	return avx2;
}

float
cq_qgemm_quantize_vec_bits(const float *v, int k, int bits, int8_t *q)
{
	float		lane[8] = {0},
				m = 0.0f,
				qmax = code_max(bits),
				scale;

	int			i = 0;

	if (quantize_avx2())
		return cq_qgemm_quantize_avx2(v, k, qmax, q);

	/*
	 * max |v|, NaN never winning, as 8 independent chains (one chain waits
	 * on the latency of each max); a max is the same in any order.
	 */
	for (; i + 8 <= k; i += 8)
		for (int l = 0; l < 8; l++)
			lane[l] = fabsf(v[i + l]) > lane[l] ? fabsf(v[i + l]) : lane[l];
	for (; i < k; i++)
		lane[0] = fabsf(v[i]) > lane[0] ? fabsf(v[i]) : lane[0];
	for (i = 0; i < 8; i++)
		m = lane[i] > m ? lane[i] : m;
	scale = m / qmax;
	for (i = 0; i < k; i++)
	{
		/* rintf: round half even in the default mode; x / 0 and inf / inf land below */
		float		c = scale > 0.0f ? rintf(v[i] / scale) : 0.0f;

		c = c > qmax ? qmax : c < -qmax ? -qmax : c;
		q[i] = c == c ? (int8_t) c : 0;
	}
	return scale;
}

float
cq_qgemm_quantize_vec(const float *v, int k, int8_t *q)
{
	return cq_qgemm_quantize_vec_bits(v, k, 8, q);
}

void
cq_qgemm_quantize_weights(const float *w, int n, int k, int bits, int8_t *q, float *scale)
{
	for (int j = 0; j < n; j++)
		scale[j] = cq_qgemm_quantize_vec_bits(w + (long) j * k, k, bits, q + (long) j * k);
}

/* ---- packing ---------------------------------------------------------- */

static int
panels(int n)
{
	return (n + CQ_QGEMM_NB - 1) / CQ_QGEMM_NB;
}

static int
groups(int k)
{
	return (k + CQ_QGEMM_KG - 1) / CQ_QGEMM_KG;
}

/* The header's int32s: n, k, bits, then zeros (it keeps wscale 64-byte aligned). */
#define HEADER_INTS 16

/* The parts of a packed buffer. */
typedef struct parts
{
	int32_t    *header;
	float	   *ws;
	int32_t    *comp;
	int8_t	   *w;
} parts;

static parts
split(const void *packed, int n)
{
	char	   *base = (char *) packed;
	size_t		cols = (size_t) panels(n) * CQ_QGEMM_NB,
				head = HEADER_INTS * sizeof(int32_t);

	return (parts) {
		(int32_t *) base, (float *) (base + head),
			(int32_t *) (base + head + cols * sizeof(float)),
			(int8_t *) (base + head + cols * (sizeof(float) + sizeof(int32_t)))
	};
}

size_t
cq_qgemm_packed_bytes(int n, int k)
{
	size_t		cols = (size_t) panels(n) * CQ_QGEMM_NB;

	if (k < 0 || k > CQ_QGEMM_MAX_K)
		return 0;
	return HEADER_INTS * sizeof(int32_t) + cols * (sizeof(float) + sizeof(int32_t)) +
		cols * groups(k) * CQ_QGEMM_KG;
}

int
cq_qgemm_packed_bits(const void *packed)
{
	return ((const int32_t *) packed)[2];
}

void
cq_qgemm_packed_row(const void *packed, int j, float *v)
{
	const int32_t *h = packed;
	int			k = h[1],
				kg = groups(k);
	parts		pk = split(packed, h[0]);
	const int8_t *panel = pk.w + (size_t) (j / CQ_QGEMM_NB) * kg * CQ_QGEMM_NB * CQ_QGEMM_KG;
	float		s = pk.ws[j];

	for (int kk = 0; kk < k; kk++)
		v[kk] = (float) panel[((size_t) (kk / CQ_QGEMM_KG) * CQ_QGEMM_NB + j % CQ_QGEMM_NB) *
							  CQ_QGEMM_KG + kk % CQ_QGEMM_KG] * s;
}

void
cq_qgemm_pack(const int8_t *q, const float *scale, int n, int k, int bits, void *packed)
{
	parts		pk = split(packed, n);
	int			kg = groups(k);

	memset(pk.header, 0, HEADER_INTS * sizeof(int32_t));
	pk.header[0] = n;
	pk.header[1] = k;
	pk.header[2] = bits == 7 ? 7 : 8;
	for (int j = 0; j < panels(n) * CQ_QGEMM_NB; j++)
	{
		int32_t		sum = 0;

		for (int kk = 0; j < n && kk < k; kk++)
			sum += q[(long) j * k + kk];
		pk.ws[j] = j < n ? scale[j] : 0.0f;
		pk.comp[j] = 128 * sum;
	}
	for (int p = 0; p < panels(n); p++)
		for (int g = 0; g < kg; g++)
			for (int jj = 0; jj < CQ_QGEMM_NB; jj++)
				for (int i = 0; i < CQ_QGEMM_KG; i++)
				{
					int			j = p * CQ_QGEMM_NB + jj,
								kk = g * CQ_QGEMM_KG + i;

					pk.w[(((size_t) p * kg + g) * CQ_QGEMM_NB + jj) * CQ_QGEMM_KG + i] =
						j < n && kk < k ? q[(long) j * k + kk] : 0;
				}
}

/* ---- the product ------------------------------------------------------ */

/* Rows [0, m) of x into xq[m][ld] (zero past k), biased by 128 for VNNI. */
static void
quantize_chunk(const float *x, long ldx, int m, int k, int ld, bool biased,
			   int8_t *xq, float *xs)
{
	for (int r = 0; r < m; r++)
	{
		int8_t	   *q = xq + (long) r * ld;

		xs[r] = cq_qgemm_quantize_vec(x + r * ldx, k, q);
		memset(q + k, 0, ld - k);
		if (biased)
			for (int i = 0; i < ld; i++)
				q[i] = (int8_t) ((uint8_t) q[i] ^ 0x80);
	}
}

/* One chunk of quantized rows against output panels, shared by the threads. */
typedef struct chunk_job
{
	const tile_kind *tk;
	parts		pk;
	int			n,
				kg,
				ld,
				m;				/* rows in the chunk */
	const int8_t *xq;
	const float *xs;
	const float *bias;
	float	   *y;				/* the chunk's first output row */
	long		ldy;
} chunk_job;

/* Panels [p0, p1) of a chunk; poll: a cancel point per panel (caller only). */
static void
run_panels(const chunk_job *c, int p0, int p1, bool poll)
{
	int			mr = c->tk->mr;

	for (int p = p0; p < p1; p++)
	{
		int			col = p * CQ_QGEMM_NB;
		cq_qgemm_tile t = {
			.ldxq = c->ld, .kg = c->kg, .ldy = c->ldy,
			.w = c->pk.w + (size_t) p * c->kg * CQ_QGEMM_NB * CQ_QGEMM_KG,
			.ws = c->pk.ws + col, .comp = c->pk.comp + col,
			.bias = c->bias ? c->bias + col : NULL,
			.nb = c->n - col < CQ_QGEMM_NB ? c->n - col : CQ_QGEMM_NB,
		};

		/* at most 256 rows x 16 columns of work between cancel points */
		if (poll)
			cq_poll();
		for (int t0 = 0; t0 < c->m; t0 += mr)
		{
			t.mr = c->m - t0 < mr ? c->m - t0 : mr;
			t.xq = c->xq + (long) t0 * c->ld;
			t.xs = c->xs + t0;
			t.y = c->y + (long) t0 * c->ldy + col;
			c->tk->tile(&t);
		}
	}
}

/*
 * Threads (common/parallel.h): the caller quantizes a chunk, then the chunk's
 * panels are shared out in contiguous ranges; a cancel point per chunk on the
 * caller while no part runs.  An element's sum is integer and its scaling
 * fixed, so the bits do not depend on the thread that computes it.
 */
#define PAR_MIN_OPS (1L << 20)

static void
run_part(void *arg, int part, int nparts)
{
	const chunk_job *c = arg;
	int			np = panels(c->n);

	run_panels(c, (int) ((long) np * part / nparts), (int) ((long) np * (part + 1) / nparts),
			   false);
}

static void
run_chunk(const chunk_job *c)
{
	int			threads = cq_parallel_threads(),
				np = panels(c->n);

	if (threads <= 1 || np < 2 || (long) c->m * c->n * c->ld < PAR_MIN_OPS)
	{
		run_panels(c, 0, np, true);
		return;
	}
	cq_poll();
	cq_parallel_run(run_part, (void *) c, np < threads ? np : threads);
}

void
cq_qgemm_rows_isa(cq_qgemm_isa isa, const void *packed, int n, int k,
				  const float *bias, const float *x, long ldx,
				  float *y, long ldy, int rows)
{
	int			kg = groups(k),
				ld = kg * CQ_QGEMM_KG,
				chunk = ld > 0 && XQ_BYTES / ld < CHUNK_MAX ? XQ_BYTES / ld : CHUNK_MAX;
	int8_t		xq[XQ_BYTES] __attribute__((aligned(64)));
	float		xs[CHUNK_MAX];
	chunk_job	c = {NULL, {0}, n, kg, ld, 0, xq, xs, bias, NULL, ldy};

	/* a broken contract (the layer should have been refused): visible, not a hang */
	if (k < 0 || k > CQ_QGEMM_MAX_K)
	{
		for (int r = 0; r < rows; r++)
			for (int j = 0; j < n; j++)
				y[(long) r * ldy + j] = NAN;
		return;
	}

	c.pk = split(packed, n);
	c.tk = cq_qgemm_packed_bits(packed) == 7 ? &isa_ops[isa].w7 : &isa_ops[isa].w8;
	for (int m0 = 0; m0 < rows; m0 += chunk)
	{
		c.m = rows - m0 < chunk ? rows - m0 : chunk;
		c.y = y + (long) m0 * ldy;
		quantize_chunk(x + m0 * ldx, ldx, c.m, k, ld, c.tk->biased, xq, xs);
		run_chunk(&c);
	}
}

void
cq_qgemm_rows(const void *packed, int n, int k, const float *bias,
			  const float *x, long ldx, float *y, long ldy, int rows)
{
	cq_qgemm_rows_isa(cq_qgemm_machine(), packed, n, k, bias, x, ldx, y, ldy, rows);
}
