/*
 * corpq.dual_xent(): dual conditional cross-entropy filtering (Junczys-
 * Dowmunt, WMT 2018 parallel corpus filtering).  With the length-normalised
 * cross-entropies of a forward model A (src -> tgt) and a backward model B
 * (tgt -> src),
 *     H_A = -log P_A(tgt | src) / (|tgt| + 1),  H_B = -log P_B(src | tgt) / (|src| + 1)
 * (nats per token, </s> included: -ln sent_prob), the pair's score is
 *     exp(-(|H_A - H_B| + (H_A + H_B) / 2))   in (0, 1]:
 * high when both models find the pair probable and agree on it.
 *
 * Every caller (the per-row functions, dual_xent_scores() over a corpus
 * query, the dual_xent filter) goes through corpq_dual_xent_score(), which
 * runs the pairs in batches.  The forward packs pairs without padding, so a
 * pair's cross-entropies, and therefore its score, do not depend on the
 * pairs it shares a batch with.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "pg/base/base.h"
#include "pg/base/corpus_query.h"
#include "pg/base/errors.h"
#include "pg/score/dual_xent.h"
#include "pg/score/score.h"

PG_FUNCTION_INFO_V1(corpq_dual_xent);
PG_FUNCTION_INFO_V1(corpq_dual_xent_pinned);
PG_FUNCTION_INFO_V1(corpq_dual_xent_scores);

/* Pairs per forward pass at most: score()'s default batch_size. */
#define DUAL_BATCH 64

/* Rows of a corpus query read (and scored) at once by dual_xent_scores(). */
#define DUAL_CHUNK 4096

struct CorpqDualXent
{
	MemoryContext cxt;
	CorpqModelSession *forward;
	CorpqModelSession *backward;
};

CorpqDualXent *
corpq_dual_xent_create(MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "corpq dual_xent", ALLOCSET_SMALL_SIZES);
	CorpqDualXent *d = MemoryContextAlloc(cxt, sizeof(CorpqDualXent));

	d->cxt = cxt;
	d->forward = corpq_model_session_create(cxt);
	d->backward = corpq_model_session_create(cxt);
	return d;
}

void
corpq_dual_xent_free(CorpqDualXent *d)
{
	MemoryContextDelete(d->cxt);
}

static int
cmp_length(const void *a, const void *b)
{
	const cq_pair *x = *(cq_pair *const *) a;
	const cq_pair *y = *(cq_pair *const *) b;
	int			lx = x->src_len + x->tgt_len;
	int			ly = y->src_len + y->tgt_len;

	return lx != ly ? (lx < ly ? -1 : 1) : (x < y ? -1 : x > y);
}

/*
 * h[i] = -log P(y | x) / (|y| + 1) and positions[i] = |y| + 1 for each pair
 * not null[i], with (x, y) = (src, tgt), or (tgt, src) when reverse; a pair
 * too long for the model gets null[i] (or an ERROR, on_too_long).  Scratch
 * memory in CurrentMemoryContext.
 */
static void
cross_entropies(CorpqModelSession *s, const char *spec, bool pinned, CorpqTooLong on_too_long,
				const CorpqTextPair *pairs, int n, bool reverse, double *h, int *positions,
				bool *null)
{
	cq_pair    *enc = palloc(sizeof(cq_pair) * n);
	cq_pair   **order = palloc(sizeof(cq_pair *) * n);
	cq_pair    *batch = palloc(sizeof(cq_pair) * Min(n, DUAL_BATCH));
	int		   *row = palloc(sizeof(int) * n);	/* enc[j] is pairs[row[j]] */
	int			m = 0;

	corpq_model_session_use(s, spec, pinned);
	for (int i = 0; i < n; i++)
	{
		const CorpqTextPair *p = &pairs[i];
		bool		fits;

		CHECK_FOR_INTERRUPTS();
		if (null[i])
			continue;
		if (reverse)
			fits = corpq_model_session_encode(s, p->tgt, p->tgt_len, p->src, p->src_len, on_too_long, &enc[m]);
		else
			fits = corpq_model_session_encode(s, p->src, p->src_len, p->tgt, p->tgt_len, on_too_long, &enc[m]);
		if (!fits)
		{
			null[i] = true;
			continue;
		}
		row[m] = i;
		if (positions)
			positions[i] = enc[m].tgt_len + 1;
		order[m] = &enc[m];
		m++;
	}
	/* similar lengths together: smaller attention blocks, same results */
	qsort(order, m, sizeof(cq_pair *), cmp_length);
	for (int b = 0, nb; b < m; b += nb)
	{
		nb = corpq_score_batch_cut(s, (const cq_pair *const *) order + b, m - b, DUAL_BATCH, 0);
		for (int i = 0; i < nb; i++)
			batch[i] = *order[b + i];
		corpq_score_forward(s, batch, nb, NULL);
		for (int i = 0; i < nb; i++)
			h[row[order[b + i] - enc]] = -s->out.sent_logp[i] / s->out.sent_count[i];
	}
}

void
corpq_dual_xent_score(CorpqDualXent *d, const char *forward, const char *backward,
					  bool pinned, CorpqTooLong on_too_long, const CorpqTextPair *pairs,
					  int n, double *out, bool *null, CorpqScoreCounts *counts)
{
	MemoryContext scratch;
	MemoryContext old;
	double	   *ha;
	double	   *hb;
	int		   *positions;

	if (n <= 0)
		return;
	corpq_require_utf8();
	scratch = AllocSetContextCreate(CurrentMemoryContext, "corpq dual_xent batch",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(scratch);
	ha = palloc(sizeof(double) * n);
	hb = palloc(sizeof(double) * n);
	positions = palloc(sizeof(int) * n);	/* the forward's: the tokens counted */
	memset(null, 0, sizeof(bool) * n);
	cross_entropies(d->forward, forward, pinned, on_too_long, pairs, n, false, ha, positions, null);
	cross_entropies(d->backward, backward, pinned, on_too_long, pairs, n, true, hb, NULL, null);
	for (int i = 0; i < n; i++)
	{
		if (!null[i])
			out[i] = exp(-(fabs(ha[i] - hb[i]) + 0.5 * (ha[i] + hb[i])));
		if (counts)
		{
			counts->rows++;
			counts->scored += !null[i];
			counts->too_long += null[i];
			counts->tokens += null[i] ? 0 : positions[i];
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(scratch);
}

static Datum
dual_xent(FunctionCallInfo fcinfo, bool pinned)
{
	text	   *src = PG_GETARG_TEXT_PP(2);
	text	   *tgt = PG_GETARG_TEXT_PP(3);
	CorpqTextPair p = {VARDATA_ANY(src), VARSIZE_ANY_EXHDR(src),
	VARDATA_ANY(tgt), VARSIZE_ANY_EXHDR(tgt)};
	CorpqTooLong on_too_long = corpq_too_long_arg(fcinfo, 4);
	double		r;
	bool		null;

	/* kept across the calls of a query: names resolve once */
	if (fcinfo->flinfo->fn_extra == NULL)
		fcinfo->flinfo->fn_extra = corpq_dual_xent_create(fcinfo->flinfo->fn_mcxt);
	corpq_dual_xent_score(fcinfo->flinfo->fn_extra, text_to_cstring(PG_GETARG_TEXT_PP(0)),
						  text_to_cstring(PG_GETARG_TEXT_PP(1)), pinned, on_too_long, &p, 1,
						  &r, &null, NULL);
	if (null)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(r);
}

Datum
corpq_dual_xent(PG_FUNCTION_ARGS)
{
	return dual_xent(fcinfo, false);
}

Datum
corpq_dual_xent_pinned(PG_FUNCTION_ARGS)
{
	return dual_xent(fcinfo, true);
}

static const CorpqColumn corpus_columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT}
};

static const CorpqQuerySpec corpus_spec = {
	.what = "corpus", .columns = corpus_columns, .min_columns = 3, .max_columns = 3,
	.example = "SELECT id, src, tgt FROM my_corpus"
};

/* What dual_xent_scores() scores with and returns into. */
typedef struct ScoresRun
{
	CorpqDualXent *d;
	const char *forward;		/* name@N, pinned when the call started */
	const char *backward;
	CorpqTooLong on_too_long;
	CorpqScoreCounts counts;
	ReturnSetInfo *rsinfo;
} ScoresRun;

/* Score a chunk of the corpus (in the batch context), return it in order. */
static void
scores_chunk(void *arg, const CorpqBatch *batch)
{
	ScoresRun  *r = arg;
	int			n = (int) batch->n;
	CorpqTextPair *pairs = palloc(sizeof(CorpqTextPair) * n);
	double	   *scores = palloc(sizeof(double) * n);
	bool	   *null = palloc(sizeof(bool) * n);
	int		   *at = palloc(sizeof(int) * n);	/* row -> its pair, -1: NULL */
	int			m = 0;

	for (int i = 0; i < n; i++)
	{
		CorpqTextPair *p = &pairs[m];

		at[i] = corpq_batch_text(batch, i, 2, &p->src, &p->src_len) &&
			corpq_batch_text(batch, i, 3, &p->tgt, &p->tgt_len) ? m++ : -1;
	}
	r->counts.rows += n - m;
	r->counts.null_pairs += n - m;
	corpq_dual_xent_score(r->d, r->forward, r->backward, true, r->on_too_long, pairs, m,
						  scores, null, &r->counts);
	for (int i = 0; i < n; i++)
	{
		int64		id = 0;
		bool		id_null = !corpq_batch_int64(batch, i, 1, &id);
		bool		no_score = at[i] < 0 || null[at[i]];
		Datum		values[2] = {Int64GetDatum(id), Float8GetDatum(no_score ? 0 : scores[at[i]])};
		bool		nulls[2] = {id_null, no_score};

		tuplestore_putvalues(r->rsinfo->setResult, r->rsinfo->setDesc, values, nulls);
	}
}

/*
 * corpq.dual_xent_scores(forward, backward, corpus, on_too_long): every row
 * of a corpus query (id, src, tgt) scored in batches; the values equal
 * dual_xent()'s.
 */
Datum
corpq_dual_xent_scores(PG_FUNCTION_ARGS)
{
	static const char *const arg_names[] = {"forward", "backward", "corpus", "on_too_long"};
	ScoresRun	run = {0};

	/* not STRICT: a NULL argument is an error, not an empty result */
	for (int i = 0; i < PG_NARGS(); i++)
		corpq_require_arg(fcinfo, i, arg_names[i]);
	corpq_require_utf8();
	run.on_too_long = corpq_too_long_arg(fcinfo, 3);
	/* the versions of the call's start, whatever is committed meanwhile */
	run.forward = corpq_model_pin(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	run.backward = corpq_model_pin(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	InitMaterializedSRF(fcinfo, 0);
	run.d = corpq_dual_xent_create(CurrentMemoryContext);
	run.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	(void) corpq_query_stream(text_to_cstring(PG_GETARG_TEXT_PP(2)), &corpus_spec,
							  DUAL_CHUNK, scores_chunk, &run);
	corpq_notice_too_long(&run.counts, psprintf("model \"%s\" or \"%s\"", run.forward, run.backward));
	return (Datum) 0;
}
