-- Translation in SQL: translate(), translate_nbest(), translate_rows(),
-- translate_job() on a tiny model trained here on a generated word-translation
-- task and on a random one.  Consistency with the teacher-forced scoring
-- functions, greedy against an argmax loop, sampling, n-best order, one
-- result whatever the batch, the parallel plan or the job, BLEU, bad input.
-- Translations depend on the CPU's float rounding (training too), so only
-- relations between results are shown, never the translations themselves.
-- Scores are compared with = : a sentence's arithmetic is the same in every
-- batch and in the teacher-forced forward as far as the weight products give
-- a row the same bits whatever rows share the call (the row-independent
-- GEMM, issue 11); the hypotheses agree anyway.
SET client_min_messages = warning;

-- Source: 3..8 words of 40; target: each word's fixed translation, in order.
CREATE TABLE tr_pairs AS
SELECT g AS id,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 40), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 6) k) AS src
  FROM generate_series(1, 2000) g;
ALTER TABLE tr_pairs ADD COLUMN tgt text;
UPDATE tr_pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 40), ' ' ORDER BY o)
                             FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
CREATE VIEW tr_dev AS SELECT id, src, tgt FROM tr_pairs WHERE id % 20 = 7;
SELECT corpq.vocab_build('tr_src', 'SELECT src FROM tr_pairs');
SELECT corpq.vocab_build('tr_tgt', 'SELECT tgt FROM tr_pairs');
SELECT corpq.model_create('tr_m', '{"preset": "tiny", "max_positions": 32}', 'tr_src', 'tr_tgt', 1);
SELECT corpq.model_create('tr_rand', '{"preset": "tiny", "max_positions": 32}', 'tr_src', 'tr_tgt', 2);
SELECT corpq.train('tr_m', 'SELECT src, tgt FROM tr_pairs WHERE id % 20 <> 7 ORDER BY id', NULL,
                   '{"steps": 200, "max_tokens": 1024, "lr": 0.003, "warmup": 50, "seed": 3,
                     "checkpoint_every": 200, "threads": 1}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');

-- ---- labels: STABLE on a name, IMMUTABLE on a pinned version ----
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel, p.proisstrict
  FROM pg_proc p WHERE p.pronamespace = 'corpq'::regnamespace AND p.proname LIKE 'translate%'
 ORDER BY 1::text;

-- ---- quality: BLEU of the trained model against the references ----
CREATE TEMP TABLE dev_out AS
SELECT id, src, tgt, corpq.translate('tr_m', src) AS hyp,
       corpq.translate('tr_rand', src) AS rand_hyp FROM tr_dev;
SELECT count(*) AS sentences, corpq.bleu(hyp, tgt) > 50 AS trained_bleu_above_50,
       corpq.bleu(rand_hyp, tgt) < 5 AS random_bleu_below_5,
       count(*) FILTER (WHERE hyp = tgt) > count(*) / 3 AS third_exact
  FROM dev_out;

-- ---- the score is sent_logprob of the hypothesis (normalised by lenpen) ----
-- lenpen 0: score = logprob = sent_logprob(src, hyp) = sum(token_logprobs),
-- token_logprobs = token_scores' logprob, the last one for </s>.
CREATE TEMP TABLE nb AS
SELECT d.id, d.src, n.* FROM tr_dev d, corpq.translate_nbest('tr_m', d.src, '{"lenpen": 0}') n;
SELECT count(*) AS hyps,
       count(*) FILTER (WHERE score = (SELECT sum(x) FROM unnest(token_logprobs) x)) AS score_is_sum,
       count(*) FILTER (WHERE score = corpq.sent_logprob('tr_m', src, hyp)) AS score_is_sent_logprob,
       count(*) FILTER (WHERE token_logprobs = (SELECT array_agg(logprob ORDER BY pos)
                                                  FROM corpq.token_scores('tr_m', src, hyp))) AS per_token
  FROM nb;
-- a random model's long hypotheses too: no reserved token without text (<s>,
-- <pad>) is ever chosen, so every hypothesis's text gives back its tokens
SELECT count(*) AS hypotheses,
       count(*) FILTER (WHERE n.score = corpq.sent_logprob('tr_rand', d.src, n.hyp)) AS text_gives_back_tokens,
       count(*) FILTER (WHERE array_length(n.token_logprobs, 1)
                              = coalesce(array_length(regexp_split_to_array(nullif(n.hyp, ''), ' '), 1), 0) + 1)
         AS one_word_per_token
  FROM tr_dev d, corpq.translate_nbest('tr_rand', d.src, '{"beam": 4, "nbest": 4, "lenpen": 0}') n;
-- lenpen 1 (the default): score = sent_logprob / (T + 1) = ln(sent_prob)
SELECT count(*) AS hyps,
       count(*) FILTER (WHERE n.score = corpq.sent_logprob('tr_m', d.src, n.hyp)
                                        / (coalesce(array_length(corpq.vocab_encode('tr_tgt', n.hyp), 1), 0) + 1))
         AS normalised,
       count(*) FILTER (WHERE exp(n.score) = corpq.sent_prob('tr_m', d.src, n.hyp)) AS is_ln_sent_prob,
       count(*) FILTER (WHERE n.hyp = corpq.translate('tr_m', d.src)) AS rank1_is_translate
  FROM tr_dev d, corpq.translate_nbest('tr_m', d.src) n;

-- ---- greedy = an argmax loop over the teacher-forced forward ----
-- beam 1, min_len 0: every token of the hypothesis, then </s>, is the
-- forward's most probable token given the source and the tokens before it.
SELECT count(*) AS sentences,
       count(*) FILTER (WHERE (SELECT bool_and(token = pred_token)
                                 FROM corpq.token_scores('tr_m', src, corpq.translate('tr_m', src, '{"beam": 1, "min_len": 0}'))))
         AS greedy_is_argmax,
       count(*) FILTER (WHERE corpq.translate('tr_rand', src, '{"beam": 1, "min_len": 0}') IS NOT NULL
                          AND (SELECT bool_and(token = pred_token)
                                 FROM corpq.token_scores('tr_rand', src, corpq.translate('tr_rand', src, '{"beam": 1, "min_len": 0}')))
                          ) AS random_model_too
  FROM tr_dev;

-- ---- sampling ----
-- topk 1 is greedy (same text, same scores); a seed reproduces; seeds differ
SELECT count(*) AS sentences,
       count(*) FILTER (WHERE corpq.translate('tr_rand', src, '{"search": "sample", "beam": 1, "topk": 1, "seed": 9}')
                            = corpq.translate('tr_rand', src, '{"beam": 1}')) AS topk1_is_greedy,
       count(*) FILTER (WHERE (SELECT array_agg(score) FROM corpq.translate_nbest('tr_rand', src, '{"search": "sample", "beam": 1, "topk": 1}'))
                            = (SELECT array_agg(score) FROM corpq.translate_nbest('tr_rand', src, '{"beam": 1}'))) AS same_scores,
       count(*) FILTER (WHERE corpq.translate('tr_rand', src, '{"search": "sample", "temperature": 2, "seed": 5}')
                            = corpq.translate('tr_rand', src, '{"search": "sample", "temperature": 2, "seed": 5}')) AS reproducible,
       count(*) FILTER (WHERE corpq.translate('tr_rand', src, '{"search": "sample", "temperature": 2, "seed": 5}')
                           <> corpq.translate('tr_rand', src, '{"search": "sample", "temperature": 2, "seed": 6}')) > 50 AS seeds_differ,
       count(*) FILTER (WHERE corpq.translate('tr_rand', src, '{"search": "sample", "topp": 0.9, "seed": 5}') IS NOT NULL) AS topp
  FROM tr_dev;

-- ---- n-best: nbest rows, ranks in order, scores not increasing, distinct ----
SELECT count(DISTINCT id) AS sentences, count(*) = 4 * count(DISTINCT id) AS four_each,
       bool_and(ok) AS ordered
  FROM (SELECT d.id, n.rank = row_number() OVER w
                     AND coalesce(n.score <= lag(n.score) OVER w, true) AS ok
          FROM tr_dev d, corpq.translate_nbest('tr_m', d.src, '{"beam": 6, "nbest": 4}') n
        WINDOW w AS (PARTITION BY d.id ORDER BY n.rank)) s;
SELECT count(*) = count(DISTINCT (id, hyp)) AS distinct_hyps
  FROM tr_dev d, corpq.translate_nbest('tr_m', d.src, '{"beam": 6, "nbest": 4}') n;

-- ---- one result whatever the batch: translate() = translate_rows() at every batch size ----
CREATE TEMP TABLE rows_out AS
SELECT b.batch, r.* FROM unnest(ARRAY[1, 3, 32]) b(batch),
       corpq.translate_rows('tr_m', 'SELECT id, src FROM tr_dev ORDER BY id',
                            jsonb_build_object('batch', b.batch)) r;
SELECT r.batch, count(*) AS rows,
       count(*) FILTER (WHERE r.hyp = d.hyp) AS same_hyp,
       count(*) FILTER (WHERE r.score = (SELECT n.score FROM corpq.translate_nbest('tr_m', d.src) n)) AS same_score
  FROM rows_out r JOIN dev_out d USING (id) GROUP BY r.batch ORDER BY r.batch;
-- a longer source after short ones: the translator is rebuilt larger
SELECT count(*) AS rows, count(*) FILTER (WHERE r.hyp = corpq.translate('tr_m', s.src)) AS same_hyp
  FROM corpq.translate_rows('tr_m', $$SELECT id, src FROM tr_dev UNION ALL
                                       SELECT 9000 + n, repeat('w5 w9 ', n) FROM generate_series(9, 15) n ORDER BY 1$$,
                            '{"batch": 8}') r
  JOIN (SELECT id, src FROM tr_dev UNION ALL SELECT 9000 + n, repeat('w5 w9 ', n) FROM generate_series(9, 15) n) s USING (id);
-- sampling is keyed by the row id: the same at every batch size
SELECT count(*) AS rows, count(*) FILTER (WHERE a.hyp = b.hyp) AS same_hyp,
       count(*) FILTER (WHERE a.score = b.score) AS same_score
  FROM corpq.translate_rows('tr_rand', 'SELECT id, src FROM tr_dev', '{"search": "sample", "beam": 3, "nbest": 2, "seed": 4, "batch": 1}') a
  JOIN corpq.translate_rows('tr_rand', 'SELECT id, src FROM tr_dev', '{"search": "sample", "beam": 3, "nbest": 2, "seed": 4, "batch": 7}') b USING (id);
-- rows in the query's order, NULL sources give NULL, an empty source an empty string
SELECT id, hyp IS NULL AS null_hyp, hyp = '' AS empty_hyp, score IS NULL AS null_score
  FROM corpq.translate_rows('tr_m', $$SELECT * FROM (VALUES (3, 'w1 w2'), (1, NULL), (2, ''), (-5, 'w3')) v(id, src)$$);
-- the model evicted by the query itself (model_cache_mb 0): the same rows
SET corpq.model_cache_mb = 0;
SELECT count(*) AS rows, count(*) FILTER (WHERE r.hyp = d.hyp) AS same_hyp,
       count(*) FILTER (WHERE r.score = o.score) AS same_score
  FROM corpq.translate_rows('tr_m', $$SELECT id, src FROM tr_dev WHERE corpq.sent_prob('tr_rand', src, tgt) > 0$$,
                            '{"batch": 5}') r
  JOIN dev_out d USING (id) JOIN rows_out o ON o.id = r.id AND o.batch = 1;
RESET corpq.model_cache_mb;

-- ---- a parallel plan gives the serial plan's rows ----
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/par_check.sql'
\i :fixture
-- temp tables are not scanned by parallel workers: a plain table
CREATE TABLE tr_par_t AS SELECT * FROM tr_dev;
ANALYZE tr_par_t;
SELECT label, (c).workers > 0 AS parallel, (c).same_as_serial
  FROM (VALUES
    ('translate (name)', $q$SELECT id, corpq.translate('tr_m', src) FROM tr_par_t$q$),
    ('translate (pinned), sampling', $q$SELECT id, corpq.translate('tr_m@2'::corpq.pinned_model, src, '{"search": "sample", "seed": 3}') FROM tr_par_t$q$),
    ('translate_nbest', $q$SELECT t.id, n.* FROM tr_par_t t, corpq.translate_nbest('tr_m', t.src, '{"nbest": 2}') n$q$),
    ('bleu of translate', $q$SELECT round(corpq.bleu(corpq.translate('tr_m', src), tgt)::numeric, 10) FROM tr_par_t$q$)
  ) q(label, sql), LATERAL (SELECT pg_temp.par_check(q.sql) AS c) p ORDER BY label;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- ---- pinned versions: the same as the name while it is the latest; index expressions ----
SELECT latest_version FROM corpq.models WHERE name = 'tr_m';
SELECT count(*) FILTER (WHERE corpq.translate('tr_m@2'::corpq.pinned_model, src) = hyp) AS pinned_same
  FROM dev_out;
SELECT count(*) FILTER (WHERE corpq.translate('tr_m@1'::corpq.pinned_model, src) = corpq.translate('tr_m@1', src)) AS v1_text_same
  FROM tr_dev;
CREATE INDEX tr_pairs_hyp ON tr_pairs (corpq.translate('tr_m@2'::corpq.pinned_model, src)) WHERE id % 20 = 7;
CREATE INDEX tr_pairs_bad ON tr_pairs (corpq.translate('tr_m', src));
SET enable_seqscan = off;
SELECT count(*) = (SELECT count(*) FROM dev_out WHERE hyp = tgt) AS index_finds_exact
  FROM tr_pairs WHERE id % 20 = 7 AND corpq.translate('tr_m@2'::corpq.pinned_model, src) = tgt;
RESET enable_seqscan;
DROP INDEX tr_pairs_hyp;

-- ---- bounds: output length, empty source, <unk>, too long ----
-- finished or cut: a hypothesis forced to </s> at the length limit is cut;
-- the same flag in translate_nbest and translate_rows
SELECT rank, finished, cardinality(token_logprobs) - 1 AS tokens
  FROM corpq.translate_nbest('tr_m', 'w1 w2', '{"beam": 2, "nbest": 2, "min_len": 1000, "max_len_b": 5}');
SELECT bool_and(finished) AS all_finished
  FROM corpq.translate_nbest('tr_m', 'w1 w2', '{"beam": 4, "nbest": 4}');
SELECT id, finished FROM corpq.translate_rows('tr_m', $$SELECT 1, 'w1 w2' UNION ALL SELECT 2, NULL
                                                 UNION ALL SELECT 3, ''$$, '{"max_len_b": 1, "max_len_a": 0}') ORDER BY id;
-- a model made never to stop: max_len_b tokens, or max_positions - 1 at most
SELECT array_length(corpq.vocab_encode('tr_tgt', corpq.translate('tr_m', 'w1 w2', '{"min_len": 1000, "max_len_b": 5}')), 1) AS b5,
       array_length(corpq.vocab_encode('tr_tgt', corpq.translate('tr_m', 'w1 w2', '{"min_len": 1000, "max_len_b": 1000000}')), 1) AS capped,
       array_length(corpq.vocab_encode('tr_tgt', corpq.translate('tr_m', 'w1 w2', '{"min_len": 1000, "max_len_a": 2, "max_len_b": 1}')), 1) AS a2_b1;
-- an empty source: </s> only, scored as sent_logprob(src, '')
SELECT corpq.translate('tr_m', '') = '' AS empty, corpq.translate('tr_m', '   ') = '' AS blank;
SELECT rank, hyp, array_length(token_logprobs, 1) AS n_logprobs,
       score = corpq.sent_logprob('tr_m', '', '') AS score_is_eos
  FROM corpq.translate_nbest('tr_m', '', '{"beam": 3, "nbest": 3}');
-- <unk> rewarded: the hypothesis keeps it and shows it
SELECT position('<unk>' IN corpq.translate('tr_m', 'w1 w2 w3', '{"unk_penalty": -100}')) > 0 AS shows_unk,
       position('<unk>' IN corpq.translate('tr_m', 'w1 w2 w3')) = 0 AS none_by_default;
SELECT corpq.translate('tr_m', repeat('w1 ', 31)) IS NOT NULL AS at_limit;
SELECT corpq.translate('tr_m', repeat('w1 ', 32));
SELECT * FROM corpq.translate_rows('tr_m', $$SELECT 1, repeat('w1 ', 40)$$);
-- skip_too_long (as translate_job's): NULL, no rows, a row with NULLs
SELECT corpq.translate('tr_m', repeat('w1 ', 32), '{"skip_too_long": true}') IS NULL AS skipped,
       corpq.translate('tr_m@1'::corpq.pinned_model, repeat('w1 ', 32), '{"skip_too_long": true}') IS NULL AS pinned_skipped,
       corpq.translate('tr_m', 'w1 w2', '{"skip_too_long": true}') = corpq.translate('tr_m', 'w1 w2') AS short_same,
       (SELECT count(*) FROM corpq.translate_nbest('tr_m', repeat('w1 ', 32), '{"skip_too_long": true}')) AS nbest_rows;
SELECT id, hyp IS NULL AS no_hyp, score IS NULL AS no_score, finished IS NULL AS no_finished,
       hyp IS NOT DISTINCT FROM corpq.translate('tr_m', 'w1 w2') AS short_same
  FROM corpq.translate_rows('tr_m', $$SELECT 1, repeat('w1 ', 40) UNION ALL SELECT 2, 'w1 w2'$$,
                            '{"skip_too_long": true}') ORDER BY id;
SELECT corpq.translate('tr_m', 'w1', '{"skip_too_long": "yes"}');

-- ---- NULLs ----
SELECT corpq.translate(NULL, 'w1') IS NULL AS a, corpq.translate('tr_m', NULL) IS NULL AS b,
       corpq.translate('tr_m', 'w1', NULL) IS NULL AS c,
       (SELECT count(*) FROM corpq.translate_nbest('tr_m', NULL)) AS d;
SELECT count(*) AS default_options FROM corpq.translate_rows('tr_m', 'SELECT id, src FROM tr_dev LIMIT 3', NULL);
SELECT * FROM corpq.translate_rows(NULL, 'SELECT 1, ''w1''');
SELECT * FROM corpq.translate_rows('tr_m', NULL);
SELECT * FROM corpq.translate_rows('tr_m', 'SELECT NULL::int, ''w1''');

-- ---- bad options and queries ----
SELECT corpq.translate('tr_m', 'w1', '{"bem": 5}');
SELECT corpq.translate('tr_m', 'w1', '{"batch": 5}');
SELECT corpq.translate('tr_m', 'w1', '[5]');
SELECT corpq.translate('tr_m', 'w1', '{"beam": 0}');
SELECT corpq.translate('tr_m', 'w1', '{"beam": 22}');
SELECT corpq.translate('tr_m', 'w1', '{"beam": 2, "nbest": 3}');
SELECT corpq.translate('tr_m', 'w1', '{"lenpen": 1e400}');
SELECT corpq.translate('tr_m', 'w1', '{"lenpen": "1"}');
SELECT corpq.translate('tr_m', 'w1', '{"max_len_b": -1}');
SELECT corpq.translate('tr_m', 'w1', '{"search": "sample", "topk": -1}');
SELECT corpq.translate('tr_m', 'w1', '{"search": "sample", "topk": 45}');
SELECT corpq.translate('tr_m', 'w1', '{"search": "sample", "topp": 1.5}');
SELECT corpq.translate('tr_m', 'w1', '{"search": "sample", "topk": 3, "topp": 0.5}');
SELECT corpq.translate('tr_m', 'w1', '{"topk": 3}');
SELECT corpq.translate('tr_m', 'w1', '{"search": "greedy"}');
SELECT corpq.translate('tr_m', 'w1', '{"temperature": 0}');
-- below the documented minimum (1e-3) the scaled logits overflow float32
SELECT corpq.translate('tr_m', 'w1', '{"temperature": 1e-300}');
SELECT corpq.translate('tr_m', 'w1', '{"search": "sample", "temperature": 1e-45}');
SELECT corpq.translate('tr_m', 'w1', '{"temperature": 0.0009}');
SELECT corpq.translate('tr_m', 'w1', '{"temperature": 0.001}') IS NOT NULL AS at_minimum;
SELECT corpq.translate('tr_m', 'w1', '{"seed": -1}');
SELECT corpq.translate('nope', 'w1');
SELECT corpq.translate('tr_m@9'::corpq.pinned_model, 'w1');
SELECT * FROM corpq.translate_rows('tr_m', 'SELECT id, src FROM tr_dev', '{"batch": 0}');
SELECT * FROM corpq.translate_rows('tr_m', 'SELECT src FROM tr_dev');
SELECT * FROM corpq.translate_rows('tr_m', 'SELECT id, length(src) FROM tr_dev');
SELECT * FROM corpq.translate_rows('tr_m', 'DELETE FROM tr_pairs RETURNING id, src');

-- ---- interrupts: a statement timeout stops decoding ----
SET statement_timeout = '200ms';
SELECT count(*) FROM corpq.translate_rows('tr_m', 'SELECT id, src FROM tr_pairs, generate_series(1, 5)',
                                          '{"beam": 20, "min_len": 1000}');
RESET statement_timeout;

-- ---- translate_job: the rows of translate_rows in the target table ----
-- (on 2 threads where the server has 2 CPUs: the same bits as a session's 1)
CREATE TABLE tr_target (id bigint, hyp text, score double precision, at timestamptz DEFAULT now());
SELECT corpq.translate_job('tr_m', 'SELECT id, src FROM tr_dev ORDER BY id', 'tr_target',
                           '{"chunk_rows": 7, "batch": 4, "threads": 2}') AS tjob \gset
SELECT corpq.job_wait(:tjob, '600 s');
SELECT state, error, result ->> 'model' AS model, result ->> 'target' AS target,
       (result ->> 'rows')::int AS rows, (result ->> 'translated')::int AS translated,
       (result ->> 'chunks')::int AS chunks, result ->> 'resumed_from_row' AS resumed_from,
       (result ->> 'tokens')::bigint = (SELECT sum(coalesce(array_length(corpq.vocab_encode('tr_tgt', hyp), 1), 0) + 1)
                                          FROM tr_target) AS tokens_add_up
  FROM corpq.jobs WHERE id = :tjob;
SELECT count(*) AS rows, count(*) FILTER (WHERE t.hyp = o.hyp) AS same_hyp,
       count(*) FILTER (WHERE t.score = o.score) AS same_score
  FROM tr_target t JOIN rows_out o ON o.id = t.id AND o.batch = 3;
-- a target table with the optional column finished gets it written
CREATE TABLE tr_target_f (id bigint, hyp text, score double precision, finished boolean);
SELECT corpq.translate_job('tr_m', 'SELECT id, src FROM tr_dev ORDER BY id', 'tr_target_f',
                           '{"max_len_b": 2, "max_len_a": 0}') AS fjob \gset
SELECT corpq.job_wait(:fjob, '600 s');
SELECT count(*) AS rows, count(*) FILTER (WHERE f.finished IS DISTINCT FROM r.finished) AS other_finished,
       count(*) FILTER (WHERE NOT f.finished) > 0 AS some_cut
  FROM tr_target_f f JOIN corpq.translate_rows('tr_m', 'SELECT id, src FROM tr_dev ORDER BY id',
                                               '{"max_len_b": 2, "max_len_a": 0}') r USING (id);
CREATE TABLE tr_target_badf (id bigint, hyp text, score double precision, finished int);
SELECT corpq.translate_job('tr_m', 'SELECT id, src FROM tr_dev', 'tr_target_badf');
SELECT chunk, rows_done, (counters ->> 'translated')::bigint AS translated FROM corpq.row_job_chunks WHERE job = :tjob ORDER BY chunk;
-- the resolved options and the pinned version are stored with the job
SELECT args ->> 'model' AS model, args -> 'options' ->> 'beam' AS beam, args -> 'options' ->> 'chunk_rows' AS chunk_rows
  FROM corpq.jobs WHERE id = :tjob;
-- a source over the model's length fails the job, unless skip_too_long
-- writes its row with NULLs (monolingual text for self-training holds such)
CREATE TABLE tr_long (id bigint, hyp text, score double precision);
SELECT corpq.translate_job('tr_m', $$SELECT g, CASE WHEN g = 2 THEN repeat('w1 ', 40) ELSE 'w1 w2' END
                                     FROM generate_series(1, 3) g ORDER BY g$$, 'tr_long') AS ljob \gset
SELECT corpq.job_wait(:ljob, '600 s');
SELECT state, error FROM corpq.jobs WHERE id = :ljob;
SELECT corpq.translate_job('tr_m', $$SELECT g, CASE WHEN g = 2 THEN repeat('w1 ', 40) ELSE 'w1 w2' END
                                     FROM generate_series(1, 3) g ORDER BY g$$, 'tr_long',
                           '{"skip_too_long": true}') AS ljob \gset
SELECT corpq.job_wait(:ljob, '600 s');
SELECT state, (result ->> 'rows')::int AS rows, (result ->> 'translated')::int AS translated,
       (result ->> 'skipped_too_long')::int AS skipped_too_long
  FROM corpq.jobs WHERE id = :ljob;
SELECT id, hyp IS NULL AS no_hyp, score IS NULL AS no_score FROM tr_long ORDER BY id;
SELECT corpq.translate_job('tr_m', 'SELECT 1, ''w1''', 'tr_long', '{"skip_too_long": 1}');
-- a query that fails: the job fails before writing anything
SELECT corpq.translate_job('tr_m', 'SELECT id, src || (1 / (id - 107))::text FROM tr_dev ORDER BY id', 'tr_target',
                           '{"chunk_rows": 2}') AS fjob \gset
SELECT corpq.job_wait(:fjob, '600 s');
SELECT state, error FROM corpq.jobs WHERE id = :fjob;
SELECT (SELECT count(*) FROM tr_target) AS target_rows,
       (SELECT count(*) FROM corpq.row_job_chunks WHERE job = :fjob) AS chunks;
-- the target is checked at submission
SELECT corpq.translate_job('tr_m', 'SELECT id, src FROM tr_dev', 'no_such_table');
SELECT corpq.translate_job('tr_m', 'SELECT id, src FROM tr_dev', 'tr_pairs');
CREATE TABLE tr_bad_types (id int, hyp text, score float8);
SELECT corpq.translate_job('tr_m', 'SELECT id, src FROM tr_dev', 'tr_bad_types');
SELECT corpq.translate_job('tr_m', 'SELECT id, src FROM tr_dev', 'tr_dev');
SELECT corpq.translate_job('tr_m', 'SELECT id FROM tr_dev', 'tr_target');
SELECT corpq.translate_job('tr_m', 'SELECT id, src FROM tr_dev', 'tr_target', '{"chunk_rows": 0}');
SELECT corpq.translate_job('tr_m', 'SELECT id, src FROM tr_dev', 'tr_target', '{"beam": 30}');
SELECT corpq.translate_job('tr_m', 'SELECT id, src FROM tr_dev', NULL);
CREATE ROLE corpq_tr_user;
SET ROLE corpq_tr_user;
SELECT corpq.translate_job('tr_m', 'SELECT 1, ''w1''', 'tr_target');
RESET ROLE;
REVOKE ALL ON corpq.object_owners FROM corpq_tr_user;
DROP ROLE corpq_tr_user;
SELECT count(*) AS jobs_submitted FROM corpq.jobs WHERE kind = 'translate';

-- leave the catalog as found (later tests list vocabularies)
SELECT corpq.model_drop('tr_m'), corpq.model_drop('tr_rand');
SELECT corpq.vocab_drop('tr_src'), corpq.vocab_drop('tr_tgt');
DROP VIEW tr_dev;
DROP TABLE tr_pairs, tr_par_t, tr_target, tr_bad_types;
