/*
 * corpq.cav as a PostgreSQL expanded object.
 *
 * The aggregate state of cav_accumulate is a corpq.cav (not internal) so
 * that partial states are ordinary values any node, or Citus, can ship and
 * combine.  To avoid re-serialising per row, the state is a read-write
 * expanded datum: a live cav_state in its own memory context, a child of
 * the aggregate context (nodeAgg keeps such a datum without copying).  The
 * canonical bytes are produced only when PostgreSQL asks for the flat form
 * (EOH_get_flat_size / EOH_flatten_into) and are cached until the next
 * change.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "pg/cav/cav.h"

static Size cav_get_flat_size(ExpandedObjectHeader *eohptr);
static void cav_flatten_into(ExpandedObjectHeader *eohptr, void *result,
							 Size allocated_size);

static const ExpandedObjectMethods cav_methods = {
	cav_get_flat_size,
	cav_flatten_into
};

/* Serialise into e->flat (in the object's context) unless already cached. */
static void
ensure_flat(CavExpanded *e)
{
	MemoryContext old;
	cq_error	err = {0};
	cq_code		rc;

	if (e->flat != NULL)
		return;
	old = MemoryContextSwitchTo(e->hdr.eoh_context);
	rc = cav_serialize(e->st, VARHDRSZ, &e->flat, &e->flat_len, &err);
	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_error(&err, cavsql_hint(&err), "could not serialize the CAV");
	if (e->flat_len > MaxAllocSize - VARHDRSZ)
	{
		pfree(e->flat);
		e->flat = NULL;
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("CAV of %zu bytes exceeds the maximum value size of 1 GB",
						e->flat_len),
				 errhint("Lower l_max, restrict the targets, or aggregate smaller groups.")));
	}
}

static Size
cav_get_flat_size(ExpandedObjectHeader *eohptr)
{
	CavExpanded *e = (CavExpanded *) eohptr;

	ensure_flat(e);
	return VARHDRSZ + e->flat_len;
}

static void
cav_flatten_into(ExpandedObjectHeader *eohptr, void *result, Size allocated_size)
{
	CavExpanded *e = (CavExpanded *) eohptr;

	ensure_flat(e);
	Assert(allocated_size == VARHDRSZ + e->flat_len);
	memcpy((char *) result + VARHDRSZ, e->flat + VARHDRSZ, e->flat_len);
	SET_VARSIZE(result, allocated_size);
}

static CavExpanded *
expanded_alloc(MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "corpq cav",
											  ALLOCSET_DEFAULT_SIZES);
	CavExpanded *e = MemoryContextAllocZero(cxt, sizeof(CavExpanded));

	EOH_init_header(&e->hdr, &cav_methods, cxt);
	return e;
}

CavExpanded *
cavsql_expanded_new(MemoryContext parent, const cav_options *opt)
{
	CavExpanded *e = expanded_alloc(parent);
	MemoryContext old = MemoryContextSwitchTo(e->hdr.eoh_context);
	cq_error	err = {0};
	cq_code		rc;

	rc = cav_state_new(opt, cavsql_byte_limit(), &e->st, &err);
	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_error(&err, cavsql_hint(&err), "could not start a CAV");
	return e;
}

CavExpanded *
cavsql_expanded_from_datum(MemoryContext parent, Datum d)
{
	struct varlena *p = PG_DETOAST_DATUM_PACKED(d);
	CavExpanded *e = expanded_alloc(parent);
	MemoryContext old = MemoryContextSwitchTo(e->hdr.eoh_context);
	cq_error	err = {0};
	cq_code		rc;

	/* cav_deserialize runs the full validator first */
	rc = cav_deserialize(VARDATA_ANY(p), VARSIZE_ANY_EXHDR(p),
						 cavsql_byte_limit(), &e->st, &err);
	MemoryContextSwitchTo(old);
	/* a datum passed the validator when it entered the database */
	if (rc == CQ_EFORMAT)
		err.code = CQ_ECORRUPT;
	if (rc != CQ_OK)
		corpq_core_error(&err, cavsql_hint(&err), "could not read a CAV");
	return e;
}

CavExpanded *
cavsql_expanded_any(Datum d)
{
	ExpandedObjectHeader *eoh;

	if (!VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(d)))
		return NULL;
	eoh = DatumGetEOHP(d);
	return eoh->eoh_methods == &cav_methods ? (CavExpanded *) eoh : NULL;
}

CavExpanded *
cavsql_expanded_rw(Datum d)
{
	if (!VARATT_IS_EXTERNAL_EXPANDED_RW(DatumGetPointer(d)))
		return NULL;
	return cavsql_expanded_any(d);
}

void
cavsql_expanded_changed(CavExpanded *e)
{
	if (e->flat != NULL)
	{
		pfree(e->flat);
		e->flat = NULL;
		e->flat_len = 0;
	}
}

struct varlena *
cavsql_expanded_flatten(CavExpanded *e)
{
	struct varlena *r;

	ensure_flat(e);
	r = palloc(VARHDRSZ + e->flat_len);
	memcpy(VARDATA(r), e->flat + VARHDRSZ, e->flat_len);
	SET_VARSIZE(r, VARHDRSZ + e->flat_len);
	return r;
}
