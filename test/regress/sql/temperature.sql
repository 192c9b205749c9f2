-- corpq.temperature_weights(size, tau): temperature-scaled corpus shares.
CREATE TEMP TABLE sizes(grp text, domain text, n bigint);
INSERT INTO sizes VALUES
  ('a', 'bible', 20000), ('a', 'l10n', 4000), ('a', 'ddtp', 1000),
  ('b', 'x', 1), ('b', 'y', 3);

-- tau = 1 is proportional: 0.8, 0.16, 0.04
SELECT domain, round(corpq.temperature_weights(n, 1) OVER (PARTITION BY grp)::numeric, 6) AS w
FROM sizes WHERE grp = 'a' ORDER BY domain;

-- tau = infinity is uniform
SELECT domain, round(corpq.temperature_weights(n, 'infinity') OVER ()::numeric, 6) AS w
FROM sizes WHERE grp = 'a' ORDER BY domain;

-- tau = 5 against the direct formula q^(1/tau) / sum q^(1/tau), per partition
WITH q AS (
  SELECT grp, domain, n::float8 / sum(n) OVER (PARTITION BY grp) AS q,
         corpq.temperature_weights(n, 5) OVER (PARTITION BY grp) AS w
  FROM sizes)
SELECT grp, domain, round(w::numeric, 6) AS w,
       abs(w - power(q, 0.2) / sum(power(q, 0.2)) OVER (PARTITION BY grp)) < 1e-12 AS matches_formula
FROM q ORDER BY grp, domain;

-- shares sum to one in every partition, and flatten as tau grows
SELECT grp, tau, round(sum(w)::numeric, 12) AS total, round(max(w)::numeric, 6) AS largest
FROM (SELECT grp, t.tau, corpq.temperature_weights(n, t.tau) OVER (PARTITION BY grp, t.tau) AS w
      FROM sizes, (VALUES (1.0::float8), (2), (5), (100), (1e6)) t(tau)) s
GROUP BY grp, tau ORDER BY grp, tau;

-- extreme sizes stay finite: 2^62 against 1
SELECT n, corpq.temperature_weights(n, 1) OVER () AS w
FROM (VALUES (4611686018427387904::bigint), (1)) v(n) ORDER BY n;
SELECT n, round(corpq.temperature_weights(n, 1e6) OVER ()::numeric, 6) AS w
FROM (VALUES (4611686018427387904::bigint), (1)) v(n) ORDER BY n;

-- NULL sizes get NULL and are left out of the sums; empty corpora get 0
SELECT domain, round(corpq.temperature_weights(n, 1) OVER ()::numeric, 6) AS w
FROM (VALUES ('a', 3::bigint), ('b', NULL), ('c', 1), ('d', 0)) v(domain, n) ORDER BY domain;
SELECT domain, round(corpq.temperature_weights(n, 'infinity') OVER ()::numeric, 6) AS w
FROM (VALUES ('a', 3::bigint), ('b', NULL), ('c', 1), ('d', 0)) v(domain, n) ORDER BY domain;
SELECT corpq.temperature_weights(n, NULL) OVER () FROM (VALUES (1::bigint)) v(n);
SELECT corpq.temperature_weights(n, 1) OVER () FROM (VALUES (NULL::bigint), (NULL)) v(n);

-- a large partition: one pass, shares sum to one
SELECT round(sum(w)::numeric, 9) AS total, count(*) FROM (
  SELECT corpq.temperature_weights(g, 3) OVER () AS w FROM generate_series(1, 100000) g) s;

-- errors
SELECT corpq.temperature_weights(n, 0) OVER () FROM sizes;
SELECT corpq.temperature_weights(n, -2) OVER () FROM sizes;
SELECT corpq.temperature_weights(n, 'NaN') OVER () FROM sizes;
SELECT corpq.temperature_weights(n, 1) OVER () FROM (VALUES (5::bigint), (-1)) v(n);
SELECT corpq.temperature_weights(n, 1) OVER () FROM (VALUES (0::bigint), (0)) v(n);
SELECT corpq.temperature_weights(n, tau) OVER () FROM (VALUES (5::bigint, 1.0::float8), (3, 2.0)) v(n, tau);
