-- Row jobs and tables of other roles (issue 50): a row job writes with its
-- owner's rights, so the target's triggers, rules, policies, defaults and
-- casts run with them.  A target another role owns is refused unless the
-- option "foreign_target" says it is intended; and before every chunk the
-- job checks that no such code appeared on the target since submission
-- (base/table_check.h, the check pipelines make of their tables).  Here the
-- caller is the superuser and bob owns the tables: the case where bob's code
-- would gain the most.
SET client_min_messages = warning;
CREATE ROLE corpq_rjt_bob;
CREATE TABLE rjt_pairs AS
SELECT g::bigint AS id, 'a' || (g % 7) || ' b' || (g % 5) AS src, 'x' || (g % 5) || ' y' || (g % 3) AS tgt
  FROM generate_series(1, 60) g;
SELECT corpq.vocab_build('rjt_src', 'SELECT src FROM rjt_pairs');
SELECT corpq.vocab_build('rjt_tgt', 'SELECT tgt FROM rjt_pairs');
SELECT corpq.model_create('rjt_m', '{"preset": "tiny", "max_positions": 12}', 'rjt_src', 'rjt_tgt', 7);
CREATE SCHEMA rjt_bob AUTHORIZATION corpq_rjt_bob;
SET ROLE corpq_rjt_bob;
CREATE TABLE rjt_bob.scores (id bigint, score double precision);
CREATE TABLE rjt_bob.clean (id bigint, score double precision);
CREATE TABLE rjt_bob.stolen (who text, what text);
GRANT INSERT ON rjt_bob.stolen TO PUBLIC;
CREATE FUNCTION rjt_bob.steal() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO rjt_bob.stolen VALUES (current_user, 'row ' || NEW.id); RETURN NEW; END$$;
CREATE FUNCTION rjt_bob.positive(float8) RETURNS boolean LANGUAGE plpgsql AS
$$BEGIN INSERT INTO rjt_bob.stolen VALUES (current_user, 'value'); RETURN $1 >= 0; END$$;
CREATE DOMAIN rjt_bob.score AS double precision;
CREATE TABLE rjt_bob.domain_scores (id bigint, score rjt_bob.score);
RESET ROLE;
GRANT USAGE ON SCHEMA rjt_bob TO PUBLIC;
\set q 'SELECT id, src, tgt FROM rjt_pairs ORDER BY id'

-- ---- refused without foreign_target; the caller's own table is not ----
SELECT corpq.score_job('rjt_m', :'q', 'rjt_bob.scores');
SELECT corpq.score_job('rjt_m', :'q', 'rjt_bob.scores', '{"foreign_target": "yes"}');
CREATE TABLE rjt_mine (id bigint, score double precision);
SELECT corpq.score_job('rjt_m', :'q', 'rjt_mine') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT count(*) AS rows FROM rjt_mine;

-- ---- foreign_target, nothing changes: written; the option is stored ----
SELECT corpq.score_job('rjt_m', :'q', 'rjt_bob.clean', '{"foreign_target": true, "chunk_rows": 10}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT count(*) AS rows FROM rjt_bob.clean;
SELECT args -> 'options' -> 'foreign_target' AS foreign_target, args ? 'target_code' AS has_code
  FROM corpq.jobs WHERE id = :job;

-- ---- a trigger bob adds after the submission: the job stops before its
-- first chunk; the trigger never ran ----
BEGIN;
SELECT corpq.score_job('rjt_m', :'q', 'rjt_bob.scores', '{"foreign_target": true, "chunk_rows": 10}') AS job \gset
SET LOCAL ROLE corpq_rjt_bob;
CREATE TRIGGER steal BEFORE INSERT ON rjt_bob.scores FOR EACH ROW EXECUTE FUNCTION rjt_bob.steal();
COMMIT;
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;
SELECT (SELECT count(*) FROM rjt_bob.scores) AS rows, (SELECT count(*) FROM rjt_bob.stolen) AS stolen;

-- ---- a trigger there at submission was accepted with foreign_target; its
-- function replaced since is new code ----
BEGIN;
SELECT corpq.score_job('rjt_m', :'q', 'rjt_bob.scores', '{"foreign_target": true, "chunk_rows": 10}') AS job \gset
SET LOCAL ROLE corpq_rjt_bob;
CREATE OR REPLACE FUNCTION rjt_bob.steal() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO rjt_bob.stolen VALUES (current_user, 'more of row ' || NEW.id); RETURN NEW; END$$;
COMMIT;
SELECT corpq.job_wait(:job, '600 s');
SELECT state, regexp_replace(error, 'body [0-9a-f]{32}', 'body <md5>') AS error FROM corpq.jobs WHERE id = :job;
SELECT (SELECT count(*) FROM rjt_bob.scores) AS rows, (SELECT count(*) FROM rjt_bob.stolen) AS stolen;

-- ---- a domain constraint (bob's function) added to the column's type ----
BEGIN;
SELECT corpq.score_job('rjt_m', :'q', 'rjt_bob.domain_scores', '{"foreign_target": true}') AS job \gset
SET LOCAL ROLE corpq_rjt_bob;
ALTER DOMAIN rjt_bob.score ADD CONSTRAINT positive CHECK (rjt_bob.positive(VALUE));
COMMIT;
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;
SELECT (SELECT count(*) FROM rjt_bob.domain_scores) AS rows, (SELECT count(*) FROM rjt_bob.stolen) AS stolen;

-- ---- a rule, and a default, on the caller's own table: new code too ----
CREATE TABLE rjt_log (what text);
BEGIN;
SELECT corpq.score_job('rjt_m', :'q', 'rjt_mine') AS job \gset
ALTER TABLE rjt_mine ADD COLUMN note text DEFAULT 'noted';
COMMIT;
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;
TRUNCATE rjt_mine;
BEGIN;
SELECT corpq.score_job('rjt_m', :'q', 'rjt_mine') AS job \gset
CREATE RULE log AS ON INSERT TO rjt_mine DO ALSO INSERT INTO rjt_log VALUES ('row');
COMMIT;
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;
SELECT (SELECT count(*) FROM rjt_mine) AS rows, (SELECT count(*) FROM rjt_log) AS logged;

-- leave the catalog as found
DELETE FROM corpq.jobs WHERE kind = 'score';
SELECT corpq.model_drop('rjt_m');
SELECT corpq.vocab_drop('rjt_src'), corpq.vocab_drop('rjt_tgt');
DROP TABLE rjt_pairs, rjt_mine, rjt_log;
DROP SCHEMA rjt_bob CASCADE;
DROP ROLE corpq_rjt_bob;
