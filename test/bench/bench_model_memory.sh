#!/usr/bin/env bash
# Memory and first call of many connections embedding with one model, with
# the shared model cache (corpq.shared_model_cache_mb, docs/models.md "One
# copy per server") on and off, in the same run and the same cluster
# (issue 53, item 5).  For 1, 8 and 32 connections: each connection embeds
# a few sentences, and while all of them stay connected the script sums the
# proportional memory (Pss of /proc/<pid>/smaps_rollup) of their backends;
# each new connection's first embed() is timed inside it (clock_timestamp()
# around the call).  With sharing on, one session loads the model first (the
# copy the others attach to) and stays connected.  Then every connection at
# once runs the call over the 64 sentences (all loaded already): the rows per
# second of all of them, the throughput with one copy against one copy each.
# Prints one line per (mode, connections) and the ratios on/off.
#
#   bench_model_memory.sh           a LaBSE-shaped encoder (vocabulary 501,153,
#                                   d 768, 12 layers, FFN 3072, random weights
#                                   from model_create), quantized to int8
#                                   (about 0.5 GB); needs about 12 GB of memory
#                                   to create it and /dev/shm room for one copy
#   bench_model_memory.sh --quick   a BERT-base-shaped encoder with a 30,000
#                                   token vocabulary, int8 (about 0.12 GB),
#                                   1 and 8 connections: a few minutes
#   --float32                       keep the float32 version (no quantize)
#   --smoke                         a tiny encoder (d 64, 2 layers, 2,000 tokens),
#                                   1 and 2 connections: checks the script
#                                   works; its figures mean nothing
#   --score                         scoring instead of embedding: a translation
#                                   model of about 100M parameters (preset
#                                   base, 50,000 tokens a side, int8), each
#                                   connection's first sent_prob() timed
#   --real                          the real path of a LaBSE user instead of
#                                   model_create's whitespace vocabulary: the
#                                   LaBSE-shaped BERT checkpoint (big_labse.py,
#                                   random weights) converted with
#                                   corpq-convert hf-bert --int8, imported as
#                                   docs/embeddings.md's LaBSE recipe does
#                                   (wordpiece_import of its vocab.txt,
#                                   vocab_import naming it, model_import), so
#                                   the model segments with a WordPiece model of
#                                   501,153 tokens (about 8 GB of disk for the
#                                   float32 checkpoint, 1, 8 and 32
#                                   connections); with --quick a checkpoint of
#                                   30,000 tokens and 2 layers, 1 and 8
#                                   connections, which checks the path end to
#                                   end in a few minutes (its figures are not
#                                   LaBSE's)
#
# Run it alone on the machine: the first-call figures are timings.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

QUICK=0
FLOAT32=0
SMOKE=0
REAL=0
SCORE=0
for a in "$@"; do
	case "$a" in
	--quick) QUICK=1 ;;
	--float32) FLOAT32=1 ;;
	--smoke) SMOKE=1 ;;
	--real) REAL=1 ;;
	--score) SCORE=1 ;;
	*) echo "usage: $0 [--quick | --smoke] [--float32 | --real | --score]" >&2; exit 2 ;;
	esac
done
if [ "$REAL" = 1 ] && { [ "$SMOKE" = 1 ] || [ "$FLOAT32" = 1 ]; }; then
	echo "$0: --real goes with --quick only (the converted model is int8)" >&2
	exit 2
fi
if [ "$REAL" = 1 ] && [ "$SCORE" = 1 ]; then
	echo "$0: --real is an encoder's path; --score goes without it" >&2
	exit 2
fi
corpq_in_cluster -o shared_preload_libraries=corpq -o max_connections=80 \
	-o max_worker_processes=16 -- "$@"

SHAPE='"d_model": 768, "heads": 12, "ffn_dim": 3072, "encoder_layers": 12, "max_positions": 514'
if [ "$SMOKE" = 1 ]; then
	VOCAB=2000
	CONNS="1 2"
	SHAPE='"d_model": 64, "heads": 2, "ffn_dim": 128, "encoder_layers": 2, "max_positions": 64'
elif [ "$QUICK" = 1 ]; then
	VOCAB=30000
	CONNS="1 8"
else
	VOCAB=501153
	CONNS="1 8 32"
fi
CALL=embed
if [ "$SCORE" = 1 ]; then
	# a ~100M-parameter translation model: base (d 512, 6 + 6 layers, FFN
	# 2048), 50,000 tokens a side, output tied: 51M embedding + 44M layer weights
	if [ "$SMOKE" = 1 ]; then
		SHAPE='"preset": "tiny", "d_model": 64, "heads": 2, "ffn_dim": 128, "encoder_layers": 2, "decoder_layers": 2, "max_positions": 64'
	else
		SHAPE='"preset": "base"'
		VOCAB=50000
	fi
	CALL=sent_prob
fi
work=$(mktemp -d)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

t0=$(date +%s)
if [ "$REAL" = 1 ]; then
	# the checkpoint, converted to int8 with its WordPiece vocab.txt, imported as a user would
	LAYERS=12
	[ "$QUICK" = 1 ] && VOCAB=30000 && LAYERS=2
	/usr/bin/python3 "$CORPQ_ROOT/test/bench/big_labse.py" write "$work/labse" "$VOCAB" "$LAYERS"
	"$(pg_config --bindir)/corpq-convert" hf-bert --model-dir "$work/labse" --output "$work/out" --int8 \
		>"$work/convert.log" 2>&1 || fail "corpq-convert: $(cat "$work/convert.log")"
	rm -rf "$work/labse"
	chmod -R a+rX "$work/out"
	q >/dev/null <<SQL
CREATE EXTENSION corpq;
SET corpq.max_model_mb = 16384;
SELECT corpq.wordpiece_import('labse_wp', pg_read_file('$work/out/vocab.txt'),
                              pg_read_file('$work/out/wordpiece.json')::jsonb);
SELECT corpq.vocab_import('labse', pg_read_file('$work/out/vocab.json')::jsonb
                                   || '{"wordpiece": "labse_wp"}');
SELECT corpq.model_import('enc', pg_read_binary_file('$work/out/model.corpq'), 'labse', 'labse');
CREATE TABLE sentences AS
SELECT g AS id, (SELECT string_agg(CASE WHEN k % 4 = 0 THEN 'W' ELSE 'w' END
                                   || ((g * 7919 + k * 104729) % ($VOCAB - 10)), ' ')
                   FROM generate_series(1, 8 + g % 17) k) || '.' AS s
  FROM generate_series(1, 64) g;
SQL
	rm -f "$work/out/model.corpq"
	FLOAT32=1	# the image is int8 already
fi
[ "$REAL" = 1 ] || q >/dev/null <<SQL
CREATE EXTENSION corpq;
SET corpq.max_model_mb = 16384;
SELECT corpq.vocab_import('bv', jsonb_build_object('tokens',
         to_jsonb(ARRAY['<s>', '<pad>', '</s>', '<unk>'] || array_agg('t' || g ORDER BY g))))
  FROM generate_series(0, $VOCAB - 5) g;
SELECT corpq.model_create('enc', '{$([ "$SCORE" = 1 ] || echo '"preset": "tiny", "kind": "encoder", ')$SHAPE}', 'bv', 'bv', 1);
CREATE TABLE sentences AS
SELECT g AS id, (SELECT string_agg('t' || ((g * 7919 + k * 104729) % ($VOCAB - 4)), ' ')
                   FROM generate_series(1, 8 + g % 17) k) AS s
  FROM generate_series(1, 64) g;
SQL
if [ "$FLOAT32" = 0 ]; then
	q -c "SET corpq.max_model_mb = 16384" -c "SELECT corpq.model_quantize('enc')" >/dev/null
fi
MODEL=$(q -c "SELECT corpq.model_pin('enc')")
bytes=$(q -c "SELECT bytes FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
               WHERE c.name = 'enc' ORDER BY v.version DESC LIMIT 1")
log "model $MODEL: image $((bytes / 1048576)) MB, built in $(($(date +%s) - t0)) s"

# A connection kept open: psql reads fifo $work/in.N, writes $work/out.N.
open_conn() {
	mkfifo "$work/in.$1"
	psql -X -Atq -v ON_ERROR_STOP=1 <"$work/in.$1" >"$work/out.$1" 2>&1 &
	eval "exec {fd_$1}>\"$work/in.$1\""
}
send() { local v="fd_$1"; echo "$2" >&"${!v}"; }
close_conn() { local v="fd_$1"; eval "exec ${!v}>&-"; }
wait_line() {
	for _ in $(seq 36000); do
		grep -q "$2" "$work/out.$1" 2>/dev/null && return 0
		grep -q "ERROR" "$work/out.$1" 2>/dev/null && fail "connection $1: $(cat "$work/out.$1")"
		sleep 0.1
	done
	fail "connection $1 never printed $2"
}
# the first call of a new connection, timed inside it; then a few more; then its pid
if [ "$SCORE" = 1 ]; then
	FN="corpq.sent_prob('$MODEL', s, s)"
else
	FN="corpq.embed('$MODEL', s)"
fi
FIRST="SET corpq.max_model_mb = 16384;
SELECT clock_timestamp() AS t0 \\gset
SELECT $FN IS NOT NULL FROM sentences WHERE id = 1;
SELECT 'FIRST ' || extract(epoch FROM clock_timestamp() - :'t0'::timestamptz);
SELECT count($FN) FROM sentences WHERE id <= 8;
SELECT 'READY ' || pg_backend_pid();"
# every connection at once over the 64 sentences: the throughput
# (the span from the first start to the last end, read from the server's clock)
RUN="SELECT extract(epoch FROM clock_timestamp()) AS t1 \\gset
SELECT count($FN) FROM sentences;
SELECT 'DONE ' || :'t1' || ' ' || extract(epoch FROM clock_timestamp());"
pss_kb() {
	local sum=0 kb
	for p in "$@"; do
		kb=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
		sum=$((sum + kb))
	done
	echo "$sum"
}
no_backends_left() {
	for _ in $(seq 600); do
		[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'
		             AND pid <> pg_backend_pid()")" = 0 ] && return 0
		sleep 0.1
	done
	fail "connections did not end"
}

declare -A PSS FIRSTS RATES
results="$work/results"
: >"$results"
for mode in off on; do
	if [ $mode = on ]; then
		q -c "ALTER SYSTEM SET corpq.shared_model_cache_mb = 16384" -c "SELECT pg_reload_conf()" >/dev/null
	else
		q -c "ALTER SYSTEM SET corpq.shared_model_cache_mb = 0" -c "SELECT pg_reload_conf()" >/dev/null
	fi
	for n in $CONNS; do
		pids=()
		if [ $mode = on ]; then
			# the copy the others attach to: loaded by a connection that stays (not counted)
			open_conn w
			send w "$FIRST"
			wait_line w "^READY "
			r=$(q -c "SELECT shared FROM corpq.model_cache() WHERE shared LIMIT 1")
			[ "$r" = t ] || fail "sharing on, but no shared copy"
			if [ "$REAL" = 1 ]; then
				r=$(q -c "SELECT string_agg(kind, ',' ORDER BY kind) FROM corpq.shared_vocab_cache()")
				[ "$r" = "tokens,wordpiece" ] || fail "sharing on, but the shared vocabulary copies are '$r'"
			fi
		fi
		firsts=()
		for i in $(seq "$n"); do
			open_conn "$i"
			send "$i" "$FIRST"
			# one at a time: the first call of a new connection while the others idle
			wait_line "$i" "^READY "
			firsts+=("$(sed -n 's/^FIRST //p' "$work/out.$i")")
			pids+=("$(sed -n 's/^READY //p' "$work/out.$i")")
		done
		kb=$(pss_kb "${pids[@]}")
		if [ $mode = on ]; then
			wkb=$(pss_kb "$(sed -n 's/^READY //p' "$work/out.w")")
			kb=$((kb + wkb))	# the loading connection's share counts too
		fi
		med=$(printf '%s\n' "${firsts[@]}" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
		# all of them at once, each over the 64 sentences
		for i in $(seq "$n"); do send "$i" "$RUN"; done
		for i in $(seq "$n"); do wait_line "$i" "^DONE "; done
		rate=$(for i in $(seq "$n"); do sed -n 's/^DONE //p' "$work/out.$i"; done |
			awk -v rows=$((n * 64)) 'NR == 1 || $1 < a {a = $1} NR == 1 || $2 > b {b = $2} END {print rows / (b - a)}')
		PSS[$mode,$n]=$kb
		FIRSTS[$mode,$n]=$med
		RATES[$mode,$n]=$rate
		printf '%-4s %3d connections: PSS of the backends %8.1f MB (%.2f images), first %s median %.3f s, all at once %.1f rows/s\n' \
			"$mode" "$n" "$(echo "$kb / 1024" | bc -l)" "$(echo "$kb * 1024 / $bytes" | bc -l)" "$CALL" "$med" "$rate" | tee -a "$results"
		for i in $(seq "$n"); do close_conn "$i"; rm -f "$work/in.$i" "$work/out.$i"; done
		if [ $mode = on ]; then close_conn w; rm -f "$work/in.w" "$work/out.w"; fi
		no_backends_left
	done
done
q -c "ALTER SYSTEM RESET corpq.shared_model_cache_mb" -c "SELECT pg_reload_conf()" >/dev/null
for n in $CONNS; do
	printf '%3d connections: PSS on/off %.3f, first %s on/off %.3f, throughput on/off %.3f\n' "$n" \
		"$(echo "${PSS[on,$n]} / ${PSS[off,$n]}" | bc -l)" "$CALL" \
		"$(echo "${FIRSTS[on,$n]} / ${FIRSTS[off,$n]}" | bc -l)" \
		"$(echo "${RATES[on,$n]} / ${RATES[off,$n]}" | bc -l)" | tee -a "$results"
done
log "done (image $bytes bytes$([ "$REAL" = 1 ] && echo ", converted by corpq-convert hf-bert --int8, WordPiece segmenter of $VOCAB tokens"); $(nproc) CPUs; $(uname -r))"
