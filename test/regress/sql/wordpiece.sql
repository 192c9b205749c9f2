-- WordPiece segmenters (BERT / LaBSE vocab.txt): wordpiece_import, pieces as
-- transformers' BertTokenizer gives them, use wherever a BPE name is
-- (bpe_apply, bpe_tokens, vocabularies and their documents), decoding
-- (vocab_decode, the same text translate returns), the copy to another
-- server, bad input, sharing and drops.
SET client_min_messages = warning;
CREATE TABLE wp_vocab AS
SELECT string_agg(t, E'\n' ORDER BY n) || E'\n' AS vocab
  FROM unnest(ARRAY['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]',
                    'the', 'house', '##s', 'un', '##want', '##ed', 'runn', '##ing', 'hello',
                    'world', 'cafe', 'caf', '##é', 'el', 'niño', 'ni', '##no', 'de', '##l',
                    ',', '.', '!', '?', '¿', '中', '文', 'a', '##a', 'b', '##b',
                    'The', 'House', 'Hello', 'World', 'H', '##ello'])
       WITH ORDINALITY AS v(t, n);
SELECT corpq.wordpiece_import('t_wp', vocab) AS tokens FROM wp_vocab;
SELECT name, version, n_merges FROM corpq.bpe_models WHERE name = 't_wp';
SELECT options, cardinality(tokens) AS tokens, tokens[2] AS id_1
  FROM corpq.wordpiece_models WHERE model = 't_wp';

-- uncased (transformers' default): lower-cased, accents stripped, punctuation
-- and CJK characters split off, unknown words whole, special tokens kept
SELECT corpq.bpe_apply('t_wp', 'The houses, unwanted RUNNING!');
SELECT corpq.bpe_tokens('t_wp', 'Hello[SEP]Café  ¿el niño?');
SELECT corpq.bpe_apply('t_wp', 'unwantedX 中文 [sep] a' || chr(173) || 'b');
SELECT corpq.bpe_apply('t_wp', repeat('a', 100)) = 'a' || repeat(' ##a', 99) AS hundred,
       corpq.bpe_apply('t_wp', repeat('a', 101)) AS hundred_and_one;
SELECT corpq.bpe_apply('t_wp', ''), corpq.bpe_tokens('t_wp', ' '), corpq.bpe_apply('t_wp', NULL);

-- cased, accents kept, slow and fast variants (NFC in the slow one only)
SELECT corpq.wordpiece_import('t_wp_cased', vocab,
                              '{"do_lower_case": false, "max_input_chars_per_word": 4}') FROM wp_vocab;
SELECT corpq.wordpiece_import('t_wp_fast', vocab,
                              '{"do_lower_case": false, "variant": "fast"}') FROM wp_vocab;
SELECT v, corpq.bpe_apply(v, 'The House caf' || U&'e\0301' || ' caf' || U&'\00e9' || ' Hello world')
  FROM unnest(ARRAY['t_wp_cased', 't_wp_fast']) v;
SELECT options FROM corpq.wordpiece_models WHERE model = 't_wp_fast';

-- vocabularies over it: ids, and text decoded as convert_tokens_to_string
CREATE TABLE wp_text (s text);
INSERT INTO wp_text VALUES ('The houses, unwanted running!'), ('Hello world.'),
    ('el niño de la casa'), ('¿Hello?');
SELECT corpq.vocab_build('t_wp_v', 'SELECT s FROM wp_text', 't_wp') AS size;
SELECT s, corpq.vocab_encode('t_wp_v', s) AS ids,
       corpq.vocab_decode('t_wp_v', corpq.vocab_encode('t_wp_v', s)) AS decoded
  FROM wp_text;
-- a vocabulary document (as corpq-convert writes it) names its model in "wordpiece"
SELECT corpq.vocab_import('t_wp_v2', (corpq.vocab_export('t_wp_v') - 'bpe') || '{"wordpiece": "t_wp"}') AS imported;
SELECT bpe FROM corpq.vocabularies WHERE name = 't_wp_v2';
SELECT corpq.vocab_decode('t_wp_v2', corpq.vocab_encode('t_wp_v2', 'Running houses'));
SELECT corpq.vocab_import('t_wp_v3', (corpq.vocab_export('t_wp_v') - 'bpe') || '{"wordpiece": "vocab.txt"}');
SELECT corpq.vocab_import('t_wp_v3', corpq.vocab_export('t_wp_v') || '{"wordpiece": "t_wp"}');
SELECT corpq.vocab_import('t_wp_v3', (corpq.vocab_export('t_wp_v') - 'bpe') || '{"wordpiece": "t_wp", "spm": "t_wp"}');
SELECT corpq.vocab_import('t_wp_v3', (corpq.vocab_export('t_wp_v') - 'bpe') || '{"wordpiece": 7}');
SELECT corpq.bpe_import('t_bpe', 'the house');
SELECT corpq.vocab_import('t_wp_v3', (corpq.vocab_export('t_wp_v') - 'bpe') || '{"wordpiece": "t_bpe"}');
SELECT corpq.vocab_import('t_wp_v3', (corpq.vocab_export('t_wp_v') - 'bpe') || '{"spm": "t_wp"}');
-- "bpe" (what vocab_export writes) names any segmenter
SELECT corpq.vocab_import('t_wp_v3', corpq.vocab_export('t_wp_v')) AS imported;

-- the copy to another server: the stored tokens and options import back to
-- the same segmenter (same fingerprint)
SELECT corpq.wordpiece_import('t_wp_copy', array_to_string(tokens, E'\n') || E'\n', options)
  FROM corpq.wordpiece_models WHERE model = 't_wp';
SELECT count(DISTINCT fingerprint) AS fingerprints FROM corpq.catalog_fingerprints
 WHERE kind = 'bpe' AND name IN ('t_wp', 't_wp_copy');
SELECT count(DISTINCT fingerprint) AS fingerprints FROM corpq.catalog_fingerprints
 WHERE kind = 'bpe' AND name IN ('t_wp', 't_wp_cased');

-- vocab.txt as Python reads it: CRLF and CR line ends, empty lines keep their ids
SELECT corpq.wordpiece_import('t_wp_lines', E'[UNK]\r\nx\ry\n\n##z\nx');
SELECT tokens FROM corpq.wordpiece_models WHERE model = 't_wp_lines';
SELECT corpq.bpe_apply('t_wp_lines', 'xz y w');

-- a hostile vocabulary (a token of 1024 bytes) makes long words slow to
-- match, never impossible to cancel
SELECT corpq.wordpiece_import('t_wp_slow', E'[UNK]\na\n##a\n' || repeat('b', 1024),
                              '{"max_input_chars_per_word": 1000}');
SET statement_timeout = '1s';
SELECT length(corpq.bpe_apply('t_wp_slow', repeat(repeat('a', 1000) || ' ', 5000)));
RESET statement_timeout;

-- bad input
SELECT corpq.wordpiece_import('t_bad', E'a\nb\n');
SELECT corpq.wordpiece_import('t_bad', E'[UNK]\n' || repeat('x', 1025));
SELECT corpq.wordpiece_import('t_bad', '[UNK]', '{"lowercase": true}');
SELECT corpq.wordpiece_import('t_bad', '[UNK]', '{"do_lower_case": "yes"}');
SELECT corpq.wordpiece_import('t_bad', '[UNK]', '{"max_input_chars_per_word": 0}');
SELECT corpq.wordpiece_import('t_bad', '[UNK]', '{"variant": "medium"}');
SELECT corpq.wordpiece_import('t_bad', '[UNK]', '{"unk_token": ""}');
SELECT corpq.wordpiece_import('t_bad', '[UNK]', '{"sep_token": "[ SEP]"}');
SELECT corpq.wordpiece_import('t_bad', '[UNK]', '[1]');
SELECT corpq.wordpiece_import('t_wp', '[UNK]');
SELECT corpq.wordpiece_import('whitespace', '[UNK]');
SELECT corpq.wordpiece_import(NULL, '[UNK]');
SELECT corpq.wordpiece_import('t_bad', NULL);
SELECT corpq.wordpiece_import('t_null_options', '[UNK]', NULL) AS tokens;
SELECT corpq.bpe_export('t_wp');
SELECT count(*) AS bad_rows FROM corpq.bpe_models WHERE name = 't_bad';

-- sharing: everyone uses, only the owner drops; no direct writes
CREATE ROLE corpq_wp_alice;
CREATE ROLE corpq_wp_bob;
SET ROLE corpq_wp_alice;
SELECT corpq.wordpiece_import('alice_wp', E'[UNK]\nok\n', '{"do_lower_case": false}');
RESET ROLE;
SET ROLE corpq_wp_bob;
SELECT corpq.bpe_apply('alice_wp', 'ok OK');
SELECT corpq.bpe_drop('alice_wp');
UPDATE corpq.wordpiece_models SET tokens = '{[UNK],OK}' WHERE model = 'alice_wp';
INSERT INTO corpq.wordpiece_models VALUES ('t_wp_lines', '{}', '{x}');
RESET ROLE;
SET ROLE corpq_wp_alice;
SELECT corpq.bpe_drop('alice_wp');
RESET ROLE;
REVOKE ALL ON corpq.object_owners FROM corpq_wp_alice;
DROP ROLE corpq_wp_alice;
REVOKE ALL ON corpq.object_owners FROM corpq_wp_bob;
DROP ROLE corpq_wp_bob;

-- a long text: segmentation's work space (code points, UTF-16, about 20 bytes
-- per input byte) is bounded by corpq.max_batch_mb before it is taken, and a
-- long text's scratch is not kept; the same text fits a larger bound
SET corpq.max_batch_mb = 16;
SELECT corpq.bpe_apply('t_wp', repeat('İ', 2000000)) IS NULL AS refused;
SELECT length(corpq.bpe_apply('t_wp', repeat('İa ', 30000))) AS pieces_length;
SET corpq.max_batch_mb = 512;
SELECT length(corpq.bpe_apply('t_wp', repeat('İ', 2000000))) AS unknown_word;
RESET corpq.max_batch_mb;

-- drops: not while a vocabulary uses it; the tokens go with the model
SELECT corpq.bpe_drop('t_wp');
SELECT corpq.vocab_drop(v) FROM unnest(ARRAY['t_wp_v', 't_wp_v2', 't_wp_v3']) v;
SELECT corpq.bpe_drop(n)
  FROM unnest(ARRAY['t_wp', 't_wp_cased', 't_wp_fast', 't_wp_copy', 't_wp_lines', 't_wp_slow', 't_null_options', 't_bpe']) n;
SELECT count(*) AS wordpiece_rows_left FROM corpq.wordpiece_models;
DROP TABLE wp_vocab, wp_text;
