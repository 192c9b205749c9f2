
-- ---------------------------------------------------------------------------
-- WordPiece segmenters (the vocab.txt of BERT / LaBSE checkpoints,
-- docs/text.md): a segmenter of the BPE catalog, a corpq.bpe_models row with
-- version 'wordpiece' (n_merges: its tokens) and its tokens and resolved
-- options here.  Same sharing rules as BPE models: all read, owners drop
-- (corpq.bpe_drop), corpq's functions write.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.wordpiece_models (
    model    text PRIMARY KEY REFERENCES corpq.bpe_models (name) ON DELETE CASCADE,
    options  jsonb NOT NULL,
    tokens   text[] NOT NULL CHECK (pg_catalog.cardinality(tokens) OPERATOR(pg_catalog.>=) 1)
);
COMMENT ON TABLE corpq.wordpiece_models IS
    'the tokens (id = array position - 1, the line of vocab.txt) and resolved options of each segmenter whose corpq.bpe_models version is ''wordpiece''';
SELECT pg_catalog.pg_extension_config_dump('corpq.wordpiece_models', '');

ALTER TABLE corpq.wordpiece_models ENABLE ROW LEVEL SECURITY;
CREATE POLICY wordpiece_models_read ON corpq.wordpiece_models FOR SELECT USING (true);
GRANT SELECT ON corpq.wordpiece_models TO PUBLIC;

CREATE FUNCTION corpq.wordpiece_import(name text, vocab text, options jsonb DEFAULT '{}')
    RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_wordpiece_import'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.wordpiece_import(text, text, jsonb) IS
    'store a BERT vocab.txt (one token per line, "##" before continuations) with tokenizer options (do_lower_case, strip_accents, tokenize_chinese_chars, max_input_chars_per_word, unk/sep/pad/cls/mask_token, variant) as WordPiece segmenter name, usable wherever a BPE name is; returns its number of tokens';
