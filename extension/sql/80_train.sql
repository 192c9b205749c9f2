
-- ---------------------------------------------------------------------------
-- Training models as background jobs (kind 'train').  corpq.train() checks
-- its arguments and returns the job id at once; the job writes its log row
-- by row in short transactions (chart it live), and each checkpoint -- a new
-- model version plus the optimizer state to resume from -- in one
-- transaction.  Rows are visible to members of the job owner's role.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.train_log (
    job          bigint NOT NULL REFERENCES corpq.jobs (id) ON DELETE CASCADE,
    step         bigint NOT NULL CHECK (step OPERATOR(pg_catalog.>=) 1),
    epoch        float8 NOT NULL,
    train_loss   float8,
    train_nll    float8,
    dev_loss     float8,
    dev_ppl      float8,
    dev          jsonb,
    lr           float8 NOT NULL,
    tokens       bigint NOT NULL,
    tokens_per_s float8,
    grad_norm    float8,
    -- on the first update's row: the schedule the job fixed (train_schedule.h)
    schedule     jsonb,
    owner        regrole NOT NULL DEFAULT current_user::regrole,
    at           timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    PRIMARY KEY (job, step)
);
COMMENT ON TABLE corpq.train_log IS
    'one row per update of a training job: epoch (fractional), label-smoothed loss and nll per target token (nats), learning rate, target tokens, tokens/s, gradient norm before clipping; on validation steps dev_loss (nll per token), dev_ppl and per corpus label {"label": {"loss", "ppl", "tokens"}} in dev; on step 1 the schedule the job fixed (expected updates and why, warm-up, checkpoint and validation cadence, calibration)';

CREATE TABLE corpq.train_checkpoints (
    job      bigint NOT NULL REFERENCES corpq.jobs (id) ON DELETE CASCADE,
    step     bigint NOT NULL CHECK (step OPERATOR(pg_catalog.>=) 1),
    model    bigint NOT NULL,
    version  int NOT NULL,
    state    bytea NOT NULL,
    cursor   jsonb NOT NULL,
    dev_loss float8,
    owner    regrole NOT NULL DEFAULT current_user::regrole,
    created  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (job, step),
    FOREIGN KEY (model, version) REFERENCES corpq.model_versions (model, version) ON DELETE CASCADE
);
-- the optimizer state is noise to a compressor, and read whole
ALTER TABLE corpq.train_checkpoints ALTER COLUMN state SET STORAGE EXTERNAL;
COMMENT ON TABLE corpq.train_checkpoints IS
    'the last keep_checkpoints checkpoints of each training job: the model version written, the core''s training state image (models/FORMAT.md: weights, AdamW moments, update count) and the data cursor of every corpus';

SELECT pg_catalog.pg_extension_config_dump('corpq.train_log', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.train_checkpoints', '');

-- Only the job's worker writes them (owner = the job's owner); its owner's
-- members read them.
ALTER TABLE corpq.train_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY train_log_owner ON corpq.train_log FOR SELECT
    USING (pg_catalog.pg_has_role(current_user, owner, 'MEMBER'));
ALTER TABLE corpq.train_checkpoints ENABLE ROW LEVEL SECURITY;
CREATE POLICY train_checkpoints_owner ON corpq.train_checkpoints FOR SELECT
    USING (pg_catalog.pg_has_role(current_user, owner, 'MEMBER'));
GRANT SELECT ON corpq.train_log, corpq.train_checkpoints TO PUBLIC;

CREATE FUNCTION corpq.train(model text, corpus text, dev text DEFAULT NULL,
                            options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_train'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.train(text, text, text, jsonb) IS
    'train model (you must own it) on corpus, a SELECT returning (src, tgt) or (src, tgt, label), validating on dev (same shape) as a background job; returns the job id at once. Options: steps, epochs, max_seconds, max_tokens, update_freq, lr, warmup, warmup_init_lr, dropout, attention_dropout, activation_dropout, label_smoothing, weight_decay, clip_norm, seed, checkpoint_every, keep_checkpoints, validate_every, threads, strategy (proportional, temperature, uniform), tau, sampler_every';
