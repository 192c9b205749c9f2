#!/usr/bin/env bash
# A model version whose image is over 1 GB (issue 53): corpq.model_export
# (bytea) refuses it with a clear ERROR (program_limit_exceeded, a hint
# naming model_export_lo) from the version's length in the catalog, before
# any chunk is read, so the refusal costs no memory; model_export_lo of the
# same version gives back every byte.  And the same version quantized
# (model_quantize): its int8 image (17 chunks) is stored chunk by chunk as
# the quantizer fills them, out of order, never whole: the backend peaks
# below the int8 image plus 64 MB, and the chunks read back in order pass the
# reader's own CRC-32 over the whole image (model_export of the int8
# version, under 1 GB).
#
# The image: export_over_1gb.py writes a float32 image of 1.13 GB as a
# stream (d_model 640, a 430,000-token source vocabulary, one layer each
# way), the cheapest valid image over a bytea's 1 GB: it goes in
# through a large object (\lo_import, model_import_lo, which stores it as
# chunks without loading the model) and out through one (\lo_export), and
# the file that comes out is compared with the one that went in.  About
# 2.2 GB of disk at the peak (the file and its copy out; the cluster holds
# the chunks), removed at the end.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 1200

dir=$(mktemp -d /tmp/corpq-export1gb.XXXXXX)
trap 'rm -rf "$dir"' EXIT
# the backend running MARKER while the background job BG lives (no waiting
# out a timeout when the call before the marker failed)
marker_pid() {
	local pid
	while kill -0 "$1" 2>/dev/null; do
		pid=$(q -d huge -c "SELECT pid FROM pg_stat_activity WHERE query = '$2'")
		[ -n "$pid" ] && { echo "$pid"; return 0; }
		sleep 0.1
	done
	return 1
}

bytes=$(/usr/bin/python3 "$(dirname "$0")/export_over_1gb.py" "$dir/huge.corpq")
[ "$bytes" -gt $((1024 * 1024 * 1024)) ] || fail "the generated image has only $bytes bytes"

createdb huge
q -d huge >/dev/null <<'SQL'
CREATE EXTENSION corpq;
SELECT corpq.vocab_import('huge_src', jsonb_build_object('tokens',
         to_jsonb(ARRAY['<s>', '<pad>', '</s>', '<unk>'] || array_agg('t' || g ORDER BY g))))
  FROM generate_series(0, 429995) g;
SELECT corpq.vocab_import('huge_tgt', jsonb_build_object('tokens',
         to_jsonb(ARRAY['<s>', '<pad>', '</s>', '<unk>'] || array_agg('x' || g ORDER BY g))))
  FROM generate_series(0, 11) g;
SQL
out=$(psql -X -v ON_ERROR_STOP=1 -At -d huge 2>&1 <<SQL
\lo_import '$dir/huge.corpq'
SELECT 'import ' || corpq.model_import_lo('huge', :LASTOID, 'huge_src', 'huge_tgt');
SELECT 'unlink ' || lo_unlink(:LASTOID);
SQL
) || fail "model_import_lo of the $bytes-byte image failed: $out"
grep -q '^import 1$' <<<"$out" || fail "model_import_lo: $out"
[ "$(q -d huge -c "SELECT bytes FROM corpq.model_versions")" = "$bytes" ] || fail "the stored version is not $bytes bytes"
log "model huge@1: $bytes bytes in $(q -d huge -c "SELECT count(*) FROM corpq.model_chunks") chunks"

# ---- model_export: refused, with the errcode and the hint, without reading the image ----
base=$(corpq_peak_kb -d huge -c "SELECT 1")
marker="SELECT pg_sleep(2) -- export_over_1gb $$"
psql -X -At -d huge -c "\\set VERBOSITY verbose" -c "SELECT length(corpq.model_export('huge@1'))" \
	-c "$marker" >"$dir/refused.out" 2>&1 &
bg=$!
pid=$(marker_pid $bg "$marker") || fail "the refused export never reached its sleep: $(cat "$dir/refused.out")"
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
wait $bg || true
refused=$(cat "$dir/refused.out")
grep -q 'ERROR:  54000: the weight image of model "huge@1" has '"$bytes"' bytes, more than a bytea holds' <<<"$refused" ||
	fail "model_export of a $bytes-byte version was not refused with program_limit_exceeded: $refused"
grep -q "HINT:  Export it into a large object with corpq.model_export_lo('huge@1')" <<<"$refused" ||
	fail "the refusal has no hint to model_export_lo: $refused"
# the backend that refused grew by far less than the image (nothing of it was read)
[ $((hwm - base)) -lt $((64 * 1024)) ] ||
	fail "the refused export's backend peaked $(((hwm - base) / 1024)) MB above a fresh backend"
log "model_export of $bytes bytes refused (54000, hint model_export_lo); its backend peaked $(((hwm - base) / 1024)) MB above a fresh one"

# ---- model_export_lo: the same bytes ----
out=$(psql -X -v ON_ERROR_STOP=1 -At -d huge 2>&1 <<SQL
SELECT corpq.model_export_lo('huge@1') AS lo \gset
\lo_export :lo '$dir/huge.out'
SELECT 'unlink ' || lo_unlink(:lo);
SQL
) || fail "model_export_lo failed: $out"
cmp -s "$dir/huge.corpq" "$dir/huge.out" || fail "model_export_lo did not give back the imported bytes"
[ "$(q -d huge -c "SELECT count(*) FROM pg_largeobject_metadata")" = 0 ] || fail "a large object was left behind"
log "model_export_lo: the $bytes bytes, identical to the imported file"

# ---- model_quantize: the int8 image stored as its chunks fill ----
marker="SELECT pg_sleep(2) -- export_over_1gb quantize $$"
q -d huge -c "SELECT corpq.model_quantize('huge@1')" -c "$marker" >"$dir/quantize.out" 2>&1 &
bg=$!
pid=$(marker_pid $bg "$marker") || fail "model_quantize never reached its sleep: $(cat "$dir/quantize.out")"
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
wait $bg || fail "model_quantize failed: $(cat "$dir/quantize.out")"
read -r i8_bytes i8_chunks <<<"$(q -d huge -F ' ' -c "SELECT v.bytes, (SELECT count(*) FROM corpq.model_chunks k
                                   WHERE k.model = v.model AND k.version = v.version)
                                   FROM corpq.model_versions v WHERE v.version = 2 AND v.precision = 'int8'")"
[ -n "$i8_chunks" ] && [ "$i8_chunks" -gt 8 ] || fail "the int8 version has ${i8_chunks:-no} chunks"
# holding the int8 image whole (as before) took the image and the chunk
# writer's ~200 MB besides; chunk by chunk the backend stays near the
# writer's own (measured: 236 MB above a fresh backend for a 270 MB image)
[ $((hwm - base)) -lt $((i8_bytes / 1024 + 64 * 1024)) ] ||
	fail "model_quantize's backend peaked $(((hwm - base) / 1024)) MB above a fresh one, as if it held its $((i8_bytes / 1048576)) MB int8 image"
# the reader checks the chunks' order, lengths and CRC-32 over the whole image
[ "$(q -d huge -c "SELECT length(corpq.model_export('huge@2'))")" = "$i8_bytes" ] ||
	fail "the int8 version does not read back whole"
log "model_quantize: int8 image of $i8_bytes bytes in $i8_chunks chunks, read back whole; backend peak $(((hwm - base) / 1024)) MB above a fresh one"
dropdb huge
echo "export_over_1gb: ok"
