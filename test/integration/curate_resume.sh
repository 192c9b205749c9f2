#!/usr/bin/env bash
# corpq.curate() survives a kill -9 of its worker (corpq preloaded): on a
# corpus of some 30,000 en-es pairs from the corpora, with exact and near
# duplicates, copies, German-less language errors (English targets) and NULL
# sides mixed in, one uninterrupted run writes the reference table; a second
# run, in chunks of CURATE_CHUNK rows, has its worker killed with SIGKILL
# after a few chunks (mid-job: checked), the server's crash-restart requeues
# it, it resumes after its last committed chunk (attempts 2,
# resumed_from_row > 0), and its table equals the reference exactly: every
# id once, the same decision, probability and reasons.  Duplicate groups
# span the chunks (a group's first id far from the others), so the resumed
# run must read the duplicate groups of the whole corpus, not of its chunks.
# CURATE_PAIRS sets the corpus size (30,000 by default).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -t 1200 -o shared_preload_libraries=corpq -o max_worker_processes=16

N=${CURATE_PAIRS:-30000}
CHUNK=${CURATE_CHUNK:-20}
OPTS="{\"src_lang\": \"en\", \"tgt_lang\": \"es\", \"chunk_rows\": $CHUNK}"
state_of() {
	q -c "SELECT format('%s, %s attempt(s), %s chunks%s', state, attempts,
	                    (SELECT count(*) FROM corpq.row_job_chunks WHERE job = id), ', error ' || error)
	        FROM corpq.jobs WHERE id = $1"
}

corpq_preloaded_raw
q >/dev/null <<SQL
-- the first N distinct ids, renumbered by 10 (room for the noise's ids)
CREATE TABLE corpus AS
SELECT 10 * row_number() OVER (ORDER BY id) AS id, src, tgt
  FROM (SELECT DISTINCT ON (id) id, src, tgt FROM raw ORDER BY id) r
 ORDER BY id LIMIT $N;
-- exact duplicates of early pairs, with late ids (another chunk)
INSERT INTO corpus SELECT id + 10 * $N + 1, src, tgt FROM corpus WHERE id % 130 = 0;
-- near duplicates: case and punctuation
INSERT INTO corpus SELECT id + 2, upper(regexp_replace(src, '[[:punct:]]', '', 'g')),
                          upper(regexp_replace(tgt, '[[:punct:]]', '', 'g'))
  FROM corpus WHERE id % 170 = 0 AND id <= 10 * $N;
-- copies, English targets, NULL sides
INSERT INTO corpus SELECT id + 3, src, src FROM corpus WHERE id % 190 = 0 AND id <= 10 * $N;
INSERT INTO corpus SELECT c.id + 4, c.src, e.src FROM corpus c JOIN corpus e ON e.id = c.id + 50
 WHERE c.id % 230 = 0 AND c.id <= 10 * $N - 50;
INSERT INTO corpus SELECT id + 5, CASE WHEN id % 2 = 0 THEN src END, NULL FROM corpus WHERE id % 310 = 0 AND id <= 10 * $N;
CREATE TABLE reference (id bigint, decision text, probability float8, reasons text[]);
CREATE TABLE killed (id bigint, decision text, probability float8, reasons text[]);
SQL
total=$(q -c "SELECT count(*) FROM corpus")
log "$total pairs ($N from the corpora and their noise); chunks of $CHUNK rows"

# ---- the reference: one uninterrupted run ----
t0=$(date +%s)
job=$(q -c "SELECT corpq.curate('corpus', 'reference', '$OPTS')")
[ "$(q -c "SELECT corpq.job_wait($job, '1200 s')")" = succeeded ] || fail "reference: $(state_of "$job")"
log "reference run in $(($(date +%s) - t0)) s: $(q -c "SELECT format('kept %s, dropped %s: null_side %s, empty %s, rule %s, langid %s, copy %s, duplicate %s, near_duplicate %s',
	result ->> 'kept', result ->> 'dropped', result ->> 'null_side', result ->> 'empty', result ->> 'rule',
	result ->> 'langid', result ->> 'copy', result ->> 'duplicate', result ->> 'near_duplicate') FROM corpq.jobs WHERE id = $job")"
# the noise is there and found: every kind of reason, duplicates across the corpus
r=$(q -c "SELECT (result ->> 'duplicate')::int > 0 AND (result ->> 'near_duplicate')::int > 0
                 AND (result ->> 'copy')::int > 0 AND (result ->> 'langid')::int > 0
                 AND (result ->> 'null_side')::int > 0 AND (result ->> 'rows')::int = $total
            FROM corpq.jobs WHERE id = $job")
[ "$r" = t ] || fail "reference: a reason kind is missing: $(q -c "SELECT result FROM corpq.jobs WHERE id = $job")"
far=$(q -c "SELECT count(*) FROM reference WHERE reasons[1] LIKE 'duplicate_of:%'
               AND id - split_part(reasons[1], ':', 2)::bigint > 10 * $CHUNK * 10")
[ "$far" -gt 0 ] || fail "no duplicate names a pair chunks away"

# ---- kill -9 of the worker after a few chunks ----
job=$(q -c "SELECT corpq.curate('corpus', 'killed', '$OPTS')")
for _ in $(seq 12000); do
	s=$(q -c "SELECT CASE WHEN (SELECT count(*) FROM corpq.row_job_chunks WHERE job = id) >= 5 THEN 'ok'
	                      WHEN state IN ('queued', 'running') THEN 'wait' ELSE 'ended' END
	            FROM corpq.jobs WHERE id = $job")
	[ "$s" = wait ] || break
	sleep 0.02
done
[ "$s" = ok ] || fail "job $job did not commit 5 chunks: $(state_of "$job")"
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job AND state = 'running'")
[ -n "$pid" ] || fail "job $job has no running worker: $(state_of "$job")"
kill -9 "$pid"
sleep 1
cluster_ready
at_kill=$(q -c "SELECT max(rows_done) FROM corpq.row_job_chunks WHERE job = $job")
[ "$at_kill" -lt "$total" ] || fail "the job had finished before the kill ($at_kill rows): raise CURATE_PAIRS"
log "kill -9 of worker $pid of job $job with $at_kill of $total rows committed"
[ "$(q -c "SELECT corpq.job_wait($job, '1200 s')")" = succeeded ] || fail "killed: $(state_of "$job")"
r=$(q -c "SELECT attempts || ' ' || (result ->> 'resumed_from_row') || ' ' || (result ->> 'rows') FROM corpq.jobs WHERE id = $job")
read -r attempts from rows <<<"$r"
[ "$attempts" = 2 ] && [ "$from" -ge "$at_kill" ] && [ $((from % CHUNK)) = 0 ] && [ "$rows" = "$total" ] \
	|| fail "killed: result '$r' (committed at the kill: $at_kill)"

# ---- the resumed table equals the reference ----
c=$(q -c "SELECT (SELECT count(*) FROM killed) || ' rows, ' ||
                 (SELECT count(*) - count(DISTINCT id) FROM killed) || ' duplicated, ' ||
                 (SELECT count(*) FROM (SELECT * FROM reference EXCEPT ALL SELECT * FROM killed) d) || ' missing, ' ||
                 (SELECT count(*) FROM (SELECT * FROM killed EXCEPT ALL SELECT * FROM reference) d) || ' other'")
[ "$c" = "$total rows, 0 duplicated, 0 missing, 0 other" ] || fail "killed differs from the reference: $c"
log "resumed from row $from (attempt 2): the table equals the uninterrupted run's, $c"
log ok
