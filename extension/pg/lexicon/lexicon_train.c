/*
 * corpq.lexicon_train(): validation and submission in the caller's backend,
 * and the "lexicon_train" job: read the corpus, train both fast_align
 * directions, build the UncSamp dictionary, then write everything and finish
 * the job in one final transaction.  The training is lexicon_build(), which
 * corpq.curate() calls too when it trains what it needs.  Nothing is written before that
 * transaction, so the kind is restartable and a cancelled or failed run
 * leaves the previous version of the lexicon untouched.
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "align/lexicon.h"
#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/options.h"
#include "pg/lexicon/lexicon.h"

/* Sentence pairs between progress reports inside an EM pass. */
#define PROGRESS_EVERY 1000

static void
check_name(const char *name, const LexOptions *o)
{
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lexicon name must not be empty")));
	if (o->replace)
		corpq_catalog_check_writer(&corpq_kind_lexicon, name, "replace",
								   "Only members of the lexicon's owner role can replace it.");
	else if (corpq_catalog_exists(&corpq_kind_lexicon, name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("lexicon \"%s\" already exists", name),
				 errhint("Pass '{\"replace\": true}' as options to replace it when the new training ends, or drop it with SELECT corpq.lexicon_drop(%s).",
						 quote_literal_cstr(name))));
}

PG_FUNCTION_INFO_V1(corpq_lexicon_train);

Datum
corpq_lexicon_train(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *corpus = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Jsonb	   *options = PG_GETARG_JSONB_P(2);
	LexOptions	o;
	StringInfoData args;

	corpq_require_utf8();
	lexicon_options_parse(options, &o);
	check_name(name, &o);
	/* an unknown BPE name errors here, listing the existing ones */
	corpq_segmenter_free(corpq_segmenter_load(o.bpe, CurrentMemoryContext));
	lexicon_check_corpus_query(corpus);

	initStringInfo(&args);
	appendStringInfoString(&args, "{\"name\": ");
	escape_json(&args, name);
	appendStringInfoString(&args, ", \"corpus\": ");
	escape_json(&args, corpus);
	appendStringInfo(&args, ", \"options\": %s}", lexicon_options_json(&o));
	PG_RETURN_INT64(corpq_job_submit("lexicon_train", args.data, o.threads));
}

/* ---- the job ---- */

/* What the core's progress hook reports through corpq_job_progress(). */
typedef struct Progress
{
	CorpqJob   *job;
	const char *phase;
	double		base;			/* pairs done in earlier passes */
	double		total;
	char	   *figures;
} Progress;

static bool
report(void *arg, int64_t done, int64_t total)
{
	Progress   *p = arg;

	corpq_job_progress(p->job, p->phase, p->base + (double) done, p->total,
					   "pairs", p->figures, false);
	return false;				/* a cancel arrives as an ERROR from the hook */
}

static double
seconds_since(TimestampTz t)
{
	return (double) (GetCurrentTimestamp() - t) / USECS_PER_SEC;
}

static double
per_token(const cq_fa_stats *s)
{
	return s->n_tokens > 0 ? s->loglik / s->n_tokens : NAN;
}

static char *
pass_figures(int iteration, const char *dir, cq_fa_trainer *tr)
{
	cq_fa_stats s;

	cq_fa_trainer_stats(tr, &s);
	return psprintf("{\"iteration\": %d, \"direction\": \"%s\", \"loglik_per_token\": %s, \"tension\": %s}",
					iteration, dir, corpq_json_number_text(per_token(&s)),
					corpq_json_number_text(cq_fa_trainer_model(tr)->par.tension));
}

/* EM passes of both directions, reporting per pass and within passes. */
static void
train(CorpqJob *job, cq_fa_trainer *fwd, cq_fa_trainer *rev, const LexOptions *o,
	  int64 n_pairs)
{
	Progress	p = {job, "em", 0, 2.0 * (o->iterations - 1) * n_pairs, NULL};
	cq_align_progress prog = {report, &p, PROGRESS_EVERY};
	cq_error err = {0};

	p.figures = psprintf("{\"iteration\": 1, \"tension\": %s}", corpq_json_number_text(o->tension));
	for (int it = 1; it < o->iterations; it++)
	{
		if (cq_fa_iterate(fwd, &prog, &err) != CQ_OK)
			corpq_core_error(&err, NULL, "fast_align training failed");
		p.base += n_pairs;
		p.figures = pass_figures(it, "src-tgt", fwd);
		corpq_job_progress(job, "em", p.base, p.total, "pairs", p.figures, true);
		if (cq_fa_iterate(rev, &prog, &err) != CQ_OK)
			corpq_core_error(&err, NULL, "fast_align training failed");
		p.base += n_pairs;
		p.figures = pass_figures(it, "tgt-src", rev);
		corpq_job_progress(job, "em", p.base, p.total, "pairs", p.figures, true);
	}
}

/* Seconds of each phase: reading, em (with setup), dictionary. */
typedef struct PhaseTimes
{
	double		reading;
	double		em;
	double		dictionary;
} PhaseTimes;

static char *
stats_json(const LexCorpus *c, const cq_fa_stats *sf, const cq_fa_stats *sr,
		   double tf, double tr, const cq_lexdict *d, const PhaseTimes *pt)
{
	return psprintf("{\"rows\": " INT64_FORMAT ", \"pairs\": " INT64_FORMAT
					", \"skipped_pairs\": " INT64_FORMAT
					", \"src_tokens\": " INT64_FORMAT ", \"tgt_tokens\": " INT64_FORMAT
					", \"src_vocab\": %d, \"tgt_vocab\": %d"
					", \"loglik_per_token\": {\"src-tgt\": %s, \"tgt-src\": %s}"
					", \"tension\": {\"src-tgt\": %s, \"tgt-src\": %s}"
					", \"table_bytes\": %zu, \"dictionary_entries\": " INT64_FORMAT
					", \"seconds\": {\"reading\": %.3f, \"em\": %.3f, \"dictionary\": %.3f}}",
					c->rows, (int64) (c->bitext.n_pairs - sf->skipped_pairs),
					(int64) (c->null_rows + sf->skipped_pairs),
					c->src_tokens, c->tgt_tokens,
					c->bitext.src_vocab, c->bitext.tgt_vocab,
					corpq_json_number_text(per_token(sf)), corpq_json_number_text(per_token(sr)),
					corpq_json_number_text(tf), corpq_json_number_text(tr),
					sf->bytes + sr->bytes, (int64) d->nnz,
					pt->reading, pt->em, pt->dictionary);
}

/*
 * The training itself (lexicon.h): read, EM, dictionary, then the final
 * transaction begun and the lexicon written in it; the caller ends that
 * transaction.
 */
char *
lexicon_build(CorpqJob *job, const char *name, const char *query, const LexOptions *o,
			  MemoryContext cxt)
{
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz phase;
	PhaseTimes	pt;
	LexCorpus	c;
	cq_fa_options fo;
	cq_fa_trainer *fwd,
			   *rev;
	cq_fa_stats sf,
				sr;
	cq_lexdict	dict;
	cq_lexicon	lx;
	cq_error err = {0};
	Progress	p = {job, "dictionary", 0, 0, NULL};
	cq_align_progress prog = {report, &p, PROGRESS_EVERY};
	LexResult	r;
	int64		translations;
	StringInfoData result;
	MemoryContext old;

	/* reading: the corpus query runs as the job's owner */
	corpq_job_xact_begin(cxt);
	corpq_job_progress(job, "reading", 0, 0, "rows", NULL, true);
	lexicon_read_corpus(job, query, o, &c, cxt);
	corpq_job_xact_commit(cxt);
	pt.reading = seconds_since(start);
	phase = GetCurrentTimestamp();

	/* em */
	if (cq_bitext_validate(&c.bitext, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "invalid corpus");
	lexicon_fa_options(o, false, &fo);
	if (cq_fa_trainer_create(&c.bitext, &fo, &fwd, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not start fast_align");
	lexicon_fa_options(o, true, &fo);
	if (cq_fa_trainer_create(&c.bitext, &fo, &rev, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not start fast_align");
	train(job, fwd, rev, o, c.bitext.n_pairs);
	pt.em = seconds_since(phase);
	phase = GetCurrentTimestamp();

	/* dictionary: Viterbi both ways, symmetrise, count links */
	p.total = (double) c.bitext.n_pairs;
	corpq_job_progress(job, "dictionary", 0, p.total, "pairs", NULL, true);
	if (cq_lexdict_from_trainers(fwd, rev, o->symmetrize, &prog, &dict, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not build the dictionary");
	cq_fa_trainer_stats(fwd, &sf);
	cq_fa_trainer_stats(rev, &sr);
	if (cq_lexicon_from_trainers(fwd, rev, &lx, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not build the lexicon");
	cq_fa_trainer_free(fwd);
	cq_fa_trainer_free(rev);
	pt.dictionary = seconds_since(phase);
	phase = GetCurrentTimestamp();

	/* writing: everything in the final transaction, which the caller ends */
	r.name = name;
	r.opt = o;
	r.corpus = &c;
	r.lexicon = &lx;
	r.dict = &dict;
	r.job_id = job->id;
	r.stats_json = stats_json(&c, &sf, &sr, lx.fwd.par.tension, lx.rev.par.tension,
							  &dict, &pt);
	corpq_job_xact_begin(cxt);
	corpq_job_progress(job, "writing", 0, 0, "rows", NULL, true);
	translations = lexicon_store(job, &r);
	/* the result outlives the transaction's SPI context */
	old = MemoryContextSwitchTo(cxt);
	initStringInfo(&result);
	appendStringInfoString(&result, "{\"lexicon\": ");
	escape_json(&result, name);
	appendStringInfo(&result, ", \"translations\": " INT64_FORMAT
					 ", \"stats\": %s, \"writing_seconds\": %.3f, \"total_seconds\": %.3f}",
					 translations, r.stats_json, seconds_since(phase), seconds_since(start));
	MemoryContextSwitchTo(old);
	return result.data;
}

static void
lexicon_train_job(CorpqJob *job)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *name;
	char	   *query;
	LexOptions	o;
	char	   *result;
	MemoryContext old;

	corpq_job_xact_begin(cxt);
	/* the arguments must outlive the transaction */
	old = MemoryContextSwitchTo(cxt);
	name = corpq_job_arg(job, "name");
	query = corpq_job_arg(job, "corpus");
	lexicon_options_parse(DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
															 CStringGetDatum(corpq_job_arg(job, "options")))),
						  &o);
	MemoryContextSwitchTo(old);
	corpq_job_xact_commit(cxt);
	result = lexicon_build(job, name, query, &o, cxt);
	corpq_job_finish(job, result);
	corpq_job_xact_commit(cxt);
}

void
corpq_lexicon_init(void)
{
	/* the lexicon is written in the last transaction: it can start again */
	corpq_job_register_kind("lexicon_train", lexicon_train_job, true);
}
