#!/usr/bin/env bash
# Minutes to a useful model: corpq.train() with default options and only a
# time budget, against PyTorch with fairseq's recipe for the same wall time on
# the same token ids.
#
# Data: the en-es corpora test/lib.sh finds (../shared/corpora: bible, ddtp,
# l10n; skipped without a bible domain), pairs of at most 50 words
# a side, split per domain by md5(id): BENCH_TEST_PAIRS held-out test pairs,
# BENCH_DEV_PAIRS dev pairs, the rest trains.  BPE (7500 merges a side) and
# vocabularies (8000) are learned once on the training pairs of all domains.
# Training sets: "bible" (the Bible alone) and "all" (the three domains).
#
# For every training set in BENCH_DATA and preset in BENCH_PRESETS:
#   corpq   model_create(preset, seed 1), corpq.train(model, train, dev,
#           {"max_seconds": 60 * BENCH_MINUTES, "keep_checkpoints": 1000}
#           + BENCH_OPTS); keep_checkpoints only keeps every checkpoint
#           version for scoring afterwards, it changes nothing in training.
#           Every checkpoint (default: each tenth of the expected updates) is
#           an evaluation point.
#   torch   the same architecture and initial weights (version 1, exported)
#           trained by test/bench/time_to_useful_torch.py for the same wall
#           time: fairseq's recipe (inverse-sqrt with the same warm-up rule
#           from its own measured update rate, Adam betas/eps, weight decay,
#           label smoothing and dropout of corpq's defaults, the same batches
#           of the same token ids, exported with corpq.vocab_encode), saving
#           weights at each tenth of the budget; they are imported as
#           versions of another model and scored by the same SQL.
# At each evaluation point, on the held-out test pairs: perplexity (from
# sent_logprob, </s> included) and the ROC AUC of sent_prob for true pairs
# against the same sources with the next test pair's target (same domain),
# on the Bible and, for "all", on all domains.  Minutes to AUC 0.9 and 0.95
# are interpolated linearly between evaluation points (training seconds:
# corpq's counts validation and checkpoints; torch's leaves out its saves);
# the ratio is torch's minutes over corpq's.
#
# Parameters (environment):
#   BENCH_MINUTES    time budget of every run (30)
#   BENCH_PRESETS    presets ("tiny small")
#   BENCH_DATA       training sets ("bible all")
#   BENCH_TORCH      1: also the PyTorch reference (1)
#   BENCH_INT8       1: also the last checkpoint of the first variant against
#                    its int8 variants (model_quantize: 8- and 7-bit codes,
#                    and 8-bit with float32 token embeddings): AUC,
#                    perplexity, mean |dlog p| against float32, BLEU / chrF
#                    of Bible test translations (1)
#   BENCH_OPTS       extra corpq.train() options as JSON members, e.g.
#                    '"steps": 1000, "lr": 0.001' (none: the defaults); several
#                    variants separated by ';' train one after the other as
#                    systems "corpq {...}" (torch follows the first variant)
#   BENCH_TEST_PAIRS, BENCH_DEV_PAIRS   per domain (300, 200)
#   BENCH_OUT        directory for exports and torch checkpoints (a temp dir)
# Asserts nothing on time.  Prints the CPU, the OpenBLAS core and the load.
# Usage: bench_time_to_useful.sh
set -euo pipefail
shopt -s inherit_errexit
. "$(dirname "$0")/../lib.sh"
. test/bench/bench_lib.sh
here="$CORPQ_ROOT/test/bench"
corpq_corpora
[ -n "${CORPQ_IN_CLUSTER:-}" ] || make -s test/libcorpqcore.so
corpq_in_cluster -o max_worker_processes=16 -o shared_buffers=256MB -o max_wal_size=4GB ${BENCH_PG_OPTS:-} -- "$@"
minutes=${BENCH_MINUTES:-30}
presets=${BENCH_PRESETS:-tiny small}
datas=${BENCH_DATA:-bible all}
torch=${BENCH_TORCH:-1}
extra=${BENCH_OPTS:-}
test_pairs=${BENCH_TEST_PAIRS:-300}
dev_pairs=${BENCH_DEV_PAIRS:-200}
out=${BENCH_OUT:-$(mktemp -d)}
mkdir -p "$out"
say() { log "$@"; }
t0=$(date +%s)

say "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores," \
	"OpenBLAS core: ${OPENBLAS_CORETYPE:-default ($(/usr/bin/python3 -c 'import ctypes; l = ctypes.CDLL("libopenblas.so.0"); l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())'))}," \
	"load: $(cut -d' ' -f1-3 /proc/loadavg)"
say "budget $minutes min per run, presets: $presets, training sets: $datas, torch: $torch, extra options: {${extra}}"

q >/dev/null <<SQL
$(ranked_pairs_sql 50)
CREATE TABLE test_set AS SELECT id, domain, src, tgt, r FROM pairs WHERE r <= $test_pairs;
CREATE TABLE dev_set AS SELECT id, domain, src, tgt FROM pairs WHERE r > $test_pairs AND r <= $test_pairs + $dev_pairs;
CREATE TABLE train_set AS SELECT id, domain, src, tgt FROM pairs WHERE r > $test_pairs + $dev_pairs;
SELECT corpq.bpe_learn('b_en', 'SELECT src FROM train_set', 7500);
SELECT corpq.bpe_learn('b_es', 'SELECT tgt FROM train_set', 7500);
SELECT corpq.vocab_build('v_en', 'SELECT src FROM train_set', 'b_en', 8000);
SELECT corpq.vocab_build('v_es', 'SELECT tgt FROM train_set', 'b_es', 8000);
-- test pairs with their negatives (the next test pair's target, same domain)
-- and target token counts (</s> included), scored per model version
CREATE TABLE test_pairs AS
SELECT t.domain, t.src, t.tgt, u.tgt AS other, array_length(corpq.vocab_encode('v_es', t.tgt), 1) + 1 AS n
  FROM test_set t JOIN test_set u ON u.domain = t.domain AND u.r = CASE WHEN t.r = $test_pairs THEN 1 ELSE t.r + 1 END;
CREATE TABLE int8_evals (model text, version int, precision text, bits int, embeddings text, domain text,
                         auc float8, ppl float8,
                         bleu float8, chrf float8, sents_per_s float8, dlogp float8);
CREATE TABLE evals (system text, data text, preset text, version int, step bigint, seconds float8,
                    domain text, auc float8, ppl float8);
-- AUC of true pairs against shuffled targets, and perplexity, of one version per domain
CREATE FUNCTION eval_version(m text, doms text[]) RETURNS TABLE (domain text, auc float8, ppl float8)
LANGUAGE sql AS \$\$
  WITH s AS (SELECT p.domain, corpq.sent_logprob(m::corpq.pinned_model, p.src, p.tgt) AS lp, p.n,
                    corpq.sent_prob(m::corpq.pinned_model, p.src, p.other) AS neg
               FROM test_pairs p WHERE p.domain = ANY (doms)),
       d AS (SELECT * FROM s UNION ALL SELECT 'all', lp, n, neg FROM s WHERE array_length(doms, 1) > 1)
  SELECT a.domain,
         (SELECT (count(*) FILTER (WHERE exp(x.lp / x.n) > y.neg) + 0.5 * count(*) FILTER (WHERE exp(x.lp / x.n) = y.neg))::float8 / count(*)
            FROM d x JOIN d y ON x.domain = y.domain WHERE x.domain = a.domain),
         exp(-sum(a.lp) / sum(a.n))
    FROM d a GROUP BY a.domain
\$\$;
-- minutes to an AUC, linear between evaluation points (NULL: not reached)
CREATE FUNCTION minutes_to(sys text, dat text, pre text, dom text, target float8) RETURNS float8
LANGUAGE sql AS \$\$
  SELECT CASE WHEN prev_auc IS NULL OR prev_auc >= target THEN seconds
              ELSE prev_s + (target - prev_auc) / (auc - prev_auc) * (seconds - prev_s) END / 60
    FROM (SELECT seconds, auc, lag(auc) OVER w AS prev_auc, lag(seconds) OVER w AS prev_s
            FROM evals WHERE system = sys AND data = dat AND preset = pre AND domain = dom
          WINDOW w AS (ORDER BY seconds)) e
   WHERE auc >= target ORDER BY seconds LIMIT 1
\$\$;
SQL
[ "$(q -c "SELECT count(*) FROM test_set WHERE domain = 'bible'")" -gt 0 ] || {
	say "the corpora have no bible domain (held-out Bible pairs are the measure), skipped"; exit 0; }
say "data, BPE and vocabularies in $(( $(date +%s) - t0 )) s; pairs per domain (train/dev/test):"
q -c "SELECT domain, (SELECT count(*) FROM train_set t WHERE t.domain = d.domain),
             (SELECT count(*) FROM dev_set t WHERE t.domain = d.domain),
             (SELECT count(*) FROM test_set t WHERE t.domain = d.domain)
        FROM (SELECT DISTINCT domain FROM pairs) d ORDER BY 1"

# the training set's WHERE clause, inside a quoted SQL literal
where_of() { [ "$1" = bible ] && echo "WHERE domain = ''bible''" || echo ""; }
# the domains a training set is evaluated on (an SQL text[] expression)
doms_of() { [ "$1" = bible ] && echo "'{bible}'" || echo "(SELECT array_agg(DISTINCT domain) FROM test_pairs)"; }

# evaluate version $3 of model $2 as system $1 (data $4, preset $5, step $6, seconds $7)
evaluate() {
	q -c "INSERT INTO evals SELECT \$\$$1\$\$, '$4', '$5', $3, $6, $7, e.* FROM eval_version('$2@$3', $(doms_of "$4")) e"
}

run_corpq() {
	local data=$1 preset=$2 k=$3 variant=$4 name="${1}_$2" sys=corpq
	[ "$k" -gt 0 ] && name="${name}_$k"
	[ -n "$variant" ] && sys="corpq {$variant}"
	local opts="{\"max_seconds\": $((minutes * 60)), \"keep_checkpoints\": 1000${variant:+, $variant}}"
	q -c "SELECT corpq.model_create('$name', '{\"preset\": \"$preset\"}', 'v_en', 'v_es', 1)" >/dev/null
	local job
	job=$(q -c "SELECT corpq.train('$name', 'SELECT src, tgt, domain FROM train_set $(where_of "$data") ORDER BY id',
	                               'SELECT src, tgt, domain FROM dev_set $(where_of "$data") ORDER BY id', '$opts')")
	say "corpq $name: job $job, options $opts"
	local tck cpu=0 pid c st
	tck=$(getconf CLK_TCK)
	while :; do
		st=$(q -c "SELECT state FROM corpq.jobs WHERE id = $job")
		case $st in succeeded) break;; failed|cancelled) say "job $job $st: $(q -c "SELECT error FROM corpq.jobs WHERE id = $job")"; exit 1;; esac
		pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
		if [ -n "$pid" ] && [ -r "/proc/$pid/stat" ]; then
			c=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
			[ "$c" -gt "$cpu" ] && cpu=$c
		fi
		sleep 5
	done
	say "corpq $name: $(q -c "SELECT 'steps ' || (result ->> 'steps') || ', training ' || round((result ->> 'training_seconds')::numeric) || ' s, '
	                                 || round((result ->> 'tokens_per_s')::numeric) || ' tok/s, schedule ' || coalesce(result ->> 'schedule', '-')
	                                 || ', worker CPU ' || round($cpu / $tck.0, 1) || ' s = '
	                                 || round(((result ->> 'steps')::float8 / ($cpu / $tck.0))::numeric, 3) || ' updates per CPU second, load '
	                                 || '$(cut -d' ' -f1-3 /proc/loadavg)'
	                            FROM corpq.jobs WHERE id = $job")"
	# version 1 (untrained) and every checkpoint of the job; seconds from the metrics
	evaluate "$sys" "$name" 1 "$data" "$preset" 0 0
	q -c "SELECT v.version, v.step, coalesce((v.metrics ->> 'seconds')::float8,
	             extract(epoch FROM (SELECT l.at FROM corpq.train_log l WHERE l.job = $job AND l.step = v.step) - j.started))
	        FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model, corpq.jobs j
	       WHERE c.name = '$name' AND v.source = 'checkpoint' AND j.id = $job ORDER BY v.version" |
	while IFS='|' read -r v step secs; do
		evaluate "$sys" "$name" "$v" "$data" "$preset" "$step" "$secs"
	done
	q -c "DELETE FROM corpq.train_checkpoints WHERE job = $job"     # the state rows are not needed any more
	last_job=$job
}

run_torch() {
	local data=$1 preset=$2 job=$3 name=$4 dir="$out/${1}_$2"
	mkdir -p "$dir"
	rm -f "$dir"/*.corpq
	q -c "\\copy (SELECT corpq.vocab_encode('v_en', src), corpq.vocab_encode('v_es', tgt) FROM train_set $(where_of "$data" | sed "s/''/'/g") ORDER BY id) TO '$dir/train.tsv'"
	q -c "\\copy (SELECT encode(corpq.model_export('$name@1'), 'base64')) TO '$dir/init.b64'"
	local o
	# the job's options with the peak lr its schedule chose (torch derives its
	# own warm-up) and the threads the job ran with (same threads on both sides)
	o=$(q -c "SELECT args -> 'options' || jsonb_build_object('lr', (result -> 'schedule' ->> 'lr')::float8,
	                                                         'threads', (result ->> 'threads')::int)
	            FROM corpq.jobs WHERE id = $job")
	/usr/bin/python3 "$here/time_to_useful_torch.py" --data "$dir/train.tsv" --init "$dir/init.b64" \
		--options "$o" --seconds $((minutes * 60)) --out "$dir"
	local first=1 f secs step v
	for f in $(ls "$dir"/*.corpq | sort); do
		secs=$(basename "$f" .corpq | cut -d_ -f2)
		step=$(basename "$f" .corpq | cut -d_ -f3)
		q -c "\\lo_import '$f'" >/dev/null
		if [ $first = 1 ]; then
			v=$(q -c "SELECT corpq.model_import('torch_$name', lo_get(max(oid)), 'v_en', 'v_es') FROM pg_largeobject_metadata")
			first=0
		else
			v=$(q -c "SELECT corpq.model_import('torch_$name', lo_get(max(oid))) FROM pg_largeobject_metadata")
		fi
		q -c "SELECT lo_unlink(max(oid)) FROM pg_largeobject_metadata" >/dev/null
		evaluate torch "torch_$name" "$v" "$data" "$preset" "$step" "$secs"
	done
	q -c "INSERT INTO evals SELECT 'torch', data, preset, 0, 0, 0, domain, auc, ppl FROM evals
	       WHERE system = \$\$$4\$\$ AND data = '$data' AND preset = '$preset' AND step = 0"
}

# The last checkpoint of model $1 against its int8 variants (model_quantize:
# 8-bit and 7-bit codes with int8 token embeddings, the default, and 8-bit
# with float32 embeddings), on the same held-out pairs: AUC and
# perplexity as above, the mean |log p - log p of float32| over the test
# pairs, and BLEU / chrF of translations (default options: beam 5) of the
# Bible test sources, with translation speed in this session (one thread).
compare_int8() {
	local name=$1 data=$2 preset=$3 last v8 v7 vf v bits emb
	last=$(q -c "SELECT max(v.version) FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
	              WHERE c.name = '$name'")
	v8=$(q -c "SELECT corpq.model_quantize('$name@$last')")
	v7=$(q -c "SELECT corpq.model_quantize('$name@$last', '{\"weight_bits\": 7}')")
	vf=$(q -c "SELECT corpq.model_quantize('$name@$last', '{\"embedding_precision\": \"float32\"}')")
	for v in "$last" "$v8" "$v7" "$vf"; do
		q -c "INSERT INTO int8_evals SELECT '$name', $v, v.precision, (v.metrics ->> 'weight_bits')::int,
		        v.metrics ->> 'embedding_precision', e.*, NULL, NULL, NULL, NULL
		        FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model,
		             eval_version('$name@$v', $(doms_of "$data")) e
		       WHERE c.name = '$name' AND v.version = $v"
		q >/dev/null <<SQL
UPDATE int8_evals SET dlogp = (SELECT avg(abs(corpq.sent_logprob('$name@$v'::corpq.pinned_model, src, tgt)
                                            - corpq.sent_logprob('$name@$last'::corpq.pinned_model, src, tgt)))
                                 FROM test_pairs WHERE domain = ANY ($(doms_of "$data")::text[]))
 WHERE model = '$name' AND version = $v;
SELECT clock_timestamp() AS t0 \\gset
CREATE TEMP TABLE hyps AS SELECT src, tgt, corpq.translate('$name@$v'::corpq.pinned_model, src) AS hyp
  FROM test_pairs WHERE domain = 'bible';
UPDATE int8_evals SET bleu = (SELECT corpq.bleu(hyp, tgt) FROM hyps), chrf = (SELECT corpq.chrf(hyp, tgt) FROM hyps),
       sents_per_s = (SELECT count(*) FROM hyps) / extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)
 WHERE model = '$name' AND version = $v;
SQL
	done
}

IFS=';' read -r -a variants <<<"$extra"
[ ${#variants[@]} -eq 0 ] && variants=("")
for data in $datas; do
	for preset in $presets; do
		for k in "${!variants[@]}"; do
			v=$(echo "${variants[$k]}" | sed 's/^ *//; s/ *$//')
			run_corpq "$data" "$preset" "$k" "$v"
			[ "${BENCH_INT8:-1}" = 1 ] && [ "$k" = 0 ] && compare_int8 "${data}_$preset" "$data" "$preset"
			if [ "$torch" = 1 ] && [ "$k" = 0 ]; then
				run_torch "$data" "$preset" "$last_job" "${data}_$preset" "corpq${v:+ {$v\}}"
			fi
		done
	done
done

say "evaluation points (held-out test pairs; AUC of sent_prob, true vs shuffled targets):"
q -P footer=off -c "SELECT system, data, preset, step, round((seconds / 60)::numeric, 1) AS minutes,
             string_agg(domain || ' ' || round(auc::numeric, 3) || ' / ' || round(ppl::numeric, 1), ', ' ORDER BY domain) AS \"AUC / ppl\"
        FROM evals GROUP BY 1, 2, 3, 4, 5 ORDER BY 2, 3, 1, 5" -A -F ' | '
say "minutes to AUC on held-out Bible pairs (and all domains) per preset; ratio = torch / corpq (target >= 2):"
q -P footer=off -A -F ' | ' <<SQL
SELECT data, preset, dom AS domain, t AS auc, sys AS system,
       round(minutes_to(sys, data, preset, dom, t)::numeric, 1) AS minutes,
       round(minutes_to('torch', data, preset, dom, t)::numeric, 1) AS torch_minutes,
       round((minutes_to('torch', data, preset, dom, t) / minutes_to(sys, data, preset, dom, t))::numeric, 2) AS ratio
  FROM (SELECT DISTINCT system AS sys, data, preset, domain AS dom FROM evals
         WHERE system <> 'torch' AND domain IN ('bible', 'all')) d,
       (VALUES (0.9::float8), (0.95)) v(t)
 ORDER BY 1, 2, 3, 4, 5;
SQL
say "(an empty minutes cell: not reached within $minutes min)"
if [ "${BENCH_INT8:-1}" = 1 ]; then
	say "the last checkpoint in float32 and int8 (model_quantize: 8- and 7-bit codes, int8 or float32 token embeddings): held-out AUC / ppl, mean |dlog p| against float32, BLEU / chrF of beam-5 translations of the Bible test sources, sentences/s (one session thread):"
	q -P footer=off -A -F ' | ' -c "SELECT model, version, precision, bits, embeddings, domain, round(auc::numeric, 4) AS auc, round(ppl::numeric, 2) AS ppl,
	         round(dlogp::numeric, 4) AS mean_abs_dlogp, round(bleu::numeric, 2) AS bleu, round(chrf::numeric, 2) AS chrf,
	         round(sents_per_s::numeric, 1) AS sents_per_s
	    FROM int8_evals ORDER BY model, domain, version"
fi
say "total $(( $(date +%s) - t0 )) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
