/*
 * WordPiece (text/wordpiece.h): the cases of transformers' own BERT
 * tokenizer tests (tests/models/bert/test_tokenization_bert.py) and of its
 * docstrings, the steps that differ between the two variants, the vocab.txt
 * reading rules, the bounds, and the decoding.
 */
#include "unit.h"

#include "common/mem.h"
#include "text/wordpiece.h"

static cq_wordpiece_options
options(bool lower)
{
	cq_wordpiece_options o = {
		.lower_case = lower, .strip_accents = lower, .tokenize_chinese_chars = true,
		.variant = CQ_WORDPIECE_SLOW, .max_input_chars_per_word = 100,
		.special = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"}
	};

	return o;
}

static cq_wordpiece *
load(const cq_wordpiece_options *o, const char *vocab)
{
	cq_wordpiece *wp = NULL;
	cq_error	err = {0};

	if (cq_wordpiece_load(o, vocab, strlen(vocab), &wp, &err) != CQ_OK)
		unit_fail(__FILE__, __LINE__, "load: %s", err.msg);
	return wp;
}

/* The pieces of text, space-joined (a static buffer: one call at a time). */
static const char *
pieces(cq_wordpiece *wp, const char *text)
{
	static char buf[4096];
	size_t		n;
	cq_error	err = {0};
	char	   *s;
	cq_code		rc = cq_wordpiece_apply(wp, text, strlen(text), &s, &n, &err);

	snprintf(buf, sizeof(buf), "%s", rc == CQ_OK ? s : err.msg);
	cq_free(s);
	return buf;
}

/* transformers' WordpieceTokenizer test and docstring */
TEST(wordpiece_greedy_longest_match)
{
	cq_wordpiece_options o = options(true);
	cq_wordpiece *wp = load(&o, "[UNK]\n[CLS]\n[SEP]\nwant\n##want\n##ed\nwa\nun\nrunn\n##ing\n"
							"##aff\n##able\n");

	CHECK_STR_EQ(pieces(wp, ""), "");
	CHECK_STR_EQ(pieces(wp, "unwanted running"), "un ##want ##ed runn ##ing");
	CHECK_STR_EQ(pieces(wp, "unwantedX running"), "[UNK] runn ##ing");
	CHECK_STR_EQ(pieces(wp, "unaffable"), "un ##aff ##able");
	/* "wa" matches first but leaves "##nt", which no token starts: unknown */
	CHECK_STR_EQ(pieces(wp, "want wan"), "want [UNK]");
	CHECK_INT_EQ(cq_wordpiece_size(wp), 12);
	cq_wordpiece_free(wp);
}

/* the BasicTokenizer tests, each word a token of its own */
TEST(wordpiece_basic_tokenizer)
{
	const char *v = "[UNK]\nhello\n!\nhow\nare\nyou\n?\nhällo\nHeLLo\nAre\nyoU\nHaLLo\nah\n"
		"\xe5\x8d\x9a\n\xe6\x8e\xa8\nzz\n";
	cq_wordpiece_options o = options(true);
	cq_wordpiece *wp = load(&o, v);

	CHECK_STR_EQ(pieces(wp, " \tHeLLo!how  \n Are yoU?  "), "hello ! how are you ?");
	CHECK_STR_EQ(pieces(wp, "H\xc3\xa9llo"), "hello");
	CHECK_STR_EQ(pieces(wp, "ah\xe5\x8d\x9a\xe6\x8e\xa8zz"), "ah \xe5\x8d\x9a \xe6\x8e\xa8 zz");
	cq_wordpiece_free(wp);

	o.strip_accents = false;
	wp = load(&o, v);
	CHECK_STR_EQ(pieces(wp, " \tH\xc3\xa4LLo!how  \n Are yoU?  "), "h\xc3\xa4llo ! how are you ?");
	cq_wordpiece_free(wp);

	o = options(false);
	wp = load(&o, v);
	CHECK_STR_EQ(pieces(wp, " \tHeLLo!how  \n Are yoU?  "), "HeLLo ! how Are yoU ?");
	o.strip_accents = true;
	cq_wordpiece_free(wp);
	wp = load(&o, v);
	CHECK_STR_EQ(pieces(wp, " \tH\xc3\xa4LLo!how  \n Are yoU?  "), "HaLLo ! how Are yoU ?");
	cq_wordpiece_free(wp);
}

/* _clean_text, _is_control, _is_whitespace, _is_punctuation */
/* Cased: each (text, pieces) of slow under the slow variant, of fast under the fast one. */
static void
check_slow_fast(const char *vocab, const char *const slow[][2], int n_slow,
				const char *const fast[][2], int n_fast)
{
	cq_wordpiece_options o = options(false);

	for (int variant = 0; variant < 2; variant++)
	{
		const char *const (*cases)[2] = variant ? fast : slow;
		cq_wordpiece *wp;

		o.variant = variant ? CQ_WORDPIECE_FAST : o.variant;
		wp = load(&o, vocab);
		for (int i = 0; i < (variant ? n_fast : n_slow); i++)
			CHECK_STR_EQ(pieces(wp, cases[i][0]), cases[i][1]);
		cq_wordpiece_free(wp);
	}
}

TEST(wordpiece_clean_and_punctuation)
{
	cq_wordpiece_options o = options(false);
	cq_wordpiece *wp = load(&o, "[UNK]\na\nb\n$\n`\n\xc2\xbf\n");

	/* soft hyphen (Cf), U+0005, U+FFFD, NUL-free invalid UTF-8: dropped */
	CHECK_STR_EQ(pieces(wp, "a\xc2\xad" "b"), "[UNK]");
	CHECK_STR_EQ(pieces(wp, "\xc2\xad"), "");
	CHECK_STR_EQ(pieces(wp, "a\x05 \xef\xbf\xbd b\xff"), "a b");
	/* U+00A0 and U+3000 (Zs), U+2028 separate words; \v and \f are Cc: dropped */
	CHECK_STR_EQ(pieces(wp, "a\xc2\xa0" "b\xe3\x80\x80" "a\xe2\x80\xa8" "b"), "a b a b");
	CHECK_STR_EQ(pieces(wp, "a\vb\fa"), "[UNK]");
	/* ASCII symbols count as punctuation, as P* characters (inverted ?) */
	CHECK_STR_EQ(pieces(wp, "a$b`a\xc2\xbf"), "a $ b ` a \xc2\xbf");
	cq_wordpiece_free(wp);
}

TEST(wordpiece_special_tokens)
{
	const char *v = "[UNK]\n[SEP]\n[CLS]\nhello\nworld\n[\n]\nsep\nSEP\n";
	cq_wordpiece_options o = options(true);
	cq_wordpiece *wp = load(&o, v);

	CHECK_STR_EQ(pieces(wp, "Hello[SEP]World"), "hello [SEP] world");
	CHECK_STR_EQ(pieces(wp, "[CLS]hello [MASK]"), "[CLS] hello [MASK]");
	/* lower-case spellings are not special; nor is one with a Cf inside */
	CHECK_STR_EQ(pieces(wp, "[sep]"), "[ sep ]");
	CHECK_STR_EQ(pieces(wp, "[SE\xe2\x80\x8bP]"), "[ sep ]");
	cq_wordpiece_free(wp);
	/* cased, a word spelled like a special after cleaning stays whole (slow) */
	check_slow_fast(v, (const char *const[][2]) {{"[SE\xe2\x80\x8bP]", "[SEP]"}}, 1,
					(const char *const[][2]) {{"Hello[SEP]", "[UNK] [SEP]"}, {"[SE\xe2\x80\x8bP]", "[ SEP ]"}}, 2);
}

/* İ lower-cases to i + U+0307; Σ lower-cases alone (no final sigma) */
TEST(wordpiece_lower_case)
{
	cq_wordpiece_options o = options(true);
	cq_wordpiece *wp;

	o.strip_accents = false;
	wp = load(&o, "[UNK]\ni\xcc\x87\n\xcf\x83\n##\xcf\x83\n\xce\xbf\n##\xce\xbf\n");
	CHECK_STR_EQ(pieces(wp, "\xc4\xb0"), "i\xcc\x87");
	/* "ΟΣ" -> "ο" "##σ" (Python's "ΟΣ".lower() would give "ος") */
	CHECK_STR_EQ(pieces(wp, "\xce\x9f\xce\xa3"), "\xce\xbf ##\xcf\x83");
	cq_wordpiece_free(wp);
	o.strip_accents = true;
	wp = load(&o, "[UNK]\ni\n");
	CHECK_STR_EQ(pieces(wp, "\xc4\xb0"), "i");
	cq_wordpiece_free(wp);
}

/* NFC in the slow variant only; CJK extension E starts later in the fast one */
TEST(wordpiece_variants)
{
	/* U+2B820 (CJK extension E) is split off in the slow variant */
	check_slow_fast("[UNK]\n\xc3\xa9\ne\n##\xcc\x81\n\xf0\xab\xa0\xa0\n##\xf0\xab\xa0\xa0\nx\n##x\n",
					(const char *const[][2]) {{"e\xcc\x81", "\xc3\xa9"},
											  {"x\xf0\xab\xa0\xa0x", "x \xf0\xab\xa0\xa0 x"}}, 2,
					(const char *const[][2]) {{"e\xcc\x81", "e ##\xcc\x81"},
											  {"x\xf0\xab\xa0\xa0x", "x ##\xf0\xab\xa0\xa0 ##x"}}, 2);
}

TEST(wordpiece_max_input_chars)
{
	cq_wordpiece_options o = options(false);
	cq_wordpiece *wp;
	char		word[202];

	o.max_input_chars_per_word = 100;
	wp = load(&o, "[UNK]\na\n##a\n");
	memset(word, 'a', 100);
	word[100] = '\0';
	CHECK_INT_EQ(strlen(pieces(wp, word)), 1 + 99 * 4);
	word[100] = 'a';
	word[101] = '\0';
	CHECK_STR_EQ(pieces(wp, word), "[UNK]");
	cq_wordpiece_free(wp);
}

/* vocab.txt as Python's text mode reads it */
TEST(wordpiece_vocab_lines)
{
	cq_wordpiece_options o = options(false);
	cq_wordpiece *wp = load(&o, "[UNK]\r\na\rb\n\nb\nc");
	size_t		len;

	CHECK_INT_EQ(cq_wordpiece_size(wp), 6);
	CHECK_STR_EQ(cq_wordpiece_token(wp, 1, &len), "a");
	CHECK_STR_EQ(cq_wordpiece_token(wp, 3, &len), "");
	CHECK_INT_EQ(len, 0);
	CHECK_STR_EQ(cq_wordpiece_token(wp, 4, &len), "b");
	CHECK_STR_EQ(cq_wordpiece_token(wp, 5, &len), "c");
	cq_wordpiece_free(wp);
	wp = load(&o, "[UNK]\n");
	CHECK_INT_EQ(cq_wordpiece_size(wp), 1);
	cq_wordpiece_free(wp);
}

TEST(wordpiece_bad_input)
{
	cq_wordpiece_options o = options(false);
	cq_wordpiece *wp;
	cq_error	err = {0};
	char	   *big = cq_alloc(3000);

	CHECK_INT_EQ(cq_wordpiece_load(&o, "a\nb\n", 4, &wp, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "\"[UNK]\" is not in the vocabulary") != NULL);
	CHECK(wp == NULL);
	memset(big, 'x', 3000);
	memcpy(big, "[UNK]\nab\n", 9);
	CHECK_INT_EQ(cq_wordpiece_load(&o, big, 3000, &wp, &err), CQ_ELIMIT);
	CHECK_STR_EQ(err.msg, "line 3: a token of 2991 bytes, more than 1024");
	cq_free(big);
	/* one line more than the bound (repeated lines count: they keep their ids) */
	big = cq_alloc(2 * (CQ_WORDPIECE_MAX_TOKENS + 1));
	for (int i = 0; i < CQ_WORDPIECE_MAX_TOKENS + 1; i++)
		memcpy(big + 2 * i, "x\n", 2);
	CHECK_INT_EQ(cq_wordpiece_load(&o, big, 2 * (CQ_WORDPIECE_MAX_TOKENS + 1), &wp, &err), CQ_ELIMIT);
	CHECK_STR_EQ(err.msg, "more than 524288 tokens");
	CHECK_INT_EQ(cq_wordpiece_load(&o, big, 2 * CQ_WORDPIECE_MAX_TOKENS, &wp, &err), CQ_EINVAL);
	cq_free(big);
	o.special[CQ_WORDPIECE_SEP] = "[ SEP]";
	CHECK_INT_EQ(cq_wordpiece_load(&o, "[UNK]", 5, &wp, &err), CQ_EINVAL);
	CHECK_STR_EQ(err.msg, "sep_token \"[ SEP]\" contains whitespace");
	o.special[CQ_WORDPIECE_SEP] = "";
	CHECK_INT_EQ(cq_wordpiece_load(&o, "[UNK]", 5, &wp, &err), CQ_EINVAL);
	o.special[CQ_WORDPIECE_SEP] = NULL;
	o.special[CQ_WORDPIECE_UNK] = NULL;
	CHECK_INT_EQ(cq_wordpiece_load(&o, "[UNK]", 5, &wp, &err), CQ_EINVAL);
	o = options(false);
	o.max_input_chars_per_word = 0;
	CHECK_INT_EQ(cq_wordpiece_load(&o, "[UNK]", 5, &wp, &err), CQ_EINVAL);
	o.max_input_chars_per_word = CQ_WORDPIECE_MAX_WORD_CHARS + 1;
	CHECK_INT_EQ(cq_wordpiece_load(&o, "[UNK]", 5, &wp, &err), CQ_EINVAL);
}

/* convert_tokens_to_string */
TEST(wordpiece_undo)
{
	char		a[] = "un ##want ##ed runn ##ing";
	char		b[] = "\xe3\x80\x80 ##a ## ##b x ###  ";
	char		c[] = "##a";

	CHECK_INT_EQ(cq_wordpiece_undo_inplace(a, strlen(a)), 16);
	a[16] = '\0';
	CHECK_STR_EQ(a, "unwanted running");
	b[cq_wordpiece_undo_inplace(b, strlen(b))] = '\0';
	/* " ##" removed left to right; U+3000 and spaces stripped at the ends */
	CHECK_STR_EQ(b, "ab x#");
	c[cq_wordpiece_undo_inplace(c, strlen(c))] = '\0';
	CHECK_STR_EQ(c, "##a");
}
