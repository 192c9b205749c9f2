#!/usr/bin/env bash
# WordPiece on a very long text (issue 50, MEDIUM): segmentation's work space
# (the text as code points, lower-cased, cleaned, as UTF-16 for ICU: about 20
# bytes per input byte) is bounded by corpq.max_batch_mb, refused before it is
# taken, and a cancel stops a long segmentation at once (every character
# loop polls).  Measured on one fresh backend each (VmHWM, read by the
# backend itself):
#   - bpe_apply on a 300 MB text peaks no more than max_batch_mb + 32 MB above
#     what building the text alone takes, and fails naming the setting;
#   - with a bound large enough to segment a 20 MB text, pg_cancel_backend
#     ends it quickly (the delay is logged; a generous bound is asserted, the
#     machine may be loaded).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 900

q >/dev/null <<'SQL'
CREATE EXTENSION corpq;
SELECT corpq.wordpiece_import('wl_wp', E'[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n##a\ni\n');
SQL
hwm="(SELECT pg_catalog.substring(pg_read_file('/proc/self/status'), 'VmHWM:\\s+(\\d+) kB'))::bigint"
rss="(SELECT pg_catalog.substring(pg_read_file('/proc/self/status'), 'VmRSS:\\s+(\\d+) kB'))::bigint"

# kB above the backend's start that "SELECT expr" peaks at (errors allowed)
peak_of() {
	q -c "SELECT corpq.bpe_apply('wl_wp', 'a')" -c "CREATE TEMP TABLE b AS SELECT $rss AS kb" \
		-c "SET corpq.max_batch_mb = $2" \
		-c "DO \$\$BEGIN PERFORM $1; EXCEPTION WHEN program_limit_exceeded THEN RAISE NOTICE 'refused: %', SQLERRM; END\$\$" \
		-c "SELECT $hwm - kb FROM b" 2>/tmp/wl_notice.$$ | tail -n 1
}
n=150000000 # 'İ' is 2 bytes: 300 MB
text_kb=$(peak_of "length(repeat('İ', $n))" 64)
seg_kb=$(peak_of "corpq.bpe_apply('wl_wp', repeat('İ', $n))" 64)
grep -q 'needs more than corpq.max_batch_mb (64 MB) of work space' /tmp/wl_notice.$$ \
	|| { cat /tmp/wl_notice.$$; rm -f /tmp/wl_notice.$$; fail "the 300 MB text was not refused naming corpq.max_batch_mb"; }
rm -f /tmp/wl_notice.$$
log "300 MB text: building it peaks $((text_kb / 1024)) MB above the start, segmenting it (refused) $((seg_kb / 1024)) MB; bound 64 MB"
[ $((seg_kb - text_kb)) -le $(((64 + 32) * 1024)) ] \
	|| fail "segmenting took $(((seg_kb - text_kb) / 1024)) MB beyond the text, more than corpq.max_batch_mb (64 MB) + 32 MB"

# a long segmentation within a large bound, cancelled
marker="wl_cancel_$$"
psql -X -q -c "SET corpq.max_batch_mb = 4096" \
	-c "SELECT length(corpq.bpe_apply('wl_wp', repeat('İ', 10000000))) AS $marker" >/dev/null 2>&1 &
bg=$!
pid=$(corpq_backend_pid "query LIKE '%AS $marker%' AND state = 'active'" 60) || fail "the segmentation never started"
# let it get into the segmentation (building the text takes milliseconds)
sleep 0.5
start=$(date +%s%N)
q -c "SELECT pg_cancel_backend($pid)" >/dev/null
for _ in $(seq 600); do
	[ -z "$(q -c "SELECT 1 FROM pg_stat_activity WHERE pid = $pid AND state = 'active'")" ] && break
	sleep 0.01
done
ms=$((($(date +%s%N) - start) / 1000000))
wait $bg && fail "the segmentation finished before the cancel reached it (make the text longer)"
log "a cancel ended a 20 MB segmentation after $ms ms"
[ "$ms" -le 3000 ] || fail "the cancel took $ms ms to stop the segmentation"
log "passed"
