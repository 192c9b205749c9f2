-- corpq install script (the version is corpq.control's default_version), assembled from extension/sql/*.sql in name order.
\echo Use "CREATE EXTENSION corpq" to load this file. \quit

-- The schema corpq is created by CREATE EXTENSION (corpq.control) unless it
-- exists.  An existing one is used only when the installing role owns it, no
-- other role may create in it and it is empty: a schema or an object another
-- role made first could otherwise capture what this script and corpq's
-- functions run as the extension's owner (CVE-2022-2625's class;
-- docs/security.md).  Everything below runs with search_path pg_catalog,
-- pg_temp, and names corpq's own objects as corpq.<name>.
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
DO $corpq_schema_check$
DECLARE
    nsp pg_catalog.oid := (SELECT e.extnamespace FROM pg_catalog.pg_extension e
                           WHERE e.extname OPERATOR(pg_catalog.=) 'corpq');
    nsp_owner pg_catalog.oid := (SELECT n.nspowner FROM pg_catalog.pg_namespace n
                                 WHERE n.oid OPERATOR(pg_catalog.=) nsp);
    objects pg_catalog.int8;
BEGIN
    IF nsp_owner OPERATOR(pg_catalog.<>) (SELECT r.oid FROM pg_catalog.pg_roles r
                                          WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER) THEN
        RAISE EXCEPTION 'schema corpq already exists and is owned by role %, not by the installing role %',
                        nsp_owner::pg_catalog.regrole, CURRENT_USER
              USING ERRCODE = 'insufficient_privilege',
                    HINT = 'Another role created schema corpq before the extension: inspect it, then drop it (or ALTER SCHEMA corpq OWNER TO ' || pg_catalog.quote_ident(CURRENT_USER::pg_catalog.text) || ' when it is empty) and run CREATE EXTENSION corpq again (docs/security.md).';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_namespace n, pg_catalog.aclexplode(n.nspacl) a
               WHERE n.oid OPERATOR(pg_catalog.=) nsp AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
                 AND a.grantee OPERATOR(pg_catalog.<>) n.nspowner) THEN
        RAISE EXCEPTION 'schema corpq grants CREATE to a role other than its owner'
              USING ERRCODE = 'insufficient_privilege',
                    HINT = 'REVOKE CREATE ON SCHEMA corpq FROM those roles, drop what they created in it, and run CREATE EXTENSION corpq again (docs/security.md).';
    END IF;
    objects := (SELECT pg_catalog.count(*) FROM pg_catalog.pg_class WHERE relnamespace OPERATOR(pg_catalog.=) nsp)
             + (SELECT pg_catalog.count(*) FROM pg_catalog.pg_proc WHERE pronamespace OPERATOR(pg_catalog.=) nsp)
             + (SELECT pg_catalog.count(*) FROM pg_catalog.pg_type WHERE typnamespace OPERATOR(pg_catalog.=) nsp)
             + (SELECT pg_catalog.count(*) FROM pg_catalog.pg_operator WHERE oprnamespace OPERATOR(pg_catalog.=) nsp)
             + (SELECT pg_catalog.count(*) FROM pg_catalog.pg_collation WHERE collnamespace OPERATOR(pg_catalog.=) nsp)
             + (SELECT pg_catalog.count(*) FROM pg_catalog.pg_conversion WHERE connamespace OPERATOR(pg_catalog.=) nsp)
             + (SELECT pg_catalog.count(*) FROM pg_catalog.pg_opfamily WHERE opfnamespace OPERATOR(pg_catalog.=) nsp)
             + (SELECT pg_catalog.count(*) FROM pg_catalog.pg_ts_config WHERE cfgnamespace OPERATOR(pg_catalog.=) nsp)
             + (SELECT pg_catalog.count(*) FROM pg_catalog.pg_ts_dict WHERE dictnamespace OPERATOR(pg_catalog.=) nsp)
             + (SELECT pg_catalog.count(*) FROM pg_catalog.pg_statistic_ext WHERE stxnamespace OPERATOR(pg_catalog.=) nsp);
    IF objects OPERATOR(pg_catalog.>) 0 THEN
        RAISE EXCEPTION 'schema corpq already holds % objects', objects
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'corpq installs only into an empty schema: inspect and drop what is in schema corpq, then run CREATE EXTENSION corpq again (docs/security.md).';
    END IF;
END
$corpq_schema_check$;
GRANT USAGE ON SCHEMA corpq TO PUBLIC;

CREATE FUNCTION corpq.blas_info(OUT library text, OUT config text, OUT core text,
                                OUT reason text, OUT threads integer,
                                OUT inference_kernel text)
    RETURNS record
    AS 'MODULE_PATHNAME', 'corpq_blas_info'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.blas_info() IS
    'the OpenBLAS this process loaded for corpq (loads it if needed): library file, build, core and why it was chosen, threads; and the inference kernel''s variant';
