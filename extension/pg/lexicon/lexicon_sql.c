/*
 * Per-row SQL functions over a trained lexicon: align, align_score,
 * coverage, align_stats (both models, symmetrised as trained; align_stats
 * keeps each direction and each side apart), mono_uncertainty (UncSamp,
 * thesis Eq. 6.3) and word_rarity (Eq. 6.5).  The lexicon is loaded once per
 * query (fn_extra).
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "align/lexdict.h"
#include "align/symmetrize.h"
#include "pg/base/errors.h"
#include "pg/lexicon/lexicon.h"

typedef struct PairResult
{
	cq_pair_score score;
	cq_link    *links;
	bool		empty;			/* a side has no tokens */
} PairResult;

/*
 * Symmetrising an n x m pair needs 4 n m bytes of grids (align/symmetrize.h),
 * the dominant cost in time and memory: a pair may use at most work_mem of
 * it, as a sort or hash of one query node may.
 */
static void
check_pair_size(int n, int m)
{
	size_t		need = cq_symmetrize_work_bytes(n, m);

	if (need > (size_t) work_mem * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("sentence pair too long to align: %d source and %d target tokens", n, m),
				 errdetail("Aligning it needs %zu kB of work space; work_mem is %d kB.",
						   (need + 1023) / 1024, work_mem),
				 errhint("Raise work_mem, or split the sentences.")));
}

static void
score_pair(FunctionCallInfo fcinfo, PairResult *out)
{
	LexLoaded  *lx = lexicon_cached(fcinfo, text_to_cstring(PG_GETARG_TEXT_PP(0)), true);
	text	   *s = PG_GETARG_TEXT_PP(1);
	text	   *t = PG_GETARG_TEXT_PP(2);
	int			n,
				m;
	int32	   *src = lexicon_encode(lx, true, VARDATA_ANY(s), VARSIZE_ANY_EXHDR(s), &n);
	int32	   *tgt = lexicon_encode(lx, false, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &m);
	cq_error err = {0};

	out->empty = n == 0 || m == 0;
	check_pair_size(n, m);
	out->links = palloc(((size_t) n + m + 1) * sizeof(cq_link));
	if (out->empty)
	{
		memset(&out->score, 0, sizeof(out->score));
		return;
	}
	if (cq_lexicon_score_pair(&lx->model, src, n, tgt, m, lx->opt.symmetrize,
							  out->links, &out->score, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not align the pair");
}

PG_FUNCTION_INFO_V1(corpq_lexicon_align);

Datum
corpq_lexicon_align(PG_FUNCTION_ARGS)
{
	PairResult	r;
	size_t		cap;
	char	   *buf;

	score_pair(fcinfo, &r);
	if (r.empty)
		PG_RETURN_TEXT_P(cstring_to_text(""));
	/* "s-t " per link, positions below 2^31 */
	cap = (size_t) r.score.n_links * 24 + 1;
	buf = palloc(cap);
	cq_links_format(r.links, r.score.n_links, buf, cap);
	PG_RETURN_TEXT_P(cstring_to_text(buf));
}

/* A pair's align_score or coverage: NULL when a side has no tokens. */
static Datum
pair_score(FunctionCallInfo fcinfo, bool coverage)
{
	PairResult	r;

	score_pair(fcinfo, &r);
	if (r.empty)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(coverage ? r.score.coverage : r.score.align_score);
}

PG_FUNCTION_INFO_V1(corpq_lexicon_align_score);
PG_FUNCTION_INFO_V1(corpq_lexicon_coverage);

Datum
corpq_lexicon_align_score(PG_FUNCTION_ARGS)
{
	return pair_score(fcinfo, false);
}

Datum
corpq_lexicon_coverage(PG_FUNCTION_ARGS)
{
	return pair_score(fcinfo, true);
}

PG_FUNCTION_INFO_V1(corpq_lexicon_align_stats);

/*
 * (fwd_score, rev_score, src_coverage, tgt_coverage, src_tail, tgt_tail) of a
 * pair: what align_score and coverage average or leave out, and how much
 * worse each side's end is explained than its start (lexicon.h).  The pair-quality classifier's lexicon
 * features are these six, so an appended or truncated side shows on the
 * side it happened (docs/curation.md).  NULL when a side has no tokens.
 */
Datum
corpq_lexicon_align_stats(PG_FUNCTION_ARGS)
{
	PairResult	r;
	TupleDesc	td;
	Datum		v[6];
	bool		nulls[6] = {false, false, false, false, false, false};

	if (get_call_result_type(fcinfo, NULL, &td) != TYPEFUNC_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("align_stats must be called where a record is accepted")));
	score_pair(fcinfo, &r);
	if (r.empty)
		PG_RETURN_NULL();
	v[0] = Float8GetDatum(r.score.fwd_score);
	v[1] = Float8GetDatum(r.score.rev_score);
	v[2] = Float8GetDatum(r.score.coverage);
	v[3] = Float8GetDatum(r.score.tgt_coverage);
	v[4] = Float8GetDatum(r.score.src_tail);
	v[5] = Float8GetDatum(r.score.tgt_tail);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(td), v, nulls)));
}

PG_FUNCTION_INFO_V1(corpq_lexicon_mono_uncertainty);

Datum
corpq_lexicon_mono_uncertainty(PG_FUNCTION_ARGS)
{
	LexLoaded  *lx = lexicon_cached(fcinfo, text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	text	   *s = PG_GETARG_TEXT_PP(1);
	int			n;
	int32	   *ids = lexicon_encode(lx, true, VARDATA_ANY(s), VARSIZE_ANY_EXHDR(s), &n);

	if (n == 0)
		PG_RETURN_NULL();
	/* tokens without links (unknown ones included) score 1e-6 */
	PG_RETURN_FLOAT8(cq_lexdict_uncertainty(&lx->dict, ids, n));
}

PG_FUNCTION_INFO_V1(corpq_lexicon_word_rarity);

Datum
corpq_lexicon_word_rarity(PG_FUNCTION_ARGS)
{
	LexLoaded  *lx = lexicon_cached(fcinfo, text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	text	   *s = PG_GETARG_TEXT_PP(1);
	int			n;
	int32	   *ids = lexicon_encode(lx, true, VARDATA_ANY(s), VARSIZE_ANY_EXHDR(s), &n);
	double		total = (double) Max(lx->src_total, 1);
	double		sum = 0;

	if (n == 0)
		PG_RETURN_NULL();
	for (int i = 0; i < n; i++)
	{
		/* a token never seen in training counts as seen once */
		int64		c = ids[i] >= 0 ? lx->src_counts[ids[i]] : 0;

		sum += log((double) Max(c, 1) / total);
	}
	PG_RETURN_FLOAT8(-sum / n);
}
