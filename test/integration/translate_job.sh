#!/usr/bin/env bash
# Translation jobs (corpq preloaded), run by an ordinary login role into its
# own table, on a random tiny model (beam search, and sampling):
#   ref:      uninterrupted, in chunks; live progress (sentences/s, tokens/s,
#             ETA) while it runs; the rows equal translate_rows() over the
#             same query;
#   killed:   its worker is killed with SIGKILL after its first chunks (a
#             crash-restart): the job is requeued, resumes after its last
#             committed chunk (attempts = 2, resumed_from_row = the rows of
#             the chunks committed before the kill), and the target holds
#             exactly ref's rows (no row twice, none missing, the same
#             hypotheses and scores), for beam search and for sampling;
#   cancelled: job_cancel after some chunks: 'cancelled', the committed
#             chunks stay (and equal ref's first rows), nothing else.
# The job runs 3000 sentences in about a second, faster than a shell polls on
# a loaded machine, so the jobs stop at a gate: a trigger on their target
# waits, at the first row of the third chunk, for an advisory lock the test
# holds; the progress is read, and the kill or cancel reaches the job, while it
# waits there after exactly two committed chunks.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 1200 -o shared_preload_libraries=corpq -o max_worker_processes=16

qa() { psql -X -v ON_ERROR_STOP=1 -Atq -U tj_alice "$@"; }

# N sentences of 4..12 words; chunks of CHUNK rows
N=3000
CHUNK=150
BEAM='{"beam": 4, "max_len_a": 1.5, "max_len_b": 2, "min_len": 3, "chunk_rows": 150, "batch": 16, "threads": 1}'
SAMPLE='{"search": "sample", "beam": 2, "temperature": 1.3, "seed": 11, "max_len_a": 1.5, "max_len_b": 2, "chunk_rows": 150, "batch": 16, "threads": 1}'

q -c "CREATE EXTENSION corpq"
q <<SQL
CREATE ROLE tj_alice LOGIN PASSWORD '$PGPASSWORD';
GRANT CREATE ON SCHEMA public TO tj_alice;
SQL
qa >/dev/null <<SQL
CREATE TABLE tj_src AS
SELECT g::bigint AS id,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729) % 97), ' ' ORDER BY k)
          FROM generate_series(1, 4 + g % 9) k) AS src,
       (SELECT string_agg('v' || ((g * 31 + k * 7) % 89), ' ' ORDER BY k)
          FROM generate_series(1, 4 + g % 9) k) AS tgt
  FROM generate_series(1, $N) g;
SELECT corpq.vocab_build('tj_sv', 'SELECT src FROM tj_src');
SELECT corpq.vocab_build('tj_tv', 'SELECT tgt FROM tj_src');
SELECT corpq.model_create('tj_m', '{"preset": "tiny", "max_positions": 40}', 'tj_sv', 'tj_tv', 5);
CREATE TABLE ref_beam (id bigint, hyp text, score float8, who text DEFAULT current_user);
CREATE TABLE ref_sample (LIKE ref_beam INCLUDING DEFAULTS);
CREATE TABLE killed_beam (LIKE ref_beam INCLUDING DEFAULTS);
CREATE TABLE killed_sample (LIKE ref_beam INCLUDING DEFAULTS);
CREATE TABLE cancelled (LIKE ref_beam INCLUDING DEFAULTS);
CREATE FUNCTION gate() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	IF NEW.id = $((2 * CHUNK + 1)) THEN
		PERFORM pg_advisory_xact_lock_shared(4242);
	END IF;
	RETURN NEW;
END \$\$;
CREATE TRIGGER gate BEFORE INSERT ON ref_beam FOR EACH ROW EXECUTE FUNCTION gate();
CREATE TRIGGER gate BEFORE INSERT ON killed_beam FOR EACH ROW EXECUTE FUNCTION gate();
CREATE TRIGGER gate BEFORE INSERT ON killed_sample FOR EACH ROW EXECUTE FUNCTION gate();
CREATE TRIGGER gate BEFORE INSERT ON cancelled FOR EACH ROW EXECUTE FUNCTION gate();
SQL


QUERY='SELECT id, src FROM tj_src ORDER BY id'
submit() { qa -c "SELECT corpq.translate_job('tj_m', '$QUERY', '$1', '$2')"; }
state_of() { q -c "SELECT state || ' attempts=' || attempts || coalesce(' error=' || error, '') FROM corpq.jobs WHERE id = $1"; }
chunks_of() { q -c "SELECT count(*) FROM corpq.row_job_chunks WHERE job = $1"; }
# rows of tables $1 and $2 that differ: missing, extra, or another hyp / score
compare() {
	q -c "SELECT (SELECT count(*) FROM $1) || ' rows, ' ||
	             (SELECT count(*) - count(DISTINCT id) FROM $2) || ' duplicated, ' ||
	             (SELECT count(*) FROM $1 a WHERE NOT EXISTS (SELECT 1 FROM $2 b WHERE b.id = a.id)) || ' missing, ' ||
	             (SELECT count(*) FROM $2 b WHERE NOT EXISTS (SELECT 1 FROM $1 a WHERE a.id = b.id)) || ' extra, ' ||
	             (SELECT count(*) FROM $1 a JOIN $2 b USING (id) WHERE a.hyp IS DISTINCT FROM b.hyp) || ' other hyp, ' ||
	             (SELECT count(*) FROM $1 a JOIN $2 b USING (id) WHERE a.score IS DISTINCT FROM b.score) || ' other score (max diff ' ||
	             coalesce((SELECT max(abs(a.score - b.score)) FROM $1 a JOIN $2 b USING (id))::text, '-') || ')'"
}
same_rows() {
	local c
	c=$(compare "$1" "$2")
	[ "$c" = "$N rows, 0 duplicated, 0 missing, 0 extra, 0 other hyp, 0 other score (max diff 0)" ] \
		|| fail "$2 differs from $1: $c"
}
# close_gate: a session holds the gate's lock (in the background, until it is
# ended or the server restarts); open_gate ends its session
close_gate() {
	q -c "SELECT pg_advisory_lock(4242)" -c "SELECT pg_sleep(3600)" >/dev/null 2>&1 &
	GATE=$!
	for _ in $(seq 600); do
		[ "$(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND granted")" = 1 ] && return 0
		sleep 0.05
	done
	fail "the gate's lock was not taken"
}
open_gate() {
	q -c "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND granted" >/dev/null
	wait "$GATE" 2>/dev/null || true
}
# wait until job $1 waits at the gate (its two chunks committed)
wait_gate() {
	for _ in $(seq 6000); do
		[ "$(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted
		             AND pid = (SELECT worker_pid FROM corpq.jobs WHERE id = $1)")" = 1 ] && return 0
		case "$(q -c "SELECT state FROM corpq.jobs WHERE id = $1")" in
		succeeded | failed | cancelled) fail "job $1 ended before the gate: $(state_of "$1")" ;;
		esac
		sleep 0.05
	done
	fail "job $1 did not reach the gate: $(state_of "$1")"
}
kill_at_gate() {
	local job=$1 pid
	wait_gate "$job"
	[ "$(chunks_of "$job")" = 2 ] || fail "job $job: $(chunks_of "$job") chunks at the gate, not 2"
	pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
	kill -9 "$pid"
	log "kill -9 of worker $pid of job $job at the gate, after 2 chunks"
	sleep 1
	cluster_ready
	open_gate
}

# ---- ref: uninterrupted, with live progress ----
close_gate
ref=$(submit ref_beam "$BEAM")
wait_gate "$ref"
p=$(q -c "SELECT phase || ' ' || total || ' ' || ((figures ->> 'sentences_per_s')::float8 > 0) || ' '
                 || ((figures ->> 'tokens_per_s')::float8 > 0) || ' ' || (eta IS NOT NULL) || ' ' || (done >= $((2 * CHUNK)))
            FROM corpq.job_progress WHERE id = $ref")
[ "$p" = "translating $N true true true true" ] || fail "progress of job $ref: '$p' ($(state_of "$ref"))"
log "live progress: $(q -c "SELECT done || ' of ' || total || ' sentences, ' || round(rate::numeric, 1) || '/s, ETA ' || eta
                             || ', figures ' || figures FROM corpq.job_progress WHERE id = $ref")"
open_gate
[ "$(q -c "SELECT corpq.job_wait($ref, '900 s')")" = succeeded ] || fail "ref: $(state_of "$ref")"
log "ref: $(q -c "SELECT result FROM corpq.jobs WHERE id = $ref")"
[ "$(chunks_of "$ref")" = $((N / CHUNK)) ] || fail "ref: $(chunks_of "$ref") chunks, not $((N / CHUNK))"
[ "$(q -c "SELECT bool_and(rows_done = chunk * $CHUNK) FROM corpq.row_job_chunks WHERE job = $ref")" = t ] \
	|| fail "ref: chunks are not $CHUNK rows each"
[ "$(qa -c "SELECT count(*) FILTER (WHERE who = 'tj_alice') FROM ref_beam")" = "$N" ] \
	|| fail "ref: rows not written as tj_alice"
qa -c "CREATE TABLE rows_beam AS SELECT * FROM corpq.translate_rows('tj_m', '$QUERY', '$BEAM'::jsonb - 'chunk_rows' - 'threads')"
same_rows rows_beam ref_beam
log "ref: $N rows in $((N / CHUNK)) chunks, written as tj_alice, equal to translate_rows()"
sref=$(submit ref_sample "$SAMPLE")
[ "$(q -c "SELECT corpq.job_wait($sref, '900 s')")" = succeeded ] || fail "ref_sample: $(state_of "$sref")"
qa -c "CREATE TABLE rows_sample AS SELECT * FROM corpq.translate_rows('tj_m', '$QUERY', '$SAMPLE'::jsonb - 'chunk_rows' - 'threads')"
same_rows rows_sample ref_sample

# ---- kill -9 of the worker: resume after the last chunk, same rows ----
for kind in beam sample; do
	opts=$BEAM
	[ $kind = sample ] && opts=$SAMPLE
	close_gate
	job=$(submit "killed_$kind" "$opts")
	kill_at_gate "$job"
	[ "$(q -c "SELECT corpq.job_wait($job, '900 s')")" = succeeded ] || fail "killed_$kind: $(state_of "$job")"
	[ "$(q -c "SELECT attempts FROM corpq.jobs WHERE id = $job")" = 2 ] || fail "killed_$kind: not 2 attempts"
	from=$(q -c "SELECT result ->> 'resumed_from_row' FROM corpq.jobs WHERE id = $job")
	[ "$from" = $((2 * CHUNK)) ] || fail "killed_$kind: resumed from row '$from'"
	same_rows "ref_$kind" "killed_$kind"
	log "killed ($kind): resumed from row $from, the target holds exactly the uninterrupted run's rows"
done

# ---- cancel: the committed chunks stay ----
close_gate
job=$(submit cancelled "$BEAM")
wait_gate "$job"
[ "$(qa -c "SELECT corpq.job_cancel($job)")" = running ] || fail "cancel: the job was not running"
[ "$(q -c "SELECT corpq.job_wait($job, '120 s')")" = cancelled ] || fail "cancel: $(state_of "$job")"
open_gate
done_rows=$(q -c "SELECT coalesce(max(rows_done), 0) FROM corpq.row_job_chunks WHERE job = $job")
[ "$done_rows" = $((2 * CHUNK)) ] || fail "cancel: $done_rows rows committed"
[ "$(qa -c "SELECT count(*) FROM cancelled")" = "$done_rows" ] || fail "cancel: the target does not hold the committed chunks"
[ "$(qa -c "SELECT count(*) FROM cancelled c JOIN ref_beam r USING (id)
             WHERE c.hyp = r.hyp AND c.score = r.score AND c.id <= $done_rows")" = "$done_rows" ] \
	|| fail "cancel: the committed rows differ from ref's first rows"
log "cancelled after $done_rows rows: they stay, equal to ref's"
log ok
