/*
 * corpq.train(): validation and submission in the caller's backend, and the
 * "train" job: read and encode the corpora, build one batcher per stream,
 * then update after update -- a log row per update in its own short
 * transaction, validation and checkpoints (one transaction each: model
 * version + state row + pruning) every so often and at the end -- and the
 * result in the final transaction.  After a crash the job restarts from its
 * last checkpoint, data cursor and optimizer state included.
 */
#include "postgres.h"

#include <math.h>
#include <sys/resource.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "nn/infer/batching.h"
#include "nn/model/modelfile.h"
#include "nn/train/schedule.h"
#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/options.h"
#include "pg/base/base.h"
#include "pg/model/model.h"
#include "pg/train/train.h"
#include "pg/train/train_schedule.h"
#include "pg/train/train_job.h"
#include "pg/train/train_sampler.h"

/* ---- submission ---- */

/*
 * Training needs float32 weights: an int8 latest version (model_quantize)
 * is refused, naming the float32 version it came from.
 */
static void
refuse_int8(const char *name, const CorpqModelRef *ref)
{
	int32		from;

	if (!corpq_model_version_int8(ref->id, ref->version, &from))
		return;
	if (from > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot train model \"%s\": its latest version %d is int8", name, ref->version),
				 errdetail("Version %d is version %d quantized by corpq.model_quantize(); training needs float32 weights.",
						   ref->version, from),
				 errhint("Train a copy of the float32 version: SELECT corpq.model_import('%s_ft', corpq.model_export('%s@%d'), src_vocab, tgt_vocab).",
						 name, name, from)));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot train model \"%s\": its latest version %d is int8", name, ref->version),
			 errhint("Training needs float32 weights: import a float32 version of the model.")));
}

/* The model's id; ERROR unless the current user may write it. */
static int64
check_model(const char *name, CorpqModelRef *ref)
{
	if (strchr(name, '@') != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot train a pinned model version \"%s\"", name),
				 errhint("Pass the model name: training starts from its latest version and writes new versions.")));
	corpq_model_resolve(name, false, ref);
	corpq_catalog_check_writer(&corpq_kind_model, name, "train",
							   "Only members of the model's owner role can train it.");
	refuse_int8(name, ref);
	return ref->id;
}

/* Whether the catalog's configuration of model id says kind encoder. */
static bool
model_is_encoder(int64 id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		v[1] = {Int64GetDatum(id)};
	char	   *kind;
	bool		encoder;

	SPI_connect();
	if (corpq_sql_as_caller("SELECT config OPERATOR(pg_catalog.->>) 'kind' FROM corpq.model_catalog "
							"WHERE id OPERATOR(pg_catalog.=) $1",
							1, argtypes, v, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the configuration of model %lld", (long long) id);
	kind = SPI_processed == 1 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : NULL;
	encoder = kind != NULL && strcmp(kind, "encoder") == 0;
	SPI_finish();
	return encoder;
}

PG_FUNCTION_INFO_V1(corpq_train);

Datum
corpq_train(PG_FUNCTION_ARGS)
{
	char	   *model,
			   *corpus,
			   *dev = NULL;
	TrainOptions o;
	CorpqModelRef ref;
	int64		model_id;
	StringInfoData args;

	corpq_require_arg(fcinfo, 0, "model");
	corpq_require_arg(fcinfo, 1, "corpus");
	model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	corpus = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (!PG_ARGISNULL(2))
		dev = text_to_cstring(PG_GETARG_TEXT_PP(2));
	corpq_require_utf8();
	train_options_parse(PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3), &o);
	if (train_strategy_find(o.strategy)->update && dev == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("strategy \"%s\" needs a dev query", o.strategy),
				 errhint("Pass a dev query returning (src, tgt, label) with rows of every corpus label.")));
	model_id = check_model(model, &ref);
	train_options_resolve_model(&o, model_is_encoder(model_id));
	/* unknown vocabularies or BPE models error here, listing the existing ones */
	corpq_vocab_free(corpq_vocab_load(ref.src_vocab, CurrentMemoryContext));
	corpq_vocab_free(corpq_vocab_load(ref.tgt_vocab, CurrentMemoryContext));
	train_check_query(corpus, "corpus");
	if (dev)
		train_check_query(dev, "dev");

	initStringInfo(&args);
	appendStringInfoString(&args, "{\"model\": ");
	escape_json(&args, model);
	appendStringInfo(&args, ", \"model_id\": " INT64_FORMAT ", \"corpus\": ", model_id);
	escape_json(&args, corpus);
	appendStringInfoString(&args, ", \"dev\": ");
	if (dev)
		escape_json(&args, dev);
	else
		appendStringInfoString(&args, "null");
	appendStringInfo(&args, ", \"options\": %s}", train_options_json(&o));
	PG_RETURN_INT64(corpq_job_submit("train", args.data, o.threads));
}

/* ---- the job ---- */

/* One source of batches: a batcher over a subset of the corpus. */
typedef struct Stream
{
	long		n;				/* pairs in it */
	long	   *index;			/* [n] corpus pair index of each */
	cq_batcher *b;				/* NULL when no pair fits */
} Stream;

/* Everything the loop works with. */
typedef struct Run
{
	CorpqJob   *job;
	MemoryContext cxt;
	TrainOptions o;
	char	   *model_name;
	int64		model_id;
	const char *corpus_query;	/* the corpus and dev queries (dev NULL: none) */
	const char *dev_query;
	TrainCorpus corpus;
	TrainCorpus dev;
	bool		has_dev;
	int		   *dev_label;		/* [n_labels] dev label of each corpus, -1 none */
	const TrainStrategy *strategy;
	int			n_streams;
	Stream	   *streams;
	long	   *size;			/* [n_labels] pairs that fit a batch */
	long		kept;
	long		batches;		/* batches per epoch, all streams */
	TrainSampler *sampler;
	TrainCursor cur;
	cq_train_state *st;
	float		dropout[3];		/* the catalog's rates, restored in version images */
	TrainSchedule sched;		/* updates expected, warm-up, cadences */
	int64		resumed_from;	/* step of the checkpoint resumed, -1 none */
	TrainDevFigures devf;
	double		last_dev;
	char	   *last_dev_json;
	TrainDevFigures best_devf;
	bool		have_best;
	double		last_loss;
	double		last_nll;
} Run;

/* The latest version's model, loaded into the current context. */
static cq_model *
load_latest(Run *r, CorpqModelRef *ref)
{
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext tmp;
	Size		len;
	char	   *image;
	cq_model   *m;
	cq_error err = {0};
	cq_code s;

	/* the worker checks again: the owner may have changed since submission */
	if (check_model(r->model_name, ref) != r->model_id)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" was dropped and created again since the job was submitted",
						r->model_name)));
	/* the image, read chunk by chunk, is freed once the model is loaded */
	tmp = AllocSetContextCreate(cxt, "corpq model image", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(tmp);
	image = corpq_model_image_read(ref->id, ref->version, r->model_name, -1, &len);
	MemoryContextSwitchTo(cxt);
	s = cq_modelfile_load(image, len, &m, &err);
	MemoryContextDelete(tmp);
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "could not load model");
	return m;
}

/* Streams, batchers, sampler; ERROR when no pair fits a batch. */
static void
build_streams(Run *r, int max_positions)
{
	TrainCorpus *c = &r->corpus;
	int			nl = c->n_labels;

	r->strategy = train_strategy_find(r->o.strategy);
	r->n_streams = r->strategy->per_corpus ? nl : 1;
	r->streams = palloc0(sizeof(Stream) * r->n_streams);
	r->size = palloc0(sizeof(long) * nl);
	for (long i = 0; i < c->n_pairs; i++)
	{
		Stream	   *s = &r->streams[r->strategy->per_corpus ? c->label[i] : 0];

		s->n++;
		/* the batcher's rule: a pair costs max(len) + 1 tokens of the budget */
		if (Max(c->src_len[i], c->tgt_len[i]) + 1 <= r->o.max_tokens)
			r->size[c->label[i]]++;
	}
	for (int k = 0; k < r->n_streams; k++)
	{
		Stream	   *s = &r->streams[k];
		int		   *sl = palloc(sizeof(int) * Max(s->n, 1));
		int		   *tl = palloc(sizeof(int) * Max(s->n, 1));
		long		j = 0;
		cq_error err = {0};
		cq_code st;

		s->index = palloc(sizeof(long) * Max(s->n, 1));
		for (long i = 0; i < c->n_pairs; i++)
			if (!r->strategy->per_corpus || c->label[i] == k)
			{
				s->index[j] = i;
				sl[j] = c->src_len[i];
				tl[j] = c->tgt_len[i];
				j++;
			}
		st = cq_batcher_new(sl, tl, s->n, r->o.max_tokens, max_positions,
							(uint64) r->o.seed, &s->b, &err);
		if (st != CQ_OK)
			corpq_core_error(&err, NULL, "could not batch the corpus");
		if (s->b->n_kept == 0)
			s->b = NULL;
		else
			r->batches += s->b->n_batches;
		r->kept += s->b ? s->b->n_kept : 0;
		pfree(sl);
		pfree(tl);
	}
	if (r->kept == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("no training pair fits a batch of max_tokens = %d", r->o.max_tokens),
				 errdetail("%ld pairs were read; a pair needs max(source, target tokens) + 1 <= max_tokens.",
						   c->n_pairs)));
	r->sampler = train_sampler_new(r->strategy, &r->o, nl, (const char *const *) c->labels, r->size);
}

static void
init_cursor(Run *r)
{
	TrainCursor *cur = &r->cur;
	int			nl = r->corpus.n_labels;

	memset(cur, 0, sizeof(*cur));
	cur->n_streams = r->n_streams;
	cur->epoch = palloc0(sizeof(int64) * r->n_streams);
	cur->next = palloc0(sizeof(int64) * r->n_streams);
	cur->n_corpora = nl;
	cur->prob = r->sampler->prob;	/* shared: the cursor saves the sampler's */
	cur->draws = r->sampler->draws;
	cur->pairs = palloc0(sizeof(int64) * nl);
	cur->best_dev = NAN;
}

/*
 * The hyper-parameters; peak rate and warm-up are the schedule's
 * (plan_schedule), the defaults stand in until then.
 */
static void
train_config(Run *r, cq_train_config *tc)
{
	const TrainOptions *o = &r->o;

	cq_train_config_default(tc);
	tc->warmup_init_lr = o->warmup_init_lr;
	tc->warmup_updates = 0;
	tc->adam.weight_decay = (float) o->weight_decay;
	tc->clip_norm = o->clip_norm;
	tc->label_smoothing = (float) o->label_smoothing;
	tc->margin = (float) o->margin;
	tc->scale = (float) o->scale;
	tc->update_freq = o->update_freq;
	tc->max_tokens = o->max_tokens;
	tc->seed = (uint64) o->seed;
	tc->dropout = true;
}

/*
 * A calibration pass (train_schedule_plan): the gradients of the k-th
 * update's batches, taken from epoch 0 without moving the data cursor and
 * not applied (the state is unchanged but for its workspace); its seconds,
 * batch assembly included as in an update.
 */
static double
calibration_pass(void *arg, int k)
{
	Run		   *r = arg;
	int			n = r->o.update_freq;
	int			live = 0;
	Stream	  **s = palloc(sizeof(Stream *) * r->n_streams);
	cq_train_batch *batches = palloc(sizeof(cq_train_batch) * n);
	TimestampTz t0 = GetCurrentTimestamp();
	cq_train_stats stats;
	cq_error err = {0};
	cq_code st;
	double		seconds;

	corpq_job_progress(r->job, "calibrating", k, CQ_SCHEDULE_CALIBRATION_PASSES + 1, "passes",
					   NULL, true);
	for (int i = 0; i < r->n_streams; i++)
		if (r->streams[i].b)
			s[live++] = &r->streams[i];
	for (int j = 0; j < n; j++)
	{
		int64		g = (int64) k * n + j;
		Stream	   *one = s[g % live];
		const long *idx;
		int			np;
		cq_pair    *pairs;

		st = cq_batcher_batch(one->b, 0, (long) ((g / live) % one->b->n_batches), &idx, &np, &err);
		if (st != CQ_OK)
			corpq_core_error(&err, NULL, "could not take a calibration batch");
		pairs = palloc(sizeof(cq_pair) * np);
		for (int i = 0; i < np; i++)
			train_corpus_pair(&r->corpus, one->index[idx[i]], &pairs[i]);
		batches[j].pairs = pairs;
		batches[j].n_pairs = np;
	}
	st = cq_train_gradients(r->st, batches, n, &stats, &err);
	if (st != CQ_OK)
		corpq_core_error(&err, NULL, "calibration pass failed");
	seconds = (double) (GetCurrentTimestamp() - t0) / USECS_PER_SEC;
	for (int j = 0; j < n; j++)
		pfree((void *) batches[j].pairs);
	pfree(batches);
	pfree(s);
	return seconds;
}

/*
 * A fresh run's schedule: the plan (calibrating a time budget on the state
 * just made, whose seconds count in the budget) and its warm-up in the state.
 */
static void
plan_schedule(Run *r)
{
	const TrainOptions *o = &r->o;
	int64		epoch_updates = o->epochs > 0 ? (int64) ceil(o->epochs * r->batches / o->update_freq) : 0;
	cq_error err = {0};
	cq_code st;

	train_schedule_plan(o, r->st->model->cfg.d_model, epoch_updates, r->cur.seconds,
						calibration_pass, r, &r->sched);
	r->cur.seconds += r->sched.calibration_seconds;
	r->cur.schedule = r->sched.json;
	r->st->tc.lr = r->sched.lr;
	r->st->tc.warmup_updates = r->sched.warmup;
	if ((st = cq_train_config_validate(&r->st->tc, &err)) != CQ_OK)
		corpq_core_error(&err, NULL, "could not start training");
}

/* A resumed distribution: valid, and no mass on a corpus without batches. */
static void
check_resumed_prob(Run *r)
{
	train_check_prob(r->job->id, r->sampler->prob, r->sampler->n);
	if (r->strategy->per_corpus)
		for (int c = 0; c < r->n_streams; c++)
			if (r->sampler->prob[c] > 0 && r->streams[c].b == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the last checkpoint of training job " INT64_FORMAT " draws from an empty corpus",
								r->job->id),
						 errdetail("Corpus \"%s\" has probability %g but no pair fits a batch.",
								   r->corpus.labels[c], r->sampler->prob[c])));
}

/*
 * A resumed state must be the catalog's architecture (dropout rates aside:
 * options may override them) and its cursor must point into this run's
 * batches; its distribution must draw only corpora that have batches.
 */
static void
check_resumed(Run *r, const cq_model *init)
{
	cq_model_config have = r->st->model->cfg;
	char		json_a[1024],
				json_b[1024];

	have.dropout = init->cfg.dropout;
	have.attention_dropout = init->cfg.attention_dropout;
	have.activation_dropout = init->cfg.activation_dropout;
	if (!cq_config_equal(&have, &init->cfg))
	{
		cq_config_to_json(&init->cfg, json_a, sizeof(json_a));
		cq_config_to_json(&have, json_b, sizeof(json_b));
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the last checkpoint of training job " INT64_FORMAT " does not fit model \"%s\"",
						r->job->id, r->model_name),
				 errdetail("The model has %s; the checkpoint has %s.", json_a, json_b)));
	}
	for (int k = 0; k < r->n_streams; k++)
		if (r->cur.next[k] >= (r->streams[k].b ? r->streams[k].b->n_batches : 1))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the last checkpoint of training job " INT64_FORMAT " does not match its corpus",
							r->job->id),
					 errdetail("Its cursor points past the batches of corpus stream %d.", k),
					 errhint("Corpus queries of restartable training jobs must return the same rows each time.")));
	check_resumed_prob(r);
}

/* The dropout rates the options give, over the model's. */
static void
override_dropout(cq_model_config *c, const TrainOptions *o)
{
	if (o->dropout >= 0)
		c->dropout = (float) o->dropout;
	if (o->attention_dropout >= 0)
		c->attention_dropout = (float) o->attention_dropout;
	if (o->activation_dropout >= 0)
		c->activation_dropout = (float) o->activation_dropout;
}

/* Start from the latest version, or resume from the job's last checkpoint. */
static void
start_state(Run *r, const cq_model *init, int32 init_version)
{
	cq_train_config tc;
	cq_error err = {0};
	cq_code s;

	r->dropout[0] = init->cfg.dropout;
	r->dropout[1] = init->cfg.attention_dropout;
	r->dropout[2] = init->cfg.activation_dropout;
	train_config(r, &tc);
	r->resumed_from = -1;
	corpq_job_xact_begin(r->cxt);
	/* the state must outlive the transaction's SPI context */
	MemoryContextSwitchTo(r->cxt);
	if (train_checkpoint_resume(r->job->id, r->model_id, &r->st, &r->cur))
		r->resumed_from = r->st->step;
	corpq_job_xact_commit(r->cxt);
	if (r->st != NULL)
	{
		check_resumed(r, init);
		/* the schedule it was planned with, not a new one */
		if (r->cur.schedule == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the checkpoint of training job " INT64_FORMAT " has no schedule", r->job->id)));
		train_schedule_restore(r->cur.schedule, &r->sched);
		if (r->sched.warmup != r->st->tc.warmup_updates)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the checkpoint of training job " INT64_FORMAT " has a warm-up of %d updates, its schedule %d",
							r->job->id, r->st->tc.warmup_updates, r->sched.warmup)));
		return;
	}
	if ((s = cq_train_state_new(init, &tc, &r->st, &err)) != CQ_OK)
		corpq_core_error(&err, NULL, "could not start training");
	/* the gradients' too: a pass checks that both have one configuration */
	override_dropout(&r->st->model->cfg, &r->o);
	override_dropout(&r->st->grad->cfg, &r->o);
	r->cur.first_version = init_version;
	plan_schedule(r);
}

static double
epoch_now(const Run *r)
{
	if (r->n_streams == 1 && r->streams[0].b)
		return r->cur.epoch[0] + (double) r->cur.next[0] / r->streams[0].b->n_batches;
	return (double) r->cur.pairs_done / r->kept;
}

/*
 * Updates the run will have made when it stops, re-estimated at every update
 * from the budgets it has (a step budget is exact; an epoch or time budget is
 * projected at the run's average pace so far), so the progress neither
 * reaches its total before the end nor keeps the calibration's guess when
 * the machine is slower or faster than then.  The first budget spent ends
 * the run, so the smallest projection counts.
 */
static double
progress_total(const Run *r, bool done)
{
	double		step = (double) r->st->step;
	double		total = r->o.steps > 0 ? (double) r->o.steps : 0;
	double		epochs = epoch_now(r);

	if (done)
		return step;
	if (r->o.epochs > 0 && epochs > 0)
	{
		double		e = step * r->o.epochs / epochs;

		total = total > 0 ? Min(total, e) : e;
	}
	if (r->o.max_seconds > 0 && r->cur.seconds > 0)
	{
		double		t = step * r->o.max_seconds / r->cur.seconds;

		total = total > 0 ? Min(total, t) : t;
	}
	if (total <= 0)
		total = (double) r->sched.expected;
	return Max(total, step + 1);
}

static bool
budget_spent(const Run *r)
{
	return (r->o.steps > 0 && r->st->step >= r->o.steps) ||
		(r->o.epochs > 0 && epoch_now(r) >= r->o.epochs) ||
		(r->o.max_seconds > 0 && r->cur.seconds >= r->o.max_seconds);
}

/* The micro-batches of the next update (in CurrentMemoryContext). */
static cq_train_batch *
next_batches(Run *r)
{
	int			n = r->o.update_freq;
	cq_train_batch *out = palloc(sizeof(cq_train_batch) * n);

	for (int k = 0; k < n; k++)
	{
		int			c = r->strategy->per_corpus ? train_sampler_pick(r->sampler, r->st->step, k) : 0;
		Stream	   *s = &r->streams[c];
		const long *idx;
		int			np;
		cq_pair    *pairs;
		cq_error err = {0};
		cq_code st;

		st = cq_batcher_batch(s->b, r->cur.epoch[c], (long) r->cur.next[c], &idx, &np, &err);
		if (st != CQ_OK)
			corpq_core_error(&err, NULL, "could not take the next batch");
		pairs = palloc(sizeof(cq_pair) * np);
		for (int i = 0; i < np; i++)
		{
			long		p = s->index[idx[i]];

			train_corpus_pair(&r->corpus, p, &pairs[i]);
			r->cur.pairs[r->corpus.label[p]]++;
		}
		if (r->strategy->per_corpus)
			r->sampler->draws[c]++;
		r->cur.pairs_done += np;
		if (++r->cur.next[c] == s->b->n_batches)
		{
			r->cur.epoch[c]++;
			r->cur.next[c] = 0;
		}
		out[k].pairs = pairs;
		out[k].n_pairs = np;
	}
	return out;
}

/*
 * An encoder's own dev figures (label -1: all): in-batch precision at 1 over
 * the dev pairs, the mean similarity of a pair and of a source to the other
 * targets.  Its "loss" is the miss rate, 1 - P@1, which ranks checkpoints.
 */
static char *
encoder_dev_json(const TrainDevFigures *f, int label)
{
	long		n = label < 0 ? f->all_tokens : f->tokens[label];
	double		pos = label < 0 ? f->all_pos : f->pos[label],
				neg = label < 0 ? f->all_neg : f->neg[label],
				miss = train_dev_loss(f, label);

	return psprintf("\"loss\": %s, \"p_at_1\": %s, \"pos_cos\": %s, \"neg_cos\": %s, \"pairs\": %ld",
					corpq_json_number_text(miss), corpq_json_number_text(1 - miss),
					corpq_json_number_text(n > 0 ? pos / n : NAN),
					corpq_json_number_text(n > 0 ? neg / n : NAN), n);
}

/*
 * {"label": {"loss": , "ppl": , "tokens": }, ...} of a validation; an
 * encoder's {"label": {"loss": , "p_at_1": , "pos_cos": , "neg_cos": ,
 * "pairs": }, ...}.
 */
static char *
dev_json(const Run *r, const TrainDevFigures *f)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoChar(&b, '{');
	for (int l = 0; l < r->dev.n_labels; l++)
	{
		double		loss = train_dev_loss(f, l);

		if (l)
			appendStringInfoString(&b, ", ");
		escape_json(&b, r->dev.labels[l]);
		if (f->encoder)
			appendStringInfo(&b, ": {%s}", encoder_dev_json(f, l));
		else
			appendStringInfo(&b, ": {\"loss\": %s, \"ppl\": %s, \"tokens\": %ld}",
							 corpq_json_number_text(loss), corpq_json_number_text(exp(loss)), f->tokens[l]);
	}
	appendStringInfoChar(&b, '}');
	return b.data;
}

/*
 * The progress figures of the last validation: a translation model's dev
 * loss and perplexity; an encoder's P@1 and similarities (a perplexity of
 * its miss rate would mean nothing).
 */
static char *
dev_figures(const Run *r)
{
	if (r->devf.encoder && r->devf.all_tokens > 0)
	{
		double		n = (double) r->devf.all_tokens;

		return psprintf("\"dev_loss\": %s, \"dev_p_at_1\": %s, \"dev_pos_cos\": %s, \"dev_neg_cos\": %s",
						corpq_json_number_text(r->last_dev), corpq_json_number_text(1 - r->last_dev),
						corpq_json_number_text(r->devf.all_pos / n),
						corpq_json_number_text(r->devf.all_neg / n));
	}
	return psprintf("\"dev_loss\": %s, \"dev_ppl\": %s",
					corpq_json_number_text(r->last_dev), corpq_json_number_text(exp(r->last_dev)));
}

static void
validate(Run *r)
{
	MemoryContext old = MemoryContextSwitchTo(r->cxt);

	train_validate(r->job, r->st->model, &r->dev, r->o.max_tokens, &r->devf);
	r->last_dev = train_dev_loss(&r->devf, -1);
	r->last_dev_json = dev_json(r, &r->devf);
	MemoryContextSwitchTo(old);
}

/* The model as a version image, with the catalog's dropout rates. */
static bytea *
version_image(Run *r)
{
	cq_model_config *cfg = &r->st->model->cfg;
	float		saved[3] = {cfg->dropout, cfg->attention_dropout, cfg->activation_dropout};
	size_t		size = cq_modelfile_size(r->st->model);
	bytea	   *b = MemoryContextAllocHuge(CurrentMemoryContext, size + VARHDRSZ);
	cq_error err = {0};
	cq_code s;

	SET_VARSIZE(b, size + VARHDRSZ);
	cfg->dropout = r->dropout[0];
	cfg->attention_dropout = r->dropout[1];
	cfg->activation_dropout = r->dropout[2];
	s = cq_modelfile_write(r->st->model, VARDATA(b), size, &err);
	cfg->dropout = saved[0];
	cfg->attention_dropout = saved[1];
	cfg->activation_dropout = saved[2];
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "could not write the model weight image");
	return b;
}

static void
checkpoint(Run *r, bool validated)
{
	bool		best = validated && (isnan(r->cur.best_dev) || r->last_dev < r->cur.best_dev);
	char	   *metrics;

	if (best)
	{
		r->cur.best_dev = r->last_dev;
		r->best_devf.n_labels = r->devf.n_labels;
		r->best_devf.nll = MemoryContextAlloc(r->cxt, sizeof(double) * Max(1, r->devf.n_labels));
		r->best_devf.tokens = MemoryContextAlloc(r->cxt, sizeof(long) * Max(1, r->devf.n_labels));
		r->best_devf.pos = MemoryContextAlloc(r->cxt, sizeof(double) * Max(1, r->devf.n_labels));
		r->best_devf.neg = MemoryContextAlloc(r->cxt, sizeof(double) * Max(1, r->devf.n_labels));
		memcpy(r->best_devf.nll, r->devf.nll, sizeof(double) * r->devf.n_labels);
		memcpy(r->best_devf.tokens, r->devf.tokens, sizeof(long) * r->devf.n_labels);
		memcpy(r->best_devf.pos, r->devf.pos, sizeof(double) * r->devf.n_labels);
		memcpy(r->best_devf.neg, r->devf.neg, sizeof(double) * r->devf.n_labels);
		r->best_devf.all_nll = r->devf.all_nll;
		r->best_devf.all_tokens = r->devf.all_tokens;
		r->best_devf.all_pos = r->devf.all_pos;
		r->best_devf.all_neg = r->devf.all_neg;
		r->best_devf.encoder = r->devf.encoder;
		r->have_best = true;
	}
	metrics = psprintf("{\"job\": " INT64_FORMAT ", \"step\": " INT64_FORMAT ", \"epoch\": %s"
					   ", \"seconds\": %s, \"train_loss\": %s, \"train_nll\": %s, \"dev_loss\": %s"
					   ", \"dev_ppl\": %s, \"dev\": %s}",
					   r->job->id, r->st->step, corpq_json_number_text(epoch_now(r)), corpq_json_number_text(r->cur.seconds), corpq_json_number_text(r->last_loss),
					   corpq_json_number_text(r->last_nll), validated ? corpq_json_number_text(r->last_dev) : "null",
					   validated ? corpq_json_number_text(exp(r->last_dev)) : "null",
					   validated ? r->last_dev_json : "null");
	if (r->strategy->save)
	{
		MemoryContext old = MemoryContextSwitchTo(r->cxt);

		if (r->cur.sampler_state)
			pfree(r->cur.sampler_state);
		r->cur.sampler_state = r->strategy->save(r->sampler);
		MemoryContextSwitchTo(old);
	}
	/* the log rows may commit asynchronously, a checkpoint must not */
	SPI_execute("SET LOCAL synchronous_commit = on", false, 0);
	(void) train_checkpoint_write(r->job->id, r->model_id, r->st, version_image(r), &r->cur,
								  metrics, validated ? r->last_dev : NAN, best,
								  r->o.keep_checkpoints);
}

/* err: CQ_TRAIN_ENONFINITE (CQ_ERANGE, 22003), saying where */
static void
diverged(Run *r, const cq_error *err)
{
	corpq_core_error(err, r->resumed_from >= 0 || r->cur.best_version > 0
					 ? "Lower lr, raise warmup, or set clip_norm; the job's checkpoints up to this point are kept in corpq.train_checkpoints."
					 : "Lower lr, raise warmup, or set clip_norm.",
					 "training diverged");
}

/* One update with its log row, validation and checkpoint; false when done. */
static bool
update(Run *r, MemoryContext upd)
{
	TimestampTz t0 = GetCurrentTimestamp();
	TimestampTz t1;
	cq_train_batch *batches;
	cq_train_stats stats;
	cq_error err = {0};
	cq_code s;
	double		dt;
	bool		done,
				ckpt,
				val;
	TrainLogRow row;
	char	   *figures;

	MemoryContextSwitchTo(upd);
	batches = next_batches(r);
	/* the state grows its workspace: in the job's context, not the update's */
	MemoryContextSwitchTo(r->cxt);
	s = cq_train_step(r->st, batches, r->o.update_freq, &stats, &err);
	MemoryContextSwitchTo(upd);
	if (s == CQ_TRAIN_ENONFINITE)
		diverged(r, &err);
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "training step failed");
	t1 = GetCurrentTimestamp();
	dt = (double) (t1 - t0) / USECS_PER_SEC;
	r->cur.seconds += dt;
	r->cur.tokens_done += stats.tokens;
	r->last_loss = stats.loss;
	r->last_nll = stats.nll;
	r->st->epoch = r->cur.epoch[0];
	r->st->batch_in_epoch = r->cur.next[0];

	done = budget_spent(r);
	/* before the log transaction: its checkpoint saves the updated sampler */
	if (r->strategy->update && r->st->step % r->o.sampler_every == 0 && !done)
	{
		TrainSamplerView view = {r->job, r->st->model, r->st->step,
			r->has_dev ? &r->dev : NULL, r->dev_label, r->o.max_tokens,
		&r->corpus, r->cur.tokens_done};

		MemoryContextSwitchTo(r->cxt);
		r->strategy->update(r->sampler, &view);
		MemoryContextSwitchTo(upd);
	}
	ckpt = done || r->st->step % r->sched.checkpoint_every == 0;
	val = r->has_dev && (ckpt || r->st->step % r->sched.validate_every == 0);
	if (val)
		validate(r);

	memset(&row, 0, sizeof(row));
	row.step = r->st->step;
	row.epoch = epoch_now(r);
	row.loss = stats.loss;
	row.nll = stats.nll;
	row.lr = stats.lr;
	row.tokens = stats.tokens;
	row.tokens_per_s = dt > 0 ? stats.tokens / dt : NAN;
	row.grad_norm = stats.grad_norm;
	row.dev_json = val ? r->last_dev_json : NULL;
	row.dev_loss = val ? r->last_dev : NAN;
	row.encoder = r->devf.encoder;
	row.schedule_json = r->st->step == 1 ? r->sched.json : NULL;
	corpq_job_xact_begin(upd);
	train_log_write(r->job->id, &row);
	if (r->strategy->log)
		r->strategy->log(r->sampler, r->job->id);
	if (ckpt)
		checkpoint(r, val);
	corpq_job_xact_commit(upd);

	figures = psprintf("{\"epoch\": %s, \"loss\": %s, \"nll\": %s, \"ppl\": %s, \"lr\": %s"
					   ", \"tokens_per_s\": %s, \"grad_norm\": %s, %s}",
					   corpq_json_number_text(row.epoch), corpq_json_number_text(stats.loss), corpq_json_number_text(stats.nll), corpq_json_number_text(exp(stats.nll)),
					   corpq_json_number_text(stats.lr), corpq_json_number_text(row.tokens_per_s), corpq_json_number_text(stats.grad_norm),
					   dev_figures(r));
	/* the ETA is the view's: updates left at the current rate */
	corpq_job_progress(r->job, "training", (double) r->st->step,
					   progress_total(r, done), "updates", figures, true);

	MemoryContextSwitchTo(r->cxt);
	MemoryContextReset(upd);
	/* the budget counts validation, logging and checkpoints too */
	r->cur.seconds += (double) (GetCurrentTimestamp() - t1) / USECS_PER_SEC;
	return !done;
}

static void
read_corpora(Run *r, int max_positions)
{
	CorpqModelRef ref;
	CorpqVocab *sv,
			   *tv;
	const char *dev = r->dev_query;

	corpq_model_resolve(r->model_name, false, &ref);
	sv = corpq_vocab_load(ref.src_vocab, r->cxt);
	tv = corpq_vocab_load(ref.tgt_vocab, r->cxt);
	corpq_job_progress(r->job, "reading", 0, 0, "rows", NULL, true);
	train_read_corpus(r->job, r->corpus_query, "corpus", sv, tv,
					  max_positions, &r->corpus, r->cxt);
	if (r->corpus.n_pairs == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the corpus has no usable pairs"),
				 errdetail("The query returned " INT64_FORMAT " rows: " INT64_FORMAT " with a NULL side, "
						   INT64_FORMAT " longer than the model's %d tokens a sentence.",
						   r->corpus.rows, r->corpus.null_rows, r->corpus.too_long,
						   max_positions - 1)));
	r->has_dev = dev != NULL;
	if (dev)
	{
		train_read_corpus(r->job, dev, "dev", sv, tv, max_positions, &r->dev, r->cxt);
		r->has_dev = r->dev.n_pairs > 0;
	}
	/* in the job's context: SPI may have left another one current */
	r->dev_label = MemoryContextAlloc(r->cxt, sizeof(int) * r->corpus.n_labels);
	for (int l = 0; l < r->corpus.n_labels; l++)
		r->dev_label[l] = r->has_dev ? train_corpus_label(&r->dev, r->corpus.labels[l]) : -1;
	r->devf.n_labels = r->has_dev ? r->dev.n_labels : 0;
	r->devf.nll = MemoryContextAllocZero(r->cxt, sizeof(double) * Max(1, r->devf.n_labels));
	r->devf.tokens = MemoryContextAllocZero(r->cxt, sizeof(long) * Max(1, r->devf.n_labels));
	r->devf.pos = MemoryContextAllocZero(r->cxt, sizeof(double) * Max(1, r->devf.n_labels));
	r->devf.neg = MemoryContextAllocZero(r->cxt, sizeof(double) * Max(1, r->devf.n_labels));
	corpq_vocab_free(sv);
	corpq_vocab_free(tv);
}

static char *
result_json(Run *r, double seconds_total)
{
	StringInfoData b;
	struct rusage ru;
	double		best = r->have_best ? train_dev_loss(&r->best_devf, -1) : NAN;

	getrusage(RUSAGE_SELF, &ru);
	initStringInfo(&b);
	appendStringInfo(&b, "{\"model\": ");
	escape_json(&b, r->model_name);
	appendStringInfo(&b, ", \"steps\": " INT64_FORMAT ", \"epochs\": %s, \"tokens\": " INT64_FORMAT
					 ", \"pairs\": %ld, \"trained_pairs\": " INT64_FORMAT
					 ", \"skipped_pairs\": {\"null\": " INT64_FORMAT ", \"too_long\": " INT64_FORMAT
					 ", \"over_max_tokens\": %ld}"
					 ", \"final_train_loss\": %s, \"final_train_nll\": %s"
					 ", \"dev\": {\"final_loss\": %s, \"final_ppl\": %s, \"best_loss\": %s, \"best_ppl\": %s"
					 ", \"final\": %s, \"best\": %s}",
					 r->st->step, corpq_json_number_text(epoch_now(r)), r->cur.tokens_done,
					 r->corpus.n_pairs, r->cur.pairs_done,
					 r->corpus.null_rows, r->corpus.too_long, r->corpus.n_pairs - r->kept,
					 corpq_json_number_text(r->last_loss), corpq_json_number_text(r->last_nll),
					 corpq_json_number_text(r->last_dev), corpq_json_number_text(exp(r->last_dev)), corpq_json_number_text(best), corpq_json_number_text(exp(best)),
					 r->has_dev ? r->last_dev_json : "null",
					 r->have_best ? dev_json(r, &r->best_devf) : "null");
	appendStringInfo(&b, ", \"seconds\": %.3f, \"training_seconds\": %.3f, \"tokens_per_s\": %s"
					 ", \"threads\": %d, \"peak_rss_kb\": %ld, \"attempts\": %d, \"resumed_from_step\": %s"
					 ", \"first_version\": %d, \"best_version\": %s, \"checkpoint_versions\": %s"
					 ", \"warmup\": %d, \"schedule\": %s, \"strategy\": ",
					 seconds_total, r->cur.seconds, corpq_json_number_text(r->cur.tokens_done / r->cur.seconds),
					 r->job->threads, ru.ru_maxrss, r->job->attempts,
					 r->resumed_from >= 0 ? psprintf(INT64_FORMAT, r->resumed_from) : "null",
					 r->cur.first_version,
					 r->cur.best_version > 0 ? psprintf("%d", r->cur.best_version) : "null",
					 train_checkpoint_versions(r->job->id), r->st->tc.warmup_updates, r->sched.json);
	escape_json(&b, r->strategy->name);
	appendStringInfoString(&b, ", \"corpora\": {");
	for (int l = 0; l < r->corpus.n_labels; l++)
	{
		if (l)
			appendStringInfoString(&b, ", ");
		escape_json(&b, r->corpus.labels[l]);
		appendStringInfo(&b, ": {\"size\": %ld, \"share\": %.17g, \"batches\": " INT64_FORMAT
						 ", \"pairs\": " INT64_FORMAT "}",
						 r->size[l], r->sampler->prob[l], r->sampler->draws[l], r->cur.pairs[l]);
	}
	appendStringInfoChar(&b, '}');
	if (r->strategy->result)
		appendStringInfo(&b, ", \"sampler\": %s", r->strategy->result(r->sampler, r->cur.seconds));
	appendStringInfoChar(&b, '}');
	return b.data;
}

/*
 * The training of corpq.train()'s job and of corpq.curate()'s encoder
 * (train.h): in a job, outside a transaction.
 */
char *
train_build(CorpqJob *job, const char *model, int64 model_id, const char *corpus,
			const char *dev, const TrainOptions *o, MemoryContext cxt, int64 *updates)
{
	MemoryContext upd = AllocSetContextCreate(cxt, "corpq train update", ALLOCSET_DEFAULT_SIZES);
	TimestampTz start = GetCurrentTimestamp();
	Run		   *r;
	CorpqModelRef ref;
	cq_model   *init;
	int64		first_step;
	char	   *result;

	MemoryContextSwitchTo(cxt);
	r = palloc0(sizeof(Run));
	r->job = job;
	r->cxt = cxt;
	r->o = *o;
	r->model_name = pstrdup(model);
	r->model_id = model_id;
	r->corpus_query = pstrdup(corpus);
	r->dev_query = dev ? pstrdup(dev) : NULL;
	r->last_dev = NAN;
	r->last_loss = r->last_nll = NAN;

	/* reading, as the job's owner */
	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	init = load_latest(r, &ref);
	MemoryContextSwitchTo(cxt);
	/* a job stored before max_tokens was resolved at submission */
	train_options_resolve_model(&r->o, init->cfg.kind == CQ_KIND_ENCODER);
	/* a side's tokens and </s>; an encoder's sentence also has <s> */
	read_corpora(r, cq_config_sentence_tokens(&init->cfg) + 1);
	corpq_job_xact_commit(cxt);

	build_streams(r, cq_config_sentence_tokens(&init->cfg) + 1);
	/* multiuat's and multidds' scorers take a translation model's loss */
	if (init->cfg.kind == CQ_KIND_ENCODER && r->strategy->update)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("strategy \"%s\" does not apply to an encoder model", r->o.strategy),
				 errhint("Use proportional, temperature or uniform.")));
	init_cursor(r);
	start_state(r, init, ref.version);
	cq_model_free(init);
	if (r->strategy->check)
	{
		TrainSamplerView view = {r->job, r->st->model, r->st->step, r->has_dev ? &r->dev : NULL,
		r->dev_label, r->o.max_tokens, &r->corpus, r->cur.tokens_done};

		r->strategy->check(r->sampler, &view);
	}
	if (r->strategy->load && r->cur.sampler_state)
	{
		r->strategy->load(r->sampler, r->cur.sampler_state);
		check_resumed_prob(r);
	}

	/*
	 * training: a fresh run updates at least once, even when calibrating used
	 * up a budget too short to measure a rate
	 */
	first_step = r->st->step;
	if (r->resumed_from < 0 || !budget_spent(r))
		while (update(r, upd))
			;
	if (updates)
		*updates = r->st->step - first_step;

	/* the result: read in a transaction (the checkpoint versions) */
	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	result = result_json(r, (double) (GetCurrentTimestamp() - start) / USECS_PER_SEC);
	result = MemoryContextStrdup(cxt, result);
	corpq_job_xact_commit(cxt);
	MemoryContextDelete(upd);
	return result;
}

static void
train_job(CorpqJob *job)
{
	MemoryContext cxt = CurrentMemoryContext;
	TrainOptions o;
	char	   *model,
			   *corpus,
			   *dev;
	int64		model_id;
	char	   *result;

	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	model = corpq_job_arg(job, "model");
	model_id = strtoll(corpq_job_arg(job, "model_id"), NULL, 10);
	corpus = corpq_job_arg(job, "corpus");
	dev = corpq_job_arg(job, "dev");
	train_options_parse(DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
														   CStringGetDatum(corpq_job_arg(job, "options")))),
						&o);
	corpq_job_xact_commit(cxt);

	result = train_build(job, model, model_id, corpus, dev, &o, cxt, NULL);

	/* the result, in the final transaction */
	corpq_job_xact_begin(cxt);
	corpq_job_finish(job, result);
	corpq_job_xact_commit(cxt);
}

void
corpq_train_init(void)
{
	/* resumes from its last checkpoint */
	corpq_job_register_kind("train", train_job, true);
}
