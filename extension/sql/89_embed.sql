
-- ---------------------------------------------------------------------------
-- Sentence embeddings (docs/embeddings.md).  The vector half: margin-based
-- mining of pairs from two sets of vectors (Artetxe & Schwenk 2019, the
-- ratio margin over k nearest neighbours in both directions), and the two
-- scalars the pgvector recipe feeds with approximate neighbours.  Vectors
-- are real[]; a pgvector column passes as embedding::real[] (pgvector's own
-- cast), so nothing here depends on pgvector.
-- ---------------------------------------------------------------------------

-- Runs caller-supplied queries through SPI: not in parallel workers.
CREATE FUNCTION corpq.mine_vectors(src_query text, tgt_query text, options jsonb DEFAULT '{}')
    RETURNS TABLE (src_id bigint, tgt_id bigint, cosine float8, margin float8)
    AS 'MODULE_PATHNAME', 'corpq_mine_vectors'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.mine_vectors(text, text, jsonb) IS
    'margin-based mining: src_query and tgt_query return (id, embedding real[]) of one dimension (normalised here; rows with a NULL id or embedding skipped); for each source, its k nearest targets by cosine (exact search), the one of largest ratio margin cos / ((r(src) + r(tgt)) / 2), r the mean cosine to the k nearest neighbours on the other side; options k (4), mutual (false: with true only pairs that are each other''s best), min_margin, block_rows, block_cols; ties go to the smaller id; memory bounded by work_mem; threads: corpq.threads';

CREATE FUNCTION corpq.margin(cosine float8, src_knn_mean float8, tgt_knn_mean float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_margin'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.margin(float8, float8, float8) IS
    'the ratio margin of Artetxe & Schwenk (2019): cosine / ((src_knn_mean + tgt_knn_mean) / 2); NULL when src_knn_mean + tgt_knn_mean is not positive';

CREATE FUNCTION corpq.knn_mean(cosines float8[], k int DEFAULT 4) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_knn_mean'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.knn_mean(float8[], int) IS
    'a sentence''s mean cosine to its k nearest neighbours, from its cosines to candidates: the mean of the k largest (all of them when there are fewer), NULL elements skipped, NULL when none is left';

-- The encoder half: a sentence's vector from an encoder model (kind
-- encoder, models/FORMAT.md), on a model name (the latest version when the
-- query starts: STABLE) or a pinned version name@N (IMMUTABLE).
CREATE FUNCTION corpq.embed(model text, sentence text, on_too_long text DEFAULT 'null')
    RETURNS real[]
    AS 'MODULE_PATHNAME', 'corpq_embed'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.embed(model corpq.pinned_model, sentence text, on_too_long text DEFAULT 'null')
    RETURNS real[]
    AS 'MODULE_PATHNAME', 'corpq_embed_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.embed(text, text, text) IS
    'the sentence''s vector from an encoder model: d_model values of unit length (pooled and L2-normalised), dropout off; a sentence longer than the model accepts (max_positions - 2 tokens) gives NULL (on_too_long ''null'') or an ERROR (''error'')';
COMMENT ON FUNCTION corpq.embed(corpq.pinned_model, text, text) IS
    'embed with a pinned model version name@N';
