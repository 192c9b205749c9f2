/*
 * The cav_accumulate aggregates and cav_merge.
 *
 * State design: the state type is corpq.cav itself, held as a read-write
 * expanded object (cav_expanded.c) in the aggregate context.  Rows go
 * straight into the live cav_state; the canonical bytes are produced only
 * when a partial state leaves a worker (tuple formation flattens it) or by
 * the final function.  Compared with an internal state plus serial/deserial
 * functions this costs nothing per row, and the partial state is an
 * ordinary corpq.cav, so any executor (parallel workers, Citus workers)
 * can ship it and combine it with cav_merge, which is also the user-facing
 * merge of two stored CAVs and works on the bytes directly.
 *
 * Rows: NULL on either side is skipped; a target with no tokens is skipped
 * too (it has no occurrence, so Eq. 5 gives it no cell) and does not count
 * as a pair.  No counted pair at all gives NULL, like sum().  The options
 * (l_max, targets, bpe) must be the same in every row of a group.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "cav/merge_flat.h"
#include "pg/cav/cav.h"
#include "pg/text/text.h"

PG_FUNCTION_INFO_V1(corpq_cav_accumulate_trans);
PG_FUNCTION_INFO_V1(corpq_cav_accumulate_final);
PG_FUNCTION_INFO_V1(corpq_cav_merge);
PG_FUNCTION_INFO_V1(corpq_cav_sum_trans);

/* The options of one cav_accumulate row. */
typedef struct RowOptions
{
	int32		l_max;
	ArrayType  *targets;		/* NULL: every target token */
	char	   *bpe;			/* NULL: whitespace */
} RowOptions;

static void
read_options(FunctionCallInfo fcinfo, RowOptions *o)
{
	o->l_max = CAV_DEFAULT_LMAX;
	o->targets = NULL;
	o->bpe = NULL;
	if (PG_NARGS() > 3)
	{
		if (PG_ARGISNULL(3))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("l_max must not be null")));
		o->l_max = PG_GETARG_INT32(3);
		if (o->l_max < 1 || o->l_max > CAV_MAX_LMAX)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("l_max must be between 1 and %d", CAV_MAX_LMAX),
					 errdetail("l_max is the number of distance columns; context farther than l_max - 1 tokens is not counted.")));
	}
	if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
		o->targets = PG_GETARG_ARRAYTYPE_P(4);
	if (PG_NARGS() > 5 && !PG_ARGISNULL(5))
	{
		o->bpe = text_to_cstring(PG_GETARG_TEXT_PP(5));
		if (strcmp(o->bpe, CORPQ_WHITESPACE) == 0)
			o->bpe = NULL;
	}
}

/* cav_options for a text[] of targets; the strings point into the array. */
static void
build_options(const RowOptions *o, cav_options *opt)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	const char **toks;
	size_t	   *lens;

	memset(opt, 0, sizeof(*opt));
	opt->l_max = (uint32_t) o->l_max;
	if (o->targets == NULL)
		return;
	if (ARR_NDIM(o->targets) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("targets must be a one-dimensional array")));
	deconstruct_array(o->targets, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("targets must not be empty"),
				 errhint("Pass NULL to build a matrix for every target token.")));
	toks = palloc(n * sizeof(char *));
	lens = palloc(n * sizeof(size_t));
	for (int i = 0; i < n; i++)
	{
		text	   *t;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("targets must not contain null elements")));
		t = DatumGetTextPP(elems[i]);
		toks[i] = VARDATA_ANY(t);
		lens[i] = VARSIZE_ANY_EXHDR(t);
	}
	opt->targets = toks;
	opt->target_lens = lens;
	opt->n_targets = n;
}

/* A new state in the aggregate context, remembering the row's options. */
static CavExpanded *
state_new(MemoryContext aggcxt, const RowOptions *o)
{
	cav_options opt;
	CavExpanded *e;

	corpq_require_utf8();
	build_options(o, &opt);
	e = cavsql_expanded_new(aggcxt, &opt);
	e->l_max = o->l_max;
	if (o->bpe)
		e->bpe = MemoryContextStrdup(e->hdr.eoh_context, o->bpe);
	if (o->targets)
	{
		e->targets = MemoryContextAlloc(e->hdr.eoh_context, VARSIZE(o->targets));
		memcpy(e->targets, o->targets, VARSIZE(o->targets));
	}
	return e;
}

static void
check_options(const CavExpanded *e, const RowOptions *o)
{
	bool		same = e->l_max == o->l_max &&
		(e->bpe == NULL) == (o->bpe == NULL) &&
		(e->bpe == NULL || strcmp(e->bpe, o->bpe) == 0) &&
		(e->targets == NULL) == (o->targets == NULL) &&
		(e->targets == NULL ||
		 (VARSIZE(e->targets) == VARSIZE(o->targets) &&
		  memcmp(e->targets, o->targets, VARSIZE(o->targets)) == 0));

	if (!same)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cav_accumulate options differ between rows of one group"),
				 errdetail("l_max, targets and bpe must be the same in every row aggregated together.")));
}

/* Merge the state in datum d (flat or expanded) into e. */
static void
merge_datum(CavExpanded *e, Datum d)
{
	CavExpanded *b = cavsql_expanded_any(d);
	bool		temp = (b == NULL);
	MemoryContext old;
	cq_error	err = {0};
	cq_code		rc;

	if (temp)
		b = cavsql_expanded_from_datum(CurrentMemoryContext, d);
	cavsql_expanded_changed(e);
	old = MemoryContextSwitchTo(e->hdr.eoh_context);
	rc = cav_state_merge(e->st, b->st, &err);
	MemoryContextSwitchTo(old);
	if (temp)
		MemoryContextDelete(b->hdr.eoh_context);
	if (rc != CQ_OK)
		corpq_core_error(&err, cavsql_hint(&err), "could not combine CAVs");
}

static bool
has_token(const char *s, int len)
{
	for (int i = 0; i < len; i++)
		if (!(s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')))
			return true;
	return false;
}

/* Token arrays of a segmentation result, copied out of the segmenter. */
static void
copy_tokens(const cq_tokens *t, const char ***toks, size_t **lens)
{
	char	   *buf = palloc(t->buf_len + 1);

	memcpy(buf, t->buf, t->buf_len);
	*toks = palloc((t->n + 1) * sizeof(char *));
	*lens = palloc((t->n + 1) * sizeof(size_t));
	for (size_t i = 0; i < t->n; i++)
	{
		(*toks)[i] = buf + t->off[i];
		(*lens)[i] = t->len[i];
	}
}

/* Add one pair whose target has at least one token. */
static void
add_pair(FunctionCallInfo fcinfo, CavExpanded *e, text *src, text *tgt)
{
	MemoryContext old;
	cq_error	err = {0};
	cq_code		rc;

	if (e->bpe == NULL)
	{
		cavsql_expanded_changed(e);
		old = MemoryContextSwitchTo(e->hdr.eoh_context);
		rc = cav_state_add_text(e->st, VARDATA_ANY(src), VARSIZE_ANY_EXHDR(src),
								VARDATA_ANY(tgt), VARSIZE_ANY_EXHDR(tgt), &err);
		MemoryContextSwitchTo(old);
	}
	else
	{
		CorpqSegmenter *seg = corpq_segmenter_cached(fcinfo, e->bpe);
		const char **st,
				  **tt;
		size_t	   *sl,
				   *tl,
					ns,
					nt;
		const cq_tokens *t = corpq_segment(seg, VARDATA_ANY(tgt), VARSIZE_ANY_EXHDR(tgt));

		nt = t->n;
		copy_tokens(t, &tt, &tl);
		t = corpq_segment(seg, VARDATA_ANY(src), VARSIZE_ANY_EXHDR(src));
		ns = t->n;
		copy_tokens(t, &st, &sl);
		cavsql_expanded_changed(e);
		old = MemoryContextSwitchTo(e->hdr.eoh_context);
		rc = cav_state_add(e->st, st, sl, ns, tt, tl, nt, &err);
		MemoryContextSwitchTo(old);
	}
	if (rc != CQ_OK)
		corpq_core_error(&err, cavsql_hint(&err), "could not add a pair to the CAV");
}

/*
 * cav_accumulate transition: (state cav, src text, tgt text
 * [, l_max int [, targets text[] [, bpe text]]]) -> cav
 */
Datum
corpq_cav_accumulate_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	RowOptions	o;
	CavExpanded *e = NULL;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "corpq_cav_accumulate_trans called in non-aggregate context");
	read_options(fcinfo, &o);
	/* a text without whitespace-separated tokens has no BPE tokens either */
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2) ||
		!has_token(VARDATA_ANY(PG_GETARG_TEXT_PP(2)),
				   VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(2))))
	{
		if (PG_ARGISNULL(0))
			PG_RETURN_NULL();
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	}
	if (!PG_ARGISNULL(0))
		e = cavsql_expanded_rw(PG_GETARG_DATUM(0));
	if (e != NULL && e->l_max > 0)
		check_options(e, &o);
	else
	{
		/* first row, or a state we do not own (copy it into a fresh one) */
		CavExpanded *fresh = state_new(aggcxt, &o);

		if (!PG_ARGISNULL(0))
			merge_datum(fresh, PG_GETARG_DATUM(0));
		e = fresh;
	}
	add_pair(fcinfo, e, PG_GETARG_TEXT_PP(1), PG_GETARG_TEXT_PP(2));
	PG_RETURN_DATUM(EOHPGetRWDatum(&e->hdr));
}

/* cav_accumulate final: the canonical flat value */
Datum
corpq_cav_accumulate_final(PG_FUNCTION_ARGS)
{
	CavExpanded *e = cavsql_expanded_any(PG_GETARG_DATUM(0));
	cav_view	v;

	if (e != NULL)
	{
		elog(DEBUG1, "cav_accumulate state: %zu bytes, peak %zu bytes",
			 cav_state_bytes(e->st), cav_state_peak_bytes(e->st));
		PG_RETURN_POINTER(cavsql_expanded_flatten(e));
	}
	cavsql_open_arg(fcinfo, 0, &v);
	PG_RETURN_POINTER(cavsql_make_varlena(v.buf, v.len));
}

/*
 * corpq.cav_merge(a cav, b cav) -> cav: the CAV of both corpora, and the
 * combine function of the aggregates.  Both inputs are validated and merged
 * as bytes in one linear pass (cav/merge_flat.h): combining the partial
 * states of parallel workers costs O(their size), with no state rebuilt.
 */
Datum
corpq_cav_merge(PG_FUNCTION_ARGS)
{
	cav_view	a,
				b;
	uint8	   *out;
	size_t		len;
	cq_error	err = {0};

	cavsql_open_arg(fcinfo, 0, &a);
	cavsql_open_arg(fcinfo, 1, &b);
	if (cav_merge_serialized(&a, &b, VARHDRSZ, &out, &len, &err) != CQ_OK)
		corpq_core_error(&err, cavsql_hint(&err), "could not combine CAVs");
	if (len > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("merged CAV of %zu bytes exceeds the maximum value size of 1 GB", len)));
	SET_VARSIZE(out, VARHDRSZ + len);
	PG_RETURN_POINTER(out);
}

/*
 * cav_sum transition: (state cav, value cav) -> cav.  Many values fold into
 * one live state (a hash merge per value, O(size of the value)); merging
 * bytes here instead would copy the growing result once per row.
 */
Datum
corpq_cav_sum_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	CavExpanded *e;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "corpq_cav_sum_trans called in non-aggregate context");
	e = cavsql_expanded_rw(PG_GETARG_DATUM(0));
	if (e == NULL)
		e = cavsql_expanded_from_datum(aggcxt, PG_GETARG_DATUM(0));
	merge_datum(e, PG_GETARG_DATUM(1));
	PG_RETURN_DATUM(EOHPGetRWDatum(&e->hdr));
}
