/*
 * The option table of corpq.curate() (curate_job.h).  "filters", a filter
 * spec (docs/filters.md), is not a row: curate_job.c takes it out of the
 * options before they are parsed, and keeps it pinned in the job's
 * arguments.
 */
#include "postgres.h"

#include "pg/curate/curate_job.h"
#include "pg/jobs/jobs.h"

#define OPT(field) CORPQ_OPT_FIELD(CurateOptions, field)

static const char *const dedup_names[] = {"none", "exact", "near", NULL};

/* "foreign_target" in the stored options only when given true */
static bool
echo_foreign_target(const void *options)
{
	return ((const CurateOptions *) options)->foreign_target;
}

/* "train_encoder" in the stored options only when given false */
static bool
echo_train_encoder(const void *options)
{
	return !((const CurateOptions *) options)->train_encoder;
}

/* A column name: not empty, shorter than NAMEDATALEN. */
static bool
column_valid(const void *field)
{
	const char *c = *(char *const *) field;

	return c[0] != '\0' && strlen(c) < NAMEDATALEN;
}

static const CorpqOption curate_rows[] = {
	{.key = "src_lang", OPT(src_lang), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .expected = "a language code (corpq.langid_languages())"},
	{.key = "tgt_lang", OPT(tgt_lang), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .expected = "a language code (corpq.langid_languages())"},
	/* defaults resolved by corpq_curate: they depend on the classifier */
	{.key = "dedup", OPT(dedup), .type = CORPQ_OPT_ENUM, .names = dedup_names,
	.flags = CORPQ_OPT_UNSET},
	{.key = "copies", OPT(copies), .type = CORPQ_OPT_BOOL, .def = true},
	{.key = "classifier", OPT(classifier), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .expected = "a classifier's name, or name@N"},
	{.key = "clean_query", OPT(clean_query), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .expected = "a query of clean pairs: SELECT src, tgt FROM ..."},
	{.key = "max_seconds", OPT(max_seconds), .type = CORPQ_OPT_NUMBER, .flags = CORPQ_OPT_UNSET,
	.range = CORPQ_RANGE_POSITIVE, .hi = 1e7},
	{.key = "encoder", OPT(encoder), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .expected = "an encoder model's name, or name@N"},
	{.key = "train_encoder", OPT(train_encoder), .type = CORPQ_OPT_BOOL, .def = true,
	.echo = echo_train_encoder},
	{.key = "encoder_seconds", OPT(encoder_seconds), .type = CORPQ_OPT_NUMBER, .flags = CORPQ_OPT_UNSET,
	.range = CORPQ_RANGE_POSITIVE, .hi = 1e7},
	{.key = "threshold", OPT(threshold), .type = CORPQ_OPT_NUMBER, .flags = CORPQ_OPT_UNSET,
	.range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1},
	{.key = "id_column", OPT(id_column), .type = CORPQ_OPT_STRING, .def_string = "id",
	.valid = column_valid, .expected = "a column name"},
	{.key = "src_column", OPT(src_column), .type = CORPQ_OPT_STRING, .def_string = "src",
	.valid = column_valid, .expected = "a column name"},
	{.key = "tgt_column", OPT(tgt_column), .type = CORPQ_OPT_STRING, .def_string = "tgt",
	.valid = column_valid, .expected = "a column name"},
	{.key = "chunk_rows", OPT(chunk_rows), .type = CORPQ_OPT_INT, .min = 1, .max = 10000000,
	.def = 1000},
	CORPQ_JOB_THREADS_OPTION(CurateOptions, threads),
	{.key = "skip_existing", OPT(skip_existing), .type = CORPQ_OPT_BOOL},
	{.key = "foreign_target", OPT(foreign_target), .type = CORPQ_OPT_BOOL, .echo = echo_foreign_target},
	{0}
};

const CorpqOptionTable corpq_curate_options = {"curate", curate_rows};

#undef OPT
