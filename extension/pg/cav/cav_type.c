/*
 * The corpq.cav type: I/O, validation, bytea and jsonb conversions.
 *
 * The payload is the core's canonical layout (extension/cav/FORMAT.md).
 * Bytes entering from outside (binary recv, bytea, hex literal) and every
 * cav argument read by a function go through the core's full validator, so
 * no reader ever walks unchecked offsets.
 *
 * Text form: the hex form of the canonical bytes ('\x4351...', like bytea),
 * so that pg_dump and COPY round-trip a cav column; cav_in validates it.
 * corpq.cav_summary(v) is the human-readable one-line summary.
 */
#include "postgres.h"

#include "access/detoast.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "cav/view_impl.h"
#include "pg/cav/cav.h"

PG_FUNCTION_INFO_V1(corpq_cav_in);
PG_FUNCTION_INFO_V1(corpq_cav_out);
PG_FUNCTION_INFO_V1(corpq_cav_recv);
PG_FUNCTION_INFO_V1(corpq_cav_send);
PG_FUNCTION_INFO_V1(corpq_cav_from_bytea);
PG_FUNCTION_INFO_V1(corpq_cav_to_bytea);
PG_FUNCTION_INFO_V1(corpq_cav_to_jsonb);
PG_FUNCTION_INFO_V1(corpq_cav_stats);
PG_FUNCTION_INFO_V1(corpq_cav_summary);

size_t
cavsql_byte_limit(void)
{
	return (size_t) work_mem * 1024 * CAV_WORK_MEM_FACTOR;
}

const char *
cavsql_hint(const cq_error *err)
{
	if (err->code == CQ_ELIMIT)
		return "Raise work_mem (a CAV state may hold work_mem x " CppAsString2(CAV_WORK_MEM_FACTOR)
			" bytes), lower l_max, restrict the targets, or aggregate smaller groups.";
	if (err->code == CQ_EMISMATCH)
		return "Only CAVs built with the same l_max and the same restricted targets can be combined.";
	return NULL;
}

static void
open_bytes(const struct varlena *p, cav_view *v)
{
	cq_error	err = {0};

	if (cav_view_open(VARDATA_ANY(p), VARSIZE_ANY_EXHDR(p), v, &err) != CQ_OK)
	{
		/* it passed the validator when it entered: now it is corrupted */
		err.code = CQ_ECORRUPT;
		corpq_core_error(&err, NULL, "invalid corpq.cav value");
	}
}

void
cavsql_cache_init(CavValueCache *c, MemoryContext parent)
{
	memset(c, 0, sizeof(*c));
	c->cxt = AllocSetContextCreate(parent, "corpq cav value", ALLOCSET_DEFAULT_SIZES);
}

const cav_view *
cavsql_cached_view(CavValueCache *c, Datum d, cav_view *scratch)
{
	struct varlena *raw = (struct varlena *) DatumGetPointer(d);
	struct varatt_external ext;
	MemoryContext old;

	if (!VARATT_IS_EXTERNAL_ONDISK(raw))
	{
		open_bytes(pg_detoast_datum_packed(raw), scratch);
		return scratch;
	}
	VARATT_EXTERNAL_GET_POINTER(ext, raw);
	if (c->valid && c->toastrelid == ext.va_toastrelid && c->valueid == ext.va_valueid)
		return &c->view;
	MemoryContextReset(c->cxt);
	c->valid = false;
	old = MemoryContextSwitchTo(c->cxt);
	c->copy = detoast_attr(raw);
	MemoryContextSwitchTo(old);
	open_bytes(c->copy, &c->view);
	c->toastrelid = ext.va_toastrelid;
	c->valueid = ext.va_valueid;
	c->valid = true;
	return &c->view;
}

#define CAV_CACHED_ARGS 2

void
cavsql_open_arg(FunctionCallInfo fcinfo, int argno, cav_view *v)
{
	CavValueCache *c = fcinfo->flinfo->fn_extra;

	if (argno >= CAV_CACHED_ARGS)
	{
		open_bytes(PG_DETOAST_DATUM_PACKED(PG_GETARG_DATUM(argno)), v);
		return;
	}
	if (c == NULL)
	{
		c = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(CavValueCache) * CAV_CACHED_ARGS);
		for (int i = 0; i < CAV_CACHED_ARGS; i++)
			cavsql_cache_init(&c[i], fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = c;
	}
	*v = *cavsql_cached_view(&c[argno], PG_GETARG_DATUM(argno), v);
}

void
cavsql_check_bytes(const void *buf, size_t len, const char *source)
{
	cq_error	err = {0};

	if (cav_validate(buf, len, &err) != CQ_OK)
		corpq_core_error(&err, "A corpq.cav is the canonical CAV layout written by corpq (extension/cav/FORMAT.md).",
						 "invalid corpq.cav %s", source);
}

struct varlena *
cavsql_make_varlena(const void *buf, size_t len)
{
	struct varlena *r = palloc(VARHDRSZ + len);

	memcpy(VARDATA(r), buf, len);
	SET_VARSIZE(r, VARHDRSZ + len);
	return r;
}

/* corpq.cav_in(cstring): only the hex form of the canonical bytes */
Datum
corpq_cav_in(PG_FUNCTION_ARGS)
{
	char	   *s = PG_GETARG_CSTRING(0);
	bytea	   *b;

	if (s[0] != '\\' || s[1] != 'x')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type corpq.cav"),
				 errdetail("A cav is written as the hex form of its canonical bytes, as it prints ('\\x4351...')."),
				 errhint("Use corpq.cav_from_bytea(bytea) for raw bytes, and corpq.cav_summary(cav) to read a summary.")));
	b = DatumGetByteaPP(DirectFunctionCall1(byteain, CStringGetDatum(s)));
	cavsql_check_bytes(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), "text input");
	PG_RETURN_POINTER(cavsql_make_varlena(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b)));
}

static uint64
total_nnz(const cav_view *v)
{
	uint64		nnz = 0;

	for (uint32 i = 0; i < v->n_mat; i++)
		nnz += cq_le_get_u32(cav_view_rec(v, i) + CAV_REC_NNZ);
	return nnz;
}

/*
 * corpq.cav_out(cav): the canonical bytes in hex ('\x...'), whatever
 * bytea_output says, so that the text form always reads back
 */
Datum
corpq_cav_out(PG_FUNCTION_ARGS)
{
	cav_view	v;
	char	   *out;
	uint64		n;

	cavsql_open_arg(fcinfo, 0, &v);
	out = palloc_extended(v.len * 2 + 3, MCXT_ALLOC_HUGE);
	out[0] = '\\';
	out[1] = 'x';
	n = hex_encode((const char *) v.buf, v.len, out + 2);
	out[2 + n] = '\0';
	PG_RETURN_CSTRING(out);
}

/* corpq.cav_summary(cav): a one-line human-readable summary */
Datum
corpq_cav_summary(PG_FUNCTION_ARGS)
{
	cav_view	v;

	cavsql_open_arg(fcinfo, 0, &v);
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("CAV pairs=" UINT64_FORMAT " l_max=%u source_tokens=%u target_tokens=%u restricted=%u matrices=%u nonzeros=" UINT64_FORMAT " bytes=%zu",
							   (uint64) v.n_pairs, v.l_max, v.n_src, v.n_tgt,
							   v.n_restrict, v.n_mat, total_nnz(&v), v.len)));
}

/* corpq.cav_recv(internal): the canonical bytes, validated */
Datum
corpq_cav_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	const char *p = buf->data + buf->cursor;
	size_t		len = buf->len - buf->cursor;

	cavsql_check_bytes(p, len, "binary input");
	buf->cursor = buf->len;
	PG_RETURN_POINTER(cavsql_make_varlena(p, len));
}

/* corpq.cav_send(cav): the canonical bytes */
Datum
corpq_cav_send(PG_FUNCTION_ARGS)
{
	cav_view	v;

	cavsql_open_arg(fcinfo, 0, &v);
	PG_RETURN_BYTEA_P(cavsql_make_varlena(v.buf, v.len));
}

/* corpq.cav_from_bytea(bytea): validate canonical bytes */
Datum
corpq_cav_from_bytea(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);

	cavsql_check_bytes(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), "bytea");
	PG_RETURN_POINTER(cavsql_make_varlena(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b)));
}

/* corpq.cav_to_bytea(cav): the canonical bytes */
Datum
corpq_cav_to_bytea(PG_FUNCTION_ARGS)
{
	return corpq_cav_send(fcinfo);
}

static void
json_token(StringInfo out, const char *s, size_t len)
{
	char	   *z = pnstrdup(s, len);

	escape_json(out, z);
	pfree(z);
}

/* A JSON array of the n strings of a dictionary section. */
static void
json_dict(StringInfo out, const cav_view *v, size_t pos, uint32 n)
{
	appendStringInfoChar(out, '[');
	for (uint32 i = 0; i < n; i++)
	{
		size_t		len;
		const char *s = cav_section_str(v->buf, pos, n, i, &len);

		if (i > 0)
			appendStringInfoString(out, ", ");
		json_token(out, s, len);
	}
	appendStringInfoChar(out, ']');
}

static void
json_matrix(StringInfo out, const cav_view *v, uint32 idx)
{
	cav_token_info t;
	cav_entry_iter it;
	cav_entry	e;
	bool		first = true;

	cav_view_token(v, idx, &t);
	appendStringInfoString(out, "{\"token\": ");
	json_token(out, t.str, t.len);
	appendStringInfo(out, ", \"occurrences\": " UINT64_FORMAT ", \"entries\": [",
					 (uint64) t.occurrences);
	cav_entry_iter_init(v, idx, &it);
	while (cav_entry_iter_next(&it, &e))
	{
		appendStringInfo(out, first ? "[%u, %u, " INT64_FORMAT "]" : ", [%u, %u, " INT64_FORMAT "]",
						 e.row, e.dist, (int64) e.count);
		first = false;
	}
	appendStringInfoString(out, "]}");
}

/*
 * corpq.cav_to_jsonb(cav): everything.  Entries are [row, distance, count];
 * row indexes source ++ target (source tokens first, both in byte order).
 */
Datum
corpq_cav_to_jsonb(PG_FUNCTION_ARGS)
{
	cav_view	v;
	StringInfoData out;

	cavsql_open_arg(fcinfo, 0, &v);
	initStringInfo(&out);
	appendStringInfo(&out, "{\"version\": %d, \"l_max\": %u, \"pairs\": " UINT64_FORMAT ", \"source\": ",
					 (int) cq_le_get_u16(v.buf + CAV_H_VERSION), v.l_max, (uint64) v.n_pairs);
	json_dict(&out, &v, v.src_dict, v.n_src);
	appendStringInfoString(&out, ", \"target\": ");
	json_dict(&out, &v, v.tgt_dict, v.n_tgt);
	appendStringInfoString(&out, ", \"restricted\": ");
	if (v.n_restrict == 0)
		appendStringInfoString(&out, "null");
	else
		json_dict(&out, &v, v.res_dict, v.n_restrict);
	appendStringInfoString(&out, ", \"matrices\": [");
	for (uint32 i = 0; i < v.n_mat; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (i > 0)
			appendStringInfoString(&out, ", ");
		json_matrix(&out, &v, i);
	}
	appendStringInfoString(&out, "]}");
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(out.data)));
}

/* corpq.cav_stats(cav): the header counters and sizes as one row */
Datum
corpq_cav_stats(PG_FUNCTION_ARGS)
{
	cav_view	v;
	TupleDesc	tupdesc;
	Datum		values[8];
	bool		nulls[8] = {0};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	cavsql_open_arg(fcinfo, 0, &v);
	values[0] = Int64GetDatum((int64) v.n_pairs);
	values[1] = Int32GetDatum((int32) v.l_max);
	values[2] = Int64GetDatum(v.n_src);
	values[3] = Int64GetDatum(v.n_tgt);
	values[4] = Int64GetDatum(v.n_restrict);
	values[5] = Int64GetDatum(v.n_mat);
	values[6] = Int64GetDatum((int64) total_nnz(&v));
	values[7] = Int64GetDatum((int64) v.len);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
