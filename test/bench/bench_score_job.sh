#!/usr/bin/env bash
# corpq.score_job on 1 and 2 threads (issue 40: a job on "threads": 2 should
# run at >= 1.7x its 1-thread rate on 2 cores), preset `small` (vocabulary
# 8000 per side, whitespace tokens) on real en-es pairs from ../shared/corpora
# cut to 30 tokens per side, float32 and its int8 version.  Each job scores
# the same pairs into an empty table; the rate is the job's own pairs_per_s
# (its result), the best of two runs.  For reference the same pairs through
# corpq.score() in one statement (corpq.threads 1 and 2) in the same run.
# Prints figures and ratios; asserts nothing on time.  Run it alone.
# Usage: bench_score_job.sh [--quick]
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -o max_worker_processes=16 -o shared_buffers=256MB -- "$@"

n=4000
[ "${1:-}" = --quick ] && n=1000

q >/dev/null <<SQL
CREATE EXTENSION corpq;
CREATE TABLE raw (id text, domain text, src text, tgt text);
$(corpq_copy_parallel raw)
CREATE TABLE pairs AS
SELECT row_number() OVER (ORDER BY md5(id))::bigint AS id,
       array_to_string((regexp_split_to_array(src, '\s+'))[1:30], ' ') AS src,
       array_to_string((regexp_split_to_array(tgt, '\s+'))[1:30], ' ') AS tgt
  FROM raw;
SELECT corpq.vocab_build('b_src', 'SELECT src FROM pairs', NULL, 8000);
SELECT corpq.vocab_build('b_tgt', 'SELECT tgt FROM pairs', NULL, 8000);
SELECT corpq.model_create('small', '{"preset": "small"}', 'b_src', 'b_tgt', 1);
SELECT corpq.model_quantize('small');
CREATE TABLE p AS SELECT id, src, tgt FROM pairs ORDER BY id LIMIT $n;
SQL
log "CPU: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) cores, $(grep -o 'avx512_vnni\|avx_vnni\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' '); inference kernel $(q -c "SELECT (corpq.blas_info()).inference_kernel"); $n pairs of at most 30+30 tokens"

# job_rate VERSION THREADS: pairs/s of one score_job (its result's pairs_per_s)
job_rate() {
	q >/dev/null -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS s" -c "CREATE TABLE s (id bigint PRIMARY KEY, score float8)"
	local job
	job=$(q -c "SELECT corpq.score_job('$1', 'SELECT id, src, tgt FROM p ORDER BY id', 's', '{\"threads\": $2}')")
	q >/dev/null -c "SELECT corpq.job_wait($job, '3600 s')"
	[ "$(q -c "SELECT state FROM corpq.jobs WHERE id = $job")" = succeeded ] ||
		fail "job $job: $(q -c "SELECT state || ' ' || coalesce(error, '') FROM corpq.jobs WHERE id = $job")"
	q -c "SELECT round((result ->> 'pairs_per_s')::numeric, 1) FROM corpq.jobs WHERE id = $job"
}

# score_rate VERSION THREADS: pairs/s of corpq.score() over the same pairs
score_rate() {
	local t0 t1
	t0=$(date +%s%N)
	q >/dev/null -c "SET corpq.threads = $2" -c "SELECT count(*) FROM corpq.score('$1', 'SELECT id, src, tgt FROM p')"
	t1=$(date +%s%N)
	awk -v n="$n" -v ns="$((t1 - t0))" 'BEGIN { printf "%.1f", n / (ns / 1e9) }'
}

best() { awk 'BEGIN { m = 0 } { if ($1 > m) m = $1 } END { print m }'; }

printf '| version | score_job, 1 thread | score_job, 2 threads | 2 / 1 | score(), 1 thread | score(), 2 threads | 2 / 1 |\n'
printf '| --- | --- | --- | --- | --- | --- | --- |\n'
for v in small@1 small@2; do
	j1=$( (job_rate $v 1; job_rate $v 1) | best)
	j2=$( (job_rate $v 2; job_rate $v 2) | best)
	s1=$( (score_rate $v 1; echo; score_rate $v 1; echo) | best)
	s2=$( (score_rate $v 2; echo; score_rate $v 2; echo) | best)
	label=$([ $v = small@1 ] && echo float32 || echo int8)
	awk -v l="$label" -v j1="$j1" -v j2="$j2" -v s1="$s1" -v s2="$s2" 'BEGIN {
		printf "| %s | %.1f | %.1f | %.2fx | %.1f | %.1f | %.2fx |\n", l, j1, j2, j2 / j1, s1, s2, s2 / s1 }'
done
log "pairs/s; score_job's own rate (its result), score() by wall time of the statement; best of 2"
