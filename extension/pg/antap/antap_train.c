/*
 * corpq.antap_train(): checks and submission in the caller's backend, and
 * the "antap_train" job: read the two queries, split the tokens 8:1:1, fit
 * with early stopping, predict every token with both states, then write the
 * version and finish the job in one final transaction.  Nothing is written
 * before that transaction, so the kind is restartable and a failed or
 * cancelled run leaves the catalog untouched.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/rng.h"
#include "pg/antap/antap.h"
#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/options.h"
#include "pg/base/base.h"

PG_FUNCTION_INFO_V1(corpq_antap_train);

Datum
corpq_antap_train(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *cavs = text_to_cstring(PG_GETARG_TEXT_PP(1));
	char	   *accuracy = text_to_cstring(PG_GETARG_TEXT_PP(2));
	AntapOptions o;
	StringInfoData args;

	antap_check_name(name);
	antap_options_parse(PG_GETARG_JSONB_P(3), &o);
	/* a new name is created by the job; an existing one must be the caller's */
	corpq_catalog_check_writer(&corpq_kind_antap, name, "add a version to",
							   "Only members of the model's owner role can train it.");
	antap_check_queries(cavs, accuracy);

	initStringInfo(&args);
	appendStringInfoString(&args, "{\"name\": ");
	escape_json(&args, name);
	appendStringInfoString(&args, ", \"cavs\": ");
	escape_json(&args, cavs);
	appendStringInfoString(&args, ", \"accuracy\": ");
	escape_json(&args, accuracy);
	appendStringInfo(&args, ", \"options\": %s}", antap_options_json(&o));
	PG_RETURN_INT64(corpq_job_submit("antap_train", args.data, o.threads));
}

/* ---- the job ---- */

typedef struct Hook
{
	CorpqJob   *job;
	int			max_epochs;
	char	   *figures;
} Hook;

static void
json_num(StringInfo b, const char *key, double x)
{
	appendStringInfo(b, "\"%s\": ", key);
	corpq_json_number(b, x);
}

/* Progress after each update; a cancel arrives here as an ERROR. */
static bool
report(void *arg, const cq_antap_progress *p)
{
	Hook	   *h = arg;

	if (p->end_of_epoch)
	{
		StringInfoData b;

		initStringInfo(&b);
		appendStringInfo(&b, "{\"epoch\": %d, ", p->epoch);
		json_num(&b, "train_mse", p->train_mse);
		appendStringInfoString(&b, ", ");
		json_num(&b, "valid_mse", p->valid_mse);
		appendStringInfoString(&b, ", ");
		json_num(&b, "best_valid_mse", p->best_valid_mse);
		appendStringInfo(&b, ", \"best_epoch\": %d}", p->best_epoch);
		if (h->figures)
			pfree(h->figures);
		h->figures = b.data;
	}
	corpq_job_progress(h->job, "training",
					   (p->epoch - 1) + (double) p->batch / Max(p->batches, 1),
					   h->max_epochs, "epochs", h->figures, p->end_of_epoch);
	return false;
}

/* The token indexes of one split. */
static int32 *
indexes_of(const uint8 *split, int n, int kind, int *count)
{
	int32	   *idx = palloc(sizeof(int32) * Max(n, 1));

	*count = 0;
	for (int i = 0; i < n; i++)
		if (split[i] == kind)
			idx[(*count)++] = i;
	return idx;
}

static void
append_metrics(StringInfo b, const float *pred, const float *y, const uint8 *split, int n)
{
	static const char *const names[] = {"train", "valid", "test"};

	appendStringInfoChar(b, '{');
	for (int k = 0; k < 3; k++)
	{
		int			cnt;
		int32	   *idx = indexes_of(split, n, k, &cnt);
		cq_antap_metrics m;

		cq_antap_metrics_of(pred, y, idx, cnt, &m);
		appendStringInfo(b, "%s\"%s\": {\"tokens\": %d, ", k ? ", " : "", names[k], cnt);
		json_num(b, "mse", m.mse);
		appendStringInfoString(b, ", ");
		json_num(b, "mae", m.mae);
		appendStringInfoString(b, ", ");
		json_num(b, "rmse", m.rmse);
		appendStringInfoString(b, ", ");
		json_num(b, "r2", m.r2);
		appendStringInfoChar(b, '}');
		pfree(idx);
	}
	appendStringInfoChar(b, '}');
}

static char *
result_json(const AntapData *d, const cq_antap_fit_result *fr, const uint8 *split,
			const float *p1, const float *p2, double seconds)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfo(&b, "{\"tokens\": %d, \"cav_rows\": " INT64_FORMAT
					 ", \"accuracy_rows\": " INT64_FORMAT ", \"null_tokens\": " INT64_FORMAT
					 ", \"skipped\": " INT64_FORMAT ", \"without_cav\": " INT64_FORMAT
					 ", \"without_accuracy\": " INT64_FORMAT
					 ", \"epochs\": %d, \"best_epoch\": %d, \"early_stopped\": %s"
					 ", \"steps\": " INT64_FORMAT ", ",
					 d->n, d->cav_rows, d->accuracy_rows, d->null_tokens, d->skipped,
					 d->without_cav, d->without_accuracy, fr->epochs, fr->best_epoch,
					 fr->early_stopped ? "true" : "false", (int64) fr->steps);
	json_num(&b, "best_valid_mse", fr->best_valid_mse);
	appendStringInfoString(&b, ", \"state_i\": ");
	append_metrics(&b, p1, d->y, split, d->n);
	appendStringInfoString(&b, ", \"state_ii\": ");
	append_metrics(&b, p2, d->y, split, d->n);
	appendStringInfoString(&b, ", ");
	json_num(&b, "training_seconds", seconds);
	appendStringInfoChar(&b, '}');
	return b.data;
}

/* Predictions of every token by model m. */
static float *
predict_all(const cq_antap_model *m, const AntapData *d, int batch)
{
	cq_antap_pass *p;
	cq_error	err = {0};
	float	   *out = palloc(sizeof(float) * d->n);

	if (cq_antap_pass_new(&m->cfg, batch, &p, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not prepare the ANTAP predictions");
	cq_antap_predict_rows(m, p, d->x, NULL, d->n, NULL, out);
	cq_antap_pass_free(p);
	return out;
}

static void
antap_train_job(CorpqJob *job)
{
	MemoryContext cxt = CurrentMemoryContext;
	TimestampTz start;
	AntapOptions o;
	AntapData	d;
	AntapResult r;
	char	   *name,
			   *cavs,
			   *accuracy;
	uint8	   *split;
	int32	   *tr,
			   *va;
	int			ntr,
				nva;
	cq_antap_model *m,
			   *best;
	cq_antap_fit_result fr;
	cq_antap_data cd;
	cq_error	err = {0};
	Hook		hook = {job, 0, NULL};
	cq_code		rc;
	int32		version;
	StringInfoData result;

	/* reading: both queries run as the job's owner */
	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	name = corpq_job_arg(job, "name");
	cavs = corpq_job_arg(job, "cavs");
	accuracy = corpq_job_arg(job, "accuracy");
	antap_options_parse_text(corpq_job_arg(job, "options"), &o);
	corpq_job_progress(job, "reading cavs", 0, 0, "rows", NULL, true);
	antap_read_data(job, cavs, accuracy, &o.cfg, &d, cxt);
	corpq_job_xact_commit(cxt);

	/* training, outside any transaction; the core allocates in cxt */
	split = palloc(d.n);
	cq_antap_split(d.n, (uint64) o.seed, split);
	tr = indexes_of(split, d.n, CQ_ANTAP_TRAIN, &ntr);
	va = indexes_of(split, d.n, CQ_ANTAP_VALID, &nva);
	if ((rc = cq_antap_new(&o.cfg, &m, &err)) != CQ_OK ||
		(rc = cq_antap_new(&o.cfg, &best, &err)) != CQ_OK)
		corpq_core_error(&err, NULL, "could not create the ANTAP model");
	/* the initialisation's seed is independent of the split's and the shuffle's */
	cq_antap_init_random(m, cq_mix64((uint64) o.seed ^ 0xa47a9ULL));
	cd = (cq_antap_data) {d.x, d.y, tr, ntr, va, nva};
	hook.max_epochs = o.train.max_epochs;
	corpq_blas_ensure();
	start = GetCurrentTimestamp();
	rc = cq_antap_fit(m, best, &cd, &o.train, report, &hook, &fr, &err);
	if (rc != CQ_OK)
		corpq_core_error(&err, rc == CQ_ERANGE ? "Lower lr, or check the inputs." : NULL,
						 "ANTAP training failed");

	/* writing: the version and the job's result, in one transaction */
	memset(&r, 0, sizeof(r));
	r.name = name;
	r.opt = &o;
	r.data = &d;
	r.split = split;
	r.pred_i = predict_all(best, &d, o.train.batch_size);
	r.pred_ii = predict_all(m, &d, o.train.batch_size);
	r.state_i = best;
	r.state_ii = m;
	r.job_id = job->id;
	r.result_json = result_json(&d, &fr, split, r.pred_i, r.pred_ii,
								(double) (GetCurrentTimestamp() - start) / USECS_PER_SEC);
	corpq_job_xact_begin(cxt);
	corpq_job_progress(job, "writing", 0, d.n, "tokens", NULL, true);
	version = antap_store(job, &r);
	initStringInfo(&result);
	appendStringInfoString(&result, "{\"antap\": ");
	escape_json(&result, name);
	appendStringInfo(&result, ", \"version\": %d, \"result\": %s}", version, r.result_json);
	corpq_job_finish(job, result.data);
	corpq_job_xact_commit(cxt);
}

void
corpq_antap_init(void)
{
	/* nothing is written before the last transaction: it can start again */
	corpq_job_register_kind("antap_train", antap_train_job, true);
}
