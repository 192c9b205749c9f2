-- Chunked model storage (corpq.model_chunks) and the large-object way in and
-- out: model_import_lo / model_export_lo round-trip the bytes as a role with
-- no server file access, an object the caller cannot read is refused, and a
-- damaged stream (truncated, reordered, a chunk missing or altered, a bad
-- header) is an error naming the model and version, with nothing written.
SET client_min_messages = warning;
-- an error's message with large-object numbers, which differ from run to run, as N
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE d text;
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
    RETURN regexp_replace(SQLERRM || coalesce(' -- ' || nullif(d, ''), ''), 'large object [0-9]+', 'large object N');
END $f$;

CREATE TABLE chunk_pairs AS
SELECT g AS id, 'a' || (g % 7) || ' b' || (g % 5) AS src, 'x' || (g % 5) || ' y' || (g % 7) AS tgt
  FROM generate_series(1, 40) g;
SELECT corpq.vocab_build('chunk_src', 'SELECT src FROM chunk_pairs') > 0 AS src_vocab;
SELECT corpq.vocab_build('chunk_tgt', 'SELECT tgt FROM chunk_pairs') > 0 AS tgt_vocab;
SELECT corpq.model_create('ch', '{"preset": "tiny", "max_positions": 16}', 'chunk_src', 'chunk_tgt', 7);

-- a version is its row and its chunks: numbered from 0, adding up to bytes
SELECT v.bytes = sum(length(k.data)) AS bytes_add_up, count(*) AS chunks, min(k.chunk) AS first
  FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
  JOIN corpq.model_chunks k ON k.model = v.model AND k.version = v.version
 WHERE c.name = 'ch' GROUP BY v.bytes;

-- ---- a role with no server file access, its own large objects ----
CREATE ROLE regress_chunk_user;
CREATE ROLE regress_chunk_other;
GRANT SELECT ON chunk_pairs TO regress_chunk_user;
SELECT pg_has_role('regress_chunk_user', 'pg_read_server_files', 'MEMBER') AS reads_server_files;
SET ROLE regress_chunk_user;
-- in: a large object the role made from the bytes (as \lo_import would)
SELECT lo_from_bytea(0, corpq.model_export('ch@1')) AS lo_in \gset
SELECT corpq.model_import_lo('ch_lo', :lo_in, 'chunk_src', 'chunk_tgt') AS imported;
SELECT corpq.model_import_lo('ch_lo', :lo_in) AS next_version;
SELECT owner::text FROM corpq.model_catalog WHERE name = 'ch_lo';
-- out: a new large object, owned by the role, with exactly the bytes
SELECT corpq.model_export_lo('ch_lo@2') AS lo_out \gset
SELECT lo_get(:lo_out) = corpq.model_export('ch@1') AS same_bytes,
       (SELECT lomowner::regrole::text FROM pg_largeobject_metadata WHERE oid = :lo_out) AS lo_owner;
SELECT corpq.sent_prob('ch_lo@1', 'a1 b1', 'x1 y1') = corpq.sent_prob('ch_lo@2', 'a1 b1', 'x1 y1') AS scores_same;
SELECT (SELECT checksum FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
         WHERE c.name = 'ch_lo' AND v.version = 2) =
       (SELECT checksum FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
         WHERE c.name = 'ch' AND v.version = 1) AS same_checksum;
SELECT lo_unlink(:lo_out);

-- ---- an object the caller cannot read ----
SET ROLE regress_chunk_other;
SELECT lo_from_bytea(0, corpq.model_export('ch@1')) AS lo_private \gset
SET ROLE regress_chunk_user;
SELECT pg_temp.err(format('SELECT corpq.model_import_lo(%L, %s, %L, %L)', 'ch_stolen', :lo_private, 'chunk_src', 'chunk_tgt'));
SELECT corpq.model_import_lo('ch_stolen', 4294967000, 'chunk_src', 'chunk_tgt');
SELECT count(*) AS stolen FROM corpq.model_catalog WHERE name = 'ch_stolen';
-- granted, it reads
RESET ROLE;
GRANT SELECT ON LARGE OBJECT :lo_private TO regress_chunk_user;
SET ROLE regress_chunk_user;
SELECT corpq.model_import_lo('ch_lo', :lo_private) AS granted_version;

-- ---- bad streams: an error, nothing written ----
-- truncated: the header says more bytes than the object holds
SELECT lo_from_bytea(0, substring(corpq.model_export('ch@1') FROM 1 FOR 5000)) AS lo_short \gset
SELECT pg_temp.err(format('SELECT corpq.model_import_lo(%L, %s)', 'ch_lo', :lo_short));
-- one byte flipped in the data: the CRC over the stream
SELECT lo_from_bytea(0, set_byte(corpq.model_export('ch@1'), 30000,
                                 255 - get_byte(corpq.model_export('ch@1'), 30000))) AS lo_flip \gset
SELECT corpq.model_import_lo('ch_lo', :lo_flip);
-- not a weight image
SELECT lo_from_bytea(0, '\x00010203040506070809'::bytea || repeat('x', 100)::bytea) AS lo_junk \gset
SELECT pg_temp.err(format('SELECT corpq.model_import_lo(%L, %s)', 'ch_lo', :lo_junk));
-- another architecture under the same name
SELECT corpq.model_create('ch_small', '{"preset": "tiny", "max_positions": 16, "ffn_dim": 128}', 'chunk_src', 'chunk_tgt');
SELECT lo_from_bytea(0, corpq.model_export('ch_small')) AS lo_other \gset
SELECT corpq.model_import_lo('ch_lo', :lo_other);
SELECT version FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
 WHERE c.name = 'ch_lo' ORDER BY version;
SELECT count(*) AS orphan_chunks FROM corpq.model_chunks k
  LEFT JOIN corpq.model_versions v USING (model, version) WHERE v.model IS NULL;
-- the role writes no chunk itself
DELETE FROM corpq.model_chunks;
UPDATE corpq.model_chunks SET data = '\x00';
INSERT INTO corpq.model_chunks SELECT model, version, chunk + 100, data FROM corpq.model_chunks LIMIT 1;
RESET ROLE;

-- ---- damaged storage (a superuser's hand, a bad restore); ch@1 was
-- never loaded in this session, so every load below reads the chunks ----
-- a version's image in two chunks of other sizes still reads: the order and
-- the bytes count, not the chunk size
SELECT c.id AS ch_id FROM corpq.model_catalog c WHERE c.name = 'ch' \gset
INSERT INTO corpq.model_chunks (model, version, chunk, data)
SELECT model, version, 1, substring(data FROM 1001) FROM corpq.model_chunks
 WHERE model = :ch_id AND version = 1 AND chunk = 0;
UPDATE corpq.model_chunks SET data = substring(data FROM 1 FOR 1000)
 WHERE model = :ch_id AND version = 1 AND chunk = 0;
SELECT md5(corpq.model_export('ch@1')) = (SELECT md5(corpq.model_export('ch_lo@1'))) AS two_chunks_same;
-- reordered
UPDATE corpq.model_chunks SET chunk = chunk + 10 WHERE model = :ch_id AND version = 1;
UPDATE corpq.model_chunks SET chunk = 11 - chunk WHERE model = :ch_id AND version = 1;
SELECT length(corpq.model_export('ch@1'));
SELECT corpq.sent_prob('ch@1', 'a1 b1', 'x1 y1');
UPDATE corpq.model_chunks SET chunk = chunk + 10 WHERE model = :ch_id AND version = 1;
UPDATE corpq.model_chunks SET chunk = 11 - chunk WHERE model = :ch_id AND version = 1;
-- a chunk missing first (a gap)
BEGIN;
DELETE FROM corpq.model_chunks WHERE model = :ch_id AND version = 1 AND chunk = 0;
SELECT length(corpq.model_export('ch@1'));
ROLLBACK;
-- the last chunk missing
DELETE FROM corpq.model_chunks WHERE model = :ch_id AND version = 1 AND chunk = 1 RETURNING chunk AS deleted \gset
SELECT length(corpq.model_export('ch@1'));
SELECT corpq.model_export_lo('ch@1');
-- a chunk altered (same length): the checksum
INSERT INTO corpq.model_chunks (model, version, chunk, data)
SELECT model, version, 1, substring(corpq.model_export('ch_lo@1') FROM 1001) FROM corpq.model_chunks
 WHERE model = :ch_id AND version = 1 AND chunk = 0;
UPDATE corpq.model_chunks SET data = set_byte(data, 500, 255 - get_byte(data, 500))
 WHERE model = :ch_id AND version = 1 AND chunk = 0;
SELECT length(corpq.model_export('ch@1'));
SELECT corpq.sent_prob('ch@1', 'a1 b1', 'x1 y1');
-- an extra chunk past the end
UPDATE corpq.model_chunks SET data = set_byte(data, 500, 255 - get_byte(data, 500))
 WHERE model = :ch_id AND version = 1 AND chunk = 0;
INSERT INTO corpq.model_chunks VALUES (:ch_id, 1, 2, '\x00');
SELECT length(corpq.model_export('ch@1'));
DELETE FROM corpq.model_chunks WHERE model = :ch_id AND version = 1 AND chunk = 2;
SELECT md5(corpq.model_export('ch@1')) = (SELECT md5(corpq.model_export('ch_lo@1'))) AS repaired;

-- a dropped model takes its chunks
SELECT corpq.model_drop('ch');
SELECT count(*) AS chunks_left FROM corpq.model_chunks WHERE model = :ch_id;

SET ROLE regress_chunk_user;
SELECT corpq.model_drop('ch_lo'), corpq.model_drop('ch_small');
RESET ROLE;
-- DROP OWNED takes the roles' large objects too
DROP OWNED BY regress_chunk_user, regress_chunk_other;
DROP ROLE regress_chunk_user, regress_chunk_other;
SELECT corpq.vocab_drop('chunk_src'), corpq.vocab_drop('chunk_tgt');
DROP TABLE chunk_pairs;
