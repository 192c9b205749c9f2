
-- ---------------------------------------------------------------------------
-- Scale-out over several servers (README, Scaling out).  Shards of a corpus can
-- live on other servers (postgres_fdw foreign partitions, or Citus); scoring
-- there is only correct if every node holds the same models.  Each node
-- describes its catalog by fingerprints; a coordinator reads the nodes'
-- fingerprints through foreign tables on corpq.catalog_fingerprints and
-- corpq.catalog_check() fails naming the node and the first object that
-- differs.  Fingerprints cover what determines results, not bookkeeping
-- (owners, dates, counters, vocabulary counts).
-- ---------------------------------------------------------------------------
CREATE FUNCTION corpq.catalog_fingerprint()
    RETURNS TABLE (kind text, name text, version int, fingerprint text)
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT 'extension', e.extname::text, NULL::int, e.extversion
  FROM pg_extension e WHERE e.extname = 'corpq'
UNION ALL
SELECT 'bpe', b.name, NULL,
       md5(b.version || E'\n' || coalesce((SELECT string_agg(m.left_symbol || ' ' || m.right_symbol,
                                                             E'\n' ORDER BY m.rank)
                                             FROM corpq.bpe_merges m WHERE m.model = b.name), ''))
  FROM corpq.bpe_models b
UNION ALL
SELECT 'vocabulary', v.name, NULL,
       md5(coalesce(v.bpe, '') || E'\n' || v.size || E'\n' ||
           coalesce((SELECT string_agg(t.id || ' ' || t.token, E'\n' ORDER BY t.id)
                       FROM corpq.vocabulary_tokens t WHERE t.vocabulary = v.name), ''))
  FROM corpq.vocabularies v
UNION ALL
-- the stored checksum is the image's CRC-32 trailer, verified on import
SELECT 'model', c.name, w.version,
       md5(c.config::text || E'\n' || c.src_vocab || E'\n' || c.tgt_vocab || E'\n' ||
           w.bytes || E'\n' || w.checksum)
  FROM corpq.model_catalog c JOIN corpq.model_versions w ON w.model = c.id
UNION ALL
SELECT 'lexicon', l.name, NULL,
       md5(l.options::text || E'\n' || md5(m.model) || E'\n' ||
           md5(m.src_tokens::text || E'\n' || m.tgt_tokens::text || E'\n' ||
               m.src_counts::text || E'\n' || m.src_links::text || E'\n' || m.src_entropy::text))
  FROM corpq.lexicons l JOIN corpq.lexicon_models m ON m.lexicon = l.name
UNION ALL
-- the stored checksums are the weight files' CRC-32 trailers
SELECT 'antap', a.name, v.version,
       md5(v.config::text || E'\n' || v.checksum_i || E'\n' || v.checksum_ii)
  FROM corpq.antap_models a JOIN corpq.antap_versions v ON v.model = a.id
$$;
COMMENT ON FUNCTION corpq.catalog_fingerprint() IS
    'one row per catalog object that scoring depends on: the extension version, BPE models (merges), vocabularies (segmentation, tokens by id), model versions (configuration, vocabularies, size, CRC-32 of the weights), lexicons (options, serialised models), ANTAP versions (architecture, CRC-32 of both states); equal fingerprints on two servers mean equal results';

-- A foreign table on this view is how a coordinator reads a node's catalog:
--   CREATE FOREIGN TABLE fp_n1 (kind text, name text, version int, fingerprint text)
--       SERVER n1 OPTIONS (schema_name 'corpq', table_name 'catalog_fingerprints');
CREATE VIEW corpq.catalog_fingerprints AS
    SELECT f.kind, f.name, f.version, f.fingerprint FROM corpq.catalog_fingerprint() f;
COMMENT ON VIEW corpq.catalog_fingerprints IS
    'corpq.catalog_fingerprint() as a relation, for foreign tables on other servers';
GRANT SELECT ON corpq.catalog_fingerprints TO PUBLIC;

-- The objects whose fingerprints differ between this server and node (a
-- relation with the columns of corpq.catalog_fingerprints, normally a foreign
-- table on a node's view).  NULL on one side: the object is missing there.
CREATE FUNCTION corpq.catalog_diff(node regclass)
    RETURNS TABLE (kind text, name text, version int, here text, there text)
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF (SELECT count(*) FROM pg_attribute a
         WHERE a.attrelid = node AND a.attnum > 0 AND NOT a.attisdropped
           AND (a.attname, a.atttypid) IN (('kind', 'text'::regtype), ('name', 'text'::regtype),
                                           ('version', 'int4'::regtype), ('fingerprint', 'text'::regtype))) <> 4 THEN
        RAISE EXCEPTION 'relation % is not shaped like corpq.catalog_fingerprints', node
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'It needs the columns kind text, name text, version int and fingerprint text.';
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT coalesce(h.kind, t.kind), coalesce(h.name, t.name), coalesce(h.version, t.version),
                h.fingerprint, t.fingerprint
           FROM corpq.catalog_fingerprint() h
           FULL JOIN (SELECT r.kind, r.name, r.version, r.fingerprint FROM %s r) t
             ON t.kind = h.kind AND t.name = h.name AND t.version IS NOT DISTINCT FROM h.version
          WHERE h.fingerprint IS DISTINCT FROM t.fingerprint
          ORDER BY 1, 2, 3', node);
END
$$;
COMMENT ON FUNCTION corpq.catalog_diff(regclass) IS
    'catalog objects whose fingerprints differ between this server (here) and node, a relation shaped like corpq.catalog_fingerprints (normally a foreign table on a node''s view); NULL: missing on that side';

CREATE FUNCTION corpq.catalog_check(VARIADIC nodes regclass[])
    RETURNS int
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    node   regclass;
    label  text;
    d      record;
    n      int;
    lines  text;
    state  text;
    msg    text;
BEGIN
    FOREACH node IN ARRAY nodes LOOP
        -- a foreign table is named by its server, anything else by itself
        SELECT format('node "%s" (%s)', s.srvname, node) INTO label
          FROM pg_foreign_table ft JOIN pg_foreign_server s ON s.oid = ft.ftserver
         WHERE ft.ftrelid = node;
        label := coalesce(label, format('node %s', node));
        BEGIN
            n := 0;
            lines := '';
            FOR d IN SELECT * FROM corpq.catalog_diff(node) LOOP
                n := n + 1;
                IF n = 1 THEN
                    msg := format('%s "%s"%s', d.kind, d.name, coalesce(' version ' || d.version, ''));
                END IF;
                IF n <= 10 THEN
                    lines := lines || format(E'\n%s "%s"%s: %s', d.kind, d.name,
                        coalesce(' version ' || d.version, ''),
                        CASE WHEN d.here IS NULL THEN 'only on the node'
                             WHEN d.there IS NULL THEN 'missing on the node'
                             ELSE 'different content' END);
                END IF;
            END LOOP;
        EXCEPTION
            WHEN undefined_table OR undefined_function OR invalid_schema_name THEN
                GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
                RAISE EXCEPTION 'corpq is not installed on %', label
                    USING ERRCODE = 'undefined_object', DETAIL = msg,
                          HINT = 'Run CREATE EXTENSION corpq on every node, then copy the catalog (README, Scaling out).';
            WHEN sqlclient_unable_to_establish_sqlconnection OR connection_exception THEN
                GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
                RAISE EXCEPTION 'could not read the corpq catalog of %', label
                    USING ERRCODE = state, DETAIL = msg;
        END;
        IF n > 0 THEN
            RAISE EXCEPTION '% has a different corpq catalog: % differs', label, msg
                USING ERRCODE = 'data_exception',
                      DETAIL = format('%s object(s) differ:%s', n, lines),
                      HINT = 'Copy the models with corpq.model_export/model_import, BPE models with bpe_export/bpe_import and vocabulary rows as they are (README, Scaling out).';
        END IF;
    END LOOP;
    RETURN coalesce(array_length(nodes, 1), 0);
END
$$;
COMMENT ON FUNCTION corpq.catalog_check(regclass[]) IS
    'compare this server''s corpq.catalog_fingerprint() with every node (relations shaped like corpq.catalog_fingerprints, normally foreign tables); ERROR naming the node and the first differing object, or the node without corpq; returns the number of nodes checked';
