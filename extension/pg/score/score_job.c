/*
 * corpq.score_job(model, corpus, target, options): submission in the
 * caller's backend, and the "score" job, a row job (pg/jobs/row_job.h): the
 * corpus query's rows (id, src, tgt) are scored in blocks -- each block
 * encoded once, its pairs scored in length order batch by batch -- and go
 * into the target as (id, score...) in committed chunks, recorded in
 * corpq.row_job_chunks.  The scores come from the engine of corpq.score() and
 * dual_xent_scores() (corpq_score_rows, corpq_dual_xent_score), whose
 * values do not depend on the batch: each equals the per-row function's,
 * and a job resumed after a crash writes what an uninterrupted run writes.
 * pair_quality is a classifier's (pg/classifier/classifier.h), pinned at
 * submission and computed pair by pair as corpq.pair_quality() computes it;
 * a job that scores only pair_quality takes no model (its model argument is
 * NULL, and the job's model is the classifier).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "pg/base/base.h"
#include "pg/base/errors.h"
#include "pg/base/options.h"
#include "pg/classifier/classifier.h"
#include "pg/jobs/row_job.h"
#include "pg/score/dual_xent.h"
#include "pg/score/score.h"

PG_FUNCTION_INFO_V1(corpq_score_job);

static void score_job(CorpqJob *job);

/* ---- the target and the corpus ---- */

static const CorpqColumn corpus_columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT}
};

static const CorpqQuerySpec corpus_spec = {
	.what = "corpus", .columns = corpus_columns, .min_columns = 3, .max_columns = 3,
	.example = "SELECT id, src, tgt FROM my_corpus ORDER BY id", .need_rows = false
};

static double score_seconds(void *arg);
static void setup(CorpqRowJob *rj, void *arg);

static const char *const counters[] = {"scored", "too_long", "tokens", NULL};

enum
{
	COUNT_SCORED, COUNT_TOO_LONG, COUNT_TOKENS, N_COUNTS
};

static const CorpqRowJobKind kind = {
	.kind = "score", .source = &corpus_spec, .target_example = "my_scores",
	.query_arg = "corpus", .counters = counters, .seconds = score_seconds, .setup = setup,
	.phase = "scoring", .unit = "pairs", .done = "scored"
};

/* id bigint, then one double precision column per score: n + 1 columns. */
static CorpqRowJobColumn *
target_columns(const CorpqScorePlan *p)
{
	CorpqRowJobColumn *c = palloc0(sizeof(CorpqRowJobColumn) * (p->n + 1));

	c[0].name = "id";
	c[0].type = INT8OID;
	c[0].type_name = "bigint";
	for (int i = 0; i < p->n; i++)
	{
		c[i + 1].name = p->columns[i];
		c[i + 1].type = FLOAT8OID;
		c[i + 1].type_name = "double precision";
	}
	return c;
}

/* ---- submission ---- */

Datum
corpq_score_job(PG_FUNCTION_ARGS)
{
	CorpqRowJobCall call;
	CorpqRowJobSubmit sub = {0};
	CorpqScoreJobOptions o;
	CorpqScorePlan	p;
	StringInfoData more;
	char	   *classifier = NULL;

	if (PG_ARGISNULL(0))
	{
		/* no model: allowed when only pair_quality is scored (checked below) */
		corpq_require_arg(fcinfo, 1, kind.query_arg);
		corpq_require_arg(fcinfo, 2, "target_table");
		memset(&call, 0, sizeof(call));
		call.query = text_to_cstring(PG_GETARG_TEXT_PP(1));
		call.target = PG_GETARG_OID(2);
		call.options = PG_NARGS() > 3 && !PG_ARGISNULL(3) ? PG_GETARG_JSONB_P(3) : NULL;
	}
	else
		corpq_row_job_call(fcinfo, &kind, &call);
	corpq_options_parse(&corpq_score_job_options, call.options, &o);
	corpq_score_job_resolve(&o, &p);
	corpq_require_utf8();
	if (p.uses_model && call.model == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("score job needs a model to score %s", o.what),
				 errhint("Only pair_quality, a classifier's, is scored without a model.")));
	if (!p.uses_model && call.model != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("score job scores only pair_quality, which takes no model, but model \"%s\" is given",
						call.model),
				 errhint("Pass NULL as the model; the classifier is the option \"classifier\".")));
	/* the versions of now: a version committed while the job runs changes nothing */
	if (p.uses[SCORE_PAIR_QUALITY])
		classifier = classifier_pin(o.classifier);
	/* the job's model (corpq.job_timeline's, version_column's): the classifier without one */
	sub.model = p.uses_model ? corpq_model_pin(call.model) : classifier;
	initStringInfo(&more);
	appendStringInfoString(&more, "\"backward\": ");
	if (p.uses[SCORE_DUAL_XENT])
		escape_json(&more, corpq_model_pin(o.backward));
	else
		appendStringInfoString(&more, "null");
	appendStringInfoString(&more, ", \"classifier\": ");
	if (classifier)
		escape_json(&more, classifier);
	else
		appendStringInfoString(&more, "null");
	sub.more_args = more.data;
	sub.columns = target_columns(&p);
	sub.n_columns = p.n + 1;
	sub.skip_existing = o.skip_existing;
	sub.options_json = corpq_options_json(&corpq_score_job_options, &o);
	sub.threads = o.threads;
	sub.foreign_target = o.foreign_target;
	sub.version_column = o.version_column;
	{
		int64		id = corpq_row_job_submit(&kind, &call, &sub);

		/* skip_existing, no row missing: no job (row_job.h) */
		if (id == 0)
			PG_RETURN_NULL();
		PG_RETURN_INT64(id);
	}
}

/* ---- the job ---- */

/* One row of a block: the pair as read, and what each score came to. */
typedef struct BlockRow
{
	int64		id;
	uint64		mark;
	CorpqTextPair text;			/* src, tgt NULL: a NULL side */
	bool		null[N_SCORE_KINDS];	/* no score of this kind (a NULL side, too long) */
	double		scores[N_SCORE_KINDS];
	int			tokens;			/* target positions the first score took */
} BlockRow;

typedef struct ScoreRun
{
	CorpqJob   *job;
	CorpqScoreJobOptions o;
	CorpqScorePlan	p;
	char	   *model;			/* name@N */
	char	   *backward;		/* name@N, dual_xent */
	char	   *classifier;		/* name@N, pair_quality */
	CorpqModelSession *forward;
	ClassifierScorer *scorer;
	CorpqDualXent *dual;
	CorpqScoreCounts counts;	/* what the job's rows came to */
	CorpqRowJob *rj;
	MemoryContext block_cxt;
	BlockRow   *rows;
	int			n;
} ScoreRun;

static double
score_seconds(void *arg)
{
	return corpq_row_job_compute_seconds(((ScoreRun *) arg)->rj);
}

/* Rows read and scored at once: whole batches, and enough to sort by length. */
static int
block_rows(const CorpqScoreJobOptions *o)
{
	return Min(Max(1024, Min(o->batch_size, 1 << 16) * 8), 32768);
}

/* Row i of the batch into the block (in the block's context). */
static void
read_row(ScoreRun *r, const CorpqBatch *b, uint64 i, uint64 mark)
{
	BlockRow   *row = &r->rows[r->n++];
	CorpqTextPair *t = &row->text;

	memset(row, 0, sizeof(*row));
	(void) corpq_batch_int64(b, i, 1, &row->id);	/* never NULL: the row job checked */
	row->mark = mark;
	if (!corpq_batch_text(b, i, 2, &t->src, &t->src_len) ||
		!corpq_batch_text(b, i, 3, &t->tgt, &t->tgt_len))
	{
		t->src = t->tgt = NULL;
		return;
	}
	/* the batch's values go with the fetch */
	t->src = pnstrdup(t->src, t->src_len);
	t->tgt = pnstrdup(t->tgt, t->tgt_len);
}

static void
read_rows(void *arg, const CorpqBatch *b, const uint64 *marks)
{
	ScoreRun   *r = arg;
	MemoryContext old = MemoryContextSwitchTo(r->block_cxt);

	for (uint64 i = 0; i < b->n; i++)
		read_row(r, b, i, marks[i]);
	MemoryContextSwitchTo(old);
}

/*
 * Score kind k of the block's rows with the scoring engine of score() and
 * dual_xent_scores(): the per-row functions' bits, NULL for a NULL side and
 * (on_too_long "null") for a pair a model cannot take, counted in r->counts
 * for the first kind only (a row is one row, whatever it is scored for).
 */
static void
score_kind_of_block(ScoreRun *r, CorpqScoreKind k, bool count)
{
	CorpqScoreCounts discard = {0};
	CorpqScoreCounts *counts = count ? &r->counts : &discard;

	if (k == SCORE_PAIR_QUALITY)
	{
		/* pair by pair, as corpq.pair_quality(): NULL for a NULL side or a NULL model feature */
		for (int i = 0; i < r->n; i++)
		{
			BlockRow   *row = &r->rows[i];
			double		p;

			CHECK_FOR_INTERRUPTS();
			counts->rows++;
			row->null[k] = true;
			if (row->text.src == NULL)
			{
				counts->null_pairs++;
				continue;
			}
			if (classifier_scorer_prob(r->scorer,
									   cstring_to_text_with_len(row->text.src, row->text.src_len),
									   cstring_to_text_with_len(row->text.tgt, row->text.tgt_len), &p))
			{
				row->null[k] = false;
				row->scores[k] = p;
				counts->scored++;
			}
			else
				counts->too_long++;
		}
		return;
	}
	if (k == SCORE_DUAL_XENT)
	{
		CorpqTextPair *texts = palloc(sizeof(CorpqTextPair) * Max(r->n, 1));
		double	   *out = palloc(sizeof(double) * Max(r->n, 1));
		bool	   *null = palloc(sizeof(bool) * Max(r->n, 1));
		int			m = 0;

		/* the engine takes pairs without a NULL side */
		for (int i = 0; i < r->n; i++)
		{
			r->rows[i].null[k] = true;
			if (r->rows[i].text.src != NULL)
				texts[m++] = r->rows[i].text;
			else if (count)
				counts->rows++, counts->null_pairs++;
		}
		corpq_dual_xent_score(r->dual, r->model, r->backward, true, r->o.on_too_long,
							  texts, m, out, null, counts);
		for (int i = 0, j = 0; i < r->n; i++)
			if (r->rows[i].text.src != NULL)
			{
				r->rows[i].null[k] = null[j];
				r->rows[i].scores[k] = out[j++];
			}
		return;
	}
	{
		CorpqScoreRow *rows = palloc0(sizeof(CorpqScoreRow) * Max(r->n, 1));
		CorpqScoreArgs a = {
			.what = k == SCORE_SENT_PROB ? CORPQ_SCORE_SENT_PROB
			: k == SCORE_SENT_LOGPROB ? CORPQ_SCORE_SENT_LOGPROB : CORPQ_SCORE_UNCERTAINTY,
			.batch_size = r->o.batch_size, .passes = r->o.passes, .seed = (uint64) r->o.seed,
			.on_too_long = (CorpqTooLong) r->o.on_too_long
		};

		if (k == SCORE_UNCERTAINTY)
			a.measure = corpq_measure_from_name(r->o.measure);
		for (int i = 0; i < r->n; i++)
		{
			rows[i].src = r->rows[i].text.src;
			rows[i].src_len = r->rows[i].text.src_len;
			rows[i].tgt = r->rows[i].text.tgt;
			rows[i].tgt_len = r->rows[i].text.tgt_len;
		}
		corpq_score_rows(r->forward, &a, rows, r->n, counts);
		for (int i = 0; i < r->n; i++)
		{
			r->rows[i].null[k] = rows[i].null;
			r->rows[i].scores[k] = rows[i].score;
			if (count && !rows[i].null)
				r->rows[i].tokens = rows[i].tokens;
		}
	}
}

/* The block's rows into the target, in the query's order (chunks may commit). */
static void
put_rows(ScoreRun *r)
{
	Datum		values[N_SCORE_KINDS + 1];
	bool		nulls[N_SCORE_KINDS + 1] = {0};

	for (int i = 0; i < r->n; i++)
	{
		BlockRow   *row = &r->rows[i];
		bool		pair_null = row->text.src == NULL;
		bool		any_null = false;
		int64		counts[N_COUNTS] = {0};

		values[0] = Int64GetDatum(row->id);
		for (int s = 0; s < r->p.n; s++)
		{
			int			k = r->p.kinds[s];

			values[s + 1] = Float8GetDatum(row->scores[k]);
			nulls[s + 1] = row->null[k];
			any_null |= row->null[k];
		}
		/* a pair without a NULL side that some model could not take was too long */
		counts[COUNT_SCORED] = !any_null;
		counts[COUNT_TOO_LONG] = !pair_null && any_null;
		counts[COUNT_TOKENS] = row->tokens;
		corpq_row_job_put(r->rj, values, nulls, row->mark, counts);
	}
}

static void
load_args(ScoreRun *r)
{
	r->model = corpq_job_arg(r->job, "model");
	r->backward = corpq_job_arg(r->job, "backward");
	r->classifier = corpq_job_arg(r->job, "classifier");
	corpq_options_parse_text(&corpq_score_job_options, corpq_job_arg(r->job, "options"), &r->o);
	corpq_score_job_resolve(&r->o, &r->p);
}

/* In the job's first transaction: the target's columns, the pinned models. */
static void
setup(CorpqRowJob *rj, void *arg)
{
	ScoreRun   *r = arg;
	MemoryContext cxt = CurrentMemoryContext;

	corpq_row_job_columns(rj, target_columns(&r->p), r->p.n + 1);
	if (r->p.uses_model)
	{
		r->forward = corpq_model_session_create(cxt);
		corpq_model_session_use(r->forward, r->model, true);
	}
	if (r->p.uses[SCORE_DUAL_XENT])
		r->dual = corpq_dual_xent_create(cxt);
	if (r->p.uses[SCORE_PAIR_QUALITY])
		r->scorer = classifier_scorer_open(r->classifier, cxt);
}

static char *
kind_members(ScoreRun *r)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "\"model\": ");
	if (r->p.uses_model)
		escape_json(&b, r->model);
	else
		appendStringInfoString(&b, "null");
	if (r->backward)
	{
		appendStringInfoString(&b, ", \"backward\": ");
		escape_json(&b, r->backward);
	}
	if (r->classifier)
	{
		appendStringInfoString(&b, ", \"classifier\": ");
		escape_json(&b, r->classifier);
	}
	appendStringInfoString(&b, ", \"what\": ");
	escape_json(&b, r->o.what);
	appendStringInfo(&b, ", \"score_seconds\": %.3f, \"skip_existing\": %s",
					 corpq_row_job_compute_seconds(r->rj), r->o.skip_existing ? "true" : "false");
	return b.data;
}

static void
score_job(CorpqJob *job)
{
	MemoryContext cxt = CurrentMemoryContext;
	ScoreRun   *r = palloc0(sizeof(ScoreRun));
	int			n_block;

	r->job = job;
	load_args(r);
	n_block = block_rows(&r->o);
	r->rows = MemoryContextAllocHuge(cxt, sizeof(BlockRow) * n_block);
	r->block_cxt = AllocSetContextCreate(cxt, "corpq score block", ALLOCSET_DEFAULT_SIZES);
	r->rj = corpq_row_job_begin(job, &kind, r->o.chunk_rows, r->o.skip_existing, r);
	corpq_row_job_start(r->rj);

	/* block by block; a full chunk commits inside put_rows */
	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	while (corpq_row_job_fetch(r->rj, n_block, read_rows, r) > 0)
	{
		MemoryContext old = MemoryContextSwitchTo(r->block_cxt);

		for (int s = 0; s < r->p.n; s++)
			score_kind_of_block(r, r->p.kinds[s], s == 0);
		MemoryContextSwitchTo(old);
		put_rows(r);
		r->n = 0;
		MemoryContextReset(r->block_cxt);
		corpq_row_job_progress(r->rj, false);
	}
	corpq_row_job_finish(r->rj, kind_members(r));
	corpq_job_xact_commit(cxt);
}

void
corpq_score_init(void)
{
	/* a row job (pg/jobs/row_job.h): it resumes after its last chunk */
	corpq_job_register_kind("score", score_job, true);
}
