#!/usr/bin/env bash
# What a new user does first, on the shared corpora themselves (issue 54): the
# load recipe of docs/scaling.md, read from the document and run as written
# on every parallel file (only the file name replaced), must take every line
# verbatim -- the shared corpora have text ids, quotes that do not balance,
# backslashes -- and the first curation step must then run on PostgreSQL's
# default settings (work_mem 4 MB).
#
# Then each page's recipe, read from the page (the blocks marked
# <!-- corpora: test/integration/newcomer.sh -->, test/docs/examples.py), runs
# on the corpora at the cluster's defaults, in the document's order, in its
# own database, and what it made is checked.  The recipes run on a sample of
# the corpora so that training and scoring stay a test's size: every
# CORPQ_RECIPE_EVERY-th pair of each file (default 40), written to a TSV of
# the same layout and loaded with the same statement of docs/scaling.md.  A
# training budget too long for a test is replaced by the block's visible
# <!-- corpora with: OLD => NEW --> marker, never in a copy of the recipe.
# CORPQ_RECIPE_PAGES (a list of pages) runs only those.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -t 1200

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

# ---- each page's recipe, on a sample loaded as docs/scaling.md loads a file
every=${CORPQ_RECIPE_EVERY:-40}
createdb recipes_base
first=yes
for f in "${CORPQ_PARALLEL[@]}"; do
	name=$(basename "$f")
	awk -v n="$every" 'NR == 1 || (NR - 2) % n == 0' "$f" > "$tmp/$name"
	if [ $first = yes ]; then
		sed "s|'pairs.tsv'|'$tmp/$name'|" "$tmp/load.sql" | q -d recipes_base >/dev/null \
			|| fail "the recipe of docs/scaling.md does not load the sample of $f"
		first=no
	else
		# the table is there: the recipe's \copy, as written, for the next file
		grep -F "'pairs.tsv'" "$tmp/load.sql" | sed "s|'pairs.tsv'|'$tmp/$name'|" | q -d recipes_base >/dev/null \
			|| fail "the \\copy of docs/scaling.md does not load the sample of $f"
	fi
done
q -d recipes_base -c "ANALYZE corpus" >/dev/null
pairs=$(q -d recipes_base -c "SELECT count(*) FROM corpus")
log "recipes: $pairs pairs (every ${every}th of each file), work_mem $(q -c 'SHOW work_mem'), shared_buffers $(q -c 'SHOW shared_buffers')"

# page -> the checks of what its recipe made (each row a failed check's text)
declare -A checks
checks[README.md]="
SELECT 'model m has no int8 version 2' WHERE NOT EXISTS (SELECT FROM corpq.models WHERE name = 'm' AND latest_version >= 2)
UNION ALL SELECT format('scores holds %s rows for %s pairs', (SELECT count(*) FROM scores), (SELECT count(*) FROM corpus))
 WHERE (SELECT count(*) FROM scores) <> (SELECT count(*) FROM corpus)
UNION ALL SELECT format('%s of the scores are NULL', count(*) FILTER (WHERE score IS NULL)) FROM scores
HAVING count(*) FILTER (WHERE score IS NULL) > count(*) / 10
UNION ALL SELECT 'the lexicon lex was not made' WHERE NOT EXISTS (SELECT FROM corpq.lexicons WHERE name = 'lex')
UNION ALL SELECT format('cavs: %s domains of %s', (SELECT count(*) FROM cavs), (SELECT count(DISTINCT domain) FROM corpus))
 WHERE (SELECT count(*) FROM cavs) <> (SELECT count(DISTINCT domain) FROM corpus)"
checks[docs/scaling.md]="
SELECT format('rejects holds %s rows for %s pairs', (SELECT count(*) FROM rejects), (SELECT count(*) FROM corpus))
 WHERE (SELECT count(*) FROM rejects) <> (SELECT count(*) FROM corpus)
UNION ALL SELECT format('%s candidates of %s pairs', (SELECT count(*) FROM candidates), (SELECT count(*) FROM corpus))
 WHERE (SELECT count(*) FROM candidates) NOT BETWEEN (SELECT count(*) / 2 FROM corpus) AND (SELECT count(*) - 1 FROM corpus)
UNION ALL SELECT format('scores holds %s rows for %s candidates', (SELECT count(*) FROM scores), (SELECT count(*) FROM candidates))
 WHERE (SELECT count(*) FROM scores) <> (SELECT count(*) FROM candidates)
UNION ALL SELECT format('%s of the scores are NULL', count(*) FILTER (WHERE score IS NULL)) FROM scores
HAVING count(*) FILTER (WHERE score IS NULL) > count(*) / 10
UNION ALL SELECT 'curator has no int8 version 2' WHERE NOT EXISTS (SELECT FROM corpq.models WHERE name = 'curator' AND latest_version >= 2)
UNION ALL SELECT format('curated holds %s of %s scored candidates (about 90%% expected)', (SELECT count(*) FROM curated), n)
  FROM (SELECT count(*) AS n FROM scores WHERE score IS NOT NULL) s
 WHERE (SELECT count(*) FROM curated) NOT BETWEEN 0.8 * n AND 0.95 * n"
checks[docs/embeddings.md]="
SELECT format('embed gave %s vectors for ids 1-3', count(corpq.embed('enc', src)))
  FROM corpus WHERE id <= 3 HAVING count(corpq.embed('enc', src)) <> 3
UNION ALL SELECT format('sentence_vectors holds %s rows (%s non-NULL) for %s pairs', count(*), count(embedding), (SELECT count(*) FROM corpus))
  FROM sentence_vectors HAVING count(*) <> (SELECT count(*) FROM corpus) OR count(embedding) < 0.9 * count(*)
UNION ALL SELECT format('src_vec/tgt_vec hold %s/%s rows', (SELECT count(*) FROM src_vec), (SELECT count(*) FROM tgt_vec))
 WHERE (SELECT count(*) FROM src_vec) <> (SELECT count(*) FROM corpus) OR (SELECT count(*) FROM tgt_vec) <> (SELECT count(*) FROM corpus)
UNION ALL SELECT format('mine_vectors at work_mem %s paired %s of %s sources', current_setting('work_mem'), count(*), (SELECT count(embedding) FROM src_vec))
  FROM corpq.mine_vectors('SELECT id, embedding FROM src_vec WHERE embedding IS NOT NULL',
                          'SELECT id, embedding FROM tgt_vec WHERE embedding IS NOT NULL', '{\"k\": 4}')
HAVING count(*) < 0.9 * (SELECT count(embedding) FROM src_vec)
UNION ALL SELECT 'the encoder training logged no dev figures of its own (p_at_1, dev_ppl NULL)'
 WHERE NOT EXISTS (SELECT FROM corpq.train_log WHERE dev::text LIKE '%p_at_1%' AND dev_ppl IS NULL)"
checks[docs/filters.md]="
SELECT format('the view clean keeps %s of %s pairs', (SELECT count(*) FROM clean), (SELECT count(*) FROM corpus))
 WHERE (SELECT count(*) FROM clean) NOT BETWEEN (SELECT count(*) / 2 FROM corpus) AND (SELECT count(*) - 1 FROM corpus)
UNION ALL SELECT format('%s embedding_cosine scores of a tenth of the pairs are NULL or out of [-1, 1]', count(*))
  FROM (SELECT corpq.embedding_cosine('enc', src, tgt) AS c FROM corpus WHERE id % 10 = 0) s
 WHERE c IS NULL OR c NOT BETWEEN -1 AND 1 HAVING count(*) > 0"
checks[docs/curation.md]="
SELECT 'the classifier pq has no held-out report' WHERE NOT EXISTS (SELECT FROM corpq.classifiers WHERE name = 'pq' AND heldout_clean_kept IS NOT NULL)
UNION ALL SELECT format('scored holds %s rows (%s non-NULL) for %s pairs', count(*), count(p), (SELECT count(*) FROM corpus))
  FROM scored HAVING count(*) <> (SELECT count(*) FROM corpus) OR count(p) < 0.9 * count(*)
UNION ALL SELECT format('curated holds %s of %s pairs', (SELECT count(*) FROM curated), (SELECT count(*) FROM corpus))
 WHERE (SELECT count(*) FROM curated) NOT BETWEEN 1 AND (SELECT count(*) - 1 FROM corpus)"

for page in ${CORPQ_RECIPE_PAGES:-README.md docs/scaling.md docs/embeddings.md docs/filters.md docs/curation.md}; do
	db="recipe_$(basename "$page" .md | tr -c 'a-zA-Z0-9\n' _)"
	createdb -T recipes_base "$db"
	rm -f "$tmp"/step.*
	/usr/bin/python3 - "$page" "$tmp" <<'EOF' || fail "could not read the recipe of $page"
import sys
sys.path.insert(0, "test/docs")
import examples
steps = examples.recipe(sys.argv[1], "test/integration/newcomer.sh")
if not steps:
    raise SystemExit(f"{sys.argv[1]}: no block is marked <!-- corpora: test/integration/newcomer.sh -->")
for k, (where, sql) in enumerate(steps):
    open(f"{sys.argv[2]}/step.{k:02d}.sql", "w").write(sql)
    open(f"{sys.argv[2]}/step.{k:02d}.where", "w").write(where + "\n")
EOF
	if ! cat "$tmp"/step.*.sql | grep -qi "CREATE EXTENSION corpq"; then
		q -d "$db" -c "CREATE EXTENSION corpq" >/dev/null
	fi
	for step in "$tmp"/step.*.sql; do
		where=$(cat "${step%.sql}.where")
		start=$(date +%s.%N)
		out=$(psql -X -v ON_ERROR_STOP=1 -P footer=off -d "$db" -f "$step" 2>&1) || {
			echo "$out" | tail -20 >&2
			fail "$where: the recipe's step fails on the shared corpora"
		}
		# every job the step started succeeded (one it did not wait for with
		# raise => true fails it here)
		jobs=$(q -d "$db" -c "SELECT corpq.job_wait(id, raise => true) FROM corpq.jobs ORDER BY id" 2>&1) || {
			echo "$jobs" | tail -5 >&2
			fail "$where: a job it started did not succeed"
		}
		log "$where ran on the corpora ($(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s)"
	done
	bad=$(q -d "$db" -c "${checks[$page]}") || fail "$page: the checks of its recipe's results do not run"
	[ -z "$bad" ] || fail "$page: the recipe ran, but: $(tr '\n' ';' <<<"$bad")"
	log "$page: the recipe's results pass their checks"
	dropdb --force "$db"
done
log "passed"
