
-- Which corpq this is (extension/pg/base/version.c): the version of the
-- catalog (what CREATE or ALTER EXTENSION installed), of the library and its
-- build, and the CPU paths this process picks.  They differ after a new
-- package until ALTER EXTENSION corpq UPDATE (docs/install.md).
CREATE FUNCTION corpq.version(OUT extension text, OUT library text, OUT build text,
                              OUT inference_kernel text, OUT int8_kernel text,
                              OUT blas_core text)
    RETURNS record
    AS 'MODULE_PATHNAME', 'corpq_version'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.version() IS
    'the version of corpq''s catalog in this database, the version and build (git describe, or the release) of the loaded library, and the CPU paths this process picks: the float and int8 inference kernels and the OpenBLAS core (loaded if needed)';
