-- SentencePiece segmenters (converted Marian / OPUS-MT models): spm_import,
-- pieces equal to spm_encode's, vocabularies over them, text decoded back,
-- a vocabulary document whose "spm" names the model, bad input.  The model
-- is trained here with Debian's spm_train, in this run's results/ folder.
SET client_min_messages = warning;
\set cwd `pwd`
CREATE TABLE spm_text AS
SELECT g AS id,
       (SELECT string_agg((ARRAY['the', 'house', 'of', 'children', 'tree', 'words', 'earth',
                                 'beginning', 'created', 'heavens', 'and', 'light'])[1 + (g * 7 + k * 5 + k * k) % 12],
                          ' ' ORDER BY k)
          FROM generate_series(1, 2 + g % 9) k) AS s
  FROM generate_series(1, 400) g;
\copy (SELECT s FROM spm_text ORDER BY id) TO 'results/spm_train.txt'
\! spm_train --input=results/spm_train.txt --model_prefix=results/spm_t --vocab_size=30 --model_type=unigram --num_threads=1 --minloglevel=2 > /dev/null 2>&1
\! spm_encode --model=results/spm_t.model --output_format=piece < results/spm_train.txt > results/spm_pieces.txt
SELECT corpq.spm_import('t_spm', pg_read_binary_file(:'cwd' || '/results/spm_t.model')) AS pieces;
SELECT name, version, n_merges FROM corpq.bpe_models WHERE name = 't_spm';

-- the pieces of every line are spm_encode's
CREATE TEMP TABLE ref (n serial, pieces text);
\copy ref (pieces) FROM 'results/spm_pieces.txt'
SELECT count(*) AS lines,
       count(*) FILTER (WHERE corpq.bpe_apply('t_spm', t.s) = r.pieces) AS same_pieces,
       count(*) FILTER (WHERE array_to_string(corpq.bpe_tokens('t_spm', t.s), ' ') = r.pieces) AS same_tokens
  FROM spm_text t JOIN ref r ON r.n = t.id;

-- a vocabulary of pieces; decoding gives the text back (SentencePiece's decoder)
SELECT corpq.vocab_build('t_spm_v', 'SELECT s FROM spm_text', 't_spm') > 4 AS built;
SELECT count(*) AS lines,
       count(*) FILTER (WHERE corpq.vocab_decode('t_spm_v', corpq.vocab_encode('t_spm_v', s)) = s) AS round_trip,
       count(*) FILTER (WHERE 3 = ANY (corpq.vocab_encode('t_spm_v', s))) AS with_unknown
  FROM spm_text;
-- a model over it translates into text, not pieces
SELECT corpq.model_create('t_spm_m', '{"preset": "tiny", "max_positions": 32}', 't_spm_v', 't_spm_v', 1);
SELECT position(U&'\2581' IN corpq.translate('t_spm_m', 'the house of children')) = 0 AS no_piece_marks;

-- a vocabulary document (as corpq-convert writes it) names its model in "spm"
SELECT corpq.vocab_import('t_spm_v2', (corpq.vocab_export('t_spm_v') - 'bpe') || '{"spm": "t_spm"}') > 4 AS imported;
SELECT bpe FROM corpq.vocabularies WHERE name = 't_spm_v2';
SELECT corpq.vocab_decode('t_spm_v2', corpq.vocab_encode('t_spm_v2', 'the tree of light')) AS decoded;
SELECT corpq.vocab_import('t_spm_v3', (corpq.vocab_export('t_spm_v') - 'bpe') || '{"spm": "source.spm"}');
SELECT corpq.vocab_import('t_spm_v3', corpq.vocab_export('t_spm_v') || '{"spm": "t_spm"}');
SELECT corpq.vocab_build('t_bpe_seg', 'SELECT s FROM spm_text');
SELECT corpq.bpe_import('t_bpe', 'the house');
SELECT corpq.vocab_import('t_spm_v3', (corpq.vocab_export('t_spm_v') - 'bpe') || '{"spm": "t_bpe"}');

-- bad input
SELECT corpq.spm_import('t_bad', '\x00010203'::bytea);
SELECT corpq.spm_import('t_spm', pg_read_binary_file(:'cwd' || '/results/spm_t.model'));
SELECT corpq.bpe_export('t_spm');
SELECT corpq.spm_import(NULL, '\x00'::bytea);

-- clean up: the model, the vocabularies, then the segmenter
SELECT corpq.model_drop('t_spm_m');
SELECT corpq.vocab_drop('t_spm_v'), corpq.vocab_drop('t_spm_v2'), corpq.vocab_drop('t_bpe_seg');
SELECT corpq.bpe_drop('t_spm'), corpq.bpe_drop('t_bpe');
SELECT count(*) AS spm_rows_left FROM corpq.spm_models;
