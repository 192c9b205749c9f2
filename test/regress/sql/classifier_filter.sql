-- The classifier filter: corpq.pair_quality() against a threshold in filter
-- specs.  filter_report (batched, per domain, in small batches and in
-- parallel), filter_keeps, filter_rejects, the filter_stats aggregate, the
-- SQL of filter_predicate and curate()'s rules take the decision
-- pair_quality(...) >= threshold on every pair, compared with pair_quality
-- computed directly; a pair with no probability (a model feature NULL) is
-- rejected, filter_rejects naming it classifier:null; specs pin the
-- classifier's version; bad specs.  Only relations are shown.
SET client_min_messages = warning;
-- the jobs this test submits are deleted at its end (other tests count jobs)
SELECT coalesce(max(id), 0) AS first_job FROM corpq.jobs \gset

-- the toy en-es corpus (test/regress/fixtures/toy_en_es.sql): 3 to 9 words
-- a side, word for word
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/toy_en_es.sql'
\i :fixture
CREATE TABLE cf_pairs AS SELECT * FROM pg_temp.toy_en_es(400, 3, '');
-- the set the filters judge: clean pairs, copies, truncations and
-- neighbours' targets, and two pairs with a NULL side
CREATE TABLE cf_test AS
SELECT p.id, p.src, p.tgt FROM cf_pairs p WHERE p.id <= 200
UNION ALL SELECT 1000 + p.id, p.src, p.src FROM cf_pairs p WHERE p.id <= 50
UNION ALL SELECT 2000 + p.id, p.src, split_part(p.tgt, ' ', 1) FROM cf_pairs p WHERE p.id <= 50
UNION ALL SELECT 3000 + p.id, p.src, n.tgt FROM cf_pairs p JOIN cf_pairs n ON n.id = p.id % 400 + 1
           WHERE p.id <= 50;
INSERT INTO cf_test VALUES (5001, NULL, 'nada'), (5002, 'nothing', NULL);

SELECT corpq.classifier_train('cf', 'SELECT src, tgt FROM cf_pairs',
                              '{"src_lang": "en", "tgt_lang": "es", "seed": 3}') AS job \gset
SELECT corpq.job_wait(:job, '300 s');
SELECT state, error, result ->> 'version' AS version FROM corpq.jobs WHERE id = :job;

-- the reference: pair_quality computed directly, and a threshold that is
-- one of the probabilities (a pair whose probability moved by one ulp
-- between two paths would change sides)
CREATE TEMP TABLE cf_ref AS
SELECT id, src, tgt, corpq.pair_quality('cf@1', src, tgt) AS p FROM cf_test;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY p) AS thr FROM cf_ref \gset
SELECT format('[{"name": "classifier", "args": {"classifier": "cf"}, "threshold": %s}]', :'thr') AS spec,
       format('[{"name": "classifier", "args": {"classifier": "cf@1"}, "threshold": %s}]', :'thr') AS pspec,
       '[{"name": "classifier", "args": {"classifier": "cf@1"}}]' AS dspec \gset
SELECT count(*) FILTER (WHERE p >= :thr) > 0 AND count(*) FILTER (WHERE p < :thr) > 0 AS threshold_splits,
       count(*) FILTER (WHERE p >= 0.5) > 0 AND count(*) FILTER (WHERE p < 0.5) > 0 AS half_splits,
       count(*) FILTER (WHERE p = :thr) > 0 AS threshold_is_a_probability,
       count(*) FILTER (WHERE p IS NULL) AS null_sides
  FROM cf_ref;

-- filter_report (batched in the aggregate) keeps exactly the pairs with
-- pair_quality >= threshold; pairs with a NULL side count in neither
CREATE TEMP TABLE cf_report AS
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM cf_test', :'spec', 3);
SELECT r.filter,
       r.kept = (SELECT count(*) FROM cf_ref WHERE p >= :thr) AS kept_agrees,
       r.rejected = (SELECT count(*) FROM cf_ref WHERE p < :thr) AS rejected_agrees,
       cardinality(r.examples) AS examples
  FROM cf_report r ORDER BY r.filter;
-- the default threshold, 0.5
SELECT r.filter,
       r.kept = (SELECT count(*) FROM cf_ref WHERE p >= 0.5) AS kept_agrees,
       r.rejected = (SELECT count(*) FROM cf_ref WHERE p < 0.5) AS rejected_agrees
  FROM corpq.filter_report('SELECT src, tgt FROM cf_test', '[{"name": "classifier", "args": {"classifier": "cf"}}]', 0) r
 ORDER BY r.filter;
-- per domain: each domain's counts agree too
SELECT bool_and(d.kept = (SELECT count(*) FROM cf_ref r WHERE r.id / 1000 = d.domain::int AND r.p >= :thr)
                AND d.rejected = (SELECT count(*) FROM cf_ref r WHERE r.id / 1000 = d.domain::int AND r.p < :thr))
         AS by_domain_agrees,
       count(DISTINCT d.domain) AS domains
  FROM corpq.filter_report_by_domain('SELECT src, tgt, (id / 1000)::text FROM cf_test WHERE id < 5000', :'spec', 0) d
 WHERE d.filter = 'classifier';
-- the same with small batches
SET corpq.max_batch_mb = 1;
SELECT bool_and(p IS NOT DISTINCT FROM s) AS small_batches_same_report
  FROM corpq.filter_report('SELECT src, tgt FROM cf_test', :'spec', 3) p FULL JOIN cf_report s USING (filter);
RESET corpq.max_batch_mb;

-- filter_keeps and filter_rejects (IMMUTABLE: pinned versions) agree per row
SELECT count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, :'pspec') = (p >= :thr)) AS keeps_agree,
       count(*) FILTER (WHERE (corpq.filter_rejects(src, tgt, :'pspec') = '{classifier}') = (p < :thr)) AS rejects_agree,
       count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, :'dspec') = (p >= 0.5)) AS default_agrees,
       count(*) AS pairs
  FROM cf_ref WHERE p IS NOT NULL;
-- a label of one's own
SELECT DISTINCT corpq.filter_rejects(src, tgt, '[{"name": "classifier", "args": {"classifier": "cf@1"}, "label": "pq"}]')
  FROM cf_ref WHERE p < 0.5;
-- the aggregate itself takes the pinned spec
SELECT (s[1]).kept = (SELECT count(*) FROM cf_ref WHERE p >= :thr) AS aggregate_agrees
  FROM (SELECT corpq.filter_stats(src, tgt, :'pspec', 0) AS s FROM cf_test) a;

-- a classifier filter beside a rule filter: each filter's rejections agree
-- with its own per-row decision
SELECT r.filter,
       r.rejected = (SELECT count(*) FROM cf_ref e WHERE e.p IS NOT NULL
                        AND CASE r.filter
                              WHEN 'classifier' THEN e.p < :thr
                              WHEN 'length_ratio' THEN corpq.length_ratio(e.src, e.tgt) >= 1.5
                              ELSE e.p < :thr OR corpq.length_ratio(e.src, e.tgt) >= 1.5 END) AS rejected_agrees
  FROM corpq.filter_report('SELECT src, tgt FROM cf_test',
                           :'pspec'::jsonb || '[{"name": "length_ratio", "threshold": 1.5}]'::jsonb, 0) r
 ORDER BY r.filter;

-- parallel: the same report as serially (the workers load the classifier)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
\set fixture :regress_dir '/fixtures/workers_launched.sql'
\i :fixture
SELECT pg_temp.workers_launched(format('SELECT corpq.filter_stats(src, tgt, %L) FROM cf_test', :'pspec')) > 0 AS parallel_ran;
SELECT bool_and(p IS NOT DISTINCT FROM s) AS parallel_same_as_serial
  FROM corpq.filter_report('SELECT src, tgt FROM cf_test', :'pspec', 3) p FULL JOIN cf_report s USING (filter);
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- filter_predicate writes the version of now, every default written out;
-- its SQL selects the same rows
SELECT corpq.filter_predicate('[{"name": "classifier", "args": {"classifier": "cf"}}]') AS pred \gset
SELECT :'pred' AS predicate;
CREATE TEMP TABLE cf_pred AS SELECT :'pred'::text AS pred;
DO $$ BEGIN
    EXECUTE format('CREATE TEMP VIEW cf_kept AS SELECT id FROM cf_test WHERE %s', (SELECT pred FROM cf_pred));
END $$;
SELECT (SELECT array_agg(id ORDER BY id) FROM cf_kept)
         = (SELECT array_agg(id ORDER BY id) FROM cf_ref WHERE p >= 0.5) AS view_agrees;
-- curate()'s rules: the job stores the spec pinned, and its reasons agree
CREATE TABLE cf_curated (id bigint, decision text, probability float8, reasons text[]);
SELECT corpq.curate('cf_test', 'cf_curated',
                    '{"filters": [{"name": "classifier", "args": {"classifier": "cf"}}], "dedup": "none"}') AS cjob \gset
SELECT corpq.job_wait(:cjob, '300 s');
SELECT state, error, args -> 'filters' AS filters FROM corpq.jobs WHERE id = :cjob;

-- a new version of the classifier: the view, the pinned specs and the
-- curate job's spec keep version 1's decisions; the reports on the name
-- follow the new version
SELECT corpq.classifier_train('cf', 'SELECT src, tgt FROM cf_pairs',
                              '{"src_lang": "en", "tgt_lang": "es", "seed": 4, "classifier": "logistic"}') AS job \gset
SELECT corpq.job_wait(:job, '300 s');
SELECT state, error, result ->> 'version' AS version FROM corpq.jobs WHERE id = :job;
CREATE TEMP TABLE cf_ref2 AS
SELECT id, corpq.pair_quality('cf@2', src, tgt) AS p2 FROM cf_test;
SELECT count(*) FILTER (WHERE r.p IS DISTINCT FROM r2.p2) > 0 AS versions_differ,
       count(*) FILTER (WHERE (r.p >= 0.5) IS DISTINCT FROM (r2.p2 >= 0.5)) > 0 AS decisions_differ
  FROM cf_ref r JOIN cf_ref2 r2 USING (id);
SELECT (SELECT array_agg(id ORDER BY id) FROM cf_kept)
         = (SELECT array_agg(id ORDER BY id) FROM cf_ref WHERE p >= 0.5) AS view_unchanged;
SELECT count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, :'dspec') = (p >= 0.5)) = count(*) AS pinned_unchanged
  FROM cf_ref WHERE p IS NOT NULL;
-- (curate's copy step drops the copies, ids 1001 to 1050, whatever the rules say)
SELECT (SELECT array_agg(c.id::int ORDER BY c.id) FROM cf_curated c WHERE c.decision = 'keep')
         = (SELECT array_agg(r.id ORDER BY r.id) FROM cf_ref r WHERE r.p >= 0.5 AND r.id / 1000 <> 1)
           AS curate_kept_v1,
       (SELECT count(*) FROM cf_curated c JOIN cf_ref r USING (id)
         WHERE r.p < 0.5 AND c.reasons[1] = 'rule:classifier') = (SELECT count(*) FROM cf_ref WHERE p < 0.5)
           AS curate_reasons;
SELECT corpq.filter_predicate('[{"name": "classifier", "args": {"classifier": "cf"}}]') LIKE '%"cf@2"%'
           AS predicate_follows_name;
SELECT r.kept = (SELECT count(*) FROM cf_ref2 WHERE p2 >= 0.5) AS report_follows_name
  FROM corpq.filter_report('SELECT src, tgt FROM cf_test', '[{"name": "classifier", "args": {"classifier": "cf"}}]', 0) r
 WHERE r.filter = 'all';
SELECT r.kept = (SELECT count(*) FROM cf_ref WHERE p >= 0.5) AS report_on_version_1
  FROM corpq.filter_report('SELECT src, tgt FROM cf_test', :'dspec', 0) r
 WHERE r.filter = 'all';

-- a pair with no probability: an untrained tiny encoder that takes 8
-- tokens gives the longer pairs no cosine, so no probability; every filter
-- path rejects them, filter_rejects with the reason classifier:null
SELECT corpq.vocab_build('cf_joint', 'SELECT src FROM cf_pairs UNION ALL SELECT tgt FROM cf_pairs') > 0 AS vocab;
SELECT corpq.model_create('cf_enc', '{"preset": "tiny", "kind": "encoder", "max_positions": 8}',
                          'cf_joint', 'cf_joint', 13);
SELECT corpq.classifier_train('cfm', 'SELECT src, tgt FROM cf_pairs', '{"encoder": "cf_enc", "seed": 5}') AS job \gset
SELECT corpq.job_wait(:job, '300 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;
CREATE TEMP TABLE cf_refm AS
SELECT id, src, tgt, corpq.pair_quality('cfm@1', src, tgt) AS p FROM cf_test WHERE id < 5000;
SELECT count(*) FILTER (WHERE p IS NULL) > 0 AS some_null, count(*) FILTER (WHERE p < 0.5) > 0 AS some_below,
       count(*) FILTER (WHERE p >= 0.5) > 0 AS some_kept
  FROM cf_refm;
SELECT count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, '[{"name": "classifier", "args": {"classifier": "cfm@1"}}]')
                              = coalesce(p >= 0.5, false)) = count(*) AS keeps_agree,
       count(*) FILTER (WHERE corpq.filter_rejects(src, tgt, '[{"name": "classifier", "args": {"classifier": "cfm@1"}}]')
                              = CASE WHEN p IS NULL THEN '{classifier:null}'
                                     WHEN p < 0.5 THEN '{classifier}' ELSE '{}' END::text[]) = count(*) AS rejects_agree
  FROM cf_refm;
SELECT r.filter, r.kept = (SELECT count(*) FROM cf_refm WHERE p >= 0.5) AS kept_agrees,
       r.rejected = (SELECT count(*) FROM cf_refm WHERE p < 0.5 OR p IS NULL) AS rejected_agrees
  FROM corpq.filter_report('SELECT src, tgt FROM cf_test WHERE id < 5000',
                           '[{"name": "classifier", "args": {"classifier": "cfm"}}]', 0) r
 ORDER BY r.filter;

-- score_job writes pair_quality (what "pair_quality", option classifier):
-- the values of pair_quality, bit for bit, in small chunks; NULL for a NULL
-- side and for a pair with no probability; no model needed
CREATE TABLE cf_scores (id bigint, score double precision, v int);
SELECT corpq.score_job(NULL, 'SELECT id, src, tgt FROM cf_test ORDER BY id', 'cf_scores',
                       '{"what": "pair_quality", "classifier": "cf@1", "chunk_rows": 7, "version_column": "v"}') AS sjob \gset
SELECT corpq.job_wait(:sjob, '300 s');
SELECT state, error, args ->> 'model' AS model, args ->> 'classifier' AS classifier,
       result ->> 'model' AS result_model, result ->> 'classifier' AS result_classifier,
       result ->> 'rows' AS rows, result ->> 'scored' AS scored, (result ->> 'chunks')::int > 10 AS chunks
  FROM corpq.jobs WHERE id = :sjob;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE s.score = r.p) AS bit_equal,
       count(*) FILTER (WHERE s.score IS NULL AND r.p IS NULL) AS both_null,
       count(*) FILTER (WHERE s.v = 1) AS version_1
  FROM cf_scores s JOIN cf_ref r USING (id);
-- a name is pinned at submission to its latest version, now 2
TRUNCATE cf_scores;
SELECT corpq.score_job(NULL, 'SELECT id, src, tgt FROM cf_test ORDER BY id', 'cf_scores',
                       '{"what": "pair_quality", "classifier": "cf", "version_column": "v"}') AS sjob \gset
SELECT args ->> 'classifier' AS classifier FROM corpq.jobs WHERE id = :sjob;
SELECT corpq.job_wait(:sjob, '300 s');
SELECT count(*) FILTER (WHERE s.score IS NOT DISTINCT FROM r.p2) AS equal_v2, count(*) FILTER (WHERE s.v = 2) AS version_2
  FROM cf_scores s JOIN cf_ref2 r USING (id);
-- skip_existing writes the missing rows as a whole run writes them (the row
-- jobs' resume)
DELETE FROM cf_scores WHERE id % 3 = 0;
SELECT corpq.score_job(NULL, 'SELECT id, src, tgt FROM cf_test ORDER BY id', 'cf_scores',
                       '{"what": "pair_quality", "classifier": "cf@2", "skip_existing": true, "chunk_rows": 5}') AS sjob \gset
SELECT corpq.job_wait(:sjob, '300 s');
SELECT count(*) AS rows, count(DISTINCT id) AS ids, count(*) FILTER (WHERE s.score IS NOT DISTINCT FROM r.p2) AS equal_v2
  FROM cf_scores s JOIN cf_ref2 r USING (id);
-- a model feature NULL: NULL, counted as too_long
CREATE TABLE cf_mscores (id bigint, score double precision);
SELECT corpq.score_job(NULL, 'SELECT id, src, tgt FROM cf_test WHERE id < 5000 ORDER BY id', 'cf_mscores',
                       '{"what": "pair_quality", "classifier": "cfm"}') AS sjob \gset
SELECT corpq.job_wait(:sjob, '300 s');
SELECT (result ->> 'too_long')::int = (SELECT count(*) FROM cf_refm WHERE p IS NULL) AS too_long_counted
  FROM corpq.jobs WHERE id = :sjob;
SELECT count(*) FILTER (WHERE s.score IS NOT DISTINCT FROM r.p) = count(*) AS equal_with_nulls,
       count(*) FILTER (WHERE s.score IS NULL) > 0 AS some_null
  FROM cf_mscores s JOIN cf_refm r USING (id);
-- beside a model's score: sent_prob of a tiny translation model and
-- pair_quality, each the per-row function's
SELECT corpq.model_create('cf_tr', '{"preset": "tiny", "max_positions": 32}', 'cf_joint', 'cf_joint', 14);
CREATE TABLE cf_both (id bigint, sp double precision, pq double precision);
SELECT corpq.score_job('cf_tr', 'SELECT id, src, tgt FROM cf_test ORDER BY id', 'cf_both',
                       '{"what": "sent_prob, pair_quality", "columns": "sp, pq", "classifier": "cf@1"}') AS sjob \gset
SELECT corpq.job_wait(:sjob, '300 s');
SELECT state, error, result ->> 'model' AS model, result ->> 'classifier' AS classifier FROM corpq.jobs WHERE id = :sjob;
SELECT count(*) FILTER (WHERE b.pq IS NOT DISTINCT FROM r.p
                          AND b.sp IS NOT DISTINCT FROM corpq.sent_prob('cf_tr@1'::corpq.pinned_model, r.src, r.tgt))
         = count(*) AS both_equal
  FROM cf_both b JOIN cf_ref r USING (id);
-- bad options: each an ERROR at submission
SELECT corpq.score_job(NULL, 'SELECT id, src, tgt FROM cf_test', 'cf_mscores', '{"what": "pair_quality"}');
SELECT corpq.score_job(NULL, 'SELECT id, src, tgt FROM cf_test', 'cf_mscores', '{"what": "pair_quality", "classifier": "no_such"}');
SELECT corpq.score_job(NULL, 'SELECT id, src, tgt FROM cf_test', 'cf_mscores', '{"what": "pair_quality", "classifier": "cf@9"}');
SELECT corpq.score_job('cf_tr', 'SELECT id, src, tgt FROM cf_test', 'cf_mscores', '{"classifier": "cf"}');
SELECT corpq.score_job('cf_tr', 'SELECT id, src, tgt FROM cf_test', 'cf_mscores', '{"what": "pair_quality", "classifier": "cf"}');
SELECT corpq.score_job(NULL, 'SELECT id, src, tgt FROM cf_test', 'cf_mscores', '{"what": "sent_prob, pair_quality", "classifier": "cf"}');
SELECT corpq.score_job(NULL, 'SELECT id, src, tgt FROM cf_test', 'cf_mscores', '{"what": "pair_quality", "classifier": 3}');

-- quality_by_domain with a classifier: per domain, the share below 0.5 (or
-- with no probability) and the mean pair_quality, against pair_quality by hand
SELECT q.domain, q.pairs,
       q.pair_quality_below_half = h.below AS below_half_agrees, q.pair_quality_mean = h.mean AS mean_agrees,
       q.pair_quality_below_half BETWEEN 0 AND 1 AS in_range
  FROM corpq.quality_by_domain('SELECT src, tgt, (id / 1000)::text FROM cf_test', classifier => 'cf@1') q
  JOIN (SELECT (id / 1000)::text AS domain, avg((p < 0.5)::int)::float8 AS below, avg(p) AS mean
          FROM cf_ref WHERE src IS NOT NULL AND tgt IS NOT NULL GROUP BY 1) h USING (domain)
 ORDER BY q.domain;
-- pairs with no probability count as below, and the mean leaves them out
SELECT q.domain, q.pair_quality_below_half = h.below AS below_half_agrees, q.pair_quality_mean = h.mean AS mean_agrees
  FROM corpq.quality_by_domain('SELECT src, tgt, (id / 1000)::text FROM cf_test WHERE id < 5000', classifier => 'cfm') q
  JOIN (SELECT (id / 1000)::text AS domain, avg((p IS NULL OR p < 0.5)::int)::float8 AS below, avg(p) AS mean
          FROM cf_refm GROUP BY 1) h USING (domain)
 ORDER BY q.domain;
SELECT count(*) FILTER (WHERE p IS NULL) > 0 AS nulls_in_domain_0 FROM cf_refm WHERE id < 1000;
-- without a classifier the columns are NULL
SELECT bool_and(pair_quality_below_half IS NULL AND pair_quality_mean IS NULL) AS no_classifier
  FROM corpq.quality_by_domain('SELECT src, tgt, (id / 1000)::text FROM cf_test');
\set VERBOSITY terse
SELECT * FROM corpq.quality_by_domain('SELECT src, tgt, (id / 1000)::text FROM cf_test', classifier => 'no_such');
\set VERBOSITY default

-- bad specs: each an ERROR before any row is read
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM cf_test', '[{"name": "classifier", "args": {"classifier": "no_such"}}]', 0);
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM cf_test', '[{"name": "classifier", "args": {"classifier": "cf@9"}}]', 0);
SELECT corpq.filter_keeps('the dog', 'el perro', '[{"name": "classifier", "args": {"classifier": "no_such@1"}}]');
SELECT corpq.filter_predicate('[{"name": "classifier"}]');
SELECT corpq.filter_predicate('[{"name": "classifier", "args": {"classifier": "cf"}, "threshold": 0}]');
SELECT corpq.filter_predicate('[{"name": "classifier", "args": {"classifier": "cf"}, "threshold": 1}]');
SELECT corpq.filter_predicate('[{"name": "classifier", "args": {"classifier": "cf"}, "threshold": 1.5}]');
SELECT corpq.filter_predicate('[{"name": "classifier", "args": {"classifier": "cf"}, "threshold": "0.5"}]');
SELECT corpq.filter_predicate('[{"name": "classifier", "args": {"classifier": 7}}]');
SELECT corpq.filter_predicate('[{"name": "classifier", "args": {"classifier": ""}}]');
SELECT corpq.filter_predicate('[{"name": "classifier", "args": {"classifier": "cf", "model": "x"}}]');
-- IMMUTABLE paths take pinned versions only
SELECT corpq.filter_keeps('the dog', 'el perro', '[{"name": "classifier", "args": {"classifier": "cf"}}]');
-- curate() checks its rules at submission
SELECT corpq.curate('cf_test', 'cf_curated', '{"filters": [{"name": "classifier", "args": {"classifier": "no_such"}}]}');

SELECT corpq.classifier_drop('cf');
SELECT corpq.classifier_drop('cfm');
SELECT corpq.model_drop('cf_enc');
SELECT corpq.model_drop('cf_tr');
SELECT corpq.vocab_drop('cf_joint');
DROP VIEW cf_kept;
DROP TABLE cf_scores, cf_mscores, cf_both;
DROP TABLE cf_curated, cf_test, cf_pairs;
DELETE FROM corpq.jobs WHERE id > :first_job;
