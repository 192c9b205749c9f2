/*
 * Submitting a pipeline (in the calling backend): the checks every pipeline
 * shares, the corpq.pipelines row, and corpq.pipeline_drop().
 */
#include "postgres.h"

#include <stdarg.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "pg/base/catalog.h"
#include "pg/base/internal_sql.h"
#include "pg/model/model.h"
#include "pg/translate/translate.h"
#include "pg/pipeline/pipeline.h"
#include "pg/pipeline/pipeline_kinds.h"
#include "pg/text/text.h"
#include "pg/train/train.h"

bool
pipeline_name_valid(const void *field)
{
	const char *name = *(char *const *) field;

	return name != NULL && name[0] != '\0' && strlen(name) <= PIPELINE_NAME_MAX;
}

static void
check_named(const CorpqCatalogKind *k, const char *name)
{
	if (!corpq_catalog_exists(k, name))
		corpq_undefined_name(k, name);
}

void
pipeline_check_model(const char *name)
{
	check_named(&corpq_kind_model, name);
}

void
pipeline_check_vocab(const char *name)
{
	check_named(&corpq_kind_vocabulary, name);
}

void
pipeline_check_lexicon(const char *name)
{
	check_named(&corpq_kind_lexicon, name);
}

char *
pipeline_check_schema(void)
{
	char	   *schema;
	bool		may_create;

	SPI_connect();
	if (SPI_execute("SELECT pg_catalog.current_schema(), "
					"pg_catalog.has_schema_privilege(pg_catalog.current_schema(), 'CREATE')",
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the current schema");
	schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (schema == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_SCHEMA_NAME),
				 errmsg("no schema has been selected to create the pipeline's tables in"),
				 errhint("Set search_path to a schema you may create tables in.")));
	may_create = strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2), "t") == 0;
	schema = SPI_palloc(strlen(schema) + 1);
	strcpy(schema, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	SPI_finish();
	if (!may_create)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to create the pipeline's tables in schema %s", schema),
				 errhint("Set search_path to a schema you may create tables in.")));
	return schema;
}

/* The JSON object options[key] as text (dflt when absent); key removed. */
static Jsonb *
take_object(Jsonb *options, const char *key, const char *dflt, char **out)
{
	JsonbValue	k;
	JsonbValue *v;

	*out = (char *) dflt;
	if (options == NULL || !JB_ROOT_IS_OBJECT(options))
		return options;
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	v = findJsonbValueFromContainer(&options->root, JB_FOBJECT, &k);
	if (v == NULL)
		return options;
	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a JSON object", key)));
	*out = JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
	return DatumGetJsonbP(DirectFunctionCall2(jsonb_delete, JsonbPGetDatum(options),
											 CStringGetTextDatum(key)));
}

static Jsonb *
as_jsonb(const char *text)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
}

Jsonb *
pipeline_take_objects(Jsonb *options, PipelineObjects *obj)
{
	TrainOptions to;
	CorpqTranslateOptions tro;

	options = take_object(options, "model", PIPELINE_MODEL_DEFAULT, &obj->model);
	options = take_object(options, "train", "{}", &obj->train);
	options = take_object(options, "translate", "{}", &obj->translate);
	train_options_parse(as_jsonb(obj->train), &to);
	corpq_translate_options_parse(CORPQ_TRANSLATE_JOB, as_jsonb(obj->translate), &tro);
	return options;
}

void
pipeline_check_new_models(const char *kind, const PipelineObjects *obj,
						  const char *src_vocab, const char *tgt_vocab)
{
	if (src_vocab == NULL || tgt_vocab == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s options \"src_vocab\" and \"tgt_vocab\" are required when the pipeline trains a model",
						kind)));
	pipeline_check_vocab(src_vocab);
	pipeline_check_vocab(tgt_vocab);
	corpq_model_config_check(as_jsonb(obj->model), src_vocab, tgt_vocab);
}

char *
pipeline_args(const char *name, const char *schema, const char *options_json,
			  const PipelineObjects *obj,...)
{
	StringInfoData args;
	va_list		ap;
	const char *key;

	initStringInfo(&args);
	appendStringInfoString(&args, "{\"name\": ");
	escape_json(&args, name);
	appendStringInfoString(&args, ", \"schema\": ");
	escape_json(&args, schema);
	va_start(ap, obj);
	while ((key = va_arg(ap, const char *)) != NULL)
	{
		const char *value = va_arg(ap, const char *);

		appendStringInfo(&args, ", \"%s\": ", key);
		if (value)
			escape_json(&args, value);
		else
			appendStringInfoString(&args, "null");
	}
	va_end(ap);
	appendStringInfo(&args, ", \"options\": %s, \"model\": %s, \"train\": %s, \"translate\": %s}",
					 options_json, obj->model, obj->train, obj->translate);
	return args.data;
}

/* A new pipeline's tables and models must not exist yet (SPI connected). */
static void
check_outputs_free(const char *name, const char *schema,
				   const PipelineTable *tables, const char *const *models)
{
	for (int i = 0; tables[i].suffix; i++)
	{
		char	   *t = quote_qualified_identifier(schema, psprintf("%s_%s", name, tables[i].suffix));
		Oid			argtypes[1] = {TEXTOID};
		Datum		values[1] = {CStringGetTextDatum(t)};

		if (SPI_execute_with_args("SELECT pg_catalog.to_regclass($1) IS NOT NULL",
								  1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not look up %s", t);
		if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_TABLE),
					 errmsg("relation %s already exists", t),
					 errhint("Pipeline \"%s\" writes the tables %s_*; choose another name or drop them.",
							 name, name)));
	}
	for (int i = 0; models[i]; i++)
	{
		char	   *m = psprintf("%s_%s", name, models[i]);
		Oid			argtypes[1] = {TEXTOID};
		Datum		values[1] = {CStringGetTextDatum(m)};

		/* every role's pipelines: a name reserved by one is taken */
		if (corpq_sql_as_owner("SELECT name FROM corpq.pipelines "
							   "WHERE $1 OPERATOR(pg_catalog.=) ANY (reserved)",
							   1, argtypes, values, NULL, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read corpq.pipelines");
		if (SPI_processed > 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("model name \"%s\" is reserved by pipeline \"%s\"", m,
							SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
					 errhint("Choose another pipeline name.")));
		if (corpq_catalog_exists(&corpq_kind_model, m))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("model \"%s\" already exists", m),
					 errhint("Pipeline \"%s\" creates the models %s_*; choose another name or drop it with SELECT corpq.model_drop(%s).",
							 name, name, quote_literal_cstr(m))));
	}
}

/*
 * The pipeline's row: NULL when it is new; otherwise ERROR unless the caller
 * may resume it with these arguments.  Returns its last job's id as text.
 */
static bool
check_existing(const char *kind, const char *name, const char *args_json, int64 *last_job)
{
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3] = {CStringGetTextDatum(name), CStringGetTextDatum(kind),
	CStringGetTextDatum(args_json)};
	bool		isnull;
	Oid			owner;
	char	   *job;

	/* every role's rows: a name belongs to one pipeline */
	if (corpq_sql_as_owner("SELECT owner::pg_catalog.oid, kind OPERATOR(pg_catalog.=) $2 "
						   "AND args OPERATOR(pg_catalog.=) $3::pg_catalog.jsonb, job "
						   "FROM corpq.pipelines WHERE name OPERATOR(pg_catalog.=) $1",
						   3, argtypes, values, NULL, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.pipelines");
	if (SPI_processed == 0)
		return false;
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (!corpq_caller_is_member(owner))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("pipeline \"%s\" belongs to another role", name),
				 errhint("Choose another name.")));
	if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("pipeline \"%s\" already exists with other arguments", name),
				 errhint("Submit it with the same arguments to resume it, or forget it with SELECT corpq.pipeline_drop(%s).",
						 quote_literal_cstr(name))));
	job = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
	*last_job = job ? strtoll(job, NULL, 10) : 0;
	return true;
}

/* ERROR when the pipeline's last job is still queued or running. */
static void
check_not_running(const char *name, int64 last_job)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(last_job)};

	if (corpq_sql_as_caller("SELECT 1 FROM corpq.jobs WHERE id OPERATOR(pg_catalog.=) $1 "
							"AND state IN ('" CORPQ_JOB_QUEUED_NAME "', '" CORPQ_JOB_RUNNING_NAME "')",
							1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.jobs");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("pipeline \"%s\" is running in job " INT64_FORMAT, name, last_job),
				 errhint("Wait for it with SELECT corpq.job_wait(" INT64_FORMAT "), or cancel it.",
						 last_job)));
}

/*
 * Create a new pipeline's tables now, as the caller, so that no other role
 * can plant a table of the same name before a stage writes it (SPI
 * connected).  The stages claim them (pipeline_claim_table).
 */
static void
create_tables(const char *name, const char *schema, const PipelineTable *tables)
{
	for (int i = 0; tables[i].suffix; i++)
		if (corpq_sql_as_caller(psprintf("CREATE TABLE %s (%s)",
										 quote_qualified_identifier(schema, psprintf("%s_%s", name, tables[i].suffix)),
										 tables[i].columns),
								0, NULL, NULL, NULL, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not create the tables of pipeline \"%s\"", name);
}

/* The names of the models a new pipeline creates, as a text[] literal. */
static char *
reserved_array(const char *name, const char *const *models)
{
	StringInfoData a;

	initStringInfo(&a);
	appendStringInfoChar(&a, '{');
	for (int i = 0; models[i]; i++)
	{
		char	   *m = psprintf("%s_%s", name, models[i]);

		if (i > 0)
			appendStringInfoChar(&a, ',');
		appendStringInfoChar(&a, '"');
		for (const char *c = m; *c; c++)
		{
			if (*c == '"' || *c == '\\')
				appendStringInfoChar(&a, '\\');
			appendStringInfoChar(&a, *c);
		}
		appendStringInfoChar(&a, '"');
	}
	appendStringInfoChar(&a, '}');
	return a.data;
}

int64
pipeline_submit(const char *kind, const char *name, const char *schema,
				const char *args_json, const PipelineTable *tables,
				const char *const *models, int threads)
{
	Oid			argtypes[6] = {TEXTOID, TEXTOID, TEXTOID, OIDOID, INT8OID, TEXTOID};
	Datum		values[6];
	int64		last_job = 0,
				id;
	bool		exists;

	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pipeline name must not be empty")));
	SPI_connect();
	exists = check_existing(kind, name, args_json, &last_job);
	if (!exists)
	{
		check_outputs_free(name, schema, tables, models);
		create_tables(name, schema, tables);
	}
	SPI_finish();

	/* submitting reaps jobs whose worker died, so the check below sees them ended */
	id = corpq_job_submit(kind, args_json, threads);
	SPI_connect();
	if (exists)
		check_not_running(name, last_job);
	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(kind);
	values[2] = CStringGetTextDatum(args_json);
	values[3] = ObjectIdGetDatum(GetUserId());
	values[4] = Int64GetDatum(id);
	values[5] = CStringGetTextDatum(reserved_array(name, models));
	if (corpq_sql_as_owner("INSERT INTO corpq.pipelines (name, kind, args, owner, job, reserved) "
						   "VALUES ($1, $2, $3::pg_catalog.jsonb, $4::pg_catalog.regrole, $5, $6::pg_catalog.text[]) "
						   "ON CONFLICT (name) DO UPDATE SET job = excluded.job",
						   6, argtypes, values, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record pipeline \"%s\"", name);
	SPI_finish();
	return id;
}

PG_FUNCTION_INFO_V1(corpq_pipeline_drop);

Datum
corpq_pipeline_drop(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		last_job = 0;
	bool		exists;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};

	SPI_connect();
	/* RLS: only members of the owner see the row */
	if (corpq_sql_as_caller("SELECT job FROM corpq.pipelines WHERE name OPERATOR(pg_catalog.=) $1",
							1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.pipelines");
	exists = SPI_processed > 0;
	if (exists)
	{
		char	   *job = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		last_job = job ? strtoll(job, NULL, 10) : 0;
		check_not_running(name, last_job);
		if (corpq_sql_as_owner("DELETE FROM corpq.pipelines WHERE name OPERATOR(pg_catalog.=) $1",
							   1, argtypes, values, NULL, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not drop pipeline \"%s\"", name);
	}
	SPI_finish();
	PG_RETURN_BOOL(exists);
}

void
corpq_pipeline_init(void)
{
	/* a pipeline resumes after its last finished stage */
	corpq_job_register_kind("rejuvenate", rejuvenate_job, true);
	corpq_job_register_kind("self_train", self_train_job, true);
}
