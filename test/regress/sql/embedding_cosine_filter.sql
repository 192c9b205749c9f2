-- The embedding_cosine filter: corpq.embedding_cosine() against a threshold
-- in filter specs.  The per-row score is the dot product of the two sides'
-- embed() vectors, bit for bit (summed in double, in order, as SQL's sum
-- does it); filter_report (batched, serially, in small batches and in
-- parallel), filter_keeps, filter_rejects, the filter_stats aggregate and
-- the SQL of filter_predicate take the decision embedding_cosine(...) >=
-- threshold on every pair, and reject the pairs with a side too long for
-- the model; specs pin model versions; a spec with both model kinds; bad
-- specs.  An untrained tiny encoder (fixed seed) is enough: its cosines are
-- arbitrary but deterministic.  Only relations are shown.
SET client_min_messages = warning;

-- 2 to 10 words a side; the encoder takes 8 tokens, so some pairs are too long
CREATE TABLE ecf_pairs AS
SELECT g AS id,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 30), ' ' ORDER BY k)
          FROM generate_series(1, 2 + g % 9) k) AS src
  FROM generate_series(1, 300) g;
ALTER TABLE ecf_pairs ADD COLUMN tgt text;
UPDATE ecf_pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 30), ' ' ORDER BY o)
                              FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
INSERT INTO ecf_pairs VALUES (301, 'w1 w2', NULL), (302, NULL, 'v1');
SELECT corpq.vocab_build('ecf_joint', 'SELECT src FROM ecf_pairs WHERE src IS NOT NULL
                                       UNION ALL SELECT tgt FROM ecf_pairs WHERE tgt IS NOT NULL') > 0 AS vocab;
SELECT corpq.model_create('ecf', '{"preset": "tiny", "kind": "encoder", "max_positions": 10}',
                          'ecf_joint', 'ecf_joint', 13);

-- the per-row scores, and a threshold that is one of them: a pair whose score
-- moved by one ulp between two paths would change sides
CREATE TEMP TABLE ecf_ref AS
SELECT id, src, tgt, corpq.embedding_cosine('ecf', src, tgt) AS score FROM ecf_pairs;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY score) AS thr FROM ecf_ref \gset
SELECT format('[{"name": "embedding_cosine", "args": {"model": "ecf"}, "threshold": %s}]', :'thr') AS spec,
       format('[{"name": "embedding_cosine", "args": {"model": "ecf@1"}, "threshold": %s}]', :'thr') AS pspec \gset
SELECT count(*) FILTER (WHERE score >= :thr) > 0 AND count(*) FILTER (WHERE score < :thr) > 0 AS threshold_splits,
       count(*) FILTER (WHERE score IS NULL AND src IS NOT NULL AND tgt IS NOT NULL) AS too_long,
       bool_and(score BETWEEN -1.000001 AND 1.000001) AS in_range
  FROM ecf_ref;

-- the score is the dot product of embed()'s vectors, summed in double in order
SELECT count(*) FILTER (WHERE score IS NOT DISTINCT FROM
           (SELECT sum(x::float8 * y) FROM unnest(corpq.embed('ecf', src), corpq.embed('ecf', tgt)) u(x, y)))
         = count(*) AS equals_embed_dot,
       count(*) FILTER (WHERE score IS NOT DISTINCT FROM corpq.embedding_cosine('ecf@1'::corpq.pinned_model, src, tgt))
         = count(*) AS pinned_same,
       count(*) FILTER (WHERE score IS NOT DISTINCT FROM corpq.embedding_cosine('ecf', src, tgt, 'null'))
         = count(*) AS null_same
  FROM ecf_ref;
-- NULL in, NULL out; too long: NULL, or an ERROR on request
SELECT corpq.embedding_cosine('ecf', NULL, 'v1') IS NULL AS null_src,
       corpq.embedding_cosine(NULL::text, 'w1', 'v1') IS NULL AS null_model,
       corpq.embedding_cosine('ecf', 'w1 w1 w1 w1 w1 w1 w1 w1 w1', 'v1') IS NULL AS too_long_null,
       corpq.embedding_cosine('ecf', 'w1', 'w1') = corpq.embedding_cosine('ecf', 'w1', 'w1') AS same_twice;
SELECT corpq.embedding_cosine('ecf', 'w1', 'v1 v1 v1 v1 v1 v1 v1 v1 v1', 'error');
SELECT corpq.embedding_cosine('ecf', 'w1', 'v1', 'skip');

-- filter_report (batched in the aggregate) counts the pairs with score >=
-- threshold; a pair with no score (too long) is rejected
CREATE TEMP TABLE ecf_report AS
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM ecf_pairs', :'spec', 3);
SELECT r.filter,
       r.kept = (SELECT count(*) FROM ecf_ref WHERE score >= :thr) AS kept_agrees,
       r.rejected = (SELECT count(*) FROM ecf_ref WHERE src IS NOT NULL AND tgt IS NOT NULL
                                                    AND (score < :thr OR score IS NULL)) AS rejected_agrees,
       cardinality(r.examples) AS examples
  FROM ecf_report r WHERE r.filter NOT LIKE '%:copy' ORDER BY r.filter;
-- the copy row (reject_copies, the default): no pair here is a copy
SELECT r.filter, r.kept, r.rejected FROM ecf_report r WHERE r.filter LIKE '%:copy';
-- per domain (filter_report_by_domain): each domain's counts agree too
SELECT bool_and(d.kept = (SELECT count(*) FROM ecf_ref r WHERE r.id % 3 = d.domain::int AND r.score >= :thr))
         AS by_domain_agrees,
       count(DISTINCT d.domain) AS domains
  FROM corpq.filter_report_by_domain('SELECT src, tgt, (id % 3)::text FROM ecf_pairs', :'spec', 0) d
 WHERE d.filter = 'embedding_cosine';
-- the same with small batches
SET corpq.max_batch_mb = 1;
SELECT bool_and(p IS NOT DISTINCT FROM s) AS small_batches_same_report
  FROM corpq.filter_report('SELECT src, tgt FROM ecf_pairs', :'spec', 3) p FULL JOIN ecf_report s USING (filter);
RESET corpq.max_batch_mb;
-- on_too_long "error": the first pair too long stops the report
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM ecf_pairs',
    replace(:'spec', '"model": "ecf"', '"model": "ecf", "on_too_long": "error"')::jsonb, 0);

-- filter_keeps and filter_rejects (IMMUTABLE: pinned versions) agree per row
SELECT count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, :'pspec') = coalesce(score >= :thr, false))
         = count(*) AS keeps_agrees,
       count(*) FILTER (WHERE (corpq.filter_rejects(src, tgt, :'pspec') = '{embedding_cosine}')
                              = coalesce(score < :thr, true)) = count(*) AS rejects_agrees
  FROM ecf_ref WHERE src IS NOT NULL AND tgt IS NOT NULL;
-- the aggregate itself takes the pinned spec
SELECT (s[1]).kept = (SELECT count(*) FROM ecf_ref WHERE score >= :thr) AS aggregate_agrees
  FROM (SELECT corpq.filter_stats(src, tgt, :'pspec', 0) AS s FROM ecf_pairs) a;

-- filter_predicate writes the version of now; its SQL selects the same rows
SELECT corpq.filter_predicate(:'spec') AS pred \gset
SELECT :'pred' LIKE '%"model": "ecf@1"%"on_too_long": "null"%' AS pinned_in_predicate;
CREATE TEMP TABLE ecf_pred AS SELECT :'pred'::text AS pred;
DO $$ BEGIN
    EXECUTE format('CREATE TEMP VIEW ecf_kept AS SELECT id FROM ecf_pairs WHERE %s', (SELECT pred FROM ecf_pred));
END $$;
SELECT count(*) > 0 AS kept_some,
       (SELECT array_agg(id ORDER BY id) FROM ecf_kept) = (SELECT array_agg(id ORDER BY id) FROM ecf_ref WHERE score >= :thr) AS view_agrees
  FROM ecf_kept;
-- a new version of the model: the view keeps version 1's decisions, the
-- reports on the name follow the new version
SELECT corpq.model_quantize('ecf') AS new_version;
SELECT (SELECT array_agg(id ORDER BY id) FROM ecf_kept) = (SELECT array_agg(id ORDER BY id) FROM ecf_ref WHERE score >= :thr) AS view_unchanged;
SELECT corpq.filter_predicate(:'spec') LIKE '%"ecf@2"%' AS predicate_follows_name;
SELECT r.kept = (SELECT count(*) FROM ecf_ref WHERE corpq.embedding_cosine('ecf', src, tgt) >= :thr) AS report_follows_name,
       r.kept <> (SELECT count(*) FROM ecf_ref WHERE score >= :thr)
         OR (SELECT count(*) FROM ecf_ref WHERE corpq.embedding_cosine('ecf', src, tgt) IS DISTINCT FROM score) > 0 AS new_version_differs
  FROM corpq.filter_report('SELECT src, tgt FROM ecf_pairs', :'spec', 0) r WHERE r.filter = 'all';

-- both model kinds and a rule filter in one spec: each filter's rejections
-- agree with its own per-row decision
SELECT corpq.model_create('ecf_tr', '{"preset": "tiny", "max_positions": 32}', 'ecf_joint', 'ecf_joint', 14);
CREATE TEMP TABLE ecf_dx AS
SELECT id, corpq.dual_xent('ecf_tr', 'ecf_tr', src, tgt) AS dx FROM ecf_pairs;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY dx) AS dthr FROM ecf_dx \gset
SELECT r.filter,
       r.rejected = (SELECT count(*) FROM ecf_ref e JOIN ecf_dx d USING (id)
                      WHERE e.src IS NOT NULL AND e.tgt IS NOT NULL
                        AND CASE r.filter
                              WHEN 'embedding_cosine' THEN coalesce(e.score < :thr, true)
                              WHEN 'dual_xent' THEN d.dx < :dthr
                              WHEN 'length_ratio' THEN corpq.length_ratio(e.src, e.tgt) >= 1.2
                              ELSE coalesce(e.score < :thr, true) OR d.dx < :dthr
                                   OR corpq.length_ratio(e.src, e.tgt) >= 1.2 END) AS rejected_agrees
  FROM corpq.filter_report('SELECT src, tgt FROM ecf_pairs',
                           (:'pspec'::jsonb
                            || format('[{"name": "dual_xent", "args": {"forward": "ecf_tr@1", "backward": "ecf_tr@1"}, "threshold": %s}]', :'dthr')::jsonb
                            || '[{"name": "length_ratio", "threshold": 1.2}]'::jsonb), 0) r
 WHERE r.filter NOT LIKE '%:copy'
 ORDER BY r.filter;

-- parallel: the same report as serially (the workers load the model)
CREATE TEMP TABLE ecf_serial AS SELECT * FROM corpq.filter_report('SELECT src, tgt FROM ecf_pairs', :'pspec', 3);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/workers_launched.sql'
\i :fixture
SELECT pg_temp.workers_launched(format('SELECT corpq.filter_stats(src, tgt, %L) FROM ecf_pairs', :'pspec')) > 0 AS parallel_ran;
SELECT bool_and(p IS NOT DISTINCT FROM s) AS parallel_same_as_serial
  FROM corpq.filter_report('SELECT src, tgt FROM ecf_pairs', :'pspec', 3) p FULL JOIN ecf_serial s USING (filter);
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- reject_copies (default true): a pair whose target is a copy of its source
-- (corpq.is_copy(), curate()'s copy reason) is rejected whatever its cosine,
-- with the reason embedding_cosine:copy; "reject_copies": false keeps the
-- copies the threshold keeps.  An encoder gives a copy its highest cosine.
CREATE TEMP TABLE ecf_copies (id int, src text, tgt text);
INSERT INTO ecf_copies VALUES
  (1, 'w1 w2 w3', 'w1 w2 w3'),          -- a copy, byte for byte
  (2, 'w4 w5, w6.', 'W4 w5 w6'),        -- a near copy: case and punctuation
  (3, 'w7 w8', 'v7 v8'),                -- not a copy
  (4, '42', '42'),                      -- no letter: not a copy
  (5, NULL, 'w1 w2 w3'),                -- a NULL side
  (6, 'w1 w2 w3', NULL);
SELECT format('[{"name": "embedding_cosine", "args": {"model": "ecf@1", "reject_copies": false}, "threshold": %s}]', :'thr') AS nospec,
       format('[{"name": "embedding_cosine", "args": {"model": "ecf@1", "reject_copies": true}, "threshold": %s}]', :'thr') AS yesspec \gset
-- the copies are copies by the one definition, and score above the threshold
SELECT id, corpq.is_copy(src, tgt) AS is_copy,
       corpq.embedding_cosine('ecf', src, tgt) >= :thr AS above_threshold,
       corpq.filter_keeps(src, tgt, :'pspec') AS keeps,
       corpq.filter_keeps(src, tgt, :'yesspec') AS keeps_true,
       corpq.filter_keeps(src, tgt, :'nospec') AS keeps_false,
       corpq.filter_rejects(src, tgt, :'pspec') AS rejects,
       corpq.filter_rejects(src, tgt, :'nospec') AS rejects_false
  FROM ecf_copies ORDER BY id;
-- the report: the copies rejected by default, in the filter's row and in its
-- own copy row; kept without, and no copy row; NULL sides in neither column;
-- per domain and in parallel the same
SELECT r.filter, r.kept, r.rejected, r.examples
  FROM corpq.filter_report('SELECT src, tgt FROM ecf_copies', :'spec', 5) r;
SELECT r.filter, r.kept, r.rejected
  FROM corpq.filter_report('SELECT src, tgt FROM ecf_copies',
                           replace(:'spec', '"model": "ecf"', '"model": "ecf", "reject_copies": false')::jsonb, 0) r;
SELECT d.domain, d.filter, d.kept, d.rejected
  FROM corpq.filter_report_by_domain('SELECT src, tgt, (id % 2)::text FROM ecf_copies',
                                     :'pspec'::jsonb || jsonb_build_array(jsonb_set(:'nospec'::jsonb -> 0, '{label}', '"cos2"')), 0) d;
-- in parallel (the copy row travels through the workers' states): the
-- report of serial, and the copy row counts the copies is_copy() finds
CREATE TABLE ecf_cp AS
SELECT src, src AS tgt FROM ecf_pairs WHERE id % 2 = 0 UNION ALL SELECT src, tgt FROM ecf_pairs;
CREATE TEMP TABLE ecf_cp_serial AS SELECT * FROM corpq.filter_report('SELECT src, tgt FROM ecf_cp', :'pspec', 3);
SELECT r.rejected = (SELECT count(*) FROM ecf_cp WHERE corpq.is_copy(src, tgt)) AS copy_row_counts_copies,
       r.rejected > 0 AS some_copies,
       cardinality(r.examples) AS examples
  FROM ecf_cp_serial r WHERE r.filter = 'embedding_cosine:copy';
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT pg_temp.workers_launched(format('SELECT corpq.filter_stats(src, tgt, %L) FROM ecf_cp', :'pspec')) > 0 AS copies_parallel_ran;
SELECT bool_and(p IS NOT DISTINCT FROM s) AS copies_parallel_same_as_serial, count(*) AS report_rows
  FROM corpq.filter_report('SELECT src, tgt FROM ecf_cp', :'pspec', 3) p FULL JOIN ecf_cp_serial s USING (filter);
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
-- pairs that are not copies: the same decisions with the option on and off
SELECT count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, :'pspec') = corpq.filter_keeps(src, tgt, :'nospec'))
         = count(*) AS non_copies_unchanged,
       count(*) FILTER (WHERE corpq.is_copy(src, tgt)) AS copies
  FROM ecf_ref WHERE src IS NOT NULL AND tgt IS NOT NULL;
-- is_copy is the copy check curate() had written in SQL: equal near keys,
-- a letter on the source side
SELECT count(*) FILTER (WHERE corpq.is_copy(src, tgt) =
           (corpq.dedup_key(src, tgt, 'near', 'src') = corpq.dedup_key(src, tgt, 'near', 'tgt')
            AND corpq.dedup_key(src, '', 'near', 'src') <> corpq.dedup_key('', '', 'near', 'src')))
         = count(*) AS is_copy_as_before,
       count(*) AS pairs
  FROM (SELECT src, tgt FROM ecf_ref UNION ALL SELECT src, tgt FROM ecf_copies
        UNION ALL SELECT src, src FROM ecf_ref UNION ALL SELECT 'Ab, c!', 'ab C') p
 WHERE src IS NOT NULL AND tgt IS NOT NULL;
-- the predicate writes the option out
SELECT corpq.filter_predicate(:'spec') LIKE '%"reject_copies": true%' AS predicate_default_written,
       corpq.filter_predicate(:'nospec') LIKE '%"reject_copies": false%' AS predicate_false_written;

-- threshold -1, the bottom of a cosine's range [-1, 1], is a threshold like
-- any other, not "no threshold given": every pair with a score is kept (its
-- cosine is >= -1), a pair without one (a side too long) rejected; the
-- predicate writes it out
SELECT '[{"name": "embedding_cosine", "args": {"model": "ecf@1", "reject_copies": false}, "threshold": -1}]' AS lowspec \gset
SELECT count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, :'lowspec') = (score IS NOT NULL))
         = count(*) AS keeps_every_scored,
       count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, :'lowspec')) AS kept,
       count(*) FILTER (WHERE score IS NOT NULL) AS scored
  FROM ecf_ref WHERE src IS NOT NULL AND tgt IS NOT NULL;
SELECT r.filter, r.kept, r.rejected
  FROM corpq.filter_report('SELECT src, tgt FROM ecf_ref', :'lowspec', 0) r;
SELECT corpq.filter_predicate(:'lowspec') LIKE '%"threshold": -1%' AS predicate_threshold_written;

-- labels
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel, p.proisstrict
  FROM pg_proc p
 WHERE p.pronamespace = 'corpq'::regnamespace AND p.proname = 'embedding_cosine'
 ORDER BY 1::text;

-- bad specs and calls: SQLSTATE and message
\set fixture :regress_dir '/fixtures/sql_error.sql'
\i :fixture
SELECT pg_temp.sql_error(q) FROM (VALUES
  ($$SELECT corpq.filter_predicate('[{"name": "embedding_cosine", "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "embedding_cosine", "args": {"model": "ecf"}}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "embedding_cosine", "args": {"model": "ecf"}, "threshold": 1.5}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "embedding_cosine", "args": {"model": "ecf"}, "threshold": -1.5}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "embedding_cosine", "args": {"model": ""}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "embedding_cosine", "args": {"model": "ecf", "forward": "ecf"}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "embedding_cosine", "args": {"model": "ecf_nope"}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "embedding_cosine", "args": {"model": "ecf@9"}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_keeps('w1', 'v1', '[{"name": "embedding_cosine", "args": {"model": "ecf"}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_keeps('w1', 'v1', '[{"name": "embedding_cosine", "args": {"model": "ecf_tr@1"}, "threshold": 0.1}]')$$),
  ($$SELECT * FROM corpq.filter_report('SELECT src, tgt FROM ecf_pairs', '[{"name": "embedding_cosine", "args": {"model": "ecf_tr"}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.embedding_cosine('ecf_tr', 'w1', 'v1')$$),
  ($$SELECT corpq.embedding_cosine('ecf_nope', 'w1', 'v1')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "embedding_cosine", "args": {"model": "ecf", "reject_copies": "yes"}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_keeps('w1', 'w1', '[{"name": "embedding_cosine", "args": {"model": "ecf@1", "reject_copies": 1}, "threshold": 0.1}]')$$),
  ($$SELECT corpq.filter_predicate('[{"name": "dual_xent", "args": {"forward": "ecf_tr", "backward": "ecf_tr", "reject_copies": true}, "threshold": 0.1}]')$$)
) t(q);
SELECT corpq.filter_keeps('w1', 'v1', '[{"name": "embedding_cosine", "args": {"model": "ecf"}, "threshold": 0.1}]');
SELECT corpq.filter_predicate('[{"name": "embedding_cosine", "args": {"model": "ecf"}}]');
SELECT corpq.embedding_cosine('ecf_tr', 'w1', 'v1');

DROP VIEW ecf_kept;
DROP TABLE ecf_copies, ecf_cp;
SELECT corpq.model_drop('ecf'), corpq.model_drop('ecf_tr');
SELECT corpq.vocab_drop('ecf_joint');
DROP TABLE ecf_pairs;
