-- corpq demo: curate an English-Spanish multi-domain corpus in plain SQL.
\pset footer off
\set QUIET on
CREATE EXTENSION corpq;
CREATE TABLE corpus (id text PRIMARY KEY, domain text NOT NULL, src text NOT NULL, tgt text NOT NULL);
\set copy_cmd '\\copy corpus FROM ' :'corpus' ' WITH (FORMAT csv, HEADER true, DELIMITER E''\\t'', QUOTE E''\\x01'')'
:copy_cmd
\set QUIET off

\echo
\echo '== 1. The corpus: pairs per domain'
SELECT domain, count(*) AS pairs, round(avg(array_length(string_to_array(src, ' '), 1)), 1) AS avg_src_words
FROM corpus GROUP BY domain ORDER BY pairs DESC;

\echo '== 2. Sampling shares per domain under temperature tau (MultiUAT Eq. 4)'
WITH sizes AS (SELECT domain, count(*) AS n FROM corpus GROUP BY domain)
SELECT domain, n,
       round(corpq.temperature_weights(n, 1) OVER ()::numeric, 4) AS "tau=1",
       round(corpq.temperature_weights(n, 5) OVER ()::numeric, 4) AS "tau=5",
       round(corpq.temperature_weights(n, 'infinity') OVER ()::numeric, 4) AS "tau=inf"
FROM sizes ORDER BY n DESC;

\echo '== 3. A 4000-pair training subset drawn with tau = 5 shares (reproducible: hash order)'
CREATE TABLE train_subset AS
WITH sizes AS (SELECT domain, count(*) AS n FROM corpus GROUP BY domain),
     quota AS (SELECT domain, round(4000 * corpq.temperature_weights(n, 5) OVER ()) AS k FROM sizes),
     ranked AS (SELECT c.*, row_number() OVER (PARTITION BY domain ORDER BY md5(id)) AS r FROM corpus c)
SELECT r.id, r.domain, r.src, r.tgt FROM ranked r JOIN quota q USING (domain) WHERE r.r <= q.k;
SELECT domain, count(*) AS sampled FROM train_subset GROUP BY domain ORDER BY 2 DESC;

\echo '== 4. Subword segmentation: learn 4000 BPE merges on both sides (subword-nmt compatible)'
SELECT corpq.bpe_learn('es-en', 'SELECT src FROM corpus UNION ALL SELECT tgt FROM corpus', 4000) AS merges_learned;
SELECT s AS sentence, corpq.bpe_apply('es-en', s) AS segmented
FROM (VALUES ('Failed to download the list of changes.'),
             ('Hubo un fallo al descargar la lista de cambios.'),
             ('In the beginning, God created the heavens and the earth.')) v(s);
\echo 'first lines of the exported subword-nmt codes file:'
SELECT line FROM regexp_split_to_table(corpq.bpe_export('es-en'), E'\n') WITH ORDINALITY t(line, n) WHERE n <= 4;

\echo '== 5. Vocabularies over the segmented text'
SELECT corpq.vocab_build('en', 'SELECT src FROM corpus', bpe => 'es-en', max_size => 8000) AS en_size,
       corpq.vocab_build('es', 'SELECT tgt FROM corpus', bpe => 'es-en', max_size => 8000) AS es_size;
SELECT corpq.vocab_encode('es', 'la lista de cambios') AS ids,
       corpq.vocab_decode('es', corpq.vocab_encode('es', 'la lista de cambios')) AS decoded;
