/*
 * The ratio margin and the k-NN mean as SQL scalars (docs/embeddings.md):
 * the same definitions mine_vectors() uses (mine/mine.h), for pairs whose
 * neighbours come from elsewhere, such as pgvector's HNSW indexes.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"

#include "mine/mine.h"

PG_FUNCTION_INFO_V1(corpq_margin);

/* corpq.margin(cosine, src_knn_mean, tgt_knn_mean): NULL without a margin. */
Datum
corpq_margin(PG_FUNCTION_ARGS)
{
	double		m;

	if (!cq_mine_ratio_margin(PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1), PG_GETARG_FLOAT8(2), &m))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(m);
}

PG_FUNCTION_INFO_V1(corpq_knn_mean);

/*
 * corpq.knn_mean(cosines, k): the mean of the k largest cosines (all of them
 * when there are fewer); NULL elements are skipped, NULL when none is left.
 */
Datum
corpq_knn_mean(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	int			k = PG_GETARG_INT32(1);
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				kept = 0;
	double	   *v;

	if (k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 1, not %d", k)));
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("cosines must be a one-dimensional array")));
	deconstruct_array(a, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &n);
	v = palloc(sizeof(double) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			continue;
		v[kept] = DatumGetFloat8(elems[i]);
		if (isnan(v[kept]))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cosine %d is NaN", i + 1)));
		kept++;
	}
	if (kept == 0)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(cq_mine_knn_mean(v, kept, k));
}
