-- corpq.curate() that trains an encoder when the budget allows: with a
-- clean query, the two languages and max_seconds, the job trains a lexicon
-- "<target>_lex", then (max_seconds at least 1200, or the option
-- encoder_seconds) an encoder "<target>_enc" -- its BPE model, vocabulary and
-- model of that name, a small encoder trained by corpq.train()'s loop for
-- its share of the budget -- then the classifier "<target>_pq" with the
-- languages, the lexicon and that encoder (its features list
-- embedding_cosine).  What it checks: the encoder is stored, used by the
-- classifier and named in the result with why it was trained; a budget
-- below the threshold and "train_encoder": false train none and say why; a
-- caller's encoder (option "encoder") is the classifier's, not trained; a
-- name collision with the caller's model is refused at submission; bad
-- option combinations.  (Resume after a kill -9 with the encoder stored:
-- test/integration/curate_encoder_resume.sh.)
SET client_min_messages = warning;

-- a toy en-es corpus: each English word with its own Spanish one
CREATE TABLE cqe_words (k int, en text, es text);
INSERT INTO cqe_words
SELECT k - 1, en, es
  FROM unnest(ARRAY['the', 'dog', 'cat', 'house', 'table', 'runs', 'sleeps', 'falls', 'big', 'small',
                    'red', 'green', 'today', 'here', 'now', 'water', 'bread', 'eats', 'sees', 'old'],
              ARRAY['el', 'perro', 'gato', 'casa', 'mesa', 'corre', 'duerme', 'cae', 'grande', 'chico',
                    'rojo', 'verde', 'hoy', 'aqui', 'ahora', 'agua', 'pan', 'come', 've', 'viejo'])
       WITH ORDINALITY u(en, es, k);
CREATE TABLE cqe_clean AS
SELECT g AS id,
       (SELECT string_agg(w.en, ' ' ORDER BY i) FROM generate_series(1, 4 + g % 7) i
          JOIN cqe_words w ON w.k = (g * 11 + i * 13 + (g % 3) * i * i) % 20) || '.' AS src,
       (SELECT string_agg(w.es, ' ' ORDER BY i) FROM generate_series(1, 4 + g % 7) i
          JOIN cqe_words w ON w.k = (g * 11 + i * 13 + (g % 3) * i * i) % 20) || '.' AS tgt
  FROM generate_series(1, 400) g;
-- the corpus to curate: clean pairs, misaligned and truncated ones
CREATE TABLE cqe_corpus (id bigint, src text, tgt text);
INSERT INTO cqe_corpus
SELECT id, src, tgt FROM cqe_clean WHERE id BETWEEN 1 AND 30
UNION ALL SELECT 30 + a.id, a.src, b.tgt FROM cqe_clean a JOIN cqe_clean b ON b.id = a.id + 50
     WHERE a.id BETWEEN 1 AND 10
UNION ALL SELECT 40 + id, src, array_to_string((string_to_array(tgt, ' '))[1:2], ' ')
      FROM cqe_clean WHERE id BETWEEN 1 AND 10;
CREATE TABLE cqe_out (id bigint, decision text, probability float8, reasons text[]);

-- a tiny budget, the encoder's share given: the encoder is trained
SELECT corpq.curate('cqe_corpus', 'cqe_out',
         '{"clean_query": "SELECT src, tgt FROM cqe_clean WHERE id > 100", "src_lang": "en",
           "tgt_lang": "es", "filters": [], "max_seconds": 60, "encoder_seconds": 4}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, args ->> 'train_encoder' AS encoder_name, args -> 'encoder_seconds' AS encoder_seconds,
       result -> 'training' -> 'encoder' ->> 'name' LIKE 'cqe\_out\_enc@%' AS encoder_named,
       result -> 'training' -> 'encoder' -> 'trained' AS trained,
       result -> 'training' -> 'encoder' -> 'reused' AS reused,
       result -> 'training' -> 'encoder' ->> 'vocab' AS vocab,
       result -> 'training' -> 'encoder' ->> 'preset' AS preset,
       (result -> 'training' -> 'encoder' ->> 'steps')::int >= 1 AS updated,
       (result -> 'training' -> 'encoder' ->> 'max_seconds')::float8 BETWEEN 1 AND 4 AS budget_ok,
       (result -> 'training' -> 'encoder' ->> 'seconds')::float8 > 0 AS timed,
       result -> 'training' ->> 'encoder_reason' AS reason,
       result -> 'training' -> 'classifier' ->> 'name' AS classifier,
       (result -> 'training' -> 'classifier' -> 'features') ? 'embedding_cosine' AS classifier_uses_it,
       (result -> 'training' -> 'classifier' ->> 'max_seconds')::float8 < 60 AS classifier_budget_left
  FROM corpq.jobs WHERE id = :job;
-- stored: the encoder's BPE model, vocabulary and model, its latest version
-- the one the classifier pinned
SELECT (SELECT count(*) FROM corpq.bpe_models WHERE name = 'cqe_out_enc') AS bpe,
       (SELECT count(*) FROM corpq.vocabularies WHERE name = 'cqe_out_enc') AS vocab,
       m.config ->> 'kind' AS kind, m.src_vocab, m.tgt_vocab,
       'cqe_out_enc@' || (SELECT max(version) FROM corpq.model_versions v WHERE v.model = m.id)
         = (SELECT result -> 'training' -> 'encoder' ->> 'name' FROM corpq.jobs WHERE id = :job) AS latest,
       (SELECT count(*) FROM corpq.train_checkpoints c WHERE c.job = :job AND c.model = m.id) >= 1 AS checkpointed
  FROM corpq.model_catalog m WHERE m.name = 'cqe_out_enc';
SELECT c.name, v.job = :job AS by_this_job, v.models ->> 'encoder' = j.result -> 'training' -> 'encoder' ->> 'name' AS encoder_pinned,
       v.models ->> 'lexicon' AS lexicon, v.features @> ARRAY['embedding_cosine', 'align_fwd'] AS features_ok
  FROM corpq.classifier_versions v JOIN corpq.classifier_catalog c ON c.id = v.model, corpq.jobs j
 WHERE c.name = 'cqe_out_pq' AND j.id = :job;
-- the classifier step used it: every judged pair has pair_quality of the pinned classifier
SELECT count(*) AS rows_, count(*) FILTER (WHERE o.probability IS NOT NULL) AS judged,
       count(*) FILTER (WHERE o.probability IS DISTINCT FROM corpq.pair_quality(j.result ->> 'classifier_name', c.src, c.tgt)) AS differ,
       count(*) FILTER (WHERE (o.decision = 'keep') <> (o.probability >= 0.5)) AS misdecided
  FROM cqe_out o JOIN cqe_corpus c USING (id), corpq.jobs j WHERE j.id = :job;
SELECT corpq.embedding_cosine(result -> 'training' -> 'encoder' ->> 'name', 'the dog.', 'el perro.') BETWEEN -1 AND 1 AS encoder_usable
  FROM corpq.jobs WHERE id = :job;

-- no encoder: a budget below the threshold, and the option train_encoder false
CREATE TABLE cqe_small (id bigint, decision text, probability float8, reasons text[]);
SELECT corpq.curate('cqe_corpus', 'cqe_small',
         '{"clean_query": "SELECT src, tgt FROM cqe_clean WHERE id > 100", "src_lang": "en",
           "tgt_lang": "es", "filters": [], "max_seconds": 1199}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, args -> 'train_encoder' AS train_encoder, result -> 'training' -> 'encoder' AS encoder,
       result -> 'training' ->> 'encoder_reason' AS reason,
       (result -> 'training' -> 'classifier' -> 'features') ? 'embedding_cosine' AS classifier_uses_one,
       (SELECT count(*) FROM corpq.model_catalog WHERE name = 'cqe_small_enc') AS models
  FROM corpq.jobs WHERE id = :job;
CREATE TABLE cqe_off (id bigint, decision text, probability float8, reasons text[]);
SELECT corpq.curate('cqe_corpus', 'cqe_off',
         '{"clean_query": "SELECT src, tgt FROM cqe_clean WHERE id > 100", "src_lang": "en",
           "tgt_lang": "es", "filters": [], "max_seconds": 5000, "train_encoder": false}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, result -> 'training' -> 'encoder' AS encoder, result -> 'training' ->> 'encoder_reason' AS reason,
       (SELECT count(*) FROM corpq.model_catalog WHERE name = 'cqe_off_enc') AS models
  FROM corpq.jobs WHERE id = :job;

-- the caller's encoder: the classifier's feature, nothing trained
CREATE TABLE cqe_given (id bigint, decision text, probability float8, reasons text[]);
SELECT corpq.curate('cqe_corpus', 'cqe_given',
         '{"clean_query": "SELECT src, tgt FROM cqe_clean WHERE id > 100", "src_lang": "en",
           "tgt_lang": "es", "filters": [], "encoder": "cqe_out_enc"}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, args -> 'train_encoder' AS train_encoder,
       result -> 'training' -> 'encoder' ->> 'name' = (SELECT result -> 'training' -> 'encoder' ->> 'name'
                                                        FROM corpq.jobs WHERE args ->> 'train_encoder' = 'cqe_out_enc') AS pinned,
       result -> 'training' -> 'encoder' -> 'trained' AS trained,
       result -> 'training' ->> 'encoder_reason' LIKE 'the option "encoder" gave the classifier''s encoder (cqe_out_enc@%)' AS reason_ok,
       (result -> 'training' -> 'classifier' -> 'features') ? 'embedding_cosine' AS classifier_uses_it
  FROM corpq.jobs WHERE id = :job;

-- bad input, at submission
SET client_min_messages = notice;
-- the names are the caller's already: a rerun into the same target, and a model of the caller's
SELECT corpq.curate('cqe_corpus', 'cqe_out', '{"clean_query": "SELECT src, tgt FROM cqe_clean", "src_lang": "en", "tgt_lang": "es", "max_seconds": 60, "encoder_seconds": 4}');
SELECT corpq.vocab_build('cqe_mine', 'SELECT src FROM cqe_clean UNION ALL SELECT tgt FROM cqe_clean');
SELECT corpq.model_create('cqe_small_enc', '{"preset": "tiny", "kind": "encoder"}', 'cqe_mine', 'cqe_mine', 1);
TRUNCATE cqe_small;
SELECT corpq.curate('cqe_corpus', 'cqe_small', '{"clean_query": "SELECT src, tgt FROM cqe_clean", "src_lang": "en", "tgt_lang": "es", "max_seconds": 3000}');
-- with train_encoder false, or its own encoder given, the name is no matter
SELECT corpq.curate('cqe_corpus', 'cqe_small', '{"clean_query": "SELECT src, tgt FROM cqe_clean WHERE id > 100", "src_lang": "en", "tgt_lang": "es", "filters": [], "max_seconds": 3000, "train_encoder": false}') AS job \gset
SELECT corpq.job_wait(:job, '600 s'), result -> 'training' -> 'encoder' AS encoder FROM corpq.jobs WHERE id = :job;
-- option combinations
SELECT corpq.curate('cqe_corpus', 'cqe_off', '{"encoder": "cqe_out_enc"}');
SELECT corpq.curate('cqe_corpus', 'cqe_off', '{"encoder_seconds": 10}');
SELECT corpq.curate('cqe_corpus', 'cqe_off', '{"clean_query": "SELECT src, tgt FROM cqe_clean", "src_lang": "en", "tgt_lang": "es", "encoder_seconds": 10}');
SELECT corpq.curate('cqe_corpus', 'cqe_off', '{"clean_query": "SELECT src, tgt FROM cqe_clean", "src_lang": "en", "tgt_lang": "es", "max_seconds": 10, "encoder_seconds": 10}');
SELECT corpq.curate('cqe_corpus', 'cqe_off', '{"clean_query": "SELECT src, tgt FROM cqe_clean", "src_lang": "en", "tgt_lang": "es", "max_seconds": 100, "encoder_seconds": 10, "train_encoder": false}');
SELECT corpq.curate('cqe_corpus', 'cqe_off', '{"clean_query": "SELECT src, tgt FROM cqe_clean", "src_lang": "en", "tgt_lang": "es", "max_seconds": 100, "encoder_seconds": 10, "encoder": "cqe_out_enc"}');
SELECT corpq.curate('cqe_corpus', 'cqe_off', '{"clean_query": "SELECT src, tgt FROM cqe_clean", "src_lang": "en", "tgt_lang": "es", "encoder": "cqe_nothing"}');
SELECT corpq.curate('cqe_corpus', 'cqe_off', '{"clean_query": "SELECT src, tgt FROM cqe_clean", "src_lang": "en", "tgt_lang": "es", "train_encoder": "yes"}');
SET client_min_messages = warning;

SELECT corpq.classifier_drop(name) FROM corpq.classifier_catalog WHERE name LIKE 'cqe\_%';
SELECT corpq.lexicon_drop(name) FROM corpq.lexicons WHERE name LIKE 'cqe\_%';
SELECT corpq.model_drop(name) FROM corpq.model_catalog WHERE name LIKE 'cqe\_%';
SELECT corpq.vocab_drop(name) FROM corpq.vocabularies WHERE name LIKE 'cqe\_%';
SELECT corpq.bpe_drop(name) FROM corpq.bpe_models WHERE name LIKE 'cqe\_%';
DROP TABLE cqe_words, cqe_clean, cqe_corpus, cqe_out, cqe_small, cqe_off, cqe_given;
DELETE FROM corpq.jobs WHERE kind = 'curate' AND args ->> 'corpus' = 'cqe_corpus';
