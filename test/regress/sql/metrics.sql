-- Evaluation metrics: BLEU and chrF as sacreBLEU computes them, as
-- aggregates.  Hand-worked values, NULLs, bad options, the signature, and
-- the aggregates equal under forced parallel plans and partitionwise
-- aggregation (partial states combined) and serially, per domain.
-- (test/ref/test_metrics.py checks the core against sacreBLEU's own test
-- vectors and a plain-Python reference.)
SET client_min_messages = warning;
SET extra_float_digits = 0;

-- ---- hand-worked values ------------------------------------------------------
-- "the cat sat on the mat" / "the cat is on the mat": 5/6, 3/5, 1/4, 0/3;
-- exp smoothing gives the 4-gram precision 100 / (2 * 3), BP 1
SELECT round(corpq.sentence_bleu('the cat sat on the mat', 'the cat is on the mat')::numeric, 10) AS bleu,
       abs(corpq.sentence_bleu('the cat sat on the mat', 'the cat is on the mat')
           - power(500 / 6.0 * 60 * 25 * (100 / 6.0), 0.25)) < 1e-9 AS as_worked;
-- floor 0.1: 100 * 0.1 / 3; add-k 1: 4/6, 2/5, 1/4 from the 2-grams on; none: 0
SELECT abs(corpq.sentence_bleu('the cat sat on the mat', 'the cat is on the mat', '{"smooth": "floor"}')
           - power(500 / 6.0 * 60 * 25 * (10 / 3.0), 0.25)) < 1e-9 AS floor,
       abs(corpq.sentence_bleu('the cat sat on the mat', 'the cat is on the mat', '{"smooth": "add-k"}')
           - power(500 / 6.0 * 400 / 6.0 * 40 * 25, 0.25)) < 1e-9 AS add_k,
       corpq.sentence_bleu('the cat sat on the mat', 'the cat is on the mat', '{"smooth": "none"}') AS none;
-- brevity penalty exp(1 - 3/2); sentence BLEU uses the effective order (2
-- orders here), corpus BLEU does not (no 3-grams: score 0)
SELECT abs(corpq.sentence_bleu('the cat', 'the cat sat') - 100 * exp(-0.5)) < 1e-9 AS sentence_bp,
       corpq.bleu('the cat', 'the cat sat') AS corpus_no_trigrams,
       abs(corpq.bleu('the cat', 'the cat sat', '{"effective_order": true}') - 100 * exp(-0.5)) < 1e-9 AS corpus_eff;
-- a corpus is the sum of its sentences' statistics: clipping "the the the"
-- to 1 of 3; then 5/7, 3/5, 2/3, 1/1
SELECT abs(corpq.bleu(h, r) - power(500 / 7.0 * 60 * 200 / 3.0 * 100, 0.25)) < 1e-9 AS corpus_sum
  FROM (VALUES ('the the the', 'the cat'), ('a b c d', 'a b c d')) v(h, r);
-- chrF: "a bc" / "ab d" without whitespace: 1-grams 2/3, 2-grams 1/2,
-- 3-grams 0/1 (P = R), higher orders absent: 100 * 7/18
SELECT round(corpq.chrf('a bc', 'ab d')::numeric, 10) AS chrf,
       abs(corpq.sentence_chrf('a bc', 'ab d') - 700 / 18.0) < 1e-9 AS as_worked;
-- chrF++: characters "thecat." / "(thecat" match 6/7 .. 1/2 per order,
-- words the, cat, . / (, the, cat: 2/3 and "the cat" 1/2
SELECT abs(corpq.sentence_chrf('the cat.', '(the cat', '{"word_order": 2}')
           - 100 * (6 / 7.0 + 5 / 6.0 + 4 / 5.0 + 3 / 4.0 + 2 / 3.0 + 1 / 2.0 + 2 / 3.0 + 1 / 2.0) / 8) < 1e-9
       AS chrf_plus_plus;
-- identical text scores 100; nothing in common 0
SELECT corpq.sentence_bleu('a b c d e', 'a b c d e') AS bleu_same, corpq.sentence_chrf('abc', 'abc') AS chrf_same,
       corpq.sentence_bleu('a b c d', 'e f g h') AS bleu_none, corpq.sentence_chrf('abc', 'xyz') AS chrf_none;

-- ---- tokenizers, case, signatures ---------------------------------------------
SELECT corpq.bleu_tokenize('Hello, world! It''s 3.14 or 1,000 (in 2010).') AS t13a,
       corpq.bleu_tokenize('Hello, world! It''s 3.14 or 1,000 (in 2010).', '{"tokenize": "intl"}') AS intl,
       corpq.bleu_tokenize('«¿Qué?» 5€ &amp;', '{"tokenize": "intl", "lowercase": true}') AS intl_lc,
       corpq.bleu_tokenize('&quot;ok&quot; a-b 1-2', '{"tokenize": "13a"}') AS entities,
       corpq.bleu_tokenize('ab c', '{"tokenize": "char"}') AS chr,
       corpq.bleu_tokenize(' a,b   c ', '{"tokenize": "none"}') AS none,
       corpq.bleu_tokenize('ΟΔΟΣ İ', '{"lowercase": true}') AS greek_lc;
-- lowercase matters for BLEU only when asked
SELECT corpq.sentence_bleu('The Cat', 'the cat') < 100 AS cased,
       corpq.sentence_bleu('The Cat', 'the cat', '{"lowercase": true}') AS lowercased;
SELECT corpq.bleu_signature('{}') AS bleu_default,
       corpq.bleu_signature('{"tokenize": "intl", "lowercase": true, "smooth": "floor", "effective_order": true}') AS bleu_floor,
       corpq.bleu_signature('{"smooth": "add-k", "smooth_value": 2}') AS bleu_add_k,
       corpq.chrf_signature('{}') AS chrf_default,
       corpq.chrf_signature('{"word_order": 2, "eps_smoothing": true, "whitespace": true}') AS chrf_pp;

-- ---- NULLs: rows with a NULL argument are skipped -----------------------------
SELECT corpq.bleu(h, r) IS NULL AS no_rows FROM (SELECT 'a'::text, 'b'::text WHERE false) v(h, r);
SELECT corpq.bleu(h, r) IS NULL AS all_null, corpq.chrf(h, r) IS NULL AS chrf_all_null
  FROM (VALUES (NULL::text, 'a'::text), ('a', NULL)) v(h, r);
SELECT corpq.bleu(h, r) = corpq.bleu(h, r) FILTER (WHERE h IS NOT NULL AND r IS NOT NULL) AS skipped,
       corpq.chrf(h, r) = corpq.chrf(h, r) FILTER (WHERE h IS NOT NULL AND r IS NOT NULL) AS chrf_skipped,
       corpq.bleu(h, r, o) = corpq.bleu(h, r) FILTER (WHERE o IS NOT NULL) AS null_options_skipped
  FROM (VALUES ('a b c d', 'a b c d', '{}'::jsonb), (NULL, 'x y', '{}'), ('a x c', NULL, '{}'),
               ('a b x d', 'a b c d', NULL), ('b c d', 'a b c d', '{}')) v(h, r, o);
SELECT corpq.sentence_bleu(NULL, 'a') IS NULL AS a, corpq.sentence_chrf('a', NULL) IS NULL AS b,
       corpq.bleu_signature(NULL) IS NULL AS c, corpq.sentence_bleu('a', 'a', NULL) IS NULL AS d;
-- empty strings are text, not NULL: an empty hypothesis scores 0
SELECT corpq.bleu(h, r) AS empty_hyp, corpq.chrf(h, r) AS chrf_empty_hyp
  FROM (VALUES ('', 'the cat')) v(h, r);

-- ---- bad options ----------------------------------------------------------------
SELECT corpq.sentence_bleu('a', 'a', '{"tokenizer": "13a"}');
SELECT corpq.sentence_bleu('a', 'a', '{"tokenize": "moses"}');
SELECT corpq.sentence_bleu('a', 'a', '{"smooth": "add-one"}');
SELECT corpq.sentence_bleu('a', 'a', '{"smooth_value": 0.5}');
SELECT corpq.sentence_bleu('a', 'a', '{"smooth": "floor", "smooth_value": -1}');
SELECT corpq.sentence_bleu('a', 'a', '{"lowercase": "yes"}');
SELECT corpq.sentence_bleu('a', 'a', '["13a"]');
SELECT corpq.sentence_chrf('a', 'a', '{"char_order": 0}');
SELECT corpq.sentence_chrf('a', 'a', '{"word_order": 9}');
SELECT corpq.sentence_chrf('a', 'a', '{"beta": 0}');
SELECT corpq.sentence_chrf('a', 'a', '{"tokenize": "13a"}');
SELECT corpq.bleu(h, r, o) FROM (VALUES ('a', 'a', '{}'::jsonb), ('b', 'b', '{"lowercase": true}')) v(h, r, o);
SELECT corpq.chrf_final(s) FROM (SELECT corpq.bleu_trans('{}', 'a', 'a') s) x;
SELECT corpq.bleu_final('{1,2,3}');
SELECT corpq.metrics_combine(corpq.bleu_trans('{}', 'a', 'a'), corpq.bleu_trans('{}', 'a', 'a', '{"tokenize": "none"}'));
SELECT corpq.paired_bootstrap(h, h, h, 0) FROM (VALUES ('a')) v(h);
SELECT corpq.paired_bootstrap(h, h, h, NULL) FROM (VALUES ('a')) v(h);
SELECT corpq.paired_bootstrap(h, h, h, 10, 1, '{"metric": "bleu", "word_order": 2}') FROM (VALUES ('a')) v(h);
SELECT corpq.paired_bootstrap(h, h, h, 10, 1, '{"metric": "ter"}') FROM (VALUES ('a')) v(h);
SELECT corpq.paired_bootstrap(h, h, h, n) FROM (VALUES ('a', 10), ('b', 20)) v(h, n);

-- ---- a corpus: 3 domains, two systems with known edits, some NULLs --------------
CREATE TABLE mt_corpus AS
WITH w AS (SELECT ARRAY['the', 'a', 'cat', 'dog', 'sat', 'ran', 'on', 'under', 'mat', 'tree', 'quickly',
                        'red', 'big', 'small', 'house', 'garden', 'near', 'old', 'new', 'river'] AS w)
SELECT g AS id, (ARRAY['bible', 'ddtp', 'l10n'])[1 + g % 3] AS domain, ref, hyp_a, hyp_b, hyp_c
  FROM generate_series(1, 3000) g, w,
       LATERAL (SELECT concat_ws(' ', initcap(w[1 + g % 20]), w[1 + (g * 7) % 20], w[1 + (g * 3) % 20],
                                 w[1 + (g * 11) % 20], w[1 + (g * 13) % 20], w[1 + (g / 7) % 20]) || '.' AS ref) r,
       LATERAL (SELECT CASE WHEN g % 97 = 0 THEN NULL
                            WHEN g % 4 = 0 THEN ref                                        -- identical
                            WHEN g % 4 = 1 THEN regexp_replace(ref, ' \S+', '')            -- a word dropped
                            WHEN g % 4 = 2 THEN regexp_replace(ref, '(\S+) (\S+)', '\2 \1') -- two swapped
                            ELSE regexp_replace(ref, ' \S+ ', ' ' || w[1 + (g * 17) % 20] || ' ') -- substituted
                       END AS hyp_a) a,
       LATERAL (SELECT CASE WHEN g % 89 = 0 THEN NULL
                            WHEN g % 5 = 0 THEN lower(ref)                                 -- case
                            ELSE regexp_replace(ref, '(\S+)$', 'the \1')                   -- a word inserted
                       END AS hyp_b) b,
       -- A with a few sentences better and a few worse
       LATERAL (SELECT CASE WHEN g % 40 = 1 THEN ref
                            WHEN g % 40 = 20 THEN regexp_replace(ref, ' \S+', '')
                            ELSE hyp_a
                       END AS hyp_c) c;
ANALYZE mt_corpus;
-- the per-domain scores (a reference for the plans below)
SELECT domain, count(*), round(corpq.bleu(hyp_a, ref)::numeric, 8) AS bleu_a,
       round(corpq.bleu(hyp_b, ref)::numeric, 8) AS bleu_b,
       round(corpq.chrf(hyp_a, ref)::numeric, 8) AS chrf_a,
       round(corpq.chrf(hyp_b, ref, '{"word_order": 2}')::numeric, 8) AS chrfpp_b,
       round(corpq.bleu(hyp_b, ref, '{"lowercase": true, "tokenize": "intl"}')::numeric, 8) AS bleu_b_lc
  FROM mt_corpus GROUP BY domain ORDER BY domain;
-- paired bootstrap: B is significantly worse than A in every domain; the
-- resampled means lie within the intervals around the scores
SELECT domain, round(score_a::numeric, 6) AS a, round(score_b::numeric, 6) AS b, p_value < 0.05 AS significant,
       ci_a > 0 AND ci_b > 0 AS cis, abs(mean_a - score_a) < ci_a AND abs(mean_b - score_b) < ci_b AS means,
       resamples, segments
  FROM (SELECT domain, (corpq.paired_bootstrap(hyp_a, hyp_b, ref, 200)).* FROM mt_corpus GROUP BY domain) s
 ORDER BY domain;
-- C is A with 75 sentences fixed and 74 broken: +0.43 BLEU, consistent
-- across sentences; not significant on the first 200 sentences, significant
-- on all of them.  score_a and score_b are bleu() of the rows used.
SELECT lim, (bs).score_a = bleu_a AS score_a_is_bleu, (bs).score_b = bleu_c AS score_b_is_bleu,
       round(((bs).score_b - (bs).score_a)::numeric, 2) AS gain, round((bs).p_value::numeric, 4) AS p,
       (bs).p_value < 0.05 AS significant, (bs).segments
  FROM (SELECT lim, corpq.paired_bootstrap(hyp_a, hyp_c, ref, 1000) AS bs,
               corpq.bleu(hyp_a, ref) FILTER (WHERE hyp_c IS NOT NULL) AS bleu_a,
               corpq.bleu(hyp_c, ref) FILTER (WHERE hyp_a IS NOT NULL) AS bleu_c
          FROM mt_corpus, (VALUES (200), (3000)) l(lim) WHERE id <= lim GROUP BY lim) s
 ORDER BY lim;
-- as in sacreBLEU, whose count of more extreme resamples is strict, a system
-- against itself gets p = 1/(n + 1), the smallest p-value there is
SELECT p_value = 1 / 201.0 AS self_p, ci_a = ci_b AND mean_a = mean_b AS same
  FROM (SELECT (corpq.paired_bootstrap(hyp_a, hyp_a, ref, 200, 7, '{"metric": "chrf"}')).* FROM mt_corpus) s;

-- ---- parallel plans, partitionwise aggregation ---------------------------------
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;

-- pg_temp.par_check(q) (test/regress/fixtures/): q in a forced parallel
-- plan: the most workers any Gather launched, and whether its rows equal
-- those of the serial plan (bit for bit: integer statistics add up exactly
-- in any order, and the bootstrap resamples rows in a canonical order)
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/par_check.sql'
\i :fixture

CREATE TEMP TABLE mt_queries (label text PRIMARY KEY, q text NOT NULL);
INSERT INTO mt_queries VALUES
('bleu, chrf per domain',
 $q$SELECT domain, corpq.bleu(hyp_a, ref), corpq.chrf(hyp_a, ref), corpq.bleu(hyp_b, ref),
           corpq.chrf(hyp_b, ref) FROM mt_corpus GROUP BY domain$q$),
('bleu, chrf with options per domain',
 $q$SELECT domain, corpq.bleu(hyp_b, ref, '{"tokenize": "intl", "lowercase": true, "smooth": "floor"}'),
           corpq.chrf(hyp_b, ref, '{"word_order": 2, "eps_smoothing": true}') FROM mt_corpus GROUP BY domain$q$),
('bleu, chrf over the whole table',
 $q$SELECT corpq.bleu(hyp_a, ref), corpq.chrf(hyp_a, ref, '{"word_order": 2}') FROM mt_corpus$q$),
('paired_bootstrap per domain',
 $q$SELECT domain, corpq.paired_bootstrap(hyp_a, hyp_b, ref, 100, 99) FROM mt_corpus GROUP BY domain$q$),
('paired_bootstrap chrF++ over the whole table',
 $q$SELECT corpq.paired_bootstrap(hyp_a, hyp_b, ref, 50, 3, '{"metric": "chrf", "word_order": 2}') FROM mt_corpus$q$),
('sentence_bleu, sentence_chrf',
 $q$SELECT id, corpq.sentence_bleu(hyp_a, ref), corpq.sentence_chrf(hyp_b, ref) FROM mt_corpus$q$);

SELECT label, (c).workers > 0 AS parallel, (c).same_as_serial
  FROM (SELECT label, pg_temp.par_check(q) AS c FROM mt_queries) s ORDER BY label;
EXPLAIN (COSTS OFF)
SELECT domain, corpq.bleu(hyp_a, ref) FROM mt_corpus GROUP BY domain;
EXPLAIN (COSTS OFF)
SELECT corpq.paired_bootstrap(hyp_a, hyp_b, ref) FROM mt_corpus;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- partitions by hash of id, grouped by domain: each partition aggregates
-- partially and the partial states are combined (as postgres_fdw partitions
-- or Citus shards would be); the result equals the plain table's
CREATE TABLE mt_parts (LIKE mt_corpus) PARTITION BY HASH (id);
CREATE TABLE mt_parts_0 PARTITION OF mt_parts FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE mt_parts_1 PARTITION OF mt_parts FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE mt_parts_2 PARTITION OF mt_parts FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO mt_parts SELECT * FROM mt_corpus;
ANALYZE mt_parts;
SET enable_partitionwise_aggregate = on;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF)
SELECT domain, corpq.bleu(hyp_a, ref) FROM mt_parts GROUP BY domain;
SELECT bool_and(p.bleu = c.bleu AND p.chrf = c.chrf AND p.bs = c.bs) AS partitionwise_equal, count(*)
  FROM (SELECT domain, corpq.bleu(hyp_a, ref), corpq.chrf(hyp_b, ref, '{"word_order": 2}') AS chrf,
               corpq.paired_bootstrap(hyp_a, hyp_b, ref, 100)::text AS bs
          FROM mt_parts GROUP BY domain) p
  JOIN (SELECT domain, corpq.bleu(hyp_a, ref), corpq.chrf(hyp_b, ref, '{"word_order": 2}') AS chrf,
               corpq.paired_bootstrap(hyp_a, hyp_b, ref, 100)::text AS bs
          FROM mt_corpus GROUP BY domain) c USING (domain);
RESET enable_partitionwise_aggregate;
RESET max_parallel_workers_per_gather;

-- the labels: immutable, parallel safe; bleu() and chrf() keep a bigint[]
-- state (no serial/deserial needed), paired_bootstrap an internal one
SELECT p.oid::regprocedure, p.provolatile, p.proparallel, p.proisstrict FROM pg_proc p
 WHERE p.pronamespace = 'corpq'::regnamespace
   AND p.proname IN ('bleu', 'chrf', 'paired_bootstrap', 'sentence_bleu', 'sentence_chrf', 'bleu_signature',
                     'chrf_signature', 'bleu_tokenize', 'metrics_combine')
 ORDER BY p.oid::regprocedure::text COLLATE "C";

DROP TABLE mt_corpus, mt_parts;
