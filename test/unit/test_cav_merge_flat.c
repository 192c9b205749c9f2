/*
 * cav_merge_serialized (linear merge of two serialized CAVs) against the
 * state merge: cav_serialize(merge(state(a), state(b))) must give the same
 * bytes, for random corpora, restricted targets, empty sides and disjoint
 * vocabularies; different options are refused.
 */
#include "unit.h"

#include "test_cav.h"

#include "cav/merge_flat.h"
#include "common/mem.h"

/* Bytes of the flat merge of two states' serializations (room 4). */
static uint8_t *
flat_merge(const cav_state *a, const cav_state *b, size_t *len, cq_code *rc)
{
	size_t		la,
				lb;
	uint8_t    *ba = tcav_bytes(a, &la),
			   *bb = tcav_bytes(b, &lb),
			   *out = NULL;
	cav_view	va,
				vb;
	cq_error	err = {0};

	CHECK_INT_EQ(cav_view_open(ba, la, &va, &err), CQ_OK);
	CHECK_INT_EQ(cav_view_open(bb, lb, &vb, &err), CQ_OK);
	*rc = cav_merge_serialized(&va, &vb, 4, &out, len, &err);
	cq_free(ba);
	cq_free(bb);
	return out;
}

/* Compare the flat merge of pairs [0, cut) and [cut, n) with one state of all. */
static void
check_split(const tcav_pair *p, int cut, int n, uint32_t l_max,
			const char *const *targets, size_t n_targets)
{
	cav_state  *a = tcav_build(p, 0, cut, l_max, targets, n_targets);
	cav_state  *b = tcav_build(p, cut, n, l_max, targets, n_targets);
	cav_state  *all = tcav_build(p, 0, n, l_max, targets, n_targets);
	size_t		len,
				ref_len;
	cq_code		rc;
	uint8_t    *got = flat_merge(a, b, &len, &rc);
	uint8_t    *ref = tcav_bytes(all, &ref_len);
	cq_error	err = {0};

	CHECK_INT_EQ(rc, CQ_OK);
	CHECK_INT_EQ(len, ref_len);
	CHECK(got && len == ref_len && memcmp(got + 4, ref, len) == 0);
	if (got)
		CHECK_INT_EQ(cav_validate(got + 4, len, &err), CQ_OK);
	cq_free(got);
	cq_free(ref);
	cav_state_free(a);
	cav_state_free(b);
	cav_state_free(all);
}

TEST(cav_merge_flat_equals_state_merge)
{
	tcav_pair  *p = tcav_corpus(400, 7, 60);
	const char *const targets[] = {"t1", "t3", "t17", "nope"};

	for (int cut = 0; cut <= 400; cut += 57)
	{
		check_split(p, cut, 400, 6, NULL, 0);
		check_split(p, cut, 400, 1, NULL, 0);
		check_split(p, cut, 400, 40, targets, 4);
	}
	/* both sides empty of pairs, and one pair against many */
	check_split(p, 0, 0, 5, NULL, 0);
	check_split(p, 1, 400, 5, NULL, 0);
	cq_free(p);
}

/* Large vocabularies: little overlap between the halves. */
TEST(cav_merge_flat_sparse_overlap)
{
	tcav_pair  *p = tcav_corpus(200, 11, 500);

	check_split(p, 100, 200, 8, NULL, 0);
	check_split(p, 3, 200, 8, NULL, 0);
	cq_free(p);
}

TEST(cav_merge_flat_is_commutative)
{
	tcav_pair  *p = tcav_corpus(150, 3, 40);
	cav_state  *a = tcav_build(p, 0, 70, 7, NULL, 0);
	cav_state  *b = tcav_build(p, 70, 150, 7, NULL, 0);
	size_t		lab,
				lba;
	cq_code		rc1,
				rc2;
	uint8_t    *ab = flat_merge(a, b, &lab, &rc1),
			   *ba = flat_merge(b, a, &lba, &rc2);

	CHECK_INT_EQ(rc1, CQ_OK);
	CHECK_INT_EQ(rc2, CQ_OK);
	CHECK(lab == lba && memcmp(ab + 4, ba + 4, lab) == 0);
	cq_free(ab);
	cq_free(ba);
	cav_state_free(a);
	cav_state_free(b);
	cq_free(p);
}

TEST(cav_merge_flat_refuses_other_options)
{
	tcav_pair  *p = tcav_corpus(50, 5, 20);
	const char *const t1[] = {"t1"};
	const char *const t2[] = {"t2"};
	cav_state  *a = tcav_build(p, 0, 50, 6, NULL, 0);
	cav_state  *b = tcav_build(p, 0, 50, 7, NULL, 0);
	cav_state  *c = tcav_build(p, 0, 50, 6, t1, 1);
	cav_state  *d = tcav_build(p, 0, 50, 6, t2, 1);
	size_t		len;
	cq_code		rc;

	CHECK(flat_merge(a, b, &len, &rc) == NULL);
	CHECK_INT_EQ(rc, CQ_EMISMATCH);
	CHECK(flat_merge(a, c, &len, &rc) == NULL);
	CHECK_INT_EQ(rc, CQ_EMISMATCH);
	CHECK(flat_merge(c, d, &len, &rc) == NULL);
	CHECK_INT_EQ(rc, CQ_EMISMATCH);
	cav_state_free(a);
	cav_state_free(b);
	cav_state_free(c);
	cav_state_free(d);
	cq_free(p);
}
