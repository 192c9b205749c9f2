-- Quantized on the way in (issue 53, item 2): model_import and
-- model_import_lo with {"precision": "int8"} store the int8 image that
-- model_quantize makes of the same float32 image, byte for byte (the same
-- checksum, the same export), under each of its options; a translation model
-- and an encoder; the large object is quantized chunk by chunk.  Bad input:
-- quantization options without int8, an image that is int8 already, a
-- damaged or truncated stream: an error, and no model or version written.
SET client_min_messages = warning;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE d text; h text;
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    RETURN regexp_replace(SQLERRM || coalesce(' -- ' || nullif(d, ''), '') || coalesce(' -- ' || nullif(h, ''), ''),
                          'large object [0-9]+', 'large object N');
END $f$;
-- the checksum of model@version
CREATE FUNCTION pg_temp.sum(m text, v int) RETURNS bigint LANGUAGE sql AS $f$
    SELECT checksum FROM corpq.model_versions w JOIN corpq.model_catalog c ON c.id = w.model
     WHERE c.name = m AND w.version = v $f$;

CREATE TABLE qi_pairs AS
SELECT g AS id, 'a' || (g % 7) || ' b' || (g % 5) AS src, 'x' || (g % 5) || ' y' || (g % 7) AS tgt
  FROM generate_series(1, 40) g;
SELECT corpq.vocab_build('qi_src', 'SELECT src FROM qi_pairs') > 0 AS src_vocab;
SELECT corpq.vocab_build('qi_tgt', 'SELECT tgt FROM qi_pairs') > 0 AS tgt_vocab;
-- untied: the output projection is a code tensor of its own
SELECT corpq.model_create('qi', '{"preset": "tiny", "max_positions": 16, "tie_output": false}',
                          'qi_src', 'qi_tgt', 5) AS v1;
SELECT corpq.model_export('qi@1') AS f32 \gset

-- model_quantize under each option, and the import with the same options
SELECT o AS opts, corpq.model_quantize('qi@1', o::jsonb) AS quantized
  FROM (VALUES ('{}'), ('{"weight_bits": 7}'), ('{"embedding_precision": "float32"}')) t(o);
SELECT corpq.model_import('qi', :'f32', NULL, NULL, '{"precision": "int8"}') AS imported_int8,
       corpq.model_import('qi', :'f32', NULL, NULL, '{"precision": "int8", "weight_bits": 7}') AS imported_7,
       corpq.model_import('qi', :'f32', NULL, NULL,
                          '{"precision": "int8", "embedding_precision": "float32"}') AS imported_f32_embed;
SELECT pg_temp.sum('qi', 5) = pg_temp.sum('qi', 2) AS same_checksum_default,
       pg_temp.sum('qi', 6) = pg_temp.sum('qi', 3) AS same_checksum_7bit,
       pg_temp.sum('qi', 7) = pg_temp.sum('qi', 4) AS same_checksum_f32_embed,
       pg_temp.sum('qi', 5) <> pg_temp.sum('qi', 6) AS options_differ,
       corpq.model_export('qi@5') = corpq.model_export('qi@2') AS same_bytes;
SELECT version, source, precision, metrics FROM corpq.model_versions w JOIN corpq.model_catalog c ON c.id = w.model
 WHERE c.name = 'qi' AND version IN (2, 5) ORDER BY version;
SELECT corpq.sent_prob('qi@5', 'a1 b1', 'x1 y1') = corpq.sent_prob('qi@2', 'a1 b1', 'x1 y1') AS scores_same,
       corpq.sent_prob('qi@5', 'a1 b1', 'x1 y1') <> corpq.sent_prob('qi@1', 'a1 b1', 'x1 y1') AS int8_differs;
-- an explicit float32 precision is the plain import
SELECT corpq.model_import('qi', :'f32', NULL, NULL, '{"precision": "float32"}') AS plain;
SELECT pg_temp.sum('qi', 8) = pg_temp.sum('qi', 1) AS plain_same_checksum,
       (SELECT precision FROM corpq.model_versions w JOIN corpq.model_catalog c ON c.id = w.model
         WHERE c.name = 'qi' AND version = 8) AS plain_precision;

-- a new model created from the float32 image, stored int8: its catalog holds the float32 architecture
SELECT corpq.model_import('qi_new', :'f32', 'qi_src', 'qi_tgt', '{"precision": "int8"}') AS created;
SELECT pg_temp.sum('qi_new', 1) = pg_temp.sum('qi', 5) AS created_same_checksum,
       m.precision, c.config ? 'precision' AS catalog_has_precision
  FROM corpq.models m JOIN corpq.model_catalog c ON c.name = m.name WHERE m.name = 'qi_new';

-- ---- from a large object, chunk by chunk ----
SELECT lo_from_bytea(0, :'f32') AS lo \gset
SELECT corpq.model_import_lo('qi', :lo, NULL, NULL, '{"precision": "int8", "weight_bits": 7}') AS lo_version;
SELECT pg_temp.sum('qi', 9) = pg_temp.sum('qi', 3) AS lo_same_checksum;
SELECT corpq.model_import_lo('qi', :lo) AS lo_plain;
SELECT pg_temp.sum('qi', 10) = pg_temp.sum('qi', 1) AS lo_plain_same;

-- ---- an encoder with a pooler (int8 embeddings) ----
SELECT corpq.vocab_build('qi_joint', 'SELECT src FROM qi_pairs UNION ALL SELECT tgt FROM qi_pairs') > 0 AS joint;
SELECT corpq.model_create('qi_enc', '{"preset": "tiny", "kind": "encoder", "pooling": "cls", "pooler": true, "max_positions": 16}',
                          'qi_joint', 'qi_joint', 3) AS enc;
SELECT corpq.model_quantize('qi_enc@1') AS enc_quantized;
SELECT corpq.model_import('qi_enc', corpq.model_export('qi_enc@1'), NULL, NULL, '{"precision": "int8"}') AS enc_imported;
SELECT pg_temp.sum('qi_enc', 3) = pg_temp.sum('qi_enc', 2) AS enc_same_checksum,
       corpq.embed('qi_enc@3', 'a1 b1') = corpq.embed('qi_enc@2', 'a1 b1') AS enc_same_vector;

-- ---- bad input ----
SELECT pg_temp.err($q$SELECT corpq.model_import('qi', corpq.model_export('qi@1'), NULL, NULL, '{"weight_bits": 7}')$q$);
SELECT pg_temp.err($q$SELECT corpq.model_import('qi', corpq.model_export('qi@1'), NULL, NULL, '{"precision": "int4"}')$q$);
SELECT pg_temp.err($q$SELECT corpq.model_import('qi', corpq.model_export('qi@2'), NULL, NULL, '{"precision": "int8"}')$q$);
-- a flipped byte in the data: the checksum, once every byte has passed
SELECT pg_temp.err(format('SELECT corpq.model_import(%L, %L::bytea, NULL, NULL, %L)', 'qi',
       set_byte(:'f32'::bytea, length(:'f32'::bytea) - 100, get_byte(:'f32'::bytea, length(:'f32'::bytea) - 100) # 1),
       '{"precision": "int8"}'));
-- the same into a new model: the model it created is rolled back with it
SELECT pg_temp.err(format('SELECT corpq.model_import(%L, %L::bytea, %L, %L, %L)', 'qi_flip',
       set_byte(:'f32'::bytea, length(:'f32'::bytea) - 100, get_byte(:'f32'::bytea, length(:'f32'::bytea) - 100) # 1),
       'qi_src', 'qi_tgt', '{"precision": "int8"}'));
SELECT count(*) AS flip_models FROM corpq.model_catalog WHERE name = 'qi_flip';
-- a truncated large object
SELECT lo_from_bytea(0, substr(:'f32'::bytea, 1, length(:'f32'::bytea) - 1000)) AS lo_cut \gset
SELECT pg_temp.err(format('SELECT corpq.model_import_lo(%L, %s, NULL, NULL, %L)', 'qi', :lo_cut, '{"precision": "int8"}'));
-- the same into a new model: nothing is created
SELECT pg_temp.err(format('SELECT corpq.model_import_lo(%L, %s, %L, %L, %L)', 'qi_cut', :lo_cut, 'qi_src', 'qi_tgt', '{"precision": "int8"}'));
SELECT count(*) AS cut_models FROM corpq.model_catalog WHERE name = 'qi_cut';
SELECT max(version) AS still_latest FROM corpq.model_versions w JOIN corpq.model_catalog c ON c.id = w.model WHERE c.name = 'qi';
SELECT lo_unlink(:lo), lo_unlink(:lo_cut);

SELECT corpq.model_drop('qi'), corpq.model_drop('qi_new'), corpq.model_drop('qi_enc');
SELECT corpq.vocab_drop('qi_src'), corpq.vocab_drop('qi_tgt'), corpq.vocab_drop('qi_joint');
