/*
 * Analysis functions over a corpq.cav: cav_tokens, cav_entries, cav_cosine,
 * cav_similar, cav_pool.  Each validates its cav argument once and then
 * reads the canonical bytes in place (cav_view.h); nothing is rebuilt.
 *
 * A token without a matrix (never seen on the target side, or outside the
 * restricted targets) gives NULL from the scalar functions and no rows from
 * the set-returning ones.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "pg/cav/cav.h"

PG_FUNCTION_INFO_V1(corpq_cav_tokens);
PG_FUNCTION_INFO_V1(corpq_cav_entries);
PG_FUNCTION_INFO_V1(corpq_cav_cosine);
PG_FUNCTION_INFO_V1(corpq_cav_similar);
PG_FUNCTION_INFO_V1(corpq_cav_pool);

/* Matrix index of the token in argument argno; false if it has none. */
static bool
find_token(FunctionCallInfo fcinfo, int argno, const cav_view *v, uint32 *idx)
{
	text	   *t = PG_GETARG_TEXT_PP(argno);

	return cav_view_find(v, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), idx, NULL) == CQ_OK;
}

static text *
token_text(const char *s, size_t len)
{
	return cstring_to_text_with_len(s, (int) len);
}

/* corpq.cav_tokens(cav) -> (token, occurrences, nonzeros), tokens in byte order */
Datum
corpq_cav_tokens(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	cav_view	v;

	cavsql_open_arg(fcinfo, 0, &v);
	InitMaterializedSRF(fcinfo, 0);
	for (uint32 i = 0; i < v.n_mat; i++)
	{
		cav_token_info t;
		Datum		values[3];
		bool		nulls[3] = {0};

		CHECK_FOR_INTERRUPTS();
		cav_view_token(&v, i, &t);
		values[0] = PointerGetDatum(token_text(t.str, t.len));
		values[1] = Int64GetDatum((int64) t.occurrences);
		values[2] = Int32GetDatum((int32) t.nnz);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * corpq.cav_entries(cav, token) -> (side, feature, distance, count): the
 * nonzero cells of the token's matrix in (row, distance) order.
 */
Datum
corpq_cav_entries(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	cav_view	v;
	uint32		idx;
	cav_entry_iter it;
	cav_entry	e;

	cavsql_open_arg(fcinfo, 0, &v);
	InitMaterializedSRF(fcinfo, 0);
	if (!find_token(fcinfo, 1, &v, &idx))
		return (Datum) 0;
	cav_entry_iter_init(&v, idx, &it);
	while (cav_entry_iter_next(&it, &e))
	{
		Datum		values[4];
		bool		nulls[4] = {0};
		int			side;
		const char *s;
		size_t		len;

		CHECK_FOR_INTERRUPTS();
		cav_view_row(&v, e.row, &side, &s, &len);
		values[0] = CStringGetTextDatum(side == 0 ? "source" : "target");
		values[1] = PointerGetDatum(token_text(s, len));
		values[2] = Int32GetDatum((int32) e.dist);
		values[3] = Int64GetDatum(e.count);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* corpq.cav_cosine(cav, a, b) -> cosine of the two flattened matrices */
Datum
corpq_cav_cosine(PG_FUNCTION_ARGS)
{
	cav_view	v;
	uint32		a,
				b;

	cavsql_open_arg(fcinfo, 0, &v);
	if (!find_token(fcinfo, 1, &v, &a) || !find_token(fcinfo, 2, &v, &b))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(cav_view_cosine(&v, a, b));
}

/* corpq.cav_similar(cav, token, k) -> the k most similar tokens by cosine */
Datum
corpq_cav_similar(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int32		k = PG_GETARG_INT32(2);
	cav_view	v;
	uint32		q,
				n,
				cap;
	uint32	   *idx;
	double	   *sim;
	cq_error	err = {0};

	if (k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 1")));
	cavsql_open_arg(fcinfo, 0, &v);
	InitMaterializedSRF(fcinfo, 0);
	if (!find_token(fcinfo, 1, &v, &q))
		return (Datum) 0;
	cap = Min((uint32) k, v.n_mat);
	idx = palloc(cap * sizeof(uint32));
	sim = palloc(cap * sizeof(double));
	if (cav_view_topk(&v, q, cap, idx, sim, &n, &err) != CQ_OK)
		corpq_core_error(&err, cavsql_hint(&err), "could not rank similar tokens");
	for (uint32 i = 0; i < n; i++)
	{
		cav_token_info t;
		Datum		values[2];
		bool		nulls[2] = {0};

		cav_view_token(&v, idx[i], &t);
		values[0] = PointerGetDatum(token_text(t.str, t.len));
		values[1] = Float8GetDatum(sim[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * corpq.cav_pool(cav, token, rows, cols, layer_norm) -> float4[rows][cols]:
 * adaptive average pooling (PyTorch's bins) of the dense (n_src + n_tgt) x
 * l_max matrix, computed sparsely; with layer_norm, of the matrix normalised
 * as ANTAP's input pipeline does (cav_view_pool_layer_norm).
 */
Datum
corpq_cav_pool(PG_FUNCTION_ARGS)
{
	int32		rows = PG_GETARG_INT32(2);
	int32		cols = PG_GETARG_INT32(3);
	bool		layer_norm = PG_GETARG_BOOL(4);
	cav_view	v;
	uint32		idx;
	double	   *out;
	Datum	   *d;
	int			dims[2],
				lbs[2] = {1, 1};
	size_t		n;
	cq_error	err = {0};

	if (rows < 1 || cols < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rows and cols must be at least 1")));
	n = (size_t) rows * cols;
	if (n > MaxAllocSize / sizeof(double) || n > MaxArraySize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("pooled matrix of %d x %d cells is too large", rows, cols)));
	cavsql_open_arg(fcinfo, 0, &v);
	if (!find_token(fcinfo, 1, &v, &idx))
		PG_RETURN_NULL();
	out = palloc(n * sizeof(double));
	if ((layer_norm ? cav_view_pool_layer_norm(&v, idx, (uint32) rows, (uint32) cols,
											   CAV_LAYER_NORM_EPS, out, &err)
		 : cav_view_pool(&v, idx, (uint32) rows, (uint32) cols, out, &err)) != CQ_OK)
		corpq_core_error(&err, cavsql_hint(&err), "could not pool the CAV matrix");
	d = palloc(n * sizeof(Datum));
	for (size_t i = 0; i < n; i++)
		d[i] = Float4GetDatum((float4) out[i]);
	dims[0] = rows;
	dims[1] = cols;
	PG_RETURN_ARRAYTYPE_P(construct_md_array(d, NULL, 2, dims, lbs, FLOAT4OID,
											 sizeof(float4), true,
											 TYPALIGN_INT));
}
