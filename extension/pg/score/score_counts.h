/*
 * What scoring some rows came to (score_batch.c, dual_xent.c, a score job's
 * chunks).  Apart from score.h so that dual_xent.h, which the filters
 * include, needs no core model header.
 */
#ifndef CORPQ_SCORE_SCORE_COUNTS_H
#define CORPQ_SCORE_SCORE_COUNTS_H

#include "postgres.h"

/*
 * What scoring some rows came to, added up over calls: the one count a
 * batch function reports (score() and dual_xent_scores() as a NOTICE, a
 * job in its progress and result).
 */
typedef struct CorpqScoreCounts
{
	int64		rows;			/* rows seen */
	int64		scored;			/* rows with a score */
	int64		null_pairs;		/* rows with a NULL side */
	int64		too_long;		/* rows NULL because a side exceeds a model's limit */
	int64		tokens;			/* target positions scored (tokens and </s>), one pass */
} CorpqScoreCounts;

/*
 * NOTICE, when counts->too_long > 0, that so many of the rows got a NULL
 * score because a side was longer than what (e.g. "model \"m\"") accepts.
 */
void		corpq_notice_too_long(const CorpqScoreCounts *counts, const char *what);

#endif
