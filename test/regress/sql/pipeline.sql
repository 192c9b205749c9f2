-- Pipelines: corpq.rejuvenate() and corpq.self_train() end to end on a
-- generated word-translation task with 10% of the targets shuffled (noise),
-- tiny models and a few seconds of training.  Each stage's tables are checked
-- against the per-row functions they compose (sent_prob, translate_rows,
-- mono_uncertainty, uncsamp); then resume after the worker is killed between
-- stages (no row twice, the running sub-job reused), cancel (the sub-job is
-- cancelled too), a failing stage (named; finished stages stay), errors at
-- submission, and privileges.
SET client_min_messages = warning;

-- Source: 3..7 words of 30; target: each word's fixed translation, in order.
CREATE TABLE pl_pairs AS
SELECT g::bigint AS id,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 30), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 5) k) AS src
  FROM generate_series(1, 800) g;
ALTER TABLE pl_pairs ADD COLUMN tgt text, ADD COLUMN noisy boolean NOT NULL DEFAULT false;
UPDATE pl_pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 30), ' ' ORDER BY o)
                             FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
-- noise: every tenth target belongs to another pair
UPDATE pl_pairs p SET tgt = q.tgt, noisy = true FROM pl_pairs q
 WHERE p.id % 10 = 3 AND q.id = (p.id * 37) % 800 + 1 AND q.tgt <> p.tgt;
CREATE TABLE pl_mono AS
SELECT g::bigint AS id,
       (SELECT string_agg('w' || ((g * 104729 + k * 7919) % 30), ' ' ORDER BY k)
          FROM generate_series(1, 2 + g % 7) k) AS src
  FROM generate_series(1, 300) g;
SELECT corpq.vocab_build('pl_sv', 'SELECT src FROM pl_pairs');
SELECT corpq.vocab_build('pl_tv', 'SELECT tgt FROM pl_pairs');
CREATE VIEW pl_train AS SELECT id, src, tgt FROM pl_pairs WHERE id % 20 <> 5;
CREATE VIEW pl_dev AS SELECT src, tgt FROM pl_pairs WHERE id % 20 = 5 AND NOT noisy;

-- the options every run shares: tiny models, short training, small chunks
\set common '{"model": {"preset": "tiny", "max_positions": 32}, "translate": {"batch": 16, "threads": 1, "chunk_rows": 16}, "train": {"steps": 120, "max_tokens": 1024, "lr": 0.003, "warmup": 20, "seed": 3, "threads": 1}}'
\set short '{"train": {"steps": 20, "max_tokens": 1024, "lr": 0.003, "warmup": 5, "seed": 3, "threads": 1}}'

-- ---- data rejuvenation ----
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_train', 'SELECT src, tgt FROM pl_dev',
                        :'common'::jsonb || '{"name": "plr", "ratio": 0.1, "src_vocab": "pl_sv",
                                             "tgt_vocab": "pl_tv", "seed": 7}') AS job \gset
SELECT corpq.job_wait(:job, '900 s');
SELECT state, error, result ->> 'pipeline' AS pipeline,
       jsonb_path_query_array(result, '$.stages[*].name') AS stages
  FROM corpq.jobs WHERE id = :job;
-- every stage finished by this job; sub-jobs of kinds train and translate, all succeeded
SELECT s.stage, s.name, s.job = :job AS this_job, j.kind AS subjob_kind, j.state AS subjob_state,
       s.finished >= s.started AS timed
  FROM corpq.pipeline_stages s LEFT JOIN corpq.jobs j ON j.id = s.subjob
 WHERE s.pipeline = 'plr' ORDER BY s.stage;
-- stage 1: every pair, scored with the identification model's sent_prob
SELECT count(*) AS pairs, count(*) = (SELECT count(*) FROM pl_train) AS all_pairs,
       count(*) FILTER (WHERE prob IS DISTINCT FROM corpq.sent_prob('plr_identifier', src, tgt)) AS other_prob
  FROM plr_pairs;
-- stage 2: the round(10%) least probable are inactive; the bins count every pair
SELECT count(*) FILTER (WHERE inactive) AS inactive,
       count(*) FILTER (WHERE inactive) = round(0.1 * count(*)) AS ratio_ok,
       max(prob) FILTER (WHERE inactive) <= min(prob) FILTER (WHERE NOT inactive) AS lowest,
       (SELECT sum(pairs) FROM plr_bins) = count(*) AS bins_count_all,
       (SELECT sum(inactive) FROM plr_bins) = count(*) FILTER (WHERE inactive) AS bins_count_inactive
  FROM plr_pairs;
-- the bins are 10 equal bins by probability rank (the thesis's): sizes differ by
-- at most 1, in probability order, and with ratio 0.1 bin 1 is the inactive set
SELECT count(*) AS bins, max(pairs) - min(pairs) <= 1 AS equal,
       bool_and(max_prob <= next_min OR next_min IS NULL) AS ordered,
       bool_or(bin = 1 AND inactive = pairs) AS bin1_inactive,
       sum(inactive) FILTER (WHERE bin > 1) AS inactive_elsewhere
  FROM (SELECT *, lead(min_prob) OVER (ORDER BY bin) AS next_min FROM plr_bins) b;
-- the identification model finds the noise: far above the 10% of a random pick
SELECT (count(*) FILTER (WHERE p.inactive AND o.noisy))::float8
       / count(*) FILTER (WHERE p.inactive) > 0.5 AS inactive_mostly_noise
  FROM plr_pairs p JOIN pl_pairs o USING (id);
-- stage 4: the rejuvenated pairs are translate_rows() of the rejuvenator, beam 5
SELECT count(*) AS rejuvenated,
       count(*) = (SELECT count(*) FROM plr_pairs WHERE inactive) AS every_inactive,
       count(*) FILTER (WHERE r.tgt_new IS DISTINCT FROM t.hyp OR r.score IS DISTINCT FROM t.score
                          OR r.finished IS DISTINCT FROM t.finished) AS differ,
       count(*) FILTER (WHERE r.tgt_old IS DISTINCT FROM p.tgt) AS other_old,
       count(*) FILTER (WHERE r.repeats IS DISTINCT FROM corpq.repetition(t.hyp)) AS misrepeated,
       count(*) FILTER (WHERE r.kept IS DISTINCT FROM
           (r.finished AND r.src_words <= 250 AND r.src_words > 0 AND r.tgt_words > 0
            AND greatest(r.src_words, r.tgt_words) <= 1.5 * least(r.src_words, r.tgt_words)
            AND corpq.repetition(t.hyp) = 0)) AS misfiltered
  FROM plr_rejuvenated r
  JOIN corpq.translate_rows('plr_rejuvenator', 'SELECT id, src FROM plr_pairs WHERE inactive ORDER BY id',
                            '{"beam": 5}') t USING (id)
  JOIN plr_pairs p USING (id);
-- what each synthetic-pair filter dropped, as the stage records it (the counts
-- depend on the trained model's translations, so only their consistency shows)
SELECT jsonb_object_keys(output) AS key FROM corpq.pipeline_stages WHERE pipeline = 'plr' AND stage = 4 ORDER BY 1;
SELECT (output ->> 'kept')::int = (SELECT count(*) FROM plr_rejuvenated WHERE kept) AS kept_counted,
       (output ->> 'kept')::int + (output ->> 'dropped')::int = (output ->> 'rows')::int AS all_counted,
       (output ->> 'dropped_cut')::int = (SELECT count(*) FROM plr_rejuvenated WHERE NOT finished) AS cut_counted,
       (output ->> 'dropped_ratio')::int = (SELECT count(*) FROM plr_rejuvenated
                                              WHERE greatest(src_words, tgt_words) > 1.5 * least(src_words, tgt_words)
                                                 OR least(src_words, tgt_words) = 0) AS ratio_counted,
       (output ->> 'dropped_repetition')::int = (SELECT count(*) FROM plr_rejuvenated
                                                   WHERE corpq.repetition(tgt_new) > 0) AS repetition_counted
  FROM corpq.pipeline_stages WHERE pipeline = 'plr' AND stage = 4;
-- stage 3 trained on the active pairs, stage 5 on active + rejuvenated
SELECT s.stage, (j.result ->> 'pairs')::int = CASE s.stage
           WHEN 3 THEN (SELECT count(*) FROM plr_pairs WHERE NOT inactive)
           ELSE (SELECT count(*) FROM plr_pairs WHERE NOT inactive)
                + (SELECT count(*) FROM plr_rejuvenated WHERE kept) END AS right_pairs
  FROM corpq.pipeline_stages s JOIN corpq.jobs j ON j.id = s.subjob
 WHERE s.pipeline = 'plr' AND s.stage IN (3, 5) ORDER BY s.stage;
-- the result names every table and model version
SELECT jsonb_path_query(result, '$.stages[*].output.keyvalue() ? (@.key like_regex "^(pairs|bins|rejuvenated|model|identifier)$").value')
  #>> '{}' ~ '^(public\.plr_(pairs|bins|rejuvenated)|plr_(identifier|rejuvenator|final)@[0-9]+)$' AS named
  FROM corpq.jobs WHERE id = :job;
-- quality gates: the rejuvenator's dev BLEU against the identifier's (the
-- baseline: trained on every pair) before it translates; the final model
-- against it with the paired-bootstrap p-value.  Each BLEU is corpq.bleu of
-- corpq.translate (beam 5) on the dev set; a warning when below.
CREATE FUNCTION pg_temp.dev_bleu(m text) RETURNS numeric LANGUAGE sql AS $$
  SELECT round(corpq.bleu(corpq.translate(m, src, '{"beam": 5}'), tgt)::numeric, 4) FROM pl_dev $$;
SELECT s.stage, (s.output ->> 'dev_bleu')::numeric = pg_temp.dev_bleu(split_part(s.output ->> 'model', '@', 1)) AS dev_bleu_ok,
       (s.output ->> 'baseline_bleu')::numeric = pg_temp.dev_bleu('plr_identifier') AS baseline_ok,
       (s.output ? 'warning') = ((s.output ->> 'dev_bleu')::numeric < (s.output ->> 'baseline_bleu')::numeric) AS warned_iff_below,
       s.stage = 3 OR (s.output ->> 'bleu_change')::numeric = (s.output ->> 'dev_bleu')::numeric - (s.output ->> 'baseline_bleu')::numeric
                      AND (s.output ->> 'p_value')::float8 BETWEEN 0 AND 1 AS compared
  FROM corpq.pipeline_stages s WHERE s.pipeline = 'plr' AND s.stage IN (3, 5) ORDER BY s.stage;
-- the final gate also gives both models' dev translations cut at the length
-- limit and their mean words, and its warning names what differs
CREATE FUNCTION pg_temp.dev_len(m text, OUT cut bigint, OUT words numeric) LANGUAGE sql AS $$
  SELECT count(*) FILTER (WHERE NOT t.finished),
         round(avg(CASE WHEN btrim(t.hyp) = '' THEN 0
                        ELSE array_length(regexp_split_to_array(btrim(t.hyp), '\s+'), 1) END), 4)
    FROM pl_dev d, corpq.translate_nbest(m, d.src, '{"beam": 5, "nbest": 1}') t $$;
SELECT (o ->> 'cut')::bigint = (pg_temp.dev_len('plr_final')).cut AS cut_ok,
       (o ->> 'baseline_cut')::bigint = (pg_temp.dev_len('plr_identifier')).cut AS baseline_cut_ok,
       (o ->> 'words')::numeric = (pg_temp.dev_len('plr_final')).words AS words_ok,
       (o ->> 'baseline_words')::numeric = (pg_temp.dev_len('plr_identifier')).words AS baseline_words_ok,
       NOT o ? 'warning'
       OR o ->> 'warning' ~ ('^the final model''s dev BLEU [0-9.]+ is below the baseline''s [0-9.]+ \(p = [0-9.]+\): '
                             || CASE WHEN (o ->> 'cut')::int > (o ->> 'baseline_cut')::int
                                          OR (o ->> 'words')::numeric > 1.1 * (o ->> 'baseline_words')::numeric
                                     THEN 'it runs on: '
                                     WHEN (o ->> 'words')::numeric < 0.9 * (o ->> 'baseline_words')::numeric
                                     THEN 'its dev translations are short: '
                                     ELSE 'its dev translations are as long as the baseline''s ' END) AS cause_named
  FROM (SELECT output AS o FROM corpq.pipeline_stages WHERE pipeline = 'plr' AND stage = 5) s;
-- "gate": "stop": a rejuvenator below the baseline stops the pipeline before it translates
SELECT corpq.model_create('pl_rand', '{"preset": "tiny", "max_positions": 32}', 'pl_sv', 'pl_tv', 9);
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_train', 'SELECT src, tgt FROM pl_dev',
                        '{"name": "plg", "identifier": "plr_identifier", "rejuvenator": "pl_rand",
                          "gate": "stop", "train_final": false, "src_vocab": "pl_sv", "tgt_vocab": "pl_tv"}') AS gjob \gset
SELECT corpq.job_wait(:gjob, '900 s');
SELECT state, error ~ '^pipeline "plg" stage 3 \(rejuvenation model\) failed: the rejuvenator''s dev BLEU [0-9.]+ is below the baseline''s [0-9.]+$' AS stopped
  FROM corpq.jobs WHERE id = :gjob;
SELECT stage FROM corpq.pipeline_stages WHERE pipeline = 'plg' AND finished IS NOT NULL ORDER BY stage;
-- a label column in the dev query: each gate also gives every label's BLEU,
-- the baseline's and the paired-bootstrap p-value, and its warning names the
-- labels below the baseline (a label is data: JSON-escaped).  The random
-- rejuvenator, with "gate": "warn", is below on every label and goes on.
-- A NULL label is the label "default", as in training.
CREATE VIEW pl_dev_l AS SELECT src, tgt, CASE WHEN src < 'w2' THEN 'a "quoted" label' END AS label
                          FROM pl_dev;
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_train', 'SELECT src, tgt, label FROM pl_dev_l',
                        :'common'::jsonb || :'short' || '{"name": "plw", "identifier": "plr_identifier",
                          "rejuvenator": "pl_rand", "src_vocab": "pl_sv", "tgt_vocab": "pl_tv"}') AS wjob \gset
SELECT corpq.job_wait(:wjob, '900 s');
SELECT state, error FROM corpq.jobs WHERE id = :wjob;
CREATE FUNCTION pg_temp.label_gate(m text, b text, l text, OUT m_bleu numeric, OUT b_bleu numeric, OUT p numeric)
LANGUAGE sql AS $$
  SELECT round(score_b::numeric, 4), round(score_a::numeric, 4), round(p_value::numeric, 4)
    FROM (SELECT (corpq.paired_bootstrap(corpq.translate(b, src, '{"beam": 5}'),
                                         corpq.translate(m, src, '{"beam": 5}'), tgt)).*
            FROM pl_dev_l WHERE coalesce(label, 'default') = l) s $$;
SELECT s.stage, e ->> 'label' AS label,
       (e ->> 'dev_bleu')::numeric = g.m_bleu AS dev_bleu_ok,
       (e ->> 'baseline_bleu')::numeric = g.b_bleu AS baseline_ok,
       (e ->> 'p_value')::numeric = g.p AS p_ok,
       ((e ->> 'dev_bleu')::numeric < (e ->> 'baseline_bleu')::numeric)
         = coalesce(strpos(split_part(s.output ->> 'warning', 'below the baseline on ', 2),
                           format('%s (%s against %s, p = ', e ->> 'label', round(g.m_bleu, 2), round(g.b_bleu, 2))) > 0,
                    false) AS named_iff_below
  FROM corpq.pipeline_stages s, jsonb_array_elements(s.output -> 'labels') e,
       LATERAL pg_temp.label_gate(split_part(s.output ->> 'model', '@', 1), 'plr_identifier', e ->> 'label') g
 WHERE s.pipeline = 'plw' AND s.stage IN (3, 5) ORDER BY 1, 2;
-- the pooled figures are as without labels
SELECT (output ->> 'dev_bleu')::numeric = pg_temp.dev_bleu('pl_rand') AS dev_bleu_ok,
       (output ->> 'baseline_bleu')::numeric = pg_temp.dev_bleu('plr_identifier') AS baseline_ok,
       output ->> 'warning' ~ '^the rejuvenator''s dev BLEU [0-9.]+ is below the baseline''s [0-9.]+; below the baseline on ' AS warned
  FROM corpq.pipeline_stages WHERE pipeline = 'plw' AND stage = 3;
SELECT corpq.model_drop('pl_rand');

-- ---- UncSamp self-training: the rejuvenation's final model teaches ----
SELECT corpq.lexicon_train('pl_lex', 'SELECT src, tgt FROM pl_train') AS lexjob \gset
SELECT corpq.job_wait(:lexjob, '300 s');
SELECT corpq.self_train('plr_final', 'pl_lex', 'SELECT src, tgt FROM pl_train',
                        'SELECT id, src FROM pl_mono',
                        :'common'::jsonb || :'short' || '{"name": "pls", "k": 60, "seed": 5,
                                                         "dev": "SELECT src, tgt FROM pl_dev"}') AS sjob \gset
SELECT corpq.job_wait(:sjob, '900 s');
SELECT state, error, jsonb_path_query_array(result, '$.stages[*].name') AS stages
  FROM corpq.jobs WHERE id = :sjob;
-- stage 1: U_max at the 90% point of the parallel sources' uncertainty
SELECT (output ->> 'u_max')::float8 = (SELECT percentile_cont(0.9) WITHIN GROUP
                                         (ORDER BY corpq.mono_uncertainty('pl_lex', src)) FROM pl_train) AS u_max_ok
  FROM corpq.pipeline_stages WHERE pipeline = 'pls' AND stage = 1;
-- stage 2: the k rows of highest uncsamp key (beta 2, seed 5)
SELECT count(*) AS sampled,
       count(*) FILTER (WHERE s.id IS NULL OR e.id IS NULL) AS other_rows
  FROM pls_sample s
  FULL JOIN (SELECT id FROM pl_mono
              ORDER BY corpq.uncsamp(corpq.mono_uncertainty('pl_lex', src),
                                     (SELECT (output ->> 'u_max')::float8 FROM corpq.pipeline_stages
                                       WHERE pipeline = 'pls' AND stage = 1), 2, id, 5) DESC, id
              LIMIT 60) e USING (id);
-- stage 3: the teacher's beam-5 translations
SELECT count(*) AS translated,
       count(*) FILTER (WHERE t.hyp IS DISTINCT FROM r.hyp) AS differ
  FROM pls_translations t
  JOIN corpq.translate_rows('plr_final', 'SELECT id, src FROM pls_sample ORDER BY id', '{"beam": 5}') r USING (id);
-- stage 4: kept = finished (not cut at the length limit), at most 250 source
-- words, a length ratio up to 1.5 and no string repeated twice more in a row
-- (corpq.repetition); the stage counts what each filter drops
SELECT count(*) FILTER (WHERE kept IS DISTINCT FROM
           (s.finished AND ns <= 250 AND ns > 0 AND nt > 0 AND greatest(ns, nt) <= 1.5 * least(ns, nt)
            AND corpq.repetition(t.hyp) = 0)) AS misfiltered,
       count(*) FILTER (WHERE s.finished IS DISTINCT FROM t.finished) AS other_finished
  FROM (SELECT id, kept, finished, cardinality(string_to_array(src, ' ')) AS ns,
               cardinality(string_to_array(nullif(tgt, ''), ' ')) AS nt FROM pls_synthetic) s
  JOIN corpq.translate_rows('plr_final', 'SELECT id, src FROM pls_sample ORDER BY id', '{"beam": 5}') t USING (id);
SELECT (output ->> 'kept')::int + (output ->> 'dropped')::int = 60 AS all_counted,
       (output ->> 'dropped_cut')::int = (SELECT count(*) FROM pls_synthetic WHERE NOT finished) AS cut_counted,
       (output ->> 'dropped')::int >= greatest((output ->> 'dropped_cut')::int, (output ->> 'dropped_ratio')::int,
                                               (output ->> 'dropped_repetition')::int) AS dropped_ok
  FROM corpq.pipeline_stages WHERE pipeline = 'pls' AND stage = 4;
-- stage 5: the student trained on parallel + kept synthetic pairs
SELECT (j.result ->> 'pairs')::int = (SELECT count(*) FROM pl_train)
           + (SELECT count(*) FROM pls_synthetic WHERE kept) AS student_pairs,
       (SELECT owner FROM corpq.models WHERE name = 'pls_student')::text = current_user AS student_owned
  FROM corpq.pipeline_stages s JOIN corpq.jobs j ON j.id = s.subjob
 WHERE s.pipeline = 'pls' AND s.stage = 5;
-- gates: the teacher's dev BLEU before it translates; the student against it
SELECT s.stage, (s.output ->> 'dev_bleu')::numeric
           = pg_temp.dev_bleu(CASE s.stage WHEN 3 THEN 'plr_final' ELSE 'pls_student' END) AS dev_bleu_ok,
       s.stage = 3 OR (s.output ->> 'baseline_bleu')::numeric = pg_temp.dev_bleu('plr_final') AS baseline_ok
  FROM corpq.pipeline_stages s WHERE s.pipeline = 'pls' AND s.stage IN (3, 5) ORDER BY s.stage;

-- the baselines: one option away (random: uniform; dwf: word rarity)
SELECT corpq.self_train('plr_final', 'pl_lex', 'SELECT src, tgt FROM pl_train', 'SELECT id, src FROM pl_mono',
                        :'common'::jsonb || :'short' || '{"name": "pls_random", "k": 60, "seed": 5,
                                                         "sampling": "random", "tag_synthetic": true,
                                                         "dev": "SELECT src, tgt, label FROM pl_dev_l"}') AS rjob \gset
SELECT corpq.job_wait(:rjob, '900 s');
SELECT state, error FROM corpq.jobs WHERE id = :rjob;
-- a labelled dev set: the teacher's BLEU per label (no baseline), then the
-- student's against the teacher's per label
SELECT s.stage, e ->> 'label' AS label,
       (e ->> 'dev_bleu')::numeric = g.m_bleu AS dev_bleu_ok,
       CASE s.stage WHEN 3 THEN NOT e ? 'baseline_bleu' ELSE (e ->> 'baseline_bleu')::numeric = g.b_bleu END AS baseline_ok,
       CASE s.stage WHEN 3 THEN NOT e ? 'p_value' ELSE (e ->> 'p_value')::numeric = g.p END AS p_ok
  FROM corpq.pipeline_stages s, jsonb_array_elements(s.output -> 'labels') e,
       LATERAL pg_temp.label_gate(CASE s.stage WHEN 3 THEN 'plr_final' ELSE 'pls_random_student' END,
                                  'plr_final', e ->> 'label') g
 WHERE s.pipeline = 'pls_random' AND s.stage IN (3, 5) ORDER BY 1, 2;
SELECT count(*) AS sampled, count(*) FILTER (WHERE id IN (SELECT id FROM pls_sample)) < 60 AS other_sample
  FROM pls_random_sample;
SELECT corpq.self_train('plr_final', 'pl_lex', 'SELECT src, tgt FROM pl_train', 'SELECT id, src FROM pl_mono',
                        :'common'::jsonb || '{"name": "pls_dwf", "k": 60, "sampling": "dwf",
                                              "drop_cut": false, "max_xent": 1.5, "repetition": 0,
                                              "train": {"steps": 1}}') AS djob \gset
SELECT corpq.job_wait(:djob, '900 s');
SELECT state, error FROM corpq.jobs WHERE id = :djob;
-- dwf draws by word rarity: its sample is rarer than the uniform one
SELECT avg(corpq.word_rarity('pl_lex', d.src)) > (SELECT avg(corpq.word_rarity('pl_lex', src)) FROM pls_random_sample)
       AS rarer
  FROM pls_dwf_sample d;
-- max_xent drops hypotheses above 1.5 nats per token; drop_cut false keeps cut
-- ones, repetition 0 repeated ones
SELECT count(*) FILTER (WHERE kept IS DISTINCT FROM
           (finished IS NOT NULL AND -score <= 1.5 AND src_words <= 250 AND src_words > 0 AND tgt_words > 0
            AND greatest(src_words, tgt_words) <= 1.5 * least(src_words, tgt_words))) AS misfiltered,
       (SELECT (output ->> 'dropped_score')::int = count(*) FILTER (WHERE -score > 1.5)
               AND (output ->> 'dropped_cut')::int = 0 AND (output ->> 'dropped_repetition')::int = 0
          FROM corpq.pipeline_stages WHERE pipeline = 'pls_dwf' AND stage = 4) AS counted
  FROM pls_dwf_synthetic;

-- a monolingual line longer than the teacher's positions (max_positions 32)
-- gets no translation: stage 3 writes its row with a NULL hyp, stage 4 drops
-- it as untranslated, and the pipeline goes on (before, stage 3 failed)
CREATE TABLE pl_mono_long AS
SELECT id, src FROM pl_mono WHERE id <= 20
UNION ALL SELECT 1000, (SELECT string_agg('w' || (k % 30), ' ') FROM generate_series(1, 40) k);
SELECT corpq.self_train('plr_final', 'pl_lex', 'SELECT src, tgt FROM pl_train', 'SELECT id, src FROM pl_mono_long',
                        :'common'::jsonb || '{"name": "pll", "k": 21, "sampling": "random",
                                              "train": {"steps": 1}}') AS ljob \gset
SELECT corpq.job_wait(:ljob, '900 s');
SELECT state, error FROM corpq.jobs WHERE id = :ljob;
SELECT (SELECT (j.result ->> 'skipped_too_long')::int FROM corpq.pipeline_stages s JOIN corpq.jobs j ON j.id = s.subjob
         WHERE s.pipeline = 'pll' AND s.stage = 3) AS skipped_too_long,
       (SELECT (output ->> 'untranslated')::int FROM corpq.pipeline_stages WHERE pipeline = 'pll' AND stage = 4) AS untranslated,
       (SELECT count(*) FROM pll_sample) AS sampled,
       (SELECT string_agg(id::text, ',') FROM pll_translations WHERE hyp IS NULL) AS null_hyp_ids,
       (SELECT string_agg(id::text, ',') FROM pll_synthetic WHERE tgt IS NULL AND NOT kept) AS dropped_untranslated;

-- ---- resume after the worker is killed between stages ----
-- errors whose text holds a job id: the id replaced by N
CREATE FUNCTION pl_try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN regexp_replace(SQLERRM, '[0-9]+', 'N', 'g');
END $$;
-- until stage n of pipeline p has a sub-job
CREATE PROCEDURE pl_wait_stage(p text, n int) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 6000 LOOP
        PERFORM FROM corpq.pipeline_stages WHERE pipeline = p AND stage = n AND subjob IS NOT NULL;
        IF FOUND THEN RETURN; END IF;
        PERFORM pg_sleep(0.05);
        COMMIT;
    END LOOP;
    RAISE EXCEPTION 'stage % of % never started', n, p;
END $$;
-- (stage 3 trains 250 updates, so the kill lands while its sub-job runs)
\set resumable '{"name": "plk", "identifier": "plr_identifier", "train_final": false, "src_vocab": "pl_sv", "tgt_vocab": "pl_tv", "train": {"steps": 250, "max_tokens": 1024, "lr": 0.003, "warmup": 20, "seed": 3, "threads": 1}}'
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_train', NULL, :'common'::jsonb || :'resumable') AS kjob \gset
-- the same pipeline cannot run twice at once
SELECT pl_try(format('SELECT corpq.rejuvenate(%L, NULL, %L)', 'SELECT id, src, tgt FROM pl_train',
                     :'common'::jsonb || :'resumable'));
CALL pl_wait_stage('plk', 3);
SELECT pg_terminate_backend(worker_pid) FROM corpq.jobs WHERE id = :kjob;
SELECT corpq.job_wait(:kjob, '60 s') AS killed;
SELECT stage, name, finished IS NOT NULL AS finished FROM corpq.pipeline_stages
 WHERE pipeline = 'plk' ORDER BY stage;
SELECT subjob AS kept_subjob FROM corpq.pipeline_stages WHERE pipeline = 'plk' AND stage = 3 \gset
-- the same call resumes: stages 1 and 2 stay, stage 3 waits for the same sub-job
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_train', NULL, :'common'::jsonb || :'resumable') AS kjob2 \gset
SELECT corpq.job_wait(:kjob2, '900 s') AS resumed;
SELECT stage, name, CASE job WHEN :kjob THEN 'killed job' WHEN :kjob2 THEN 'resumed job' END AS finished_by,
       subjob IS NOT DISTINCT FROM CASE WHEN stage = 3 THEN :kept_subjob END
           OR stage = 4 AS same_subjob
  FROM corpq.pipeline_stages WHERE pipeline = 'plk' ORDER BY stage;
-- no row twice
SELECT (SELECT count(*) FROM plk_pairs) AS pairs,
       (SELECT count(*) - count(DISTINCT id) FROM plk_translations) AS duplicated_translations,
       (SELECT count(*) FROM plk_rejuvenated) = (SELECT count(*) FROM plk_pairs WHERE inactive) AS rejuvenated_all,
       (SELECT count(*) FROM plk_pairs p JOIN plr_pairs q USING (id)
         WHERE p.prob IS DISTINCT FROM q.prob) AS other_prob;
-- a finished pipeline resubmitted: nothing to do, nothing written twice
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_train', NULL, :'common'::jsonb || :'resumable') AS kjob3 \gset
SELECT corpq.job_wait(:kjob3, '60 s') AS again;
SELECT count(*) AS stage_rows, count(*) FILTER (WHERE job = :kjob3) AS by_third_job
  FROM corpq.pipeline_stages WHERE pipeline = 'plk';

-- ---- cancel: the running sub-job is cancelled too; finished stages stay ----
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_train', NULL,
                        :'common'::jsonb || '{"name": "plc", "identifier": "plr_identifier", "train_final": false,
                                              "src_vocab": "pl_sv", "tgt_vocab": "pl_tv",
                                              "train": {"steps": 100000, "threads": 1}}') AS cjob \gset
CALL pl_wait_stage('plc', 3);
SELECT subjob AS csub FROM corpq.pipeline_stages WHERE pipeline = 'plc' AND stage = 3 \gset
SELECT corpq.job_cancel(:cjob) IN ('running', 'queued') AS cancel_sent;
SELECT corpq.job_wait(:cjob, '60 s') AS pipeline_state, corpq.job_wait(:csub, '60 s') AS subjob_state;
SELECT stage, name, finished IS NOT NULL AS finished FROM corpq.pipeline_stages
 WHERE pipeline = 'plc' ORDER BY stage;
SELECT count(*) AS pairs_kept FROM plc_pairs;

-- ---- a failing stage is named; the finished stages' outputs stay ----
-- (the dev query fails; the quality gate of stage 3 reads it first)
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_train',
                        'SELECT src, tgt FROM pl_dev WHERE 1 / (length(src) - length(src)) = 0',
                        :'common'::jsonb || '{"name": "plf", "identifier": "plr_identifier",
                                              "rejuvenator": "plr_rejuvenator",
                                              "src_vocab": "pl_sv", "tgt_vocab": "pl_tv"}') AS fjob \gset
SELECT corpq.job_wait(:fjob, '900 s');
SELECT state, regexp_replace(error, '[0-9]+', 'N', 'g') AS error FROM corpq.jobs WHERE id = :fjob;
SELECT stage, name, finished IS NOT NULL AS finished FROM corpq.pipeline_stages
 WHERE pipeline = 'plf' ORDER BY stage;
SELECT count(*) AS rejuvenated_kept FROM plf_rejuvenated;
-- a stage is timed from its own start, also one that computes in the worker
-- (stage 1 scores with the given identifier): its row goes in before the work,
-- so it holds the job's time up to its end (its row was once written at the
-- end only, with started = finished); the stages' starts are in order
SELECT s.finished - s.started > s.started - j.started AS stage1_timed,
       (SELECT bool_and(started >= prev) FROM (SELECT started, lag(finished) OVER (ORDER BY stage) AS prev
                                                FROM corpq.pipeline_stages WHERE pipeline = 'plf') o) AS in_order
  FROM corpq.pipeline_stages s JOIN corpq.jobs j ON j.id = s.job
 WHERE s.pipeline = 'plf' AND s.stage = 1;

-- ---- errors at submission ----
\set c '''SELECT id, src, tgt FROM pl_train'''
SELECT corpq.rejuvenate(:c, NULL, '{"ratio": 0.1}');
SELECT corpq.rejuvenate(:c, NULL, jsonb_build_object('name', repeat('n', 49)));
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "ratio": 0}');
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "ratio": 1}');
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "ratio": "a tenth"}');
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "repetition": -1}');
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "ratoi": 0.1}');
-- (terse: the detail lists every model of the database)
\set VERBOSITY terse
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "identifier": "nope"}');
\set VERBOSITY default
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "src_vocab": "nope", "tgt_vocab": "pl_tv"}');
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e"}');
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "src_vocab": "pl_sv", "tgt_vocab": "pl_tv", "train": 5}');
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "src_vocab": "pl_sv", "tgt_vocab": "pl_tv", "model": {"preset": "tiny", "dmodel": 8}}');
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "src_vocab": "pl_sv", "tgt_vocab": "pl_tv", "model": {"preset": "huge"}}');
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "src_vocab": "pl_sv", "tgt_vocab": "pl_tv", "train": {"stpes": 5}}');
SELECT corpq.rejuvenate(:c, NULL, '{"name": "e", "src_vocab": "pl_sv", "tgt_vocab": "pl_tv", "translate": {"beam": 0}}');
SELECT corpq.rejuvenate('SELECT src, tgt FROM pl_train', NULL, '{"name": "e"}');
SELECT corpq.rejuvenate('DELETE FROM pl_pairs', NULL, '{"name": "e"}');
SELECT corpq.rejuvenate(:c, 'SELECT src FROM pl_dev', '{"name": "e"}');
SELECT corpq.rejuvenate(NULL, NULL, '{"name": "e"}');
SELECT corpq.self_train('t', 'l', 'SELECT src, tgt FROM pl_train', NULL, '{"name": "e"}');
SELECT corpq.rejuvenate(:c, NULL, :'common'::jsonb || '{"name": "plr", "src_vocab": "pl_sv", "tgt_vocab": "pl_tv"}');
CREATE TABLE ple_pairs ();
SELECT corpq.rejuvenate(:c, NULL, '{"name": "ple", "src_vocab": "pl_sv", "tgt_vocab": "pl_tv"}');
\set p '''plr_final'', ''pl_lex'', ''SELECT src, tgt FROM pl_train'', ''SELECT id, src FROM pl_mono'''
SELECT corpq.self_train(:p, '{"name": "e"}');
SELECT corpq.self_train(:p, '{"name": "e", "k": 0}');
SELECT corpq.self_train(:p, '{"name": "e", "k": 1, "model": {"d_model": 8}}');
SELECT corpq.self_train(:p, '{"name": "e", "k": 10, "sampling": "dfw"}');
SELECT corpq.self_train(:p, '{"name": "e", "k": 10, "r": 0}');
SELECT corpq.self_train(:p, '{"name": "e", "k": 10, "dev": "SELECT 1"}');
\set VERBOSITY terse
SELECT corpq.self_train('nope', 'pl_lex', 'SELECT src, tgt FROM pl_train', 'SELECT id, src FROM pl_mono', '{"name": "e", "k": 1}');
\set VERBOSITY default
SELECT corpq.self_train('plr_final', 'nope', 'SELECT src, tgt FROM pl_train', 'SELECT id, src FROM pl_mono', '{"name": "e", "k": 1}');
SELECT corpq.self_train('plr_final', 'pl_lex', 'SELECT id, src, tgt FROM pl_train', 'SELECT id, src FROM pl_mono', '{"name": "e", "k": 1}');
SELECT corpq.self_train('plr_final', 'pl_lex', 'SELECT src, tgt FROM pl_train', 'SELECT src FROM pl_mono', '{"name": "e", "k": 1}');
SELECT corpq.self_train(:p, '{"name": "plr", "k": 1}');
SELECT count(*) AS pipelines FROM corpq.pipelines;

-- ---- privileges: others neither see nor take a pipeline ----
SELECT tableowner = current_user AS tables_owned FROM pg_tables WHERE tablename = 'plr_pairs';
CREATE ROLE regress_pl_other;
GRANT SELECT ON pl_train TO regress_pl_other;
SET ROLE regress_pl_other;
\set given '{"identifier": "plr_identifier", "rejuvenator": "plr_rejuvenator", "train_final": false}'
SELECT count(*) AS visible_pipelines FROM corpq.pipelines;
SELECT count(*) AS visible_stages FROM corpq.pipeline_stages;
SELECT corpq.pipeline_drop('plr') AS dropped_others;
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_train', NULL, :'given'::jsonb || '{"name": "plo"}');
RESET ROLE;
CREATE SCHEMA regress_pl_schema AUTHORIZATION regress_pl_other;
SET ROLE regress_pl_other;
SET search_path = regress_pl_schema, public;
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_train', NULL, :'given'::jsonb || '{"name": "plr"}');
INSERT INTO corpq.pipeline_stages (pipeline, stage, name, job, owner) VALUES ('plr', 9, 'x', 1, 'regress_pl_other');
RESET search_path;
RESET ROLE;
DROP SCHEMA regress_pl_schema;
-- (jobs started by other login roles, reading and writing as them:
-- test/integration/pipeline_resume.sh)
SELECT corpq.pipeline_drop('plc') AS dropped, corpq.pipeline_drop('plc') AS dropped_again;
SELECT count(*) AS plc_stages FROM corpq.pipeline_stages WHERE pipeline = 'plc';
REVOKE ALL ON pl_train FROM regress_pl_other;
REVOKE ALL ON corpq.object_owners FROM regress_pl_other;
DROP ROLE regress_pl_other;

-- ---- a planted table, a planted operator, a squatted model name (issue 31) ----
-- Another role with CREATE in the same schema must neither take a pipeline's
-- table (its triggers would run as the pipeline's owner), nor have its
-- operators called by the pipeline's statements, nor take the name of a
-- model the pipeline will create.
CREATE ROLE regress_pl_planter;
CREATE SCHEMA pl_shared;
GRANT USAGE, CREATE ON SCHEMA pl_shared TO PUBLIC;
CREATE SEQUENCE pl_shared.evil_calls;
GRANT USAGE, SELECT, UPDATE ON SEQUENCE pl_shared.evil_calls TO PUBLIC;
CREATE VIEW pl_slow AS SELECT id, src, tgt FROM pl_train WHERE pg_sleep(0.01) IS NOT NULL;
GRANT SELECT ON pl_train, pl_slow, pl_pairs TO regress_pl_planter;
SET ROLE regress_pl_planter;
-- an exact-match float8 * bigint: stage 2's "ratio * count(*)" would take it
CREATE FUNCTION pl_shared.evil_mul(float8, bigint) RETURNS float8 LANGUAGE sql
    AS 'SELECT nextval(''pl_shared.evil_calls'')::float8 * 0 + $1 * $2';
CREATE OPERATOR pl_shared.* (LEFTARG = float8, RIGHTARG = bigint, FUNCTION = pl_shared.evil_mul);
RESET ROLE;
SET search_path = pl_shared, public;
\set planted '{"name": "plt", "identifier": "plr_identifier", "rejuvenator": "plr_rejuvenator", "train_final": false}'
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_slow', NULL, :'common'::jsonb || :'planted') AS tjob \gset
-- the tables exist from submission, owned by the submitter: the names are taken
SELECT tablename, tableowner = current_user AS own FROM pg_tables
 WHERE schemaname = 'pl_shared' ORDER BY tablename;
SELECT corpq.job_cancel(:tjob) IN ('running', 'queued') AS cancel_sent;
SELECT corpq.job_wait(:tjob, '60 s') AS first_attempt;
SET ROLE regress_pl_planter;
CREATE TABLE pl_shared.plt_translations (id bigint, hyp text, score float8);
RESET ROLE;
-- model names a pipeline will create are reserved at submission
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_train', NULL,
                        :'common'::jsonb || '{"name": "plq", "identifier": "plr_identifier", "src_vocab": "pl_sv",
                                              "tgt_vocab": "pl_tv", "train": {"steps": 100000, "threads": 1}}') AS qjob \gset
SELECT corpq.job_cancel(:qjob) IN ('running', 'queued') AS cancel_sent;
SELECT corpq.job_wait(:qjob, '60 s') IN ('cancelled', 'failed') AS q_stopped;
SELECT reserved FROM corpq.pipelines WHERE name = 'plq';
SET ROLE regress_pl_planter;
SELECT corpq.model_create('plq_rejuvenator', '{"preset": "tiny"}', 'pl_sv', 'pl_tv');
SELECT corpq.model_create('plq_final', '{"preset": "tiny"}', 'pl_sv', 'pl_tv');
RESET ROLE;
-- alice drops her translations table; the planter plants one with a trigger
DROP TABLE pl_shared.plt_translations;
SET ROLE regress_pl_planter;
CREATE TABLE pl_shared.plt_translations (id bigint, hyp text, score float8);
CREATE FUNCTION pl_shared.evil_trigger() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN PERFORM nextval('pl_shared.evil_calls'); RETURN NEW; END$$;
CREATE TRIGGER evil BEFORE INSERT OR UPDATE ON pl_shared.plt_translations
    FOR EACH ROW EXECUTE FUNCTION pl_shared.evil_trigger();
GRANT ALL ON pl_shared.plt_translations TO PUBLIC;
RESET ROLE;
-- resumed: stage 4 refuses the planted table, naming it; nothing of the planter's ran
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pl_slow', NULL, :'common'::jsonb || :'planted') AS tjob2 \gset
SELECT corpq.job_wait(:tjob2, '300 s') AS resumed_attempt;
SELECT error FROM corpq.jobs WHERE id = :tjob2;
SELECT stage, name, finished IS NOT NULL AS finished FROM corpq.pipeline_stages
 WHERE pipeline = 'plt' ORDER BY stage;
SELECT is_called AS evil_code_ran FROM pl_shared.evil_calls;
RESET search_path;
SELECT corpq.pipeline_drop('plt') AS dropped_plt, corpq.pipeline_drop('plq') AS dropped_plq;
DROP SCHEMA pl_shared CASCADE;
REVOKE ALL ON pl_train, pl_slow, pl_pairs FROM regress_pl_planter;
DROP VIEW pl_slow;

-- ---- clean up: later tests list the catalog's models ----
SELECT count(corpq.pipeline_drop(name)) AS pipelines_dropped FROM corpq.pipelines;
SELECT count(*) AS models_dropped
  FROM (SELECT corpq.model_drop(name) FROM corpq.models
         WHERE name ~ '^pl[a-z_]*_(identifier|rejuvenator|final|student)$') d;
SELECT corpq.lexicon_drop('pl_lex');
SELECT corpq.vocab_drop('pl_sv');
SELECT corpq.vocab_drop('pl_tv');
-- (every pipeline's tables exist from its submission, the failed ones' too)
DO $$
DECLARE t text;
BEGIN
    FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema()
              AND tablename ~ '^pl[a-z]+(_[a-z]+)?_(pairs|bins|translations|rejuvenated|sample|synthetic)$' LOOP
        EXECUTE format('DROP TABLE %I', t);
    END LOOP;
END $$;
SELECT count(*) AS pipeline_tables_left FROM pg_tables
 WHERE tablename ~ '^pl[a-z]+(_[a-z]+)?_(pairs|bins|translations|rejuvenated|sample|synthetic)$';
DROP VIEW pl_train, pl_dev_l, pl_dev;
DROP TABLE pl_pairs, pl_mono, pl_mono_long;
DROP FUNCTION pl_try(text);
REVOKE ALL ON corpq.object_owners FROM regress_pl_planter;
DROP ROLE regress_pl_planter;
DROP PROCEDURE pl_wait_stage(text, int);
