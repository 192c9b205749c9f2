
-- ---------------------------------------------------------------------------
-- Scoring sentence pairs with a catalog model (teacher forced, EOS
-- included).  Each function comes twice: on a model name (text: the latest
-- version when the query starts, so STABLE) and on a pinned version
-- (corpq.pinned_model 'name@N': its weights never change, so IMMUTABLE --
-- usable in index expressions and shipped by postgres_fdw).  An untyped
-- literal 'm@3' picks the text overload; write 'm@3'::corpq.pinned_model.
--
-- A pair with a side longer than the model accepts (max_positions - 1
-- tokens) scores NULL (counted by the batch functions).  Each function also
-- has an overload with a last argument on_too_long: 'null' (the same) or
-- 'error' (an ERROR naming the limit).  It is an overload, not a parameter
-- with a DEFAULT: the signatures without it are 0.1.0's, which users' views
-- and expression indexes call (ALTER EXTENSION corpq UPDATE could not drop
-- them), and beside them a DEFAULT would make every call ambiguous.  As
-- PostgreSQL puts no parameter without a DEFAULT after one with, the
-- overloads of the functions with DEFAULTs (uncertainty, score) take every
-- argument.  Both overloads call the same C function, which reads
-- on_too_long only when the call has it (model.h).
-- ---------------------------------------------------------------------------
CREATE FUNCTION corpq.sent_prob(model text, src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_prob'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.sent_prob(model text, src text, tgt text, on_too_long text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_prob'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.sent_prob(model corpq.pinned_model, src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_prob_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.sent_prob(model corpq.pinned_model, src text, tgt text, on_too_long text)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_prob_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.sent_prob(text, text, text) IS
    'exp of the mean log-probability of the target tokens and </s> given the source, dropout off (data rejuvenation''s sentence probability); NULL for a side longer than the model accepts';
COMMENT ON FUNCTION corpq.sent_prob(text, text, text, text) IS
    'sent_prob; a side longer than the model accepts scores NULL (on_too_long ''null'') or is an ERROR (''error'')';
COMMENT ON FUNCTION corpq.sent_prob(corpq.pinned_model, text, text) IS
    'sent_prob with a pinned model version name@N';
COMMENT ON FUNCTION corpq.sent_prob(corpq.pinned_model, text, text, text) IS
    'sent_prob with a pinned model version name@N and on_too_long (''null'' or ''error'')';

CREATE FUNCTION corpq.sent_logprob(model text, src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_logprob'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.sent_logprob(model text, src text, tgt text, on_too_long text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_logprob'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.sent_logprob(model corpq.pinned_model, src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_logprob_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.sent_logprob(model corpq.pinned_model, src text, tgt text, on_too_long text)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_logprob_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.sent_logprob(text, text, text) IS
    'sum of the log-probabilities (nats) of the target tokens and </s> given the source, dropout off; NULL for a side longer than the model accepts';
COMMENT ON FUNCTION corpq.sent_logprob(text, text, text, text) IS
    'sent_logprob; a side longer than the model accepts scores NULL (on_too_long ''null'') or is an ERROR (''error'')';
COMMENT ON FUNCTION corpq.sent_logprob(corpq.pinned_model, text, text) IS
    'sent_logprob with a pinned model version name@N';
COMMENT ON FUNCTION corpq.sent_logprob(corpq.pinned_model, text, text, text) IS
    'sent_logprob with a pinned model version name@N and on_too_long (''null'' or ''error'')';

CREATE FUNCTION corpq.token_scores(model text, src text, tgt text)
    RETURNS TABLE (pos int, token text, logprob float8, pred_token text,
                   pred_prob float8, entropy float8)
    AS 'MODULE_PATHNAME', 'corpq_token_scores'
    LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 30;
CREATE FUNCTION corpq.token_scores(model text, src text, tgt text, on_too_long text)
    RETURNS TABLE (pos int, token text, logprob float8, pred_token text,
                   pred_prob float8, entropy float8)
    AS 'MODULE_PATHNAME', 'corpq_token_scores'
    LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 30;
CREATE FUNCTION corpq.token_scores(model corpq.pinned_model, src text, tgt text)
    RETURNS TABLE (pos int, token text, logprob float8, pred_token text,
                   pred_prob float8, entropy float8)
    AS 'MODULE_PATHNAME', 'corpq_token_scores_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 30;
CREATE FUNCTION corpq.token_scores(model corpq.pinned_model, src text, tgt text, on_too_long text)
    RETURNS TABLE (pos int, token text, logprob float8, pred_token text,
                   pred_prob float8, entropy float8)
    AS 'MODULE_PATHNAME', 'corpq_token_scores_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 30;
COMMENT ON FUNCTION corpq.token_scores(text, text, text) IS
    'per target position (1-based, the last is </s>): the target subword, its log-probability, the most probable token, its probability and the entropy (nats) of the prediction, dropout off; no rows for a side longer than the model accepts';
COMMENT ON FUNCTION corpq.token_scores(text, text, text, text) IS
    'token_scores; a side longer than the model accepts gives no rows (on_too_long ''null'') or an ERROR (''error'')';
COMMENT ON FUNCTION corpq.token_scores(corpq.pinned_model, text, text) IS
    'token_scores with a pinned model version name@N';
COMMENT ON FUNCTION corpq.token_scores(corpq.pinned_model, text, text, text) IS
    'token_scores with a pinned model version name@N and on_too_long (''null'' or ''error'')';

CREATE FUNCTION corpq.uncertainty(model text, src text, tgt text,
                                  measure text DEFAULT 'enteos', passes int DEFAULT 30,
                                  seed bigint DEFAULT 0)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_uncertainty'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.uncertainty(model text, src text, tgt text, measure text, passes int,
                                  seed bigint, on_too_long text)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_uncertainty'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.uncertainty(model corpq.pinned_model, src text, tgt text,
                                  measure text DEFAULT 'enteos', passes int DEFAULT 30,
                                  seed bigint DEFAULT 0)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_uncertainty_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.uncertainty(model corpq.pinned_model, src text, tgt text, measure text,
                                  passes int, seed bigint, on_too_long text)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_uncertainty_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.uncertainty(text, text, text, text, int, bigint) IS
    'MultiUAT model uncertainty of a pair: the measure (pretp, exptp, vartp, comev, entsent, enteos, exptp_geo, vartp_log, comev_log) averaged over passes Monte Carlo dropout forward passes; the masks depend only on seed, the pass and the pair, so the value is reproducible in every backend and worker; NULL for a side longer than the model accepts';
COMMENT ON FUNCTION corpq.uncertainty(text, text, text, text, int, bigint, text) IS
    'uncertainty with every argument given; a side longer than the model accepts scores NULL (on_too_long ''null'') or is an ERROR (''error'')';
COMMENT ON FUNCTION corpq.uncertainty(corpq.pinned_model, text, text, text, int, bigint) IS
    'uncertainty with a pinned model version name@N';
COMMENT ON FUNCTION corpq.uncertainty(corpq.pinned_model, text, text, text, int, bigint, text) IS
    'uncertainty with a pinned model version name@N, every argument given and on_too_long (''null'' or ''error'')';

-- Dual conditional cross-entropy (Junczys-Dowmunt 2018): a forward and a
-- backward model judge a pair together.
CREATE FUNCTION corpq.dual_xent(forward text, backward text, src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_dual_xent'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.dual_xent(forward text, backward text, src text, tgt text, on_too_long text)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_dual_xent'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.dual_xent(forward corpq.pinned_model, backward corpq.pinned_model,
                                src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_dual_xent_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.dual_xent(forward corpq.pinned_model, backward corpq.pinned_model,
                                src text, tgt text, on_too_long text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_dual_xent_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.dual_xent(text, text, text, text) IS
    'dual conditional cross-entropy score of a pair (Junczys-Dowmunt, WMT 2018): exp(-(|H_f - H_b| + (H_f + H_b) / 2)) in (0, 1], H_f = -ln sent_prob(forward, src, tgt), H_b = -ln sent_prob(backward, tgt, src): high when both directions find the pair probable and agree; NULL for a side longer than a model accepts';
COMMENT ON FUNCTION corpq.dual_xent(text, text, text, text, text) IS
    'dual_xent; a side longer than a model accepts scores NULL (on_too_long ''null'') or is an ERROR (''error'')';
COMMENT ON FUNCTION corpq.dual_xent(corpq.pinned_model, corpq.pinned_model, text, text) IS
    'dual_xent with pinned model versions name@N';
COMMENT ON FUNCTION corpq.dual_xent(corpq.pinned_model, corpq.pinned_model, text, text, text) IS
    'dual_xent with pinned model versions name@N and on_too_long (''null'' or ''error'')';

-- Runs a caller-supplied query through SPI: not in parallel workers.
CREATE FUNCTION corpq.dual_xent_scores(forward text, backward text, corpus text)
    RETURNS TABLE (id bigint, score float8)
    AS 'MODULE_PATHNAME', 'corpq_dual_xent_scores'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
CREATE FUNCTION corpq.dual_xent_scores(forward text, backward text, corpus text, on_too_long text)
    RETURNS TABLE (id bigint, score float8)
    AS 'MODULE_PATHNAME', 'corpq_dual_xent_scores'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.dual_xent_scores(text, text, text) IS
    'dual_xent of every row of corpus, a SELECT returning (id, src, tgt), in batches (each direction''s pairs in length order, cut to corpq.max_batch_mb), with the models'' versions of the call''s start; the values equal dual_xent()''s; NULL src or tgt gives a NULL score, so does a side longer than a model accepts (a NOTICE counts them); a NULL argument is an error';
COMMENT ON FUNCTION corpq.dual_xent_scores(text, text, text, text) IS
    'dual_xent_scores; a side longer than a model accepts scores NULL, counted in a NOTICE (on_too_long ''null''), or stops with an ERROR (''error'')';

-- Runs a caller-supplied query through SPI: not in parallel workers.
CREATE FUNCTION corpq.score(model text, corpus text, what text DEFAULT 'sent_prob',
                            batch_size int DEFAULT 64, measure text DEFAULT 'enteos',
                            passes int DEFAULT 30, seed bigint DEFAULT 0)
    RETURNS TABLE (id bigint, score float8)
    AS 'MODULE_PATHNAME', 'corpq_score'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
CREATE FUNCTION corpq.score(model text, corpus text, what text, batch_size int, measure text,
                            passes int, seed bigint, on_too_long text)
    RETURNS TABLE (id bigint, score float8)
    AS 'MODULE_PATHNAME', 'corpq_score'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.score(text, text, text, int, text, int, bigint) IS
    'score every row of corpus, a SELECT returning (id, src, tgt), in batches of batch_size pairs: what = sent_prob, sent_logprob or uncertainty (with measure, passes, seed); the values equal the per-row functions''; NULL src or tgt gives a NULL score, so does a side longer than the model accepts (a NOTICE counts them); a NULL argument is an error';
COMMENT ON FUNCTION corpq.score(text, text, text, int, text, int, bigint, text) IS
    'score with every argument given; a side longer than the model accepts scores NULL, counted in a NOTICE (on_too_long ''null''), or stops with an ERROR (''error'')';

CREATE FUNCTION corpq.score_job(model text, corpus text, target_table regclass,
                                options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_score_job'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.score_job(text, text, regclass, jsonb) IS
    'score every row of corpus, a SELECT returning (id, src, tgt) in a stable order, as a background job that inserts (id, score) into target_table (id bigint and one double precision column per score: score, or the names of option columns) in committed chunks of chunk_rows rows; returns the job id at once; options: what (sent_prob, sent_logprob, uncertainty with measure, passes, seed, dual_xent with backward, pair_quality with classifier (a pair-quality classifier, pinned at submission; model NULL when only pair_quality is scored); several separated by commas), columns, batch_size, chunk_rows, threads, skip_existing (only ids not yet in the target), on_too_long (null or error); the values equal the per-row functions''';
