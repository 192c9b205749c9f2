/*
 * mining/: corpq.mine_pairs() (docs/embeddings.md): sentences embedded with
 * an encoder and mined by margin (pg/embed), and, with a classifier, each
 * source's nearest candidates judged by pair_quality (pg/classifier): what
 * LASER mining followed by Bicleaner does in two tools.  This folder sits
 * above both (pg/classifier's features call pg/embed's cosine, so pg/embed
 * may not call the classifier); no other folder includes it.
 *
 *   mining_options.c  mine_pairs()' option table: the core's mining rows,
 *                     the embedding's, and classifier, classifier_k,
 *                     min_quality
 *   sentence_file.c   a side's sentences kept for judging: in a temporary
 *                     file, 8 bytes of offset a sentence in memory, read
 *                     back by the set's position
 *   mine_pairs_sql.c  corpq.mine_pairs()
 */
#ifndef CORPQ_PG_MINING_H
#define CORPQ_PG_MINING_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "pg/embed/embed.h"

/* The default of min_quality: pair_quality's threshold (Bicleaner's 0.5). */
#define CORPQ_MINE_MIN_QUALITY 0.5

/* mine_pairs()' options. */
typedef struct CorpqMinePairsOptions
{
	cq_mine_options mine;
	CorpqEmbedArgs embed;
	char	   *classifier;		/* "name" or "name@N", NULL: no re-ranking */
	int			classifier_k;	/* candidates judged a source; unset: k */
	double		min_quality;	/* a best probability below it: no pair */
} CorpqMinePairsOptions;

/*
 * Parse options (NULL: the defaults); ERROR naming a bad key or value,
 * classifier_k above k, and classifier_k or min_quality without a
 * classifier.  The classifier is not resolved here.
 */
void		corpq_mine_pairs_options_parse(Jsonb *options, CorpqMinePairsOptions *o);

/* ---- sentence_file.c ---- */

/*
 * The sentences of one side, in the order they were added, in a temporary
 * file; in memory only (id, offset) per sentence, then, once ordered by id
 * as the side's vector set is, the offset per position.
 */
typedef struct CorpqSentenceFile
{
	struct BufFile *file;
	int64	   *ids;			/* [n], until corpq_sentence_file_finish */
	int64	   *offsets;		/* [n]: by addition, then by position */
	int			n;
	int			cap;
	MemoryContext cxt;
} CorpqSentenceFile;

void		corpq_sentence_file_init(CorpqSentenceFile *f);
void		corpq_sentence_file_add(CorpqSentenceFile *f, int64 id, const char *text, int len);
/* Order by id: position i is then the i-th smallest id (the vector set's order). */
void		corpq_sentence_file_finish(CorpqSentenceFile *f);
/* The sentence at position i as a text (palloc'd in CurrentMemoryContext). */
text	   *corpq_sentence_file_get(CorpqSentenceFile *f, int i);
/* Bytes held in memory for n sentences (offsets and the file's buffer). */
double		corpq_sentence_file_bytes(int n);
void		corpq_sentence_file_close(CorpqSentenceFile *f);

#endif
