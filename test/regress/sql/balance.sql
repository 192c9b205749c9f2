-- Dynamic corpus balancing in corpq.train(): MultiUAT (uncertainty rewards
-- over Monte Carlo dropout passes, REINFORCE-trained scorer) and the
-- MultiDDS-S baseline (gradient-cosine rewards) on a generated 3-domain
-- word-translation task with sizes 20:4:1.  The history table, its chart
-- view, the prior, the direction of the scorer's steps, errors.
SET client_min_messages = warning;

CREATE TABLE bal_pairs AS
SELECT g AS id,
       (ARRAY['big', 'mid', 'small'])[CASE WHEN g % 25 < 20 THEN 1 WHEN g % 25 < 24 THEN 2 ELSE 3 END] AS domain,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 30), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 5) k) AS src
  FROM generate_series(1, 2500) g;
ALTER TABLE bal_pairs ADD COLUMN tgt text;
-- the small domain translates differently: something left to learn there
UPDATE bal_pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * CASE domain WHEN 'small' THEN 11 ELSE 7 END + 3) % 30), ' ' ORDER BY o)
                              FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
SELECT corpq.vocab_build('bal_src', 'SELECT src FROM bal_pairs');
SELECT corpq.vocab_build('bal_tgt', 'SELECT tgt FROM bal_pairs');
SELECT corpq.model_create('bm', '{"preset": "tiny", "max_positions": 32}', 'bal_src', 'bal_tgt', 1);
CREATE VIEW bal_train AS SELECT src, tgt, domain FROM bal_pairs WHERE (id / 7) % 10 <> 5 ORDER BY id;
CREATE VIEW bal_dev AS SELECT src, tgt, domain FROM bal_pairs WHERE (id / 7) % 10 = 5 ORDER BY id;

-- ---- errors before a job starts ----
SELECT corpq.train('bm', 'SELECT * FROM bal_train', NULL, '{"strategy": "multiuat"}');
SELECT corpq.train('bm', 'SELECT * FROM bal_train', 'SELECT * FROM bal_dev', '{"strategy": "multiuat", "measure": "bleu"}');
SELECT corpq.train('bm', 'SELECT * FROM bal_train', 'SELECT * FROM bal_dev', '{"strategy": "multiuat", "passes": 0}');
SELECT corpq.train('bm', 'SELECT * FROM bal_train', 'SELECT * FROM bal_dev', '{"strategy": "multiuat", "update_every": 0}');
SELECT corpq.train('bm', 'SELECT * FROM bal_train', 'SELECT * FROM bal_dev', '{"strategy": "multiuat", "scorer_lr": 0}');
SELECT corpq.train('bm', 'SELECT * FROM bal_train', 'SELECT * FROM bal_dev', '{"strategy": "multiuat", "baseline": 1}');
SELECT corpq.train('bm', 'SELECT * FROM bal_train', 'SELECT * FROM bal_dev', '{"strategy": "temperature", "measure": "enteos"}');
SELECT corpq.train('bm', 'SELECT * FROM bal_train', 'SELECT * FROM bal_dev', '{"strategy": "multidds", "passes": 3}');
SELECT corpq.train('bm', 'SELECT * FROM bal_train', 'SELECT * FROM bal_dev', '{"strategy": "multiuat", "scorer_step": 3}');
SELECT count(*) AS jobs_submitted FROM corpq.jobs WHERE kind = 'train';

-- ---- errors in the job, before the first update: one corpus; a corpus without dev rows ----
SELECT corpq.train('bm', 'SELECT src, tgt FROM bal_train', 'SELECT src, tgt FROM bal_dev',
                   '{"strategy": "multiuat", "steps": 5}') AS e1 \gset
SELECT corpq.train('bm', 'SELECT * FROM bal_train', 'SELECT * FROM bal_dev WHERE domain <> ''small''',
                   '{"strategy": "multidds", "steps": 5}') AS e2 \gset
SELECT corpq.job_wait(:e1, '300 s') AS one_corpus, corpq.job_wait(:e2, '300 s') AS no_dev;
SELECT id = :e1 AS one_corpus, state, error FROM corpq.jobs WHERE id IN (:e1, :e2) ORDER BY id;
SELECT count(*) AS log_rows FROM corpq.train_log WHERE job IN (:e1, :e2);

-- ---- multiuat: 60 updates, the scorer every 10 (K = 3 passes, 60 Adam steps) ----
SELECT corpq.train('bm', 'SELECT * FROM bal_train', 'SELECT * FROM bal_dev',
                   '{"strategy": "multiuat", "measure": "entsent", "steps": 60, "max_tokens": 512,
                     "lr": 0.003, "warmup": 10, "seed": 5, "update_every": 10, "passes": 3,
                     "scorer_steps": 60, "scorer_lr": 0.01, "dev_tokens": 256,
                     "checkpoint_every": 30, "threads": 1}') AS uat \gset
SELECT corpq.job_wait(:uat, '600 s') AS multiuat;
SELECT state, error, result ->> 'strategy' AS strategy, (result -> 'sampler' ->> 'updates')::int AS updates,
       (result -> 'sampler' ->> 'update_share')::float8 BETWEEN 0 AND 1 AS share_reported,
       args -> 'options' ->> 'sampler_every' AS every, args -> 'options' ->> 'measure' AS measure,
       args -> 'options' ->> 'prior_tau' AS prior_tau, args -> 'options' ->> 'baseline' AS baseline
  FROM corpq.jobs WHERE id = :uat;
-- one row per (update, corpus), the prior at step 0; every distribution sums to 1
SELECT step, count(*) AS corpora, abs(sum(probability) - 1) < 1e-12 AS sums_to_1,
       bool_and(reward IS NOT NULL) AS rewarded, bool_and(dev_loss > 0) AS dev_loss
  FROM corpq.train_sampling WHERE job = :uat GROUP BY step ORDER BY step;
-- step 0 is the prior temperature_weights(size, 1) (the scorer fitted to it by Adam)
SELECT s.corpus, (c.value ->> 'size')::int AS size,
       abs(s.probability - corpq.temperature_weights((c.value ->> 'size')::bigint, 1) OVER ()) < 1e-8 AS prior
  FROM corpq.train_sampling s JOIN corpq.jobs j ON j.id = s.job
  JOIN jsonb_each(j.result -> 'corpora') c ON c.key = s.corpus
 WHERE s.job = :uat AND s.step = 0 ORDER BY s.corpus;
-- the scorer moves towards its fixed point p = R / sum R: at every update the
-- corpus furthest below its reward share gains probability, and the KL
-- divergence from the reward shares falls
WITH h AS (
  SELECT step, corpus, probability AS p, reward / sum(reward) OVER (PARTITION BY step) AS share,
         lag(probability) OVER (PARTITION BY corpus ORDER BY step) AS p_before
    FROM corpq.train_sampling WHERE job = :uat
), u AS (
  SELECT step, sum(share * ln(share / p_before)) AS kl_before, sum(share * ln(share / p)) AS kl_after,
         (array_agg(p - p_before ORDER BY share - p_before DESC))[1] AS gain_of_furthest_below
    FROM h WHERE step > 0 GROUP BY step
)
SELECT count(*) AS updates, bool_and(kl_after < kl_before) AS kl_falls,
       bool_and(gain_of_furthest_below > 0) AS furthest_below_gains
  FROM u;
-- the result's final distribution and the draw shares are the last history row's
SELECT s.corpus, abs((j.result -> 'sampler' -> 'final' ->> s.corpus)::float8 - s.probability) < 1e-12 AS final_matches,
       (j.result -> 'corpora' -> s.corpus ->> 'share')::float8 = s.probability AS share_matches
  FROM corpq.train_sampling s JOIN corpq.jobs j ON j.id = s.job
 WHERE s.job = :uat AND s.step = 50 ORDER BY s.corpus;
-- the checkpoint carries the scorer's state (psi and Adam) for a resume
SELECT step, jsonb_array_length(cursor -> 'sampler' -> 'psi') AS psi, (cursor -> 'sampler' ->> 't')::int AS adam_steps
  FROM corpq.train_checkpoints WHERE job = :uat ORDER BY step;
-- the chart view: one row per (step, corpus), relative to the prior
SELECT strategy, count(*) AS rows, count(DISTINCT step) AS steps,
       bool_and(abs(vs_prior - 1) < 1e-12) FILTER (WHERE step = 0) AS starts_at_prior
  FROM corpq.train_sampling_chart WHERE job = :uat GROUP BY strategy;

-- ---- multidds: 20 updates, the scorer every 10, rewards are gradient cosines ----
SELECT corpq.train('bm', 'SELECT * FROM bal_train', 'SELECT * FROM bal_dev',
                   '{"strategy": "multidds", "steps": 20, "max_tokens": 512, "lr": 0.003, "warmup": 5,
                     "seed": 5, "update_every": 10, "scorer_steps": 20, "dev_tokens": 256,
                     "checkpoint_every": 20, "threads": 1}') AS dds \gset
SELECT corpq.job_wait(:dds, '600 s') AS multidds;
SELECT state, error, (result -> 'sampler' ->> 'updates')::int AS updates FROM corpq.jobs WHERE id = :dds;
SELECT step, count(*) AS corpora, abs(sum(probability) - 1) < 1e-12 AS sums_to_1,
       bool_and(reward BETWEEN -1 AND 1) AS cosines
  FROM corpq.train_sampling WHERE job = :dds GROUP BY step ORDER BY step;

-- history rows go with their job (and tests after this one count jobs)
DELETE FROM corpq.jobs WHERE id IN (:e1, :e2, :uat, :dds);
SELECT count(*) AS rows_left FROM corpq.train_sampling;

SELECT corpq.model_drop('bm');
SELECT corpq.vocab_drop('bal_src'), corpq.vocab_drop('bal_tgt');
DROP VIEW bal_train, bal_dev;
DROP TABLE bal_pairs;
