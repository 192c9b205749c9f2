-- Vocabularies: build, encode, decode, errors, sharing between roles.
SET client_min_messages = warning;

-- whitespace vocabulary (bpe NULL): specials, then count desc, ties by bytes
SELECT corpq.vocab_build('ws', $$SELECT s FROM (VALUES ('b a c'), ('b a'), (NULL), ('b <unk> a'), (''), ('z z z z')) v(s)$$);
SELECT name, bpe, size, max_size, min_count, owner = current_user::regrole AS mine FROM corpq.vocabularies;
SELECT id, token, count FROM corpq.vocabulary_tokens WHERE vocabulary = 'ws' ORDER BY id;
SELECT corpq.vocab_encode('ws', 'a b c d z'), corpq.vocab_encode('ws', ''), corpq.vocab_encode('ws', '<s> <pad>');
SELECT corpq.vocab_decode('ws', '{0,4,5,3,7,2,1}'), corpq.vocab_decode('ws', '{}');

-- max_size counts the four reserved tokens; min_count drops rare tokens
SELECT corpq.vocab_build('ws5', $$SELECT s FROM (VALUES ('b a c'), ('b a'), ('z z z z')) v(s)$$, 'whitespace', 5);
SELECT corpq.vocab_build('ws_min2', $$SELECT s FROM (VALUES ('b a c'), ('b a'), ('z z z z')) v(s)$$, NULL, 100, 2);
SELECT vocabulary, array_agg(token ORDER BY id) FROM corpq.vocabulary_tokens
  WHERE vocabulary IN ('ws5', 'ws_min2') GROUP BY vocabulary ORDER BY vocabulary;

-- with a BPE model: tokens are subwords, decode joins them back
SELECT corpq.bpe_import('vocab_codes', E'#version: 0.2\nl o\nlo w</w>\ne r</w>\n');
SELECT corpq.vocab_build('bpe_v', $$SELECT s FROM (VALUES ('low lower low'), ('lower slower')) v(s)$$, 'vocab_codes');
SELECT id, token, count FROM corpq.vocabulary_tokens WHERE vocabulary = 'bpe_v' ORDER BY id;
SELECT s, corpq.vocab_encode('bpe_v', s) AS ids,
       corpq.vocab_decode('bpe_v', corpq.vocab_encode('bpe_v', s)) AS decoded
  FROM (VALUES ('low lower'), ('slower  low'), ('lowest'), ('glow')) v(s);
SELECT corpq.vocab_decode('bpe_v', '{0,6,7,5,2}');

-- the BPE model cannot be dropped while the vocabulary uses it
SELECT corpq.bpe_drop('vocab_codes');

-- per-row use with the vocabulary changing between rows
SELECT v, corpq.vocab_encode(v, 'low lower') FROM (VALUES ('ws'), ('bpe_v'), ('ws')) t(v);

-- the same in a parallel worker
SET force_parallel_mode = on;
SELECT corpq.vocab_encode('bpe_v', 'low lower'), corpq.vocab_decode('bpe_v', '{7,5,6,4}');
RESET force_parallel_mode;

-- NULLs
SELECT corpq.vocab_encode('ws', NULL) IS NULL AS a, corpq.vocab_decode('ws', NULL) IS NULL AS b;
SELECT corpq.vocab_build(NULL, 'SELECT 1::text');
-- max_size NULL (the default) is up to 32000, without a NOTICE
SELECT corpq.vocab_build('x_null', $$SELECT 'a'$$, NULL, NULL) AS size;
SELECT max_size FROM corpq.vocabularies WHERE name = 'x_null';
SELECT corpq.vocab_drop('x_null');
SELECT corpq.vocab_decode('ws', '{4,NULL}');

-- errors
SELECT corpq.vocab_build('ws', $$SELECT 'a'$$);
SELECT corpq.vocab_build('x', $$SELECT 'a'$$, NULL, 4);
SELECT corpq.vocab_build('x', $$SELECT 'a'$$, NULL, 100, 0);
SELECT corpq.vocab_build('x', $$SELECT 'a'$$, 'no_such_bpe');
SELECT corpq.vocab_build('x', $$SELECT 'a' WHERE false$$);
SELECT corpq.vocab_build('x', $$SELECT ' '$$);
SELECT corpq.vocab_build('x', $$SELECT 1$$);
SELECT corpq.vocab_build('x', $$INSERT INTO corpq.vocabularies (name, size, max_size, min_count) VALUES ('y', 4, 5, 1) RETURNING name$$);
SELECT corpq.vocab_build('', $$SELECT 'a'$$);
SELECT corpq.vocab_encode('nope', 'a');
SELECT corpq.vocab_decode('ws', '{4,99}');
SELECT corpq.vocab_decode('ws', '{-1}');
SELECT corpq.vocab_decode('ws', '{{4},{5}}');
SELECT corpq.vocab_drop('nope');
-- the SQLSTATE of each kind of error
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $f$;
SELECT q, pg_temp.sqlstate_of(q) FROM (VALUES
    ($$SELECT corpq.vocab_encode('nope', 'a')$$),
    ($$SELECT corpq.vocab_build('ws', $q$SELECT 'a'$q$)$$),
    ($$SELECT corpq.vocab_build('x', $q$SELECT 'a'$q$, NULL, 4)$$),
    ($$SELECT corpq.vocab_decode('ws', '{99}')$$),
    ($$SELECT corpq.bpe_drop('vocab_codes')$$),
    ($$SELECT corpq.vocab_build('x', 'SELECT 1')$$)) v(q);

-- a failing build leaves no rows
SELECT corpq.vocab_build('x', $$SELECT CASE WHEN i < 1500 THEN 'a b' ELSE (1 / (i - i))::text END
                               FROM generate_series(1, 2000) i$$);
SELECT count(*) FROM corpq.vocabularies WHERE name = 'x';
SELECT count(*) FROM corpq.vocabulary_tokens WHERE vocabulary = 'x';

-- sharing: everyone reads and uses, only the owner drops
CREATE ROLE corpq_vocab_alice;
CREATE ROLE corpq_vocab_bob;
SET ROLE corpq_vocab_alice;
SELECT corpq.vocab_build('alice_v', $$SELECT 'x y y'$$, 'vocab_codes');
RESET ROLE;
SET ROLE corpq_vocab_bob;
SELECT corpq.vocab_encode('alice_v', 'y x q');
SELECT corpq.vocab_drop('alice_v');
DELETE FROM corpq.vocabulary_tokens WHERE vocabulary = 'alice_v';
UPDATE corpq.vocabulary_tokens SET token = 'q' WHERE vocabulary = 'alice_v';
INSERT INTO corpq.vocabulary_tokens VALUES ('alice_v', 7, 'q', 1);
RESET ROLE;
SELECT count(*) AS alice_tokens FROM corpq.vocabulary_tokens WHERE vocabulary = 'alice_v';
SET ROLE corpq_vocab_alice;
SELECT corpq.vocab_drop('alice_v');
RESET ROLE;
REVOKE ALL ON corpq.object_owners FROM corpq_vocab_alice;
DROP ROLE corpq_vocab_alice;
REVOKE ALL ON corpq.object_owners FROM corpq_vocab_bob;
DROP ROLE corpq_vocab_bob;

-- a vocabulary smaller than asked says so, and why (issue 54): the corpus's
-- distinct symbols, those at min_count, and what would give more; none when
-- the size asked for is reached
SET client_min_messages = notice;
SELECT corpq.vocab_build('small_ws', $$SELECT s FROM (VALUES ('b a c'), ('b a'), ('z z z z')) v(s)$$, NULL, 100);
SELECT corpq.vocab_build('small_min2', $$SELECT s FROM (VALUES ('b a c'), ('b a'), ('z z z z')) v(s)$$, NULL, 100, 2);
SELECT corpq.vocab_build('small_bpe', $$SELECT s FROM (VALUES ('low lower low'), ('lower slower')) v(s)$$, 'vocab_codes', 16000);
SELECT corpq.vocab_build('exact_ws', $$SELECT s FROM (VALUES ('b a c'), ('b a'), ('z z z z')) v(s)$$, NULL, 6);
SELECT corpq.vocab_build('default_ws', $$SELECT s FROM (VALUES ('b a c'), ('b a'), ('z z z z')) v(s)$$);
SET client_min_messages = warning;
SELECT corpq.vocab_drop(name) FROM corpq.vocabularies
 WHERE name IN ('small_ws', 'small_min2', 'small_bpe', 'exact_ws', 'default_ws') ORDER BY name;

-- drop: tokens go with the vocabulary, then the BPE model can go
SELECT corpq.vocab_drop(name) FROM corpq.vocabularies ORDER BY name;
SELECT count(*) FROM corpq.vocabulary_tokens;
SELECT corpq.bpe_drop('vocab_codes');
