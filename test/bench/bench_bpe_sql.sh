#!/usr/bin/env bash
# corpq's BPE and vocabulary SQL functions on the real corpora, on a
# throw-away cluster (pg_virtualenv -t), with the installed extension.
#   bpe_learn: 20k merges on mono/en.txt (100k sentences)
#   bpe_apply / vocab_encode: every English sentence of en-es/*.tsv, one
#   backend (parallel workers off), sentences per second
# Figures only (seconds, sentences per second): compare them with the core's
# figures from bench_bpe.py on the same corpora; the scan of the same rows
# without bpe_apply is printed as the per-query baseline.
set -euo pipefail
corpora=/work/shared/corpora
if [ ! -d "$corpora" ]; then
	echo "bench_bpe_sql: $corpora is absent, skipping"
	exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
export CORPORA=$corpora
if [ -z "${PGHOST:-}" ] || [ "${1:-}" != "--inside" ]; then
	exec pg_virtualenv -t bash "$here/bench_bpe_sql.sh" --inside
fi

ms() { grep -o 'Time: [0-9.]*' | tail -1 | awk '{print $2}'; }
q() { psql -X -q -v ON_ERROR_STOP=1 -c '\timing on' -c "$1" | ms; }

psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION corpq;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE mono (s text);
\copy mono FROM PROGRAM 'sed -e "s/\\\\\\\\/\\\\\\\\\\\\\\\\/g" $CORPORA/mono/en.txt' WITH (FORMAT text)
CREATE TABLE para (id text, domain text, src text, tgt text);
\copy para FROM PROGRAM 'tail -q -n +2 $CORPORA/en-es/bible.tsv $CORPORA/en-es/ddtp.tsv $CORPORA/en-es/l10n.tsv | sed -e "s/\\\\\\\\/\\\\\\\\\\\\\\\\/g"' WITH (FORMAT text)
ANALYZE mono; ANALYZE para;
SQL
n_mono=$(psql -X -At -c "SELECT count(*) FROM mono")
n_para=$(psql -X -At -c "SELECT count(*) FROM para")

t_learn=$(q "SELECT corpq.bpe_learn('en20k', 'SELECT s FROM mono', 20000, 2)")
t_apply=$(q "SET max_parallel_workers_per_gather = 0; SELECT sum(length(corpq.bpe_apply('en20k', src))) FROM para")
t_base=$(q "SET max_parallel_workers_per_gather = 0; SELECT sum(length(src)) FROM para")
t_vocab=$(q "SELECT corpq.vocab_build('en20k_v', 'SELECT src FROM para', 'en20k', 32000)")
t_enc=$(q "SET max_parallel_workers_per_gather = 0; SELECT sum(cardinality(corpq.vocab_encode('en20k_v', src))) FROM para")
t_export=$(q "SELECT length(corpq.bpe_export('en20k'))")

psql -X -At -c "SELECT corpq.bpe_export('en20k')" > /tmp/bench_bpe_sql_codes.txt
awk -v n="$n_mono" -v np="$n_para" -v tl="$t_learn" -v ta="$t_apply" -v tb="$t_base" \
	-v tv="$t_vocab" -v te="$t_enc" -v tx="$t_export" 'BEGIN {
	printf "bpe_learn 20000 merges on %d sentences (mono/en.txt): %.2f s\n", n, tl / 1000
	printf "bpe_apply over %d sentences: %.2f s (%.0f sentences/s; a scan without it takes %.2f s)\n", np, ta / 1000, np / (ta / 1000), tb / 1000
	printf "vocab_build over %d sentences with the 20k BPE: %.2f s\n", np, tv / 1000
	printf "vocab_encode over %d sentences: %.2f s (%.0f sentences/s)\n", np, te / 1000, np / (te / 1000)
	printf "bpe_export of 20000 merges: %.1f ms\n", tx
}'
