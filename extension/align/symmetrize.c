#include "align/symmetrize.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int
cq_links_from_viterbi(const int32_t *a, int len, bool target_indexed,
					  cq_link *out)
{
	int			n = 0;

	for (int x = 0; x < len; x++)
		if (a[x] >= 0)
		{
			out[n].s = target_indexed ? a[x] : x;
			out[n].t = target_indexed ? x : a[x];
			n++;
		}
	return n;
}

size_t
cq_symmetrize_work_bytes(int n_src, int n_tgt)
{
	/* grids: forward, reverse, result, candidates; then the aligned flags */
	return 4 * (size_t) n_src * n_tgt + (size_t) n_src + n_tgt;
}

typedef struct grid
{
	int			ns,
				nt;
	uint8_t    *a,
			   *b,
			   *res,
			   *cand,
			   *s_al,
			   *t_al;
} grid;

static inline bool
at(const grid *g, const uint8_t *m, int s, int t)
{
	return s >= 0 && t >= 0 && s < g->ns && t < g->nt && m[(size_t) s * g->nt + t];
}

static void
add_link(grid *g, int s, int t)
{
	g->res[(size_t) s * g->nt + t] = 1;
	g->s_al[s] = 1;
	g->t_al[t] = 1;
}

static bool
neighbour_aligned(const grid *g, int s, int t)
{
	static const int d[8][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1},
	{1, 1}, {-1, 1}, {1, -1}, {-1, -1}};

	for (int k = 0; k < 8; k++)
		if (at(g, g->res, s + d[k][0], t + d[k][1]))
			return true;
	return false;
}

/* grow-diag: sweep the remaining union points until a sweep adds none. */
static void
grow_diag(grid *g)
{
	bool		added = true;

	for (size_t q = 0; q < (size_t) g->ns * g->nt; q++)
		g->cand[q] = (g->a[q] | g->b[q]) & !g->res[q];
	while (added)
	{
		added = false;
		for (int s = 0; s < g->ns; s++)
			for (int t = 0; t < g->nt; t++)
				if (g->cand[(size_t) s * g->nt + t] && !(g->s_al[s] && g->t_al[t]) &&
					neighbour_aligned(g, s, t))
				{
					add_link(g, s, t);
					g->cand[(size_t) s * g->nt + t] = 0;
					added = true;
				}
	}
}

/* final / final-and: one sweep over the points of one directional alignment. */
static void
final(grid *g, const uint8_t *m, bool both)
{
	for (int s = 0; s < g->ns; s++)
		for (int t = 0; t < g->nt; t++)
			if (m[(size_t) s * g->nt + t] && !g->res[(size_t) s * g->nt + t] &&
				(both ? !(g->s_al[s] || g->t_al[t]) : !(g->s_al[s] && g->t_al[t])))
				add_link(g, s, t);
}

static cq_code
fill(grid *g, uint8_t *m, const cq_link *l, int n, cq_error *err)
{
	for (int k = 0; k < n; k++)
	{
		if (l[k].s < 0 || l[k].t < 0 || l[k].s >= g->ns || l[k].t >= g->nt)
			return cq_fail(err, CQ_EINVAL, "link %d-%d outside a %d x %d pair",
								 l[k].s, l[k].t, g->ns, g->nt);
		m[(size_t) l[k].s * g->nt + l[k].t] = 1;
	}
	return CQ_OK;
}

cq_code
cq_symmetrize(cq_sym_mode mode, int n_src, int n_tgt,
			  const cq_link *fwd, int n_fwd, const cq_link *rev, int n_rev,
			  void *work, cq_link *out, int *n_out, cq_error *err)
{
	size_t		cells = (size_t) n_src * n_tgt;
	grid		g;
	int			n = 0;
	cq_code		rc;

	*n_out = 0;
	if (n_src < 0 || n_tgt < 0)
		return cq_fail(err, CQ_EINVAL, "negative sentence length");
	memset(work, 0, cq_symmetrize_work_bytes(n_src, n_tgt));
	g.ns = n_src;
	g.nt = n_tgt;
	g.a = work;
	g.b = g.a + cells;
	g.res = g.b + cells;
	g.cand = g.res + cells;
	g.s_al = g.cand + cells;
	g.t_al = g.s_al + n_src;
	if ((rc = fill(&g, g.a, fwd, n_fwd, err)) != CQ_OK ||
		(rc = fill(&g, g.b, rev, n_rev, err)) != CQ_OK)
		return rc;
	for (int s = 0; s < n_src; s++)
		for (int t = 0; t < n_tgt; t++)
		{
			size_t		q = (size_t) s * n_tgt + t;

			if (mode == CQ_SYM_UNION ? (g.a[q] | g.b[q]) : (g.a[q] & g.b[q]))
				add_link(&g, s, t);
		}
	if (mode >= CQ_SYM_GROW_DIAG)
		grow_diag(&g);
	if (mode >= CQ_SYM_GROW_DIAG_FINAL)
	{
		bool		both = mode == CQ_SYM_GROW_DIAG_FINAL_AND;

		final(&g, g.a, both);
		final(&g, g.b, both);
	}
	for (int s = 0; s < n_src; s++)
		for (int t = 0; t < n_tgt; t++)
			if (g.res[(size_t) s * n_tgt + t])
			{
				out[n].s = s;
				out[n].t = t;
				n++;
			}
	*n_out = n;
	return CQ_OK;
}

size_t
cq_links_format(const cq_link *links, int n, char *buf, size_t cap)
{
	size_t		len = 0;

	if (cap == 0)
		return 0;
	buf[0] = '\0';
	for (int k = 0; k < n; k++)
	{
		int			w = snprintf(buf + len, cap - len, "%s%d-%d", k ? " " : "",
								 links[k].s, links[k].t);

		if (w < 0 || (size_t) w >= cap - len)
		{
			buf[len] = '\0';
			break;
		}
		len += (size_t) w;
	}
	return len;
}
