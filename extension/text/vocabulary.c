/* Vocabulary: build from counts, token <-> id, detokenising decode. */
#include "text/vocabulary.h"

#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "text/bpe.h"

const char *const cq_vocabulary_specials[CQ_VOCAB_N_SPECIAL] = {"<s>", "<pad>", "</s>", "<unk>"};

cq_code
cq_vocabulary_init(cq_vocabulary *v)
{
	return cq_strmap_init(&v->map, 1024);
}

void
cq_vocabulary_free(cq_vocabulary *v)
{
	cq_strmap_free(&v->map);
}

cq_code
cq_vocabulary_add(cq_vocabulary *v, const char *tok, size_t len, cq_error *err)
{
	int64_t		id;
	int			inserted;
	cq_code		rc = cq_strmap_intern(&v->map, tok, len, &id, &inserted);

	if (rc == CQ_ENOMEM)
		return cq_fail(err, rc, "out of memory");
	if (rc != CQ_OK)
		return cq_fail(err, rc, "a token of %zu bytes, or more than 2^32 tokens", len);
	if (!inserted)
		return cq_fail(err, CQ_EINVAL,
							"token \"%.*s\" appears twice in the vocabulary",
							len > 64 ? 64 : (int) len, tok);
	return CQ_OK;
}

static int
is_special(const char *tok, size_t len)
{
	for (int i = 0; i < CQ_VOCAB_N_SPECIAL; i++)
		if (strlen(cq_vocabulary_specials[i]) == len && memcmp(cq_vocabulary_specials[i], tok, len) == 0)
			return 1;
	return 0;
}

/* a candidate token with its count, for sorting */
typedef struct ranked
{
	int64_t		count;
	const char *tok;
	uint32_t	len;
} ranked;

static int
by_count_then_bytes(const void *x, const void *y)
{
	const ranked *a = x,
			   *b = y;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	int			c = memcmp(a->tok, b->tok, a->len < b->len ? a->len : b->len);

	if (c)
		return c;
	return (a->len > b->len) - (a->len < b->len);
}

cq_code
cq_vocabulary_build(cq_vocabulary *v, const cq_strmap *counts, int32_t max_size,
			   int64_t min_count, cq_error *err)
{
	if (max_size < CQ_VOCAB_N_SPECIAL + 1)
		return cq_fail(err, CQ_ERANGE, "max_size must be at least %d",
							CQ_VOCAB_N_SPECIAL + 1);
	if (cq_vocabulary_init(v) != CQ_OK)
		return cq_fail(err, CQ_ENOMEM, "out of memory");

	ranked	   *r = cq_alloc((counts->n ? counts->n : 1) * sizeof(ranked));
	size_t		n = 0;
	cq_code		rc = CQ_OK;

	if (!r)
		rc = cq_fail(err, CQ_ENOMEM, "out of memory");
	for (size_t e = 0; rc == CQ_OK && e < counts->n; e++)
	{
		size_t		len;
		const char *tok = cq_strmap_key(counts, e, &len);

		if (counts->vals[e] >= min_count && !is_special(tok, len))
			r[n++] = (ranked) {counts->vals[e], tok, (uint32_t) len};
	}
	if (rc == CQ_OK)
		qsort(r, n, sizeof(ranked), by_count_then_bytes);
	for (int i = 0; rc == CQ_OK && i < CQ_VOCAB_N_SPECIAL; i++)
		rc = cq_vocabulary_add(v, cq_vocabulary_specials[i], strlen(cq_vocabulary_specials[i]), err);
	for (size_t i = 0; rc == CQ_OK && i < n && cq_vocabulary_size(v) < max_size; i++)
		rc = cq_vocabulary_add(v, r[i].tok, r[i].len, err);
	cq_free(r);
	if (rc != CQ_OK)
		cq_vocabulary_free(v);
	return rc;
}

int32_t
cq_vocabulary_id(const cq_vocabulary *v, const char *tok, size_t len)
{
	int64_t		e = cq_strmap_find(&v->map, tok, len);

	return e < 0 ? CQ_VOCAB_UNK : (int32_t) e;
}

void
cq_vocabulary_encode(const cq_vocabulary *v, const cq_tokens *t, int32_t *ids)
{
	for (size_t i = 0; i < t->n; i++)
		ids[i] = cq_vocabulary_id(v, t->buf + t->off[i], t->len[i]);
}

cq_code
cq_vocabulary_join(const cq_vocabulary *v, const int32_t *ids, size_t n,
				   char **out, size_t *out_len, cq_error *err)
{
	size_t		total = 1;

	for (size_t i = 0; i < n; i++)
	{
		if (ids[i] < 0 || ids[i] >= cq_vocabulary_size(v))
			return cq_fail(err, CQ_ERANGE,
								"id %d at position %zu is outside the vocabulary (size %d)",
								ids[i], i + 1, cq_vocabulary_size(v));
		total += v->map.key_len[ids[i]] + 1;
	}

	char	   *s = cq_alloc(total);
	size_t		p = 0;

	if (!s)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
	{
		size_t		len;
		const char *tok;

		if (ids[i] == CQ_VOCAB_BOS || ids[i] == CQ_VOCAB_PAD || ids[i] == CQ_VOCAB_EOS)
			continue;
		tok = cq_strmap_key(&v->map, ids[i], &len);
		if (p > 0)
			s[p++] = ' ';
		memcpy(s + p, tok, len);
		p += len;
	}
	s[p] = '\0';
	*out = s;
	*out_len = p;
	return CQ_OK;
}

cq_code
cq_vocabulary_decode(const cq_vocabulary *v, const int32_t *ids, size_t n,
					 char **out, size_t *out_len, cq_error *err)
{
	size_t		p;
	cq_code		rc = cq_vocabulary_join(v, ids, n, out, &p, err);

	if (rc != CQ_OK)
		return rc;
	/* the BPE segmentation undone */
	p = cq_bpe_undo_inplace(*out, p);
	(*out)[p] = '\0';
	if (out_len)
		*out_len = p;
	return CQ_OK;
}
