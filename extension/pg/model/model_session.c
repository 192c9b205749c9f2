/*
 * The model session (model_session.h): name resolution once per session,
 * vocabularies, encoding with length checks (obeying on_too_long, model.h),
 * the work space.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "pg/base/errors.h"
#include "pg/base/base.h"
#include "pg/model/model_session.h"

CorpqModelSession *
corpq_model_session_create(MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "corpq model session", ALLOCSET_DEFAULT_SIZES);
	CorpqModelSession *s = MemoryContextAllocZero(cxt, sizeof(CorpqModelSession));

	s->cxt = cxt;
	return s;
}

CorpqModelSession *
corpq_model_session_cached(FunctionCallInfo fcinfo)
{
	if (fcinfo->flinfo->fn_extra == NULL)
		fcinfo->flinfo->fn_extra = corpq_model_session_create(fcinfo->flinfo->fn_mcxt);
	return fcinfo->flinfo->fn_extra;
}

/* A vocabulary's or segmenter's hold on its shared copy, let go when its context goes. */
typedef struct VocabHold
{
	MemoryContextCallback cb;
	CorpqSharedUse use;
} VocabHold;

static void
let_go_vocab(void *arg)
{
	corpq_shared_model_release(&((VocabHold *) arg)->use);
}

/* cxt lets go of use when it is deleted. */
static void
hold_with(MemoryContext cxt, const CorpqSharedUse *use)
{
	VocabHold  *h = MemoryContextAlloc(cxt, sizeof(VocabHold));

	h->use = *use;
	h->cb.func = let_go_vocab;
	h->cb.arg = h;
	MemoryContextRegisterResetCallback(cxt, &h->cb);
}

static cq_code
fill_wordpiece(const void *obj, void *dst, size_t size, cq_error *err)
{
	return cq_wordpiece_flatten((const cq_wordpiece *) obj, dst, size, err);
}

/*
 * The segmenter name of a vocabulary, in a child of cxt (the
 * CorpqSegmenterLoader of session_vocab): with sharing on, a WordPiece
 * model read in place from the server's shared copy, or loaded and then
 * copied there for the other backends (the private model then goes), under
 * the rules of the token tables (model.h); BPE, SentencePiece and
 * whitespace segmenters, and names that do not fit the directory's, are
 * loaded as before.
 */
static CorpqSegmenter *
session_segmenter(const char *name, MemoryContext cxt, void *arg)
{
	CorpqVocabIdentity id,
				again;
	bool		wordpiece,
				wordpiece_again;
	CorpqModelRef ref = {0};
	CorpqSharedUse use = {.slot = -1};
	CorpqSegmenter *seg = NULL,
			   *shared;
	void	   *base;

	if (!corpq_shared_models_enabled() || name == NULL || strcmp(name, CORPQ_WHITESPACE) == 0 ||
		strlen(name) >= NAMEDATALEN)
		return corpq_segmenter_load(name, cxt);
	corpq_segmenter_identity(name, &id, &wordpiece);
	if (!wordpiece)
		return corpq_segmenter_load(name, cxt);
	ref.catalog = id.catalog;
	ref.id = id.xmin;
	ref.version = id.size;
	ref.checksum = id.created;
	ref.name = (char *) name;
	if ((base = corpq_shared_blob_find(&ref, CORPQ_SHARED_WORDPIECE, &use)) != NULL)
	{
		PG_TRY();
		{
			seg = corpq_segmenter_attach_wordpiece(name, base, use.bytes, cxt);
			if (seg != NULL)
				hold_with(seg->cxt, &use);
		}
		PG_CATCH();
		{
			corpq_shared_model_release(&use);
			PG_RE_THROW();
		}
		PG_END_TRY();
		if (seg != NULL)
			return seg;
		corpq_shared_model_release(&use);
	}
	seg = corpq_segmenter_load(name, cxt);
	/* published only if the rows read are those of the identity (no drop in between) */
	corpq_segmenter_identity(name, &again, &wordpiece_again);
	if (!wordpiece_again || id.catalog != again.catalog || id.xmin != again.xmin ||
		id.created != again.created || id.size != again.size || seg->wp == NULL ||
		cq_wordpiece_size(seg->wp) != id.size)
		return seg;
	base = corpq_shared_blob_publish(&ref, CORPQ_SHARED_WORDPIECE,
									 psprintf("WordPiece segmenter \"%s\"", name),
									 cq_wordpiece_arena_bytes(seg->wp), fill_wordpiece, seg->wp, &use);
	if (base == NULL)
		return seg;
	shared = NULL;
	PG_TRY();
	{
		shared = corpq_segmenter_attach_wordpiece(name, base, use.bytes, cxt);
		if (shared != NULL)
			hold_with(shared->cxt, &use);
	}
	PG_CATCH();
	{
		corpq_shared_model_release(&use);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (shared == NULL)
	{
		corpq_shared_model_release(&use);
		return seg;
	}
	/* the private model goes: the vocabulary segments with the shared one */
	corpq_segmenter_free(seg);
	return shared;
}

/*
 * Vocabulary name for a session, in a child of cxt: with sharing on
 * (model.h), its token table read in place from the server's shared copy,
 * or loaded and then copied there for the other backends (the private table
 * then goes); without, or when the copy stays private, loaded as before.
 * Its segmenter comes from session_segmenter.
 */
static CorpqVocab *
session_vocab(const char *name, MemoryContext cxt)
{
	CorpqVocabIdentity id,
				again;
	CorpqModelRef ref = {0};
	CorpqSharedUse use = {.slot = -1};
	cq_vocabulary tokens;
	CorpqVocab *v = NULL;

	if (!corpq_shared_models_enabled() || strlen(name) >= NAMEDATALEN)
		return corpq_vocab_load_with(name, NULL, session_segmenter, NULL, cxt);
	corpq_vocab_identity(name, &id);
	ref.catalog = id.catalog;
	ref.id = id.xmin;
	ref.version = id.size;
	ref.checksum = id.created;
	ref.name = (char *) name;
	if (corpq_shared_vocab_find(&ref, &use, &tokens))
	{
		PG_TRY();
		{
			v = corpq_vocab_load_with(name, &tokens, session_segmenter, NULL, cxt);
			hold_with(v->cxt, &use);
		}
		PG_CATCH();
		{
			corpq_shared_model_release(&use);
			PG_RE_THROW();
		}
		PG_END_TRY();
		return v;
	}
	v = corpq_vocab_load_with(name, NULL, session_segmenter, NULL, cxt);
	/* published only if the rows read are those of the identity (no drop in between) */
	corpq_vocab_identity(name, &again);
	if (id.catalog != again.catalog || id.xmin != again.xmin || id.created != again.created ||
		id.size != again.size || cq_vocabulary_size(&v->vocab) != id.size)
		return v;
	if (corpq_shared_vocab_publish(&ref, &v->vocab, &use, &tokens))
	{
		/* the private table goes: the vocabulary reads the shared one */
		cq_vocabulary_free(&v->vocab);
		v->vocab = tokens;
		hold_with(v->cxt, &use);
	}
	return v;
}

static void
free_vocabs(CorpqModelSession *s)
{
	if (s->tgt_vocab != s->src_vocab)
		corpq_vocab_free(s->tgt_vocab);
	corpq_vocab_free(s->src_vocab);
	s->src_vocab = s->tgt_vocab = NULL;
}

void
corpq_model_session_use(CorpqModelSession *s, const char *spec, bool pinned)
{
	ListCell   *lc;
	CorpqResolved *r = NULL;
	MemoryContext old;
	const cq_model *m;

	if (s->cur != NULL && strcmp(s->cur->spec, spec) == 0)
		return;
	foreach(lc, s->resolved)
		if (strcmp(((CorpqResolved *) lfirst(lc))->spec, spec) == 0)
			r = lfirst(lc);
	if (r == NULL)
	{
		old = MemoryContextSwitchTo(s->cxt);
		r = palloc0(sizeof(CorpqResolved));
		corpq_model_resolve(spec, pinned, &r->ref);
		r->spec = pstrdup(spec);
		s->resolved = lappend(s->resolved, r);
		MemoryContextSwitchTo(old);
	}
	if (s->src_vocab == NULL || s->cur == NULL ||
		strcmp(s->cur->ref.src_vocab, r->ref.src_vocab) != 0 ||
		strcmp(s->cur->ref.tgt_vocab, r->ref.tgt_vocab) != 0)
	{
		s->cur = NULL;			/* no current model until both are loaded */
		free_vocabs(s);
		s->src_vocab = session_vocab(r->ref.src_vocab, s->cxt);
		s->tgt_vocab = strcmp(r->ref.src_vocab, r->ref.tgt_vocab) == 0 ? s->src_vocab
			: session_vocab(r->ref.tgt_vocab, s->cxt);
	}
	m = corpq_model_get(&r->ref);
	s->cfg = m->cfg;
	s->cur = r;
}

static uint64
mix(uint64 h, uint64 v)
{
	/* splitmix64 finaliser over the running value */
	h ^= v + UINT64CONST(0x9E3779B97F4A7C15) + (h << 6) + (h >> 2);
	h ^= h >> 30;
	h *= UINT64CONST(0xBF58476D1CE4E5B9);
	h ^= h >> 27;
	h *= UINT64CONST(0x94D049BB133111EB);
	return h ^ (h >> 31);
}

uint64
corpq_ids_key(uint64 h, const int32 *ids, int n)
{
	h = mix(h, (uint64) n);
	for (int i = 0; i < n; i++)
		h = mix(h, (uint64) ids[i]);
	return h;
}

void
corpq_model_session_check_length(CorpqModelSession *s, const char *side, int n)
{
	if (n > s->cfg.max_positions - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s sentence has %d tokens, model \"%s\" accepts at most %d",
						side, n, s->cur->spec, s->cfg.max_positions - 1),
				 errhint("The model's max_positions is %d, </s> included; split longer sentences or filter them out.",
						 s->cfg.max_positions)));
}

/* Whether n tokens fit a side; false or an ERROR (on_too_long) if not. */
static bool
side_fits(CorpqModelSession *s, const char *side, int n, CorpqTooLong on_too_long)
{
	if (n <= s->cfg.max_positions - 1)
		return true;
	if (on_too_long == CORPQ_TOO_LONG_ERROR)
		corpq_model_session_check_length(s, side, n);
	return false;
}

bool
corpq_model_session_encode(CorpqModelSession *s, const char *src, int src_len,
					const char *tgt, int tgt_len, CorpqTooLong on_too_long, cq_pair *p)
{
	memset(p, 0, sizeof(*p));
	p->src = corpq_vocab_encode_text(s->src_vocab, src, src_len, &p->src_len);
	if (!side_fits(s, "source", p->src_len, on_too_long))
	{
		pfree((void *) p->src);
		memset(p, 0, sizeof(*p));
		return false;
	}
	p->tgt = corpq_vocab_encode_text(s->tgt_vocab, tgt, tgt_len, &p->tgt_len);
	if (!side_fits(s, "target", p->tgt_len, on_too_long))
	{
		pfree((void *) p->src);
		pfree((void *) p->tgt);
		memset(p, 0, sizeof(*p));
		return false;
	}
	p->key = corpq_ids_key(corpq_ids_key(0, p->src, p->src_len), p->tgt, p->tgt_len);
	return true;
}

void *
corpq_model_session_workspace(CorpqModelSession *s, Size bytes)
{
	if (bytes > s->ws_bytes)
	{
		if (s->ws)
			pfree(s->ws);
		s->ws = NULL;
		s->ws_bytes = 0;
		s->ws = MemoryContextAllocHuge(s->cxt, bytes);
		s->ws_bytes = bytes;
	}
	return s->ws;
}
