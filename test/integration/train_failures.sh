#!/usr/bin/env bash
# Training jobs that must fail with a stated reason:
#   - a model whose weights are NaN (importable: the loader checks the CRC
#     and shapes, not values): the first update's loss is not finite, the job
#     fails with "training diverged: ... at update 1" and writes no version;
#   - a model whose owner changed after submission: the worker checks again.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."

if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	CORPQ_IN_CLUSTER=1 timeout 600 pg_virtualenv -t -o max_worker_processes=16 \
		"$here/$(basename "$0")"
	echo "train_failures: ok"
	exit 0
fi

fail() { echo "train_failures: FAIL: $*" >&2; exit 1; }
q() { psql -X -v ON_ERROR_STOP=1 -Atq "$@"; }
log() { echo "train_failures: $*"; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

q -c "CREATE EXTENSION corpq"
q >/dev/null <<'SQL'
CREATE TABLE pairs AS
SELECT g AS id, 'w' || (g % 17) || ' w' || (g % 5) AS src, 'v' || (g % 17) || ' v' || (g % 5) AS tgt
  FROM generate_series(1, 300) g;
SELECT corpq.vocab_build('f_src', 'SELECT src FROM pairs');
SELECT corpq.vocab_build('f_tgt', 'SELECT tgt FROM pairs');
SELECT corpq.model_create('good', '{"preset": "tiny", "max_positions": 16}', 'f_src', 'f_tgt', 1);
SQL

# every float of the data section NaN, CRC recomputed
q -c "SELECT encode(corpq.model_export('good'), 'base64')" | /usr/bin/python3 -c '
import base64, struct, sys, zlib
img = bytearray(base64.b64decode(sys.stdin.read()))
off, size = struct.unpack_from("<QQ", img, 24)
img[off:off + size] = struct.pack("<f", float("nan")) * (size // 4)
struct.pack_into("<I", img, off + size, zlib.crc32(bytes(img[:off + size])) & 0xffffffff)
open(sys.argv[1], "wb").write(img)
' "$tmp/nan.bin"
chmod 644 "$tmp/nan.bin"
q -c "SELECT corpq.model_import('nan', pg_read_binary_file('$tmp/nan.bin'), 'f_src', 'f_tgt')" >/dev/null
job=$(q -c "SELECT corpq.train('nan', 'SELECT src, tgt FROM pairs ORDER BY id', NULL, '{\"steps\": 20, \"checkpoint_every\": 5}')")
[ "$(q -c "SELECT corpq.job_wait($job, '120 s')")" = failed ] || fail "NaN model: $(q -c "SELECT state FROM corpq.jobs WHERE id = $job")"
err=$(q -c "SELECT error FROM corpq.jobs WHERE id = $job")
case $err in "training diverged: "*"at update 1") ;; *) fail "NaN model: error '$err'";; esac
[ "$(q -c "SELECT count(*) FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model WHERE c.name = 'nan'")" = 1 ] \
	|| fail "NaN model: a version was written"
[ "$(q -c "SELECT count(*) FROM corpq.train_log WHERE job = $job")" = 0 ] || fail "NaN model: log rows written"
log "NaN weights: failed with '$err', no version, no log row"

# the owner changes between submission and the worker's start: the submitting
# transaction holds the job back until it commits, after the ALTER
q >/dev/null <<'SQL'
CREATE ROLE regress_train_a;
CREATE ROLE regress_train_b;
GRANT SELECT ON pairs TO regress_train_a;
UPDATE corpq.model_catalog SET owner = 'regress_train_a' WHERE name = 'good';
SQL
job=$(q <<'SQL'
BEGIN;
SET ROLE regress_train_a;
SELECT corpq.train('good', 'SELECT src, tgt FROM pairs ORDER BY id', NULL, '{"steps": 5}');
RESET ROLE;
UPDATE corpq.model_catalog SET owner = 'regress_train_b' WHERE name = 'good';
COMMIT;
SQL
)
[ "$(q -c "SELECT corpq.job_wait($job, '120 s')")" = failed ] || fail "owner change: $(q -c "SELECT state, error FROM corpq.jobs WHERE id = $job")"
err=$(q -c "SELECT error FROM corpq.jobs WHERE id = $job")
[ "$err" = 'permission denied to train model "good"' ] || fail "owner change: error '$err'"
log "owner changed before the worker started: failed with '$err'"
