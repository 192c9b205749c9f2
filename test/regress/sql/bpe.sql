-- BPE models: import, apply, export, learn, errors, sharing between roles.
SET client_min_messages = warning;

-- a hand-written codes file (subword-nmt version 0.2)
SELECT corpq.bpe_import('hand', E'#version: 0.2\nl o\nlo w</w>\ne r</w>\nn e\nne w\nnew er</w>\n\u00f1 o</w>\n');
SELECT name, version, n_merges, min_frequency, owner = current_user::regrole AS mine
  FROM corpq.bpe_models;
SELECT rank, left_symbol, right_symbol FROM corpq.bpe_merges WHERE model = 'hand' ORDER BY rank;

-- segmentations, worked by hand: "lo w</w>" only at the end of a word
SELECT s, corpq.bpe_apply('hand', s) AS applied, corpq.bpe_tokens('hand', s) AS tokens
  FROM (VALUES ('low'), ('lower'), ('newer'), ('lowest'), ('a'), ('xyz'),
               ('  low   lower '), ('ni' || U&'\00f1' || 'o a' || U&'\00f1' || 'o'), (''),
               (U&'\65e5\672c\8a9e')) v(s);

-- export is the same file byte for byte
SELECT corpq.bpe_export('hand') = E'#version: 0.2\nl o\nlo w</w>\ne r</w>\nn e\nne w\nnew er</w>\n\u00f1 o</w>\n' AS same;

-- codes version 0.1 (no header, "</w>" its own symbol) round-trips and applies
SELECT corpq.bpe_import('v01', E'l o\nlo w\nlow </w>\ne r\ner </w>\n');
SELECT corpq.bpe_export('v01') = E'l o\nlo w\nlow </w>\ne r\ner </w>\n' AS same;
SELECT corpq.bpe_apply('v01', 'low lower lo loe');

-- whitespace segmentation under the reserved name
SELECT corpq.bpe_apply('whitespace', E' a  b\tc '), corpq.bpe_tokens('whitespace', 'a b');

-- learning on a VALUES corpus (NULL rows skipped): the classic example
-- low x5, lower x2, newest x6, widest x3 (ties go to the greater pair)
SELECT corpq.bpe_learn('sennrich', $$
    SELECT s FROM (VALUES ('low low low low low'), ('lower lower'), (NULL),
                          ('newest newest newest newest newest newest'),
                          ('widest widest widest')) v(s) $$, 100, 2);
SELECT corpq.bpe_export('sennrich');
SELECT n_merges, min_frequency FROM corpq.bpe_models WHERE name = 'sennrich';
SELECT corpq.bpe_apply('sennrich', 'lowest newer wider');
SELECT corpq.bpe_learn('sennrich3', $$SELECT 'low low low lower lower newest widest'$$, 3);
SELECT corpq.bpe_export('sennrich3');
-- varchar columns work, merges = 0 learns nothing
SELECT corpq.bpe_learn('zero', $$SELECT 'a b'::varchar$$, 0);
SELECT corpq.bpe_export('zero');

-- per-row use in one query, with the name changing between rows
SELECT m, corpq.bpe_apply(m, 'lower lowest') FROM (VALUES ('hand'), ('sennrich'), ('hand'), ('whitespace')) v(m);

-- the same in a parallel worker (the catalog is read through SPI there)
SET force_parallel_mode = on;
SELECT corpq.bpe_apply('sennrich', 'lowest newer wider'), corpq.bpe_tokens('hand', 'lower');
RESET force_parallel_mode;

-- NULLs: STRICT functions return NULL, writers refuse
SELECT corpq.bpe_apply('hand', NULL) IS NULL AS null_in_null_out, corpq.bpe_apply(NULL, 'x') IS NULL AS null_name;
SELECT corpq.bpe_learn(NULL, 'SELECT 1::text', 1);
SELECT corpq.bpe_import('n', NULL);

-- errors
SELECT corpq.bpe_import('hand', E'#version: 0.2\na b\n');
SELECT corpq.bpe_learn('hand', $$SELECT 'a b'$$, 10);
SELECT corpq.bpe_apply('nope', 'x');
SELECT corpq.bpe_import('bad', E'#version: 0.2\na b\nc d e\n');
SELECT corpq.bpe_import('bad', E'a b\n\nc d\n');
SELECT corpq.bpe_import('bad', '');
SELECT corpq.bpe_import('bad', E'#version: 0.3\na b\n');
SELECT corpq.bpe_import('whitespace', E'a b\n');
SELECT corpq.bpe_import('', E'a b\n');
SELECT corpq.bpe_learn('bad', $$SELECT 'a b'$$, -1);
SELECT corpq.bpe_learn('bad', $$SELECT 'a b'$$, 10, 0);
SELECT corpq.bpe_learn('bad', $$SELECT 'a b' WHERE false$$, 10);
SELECT corpq.bpe_learn('bad', $$SELECT NULL::text$$, 10);
SELECT corpq.bpe_learn('bad', $$SELECT 1$$, 10);
SELECT corpq.bpe_learn('bad', $$SELECT 'a', 'b'$$, 10);
SELECT corpq.bpe_learn('bad', $$DELETE FROM corpq.bpe_models RETURNING name$$, 10);
SELECT corpq.bpe_learn('bad', $$WITH d AS (DELETE FROM corpq.bpe_models RETURNING name) SELECT name FROM d$$, 10);
SELECT corpq.bpe_learn('bad', $$SELECT s FROM no_such_table$$, 10);
SELECT corpq.bpe_export('whitespace');
SELECT corpq.bpe_drop('nope');
SELECT corpq.bpe_drop('whitespace');
-- the SQLSTATE of each kind of error
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $f$;
SELECT q, pg_temp.sqlstate_of(q) FROM (VALUES
    ($$SELECT corpq.bpe_apply('nope', 'x')$$),
    ($$SELECT corpq.bpe_import('hand', E'a b\n')$$),
    ($$SELECT corpq.bpe_import('bad', E'a b c\n')$$),
    ($$SELECT corpq.bpe_import('whitespace', E'a b\n')$$),
    ($$SELECT corpq.bpe_learn('bad', 'SELECT 1', 10)$$),
    ($$SELECT corpq.bpe_learn('bad', 'DELETE FROM corpq.bpe_models RETURNING name', 10)$$),
    ($$SELECT corpq.bpe_learn('bad', $q$SELECT ''$q$, 10)$$),
    ($$SELECT corpq.bpe_learn('bad', $q$SELECT 'a'$q$, -1)$$),
    ($$SELECT corpq.bpe_learn(NULL, $q$SELECT 'a'$q$, 1)$$)) v(q);

-- a failing learn (error raised by the corpus query midway) leaves no rows
SELECT corpq.bpe_learn('bad', $$SELECT CASE WHEN i < 1500 THEN 'ab ab' ELSE (1 / (i - i))::text END
                                FROM generate_series(1, 2000) i$$, 10);
SELECT count(*) FROM corpq.bpe_models WHERE name = 'bad';
SELECT count(*) FROM corpq.bpe_merges WHERE model = 'bad';

-- cancelling (here by statement_timeout) while the corpus streams leaves no rows
SET statement_timeout = '100ms';
SELECT corpq.bpe_learn('bad', $$SELECT pg_catalog.md5(i::text) || ' ' || i FROM generate_series(1, 5000000) i$$, 10);
RESET statement_timeout;
SELECT count(*) FROM corpq.bpe_models WHERE name = 'bad';

-- the caller's transaction: a rolled back import leaves nothing
BEGIN;
SELECT corpq.bpe_import('rolled', E'a b\n');
ROLLBACK;
SELECT count(*) FROM corpq.bpe_models WHERE name = 'rolled';

-- sharing: everyone reads and uses, only the owner drops or replaces
CREATE ROLE corpq_bpe_alice;
CREATE ROLE corpq_bpe_bob;
SET ROLE corpq_bpe_alice;
SELECT corpq.bpe_import('alice_codes', E'#version: 0.2\na b\nab c</w>\n');
RESET ROLE;
SET ROLE corpq_bpe_bob;
SELECT corpq.bpe_apply('alice_codes', 'abc abd');
SELECT owner FROM corpq.bpe_models WHERE name = 'alice_codes';
SELECT corpq.bpe_drop('alice_codes');
DELETE FROM corpq.bpe_merges WHERE model = 'alice_codes';
UPDATE corpq.bpe_merges SET right_symbol = 'x' WHERE model = 'alice_codes';
INSERT INTO corpq.bpe_merges VALUES ('alice_codes', 2, 'x', 'y');
INSERT INTO corpq.bpe_models (name, owner, n_merges) VALUES ('forged', 'corpq_bpe_alice', 0);
SELECT corpq.bpe_import('alice_codes', E'x y\n');
SELECT corpq.bpe_import('bob_codes', E'a b\n');
RESET ROLE;
SELECT count(*) AS alice_merges FROM corpq.bpe_merges WHERE model = 'alice_codes';
SET ROLE corpq_bpe_alice;
SELECT corpq.bpe_drop('bob_codes');
SELECT corpq.bpe_drop('alice_codes');
RESET ROLE;
-- a member of the owner role may drop
GRANT corpq_bpe_bob TO corpq_bpe_alice;
SET ROLE corpq_bpe_alice;
SELECT corpq.bpe_drop('bob_codes');
RESET ROLE;
SELECT name FROM corpq.bpe_models ORDER BY name;
SELECT count(*) FROM corpq.bpe_merges WHERE model IN ('alice_codes', 'bob_codes');
REVOKE ALL ON corpq.object_owners FROM corpq_bpe_alice;
DROP ROLE corpq_bpe_alice;
REVOKE ALL ON corpq.object_owners FROM corpq_bpe_bob;
DROP ROLE corpq_bpe_bob;

-- many models: the error lists the first ten names
SELECT corpq.bpe_import('m' || i, E'a b\n') FROM generate_series(10, 21) i;
SELECT corpq.bpe_apply('nope', 'x');
SELECT count(*) FROM (SELECT corpq.bpe_drop(name) FROM corpq.bpe_models) d;
