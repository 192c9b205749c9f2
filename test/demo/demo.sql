-- corpq demo: curate an English-Spanish multi-domain corpus in plain SQL.
\pset footer off
\set QUIET on
CREATE EXTENSION corpq;
CREATE TABLE corpus (id text PRIMARY KEY, domain text NOT NULL, src text NOT NULL, tgt text NOT NULL);
\set copy_cmd '\\copy corpus FROM ' :'corpus' ' WITH (FORMAT csv, HEADER true, DELIMITER E''\\t'', QUOTE E''\\x01'')'
:copy_cmd
\set QUIET off

\echo
\echo '== 1. The corpus: pairs per domain'
SELECT domain, count(*) AS pairs, round(avg(array_length(string_to_array(src, ' '), 1)), 1) AS avg_src_words
FROM corpus GROUP BY domain ORDER BY pairs DESC;

\echo '== 2. Sampling shares per domain under temperature tau (MultiUAT Eq. 4)'
WITH sizes AS (SELECT domain, count(*) AS n FROM corpus GROUP BY domain)
SELECT domain, n,
       round(corpq.temperature_weights(n, 1) OVER ()::numeric, 4) AS "tau=1",
       round(corpq.temperature_weights(n, 5) OVER ()::numeric, 4) AS "tau=5",
       round(corpq.temperature_weights(n, 'infinity') OVER ()::numeric, 4) AS "tau=inf"
FROM sizes ORDER BY n DESC;

\echo '== 3. A 4000-pair training subset drawn with tau = 5 shares (reproducible: hash order)'
CREATE TABLE train_subset AS
WITH sizes AS (SELECT domain, count(*) AS n FROM corpus GROUP BY domain),
     quota AS (SELECT domain, round(4000 * corpq.temperature_weights(n, 5) OVER ()) AS k FROM sizes),
     ranked AS (SELECT c.*, row_number() OVER (PARTITION BY domain ORDER BY md5(id)) AS r FROM corpus c)
SELECT r.id, r.domain, r.src, r.tgt FROM ranked r JOIN quota q USING (domain) WHERE r.r <= q.k;
SELECT domain, count(*) AS sampled FROM train_subset GROUP BY domain ORDER BY 2 DESC;

\echo '== 4. Subword segmentation: learn 4000 BPE merges on both sides (subword-nmt compatible)'
SELECT corpq.bpe_learn('es-en', 'SELECT src FROM corpus UNION ALL SELECT tgt FROM corpus', 4000) AS merges_learned;
SELECT s AS sentence, corpq.bpe_apply('es-en', s) AS segmented
FROM (VALUES ('Failed to download the list of changes.'),
             ('Hubo un fallo al descargar la lista de cambios.'),
             ('In the beginning, God created the heavens and the earth.')) v(s);
\echo 'first lines of the exported subword-nmt codes file:'
SELECT line FROM regexp_split_to_table(corpq.bpe_export('es-en'), E'\n') WITH ORDINALITY t(line, n) WHERE n <= 4;

\echo '== 5. Vocabularies over the segmented text'
SELECT corpq.vocab_build('en', 'SELECT src FROM corpus', bpe => 'es-en', max_size => 8000) AS en_size,
       corpq.vocab_build('es', 'SELECT tgt FROM corpus', bpe => 'es-en', max_size => 8000) AS es_size;
SELECT corpq.vocab_encode('es', 'la lista de cambios') AS ids,
       corpq.vocab_decode('es', corpq.vocab_encode('es', 'la lista de cambios')) AS decoded;

\echo '== 6. A bilingual lexicon by word alignment (fast_align both ways, grow-diag-final-and), as a background job'
SELECT corpq.lexicon_train('lex', 'SELECT src, tgt FROM train_subset', '{"lowercase": true}') AS job \gset
SELECT corpq.job_wait(:job) AS lexicon_job;
SELECT d.src AS english, string_agg(d.tgt || ' ' || round(d.prob::numeric, 2), ', ' ORDER BY d.prob DESC) AS spanish
FROM (SELECT *, row_number() OVER (PARTITION BY src ORDER BY prob DESC) AS r
      FROM corpq.lexicon_dictionary WHERE lexicon = 'lex' AND src IN ('god', 'file', 'the', 'list')) d
WHERE r <= 3 GROUP BY d.src ORDER BY d.src;
SELECT left(src, 40) AS src, left(corpq.align('lex', src, tgt), 50) AS links, round(corpq.align_score('lex', src, tgt)::numeric, 3) AS score
FROM train_subset ORDER BY id LIMIT 3;

\echo '== 7. UncSamp: monolingual sentences sampled by lexicon uncertainty (U_max = 90th percentile of the parallel source)'
CREATE TABLE mono AS SELECT row_number() OVER () AS id, src AS sentence FROM corpus WHERE domain = 'bible' LIMIT 5000;
WITH umax AS (SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY corpq.mono_uncertainty('lex', src)) AS u FROM train_subset)
SELECT round(umax.u::numeric, 3) AS u_max, left(m.sentence, 60) AS sampled,
       round(corpq.mono_uncertainty('lex', m.sentence)::numeric, 3) AS u
FROM mono m, umax
ORDER BY corpq.uncsamp(corpq.mono_uncertainty('lex', m.sentence), umax.u, 2, m.id, 42) DESC LIMIT 5;

\echo '== 8. Train a tiny transformer in a background worker (whitespace vocabularies over the BPE), then score inside queries'
\echo 'the OpenBLAS kernels this backend loads (training multiplies with them; scoring runs the row kernel)'
\x on
SELECT * FROM corpq.blas_info();
\x off
SELECT corpq.model_create('demo', '{"preset": "tiny"}', 'en', 'es', 1) AS version;
SELECT corpq.train('demo', 'SELECT src, tgt, domain FROM train_subset WHERE id NOT LIKE ''%7''',
                   'SELECT src, tgt, domain FROM train_subset WHERE id LIKE ''%7''',
                   '{"steps": 300, "max_tokens": 2048, "lr": 0.002, "warmup": 50, "validate_every": 100,
                     "checkpoint_every": 300, "strategy": "temperature", "tau": 5}') AS job \gset
SELECT corpq.job_wait(:job) AS training;
SELECT step, round(train_loss::numeric, 3) AS train_loss, round(dev_ppl::numeric, 1) AS dev_ppl
FROM corpq.train_log WHERE job = :job AND dev_ppl IS NOT NULL ORDER BY step;
\echo 'data rejuvenation: the least probable training pairs (inactive samples) under the model'
SELECT domain, left(src, 45) AS src, left(tgt, 45) AS tgt, round(corpq.sent_prob('demo', src, tgt)::numeric, 4) AS sent_prob
FROM train_subset WHERE length(src) < 400 AND length(tgt) < 400
ORDER BY corpq.sent_prob('demo', src, tgt) LIMIT 5;
\echo 'Monte Carlo dropout uncertainty (ENTEOS, 10 passes) per domain'
SELECT domain, round(avg(corpq.uncertainty('demo', src, tgt, 'enteos', 10))::numeric, 3) AS mean_enteos
FROM (SELECT * FROM train_subset WHERE length(src) < 400 AND length(tgt) < 400 ORDER BY md5(id) LIMIT 200) s
GROUP BY domain ORDER BY domain;

\echo '== 9. Corpus Analysis Vectors per domain, and the tokens used in the most similar contexts'
CREATE TABLE cavs AS SELECT domain, corpq.cav_accumulate(lower(src), lower(tgt), 32) AS c FROM train_subset GROUP BY domain;
SELECT domain, corpq.cav_summary(c) FROM cavs ORDER BY domain;
SELECT s.token, round(s.cosine::numeric, 3) AS cosine
FROM cavs, corpq.cav_similar(c, 'archivo', 5) s WHERE domain = 'l10n';

\echo '== 10. Rule filters and language identification: what each filter discards, in one parallel scan'
SELECT domain, filter, rejected, round(rejected_share::numeric, 3) AS share
FROM corpq.filter_report_by_domain('SELECT src, tgt, domain FROM corpus',
       corpq.filter_defaults() || '[{"name": "langid", "args": {"src": "en", "tgt": "es"}}]')
WHERE rejected > 0 ORDER BY domain, share DESC;
\echo 'the pairs each filter removes, as a column (OpusFilter''s --removed)'
SELECT left(src, 40) AS src, left(tgt, 40) AS tgt, corpq.filter_rejects(src, tgt) AS rejected_by
FROM corpus WHERE corpq.filter_rejects(src, tgt) <> '{}' ORDER BY md5(id) LIMIT 5;
\echo 'the same filters as a WHERE clause'
SELECT corpq.filter_predicate();
\echo 'CLD2 on each side: share of pairs identified as English and Spanish'
SELECT domain, round(avg(corpq.lang_is(src, 'en')::int), 3) AS src_english,
       round(avg(corpq.lang_is(tgt, 'es')::int), 3) AS tgt_spanish
FROM corpus GROUP BY domain ORDER BY domain;
\echo 'duplicates: exact, near (letters only, lowercased), and one pair per target sentence'
SELECT count(*) AS pairs, count(DISTINCT corpq.dedup_key(src, tgt)) AS exact_keys,
       count(DISTINCT corpq.dedup_key(src, tgt, 'near')) AS near_keys,
       count(DISTINCT corpq.dedup_key(src, tgt, 'exact', 'tgt')) AS target_keys
FROM corpus;
