-- Catalog fingerprints (extension/sql/90_scale.sql): equal content gives
-- equal fingerprints, any change that alters results gives another one, and
-- corpq.catalog_check() names the node and the object that differs.  A
-- plain table stands in for a node here; test/integration/scaleout_fdw.sh
-- does the same through postgres_fdw with real nodes.
SET client_min_messages = warning;

CREATE TABLE sc_text AS
SELECT g, 'a' || (g % 7) || ' c' || (g % 3) || ' b' || (g % 5) AS src, 'x' || (g % 11) || ' y' || (g % 4) AS tgt
  FROM generate_series(1, 60) g;
SELECT corpq.bpe_import('sc_bpe', E'#version: 0.2\nc 1\n');
SELECT corpq.vocab_build('sc_src', 'SELECT src FROM sc_text', 'sc_bpe');
SELECT corpq.vocab_build('sc_tgt', 'SELECT tgt FROM sc_text');
SELECT corpq.model_create('sc_m', '{"preset": "tiny", "max_positions": 16}', 'sc_src', 'sc_tgt', 1);
SELECT corpq.model_create('sc_m2', '{"preset": "tiny", "max_positions": 16}', 'sc_src', 'sc_tgt', 2);
SELECT corpq.model_import('sc_m3', corpq.model_export('sc_m'), 'sc_src', 'sc_tgt');
SELECT corpq.model_import('sc_m', corpq.model_export('sc_m2'));

SELECT kind, name, version, fingerprint ~ '^[0-9a-f]{32}$' AS md5
  FROM corpq.catalog_fingerprint() WHERE name LIKE 'sc\_%' ORDER BY 1, 2, 3;
SELECT count(*) = 1 AS one_extension_row,
       bool_and(fingerprint = (SELECT extversion FROM pg_extension WHERE extname = 'corpq')) AS its_version
  FROM corpq.catalog_fingerprint() WHERE kind = 'extension';

CREATE TEMP TABLE fp0 AS SELECT * FROM corpq.catalog_fingerprints;
CREATE FUNCTION pg_temp.fp(k text, n text, v int DEFAULT NULL) RETURNS text LANGUAGE sql AS
$$ SELECT fingerprint FROM corpq.catalog_fingerprint() WHERE kind = k AND name = n AND version IS NOT DISTINCT FROM v $$;
-- same weights, configuration and vocabularies: same fingerprint, whatever
-- the name, the source or the date; other weights: another one
SELECT pg_temp.fp('model', 'sc_m', 1) = pg_temp.fp('model', 'sc_m3', 1) AS imported_copy_same,
       pg_temp.fp('model', 'sc_m', 1) <> pg_temp.fp('model', 'sc_m2', 1) AS other_seed_differs,
       pg_temp.fp('model', 'sc_m', 2) = pg_temp.fp('model', 'sc_m2', 1) AS v2_is_m2;
-- what changes results changes the fingerprint; counts do not
UPDATE corpq.vocabulary_tokens SET count = count + 1 WHERE vocabulary = 'sc_tgt';
SELECT pg_temp.fp('vocabulary', 'sc_tgt') = (SELECT fingerprint FROM fp0 WHERE name = 'sc_tgt') AS counts_ignored;
UPDATE corpq.vocabulary_tokens SET token = token || '_' WHERE vocabulary = 'sc_tgt' AND id = 5;
SELECT pg_temp.fp('vocabulary', 'sc_tgt') <> (SELECT fingerprint FROM fp0 WHERE name = 'sc_tgt') AS token_changes_it;
UPDATE corpq.vocabulary_tokens SET token = rtrim(token, '_') WHERE vocabulary = 'sc_tgt' AND id = 5;
SELECT pg_temp.fp('vocabulary', 'sc_tgt') = (SELECT fingerprint FROM fp0 WHERE name = 'sc_tgt') AS restored;
SELECT corpq.bpe_import('sc_bpe2', E'#version: 0.2\nc 1\n');
SELECT corpq.bpe_import('sc_bpe3', E'#version: 0.2\nc 2\n');
SELECT pg_temp.fp('bpe', 'sc_bpe2') = pg_temp.fp('bpe', 'sc_bpe') AS same_merges_same,
       pg_temp.fp('bpe', 'sc_bpe3') <> pg_temp.fp('bpe', 'sc_bpe') AS other_merge_differs;

-- a "node" with the same catalog passes; then it drifts
CREATE TABLE sc_node AS SELECT * FROM corpq.catalog_fingerprints;
SELECT corpq.catalog_check('sc_node', 'sc_node') AS nodes_checked;
SELECT count(*) AS differences FROM corpq.catalog_diff('sc_node');
UPDATE sc_node SET fingerprint = md5('other weights') WHERE kind = 'model' AND name = 'sc_m2';
DELETE FROM sc_node WHERE kind = 'vocabulary' AND name = 'sc_tgt';
INSERT INTO sc_node VALUES ('model', 'sc_m', 3, md5('a newer version'));
SELECT kind, name, version, here IS NULL AS missing_here, there IS NULL AS missing_there
  FROM corpq.catalog_diff('sc_node');
SELECT corpq.catalog_check('sc_node');
-- a relation that is not shaped like corpq.catalog_fingerprints
SELECT corpq.catalog_check('sc_text');
-- fingerprints as JSON (how a Citus coordinator gets its workers'):
-- catalog_compare is catalog_diff on them, catalog_check_node the check
SELECT (SELECT array_agg(d ORDER BY d::text) FROM corpq.catalog_compare(corpq.catalog_read('sc_node')) d)
     = (SELECT array_agg(d ORDER BY d::text) FROM corpq.catalog_diff('sc_node') d) AS compare_is_diff;
SELECT count(*) AS differences
  FROM corpq.catalog_compare((SELECT jsonb_agg(f) FROM corpq.catalog_fingerprints f));
SELECT corpq.catalog_check_node('node "same"', (SELECT jsonb_agg(f) FROM corpq.catalog_fingerprints f));
SELECT corpq.catalog_check_node('node "empty"', '[]');
SELECT corpq.catalog_check_node('node "unknown"', NULL);
SELECT count(*) AS null_compares_to_nothing FROM corpq.catalog_compare(NULL);
-- without arguments it checks the workers of a Citus coordinator
SELECT corpq.catalog_check();
-- the distributed score job and the workers' progress need Citus too
-- (test/citus/run.sh runs them)
SELECT * FROM corpq.score_job_distributed('sc_m', 'sc_text', 'sc_text');
SELECT * FROM corpq.worker_job_progress();
SELECT * FROM corpq.score_job_distributed(NULL, 'sc_text', 'sc_text');

-- model_pin: the version a name means now (what score_job_distributed
-- sends to every node), name@N as it is when that version exists
SELECT corpq.model_pin('sc_m') AS latest, corpq.model_pin('sc_m@1') AS pinned,
       corpq.model_pin('sc_m3') AS other, corpq.model_pin(NULL) IS NULL AS strict;
SELECT corpq.model_pin('sc_m@3');
SELECT corpq.model_pin('sc_nothing');
SELECT corpq.model_pin('sc_m@0');
SELECT corpq.model_pin('sc_m@1@2');

-- leave the catalog as found (later tests list models and vocabularies)
SELECT corpq.model_drop(m) FROM unnest(ARRAY['sc_m', 'sc_m2', 'sc_m3']) m;
SELECT corpq.vocab_drop('sc_src'), corpq.vocab_drop('sc_tgt');
SELECT corpq.bpe_drop(b) FROM unnest(ARRAY['sc_bpe', 'sc_bpe2', 'sc_bpe3']) b;
DROP TABLE sc_text, sc_node;
