-- The small world the SQL examples of README.md and docs/*.md run in
-- (test/integration/docs_examples.sh): each example runs in its own copy of
-- this database.  Tables and catalog objects are named as the examples name
-- them; the models are untrained (random weights, preset tiny), enough to run
-- every scoring and translation call.  It loads over test/docs/tables.sql
-- (the tables; a block marked <!-- run in: tables --> runs with only those).
CREATE EXTENSION corpq;

-- the examples learn their own BPE model 'enes' (docs/text.md)
SELECT corpq.bpe_learn('fixture', 'SELECT src FROM corpus UNION ALL SELECT tgt FROM corpus', 200);
SELECT corpq.vocab_build('en', 'SELECT src FROM corpus', 'fixture'),
       corpq.vocab_build('es', 'SELECT tgt FROM corpus', 'fixture'),
       corpq.vocab_build('v_en', 'SELECT src FROM corpus', 'fixture'),
       corpq.vocab_build('v_es', 'SELECT tgt FROM corpus', 'fixture');
SELECT corpq.model_create('m', '{"preset": "tiny", "max_positions": 64}', 'en', 'es', 1),
       corpq.model_create('enes', '{"preset": "tiny", "max_positions": 64}', 'v_en', 'v_es', 1),
       corpq.model_create('esen', '{"preset": "tiny", "max_positions": 64}', 'v_es', 'v_en', 1);
