#!/usr/bin/env bash
# corpq on a Citus cluster (docs/scaling.md, Citus): a coordinator and two
# workers on loopback (test/citus/cluster.sh), Citus from an installed package
# or built from ../shared/vendor/citus-13.2.2.tar.gz (test/citus/build.sh);
# skipped, with one line saying so, when there is neither.  Checked:
#   - the catalog reaches the workers through corpq's functions called by
#     run_command_on_workers (bpe_export -> bpe_import, SentencePiece and
#     WordPiece segmenters by spm_import and wordpiece_import, vocab_export ->
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
#   - corpq.score_job_distributed: one score job per worker over its shards
#     into a co-located target (each job's query names its worker's shards,
#     the model pinned on the coordinator, the jobs owned by the caller); w1
#     killed (pg_ctl stop -m immediate) once its job committed a chunk,
#     corpq.worker_job_progress() shows the jobs and then w1's error; after
#     w1 restarts its job resumes after its last chunk; every id scored once,
#     sent_prob and uncertainty equal to the coordinator's per-row calls to
#     the bit, no prepared transactions left; refused before submitting: a
#     target in another co-location group, a table not distributed by id, an
#     unknown model, a model only on the coordinator; a target without the
#     columns refused by every worker; a worker refusing the job gets the
#     other worker's job cancelled
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
# wait_jobs: corpq.job_wait() on every training job of every node; all must
# succeed (score jobs run on the workers only, and one is cancelled on purpose)
wait_jobs() {
	everywhere "SELECT coalesce(string_agg(DISTINCT corpq.job_wait(id, '600 s'), ','), 'succeeded') FROM corpq.jobs WHERE kind <> 'score'"
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
# a SentencePiece and a WordPiece segmenter too (bpe_export has no codes for
# them: the copy imports their model bytes and tokens)
printf '%s\n' 'the house of children' 'a tree of words' 'the earth and the heavens' 'light and words' \
	>"$so_tmp/spm.txt"
# (identity normalisation: no 200 kB NFKC table in the model)
spm_train --input="$so_tmp/spm.txt" --model_prefix="$so_tmp/spm" --vocab_size=25 --model_type=unigram \
	--normalization_rule_name=identity --hard_vocab_limit=false --num_threads=1 --minloglevel=2 >/dev/null 2>&1 || fail "spm_train failed"
qc >/dev/null <<SQL
SELECT corpq.spm_import('s_spm', decode('$(od -An -v -tx1 "$so_tmp/spm.model" | tr -d ' \n')', 'hex'));
SELECT corpq.wordpiece_import('s_wp', E'[UNK]\nthe\nlow\n##er\n##est\nhouse\n', '{"do_lower_case": false}');
SQL
citus_copy_catalog
# the lexicon (no export function): trained on every node that lacks it from
# the same rows in the same order, which gives the same lexicon
lexicon="SELECT CASE WHEN EXISTS (SELECT FROM corpq.lexicons WHERE name = 'lx') THEN 0
                     ELSE corpq.lexicon_train('lx', 'SELECT src, tgt FROM corpus ORDER BY id') END >= 0"
everywhere "$lexicon"
wait_jobs
[ "$(qc -c "SELECT corpq.catalog_check()")" = 2 ] || fail "catalog_check after the copy"
[ "$(qc -c "SELECT count(*) FROM corpq.catalog_fingerprint() WHERE kind IN ('bpe', 'vocabulary', 'model', 'lexicon')")" = 7 ] ||
	fail "fingerprint rows: $(qc -c 'SELECT * FROM corpq.catalog_fingerprint()')"
log "catalog on every node (BPE, SentencePiece and WordPiece segmenters too), catalog_check() = 2"

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

# ---- a distributed score job: one job per worker over its shards -----------------
# score_job_distributed submits, from the coordinator, one score job per
# worker over that worker's shards of big into its shards of big_scores; w1
# is killed (pg_ctl stop -m immediate) once its job has committed a chunk,
# and started again: its job resumes after its last chunk.  In the end every
# id is scored once, with the bits of the coordinator's per-row functions.
qc >/dev/null <<'SQL'
CREATE TABLE big_local AS
SELECT g::bigint AS id,
       concat_ws(' ', 'a' || (g % 31), 'b' || (g * 7 % 23), repeat('c' || (g % 5) || ' ', g % 7)) AS src,
       concat_ws(' ', 'x' || (g % 19), repeat('y' || (g * 3 % 13) || ' ', g % 9)) AS tgt
  FROM generate_series(1, 6000) g;
CREATE TABLE big (id bigint PRIMARY KEY, src text, tgt text);
SELECT create_distributed_table('big', 'id', colocate_with => 'corpus');
INSERT INTO big SELECT * FROM big_local;
CREATE TABLE big_scores (id bigint, score float8, u float8);
SELECT create_distributed_table('big_scores', 'id', colocate_with => 'big');
CREATE TABLE big_elsewhere (id bigint, score float8, u float8);
SELECT create_distributed_table('big_elsewhere', 'id', colocate_with => 'none');
CREATE TABLE big_by_src (id bigint, src text, tgt text);
SELECT create_distributed_table('big_by_src', 'src');
SQL
opts='{"what": "sent_prob, uncertainty", "columns": "score, u", "passes": 20, "batch_size": 8, "chunk_rows": 100}'
# dist_err WHY PATTERN ARGS: score_job_distributed(ARGS) fails with PATTERN
dist_err() {
	local err
	err=$(qc -c "SELECT * FROM corpq.score_job_distributed($3)" 2>&1 >/dev/null) && fail "score_job_distributed with $1 succeeded"
	echo "$err" | grep -q -- "$2" || fail "score_job_distributed with $1: $err"
}
dist_err "a target in another co-location group" "target table public.big_elsewhere is not co-located with public.big" "'m', 'big', 'big_elsewhere'"
dist_err "a local target" "table public.big_local is not a Citus table distributed by column id" "'m', 'big', 'big_local'"
dist_err "a corpus distributed by src" "table public.big_by_src is not a Citus table distributed by column id" "'m', 'big_by_src', 'big_scores'"
dist_err "an unknown model" 'model "m_none" does not exist' "'m_none', 'big', 'big_scores'"
# a model the workers lack: refused before anything is submitted
qc -c "SELECT corpq.model_create('m_here', '{\"preset\": \"tiny\", \"max_positions\": 32}', 's_src', 's_tgt', 3)" >/dev/null
dist_err "a model only on the coordinator" "node \"127.0.0.1:[0-9]*\" has a different corpq catalog: model \"m_here\" version 1 differs" \
	"'m_here', 'big', 'big_scores'"
qc -c "SELECT corpq.model_drop('m_here')" >/dev/null
dist_err "a target without the columns" "target table public.big_scores must have the columns" \
	"'m', 'big', 'big_scores', '{\"columns\": \"nope, u\", \"what\": \"sent_prob, uncertainty\"}'"
[ "$(qn w1 -c "SELECT count(*) FROM corpq.jobs WHERE kind = 'score'")$(qn w2 -c "SELECT count(*) FROM corpq.jobs WHERE kind = 'score'")" = 00 ] ||
	fail "a refused score_job_distributed left jobs on the workers"
# a worker that refuses the job (its sessions are read-only for curator): the
# job the other worker started is cancelled
qn w2 -c "SET citus.enable_ddl_propagation = off" -c "ALTER ROLE curator SET default_transaction_read_only = on" >/dev/null
dist_err "a worker refusing the job" "could not submit the score job on node \"127.0.0.1:$port_w2\"" "'m', 'big', 'big_scores', '$opts'"
qn w2 -c "SET citus.enable_ddl_propagation = off" -c "ALTER ROLE curator RESET default_transaction_read_only" >/dev/null
[ "$(qn w1 -c "SELECT string_agg(corpq.job_wait(id, '60 s'), ',') FROM corpq.jobs WHERE kind = 'score'")" = cancelled ] ||
	fail "the job on w1 was not cancelled when w2 refused: $(qn w1 -c "SELECT state, error FROM corpq.jobs WHERE kind = 'score'")"
[ "$(qn w2 -c "SELECT count(*) FROM corpq.jobs WHERE kind = 'score'")" = 0 ] || fail "a job on the read-only w2"
qc -c "TRUNCATE big_scores" >/dev/null

jobs=$(qc -F ' ' -c "SELECT node, job FROM corpq.score_job_distributed('m', 'big', 'big_scores', '$opts') ORDER BY node")
[ "$(echo "$jobs" | wc -l)" = 2 ] || fail "not one job per worker: $jobs"
job_w1=$(echo "$jobs" | awk -v n="127.0.0.1:$port_w1" '$1 == n { print $2 }')
job_w2=$(echo "$jobs" | awk -v n="127.0.0.1:$port_w2" '$1 == n { print $2 }')
[ -n "$job_w1" ] && [ -n "$job_w2" ] || fail "jobs: $jobs"
# each job reads its worker's shards and pins the model the coordinator meant
for n in w1 w2; do
	eval "j=\$job_$n port=\$port_$n"
	q=$(qn $n -c "SELECT args ->> 'model' || ' ' || owner || ' ' || (args ->> 'query' ~ 'FROM public\.big_[0-9]+')
	                FROM corpq.jobs WHERE id = $j")
	[ "$q" = "m@2 curator true" ] || fail "job $j on $n: $q"
	shards=$(qn c -c "SELECT string_agg('public.' || shard_name, ',' ORDER BY shard_name) FROM citus_shards
	                   WHERE table_name = 'big'::regclass AND nodeport = $port")
	[ "$(qn $n -c "SELECT string_agg(m[1], ',' ORDER BY m[1]) FROM corpq.jobs, regexp_matches(args ->> 'query', 'FROM (public\.big_[0-9]+)', 'g') m WHERE id = $j")" = "$shards" ] ||
		fail "the job on $n does not read its shards $shards"
done
# progress, from the coordinator: w1's job once it has committed a chunk
progress() {
	qc -c "SELECT coalesce(figures ->> 'committed_rows', error) FROM corpq.worker_job_progress()
	        WHERE node = '127.0.0.1:$port_w1' AND (id = $job_w1 OR error IS NOT NULL)"
}
for i in $(seq 600); do
	c=$(progress)
	[ -n "$c" ] && [ "$c" -gt 0 ] 2>/dev/null && break
	[ -z "$c" ] && qn w1 -c "SELECT state FROM corpq.jobs WHERE id = $job_w1" | grep -Eq 'succeeded|failed|cancelled' &&
		fail "the job on w1 ended before the restart: $(qn w1 -c "SELECT state, error, result FROM corpq.jobs WHERE id = $job_w1") (make it longer)"
	sleep 0.05
done
[ "$c" -gt 0 ] 2>/dev/null || fail "no chunk committed on w1 seen from the coordinator: $c"
rows_w1=$(qn w1 -c "SELECT count(*) FROM ($(qn w1 -c "SELECT args ->> 'query' FROM corpq.jobs WHERE id = $job_w1")) q")
[ "$(qc -c "SELECT count(*) FROM corpq.worker_job_progress() WHERE node = '127.0.0.1:$port_w1' AND id = $job_w1
             AND kind = 'score' AND state = 'running' AND phase = 'scoring' AND done > 0 AND total = $rows_w1 AND unit = 'pairs'")" = 1 ] ||
	fail "worker_job_progress ($rows_w1 rows on w1): $(qc -c "SELECT * FROM corpq.worker_job_progress()")"
as_pg pg_ctl -D "$so_tmp/w1" -m immediate -w stop >/dev/null
log "w1 killed with $c rows of its job committed"
# the coordinator names the worker it cannot read
p=$(qc -c "SELECT node, error IS NOT NULL FROM corpq.worker_job_progress() WHERE node = '127.0.0.1:$port_w1'")
[ "$p" = "127.0.0.1:$port_w1|t" ] || fail "worker_job_progress with w1 down: $p"
restart_node w1
for i in $(seq 1200); do
	[ "$(qc -c "SELECT count(*) FROM corpq.worker_job_progress()")" = 0 ] && break
	sleep 0.25
done
[ "$(qc -c "SELECT count(*) FROM corpq.worker_job_progress()")" = 0 ] ||
	fail "jobs still running: $(qc -c "SELECT * FROM corpq.worker_job_progress()")"
r1=$(qn w1 -c "SELECT state, attempts, (result ->> 'resumed_from_row')::int > 0, result ->> 'rows' FROM corpq.jobs WHERE id = $job_w1")
r2=$(qn w2 -c "SELECT state, attempts, result ->> 'rows' FROM corpq.jobs WHERE id = $job_w2")
case "$r1" in "succeeded|2|t|"*) ;; *) fail "the job on w1 after the restart: $r1 $(qn w1 -c "SELECT error FROM corpq.jobs WHERE id = $job_w1")" ;; esac
case "$r2" in "succeeded|1|"*) ;; *) fail "the job on w2: $r2" ;; esac
[ "${r1##*|}" = "$rows_w1" ] && [ $(( ${r1##*|} + ${r2##*|} )) = 6000 ] ||
	fail "the jobs wrote ${r1##*|} + ${r2##*|} rows, not $rows_w1 + the rest of 6000"
[ "$(qc -c "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || min(id) || ' ' || max(id) FROM big_scores")" = "6000 6000 1 6000" ] ||
	fail "not every id scored once: $(qc -c "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM big_scores")"
# the results as docs/scaling.md reads them from the coordinator
[ "$(qc -c "SELECT string_agg(r.state || ':' || r.rows, ',' ORDER BY w.nodeport)
             FROM run_command_on_workers(\$\$SELECT json_agg(json_build_object('job', id, 'state', state, 'rows', result -> 'rows', 'error', error))
                                          FROM corpq.jobs WHERE kind = 'score' AND state <> 'cancelled'\$\$) w,
                  json_to_recordset(w.result::json) r (job bigint, state text, rows bigint)")" = \
	"$(qc -c "SELECT string_agg(x, ',' ORDER BY p) FROM (VALUES ($port_w1, 'succeeded:${r1##*|}'), ($port_w2, 'succeeded:${r2##*|}')) v (p, x)")" ] ||
	fail "the jobs' results read through run_command_on_workers"
bits="md5(string_agg(id || ':' || float8send(s) || ':' || float8send(u), ',' ORDER BY id))"
a=$(qc -c "SELECT $bits FROM (SELECT id, score s, u FROM big_scores) q")
b=$(qc -c "SELECT $bits FROM (SELECT id, corpq.sent_prob('m@2', src, tgt) s,
                                     corpq.uncertainty('m@2', src, tgt, 'enteos', 20, 0) u FROM big_local) q")
[ "$a" = "$b" ] || fail "the distributed jobs' scores differ from the coordinator's per-row sent_prob and uncertainty"
for n in w1 w2; do
	[ "$(qn $n -c "SELECT count(*) FROM pg_prepared_xacts")" = 0 ] || fail "prepared transactions left on $n"
done
log "score_job_distributed: a job per worker over its shards, w1 killed after $c rows and resumed ($r1); 6000 ids scored once, equal to the per-row functions to the bit"

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
echo "$err" | grep -q "copying segmenter s_bpe to worker 127.0.0.1:$port_w2: failed to connect" || fail "copy, worker down: $err"
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
