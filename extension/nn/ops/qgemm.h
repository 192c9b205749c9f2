/*
 * Int8 row-independent GEMM (issue 30): y[rows, n] = x[rows, k] W^T + bias
 * with W quantized once per output row and x quantized per row on the fly.
 *
 * Quantization, one rule for weights and activations (cq_qgemm_quantize_vec):
 * a vector v[k] gets scale = max|v| / Q (0 for an all-zero vector) and
 * q = round-half-even(v / scale) clamped to [-Q, Q] (NaN -> 0), with
 * Q = 127 for activations and Q = 2^(bits - 1) - 1 for weights, where the
 * weights' code width bits (8 or 7: Q = 127 or 63) is a property of the
 * packed weights, chosen by whoever quantizes them (a model version records
 * it), never by the CPU.  -128 is never produced: the AVX2 scheme for 8-bit
 * weights negates activation codes (weights of -128 from another quantizer
 * would still be exact: |-128| = 128 fits the unsigned operand and
 * 2 * 128 * 127 < 32767).
 *
 * Activations are symmetric int8, not asymmetric uint8 with a zero point:
 *   - each row's scale and codes depend on that row only, so a row's result
 *     is a pure function of the row and the weights (batch-invariant);
 *   - AVX2 has an exact int8 product at full speed for 7-bit magnitudes
 *     (below), which uint8 activations (up to 255) would lose;
 *   - the inputs of the linear layers are mostly layer-norm outputs, roughly
 *     symmetric; the zero point would gain at most one bit on the one-sided
 *     inputs (after ReLU) and cost a per-row correction term.
 *
 * The integer part is exact on every ISA, so every variant gives the same
 * int32 sum acc[r][j] = sum_k xq[r][k] wq[j][k], |acc| <= 127^2 k:
 *   - portable C: int32 multiply-adds;
 *   - AVX2, 8-bit weights: vpmaddubsw(|wq|, sign(xq, wq)) multiplies 7-bit
 *     magnitudes (<= 127, unsigned) by signed bytes (|.| <= 127): each int16
 *     pair sum is at most 2 * 127^2 = 32258 < 32767, so the instruction's
 *     saturation never triggers (it does with uint8 activations up to 255:
 *     2 * 255 * 127 = 64770, which is what oneDNN's AVX2 int8 kernels run
 *     into, see test/bench/bench_qgemm.c); vpmaddwd by ones widens the pairs
 *     to int32 exactly: four instructions per 32 products;
 *   - AVX2, 7-bit weights (|wq| <= 63): vpmaddubsw(xq + 128, wq) takes the
 *     biased activations (1 .. 255, unsigned) as they are: each pair sum is
 *     at most 2 * 255 * 63 = 32130 < 32767, again exact, and the weights'
 *     comp is subtracted as on VNNI: three instructions per 32 products
 *     (vpmaddubsw, vpmaddwd, vpaddd), what ONNX Runtime's AVX2 kernel runs
 *     with its reduced weight range, but without its saturation;
 *   - AVX-VNNI / AVX512-VNNI: vpdpbusd multiplies uint8 by int8 into int32
 *     without saturation; the activations enter as xq + 128 (1 .. 255) and
 *     the packed weights carry comp[j] = 128 sum_k wq[j][k] to subtract.
 * With k <= CQ_QGEMM_MAX_K no int32 ever overflows: the biased VNNI sum is
 * at most 255 * 127 * 65536 < 2^31.
 *
 * The float epilogue is one formula on every path, with no operation the
 * compiler could fuse or reorder:
 *     y[r][j] = fmaf((float) acc, xscale[r] * wscale[j], bias[j] or +0.0f)
 * (int32 -> float and the product round to nearest even, the fma once), so
 * all variants give the same bits, whatever other rows share the call.
 *
 * Error against the float32 product (see test_qgemm.c): each code is off by
 * at most half a step, so |y - x W^T| <= sum_k (|x_k| ws/2 + |w_k| xs/2 +
 * xs ws / 4) plus float32 rounding of the epilogue.
 */
#ifndef CQ_NN_QGEMM_H
#define CQ_NN_QGEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cpu.h"

/* Output columns per packed panel (one zmm, two ymm of int32 lanes). */
#define CQ_QGEMM_NB 16
/* k steps per int32 lane: the packed weights hold quads of k. */
#define CQ_QGEMM_KG 4
/* The largest k: keeps every int32 sum exact (see above). */
#define CQ_QGEMM_MAX_K 65536

typedef enum cq_qgemm_isa
{
	CQ_QGEMM_PORTABLE,				/* plain C, the reference */
	CQ_QGEMM_AVX2,					/* AVX2 + FMA, vpmaddubsw with the sign trick */
	CQ_QGEMM_AVXVNNI,				/* AVX-VNNI: vpdpbusd on ymm */
	CQ_QGEMM_AVX512VNNI				/* AVX512-VNNI: vpdpbusd on zmm */
} cq_qgemm_isa;

#define CQ_QGEMM_N_ISA 4

/* The best variant for a feature set, this machine's, its name ("avx2"). */
cq_qgemm_isa cq_qgemm_isa_for(cq_cpu_features f);
cq_qgemm_isa cq_qgemm_machine(void);
const char *cq_qgemm_isa_name(cq_qgemm_isa isa);

/* Whether a CPU with features f can execute variant isa. */
bool		cq_qgemm_isa_runs(cq_qgemm_isa isa, cq_cpu_features f);

/* The weights' code widths: 8 bits (codes in [-127, 127]) or 7 ([-63, 63]). */
#define CQ_QGEMM_BITS_MIN 7
#define CQ_QGEMM_BITS_MAX 8

/* Quantize v[k] into q[k] by the rule above with Q = 127; returns the scale. */
float		cq_qgemm_quantize_vec(const float *v, int k, int8_t *q);

/* The same with Q = 2^(bits - 1) - 1 (bits 7 or 8). */
float		cq_qgemm_quantize_vec_bits(const float *v, int k, int bits, int8_t *q);

/*
 * W[n, k] row-major -> q[n, k] row-major and scale[n], row by row, with
 * bits-bit codes (7 or 8).
 */
void		cq_qgemm_quantize_weights(const float *w, int n, int k, int bits,
									  int8_t *q, float *scale);

/*
 * The packed weights (one buffer, any alignment; 64-byte aligned is best):
 *     int32   header[16]             n, k, bits (the codes' width), 0 ...
 *     float   wscale[P NB]           P = ceil(n / NB) panels, 0 past n
 *     int32   comp[P NB]             128 sum_k q[j][k], for the VNNI variants
 *     int8    panel[P][K4 / 4][NB][4]  K4 = k rounded up to a multiple of 4;
 *                                    panel[p][g][jj][t] = q[p NB + jj][4 g + t],
 *                                    0 past n or k
 * cq_qgemm_packed_bytes is 0 for k outside [0, CQ_QGEMM_MAX_K]: such a layer
 * must be refused (or kept in float32).
 */
size_t		cq_qgemm_packed_bytes(int n, int k);

/* Codes of bits bits (their |q| must not exceed 2^(bits - 1) - 1). */
void		cq_qgemm_pack(const int8_t *q, const float *scale, int n, int k, int bits,
						  void *packed);

/* The code width a packed buffer was made with. */
int			cq_qgemm_packed_bits(const void *packed);

/*
 * Row j of the weights in a packed buffer, decoded: v[i] = (float) q[j][i] *
 * scale[j], one rounding (an int8 model's token embedding, models/FORMAT.md).
 */
void		cq_qgemm_packed_row(const void *packed, int j, float *v);

/*
 * y[rows, n] = x[rows, k] W^T + bias, W packed by cq_qgemm_pack, bias [n] or
 * NULL (zero); 0 <= k <= CQ_QGEMM_MAX_K (otherwise y is all NaN).  x and y
 * must not overlap.
 */
void		cq_qgemm_rows(const void *packed, int n, int k, const float *bias,
						  const float *x, long ldx, float *y, long ldy, int rows);

/* The same with the variant named, for tests and benchmarks (it must run here). */
void		cq_qgemm_rows_isa(cq_qgemm_isa isa, const void *packed, int n, int k,
							  const float *bias, const float *x, long ldx,
							  float *y, long ldy, int rows);

#endif
