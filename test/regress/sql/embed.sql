-- Encoder models and corpq.embed(): model_create with "kind": "encoder" (a
-- preset without its decoder, one joint vocabulary), vectors of d_model
-- values and unit length, the same bits by name, by pinned version, alone and
-- among other rows; NULL in, NULL out; a sentence longer than the model takes
-- (max_positions - 2 tokens) NULL or an ERROR (on_too_long); the refusals.
-- (The vectors against PyTorch: test/integration/embed_torch.sh.)
SET client_min_messages = warning;

CREATE TABLE em_sents AS
SELECT g AS id, 'w' || (g % 7) || repeat(' v' || (g % 5), g % 6) AS s
  FROM generate_series(1, 40) g;
SELECT corpq.vocab_build('em_joint', 'SELECT s FROM em_sents');
SELECT corpq.vocab_build('em_other', 'SELECT s FROM em_sents');
-- max_positions 8: <s>, at most 6 tokens, </s>
SELECT corpq.model_create('em', '{"preset": "tiny", "kind": "encoder", "max_positions": 8}',
                          'em_joint', 'em_joint', 3);
SELECT config->>'kind' AS kind, config->>'decoder_layers' AS decoder_layers,
       config->>'pooling' AS pooling, config->>'share_embeddings' AS shared
  FROM corpq.model_catalog WHERE name = 'em';

-- d_model values, unit length
SELECT count(*) AS vectors, min(cardinality(v)) AS d_min, max(cardinality(v)) AS d_max,
       bool_and(abs(sqrt((SELECT sum(x::float8 * x) FROM unnest(v) x)) - 1) < 1e-6) AS unit
  FROM (SELECT corpq.embed('em', s) AS v FROM em_sents WHERE s IS NOT NULL) e;
-- different sentences, different vectors; the same sentence, the same bits
SELECT count(DISTINCT corpq.embed('em', s)) = count(DISTINCT s) AS distinct_vectors
  FROM em_sents;
SELECT corpq.embed('em', 'w1 v1') = corpq.embed('em@1'::corpq.pinned_model, 'w1 v1') AS pinned_same,
       corpq.embed('em', 'w1 v1') = (SELECT corpq.embed('em', s) FROM em_sents WHERE id = 1) AS row_same,
       (SELECT s FROM em_sents WHERE id = 1) AS row_1;
-- NULL in, NULL out; the empty sentence has a vector
SELECT corpq.embed('em', NULL) IS NULL AS null_sentence, corpq.embed(NULL::text, 'w1') IS NULL AS null_model,
       cardinality(corpq.embed('em', '')) AS empty_d;

-- too long: 7 tokens, NULL by default, an ERROR on request
SELECT corpq.embed('em', 'w1 v1 v1 v1 v1 v1') IS NOT NULL AS six_fit,
       corpq.embed('em', 'w1 v1 v1 v1 v1 v1 v1') IS NULL AS seven_null,
       corpq.embed('em', 'w1 v1 v1 v1 v1 v1 v1', 'null') IS NULL AS seven_null_too,
       corpq.embed('em@1'::corpq.pinned_model, 'w1 v1 v1 v1 v1 v1 v1') IS NULL AS seven_null_pinned;
SELECT corpq.embed('em', 'w1 v1 v1 v1 v1 v1 v1', 'error');
SELECT corpq.embed('em', 'w1', 'skip');

-- refusals: a translation model, an encoder over two vocabularies, a
-- decoder in an encoder, a translation model asked to pool, an encoder scored
SELECT corpq.model_create('em_tr', '{"preset": "tiny", "max_positions": 8}', 'em_joint', 'em_joint', 3);
SELECT corpq.embed('em_tr', 'w1');
SELECT corpq.model_create('em_two', '{"preset": "tiny", "kind": "encoder"}', 'em_joint', 'em_other', 3);
SELECT corpq.model_create('em_dec', '{"preset": "tiny", "kind": "encoder", "decoder_layers": 2}',
                          'em_joint', 'em_joint', 3);
SELECT corpq.model_create('em_pool', '{"preset": "tiny", "pooling": "cls"}', 'em_joint', 'em_joint', 3);
SELECT corpq.model_create('em_kind', '{"preset": "tiny", "kind": "decoder"}', 'em_joint', 'em_joint', 3);
SELECT corpq.sent_prob('em', 'w1', 'w2');
SELECT corpq.translate('em', 'w1');
SELECT count(*) AS no_half_written FROM corpq.models WHERE name IN ('em_two', 'em_dec', 'em_pool', 'em_kind');

-- the LaBSE layout: first position, pooler, token type vector, post-norm
SELECT corpq.model_create('em_cls', '{"preset": "tiny", "kind": "encoder", "pooling": "cls", "pooler": true,
                                      "token_type_embedding": true, "norm_position": "post",
                                      "encoder_final_norm": false, "max_positions": 8}',
                          'em_joint', 'em_joint', 4);
SELECT cardinality(v) AS d, abs(sqrt((SELECT sum(x::float8 * x) FROM unnest(v) x)) - 1) < 1e-6 AS unit
  FROM corpq.embed('em_cls', 'w2 v2') v;

-- ---- training as a dual encoder: 150 updates on a word-translation task ----
-- source: 3..6 words of 30; target: each word's fixed translation, reversed
CREATE TABLE em_pairs AS
SELECT g AS id,
       (SELECT string_agg('a' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 30), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 4) k) AS src
  FROM generate_series(1, 1064) g;
ALTER TABLE em_pairs ADD COLUMN tgt text;
UPDATE em_pairs SET tgt = (SELECT string_agg('b' || ((substr(w, 2)::int * 7 + 3) % 30), ' ' ORDER BY o DESC)
                             FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
SELECT corpq.vocab_build('em_ab', 'SELECT src FROM em_pairs UNION ALL SELECT tgt FROM em_pairs');
SELECT corpq.model_create('em_t', '{"preset": "tiny", "kind": "encoder", "max_positions": 16}',
                          'em_ab', 'em_ab', 5);
CREATE VIEW em_dev AS SELECT id, src, tgt FROM em_pairs WHERE id > 1000;
-- P@1 of a version in SQL: each dev source's nearest dev target by cosine
CREATE FUNCTION em_p1(model text) RETURNS float8 LANGUAGE sql AS $$
  WITH e AS (SELECT id, corpq.embed(model, src) AS x, corpq.embed(model, tgt) AS y FROM em_dev),
       best AS (SELECT DISTINCT ON (a.id) a.id, b.id AS hit
                  FROM e a, e b
                 ORDER BY a.id, (SELECT sum(p::float8 * q) FROM unnest(a.x, b.y) u(p, q)) DESC)
  SELECT avg((hit = id)::int)::float8 FROM best $$;
SELECT em_p1('em_t') < 0.25 AS untrained_p1_low;
SELECT corpq.train('em_t', 'SELECT src, tgt FROM em_pairs WHERE id <= 1000',
                   'SELECT src, tgt FROM em_dev ORDER BY id',
                   '{"steps": 150, "max_tokens": 400, "lr": 0.003, "warmup": 20, "seed": 2,
                     "validate_every": 50, "threads": 1}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error, result ->> 'steps' AS steps, args -> 'options' ->> 'margin' AS margin,
       args -> 'options' ->> 'scale' AS scale
  FROM corpq.jobs WHERE id = :job;
-- the loss per pair goes down; the dev figure (1 - P@1) at each validation
SELECT (SELECT avg(train_loss) FROM corpq.train_log WHERE job = :job AND step <= 10) >
       (SELECT avg(train_loss) FROM corpq.train_log WHERE job = :job AND step > 140) AS loss_down,
       (SELECT count(*) FROM corpq.train_log WHERE job = :job AND dev_loss IS NOT NULL) AS validations,
       (SELECT dev_loss FROM corpq.train_log WHERE job = :job AND dev_loss IS NOT NULL ORDER BY step LIMIT 1) >
       (SELECT dev_loss FROM corpq.train_log WHERE job = :job AND dev_loss IS NOT NULL ORDER BY step DESC LIMIT 1)
         AS dev_misses_down;
-- an encoder's own dev figures: P@1, the mean similarity of a pair and of a
-- source to the other targets; no perplexity
SELECT bool_and(abs((d.value ->> 'p_at_1')::float8 + (d.value ->> 'loss')::float8 - 1) < 1e-9)
       AND bool_and((d.value ->> 'pos_cos')::float8 > (d.value ->> 'neg_cos')::float8)
       AND bool_and(l.dev_ppl IS NULL) AS encoder_dev_figures
  FROM corpq.train_log l, jsonb_each(l.dev) d
 WHERE l.job = :job AND l.dev_loss IS NOT NULL;
-- the job's figure is the P@1 embed() gives the final version, which is high
SELECT abs((1 - (result -> 'dev' ->> 'final_loss')::float8) - em_p1('em_t')) <= 1.0 / 64 AS job_p1_is_embeds,
       em_p1('em_t') > 0.8 AS trained_p1_high
  FROM corpq.jobs WHERE id = :job;
SELECT corpq.train('em_t', 'SELECT src, tgt FROM em_pairs', NULL, '{"scale": 0}');
-- multiuat's scorer takes a translation model's loss: the job stops before an update
SELECT corpq.train('em_t', 'SELECT src, tgt FROM em_pairs WHERE id <= 1000', 'SELECT src, tgt FROM em_dev',
                   '{"strategy": "multiuat", "steps": 5}') AS uat \gset
SELECT corpq.job_wait(:uat, '300 s') AS multiuat;
SELECT state, error FROM corpq.jobs WHERE id = :uat;
SELECT count(*) AS log_rows FROM corpq.train_log WHERE job = :uat;
DELETE FROM corpq.jobs WHERE id IN (:job, :uat);
DROP FUNCTION em_p1(text);
DROP VIEW em_dev;
DROP TABLE em_pairs;
SELECT corpq.model_drop('em_t');
SELECT corpq.vocab_drop('em_ab');

-- int8 versions (model_quantize): the pooler is quantized like every linear
SELECT corpq.model_quantize('em') AS em_int8, corpq.model_quantize('em_cls') AS cls_int8;
SELECT m, cardinality(corpq.embed(m, 'w2 v2')) AS d,
       abs(sqrt((SELECT sum(x::float8 * x) FROM unnest(corpq.embed(m, 'w2 v2')) x)) - 1) < 1e-6 AS unit,
       corpq.embed(m, 'w2 v2') <> corpq.embed((m || '@1')::corpq.pinned_model, 'w2 v2') AS other_bits,
       (SELECT sum(x::float8 * y) FROM unnest(corpq.embed(m, 'w2 v2'), corpq.embed((m || '@1')::corpq.pinned_model, 'w2 v2')) u(x, y)) > 0.99
         AS close_to_float32
  FROM unnest(ARRAY['em', 'em_cls']) m;
SELECT corpq.model_drop(m) FROM unnest(ARRAY['em', 'em_tr', 'em_cls']) m;
SELECT corpq.vocab_drop(v) FROM unnest(ARRAY['em_joint', 'em_other']) v;
DROP TABLE em_sents;
