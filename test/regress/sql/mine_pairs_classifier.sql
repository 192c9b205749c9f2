-- corpq.mine_pairs() with a classifier (docs/embeddings.md, docs/curation.md):
-- each source's classifier_k best candidates by margin are judged by
-- pair_quality and the most probable wins.  The reference is computed in
-- SQL: each source's k nearest targets by cosine (k = classifier_k = 4, so
-- the candidates are the whole list, whatever their margin order), the
-- pair_quality of each, the largest; the returned quality must equal
-- pair_quality(classifier, src, tgt) bit for bit.  Then classifier_k = 1
-- (the pairs of the call without a classifier), min_quality, a pinned
-- version, mutual, the spill path at a small work_mem, and bad input.
SET client_min_messages = warning;

-- The toy en-es corpus (test/regress/fixtures/toy_en_es.sql): 3 to 9 words a
-- side, word-for-word translations.
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/toy_en_es.sql'
\i :fixture
CREATE TABLE mpc_pairs AS SELECT * FROM pg_temp.toy_en_es(400, 3, '');

-- the classifier: string and language features, and a lexicon's (what
-- tells a translation from another sentence of its length)
SELECT corpq.lexicon_train('mpc_lex', 'SELECT src, tgt FROM mpc_pairs') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SELECT corpq.classifier_train('mpc', 'SELECT src, tgt FROM mpc_pairs',
                              '{"src_lang": "en", "tgt_lang": "es", "lexicon": "mpc_lex", "seed": 3}') AS job \gset
SELECT corpq.job_wait(:job, '300 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;

-- sources: the English sides of 1 .. 120; targets: the Spanish sides of
-- 1 .. 150 (ids + 1000), so each source's translation is among them; an
-- untrained encoder (fixed seed): its neighbours are arbitrary, the
-- classifier is not
CREATE TABLE mpc_src AS SELECT id, src AS sentence FROM mpc_pairs WHERE id <= 120;
CREATE TABLE mpc_tgt AS SELECT 1000 + id AS id, tgt AS sentence FROM mpc_pairs WHERE id <= 150;
SELECT corpq.vocab_build('mpc_joint', 'SELECT src FROM mpc_pairs UNION ALL SELECT tgt FROM mpc_pairs') > 0 AS vocab;
SELECT corpq.model_create('mpc_enc', '{"preset": "tiny", "kind": "encoder", "max_positions": 32}',
                          'mpc_joint', 'mpc_joint', 7);

-- the reference: every cosine from the embed() vectors (in double), each
-- side's k-NN means, each source's 4 nearest targets with a margin
CREATE TABLE mpc_vec AS
SELECT 's' AS side, id, corpq.embed('mpc_enc', sentence) AS v FROM mpc_src
UNION ALL
SELECT 't', id, corpq.embed('mpc_enc', sentence) FROM mpc_tgt;
CREATE TABLE mpc_cos AS
SELECT s.id AS src_id, t.id AS tgt_id,
       (SELECT sum(a::float8 * b) FROM unnest(s.v, t.v) u(a, b))
       / sqrt((SELECT sum(a::float8 * a) FROM unnest(s.v) a) * (SELECT sum(b::float8 * b) FROM unnest(t.v) b)) AS cos
  FROM mpc_vec s, mpc_vec t WHERE s.side = 's' AND t.side = 't';
CREATE TABLE mpc_ranked AS
SELECT *, row_number() OVER (PARTITION BY src_id ORDER BY cos DESC, tgt_id) AS src_rank,
          row_number() OVER (PARTITION BY tgt_id ORDER BY cos DESC, src_id) AS tgt_rank
  FROM mpc_cos;
CREATE TABLE mpc_cand AS
WITH rx AS (SELECT src_id, avg(cos) AS r FROM mpc_ranked WHERE src_rank <= 4 GROUP BY src_id),
     ry AS (SELECT tgt_id, avg(cos) AS r FROM mpc_ranked WHERE tgt_rank <= 4 GROUP BY tgt_id)
SELECT c.src_id, c.tgt_id, c.cos, rx.r + ry.r AS denominator,
       corpq.pair_quality('mpc', s.sentence, t.sentence) AS quality
  FROM mpc_ranked c JOIN rx USING (src_id) JOIN ry USING (tgt_id)
  JOIN mpc_src s ON s.id = c.src_id JOIN mpc_tgt t ON t.id = c.tgt_id
 WHERE c.src_rank <= 4;
-- a source whose 4th and 5th cosines or whose margins' denominators are
-- too close to call in double is left out of the comparison
CREATE TABLE mpc_clear AS
SELECT src_id FROM mpc_ranked
 GROUP BY src_id
HAVING max(cos) FILTER (WHERE src_rank = 4) - max(cos) FILTER (WHERE src_rank = 5) > 1e-5
   AND (SELECT min(abs(denominator)) FROM mpc_cand c WHERE c.src_id = mpc_ranked.src_id) > 1e-5;
SELECT count(*) >= 100 AS most_sources_clear FROM mpc_clear;
CREATE TABLE mpc_expect AS
SELECT src_id, max(quality) AS best, count(*) FILTER (WHERE denominator > 0) AS candidates
  FROM mpc_cand WHERE denominator > 0 GROUP BY src_id;

-- with the classifier, min_quality 0: every source with a candidate gives
-- the pair of its most probable candidate
CREATE TABLE mpc_judged AS
SELECT * FROM corpq.mine_pairs('mpc_enc', 'SELECT id, sentence FROM mpc_src', 'SELECT id, sentence FROM mpc_tgt',
                               '{"classifier": "mpc", "min_quality": 0}');
SELECT count(*) = (SELECT count(*) FROM mpc_expect) AS one_pair_per_source,
       bool_and(j.quality = corpq.pair_quality('mpc', s.sentence, t.sentence)) AS quality_is_pair_quality,
       bool_and(j.quality BETWEEN 0 AND 1) AS probabilities
  FROM mpc_judged j JOIN mpc_src s ON s.id = j.src_id JOIN mpc_tgt t ON t.id = j.tgt_id;
SELECT count(*) AS compared,
       count(*) FILTER (WHERE j.quality = e.best) = count(*) AS best_quality,
       count(*) FILTER (WHERE EXISTS (SELECT FROM mpc_cand c WHERE c.src_id = j.src_id AND c.tgt_id = j.tgt_id
                                        AND c.denominator > 0 AND c.quality = j.quality)) = count(*) AS among_candidates,
       -- where the best is one target, it is that one
       count(*) FILTER (WHERE (SELECT count(*) FROM mpc_cand c WHERE c.src_id = j.src_id AND c.denominator > 0
                                 AND c.quality = e.best) = 1
                          AND j.tgt_id <> (SELECT c.tgt_id FROM mpc_cand c WHERE c.src_id = j.src_id
                                             AND c.denominator > 0 AND c.quality = e.best)) AS wrong_target
  FROM mpc_judged j JOIN mpc_expect e USING (src_id) JOIN mpc_clear USING (src_id)
 WHERE true
HAVING count(*) >= 100;
-- the re-ranking changes pairs, and finds more of the true translations
-- (target id = source id + 1000) than the margin alone
CREATE TABLE mpc_plain AS
SELECT * FROM corpq.mine_pairs('mpc_enc', 'SELECT id, sentence FROM mpc_src', 'SELECT id, sentence FROM mpc_tgt');
SELECT (SELECT count(*) FROM mpc_judged j JOIN mpc_plain p USING (src_id) WHERE j.tgt_id <> p.tgt_id) > 0 AS reranked,
       (SELECT count(*) FROM mpc_judged WHERE tgt_id = src_id + 1000)
       > (SELECT count(*) FROM mpc_plain WHERE tgt_id = src_id + 1000) AS more_true_pairs,
       (SELECT count(*) FROM mpc_plain WHERE quality IS NOT NULL) AS plain_quality_not_null;

-- classifier_k 1: the pairs of the call without a classifier, judged
SELECT (SELECT array_agg((src_id, tgt_id, cosine, margin) ORDER BY src_id)
          FROM corpq.mine_pairs('mpc_enc', 'SELECT id, sentence FROM mpc_src', 'SELECT id, sentence FROM mpc_tgt',
                                '{"classifier": "mpc", "classifier_k": 1, "min_quality": 0}'))
     = (SELECT array_agg((src_id, tgt_id, cosine, margin) ORDER BY src_id) FROM mpc_plain) AS k1_is_margin;
-- min_quality (default 0.5): the pairs of min_quality 0 whose quality reaches it
SELECT (SELECT array_agg((m.src_id, m.tgt_id, m.cosine, m.margin, m.quality) ORDER BY src_id)
          FROM corpq.mine_pairs('mpc_enc', 'SELECT id, sentence FROM mpc_src', 'SELECT id, sentence FROM mpc_tgt',
                                '{"classifier": "mpc"}') m)
     = (SELECT array_agg((m.src_id, m.tgt_id, m.cosine, m.margin, m.quality) ORDER BY src_id) FROM mpc_judged m WHERE quality >= 0.5) AS default_min_quality,
       (SELECT array_agg((m.src_id, m.tgt_id, m.cosine, m.margin, m.quality) ORDER BY src_id)
          FROM corpq.mine_pairs('mpc_enc', 'SELECT id, sentence FROM mpc_src', 'SELECT id, sentence FROM mpc_tgt',
                                '{"classifier": "mpc", "min_quality": 0.9}') m)
     IS NOT DISTINCT FROM (SELECT array_agg((m.src_id, m.tgt_id, m.cosine, m.margin, m.quality) ORDER BY src_id) FROM mpc_judged m WHERE quality >= 0.9) AS min_quality_0_9;
-- a pinned version; mutual: a candidate only where the source is its
-- target's best, so a subset of the sources, each pair a candidate
SELECT (SELECT array_agg((m.src_id, m.tgt_id, m.cosine, m.margin, m.quality) ORDER BY src_id)
          FROM corpq.mine_pairs('mpc_enc@1', 'SELECT id, sentence FROM mpc_src', 'SELECT id, sentence FROM mpc_tgt',
                                '{"classifier": "mpc@1", "min_quality": 0}') m)
     = (SELECT array_agg((m.src_id, m.tgt_id, m.cosine, m.margin, m.quality) ORDER BY src_id) FROM mpc_judged m) AS pinned_same;
CREATE TABLE mpc_mutual AS
SELECT * FROM corpq.mine_pairs('mpc_enc', 'SELECT id, sentence FROM mpc_src', 'SELECT id, sentence FROM mpc_tgt',
                               '{"classifier": "mpc", "min_quality": 0, "mutual": true}');
SELECT count(*) > 0 AND count(*) < (SELECT count(*) FROM mpc_judged) AS mutual_fewer,
       bool_and(EXISTS (SELECT FROM mpc_cand c WHERE c.src_id = m.src_id AND c.tgt_id = m.tgt_id)) AS mutual_candidates
  FROM mpc_mutual m;

-- memory: at 64 kB the vectors go to temporary files and the sentences
-- are read back from theirs; the same rows
SET work_mem = '64kB';
CREATE TABLE mpc_spilled AS
SELECT * FROM corpq.mine_pairs('mpc_enc', 'SELECT id, sentence FROM mpc_src', 'SELECT id, sentence FROM mpc_tgt',
                               '{"classifier": "mpc", "min_quality": 0}');
RESET work_mem;
SELECT count(*) AS pairs, NOT EXISTS (SELECT * FROM mpc_judged EXCEPT SELECT * FROM mpc_spilled)
       AND NOT EXISTS (SELECT * FROM mpc_spilled EXCEPT SELECT * FROM mpc_judged) AS same
  FROM mpc_spilled;

-- bad input: an unknown classifier or version, classifier_k out of range
-- or above k, min_quality out of range or without a classifier
\set fixture :regress_dir '/fixtures/sql_error.sql'
\i :fixture
SELECT pg_temp.sql_error('SELECT * FROM corpq.mine_pairs(''mpc_enc'', ''SELECT id, sentence FROM mpc_src'', ''SELECT id, sentence FROM mpc_tgt'', '
                       || quote_literal(o) || ')')
  FROM (VALUES ('{"classifier": "mpc_nope"}'), ('{"classifier": "mpc@9"}'), ('{"classifier": "mpc", "classifier_k": 0}'),
               ('{"classifier": "mpc", "classifier_k": 5}'), ('{"classifier": "mpc", "k": 2, "classifier_k": 3}'),
               ('{"classifier": "mpc", "min_quality": 1.5}'), ('{"min_quality": 0.5}'), ('{"classifier": 3}')) t(o);
-- the whole message of one, with its hint
SELECT * FROM corpq.mine_pairs('mpc_enc', 'SELECT id, sentence FROM mpc_src', 'SELECT id, sentence FROM mpc_tgt',
                               '{"classifier": "mpc", "classifier_k": 5}');

SELECT corpq.classifier_drop('mpc');
SELECT corpq.model_drop('mpc_enc');
SELECT corpq.vocab_drop('mpc_joint');
SELECT corpq.lexicon_drop('mpc_lex');
DROP TABLE mpc_pairs, mpc_src, mpc_tgt, mpc_vec, mpc_cos, mpc_ranked, mpc_cand, mpc_clear, mpc_expect,
           mpc_judged, mpc_plain, mpc_mutual, mpc_spilled;
