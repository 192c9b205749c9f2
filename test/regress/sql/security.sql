-- Security (issue 18): every probe made as an attacker, with two ordinary
-- login roles, alice (the victim) and bob (the attacker).  Each case fails if
-- its hole reopens.  The restart-based escalations (forged running job,
-- hostile database search_path, planted checkpoints) are in
-- test/integration/security_restart.sh.  Jobs run as the role whose session
-- submits them, so the roles log in (pg_virtualenv's password).
SET client_min_messages = warning;
SELECT current_user AS su \gset
\set regress_password unused
\getenv regress_password PGPASSWORD
CREATE ROLE corpq_sec_alice LOGIN PASSWORD :'regress_password';
CREATE ROLE corpq_sec_bob LOGIN PASSWORD :'regress_password';
CREATE SCHEMA sec_data;
GRANT USAGE ON SCHEMA sec_data TO corpq_sec_alice;
CREATE TABLE sec_data.pairs AS
SELECT g AS id,
       (ARRAY['the', 'a'])[1 + g % 2] || ' ' || (ARRAY['dog', 'cat', 'house'])[1 + g % 3] AS src,
       (ARRAY['el', 'un'])[1 + g % 2] || ' ' || (ARRAY['perro', 'gato', 'casa'])[1 + g % 3] AS tgt
  FROM generate_series(1, 300) g;
GRANT SELECT ON sec_data.pairs TO corpq_sec_alice;
-- a corpus query that takes 300 x 20 ms: a job that stays running for a while
CREATE VIEW sec_data.slow_pairs AS
SELECT src, tgt FROM sec_data.pairs WHERE pg_sleep(0.02) IS NOT NULL;
GRANT SELECT ON sec_data.slow_pairs TO corpq_sec_alice;
SELECT format('host=localhost port=%s dbname=%s user=corpq_sec_alice password=%s',
              current_setting('port'), current_database(), :'regress_password') AS alice_conn \gset
SELECT format('host=localhost port=%s dbname=%s user=corpq_sec_bob password=%s',
              current_setting('port'), current_database(), :'regress_password') AS bob_conn \gset

-- ---- writes only through corpq: no INSERT, UPDATE, DELETE or TRUNCATE on any
-- corpq table, nor a sequence, for an ordinary role; SELECT on all
SELECT c.relname, p.priv
  FROM pg_class c CROSS JOIN unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) p(priv)
 WHERE c.relnamespace = 'corpq'::regnamespace AND c.relkind IN ('r', 'p')
   AND has_table_privilege('corpq_sec_bob', c.oid, p.priv);
SELECT c.relname FROM pg_class c
 WHERE c.relnamespace = 'corpq'::regnamespace
   AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege('corpq_sec_bob', c.oid, 'USAGE') END;
SELECT count(*) > 10 AS tables, bool_and(has_table_privilege('corpq_sec_bob', c.oid, 'SELECT')) AS all_readable
  FROM pg_class c WHERE c.relnamespace = 'corpq'::regnamespace AND c.relkind = 'r';
-- no SECURITY DEFINER function lacks a fixed search_path
SELECT p.oid::regprocedure FROM pg_proc p
 WHERE p.pronamespace = 'corpq'::regnamespace AND p.prosecdef
   AND NOT coalesce(array_to_string(p.proconfig, ',') LIKE '%search_path=%', false);

-- ---- alice's objects; her corpus query resolves with her session's search_path
\c - corpq_sec_alice
SET search_path = sec_data, public;
SELECT corpq.lexicon_train('sec_lex', 'SELECT src, tgt FROM pairs', '{"iterations": 2}') AS lex_job \gset
SELECT corpq.vocab_build('sec_src', 'SELECT src FROM pairs');
SELECT corpq.vocab_build('sec_tgt', 'SELECT tgt FROM pairs');
SELECT corpq.model_create('sec_m', '{"preset": "tiny", "d_model": 8, "heads": 2, "ffn_dim": 16,
                          "encoder_layers": 1, "decoder_layers": 1, "max_positions": 16}',
                          'sec_src', 'sec_tgt', 7);
SELECT corpq.train('sec_m', 'SELECT src, tgt FROM pairs ORDER BY id', NULL,
                   '{"steps": 4, "checkpoint_every": 2, "keep_checkpoints": 5, "max_tokens": 256, "warmup": 1}') AS train_job \gset
SELECT corpq.job_wait(:lex_job, '120 s') AS lexicon, corpq.job_wait(:train_job, '120 s') AS training;
SELECT kind, state, error, owner, session_role, search_path FROM corpq.jobs ORDER BY id;
SELECT name, owner FROM corpq.lexicons WHERE name LIKE 'sec%';
SELECT name, owner FROM corpq.model_catalog WHERE name LIKE 'sec%';
-- (7) now() advances in workers: every transaction of a job has its own
SELECT bool_and(finished > started) AS finished_after_started FROM corpq.jobs;
SELECT count(*) AS checkpoints, count(DISTINCT created) AS distinct_created
  FROM corpq.train_checkpoints WHERE job = :train_job;
SELECT count(*) AS versions, count(DISTINCT v.created) AS distinct_created
  FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
 WHERE c.name = 'sec_m' AND v.source = 'checkpoint';
SELECT bool_and(owner = 'corpq_sec_alice'::regrole) AS rows_carry_the_jobs_owner
  FROM (SELECT owner FROM corpq.train_log WHERE job = :train_job
        UNION ALL SELECT owner FROM corpq.train_checkpoints WHERE job = :train_job) o;
-- she can write her objects only through corpq too
UPDATE corpq.jobs SET state = 'queued' WHERE id = :lex_job;
DELETE FROM corpq.train_log WHERE job = :train_job;
-- her ANTAP model: the job's queries resolve with her search_path, its rows carry her
SELECT corpq.antap_train('sec_ap',
  $$SELECT t.token, c.c FROM (SELECT corpq.cav_accumulate(src, tgt || ' w' || id % 12) AS c FROM pairs) c,
                             corpq.cav_tokens(c.c) t$$,
  $$SELECT 'w' || k, k / 12.0 FROM generate_series(0, 11) k
    UNION ALL VALUES ('el', 0.5), ('un', 0.5), ('perro', 0.2), ('gato', 0.3), ('casa', 0.4)$$,
  '{"pool_rows": 4, "pool_cols": 4, "seq_len": 2, "d_model": 4, "heads": 1, "ffn_dim": 4, "max_epochs": 5}')
  AS ap_job \gset
SELECT corpq.job_wait(:ap_job, '120 s') AS antap;
SELECT a.name, a.owner, v.version, (v.result->>'tokens')::int AS tokens
  FROM corpq.antap_models a JOIN corpq.antap_versions v ON v.model = a.id;
UPDATE corpq.antap_tokens SET accuracy = 1;

-- ---- bob, the attacker
\c - corpq_sec_bob
SET client_min_messages = warning;
-- (1) forging a job row: a running lexicon job with the superuser as its
-- login role, which recovery would relaunch as the superuser
INSERT INTO corpq.jobs (kind, owner, session_role, state, args)
VALUES ('lexicon_train', 'corpq_sec_bob', :'su', 'running',
        '{"name": "x", "corpus": "SELECT src, tgt FROM pairs", "options": {}}');
INSERT INTO corpq.jobs (kind, args) VALUES ('lexicon_train', '{}');
UPDATE corpq.jobs SET session_role = :'su';
-- other roles' jobs are invisible to him and beyond his reach
SELECT count(*) AS visible_jobs FROM corpq.jobs;
\set VERBOSITY sqlstate
SELECT corpq.job_cancel(:lex_job);
SELECT corpq.job_wait(:lex_job);
\set VERBOSITY default
-- (3) poisoned resume: no checkpoint rows under any job
INSERT INTO corpq.train_checkpoints (job, step, model, version, state, cursor, owner)
SELECT :train_job, 99, model, version, '\x00', '{"prob": [0, 0]}', 'corpq_sec_alice'
  FROM corpq.model_versions LIMIT 1;
-- (4) sabotage and probing: no log rows under alice's job (no duplicate keys to learn from)
INSERT INTO corpq.train_log (job, step, epoch, lr, tokens, owner)
VALUES (:train_job, 5, 0, 0, 0, 'corpq_sec_alice');
INSERT INTO corpq.train_sampling (job, step, corpus, probability, owner)
VALUES (:train_job, 5, 'x', 1, 'corpq_sec_alice');
SELECT count(*) AS visible_log_rows FROM corpq.train_log;
-- the shared catalog: readable, not writable
SELECT count(*) > 0 AS reads_models FROM corpq.model_versions;
UPDATE corpq.model_catalog SET owner = 'corpq_sec_bob';
UPDATE corpq.model_versions SET best = true;
DELETE FROM corpq.lexicon_dictionary;
UPDATE corpq.vocabulary_tokens SET token = 'x' WHERE id = 5;
INSERT INTO corpq.bpe_models (name, owner, n_merges) VALUES ('forged', 'corpq_sec_alice', 0);
-- nor through corpq's functions
SELECT corpq.model_import('sec_m', corpq.model_export('sec_m@1'));
SELECT corpq.model_drop('sec_m');
SELECT corpq.vocab_drop('sec_src');
SELECT corpq.lexicon_drop('sec_lex');
SELECT corpq.train('sec_m', 'SELECT 1::text, 1::text');
SELECT corpq.antap_train('sec_ap', 'SELECT 1::text, NULL::corpq.cav', 'SELECT 1::text, 1.0');
SELECT corpq.antap_drop('sec_ap');
UPDATE corpq.antap_versions SET result = '{}';
DELETE FROM corpq.antap_models;
SELECT count(*) > 0 AS reads_antap_tokens FROM corpq.antap_tokens;
-- (10) his model on her vocabularies: allowed (vocabularies are shared)...
SELECT corpq.model_create('bob_m', '{"preset": "tiny", "d_model": 8, "heads": 2, "ffn_dim": 16,
                          "encoder_layers": 1, "decoder_layers": 1, "max_positions": 16}',
                          'sec_src', 'sec_tgt');
SELECT name, owner FROM corpq.model_catalog WHERE name IN ('sec_m', 'bob_m') ORDER BY name;

-- ---- (10) ...and her vocab_drop names it instead of a raw foreign-key error
\c - corpq_sec_alice
SELECT corpq.vocab_drop('sec_src');

-- ---- (6) corpq.max_jobs counts every role's jobs
\c - :su
SET client_min_messages = warning;
ALTER ROLE corpq_sec_bob SET corpq.max_jobs = 1;
CREATE EXTENSION dblink;
SELECT job AS slow_job FROM dblink(:'alice_conn',
  $$SELECT corpq.lexicon_train('sec_slow', 'SELECT src, tgt FROM sec_data.slow_pairs')$$) AS t(job bigint) \gset
\c - corpq_sec_bob
SELECT corpq.lexicon_train('bob_lex', 'SELECT 1::text, 1::text');

-- ---- (5) job_wait judges a worker from the live process array: a job started
-- after this transaction's pg_stat_activity snapshot is not reported failed
\c - :su
SET client_min_messages = warning;
SELECT corpq.job_cancel(:slow_job);
SELECT corpq.job_wait(:slow_job, '60 s');
BEGIN;
SELECT count(*) >= 0 AS snapshot_taken FROM pg_stat_activity;
SELECT job AS late_job FROM dblink(:'alice_conn',
  $$SELECT corpq.lexicon_train('sec_late', 'SELECT src, tgt FROM sec_data.slow_pairs')$$) AS t(job bigint) \gset
SELECT corpq.job_wait(:late_job, '2 s') AS late_job_state;
SELECT state FROM corpq.jobs WHERE id = :late_job;
COMMIT;
SELECT corpq.job_cancel(:late_job);
SELECT corpq.job_wait(:late_job, '60 s');
SELECT state, error FROM corpq.jobs WHERE id = :late_job;

-- ---- a superuser session cannot start a job as an ordinary role (the job's
-- code could RESET ROLE back to the superuser)
SET ROLE corpq_sec_alice;
\set VERBOSITY terse
SELECT corpq.lexicon_train('sec_as_alice', 'SELECT src, tgt FROM sec_data.pairs');
SELECT corpq.train('sec_m', 'SELECT src, tgt FROM sec_data.pairs');
\set VERBOSITY default
RESET ROLE;

-- ---- a login with CREATEROLE under SET ROLE lends nothing to the role's job:
-- the job runs as the role and cannot RESET ROLE back to the login (issue 31)
CREATE ROLE corpq_sec_admin LOGIN CREATEROLE PASSWORD :'regress_password';
GRANT corpq_sec_bob TO corpq_sec_admin;
CREATE SCHEMA sec_bob AUTHORIZATION corpq_sec_bob;
\c - corpq_sec_admin
SET ROLE corpq_sec_bob;
CREATE FUNCTION sec_bob.esc() RETURNS TABLE (src text, tgt text) LANGUAGE plpgsql AS $$
BEGIN
    RESET ROLE;
    ALTER ROLE corpq_sec_bob CREATEROLE;
    RETURN QUERY SELECT 'a b'::text, 'c d'::text;
END $$;
SELECT corpq.lexicon_train('sec_esc', 'SELECT * FROM sec_bob.esc()') AS esc_job \gset
SELECT corpq.job_wait(:esc_job, '60 s') AS esc_state;
SELECT error FROM corpq.jobs WHERE id = :esc_job;
RESET ROLE;
\c - :su
SET client_min_messages = warning;
SELECT rolcreaterole AS bob_gained_createrole FROM pg_roles WHERE rolname = 'corpq_sec_bob';
DROP SCHEMA sec_bob CASCADE;
REVOKE ALL ON corpq.object_owners FROM corpq_sec_admin;
DROP ROLE corpq_sec_admin;

-- ---- a role that owns corpq objects or jobs cannot be dropped by accident
-- (issue 31): its rows would be left to a dangling OID
CREATE ROLE corpq_sec_carol;
SET ROLE corpq_sec_carol;
SELECT corpq.vocab_build('sec_carol', 'SELECT ''a b c''') AS carol_vocab;
RESET ROLE;
DROP ROLE corpq_sec_carol;
SELECT corpq.vocab_drop('sec_carol');
REVOKE ALL ON corpq.object_owners FROM corpq_sec_carol;
DROP ROLE corpq_sec_carol;

-- ---- (2) corpq's own statements ignore a hostile search_path: here every
-- operator, function and view they could resolve unqualified raises
CREATE SCHEMA sec_evil;
CREATE FUNCTION sec_evil.boom() RETURNS boolean LANGUAGE plpgsql AS
$$BEGIN RAISE EXCEPTION 'hijacked by sec_evil'; END$$;
CREATE FUNCTION sec_evil.eq_text(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT sec_evil.boom()';
CREATE FUNCTION sec_evil.eq_int8(bigint, bigint) RETURNS boolean LANGUAGE sql AS 'SELECT sec_evil.boom()';
CREATE FUNCTION sec_evil.eq_int4(integer, integer) RETURNS boolean LANGUAGE sql AS 'SELECT sec_evil.boom()';
CREATE OPERATOR sec_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = sec_evil.eq_text);
CREATE OPERATOR sec_evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = sec_evil.eq_int8);
CREATE OPERATOR sec_evil.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = sec_evil.eq_int4);
CREATE FUNCTION sec_evil.now() RETURNS timestamptz LANGUAGE sql AS 'SELECT CASE WHEN sec_evil.boom() THEN NULL::timestamptz END';
CREATE FUNCTION sec_evil.pg_postmaster_start_time() RETURNS timestamptz LANGUAGE sql AS 'SELECT CASE WHEN sec_evil.boom() THEN NULL::timestamptz END';
CREATE FUNCTION sec_evil.pg_backend_pid() RETURNS integer LANGUAGE sql AS 'SELECT CASE WHEN sec_evil.boom() THEN 0 END';
CREATE VIEW sec_evil.pg_stat_activity AS SELECT 0 AS pid, 'corpq job'::text AS backend_type WHERE sec_evil.boom();
SET search_path = sec_evil, pg_catalog, public;
SELECT 'a'::text = 'a'::text;
SELECT corpq.job_wait(:lex_job) AS wait, corpq.job_cancel(:lex_job) AS cancel;
SELECT corpq.vocab_encode('sec_src', 'the dog') AS encode, corpq.bpe_tokens('whitespace', 'a b') AS tokens;
SELECT corpq.sent_prob('sec_m', 'the dog', 'el perro') > 0 AS scored,
       corpq.align('sec_lex', 'the dog', 'el perro') <> '' AS aligned;
SELECT corpq.vocab_import('sec_copy', corpq.vocab_export('sec_tgt')) AS imported_size;
SELECT corpq.vocab_drop('sec_copy');
SELECT corpq.model_import('sec_su_m', corpq.model_export('sec_m@1'), 'sec_src', 'sec_tgt') AS model_version;
SELECT corpq.model_drop('sec_su_m');
SELECT corpq.lexicon_drop('sec_no_such_lexicon');
SELECT corpq.antap_predict('sec_ap', c, 'perro') IS NOT NULL AS antap_predicted,
       (SELECT count(*) FROM corpq.antap_eval('sec_ap')) AS antap_eval_rows
  FROM (SELECT corpq.cav_accumulate(src, tgt) AS c FROM sec_data.pairs) p;
SELECT corpq.antap_drop('sec_no_such_antap');
RESET search_path;
DROP SCHEMA sec_evil CASCADE;

-- ---- (8) caps before heavy work
-- align: a pair needing more than work_mem of work space (4 n m bytes)
SET work_mem = '64kB';
SELECT corpq.align('sec_lex', repeat('the dog ', 100), repeat('el perro ', 100));
RESET work_mem;
SELECT length(corpq.align('sec_lex', repeat('the dog ', 100), repeat('el perro ', 100))) > 0 AS aligned_within_work_mem;
-- model_create: refused before its 2.4 GB are allocated
SELECT corpq.model_create('sec_huge', '{"preset": "tiny", "d_model": 2048, "heads": 8, "ffn_dim": 32768}',
                          'sec_src', 'sec_tgt');
-- model_import: the image's size is checked before it is parsed
SET corpq.max_model_mb = 1;
SELECT corpq.model_import('sec_big', decode(repeat('00', 2 * 1024 * 1024), 'hex'), 'sec_src', 'sec_tgt');
RESET corpq.max_model_mb;
-- a per-role bound a DBA sets (issue 31): corpq.max_model_mb is a superuser
-- setting, so ALTER ROLE ... SET binds the role and the role cannot raise it
SELECT corpq.model_create('sec_mid', '{"preset": "tiny", "d_model": 64, "heads": 2, "ffn_dim": 2048}',
                          'sec_src', 'sec_tgt') AS created_by_the_superuser;
ALTER ROLE corpq_sec_bob SET corpq.max_model_mb = 1;
\c - corpq_sec_bob
SHOW corpq.max_model_mb;
SELECT corpq.model_create('sec_bob_2mb', '{"preset": "tiny", "d_model": 64, "heads": 2, "ffn_dim": 2048}',
                          'sec_src', 'sec_tgt');
-- the bound counts the real peak: loading another role's model to score with it too
SELECT corpq.sent_prob('sec_mid', 'the dog', 'el perro');
SET corpq.max_model_mb = 2048;
\c - :su
SET client_min_messages = warning;
ALTER ROLE corpq_sec_bob RESET corpq.max_model_mb;
SELECT corpq.model_drop('sec_mid');
-- Monte Carlo dropout passes
SELECT corpq.uncertainty('sec_m', 'the dog', 'el perro', 'enteos', passes => 2147483647);
SELECT corpq.uncertainty('sec_m', 'the dog', 'el perro', 'enteos', passes => 1000) > 0 AS thousand_passes_ok;
SELECT * FROM corpq.score('sec_m', 'SELECT id, src, tgt FROM sec_data.pairs', 'uncertainty', 8, 'enteos', 1001);

-- ---- (9) numeric validation
-- model_import refuses NaN and infinite weights, naming the tensor
CREATE FUNCTION pg_temp.crc32(b bytea) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    c bigint := 4294967295;
BEGIN
    FOR i IN 0 .. length(b) - 1 LOOP
        c := c # get_byte(b, i);
        FOR k IN 1 .. 8 LOOP
            c := CASE WHEN c & 1 = 1 THEN (c >> 1) # 3988292384 ELSE c >> 1 END;
        END LOOP;
    END LOOP;
    RETURN c # 4294967295;
END
$$;
-- where float32 value 5 of the first tensor (encoder.embed_tokens) lies: the
-- data section starts at the u64 at byte 24 (models/FORMAT.md)
CREATE FUNCTION pg_temp.value5(img bytea) RETURNS int LANGUAGE sql IMMUTABLE AS
$$SELECT get_byte(img, 24) + 256 * get_byte(img, 25) + 65536 * get_byte(img, 26) + 5 * 4 + 1$$;
-- the image with that value's bytes replaced, and its CRC-32 trailer recomputed
CREATE FUNCTION pg_temp.poison(img bytea, bits bytea) RETURNS bytea LANGUAGE plpgsql AS $$
DECLARE
    body bytea;
    crc bigint;
BEGIN
    body := overlay(substr(img, 1, length(img) - 4) placing bits from pg_temp.value5(img));
    crc := pg_temp.crc32(body);
    RETURN body || set_byte(set_byte(set_byte(set_byte('\x00000000'::bytea, 0, (crc & 255)::int),
                                              1, ((crc >> 8) & 255)::int), 2, ((crc >> 16) & 255)::int),
                            3, ((crc >> 24) & 255)::int);
END
$$;
SELECT corpq.model_export('sec_m@1') AS img \gset
SELECT pg_temp.poison(:'img', substr(:'img'::bytea, pg_temp.value5(:'img'), 4)) = :'img'::bytea
       AS crc_rewrite_identity_holds;
SELECT corpq.model_import('sec_nan', pg_temp.poison(corpq.model_export('sec_m@1'), '\x0000c07f'), 'sec_src', 'sec_tgt');
SELECT corpq.model_import('sec_inf', pg_temp.poison(corpq.model_export('sec_m@1'), '\x0000807f'), 'sec_src', 'sec_tgt');
SELECT count(*) AS poisoned_models FROM corpq.model_catalog WHERE name IN ('sec_nan', 'sec_inf');
-- tau: a normal positive number; a tiny one gives the limit, never NaN
SELECT corpq.temperature_weights(n, 1e-310) OVER () FROM (VALUES (5::bigint), (7), (7)) v(n);
SELECT n, corpq.temperature_weights(n, 1e-300) OVER () AS share
  FROM (VALUES (5::bigint), (7), (7)) v(n) ORDER BY n;
SELECT corpq.train('sec_m', 'SELECT src, tgt, (id % 2)::text FROM sec_data.pairs', NULL,
                   '{"strategy": "temperature", "tau": 1e-310}');

-- ---- (10) clear errors
-- score() with a NULL argument
SELECT count(*) FROM corpq.score('sec_m', 'SELECT id, src, tgt FROM sec_data.pairs', NULL);
SELECT count(*) FROM corpq.score('sec_m', 'SELECT id, src, tgt FROM sec_data.pairs', 'sent_prob', NULL);
SELECT count(*) FROM corpq.score('sec_m', 'SELECT id, src, tgt FROM sec_data.pairs', 'uncertainty', 8, NULL);
-- score() with a modifying CTE, and the other query shapes that must be refused
SELECT count(*) FROM corpq.score('sec_m', $$WITH d AS (DELETE FROM sec_data.pairs RETURNING id, src, tgt) SELECT * FROM d$$);
SELECT count(*) FROM corpq.score('sec_m', 'SELECT id, src, tgt FROM sec_data.pairs; SELECT 1, src, tgt FROM sec_data.pairs');
SELECT count(*) FROM corpq.score('sec_m', 'SELECT id, src, tgt FROM sec_data.pairs FOR UPDATE');
SELECT count(*) FROM corpq.score('sec_m', 'SELECT id, src, tgt INTO sec_data.copy FROM sec_data.pairs');
SELECT count(*) AS pairs_untouched FROM sec_data.pairs;
-- a name with two @
SELECT corpq.sent_prob('sec_m@1@2', 'a', 'b');
SELECT corpq.sent_prob('sec_m@1@2'::corpq.pinned_model, 'a', 'b');

-- ---- names with quotes and SQL in them are stored verbatim
SELECT corpq.vocab_import($$sec_q'); DROP TABLE sec_data.pairs; --$$, corpq.vocab_export('sec_tgt')) AS size;
SELECT name FROM corpq.vocabularies WHERE name LIKE 'sec_q%';
SELECT corpq.vocab_drop($$sec_q'); DROP TABLE sec_data.pairs; --$$);
-- vocab_import validates its document
SELECT corpq.vocab_import('sec_bad', '{"tokens": ["a", "b", "c", "d", "e"]}');
SELECT corpq.vocab_import('sec_bad', '{"tokens": ["<s>", "<pad>", "</s>", "<unk>", "x", "x"]}');
SELECT corpq.vocab_import('sec_bad', '{"tokens": ["<s>", "<pad>", "</s>", "<unk>", "x"], "counts": [0, 0]}');
-- a SentencePiece document (tools/corpq-convert) must name a stored model
SELECT corpq.vocab_import('sec_bad', '{"tokens": ["<s>", "<pad>", "</s>", "<unk>", "▁x"], "spm": "source.spm"}');
\set VERBOSITY terse
SELECT corpq.vocab_import('sec_bad', '{"tokens": ["<s>", "<pad>", "</s>", "<unk>", "x"], "bpe": "no_such_bpe"}');
\set VERBOSITY default
SELECT corpq.vocab_import('sec_tgt', corpq.vocab_export('sec_tgt'));

-- ---- (11) version identity (issue 41): a name@N means one weight image for
-- ever.  Alice pins version 1 of her model in an expression index, a view, a
-- filter_predicate view and a translate_job's record, then drops the model;
-- bob creates a model of the same name.  Before, his model became
-- sec_shared@1: her index scan and a sequential scan disagreed, her views
-- filtered with his model.  Now his first version is 2, and her pins fail,
-- naming the dropped version, rather than compute with other weights.
CREATE SCHEMA sec_alice AUTHORIZATION corpq_sec_alice;
\c - corpq_sec_alice
SELECT corpq.model_create('sec_shared', '{"preset": "tiny", "d_model": 8, "heads": 2, "ffn_dim": 16,
                          "encoder_layers": 1, "decoder_layers": 1, "max_positions": 16}',
                          'sec_src', 'sec_tgt', 1) AS alice_version;
CREATE TABLE sec_alice.scored AS SELECT id, src, tgt FROM sec_data.pairs WHERE id <= 6;
CREATE INDEX scored_lp ON sec_alice.scored (corpq.sent_logprob('sec_shared@1'::corpq.pinned_model, src, tgt));
CREATE VIEW sec_alice.pinned AS
SELECT src, tgt, corpq.sent_logprob('sec_shared@1'::corpq.pinned_model, src, tgt) AS lp FROM sec_alice.scored;
DO $$ BEGIN
    EXECUTE 'CREATE VIEW sec_alice.filtered AS SELECT * FROM sec_alice.scored WHERE ' ||
        corpq.filter_predicate('[{"name": "dual_xent", "args": {"forward": "sec_shared", "backward": "sec_shared"}, "threshold": 0}]');
END $$;
SELECT count(*) AS kept_by_version_1 FROM sec_alice.filtered;
CREATE TABLE sec_alice.translated (id bigint, hyp text, score double precision);
SELECT corpq.translate_job('sec_shared', 'SELECT id, src FROM sec_alice.scored', 'sec_alice.translated',
                           '{"beam": 1, "max_len_b": 3, "threads": 1}') AS tj \gset
SELECT corpq.job_wait(:tj, '120 s') AS translate_job, args ->> 'model' AS recorded_model
  FROM corpq.jobs WHERE id = :tj;
\c - :su
SET client_min_messages = warning;
-- this session caches version 1 ...
SELECT count(lp) AS scored_with_version_1 FROM sec_alice.pinned;
SELECT model, version FROM corpq.model_cache() WHERE model = 'sec_shared';
SELECT * FROM dblink(:'alice_conn', $$SELECT corpq.model_drop('sec_shared')$$) AS t(dropped text);
SELECT * FROM dblink(:'bob_conn', $$SELECT corpq.model_create('sec_shared', '{"preset": "tiny", "d_model": 8, "heads": 2,
    "ffn_dim": 16, "encoder_layers": 1, "decoder_layers": 1, "max_positions": 16}', 'sec_src', 'sec_tgt', 2)$$)
    AS t(bob_version int);
SELECT c.owner, v.version FROM corpq.model_catalog c JOIN corpq.model_versions v ON v.model = c.id
 WHERE c.name = 'sec_shared';
SELECT name, last_version FROM corpq.issued_versions WHERE catalog = 'corpq.model_catalog' AND name = 'sec_shared';
-- ... and never serves it for sec_shared@1 again; the name's latest is bob's, a cache entry of its own
SELECT corpq.sent_logprob('sec_shared@1'::corpq.pinned_model, 'the dog', 'el perro');
SELECT corpq.sent_prob('sec_shared', 'the dog', 'el perro') > 0 AS scored_with_latest;
SELECT model, version FROM corpq.model_cache() WHERE model = 'sec_shared' ORDER BY version;
\c - corpq_sec_alice
-- her pins fail: a sequential scan, her views, an insert under her index, the job's record
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM sec_alice.scored WHERE corpq.sent_logprob('sec_shared@1'::corpq.pinned_model, src, tgt) < 0;
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT count(lp) FROM sec_alice.pinned;
SELECT count(*) FROM sec_alice.filtered;
INSERT INTO sec_alice.scored VALUES (0, 'the dog', 'el perro');
SELECT length(corpq.model_export(args ->> 'model')) FROM corpq.jobs WHERE id = :tj;
SELECT corpq.sent_prob('sec_shared@1', 'the dog', 'el perro');
-- the owner's own drop and re-creation, and an import under the name, number on too
\c - corpq_sec_bob
SELECT corpq.model_drop('sec_shared');
SELECT corpq.model_import('sec_shared', corpq.model_export('sec_m@1'), 'sec_src', 'sec_tgt') AS imported_version;
SELECT corpq.model_drop('sec_shared');
SELECT corpq.model_create('sec_shared', '{"preset": "tiny", "d_model": 8, "heads": 2, "ffn_dim": 16,
                          "encoder_layers": 1, "decoder_layers": 1, "max_positions": 16}',
                          'sec_src', 'sec_tgt', 2) AS recreated_version;
SELECT corpq.model_quantize('sec_shared') AS next_version;
SELECT corpq.sent_prob('sec_shared@2'::corpq.pinned_model, 'the dog', 'el perro');
SELECT corpq.sent_prob('sec_shared@5'::corpq.pinned_model, 'the dog', 'el perro') > 0 AS version_5_scores;
SELECT corpq.model_drop('sec_shared');
UPDATE corpq.issued_versions SET last_version = 0;
DELETE FROM corpq.issued_versions;

-- ---- (12) settings a role could raise to exhaust the server (issue 41):
-- corpq.threads and corpq.model_cache_mb stop at superuser ceilings
\c - :su
SET client_min_messages = warning;
ALTER ROLE corpq_sec_bob SET corpq.max_threads = 1;
\c - corpq_sec_bob
-- (corpq loaded first: before, a SET only makes a placeholder, checked when corpq loads)
SELECT corpq.bpe_tokens('whitespace', 'a b') AS corpq_loaded;
SHOW corpq.max_threads;
SHOW corpq.max_model_cache_mb;
SET corpq.threads = 256;
SET corpq.model_cache_mb = 100000;
SET corpq.max_threads = 8;
SET corpq.max_model_cache_mb = 100000;
SET corpq.model_cache_mb = 1024;
SHOW corpq.model_cache_mb;
-- a job's threads obey the same ceiling (resolved at submission into corpq.jobs.threads)
BEGIN;
SELECT corpq.train('bob_m', 'SELECT ''the dog''::text, ''el perro''::text', NULL,
                   '{"steps": 1, "threads": 256}') AS bob_train \gset
SELECT threads AS job_threads FROM corpq.jobs WHERE id = :bob_train;
ROLLBACK;
\c - :su
SET client_min_messages = warning;
ALTER ROLE corpq_sec_bob RESET corpq.max_threads;
-- a ceiling lowered below a session's value holds at use
SELECT corpq.bpe_tokens('whitespace', 'a b') AS corpq_loaded;
SET corpq.max_threads = 2;
SET corpq.threads = 2;
SET corpq.max_threads = 1;
SELECT threads FROM corpq.blas_info();
SHOW corpq.threads;
RESET corpq.max_threads;
RESET corpq.threads;

-- ---- (13) vocabularies are bounded before the work (issue 41): at most
-- 524288 tokens, a document of at most 64 MB
SELECT corpq.vocab_import('sec_many', jsonb_build_object('tokens',
         to_jsonb(ARRAY['<s>', '<pad>', '</s>', '<unk>'] || array_agg('t' || g))))
  FROM generate_series(1, 524285) g;
SELECT corpq.vocab_import('sec_fat', jsonb_build_object('tokens', to_jsonb(ARRAY['<s>', '<pad>', '</s>', '<unk>', 'x']),
                                                        'padding', repeat('x', 64 * 1024 * 1024)));
SELECT corpq.vocab_build('sec_wide', 'SELECT src FROM sec_data.pairs', NULL, 1000000);
SELECT count(*) AS stored FROM corpq.vocabularies WHERE name IN ('sec_many', 'sec_fat', 'sec_wide');

-- ---- clean up
SET client_min_messages = warning;
SELECT corpq.model_drop(name) FROM corpq.model_catalog WHERE name IN ('bob_m', 'sec_m');
SELECT corpq.vocab_drop(name) FROM corpq.vocabularies WHERE name IN ('sec_src', 'sec_tgt');
SELECT corpq.lexicon_drop(name) FROM corpq.lexicons WHERE name LIKE 'sec_%';
SELECT corpq.antap_drop('sec_ap');
DELETE FROM corpq.jobs;
DROP EXTENSION dblink;
DROP SCHEMA sec_data CASCADE;
DROP SCHEMA sec_alice CASCADE;
ALTER ROLE corpq_sec_bob RESET corpq.max_jobs;
REVOKE ALL ON corpq.object_owners FROM corpq_sec_alice;
DROP ROLE corpq_sec_alice;
REVOKE ALL ON corpq.object_owners FROM corpq_sec_bob;
DROP ROLE corpq_sec_bob;
