/*
 * The int8 GEMM (nn/ops/qgemm.h): quantization, the packed layout, its
 * definition (exact int32 sums, one float epilogue), bit-identical variants,
 * batch invariance and accuracy against the float32 product.  Variants this
 * CPU cannot execute are skipped, and the output says so.
 */
#include "unit.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/cpu.h"
#include "common/parallel.h"
#include "nn/ops/qgemm.h"

#define QGEMM_FIXED_BITS 0x31ef46b3bdedfe0fULL
#define QGEMM_FIXED_BITS_7 0xe465cd5d31be5054ULL

static uint64_t lcg_state = 4242;

static float
uniform(void)
{
	lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (float) ((lcg_state >> 40) / (double) (1 << 24)) * 2.0f - 1.0f;
}

static int
below(int n)
{
	return (int) ((uniform() + 1.0f) * 0.5f * n) % n;
}

/* n floats in [-amp, amp), some rows larger: activations vary per row. */
static float *
random_floats(long n, float amp)
{
	float	   *x = malloc(sizeof(float) * (n > 0 ? n : 1));

	for (long i = 0; i < n; i++)
		x[i] = uniform() * amp;
	return x;
}

/* The variants this CPU executes; the others are named once on stdout. */
static int
runnable(cq_qgemm_isa *out)
{
	static bool said;
	int			n = 0;

	for (int i = 0; i < CQ_QGEMM_N_ISA; i++)
	{
		if (cq_qgemm_isa_runs((cq_qgemm_isa) i, cq_cpu_detect()))
			out[n++] = (cq_qgemm_isa) i;
		else if (!said)
			printf("     qgemm: %s skipped, this CPU cannot execute it\n",
				   cq_qgemm_isa_name((cq_qgemm_isa) i));
	}
	said = true;
	return n;
}

/* W quantized and packed; q and scale kept for the references. */
typedef struct weights
{
	int			n,
				k;
	int8_t	   *q;
	float	   *scale;
	void	   *packed;
} weights;

/* W quantized to bits-bit codes (8 or 7) and packed. */
static weights
make_weights_bits(const float *w, int n, int k, int bits)
{
	weights		ws = {n, k, malloc(n * (long) k + 1), malloc(sizeof(float) * (n + 1)),
	malloc(cq_qgemm_packed_bytes(n, k))};

	cq_qgemm_quantize_weights(w, n, k, bits, ws.q, ws.scale);
	cq_qgemm_pack(ws.q, ws.scale, n, k, bits, ws.packed);
	return ws;
}

static weights
make_weights(const float *w, int n, int k)
{
	return make_weights_bits(w, n, k, 8);
}

/* The packed buffer's parts past its header (qgemm.h): wscale, comp, panels. */
#define PACKED_HEADER 64

static const float *
packed_wscale(const void *packed)
{
	return (const float *) ((const char *) packed + PACKED_HEADER);
}

static void
free_weights(weights *ws)
{
	free(ws->q), free(ws->scale), free(ws->packed);
}

/*
 * The definition, written out from the unpacked codes: the int32 sum (in
 * int64 here: it must fit, and match), then the epilogue of qgemm.h.
 */
static float
definition(const weights *ws, const float *x, const float *bias, int j)
{
	int8_t	   *xq = malloc(ws->k + 1);
	float		xs = cq_qgemm_quantize_vec(x, ws->k, xq);
	int64_t		acc = 0;

	for (int kk = 0; kk < ws->k; kk++)
		acc += (int64_t) xq[kk] * ws->q[(long) j * ws->k + kk];
	free(xq);
	return fmaf((float) (int32_t) acc, xs * ws->scale[j], bias ? bias[j] : 0.0f);
}

/* Shapes: tails in n and k, rows 1..9 and over a chunk (k 1000: 65 rows). */
static const int shapes[][3] = {	/* rows, n, k */
	{1, 1, 1}, {2, 3, 5}, {3, 17, 7}, {4, 16, 64}, {5, 31, 33}, {6, 33, 130},
	{7, 9, 255}, {8, 48, 4}, {9, 100, 513}, {70, 20, 1000}, {3, 5, 0},
};

#define N_SHAPES ((int) (sizeof(shapes) / sizeof(shapes[0])))

/* Codes within half a step of the value, the largest at +-Q, for Q = 127 and 63. */
static void
check_round_trip(int bits)
{
	int			n = 37,
				k = 91,
				qmax = bits == 7 ? 63 : 127;
	float	   *w = random_floats((long) n * k, 3.0f);
	int8_t	   *q = malloc(n * k);
	float	   *scale = malloc(sizeof(float) * n);
	long		bad = 0;

	for (int kk = 0; kk < k; kk++)
		w[5 * k + kk] = 0.0f;		/* a zero row */
	cq_qgemm_quantize_weights(w, n, k, bits, q, scale);
	CHECK(scale[5] == 0.0f);
	for (int j = 0; j < n; j++)
	{
		int			top = 0;

		for (int kk = 0; kk < k; kk++)
		{
			double		v = w[(long) j * k + kk],
						back = (double) q[(long) j * k + kk] * scale[j];

			/* half a step, plus the rounding of v / scale (<= Q u) */
			bad += fabs(v - back) > scale[j] * (0.5 + qmax * ldexp(1.0, -24));
			bad += abs(q[(long) j * k + kk]) > qmax || (j == 5 && q[(long) j * k + kk] != 0);
			top = abs(q[(long) j * k + kk]) > top ? abs(q[(long) j * k + kk]) : top;
		}
		bad += j != 5 && top != qmax;	/* the largest weight is +-Q */
	}
	CHECK_INT_EQ(bad, 0);
	free(w), free(q), free(scale);
}

TEST(qgemm_quantize_round_trip)
{
	check_round_trip(8);
	check_round_trip(7);
}

TEST(qgemm_quantize_non_finite)
{
	float		v[4] = {NAN, 1.0f, -2.0f, 0.5f};
	int8_t		q[4];
	float		s = cq_qgemm_quantize_vec(v, 4, q);

	CHECK(s == 2.0f / 127.0f);
	CHECK_INT_EQ(q[0], 0);
	CHECK_INT_EQ(q[2], -127);
	CHECK_INT_EQ(q[3], 32);			/* 0.5 / (2 / 127) = 31.75 */
}

TEST(qgemm_packed_layout)
{
	int			n = 21,
				k = 10;
	float	   *w = random_floats((long) n * k, 1.0f);
	weights		ws = make_weights_bits(w, n, k, 7);
	const int32_t *header = ws.packed;
	const float *wscale = packed_wscale(ws.packed);
	const int32_t *comp = (const int32_t *) (wscale + 32);
	const int8_t *panel = (const int8_t *) (comp + 32);
	long		bad = 0;

	CHECK_INT_EQ(cq_qgemm_packed_bytes(n, k), PACKED_HEADER + 2 * 16 * (4 + 4) + 2 * 16 * 12);
	CHECK(header[0] == n && header[1] == k && header[2] == 7 && header[3] == 0);
	CHECK_INT_EQ(cq_qgemm_packed_bits(ws.packed), 7);
	for (int j = 0; j < 32; j++)
	{
		int32_t		sum = 0;

		for (int kk = 0; kk < 12; kk++)
		{
			int8_t		want = j < n && kk < k ? ws.q[j * k + kk] : 0;

			bad += panel[(((j / 16) * 3 + kk / 4) * 16 + j % 16) * 4 + kk % 4] != want;
			sum += want;
		}
		bad += wscale[j] != (j < n ? ws.scale[j] : 0.0f);
		bad += comp[j] != 128 * sum;
	}
	CHECK_INT_EQ(bad, 0);
	free(w), free_weights(&ws);
}

/* Every variant computes the definition, for both code widths of the weights. */
static void
check_definition(int bits)
{
	cq_qgemm_isa isas[CQ_QGEMM_N_ISA];
	int			n_isa = runnable(isas);

	for (int s = 0; s < N_SHAPES; s++)
	{
		int			rows = shapes[s][0],
					n = shapes[s][1],
					k = shapes[s][2],
					ldx = k + 3,
					ldy = n + 2;
		float	   *w = random_floats((long) n * k, 0.5f),
				   *x = random_floats((long) rows * ldx, 4.0f),
				   *bias = random_floats(n, 1.0f),
				   *ref = malloc(sizeof(float) * rows * ldy),
				   *y = malloc(sizeof(float) * rows * ldy);
		weights		ws = make_weights_bits(w, n, k, bits);

		for (int r = 0; r < rows; r++)
			for (int j = 0; j < n; j++)
				ref[r * ldy + j] = definition(&ws, x + (long) r * ldx, s % 2 ? bias : NULL, j);
		for (int i = 0; i < n_isa; i++)
		{
			long		bad = 0;

			for (long e = 0; e < (long) rows * ldy; e++)
				y[e] = -7.0f;		/* the gaps past n must stay untouched */
			cq_qgemm_rows_isa(isas[i], ws.packed, n, k, s % 2 ? bias : NULL, x, ldx, y, ldy, rows);
			for (int r = 0; r < rows; r++)
			{
				bad += memcmp(y + r * ldy, ref + r * ldy, sizeof(float) * n) != 0;
				bad += y[r * ldy + n] != -7.0f || y[r * ldy + n + 1] != -7.0f;
			}
			if (bad)
				unit_fail(__FILE__, __LINE__, "%s, %d-bit weights, %dx%dx%d: %ld rows differ from the definition",
						  cq_qgemm_isa_name(isas[i]), bits, rows, n, k, bad);
		}
		free(w), free(x), free(bias), free(ref), free(y), free_weights(&ws);
	}
}

TEST(qgemm_is_the_definition_on_every_variant)
{
	check_definition(8);
	check_definition(7);
}

/*
 * Extreme codes, where a saturating or wrapping product would show: rows of
 * +-max (all codes +-127), weights of +-max (+-Q), alternating signs, a zero
 * row, and k = CQ_QGEMM_MAX_K (|acc| = 127 Q 65536, the VNNI biased sum near
 * 2^31).  Every variant must give the portable bits, for both code widths:
 * the 7-bit tiles' biased activations reach 255 against weights of +-63.
 */
static void
check_extremes(int bits)
{
	cq_qgemm_isa isas[CQ_QGEMM_N_ISA];
	int			n_isa = runnable(isas),
				qmax = bits == 7 ? 63 : 127;
	const int	ks[] = {4, 61, 256, CQ_QGEMM_MAX_K};

	for (int ki = 0; ki < 4; ki++)
	{
		int			k = ks[ki],
					n = 19,
					rows = 5;
		float	   *w = malloc(sizeof(float) * n * k),
				   *x = malloc(sizeof(float) * rows * k),
				   *ref = malloc(sizeof(float) * rows * n),
				   *y = malloc(sizeof(float) * rows * n);
		weights		ws;

		for (int j = 0; j < n; j++)
			for (int kk = 0; kk < k; kk++)
				w[(long) j * k + kk] = j % 3 == 0 ? 1.0f : j % 3 == 1 ? -1.0f : (kk % 2 ? 1.0f : -1.0f);
		for (int r = 0; r < rows; r++)
			for (int kk = 0; kk < k; kk++)
				x[(long) r * k + kk] = r == 0 ? 3.0f : r == 1 ? -3.0f : r == 2 ? (kk % 2 ? -1.0f : 1.0f) :
					r == 3 ? 0.0f : (kk == 0 ? 100.0f : -1e-3f);
		ws = make_weights_bits(w, n, k, bits);
		cq_qgemm_rows_isa(CQ_QGEMM_PORTABLE, ws.packed, n, k, NULL, x, k, ref, n, rows);
		/* the int32 sum 127 Q k, then one rounding of the product (fma with +0) */
		CHECK(ref[0] == (float) (127 * qmax * k) * ((3.0f / 127.0f) * (1.0f / (float) qmax)));
		for (int i = 1; i < n_isa; i++)
		{
			cq_qgemm_rows_isa(isas[i], ws.packed, n, k, NULL, x, k, y, n, rows);
			if (memcmp(y, ref, sizeof(float) * rows * n) != 0)
				unit_fail(__FILE__, __LINE__, "%s differs from portable on extremes, %d-bit weights, k %d",
						  cq_qgemm_isa_name(isas[i]), bits, k);
		}
		for (int j = 0; j < n; j++)
			CHECK(ref[3 * n + j] == 0.0f && !signbit(ref[3 * n + j]));
		free(w), free(x), free(ref), free(y), free_weights(&ws);
	}
}

TEST(qgemm_extremes_identical_on_every_variant)
{
	check_extremes(8);
	check_extremes(7);
}

/* A row's bits do not depend on the other rows, their number or its position. */
TEST(qgemm_rows_are_batch_invariant)
{
	cq_qgemm_isa isas[CQ_QGEMM_N_ISA];
	int			n_isa = runnable(isas);
	int			n = 45,
				k = 300,
				rows = 300;			/* over one chunk (218 rows at k 300) */
	float	   *w = random_floats((long) n * k, 1.0f),
			   *bias = random_floats(n, 1.0f),
			   *x = random_floats((long) rows * k, 1.0f),
			   *alone = malloc(sizeof(float) * 9 * n),
			   *y = malloc(sizeof(float) * rows * n);
	weights		wb[2] = {make_weights_bits(w, n, k, 8), make_weights_bits(w, n, k, 7)};

	/* rows of very different magnitudes around the probed ones */
	for (int r = 0; r < rows; r++)
		for (int kk = 0; kk < k; kk++)
			x[(long) r * k + kk] *= (float) (1 + r % 7) * (r % 3 ? 1.0f : 1000.0f);
	for (int i = 0; i < 2 * n_isa; i++)
	{
		long		bad = 0;
		weights		ws = wb[i % 2];

		cq_qgemm_rows_isa(isas[i / 2], ws.packed, n, k, bias, x, k, y, n, rows);
		for (int probe = 0; probe < 40; probe++)
		{
			int			r = probe < 20 ? probe : below(rows);

			cq_qgemm_rows_isa(isas[i / 2], ws.packed, n, k, bias, x + (long) r * k, k, alone, n, 1);
			bad += memcmp(alone, y + (long) r * n, sizeof(float) * n) != 0;
		}
		/* and from another start: rows 7 .. 15 as a batch of 9 */
		cq_qgemm_rows_isa(isas[i / 2], ws.packed, n, k, bias, x + 7L * k, k, alone, n, 9);
		bad += memcmp(alone, y + 7L * n, sizeof(float) * 9 * n) != 0;
		if (bad)
			unit_fail(__FILE__, __LINE__, "%s, %d-bit weights: %ld rows depend on the batch",
					  cq_qgemm_isa_name(isas[i / 2]), i % 2 ? 7 : 8, bad);
	}
	free(w), free(bias), free(x), free(alone), free(y);
	free_weights(&wb[0]), free_weights(&wb[1]);
}

/*
 * Against the float32 product (computed in float64).  With x = xs xq + ex,
 * w = ws wq + ew, |ex| <= hx = xs (1/2 + 127 u), |ew| <= hw (the same for
 * ws; 127 u: the rounding of v / scale before rint):
 *     x w - xs ws xq wq = x ew + w ex - ex ew,
 * so |y - y_f32| <= sum_k (|x_k| hw + |w_k| hx + hx hw) + E, where E bounds
 * the epilogue's roundings (int32 -> float, xs ws, the fma: three relative
 * u on |acc| xs ws, and u of the bias).
 */
TEST(qgemm_close_to_float32)
{
	const double u = ldexp(1.0, -24);
	int			n = 70,
				k = 257,
				rows = 9;
	float	   *w = random_floats((long) n * k, 0.2f),
			   *x = random_floats((long) rows * k, 2.0f),
			   *bias = random_floats(n, 1.0f),
			   *y = malloc(sizeof(float) * rows * n);
	int8_t	   *xq = malloc(k);
	weights		ws = make_weights(w, n, k);
	long		bad = 0;
	double		worst = 0;

	cq_qgemm_rows(ws.packed, n, k, bias, x, k, y, n, rows);
	for (int r = 0; r < rows; r++)
	{
		double		xs = cq_qgemm_quantize_vec(x + (long) r * k, k, xq),
					hx = xs * (0.5 + 127 * u);

		for (int j = 0; j < n; j++)
		{
			double		hw = ws.scale[j] * (0.5 + 127 * u),
						exact = bias[j],
						bound = 0,
						acc = 0;

			for (int kk = 0; kk < k; kk++)
			{
				double		xv = x[(long) r * k + kk],
							wv = w[(long) j * k + kk];

				exact += xv * wv;
				bound += fabs(xv) * hw + fabs(wv) * hx + hx * hw;
				acc += fabs((double) xq[kk] * ws.q[(long) j * k + kk]);
			}
			bound += 3 * u * acc * xs * ws.scale[j] + u * fabs(bias[j]) + 4 * u * fabs(exact);
			bad += !(fabs(y[r * n + j] - exact) <= bound);
			worst = fmax(worst, fabs(y[r * n + j] - exact) / bound);
		}
	}
	printf("     qgemm vs float32: worst error %.3f of the bound\n", worst);
	CHECK_INT_EQ(bad, 0);
	free(w), free(x), free(bias), free(y), free(xq), free_weights(&ws);
}

/*
 * What the VNNI tiles compute, emulated in C on the packed buffer (this test
 * runs everywhere, the tiles only on CPUs with VNNI): per lane, vpdpbusd's
 * sum of biased activations (xq + 128, unsigned) times the weights, minus
 * comp, is the exact sum of the definition.
 */
TEST(qgemm_vnni_arithmetic_emulated)
{
	int			n = 23,
				k = 37,
				kg = (k + 3) / 4;
	float	   *w = random_floats((long) n * k, 1.0f),
			   *x = random_floats(k, 1.0f);
	weights		ws = make_weights(w, n, k);
	const int32_t *comp = (const int32_t *) (packed_wscale(ws.packed) + 32);
	const int8_t *panel = (const int8_t *) (comp + 32);
	int8_t		xq[40] = {0};
	long		bad = 0;

	cq_qgemm_quantize_vec(x, k, xq);
	for (int j = 0; j < n; j++)
	{
		int32_t		lane = 0,
					exact = 0;

		for (int g = 0; g < kg; g++)
			for (int i = 0; i < 4; i++)
				lane += (int32_t) (uint8_t) (xq[4 * g + i] ^ 0x80) *
					panel[(((j / 16) * kg + g) * 16 + j % 16) * 4 + i];
		for (int kk = 0; kk < k; kk++)
			exact += xq[kk] * ws.q[j * k + kk];
		bad += lane - comp[j] != exact;
	}
	CHECK_INT_EQ(bad, 0);
	free(w), free(x), free_weights(&ws);
}

/* k beyond CQ_QGEMM_MAX_K: no packed size, and NaN rather than a hang or an overflow. */
TEST(qgemm_k_out_of_range)
{
	float		y[6] = {0};

	CHECK_INT_EQ(cq_qgemm_packed_bytes(5, CQ_QGEMM_MAX_K + 1), 0);
	CHECK(cq_qgemm_packed_bytes(5, CQ_QGEMM_MAX_K) > 0);
	cq_qgemm_rows(NULL, 3, CQ_QGEMM_MAX_K + 1, NULL, NULL, 0, y, 3, 2);
	for (int i = 0; i < 6; i++)
		CHECK(isnan(y[i]));
}

/*
 * One fixed product's bits, pinned: the contract is the same bits on every
 * variant, build (-march, compiler) and machine.  The 8-bit hash was
 * computed on AVX2 and portable (2026-11-25) and matched by AVX-VNNI and
 * AVX512-VNNI on an AMD EPYC with both (2026-11-27); the 7-bit hash was
 * computed on that machine with all four variants agreeing.
 */
static void
check_fixed_bits(int bits, uint64_t pinned)
{
	cq_qgemm_isa isas[CQ_QGEMM_N_ISA];
	int			n_isa = runnable(isas),
				n = 37,
				k = 71,
				rows = 5;
	uint64_t	saved = lcg_state;
	float	   *w,
			   *x,
			   *bias,
			   *y = malloc(sizeof(float) * rows * n);
	weights		ws;

	lcg_state = 777;
	w = random_floats((long) n * k, 0.3f);
	x = random_floats((long) rows * k, 5.0f);
	bias = random_floats(n, 1.0f);
	lcg_state = saved;
	ws = make_weights_bits(w, n, k, bits);
	for (int i = 0; i < n_isa; i++)
	{
		uint64_t	h = 14695981039346656037ULL;	/* FNV-1a over the bytes of y */

		cq_qgemm_rows_isa(isas[i], ws.packed, n, k, bias, x, k, y, n, rows);
		for (size_t b = 0; b < sizeof(float) * rows * n; b++)
			h = (h ^ ((unsigned char *) y)[b]) * 1099511628211ULL;
		if (h != pinned)
			unit_fail(__FILE__, __LINE__, "%s, %d-bit weights: hash %#llx, pinned %#llx",
					  cq_qgemm_isa_name(isas[i]), bits, (unsigned long long) h,
					  (unsigned long long) pinned);
	}
	free(w), free(x), free(bias), free(y), free_weights(&ws);
}

TEST(qgemm_fixed_bits)
{
	check_fixed_bits(8, QGEMM_FIXED_BITS);
	check_fixed_bits(7, QGEMM_FIXED_BITS_7);
}

/*
 * What the AVX2 tile of 7-bit weights computes, emulated in C (this test
 * runs everywhere): vpmaddubsw's int16 pair sums of biased activations
 * (unsigned, up to 255) times the weights, with the instruction's
 * saturation, then widened and summed, minus comp, give the exact sum --
 * for the largest codes in every combination of signs.  The same scheme on
 * 8-bit weights would saturate (checked, so this test can tell).
 */
static int32_t
maddubs_pair(uint8_t a0, int8_t w0, uint8_t a1, int8_t w1)
{
	int32_t		v = (int32_t) a0 * w0 + (int32_t) a1 * w1;

	return v > 32767 ? 32767 : v < -32768 ? -32768 : v;
}

TEST(qgemm_avx2_u8_arithmetic_emulated)
{
	static const int8_t xs[] = {127, -127, 0, 1, -1, 64};
	int			exact_7 = 0,
				exact_8 = 0,
				cases = 0;

	for (int qmax = 63; qmax <= 127; qmax += 64)
		for (int a = 0; a < 6; a++)
			for (int b = 0; b < 6; b++)
				for (int sw = 0; sw < 4; sw++)
				{
					int8_t		x0 = xs[a],
								x1 = xs[b],
								w0 = (int8_t) (sw & 1 ? -qmax : qmax),
								w1 = (int8_t) (sw & 2 ? -qmax : qmax);
					int32_t		got = maddubs_pair((uint8_t) (x0 + 128), w0, (uint8_t) (x1 + 128), w1)
					-128 * (w0 + w1);
					bool		ok = got == x0 * w0 + x1 * w1;

					cases += qmax == 63;
					exact_7 += qmax == 63 && ok;
					exact_8 += qmax == 127 && ok;
				}
	CHECK_INT_EQ(exact_7, cases);
	CHECK(exact_8 < cases);
}

TEST(qgemm_isa_choice)
{
#define F(x) CQ_CPU_BIT(CQ_CPU_##x)
	cq_cpu_features avx2 = F(AVX) | F(AVX2) | F(FMA);

	CHECK_INT_EQ(cq_qgemm_isa_for(0), CQ_QGEMM_PORTABLE);
	CHECK_INT_EQ(cq_qgemm_isa_for(avx2 & ~F(FMA)), CQ_QGEMM_PORTABLE);
	CHECK_INT_EQ(cq_qgemm_isa_for(avx2), CQ_QGEMM_AVX2);
	CHECK_INT_EQ(cq_qgemm_isa_for(avx2 | F(AVXVNNI)), CQ_QGEMM_AVXVNNI);
	CHECK_INT_EQ(cq_qgemm_isa_for(avx2 | F(AVX512F)), CQ_QGEMM_AVX2);
	CHECK_INT_EQ(cq_qgemm_isa_for(avx2 | F(AVX512F) | F(AVX512VNNI)), CQ_QGEMM_AVX512VNNI);
	CHECK(cq_qgemm_isa_runs(cq_qgemm_machine(), cq_cpu_detect()));
	printf("     qgemm on this CPU: %s\n", cq_qgemm_isa_name(cq_qgemm_machine()));
#undef F
}

/* The quantization rule as scalar loops (qgemm.h): the vectorised one must
 * give its scale and codes bit for bit. */
static float
quantize_scalar(const float *v, int k, int8_t *q)
{
	float		m = 0.0f,
				scale;

	for (int i = 0; i < k; i++)
		m = fabsf(v[i]) > m ? fabsf(v[i]) : m;
	scale = m / 127.0f;
	for (int i = 0; i < k; i++)
	{
		float		c = scale > 0.0f ? rintf(v[i] / scale) : 0.0f;

		c = c > 127.0f ? 127.0f : c < -127.0f ? -127.0f : c;
		q[i] = c == c ? (int8_t) c : 0;
	}
	return scale;
}

TEST(qgemm_quantize_matches_scalar_bits)
{
	static const float odd[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f, 1e30f, 3.4e38f};
	static float v[1031];
	static int8_t a[1031],
				b[1031];
	uint64_t	s = 99;
	int			bad = 0;

	for (int k = 1; k <= 1031; k += k < 40 ? 1 : 97)
		for (int kind = 0; kind < 5; kind++)
		{
			float		sa,
						sb;

			for (int i = 0; i < k; i++)
			{
				s = s * 6364136223846793005ULL + 1442695040888963407ULL;
				v[i] = ((float) (s >> 40) / 16777216.0f - 0.5f) * 8.0f;
				if (kind == 1)		/* scale 1 and halves: round-half-even ties */
					v[i] = i == 0 ? 127.0f : (float) ((long) (v[i] * 16) % 254) * 0.5f;
				if (kind == 2 && i % 7 == 3)
					v[i] = odd[(s >> 20) % (sizeof(odd) / sizeof(odd[0]))];
				if (kind == 3)
					v[i] = 0.0f;
				if (kind == 4)
					v[i] *= 1e-39f;	/* subnormal scales */
			}
			sa = cq_qgemm_quantize_vec(v, k, a);
			sb = quantize_scalar(v, k, b);
			bad += memcmp(&sa, &sb, sizeof(sa)) != 0 || memcmp(a, b, k) != 0;
		}
	CHECK_INT_EQ(bad, 0);
}

/*
 * Threads (common/parallel.h): 1, 2 and 3 threads give the same bits (the
 * panels of each chunk shared out), over several chunks and a panel count
 * that does not divide evenly.
 */
TEST(qgemm_threads_same_bits)
{
	cq_qgemm_isa isas[CQ_QGEMM_N_ISA];
	int			n_isa = runnable(isas),
				saved = cq_parallel_threads();
	int			n = 1000,
				k = 512,
				rows = 600;
	float	   *w = random_floats((long) n * k, 1.0f),
			   *bias = random_floats(n, 1.0f),
			   *x = random_floats((long) rows * k, 1.0f),
			   *y[3];
	weights		ws = make_weights(w, n, k);

	for (int i = 0; i < n_isa; i++)
	{
		for (int t = 0; t < 3; t++)
		{
			cq_parallel_set_threads(t + 1);
			y[t] = malloc(sizeof(float) * (size_t) rows * n);
			cq_qgemm_rows_isa(isas[i], ws.packed, n, k, bias, x, k, y[t], n, rows);
		}
		for (int t = 1; t < 3; t++)
			if (memcmp(y[0], y[t], sizeof(float) * (size_t) rows * n) != 0)
				unit_fail(__FILE__, __LINE__, "%s: %d threads differ from 1",
						  cq_qgemm_isa_name(isas[i]), t + 1);
		for (int t = 0; t < 3; t++)
			free(y[t]);
	}
	cq_parallel_set_threads(saved);
	free(w), free(bias), free(x), free_weights(&ws);
}
