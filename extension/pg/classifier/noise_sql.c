/*
 * corpq.synthetic_noise(clean_query, options): the curation core's
 * synthetic noise (extension/curate/noise.h) in SQL, for users to inspect
 * and reuse (docs/curation.md).  The clean query returns (src, tgt); rows
 * with a NULL side take no part.  An optional other_language_query returns
 * one text column: the wrong_language targets.  All rows are read, then
 * the core makes the set, and the rows come back in its order (the clean
 * pairs in query order, then each type).
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "curate/noise.h"
#include "pg/base/corpus_query.h"
#include "pg/base/errors.h"
#include "pg/base/options.h"
#include "pg/text/text.h"

PG_FUNCTION_INFO_V1(corpq_synthetic_noise);

/* rows per fetch of the queries */
#define READ_BATCH 1000

typedef struct NoiseSqlOptions
{
	int64		seed;
	double		share[CQ_NOISE_NTYPES];
	char	   *other_language_query;
} NoiseSqlOptions;

/* One share row per type, left unset: the core's defaults fill them. */
#define SHARE_ROW(t, name) \
	{.key = name, .type = CORPQ_OPT_NUMBER, \
	 .offset = offsetof(NoiseSqlOptions, share) + (t) * sizeof(double), .size = sizeof(double), \
	 .range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 10, \
	 .flags = CORPQ_OPT_UNSET}

static const CorpqOption noise_rows[] = {
	{.key = "seed", CORPQ_OPT_FIELD(NoiseSqlOptions, seed), .type = CORPQ_OPT_INT64,
	.min = 0, .max = PG_INT64_MAX, .def = 1},
	SHARE_ROW(CQ_NOISE_MISALIGNED_NEIGHBOUR, "misaligned_neighbour"),
	SHARE_ROW(CQ_NOISE_MISALIGNED_RANDOM, "misaligned_random"),
	SHARE_ROW(CQ_NOISE_TRUNCATED_TGT, "truncated_tgt"),
	SHARE_ROW(CQ_NOISE_TRUNCATED_SRC, "truncated_src"),
	SHARE_ROW(CQ_NOISE_APPENDED_TGT, "appended_tgt"),
	SHARE_ROW(CQ_NOISE_APPENDED_SRC, "appended_src"),
	SHARE_ROW(CQ_NOISE_UNTRANSLATED, "untranslated"),
	SHARE_ROW(CQ_NOISE_UNTRANSLATED_EDITED, "untranslated_edited"),
	SHARE_ROW(CQ_NOISE_WRONG_LANGUAGE, "wrong_language"),
	SHARE_ROW(CQ_NOISE_MARKUP, "markup"),
	{.key = "other_language_query", CORPQ_OPT_FIELD(NoiseSqlOptions, other_language_query),
	.type = CORPQ_OPT_STRING, .def_string = NULL},
	{0}
};

static const CorpqOptionTable noise_table = {"synthetic noise", noise_rows};

static const CorpqColumn pair_columns[] = {
	{"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT}
};
static const CorpqColumn sentence_columns[] = {{"sentence", CORPQ_COLUMN_TEXT}};

/* Strings read from a query, kept in the call's context. */
typedef struct Texts
{
	MemoryContext cxt;
	cq_str	   *a;
	cq_str	   *b;				/* the second column, or NULL */
	int64		n;
	int64		cap;
} Texts;

static cq_str
keep(MemoryContext cxt, const char *s, int len)
{
	char	   *copy = MemoryContextAlloc(cxt, len + 1);

	memcpy(copy, s, len);
	copy[len] = '\0';
	return (cq_str) {copy, (size_t) len};
}

static void
grow(Texts *t, uint64 more, bool pairs)
{
	if (t->n + (int64) more <= t->cap)
		return;
	t->cap = Max(t->cap * 2, t->n + (int64) more + 64);
	t->a = t->a ? repalloc_huge(t->a, t->cap * sizeof(cq_str))
		: MemoryContextAllocHuge(t->cxt, t->cap * sizeof(cq_str));
	if (pairs)
		t->b = t->b ? repalloc_huge(t->b, t->cap * sizeof(cq_str))
			: MemoryContextAllocHuge(t->cxt, t->cap * sizeof(cq_str));
}

static void
read_pairs(void *arg, const CorpqBatch *batch)
{
	Texts	   *t = arg;

	grow(t, batch->n, true);
	for (uint64 i = 0; i < batch->n; i++)
	{
		const char *s,
				   *g;
		int			ls,
					lg;

		if (!corpq_batch_text(batch, i, 1, &s, &ls) || !corpq_batch_text(batch, i, 2, &g, &lg))
			continue;
		t->a[t->n] = keep(t->cxt, s, ls);
		t->b[t->n++] = keep(t->cxt, g, lg);
	}
}

static void
read_sentences(void *arg, const CorpqBatch *batch)
{
	Texts	   *t = arg;

	grow(t, batch->n, false);
	for (uint64 i = 0; i < batch->n; i++)
	{
		const char *s;
		int			ls;

		if (corpq_batch_text(batch, i, 1, &s, &ls))
			t->a[t->n++] = keep(t->cxt, s, ls);
	}
}

static void
parse_options(Jsonb *json, NoiseSqlOptions *o, cq_noise_options *core)
{
	corpq_options_parse(&noise_table, json, o);
	cq_noise_options_default(core);
	core->seed = (uint64_t) o->seed;
	for (int t = 1; t < CQ_NOISE_NTYPES; t++)
		if (!CORPQ_OPT_IS_UNSET(o->share[t]))
			core->share[t] = o->share[t];
}

static void
put_rows(ReturnSetInfo *rsinfo, const cq_noise_set *set)
{
	for (size_t i = 0; i < set->n; i++)
	{
		const cq_noise_pair *p = &set->pairs[i];
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		CHECK_FOR_INTERRUPTS();
		values[0] = PointerGetDatum(cstring_to_text_with_len(p->src.s, (int) p->src.len));
		values[1] = PointerGetDatum(cstring_to_text_with_len(p->tgt.s, (int) p->tgt.len));
		values[2] = CStringGetTextDatum(cq_noise_name(p->type));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

Datum
corpq_synthetic_noise(PG_FUNCTION_ARGS)
{
	NoiseSqlOptions o;
	cq_noise_options core;
	CorpqQuerySpec pairs = {
		.what = "clean", .columns = pair_columns, .min_columns = 2, .max_columns = 2,
		.example = "SELECT src, tgt FROM corpus", .need_rows = true
	};
	CorpqQuerySpec other = {
		.what = "other-language", .columns = sentence_columns, .min_columns = 1,
		.max_columns = 1, .example = "SELECT sentence FROM german_sentences", .need_rows = false
	};
	Texts		clean = {CurrentMemoryContext},
				foreign = {CurrentMemoryContext};
	cq_noise_set set;
	cq_error	err;

	/* not STRICT: a NULL query is an error, not an empty result */
	corpq_require_arg(fcinfo, 0, "clean_query");
	parse_options(PG_ARGISNULL(1) ? NULL : PG_GETARG_JSONB_P(1), &o, &core);
	corpq_require_utf8();		/* words and cuts are UTF-8 code points */
	InitMaterializedSRF(fcinfo, 0);
	corpq_query_stream(text_to_cstring(PG_GETARG_TEXT_PP(0)), &pairs, READ_BATCH, read_pairs, &clean);
	if (o.other_language_query)
		corpq_query_stream(o.other_language_query, &other, READ_BATCH, read_sentences, &foreign);
	if (cq_noise_generate(clean.a, clean.b, (size_t) clean.n, foreign.a, (size_t) foreign.n,
						  &core, &set, &err) != CQ_OK)
		corpq_core_error(&err, "The clean query needs at least 2 pairs with different targets.",
						 "could not make synthetic noise from " INT64_FORMAT " clean pairs",
						 clean.n);
	put_rows((ReturnSetInfo *) fcinfo->resultinfo, &set);
	cq_noise_set_free(&set);
	return (Datum) 0;
}
