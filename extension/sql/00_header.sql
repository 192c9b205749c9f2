-- corpq install script (the version is corpq.control's default_version), assembled from extension/sql/*.sql in name order.
\echo Use "CREATE EXTENSION corpq" to load this file. \quit

-- The schema corpq is created by CREATE EXTENSION (corpq.control).
GRANT USAGE ON SCHEMA corpq TO PUBLIC;

CREATE FUNCTION corpq.blas_info(OUT library text, OUT config text, OUT core text,
                                OUT reason text, OUT threads integer,
                                OUT inference_kernel text)
    RETURNS record
    AS 'MODULE_PATHNAME', 'corpq_blas_info'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.blas_info() IS
    'the OpenBLAS this process loaded for corpq (loads it if needed): library file, build, core and why it was chosen, threads; and the inference kernel''s variant';
