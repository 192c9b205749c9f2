
-- ---------------------------------------------------------------------------
-- Scale-out over several servers (docs/scaling.md).  Shards of a corpus can
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
                                             FROM corpq.bpe_merges m WHERE m.model = b.name), '')
           || coalesce((SELECT md5(p.proto) FROM corpq.spm_models p WHERE p.model = b.name), '')
           || coalesce((SELECT md5(w.options::text || E'\n' || w.tokens::text)
                          FROM corpq.wordpiece_models w WHERE w.model = b.name), ''))
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
    'one row per catalog object that scoring depends on: the extension version, BPE models (merges), SentencePiece models (their bytes) and WordPiece models (tokens and options), vocabularies (segmentation, tokens by id), model versions (configuration, vocabularies, size, CRC-32 of the weights), lexicons (options, serialised models), ANTAP versions (architecture, CRC-32 of both states); equal fingerprints on two servers mean equal results';

-- A foreign table on this view is how a coordinator reads a node's catalog:
--   CREATE FOREIGN TABLE fp_n1 (kind text, name text, version int, fingerprint text)
--       SERVER n1 OPTIONS (schema_name 'corpq', table_name 'catalog_fingerprints');
CREATE VIEW corpq.catalog_fingerprints AS
    SELECT f.kind, f.name, f.version, f.fingerprint FROM corpq.catalog_fingerprint() f;
COMMENT ON VIEW corpq.catalog_fingerprints IS
    'corpq.catalog_fingerprint() as a relation, for foreign tables on other servers';
GRANT SELECT ON corpq.catalog_fingerprints TO PUBLIC;

-- The objects whose fingerprints differ between this server and a set of
-- fingerprints from elsewhere (a JSON array of objects with the keys kind,
-- name, version, fingerprint: a node's corpq.catalog_fingerprints as
-- json_agg).  NULL on one side: the object is missing there.
CREATE FUNCTION corpq.catalog_compare(fingerprints jsonb)
    RETURNS TABLE (kind text, name text, version int, here text, there text)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT coalesce(h.kind, t.kind), coalesce(h.name, t.name), coalesce(h.version, t.version),
       h.fingerprint, t.fingerprint
  FROM corpq.catalog_fingerprint() h
  FULL JOIN jsonb_to_recordset(fingerprints)
         AS t (kind text, name text, version int, fingerprint text)
    ON t.kind = h.kind AND t.name = h.name AND t.version IS NOT DISTINCT FROM h.version
 WHERE h.fingerprint IS DISTINCT FROM t.fingerprint
 ORDER BY 1, 2, 3
$$;
COMMENT ON FUNCTION corpq.catalog_compare(jsonb) IS
    'catalog objects whose fingerprints differ between this server (here) and fingerprints, a JSON array of {kind, name, version, fingerprint} (another node''s corpq.catalog_fingerprints as json_agg, e.g. through Citus''s run_command_on_workers); NULL: missing on that side';

-- node's fingerprints as JSON for catalog_compare: node is a relation with
-- the columns of corpq.catalog_fingerprints (normally a foreign table on a
-- node's view).
CREATE FUNCTION corpq.catalog_read(node regclass)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    fp jsonb;
BEGIN
    IF (SELECT count(*) FROM pg_attribute a
         WHERE a.attrelid = node AND a.attnum > 0 AND NOT a.attisdropped
           AND (a.attname, a.atttypid) IN (('kind', 'text'::regtype), ('name', 'text'::regtype),
                                           ('version', 'int4'::regtype), ('fingerprint', 'text'::regtype))) <> 4 THEN
        RAISE EXCEPTION 'relation % is not shaped like corpq.catalog_fingerprints', node
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'It needs the columns kind text, name text, version int and fingerprint text.';
    END IF;
    EXECUTE format('SELECT jsonb_agg(r) FROM (SELECT kind, name, version, fingerprint FROM %s) r', node)
        INTO fp;
    RETURN coalesce(fp, '[]');
END
$$;
COMMENT ON FUNCTION corpq.catalog_read(regclass) IS
    'the fingerprints in node, a relation shaped like corpq.catalog_fingerprints (normally a foreign table on a node''s view), as the JSON array corpq.catalog_compare takes';

CREATE FUNCTION corpq.catalog_diff(node regclass)
    RETURNS TABLE (kind text, name text, version int, here text, there text)
    LANGUAGE sql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT * FROM corpq.catalog_compare(corpq.catalog_read(node)) $$;
COMMENT ON FUNCTION corpq.catalog_diff(regclass) IS
    'catalog objects whose fingerprints differ between this server (here) and node, a relation shaped like corpq.catalog_fingerprints (normally a foreign table on a node''s view); NULL: missing on that side';

-- ERROR when fingerprints (as for catalog_compare) differ from this server's:
-- the message names the node by label (node "n2" (public.fp_n2), node
-- "10.0.0.2:5432") and the first object, DETAIL lists up to 10.  Both forms
-- of catalog_check end here.
CREATE FUNCTION corpq.catalog_check_node(label text, fingerprints jsonb)
    RETURNS void
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    d      record;
    n      int := 0;
    lines  text := '';
    msg    text;
BEGIN
    IF fingerprints IS NULL THEN
        RAISE EXCEPTION 'no catalog fingerprints for %', label USING ERRCODE = 'null_value_not_allowed';
    END IF;
    FOR d IN SELECT * FROM corpq.catalog_compare(fingerprints) LOOP
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
    IF n > 0 THEN
        RAISE EXCEPTION '% has a different corpq catalog: % differs', label, msg
            USING ERRCODE = 'data_exception',
                  DETAIL = format('%s object(s) differ:%s', n, lines),
                  HINT = 'Copy the models with corpq.model_export/model_import, BPE models with bpe_export/bpe_import and vocabularies with vocab_export/vocab_import (docs/scaling.md).';
    END IF;
END
$$;
COMMENT ON FUNCTION corpq.catalog_check_node(text, jsonb) IS
    'ERROR naming the node (label, e.g. node "n2") and the first differing object when fingerprints (as for catalog_compare) differ from this server''s catalog; used by both forms of catalog_check';

CREATE FUNCTION corpq.catalog_check(VARIADIC nodes regclass[])
    RETURNS int
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    node   regclass;
    label  text;
    fp     jsonb;
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
            fp := corpq.catalog_read(node);
        EXCEPTION
            WHEN undefined_table OR undefined_function OR invalid_schema_name THEN
                GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
                RAISE EXCEPTION 'corpq is not installed on %', label
                    USING ERRCODE = 'undefined_object', DETAIL = msg,
                          HINT = 'Run CREATE EXTENSION corpq on every node, then copy the catalog (docs/scaling.md).';
            WHEN sqlclient_unable_to_establish_sqlconnection OR connection_exception THEN
                GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
                RAISE EXCEPTION 'could not read the corpq catalog of %', label
                    USING ERRCODE = state, DETAIL = msg;
        END;
        PERFORM corpq.catalog_check_node(label, fp);
    END LOOP;
    RETURN coalesce(array_length(nodes, 1), 0);
END
$$;
COMMENT ON FUNCTION corpq.catalog_check(regclass[]) IS
    'compare this server''s corpq.catalog_fingerprint() with every node (relations shaped like corpq.catalog_fingerprints, normally foreign tables); ERROR naming the node and the first differing object, or the node without corpq; returns the number of nodes checked';

-- On a Citus coordinator: every active worker, whose fingerprints are read
-- through Citus's run_command_on_workers (called by name when it runs, so
-- corpq does not depend on Citus).  A worker that Citus cannot reach, or that
-- lacks corpq, reports an error text instead of a result: those become the
-- same errors as for a foreign table, naming the worker by host:port.
CREATE FUNCTION corpq.catalog_check()
    RETURNS int
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    w      record;
    label  text;
    n      int := 0;
BEGIN
    IF to_regproc('pg_catalog.run_command_on_workers') IS NULL THEN
        RAISE EXCEPTION 'corpq.catalog_check() without arguments checks the workers of a Citus coordinator, and Citus is not installed in this database'
            USING ERRCODE = 'undefined_function',
                  HINT = 'Pass the nodes: foreign tables on each node''s corpq.catalog_fingerprints (docs/scaling.md).';
    END IF;
    FOR w IN EXECUTE
        $q$SELECT nodename, nodeport, success, result
             FROM pg_catalog.run_command_on_workers(
                 'SELECT coalesce(pg_catalog.json_agg(f), ''[]''::json) FROM corpq.catalog_fingerprints f')
            ORDER BY nodename, nodeport$q$
    LOOP
        label := format('node "%s:%s"', w.nodename, w.nodeport);
        IF NOT w.success THEN
            IF w.result ~ '"corpq(\.catalog_fingerprints)?" does not exist' THEN
                RAISE EXCEPTION 'corpq is not installed on %', label
                    USING ERRCODE = 'undefined_object', DETAIL = w.result,
                          HINT = 'Run CREATE EXTENSION corpq on the worker (Citus propagates it from the coordinator when the worker is added), then copy the catalog (docs/scaling.md).';
            END IF;
            RAISE EXCEPTION 'could not read the corpq catalog of %', label
                USING ERRCODE = 'connection_failure', DETAIL = w.result;
        END IF;
        PERFORM corpq.catalog_check_node(label, w.result::jsonb);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
COMMENT ON FUNCTION corpq.catalog_check() IS
    'on a Citus coordinator: compare this server''s catalog with every active worker''s (read through run_command_on_workers); ERROR naming the worker (host:port) and the first differing object, or the worker without corpq or unreachable; returns the number of workers checked';

-- ---------------------------------------------------------------------------
-- Citus: a distributed corpus scored where it lives.  On the coordinator,
-- corpq.score_job_distributed submits one corpq.score_job per node holding
-- shards of the corpus, over that node's shards (read as the shard tables
-- they are there), into a co-located target: the job's inserts route to the
-- node's own shards of the target.  Each job is an ordinary job of its node
-- (chunks, resume after a restart, progress), owned by the calling role:
-- Citus connects to the nodes as it.  The model is pinned here, and its
-- version, vocabularies and segmenters must have this server's fingerprints
-- on every node before anything is submitted.  Citus is called by name when
-- the function runs (corpq does not depend on it): master_run_on_worker, the
-- function under run_command_on_workers, runs one command per node.
-- ---------------------------------------------------------------------------

-- The pinned name@N of a model spec (a name: its latest version here), or ERROR.
CREATE FUNCTION corpq.model_pin(spec text)
    RETURNS text
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    pinned text;
    named  boolean := spec !~ '^[^@]+@[1-9][0-9]*$';
BEGIN
    IF named AND strpos(spec, '@') > 0 THEN
        RAISE EXCEPTION 'invalid model version in "%"', spec
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Write a model name for its latest version or name@N for version N >= 1.';
    END IF;
    SELECT format('%s@%s', c.name, v.version) INTO pinned
      FROM corpq.model_catalog c JOIN corpq.model_versions v ON v.model = c.id
     WHERE c.name = CASE WHEN named THEN spec ELSE regexp_replace(spec, '@[0-9]+$', '') END
       AND (named OR v.version = substring(spec FROM '@([0-9]+)$')::int)
     ORDER BY v.version DESC LIMIT 1;
    IF pinned IS NULL THEN
        RAISE EXCEPTION 'model "%" does not exist', spec USING ERRCODE = 'undefined_object';
    END IF;
    RETURN pinned;
END
$$;
COMMENT ON FUNCTION corpq.model_pin(text) IS
    'the version a model name means now, as name@N (name@N itself when that version exists); ERROR for a model or version that does not exist';

CREATE FUNCTION corpq.score_job_distributed(model text, corpus regclass, target_table regclass,
                                            options jsonb DEFAULT NULL)
    RETURNS TABLE (node text, job bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    opts     jsonb := coalesce(options, '{}');
    pins     text[];
    keys     text[];
    t        record;
    w        record;
    names    text[];
    ports    int[];
    queries  text[];
    fp       jsonb;
    done_n   text[] := '{}';
    done_p   int[] := '{}';
    done_j   bigint[] := '{}';
    failure  text;
BEGIN
    IF model IS NULL OR corpus IS NULL OR target_table IS NULL THEN
        RAISE EXCEPTION 'model, corpus and target_table must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF to_regproc('pg_catalog.master_run_on_worker') IS NULL THEN
        RAISE EXCEPTION 'corpq.score_job_distributed() scores the shards of a Citus table on their nodes, and Citus is not installed in this database'
            USING ERRCODE = 'undefined_function', HINT = 'On one server, use corpq.score_job().';
    END IF;
    -- both distributed by hash of id, in one co-location group
    FOR t IN SELECT rel, p.partmethod, p.colocationid,
                    CASE WHEN p.partmethod = 'h' THEN column_to_column_name(p.logicalrelid, p.partkey) END AS col
               FROM unnest(ARRAY[corpus, target_table]) rel
               LEFT JOIN pg_dist_partition p ON p.logicalrelid = rel
    LOOP
        IF t.partmethod IS DISTINCT FROM 'h' OR t.col IS DISTINCT FROM 'id' THEN
            RAISE EXCEPTION 'table % is not a Citus table distributed by column id', t.rel
                USING ERRCODE = 'wrong_object_type',
                      HINT = format('SELECT create_distributed_table(%L, ''id''%s);', t.rel,
                                    CASE WHEN t.rel = target_table THEN format(', colocate_with => %L', corpus) END);
        END IF;
    END LOOP;
    IF (SELECT count(DISTINCT p.colocationid) FROM pg_dist_partition p
         WHERE p.logicalrelid IN (corpus, target_table)) <> 1 THEN
        RAISE EXCEPTION 'target table % is not co-located with %', target_table, corpus
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = 'Each node writes the scores of its shards into its own shards of the target.',
                  HINT = format('SELECT alter_distributed_table(%L, colocate_with => %L);', target_table, corpus);
    END IF;
    -- the versions of now, the same on every node
    pins := ARRAY[corpq.model_pin(model)];
    IF opts ? 'backward' AND jsonb_typeof(opts -> 'backward') = 'string' THEN
        pins := pins || corpq.model_pin(opts ->> 'backward');
        opts := jsonb_set(opts, '{backward}', to_jsonb(pins[2]));
    END IF;
    -- what the scores depend on: the corpq version, the model versions,
    -- their vocabularies and the vocabularies' segmenters
    SELECT array_agg(k) INTO keys FROM (
        SELECT 'extension|corpq|' AS k
        UNION SELECT format('model|%s|%s', c.name, v.version)
          FROM corpq.model_catalog c JOIN corpq.model_versions v ON v.model = c.id
         WHERE format('%s@%s', c.name, v.version) = ANY (pins)
        UNION SELECT format('vocabulary|%s|', x.name)
          FROM corpq.model_catalog c, unnest(ARRAY[c.src_vocab, c.tgt_vocab]) x (name)
         WHERE c.name = ANY (SELECT regexp_replace(p, '@[0-9]+$', '') FROM unnest(pins) p)
        UNION SELECT format('bpe|%s|', b.bpe)
          FROM corpq.vocabularies b JOIN corpq.model_catalog c ON b.name IN (c.src_vocab, c.tgt_vocab)
         WHERE c.name = ANY (SELECT regexp_replace(p, '@[0-9]+$', '') FROM unnest(pins) p) AND b.bpe IS NOT NULL
    ) s;
    -- per node, the query over its shards (one placement per shard)
    SELECT array_agg(q.nodename ORDER BY q.nodename, q.nodeport), array_agg(q.nodeport ORDER BY q.nodename, q.nodeport),
           array_agg(q.query ORDER BY q.nodename, q.nodeport)
      INTO names, ports, queries
      FROM (SELECT n.nodename, n.nodeport,
                   format(E'SELECT id, src, tgt FROM (\n%s\n) AS shards ORDER BY id',
                          string_agg(format('SELECT id, src, tgt FROM %s%s',
                                            -- Citus leaves the schema out for public
                                            CASE WHEN c.relnamespace = 'public'::regnamespace THEN 'public.' END,
                                            shard_name(corpus, s.shardid)),
                                     E'\nUNION ALL\n' ORDER BY s.shardid)) AS query
              FROM (SELECT DISTINCT ON (d.shardid) d.shardid, pl.groupid
                      FROM pg_dist_shard d JOIN pg_dist_placement pl ON pl.shardid = d.shardid
                     WHERE d.logicalrelid = corpus ORDER BY d.shardid, pl.groupid) s
              JOIN pg_dist_node n ON n.groupid = s.groupid AND n.noderole = 'primary'
              JOIN pg_class c ON c.oid = corpus
             GROUP BY n.nodename, n.nodeport) q;
    -- every node has this server's fingerprints for keys (the rest of its
    -- catalog is not compared: this server's stands in for it)
    FOR w IN SELECT * FROM master_run_on_worker(names, ports,
                 array_fill('SELECT coalesce(pg_catalog.json_agg(f), ''[]''::json) FROM corpq.catalog_fingerprints f'::text,
                            ARRAY[cardinality(names)]), true)
    LOOP
        IF NOT w.success THEN
            RAISE EXCEPTION 'could not read the corpq catalog of node "%:%"', w.node_name, w.node_port
                USING ERRCODE = 'connection_failure', DETAIL = w.result;
        END IF;
        SELECT coalesce(jsonb_agg(f), '[]') INTO fp FROM (
            SELECT * FROM jsonb_to_recordset(w.result::jsonb) AS x (kind text, name text, version int, fingerprint text)
             WHERE format('%s|%s|%s', x.kind, x.name, x.version) = ANY (keys)
            UNION ALL
            SELECT * FROM corpq.catalog_fingerprint() h
             WHERE format('%s|%s|%s', h.kind, h.name, h.version) <> ALL (keys)) f;
        PERFORM corpq.catalog_check_node(format('node "%s:%s"', w.node_name, w.node_port), fp);
    END LOOP;
    -- submit everywhere; if a node refuses, cancel what the others started
    FOR w IN SELECT * FROM master_run_on_worker(names, ports,
                 ARRAY(SELECT format('SELECT corpq.score_job(%L, %L, %L::regclass, %L::jsonb)',
                                     pins[1], q, target_table::text, opts)
                         FROM unnest(queries) WITH ORDINALITY u (q, i) ORDER BY i), true)
    LOOP
        IF w.success THEN
            done_n := done_n || w.node_name;
            done_p := done_p || w.node_port;
            done_j := done_j || w.result::bigint;
            node := format('%s:%s', w.node_name, w.node_port);
            job := w.result::bigint;
            RETURN NEXT;
        ELSIF failure IS NULL THEN
            failure := format('node "%s:%s": %s', w.node_name, w.node_port, w.result);
        END IF;
    END LOOP;
    IF failure IS NOT NULL AND cardinality(done_j) = 0 THEN
        RAISE EXCEPTION 'could not submit the score job on %', failure USING ERRCODE = 'external_routine_exception';
    ELSIF failure IS NOT NULL THEN
        PERFORM * FROM master_run_on_worker(done_n, done_p,
            ARRAY(SELECT format('SELECT corpq.job_cancel(%s)', j) FROM unnest(done_j) WITH ORDINALITY u (j, i) ORDER BY i),
            true);
        RAISE EXCEPTION 'could not submit the score job on %', failure
            USING ERRCODE = 'external_routine_exception',
                  DETAIL = format('The jobs it started on the other nodes were cancelled: %s.',
                                  (SELECT string_agg(format('%s:%s job %s', n, p, j), ', ')
                                     FROM unnest(done_n, done_p, done_j) u (n, p, j)));
    END IF;
END
$$;
COMMENT ON FUNCTION corpq.score_job_distributed(text, regclass, regclass, jsonb) IS
    'on a Citus coordinator: one corpq.score_job per node holding shards of corpus (distributed by id), over that node''s shards, into target_table (co-located with corpus), with the model pinned here and checked on every node (its version, vocabularies and segmenters must have this server''s fingerprints); returns each node (host:port) and its job id there; if a node refuses the job, the others'' jobs are cancelled and the call fails naming it';

-- The calling role's queued and running jobs on every Citus worker
-- (corpq.job_progress there, read through run_command_on_workers): a worker
-- that cannot be read gives one row with its error and nothing else.
CREATE FUNCTION corpq.worker_job_progress()
    RETURNS TABLE (node text, id bigint, kind text, state text, phase text, done float8, total float8,
                   unit text, percent numeric, rate float8, eta interval, figures jsonb, error text)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    w record;
BEGIN
    IF to_regproc('pg_catalog.run_command_on_workers') IS NULL THEN
        RAISE EXCEPTION 'corpq.worker_job_progress() reads the jobs of the workers of a Citus coordinator, and Citus is not installed in this database'
            USING ERRCODE = 'undefined_function', HINT = 'On one server, read corpq.job_progress.';
    END IF;
    FOR w IN EXECUTE
        $q$SELECT nodename, nodeport, success, result
             FROM pg_catalog.run_command_on_workers(
                 'SELECT coalesce(pg_catalog.json_agg(p), ''[]''::json) FROM corpq.job_progress p')
            ORDER BY nodename, nodeport$q$
    LOOP
        node := format('%s:%s', w.nodename, w.nodeport);
        IF NOT w.success THEN
            error := w.result;
            RETURN NEXT;
            CONTINUE;
        END IF;
        RETURN QUERY
            SELECT node, p.id, p.kind, p.state, p.phase, p.done, p.total, p.unit, p.percent, p.rate,
                   p.eta, p.figures, NULL::text
              FROM json_to_recordset(w.result::json)
                   AS p (id bigint, kind text, state text, phase text, done float8, total float8,
                         unit text, percent numeric, rate float8, eta interval, figures jsonb)
             ORDER BY p.id;
    END LOOP;
END
$$;
COMMENT ON FUNCTION corpq.worker_job_progress() IS
    'on a Citus coordinator: corpq.job_progress of every active worker (the calling role''s queued and running jobs there), one row per job with its node (host:port); a worker that cannot be read gives one row with only node and error';
