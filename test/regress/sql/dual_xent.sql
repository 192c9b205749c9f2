-- Dual conditional cross-entropy (Junczys-Dowmunt, WMT 2018): a forward and
-- a backward tiny model trained here on a generated word-translation task;
-- corpq.dual_xent against the paper's formula recomputed from sent_logprob
-- and the token counts of token_scores in both directions; true pairs above
-- shuffled ones; the pinned overload; NULLs; bad input.  Training depends on
-- the CPU's float rounding, so only relations are shown.
SET client_min_messages = warning;

CREATE TABLE dx_pairs AS
SELECT g AS id,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 30), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 5) k) AS src
  FROM generate_series(1, 1200) g;
ALTER TABLE dx_pairs ADD COLUMN tgt text;
UPDATE dx_pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 30), ' ' ORDER BY o)
                             FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
SELECT corpq.vocab_build('dx_src', 'SELECT src FROM dx_pairs') > 0 AS src_vocab,
       corpq.vocab_build('dx_tgt', 'SELECT tgt FROM dx_pairs') > 0 AS tgt_vocab;
SELECT corpq.model_create('dx_f', '{"preset": "tiny", "max_positions": 32}', 'dx_src', 'dx_tgt', 1),
       corpq.model_create('dx_b', '{"preset": "tiny", "max_positions": 32}', 'dx_tgt', 'dx_src', 2);
SELECT corpq.train('dx_f', 'SELECT src, tgt FROM dx_pairs WHERE id % 20 <> 7 ORDER BY id', NULL,
                   '{"steps": 120, "max_tokens": 1024, "lr": 0.003, "warmup": 30, "seed": 3, "threads": 1}') AS jf,
       corpq.train('dx_b', 'SELECT tgt, src FROM dx_pairs WHERE id % 20 <> 7 ORDER BY id', NULL,
                   '{"steps": 120, "max_tokens": 1024, "lr": 0.003, "warmup": 30, "seed": 3, "threads": 1}') AS jb \gset
SELECT corpq.job_wait(:jf, '600 s') AS forward, corpq.job_wait(:jb, '600 s') AS backward;
DELETE FROM corpq.jobs WHERE id IN (:jf, :jb);

-- test pairs: the held-out true pairs, and each source with the next pair's target
CREATE TEMP TABLE dx_test AS
SELECT d.id, d.src, d.tgt, (SELECT tgt FROM dx_pairs e WHERE e.id % 20 = 7 AND e.id > d.id ORDER BY e.id LIMIT 1) AS wrong
  FROM dx_pairs d WHERE d.id % 20 = 7;
DELETE FROM dx_test WHERE wrong IS NULL;

-- the paper's formula from sent_logprob and the token counts, both directions
CREATE TEMP TABLE dx_ref AS
SELECT id, src, tgt,
       -corpq.sent_logprob('dx_f', src, tgt) / (SELECT count(*) FROM corpq.token_scores('dx_f', src, tgt)) AS hf,
       -corpq.sent_logprob('dx_b', tgt, src) / (SELECT count(*) FROM corpq.token_scores('dx_b', tgt, src)) AS hb
  FROM (SELECT id, src, tgt FROM dx_test UNION ALL SELECT -id, src, wrong FROM dx_test) p;
SELECT count(*) AS pairs,
       max(abs(corpq.dual_xent('dx_f', 'dx_b', src, tgt) - exp(-(abs(hf - hb) + (hf + hb) / 2)))
           / exp(-(abs(hf - hb) + (hf + hb) / 2))) < 1e-12 AS formula,
       bool_and(corpq.dual_xent('dx_f', 'dx_b', src, tgt) > 0 AND corpq.dual_xent('dx_f', 'dx_b', src, tgt) <= 1) AS in_0_1
  FROM dx_ref;
-- an adequacy score: the true pair above its shuffled twin
SELECT avg((corpq.dual_xent('dx_f', 'dx_b', src, tgt) > corpq.dual_xent('dx_f', 'dx_b', src, wrong))::int) > 0.9 AS true_above_shuffled
  FROM dx_test;
-- pinned versions give the same values; a swapped direction does not
SELECT format('dx_f@%s', latest_version) AS fpin FROM corpq.models WHERE name = 'dx_f' \gset
SELECT format('dx_b@%s', latest_version) AS bpin FROM corpq.models WHERE name = 'dx_b' \gset
SELECT count(*) FILTER (WHERE corpq.dual_xent(:'fpin'::corpq.pinned_model, :'bpin'::corpq.pinned_model, src, tgt)
                              = corpq.dual_xent('dx_f', 'dx_b', src, tgt)) = count(*) AS pinned_same,
       count(*) FILTER (WHERE corpq.dual_xent('dx_f', 'dx_b', src, tgt)
                              = corpq.dual_xent('dx_f', 'dx_f', src, tgt)) < count(*) AS backward_used
  FROM dx_test;
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel, p.proisstrict
  FROM pg_proc p WHERE p.pronamespace = 'corpq'::regnamespace AND p.proname = 'dual_xent' ORDER BY 1::text;

-- NULLs and bad input
SELECT corpq.dual_xent('dx_f', 'dx_b', NULL, 'v1') IS NULL AS null_src, corpq.dual_xent(NULL, 'dx_b', 'w1', 'v1') IS NULL AS null_model;
\set VERBOSITY terse
SELECT corpq.dual_xent('dx_f', 'nope', 'w1', 'v1');
\set VERBOSITY default
SELECT corpq.dual_xent('dx_f', 'dx_b', repeat('w1 ', 40), 'v1') IS NULL AS too_long_is_null;
SELECT corpq.dual_xent('dx_f', 'dx_b', repeat('w1 ', 40), 'v1', 'error');

SELECT corpq.model_drop('dx_f'), corpq.model_drop('dx_b');
SELECT corpq.vocab_drop('dx_src'), corpq.vocab_drop('dx_tgt');
