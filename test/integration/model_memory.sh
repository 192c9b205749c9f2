#!/usr/bin/env bash
# corpq.max_model_mb counts a model operation's real peak (issue 31, Medium 7).
#
# The bound is checked before anything is allocated: creating or importing
# from the weight image's size times CORPQ_WRITE_PEAK (6,
# extension/pg/model/model.h); loading to score or translate from the memory
# counted exactly from the image's configuration (cq_modelfile_memory, issue
# 50), which the refusal names.  The counts are only honest if the backend
# never takes more: this test measures each backend's peak (VmHWM, read by the
# backend itself from /proc/self/status, which only a superuser may read) for
# the `base` preset over 8,000-word vocabularies and checks
#   - creating it peaks within 6 x its image, importing it too,
#   - loading it to score a pair peaks within the load's count (plus 8 MB
#     for the rest of the first call: vocabularies, caches, the pair's work
#     space; measured 1-3 MB),
#   - a bound just below the load's count refuses the load before allocating
#     (the backend's peak stays where it was), and at it lets it load.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 900

q >/dev/null <<'SQL'
CREATE EXTENSION corpq;
CREATE TABLE mm_words AS
SELECT (SELECT string_agg('s' || k, ' ') FROM generate_series(1, 7996) k) AS src,
       (SELECT string_agg('t' || k, ' ') FROM generate_series(1, 7996) k) AS tgt;
SELECT corpq.vocab_build('mm_src', 'SELECT src FROM mm_words');
SELECT corpq.vocab_build('mm_tgt', 'SELECT tgt FROM mm_words');
SQL

# kB of the calling backend: its resident size now, its peak so far, and the
# part of its resident size that is shared memory (the buffer pages it
# touched stay counted in its resident size and its peak; they are
# shared_buffers, not the backend's own, so they are taken out)
status_sql="(SELECT pg_catalog.substring(pg_read_file('/proc/self/status'), '%s:\\s+(\\d+) kB'))::bigint"
rss_sql=$(printf "$status_sql" VmRSS)
hwm_sql=$(printf "$status_sql" VmHWM)
shm_sql=$(printf "$status_sql" RssShmem)

# measure "operation SQL": the backend's own resident kB before it and its own
# peak after it, of one fresh backend that has corpq loaded before the start
# is read (the shared pages touched are read after the operation: they stay
# mapped, so they are the most the peak can hold of them)
measure() {
	q -c "LOAD 'corpq'" -c "SELECT $rss_sql - $shm_sql" -c "$1" -c "SELECT $hwm_sql - $shm_sql" |
		grep -E '^[0-9]+$' | tail -2 | tr '\n' ' '
}

image_kb() {
	q -c "SELECT bytes / 1024 FROM corpq.model_versions v
	        JOIN corpq.model_catalog m ON m.id = v.model WHERE m.name = '$1' AND v.version = 1"
}

check() {	# check WHAT RSS HWM IMAGE_KB FACTOR
	local what=$1 rss=$2 hwm=$3 img=$4 factor=$5 used
	used=$((hwm - rss))
	log "$what: image $((img / 1024)) MB, backend peak $((used / 1024)) MB above its start" \
		"($(awk -v u="$used" -v i="$img" 'BEGIN {printf "%.2f", u / i}') x the image; counted as $factor x)"
	[ "$used" -gt 0 ] || fail "$what: could not read the backend's peak"
	[ "$used" -le $((factor * img)) ] || fail "$what: the peak is over $factor x the image"
}

# 1. model_create: the parsed model, its image, then PostgreSQL's insertion
read -r rss hwm <<<"$(measure \
	"SELECT corpq.model_create('mm_base', '{\"preset\": \"base\"}', 'mm_src', 'mm_tgt', 1)")"
img=$(image_kb mm_base)
[ "$img" -gt $((100 * 1024)) ] || fail "the base model's image is only $img kB"
check "model_create" "$rss" "$hwm" "$img" 6

# 2. model_import of the same image under another name
read -r rss hwm <<<"$(measure \
	"SELECT corpq.model_import('mm_copy', corpq.model_export('mm_base@1'), 'mm_src', 'mm_tgt')")"
check "model_import" "$rss" "$hwm" "$img" 6

# the load's count: what a bound above the image but below the count says
out=$(q -v ON_ERROR_STOP=0 -c "SET corpq.max_model_mb = $((img / 1024 + 2))" \
	-c "SELECT corpq.sent_prob('mm_base', 's1', 't1')" 2>&1 || true)
need=$(grep -o 'needs [0-9]* MB of backend memory to load' <<<"$out" | grep -o '[0-9]*' || true)
[ -n "$need" ] || fail "no count of the load's memory: $out"
log "loading: counted $need MB ($(echo "$out" | grep -o 'DETAIL:.*'))"

# 3. loading it to score a pair: the image, the weights as read, the packed copy
read -r rss hwm <<<"$(measure "SELECT corpq.sent_prob('mm_base', 's1 s2 s3', 't1 t2 t3')")"
used=$((hwm - rss))
log "load for sent_prob: backend peak $((used / 1024)) MB above its start, counted $need MB"
[ "$used" -gt 0 ] || fail "load: could not read the backend's peak"
# beside the model, the first call loads the two 8,000-word vocabularies, the
# catalog caches and the pair's work space (measured: 1-3 MB in all)
[ "$used" -le $(((need + 8) * 1024)) ] || fail "the load's peak is over its count"

# 4. the bound is checked before allocating: just below the count the load is
# refused and the backend's peak does not move; at the count, it loads
below=$((need - 1))
out=$(q -v ON_ERROR_STOP=0 -c "SET corpq.max_model_mb = $below" -c "LOAD 'corpq'" -c "SELECT $hwm_sql" \
	-c "SELECT corpq.sent_prob('mm_base', 's1', 't1')" -c "SELECT $hwm_sql" 2>&1 || true)
grep -q "more than corpq.max_model_mb ($below MB)" <<<"$out" || fail "no error or an unexpected one: $out"
log "under corpq.max_model_mb $below: $(echo "$out" | grep -o 'ERROR:.*')"
read -r before after <<<"$(echo "$out" | grep -E '^[0-9]+$' | tr '\n' ' ')"
[ $((after - before)) -lt $((10 * 1024)) ] || fail "the refused load took $(((after - before) / 1024)) MB"
q -c "SET corpq.max_model_mb = $need" -c "SELECT corpq.sent_prob('mm_base', 's1', 't1') > 0" | grep -qx t ||
	fail "the load failed under corpq.max_model_mb $need"
log "ok"
