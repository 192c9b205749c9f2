#!/usr/bin/env bash
# A LaBSE-shaped model at its real size, end to end (issue 53, items 1-2):
# a BertModel checkpoint with random weights and LaBSE's shapes (vocabulary
# 501,153, d 768, 12 layers, 12 heads, FFN 3,072, 512 positions, pooler;
# test/bench/big_labse.py writes it as transformers lays it out) is
#   1. converted by corpq-convert hf-bert in float32 (1,883,725,252 bytes,
#      over a bytea's 1 GB: the converter hints at model_import_lo) and with
#      --int8 (476,594,820 bytes), each with its peak RSS;
#   2. imported through large objects (\lo_import, model_import_lo): the
#      float32 image, the --int8 image, and the float32 image again with
#      {"precision": "int8"} (quantized by the server chunk by chunk); each
#      import's backend peak (VmHWM) is logged against a fresh backend's, and
#      must stay under 0.5 GB above it for the float32 image and for its
#      quantization on the way in;
#   3. embedded: corpq.embed() of the float32 version must equal the
#      reference BertModel's LaBSE vector (test/ref/ref_hf_bert.py, float64)
#      within 1e-5 per component; the two int8 versions must give the same
#      vectors (the same codes and scales), within the int8 tolerance of
#      the reference (below);
#   4. dumped (pg_dump -Fc) and restored (pg_restore) into a new database:
#      every version's checksum, length and chunk count unchanged, and the
#      restored int8 version embeds as before.
# The figures (peaks in MB, seconds) are logged; docs/models.md quotes them.
# It takes about 15 minutes and 8 GB of disk on two cores, more than `make
# integration` allows, so it is a benchmark the lead runs:
#   flock /tmp/corpq-pg.lock bash -c 'make install && bash test/bench/bench_big_import.sh'
#
# int8 tolerance: every linear weight and the token embeddings are int8
# codes (a per-row scale max|w|/127: a weight moves by at most 1/254 of its
# row's largest, about 0.1 % of a typical weight's size on average), and
# activations are quantized per row at each of the 12 layers' six products,
# so each layer adds a relative error of order 1e-3 that the layer norms keep
# from growing.  The check is on the unit vector: cosine with the reference at
# least 0.999 and each component within 0.01 (the components are about
# 0.036 each; measured: cosine 0.9999, largest difference 1.65e-3, so the
# bound leaves a factor of 6 for other seeds).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 3600

CONVERT="$(pg_config --bindir)/corpq-convert"
dir=$(mktemp -d /tmp/corpq-bench-big.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b - a}'; }

t0=$(now)
/usr/bin/python3 test/bench/big_labse.py write "$dir/labse"
log "checkpoint: $(stat -c %s "$dir/labse/model.safetensors") bytes of safetensors in $(secs "$t0" "$(now)") s"

# ---- 1. conversion ----
for mode in f32 i8; do
	extra=()
	[ $mode = i8 ] && extra=(--int8)
	t0=$(now)
	/usr/bin/time -f "%M" -o "$dir/$mode.rss" /usr/bin/python3 "$CONVERT" hf-bert --model-dir "$dir/labse" \
		--output "$dir/$mode" "${extra[@]}" 2>"$dir/$mode.err" || fail "corpq-convert ($mode): $(cat "$dir/$mode.err")"
	log "corpq-convert hf-bert ${extra[*]:-(float32)}: $(stat -c %s "$dir/$mode/model.corpq") bytes in $(secs "$t0" "$(now)") s, peak RSS $(($(cat "$dir/$mode.rss") / 1024)) MB"
done
grep -q "hint: .*model_import_lo" "$dir/f32.err" || fail "no model_import_lo hint for the 1.9 GB image: $(cat "$dir/f32.err")"
[ "$(stat -c %s "$dir/f32/model.corpq")" = 1883725252 ] || fail "float32 image of $(stat -c %s "$dir/f32/model.corpq") bytes"
[ "$(stat -c %s "$dir/i8/model.corpq")" = 476594820 ] || fail "int8 image of $(stat -c %s "$dir/i8/model.corpq") bytes"

# ---- 2. imports ----
createdb big
q -d big >/dev/null <<SQL
CREATE EXTENSION corpq;
SELECT corpq.wordpiece_import('labse_wp', pg_read_file('$dir/f32/vocab.txt'),
                              pg_read_file('$dir/f32/wordpiece.json')::jsonb);
SELECT corpq.vocab_import('labse', pg_read_file('$dir/f32/vocab.json')::jsonb
                                   || '{"wordpiece": "labse_wp"}');
SQL
base=$(corpq_peak_kb -d big -c "SELECT 1")
log "a fresh backend: VmHWM $((base / 1024)) MB"

# import_lo NAME FILE OPTIONS: logs the time and the backend's peak; OVER: kB above a fresh backend
import_lo() {
	local name=$1 file=$2 opts=$3 lo pid bg hwm t0 marker
	marker="SELECT pg_sleep(2) -- bench_big_import $name $$"
	lo=$(q -d big -c "SELECT lo_import('$file')")
	t0=$(now)
	q -d big -c "SELECT corpq.model_import_lo('$name', $lo, 'labse', 'labse', '$opts')" -c "$marker" >/dev/null 2>"$dir/$name.notices" &
	bg=$!
	pid=$(corpq_backend_pid "query = '$marker'" 3600) || fail "the import of $name never reached its sleep: $(cat "$dir/$name.notices")"
	hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
	wait $bg || fail "model_import_lo $name failed: $(cat "$dir/$name.notices")"
	q -d big -c "SELECT lo_unlink($lo)" >/dev/null
	OVER=$((hwm - base))
	log "model_import_lo $name $opts: $(secs "$t0" "$(now)") s (with the 2 s marker), backend peak $((hwm / 1024)) MB, $((OVER / 1024)) MB above a fresh backend"
}
import_lo labse "$dir/f32/model.corpq" '{}'
[ "$OVER" -lt $((512 * 1024)) ] || fail "the float32 import's peak is $((OVER / 1024)) MB above a fresh backend"
import_lo labse8 "$dir/i8/model.corpq" '{}'
import_lo labse8q "$dir/f32/model.corpq" '{"precision": "int8"}'
# the server's quantizer holds the int8 chunks being filled, neither image
[ "$OVER" -lt $((512 * 1024)) ] || fail "the import with precision int8 peaks $((OVER / 1024)) MB above a fresh backend"
q -d big -c "SELECT c.name, v.bytes, v.precision, v.checksum FROM corpq.model_versions v
             JOIN corpq.model_catalog c ON c.id = v.model ORDER BY c.name" | sed "s/^/$CORPQ_TEST_NAME: /"

# ---- 3. embeddings against the reference ----
sentences=("w1 w2 w3" "w500000 w17 w42 w99999 w250000" "zzz w7" "w123 w456 w789 w1011 w1213 w1415 w1617")
/usr/bin/python3 test/bench/big_labse.py reference "$dir/labse" "$dir/f32/wordpiece.json" "$dir/ref.json" "${sentences[@]}"
for name in labse labse8 labse8q; do
	t0=$(now)
	for s in "${sentences[@]}"; do
		q -d big -c "SELECT array_to_json(corpq.embed('$name', '$s'))"
	done > "$dir/$name.vec"
	log "embed with $name: ${#sentences[@]} sentences in $(secs "$t0" "$(now)") s (a session each: every one loads the model)"
done
/usr/bin/python3 - "$dir" <<'PY' | sed "s/^/$CORPQ_TEST_NAME: /"
import json, sys
import numpy as np
d = sys.argv[1]
ref = np.array(json.load(open(d + "/ref.json"))["vectors"])
vec = {n: np.array([json.loads(l) for l in open("%s/%s.vec" % (d, n))]) for n in ("labse", "labse8", "labse8q")}
bad = []
f32 = float(np.abs(vec["labse"] - ref).max())
print("float32: max abs diff from the reference %.2e over %d sentences" % (f32, len(ref)))
bad += [] if f32 <= 1e-5 else ["float32 differs by %.2e" % f32]
same = bool((vec["labse8"] == vec["labse8q"]).all())
print("int8 from corpq-convert --int8 and from model_import_lo {precision: int8}: the same vectors: %s" % same)
bad += [] if same else ["the two int8 versions embed differently"]
cos = (vec["labse8"] * ref).sum(1)
i8 = float(np.abs(vec["labse8"] - ref).max())
print("int8: cosine with the reference min %.4f mean %.4f, max abs diff %.2e" % (cos.min(), cos.mean(), i8))
bad += [] if cos.min() >= 0.999 and i8 <= 0.01 else ["int8 outside its tolerance"]
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY

# ---- 4. dump and restore ----
sig="SELECT string_agg(c.name || ' ' || v.version || ' ' || v.bytes || ' ' || v.checksum || ' ' ||
        (SELECT count(*) FROM corpq.model_chunks k WHERE k.model = v.model AND k.version = v.version), ', ' ORDER BY c.name)
       FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model"
before=$(q -d big -c "$sig")
t0=$(now)
pg_dump -Fc -d big -f "$dir/big.dump" || fail "pg_dump -Fc failed"
t1=$(now)
createdb big_restored
pg_restore --exit-on-error -d big_restored "$dir/big.dump" || fail "pg_restore failed"
t2=$(now)
log "pg_dump -Fc: $(($(stat -c %s "$dir/big.dump") / 1024 / 1024)) MB in $(secs "$t0" "$t1") s; pg_restore in $(secs "$t1" "$t2") s"
rm -f "$dir/big.dump"
after=$(q -d big_restored -c "$sig")
[ "$after" = "$before" ] || fail "the restored versions differ: $after vs $before"
[ "$(q -d big_restored -c "SELECT array_to_json(corpq.embed('labse8', '${sentences[0]}'))")" = "$(head -1 "$dir/labse8.vec")" ] ||
	fail "the restored int8 version embeds differently"
log "restored: $before"
echo "bench_big_import: ok"
