/*
 * base/'s init, called by _PG_init (module.c): its settings and the core's
 * host hooks.
 */
#include "postgres.h"

#include "pg/base/base.h"

void
corpq_base_init(void)
{
	corpq_threads_define_settings();
	corpq_blas_define_setting();
	corpq_install_allocator();
}
