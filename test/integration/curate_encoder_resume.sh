#!/usr/bin/env bash
# corpq.curate() that trains an encoder survives a kill -9 of its worker
# after its encoder phase (corpq preloaded): with a clean query of
# CLEAN_PAIRS en-es pairs from the corpora, the two languages, max_seconds
# and encoder_seconds ENCODER_SECONDS, the job trains the lexicon
# "killed_lex", then the encoder "killed_enc" (its BPE model, vocabulary and
# a small encoder, trained by corpq.train()'s loop, checkpoints under the
# job's id), then goes on to the classifier; its worker is killed with
# SIGKILL as soon as the classifier phase has begun (the encoder stored, the
# classifier not: checked).  The server's crash-restart requeues the job;
# the resumed run (attempt 2) must not train the encoder again: the model's
# versions and the job's training log are the same as before the kill, the
# result says "reused" with the same version -- and it must train the
# classifier once, with that encoder (its features list embedding_cosine,
# its models name it), and write every pair with the probability
# pair_quality gives.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -t 1800 -o shared_preload_libraries=corpq -o max_worker_processes=16

CLEAN=${CLEAN_PAIRS:-8000}
N=${CURATE_PAIRS:-2000}
ENC=${ENCODER_SECONDS:-20}

corpq_preloaded_raw
q >/dev/null <<SQL
CREATE TABLE pairs AS
SELECT row_number() OVER (ORDER BY id) AS id, src, tgt
  FROM (SELECT DISTINCT ON (id) id, src, tgt FROM raw ORDER BY id) r;
CREATE TABLE clean AS SELECT src, tgt FROM pairs WHERE id <= $CLEAN;
CREATE TABLE corpus AS SELECT id, src, tgt FROM pairs WHERE id > $CLEAN AND id <= $CLEAN + $N;
INSERT INTO corpus SELECT c.id + 1000000, c.src, d.tgt FROM corpus c JOIN corpus d ON d.id = c.id + 7
 WHERE c.id % 10 = 0;
CREATE TABLE killed (id bigint, decision text, probability float8, reasons text[]);
SQL
total=$(q -c "SELECT count(*) FROM corpus")
log "$CLEAN clean pairs, $total pairs to curate, the encoder trained $ENC s"

job=$(q -c "SELECT corpq.curate('corpus', 'killed', '{\"clean_query\": \"SELECT src, tgt FROM clean\",
              \"src_lang\": \"en\", \"tgt_lang\": \"es\", \"max_seconds\": 1200, \"encoder_seconds\": $ENC}')")
# the classifier's phases come after the encoder is stored
for _ in $(seq 60000); do
	s=$(q -c "SELECT CASE WHEN p.phase IN ('making noise', 'computing features') THEN 'ok'
	                      WHEN j.state IN ('queued', 'running') THEN 'wait' ELSE 'ended' END
	            FROM corpq.jobs j LEFT JOIN corpq.job_progress p USING (id) WHERE j.id = $job")
	[ "$s" = wait ] || break
	sleep 0.02
done
[ "$s" = ok ] || fail "job $job reached no classifier phase: $(q -c "SELECT state || ' ' || coalesce(error, '') FROM corpq.jobs WHERE id = $job")"
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job AND state = 'running'")
[ -n "$pid" ] || fail "job $job has no running worker"
kill -9 "$pid"
sleep 1
cluster_ready
versions=$(q -c "SELECT string_agg(v.version || ':' || v.source || ':' || v.created, ',' ORDER BY v.version)
                  FROM corpq.model_versions v JOIN corpq.model_catalog m ON m.id = v.model WHERE m.name = 'killed_enc'")
latest=$(q -c "SELECT 'killed_enc@' || max(v.version) FROM corpq.model_versions v JOIN corpq.model_catalog m ON m.id = v.model
                WHERE m.name = 'killed_enc'")
logrows=$(q -c "SELECT count(*) || ' ' || max(step) FROM corpq.train_log WHERE job = $job")
case "$logrows" in 0\ *) fail "the encoder logged no update before the kill" ;; esac
classifiers=$(q -c "SELECT count(*) FROM corpq.classifier_catalog WHERE name = 'killed_pq'")
[ "$classifiers" = 0 ] || fail "the classifier was stored before the kill: raise CLEAN_PAIRS"
log "kill -9 of worker $pid of job $job in its classifier phase (encoder $latest; versions $versions; log rows, last step: $logrows)"

[ "$(q -c "SELECT corpq.job_wait($job, '1800 s')")" = succeeded ] \
	|| fail "killed: $(q -c "SELECT state || ' ' || coalesce(error, '') FROM corpq.jobs WHERE id = $job")"
r=$(q -c "SELECT attempts || ' ' || (result -> 'training' -> 'lexicon' ->> 'reused') || ' ' ||
                 (result -> 'training' -> 'encoder' ->> 'reused') || ' ' ||
                 (result -> 'training' -> 'encoder' ->> 'name') || ' ' ||
                 (result -> 'training' -> 'classifier' ->> 'reused') || ' ' ||
                 (result -> 'training' -> 'classifier' ->> 'name') || ' ' ||
                 ((result -> 'training' -> 'classifier' -> 'features') ? 'embedding_cosine') || ' ' || (result ->> 'rows')
            FROM corpq.jobs WHERE id = $job")
[ "$r" = "2 true true $latest false killed_pq@1 true $total" ] || fail "killed: result '$r'"
after=$(q -c "SELECT string_agg(v.version || ':' || v.source || ':' || v.created, ',' ORDER BY v.version)
               FROM corpq.model_versions v JOIN corpq.model_catalog m ON m.id = v.model WHERE m.name = 'killed_enc'")
[ "$after" = "$versions" ] || fail "the encoder was trained again: versions '$versions' before, '$after' after"
logafter=$(q -c "SELECT count(*) || ' ' || max(step) FROM corpq.train_log WHERE job = $job")
[ "$logafter" = "$logrows" ] || fail "the encoder was trained again: log '$logrows' before, '$logafter' after"
m=$(q -c "SELECT v.models ->> 'encoder' FROM corpq.classifier_versions v JOIN corpq.classifier_catalog c ON c.id = v.model
           WHERE c.name = 'killed_pq' AND v.job = $job")
[ "$m" = "$latest" ] || fail "the classifier's encoder is '$m', not $latest"
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
log "resumed (attempt 2) with the encoder it stored before the kill, no update made, the classifier trained once with it: $c"
log "$(q -c "SELECT format('encoder %s: %s updates, %s s of training; kept %s, dropped %s (classifier %s); held-out clean kept %s, min AUC %s',
	result -> 'training' -> 'encoder' ->> 'name', result -> 'training' -> 'encoder' ->> 'steps',
	result -> 'training' -> 'encoder' ->> 'training_seconds',
	result ->> 'kept', result ->> 'dropped', result ->> 'classifier',
	result -> 'training' -> 'classifier' -> 'heldout' ->> 'clean_kept',
	result -> 'training' -> 'classifier' -> 'heldout' ->> 'min_auc') FROM corpq.jobs WHERE id = $job")"
log "$(q -c "SELECT format('corpus pairs kept %s of %s, misaligned (a pair 7 ids on) dropped %s of %s',
	count(*) FILTER (WHERE id < 1000000 AND decision = 'keep'), count(*) FILTER (WHERE id < 1000000),
	count(*) FILTER (WHERE id >= 1000000 AND decision = 'drop'), count(*) FILTER (WHERE id >= 1000000)) FROM killed")"
log ok
