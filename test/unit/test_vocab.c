/* Vocabulary ordering, specials, unknown tokens and decoding. */
#include "unit.h"

#include "common/mem.h"
#include "text/bpe.h"
#include "text/vocabulary.h"

static cq_strmap
token_counts(const char *text)
{
	cq_strmap	m;
	cq_tokens	t;

	cq_strmap_init(&m, 16);
	cq_tokens_init(&t);
	CHECK_INT_EQ(cq_whitespace_tokenize(text, strlen(text), &t), CQ_OK);
	CHECK_INT_EQ(cq_count_tokens(&m, &t), CQ_OK);
	cq_tokens_free(&t);
	return m;
}

static const char *
tok(const cq_vocabulary *v, int id)
{
	return cq_strmap_key(&v->map, id, NULL);
}

TEST(vocab_specials_then_count_then_bytes)
{
	/* b x3, a x3, c x1, <unk> in the text x2 (skipped: it is a special) */
	cq_strmap	m = token_counts("b a c b a b a <unk> <unk>");
	cq_vocabulary	v;

	CHECK_INT_EQ(cq_vocabulary_build(&v, &m, 32000, 1, NULL), CQ_OK);
	CHECK_INT_EQ(cq_vocabulary_size(&v), 7);
	CHECK_STR_EQ(tok(&v, 0), "<s>");
	CHECK_STR_EQ(tok(&v, 1), "<pad>");
	CHECK_STR_EQ(tok(&v, 2), "</s>");
	CHECK_STR_EQ(tok(&v, 3), "<unk>");
	CHECK_STR_EQ(tok(&v, 4), "a");
	CHECK_STR_EQ(tok(&v, 5), "b");
	CHECK_STR_EQ(tok(&v, 6), "c");
	cq_vocabulary_free(&v);

	CHECK_INT_EQ(cq_vocabulary_build(&v, &m, 32000, 2, NULL), CQ_OK);
	CHECK_INT_EQ(cq_vocabulary_size(&v), 6);
	cq_vocabulary_free(&v);
	CHECK_INT_EQ(cq_vocabulary_build(&v, &m, 5, 1, NULL), CQ_OK);
	CHECK_INT_EQ(cq_vocabulary_size(&v), 5);
	CHECK_STR_EQ(tok(&v, 4), "a");
	cq_vocabulary_free(&v);
	CHECK_INT_EQ(cq_vocabulary_build(&v, &m, 4, 1, NULL), CQ_ERANGE);
	cq_strmap_free(&m);
}

TEST(vocab_ties_by_bytes_prefix_first)
{
	cq_strmap	m = token_counts("ab a \xc3\xb1 z ab a \xc3\xb1 z");
	cq_vocabulary	v;

	CHECK_INT_EQ(cq_vocabulary_build(&v, &m, 100, 1, NULL), CQ_OK);
	CHECK_STR_EQ(tok(&v, 4), "a");
	CHECK_STR_EQ(tok(&v, 5), "ab");
	CHECK_STR_EQ(tok(&v, 6), "z");
	CHECK_STR_EQ(tok(&v, 7), "\xc3\xb1");
	cq_vocabulary_free(&v);
	cq_strmap_free(&m);
}

TEST(vocab_encode_unknown_and_decode_bpe)
{
	cq_strmap	m = token_counts("lo@@ w lo@@ w er new");
	cq_vocabulary	v;
	cq_tokens	t;
	int32_t		ids[8];

	CHECK_INT_EQ(cq_vocabulary_build(&v, &m, 100, 1, NULL), CQ_OK);
	/* lo@@ 4, w 5, er 6, new 7 */
	CHECK_INT_EQ(cq_vocabulary_id(&v, "lo@@", 4), 4);
	cq_tokens_init(&t);
	cq_whitespace_tokenize("new lo@@ w zz lo@@ er", 21, &t);
	cq_vocabulary_encode(&v, &t, ids);
	CHECK_INT_EQ(t.n, 6);
	CHECK_INT_EQ(ids[0], 7);
	CHECK_INT_EQ(ids[1], 4);
	CHECK_INT_EQ(ids[2], 5);
	CHECK_INT_EQ(ids[3], CQ_VOCAB_UNK);
	CHECK_INT_EQ(ids[4], 4);
	CHECK_INT_EQ(ids[5], 6);

	char	   *s;
	size_t		n;
	int32_t		seq[] = {0, 7, 4, 5, 3, 4, 6, 2, 1};

	CHECK_INT_EQ(cq_vocabulary_decode(&v, seq, 9, &s, &n, NULL), CQ_OK);
	CHECK_STR_EQ(s, "new low <unk> loer");
	CHECK_INT_EQ(n, strlen("new low <unk> loer"));
	cq_free(s);
	/* a trailing continuation marker is dropped too */
	int32_t		tail[] = {7, 4};

	CHECK_INT_EQ(cq_vocabulary_decode(&v, tail, 2, &s, NULL, NULL), CQ_OK);
	CHECK_STR_EQ(s, "new lo");
	cq_free(s);

	cq_error err = {0};
	int32_t		bad[] = {4, 8};

	CHECK_INT_EQ(cq_vocabulary_decode(&v, bad, 2, &s, NULL, &err), CQ_ERANGE);
	CHECK(strstr(err.msg, "position 2") != NULL);
	int32_t		neg[] = {-1};

	CHECK_INT_EQ(cq_vocabulary_decode(&v, neg, 1, &s, NULL, &err), CQ_ERANGE);
	cq_tokens_free(&t);
	cq_vocabulary_free(&v);
	cq_strmap_free(&m);
}

TEST(vocab_load_in_id_order_rejects_duplicates)
{
	cq_vocabulary	v;
	cq_error err = {0};

	CHECK_INT_EQ(cq_vocabulary_init(&v), CQ_OK);
	for (int i = 0; i < CQ_VOCAB_N_SPECIAL; i++)
		CHECK_INT_EQ(cq_vocabulary_add(&v, cq_vocabulary_specials[i], strlen(cq_vocabulary_specials[i]), &err), CQ_OK);
	CHECK_INT_EQ(cq_vocabulary_add(&v, "x", 1, &err), CQ_OK);
	CHECK_INT_EQ(cq_vocabulary_add(&v, "x", 1, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_vocabulary_id(&v, "x", 1), 4);
	CHECK_INT_EQ(cq_vocabulary_id(&v, "y", 1), CQ_VOCAB_UNK);
	cq_vocabulary_free(&v);
}

TEST(vocab_from_bpe_tokens)
{
	cq_bpe		b;
	cq_bpe_cache c;
	cq_tokens	t;
	cq_strmap	m;
	cq_vocabulary	v;
	const char *codes = "#version: 0.2\nl o\nlo w</w>\n";

	CHECK_INT_EQ(cq_bpe_parse_codes(&b, codes, strlen(codes), NULL), CQ_OK);
	cq_bpe_cache_init(&c, 100);
	cq_tokens_init(&t);
	cq_strmap_init(&m, 16);
	CHECK_INT_EQ(cq_bpe_tokenize(&b, &c, "low lower low", 13, &t), CQ_OK);
	CHECK_INT_EQ(t.n, 6);
	CHECK_STR_EQ(cq_tokens_get(&t, 1, NULL), "lo@@");
	cq_count_tokens(&m, &t);
	CHECK_INT_EQ(cq_vocabulary_build(&v, &m, 100, 1, NULL), CQ_OK);
	/* low x2, then e@@ lo@@ r w@@ by bytes */
	CHECK_STR_EQ(tok(&v, 4), "low");
	CHECK_STR_EQ(tok(&v, 5), "e@@");
	CHECK_STR_EQ(tok(&v, 6), "lo@@");
	CHECK_STR_EQ(tok(&v, 7), "r");
	CHECK_STR_EQ(tok(&v, 8), "w@@");
	cq_vocabulary_free(&v);
	cq_strmap_free(&m);
	cq_tokens_free(&t);
	cq_bpe_cache_free(&c);
	cq_bpe_free(&b);
}
