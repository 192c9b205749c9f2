-- The tables of the docs examples' fixture (test/docs/fixture.sql), without
-- corpq: a block marked <!-- run in: tables --> runs in a copy of just these
-- (it creates the extension itself).
CREATE TABLE corpus (id bigint PRIMARY KEY, domain text, src text, tgt text);
INSERT INTO corpus
SELECT i, d.domain, format('%s %s number %s', d.en, w.en, i), format('%s %s número %s', d.es, w.es, i)
  FROM generate_series(1, 60) i,
       LATERAL (SELECT (ARRAY['bible', 'l10n', 'ddtp'])[1 + i % 3] AS domain,
                       (ARRAY['the beginning of the book', 'failed to download the list', 'a small package for the system'])[1 + i % 3] AS en,
                       (ARRAY['el principio del libro', 'no se pudo descargar la lista', 'un paquete pequeño para el sistema'])[1 + i % 3] AS es) d,
       LATERAL (SELECT (ARRAY['and god said', 'of changes', 'with files', 'in the house', 'for the people'])[1 + i % 5] AS en,
                       (ARRAY['y dios dijo', 'de cambios', 'con archivos', 'en la casa', 'para el pueblo'])[1 + i % 5] AS es) w;
INSERT INTO corpus VALUES (61, 'l10n', '<b>Failed</b> to download', '<b>No se pudo</b> descargar'),
                          (62, 'l10n', 'Failed to download the list.', 'Failed to download the list.');

CREATE TABLE testset AS SELECT src, tgt FROM corpus WHERE id % 10 = 0;
CREATE TABLE test_set AS SELECT id, src, tgt FROM corpus WHERE id % 10 = 0;
CREATE TABLE mono AS SELECT id, src AS sentence FROM corpus;
CREATE TABLE mono_es AS SELECT id, tgt AS sentence FROM corpus;
CREATE TABLE bitext AS
SELECT id, CASE WHEN id % 10 = 0 THEN 'dev' ELSE 'train' END AS split, domain, src, tgt FROM corpus;
CREATE TABLE outputs AS
SELECT domain, tgt AS ref, replace(tgt, 'libro', 'libros') AS hyp,
       replace(tgt, 'casa', 'cosa') AS hyp_a, tgt AS hyp_b
  FROM corpus;

