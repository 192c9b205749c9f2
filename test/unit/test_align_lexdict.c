/* UncSamp's dictionary, word entropy and sentence uncertainty by hand. */
#include "unit.h"

#include "align/lexdict.h"

#include <stdlib.h>

/*
 * Source ids: the=0 house=1 dog=2; target ids: la=0 el=1 casa=2.
 * pairs and links: "the house"/"la casa" 0-0 1-1; "the"/"el" 0-0;
 * "the the"/"la la" 0-0 1-1.
 * count(the, la) = 3, count(the, el) = 1 -> p = 3/4, 1/4,
 *   H(the) = -(3/4 ln 3/4 + 1/4 ln 1/4) = 0.5623351446188083 nats;
 * count(house, casa) = 1 -> H = 0; dog has no link (scores 1e-6).
 * U("the house dog") = (0.56233514 + 0 + 1e-6) / 3.
 */
TEST(lexdict_hand_worked_entropy)
{
	cq_error err = {0};
	cq_lexdict_builder *b;
	cq_lexdict	d;
	const int32_t s1[] = {0, 1}, t1[] = {0, 2}, s2[] = {0}, t2[] = {1},
				s3[] = {0, 0}, t3[] = {0, 0}, sent[] = {0, 1, 2};
	const cq_link l2[] = {{0, 0}, {1, 1}}, l1[] = {{0, 0}};
	const cq_link bad[] = {{0, 5}};

	CHECK_INT_EQ(cq_lexdict_builder_create(-1, 3, &b, &err), CQ_EINVAL);
	CHECK(b == NULL);
	CHECK_INT_EQ(cq_lexdict_builder_create(3, 3, &b, &err), CQ_OK);

	CHECK_INT_EQ(cq_lexdict_builder_add(b, s1, 2, t1, 2, l2, 2, &err), 0);
	CHECK_INT_EQ(cq_lexdict_builder_add(b, s2, 1, t2, 1, l1, 1, &err), 0);
	CHECK_INT_EQ(cq_lexdict_builder_add(b, s3, 2, t3, 2, l2, 2, &err), 0);
	CHECK_INT_EQ(cq_lexdict_builder_add(b, s3, 2, t3, 2, bad, 1, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_lexdict_builder_finish(b, &d, &err), 0);
	cq_lexdict_builder_free(b);
	CHECK_INT_EQ(d.nnz, 3);
	CHECK_INT_EQ(d.row_off[1] - d.row_off[0], 2);
	CHECK_INT_EQ(d.col[0], 0);	/* la */
	CHECK_INT_EQ(d.count[0], 3);
	CHECK_NEAR(d.prob[0], 0.75, 1e-15);
	CHECK_NEAR(d.prob[1], 0.25, 1e-15);
	CHECK_INT_EQ(d.row_links[0], 4);
	CHECK_NEAR(d.entropy[0], 0.5623351446188083, 1e-15);
	CHECK_NEAR(d.entropy[1], 0.0, 0);
	CHECK_INT_EQ(d.row_links[2], 0);
	CHECK_NEAR(cq_lexdict_uncertainty(&d, sent, 3), (0.5623351446188083 + 1e-6) / 3, 1e-15);
	CHECK_NEAR(cq_lexdict_uncertainty(&d, sent, 0), 0.0, 0);
	cq_lexdict_free(&d);
}

/* Many links force compactions; counts must match a direct tally. */
TEST(lexdict_counts_survive_compaction)
{
	enum {NS = 37, NT = 23, N = 300000};
	static int64_t want[NS][NT];
	cq_error err = {0};
	cq_lexdict_builder *b;
	cq_lexdict	d;
	uint32_t	x = 12345;
	int			bad = 0;

	CHECK_INT_EQ(cq_lexdict_builder_create(NS, NT, &b, &err), CQ_OK);
	memset(want, 0, sizeof(want));
	for (int k = 0; k < N; k++)
	{
		int32_t		s,
					t;
		cq_link		l = {0, 0};

		x = x * 1103515245u + 12345u;
		s = (x >> 8) % NS;
		t = (x >> 20) % NT;
		want[s][t]++;
		cq_lexdict_builder_add(b, &s, 1, &t, 1, &l, 1, &err);
	}
	CHECK_INT_EQ(cq_lexdict_builder_finish(b, &d, &err), 0);
	cq_lexdict_builder_free(b);
	for (int s = 0; s < NS; s++)
	{
		int64_t		q = d.row_off[s];

		for (int t = 0; t < NT; t++)
			if (want[s][t])
			{
				if (q >= d.row_off[s + 1] || d.col[q] != t || d.count[q] != want[s][t])
					bad++;
				q++;
			}
		if (q != d.row_off[s + 1])
			bad++;
	}
	CHECK_INT_EQ(bad, 0);
	cq_lexdict_free(&d);
}

#include "align/vocab.h"

/* Interning: first seen, first numbered; growth keeps every id. */
TEST(vocab_interns_whitespace_tokens)
{
	cq_vocab   *v;
	cq_error	err = {0};
	int32_t		ids[8],
				id;
	int			n;
	char		w[16];
	int			bad = 0;

	CHECK_INT_EQ(cq_vocab_create(&v, NULL), CQ_OK);
	CHECK_INT_EQ(cq_vocab_intern_line(v, "  la casa\tla\n", 13, ids, 8, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 3);
	CHECK(ids[0] == 0 && ids[1] == 1 && ids[2] == 0);
	CHECK_INT_EQ(cq_vocab_intern_line(v, "a b c", 5, ids, 2, &n, &err), CQ_ELIMIT);
	CHECK(strstr(err.msg, "more than 2 tokens") != NULL);
	CHECK_STR_EQ(cq_vocab_word(v, 1), "casa");
	CHECK(cq_vocab_word(v, 99) == NULL);
	CHECK_INT_EQ(cq_vocab_lookup(v, "cas", 3), -1);
	for (int i = 0; i < 5000; i++)
	{
		int			l = snprintf(w, sizeof(w), "w%d", i);

		bad += cq_vocab_intern(v, w, l, &id, NULL) != CQ_OK || id != i + 4;
	}
	for (int i = 0; i < 5000; i++)
	{
		int			l = snprintf(w, sizeof(w), "w%d", i);

		bad += cq_vocab_lookup(v, w, l) != i + 4 ||
			strcmp(cq_vocab_word(v, cq_vocab_lookup(v, w, l)), w) != 0;
	}
	CHECK_INT_EQ(bad, 0);
	/* la, casa, and a, b interned before the short buffer ran out at c */
	CHECK_INT_EQ(cq_vocab_size(v), 4 + 5000);
	cq_vocab_free(v);
}
