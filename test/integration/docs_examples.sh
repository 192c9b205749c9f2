#!/usr/bin/env bash
# Every SQL example of README.md and docs/*.md runs (test/docs/examples.py says
# how a block is checked): the markers are checked first, without a server; then
# each block to run runs with psql, stopping at its first error, in its own
# copy of the fixture database (test/docs/fixture.sql), and a block that shows
# psql output must print exactly that.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	# the markers fail fast, before a cluster starts
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
	python3 test/docs/examples.py check "$out"
fi
corpq_in_cluster -t 600 -o shared_preload_libraries=corpq -o max_worker_processes=16

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 test/docs/examples.py check "$out" > /dev/null

createdb docs_tables
q -d docs_tables -f test/docs/tables.sql > /dev/null || fail "the fixture's tables do not load"
createdb -T docs_tables docs_fixture
q -d docs_fixture -f test/docs/fixture.sql > /dev/null || fail "the fixture does not load"

# the last lines of psql's output, without trailing blanks
tail_of() {
	sed 's/[[:space:]]*$//' | awk 'NF { last = NR } { l[NR] = $0 } END { for (i = 1; i <= last; i++) print l[i] }' | tail -n "$1"
}

failed=0 n=0
while IFS=$'\t' read -r name where template; do
	n=$((n + 1))
	db="docs_$name"
	createdb -T "docs_$template" "$db"
	start=$(date +%s.%N)
	if got=$(psql -X -v ON_ERROR_STOP=1 -P footer=off -d "$db" -f "$out/$name.sql" 2>&1); then ok=yes; else ok=no; fi
	if [ -f "$out/$name.err" ]; then
		# the block must stop at its last statement with the error it shows
		if [ $ok = yes ] || [ "$(grep -o 'ERROR: .*' <<<"$got" | tail -1)" != "$(cat "$out/$name.err")" ]; then
			echo "$got" | tail -20 >&2
			echo "docs_examples: FAIL: $where: the example does not fail with the error it shows" >&2
			failed=$((failed + 1))
			ok=reported
		else
			ok=yes
		fi
	fi
	if [ $ok = no ]; then
		echo "$got" | tail -20 >&2
		echo "docs_examples: FAIL: $where: the example does not run" >&2
		failed=$((failed + 1))
	elif [ $ok = yes ] && [ -f "$out/$name.out" ] &&
		! diff -u "$out/$name.out" <(printf '%s\n' "$got" | tail_of "$(wc -l < "$out/$name.out")") >&2; then
		echo "docs_examples: FAIL: $where: the output differs from the one shown" >&2
		failed=$((failed + 1))
	elif [ $ok = yes ]; then
		log "$where ran ($(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s)"
	fi
	# the jobs an example submitted end before its database goes, and must
	# succeed: one it did not wait for (with raise => true) fails it here
	if [ "$(q -d "$db" -c "SELECT count(*) FROM pg_extension WHERE extname = 'corpq'")" = 1 ]; then
		if ! jobs_out=$(q -d "$db" -c "SELECT corpq.job_wait(id, raise => true) FROM corpq.jobs ORDER BY id" 2>&1); then
			echo "$jobs_out" | tail -5 >&2
			echo "docs_examples: FAIL: $where: a job it started did not succeed" >&2
			failed=$((failed + 1))
		fi
	fi
	dropdb --force "$db"
done < "$out/index"
[ "$failed" = 0 ] || fail "$failed of $n examples failed"
log "ok: $n examples ran"
