#!/usr/bin/env bash
# A corpus sharded over three PostgreSQL servers with postgres_fdw
# (docs/scaling.md).  A coordinator and two nodes run on loopback ports, each
# with corpq; the coordinator's corpus is partitioned by hash of id (and, in a
# second table, by domain) into foreign tables on the nodes.  Checked:
#   - the catalog reaches the nodes by export/import and row copies, and
#     corpq.catalog_check() passes; a node with another model version (made
#     again: shipping the old version fails; installed afresh: only the check
#     sees it), a
#     node without corpq and a node that is down fail with a message naming it
#   - pinned-model scoring is computed on the nodes (Remote SQL), the
#     text-named overload is not; aggregates grouped by the partition key
#     are pushed down whole with partitionwise aggregation
#   - every result (per-row scores, per-domain avg(sent_prob), cav_accumulate
#     overall and per domain, uncertainty) equals the single-server result
#   - a write through the partitions while a node is down leaves nothing
#     behind on the node that was up
# bench_fdw.sh sources this file with CORPQ_SCALEOUT_LIB=1 for the cluster
# helpers only.
set -euo pipefail
# bench_fdw.sh has sourced lib.sh already (and left the directory of $0)
[ -n "${CORPQ_ROOT:-}" ] || . "$(dirname "$0")/../lib.sh"
PATH=/usr/lib/postgresql/15/bin:$PATH

# ---- throw-away servers: initdb + pg_ctl in one temporary directory --------
# (pg_virtualenv makes one cluster per version; as root they run as postgres)
so_tmp=$(mktemp -d /tmp/corpq-scale.XXXXXX)
chmod 755 "$so_tmp"
so_nodes=()
if [ "$(id -u)" = 0 ]; then
	chown postgres: "$so_tmp"
	as_pg() { runuser -u postgres -- "$@"; }
else
	as_pg() { "$@"; }
fi
so_cleanup() {
	local n
	for n in "${so_nodes[@]}"; do
		as_pg pg_ctl -D "$so_tmp/$n" -m immediate stop >/dev/null 2>&1 || true
	done
	rm -rf "$so_tmp"
}
trap so_cleanup EXIT

port_free() { ! (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_node NAME [extra postgres -c options...]: sets port_NAME (and
# opts_NAME, the options restart_node starts it with again)
start_node() {
	local name=$1 port try
	shift
	eval "opts_$name=\$*"
	as_pg initdb -D "$so_tmp/$name" -A trust -U postgres --no-sync -E UTF8 \
		--locale=C >"$so_tmp/$name.initdb.log" 2>&1 || { cat "$so_tmp/$name.initdb.log"; return 1; }
	for try in 1 2 3 4 5 6 7 8; do
		port=$((20000 + RANDOM % 20000))
		port_free "$port" || continue
		if as_pg pg_ctl -D "$so_tmp/$name" -l "$so_tmp/$name.log" -w -t 60 start \
			-o "-p $port -k $so_tmp -c listen_addresses=127.0.0.1 -c fsync=off \
			    -c max_worker_processes=16 -c max_parallel_workers=8 $*" >/dev/null; then
			so_nodes+=("$name")
			eval "port_$name=$port"
			return 0
		fi
	done
	cat "$so_tmp/$name.log"
	return 1
}
stop_node() { as_pg pg_ctl -D "$so_tmp/$1" -m fast -w stop >/dev/null; }
restart_node() {
	local port opts
	eval "port=\$port_$1 opts=\$opts_$1"
	as_pg pg_ctl -D "$so_tmp/$1" -l "$so_tmp/$1.log" -w -t 60 start \
		-o "-p $port -k $so_tmp -c listen_addresses=127.0.0.1 -c fsync=off \
		    -c max_worker_processes=16 -c max_parallel_workers=8 $opts" >/dev/null
}
# qn NODE psql-args...: psql on a node as postgres, stop on the first error
qn() {
	local node=$1 port
	shift
	eval "port=\$port_$node"
	psql -X -Atq -v ON_ERROR_STOP=1 -h "$so_tmp" -p "$port" -U postgres -d postgres "$@"
}

# copy_catalog FROM TO [vocabularies]: BPE models (bpe_export -> bpe_import),
# vocabularies (vocab_export -> vocab_import: the same ids) and, unless the
# third argument says vocabularies only, every model version (model_export ->
# model_import, in version order) of FROM -- the functions any role can use
# on the rows it owns (docs/scaling.md)
copy_catalog() {
	local from=$1 to=$2 only=${3:-} m v
	qn "$from" -c "\\copy (SELECT name, corpq.bpe_export(name) FROM corpq.bpe_models ORDER BY name) TO '$so_tmp/bpe.tsv'"
	qn "$from" -c "\\copy (SELECT name, corpq.vocab_export(name) FROM corpq.vocabularies ORDER BY name) TO '$so_tmp/vocab.tsv'"
	qn "$to" >/dev/null <<SQL
CREATE TEMP TABLE bpe_doc (name text, codes text);
\\copy bpe_doc FROM '$so_tmp/bpe.tsv'
SELECT corpq.bpe_import(name, codes) FROM bpe_doc;
CREATE TEMP TABLE vocab_doc (name text, doc jsonb);
\\copy vocab_doc FROM '$so_tmp/vocab.tsv'
SELECT corpq.vocab_import(name, doc) FROM vocab_doc;
SQL
	[ "$only" = vocabularies ] && return
	qn "$from" -F ' ' -c "SELECT c.name, w.version FROM corpq.model_catalog c
	                       JOIN corpq.model_versions w ON w.model = c.id ORDER BY c.name, w.version" |
	while read -r m v; do
		qn "$from" -c "\\copy (SELECT c.src_vocab, c.tgt_vocab, encode(corpq.model_export('$m@$v'), 'base64')
		                        FROM corpq.model_catalog c WHERE c.name = '$m') TO '$so_tmp/model.tsv'"
		qn "$to" >/dev/null <<SQL
CREATE TEMP TABLE img (src text, tgt text, b64 text);
\\copy img FROM '$so_tmp/model.tsv'
SELECT corpq.model_import('$m', decode(b64, 'base64'), src, tgt) FROM img;
SQL
	done
}

# link_nodes COORD NODE...: postgres_fdw servers named after the nodes, with
# corpq shippable, and a foreign table fp_NODE on each node's fingerprints
link_nodes() {
	local coord=$1 n port
	shift
	qn "$coord" -c "CREATE EXTENSION IF NOT EXISTS postgres_fdw" >/dev/null
	for n in "$@"; do
		eval "port=\$port_$n"
		qn "$coord" >/dev/null <<SQL
CREATE SERVER $n FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '127.0.0.1', port '$port', dbname 'postgres', extensions 'corpq');
CREATE USER MAPPING FOR CURRENT_USER SERVER $n OPTIONS (user 'postgres');
CREATE FOREIGN TABLE fp_$n (kind text, name text, version int, fingerprint text)
    SERVER $n OPTIONS (schema_name 'corpq', table_name 'catalog_fingerprints');
SQL
	done
}

[ -n "${CORPQ_SCALEOUT_LIB:-}" ] && return 0

tracked="-c track_functions=all"
start_node c $tracked
start_node n1 $tracked
start_node n2 $tracked
for n in c n1 n2; do qn $n -c "CREATE EXTENSION corpq"; done

# ---- the single-server copy and the catalog, built on the coordinator ------
qn c >/dev/null <<'SQL'
CREATE TABLE corpus_local AS
SELECT g::bigint AS id, (ARRAY['bible', 'ddtp', 'l10n'])[1 + g % 3] AS domain,
       concat_ws(' ', 'a' || (g % 31), 'b' || (g * 7 % 23), repeat('c' || (g % 5) || ' ', g % 7)) AS src,
       concat_ws(' ', 'x' || (g % 19), repeat('y' || (g * 3 % 13) || ' ', g % 9)) AS tgt
  FROM generate_series(1, 1200) g;
SELECT corpq.bpe_import('s_bpe', E'#version: 0.2\nc 1\nc1 2</w>\n');
SELECT corpq.vocab_build('s_src', 'SELECT src FROM corpus_local', 's_bpe');
SELECT corpq.vocab_build('s_tgt', 'SELECT tgt FROM corpus_local');
SELECT corpq.model_create('m', '{"preset": "tiny", "max_positions": 32}', 's_src', 's_tgt', 1);
SQL
copy_catalog c n1
copy_catalog c n2
link_nodes c n1 n2
[ "$(qn c -c "SELECT corpq.catalog_check('fp_n1', 'fp_n2')")" = 2 ] || fail "catalog_check after the copy"
[ "$(qn c -c "SELECT count(*) FROM corpq.catalog_fingerprint() WHERE kind IN ('bpe', 'vocabulary', 'model')")" = 4 ] ||
	fail "fingerprint rows: $(qn c -c 'SELECT * FROM corpq.catalog_fingerprint()')"

# ---- shards on the nodes; on the coordinator a corpus partitioned by hash of
# id and one by domain, each into foreign tables on n1 and n2
for n in n1 n2; do
	qn $n >/dev/null <<'SQL'
CREATE TABLE corpus_shard (id bigint PRIMARY KEY, domain text, src text, tgt text);
CREATE TABLE corpus_dom_shard (id bigint PRIMARY KEY, domain text, src text, tgt text);
-- scores computed where the rows are: a foreign table on this view ships them
CREATE VIEW corpus_scored AS
SELECT id, domain, corpq.sent_prob('m@1'::corpq.pinned_model, src, tgt) AS p FROM corpus_shard;
SQL
done
qn c >/dev/null <<'SQL'
ALTER SERVER n1 OPTIONS (ADD async_capable 'true', ADD fetch_size '1000', ADD batch_size '500');
ALTER SERVER n2 OPTIONS (ADD async_capable 'true', ADD fetch_size '1000', ADD batch_size '500');
CREATE TABLE corpus (id bigint, domain text, src text, tgt text) PARTITION BY HASH (id);
CREATE FOREIGN TABLE corpus_p0 PARTITION OF corpus FOR VALUES WITH (MODULUS 2, REMAINDER 0)
    SERVER n1 OPTIONS (table_name 'corpus_shard');
CREATE FOREIGN TABLE corpus_p1 PARTITION OF corpus FOR VALUES WITH (MODULUS 2, REMAINDER 1)
    SERVER n2 OPTIONS (table_name 'corpus_shard');
CREATE TABLE corpus_dom (id bigint, domain text, src text, tgt text) PARTITION BY LIST (domain);
CREATE FOREIGN TABLE corpus_dom_a PARTITION OF corpus_dom FOR VALUES IN ('bible')
    SERVER n1 OPTIONS (table_name 'corpus_dom_shard');
CREATE FOREIGN TABLE corpus_dom_b PARTITION OF corpus_dom FOR VALUES IN ('ddtp', 'l10n')
    SERVER n2 OPTIONS (table_name 'corpus_dom_shard');
CREATE TABLE corpus_scored (id bigint, domain text, p float8) PARTITION BY HASH (id);
CREATE FOREIGN TABLE corpus_scored_p0 PARTITION OF corpus_scored FOR VALUES WITH (MODULUS 2, REMAINDER 0)
    SERVER n1 OPTIONS (table_name 'corpus_scored');
CREATE FOREIGN TABLE corpus_scored_p1 PARTITION OF corpus_scored FOR VALUES WITH (MODULUS 2, REMAINDER 1)
    SERVER n2 OPTIONS (table_name 'corpus_scored');
INSERT INTO corpus SELECT * FROM corpus_local;
INSERT INTO corpus_dom SELECT * FROM corpus_local;
SQL
[ "$(qn n1 -c "SELECT count(*) FROM corpus_shard")" -gt 400 ] && [ "$(qn n2 -c "SELECT count(*) FROM corpus_shard")" -gt 400 ] ||
	fail "rows did not spread over both nodes"
[ "$(qn n1 -c "SELECT string_agg(DISTINCT domain, ',') FROM corpus_dom_shard")" = bible ] || fail "domain partition on n1"

# ---- which calls are computed on the nodes ------------------------------------
plan() { qn c -c "SET enable_partitionwise_aggregate = on" -c "EXPLAIN (VERBOSE, COSTS OFF) $1" | tr '\n' ' ' | tr -s ' '; }
# PostgreSQL 15's postgres_fdw prices a shipped aggregate's per-row function
# as the local plan does; with corpq's COSTs the two totals fall within the
# planner's 1% fuzz and the local plan wins on its lower start-up cost.  A
# coordinator that keeps no corpus rows itself sets the COST of the functions
# it aggregates on the nodes low (docs/scaling.md, "Aggregates on the nodes").
qn c >/dev/null <<'SQL'
ALTER FUNCTION corpq.sent_prob(corpq.pinned_model, text, text) COST 1;
ALTER FUNCTION corpq.cav_accumulate_trans(corpq.cav, text, text, int) COST 1;
SQL
pinned="corpq.sent_prob('m@1'::corpq.pinned_model, src, tgt)"
p=$(plan "SELECT id FROM corpus WHERE $pinned > 0.01")
grep -q "Remote SQL: SELECT id FROM public.corpus_shard WHERE ((corpq.sent_prob('m@1'::corpq.pinned_model, src, tgt)" <<<"$p" ||
	fail "pinned filter not shipped: $p"
grep -q "Async Foreign Scan" <<<"$p" || fail "foreign scans not asynchronous: $p"
p=$(plan "SELECT id FROM corpus WHERE corpq.sent_prob('m@1', src, tgt) > 0.01")
grep -q "Remote SQL: SELECT id, src, tgt FROM public.corpus_shard \(.*Remote\|$\)" <<<"$p" ||
	fail "a text-named (STABLE) model must not be shipped: $p"
# PostgreSQL 15's postgres_fdw computes a base scan's target list locally
p=$(plan "SELECT id, $pinned FROM corpus")
grep -q "Remote SQL: SELECT id, src, tgt FROM public.corpus_shard" <<<"$p" ||
	fail "select-list expressions are shipped now: update docs/scaling.md: $p"
p=$(plan "SELECT domain, avg($pinned), count(*) FROM corpus_dom GROUP BY domain")
grep -q "Remote SQL: SELECT domain, avg(corpq.sent_prob('m@1'::corpq.pinned_model, src, tgt)), count(\*) FROM public.corpus_dom_shard GROUP BY 1" <<<"$p" ||
	fail "per-domain avg not pushed down whole: $p"
p=$(plan "SELECT domain, corpq.cav_accumulate(src, tgt, 6) FROM corpus_dom GROUP BY domain")
grep -q "Remote SQL: SELECT domain, corpq.cav_accumulate(src, tgt, 6) FROM public.corpus_dom_shard GROUP BY 1" <<<"$p" ||
	fail "per-domain cav_accumulate not pushed down whole: $p"
# merging the per-partition CAVs on the coordinator: each one is shipped whole
p=$(plan "SELECT corpq.cav_sum(c) FROM (SELECT domain, corpq.cav_accumulate(src, tgt, 6) c FROM corpus_dom GROUP BY domain) g")
grep -q "Remote SQL: SELECT domain, corpq.cav_accumulate(src, tgt, 6) FROM public.corpus_dom_shard GROUP BY 1" <<<"$p" ||
	fail "cav_sum over per-domain cav_accumulate: $p"
# not grouped by the partition key: partial states are not shipped (PG 15)
p=$(plan "SELECT corpq.cav_accumulate(src, tgt, 6) FROM corpus")
grep -q "Remote SQL: SELECT src, tgt FROM public.corpus_shard" <<<"$p" || fail "cav_accumulate over all shards: $p"

# ---- where sent_prob ran: function call counts of each server ----------------
calls() {	# $1 = server: calls of the pinned sent_prob, once its stats are flushed
	qn "$1" -c "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions
	             WHERE schemaname = 'corpq' AND funcname = 'sent_prob'"
}
wait_calls() {	# $1 = server, $2 = expected count
	local i got
	for i in $(seq 1 60); do
		got=$(calls "$1")
		[ "$got" = "$2" ] && return 0
		sleep 0.25
	done
	fail "$1 ran sent_prob $got times, expected $2"
}
qn c -c "SELECT count(*) FROM corpus_scored WHERE p > 0" >/dev/null
qn c -c "SELECT count(*) FROM corpus WHERE $pinned > 0" >/dev/null
qn c -c "SET enable_partitionwise_aggregate = on" -c "SELECT domain, avg($pinned) FROM corpus_dom GROUP BY domain" >/dev/null
n1_rows=$(qn n1 -c "SELECT count(*) FROM corpus_shard")
bible=$(qn n1 -c "SELECT count(*) FROM corpus_dom_shard")
wait_calls n1 $((2 * n1_rows + bible))
wait_calls n2 $((2 * (1200 - n1_rows) + 1200 - bible))
wait_calls c 0

# ---- every result equals the single-server result ----------------------------
same() {	# $1 = what, $2 = query on the shards, $3 = the same on corpus_local
	local a b
	a=$(qn c -c "SET enable_partitionwise_aggregate = on" -c "$2")
	b=$(qn c -c "$3")
	[ -n "$a" ] && [ "$a" = "$b" ] || fail "$1 differs from one server: '$a' vs '$b'"
}
digest="md5(string_agg(id || ':' || p, ',' ORDER BY id))"
same "per-row sent_prob computed on the nodes" \
	"SELECT $digest FROM corpus_scored" \
	"SELECT $digest FROM (SELECT id, $pinned p FROM corpus_local) s"
same "per-row sent_prob and uncertainty through the partitions" \
	"SELECT $digest FROM (SELECT id, $pinned || '/' || corpq.uncertainty('m@1', src, tgt, 'enteos', 2, 7) p FROM corpus) s" \
	"SELECT $digest FROM (SELECT id, $pinned || '/' || corpq.uncertainty('m@1', src, tgt, 'enteos', 2, 7) p FROM corpus_local) s"
same "rows selected by a shipped filter" \
	"SELECT md5(string_agg(id::text, ',' ORDER BY id)) FROM corpus WHERE $pinned > 0.0011" \
	"SELECT md5(string_agg(id::text, ',' ORDER BY id)) FROM corpus_local WHERE $pinned > 0.0011"
for t in corpus_dom corpus; do
	# sums in another row order differ in the last bits: compare to 1e-12
	same "per-domain avg(sent_prob) on $t" \
		"SELECT string_agg(domain || ':' || round(a::numeric, 12) || ':' || n, ',' ORDER BY domain)
		   FROM (SELECT domain, avg($pinned) a, count(*) n FROM $t GROUP BY domain) g" \
		"SELECT string_agg(domain || ':' || round(a::numeric, 12) || ':' || n, ',' ORDER BY domain)
		   FROM (SELECT domain, avg($pinned) a, count(*) n FROM corpus_local GROUP BY domain) g"
	same "per-domain cav_accumulate on $t" \
		"SELECT string_agg(domain || ':' || md5(corpq.cav_to_bytea(c)), ',' ORDER BY domain)
		   FROM (SELECT domain, corpq.cav_accumulate(src, tgt, 6) c FROM $t GROUP BY domain) g" \
		"SELECT string_agg(domain || ':' || md5(corpq.cav_to_bytea(c)), ',' ORDER BY domain)
		   FROM (SELECT domain, corpq.cav_accumulate(src, tgt, 6) c FROM corpus_local GROUP BY domain) g"
	same "cav_accumulate of all shards of $t" \
		"SELECT md5(corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6, NULL, 's_bpe'))) FROM $t" \
		"SELECT md5(corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6, NULL, 's_bpe'))) FROM corpus_local"
done
same "cav_sum of per-node CAVs" \
	"SELECT md5(corpq.cav_to_bytea(corpq.cav_sum(c))) FROM
	   (SELECT corpq.cav_accumulate(src, tgt, 6) c FROM corpus_dom GROUP BY domain) g" \
	"SELECT md5(corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6))) FROM corpus_local"

# ---- faults -------------------------------------------------------------------
# a node that is down: postgres_fdw's error names it; a write through the
# partitions leaves nothing on the node that was up
before=$(qn n1 -c "SELECT count(*) FROM corpus_shard")
stop_node n2
err=$(qn c -c "SELECT count(*) FROM corpus" 2>&1 >/dev/null) && fail "query with n2 down succeeded"
grep -q 'could not connect to server "n2"' <<<"$err" || fail "node down: $err"
echo "  n2 down, SELECT: $(echo "$err" | head -1)"
err=$(qn c -c "INSERT INTO corpus SELECT id + 100000, domain, src, tgt FROM corpus_local" 2>&1 >/dev/null) &&
	fail "insert with n2 down succeeded"
grep -q '"n2"' <<<"$err" || fail "insert with n2 down: $err"
echo "  n2 down, INSERT: $(echo "$err" | head -1)"
[ "$(qn n1 -c "SELECT count(*) FROM corpus_shard")" = "$before" ] || fail "rows left on n1 by a failed insert"
err=$(qn c -c "SELECT corpq.catalog_check('fp_n1', 'fp_n2')" 2>&1 >/dev/null) && fail "catalog_check with n2 down"
grep -q 'could not read the corpq catalog of node "n2"' <<<"$err" || fail "catalog_check, node down: $err"
restart_node n2
[ "$(qn c -c "SELECT count(*) FROM corpus")" = 1200 ] || fail "rows after n2 came back"

# "m" dropped and made again on n2: a version number is never given to other
# weights, so n2's new model is m@2 and shipping m@1 there fails instead of
# scoring with it; the check names the difference
qn n2 >/dev/null <<'SQL'
SELECT corpq.model_drop('m');
SELECT corpq.model_create('m', '{"preset": "tiny", "max_positions": 32}', 's_src', 's_tgt', 2);
SQL
err=$(qn c -c "SELECT corpq.catalog_check('fp_n1', 'fp_n2')" 2>&1 >/dev/null) && fail "catalog_check missed the model made again on n2"
grep -q 'node "n2" (public.fp_n2) has a different corpq catalog: model "m" version' <<<"$err" ||
	fail "model made again: $err"
err=$(qn c -c "SELECT sum(p) FROM corpus_scored" 2>&1 >/dev/null) && fail "m@1 shipped to n2 after it was dropped there"
grep -q 'version 1 of model "m" was dropped' <<<"$err" || fail "dropped m@1 on n2: $err"
echo "  m made again on n2, shipped m@1: $(echo "$err" | head -1)"
# a node set up on its own (corpq installed afresh, the same vocabularies, a
# model of another seed): its m@1 is other weights, which only the check sees
qn n2 -c "DROP EXTENSION corpq CASCADE" >/dev/null 2>&1
qn n2 -c "CREATE EXTENSION corpq" >/dev/null
copy_catalog c n2 vocabularies
qn n2 >/dev/null <<'SQL'
SELECT corpq.model_create('m', '{"preset": "tiny", "max_positions": 32}', 's_src', 's_tgt', 2);
CREATE VIEW corpus_scored AS
SELECT id, domain, corpq.sent_prob('m@1'::corpq.pinned_model, src, tgt) AS p FROM corpus_shard;
SQL
err=$(qn c -c "SELECT corpq.catalog_check('fp_n1', 'fp_n2')" 2>&1 >/dev/null) && fail "catalog_check missed another model on n2"
grep -q 'node "n2" (public.fp_n2) has a different corpq catalog: model "m" version 1 differs' <<<"$err" ||
	fail "different model: $err"
# which is what the check prevents: scores shipped to n2 are now n2's model's
same_or_not=$(qn c -c "SELECT (SELECT $digest FROM corpus_scored) =
	                          (SELECT $digest FROM (SELECT id, $pinned p FROM corpus_local) s)")
[ "$same_or_not" = f ] || fail "scores did not change with n2's model"
copy_ok=$(qn c -c "SELECT count(*) FROM corpq.catalog_diff('fp_n1')")
[ "$copy_ok" = 0 ] || fail "n1 differs too"
# a version that only one node has
qn n1 -c "SELECT corpq.model_import('m', corpq.model_export('m@1'))" >/dev/null
err=$(qn c -c "SELECT corpq.catalog_check('fp_n1')" 2>&1 >/dev/null) && fail "catalog_check missed m@2 on n1"
grep -q 'node "n1" (public.fp_n1) has a different corpq catalog: model "m" version 2 differs' <<<"$err" ||
	fail "extra version: $err"
grep -q 'model "m" version 2: only on the node' <<<"$err" || fail "extra version detail: $err"

# a node without corpq
qn n2 -c "DROP EXTENSION corpq CASCADE" >/dev/null 2>&1
err=$(qn c -c "SELECT corpq.catalog_check('fp_n2')" 2>&1 >/dev/null) && fail "catalog_check on n2 without corpq"
grep -q 'corpq is not installed on node "n2" (public.fp_n2)' <<<"$err" || fail "no corpq: $err"
err=$(qn c -c "SELECT count(*) FROM corpus WHERE $pinned > 0" 2>&1 >/dev/null) && fail "shipped scoring on n2 without corpq"
grep -q 'corpq' <<<"$err" || fail "shipped scoring without corpq: $err"
echo "  n2 without corpq, shipped scoring: $(echo "$err" | head -1)"

log "OK (3 servers: pushdown, single-server equality, catalog check, node down, other model, no corpq)"
