-- corpq.synthetic_noise (docs/curation.md): the SQL surface of the curation
-- core's noise.  The core's unit tests (test/unit/test_curate_noise.c) and
-- test/ref/test_curate.py check every type in detail; here: the counts, the
-- order, determinism by seed, each type's shape on a few pairs, the other-
-- language query, and bad input.
CREATE TABLE noise_clean (id int, src text, tgt text);
INSERT INTO noise_clean VALUES
  (1, 'The cat sat on the mat today.', 'El gato se sentó hoy en la alfombra.'),
  (2, 'Open the file.', 'Abra el archivo.'),
  (3, 'Press the red button to stop the machine.', 'Pulse el botón rojo para parar la máquina.'),
  (4, 'In the beginning God created the heavens and the earth.', 'En el principio creó Dios los cielos y la tierra.'),
  (5, 'No such file or directory', 'No existe el archivo o el directorio'),
  (6, 'Save the changes before closing?', '¿Guardar los cambios antes de cerrar?'),
  (7, NULL, 'sin fuente'),
  (8, 'Ñandú añejo über straße café', 'Ñandú añejo über straße café traducido');
CREATE TABLE noise_other (sentence text);
INSERT INTO noise_other VALUES ('Das ist ein Haus.'), ('Ich weiß es nicht.'), (NULL);

-- every type at 0.5: round(0.5 * 7) = 4 pairs each; the NULL row takes no
-- part; wrong_language needs the other-language query
SELECT label, count(*)
  FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean ORDER BY id',
       '{"seed": 3, "misaligned_neighbour": 0.5, "misaligned_random": 0.5, "truncated_tgt": 0.5,
         "truncated_src": 0.5, "appended_tgt": 0.5, "appended_src": 0.5, "untranslated": 0.5,
         "untranslated_edited": 0.5, "wrong_language": 0.5}')
 GROUP BY label ORDER BY label;
SELECT label, count(*)
  FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean ORDER BY id',
       '{"seed": 3, "wrong_language": 1, "other_language_query": "SELECT sentence FROM noise_other"}')
 GROUP BY label ORDER BY label;

-- the clean pairs first, in query order
SELECT src, label FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean ORDER BY id') LIMIT 3;

-- the same seed gives the same rows in the same order; another seed others
SELECT (SELECT array_agg(n ORDER BY ord) FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean ORDER BY id', '{"seed": 9}')
          WITH ORDINALITY AS n(src, tgt, label, ord))
     = (SELECT array_agg(n ORDER BY ord) FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean ORDER BY id', '{"seed": 9}')
          WITH ORDINALITY AS n(src, tgt, label, ord)) AS same_seed_same_rows,
       (SELECT array_agg(n ORDER BY ord) FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean ORDER BY id', '{"seed": 9}')
          WITH ORDINALITY AS n(src, tgt, label, ord))
     = (SELECT array_agg(n ORDER BY ord) FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean ORDER BY id', '{"seed": 10}')
          WITH ORDINALITY AS n(src, tgt, label, ord)) AS other_seed_same_rows;

-- each type is what it says, against the clean pairs
WITH n AS (SELECT * FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean ORDER BY id',
       '{"seed": 5, "misaligned_neighbour": 1, "misaligned_random": 1, "truncated_tgt": 1,
         "truncated_src": 1, "appended_tgt": 1, "appended_src": 1, "untranslated": 1,
         "untranslated_edited": 1, "wrong_language": 0}')),
     c AS (SELECT src, tgt FROM noise_clean WHERE src IS NOT NULL)
SELECT label, bool_and(CASE label
         WHEN 'misaligned_neighbour' THEN EXISTS (SELECT FROM c WHERE c.src = n.src AND c.tgt <> n.tgt)
                                          AND EXISTS (SELECT FROM c WHERE c.tgt = n.tgt)
         WHEN 'misaligned_random' THEN EXISTS (SELECT FROM c WHERE c.src = n.src AND c.tgt <> n.tgt)
                                       AND EXISTS (SELECT FROM c WHERE c.tgt = n.tgt)
         WHEN 'truncated_tgt' THEN EXISTS (SELECT FROM c WHERE c.src = n.src AND starts_with(c.tgt, n.tgt)
                 AND length(n.tgt) < length(c.tgt)
                 AND array_length(regexp_split_to_array(n.tgt, '\s+'), 1) * 10
                     BETWEEN 3 * array_length(regexp_split_to_array(c.tgt, '\s+'), 1)
                         AND 7 * array_length(regexp_split_to_array(c.tgt, '\s+'), 1))
         WHEN 'truncated_src' THEN EXISTS (SELECT FROM c WHERE c.tgt = n.tgt AND starts_with(c.src, n.src)
                 AND length(n.src) < length(c.src))
         WHEN 'appended_tgt' THEN EXISTS (SELECT FROM c, c AS d WHERE c.src = n.src AND n.tgt = c.tgt || ' ' || d.tgt)
         WHEN 'appended_src' THEN EXISTS (SELECT FROM c, c AS d WHERE c.tgt = n.tgt AND n.src = c.src || ' ' || d.src)
         WHEN 'untranslated' THEN n.tgt = n.src
         WHEN 'untranslated_edited' THEN n.tgt <> n.src AND EXISTS (SELECT FROM c WHERE c.src = n.src)
         WHEN 'clean' THEN EXISTS (SELECT FROM c WHERE c.src = n.src AND c.tgt = n.tgt)
       END) AS as_labelled, count(*)
  FROM n GROUP BY label ORDER BY label;

-- bad input
SELECT * FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean WHERE id = 1');
SELECT * FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean WHERE false');
SELECT * FROM corpq.synthetic_noise('SELECT src FROM noise_clean');
SELECT * FROM corpq.synthetic_noise('DELETE FROM noise_clean');
SELECT * FROM corpq.synthetic_noise(NULL);
SELECT * FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean', '{"truncated_tgt": 11}');
SELECT * FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean', '{"truncated": 0.1}');
SELECT * FROM corpq.synthetic_noise('SELECT src, tgt FROM noise_clean', '{"seed": -1}');
SELECT * FROM corpq.synthetic_noise('SELECT src, ''same'' FROM noise_clean');
DROP TABLE noise_clean, noise_other;
