#include "common/cpu.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CQ_HAVE_CPUID 1
#endif

static const char *const feature_names[CQ_CPU_N_FEATURES] = {
	"SSE2", "SSE3", "SSSE3", "SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA",
	"AVX512F", "AVX512BW", "AVX512DQ", "AVX512VL", "AVX512VNNI", "AVXVNNI"
};

#define B(f) CQ_CPU_BIT(CQ_CPU_##f)
#define NEEDS_PRESCOTT (B(SSE2) | B(SSE3))
#define NEEDS_CORE2 (NEEDS_PRESCOTT | B(SSSE3))
#define NEEDS_PENRYN (NEEDS_CORE2 | B(SSE41))
#define NEEDS_NEHALEM (NEEDS_PENRYN | B(SSE42))
#define NEEDS_SANDYBRIDGE (NEEDS_NEHALEM | B(AVX))
#define NEEDS_HASWELL (NEEDS_SANDYBRIDGE | B(AVX2) | B(FMA))
#define NEEDS_SKYLAKEX (NEEDS_HASWELL | B(AVX512F) | B(AVX512BW) | B(AVX512DQ) | B(AVX512VL))

/* Oldest first; the names OPENBLAS_CORETYPE accepts for these kernels. */
static const cq_blas_core cores[] = {
	{"Prescott", NEEDS_PRESCOTT},
	{"Atom", NEEDS_CORE2},
	{"Core2", NEEDS_CORE2},
	{"Penryn", NEEDS_PENRYN},
	{"Dunnington", NEEDS_PENRYN},
	{"Nehalem", NEEDS_NEHALEM},
	{"Sandybridge", NEEDS_SANDYBRIDGE},
	{"Haswell", NEEDS_HASWELL},
	{"Zen", NEEDS_HASWELL},
	{"SkylakeX", NEEDS_SKYLAKEX},
};

#define N_CORES ((int) (sizeof(cores) / sizeof(cores[0])))

#ifdef CQ_HAVE_CPUID
/* XCR0: which register states the OS saves on a context switch. */
static uint64_t
xcr0(void)
{
	uint32_t	lo,
				hi;

	__asm__ volatile ("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t) hi << 32) | lo;
}

static cq_cpu_features
detect(void)
{
	unsigned int a,
				b,
				c,
				d;
	cq_cpu_features f = 0;
	bool		os_avx = false,
				os_avx512 = false;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	f |= (d & bit_SSE2) ? B(SSE2) : 0;
	f |= (c & bit_SSE3) ? B(SSE3) : 0;
	f |= (c & bit_SSSE3) ? B(SSSE3) : 0;
	f |= (c & bit_SSE4_1) ? B(SSE41) : 0;
	f |= (c & bit_SSE4_2) ? B(SSE42) : 0;
	if (c & bit_OSXSAVE)
	{
		uint64_t	x = xcr0();

		os_avx = (x & 0x6) == 0x6;	/* XMM and YMM state */
		os_avx512 = os_avx && (x & 0xe0) == 0xe0;	/* opmask, ZMM0-15 high, ZMM16-31 */
	}
	if (os_avx && (c & bit_AVX))
		f |= B(AVX) | ((c & bit_FMA) ? B(FMA) : 0);
	if (os_avx && __get_cpuid_count(7, 0, &a, &b, &c, &d))
	{
		f |= (b & bit_AVX2) ? B(AVX2) : 0;
		if (os_avx512)
		{
			f |= (b & bit_AVX512F) ? B(AVX512F) : 0;
			f |= (b & bit_AVX512BW) ? B(AVX512BW) : 0;
			f |= (b & bit_AVX512DQ) ? B(AVX512DQ) : 0;
			f |= (b & bit_AVX512VL) ? B(AVX512VL) : 0;
			f |= (c & bit_AVX512VNNI) ? B(AVX512VNNI) : 0;
		}
		/* leaf 7 subleaf 1 exists when subleaf 0 says so (eax = max subleaf) */
		if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d))
			f |= (a & bit_AVXVNNI) ? B(AVXVNNI) : 0;
	}
	return f;
}
#else
static cq_cpu_features
detect(void)
{
	return 0;
}
#endif

cq_cpu_features
cq_cpu_detect(void)
{
	/* cpuid is slow under a hypervisor (a VM exit): ask once per process. */
	static cq_cpu_features cached;
	static bool done;

	if (!done)
	{
		cached = detect();
		done = true;
	}
	return cached;
}

const char *
cq_cpu_feature_name(cq_cpu_feature f)
{
	return f >= 0 && f < CQ_CPU_N_FEATURES ? feature_names[f] : "?";
}

void
cq_cpu_features_format(cq_cpu_features f, char *buf, size_t size)
{
	size_t		len = 0;

	buf[0] = '\0';
	for (int i = 0; i < CQ_CPU_N_FEATURES && len < size; i++)
		if (f & CQ_CPU_BIT(i))
			len += snprintf(buf + len, size - len, "%s%s", len ? " " : "", feature_names[i]);
}

const cq_blas_core *
cq_blas_core_lookup(const char *name)
{
	for (int i = 0; name && i < N_CORES; i++)
		if (strcasecmp(name, cores[i].name) == 0)
			return &cores[i];
	return NULL;
}

void
cq_blas_core_names(char *buf, size_t size)
{
	size_t		len = 0;

	buf[0] = '\0';
	for (int i = 0; i < N_CORES && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%s", i ? ", " : "", cores[i].name);
}

int
cq_blas_core_missing(const cq_blas_core *core, cq_cpu_features f)
{
	for (int i = 0; i < CQ_CPU_N_FEATURES; i++)
		if ((core->needs & CQ_CPU_BIT(i)) && !(f & CQ_CPU_BIT(i)))
			return i;
	return -1;
}

/* The rule, best first, with the reason cq_blas_choose reports. */
static const struct
{
	const char *core;
	cq_cpu_features needs;
	const char *why;
}			rule[] = {
	{"SkylakeX", NEEDS_SKYLAKEX, "cpuid: AVX-512F/BW/DQ/VL"},
	{"Haswell", NEEDS_HASWELL, "cpuid: AVX2+FMA"},
	{"Sandybridge", NEEDS_SANDYBRIDGE, "cpuid: AVX"},
	{"Prescott", NEEDS_PRESCOTT, "cpuid: SSE3, no AVX"},
	{NULL, 0, "cpuid: no SSE3, OpenBLAS's own detection"},
};

static int
rule_index(cq_cpu_features f)
{
	int			i = 0;

	while ((rule[i].needs & f) != rule[i].needs)
		i++;
	return i;
}

const cq_blas_core *
cq_blas_core_for(cq_cpu_features f)
{
	const char *name = rule[rule_index(f)].core;

	return name ? cq_blas_core_lookup(name) : NULL;
}

static bool
named(const char *s)
{
	return s && s[0] != '\0';
}

cq_blas_choice_status
cq_blas_choose(const char *setting, const char *env, cq_cpu_features f,
			   cq_blas_choice *out)
{
	memset(out, 0, sizeof(*out));
	out->missing = -1;
	if (named(setting) && strcasecmp(setting, "auto") != 0)
	{
		out->source = CQ_BLAS_FROM_SETTING;
		out->name = setting;
		snprintf(out->why, sizeof(out->why), "corpq.blas_core");
	}
	else if (named(env))
	{
		out->source = CQ_BLAS_FROM_ENV;
		out->name = env;
		snprintf(out->why, sizeof(out->why), "OPENBLAS_CORETYPE");
	}
	else
	{
		out->source = CQ_BLAS_FROM_CPU;
		out->core = cq_blas_core_for(f);
		snprintf(out->why, sizeof(out->why), "%s", rule[rule_index(f)].why);
		return CQ_BLAS_CHOICE_OK;
	}
	out->core = cq_blas_core_lookup(out->name);
	if (!out->core)
		return CQ_BLAS_CHOICE_UNKNOWN;
	out->missing = cq_blas_core_missing(out->core, f);
	return out->missing < 0 ? CQ_BLAS_CHOICE_OK : CQ_BLAS_CHOICE_UNSUPPORTED;
}
