/*
 * Benchmark of the word-alignment core on the en-es corpora: EM throughput
 * of fast_align (both directions) and NLTK-style IBM Model 1, table memory,
 * the UncSamp dictionary, and the real-data check that "god" -> "dios" and
 * "the" -> {el, la, los, las} rank first.  Prints figures only; the shell
 * driver puts them next to the authors' fast_align when one is available.
 *
 *   bench_align [-n MAX_PAIRS] [-b DUMP_BITEXT] [-a DUMP_ALIGN] TSV...
 *
 * TSV: parallel files (id, domain, src, tgt, a header line), read in order
 * until MAX_PAIRS (default 100000) pairs; bench_align.sh passes the ones
 * test/lib.sh finds.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "align/fastalign.h"
#include "align/ibm1.h"
#include "align/lexicon.h"
#include "align/lexicon_io.h"
#include "align/vocab.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of this thread: steadier than wall time on a shared machine. */
static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Growing int arrays for the CSR corpus. */
typedef struct ivec
{
	void	   *v;
	size_t		n,
				cap,
				elt;
} ivec;

static void *
ivec_push(ivec *a)
{
	if (a->n == a->cap)
	{
		a->cap = a->cap ? 2 * a->cap : 4096;
		a->v = realloc(a->v, a->cap * a->elt);
		if (!a->v)
			abort();
	}
	return (char *) a->v + a->elt * a->n++;
}

/* UTF-8 punctuation that the en-es corpora use, split off as tokens. */
static int
punct_len(const unsigned char *s)
{
	static const char *const u[] = {"\xc2\xbf", "\xc2\xa1", "\xc2\xab", "\xc2\xbb",
		"\xe2\x80\x99", "\xe2\x80\x98", "\xe2\x80\x9c", "\xe2\x80\x9d", "\xe2\x80\x94", "\xe2\x80\xa6"};

	if (*s < 128)
		return ispunct(*s) ? 1 : 0;
	for (size_t i = 0; i < sizeof(u) / sizeof(*u); i++)
		if (strncmp((const char *) s, u[i], strlen(u[i])) == 0)
			return (int) strlen(u[i]);
	return 0;
}

/* Lowercase (ASCII and Latin-1 letters in UTF-8) and space out punctuation. */
static size_t
normalise(const char *in, size_t len, char *out)
{
	const unsigned char *s = (const unsigned char *) in;
	size_t		o = 0;

	for (size_t i = 0; i < len;)
	{
		int			pl = punct_len(s + i);

		if (pl)
		{
			out[o++] = ' ';
			memcpy(out + o, s + i, pl);
			o += pl;
			out[o++] = ' ';
			i += pl;
		}
		else if (s[i] == 0xc3 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9e && s[i + 1] != 0x97)
		{
			out[o++] = (char) 0xc3;
			out[o++] = (char) (s[i + 1] + 0x20);
			i += 2;
		}
		else
			out[o++] = (char) tolower(s[i++]);
	}
	return o;
}

typedef struct corpus
{
	ivec		src,
				tgt,
				so,
				to;
	cq_vocab   *vs,
			   *vt;
	int64_t		n;
} corpus;

static void
die(const cq_error *err)
{
	fprintf(stderr, "error: %s\n", err->msg);
	exit(1);
}

static void
add_side(cq_vocab *v, ivec *tok, ivec *off, const char *text, size_t len, FILE *dump)
{
	char	   *norm = malloc(3 * len + 16);
	size_t		nl = normalise(text, len, norm);
	int32_t    *ids = malloc((nl + 1) * sizeof(int32_t));
	int			n;
	cq_error	err;

	if (cq_vocab_intern_line(v, norm, nl, ids, (int) nl + 1, &n, &err) != CQ_OK)
		die(&err);

	for (int i = 0; i < n; i++)
	{
		*(int32_t *) ivec_push(tok) = ids[i];
		if (dump)
			fprintf(dump, "%s%s", i ? " " : "", cq_vocab_word(v, ids[i]));
	}
	*(int64_t *) ivec_push(off) = (int64_t) tok->n;
	free(norm);
	free(ids);
}

static void
load(corpus *c, char *const *files, int n_files, int64_t max_pairs, FILE *dump)
{
	char	   *line = NULL;
	size_t		cap = 0;
	cq_error	err;

	c->src.elt = c->tgt.elt = sizeof(int32_t);
	c->so.elt = c->to.elt = sizeof(int64_t);
	*(int64_t *) ivec_push(&c->so) = 0;
	*(int64_t *) ivec_push(&c->to) = 0;
	if (cq_vocab_create(&c->vs, &err) != CQ_OK || cq_vocab_create(&c->vt, &err) != CQ_OK)
		die(&err);
	for (int f = 0; f < n_files && c->n < max_pairs; f++)
	{
		FILE	   *in;
		ssize_t		len;
		bool		header = true;

		if (!(in = fopen(files[f], "r")))
		{
			fprintf(stderr, "cannot read %s\n", files[f]);
			exit(2);
		}
		while (c->n < max_pairs && (len = getline(&line, &cap, in)) > 0)
		{
			char	   *t1,
					   *t2,
					   *t3;

			if (header)
			{
				header = false;
				continue;
			}
			line[strcspn(line, "\r\n")] = '\0';
			/* id \t domain \t src \t tgt */
			if (!(t1 = strchr(line, '\t')) || !(t2 = strchr(t1 + 1, '\t')) || !(t3 = strchr(t2 + 1, '\t')))
				continue;
			add_side(c->vs, &c->src, &c->so, t2 + 1, t3 - t2 - 1, dump);
			if (dump)
				fputs(" ||| ", dump);
			add_side(c->vt, &c->tgt, &c->to, t3 + 1, strlen(t3 + 1), dump);
			if (dump)
				fputc('\n', dump);
			c->n++;
		}
		fclose(in);
	}
	free(line);
}

/* Trains one direction, timing each pass; returns the trainer. */
static cq_fa_trainer *
train(const cq_bitext *b, bool reverse, size_t index_budget, int passes,
	  cq_fa_tension_rule rule, const char *label, double *pass_seconds)
{
	cq_fa_options o;
	cq_error err = {0};
	cq_fa_trainer *tr;
	cq_fa_stats st;
	double		t0 = now(),
				tsum = 0;

	cq_fa_options_default(&o);
	o.reverse = reverse;
	o.max_index_bytes = index_budget;
	o.tension_rule = rule;
	if (cq_fa_trainer_create(b, &o, &tr, &err) != CQ_OK)
		die(&err);
	printf("%s: setup (co-occurrence table%s) %.2f s\n", label,
		   index_budget ? " + link index" : "", now() - t0);
	for (int p = 0; p < passes; p++)
	{
		double		t1 = now(),
					c1 = cpu_now(),
					dt;

		if (cq_fa_iterate(tr, NULL, &err) != CQ_OK)
			die(&err);
		dt = now() - t1;
		tsum += dt;
		cq_fa_trainer_stats(tr, &st);
		printf("  pass %d: %.3f s (cpu %.3f s), %.0f pairs/s, log-lik/token %.4f, tension %.3f, posterior p0 %.3f\n",
			   p + 1, dt, cpu_now() - c1, b->n_pairs / dt, st.loglik / st.n_tokens,
			   cq_fa_trainer_model(tr)->par.tension, st.posterior_p0);
	}
	cq_fa_trainer_stats(tr, &st);
	printf("  mean %.0f pairs/s per pass; table %lld entries; memory %.1f MiB (table %.1f MiB)\n",
		   passes * b->n_pairs / tsum, (long long) cq_fa_trainer_model(tr)->tt.nnz,
		   st.bytes / 1048576.0, cq_ttable_bytes(&cq_fa_trainer_model(tr)->tt) / 1048576.0);
	*pass_seconds = tsum / passes;
	return tr;
}

static void
top_translations(const cq_lexdict *d, const corpus *c, const char *word,
				 const char *const *want, int n_want, int *ok)
{
	int32_t		x = cq_vocab_lookup(c->vs, word, strlen(word));
	int64_t		best = -1;

	if (x < 0 || d->row_links[x] == 0)
	{
		printf("  %s: no links\n", word);
		*ok = 0;
		return;
	}
	printf("  %-4s H = %.3f nats, %lld links:", word, d->entropy[x], (long long) d->row_links[x]);
	for (int shown = 0; shown < 5; shown++)
	{
		int64_t		arg = -1;

		for (int64_t q = d->row_off[x]; q < d->row_off[x + 1]; q++)
			if ((best < 0 || d->count[q] < d->count[best] ||
				 (d->count[q] == d->count[best] && q > best)) &&
				(arg < 0 || d->count[q] > d->count[arg]))
				arg = q;
		if (arg < 0)
			break;
		if (shown == 0)
		{
			bool		hit = false;

			for (int w = 0; w < n_want; w++)
				hit |= strcmp(cq_vocab_word(c->vt, d->col[arg]), want[w]) == 0;
			*ok &= hit;
		}
		printf(" %s %.3f", cq_vocab_word(c->vt, d->col[arg]), d->prob[arg]);
		best = arg;
	}
	printf("\n");
}

int
main(int argc, char **argv)
{
	int64_t		max_pairs = 100000;
	FILE	   *dump = NULL;
	const char *align_path = NULL;
	corpus		c = {0};
	cq_bitext	b;
	cq_fa_trainer *fwd,
			   *rev;
	cq_error err = {0};
	double		t0 = now(),
				fwd_pass,
				rev_pass,
				search_pass,
				ibm1_pass;
	int			ok = 1;
	int			opt;

	while ((opt = getopt(argc, argv, "n:b:a:")) != -1)
	{
		if (opt == 'n')
			max_pairs = atoll(optarg);
		else if (opt == 'b')
			dump = fopen(optarg, "w");
		else if (opt == 'a')
			align_path = optarg;
		else
		{
			fprintf(stderr, "usage: bench_align [-n MAX_PAIRS] [-b DUMP_BITEXT] [-a DUMP_ALIGN] TSV...\n");
			return 2;
		}
	}
	if (optind == argc)
	{
		fprintf(stderr, "bench_align: no corpus files\n");
		return 2;
	}

	load(&c, argv + optind, argc - optind, max_pairs, dump);
	if (dump)
		fclose(dump);
	b = (cq_bitext) {c.n, c.src.v, c.so.v, c.tgt.v, c.to.v,
		cq_vocab_size(c.vs), cq_vocab_size(c.vt)};
	printf("corpus: %lld pairs, %zu + %zu tokens, vocabularies %d / %d, read in %.2f s\n",
		   (long long) c.n, c.src.n, c.tgt.n, b.src_vocab, b.tgt_vocab, now() - t0);

	fwd = train(&b, false, (size_t) 1 << 30, 4, CQ_FA_TENSION_EXACT, "fast_align en->es", &fwd_pass);
	rev = train(&b, true, (size_t) 1 << 30, 4, CQ_FA_TENSION_EXACT, "fast_align es->en", &rev_pass);
	{
		cq_fa_trainer *s = train(&b, false, 0, 1, CQ_FA_TENSION_EXACT,
								 "fast_align en->es without link index (galloping search per row)", &search_pass);

		cq_fa_trainer_free(s);
	}
	{
		cq_ibm1    *m;
		double		t1 = now();

		if (cq_ibm1_create(&b, true, (size_t) 1 << 30, &m, &err) != CQ_OK)
			die(&err);
		printf("IBM Model 1 (NLTK-exact) en->es: setup %.2f s\n", now() - t1);
		t1 = now();
		for (int it = 0; it < 5; it++)
			if (cq_ibm1_iterate(m, NULL, &err) != CQ_OK)
				die(&err);
		ibm1_pass = (now() - t1) / 5;
		printf("  5 iterations: %.0f pairs/s per iteration; memory %.1f MiB\n",
			   c.n / ibm1_pass, cq_ibm1_bytes(m) / 1048576.0);
		cq_ibm1_free(m);
	}

	/*
	 * The authors' tension update, end to end as "fast_align -d -o" does it
	 * (table, 4 passes, Viterbi of every pair), alignments optionally dumped
	 * for comparison with their binary.
	 */
	{
		FILE	   *al = align_path ? fopen(align_path, "w") : NULL;
		int32_t    *a = malloc(4096 * sizeof(int32_t));
		double		t1 = now(),
					dummy;
		cq_fa_trainer *au = train(&b, false, (size_t) 1 << 30, 4, CQ_FA_TENSION_FAST_ALIGN,
								  "fast_align en->es, authors' tension update", &dummy);

		for (int64_t k = 0; k < c.n; k++)
		{
			int			m = (int) (((int64_t *) c.to.v)[k + 1] - ((int64_t *) c.to.v)[k]);

			cq_fa_viterbi(au, k, a);
			if (al)
			{
				bool		first = true;

				for (int j = 0; j < m; j++)
					if (a[j] >= 0)
					{
						fprintf(al, "%s%d-%d", first ? "" : " ", a[j], j);
						first = false;
					}
				fputc('\n', al);
			}
		}
		printf("  end to end (table, 4 passes, Viterbi of every pair, output): %.2f s\n", now() - t1);
		if (al)
			fclose(al);
		free(a);
		cq_fa_trainer_free(au);
	}

	{
		cq_lexdict	d;
		cq_lexicon	lx;
		double		t1 = now();
		static const char *const dios[] = {"dios"};
		static const char *const el[] = {"el", "la", "los", "las"};
		size_t		sz;
		void	   *buf;
		double		cov = 0;
		int64_t		scored = 0;

		if (cq_lexdict_from_trainers(fwd, rev, CQ_SYM_GROW_DIAG_FINAL_AND, NULL, &d, &err) != CQ_OK)
			die(&err);
		printf("UncSamp dictionary (grow-diag-final-and): %lld entries in %.2f s\n",
			   (long long) d.nnz, now() - t1);
		top_translations(&d, &c, "god", dios, 1, &ok);
		top_translations(&d, &c, "the", el, 4, &ok);
		printf("real-data check (god -> dios, the -> el/la/los/las ranked first): %s\n",
			   ok ? "PASS" : "FAIL");
		cq_lexdict_free(&d);

		cq_lexicon_from_trainers(fwd, rev, &lx, &err);
		sz = cq_lexicon_serialized_size(&lx, 1e-4);
		buf = malloc(sz);
		t1 = now();
		cq_lexicon_serialize(&lx, 1e-4, buf, sz);
		printf("serialised lexicon (entries >= 1e-4): %.1f MiB in %.2f s", sz / 1048576.0, now() - t1);
		cq_lexicon_free(&lx);
		t1 = now();
		if (cq_lexicon_deserialize(buf, sz, &lx, &err) != CQ_OK)
			die(&err);
		printf(", loaded and validated in %.2f s\n", now() - t1);
		t1 = now();
		for (int64_t k = 0; k < c.n; k += 10)
		{
			const int64_t *so = c.so.v,
					   *to = c.to.v;
			cq_pair_score sc;

			cq_lexicon_score_pair(&lx, (int32_t *) c.src.v + so[k], (int) (so[k + 1] - so[k]),
								  (int32_t *) c.tgt.v + to[k], (int) (to[k + 1] - to[k]),
								  CQ_SYM_GROW_DIAG_FINAL_AND, NULL, &sc, &err);
			if (!isnan(sc.coverage))
			{
				cov += sc.coverage;
				scored++;
			}
		}
		printf("score_pair on every 10th pair: %.0f pairs/s, mean coverage %.3f\n",
			   scored / (now() - t1), cov / scored);
		cq_lexicon_free(&lx);
		free(buf);
	}
	printf("summary: en->es %.3f s/pass, es->en %.3f s/pass, search-only %.3f s/pass, IBM1 %.3f s/iteration\n",
		   fwd_pass, rev_pass, search_pass, ibm1_pass);
	cq_fa_trainer_free(fwd);
	cq_fa_trainer_free(rev);
	cq_vocab_free(c.vs);
	cq_vocab_free(c.vt);
	free(c.src.v);
	free(c.tgt.v);
	free(c.so.v);
	free(c.to.v);
	return ok ? 0 : 1;
}
