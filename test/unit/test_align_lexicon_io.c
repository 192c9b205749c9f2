/* Lexicon serialisation: round trip, pruning, and corrupt blobs under ASan. */
#include "unit.h"

#include "align/lexicon_io.h"

#include <stdlib.h>

/* A small bitext with a hidden word-for-word dictionary, both directions trained. */
static void
train_lexicon(cq_lexicon *lx)
{
	enum {NP = 40};
	static int32_t src[NP * 6],
				tgt[NP * 6];
	static int64_t so[NP + 1],
				to[NP + 1];
	uint32_t	x = 7;
	cq_bitext	b;
	cq_fa_options o;
	cq_fa_trainer *f,
			   *r;
	cq_error err = {0};

	for (int k = 0; k < NP; k++)
	{
		int			n = 1 + k % 5;

		for (int i = 0; i < n; i++)
		{
			x = x * 1103515245u + 12345u;
			src[so[k] + i] = (x >> 16) % 9;
			tgt[to[k] + i] = (src[so[k] + i] * 4 + 1) % 11;	/* a bijection into 0..10 */
		}
		so[k + 1] = so[k] + n;
		to[k + 1] = to[k] + n;
	}
	b = (cq_bitext) {NP, src, so, tgt, to, 9, 11};
	cq_fa_options_default(&o);
	CHECK_INT_EQ(cq_fa_trainer_create(&b, &o, &f, &err), CQ_OK);
	o.reverse = true;
	o.variational_bayes = true;
	CHECK_INT_EQ(cq_fa_trainer_create(&b, &o, &r, &err), CQ_OK);
	cq_fa_train(f, NULL, &err);
	cq_fa_train(r, NULL, &err);
	CHECK_INT_EQ(cq_lexicon_from_trainers(f, r, lx, &err), CQ_OK);
	cq_fa_trainer_free(f);
	cq_fa_trainer_free(r);
}

static bool
same_table(const cq_ttable *a, const cq_ttable *b)
{
	if (a->n_e != b->n_e || a->n_f != b->n_f || a->nnz != b->nnz)
		return false;
	return memcmp(a->row_off, b->row_off, ((size_t) a->n_e + 2) * 8) == 0 &&
		memcmp(a->col, b->col, (size_t) a->nnz * 4) == 0 &&
		memcmp(a->prob, b->prob, (size_t) a->nnz * 8) == 0;
}

TEST(lexicon_io_round_trip_and_prune)
{
	cq_lexicon	lx,
				back;
	cq_error err = {0};
	size_t		len;
	uint8_t    *buf;
	const int32_t s[] = {3, 1, 4}, t[] = {(3 * 4 + 1) % 11, (1 * 4 + 1) % 11, (4 * 4 + 1) % 11};
	cq_pair_score a,
				b;
	cq_link		links[6];

	train_lexicon(&lx);
	len = cq_lexicon_serialized_size(&lx, 0.0);
	buf = malloc(len);
	CHECK_INT_EQ(cq_lexicon_serialize(&lx, 0.0, buf, len - 1), 0);
	CHECK_INT_EQ(cq_lexicon_serialize(&lx, 0.0, buf, len), len);
	CHECK_INT_EQ(cq_lexicon_deserialize(buf, len, &back, &err), CQ_OK);
	CHECK(same_table(&lx.fwd.tt, &back.fwd.tt));
	CHECK(same_table(&lx.rev.tt, &back.rev.tt));
	CHECK_NEAR(back.fwd.par.tension, lx.fwd.par.tension, 0);
	CHECK_NEAR(back.rev.par.p0, lx.rev.par.p0, 0);
	CHECK(back.fwd.probs_ready && back.rev.par.favor_diagonal);
	/* the loaded lexicon scores exactly as the trained one, and finds the dictionary */
	CHECK_INT_EQ(cq_lexicon_score_pair(&lx, s, 3, t, 3, CQ_SYM_GROW_DIAG_FINAL_AND, links, &a, &err), 0);
	CHECK_INT_EQ(cq_lexicon_score_pair(&back, s, 3, t, 3, CQ_SYM_GROW_DIAG_FINAL_AND, NULL, &b, &err), 0);
	CHECK_NEAR(a.align_score, b.align_score, 0);
	CHECK_NEAR(a.align_score, 0.5 * (a.fwd_score + a.rev_score), 1e-15);
	CHECK_NEAR(a.coverage, 1.0, 0);
	CHECK_INT_EQ(a.n_links, 3);
	CHECK(links[0].s == 0 && links[0].t == 0 && links[2].s == 2 && links[2].t == 2);
	cq_lexicon_free(&back);
	free(buf);

	/* pruning keeps exactly the entries >= min_prob */
	{
		int64_t		want = 0;
		cq_ttable_iter it;
		int32_t		e,
					f;
		double		p;

		cq_ttable_iter_init(&it, &lx.fwd.tt, 0.01);
		while (cq_ttable_iter_next(&it, &e, &f, &p))
		{
			CHECK(p >= 0.01);
			want++;
		}
		len = cq_lexicon_serialized_size(&lx, 0.01);
		buf = malloc(len);
		cq_lexicon_serialize(&lx, 0.01, buf, len);
		CHECK_INT_EQ(cq_lexicon_deserialize(buf, len, &back, &err), CQ_OK);
		CHECK_INT_EQ(back.fwd.tt.nnz, want);
		CHECK(want < lx.fwd.tt.nnz);
		cq_lexicon_free(&back);
		free(buf);
	}
	cq_lexicon_free(&lx);
}

static void
reseal(uint8_t *buf, size_t len)
{
	uint64_t	h = cq_lexicon_checksum(buf, len - 8);

	for (int i = 0; i < 8; i++)
		buf[len - 8 + i] = (uint8_t) (h >> (8 * i));
}

static int
load_code(const uint8_t *buf, size_t len, const char *expect)
{
	cq_lexicon	back;
	cq_error err = {0};
	int			rc = cq_lexicon_deserialize(buf, len, &back, &err);

	if (rc == CQ_OK)
		cq_lexicon_free(&back);
	else if (expect && !strstr(err.msg, expect))
		return -100;
	return rc;
}

TEST(lexicon_io_rejects_corruption)
{
	cq_lexicon	lx;
	size_t		len;
	uint8_t    *buf,
			   *m;
	size_t		fwd_nnz_at = 24 + 16 + 4 + 8;	/* header, two f64, four u8, two i32 */

	train_lexicon(&lx);
	len = cq_lexicon_serialized_size(&lx, 0.0);
	buf = malloc(len);
	m = malloc(len);
	cq_lexicon_serialize(&lx, 0.0, buf, len);

	/* every truncation and every single-byte flip: checksum or length fails */
	for (size_t cut = 0; cut < len; cut++)
		CHECK_INT_EQ(load_code(buf, cut, NULL), CQ_ECORRUPT);
	for (size_t i = 0; i < len; i++)
	{
		memcpy(m, buf, len);
		m[i] ^= 0x5a;
		CHECK_INT_EQ(load_code(m, len, "checksum"), CQ_ECORRUPT);
	}
	/* resealed structural damage must still be caught */
	memcpy(m, buf, len);
	m[8] = 2;					/* version */
	reseal(m, len);
	CHECK_INT_EQ(load_code(m, len, "version"), CQ_ECORRUPT);
	memcpy(m, buf, len);
	memset(m + fwd_nnz_at, 0xff, 7);	/* nnz near 2^56 */
	reseal(m, len);
	CHECK_INT_EQ(load_code(m, len, "exceed"), CQ_ECORRUPT);
	memcpy(m, buf, len);
	m[24 + 8 + 7] = 0x7f;		/* p0 becomes a huge double */
	reseal(m, len);
	CHECK_INT_EQ(load_code(m, len, "range"), CQ_ECORRUPT);
	memcpy(m, buf, len);
	memset(m + len - 16, 0xff, 8);	/* last probability: NaN */
	reseal(m, len);
	CHECK_INT_EQ(load_code(m, len, "probability"), CQ_ECORRUPT);
	{
		/* first two columns of the forward table swapped: unsorted */
		size_t		cols = fwd_nnz_at + 8 + ((size_t) lx.fwd.tt.n_e + 2) * 8;

		memcpy(m, buf, len);
		memcpy(m + cols, buf + cols + 4, 4);
		memcpy(m + cols + 4, buf + cols, 4);
		reseal(m, len);
		CHECK_INT_EQ(load_code(m, len, "columns"), CQ_ECORRUPT);
	}

	/* random resealed mutations: each load fails cleanly or yields a usable lexicon */
	{
		uint32_t	x = 99;
		int			ok = 0,
					bad = 0;

		for (int trial = 0; trial < 4000; trial++)
		{
			cq_lexicon	back;
			cq_error err = {0};
			size_t		l = len;
			int			rc;

			memcpy(m, buf, len);
			for (int k = 0; k < 1 + trial % 4; k++)
			{
				x = x * 1103515245u + 12345u;
				m[(x >> 8) % (len - 8)] = (uint8_t) (x >> 24);
			}
			if (trial % 7 == 0)
				l = 32 + (x >> 5) % (len - 32);
			reseal(m, l);
			rc = cq_lexicon_deserialize(m, l, &back, &err);
			if (rc == CQ_OK)
			{
				const int32_t s[] = {0, 8, 100}, t[] = {10, -1};
				cq_pair_score sc;

				ok++;
				cq_lexicon_score_pair(&back, s, 3, t, 2, CQ_SYM_GROW_DIAG_FINAL_AND, NULL, &sc, &err);
				cq_lexicon_free(&back);
			}
			else
				bad += rc == CQ_ECORRUPT;
		}
		CHECK_INT_EQ(ok + bad, 4000);
		CHECK(bad > 0);
	}
	free(buf);
	free(m);
	cq_lexicon_free(&lx);
}
