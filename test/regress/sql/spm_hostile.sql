-- SentencePiece models as hostile input (issue 41, routes 1 and 6).  A real
-- model is trained here with Debian's spm_train (unigram, nmt_nfkc: it has a
-- normalizer charsmap) and test/integration/spm_mutate.py makes the issue's
-- hostile models from it.  Before corpq checked models, each of these killed
-- the backend (and so every session) or returned text that is not UTF-8:
--   huge_piece       a piece of 300 KB: the import crashed (the library's
--                    trie builder recursed once per byte)
--   trie_units       the charsmap's trie units altered: the first
--                    bpe_tokens crashed
--   strings_cut      the normalized strings cut to 1 byte: imported, then
--                    another role's bpe_tokens crashed
--   strings_invalid  U+FF21 normalized to the byte 0xA7 instead of "A":
--                    bpe_tokens returned text that is not UTF-8 (route 6)
-- alice imports, bob uses.  The same models stored before the check (planted
-- here as the old spm_import stored them) are refused at every load.  The
-- refusals' details are shown with their numbers as N (they depend on the
-- library's built-in charsmap); test/unit/test_spm_check.c checks them.
SET client_min_messages = warning;
\set cwd `pwd`
-- a backend that dies makes the postmaster restart every other process
-- (pg_postmaster_start_time() stays): the checkpointer's start time changes
SELECT backend_start AS started FROM pg_stat_activity WHERE backend_type = 'checkpointer' \gset
CREATE ROLE corpq_spmh_alice;
CREATE ROLE corpq_spmh_bob;
CREATE TABLE spmh_text AS
SELECT (SELECT string_agg((ARRAY['the', 'house', 'of', 'children', 'tree', 'words', 'earth',
                                 'beginning', 'created', 'heavens', 'and', 'light'])[1 + (g * 7 + k * 5 + k * k) % 12],
                          ' ' ORDER BY k)
          FROM generate_series(1, 2 + g % 9) k) AS s
  FROM generate_series(1, 400) g;
\copy spmh_text TO 'results/spmh_train.txt'
\! spm_train --input=results/spmh_train.txt --model_prefix=results/spmh --vocab_size=30 --model_type=unigram --num_threads=1 --minloglevel=2 > /dev/null 2>&1
\! /usr/bin/python3 test/integration/spm_mutate.py routes results/spmh.model results/spmh
\! echo 'ＡＢＣ ﬁ ① ｶﾞ ㍿ ﷺ' | spm_encode --model=results/spmh.model --output_format=piece > results/spmh_ref.txt
CREATE TABLE spmh_files (name text PRIMARY KEY, proto bytea NOT NULL);
INSERT INTO spmh_files VALUES ('real', pg_read_binary_file(:'cwd' || '/results/spmh.model'));
INSERT INTO spmh_files
SELECT f, pg_read_binary_file(:'cwd' || '/results/spmh/' || f || '.spm')
  FROM unnest(ARRAY['huge_piece', 'trie_units', 'strings_cut', 'strings_invalid']) f;
GRANT SELECT ON spmh_files TO corpq_spmh_alice;
CREATE TABLE spmh_ref (pieces text);
\copy spmh_ref FROM 'results/spmh_ref.txt'
GRANT SELECT ON spmh_ref TO corpq_spmh_bob;

-- a statement's outcome: its result, or its error with the detail's numbers as N
CREATE FUNCTION spmh_try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
    m text;
    d text;
BEGIN
    EXECUTE q INTO r;
    RETURN 'ok: ' || r;
EXCEPTION WHEN others THEN
    GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || m || coalesce(' / ' || regexp_replace(d, '(?<!UTF-)[0-9]+', 'N', 'g'), '');
END $$;
GRANT EXECUTE ON FUNCTION spmh_try(text) TO corpq_spmh_alice, corpq_spmh_bob;

-- ---- alice imports: the real model, then each hostile one
SET ROLE corpq_spmh_alice;
SELECT corpq.spm_import('spmh_real', proto) AS pieces FROM spmh_files WHERE name = 'real';
SELECT name, spmh_try(format('SELECT corpq.spm_import(%L, proto) FROM spmh_files WHERE name = %L',
                             'spmh_' || name, name)) AS import
  FROM spmh_files WHERE name <> 'real' ORDER BY name;
RESET ROLE;
SELECT name FROM corpq.bpe_models WHERE name LIKE 'spmh%' ORDER BY name;

-- ---- the same models stored before the check
INSERT INTO corpq.bpe_models (name, version, n_merges, owner)
SELECT 'spmh_old_' || name, 'sentencepiece', 30, 'corpq_spmh_alice' FROM spmh_files WHERE name <> 'real';
INSERT INTO corpq.spm_models (model, proto)
SELECT 'spmh_old_' || name, proto FROM spmh_files WHERE name <> 'real';

-- ---- bob uses them: the real model segments as spm_encode does; every
-- stored hostile model is refused when it is loaded, by each function
SET ROLE corpq_spmh_bob;
SELECT array_to_string(corpq.bpe_tokens('spmh_real', 'ＡＢＣ ﬁ ① ｶﾞ ㍿ ﷺ'), ' ') = pieces AS same_as_spm_encode
  FROM spmh_ref;
SELECT name, spmh_try(format('SELECT corpq.bpe_tokens(%L, %L)', 'spmh_old_' || name, 'ＡＢＣ ﬁ ① ｶﾞ ㍿ ﷺ')) AS bpe_tokens
  FROM (VALUES ('huge_piece'), ('strings_cut'), ('strings_invalid'), ('trie_units')) f(name) ORDER BY name;
SELECT spmh_try($$SELECT corpq.bpe_apply('spmh_old_strings_cut', 'ＡＢＣ ﬁ ① ｶﾞ ㍿ ﷺ')$$) AS bpe_apply;
SELECT spmh_try($$SELECT corpq.bpe_apply('spmh_old_strings_invalid', 'ＡＢＣ')$$) AS bpe_apply;
RESET ROLE;
-- as the error reads, with its hint for the owner
SELECT corpq.bpe_tokens('spmh_old_huge_piece', 'ＡＢＣ');

-- no backend died: the server never reinitialized
SELECT backend_start = :'started' AS no_restart FROM pg_stat_activity WHERE backend_type = 'checkpointer';

-- ---- clean up
SET ROLE corpq_spmh_alice;
SELECT corpq.bpe_drop(name) FROM corpq.bpe_models WHERE name LIKE 'spmh%' ORDER BY name;
RESET ROLE;
DROP FUNCTION spmh_try(text);
DROP TABLE spmh_files, spmh_ref, spmh_text;
REVOKE ALL ON corpq.object_owners FROM corpq_spmh_alice;
DROP ROLE corpq_spmh_alice;
DROP ROLE corpq_spmh_bob;
