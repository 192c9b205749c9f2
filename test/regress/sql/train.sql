-- corpq.train(): a tiny model learns a generated word-translation task (three
-- corpus labels of unequal size); dev perplexity against the unigram
-- baseline, the training log, checkpoints and pruning, sent_prob AUC on
-- held-out pairs vs shuffled targets, the temperature and uniform samplers
-- against temperature_weights, failing and cancelled jobs, errors, privileges.
SET client_min_messages = warning;

-- Source: 3..8 words of 40; target: each word's fixed translation, in order.
CREATE TABLE train_pairs AS
SELECT g AS id,
       (ARRAY['news', 'web', 'bible'])[CASE WHEN g % 7 < 4 THEN 1 WHEN g % 7 < 6 THEN 2 ELSE 3 END] AS domain,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 40), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 6) k) AS src
  FROM generate_series(1, 3000) g;
ALTER TABLE train_pairs ADD COLUMN tgt text;
UPDATE train_pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 40), ' ' ORDER BY o)
                                FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
-- one pair longer than max_positions, one with a NULL side: skipped and counted
INSERT INTO train_pairs VALUES (3001, 'news', repeat('w1 ', 40), 'v10'), (3002, 'news', NULL, 'v1');
SELECT corpq.vocab_build('train_src', 'SELECT src FROM train_pairs');
SELECT corpq.vocab_build('train_tgt', 'SELECT tgt FROM train_pairs');
SELECT corpq.model_create('tm', '{"preset": "tiny", "max_positions": 32}', 'train_src', 'train_tgt', 1);
CREATE VIEW train_set AS SELECT src, tgt, domain FROM train_pairs WHERE id % 10 <> 5;
CREATE VIEW dev_set AS SELECT src, tgt, domain FROM train_pairs WHERE id % 10 = 5 AND src IS NOT NULL AND id <= 3000;

-- ---- errors before a job starts ----
SELECT corpq.train('nope', 'SELECT src, tgt FROM train_set');
SELECT corpq.train('tm@1', 'SELECT src, tgt FROM train_set');
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set', NULL, '{"stpes": 10}');
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set', NULL, '{"lr": -1}');
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set', NULL, '{"steps": 0}');
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set', NULL, '{"strategy": "mixed"}');
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set', NULL, '{"tau": 2}');
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set', NULL, '{"max_tokens": 4.5}');
SELECT corpq.train('tm', 'SELECT src FROM train_set');
SELECT corpq.train('tm', 'SELECT src, length(tgt) FROM train_set');
SELECT corpq.train('tm', 'DELETE FROM train_pairs');
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set', 'SELECT 1');
SELECT corpq.train('tm', NULL);
SELECT count(*) AS jobs_submitted FROM corpq.jobs WHERE kind = 'train';

-- ---- training: 300 updates of ~1000 tokens, validation every 50 ----
SELECT corpq.train('tm', 'SELECT src, tgt, domain FROM train_set ORDER BY src, tgt',
                   'SELECT src, tgt, domain FROM dev_set ORDER BY src, tgt',
                   '{"steps": 300, "max_tokens": 1024, "lr": 0.003, "warmup": 50, "seed": 3,
                     "checkpoint_every": 100, "validate_every": 50, "threads": 1}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error, result ->> 'steps' AS steps, result ->> 'strategy' AS strategy,
       result -> 'skipped_pairs' AS skipped, result ->> 'pairs' AS pairs,
       result ->> 'warmup' AS warmup, result ->> 'first_version' AS first_version,
       (result ->> 'final_train_loss')::float8 BETWEEN 0 AND 5 AS loss_finite,
       (result ->> 'peak_rss_kb')::bigint > 0 AS rss_reported,
       (result ->> 'tokens')::bigint = (SELECT sum(tokens) FROM corpq.train_log WHERE job = :job) AS tokens_add_up
  FROM corpq.jobs WHERE id = :job;
-- the resolved options are stored with the job
SELECT args -> 'options' ->> 'label_smoothing' AS ls, args -> 'options' ->> 'keep_checkpoints' AS keep,
       args -> 'options' ->> 'strategy' AS strategy, args -> 'options' ->> 'clip_norm' AS clip
  FROM corpq.jobs WHERE id = :job;

-- the log: one row per update, validations every 50, the schedule's lr
SELECT count(*) AS rows, min(step), max(step), count(dev_loss) AS validations,
       bool_and(dev_loss IS NULL OR step % 50 = 0) AS on_schedule,
       bool_and(abs(lr - CASE WHEN step - 1 < 50 THEN 1e-7 + (0.003 - 1e-7) * (step - 1) / 50.0
                              ELSE 0.003 * sqrt(50.0 / (step - 1)) END) < 1e-12) AS inverse_sqrt_lr,
       bool_and(train_loss > 0 AND train_nll > 0 AND grad_norm > 0 AND tokens > 0) AS sane,
       bool_and(abs(dev_ppl - exp(dev_loss)) < 1e-9 * dev_ppl) FILTER (WHERE dev_loss IS NOT NULL) AS ppl_is_exp
  FROM corpq.train_log WHERE job = :job;
-- dev loss falls between validations (at most one small rise); every label learns
SELECT count(*) AS intervals, count(*) FILTER (WHERE dev_loss < prev) >= count(*) - 1 AS falls,
       bool_and(dev_loss < 1.2 * prev) AS no_jump
  FROM (SELECT dev_loss, lag(dev_loss) OVER (ORDER BY step) AS prev
          FROM corpq.train_log WHERE job = :job AND dev_loss IS NOT NULL) d WHERE prev IS NOT NULL;
SELECT (SELECT string_agg(k, ',' ORDER BY k) FROM jsonb_object_keys(dev) k) AS labels,
       bool_and((dev -> l ->> 'loss')::float8 < 0.5) AS all_labels_learn
  FROM corpq.train_log, unnest(ARRAY['news', 'web', 'bible']) l
 WHERE job = :job AND step = 300 GROUP BY dev;

-- unigram baseline (training target counts, </s> included) vs the model
CREATE TEMP TABLE unigram AS
WITH toks AS (SELECT w FROM train_set, regexp_split_to_table(tgt, ' ') w WHERE src IS NOT NULL
              UNION ALL SELECT '</s>' FROM train_set WHERE src IS NOT NULL),
     cnt AS (SELECT w, count(*) AS c FROM toks GROUP BY w),
     dev AS (SELECT w FROM dev_set, regexp_split_to_table(tgt, ' ') w UNION ALL SELECT '</s>' FROM dev_set)
SELECT exp(-avg(ln(c::float8 / (SELECT sum(c) FROM cnt)))) AS ppl FROM dev JOIN cnt USING (w);
SELECT u.ppl BETWEEN 30 AND 45 AS baseline_near_41, l.dev_ppl < 1.5 AS model_ppl_below_1_5,
       l.dev_ppl < u.ppl / 20 AS far_below_unigram,
       (SELECT dev_ppl FROM corpq.train_log WHERE job = :job AND step = 50) > l.dev_ppl AS fell
  FROM unigram u, corpq.train_log l WHERE l.job = :job AND l.step = 300;

-- checkpoints: the last 3 kept (steps 100, 200, 300), their versions, the best one flagged
-- (the state holds the weights and both AdamW moments: about 3 weight images)
SELECT c.step, c.version, c.dev_loss IS NOT NULL AS validated,
       length(c.state) BETWEEN 2.9 * v.bytes AND 3 * v.bytes + 4096 AS has_moments,
       c.cursor -> 'streams' -> 0 ->> 0 AS epoch
  FROM corpq.train_checkpoints c JOIN corpq.model_versions v USING (model, version)
 WHERE c.job = :job ORDER BY step;
SELECT version, source, step, best, (metrics ->> 'job')::bigint = :job AS by_job,
       metrics -> 'dev' ? 'bible' AS per_label
  FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
 WHERE c.name = 'tm' ORDER BY version;
SELECT v.best = (c.dev_loss = min(c.dev_loss) OVER ()) AS best_is_lowest_dev
  FROM corpq.train_checkpoints c JOIN corpq.model_versions v USING (model, version) WHERE c.job = :job;
-- scoring with the trained model: the latest version is the last checkpoint
SELECT (result -> 'checkpoint_versions' ->> 2)::int = (SELECT latest_version FROM corpq.models WHERE name = 'tm') AS latest
  FROM corpq.jobs WHERE id = :job;

-- sent_prob separates held-out pairs from the same sources with another pair's target (ROC AUC)
CREATE TEMP TABLE auc_scores AS
SELECT true AS pos, corpq.sent_prob('tm', src, tgt) AS s FROM train_pairs WHERE id % 10 = 5
UNION ALL
SELECT false, corpq.sent_prob('tm', p.src, q.tgt)
  FROM train_pairs p JOIN train_pairs q ON q.id = p.id + 10 WHERE p.id % 10 = 5;
SELECT count(*) FILTER (WHERE pos) AS positives, count(*) FILTER (WHERE NOT pos) AS negatives,
       (SELECT (count(*) FILTER (WHERE a.s > b.s) + 0.5 * count(*) FILTER (WHERE a.s = b.s))::float8 / count(*)
          FROM auc_scores a, auc_scores b WHERE a.pos AND NOT b.pos) > 0.95 AS auc_above_095
  FROM auc_scores;

-- ---- temperature and uniform: corpus draws with temperature_weights' shares ----
SELECT corpq.train('tm', 'SELECT src, tgt, domain FROM train_set ORDER BY src, tgt', NULL,
                   '{"steps": 40, "update_freq": 6, "max_tokens": 64, "strategy": "temperature", "tau": 2,
                     "checkpoint_every": 40, "keep_checkpoints": 1}') AS tjob \gset
SELECT corpq.train('tm', 'SELECT src, tgt, domain FROM train_set ORDER BY src, tgt', NULL,
                   '{"steps": 40, "update_freq": 6, "max_tokens": 64, "strategy": "uniform",
                     "checkpoint_every": 40, "keep_checkpoints": 1}') AS ujob \gset
SELECT corpq.job_wait(:tjob, '600 s') AS temperature, corpq.job_wait(:ujob, '600 s') AS uniform;
SELECT j.result ->> 'strategy' AS strategy, c.key AS corpus, (c.value ->> 'size')::int AS size,
       abs((c.value ->> 'share')::float8 -
           corpq.temperature_weights((c.value ->> 'size')::bigint,
                                     CASE WHEN j.id = :tjob THEN 2.0::float8 ELSE 'infinity'::float8 END) OVER (PARTITION BY j.id)) < 1e-12 AS share_matches,
       -- 240 draws: within 4 standard deviations of the share (deterministic for the seed)
       abs((c.value ->> 'batches')::int - 240 * (c.value ->> 'share')::float8)
         < 4 * sqrt(240 * (c.value ->> 'share')::float8 * (1 - (c.value ->> 'share')::float8)) AS draws_match
  FROM corpq.jobs j, jsonb_each(j.result -> 'corpora') c
 WHERE j.id IN (:tjob, :ujob) ORDER BY strategy, corpus;
SELECT j.id = :tjob AS temperature, sum((c.value ->> 'batches')::int) AS batches
  FROM corpq.jobs j, jsonb_each(j.result -> 'corpora') c WHERE j.id IN (:tjob, :ujob) GROUP BY j.id ORDER BY 1;

-- ---- the schedule a job fixes from its budget ----
-- only a time budget: a calibration measures the update rate, the expected
-- updates follow, warm-up = 10 % of them in [50, 4000], checkpoints and
-- validations every tenth (the figures depend on the machine, the rules not)
SELECT corpq.train('tm', 'SELECT src, tgt, domain FROM train_set ORDER BY src, tgt',
                   'SELECT src, tgt, domain FROM dev_set ORDER BY src, tgt',
                   '{"max_seconds": 6, "max_tokens": 1024, "seed": 3, "threads": 1}') AS sjob \gset
SELECT corpq.job_wait(:sjob, '600 s');
CREATE TEMP TABLE sched AS
SELECT result, result -> 'schedule' AS s, (result -> 'schedule' ->> 'expected_updates')::int AS e
  FROM corpq.jobs WHERE id = :sjob;
-- the default peak rate 1 / sqrt(4000 d_model), d_model 64, times
-- (4000 / warm-up)^(1/4), at most 2
SELECT s ->> 'lr_from' AS lr_from,
       abs((s ->> 'lr')::float8 - least(2, power(4000.0 / (s ->> 'warmup')::int, 0.25)) / sqrt(4000 * 64)) < 1e-15 AS lr_rule,
       s ->> 'expected_from' AS expected_from, s ->> 'warmup_from' AS warmup_from,
       e > 0 AS expects_updates,
       (s -> 'calibration' ->> 'passes')::int BETWEEN 2 AND 6 AS calibrated,
       (s -> 'calibration' ->> 'seconds_per_update')::float8 > 0 AS rate_measured,
       (s ->> 'warmup')::int = least(4000, CASE WHEN e / 10 < 50 THEN least(e, 50) ELSE e / 10 END) AS warmup_rule,
       (s ->> 'checkpoint_every')::int = least(1000, (e + 9) / 10) AS checkpoint_rule,
       (s ->> 'validate_every')::int = (s ->> 'checkpoint_every')::int AS validate_rule,
       (result ->> 'warmup')::int = (s ->> 'warmup')::int AS result_warmup,
       s ? 'note' AS has_note,
       (result ->> 'training_seconds')::float8 >= 6 AS budget_used
  FROM sched;
-- train_log: the schedule on step 1 only, and every lr follows it
SELECT (SELECT l.schedule = s.s FROM corpq.train_log l WHERE l.job = :sjob AND l.step = 1) AS logged_on_step_1,
       (SELECT count(*) FROM corpq.train_log l WHERE l.job = :sjob AND l.step > 1 AND l.schedule IS NOT NULL) AS later_rows_with_schedule,
       (SELECT bool_and(abs(l.lr - CASE WHEN l.step - 1 < w THEN 1e-7 + (p - 1e-7) * (l.step - 1) / w
                                        ELSE p * sqrt(w::float8 / (l.step - 1)) END) < 1e-12)
          FROM corpq.train_log l, LATERAL (SELECT (s.s ->> 'warmup')::int AS w, (s.s ->> 'lr')::float8 AS p) w
         WHERE l.job = :sjob) AS lr_follows_warmup,
       (SELECT bool_and(l.step % (s.s ->> 'validate_every')::int = 0 OR l.step = (s.result ->> 'steps')::int)
          FROM corpq.train_log l WHERE l.job = :sjob AND l.dev_loss IS NOT NULL) AS validations_on_cadence,
       (SELECT bool_and((v.metrics ->> 'seconds')::float8 > 0) FROM corpq.model_versions v
         WHERE v.metrics ->> 'job' = :'sjob') AS versions_have_seconds
  FROM sched s;
-- explicit values win: steps over the time budget (no calibration), lr,
-- warmup and checkpoint_every over the derived ones
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set ORDER BY src, tgt', NULL,
                   '{"steps": 30, "max_seconds": 600, "max_tokens": 256, "threads": 1}') AS e1 \gset
SELECT corpq.job_wait(:e1, '600 s');
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set ORDER BY src, tgt', NULL,
                   '{"max_seconds": 2, "lr": 0.001, "warmup": 7, "checkpoint_every": 3, "max_tokens": 256, "threads": 1}') AS e2 \gset
SELECT corpq.job_wait(:e2, '600 s');
-- epochs and a time budget: the fewer updates (0.05 of an epoch here)
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set ORDER BY src, tgt', NULL,
                   '{"epochs": 0.05, "max_seconds": 600, "max_tokens": 256, "threads": 1}') AS e3 \gset
SELECT corpq.job_wait(:e3, '600 s');
SELECT id - :e1 AS job, result -> 'schedule' ->> 'expected_from' AS expected_from,
       CASE WHEN result -> 'schedule' ->> 'expected_from' = 'max_seconds' THEN 'measured'
            ELSE result -> 'schedule' ->> 'expected_updates' END AS expected,
       result -> 'schedule' ->> 'lr_from' AS lr_from, result -> 'schedule' ->> 'warmup' AS warmup,
       result -> 'schedule' ->> 'warmup_from' AS warmup_from, result -> 'schedule' ->> 'checkpoint_every' AS ckpt,
       result -> 'schedule' ? 'calibration' AS calibrated, result ->> 'warmup' AS result_warmup,
       (SELECT bool_and(abs(lr - CASE WHEN step - 1 < w THEN 1e-7 + (p - 1e-7) * (step - 1) / w
                                      ELSE p * sqrt(w::float8 / (step - 1)) END) < 1e-12)
          FROM corpq.train_log, LATERAL (SELECT (result ->> 'warmup')::int AS w,
                                                (result -> 'schedule' ->> 'lr')::float8 AS p) x
         WHERE job = j.id) AS lr_follows_warmup
  FROM corpq.jobs j WHERE id IN (:e1, :e2, :e3) ORDER BY id;
-- the stored options keep what was asked, not what was derived
SELECT id - :e1 AS job, args -> 'options' ? 'lr' AS lr, args -> 'options' ? 'warmup' AS warmup,
       args -> 'options' ? 'checkpoint_every' AS ckpt
  FROM corpq.jobs WHERE id IN (:e1, :e2) ORDER BY id;
-- the epochs in batches: the job ends after the updates it expected
SELECT (result -> 'schedule' ->> 'expected_updates')::int = (result ->> 'steps')::int AS epochs_expected_all_updates
  FROM corpq.jobs WHERE id = :e3;
-- a budget too short to measure a rate still trains: one update, the
-- documented minimum warm-up, and the result says why
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set ORDER BY src, tgt', NULL,
                   '{"max_seconds": 0.001, "max_tokens": 256, "threads": 1}') AS short \gset
SELECT corpq.job_wait(:short, '600 s');
SELECT state, result ->> 'steps' AS steps, result ->> 'warmup' AS warmup,
       result -> 'schedule' ->> 'expected_updates' AS expected, result -> 'schedule' ->> 'warmup_from' AS warmup_from,
       result -> 'schedule' -> 'calibration' ->> 'passes' AS passes,
       regexp_replace(result -> 'schedule' ->> 'note', 'took [0-9.e+-]+ s', 'took X s') AS note
  FROM corpq.jobs WHERE id = :short;

-- ---- jobs that fail with a reason, and a cancelled one ----
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set WHERE false') AS j1 \gset
-- pairs of 18 to 24 tokens: within max_positions, beyond a budget of 16 tokens
SELECT corpq.train('tm', 'SELECT src || '' '' || src || '' '' || src, tgt FROM train_set
                          WHERE array_length(string_to_array(src, '' ''), 1) >= 6',
                   NULL, '{"max_tokens": 16, "steps": 5}') AS j2 \gset
SELECT corpq.job_wait(:j1, '120 s'), corpq.job_wait(:j2, '120 s');
SELECT id = :j1 AS empty_corpus, state, error, result FROM corpq.jobs WHERE id IN (:j1, :j2) ORDER BY id;
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set', NULL, '{"steps": 1000000}') AS j3 \gset
DO $$
BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN EXISTS (SELECT 1 FROM corpq.train_log l JOIN corpq.jobs j ON j.id = l.job
                       WHERE j.kind = 'train' AND j.state = 'running');
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT corpq.job_cancel(:j3);
SELECT corpq.job_wait(:j3, '60 s');
SELECT state, error FROM corpq.jobs WHERE id = :j3;

-- ---- privileges: only members of the owner role train a model; logs are private ----
CREATE ROLE regress_train_other;
GRANT SELECT ON train_pairs, train_set TO regress_train_other;
SET ROLE regress_train_other;
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set');
SELECT count(*) AS visible_log_rows FROM corpq.train_log;
SELECT count(*) AS visible_checkpoints FROM corpq.train_checkpoints;
RESET ROLE;
DROP OWNED BY regress_train_other;
REVOKE ALL ON corpq.object_owners FROM regress_train_other;
DROP ROLE regress_train_other;

-- dropout options override the model's rates for the run: the job trains
-- (its gradients follow the same configuration)
SELECT corpq.train('tm', 'SELECT src, tgt FROM train_set ORDER BY src, tgt', NULL,
                   '{"steps": 3, "dropout": 0, "attention_dropout": 0, "activation_dropout": 0.3, "max_tokens": 256, "threads": 1}') AS dj \gset
SELECT corpq.job_wait(:dj, '600 s');
SELECT state, error, result ->> 'steps' AS steps FROM corpq.jobs WHERE id = :dj;

-- dropping the model drops its checkpoints' state rows with its versions
SELECT corpq.model_drop('tm');
SELECT count(*) AS checkpoints_left FROM corpq.train_checkpoints;
SELECT corpq.vocab_drop('train_src'), corpq.vocab_drop('train_tgt');
DROP VIEW train_set, dev_set;
DROP TABLE train_pairs;
