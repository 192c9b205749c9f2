/*
 * The backend's cache of loaded models, keyed by (catalog, model id, version,
 * checksum).  A version never changes and (model id, version) is issued once:
 * ids come from a sequence, version numbers from corpq.issued_versions, which
 * outlives model_drop, so a model dropped and created again under its name
 * has another id and numbers after the old ones.  The catalog table's OID
 * tells a re-created extension (whose sequence starts again) apart.  So an
 * entry is never stale and needs no invalidation: a name@N that was dropped
 * fails when it is resolved, before the cache is asked.  Parallel workers
 * resolve in the query's snapshot and fill caches of their own.  Each entry
 * owns a memory context under one long-lived root; least recently used
 * entries are evicted to keep the total under corpq.model_cache_mb (the entry
 * in use always stays).  With corpq preloaded, an entry is usually a small
 * struct attached to the server's shared copy (model_shared.c): a miss
 * attaches to it, or loads the version and copies it there for the others;
 * evicting the entry lets go of the shared copy.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "nn/model/modelfile.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/base.h"
#include "pg/model/model.h"

PG_FUNCTION_INFO_V1(corpq_model_cache);
PG_FUNCTION_INFO_V1(corpq_shared_vocab_cache);

int			corpq_max_model_mb = 6 * 1024;
int			corpq_model_cache_mb = 512;
int			corpq_max_model_cache_mb = 1024;

typedef struct CacheEntry
{
	Oid			catalog;
	int64		id;
	int32		version;
	int64		checksum;
	char	   *name;			/* "name@N", for corpq.model_cache() */
	MemoryContext cxt;			/* owns the model and name */
	cq_model   *model;
	Size		bytes;
	uint64		last_use;
	int64		uses;
	CorpqSharedUse shared;		/* slot -1: a private copy; else attached (model_shared.c) */
} CacheEntry;

#define MAX_ENTRIES 64

static MemoryContext cache_root = NULL;
static CacheEntry entries[MAX_ENTRIES];
static int	n_entries = 0;
static uint64 clock_tick = 0;

static bool
check_model_cache_mb(int *newval, void **extra, GucSource source)
{
	if (*newval <= corpq_max_model_cache_mb || !corpq_guc_ceiling_applies(source))
		return true;
	GUC_check_errmsg("corpq.model_cache_mb cannot exceed corpq.max_model_cache_mb (%d MB)",
					 corpq_max_model_cache_mb);
	GUC_check_errhint("A superuser sets corpq.max_model_cache_mb, also per role with ALTER ROLE ... SET.");
	return false;
}

void
corpq_model_init(void)
{
	/* before corpq.model_cache_mb: a value it gets when defined is checked against this */
	DefineCustomIntVariable("corpq.max_model_cache_mb",
							"Largest corpq.model_cache_mb a session may use, in megabytes.",
							"Superuser setting: corpq.model_cache_mb cannot be set above it, and the cache "
							"never grows past it (the model in use always stays).",
							&corpq_max_model_cache_mb,
							1024, 0, INT_MAX / 2,
							PGC_SUSET, GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("corpq.model_cache_mb",
							"Memory bound of the backend's cache of loaded corpq models, in megabytes.",
							"Least recently used models are evicted beyond it; the model in use always stays. "
							"At most corpq.max_model_cache_mb.",
							&corpq_model_cache_mb,
							512, 0, INT_MAX / 2,
							PGC_USERSET, GUC_UNIT_MB,
							check_model_cache_mb, NULL, NULL);
	DefineCustomIntVariable("corpq.max_model_mb",
							"Backend memory one model operation may take, in megabytes.",
							"Checked before anything is allocated: creating or importing a model takes about "
							"six times its size; loading it for scoring is counted exactly from its configuration.",
							&corpq_max_model_mb,
							6 * 1024, 1, INT_MAX / 2,
							PGC_SUSET, GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("corpq.max_batch_mb",
							"Largest work space one scoring or translation batch may take, in megabytes.",
							"Batches are cut to fit, which does not change any result; a single sentence "
							"pair that needs more is an error.",
							&corpq_max_batch_mb,
							256, 1, INT_MAX / 2,
							PGC_SUSET, GUC_UNIT_MB,
							NULL, NULL, NULL);
	corpq_model_quota_init();
	corpq_model_shared_init();
}

int			corpq_max_batch_mb = 256;

Size
corpq_batch_bytes_limit(void)
{
	return (Size) corpq_max_batch_mb * 1024 * 1024;
}

void
corpq_batch_too_large(int n, const char *what, Size need)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("a batch of %d %s%s needs %zu MB of work space, more than corpq.max_batch_mb (%d MB)",
					n, what, n == 1 ? "" : "s", (need + 1024 * 1024 - 1) / (1024 * 1024),
					corpq_max_batch_mb),
			 errhint("A superuser can raise corpq.max_batch_mb, or GRANT SET ON PARAMETER corpq.max_batch_mb to a role.")));
}

void
corpq_check_model_memory(double bytes, int factor, const char *what, const char *doing)
{
	double		mb = ceil(bytes / (1024 * 1024));

	if (bytes * factor > (double) corpq_max_model_mb * 1024 * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s of %.0f MB needs about %.0f MB of backend memory to %s, more than corpq.max_model_mb (%d MB)",
						what, mb, mb * factor, doing, corpq_max_model_mb),
				 errhint("Use a smaller model, or ask a superuser to raise corpq.max_model_mb.")));
}

/* Entries evicted so far in this backend (corpq_model_cache_evictions). */
static uint64 evictions = 0;

uint64
corpq_model_cache_evictions(void)
{
	return evictions;
}

static void
evict(int i)
{
	evictions++;
	MemoryContextDelete(entries[i].cxt);
	corpq_shared_model_release(&entries[i].shared);
	entries[i] = entries[--n_entries];
}

/* Evict LRU entries (never keep) until the total plus extra fits the bound. */
static void
trim(Size extra, int keep_id_index)
{
	/* the ceiling holds even for a value set before a superuser lowered it */
	Size		limit = (Size) Min(corpq_model_cache_mb, corpq_max_model_cache_mb) * 1024 * 1024;

	for (;;)
	{
		Size		total = extra;
		int			lru = -1;

		for (int i = 0; i < n_entries; i++)
		{
			total += entries[i].bytes;
			if (i != keep_id_index && (lru < 0 || entries[i].last_use < entries[lru].last_use))
				lru = i;
		}
		if (total <= limit || lru < 0)
			return;
		evict(lru);
	}
}

/*
 * ERROR unless loading version ref fits corpq.max_model_mb: the load's peak
 * (the image of image bytes included) and the loaded model, from
 * cq_modelfile_memory, with the memory contexts' overhead.
 */
static void
check_load_memory(const CorpqModelRef *ref, Size image, Size peak, Size loaded)
{
	double		limit = (double) corpq_max_model_mb * 1024 * 1024,
				need = (double) peak + CORPQ_CONTEXT_SLACK;

	if (need <= limit)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("model \"%s@%d\" needs %.0f MB of backend memory to load, more than corpq.max_model_mb (%d MB)",
					ref->name, ref->version, ceil(need / (1024 * 1024)), corpq_max_model_mb),
			 errdetail("Loaded, it holds %.1f MB (its weight image: %.1f MB); loading holds %.1f MB at most.",
					   (loaded + CORPQ_CONTEXT_SLACK) / (1024.0 * 1024), image / (1024.0 * 1024),
					   need / (1024 * 1024)),
			 errhint("Use a smaller model, or ask a superuser to raise corpq.max_model_mb.")));
}

/*
 * Read version ref of the model and load it into cxt.  The image is read
 * chunk by chunk into a short-lived context freed right after loading, so
 * the backend holds the weights once.
 */
static cq_model *
load_model(const CorpqModelRef *ref, MemoryContext cxt)
{
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "corpq model image",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old;
	char	   *image;
	cq_model   *m = NULL;
	cq_model_memory mem;
	Size		image_len;
	char	   *head = palloc(CQ_MODELFILE_HEAD_MAX);
	cq_error err = {0};
	cq_code s;

	/*
	 * The exact memory of the load, from the image's header and configuration
	 * only (the start of its first chunk: 64 kB at most), so that a refused
	 * load reads and allocates nothing more.
	 */
	image_len = corpq_model_image_head(ref->id, ref->version, ref->name, ref->checksum,
									   head, CQ_MODELFILE_HEAD_MAX);
	s = cq_modelfile_memory(head, Min(image_len, CQ_MODELFILE_HEAD_MAX), image_len, &mem, &err);
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "could not load model \"%s@%d\"", ref->name, ref->version);
	check_load_memory(ref, image_len, mem.peak, mem.loaded);
	pfree(head);
	trim(mem.loaded + CORPQ_CONTEXT_SLACK, -1);
	old = MemoryContextSwitchTo(tmp);
	image = corpq_model_image_read(ref->id, ref->version, ref->name, ref->checksum, &image_len);
	MemoryContextSwitchTo(cxt);
	s = cq_modelfile_load(image, image_len, &m, &err);
	MemoryContextSwitchTo(old);
	/* free the image before packing: the peak is image + weights, not more */
	MemoryContextDelete(tmp);
	/*
	 * Cached models serve inference: pack once for nn/ops/rowgemm.h, then keep
	 * only the packed copy of each weight matrix.
	 */
	old = MemoryContextSwitchTo(cxt);
	if (s == CQ_OK)
		s = cq_model_pack(m, &err);
	if (s == CQ_OK)
		s = cq_model_compact(m, &err);
	MemoryContextSwitchTo(old);
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "could not load model \"%s@%d\"", ref->name, ref->version);
	return m;
}

/* Evict the attached entries whose shared entry died (model_drop) since the last look. */
static void
forget_dead(void)
{
	static uint64 deaths_seen = 0;
	uint64		deaths = corpq_shared_model_deaths();

	if (deaths == deaths_seen)
		return;
	deaths_seen = deaths;
	for (int i = n_entries - 1; i >= 0; i--)
		if (entries[i].shared.slot >= 0 && corpq_shared_model_dead(&entries[i].shared))
			evict(i);
}

/*
 * m copied into shared memory, attached in a new small context (*small), or
 * NULL (it stays private).
 */
static cq_model *
publish(const CorpqModelRef *ref, const cq_model *m, CorpqSharedUse *use, MemoryContext *small)
{
	MemoryContext cxt = AllocSetContextCreate(cache_root, "corpq shared model",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	cq_model   *a = NULL;

	PG_TRY();
	{
		a = corpq_shared_model_publish(ref, m, use);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	if (a == NULL)
		MemoryContextDelete(cxt);
	*small = a ? cxt : NULL;
	return a;
}

/*
 * ref's model into cxt: attached to the server's shared copy if there is
 * one, else loaded, then copied into shared memory for the others when
 * sharing is on (the private copy then goes), else kept private.  *keep:
 * the context the entry keeps.
 */
static cq_model *
get_model(const CorpqModelRef *ref, MemoryContext cxt, CorpqSharedUse *use, MemoryContext *keep)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	cq_model   *m = corpq_shared_model_find(ref, use);
	cq_model   *a;
	MemoryContext small;

	MemoryContextSwitchTo(old);
	*keep = cxt;
	if (m)
		return m;
	m = load_model(ref, cxt);
	if (!corpq_shared_models_enabled())
		return m;
	a = publish(ref, m, use, &small);
	if (a == NULL)
		return m;
	/* the private copy goes: the entry keeps the small attached struct */
	MemoryContextDelete(cxt);
	*keep = small;
	return a;
}

/* get_model; on error cxt and the hold of use go. */
static cq_model *
get_model_or_clean(const CorpqModelRef *ref, MemoryContext cxt, CorpqSharedUse *use,
				   MemoryContext *keep)
{
	cq_model   *m = NULL;

	PG_TRY();
	{
		m = get_model(ref, cxt, use, keep);
	}
	PG_CATCH();
	{
		MemoryContextDelete(cxt);
		corpq_shared_model_release(use);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return m;
}

const cq_model *
corpq_model_get(const CorpqModelRef *ref)
{
	CacheEntry *e;
	MemoryContext cxt;
	cq_model   *m;
	MemoryContext kept = NULL;
	CorpqSharedUse use = {.slot = -1};

	forget_dead();
	for (int i = 0; i < n_entries; i++)
	{
		e = &entries[i];
		if (e->catalog == ref->catalog && e->id == ref->id && e->version == ref->version &&
			e->checksum == ref->checksum)
		{
			e->last_use = ++clock_tick;
			e->uses++;
			trim(0, i);
			return e->model;
		}
	}
	if (cache_root == NULL)
		cache_root = AllocSetContextCreate(TopMemoryContext, "corpq model cache",
										   ALLOCSET_SMALL_SIZES);
	if (n_entries == MAX_ENTRIES)
	{
		int			lru = 0;

		for (int i = 1; i < n_entries; i++)
			if (entries[i].last_use < entries[lru].last_use)
				lru = i;
		evict(lru);
	}
	cxt = AllocSetContextCreate(cache_root, "corpq model", ALLOCSET_DEFAULT_SIZES);
	m = get_model_or_clean(ref, cxt, &use, &kept);
	cxt = kept;
	e = &entries[n_entries++];
	e->catalog = ref->catalog;
	e->id = ref->id;
	e->version = ref->version;
	e->checksum = ref->checksum;
	e->name = MemoryContextStrdup(cxt, psprintf("%s@%d", ref->name, ref->version));
	e->cxt = cxt;
	e->model = m;
	e->bytes = MemoryContextMemAllocated(cxt, true);
	e->last_use = ++clock_tick;
	e->uses = 1;
	e->shared = use;
	trim(0, n_entries - 1);
	return m;
}

/*
 * corpq.model_cache(): this backend's entries, most recently used first
 * (private copies, and shared copies it is attached to), then the shared
 * copies of this database it is not attached to (uses 0).
 */
Datum
corpq_model_cache(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			order[MAX_ENTRIES];
	CorpqSharedInfo *dir = palloc(sizeof(CorpqSharedInfo) * MAX_ENTRIES);
	int			n_dir;
	bool	   *mine;

	InitMaterializedSRF(fcinfo, 0);
	n_dir = corpq_shared_model_list(dir, MAX_ENTRIES);
	mine = palloc0(sizeof(bool) * (n_dir + 1));
	for (int i = 0; i < n_entries; i++)
		order[i] = i;
	for (int i = 1; i < n_entries; i++)
		for (int j = i; j > 0 && entries[order[j]].last_use > entries[order[j - 1]].last_use; j--)
		{
			int			t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (int i = 0; i < n_entries; i++)
	{
		CacheEntry *e = &entries[order[i]];
		int			at = strrchr(e->name, '@') - e->name;
		bool		shared = e->shared.slot >= 0;
		int64		attached = 1;
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		for (int k = 0; k < n_dir && shared; k++)
			if (dir[k].slot == e->shared.slot && dir[k].serial == e->shared.serial)
			{
				attached = dir[k].refs;
				mine[k] = true;
			}
		values[0] = PointerGetDatum(cstring_to_text_with_len(e->name, at));
		values[1] = Int32GetDatum(e->version);
		values[2] = Int64GetDatum((int64) (shared ? e->shared.bytes : e->bytes));
		values[3] = Int64GetDatum(e->uses);
		values[4] = BoolGetDatum(shared);
		values[5] = Int64GetDatum(attached);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	for (int k = 0; k < n_dir; k++)
	{
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		if (mine[k] || dir[k].dead)
			continue;
		values[0] = PointerGetDatum(cstring_to_text(dir[k].name));
		values[1] = Int32GetDatum(dir[k].version);
		values[2] = Int64GetDatum((int64) dir[k].bytes);
		values[3] = Int64GetDatum(0);
		values[4] = BoolGetDatum(true);
		values[5] = Int64GetDatum(dir[k].refs);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * corpq.shared_vocab_cache(): the vocabularies' token tables and WordPiece
 * segmenters of this database in the server's shared cache (model.h), most
 * recently used first: name, tokens, the segment's bytes, the backends
 * holding it, the kind ('tokens' or 'wordpiece').
 */
Datum
corpq_shared_vocab_cache(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	CorpqSharedInfo *dir = palloc(sizeof(CorpqSharedInfo) * MAX_ENTRIES);
	int			n_dir;

	InitMaterializedSRF(fcinfo, 0);
	n_dir = corpq_shared_vocab_list(dir, MAX_ENTRIES);
	for (int i = 1; i < n_dir; i++)
		for (int j = i; j > 0 && dir[j].last_use > dir[j - 1].last_use; j--)
		{
			CorpqSharedInfo t = dir[j];

			dir[j] = dir[j - 1];
			dir[j - 1] = t;
		}
	for (int k = 0; k < n_dir; k++)
	{
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		if (dir[k].dead)
			continue;
		values[0] = PointerGetDatum(cstring_to_text(dir[k].name));
		values[1] = Int32GetDatum(dir[k].version);
		values[2] = Int64GetDatum((int64) dir[k].bytes);
		values[3] = Int64GetDatum(dir[k].refs);
		values[4] = PointerGetDatum(cstring_to_text(dir[k].kind == CORPQ_SHARED_WORDPIECE
													? "wordpiece" : "tokens"));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
