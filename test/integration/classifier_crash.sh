#!/usr/bin/env bash
# A classifier_train job whose worker is killed with SIGKILL mid-training
# (issue 52): the kind is restartable and writes nothing before its final
# transaction, so recovery requeues it after the crash-restart, the second
# attempt finishes, and the catalog holds exactly one valid version (number
# 1, written by that job, usable by pair_quality), nothing from the killed
# attempt.  Waits on the job's states and progress, never on timings.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 900 -o shared_preload_libraries=corpq -o max_worker_processes=16

state_of() { q -c "SELECT state || ' attempts=' || attempts || ' crash_requeues=' || crash_requeues || coalesce(' error=' || error, '') FROM corpq.jobs WHERE id = $1"; }
# wait until the job is past reading: computing features or training
wait_busy() {
	for _ in $(seq 3000); do
		[ "$(q -c "SELECT count(*) FROM corpq.job_progress WHERE id = $1 AND phase IN ('computing features', 'training')" 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	fail "job $1 never reached its features or training: $(state_of "$1")"
}

q -c "CREATE EXTENSION corpq"
[ "$(q -c "SHOW shared_preload_libraries")" = corpq ] || fail "corpq not preloaded"
# 20000 word-for-word en-es pairs of 3 to 12 words
q -c "CREATE TABLE words (k int, en text, es text)"
q -c "INSERT INTO words SELECT k - 1, en, es FROM unnest(
        ARRAY['the', 'dog', 'cat', 'house', 'table', 'runs', 'sleeps', 'falls', 'big', 'small',
              'red', 'green', 'today', 'here', 'now', 'water', 'bread', 'eats', 'sees', 'old'],
        ARRAY['el', 'perro', 'gato', 'casa', 'mesa', 'corre', 'duerme', 'cae', 'grande', 'chico',
              'rojo', 'verde', 'hoy', 'aqui', 'ahora', 'agua', 'pan', 'come', 've', 'viejo'])
        WITH ORDINALITY u(en, es, k)"
q -c "CREATE TABLE bitext AS SELECT g AS id,
        (SELECT string_agg(w.en, ' ' ORDER BY i) FROM generate_series(1, 3 + g % 10) i
           JOIN words w ON w.k = (g * 7 + i * 13 + (g % 11) * i * i) % 20) AS src,
        (SELECT string_agg(w.es, ' ' ORDER BY i) FROM generate_series(1, 3 + g % 10) i
           JOIN words w ON w.k = (g * 7 + i * 13 + (g % 11) * i * i) % 20) AS tgt
      FROM generate_series(1, 20000) g"

job=$(q -c "SELECT corpq.classifier_train('crashy', 'SELECT src, tgt FROM bitext',
              '{\"src_lang\": \"en\", \"tgt_lang\": \"es\", \"seed\": 9}')")
wait_busy "$job"
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
phase=$(q -c "SELECT phase FROM corpq.job_progress WHERE id = $job")
[ "$(q -c "SELECT count(*) FROM corpq.classifier_catalog")" = 0 ] || fail "a catalog row before the final transaction"
log "kill -9 of worker $pid of job $job (phase: $phase)"
kill -9 "$pid"
sleep 1
cluster_ready
# recovery requeues it once; the second attempt runs to the end
for _ in $(seq 600); do
	[ "$(q -c "SELECT state <> 'running' OR worker_pid IS DISTINCT FROM $pid FROM corpq.jobs WHERE id = $job" 2>/dev/null)" = t ] && break
	sleep 0.1
done
[ "$(q -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "after the kill: $(state_of "$job")"
[ "$(q -c "SELECT attempts || ' ' || crash_requeues FROM corpq.jobs WHERE id = $job")" = "2 1" ] \
	|| fail "not run again exactly once: $(state_of "$job")"
# exactly one version, the job's, whole and usable
[ "$(q -c "SELECT count(*) FROM corpq.classifier_catalog")" = 1 ] || fail "catalog rows: $(q -c "SELECT count(*) FROM corpq.classifier_catalog")"
[ "$(q -c "SELECT string_agg(version || ' ' || (job = $job), ',') FROM corpq.classifier_versions")" = "1 true" ] \
	|| fail "versions: $(q -c "SELECT string_agg(version || ' job ' || job, ',') FROM corpq.classifier_versions")"
[ "$(q -c "SELECT last_version FROM corpq.issued_versions WHERE catalog = 'corpq.classifier_catalog' AND name = 'crashy'")" = 1 ] \
	|| fail "a version number was issued by the killed attempt"
[ "$(q -c "SELECT (result ->> 'version') || ' ' || (result -> 'report' ->> 'clean_pairs') FROM corpq.jobs WHERE id = $job")" = "1 20000" ] \
	|| fail "result: $(q -c "SELECT result FROM corpq.jobs WHERE id = $job")"
[ "$(q -c "SELECT count(*) FROM bitext WHERE id <= 200 AND corpq.pair_quality('crashy@1', src, tgt) BETWEEN 0 AND 1")" = 200 ] \
	|| fail "pair_quality on the version"
[ "$(q -c "SELECT avg((corpq.pair_quality('crashy', src, tgt) > corpq.pair_quality('crashy', src, src))::int) > 0.95 FROM bitext WHERE id <= 200")" = t ] \
	|| fail "the version does not tell a pair from its copy"
log "killed in phase $phase; $(state_of "$job"); one version, usable"
