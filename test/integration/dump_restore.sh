#!/usr/bin/env bash
# corpq's catalog survives pg_dump | psql: BPE models, vocabularies, jobs, ANTAP
# models (and, as later features add tables, theirs) come back identical in a new database.
# A dropped model's version numbers stay issued in the restored database.
# A dump taken while a row job runs (issue 50): the restored copy of the job
# names its target by an oid the restore did not keep; when the server
# restarts and recovery runs it again, it fails with a clear reason without
# writing, and the job submitted again with skip_existing completes the
# restored table, every id once, equal to the source's scores.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 900 -o shared_preload_libraries=corpq -o max_worker_processes=16

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

# ---- a dump taken while a row job runs ----
createdb corpq_mid
q -d corpq_src >/dev/null <<'SQL'
CREATE TABLE mj_pairs AS
SELECT g::bigint AS id, 'w' || g % 97 || ' w' || g % 89 || ' w' || g % 7 || ' w' || g % 13 AS src,
       'v' || g % 83 || ' v' || g % 79 || ' v' || g % 11 AS tgt
  FROM generate_series(1, 60000) g;
SELECT corpq.vocab_build('mj_s', 'SELECT src FROM mj_pairs');
SELECT corpq.vocab_build('mj_t', 'SELECT tgt FROM mj_pairs');
SELECT corpq.model_create('mj', '{"preset": "tiny", "max_positions": 16}', 'mj_s', 'mj_t', 3);
CREATE TABLE mj_scores (id bigint PRIMARY KEY, score double precision);
SQL
job=$(q -d corpq_src -c "SELECT corpq.score_job('mj', 'SELECT id, src, tgt FROM mj_pairs ORDER BY id', 'mj_scores',
                                                 '{\"chunk_rows\": 500, \"threads\": 1}')")
for _ in $(seq 6000); do
	s=$(q -d corpq_src -c "SELECT state || ' ' || (SELECT count(*) FROM corpq.row_job_chunks WHERE job = $job) FROM corpq.jobs WHERE id = $job")
	[ "${s#* }" -ge 3 ] && break
	case "$s" in running* | queued*) sleep 0.05 ;; *) fail "job $job ended before the dump: $s" ;; esac
done
pg_dump -d corpq_src | q -d corpq_mid >/dev/null
mid=$(q -d corpq_mid -c "SELECT state || ' ' || (SELECT count(*) FROM mj_scores) FROM corpq.jobs WHERE id = $job")
rows_mid=${mid#* }
[ "${mid%% *}" = running ] && [ "$rows_mid" -gt 0 ] && [ "$rows_mid" -lt 60000 ] \
	|| fail "the dump was not taken while job $job ran: $mid"
echo "dump_restore: dump taken while job $job ran: $rows_mid of 60000 rows in the restored copy"
[ "$(q -d corpq_mid -c "SELECT args ->> 'target' <> 'mj_scores'::regclass::oid::text FROM corpq.jobs WHERE id = $job")" = t ] \
	|| fail "the restored table kept its oid: the test shows nothing"
# the restart: recovery runs both copies of the job again
restart_immediate
cluster_ready
for _ in $(seq 1200); do
	s=$(q -d corpq_mid -c "SELECT state FROM corpq.jobs WHERE id = $job")
	case "$s" in running | queued) sleep 0.1 ;; *) break ;; esac
done
err=$(q -d corpq_mid -c "SELECT state || ': ' || coalesce(error, '') FROM corpq.jobs WHERE id = $job")
case "$err" in
"failed: the target table public.mj_scores (oid "*") no longer exists under that oid"*) ;;
*) fail "the restored job $job: $err" ;;
esac
[ "$(q -d corpq_mid -c "SELECT count(*) FROM mj_scores")" = "$rows_mid" ] || fail "the restored job wrote rows"
echo "dump_restore: the restored job, run again by recovery: $err; its table untouched"
# submitted again with skip_existing, it completes the restored table
again=$(q -d corpq_mid -c "SELECT corpq.score_job('mj', 'SELECT id, src, tgt FROM mj_pairs', 'mj_scores', '{\"skip_existing\": true}')")
[ "$(q -d corpq_mid -c "SELECT corpq.job_wait($again, '600 s')")" = succeeded ] || fail "job $again in the restored copy failed"
[ "$(q -d corpq_src -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "job $job in the source failed after the restart"
sum="SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || md5(string_agg(id || ':' || score, ',' ORDER BY id)) FROM mj_scores"
a=$(q -d corpq_src -c "$sum")
b=$(q -d corpq_mid -c "$sum")
[ "${a%% *}" = 60000 ] && [ "$a" = "$b" ] || fail "scores after the restore: source $a, restored $b"
echo "dump_restore: resubmitted with skip_existing: 60000 rows, every id once, equal to the source's"
echo "dump_restore: ok"
