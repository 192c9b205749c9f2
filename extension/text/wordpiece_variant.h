/*
 * Which Hugging Face implementation a WordPiece segmenter follows
 * (text/wordpiece.h): the options and the character steps both name it.
 */
#ifndef CQ_TEXT_WORDPIECE_VARIANT_H
#define CQ_TEXT_WORDPIECE_VARIANT_H

typedef enum cq_wordpiece_variant
{
	CQ_WORDPIECE_SLOW,			/* transformers' Python BertTokenizer */
	CQ_WORDPIECE_FAST			/* tokenizers' (BertTokenizerFast) */
} cq_wordpiece_variant;

#endif
