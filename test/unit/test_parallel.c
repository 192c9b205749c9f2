/*
 * The thread pool (common/parallel.h): every part runs exactly once per call,
 * over many calls and thread counts; a call from inside a part runs inline;
 * threads 1 runs on the caller; parts run on more than one thread when asked.
 */
#include "unit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "common/interrupt.h"
#include "common/parallel.h"

#define MAX_PARTS 64

typedef struct tally
{
	atomic_int	runs[MAX_PARTS];
	atomic_int	bad_nparts;
	pthread_t	caller;
	atomic_int	off_caller;		/* parts run on another thread */
	int			expect_nparts;
} tally;

static void
count_part(void *arg, int part, int nparts)
{
	tally	   *t = arg;

	if (nparts != t->expect_nparts || part < 0 || part >= nparts)
		atomic_fetch_add(&t->bad_nparts, 1);
	else
		atomic_fetch_add(&t->runs[part], 1);
	if (!pthread_equal(pthread_self(), t->caller))
		atomic_fetch_add(&t->off_caller, 1);
}

TEST(parallel_every_part_once)
{
	int			saved = cq_parallel_threads();
	int			off_caller = 0;

	for (int threads = 1; threads <= 4; threads++)
	{
		cq_parallel_set_threads(threads);
		for (int call = 0; call < 2000; call++)
		{
			tally		t = {.caller = pthread_self(), .expect_nparts = 1 + call % MAX_PARTS};

			cq_parallel_run(count_part, &t, t.expect_nparts);
			CHECK_INT_EQ(atomic_load(&t.bad_nparts), 0);
			for (int p = 0; p < MAX_PARTS; p++)
				if (atomic_load(&t.runs[p]) != (p < t.expect_nparts ? 1 : 0))
				{
					CHECK_INT_EQ(atomic_load(&t.runs[p]), p < t.expect_nparts ? 1 : 0);
					break;
				}
			if (threads == 1)
				CHECK_INT_EQ(atomic_load(&t.off_caller), 0);
			else
				off_caller += atomic_load(&t.off_caller);
		}
	}
	/*
	 * How many of those parts the workers took depends on the scheduler (on a
	 * loaded machine the caller may run them all): that they take parts at
	 * all is parallel_workers_take_parts'.
	 */
	(void) off_caller;
	cq_parallel_set_threads(saved);
}

/* Part 0 waits (up to 30 s) until part 1 has started: only a worker can start it. */
typedef struct rendezvous
{
	atomic_int	started[2];
	pthread_t	caller;
	atomic_int	off_caller;
} rendezvous;

static void
meet_part(void *arg, int part, int nparts)
{
	rendezvous *r = arg;

	atomic_store(&r->started[part], 1);
	if (!pthread_equal(pthread_self(), r->caller))
		atomic_fetch_add(&r->off_caller, 1);
	if (part == 0)
	{
		struct timespec t0,
					now,
					us = {0, 1000};

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
		{
			nanosleep(&us, NULL);
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while (!atomic_load(&r->started[1]) && now.tv_sec - t0.tv_sec < 30);
	}
}

TEST(parallel_workers_take_parts)
{
	int			saved = cq_parallel_threads();
	rendezvous	r = {.caller = pthread_self()};

	/*
	 * Whoever runs part 0 waits for part 1 to start, so part 1 runs on
	 * another thread than part 0's: a worker took a part.  A state waited
	 * on, not a time: a loaded machine only makes it slower.
	 */
	cq_parallel_set_threads(2);
	cq_parallel_run(meet_part, &r, 2);
	CHECK(atomic_load(&r.started[0]) && atomic_load(&r.started[1]));
	CHECK(atomic_load(&r.off_caller) >= 1);
	cq_parallel_set_threads(saved);
}

/* A part that calls the pool again: the inner call runs inline, no deadlock. */
static void
nested_part(void *arg, int part, int nparts)
{
	tally	   *inner = (tally *) arg + 1 + part;

	inner->caller = pthread_self();
	inner->expect_nparts = 3;
	cq_parallel_run(count_part, inner, 3);
}

TEST(parallel_nested_runs_inline)
{
	int			saved = cq_parallel_threads();
	tally		t[1 + 4];

	memset(t, 0, sizeof(t));

	cq_parallel_set_threads(4);
	cq_parallel_run(nested_part, t, 4);
	for (int i = 1; i <= 4; i++)
	{
		CHECK_INT_EQ(atomic_load(&t[i].off_caller), 0);
		for (int p = 0; p < 3; p++)
			CHECK_INT_EQ(atomic_load(&t[i].runs[p]), 1);
	}
	cq_parallel_set_threads(saved);
}

TEST(parallel_threads_clamped)
{
	int			saved = cq_parallel_threads();

	cq_parallel_set_threads(0);
	CHECK_INT_EQ(cq_parallel_threads(), 1);
	cq_parallel_set_threads(100000);
	CHECK_INT_EQ(cq_parallel_threads(), 256);
	cq_parallel_set_threads(saved);
}

/* cq_poll inside a part, on any thread, does not call the host's hook. */
static atomic_int hook_calls;

static void
count_hook(void)
{
	atomic_fetch_add(&hook_calls, 1);
}

static void
polling_part(void *arg, int part, int nparts)
{
	CHECK(cq_parallel_in_part());
	cq_poll();
}

TEST(parallel_no_poll_inside_parts)
{
	int			saved = cq_parallel_threads();

	cq_set_interrupt_hook(count_hook);
	for (int threads = 1; threads <= 3; threads++)
	{
		cq_parallel_set_threads(threads);
		atomic_store(&hook_calls, 0);
		CHECK(!cq_parallel_in_part());
		cq_poll();
		CHECK_INT_EQ(atomic_load(&hook_calls), 1);
		for (int call = 0; call < 100; call++)
			cq_parallel_run(polling_part, NULL, 4);
		CHECK_INT_EQ(atomic_load(&hook_calls), 1);
		CHECK(!cq_parallel_in_part());
	}
	cq_set_interrupt_hook(NULL);
	cq_parallel_set_threads(saved);
}
