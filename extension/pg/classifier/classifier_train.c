/*
 * corpq.classifier_train(): checks and submission in the caller's backend,
 * and the "classifier_train" job:
 *
 *   reading    the clean query (up to max_pairs pairs with both sides) and
 *              the other-language query, as the job's owner
 *   noise      cq_noise_generate: the clean pairs and their noise, labelled
 *   features   in chunks, each in its own transaction (the model functions
 *              read the catalog), pairs in group order (a clean pair, then
 *              the noise made from it), so when max_seconds is spent the
 *              pairs computed are whole groups; a pair whose model feature
 *              is NULL (too long for a model) is left out and counted
 *   training   cq_classifier_train: held-out split by group
 *              (cq_holdout_split), weights on the rest, Platt on it
 *   report     on the held-out pairs, per noise type: the share removed at
 *              0.5, precision against the held-out clean pairs removed, ROC
 *              AUC against the held-out clean pairs; the clean pairs kept;
 *              the features' weights (logistic) or split counts (trees)
 *   writing    the version and the job's result in one final transaction
 *
 * The phases are classifier_build(), which corpq.curate() calls too when it
 * trains what it needs (it writes its own result after the version).
 * Nothing is written before that transaction, so the kind is restartable
 * and a failed or cancelled run leaves the catalog untouched.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pg/base/catalog.h"
#include "pg/base/corpus_query.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/options.h"
#include "curate/classifier.h"
#include "pg/classifier/classifier.h"
#include "pg/text/text.h"

PG_FUNCTION_INFO_V1(corpq_classifier_train);

/* pairs per transaction of the features phase */
#define FEATURE_CHUNK 1000
/* rows per fetch of the queries */
#define READ_BATCH 1000

static const CorpqColumn pair_columns[] = {
	{"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT}
};
static const CorpqColumn sentence_columns[] = {{"sentence", CORPQ_COLUMN_TEXT}};
static const CorpqQuerySpec pair_spec = {
	.what = "clean", .columns = pair_columns, .min_columns = 2, .max_columns = 2,
	.example = "SELECT src, tgt FROM corpus", .need_rows = true
};
static const CorpqQuerySpec sentence_spec = {
	.what = "other-language", .columns = sentence_columns, .min_columns = 1,
	.max_columns = 1, .example = "SELECT sentence FROM german_sentences", .need_rows = false
};

/* ERROR unless the clean query gives CURATE_MIN_CLEAN_PAIRS pairs with both sides. */
static void
check_enough_pairs(const char *query)
{
	char	   *sql = psprintf("SELECT pg_catalog.count(*) FROM (SELECT 1 FROM (%s\n) q(src, tgt) "
							   "WHERE q.src IS NOT NULL AND q.tgt IS NOT NULL LIMIT %d) s",
							   corpq_query_bare(query), CURATE_MIN_CLEAN_PAIRS);
	bool		isnull;
	int64		n;

	/* the user's query, as the user, with the user's search_path (as corpus_query.c runs it) */
	SPI_connect();
	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not count the clean query's pairs");
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	if (n < CURATE_MIN_CLEAN_PAIRS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the clean query returns " INT64_FORMAT " pairs with both sides; "
						"a classifier needs at least %d", n, CURATE_MIN_CLEAN_PAIRS),
				 errhint("Give more clean pairs: the classifier holds part of them out "
						 "to calibrate and measure itself.")));
}

void
classifier_check_clean_query(const char *query, const ClassifierOptions *o)
{
	(void) corpq_query_check(query, &pair_spec);
	if (o->other_language_query)
		(void) corpq_query_check(o->other_language_query, &sentence_spec);
	check_enough_pairs(query);
}

Datum
corpq_classifier_train(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ClassifierOptions o;
	StringInfoData args;

	classifier_check_name(name);
	corpq_require_utf8();		/* words and cuts are UTF-8 code points */
	classifier_options_parse(PG_GETARG_JSONB_P(2), &o);
	/* a new name is created by the job; an existing one must be the caller's */
	corpq_catalog_check_writer(&corpq_kind_classifier, name, "add a version to",
							   "Only members of the classifier's owner role can train it.");
	classifier_check_clean_query(query, &o);

	initStringInfo(&args);
	appendStringInfoString(&args, "{\"name\": ");
	escape_json(&args, name);
	appendStringInfoString(&args, ", \"clean_query\": ");
	escape_json(&args, query);
	appendStringInfo(&args, ", \"options\": %s}", classifier_options_json(&o));
	PG_RETURN_INT64(corpq_job_submit("classifier_train", args.data, o.threads));
}

/* ---- the job ---- */

/* Strings read from a query, kept in the job's context. */
typedef struct Texts
{
	MemoryContext cxt;
	cq_str	   *a;
	cq_str	   *b;				/* the second column, or NULL */
	int64		n;
	int64		cap;			/* allocated */
	int64		limit;			/* kept at most */
	int64		rows;			/* read, NULLs included */
	CorpqJob   *job;
	const char *phase;
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
read_rows(void *arg, const CorpqBatch *batch)
{
	Texts	   *t = arg;

	if (t->n + (int64) batch->n > t->cap && t->cap < t->limit)
	{
		t->cap = Min(t->limit, Max(t->cap * 2, t->n + (int64) batch->n));
		t->a = repalloc_huge(t->a, sizeof(cq_str) * t->cap);
		if (t->b)
			t->b = repalloc_huge(t->b, sizeof(cq_str) * t->cap);
	}
	for (uint64 i = 0; i < batch->n && t->n < t->cap; i++)
	{
		const char *s,
				   *g = NULL;
		int			ls,
					lg = 0;

		if (!corpq_batch_text(batch, i, 1, &s, &ls) ||
			(t->b && !corpq_batch_text(batch, i, 2, &g, &lg)))
			continue;
		t->a[t->n] = keep(t->cxt, s, ls);
		if (t->b)
			t->b[t->n] = keep(t->cxt, g, lg);
		t->n++;
	}
	t->rows += batch->n;
	corpq_job_progress(t->job, t->phase, t->rows, 0, "rows", NULL, false);
}

static void
read_texts(CorpqJob *job, const char *query, const CorpqQuerySpec *spec, bool pairs,
		   int64 limit, const char *phase, Texts *t)
{
	t->cxt = CurrentMemoryContext;
	t->limit = limit;
	t->cap = Min(limit, READ_BATCH);
	t->a = MemoryContextAllocHuge(t->cxt, sizeof(cq_str) * t->cap);
	t->b = pairs ? MemoryContextAllocHuge(t->cxt, sizeof(cq_str) * t->cap) : NULL;
	t->n = t->rows = 0;
	t->job = job;
	t->phase = phase;
	corpq_job_progress(job, phase, 0, 0, "rows", NULL, true);
	corpq_query_stream(query, spec, READ_BATCH, read_rows, t);
}

/* The rows of the set in group order: a clean pair, then the noise made from it. */
static int64 *
group_order(const cq_noise_set *set, int64 n_clean, int64 *groups)
{
	int64	   *start = palloc0(sizeof(int64) * (n_clean + 1));
	int64	   *order = palloc(sizeof(int64) * set->n);

	for (size_t i = 0; i < set->n; i++)
	{
		groups[i] = set->pairs[i].base;
		start[groups[i] + 1]++;
	}
	for (int64 g = 0; g < n_clean; g++)
		start[g + 1] += start[g];
	for (size_t i = 0; i < set->n; i++)
		order[start[groups[i]]++] = (int64) i;
	pfree(start);
	return order;
}

static void
json_num(StringInfo b, const char *key, double x)
{
	appendStringInfo(b, "\"%s\": ", key);
	corpq_json_number(b, x);
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* The number of values of sorted v[0..n) below x, and equal to it. */
static void
rank_of(const double *v, int64 n, double x, int64 *below, int64 *equal)
{
	int64		lo = 0,
				hi = n;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	*below = lo;
	hi = n;
	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (v[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	*equal = lo - *below;
}

typedef struct Computed
{
	int64		n;				/* rows with features */
	double	   *x;				/* [n, d] */
	unsigned char *y;			/* 1 clean, 0 noise */
	unsigned char *holdout;
	cq_noise_type *type;
} Computed;

/* The held-out figures as JSON: per type, the clean pairs kept, minima. */
static void
append_heldout(StringInfo b, const cq_classifier *c, const Computed *k)
{
	double	   *p = palloc(sizeof(double) * Max(k->n, 1));
	double	   *clean = palloc(sizeof(double) * Max(k->n, 1));
	int64		n_clean = 0,
				clean_removed = 0;
	double		min_auc = INFINITY,
				min_removed = INFINITY;
	bool		first = true;

	for (int64 i = 0; i < k->n; i++)
	{
		if (!k->holdout[i])
			continue;
		p[i] = cq_classifier_prob(c, k->x + i * c->d);
		if (k->type[i] == CQ_NOISE_CLEAN)
		{
			clean[n_clean++] = p[i];
			clean_removed += p[i] < 0.5;
		}
	}
	qsort(clean, n_clean, sizeof(double), cmp_double);
	appendStringInfo(b, "{\"clean\": " INT64_FORMAT ", ", n_clean);
	json_num(b, "clean_kept", n_clean ? 1.0 - (double) clean_removed / n_clean : NAN);
	appendStringInfoString(b, ", \"types\": {");
	for (int t = 1; t < CQ_NOISE_NTYPES; t++)
	{
		int64		n = 0,
					removed = 0;
		double		wins = 0;

		for (int64 i = 0; i < k->n; i++)
		{
			int64		below,
						equal;

			if (!k->holdout[i] || k->type[i] != (cq_noise_type) t)
				continue;
			n++;
			removed += p[i] < 0.5;
			/* clean pairs scored above this noisy one count 1, ties 1/2 */
			rank_of(clean, n_clean, p[i], &below, &equal);
			wins += (double) (n_clean - below - equal) + 0.5 * equal;
		}
		if (n == 0)
			continue;
		appendStringInfo(b, "%s\"%s\": {\"pairs\": " INT64_FORMAT ", ", first ? "" : ", ",
						 cq_noise_name((cq_noise_type) t), n);
		first = false;
		json_num(b, "removed", (double) removed / n);
		appendStringInfoString(b, ", ");
		json_num(b, "precision", removed + clean_removed > 0
				 ? (double) removed / (removed + clean_removed) : NAN);
		appendStringInfoString(b, ", ");
		json_num(b, "auc", n_clean > 0 ? wins / ((double) n * n_clean) : NAN);
		appendStringInfoChar(b, '}');
		min_removed = Min(min_removed, (double) removed / n);
		if (n_clean > 0)
			min_auc = Min(min_auc, wins / ((double) n * n_clean));
	}
	appendStringInfoString(b, "}, ");
	json_num(b, "min_auc", isinf(min_auc) ? NAN : min_auc);
	appendStringInfoString(b, ", ");
	json_num(b, "min_removed", isinf(min_removed) ? NAN : min_removed);
	appendStringInfoChar(b, '}');
	pfree(p);
	pfree(clean);
}

/* Weights (logistic, of the standardised features) or split counts (trees). */
static void
append_importance(StringInfo b, const cq_classifier *c)
{
	int64	   *splits = palloc0(sizeof(int64) * c->d);

	if (c->kind == CQ_CLASSIFIER_TREES)
	{
		int			inner = (1 << c->depth) - 1;

		for (int64 i = 0; i < (int64) c->n_trees * inner; i++)
			if (c->feat[i] >= 0 && c->feat[i] < c->d)
				splits[c->feat[i]]++;
	}
	appendStringInfoChar(b, '{');
	for (int j = 0; j < c->d; j++)
	{
		appendStringInfo(b, "%s\"%s\": ", j ? ", " : "", cq_feature_name(cq_feature_at(&c->fs, j)));
		if (c->kind == CQ_CLASSIFIER_TREES)
			appendStringInfo(b, "{\"splits\": " INT64_FORMAT "}", splits[j]);
		else
		{
			appendStringInfoChar(b, '{');
			json_num(b, "weight", c->w[j]);
			appendStringInfoChar(b, '}');
		}
	}
	appendStringInfoChar(b, '}');
	pfree(splits);
}

static double
seconds_since(TimestampTz t)
{
	return (double) (GetCurrentTimestamp() - t) / USECS_PER_SEC;
}

/*
 * The training itself (classifier.h): every phase up to the final
 * transaction, which is begun and holds the new version when this returns.
 */
char *
classifier_build(CorpqJob *job, const char *name, const char *query, const ClassifierOptions *o_in,
				 MemoryContext cxt, int32 *version_out)
{
	MemoryContext chunk_cxt;
	TimestampTz start = GetCurrentTimestamp(),
				train_start;
	ClassifierOptions o;
	cq_feature_set fs;
	cq_noise_options no;
	cq_noise_set set;
	cq_train_options to;
	cq_classifier c;
	cq_error	err = {0};
	Texts		clean = {0},
				foreign = {0};
	int64	   *groups,
			   *order;
	unsigned char *holdout_all;
	Computed	k = {0};
	int64		done = 0,
				skipped_null = 0;
	bool		budget_spent = false;
	int			d;
	int32		version;
	double		feature_seconds,
				training_seconds;
	StringInfoData report,
				result;
	ClassifierResult r;
	MemoryContext old;

	o = *o_in;
	/* reading: both queries run as the job's owner */
	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	classifier_options_feature_set(&o, &fs);
	d = cq_feature_count(&fs);
	read_texts(job, query, &pair_spec, true, o.max_pairs, "reading clean pairs", &clean);
	if (o.other_language_query)
		read_texts(job, o.other_language_query, &sentence_spec, false, o.max_pairs,
				   "reading other-language sentences", &foreign);
	corpq_job_xact_commit(cxt);
	if (clean.n < CURATE_MIN_CLEAN_PAIRS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the clean query returned " INT64_FORMAT " pairs with both sides; "
						"a classifier needs at least %d", clean.n, CURATE_MIN_CLEAN_PAIRS),
				 errhint("Its rows changed since the submission: give more clean pairs.")));

	/* noise */
	corpq_job_progress(job, "making noise", 0, 0, "pairs", NULL, true);
	cq_noise_options_default(&no);
	no.seed = (uint64) o.seed;
	memcpy(no.share, o.share, sizeof(no.share));
	if (cq_noise_generate(clean.a, clean.b, (size_t) clean.n, foreign.a, (size_t) foreign.n,
						  &no, &set, &err) != CQ_OK)
		corpq_core_error(&err, "The clean query needs pairs with different targets and of "
						 "two words or more.",
						 "could not make synthetic noise from " INT64_FORMAT " clean pairs",
						 clean.n);
	groups = palloc(sizeof(int64) * set.n);
	order = group_order(&set, clean.n, groups);
	holdout_all = palloc(set.n);
	cq_holdout_split((uint64) o.seed, (const int64_t *) groups, set.n, o.holdout, holdout_all);

	/* features, in chunks of whole groups' pairs in group order */
	k.x = MemoryContextAllocHuge(cxt, sizeof(double) * set.n * d);
	k.y = palloc(set.n);
	k.holdout = palloc(set.n);
	k.type = palloc(sizeof(cq_noise_type) * set.n);
	chunk_cxt = AllocSetContextCreate(cxt, "classifier features chunk", ALLOCSET_DEFAULT_SIZES);
	while (done < (int64) set.n && !budget_spent)
	{
		int64		end = Min((int64) set.n, done + FEATURE_CHUNK);
		CurateFeatures *f;

		/* finish the last group of the chunk */
		while (end < (int64) set.n && groups[order[end]] == groups[order[end - 1]])
			end++;
		corpq_job_xact_begin(chunk_cxt);
		f = curate_features_create(&fs, &o.models, chunk_cxt);
		for (int64 r_ = done; r_ < end; r_++)
		{
			const cq_noise_pair *p = &set.pairs[order[r_]];
			text	   *s = cstring_to_text_with_len(p->src.s, (int) p->src.len);
			text	   *t = cstring_to_text_with_len(p->tgt.s, (int) p->tgt.len);

			CHECK_FOR_INTERRUPTS();
			if (curate_features_compute(f, s, t, k.x + k.n * d, NULL))
			{
				k.y[k.n] = p->type == CQ_NOISE_CLEAN;
				k.holdout[k.n] = holdout_all[order[r_]];
				k.type[k.n] = p->type;
				k.n++;
			}
			else
				skipped_null++;
			pfree(s);
			pfree(t);
		}
		curate_features_free(f);
		corpq_job_xact_commit(cxt);
		MemoryContextReset(chunk_cxt);
		done = end;
		corpq_job_progress(job, "computing features", done, set.n, "pairs", NULL, false);
		if (!CORPQ_OPT_IS_UNSET(o.max_seconds) && seconds_since(start) >= o.max_seconds)
			budget_spent = done < (int64) set.n;
	}
	MemoryContextDelete(chunk_cxt);
	feature_seconds = seconds_since(start);

	/* training, outside any transaction */
	corpq_job_progress(job, "training", 0, 0, "pairs", NULL, true);
	cq_train_options_default(&to);
	to.kind = (cq_classifier_kind) o.kind;
	train_start = GetCurrentTimestamp();
	if (cq_classifier_train(&fs, k.x, k.y, (size_t) k.n, k.holdout, &to, &c, &err) != CQ_OK)
		corpq_core_error(&err, budget_spent
						 ? "max_seconds stopped the features early: raise it, or give more clean pairs."
						 : "Give more clean pairs, or a larger holdout.",
						 "could not train the classifier on " INT64_FORMAT " pairs", k.n);
	training_seconds = seconds_since(train_start);

	/* the report */
	initStringInfo(&report);
	appendStringInfo(&report, "{\"clean_rows\": " INT64_FORMAT ", \"clean_pairs\": " INT64_FORMAT
					 ", \"other_language_sentences\": " INT64_FORMAT
					 ", \"pairs_made\": %zu, \"pairs_computed\": " INT64_FORMAT
					 ", \"pairs_skipped_null\": " INT64_FORMAT ", \"pairs_used\": " INT64_FORMAT
					 ", \"max_seconds_reached\": %s, ",
					 clean.rows, clean.n, foreign.n, set.n, done, skipped_null, k.n,
					 budget_spent ? "true" : "false");
	{
		int64		held = 0;

		for (int64 i = 0; i < k.n; i++)
			held += k.holdout[i];
		appendStringInfo(&report, "\"train_pairs\": " INT64_FORMAT ", \"heldout_pairs\": "
						 INT64_FORMAT ", ", k.n - held, held);
	}
	appendStringInfoString(&report, "\"heldout\": ");
	append_heldout(&report, &c, &k);
	appendStringInfoString(&report, ", \"importance\": ");
	append_importance(&report, &c);
	appendStringInfoString(&report, ", ");
	json_num(&report, "feature_seconds", feature_seconds);
	appendStringInfoString(&report, ", ");
	json_num(&report, "training_seconds", training_seconds);
	appendStringInfoChar(&report, '}');
	cq_noise_set_free(&set);

	/* writing: the version, in the final transaction the caller ends */
	memset(&r, 0, sizeof(r));
	r.name = name;
	r.c = &c;
	r.opt = &o;
	r.report_json = report.data;
	r.job_id = job->id;
	corpq_job_xact_begin(cxt);
	corpq_job_progress(job, "writing", 0, 1, "versions", NULL, true);
	version = classifier_store(job, &r);
	cq_classifier_free(&c);
	/* the result outlives the transaction's SPI context */
	old = MemoryContextSwitchTo(cxt);
	initStringInfo(&result);
	appendStringInfoString(&result, "{\"classifier\": ");
	escape_json(&result, name);
	appendStringInfo(&result, ", \"version\": %d, \"report\": %s}", version, report.data);
	MemoryContextSwitchTo(old);
	if (version_out)
		*version_out = version;
	return result.data;
}

static void
classifier_train_job(CorpqJob *job)
{
	MemoryContext cxt = CurrentMemoryContext;
	ClassifierOptions o;
	char	   *name,
			   *query,
			   *result;

	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	name = corpq_job_arg(job, "name");
	query = corpq_job_arg(job, "clean_query");
	classifier_options_parse_text(corpq_job_arg(job, "options"), &o);
	corpq_job_xact_commit(cxt);
	result = classifier_build(job, name, query, &o, cxt, NULL);
	corpq_job_finish(job, result);
	corpq_job_xact_commit(cxt);
}

void
corpq_classifier_init(void)
{
	/* nothing is written before the last transaction: it can start again */
	corpq_job_register_kind("classifier_train", classifier_train_job, true);
}
