/*
 * The training log and checkpoints of a train job.  Every function runs
 * inside the caller's transaction with SPI connected, so a checkpoint (the
 * model version, the state row and the pruning) commits or vanishes whole.
 * Rows are written as the catalog owner and carry the job's owner
 * (base/internal_sql.h); a resume trusts no row it reads: it uses only a
 * checkpoint the job wrote (OWN_CHECKPOINT), and every cursor value must be
 * in range.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/options.h"
#include "pg/model/model.h"
#include "pg/train/train.h"

void
train_log_write(int64 job, const TrainLogRow *r)
{
	Oid			argtypes[13] = {INT8OID, INT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID,
	FLOAT8OID, INT8OID, FLOAT8OID, FLOAT8OID, TEXTOID, FLOAT8OID, TEXTOID, BOOLOID};
	Datum		v[13];
	char		nulls[13] = "             ";

	v[0] = Int64GetDatum(job);
	v[1] = Int64GetDatum(r->step);
	v[2] = Float8GetDatum(r->epoch);
	v[3] = Float8GetDatum(r->loss);
	v[4] = Float8GetDatum(r->nll);
	v[5] = Float8GetDatum(r->lr);
	v[6] = Int64GetDatum(r->tokens);
	v[7] = Float8GetDatum(r->tokens_per_s);
	v[8] = Float8GetDatum(r->grad_norm);
	v[9] = r->dev_json ? CStringGetTextDatum(r->dev_json) : (Datum) 0;
	v[10] = Float8GetDatum(r->dev_loss);
	v[11] = r->schedule_json ? CStringGetTextDatum(r->schedule_json) : (Datum) 0;
	v[12] = BoolGetDatum(r->encoder);
	if (!r->dev_json)
		nulls[9] = nulls[10] = 'n';
	if (!r->schedule_json)
		nulls[11] = 'n';
	/* the log is cheap to lose in a crash (resume rewrites it): no flush wait */
	SPI_execute("SET LOCAL synchronous_commit = off", false, 0);
	if (corpq_sql_as_owner("INSERT INTO corpq.train_log (job, step, epoch, train_loss, train_nll, lr, "
						   "tokens, tokens_per_s, grad_norm, dev, dev_loss, dev_ppl, schedule, at, owner) "
						   "SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10::pg_catalog.jsonb, $11, "
						   "CASE WHEN NOT $13 THEN pg_catalog.exp($11) END, $12::pg_catalog.jsonb, "
						   "pg_catalog.clock_timestamp(), j.owner "
						   "FROM corpq.jobs j WHERE j.id OPERATOR(pg_catalog.=) $1",
						   13, argtypes, v, nulls, 0) != SPI_OK_INSERT || SPI_processed != 1)
		elog(ERROR, "could not insert into corpq.train_log");
}

static char *
cursor_json(const TrainCursor *c)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"streams\": [");
	for (int i = 0; i < c->n_streams; i++)
		appendStringInfo(&b, "%s[" INT64_FORMAT ", " INT64_FORMAT "]", i ? ", " : "",
						 c->epoch[i], c->next[i]);
	appendStringInfoString(&b, "], \"prob\": [");
	for (int i = 0; i < c->n_corpora; i++)
		appendStringInfo(&b, "%s%.17g", i ? ", " : "", c->prob[i]);
	appendStringInfoString(&b, "], \"draws\": [");
	for (int i = 0; i < c->n_corpora; i++)
		appendStringInfo(&b, "%s" INT64_FORMAT, i ? ", " : "", c->draws[i]);
	appendStringInfoString(&b, "], \"pairs\": [");
	for (int i = 0; i < c->n_corpora; i++)
		appendStringInfo(&b, "%s" INT64_FORMAT, i ? ", " : "", c->pairs[i]);
	appendStringInfo(&b, "], \"pairs_done\": " INT64_FORMAT ", \"tokens_done\": " INT64_FORMAT
					 ", \"seconds\": %.17g, \"best_dev\": %s, \"best_version\": %d"
					 ", \"first_version\": %d",
					 c->pairs_done, c->tokens_done, c->seconds, corpq_json_number_text(c->best_dev),
					 c->best_version, c->first_version);
	if (c->sampler_state)
		appendStringInfo(&b, ", \"sampler\": %s", c->sampler_state);
	if (c->schedule)
		appendStringInfo(&b, ", \"schedule\": %s", c->schedule);
	appendStringInfoChar(&b, '}');
	return b.data;
}

/* The state image as a bytea in CurrentMemoryContext. */
static bytea *
state_image(const cq_train_state *st)
{
	size_t		size = cq_train_checkpoint_size(st);
	bytea	   *b;
	cq_error err = {0};
	cq_code s;

	if (size + VARHDRSZ > 0x3FFFFFFF)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("training state of %zu bytes exceeds the 1 GB limit of a bytea", size),
				 errhint("Train a smaller model.")));
	b = MemoryContextAllocHuge(CurrentMemoryContext, size + VARHDRSZ);
	SET_VARSIZE(b, size + VARHDRSZ);
	if ((s = cq_train_checkpoint_write(st, VARDATA(b), size, &err)) != CQ_OK)
		corpq_core_error(&err, NULL, "could not write the training checkpoint");
	return b;
}

int32
train_checkpoint_write(int64 job, int64 model_id, const cq_train_state *st, bytea *image,
					   TrainCursor *cur, const char *metrics, double dev_loss,
					   bool best, int keep)
{
	Oid			argtypes[7] = {INT8OID, INT8OID, INT8OID, INT4OID, BYTEAOID, TEXTOID, FLOAT8OID};
	Datum		v[7];
	char		nulls[7] = "       ";
	int32		version;

	version = corpq_model_write_version(model_id, image, "checkpoint", st->step,
										DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
																		   CStringGetDatum(metrics))),
										best, false);
	if (best)
		cur->best_version = version;
	v[0] = Int64GetDatum(job);
	v[1] = Int64GetDatum(st->step);
	v[2] = Int64GetDatum(model_id);
	v[3] = Int32GetDatum(version);
	v[4] = PointerGetDatum(state_image(st));
	v[5] = CStringGetTextDatum(cursor_json(cur));
	v[6] = Float8GetDatum(dev_loss);
	if (isnan(dev_loss))
		nulls[6] = 'n';
	SPI_connect();
	if (corpq_sql_as_owner("INSERT INTO corpq.train_checkpoints "
						   "(job, step, model, version, state, cursor, dev_loss, created, owner) "
						   "SELECT $1, $2, $3, $4, $5, $6::pg_catalog.jsonb, $7, pg_catalog.now(), j.owner "
						   "FROM corpq.jobs j WHERE j.id OPERATOR(pg_catalog.=) $1",
						   7, argtypes, v, nulls, 0) != SPI_OK_INSERT || SPI_processed != 1)
		elog(ERROR, "could not insert into corpq.train_checkpoints");
	pfree(DatumGetPointer(v[4]));
	/* keep the newest K state rows */
	v[1] = Int32GetDatum(keep);
	argtypes[1] = INT4OID;
	if (corpq_sql_as_owner("DELETE FROM corpq.train_checkpoints c WHERE c.job OPERATOR(pg_catalog.=) $1 "
						   "AND c.step OPERATOR(pg_catalog.<) ALL (SELECT k.step FROM corpq.train_checkpoints k "
						   "WHERE k.job OPERATOR(pg_catalog.=) $1 ORDER BY k.step DESC LIMIT $2)",
						   2, argtypes, v, NULL, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not prune corpq.train_checkpoints");
	/* and the versions this job's checkpoints wrote that no row keeps, but the best */
	v[1] = Int64GetDatum(model_id);
	argtypes[1] = INT8OID;
	if (corpq_sql_as_owner("DELETE FROM corpq.model_versions w WHERE w.model OPERATOR(pg_catalog.=) $2 "
						   "AND w.source OPERATOR(pg_catalog.=) 'checkpoint' AND NOT w.best "
						   "AND (w.metrics OPERATOR(pg_catalog.->>) 'job') OPERATOR(pg_catalog.=) $1::pg_catalog.text "
						   "AND NOT EXISTS (SELECT 1 FROM corpq.train_checkpoints c "
						   "WHERE c.job OPERATOR(pg_catalog.=) $1 AND c.version OPERATOR(pg_catalog.=) w.version "
						   "AND c.model OPERATOR(pg_catalog.=) w.model)",
						   2, argtypes, v, NULL, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not prune checkpoint versions");
	SPI_finish();
	return version;
}

/* Text of cursor #>> path (NULL if absent). */
static char *
cursor_get(Datum cursor, const char *path)
{
	Oid			argtypes[2] = {JSONBOID, TEXTOID};
	Datum		v[2] = {cursor, CStringGetTextDatum(path)};

	if (corpq_sql_as_caller("SELECT $1 OPERATOR(pg_catalog.#>>) $2::pg_catalog.text[]",
							2, argtypes, v, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read a training cursor");
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

static void
bad_cursor(int64 job, const char *path, const char *value, const char *expected)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("the checkpoint of training job " INT64_FORMAT " has an invalid cursor", job),
			 errdetail("%s is %s; it must be %s.", path, value ? value : "missing", expected)));
}

/* A number of the cursor, NaN when missing or null; ERROR when not a number. */
static double
cursor_num(int64 job, Datum cursor, const char *path)
{
	char	   *s = cursor_get(cursor, path);
	char	   *end;
	double		d;

	if (s == NULL)
		return NAN;
	d = strtod(s, &end);
	if (end == s || *end != '\0' || !isfinite(d))
		bad_cursor(job, path, s, "a finite number");
	return d;
}

/* A count of the cursor: an integer in [min, max]. */
static int64
cursor_count(int64 job, Datum cursor, const char *path, int64 min, int64 max)
{
	double		d = cursor_num(job, cursor, path);

	/* doubles hold integers exactly up to 2^53: counts stay far below */
	if (isnan(d) || d != floor(d) || d < (double) min || d > (double) max)
		bad_cursor(job, path, isnan(d) ? NULL : psprintf("%.17g", d),
				   psprintf("an integer from " INT64_FORMAT " to " INT64_FORMAT, min, max));
	return (int64) d;
}

/*
 * The sampler's probabilities: finite, in [0, 1], summing to 1.  They are
 * normalised by one division (train_sampler_*.c): n values each within a few
 * ulps of exact sum to 1 within n * 1e-15, far inside the 1e-6 allowed here.
 */
void
train_check_prob(int64 job, const double *prob, int n)
{
	double		sum = 0;

	for (int i = 0; i < n; i++)
	{
		if (!(prob[i] >= 0 && prob[i] <= 1))
			bad_cursor(job, psprintf("{prob,%d}", i), psprintf("%.17g", prob[i]),
					   "a probability from 0 to 1");
		sum += prob[i];
	}
	if (fabs(sum - 1) > 1e-6)
		bad_cursor(job, "{prob}", psprintf("a distribution summing to %.17g", sum),
				   "a distribution summing to 1");
}

/*
 * A checkpoint row is the job's own when its owner is the job's, its model
 * the job's ($2), and its version a checkpoint version this job wrote at that
 * step (model_versions.metrics names the job).  Only corpq writes these
 * tables, so another row means a restored or hand-edited catalog: ignored.
 */
#define OWN_CHECKPOINT \
	"c.owner::pg_catalog.oid OPERATOR(pg_catalog.=) j.owner::pg_catalog.oid " \
	"AND c.model OPERATOR(pg_catalog.=) $2 " \
	"AND EXISTS (SELECT 1 FROM corpq.model_versions w " \
	"  WHERE w.model OPERATOR(pg_catalog.=) c.model " \
	"  AND w.version OPERATOR(pg_catalog.=) c.version " \
	"  AND w.source OPERATOR(pg_catalog.=) 'checkpoint' " \
	"  AND w.step OPERATOR(pg_catalog.=) c.step " \
	"  AND (w.metrics OPERATOR(pg_catalog.->>) 'job') OPERATOR(pg_catalog.=) c.job::pg_catalog.text)"

/* Log the job's checkpoint rows it did not write, which resume ignores. */
static void
report_foreign_checkpoints(int64 job, Oid *argtypes, Datum *v)
{
	bool		isnull;
	int64		n;

	if (corpq_sql_as_caller("SELECT pg_catalog.count(*) FROM corpq.train_checkpoints c "
							"JOIN corpq.jobs j ON j.id OPERATOR(pg_catalog.=) c.job "
							"WHERE c.job OPERATOR(pg_catalog.=) $1 AND NOT (" OWN_CHECKPOINT ")",
							2, argtypes, v, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.train_checkpoints");
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (n > 0)
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("training job " INT64_FORMAT " ignores " INT64_FORMAT " checkpoint row(s) it did not write",
						job, n),
				 errdetail("A row counts as the job's own when its owner and model are the job's and its model version is a checkpoint the job wrote at that step.")));
}

/* The cursor's values into cur, each checked for type and range. */
static void
read_cursor(int64 job, Datum cursor, TrainCursor *cur, MemoryContext caller)
{
	for (int i = 0; i < cur->n_streams; i++)
	{
		cur->epoch[i] = cursor_count(job, cursor, psprintf("{streams,%d,0}", i), 0, PG_INT32_MAX);
		cur->next[i] = cursor_count(job, cursor, psprintf("{streams,%d,1}", i), 0, PG_INT32_MAX);
	}
	for (int i = 0; i < cur->n_corpora; i++)
	{
		cur->prob[i] = cursor_num(job, cursor, psprintf("{prob,%d}", i));
		cur->draws[i] = cursor_count(job, cursor, psprintf("{draws,%d}", i), 0, PG_INT64_MAX / 2);
		cur->pairs[i] = cursor_count(job, cursor, psprintf("{pairs,%d}", i), 0, PG_INT64_MAX / 2);
	}
	train_check_prob(job, cur->prob, cur->n_corpora);
	cur->pairs_done = cursor_count(job, cursor, "{pairs_done}", 0, PG_INT64_MAX / 2);
	cur->tokens_done = cursor_count(job, cursor, "{tokens_done}", 0, PG_INT64_MAX / 2);
	cur->seconds = cursor_num(job, cursor, "{seconds}");
	if (!(cur->seconds >= 0))
		bad_cursor(job, "{seconds}", isnan(cur->seconds) ? NULL : psprintf("%g", cur->seconds),
				   "a number of seconds >= 0");
	/* null: no validation yet */
	cur->best_dev = cursor_num(job, cursor, "{best_dev}");
	cur->best_version = (int32) cursor_count(job, cursor, "{best_version}", 0, PG_INT32_MAX);
	cur->first_version = (int32) cursor_count(job, cursor, "{first_version}", 1, PG_INT32_MAX);
	cur->sampler_state = cursor_get(cursor, "{sampler}");
	if (cur->sampler_state)
		cur->sampler_state = MemoryContextStrdup(caller, cur->sampler_state);
	/* checked by train_schedule_restore() */
	cur->schedule = cursor_get(cursor, "{schedule}");
	if (cur->schedule)
		cur->schedule = MemoryContextStrdup(caller, cur->schedule);
}

bool
train_checkpoint_resume(int64 job, int64 model_id, cq_train_state **st, TrainCursor *cur)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtypes[2] = {INT8OID, INT8OID};
	Datum		v[2] = {Int64GetDatum(job), Int64GetDatum(model_id)};
	bool		isnull;
	int64		step;
	bytea	   *state;
	Datum		cursor;
	cq_error err = {0};
	cq_code s;

	SPI_connect();
	report_foreign_checkpoints(job, argtypes, v);
	if (corpq_sql_as_caller("SELECT c.step, c.state, c.cursor "
							"FROM corpq.train_checkpoints c JOIN corpq.jobs j ON j.id OPERATOR(pg_catalog.=) c.job "
							"WHERE c.job OPERATOR(pg_catalog.=) $1 AND " OWN_CHECKPOINT " "
							"ORDER BY c.step DESC LIMIT 1",
							2, argtypes, v, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.train_checkpoints");
	if (SPI_processed == 0)
	{
		/* a run that died before its first checkpoint starts over, log too */
		if (corpq_sql_as_owner("DELETE FROM corpq.train_log WHERE job OPERATOR(pg_catalog.=) $1",
							   1, argtypes, v, NULL, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not trim corpq.train_log");
		SPI_finish();
		return false;
	}
	step = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	state = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	cursor = SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull),
							   false, -1);
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		s = cq_train_checkpoint_load(VARDATA_ANY(state), VARSIZE_ANY_EXHDR(state), st, &err);
		MemoryContextSwitchTo(spi);
	}
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "could not load the job's last training checkpoint");
	if ((*st)->step != step)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the last checkpoint of training job " INT64_FORMAT " does not match its row", job),
				 errdetail("The row is for step " INT64_FORMAT ", the training state it holds for step " INT64_FORMAT ".",
						   step, (*st)->step)));

	if (cursor_get(cursor, psprintf("{streams,%d}", cur->n_streams - 1)) == NULL ||
		cursor_get(cursor, psprintf("{streams,%d}", cur->n_streams)) != NULL ||
		cursor_get(cursor, psprintf("{prob,%d}", cur->n_corpora)) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the checkpoint of training job " INT64_FORMAT " does not match its corpus", job),
				 errdetail("The corpus query returned other corpus labels than when the checkpoint was written."),
				 errhint("Corpus queries of restartable training jobs must return the same rows each time.")));
	read_cursor(job, cursor, cur, caller);

	/* the log continues from the checkpoint */
	v[1] = Int64GetDatum((*st)->step);
	if (corpq_sql_as_owner("DELETE FROM corpq.train_log WHERE job OPERATOR(pg_catalog.=) $1 "
						   "AND step OPERATOR(pg_catalog.>) $2",
						   2, argtypes, v, NULL, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not trim corpq.train_log");
	SPI_finish();
	return true;
}

char *
train_checkpoint_versions(int64 job)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtypes[1] = {INT8OID};
	Datum		v[1] = {Int64GetDatum(job)};
	char	   *s;

	SPI_connect();
	if (corpq_sql_as_caller("SELECT COALESCE(pg_catalog.jsonb_agg(version ORDER BY step), '[]')::pg_catalog.text "
							"FROM corpq.train_checkpoints WHERE job OPERATOR(pg_catalog.=) $1",
							1, argtypes, v, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.train_checkpoints");
	s = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	SPI_finish();
	return s;
}
