/*
 * One copy of a loaded model per server (docs/models.md, "One copy per
 * server"): when corpq is in shared_preload_libraries, a small directory in
 * the main shared memory lists the versions loaded into dynamic shared
 * memory segments, each pinned for the server's life (dsm_pin_segment) and
 * holding the model's arena (nn/model/model.h: cq_model_flatten).  A
 * backend, parallel worker or job whose cache misses attaches to the
 * version's segment (dsm_attach, cq_model_attach) instead of loading it; the
 * first one to load a version copies it in.
 *
 * An entry is keyed by (catalog, model id, version, checksum), as the
 * backend cache is, so a replaced version is never served; model_drop marks
 * the entries of the name dead: never attached again, unpinned when the
 * last backend using them lets go.  Each backend holding an entry (a
 * private cache entry of model_cache.c) counts once in its attach count; it
 * lets go when its private entry is evicted and when it exits
 * (before_shmem_exit).
 *
 * The budget corpq.shared_model_cache_mb (superuser) bounds the segments'
 * bytes.  Entries no backend holds are evicted least recently used first;
 * fairness: a load by an ordinary role evicts only the entries that role
 * loaded (and dead ones), a superuser's any unused entry, so one role cannot
 * push the versions other roles use out of the cache, and it cannot fill the
 * cache with versions others then cannot load either: when the budget is
 * full the other role's load falls back to a private copy with a NOTICE,
 * never an error.  A crash-restart re-initialises shared memory and destroys
 * the pinned segments: the directory starts empty and fills from the catalog
 * again.
 *
 * The vocabularies' token tables (text/vocabulary.h: cq_vocabulary_flatten)
 * and their WordPiece segmenters (text/wordpiece.h: cq_wordpiece_flatten)
 * are entries of the same directory (kind), under the same budget,
 * eviction, fairness and crash-restart rules, keyed by the identity of their
 * corpq.vocabularies or corpq.bpe_models row and their name (model.h); a
 * backend holds such an entry once per vocabulary or segmenter object using
 * it (Held.count), the mapping shared by its holds.
 */
#include "postgres.h"

#include <sys/statvfs.h>

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/dsm_impl.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "pg/base/errors.h"
#include "pg/model/model.h"

#define SHARED_MAX 64			/* entries of the directory */
#define TRANCHE "corpq shared models"

typedef struct SharedEntry
{
	bool		used;			/* the slot holds an entry */
	bool		ready;			/* its segment is filled (else being filled) */
	bool		dead;			/* its model was dropped: never attached again */
	CorpqSharedKind kind;		/* a model, a vocabulary's token table, a segmenter */
	Oid			db;				/* the database (a template's copies share OIDs) */
	Oid			catalog;
	int64		id;
	int32		version;
	int64		checksum;
	Oid			loaded_by;		/* the role whose load created it */
	char		name[NAMEDATALEN];	/* model name, without @N */
	dsm_handle	handle;
	Size		bytes;			/* the segment's (the arena's) */
	int			refs;			/* backends holding it */
	uint64		last_use;
	uint64		serial;			/* tells a reused slot apart */
} SharedEntry;

typedef struct SharedDir
{
	LWLock	   *lock;
	uint64		clock;
	uint64		serials;
	pg_atomic_uint64 deaths;	/* bumped when entries die: backends then let go
								 * (read without the lock at every lookup) */
	Size		total;			/* bytes of every used entry */
	SharedEntry entries[SHARED_MAX];
} SharedDir;

int			corpq_shared_model_cache_mb = 1024;

static SharedDir *dir = NULL;
static shmem_request_hook_type prev_request = NULL;
static shmem_startup_hook_type prev_startup = NULL;

/* This backend's holds: the entries it counts in, by slot and serial. */
typedef struct Held
{
	int			slot;
	uint64		serial;
	dsm_segment *seg;
	int			count;			/* holds of this backend (a vocabulary's: one per
								 * loaded CorpqVocab; a model's: 1) */
} Held;

static Held held[SHARED_MAX];
static int	n_held = 0;
static bool exit_registered = false;

static void
shared_request(void)
{
	if (prev_request)
		prev_request();
	RequestAddinShmemSpace(sizeof(SharedDir));
	RequestNamedLWLockTranche(TRANCHE, 1);
}

static void
shared_startup(void)
{
	bool		found;

	if (prev_startup)
		prev_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	dir = ShmemInitStruct("corpq shared models", sizeof(SharedDir), &found);
	if (!found)
	{
		/* a new server, or shared memory re-initialised after a crash */
		memset(dir, 0, sizeof(SharedDir));
		pg_atomic_init_u64(&dir->deaths, 0);
		dir->lock = &(GetNamedLWLockTranche(TRANCHE))->lock;
	}
	LWLockRelease(AddinShmemInitLock);
}

void
corpq_model_shared_init(void)
{
	DefineCustomIntVariable("corpq.shared_model_cache_mb",
							"Memory bound of the server's shared cache of loaded corpq models, in megabytes.",
							"With corpq in shared_preload_libraries, a loaded model version is kept once in "
							"shared memory and every backend attaches to it; unused versions are evicted least "
							"recently used first beyond this bound. 0 turns sharing off.",
							&corpq_shared_model_cache_mb,
							1024, 0, INT_MAX / 2,
							PGC_SUSET, GUC_UNIT_MB,
							NULL, NULL, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_request = shmem_request_hook;
	shmem_request_hook = shared_request;
	prev_startup = shmem_startup_hook;
	shmem_startup_hook = shared_startup;
}

bool
corpq_shared_models_enabled(void)
{
	return dir != NULL && corpq_shared_model_cache_mb > 0;
}

static bool
key_is(const SharedEntry *e, const CorpqModelRef *ref, CorpqSharedKind kind)
{
	/*
	 * A vocabulary's or segmenter's identity (xmin, created, size) is shared
	 * by every row of one transaction and size, a model's source and target
	 * vocabularies among them: the name tells them apart (session_vocab and
	 * session_segmenter keep names that do not fit e->name private).
	 */
	return e->used && e->kind == kind && e->db == MyDatabaseId && e->catalog == ref->catalog &&
		e->id == ref->id && e->version == ref->version && e->checksum == ref->checksum &&
		(kind == CORPQ_SHARED_MODEL || strcmp(e->name, ref->name) == 0);
}

/* Unpin and free slot i (the lock held exclusively, no backend holding it). */
static void
drop_entry(int i)
{
	SharedEntry *e = &dir->entries[i];

	Assert(e->refs == 0);
	if (e->ready)
		dsm_unpin_segment(e->handle);
	dir->total -= e->bytes;
	e->used = false;
}

/* Let go of held[h]: the count, then the mapping. */
static void
let_go(int h)
{
	SharedEntry *e;

	if (--held[h].count > 0)
		return;
	LWLockAcquire(dir->lock, LW_EXCLUSIVE);
	e = &dir->entries[held[h].slot];
	if (e->used && e->serial == held[h].serial && e->refs > 0)
	{
		e->refs--;
		if (e->refs == 0 && e->dead)
			drop_entry(held[h].slot);
	}
	LWLockRelease(dir->lock);
	if (held[h].seg)
		dsm_detach(held[h].seg);
	held[h] = held[--n_held];
}

static void
release_all(int code, Datum arg)
{
	/* on exit: the counts only (the mappings go with the process) */
	if (dir != NULL && LWLockHeldByMe(dir->lock))
		LWLockRelease(dir->lock);
	for (int h = 0; h < n_held; h++)
	{
		held[h].seg = NULL;
		held[h].count = 1;
	}
	while (n_held > 0 && dir != NULL)
		let_go(n_held - 1);
}

static void
remember(int slot, uint64 serial, dsm_segment *seg)
{
	if (!exit_registered)
	{
		before_shmem_exit(release_all, (Datum) 0);
		exit_registered = true;
	}
	held[n_held].slot = slot;
	held[n_held].serial = serial;
	held[n_held].seg = seg;
	held[n_held].count = 1;
	n_held++;
}

static int
held_index(int slot, uint64 serial)
{
	for (int h = 0; h < n_held; h++)
		if (held[h].slot == slot && held[h].serial == serial)
			return h;
	return -1;
}

void
corpq_shared_model_release(CorpqSharedUse *use)
{
	int			h;

	if (dir == NULL || use->slot < 0)
		return;
	h = held_index(use->slot, use->serial);
	if (h >= 0)
		let_go(h);
	use->slot = -1;
}

/*
 * The model of use's segment, attached in CurrentMemoryContext; on failure
 * the hold is let go and NULL returned.
 */
static cq_model *
attach_model(CorpqSharedUse *use, Size bytes)
{
	cq_model   *m = NULL;
	cq_error	err = {0};
	int			h = held_index(use->slot, use->serial);
	dsm_segment *seg = held[h].seg;

	if (cq_model_attach(dsm_segment_address(seg), bytes, &m, &err) != CQ_OK)
	{
		ereport(NOTICE,
				(errmsg("could not attach the shared copy of model \"%s@%d\": %s; loading a private copy",
						use->name, use->version, err.msg)));
		let_go(h);
		use->slot = -1;
		return NULL;
	}
	return m;
}

/*
 * The segment of ref's ready entry of this kind, attached and held, its
 * address returned; NULL when there is none.  A vocabulary's entry this
 * backend holds already is held once more (its mapping reused); a
 * vocabulary's entries of the same name but another identity (a vocabulary
 * dropped and created again) die, as they can no longer be served here.
 */
static void *
find_entry(const CorpqModelRef *ref, CorpqSharedKind kind, CorpqSharedUse *use)
{
	int			slot = -1;
	uint64		serial = 0;
	dsm_handle	handle = 0;
	Size		bytes = 0;
	dsm_segment *seg;

	use->slot = -1;
	if (!corpq_shared_models_enabled())
		return NULL;
	LWLockAcquire(dir->lock, LW_EXCLUSIVE);
	for (int i = 0; i < SHARED_MAX && kind != CORPQ_SHARED_MODEL; i++)
	{
		SharedEntry *e = &dir->entries[i];
		int			h;

		if (e->used && e->kind == kind && !e->dead && e->db == MyDatabaseId &&
			strcmp(e->name, ref->name) == 0 && !key_is(e, ref, kind))
		{
			e->dead = true;
			if (e->refs == 0)
				drop_entry(i);
			continue;
		}
		if (key_is(e, ref, kind) && e->ready && !e->dead && (h = held_index(i, e->serial)) >= 0)
		{
			e->last_use = ++dir->clock;
			held[h].count++;
			LWLockRelease(dir->lock);
			use->slot = i;
			use->serial = e->serial;
			use->version = ref->version;
			use->bytes = e->bytes;
			strlcpy(use->name, ref->name, sizeof(use->name));
			return dsm_segment_address(held[h].seg);
		}
	}
	if (n_held >= SHARED_MAX)
	{
		LWLockRelease(dir->lock);
		return NULL;
	}
	for (int i = 0; i < SHARED_MAX; i++)
	{
		SharedEntry *e = &dir->entries[i];

		if (key_is(e, ref, kind) && e->ready && !e->dead && held_index(i, e->serial) < 0)
		{
			/* counted before attaching, so that no one evicts it meanwhile */
			e->refs++;
			e->last_use = ++dir->clock;
			slot = i;
			serial = e->serial;
			handle = e->handle;
			bytes = e->bytes;
			break;
		}
	}
	LWLockRelease(dir->lock);
	if (slot < 0)
		return NULL;
	use->slot = slot;
	use->serial = serial;
	use->version = ref->version;
	strlcpy(use->name, ref->name, sizeof(use->name));
	use->bytes = bytes;
	seg = dsm_attach(handle);
	remember(slot, serial, seg);
	if (seg == NULL)
	{
		/* unpinned since (cannot happen while counted, but never serve garbage) */
		corpq_shared_model_release(use);
		return NULL;
	}
	dsm_pin_mapping(seg);
	return dsm_segment_address(seg);
}

cq_model *
corpq_shared_model_find(const CorpqModelRef *ref, CorpqSharedUse *use)
{
	if (find_entry(ref, CORPQ_SHARED_MODEL, use) == NULL)
		return NULL;
	return attach_model(use, use->bytes);
}

/*
 * Make room for bytes under the budget by evicting unused entries, least
 * recently used first (the lock held exclusively): an ordinary role evicts
 * only dead entries and those it loaded.  False if they do not make room.
 */
static bool
make_room(Size bytes, Size budget, Oid role, bool super)
{
	while (dir->total + bytes > budget)
	{
		int			lru = -1;

		for (int i = 0; i < SHARED_MAX; i++)
		{
			SharedEntry *e = &dir->entries[i];

			if (!e->used || !e->ready || e->refs > 0)
				continue;
			if (!super && !e->dead && e->loaded_by != role)
				continue;
			if (lru < 0 || e->last_use < dir->entries[lru].last_use)
				lru = i;
		}
		if (lru < 0)
			return false;
		drop_entry(lru);
	}
	return true;
}

/* Room for bytes in /dev/shm (posix segments), or true when it cannot be told. */
static bool
shm_has_room(Size bytes)
{
	struct statvfs st;

	if (dynamic_shared_memory_type != DSM_IMPL_POSIX || statvfs("/dev/shm", &st) != 0)
		return true;
	return (double) st.f_bavail * st.f_frsize > (double) bytes + 64 * 1024 * 1024;
}

static void
fall_back(const char *what, const char *why)
{
	ereport(NOTICE,
			(errmsg("%s is kept as a private copy in this backend: %s", what, why),
			 errhint("A superuser can raise corpq.shared_model_cache_mb.")));
}

/*
 * A new entry of this kind for ref, bytes long, filled by fill(obj), held by
 * this backend; its segment's address, or NULL when it stays private (a
 * NOTICE says why when the budget or shared memory is short; what names the
 * object in it).
 */
static void *
publish_entry(const CorpqModelRef *ref, CorpqSharedKind kind, const char *what, Size bytes,
			  CorpqSharedFill fill, const void *obj, CorpqSharedUse *use)
{
	cq_error	err = {0};
	Size		budget = (Size) corpq_shared_model_cache_mb * 1024 * 1024;
	Oid			role = GetUserId();
	bool		super = superuser();
	int			slot = -1;
	uint64		serial = 0;
	bool		busy = false;
	dsm_segment *seg = NULL;

	use->slot = -1;
	if (!corpq_shared_models_enabled() || n_held >= SHARED_MAX)
		return NULL;
	if (bytes > budget)
	{
		fall_back(what, psprintf("it takes %zu MB, more than corpq.shared_model_cache_mb (%d MB)",
								 (bytes + 1024 * 1024 - 1) / (1024 * 1024),
								 corpq_shared_model_cache_mb));
		return NULL;
	}
	LWLockAcquire(dir->lock, LW_EXCLUSIVE);
	for (int i = 0; i < SHARED_MAX && !busy; i++)
		busy = key_is(&dir->entries[i], ref, kind) && !dir->entries[i].dead;
	if (!busy && make_room(bytes, budget, role, super))
	{
		for (int i = 0; i < SHARED_MAX && slot < 0; i++)
			if (!dir->entries[i].used)
				slot = i;
		if (slot >= 0)
		{
			SharedEntry *e = &dir->entries[slot];

			/* reserved, not ready: counted in the budget, attached by no one */
			memset(e, 0, sizeof(*e));
			e->used = true;
			e->kind = kind;
			e->db = MyDatabaseId;
			e->catalog = ref->catalog;
			e->id = ref->id;
			e->version = ref->version;
			e->checksum = ref->checksum;
			e->loaded_by = role;
			strlcpy(e->name, ref->name, sizeof(e->name));
			e->bytes = bytes;
			e->refs = 1;
			e->last_use = ++dir->clock;
			e->serial = serial = ++dir->serials;
			dir->total += bytes;
		}
	}
	LWLockRelease(dir->lock);
	if (busy)
		return NULL;			/* another backend is copying it in: this one stays private */
	if (slot < 0)
	{
		fall_back(what, super ? "the shared model cache is full of models in use"
				  : "the shared model cache is full of models in use or loaded by other roles");
		return NULL;
	}
	use->slot = slot;
	use->serial = serial;
	use->version = ref->version;
	use->bytes = bytes;
	strlcpy(use->name, ref->name, sizeof(use->name));
	if (shm_has_room(bytes))
		seg = dsm_create(bytes, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	remember(slot, serial, seg);
	if (seg == NULL)
	{
		/* the reservation goes: counted, never ready, so let_go frees it */
		LWLockAcquire(dir->lock, LW_EXCLUSIVE);
		dir->entries[slot].dead = true;
		LWLockRelease(dir->lock);
		corpq_shared_model_release(use);
		fall_back(what, "no dynamic shared memory segment could be made for it");
		return NULL;
	}
	if (fill(obj, dsm_segment_address(seg), bytes, &err) != CQ_OK)
	{
		LWLockAcquire(dir->lock, LW_EXCLUSIVE);
		dir->entries[slot].dead = true;
		LWLockRelease(dir->lock);
		corpq_shared_model_release(use);
		corpq_core_error(&err, NULL, "could not copy %s into shared memory", what);
	}
	dsm_pin_segment(seg);
	dsm_pin_mapping(seg);
	LWLockAcquire(dir->lock, LW_EXCLUSIVE);
	dir->entries[slot].handle = dsm_segment_handle(seg);
	dir->entries[slot].ready = true;
	LWLockRelease(dir->lock);
	return dsm_segment_address(seg);
}

static cq_code
fill_model(const void *obj, void *dst, size_t size, cq_error *err)
{
	return cq_model_flatten((const cq_model *) obj, dst, size, err);
}

cq_model *
corpq_shared_model_publish(const CorpqModelRef *ref, const cq_model *m, CorpqSharedUse *use)
{
	cq_error	err = {0};
	Size		bytes;

	use->slot = -1;
	if (!corpq_shared_models_enabled() || n_held >= SHARED_MAX)
		return NULL;
	bytes = cq_model_arena_bytes(m, &err);
	if (bytes == 0)
		return NULL;			/* not a packed, compact model: stays private */
	if (publish_entry(ref, CORPQ_SHARED_MODEL, psprintf("model \"%s@%d\"", ref->name, ref->version),
					  bytes, fill_model, m, use) == NULL)
		return NULL;
	return attach_model(use, bytes);
}

/* ---- vocabularies ---- */

static cq_code
fill_vocab(const void *obj, void *dst, size_t size, cq_error *err)
{
	return cq_vocabulary_flatten((const cq_vocabulary *) obj, dst, size, err);
}

/* The token table of use's segment attached into *v; false (the hold let go) if refused. */
static bool
attach_vocab(CorpqSharedUse *use, const void *base, cq_vocabulary *v)
{
	cq_error	err = {0};

	if (cq_vocabulary_attach(base, use->bytes, v, &err) == CQ_OK)
		return true;
	ereport(NOTICE,
			(errmsg("could not attach the shared copy of vocabulary \"%s\": %s; loading a private copy",
					use->name, err.msg)));
	corpq_shared_model_release(use);
	return false;
}

bool
corpq_shared_vocab_find(const CorpqModelRef *ref, CorpqSharedUse *use, cq_vocabulary *v)
{
	void	   *base = find_entry(ref, CORPQ_SHARED_VOCAB, use);

	return base != NULL && attach_vocab(use, base, v);
}

bool
corpq_shared_vocab_publish(const CorpqModelRef *ref, const cq_vocabulary *private_v,
						   CorpqSharedUse *use, cq_vocabulary *v)
{
	void	   *base;

	use->slot = -1;
	if (!corpq_shared_models_enabled())
		return false;
	base = publish_entry(ref, CORPQ_SHARED_VOCAB, psprintf("vocabulary \"%s\"", ref->name),
						 cq_vocabulary_arena_bytes(private_v), fill_vocab, private_v, use);
	return base != NULL && attach_vocab(use, base, v);
}

/* ---- segmenters: the caller attaches (pg/model/model_session.c) ---- */

void *
corpq_shared_blob_find(const CorpqModelRef *ref, CorpqSharedKind kind, CorpqSharedUse *use)
{
	Assert(kind != CORPQ_SHARED_MODEL);
	return find_entry(ref, kind, use);
}

void *
corpq_shared_blob_publish(const CorpqModelRef *ref, CorpqSharedKind kind, const char *what,
						  Size bytes, CorpqSharedFill fill, const void *obj, CorpqSharedUse *use)
{
	Assert(kind != CORPQ_SHARED_MODEL);
	use->slot = -1;
	if (!corpq_shared_models_enabled())
		return NULL;
	return publish_entry(ref, kind, what, bytes, fill, obj, use);
}

void
corpq_shared_model_forget(const char *name)
{
	if (dir == NULL)
		return;
	LWLockAcquire(dir->lock, LW_EXCLUSIVE);
	for (int i = 0; i < SHARED_MAX; i++)
	{
		SharedEntry *e = &dir->entries[i];

		if (!e->used || e->dead || e->kind != CORPQ_SHARED_MODEL || e->db != MyDatabaseId ||
			strcmp(e->name, name) != 0)
			continue;
		/* a rolled-back drop only costs a reload */
		e->dead = true;
		pg_atomic_fetch_add_u64(&dir->deaths, 1);
		if (e->refs == 0)
			drop_entry(i);
	}
	LWLockRelease(dir->lock);
}

uint64
corpq_shared_model_deaths(void)
{
	if (dir == NULL)
		return 0;
	return pg_atomic_read_u64(&dir->deaths);
}

bool
corpq_shared_model_dead(const CorpqSharedUse *use)
{
	bool		dead;
	SharedEntry *e;

	if (dir == NULL || use->slot < 0)
		return false;
	LWLockAcquire(dir->lock, LW_SHARED);
	e = &dir->entries[use->slot];
	dead = !e->used || e->serial != use->serial || e->dead;
	LWLockRelease(dir->lock);
	return dead;
}

static int
list_entries(CorpqSharedInfo *out, int max, bool models)
{
	int			n = 0;

	if (dir == NULL)
		return 0;
	LWLockAcquire(dir->lock, LW_SHARED);
	for (int i = 0; i < SHARED_MAX && n < max; i++)
	{
		SharedEntry *e = &dir->entries[i];

		if (!e->used || !e->ready || (e->kind == CORPQ_SHARED_MODEL) != models ||
			e->db != MyDatabaseId)
			continue;
		out[n].kind = e->kind;
		out[n].slot = i;
		out[n].serial = e->serial;
		strlcpy(out[n].name, e->name, sizeof(out[n].name));
		out[n].version = e->version;
		out[n].bytes = e->bytes;
		out[n].refs = e->refs;
		out[n].last_use = e->last_use;
		out[n].dead = e->dead;
		n++;
	}
	LWLockRelease(dir->lock);
	return n;
}

int
corpq_shared_model_list(CorpqSharedInfo *out, int max)
{
	return list_entries(out, max, true);
}

int
corpq_shared_vocab_list(CorpqSharedInfo *out, int max)
{
	return list_entries(out, max, false);
}
