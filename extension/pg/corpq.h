/*
 * Declarations shared by the PostgreSQL glue (extension/pg/).
 */
#ifndef CORPQ_PG_H
#define CORPQ_PG_H

#include "postgres.h"

/* GUC corpq.threads: OpenBLAS threads in this backend or worker. */
extern int	corpq_threads;

/*
 * Load OpenBLAS on first use in this process and bind the core's GEMM to it.
 * Raises ERROR in the postmaster, which must never start BLAS threads.
 */
void		corpq_blas_ensure(void);

/* Apply corpq.threads to an already loaded OpenBLAS (GUC assign hook). */
void		corpq_blas_set_threads(int n);

/* GUC corpq.blas_core: "auto" or the OpenBLAS core to load (blas_loader.c). */
extern char *corpq_blas_core;
void		corpq_blas_define_gucs(void);

/* Route the core's allocations to palloc in CurrentMemoryContext. */
void		corpq_install_allocator(void);

#endif
