#!/usr/bin/env bash
# corpq on a Citus cluster (docs/scaling.md, Citus): a coordinator and two
# workers on loopback (test/citus/cluster.sh), Citus from an installed package
# or built from ../shared/vendor/citus-13.2.2.tar.gz (test/citus/build.sh);
# skipped, with one line saying so, when there is neither.  Checked:
#   - the catalog reaches the workers through corpq's functions called by
#     run_command_on_workers (bpe_export -> bpe_import, vocab_export ->
#     vocab_import, model_export -> model_import; the lexicon trained on
#     every node from the same ordered query over the distributed table), and
#     corpq.catalog_check() (no arguments: every Citus worker) passes
#   - jobs: corpq.train() and corpq.lexicon_train() on the coordinator read
#     the distributed table; the models land in the coordinator's catalog
#     only, catalog_check() says so, the copy fixes it
#   - distributed scoring on create_distributed_table('corpus', 'id'):
#     sent_prob (pinned and by name), uncertainty, align_score and ORDER BY
#     sent_prob LIMIT n run in tasks on the workers (EXPLAIN, and the
#     workers' function-call counts), results equal to the single-server copy
#     of the rows; INSERT ... SELECT and UPDATE with scores
#   - aggregates: cav_accumulate and cav_sum grouped by the distribution
#     column run whole on the workers, otherwise worker_partial_agg +
#     coord_combine_agg (with citus.coordinator_aggregation_strategy =
#     'disabled', so never by pulling rows); results equal one server
#   - faults: a worker added later (Citus creates corpq there; the catalog is
#     missing until the copy, which skips what the others have, runs again);
#     a worker down (Citus's error, nothing written, the copy names it); a
#     worker with another model version and a worker without corpq
#     (catalog_check names them)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
CORPQ_TEST_NAME=citus

if ! bash test/citus/build.sh --check; then
	log "skipped: no installed Citus and no ../shared/vendor/citus-13.2.2.tar.gz"
	exit 0
fi
bash test/citus/build.sh
. test/citus/cluster.sh

# 8 shards: 4 per worker, each a task with its own connection and backend
citus_start c w1 w2 -- -c track_functions=all -c citus.shard_count=8
workers=$(citus_workers | tr '\n' ' ')
log "coordinator 127.0.0.1:$port_c, workers $workers"
# everything but running the cluster is done by an ordinary role: Citus
# creates it on the workers; corpq's catalog takes writes only through its
# functions, which is how the copies below go
qn c -c "CREATE ROLE curator LOGIN" -c "GRANT CREATE ON SCHEMA public TO curator" >/dev/null
citus_user=curator
qc() { qn c -U curator "$@"; }

# everywhere SQL: run a one-value query on the coordinator, then on every
# worker through run_command_on_workers; all must give the same value
everywhere() {
	local here there
	here=$(qc -c "$1")
	there=$(qc -v cmd="$1" <<<"SELECT string_agg(DISTINCT CASE WHEN success THEN result ELSE 'ERROR ' || result END, '|')
	                              FROM run_command_on_workers(:'cmd')")
	[ "$there" = "$here" ] || fail "$1: coordinator '$here', workers '$there'"
}
# wait_jobs: corpq.job_wait() on every job of every node; all must succeed
wait_jobs() {
	everywhere "SELECT coalesce(string_agg(DISTINCT corpq.job_wait(id, '600 s'), ','), 'succeeded') FROM corpq.jobs"
	[ "$(qc -c "SELECT coalesce(string_agg(DISTINCT state, ','), 'succeeded') FROM corpq.jobs")" = succeeded ] ||
		fail "jobs failed: $(qc -c "SELECT string_agg(kind || ': ' || error, '; ') FROM corpq.jobs WHERE state <> 'succeeded'")"
}

# ---- the corpus: distributed by id (and by domain), and a single-server copy --
qc >/dev/null <<'SQL'
CREATE TABLE corpus_local AS
SELECT g::bigint AS id, (ARRAY['bible', 'ddtp', 'l10n'])[1 + g % 3] AS domain,
       concat_ws(' ', 'a' || (g % 31), 'b' || (g * 7 % 23), repeat('c' || (g % 5) || ' ', g % 7)) AS src,
       concat_ws(' ', 'x' || (g % 19), repeat('y' || (g * 3 % 13) || ' ', g % 9)) AS tgt,
       NULL::float8 AS p
  FROM generate_series(1, 600) g;
CREATE TABLE corpus (id bigint PRIMARY KEY, domain text, src text, tgt text, p float8);
SELECT create_distributed_table('corpus', 'id');
INSERT INTO corpus SELECT * FROM corpus_local;
CREATE TABLE corpus_dom (id bigint, domain text, src text, tgt text);
SELECT create_distributed_table('corpus_dom', 'domain', colocate_with => 'none');
INSERT INTO corpus_dom SELECT id, domain, src, tgt FROM corpus_local;
SQL
[ "$(qn c -c "SELECT count(*) FROM citus_shards WHERE table_name = 'corpus'::regclass AND nodeport = $port_c")" = 0 ] ||
	fail "the coordinator holds shards of corpus"
[ "$(qn c -c "SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'corpus'::regclass")" = 2 ] ||
	fail "corpus is not spread over both workers"

# ---- the catalog on every node -------------------------------------------------
# BPE model, vocabularies and model made here (vocabularies from the
# distributed table), then exported here and imported on every worker
qc >/dev/null <<'SQL'
SELECT corpq.bpe_import('s_bpe', E'#version: 0.2\nc 1\nc1 2</w>\n');
SELECT corpq.vocab_build('s_src', 'SELECT src FROM corpus ORDER BY id', 's_bpe');
SELECT corpq.vocab_build('s_tgt', 'SELECT tgt FROM corpus ORDER BY id');
SELECT corpq.model_create('m', '{"preset": "tiny", "max_positions": 32}', 's_src', 's_tgt', 1);
SQL
citus_copy_catalog
# the lexicon (no export function): trained on every node that lacks it from
# the same rows in the same order, which gives the same lexicon
lexicon="SELECT CASE WHEN EXISTS (SELECT FROM corpq.lexicons WHERE name = 'lx') THEN 0
                     ELSE corpq.lexicon_train('lx', 'SELECT src, tgt FROM corpus ORDER BY id') END >= 0"
everywhere "$lexicon"
wait_jobs
[ "$(qc -c "SELECT corpq.catalog_check()")" = 2 ] || fail "catalog_check after the copy"
[ "$(qc -c "SELECT count(*) FROM corpq.catalog_fingerprint() WHERE kind IN ('bpe', 'vocabulary', 'model', 'lexicon')")" = 5 ] ||
	fail "fingerprint rows: $(qc -c 'SELECT * FROM corpq.catalog_fingerprint()')"
log "catalog on every node, catalog_check() = 2"

# ---- jobs: training on the coordinator from the distributed table -------------
qc -c "SELECT corpq.train('m', 'SELECT src, tgt, domain FROM corpus ORDER BY id', NULL,
                            '{\"steps\": 2, \"max_tokens\": 512, \"checkpoint_every\": 2, \"keep_checkpoints\": 1}')" >/dev/null
wait_jobs
[ "$(qc -c "SELECT result ->> 'pairs' FROM corpq.jobs WHERE kind = 'train'")" = 600 ] ||
	fail "train read $(qc -c "SELECT result ->> 'pairs' FROM corpq.jobs WHERE kind = 'train'") pairs, not the 600 of the distributed table"
[ "$(qc -c "SELECT latest_version FROM corpq.models WHERE name = 'm'")" = 2 ] || fail "no checkpoint version on the coordinator"
err=$(qc -c "SELECT corpq.catalog_check()" 2>&1 >/dev/null) && fail "catalog_check missed m@2 on the workers"
echo "$err" | grep -q "node \"127.0.0.1:[0-9]*\" has a different corpq catalog: model \"m\" version 2 differs" ||
	fail "catalog_check after training: $err"
echo "$err" | grep -q 'model "m" version 2: missing on the node' || fail "catalog_check detail: $err"
citus_copy_catalog
[ "$(qc -c "SELECT corpq.catalog_check()")" = 2 ] || fail "catalog_check after copying m@2"
log "train() and lexicon_train() read the distributed table; m@2 landed on the coordinator, copied"

# ---- distributed scoring ---------------------------------------------------------
plan() { qc -c "EXPLAIN (VERBOSE, COSTS OFF) $1" | tr '\n' ' ' | tr -s ' '; }
# on_workers QUERY PATTERN: one task per shard on the workers, the task's
# query (SQL sent to a worker) matching PATTERN
on_workers() {
	local p
	p=$(plan "$1")
	echo "$p" | grep -q "Task Count: 8" || fail "not 8 tasks: $p"
	echo "$p" | grep -Eq "Node: host=127.0.0.1 port=($port_w1|$port_w2)" || fail "no task on a worker: $p"
	echo "$p" | grep -q -- "Query: $2" || fail "the workers do not run $2: $p"
}
# same WHAT QUERY: QUERY over corpus (distributed) and corpus_local (one
# server, on the coordinator) give the same non-empty text
same() {
	local a b
	a=$(qc -c "$2")
	b=$(qc -c "${2//corpus /corpus_local }")
	[ -n "$a" ] && [ "$a" = "$b" ] || fail "$1 differs from one server: '$a' vs '$b'"
}
pinned="corpq.sent_prob('m@2'::corpq.pinned_model, src, tgt)"
unc="corpq.uncertainty('m@2'::corpq.pinned_model, src, tgt, 'enteos', 2, 7)"
digest="md5(string_agg(id || ':' || s, ',' ORDER BY id))"
on_workers "SELECT id, $pinned FROM corpus" "SELECT id, corpq.sent_prob('m@2'::corpq.pinned_model, src, tgt) AS sent_prob FROM public.corpus_"
on_workers "SELECT id, corpq.sent_prob('m', src, tgt) FROM corpus" "SELECT id, corpq.sent_prob('m'::text, src, tgt)"
on_workers "SELECT id, $unc FROM corpus" "SELECT id, corpq.uncertainty('m@2'::corpq.pinned_model, src, tgt, 'enteos'::text, 2, '7'::bigint)"
on_workers "SELECT id, corpq.align_score('lx', src, tgt) FROM corpus" "SELECT id, corpq.align_score('lx'::text, src, tgt)"
on_workers "SELECT id, $pinned AS s FROM corpus ORDER BY s DESC, id LIMIT 10" \
	"SELECT id, corpq.sent_prob('m@2'::corpq.pinned_model, src, tgt) AS s FROM public.corpus_[0-9]* corpus WHERE true ORDER BY (corpq.sent_prob('m@2'::corpq.pinned_model, src, tgt)) DESC, id LIMIT '10'::bigint"
on_workers "SELECT domain, avg($pinned) FROM corpus GROUP BY domain" "SELECT domain, sum(corpq.sent_prob"

# where sent_prob ran: calls counted by each server (track_functions = all)
calls() {
	qn "$1" -c "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions
	             WHERE schemaname = 'corpq' AND funcname = 'sent_prob'"
}
for n in c w1 w2; do qn $n -c "SELECT pg_stat_reset()" >/dev/null; done
qc -c "SELECT id, $pinned FROM corpus" >/dev/null
for i in $(seq 120); do	# a backend flushes its counts when idle, within 10 s
	[ "$(( $(calls w1) + $(calls w2) ))" = 600 ] && break
	sleep 0.25
done
[ "$(( $(calls w1) + $(calls w2) ))" = 600 ] || fail "the workers ran sent_prob $(calls w1) + $(calls w2) times, not 600"
[ "$(calls c)" = 0 ] || fail "the coordinator ran sent_prob $(calls c) times"
[ "$(calls w1)" -gt 0 ] && [ "$(calls w2)" -gt 0 ] || fail "one worker scored everything"

same "per-row sent_prob (pinned)" "SELECT $digest FROM (SELECT id, $pinned s FROM corpus ) q"
same "per-row sent_prob (by name)" "SELECT $digest FROM (SELECT id, corpq.sent_prob('m', src, tgt) s FROM corpus ) q"
same "per-row uncertainty" "SELECT $digest FROM (SELECT id, $unc s FROM corpus ) q"
same "per-row align_score" "SELECT $digest FROM (SELECT id, corpq.align_score('lx', src, tgt) s FROM corpus ) q"
same "ORDER BY sent_prob LIMIT 10" \
	"SELECT string_agg(id || ':' || s, ',' ORDER BY s DESC, id) FROM (SELECT id, $pinned s FROM corpus ORDER BY s DESC, id LIMIT 10) q"
# sums in another order differ in the last bits: 1e-12 on values near 1e-2
same "avg(sent_prob) per domain" \
	"SELECT string_agg(domain || ':' || round(a::numeric, 12) || ':' || n, ',' ORDER BY domain)
	   FROM (SELECT domain, avg($pinned) a, count(*) n FROM corpus GROUP BY domain) g"
# a window over per-domain counts: the counts come from the workers, the
# window runs on the coordinator over three rows
same "temperature_weights over per-domain counts" \
	"SELECT string_agg(domain || ':' || w, ',' ORDER BY domain)
	   FROM (SELECT domain, corpq.temperature_weights(count(*), 5) OVER () w FROM corpus GROUP BY domain) s"
log "scoring runs in 8 tasks on the workers (600 sent_prob calls there, none on the coordinator); results equal one server"

# ---- writing scores: only IMMUTABLE (pinned) calls may take columns in UPDATE ---
qc -c "CREATE TABLE scores (id bigint, s float8)" -c "SELECT create_distributed_table('scores', 'id', colocate_with => 'corpus')" >/dev/null
p=$(qc -c "EXPLAIN (COSTS OFF) INSERT INTO scores SELECT id, $pinned FROM corpus" | tr '\n' ' ')
echo "$p" | grep -q "Task Count: 8" && echo "$p" | grep -q "Insert on scores_" || fail "INSERT ... SELECT not pushed down: $p"
qc -c "INSERT INTO scores SELECT id, $pinned FROM corpus" >/dev/null
[ "$(qc -c "SELECT $digest FROM scores")" = "$(qc -c "SELECT $digest FROM (SELECT id, $pinned s FROM corpus_local) q")" ] ||
	fail "scores inserted on the workers differ"
# a VOLATILE call (unseeded uncsamp) still runs on the workers; Citus
# repartitions the rows instead of inserting shard to shard
p=$(qc -c "EXPLAIN (COSTS OFF) INSERT INTO scores SELECT id, corpq.uncsamp(0.5, 1.0, 2) FROM corpus" | tr '\n' ' ')
echo "$p" | grep -q "INSERT/SELECT method: repartition" || fail "volatile INSERT ... SELECT: $p"
qc -c "UPDATE corpus SET p = $pinned" >/dev/null
[ "$(qc -c "SELECT $digest FROM (SELECT id, p s FROM corpus) q")" = "$(qc -c "SELECT $digest FROM (SELECT id, $pinned s FROM corpus_local) q")" ] ||
	fail "scores written by UPDATE on the workers differ"
err=$(qc -c "UPDATE corpus SET p = corpq.sent_prob('m', src, tgt)" 2>&1 >/dev/null) && fail "UPDATE with a STABLE call on columns ran"
echo "$err" | grep -q "STABLE functions used in UPDATE queries cannot be called with column references" ||
	fail "UPDATE with a model name: $err"
log "INSERT ... SELECT and UPDATE with the pinned model run on the workers; a model name in UPDATE is refused by Citus"

# ---- aggregates: Citus combines partial states from the workers -----------------
# One row per aggregate: name | call over src, tgt | how to print its value.
# (corpq.bleu and corpq.chrf: one more row each.)
aggregates=(
	"cav_accumulate|corpq.cav_accumulate(src, tgt, 6)|md5(corpq.cav_to_bytea(%s))"
	"cav_accumulate with BPE|corpq.cav_accumulate(src, tgt, 6, NULL, 's_bpe')|md5(corpq.cav_to_bytea(%s))"
	"bleu|corpq.bleu(src, tgt)|(%s)::text"
	"chrf|corpq.chrf(src, tgt)|(%s)::text"
)
# per-row CAVs in a table distributed like corpus, for cav_sum
qc >/dev/null <<'SQL'
CREATE TABLE cavs (id bigint, domain text, c corpq.cav);
SELECT create_distributed_table('cavs', 'id', colocate_with => 'corpus');
INSERT INTO cavs SELECT id, domain, corpq.cav_accumulate(src, tgt, 6) FROM corpus GROUP BY id, domain;
CREATE TABLE cavs_local AS SELECT id, domain, corpq.cav_accumulate(src, tgt, 6) c FROM corpus_local GROUP BY id, domain;
SQL
# agg_check NAME CALL FORMAT TABLE LOCAL GROUP WAY: SELECT GROUP, FORMAT(CALL)
# FROM TABLE GROUP BY GROUP (no GROUP: over all rows) equals the same on
# LOCAL; WAY = whole (the aggregate runs on the workers as it is) or partial
# (worker_partial_agg on the workers, coord_combine_agg on the coordinator)
agg_check() {
	local name=$1 call=$2 fmt=$3 table=$4 local=$5 group=$6 way=$7 value q p a b
	# shellcheck disable=SC2059
	value=$(printf "$fmt" "$call")
	if [ -n "$group" ]; then
		q="SELECT $group, $value FROM %s GROUP BY $group ORDER BY 1"
	else
		q="SELECT $value FROM %s"
	fi
	# shellcheck disable=SC2059
	p=$(plan "$(printf "$q" "$table")")
	if [ "$way" = whole ]; then
		echo "$p" | grep -q "Query: SELECT .*${call%%(*}(" && ! echo "$p" | grep -q worker_partial_agg ||
			fail "$name by $group on $table does not run whole on the workers: $p"
	else
		echo "$p" | grep -q "coord_combine_agg" && echo "$p" | grep -q "Query: SELECT .*worker_partial_agg('${call%%(*}(" ||
			fail "$name ${group:-overall} on $table is not combined from worker partials: $p"
	fi
	# shellcheck disable=SC2059
	a=$(qc -c "SET citus.coordinator_aggregation_strategy = 'disabled'" -c "$(printf "$q" "$table")")
	# shellcheck disable=SC2059
	b=$(qc -c "$(printf "$q" "$local")")
	[ -n "$a" ] && [ "$a" = "$b" ] || fail "$name ${group:-overall} on $table differs from one server: '$a' vs '$b'"
}
for row in "${aggregates[@]}"; do
	IFS='|' read -r name call fmt <<<"$row"
	agg_check "$name" "$call" "$fmt" corpus_dom corpus_local domain whole
	agg_check "$name" "$call" "$fmt" corpus corpus_local domain partial
	agg_check "$name" "$call" "$fmt" corpus corpus_local "" partial
done
agg_check cav_sum "corpq.cav_sum(c)" "md5(corpq.cav_to_bytea(%s))" cavs cavs_local id whole
agg_check cav_sum "corpq.cav_sum(c)" "md5(corpq.cav_to_bytea(%s))" cavs cavs_local domain partial
agg_check cav_sum "corpq.cav_sum(c)" "md5(corpq.cav_to_bytea(%s))" cavs cavs_local "" partial
# the strategy setting is what makes the check bite: an ordered aggregate has
# no partial form, and without row-gather Citus refuses it
err=$(qc -c "SET citus.coordinator_aggregation_strategy = 'disabled'" \
	-c "SELECT corpq.cav_accumulate(src, tgt, 6 ORDER BY id) FROM corpus" 2>&1 >/dev/null) &&
	fail "an ordered aggregate ran with coordinator aggregation disabled"
echo "$err" | grep -q "unsupported aggregate function cav_accumulate" || fail "ordered aggregate: $err"
log "aggregates: whole on the workers when grouped by the distribution column, else worker partials combined on the coordinator; equal to one server"

# ---- faults ----------------------------------------------------------------------
# a worker added later: Citus creates corpq there (a distributed object), but
# the catalog is missing until copied
# shellcheck disable=SC2086
start_node w3 $opts_w1
qn w3 -c "CREATE EXTENSION citus" >/dev/null
qn c -c "SELECT citus_add_node('127.0.0.1', $port_w3)" >/dev/null
[ "$(qn w3 -c "SELECT count(*) FROM pg_extension WHERE extname = 'corpq'")" = 1 ] || fail "citus_add_node did not create corpq"
err=$(qc -c "SELECT corpq.catalog_check()" 2>&1 >/dev/null) && fail "catalog_check missed the new worker's empty catalog"
echo "$err" | grep -q "node \"127.0.0.1:$port_w3\" has a different corpq catalog: bpe \"s_bpe\" differs" ||
	fail "new worker: $err"
log "w3 added: $(echo "$err" | head -1)"
# the copy again: the other workers have everything and skip it
citus_copy_catalog
everywhere "$lexicon"
wait_jobs
[ "$(qc -c "SELECT corpq.catalog_check()")" = 3 ] || fail "catalog_check after copying to w3"

# a worker that is down: Citus's connection error; a write leaves nothing
before=$(qc -c "SELECT count(*) FROM scores")
stop_node w2
err=$(qc -c "SELECT id, $pinned FROM corpus" 2>&1 >/dev/null) && fail "scoring with w2 down succeeded"
echo "$err" | grep -q "connection to the remote node curator@127.0.0.1:$port_w2 failed" || fail "worker down: $err"
log "w2 down, SELECT: $(echo "$err" | head -1)"
err=$(qc -c "INSERT INTO scores SELECT id + 100000, $pinned FROM corpus" 2>&1 >/dev/null) && fail "insert with w2 down succeeded"
echo "$err" | grep -q "127.0.0.1:$port_w2" || fail "insert with w2 down: $err"
err=$(qc -c "SELECT corpq.catalog_check()" 2>&1 >/dev/null) && fail "catalog_check with w2 down"
echo "$err" | grep -q "could not read the corpq catalog of node \"127.0.0.1:$port_w2\"" || fail "catalog_check, worker down: $err"
# the copy reports the worker it could not reach (the others are done, and
# running it again once the worker is back completes it)
err=$(citus_copy_catalog 2>&1 >/dev/null) && fail "copy with w2 down succeeded"
echo "$err" | grep -q "copying BPE model s_bpe to worker 127.0.0.1:$port_w2: failed to connect" || fail "copy, worker down: $err"
restart_node w2
[ "$(qc -c "SELECT count(*) FROM scores")" = "$before" ] || fail "rows left behind by the insert that failed"
citus_copy_catalog
[ "$(qc -c "SELECT corpq.catalog_check()")" = 3 ] || fail "catalog_check after w2 came back"

# a worker with another model under the same name and version
qn w2 >/dev/null <<'SQL'
SELECT corpq.model_drop('m');
SELECT corpq.model_create('m', '{"preset": "tiny", "max_positions": 32}', 's_src', 's_tgt', 2);
SQL
err=$(qc -c "SELECT corpq.catalog_check()" 2>&1 >/dev/null) && fail "catalog_check missed another model on w2"
echo "$err" | grep -q "node \"127.0.0.1:$port_w2\" has a different corpq catalog: model \"m\" version 1 differs" ||
	fail "another model: $err"
log "w2 with another m@1: $(echo "$err" | head -1)"

# a worker without corpq
qn w2 -c "SET citus.enable_ddl_propagation = off" -c "DROP EXTENSION corpq CASCADE" >/dev/null 2>&1
err=$(qc -c "SELECT corpq.catalog_check()" 2>&1 >/dev/null) && fail "catalog_check on w2 without corpq"
echo "$err" | grep -q "corpq is not installed on node \"127.0.0.1:$port_w2\"" || fail "no corpq: $err"
err=$(qc -c "SELECT id, $pinned FROM corpus" 2>&1 >/dev/null) && fail "scoring on w2 without corpq"
echo "$err" | grep -q "corpq" && echo "$err" | grep -q "127.0.0.1:$port_w2" || fail "scoring on w2 without corpq: $err"
log "w2 without corpq, scoring: $(echo "$err" | tr '\n' ' ')"


log "OK (coordinator + 2 workers, a third added: catalog copy and check, jobs, scoring on the workers, aggregates combined, faults)"
