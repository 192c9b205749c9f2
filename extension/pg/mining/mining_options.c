/*
 * mine_pairs()' options (mining.h, docs/embeddings.md): the core's mining
 * rows (pg/embed's, as mine_vectors() takes them), how the sentences are
 * embedded, and the re-ranking: classifier (a pair-quality classifier,
 * name or name@N), classifier_k (the candidates of a source it judges:
 * 1 .. k, default k) and min_quality (a source whose best probability is
 * below it gives no pair: 0.5, pair_quality's calibrated threshold).
 */
#include "postgres.h"

#include "pg/base/options.h"
#include "pg/mining/mining.h"
#include "pg/model/model.h"

#define OPT(field) CORPQ_OPT_FIELD(CorpqMinePairsOptions, field)

static const CorpqOption rows[] = {
	CORPQ_MINE_OPTION_ROWS(CorpqMinePairsOptions, mine),
	{.key = "batch_size", OPT(embed.batch_size), .type = CORPQ_OPT_INT, .min = 1, .max = 65536,
	.def = CORPQ_EMBED_BATCH_SIZE},
	{.key = "on_too_long", OPT(embed.on_too_long), .type = CORPQ_OPT_ENUM, .names = corpq_too_long_names,
	.def = CORPQ_TOO_LONG_NULL},
	{.key = "classifier", OPT(classifier), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .expected = "a classifier name or name@N"},
	{.key = "classifier_k", OPT(classifier_k), .type = CORPQ_OPT_INT, .flags = CORPQ_OPT_UNSET,
	.min = 1, .max = CQ_MINE_MAX_K},
	{.key = "min_quality", OPT(min_quality), .type = CORPQ_OPT_NUMBER, .flags = CORPQ_OPT_UNSET,
	.range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1},
	{0}
};

static const CorpqOptionTable table = {"mining", rows};

#undef OPT

void
corpq_mine_pairs_options_parse(Jsonb *options, CorpqMinePairsOptions *o)
{
	memset(o, 0, sizeof(*o));
	cq_mine_options_default(&o->mine);
	corpq_options_parse(&table, options, o);
	corpq_mine_options_finish(&o->mine);
	if (o->classifier == NULL)
	{
		if (!CORPQ_OPT_IS_UNSET(o->classifier_k) || !CORPQ_OPT_IS_UNSET(o->min_quality))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("mining option \"%s\" needs the option \"classifier\"",
							!CORPQ_OPT_IS_UNSET(o->classifier_k) ? "classifier_k" : "min_quality"),
					 errhint("Name a pair-quality classifier (corpq.classifiers) to re-rank each source's candidates.")));
		return;
	}
	if (CORPQ_OPT_IS_UNSET(o->classifier_k))
		o->classifier_k = o->mine.k;
	else if (o->classifier_k > o->mine.k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mining option \"classifier_k\" is %d, more than k (%d)",
						o->classifier_k, o->mine.k),
				 errdetail("The classifier judges a source's candidates among its k nearest targets."),
				 errhint("Raise \"k\" (it also changes the margins' k-NN means) or lower \"classifier_k\".")));
	if (CORPQ_OPT_IS_UNSET(o->min_quality))
		o->min_quality = CORPQ_MINE_MIN_QUALITY;
}
