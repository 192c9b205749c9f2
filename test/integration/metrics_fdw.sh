#!/usr/bin/env bash
# bleu(), chrf() and paired_bootstrap() over a corpus sharded on two servers
# with postgres_fdw (docs/metrics.md and docs/scaling.md).  A coordinator and
# two nodes on loopback ports (the cluster helpers of scaleout_fdw.sh).
# Checked:
#   - grouped by the partition key (domain), bleu() and chrf() are pushed down
#     whole: the nodes compute them (Remote SQL);
#   - grouped by something else over hash partitions, the rows are fetched
#     and aggregated on the coordinator (PostgreSQL 15 ships no partial
#     aggregates);
#   - every result equals the single-server one, bit for bit, and
#     paired_bootstrap through the foreign partitions equals it too.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
CORPQ_SCALEOUT_LIB=1 source test/integration/scaleout_fdw.sh

start_node c
start_node n1
start_node n2
for n in c n1 n2; do qn $n -c "CREATE EXTENSION corpq"; done
link_nodes c n1 n2

qn c >/dev/null <<'SQL'
CREATE TABLE mt_local AS
WITH w AS (SELECT ARRAY['the', 'a', 'cat', 'dog', 'sat', 'ran', 'on', 'under', 'mat', 'tree', 'año',
                        'niño', '¿qué?', 'Σοφία', 'big', '3.14', 'house', 'garden,', 'near', 'river.'] AS w)
SELECT g::bigint AS id, (ARRAY['bible', 'ddtp', 'l10n'])[1 + g % 3] AS domain, ref,
       CASE g % 4 WHEN 0 THEN ref WHEN 1 THEN regexp_replace(ref, ' \S+', '')
                  WHEN 2 THEN regexp_replace(ref, '(\S+) (\S+)', '\2 \1') ELSE upper(ref) END AS hyp_a,
       CASE g % 3 WHEN 0 THEN ref ELSE regexp_replace(ref, '(\S+)$', 'the \1') END AS hyp_b
  FROM generate_series(1, 1500) g, w,
       LATERAL (SELECT concat_ws(' ', w[1 + g % 20], w[1 + (g * 7) % 20], w[1 + (g * 3) % 20],
                                 w[1 + (g * 11) % 20], w[1 + (g / 5) % 20]) AS ref) r;
SQL
for n in n1 n2; do
	qn $n -c "CREATE TABLE mt_shard (id bigint PRIMARY KEY, domain text, ref text, hyp_a text, hyp_b text)" >/dev/null
	qn $n -c "CREATE TABLE mt_dom_shard (id bigint PRIMARY KEY, domain text, ref text, hyp_a text, hyp_b text)" >/dev/null
done
qn c >/dev/null <<'SQL'
ALTER SERVER n1 OPTIONS (ADD async_capable 'true');
ALTER SERVER n2 OPTIONS (ADD async_capable 'true');
CREATE TABLE mt (id bigint, domain text, ref text, hyp_a text, hyp_b text) PARTITION BY HASH (id);
CREATE FOREIGN TABLE mt_p0 PARTITION OF mt FOR VALUES WITH (MODULUS 2, REMAINDER 0)
    SERVER n1 OPTIONS (table_name 'mt_shard');
CREATE FOREIGN TABLE mt_p1 PARTITION OF mt FOR VALUES WITH (MODULUS 2, REMAINDER 1)
    SERVER n2 OPTIONS (table_name 'mt_shard');
CREATE TABLE mt_dom (id bigint, domain text, ref text, hyp_a text, hyp_b text) PARTITION BY LIST (domain);
CREATE FOREIGN TABLE mt_dom_a PARTITION OF mt_dom FOR VALUES IN ('bible')
    SERVER n1 OPTIONS (table_name 'mt_dom_shard');
CREATE FOREIGN TABLE mt_dom_b PARTITION OF mt_dom FOR VALUES IN ('ddtp', 'l10n')
    SERVER n2 OPTIONS (table_name 'mt_dom_shard');
INSERT INTO mt SELECT * FROM mt_local;
INSERT INTO mt_dom SELECT * FROM mt_local;
SQL
[ "$(qn n1 -c "SELECT count(*) FROM mt_shard")" -gt 500 ] && [ "$(qn n2 -c "SELECT count(*) FROM mt_shard")" -gt 500 ] ||
	fail "rows did not spread over both nodes"

plan() { qn c -c "SET enable_partitionwise_aggregate = on" -c "EXPLAIN (VERBOSE, COSTS OFF) $1" | tr '\n' ' ' | tr -s ' '; }
opts="'{\"tokenize\": \"intl\", \"lowercase\": true}'::jsonb"
p=$(plan "SELECT domain, corpq.bleu(hyp_a, ref, $opts), corpq.chrf(hyp_a, ref) FROM mt_dom GROUP BY domain")
grep -q "Remote SQL: SELECT domain, corpq.bleu(hyp_a, ref, '{\"tokenize\": \"intl\", \"lowercase\": true}'::jsonb), corpq.chrf(hyp_a, ref) FROM public.mt_dom_shard GROUP BY 1" <<<"$p" ||
	fail "per-domain bleu/chrf not pushed down whole: $p"
# not grouped by the partition key: PostgreSQL 15's postgres_fdw ships no
# partial aggregate, so the rows come to the coordinator (which may aggregate
# them per partition and combine the states, or all at once: the planner's
# choice; test/regress/sql/metrics.sql forces the partial path on local partitions)
p=$(plan "SELECT domain, corpq.bleu(hyp_a, ref) FROM mt GROUP BY domain")
grep -q "Remote SQL: SELECT domain, ref, hyp_a FROM public.mt_shard" <<<"$p" ||
	fail "bleu over hash partitions: $p"

# every result through the nodes equals the single-server one
same() {	# $1 label, $2 query over the partitioned table, $3 the same over mt_local
	local a b
	a=$(qn c -c "SET enable_partitionwise_aggregate = on" -c "SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM ($2) r")
	b=$(qn c -c "SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM ($3) r")
	[ -n "$a" ] && [ "$a" = "$b" ] || fail "$1: $a vs $b"
}
q="SELECT domain, corpq.bleu(hyp_a, ref), corpq.bleu(hyp_b, ref, $opts), corpq.chrf(hyp_a, ref, '{\"word_order\": 2}') FROM %s GROUP BY domain"
same "per domain, list partitions (pushed down)" "$(printf "$q" mt_dom)" "$(printf "$q" mt_local)"
same "per domain, hash partitions (combined)" "$(printf "$q" mt)" "$(printf "$q" mt_local)"
q="SELECT corpq.bleu(hyp_a, ref), corpq.chrf(hyp_b, ref) FROM %s"
same "whole table" "$(printf "$q" mt)" "$(printf "$q" mt_local)"
q="SELECT domain, corpq.paired_bootstrap(hyp_a, hyp_b, ref, 200, 5) FROM %s GROUP BY domain"
same "paired_bootstrap per domain" "$(printf "$q" mt)" "$(printf "$q" mt_local)"
same "paired_bootstrap per domain, pushed down" "$(printf "$q" mt_dom)" "$(printf "$q" mt_local)"
log "ok ($(qn c -c "SELECT round(corpq.bleu(hyp_a, ref)::numeric, 2) FROM mt") BLEU over $(qn c -c "SELECT count(*) FROM mt") rows on two nodes)"
