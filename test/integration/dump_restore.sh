#!/usr/bin/env bash
# corpq's catalog survives pg_dump | psql: BPE models, vocabularies, jobs, ANTAP
# models (and, as later features add tables, theirs) come back identical in a new database.
# A dropped model's version numbers stay issued in the restored database.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 300

createdb corpq_src
createdb corpq_dst
q -d corpq_src <<'SQL'
CREATE EXTENSION corpq;
CREATE TABLE corpus(src text, tgt text);
INSERT INTO corpus VALUES ('the lower house approves the newest law', 'la cámara baja aprueba la ley más nueva'),
  ('the widest river is the lowest', 'el río más ancho es el más bajo'),
  ('newer laws are lower', 'las leyes más nuevas son más bajas');
SELECT corpq.bpe_learn('enes', 'SELECT src FROM corpus UNION ALL SELECT tgt FROM corpus', 30, 2);
SELECT corpq.bpe_import('imported', E'#version: 0.2\nl o\nlo w\ne r</w>\n');
SELECT corpq.vocab_build('en', 'SELECT src FROM corpus', 'enes');
SELECT corpq.vocab_build('es', 'SELECT tgt FROM corpus');
SELECT corpq.wordpiece_import('wp', E'[UNK]\nthe\nlow\n##er\n##est\nhouse\n', '{"do_lower_case": false}');
SELECT corpq.vocab_build('en_wp', 'SELECT src FROM corpus', 'wp');
INSERT INTO corpq.jobs(kind, state, error) VALUES ('lexicon_train', 'failed', 'kept for the dump test');
SELECT corpq.model_create('dropped', '{"preset": "tiny", "d_model": 8, "heads": 2, "ffn_dim": 16,
                          "encoder_layers": 1, "decoder_layers": 1}', 'en', 'es');
SELECT corpq.model_drop('dropped');
CREATE TABLE analysis AS SELECT corpq.cav_accumulate(src, tgt, 16) AS c FROM corpus;
SELECT corpq.antap_train('ap', 'SELECT t.token, a.c FROM analysis a, corpq.cav_tokens(a.c) t',
                         'SELECT t.token, length(t.token) / 10.0 FROM analysis a, corpq.cav_tokens(a.c) t',
                         '{"pool_rows": 4, "pool_cols": 4, "seq_len": 2, "d_model": 4, "heads": 2, "max_epochs": 3}') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
SQL
[ "$(q -d corpq_src -c "SELECT count(*) FROM corpq.antap_versions")" = 1 ] || fail "ANTAP training failed"
pg_dump -d corpq_src | q -d corpq_dst > /dev/null

# Every corpq table's rows, in a stable order, must be identical.
tables=$(q -d corpq_src -c "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'corpq' AND c.relkind = 'r' ORDER BY 1")
[ -n "$tables" ] || fail "no corpq tables"
for t in $tables; do
	a=$(q -d corpq_src -c "SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) FROM corpq.$t x")
	b=$(q -d corpq_dst -c "SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) FROM corpq.$t x")
	[ "$a" = "$b" ] || fail "table corpq.$t differs after restore: $a vs $b"
	echo "dump_restore: corpq.$t: $a"
done
[ "$(q -d corpq_src -c "SELECT corpq.bpe_export('enes')")" = "$(q -d corpq_dst -c "SELECT corpq.bpe_export('enes')")" ] \
	|| fail "bpe_export differs"
wp="SELECT corpq.bpe_apply('wp', 'the lowest lower house')"
[ "$(q -d corpq_dst -c "$wp")" = "the low ##est low ##er house" ] || fail "restored WordPiece model segments differently"
[ "$(q -d corpq_dst -c "SELECT corpq.vocab_decode('en', corpq.vocab_encode('en', 'the newest law'))")" = "the newest law" ] \
	|| fail "restored vocabulary does not round-trip"
# A user table with a cav column round-trips through the dump's text form.
[ "$(q -d corpq_src -c "SELECT md5(corpq.cav_to_bytea(c)) FROM analysis")" = \
  "$(q -d corpq_dst -c "SELECT md5(corpq.cav_to_bytea(c)) FROM analysis")" ] || fail "cav column differs after restore"
# The restored ANTAP model predicts the same, bit for bit.
pred="SELECT string_agg(corpq.antap_predict('ap', a.c, t.token)::text, ' ' ORDER BY t.token) FROM analysis a, corpq.cav_tokens(a.c) t"
[ "$(q -d corpq_src -c "$pred")" = "$(q -d corpq_dst -c "$pred")" ] || fail "ANTAP predictions differ after restore"
# 'dropped@1' named weights that are gone: a model created again under the name
# in the restored database numbers after them, as it would have in the source.
new_version=$(q -d corpq_dst -c "SELECT corpq.model_create('dropped', '{\"preset\": \"tiny\", \"d_model\": 8, \"heads\": 2,
                                 \"ffn_dim\": 16, \"encoder_layers\": 1, \"decoder_layers\": 1}', 'en', 'es')")
[ "$new_version" = 2 ] || fail "a re-created model took version $new_version after the restore, not 2"
# New rows after the restore get fresh ids (sequences restored too).
q -d corpq_dst -c "INSERT INTO corpq.jobs(kind, state) VALUES ('lexicon_train', 'failed')"
echo "dump_restore: ok"
