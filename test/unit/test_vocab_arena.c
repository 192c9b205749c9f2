/*
 * Relocatable vocabularies (vocabulary.h: cq_vocabulary_arena_bytes,
 * cq_vocabulary_flatten, cq_vocabulary_attach): a vocabulary flattened into
 * an arena of exactly its size, the arena copied to another address and the
 * first copy freed, then attached, gives every token the same id, encodes
 * and decodes bit for bit as the private vocabulary does; a short or
 * misaligned buffer is refused by flatten; a truncated or damaged arena by
 * attach.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/mem.h"
#include "text/vocabulary.h"
#include "text/words.h"
#include "unit.h"

static void *
aligned_bytes(size_t n)
{
	void	   *p = NULL;

	CHECK_INT_EQ(posix_memalign(&p, 64, n ? n : 1), 0);
	return p;
}

/* The specials, then n tokens: ASCII, UTF-8, BPE pieces, one of 300 bytes. */
static void
make_vocab(cq_vocabulary *v, int n)
{
	char		buf[400];

	CHECK_INT_EQ(cq_vocabulary_init(v), CQ_OK);
	for (int i = 0; i < CQ_VOCAB_N_SPECIAL; i++)
		CHECK_INT_EQ(cq_vocabulary_add(v, cq_vocabulary_specials[i], strlen(cq_vocabulary_specials[i]), NULL), CQ_OK);
	for (int i = 0; i < n; i++)
	{
		int			len;

		switch (i % 4)
		{
			case 0:
				len = snprintf(buf, sizeof(buf), "t%d", i);
				break;
			case 1:
				len = snprintf(buf, sizeof(buf), "\xc3\xb1%d@@", i);
				break;
			case 2:
				len = snprintf(buf, sizeof(buf), "\xe2\x96\x81w%d", i);
				break;
			default:
				len = snprintf(buf, sizeof(buf), "##%d", i);
				break;
		}
		if (i == 7)
		{
			memset(buf, 'x', 300);
			len = 300;
		}
		CHECK_INT_EQ(cq_vocabulary_add(v, buf, (size_t) len, NULL), CQ_OK);
	}
}

/* Flatten v into a fresh arena of exactly its size, at another address than the first try. */
static unsigned char *
relocate(const cq_vocabulary *v, size_t *bytes)
{
	cq_error	err;
	size_t		n = cq_vocabulary_arena_bytes(v);
	unsigned char *first = aligned_bytes(n + 64),
			   *copy;
	bool		untouched = true;

	CHECK(n > 0);
	CHECK_INT_EQ(cq_vocabulary_flatten(v, first, n - 1, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_vocabulary_flatten(v, first + 4, n, &err), CQ_EINVAL);
	memset(first, 0xa5, n + 64);
	CHECK_INT_EQ(cq_vocabulary_flatten(v, first, n + 64, &err), CQ_OK);
	for (int i = 0; i < 64; i++)
		untouched = untouched && first[n + i] == 0xa5;
	CHECK(untouched);
	copy = aligned_bytes(n);
	memcpy(copy, first, n);
	memset(first, 0, n + 64);
	free(first);
	*bytes = n;
	return copy;
}

/* Every id, token and encoding of a and b the same. */
static void
check_same(const cq_vocabulary *a, const cq_vocabulary *b)
{
	const char *text = "t0 \xc3\xb1" "1@@ \xe2\x96\x81w2 ##3 unknown t4 <unk> </s> t999999 ##43";
	cq_tokens	t;
	int32_t		ia[16],
				ib[16];
	int32_t		seq[] = {0, 4, 5, 6, 7, 3, 8, 9, 2, 1};
	char	   *sa,
			   *sb;
	size_t		la,
				lb;

	CHECK_INT_EQ(cq_vocabulary_size(a), cq_vocabulary_size(b));
	for (int32_t id = 0; id < cq_vocabulary_size(a); id++)
	{
		size_t		len,
					lenb;
		const char *tok = cq_strmap_key(&a->map, id, &len);
		const char *tokb = cq_strmap_key(&b->map, id, &lenb);

		if (len != lenb || memcmp(tok, tokb, len + 1) != 0 || cq_vocabulary_id(b, tok, len) != id)
		{
			CHECK_INT_EQ(cq_vocabulary_id(b, tok, len), id);
			return;
		}
	}
	CHECK_INT_EQ(cq_vocabulary_id(b, "absent", 6), CQ_VOCAB_UNK);
	CHECK_INT_EQ(cq_vocabulary_id(b, "", 0), CQ_VOCAB_UNK);
	cq_tokens_init(&t);
	CHECK_INT_EQ(cq_whitespace_tokenize(text, strlen(text), &t), CQ_OK);
	CHECK(t.n <= 16);
	cq_vocabulary_encode(a, &t, ia);
	cq_vocabulary_encode(b, &t, ib);
	CHECK(memcmp(ia, ib, t.n * sizeof(int32_t)) == 0);
	CHECK_INT_EQ(ib[0], 4);
	CHECK_INT_EQ(ib[4], CQ_VOCAB_UNK);
	cq_tokens_free(&t);
	CHECK_INT_EQ(cq_vocabulary_decode(a, seq, 10, &sa, &la, NULL), CQ_OK);
	CHECK_INT_EQ(cq_vocabulary_decode(b, seq, 10, &sb, &lb, NULL), CQ_OK);
	CHECK_INT_EQ(la, lb);
	CHECK_STR_EQ(sb, sa);
	cq_free(sa);
	cq_free(sb);
	CHECK_INT_EQ(cq_vocabulary_join(a, seq, 10, &sa, &la, NULL), CQ_OK);
	CHECK_INT_EQ(cq_vocabulary_join(b, seq, 10, &sb, &lb, NULL), CQ_OK);
	CHECK_STR_EQ(sb, sa);
	cq_free(sa);
	cq_free(sb);
}

TEST(vocab_arena_attached_equals_private)
{
	int			sizes[] = {0, 1, 10, 20000};

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
	{
		cq_vocabulary v,
					a;
		size_t		bytes;
		unsigned char *arena;
		cq_error	err = {0};

		make_vocab(&v, sizes[k]);
		arena = relocate(&v, &bytes);
		CHECK_INT_EQ(cq_vocabulary_attach(arena, bytes, &a, &err), CQ_OK);
		if (sizes[k] >= 10)
			check_same(&v, &a);
		else
			CHECK_INT_EQ(cq_vocabulary_size(&a), cq_vocabulary_size(&v));
		/* a longer mapping (a segment rounded up) attaches the same */
		CHECK_INT_EQ(cq_vocabulary_attach(arena, bytes + 8, &a, &err), CQ_OK);
		cq_vocabulary_free(&v);
		/* the attached one needs only the arena */
		if (sizes[k] >= 10)
		{
			CHECK_INT_EQ(cq_vocabulary_id(&a, "t0", 2), 4);
			CHECK_INT_EQ(cq_vocabulary_id(&a, "##3", 3), 7);
		}
		free(arena);
	}
}

/* Attaching a copy of arena with f applied is refused with a message containing what. */
static void
refused(const unsigned char *arena, size_t bytes, void (*f) (unsigned char *), const char *what)
{
	unsigned char *c = aligned_bytes(bytes);
	cq_vocabulary a;
	cq_error	err = {0};

	memcpy(c, arena, bytes);
	f(c);
	CHECK_INT_EQ(cq_vocabulary_attach(c, bytes, &a, &err), CQ_EINVAL);
	if (strstr(err.msg, what) == NULL)
		unit_fail(__FILE__, __LINE__, "message \"%s\", expected \"%s\"", err.msg, what);
	free(c);
}

/* the head's fields, as vocab_arena.c lays them out */
static uint64_t
head_u64(const unsigned char *a, int field)
{
	uint64_t	x;

	memcpy(&x, a + 24 + 8 * field, 8);
	return x;
}

static void
bad_magic(unsigned char *a)
{
	a[0] ^= 1;
}
static void
bad_head(unsigned char *a)
{
	a[24 + 8] ^= 0x10;			/* n */
}
static void
bad_slot(unsigned char *a)
{
	uint32_t   *slots = (uint32_t *) (a + head_u64(a, 4));
	uint64_t	cap = head_u64(a, 2);

	for (uint64_t s = 0; s < cap; s++)
		if (slots[s])
		{
			slots[s] = (uint32_t) head_u64(a, 1) + 5;
			break;
		}
}
static void
lost_slot(unsigned char *a)
{
	uint32_t   *slots = (uint32_t *) (a + head_u64(a, 4));
	uint64_t	cap = head_u64(a, 2);

	for (uint64_t s = 0; s < cap; s++)
		if (slots[s])
		{
			slots[s] = 0;
			break;
		}
}
static void
bad_offset(unsigned char *a)
{
	uint64_t   *offs = (uint64_t *) (a + head_u64(a, 5));

	offs[3] = head_u64(a, 3) + 100;
}
static void
bad_length(unsigned char *a)
{
	uint32_t   *lens = (uint32_t *) (a + head_u64(a, 6));

	lens[5] += 1;				/* the key no longer ends on its NUL */
}

TEST(vocab_arena_damaged_refused)
{
	cq_vocabulary v,
				a;
	size_t		bytes;
	unsigned char *arena;
	cq_error	err = {0};

	make_vocab(&v, 500);
	arena = relocate(&v, &bytes);
	CHECK_INT_EQ(cq_vocabulary_attach(arena, bytes - 1, &a, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "truncated") != NULL);
	CHECK_INT_EQ(cq_vocabulary_attach(arena, 16, &a, &err), CQ_EINVAL);
	refused(arena, bytes, bad_magic, "not a vocabulary arena");
	refused(arena, bytes, bad_head, "checksum");
	refused(arena, bytes, bad_slot, "names no token");
	refused(arena, bytes, lost_slot, "slots hold");
	refused(arena, bytes, bad_offset, "outside its keys");
	refused(arena, bytes, bad_length, "outside its keys");
	/* misaligned */
	{
		unsigned char *c = aligned_bytes(bytes + 8);

		memcpy(c + 4, arena, bytes);
		CHECK_INT_EQ(cq_vocabulary_attach(c + 4, bytes, &a, &err), CQ_EINVAL);
		free(c);
	}
	/* the untouched arena still attaches */
	CHECK_INT_EQ(cq_vocabulary_attach(arena, bytes, &a, &err), CQ_OK);
	check_same(&v, &a);
	cq_vocabulary_free(&v);
	free(arena);
}
