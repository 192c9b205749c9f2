#!/usr/bin/env bash
# Load the corpus into a throw-away cluster (pg_virtualenv -t: a temporary
# directory, no existing cluster touched) and run the curation steps.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=$(cd "${1:-$here/../data/corpus}" && pwd)
if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	CORPQ_IN_CLUSTER=1 exec pg_virtualenv -t "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" "$corpus"
fi
# The server runs as postgres: give it a readable copy of the corpus.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$corpus/parallel.tsv" "$tmp/" && chmod -R a+rX "$tmp"
psql -X -v ON_ERROR_STOP=1 -v corpus="$tmp/parallel.tsv" -f "$here/demo.sql"

# The quality report of everything above, into the demo's output directory.
out=${CORPQ_DEMO_OUT:-$here/out}
mkdir -p "$out"
echo
echo '== 11. The quality report'
/usr/bin/python3 "$here/../../report/corpq_report.py" --db "${PGDATABASE:-postgres}" --out "$out/report.html" \
	--corpus 'SELECT src, tgt, domain FROM train_subset' --model demo --lexicon lex \
	--cav 'SELECT domain, c FROM cavs' --tokens archivo,dios,lista >/dev/null
echo "report: $out/report.html"
