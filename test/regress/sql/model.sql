-- Model catalog: create from a preset, versions, name@N, export/import,
-- corrupted images, drop, sharing between roles, the backend cache.
SET client_min_messages = warning;

CREATE TABLE model_pairs AS
SELECT g AS id,
       'a' || (g % 7) || ' b' || (g % 5) || ' c' || (g % 3) AS src,
       'x' || (g % 5) || ' y' || (g % 7) AS tgt
  FROM generate_series(1, 60) g;
SELECT corpq.vocab_build('model_src', 'SELECT src FROM model_pairs');
SELECT corpq.vocab_build('model_tgt', 'SELECT tgt FROM model_pairs');

-- preset tiny with one override; vocabulary sizes from the vocabularies
SELECT corpq.model_create('m1', '{"preset": "tiny", "max_positions": 16}', 'model_src', 'model_tgt', 42);
SELECT name, architecture, parameters, size > parameters * 4 AS size_ok, src_vocab, tgt_vocab,
       latest_version, versions, owner = current_user::regrole AS mine
  FROM corpq.models;
SELECT config FROM corpq.model_catalog WHERE name = 'm1';
SELECT version, bytes = (SELECT sum(length(k.data)) FROM corpq.model_chunks k
                         WHERE k.model = v.model AND k.version = v.version) AS bytes_ok, source, step, metrics, best
  FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model WHERE c.name = 'm1';

-- the same seed gives the same weights, another seed others
SELECT corpq.model_create('m1_same', '{"preset": "tiny", "max_positions": 16}', 'model_src', 'model_tgt', 42);
SELECT corpq.model_create('m1_other', '{"preset": "tiny", "max_positions": 16}', 'model_src', 'model_tgt', 43);
SELECT corpq.model_export('m1') = corpq.model_export('m1_same') AS same_seed,
       corpq.model_export('m1') = corpq.model_export('m1_other') AS other_seed;

-- export/import round trip: a new version, byte-identical
SELECT corpq.model_import('m1', corpq.model_export('m1_other'));
SELECT corpq.model_export('m1@2') = corpq.model_export('m1_other') AS identical,
       corpq.model_export('m1') = corpq.model_export('m1@2') AS latest_is_2,
       corpq.model_export('m1@1') = corpq.model_export('m1_same') AS v1_kept;
SELECT corpq.model_export('m1@1'::corpq.pinned_model) = corpq.model_export('m1@1') AS pinned_export;
SELECT name, latest_version, versions FROM corpq.models WHERE name = 'm1';
SELECT version, source FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
 WHERE c.name = 'm1' ORDER BY version;

-- importing creates a model when given vocabularies
SELECT corpq.model_import('m2', corpq.model_export('m1@1'), 'model_src', 'model_tgt');
SELECT corpq.model_export('m2') = corpq.model_export('m1@1') AS imported_identical;

-- a full configuration without a preset
SELECT corpq.model_create('m_full', '{"d_model": 8, "heads": 2, "encoder_layers": 1, "decoder_layers": 1,
  "ffn_dim": 16, "activation": "gelu", "dropout": 0, "attention_dropout": 0, "activation_dropout": 0,
  "max_positions": 32, "positions": "learned", "tie_output": false, "share_embeddings": false}',
  'model_src', 'model_tgt');
SELECT name, architecture, parameters FROM corpq.models WHERE name = 'm_full';

-- the architecture variants of converted models (models/FORMAT.md) can be
-- chosen too: a post-norm model without final layer norms, SiLU, an output
-- bias, the decoder started from <pad>; its configuration keeps them, and it
-- scores and translates
SELECT corpq.model_create('m_post', '{"preset": "tiny", "norm_position": "post",
  "encoder_final_norm": false, "decoder_final_norm": false, "activation": "swish",
  "output_bias": true, "decoder_start_id": 1, "sinusoid_denominator": "half",
  "layer_norm_eps": 1e-6}', 'model_src', 'model_tgt');
SELECT config->>'norm_position' AS norm, config->'encoder_final_norm' AS enc_ln,
       config->>'activation' AS act, config->'output_bias' AS bias,
       config->'decoder_start_id' AS start, config->'layer_norm_eps' AS eps,
       config ? 'position_offset' AS default_written
FROM corpq.model_catalog WHERE name = 'm_post';
SELECT corpq.sent_prob('m_post', 'a1 b1', 'x1') BETWEEN 0 AND 1 AS scored,
       corpq.translate('m_post', 'a1 b1 c1') IS NOT NULL AS translated;
-- RMSNorm instead of layer norms (norm "rms"): no norm biases, fewer parameters
SELECT corpq.model_create('m_rms', '{"preset": "tiny", "norm": "rms"}', 'model_src', 'model_tgt');
SELECT r.config->>'norm' AS norm, l.parameters - r.parameters AS fewer
FROM corpq.model_catalog r, corpq.model_catalog l WHERE r.name = 'm_rms' AND l.name = 'm1';
SELECT corpq.sent_prob('m_rms', 'a1 b1', 'x1') BETWEEN 0 AND 1 AS scored,
       corpq.translate('m_rms', 'a1 b1 c1') IS NOT NULL AS translated;
SELECT corpq.model_drop('m_rms');
SELECT corpq.model_create('m_bad', '{"preset": "tiny", "norm": "batch"}', 'model_src', 'model_tgt');
SELECT corpq.model_create('m_bad', '{"preset": "tiny", "norm_position": "middle"}',
  'model_src', 'model_tgt');
SELECT corpq.model_create('m_bad', '{"preset": "tiny", "positions": "learned",
  "position_offset": 2}', 'model_src', 'model_tgt');
SELECT corpq.model_drop('m_post');

-- errors: names, configurations, vocabularies
SELECT corpq.model_create('m1', '{"preset": "tiny"}', 'model_src', 'model_tgt');
SELECT corpq.model_create('bad@name', '{"preset": "tiny"}', 'model_src', 'model_tgt');
SELECT corpq.model_create('m3', '{"preset": "huge"}', 'model_src', 'model_tgt');
SELECT corpq.model_create('m3', '{"preset": "tiny", "dropuot": 0.2}', 'model_src', 'model_tgt');
SELECT corpq.model_create('m3', '{"preset": "tiny", "src_vocab_size": 9}', 'model_src', 'model_tgt');
SELECT corpq.model_create('m3', '{"preset": "tiny", "heads": 3}', 'model_src', 'model_tgt');
SELECT corpq.model_create('m3', '{"d_model": 8}', 'model_src', 'model_tgt');
SELECT corpq.model_create('m3', '[1, 2]', 'model_src', 'model_tgt');
SELECT corpq.model_create('m3', '{"preset": "tiny"}', 'no_such_vocab', 'model_tgt');
SELECT corpq.model_create('m3', NULL, 'model_src', 'model_tgt');

-- errors: unknown models and versions
SELECT corpq.model_export('nope');
SELECT corpq.model_export('m1@7');
SELECT corpq.model_export('m1@0');
SELECT 'm1'::corpq.pinned_model;
SELECT 'm1@0'::corpq.pinned_model;
SELECT 'm@1@2'::corpq.pinned_model;
SELECT 'm1@3'::corpq.pinned_model::text;

-- errors: corrupted images never load (truncated, bit-flipped, random, empty)
SELECT corpq.model_import('m1', substring(corpq.model_export('m1@1') FROM 1 FOR 5000));
SELECT corpq.model_import('m1', set_byte(corpq.model_export('m1@1'), 3000, get_byte(corpq.model_export('m1@1'), 3000) # 16));
SELECT corpq.model_import('m1', set_byte(corpq.model_export('m1@1'), 50, 120));
SELECT corpq.model_import('m1', decode(repeat(md5('corpq'), 100), 'hex'));
SELECT corpq.model_import('m1', ''::bytea);
SELECT corpq.model_import('m1', 'CORPQNN'::bytea || '\x00'::bytea || decode(repeat('00', 60), 'hex'));
-- every single-byte corruption of the header and table is rejected with an ERROR
DO $$
DECLARE
  img bytea := corpq.model_export('m1@1');
  rejected int := 0;
BEGIN
  FOR i IN 0 .. 599 LOOP
    BEGIN
      PERFORM corpq.model_import('m1', set_byte(img, i, (get_byte(img, i) + 1 + i % 200) % 256));
    EXCEPTION WHEN invalid_binary_representation THEN
      rejected := rejected + 1;
    END;
  END LOOP;
  RAISE WARNING 'corrupted images rejected: %', rejected;
END $$;
-- the same with the checksum fixed up, so that the deeper checks (configuration,
-- tensor table, offsets) must catch it: an ERROR or a valid image, never a crash
SELECT corpq.model_create('m_fz', '{"d_model": 2, "heads": 1, "encoder_layers": 1, "decoder_layers": 1,
  "ffn_dim": 1, "activation": "relu", "dropout": 0, "attention_dropout": 0, "activation_dropout": 0,
  "max_positions": 4, "positions": "learned", "tie_output": false, "share_embeddings": false}',
  'model_src', 'model_tgt');
CREATE FUNCTION pg_temp.crc32(b bytea) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  t bigint[];
  c bigint;
BEGIN
  FOR n IN 0 .. 255 LOOP
    c := n;
    FOR k IN 1 .. 8 LOOP
      c := CASE WHEN c & 1 = 1 THEN (c >> 1) # 3988292384 ELSE c >> 1 END;
    END LOOP;
    t[n] := c;
  END LOOP;
  c := 4294967295;
  FOR i IN 0 .. length(b) - 1 LOOP
    c := t[(c # get_byte(b, i)) & 255] # (c >> 8);
  END LOOP;
  RETURN c # 4294967295;
END $$;
CREATE FUNCTION pg_temp.reseal(b bytea) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
  SELECT body || set_byte(set_byte(set_byte(set_byte('\x00000000'::bytea, 0, (c & 255)::int),
                1, ((c >> 8) & 255)::int), 2, ((c >> 16) & 255)::int), 3, ((c >> 24) & 255)::int)
    FROM (SELECT substring(b FROM 1 FOR length(b) - 4) AS body) s,
         LATERAL (SELECT pg_temp.crc32(body) AS c) k
$$;
SELECT pg_temp.reseal(corpq.model_export('m_fz')) = corpq.model_export('m_fz') AS crc_ok,
       length(corpq.model_export('m_fz')) AS bytes;
DO $$
DECLARE
  img bytea := corpq.model_export('m_fz');
  data_off int := get_byte(img, 24) + 256 * get_byte(img, 25);
  binary_err int := 0;
  param_err int := 0;
  accepted int := 0;
BEGIN
  FOR i IN 8 .. data_off - 1 BY 3 LOOP
    BEGIN
      PERFORM corpq.model_import('m_fz_' || i, pg_temp.reseal(set_byte(img, i, (get_byte(img, i) + 1 + i % 200) % 256)),
                                 'model_src', 'model_tgt');
      accepted := accepted + 1;
    EXCEPTION
      WHEN invalid_binary_representation THEN binary_err := binary_err + 1;
      WHEN invalid_parameter_value THEN param_err := param_err + 1;
    END;
  END LOOP;
  RAISE WARNING 'resealed corruptions of bytes 8..%: % rejected as malformed, % as an invalid configuration or vocabulary mismatch, % valid',
    data_off - 1, binary_err, param_err, accepted;
END $$;
SELECT count(*) AS valid_corruptions_imported FROM corpq.models WHERE name LIKE 'm\_fz\_%';
SELECT corpq.model_drop(name) FROM corpq.models WHERE name LIKE 'm\_fz%' ORDER BY name;

-- a valid image of another configuration
SELECT corpq.model_import('m1', corpq.model_export('m_full'));
SELECT corpq.model_import('m1', corpq.model_export('m1@1'), 'model_tgt');
SELECT corpq.model_import('m4', corpq.model_export('m1@1'));
SELECT corpq.model_import('m4', corpq.model_export('m1@1'), 'model_tgt', 'model_src');
SELECT name, latest_version FROM corpq.models ORDER BY name;

-- a vocabulary in use by a model cannot be dropped
SELECT corpq.vocab_drop('model_src');

-- sharing: every role reads and scores, only the owner's members write
CREATE ROLE regress_model_owner;
CREATE ROLE regress_model_other;
GRANT SELECT ON model_pairs TO regress_model_owner, regress_model_other;
SET ROLE regress_model_owner;
SELECT corpq.model_create('owned', '{"preset": "tiny", "max_positions": 16}', 'model_src', 'model_tgt');
SET ROLE regress_model_other;
SELECT name, latest_version, owner FROM corpq.models WHERE name = 'owned';
SELECT length(corpq.model_export('owned')) > 0 AS other_reads;
SELECT corpq.model_import('owned', corpq.model_export('owned'));
SELECT corpq.model_drop('owned');
DELETE FROM corpq.model_versions;
UPDATE corpq.model_catalog SET name = 'stolen';
UPDATE corpq.model_versions SET bytes = 1;
UPDATE corpq.model_chunks SET data = '\x00';
DELETE FROM corpq.model_chunks;
SELECT count(*) FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model WHERE c.name = 'owned';
SET ROLE regress_model_owner;
SELECT corpq.model_import('owned', corpq.model_export('m1@1'));
UPDATE corpq.model_chunks SET data = '\x00';
SELECT corpq.model_drop('owned');
RESET ROLE;
SELECT count(*) AS owned_versions_left FROM corpq.model_versions v
  LEFT JOIN corpq.model_catalog c ON c.id = v.model WHERE c.id IS NULL;
SELECT count(*) AS owned_chunks_left FROM corpq.model_chunks k
  LEFT JOIN corpq.model_versions v USING (model, version) WHERE v.model IS NULL;
DROP OWNED BY regress_model_owner, regress_model_other;
REVOKE ALL ON corpq.object_owners FROM regress_model_owner, regress_model_other;
DROP ROLE regress_model_owner, regress_model_other;

-- the backend cache: keyed by version, LRU-bounded by corpq.model_cache_mb
SELECT corpq.sent_prob('m1@1', 'a1 b1', 'x1') = corpq.sent_prob('m1_same', 'a1 b1', 'x1') AS same_weights;
SELECT model, version, bytes > 0 AS has_bytes FROM corpq.model_cache();
-- not preloaded: private copies only, each held by this backend alone
SELECT count(*) AS entries, bool_or(shared) AS any_shared, max(attach_count) AS attached
  FROM corpq.model_cache();
SET corpq.model_cache_mb = 0;
SELECT corpq.sent_prob('m2', 'a1 b1', 'x1') > 0 AS scored;
SELECT model, version FROM corpq.model_cache();
RESET corpq.model_cache_mb;

-- drop
SELECT corpq.model_drop('m_full');
SELECT corpq.model_drop('m_full');
SELECT corpq.model_drop(NULL);
SELECT name FROM corpq.models ORDER BY name;

-- leave the catalog as found (later tests list vocabularies)
SELECT corpq.model_drop(name) FROM corpq.models ORDER BY name;
SELECT corpq.vocab_drop('model_src'), corpq.vocab_drop('model_tgt');
DROP TABLE model_pairs;
SELECT count(*) AS models_left FROM corpq.model_catalog;
