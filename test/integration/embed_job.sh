#!/usr/bin/env bash
# Embedding jobs (corpq preloaded), run by an ordinary login role into its
# own tables, on a random tiny encoder; every table is compared with
# corpq.embed(model@1, sentence) row by row, bit for bit, and must hold every
# id once:
#   stopped:  live progress (sentences/s, tokens/s, ETA), then pg_ctl stop
#             -m immediate after the job's first chunks: it resumes after its
#             last committed chunk (attempts 2, resumed_from_row);
#   pgvector: (when pgvector is installed or can be built from
#             ../shared/vendor/pgvector-0.8.6.tar.gz; skipped with a line
#             saying why otherwise) a vector(d) column takes the vectors
#             through pgvector's assignment cast from real[], exactly; a
#             column of another dimension is refused at submission.
# EMBED_JOB_SENTENCES sets the corpus size (100,000 by default: the stop
# lands mid-job on a fast machine too).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
# pgvector goes into the server's installation before the cluster starts
[ -n "${CORPQ_IN_CLUSTER:-}" ] || corpq_pgvector CORPQ_EMBED_PGVECTOR
corpq_in_cluster -t 1200 -o shared_preload_libraries=corpq -o max_worker_processes=16

N=${EMBED_JOB_SENTENCES:-100000}
CHUNK=$((N / 100))
OPTS="{\"chunk_rows\": $CHUNK, \"batch_size\": 64, \"threads\": 2}"
qa() { psql -X -v ON_ERROR_STOP=1 -Atq -U ej_alice "$@"; }
state_of() {
	q -c "SELECT format('%s, %s attempt(s), %s chunks%s', state, attempts,
	                    (SELECT count(*) FROM corpq.row_job_chunks WHERE job = id), ', error ' || error)
	        FROM corpq.jobs WHERE id = $1"
}

q -c "CREATE EXTENSION corpq"
q -c "CREATE ROLE ej_alice LOGIN PASSWORD '$PGPASSWORD'" -c "GRANT CREATE ON SCHEMA public TO ej_alice"
t0=$(date +%s)
qa >/dev/null <<SQL
CREATE TABLE ej_sents AS
SELECT g::bigint AS id,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729) % 97), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 11) k) AS s
  FROM generate_series(1, $N) g;
SELECT corpq.vocab_build('ej_v', 'SELECT s FROM ej_sents');
SELECT corpq.model_create('ej_m', '{"preset": "tiny", "kind": "encoder", "max_positions": 40}', 'ej_v', 'ej_v', 5);
CREATE TABLE ej_ref AS SELECT id, corpq.embed('ej_m@1'::corpq.pinned_model, s) AS v FROM ej_sents;
CREATE TABLE stopped (id bigint, embedding real[], who text DEFAULT current_user);
SQL
log "$N sentences, the reference embed() in $(($(date +%s) - t0)) s; chunks of $CHUNK rows"

# table $1 (column $2) against the reference: rows, duplicated, missing, other vectors
compare() {
	q -c "SELECT (SELECT count(*) FROM $1) || ' rows, ' ||
	             (SELECT count(*) - count(DISTINCT id) FROM $1) || ' duplicated, ' ||
	             (SELECT count(*) FROM ej_ref r WHERE NOT EXISTS (SELECT FROM $1 t WHERE t.id = r.id)) || ' missing, ' ||
	             (SELECT count(*) FROM $1 t JOIN ej_ref r USING (id) WHERE t.$2 IS DISTINCT FROM r.v) || ' other vectors'"
}
same_rows() {
	local c
	c=$(compare "$1" "$2")
	[ "$c" = "$N rows, 0 duplicated, 0 missing, 0 other vectors" ] || fail "$1 differs from embed(): $c"
}

# ---- progress, then a stop -m immediate after 2 chunks ----
job=$(qa -c "SELECT corpq.embed_job('ej_m', 'SELECT id, s FROM ej_sents ORDER BY id', 'stopped', '$OPTS')")
for _ in $(seq 6000); do
	p=$(q -c "SELECT concat_ws(' ', phase, total, (figures ->> 'sentences_per_s')::float8 > 0,
	                           (figures ->> 'tokens_per_s')::float8 > 0, eta IS NOT NULL)
	            FROM corpq.job_progress WHERE id = $job AND phase = 'embedding' AND done > 0")
	[ -n "$p" ] && break
	sleep 0.05
done
[ "$p" = "embedding $N t t t" ] || fail "progress of job $job: '$p' ($(state_of "$job"))"
log "live progress: $(q -c "SELECT done || ' of ' || total || ' sentences, ETA ' || eta || ', figures ' || figures
                             FROM corpq.job_progress WHERE id = $job")"
for _ in $(seq 6000); do
	s=$(q -c "SELECT CASE WHEN (SELECT count(*) FROM corpq.row_job_chunks WHERE job = id) >= 2 THEN 'ok'
	                      WHEN state IN ('queued', 'running') THEN 'wait' ELSE 'ended' END
	            FROM corpq.jobs WHERE id = $job")
	[ "$s" = wait ] || break
	sleep 0.05
done
[ "$s" = ok ] || fail "job $job did not commit 2 chunks: $(state_of "$job")"
c=$(q -c "SELECT count(*) FROM corpq.row_job_chunks WHERE job = $job")
log "stop -m immediate during job $job after $c or more chunks"
restart_immediate
cluster_ready
[ "$(q -c "SELECT corpq.job_wait($job, '1200 s')")" = succeeded ] || fail "stopped: $(state_of "$job")"
r=$(q -c "SELECT attempts || ' ' || (result ->> 'resumed_from_row') || ' ' || (result ->> 'rows') || ' '
                 || (result ->> 'embedded') FROM corpq.jobs WHERE id = $job")
read -r attempts from rows embedded <<<"$r"
[ "$attempts" = 2 ] && [ "$from" -ge $((c * CHUNK)) ] && [ $((from % CHUNK)) = 0 ] \
	&& [ "$rows" = "$N" ] && [ "$embedded" = "$N" ] || fail "stopped: result '$r'"
same_rows stopped embedding
[ "$(qa -c "SELECT count(*) FILTER (WHERE who = 'ej_alice') FROM stopped")" = "$N" ] || fail "stopped: rows not written as ej_alice"
log "stopped: 2 attempts, the second resumed from row $from; every id once, equal to embed()"

# ---- pgvector: a vector(d) column through pgvector's assignment cast ----
if [ "$CORPQ_EMBED_PGVECTOR" != yes ]; then
	log "skipped the pgvector part: $CORPQ_EMBED_PGVECTOR"
	log ok
	exit 0
fi
d=$(q -c "SELECT cardinality(v) FROM ej_ref WHERE id = 1")
q -c "CREATE EXTENSION vector"
qa -c "CREATE TABLE vecs (id bigint PRIMARY KEY, embedding vector($d))" \
	-c "CREATE TABLE wrong_dim (id bigint, embedding vector($((d + 1))))"
job=$(qa -c "SELECT corpq.embed_job('ej_m', 'SELECT id, s FROM ej_sents ORDER BY id', 'vecs', '$OPTS')")
[ "$(q -c "SELECT corpq.job_wait($job, '1200 s')")" = succeeded ] || fail "vector column: $(state_of "$job")"
q -c "CREATE VIEW vecs_real AS SELECT id, embedding::real[] AS embedding FROM vecs"
same_rows vecs_real embedding
err=$(qa -c "SELECT corpq.embed_job('ej_m', 'SELECT id, s FROM ej_sents', 'wrong_dim')" 2>&1) \
	&& fail "a vector($((d + 1))) column was accepted"
grep -q "is of type vector($((d + 1))), the model's vectors have $d dimensions" <<<"$err" \
	|| fail "vector($((d + 1))): $err"
log "pgvector: a vector($d) column holds embed()'s vectors exactly; vector($((d + 1))) refused at submission"
log ok
