#!/usr/bin/env bash
# Training jobs that must fail with a stated reason:
#   - a model whose weights are finite but huge (3e38: importable, the
#     loader refuses only NaN and infinity): the first update's loss is not
#     finite, the job fails with "training diverged" (detail: "... at update 1.") and
#     writes no version;
#   - a model whose owner changed after submission: the worker checks again.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	corpq_cluster_run -t 600 -o max_worker_processes=16
	log ok
	exit 0
fi

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

# every float of the data section set to x, CRC recomputed: image $1
fill_image() {
	q -c "SELECT encode(corpq.model_export('good'), 'base64')" | /usr/bin/python3 -c '
import base64, struct, sys, zlib
img = bytearray(base64.b64decode(sys.stdin.read()))
off, size = struct.unpack_from("<QQ", img, 24)
img[off:off + size] = struct.pack("<f", float(sys.argv[2])) * (size // 4)
struct.pack_into("<I", img, off + size, zlib.crc32(bytes(img[:off + size])) & 0xffffffff)
open(sys.argv[1], "wb").write(img)
' "$tmp/$1.bin" "$2"
	chmod 644 "$tmp/$1.bin"
}
fill_image really_nan nan
if err=$(q -c "SELECT corpq.model_import('really_nan', pg_read_binary_file('$tmp/really_nan.bin'), 'f_src', 'f_tgt')" 2>&1); then
	fail "a NaN image was imported"
fi
case $err in *"non-finite value"*) ;; *) fail "NaN image: error '$err'";; esac
fill_image nan 3e38
q -c "SELECT corpq.model_import('nan', pg_read_binary_file('$tmp/nan.bin'), 'f_src', 'f_tgt')" >/dev/null
job=$(q -c "SELECT corpq.train('nan', 'SELECT src, tgt FROM pairs ORDER BY id', NULL, '{\"steps\": 20, \"checkpoint_every\": 5}')")
[ "$(q -c "SELECT corpq.job_wait($job, '120 s')")" = failed ] || fail "NaN model: $(q -c "SELECT state FROM corpq.jobs WHERE id = $job")"
err=$(q -c "SELECT error FROM corpq.jobs WHERE id = $job")
case $err in "training diverged"$'\n'"DETAIL: "*"at update 1.") ;; *) fail "NaN model: error '$err'";; esac
[ "$(q -c "SELECT count(*) FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model WHERE c.name = 'nan'")" = 1 ] \
	|| fail "NaN model: a version was written"
[ "$(q -c "SELECT count(*) FROM corpq.train_log WHERE job = $job")" = 0 ] || fail "NaN model: log rows written"
log "NaN weights refused at import; huge weights: failed with '$err', no version, no log row"

# the owner changes between submission and the worker's start: the submitting
# transaction holds the job back until it commits, after the change.  The
# submitter logs in (a superuser session cannot start a job under SET ROLE);
# it waits on a table the superuser holds locked until the model is given away.
q >/dev/null <<SQL
CREATE ROLE regress_train_a LOGIN PASSWORD '$PGPASSWORD';
CREATE ROLE regress_train_b;
GRANT SELECT ON pairs TO regress_train_a;
UPDATE corpq.model_catalog SET owner = 'regress_train_a' WHERE name = 'good';
CREATE TABLE gate ();
GRANT SELECT ON gate TO regress_train_a;
SQL
mkfifo "$tmp/holder"
q <"$tmp/holder" >/dev/null &
holder=$!
exec 3>"$tmp/holder"
echo "BEGIN; LOCK TABLE gate;" >&3
until [ "$(q -c "SELECT count(*) FROM pg_locks WHERE relation = 'gate'::regclass AND granted")" = 1 ]; do sleep 0.05; done
psql -X -v ON_ERROR_STOP=1 -Atq -U regress_train_a >"$tmp/job" <<'SQL' &
BEGIN;
SELECT corpq.train('good', 'SELECT src, tgt FROM pairs ORDER BY id', NULL, '{"steps": 5}');
SELECT count(*) FROM gate;
COMMIT;
SQL
submitter=$!
until [ "$(q -c "SELECT count(*) FROM pg_locks WHERE relation = 'gate'::regclass AND NOT granted")" = 1 ]; do sleep 0.05; done
echo "UPDATE corpq.model_catalog SET owner = 'regress_train_b' WHERE name = 'good'; COMMIT;" >&3
exec 3>&-
wait "$holder" "$submitter"
job=$(head -1 "$tmp/job")
[ "$(q -c "SELECT corpq.job_wait($job, '120 s')")" = failed ] || fail "owner change: $(q -c "SELECT state, error FROM corpq.jobs WHERE id = $job")"
err=$(q -c "SELECT error FROM corpq.jobs WHERE id = $job")
[ "$err" = 'permission denied to train model "good"' ] || fail "owner change: error '$err'"
log "owner changed before the worker started: failed with '$err'"
