-- ---------------------------------------------------------------------------
-- Row jobs (kinds 'translate', 'score', 'embed': extension/pg/jobs/row_job.h)
-- write the rows of a query into the caller's table in committed chunks;
-- this table records each chunk of every row job, so that a job resumes
-- after a crash from its last chunk.  What a chunk's rows came to is the
-- kind's counters, summed over the job's rows so far: a jsonb object of
-- integers (translate: translated, tokens; score: scored, too_long, tokens;
-- embed: embedded, too_long, tokens).  Rows are visible to members of the
-- job owner's role.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.row_job_chunks (
    job            bigint NOT NULL REFERENCES corpq.jobs (id) ON DELETE CASCADE,
    chunk          int NOT NULL CHECK (chunk OPERATOR(pg_catalog.>=) 1),
    rows_done      bigint NOT NULL,
    counters       jsonb NOT NULL CHECK (pg_catalog.jsonb_typeof(counters) OPERATOR(pg_catalog.=) 'object'),
    rows_hash      bigint NOT NULL,
    seconds        float8 NOT NULL,
    owner          regrole NOT NULL DEFAULT current_user::regrole,
    committed      timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    PRIMARY KEY (job, chunk)
);
COMMENT ON TABLE corpq.row_job_chunks IS
    'one row per chunk a row job (translate_job, score_job, embed_job, curate) committed: query rows done so far (in the query''s order), the kind''s counters over those rows (translated, tokens; scored, too_long, tokens; embedded, too_long, tokens; kept, dropped and curate''s reason kinds), a hash of those rows (checked on resume), seconds the kind spent computing in the attempt';
SELECT pg_catalog.pg_extension_config_dump('corpq.row_job_chunks', '');
ALTER TABLE corpq.row_job_chunks ENABLE ROW LEVEL SECURITY;
CREATE POLICY row_job_chunks_owner ON corpq.row_job_chunks FOR SELECT
    USING (pg_catalog.pg_has_role(current_user, owner, 'MEMBER'));
GRANT SELECT ON corpq.row_job_chunks TO PUBLIC;
