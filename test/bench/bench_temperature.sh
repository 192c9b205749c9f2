#!/usr/bin/env bash
# temperature_weights() scaling: time per row as partitions grow 10x longer and
# 10x more numerous, against sum() OVER (PARTITION BY ...) on the same rows in
# the same session (the reference: a built-in window aggregate, linear).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION corpq;
CREATE FUNCTION bench_ms(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; best float8 := 'infinity';
BEGIN
  FOR i IN 1..5 LOOP
    t0 := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM (' || q || ') s';
    best := least(best, extract(epoch FROM clock_timestamp() - t0) * 1000);
  END LOOP;
  RETURN best;
END $$;
CREATE TABLE shape(partitions int, rows_per int);
INSERT INTO shape VALUES (1000, 100), (1000, 1000), (10000, 100);
\echo 'partitions  rows/part   rows   corpq ns/row   sum() ns/row   ratio'
\pset tuples_only on
SELECT format('%10s %10s %8s %13s %14s %7s', partitions, rows_per, partitions * rows_per,
       round((tw * 1e6 / (partitions * rows_per))::numeric, 1),
       round((ref * 1e6 / (partitions * rows_per))::numeric, 1),
       round((tw / ref)::numeric, 2))
FROM (SELECT partitions, rows_per,
        bench_ms(format('SELECT corpq.temperature_weights(g %% 997 + 1, 5) OVER (PARTITION BY p) FROM generate_series(1, %s) p, generate_series(1, %s) g', partitions, rows_per)) AS tw,
        bench_ms(format('SELECT sum(g %% 997 + 1) OVER (PARTITION BY p) FROM generate_series(1, %s) p, generate_series(1, %s) g', partitions, rows_per)) AS ref
      FROM shape) s;
SQL
