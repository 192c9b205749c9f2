#!/usr/bin/env bash
# corpq.max_model_mb counts a model operation's real peak (issue 31, Medium 7).
#
# The bound is checked before anything is allocated, from the weight image's
# size times the operation's factor (extension/pg/model/model.h:
# CORPQ_WRITE_PEAK 6 for creating or importing, CORPQ_LOAD_PEAK 3 for loading
# to score or translate).  The factors are only honest if the backend never
# takes more: this test measures each backend's peak (VmHWM, read by the
# backend itself from /proc/self/status, which only a superuser may read) for
# the `base` preset over 8,000-word vocabularies and checks
#   - creating it peaks within 6 x its image, importing it too,
#   - loading it to score a pair peaks within 3 x its image (the pair's work
#     space is a few hundred kB),
#   - a bound just below the load's count refuses the load before allocating
#     (the backend's peak stays where it was), and just above it lets it load.
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
	q -c "SELECT octet_length(weights) / 1024 FROM corpq.model_versions v
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
	"SELECT corpq.model_import('mm_copy', (SELECT weights FROM corpq.model_versions v
	   JOIN corpq.model_catalog m ON m.id = v.model WHERE m.name = 'mm_base' AND v.version = 1), 'mm_src', 'mm_tgt')")"
check "model_import" "$rss" "$hwm" "$img" 6

# 3. loading it to score a pair: the image, the parsed weights, the packed copy
read -r rss hwm <<<"$(measure "SELECT corpq.sent_prob('mm_base', 's1 s2 s3', 't1 t2 t3')")"
check "load for sent_prob" "$rss" "$hwm" "$img" 3

# 4. the bound is checked before allocating: just below 3 x the image the
# load is refused and the backend's peak does not move; just above, it loads
below=$((3 * img / 1024 - 1))
above=$((3 * (img + 1023) / 1024 + 1))
out=$(q -v ON_ERROR_STOP=0 -c "SET corpq.max_model_mb = $below" -c "LOAD 'corpq'" -c "SELECT $hwm_sql" \
	-c "SELECT corpq.sent_prob('mm_base', 's1', 't1')" -c "SELECT $hwm_sql" 2>&1 || true)
grep -q "more than corpq.max_model_mb ($below MB)" <<<"$out" || fail "no error or an unexpected one: $out"
log "under corpq.max_model_mb $below: $(echo "$out" | grep -o 'ERROR:.*')"
read -r before after <<<"$(echo "$out" | grep -E '^[0-9]+$' | tr '\n' ' ')"
[ $((after - before)) -lt $((10 * 1024)) ] || fail "the refused load took $(((after - before) / 1024)) MB"
q -c "SET corpq.max_model_mb = $above" -c "SELECT corpq.sent_prob('mm_base', 's1', 't1') > 0" | grep -qx t ||
	fail "the load failed under corpq.max_model_mb $above"
log "ok"
