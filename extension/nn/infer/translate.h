/*
 * Translation: beam search, greedy decoding and sampling on an incremental
 * decoder, batched over sentences.
 *
 * Search follows fairseq's SequenceGenerator (BeamSearch and Sampling):
 *   - the decoder reads [start, y_1 ..] (start: </s>, or the model's
 *     decoder_start_id); step s (0-based) predicts y_{s+1};
 *     logits are divided by `temperature`, then log-softmax;
 *   - then, in this order: NaN -> -inf, <s> and <pad> -> -inf (fairseq masks
 *     <pad> only; <s> has no text either, so a hypothesis's text would not
 *     give back its tokens), <unk> -= unk_penalty;
 *     at step >= max_len every token but </s> -> -inf, else at step < min_len
 *     </s> -> -inf; tokens completing an n-gram (no_repeat_ngram_size) that
 *     the hypothesis already holds -> -inf;
 *   - beam: the best 2*beam (hypothesis, token) candidates by cumulative
 *     score (step 0: from one hypothesis only); a </s> candidate among the
 *     first `beam` with a finite score is finalised with score
 *     sum / (T + 1)^lenpen (T tokens + </s>); the first `beam` other
 *     candidates go on; a sentence is done when `beam` hypotheses are final or
 *     at step max_len; its final hypotheses are sorted by score (stable);
 *   - sampling: each of the `beam` hypotheses draws its next token from its
 *     distribution (restricted to the topk most probable, or to the smallest
 *     most-probable set of mass >= topp), by inverse CDF with a uniform from
 *     Philox keyed by (seed, sentence id) at counter (hypothesis, step): a
 *     sentence samples the same whatever batch, backend or worker runs it.
 *   - max_len = min(trunc(max_len_a * (|src| + 1) + max_len_b),
 *     max_positions - 1) for |src| source tokens (+1: </s>, as fairseq sizes a
 *     sentence decoded alone; per sentence, never from the batch's padding).
 *
 * Where corpq differs from fairseq, by design:
 *   - an empty source gives </s> only (max_len 0);
 *   - min_len never goes past max_len (fairseq asserts min_len <= max_len);
 *   - no_repeat_ngram_size counts n-grams of y_1 .. y_s only (fairseq also
 *     counts the leading </s>, which changes nothing for n >= 2 and bans </s>
 *     for ever for n = 1);
 *   - ties between equal candidates go to the lower (hypothesis, token) index.
 *
 * Finished or cut: as in fairseq, the search forces </s> at step max_len (every
 * other token is -inf there), so every hypothesis ends with </s>.  One whose
 * </s> came at max_len, where nothing else was allowed, is cut (finished
 * false): it ran on to the length limit.  Its score is computed as any
 * other's, the forced </s>'s log-probability included.  An empty source
 * (max_len 0) gives a finished empty hypothesis.
 *
 * Scores: a hypothesis's token_logprobs are the per-step search scores
 * (temperature-scaled log-softmax, <unk> penalised); logprob is their sum and
 * score = logprob / (len + 1)^lenpen.  With temperature 1 and unk_penalty 0,
 * logprob is the teacher-forced sent_logprob of (source, hypothesis).
 *
 * Determinism: every per-sentence quantity (attention, softmax, search,
 * sampling) is computed from that sentence's rows alone, in a fixed order;
 * products with weight matrices go through cq_linear_rows, which gives a row
 * the same bits whatever other rows it is called with on a model packed by
 * cq_model_pack (nn/ops/rowgemm.h).  With such a model a sentence's output is the
 * same in any batch, and its token log-probabilities are the teacher-forced
 * forward's bit for bit.
 *
 * Memory: one caller-owned workspace of cq_translator_bytes() holds every
 * buffer: per slot the source, the cross-attention keys and values and the
 * hypotheses; per hypothesis the self-attention keys and values of every
 * layer for max_len + 1 positions (only the positions reached are touched).
 * The core allocates nothing, so a caller may longjmp out between calls.
 */
#ifndef CQ_NN_TRANSLATE_H
#define CQ_NN_TRANSLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/model/model.h"
#include "common/error.h"

typedef enum cq_search
{
	CQ_SEARCH_BEAM = 0,			/* beam search; beam 1 = greedy */
	CQ_SEARCH_SAMPLE			/* sampling, `beam` samples per sentence */
} cq_search;

typedef struct cq_translate_options
{
	cq_search	search;
	int			beam;			/* hypotheses per sentence, >= 1 */
	int			nbest;			/* returned per sentence, 1 .. beam */
	double		lenpen;			/* score = logprob / (len + 1)^lenpen */
	double		max_len_a;		/* max_len = a (|src| + 1) + b, see above */
	int			max_len_b;		/* >= 0 */
	int			min_len;		/* tokens before </s> may come, >= 0 */
	int			no_repeat_ngram_size;	/* 0 = off */
	double		unk_penalty;	/* subtracted from <unk>'s log-probability */
	double		temperature;	/* in [CQ_TEMPERATURE_MIN, CQ_TEMPERATURE_MAX];
								 * logits are divided by it */
	int			topk;			/* sampling: 0 = off, else 1 .. vocabulary */
	double		topp;			/* sampling: 0 = off, else (0, 1] */
	uint64_t	seed;			/* sampling */
} cq_translate_options;

/*
 * The temperature's bounds.  Below 1e-3 the scaled logits (float32) can
 * overflow (a logit difference d becomes d / temperature; 1e-300 or a
 * subnormal turns every finite logit into +-inf and the search finds
 * nothing), and nothing is lost: at 1e-3 a logit gap of 0.05 is already a
 * probability ratio of e^50, which is greedy search.
 */
#define CQ_TEMPERATURE_MIN 1e-3
#define CQ_TEMPERATURE_MAX 1000.0

/* fairseq's defaults: beam 5, nbest 1, lenpen 1, max_len 0 |src| + 200, min_len 1. */
void		cq_translate_options_default(cq_translate_options *o);

/* CQ_EINVAL with a message naming the option when one is out of range. */
cq_code cq_translate_options_check(const cq_translate_options *o,
										const cq_model_config *cfg, cq_error *err);

/* max_len (output tokens, </s> excluded) for a source of src_len tokens. */
int			cq_translate_max_len(const cq_translate_options *o,
								 const cq_model_config *cfg, int src_len);

/* A sentence to translate: ids in the source vocabulary, without </s>. */
typedef struct cq_source
{
	const int32_t *ids;
	int			len;
	uint64_t	id;				/* keys the sampling stream; echoed back */
	int64_t		tag;			/* the caller's, echoed back */
} cq_source;

typedef struct cq_hypothesis
{
	const int32_t *tokens;		/* y_1 .. y_len, </s> not included */
	int			len;
	const float *token_logprobs;	/* [len + 1]: y_1 .. y_len, then </s> */
	double		logprob;		/* their sum */
	double		score;			/* logprob / (len + 1)^lenpen */
	bool		finished;		/* </s> chosen before max_len; false: cut */
} cq_hypothesis;

/* A finished sentence: its best hypotheses, best first. */
typedef struct cq_translation
{
	uint64_t	id;
	int64_t		tag;
	int			n_hyps;			/* nbest; fewer only if the model gave no
								 * finite score (non-finite weights) */
	const cq_hypothesis *hyps;
} cq_translation;

/* What a caller reports as progress. */
typedef struct cq_translate_progress
{
	int64_t		sentences;		/* finished */
	int64_t		tokens;			/* of their best hypotheses, </s> included */
	int64_t		steps;			/* decoder steps run */
	int64_t		positions;		/* hypothesis positions decoded */
	int			active;			/* sentences in the batch now */
} cq_translate_progress;

/* ---- the translator: a batch of sentence slots, kept full by the caller --- */

typedef struct cq_translator cq_translator;

/*
 * Workspace bytes for `batch` sentences of at most max_src_len tokens each.
 * 0 when options or sizes are invalid (cq_translator_init says why).
 */
size_t		cq_translator_bytes(const cq_model *m, const cq_translate_options *o,
								int batch, int max_src_len);

/* A translator in ws (at least cq_translator_bytes()); *out points into ws. */
cq_code cq_translator_init(const cq_model *m, const cq_translate_options *o,
								int batch, int max_src_len, void *ws, size_t ws_bytes,
								cq_translator **out, cq_error *err);

/* Slots that cq_translator_admit() can fill now. */
int			cq_translator_free_slots(const cq_translator *t);

/*
 * Puts a sentence into a free slot (its ids are copied); it is encoded at the
 * next step.  CQ_ELIMIT when the source exceeds the model's positions
 * (the message names the limit), CQ_EINVAL for an id outside the
 * vocabulary, a source longer than the translator was sized for, or no free
 * slot.
 */
cq_code cq_translator_admit(cq_translator *t, const cq_source *src,
								 cq_error *err);

/* True while an admitted sentence has not been returned by _next(). */
bool		cq_translator_busy(const cq_translator *t);

/*
 * One decoding step for every sentence in the batch (encoding the newly
 * admitted first).  Sentences that finish wait for cq_translator_next().
 * Returns between steps, so the caller can check for interrupts.
 */
cq_code cq_translator_step(cq_translator *t, cq_error *err);

/*
 * Takes a finished sentence (in the order they finished) and frees its slot;
 * false when there is none.  *out points into the workspace and stays valid
 * until the next cq_translator_admit() or cq_translator_step().
 */
bool		cq_translator_next(cq_translator *t, cq_translation *out);

const cq_translate_progress *cq_translator_progress(const cq_translator *t);

/* ---- all at once: an array of sources, results through a callback -------- */

typedef struct cq_translate_io
{
	/* each finished sentence (data valid during the call only) */
	void		(*emit) (void *arg, const cq_translation *t);
	/* after every step, may be NULL; returning false cancels (CQ_STOPPED) */
	bool		(*tick) (void *arg, const cq_translate_progress *p);
	void	   *arg;
} cq_translate_io;

/* Workspace bytes for cq_translate() over these sources. */
size_t		cq_translate_bytes(const cq_model *m, const cq_translate_options *o,
							   const cq_source *srcs, int n, int batch);

/*
 * Translates n sources, `batch` at a time, refilling slots as sentences
 * finish.  Every source is checked before any work.  emit() and tick() may
 * longjmp out (the core holds nothing but ws).
 */
cq_code cq_translate(const cq_model *m, const cq_translate_options *o,
						  const cq_source *srcs, int n, int batch,
						  void *ws, size_t ws_bytes, const cq_translate_io *io,
						  cq_error *err);

#endif
