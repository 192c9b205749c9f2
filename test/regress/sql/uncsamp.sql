-- UncSamp weights and Efraimidis-Spirakis keys: the formula, errors, and
-- statistical checks with fixed seeds (deterministic, so they cannot flake).
SET client_min_messages = warning;

-- U'^beta with U' = U up to U_max, 2 U_max - U beyond it, 0 past 2 U_max
SELECT u, corpq.uncsamp_weight(u, 1.0) AS w2, corpq.uncsamp_weight(u, 1.0, 1) AS w1,
       corpq.uncsamp_weight(u, 1.0, 0) AS w0
  FROM (VALUES (0.0), (0.5), (1.0), (1.5), (2.0), (3.0), ('Infinity'::float8)) v(u);
SELECT corpq.uncsamp_weight(NULL, 1), corpq.uncsamp_weight(1, NULL);

-- errors
SELECT corpq.uncsamp_weight('NaN', 1);
SELECT corpq.uncsamp_weight(1, 'NaN');
SELECT corpq.uncsamp_weight(1, 0);
SELECT corpq.uncsamp_weight(1, -1);
SELECT corpq.uncsamp_weight(1, 1, -0.5);
SELECT corpq.uncsamp_weight(-0.1, 1);
SELECT corpq.uncsamp(1, 1, 2, NULL);
SELECT corpq.uncsamp(1, NULL, 2, 1);
SELECT corpq.uncsamp(1, 1, 2, 1, NULL);
SELECT corpq.uncsamp(1, 1, 'NaN', 1);

-- keys: reproducible per (id, seed), in [0, 1) for positive weights, -1 for
-- weight 0 or an unknown (NULL) uncertainty
SELECT corpq.uncsamp(0.5, 1, 2, 7, 42) = corpq.uncsamp(0.5, 1, 2, 7, 42) AS same,
       corpq.uncsamp(0.5, 1, 2, 7, 42) <> corpq.uncsamp(0.5, 1, 2, 7, 43) AS seed_matters,
       corpq.uncsamp(0.5, 1, 2, 7, 42) <> corpq.uncsamp(0.5, 1, 2, 8, 42) AS id_matters,
       corpq.uncsamp(2.5, 1, 2, 7, 42) AS past_2umax, corpq.uncsamp(NULL, 1, 2, 7, 42) AS null_u,
       corpq.uncsamp(0, 1, 2, 7, 42) AS zero_u;
-- with weight 1 the key is r itself: r is uniform over deciles (chi-square,
-- 9 degrees of freedom, 0.999 quantile 27.877) and never 0 or 1
SELECT sum((n - 1000.0) ^ 2 / 1000.0) < 27.877 AS uniform_deciles, sum(n) AS n,
       bool_and(lo > 0 AND hi < 1) AS open_interval
  FROM (SELECT width_bucket(k, 0, 1, 10) AS b, count(*) AS n, min(k) AS lo, max(k) AS hi
          FROM (SELECT corpq.uncsamp(1, 1, 1, id, 0) AS k FROM generate_series(1, 10000) id) s
         GROUP BY 1) d;
-- the same key from r = the hash: a larger weight gives a larger key
SELECT bool_and(corpq.uncsamp(0.9, 1, 1, id, 5) >= corpq.uncsamp(0.3, 1, 1, id, 5)) AS monotone
  FROM generate_series(1, 1000) id;

-- weighted draws: five items, beta = 1, U_max = 4 -> weights 1, 2, 3, 3, 0
CREATE TABLE us_items(id bigint, u float8);
INSERT INTO us_items VALUES (1, 1), (2, 2), (3, 3), (4, 5), (5, 8);
SELECT id, u, corpq.uncsamp_weight(u, 4, 1) AS w FROM us_items ORDER BY id;

-- samples of size 1 over 9000 seeds: frequencies follow the weights
-- (chi-square over the four positive cells, 3 degrees of freedom, 0.999
-- quantile 16.266); the zero-weight item is never drawn
WITH draws AS (
    SELECT DISTINCT ON (seed) seed, id
      FROM generate_series(1, 9000) seed, us_items
     ORDER BY seed, corpq.uncsamp(u, 4, 1, id, seed) DESC),
counts AS (
    SELECT i.id, corpq.uncsamp_weight(i.u, 4, 1) / 9 * 9000 AS expected, count(d.id) AS observed
      FROM us_items i LEFT JOIN draws d USING (id) GROUP BY i.id, i.u)
SELECT sum((observed - expected) ^ 2 / expected) FILTER (WHERE expected > 0) < 16.266 AS chi2_ok,
       sum(observed) FILTER (WHERE expected = 0) AS zero_weight_drawn,
       sum(observed) AS draws
  FROM counts;

-- samples of size 2 (ORDER BY key DESC LIMIT 2): two distinct items each
-- time, and inclusion frequencies match the exact probabilities of sampling
-- without replacement, P(i) = w_i/W + sum_{j<>i} w_j/W * w_i/(W - w_j),
-- within 4 standard errors
WITH samples AS (
    SELECT seed, s.id
      FROM generate_series(1, 9000) seed,
           LATERAL (SELECT id FROM us_items
                     ORDER BY corpq.uncsamp(u, 4, 1, id, seed + 100000) DESC LIMIT 2) s),
w AS (SELECT id, corpq.uncsamp_weight(u, 4, 1) AS w FROM us_items),
exact AS (
    SELECT a.id, a.w / 9 + coalesce(sum(b.w / 9 * a.w / (9 - b.w)), 0) AS p
      FROM w a LEFT JOIN w b ON b.id <> a.id AND b.w > 0 GROUP BY a.id, a.w),
freq AS (SELECT e.id, e.p, count(s.id) / 9000.0 AS f
           FROM exact e LEFT JOIN samples s USING (id) GROUP BY e.id, e.p)
SELECT id, round(p::numeric, 4) AS p_exact,
       abs(f - p) <= 4 * sqrt(p * (1 - p) / 9000) AS within_4se
  FROM freq ORDER BY id;
SELECT bool_and(n = 2 AND d = 2) AS without_replacement
  FROM (SELECT seed, count(*) AS n, count(DISTINCT s.id) AS d
          FROM generate_series(1, 2000) seed,
               LATERAL (SELECT id FROM us_items
                         ORDER BY corpq.uncsamp(u, 4, 1, id, seed) DESC LIMIT 2) s
         GROUP BY seed) t;
-- a budget larger than the positive-weight items: zero weights come last
SELECT array_agg(id ORDER BY k DESC) FILTER (WHERE k < 0) AS tail
  FROM (SELECT id, corpq.uncsamp(u, 4, 1, id, 1) AS k FROM us_items) s;

-- the session-random form: a fresh key each call, in (0, 1)
SELECT count(DISTINCT k) > 990 AS varies, bool_and(k > 0 AND k < 1) AS in_range
  FROM (SELECT corpq.uncsamp(0.5, 1) AS k FROM generate_series(1, 1000)) s;
SELECT corpq.uncsamp(3, 1) AS zero_weight, corpq.uncsamp(NULL, 1) AS null_u;

-- volatility labels as documented
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel, p.proisstrict
  FROM pg_proc p WHERE p.proname IN ('uncsamp', 'uncsamp_weight')
   AND p.pronamespace = 'corpq'::regnamespace ORDER BY p.oid::regprocedure::text COLLATE "C";

DROP TABLE us_items;
