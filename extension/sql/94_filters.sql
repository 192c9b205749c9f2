
-- ---------------------------------------------------------------------------
-- Rule filters and language identification (OpusFilter's filters of the same
-- purpose; docs/filters.md), one scan that reports what each filter of
-- a spec discards, the pairs each rejects, and the same spec as a SQL
-- predicate.  The score functions are IMMUTABLE (they depend on the text and
-- the Unicode / CLD2 tables of the installed libraries) and PARALLEL SAFE.
--
-- A spec may also hold the model filters dual_xent (corpq.dual_xent() against
-- a threshold) and embedding_cosine (corpq.embedding_cosine(), likewise).  A
-- model name's latest version is catalog state, so the IMMUTABLE functions
-- of a spec (filter_stats, filter_rejects, filter_keeps) take pinned
-- versions name@N only; the STABLE ones (filter_report, filter_predicate)
-- also take names and pin them to the latest version when they start.
-- Models load in any backend, parallel workers included (the cache is per
-- backend), so everything stays PARALLEL SAFE.
-- ---------------------------------------------------------------------------
CREATE FUNCTION corpq.text_length(t text, unit text DEFAULT 'word') RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_text_length'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.text_length(text, text) IS
    'the length length_ratio compares: words (runs of non-space, as Python''s str.split) or code points (char)';

CREATE FUNCTION corpq.length_ratio(src text, tgt text, unit text DEFAULT 'word') RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_length_ratio'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.length_ratio(text, text, text) IS
    'OpusFilter LengthRatioFilter: the longer length over the shorter, in words (unit word: runs of non-space as Python''s str.split) or code points (char); 0 when both sides are empty, Infinity when one is';

CREATE FUNCTION corpq.char_script_ratio(t text, script text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_char_script_ratio'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.char_script_ratio(text, text) IS
    'OpusFilter CharacterScoreFilter: the share of the Alphabetic code points whose Unicode Script is script (a long or short name: Latin, Latn, Cyrillic, Han, ...); 1 when there is none';

CREATE FUNCTION corpq.alpha_ratio(t text, exclude_whitespace boolean DEFAULT false) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_alpha_ratio'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.alpha_ratio(text, boolean) IS
    'OpusFilter AlphabetRatioFilter: the share of code points with the Unicode Alphabetic property (White_Space left out when exclude_whitespace); 1 for empty text';

CREATE FUNCTION corpq.terminal_punct_score(src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_terminal_punct_score'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.terminal_punct_score(text, text) IS
    'OpusFilter TerminalPunctuationFilter: -ln(1 + |s - t| + max(s - 1, 0) + max(t - 1, 0)) with s, t the counts of . ? ! and the ellipsis character on each side; 0 is best';

CREATE FUNCTION corpq.numerals_match(src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_numerals_match'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.numerals_match(text, text) IS
    'OpusFilter NonZeroNumeralsFilter: Python''s difflib.SequenceMatcher ratio between the sequences of digits 1-9 of the two sides; 1 when neither has one';

CREATE FUNCTION corpq.repetition(t text, max_length int DEFAULT 100, threshold int DEFAULT 2,
                                 min_length int DEFAULT 3) RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_repetition'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.repetition(text, int, int, int) IS
    'OpusFilter RepetitionFilter: for the first run of a string of min_length to max_length + 1 code points repeated at least threshold more times (optional spaces between), the number of repetitions; 0 when there is none';

CREATE FUNCTION corpq.html_tags(t text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'corpq_html_tags'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.html_tags(text) IS
    'OpusFilter HtmlTagFilter: whether BeautifulSoup''s html.parser would find an element, i.e. a complete start tag; broken tags are text';

CREATE FUNCTION corpq.dedup_key(src text, tgt text, mode text DEFAULT 'exact', side text DEFAULT 'both')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_dedup_key'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.dedup_key(text, text, text, text) IS
    'OpusFilter remove_duplicates key: xxh64 (seed 0) of the UTF-16LE of the chosen sides (both, src, tgt) joined by a newline, after normalisation (exact; lowercase; letters: letters only; near: letters only and lowercase); equal to OpusFilter''s key as a signed bigint';

-- corpq's one definition of an untranslated pair: curate()'s copy step and the
-- embedding_cosine filter's reject_copies (extension/filters/dedup.h)
CREATE FUNCTION corpq.is_copy(src text, tgt text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'corpq_is_copy'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.is_copy(text, text) IS
    'whether tgt is a copy of src: their dedup_key(..., ''near'', side) keys (letters only, lower case) are equal and src keeps a letter; curate()''s copy reason and the embedding_cosine filter''s reject_copies';

-- Language identification on CLD2 (Debian's libcld2, built-in tables).
CREATE FUNCTION corpq.langid(t text, OUT lang text, OUT prob float8, OUT reliable boolean)
    RETURNS record
    AS 'MODULE_PATHNAME', 'corpq_langid'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.langid(text) IS
    'CLD2''s first language of the text (a code such as en, es; un when unknown: empty, too short or no letters), the share of the text in it (0..1) and CLD2''s reliability flag';

CREATE FUNCTION corpq.lang_is(t text, lang text, min_prob float8 DEFAULT 0) RETURNS boolean
    AS 'MODULE_PATHNAME', 'corpq_lang_is'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.lang_is(text, text, float8) IS
    'OpusFilter Cld2Filter: whether the confidence that t is in lang (CLD2''s share of the text when its first language is lang, else 0; 1 for an empty text) exceeds min_prob';

CREATE FUNCTION corpq.langid_languages() RETURNS TABLE (code text, name text)
    AS 'MODULE_PATHNAME', 'corpq_langid_languages'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 200;
COMMENT ON FUNCTION corpq.langid_languages() IS
    'the language codes and names CLD2 knows (lang_is and the langid filter take a code or a name)';

-- Filter specs: a JSON array of {"name", "args", "threshold", "label"}.
CREATE FUNCTION corpq.filter_defaults() RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '[{"name": "length_ratio", "args": {"unit": "word"}, "threshold": 3},
             {"name": "alpha_ratio", "args": {"exclude_whitespace": true}, "threshold": 0.5},
             {"name": "terminal_punct", "threshold": -2},
             {"name": "numerals_match", "threshold": 0.5},
             {"name": "repetition", "threshold": 2},
             {"name": "html_tags"}]'::jsonb;
COMMENT ON FUNCTION corpq.filter_defaults() IS
    'the default filter spec: OpusFilter''s language-independent rule filters at its default thresholds, except alpha_ratio (letters among the non-space characters, at least 0.5: measured on real corpora, docs/filters.md); add char_script_ratio and langid with your scripts and languages';

CREATE TYPE corpq.filter_result AS (
    filter         text,
    kept           bigint,
    rejected       bigint,
    rejected_share float8,
    examples       text[]
);
COMMENT ON TYPE corpq.filter_result IS
    'what a filter did to a set of pairs: its label (all: rejected by any filter), pairs kept and rejected, rejected / (kept + rejected), the rejected pairs with the smallest dedup_key(src, tgt) as "src ||| tgt" (each side cut to 200 characters)';

CREATE FUNCTION corpq.filter_stats_trans(internal, text, text, jsonb) RETURNS internal
    AS 'MODULE_PATHNAME', 'corpq_filter_stats_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION corpq.filter_stats_trans(internal, text, text, jsonb, int) RETURNS internal
    AS 'MODULE_PATHNAME', 'corpq_filter_stats_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION corpq.filter_stats_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'corpq_filter_stats_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION corpq.filter_stats_serial(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'corpq_filter_stats_serial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.filter_stats_deserial(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'corpq_filter_stats_deserial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.filter_stats_final(internal) RETURNS corpq.filter_result[]
    AS 'MODULE_PATHNAME', 'corpq_filter_stats_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE corpq.filter_stats(src text, tgt text, filters jsonb) (
    SFUNC = corpq.filter_stats_trans, STYPE = internal, FINALFUNC = corpq.filter_stats_final,
    COMBINEFUNC = corpq.filter_stats_combine, SERIALFUNC = corpq.filter_stats_serial,
    DESERIALFUNC = corpq.filter_stats_deserial, PARALLEL = SAFE);
CREATE AGGREGATE corpq.filter_stats(src text, tgt text, filters jsonb, examples int) (
    SFUNC = corpq.filter_stats_trans, STYPE = internal, FINALFUNC = corpq.filter_stats_final,
    COMBINEFUNC = corpq.filter_stats_combine, SERIALFUNC = corpq.filter_stats_serial,
    DESERIALFUNC = corpq.filter_stats_deserial, PARALLEL = SAFE);
COMMENT ON AGGREGATE corpq.filter_stats(text, text, jsonb) IS
    'one corpq.filter_result per filter of the spec, then one for all (rejected by any), over the pairs aggregated (pairs with a NULL side are not counted); 5 examples; model filters name pinned versions name@N and score their pairs in batches';
COMMENT ON AGGREGATE corpq.filter_stats(text, text, jsonb, int) IS
    'filter_stats with examples (0 to 100) rejected pairs per filter';

-- filter_predicate writes model filters with the versions their names have
-- when it runs: STABLE, so that the text of a view keeps its meaning.
-- The reports run the corpus query through SPI, as one aggregate query that
-- may use parallel workers itself: PARALLEL UNSAFE keeps the calling query
-- out of parallel mode, where the inner scan could not have workers.
CREATE FUNCTION corpq.filter_report(corpus text, filters jsonb DEFAULT corpq.filter_defaults(),
                                    examples int DEFAULT 5)
    RETURNS TABLE (filter text, kept bigint, rejected bigint, rejected_share float8, examples text[])
    AS 'MODULE_PATHNAME', 'corpq_filter_report'
    LANGUAGE C STABLE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.filter_report(text, jsonb, int) IS
    'what each filter of the spec discards from corpus, a SELECT returning (src, tgt), in one scan (parallel query allowed): filter_stats over the corpus as rows; the last row, all, counts pairs rejected by any filter';

CREATE FUNCTION corpq.filter_report_by_domain(corpus text, filters jsonb DEFAULT corpq.filter_defaults(),
                                              examples int DEFAULT 5)
    RETURNS TABLE (domain text, filter text, kept bigint, rejected bigint, rejected_share float8,
                   examples text[])
    AS 'MODULE_PATHNAME', 'corpq_filter_report_by_domain'
    LANGUAGE C STABLE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.filter_report_by_domain(text, jsonb, int) IS
    'filter_report per domain, for a corpus SELECT returning (src, tgt, domain)';

CREATE FUNCTION corpq.filter_rejects(src text, tgt text, filters jsonb DEFAULT corpq.filter_defaults())
    RETURNS text[]
    AS 'MODULE_PATHNAME', 'corpq_filter_rejects'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.filter_rejects(text, text, jsonb) IS
    'the labels of the filters of the spec that reject the pair, {} when it passes them all (OpusFilter''s --removed, as a column); model filters name pinned versions name@N';

CREATE FUNCTION corpq.filter_keeps(src text, tgt text, filters jsonb DEFAULT corpq.filter_defaults())
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'corpq_filter_keeps'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.filter_keeps(text, text, jsonb) IS
    'true when every filter of the spec keeps the pair (the decision filter_report counts and filter_predicate writes); model filters name pinned versions name@N';

CREATE FUNCTION corpq.filter_predicate(filters jsonb DEFAULT corpq.filter_defaults(),
                                       src text DEFAULT 'src', tgt text DEFAULT 'tgt')
    RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_filter_predicate'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.filter_predicate(jsonb, text, text) IS
    'the spec as a SQL condition over the columns src and tgt, true for the pairs every filter keeps (for WHERE, a view, or EXECUTE); model names are written pinned to their latest version';
