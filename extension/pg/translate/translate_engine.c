/*
 * The translation engine (translate.h): a queue of sentences in the order
 * they were added, the core's translator over one workspace, and the loop
 * that keeps the batch full and hands sentences back in order.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "pg/base/errors.h"
#include "pg/base/base.h"
#include "pg/translate/translate.h"
#include "text/vocabulary.h"

/* A queued sentence. */
typedef struct Queued
{
	int64		id;
	uint64		key;
	uint64		mark;
	int32	   *ids;			/* NULL for a NULL source */
	int			n;
	bool		done;
	int			n_hyps;
	cq_hypothesis *hyps;		/* copied out of the workspace when done */
} Queued;

struct CorpqTranslateEngine
{
	MemoryContext cxt;			/* the engine, workspace, session */
	MemoryContext items_cxt;	/* queued sources and finished results */
	CorpqTranslatedFn fn;
	void	   *arg;
	CorpqModelSession *session;
	CorpqTranslateOptions o;
	int			batch;			/* as asked */
	int			slots;			/* as built: batch, halved to fit corpq.max_batch_mb */
	bool		ready;			/* corpq_translate_engine_use was called */

	/* the translator, built lazily: sized for sources of max_src tokens */
	cq_translator *tr;
	int			max_src;
	const cq_model *model;		/* it points into this model */
	uint64		evictions;		/* the model cache's count when it was built */
	void	   *ws;
	Size		ws_bytes;

	/* the queue: sequence numbers lo .. hi - 1, item s at items[s % cap] */
	Queued	   *items;
	int64		cap;
	int64		lo;				/* the oldest not handed back */
	int64		next;			/* the next to admit */
	int64		hi;				/* the next to add */

	CorpqTranslateStats stats;
};

CorpqTranslateEngine *
corpq_translate_engine_create(MemoryContext parent, CorpqTranslatedFn fn, void *arg)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "corpq translation", ALLOCSET_DEFAULT_SIZES);
	CorpqTranslateEngine *e = MemoryContextAllocZero(cxt, sizeof(CorpqTranslateEngine));

	e->cxt = cxt;
	e->items_cxt = AllocSetContextCreate(cxt, "corpq translation queue", ALLOCSET_DEFAULT_SIZES);
	e->fn = fn;
	e->arg = arg;
	e->session = corpq_model_session_create(cxt);
	e->cap = 64;
	e->items = MemoryContextAllocZero(cxt, sizeof(Queued) * e->cap);
	return e;
}

const CorpqTranslateStats *
corpq_translate_stats(const CorpqTranslateEngine *e)
{
	return &e->stats;
}

static Queued *
item(CorpqTranslateEngine *e, int64 seq)
{
	return &e->items[seq % e->cap];
}

void
corpq_translate_reset(CorpqTranslateEngine *e)
{
	if (e->lo == e->hi)
		return;					/* nothing left behind: keep the translator */
	MemoryContextReset(e->items_cxt);
	e->lo = e->next = e->hi = 0;
	e->tr = NULL;
}

/* ---- model and options ---- */

static void
check_options(CorpqTranslateEngine *e, const cq_model *m)
{
	cq_error err = {0};
	cq_code st = cq_translate_options_check(&e->o.core, &m->cfg, &err);

	if (st != CQ_OK)
		corpq_core_error(&err, NULL, "invalid translation options for model \"%s\"",
						 e->session->cur->spec);
}

/* Field by field: padding bytes may differ between two copies. */
static bool
same_search(const cq_translate_options *a, const cq_translate_options *b)
{
	return a->search == b->search && a->beam == b->beam && a->nbest == b->nbest &&
		a->lenpen == b->lenpen && a->max_len_a == b->max_len_a &&
		a->max_len_b == b->max_len_b && a->min_len == b->min_len &&
		a->no_repeat_ngram_size == b->no_repeat_ngram_size &&
		a->unk_penalty == b->unk_penalty && a->temperature == b->temperature &&
		a->topk == b->topk && a->topp == b->topp && a->seed == b->seed;
}

void
corpq_translate_engine_use(CorpqTranslateEngine *e, const char *spec, bool pinned,
						   const CorpqTranslateOptions *o, int batch)
{
	const CorpqResolved *before = e->session->cur;

	Assert(e->lo == e->hi);
	corpq_model_session_use(e->session, spec, pinned);
	e->o.skip_too_long = o->skip_too_long;	/* needs no new translator */
	if (e->ready && before == e->session->cur && e->batch == batch &&
		same_search(&e->o.core, &o->core))
		return;
	e->o = *o;
	e->batch = batch;
	e->tr = NULL;
	e->max_src = 0;
	e->ready = false;
	check_options(e, corpq_model_get(&e->session->cur->ref));
	e->ready = true;
}

int32 *
corpq_translate_encode(CorpqTranslateEngine *e, const char *src, int len, int *n_ids)
{
	int32	   *ids = corpq_vocab_encode_text(e->session->src_vocab, src, len, n_ids);

	if (e->o.skip_too_long && *n_ids > e->session->cfg.max_positions - 1)
	{
		e->stats.skipped_too_long++;
		pfree(ids);
		return NULL;
	}
	corpq_model_session_check_length(e->session, "source", *n_ids);
	return ids;
}

/* ---- the queue ---- */

static void
grow_queue(CorpqTranslateEngine *e)
{
	int64		cap = e->cap * 2;
	Queued	   *items = MemoryContextAllocZero(e->cxt, sizeof(Queued) * cap);

	for (int64 s = e->lo; s < e->hi; s++)
		items[s % cap] = *item(e, s);
	pfree(e->items);
	e->items = items;
	e->cap = cap;
}

/* Hand back every finished sentence at the head of the queue. */
static void
hand_back(CorpqTranslateEngine *e)
{
	while (e->lo < e->hi && item(e, e->lo)->done)
	{
		Queued	   *it = item(e, e->lo);
		CorpqTranslated t = {it->id, it->ids == NULL, it->n_hyps, it->hyps, it->mark};

		e->stats.sentences++;
		if (it->ids)
		{
			e->stats.translated++;
			if (it->n_hyps > 0)
				e->stats.tokens += it->hyps[0].len + 1;
		}
		e->fn(e->arg, &t);
		/* the callback may have run anything: take the item again */
		it = item(e, e->lo);
		if (it->ids)
			pfree(it->ids);
		if (it->hyps)
		{
			for (int h = 0; h < it->n_hyps; h++)
			{
				pfree((void *) it->hyps[h].tokens);
				pfree((void *) it->hyps[h].token_logprobs);
			}
			pfree(it->hyps);
		}
		memset(it, 0, sizeof(*it));
		e->lo++;
	}
}

void
corpq_translate_add(CorpqTranslateEngine *e, int64 id, uint64 key, const int32 *ids, int n,
					uint64 mark)
{
	Queued	   *it;

	Assert(e->ready);
	if (e->hi - e->lo == e->cap)
		grow_queue(e);
	it = item(e, e->hi);
	memset(it, 0, sizeof(*it));
	it->id = id;
	it->key = key;
	it->mark = mark;
	if (ids)
	{
		it->ids = MemoryContextAlloc(e->items_cxt, sizeof(int32) * Max(n, 1));
		memcpy(it->ids, ids, sizeof(int32) * n);
		it->n = n;
	}
	else
		it->done = true;		/* nothing to decode: handed back by the next run */
	e->hi++;
}

/* ---- rows of a query (id, src) ---- */

/* Column 1 of row i; ERROR when it is NULL. */
static int64
row_id(const CorpqBatch *b, uint64 i)
{
	int64		id;

	if (!corpq_batch_int64(b, i, 1, &id))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("source query returned a NULL id in row " UINT64_FORMAT, b->first + i + 1),
				 errhint("The id keys the row's result and its sampling; filter NULL ids out.")));
	return id;
}

void
corpq_translate_add_row(CorpqTranslateEngine *e, const CorpqBatch *b, uint64 i, uint64 mark)
{
	int64		id = row_id(b, i);
	const char *src;
	int			len,
				n;
	int32	   *ids;

	if (!corpq_batch_text(b, i, 2, &src, &len))
	{
		corpq_translate_add(e, id, 0, NULL, 0, mark);
		return;
	}
	ids = corpq_vocab_encode_text(e->session->src_vocab, src, len, &n);
	if (e->o.skip_too_long && n > e->session->cfg.max_positions - 1)
	{
		/* written as a NULL source's row: no hypothesis */
		e->stats.skipped_too_long++;
		corpq_translate_add(e, id, 0, NULL, 0, mark);
	}
	else
	{
		corpq_model_session_check_length(e->session, "source", n);
		corpq_translate_add(e, id, (uint64) id, ids, n, mark);
	}
	pfree(ids);
}

/* ---- the translator ---- */

static void
core_error(CorpqTranslateEngine *e, const cq_error *err)
{
	corpq_core_error(err, NULL, "could not translate with model \"%s\"", e->session->cur->spec);
}

/*
 * A translator for sources of up to max_src tokens (none may be in the
 * batch).  Every unfinished sentence is admitted again from the head of the
 * queue.
 */
static void
build(CorpqTranslateEngine *e, int max_src)
{
	const cq_model *m;
	cq_error err = {0};
	cq_code st;
	Size		bytes;

	corpq_blas_ensure();
	m = corpq_model_get(&e->session->cur->ref);
	e->slots = e->batch;
	bytes = cq_translator_bytes(m, &e->o.core, e->slots, max_src);
	if (bytes == 0)
	{
		/* invalid sizes: init says why */
		st = cq_translator_init(m, &e->o.core, e->slots, max_src, NULL, 0, &e->tr, &err);
		core_error(e, &err);
	}
	/* fewer sentences at once changes no translation, only the pace */
	while (bytes > corpq_batch_bytes_limit() && e->slots > 1)
	{
		e->slots = (e->slots + 1) / 2;
		bytes = cq_translator_bytes(m, &e->o.core, e->slots, max_src);
	}
	if (bytes > corpq_batch_bytes_limit())
		corpq_batch_too_large(1, "sentence", bytes);
	if (bytes > e->ws_bytes)
	{
		if (e->ws)
			pfree(e->ws);
		e->ws = NULL;
		e->ws_bytes = 0;
		e->ws = MemoryContextAllocHuge(e->cxt, bytes);
		e->ws_bytes = bytes;
	}
	e->tr = NULL;
	st = cq_translator_init(m, &e->o.core, e->slots, max_src, e->ws, e->ws_bytes, &e->tr, &err);
	if (st != CQ_OK)
		core_error(e, &err);
	e->model = m;
	e->max_src = max_src;
	e->evictions = corpq_model_cache_evictions();
	e->next = e->lo;
}

/*
 * The size to build for when the next source does not fit: the longest
 * source waiting, at least twice the last size (few rebuilds), within the
 * model's positions.
 */
static int
size_for(CorpqTranslateEngine *e)
{
	int			limit = e->session->cfg.max_positions - 1;
	int			want = Max(16, 2 * e->max_src);

	for (int64 s = e->next; s < e->hi; s++)
		want = Max(want, item(e, s)->n);
	return Min(want, limit);
}

/* Admit waiting sources into free slots; false when the next one does not fit. */
static bool
admit(CorpqTranslateEngine *e)
{
	cq_error err = {0};

	while (e->next < e->hi && cq_translator_free_slots(e->tr) > 0)
	{
		Queued	   *it = item(e, e->next);
		cq_source	src = {it->ids, it->n, it->key, e->next};
		cq_code st;

		if (it->done)
		{
			e->next++;
			continue;
		}
		if (it->n > e->max_src)
			return false;
		st = cq_translator_admit(e->tr, &src, &err);
		if (st != CQ_OK)
			core_error(e, &err);
		e->next++;
	}
	return true;
}

static void
take_finished(CorpqTranslateEngine *e)
{
	cq_translation t;

	while (cq_translator_next(e->tr, &t))
	{
		Queued	   *it = item(e, t.tag);
		MemoryContext old = MemoryContextSwitchTo(e->items_cxt);

		it->n_hyps = t.n_hyps;
		it->hyps = palloc(sizeof(cq_hypothesis) * Max(t.n_hyps, 1));
		for (int h = 0; h < t.n_hyps; h++)
		{
			const cq_hypothesis *src = &t.hyps[h];
			int32	   *tok = palloc(sizeof(int32) * Max(src->len, 1));
			float	   *lp = palloc(sizeof(float) * (src->len + 1));

			memcpy(tok, src->tokens, sizeof(int32) * src->len);
			memcpy(lp, src->token_logprobs, sizeof(float) * (src->len + 1));
			it->hyps[h] = *src;
			it->hyps[h].tokens = tok;
			it->hyps[h].token_logprobs = lp;
		}
		MemoryContextSwitchTo(old);
		it->done = true;
	}
}

static void
step(CorpqTranslateEngine *e)
{
	cq_error err = {0};
	cq_code st;
	instr_time	t0,
				t1;

	CHECK_FOR_INTERRUPTS();
	INSTR_TIME_SET_CURRENT(t0);
	st = cq_translator_step(e->tr, &err);
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	e->stats.step_seconds += INSTR_TIME_GET_DOUBLE(t1);
	if (st != CQ_OK)
		core_error(e, &err);
	take_finished(e);
	hand_back(e);
}

void
corpq_translate_run(CorpqTranslateEngine *e, bool drain)
{
	Assert(e->ready);
	for (;;)
	{
		bool		fits;

		/* the model may have been evicted by whatever ran since the last step */
		if (e->tr && e->evictions != corpq_model_cache_evictions())
		{
			build(e, e->max_src);
			e->stats.rebuilds++;
		}
		if (e->tr == NULL)
			build(e, size_for(e));
		fits = admit(e);
		if (!cq_translator_busy(e->tr))
		{
			if (e->next == e->hi)
				break;			/* all handed back */
			if (!fits)
				build(e, size_for(e));
			continue;
		}
		if (!drain && e->next == e->hi)
			break;
		step(e);
	}
	hand_back(e);
}

text *
corpq_translate_text(CorpqTranslateEngine *e, const cq_hypothesis *h)
{
	size_t		len;
	char	   *out = corpq_vocab_text(e->session->tgt_vocab, h->tokens, h->len, &len);
	text	   *t;

	t = cstring_to_text_with_len(out, (int) len);
	pfree(out);
	return t;
}
