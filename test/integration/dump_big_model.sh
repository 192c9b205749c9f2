#!/usr/bin/env bash
# A database holding a model over 0.5 GB dumps and restores (issue 53): its
# weight image is rows of corpq.model_chunks (16 MB each), so pg_dump never
# writes one 1 GB bytea as 2 GB of hex text ("invalid memory alloc request
# size", which used to fail the whole database's dump).  Plain and custom
# formats: restored into new databases, the version has the same bytes and
# checksum, loads and scores the same.  Then the large-object way in and
# out at that size, as a role with no server file access: model_export_lo
# and model_import_lo round-trip the bytes exactly, with progress NOTICEs,
# in a backend whose peak stays far below the image.
#
# The model: preset tiny widened to d_model 512 with a 300,000-token source
# vocabulary (its embedding alone is 614 MB), created from a seed: the
# cheapest valid image over 0.5 GB.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 1500

createdb big_src
q -d big_src >/dev/null <<'SQL'
CREATE EXTENSION corpq;
CREATE TABLE pairs AS
SELECT g AS id, 't' || (g % 300) || ' t' || (g % 17) || ' t' || (g * 7 % 1000) AS src,
       'x' || (g % 5) || ' y' || (g % 7) AS tgt
  FROM generate_series(1, 50) g;
SELECT corpq.vocab_import('big_src', jsonb_build_object('tokens',
         to_jsonb(ARRAY['<s>', '<pad>', '</s>', '<unk>'] || array_agg('t' || g ORDER BY g))))
  FROM generate_series(0, 299995) g;
SELECT corpq.vocab_build('big_tgt', 'SELECT tgt FROM pairs');
SELECT corpq.model_create('big', '{"preset": "tiny", "d_model": 512, "heads": 8, "ffn_dim": 1024,
                                   "encoder_layers": 1, "decoder_layers": 1, "max_positions": 32}',
                          'big_src', 'big_tgt', 5);
SQL
bytes=$(q -d big_src -c "SELECT bytes FROM corpq.model_versions")
chunks=$(q -d big_src -c "SELECT count(*) FROM corpq.model_chunks")
[ "$bytes" -gt $((512 * 1024 * 1024)) ] || fail "the model's image is only $bytes bytes"
log "model big@1: $bytes bytes in $chunks chunks"

# what the source says: checksum, the bytes' md5 (read through the chunks), scores
sig="SELECT v.checksum || ' ' || v.bytes || ' ' || md5(corpq.model_export('big@1'))
       FROM corpq.model_versions v"
scores="SELECT string_agg(round(corpq.sent_prob('big@1', src, tgt)::numeric, 9)::text, ' ' ORDER BY id) FROM pairs"
src_sig=$(q -d big_src -c "$sig")
src_scores=$(q -d big_src -c "$scores")

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for fmt in plain custom; do
	createdb "big_$fmt"
	if [ $fmt = plain ]; then
		pg_dump -d big_src -f "$dir/big.sql" || fail "pg_dump (plain) failed"
		q -d big_plain -f "$dir/big.sql" >/dev/null || fail "the plain dump did not restore"
		size=$(stat -c %s "$dir/big.sql")
	else
		pg_dump -Fc -d big_src -f "$dir/big.dump" || fail "pg_dump (custom) failed"
		pg_restore --exit-on-error -d big_custom "$dir/big.dump" || fail "pg_restore (custom) failed"
		size=$(stat -c %s "$dir/big.dump")
	fi
	rm -f "$dir/big.sql" "$dir/big.dump"
	[ "$(q -d "big_$fmt" -c "$sig")" = "$src_sig" ] || fail "$fmt: the restored version differs: $(q -d "big_$fmt" -c "$sig") vs $src_sig"
	[ "$(q -d "big_$fmt" -c "SELECT count(*) FROM corpq.model_chunks")" = "$chunks" ] || fail "$fmt: chunks lost"
	[ "$(q -d "big_$fmt" -c "$scores")" = "$src_scores" ] || fail "$fmt: the restored model scores differently"
	log "$fmt dump of $((size / 1024 / 1024)) MB: restored with the same checksum, bytes and scores"
	dropdb "big_$fmt"
done

# ---- the large-object way, at this size, as a role with no file access ----
# (a session of the superuser that becomes big_user: the checks are the
# current user's, and localhost logins here need passwords)
q -d big_src -c "CREATE ROLE big_user" >/dev/null
[ "$(q -d big_src -c "SELECT pg_has_role('big_user', 'pg_read_server_files', 'MEMBER')
                             OR pg_has_role('big_user', 'pg_write_server_files', 'MEMBER')")" = f ] ||
	fail "big_user has server file access"
out=$(psql -X -v ON_ERROR_STOP=1 -At -d big_src 2>&1 <<'SQL'
SET ROLE big_user;
SELECT corpq.model_export_lo('big@1') AS lo \gset
SELECT 'import ' || corpq.model_import_lo('big_copy', :lo, 'big_src', 'big_tgt');
SELECT 'unlink ' || lo_unlink(:lo);
SQL
) || fail "the large-object round trip failed: $out"
grep -q '^import 1$' <<<"$out" || fail "model_import_lo: $out"
notices=$(grep -c 'NOTICE:  model "big.*MB \(read\|stored\)' <<<"$out" || true)
[ "$notices" -ge 2 ] || fail "no progress NOTICEs for a $chunks-chunk image: $out"
copy_sig=$(q -d big_src -c "SELECT v.checksum || ' ' || v.bytes || ' ' || md5(corpq.model_export('big_copy@1'))
                              FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
                             WHERE c.name = 'big_copy'")
[ "$copy_sig" = "$src_sig" ] || fail "model_export_lo | model_import_lo changed the bytes: $copy_sig vs $src_sig"
[ "$(q -d big_src -c "SELECT owner::text FROM corpq.model_catalog WHERE name = 'big_copy'")" = big_user ] ||
	fail "big_copy is not big_user's"
log "model_export_lo | model_import_lo as big_user (no server file access): the same $bytes bytes, $notices progress NOTICEs"

# the import's private peak (VmHWM less the shared memory it touched, which
# stays mapped): bounded by chunks, not by the image
lo=$(q -d big_src -c "SELECT corpq.model_export_lo('big@1')")
q -d big_src -c "ALTER LARGE OBJECT $lo OWNER TO big_user"
marker="SELECT pg_sleep(2) -- dump_big_model $$"
q -d big_src -c "SET ROLE big_user" -c "SELECT corpq.model_import_lo('big_copy', $lo)" -c "$marker" >/dev/null &
bg=$!
pid=$(corpq_backend_pid "query = '$marker'" 3600) || fail "the import's backend never reached its sleep"
read -r hwm shm <<<"$(awk '/^VmHWM/ {h = $2} /^RssShmem/ {s = $2} END {print h, s}' "/proc/$pid/status")"
wait $bg || fail "model_import_lo of the large object failed"
peak=$((hwm - shm))
log "model_import_lo of $((bytes / 1024 / 1024)) MB: backend peak $((peak / 1024)) MB private ($((hwm / 1024)) MB with $((shm / 1024)) MB of shared memory)"
[ "$peak" -lt $((256 * 1024)) ] || fail "model_import_lo's private peak ($((peak / 1024)) MB) is not bounded by its chunks"
echo "dump_big_model: ok"
