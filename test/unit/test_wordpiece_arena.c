/*
 * Relocatable WordPiece segmenters (wordpiece.h: cq_wordpiece_arena_bytes,
 * cq_wordpiece_flatten, cq_wordpiece_attach): a ready model flattened into
 * an arena of exactly its size, the arena copied to another address and the
 * first copy freed, then attached, segments a set of sentences (accents,
 * CJK, special tokens, long words, unknown words, repeated tokens) exactly
 * as the private model, under both variants and with and without
 * lower-casing; an attached model is read-only; a short or misaligned
 * buffer is refused by flatten; a truncated or damaged arena by attach.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/mem.h"
#include "text/wordpiece.h"
#include "unit.h"

static void *
aligned_bytes(size_t n)
{
	void	   *p = NULL;

	CHECK_INT_EQ(posix_memalign(&p, 64, n ? n : 1), 0);
	return p;
}

static cq_wordpiece_options
options(bool lower, cq_wordpiece_variant variant)
{
	cq_wordpiece_options o = {
		.lower_case = lower, .strip_accents = lower, .tokenize_chinese_chars = true,
		.variant = variant, .max_input_chars_per_word = 100,
		.special = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"}
	};

	return o;
}

/* A vocab.txt: specials, words and pieces (accented, CJK, Greek), a repeat, then filler to n lines. */
static char *
vocab_text(int n)
{
	static const char *const words[] = {
		"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "The", "un", "##want", "##ed",
		"runn", "##ing", "caf", "##\xc3\xa9", "##e", "cafe", "caf\xc3\xa9", "\xe5\x8d\x9a",
		"\xe6\x8e\xa8", "!", "?", ",", ".", "\xce\xbf", "##\xcf\x83", "ab", "##ab", "a", "##a",
		"hello", "Hello", "world", "the", "x", "##x", "\xc3\xa9t\xc3\xa9", "ete", "##s"
	};
	size_t		cap = 64 + (size_t) n * 16;
	char	   *s = malloc(cap);
	size_t		len = 0;
	int			k = 0;

	for (; k < (int) (sizeof(words) / sizeof(words[0])); k++)
		len += (size_t) snprintf(s + len, cap - len, "%s\n", words[k]);
	for (; k < n; k++)
		len += (size_t) snprintf(s + len, cap - len, k % 2 ? "w%d\n" : "##%d\n", k);
	return s;
}

static const char *const sentences[] = {
	"",
	"The unwanted running!",
	"Caf\xc3\xa9 cafe CAF\xc3\x89 \xc3\x89t\xc3\xa9 e\xcc\x81te\xcc\x81",
	"\xe5\x8d\x9a\xe6\x8e\xa8 ab\xe5\x8d\x9a" "ab \xe4\xb8\xad",
	"[CLS] hello [SEP] world [MASK][PAD] [unk]",
	"\xce\x9f\xce\xa3 \xce\xbf\xcf\x83\xcf\x83",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"zzz qqq abab?x,xx. w101 ##1002 w999##998",
	"tab\there\nnew\xc2\xa0line \xef\xbf\xbd\x05 \xff end",
};

/* The pieces of text, space-joined, or the error (cq_alloc'd). */
static char *
pieces(cq_wordpiece *wp, const char *text)
{
	char	   *s = NULL;
	size_t		n;
	cq_error	err = {0};

	if (cq_wordpiece_apply(wp, text, strlen(text), &s, &n, &err) != CQ_OK)
		return cq_strndup(err.msg, strlen(err.msg));
	return s;
}

/* Flatten wp into a fresh arena of exactly its size, at another address than the first try. */
static unsigned char *
relocate(const cq_wordpiece *wp, size_t *bytes)
{
	cq_error	err;
	size_t		n = cq_wordpiece_arena_bytes(wp);
	unsigned char *first = aligned_bytes(n + 64),
			   *copy;
	bool		untouched = true;

	CHECK(n > 0);
	CHECK_INT_EQ(cq_wordpiece_flatten(wp, first, n - 1, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_wordpiece_flatten(wp, first + 4, n, &err), CQ_EINVAL);
	memset(first, 0xa5, n + 64);
	CHECK_INT_EQ(cq_wordpiece_flatten(wp, first, n + 64, &err), CQ_OK);
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

/* Every token and every sentence's pieces of a and b the same. */
static void
check_same(cq_wordpiece *a, cq_wordpiece *b)
{
	CHECK_INT_EQ(cq_wordpiece_size(a), cq_wordpiece_size(b));
	for (int32_t id = 0; id < cq_wordpiece_size(a); id++)
	{
		size_t		la,
					lb;
		const char *ta = cq_wordpiece_token(a, id, &la);
		const char *tb = cq_wordpiece_token(b, id, &lb);

		if (la != lb || memcmp(ta, tb, la) != 0)
		{
			unit_fail(__FILE__, __LINE__, "token %d: \"%s\", expected \"%s\"", (int) id, tb, ta);
			return;
		}
	}
	for (size_t i = 0; i < sizeof(sentences) / sizeof(sentences[0]); i++)
	{
		char	   *pa = pieces(a, sentences[i]);
		char	   *pb = pieces(b, sentences[i]);

		CHECK_STR_EQ(pb, pa);
		cq_free(pa);
		cq_free(pb);
	}
}

TEST(wordpiece_arena_attached_equals_private)
{
	int			sizes[] = {38, 20000};

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		for (int lower = 0; lower < 2; lower++)
			for (int variant = 0; variant < 2; variant++)
			{
				cq_wordpiece_options o = options(lower, variant ? CQ_WORDPIECE_FAST : CQ_WORDPIECE_SLOW);
				char	   *text = vocab_text(sizes[k]);
				cq_wordpiece *wp,
						   *at;
				size_t		bytes;
				unsigned char *arena;
				cq_error	err = {0};
				char	   *s;

				if (variant)
					o.special[CQ_WORDPIECE_MASK] = NULL;	/* a model without one */
				CHECK_INT_EQ(cq_wordpiece_load(&o, text, strlen(text), &wp, &err), CQ_OK);
				free(text);
				arena = relocate(wp, &bytes);
				CHECK_INT_EQ(cq_wordpiece_attach(arena, bytes, &at, &err), CQ_OK);
				check_same(wp, at);
				/* a longer mapping (a segment rounded up) attaches the same */
				cq_wordpiece_free(at);
				CHECK_INT_EQ(cq_wordpiece_attach(arena, bytes + 8, &at, &err), CQ_OK);
				/* sanity: the sentences really exercise pieces, unknowns and specials */
				s = pieces(wp, "The unwanted zzz [SEP]");
				CHECK_STR_EQ(s, lower ? "the un ##want ##ed [UNK] [SEP]" : "The un ##want ##ed [UNK] [SEP]");
				cq_free(s);
				cq_wordpiece_free(wp);
				/* the attached one needs only the arena, and is read-only */
				s = pieces(at, "The unwanted zzz [SEP]");
				CHECK_STR_EQ(s, lower ? "the un ##want ##ed [UNK] [SEP]" : "The un ##want ##ed [UNK] [SEP]");
				cq_free(s);
				CHECK_INT_EQ(cq_wordpiece_add(at, "new", 3, &err), CQ_EINVAL);
				CHECK(strstr(err.msg, "read-only") != NULL);
				/* a long text's scratch is the attached model's own */
				cq_wordpiece_release_scratch(at);
				s = pieces(at, "runn");
				CHECK_STR_EQ(s, "runn");
				cq_free(s);
				cq_wordpiece_free(at);
				free(arena);
			}
}

/* Attaching a copy of arena with f applied is refused with a message containing what. */
static void
refused(const unsigned char *arena, size_t bytes, void (*f) (unsigned char *), const char *what)
{
	unsigned char *c = aligned_bytes(bytes);
	cq_wordpiece *at = NULL;
	cq_error	err = {0};

	memcpy(c, arena, bytes);
	f(c);
	CHECK_INT_EQ(cq_wordpiece_attach(c, bytes, &at, &err), CQ_EINVAL);
	CHECK(at == NULL);
	if (strstr(err.msg, what) == NULL)
		unit_fail(__FILE__, __LINE__, "message \"%s\", expected \"%s\"", err.msg, what);
	free(c);
}

/* the head's fields, as wordpiece_arena.c lays them out: total, then the map's, then lines' */
static uint64_t
head_u64(const unsigned char *a, int field)
{
	uint64_t	x;

	memcpy(&x, a + 24 + 8 * field, 8);
	return x;
}

#define F_N 1
#define F_CAP 2
#define F_SLOTS 4
#define F_LINES_OFF 10
#define F_SPECIAL_OFF 16		/* after longest, the options, set and checksum (32 bytes) */

static void
bad_magic(unsigned char *a)
{
	a[0] ^= 1;
}
static void
bad_head(unsigned char *a)
{
	a[24 + 8 * F_N] ^= 0x10;
}
static void
bad_slot(unsigned char *a)
{
	uint32_t   *slots = (uint32_t *) (a + head_u64(a, F_SLOTS));
	uint64_t	cap = head_u64(a, F_CAP);

	for (uint64_t s = 0; s < cap; s++)
		if (slots[s])
		{
			slots[s] = (uint32_t) head_u64(a, F_N) + 5;
			break;
		}
}
static void
lost_slot(unsigned char *a)
{
	uint32_t   *slots = (uint32_t *) (a + head_u64(a, F_SLOTS));
	uint64_t	cap = head_u64(a, F_CAP);

	for (uint64_t s = 0; s < cap; s++)
		if (slots[s])
		{
			slots[s] = 0;
			break;
		}
}
static void
bad_line(unsigned char *a)
{
	uint32_t   *lines = (uint32_t *) (a + head_u64(a, F_LINES_OFF));

	lines[7] = (uint32_t) head_u64(a, F_N);
}
static void
bad_special(unsigned char *a)
{
	/* [UNK] -> [UNQ]: still a well-formed token, caught by the specials' checksum */
	a[head_u64(a, F_SPECIAL_OFF) + 3] = 'Q';
}
static void
bad_key(unsigned char *a)
{
	/* a key's NUL overwritten: it no longer ends where its length says */
	uint64_t	keys_off = head_u64(a, 8);
	uint64_t	keys_len = head_u64(a, 3);

	for (uint64_t i = 0; i < keys_len; i++)
		if (a[keys_off + i] == '\0')
		{
			a[keys_off + i] = 'x';
			break;
		}
}

TEST(wordpiece_arena_damaged_refused)
{
	cq_wordpiece_options o = options(true, CQ_WORDPIECE_SLOW);
	char	   *text = vocab_text(500);
	cq_wordpiece *wp,
			   *at;
	size_t		bytes;
	unsigned char *arena;
	cq_error	err = {0};

	CHECK_INT_EQ(cq_wordpiece_load(&o, text, strlen(text), &wp, &err), CQ_OK);
	free(text);
	arena = relocate(wp, &bytes);
	CHECK_INT_EQ(cq_wordpiece_attach(arena, bytes - 1, &at, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "truncated") != NULL);
	CHECK_INT_EQ(cq_wordpiece_attach(arena, 16, &at, &err), CQ_EINVAL);
	refused(arena, bytes, bad_magic, "not a WordPiece arena");
	refused(arena, bytes, bad_head, "checksum");
	refused(arena, bytes, bad_slot, "names no token");
	refused(arena, bytes, lost_slot, "slots hold");
	refused(arena, bytes, bad_line, "line 8 names no token");
	refused(arena, bytes, bad_special, "special tokens are damaged");
	refused(arena, bytes, bad_key, "outside its keys");
	/* a vocabulary's arena is not a segmenter's */
	{
		unsigned char *c = aligned_bytes(bytes);

		memcpy(c, arena, bytes);
		memcpy(c, "CQVARENA", 8);
		CHECK_INT_EQ(cq_wordpiece_attach(c, bytes, &at, &err), CQ_EINVAL);
		free(c);
	}
	/* misaligned */
	{
		unsigned char *c = aligned_bytes(bytes + 8);

		memcpy(c + 4, arena, bytes);
		CHECK_INT_EQ(cq_wordpiece_attach(c + 4, bytes, &at, &err), CQ_EINVAL);
		free(c);
	}
	/* the untouched arena still attaches */
	CHECK_INT_EQ(cq_wordpiece_attach(arena, bytes, &at, &err), CQ_OK);
	check_same(wp, at);
	cq_wordpiece_free(at);
	cq_wordpiece_free(wp);
	free(arena);
}
