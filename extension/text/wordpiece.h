/*
 * WordPiece segmentation as Hugging Face's BERT tokenizers do it (the
 * segmenter of LaBSE-style BERT checkpoints), from a vocab.txt: one token per
 * line, id = line number, pieces that continue a word prefixed "##".
 *
 * A sentence goes through, in this order (transformers' BertTokenizer,
 * tokenization_bert.py, with PreTrainedTokenizer.tokenize around it):
 *
 *  1. With lower_case, every character outside an occurrence of a special
 *     token is lower-cased on its own (Unicode's full mapping without
 *     context: "İ" -> "i̇", a final "Σ" -> "σ", as Python's str.lower() of
 *     one character).
 *  2. The text is cut at occurrences of the special tokens (leftmost, the
 *     longest at a position); each occurrence is a piece as it stands.
 *  3. Each other part (BasicTokenizer): U+0000, U+FFFD and every character
 *     of a category C* but tab, newline and carriage return are dropped;
 *     those three and the Zs characters become spaces; CJK ideographs get a
 *     space on both sides (tokenize_chinese_chars); the part is NFC-normalised
 *     (variant "slow" only); it is split at whitespace (Python's
 *     str.isspace()).  A word spelled exactly like a special token is kept
 *     whole ("slow" only); any other is lower-cased again (lower_case),
 *     stripped of accents (NFD, then every Mn character dropped:
 *     strip_accents) and cut around punctuation (each P* character and each
 *     ASCII non-alphanumeric symbol alone).
 *  4. Each word (WordpieceTokenizer): more than max_input_chars_per_word
 *     characters -> the unknown token; otherwise greedy longest match from
 *     the left, "##" before every piece but the first; a word with a place
 *     no vocabulary token matches -> the unknown token, whole.
 *
 * The variant "fast" is tokenizers' BertNormalizer + BertPreTokenizer +
 * WordPiece (BertTokenizerFast, and transformers 5's BertTokenizer): no NFC,
 * no special-token check of words, specials cut before lower-casing, and
 * its CJK ranges (the extension E block starts at U+2B920 there, U+2B820 in
 * the Python code).  Both variants agree on text in NFC without specials.
 *
 * Character properties and normalisation are ICU's (Unicode 15 in Debian
 * 12; Python 3.11 has 14: characters new in 15 are Cn, hence dropped, in
 * Python but kept here).  Invalid UTF-8 decodes to U+FFFD, which step 3
 * drops.
 *
 * Pieces never contain whitespace (special tokens may not either), so a
 * sentence's pieces travel as whitespace tokens (text/words.h), like BPE
 * subwords; their "##" stays, so each piece is a line of vocab.txt, the
 * unknown token or a special token.
 *
 * Bounded for untrusted input: at most CQ_WORDPIECE_MAX_TOKENS tokens of at
 * most CQ_WORDPIECE_MAX_TOKEN_BYTES bytes; a word is matched against tokens
 * no longer than the longest in the vocabulary, so segmenting costs at most
 * (word length x longest token) lookups per word; nothing recurses.
 */
#ifndef CQ_TEXT_WORDPIECE_H
#define CQ_TEXT_WORDPIECE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "text/wordpiece_variant.h"
#include "text/words.h"

/* as corpq's vocabularies (pg/text/vocab_sql.c): LaBSE's 501,153 fit */
#define CQ_WORDPIECE_MAX_TOKENS (1 << 19)
#define CQ_WORDPIECE_MAX_TOKEN_BYTES 1024
#define CQ_WORDPIECE_MAX_WORD_CHARS 1000	/* max_input_chars_per_word */
#define CQ_WORDPIECE_PREFIX "##"

/* The special tokens, in the order transformers tries them in step 1. */
typedef enum cq_wordpiece_special
{
	CQ_WORDPIECE_UNK,
	CQ_WORDPIECE_SEP,
	CQ_WORDPIECE_PAD,
	CQ_WORDPIECE_CLS,
	CQ_WORDPIECE_MASK,
	CQ_WORDPIECE_N_SPECIAL
} cq_wordpiece_special;

typedef struct cq_wordpiece_options
{
	bool		lower_case;		/* do_lower_case */
	bool		strip_accents;	/* resolved: transformers' None = lower_case */
	bool		tokenize_chinese_chars;
	cq_wordpiece_variant variant;
	int32_t		max_input_chars_per_word;	/* 1 .. CQ_WORDPIECE_MAX_WORD_CHARS */
	/* NUL-terminated, copied by cq_wordpiece_new; NULL: none (unk: required) */
	const char *special[CQ_WORDPIECE_N_SPECIAL];
} cq_wordpiece_options;

typedef struct cq_wordpiece cq_wordpiece;

/*
 * An empty model with options o (checked: CQ_EINVAL for an unknown variant,
 * a bound out of range, no unknown token, a special token that is empty,
 * longer than CQ_WORDPIECE_MAX_TOKEN_BYTES, not UTF-8 or with whitespace).
 */
cq_code		cq_wordpiece_new(const cq_wordpiece_options *o, cq_wordpiece **out,
							 cq_error *err);
void		cq_wordpiece_free(cq_wordpiece *wp);

/*
 * Free the scratch cq_wordpiece_tokenize grew (it grows again on the next
 * call): a host that keeps a segmenter calls it after a long text, so the
 * kept object does not hold that text's work space.
 */
void		cq_wordpiece_release_scratch(cq_wordpiece *wp);

/* Append the token with the next id (CQ_ELIMIT past the bounds). */
cq_code		cq_wordpiece_add(cq_wordpiece *wp, const char *tok, size_t len, cq_error *err);

/*
 * Append the tokens of a vocab.txt, read as transformers reads it (Python
 * text mode): lines end at "\n", "\r\n" or "\r"; a last line without an end
 * counts when it is not empty; empty lines and repeated tokens keep their
 * ids (a repeated token is one vocabulary entry).  Errors name the line.
 */
cq_code		cq_wordpiece_parse(cq_wordpiece *wp, const char *vocab, size_t len,
							   cq_error *err);

/* After the last token: CQ_EINVAL unless the unknown token is one of them. */
cq_code		cq_wordpiece_ready(const cq_wordpiece *wp, cq_error *err);

/* new + parse + ready; *out is NULL on failure. */
cq_code		cq_wordpiece_load(const cq_wordpiece_options *o, const char *vocab, size_t len,
							  cq_wordpiece **out, cq_error *err);

/* The number of tokens (lines), and token id (0 <= id < size). */
int32_t		cq_wordpiece_size(const cq_wordpiece *wp);
const char *cq_wordpiece_token(const cq_wordpiece *wp, int32_t id, size_t *len);

/*
 * The pieces of text[0..len) into out (cleared first).  The model keeps
 * scratch buffers, so one model serves one caller at a time.  CQ_ENOMEM, or
 * CQ_ELIMIT for a text of 2 GB or more.  Polls common/interrupt.h per word.
 */
cq_code		cq_wordpiece_tokenize(cq_wordpiece *wp, const char *text, size_t len,
								  cq_tokens *out, cq_error *err);

/*
 * *out = the pieces joined by single spaces, cq_alloc'd and NUL-terminated
 * (*out_len bytes); *out NULL on failure.  Errors as cq_wordpiece_tokenize.
 */
cq_code		cq_wordpiece_apply(cq_wordpiece *wp, const char *text, size_t len,
							   char **out, size_t *out_len, cq_error *err);

/*
 * Text from space-joined pieces, in place, as transformers'
 * convert_tokens_to_string: every " ##" removed (left to right), then
 * leading and trailing whitespace (Python's str.strip()).  Returns the new
 * length (no NUL added).
 */
size_t		cq_wordpiece_undo_inplace(char *s, size_t len);

/*
 * A relocatable segmenter (wordpiece_arena.c): a ready model's token map
 * (text/strmap_arena.h), its line ids, longest token, options and special
 * tokens in one arena whose references are offsets from its start, so that
 * processes mapping it at different addresses (a shared memory segment)
 * each segment with it in place.  The arena's start must be 8-byte aligned.
 *
 * cq_wordpiece_arena_bytes: the exact bytes of wp's arena.
 * cq_wordpiece_flatten: write wp's arena into dst (size bytes, at least
 * cq_wordpiece_arena_bytes(wp)); wp is unchanged.  CQ_EINVAL when dst is
 * too small or misaligned.
 * cq_wordpiece_attach: *out a new model reading the arena at base (bytes
 * long) in place, which segments every text as the flattened model does,
 * bit for bit.  The arena is checked first (magic, format, header checksum,
 * sections inside it, every slot, key and line id inside its table, the
 * longest token, the options and special tokens as cq_wordpiece_new checks
 * them, the unknown token present), so a truncated or damaged arena is
 * CQ_EINVAL, never a read outside it.  The attached model's scratch buffers
 * are its own (one caller at a time, as any model); it is read-only
 * (cq_wordpiece_add refuses) and cq_wordpiece_free frees only what is its
 * own: the arena must outlive it.
 */
size_t		cq_wordpiece_arena_bytes(const cq_wordpiece *wp);
cq_code		cq_wordpiece_flatten(const cq_wordpiece *wp, void *dst, size_t size, cq_error *err);
cq_code		cq_wordpiece_attach(const void *base, size_t bytes, cq_wordpiece **out,
								cq_error *err);

#endif
