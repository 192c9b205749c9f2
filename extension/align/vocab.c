#include "align/vocab.h"

#include <string.h>

#include "common/mem.h"

struct cq_vocab
{
	char	   *arena;			/* NUL-terminated tokens back to back */
	size_t		arena_len,
				arena_cap;
	size_t	   *word_at;		/* [size] arena offset of each id */
	int32_t		size,
				ids_cap;
	int32_t    *slot;			/* [n_slots] id or -1 */
	size_t		n_slots;		/* power of two */
};

static uint64_t
hash_bytes(const char *s, size_t len)
{
	uint64_t	h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t) s[i]) * 1099511628211ULL;
	return h;
}

cq_code
cq_vocab_create(cq_vocab **out, cq_error *err)
{
	cq_vocab   *v = cq_alloc0(sizeof(*v));

	*out = NULL;
	if (v)
	{
		v->n_slots = 1024;
		v->slot = cq_alloc(v->n_slots * sizeof(int32_t));
		if (v->slot)
		{
			memset(v->slot, 0xff, v->n_slots * sizeof(int32_t));
			*out = v;
			return CQ_OK;
		}
		cq_free(v);
	}
	return cq_fail(err, CQ_ENOMEM, "out of memory creating a vocabulary");
}

static size_t
find_slot(const cq_vocab *v, const char *s, size_t len)
{
	size_t		mask = v->n_slots - 1;
	size_t		i = hash_bytes(s, len) & mask;

	while (v->slot[i] >= 0)
	{
		const char *w = v->arena + v->word_at[v->slot[i]];

		if (strncmp(w, s, len) == 0 && w[len] == '\0')
			break;
		i = (i + 1) & mask;
	}
	return i;
}

int32_t
cq_vocab_lookup(const cq_vocab *v, const char *s, size_t len)
{
	return v->slot[find_slot(v, s, len)];
}

static bool
grow_slots(cq_vocab *v)
{
	size_t		n = v->n_slots * 2;
	int32_t    *ns = cq_alloc(n * sizeof(int32_t));

	if (!ns)
		return false;
	memset(ns, 0xff, n * sizeof(int32_t));
	cq_free(v->slot);
	v->slot = ns;
	v->n_slots = n;
	for (int32_t id = 0; id < v->size; id++)
	{
		const char *w = v->arena + v->word_at[id];

		v->slot[find_slot(v, w, strlen(w))] = id;
	}
	return true;
}

cq_code
cq_vocab_intern(cq_vocab *v, const char *s, size_t len, int32_t *id, cq_error *err)
{
	size_t		i = find_slot(v, s, len);

	if (v->slot[i] >= 0)
	{
		*id = v->slot[i];
		return CQ_OK;
	}
	if (v->size == INT32_MAX - 2)
		return cq_fail(err, CQ_ELIMIT, "more than %d distinct tokens", INT32_MAX - 2);
	if (v->arena_len + len + 1 > v->arena_cap)
	{
		size_t		cap = 2 * (v->arena_cap + len + 1) + 4096;
		char	   *na = cq_realloc(v->arena, cap);

		if (!na)
			return cq_fail(err, CQ_ENOMEM, "out of memory interning tokens");
		v->arena = na;
		v->arena_cap = cap;
	}
	if (v->size == v->ids_cap)
	{
		int32_t		cap = v->ids_cap ? 2 * v->ids_cap : 1024;
		size_t	   *nw = cq_realloc(v->word_at, (size_t) cap * sizeof(size_t));

		if (!nw)
			return cq_fail(err, CQ_ENOMEM, "out of memory interning tokens");
		v->word_at = nw;
		v->ids_cap = cap;
	}
	memcpy(v->arena + v->arena_len, s, len);
	v->arena[v->arena_len + len] = '\0';
	v->word_at[v->size] = v->arena_len;
	v->arena_len += len + 1;
	v->slot[i] = v->size++;
	/* keep the load factor under one half */
	if ((size_t) v->size * 2 > v->n_slots && !grow_slots(v))
		return cq_fail(err, CQ_ENOMEM, "out of memory interning tokens");
	*id = v->size - 1;
	return CQ_OK;
}

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

cq_code
cq_vocab_intern_line(cq_vocab *v, const char *line, size_t len, int32_t *ids,
					 int cap, int *n, cq_error *err)
{
	size_t		p = 0;

	*n = 0;
	while (p < len)
	{
		size_t		start;
		cq_code		rc;

		while (p < len && is_space(line[p]))
			p++;
		if (p == len)
			break;
		start = p;
		while (p < len && !is_space(line[p]))
			p++;
		if (*n == cap)
			return cq_fail(err, CQ_ELIMIT, "the line has more than %d tokens", cap);
		rc = cq_vocab_intern(v, line + start, p - start, &ids[*n], err);
		if (rc != CQ_OK)
			return rc;
		(*n)++;
	}
	return CQ_OK;
}

int32_t
cq_vocab_size(const cq_vocab *v)
{
	return v->size;
}

const char *
cq_vocab_word(const cq_vocab *v, int32_t id)
{
	return (id >= 0 && id < v->size) ? v->arena + v->word_at[id] : NULL;
}

void
cq_vocab_free(cq_vocab *v)
{
	if (!v)
		return;
	cq_free(v->arena);
	cq_free(v->word_at);
	cq_free(v->slot);
	cq_free(v);
}
