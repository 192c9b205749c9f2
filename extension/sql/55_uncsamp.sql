
-- ---------------------------------------------------------------------------
-- UncSamp (thesis ch. 6): sampling monolingual sentences by their
-- uncertainty U (corpq.mono_uncertainty) with the excessively uncertain ones
-- penalised: weight = U'^beta, U' = U if U <= U_max else max(2 U_max - U, 0)
-- (Eqs. 6.6-6.7).  corpq.uncsamp gives Efraimidis-Spirakis keys r^(1/weight):
--   SELECT ... ORDER BY corpq.uncsamp(u, u_max, 2, id, 42) DESC LIMIT budget
-- draws a weighted sample without replacement.  Weight 0 (or U NULL) gives
-- key -1: such rows come after every row of positive weight.
-- ---------------------------------------------------------------------------
CREATE FUNCTION corpq.uncsamp_weight(u float8, u_max float8, beta float8 DEFAULT 2)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_uncsamp_weight'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.uncsamp_weight(float8, float8, float8) IS
    'UncSamp sampling weight U''^beta, U'' = U if U <= u_max else max(2 u_max - U, 0) (thesis Eqs. 6.6-6.7); beta = 0 weighs every row 1 (0^0 = 1); errors on NaN, U < 0, u_max <= 0, beta < 0';

-- Reproducible keys: r is a splitmix64-style hash of (id, seed).
CREATE FUNCTION corpq.uncsamp(u float8, u_max float8, beta float8, id bigint, seed bigint DEFAULT 0)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_uncsamp_seeded'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION corpq.uncsamp(float8, float8, float8, bigint, bigint) IS
    'Efraimidis-Spirakis key r^(1/w) for weighted sampling without replacement (ORDER BY key DESC LIMIT k), w = uncsamp_weight(u, u_max, beta), r uniform in (0,1) hashed from (id, seed): the same id and seed always give the same key; -1 when w = 0 or u is NULL';

-- Keys from the session's random generator (setseed() does not affect it): a
-- different sample on every call, hence VOLATILE.
CREATE FUNCTION corpq.uncsamp(u float8, u_max float8, beta float8 DEFAULT 2)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_uncsamp_random'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.uncsamp(float8, float8, float8) IS
    'Efraimidis-Spirakis key r^(1/w) with r from the session''s random generator (a new sample each time; pass an id and seed for a reproducible one); -1 when w = 0 or u is NULL';
