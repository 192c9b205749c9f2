/*
 * The option tables of text/ (text.h): corpq.wordpiece_import()'s options.
 */
#include "postgres.h"

#include "pg/base/options.h"
#include "pg/text/text.h"

static const char *const variant_names[] = {"slow", "fast", NULL};
static const int variant_values[] = {CQ_WORDPIECE_SLOW, CQ_WORDPIECE_FAST};

#define SPECIAL_ROW(k, name, def) \
	{.key = name, CORPQ_OPT_FIELD(CorpqWordpieceOptions, special[k]), .type = CORPQ_OPT_STRING, \
	 .def_string = def, .expected = "a string (\"\": none)"}

static const CorpqOption wordpiece_rows[] = {
	{.key = "do_lower_case", CORPQ_OPT_FIELD(CorpqWordpieceOptions, do_lower_case),
	 .type = CORPQ_OPT_BOOL, .def = 1},
	/* absent: do_lower_case (transformers' None), resolved after parsing */
	{.key = "strip_accents", CORPQ_OPT_FIELD(CorpqWordpieceOptions, strip_accents),
	 .type = CORPQ_OPT_BOOL, .def = 1},
	{.key = "tokenize_chinese_chars", CORPQ_OPT_FIELD(CorpqWordpieceOptions, tokenize_chinese_chars),
	 .type = CORPQ_OPT_BOOL, .def = 1},
	{.key = "max_input_chars_per_word", CORPQ_OPT_FIELD(CorpqWordpieceOptions, max_input_chars_per_word),
	 .type = CORPQ_OPT_INT, .min = 1, .max = CQ_WORDPIECE_MAX_WORD_CHARS, .def = 100},
	{.key = "unk_token", CORPQ_OPT_FIELD(CorpqWordpieceOptions, special[CQ_WORDPIECE_UNK]),
	 .type = CORPQ_OPT_STRING, .def_string = "[UNK]", .valid = corpq_option_nonempty,
	 .expected = "a non-empty string"},
	SPECIAL_ROW(CQ_WORDPIECE_SEP, "sep_token", "[SEP]"),
	SPECIAL_ROW(CQ_WORDPIECE_PAD, "pad_token", "[PAD]"),
	SPECIAL_ROW(CQ_WORDPIECE_CLS, "cls_token", "[CLS]"),
	SPECIAL_ROW(CQ_WORDPIECE_MASK, "mask_token", "[MASK]"),
	{.key = "variant", CORPQ_OPT_FIELD(CorpqWordpieceOptions, variant), .type = CORPQ_OPT_ENUM,
	 .names = variant_names, .values = variant_values, .def = CQ_WORDPIECE_SLOW},
	{NULL}
};

const CorpqOptionTable corpq_wordpiece_options = {"WordPiece", wordpiece_rows};
