/*
 * The per-query scorer behind the SQL scoring functions: name resolution
 * once per query, vocabularies, encoding with length checks, batched forward
 * passes and Monte Carlo dropout uncertainty.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "common/parallel.h"
#include "pg/base/errors.h"
#include "pg/base/base.h"
#include "pg/model/model_score.h"

CorpqScorer *
corpq_scorer_create(MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "corpq scorer", ALLOCSET_DEFAULT_SIZES);
	CorpqScorer *s = MemoryContextAllocZero(cxt, sizeof(CorpqScorer));

	s->cxt = cxt;
	return s;
}

CorpqScorer *
corpq_scorer_cached(FunctionCallInfo fcinfo)
{
	if (fcinfo->flinfo->fn_extra == NULL)
		fcinfo->flinfo->fn_extra = corpq_scorer_create(fcinfo->flinfo->fn_mcxt);
	return fcinfo->flinfo->fn_extra;
}

static void
free_vocabs(CorpqScorer *s)
{
	if (s->tgt_vocab != s->src_vocab)
		corpq_vocab_free(s->tgt_vocab);
	corpq_vocab_free(s->src_vocab);
	s->src_vocab = s->tgt_vocab = NULL;
}

void
corpq_scorer_use(CorpqScorer *s, const char *spec, bool pinned)
{
	ListCell   *lc;
	CorpqResolved *r = NULL;
	MemoryContext old;
	const cq_model *m;

	if (s->cur != NULL && strcmp(s->cur->spec, spec) == 0)
		return;
	foreach(lc, s->resolved)
		if (strcmp(((CorpqResolved *) lfirst(lc))->spec, spec) == 0)
			r = lfirst(lc);
	if (r == NULL)
	{
		old = MemoryContextSwitchTo(s->cxt);
		r = palloc0(sizeof(CorpqResolved));
		corpq_model_resolve(spec, pinned, &r->ref);
		r->spec = pstrdup(spec);
		s->resolved = lappend(s->resolved, r);
		MemoryContextSwitchTo(old);
	}
	if (s->src_vocab == NULL || s->cur == NULL ||
		strcmp(s->cur->ref.src_vocab, r->ref.src_vocab) != 0 ||
		strcmp(s->cur->ref.tgt_vocab, r->ref.tgt_vocab) != 0)
	{
		s->cur = NULL;			/* no current model until both are loaded */
		free_vocabs(s);
		s->src_vocab = corpq_vocab_load(r->ref.src_vocab, s->cxt);
		s->tgt_vocab = strcmp(r->ref.src_vocab, r->ref.tgt_vocab) == 0 ? s->src_vocab
			: corpq_vocab_load(r->ref.tgt_vocab, s->cxt);
	}
	m = corpq_model_get(&r->ref);
	s->cfg = m->cfg;
	s->cur = r;
}

static uint64
mix(uint64 h, uint64 v)
{
	/* splitmix64 finaliser over the running value */
	h ^= v + UINT64CONST(0x9E3779B97F4A7C15) + (h << 6) + (h >> 2);
	h ^= h >> 30;
	h *= UINT64CONST(0xBF58476D1CE4E5B9);
	h ^= h >> 27;
	h *= UINT64CONST(0x94D049BB133111EB);
	return h ^ (h >> 31);
}

uint64
corpq_ids_key(uint64 h, const int32 *ids, int n)
{
	h = mix(h, (uint64) n);
	for (int i = 0; i < n; i++)
		h = mix(h, (uint64) ids[i]);
	return h;
}

void
corpq_scorer_check_length(CorpqScorer *s, const char *side, int n)
{
	if (n > s->cfg.max_positions - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s sentence has %d tokens, model \"%s\" accepts at most %d",
						side, n, s->cur->spec, s->cfg.max_positions - 1),
				 errhint("The model's max_positions is %d, </s> included; split longer sentences or filter them out.",
						 s->cfg.max_positions)));
}

const char *const corpq_too_long_names[] = {"null", "error", NULL};

CorpqTooLong
corpq_too_long_from_name(const char *name)
{
	for (int i = 0; corpq_too_long_names[i]; i++)
		if (strcmp(name, corpq_too_long_names[i]) == 0)
			return (CorpqTooLong) i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid on_too_long \"%s\"", name),
			 errdetail("Valid values: null (a pair longer than the model accepts scores NULL), error.")));
	pg_unreachable();
}

CorpqTooLong
corpq_too_long_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_NARGS() <= argno)
		return CORPQ_TOO_LONG_NULL;
	return corpq_too_long_from_name(text_to_cstring(PG_GETARG_TEXT_PP(argno)));
}

/* Whether n tokens fit a side; false or an ERROR (on_too_long) if not. */
static bool
side_fits(CorpqScorer *s, const char *side, int n, CorpqTooLong on_too_long)
{
	if (n <= s->cfg.max_positions - 1)
		return true;
	if (on_too_long == CORPQ_TOO_LONG_ERROR)
		corpq_scorer_check_length(s, side, n);
	return false;
}

bool
corpq_scorer_encode(CorpqScorer *s, const char *src, int src_len,
					const char *tgt, int tgt_len, CorpqTooLong on_too_long, cq_pair *p)
{
	memset(p, 0, sizeof(*p));
	p->src = corpq_vocab_encode_text(s->src_vocab, src, src_len, &p->src_len);
	if (!side_fits(s, "source", p->src_len, on_too_long))
	{
		pfree((void *) p->src);
		memset(p, 0, sizeof(*p));
		return false;
	}
	p->tgt = corpq_vocab_encode_text(s->tgt_vocab, tgt, tgt_len, &p->tgt_len);
	if (!side_fits(s, "target", p->tgt_len, on_too_long))
	{
		pfree((void *) p->src);
		pfree((void *) p->tgt);
		memset(p, 0, sizeof(*p));
		return false;
	}
	p->key = corpq_ids_key(corpq_ids_key(0, p->src, p->src_len), p->tgt, p->tgt_len);
	return true;
}

/* Grow the output arrays to rows positions and pairs sentences. */
static void
ensure_outputs(CorpqScorer *s, long rows, int pairs)
{
	if (rows > s->out_rows)
	{
		long		n = Max(rows, 2 * s->out_rows);

		if (s->out.logp)
		{
			pfree(s->out.logp);
			pfree(s->out.p_max);
			pfree(s->out.entropy);
			pfree(s->out.argmax);
		}
		s->out.logp = MemoryContextAllocHuge(s->cxt, n * sizeof(float));
		s->out.p_max = MemoryContextAllocHuge(s->cxt, n * sizeof(float));
		s->out.entropy = MemoryContextAllocHuge(s->cxt, n * sizeof(float));
		s->out.argmax = MemoryContextAllocHuge(s->cxt, n * sizeof(int32));
		s->out_rows = n;
	}
	if (pairs > s->out_pairs)
	{
		int			n = Max(pairs, 2 * s->out_pairs);

		if (s->out.sent_logp)
		{
			pfree(s->out.sent_logp);
			pfree(s->out.sent_count);
		}
		s->out.sent_logp = MemoryContextAlloc(s->cxt, n * sizeof(double));
		s->out.sent_count = MemoryContextAlloc(s->cxt, n * sizeof(int));
		s->out_pairs = n;
	}
}

int
corpq_scorer_batch_cut(const CorpqScorer *s, const cq_pair *const *order, int m, int max_n,
					   Size extra_per_target)
{
	Size		limit = corpq_batch_bytes_limit();
	cq_batch_shape shape = {0};
	int			nb;

	for (nb = 0; nb < m && nb < max_n; nb++)
	{
		const cq_pair *p = order[nb];
		cq_batch_shape next = shape;
		Size		bytes;

		next.n_pairs++;
		next.src_positions += p->src_len + 1;
		next.tgt_positions += p->tgt_len + 1;
		next.max_src = Max(next.max_src, p->src_len + 1);
		next.max_tgt = Max(next.max_tgt, p->tgt_len + 1);
		if (next.src_positions > CQ_MAX_BATCH_POSITIONS || next.tgt_positions > CQ_MAX_BATCH_POSITIONS)
			break;
		bytes = cq_forward_workspace_bytes(&s->cfg, &next) +
			(Size) next.tgt_positions * (3 * sizeof(float) + sizeof(int32) + extra_per_target) +
			(Size) next.n_pairs * (sizeof(double) + sizeof(int));
		if (bytes > limit)
		{
			if (nb == 0)
				corpq_batch_too_large(1, "sentence pair", bytes);
			break;
		}
		shape = next;
	}
	return Max(nb, 1);
}

void
corpq_scorer_forward(CorpqScorer *s, const cq_pair *pairs, int n, const cq_dropout *dropout)
{
	const cq_model *m;
	cq_batch_shape shape;
	cq_error	err = {0};
	cq_code		st;
	Size		bytes;
	int			threads = cq_parallel_threads();

	CHECK_FOR_INTERRUPTS();
	corpq_blas_ensure();
	/* looked up on every call: anything run since may have evicted it */
	m = corpq_model_get(&s->cur->ref);
	st = cq_batch_shape_of(m, pairs, n, &shape, &err);
	if (st != CQ_OK)
		corpq_core_error(&err, NULL, "could not score sentence pairs");
	/*
	 * On several threads the pairs go to the pool in parts, each with a
	 * workspace of its own; the same bits on one thread, which needs less
	 * (batched callers cut their batches to fit that, score_batch.c).
	 */
	bytes = threads > 1 ? cq_forward_parallel_bytes(&m->cfg, pairs, n, threads) : 0;
	if (threads <= 1 || bytes > corpq_batch_bytes_limit())
	{
		threads = 1;
		bytes = cq_forward_workspace_bytes(&m->cfg, &shape);
	}
	if (bytes > corpq_batch_bytes_limit())
		corpq_batch_too_large(n, "sentence pair", bytes);
	if (bytes > s->ws_bytes)
	{
		if (s->ws)
			pfree(s->ws);
		s->ws = NULL;
		s->ws = MemoryContextAllocHuge(s->cxt, bytes);
		s->ws_bytes = bytes;
	}
	ensure_outputs(s, shape.tgt_positions, n);
	st = cq_forward_parallel(m, pairs, n, dropout, threads, s->ws, s->ws_bytes, &s->out, &err);
	if (st != CQ_OK)
		corpq_core_error(&err, NULL, "could not score sentence pairs");
}

cq_uncertainty
corpq_measure_from_name(const char *name)
{
	cq_uncertainty u;
	cq_error err = {0};

	if (cq_uncertainty_from_name(name, &u, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "invalid uncertainty measure");
	return u;
}

void
corpq_check_passes(int32 passes)
{
	if (passes < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("passes must be at least 1, got %d", passes),
				 errhint("Monte Carlo dropout averages the measure over that many forward passes; 30 is usual.")));
	if (passes > CORPQ_MAX_PASSES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("passes must be at most %d, got %d", CORPQ_MAX_PASSES, passes),
				 errhint("Monte Carlo dropout averages the measure over that many forward passes; 30 is usual.")));
}

void
corpq_scorer_uncertainty(CorpqScorer *s, const cq_pair *pairs, int n,
						 cq_uncertainty measure, int passes, uint64 seed, double *out)
{
	long		nt = 0;
	long		off;
	float	   *pmax;
	float	   *ent;
	cq_error err = {0};

	for (int i = 0; i < n; i++)
		nt += pairs[i].tgt_len + 1;
	/* [K, Nt]: pass k's outputs at k * Nt, pair after pair */
	pmax = MemoryContextAllocHuge(CurrentMemoryContext, (Size) passes * nt * sizeof(float));
	ent = MemoryContextAllocHuge(CurrentMemoryContext, (Size) passes * nt * sizeof(float));
	for (int k = 0; k < passes; k++)
	{
		cq_dropout	dr = {CQ_DROPOUT_MC, seed, (uint32) k};

		corpq_scorer_forward(s, pairs, n, &dr);
		memcpy(pmax + k * nt, s->out.p_max, nt * sizeof(float));
		memcpy(ent + k * nt, s->out.entropy, nt * sizeof(float));
	}
	off = 0;
	for (int i = 0; i < n; i++)
	{
		int			t = pairs[i].tgt_len + 1;
		cq_code st = cq_uncertainty_measure_strided(measure, pmax + off, ent + off,
														 passes, t, nt, &out[i], &err);

		if (st != CQ_OK)
			corpq_core_error(&err, NULL, "could not compute the uncertainty");
		off += t;
	}
	pfree(pmax);
	pfree(ent);
}
