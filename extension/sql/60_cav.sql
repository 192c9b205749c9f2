
-- ---------------------------------------------------------------------------
-- Corpus Analysis Vectors (paper 002, Sec. 3.1, Eqs. 4-5).
--
-- CAV(t) is one sparse count matrix per target token t: rows are the source
-- dictionary followed by the target dictionary, columns the distance
-- 0 .. l_max-1 in concat(src, tgt).  For every occurrence of t, every token
-- at or before it in concat(src, tgt) adds 1 at (its row, its distance to t);
-- distance 0 is t itself; context l_max or more tokens away is dropped.
--
-- Worked example (l_max 8, whitespace tokens), two pairs:
--   ('a b', 'x y')   concat = a b x y
--   ('b',   'y y')   concat = b y y
-- Occurrences of y: position 3 of pair 1, positions 1 and 2 of pair 2.
--   pair 1, y at 3:  y d0, x d1, b d2, a d3
--   pair 2, y at 1:  y d0, b d1
--   pair 2, y at 2:  y d0, y d1, b d2
-- CAV(y) (only nonzero cells; the dense matrix is 4 rows x 8 columns):
--   source a: d3 = 1        source b: d1 = 1, d2 = 2
--   target x: d1 = 1        target y: d0 = 3, d1 = 1
-- SELECT * FROM corpq.cav_entries(
--     (SELECT corpq.cav_accumulate(s, t, 8) FROM (VALUES ('a b', 'x y'), ('b', 'y y')) v(s, t)), 'y');
--
-- The value is the canonical binary layout of extension/cav/FORMAT.md.  The
-- aggregate state is a corpq.cav held as an expanded object, so partial
-- states are ordinary corpq.cav values combined by corpq.cav_merge.
-- ---------------------------------------------------------------------------
CREATE TYPE corpq.cav;

CREATE FUNCTION corpq.cav_in(cstring) RETURNS corpq.cav
    AS 'MODULE_PATHNAME', 'corpq_cav_in'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.cav_out(corpq.cav) RETURNS cstring
    AS 'MODULE_PATHNAME', 'corpq_cav_out'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.cav_recv(internal) RETURNS corpq.cav
    AS 'MODULE_PATHNAME', 'corpq_cav_recv'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.cav_send(corpq.cav) RETURNS bytea
    AS 'MODULE_PATHNAME', 'corpq_cav_send'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE corpq.cav (
    INPUT = corpq.cav_in,
    OUTPUT = corpq.cav_out,
    RECEIVE = corpq.cav_recv,
    SEND = corpq.cav_send,
    INTERNALLENGTH = VARIABLE,
    ALIGNMENT = int4,
    STORAGE = extended
);
COMMENT ON TYPE corpq.cav IS
    'Corpus Analysis Vectors: one sparse (source ++ target dictionary) x l_max count matrix per target token; text I/O is the hex form of the canonical layout (so dumps and COPY round-trip), binary I/O the layout itself; corpq.cav_summary() reads as a summary';

CREATE FUNCTION corpq.cav_summary(corpq.cav) RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_cav_summary'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.cav_summary(corpq.cav) IS
    'one-line summary of a cav: pairs, l_max, dictionary sizes, matrices, nonzeros, bytes';

CREATE FUNCTION corpq.cav_from_bytea(bytea) RETURNS corpq.cav
    AS 'MODULE_PATHNAME', 'corpq_cav_from_bytea'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.cav_from_bytea(bytea) IS
    'a cav from its canonical bytes, validated (ERROR on anything else)';

CREATE FUNCTION corpq.cav_to_bytea(corpq.cav) RETURNS bytea
    AS 'MODULE_PATHNAME', 'corpq_cav_to_bytea'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.cav_to_bytea(corpq.cav) IS
    'the canonical bytes of a cav (equal CAVs have equal bytes)';

CREATE FUNCTION corpq.cav_to_jsonb(corpq.cav) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'corpq_cav_to_jsonb'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.cav_to_jsonb(corpq.cav) IS
    'the full content: version, l_max, pairs, source, target, restricted (null: all), matrices [{token, occurrences, entries [[row, distance, count]]}]; row indexes source ++ target';

CREATE FUNCTION corpq.cav_stats(corpq.cav,
    OUT pairs bigint, OUT l_max int, OUT source_tokens bigint,
    OUT target_tokens bigint, OUT restricted bigint, OUT matrices bigint,
    OUT nonzeros bigint, OUT bytes bigint)
    AS 'MODULE_PATHNAME', 'corpq_cav_stats'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.cav_stats(corpq.cav) IS
    'pairs, l_max, dictionary sizes, restricted target count (0: all), matrices, nonzero cells and bytes of a cav';

-- ---- aggregation -----------------------------------------------------------
-- Transition functions take the state as a read-write expanded corpq.cav in
-- the aggregate context; they raise an ERROR outside an aggregate.
CREATE FUNCTION corpq.cav_accumulate_trans(corpq.cav, text, text) RETURNS corpq.cav
    AS 'MODULE_PATHNAME', 'corpq_cav_accumulate_trans'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION corpq.cav_accumulate_trans(corpq.cav, text, text, int) RETURNS corpq.cav
    AS 'MODULE_PATHNAME', 'corpq_cav_accumulate_trans'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION corpq.cav_accumulate_trans(corpq.cav, text, text, int, text[]) RETURNS corpq.cav
    AS 'MODULE_PATHNAME', 'corpq_cav_accumulate_trans'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
-- bpe names a catalog row (read through SPI), hence STABLE
CREATE FUNCTION corpq.cav_accumulate_trans(corpq.cav, text, text, int, text[], text) RETURNS corpq.cav
    AS 'MODULE_PATHNAME', 'corpq_cav_accumulate_trans'
    LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION corpq.cav_accumulate_final(corpq.cav) RETURNS corpq.cav
    AS 'MODULE_PATHNAME', 'corpq_cav_accumulate_final'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION corpq.cav_sum_trans(corpq.cav, corpq.cav) RETURNS corpq.cav
    AS 'MODULE_PATHNAME', 'corpq_cav_sum_trans'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Merges the two values' bytes in one linear pass (no state is rebuilt).
CREATE FUNCTION corpq.cav_merge(a corpq.cav, b corpq.cav) RETURNS corpq.cav
    AS 'MODULE_PATHNAME', 'corpq_cav_merge'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.cav_merge(corpq.cav, corpq.cav) IS
    'the CAV of both corpora (ERROR if built with different l_max or restricted targets)';

-- CREATE AGGREGATE takes no DEFAULTs, so the optional arguments are overloads.
CREATE AGGREGATE corpq.cav_accumulate(src text, tgt text) (
    SFUNC = corpq.cav_accumulate_trans, STYPE = corpq.cav,
    FINALFUNC = corpq.cav_accumulate_final,
    COMBINEFUNC = corpq.cav_merge, PARALLEL = SAFE);
CREATE AGGREGATE corpq.cav_accumulate(src text, tgt text, l_max int) (
    SFUNC = corpq.cav_accumulate_trans, STYPE = corpq.cav,
    FINALFUNC = corpq.cav_accumulate_final,
    COMBINEFUNC = corpq.cav_merge, PARALLEL = SAFE);
CREATE AGGREGATE corpq.cav_accumulate(src text, tgt text, l_max int, targets text[]) (
    SFUNC = corpq.cav_accumulate_trans, STYPE = corpq.cav,
    FINALFUNC = corpq.cav_accumulate_final,
    COMBINEFUNC = corpq.cav_merge, PARALLEL = SAFE);
CREATE AGGREGATE corpq.cav_accumulate(src text, tgt text, l_max int, targets text[], bpe text) (
    SFUNC = corpq.cav_accumulate_trans, STYPE = corpq.cav,
    FINALFUNC = corpq.cav_accumulate_final,
    COMBINEFUNC = corpq.cav_merge, PARALLEL = SAFE);
COMMENT ON AGGREGATE corpq.cav_accumulate(text, text) IS
    'CAV of whitespace-tokenised pairs with l_max 256; NULL sides and empty targets are skipped; NULL if no pair';
COMMENT ON AGGREGATE corpq.cav_accumulate(text, text, int) IS
    'CAV of whitespace-tokenised pairs; distances 0 .. l_max-1 (1 <= l_max <= 65535), farther context dropped';
COMMENT ON AGGREGATE corpq.cav_accumulate(text, text, int, text[]) IS
    'CAV with matrices only for the given target tokens (NULL: all); options must be equal in every row';
COMMENT ON AGGREGATE corpq.cav_accumulate(text, text, int, text[], text) IS
    'CAV of pairs segmented by BPE model bpe (NULL or ''whitespace'': whitespace); a state may hold work_mem x 256 bytes (1 GB at the default 4MB)';

CREATE AGGREGATE corpq.cav_sum(corpq.cav) (
    SFUNC = corpq.cav_sum_trans, STYPE = corpq.cav,
    FINALFUNC = corpq.cav_accumulate_final,
    COMBINEFUNC = corpq.cav_merge, PARALLEL = SAFE);
COMMENT ON AGGREGATE corpq.cav_sum(corpq.cav) IS
    'merge stored CAVs (e.g. one per domain) into the CAV of their union';

-- ---- analysis ----------------------------------------------------------------
-- A token without a matrix gives NULL (scalars) or no rows (sets).
CREATE FUNCTION corpq.cav_tokens(corpq.cav)
    RETURNS TABLE (token text, occurrences bigint, nonzeros int)
    AS 'MODULE_PATHNAME', 'corpq_cav_tokens'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 1000;
COMMENT ON FUNCTION corpq.cav_tokens(corpq.cav) IS
    'the target tokens that have a matrix, in byte order, with target-side occurrences and nonzero cells';

CREATE FUNCTION corpq.cav_entries(corpq.cav, token text)
    RETURNS TABLE (side text, feature text, distance int, count bigint)
    AS 'MODULE_PATHNAME', 'corpq_cav_entries'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 100;
COMMENT ON FUNCTION corpq.cav_entries(corpq.cav, text) IS
    'the nonzero cells of CAV(token): side (source/target) and feature token of the row, distance, count; source rows first, each in byte order';

CREATE FUNCTION corpq.cav_cosine(corpq.cav, a text, b text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_cav_cosine'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.cav_cosine(corpq.cav, text, text) IS
    'cosine similarity of CAV(a) and CAV(b) flattened over (row, distance); NULL if either has no matrix';

CREATE FUNCTION corpq.cav_similar(corpq.cav, token text, k int DEFAULT 10)
    RETURNS TABLE (token text, cosine float8)
    AS 'MODULE_PATHNAME', 'corpq_cav_similar'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 10;
COMMENT ON FUNCTION corpq.cav_similar(corpq.cav, text, int) IS
    'the k tokens whose CAV is most similar to token''s (itself excluded), by descending cosine, ties in byte order';

CREATE FUNCTION corpq.cav_pool(corpq.cav, token text, rows int, cols int,
                               layer_norm boolean DEFAULT false) RETURNS float4[]
    AS 'MODULE_PATHNAME', 'corpq_cav_pool'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.cav_pool(corpq.cav, text, int, int, boolean) IS
    'CAV(token) adaptive-average-pooled (PyTorch bins) to a rows x cols array; with layer_norm, the whole matrix is first normalised to mean 0 and variance 1 (LayerNorm without affine, eps 1e-5: ANTAP''s input); NULL if token has no matrix';
