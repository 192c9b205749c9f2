
-- Token-level translation accuracy under teacher forcing (CAV paper, Sec. 3.2):
-- a target position is a hit when the model's most probable next token, given
-- the source and the gold prefix, is the gold token.  Accuracy per token is
-- avg(hit::int) GROUP BY token.  With on_too_long as token_scores
-- (75_scoring.sql).
CREATE FUNCTION corpq.token_hits(model text, src text, tgt text)
    RETURNS TABLE (pos int, token text, hit boolean)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE ROWS 30
    BEGIN ATOMIC
        SELECT s.pos, s.token, s.pred_token OPERATOR(pg_catalog.=) s.token
        FROM corpq.token_scores(model, src, tgt) s;
    END;
CREATE FUNCTION corpq.token_hits(model text, src text, tgt text, on_too_long text)
    RETURNS TABLE (pos int, token text, hit boolean)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE ROWS 30
    BEGIN ATOMIC
        SELECT s.pos, s.token, s.pred_token OPERATOR(pg_catalog.=) s.token
        FROM corpq.token_scores(model, src, tgt, on_too_long) s;
    END;
CREATE FUNCTION corpq.token_hits(model corpq.pinned_model, src text, tgt text)
    RETURNS TABLE (pos int, token text, hit boolean)
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE ROWS 30
    BEGIN ATOMIC
        SELECT s.pos, s.token, s.pred_token OPERATOR(pg_catalog.=) s.token
        FROM corpq.token_scores(model, src, tgt) s;
    END;
CREATE FUNCTION corpq.token_hits(model corpq.pinned_model, src text, tgt text, on_too_long text)
    RETURNS TABLE (pos int, token text, hit boolean)
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE ROWS 30
    BEGIN ATOMIC
        SELECT s.pos, s.token, s.pred_token OPERATOR(pg_catalog.=) s.token
        FROM corpq.token_scores(model, src, tgt, on_too_long) s;
    END;
COMMENT ON FUNCTION corpq.token_hits(text, text, text) IS
    'per target position (1-based; the last is </s>): the gold subword and whether the model''s argmax under teacher forcing equals it, dropout off; no rows for a side longer than the model accepts';
COMMENT ON FUNCTION corpq.token_hits(text, text, text, text) IS
    'token_hits; a side longer than the model accepts gives no rows (on_too_long ''null'') or an ERROR (''error'')';
COMMENT ON FUNCTION corpq.token_hits(corpq.pinned_model, text, text) IS
    'token_hits with a pinned model version name@N';
COMMENT ON FUNCTION corpq.token_hits(corpq.pinned_model, text, text, text) IS
    'token_hits with a pinned model version name@N and on_too_long (''null'' or ''error'')';
