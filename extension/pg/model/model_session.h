/*
 * The model session (model_session.c): how every user of a catalog model --
 * scoring (pg/score), translation (pg/translate), embeddings (pg/embed) --
 * holds one for the length of a query, a set-returning call or a job.
 *
 * A session remembers every model name it resolved, so the query keeps the
 * version it started with even if a new one is committed meanwhile; holds
 * the vocabularies of the current model and encodes sentences with them,
 * checking the model's length limit; and keeps a work space and the forward
 * pass's output arrays that its user reuses across calls.  The model itself
 * stays in the backend's cache (model.h): a session looks it up
 * again each time it runs it, since anything run in between may have
 * evicted it.
 */
#ifndef CORPQ_MODEL_SESSION_H
#define CORPQ_MODEL_SESSION_H

#include "postgres.h"

#include "fmgr.h"
#include "nodes/pg_list.h"

#include "nn/infer/forward.h"
#include "pg/model/model.h"
#include "pg/text/text.h"

typedef struct CorpqResolved
{
	char	   *spec;			/* as given: "name" or "name@N" */
	CorpqModelRef ref;
} CorpqResolved;

typedef struct CorpqModelSession
{
	MemoryContext cxt;			/* owns everything below */
	List	   *resolved;		/* CorpqResolved *, every spec seen */
	CorpqResolved *cur;
	CorpqVocab *src_vocab;
	CorpqVocab *tgt_vocab;
	cq_model_config cfg;		/* of the current model */

	void	   *ws;				/* work space (corpq_model_session_workspace) */
	Size		ws_bytes;
	cq_forward_out out;			/* a forward's outputs (pg/score), out_rows / out_pairs long */
	long		out_rows;
	int			out_pairs;
} CorpqModelSession;

/* The session in fn_extra (created on first use, in fn_mcxt). */
CorpqModelSession *corpq_model_session_cached(FunctionCallInfo fcinfo);
CorpqModelSession *corpq_model_session_create(MemoryContext parent);

/* Make spec the current model (resolving it once per session). */
void		corpq_model_session_use(CorpqModelSession *s, const char *spec, bool pinned);

/*
 * Encode a pair with the current model's vocabularies into p (ids palloc'd
 * in CurrentMemoryContext).  A side longer than max_positions - 1 tokens is
 * an ERROR naming the limit (CORPQ_TOO_LONG_ERROR) or makes it return false
 * with nothing in p (CORPQ_TOO_LONG_NULL); true when p can be run.
 * p->key is a hash of the ids, so a pair's dropout masks depend on its
 * content only, never on its batch.
 */
bool		corpq_model_session_encode(CorpqModelSession *s, const char *src, int src_len,
									   const char *tgt, int tgt_len, CorpqTooLong on_too_long,
									   cq_pair *p);

/*
 * ERROR (program_limit_exceeded) naming the current model's limit when a
 * side ("source", "target") of n tokens exceeds max_positions - 1.
 */
void		corpq_model_session_check_length(CorpqModelSession *s, const char *side, int n);

/*
 * s->ws at least bytes long (its contents are not kept when it grows),
 * allocated in the session's context.
 */
void	   *corpq_model_session_workspace(CorpqModelSession *s, Size bytes);

/*
 * h extended with n token ids: the content key of a sentence, so that what
 * is drawn for it (dropout masks, samples) depends on its tokens only.
 */
uint64		corpq_ids_key(uint64 h, const int32 *ids, int n);

#endif
