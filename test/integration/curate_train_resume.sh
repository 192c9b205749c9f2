#!/usr/bin/env bash
# corpq.curate() that trains what it needs survives a kill -9 of its worker
# after its lexicon phase (corpq preloaded): with only a clean query of
# CLEAN_PAIRS en-es pairs from the corpora and the two languages, the job
# trains the lexicon "killed_lex", stores it in its own transaction, and
# goes on to the classifier; its worker is killed with SIGKILL as soon as
# the lexicon is in the catalog (before the classifier is: checked).  The
# server's crash-restart requeues the job; the resumed run (attempt 2) must
# find the lexicon it stored -- not train it again: the catalog row is the
# same (version 1, the same created time, this job's id) and the result
# says "reused" -- train the classifier once, and finish: every pair of the
# corpus has a row, and every pair the classifier judged has the
# probability pair_quality gives with the classifier the job pinned.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -t 1200 -o shared_preload_libraries=corpq -o max_worker_processes=16

CLEAN=${CLEAN_PAIRS:-8000}
N=${CURATE_PAIRS:-3000}

corpq_preloaded_raw
q >/dev/null <<SQL
CREATE TABLE pairs AS
SELECT row_number() OVER (ORDER BY id) AS id, src, tgt
  FROM (SELECT DISTINCT ON (id) id, src, tgt FROM raw ORDER BY id) r;
-- the clean pairs the job trains on, and another N pairs to curate, with noise
CREATE TABLE clean AS SELECT src, tgt FROM pairs WHERE id <= $CLEAN;
CREATE TABLE corpus AS SELECT id, src, tgt FROM pairs WHERE id > $CLEAN AND id <= $CLEAN + $N;
INSERT INTO corpus SELECT c.id + 1000000, c.src, d.tgt FROM corpus c JOIN corpus d ON d.id = c.id + 7
 WHERE c.id % 10 = 0;
CREATE TABLE killed (id bigint, decision text, probability float8, reasons text[]);
SQL
total=$(q -c "SELECT count(*) FROM corpus")
log "$CLEAN clean pairs, $total pairs to curate"

job=$(q -c "SELECT corpq.curate('corpus', 'killed', '{\"clean_query\": \"SELECT src, tgt FROM clean\",
              \"src_lang\": \"en\", \"tgt_lang\": \"es\"}')")
for _ in $(seq 30000); do
	s=$(q -c "SELECT CASE WHEN EXISTS (SELECT 1 FROM corpq.lexicons WHERE name = 'killed_lex' AND job = id) THEN 'ok'
	                      WHEN state IN ('queued', 'running') THEN 'wait' ELSE 'ended' END
	            FROM corpq.jobs WHERE id = $job")
	[ "$s" = wait ] || break
	sleep 0.02
done
[ "$s" = ok ] || fail "job $job stored no lexicon: $(q -c "SELECT state || ' ' || coalesce(error, '') FROM corpq.jobs WHERE id = $job")"
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job AND state = 'running'")
[ -n "$pid" ] || fail "job $job has no running worker"
phase=$(q -c "SELECT coalesce(max(phase), '') FROM corpq.job_progress WHERE id = $job")
kill -9 "$pid"
sleep 1
cluster_ready
lexicon=$(q -c "SELECT version || ' ' || created FROM corpq.lexicons WHERE name = 'killed_lex'")
classifiers=$(q -c "SELECT count(*) FROM corpq.classifier_catalog WHERE name = 'killed_pq'")
[ "$classifiers" = 0 ] || fail "the classifier was stored before the kill: raise CLEAN_PAIRS"
log "kill -9 of worker $pid of job $job after its lexicon phase (lexicon version, created: $lexicon; phase just before the kill: $phase)"

[ "$(q -c "SELECT corpq.job_wait($job, '1200 s')")" = succeeded ] \
	|| fail "killed: $(q -c "SELECT state || ' ' || coalesce(error, '') FROM corpq.jobs WHERE id = $job")"
r=$(q -c "SELECT attempts || ' ' || (result -> 'training' -> 'lexicon' ->> 'reused') || ' ' ||
                 (result -> 'training' -> 'lexicon' ->> 'name') || ' ' ||
                 (result -> 'training' -> 'classifier' ->> 'reused') || ' ' ||
                 (result -> 'training' -> 'classifier' ->> 'name') || ' ' || (result ->> 'rows')
            FROM corpq.jobs WHERE id = $job")
[ "$r" = "2 true killed_lex@1 false killed_pq@1 $total" ] || fail "killed: result '$r'"
after=$(q -c "SELECT version || ' ' || created FROM corpq.lexicons WHERE name = 'killed_lex' AND job = $job")
[ "$after" = "$lexicon" ] || fail "the lexicon was trained again: '$lexicon' before, '$after' after"
v=$(q -c "SELECT count(*) FROM corpq.classifier_versions v JOIN corpq.classifier_catalog c ON c.id = v.model
           WHERE c.name = 'killed_pq' AND v.job = $job")
[ "$v" = 1 ] || fail "$v classifier versions"
c=$(q -c "SELECT (SELECT count(DISTINCT id) FROM killed) || ' rows, ' ||
                 count(*) FILTER (WHERE k.probability IS NOT NULL) || ' judged, ' ||
                 count(*) FILTER (WHERE k.probability IS NOT NULL
                                  AND k.probability IS DISTINCT FROM corpq.pair_quality('killed_pq@1', c.src, c.tgt)) || ' differ, ' ||
                 count(*) FILTER (WHERE k.probability IS NOT NULL
                                  AND (k.decision = 'keep') <> (k.probability >= 0.5)) || ' misdecided'
            FROM killed k JOIN corpus c USING (id)")
case "$c" in
"$total rows, "*" judged, 0 differ, 0 misdecided") ;;
*) fail "killed: $c" ;;
esac
log "resumed (attempt 2) with the lexicon it stored before the kill, trained the classifier once: $c"
log "$(q -c "SELECT format('kept %s, dropped %s (classifier %s); held-out clean kept %s, min AUC %s',
	result ->> 'kept', result ->> 'dropped', result ->> 'classifier',
	result -> 'training' -> 'classifier' -> 'heldout' ->> 'clean_kept',
	result -> 'training' -> 'classifier' -> 'heldout' ->> 'min_auc') FROM corpq.jobs WHERE id = $job")"
log "$(q -c "SELECT format('corpus pairs kept %s of %s, misaligned (a pair 7 ids on) dropped %s of %s',
	count(*) FILTER (WHERE id < 1000000 AND decision = 'keep'), count(*) FILTER (WHERE id < 1000000),
	count(*) FILTER (WHERE id >= 1000000 AND decision = 'drop'), count(*) FILTER (WHERE id >= 1000000)) FROM killed")"
log ok
