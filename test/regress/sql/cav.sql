-- corpq.cav: the worked example, row handling, l_max, restricted targets,
-- analysis functions against independent SQL, I/O, merging, errors.

-- ---- worked example (paper 002, Eq. 5; README, Corpus Analysis Vectors) ------------------------
-- ('a b', 'x y') and ('b', 'y y'), l_max 8.  y occurs 3 times:
--   pair 1, concat a b x y, y at 3:  y d0, x d1, b d2, a d3
--   pair 2, concat b y y,   y at 1:  y d0, b d1
--   pair 2,                 y at 2:  y d0, y d1, b d2
CREATE TEMP TABLE ex AS
SELECT corpq.cav_accumulate(s, t, 8) AS c
FROM (VALUES ('a b', 'x y'), ('b', 'y y')) v(s, t);
SELECT * FROM corpq.cav_entries((SELECT c FROM ex), 'y');
-- x occurs once: x d0, b d1, a d2
SELECT * FROM corpq.cav_entries((SELECT c FROM ex), 'x');
SELECT * FROM corpq.cav_tokens((SELECT c FROM ex));
SELECT corpq.cav_summary(c) FROM ex;
SELECT * FROM corpq.cav_stats((SELECT c FROM ex));
SELECT corpq.cav_to_jsonb(c) FROM ex;
-- the dense 4 x 8 matrix of y, rebuilt from the jsonb rows/distances
SELECT r AS row, array_agg(coalesce(n, 0) ORDER BY d) AS counts
FROM generate_series(0, 3) r CROSS JOIN generate_series(0, 7) d
LEFT JOIN (SELECT (e->>0)::int AS er, (e->>1)::int AS ed, (e->>2)::int AS n
           FROM ex, jsonb_array_elements(corpq.cav_to_jsonb(c)->'matrices') m,
                jsonb_array_elements(m->'entries') e
           WHERE m->>'token' = 'y') y ON y.er = r AND y.ed = d
GROUP BY r ORDER BY r;
-- absent tokens: empty sets and NULL scalars
SELECT count(*) FROM corpq.cav_entries((SELECT c FROM ex), 'a');
SELECT corpq.cav_cosine(c, 'y', 'nope') IS NULL AS cos_null,
       corpq.cav_pool(c, 'nope', 2, 2) IS NULL AS pool_null,
       (SELECT count(*) FROM corpq.cav_similar(c, 'nope')) AS similar_rows
FROM ex;

-- ---- NULL and empty rows ------------------------------------------------------
-- NULL on either side and empty/whitespace targets add nothing, not even a pair
SELECT corpq.cav_to_bytea(corpq.cav_accumulate(s, t, 8)) =
       (SELECT corpq.cav_to_bytea(c) FROM ex) AS same_bytes
FROM (VALUES ('a b', 'x y'), (NULL, 'x'), ('a', NULL), (NULL, NULL),
             ('b', ''), ('zz', E' \t\n'), ('b', 'y y')) v(s, t);
-- an empty source still counts: its target tokens have target context
SELECT pairs, source_tokens, target_tokens, nonzeros
FROM corpq.cav_stats((SELECT corpq.cav_accumulate(s, t, 8)
                      FROM (VALUES ('', 'p q')) v(s, t)));
-- no counted pair: NULL, like sum()
SELECT corpq.cav_accumulate(s, t) IS NULL AS all_null
FROM (VALUES (NULL::text, 'x'), ('a', '')) v(s, t);
SELECT corpq.cav_accumulate(s, t) IS NULL AS no_rows
FROM (VALUES ('a', 'x')) v(s, t) WHERE false;

-- ---- l_max boundary -----------------------------------------------------------
-- concat a b c x y: y sees a at distance 4, kept only when l_max >= 5
WITH per_l AS (SELECT l, corpq.cav_accumulate('a b c', 'x y', l) AS c
               FROM generate_series(1, 5) l GROUP BY l)
SELECT l, array_agg(feature || ':' || distance ORDER BY side, feature, distance) AS y_cells
FROM per_l, corpq.cav_entries(c, 'y')
GROUP BY l ORDER BY l;
SELECT l_max FROM corpq.cav_stats((SELECT corpq.cav_accumulate('a', 'x', 65535)));
SELECT corpq.cav_accumulate('a', 'x', 0);
SELECT corpq.cav_accumulate('a', 'x', 65536);
SELECT corpq.cav_accumulate('a', 'x', NULL::int);

-- ---- restricted targets -------------------------------------------------------
CREATE TEMP TABLE ex_r AS
SELECT corpq.cav_accumulate(s, t, 8, ARRAY['y', 'never']) AS c
FROM (VALUES ('a b', 'x y'), ('b', 'y y')) v(s, t);
SELECT corpq.cav_summary(c) FROM ex_r;
SELECT * FROM corpq.cav_tokens((SELECT c FROM ex_r));
-- y's matrix is the unrestricted one; x has none
SELECT (SELECT array_agg(e ORDER BY e::text) FROM corpq.cav_entries(r.c, 'y') e) =
       (SELECT array_agg(e ORDER BY e::text) FROM corpq.cav_entries(x.c, 'y') e) AS y_same,
       (SELECT count(*) FROM corpq.cav_entries(r.c, 'x')) AS x_rows,
       corpq.cav_cosine(r.c, 'x', 'y') IS NULL AS x_cos_null
FROM ex_r r, ex x;
SELECT corpq.cav_to_jsonb(c)->'restricted' FROM ex_r;
SELECT corpq.cav_accumulate('a', 'x', 8, '{}'::text[]);
SELECT corpq.cav_accumulate('a', 'x', 8, ARRAY['x', NULL]);
-- options must not change between rows of a group
SELECT corpq.cav_accumulate(s, t, l) FROM (VALUES ('a', 'x', 4), ('b', 'y', 5)) v(s, t, l);
SELECT corpq.cav_accumulate(s, t, 4, g)
FROM (VALUES ('a', 'x', ARRAY['x']), ('b', 'y', ARRAY['y'])) v(s, t, g);
-- CAVs built with different options do not merge
SELECT corpq.cav_merge(r.c, x.c) FROM ex_r r, ex x;
SELECT corpq.cav_merge(x.c, (SELECT corpq.cav_accumulate('a', 'x', 9))) FROM ex x;

-- ---- a generated corpus: merge algebra, GROUP BY, analysis vs SQL ----------------
CREATE TEMP TABLE corpus AS
SELECT g AS id, 'dom' || (g % 3) AS domain,
       'w' || (g % 7) || ' w' || (g % 5) || ' s' || (g % 11) || ' w' || (g % 4) AS src,
       't' || (g % 6) || ' t' || (g % 9) || ' u' || (g % 4) ||
       CASE WHEN g % 5 = 0 THEN ' t' || (g % 6) ELSE '' END AS tgt
FROM generate_series(1, 600) g;
CREATE TEMP TABLE whole AS
SELECT corpq.cav_accumulate(src, tgt, 7) AS c FROM corpus;
CREATE TEMP TABLE by_domain AS
SELECT domain, corpq.cav_accumulate(src, tgt, 7) AS c FROM corpus GROUP BY domain;
SELECT domain, pairs, matrices, nonzeros
FROM by_domain, corpq.cav_stats(c) ORDER BY domain;
-- the union of the groups is the whole corpus, byte for byte, in any order
SELECT corpq.cav_to_bytea(corpq.cav_sum(c ORDER BY domain)) = (SELECT corpq.cav_to_bytea(c) FROM whole) AS sum_asc,
       corpq.cav_to_bytea(corpq.cav_sum(c ORDER BY domain DESC)) = (SELECT corpq.cav_to_bytea(c) FROM whole) AS sum_desc
FROM by_domain;
SELECT corpq.cav_to_bytea(corpq.cav_merge(corpq.cav_merge(a.c, b.c), d.c)) =
       (SELECT corpq.cav_to_bytea(c) FROM whole) AS merge_ok
FROM by_domain a, by_domain b, by_domain d
WHERE a.domain = 'dom2' AND b.domain = 'dom0' AND d.domain = 'dom1';
-- occurrences against a count in SQL
SELECT count(*) AS tokens,
       bool_and(k.occurrences = (SELECT count(*) FROM corpus, regexp_split_to_table(tgt, ' ') w
                                 WHERE w = k.token)) AS occurrences_ok
FROM whole, corpq.cav_tokens(c) k;

-- cosine of the flattened matrices, computed from cav_entries in SQL
CREATE FUNCTION pg_temp.ref_cosine(c corpq.cav, a text, b text) RETURNS float8
LANGUAGE sql AS $$
  WITH x AS (SELECT side, feature, distance, count::float8 AS n FROM corpq.cav_entries(c, a)),
       y AS (SELECT side, feature, distance, count::float8 AS n FROM corpq.cav_entries(c, b))
  SELECT coalesce((SELECT sum(x.n * y.n) FROM x JOIN y USING (side, feature, distance)), 0)
         / sqrt((SELECT sum(n * n) FROM x) * (SELECT sum(n * n) FROM y))
$$;
SELECT count(*) AS pairs_compared,
       max(abs(corpq.cav_cosine(c, a.token, b.token) - pg_temp.ref_cosine(c, a.token, b.token))) < 1e-12 AS cosine_ok,
       bool_and(corpq.cav_cosine(c, a.token, b.token) = corpq.cav_cosine(c, b.token, a.token)) AS symmetric
FROM whole, corpq.cav_tokens(c) a, corpq.cav_tokens(c) b;
SELECT round(corpq.cav_cosine(c, 't1', 't1')::numeric, 12) AS self FROM whole;

-- top-k: every returned cosine is right, in descending order, and nothing left
-- out scores higher than the k-th
SELECT q.token, r.k, r.cosines_ok, r.self_excluded,
       r.kth >= (SELECT coalesce(max(pg_temp.ref_cosine(w.c, q.token, o.token)), -1) - 1e-12
                 FROM corpq.cav_tokens(w.c) o
                 WHERE o.token <> q.token
                   AND o.token NOT IN (SELECT token FROM corpq.cav_similar(w.c, q.token, 4))) AS top_ok
FROM whole w, corpq.cav_tokens(w.c) q,
     LATERAL (SELECT count(*) AS k, min(s.cosine) AS kth,
                     max(abs(s.cosine - pg_temp.ref_cosine(w.c, q.token, s.token))) < 1e-12 AS cosines_ok,
                     bool_and(s.token <> q.token) AS self_excluded
              FROM corpq.cav_similar(w.c, q.token, 4) s) r
ORDER BY q.token;
SELECT bool_and(a.cosine >= b.cosine) AS descending
FROM whole w, corpq.cav_tokens(w.c) q,
     LATERAL (SELECT cosine, row_number() OVER () AS i FROM corpq.cav_similar(w.c, q.token, 100)) a,
     LATERAL (SELECT cosine, row_number() OVER () AS i FROM corpq.cav_similar(w.c, q.token, 100)) b
WHERE b.i = a.i + 1;
-- k above the number of other tokens returns them all
SELECT count(*) = (SELECT count(*) - 1 FROM whole, corpq.cav_tokens(c)) AS all_others
FROM whole, corpq.cav_similar(c, 't1', 1000000);
SELECT count(*) FROM whole, corpq.cav_similar(c, 't1');

-- adaptive average pooling with PyTorch's bins, computed from the jsonb in SQL
CREATE FUNCTION pg_temp.ref_pool(c corpq.cav, tok text, r int, k int) RETURNS float8[]
LANGUAGE sql AS $$
  WITH j AS (SELECT corpq.cav_to_jsonb(c) AS j),
  dims AS (SELECT jsonb_array_length(j->'source') + jsonb_array_length(j->'target') AS h,
                  (j->>'l_max')::int AS w FROM j),
  ent AS (SELECT (e->>0)::int AS er, (e->>1)::int AS ed, (e->>2)::float8 AS n
          FROM j, jsonb_array_elements(j->'matrices') m, jsonb_array_elements(m->'entries') e
          WHERE m->>'token' = tok),
  bins AS (SELECT i, jj, i * h / r AS r0, ((i + 1) * h + r - 1) / r AS r1,
                  jj * w / k AS c0, ((jj + 1) * w + k - 1) / k AS c1
           FROM dims, generate_series(0, r - 1) i, generate_series(0, k - 1) jj)
  SELECT array_agg(coalesce((SELECT sum(n) FROM ent WHERE er >= r0 AND er < r1 AND ed >= c0 AND ed < c1), 0)
                   / ((r1 - r0) * (c1 - c0)) ORDER BY i, jj)
  FROM bins
$$;
SELECT t.token, s.r, s.k,
       array_dims(corpq.cav_pool(w.c, t.token, s.r, s.k)) AS dims,
       (SELECT max(abs(p - q) / greatest(abs(q), 1e-30))
        FROM unnest(corpq.cav_pool(w.c, t.token, s.r, s.k), pg_temp.ref_pool(w.c, t.token, s.r, s.k)) u(p, q)) < 1e-6 AS pool_ok
FROM whole w, (VALUES ('t1'), ('u3')) t(token),
     (VALUES (1, 1), (2, 3), (5, 7), (40, 10)) s(r, k)
ORDER BY 1, 2, 3;
SELECT corpq.cav_pool(c, 'y', 2, 2) FROM ex;
-- with layer_norm: the dense 4 x 8 matrix normalised (population variance,
-- eps 1e-5), then pooled, computed cell by cell in SQL
WITH cells AS (
  SELECT r, d, coalesce((SELECT sum(count) FROM ex, corpq.cav_entries(ex.c, 'y') e
                          WHERE e.distance = d
                            AND (CASE e.side WHEN 'source' THEN 0 ELSE 2 END) +
                                (CASE WHEN e.feature IN ('a', 'x') THEN 0 ELSE 1 END) = r), 0)::float8 AS x
  FROM generate_series(0, 3) r, generate_series(0, 7) d),
norm AS (SELECT r, d, (x - avg(x) OVER ()) / sqrt(var_pop(x) OVER () + 1e-5) AS z FROM cells),
ref AS (SELECT array_agg(z ORDER BY i, j) AS a
        FROM (SELECT r / 2 AS i, d / 4 AS j, avg(z) AS z FROM norm GROUP BY 1, 2) b)
SELECT corpq.cav_pool(c, 'y', 2, 2, true) AS normalised,
       (SELECT max(abs(p - q)) FROM unnest(corpq.cav_pool(c, 'y', 2, 2, true), ref.a) u(p, q)) < 1e-6 AS matches_dense
FROM ex, ref;

-- ---- BPE segmentation ------------------------------------------------------------
SELECT corpq.bpe_import('cav_bpe', E'#version: 0.2\nl o\nlo w</w>\n');
SELECT * FROM corpq.cav_tokens((SELECT corpq.cav_accumulate(s, t, 8, NULL, 'cav_bpe')
                                FROM (VALUES ('low', 'lower low')) v(s, t)));
SELECT * FROM corpq.cav_entries((SELECT corpq.cav_accumulate(s, t, 8, NULL, 'cav_bpe')
                                 FROM (VALUES ('low', 'lower low')) v(s, t)), 'low');
-- 'whitespace' and NULL are the same segmentation as the shorter forms
SELECT corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 7, NULL, 'whitespace')) =
       corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 7)) AS ws_same
FROM corpus;
SELECT corpq.cav_accumulate('a', 'x', 8, NULL, 'no_such_bpe');
SELECT corpq.bpe_drop('cav_bpe');

-- ---- I/O ------------------------------------------------------------------------------
-- the text form is the hex form of the canonical bytes, whatever bytea_output
-- says, so text round-trips (pg_dump, COPY); cav_summary reads as a summary
SELECT corpq.cav_to_bytea(c::text::corpq.cav) = corpq.cav_to_bytea(c) AS text_round_trip,
       c::text = corpq.cav_to_bytea(c)::text AS text_is_hex
FROM whole;
SET bytea_output = escape;
SELECT left(c::text, 10) AS text_start, corpq.cav_to_bytea(c::text::corpq.cav) = corpq.cav_to_bytea(c) AS still_round_trips
FROM whole;
RESET bytea_output;
SELECT corpq.cav_summary(c) FROM whole;
SELECT 'CAV pairs=2 l_max=8'::corpq.cav;
SELECT '\x00'::corpq.cav;
SELECT corpq.cav_to_bytea(corpq.cav_from_bytea(corpq.cav_to_bytea(c))) = corpq.cav_to_bytea(c) AS bytea_round_trip
FROM whole;
SELECT corpq.cav_send(c) = corpq.cav_to_bytea(c) AS send_is_canonical FROM whole;
-- binary COPY exercises cav_send and cav_recv
CREATE TEMP TABLE copied (c corpq.cav);
DO $$
DECLARE f text := '/tmp/corpq_cav_regress_' || pg_backend_pid() || '.bin'; d text;
BEGIN
    EXECUTE format('COPY (SELECT c FROM whole UNION ALL SELECT c FROM ex) TO %L (FORMAT binary)', f);
    EXECUTE format('COPY copied FROM %L (FORMAT binary)', f);
    -- garbage through recv: a bytea column has the same binary wire form
    EXECUTE format('COPY (SELECT %L::bytea) TO %L (FORMAT binary)', '\x4351415601000000', f);
    BEGIN
        EXECUTE format('COPY copied FROM %L (FORMAT binary)', f);
    EXCEPTION WHEN invalid_binary_representation THEN
        GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
        RAISE NOTICE 'recv rejected garbage: %: %', SQLERRM, d;
    END;
    -- the program reads its input: one that exits first makes the COPY fail with a broken pipe
    EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'cat >/dev/null; rm -f ' || f);
END $$;
SELECT count(*) AS rows,
       bool_or(corpq.cav_to_bytea(k.c) = (SELECT corpq.cav_to_bytea(c) FROM whole)) AS whole_back,
       bool_or(corpq.cav_to_bytea(k.c) = (SELECT corpq.cav_to_bytea(c) FROM ex)) AS ex_back
FROM copied k;
-- stored (and compressed) values read back unchanged
CREATE TEMP TABLE stored (c corpq.cav);
INSERT INTO stored SELECT corpq.cav_accumulate(src || ' ' || id, tgt || ' v' || id, 30) FROM corpus;
SELECT pg_column_size(c) < (SELECT bytes FROM corpq.cav_stats(c)) AS compressed,
       (SELECT matrices FROM corpq.cav_stats(c)) AS matrices
FROM stored;

-- ---- stored values read once per call site ----------------------------------
-- Two different CAVs stored out of line: each row's value is its own, whether
-- the call site reuses the value it read before (same toast value) or not.
CREATE TABLE toasted (i int, v corpq.cav);
ALTER TABLE toasted ALTER COLUMN v SET STORAGE EXTERNAL;
INSERT INTO toasted
SELECT k, corpq.cav_accumulate(s, t, 8)
FROM (SELECT k, g,
             'a' || (g % (7 + k)) || ' b' || (g % 5) || ' c' || (g * k % 11) AS s,
             'x' || (g % 5) || ' y' || (g % (3 + k)) || ' z' || (g % 13) AS t
      FROM generate_series(1, 2) k, generate_series(1, 400) g) v
GROUP BY k;
SELECT i, pg_column_size(v) > 2000 AS out_of_line FROM toasted ORDER BY i;
-- interleaved rows: 1, 2, 1, 2 ... must give each value's own cosine
SELECT t.i, count(*) AS calls,
       count(DISTINCT corpq.cav_cosine(t.v, 'z1', 'z5')) AS values_seen,
       min(corpq.cav_cosine(t.v, 'z1', 'z5')) =
         (SELECT corpq.cav_cosine(corpq.cav_from_bytea(corpq.cav_to_bytea(u.v)), 'z1', 'z5')
          FROM toasted u WHERE u.i = t.i) AS same_as_in_memory
FROM generate_series(1, 6) n, toasted t GROUP BY t.i ORDER BY t.i;
SELECT count(DISTINCT c) AS distinct_cosines
FROM (SELECT corpq.cav_cosine(v, 'z1', 'z5') AS c FROM generate_series(1, 3), toasted) q;

-- ---- errors -------------------------------------------------------------------
SELECT * FROM corpq.cav_similar((SELECT c FROM ex), 'y', 0);
SELECT corpq.cav_pool(c, 'y', 0, 3) FROM ex;
SELECT corpq.cav_pool(c, 'y', 3, -1) FROM ex;
SELECT corpq.cav_pool(c, 'y', 100000, 100000) FROM ex;
SELECT corpq.cav_accumulate_trans(NULL, 'a', 'x');
-- the byte cap: work_mem x 256 per state, a clean ERROR (16 MB here)
SET work_mem = '64kB';
DO $$
DECLARE d text; h text;
BEGIN
    PERFORM corpq.cav_accumulate(s, t, 4000)
    FROM (SELECT string_agg('s' || g, ' ') AS s, string_agg('t' || g, ' ') AS t
          FROM generate_series(1, 3000) g) v;
    RAISE NOTICE 'no error';
EXCEPTION WHEN program_limit_exceeded THEN
    GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    RAISE NOTICE 'program_limit_exceeded; detail names the limit: %; %',
        d ~ '^CAV state would need [0-9]+ bytes, above the limit of 16777216\.$', h;
END $$;
RESET work_mem;
-- 300 + 300 distinct tokens: target j (0-based) sees 301 + j cells, 135150 in all
SELECT nonzeros FROM corpq.cav_stats((
    SELECT corpq.cav_accumulate(s, t, 4000)
    FROM (SELECT string_agg('s' || g, ' ') AS s, string_agg('t' || g, ' ') AS t
          FROM generate_series(1, 300) g) v));
