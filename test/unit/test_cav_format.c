/* CAV layout: canonical bytes, merge algebra, validator and fuzzing. */
#include "test_cav.h"
#include "unit.h"

#include "cav/format.h"
#include "common/le.h"
#include "common/mem.h"

#include <stdlib.h>

static int
same_bytes(const cav_state *a, const cav_state *b)
{
	size_t		la,
				lb;
	uint8_t    *x = tcav_bytes(a, &la),
			   *y = tcav_bytes(b, &lb);
	int			same = la == lb && memcmp(x, y, la) == 0;

	cq_free(x);
	cq_free(y);
	return same;
}

static cav_state *
merged(cav_state *into, const cav_state *from)
{
	cq_error	err;

	CHECK_INT_EQ(cav_state_merge(into, from, &err), CQ_OK);
	return into;
}

/* merge(A, B) == accumulate(A u B), in any order and grouping. */
static void
check_merge_algebra(uint32_t l_max, const char *const *targets, size_t n_targets)
{
	tcav_pair  *p = tcav_corpus(300, 11, 80);
	cav_state  *all = tcav_build(p, 0, 300, l_max, targets, n_targets);
	cav_state  *a = tcav_build(p, 0, 90, l_max, targets, n_targets),
			   *b = tcav_build(p, 90, 200, l_max, targets, n_targets),
			   *c = tcav_build(p, 200, 300, l_max, targets, n_targets);
	cav_state  *abc = tcav_build(p, 0, 0, l_max, targets, n_targets);
	cav_state  *cba = tcav_build(p, 0, 0, l_max, targets, n_targets);
	cav_state  *bc = tcav_build(p, 90, 200, l_max, targets, n_targets);
	cav_state  *a2 = tcav_build(p, 0, 90, l_max, targets, n_targets);
	/* reversed pair order inside one state */
	cav_state  *rev = tcav_build(p, 0, 0, l_max, targets, n_targets);

	for (int i = 299; i >= 0; i--)
		CHECK_INT_EQ(tcav_add(rev, p, i, i + 1), CQ_OK);
	merged(merged(merged(abc, a), b), c);
	merged(merged(merged(cba, c), b), a);
	merged(a2, merged(bc, c));	/* A + (B + C) */
	CHECK(same_bytes(all, abc));
	CHECK(same_bytes(all, cba));
	CHECK(same_bytes(all, a2));
	CHECK(same_bytes(all, rev));
	CHECK(!same_bytes(all, a));
	cav_state_free(all);
	cav_state_free(a);
	cav_state_free(b);
	cav_state_free(c);
	cav_state_free(abc);
	cav_state_free(cba);
	cav_state_free(bc);
	cav_state_free(a2);
	cav_state_free(rev);
	free(p);
}

TEST(cav_merge_equals_one_pass)
{
	const char *targets[] = {"t0", "t1", "t5", "\xe2\x82\xac" "0", "never"};

	check_merge_algebra(6, NULL, 0);
	check_merge_algebra(40, NULL, 0);
	check_merge_algebra(6, targets, 5);
}

/* serialize -> deserialize -> serialize is the identity; merging a rebuilt state too. */
TEST(cav_roundtrip_identical)
{
	tcav_pair  *p = tcav_corpus(200, 5, 60);
	const char *targets[] = {"t1", "t2"};

	for (int restricted = 0; restricted < 2; restricted++)
	{
		cav_state  *st = tcav_build(p, 0, 200, 9, targets, restricted ? 2 : 0);
		cav_state  *half = tcav_build(p, 0, 120, 9, targets, restricted ? 2 : 0);
		cav_state  *rest = tcav_build(p, 120, 200, 9, targets, restricted ? 2 : 0);
		cav_state  *back,
				   *hb;
		size_t		len,
					len2,
					hl;
		uint8_t    *b = tcav_bytes(st, &len),
				   *hbytes = tcav_bytes(half, &hl),
				   *b2;
		cq_error	err;

		CHECK_INT_EQ(cav_deserialize(b, len, 0, &back, &err), CQ_OK);
		b2 = tcav_bytes(back, &len2);
		CHECK(len == len2 && memcmp(b, b2, len) == 0);
		/* a state rebuilt from bytes keeps accumulating like the original */
		CHECK_INT_EQ(cav_deserialize(hbytes, hl, 0, &hb, &err), CQ_OK);
		CHECK_INT_EQ(tcav_add(hb, p, 120, 200), CQ_OK);
		CHECK(same_bytes(hb, st));
		merged(half, rest);
		CHECK(same_bytes(half, st));
		cq_free(b);
		cq_free(b2);
		cq_free(hbytes);
		cav_state_free(st);
		cav_state_free(back);
		cav_state_free(half);
		cav_state_free(rest);
		cav_state_free(hb);
	}
	free(p);
}

TEST(cav_serialize_room_and_empty)
{
	cav_options opt = {3};
	cav_state  *st;
	uint8_t    *b;
	size_t		len;
	cq_error	err;
	cav_view	v;

	CHECK_INT_EQ(cav_state_new(&opt, 0, &st, &err), CQ_OK);
	CHECK_INT_EQ(cav_serialize(st, 4, &b, &len, &err), CQ_OK);
	CHECK_INT_EQ(len, CAV_HEADER_SIZE + 12);
	CHECK_INT_EQ(cav_view_open(b + 4, len, &v, &err), CQ_OK);	/* unaligned */
	CHECK_INT_EQ(v.n_mat, 0);
	cq_free(b);
	cav_state_free(st);
}

/* Accepted buffers are canonical: rebuilding and re-serialising gives them back. */
static int
accepted_is_canonical(const uint8_t *b, size_t len)
{
	cav_state  *st;
	cq_error	err;
	cav_view	v;
	size_t		l2;
	uint8_t    *b2;
	int			ok;

	if (cav_view_open(b, len, &v, &err) != CQ_OK)
		return -1;
	/* exercise the readers on it */
	if (v.n_mat > 1)
	{
		uint32_t	idx[3];
		double		sim[3],
					pooled[6];
		uint32_t	n;

		cav_view_topk(&v, 0, 3, idx, sim, &n, &err);
		cav_view_pool(&v, v.n_mat - 1, 2, 3, pooled, &err);
	}
	if (cav_deserialize(b, len, 0, &st, &err) != CQ_OK)
		return 0;
	b2 = tcav_bytes(st, &l2);
	ok = l2 == len && memcmp(b, b2, len) == 0;
	cq_free(b2);
	cav_state_free(st);
	return ok;
}

static uint8_t *
small_valid(size_t *len, const char *const *targets, size_t n_targets)
{
	tcav_pair  *p = tcav_corpus(12, 3, 12);
	cav_state  *st = tcav_build(p, 0, 12, 7, targets, n_targets);
	uint8_t    *b = tcav_bytes(st, len);

	cav_state_free(st);
	free(p);
	return b;
}

static void
expect_format_error(const uint8_t *b, size_t len, const char *what)
{
	cq_error	err;

	if (cav_validate(b, len, &err) != CQ_EFORMAT)
		unit_fail(__FILE__, __LINE__, "corruption not rejected: %s", what);
}

/* One targeted corruption per kind of check. */
TEST(cav_validator_rejects_each_corruption)
{
	size_t		len;
	uint8_t    *good = small_valid(&len, NULL, 0);
	uint8_t    *b = malloc(len + 1);
	cav_view	v;
	size_t		rec,
				ent;

	CHECK_INT_EQ(cav_view_open(good, len, &v, NULL), CQ_OK);
	CHECK(v.n_mat >= 3);
	rec = v.table;
	ent = v.entries;
#define MUTATE(what, stmt) \
	do { memcpy(b, good, len); stmt; expect_format_error(b, len, what); } while (0)
	MUTATE("magic", b[0] = 'X');
	MUTATE("version", cq_le_put_u16(b + CAV_H_VERSION, 2));
	MUTATE("reserved", b[CAV_H_RESERVED32] = 1);
	MUTATE("l_max 0", cq_le_put_u32(b + CAV_H_LMAX, 0));
	MUTATE("l_max smaller than a distance", cq_le_put_u32(b + CAV_H_LMAX, 2));
	MUTATE("n_src + 1", cq_le_put_u32(b + CAV_H_NSRC, v.n_src + 1));
	MUTATE("n_tgt huge", cq_le_put_u32(b + CAV_H_NTGT, 0x7fffffff));
	MUTATE("n_mat - 1", cq_le_put_u32(b + CAV_H_NMAT, v.n_mat - 1));
	MUTATE("restricted count", cq_le_put_u32(b + CAV_H_NRES, 1));
	MUTATE("source offset 0", cq_le_put_u32(b + v.src_dict, 1));
	MUTATE("source offset order", cq_le_put_u32(b + v.src_dict + 4, 0));
	MUTATE("source blob length", cq_le_put_u32(b + v.src_dict + 4 * v.n_src, 0xffffff));
	MUTATE("invalid UTF-8", b[v.src_dict + 4 * (v.n_src + 1)] = 0xff);
	MUTATE("NUL in token", b[v.tgt_dict + 4 * (v.n_tgt + 1)] = 0);
	MUTATE("target order", b[v.tgt_dict + 4 * (v.n_tgt + 1)] = 0x7e);
	MUTATE("table target id", cq_le_put_u32(b + rec + CAV_REC_SIZE + CAV_REC_TGT, 0));
	MUTATE("nnz + 1", cq_le_put_u32(b + rec + CAV_REC_NNZ, cq_le_get_u32(good + rec + CAV_REC_NNZ) + 1));
	MUTATE("nnz 0", cq_le_put_u32(b + rec + CAV_REC_NNZ, 0));
	MUTATE("occurrences + 1", cq_le_put_u64(b + rec + CAV_REC_OCC, cq_le_get_u64(good + rec + CAV_REC_OCC) + 1));
	MUTATE("occurrences 0", cq_le_put_u64(b + rec + CAV_REC_OCC, 0));
	MUTATE("start 1", cq_le_put_u64(b + rec + CAV_REC_START, 1));
	MUTATE("start past end", cq_le_put_u64(b + rec + CAV_REC_SIZE + CAV_REC_START, len));
	MUTATE("entry count 0", b[ent + 2] = 0);
	MUTATE("overlong varint", (b[ent] |= 0x80, b[ent + 1] = 0));
	MUTATE("row past dictionary", b[ent] = 0x7f);
	memcpy(b, good, len);
	b[len] = 0;
	expect_format_error(b, len + 1, "trailing byte");
	/* every truncation */
	for (size_t n = 0; n < len; n++)
		expect_format_error(good, n, "truncation");
	CHECK_INT_EQ(cav_validate(NULL, 0, NULL), CQ_EFORMAT);
#undef MUTATE
	free(b);
	cq_free(good);
}

/* Restricted buffers: a matrix outside the set is rejected. */
TEST(cav_validator_restricted)
{
	const char *targets[] = {"t0", "t1"};
	size_t		len;
	uint8_t    *good = small_valid(&len, targets, 2);
	cav_view	v;

	CHECK_INT_EQ(cav_view_open(good, len, &v, NULL), CQ_OK);
	CHECK(v.n_mat >= 1 && v.n_mat < v.n_tgt);
	/* rename restricted "t0" to "t00"-like by editing its last byte */
	good[v.res_dict + 4 * (v.n_restrict + 1) + 1] = '/';
	expect_format_error(good, len, "matrix outside restricted set");
	cq_free(good);
}

/* Random bytes, bit flips and splices of valid buffers: never a crash, and anything accepted is canonical. */
TEST(cav_validator_fuzz)
{
	size_t		len;
	uint8_t    *good = small_valid(&len, NULL, 0);
	uint8_t    *b = malloc(len + 64);
	uint64_t	seed = 20260101;
	int			rejected = 0,
				accepted = 0,
				cases = 0;

	for (int i = 0; i < 6000; i++)
	{
		size_t		n = len;
		int			r;

		memcpy(b, good, len);
		switch (i % 3)
		{
			case 0:				/* 1-4 bit flips */
				for (int f = 0, nf = 1 + tcav_rand(&seed) % 4; f < nf; f++)
				{
					size_t		at = tcav_rand(&seed) % len;

					b[at] ^= 1u << (tcav_rand(&seed) % 8);
				}
				break;
			case 1:				/* random bytes after a valid header */
				n = CAV_HEADER_SIZE + tcav_rand(&seed) % (len + 24 - CAV_HEADER_SIZE);
				for (size_t k = CAV_HEADER_SIZE; k < n; k++)
					b[k] = (uint8_t) tcav_rand(&seed);
				break;
			default:			/* truncation plus a random byte change */
				n = tcav_rand(&seed) % (len + 1);
				if (n)
					b[tcav_rand(&seed) % n] = (uint8_t) tcav_rand(&seed);
				break;
		}
		r = accepted_is_canonical(b, n);
		cases++;
		if (r < 0)
			rejected++;
		else
		{
			accepted++;
			CHECK_INT_EQ(r, 1);
		}
	}
	/* pure random buffers, any length */
	for (int i = 0; i < 2000; i++)
	{
		size_t		n = tcav_rand(&seed) % (len + 64);

		for (size_t k = 0; k < n; k++)
			b[k] = (uint8_t) tcav_rand(&seed);
		if (i % 2 && n >= 4)
			memcpy(b, CAV_MAGIC, 4);
		CHECK_INT_EQ(accepted_is_canonical(b, n), -1);
		cases++;
	}
	/* only flips of the unchecked n_pairs field (and flips that cancel) survive */
	CHECK(accepted + rejected + 2000 == cases);
	CHECK(rejected > 6000 * 95 / 100);
	CHECK(accepted > 0);
	if (getenv("CAV_FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz: %d cases, %d mutated accepted\n", cases, accepted);
	free(b);
	cq_free(good);
}

/* The trusted open describes a valid buffer exactly like the validating one. */
TEST(cav_view_open_trusted_matches)
{
	size_t		len;
	uint8_t    *good = small_valid(&len, NULL, 0);
	cav_view	a,
				b;

	CHECK_INT_EQ(cav_view_open(good, len, &a, NULL), CQ_OK);
	CHECK_INT_EQ(cav_view_open_trusted(good, len, &b, NULL), CQ_OK);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	for (size_t n = 0; n < CAV_HEADER_SIZE + 8; n++)
		CHECK_INT_EQ(cav_view_open_trusted(good, n, &b, NULL), CQ_EFORMAT);
	cq_free(good);
}
