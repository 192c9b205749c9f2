/*
 * The option tables of embed/ (embed.h): embed_rows()' and embed_job()'s
 * options below the mining functions'.
 *
 * The mining functions' options (docs/embeddings.md): mine_vectors() takes
 * the core's (mine/mine.h): k, mutual, min_margin, and the blocks of the
 * exact search, which change its memory and speed but no result;
 * mine_pairs() takes the same and those of embedding its sentences.  One
 * list of the core's rows serves both tables.
 */
#include "postgres.h"

#include <math.h>

#include "pg/base/options.h"
#include "pg/embed/embed.h"
#include "pg/jobs/jobs.h"
#include "pg/model/model.h"

#define OPT(field) CORPQ_OPT_FIELD(CorpqMinePairsOptions, field)

/* the core's options, as fields of mine (both tables parse into CorpqMinePairsOptions) */
#define MINE_ROWS \
	{.key = "k", OPT(mine.k), .type = CORPQ_OPT_INT, .min = 1, .max = CQ_MINE_MAX_K, \
	.def = CQ_MINE_DEFAULT_K}, \
	{.key = "mutual", OPT(mine.mutual), .type = CORPQ_OPT_BOOL, .def = false}, \
	/* unset: every best pair; a margin below 0 is never a translation */ \
	{.key = "min_margin", OPT(mine.min_margin), .type = CORPQ_OPT_NUMBER, .flags = CORPQ_OPT_UNSET, \
	.range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1e6}, \
	{.key = "block_rows", OPT(mine.block_rows), .type = CORPQ_OPT_INT, .min = 1, .max = 65536, \
	.def = CQ_MINE_DEFAULT_BLOCK_ROWS}, \
	{.key = "block_cols", OPT(mine.block_cols), .type = CORPQ_OPT_INT, .min = 1, .max = 65536, \
	.def = CQ_MINE_DEFAULT_BLOCK_COLS}

static const CorpqOption vector_rows[] = {
	MINE_ROWS,
	{0}
};

static const CorpqOption sentence_rows[] = {
	MINE_ROWS,
	{.key = "batch_size", OPT(embed.batch_size), .type = CORPQ_OPT_INT, .min = 1, .max = 65536,
	.def = CORPQ_EMBED_BATCH_SIZE},
	{.key = "on_too_long", OPT(embed.on_too_long), .type = CORPQ_OPT_ENUM, .names = corpq_too_long_names,
	.def = CORPQ_TOO_LONG_NULL},
	{0}
};

static const CorpqOptionTable vector_table = {"mining", vector_rows};
static const CorpqOptionTable sentence_table = {"mining", sentence_rows};

static void
parse(const CorpqOptionTable *t, Jsonb *options, CorpqMinePairsOptions *o)
{
	cq_mine_options_default(&o->mine);
	corpq_options_parse(t, options, o);
	if (o->mine.min_margin == CORPQ_OPT_UNSET_VALUE)
		o->mine.min_margin = -INFINITY;
}

void
corpq_mine_options_parse(Jsonb *options, cq_mine_options *o)
{
	CorpqMinePairsOptions all;

	parse(&vector_table, options, &all);
	*o = all.mine;
}

void
corpq_mine_pairs_options_parse(Jsonb *options, CorpqMinePairsOptions *o)
{
	parse(&sentence_table, options, o);
}

#undef OPT

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
