#include "filters/dedup.h"

#include "common/mem.h"

#include <string.h>
#include <unicode/uchar.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>
#include <xxhash.h>

/* A growable UTF-16 buffer. */
typedef struct u16buf
{
	UChar	   *u;
	int32_t		len,
				cap;
} u16buf;

static bool
reserve(u16buf *b, int64_t extra)
{
	int64_t		need = (int64_t) b->len + extra;
	UChar	   *u;

	if (need <= b->cap)
		return true;
	if (need > INT32_MAX / 2)
		return false;
	need = need < 64 ? 64 : need * 2;
	u = cq_realloc(b->u, (size_t) need * sizeof(UChar));
	if (!u)
		return false;
	b->u = u;
	b->cap = (int32_t) need;
	return true;
}

/* Append the (letters-only) UTF-16 of t. */
static bool
append_text(u16buf *b, const cq_utext *t, bool letters_only)
{
	if (!reserve(b, 2 * (int64_t) t->n))
		return false;
	for (size_t i = 0; i < t->n; i++)
	{
		UChar32		c = t->cp[i];
		UBool		err = 0;

		if (letters_only && !(U_GET_GC_MASK(c) & U_GC_L_MASK))
			continue;
		U16_APPEND(b->u, b->len, b->cap, c, err);
		(void) err;				/* reserved above */
	}
	return true;
}

/* b[from..) lowercased in place (it may grow). */
static bool
lowercase_tail(u16buf *b, int32_t from)
{
	int32_t		n = b->len - from;
	UChar	   *src;
	UErrorCode	status = U_ZERO_ERROR;
	int32_t		out;

	if (n == 0)					/* nothing to lower (b->u may be NULL) */
		return true;
	src = cq_alloc((size_t) (n + 1) * sizeof(UChar));
	if (!src)
		return false;
	memcpy(src, b->u + from, (size_t) n * sizeof(UChar));
	out = u_strToLower(b->u + from, b->cap - from, src, n, "", &status);
	if (status == U_BUFFER_OVERFLOW_ERROR)
	{
		if (!reserve(b, out - n))
		{
			cq_free(src);
			return false;
		}
		status = U_ZERO_ERROR;
		out = u_strToLower(b->u + from, b->cap - from, src, n, "", &status);
	}
	cq_free(src);
	if (U_FAILURE(status))
		return false;
	b->len = from + out;
	return true;
}

/* Each '\n' in b[from..) becomes '\\' 'n'. */
static bool
escape_newlines(u16buf *b, int32_t from)
{
	int32_t		newlines = 0;

	for (int32_t i = from; i < b->len; i++)
		newlines += b->u[i] == '\n';
	if (newlines == 0)
		return true;
	if (!reserve(b, newlines))
		return false;
	for (int32_t i = b->len - 1, o = b->len + newlines - 1; i >= from; i--)
	{
		if (b->u[i] == '\n')
		{
			b->u[o--] = 'n';
			b->u[o--] = '\\';
		}
		else
			b->u[o--] = b->u[i];
	}
	b->len += newlines;
	return true;
}

static bool
append_segment(u16buf *b, const cq_utext *t, cq_dedup_mode mode)
{
	int32_t		from = b->len;

	if (!append_text(b, t, mode == CQ_DEDUP_LETTERS || mode == CQ_DEDUP_NEAR))
		return false;
	if ((mode == CQ_DEDUP_LOWERCASE || mode == CQ_DEDUP_NEAR) && !lowercase_tail(b, from))
		return false;
	return escape_newlines(b, from);
}

cq_code
cq_dedup_key(const cq_utext *src, const cq_utext *tgt, cq_dedup_mode mode,
			 cq_dedup_side side, int64_t *key, cq_error *err)
{
	u16buf		b = {0};
	uint8_t    *bytes;
	bool		ok = true;
	uint64_t	h;

	if (side != CQ_SIDE_TGT)
		ok = append_segment(&b, src, mode);
	if (ok && side == CQ_SIDE_BOTH)
		ok = reserve(&b, 1) && (b.u[b.len++] = '\n', true);
	if (ok && side != CQ_SIDE_SRC)
		ok = append_segment(&b, tgt, mode);
	if (!ok || !(bytes = cq_alloc((size_t) b.len * 2 + 1)))
	{
		cq_free(b.u);
		return cq_fail(err, CQ_ENOMEM, "out of memory normalising a pair for its duplicate key");
	}
	/* UTF-16LE whatever the host's byte order */
	for (int32_t i = 0; i < b.len; i++)
	{
		bytes[2 * i] = (uint8_t) (b.u[i] & 0xFF);
		bytes[2 * i + 1] = (uint8_t) (b.u[i] >> 8);
	}
	h = XXH64(bytes, (size_t) b.len * 2, 0);
	cq_free(bytes);
	cq_free(b.u);
	memcpy(key, &h, sizeof(h));
	return CQ_OK;
}

cq_code
cq_dedup_is_copy(const cq_utext *src, const cq_utext *tgt, bool *copy, cq_error *err)
{
	const cq_utext empty = {.s = "", .bytes = 0, .cp = NULL, .n = 0};
	int64_t		ks,
				kt,
				k0;
	cq_code		rc;

	if ((rc = cq_dedup_key(src, NULL, CQ_DEDUP_NEAR, CQ_SIDE_SRC, &ks, err)) != CQ_OK ||
		(rc = cq_dedup_key(NULL, tgt, CQ_DEDUP_NEAR, CQ_SIDE_TGT, &kt, err)) != CQ_OK ||
		(rc = cq_dedup_key(&empty, NULL, CQ_DEDUP_NEAR, CQ_SIDE_SRC, &k0, err)) != CQ_OK)
		return rc;
	*copy = ks == kt && ks != k0;
	return CQ_OK;
}
