/* Helpers of the CAV unit tests (test_cav.h). */
#include "test_cav.h"
#include "unit.h"

#include "common/mem.h"

#include <stdlib.h>

uint64_t
tcav_rand(uint64_t *s)
{
	/* splitmix64 */
	uint64_t	z = (*s += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* Zipf-like: small ids far more frequent. */
static int
draw(uint64_t *s, int vocab)
{
	double		u = (tcav_rand(s) >> 11) * (1.0 / 9007199254740992.0);

	return (int) (vocab * u * u * u);
}

tcav_pair *
tcav_corpus(int n, uint64_t seed, int vocab)
{
	tcav_pair  *p = calloc(n, sizeof(tcav_pair));

	for (int i = 0; i < n; i++)
	{
		p[i].ns = (int) (tcav_rand(&seed) % 12);
		p[i].nt = 1 + (int) (tcav_rand(&seed) % 12);
		for (int k = 0; k < p[i].ns; k++)
			snprintf(p[i].src[k], 16, "%s%d", k % 3 ? "s" : "\xc3\xa9", draw(&seed, vocab));
		for (int k = 0; k < p[i].nt; k++)
			snprintf(p[i].tgt[k], 16, "%s%d", k % 4 ? "t" : "\xe2\x82\xac", draw(&seed, vocab));
	}
	return p;
}

cq_code
tcav_add(cav_state *st, const tcav_pair *p, int from, int to)
{
	for (int i = from; i < to; i++)
	{
		const char *s[TCAV_MAX_LEN],
				   *t[TCAV_MAX_LEN];
		size_t		sl[TCAV_MAX_LEN],
					tl[TCAV_MAX_LEN];
		cq_error	err;
		cq_code		rc;

		for (int k = 0; k < p[i].ns; k++)
			s[k] = p[i].src[k], sl[k] = strlen(s[k]);
		for (int k = 0; k < p[i].nt; k++)
			t[k] = p[i].tgt[k], tl[k] = strlen(t[k]);
		rc = cav_state_add(st, s, sl, p[i].ns, t, tl, p[i].nt, &err);
		if (rc)
			return rc;
	}
	return CQ_OK;
}

cav_state *
tcav_build(const tcav_pair *p, int from, int to, uint32_t l_max,
		   const char *const *targets, size_t n_targets)
{
	size_t		lens[64];
	cav_options opt = {.l_max = l_max, .targets = targets,
	.target_lens = lens, .n_targets = n_targets};
	cav_state  *st;
	cq_error	err;

	for (size_t i = 0; i < n_targets; i++)
		lens[i] = strlen(targets[i]);
	if (cav_state_new(&opt, 0, &st, &err) != CQ_OK)
	{
		fprintf(stderr, "cav_state_new: %s\n", err.msg);
		abort();
	}
	if (tcav_add(st, p, from, to) != CQ_OK)
		abort();
	return st;
}

uint8_t *
tcav_bytes(const cav_state *st, size_t *len)
{
	uint8_t    *b;
	cq_error	err;

	if (cav_serialize(st, 0, &b, len, &err) != CQ_OK)
	{
		fprintf(stderr, "cav_serialize: %s\n", err.msg);
		abort();
	}
	return b;
}

int64_t *
tcav_dense(const cav_view *v, uint32_t idx)
{
	size_t		rows = (size_t) v->n_src + v->n_tgt;
	int64_t    *d = calloc(rows * v->l_max, sizeof(int64_t));
	cav_entry_iter it;
	cav_entry	e;

	cav_entry_iter_init(v, idx, &it);
	while (cav_entry_iter_next(&it, &e))
		d[(size_t) e.row * v->l_max + e.dist] += e.count;
	return d;
}

long
tcav_row(const cav_view *v, int side, const char *s)
{
	for (uint32_t r = 0; r < v->n_src + v->n_tgt; r++)
	{
		int			sd;
		const char *str;
		size_t		len;

		cav_view_row(v, r, &sd, &str, &len);
		if (sd == side && len == strlen(s) && memcmp(str, s, len) == 0)
			return r;
	}
	return -1;
}
