-- Pairs longer than a model accepts (max_positions - 1 tokens per side):
-- NULL in every scoring function (no rows for token_scores and token_hits),
-- in 0.1.0's signatures as with on_too_long 'null'; an ERROR with
-- on_too_long 'error' (the overload with every argument for uncertainty and
-- score), a bad value refused; the batch functions score the rest bit for
-- bit as the per-row ones and count the long ones (NOTICE); the dual_xent
-- filter rejects them.
SET client_min_messages = warning;

CREATE TABLE tl_pairs AS
SELECT g::bigint AS id,
       'a' || (g % 7) || repeat(' b' || (g % 5), 1 + g % 4) AS src,
       'x' || (g % 5) || repeat(' y' || (g % 7), g % 5) AS tgt
  FROM generate_series(1, 200) g;
-- every 10th pair too long on one side: the source (12 tokens), or the target
UPDATE tl_pairs SET src = repeat('a1 ', 12) WHERE id % 20 = 0;
UPDATE tl_pairs SET tgt = repeat('x1 ', 15) WHERE id % 20 = 10;
INSERT INTO tl_pairs VALUES (201, NULL, 'x1'), (202, repeat('a1 ', 30), NULL);
SELECT corpq.vocab_build('tl_src', 'SELECT src FROM tl_pairs WHERE src IS NOT NULL');
SELECT corpq.vocab_build('tl_tgt', 'SELECT tgt FROM tl_pairs WHERE tgt IS NOT NULL');
-- max_positions 12: at most 11 tokens per side
SELECT corpq.model_create('tl', '{"preset": "tiny", "max_positions": 12}', 'tl_src', 'tl_tgt', 7);
SELECT corpq.model_create('tl_b', '{"preset": "tiny", "max_positions": 12}', 'tl_tgt', 'tl_src', 8);
SELECT count(*) FILTER (WHERE cardinality(corpq.vocab_encode('tl_src', src)) > 11
                           OR cardinality(corpq.vocab_encode('tl_tgt', tgt)) > 11) AS too_long,
       count(*) AS pairs
  FROM tl_pairs WHERE src IS NOT NULL AND tgt IS NOT NULL;

-- ---- per row: NULL (no rows) by default, on both overloads ----
SELECT corpq.sent_prob('tl', repeat('a1 ', 12), 'x1') IS NULL AS long_src,
       corpq.sent_prob('tl', 'a1', repeat('x1 ', 12)) IS NULL AS long_tgt,
       corpq.sent_prob('tl', repeat('a1 ', 11), repeat('x1 ', 11)) IS NOT NULL AS at_limit,
       corpq.sent_logprob('tl', repeat('a1 ', 12), 'x1') IS NULL AS logprob,
       corpq.uncertainty('tl', repeat('a1 ', 12), 'x1', 'enteos', 3) IS NULL AS uncertainty,
       corpq.dual_xent('tl', 'tl_b', repeat('a1 ', 12), 'x1') IS NULL AS dual_xent_fwd,
       corpq.dual_xent('tl', 'tl_b', 'a1', repeat('x1 ', 12)) IS NULL AS dual_xent_bwd,
       (SELECT count(*) FROM corpq.token_scores('tl', repeat('a1 ', 12), 'x1')) AS token_scores_rows,
       (SELECT count(*) FROM corpq.token_hits('tl', repeat('a1 ', 12), 'x1')) AS token_hits_rows;
SELECT corpq.sent_prob('tl@1'::corpq.pinned_model, repeat('a1 ', 12), 'x1') IS NULL AS p_sent_prob,
       corpq.sent_logprob('tl@1'::corpq.pinned_model, repeat('a1 ', 12), 'x1', 'null') IS NULL AS p_logprob,
       corpq.uncertainty('tl@1'::corpq.pinned_model, 'a1', repeat('x1 ', 12)) IS NULL AS p_uncertainty,
       corpq.dual_xent('tl@1'::corpq.pinned_model, 'tl_b@1'::corpq.pinned_model, repeat('a1 ', 12), 'x1') IS NULL AS p_dual_xent,
       (SELECT count(*) FROM corpq.token_scores('tl@1'::corpq.pinned_model, repeat('a1 ', 12), 'x1')) AS p_token_scores,
       (SELECT count(*) FROM corpq.token_hits('tl@1'::corpq.pinned_model, repeat('a1 ', 12), 'x1')) AS p_token_hits;
-- one long pair no longer aborts an aggregate: the others are summed
SELECT count(corpq.sent_prob('tl', src, tgt)) AS scored, count(*) AS pairs,
       sum(corpq.sent_prob('tl', src, tgt)) > 0 AS summed
  FROM tl_pairs;

-- ---- on_too_long => 'error': the limit named; a bad value refused ----
SELECT corpq.sent_prob('tl', repeat('a1 ', 12), 'x1', 'error');
SELECT corpq.sent_logprob('tl@1'::corpq.pinned_model, 'a1', repeat('x1 ', 12), on_too_long => 'error');
SELECT * FROM corpq.token_scores('tl', repeat('a1 ', 12), 'x1', 'error');
SELECT * FROM corpq.token_hits('tl', repeat('a1 ', 12), 'x1', 'error');
SELECT corpq.uncertainty('tl', repeat('a1 ', 12), 'x1', 'enteos', 3, 0, 'error');
SELECT corpq.uncertainty(model => 'tl@1'::corpq.pinned_model, src => 'a1', tgt => repeat('x1 ', 12),
                         measure => 'enteos', passes => 3, seed => 0, on_too_long => 'error');
SELECT corpq.dual_xent('tl', 'tl_b', 'a1', repeat('x1 ', 12), 'error');
SELECT corpq.sent_prob('tl', repeat('a1 ', 11), 'x1', 'error') IS NOT NULL AS fits_with_error;
SELECT corpq.sent_prob('tl', 'a1', 'x1', 'skip');
SELECT corpq.sent_prob('tl', 'a1', 'x1', 'NULL');
SELECT corpq.sent_logprob('tl@1'::corpq.pinned_model, 'a1', 'x1', 'skip');
SELECT * FROM corpq.token_scores('tl', 'a1', 'x1', 'skip');
SELECT * FROM corpq.token_hits('tl@1'::corpq.pinned_model, 'a1', 'x1', 'skip');
SELECT corpq.uncertainty('tl', 'a1', 'x1', 'enteos', 3, 0, 'skip');
SELECT corpq.dual_xent('tl', 'tl_b', 'a1', 'x1', 'skip');
SELECT corpq.sent_prob('tl', 'a1', 'x1', NULL) IS NULL AS null_option;
-- on_too_long is no parameter with a DEFAULT: uncertainty's and score()'s
-- overloads want every argument, so a call naming only it finds no function
SELECT corpq.uncertainty('tl', 'a1', 'x1', on_too_long => 'error');
SELECT * FROM corpq.score('tl', 'SELECT id, src, tgt FROM tl_pairs', on_too_long => 'error');

-- ---- batched: the long pairs NULL, the others the per-row bits ----
CREATE TEMP TABLE tl_ref AS
SELECT id, corpq.sent_prob('tl', src, tgt) AS p, corpq.sent_logprob('tl', src, tgt) AS lp,
       corpq.uncertainty('tl', src, tgt, 'entsent', 3, 5) AS u,
       corpq.dual_xent('tl', 'tl_b', src, tgt) AS dx
  FROM tl_pairs;
-- 0.1.0's signatures (tl_ref) give what on_too_long 'null' gives, bit for bit
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE corpq.sent_prob('tl', src, tgt, 'null') IS NOT DISTINCT FROM r.p
                          AND corpq.sent_logprob('tl@1'::corpq.pinned_model, src, tgt, 'null') IS NOT DISTINCT FROM r.lp
                          AND corpq.uncertainty('tl', src, tgt, 'entsent', 3, 5, 'null') IS NOT DISTINCT FROM r.u
                          AND corpq.dual_xent('tl', 'tl_b', src, tgt, 'null') IS NOT DISTINCT FROM r.dx) AS equal,
       count(*) FILTER (WHERE r.p IS NULL) AS nulls
  FROM tl_pairs JOIN tl_ref r USING (id);
SELECT count(*) FILTER (WHERE s.score IS NOT DISTINCT FROM r.p) AS score_equal,
       (SELECT count(*) FILTER (WHERE d.score IS NOT DISTINCT FROM r2.dx)
          FROM corpq.dual_xent_scores('tl', 'tl_b', 'SELECT id, src, tgt FROM tl_pairs', 'null') d
          JOIN tl_ref r2 USING (id)) AS dual_equal
  FROM corpq.score('tl', 'SELECT id, src, tgt FROM tl_pairs', 'sent_prob', 64, 'enteos', 30, 0, 'null') s
  JOIN tl_ref r USING (id);
SELECT b, what, count(*) AS rows, count(*) FILTER (WHERE sc.score IS NULL) AS nulls,
       count(*) FILTER (WHERE sc.score IS NOT DISTINCT FROM
                        CASE what WHEN 'sent_prob' THEN r.p WHEN 'sent_logprob' THEN r.lp ELSE r.u END) AS equal
  FROM unnest('{1,7,64}'::int[]) b, unnest('{sent_prob,sent_logprob,uncertainty}'::text[]) what,
       LATERAL corpq.score('tl', 'SELECT id, src, tgt FROM tl_pairs ORDER BY md5(id::text)', what, b, 'entsent', 3, 5) sc
  JOIN tl_ref r USING (id)
 GROUP BY b, what ORDER BY b, what;
SELECT count(*) AS rows, count(*) FILTER (WHERE s.score IS NULL) AS nulls,
       count(*) FILTER (WHERE s.score IS NOT DISTINCT FROM r.dx) AS equal
  FROM corpq.dual_xent_scores('tl', 'tl_b', 'SELECT id, src, tgt FROM tl_pairs') s JOIN tl_ref r USING (id);
-- on 2 threads (corpq.threads): the pool takes parts of each batch, same bits
SET corpq.threads = 2;
SELECT count(*) FILTER (WHERE sc.score IS NOT DISTINCT FROM r.lp) AS threads_equal
  FROM corpq.score('tl', 'SELECT id, src, tgt FROM tl_pairs', 'sent_logprob', 200) sc JOIN tl_ref r USING (id);
SELECT count(*) FILTER (WHERE sc.score IS NOT DISTINCT FROM r.u) AS threads_mc_equal
  FROM corpq.score('tl', 'SELECT id, src, tgt FROM tl_pairs', 'uncertainty', 50, 'entsent', 3, 5) sc JOIN tl_ref r USING (id);
SELECT count(*) FILTER (WHERE s.score IS NOT DISTINCT FROM r.dx) AS threads_dual_equal
  FROM corpq.dual_xent_scores('tl', 'tl_b', 'SELECT id, src, tgt FROM tl_pairs') s JOIN tl_ref r USING (id);
RESET corpq.threads;
-- the count, as a NOTICE (20 long pairs and the one whose other side is NULL is not counted)
SET client_min_messages = notice;
SELECT count(*) FROM corpq.score('tl', 'SELECT id, src, tgt FROM tl_pairs');
SELECT count(*) FROM corpq.dual_xent_scores('tl', 'tl_b', 'SELECT id, src, tgt FROM tl_pairs');
SELECT count(*) FROM corpq.score('tl', 'SELECT id, src, tgt FROM tl_pairs WHERE id % 10 <> 0');
SET client_min_messages = warning;
-- 'error' stops at the first long pair; a bad value or NULL is refused before any row
SELECT * FROM corpq.score('tl', 'SELECT id, src, tgt FROM tl_pairs ORDER BY id', 'sent_prob', 64, 'enteos', 30, 0, 'error');
SELECT * FROM corpq.score(model => 'tl', corpus => 'SELECT id, src, tgt FROM tl_pairs ORDER BY id', what => 'sent_logprob',
                          batch_size => 8, measure => 'enteos', passes => 1, seed => 0, on_too_long => 'error');
SELECT * FROM corpq.dual_xent_scores('tl', 'tl_b', 'SELECT id, src, tgt FROM tl_pairs ORDER BY id', 'error');
SELECT * FROM corpq.score('tl', 'SELECT id, src, tgt FROM tl_pairs', 'sent_prob', 64, 'enteos', 30, 0, 'skip');
SELECT * FROM corpq.score('tl', 'SELECT id, src, tgt FROM tl_pairs', 'sent_prob', 64, 'enteos', 30, 0, NULL);
SELECT * FROM corpq.dual_xent_scores('tl', 'tl_b', 'SELECT id, src, tgt FROM tl_pairs', 'skip');

-- ---- the dual_xent filter: a pair it cannot score is rejected ----
SELECT '[{"name": "dual_xent", "args": {"forward": "tl@1", "backward": "tl_b@1"}, "threshold": 0}]' AS spec \gset
-- threshold 0 keeps every pair with a score: the rejected ones are the long ones
SELECT filter, kept, rejected, kept = (SELECT count(dx) FROM tl_ref) AS kept_scored,
       rejected = (SELECT count(*) FROM tl_ref WHERE dx IS NULL) - 2 AS rejected_long
  FROM corpq.filter_report('SELECT src, tgt FROM tl_pairs', :'spec', 0) ORDER BY filter;
SELECT count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, :'spec')) AS kept,
       count(*) FILTER (WHERE corpq.filter_rejects(src, tgt, :'spec') = '{dual_xent}') AS rejected,
       count(*) FILTER (WHERE NOT corpq.filter_keeps(src, tgt, :'spec')) = count(*) FILTER (WHERE r.dx IS NULL) AS rejected_are_long
  FROM tl_pairs JOIN tl_ref r USING (id) WHERE src IS NOT NULL AND tgt IS NOT NULL;
-- the predicate writes the option out and selects the same rows
SELECT corpq.filter_predicate(:'spec') LIKE '%"on_too_long": "null"%' AS option_written;
CREATE TEMP TABLE tl_pred AS SELECT corpq.filter_predicate(:'spec') AS pred;
DO $$ BEGIN
    EXECUTE format('CREATE TEMP VIEW tl_kept AS SELECT id FROM tl_pairs WHERE %s', (SELECT pred FROM tl_pred));
END $$;
SELECT (SELECT array_agg(id ORDER BY id) FROM tl_kept) = (SELECT array_agg(id ORDER BY id) FROM tl_ref WHERE dx IS NOT NULL) AS view_agrees;
-- on_too_long "error" in the spec, and a bad value
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM tl_pairs',
    '[{"name": "dual_xent", "args": {"forward": "tl", "backward": "tl_b", "on_too_long": "error"}, "threshold": 0}]');
SELECT corpq.filter_keeps('a1', 'x1', '[{"name": "dual_xent", "args": {"forward": "tl@1", "backward": "tl_b@1", "on_too_long": "skip"}, "threshold": 0}]');

DROP VIEW tl_kept;
SELECT corpq.model_drop('tl'), corpq.model_drop('tl_b');
SELECT corpq.vocab_drop('tl_src'), corpq.vocab_drop('tl_tgt');
DROP TABLE tl_pairs;
