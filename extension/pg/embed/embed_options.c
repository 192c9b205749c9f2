/*
 * The option tables of embed/ (embed.h): embed_rows()' and embed_job()'s
 * options below the mining functions'.
 *
 * The mining functions' options (docs/embeddings.md): mine_vectors() takes
 * the core's (mine/mine.h): k, mutual, min_margin, and the blocks of the
 * exact search, which change its memory and speed but no result;
 * mine_pairs() (pg/mining) takes the same rows (CORPQ_MINE_OPTION_ROWS),
 * those of embedding its sentences and its classifier's.
 */
#include "postgres.h"

#include <math.h>

#include "pg/base/options.h"
#include "pg/embed/embed.h"
#include "pg/jobs/jobs.h"
#include "pg/model/model.h"

/* mine_vectors()' options: the core's, parsed into mine */
typedef struct VectorOptions
{
	cq_mine_options mine;
} VectorOptions;

static const CorpqOption vector_rows[] = {
	CORPQ_MINE_OPTION_ROWS(VectorOptions, mine),
	{0}
};

static const CorpqOptionTable vector_table = {"mining", vector_rows};

void
corpq_mine_options_parse(Jsonb *options, cq_mine_options *o)
{
	VectorOptions all;

	cq_mine_options_default(&all.mine);
	corpq_options_parse(&vector_table, options, &all);
	corpq_mine_options_finish(&all.mine);
	*o = all.mine;
}

void
corpq_mine_options_finish(cq_mine_options *o)
{
	if (CORPQ_OPT_IS_UNSET(o->min_margin))
		o->min_margin = -INFINITY;
}

#define OPT(field) CORPQ_OPT_FIELD(CorpqEmbedRowsOptions, field)

static const CorpqOption embed_rows_rows[] = {
	{.key = "batch_size", OPT(batch_size), .type = CORPQ_OPT_INT, .min = 1, .max = 65536,
	.def = CORPQ_EMBED_BATCH_SIZE},
	{.key = "on_too_long", OPT(on_too_long), .type = CORPQ_OPT_ENUM, .names = corpq_too_long_names,
	.def = CORPQ_TOO_LONG_NULL},
	{0}
};

const CorpqOptionTable corpq_embed_rows_options = {"embed_rows", embed_rows_rows};

#undef OPT

/* A .valid check: a column name, not "id". */
static bool
column_valid(const void *field)
{
	const char *c = *(char *const *) field;

	return c[0] != '\0' && strcmp(c, "id") != 0 && strlen(c) < NAMEDATALEN;
}

#define OPT(field) CORPQ_OPT_FIELD(CorpqEmbedJobOptions, field)

/* "foreign_target" in the stored options only when given true */
static bool
echo_foreign_target(const void *options)
{
	return ((const CorpqEmbedJobOptions *) options)->foreign_target;
}

static const CorpqOption embed_job_rows[] = {
	{.key = "column", OPT(column), .type = CORPQ_OPT_STRING, .def_string = "embedding",
	.valid = column_valid, .expected = "a column name other than \"id\""},
	{.key = "batch_size", OPT(batch_size), .type = CORPQ_OPT_INT, .min = 1, .max = 65536,
	.def = CORPQ_EMBED_BATCH_SIZE},
	{.key = "chunk_rows", OPT(chunk_rows), .type = CORPQ_OPT_INT, .min = 1, .max = 10000000,
	.def = 1000},
	CORPQ_JOB_THREADS_OPTION(CorpqEmbedJobOptions, threads),
	{.key = "skip_existing", OPT(skip_existing), .type = CORPQ_OPT_BOOL},
	{.key = "on_too_long", OPT(on_too_long), .type = CORPQ_OPT_ENUM, .names = corpq_too_long_names,
	.def = CORPQ_TOO_LONG_NULL},
	{.key = "foreign_target", OPT(foreign_target), .type = CORPQ_OPT_BOOL, .echo = echo_foreign_target},
	{.key = "version_column", OPT(version_column), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .expected = "the name of an integer column of the target"},
	{0}
};

const CorpqOptionTable corpq_embed_job_options = {"embed job", embed_job_rows};

#undef OPT
