
-- ---------------------------------------------------------------------------
-- Sampling history of the dynamic training strategies (multiuat, multidds):
-- one row per (job, sampler update, corpus), written in the same short
-- transaction as that update's train_log row; step 0 is the distribution
-- training starts with (the fitted prior).
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.train_sampling (
    job         bigint NOT NULL REFERENCES corpq.jobs (id) ON DELETE CASCADE,
    step        bigint NOT NULL CHECK (step OPERATOR(pg_catalog.>=) 0),
    corpus      text NOT NULL,
    probability float8 NOT NULL CHECK (probability OPERATOR(pg_catalog.>=) 0 AND probability OPERATOR(pg_catalog.<=) 1),
    reward      float8,
    dev_loss    float8,
    tokens_seen bigint NOT NULL DEFAULT 0,
    owner       regrole NOT NULL DEFAULT current_user::regrole,
    at          timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    PRIMARY KEY (job, step, corpus)
);
COMMENT ON TABLE corpq.train_sampling IS
    'the sampling distribution of a multiuat / multidds training job after each sampler update: probability of each corpus label, the reward it got (multiuat: the uncertainty measure on one dev batch, K dropout passes; multidds: mean gradient cosine), the dev batch''s nll per token, target tokens trained on so far; step 0 = the prior';

SELECT pg_catalog.pg_extension_config_dump('corpq.train_sampling', '');
-- Only the job's worker writes it (owner = the job's owner).
ALTER TABLE corpq.train_sampling ENABLE ROW LEVEL SECURITY;
CREATE POLICY train_sampling_owner ON corpq.train_sampling FOR SELECT
    USING (pg_catalog.pg_has_role(current_user, owner, 'MEMBER'));
GRANT SELECT ON corpq.train_sampling TO PUBLIC;

-- Long format for BI tools: x = step (or tokens_seen), y = probability,
-- series = corpus (the MultiUAT paper's Figures 1, 2, 4).
CREATE VIEW corpq.train_sampling_chart WITH (security_invoker = true) AS
SELECT s.job,
       j.args -> 'options' ->> 'strategy' AS strategy,
       s.step,
       s.tokens_seen,
       s.corpus,
       s.probability,
       s.probability / pg_catalog.first_value(s.probability)
           OVER (PARTITION BY s.job, s.corpus ORDER BY s.step) AS vs_prior,
       s.reward,
       s.dev_loss,
       pg_catalog.exp(s.dev_loss) AS dev_ppl,
       s.at
  FROM corpq.train_sampling s
  JOIN corpq.jobs j ON j.id = s.job;
COMMENT ON VIEW corpq.train_sampling_chart IS
    'corpq.train_sampling with the job''s strategy, the probability relative to the prior (step 0) and the dev batch perplexity, one row per (job, step, corpus)';
GRANT SELECT ON corpq.train_sampling_chart TO PUBLIC;
