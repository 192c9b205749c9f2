#!/usr/bin/env bash
# Report of issue 14 (docs/pipelines.md; figures in docs/benchmarks.md):
# what data rejuvenation and UncSamp self-training bring on the en-es corpora
# test/lib.sh finds (the shared corpora: bible, l10n, ddtp, and mono/en.txt).
#
# Data: per domain a fixed held-out split by md5(id): BENCH_TEST test pairs,
# BENCH_DEV dev pairs, the rest (at most BENCH_PAIRS per domain) to train;
# BPE (BENCH_MERGES merges per side) and vocabularies on the training pairs;
# BENCH_MONO lines of mono/en.txt.  Every model: preset BENCH_PRESET, the same
# budget of BENCH_STEPS updates (max_tokens BENCH_TOKENS), BENCH_THREADS
# threads, a checkpoint every BENCH_CHECKPOINT updates.
# Systems, each decoded on every test set with beam 5:
#   baseline             corpq.train() on the training pairs;
#   + rejuvenation       corpq.rejuvenate() with its defaults (synthetic-pair
#                        filters and quality gates on), the baseline as its
#                        identification model (the thesis trains that one on
#                        all the training pairs, as the baseline is);
#   + dual_xent filter   a model trained on the training pairs that
#                        corpq.dual_xent_scores() ranks above the rejuvenation
#                        ratio (the lowest 10% dropped), the baseline as the
#                        forward model and an es-en model trained on the same
#                        pairs as the backward one;
#   + UncSamp            corpq.self_train(), teacher = baseline, k = BENCH_K;
#   + random sampling    the same with "sampling": "random".
# Reports: test BLEU and chrF per domain and macro-averaged, with the
# paired-bootstrap p-value of each system against the baseline (corpq.
# paired_bootstrap, 1000 resamples); hypothesis lengths and cut hypotheses
# (finished false) per system and domain; the pipelines' quality gates (dev
# BLEU of the rejuvenator and the teacher, and of every final model against
# its baseline) and synthetic pairs dropped per filter; the mechanism
# figures: overlap of the inactive sets of two identification models with
# different seeds (per probability bin of the first), the inactive share per
# domain, the teacher's BLEU per source-uncertainty bin (quintiles of the
# test sources) and where the UncSamp and random samples fall in those bins;
# the pipelines' stage times against the baseline's training time (thesis
# Table 5.7) and the share of pipeline time outside the train/translate
# sub-jobs.  A section whose systems are not there yet is left out, so that
# BENCH_REPORT=1 prints what a sitting has so far.
# Asserts nothing on time or quality.
#
# A real run takes hours, so it can span several sittings: with BENCH_DIR set
# the cluster lives in that directory (created on first use, corpq preloaded
# so that the recovery worker requeues an interrupted job) instead of a
# throw-away one.  Every step is recorded in the table bench_steps when it
# ends (a job step when it is submitted, in the same statement), so running
# the script again skips the finished steps and waits for the recorded jobs,
# which resume from their last checkpoint.  Interrupting the script stops
# the server at once (pg_ctl -m immediate, as a crash would); BENCH_DIR's
# server is stopped when the script ends; BENCH_UNTIL=STEP ends a sitting
# at a step boundary (see until_step).  Start again with the same variables;
# delete BENCH_DIR to start over.
#
# The tiny run (proves the script, not the methods; about a minute):
#   BENCH_PRESET=tiny BENCH_STEPS=30 BENCH_PAIRS=300 BENCH_TEST=40 BENCH_DEV=40 \
#   BENCH_MONO=2000 BENCH_K=100 BENCH_MERGES=500 bash test/bench/bench_pipeline.sh
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
server_opts=(-o max_worker_processes=16 -o shared_buffers=512MB -o max_wal_size=4GB)
preset=${BENCH_PRESET:-small}
steps=${BENCH_STEPS:-6000}
tokens=${BENCH_TOKENS:-4096}
npairs=${BENCH_PAIRS:-1000000}
ntest=${BENCH_TEST:-500}
ndev=${BENCH_DEV:-300}
nmono=${BENCH_MONO:-100000}
k=${BENCH_K:-20000}
merges=${BENCH_MERGES:-8000}
threads=${BENCH_THREADS:-1}
ckpt=${BENCH_CHECKPOINT:-100}
[ "$ckpt" -le "$steps" ] || ckpt=$steps
# Every model trains at one peak rate, BENCH_LR, by default the one the
# report's first run used (1 / sqrt(4000 d_model), the default before short
# runs got up to twice it), so that its figures compare across sittings and
# versions.
d_model=$(sed -n 's/.*"d_model": *\([0-9]*\).*/\1/p' "$CORPQ_ROOT/models/$preset.json")
lr=${BENCH_LR:-$(awk -v d="$d_model" 'BEGIN { printf "%.10g", 1 / sqrt(4000 * d) }')}
t0=$(date +%s)
say() { echo "bench_pipeline: $*"; }

# BENCH_DIR's cluster: initdb on first use, start, and stop when the script
# ends (at once when interrupted, so that the jobs resume as after a crash).
bench_as=()
bench_pg_ctl() { "${bench_as[@]}" "$(pg_config --bindir)/pg_ctl" -D "$BENCH_DIR/data" "$@"; }
bench_cluster_up() {
	local dir=$BENCH_DIR o
	mkdir -p "$dir"
	if [ "$(id -u)" = 0 ]; then
		chown postgres: "$dir"
		bench_as=(runuser -u postgres --)
	fi
	if [ ! -f "$dir/data/PG_VERSION" ]; then
		"${bench_as[@]}" "$(pg_config --bindir)/initdb" -A trust -U postgres -D "$dir/data" >/dev/null
		for o in "${server_opts[@]}"; do
			[ "$o" = -o ] || echo "$o" >>"$dir/data/postgresql.conf"
		done
		cat >>"$dir/data/postgresql.conf" <<CONF
shared_preload_libraries = 'corpq'
listen_addresses = ''
unix_socket_directories = '$dir'
port = 5499
CONF
	fi
	export PGHOST=$dir PGPORT=5499 PGUSER=postgres PGDATABASE=postgres
	bench_pg_ctl status >/dev/null 2>&1 || bench_pg_ctl -l "$dir/server.log" -w start >/dev/null
	trap 'bench_pg_ctl -m immediate stop >/dev/null 2>&1 || true; exit 130' INT TERM
	trap 'bench_pg_ctl -m fast stop >/dev/null 2>&1 || true' EXIT
	say "cluster in $dir (resumable)"
}
if [ -n "${BENCH_DIR:-}" ]; then
	bench_cluster_up
else
	corpq_in_cluster "${server_opts[@]}" -- "$@"
fi

# BENCH_UNTIL=NAME ends the sitting once step NAME is done (the server stops
# with no job running: baseline, rejuvenation, dual_xent, lexicon, st_random,
# st_uncsamp, ident2).  BENCH_REPORT=1 submits nothing and prints the report
# of the systems finished so far.
until_step() {
	[ "${BENCH_UNTIL:-}" = "$1" ] || return 0
	say "stopping after step $1 (BENCH_UNTIL) at $(( $(date +%s) - t0 )) s; run again to go on"
	exit 0
}
# A step runs once: done NAME tells whether it ended; mark NAME records it.
done_step() { [ -n "$(q -c "SELECT 1 FROM bench_steps WHERE name = '$1'")" ]; }
mark() { q -c "INSERT INTO bench_steps VALUES ('$1', NULL)"; }
wait_job() {
	local st
	st=$(q -c "SELECT corpq.job_wait($1, '100 hours')")
	[ "$st" = succeeded ] || { say "job $1 $st: $(q -c "SELECT error FROM corpq.jobs WHERE id = $1")"; exit 1; }
}
# job NAME SQL: submit the job SQL returns, recording its id in the same
# statement, unless NAME's job is recorded already; then wait for it.  A
# recorded job that failed or was cancelled is submitted again (a pipeline
# then resumes at its failed stage, once the cause is fixed).
job() {
	local id st
	id=$(q -c "SELECT job FROM bench_steps WHERE name = '$1'")
	if [ -z "$id" ]; then
		id=$(q -c "INSERT INTO bench_steps SELECT '$1', ($2) RETURNING job")
	else
		st=$(q -c "SELECT state FROM corpq.jobs WHERE id = $id")
		if [ "$st" = failed ] || [ "$st" = cancelled ]; then
			say "step $1: job $id $st ($(q -c "SELECT error FROM corpq.jobs WHERE id = $id")); submitting it again"
			id=$(q -c "UPDATE bench_steps SET job = ($2) WHERE name = '$1' RETURNING job")
		fi
	fi
	wait_job "$id"
}
job_id() { q -c "SELECT job FROM bench_steps WHERE name = '$1'"; }

say "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); preset $preset, $steps updates of $tokens tokens at peak lr $lr, $threads thread(s)"
if [ -z "$(q -c "SELECT to_regclass('bench_steps')")" ]; then
	q -1 >/dev/null <<SQL
CREATE EXTENSION corpq;
CREATE TABLE raw (id text, domain text, src text, tgt text);
$(corpq_copy_parallel raw)
CREATE TABLE pairs AS
SELECT row_number() OVER (ORDER BY id)::bigint AS id, domain, src, tgt, r
  FROM (SELECT id, split_part(domain, '/', 1) AS domain, src, tgt,
               row_number() OVER (PARTITION BY split_part(domain, '/', 1) ORDER BY md5(id)) AS r
          FROM raw
         WHERE array_length(regexp_split_to_array(src, '\s+'), 1) <= 80
           AND array_length(regexp_split_to_array(tgt, '\s+'), 1) <= 80) s
 WHERE r <= $ntest + $ndev + $npairs;
CREATE VIEW test_set AS SELECT id, domain, src, tgt FROM pairs WHERE r <= $ntest;
CREATE VIEW dev_set AS SELECT src, tgt FROM pairs WHERE r > $ntest AND r <= $ntest + $ndev;
CREATE VIEW train_set AS SELECT id, src, tgt FROM pairs WHERE r > $ntest + $ndev;
CREATE TABLE mono_line (line text);
\copy mono_line FROM '$CORPQ_CORPORA/mono/en.txt' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\b')
CREATE TABLE mono AS SELECT row_number() OVER ()::bigint AS id, line AS src FROM (SELECT line FROM mono_line LIMIT $nmono) l;
SELECT corpq.bpe_learn('pb_en', 'SELECT src FROM train_set', $merges);
SELECT corpq.bpe_learn('pb_es', 'SELECT tgt FROM train_set', $merges);
SELECT corpq.vocab_build('pv_en', 'SELECT src FROM train_set', 'pb_en');
SELECT corpq.vocab_build('pv_es', 'SELECT tgt FROM train_set', 'pb_es');
CREATE TABLE hyps (system text, id bigint, hyp text, score float8, finished boolean);
CREATE TABLE bench_steps (name text PRIMARY KEY, job bigint);
SQL
	say "data, BPE and vocabularies in $(( $(date +%s) - t0 )) s"
fi
# (a cluster set up before translation outputs had finished)
q -c "SET client_min_messages = warning; ALTER TABLE hyps ADD COLUMN IF NOT EXISTS finished boolean"
say "pairs per domain (train / dev / test), mono:"
q -c "SELECT domain, count(*) FILTER (WHERE r > $ntest + $ndev), count(*) FILTER (WHERE r > $ntest AND r <= $ntest + $ndev),
             count(*) FILTER (WHERE r <= $ntest) FROM pairs GROUP BY 1 ORDER BY 1"
q -c "SELECT 'mono', count(*) FROM mono"

model="{\"preset\": \"$preset\", \"max_positions\": 256}"
train="{\"steps\": $steps, \"lr\": $lr, \"max_tokens\": $tokens, \"seed\": 1, \"threads\": $threads, \"checkpoint_every\": $ckpt, \"validate_every\": $steps}"
translate="{\"threads\": $threads, \"batch\": 32}"
common="{\"model\": $model, \"train\": $train, \"translate\": $translate, \"src_vocab\": \"pv_en\", \"tgt_vocab\": \"pv_es\"}"

# decode NAME MODEL: the system's beam-5 translations of every test set into hyps
decode() {
	q -c "SET client_min_messages = warning; CREATE TABLE IF NOT EXISTS hyp_$1 (id bigint, hyp text, score float8, finished boolean)"
	job "decode_$1" "SELECT corpq.translate_job('$2', 'SELECT id, src FROM test_set ORDER BY id', 'hyp_$1', '{\"beam\": 5, \"threads\": $threads}')"
	if ! done_step "hyps_$1"; then
		q -1 -c "INSERT INTO hyps SELECT '$1', id, hyp, score, finished FROM hyp_$1; INSERT INTO bench_steps VALUES ('hyps_$1', NULL)"
	fi
}

# ---- the steps, in the order of their weight in the report (a sitting may end after any) ----
run_steps() {
# the baseline, and its test BLEU at once (is the budget large enough?)
done_step model_base || { q -c "SELECT corpq.model_create('base', '$model', 'pv_en', 'pv_es', 1)" >/dev/null; mark model_base; }
job baseline "SELECT corpq.train('base', 'SELECT src, tgt FROM train_set ORDER BY id', 'SELECT src, tgt FROM dev_set', '$train')"
say "baseline trained at $(( $(date +%s) - t0 )) s"
decode baseline base
say "baseline test BLEU / chrF, all domains pooled: $(q -c "SELECT round(corpq.bleu(h.hyp, s.tgt)::numeric, 2) || ' / ' || round(corpq.chrf(h.hyp, s.tgt)::numeric, 2)
                                                    FROM test_set s JOIN hyps h USING (id) WHERE h.system = 'baseline'")"
until_step baseline

# rejuvenation with its defaults (filters, gates), the baseline as identifier
job rejuvenation "SELECT corpq.rejuvenate('SELECT id, src, tgt FROM train_set', 'SELECT src, tgt FROM dev_set',
                                          '$common'::jsonb || '{\"name\": \"rj\", \"identifier\": \"base\"}')"
say "rejuvenation done at $(( $(date +%s) - t0 )) s"
decode rejuvenation rj_final
until_step rejuvenation

# dual conditional cross-entropy: a backward (es-en) model on the same pairs,
# every training pair scored, the lowest 10% (the rejuvenation ratio) dropped
done_step model_bwd || { q -c "SELECT corpq.model_create('bwd', '$model', 'pv_es', 'pv_en', 3)" >/dev/null; mark model_bwd; }
job bwd "SELECT corpq.train('bwd', 'SELECT tgt, src FROM train_set ORDER BY id', 'SELECT tgt, src FROM dev_set', '$train')"
if ! done_step dx_scores; then
	q -1 >/dev/null <<SQL
CREATE TABLE dx AS
SELECT id, score, row_number() OVER (ORDER BY score, id) <= round(0.1 * count(*) OVER ()) AS dropped
  FROM corpq.dual_xent_scores('base', 'bwd', 'SELECT id, src, tgt FROM train_set');
INSERT INTO bench_steps VALUES ('dx_scores', NULL);
SQL
fi
say "dual_xent: backward model trained and training pairs scored at $(( $(date +%s) - t0 )) s"
done_step model_dx || { q -c "SELECT corpq.model_create('dx', '$model', 'pv_en', 'pv_es', 1)" >/dev/null; mark model_dx; }
job dual_xent "SELECT corpq.train('dx', 'SELECT t.src, t.tgt FROM train_set t JOIN dx USING (id) WHERE NOT dx.dropped ORDER BY t.id',
                                  'SELECT src, tgt FROM dev_set', '$train')"
decode dual_xent dx
until_step dual_xent

# the two self-trainings from the baseline
job lexicon "SELECT corpq.lexicon_train('plex', 'SELECT src, tgt FROM train_set')"
until_step lexicon
for s in random uncsamp; do
	job "st_$s" "SELECT corpq.self_train('base', 'plex', 'SELECT src, tgt FROM train_set', 'SELECT id, src FROM mono',
	                                     '$common'::jsonb || '{\"name\": \"st_$s\", \"k\": $k, \"sampling\": \"$s\",
	                                                           \"dev\": \"SELECT src, tgt FROM dev_set\"}')"
	say "self-training ($s) done at $(( $(date +%s) - t0 )) s"
	decode "$s" "st_${s}_student"
	until_step "st_$s"
done

# a second identification model (seed 2) for the overlap: stages 1 and 2 by hand
done_step model_ident2 || { q -c "SELECT corpq.model_create('ident2', '$model', 'pv_en', 'pv_es', 2)" >/dev/null; mark model_ident2; }
job ident2 "SELECT corpq.train('ident2', 'SELECT src, tgt FROM train_set', 'SELECT src, tgt FROM dev_set', '$train'::jsonb || '{\"seed\": 2}')"
if ! done_step ident2_scores; then
	q -1 >/dev/null <<SQL
CREATE TABLE ident2 AS
SELECT s.id, s.score AS prob, row_number() OVER (ORDER BY s.score, s.id) <= round(0.1 * count(*) OVER ()) AS inactive
  FROM corpq.score('ident2', 'SELECT id, src, tgt FROM train_set', 'sent_prob') s;
INSERT INTO bench_steps VALUES ('ident2_scores', NULL);
SQL
fi
say "second identification model trained and scored at $(( $(date +%s) - t0 )) s"
until_step ident2
}
if [ -n "${BENCH_REPORT:-}" ]; then
	say "BENCH_REPORT: the report of the systems finished so far ($(q -c "SELECT string_agg(DISTINCT system, ', ') FROM hyps"))"
else
	run_steps
fi
# have TABLE...: every table exists (a report section needs them)
have() {
	local t
	for t in "$@"; do
		[ "$(q -c "SELECT to_regclass('$t') IS NOT NULL")" = t ] || return 1
	done
}

echo; say "test BLEU / chrF per domain (sacreBLEU defaults), p = paired bootstrap against the baseline (1000 resamples, seed 1):"
q -F ' | ' <<'SQL'
WITH t AS (
  SELECT s.domain, h.system, h.hyp, b.hyp AS base_hyp, s.tgt
    FROM test_set s JOIN hyps h USING (id) JOIN hyps b ON b.id = s.id AND b.system = 'baseline')
SELECT domain, system, round(corpq.bleu(hyp, tgt)::numeric, 2) AS bleu, round(corpq.chrf(hyp, tgt)::numeric, 2) AS chrf,
       CASE WHEN system <> 'baseline'
            THEN round(((corpq.paired_bootstrap(base_hyp, hyp, tgt, 1000, 1)).p_value)::numeric, 4) END AS p_bleu,
       CASE WHEN system <> 'baseline'
            THEN round(((corpq.paired_bootstrap(base_hyp, hyp, tgt, 1000, 1, '{"metric": "chrf"}')).p_value)::numeric, 4) END AS p_chrf
  FROM t GROUP BY domain, system ORDER BY domain, system;
SQL
echo; say "macro average over the domains:"
q -F ' | ' <<'SQL'
SELECT system, round(avg(bleu)::numeric, 2) AS bleu, round(avg(chrf)::numeric, 2) AS chrf
  FROM (SELECT s.domain, h.system, corpq.bleu(h.hyp, s.tgt) AS bleu, corpq.chrf(h.hyp, s.tgt) AS chrf
          FROM test_set s JOIN hyps h USING (id) GROUP BY 1, 2) d
 GROUP BY system ORDER BY system;
SQL

echo; say "lengths: mean words of the hypotheses and of the references, hypotheses of 100 words or more, and cut ones (finished false:"
say "the search reached the length limit without </s>), per domain and system:"
q -F ' | ' <<'SQL'
SELECT s.domain, h.system,
       round(avg(array_length(regexp_split_to_array(btrim(h.hyp), '\s+'), 1))::numeric, 1) AS hyp_words,
       round(avg(array_length(regexp_split_to_array(btrim(s.tgt), '\s+'), 1))::numeric, 1) AS ref_words,
       count(*) FILTER (WHERE array_length(regexp_split_to_array(btrim(h.hyp), '\s+'), 1) >= 100) AS over_100,
       count(*) FILTER (WHERE NOT h.finished) AS cut
  FROM test_set s JOIN hyps h USING (id) GROUP BY 1, 2 ORDER BY 1, 2;
SQL
echo; say "the pipelines' quality gates (dev BLEU before a model translates, and of each final model against its baseline) and"
say "synthetic pairs dropped per filter (a pair may count under several):"
q -F ' | ' <<'SQL'
SELECT pipeline, stage, name,
       round((output->>'dev_bleu')::numeric, 2) AS dev_bleu, round((output->>'baseline_bleu')::numeric, 2) AS baseline_bleu,
       round((output->>'bleu_change')::numeric, 2) AS change, round((output->>'p_value')::numeric, 4) AS p,
       output->>'kept' AS kept, output->>'dropped' AS dropped, output->>'dropped_cut' AS cut,
       output->>'dropped_long' AS long, output->>'dropped_ratio' AS ratio,
       output->>'dropped_repetition' AS repetition, output->>'dropped_score' AS score,
       output->>'cut' AS cut_dev, output->>'baseline_cut' AS base_cut_dev,
       round((output->>'words')::numeric, 1) AS words_dev, round((output->>'baseline_words')::numeric, 1) AS base_words_dev,
       output->>'untranslated' AS untranslated, coalesce(output->>'warning', output->>'gate') AS warning
  FROM corpq.pipeline_stages
 WHERE output ?| array['dev_bleu', 'dropped', 'gate', 'warning'] ORDER BY pipeline, stage;
SQL
if have dx; then
	echo; say "dual_xent: the dropped 10% per domain (score = exp(-(|H_fwd - H_bwd| + (H_fwd + H_bwd) / 2)), H per token):"
	q -F ' | ' <<'SQL'
SELECT p.domain, count(*) AS pairs, count(*) FILTER (WHERE dx.dropped) AS dropped,
       round((100.0 * count(*) FILTER (WHERE dx.dropped) / count(*))::numeric, 1) AS dropped_pct,
       round(max(dx.score) FILTER (WHERE dx.dropped)::numeric, 4) AS threshold,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY dx.score)::numeric, 4) AS median_score
  FROM dx JOIN pairs p USING (id) GROUP BY 1 ORDER BY 1;
SQL
fi

if have rj_pairs ident2; then
echo; say "mechanism: overlap of identification models with seeds 1 and 2 per data bin (the thesis's Figure 5.4: 10 equal bins"
say "by probability rank; the share of the seed-1 model's bin that the seed-2 model puts in the same bin; bin 1 = the inactive 10%):"
q -F ' | ' <<'SQL'
CREATE TEMP TABLE ranks AS
SELECT p.id, p.prob AS p1, i.prob AS p2, p.inactive AS in1, i.inactive AS in2,
       ntile(10) OVER (ORDER BY p.prob, p.id) AS b1, row_number() OVER (ORDER BY p.prob, p.id) AS r1
  FROM rj_pairs p JOIN ident2 i USING (id) WHERE p.prob IS NOT NULL AND i.prob IS NOT NULL;
CREATE TEMP TABLE ranks2 AS
SELECT id, ntile(10) OVER (ORDER BY p2, id) AS b2, row_number() OVER (ORDER BY p2, id) AS r2 FROM ranks;
SELECT b1 AS bin, count(*) AS pairs, round(avg(p1)::numeric, 4) AS mean_prob,
       round((100.0 * count(*) FILTER (WHERE b1 = b2) / count(*))::numeric, 1) AS overlap_pct
  FROM ranks JOIN ranks2 USING (id) GROUP BY 1 ORDER BY 1;
SELECT round((100.0 * count(*) FILTER (WHERE in1 AND in2) / count(*) FILTER (WHERE in1))::numeric, 1) AS inactive_overlap_pct,
       round(corr(p1, p2)::numeric, 3) AS prob_correlation, round(corr(r1, r2)::numeric, 3) AS rank_correlation
  FROM ranks JOIN ranks2 USING (id);
SQL
fi
if have rj_pairs; then
echo; say "mechanism: inactive share per domain:"
q -F ' | ' -c "SELECT d.domain, count(*) AS pairs, round((100.0 * count(*) FILTER (WHERE p.inactive) / count(*))::numeric, 1) AS inactive_pct
                 FROM rj_pairs p JOIN pairs d USING (id) GROUP BY 1 ORDER BY 1"
fi
if have st_uncsamp_sample st_random_sample; then
echo; say "mechanism: the teacher's (baseline's) test BLEU per source-uncertainty quintile, and the samples' shares of those bins:"
q -F ' | ' <<'SQL'
CREATE TEMP TABLE ubins AS
SELECT id, u, ntile(5) OVER (ORDER BY u, id) AS bin
  FROM (SELECT id, corpq.mono_uncertainty('plex', src) AS u FROM test_set) t WHERE u IS NOT NULL;
CREATE TEMP TABLE edges AS SELECT bin, min(u) AS lo, max(u) AS hi FROM ubins GROUP BY bin;
SELECT e.bin, round(e.lo::numeric, 3) AS u_from, round(e.hi::numeric, 3) AS u_to,
       round(corpq.bleu(h.hyp, s.tgt)::numeric, 2) AS teacher_bleu,
       (SELECT round((100.0 * count(*) FILTER (WHERE (e.bin = 1 OR u >= e.lo) AND (u < n.lo OR n.lo IS NULL))
                      / count(*))::numeric, 1) FROM st_uncsamp_sample) AS uncsamp_pct,
       (SELECT round((100.0 * count(*) FILTER (WHERE (e.bin = 1 OR u >= e.lo) AND (u < n.lo OR n.lo IS NULL))
                      / count(*))::numeric, 1) FROM st_random_sample) AS random_pct
  FROM edges e LEFT JOIN edges n ON n.bin = e.bin + 1
  JOIN ubins b ON b.bin = e.bin JOIN test_set s ON s.id = b.id JOIN hyps h ON h.id = s.id AND h.system = 'baseline'
 GROUP BY e.bin, e.lo, e.hi, n.lo ORDER BY e.bin;
-- every system per quintile (the thesis's Table 6.5 groups by the same uncertainty)
SELECT b.bin,
       round((corpq.bleu(h.hyp, s.tgt) FILTER (WHERE h.system = 'baseline'))::numeric, 2) AS baseline,
       round((corpq.bleu(h.hyp, s.tgt) FILTER (WHERE h.system = 'random'))::numeric, 2) AS random,
       round((corpq.bleu(h.hyp, s.tgt) FILTER (WHERE h.system = 'uncsamp'))::numeric, 2) AS uncsamp,
       round((corpq.bleu(h.hyp, s.tgt) FILTER (WHERE h.system = 'rejuvenation'))::numeric, 2) AS rejuvenation,
       round((corpq.bleu(h.hyp, s.tgt) FILTER (WHERE h.system = 'dual_xent'))::numeric, 2) AS dual_xent
  FROM ubins b JOIN test_set s ON s.id = b.id JOIN hyps h ON h.id = s.id GROUP BY 1 ORDER BY 1;
SQL

fi

# A stage's wall time runs from the previous stage's end (the job's start for
# stage 1) to its own: stages run one after another in the pipeline's worker.
# (Rows written before the stage-start fix had started = finished for stages
# without a sub-job, so their own started column cannot be trusted.)
q -c "CREATE OR REPLACE VIEW stage_walls AS
      SELECT st.pipeline, st.stage, st.name, st.subjob,
             extract(epoch FROM st.finished - least(st.started, coalesce(lag(st.finished) OVER w, pj.started))) AS wall
        FROM corpq.pipeline_stages st JOIN corpq.jobs pj ON pj.id = st.job
      WINDOW w AS (PARTITION BY st.pipeline ORDER BY st.stage)" >/dev/null
echo; say "time: each stage (wall) and its sub-job, against the baseline's training (thesis Table 5.7 proportions);"
say "a job's time covers its last attempt only (attempts > 1: it resumed after an interruption, and its stage's wall time spans the gap):"
q -F ' | ' <<'SQL'
WITH base AS (SELECT extract(epoch FROM finished - started) AS s FROM corpq.jobs WHERE id = (SELECT job FROM bench_steps WHERE name = 'baseline'))
SELECT st.pipeline, st.stage, st.name, round(st.wall::numeric, 1) AS stage_s,
       round(extract(epoch FROM j.finished - j.started)::numeric, 1) AS subjob_s,
       round((st.wall / (SELECT s FROM base))::numeric, 3) AS x_baseline_training,
       j.attempts AS subjob_attempts
  FROM stage_walls st LEFT JOIN corpq.jobs j ON j.id = st.subjob
 ORDER BY st.pipeline, st.stage;
SQL
echo; say "time: every training (training_seconds counts the updates of every attempt, so s/update and minutes exclude any gap):"
q -F ' | ' <<'SQL'
SELECT j.args->>'model' AS model, j.attempts, (j.result->>'steps')::int AS steps,
       coalesce((j.result->>'resumed_from_step')::int, 0) AS resumed_from,
       round((j.result->>'training_seconds')::numeric, 1) AS training_s,
       round(((j.result->>'training_seconds')::numeric / (j.result->>'steps')::int), 3) AS s_per_update,
       round(((j.result->>'training_seconds')::numeric / 60), 1) AS minutes,
       (j.result->>'trained_pairs')::bigint AS pairs, round((j.result->>'epochs')::numeric, 2) AS epochs,
       round((j.result#>>'{dev,final_ppl}')::numeric, 1) AS dev_ppl
  FROM corpq.jobs j WHERE j.kind = 'train' AND j.state = 'succeeded' ORDER BY j.id;
SQL
echo; say "glue: each pipeline's wall time outside its model work (the train/translate sub-jobs, and the stages that score or"
say "compute uncertainties in the worker: identification without a sub-job, U_max, sample), as a share of that model work:"
q -F ' | ' <<'SQL'
WITH s AS (
  SELECT st.pipeline, st.name, st.wall, extract(epoch FROM j.finished - j.started) AS sub, j.attempts
    FROM stage_walls st LEFT JOIN corpq.jobs j ON j.id = st.subjob),
m AS (
  SELECT p.name, extract(epoch FROM pj.finished - pj.started) AS pipeline_s, pj.attempts,
         sum(coalesce(s.sub, 0)) AS subjobs_s,
         sum(CASE WHEN s.sub IS NULL AND s.name IN ('identification', 'U_max', 'sample') THEN s.wall ELSE 0 END) AS in_worker_s,
         max(s.attempts) AS subjob_attempts
    FROM corpq.pipelines p JOIN corpq.jobs pj ON pj.id = p.job JOIN s ON s.pipeline = p.name
   GROUP BY p.name, pj.finished, pj.started, pj.attempts)
SELECT name, round(pipeline_s::numeric, 1) AS pipeline_s, round(subjobs_s::numeric, 1) AS subjobs_s,
       round(in_worker_s::numeric, 1) AS in_worker_model_s,
       round((pipeline_s - subjobs_s - in_worker_s)::numeric, 1) AS glue_s,
       round((100 * (pipeline_s - subjobs_s - in_worker_s) / (subjobs_s + in_worker_s))::numeric, 2) AS glue_pct,
       attempts AS pipeline_attempts, subjob_attempts
  FROM m ORDER BY name;
SQL
say "total $(( $(date +%s) - t0 )) s"
