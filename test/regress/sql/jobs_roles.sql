-- Job slots per role (issue 50): corpq.max_jobs is the database's, and one
-- role may hold at most its share, corpq.max_jobs_per_role (-1: max_jobs - 1),
-- so another role can still submit.  Jobs run as the role whose session
-- submits them, so the roles log in (pg_virtualenv's password).
SET client_min_messages = warning;
SELECT current_user AS su \gset
\set regress_password unused
\getenv regress_password PGPASSWORD
CREATE ROLE corpq_jr_alice LOGIN PASSWORD :'regress_password';
CREATE ROLE corpq_jr_bob LOGIN PASSWORD :'regress_password';
CREATE ROLE corpq_jr_team;
GRANT corpq_jr_team TO corpq_jr_alice;
SELECT corpq.job_wait(NULL) IS NULL AS library_loaded;
SHOW corpq.max_jobs;
SHOW corpq.max_jobs_per_role;
-- a corpus query that stays running (600 x 50 ms) until cancelled
CREATE VIEW jr_slow AS
SELECT 'a b'::text AS src, 'c d'::text AS tgt FROM generate_series(1, 600) g WHERE pg_sleep(0.05) IS NOT NULL;
GRANT SELECT ON jr_slow TO corpq_jr_alice, corpq_jr_bob, corpq_jr_team;

-- alice takes 3 of the 4 slots; her 4th is refused with her share's error
\c - corpq_jr_alice
SELECT corpq.lexicon_train('jr_a1', 'SELECT src, tgt FROM jr_slow') IS NOT NULL AS a1,
       corpq.lexicon_train('jr_a2', 'SELECT src, tgt FROM jr_slow') IS NOT NULL AS a2,
       corpq.lexicon_train('jr_a3', 'SELECT src, tgt FROM jr_slow') IS NOT NULL AS a3;
SELECT corpq.lexicon_train('jr_a4', 'SELECT src, tgt FROM jr_slow');
-- another role she is a member of gains her no slot: her login's jobs count
SET ROLE corpq_jr_team;
SELECT corpq.lexicon_train('jr_team', 'SELECT src, tgt FROM jr_slow');
RESET ROLE;
-- a role cannot raise its own share
SET corpq.max_jobs_per_role = 4;

-- bob still gets the last slot; then the database's limit holds
\c - corpq_jr_bob
SELECT corpq.lexicon_train('jr_b1', 'SELECT src, tgt FROM jr_slow') IS NOT NULL AS b1;
SELECT corpq.lexicon_train('jr_b2', 'SELECT src, tgt FROM jr_slow');

-- a superuser sets a role's share explicitly
\c - :su
SET client_min_messages = warning;
SELECT corpq.job_cancel(id) IN ('queued', 'running') AS cancelled FROM corpq.jobs
 WHERE owner = 'corpq_jr_bob'::regrole;
SELECT corpq.job_wait(id, '60 s') FROM corpq.jobs WHERE owner = 'corpq_jr_bob'::regrole;
ALTER ROLE corpq_jr_bob SET corpq.max_jobs_per_role = 0;
\c - corpq_jr_bob
SHOW corpq.max_jobs_per_role;
SELECT corpq.lexicon_train('jr_b3', 'SELECT src, tgt FROM jr_slow');

\c - :su
SET client_min_messages = warning;
SELECT corpq.job_cancel(id) IN ('queued', 'running') AS cancelled FROM corpq.jobs
 WHERE owner::text LIKE 'corpq_jr_%' AND state IN ('queued', 'running');
SELECT owner, state, count(*) FROM (SELECT owner, corpq.job_wait(id, '60 s') AS state FROM corpq.jobs
 WHERE owner::text LIKE 'corpq_jr_%') j GROUP BY owner, state ORDER BY owner::text, state;
DELETE FROM corpq.jobs WHERE owner::text LIKE 'corpq_jr_%';
DROP VIEW jr_slow;
ALTER ROLE corpq_jr_bob RESET corpq.max_jobs_per_role;
REVOKE ALL ON corpq.object_owners FROM corpq_jr_alice, corpq_jr_bob, corpq_jr_team;
DROP ROLE corpq_jr_alice;
DROP ROLE corpq_jr_bob;
DROP ROLE corpq_jr_team;
