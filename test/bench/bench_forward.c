/*
 * The batched forward on several threads (bench_forward.sh): a random model
 * of preset small (vocabularies of 8000), float32 or int8, a batch of 64
 * pairs of 20-40 tokens per side, scored by the forward that splits only its
 * products over the pool (cq_forward: one join per product chunk) and by the
 * forward shared out by pairs (cq_forward_parallel: one join per batch).
 * Prints per batch: wall ms, CPU ms of the process (user, system), and the
 * joins (calls of cq_parallel_run from outside a part, counted by wrapping
 * it at link time: -Wl,--wrap=cq_parallel_run).  Both give the same bits,
 * checked here.  Usage: bench_forward [reps]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/parallel.h"
#include "nn/infer/forward.h"
#include "nn/model/config.h"
#include "nn/model/model.h"

#define PAIRS 64

static long joins;

void		__real_cq_parallel_run(cq_parallel_fn fn, void *arg, int nparts);
void		__wrap_cq_parallel_run(cq_parallel_fn fn, void *arg, int nparts);

void
__wrap_cq_parallel_run(cq_parallel_fn fn, void *arg, int nparts)
{
	if (!cq_parallel_in_part())
		joins++;
	__real_cq_parallel_run(fn, arg, nparts);
}

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void
cpu(double *user, double *sys)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	*user = r.ru_utime.tv_sec + 1e-6 * r.ru_utime.tv_usec;
	*sys = r.ru_stime.tv_sec + 1e-6 * r.ru_stime.tv_usec;
}

static cq_model *
small_model(bool int8)
{
	cq_model_config cfg;
	cq_error	err = {0};
	cq_model   *m;

	if (cq_config_preset("small", 8000, 8000, &cfg, &err) != CQ_OK)
		goto fail;
	if (int8)
		cfg.precision = CQ_PRECISION_INT8;
	if (cq_model_new(&cfg, &m, &err) != CQ_OK)
		goto fail;
	cq_model_init_random(m, 1);
	if (cq_model_pack(m, &err) != CQ_OK || cq_model_compact(m, &err) != CQ_OK)
		goto fail;
	return m;
fail:
	fprintf(stderr, "bench_forward: %s\n", err.msg);
	exit(1);
}

typedef struct run
{
	double		wall,
				user,
				sys;
	long		joins;
	double		sum;
} run;

/* reps batches with threads; parallel: cq_forward_parallel, else cq_forward. */
static run
time_runs(const cq_model *m, const cq_pair *pairs, int threads, bool parallel, int reps)
{
	cq_batch_shape shape;
	cq_error	err = {0};
	size_t		bytes;
	void	   *ws;
	cq_forward_out out;
	run			r = {0};
	double		t0 = 0,
				u0 = 0,
				s0 = 0;

	cq_batch_shape_of(m, pairs, PAIRS, &shape, &err);
	bytes = parallel ? cq_forward_parallel_bytes(&m->cfg, pairs, PAIRS, threads)
		: cq_forward_workspace_bytes(&m->cfg, &shape);
	ws = malloc(bytes);
	out = (cq_forward_out) {
		malloc(4 * shape.tgt_positions), malloc(4 * shape.tgt_positions),
			malloc(4 * shape.tgt_positions), NULL, malloc(8 * PAIRS), malloc(4 * PAIRS)
	};
	cq_parallel_set_threads(threads);
	/* one batch first (touches the workspace, starts the pool), then the timed ones */
	for (int i = -1; i < reps; i++)
	{
		if (i == 0)
		{
			joins = 0;
			cpu(&u0, &s0);
			t0 = now();
		}
		cq_code		st = parallel
			? cq_forward_parallel(m, pairs, PAIRS, NULL, threads, ws, bytes, &out, &err)
			: cq_forward(m, pairs, PAIRS, NULL, ws, bytes, &out, &err);

		if (st != CQ_OK)
		{
			fprintf(stderr, "bench_forward: %s\n", err.msg);
			exit(1);
		}
	}
	r.wall = (now() - t0) / reps;
	cpu(&r.user, &r.sys);
	r.user = (r.user - u0) / reps;
	r.sys = (r.sys - s0) / reps;
	r.joins = joins / reps;
	for (int i = 0; i < PAIRS; i++)
		r.sum += out.sent_logp[i];
	free(ws);
	return r;
}

int
main(int argc, char **argv)
{
	int			reps = argc > 1 ? atoi(argv[1]) : 10;
	cq_pair		pairs[PAIRS];
	unsigned	x = 3;

	for (int i = 0; i < PAIRS; i++)
	{
		int			ls = 20 + (int) ((x = x * 1103515245u + 12345u) >> 16) % 21,
					lt = 20 + (int) ((x = x * 1103515245u + 12345u) >> 16) % 21;
		int32_t    *s = malloc(4 * ls),
				   *t = malloc(4 * lt);

		for (int j = 0; j < ls; j++)
			s[j] = 4 + (int32_t) (((x = x * 1103515245u + 12345u) >> 16) % 7990);
		for (int j = 0; j < lt; j++)
			t[j] = 4 + (int32_t) (((x = x * 1103515245u + 12345u) >> 16) % 7990);
		pairs[i] = (cq_pair) {s, ls, t, lt, (uint64_t) i + 1};
	}
	printf("| precision | forward | threads | wall ms per batch | user ms | sys ms | joins | pairs/s |\n");
	printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (int int8 = 0; int8 <= 1; int8++)
	{
		cq_model   *m = small_model(int8);
		run			one = time_runs(m, pairs, 1, false, reps);

		for (int variant = 0; variant < 3; variant++)
		{
			bool		parallel = variant == 2;
			int			threads = variant == 0 ? 1 : 2;
			run			r = variant == 0 ? one : time_runs(m, pairs, threads, parallel, reps);

			if (r.sum != one.sum)
			{
				fprintf(stderr, "bench_forward: %d threads gave other bits\n", threads);
				return 1;
			}
			printf("| %s | %s | %d | %.1f | %.1f | %.1f | %ld | %.1f |\n", int8 ? "int8" : "float32",
				   parallel ? "by pairs" : "products split", threads, 1e3 * r.wall, 1e3 * r.user,
				   1e3 * r.sys, r.joins, PAIRS / r.wall);
		}
		cq_model_free(m);
	}
	return 0;
}
