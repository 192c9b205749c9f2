
-- ---------------------------------------------------------------------------
-- Pipelines (docs/pipelines.md): data rejuvenation (thesis ch. 5) and UncSamp
-- self-training (ch. 6) as jobs of kinds 'rejuvenate' and 'self_train'.  A
-- pipeline is named; its stages are the SQL calls docs/pipelines.md lists (train()
-- and translate_job() run as sub-jobs), each a committed unit recorded in
-- corpq.pipeline_stages.  A job that stops (crash, kill, cancel, error)
-- resumes after its last finished stage: the server restart requeues it, or
-- the same call with the same name and arguments submits it again.  Rows
-- are visible to members of the pipeline owner's role; only corpq writes
-- them.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.pipelines (
    name     text PRIMARY KEY,
    kind     text NOT NULL CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['rejuvenate', 'self_train']::pg_catalog.text[])),
    args     jsonb NOT NULL,
    owner    regrole NOT NULL,
    job      bigint,
    created  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    reserved text[] NOT NULL DEFAULT '{}'
);
COMMENT ON TABLE corpq.pipelines IS
    'one row per named pipeline: its kind and resolved arguments (a resubmission must repeat them), owner, the job that ran it last, the model names it reserved at submission (model_create refuses them to other roles)';

CREATE TABLE corpq.pipeline_stages (
    pipeline text NOT NULL REFERENCES corpq.pipelines (name) ON DELETE CASCADE,
    stage    int NOT NULL CHECK (stage OPERATOR(pg_catalog.>=) 1),
    name     text NOT NULL,
    job      bigint NOT NULL,
    subjob   bigint,
    output   jsonb,
    owner    regrole NOT NULL,
    started  timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    finished timestamptz,
    PRIMARY KEY (pipeline, stage)
);
COMMENT ON TABLE corpq.pipeline_stages IS
    'one row per stage a pipeline started: the job that ran it, the train or translate sub-job it waits for, and once finished its output (tables, model versions, figures) and time';

SELECT pg_catalog.pg_extension_config_dump('corpq.pipelines', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.pipeline_stages', '');
ALTER TABLE corpq.pipelines ENABLE ROW LEVEL SECURITY;
CREATE POLICY pipelines_owner ON corpq.pipelines FOR SELECT
    USING (pg_catalog.pg_has_role(current_user, owner, 'MEMBER'));
ALTER TABLE corpq.pipeline_stages ENABLE ROW LEVEL SECURITY;
CREATE POLICY pipeline_stages_owner ON corpq.pipeline_stages FOR SELECT
    USING (pg_catalog.pg_has_role(current_user, owner, 'MEMBER'));
GRANT SELECT ON corpq.pipelines, corpq.pipeline_stages TO PUBLIC;

CREATE FUNCTION corpq.rejuvenate(corpus text, dev text, options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_rejuvenate'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.rejuvenate(text, text, jsonb) IS
    'data rejuvenation (thesis ch. 5) as a background job: corpus is a SELECT returning (id, src, tgt), dev a SELECT returning (src, tgt) or NULL; options: name (required), ratio (0.1), identifier, rejuvenator, train_final (true), beam (5), seed, score_rows (2000), src_vocab, tgt_vocab, model (model_create config, default {"preset": "small"}), train (train() options), translate (translate_job() options); returns the job id at once';

CREATE FUNCTION corpq.self_train(teacher text, lexicon text, parallel text, mono text,
                                 options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_self_train'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.self_train(text, text, text, text, jsonb) IS
    'UncSamp self-training (thesis ch. 6) as a background job: parallel is a SELECT returning (src, tgt), mono a SELECT returning (id, src); options: name (required), k (required), sampling (uncsamp, random, dwf), r (90), beta (2), seed, beam (5), max_words (250), max_ratio (1.5), tag_synthetic (false), tag, dev, src_vocab, tgt_vocab (default: the teacher''s), model (default {"preset": "small"}), train, translate; returns the job id at once';

CREATE FUNCTION corpq.pipeline_drop(name text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'corpq_pipeline_drop'
    LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.pipeline_drop(text) IS
    'forget pipeline name (its stage records), so the name can be used again; its tables and models stay; true if it existed';
