-- The dual_xent filter: corpq.dual_xent() against a threshold in filter
-- specs.  filter_report (batched, serially and in parallel), filter_keeps,
-- filter_rejects and the SQL of filter_predicate take the decision
-- dual_xent(...) >= threshold on every pair; dual_xent_scores (batched)
-- gives dual_xent's values bit for bit, whatever the batch cut; specs pin
-- model versions; bad specs.  Two untrained tiny models (fixed seeds) are
-- enough: their scores are arbitrary but deterministic.  Only relations are
-- shown.
SET client_min_messages = warning;

CREATE TABLE dxf_pairs AS
SELECT g AS id,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 30), ' ' ORDER BY k)
          FROM generate_series(1, 2 + g % 9) k) AS src
  FROM generate_series(1, 300) g;
ALTER TABLE dxf_pairs ADD COLUMN tgt text;
UPDATE dxf_pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 30), ' ' ORDER BY o)
                              FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
INSERT INTO dxf_pairs VALUES (301, 'w1 w2', NULL), (302, NULL, 'v1');
SELECT corpq.vocab_build('dxf_src', 'SELECT src FROM dxf_pairs WHERE src IS NOT NULL') > 0 AS src_vocab,
       corpq.vocab_build('dxf_tgt', 'SELECT tgt FROM dxf_pairs WHERE tgt IS NOT NULL') > 0 AS tgt_vocab;
SELECT corpq.model_create('dxf_f', '{"preset": "tiny", "max_positions": 32}', 'dxf_src', 'dxf_tgt', 11),
       corpq.model_create('dxf_b', '{"preset": "tiny", "max_positions": 32}', 'dxf_tgt', 'dxf_src', 12);

-- the per-row scores, and a threshold that is one of them: a pair whose score
-- moved by one ulp between two paths would change sides
CREATE TEMP TABLE dxf_ref AS
SELECT id, src, tgt, corpq.dual_xent('dxf_f', 'dxf_b', src, tgt) AS score FROM dxf_pairs;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY score) AS thr FROM dxf_ref \gset
SELECT format('[{"name": "dual_xent", "args": {"forward": "dxf_f", "backward": "dxf_b"}, "threshold": %s}]', :'thr') AS spec,
       format('[{"name": "dual_xent", "args": {"forward": "dxf_f@1", "backward": "dxf_b@1"}, "threshold": %s}]', :'thr') AS pspec \gset
SELECT count(*) FILTER (WHERE score >= :thr) > 0 AND count(*) FILTER (WHERE score < :thr) > 0 AS threshold_splits
  FROM dxf_ref;

-- batched (dual_xent_scores) = per row, bit for bit, with the default and with small batches
SELECT count(*) AS scored, count(*) FILTER (WHERE s.score IS NOT DISTINCT FROM r.score) = count(*) AS batched_equals_per_row
  FROM corpq.dual_xent_scores('dxf_f', 'dxf_b', 'SELECT id, src, tgt FROM dxf_pairs') s JOIN dxf_ref r USING (id);
SET corpq.max_batch_mb = 1;
SELECT count(*) FILTER (WHERE s.score IS NOT DISTINCT FROM r.score) = count(*) AS small_batches_equal
  FROM corpq.dual_xent_scores('dxf_f', 'dxf_b', 'SELECT id, src, tgt FROM dxf_pairs ORDER BY id DESC') s JOIN dxf_ref r USING (id);
RESET corpq.max_batch_mb;

-- filter_report (batched in the aggregate) counts the pairs with score >= threshold
CREATE TEMP TABLE dxf_report AS
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM dxf_pairs', :'spec', 3);
SELECT r.filter,
       r.kept = (SELECT count(*) FROM dxf_ref WHERE score >= :thr) AS kept_agrees,
       r.rejected = (SELECT count(*) FROM dxf_ref WHERE score < :thr) AS rejected_agrees,
       cardinality(r.examples) AS examples
  FROM dxf_report r ORDER BY r.filter;
-- per domain (filter_report_by_domain): each domain's counts agree too
SELECT bool_and(d.kept = (SELECT count(*) FROM dxf_ref r WHERE r.id % 3 = d.domain::int AND r.score >= :thr)
            AND d.rejected = (SELECT count(*) FROM dxf_ref r WHERE r.id % 3 = d.domain::int AND r.score < :thr))
         AS by_domain_agrees,
       count(DISTINCT d.domain) AS domains
  FROM corpq.filter_report_by_domain('SELECT src, tgt, (id % 3)::text FROM dxf_pairs', :'spec', 0) d
 WHERE d.filter = 'dual_xent';
-- the same with small batches, and with a rule filter beside it
SET corpq.max_batch_mb = 1;
SELECT bool_and(p IS NOT DISTINCT FROM s) AS small_batches_same_report
  FROM corpq.filter_report('SELECT src, tgt FROM dxf_pairs', :'spec', 3) p FULL JOIN dxf_report s USING (filter);
RESET corpq.max_batch_mb;
SELECT r.filter, r.rejected = (SELECT count(*) FROM dxf_ref
                                WHERE CASE r.filter WHEN 'dual_xent' THEN score < :thr
                                       WHEN 'length_ratio' THEN corpq.length_ratio(src, tgt) >= 1.2
                                       ELSE score < :thr OR corpq.length_ratio(src, tgt) >= 1.2 END) AS rejected_agrees
  FROM corpq.filter_report('SELECT src, tgt FROM dxf_pairs',
                           (:'spec'::jsonb || '[{"name": "length_ratio", "threshold": 1.2}]'::jsonb), 0) r
 ORDER BY r.filter;

-- filter_keeps and filter_rejects (IMMUTABLE: pinned versions) agree per row
SELECT count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, :'pspec') = (score >= :thr)) = count(*) AS keeps_agrees,
       count(*) FILTER (WHERE (corpq.filter_rejects(src, tgt, :'pspec') = '{dual_xent}') = (score < :thr)) = count(*) AS rejects_agrees
  FROM dxf_ref WHERE src IS NOT NULL AND tgt IS NOT NULL;
-- a spec that changes from row to row (each change replaces the scorers)
SELECT count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, CASE WHEN id % 2 = 0 THEN :'pspec'
                               ELSE replace(:'pspec', '"threshold"', '"label": "dx", "threshold"') END::jsonb)
                              = (score >= :thr)) = count(*) AS changing_spec_agrees
  FROM dxf_ref WHERE src IS NOT NULL AND tgt IS NOT NULL;
-- the aggregate itself takes the pinned spec
SELECT (s[1]).kept = (SELECT count(*) FROM dxf_ref WHERE score >= :thr) AS aggregate_agrees
  FROM (SELECT corpq.filter_stats(src, tgt, :'pspec', 0) AS s FROM dxf_pairs) a;

-- filter_predicate writes the versions of now; its SQL selects the same rows
SELECT corpq.filter_predicate(:'spec') AS pred \gset
SELECT :'pred' LIKE '%"forward": "dxf_f@1"%"backward": "dxf_b@1"%' AS pinned_in_predicate;
CREATE TEMP TABLE dxf_pred AS SELECT :'pred'::text AS pred;
DO $$ BEGIN
    EXECUTE format('CREATE TEMP VIEW dxf_kept AS SELECT id FROM dxf_pairs WHERE %s', (SELECT pred FROM dxf_pred));
END $$;
SELECT count(*) > 0 AS kept_some,
       (SELECT array_agg(id ORDER BY id) FROM dxf_kept) = (SELECT array_agg(id ORDER BY id) FROM dxf_ref WHERE score >= :thr) AS view_agrees
  FROM dxf_kept;
-- a new version of the forward model: the view keeps version 1's decisions,
-- the reports on the name follow the new version
SELECT corpq.model_quantize('dxf_f') AS new_version;
SELECT (SELECT array_agg(id ORDER BY id) FROM dxf_kept) = (SELECT array_agg(id ORDER BY id) FROM dxf_ref WHERE score >= :thr) AS view_unchanged;
SELECT corpq.filter_predicate(:'spec') LIKE '%"dxf_f@2"%' AS predicate_follows_name;
SELECT r.kept = (SELECT count(*) FROM dxf_ref WHERE corpq.dual_xent('dxf_f', 'dxf_b', src, tgt) >= :thr) AS report_follows_name
  FROM corpq.filter_report('SELECT src, tgt FROM dxf_pairs', :'spec', 0) r WHERE r.filter = 'all';

-- parallel: the same report as serially (the workers load the models)
CREATE TEMP TABLE dxf_serial AS SELECT * FROM corpq.filter_report('SELECT src, tgt FROM dxf_pairs', :'pspec', 3);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/workers_launched.sql'
\i :fixture
SELECT pg_temp.workers_launched(format('SELECT corpq.filter_stats(src, tgt, %L) FROM dxf_pairs', :'pspec')) > 0 AS parallel_ran;
SELECT bool_and(p IS NOT DISTINCT FROM s) AS parallel_same_as_serial
  FROM corpq.filter_report('SELECT src, tgt FROM dxf_pairs', :'pspec', 3) p FULL JOIN dxf_serial s USING (filter);
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- labels
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel
  FROM pg_proc p
 WHERE p.pronamespace = 'corpq'::regnamespace
   AND p.proname IN ('dual_xent_scores', 'filter_keeps', 'filter_rejects', 'filter_predicate', 'filter_report')
 ORDER BY 1::text;

-- bad specs: SQLSTATE and message
\set fixture :regress_dir '/fixtures/sql_error.sql'
\i :fixture
SELECT pg_temp.sql_error(q) FROM (VALUES
  ($$SELECT corpq.filter_predicate('[{"name": "dual_xent", "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "dual_xent", "args": {"forward": "dxf_f"}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "dual_xent", "args": {"forward": "dxf_f", "backward": "dxf_b"}}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "dual_xent", "args": {"forward": "dxf_f", "backward": "dxf_b"}, "threshold": 1.5}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "dual_xent", "args": {"forward": "dxf_f", "backward": ""}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "dual_xent", "args": {"forward": "dxf_nope", "backward": "dxf_b"}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "dual_xent", "args": {"forward": "dxf_f@9", "backward": "dxf_b"}, "threshold": 0.1}]')$$),
  ($$SELECT * FROM corpq.filter_report('SELECT src, tgt FROM dxf_pairs', '[{"name": "dual_xent", "args": {"forward": "dxf_nope", "backward": "dxf_b"}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_keeps('w1', 'v1', '[{"name": "dual_xent", "args": {"forward": "dxf_f", "backward": "dxf_b@1"}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_stats(src, tgt, '[{"name": "dual_xent", "args": {"forward": "dxf_f@1", "backward": "dxf_b"}, "threshold": 0.1}]') FROM dxf_pairs$$),
  ($$SELECT * FROM corpq.dual_xent_scores('dxf_f', NULL, 'SELECT id, src, tgt FROM dxf_pairs')$$),
  ($$SELECT * FROM corpq.dual_xent_scores('dxf_f', 'dxf_b', 'SELECT src, tgt FROM dxf_pairs')$$)
) t(q);
\set VERBOSITY default
SELECT corpq.filter_keeps('w1', 'v1', '[{"name": "dual_xent", "args": {"forward": "dxf_f", "backward": "dxf_b@1"}, "threshold": 0.1}]');
SELECT corpq.filter_predicate('[{"name": "dual_xent", "args": {"forward": "dxf_f", "backward": "dxf_b"}}]');

DROP VIEW dxf_kept;
SELECT corpq.model_drop('dxf_f'), corpq.model_drop('dxf_b');
SELECT corpq.vocab_drop('dxf_src'), corpq.vocab_drop('dxf_tgt');
DROP TABLE dxf_pairs;
