/*
 * base/: what every subsystem of the glue shares.  base/ includes no other
 * extension/pg header; subsystems depend on it, never the reverse.
 *
 *   base.h          this file: the core's allocator (allocator.c), the
 *                   thread settings (threads.c), the lazy OpenBLAS loader
 *                   with corpq.blas_core (blas_loader.c) and corpq.version()
 *                   (version.c)
 *   options.h       the table-driven jsonb option parser
 *   corpus_query.h  checking and streaming a user's corpus query
 *   errors.h        a core error (common/error.h) as an ERROR
 *   internal_sql.h  prepared, schema-qualified internal SQL
 */
#ifndef CORPQ_PG_H
#define CORPQ_PG_H

#include "postgres.h"

#include "utils/guc.h"

/*
 * GUC corpq.threads: threads in this backend or worker, at most
 * corpq.max_threads (refused above it when a role sets it, capped at use).
 */
extern int	corpq_threads;

/*
 * GUC corpq.max_threads (superuser): the most threads any session or job
 * uses; by default the CPUs available to the server.
 */
extern int	corpq_max_threads;

/*
 * Whether a GUC's superuser ceiling (corpq.max_threads for corpq.threads,
 * corpq.max_model_cache_mb for corpq.model_cache_mb) refuses a value set from
 * source, in its check hook: values a role sets, not the server's
 * configuration files (applied in any order) nor ALTER ROLE's validation.
 * Whatever was set, the ceiling also holds at use.
 */
bool		corpq_guc_ceiling_applies(GucSource source);

/*
 * GUC corpq.job_threads (superuser): threads of a background job; 0 = the
 * CPUs available to the server.  corpq_job_threads_for(requested) is what a
 * job runs with: the job's own "threads" option (<= 0: unset) capped by it
 * and by corpq.max_threads.
 */
extern int	corpq_job_threads;
int			corpq_job_threads_for(int requested);

/*
 * Load OpenBLAS on first use in this process and bind the core's GEMM to it.
 * Raises ERROR in the postmaster, which must never start BLAS threads.
 */
void		corpq_blas_ensure(void);

/*
 * Threads of this process's computations: OpenBLAS's (training's products;
 * applied once it is loaded, and at loading) and the core's pool
 * (common/parallel.h: the inference kernels), at most corpq.max_threads.
 * corpq.threads' assign hook, and a job's threads (threads.c).
 */
void		corpq_set_threads(int n);

/*
 * The one other taker of the thread count (OpenBLAS, once blas_loader.c has
 * loaded it): corpq_set_threads calls it with every new count.
 */
void		corpq_threads_listen(void (*listener) (int n));

/* Define corpq.max_threads, corpq.threads and corpq.job_threads (threads.c). */
void		corpq_threads_define_settings(void);

/* The OpenBLAS core this process runs; loads OpenBLAS if needed. */
const char *corpq_blas_core_name(void);

/* GUC corpq.blas_core: "auto" or the OpenBLAS core to load (blas_loader.c). */
extern char *corpq_blas_core;

/* Define corpq.blas_core (blas_loader.c), for corpq_base_init. */
void		corpq_blas_define_setting(void);

/*
 * _PG_init's call for base/: define corpq.max_threads, corpq.threads and
 * corpq.job_threads, and corpq.blas_core, and install the core's allocator
 * (base_init.c).
 */
void		corpq_base_init(void);

/*
 * Route the core's allocations to palloc in CurrentMemoryContext and its
 * interrupt polls to CHECK_FOR_INTERRUPTS() (allocator.c).
 */
void		corpq_install_allocator(void);

/*
 * Bound what the core allocates from now until corpq_core_budget_end() to
 * mb megabytes (setting names the GUC that says so): past it the allocation
 * hook raises "<what> needs more than <setting> (<mb> MB) of work space"
 * before taking the memory.  One budget at a time, in the backend's own
 * thread; the caller ends it in PG_FINALLY (an ERROR leaves it set).
 */
void		corpq_core_budget_begin(int mb, const char *setting, const char *what);
void		corpq_core_budget_end(void);

/* The version of the extension this library was built as (version.c). */
const char *corpq_library_version(void);

#endif
