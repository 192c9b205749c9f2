/*
 * blas_core: the OpenBLAS core corpq chooses on this machine, for the test
 * and benchmark scripts (which export it as OPENBLAS_CORETYPE before starting
 * Python or a server, so that PyTorch, test/libcorpqcore.so and the extension
 * run the kernels the extension would pick).  Built from extension/common/cpu.c,
 * the same rule the extension's loader applies.
 *
 *   blas_core            the core for this CPU, or OPENBLAS_CORETYPE if set
 *   blas_core NAME       NAME itself if this CPU can run it
 *   blas_core -v [NAME]  also the reason and the CPU's features, tab-separated
 *
 * Exit status 1 (and a message naming the missing feature) when the CPU cannot
 * run the core, 2 for a name corpq does not know.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"

int
main(int argc, char **argv)
{
	bool		verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	const char *name = argc > 1 + verbose ? argv[1 + verbose] : NULL;
	cq_cpu_features f = cq_cpu_detect();
	cq_blas_choice c;
	char		feats[256],
				names[256];

	cq_cpu_features_format(f, feats, sizeof(feats));
	switch (cq_blas_choose(name, getenv("OPENBLAS_CORETYPE"), f, &c))
	{
		case CQ_BLAS_CHOICE_UNKNOWN:
			cq_blas_core_names(names, sizeof(names));
			fprintf(stderr, "unknown OpenBLAS core \"%s\"%s; valid: %s\n", c.name,
					c.source == CQ_BLAS_FROM_ENV ? " in OPENBLAS_CORETYPE" : "", names);
			return 2;
		case CQ_BLAS_CHOICE_UNSUPPORTED:
			fprintf(stderr, "OpenBLAS core %s needs %s, which this CPU lacks (it has %s)\n",
					c.core->name, cq_cpu_feature_name(c.missing), feats);
			return 1;
		case CQ_BLAS_CHOICE_OK:
			break;
	}
	if (verbose)
		printf("%s\t%s\t%s\n", c.core ? c.core->name : "", c.why, feats);
	else
		printf("%s\n", c.core ? c.core->name : "");
	return 0;
}
