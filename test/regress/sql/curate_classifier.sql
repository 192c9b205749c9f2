-- The pair-quality classifier in SQL (docs/curation.md): the classifier_train
-- job, the catalog and its view, pair_quality on a name, name@N and a pinned
-- version, classifier_features equal to the SQL functions bit for bit,
-- versions, bad input, roles, drops.
SET client_min_messages = warning;

-- The toy en-es corpus (test/regress/fixtures/toy_en_es.sql): 3 to 9 words a
-- side, each English word with its own Spanish one, so a pair's two sides
-- are word-for-word translations.
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/toy_en_es.sql'
\i :fixture
CREATE TABLE cc_pairs AS SELECT * FROM pg_temp.toy_en_es(400, 3, '');
INSERT INTO cc_pairs VALUES (401, NULL, 'nada'), (402, 'nothing', NULL);

-- string and language ID features, trees (the default)
SELECT corpq.classifier_train('cc', 'SELECT src, tgt FROM cc_pairs',
                              '{"src_lang": "en", "tgt_lang": "es", "seed": 3}') AS job \gset
SELECT corpq.job_wait(:job, '300 s');
SELECT kind, state, error, result ->> 'classifier' AS classifier, result ->> 'version' AS version,
       result -> 'report' ->> 'clean_pairs' AS clean_pairs,
       result -> 'report' ->> 'clean_rows' AS clean_rows,
       (result -> 'report' ->> 'pairs_made')::int > 400 AS noise_made,
       result -> 'report' ->> 'pairs_skipped_null' AS skipped_null,
       result -> 'report' ->> 'max_seconds_reached' AS max_seconds_reached,
       (result -> 'report' ->> 'heldout_pairs')::int BETWEEN 100 AND 400 AS heldout_share,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(result -> 'report' -> 'heldout' -> 'types') k)
           AS heldout_types
  FROM corpq.jobs WHERE id = :job;
-- the report's figures are in range, and a copy is always caught
SELECT bool_and((t.v ->> 'removed')::float8 BETWEEN 0 AND 1) AS removed_in_range,
       bool_and((t.v ->> 'auc')::float8 BETWEEN 0 AND 1) AS auc_in_range,
       bool_and((t.v ->> 'pairs')::int > 0) AS pairs_counted,
       max((t.v ->> 'removed')::float8) FILTER (WHERE t.k = 'untranslated') = 1 AS copies_removed
  FROM corpq.jobs j, jsonb_each(j.result -> 'report' -> 'heldout' -> 'types') t(k, v)
 WHERE j.id = :job;
SELECT name, latest_version, versions, kind, features, models, owner = current_user::regrole AS mine,
       heldout_clean_kept BETWEEN 0 AND 1 AS kept_in_range, heldout_min_auc BETWEEN 0 AND 1 AS auc_in_range
  FROM corpq.classifiers;
SELECT version, kind, job = :job AS by_job, checksum = get_byte(classifier, length(classifier) - 4) + 256 * get_byte(classifier, length(classifier) - 3) +
                  65536 * get_byte(classifier, length(classifier) - 2) +
                  16777216::bigint * get_byte(classifier, length(classifier) - 1) AS checksum_is_trailer,
       options ->> 'classifier' AS classifier, options ->> 'src_lang' AS src_lang,
       options -> 'noise' ->> 'untranslated' AS untranslated_share, options ->> 'max_pairs' AS max_pairs,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(report -> 'importance') k) = (SELECT array_agg(f ORDER BY f) FROM unnest(features) f) AS importance_per_feature,
       (SELECT sum((v ->> 'splits')::int) FROM jsonb_each(report -> 'importance') e(k, v)) > 0 AS trees_split
  FROM corpq.classifier_versions;

-- pair_quality: a probability, higher for a clean pair than for its copy,
-- its truncation or a neighbour's target
CREATE TEMP TABLE cc_q AS
SELECT p.id, p.src, p.tgt,
       corpq.pair_quality('cc', p.src, p.tgt) AS clean,
       corpq.pair_quality('cc', p.src, p.src) AS copy,
       corpq.pair_quality('cc', p.src, split_part(p.tgt, ' ', 1)) AS truncated,
       corpq.pair_quality('cc', p.src, n.tgt) AS misaligned
  FROM cc_pairs p JOIN cc_pairs n ON n.id = p.id % 400 + 1 WHERE p.id <= 400;
SELECT bool_and(clean BETWEEN 0 AND 1 AND copy BETWEEN 0 AND 1 AND truncated BETWEEN 0 AND 1
                AND misaligned BETWEEN 0 AND 1) AS probabilities,
       avg((clean > copy)::int) > 0.95 AS clean_beats_copy,
       avg((clean > truncated)::int) > 0.9 AS clean_beats_truncated,
       avg((clean > misaligned)::int) > 0.75 AS clean_beats_misaligned,
       avg((clean >= 0.5)::int) > 0.8 AS clean_kept
  FROM cc_q;
SELECT corpq.pair_quality('cc', NULL, 'el perro') IS NULL AS null_src,
       corpq.pair_quality('cc', 'the dog', NULL) IS NULL AS null_tgt,
       corpq.pair_quality(NULL::text, 'the dog', 'el perro') IS NULL AS null_classifier;
-- name, name@1 and the pinned version agree, in a parallel plan too
SELECT count(*) FILTER (WHERE clean = corpq.pair_quality('cc@1', src, tgt)
                          AND clean = corpq.pair_quality('cc@1'::corpq.pinned_model, src, tgt)) AS same
  FROM cc_q;
\set fixture :regress_dir '/fixtures/par_check.sql'
\i :fixture
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT * FROM pg_temp.par_check('SELECT id, corpq.pair_quality(''cc@1''::corpq.pinned_model, src, tgt) FROM cc_pairs');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- a second training makes version 2; version 1 keeps its meaning
SELECT corpq.classifier_train('cc', 'SELECT src, tgt FROM cc_pairs',
                              '{"src_lang": "en", "tgt_lang": "es", "seed": 4, "classifier": "logistic",
                                "noise": {"untranslated": 0.3, "wrong_language": 0}}') AS job \gset
SELECT corpq.job_wait(:job, '300 s');
SELECT state, result ->> 'version' AS version FROM corpq.jobs WHERE id = :job;
SELECT latest_version, versions, kind FROM corpq.classifiers WHERE name = 'cc';
SELECT count(*) FILTER (WHERE clean = corpq.pair_quality('cc@1', src, tgt)) AS v1_unchanged,
       count(*) FILTER (WHERE corpq.pair_quality('cc', src, tgt) = corpq.pair_quality('cc@2', src, tgt)) AS latest_is_v2
  FROM cc_q;
SELECT options -> 'noise' ->> 'untranslated' AS untranslated, options -> 'noise' ->> 'wrong_language' AS wrong_language,
       (SELECT bool_and(v ? 'weight') FROM jsonb_each(report -> 'importance') e(k, v)) AS weights
  FROM corpq.classifier_versions WHERE version = 2;

-- max_seconds: the features stop after the first chunk (about 1,000 pairs,
-- whole groups) once the budget is spent, and the report says how many
SELECT corpq.classifier_train('cc_budget', 'SELECT src, tgt FROM cc_pairs',
                              '{"max_seconds": 0.001, "noise": {"untranslated": 3}}') AS job \gset
SELECT corpq.job_wait(:job, '300 s');
SELECT state, result -> 'report' ->> 'max_seconds_reached' AS reached,
       (result -> 'report' ->> 'pairs_computed')::int BETWEEN 1000 AND 1100 AS one_chunk,
       (result -> 'report' ->> 'pairs_made')::int > (result -> 'report' ->> 'pairs_computed')::int AS fewer_than_made,
       (result -> 'report' ->> 'pairs_used') = (result -> 'report' ->> 'pairs_computed') AS all_used
  FROM corpq.jobs WHERE id = :job;
SELECT corpq.classifier_drop('cc_budget');

-- model features: a lexicon and an untrained tiny encoder; each feature is
-- the SQL function's value, bit for bit
SELECT corpq.lexicon_train('cc_lex', 'SELECT src, tgt FROM cc_pairs') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SELECT corpq.vocab_build('cc_joint', 'SELECT src FROM cc_pairs WHERE src IS NOT NULL
                                      UNION ALL SELECT tgt FROM cc_pairs WHERE tgt IS NOT NULL') > 0 AS vocab;
SELECT corpq.model_create('cc_enc', '{"preset": "tiny", "kind": "encoder", "max_positions": 12}',
                          'cc_joint', 'cc_joint', 13);
SELECT corpq.classifier_train('ccm', 'SELECT src, tgt FROM cc_pairs',
                              '{"encoder": "cc_enc", "lexicon": "cc_lex", "seed": 5}') AS job \gset
SELECT corpq.job_wait(:job, '300 s');
SELECT state, error, (result -> 'report' ->> 'pairs_skipped_null')::int > 0 AS some_too_long
  FROM corpq.jobs WHERE id = :job;
SELECT features, models FROM corpq.classifiers WHERE name = 'ccm';
CREATE TEMP TABLE cc_f AS
SELECT p.src, p.tgt, corpq.classifier_features('ccm', p.src, p.tgt) AS f
  FROM cc_pairs p WHERE p.id <= 400
UNION ALL
SELECT p.src, n.tgt, corpq.classifier_features('ccm', p.src, n.tgt)
  FROM cc_pairs p JOIN cc_pairs n ON n.id = p.id % 400 + 1 WHERE p.id <= 400
UNION ALL
SELECT p.src, p.tgt || ' ' || n.tgt, corpq.classifier_features('ccm', p.src, p.tgt || ' ' || n.tgt)
  FROM cc_pairs p JOIN cc_pairs n ON n.id = p.id % 400 + 1 WHERE p.id <= 400;
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE (f ->> 'align_fwd')::float8 = (corpq.align_stats('cc_lex', src, tgt)).fwd_score
                          AND (f ->> 'align_bwd')::float8 = (corpq.align_stats('cc_lex', src, tgt)).rev_score)
           AS align_equal,
       count(*) FILTER (WHERE (f ->> 'coverage_fwd')::float8 = (corpq.align_stats('cc_lex', src, tgt)).src_coverage
                          AND (f ->> 'coverage_bwd')::float8 = (corpq.align_stats('cc_lex', src, tgt)).tgt_coverage)
           AS coverage_equal,
       count(*) FILTER (WHERE (f ->> 'tail_src')::float8 = (corpq.align_stats('cc_lex', src, tgt)).src_tail
                          AND (f ->> 'tail_tgt')::float8 = (corpq.align_stats('cc_lex', src, tgt)).tgt_tail)
           AS tail_equal,
       count(*) FILTER (WHERE (f ->> 'embedding_cosine')::float8
                              IS NOT DISTINCT FROM corpq.embedding_cosine('cc_enc@1'::corpq.pinned_model, src, tgt))
           AS cosine_equal,
       count(*) FILTER (WHERE f -> 'embedding_cosine' = 'null') AS cosine_null,
       count(*) FILTER (WHERE f -> 'embedding_cosine' = 'null'
                          AND corpq.pair_quality('ccm', src, tgt) IS NULL) AS null_feature_null_quality,
       count(*) FILTER (WHERE f -> 'embedding_cosine' <> 'null'
                          AND corpq.pair_quality('ccm', src, tgt) BETWEEN 0 AND 1) AS quality_otherwise
  FROM cc_f;

-- dual_xent from two untrained tiny translation models, the same way
SELECT corpq.model_create('cc_fwd', '{"preset": "tiny", "max_positions": 24}', 'cc_joint', 'cc_joint', 21),
       corpq.model_create('cc_bwd', '{"preset": "tiny", "max_positions": 24}', 'cc_joint', 'cc_joint', 22);
SELECT corpq.classifier_train('ccx', 'SELECT src, tgt FROM cc_pairs',
                              '{"forward": "cc_fwd", "backward": "cc_bwd", "seed": 6, "classifier": "logistic"}') AS job \gset
SELECT corpq.job_wait(:job, '300 s');
SELECT kind, 'dual_xent' = ANY (features) AS uses_dual_xent, models FROM corpq.classifiers WHERE name = 'ccx';
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE (corpq.classifier_features('ccx', src, tgt) ->> 'dual_xent')::float8
                              IS NOT DISTINCT FROM corpq.dual_xent('cc_fwd@1'::corpq.pinned_model,
                                                                   'cc_bwd@1'::corpq.pinned_model, src, tgt))
           AS dual_xent_equal,
       count(*) FILTER (WHERE corpq.dual_xent('cc_fwd@1'::corpq.pinned_model, 'cc_bwd@1'::corpq.pinned_model,
                                              src, tgt) IS NOT NULL) AS scored
  FROM cc_f;
SELECT corpq.classifier_drop('ccx');
SELECT corpq.model_drop(m) FROM unnest(ARRAY['cc_fwd', 'cc_bwd']) m;

-- bad input
SELECT corpq.classifier_train('cc', 'SELECT src, tgt FROM cc_pairs', '{"src_lang": "xx"}');
SELECT corpq.classifier_train('cc', 'SELECT src, tgt FROM cc_pairs LIMIT 10');
SELECT corpq.classifier_train('cc', 'SELECT src, tgt FROM cc_pairs', '{"encoder": "no_such_model"}');
SELECT corpq.classifier_train('cc', 'SELECT src, tgt FROM cc_pairs', '{"lexicon": "no_such_lexicon"}');
SELECT corpq.classifier_train('cc', 'SELECT src, tgt FROM cc_pairs', '{"colour": "red"}');
SELECT corpq.classifier_train('cc', 'SELECT src, tgt FROM cc_pairs', '{"forward": "cc_enc"}');
SELECT corpq.classifier_train('cc', 'SELECT src, tgt FROM cc_pairs', '{"noise": {"truncated": 1}}');
SELECT corpq.classifier_train('cc', 'SELECT src, tgt FROM cc_pairs', '{"noise": 0.5}');
SELECT corpq.classifier_train('cc', 'SELECT src FROM cc_pairs');
SELECT corpq.classifier_train('c@c', 'SELECT src, tgt FROM cc_pairs');
SELECT corpq.pair_quality('no_such_classifier', 'a', 'b');
SELECT corpq.pair_quality('cc@7', 'a', 'b');

-- roles: another role reads and uses, but neither trains nor drops
CREATE ROLE regress_cc_other;
SET ROLE regress_cc_other;
SELECT name, latest_version FROM corpq.classifiers ORDER BY name;
SELECT corpq.pair_quality('cc@1', 'the dog runs', 'el perro corre') BETWEEN 0 AND 1 AS usable;
SELECT corpq.classifier_train('cc', 'SELECT src, tgt FROM cc_pairs');
SELECT corpq.classifier_drop('cc');
RESET ROLE;
DROP ROLE regress_cc_other;

-- a dropped model: pair_quality names it
SELECT corpq.model_drop('cc_enc');
SELECT corpq.pair_quality('ccm', 'the dog', 'el perro');
-- a lexicon replaced in place: the classifier pinned its version
SELECT corpq.lexicon_train('cc_lex', 'SELECT src, tgt FROM cc_pairs WHERE id <= 300', '{"replace": true}') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SELECT corpq.pair_quality('ccm', 'the dog', 'el perro');

-- classifier_drop: the name is gone, its versions are never issued again
SELECT corpq.classifier_drop('cc');
SELECT corpq.classifier_drop('ccm');
SELECT count(*) AS classifiers FROM corpq.classifiers;
SELECT corpq.pair_quality('cc', 'the dog', 'el perro');
SELECT corpq.pair_quality('cc@1'::corpq.pinned_model, 'the dog', 'el perro');
SELECT catalog, name, last_version FROM corpq.issued_versions
 WHERE catalog = 'corpq.classifier_catalog' AND name LIKE 'cc%' ORDER BY name;

-- leave the shared database as it was
SELECT corpq.lexicon_drop('cc_lex');
SELECT corpq.vocab_drop('cc_joint');
DROP TABLE cc_pairs;
DELETE FROM corpq.jobs
 WHERE kind = 'classifier_train' OR (kind = 'lexicon_train' AND args ->> 'name' = 'cc_lex');
