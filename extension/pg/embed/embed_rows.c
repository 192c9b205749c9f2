/*
 * Sentences embedded in batches: corpq_embed_rows() (embed.h), behind
 * corpq.embed() and every caller that embeds many sentences at once.  The
 * sentences are encoded with the model's vocabulary, ordered by length so
 * that a batch holds sentences of similar length (smaller attention blocks),
 * embedded batch by batch and their vectors put back in the rows' order.
 * cq_encode packs sentences without padding and pools each alone, so a
 * sentence's vector does not depend on its batch: every caller returns
 * exactly what corpq.embed() returns for the sentence.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/memutils.h"

#include "common/parallel.h"
#include "nn/infer/encode.h"
#include "pg/base/base.h"
#include "pg/base/errors.h"
#include "pg/embed/embed.h"
#include "pg/model/model.h"

void
corpq_embed_not_encoder(const char *model, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("model \"%s\" is not an encoder model", model),
			 errhint("%s needs a model created with \"kind\": \"encoder\"; "
					 "a translation model scores pairs (corpq.sent_prob).", what)));
}

void
corpq_embed_require_encoder(const CorpqModelSession *s, const char *what)
{
	if (s->cfg.kind != CQ_KIND_ENCODER)
		corpq_embed_not_encoder(s->cur->spec, what);
}

Datum
corpq_embed_array(const float *v, int d)
{
	Size		bytes = ARR_OVERHEAD_NONULLS(1) + sizeof(float4) * d;
	ArrayType  *a = palloc0(bytes);

	/* construct_array's layout, without a Datum per element */
	SET_VARSIZE(a, bytes);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = FLOAT4OID;
	ARR_DIMS(a)[0] = d;
	ARR_LBOUND(a)[0] = 1;
	memcpy(ARR_DATA_PTR(a), v, sizeof(float4) * d);
	return PointerGetDatum(a);
}

int
corpq_embed_dim(const CorpqModelSession *s)
{
	return s->cfg.d_model;
}

int
corpq_embed_block_rows(int batch_size)
{
	return Min(Max(1024, Min(batch_size, 1 << 16) * 8), 8192);
}

/* A row's encoded sentence, for sorting by length. */
typedef struct Encoded
{
	cq_sentence sentence;
	int			row;			/* index into the rows */
} Encoded;

static int
cmp_length(const void *a, const void *b)
{
	const Encoded *x = *(Encoded *const *) a;
	const Encoded *y = *(Encoded *const *) b;

	if (x->sentence.len != y->sentence.len)
		return x->sentence.len < y->sentence.len ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/*
 * Encode row r into e; false (the row null) for a NULL sentence or, with
 * on_too_long null, one longer than the model accepts (an ERROR otherwise).
 */
static bool
encode_row(CorpqModelSession *s, CorpqTooLong on_too_long, CorpqEmbedRow *r, Encoded *e)
{
	int			most = cq_config_sentence_tokens(&s->cfg);

	if (r->text == NULL)
		return false;
	e->sentence.ids = corpq_vocab_encode_text(s->src_vocab, r->text, r->len, &e->sentence.len);
	e->sentence.key = 0;		/* eval mode: no dropout masks */
	if (e->sentence.len <= most)
		return true;
	if (on_too_long == CORPQ_TOO_LONG_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("sentence has %d tokens, model \"%s\" accepts at most %d",
						e->sentence.len, s->cur->spec, most),
				 errhint("The model's max_positions is %d, <s> and </s> included; split longer sentences or filter them out.",
						 s->cfg.max_positions)));
	pfree((int32 *) e->sentence.ids);
	return false;
}

/*
 * How many of order[0..m) go in the next pass: at most max_n, within the
 * core's positions per batch and corpq.max_batch_mb (the workspace and the
 * batch's vectors).  One sentence that does not fit alone is an ERROR.
 */
static int
batch_cut(const CorpqModelSession *s, Encoded *const *order, int m, int max_n, Size *ws_bytes)
{
	Size		limit = corpq_batch_bytes_limit();
	long		positions = 0;
	int			longest = 0;
	int			nb;

	*ws_bytes = 0;
	for (nb = 0; nb < m && nb < max_n; nb++)
	{
		int			len = order[nb]->sentence.len + 2;
		Size		bytes;

		if (positions + len > CQ_MAX_BATCH_POSITIONS)
			break;
		bytes = cq_encode_workspace_bytes(&s->cfg, nb + 1, positions + len, Max(longest, len)) +
			(Size) (nb + 1) * s->cfg.d_model * sizeof(float);
		if (bytes > limit)
		{
			if (nb == 0)
				corpq_batch_too_large(1, "sentence", bytes);
			break;
		}
		positions += len;
		longest = Max(longest, len);
		*ws_bytes = bytes;
	}
	return nb;
}

/* Embed order[0..m) in batches; each vector into its row's place in out. */
static void
embed_encoded(CorpqModelSession *s, const CorpqEmbedArgs *a, Encoded **order, int m, float *out)
{
	int			d = s->cfg.d_model;
	int			cap = Min(Max(a->batch_size, 1), m);
	cq_sentence *batch = palloc(sizeof(cq_sentence) * cap);
	float	   *vecs = palloc(sizeof(float) * cap * d);

	corpq_blas_ensure();
	for (int b = 0, nb; b < m; b += nb)
	{
		const cq_model *model;
		Size		ws_bytes;
		cq_error	err = {0};

		int			threads = cq_parallel_threads();

		CHECK_FOR_INTERRUPTS();
		nb = batch_cut(s, order + b, m - b, cap, &ws_bytes);
		for (int i = 0; i < nb; i++)
			batch[i] = order[b + i]->sentence;
		/*
		 * On several threads the sentences go to the pool in parts, each with
		 * a workspace of its own: the same bits as on one thread, which needs
		 * less (the batch was cut to fit that).
		 */
		if (threads > 1)
		{
			Size		parallel = cq_encode_parallel_bytes(&s->cfg, batch, nb, threads) +
				(Size) nb * s->cfg.d_model * sizeof(float);

			if (parallel <= corpq_batch_bytes_limit())
				ws_bytes = Max(ws_bytes, parallel);
			else
				threads = 1;
		}
		(void) corpq_model_session_workspace(s, ws_bytes);
		/* looked up for every batch: anything run since may have evicted it */
		model = corpq_model_get(&s->cur->ref);
		if (cq_encode_parallel(model, batch, nb, NULL, threads, s->ws, s->ws_bytes, vecs, &err) != CQ_OK)
			corpq_core_error(&err, NULL, "could not embed the sentences");
		for (int i = 0; i < nb; i++)
			memcpy(out + (Size) order[b + i]->row * d, vecs + (Size) i * d, sizeof(float) * d);
	}
	pfree(batch);
	pfree(vecs);
}

void
corpq_embed_rows(CorpqModelSession *s, const CorpqEmbedArgs *a, CorpqEmbedRow *rows, int n, float *out)
{
	MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext, "corpq embed rows",
												  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(scratch);
	Encoded    *enc = palloc(sizeof(Encoded) * Max(n, 1));
	Encoded   **order = palloc(sizeof(Encoded *) * Max(n, 1));
	int			m = 0;

	corpq_require_utf8();
	corpq_embed_require_encoder(s, "Embedding sentences");
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		rows[i].null = !encode_row(s, a->on_too_long, &rows[i], &enc[i]);
		if (rows[i].null)
			continue;
		rows[i].tokens = enc[i].sentence.len;
		enc[i].row = i;
		order[m++] = &enc[i];
	}
	if (m > 0)
	{
		qsort(order, m, sizeof(Encoded *), cmp_length);
		embed_encoded(s, a, order, m, out);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(scratch);
}
