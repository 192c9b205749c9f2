-- int8 models: corpq.model_quantize() stores an int8 variant as the next
-- version; every inference function runs it (scoring, batched scoring, MC
-- dropout, translation); a sentence's result never depends on its batch; the
-- quantization is a pure function of the stored weights (quantizing the same
-- version twice scores the same); training refuses it.  A tiny model is
-- trained here on a generated word-translation task, so only relations
-- between results are shown (training depends on the CPU's float rounding).
SET client_min_messages = warning;

CREATE TABLE i8_pairs AS
SELECT g AS id,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 40), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 6) k) AS src
  FROM generate_series(1, 1500) g;
ALTER TABLE i8_pairs ADD COLUMN tgt text;
UPDATE i8_pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 40), ' ' ORDER BY o)
                            FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
CREATE VIEW i8_dev AS SELECT id, src, tgt FROM i8_pairs WHERE id % 20 = 7;
SELECT corpq.vocab_build('i8_src', 'SELECT src FROM i8_pairs') > 0 AS src_vocab,
       corpq.vocab_build('i8_tgt', 'SELECT tgt FROM i8_pairs') > 0 AS tgt_vocab;
SELECT corpq.model_create('i8_m', '{"preset": "tiny", "max_positions": 32}', 'i8_src', 'i8_tgt', 1);
SELECT corpq.train('i8_m', 'SELECT src, tgt FROM i8_pairs WHERE id % 20 <> 7 ORDER BY id', NULL,
                   '{"steps": 150, "max_tokens": 1024, "lr": 0.003, "warmup": 40, "seed": 3,
                     "checkpoint_every": 150, "threads": 1}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
DELETE FROM corpq.jobs WHERE id = :job;
SELECT max(version) AS fv FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
 WHERE c.name = 'i8_m' \gset

-- ---- quantize the latest version: the next version, int8 ----
SELECT corpq.model_quantize('i8_m') = :fv + 1 AS next_version;
SELECT latest_version = :fv + 1 AS latest, precision FROM corpq.models WHERE name = 'i8_m';
SELECT v.version - :fv AS after_float, v.source, v.precision, (v.metrics ->> 'quantized_from')::int = :fv AS from_latest
  FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
 WHERE c.name = 'i8_m' AND v.version >= :fv ORDER BY v.version;
SELECT format('i8_m@%s', :fv) AS f32, format('i8_m@%s', :fv + 1) AS i8 \gset

-- ---- scoring: close to float32, not equal; the name means the latest (int8) ----
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE corpq.sent_logprob(:'i8', src, tgt) = corpq.sent_logprob('i8_m', src, tgt)) AS latest_is_int8,
       count(*) FILTER (WHERE corpq.sent_logprob(:'i8', src, tgt) <> corpq.sent_logprob(:'f32', src, tgt)) AS differ,
       max(abs(corpq.sent_logprob(:'i8', src, tgt) - corpq.sent_logprob(:'f32', src, tgt))
           / greatest(1, abs(corpq.sent_logprob(:'f32', src, tgt)))) < 0.1 AS close
  FROM i8_dev;
-- sent_prob AUC of true against shuffled pairs: int8 within 0.01 of float32
CREATE TEMP TABLE i8_auc AS
SELECT d.src, d.tgt AS tgt_true, s.tgt AS tgt_false
  FROM i8_dev d JOIN i8_dev s ON s.id = (SELECT min(id) FROM i8_dev WHERE id > d.id)
                              OR (d.id = (SELECT max(id) FROM i8_dev) AND s.id = (SELECT min(id) FROM i8_dev));
CREATE FUNCTION pg_temp.auc(m text) RETURNS float8 LANGUAGE sql AS $$
  SELECT avg(CASE WHEN corpq.sent_prob(m, src, tgt_true) > corpq.sent_prob(m, src, tgt_false) THEN 1.0
                  WHEN corpq.sent_prob(m, src, tgt_true) = corpq.sent_prob(m, src, tgt_false) THEN 0.5
                  ELSE 0.0 END) FROM i8_auc $$;
SELECT pg_temp.auc(:'f32') > 0.9 AS float32_useful, abs(pg_temp.auc(:'i8') - pg_temp.auc(:'f32')) <= 0.01 AS int8_auc_close;
-- batched scoring gives every pair the bits it gets alone
SELECT count(*) AS pairs, count(*) FILTER (WHERE s.score = corpq.sent_prob(:'i8', d.src, d.tgt)) AS same_bits
  FROM corpq.score(:'i8', 'SELECT id, src, tgt FROM i8_dev', 'sent_prob', 7) s JOIN i8_dev d USING (id);
-- MC dropout runs on the int8 products too
SELECT count(*) AS pairs, count(*) FILTER (WHERE s.score = corpq.uncertainty(:'i8', d.src, d.tgt, 'enteos', 5, 1)) AS same_bits
  FROM corpq.score(:'i8', 'SELECT id, src, tgt FROM i8_dev', 'uncertainty', 4, 'enteos', 5, 1) s JOIN i8_dev d USING (id);

-- ---- translation: the same hypotheses per row and in batches; BLEU close ----
SELECT count(*) AS rows, count(*) FILTER (WHERE r.hyp = corpq.translate(:'i8', d.src)) AS same_hyp,
       count(*) FILTER (WHERE r.score = (SELECT score FROM corpq.translate_nbest(:'i8', d.src))) AS same_score
  FROM corpq.translate_rows(:'i8', 'SELECT id, src FROM i8_dev ORDER BY id', '{"batch": 5}') r JOIN i8_dev d USING (id);
SELECT corpq.bleu(corpq.translate(:'f32', src), tgt) > 30 AS float32_translates,
       abs(corpq.bleu(corpq.translate(:'i8', src), tgt) - corpq.bleu(corpq.translate(:'f32', src), tgt)) <= 5 AS bleu_close
  FROM i8_dev;

-- ---- the quantization is a function of the stored weights ----
SELECT corpq.model_quantize(:'f32') = :fv + 2 AS again;
SELECT count(*) FILTER (WHERE corpq.sent_logprob(:'i8', src, tgt) = corpq.sent_logprob(format('i8_m@%s', :fv + 2), src, tgt))
       = count(*) AS same_bits
  FROM i8_dev;
-- exported and imported, an int8 image stays int8; the catalog keeps the architecture
SELECT corpq.model_import('i8_copy', corpq.model_export(:'i8'), 'i8_src', 'i8_tgt');
SELECT precision, (SELECT config ? 'precision' FROM corpq.model_catalog WHERE name = 'i8_copy') AS catalog_has_precision
  FROM corpq.models WHERE name = 'i8_copy';

-- ---- 7-bit weight codes (weight_bits 7): a version of its own, the same
-- guarantees (batched = per row, close to float32 and to the 8-bit version) ----
SELECT corpq.model_quantize(:'f32', '{"weight_bits": 7}') = :fv + 3 AS seven_bit_version;
SELECT format('i8_m@%s', :fv + 3) AS i7 \gset
SELECT v.precision, v.metrics ->> 'weight_bits' AS weight_bits
  FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
 WHERE c.name = 'i8_m' AND v.version = :fv + 3;
-- a variant v of the int8 version: pairs it scores otherwise than the int8
-- version, close to float32 (log p and AUC), batched = per row
CREATE FUNCTION pg_temp.variant(v text, i8 text, f32 text)
RETURNS TABLE (pairs bigint, differ bigint, close bool, auc_close bool, same_bits bigint)
LANGUAGE sql AS $$
  SELECT count(*),
         count(*) FILTER (WHERE corpq.sent_logprob(v, src, tgt) <> corpq.sent_logprob(i8, src, tgt)),
         max(abs(corpq.sent_logprob(v, src, tgt) - corpq.sent_logprob(f32, src, tgt))
             / greatest(1, abs(corpq.sent_logprob(f32, src, tgt)))) < 0.1,
         abs(pg_temp.auc(v) - pg_temp.auc(f32)) <= 0.01,
         (SELECT count(*) FILTER (WHERE s.score = corpq.sent_prob(v, d.src, d.tgt))
            FROM corpq.score(v, 'SELECT id, src, tgt FROM i8_dev', 'sent_prob', 7) s JOIN i8_dev d USING (id))
    FROM i8_dev $$;
SELECT * FROM pg_temp.variant(:'i7', :'i8', :'f32');
SELECT count(*) AS rows, count(*) FILTER (WHERE r.hyp = corpq.translate(:'i7', d.src)) AS same_hyp
  FROM corpq.translate_rows(:'i7', 'SELECT id, src FROM i8_dev ORDER BY id', '{"batch": 5}') r JOIN i8_dev d USING (id);

-- ---- float32 token embeddings (embedding_precision "float32"; int8 is the
-- default): a version of its own, the same guarantees ----
SELECT corpq.model_quantize(:'f32', '{"embedding_precision": "float32"}') = :fv + 4 AS float32_embeddings_version;
SELECT pairs, differ > 0 AS differ, close, auc_close, same_bits
  FROM pg_temp.variant(format('i8_m@%s', :fv + 4), :'i8', :'f32');

-- ---- the image: an int8 version stores its weights' and embeddings' codes
-- and scales (weight file version 2, 1 byte per weight); a float32 version
-- stays version 1.  The cache holds and counts what the version needs ----
SELECT v.version - :fv AS after_float, v.precision, v.metrics ->> 'weight_bits' AS weight_bits,
       v.metrics ->> 'embedding_precision' AS embeddings, (SELECT get_byte(k.data, 8) FROM corpq.model_chunks k
         WHERE k.model = v.model AND k.version = v.version AND k.chunk = 0) AS file_version,
       round(v.bytes::numeric /
             (SELECT f.bytes FROM corpq.model_versions f
               WHERE f.model = v.model AND f.version = :fv), 3) AS of_float32
  FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
 WHERE c.name = 'i8_m' AND v.version >= :fv ORDER BY v.version;
SELECT (SELECT bytes FROM corpq.model_cache() WHERE model = 'i8_m' AND version = :fv + 1)
       < 0.5 * (SELECT bytes FROM corpq.model_cache() WHERE model = 'i8_m' AND version = :fv) AS cached_int8_smaller;
-- a 7-bit image imported: int8 with its width, the catalog keeps the float32 architecture
SELECT corpq.model_import('i7_copy', corpq.model_export(:'i7'), 'i8_src', 'i8_tgt');
SELECT m.precision, c.config ? 'weight_bits' AS catalog_has_weight_bits,
       (SELECT count(*) FILTER (WHERE corpq.sent_logprob('i7_copy', src, tgt) = corpq.sent_logprob(:'i7', src, tgt))
               = count(*) FROM i8_dev) AS same_bits
  FROM corpq.models m JOIN corpq.model_catalog c ON c.name = m.name WHERE m.name = 'i7_copy';
SELECT corpq.model_drop('i7_copy');

-- ---- bad input ----
SELECT corpq.model_quantize(:'i8');
SELECT corpq.model_quantize('i8_m', '{"bits": 4}');
SELECT corpq.model_quantize('i8_m', '{"weight_bits": 4}');
SELECT corpq.model_quantize('i8_m', '{"weight_bits": "7"}');
SELECT corpq.model_quantize('i8_m', '{"embedding_precision": "int4"}');
SELECT corpq.model_quantize('i8_m', '[7]');
SELECT corpq.model_quantize('nope');
SELECT corpq.model_quantize(NULL);
-- training needs float32 weights
\set VERBOSITY default
SELECT corpq.train('i8_m', 'SELECT src, tgt FROM i8_pairs');
\set VERBOSITY terse
-- only the owner's role writes versions
CREATE ROLE i8_other;
SET ROLE i8_other;
SELECT corpq.model_quantize('i8_m');
RESET ROLE;
DROP ROLE i8_other;
SELECT corpq.model_drop('i8_m'), corpq.model_drop('i8_copy');
SELECT corpq.vocab_drop('i8_src'), corpq.vocab_drop('i8_tgt');
