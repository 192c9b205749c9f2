#!/usr/bin/env bash
# What a new user does first, on the shared corpora themselves (issue 54): the
# load recipe of docs/scaling.md, read from the document and run as written
# on every parallel file (only the file name replaced), must take every line
# verbatim -- the shared corpora have text ids, quotes that do not balance,
# backslashes -- and the first curation step must then run on PostgreSQL's
# default settings (work_mem 4 MB).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -t 900

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$tmp" <<'PY' || fail "could not read the load recipe from docs/scaling.md"
import sys
sys.path.insert(0, "test/docs")
import examples
ours = examples.fragments("docs/scaling.md", "test/integration/newcomer.sh")
if len(ours) != 1:
    raise SystemExit(f"expected 1 fragment naming newcomer.sh, found {len(ours)}")
open(f"{sys.argv[1]}/load.sql", "w").write("\n".join(ours[0]) + "\n")
PY
grep -q "'pairs.tsv'" "$tmp/load.sql" || fail "the recipe no longer reads 'pairs.tsv'"

[ "$(q -c "SHOW work_mem")" = 4MB ] || fail "the cluster does not run PostgreSQL's default work_mem"
for f in "${CORPQ_PARALLEL[@]}"; do
	name=$(basename "$f" .tsv)
	db="newcomer_$name"
	createdb "$db"
	q -d "$db" -c "CREATE EXTENSION corpq" >/dev/null
	# the recipe as written, on this file
	sed "s|'pairs.tsv'|'$f'|" "$tmp/load.sql" | q -d "$db" >/dev/null \
		|| fail "the recipe of docs/scaling.md does not load $f"
	# every line verbatim: the table's rows, joined as the file's lines, hash alike
	want=$(/usr/bin/python3 - "$f" <<'PY'
import hashlib, sys
lines = open(sys.argv[1], encoding="utf-8", newline="").read().split("\n")
body = [l for l in lines[1:] if l != ""]
print(len(body), hashlib.md5("\n".join(body).encode("utf-8")).hexdigest())
PY
)
	got=$(q -d "$db" -c "SELECT count(*) || ' ' || md5(string_agg(concat_ws(E'\t', source_id, domain, src, tgt), E'\n' ORDER BY id)) FROM corpus")
	[ "$got" = "$want" ] || fail "$f: the table holds $got (rows, md5), the file $want"
	quotes=$(q -d "$db" -c "SELECT count(*) FROM corpus WHERE src LIKE '%\"%' OR tgt LIKE '%\"%'")
	log "$name: $(cut -d' ' -f1 <<<"$got") pairs loaded verbatim ($quotes with a double quote)"
	# the first curation step at default settings: rules, language ID, duplicates
	q -d "$db" >/dev/null <<'SQL' || fail "$f: the rules and language ID do not run at default settings"
CREATE TABLE rejects AS
SELECT id, corpq.filter_rejects(src, tgt, corpq.filter_defaults()) AS failed,
       (corpq.langid(src)).lang AS src_lang, (corpq.langid(tgt)).lang AS tgt_lang,
       corpq.dedup_key(src, tgt) AS key
  FROM corpus;
SELECT count(*) FILTER (WHERE failed = '{}') FROM rejects;
SQL
done
log "passed"
