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

#include <math.h>
#include <string.h>

#include "nn/ops/qgemm_tile.h"

#define XQ_BYTES (1 << 16)
#define CHUNK_MAX 256

typedef void (*tile_fn) (const cq_qgemm_tile *t);

static const struct
{
	tile_fn		tile;
	int			mr;
	bool		biased;				/* activations as xq + 128 (vpdpbusd) */
	const char *name;
}			isa_ops[CQ_QGEMM_N_ISA] = {
	[CQ_QGEMM_PORTABLE] = {cq_qgemm_tile_portable, CQ_QGEMM_MR_PORTABLE, false, "portable"},
	[CQ_QGEMM_AVX2] = {cq_qgemm_tile_avx2, CQ_QGEMM_MR_AVX2, false, "avx2"},
	[CQ_QGEMM_AVXVNNI] = {cq_qgemm_tile_avxvnni, CQ_QGEMM_MR_AVXVNNI, true, "avxvnni"},
	[CQ_QGEMM_AVX512VNNI] = {cq_qgemm_tile_avx512vnni, CQ_QGEMM_MR_AVX512VNNI, true, "avx512vnni"},
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

float
cq_qgemm_quantize_vec(const float *v, int k, int8_t *q)
{
	float		lane[8] = {0},
				m = 0.0f,
				scale;

	int			i = 0;

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
	scale = m / 127.0f;
	for (i = 0; i < k; i++)
	{
		/* rintf: round half even in the default mode; x / 0 and inf / inf land below */
		float		c = scale > 0.0f ? rintf(v[i] / scale) : 0.0f;

		c = c > 127.0f ? 127.0f : c < -127.0f ? -127.0f : c;
		q[i] = c == c ? (int8_t) c : 0;
	}
	return scale;
}

void
cq_qgemm_quantize_weights(const float *w, int n, int k, int8_t *q, float *scale)
{
	for (int j = 0; j < n; j++)
		scale[j] = cq_qgemm_quantize_vec(w + (long) j * k, k, q + (long) j * k);
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

/* The three parts of a packed buffer. */
typedef struct parts
{
	float	   *ws;
	int32_t    *comp;
	int8_t	   *w;
} parts;

static parts
split(const void *packed, int n)
{
	char	   *base = (char *) packed;
	size_t		cols = (size_t) panels(n) * CQ_QGEMM_NB;

	return (parts) {
		(float *) base, (int32_t *) (base + cols * sizeof(float)),
			(int8_t *) (base + cols * (sizeof(float) + sizeof(int32_t)))
	};
}

size_t
cq_qgemm_packed_bytes(int n, int k)
{
	size_t		cols = (size_t) panels(n) * CQ_QGEMM_NB;

	if (k < 0 || k > CQ_QGEMM_MAX_K)
		return 0;
	return cols * (sizeof(float) + sizeof(int32_t)) + cols * groups(k) * CQ_QGEMM_KG;
}

void
cq_qgemm_pack(const int8_t *q, const float *scale, int n, int k, void *packed)
{
	parts		pk = split(packed, n);
	int			kg = groups(k);

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

void
cq_qgemm_rows_isa(cq_qgemm_isa isa, const void *packed, int n, int k,
				  const float *bias, const float *x, long ldx,
				  float *y, long ldy, int rows)
{
	parts		pk = split(packed, n);
	int			kg = groups(k),
				ld = kg * CQ_QGEMM_KG,
				mr = isa_ops[isa].mr,
				chunk = ld > 0 && XQ_BYTES / ld < CHUNK_MAX ? XQ_BYTES / ld : CHUNK_MAX;
	int8_t		xq[XQ_BYTES] __attribute__((aligned(64)));
	float		xs[CHUNK_MAX];

	/* a broken contract (the layer should have been refused): visible, not a hang */
	if (k < 0 || k > CQ_QGEMM_MAX_K)
	{
		for (int r = 0; r < rows; r++)
			for (int j = 0; j < n; j++)
				y[(long) r * ldy + j] = NAN;
		return;
	}

	for (int m0 = 0; m0 < rows; m0 += chunk)
	{
		int			m = rows - m0 < chunk ? rows - m0 : chunk;

		quantize_chunk(x + m0 * ldx, ldx, m, k, ld, isa_ops[isa].biased, xq, xs);
		for (int p = 0; p < panels(n); p++)
		{
			int			col = p * CQ_QGEMM_NB;
			cq_qgemm_tile t = {
				.ldxq = ld, .kg = kg, .ldy = ldy,
				.w = pk.w + (size_t) p * kg * CQ_QGEMM_NB * CQ_QGEMM_KG,
				.ws = pk.ws + col, .comp = pk.comp + col,
				.bias = bias ? bias + col : NULL,
				.nb = n - col < CQ_QGEMM_NB ? n - col : CQ_QGEMM_NB,
			};

			/* a cancel point per panel: at most 256 rows x 16 columns of work */
			cq_poll();
			for (int t0 = 0; t0 < m; t0 += mr)
			{
				t.mr = m - t0 < mr ? m - t0 : mr;
				t.xq = xq + (long) t0 * ld;
				t.xs = xs + t0;
				t.y = y + (long) (m0 + t0) * ldy + col;
				isa_ops[isa].tile(&t);
			}
		}
	}
}

void
cq_qgemm_rows(const void *packed, int n, int k, const float *bias,
			  const float *x, long ldx, float *y, long ldy, int rows)
{
	cq_qgemm_rows_isa(cq_qgemm_machine(), packed, n, k, bias, x, ldx, y, ldy, rows);
}
