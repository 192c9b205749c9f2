/*
 * What this x86-64 CPU can execute, and which OpenBLAS core that allows.
 *
 * One rule for every host: the extension's OpenBLAS loader, the unit tests,
 * the reference checks (test/blas_core) and the benchmarks all ask this file,
 * and the packed inference kernels (nn/ops/rowgemm.c, nn/ops/qgemm.c) dispatch
 * on the same bits.
 *
 * Features count only when the OS saves their registers (XGETBV): a CPU with
 * AVX-512 under a kernel or hypervisor that does not enable ZMM state has no
 * AVX-512 here.
 */
#ifndef CQ_COMMON_CPU_H
#define CQ_COMMON_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum cq_cpu_feature
{
	CQ_CPU_SSE2,
	CQ_CPU_SSE3,
	CQ_CPU_SSSE3,
	CQ_CPU_SSE41,
	CQ_CPU_SSE42,
	CQ_CPU_AVX,
	CQ_CPU_AVX2,
	CQ_CPU_FMA,
	CQ_CPU_AVX512F,
	CQ_CPU_AVX512BW,
	CQ_CPU_AVX512DQ,
	CQ_CPU_AVX512VL,
	CQ_CPU_AVX512VNNI,				/* vpdpbusd on zmm (int8 kernels, nn/ops/qgemm.h) */
	CQ_CPU_AVXVNNI,					/* the same on ymm, VEX-encoded (Alder Lake, Zen 5) */
	CQ_CPU_N_FEATURES
} cq_cpu_feature;

/* A set of features: bit f for cq_cpu_feature f. */
typedef uint32_t cq_cpu_features;

#define CQ_CPU_BIT(f) ((cq_cpu_features) 1 << (f))

/* This CPU's usable features (cpuid + XGETBV; computed once). */
cq_cpu_features cq_cpu_detect(void);

/* "AVX512BW" etc. */
const char *cq_cpu_feature_name(cq_cpu_feature f);

/* The features as "SSE2 SSE3 ... AVX512VL" into buf (always terminated). */
void		cq_cpu_features_format(cq_cpu_features f, char *buf, size_t size);

/*
 * OpenBLAS cores corpq can name (the x86-64 cores of Debian's DYNAMIC_ARCH
 * OpenBLAS 0.3.21 that can be forced with OPENBLAS_CORETYPE).  Cooperlake is
 * not among them: 0.3.21 does not accept it as OPENBLAS_CORETYPE and falls
 * back to its own detection; its sgemm is SkylakeX's anyway.
 */
typedef struct cq_blas_core
{
	const char *name;				/* as OpenBLAS spells it */
	cq_cpu_features needs;
} cq_blas_core;

/* The core named name (case-insensitive, as OpenBLAS compares), or NULL. */
const cq_blas_core *cq_blas_core_lookup(const char *name);

/* The valid names, ", "-separated, into buf (always terminated). */
void		cq_blas_core_names(char *buf, size_t size);

/*
 * The best core for these features: AVX-512F/BW/DQ/VL -> SkylakeX,
 * AVX2 + FMA -> Haswell, AVX -> Sandybridge, SSE3 -> Prescott; NULL (let
 * OpenBLAS detect) on a CPU without SSE3 or not x86.
 */
const cq_blas_core *cq_blas_core_for(cq_cpu_features f);

/* The first feature core needs that f lacks, or -1 when f has them all. */
int			cq_blas_core_missing(const cq_blas_core *core, cq_cpu_features f);

/* Where the choice came from, strongest first. */
typedef enum cq_blas_source
{
	CQ_BLAS_FROM_SETTING,			/* corpq.blas_core (or a test's argument) */
	CQ_BLAS_FROM_ENV,				/* OPENBLAS_CORETYPE in the environment */
	CQ_BLAS_FROM_CPU				/* this file's rule */
} cq_blas_source;

typedef enum cq_blas_choice_status
{
	CQ_BLAS_CHOICE_OK,
	CQ_BLAS_CHOICE_UNKNOWN,			/* the name is not a core corpq knows */
	CQ_BLAS_CHOICE_UNSUPPORTED		/* the CPU lacks a feature the core needs */
} cq_blas_choice_status;

typedef struct cq_blas_choice
{
	const cq_blas_core *core;		/* the chosen core; NULL: leave it to OpenBLAS */
	cq_blas_source source;
	const char *name;				/* the name asked for (setting or env), else NULL */
	int			missing;			/* UNSUPPORTED: the cq_cpu_feature lacking */
	char		why[96];			/* "corpq.blas_core", "OPENBLAS_CORETYPE", "cpuid: AVX2+FMA" */
} cq_blas_choice;

/*
 * Choose the OpenBLAS core: setting (NULL, "" or "auto" = none) wins over env
 * (NULL or "" = none), which wins over the CPU rule; a named core must be known
 * and executable on f.
 */
cq_blas_choice_status cq_blas_choose(const char *setting, const char *env,
									 cq_cpu_features f, cq_blas_choice *out);

#endif
