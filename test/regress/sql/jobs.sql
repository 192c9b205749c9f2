-- Background jobs: the catalog, errors, visibility.  Running jobs are tested
-- with their kinds (lexicon, training) and in test/integration/.
SELECT corpq.job_wait(424242);
SELECT corpq.job_cancel(424242);
SELECT corpq.job_wait(NULL);
SELECT count(*) FROM corpq.job_progress WHERE state IN ('queued', 'running');
-- rows of other roles are invisible, and cannot be forged for another owner
CREATE ROLE corpq_jobs_a LOGIN;
CREATE ROLE corpq_jobs_b LOGIN;
SET ROLE corpq_jobs_a;
INSERT INTO corpq.jobs(kind, state) VALUES ('lexicon_train', 'failed') RETURNING owner, state;
INSERT INTO corpq.jobs(kind, owner) VALUES ('lexicon_train', 'corpq_jobs_b');
RESET ROLE;
SET ROLE corpq_jobs_b;
SELECT count(*) FROM corpq.jobs;
SELECT corpq.job_cancel(id) FROM corpq.jobs;
RESET ROLE;
SELECT owner, kind, state FROM corpq.jobs WHERE owner::text IN ('corpq_jobs_a', 'corpq_jobs_b');
DELETE FROM corpq.jobs WHERE owner::text IN ('corpq_jobs_a', 'corpq_jobs_b');
REVOKE ALL ON corpq.object_owners FROM corpq_jobs_a;
DROP ROLE corpq_jobs_a;
REVOKE ALL ON corpq.object_owners FROM corpq_jobs_b;
DROP ROLE corpq_jobs_b;

-- ---- job_wait(..., raise => true): a failed job is an ERROR carrying its
-- error (SQLSTATE 38000), a cancelled one an ERROR (57000), a timeout still
-- returns the state; without raise the states come back as before (issue 54)
CREATE FUNCTION pg_temp.wait_raise(j bigint, t interval DEFAULT '120 s') RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN corpq.job_wait(j, t, raise => true);
EXCEPTION WHEN OTHERS THEN
    -- the job id varies with the tests run before: shown as N
    RETURN SQLSTATE || ': ' || replace(SQLERRM, j::text, 'N');
END $$;
-- a corpus query that fails when it runs (not when it is checked at submission)
SELECT corpq.lexicon_train('jobs_fails', 'SELECT ''a b''::text, (1 / (g - g))::text FROM generate_series(1, 3) g') AS bad \gset
SELECT corpq.lexicon_train('jobs_works', 'SELECT ''a b''::text, ''c d''::text FROM generate_series(1, 3)',
                           '{"iterations": 1}') AS good \gset
SELECT pg_temp.wait_raise(:bad) AS failed_job, pg_temp.wait_raise(:good) AS good_job;
SELECT corpq.job_wait(:bad) AS without_raise, corpq.job_wait(:bad, raise => false) AS raise_false,
       corpq.job_wait(:good, '1 s', true) AS positional;
\set VERBOSITY sqlstate
SELECT corpq.job_wait(:bad, raise => true);
\set VERBOSITY default
-- a job still running when the timeout passes: its state, no ERROR
SELECT corpq.lexicon_train('jobs_slow', 'SELECT ''a b''::text, ''c d''::text FROM generate_series(1, 600) g WHERE pg_sleep(0.05) IS NOT NULL') AS slow \gset
SELECT corpq.job_wait(:slow, '0.2 s', raise => true) IN ('queued', 'running') AS timeout_returns_state;
SELECT corpq.job_cancel(:slow) IN ('queued', 'running') AS cancelled;
SELECT pg_temp.wait_raise(:slow) AS cancelled_job;
SELECT corpq.job_wait(:slow) AS without_raise;
SELECT corpq.lexicon_drop('jobs_works');
DELETE FROM corpq.jobs WHERE id IN (:bad, :good, :slow);
