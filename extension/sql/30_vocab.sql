
-- ---------------------------------------------------------------------------
-- Vocabularies: token ids with fairseq's reserved <s> = 0, <pad> = 1,
-- </s> = 2, <unk> = 3, then tokens by descending count (ties by bytes).
-- corpq.vocabulary_tokens lists every vocabulary's tokens.  Same sharing
-- rules as BPE models: all read, owners drop, corpq's functions write.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.vocabularies (
    name       text PRIMARY KEY CHECK (name OPERATOR(pg_catalog.<>) ''),
    owner      regrole NOT NULL DEFAULT current_user::regrole,
    bpe        text REFERENCES corpq.bpe_models (name),
    size       int NOT NULL CHECK (size OPERATOR(pg_catalog.>=) 4),
    max_size   int NOT NULL CHECK (max_size OPERATOR(pg_catalog.>=) 5),
    min_count  int NOT NULL CHECK (min_count OPERATOR(pg_catalog.>=) 1),
    created    timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE corpq.vocabularies IS
    'vocabularies: the BPE model segmenting their text (NULL = whitespace), size and build parameters, owner';
COMMENT ON COLUMN corpq.vocabularies.bpe IS
    'BPE model name, NULL for whitespace segmentation';

CREATE TABLE corpq.vocabulary_tokens (
    vocabulary text NOT NULL REFERENCES corpq.vocabularies (name) ON DELETE CASCADE,
    id         int NOT NULL CHECK (id OPERATOR(pg_catalog.>=) 0),
    token      text NOT NULL,
    count      bigint NOT NULL CHECK (count OPERATOR(pg_catalog.>=) 0),
    PRIMARY KEY (vocabulary, id),
    UNIQUE (vocabulary, token)
);
COMMENT ON TABLE corpq.vocabulary_tokens IS
    'every token of every vocabulary with its id and corpus count (0 for the reserved tokens)';

SELECT pg_catalog.pg_extension_config_dump('corpq.vocabularies', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.vocabulary_tokens', '');

-- Everyone reads; rows change only through corpq's functions (as for BPE).
ALTER TABLE corpq.vocabularies ENABLE ROW LEVEL SECURITY;
CREATE POLICY vocabularies_read ON corpq.vocabularies FOR SELECT USING (true);
ALTER TABLE corpq.vocabulary_tokens ENABLE ROW LEVEL SECURITY;
CREATE POLICY vocabulary_tokens_read ON corpq.vocabulary_tokens FOR SELECT USING (true);
GRANT SELECT ON corpq.vocabularies, corpq.vocabulary_tokens TO PUBLIC;

CREATE FUNCTION corpq.vocab_build(name text, corpus text, bpe text DEFAULT NULL,
                                  max_size int DEFAULT NULL, min_count int DEFAULT 1)
    RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_vocab_build'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.vocab_build(text, text, text, int, int) IS
    'count the tokens of corpus (a SELECT returning one text column) segmented with BPE model bpe (NULL or ''whitespace'' = whitespace) and store vocabulary name: the 4 reserved tokens, then the max_size - 4 most frequent tokens with count >= min_count (max_size NULL: up to 32000); returns its size, with a NOTICE saying why when it is smaller than a max_size given';

CREATE FUNCTION corpq.vocab_encode(vocab text, sentence text) RETURNS int4[]
    AS 'MODULE_PATHNAME', 'corpq_vocab_encode'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.vocab_encode(text, text) IS
    'token ids of a sentence segmented with the vocabulary''s BPE; unknown tokens are 3 (<unk>), no <s> or </s> added';

CREATE FUNCTION corpq.vocab_decode(vocab text, ids int4[]) RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_vocab_decode'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.vocab_decode(text, int4[]) IS
    'the text of token ids: tokens joined by spaces with @@ continuations removed; <s>, <pad>, </s> skipped, <unk> kept';

CREATE FUNCTION corpq.vocab_drop(name text) RETURNS void
    AS 'MODULE_PATHNAME', 'corpq_vocab_drop'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.vocab_drop(text) IS
    'drop a vocabulary you own';

-- Copies between servers (docs/scaling.md): the same ids everywhere.
CREATE FUNCTION corpq.vocab_export(name text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'corpq_vocab_export'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.vocab_export(text) IS
    'a vocabulary as a JSON document {"bpe", "max_size", "min_count", "tokens" (in id order), "counts"} for corpq.vocab_import on another server';

CREATE FUNCTION corpq.vocab_import(name text, vocabulary jsonb) RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_vocab_import'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.vocab_import(text, jsonb) IS
    'store a document of corpq.vocab_export as vocabulary name, owned by you, with the same ids (its BPE model must exist here); returns its size';
