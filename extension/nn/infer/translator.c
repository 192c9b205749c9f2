/*
 * The translator (translate.h, decode.h): one workspace carved into slots,
 * caches and scratch; admitting sentences, stepping the batch, handing
 * finished sentences back; and cq_translate() over an array of sources.
 */
#include <string.h>

#include "common/carve.h"
#include "common/interrupt.h"
#include "nn/infer/decode.h"

static long
ld16(long n)
{
	return (n + 15) / 16 * 16;
}

/* The longest max_len of any source of 0 .. max_src tokens. */
static int
longest_output(const cq_translate_options *o, const cq_model_config *c, int max_src)
{
	int			best = 0;

	for (int s = 1; s <= max_src; s++)
	{
		int			l = cq_translate_max_len(o, c, s);

		best = l > best ? l : best;
	}
	return best;
}

static void
carve_slot(cq_carver *cv, cq_translator *t, cq_slot *s)
{
	const cq_model_config *c = &t->m->cfg;
	int			K = t->K,
				T = t->T;

	s->src_ids = cq_carve(cv, sizeof(int32_t) * t->S);
	s->cross_kv = cq_carve_floats(cv, (long) c->decoder_layers * t->S * t->ld_kv);
	s->att = cq_carve_floats(cv, (long) K * t->S > T ? (long) K * t->S : T);
	s->cache = cq_carve(cv, sizeof(int) * K);
	s->tok = cq_carve(cv, sizeof(int32_t) * K * T);
	s->tok_alt = cq_carve(cv, sizeof(int32_t) * K * T);
	s->lp = cq_carve_floats(cv, (long) K * T);
	s->lp_alt = cq_carve_floats(cv, (long) K * T);
	s->cum = cq_carve(cv, sizeof(double) * K);
	s->ignore = cq_carve(cv, sizeof(bool) * K);
	s->cand = cq_carve(cv, sizeof(cq_candidate) * 2 * K);
	s->final_tok = cq_carve(cv, sizeof(int32_t) * K * T);
	s->final_lp = cq_carve_floats(cv, (long) K * T);
	s->final = cq_carve(cv, sizeof(cq_hypothesis) * K);
}

/* Lays the translator out in base (NULL: only sizes it); returns its bytes. */
static size_t
carve(const cq_model *m, const cq_translate_options *o, int batch, int max_src,
	  char *base, cq_translator **out)
{
	const cq_model_config *c = &m->cfg;
	cq_carver	cv = cq_carver_start(base);
	cq_translator scratch,
			   *t;
	long		d = c->d_model,
				rows,
				n,
				att;

	t = cq_carve(&cv, sizeof(cq_translator));
	if (!t)
		t = &scratch;
	memset(t, 0, sizeof(*t));
	t->m = m;
	t->o = *o;
	t->B = batch;
	t->K = o->beam;
	t->S = max_src + 1;
	t->T = longest_output(o, c, max_src) + 1;
	t->ld_d = ld16(d);
	t->ld_qkv = ld16(3 * d);
	t->ld_kv = ld16(2 * d);
	t->ld_f = ld16(c->ffn_dim);
	t->ld_v = ld16(c->tgt_vocab_size);
	rows = (long) t->B * t->K;
	n = rows > (long) t->B * t->S ? rows : (long) t->B * t->S;
	/* the encoder's attention (a decoder step's is per slot: carve_slot) */
	att = (long) t->S * t->S;

	t->slots = cq_carve(&cv, sizeof(cq_slot) * t->B);
	for (int i = 0; i < t->B; i++)
	{
		cq_slot		dummy,
				   *s = base ? &t->slots[i] : &dummy;

		memset(s, 0, sizeof(*s));
		s->index = i;
		carve_slot(&cv, t, s);
	}
	t->cache_floats = (long) c->decoder_layers * t->T * t->ld_kv;
	t->cache = cq_carve_floats(&cv, rows * t->cache_floats);
	t->x = cq_carve_floats(&cv, n * t->ld_d);
	t->h = cq_carve_floats(&cv, n * t->ld_d);
	t->qkv = cq_carve_floats(&cv, n * t->ld_qkv);
	t->ctx = cq_carve_floats(&cv, n * t->ld_d);
	t->tmp = cq_carve_floats(&cv, n * t->ld_d);
	t->ffn = cq_carve_floats(&cv, n * t->ld_f);
	t->logits = cq_carve_floats(&cv, rows * t->ld_v);
	t->scores = cq_carve_floats(&cv, att);
	t->pairs = cq_carve(&cv, sizeof(cq_pair) * t->B);
	t->encoding = cq_carve(&cv, sizeof(cq_slot *) * t->B);
	t->ranked = cq_carve(&cv, sizeof(cq_ranked) * c->tgt_vocab_size);
	t->iscratch = cq_carve(&cv, sizeof(int) * 3 * t->K);
	t->bscratch = cq_carve(&cv, sizeof(bool) * 3 * t->K);
	if (base)
		*out = t;
	return cq_carver_bytes(&cv);
}

static cq_code
check_sizes(const cq_model *m, const cq_translate_options *o, int batch, int max_src,
			cq_error *err)
{
	cq_code s = cq_translate_options_check(o, &m->cfg, err);

	if (s)
		return s;
	if (m->cfg.kind == CQ_KIND_ENCODER)
		return cq_fail(err, CQ_EINVAL, "an encoder model does not translate");
	if (batch < 1)
		return cq_fail(err, CQ_EINVAL, "a batch needs at least one sentence, not %d", batch);
	if (max_src < 0 || max_src + 1 > m->cfg.max_positions)
		return cq_fail(err, CQ_ELIMIT,
						  "a source of %d tokens is too long, the model takes at most %d",
						  max_src, m->cfg.max_positions - 1);
	/* row counts are int in the GEMMs: keep rows x width well inside */
	if ((long) batch * (max_src + 1) > CQ_MAX_BATCH_POSITIONS ||
		(long) batch * o->beam > CQ_MAX_BATCH_POSITIONS)
		return cq_fail(err, CQ_EINVAL, "a batch of %d sentences is too large", batch);
	return CQ_OK;
}

size_t
cq_translator_bytes(const cq_model *m, const cq_translate_options *o, int batch,
					int max_src_len)
{
	if (check_sizes(m, o, batch, max_src_len, NULL))
		return 0;
	return carve(m, o, batch, max_src_len, NULL, NULL);
}

cq_code
cq_translator_init(const cq_model *m, const cq_translate_options *o, int batch,
				   int max_src_len, void *ws, size_t ws_bytes, cq_translator **out,
				   cq_error *err)
{
	cq_code s = check_sizes(m, o, batch, max_src_len, err);
	size_t		need;

	if (s)
		return s;
	need = carve(m, o, batch, max_src_len, NULL, NULL);
	if (!ws || ws_bytes < need)
		return cq_fail(err, CQ_EINTERNAL,
						  "workspace of %zu bytes is too small, the translator needs %zu",
						  ws_bytes, need);
	carve(m, o, batch, max_src_len, ws, out);
	return CQ_OK;
}

int
cq_translator_free_slots(const cq_translator *t)
{
	int			n = 0;

	for (int i = 0; i < t->B; i++)
		n += t->slots[i].state == SLOT_FREE;
	return n;
}

bool
cq_translator_busy(const cq_translator *t)
{
	for (int i = 0; i < t->B; i++)
		if (t->slots[i].state != SLOT_FREE)
			return true;
	return false;
}

/* The same checks for admit() and for cq_translate()'s sources up front. */
static cq_code
check_source(const cq_model_config *c, const cq_source *src, int max_src,
			 cq_error *err)
{
	if (src->len < 0 || (src->len > 0 && !src->ids))
		return cq_fail(err, CQ_EINVAL, "source %llu has a negative length or no ids",
						  (unsigned long long) src->id);
	if (src->len + 1 > c->max_positions)
		return cq_fail(err, CQ_ELIMIT,
						  "source %llu has %d tokens, the model takes at most %d",
						  (unsigned long long) src->id, src->len, c->max_positions - 1);
	if (src->len > max_src)
		return cq_fail(err, CQ_EINVAL,
						  "source %llu has %d tokens, the translator was sized for %d",
						  (unsigned long long) src->id, src->len, max_src);
	for (int i = 0; i < src->len; i++)
		if (src->ids[i] < 0 || src->ids[i] >= c->src_vocab_size)
			return cq_fail(err, CQ_EINVAL,
							  "source %llu: id %d is outside the vocabulary of %d",
							  (unsigned long long) src->id, src->ids[i], c->src_vocab_size);
	return CQ_OK;
}

cq_code
cq_translator_admit(cq_translator *t, const cq_source *src, cq_error *err)
{
	const cq_model_config *c = &t->m->cfg;
	cq_code st = check_source(c, src, t->S - 1, err);
	cq_slot    *s = NULL;

	if (st)
		return st;
	for (int i = 0; i < t->B && !s; i++)
		if (t->slots[i].state == SLOT_FREE)
			s = &t->slots[i];
	if (!s)
		return cq_fail(err, CQ_EINVAL, "no free slot in the batch");
	if (src->len > 0)
		memcpy(s->src_ids, src->ids, sizeof(int32_t) * src->len);
	s->src = *src;
	s->src.ids = s->src_ids;
	s->max_len = cq_translate_max_len(&t->o, c, src->len);
	s->min_len = t->o.min_len < s->max_len ? t->o.min_len : s->max_len;
	s->step = 0;
	s->nrows = 1;
	s->n_final = 0;
	for (int k = 0; k < t->K; k++)
	{
		s->cache[k] = s->index * t->K + k;
		s->cum[k] = 0.0;
		s->ignore[k] = false;
	}
	s->state = SLOT_NEW;
	return CQ_OK;
}

cq_code
cq_translator_step(cq_translator *t, cq_error *err)
{
	int			active = 0;

	cq_poll();
	cq_decode_encode(t);
	for (int i = 0; i < t->B; i++)
		active += t->slots[i].state == SLOT_LIVE;
	t->progress.active = active;
	if (!active)
		return CQ_OK;
	cq_decode_step(t);
	t->progress.steps++;
	for (int i = 0; i < t->B; i++)
		if (t->slots[i].state == SLOT_LIVE)
		{
			t->progress.positions += t->slots[i].nrows;
			cq_search_step(t, &t->slots[i]);
		}
	return CQ_OK;
}

bool
cq_translator_next(cq_translator *t, cq_translation *out)
{
	for (int i = 0; i < t->B; i++)
	{
		cq_slot    *s = &t->slots[i];

		if (s->state != SLOT_DONE)
			continue;
		out->id = s->src.id;
		out->tag = s->src.tag;
		out->n_hyps = s->n_final < t->o.nbest ? s->n_final : t->o.nbest;
		out->hyps = s->final;
		s->state = SLOT_FREE;
		return true;
	}
	return false;
}

const cq_translate_progress *
cq_translator_progress(const cq_translator *t)
{
	return &t->progress;
}

/* ---- cq_translate ---------------------------------------------------------- */

static int
longest_source(const cq_source *srcs, int n)
{
	int			l = 0;

	for (int i = 0; i < n; i++)
		l = srcs[i].len > l ? srcs[i].len : l;
	return l;
}

size_t
cq_translate_bytes(const cq_model *m, const cq_translate_options *o,
				   const cq_source *srcs, int n, int batch)
{
	if (n < 1 || batch < 1)
		return 0;
	return cq_translator_bytes(m, o, batch < n ? batch : n, longest_source(srcs, n));
}

cq_code
cq_translate(const cq_model *m, const cq_translate_options *o,
			 const cq_source *srcs, int n, int batch, void *ws, size_t ws_bytes,
			 const cq_translate_io *io, cq_error *err)
{
	cq_translator *t;
	cq_translation tr;
	cq_code s;
	int			next = 0,
				max_src;

	if (n < 1 || !srcs)
		return cq_fail(err, CQ_EINVAL, "nothing to translate");
	max_src = longest_source(srcs, n);
	for (int i = 0; i < n; i++)
		if ((s = check_source(&m->cfg, &srcs[i], max_src, err)))
			return s;
	s = cq_translator_init(m, o, batch < n ? batch : n, max_src, ws, ws_bytes, &t, err);
	if (s)
		return s;
	while (next < n || cq_translator_busy(t))
	{
		while (next < n && cq_translator_free_slots(t) > 0)
			if ((s = cq_translator_admit(t, &srcs[next++], err)))
				return s;
		if ((s = cq_translator_step(t, err)))
			return s;
		while (cq_translator_next(t, &tr))
			if (io && io->emit)
				io->emit(io->arg, &tr);
		if (io && io->tick && !io->tick(io->arg, &t->progress))
			return cq_fail(err, CQ_STOPPED, "translation was cancelled");
	}
	return CQ_OK;
}
