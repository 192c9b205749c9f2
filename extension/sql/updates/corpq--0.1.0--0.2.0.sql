-- corpq 0.1.0 -> 0.2.0 (ALTER EXTENSION corpq UPDATE).  Every change to the
-- catalog made by extension/sql/*.sql since 0.1.0 is appended here, in the
-- commit that makes it; `make update-check` (part of `make test`) fails,
-- naming the objects, when the result differs from a fresh install of 0.2.0
-- (docs/architecture.md, "A change to the catalog").
\echo Use "ALTER EXTENSION corpq UPDATE" to load this file. \quit

-- corpq.version() (extension/sql/05_version.sql)
CREATE FUNCTION corpq.version(OUT extension text, OUT library text, OUT build text,
                              OUT inference_kernel text, OUT int8_kernel text,
                              OUT blas_core text)
    RETURNS record
    AS 'MODULE_PATHNAME', 'corpq_version'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.version() IS
    'the version of corpq''s catalog in this database, the version and build (git describe, or the release) of the loaded library, and the CPU paths this process picks: the float and int8 inference kernels and the OpenBLAS core (loaded if needed)';
