
-- ---------------------------------------------------------------------------
-- Background jobs: every long computation (lexicon and model training) runs in
-- a dynamic background worker connected to this database as the role that
-- submitted it.  Rows are visible to their owner (and members of the owner
-- role); superusers see all.  Only corpq writes them: a submission records
-- owner, session_role and search_path from the submitting session itself.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.jobs (
    id          bigserial PRIMARY KEY,
    kind        text NOT NULL,
    owner       regrole NOT NULL DEFAULT current_user::regrole,
    args        jsonb NOT NULL DEFAULT '{}',
    state       text NOT NULL DEFAULT 'queued'
                CHECK (state OPERATOR(pg_catalog.=) ANY (ARRAY['queued', 'running', 'succeeded', 'failed', 'cancelled']::pg_catalog.text[])),
    created     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    started     timestamptz,
    finished    timestamptz,
    error       text,
    result      jsonb,
    worker_pid  int,
    -- the postmaster start time the worker ran under: a later one means the
    -- server restarted and the job was orphaned
    server_start timestamptz,
    attempts    int NOT NULL DEFAULT 0,
    -- the login role whose session submitted the job: the worker connects as
    -- it (then assumes owner, as SET ROLE did), never as a superuser
    session_role regrole NOT NULL DEFAULT session_user::regrole,
    cancel_requested boolean NOT NULL DEFAULT false,
    -- the submitting session's search_path: the corpus query runs with it
    search_path text,
    -- how often recovery requeued the job after a crash-restart of the
    -- server (at most once: a second crash fails it)
    crash_requeues int NOT NULL DEFAULT 0,
    -- the threads the job's worker runs with (its "threads" option, or
    -- corpq.job_threads), set before the kind's function runs; the columns
    -- added since 0.1.0 come last, as ALTER TABLE ADD COLUMN put them in
    -- databases updated from it
    threads     int NOT NULL DEFAULT 1 CHECK (threads OPERATOR(pg_catalog.>=) 1)
);
COMMENT ON TABLE corpq.jobs IS
    'corpq background jobs: one row per submitted job, with its state, error and result';
SELECT pg_catalog.pg_extension_config_dump('corpq.jobs', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.jobs_id_seq', '');

ALTER TABLE corpq.jobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY jobs_owner ON corpq.jobs FOR SELECT
    USING (pg_catalog.pg_has_role(current_user, owner, 'MEMBER'));
GRANT SELECT ON corpq.jobs TO PUBLIC;

CREATE FUNCTION corpq.job_wait(id bigint, timeout interval DEFAULT NULL, raise boolean DEFAULT false) RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_job_wait'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.job_wait(bigint, interval, boolean) IS
    'wait until the job ends (or the timeout passes) and return its state; with raise, a failed job is an ERROR (SQLSTATE 38000) carrying its error, a cancelled one an ERROR (57000), and a timeout still returns the state';

CREATE FUNCTION corpq.job_cancel(id bigint) RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_job_cancel'
    LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.job_cancel(bigint) IS
    'cancel a queued or running job; returns the state it had';

-- Live progress: each job's worker publishes a JSON document as its
-- pg_stat_activity query text (shared memory, visible at once to the owner's
-- sessions, no transaction involved).
CREATE VIEW corpq.job_progress WITH (security_invoker = true) AS
SELECT j.id, j.kind, j.owner, j.state,
       p.doc ->> 'phase' AS phase,
       (p.doc ->> 'done')::float8 AS done,
       (p.doc ->> 'total')::float8 AS total,
       p.doc ->> 'unit' AS unit,
       -- the view lists only queued and running jobs: never 100% before the
       -- end, never a negative ETA (an estimate the run has passed), no ETA
       -- without a total
       LEAST(pg_catalog.round((100 * (p.doc ->> 'done')::float8
                               / NULLIF((p.doc ->> 'total')::float8, 0))::numeric, 1),
             99.9) AS percent,
       (p.doc ->> 'rate')::float8 AS rate,
       CASE WHEN (p.doc ->> 'rate')::float8 > 0 AND (p.doc ->> 'total')::float8 > 0
            THEN pg_catalog.make_interval(secs => GREATEST((p.doc ->> 'total')::float8
                                                           - (p.doc ->> 'done')::float8, 0)
                                                  / (p.doc ->> 'rate')::float8) END AS eta,
       p.doc -> 'figures' AS figures,
       j.started, now() - j.started AS elapsed, j.worker_pid
FROM corpq.jobs j
LEFT JOIN LATERAL (
    SELECT a.query::jsonb AS doc FROM pg_catalog.pg_stat_activity a
    WHERE a.pid = j.worker_pid AND a.backend_type = 'corpq job'
      AND a.query LIKE '{"job": %' AND (a.query::jsonb ->> 'job')::bigint = j.id
) p ON true
WHERE j.state IN ('queued', 'running');
COMMENT ON VIEW corpq.job_progress IS
    'live progress of queued and running jobs: phase, units done of total, rate per second, ETA, kind-specific figures';
GRANT SELECT ON corpq.job_progress TO PUBLIC;

CREATE FUNCTION corpq.job_kind_restartable(kind text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'corpq_job_kind_restartable'
    LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION corpq.job_kind_restartable(text) IS
    'whether a job of this kind runs again from the start after a server restart (with corpq preloaded)';
