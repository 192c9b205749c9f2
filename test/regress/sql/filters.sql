-- Rule filters, language identification, filter specs and reports.
-- The scores themselves are checked against OpusFilter's definitions in
-- Python by test/ref/test_filters.py; here: the SQL surface, bad input,
-- NULLs, and that the one-scan report, the per-row rejects and the SQL
-- predicate take the same decisions, serially and in parallel.

-- scores
SELECT corpq.length_ratio('one two', 'uno dos tres cuatro') AS words,
       corpq.length_ratio('one two', 'uno dos tres cuatro', 'char') AS chars,
       corpq.length_ratio('', '') AS both_empty, corpq.length_ratio('', 'x') AS one_empty;
SELECT corpq.alpha_ratio('ab 12') AS alpha, corpq.alpha_ratio('ab 12', true) AS alpha_nows,
       corpq.alpha_ratio('') AS empty,
       corpq.char_script_ratio('abcд', 'Latin') AS latin, corpq.char_script_ratio('abcд', 'Cyrl') AS cyrillic,
       corpq.char_script_ratio('漢字かな', 'Han') AS han, corpq.char_script_ratio('123 !', 'Latin') AS no_letters;
SELECT round(corpq.terminal_punct_score('Hello. How are you?', 'Hola…')::numeric, 6) AS punct,
       corpq.terminal_punct_score('Yes.', 'Sí.') AS punct_best,
       round(corpq.numerals_match('Chapter 12, verse 30', 'cap 1 v 3 y 2')::numeric, 6) AS numerals,
       corpq.numerals_match('no digits', 'ninguno') AS numerals_none;
SELECT corpq.repetition('abcabcabcabc') AS rep, corpq.repetition('a normal sentence') AS none,
       corpq.repetition('xx yyy yyy yyy', threshold => 3) AS below_threshold,
       corpq.repetition('go go go go', 10, 2, 3) AS spaced;
SELECT s, corpq.html_tags(s) FROM (VALUES ('<b>bold</b>'), ('a < b and c > d'), ('<a href=''x'),
    ('Usage: cp <file>'), ('<!-- <b> -->'), ('</b>')) v(s);

-- emoji, mixed scripts, empty strings and 100 kB strings have defined values
SELECT corpq.length_ratio('😀 🚀', 'x'), corpq.alpha_ratio('😀'), corpq.char_script_ratio('Привет world', 'Latin'),
       corpq.html_tags('😀<i>😀'), corpq.repetition('😀😀😀😀😀😀😀😀😀', 100, 2, 1);
SELECT corpq.length_ratio(repeat('word ', 20000), repeat('palabra ', 10000)) AS long_ratio,
       corpq.alpha_ratio(repeat('ab1', 34000)) = 2.0 / 3 AS long_alpha,
       corpq.repetition(repeat('na', 50000)) AS long_rep,
       corpq.numerals_match(repeat('1234567890', 10000), repeat('0987654321', 10000)) AS long_numerals,
       corpq.html_tags(repeat('a < b ', 17000)) AS long_html,
       (corpq.langid(repeat('the cat sat on the mat. ', 4500))).lang AS long_repeated_lang,
       (corpq.langid(string_agg('the cat number ' || g || ' sat on the mat', ', '))).lang AS long_lang
FROM generate_series(1, 3000) g;

-- NULL gives NULL
SELECT corpq.length_ratio(NULL, 'x') IS NULL, corpq.alpha_ratio(NULL) IS NULL,
       corpq.html_tags(NULL) IS NULL, corpq.dedup_key('a', NULL) IS NULL,
       corpq.lang_is(NULL, 'en') IS NULL, (corpq.langid(NULL)).lang IS NULL,
       corpq.filter_rejects('a', 'b', NULL) IS NULL, corpq.filter_predicate(NULL) IS NULL,
       corpq.filter_keeps(NULL, 'b') IS NULL;

-- text that is not valid UTF-8 cannot reach the functions
SELECT corpq.alpha_ratio(convert_from('\xff'::bytea, 'UTF8'));

-- bad names and values: ERROR listing the valid ones
SELECT corpq.length_ratio('a', 'b', 'line');
SELECT corpq.char_script_ratio('a', 'Klingon') IS NULL AS lists_scripts;
SELECT corpq.dedup_key('a', 'b', 'fuzzy');
SELECT corpq.dedup_key('a', 'b', 'exact', 'middle');
SELECT corpq.repetition('abc', 100, 0);
SELECT corpq.repetition('abc', 1, 2, 3);
SELECT corpq.lang_is('hello', 'klingon');
SELECT corpq.lang_is('hello', 'en', 1);

-- language identification (CLD2)
SELECT (corpq.langid('In the beginning, God created the heavens and the earth.')).*;
SELECT (corpq.langid('En el principio creó Dios el cielo y la tierra.')).*;
SELECT s, (corpq.langid(s)).* FROM (VALUES (''), ('File'), ('%s: %s'), ('12345')) v(s);
SELECT corpq.lang_is('En el principio creó Dios el cielo y la tierra.', 'es') AS es,
       corpq.lang_is('En el principio creó Dios el cielo y la tierra.', 'SPANISH', 0.9) AS es_090,
       corpq.lang_is('En el principio creó Dios el cielo y la tierra.', 'en') AS en,
       corpq.lang_is('', 'en') AS empty_passes;
SELECT count(*) > 80 AS many, bool_or(code = 'es' AND name = 'SPANISH') AS has_spanish
FROM corpq.langid_languages();

-- duplicate keys: near duplicates, one side, and the recipes of the README
SELECT corpq.dedup_key('Hello, World!', 'Hola', 'near') = corpq.dedup_key('hello world', 'hola', 'near') AS near_same,
       corpq.dedup_key('Hello, World!', 'Hola') = corpq.dedup_key('hello world', 'hola') AS exact_same,
       corpq.dedup_key('x', 'Hola', 'lowercase', 'tgt') = corpq.dedup_key('y', 'HOLA', 'lowercase', 'tgt') AS tgt_same,
       corpq.dedup_key('Hello', 'Hola') AS key;
CREATE TABLE dd (id int, src text, tgt text, score float8);
INSERT INTO dd VALUES (1, 'Open the file.', 'Abre el archivo.', 0.2), (2, 'open the file', 'Abre el archivo', 0.9),
    (3, 'Close it.', 'Ciérralo.', 0.5), (4, 'Shut it.', 'Ciérralo.', 0.7), (5, 'Close it.', 'Ciérralo.', 0.1);
-- exact duplicates: one row per key
SELECT DISTINCT ON (corpq.dedup_key(src, tgt)) id FROM dd ORDER BY corpq.dedup_key(src, tgt), id;
-- near duplicates (case and punctuation): the best-scoring pair of each
SELECT DISTINCT ON (corpq.dedup_key(src, tgt, 'near')) id FROM dd
ORDER BY corpq.dedup_key(src, tgt, 'near'), score DESC;
-- one translation per target sentence, the best-scoring pair kept
SELECT DISTINCT ON (corpq.dedup_key(src, tgt, 'exact', 'tgt')) id, tgt FROM dd
ORDER BY corpq.dedup_key(src, tgt, 'exact', 'tgt'), score DESC;
-- overlap with a dev/test set: drop training pairs whose source is in it
CREATE TABLE dd_test (src text, tgt text);
INSERT INTO dd_test VALUES ('OPEN THE FILE', 'x');
SELECT id FROM dd WHERE corpq.dedup_key(src, tgt, 'near', 'src') NOT IN
    (SELECT corpq.dedup_key(src, tgt, 'near', 'src') FROM dd_test) ORDER BY id;

-- filter specs
SELECT corpq.filter_defaults();
SELECT corpq.filter_predicate(corpq.filter_defaults());
SELECT corpq.filter_predicate('[{"name": "char_script_ratio", "args": {"src": "Latin", "tgt": "Latin"}, "threshold": 0.9},
                               {"name": "langid", "args": {"src": "en", "tgt": "es"}, "label": "lid"}]', 'English', 'tgt');
SELECT corpq.filter_predicate('[]');
-- unknown filter, key, arg, script or language; out-of-range thresholds; malformed specs
SELECT corpq.filter_predicate('[{"name": "nope"}]');
SELECT corpq.filter_predicate('[{"name": "length_ratio", "treshold": 2}]');
SELECT corpq.filter_predicate('[{"name": "length_ratio", "args": {"units": "char"}}]');
SELECT corpq.filter_predicate('[{"name": "length_ratio", "args": {"unit": "line"}}]');
SELECT corpq.filter_predicate('[{"name": "char_script_ratio", "args": {"src": "Latin", "tgt": "Elvish"}}]') IS NULL AS lists_scripts;
SELECT corpq.filter_predicate('[{"name": "char_script_ratio", "args": {"src": "Latin"}}]');
SELECT corpq.filter_predicate('[{"name": "langid", "args": {"src": "en", "tgt": "xx"}}]');
SELECT corpq.filter_predicate('[{"name": "alpha_ratio", "threshold": 1.5}]');
SELECT corpq.filter_predicate('[{"name": "length_ratio", "threshold": 0.5}]');
SELECT corpq.filter_predicate('[{"name": "terminal_punct", "threshold": 1}]');
SELECT corpq.filter_predicate('[{"name": "repetition", "threshold": 1.5}]');
SELECT corpq.filter_predicate('[{"name": "repetition", "args": {"min_length": 5, "max_length": 2}}]');
SELECT corpq.filter_predicate('[{"name": "langid", "args": {"src": "en", "tgt": "es"}, "threshold": 1}]');
SELECT corpq.filter_predicate('[{"name": "html_tags", "threshold": 1}]');
SELECT corpq.filter_predicate('[{"name": "alpha_ratio", "args": {"threshold": 0.5}}]');
SELECT corpq.filter_predicate('[{"name": "alpha_ratio"}, {"name": "alpha_ratio"}]');
SELECT corpq.filter_predicate('[{"name": "alpha_ratio", "label": "all"}]');
SELECT corpq.filter_predicate('{"name": "alpha_ratio"}');
SELECT corpq.filter_predicate('["alpha_ratio"]');
SELECT corpq.filter_predicate('[{"args": {}}]');

-- html_tags with keep_same_tags: the same markup on both sides passes (a
-- localisation string), markup on one side or different markup does not;
-- placeholders in angle brackets are not markup; the predicate agrees
SELECT s, t, corpq.filter_rejects(s, t, '[{"name": "html_tags"}]') AS plain,
       corpq.filter_rejects(s, t, '[{"name": "html_tags", "args": {"keep_same_tags": true}}]') AS same_tags_kept,
       corpq.filter_keeps(s, t, '[{"name": "html_tags", "args": {"keep_same_tags": true}}]') AS keeps
  FROM (VALUES ('<b>File</b> not found', 'Archivo <B>no</B> encontrado'),
               ('Open <file> <br/>', 'Abrir <archivo> <br>'),
               ('<p>Hello</p>', 'Hola'),
               ('<b>Hello</b>', '<i>Hola</i>'),
               ('Hello', 'Hola')) v(s, t);
SELECT corpq.filter_predicate('[{"name": "html_tags", "args": {"keep_same_tags": true}}]');
SELECT corpq.filter_predicate('[{"name": "html_tags", "args": {"keep_same_tags": 1}}]');

-- defaults measured on real corpora (docs/filters.md): alpha_ratio counts letters
-- among the non-space characters, at least 0.5; OpusFilter's AlphabetRatioFilter
-- counts spaces too, at 0.75 ('I am a cat': 7 of 10, 7 of 7 without spaces)
SELECT corpq.filter_rejects('I am a cat', 'Soy un gato', '[{"name": "alpha_ratio"}]') AS default_keeps,
       corpq.filter_rejects('I am a cat', 'Soy un gato',
           '[{"name": "alpha_ratio", "args": {"exclude_whitespace": false}, "threshold": 0.75}]') AS opusfilter_rejects,
       corpq.filter_rejects('%s: %s (%d)', '%s: %s (%d)', '[{"name": "alpha_ratio"}]') AS format_string_rejected,
       corpq.filter_predicate('[{"name": "alpha_ratio"}]');
-- langid: CLD2 with the expected language as its hint (hint), a side whose
-- answer CLD2 does not call reliable left alone (keep_unreliable), a side
-- shorter than min_chars code points left alone; all off is OpusFilter's Cld2Filter
CREATE TABLE lid (id int, src text, tgt text);
INSERT INTO lid VALUES
    (1, 'Open the file', 'Archivo'),                    -- short: CLD2 answers un, not reliable
    (2, 'and for the destructive mildew of a garment, and for a house,', 'Y de la lepra del vestido, y de la casa;'),  -- Italian to CLD2 without the hint
    (3, 'Open the file and read it carefully.', 'Open the file and read it carefully.'),  -- untranslated
    (4, 'independent', 'independientes'),               -- English to CLD2, reliably, even with the hint
    (5, 'In the beginning, God created the heavens and the earth.', 'En el principio creó Dios el cielo y la tierra.');
SELECT id, (corpq.langid(tgt)).lang AS tgt_lang, (corpq.langid(tgt)).reliable AS tgt_reliable,
       corpq.filter_keeps(src, tgt, '[{"name": "langid", "args": {"src": "en", "tgt": "es"}}]') AS defaults,
       corpq.filter_keeps(src, tgt, '[{"name": "langid", "args": {"src": "en", "tgt": "es", "hint": false, "keep_unreliable": false}}]') AS cld2filter,
       corpq.filter_keeps(src, tgt, '[{"name": "langid", "args": {"src": "en", "tgt": "es", "keep_unreliable": false}}]') AS hint_only,
       corpq.filter_keeps(src, tgt, '[{"name": "langid", "args": {"src": "en", "tgt": "es", "hint": false}}]') AS keep_unreliable_only,
       corpq.filter_keeps(src, tgt, '[{"name": "langid", "args": {"src": "en", "tgt": "es", "min_chars": 15}}]') AS min_chars_15,
       corpq.filter_keeps(src, tgt, '[{"name": "langid", "args": {"src": "en", "tgt": "es", "hint": false, "keep_unreliable": false}}]')
         = (corpq.lang_is(src, 'en') AND corpq.lang_is(tgt, 'es')) AS lang_is_is_cld2filter
  FROM lid ORDER BY id;
SELECT corpq.filter_predicate('[{"name": "langid", "args": {"src": "en", "tgt": "es", "min_chars": 15}}]');
SELECT corpq.filter_predicate('[{"name": "langid", "args": {"src": "en", "tgt": "es", "min_chars": -1}}]');
SELECT corpq.filter_predicate('[{"name": "langid", "args": {"src": "en", "tgt": "es", "min_chars": 2.5}}]');
SELECT corpq.filter_predicate('[{"name": "langid", "args": {"src": "en", "tgt": "es", "hint": "yes"}}]');
SELECT corpq.filter_predicate('[{"name": "langid", "args": {"src": "en", "tgt": "es", "keep_unreliable": 1}}]');

-- reports: a small corpus with one pair for each filter to catch
CREATE TABLE fc (id int, domain text, src text, tgt text);
INSERT INTO fc VALUES
    (1, 'a', 'Open the file.', 'Abre el archivo.'),
    (2, 'a', '<b>Bold</b> text here', 'Texto en negrita aquí'),
    (3, 'a', 'one two three four five six seven', 'uno'),
    (4, 'b', 'Chapter 12 verse 30', 'Capítulo 47 versículo 89'),
    (5, 'b', 'ha ha ha ha ha', 'ja ja ja ja ja'),
    (6, 'b', 'What? Really?! Yes...', 'Sí'),
    (7, 'b', '%s: %s (%d)', '%s: %s (%d)'),
    (8, 'b', NULL, 'nada');
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM fc');
SELECT domain, filter, kept, rejected, round(rejected_share::numeric, 3) AS share
FROM corpq.filter_report_by_domain('SELECT src, tgt, domain FROM fc') WHERE rejected > 0;
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM fc WHERE false');
-- (langid leaves fc's short pairs alone; an untranslated pair it rejects)
SELECT filter, kept, rejected, examples FROM corpq.filter_report(
    'SELECT src, tgt FROM fc UNION ALL VALUES (''Open the file and read it carefully.'', ''Open the file and read it carefully.'')',
    '[{"name": "langid", "args": {"src": "en", "tgt": "es"}}, {"name": "char_script_ratio", "args": {"src": "Latin", "tgt": "Latin"}}]', 1);
-- OpusFilter's --removed: what each filter rejects, per row
SELECT id, corpq.filter_rejects(src, tgt) FROM fc ORDER BY id;
-- filter_keeps: the pairs no filter rejects
SELECT count(*) AS rows, count(*) FILTER (WHERE corpq.filter_keeps(src, tgt)) AS kept,
       bool_and(corpq.filter_keeps(src, tgt) = (cardinality(corpq.filter_rejects(src, tgt)) = 0)) AS agrees
FROM fc;
-- bad input to the report: checked before any row is read
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM fc', '[{"name": "nope"}]');
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM fc', corpq.filter_defaults(), 101);
SELECT * FROM corpq.filter_report('SELECT src, tgt FROM fc; SELECT 1');
SELECT * FROM corpq.filter_report('DELETE FROM fc');
SELECT * FROM corpq.filter_report('SELECT src FROM fc');
SELECT * FROM corpq.filter_report('SELECT id, tgt FROM fc');
SELECT * FROM corpq.filter_report_by_domain('SELECT src, tgt FROM fc');

-- the report, the per-row rejects and the predicate agree, filter by filter
CREATE TABLE fcs AS
SELECT g AS id, 'd' || (g % 3) AS domain,
       CASE g % 7 WHEN 0 THEN '<i>' || g || '</i> ok' WHEN 1 THEN repeat('la ', g % 5 + 1) ELSE 'Item ' || g || ' of the list.' END AS src,
       CASE g % 5 WHEN 0 THEN 'Elemento ' || (g * 3) || '.' WHEN 1 THEN 'x' ELSE 'Elemento ' || g || ' de la lista.' END AS tgt
FROM generate_series(1, 3000) g;
ANALYZE fcs;
CREATE TEMP TABLE spec_items AS
SELECT e.item, e.n FROM jsonb_array_elements(corpq.filter_defaults()) WITH ORDINALITY e(item, n);
CREATE FUNCTION pg_temp.count_rejected(item jsonb) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE 'SELECT count(*) FROM fcs WHERE NOT (' || corpq.filter_predicate(jsonb_build_array(item)) || ')' INTO n;
    RETURN n;
END $$;
SELECT r.filter, r.rejected,
       r.rejected = pg_temp.count_rejected(s.item) AS predicate_agrees,
       r.rejected = (SELECT count(*) FROM fcs WHERE r.filter = ANY (corpq.filter_rejects(src, tgt))) AS rejects_agree
FROM corpq.filter_report('SELECT src, tgt FROM fcs') r
JOIN spec_items s ON s.item ->> 'name' = r.filter;
CREATE FUNCTION pg_temp.count_kept() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE 'SELECT count(*) FROM fcs WHERE ' || corpq.filter_predicate() INTO n;
    RETURN n;
END $$;
SELECT kept = pg_temp.count_kept() AS all_agrees FROM corpq.filter_report('SELECT src, tgt FROM fcs') WHERE filter = 'all';

-- parallel: the same counts and examples as serially
CREATE TEMP TABLE serial_report AS SELECT * FROM corpq.filter_report_by_domain('SELECT src, tgt, domain FROM fcs');
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT corpq.filter_stats(src, tgt, corpq.filter_defaults()) FROM fcs;
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/workers_launched.sql'
\i :fixture
SELECT pg_temp.workers_launched('SELECT corpq.filter_stats(src, tgt, corpq.filter_defaults()) FROM fcs') > 0 AS parallel_ran;
SELECT count(*) AS rows, bool_and(p IS NOT DISTINCT FROM s) AS same_as_serial
FROM corpq.filter_report_by_domain('SELECT src, tgt, domain FROM fcs') p
FULL JOIN serial_report s USING (domain, filter);
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
-- the aggregate refuses a spec that changes from row to row
SELECT corpq.filter_stats(src, tgt, CASE WHEN id < 3 THEN '[]'::jsonb ELSE corpq.filter_defaults() END) FROM fc;
