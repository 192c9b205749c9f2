
-- Temperature-scaled corpus shares (MultiUAT Eq. 4; fairseq's sampling).
CREATE FUNCTION corpq.temperature_weights(size bigint, tau float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_temperature_weights'
    LANGUAGE C WINDOW IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION corpq.temperature_weights(bigint, float8) IS
    'window function: share of each corpus under temperature tau, q(n)^(1/tau) normalised over the window partition; tau = 1 proportional, tau = infinity uniform over non-empty corpora; NULL sizes get NULL and are left out';
