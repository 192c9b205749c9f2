-- Per-role limits on models (issue 50).  corpq.max_model_mb bounds what a
-- load creates, counted exactly from the image's configuration before the
-- model is allocated: an int8 encoder of 1-2 MB with max_positions 65536
-- once built a 128 MB sinusoid table that nothing counted (the table now
-- holds 1024 rows; positions past them are computed as they are embedded).
-- And storage quotas a DBA sets per role: corpq.max_models_per_role (the
-- models a role owns) and corpq.max_model_bytes_per_role (the images of all
-- their versions), checked before anything is written.
SET client_min_messages = warning;
SELECT current_user AS su \gset
\set regress_password unused
\getenv regress_password PGPASSWORD
CREATE ROLE corpq_lim_a LOGIN PASSWORD :'regress_password';
CREATE ROLE corpq_lim_b LOGIN PASSWORD :'regress_password';
CREATE TABLE lim_sents AS
SELECT g AS id, 'w' || (g % 7) || ' v' || (g % 5) AS s FROM generate_series(1, 40) g;
SELECT corpq.vocab_build('lim_joint', 'SELECT s FROM lim_sents');

-- ---- the load's memory: another role's int8 encoder, d_model 512, max_positions 65536
SELECT corpq.model_create('lim_enc', '{"preset": "tiny", "kind": "encoder", "d_model": 512, "heads": 8,
                          "ffn_dim": 64, "encoder_layers": 1, "max_positions": 65536}',
                          'lim_joint', 'lim_joint', 1);
SELECT corpq.model_quantize('lim_enc') AS int8_version;
SELECT bytes BETWEEN 1024 * 1024 AND 2 * 1024 * 1024 AS image_of_1_to_2_mb
  FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
 WHERE c.name = 'lim_enc' AND v.version = 2;
ALTER ROLE corpq_lim_a SET corpq.max_model_mb = 10;
\c - corpq_lim_a
SET client_min_messages = warning;
SHOW corpq.max_model_mb;
-- it loads, and its cache entry stays within the role's bound (it was 135 MB)
SELECT array_length(corpq.embed('lim_enc@2', 'w1 v1'), 1) AS dims;
SELECT bytes <= 10 * 1024 * 1024 AS entry_within_max_model_mb, bytes < 4 * 1024 * 1024 AS entry_under_4_mb
  FROM corpq.model_cache() WHERE model = 'lim_enc';
-- a position past the table's 1024 rows: the embedding is computed all the same
SELECT array_length(corpq.embed('lim_enc@2', repeat('w1 ', 1500), 'error'), 1) AS dims_of_1500_tokens;
-- the role cannot raise its bound
SET corpq.max_model_mb = 2048;
\c - :su
SET client_min_messages = warning;
-- a bound below what the load needs refuses it before the model is allocated,
-- naming the memory counted from the configuration
ALTER ROLE corpq_lim_a SET corpq.max_model_mb = 3;
\c - corpq_lim_a
SET client_min_messages = warning;
SELECT corpq.embed('lim_enc@2', 'w1 v1');
SELECT count(*) AS cached FROM corpq.model_cache() WHERE model = 'lim_enc';
-- below the image itself: the same count, read from the image's first bytes only
\c - :su
SET client_min_messages = warning;
ALTER ROLE corpq_lim_a SET corpq.max_model_mb = 1;
\c - corpq_lim_a
SET client_min_messages = warning;
SELECT corpq.embed('lim_enc@2', 'w1 v1');
\c - :su
SET client_min_messages = warning;
ALTER ROLE corpq_lim_a RESET corpq.max_model_mb;
SELECT corpq.model_drop('lim_enc');

-- ---- a quota of 10 models: the 11th model_create is refused
ALTER ROLE corpq_lim_b SET corpq.max_models_per_role = 10;
\c - corpq_lim_b
SET client_min_messages = warning;
SHOW corpq.max_models_per_role;
SELECT count(corpq.model_create('lim_b_' || g, '{"preset": "tiny", "d_model": 16, "heads": 2, "ffn_dim": 16,
                                "encoder_layers": 1, "decoder_layers": 1}', 'lim_joint', 'lim_joint', g))
       AS created
  FROM generate_series(1, 10) g;
SELECT corpq.model_create('lim_b_11', '{"preset": "tiny", "d_model": 16, "heads": 2, "ffn_dim": 16,
                          "encoder_layers": 1, "decoder_layers": 1}', 'lim_joint', 'lim_joint', 11);
-- model_import of a new model too; a new version of one of its models is no new model
SELECT corpq.model_import('lim_b_new', corpq.model_export('lim_b_1'), 'lim_joint', 'lim_joint');
SELECT corpq.model_import('lim_b_1', corpq.model_export('lim_b_1')) AS new_version;
-- the role cannot raise its quota
SET corpq.max_models_per_role = 100;
-- after a drop, one more fits
SELECT corpq.model_drop('lim_b_10');
SELECT corpq.model_create('lim_b_11', '{"preset": "tiny", "d_model": 16, "heads": 2, "ffn_dim": 16,
                          "encoder_layers": 1, "decoder_layers": 1}', 'lim_joint', 'lim_joint', 11);
-- another role's models are its own: a is not bound by b's quota nor counted in it
\c - corpq_lim_a
SET client_min_messages = warning;
SELECT corpq.model_create('lim_a_1', '{"preset": "tiny"}', 'lim_joint', 'lim_joint', 1);
SELECT current_setting('corpq.max_models_per_role') AS a_quota;

-- ---- a quota of bytes: the images of every version of the role's models
\c - :su
SET client_min_messages = warning;
ALTER ROLE corpq_lim_a SET corpq.max_model_bytes_per_role = '2MB';
\c - corpq_lim_a
SET client_min_messages = warning;
SHOW corpq.max_model_bytes_per_role;
SELECT bytes BETWEEN 512 * 1024 AND 1024 * 1024 AS image_of_half_to_1_mb
  FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model WHERE c.name = 'lim_a_1';
SELECT corpq.model_create('lim_a_2', '{"preset": "tiny"}', 'lim_joint', 'lim_joint', 2);
\set VERBOSITY terse
-- create, import (a new version or a new model) and quantize all stop at the quota
SELECT corpq.model_create('lim_a_3', '{"preset": "tiny"}', 'lim_joint', 'lim_joint', 3) IS NOT NULL AS created;
SELECT corpq.model_import('lim_a_1', corpq.model_export('lim_a_1')) IS NOT NULL AS imported;
SELECT corpq.model_quantize('lim_a_1') IS NOT NULL AS quantized;
\set VERBOSITY default
SELECT count(*) AS models, sum(versions) AS versions FROM corpq.models WHERE owner = 'corpq_lim_a'::regrole;
-- a drop makes room (b's models, a few kB each, were never counted in a's)
SELECT corpq.model_drop('lim_a_2');
SELECT corpq.model_quantize('lim_a_1') AS quantized_after_a_drop;

-- ---- clean-up
\c - :su
SET client_min_messages = warning;
SELECT count(corpq.model_drop(name)) AS dropped FROM corpq.model_catalog WHERE name LIKE 'lim\_%';
SELECT corpq.vocab_drop('lim_joint');
DROP TABLE lim_sents;
ALTER ROLE corpq_lim_a RESET ALL;
ALTER ROLE corpq_lim_b RESET ALL;
REVOKE ALL ON corpq.object_owners FROM corpq_lim_a;
REVOKE ALL ON corpq.object_owners FROM corpq_lim_b;
DROP ROLE corpq_lim_a;
DROP ROLE corpq_lim_b;
