/*
 * The SentencePiece model check (spm_check.h): a bounded reader of the
 * protobuf wire format of sentencepiece.ModelProto, and a proof, unit by
 * unit, that the library's charsmap trie search stays inside its blob.
 */
#include "text/spm_check.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/interrupt.h"
#include "common/le.h"
#include "common/mem.h"
#include "common/utf8.h"
#include "common/varint.h"

/* protobuf wire types */
enum
{
	WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5
};

/* The unread rest of one message. */
typedef struct pb_msg
{
	const uint8_t *p;
	const uint8_t *end;
} pb_msg;

typedef struct pb_field
{
	uint32_t	num;
	int			wt;
	uint64_t	v;				/* WT_VARINT */
	const uint8_t *data;		/* WT_LEN, WT_I64, WT_I32 */
	size_t		len;
} pb_field;

typedef struct span
{
	const uint8_t *s;
	size_t		len;
} span;

typedef struct spm_ctx
{
	const uint8_t *base;		/* the model: messages give byte offsets */
	cq_error   *err;
	size_t		n_pieces;
	size_t		n_samples;		/* self_test_data.samples, merged */
	span	   *user;			/* the USER_DEFINED pieces */
	size_t		n_user;
	size_t		cap_user;
} spm_ctx;

/*
 * The next field of m into f (*got false at the end of m).  Varints are
 * canonical LEB128 (common/varint.h), tags fit 32 bits, field numbers are at
 * least 1, lengths stay inside m; groups (wire types 3, 4), which ModelProto
 * never uses, are refused.
 */
static cq_code
pb_next(const spm_ctx *c, pb_msg *m, pb_field *f, bool *got, const char *where)
{
	uint64_t	tag;
	size_t		at = (size_t) (m->p - c->base);

	*got = false;
	if (m->p >= m->end)
		return CQ_OK;
	if (!cq_varint_get(&m->p, m->end, &tag) || tag > UINT32_MAX || (tag >> 3) == 0)
		return cq_fail(c->err, CQ_EFORMAT, "%s: malformed field tag at byte %zu", where, at);
	f->num = (uint32_t) (tag >> 3);
	f->wt = (int) (tag & 7);
	switch (f->wt)
	{
		case WT_VARINT:
			if (!cq_varint_get(&m->p, m->end, &f->v))
				return cq_fail(c->err, CQ_EFORMAT, "%s: field %u: malformed varint at byte %zu",
							   where, (unsigned) f->num, at);
			break;
		case WT_LEN:
			if (!cq_varint_get(&m->p, m->end, &f->v) || f->v > (uint64_t) (m->end - m->p))
				return cq_fail(c->err, CQ_EFORMAT, "%s: field %u: length at byte %zu passes the end of its message",
							   where, (unsigned) f->num, at);
			f->len = (size_t) f->v;
			break;
		case WT_I64:
		case WT_I32:
			f->len = f->wt == WT_I64 ? 8 : 4;
			if ((size_t) (m->end - m->p) < f->len)
				return cq_fail(c->err, CQ_EFORMAT, "%s: field %u at byte %zu is truncated",
							   where, (unsigned) f->num, at);
			break;
		default:
			return cq_fail(c->err, CQ_EFORMAT, "%s: field %u at byte %zu has wire type %d (ModelProto uses 0, 1, 2 and 5)",
						   where, (unsigned) f->num, at, f->wt);
	}
	if (f->wt != WT_VARINT)
	{
		f->data = m->p;
		m->p += f->len;
	}
	*got = true;
	return CQ_OK;
}

/* Called for each field of a message, with the message's own state. */
typedef cq_code (*pb_visit) (spm_ctx *c, const pb_field *f, void *arg);

/* Every field of the message data[0..len) (named where), in order. */
static cq_code
pb_each(spm_ctx *c, const uint8_t *data, size_t len, const char *where, pb_visit visit, void *arg)
{
	pb_msg		m = {data, data + len};
	pb_field	f = {0};
	bool		got;
	cq_code		rc;

	while ((rc = pb_next(c, &m, &f, &got, where)) == CQ_OK && got)
		if ((rc = visit(c, &f, arg)) != CQ_OK)
			break;
	return rc;
}

/* A field the library reads must have its declared wire type. */
static cq_code
want_wt(const spm_ctx *c, const pb_field *f, int wt, const char *where, const char *field)
{
	if (f->wt == wt)
		return CQ_OK;
	return cq_fail(c->err, CQ_EFORMAT, "%s.%s has wire type %d, expected %d", where, field, f->wt, wt);
}

/* Bytes the library hands out as text: at most max bytes of UTF-8, no NUL. */
static cq_code
check_text(const spm_ctx *c, const pb_field *f, size_t max, const char *where, const char *field)
{
	if (f->len > max)
		return cq_fail(c->err, CQ_EFORMAT, "%s.%s is %zu bytes (at most %zu)", where, field, f->len, max);
	if (!cq_utf8_valid(f->data, f->len))
		return cq_fail(c->err, CQ_EFORMAT, "%s.%s is not valid UTF-8 (or contains NUL)", where, field);
	return CQ_OK;
}

static cq_code
add_user_piece(spm_ctx *c, const uint8_t *s, size_t len)
{
	if (c->n_user == c->cap_user)
	{
		size_t		cap = c->cap_user ? 2 * c->cap_user : 64;
		span	   *u = cq_realloc(c->user, cap * sizeof(span));

		if (u == NULL)
			return cq_fail(c->err, CQ_ENOMEM, "out of memory checking a SentencePiece model");
		c->user = u;
		c->cap_user = cap;
	}
	c->user[c->n_user++] = (span) {s, len};
	return CQ_OK;
}

/* One SentencePiece message, as protobuf leaves it. */
typedef struct piece_state
{
	char		where[40];		/* "pieces[i]" */
	const uint8_t *piece;
	size_t		len;
	uint64_t	type;
} piece_state;

/*
 * ModelProto.SentencePiece: piece = 1 (string), score = 2 (float), type = 3
 * (enum 1..6).  Every occurrence of a field is checked (protobuf keeps the
 * last).
 */
static cq_code
piece_field(spm_ctx *c, const pb_field *f, void *arg)
{
	piece_state *p = arg;
	cq_code		rc;

	if (f->num == 1)
	{
		if ((rc = want_wt(c, f, WT_LEN, p->where, "piece")) != CQ_OK ||
			(rc = check_text(c, f, CQ_SPM_MAX_PIECE_BYTES, p->where, "piece")) != CQ_OK)
			return rc;
		if (f->len == 0)
			return cq_fail(c->err, CQ_EFORMAT, "%s.piece is empty", p->where);
		p->piece = f->data;
		p->len = f->len;
	}
	else if (f->num == 2)
		return want_wt(c, f, WT_I32, p->where, "score");
	else if (f->num == 3)
	{
		if ((rc = want_wt(c, f, WT_VARINT, p->where, "type")) != CQ_OK)
			return rc;
		if (f->v < 1 || f->v > 6)
			return cq_fail(c->err, CQ_EFORMAT, "%s.type is %llu (a SentencePiece type is 1 to 6)",
						   p->where, (unsigned long long) f->v);
		p->type = f->v;
	}
	return CQ_OK;
}

/* A piece; a USER_DEFINED one is remembered for check_user_nesting. */
static cq_code
check_piece(spm_ctx *c, const pb_field *pf)
{
	piece_state p = {.type = 1};
	cq_code		rc;

	snprintf(p.where, sizeof(p.where), "pieces[%zu]", c->n_pieces);
	if ((rc = pb_each(c, pf->data, pf->len, p.where, piece_field, &p)) != CQ_OK)
		return rc;
	if (p.piece == NULL)
		return cq_fail(c->err, CQ_EFORMAT, "%s has no piece string", p.where);
	c->n_pieces++;
	return p.type == 4 ? add_user_piece(c, p.piece, p.len) : CQ_OK;
}

/*
 * TrainerSpec: model_type = 3 (enum 1..4: a model the factory cannot make
 * leaves the processor without one), the piece names 45..48 and
 * unk_surface = 44 (the decoder writes it for every unknown piece).
 */
static cq_code
trainer_field(spm_ctx *c, const pb_field *f, void *arg)
{
	static const char *const names[] = {"unk_surface", "unk_piece", "bos_piece", "eos_piece", "pad_piece"};
	cq_code		rc;

	if (f->num == 3)
	{
		if ((rc = want_wt(c, f, WT_VARINT, "trainer_spec", "model_type")) != CQ_OK)
			return rc;
		if (f->v < 1 || f->v > 4)
			return cq_fail(c->err, CQ_EFORMAT, "trainer_spec.model_type is %llu (1 to 4: unigram, bpe, word, char)",
						   (unsigned long long) f->v);
	}
	else if (f->num >= 44 && f->num <= 48)
	{
		const char *name = names[f->num - 44];

		if ((rc = want_wt(c, f, WT_LEN, "trainer_spec", name)) != CQ_OK)
			return rc;
		return check_text(c, f, f->num == 44 ? CQ_SPM_MAX_UNK_SURFACE_BYTES : CQ_SPM_MAX_PIECE_BYTES,
						  "trainer_spec", name);
	}
	else if (f->num == 24 || f->num == 35)
		return want_wt(c, f, WT_VARINT, "trainer_spec",
					   f->num == 24 ? "treat_whitespace_as_suffix" : "byte_fallback");
	return CQ_OK;
}

/* ---- the precompiled charsmap ------------------------------------------ */

/*
 * A charsmap is <uint32 trie size><Darts-clone double array><strings>
 * (normalizer.cc, EncodePrecompiledCharsMap).  The library finds the longest
 * rule at each input position with commonPrefixSearch (darts.h) over the
 * unchecked array, for the input's bytes:
 *
 *     unit = a[0]; pos = offset(unit);
 *     for each byte k of the input:
 *         pos ^= k; unit = a[pos];                    (1)
 *         if (label(unit) != k) stop;
 *         pos ^= offset(unit);
 *         if (has_leaf(unit)) result value(a[pos]);   (2)
 *
 * and copies the NUL-terminated string at strings + value (3), writing at
 * most 32 results into a stack array whose count it then trusts (4).  So a
 * search is a walk over "nodes" (units whose label matched, each with its
 * base pos), and it is safe for every input iff, from the root's base and
 * from every node reachable by some byte string:
 *   (1) base ^ k < n for all 256 bytes k, i.e. (base | 0xFF) < n;
 *   (2) a leaf's base < n (implied by (1));
 *   (3) every value it selects starts a string NUL-terminated inside the
 *       strings, itself short UTF-8 (the normalizer's output);
 *   (4) no path passes more than 32 leaves.
 * The check walks every reachable node once (depth first, with an explicit
 * stack), refuses a cycle (a path back to a node on the stack: unbounded
 * results) and any key longer than CQ_SPM_MAX_TRIE_DEPTH, and computes (4)
 * bottom-up.  Work: at most 256 reads per unit.
 */
typedef struct trie
{
	const uint8_t *units;
	size_t		n;				/* units of 4 bytes */
	const uint8_t *str;			/* the strings */
	size_t		str_len;
	uint8_t    *state;			/* per unit: 0 new, 1 on the stack, 2 + leaves below */
	const char *where;
} trie;

#define ROOT UINT32_MAX

static inline uint32_t
unit_at(const trie *t, size_t i)
{
	return cq_le_get_u32(t->units + 4 * i);
}

/* darts.h's DoubleArrayUnit accessors. */
static inline uint32_t
unit_offset(uint32_t u)
{
	return (u >> 10) << ((u & (1U << 9)) >> 6);
}

static inline uint32_t
unit_label(uint32_t u)
{
	return u & ((1U << 31) | 0xFF);
}

static inline bool
unit_has_leaf(uint32_t u)
{
	return ((u >> 8) & 1) == 1;
}

static cq_code
check_base(const spm_ctx *c, const trie *t, size_t base)
{
	if ((base | 0xFF) < t->n)
		return CQ_OK;
	return cq_fail(c->err, CQ_EFORMAT, "%s.precompiled_charsmap: a trie node's children at unit %zu pass the end of its %zu units",
				   t->where, base & ~(size_t) 0xFF, t->n);
}

/* (3): the string a leaf's value selects. */
static cq_code
check_string(const spm_ctx *c, const trie *t, uint32_t value)
{
	const uint8_t *s = t->str + value;
	const uint8_t *nul;
	size_t		max;

	if (value >= t->str_len)
		return cq_fail(c->err, CQ_EFORMAT, "%s.precompiled_charsmap: a trie value (%u) points past its %zu bytes of strings",
					   t->where, value, t->str_len);
	max = t->str_len - value;
	if (max > CQ_SPM_MAX_NORMALIZED_BYTES + 1)
		max = CQ_SPM_MAX_NORMALIZED_BYTES + 1;
	nul = memchr(s, 0, max);
	if (nul == NULL)
		return cq_fail(c->err, CQ_EFORMAT, "%s.precompiled_charsmap: the string at %u is not NUL-terminated within %d bytes",
					   t->where, value, CQ_SPM_MAX_NORMALIZED_BYTES);
	if (!cq_utf8_valid(s, (size_t) (nul - s)))
		return cq_fail(c->err, CQ_EFORMAT, "%s.precompiled_charsmap: the string at %u is not valid UTF-8",
					   t->where, value);
	return CQ_OK;
}

typedef struct frame
{
	uint32_t	node;			/* the unit, or ROOT */
	size_t		base;
	unsigned	next;			/* the next byte to try */
	unsigned	leaves;			/* most leaves on a path below */
} frame;

/* A new node idx (unit u) below the top frame: checks (1)-(3), pushes it. */
static cq_code
enter_node(const spm_ctx *c, trie *t, frame *stack, int *depth, uint32_t idx, uint32_t u)
{
	size_t		base = idx ^ unit_offset(u);
	cq_code		rc;

	if ((rc = check_base(c, t, base)) != CQ_OK)
		return rc;
	if (unit_has_leaf(u) &&
		(rc = check_string(c, t, unit_at(t, base) & ((1U << 31) - 1))) != CQ_OK)
		return rc;
	if (*depth == CQ_SPM_MAX_TRIE_DEPTH)
		return cq_fail(c->err, CQ_EFORMAT, "%s.precompiled_charsmap: a trie key is longer than %d bytes",
					   t->where, CQ_SPM_MAX_TRIE_DEPTH);
	cq_poll();
	t->state[idx] = 1;
	stack[++*depth] = (frame) {idx, base, 0, 0};
	return CQ_OK;
}

/* The top frame is done: its result goes to its parent. */
static cq_code
leave_node(const spm_ctx *c, trie *t, frame *stack, int *depth)
{
	frame	   *f = &stack[*depth];
	unsigned	leaves = f->leaves;

	if (f->node != ROOT)
		leaves += unit_has_leaf(unit_at(t, f->node));
	if (leaves > CQ_SPM_MAX_TRIE_RESULTS)
		return cq_fail(c->err, CQ_EFORMAT, "%s.precompiled_charsmap: one input matches more than %d trie keys",
					   t->where, CQ_SPM_MAX_TRIE_RESULTS);
	if (f->node != ROOT)
		t->state[f->node] = (uint8_t) (2 + leaves);
	if (--*depth >= 0 && stack[*depth].leaves < leaves)
		stack[*depth].leaves = leaves;
	return CQ_OK;
}

static cq_code
walk_trie(const spm_ctx *c, trie *t)
{
	frame		stack[CQ_SPM_MAX_TRIE_DEPTH + 1];
	int			depth = 0;
	cq_code		rc;

	stack[0] = (frame) {ROOT, unit_offset(unit_at(t, 0)), 0, 0};
	if ((rc = check_base(c, t, stack[0].base)) != CQ_OK)
		return rc;
	while (depth >= 0)
	{
		frame	   *f = &stack[depth];
		uint32_t	k,
					idx,
					u;

		if (f->next == 256)
		{
			if ((rc = leave_node(c, t, stack, &depth)) != CQ_OK)
				return rc;
			continue;
		}
		k = f->next++;
		idx = (uint32_t) (f->base ^ k);
		u = unit_at(t, idx);
		if (unit_label(u) != k)
			continue;
		if (t->state[idx] == 1)
			return cq_fail(c->err, CQ_EFORMAT, "%s.precompiled_charsmap: the trie has a cycle (unit %u)",
						   t->where, (unsigned) idx);
		if (t->state[idx] >= 2)
		{
			if (f->leaves < (unsigned) t->state[idx] - 2)
				f->leaves = t->state[idx] - 2;
			continue;
		}
		if ((rc = enter_node(c, t, stack, &depth, idx, u)) != CQ_OK)
			return rc;
	}
	return CQ_OK;
}

/* One precompiled_charsmap (where: "normalizer_spec" or "denormalizer_spec"). */
static cq_code
check_charsmap(const spm_ctx *c, const uint8_t *blob, size_t len, const char *where)
{
	trie		t = {0};
	uint32_t	trie_bytes;
	cq_code		rc;

	if (len == 0)
		return CQ_OK;			/* no charsmap: the library builds no trie */
	if (len > CQ_SPM_MAX_CHARSMAP_BYTES)
		return cq_fail(c->err, CQ_EFORMAT, "%s.precompiled_charsmap is %zu bytes (at most %d)",
					   where, len, CQ_SPM_MAX_CHARSMAP_BYTES);
	if (len < 4)
		return cq_fail(c->err, CQ_EFORMAT, "%s.precompiled_charsmap is %zu bytes, shorter than its trie size field",
					   where, len);
	trie_bytes = cq_le_get_u32(blob);
	if (trie_bytes == 0 || trie_bytes % 4 != 0 || trie_bytes > len - 4)
		return cq_fail(c->err, CQ_EFORMAT, "%s.precompiled_charsmap: trie size %u is not a positive multiple of 4 within its %zu bytes",
					   where, trie_bytes, len - 4);
	t.units = blob + 4;
	t.n = trie_bytes / 4;
	t.str = blob + 4 + trie_bytes;
	t.str_len = len - 4 - trie_bytes;
	t.where = where;
	t.state = cq_alloc0(t.n);
	if (t.state == NULL)
		return cq_fail(c->err, CQ_ENOMEM, "out of memory checking a SentencePiece model");
	rc = walk_trie(c, &t);
	cq_free(t.state);
	return rc;
}

/* ---- the rest of ModelProto --------------------------------------------- */

/*
 * NormalizerSpec: precompiled_charsmap = 2 (bytes), the flags 3..5; name = 1
 * and normalization_rule_tsv = 6 are not read at load (only the trainer
 * compiles rules).  Each charsmap occurrence is checked: protobuf keeps the
 * last one, across merged occurrences of the spec too.
 */
static cq_code
spec_field(spm_ctx *c, const pb_field *f, void *arg)
{
	static const char *const flags[] = {"add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces"};
	const char *where = arg;
	cq_code		rc;

	if (f->num == 2)
	{
		if ((rc = want_wt(c, f, WT_LEN, where, "precompiled_charsmap")) != CQ_OK)
			return rc;
		return check_charsmap(c, f->data, f->len, where);
	}
	if (f->num == 1 || f->num == 6)
		return want_wt(c, f, WT_LEN, where, f->num == 1 ? "name" : "normalization_rule_tsv");
	if (f->num >= 3 && f->num <= 5)
		return want_wt(c, f, WT_VARINT, where, flags[f->num - 3]);
	return CQ_OK;
}

/* SelfTestData: samples = 1, each encoded when the library loads the model. */
static cq_code
self_test_field(spm_ctx *c, const pb_field *f, void *arg)
{
	cq_code		rc;

	if (f->num != 1)
		return CQ_OK;
	if ((rc = want_wt(c, f, WT_LEN, "self_test_data", "samples")) != CQ_OK)
		return rc;
	if (++c->n_samples > CQ_SPM_MAX_SELF_TESTS)
		return cq_fail(c->err, CQ_EFORMAT, "self_test_data has more than %d samples", CQ_SPM_MAX_SELF_TESTS);
	return CQ_OK;
}

static int
span_cmp(const void *a, const void *b)
{
	const span *x = a,
			   *y = b;
	int			r = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);

	return r ? r : (x->len > y->len) - (x->len < y->len);
}

/*
 * The most user-defined pieces that are prefixes of one input must fit the
 * prefix matcher's 64 results.  In sorted order the prefixes of a piece come
 * before it and every piece between a prefix and it shares that prefix, so
 * a stack of the current chain of prefixes gives each piece's count.
 */
static cq_code
check_user_nesting(spm_ctx *c)
{
	const span *chain[CQ_SPM_MAX_USER_NESTING];
	int			depth = 0;

	if (c->n_user == 0)
		return CQ_OK;
	qsort(c->user, c->n_user, sizeof(span), span_cmp);
	for (size_t i = 0; i < c->n_user; i++)
	{
		const span *s = &c->user[i];

		while (depth > 0 && (chain[depth - 1]->len > s->len ||
							 memcmp(chain[depth - 1]->s, s->s, chain[depth - 1]->len) != 0))
			depth--;
		if (depth == CQ_SPM_MAX_USER_NESTING)
			return cq_fail(c->err, CQ_EFORMAT, "more than %d user-defined pieces are prefixes of one another",
						   CQ_SPM_MAX_USER_NESTING);
		chain[depth++] = s;
	}
	return CQ_OK;
}

/* One field of ModelProto. */
static cq_code
model_field(spm_ctx *c, const pb_field *f, void *arg)
{
	static const char *const names[] = {"", "pieces", "trainer_spec", "normalizer_spec",
	"self_test_data", "denormalizer_spec"};
	cq_code		rc;

	if (f->num > 5)
		return CQ_OK;			/* unknown fields and extensions: kept, unread */
	if ((rc = want_wt(c, f, WT_LEN, "ModelProto", names[f->num])) != CQ_OK)
		return rc;
	switch (f->num)
	{
		case 1:
			if (c->n_pieces == CQ_SPM_MAX_PIECES)
				return cq_fail(c->err, CQ_EFORMAT, "the model has more than %d pieces", CQ_SPM_MAX_PIECES);
			return check_piece(c, f);
		case 2:
			return pb_each(c, f->data, f->len, "trainer_spec", trainer_field, NULL);
		case 3:
		case 5:
			return pb_each(c, f->data, f->len, names[f->num], spec_field, (void *) names[f->num]);
		default:
			return pb_each(c, f->data, f->len, "self_test_data", self_test_field, NULL);
	}
}

cq_code
cq_spm_check(const void *model, size_t len, cq_error *err)
{
	spm_ctx		c = {0};
	cq_code		rc;

	c.base = model;
	c.err = err;
	rc = pb_each(&c, model, len, "ModelProto", model_field, NULL);
	if (rc == CQ_OK && c.n_pieces == 0)
		rc = cq_fail(err, CQ_EFORMAT, "the model has no pieces");
	if (rc == CQ_OK)
		rc = check_user_nesting(&c);
	cq_free(c.user);
	return rc;
}
