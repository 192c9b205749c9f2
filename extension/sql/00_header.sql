-- corpq 0.1.0 install script, assembled from extension/sql/*.sql in name order.
\echo Use "CREATE EXTENSION corpq" to load this file. \quit

-- The schema corpq is created by CREATE EXTENSION (corpq.control).
GRANT USAGE ON SCHEMA corpq TO PUBLIC;

CREATE FUNCTION corpq.blas_info() RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_blas_info'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.blas_info() IS
    'the BLAS library this backend loaded for corpq, its build and thread count (loads it if needed)';
