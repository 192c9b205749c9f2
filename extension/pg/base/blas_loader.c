/*
 * Lazy loading of OpenBLAS, with the kernels chosen by corpq.
 *
 * OpenBLAS starts its thread pool in a library constructor.  corpq.so does not
 * link it, so loading corpq (even from shared_preload_libraries) starts no
 * thread; the first model computation in a backend or worker dlopen()s it with
 * OPENBLAS_NUM_THREADS set from corpq.threads, then binds the core's GEMM.
 *
 * The constructor also picks its kernels (the "core") from cpuid, and Debian's
 * OpenBLAS 0.3.21 falls back to Prescott (SSE3) on CPUs it does not know,
 * a fifth of the machine.  So before dlopen corpq sets OPENBLAS_CORETYPE by
 * the rule of common/cpu.h, unless the user chose: corpq.blas_core, else
 * OPENBLAS_CORETYPE in the server's environment.  A chosen core must be one
 * corpq knows and this CPU can execute (never an illegal instruction).
 *
 * Only training multiplies with OpenBLAS; inference runs nn/ops/rowgemm.c, whose
 * results do not depend on the core, on the core's own pool of threads
 * (common/parallel.h), whose size corpq_set_threads (threads.c) sets with
 * OpenBLAS's.
 */
#include "postgres.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "common/cpu.h"
#include "common/parallel.h"
#include "nn/ops/blas.h"
#include "nn/ops/rowgemm.h"
#include "pg/base/base.h"

/* cblas enums as OpenBLAS defines them; avoids including cblas.h here. */
#define CQ_CBLAS_ROW_MAJOR 101
#define CQ_CBLAS_NO_TRANS 111
#define CQ_CBLAS_TRANS 112

typedef void (*cblas_sgemm_t) (int order, int ta, int tb, int m, int n, int k,
							   float alpha, const float *a, int lda,
							   const float *b, int ldb, float beta,
							   float *c, int ldc);
typedef void (*set_threads_t) (int n);
typedef int (*get_threads_t) (void);
typedef char *(*get_string_t) (void);

static const char *const library_names[] = {"libopenblas.so.0", "libopenblas.so"};

/* GUC corpq.blas_core: "auto" or a core name (canonical spelling). */
char	   *corpq_blas_core = NULL;

static void *blas_handle;
static cblas_sgemm_t dl_sgemm;
static set_threads_t dl_set_threads;
static get_threads_t dl_get_threads;
static get_string_t dl_get_config;
static get_string_t dl_get_corename;
static const char *loaded_name;
static cq_blas_choice loaded_choice;

/*
 * OPENBLAS_CORETYPE as the server's environment gave it: read before this
 * process sets its own, so that the user's choice is told apart from ours.
 */
static const char *
user_coretype(void)
{
	static bool done;
	static char *value;

	if (!done)
	{
		const char *v = getenv("OPENBLAS_CORETYPE");

		value = v ? strdup(v) : NULL;
		done = true;
	}
	return value;
}

static void
sgemm_openblas(bool ta, bool tb, int m, int n, int k, float alpha,
			   const float *a, int lda, const float *b, int ldb,
			   float beta, float *c, int ldc)
{
	dl_sgemm(CQ_CBLAS_ROW_MAJOR, ta ? CQ_CBLAS_TRANS : CQ_CBLAS_NO_TRANS,
			 tb ? CQ_CBLAS_TRANS : CQ_CBLAS_NO_TRANS,
			 m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static char *
valid_names(void)
{
	char		names[256];

	cq_blas_core_names(names, sizeof(names));
	return psprintf("auto, %s", names);
}

/* The core to load; ERROR if the user's choice cannot be honoured. */
static cq_blas_choice
choose_core(void)
{
	cq_cpu_features f = cq_cpu_detect();
	cq_blas_choice c;
	char		feats[256];

	switch (cq_blas_choose(corpq_blas_core, user_coretype(), f, &c))
	{
		case CQ_BLAS_CHOICE_OK:
			break;
		case CQ_BLAS_CHOICE_UNKNOWN:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s \"%s\" is not an OpenBLAS core corpq knows", c.why, c.name),
					 errdetail("Valid names: %s.", valid_names()),
					 errhint("Unset OPENBLAS_CORETYPE in the server's environment, or set corpq.blas_core.")));
			break;
		case CQ_BLAS_CHOICE_UNSUPPORTED:
			cq_cpu_features_format(f, feats, sizeof(feats));
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("OpenBLAS core \"%s\" (from %s) needs %s, which this CPU lacks",
							c.core->name, c.why, cq_cpu_feature_name(c.missing)),
					 errdetail("This CPU has %s.", feats),
					 errhint("Choose an older core, or \"auto\".")));
			break;
	}
	return c;
}

static void
open_library(const cq_blas_choice *c)
{
	char		nthreads[16];

	/* The constructor reads these: start no more threads than configured. */
	snprintf(nthreads, sizeof(nthreads), "%d", corpq_threads);
	setenv("OPENBLAS_NUM_THREADS", nthreads, 1);
	if (c->core)
		setenv("OPENBLAS_CORETYPE", c->core->name, 1);

	for (int i = 0; i < lengthof(library_names) && !blas_handle; i++)
	{
		blas_handle = dlopen(library_names[i], RTLD_NOW | RTLD_LOCAL);
		loaded_name = library_names[i];
	}
	if (!blas_handle)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FILE),
				 errmsg("could not load OpenBLAS: %s", dlerror()),
				 errhint("Install the Debian package libopenblas0-pthread.")));
}

/* OpenBLAS's threads (threads.c calls it whenever the count changes). */
static void
blas_set_threads(int n)
{
	if (dl_set_threads)
		dl_set_threads(n);
}

void
corpq_blas_ensure(void)
{
	cq_blas_choice c;

	if (dl_sgemm)
		return;
	if (IsPostmasterEnvironment && !IsUnderPostmaster)
		elog(ERROR, "corpq must not load OpenBLAS in the postmaster");

	c = choose_core();
	open_library(&c);
	loaded_choice = c;
	dl_sgemm = (cblas_sgemm_t) dlsym(blas_handle, "cblas_sgemm");
	dl_set_threads = (set_threads_t) dlsym(blas_handle, "openblas_set_num_threads");
	dl_get_threads = (get_threads_t) dlsym(blas_handle, "openblas_get_num_threads");
	dl_get_config = (get_string_t) dlsym(blas_handle, "openblas_get_config");
	dl_get_corename = (get_string_t) dlsym(blas_handle, "openblas_get_corename");
	if (!dl_sgemm)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("library \"%s\" has no cblas_sgemm", loaded_name)));
	corpq_threads_listen(blas_set_threads);
	corpq_set_threads(corpq_threads);
	cq_blas_bind(sgemm_openblas);
}


/* The core OpenBLAS runs in this process (after loading). */
static const char *
core_in_use(void)
{
	return dl_get_corename ? dl_get_corename() : loaded_choice.core ? loaded_choice.core->name : "unknown";
}

/* The OpenBLAS core this process runs, loading OpenBLAS if needed (version.c). */
const char *
corpq_blas_core_name(void)
{
	corpq_blas_ensure();
	return core_in_use();
}

/*
 * corpq.blas_core: a known name this CPU can execute; once OpenBLAS is loaded
 * in this process only a value that keeps its core (the kernels cannot be
 * swapped under a running library).
 */
static bool
check_blas_core(char **newval, void **extra, GucSource source)
{
	cq_cpu_features f = cq_cpu_detect();
	cq_blas_choice c;
	char	   *canon;
	char		feats[256];

	switch (cq_blas_choose(*newval, NULL, f, &c))
	{
		case CQ_BLAS_CHOICE_OK:
			break;
		case CQ_BLAS_CHOICE_UNKNOWN:
			GUC_check_errdetail("Valid names: %s.", valid_names());
			return false;
		case CQ_BLAS_CHOICE_UNSUPPORTED:
			cq_cpu_features_format(f, feats, sizeof(feats));
			GUC_check_errcode(ERRCODE_FEATURE_NOT_SUPPORTED);
			GUC_check_errmsg("OpenBLAS core \"%s\" needs %s, which this CPU lacks",
							 c.core->name, cq_cpu_feature_name(c.missing));
			GUC_check_errdetail("This CPU has %s.", feats);
			return false;
	}
	if (blas_handle && source == PGC_S_SESSION &&
		cq_blas_choose(*newval, user_coretype(), f, &c) == CQ_BLAS_CHOICE_OK &&
		c.core && pg_strcasecmp(c.core->name, core_in_use()) != 0)
	{
		GUC_check_errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM);
		GUC_check_errmsg("corpq.blas_core cannot change after OpenBLAS is loaded in this process");
		GUC_check_errdetail("This process runs the %s core.", core_in_use());
		GUC_check_errhint("Set it before the first model computation of a session, e.g. with ALTER ROLE ... SET or PGOPTIONS.");
		return false;
	}
	/* the table's spelling, so that SHOW and blas_info() agree */
	canon = strdup(c.source == CQ_BLAS_FROM_SETTING ? c.core->name : "auto");
	if (!canon)
		return false;
	free(*newval);
	*newval = canon;
	return true;
}

/* The library's file, symlinks (Debian's alternatives) resolved. */
static char *
library_file(void)
{
	Dl_info		info;
	char		path[PATH_MAX];

	if (dladdr((void *) dl_sgemm, &info) && info.dli_fname)
		return realpath(info.dli_fname, path) ? pstrdup(path) : pstrdup(info.dli_fname);
	return pstrdup(loaded_name);
}

PG_FUNCTION_INFO_V1(corpq_blas_info);

/*
 * corpq.blas_info(): the OpenBLAS this process uses (loading it if needed),
 * which core and why, its threads, and the inference kernel's variant.
 */
Datum
corpq_blas_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false};
	const char *core;
	char	   *reason;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	corpq_blas_ensure();
	core = core_in_use();
	reason = loaded_choice.core && pg_strcasecmp(loaded_choice.core->name, core) != 0 ?
		psprintf("%s (asked for %s, OpenBLAS chose %s)", loaded_choice.why,
				 loaded_choice.core->name, core) :
		pstrdup(loaded_choice.why);
	values[0] = CStringGetTextDatum(library_file());
	values[1] = CStringGetTextDatum(dl_get_config ? dl_get_config() : "unknown");
	values[2] = CStringGetTextDatum(core);
	values[3] = CStringGetTextDatum(reason);
	values[4] = Int32GetDatum(dl_get_threads ? dl_get_threads() : corpq_threads);
	values[5] = CStringGetTextDatum(cq_rowgemm_isa_name(cq_rowgemm_machine()));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* corpq.blas_core (corpq_base_init). */
void
corpq_blas_define_setting(void)
{
	DefineCustomStringVariable("corpq.blas_core",
							   "OpenBLAS kernels (core type) corpq loads in each backend or worker.",
							   "\"auto\" picks them from the CPU's features unless OPENBLAS_CORETYPE is set; "
							   "a name forces that core.  Only training multiplies with OpenBLAS.",
							   &corpq_blas_core,
							   "auto",
							   PGC_USERSET, 0,
							   check_blas_core, NULL, NULL);
}
