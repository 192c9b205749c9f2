-- corpq.curate()'s classifier step (step 3), with a stand-in for
-- corpq.pair_quality: this branch does not have the classifier's glue, and
-- curate() calls the function by name.  The stand-in's probability is the
-- ratio of the sides' lengths in characters (shorter / longer), NULL for a
-- target 'no probability', and an ERROR for a classifier other than
-- 'cu_stand_in'.  What it checks: only the pairs steps 1-2 keep are judged
-- (the others get a NULL probability), the probability written is the
-- function's, the threshold (0.5 by default, or given) decides with >=, a
-- NULL probability drops the pair, the reason names the probability, an
-- unknown classifier is an ERROR at submission, the result names the
-- classifier.  When the classifier's glue is merged this file goes, and its
-- own test runs curate() with a trained classifier.
SET client_min_messages = warning;

CREATE FUNCTION corpq.pair_quality(classifier text, src text, tgt text) RETURNS float8
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
BEGIN
    IF classifier <> 'cu_stand_in' THEN
        RAISE EXCEPTION 'classifier "%" does not exist', classifier;
    END IF;
    IF tgt = 'no probability' THEN
        RETURN NULL;
    END IF;
    RETURN least(length(src), length(tgt))::float8 / greatest(length(src), length(tgt));
END $$;

CREATE TABLE cc_corpus (id bigint, src text, tgt text);
INSERT INTO cc_corpus VALUES
  (1, 'The house is big.', 'La casa es grande.'),          -- 17/18
  (2, 'The house is big.', 'La casa.'),                    -- 8/17: dropped
  (3, 'The house is big.', 'La casa es grande.'),          -- a duplicate: not judged
  (4, 'Press <b>here</b> now.', 'Pulse <b>aquí</b> ya.'),   -- a rule: not judged
  (5, 'No probability here', 'no probability'),            -- NULL: dropped
  (6, 'Twelve words.', 'Doce palabras.'),                   -- 13/14
  (7, 'A cat and a dog.', 'Un gato.');                      -- 8/16 = 0.5: kept at the default 0.5
CREATE TABLE cc_out (id bigint, decision text, probability float8, reasons text[]);
SELECT corpq.curate('cc_corpus', 'cc_out', '{"classifier": "cu_stand_in", "threshold": 0.8, "chunk_rows": 2}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error, args ->> 'model' AS model, result -> 'classifier_name' AS classifier, result -> 'threshold' AS threshold,
       result ->> 'kept' AS kept, result ->> 'classifier' AS dropped_by_classifier, result ->> 'steps' AS steps
  FROM corpq.jobs WHERE id = :job;
SELECT id, decision, round(probability::numeric, 6) AS probability, reasons FROM cc_out ORDER BY id;
-- the probability written is pair_quality's, bit for bit
SELECT count(*) AS judged, count(*) FILTER (WHERE o.probability = corpq.pair_quality('cu_stand_in', c.src, c.tgt)) AS equal
  FROM cc_out o JOIN cc_corpus c USING (id) WHERE o.probability IS NOT NULL;

-- the default threshold, 0.5: a probability of exactly 0.5 is kept
CREATE TABLE cc_default (id bigint, decision text, probability float8, reasons text[]);
SELECT corpq.curate('cc_corpus', 'cc_default', '{"classifier": "cu_stand_in", "dedup": "none"}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT result -> 'threshold' AS threshold, args -> 'options' ->> 'threshold' AS option FROM corpq.jobs WHERE id = :job;
SELECT id, decision, round(probability::numeric, 6) AS probability, reasons FROM cc_default ORDER BY id;

-- an unknown classifier: pair_quality's ERROR, at submission
SET client_min_messages = notice;
SELECT corpq.curate('cc_corpus', 'cc_default', '{"classifier": "no_such"}');
SELECT corpq.curate('cc_corpus', 'cc_default', '{"classifier": "cu_stand_in", "threshold": -0.1}');
SET client_min_messages = warning;

DROP TABLE cc_corpus, cc_out, cc_default;
DROP FUNCTION corpq.pair_quality(text, text, text);
DELETE FROM corpq.jobs WHERE kind = 'curate';
