/*
 * Byte-pair encoding compatible with subword-nmt (Sennrich et al. 2016).
 *
 * A model is an ordered list of merges (left, right); rank = position, and a
 * pair listed twice keeps its first rank.  Symbols are strings of whole
 * UTF-8 characters; "</w>" marks the end of a word: in codes version 0.2 it
 * is glued to the last character ("s</w>"), in version 0.1 it is a symbol of
 * its own.  Segmenting a word follows apply_bpe.py: start from characters,
 * repeatedly merge every occurrence (left to right) of the adjacent pair with
 * the lowest rank, stop when no adjacent pair is a merge, drop "</w>".
 * Subwords but the last get the continuation marker "@@".
 */
#ifndef CQ_BPE_H
#define CQ_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "text/pairmap.h"
#include "text/strmap.h"
#include "common/error.h"
#include "text/words.h"

#define CQ_BPE_EOW "</w>"
#define CQ_BPE_SEP "@@"

typedef struct cq_bpe
{
	int			version;		/* 1 = codes 0.1, 2 = codes 0.2 */
	int32_t		n_merges;
	int32_t		cap_merges;
	cq_strmap	syms;			/* symbol string -> symbol id */
	int32_t    *left;			/* [n_merges] symbol ids */
	int32_t    *right;			/* [n_merges] */
	int32_t    *merged;			/* [n_merges] id of left + right */
	cq_pairmap	ranks;			/* (left, right) -> lowest rank */
} cq_bpe;

/* An empty model of the given codes version (1 or 2); CQ_ENOMEM. */
cq_code		cq_bpe_init(cq_bpe *bpe, int version);
void		cq_bpe_free(cq_bpe *bpe);

/* Append the merge (left, right); both non-empty, without spaces. */
cq_code		cq_bpe_add_merge(cq_bpe *bpe, const char *left, size_t llen,
							 const char *right, size_t rlen, cq_error *err);

/*
 * Parse a subword-nmt codes file.  A first line "#version: 0.2" (or 0.1)
 * selects the version; without it the file is version 0.1 and its first line
 * is a merge.  Each merge line is "left right" (surrounding spaces, \r and \n
 * are stripped, then exactly one space must separate two non-empty symbols).
 * A bad line is CQ_EINVAL, its 1-based number in the message.  bpe must be
 * uninitialised or freed; on failure it is left freed.
 */
cq_code		cq_bpe_parse_codes(cq_bpe *bpe, const char *codes, size_t len,
							   cq_error *err);

/* The codes file (header for version 0.2, then one merge per line); cq_alloc. */
char	   *cq_bpe_write_codes(const cq_bpe *bpe, size_t *out_len);

/*
 * Per-caller cache of word segmentations (like apply_bpe.py's).  It is
 * emptied when it holds max_words words, bounding memory on large corpora.
 */
typedef struct cq_bpe_cache
{
	cq_strmap	words;			/* word -> vals = offset into segs */
	uint32_t   *segs;			/* per word: count, then end byte offsets */
	size_t		segs_len;
	size_t		segs_cap;
	size_t		max_words;
} cq_bpe_cache;

/* CQ_ENOMEM. */
cq_code		cq_bpe_cache_init(cq_bpe_cache *c, size_t max_words);
void		cq_bpe_cache_free(cq_bpe_cache *c);

/*
 * Segment one word (no whitespace inside) into subword end offsets: ends[i]
 * is the byte offset just past subword i, *n_out the number of subwords.
 * ends needs room for wlen entries.  cache may be NULL.  CQ_ENOMEM.
 */
cq_code		cq_bpe_segment_word(const cq_bpe *bpe, cq_bpe_cache *cache,
								const char *word, size_t wlen,
								uint32_t *ends, size_t *n_out);

/*
 * Segment a sentence: the subwords of every word, "@@" appended to all but
 * the last subword of each word.  bpe NULL = whitespace segmentation.
 * out is cleared first.  CQ_ENOMEM.
 */
cq_code		cq_bpe_tokenize(const cq_bpe *bpe, cq_bpe_cache *cache,
							const char *text, size_t len, cq_tokens *out);

/*
 * apply_bpe.py's output for a sentence: the tokens joined by single spaces
 * (leading, trailing and repeated whitespace is not kept); cq_alloc.
 */
char	   *cq_bpe_apply(const cq_bpe *bpe, cq_bpe_cache *cache,
						 const char *text, size_t len, size_t *out_len);

/*
 * Undo the segmentation, as subword-nmt's `sed -r 's/(@@ )|(@@ ?$)//g'`:
 * "sub@@ word" -> "subword", a trailing "@@" is dropped.  NUL-terminated,
 * cq_alloc; NULL when out of memory.
 */
char	   *cq_bpe_undo(const char *text, size_t len, size_t *out_len);

/* The same on s[0 .. len) in place; returns the new length (no NUL added). */
size_t		cq_bpe_undo_inplace(char *s, size_t len);

#endif
