/*
 * Shared declarations of the corpq.cav SQL glue (cav_type.c, cav_expanded.c,
 * cav_agg.c, cav_query.c).
 *
 * A corpq.cav datum is a varlena whose payload is exactly the core's
 * canonical layout (extension/cav/FORMAT.md).  During aggregation the value
 * lives as a PostgreSQL expanded object (CavExpanded) holding a live
 * cav_state, so rows are added without re-serialising; it is flattened into
 * the canonical bytes only when a tuple is formed (partial aggregates sent
 * to the leader) or by the final function.
 */
#ifndef CORPQ_PG_CAV_H
#define CORPQ_PG_CAV_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/expandeddatum.h"

#include "cav/cav.h"
#include "cav/cav_view.h"
#include "pg/base/errors.h"

/*
 * A state may hold at most work_mem x CAV_WORK_MEM_FACTOR bytes (by the
 * core's exact accounting); beyond that cav_accumulate raises
 * program_limit_exceeded instead of growing until the OOM killer acts.
 */
#define CAV_WORK_MEM_FACTOR 256

/* l_max of the two-argument cav_accumulate(src, tgt). */
#define CAV_DEFAULT_LMAX 256

typedef struct CavExpanded
{
	ExpandedObjectHeader hdr;	/* eoh_context owns everything below */
	cav_state  *st;
	/* options of the rows added by cav_accumulate (unset for merged states) */
	int32		l_max;
	char	   *bpe;			/* NULL: whitespace */
	struct varlena *targets;	/* detoasted copy of the text[]; NULL: all */
	/* canonical bytes with VARHDRSZ room in front, cached until the next change */
	uint8	   *flat;
	size_t		flat_len;		/* CAV bytes, without the header room */
} CavExpanded;

/* Byte cap of one state (work_mem x CAV_WORK_MEM_FACTOR). */
size_t		cavsql_byte_limit(void);

/*
 * The hint for a failed CAV operation, for corpq_core_error (base/errors.h):
 * how to stay under the byte cap (CQ_ELIMIT), which CAVs combine
 * (CQ_EMISMATCH), else NULL.
 */
const char *cavsql_hint(const cq_error *err);

/*
 * A stored cav read once: a query usually passes one stored CAV value row
 * after row, and it reaches a function as the same on-disk toast pointer each
 * time.  A toast value never changes while it is referenced, so the
 * detoasted, validated copy of the last one is reused while the pointer is
 * the same.  Any other datum is detoasted and validated on each call.
 */
typedef struct CavValueCache
{
	MemoryContext cxt;			/* holds copy */
	bool		valid;
	Oid			toastrelid;
	Oid			valueid;
	struct varlena *copy;
	cav_view	view;
} CavValueCache;

void		cavsql_cache_init(CavValueCache *c, MemoryContext parent);

/*
 * The validated view of d (the cached one, or one in *scratch).  ERROR
 * data_corrupted if invalid.
 */
const cav_view *cavsql_cached_view(CavValueCache *c, Datum d, cav_view *scratch);

/*
 * The view of a cav argument: arguments 0 and 1 go through a cache kept in
 * the call site's fn_extra, so a stored CAV is read once per query.
 */
void		cavsql_open_arg(FunctionCallInfo fcinfo, int argno, cav_view *v);

/* Validate bytes arriving from outside (recv, bytea, text literal). */
void		cavsql_check_bytes(const void *buf, size_t len, const char *source);

/* A varlena holding a copy of len canonical bytes. */
struct varlena *cavsql_make_varlena(const void *buf, size_t len);

/* New expanded CAV with an empty state, in a new child context of parent. */
CavExpanded *cavsql_expanded_new(MemoryContext parent, const cav_options *opt);

/* New expanded CAV rebuilt from a flat (possibly toasted) cav datum. */
CavExpanded *cavsql_expanded_from_datum(MemoryContext parent, Datum d);

/* The expanded object behind a datum if it is a read-write CavExpanded, else NULL. */
CavExpanded *cavsql_expanded_rw(Datum d);

/* The expanded object behind a datum (read-only or read-write), else NULL. */
CavExpanded *cavsql_expanded_any(Datum d);

/* Drop the cached canonical bytes (call before changing the state). */
void		cavsql_expanded_changed(CavExpanded *e);

/* A flat palloc'd copy of the canonical varlena, in CurrentMemoryContext. */
struct varlena *cavsql_expanded_flatten(CavExpanded *e);

#endif
