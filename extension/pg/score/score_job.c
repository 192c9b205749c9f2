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
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "pg/base/base.h"
#include "pg/base/errors.h"
#include "pg/base/options.h"
#include "pg/jobs/row_job.h"
#include "pg/score/dual_xent.h"
#include "pg/score/score.h"

PG_FUNCTION_INFO_V1(corpq_score_job);

static void score_job(CorpqJob *job);

/* ---- what to score ---- */

typedef enum ScoreKind
{
	SCORE_SENT_PROB,
	SCORE_SENT_LOGPROB,
	SCORE_UNCERTAINTY,
	SCORE_DUAL_XENT,
	N_SCORE_KINDS
} ScoreKind;

static const char *const score_names[] = {"sent_prob", "sent_logprob", "uncertainty", "dual_xent"};


typedef struct ScoreJobOptions
{
	char	   *what;			/* score names, separated by commas */
	char	   *columns;		/* the target's columns for them; unset: see resolve() */
	char	   *measure;		/* uncertainty's */
	int			passes;
	int64		seed;
	char	   *backward;		/* dual_xent's backward model */
	int			batch_size;
	int			chunk_rows;
	int			threads;		/* the job's (pg/jobs/jobs.h) */
	bool		skip_existing;
	int			on_too_long;	/* CorpqTooLong (too_long.h) */
} ScoreJobOptions;

/* The scores of a job, resolved from the options. */
typedef struct ScorePlan
{
	int			n;
	ScoreKind	kinds[N_SCORE_KINDS];
	char	   *columns[N_SCORE_KINDS];
	bool		uses[N_SCORE_KINDS];
} ScorePlan;

/* The items of a comma-separated list (spaces around them trimmed), at most max. */
static int
split_list(const char *list, char **items, int max)
{
	char	   *s = pstrdup(list);
	char	   *save = NULL;
	int			n = 0;

	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		char	   *end = tok + strlen(tok);

		while (*tok == ' ')
			tok++;
		while (end > tok && end[-1] == ' ')
			*--end = '\0';
		if (n == max || *tok == '\0')
			return -1;
		items[n++] = tok;
	}
	return n;
}

/* The kind of a score name, or -1. */
static int
score_kind(const char *name)
{
	for (int k = 0; k < N_SCORE_KINDS; k++)
		if (strcmp(name, score_names[k]) == 0)
			return k;
	return -1;
}

/* A .valid check: one to four known score names, none twice. */
static bool
what_valid(const void *field)
{
	char	   *items[N_SCORE_KINDS];
	bool		seen[N_SCORE_KINDS] = {0};
	int			n = split_list(*(char *const *) field, items, N_SCORE_KINDS);

	for (int i = 0; i < n; i++)
	{
		int			k = score_kind(items[i]);

		if (k < 0 || seen[k])
			return false;
		seen[k] = true;
	}
	return n > 0;
}

/* A .valid check: column names, none empty, none twice, none "id". */
static bool
columns_valid(const void *field)
{
	char	   *items[N_SCORE_KINDS];
	int			n = split_list(*(char *const *) field, items, N_SCORE_KINDS);

	for (int i = 0; i < n; i++)
	{
		if (strcmp(items[i], "id") == 0 || strlen(items[i]) >= NAMEDATALEN)
			return false;
		for (int j = 0; j < i; j++)
			if (strcmp(items[i], items[j]) == 0)
				return false;
	}
	return n > 0;
}

static bool
scores(const ScoreJobOptions *o, ScoreKind kind)
{
	char	   *items[N_SCORE_KINDS];
	int			n = split_list(o->what, items, N_SCORE_KINDS);

	for (int i = 0; i < n; i++)
		if (score_kind(items[i]) == (int) kind)
			return true;
	return false;
}

/* .echo: the options of one score only with it. */
static bool
echo_uncertainty(const void *options)
{
	return scores(options, SCORE_UNCERTAINTY);
}

static bool
echo_dual_xent(const void *options)
{
	return scores(options, SCORE_DUAL_XENT);
}

#define OPT(field) CORPQ_OPT_FIELD(ScoreJobOptions, field)

static const CorpqOption rows[] = {
	{.key = "what", OPT(what), .type = CORPQ_OPT_STRING, .def_string = "sent_prob",
		.valid = what_valid,
	.expected = "one or more of sent_prob, sent_logprob, uncertainty, dual_xent, separated by commas, each once"},
	{.key = "columns", OPT(columns), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
		.valid = columns_valid,
	.expected = "one column name per score, separated by commas, each once, none \"id\""},
	/* checked by the core's names (resolve) */
	{.key = "measure", OPT(measure), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .echo = echo_uncertainty},
	{.key = "passes", OPT(passes), .type = CORPQ_OPT_INT, .min = 1, .max = CORPQ_MAX_PASSES,
	.flags = CORPQ_OPT_UNSET, .echo = echo_uncertainty},
	{.key = "seed", OPT(seed), .type = CORPQ_OPT_INT64, .min = 0, .max = PG_INT64_MAX,
	.flags = CORPQ_OPT_UNSET, .echo = echo_uncertainty},
	{.key = "backward", OPT(backward), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .echo = echo_dual_xent},
	{.key = "batch_size", OPT(batch_size), .type = CORPQ_OPT_INT, .min = 1, .max = 65536, .def = 64},
	{.key = "chunk_rows", OPT(chunk_rows), .type = CORPQ_OPT_INT, .min = 1, .max = 10000000,
	.def = 1000},
	CORPQ_JOB_THREADS_OPTION(ScoreJobOptions, threads),
	{.key = "skip_existing", OPT(skip_existing), .type = CORPQ_OPT_BOOL},
	{.key = "on_too_long", OPT(on_too_long), .type = CORPQ_OPT_ENUM, .names = corpq_too_long_names,
	.def = CORPQ_TOO_LONG_NULL},
	{0}
};

static const CorpqOptionTable table = {"score job", rows};

/* An option given for a score the job does not compute. */
static void
needs_score(const char *key, ScoreKind kind)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("score job option \"%s\" needs \"%s\" in \"what\"", key, score_names[kind]),
			 errhint("Leave it out, or score %s too.", score_names[kind])));
}

/* The cross-key checks and defaults, and the plan. */
static void
resolve(ScoreJobOptions *o, ScorePlan *p)
{
	char	   *names[N_SCORE_KINDS];
	int			n_columns = 0;

	memset(p, 0, sizeof(*p));
	p->n = split_list(o->what, names, N_SCORE_KINDS);
	for (int i = 0; i < p->n; i++)
	{
		p->kinds[i] = (ScoreKind) score_kind(names[i]);
		p->uses[p->kinds[i]] = true;
		p->columns[i] = p->n == 1 ? "score" : names[i];
	}
	if (o->columns)
		n_columns = split_list(o->columns, p->columns, N_SCORE_KINDS);
	if (o->columns && n_columns != p->n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("score job option \"columns\" names %d columns for %d scores", n_columns, p->n),
				 errhint("Name one target column per score of \"what\", in its order.")));
	if (!p->uses[SCORE_UNCERTAINTY])
	{
		if (o->measure)
			needs_score("measure", SCORE_UNCERTAINTY);
		if (o->passes != CORPQ_OPT_UNSET_VALUE)
			needs_score("passes", SCORE_UNCERTAINTY);
		if (o->seed != CORPQ_OPT_UNSET_VALUE)
			needs_score("seed", SCORE_UNCERTAINTY);
	}
	if (!p->uses[SCORE_DUAL_XENT] && o->backward)
		needs_score("backward", SCORE_DUAL_XENT);
	if (p->uses[SCORE_DUAL_XENT] && !o->backward)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("score job option \"backward\" is required to score dual_xent"),
				 errhint("Name the model that translates the other way (tgt to src): '{\"what\": \"dual_xent\", \"backward\": \"my_model_rev\"}'.")));
	/* corpq.uncertainty()'s defaults */
	if (p->uses[SCORE_UNCERTAINTY])
	{
		if (!o->measure)
			o->measure = pstrdup("enteos");
		(void) corpq_measure_from_name(o->measure);
		if (o->passes == CORPQ_OPT_UNSET_VALUE)
			o->passes = 30;
		if (o->seed == CORPQ_OPT_UNSET_VALUE)
			o->seed = 0;
	}
}

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
target_columns(const ScorePlan *p)
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
	ScoreJobOptions o;
	ScorePlan	p;

	corpq_row_job_call(fcinfo, &kind, &call);
	corpq_options_parse(&table, call.options, &o);
	resolve(&o, &p);
	corpq_require_utf8();
	/* the versions of now: a version committed while the job runs changes nothing */
	sub.model = corpq_model_pin(call.model);
	if (p.uses[SCORE_DUAL_XENT])
	{
		StringInfoData b;

		initStringInfo(&b);
		appendStringInfoString(&b, "\"backward\": ");
		escape_json(&b, corpq_model_pin(o.backward));
		sub.more_args = b.data;
	}
	else
		sub.more_args = "\"backward\": null";
	sub.columns = target_columns(&p);
	sub.n_columns = p.n + 1;
	sub.skip_existing = o.skip_existing;
	sub.options_json = corpq_options_json(&table, &o);
	sub.threads = o.threads;
	PG_RETURN_INT64(corpq_row_job_submit(&kind, &call, &sub));
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
	ScoreJobOptions o;
	ScorePlan	p;
	char	   *model;			/* name@N */
	char	   *backward;		/* name@N, dual_xent */
	CorpqModelSession *forward;
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
block_rows(const ScoreJobOptions *o)
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
score_kind_of_block(ScoreRun *r, ScoreKind k, bool count)
{
	CorpqScoreCounts discard = {0};
	CorpqScoreCounts *counts = count ? &r->counts : &discard;

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
	corpq_options_parse_text(&table, corpq_job_arg(r->job, "options"), &r->o);
	resolve(&r->o, &r->p);
}

/* In the job's first transaction: the target's columns, the pinned models. */
static void
setup(CorpqRowJob *rj, void *arg)
{
	ScoreRun   *r = arg;
	MemoryContext cxt = CurrentMemoryContext;

	corpq_row_job_columns(rj, target_columns(&r->p), r->p.n + 1);
	r->forward = corpq_model_session_create(cxt);
	corpq_model_session_use(r->forward, r->model, true);
	if (r->p.uses[SCORE_DUAL_XENT])
		r->dual = corpq_dual_xent_create(cxt);
}

static char *
kind_members(ScoreRun *r)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "\"model\": ");
	escape_json(&b, r->model);
	if (r->backward)
	{
		appendStringInfoString(&b, ", \"backward\": ");
		escape_json(&b, r->backward);
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
