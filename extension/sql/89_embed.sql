
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

-- The vectors of a query's rows in one statement, batched as score() batches.
-- Runs the caller's query through SPI: not in parallel workers.
CREATE FUNCTION corpq.embed_rows(model text, corpus text, options jsonb DEFAULT '{}')
    RETURNS TABLE (id bigint, embedding real[])
    AS 'MODULE_PATHNAME', 'corpq_embed_rows_srf'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.embed_rows(text, text, jsonb) IS
    'embed every row of corpus, a SELECT returning (id, sentence), with an encoder model, in the query''s order: sentences ordered by length and embedded batch_size at a time (option batch_size, 64); each vector equals corpq.embed()''s; a NULL sentence gives a NULL vector, so does one longer than the model accepts (a NOTICE counts them; option on_too_long ''error'' stops instead); a NULL model or corpus is an error';

-- A chunk's vectors reach the job's INSERT as one array of these: PostgreSQL
-- has no arrays of arrays, but arrays of a domain over real[].
CREATE DOMAIN corpq.real_vector AS real[];
COMMENT ON DOMAIN corpq.real_vector IS
    'a real[] vector as an element of an array: how an embedding job passes a chunk''s vectors to its INSERT';

CREATE FUNCTION corpq.embed_job(model text, corpus text, target_table regclass,
                                options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_embed_job'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.embed_job(text, text, regclass, jsonb) IS
    'embed every row of corpus, a SELECT returning (id, sentence) in a stable order, with an encoder model (pinned at submission) as a background job that inserts (id, embedding) into target_table (id bigint and a real[] column, or a column of a type real[] casts to on assignment, as pgvector''s vector of the model''s dimension) in committed chunks of chunk_rows rows; returns the job id at once; options: column (embedding), batch_size, chunk_rows, threads, skip_existing (only ids not yet in the target), on_too_long (null or error); a NULL sentence, and one too long for the model, gets a NULL vector; each vector equals corpq.embed(model@N, sentence)';

-- Mining on sentences: each query's (id, sentence) rows embedded with an
-- encoder model (the vectors embed() gives) and mined as mine_vectors mines
-- them.  It runs caller-supplied queries through SPI (not in parallel
-- workers) and reads a model name's latest version when it starts: STABLE
-- and PARALLEL RESTRICTED, as mine_vectors.  A version is pinned by writing
-- 'name@N'; an overload on corpq.pinned_model would change no label (the
-- queries keep it STABLE), so there is none.
CREATE FUNCTION corpq.mine_pairs(model text, src_query text, tgt_query text, options jsonb DEFAULT '{}')
    RETURNS TABLE (src_id bigint, tgt_id bigint, cosine float8, margin float8, quality float8)
    AS 'MODULE_PATHNAME', 'corpq_mine_pairs'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.mine_pairs(text, text, text, jsonb) IS
    'margin-based mining on sentences: src_query and tgt_query return (id, sentence text) (rows with a NULL id or sentence skipped), each sentence embedded with the encoder model (its latest version when the call starts, or name@N), in batches as the rows are read; then as mine_vectors over those vectors, with the same result (quality NULL); options those of mine_vectors (k 4, mutual, min_margin, block_rows, block_cols) and batch_size (64), on_too_long (null: a sentence longer than the model accepts is left out, counted in a NOTICE; error); classifier (a pair-quality classifier, name or name@N, pinned at the start): each source''s classifier_k (default k) best candidates by margin are judged by pair_quality, the largest probability wins (ties: the larger margin) and is the quality column, a source whose best is below min_quality (0.5) gives no pair; memory: the vectors bounded by work_mem, the embedding by corpq.max_batch_mb, with a classifier the sentences in temporary files; threads: corpq.threads';

-- A pair's two sentences compared: the cosine of their vectors from one
-- encoder, per row (the embedding_cosine filter's score), on a model name
-- (STABLE) or a pinned version (IMMUTABLE), as embed.
CREATE FUNCTION corpq.embedding_cosine(model text, src text, tgt text, on_too_long text DEFAULT 'null')
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_embedding_cosine'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.embedding_cosine(model corpq.pinned_model, src text, tgt text,
                                       on_too_long text DEFAULT 'null')
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_embedding_cosine_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.embedding_cosine(text, text, text, text) IS
    'the cosine of src''s and tgt''s vectors from an encoder model (the dot product of embed(model, src) and embed(model, tgt), summed in double in order), in [-1, 1]; NULL when a side is longer than the model accepts (on_too_long ''null'') or an ERROR (''error''); the score of the embedding_cosine filter';
COMMENT ON FUNCTION corpq.embedding_cosine(corpq.pinned_model, text, text, text) IS
    'embedding_cosine with a pinned model version name@N';
