-- Bytes from outside never crash a reader: garbage, truncations and every
-- single-bit flip of valid values go through the validator (cav_from_bytea,
-- the hex text input); whatever is accepted must behave as a valid CAV.

-- classify one input: 'rejected' (invalid_binary_representation or
-- invalid_text_representation) or 'accepted' after exercising every reader
CREATE FUNCTION pg_temp.probe(b bytea, via_text bool DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE v corpq.cav; t text;
BEGIN
    BEGIN
        IF via_text THEN
            v := b::text::corpq.cav;
        ELSE
            v := corpq.cav_from_bytea(b);
        END IF;
    EXCEPTION WHEN invalid_binary_representation THEN
        RETURN 'rejected';
    END;
    -- accepted: canonical, readable, mergeable
    IF corpq.cav_to_bytea(v) <> b THEN
        RETURN 'accepted but not canonical';
    END IF;
    PERFORM corpq.cav_to_jsonb(v), v::text;
    FOR t IN SELECT token FROM corpq.cav_tokens(v) LOOP
        PERFORM count(*) FROM corpq.cav_entries(v, t);
        PERFORM corpq.cav_pool(v, t, 3, 2), corpq.cav_cosine(v, t, t);
        PERFORM count(*) FROM corpq.cav_similar(v, t, 3);
    END LOOP;
    IF corpq.cav_to_bytea(corpq.cav_merge(corpq.cav_from_bytea(corpq.cav_to_bytea(v)), v)) IS NULL THEN
        RETURN 'merge failed';
    END IF;
    RETURN 'accepted';
END $$;

-- valid seeds: unrestricted with a multi-byte token, restricted
CREATE TEMP TABLE seeds AS
SELECT 'plain' AS name, corpq.cav_to_bytea(corpq.cav_accumulate(s, t, 5)) AS b
FROM (VALUES ('a b', 'x y'), ('b ñ', 'y y x')) v(s, t)
UNION ALL
SELECT 'restricted', corpq.cav_to_bytea(corpq.cav_accumulate(s, t, 5, ARRAY['y', 'zz']))
FROM (VALUES ('a b', 'x y'), ('b ñ', 'y y x')) v(s, t);
SELECT name, length(b), pg_temp.probe(b) FROM seeds ORDER BY name;

-- random garbage of 0 .. 4 KB, raw and behind a valid magic and header
SELECT kind, pg_temp.probe(b) AS result, count(*)
FROM (SELECT 'raw' AS kind, decode(string_agg(md5(i || ':' || j), ''), 'hex') AS b
      FROM generate_series(1, 300) i, generate_series(1, 1 + i % 130) j GROUP BY i
      UNION ALL
      SELECT 'after magic', '\x43514156'::bytea || decode(string_agg(md5(i || '/' || j), ''), 'hex')
      FROM generate_series(1, 300) i, generate_series(1, 1 + i % 17) j GROUP BY i
      UNION ALL
      SELECT 'after header', substr(s.b, 1, 40) || decode(string_agg(md5(i || '#' || j), ''), 'hex')
      FROM seeds s, generate_series(1, 200) i, generate_series(1, 1 + i % 9) j
      GROUP BY s.b, i
      UNION ALL
      SELECT 'empty', ''::bytea) g
GROUP BY 1, 2 ORDER BY 1, 2;

-- every proper prefix and every one-byte extension of the seeds
SELECT s.name, pg_temp.probe(substr(s.b, 1, n)) AS result, count(*)
FROM seeds s, generate_series(0, length(s.b) - 1) n
GROUP BY 1, 2 ORDER BY 1, 2;
SELECT s.name, pg_temp.probe(s.b || '\x00'::bytea) AS result FROM seeds s ORDER BY 1;

-- every single-bit flip: rejected, or a different valid CAV that works
SELECT s.name, pg_temp.probe(set_bit(s.b, n, 1 - get_bit(s.b, n))) AS result, count(*)
FROM seeds s, generate_series(0, 8 * length(s.b) - 1) n
GROUP BY 1, 2 ORDER BY 1, 2;

-- the hex text input takes the same path
SELECT pg_temp.probe(set_bit(s.b, n, 1 - get_bit(s.b, n)), true) AS result, count(*)
FROM seeds s, generate_series(0, 8 * length(s.b) - 1, 7) n
WHERE s.name = 'plain'
GROUP BY 1 ORDER BY 1;
