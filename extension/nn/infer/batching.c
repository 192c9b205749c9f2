#include "nn/infer/batching.h"

#include <stdlib.h>

#include "common/mem.h"
#include "common/rng.h"

typedef struct entry
{
	int			len;
	uint32_t	tie;
	long		idx;
} entry;

static int
by_len(const void *a, const void *b)
{
	const entry *x = a,
			   *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	if (x->tie != y->tie)
		return x->tie < y->tie ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static uint64_t
draw(cq_philox_key key, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	cq_philox_ctr r = cq_philox4x32((cq_philox_ctr) {{a, b, c, d}}, key);

	return ((uint64_t) r.c[0] << 32) | r.c[1];
}

void
cq_batcher_free(cq_batcher *b)
{
	if (!b)
		return;
	cq_free(b->order);
	cq_free(b->starts);
	cq_free(b->perm);
	cq_free(b);
}

cq_code
cq_batcher_new(const int *src_len, const int *tgt_len, long n, int max_tokens,
			   int max_positions, uint64_t seed, cq_batcher **out, cq_error *err)
{
	cq_philox_key key = cq_philox_key_from_seed(cq_mix64(seed ^ 0xBA7C4E5ULL));
	cq_batcher *b;
	entry	   *e;
	long		k = 0;

	*out = NULL;
	if (n < 0 || (n > 0 && (!src_len || !tgt_len)) || max_tokens < 1 || max_positions < 1)
		return cq_fail(err, CQ_EINVAL, "batching needs lengths, a positive max_tokens and max_positions");
	b = cq_alloc0(sizeof(*b));
	e = cq_alloc(sizeof(entry) * (n > 0 ? n : 1));
	if (!b || !e)
		goto oom;
	for (long i = 0; i < n; i++)
	{
		int			len = (src_len[i] > tgt_len[i] ? src_len[i] : tgt_len[i]) + 1;

		if (src_len[i] < 0 || tgt_len[i] < 0 || src_len[i] + 1 > max_positions ||
			tgt_len[i] + 1 > max_positions || len > max_tokens)
			continue;
		e[k++] = (entry) {len, (uint32_t) draw(key, (uint32_t) i, (uint32_t) (i >> 32), 0, 0), i};
	}
	qsort(e, k, sizeof(entry), by_len);
	b->order = cq_alloc(sizeof(long) * (k > 0 ? k : 1));
	b->starts = cq_alloc(sizeof(long) * (k + 1));
	if (!b->order || !b->starts)
		goto oom;
	for (long i = 0, count = 0; i < k; i++)
	{
		/* sorted ascending: the newcomer is the batch's longest */
		if (count > 0 && (count + 1) * (long) e[i].len > max_tokens)
			count = 0;
		if (count == 0)
			b->starts[b->n_batches++] = i;
		b->order[i] = e[i].idx;
		count++;
	}
	b->starts[b->n_batches] = k;
	b->perm = cq_alloc(sizeof(long) * (b->n_batches > 0 ? b->n_batches : 1));
	if (!b->perm)
		goto oom;
	b->n_pairs = n;
	b->n_kept = k;
	b->n_skipped = n - k;
	b->max_tokens = max_tokens;
	b->seed = seed;
	b->perm_epoch = -1;
	cq_free(e);
	*out = b;
	return CQ_OK;
oom:
	cq_free(e);
	cq_batcher_free(b);
	return cq_fail(err, CQ_ENOMEM, "out of memory batching %ld pairs", n);
}

/* Fisher-Yates from Philox keyed by (seed, epoch). */
static void
shuffle(cq_batcher *b, int64_t epoch)
{
	cq_philox_key key = cq_philox_key_from_seed(cq_mix64(b->seed ^ cq_mix64((uint64_t) epoch)));

	for (long i = 0; i < b->n_batches; i++)
		b->perm[i] = i;
	for (long j = b->n_batches - 1; j > 0; j--)
	{
		long		r = (long) (draw(key, (uint32_t) j, (uint32_t) (j >> 32), 1, 0) %
								(uint64_t) (j + 1)),
					t = b->perm[j];

		b->perm[j] = b->perm[r];
		b->perm[r] = t;
	}
	b->perm_epoch = epoch;
}

cq_code
cq_batcher_batch(cq_batcher *b, int64_t epoch, long index, const long **pairs, int *n,
				 cq_error *err)
{
	long		which;

	if (epoch < 0 || index < 0 || index >= b->n_batches)
		return cq_fail(err, CQ_EINVAL, "batch %ld of epoch %lld does not exist (%ld batches per epoch)",
						  index, (long long) epoch, b->n_batches);
	if (b->perm_epoch != epoch)
		shuffle(b, epoch);
	which = b->perm[index];
	*pairs = b->order + b->starts[which];
	*n = (int) (b->starts[which + 1] - b->starts[which]);
	return CQ_OK;
}
