/*
 * The training log and checkpoints of a train job.  Every function runs
 * inside the caller's transaction with SPI connected, so a checkpoint (the
 * model version, the state row and the pruning) commits or vanishes whole.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "pg/model_catalog.h"
#include "pg/train.h"

static char *
num(double x)
{
	return isfinite(x) ? psprintf("%.17g", x) : pstrdup("null");
}

void
train_log_write(int64 job, const TrainLogRow *r)
{
	Oid			argtypes[12] = {INT8OID, INT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID,
	FLOAT8OID, INT8OID, FLOAT8OID, FLOAT8OID, TEXTOID, FLOAT8OID, TEXTOID};
	Datum		v[12];
	char		nulls[12] = "            ";

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
	if (!r->dev_json)
		nulls[9] = nulls[10] = 'n';
	if (!r->schedule_json)
		nulls[11] = 'n';
	/* the log is cheap to lose in a crash (resume rewrites it): no flush wait */
	SPI_execute("SET LOCAL synchronous_commit = off", false, 0);
	if (SPI_execute_with_args("INSERT INTO corpq.train_log (job, step, epoch, train_loss, train_nll, lr, "
							  "tokens, tokens_per_s, grad_norm, dev, dev_loss, dev_ppl, schedule) "
							  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::pg_catalog.jsonb, $11, "
							  "pg_catalog.exp($11), $12::pg_catalog.jsonb)",
							  12, argtypes, v, nulls, false, 0) != SPI_OK_INSERT)
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
					 c->pairs_done, c->tokens_done, c->seconds, num(c->best_dev),
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
	cq_nn_error err = {0};
	cq_nn_status s;

	if (size + VARHDRSZ > 0x3FFFFFFF)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("training state of %zu bytes exceeds the 1 GB limit of a bytea", size),
				 errhint("Train a smaller model.")));
	b = MemoryContextAllocHuge(CurrentMemoryContext, size + VARHDRSZ);
	SET_VARSIZE(b, size + VARHDRSZ);
	if ((s = cq_train_checkpoint_write(st, VARDATA(b), size, &err)) != CQ_NN_OK)
		corpq_nn_error_report(s, "could not write the training checkpoint", err.message);
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
										best);
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
	if (SPI_execute_with_args("INSERT INTO corpq.train_checkpoints (job, step, model, version, state, cursor, dev_loss) "
							  "VALUES ($1, $2, $3, $4, $5, $6::pg_catalog.jsonb, $7)",
							  7, argtypes, v, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into corpq.train_checkpoints");
	pfree(DatumGetPointer(v[4]));
	/* keep the newest K state rows */
	v[1] = Int32GetDatum(keep);
	argtypes[1] = INT4OID;
	if (SPI_execute_with_args("DELETE FROM corpq.train_checkpoints c WHERE c.job OPERATOR(pg_catalog.=) $1 "
							  "AND c.step OPERATOR(pg_catalog.<) ALL (SELECT k.step FROM corpq.train_checkpoints k "
							  "WHERE k.job OPERATOR(pg_catalog.=) $1 ORDER BY k.step DESC LIMIT $2)",
							  2, argtypes, v, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not prune corpq.train_checkpoints");
	/* and the versions this job's checkpoints wrote that no row keeps, but the best */
	v[1] = Int64GetDatum(model_id);
	argtypes[1] = INT8OID;
	if (SPI_execute_with_args("DELETE FROM corpq.model_versions w WHERE w.model OPERATOR(pg_catalog.=) $2 "
							  "AND w.source OPERATOR(pg_catalog.=) 'checkpoint' AND NOT w.best "
							  "AND (w.metrics OPERATOR(pg_catalog.->>) 'job') OPERATOR(pg_catalog.=) $1::pg_catalog.text "
							  "AND NOT EXISTS (SELECT 1 FROM corpq.train_checkpoints c "
							  "WHERE c.job OPERATOR(pg_catalog.=) $1 AND c.version OPERATOR(pg_catalog.=) w.version "
							  "AND c.model OPERATOR(pg_catalog.=) w.model)",
							  2, argtypes, v, NULL, false, 0) != SPI_OK_DELETE)
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

	if (SPI_execute_with_args("SELECT $1 OPERATOR(pg_catalog.#>>) $2::pg_catalog.text[]",
							  2, argtypes, v, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read a training cursor");
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

static double
cursor_num(Datum cursor, const char *path)
{
	char	   *s = cursor_get(cursor, path);

	if (s == NULL)
		return NAN;
	return strtod(s, NULL);
}

bool
train_checkpoint_resume(int64 job, cq_train_state **st, TrainCursor *cur)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtypes[2] = {INT8OID, INT8OID};
	Datum		v[2] = {Int64GetDatum(job)};
	bool		isnull;
	bytea	   *state;
	Datum		cursor;
	cq_nn_error err = {0};
	cq_nn_status s;

	SPI_connect();
	if (SPI_execute_with_args("SELECT state, cursor FROM corpq.train_checkpoints "
							  "WHERE job OPERATOR(pg_catalog.=) $1 ORDER BY step DESC LIMIT 1",
							  1, argtypes, v, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.train_checkpoints");
	if (SPI_processed == 0)
	{
		/* a run that died before its first checkpoint starts over, log too */
		if (SPI_execute_with_args("DELETE FROM corpq.train_log WHERE job OPERATOR(pg_catalog.=) $1",
								  1, argtypes, v, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not trim corpq.train_log");
		SPI_finish();
		return false;
	}
	state = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	cursor = SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull),
							   false, -1);
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		s = cq_train_checkpoint_load(VARDATA_ANY(state), VARSIZE_ANY_EXHDR(state), st, &err);
		MemoryContextSwitchTo(spi);
	}
	if (s != CQ_NN_OK)
		corpq_nn_error_report(s, "could not load the job's last training checkpoint", err.message);

	for (int i = 0; i < cur->n_streams; i++)
	{
		cur->epoch[i] = (int64) cursor_num(cursor, psprintf("{streams,%d,0}", i));
		cur->next[i] = (int64) cursor_num(cursor, psprintf("{streams,%d,1}", i));
	}
	for (int i = 0; i < cur->n_corpora; i++)
	{
		cur->prob[i] = cursor_num(cursor, psprintf("{prob,%d}", i));
		cur->draws[i] = (int64) cursor_num(cursor, psprintf("{draws,%d}", i));
		cur->pairs[i] = (int64) cursor_num(cursor, psprintf("{pairs,%d}", i));
	}
	cur->pairs_done = (int64) cursor_num(cursor, "{pairs_done}");
	cur->tokens_done = (int64) cursor_num(cursor, "{tokens_done}");
	cur->seconds = cursor_num(cursor, "{seconds}");
	cur->best_dev = cursor_num(cursor, "{best_dev}");
	cur->best_version = (int32) cursor_num(cursor, "{best_version}");
	cur->first_version = (int32) cursor_num(cursor, "{first_version}");
	cur->sampler_state = cursor_get(cursor, "{sampler}");
	if (cur->sampler_state)
		cur->sampler_state = MemoryContextStrdup(caller, cur->sampler_state);
	cur->schedule = cursor_get(cursor, "{schedule}");
	if (cur->schedule)
		cur->schedule = MemoryContextStrdup(caller, cur->schedule);
	if (cursor_get(cursor, psprintf("{streams,%d}", cur->n_streams - 1)) == NULL ||
		cursor_get(cursor, psprintf("{streams,%d}", cur->n_streams)) != NULL ||
		cursor_get(cursor, psprintf("{prob,%d}", cur->n_corpora)) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the checkpoint of training job " INT64_FORMAT " does not match its corpus", job),
				 errdetail("The corpus query returned other corpus labels than when the checkpoint was written."),
				 errhint("Corpus queries of restartable training jobs must return the same rows each time.")));

	/* the log continues from the checkpoint */
	v[1] = Int64GetDatum((*st)->step);
	if (SPI_execute_with_args("DELETE FROM corpq.train_log WHERE job OPERATOR(pg_catalog.=) $1 "
							  "AND step OPERATOR(pg_catalog.>) $2",
							  2, argtypes, v, NULL, false, 0) != SPI_OK_DELETE)
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
	if (SPI_execute_with_args("SELECT COALESCE(pg_catalog.jsonb_agg(version ORDER BY step), '[]')::pg_catalog.text "
							  "FROM corpq.train_checkpoints WHERE job OPERATOR(pg_catalog.=) $1",
							  1, argtypes, v, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.train_checkpoints");
	s = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	SPI_finish();
	return s;
}
