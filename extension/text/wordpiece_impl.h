/*
 * Inside the WordPiece segmenter (text/wordpiece.h): the model's layout,
 * shared by wordpiece_vocab.c (the model and its tokens) and wordpiece.c (a
 * sentence to pieces); the steps on code points are wordpiece_chars.h's.
 */
#ifndef CQ_TEXT_WORDPIECE_IMPL_H
#define CQ_TEXT_WORDPIECE_IMPL_H

#include "common/cptext.h"
#include "text/strmap.h"
#include "text/wordpiece.h"
#include "text/wordpiece_chars.h"

struct cq_wordpiece
{
	cq_wordpiece_options o;		/* special[] point into special_utf8 */
	char	   *special_utf8[CQ_WORDPIECE_N_SPECIAL];
	cq_cpbuf	special_cp[CQ_WORDPIECE_N_SPECIAL]; /* the same as code points */
	cq_strmap	vocab;			/* distinct tokens */
	uint32_t   *line;			/* [n_lines] vocab entry of line (id) i */
	size_t		n_lines;
	size_t		cap_lines;
	size_t		longest;		/* bytes of the longest token */
	bool		attached;		/* vocab and line read an arena in place
								 * (wordpiece_arena.c): read-only, not freed */
	/* scratch of cq_wordpiece_tokenize */
	cq_cpbuf	text;			/* the sentence (lower-cased) */
	cq_cpbuf	part;			/* a part between specials, normalised */
	cq_cpbuf	tmp;
	cq_cpbuf	word;
	cq_u16buf	u16a;
	cq_u16buf	u16b;
	char	   *utf8;			/* "##" then a word in UTF-8 */
	uint32_t   *ends;			/* byte offset in utf8 after each character */
	size_t		utf8_cap;		/* utf8 holds 2 + 4 * utf8_cap bytes */
};

#endif
