-- The CAV paper's case study (Sec. 4, Tables 6-7), entirely in SQL: train a
-- model, find the target tokens it translates worst under teacher forcing,
-- find their most CAV-similar tokens (the suspects), then append a
-- distinguishing pseudo-token to the source of the worst token's sentences
-- and see their CAV cosine drop.
--
-- The corpus: 30 source words with one fixed translation each, plus "bank",
-- translated "orilla" in half of the sentences and "banco" in the other half
-- by a hash of the pair's id, so nothing in the source tells which: the two
-- tokens share every context, no model can get them right, and their CAVs
-- nearly coincide.
SET client_min_messages = warning;
CREATE TABLE cs_pairs AS
SELECT g AS id,
       (SELECT string_agg(CASE WHEN k = 2 THEN 'bank'
                               ELSE 'w' || abs(hashint4(g * 31 + k) % 30) END, ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 4) k) AS src
  FROM generate_series(1, 2400) g;
ALTER TABLE cs_pairs ADD COLUMN tgt text;
UPDATE cs_pairs SET tgt = (SELECT string_agg(CASE WHEN w = 'bank' THEN (CASE WHEN hashint4(id + 1000003) & 1 = 0 THEN 'orilla' ELSE 'banco' END)
                                                 ELSE 'v' || ((substr(w, 2)::int * 7 + 3) % 30) END, ' ' ORDER BY o)
                             FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
SELECT corpq.vocab_build('cs_src', 'SELECT src FROM cs_pairs') > 0 AS src_vocab,
       corpq.vocab_build('cs_tgt', 'SELECT tgt FROM cs_pairs') > 0 AS tgt_vocab;
SELECT corpq.model_create('cs_model', '{"preset": "tiny", "max_positions": 16}', 'cs_src', 'cs_tgt', 7);
SELECT corpq.train('cs_model', 'SELECT src, tgt FROM cs_pairs WHERE id % 10 <> 0 ORDER BY id', NULL,
                   '{"steps": 250, "max_tokens": 1024, "lr": 0.003, "warmup": 40, "seed": 5,
                     "checkpoint_every": 250, "threads": 1}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');

-- 1. token-level accuracy on held-out pairs, teacher forced
CREATE TEMP TABLE cs_accuracy AS
SELECT h.token, avg(h.hit::int) AS accuracy, count(*) AS n
FROM cs_pairs p, corpq.token_hits('cs_model', p.src, p.tgt) h
WHERE p.id % 10 = 0 GROUP BY h.token;
-- the two ambiguous tokens are the worst translated; the others are learned
SELECT array_agg(token ORDER BY token) AS worst_two
FROM (SELECT token FROM cs_accuracy WHERE n >= 20 ORDER BY accuracy, token LIMIT 2) w;
SELECT bool_and(accuracy < 0.8) AS ambiguous_below_80pct FROM cs_accuracy WHERE token IN ('orilla', 'banco');
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY accuracy) > 0.9 AS others_median_above_90pct
FROM cs_accuracy WHERE token NOT IN ('orilla', 'banco', '</s>');
-- accuracy per token is also avg(hit) over token_hits: one row per target position
SELECT count(*) = (SELECT sum(array_length(string_to_array(tgt, ' '), 1) + 1) FROM cs_pairs WHERE id % 10 = 0)
       AS one_row_per_position
FROM cs_pairs p, corpq.token_hits('cs_model', p.src, p.tgt) h WHERE p.id % 10 = 0;

-- 2. the suspects: the worst token's most CAV-similar tokens
CREATE TEMP TABLE cs_cav AS SELECT corpq.cav_accumulate(src, tgt, 16) AS c FROM cs_pairs;
SELECT token, round(cosine::numeric, 4) AS cosine FROM corpq.cav_similar((SELECT c FROM cs_cav), 'orilla', 3);

-- 3. a distinguishing pseudo-token on the source side of "orilla"'s sentences
--    separates the two matrices (the paper's Table 7 mechanism)
CREATE TEMP TABLE cs_cav_marked AS
SELECT corpq.cav_accumulate(CASE WHEN tgt ~ '\morilla\M' THEN src || ' <orilla>' ELSE src END, tgt, 16) AS c
FROM cs_pairs;
SELECT round(corpq.cav_cosine(b.c, 'orilla', 'banco')::numeric, 4) AS cosine_before,
       round(corpq.cav_cosine(a.c, 'orilla', 'banco')::numeric, 4) AS cosine_after,
       corpq.cav_cosine(a.c, 'orilla', 'banco') < corpq.cav_cosine(b.c, 'orilla', 'banco') AS dropped
FROM cs_cav b, cs_cav_marked a;
SELECT side, feature, distance, count FROM corpq.cav_entries((SELECT c FROM cs_cav_marked), 'orilla')
WHERE feature = '<orilla>' ORDER BY distance LIMIT 3;

-- errors and NULLs
SELECT * FROM corpq.token_hits('cs_model', NULL, 'v1');
SELECT * FROM corpq.token_hits('no_such_model', 'w1', 'v1');

DELETE FROM corpq.jobs WHERE id = :job;
SELECT corpq.model_drop('cs_model');
SELECT corpq.vocab_drop('cs_src'), corpq.vocab_drop('cs_tgt');
DROP TABLE cs_pairs;
