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
