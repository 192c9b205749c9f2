
-- ---------------------------------------------------------------------------
-- Owners of corpq objects cannot be dropped by accident (docs/security.md).
-- corpq's catalog rows name their owner in a regrole column, which
-- PostgreSQL does not track: DROP ROLE would succeed and leave models,
-- vocabularies and running jobs owned by a dangling OID.  So the first row a
-- role comes to own in corpq.bpe_models, vocabularies, jobs, lexicons,
-- model_catalog, antap_models or pipelines grants that role REFERENCES on
-- corpq.object_owners: a privilege is a shared dependency, and DROP ROLE then
-- fails with "privileges for table corpq.object_owners".  To drop such a
-- role, drop or hand over its corpq objects, then REVOKE ALL ON
-- corpq.object_owners FROM it (DROP OWNED BY does the same).
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.object_owners ();
GRANT SELECT ON corpq.object_owners TO PUBLIC;
COMMENT ON TABLE corpq.object_owners IS
    'holds no rows: every role that owns corpq objects or jobs has a privilege on it, so DROP ROLE refuses to leave them ownerless; drop the role''s corpq objects, then REVOKE ALL ON corpq.object_owners FROM the role';

CREATE FUNCTION corpq.lock_owner() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
                    WHERE c.oid OPERATOR(pg_catalog.=) 'corpq.object_owners'::pg_catalog.regclass
                      AND a.grantee OPERATOR(pg_catalog.=) NEW.owner::pg_catalog.oid)
       AND EXISTS (SELECT FROM pg_catalog.pg_roles r
                    WHERE r.oid OPERATOR(pg_catalog.=) NEW.owner::pg_catalog.oid AND NOT r.rolsuper) THEN
        EXECUTE pg_catalog.format('GRANT REFERENCES ON corpq.object_owners TO %s', NEW.owner);
    END IF;
    RETURN NULL;
END $$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['bpe_models', 'vocabularies', 'jobs', 'lexicons', 'model_catalog',
                             'antap_models', 'pipelines'] LOOP
        EXECUTE pg_catalog.format('CREATE TRIGGER lock_owner AFTER INSERT OR UPDATE OF owner ON corpq.%I '
                                  'FOR EACH ROW EXECUTE FUNCTION corpq.lock_owner()', t);
    END LOOP;
END $$;
