
-- ---------------------------------------------------------------------------
-- Translation with a catalog model (docs/translation.md): beam search,
-- greedy decoding and sampling on the core's incremental decoder.
-- translate() and translate_nbest() come twice, like the scoring functions:
-- on a model name (STABLE) and on a pinned version (IMMUTABLE).  A sentence's
-- result does not depend on the batch it is decoded in, so every function
-- (and every parallel worker) gives the same translation.
-- ---------------------------------------------------------------------------
CREATE FUNCTION corpq.translate(model text, src text, options jsonb DEFAULT '{}') RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_translate'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.translate(model corpq.pinned_model, src text, options jsonb DEFAULT '{}')
    RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_translate_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.translate(text, text, jsonb) IS
    'the best translation of src, detokenised (options: search, beam, nbest, lenpen, max_len_a, max_len_b, min_len, no_repeat_ngram_size, unk_penalty, temperature, topk, topp, seed); sampling is keyed by the source''s token ids, so a call is reproducible';
COMMENT ON FUNCTION corpq.translate(corpq.pinned_model, text, jsonb) IS
    'translate with a pinned model version name@N';

CREATE FUNCTION corpq.translate_nbest(model text, src text, options jsonb DEFAULT '{}')
    RETURNS TABLE (rank int, hyp text, score float8, token_logprobs float8[], finished boolean)
    AS 'MODULE_PATHNAME', 'corpq_translate_nbest'
    LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 5;
CREATE FUNCTION corpq.translate_nbest(model corpq.pinned_model, src text, options jsonb DEFAULT '{}')
    RETURNS TABLE (rank int, hyp text, score float8, token_logprobs float8[], finished boolean)
    AS 'MODULE_PATHNAME', 'corpq_translate_nbest_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;
COMMENT ON FUNCTION corpq.translate_nbest(text, text, jsonb) IS
    'the nbest best hypotheses of src, best first: rank, detokenised text, score = logprob / (T + 1)^lenpen, the log-probability of each token and of </s>, and finished: false when the hypothesis ran on to the length limit, where the search forces </s> (cut)';
COMMENT ON FUNCTION corpq.translate_nbest(corpq.pinned_model, text, jsonb) IS
    'translate_nbest with a pinned model version name@N';

-- Runs a caller-supplied query through SPI: not in parallel workers.
CREATE FUNCTION corpq.translate_rows(model text, query text, options jsonb DEFAULT '{}')
    RETURNS TABLE (id bigint, hyp text, score float8, finished boolean)
    AS 'MODULE_PATHNAME', 'corpq_translate_rows'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.translate_rows(text, text, jsonb) IS
    'translate every row of query, a SELECT returning (id, src), batch sentences at a time (option batch, default 32) in this backend; rows come back in the query''s order; finished is false for a hypothesis cut at the length limit; a NULL src gives a NULL hyp, score and finished; sampling is keyed by the id; a NULL model or query is an error';

CREATE FUNCTION corpq.translate_job(model text, query text, target_table regclass,
                                    options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_translate_job'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.translate_job(text, text, regclass, jsonb) IS
    'translate every row of query, a SELECT returning (id, src) in a stable order, as a background job that inserts (id, hyp, score) into target_table (which must have those columns and which you must be able to insert into), and finished when the table has that boolean column in committed chunks of at least chunk_rows rows; returns the job id at once; options as translate_rows() plus chunk_rows (1000) and threads';
