-- ---------------------------------------------------------------------------
-- Curation (docs/curation.md): the pair-quality classifier's synthetic noise.
-- It reads user queries, so it is STABLE and PARALLEL RESTRICTED as
-- mine_pairs is.
-- ---------------------------------------------------------------------------
CREATE FUNCTION corpq.synthetic_noise(clean_query text, options jsonb DEFAULT '{}')
    RETURNS TABLE (src text, tgt text, label text)
    AS 'MODULE_PATHNAME', 'corpq_synthetic_noise'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.synthetic_noise(text, jsonb) IS
    'labelled negatives made from clean pairs, deterministic by seed: clean_query returns (src, tgt) (rows with a NULL side skipped); the result is every clean pair (label clean) in query order, then for each type round(share * pairs) noisy pairs labelled misaligned_neighbour, misaligned_random, truncated_tgt, truncated_src (30-70% of the words kept), appended_tgt, appended_src, untranslated, untranslated_edited, wrong_language (targets from other_language_query, one text column; none without it); options seed (1), one share per type (0..10; defaults 0.15, 0.15, 0.15, 0.05, 0.10, 0.05, 0.10, 0.10, 0.15), other_language_query';
