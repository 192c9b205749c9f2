#!/usr/bin/env bash
# corpq's BPE and vocabulary SQL functions on the real corpora, on a
# throw-away cluster (pg_virtualenv -t), with the installed extension.
#   bpe_learn: 20k merges on mono/en.txt (100k sentences; without it, the
#   English side of the parallel files)
#   bpe_apply / vocab_encode: every English sentence of the parallel files
#   (test/lib.sh finds the corpora), one backend (parallel workers off),
#   sentences per second
# Figures only (seconds, sentences per second): compare them with the core's
# figures from bench_bpe.py on the same corpora; the scan of the same rows
# without bpe_apply is printed as the per-query baseline.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster

ms() { grep -o 'Time: [0-9.]*' | tail -1 | awk '{print $2}'; }
timed_ms() { psql -X -q -v ON_ERROR_STOP=1 -c '\timing on' -c "$1" | ms; }
# FORMAT text input (backslashes doubled): monolingual English is
# mono/en.txt when the corpora have it, else the English side of the
# parallel files
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mono_name="the English side of the parallel files"
mono() { tail -q -n +2 "${CORPQ_PARALLEL[@]}" | cut -f 3; }
if [ -f "$CORPQ_CORPORA/mono/en.txt" ]; then
	mono_name=mono/en.txt
	mono() { cat "$CORPQ_CORPORA/mono/en.txt"; }
fi
mono | sed -e 's/\\/\\\\/g' > "$tmp/mono.txt"
tail -q -n +2 "${CORPQ_PARALLEL[@]}" | sed -e 's/\\/\\\\/g' > "$tmp/para.txt"

psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION corpq;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE mono (s text);
\copy mono FROM '$tmp/mono.txt' WITH (FORMAT text)
CREATE TABLE para (id text, domain text, src text, tgt text);
\copy para FROM '$tmp/para.txt' WITH (FORMAT text)
ANALYZE mono; ANALYZE para;
SQL
n_mono=$(psql -X -At -c "SELECT count(*) FROM mono")
n_para=$(psql -X -At -c "SELECT count(*) FROM para")

t_learn=$(timed_ms "SELECT corpq.bpe_learn('en20k', 'SELECT s FROM mono', 20000, 2)")
t_apply=$(timed_ms "SET max_parallel_workers_per_gather = 0; SELECT sum(length(corpq.bpe_apply('en20k', src))) FROM para")
t_base=$(timed_ms "SET max_parallel_workers_per_gather = 0; SELECT sum(length(src)) FROM para")
t_vocab=$(timed_ms "SELECT corpq.vocab_build('en20k_v', 'SELECT src FROM para', 'en20k', 32000)")
t_enc=$(timed_ms "SET max_parallel_workers_per_gather = 0; SELECT sum(cardinality(corpq.vocab_encode('en20k_v', src))) FROM para")
t_export=$(timed_ms "SELECT length(corpq.bpe_export('en20k'))")

awk -v mono="$mono_name" -v n="$n_mono" -v np="$n_para" -v tl="$t_learn" -v ta="$t_apply" -v tb="$t_base" \
	-v tv="$t_vocab" -v te="$t_enc" -v tx="$t_export" 'BEGIN {
	printf "bpe_learn 20000 merges on %d sentences (%s): %.2f s\n", n, mono, tl / 1000
	printf "bpe_apply over %d sentences: %.2f s (%.0f sentences/s; a scan without it takes %.2f s)\n", np, ta / 1000, np / (ta / 1000), tb / 1000
	printf "vocab_build over %d sentences with the 20k BPE: %.2f s\n", np, tv / 1000
	printf "vocab_encode over %d sentences: %.2f s (%.0f sentences/s)\n", np, te / 1000, np / (te / 1000)
	printf "bpe_export of 20000 merges: %.1f ms\n", tx
}'
