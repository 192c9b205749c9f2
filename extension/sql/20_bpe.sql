
-- ---------------------------------------------------------------------------
-- BPE models (subword-nmt compatible).  Every role can read and use every
-- model; only members of a model's owner role (and superusers) can drop it.  The name 'whitespace' is reserved: wherever a BPE name
-- is accepted it selects whitespace-only segmentation.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.bpe_models (
    name          text PRIMARY KEY CHECK (name OPERATOR(pg_catalog.<>) '' AND name OPERATOR(pg_catalog.<>) 'whitespace'),
    owner         regrole NOT NULL DEFAULT current_user::regrole,
    version       text NOT NULL DEFAULT '0.2' CHECK (version OPERATOR(pg_catalog.=) ANY (ARRAY['0.1', '0.2', 'sentencepiece', 'wordpiece']::pg_catalog.text[])),
    n_merges      int NOT NULL CHECK (n_merges OPERATOR(pg_catalog.>=) 0),
    min_frequency int CHECK (min_frequency OPERATOR(pg_catalog.>=) 1),
    created       timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE corpq.bpe_models IS
    'BPE models: subword-nmt codes version, merge count, min_frequency (NULL when imported), owner';

CREATE TABLE corpq.bpe_merges (
    model        text NOT NULL REFERENCES corpq.bpe_models (name) ON DELETE CASCADE,
    rank         int NOT NULL CHECK (rank OPERATOR(pg_catalog.>=) 0),
    left_symbol  text NOT NULL CHECK (left_symbol OPERATOR(pg_catalog.<>) '' AND pg_catalog.strpos(left_symbol, ' ') OPERATOR(pg_catalog.=) 0),
    right_symbol text NOT NULL CHECK (right_symbol OPERATOR(pg_catalog.<>) '' AND pg_catalog.strpos(right_symbol, ' ') OPERATOR(pg_catalog.=) 0),
    PRIMARY KEY (model, rank)
);
COMMENT ON TABLE corpq.bpe_merges IS
    'the merges of each BPE model in rank order (0 = first learned); symbols keep subword-nmt''s </w> suffix';

-- A SentencePiece model (converted Marian / OPUS-MT models, models/CONVERT.md)
-- is a segmenter of the same catalog: a corpq.bpe_models row with version
-- 'sentencepiece' (n_merges: its pieces) and its serialized model here.
CREATE TABLE corpq.spm_models (
    model  text PRIMARY KEY REFERENCES corpq.bpe_models (name) ON DELETE CASCADE,
    proto  bytea NOT NULL
);
COMMENT ON TABLE corpq.spm_models IS
    'the serialized SentencePiece ModelProto of each segmenter whose corpq.bpe_models version is ''sentencepiece''';
ALTER TABLE corpq.spm_models ALTER COLUMN proto SET STORAGE EXTERNAL;
SELECT pg_catalog.pg_extension_config_dump('corpq.bpe_models', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.bpe_merges', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.spm_models', '');

-- Everyone reads; rows change only through corpq's functions, which check
-- the caller's membership in the owner role and write as the extension's
-- owner (extension/pg/base/internal_sql.h).
ALTER TABLE corpq.bpe_models ENABLE ROW LEVEL SECURITY;
CREATE POLICY bpe_models_read ON corpq.bpe_models FOR SELECT USING (true);
ALTER TABLE corpq.bpe_merges ENABLE ROW LEVEL SECURITY;
CREATE POLICY bpe_merges_read ON corpq.bpe_merges FOR SELECT USING (true);
ALTER TABLE corpq.spm_models ENABLE ROW LEVEL SECURITY;
CREATE POLICY spm_models_read ON corpq.spm_models FOR SELECT USING (true);
GRANT SELECT ON corpq.bpe_models, corpq.bpe_merges, corpq.spm_models TO PUBLIC;

CREATE FUNCTION corpq.bpe_learn(name text, corpus text, merges int, min_frequency int DEFAULT 2)
    RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_bpe_learn'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.bpe_learn(text, text, int, int) IS
    'learn up to merges BPE merges like subword-nmt learn_bpe.py (codes 0.2) from corpus, a SELECT returning one text column (NULL rows skipped), and store them as model name; returns the number learned';

CREATE FUNCTION corpq.bpe_import(name text, codes text) RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_bpe_import'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.bpe_import(text, text) IS
    'store a subword-nmt codes file (version 0.2 header, or 0.1 without one) as model name; returns the number of merges';

CREATE FUNCTION corpq.bpe_export(name text) RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_bpe_export'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.bpe_export(text) IS
    'the subword-nmt codes file of a BPE model (header for version 0.2, one merge per line)';

CREATE FUNCTION corpq.bpe_apply(name text, sentence text) RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_bpe_apply'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.bpe_apply(text, text) IS
    'segment a sentence like subword-nmt apply_bpe.py ("sub@@ word"); name ''whitespace'' only normalises whitespace';

CREATE FUNCTION corpq.bpe_tokens(name text, sentence text) RETURNS text[]
    AS 'MODULE_PATHNAME', 'corpq_bpe_tokens'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.bpe_tokens(text, text) IS
    'the subwords of a sentence (all but the last of each word end in @@); name ''whitespace'' splits on whitespace';

CREATE FUNCTION corpq.spm_import(name text, model bytea) RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_spm_import'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.spm_import(text, bytea) IS
    'store a SentencePiece model (the bytes of a .model / .spm file) as segmenter name, usable wherever a BPE name is (vocabularies, bpe_apply, bpe_tokens, CAVs); returns its number of pieces';

CREATE FUNCTION corpq.bpe_drop(name text) RETURNS void
    AS 'MODULE_PATHNAME', 'corpq_bpe_drop'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.bpe_drop(text) IS
    'drop a BPE model you own (fails while a vocabulary uses it)';
