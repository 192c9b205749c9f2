/*
 * Lazy loading of OpenBLAS.
 *
 * OpenBLAS starts its thread pool in a library constructor.  corpq.so does not
 * link it, so loading corpq (even from shared_preload_libraries) starts no
 * thread; the first model computation in a backend or worker dlopen()s it with
 * OPENBLAS_NUM_THREADS set from corpq.threads, then binds the core's GEMM.
 */
#include "postgres.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "nn/blas.h"
#include "pg/corpq.h"

/* cblas enums as OpenBLAS defines them; avoids including cblas.h here. */
#define CQ_CBLAS_ROW_MAJOR 101
#define CQ_CBLAS_NO_TRANS 111
#define CQ_CBLAS_TRANS 112

typedef void (*cblas_sgemm_t) (int order, int ta, int tb, int m, int n, int k,
							   float alpha, const float *a, int lda,
							   const float *b, int ldb, float beta,
							   float *c, int ldc);
typedef void (*set_threads_t) (int n);
typedef char *(*get_config_t) (void);

static const char *const library_names[] = {"libopenblas.so.0", "libopenblas.so"};

static void *blas_handle;
static cblas_sgemm_t dl_sgemm;
static set_threads_t dl_set_threads;
static get_config_t dl_get_config;
static const char *loaded_name;

static void
sgemm_openblas(bool ta, bool tb, int m, int n, int k, float alpha,
			   const float *a, int lda, const float *b, int ldb,
			   float beta, float *c, int ldc)
{
	dl_sgemm(CQ_CBLAS_ROW_MAJOR, ta ? CQ_CBLAS_TRANS : CQ_CBLAS_NO_TRANS,
			 tb ? CQ_CBLAS_TRANS : CQ_CBLAS_NO_TRANS,
			 m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void
open_library(void)
{
	char		nthreads[16];

	/* The constructor reads this: start no more threads than configured. */
	snprintf(nthreads, sizeof(nthreads), "%d", corpq_threads);
	setenv("OPENBLAS_NUM_THREADS", nthreads, 1);

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

void
corpq_blas_ensure(void)
{
	if (dl_sgemm)
		return;
	if (IsPostmasterEnvironment && !IsUnderPostmaster)
		elog(ERROR, "corpq must not load OpenBLAS in the postmaster");

	open_library();
	dl_sgemm = (cblas_sgemm_t) dlsym(blas_handle, "cblas_sgemm");
	dl_set_threads = (set_threads_t) dlsym(blas_handle, "openblas_set_num_threads");
	dl_get_config = (get_config_t) dlsym(blas_handle, "openblas_get_config");
	if (!dl_sgemm)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("library \"%s\" has no cblas_sgemm", loaded_name)));
	corpq_blas_set_threads(corpq_threads);
	cq_blas_bind(sgemm_openblas);
}

void
corpq_blas_set_threads(int n)
{
	if (dl_set_threads)
		dl_set_threads(n);
}

PG_FUNCTION_INFO_V1(corpq_blas_info);

/*
 * corpq.blas_info(): which BLAS this backend uses and with how many threads;
 * loads it if needed.
 */
Datum
corpq_blas_info(PG_FUNCTION_ARGS)
{
	corpq_blas_ensure();
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("%s (%s), threads=%d",
											  loaded_name,
											  dl_get_config ? dl_get_config() : "unknown config",
											  corpq_threads)));
}
