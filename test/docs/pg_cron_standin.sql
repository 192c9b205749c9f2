-- A stand-in for pg_cron's cron.schedule() (docs/models.md): it runs the
-- scheduled command once, now, so that an example scheduling a job runs the
-- job's SQL without pg_cron preloaded.  test/integration/score_job.sh runs
-- the schedule under the real pg_cron.
CREATE SCHEMA cron;
CREATE FUNCTION cron.schedule(job_name text, schedule text, command text) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE command;
    RETURN 1;
END
$$;
