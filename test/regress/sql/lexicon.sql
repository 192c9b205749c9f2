-- Bilingual lexicons: training jobs, the catalog rows, alignment and
-- UncSamp scores checked against SQL recomputations from the catalog and
-- the corpus, errors, failing and cancelled jobs, sharing between roles.
SET client_min_messages = warning;

-- A toy en-es corpus: determiner, noun, verb; Spanish determiners follow
-- the noun's gender, so "the" is el or la and "a" un or una.
CREATE TABLE lex_bitext AS
SELECT g AS id,
       (ARRAY['the', 'a'])[1 + (g / 7) % 2] || ' ' ||
       (ARRAY['dog', 'book', 'cat', 'house', 'table'])[1 + g % 5] || ' ' ||
       (ARRAY['runs', 'sleeps', 'falls'])[1 + g % 3] AS src,
       (CASE WHEN g % 5 < 3 THEN (ARRAY['el', 'un'])[1 + (g / 7) % 2]
             ELSE (ARRAY['la', 'una'])[1 + (g / 7) % 2] END) || ' ' ||
       (ARRAY['perro', 'libro', 'gato', 'casa', 'mesa'])[1 + g % 5] || ' ' ||
       (ARRAY['corre', 'duerme', 'cae'])[1 + g % 3] AS tgt
FROM generate_series(1, 500) g;
INSERT INTO lex_bitext VALUES (501, NULL, 'nada'), (502, '', 'vacio');

SELECT corpq.lexicon_train('toy', 'SELECT src, tgt FROM lex_bitext') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SELECT kind, state, error, result ->> 'lexicon' AS lexicon,
       result -> 'stats' ->> 'rows' AS rows, result -> 'stats' ->> 'pairs' AS pairs,
       result -> 'stats' ->> 'skipped_pairs' AS skipped,
       result -> 'stats' ->> 'src_vocab' AS src_vocab, result -> 'stats' ->> 'tgt_vocab' AS tgt_vocab,
       (result -> 'stats' -> 'loglik_per_token' ->> 'src-tgt')::float8 < 0 AS ll_negative,
       (result -> 'stats' -> 'tension' ->> 'src-tgt')::float8 > 0 AS tension_positive
  FROM corpq.jobs WHERE id = :job;
SELECT name, version, owner = current_user::regrole AS mine, job = :job AS by_job,
       options ->> 'model' AS model, options ->> 'symmetrize' AS symmetrize,
       (options ->> 'iterations')::int AS iterations
  FROM corpq.lexicons;

-- every source word's best translation, in both tables
SELECT DISTINCT ON (src) src, tgt, round(prob::numeric, 3) AS prob
  FROM corpq.lexicon_dictionary WHERE lexicon = 'toy' ORDER BY src, count DESC, tgt;
SELECT DISTINCT ON (src) src, tgt
  FROM corpq.lexicon_translations WHERE lexicon = 'toy' AND direction = 'src-tgt' AND src IS NOT NULL
 ORDER BY src, prob DESC;
SELECT DISTINCT ON (tgt) tgt, src
  FROM corpq.lexicon_translations WHERE lexicon = 'toy' AND direction = 'tgt-src' AND tgt IS NOT NULL
 ORDER BY tgt, prob DESC;
-- each conditioning word's row is a distribution (pruning drops < 1e-3 of it)
SELECT direction, bool_and(abs(s - 1) < 1e-3) AS rows_sum_to_one
  FROM (SELECT direction, CASE WHEN direction = 'src-tgt' THEN src ELSE tgt END AS cond, sum(prob) AS s
          FROM corpq.lexicon_translations WHERE lexicon = 'toy'
         GROUP BY 1, 2) r
 GROUP BY direction;

-- dictionary: prob = count / links, and the entropy table recomputed in SQL
SELECT bool_and(abs(d.prob - d.count::float8 / e.links) < 1e-12) AS prob_is_count_share,
       bool_and(e.links = (SELECT sum(count) FROM corpq.lexicon_dictionary d2
                            WHERE d2.lexicon = 'toy' AND d2.src = e.src)) AS links_are_sums
  FROM corpq.lexicon_dictionary d JOIN corpq.lexicon_entropy e USING (lexicon, src)
 WHERE lexicon = 'toy';
SELECT e.src, e.links, round(e.entropy::numeric, 6) AS entropy,
       abs(e.entropy - (SELECT -sum(prob * ln(prob)) FROM corpq.lexicon_dictionary d
                         WHERE d.lexicon = 'toy' AND d.src = e.src)) < 1e-12 AS matches_sql
  FROM corpq.lexicon_entropy e WHERE lexicon = 'toy' ORDER BY src;

-- alignment of a training-like pair, and of a reordered one (the diagonal
-- prior resists the reordering: only noun-noun survives symmetrisation)
SELECT corpq.align('toy', 'the dog runs', 'el perro corre') AS a1,
       corpq.align('toy', 'the house falls', 'cae la casa') AS a2,
       corpq.align('toy', 'the dog runs', '') AS empty,
       corpq.coverage('toy', 'the dog runs', 'el perro corre') AS cov1,
       corpq.coverage('toy', 'the dog zzz', 'el perro') AS cov2,
       corpq.align_score('toy', 'the dog runs', '') IS NULL AS empty_null;
-- align_stats keeps align_score's two directions and coverage's sides
-- apart: an unknown target word costs fwd_score (per target token) far more
-- than rev_score; a target word with no source word to link ('the dog' /
-- 'el perro corre') leaves target coverage at 2/3 and source coverage at 1;
-- the tails (the mean per-token term over a side's last third minus over
-- the rest): near 0 for the translation, far below 0 where unknown words
-- were appended to the target ('zzz', 'zzz yyy': tgt_tail) or where the
-- target's 'corre' has no source word ('the dog'), and above 0 when the
-- unknown word is at the start ('the zzz dog runs': src_tail)
SELECT a.*, a.fwd_score + a.rev_score = 2 * corpq.align_score('toy', s, t) AS mean_is_align_score,
       a.src_coverage = corpq.coverage('toy', s, t) AS src_is_coverage
  FROM (VALUES ('the dog runs', 'el perro corre'), ('the dog runs', 'el perro corre zzz'),
               ('the dog', 'el perro corre'), ('the dog runs', 'el perro corre zzz yyy'),
               ('the zzz dog runs', 'el perro corre')) v(s, t),
       LATERAL corpq.align_stats('toy', s, t) a;
SELECT corpq.align_stats('toy', '', 'el perro') IS NULL AS empty_null,
       corpq.align_stats('toy', NULL, 'el perro') IS NULL AS null_null;
SELECT corpq.align_score('toy', 'the dog runs', 'el perro corre') >
       corpq.align_score('toy', 'the dog runs', 'una mesa cae') AS good_beats_bad;

-- mono_uncertainty = mean of the entropy table over tokens (1e-6 without links)
SELECT s, round(corpq.mono_uncertainty('toy', s)::numeric, 6) AS u,
       abs(corpq.mono_uncertainty('toy', s) -
           (SELECT avg(coalesce(e.entropy, 1e-6)) FROM regexp_split_to_table(s, ' ') w
              LEFT JOIN corpq.lexicon_entropy e ON e.lexicon = 'toy' AND e.src = w)) < 1e-12 AS matches_sql
  FROM (VALUES ('the dog runs'), ('a house'), ('the zzz qqq'), ('dog')) v(s);
SELECT corpq.mono_uncertainty('toy', ''), corpq.mono_uncertainty('toy', NULL);

-- word_rarity = -mean ln(count / tokens), from the corpus itself
WITH toks AS (SELECT w FROM lex_bitext, regexp_split_to_table(src, ' ') w
               WHERE src <> '' AND tgt IS NOT NULL),
     freq AS (SELECT w, count(*)::float8 / (SELECT count(*) FROM toks) AS p FROM toks GROUP BY w)
SELECT s, abs(corpq.word_rarity('toy', s) -
              (SELECT -avg(ln(coalesce(f.p, 1.0 / (SELECT count(*) FROM toks))))
                 FROM regexp_split_to_table(s, ' ') x LEFT JOIN freq f ON f.w = x)) < 1e-12 AS matches_sql
  FROM (VALUES ('the dog runs'), ('a table'), ('unseen words here')) v(s);
SELECT corpq.word_rarity('toy', 'a table') < corpq.word_rarity('toy', 'a unseenword') AS rare_is_higher;

-- IBM Model 1: align_score recomputed in SQL from the stored tables
-- (uniform prior 1/(n+1), NULL word included, unseen t = 1e-9)
SELECT corpq.lexicon_train('toy1', 'SELECT src, tgt FROM lex_bitext',
                           '{"model": "ibm1", "iterations": 4, "symmetrize": "intersect"}') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SELECT options ->> 'favor_diagonal' AS diag, options ->> 'optimize_tension' AS opt
  FROM corpq.lexicons WHERE name = 'toy1';
CREATE FUNCTION pg_temp.lex_t(d text, cond text, gen text) RETURNS float8 LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT prob FROM corpq.lexicon_translations
                      WHERE lexicon = 'toy1' AND direction = d
                        AND (CASE WHEN d = 'src-tgt' THEN src ELSE tgt END) IS NOT DISTINCT FROM cond
                        AND (CASE WHEN d = 'src-tgt' THEN tgt ELSE src END) = gen), 1e-9) $$;
CREATE FUNCTION pg_temp.lex_dir(d text, e text[], f text[]) RETURNS float8 LANGUAGE sql STABLE AS $$
    SELECT avg(ln((pg_temp.lex_t(d, NULL, fj) +
                   (SELECT sum(pg_temp.lex_t(d, ei, fj)) FROM unnest(e) ei)) / (cardinality(e) + 1)))
      FROM unnest(f) fj $$;
SELECT s, t, abs(corpq.align_score('toy1', s, t) -
                 (pg_temp.lex_dir('src-tgt', string_to_array(s, ' '), string_to_array(t, ' ')) +
                  pg_temp.lex_dir('tgt-src', string_to_array(t, ' '), string_to_array(s, ' '))) / 2) < 1e-3 AS matches_sql
  FROM (VALUES ('the dog runs', 'el perro corre'), ('a cat', 'un gato duerme'),
               ('the zzz', 'la mesa')) v(s, t);
SELECT corpq.align('toy1', 'the dog runs', 'el perro corre') AS intersect_links;

-- the other fast_align options reach the trainer: variational Bayes, a fixed
-- tension, no diagonal prior, union symmetrisation
SELECT corpq.lexicon_train('toy_vb', 'SELECT src, tgt FROM lex_bitext',
                           '{"variational_bayes": true, "alpha": 0.05, "p0": 0.1, "tension": 2,
                             "optimize_tension": false, "favor_diagonal": false,
                             "symmetrize": "union", "iterations": 4}') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SELECT options ->> 'variational_bayes' AS vb, options ->> 'alpha' AS alpha, options ->> 'symmetrize' AS sym,
       stats -> 'tension' ->> 'src-tgt' AS tension
  FROM corpq.lexicons WHERE name = 'toy_vb';
SELECT DISTINCT ON (src) src, tgt
  FROM corpq.lexicon_dictionary WHERE lexicon = 'toy_vb' AND src IN ('dog', 'house', 'runs')
 ORDER BY src, count DESC;
SELECT corpq.align('toy_vb', 'the dog runs', 'el perro corre') AS union_links;

-- lowercase and a BPE segmenter apply to training and to the functions
SELECT corpq.bpe_import('lex_bpe', E'#version: 0.2\nr u\nru n\nrun s</w>\n');
SELECT corpq.lexicon_train('toy_bpe', 'SELECT upper(src), tgt FROM lex_bitext',
                           '{"bpe": "lex_bpe", "lowercase": true, "iterations": 3}') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SELECT corpq.align('toy_bpe', 'THE DOG RUNS', 'el perro corre') AS bpe_links,
       (SELECT count(*) FROM corpq.lexicon_entropy WHERE lexicon = 'toy_bpe' AND src LIKE '%@@') > 0 AS has_subwords;

-- the resolved options echo each number in the shortest form that reads back
-- to the same double, whatever extra_float_digits says: through the job's
-- arguments, the worker's parse of them, and the lexicon's row
SET extra_float_digits = 0;
SELECT corpq.lexicon_train('toy_rt', 'SELECT src, tgt FROM lex_bitext',
                           '{"p0": 0.30000000000000004, "alpha": 2.2250738585072014e-308,
                             "tension": 12.345678901234567, "iterations": 1}') AS job \gset
RESET extra_float_digits;
SELECT corpq.job_wait(:job, '120 s');
SELECT j.args -> 'options' ->> 'p0' AS p0, j.args -> 'options' ->> 'tension' AS tension,
       (l.options ->> 'p0')::float8 = 0.1::float8 + 0.2::float8 AS p0_exact,
       (l.options ->> 'alpha')::float8 = '2.2250738585072014e-308'::float8 AS alpha_exact,
       (l.options ->> 'tension')::float8 = '12.345678901234567'::float8 AS tension_exact,
       l.options = j.args -> 'options' AS same_after_reparse
  FROM corpq.jobs j JOIN corpq.lexicons l ON l.job = j.id WHERE l.name = 'toy_rt';
SELECT corpq.lexicon_drop('toy_rt');
DELETE FROM corpq.jobs WHERE id = :job;

-- argument errors are raised before a job is submitted
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"iterationz": 3}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"model": "hmm"}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"iterations": 2.5}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"p0": 1}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"symmetrize": "grow"}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"lowercase": "yes"}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '[1]');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"tension": 0}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"tension": 51}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"alpha": 1e-310}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"iterations": 1e400}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"iterations": null}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"bpe": ""}');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext', '{"bpe": "nosuchbpe"}');
SELECT corpq.lexicon_train('toy', 'SELECT src, tgt FROM lex_bitext');
SELECT corpq.lexicon_train('', 'SELECT src, tgt FROM lex_bitext');
SELECT corpq.lexicon_train('x', 'SELECT src FROM lex_bitext');
SELECT corpq.lexicon_train('x', 'SELECT id, tgt FROM lex_bitext');
SELECT corpq.lexicon_train('x', 'DELETE FROM lex_bitext RETURNING src, tgt');
SELECT corpq.lexicon_train('x', 'WITH d AS (DELETE FROM lex_bitext RETURNING src, tgt) SELECT * FROM d');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt INTO lex_copy FROM lex_bitext');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext FOR UPDATE');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM lex_bitext; SELECT src, tgt FROM lex_bitext');
SELECT corpq.lexicon_train('x', 'SELECT src, tgt FROM no_such_table');
SELECT corpq.align('nope', 'a', 'b');
SELECT corpq.mono_uncertainty('nope', 'a');
SELECT count(*) AS jobs_after_errors FROM corpq.jobs;

-- a corpus query that fails while the job runs: failed, message kept, no rows
SELECT corpq.lexicon_train('broken', 'SELECT src, (1 / (id - 250))::text FROM lex_bitext') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;
SELECT count(*) AS broken_rows FROM corpq.lexicons WHERE name = 'broken';

-- a job submitted in an aborted transaction never runs
BEGIN;
SELECT corpq.lexicon_train('never', 'SELECT src, tgt FROM lex_bitext') > 0 AS submitted;
ROLLBACK;
SELECT count(*) AS never_rows FROM corpq.jobs WHERE args ->> 'name' = 'never';

-- replace: a new version replaces every row at once
SELECT corpq.lexicon_train('toy', 'SELECT src, tgt FROM lex_bitext WHERE id <= 100',
                           '{"replace": true, "iterations": 3}') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SELECT name, version, (stats ->> 'rows')::int AS rows, (options ->> 'iterations')::int AS iterations
  FROM corpq.lexicons WHERE name = 'toy';
SELECT count(*) = (SELECT count(DISTINCT src) FROM corpq.lexicon_dictionary WHERE lexicon = 'toy') AS consistent
  FROM corpq.lexicon_entropy WHERE lexicon = 'toy';

-- cancel a running job: live progress first, then 'cancelled' and the
-- previous version intact
CREATE TABLE lex_big AS
SELECT g AS id, (SELECT string_agg('w' || ((g * 7 + k * 13) % 997), ' ') FROM generate_series(1, 12) k) AS src,
       (SELECT string_agg('v' || ((g * 11 + k * 17) % 991), ' ') FROM generate_series(1, 12) k) AS tgt
FROM generate_series(1, 20000) g;
SELECT corpq.lexicon_train('toy', 'SELECT src, tgt FROM lex_big',
                           '{"replace": true, "iterations": 1000}') AS job \gset
DO $$
BEGIN
    FOR i IN 1 .. 1200 LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM corpq.job_progress p
                           WHERE p.phase = 'em' AND p.figures ? 'loglik_per_token');
        PERFORM pg_sleep(0.05);
        -- pg_stat_activity is read once per transaction unless cleared
        PERFORM pg_stat_clear_snapshot();
    END LOOP;
END $$;
SELECT state, phase, unit, total = 2 * 999 * 20000 AS total_ok, done > 0 AS moving,
       figures ? 'iteration' AS has_iteration, figures ? 'tension' AS has_tension
  FROM corpq.job_progress WHERE id = :job;
SELECT corpq.job_cancel(:job);
SELECT corpq.job_wait(:job, '120 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;
SELECT version, (stats ->> 'rows')::int AS rows FROM corpq.lexicons WHERE name = 'toy';
SELECT corpq.job_cancel(:job);

-- sharing: everyone reads, only the owner replaces or drops; the corpus
-- query runs with the submitter's privileges.  Jobs run as the role whose
-- session submits them, so the roles log in (pg_virtualenv's password).
SELECT current_user AS regress_superuser \gset
\set regress_password unused
\getenv regress_password PGPASSWORD
CREATE ROLE corpq_lex_a LOGIN PASSWORD :'regress_password';
CREATE ROLE corpq_lex_b LOGIN PASSWORD :'regress_password';
GRANT SELECT ON lex_bitext TO corpq_lex_a;
\c - corpq_lex_a
SELECT corpq.lexicon_train('shared', 'SELECT src, tgt FROM lex_bitext', '{"iterations": 2}') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SELECT name, owner FROM corpq.lexicons WHERE name = 'shared';
\c - corpq_lex_b
SELECT corpq.align('shared', 'the dog', 'el perro') AS b_can_align;
SELECT count(*) > 0 AS b_can_read FROM corpq.lexicon_dictionary WHERE lexicon = 'shared';
DELETE FROM corpq.lexicon_dictionary WHERE lexicon = 'shared';
UPDATE corpq.lexicons SET version = 99 WHERE name = 'shared';
SELECT corpq.lexicon_drop('shared');
SELECT corpq.lexicon_train('shared', 'SELECT src, tgt FROM lex_bitext', '{"replace": true}');
SELECT corpq.lexicon_train('b_own', 'SELECT src, tgt FROM lex_bitext') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;
\c - :regress_superuser
SET client_min_messages = warning;
SELECT count(*) AS dictionary_kept FROM corpq.lexicon_dictionary WHERE lexicon = 'shared' HAVING count(*) > 0;
SET ROLE corpq_lex_a;
SELECT corpq.lexicon_drop('shared');
RESET ROLE;
SELECT corpq.lexicon_drop('shared');

-- clean up
SELECT corpq.lexicon_drop(name) FROM corpq.lexicons ORDER BY name;
SELECT count(*) AS left_rows FROM corpq.lexicon_translations;
SELECT corpq.bpe_drop('lex_bpe');
DELETE FROM corpq.jobs;
DROP TABLE lex_bitext, lex_big;
REVOKE ALL ON corpq.object_owners FROM corpq_lex_a;
DROP ROLE corpq_lex_a;
REVOKE ALL ON corpq.object_owners FROM corpq_lex_b;
DROP ROLE corpq_lex_b;
