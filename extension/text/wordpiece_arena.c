/*
 * A relocatable WordPiece segmenter (wordpiece.h: cq_wordpiece_arena_bytes,
 * cq_wordpiece_flatten, cq_wordpiece_attach): a ready model in one arena
 * whose references are offsets, so that every process mapping it (a shared
 * memory segment) segments with it in place.
 *
 * The arena, every section 8-byte aligned from its start:
 *   head      magic, format, this build's sizes, the total, the token map's
 *             sections (text/strmap_arena.h), the lines' section, the
 *             longest token, the options, the special tokens' offsets,
 *             lengths and CRC-32, and a CRC-32 of the head
 *   the map   slots, key offsets, lengths, hashes, keys (strmap_arena.h)
 *   lines     n_lines uint32: the map entry of line (id) i
 *   specials  each set special token's bytes and a NUL
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/crc32.h"
#include "text/strmap_arena.h"
#include "text/wordpiece_impl.h"

#define WPARENA_MAGIC UINT64_C(0x4e45524150575143)	/* "CQWPAREN" little-endian */
#define WPARENA_FORMAT 1

typedef struct wparena_head
{
	uint64_t	magic;
	uint32_t	format;
	uint32_t	head_size;		/* sizeof(wparena_head) of the writer */
	uint32_t	size_t_size;	/* sizeof(size_t) of the writer */
	uint32_t	head_crc;		/* CRC-32 of the head with this field 0 */
	uint64_t	total;			/* the arena's bytes */
	cq_strmap_arena map;		/* the distinct tokens */
	uint64_t	n_lines;
	uint64_t	lines_off;
	uint64_t	longest;
	uint32_t	lower_case,
				strip_accents,
				tokenize_chinese_chars,
				variant;
	int32_t		max_input_chars_per_word;
	uint32_t	special_set;	/* bit k: special k is set */
	uint32_t	special_crc;	/* CRC-32 of the set specials' bytes, in order */
	uint32_t	pad;
	uint64_t	special_off[CQ_WORDPIECE_N_SPECIAL];
	uint64_t	special_len[CQ_WORDPIECE_N_SPECIAL];
} wparena_head;

/* The head of wp's arena, with every offset and the total laid out. */
static wparena_head
layout(const cq_wordpiece *wp)
{
	wparena_head h;
	uint64_t	at;

	memset(&h, 0, sizeof(h));
	h.magic = WPARENA_MAGIC;
	h.format = WPARENA_FORMAT;
	h.head_size = sizeof(wparena_head);
	h.size_t_size = sizeof(size_t);
	at = cq_strmap_arena_layout(&wp->vocab, sizeof(wparena_head), &h.map);
	h.n_lines = wp->n_lines;
	h.lines_off = at;
	at = cq_arena_up8(at + h.n_lines * sizeof(uint32_t));
	h.longest = wp->longest;
	h.lower_case = wp->o.lower_case;
	h.strip_accents = wp->o.strip_accents;
	h.tokenize_chinese_chars = wp->o.tokenize_chinese_chars;
	h.variant = (uint32_t) wp->o.variant;
	h.max_input_chars_per_word = wp->o.max_input_chars_per_word;
	for (int k = 0; k < CQ_WORDPIECE_N_SPECIAL; k++)
	{
		if (wp->o.special[k] == NULL)
			continue;
		h.special_set |= 1u << k;
		h.special_off[k] = at;
		h.special_len[k] = strlen(wp->o.special[k]);
		at = cq_arena_up8(at + h.special_len[k] + 1);
	}
	h.total = at;
	return h;
}

/* The CRC-32 of the set special tokens' bytes at a, in order. */
static uint32_t
specials_crc(const unsigned char *a, const wparena_head *h)
{
	uint32_t	crc = 0;

	for (int k = 0; k < CQ_WORDPIECE_N_SPECIAL; k++)
		if (h->special_set & (1u << k))
			crc = cq_crc32(crc, a + h->special_off[k], (size_t) h->special_len[k]);
	return crc;
}

static uint32_t
head_crc(const wparena_head *h)
{
	wparena_head c = *h;

	c.head_crc = 0;
	return cq_crc32(0, &c, sizeof(c));
}

size_t
cq_wordpiece_arena_bytes(const cq_wordpiece *wp)
{
	return (size_t) layout(wp).total;
}

cq_code
cq_wordpiece_flatten(const cq_wordpiece *wp, void *dst, size_t size, cq_error *err)
{
	wparena_head h = layout(wp);
	unsigned char *a = dst;

	if (((uintptr_t) dst & 7) != 0)
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena must start on an 8-byte boundary");
	if (size < h.total)
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena needs %llu bytes, %zu given",
					   (unsigned long long) h.total, size);
	memset(a, 0, (size_t) h.total);
	cq_strmap_arena_write(&wp->vocab, &h.map, a);
	if (h.n_lines)
		memcpy(a + h.lines_off, wp->line, (size_t) h.n_lines * sizeof(uint32_t));
	for (int k = 0; k < CQ_WORDPIECE_N_SPECIAL; k++)
		if (h.special_set & (1u << k))
			memcpy(a + h.special_off[k], wp->o.special[k], (size_t) h.special_len[k]);
	h.special_crc = specials_crc(a, &h);
	h.head_crc = head_crc(&h);
	memcpy(a, &h, sizeof(h));
	return CQ_OK;
}

/* The head's own fields (not the map's) consistent with an arena of h->total bytes. */
static cq_code
check_head(const unsigned char *a, const wparena_head *h, const cq_strmap *map, cq_error *err)
{
	const uint32_t *lines;
	uint64_t	longest = 0;

	if (h->n_lines > CQ_WORDPIECE_MAX_TOKENS ||
		!cq_arena_section_ok(h->lines_off, h->n_lines * sizeof(uint32_t), h->total))
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena's lines do not fit it");
	lines = (const uint32_t *) (a + h->lines_off);
	for (uint64_t i = 0; i < h->n_lines; i++)
		if (lines[i] >= map->n)
			return cq_fail(err, CQ_EINVAL, "a WordPiece arena's line %llu names no token",
						   (unsigned long long) i + 1);
	for (size_t e = 0; e < map->n; e++)
		if (map->key_len[e] > longest)
			longest = map->key_len[e];
	if (h->longest != longest || longest > CQ_WORDPIECE_MAX_TOKEN_BYTES)
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena's longest token is %llu bytes, its head says %llu",
					   (unsigned long long) longest, (unsigned long long) h->longest);
	if (h->lower_case > 1 || h->strip_accents > 1 || h->tokenize_chinese_chars > 1 ||
		(h->special_set >> CQ_WORDPIECE_N_SPECIAL) != 0)
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena's options are damaged");
	for (int k = 0; k < CQ_WORDPIECE_N_SPECIAL; k++)
	{
		const char *s = (const char *) a + h->special_off[k];

		if (!(h->special_set & (1u << k)))
			continue;
		if (h->special_len[k] > CQ_WORDPIECE_MAX_TOKEN_BYTES ||
			!cq_arena_section_ok(h->special_off[k], h->special_len[k] + 1, h->total) ||
			s[h->special_len[k]] != '\0' || strlen(s) != h->special_len[k])
			return cq_fail(err, CQ_EINVAL, "a WordPiece arena's special token %d lies outside it", k);
	}
	if (specials_crc(a, h) != h->special_crc)
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena's special tokens are damaged (checksum)");
	return CQ_OK;
}

cq_code
cq_wordpiece_attach(const void *base, size_t bytes, cq_wordpiece **out, cq_error *err)
{
	const unsigned char *a = base;
	wparena_head h;
	cq_strmap	map;
	cq_wordpiece_options o;
	cq_wordpiece *wp;
	cq_error	why = {0};
	cq_code		rc;

	*out = NULL;
	if (((uintptr_t) base & 7) != 0)
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena must start on an 8-byte boundary");
	if (bytes < sizeof(h))
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena is truncated");
	memcpy(&h, a, sizeof(h));
	if (h.magic != WPARENA_MAGIC || h.format != WPARENA_FORMAT)
		return cq_fail(err, CQ_EINVAL, "not a WordPiece arena");
	if (h.head_size != sizeof(wparena_head) || h.size_t_size != sizeof(size_t) ||
		sizeof(size_t) != sizeof(uint64_t))
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena of another build");
	if (h.head_crc != head_crc(&h))
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena's head is damaged (checksum)");
	if (h.total > bytes)
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena is truncated (%llu bytes, %zu given)",
					   (unsigned long long) h.total, bytes);
	if ((rc = cq_strmap_arena_view(a, h.total, &h.map, "WordPiece", &map, err)) != CQ_OK ||
		(rc = check_head(a, &h, &map, err)) != CQ_OK)
		return rc;
	memset(&o, 0, sizeof(o));
	o.lower_case = h.lower_case;
	o.strip_accents = h.strip_accents;
	o.tokenize_chinese_chars = h.tokenize_chinese_chars;
	o.variant = (cq_wordpiece_variant) h.variant;
	o.max_input_chars_per_word = h.max_input_chars_per_word;
	for (int k = 0; k < CQ_WORDPIECE_N_SPECIAL; k++)
		o.special[k] = (h.special_set & (1u << k)) ? (const char *) a + h.special_off[k] : NULL;
	/* the options and special tokens checked as for a new model, copied into it */
	if ((rc = cq_wordpiece_new(&o, &wp, &why)) != CQ_OK)
		return cq_fail(err, rc, rc == CQ_ENOMEM ? "%s" : "a WordPiece arena's options are damaged: %s",
					   why.msg);
	cq_strmap_free(&wp->vocab);
	wp->vocab = map;
	wp->line = (uint32_t *) (a + h.lines_off);
	wp->n_lines = (size_t) h.n_lines;
	wp->cap_lines = 0;
	wp->longest = (size_t) h.longest;
	wp->attached = true;
	if ((rc = cq_wordpiece_ready(wp, err)) != CQ_OK)
	{
		cq_wordpiece_free(wp);
		return cq_fail(err, CQ_EINVAL, "a WordPiece arena's unknown token is not among its tokens");
	}
	*out = wp;
	return CQ_OK;
}
