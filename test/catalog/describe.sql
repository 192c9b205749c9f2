-- Every object of the extension corpq in this database, one line per fact:
--
--     <object>  TAB  <attribute>  TAB  <value>
--
-- in a stable order, so that two databases' outputs differ exactly where
-- their catalogs do (test/update-check.sh compares a fresh install with an
-- updated one; test/integration/upgrade.sh does too after a real upgrade).
-- A value of several lines gives one line each.  What is described: the
-- extension (version, configuration tables and their filters), the schema,
-- every member object (functions with their whole definition, aggregates,
-- tables with their columns in order, defaults, constraints, indexes,
-- triggers, policies and row-level security, views, sequences, types, casts,
-- operators), their owners, privileges (normalised: a NULL ACL is the
-- default one) and initial privileges (pg_init_privs), comments, and any
-- object in the schema corpq that is not a member.  A member of a kind this
-- file does not know is a line with UNDESCRIBED, which the callers refuse.
\set ON_ERROR_STOP 1
SET search_path = pg_catalog, pg_temp;   -- every name comes out schema-qualified
SET client_min_messages = warning;

-- A privilege list as text: grantee:privilege(* = grantable)/grantor, sorted;
-- NULL means the object's default privileges.
CREATE FUNCTION pg_temp.acl(acl aclitem[], kind "char", owner oid) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(string_agg(x, ' ' ORDER BY x), 'none')
      FROM (SELECT format('%s:%s%s/%s',
                          CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee)::text END,
                          a.privilege_type, CASE WHEN a.is_grantable THEN '*' ELSE '' END,
                          pg_get_userbyid(a.grantor)::text) AS x
              FROM aclexplode(coalesce(acl, acldefault(kind, owner))) a) s
$$;

-- The same for a column's own privileges (NULL: none beyond the table's).
CREATE FUNCTION pg_temp.colacl(acl aclitem[]) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN acl IS NULL THEN 'none' ELSE pg_temp.acl(acl, 'c', 0) END
$$;

CREATE TEMP TABLE members AS
SELECT d.classid, d.objid,
       (SELECT o.type || ' ' || o.identity FROM pg_identify_object(d.classid, d.objid, 0) o) AS obj
  FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'corpq')
   AND d.deptype = 'e';

CREATE TEMP TABLE facts (obj text, attr text, val text);

-- the extension itself
INSERT INTO facts
SELECT 'extension corpq', 'version', extversion FROM pg_extension WHERE extname = 'corpq'
UNION ALL
SELECT 'extension corpq', 'relocatable', extrelocatable::text FROM pg_extension WHERE extname = 'corpq'
UNION ALL
SELECT 'extension corpq', 'schema', extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'corpq'
UNION ALL
SELECT 'extension corpq', 'configuration table ' || c.cfg::regclass::text,
       'dumped rows: ' || coalesce(nullif(c.cond, ''), 'all')
  FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS c(cfg, cond)
 WHERE e.extname = 'corpq';

-- the schema (created by CREATE EXTENSION, not a member)
INSERT INTO facts
SELECT 'schema ' || nspname, 'owner', pg_get_userbyid(nspowner)::text FROM pg_namespace WHERE nspname = 'corpq'
UNION ALL
SELECT 'schema ' || nspname, 'privileges', pg_temp.acl(nspacl, 'n', nspowner) FROM pg_namespace WHERE nspname = 'corpq'
UNION ALL
SELECT 'schema ' || nspname, 'comment', obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = 'corpq';

-- what every member has: its comment and its initial privileges
INSERT INTO facts
SELECT m.obj, 'comment', obj_description(m.objid, m.classid::regclass::name)
  FROM members m
UNION ALL
SELECT m.obj, 'initial privileges' || CASE WHEN i.objsubid > 0 THEN ' of column ' ||
           (SELECT attname FROM pg_attribute WHERE attrelid = i.objoid AND attnum = i.objsubid) ELSE '' END,
       i.privtype::text || ' ' || pg_temp.acl(i.initprivs, 'c', 0)
  FROM members m JOIN pg_init_privs i ON i.classoid = m.classid AND i.objoid = m.objid;

-- functions, procedures, aggregates, window functions
INSERT INTO facts
SELECT m.obj, 'owner', pg_get_userbyid(p.proowner)::text FROM members m JOIN pg_proc p ON p.oid = m.objid
 WHERE m.classid = 'pg_proc'::regclass
UNION ALL
SELECT m.obj, 'privileges', pg_temp.acl(p.proacl, 'f', p.proowner) FROM members m JOIN pg_proc p ON p.oid = m.objid
 WHERE m.classid = 'pg_proc'::regclass
UNION ALL
SELECT m.obj, 'definition', pg_get_functiondef(p.oid) FROM members m JOIN pg_proc p ON p.oid = m.objid
 WHERE m.classid = 'pg_proc'::regclass AND p.prokind <> 'a'
UNION ALL
SELECT m.obj, 'aggregate',
       format('(%s) RETURNS %s PARALLEL %s', pg_get_function_arguments(p.oid), pg_get_function_result(p.oid), p.proparallel)
       || E'\n' || format('kind %s, direct arguments %s, sort operator %s', a.aggkind, a.aggnumdirectargs, a.aggsortop::regoperator)
       || E'\n' || format('state %s %s (space %s), initial %s', a.aggtranstype::regtype, a.aggtransfn::regprocedure,
                          a.aggtransspace, coalesce(a.agginitval, 'NULL'))
       || E'\n' || format('final %s (extra %s, modify %s), combine %s, serial %s, deserial %s',
                          a.aggfinalfn::regprocedure, a.aggfinalextra, a.aggfinalmodify, a.aggcombinefn::regprocedure,
                          a.aggserialfn::regprocedure, a.aggdeserialfn::regprocedure)
       || E'\n' || format('moving: state %s %s, inverse %s (space %s), initial %s, final %s (extra %s, modify %s)',
                          a.aggmtranstype::regtype, a.aggmtransfn::regprocedure, a.aggminvtransfn::regprocedure,
                          a.aggmtransspace, coalesce(a.aggminitval, 'NULL'), a.aggmfinalfn::regprocedure,
                          a.aggmfinalextra, a.aggmfinalmodify)
  FROM members m JOIN pg_proc p ON p.oid = m.objid JOIN pg_aggregate a ON a.aggfnoid = p.oid
 WHERE m.classid = 'pg_proc'::regclass;

-- relations: tables, views, sequences (their owner, privileges, options)
INSERT INTO facts
SELECT m.obj, 'relation',
       format('kind %s, persistence %s, row level security %s%s, replica identity %s, options %s',
              c.relkind, c.relpersistence, c.relrowsecurity,
              CASE WHEN c.relforcerowsecurity THEN ' (forced)' ELSE '' END, c.relreplident,
              coalesce(array_to_string(c.reloptions, ','), 'none'))
  FROM members m JOIN pg_class c ON c.oid = m.objid WHERE m.classid = 'pg_class'::regclass
UNION ALL
SELECT m.obj, 'owner', pg_get_userbyid(c.relowner)::text
  FROM members m JOIN pg_class c ON c.oid = m.objid WHERE m.classid = 'pg_class'::regclass
UNION ALL
SELECT m.obj, 'privileges', pg_temp.acl(c.relacl, (CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END)::"char", c.relowner)
  FROM members m JOIN pg_class c ON c.oid = m.objid WHERE m.classid = 'pg_class'::regclass
UNION ALL
SELECT m.obj, 'view definition', pg_get_viewdef(c.oid, true)
  FROM members m JOIN pg_class c ON c.oid = m.objid
 WHERE m.classid = 'pg_class'::regclass AND c.relkind IN ('v', 'm')
UNION ALL
SELECT m.obj, 'inherits from', i.inhparent::regclass::text
  FROM members m JOIN pg_inherits i ON i.inhrelid = m.objid WHERE m.classid = 'pg_class'::regclass
UNION ALL
SELECT m.obj, 'sequence',
       format('%s start %s increment %s min %s max %s cache %s cycle %s', s.seqtypid::regtype, s.seqstart,
              s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle)
  FROM members m JOIN pg_sequence s ON s.seqrelid = m.objid WHERE m.classid = 'pg_class'::regclass
UNION ALL
SELECT m.obj, 'owned by', d.refobjid::regclass::text || '.' || quote_ident(a.attname)
  FROM members m JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = m.objid
       AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i') AND d.refobjsubid > 0
  JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
 WHERE m.classid = 'pg_class'::regclass;

-- columns, in order (a column added by ALTER TABLE comes last: the install
-- script must declare it last too, or positional INSERTs and SELECT * differ)
INSERT INTO facts
SELECT m.obj, format('column %s %s', lpad(row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum)::text, 2, '0'),
                     quote_ident(a.attname)),
       format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
       || coalesce(' DEFAULT ' || pg_get_expr(ad.adbin, ad.adrelid), '')
       || CASE a.attidentity WHEN '' THEN '' ELSE ' IDENTITY ' || a.attidentity::text END
       || CASE a.attgenerated WHEN '' THEN '' ELSE ' GENERATED ' || a.attgenerated::text END
       || CASE WHEN a.attcollation <> t.typcollation THEN ' COLLATE ' || a.attcollation::regcollation::text ELSE '' END
       || CASE WHEN a.attstorage <> t.typstorage THEN ' STORAGE ' || a.attstorage::text ELSE '' END
       || CASE a.attcompression WHEN '' THEN '' ELSE ' COMPRESSION ' || a.attcompression::text END
       || CASE WHEN a.attstattarget >= 0 THEN ' STATISTICS ' || a.attstattarget ELSE '' END
       || ', privileges ' || pg_temp.colacl(a.attacl)
       || coalesce(', comment ' || col_description(a.attrelid, a.attnum), '')
  FROM members m JOIN pg_attribute a ON a.attrelid = m.objid AND a.attnum > 0 AND NOT a.attisdropped
  JOIN pg_type t ON t.oid = a.atttypid
  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
 WHERE m.classid = 'pg_class'::regclass
   AND (SELECT relkind FROM pg_class WHERE oid = m.objid) <> 'S';   -- a sequence's are fixed

-- what hangs off a table: constraints, indexes, triggers, policies, rules
INSERT INTO facts
SELECT m.obj, 'constraint ' || quote_ident(k.conname),
       pg_get_constraintdef(k.oid) || coalesce(', comment ' || obj_description(k.oid, 'pg_constraint'), '')
  FROM members m JOIN pg_constraint k ON k.conrelid = m.objid WHERE m.classid = 'pg_class'::regclass
UNION ALL
SELECT m.obj, 'index ' || quote_ident(ic.relname),
       pg_get_indexdef(i.indexrelid)
       || CASE WHEN i.indisclustered THEN ' (clustered)' ELSE '' END
       || CASE WHEN i.indisreplident THEN ' (replica identity)' ELSE '' END
       || coalesce(', comment ' || obj_description(i.indexrelid, 'pg_class'), '')
  FROM members m JOIN pg_index i ON i.indrelid = m.objid JOIN pg_class ic ON ic.oid = i.indexrelid
 WHERE m.classid = 'pg_class'::regclass
UNION ALL
SELECT m.obj, 'trigger ' || quote_ident(tg.tgname),
       pg_get_triggerdef(tg.oid) || ' (enabled ' || tg.tgenabled::text || ')'
       || coalesce(', comment ' || obj_description(tg.oid, 'pg_trigger'), '')
  FROM members m JOIN pg_trigger tg ON tg.tgrelid = m.objid AND NOT tg.tgisinternal
 WHERE m.classid = 'pg_class'::regclass
UNION ALL
SELECT m.obj, 'policy ' || quote_ident(p.polname),
       format('%s FOR %s TO %s USING (%s) WITH CHECK (%s)',
              CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END, p.polcmd,
              (SELECT string_agg(CASE WHEN r = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(r)::text END, ',' ORDER BY 1)
                 FROM unnest(p.polroles) r),
              pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
       || coalesce(', comment ' || obj_description(p.oid, 'pg_policy'), '')
  FROM members m JOIN pg_policy p ON p.polrelid = m.objid WHERE m.classid = 'pg_class'::regclass
UNION ALL
SELECT m.obj, 'rule ' || quote_ident(r.rulename), pg_get_ruledef(r.oid, true)
  FROM members m JOIN pg_rewrite r ON r.ev_class = m.objid AND r.rulename <> '_RETURN'
 WHERE m.classid = 'pg_class'::regclass;

-- types: base types with their functions, composite types with their fields
INSERT INTO facts
SELECT m.obj, 'owner', pg_get_userbyid(t.typowner)::text
  FROM members m JOIN pg_type t ON t.oid = m.objid WHERE m.classid = 'pg_type'::regclass
UNION ALL
SELECT m.obj, 'privileges', pg_temp.acl(t.typacl, 'T', t.typowner)
  FROM members m JOIN pg_type t ON t.oid = m.objid WHERE m.classid = 'pg_type'::regclass
UNION ALL
SELECT m.obj, 'type',
       format('kind %s, length %s, by value %s, align %s, storage %s, category %s, preferred %s, delimiter %s, element %s, collation %s, default %s, not null %s',
              t.typtype, t.typlen, t.typbyval, t.typalign, t.typstorage, t.typcategory, t.typispreferred,
              t.typdelim, t.typelem::regtype, t.typcollation, coalesce(t.typdefault, 'NULL'), t.typnotnull)
       || E'\n' || format('in %s, out %s, receive %s, send %s, typmod in %s, typmod out %s, analyze %s, subscript %s',
                          t.typinput::regprocedure, t.typoutput::regprocedure, t.typreceive::regprocedure,
                          t.typsend::regprocedure, t.typmodin::regprocedure, t.typmodout::regprocedure,
                          t.typanalyze::regprocedure, t.typsubscript::regprocedure)
       || CASE t.typtype WHEN 'd' THEN E'\n' || 'domain over ' || format_type(t.typbasetype, t.typtypmod) ELSE '' END
  FROM members m JOIN pg_type t ON t.oid = m.objid WHERE m.classid = 'pg_type'::regclass
UNION ALL
SELECT m.obj, format('field %s %s', lpad(a.attnum::text, 2, '0'), quote_ident(a.attname)),
       format_type(a.atttypid, a.atttypmod) || coalesce(', comment ' || col_description(a.attrelid, a.attnum), '')
  FROM members m JOIN pg_type t ON t.oid = m.objid
  JOIN pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE m.classid = 'pg_type'::regclass
UNION ALL
SELECT m.obj, 'enum label ' || lpad(row_number() OVER (PARTITION BY e.enumtypid ORDER BY e.enumsortorder)::text, 3, '0'),
       e.enumlabel
  FROM members m JOIN pg_enum e ON e.enumtypid = m.objid WHERE m.classid = 'pg_type'::regclass
UNION ALL
SELECT m.obj, 'domain constraint ' || quote_ident(k.conname), pg_get_constraintdef(k.oid)
  FROM members m JOIN pg_constraint k ON k.contypid = m.objid WHERE m.classid = 'pg_type'::regclass;

-- casts and operators
INSERT INTO facts
SELECT m.obj, 'cast', format('function %s, context %s, method %s', c.castfunc::regprocedure, c.castcontext, c.castmethod)
  FROM members m JOIN pg_cast c ON c.oid = m.objid WHERE m.classid = 'pg_cast'::regclass
UNION ALL
SELECT m.obj, 'operator',
       format('%s(%s, %s) -> %s by %s, commutator %s, negator %s, restrict %s, join %s, merges %s, hashes %s, owner %s',
              o.oprname, o.oprleft::regtype, o.oprright::regtype, o.oprresult::regtype, o.oprcode::regprocedure,
              o.oprcom::regoperator, o.oprnegate::regoperator, o.oprrest::regprocedure, o.oprjoin::regprocedure,
              o.oprcanmerge, o.oprcanhash, pg_get_userbyid(o.oprowner)::text)
  FROM members m JOIN pg_operator o ON o.oid = m.objid WHERE m.classid = 'pg_operator'::regclass;

-- a member of a kind described nowhere above: refuse to compare blind
INSERT INTO facts
SELECT m.obj, 'UNDESCRIBED', 'test/catalog/describe.sql does not describe members of ' || m.classid::regclass::text
  FROM members m
 WHERE m.classid NOT IN ('pg_proc'::regclass, 'pg_class'::regclass, 'pg_type'::regclass,
                         'pg_cast'::regclass, 'pg_operator'::regclass);

-- objects in the schema corpq that are not members (nor parts of one)
INSERT INTO facts
SELECT (SELECT o.type || ' ' || o.identity FROM pg_identify_object(x.classid, x.objid, 0) o),
       'not a member of the extension', 'yes'
  FROM (SELECT 'pg_class'::regclass AS classid, c.oid AS objid FROM pg_class c
         WHERE c.relnamespace = 'corpq'::regnamespace
        UNION ALL
        SELECT 'pg_proc'::regclass, p.oid FROM pg_proc p WHERE p.pronamespace = 'corpq'::regnamespace
        UNION ALL
        SELECT 'pg_type'::regclass, t.oid FROM pg_type t WHERE t.typnamespace = 'corpq'::regnamespace) x
 WHERE NOT EXISTS (SELECT FROM members m WHERE m.classid = x.classid AND m.objid = x.objid)
   AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = x.classid AND d.objid = x.objid
                      AND d.deptype IN ('a', 'i'));

\pset format unaligned
\pset tuples_only on
\pset null '<null>'
SELECT f.obj || E'\t' || f.attr || E'\t' || l.line
  FROM facts f, regexp_split_to_table(coalesce(f.val, '<null>'), E'\n') WITH ORDINALITY AS l(line, n)
 ORDER BY f.obj COLLATE "C", f.attr COLLATE "C", f.val COLLATE "C", l.n;
