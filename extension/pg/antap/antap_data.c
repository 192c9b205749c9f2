/*
 * The ANTAP job's data: the cavs query (token, cav) and the accuracy query
 * (token, accuracy), each streamed through base/corpus_query.h, sorted by
 * token bytes and merged.  A token needs both a CAV with a matrix for it and
 * a non-NULL accuracy; the others are counted, not kept.  The pooled input
 * is computed while reading, so no CAV value outlives its batch (except the
 * one cached copy of a stored value, antap_input.c).
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "pg/antap/antap.h"
#include "pg/base/corpus_query.h"

#define BATCH_ROWS 500

static const CorpqColumn cav_columns[] = {
	{"token", CORPQ_COLUMN_TEXT}, {"cav", CORPQ_COLUMN_NAMED, "corpq.cav"}
};
static const CorpqQuerySpec cav_spec = {
	.what = "cavs", .columns = cav_columns, .min_columns = 2, .max_columns = 2,
	.example = "SELECT t.token, c.cav FROM my_cavs c, corpq.cav_tokens(c.cav) t",
	.need_rows = true
};

static const CorpqColumn accuracy_columns[] = {
	{"token", CORPQ_COLUMN_TEXT}, {"accuracy", CORPQ_COLUMN_NUMBER}
};
static const CorpqQuerySpec accuracy_spec = {
	.what = "accuracy", .columns = accuracy_columns, .min_columns = 2, .max_columns = 2,
	.example = "SELECT h.token, avg(h.hit::int) FROM my_pairs p, corpq.token_hits('my_model', p.src, p.tgt) h GROUP BY h.token",
	.need_rows = true
};

void
antap_check_queries(const char *cavs, const char *accuracy)
{
	(void) corpq_query_check(cavs, &cav_spec);
	(void) corpq_query_check(accuracy, &accuracy_spec);
}

/* One row of either query, kept in the job's context. */
typedef struct Row
{
	char	   *token;			/* NUL-terminated copy */
	int			len;
	bool		has;			/* a CAV matrix / a non-NULL accuracy */
	int64		grid;			/* cavs: index of its input in the grids */
	double		accuracy;
} Row;

typedef struct Reader
{
	CorpqJob   *job;
	const char *phase;
	MemoryContext cxt;
	Row		   *rows;
	int64		n,
				cap;
	int64		null_tokens;
	/* cavs only */
	AntapCavCache cache;
	int			pool_rows,
				pool_cols;
	float	   *grids;
	int64		n_grids,
				cap_grids;
} Reader;

static Row *
next_row(Reader *r, const char *token, int len)
{
	Row		   *row;

	if (r->n == r->cap)
	{
		r->cap = Max(1024, r->cap * 2);
		r->rows = r->rows ? repalloc_huge(r->rows, sizeof(Row) * r->cap)
			: MemoryContextAllocHuge(r->cxt, sizeof(Row) * r->cap);
	}
	row = &r->rows[r->n++];
	memset(row, 0, sizeof(*row));
	row->token = MemoryContextAllocHuge(r->cxt, len + 1);
	memcpy(row->token, token, len);
	row->token[len] = '\0';
	row->len = len;
	row->grid = -1;
	return row;
}

/* Room for one more input grid; returns it. */
static float *
next_grid(Reader *r)
{
	int64		cells = (int64) r->pool_rows * r->pool_cols;

	if (r->n_grids == r->cap_grids)
	{
		r->cap_grids = Max(256, r->cap_grids * 2);
		r->grids = r->grids ? repalloc_huge(r->grids, sizeof(float) * cells * r->cap_grids)
			: MemoryContextAllocHuge(r->cxt, sizeof(float) * cells * r->cap_grids);
	}
	return r->grids + r->n_grids * cells;
}

static void
read_cavs(void *arg, const CorpqBatch *b)
{
	Reader	   *r = arg;

	for (uint64 i = 0; i < b->n; i++)
	{
		const char *tok;
		int			len;
		Datum		cav;
		Row		   *row;

		if (!corpq_batch_text(b, i, 1, &tok, &len))
		{
			r->null_tokens++;
			continue;
		}
		row = next_row(r, tok, len);
		if (corpq_batch_datum(b, i, 2, &cav) &&
			antap_cav_input(&r->cache, cav, tok, len, r->pool_rows, r->pool_cols, next_grid(r)))
		{
			row->has = true;
			row->grid = r->n_grids++;
		}
		if ((i & 63) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	corpq_job_progress(r->job, r->phase, (double) (b->first + b->n), 0, "rows", NULL, false);
}

static void
read_accuracy(void *arg, const CorpqBatch *b)
{
	Reader	   *r = arg;

	for (uint64 i = 0; i < b->n; i++)
	{
		const char *tok;
		int			len;
		Row		   *row;

		if (!corpq_batch_text(b, i, 1, &tok, &len))
		{
			r->null_tokens++;
			continue;
		}
		row = next_row(r, tok, len);
		row->has = corpq_batch_float8(b, i, 2, &row->accuracy);
		if (row->has && isnan(row->accuracy))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("accuracy of token \"%s\" is NaN", row->token),
					 errhint("Give every token a number, or NULL to leave it out.")));
		if (row->has && isinf(row->accuracy))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("accuracy of token \"%s\" is infinite", row->token),
					 errhint("Give every token a number, or NULL to leave it out.")));
	}
	corpq_job_progress(r->job, r->phase, (double) (b->first + b->n), 0, "rows", NULL, false);
}

/* Byte order of the token strings, as the CAV orders its dictionaries. */
static int
by_token(const void *a, const void *b)
{
	const Row  *x = a,
			   *y = b;
	int			c = memcmp(x->token, y->token, Min(x->len, y->len));

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

static void
sort_unique(Reader *r, const char *what)
{
	qsort(r->rows, r->n, sizeof(Row), by_token);
	for (int64 i = 1; i < r->n; i++)
		if (by_token(&r->rows[i - 1], &r->rows[i]) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("token \"%s\" appears twice in the %s query", r->rows[i].token, what),
					 errhint("Return each token once (GROUP BY token).")));
}

/* Merge the two sorted lists; fills d (inputs, targets, counts). */
static void
merge(Reader *cv, Reader *ac, AntapData *d, int64 cells, MemoryContext cxt)
{
	int64		i = 0,
				j = 0,
				n = 0;

	d->tokens = MemoryContextAllocHuge(cxt, sizeof(char *) * Max(1, Min(cv->n, ac->n)));
	d->accuracy = MemoryContextAllocHuge(cxt, sizeof(double) * Max(1, Min(cv->n, ac->n)));
	d->x = MemoryContextAllocHuge(cxt, sizeof(float) * cells * Max(1, Min(cv->n, ac->n)));
	while (i < cv->n || j < ac->n)
	{
		int			c = i == cv->n ? 1 : j == ac->n ? -1 : by_token(&cv->rows[i], &ac->rows[j]);
		bool		has_cav = c <= 0 && cv->rows[i].has,
					has_acc = c >= 0 && ac->rows[j].has;

		if (has_cav && has_acc)
		{
			d->tokens[n] = cv->rows[i].token;
			d->accuracy[n] = ac->rows[j].accuracy;
			memcpy(d->x + n * cells, cv->grids + cv->rows[i].grid * cells, sizeof(float) * cells);
			n++;
		}
		else
		{
			d->skipped++;
			d->without_cav += !has_cav;
			d->without_accuracy += !has_acc;
		}
		i += c <= 0;
		j += c >= 0;
	}
	d->n = (int) n;
	d->y = MemoryContextAllocHuge(cxt, sizeof(float) * Max(1, n));
	for (int64 k = 0; k < n; k++)
		d->y[k] = (float) d->accuracy[k];
}

void
antap_read_data(CorpqJob *job, const char *cavs, const char *accuracy,
				const cq_antap_config *cfg, AntapData *d, MemoryContext cxt)
{
	Reader		cv = {0},
				ac = {0};
	int64		cells = (int64) cfg->pool_rows * cfg->pool_cols;

	memset(d, 0, sizeof(*d));
	cv.job = ac.job = job;
	cv.cxt = ac.cxt = cxt;
	cv.phase = "reading cavs";
	ac.phase = "reading accuracy";
	cv.pool_rows = cfg->pool_rows;
	cv.pool_cols = cfg->pool_cols;
	antap_cav_cache_init(&cv.cache, cxt);
	d->cav_rows = corpq_query_stream(cavs, &cav_spec, BATCH_ROWS, read_cavs, &cv);
	MemoryContextDelete(cv.cache.cxt);
	d->accuracy_rows = corpq_query_stream(accuracy, &accuracy_spec, BATCH_ROWS, read_accuracy, &ac);
	sort_unique(&cv, "cavs");
	sort_unique(&ac, "accuracy");
	merge(&cv, &ac, d, cells, cxt);
	d->null_tokens = cv.null_tokens + ac.null_tokens;
	if (cv.grids)
		pfree(cv.grids);
	if (d->n < CQ_ANTAP_MIN_TOKENS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ANTAP needs at least %d tokens with both a CAV and an accuracy, the queries give %d",
						CQ_ANTAP_MIN_TOKENS, d->n),
				 errdetail("Skipped: " INT64_FORMAT " tokens without a CAV matrix, " INT64_FORMAT " without an accuracy.",
						   d->without_cav, d->without_accuracy),
				 errhint("A token has a CAV when the cav value of its row has a matrix for it (corpq.cav_tokens).")));
}
