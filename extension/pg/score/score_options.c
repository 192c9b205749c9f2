/*
 * The option tables of score/ (score.h): corpq.score_job()'s options, with
 * their cross-key checks and defaults (corpq_score_job_resolve).
 */
#include "postgres.h"

#include "pg/base/options.h"
#include "pg/jobs/jobs.h"
#include "pg/score/score.h"

static const char *const score_names[] = {"sent_prob", "sent_logprob", "uncertainty", "dual_xent",
"pair_quality"};

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

/* A .valid check: one to five known score names, none twice. */
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
scores(const CorpqScoreJobOptions *o, CorpqScoreKind kind)
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

static bool
echo_pair_quality(const void *options)
{
	return scores(options, SCORE_PAIR_QUALITY);
}

#define OPT(field) CORPQ_OPT_FIELD(CorpqScoreJobOptions, field)

/* "foreign_target" in the stored options only when given true */
static bool
echo_foreign_target(const void *options)
{
	return ((const CorpqScoreJobOptions *) options)->foreign_target;
}

static const CorpqOption rows[] = {
	{.key = "what", OPT(what), .type = CORPQ_OPT_STRING, .def_string = "sent_prob",
		.valid = what_valid,
	.expected = "one or more of sent_prob, sent_logprob, uncertainty, dual_xent, pair_quality, separated by commas, each once"},
	{.key = "columns", OPT(columns), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
		.valid = columns_valid,
	.expected = "one column name per score, separated by commas, each once, none \"id\""},
	/* checked by the core's names (corpq_score_job_resolve) */
	{.key = "measure", OPT(measure), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .echo = echo_uncertainty},
	{.key = "passes", OPT(passes), .type = CORPQ_OPT_INT, .min = 1, .max = CORPQ_MAX_PASSES,
	.flags = CORPQ_OPT_UNSET, .echo = echo_uncertainty},
	{.key = "seed", OPT(seed), .type = CORPQ_OPT_INT64, .min = 0, .max = PG_INT64_MAX,
	.flags = CORPQ_OPT_UNSET, .echo = echo_uncertainty},
	{.key = "backward", OPT(backward), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .echo = echo_dual_xent},
	{.key = "classifier", OPT(classifier), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
		.valid = corpq_option_nonempty, .echo = echo_pair_quality,
	.expected = "a classifier name or name@N"},
	{.key = "batch_size", OPT(batch_size), .type = CORPQ_OPT_INT, .min = 1, .max = 65536, .def = 64},
	{.key = "chunk_rows", OPT(chunk_rows), .type = CORPQ_OPT_INT, .min = 1, .max = 10000000,
	.def = 1000},
	CORPQ_JOB_THREADS_OPTION(CorpqScoreJobOptions, threads),
	{.key = "skip_existing", OPT(skip_existing), .type = CORPQ_OPT_BOOL},
	{.key = "on_too_long", OPT(on_too_long), .type = CORPQ_OPT_ENUM, .names = corpq_too_long_names,
	.def = CORPQ_TOO_LONG_NULL},
	{.key = "foreign_target", OPT(foreign_target), .type = CORPQ_OPT_BOOL, .echo = echo_foreign_target},
	{.key = "version_column", OPT(version_column), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .expected = "the name of an integer column of the target"},
	{0}
};

const CorpqOptionTable corpq_score_job_options = {"score job", rows};

/* An option given for a score the job does not compute. */
static void
needs_score(const char *key, CorpqScoreKind kind)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("score job option \"%s\" needs \"%s\" in \"what\"", key, score_names[kind]),
			 errhint("Leave it out, or score %s too.", score_names[kind])));
}

void
corpq_score_job_resolve(CorpqScoreJobOptions *o, CorpqScorePlan *p)
{
	char	   *names[N_SCORE_KINDS];
	int			n_columns = 0;

	memset(p, 0, sizeof(*p));
	p->n = split_list(o->what, names, N_SCORE_KINDS);
	for (int i = 0; i < p->n; i++)
	{
		p->kinds[i] = (CorpqScoreKind) score_kind(names[i]);
		p->uses[p->kinds[i]] = true;
		p->uses_model |= p->kinds[i] != SCORE_PAIR_QUALITY;
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
		if (!CORPQ_OPT_IS_UNSET(o->passes))
			needs_score("passes", SCORE_UNCERTAINTY);
		if (!CORPQ_OPT_IS_UNSET(o->seed))
			needs_score("seed", SCORE_UNCERTAINTY);
	}
	if (!p->uses[SCORE_DUAL_XENT] && o->backward)
		needs_score("backward", SCORE_DUAL_XENT);
	if (p->uses[SCORE_DUAL_XENT] && !o->backward)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("score job option \"backward\" is required to score dual_xent"),
				 errhint("Name the model that translates the other way (tgt to src): '{\"what\": \"dual_xent\", \"backward\": \"my_model_rev\"}'.")));
	if (!p->uses[SCORE_PAIR_QUALITY] && o->classifier)
		needs_score("classifier", SCORE_PAIR_QUALITY);
	if (p->uses[SCORE_PAIR_QUALITY] && !o->classifier)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("score job option \"classifier\" is required to score pair_quality"),
				 errhint("Name the classifier (corpq.classifiers): '{\"what\": \"pair_quality\", \"classifier\": \"pq\"}'.")));
	/* corpq.uncertainty()'s defaults */
	if (p->uses[SCORE_UNCERTAINTY])
	{
		if (!o->measure)
			o->measure = pstrdup("enteos");
		(void) corpq_measure_from_name(o->measure);
		if (CORPQ_OPT_IS_UNSET(o->passes))
			o->passes = 30;
		if (CORPQ_OPT_IS_UNSET(o->seed))
			o->seed = 0;
	}
}

#undef OPT
