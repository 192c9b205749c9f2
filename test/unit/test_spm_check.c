/*
 * The SentencePiece model check (text/spm_check.h).  Real models trained
 * here with Debian's spm_train (unigram and BPE, nmt_nfkc and identity
 * normalizers, user-defined symbols and byte fallback) pass and load; every
 * hostile shape of issue 41 is refused, naming its field, by cq_spm_check and
 * by cq_spm_load (which would crash in libsentencepiece without the check);
 * shapes at the bounds pass and the library handles them.
 */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/le.h"
#include "common/utf8.h"
#include "common/varint.h"
#include "text/spm.h"
#include "text/spm_check.h"

/* The string that crashed the server in issue 41 (route 1, third case). */
#define HOSTILE_TEXT "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3 \xef\xac\x81 \xe2\x91\xa0 " \
	"\xef\xbd\xb6\xef\xbe\x9e \xe3\x8d\xbf \xef\xb7\xba"

/* ---- protobuf bytes --------------------------------------------------- */

typedef struct buf
{
	uint8_t    *p;
	size_t		len;
	size_t		cap;
} buf;

static void
put(buf *b, const void *s, size_t n)
{
	if (b->len + n > b->cap)
	{
		b->cap = 2 * (b->len + n) + 64;
		b->p = realloc(b->p, b->cap);
	}
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void
put_varint(buf *b, uint64_t v)
{
	uint8_t		t[10];

	put(b, t, (size_t) (cq_varint_put(t, v) - t));
}

static void
put_len(buf *b, unsigned num, const void *s, size_t n)
{
	put_varint(b, (uint64_t) num << 3 | 2);
	put_varint(b, n);
	put(b, s, n);
}

static void
put_uint(buf *b, unsigned num, uint64_t v)
{
	put_varint(b, (uint64_t) num << 3);
	put_varint(b, v);
}

static void
put_sub(buf *b, unsigned num, buf *sub)
{
	put_len(b, num, sub->p, sub->len);
	free(sub->p);
	*sub = (buf) {0};
}

static buf
copy_of(const uint8_t *p, size_t n)
{
	buf			b = {0};

	put(&b, p, n);
	return b;
}

/* One SentencePiece message (score -2) as field 1 of b; type 1 is left out. */
static void
put_piece(buf *b, const char *s, size_t n, int type)
{
	buf			m = {0};

	put_len(&m, 1, s, n);
	put_varint(&m, 2 << 3 | 5);
	put(&m, "\0\0\0\xc0", 4);
	if (type != 1)
		put_uint(&m, 3, (uint64_t) type);
	put_sub(b, 1, &m);
}

/* A unigram model: <unk>, U+2581, a, b; normalizer charsmap cm (or none). */
static buf
small_model(const buf *cm)
{
	buf			b = {0},
				t = {0},
				n = {0};

	put_piece(&b, "<unk>", 5, 2);
	put_piece(&b, "\xe2\x96\x81", 3, 1);
	put_piece(&b, "a", 1, 1);
	put_piece(&b, "b", 1, 1);
	put_uint(&t, 3, 1);
	put_sub(&b, 2, &t);
	put_len(&n, 1, "test", 4);
	if (cm)
		put_len(&n, 2, cm->p, cm->len);
	put_sub(&b, 3, &n);
	return b;
}

/* ---- refusals --------------------------------------------------------- */

/* cq_spm_check and cq_spm_load both refuse b with a message containing want. */
static void
check_refused(const buf *b, const char *want, const char *file, int line)
{
	cq_error	err = {0};
	cq_spm	   *m = NULL;

	if (cq_spm_check(b->p, b->len, &err) != CQ_EFORMAT || strstr(err.msg, want) == NULL)
		unit_fail(file, line, "check: code %d \"%s\", expected \"%s\"", err.code, err.msg, want);
	err = (cq_error) {0};
	if (cq_spm_load(b->p, b->len, &m, &err) != CQ_EFORMAT || m != NULL || strstr(err.msg, want) == NULL)
		unit_fail(file, line, "load: code %d \"%s\", expected \"%s\"", err.code, err.msg, want);
}

#define REFUSED(b, want) check_refused(b, want, __FILE__, __LINE__)

/* The model passes, loads, and encodes s to UTF-8 that decodes to UTF-8. */
static void
check_usable(const buf *b, const char *s, const char *file, int line)
{
	cq_error	err = {0};
	cq_spm	   *m = NULL;
	const char *out;
	size_t		len;
	char	   *pieces;

	if (cq_spm_check(b->p, b->len, &err) != CQ_OK)
	{
		unit_fail(file, line, "refused: %s", err.msg);
		return;
	}
	if (cq_spm_load(b->p, b->len, &m, &err) != CQ_OK)
	{
		unit_fail(file, line, "the library refused it: %s", err.msg);
		return;
	}
	if (cq_spm_encode(m, s, strlen(s), &out, &len, &err) != CQ_OK ||
		!cq_utf8_valid((const uint8_t *) out, len))
		unit_fail(file, line, "encode: %s", err.msg);
	else
	{
		pieces = strndup(out, len);
		if (cq_spm_decode(m, pieces, len, &out, &len, &err) != CQ_OK ||
			!cq_utf8_valid((const uint8_t *) out, len))
			unit_fail(file, line, "decode: %s", err.msg);
		free(pieces);
	}
	cq_spm_free(m);
}

#define USABLE(b, s) check_usable(b, s, __FILE__, __LINE__)

/* ---- real models ------------------------------------------------------ */

enum
{
	UNI_NFKC, BPE_IDENTITY, BPE_NFKC, UNI_USER_BYTES, N_REAL
};

static const char *const train_opts[N_REAL] = {
	"--model_type=unigram --vocab_size=30",
	"--model_type=bpe --vocab_size=30 --normalization_rule_name=identity",
	"--model_type=bpe --vocab_size=30",
	"--model_type=unigram --vocab_size=320 --byte_fallback=true --hard_vocab_limit=false "
	"'--user_defined_symbols=<x>,<xy>,@@' --normalization_rule_name=identity",
};

static buf	real[N_REAL];

static buf
read_whole(const char *path)
{
	buf			b = {0};
	FILE	   *f = fopen(path, "rb");
	char		chunk[65536];
	size_t		n;

	if (f == NULL)
		return b;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		put(&b, chunk, n);
	fclose(f);
	return b;
}

/* A corpus with ASCII words and the compatibility characters NFKC maps. */
static void
write_corpus(const char *path)
{
	static const char *const words[] = {"the", "house", "of", "children", "tree", "light",
		"\xef\xbc\xa6\xef\xbd\x95\xef\xbd\x8c\xef\xbd\x8c", "\xef\xac\x81ne", "\xe2\x91\xa0",
		"\xef\xbd\xb6\xef\xbe\x9e", "\xe3\x8d\xbf", "caf\xc3\xa9", "na\xc3\xafve", "Stra\xc3\x9f" "e"};
	FILE	   *f = fopen(path, "w");

	for (int i = 0; f && i < 400; i++)
	{
		for (int k = 0; k < 2 + i % 7; k++)
			fprintf(f, "%s%s", k ? " " : "", words[(i * 7 + k * 5 + k * k) % 14]);
		fputc('\n', f);
	}
	if (f)
		fclose(f);
}

/* Trains the real models once (spm_train, in a temporary directory). */
static const buf *
real_model(int which)
{
	static int	trained;

	if (!trained)
	{
		char		dir[] = "/tmp/cq_unit_spm_XXXXXX";
		char		cmd[1024],
					path[256];

		trained = 1;
		if (mkdtemp(dir) == NULL)
			return &real[which];
		snprintf(path, sizeof(path), "%s/corpus.txt", dir);
		write_corpus(path);
		for (int i = 0; i < N_REAL; i++)
		{
			snprintf(cmd, sizeof(cmd), "spm_train --input=%s/corpus.txt --model_prefix=%s/m%d %s "
					 "--num_threads=1 --minloglevel=2 > /dev/null 2>&1", dir, dir, i, train_opts[i]);
			if (system(cmd) == 0)
			{
				snprintf(path, sizeof(path), "%s/m%d.model", dir, i);
				real[i] = read_whole(path);
			}
		}
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return &real[which];
}

/* Whether spm_train made every real model (a test that needs them fails). */
static int
have_real(const char *file, int line)
{
	for (int i = 0; i < N_REAL; i++)
		if (real_model(i)->len == 0)
		{
			unit_fail(file, line, "spm_train did not make real model %d (%s)", i, train_opts[i]);
			return 0;
		}
	return 1;
}

#define NEED_REAL() do { if (!have_real(__FILE__, __LINE__)) return; } while (0)

/* The byte range of the normalizer's charsmap in a real model. */
static void
find_charsmap(const buf *b, size_t *off, size_t *len)
{
	const uint8_t *p = b->p,
			   *end = b->p + b->len;
	uint64_t	tag,
				n;

	*off = *len = 0;
	while (p < end && cq_varint_get(&p, end, &tag))
	{
		if ((tag & 7) == 0)
		{
			cq_varint_get(&p, end, &n);
			continue;
		}
		if ((tag & 7) != 2 || !cq_varint_get(&p, end, &n))
			return;
		if (tag >> 3 == 3)
		{
			const uint8_t *q = p,
					   *qend = p + n;

			while (q < qend && cq_varint_get(&q, qend, &tag) && cq_varint_get(&q, qend, &n))
			{
				if (tag == (2 << 3 | 2))
				{
					*off = (size_t) (q - b->p);
					*len = (size_t) n;
					return;
				}
				if ((tag & 7) == 2)
					q += n;
			}
		}
		p += n;
	}
}

/* The real nmt_nfkc unigram model with its charsmap replaced by cm. */
static buf
with_charsmap(const buf *cm)
{
	const buf  *r = real_model(UNI_NFKC);
	const uint8_t *p = r->p,
			   *end = r->p + r->len;
	buf			b = {0},
				n = {0};
	uint64_t	tag = 0,
				len = 0;

	/* every top-level field but normalizer_spec, then a new one */
	while (p < end)
	{
		const uint8_t *start = p;

		if (!cq_varint_get(&p, end, &tag) || !cq_varint_get(&p, end, &len))
			break;
		if ((tag & 7) == 2)
			p += len;
		if (tag >> 3 != 3)
			put(&b, start, (size_t) (p - start));
	}
	put_len(&n, 1, "nmt_nfkc", 8);
	put_len(&n, 2, cm->p, cm->len);
	put_sub(&b, 3, &n);
	return b;
}

/* The real model with charsmap *cm (then freed) is refused naming want. */
static void
check_cm_refused(buf *cm, const char *want, const char *file, int line)
{
	buf			b = with_charsmap(cm);

	check_refused(&b, want, file, line);
	free(b.p);
	free(cm->p);
	*cm = (buf) {0};
}

#define CM_REFUSED(cm, want) check_cm_refused(cm, want, __FILE__, __LINE__)

/* A copy of the real model's charsmap. */
static buf
real_charsmap(void)
{
	size_t		off,
				len;

	find_charsmap(real_model(UNI_NFKC), &off, &len);
	return copy_of(real_model(UNI_NFKC)->p + off, len);
}

/* darts.h's unit fields */
static uint32_t
u_get(const buf *cm, size_t i)
{
	return cq_le_get_u32(cm->p + 4 + 4 * i);
}

static void
u_set(buf *cm, size_t i, uint32_t v)
{
	cq_le_put_u32(cm->p + 4 + 4 * i, v);
}

static uint32_t
u_offset(uint32_t u)
{
	return (u >> 10) << ((u & (1U << 9)) >> 6);
}

/*
 * Walks key through the charsmap trie as commonPrefixSearch does: the unit
 * of its last byte (*node), and of that node's leaf value (*leaf), 0 if none.
 */
static void
trie_find(const buf *cm, const char *key, uint32_t *node, uint32_t *leaf)
{
	size_t		pos = u_offset(u_get(cm, 0));

	*node = *leaf = 0;
	for (const char *k = key; *k; k++)
	{
		uint32_t	u;

		pos ^= (uint8_t) *k;
		u = u_get(cm, pos);
		if ((u & 0x800000FF) != (uint8_t) *k)
			return;
		*node = (uint32_t) pos;
		pos ^= u_offset(u);
		*leaf = ((u >> 8) & 1) ? (uint32_t) pos : 0;
	}
}

static const uint8_t *
cm_strings(const buf *cm)
{
	return cm->p + 4 + cq_le_get_u32(cm->p);
}

TEST(spm_check_real_models_pass_and_load)
{
	NEED_REAL();
	for (int i = 0; i < N_REAL; i++)
	{
		const buf  *b = real_model(i);

		CHECK(b->len > 0);
		if (b->len > 0)
			USABLE(b, HOSTILE_TEXT " the house <x>@@ caf\xc3\xa9");
	}
	/* the nmt_nfkc models carry a charsmap, the identity ones none */
	{
		size_t		off,
					len;

		find_charsmap(real_model(UNI_NFKC), &off, &len);
		CHECK(len > 100000);
		find_charsmap(real_model(BPE_IDENTITY), &off, &len);
		CHECK_INT_EQ(len, 0);
	}
}

TEST(spm_check_charsmap_normalizes)
{
	/* the real charsmap maps the text as spm_encode does (NFKC) */
	cq_spm	   *m = NULL;
	cq_error	err = {0};
	const char *out;
	size_t		len;
	const buf  *b;

	NEED_REAL();
	b = real_model(UNI_NFKC);
	CHECK_INT_EQ(cq_spm_load(b->p, b->len, &m, &err), CQ_OK);
	if (m == NULL)
		return;
	CHECK_INT_EQ(cq_spm_encode(m, "\xef\xbc\xa1\xef\xbc\xa2", 6, &out, &len, &err), CQ_OK);
	CHECK(memchr(out, 'A', len) != NULL && memchr(out, 'B', len) != NULL);
	cq_spm_free(m);
}

/* ---- issue 41's routes ------------------------------------------------ */

TEST(spm_check_huge_piece)
{
	buf			b = small_model(NULL);
	char	   *big = malloc(300000);

	memset(big, 'a', 300000);
	put_piece(&b, big, 300000, 1);
	REFUSED(&b, "pieces[4].piece is 300000 bytes (at most 2048)");
	free(big);
	free(b.p);
}

TEST(spm_check_piece_at_the_bound_loads)
{
	/* 2048 bytes: spm_train's longest piece; the library builds its trie */
	buf			b = small_model(NULL);
	char		s[CQ_SPM_MAX_PIECE_BYTES + 1],
				u[CQ_SPM_MAX_PIECE_BYTES];

	memset(s, 'a', sizeof(s));
	memset(u, 'b', sizeof(u));
	put_piece(&b, s, CQ_SPM_MAX_PIECE_BYTES, 1);
	USABLE(&b, "aaaa b");
	put_piece(&b, u, CQ_SPM_MAX_PIECE_BYTES, 4);
	USABLE(&b, "aaaa b");
	put_piece(&b, s, CQ_SPM_MAX_PIECE_BYTES + 1, 1);
	REFUSED(&b, "pieces[6].piece is 2049 bytes");
	free(b.p);
}

TEST(spm_check_trie_unit_altered)
{
	buf			cm;
	uint32_t	node,
				leaf;

	NEED_REAL();
	cm = real_charsmap();
	/* the root's offset far past the array */
	u_set(&cm, 0, 0x3FFFFFU << 10 | 1U << 9);
	CM_REFUSED(&cm, "normalizer_spec.precompiled_charsmap: a trie node's children at unit");

	/* the value of U+FF21 past the strings */
	cm = real_charsmap();
	trie_find(&cm, "\xef\xbc\xa1", &node, &leaf);
	CHECK(leaf != 0);
	u_set(&cm, leaf, 0x80000000U | 0x7FFFFFF0U);
	CM_REFUSED(&cm, "a trie value (2147483632) points past its");

	/* a node whose children start past the end */
	cm = real_charsmap();
	trie_find(&cm, "\xef\xbc", &node, &leaf);
	CHECK(node != 0);
	u_set(&cm, node, (u_get(&cm, node) & 0x1FF) | 1U << 9 | 0x1FFFF0U << 10);
	CM_REFUSED(&cm, "children at unit");
}

TEST(spm_check_trie_cycle)
{
	buf			cm;
	uint32_t	node,
				leaf,
				root;

	NEED_REAL();
	cm = real_charsmap();
	root = u_offset(u_get(&cm, 0));
	/* the node of byte 0xEF leads back to the root's children */
	trie_find(&cm, "\xef", &node, &leaf);
	CHECK(node != 0);
	u_set(&cm, node, (u_get(&cm, node) & 0x1FF) | ((node ^ root) << 10));
	CM_REFUSED(&cm, "the trie has a cycle");
}

TEST(spm_check_normalized_strings)
{
	buf			cm;
	uint32_t	node,
				leaf;
	size_t		trie;

	NEED_REAL();
	cm = real_charsmap();
	trie = cq_le_get_u32(cm.p);
	/* strings cut to 1 byte (issue 41: imported, then crashed bpe_tokens) */
	cm.len = 4 + trie + 1;
	CM_REFUSED(&cm, "points past its 1 bytes of strings");

	/* a string that is not UTF-8: U+FF21's "A" becomes 0xA7 (route 6) */
	cm = real_charsmap();
	trie_find(&cm, "\xef\xbc\xa1", &node, &leaf);
	((uint8_t *) cm_strings(&cm))[u_get(&cm, leaf) & 0x7FFFFFFF] = 0xA7;
	CM_REFUSED(&cm, "is not valid UTF-8");

	/* no NUL in the last string */
	cm = real_charsmap();
	cm.p[cm.len - 1] = 'x';
	CM_REFUSED(&cm, "is not NUL-terminated");

	/* strings run together past the bound */
	cm = real_charsmap();
	for (size_t i = 4 + trie; i < cm.len - 1; i++)
		if (cm.p[i] == 0)
			cm.p[i] = 'y';
	CM_REFUSED(&cm, "within 256 bytes");
}

TEST(spm_check_trie_size_field)
{
	static const uint32_t bad[] = {0, 2, 177150, 0xFFFFFFF0U};
	buf			cm,
				b;
	uint32_t	size;

	NEED_REAL();
	cm = real_charsmap();
	size = cq_le_get_u32(cm.p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		cq_le_put_u32(cm.p, bad[i]);
		b = with_charsmap(&cm);
		REFUSED(&b, "is not a positive multiple of 4 within its");
		free(b.p);
	}
	/* the whole blob as trie: the strings are empty, so no value fits */
	cq_le_put_u32(cm.p, (uint32_t) ((cm.len - 4) & ~(size_t) 3));
	b = with_charsmap(&cm);
	REFUSED(&b, "normalizer_spec.precompiled_charsmap");
	free(b.p);
	/* smaller: the array ends inside a block that nodes use */
	cq_le_put_u32(cm.p, size - 1024);
	b = with_charsmap(&cm);
	REFUSED(&b, "normalizer_spec.precompiled_charsmap");
	free(b.p);
	cm.len = 3;
	CM_REFUSED(&cm, "shorter than its trie size field");
}

/* ---- synthetic tries at the bounds ------------------------------------- */

/*
 * A double array whose keys are "a", "aa", ... (depth of them): node i sits
 * alone in block i + 1; leaves (every node, or only the last) select the
 * string "b".  units: how many 256-unit blocks to keep.
 */
static buf
chain_charsmap(int depth, int every_leaf, size_t blocks)
{
	size_t		n = 256 * (size_t) (depth + 2);
	uint32_t   *u = malloc(n * 4);
	buf			cm = {0};
	uint8_t		hdr[4];

	/* as Darts' builder does, a free unit's label never matches its byte */
	for (size_t j = 0; j < n; j++)
		u[j] = (uint32_t) ((j & 0xFF) ^ 1);
	u[0] = 256U << 10;
	for (int i = 1; i <= depth; i++)
	{
		uint32_t	idx = 256U * i + 'a',
					base = 256U * (i + 1);
		int			leaf = every_leaf || i == depth;

		u[idx] = (idx ^ base) << 10 | (uint32_t) leaf << 8 | 'a';
		if (leaf)
			u[base] = 0x80000000U;	/* value 0: the string "b" */
	}
	if (blocks * 256 < n)
		n = blocks * 256;
	cq_le_put_u32(hdr, (uint32_t) (4 * n));
	put(&cm, hdr, 4);
	for (size_t i = 0; i < n; i++)
	{
		cq_le_put_u32(hdr, u[i]);
		put(&cm, hdr, 4);
	}
	put(&cm, "b", 2);
	free(u);
	return cm;
}

/*
 * A small model over chain_charsmap(depth, every_leaf, blocks): refused
 * naming want, or (want NULL) usable on a run of n letters "a".
 */
static void
check_chain(int depth, int every_leaf, size_t blocks, const char *want, size_t n,
			const char *file, int line)
{
	buf			cm = chain_charsmap(depth, every_leaf, blocks),
				b = small_model(&cm);
	char	   *text = malloc(n + 1);

	memset(text, 'a', n);
	text[n] = '\0';
	if (want)
		check_refused(&b, want, file, line);
	else
		check_usable(&b, text, file, line);
	free(text);
	free(b.p);
	free(cm.p);
}

#define CHAIN(depth, every_leaf, blocks, want, n) \
	check_chain(depth, every_leaf, blocks, want, n, __FILE__, __LINE__)

TEST(spm_check_trie_bounds)
{
	/* 32 matches on one input: the library's array holds them */
	CHAIN(CQ_SPM_MAX_TRIE_RESULTS, 1, 1000, NULL, 70);
	CHAIN(CQ_SPM_MAX_TRIE_RESULTS + 1, 1, 1000, "one input matches more than 32 trie keys", 0);
	/* a key of 256 bytes */
	CHAIN(CQ_SPM_MAX_TRIE_DEPTH, 0, 1000, NULL, 300);
	CHAIN(CQ_SPM_MAX_TRIE_DEPTH + 1, 0, 1000, "a trie key is longer than 256 bytes", 0);
	/* the last node's children lie past a cut array */
	CHAIN(5, 1, 6, "children at unit 1536 pass the end of its 1536 units", 0);
}

/* ---- the rest of ModelProto -------------------------------------------- */

TEST(spm_check_denormalizer_and_merged_specs)
{
	buf			good = chain_charsmap(3, 1, 1000),
				bad = chain_charsmap(5, 1, 6),
				b = small_model(NULL),
				s = {0};

	/* a broken denormalizer charsmap */
	put_len(&s, 2, bad.p, bad.len);
	put_sub(&b, 5, &s);
	REFUSED(&b, "denormalizer_spec.precompiled_charsmap");
	free(b.p);
	/* protobuf merges a second normalizer_spec: its charsmap is the one used */
	b = small_model(&good);
	USABLE(&b, "aaa");
	put_len(&s, 2, bad.p, bad.len);
	put_sub(&b, 3, &s);
	REFUSED(&b, "normalizer_spec.precompiled_charsmap");
	free(b.p);
	free(good.p);
	free(bad.p);
}

TEST(spm_check_pieces)
{
	static const struct
	{
		const char *s;
		size_t		len;
		int			type;
		const char *want;
	}			bad[] = {
		{"\xa7", 1, 1, "pieces[4].piece is not valid UTF-8"},
		{"\xed\xa0\x80", 3, 1, "pieces[4].piece is not valid UTF-8"},	/* a surrogate */
		{"a\0b", 3, 1, "pieces[4].piece is not valid UTF-8 (or contains NUL)"},
		{"", 0, 1, "pieces[4].piece is empty"},
		{"q", 1, 7, "pieces[4].type is 7"},
		{"q", 1, 0, "pieces[4].type is 0"},
	};
	buf			b;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		b = small_model(NULL);
		put_piece(&b, bad[i].s, bad[i].len, bad[i].type);
		REFUSED(&b, bad[i].want);
		free(b.p);
	}
	b = small_model(NULL);
	{
		buf			m = {0};

		put_uint(&m, 3, 1);
		put_sub(&b, 1, &m);
	}
	REFUSED(&b, "pieces[4] has no piece string");
	free(b.p);
	b = (buf) {0};
	put_len(&b, 3, "", 0);
	REFUSED(&b, "the model has no pieces");
	free(b.p);
}

TEST(spm_check_piece_count)
{
	buf			b = {0};

	for (int i = 0; i <= CQ_SPM_MAX_PIECES; i++)
		put_piece(&b, "a", 1, 1);
	CHECK(cq_spm_check(b.p, b.len, NULL) == CQ_EFORMAT);
	REFUSED(&b, "more than 1048576 pieces");
	free(b.p);
}

TEST(spm_check_user_defined_nesting)
{
	char		s[CQ_SPM_MAX_USER_NESTING + 2];
	buf			b = small_model(NULL);

	/* x, xx, ... 64 deep, with other pieces between: the matcher's 64 */
	memset(s, 'x', sizeof(s));
	for (int i = CQ_SPM_MAX_USER_NESTING; i >= 1; i--)
	{
		char		q[16];

		put_piece(&b, s, (size_t) i, 4);
		snprintf(q, sizeof(q), "q%d", i);
		put_piece(&b, q, strlen(q), 4);
	}
	put_piece(&b, "xxy", 3, 4);
	put_piece(&b, "xy", 2, 4);
	s[sizeof(s) - 1] = '\0';
	USABLE(&b, s);
	put_piece(&b, s, CQ_SPM_MAX_USER_NESTING + 1, 4);
	REFUSED(&b, "more than 64 user-defined pieces are prefixes of one another");
	free(b.p);
}

TEST(spm_check_trainer_spec)
{
	buf			b = small_model(NULL),
				t = {0};
	char		big[300];

	put_uint(&t, 3, 5);
	put_sub(&b, 2, &t);
	REFUSED(&b, "trainer_spec.model_type is 5");
	free(b.p);
	b = small_model(NULL);
	put_len(&t, 44, "\xe2\x81", 2);
	put_sub(&b, 2, &t);
	REFUSED(&b, "trainer_spec.unk_surface is not valid UTF-8");
	free(b.p);
	b = small_model(NULL);
	memset(big, 'u', sizeof(big));
	put_len(&t, 44, big, sizeof(big));
	put_sub(&b, 2, &t);
	REFUSED(&b, "trainer_spec.unk_surface is 300 bytes (at most 256)");
	free(b.p);
}

TEST(spm_check_self_test_samples)
{
	buf			b = small_model(NULL),
				s = {0},
				one = {0};

	put_len(&one, 1, "a", 1);
	for (int i = 0; i < CQ_SPM_MAX_SELF_TESTS; i++)
		put_len(&s, 1, one.p, one.len);
	put_sub(&b, 4, &s);
	CHECK_INT_EQ(cq_spm_check(b.p, b.len, NULL), CQ_OK);
	put_len(&s, 1, one.p, one.len);
	put_sub(&b, 4, &s);
	REFUSED(&b, "self_test_data has more than 1000 samples");
	free(b.p);
	free(one.p);
}

TEST(spm_check_framing)
{
	/* bytes appended to a real model, and what they must give */
	static const struct
	{
		const char *tail;
		size_t		len;
		const char *want;		/* NULL: the model passes */
	}			tails[] = {
		{"\x08\x80\x00", 3, "malformed varint"},	/* overlong: a trailing zero group */
		{"\x0b", 1, "has wire type 3"},	/* a group */
		{"\x00\x01", 2, "malformed field tag"},	/* tag 0 */
		{"\x18\x01", 2, "ModelProto.normalizer_spec has wire type 0, expected 2"},
		{"\x30\x05\xc2\x0c\x01z", 6, NULL},	/* an unknown field, an extension */
	};
	const buf  *r;
	buf			b;

	NEED_REAL();
	r = real_model(BPE_IDENTITY);
	/* truncated: inside a length-delimited field */
	b = copy_of(r->p, r->len - 7);
	REFUSED(&b, "passes the end of its message");
	free(b.p);
	/* a length field made larger than the model */
	b = copy_of(r->p, r->len);
	b.p[1] = 0xFF;
	b.p[2] = 0x7F;
	REFUSED(&b, "ModelProto: field 1: length at byte 0 passes the end");
	free(b.p);
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++)
	{
		b = copy_of(r->p, r->len);
		put(&b, tails[i].tail, tails[i].len);
		if (tails[i].want)
			REFUSED(&b, tails[i].want);
		else
			CHECK_INT_EQ(cq_spm_check(b.p, b.len, NULL), CQ_OK);
		free(b.p);
	}
}

TEST(spm_check_output_is_utf8)
{
	/* the shim never returns bytes that are not UTF-8: a piece it does not
	 * know is copied through by the decoder, so an invalid one is refused */
	const buf  *r = real_model(BPE_IDENTITY);
	cq_spm	   *m = NULL;
	cq_error	err = {0};
	const char *out;
	size_t		len;

	NEED_REAL();
	CHECK_INT_EQ(cq_spm_load(r->p, r->len, &m, &err), CQ_OK);
	if (m == NULL)
		return;
	CHECK_INT_EQ(cq_spm_decode(m, "\xa7", 1, &out, &len, &err), CQ_ECORRUPT);
	CHECK(strstr(err.msg, "not UTF-8") != NULL);
	CHECK_INT_EQ(cq_spm_decode(m, "\xe2\x96\x81the", 6, &out, &len, &err), CQ_OK);
	CHECK(len == 3 && memcmp(out, "the", 3) == 0);
	/* text that is not UTF-8 is normalized to U+FFFD: the pieces are UTF-8 */
	CHECK_INT_EQ(cq_spm_encode(m, "a\xa7", 2, &out, &len, &err), CQ_OK);
	CHECK(cq_utf8_valid((const uint8_t *) out, len));
	cq_spm_free(m);
}

/* ---- random mutations --------------------------------------------------- */

static uint64_t
next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One mutation of the real model: units, strings, bytes, or a cut. */
static buf
mutate(const buf *r, size_t cm_off, size_t cm_len, uint64_t *rng)
{
	buf			b = copy_of(r->p, r->len);
	uint64_t	k = next_rand(rng) % 4;

	if (k == 0)					/* a trie unit */
		cq_le_put_u32(b.p + cm_off + 4 + 4 * (next_rand(rng) % ((cm_len - 4) / 4 - 1)),
					  (uint32_t) next_rand(rng));
	else if (k == 1)			/* a byte of the charsmap */
		b.p[cm_off + next_rand(rng) % cm_len] ^= (uint8_t) (1 + next_rand(rng) % 255);
	else if (k == 2)			/* a byte anywhere */
		b.p[next_rand(rng) % b.len] ^= (uint8_t) (1 + next_rand(rng) % 255);
	else						/* a cut */
		b.len = next_rand(rng) % b.len;
	return b;
}

TEST(spm_check_random_mutations)
{
	const buf  *r = real_model(UNI_NFKC);
	uint64_t	rng = 41;
	size_t		cm_off,
				cm_len;
	int			refused = 0,
				passed = 0;

	NEED_REAL();
	find_charsmap(r, &cm_off, &cm_len);
	if (cm_len == 0)
	{
		CHECK(cm_len > 0);
		return;
	}
	for (int i = 0; i < 120; i++)
	{
		buf			b = mutate(r, cm_off, cm_len, &rng);

		/* every mutant is refused or works; none crashes or emits non-UTF-8 */
		if (cq_spm_check(b.p, b.len, NULL) != CQ_OK)
			refused++;
		else
		{
			passed++;
			USABLE(&b, HOSTILE_TEXT " the tree");
		}
		free(b.p);
	}
	CHECK(refused > 10 && passed > 10);
}
