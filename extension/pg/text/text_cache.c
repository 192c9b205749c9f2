/*
 * The per-query cache of SQL functions (text.h): the segmenter or
 * vocabulary a function call loaded, kept in fn_extra for the next row.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/memutils.h"

#include "pg/text/text.h"

typedef struct FnCache
{
	char		kind;			/* 's' segmenter, 'v' vocabulary */
	char	   *name;
	void	   *obj;
} FnCache;

static FnCache *
fn_cache(FunctionCallInfo fcinfo, char kind, const char *name, bool *hit)
{
	FnCache    *c = fcinfo->flinfo->fn_extra;

	if (c == NULL)
	{
		c = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(FnCache));
		fcinfo->flinfo->fn_extra = c;
	}
	*hit = c->obj != NULL && c->kind == kind && strcmp(c->name, name) == 0;
	if (!*hit && c->obj != NULL)
	{
		/* a different name than the last call: drop the old object */
		if (c->kind == 's')
			corpq_segmenter_free(c->obj);
		else
			corpq_vocab_free(c->obj);
		pfree(c->name);
		c->obj = NULL;
	}
	return c;
}

CorpqSegmenter *
corpq_segmenter_cached(FunctionCallInfo fcinfo, const char *name)
{
	bool		hit;
	const char *key = name ? name : CORPQ_WHITESPACE;
	FnCache    *c = fn_cache(fcinfo, 's', key, &hit);

	if (!hit)
	{
		c->obj = corpq_segmenter_load(key, fcinfo->flinfo->fn_mcxt);
		c->kind = 's';
		c->name = MemoryContextStrdup(fcinfo->flinfo->fn_mcxt, key);
	}
	return c->obj;
}

CorpqVocab *
corpq_vocab_cached(FunctionCallInfo fcinfo, const char *name)
{
	bool		hit;
	FnCache    *c = fn_cache(fcinfo, 'v', name, &hit);

	if (!hit)
	{
		c->obj = corpq_vocab_load(name, fcinfo->flinfo->fn_mcxt);
		c->kind = 'v';
		c->name = MemoryContextStrdup(fcinfo->flinfo->fn_mcxt, name);
	}
	return c->obj;
}
