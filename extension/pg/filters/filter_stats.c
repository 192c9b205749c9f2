/*
 * One pass of a filter spec over pairs: the aggregate corpq.filter_stats()
 * (kept / rejected per filter, examples of rejected pairs; parallel, with
 * combine, serial and deserial functions) and the per-row
 * corpq.filter_rejects().
 *
 * Examples are the rejected pairs with the smallest duplicate keys
 * (dedup_key(src, tgt, 'exact')): a sample that depends on the data only,
 * not on the scan order or the number of parallel workers, and that SQL can
 * reproduce.  Each is "src ||| tgt", each side cut to EXAMPLE_CHARS code
 * points (an ellipsis marks a cut).  Pairs with a NULL side count in
 * neither kept nor rejected, as WHERE with filter_predicate() drops them.
 * An embedding_cosine filter that rejects copies has a second row after
 * its own, "<label>:copy": the pairs it rejected as copies (counted in its
 * own row too), with their examples.
 *
 * With model filters in the spec the aggregate holds up to
 * FILTER_MODEL_CHUNK pairs and evaluates them together, the models scoring
 * them in batches (filter_model.c); whatever is pending is evaluated before
 * the state is combined, serialised or finalised.  filter_keeps() and
 * filter_rejects() score their one pair alone, which gives the same score.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "filters/dedup.h"
#include "pg/base/errors.h"
#include "pg/filters/filters.h"

#define EXAMPLE_CHARS 200
#define DEFAULT_EXAMPLES 5

PG_FUNCTION_INFO_V1(corpq_filter_stats_trans);
PG_FUNCTION_INFO_V1(corpq_filter_stats_combine);
PG_FUNCTION_INFO_V1(corpq_filter_stats_serial);
PG_FUNCTION_INFO_V1(corpq_filter_stats_deserial);
PG_FUNCTION_INFO_V1(corpq_filter_stats_final);
PG_FUNCTION_INFO_V1(corpq_filter_rejects);
PG_FUNCTION_INFO_V1(corpq_filter_keeps);
PG_FUNCTION_INFO_V1(corpq_filter_predicate);

typedef struct Example
{
	int64		key;
	char	   *text;
} Example;

/* Up to k examples, by key ascending. */
typedef struct ExampleSet
{
	int			n;
	Example    *e;
} ExampleSet;

typedef struct FilterStats
{
	char	   *spec_json;		/* the spec as text: what serial and combine
								 * carry and compare */
	Jsonb	   *spec;			/* the spec as given, compared on every row */
	FilterList *list;
	int			k;				/* examples kept per filter */
	int64		rows;			/* pairs counted */
	int			n_slots;		/* list->n + 1 + the copy rows */
	int		   *copy_slot;		/* [list->n]: the slot of filter i's copy row, or -1 */
	int64	   *rejected;		/* [n_slots]: per filter, then by any, then
								 * the copy rows */
	ExampleSet *examples;		/* [n_slots] */
	MemoryContext cxt;			/* the aggregate's context: the state's */
	/* model filters: pairs not evaluated yet, in pending_cxt */
	MemoryContext pending_cxt;
	cq_pair    *pending;		/* [FILTER_MODEL_CHUNK] */
	int			n_pending;
} FilterStats;

static int
examples_arg(FunctionCallInfo fcinfo, int i)
{
	int			k = PG_NARGS() > i ? PG_GETARG_INT32(i) : DEFAULT_EXAMPLES;

	if (k < 0 || k > FILTER_MAX_EXAMPLES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("examples must be from 0 to %d", FILTER_MAX_EXAMPLES),
				 errdetail("It is %d.", k)));
	return k;
}

/* A new, empty state in cxt. */
static FilterStats *
stats_create(MemoryContext cxt, Jsonb *spec, int k)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	FilterStats *s = palloc0(sizeof(FilterStats));

	s->spec = (Jsonb *) palloc(VARSIZE(spec));
	memcpy(s->spec, spec, VARSIZE(spec));
	s->spec_json = JsonbToCString(NULL, &spec->root, VARSIZE(spec));
	s->list = filter_list_parse(s->spec, FILTER_MODELS_PINNED);
	s->cxt = cxt;
	if (s->list->n_models > 0)
	{
		s->pending_cxt = AllocSetContextCreate(cxt, "corpq filter_stats pending",
											   ALLOCSET_DEFAULT_SIZES);
		s->pending = palloc(sizeof(cq_pair) * FILTER_MODEL_CHUNK);
	}
	s->k = k;
	s->n_slots = s->list->n + 1;
	s->copy_slot = palloc(sizeof(int) * Max(s->list->n, 1));
	for (int i = 0; i < s->list->n; i++)
		s->copy_slot[i] = filter_rejects_copies(&s->list->items[i]) ? s->n_slots++ : -1;
	s->rejected = palloc0(sizeof(int64) * s->n_slots);
	s->examples = palloc0(sizeof(ExampleSet) * s->n_slots);
	for (int i = 0; i < s->n_slots; i++)
		s->examples[i].e = palloc(sizeof(Example) * Max(k, 1));
	MemoryContextSwitchTo(old);
	return s;
}

/* Would key enter set (not there yet, and among the k smallest)? */
static bool
example_wanted(const ExampleSet *set, int k, int64 key)
{
	for (int i = 0; i < set->n; i++)
		if (set->e[i].key == key)
			return false;
	return set->n < k || key < set->e[set->n - 1].key;
}

/* Insert (key, text) into set (example_wanted said yes); text is kept. */
static void
example_insert(ExampleSet *set, int k, int64 key, char *text)
{
	int			at = set->n;

	if (set->n == k)
	{
		pfree(set->e[k - 1].text);
		set->n--;
		at = set->n;
	}
	while (at > 0 && set->e[at - 1].key > key)
	{
		set->e[at] = set->e[at - 1];
		at--;
	}
	set->e[at].key = key;
	set->e[at].text = text;
	set->n++;
}

/* The first EXAMPLE_CHARS code points of u, with an ellipsis if cut. */
static void
append_cut(StringInfo b, const cq_utext *u)
{
	size_t		bytes = 0;

	if (u->n <= EXAMPLE_CHARS)
	{
		appendBinaryStringInfo(b, u->s, (int) u->bytes);
		return;
	}
	for (size_t chars = 0; chars < EXAMPLE_CHARS; chars++)
	{
		bytes++;
		while (bytes < u->bytes && ((unsigned char) u->s[bytes] & 0xC0) == 0x80)
			bytes++;
	}
	appendBinaryStringInfo(b, u->s, (int) bytes);
	appendStringInfoString(b, "\u2026");
}

static char *
example_text(MemoryContext cxt, const cq_pair *p)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	StringInfoData b;

	initStringInfo(&b);
	append_cut(&b, &p->src);
	appendStringInfoString(&b, " ||| ");
	append_cut(&b, &p->tgt);
	MemoryContextSwitchTo(old);
	return b.data;
}

/* Slot i (a filter, list->n: any, or a copy row) rejected p: count it, maybe keep it as an example. */
static void
count_reject(FilterStats *s, MemoryContext cxt, int i, const cq_pair *p,
			 int64 *key, bool *have_key)
{
	s->rejected[i]++;
	if (s->k == 0)
		return;
	if (!*have_key)
	{
		cq_error	err;

		if (cq_dedup_key(&p->src, &p->tgt, CQ_DEDUP_EXACT, CQ_SIDE_BOTH, key, &err) != CQ_OK)
			corpq_core_error(&err, NULL, "could not compute the duplicate key");
		*have_key = true;
	}
	if (example_wanted(&s->examples[i], s->k, *key))
		example_insert(&s->examples[i], s->k, *key, example_text(cxt, p));
}

/*
 * Which filters of list keep the pair: keep[i] for each.  A model filter's
 * score is scores[i] when a batch computed it (scores NULL: scored here,
 * alone, with the same result).  why (when not NULL): why[i] is a model
 * filter's verdict (FILTER_KEEP or why it rejected the pair), and a rule
 * filter's FILTER_KEEP or FILTER_REJECT_SCORE.
 */
static void
evaluate(FilterList *list, const cq_pair *p, const double *scores, bool *keep, FilterVerdict *why)
{
	for (int i = 0; i < list->n; i++)
	{
		cq_error	err;
		FilterVerdict v;

		if (list->items[i].model)
		{
			double		score;

			if (scores)
				score = scores[i];
			else
				filter_model_scores(list, i, p, 1, &score);
			v = filter_model_verdict(&list->items[i], p, score);
			keep[i] = v == FILTER_KEEP;
		}
		else if (cq_filter_keep(&list->items[i].filter, p, &keep[i], &err) != CQ_OK)
			corpq_core_error(&err, NULL, "could not apply filter \"%s\"", list->items[i].label);
		else
			v = keep[i] ? FILTER_KEEP : FILTER_REJECT_SCORE;
		if (why)
			why[i] = v;
	}
}

/* Count what the filters decided on one pair, and why. */
static void
count_pair(FilterStats *s, const cq_pair *p, const bool *keep, const FilterVerdict *why)
{
	bool		any = false,
				have_key = false;
	int64		key = 0;

	for (int i = 0; i < s->list->n; i++)
		if (!keep[i])
		{
			count_reject(s, s->cxt, i, p, &key, &have_key);
			if (why[i] == FILTER_REJECT_COPY && s->copy_slot[i] >= 0)
				count_reject(s, s->cxt, s->copy_slot[i], p, &key, &have_key);
			any = true;
		}
	if (any)
		count_reject(s, s->cxt, s->list->n, p, &key, &have_key);
	s->rows++;
}

/* Evaluate the pending pairs, each model filter scoring them as one batch. */
static void
flush_pending(FilterStats *s)
{
	int			n = s->n_pending;
	int			nf = s->list->n;
	MemoryContext old;
	double	   *scores;
	double	   *col;
	bool	   *keep;
	FilterVerdict *why;

	if (n == 0)
		return;
	old = MemoryContextSwitchTo(s->pending_cxt);
	scores = palloc0(sizeof(double) * n * nf);	/* [pair][filter] */
	col = palloc(sizeof(double) * n);
	keep = palloc(sizeof(bool) * nf);
	why = palloc(sizeof(FilterVerdict) * nf);
	for (int i = 0; i < nf; i++)
		if (s->list->items[i].model)
		{
			filter_model_scores(s->list, i, s->pending, n, col);
			for (int j = 0; j < n; j++)
				scores[j * nf + i] = col[j];
		}
	for (int j = 0; j < n; j++)
	{
		CHECK_FOR_INTERRUPTS();
		evaluate(s->list, &s->pending[j], &scores[j * nf], keep, why);
		count_pair(s, &s->pending[j], keep, why);
	}
	MemoryContextSwitchTo(old);
	/* the pending array itself lives in the state's context */
	MemoryContextReset(s->pending_cxt);
	s->n_pending = 0;
}

/* Hold a pair (copied) for the next flush; flush when the chunk is full. */
static void
hold_pair(FilterStats *s, text *src, text *tgt)
{
	MemoryContext old = MemoryContextSwitchTo(s->pending_cxt);
	cq_pair    *p = &s->pending[s->n_pending];

	/* copies: the cq_utext points into the text, which must outlive the row */
	filter_utext(pg_detoast_datum_copy((struct varlena *) src), &p->src);
	filter_utext(pg_detoast_datum_copy((struct varlena *) tgt), &p->tgt);
	MemoryContextSwitchTo(old);
	if (++s->n_pending == FILTER_MODEL_CHUNK)
		flush_pending(s);
}

Datum
corpq_filter_stats_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	FilterStats *s = PG_ARGISNULL(0) ? NULL : (FilterStats *) PG_GETARG_POINTER(0);
	Jsonb	   *spec;
	cq_pair		p;
	bool	   *keep;
	FilterVerdict *why;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "corpq_filter_stats_trans called in non-aggregate context");
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3) ||
		(PG_NARGS() > 4 && PG_ARGISNULL(4)))
	{
		if (s == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s);
	}
	spec = PG_GETARG_JSONB_P(3);
	if (s == NULL)
		s = stats_create(aggcxt, spec, examples_arg(fcinfo, 4));
	else if (VARSIZE(spec) != VARSIZE(s->spec) || memcmp(spec, s->spec, VARSIZE(spec)) != 0 ||
			 examples_arg(fcinfo, 4) != s->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("filter_stats needs the same filters and examples on every row")));
	if (s->list->n_models > 0)
	{
		hold_pair(s, PG_GETARG_TEXT_PP(1), PG_GETARG_TEXT_PP(2));
		PG_RETURN_POINTER(s);
	}
	filter_utext(PG_GETARG_TEXT_PP(1), &p.src);
	filter_utext(PG_GETARG_TEXT_PP(2), &p.tgt);
	keep = palloc(sizeof(bool) * Max(s->list->n, 1));
	why = palloc(sizeof(FilterVerdict) * Max(s->list->n, 1));
	evaluate(s->list, &p, NULL, keep, why);
	count_pair(s, &p, keep, why);
	pfree(keep);
	pfree(why);
	PG_RETURN_POINTER(s);
}

/* Add b's counts and examples to a (same spec). */
static void
stats_merge(FilterStats *a, const FilterStats *b, MemoryContext cxt)
{
	if (strcmp(a->spec_json, b->spec_json) != 0 || a->k != b->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("filter_stats needs the same filters and examples on every row")));
	a->rows += b->rows;
	for (int i = 0; i < a->n_slots; i++)
	{
		a->rejected[i] += b->rejected[i];
		for (int j = 0; j < b->examples[i].n; j++)
		{
			const Example *e = &b->examples[i].e[j];

			if (example_wanted(&a->examples[i], a->k, e->key))
				example_insert(&a->examples[i], a->k, e->key, MemoryContextStrdup(cxt, e->text));
		}
	}
}

Datum
corpq_filter_stats_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	FilterStats *a = PG_ARGISNULL(0) ? NULL : (FilterStats *) PG_GETARG_POINTER(0);
	FilterStats *b = PG_ARGISNULL(1) ? NULL : (FilterStats *) PG_GETARG_POINTER(1);

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "corpq_filter_stats_combine called in non-aggregate context");
	if (b == NULL)
	{
		if (a == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(a);
	}
	if (a == NULL)
		a = stats_create(aggcxt, b->spec, b->k);
	flush_pending(a);
	flush_pending(b);
	stats_merge(a, b, aggcxt);
	PG_RETURN_POINTER(a);
}

Datum
corpq_filter_stats_serial(PG_FUNCTION_ARGS)
{
	FilterStats *s = (FilterStats *) PG_GETARG_POINTER(0);
	StringInfoData b;

	flush_pending(s);
	pq_begintypsend(&b);
	pq_sendstring(&b, s->spec_json);
	pq_sendint32(&b, s->k);
	pq_sendint64(&b, s->rows);
	for (int i = 0; i < s->n_slots; i++)
	{
		pq_sendint64(&b, s->rejected[i]);
		pq_sendint32(&b, s->examples[i].n);
		for (int j = 0; j < s->examples[i].n; j++)
		{
			pq_sendint64(&b, s->examples[i].e[j].key);
			pq_sendstring(&b, s->examples[i].e[j].text);
		}
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&b));
}

Datum
corpq_filter_stats_deserial(PG_FUNCTION_ARGS)
{
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	MemoryContext aggcxt;
	StringInfoData b;
	Jsonb	   *spec;
	FilterStats *s;
	int			k;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "corpq_filter_stats_deserial called in non-aggregate context");
	/* a copy ends with a NUL, so that a truncated string cannot overrun */
	initStringInfo(&b);
	appendBinaryStringInfo(&b, VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes));
	spec = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(pq_getmsgstring(&b))));
	k = pq_getmsgint(&b, 4);
	s = stats_create(aggcxt, spec, k);
	s->rows = pq_getmsgint64(&b);
	for (int i = 0; i < s->n_slots; i++)
	{
		int			n;

		s->rejected[i] = pq_getmsgint64(&b);
		n = pq_getmsgint(&b, 4);
		if (n < 0 || n > k)
			elog(ERROR, "corrupt filter_stats state: %d examples of %d", n, k);
		for (int j = 0; j < n; j++)
		{
			s->examples[i].e[j].key = pq_getmsgint64(&b);
			s->examples[i].e[j].text = MemoryContextStrdup(aggcxt, pq_getmsgstring(&b));
		}
		s->examples[i].n = n;
	}
	pq_getmsgend(&b);
	PG_RETURN_POINTER(s);
}

/* One corpq.filter_result value. */
static Datum
result_row(TupleDesc desc, const char *label, int64 rows, int64 rejected, const ExampleSet *ex)
{
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	Datum	   *texts = palloc(sizeof(Datum) * Max(ex ? ex->n : 0, 1));
	int			n = ex ? ex->n : 0;

	for (int j = 0; j < n; j++)
		texts[j] = CStringGetTextDatum(ex->e[j].text);
	values[0] = CStringGetTextDatum(label);
	values[1] = Int64GetDatum(rows - rejected);
	values[2] = Int64GetDatum(rejected);
	values[3] = Float8GetDatum(rows > 0 ? (double) rejected / (double) rows : 0);
	nulls[3] = rows == 0;
	values[4] = PointerGetDatum(construct_array(texts, n, TEXTOID, -1, false, TYPALIGN_INT));
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

Datum
corpq_filter_stats_final(PG_FUNCTION_ARGS)
{
	FilterStats *s = PG_ARGISNULL(0) ? NULL : (FilterStats *) PG_GETARG_POINTER(0);
	Oid			array_type = get_fn_expr_rettype(fcinfo->flinfo);
	Oid			elem_type = get_element_type(array_type);
	TupleDesc	desc;
	Datum	   *rows;
	int			n = 0;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	if (s == NULL)
		PG_RETURN_NULL();
	/* complete, not change, the state: it may be final'd again (windows) */
	flush_pending(s);
	if (!OidIsValid(elem_type))
		elog(ERROR, "filter_stats must return an array of corpq.filter_result");
	desc = BlessTupleDesc(lookup_rowtype_tupdesc_copy(elem_type, -1));
	rows = palloc(sizeof(Datum) * s->n_slots);
	/* each filter's row, then its copy row if it has one; "all" last */
	for (int i = 0; i < s->list->n; i++)
	{
		int			c = s->copy_slot[i];

		rows[n++] = result_row(desc, s->list->items[i].label, s->rows, s->rejected[i], &s->examples[i]);
		if (c >= 0)
			rows[n++] = result_row(desc, psprintf("%s%s", s->list->items[i].label, FILTER_COPY_SUFFIX),
								   s->rows, s->rejected[c], &s->examples[c]);
	}
	rows[n++] = result_row(desc, FILTER_ALL_LABEL, s->rows, s->rejected[s->list->n],
						   &s->examples[s->list->n]);
	get_typlenbyvalalign(elem_type, &typlen, &typbyval, &typalign);
	PG_RETURN_ARRAYTYPE_P(construct_array(rows, n, elem_type, typlen, typbyval, typalign));
}

/* The parsed spec of this call site, cached while the spec stays the same. */
typedef struct SpecCache
{
	Jsonb	   *spec;
	FilterList *list;
} SpecCache;

static FilterList *
cached_list(FunctionCallInfo fcinfo, Jsonb *spec)
{
	SpecCache  *c = fcinfo->flinfo->fn_extra;

	if (c == NULL || VARSIZE(c->spec) != VARSIZE(spec) ||
		memcmp(c->spec, spec, VARSIZE(spec)) != 0)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
		FilterList *list = filter_list_parse(spec, FILTER_MODELS_PINNED);

		/* a spec that changes from row to row must not pile up scorers */
		if (c)
			filter_list_release(c->list);
		c = c ? c : palloc(sizeof(SpecCache));
		c->spec = palloc(VARSIZE(spec));
		memcpy(c->spec, spec, VARSIZE(spec));
		c->list = list;
		fcinfo->flinfo->fn_extra = c;
		MemoryContextSwitchTo(old);
	}
	return c->list;
}

Datum
corpq_filter_rejects(PG_FUNCTION_ARGS)
{
	FilterList *list = cached_list(fcinfo, PG_GETARG_JSONB_P(2));
	cq_pair		p;
	bool	   *keep = palloc(sizeof(bool) * Max(list->n, 1));
	FilterVerdict *why = palloc(sizeof(FilterVerdict) * Max(list->n, 1));
	Datum	   *labels = palloc(sizeof(Datum) * Max(list->n, 1));
	int			n = 0;

	filter_utext(PG_GETARG_TEXT_PP(0), &p.src);
	filter_utext(PG_GETARG_TEXT_PP(1), &p.tgt);
	evaluate(list, &p, NULL, keep, why);
	for (int i = 0; i < list->n; i++)
	{
		const FilterSpec *f = &list->items[i];

		if (keep[i])
			continue;
		/* a classifier's pair with no probability: its own reason */
		if (why[i] == FILTER_REJECT_NO_SCORE && f->model_kind == FILTER_MODEL_CLASSIFIER)
			labels[n++] = CStringGetTextDatum(psprintf("%s%s", f->label, FILTER_NO_SCORE_SUFFIX));
		/* an embedding_cosine filter's copy: its own reason */
		else if (why[i] == FILTER_REJECT_COPY)
			labels[n++] = CStringGetTextDatum(psprintf("%s%s", f->label, FILTER_COPY_SUFFIX));
		else
			labels[n++] = CStringGetTextDatum(f->label);
	}
	PG_RETURN_ARRAYTYPE_P(construct_array(labels, n, TEXTOID, -1, false, TYPALIGN_INT));
}

Datum
corpq_filter_keeps(PG_FUNCTION_ARGS)
{
	FilterList *list = cached_list(fcinfo, PG_GETARG_JSONB_P(2));
	cq_pair		p;
	bool	   *keep = palloc(sizeof(bool) * Max(list->n, 1));

	filter_utext(PG_GETARG_TEXT_PP(0), &p.src);
	filter_utext(PG_GETARG_TEXT_PP(1), &p.tgt);
	evaluate(list, &p, NULL, keep, NULL);
	for (int i = 0; i < list->n; i++)
		if (!keep[i])
			PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(true);
}

Datum
corpq_filter_predicate(PG_FUNCTION_ARGS)
{
	/* names pinned to their latest version: a stored predicate keeps its meaning */
	FilterList *list = filter_list_parse(PG_GETARG_JSONB_P(0), FILTER_MODELS_LATEST);
	const char *src = quote_identifier(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	const char *tgt = quote_identifier(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	StringInfoData b;

	initStringInfo(&b);
	if (list->n == 0)
		appendStringInfoString(&b, "true");
	for (int i = 0; i < list->n; i++)
		appendStringInfo(&b, "%s%s", i ? "\n  AND " : "", filter_keep_sql(&list->items[i], src, tgt));
	PG_RETURN_TEXT_P(cstring_to_text(b.data));
}
