#!/usr/bin/env bash
# Evaluation metrics on the real en-es pairs (the corpora test/lib.sh finds:
# ../shared/corpora has ~80k rows;
# hypotheses = the Spanish side with known edits, references = the Spanish
# side): corpq.bleu() and corpq.chrf() in rows/s against a plain count(*)
# scan and a scan that reads both texts, 0 against 2 parallel workers (best
# of 3, alternating), paired_bootstrap on a test-set-sized sample; then the
# core against the plain-Python reference (metrics_core.py).  Needs the
# extension installed (make install).  No figure is asserted.
#   Usage: bench_metrics.sh [n_pairs]     (default: all)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. test/bench/bench_lib.sh
corpq_corpora
corpq_in_cluster -o max_worker_processes=16 -o max_parallel_workers=8 -- "$@"
N=${1:-1000000}
log "CPU: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores); the metrics use no BLAS"
SQL=$(mktemp /tmp/bench_metrics.XXXXXX.sql)
trap 'rm -f "$SQL"' EXIT
{
	raw_sql
	cat <<SQL
-- known edits, by row: two words swapped, a word dropped, a word
-- substituted by the next row's first word, or left as it is
CREATE TABLE pairs AS
SELECT n AS id, domain, tgt AS ref,
       CASE n % 4 WHEN 0 THEN regexp_replace(tgt, '(\\S+) (\\S+)', '\\2 \\1')
                  WHEN 1 THEN regexp_replace(tgt, ' \\S+', '')
                  WHEN 2 THEN regexp_replace(tgt, ' \\S+ ', ' ' || split_part(lead(tgt) OVER (ORDER BY n), ' ', 1) || ' ')
                  ELSE tgt END AS hyp
  FROM raw ORDER BY md5(n::text) LIMIT $N;   -- a spread of every domain when cut
ANALYZE pairs;
SQL
	cat <<'SQL'
SELECT count(*) AS pairs, pg_size_pretty(pg_total_relation_size('pairs')) AS table_size FROM pairs;
SQL
	cat test/bench/race.sql
	cat <<'SQL'
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
-- the scans every run pays: count(*) reads no text; the second reads both
SET max_parallel_workers_per_gather = 0;
SELECT best_ms('SELECT count(*) FROM pairs', 3) AS scan_ms \gset
SELECT best_ms('SELECT sum(length(hyp) + length(ref)) FROM pairs', 3) AS read_ms \gset
CREATE TEMP TABLE results (what text, ms_0 float8, ms_2 float8);
INSERT INTO results SELECT 'bleu(hyp, ref)', * FROM race('SELECT corpq.bleu(hyp, ref) FROM pairs', 3);
INSERT INTO results SELECT 'bleu intl, lowercase', * FROM race($q$SELECT corpq.bleu(hyp, ref, '{"tokenize": "intl", "lowercase": true}') FROM pairs$q$, 3);
INSERT INTO results SELECT 'bleu per domain', * FROM race('SELECT domain, corpq.bleu(hyp, ref) FROM pairs GROUP BY domain', 3);
INSERT INTO results SELECT 'chrf(hyp, ref)', * FROM race('SELECT corpq.chrf(hyp, ref) FROM pairs', 3);
INSERT INTO results SELECT 'chrf++ (word_order 2)', * FROM race($q$SELECT corpq.chrf(hyp, ref, '{"word_order": 2}') FROM pairs$q$, 3);
INSERT INTO results SELECT 'sum(sentence_bleu)', * FROM race('SELECT sum(corpq.sentence_bleu(hyp, ref)) FROM pairs', 3);
-- the cost of the bigint[] state itself: one-character texts, so the core
-- does almost nothing; against the same core calls summed as float8 and
-- against the texts cut without any metric
INSERT INTO results SELECT 'state: bleu(1 char)', * FROM race('SELECT corpq.bleu(left(hyp, 1), left(ref, 1)) FROM pairs', 3);
INSERT INTO results SELECT 'state: sum(sentence_bleu(1 char))', * FROM race('SELECT sum(corpq.sentence_bleu(left(hyp, 1), left(ref, 1))) FROM pairs', 3);
INSERT INTO results SELECT 'state: sum(length(1 char))', * FROM race('SELECT sum(length(left(hyp, 1)) + length(left(ref, 1))) FROM pairs', 3);
SELECT (SELECT count(*) FROM pairs) AS n \gset
SELECT round(:scan_ms::numeric, 1) AS count_star_ms, round(:read_ms::numeric, 1) AS read_texts_ms,
       round(:n / :scan_ms * 1000) AS count_star_rows_per_s;
SELECT what, round(ms_0::numeric, 1) AS ms_0_workers, round(ms_2::numeric, 1) AS ms_2_workers,
       round(:n / ms_0 * 1000) AS rows_per_s_0, round(:n / ms_2 * 1000) AS rows_per_s_2,
       round((ms_0 / ms_2)::numeric, 2) AS speedup_2_workers,
       round((ms_0 / :scan_ms)::numeric, 1) AS x_count_star,
       round(((ms_0 - :read_ms) / :n * 1000)::numeric, 2) AS us_per_row_over_reading
  FROM results ORDER BY what;
-- paired bootstrap on a test-set-sized sample (3000 rows): the rows are
-- gathered per sentence and the resamples run in the final function
SET max_parallel_workers_per_gather = 0;
SELECT round(best_ms('SELECT corpq.paired_bootstrap(hyp, ref, ref, 1000) FROM (SELECT * FROM pairs LIMIT 3000) s', 3)::numeric, 1)
       AS paired_bootstrap_3000_rows_1000_resamples_ms,
       round(best_ms('SELECT corpq.paired_bootstrap(hyp, ref, ref, 1000) FROM pairs', 1)::numeric, 1)
       AS paired_bootstrap_all_rows_1000_resamples_ms;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT domain, corpq.bleu(hyp, ref) FROM pairs GROUP BY domain;
SELECT domain, count(*), round(corpq.bleu(hyp, ref)::numeric, 2) AS bleu, round(corpq.chrf(hyp, ref)::numeric, 2) AS chrf
  FROM pairs GROUP BY domain ORDER BY domain;
SELECT corpq.bleu_signature('{}'), corpq.chrf_signature('{}');
SQL
} >"$SQL"
psql -X -q -v ON_ERROR_STOP=1 -f "$SQL"

echo
log "core (ctypes) against the plain-Python reference"
[ -f test/libcorpqcore.so ] || make test/libcorpqcore.so >/dev/null
/usr/bin/python3 test/bench/metrics_core.py "$(( N < 20000 ? N : 20000 ))"
