
-- ---------------------------------------------------------------------------
-- Transformer models (extension/nn, models/FORMAT.md) with immutable
-- versions.  corpq.model_catalog holds one row per model name (architecture,
-- vocabularies, owner); corpq.model_versions one row per weight image (its
-- length and checksum), corpq.model_chunks the image's bytes.  A
-- write never changes a version: it inserts the next number the name has
-- never issued (corpq.issued_versions).  A model name resolves to its latest
-- version, 'name@N' to version N, which means one weight image for ever.
-- Same sharing rules as the other catalogs: every role reads, members of the
-- owner role write through corpq's functions.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.model_catalog (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL UNIQUE CHECK (name OPERATOR(pg_catalog.<>) '' AND pg_catalog.strpos(name, '@') OPERATOR(pg_catalog.=) 0),
    owner      regrole NOT NULL DEFAULT current_user::regrole,
    config     jsonb NOT NULL,
    parameters bigint NOT NULL CHECK (parameters OPERATOR(pg_catalog.>) 0),
    src_vocab  text NOT NULL REFERENCES corpq.vocabularies (name),
    tgt_vocab  text NOT NULL REFERENCES corpq.vocabularies (name),
    created    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated    timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE corpq.model_catalog IS
    'transformer models: name (no @), owner, full configuration, parameter count, source and target vocabularies; weights are in corpq.model_versions and corpq.model_chunks';

CREATE TABLE corpq.model_versions (
    model    bigint NOT NULL REFERENCES corpq.model_catalog (id) ON DELETE CASCADE,
    version  int NOT NULL CHECK (version OPERATOR(pg_catalog.>=) 1),
    bytes    bigint NOT NULL CHECK (bytes OPERATOR(pg_catalog.>) 0),
    checksum bigint NOT NULL,
    created  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    source   text NOT NULL CHECK (source OPERATOR(pg_catalog.=) ANY (ARRAY['create', 'import', 'checkpoint', 'quantize']::pg_catalog.text[])),
    step     bigint CHECK (step OPERATOR(pg_catalog.>=) 0),
    metrics  jsonb,
    best     boolean NOT NULL DEFAULT false,
    precision text NOT NULL DEFAULT 'float32' CHECK (precision OPERATOR(pg_catalog.=) ANY (ARRAY['float32', 'int8']::pg_catalog.text[])),
    PRIMARY KEY (model, version)
);
COMMENT ON TABLE corpq.model_versions IS
    'immutable weight images (models/FORMAT.md) of every model version: length in bytes, checksum = the image''s CRC-32 trailer; the bytes are in corpq.model_chunks';

-- A version's image, chunk by chunk (extension/pg/model/model.h,
-- CORPQ_MODEL_CHUNK: 16 MB each but the last), so that no image is one
-- datum: no 1 GB ceiling, reads and writes a chunk at a time, and pg_dump
-- writes one row of 32 MB of hex text at most.  The chunks go with their
-- version (and the version with its model).
CREATE TABLE corpq.model_chunks (
    model   bigint NOT NULL,
    version int NOT NULL,
    chunk   int NOT NULL CHECK (chunk OPERATOR(pg_catalog.>=) 0),
    data    bytea NOT NULL CHECK (pg_catalog.length(data) OPERATOR(pg_catalog.>) 0),
    PRIMARY KEY (model, version, chunk),
    FOREIGN KEY (model, version) REFERENCES corpq.model_versions (model, version) ON DELETE CASCADE
);
-- Weights are float32 noise to a compressor and are read whole: keep them
-- out of line and uncompressed, so that loading is one sequential copy (and
-- a slice, the header, reads only its pages).
ALTER TABLE corpq.model_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
COMMENT ON TABLE corpq.model_chunks IS
    'the bytes of every model version''s weight image, in chunks numbered from 0 (16 MB each but the last); their CRC-32 is the version''s checksum';

-- Version identity: every name of a catalog with versions (models, ANTAP
-- models, classifiers) this database has used, and the last version number it issued.  A
-- row outlives the drop, so a model created again under the name numbers its
-- versions after the dropped ones: 'name@N' (a pin in an index, a view, a
-- job's record) never comes to mean other weights, it becomes an error.
-- Written by corpq_catalog_issue_version and the drop only
-- (extension/pg/base/catalog.h).
CREATE TABLE corpq.issued_versions (
    catalog      text NOT NULL CHECK (catalog OPERATOR(pg_catalog.=) ANY (ARRAY['corpq.model_catalog', 'corpq.antap_models', 'corpq.classifier_catalog']::pg_catalog.text[])),
    name         text NOT NULL CHECK (name OPERATOR(pg_catalog.<>) '' AND pg_catalog.strpos(name, '@') OPERATOR(pg_catalog.=) 0),
    last_version int NOT NULL CHECK (last_version OPERATOR(pg_catalog.>=) 1),
    PRIMARY KEY (catalog, name)
);
COMMENT ON TABLE corpq.issued_versions IS
    'every name used in this database by a catalog with versions (models, ANTAP models, classifiers) and the last version number it issued; kept after the drop, so that a version number is never given to other weights';

SELECT pg_catalog.pg_extension_config_dump('corpq.model_catalog', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.model_versions', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.model_chunks', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.model_catalog_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.issued_versions', '');

-- Everyone reads; only corpq's functions and training jobs write (versions
-- are immutable: a write inserts the name's next unissued number).
ALTER TABLE corpq.model_catalog ENABLE ROW LEVEL SECURITY;
CREATE POLICY model_catalog_read ON corpq.model_catalog FOR SELECT USING (true);
ALTER TABLE corpq.model_versions ENABLE ROW LEVEL SECURITY;
CREATE POLICY model_versions_read ON corpq.model_versions FOR SELECT USING (true);
ALTER TABLE corpq.model_chunks ENABLE ROW LEVEL SECURITY;
CREATE POLICY model_chunks_read ON corpq.model_chunks FOR SELECT USING (true);
ALTER TABLE corpq.issued_versions ENABLE ROW LEVEL SECURITY;
CREATE POLICY issued_versions_read ON corpq.issued_versions FOR SELECT USING (true);
GRANT SELECT ON corpq.model_catalog, corpq.model_versions, corpq.model_chunks, corpq.issued_versions TO PUBLIC;

CREATE VIEW corpq.models WITH (security_invoker = true) AS
SELECT c.name,
       pg_catalog.format('transformer d_model=%s heads=%s layers=%s+%s ffn=%s %s',
                         c.config->>'d_model', c.config->>'heads',
                         c.config->>'encoder_layers', c.config->>'decoder_layers',
                         c.config->>'ffn_dim', c.config->>'activation') AS architecture,
       c.parameters,
       v.bytes AS size,
       c.src_vocab, c.tgt_vocab,
       v.version AS latest_version,
       (SELECT pg_catalog.count(*) FROM corpq.model_versions w WHERE w.model = c.id)::int AS versions,
       c.created, c.updated, c.owner,
       v.precision
  FROM corpq.model_catalog c
  LEFT JOIN LATERAL (SELECT w.version, w.bytes, w.precision FROM corpq.model_versions w
                      WHERE w.model = c.id ORDER BY w.version DESC LIMIT 1) v ON true;
COMMENT ON VIEW corpq.models IS
    'one row per model: architecture, parameter count, size in bytes of the latest version, vocabularies, version count, owner, the latest version''s precision (float32, or int8 from model_quantize; corpq.model_versions has each version''s)';
GRANT SELECT ON corpq.models TO PUBLIC;

-- A model version by name: 'name@N', checked for syntax only.  Functions
-- taking it are IMMUTABLE, since version N's weights never change.
CREATE TYPE corpq.pinned_model;
CREATE FUNCTION corpq.pinned_model_in(cstring) RETURNS corpq.pinned_model
    AS 'MODULE_PATHNAME', 'corpq_pinned_model_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.pinned_model_out(corpq.pinned_model) RETURNS cstring
    AS 'MODULE_PATHNAME', 'corpq_pinned_model_out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.pinned_model_recv(internal) RETURNS corpq.pinned_model
    AS 'MODULE_PATHNAME', 'corpq_pinned_model_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.pinned_model_send(corpq.pinned_model) RETURNS bytea
    AS 'MODULE_PATHNAME', 'corpq_pinned_model_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE TYPE corpq.pinned_model (
    INPUT = corpq.pinned_model_in, OUTPUT = corpq.pinned_model_out,
    RECEIVE = corpq.pinned_model_recv, SEND = corpq.pinned_model_send,
    INTERNALLENGTH = VARIABLE, STORAGE = extended, COLLATABLE = false
);
COMMENT ON TYPE corpq.pinned_model IS
    'a model version written name@N (N >= 1); scoring functions on it are IMMUTABLE';
CREATE CAST (text AS corpq.pinned_model) WITH INOUT;
CREATE CAST (corpq.pinned_model AS text) WITH INOUT AS ASSIGNMENT;

CREATE FUNCTION corpq.model_create(name text, config jsonb, src_vocab text, tgt_vocab text,
                                   seed bigint DEFAULT 0)
    RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_model_create'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.model_create(text, jsonb, text, text, bigint) IS
    'create model name: config is {"preset": "tiny"|"small"|"base"} plus overrides of any configuration key, or every key without a preset; vocabulary sizes come from src_vocab and tgt_vocab; random initialisation from seed; returns the version written (1)';

CREATE FUNCTION corpq.model_import(name text, weights bytea,
                                   src_vocab text DEFAULT NULL, tgt_vocab text DEFAULT NULL,
                                   options jsonb DEFAULT '{}')
    RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_model_import'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.model_import(text, bytea, text, text, jsonb) IS
    'validate a weight image and store it as the next version of model name (same configuration required), or create the model when it does not exist (then src_vocab and tgt_vocab are required); options {"precision": "int8"} (with model_quantize''s weight_bits and embedding_precision) store the int8 image model_quantize would make of a float32 image instead, quantized as the image streams; returns the version written';

CREATE FUNCTION corpq.model_export(name text) RETURNS bytea
    AS 'MODULE_PATHNAME', 'corpq_model_export'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.model_export(text) IS
    'the weight image of model name (latest version) or name@N, under 1 GB (a bytea''s limit; corpq.model_export_lo for any size)';
CREATE FUNCTION corpq.model_export(model corpq.pinned_model) RETURNS bytea
    AS 'MODULE_PATHNAME', 'corpq_model_export_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.model_export(corpq.pinned_model) IS
    'the weight image of model version name@N';

CREATE FUNCTION corpq.model_import_lo(name text, image oid,
                                      src_vocab text DEFAULT NULL, tgt_vocab text DEFAULT NULL,
                                      options jsonb DEFAULT '{}')
    RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_model_import_lo'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.model_import_lo(text, oid, text, text, jsonb) IS
    'model_import from large object image (of any size; read with the caller''s privileges, in 16 MB pieces): the header and configuration are checked before anything is written, the length and CRC-32 over the whole stream before the version is committed, the tensors when the version first loads; options as model_import''s ({"precision": "int8"}: quantized chunk by chunk, the float32 image never whole in memory); returns the version written';

CREATE FUNCTION corpq.model_export_lo(model text) RETURNS oid
    AS 'MODULE_PATHNAME', 'corpq_model_export_lo'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.model_export_lo(text) IS
    'the weight image of model (latest version) or name@N, of any size, written in 16 MB pieces into a new large object owned by the caller; returns its OID';

CREATE FUNCTION corpq.model_quantize(model text, options jsonb DEFAULT '{}') RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_model_quantize'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.model_quantize(text, jsonb) IS
    'store an int8 variant of model (its latest version, or name@N) as the model''s next version and return its number: inference quantizes every linear layer and the output projection per output row, activations per row (a sentence''s result never depends on its batch); embeddings, layer norms and attention stay float32; train() refuses to continue from it';

CREATE FUNCTION corpq.model_drop(name text) RETURNS void
    AS 'MODULE_PATHNAME', 'corpq_model_drop'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.model_drop(text) IS
    'drop a model you own with all its versions';

CREATE FUNCTION corpq.model_cache(OUT model text, OUT version int, OUT bytes bigint,
                                  OUT uses bigint, OUT shared boolean, OUT attach_count bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'corpq_model_cache'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.model_cache() IS
    'the models this backend uses, most recently used first: private copies (corpq.model_cache_mb) and shared copies it is attached to, then the server''s other shared copies of this database (corpq.shared_model_cache_mb, uses 0); attach_count: the backends attached to a shared copy';

CREATE FUNCTION corpq.shared_vocab_cache(OUT vocabulary text, OUT tokens int, OUT bytes bigint,
                                         OUT attach_count bigint, OUT kind text)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'corpq_shared_vocab_cache'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.shared_vocab_cache() IS
    'the vocabularies'' token tables (kind tokens) and WordPiece segmenters (kind wordpiece, vocabulary: the segmenter''s name) the server holds once in shared memory for the models of this database (corpq.shared_model_cache_mb, with corpq in shared_preload_libraries), most recently used first: tokens, bytes, attach_count (the backends, parallel workers and jobs reading it now)';
