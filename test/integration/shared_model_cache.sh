#!/usr/bin/env bash
# One copy of a loaded model per server (issue 53, items 3 and 4; corpq
# preloaded): the shared model cache of pg/model/model_shared.c.
#   attach:    session 1 scores with a model (loads it and copies it into
#              shared memory); session 2, while session 1 stays connected,
#              sees it shared with attach count 2 and scores the same bits;
#   parallel:  a parallel worker (force_parallel_mode) attaches;
#   job:       a score_job's worker attaches, and writes the same bits;
#   eviction:  under a budget for one model, an unused one is evicted for
#              another; an ordinary role's load does not evict a copy another
#              role loaded; when both are in use, the second stays a private
#              copy with a NOTICE (no error);
#   drop:      a dropped model's copy is never served: the name imported
#              again from other weights scores with the new weights;
#   crash:     kill -9 of a backend attached to a copy restarts the server;
#              the next session loads again and scores the same bits;
#   vocab:     a model's vocabularies' token tables are shared too: two
#              sessions with open cursors hold sv's one copy (attach count 2);
#              embeddings and token_scores (tokens, predicted tokens,
#              unknown words) from the attached table are a private
#              session's bit for bit; a vocabulary dropped and imported again
#              under its name with other ids is never served from the old
#              copy.
#   wordpiece: a model whose vocabulary is WordPiece-segmented (as a
#              converted LaBSE's is) shares its segmenter too: a session
#              with an open cursor and another hold its one copy (kind
#              wordpiece, attach count 2); embeddings (accents, unknown
#              words, long words) from the attached segmenter are a private
#              session's bit for bit; a segmenter dropped and imported again
#              under its name with other pieces is never served from the old
#              copy; over the budget it stays private with a NOTICE and
#              still embeds the same bits.
# Every wait is on a state, with a deadline.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 1200 -o shared_preload_libraries=corpq -o max_worker_processes=16 \
	-o max_parallel_workers=8

work=$(mktemp -d)
trap 'exec 3>&- 4>&- 5>&- 6>&- 2>/dev/null || true; rm -rf "$work"' EXIT

# A session kept open: open_session N starts psql reading $work/in.N (fd 3 or 4)
# and writing $work/out.N; say N SQL sends it a statement; wait_out N TEXT
# waits for TEXT in its output.
open_session() {
	mkfifo "$work/in.$1"
	psql -X -Atq -v ON_ERROR_STOP=0 <"$work/in.$1" >"$work/out.$1" 2>&1 &
	eval "exec $2>\"$work/in.$1\""
}
wait_out() {
	for _ in $(seq 1200); do
		grep -q -- "$2" "$work/out.$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "session $1 never printed '$2': $(cat "$work/out.$1")"
}
# wait until SQL (one value) prints WANT
wait_for() {
	local got=""
	for _ in $(seq 1200); do
		got=$(q -c "$1" 2>/dev/null || true)
		[ "$got" = "$2" ] && return 0
		sleep 0.1
	done
	fail "waited for [$1] to be '$2', last '$got'"
}
attached() { q -c "SELECT coalesce(max(attach_count), 0) FROM corpq.model_cache() WHERE model = '$1' AND shared"; }

q -c "CREATE EXTENSION corpq"
[ "$(q -c "SHOW shared_preload_libraries")" = corpq ] || fail "corpq not preloaded"
[ "$(q -c "SHOW corpq.shared_model_cache_mb")" = 1GB ] || fail "default budget: $(q -c "SHOW corpq.shared_model_cache_mb")"
# two models of about 13 MB each (d 256, 2 + 2 layers)
q >/dev/null <<'SQL'
CREATE TABLE pairs AS
SELECT g::bigint AS id,
       array_to_string((ARRAY['w' || g % 97, 'w' || g * 7 % 89, 'w' || g * 13 % 83, 'w' || g * 17 % 79,
                              'w' || g * 19 % 73, 'w' || g * 23 % 71, 'w' || g * 29 % 67])[1:3 + g % 5], ' ') AS src,
       array_to_string((ARRAY['v' || g % 89, 'v' || g * 3 % 83, 'v' || g * 11 % 79, 'v' || g * 13 % 73,
                              'v' || g * 17 % 71, 'v' || g * 19 % 67])[1:2 + g % 5], ' ') AS tgt
  FROM generate_series(1, 4000) g;
SELECT corpq.vocab_build('sv', 'SELECT src FROM pairs');
SELECT corpq.vocab_build('tv', 'SELECT tgt FROM pairs');
SELECT corpq.model_create('sm', '{"preset": "tiny", "d_model": 256, "ffn_dim": 1024, "heads": 4,
                                  "encoder_layers": 2, "decoder_layers": 2, "max_positions": 40}', 'sv', 'tv', 5);
SELECT corpq.model_create('sm2', '{"preset": "tiny", "d_model": 256, "ffn_dim": 1024, "heads": 4,
                                   "encoder_layers": 2, "decoder_layers": 2, "max_positions": 40}', 'sv', 'tv', 6);
SQL
[ "$(q -c "SELECT count(*) FROM corpq.model_cache()")" = 0 ] || fail "a new server has shared copies"

# ---- attach ----
open_session 1 3
echo "CREATE TABLE s1 AS SELECT id, corpq.sent_prob('sm', src, tgt) AS score FROM pairs;
SELECT 'S1 ' || shared || ' ' || attach_count FROM corpq.model_cache() WHERE model = 'sm';" >&3
wait_out 1 "^S1 "
grep -q "^S1 true 1$" "$work/out.1" || fail "session 1: $(cat "$work/out.1")"
r=$(q <<'SQL'
CREATE TABLE s2 AS SELECT id, corpq.sent_prob('sm', src, tgt) AS score FROM pairs;
SELECT shared || ' ' || attach_count FROM corpq.model_cache() WHERE model = 'sm';
SQL
)
[ "$r" = "true 2" ] || fail "session 2 sees '$r', not the shared copy with attach count 2"
same() { q -c "SELECT count(*) FROM $1 a FULL JOIN $2 b USING (id)
                WHERE a.score IS NULL OR b.score IS NULL OR float8send(a.score) <> float8send(b.score)"; }
[ "$(same s1 s2)" = 0 ] || fail "session 2's scores differ from session 1's"
[ "$(q -c "SELECT count(*) FROM s1 WHERE score IS NOT NULL")" = 4000 ] || fail "scores missing"
log "attach: session 2 attached (count 2), 4000 scores bit for bit equal"
wait_for "SELECT attach_count FROM corpq.model_cache() WHERE model = 'sm'" 1

# ---- parallel worker ----
q -c "CREATE TABLE big AS SELECT g AS id, p.src, p.tgt FROM pairs p, generate_series(1, 20) g"
psql -X -Atq -v ON_ERROR_STOP=1 >"$work/par.out" 2>&1 <<'SQL' &
SET force_parallel_mode = on;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET max_parallel_workers_per_gather = 1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT sum(corpq.sent_prob('sm', src, tgt)) FROM big;
SQL
par=$!
wait_for "SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'parallel worker'
            AND query LIKE '%sent_prob%'" t
# session 1 holds one count; a second holder is the worker (the leader does not run the plan)
wait_for "SELECT attach_count FROM corpq.model_cache() WHERE model = 'sm'" 2
wait "$par" || fail "the parallel query failed: $(cat "$work/par.out")"
grep -q "Workers Launched: 1" "$work/par.out" || fail "no parallel worker: $(cat "$work/par.out")"
wait_for "SELECT attach_count FROM corpq.model_cache() WHERE model = 'sm'" 1
log "parallel: the worker attached and let go when it ended"

# ---- job ----
q -c "CREATE TABLE job_scores (id bigint, score double precision)"
job=$(q -c "SELECT corpq.score_job('sm', 'SELECT id, src, tgt FROM pairs ORDER BY id', 'job_scores',
                                   '{\"chunk_rows\": 100, \"batch_size\": 16, \"threads\": 1}')")
seen=0
for _ in $(seq 1200); do
	st=$(q -c "SELECT state FROM corpq.jobs WHERE id = $job")
	[ "$(attached sm)" = 2 ] && seen=1 && break
	case "$st" in succeeded | failed | cancelled) break ;; esac
	sleep 0.05
done
[ "$(q -c "SELECT corpq.job_wait($job, '300 s')")" = succeeded ] || fail "job $job: $(q -c "SELECT state || coalesce(' ' || error, '') FROM corpq.jobs WHERE id = $job")"
[ "$seen" = 1 ] || fail "the job's worker was never seen attached"
[ "$(same s1 job_scores)" = 0 ] || fail "the job's scores differ"
log "job: the score_job's worker attached; its scores are session 1's bit for bit"

# ---- eviction under a budget for one model ----
exec 3>&-
wait_for "SELECT attach_count FROM corpq.model_cache() WHERE model = 'sm'" 0
mb=$(q -c "SELECT ceil(bytes / 1048576.0)::int FROM corpq.model_cache() WHERE model = 'sm'")
budget=$((mb * 3 / 2))
q -c "ALTER SYSTEM SET corpq.shared_model_cache_mb = $budget" -c "SELECT pg_reload_conf()" >/dev/null
wait_for "SHOW corpq.shared_model_cache_mb" "${budget}MB"
r=$(q -c "SELECT count(p) FROM (SELECT corpq.sent_prob('sm2', src, tgt) AS p FROM pairs LIMIT 5) s" \
	-c "SELECT string_agg(model || ':' || shared, ',' ORDER BY model) FROM corpq.model_cache()")
[ "$r" = $'5\nsm2:true' ] || fail "sm (unused) was not evicted for sm2 under $budget MB: '$r'"
# fairness: an ordinary role's load evicts only copies that role loaded, so
# sm2 (loaded by the superuser, unused) stays and alice's sm is private
q -c "CREATE ROLE fair_alice LOGIN PASSWORD '$PGPASSWORD'" -c "GRANT SELECT ON pairs TO fair_alice"
r=$(psql -X -Atq -v ON_ERROR_STOP=1 -U fair_alice 2>&1 <<'SQL'
SELECT 'N ' || count(p) FROM (SELECT corpq.sent_prob('sm', src, tgt) AS p FROM pairs LIMIT 5) s;
SELECT 'ROWS ' || string_agg(model || ':' || shared, ',' ORDER BY model) FROM corpq.model_cache();
SQL
)
echo "$r" | grep -q "^ROWS sm:false,sm2:true$" || fail "an ordinary role evicted another role's copy: $r"
echo "$r" | grep -q 'NOTICE:  model "sm@1" is kept as a private copy in this backend: the shared model cache is full of models in use or loaded by other roles' ||
	fail "no NOTICE for the ordinary role: $r"
log "fairness: an ordinary role's load did not evict the superuser's unused copy; it kept a private copy"
# sm2 in use by session 3; sm then stays private, with a NOTICE
open_session 3 4
echo "SELECT 'S3 ' || count(p) FROM (SELECT corpq.sent_prob('sm2', src, tgt) AS p FROM pairs LIMIT 5) s;" >&4
wait_out 3 "^S3 5"
r=$(psql -X -Atq -v ON_ERROR_STOP=1 2>&1 <<'SQL'
CREATE TABLE s4 AS SELECT id, corpq.sent_prob('sm', src, tgt) AS score FROM pairs;
SELECT 'ROW ' || model || ':' || shared FROM corpq.model_cache() ORDER BY model;
SQL
)
echo "$r" | grep -q 'NOTICE:  model "sm@1" is kept as a private copy in this backend' ||
	fail "no NOTICE of a private copy: $r"
echo "$r" | grep -q "^ROW sm:false$" || fail "sm is not private: $r"
echo "$r" | grep -q "^ROW sm2:true$" || fail "sm2 is not shared: $r"
[ "$(same s1 s4)" = 0 ] || fail "the private copy scores differently"
log "eviction: unused sm evicted for sm2 under $budget MB; with sm2 in use, sm stayed private with a NOTICE"
exec 4>&-
q -c "ALTER SYSTEM RESET corpq.shared_model_cache_mb" -c "SELECT pg_reload_conf()" >/dev/null
wait_for "SHOW corpq.shared_model_cache_mb" 1GB

# ---- a dropped model is never served ----
q -c "SELECT count(p) FROM (SELECT corpq.sent_prob('sm', src, tgt) AS p FROM pairs LIMIT 5) s" >/dev/null
[ "$(q -c "SELECT shared FROM corpq.model_cache() WHERE model = 'sm'")" = t ] || fail "sm not shared again"
q -c "CREATE TABLE ref2 AS SELECT id, corpq.sent_prob('sm2', src, tgt) AS score FROM pairs"
open_session 5 3
echo "SELECT 'S5 ' || count(p) FROM (SELECT corpq.sent_prob('sm', src, tgt) AS p FROM pairs LIMIT 5) s;" >&3
wait_out 5 "^S5 5"
q >/dev/null <<'SQL'
SELECT corpq.model_drop('sm');
SELECT corpq.model_import('sm', corpq.model_export('sm2'), 'sv', 'tv');
SQL
q -c "CREATE TABLE s6 AS SELECT id, corpq.sent_prob('sm', src, tgt) AS score FROM pairs"
[ "$(same ref2 s6)" = 0 ] || fail "the re-imported sm does not score with its new weights"
[ "$(q -c "SELECT count(*) FROM s1 JOIN s6 USING (id) WHERE float8send(s1.score) = float8send(s6.score)")" -lt 40 ] ||
	fail "the re-imported sm scores as the dropped one"
# session 5, attached to the dropped copy, resolves the name again: the new weights
echo "CREATE TABLE s5 AS SELECT id, corpq.sent_prob('sm', src, tgt) AS score FROM pairs;
SELECT 'S5done';" >&3
wait_out 5 "^S5done"
[ "$(same ref2 s5)" = 0 ] || fail "session 5 scores with the dropped copy: $(cat "$work/out.5")"
exec 3>&-
log "drop: the dropped copy is never served; the re-imported name scores with its new weights"

# ---- kill -9 of an attached backend ----
ck() { q -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'"; }
ck0=$(ck)
open_session 7 3
echo "SELECT 'S7 ' || pg_backend_pid() || ' ' || count(p) FROM (SELECT corpq.sent_prob('sm', src, tgt) AS p FROM pairs LIMIT 5) s;" >&3
wait_out 7 "^S7 "
pid=$(sed -n 's/^S7 \([0-9]*\) 5$/\1/p' "$work/out.7")
[ -n "$pid" ] || fail "session 7: $(cat "$work/out.7")"
[ "$(attached sm)" -ge 1 ] || fail "session 7 is not attached"
log "kill -9 of backend $pid, attached"
kill -9 "$pid"
sleep 0.5
cluster_ready
for _ in $(seq 600); do
	c=$(ck 2>/dev/null || true)
	[ -n "$c" ] && [ "$c" != "$ck0" ] && break
	sleep 0.1
done
[ "$(ck)" != "$ck0" ] || fail "the server did not restart after the kill"
exec 3>&-
[ "$(q -c "SELECT count(*) FROM corpq.model_cache()")" = 0 ] || fail "shared copies survived the crash-restart"
r=$(q -c "CREATE TABLE s8 AS SELECT id, corpq.sent_prob('sm', src, tgt) AS score FROM pairs" \
	-c "SELECT shared || ' ' || attach_count FROM corpq.model_cache() WHERE model = 'sm'")
[ "$r" = "true 1" ] || fail "after the crash-restart: '$r'"
[ "$(same ref2 s8)" = 0 ] || fail "after the crash-restart the scores differ"
log "crash: the server restarted, shared memory was rebuilt from the catalog, same bits"

# ---- vocabularies' token tables ----
vattached() { q -c "SELECT coalesce(max(attach_count), 0) FROM corpq.shared_vocab_cache() WHERE vocabulary = '$1'"; }
q >/dev/null <<'SQL'
CREATE TABLE sents AS
SELECT id, src || CASE WHEN id % 7 = 0 THEN ' zz_unknown' ELSE '' END AS s FROM pairs WHERE id <= 400;
SELECT corpq.model_create('enc', '{"preset": "tiny", "kind": "encoder", "d_model": 64, "heads": 2,
                                   "ffn_dim": 128, "encoder_layers": 2, "max_positions": 40}', 'sv', 'sv', 7);
SQL
# the reference: a private session (sharing off in it)
q >/dev/null <<'SQL'
SET corpq.shared_model_cache_mb = 0;
CREATE TABLE v_priv AS SELECT id, corpq.embed('enc', s) AS e FROM sents;
CREATE TABLE t_priv AS SELECT p.id, t.* FROM pairs p, corpq.token_scores('sm', p.src || ' zz_unknown', p.tgt || ' yy_unknown') t
 WHERE p.id <= 300;
SQL
sv_size=$(q -c "SELECT size FROM corpq.vocabularies WHERE name = 'sv'")
r=$(q -c "SELECT tokens || ' ' || (bytes > 0) FROM corpq.shared_vocab_cache() WHERE vocabulary = 'sv'")
[ "$r" = "$sv_size true" ] || fail "sv's token table is not in the shared cache (sm was used since the restart): '$r'"
open_session 11 5
echo "BEGIN; DECLARE c11 CURSOR FOR SELECT id, corpq.embed('enc', s) FROM sents ORDER BY id;
FETCH 2 FROM c11; SELECT 'C11';" >&5
wait_out 11 "^C11"
[ "$(vattached sv)" = 1 ] || fail "session 11's open cursor does not hold sv's copy: $(vattached sv)"
open_session 12 6
echo "BEGIN; DECLARE c12 CURSOR FOR SELECT id, corpq.embed('enc', s) FROM sents ORDER BY id;
FETCH 2 FROM c12; SELECT 'C12';" >&6
wait_out 12 "^C12"
[ "$(vattached sv)" = 2 ] || fail "session 12 did not attach to sv's copy: attach count $(vattached sv)"
# session 12, holding the copy, encodes again (a second hold in the same backend)
echo "CREATE TABLE v_att AS SELECT id, corpq.embed('enc', s) AS e FROM sents;
CREATE TABLE t_att AS SELECT p.id, t.* FROM pairs p, corpq.token_scores('sm', p.src || ' zz_unknown', p.tgt || ' yy_unknown') t
 WHERE p.id <= 300;
COMMIT; SELECT 'D12';" >&6
wait_out 12 "^D12"
grep -q ERROR "$work/out.12" && fail "session 12: $(cat "$work/out.12")"
echo "COMMIT; SELECT 'D11';" >&5
wait_out 11 "^D11"
exec 5>&- 6>&-
wait_for "SELECT coalesce(max(attach_count), 0) FROM corpq.shared_vocab_cache() WHERE vocabulary = 'sv'" 0
[ "$(q -c "SELECT count(*) FROM v_priv a FULL JOIN v_att b USING (id)
            WHERE a.e IS NULL OR b.e IS NULL OR a.e::text <> b.e::text")" = 0 ] ||
	fail "embeddings with the attached token table differ from the private session's"
[ "$(q -c "SELECT count(*) FROM v_att WHERE e IS NOT NULL")" = 400 ] || fail "embeddings missing"
[ "$(q -c "SELECT count(*) FROM t_priv")" -gt 1000 ] || fail "too few token scores"
[ "$(q -c "SELECT count(*) FROM t_priv WHERE token IN ('<unk>', 'yy_unknown')")" -ge 300 ] || fail "no unknown tokens in the test"
[ "$(q -c "SELECT count(*) FROM (SELECT id, pos, token, float8send(logprob), pred_token, float8send(pred_prob),
                                         float8send(entropy) FROM t_priv
                                  EXCEPT ALL
                                  SELECT id, pos, token, float8send(logprob), pred_token, float8send(pred_prob),
                                         float8send(entropy) FROM t_att) d")" = 0 ] ||
	fail "token_scores with the attached token tables differ from the private session's"
[ "$(q -c "SELECT count(*) FROM t_att")" = "$(q -c "SELECT count(*) FROM t_priv")" ] || fail "token_scores rows differ"
log "vocab: two sessions held sv's one shared token table (attach count 2); 400 embeddings and $(q -c "SELECT count(*) FROM t_att") token scores equal a private session's bit for bit"

# a vocabulary dropped and imported again under its name, with other ids: never the old copy
q >/dev/null <<'SQL'
SELECT corpq.vocab_build('xv', 'SELECT s FROM sents');
SELECT corpq.model_create('xe', '{"preset": "tiny", "kind": "encoder", "d_model": 64, "heads": 2,
                                  "ffn_dim": 128, "encoder_layers": 2, "max_positions": 40}', 'xv', 'xv', 8);
CREATE TABLE x1 AS SELECT id, corpq.embed('xe', s) AS e FROM sents;
SQL
[ "$(q -c "SELECT count(*) FROM corpq.shared_vocab_cache() WHERE vocabulary = 'xv'")" = 1 ] || fail "xv not shared"
q >/dev/null <<'SQL'
CREATE TABLE xv_doc AS SELECT corpq.vocab_export('xv') AS d;
SELECT corpq.model_drop('xe');
SELECT corpq.vocab_drop('xv');
SELECT corpq.vocab_import('xv', jsonb_build_object('tokens',
         (SELECT jsonb_agg(t ORDER BY n > 4, CASE WHEN n <= 4 THEN n ELSE -n END)
            FROM jsonb_array_elements(d -> 'tokens') WITH ORDINALITY AS x(t, n))))
  FROM xv_doc;
SELECT corpq.model_create('xe', '{"preset": "tiny", "kind": "encoder", "d_model": 64, "heads": 2,
                                  "ffn_dim": 128, "encoder_layers": 2, "max_positions": 40}', 'xv', 'xv', 8);
CREATE TABLE x2 AS SELECT id, corpq.embed('xe', s) AS e FROM sents;
SET corpq.shared_model_cache_mb = 0;
CREATE TABLE x2_priv AS SELECT id, corpq.embed('xe', s) AS e FROM sents;
SQL
[ "$(q -c "SELECT count(*) FROM x2 a JOIN x2_priv b USING (id) WHERE a.e::text = b.e::text")" = 400 ] ||
	fail "the re-imported vocabulary does not encode as a private session does"
[ "$(q -c "SELECT count(*) FROM x1 a JOIN x2 b USING (id) WHERE a.e::text = b.e::text")" -lt 40 ] ||
	fail "the re-imported vocabulary encodes as the dropped one"
r=$(q -c "SELECT string_agg(tokens::text, ',') FROM corpq.shared_vocab_cache() WHERE vocabulary = 'xv'")
[ "$r" = "$(q -c "SELECT size FROM corpq.vocabularies WHERE name = 'xv'")" ] || fail "xv's shared copies: '$r' (the old one should be gone)"
log "vocab: a vocabulary dropped and imported again with other ids encodes with its new ids, the old copy gone"

# ---- WordPiece segmenters ----
# a vocab.txt: the specials, the pairs' words lower-cased and cut after 2
# letters (so words segment into a piece and a ##continuation) but those
# starting with digit $1, accented pieces, and $2 filler lines (about 60,000
# lines: a segmenter of about 3 MB)
wp_vocab() {
	q -c "SELECT string_agg(t, E'\n' ORDER BY o, t) FROM (
	        SELECT unnest(ARRAY['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'cafe', 'caf', '##e']) AS t, 0 AS o
	        UNION SELECT DISTINCT left(w, 2), 1 FROM pairs, regexp_split_to_table(src, ' ') w
	        UNION SELECT DISTINCT '##' || substr(w, 3), 1 FROM pairs, regexp_split_to_table(src, ' ') w
	                WHERE length(w) > 2 AND substr(w, 3) NOT LIKE '$1%'
	        UNION SELECT 'f' || g, 2 FROM generate_series(1, $2) g) v"
}
q >/dev/null <<SQL
SELECT corpq.wordpiece_import('wps', \$v\$$(wp_vocab 9 59800)\$v\$, '{"do_lower_case": true}');
CREATE TABLE wsents AS
SELECT id, upper(s) || CASE WHEN id % 5 = 0 THEN ' Café CAFÉ' ELSE '' END
                    || CASE WHEN id % 11 = 0 THEN ' ' || repeat('w1', 60) ELSE '' END AS s FROM sents;
SELECT corpq.vocab_build('wv', 'SELECT s FROM wsents', 'wps');
SELECT corpq.model_create('we', '{"preset": "tiny", "kind": "encoder", "d_model": 64, "heads": 2,
                                  "ffn_dim": 128, "encoder_layers": 2, "max_positions": 80}', 'wv', 'wv', 9);
SET corpq.shared_model_cache_mb = 0;
CREATE TABLE w_priv AS SELECT id, corpq.embed('we', s) AS e FROM wsents;
SQL
[ "$(q -c "SELECT count(*) FROM regexp_split_to_table(corpq.bpe_apply('wps', (SELECT s FROM wsents WHERE id = 11)), ' ') t WHERE t LIKE '##%'")" -gt 0 ] ||
	fail "the WordPiece test sentences have no continuation pieces"
[ "$(q -c "SELECT count(*) FROM wsents w, regexp_split_to_table(corpq.bpe_apply('wps', w.s), ' ') t WHERE t = '[UNK]'")" -gt 0 ] ||
	fail "the WordPiece test sentences have no unknown word"
wsize=$(q -c "SELECT n_merges FROM corpq.bpe_models WHERE name = 'wps'")
# over the budget (before any copy of it is shared): a private copy with a NOTICE, the same bits
r=$(psql -X -Atq -v ON_ERROR_STOP=1 2>&1 <<'SQL'
SET corpq.shared_model_cache_mb = 1;
CREATE TABLE w_over AS SELECT id, corpq.embed('we', s) AS e FROM wsents;
SQL
)
echo "$r" | grep -q 'NOTICE:  WordPiece segmenter "wps" is kept as a private copy in this backend: it takes [0-9]* MB, more than corpq.shared_model_cache_mb (1 MB)' ||
	fail "no NOTICE of a private segmenter over the budget: $r"
[ "$(q -c "SELECT count(*) FROM corpq.shared_vocab_cache() WHERE vocabulary = 'wps'")" = 0 ] ||
	fail "wps was shared over the budget"
# the first session loads the segmenter and copies it in
q -c "CREATE TABLE w_pub AS SELECT id, corpq.embed('we', s) AS e FROM wsents" >/dev/null
r=$(q -c "SELECT tokens || ' ' || (bytes > 1000000) || ' ' || attach_count FROM corpq.shared_vocab_cache()
           WHERE vocabulary = 'wps' AND kind = 'wordpiece'")
[ "$r" = "$wsize true 0" ] || fail "wps is not in the shared cache as a WordPiece segmenter: '$r'"
[ "$(q -c "SELECT kind FROM corpq.shared_vocab_cache() WHERE vocabulary = 'wv'")" = tokens ] ||
	fail "wv's token table is not listed as kind tokens"
wattached() { q -c "SELECT coalesce(max(attach_count), 0) FROM corpq.shared_vocab_cache() WHERE vocabulary = 'wps'"; }
open_session 21 5
echo "BEGIN; DECLARE c21 CURSOR FOR SELECT id, corpq.embed('we', s) FROM wsents ORDER BY id;
FETCH 2 FROM c21; SELECT 'C21';" >&5
wait_out 21 "^C21"
[ "$(wattached)" = 1 ] || fail "session 21's open cursor does not hold wps's copy: $(wattached)"
open_session 22 6
echo "BEGIN; DECLARE c22 CURSOR FOR SELECT id, corpq.embed('we', s) FROM wsents ORDER BY id;
FETCH 2 FROM c22; SELECT 'C22';" >&6
wait_out 22 "^C22"
[ "$(wattached)" = 2 ] || fail "session 22 did not attach to wps's copy: attach count $(wattached)"
echo "CREATE TABLE w_att AS SELECT id, corpq.embed('we', s) AS e FROM wsents;
COMMIT; SELECT 'D22';" >&6
wait_out 22 "^D22"
echo "COMMIT; SELECT 'D21';" >&5
wait_out 21 "^D21"
exec 5>&- 6>&-
grep -qE "ERROR|NOTICE" "$work/out.21" "$work/out.22" && fail "sessions 21/22: $(cat "$work/out.21" "$work/out.22")"
wait_for "SELECT coalesce(max(attach_count), 0) FROM corpq.shared_vocab_cache() WHERE vocabulary = 'wps'" 0
wsame() { q -c "SELECT count(*) FROM $1 a FULL JOIN $2 b USING (id)
                 WHERE a.e IS NULL OR b.e IS NULL OR a.e::text <> b.e::text"; }
[ "$(q -c "SELECT count(*) FROM w_priv WHERE e IS NOT NULL")" = 400 ] || fail "WordPiece embeddings missing"
[ "$(wsame w_priv w_pub)" = 0 ] || fail "embeddings of the publishing session differ from the private session's"
[ "$(wsame w_priv w_att)" = 0 ] || fail "embeddings with the attached segmenter differ from the private session's"
[ "$(wsame w_priv w_over)" = 0 ] || fail "the private segmenter over the budget embeds differently"
log "wordpiece: over the budget the segmenter stayed private with a NOTICE, same bits"
log "wordpiece: two sessions held wps's one shared segmenter ($wsize tokens, attach count 2); 400 embeddings equal a private session's bit for bit"

# dropped and imported again under its name with other pieces: never the old copy
q >/dev/null <<SQL
SELECT corpq.model_drop('we');
SELECT corpq.vocab_drop('wv');
SELECT corpq.bpe_drop('wps');
SELECT corpq.wordpiece_import('wps', \$v\$$(wp_vocab 1 59700)\$v\$, '{"do_lower_case": true}');
SELECT corpq.vocab_build('wv', 'SELECT s FROM wsents', 'wps');
SELECT corpq.model_create('we', '{"preset": "tiny", "kind": "encoder", "d_model": 64, "heads": 2,
                                  "ffn_dim": 128, "encoder_layers": 2, "max_positions": 80}', 'wv', 'wv', 9);
CREATE TABLE w2 AS SELECT id, corpq.embed('we', s) AS e FROM wsents;
SET corpq.shared_model_cache_mb = 0;
CREATE TABLE w2_priv AS SELECT id, corpq.embed('we', s) AS e FROM wsents;
SQL
wsize2=$(q -c "SELECT n_merges FROM corpq.bpe_models WHERE name = 'wps'")
[ "$wsize2" != "$wsize" ] || fail "the second vocab.txt has as many tokens as the first"
[ "$(wsame w2 w2_priv)" = 0 ] || fail "the re-imported segmenter does not segment as a private session's"
[ "$(q -c "SELECT count(*) FROM w_priv a JOIN w2 b USING (id) WHERE a.e::text = b.e::text")" -lt 40 ] ||
	fail "the re-imported segmenter segments as the dropped one"
r=$(q -c "SELECT string_agg(tokens::text, ',') FROM corpq.shared_vocab_cache() WHERE vocabulary = 'wps'")
[ "$r" = "$wsize2" ] || fail "wps's shared copies: '$r' (the old one should be gone)"
log "wordpiece: a segmenter dropped and imported again with other pieces segments with them, the old copy gone"

log "ok"
