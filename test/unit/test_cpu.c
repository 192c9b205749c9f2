#include "unit.h"

#include "common/cpu.h"
#include "nn/ops/rowgemm.h"

#define F(x) CQ_CPU_BIT(CQ_CPU_##x)
#define SSE_ALL (F(SSE2) | F(SSE3) | F(SSSE3) | F(SSE41) | F(SSE42))
#define AVX_ONLY (SSE_ALL | F(AVX))
#define AVX2_FMA (AVX_ONLY | F(AVX2) | F(FMA))
#define AVX512_ALL (AVX2_FMA | F(AVX512F) | F(AVX512BW) | F(AVX512DQ) | F(AVX512VL))

static const char *
core_for(cq_cpu_features f)
{
	const cq_blas_core *c = cq_blas_core_for(f);

	return c ? c->name : "(none)";
}

/* The rule of the issue: AVX-512F/BW/DQ/VL, then AVX2 + FMA, then AVX. */
TEST(cpu_core_rule)
{
	CHECK_STR_EQ(core_for(AVX512_ALL), "SkylakeX");
	CHECK_STR_EQ(core_for(AVX512_ALL & ~F(AVX512BW)), "Haswell");
	CHECK_STR_EQ(core_for(AVX512_ALL & ~F(AVX512VL)), "Haswell");
	CHECK_STR_EQ(core_for(AVX2_FMA), "Haswell");
	CHECK_STR_EQ(core_for(AVX2_FMA & ~F(FMA)), "Sandybridge");
	CHECK_STR_EQ(core_for(AVX_ONLY), "Sandybridge");
	CHECK_STR_EQ(core_for(SSE_ALL), "Prescott");
	CHECK_STR_EQ(core_for(F(SSE2) | F(SSE3)), "Prescott");
	CHECK_STR_EQ(core_for(F(SSE2)), "(none)");
	CHECK_STR_EQ(core_for(0), "(none)");
}

TEST(cpu_choice_precedence_and_reasons)
{
	cq_blas_choice c;

	CHECK_INT_EQ(cq_blas_choose(NULL, NULL, AVX2_FMA, &c), CQ_BLAS_CHOICE_OK);
	CHECK_STR_EQ(c.core->name, "Haswell");
	CHECK_INT_EQ(c.source, CQ_BLAS_FROM_CPU);
	CHECK_STR_EQ(c.why, "cpuid: AVX2+FMA");
	CHECK_INT_EQ(cq_blas_choose("auto", "", AVX512_ALL, &c), CQ_BLAS_CHOICE_OK);
	CHECK_STR_EQ(c.why, "cpuid: AVX-512F/BW/DQ/VL");
	/* the environment beats the rule, the setting beats both; any case */
	CHECK_INT_EQ(cq_blas_choose("AUTO", "zen", AVX512_ALL, &c), CQ_BLAS_CHOICE_OK);
	CHECK_STR_EQ(c.core->name, "Zen");
	CHECK_STR_EQ(c.why, "OPENBLAS_CORETYPE");
	CHECK_INT_EQ(cq_blas_choose("sandybridge", "Zen", AVX512_ALL, &c), CQ_BLAS_CHOICE_OK);
	CHECK_STR_EQ(c.core->name, "Sandybridge");
	CHECK_INT_EQ(c.source, CQ_BLAS_FROM_SETTING);
	CHECK_STR_EQ(c.why, "corpq.blas_core");
}

/* Bad input: unknown names, and cores this (faked) CPU cannot execute. */
TEST(cpu_choice_refusals)
{
	cq_blas_choice c;
	char		names[256];

	CHECK_INT_EQ(cq_blas_choose("Pentium", NULL, AVX512_ALL, &c), CQ_BLAS_CHOICE_UNKNOWN);
	CHECK_STR_EQ(c.name, "Pentium");
	CHECK_INT_EQ(cq_blas_choose(NULL, "Cooperlake", AVX512_ALL, &c), CQ_BLAS_CHOICE_UNKNOWN);
	CHECK_INT_EQ(c.source, CQ_BLAS_FROM_ENV);
	CHECK_INT_EQ(cq_blas_choose("SkylakeX", NULL, AVX2_FMA, &c), CQ_BLAS_CHOICE_UNSUPPORTED);
	CHECK_STR_EQ(cq_cpu_feature_name(c.missing), "AVX512F");
	CHECK_INT_EQ(cq_blas_choose("SkylakeX", NULL, AVX512_ALL & ~F(AVX512DQ), &c),
				 CQ_BLAS_CHOICE_UNSUPPORTED);
	CHECK_STR_EQ(cq_cpu_feature_name(c.missing), "AVX512DQ");
	CHECK_INT_EQ(cq_blas_choose(NULL, "Haswell", AVX_ONLY, &c), CQ_BLAS_CHOICE_UNSUPPORTED);
	CHECK_STR_EQ(cq_cpu_feature_name(c.missing), "AVX2");
	CHECK_INT_EQ(cq_blas_choose("Zen", NULL, AVX2_FMA & ~F(FMA), &c), CQ_BLAS_CHOICE_UNSUPPORTED);
	CHECK_STR_EQ(cq_cpu_feature_name(c.missing), "FMA");
	CHECK_INT_EQ(cq_blas_choose("Sandybridge", NULL, SSE_ALL, &c), CQ_BLAS_CHOICE_UNSUPPORTED);
	CHECK_STR_EQ(cq_cpu_feature_name(c.missing), "AVX");
	CHECK_INT_EQ(cq_blas_choose("Nehalem", NULL, F(SSE2) | F(SSE3) | F(SSSE3) | F(SSE41), &c),
				 CQ_BLAS_CHOICE_UNSUPPORTED);
	CHECK_STR_EQ(cq_cpu_feature_name(c.missing), "SSE4.2");
	CHECK_INT_EQ(cq_blas_choose("Prescott", NULL, AVX512_ALL, &c), CQ_BLAS_CHOICE_OK);
	cq_blas_core_names(names, sizeof(names));
	CHECK(strstr(names, "Prescott, ") == names);
	CHECK(strstr(names, "Sandybridge") && strstr(names, "Haswell") && strstr(names, "Zen") &&
		  strstr(names, "SkylakeX"));
}

/* Every core the rule picks can run on the features it was picked for. */
TEST(cpu_rule_picks_executable_cores)
{
	for (cq_cpu_features f = 0; f < CQ_CPU_BIT(CQ_CPU_N_FEATURES); f++)
	{
		const cq_blas_core *c = cq_blas_core_for(f);

		if (c && cq_blas_core_missing(c, f) >= 0)
		{
			unit_fail(__FILE__, __LINE__, "features %#x: %s lacks %s", f, c->name,
					  cq_cpu_feature_name(cq_blas_core_missing(c, f)));
			return;
		}
	}
}

/* This machine: consistent features, the kernels dispatch on the same bits. */
TEST(cpu_this_machine)
{
	cq_cpu_features f = cq_cpu_detect();
	cq_blas_choice c;
	char		buf[256];

	cq_cpu_features_format(f, buf, sizeof(buf));
	printf("     this CPU: %s\n", buf);
	CHECK(f == cq_cpu_detect());
	if (f & F(AVX512F))
		CHECK((f & F(AVX)) != 0);
	if (f & F(AVX2))
		CHECK((f & F(AVX)) != 0);
	/* VNNI counts only with the register state its vectors need */
	if (f & F(AVX512VNNI))
		CHECK((f & F(AVX512F)) != 0);
	if (f & F(AVXVNNI))
		CHECK((f & F(AVX)) != 0);
	CHECK_STR_EQ(cq_cpu_feature_name(CQ_CPU_AVX512VNNI), "AVX512VNNI");
	CHECK_STR_EQ(cq_cpu_feature_name(CQ_CPU_AVXVNNI), "AVXVNNI");
	CHECK_INT_EQ(cq_blas_choose(NULL, NULL, f, &c), CQ_BLAS_CHOICE_OK);
	CHECK(!c.core || cq_blas_core_missing(c.core, f) < 0);
	CHECK_INT_EQ(cq_rowgemm_isa_for(AVX512_ALL), CQ_ROWGEMM_AVX512);
	CHECK_INT_EQ(cq_rowgemm_isa_for(AVX2_FMA), CQ_ROWGEMM_AVX2);
	CHECK_INT_EQ(cq_rowgemm_isa_for(AVX2_FMA & ~F(FMA)), CQ_ROWGEMM_PORTABLE);
	CHECK_INT_EQ(cq_rowgemm_machine(), cq_rowgemm_isa_for(f));
}
